# SPDX-License-Identifier: MIT
"""The time split between functions, in every format spyc writes.

targets/accuracy.py burns the CPU in nine functions at once (generators,
`yield from`, asyncio tasks, plain calls), each measuring its own thread
CPU time: the truth (tests/accuracy.py).  Recorded in each output format,
each burner's own time (its share of the time whose innermost frame is
one of the burners) must be its share of the CPU time the target
measured, within test_accuracy.py's bounds (SHARE_POINTS percentage
points, or SHARE_SIGMAS standard errors of the share).  A sampler or a
writer that moves time from one function to another, or loses one
function's samples, fails here, where a profile of one hot function
(test_record.py, test_formats.py, test_report.py) cannot.

Each file is read here, by the test's own readers (test_report.py's for
speedscope, folded, pprof and Chrome trace; an SVG's frames from their
titles and places), and then by `spyc report --json`, whose own time per
function must agree with the truth too.

Which slots: the writers and report's readers take spyc's stacks, which
are the same for every CPython; the walker that makes them is not.  So
every slot records the default format, speedscope (whose weights are
time, where test_accuracy.py checks folded counts on every slot); the
other formats are recorded on the newest slot and on the oldest (3.6,
whose walker is another): 20 recordings of 2 s in all.
"""

import os
import xml.etree.ElementTree as ElementTree

import pytest

import accuracy
import pyfind
from conftest import SLOTS
from test_accuracy import SHARE_POINTS, SHARE_SIGMAS, bound, check_kept
from test_record import assert_exit_ok, parse_html, parse_summary
from test_report import parse_frame, read, report

RATE = 1000
DURATION = 2
# As test_accuracy.py asks: nearly all the time ends in a burner.
MIN_BURNER_SHARE = 0.9
# SHARE_POINTS alone lets a function that took under 3% of the CPU time
# (accuracy.py's task_mid: 2.4%) lose every sample and pass.  So each
# burner must also hold at least MIN_SHARE_RATIO of its measured share,
# wherever that share is MIN_EXPECTED samples or more (then a third of
# them is over 3.5 standard errors below, never chance).
MIN_SHARE_RATIO = 1.0 / 3
MIN_EXPECTED = 30
TARGET_FILE = "accuracy.py"
# A thread waiting for a CPU is running to spyc (state R), and its
# samples then fall where it was preempted: a long wait puts many in one
# function.  Measured on a loaded 2-core machine, niced: in a fifth of
# the windows in which the target waited 35-75% of the time, a share
# past the bounds (once by 28 points: 31% of the samples in a function
# that took 3.5% of the CPU time); none below 35%.  Such a window is
# recorded again, up to ATTEMPTS in all.
MAX_WAITED = 0.25
ATTEMPTS = 4

# The formats, by the extension record and report know them by.
FORMATS = {"speedscope": ".json", "folded": ".txt", "pprof": ".pb.gz",
           "chrome": ".trace.json", "svg": ".svg", "html": ".html"}
# Not speedscope: test_split_every_slot records it on these slots too.
MATRIX_FORMATS = ["folded", "pprof", "chrome", "svg", "html"]
# What report does not read.
UNREPORTED = ("svg",)


def matrix_slots():
    """The oldest slot and the newest (not free-threaded, not static)."""
    plain = [s for s in SLOTS if s.name != "static" and
             not s.is_free_threaded]
    return plain[:1] + plain[-1:] if len(plain) > 1 else plain


def read_svg(path):
    """[(thread, [leaf frame], own samples)] of a flame graph: each drawn
    frame's samples (its data-n) less those of the frames drawn on it
    (one row up, within its span: data-s .. data-s + data-n).  Frames of
    under 0.1% of the samples are not drawn, so what they held is a
    parent's here."""
    nodes = []
    for g in ElementTree.parse(path).getroot().iter():
        if not g.tag.endswith("}g") or g.get("class") != "f":
            continue
        title = rect = None
        for child in g:
            if child.tag.endswith("}title"):
                title = child.text
            elif child.tag.endswith("}rect"):
                rect = child
        assert title and rect is not None, "a frame without title or rect"
        label, sep, _ = title.rpartition(" \u2014 ")
        assert sep, "a frame's title without its samples: %r" % title
        nodes.append((float(rect.get("y")), int(g.get("data-s")),
                      int(g.get("data-n")), label))
    # The root at the bottom: a row is one frame higher (smaller y).
    rows = sorted(set(n[0] for n in nodes), reverse=True)
    depth = dict((y, i) for i, y in enumerate(rows))
    by_depth = {}
    for y, s, n, label in nodes:
        by_depth.setdefault(depth[y], []).append((s, n, label))
    out = []
    for d, row in by_depth.items():
        for s, n, label in row:
            above = sum(cn for cs, cn, _ in by_depth.get(d + 1, [])
                        if s <= cs < s + n)
            assert above <= n, "%s holds less than what is on it" % label
            if label != "all":
                out.append((None, [parse_frame(label)], n - above))
    return out


def burner_times(leaves, burners):
    """({burner: own time}, all the profile's time) from (name, file) ->
    own time pairs; a burner is a name of TARGET_FILE."""
    own = dict((b, 0) for b in burners)
    total = 0
    for (name, file), weight in leaves:
        total += weight
        if name in own and os.path.basename(file) == TARGET_FILE:
            own[name] += weight
    return own, total


def check_split(m, own, total, where):
    """Each burner's share of own agrees with its share of the CPU time
    measured in m.  The standard error is that of as many samples as
    spyc kept in the burners (the time in them, as a share of the
    profile's, of the samples kept)."""
    in_burners = sum(own.values())
    assert total > 0 and in_burners >= MIN_BURNER_SHARE * total, (
        "%s: only %.1f%% of the time ends in a function that burns the "
        "CPU\n%s" % (where, 100.0 * in_burners / max(total, 1e-300),
                     m.res.describe()))
    n = m.samples * in_burners / total
    rows = ["  %-10s %8s %8s" % ("function", "spyc", "truth")]
    off = []
    for b in m.burners:
        got, want = 100.0 * own[b] / in_burners, m.true_share(b)
        rows.append("  %-10s %7.1f%% %7.1f%%" % (b, got, want))
        if abs(got - want) > bound(want, n) or (
                n * want / 100.0 >= MIN_EXPECTED and
                got < MIN_SHARE_RATIO * want):
            off.append(b)
    assert not off, (
        "%s: own time off the CPU time measured in process by more than "
        "%.0f points (or %.1f standard errors), or under %.0f%% of it, "
        "for %s\n%s\n%s" % (
            where, SHARE_POINTS, SHARE_SIGMAS, 100 * MIN_SHARE_RATIO,
            ", ".join(off), "\n".join(rows), m.res.describe()))


def run_queue_ns(pid):
    """(ns on a CPU, ns waiting for one) of pid's main thread so far."""
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        run, wait = f.read().split()[:2]
    return int(run), int(wait)


def record_split(spyc, target, path, fmt):
    """target recorded in fmt at RATE for DURATION s into path;
    (Measurement, the share of the window it waited for a CPU)."""
    before = run_queue_ns(target.pid)
    m = accuracy.measure(spyc, target, path, RATE, DURATION, fmt=fmt)
    after = run_queue_ns(target.pid)
    assert_exit_ok(m.res.returncode,
                   parse_summary(m.res.stderr, m.res.describe()),
                   m.res.describe())
    assert os.path.exists(path), "no profile\n" + m.res.describe()
    check_kept(m, RATE, DURATION)
    ran, wait = after[0] - before[0], after[1] - before[1]
    return m, float(wait) / max(ran + wait, 1)


def check_file_and_report(spyc, m, path, fmt, where):
    """The split as the file holds it, read here; then as report reads
    it (but SVG, which report does not read)."""
    if fmt == "svg":
        stacks = read_svg(path)
    elif fmt == "html":
        stacks = parse_html(path)
    else:
        stacks, _ = read(path)
    leaves = [(frames[-1][:2] if frames else ("", ""), weight)
              for _, frames, weight in stacks]
    own, total = burner_times(leaves, m.burners)
    check_split(m, own, total, "%s, read here" % where)
    if fmt in UNREPORTED:
        return
    doc = report(spyc, path, "--top", "0")
    assert len(doc["sections"]) == 1, doc.get("sections")
    sec = doc["sections"][0]
    leaves = [((f["name"], f["file"]), f["own"]) for f in sec["functions"]]
    own, _ = burner_times(leaves, m.burners)
    check_split(m, own, sec["total"], "%s, spyc report --json" % where)


def check_format(spyc, python, targets, tmp_path, fmt):
    """accuracy.py's every workload recorded in fmt: the file's split and
    report's agree with the truth; recorded again (up to ATTEMPTS
    windows) while they do not and the target waited for a CPU more than
    MAX_WAITED of the window."""
    t = targets.start(python, "accuracy.py", "all")
    path = str(tmp_path / ("split" + FORMATS[fmt]))
    waited = []
    while True:
        m, w = record_split(spyc, t, path, fmt)
        waited.append("%.0f%%" % (100 * w))
        where = "%s on %s (window %d; the target waited for a CPU %s of " \
            "each)" % (fmt, python.version, len(waited), ", ".join(waited))
        try:
            check_file_and_report(spyc, m, path, fmt, where)
            return
        except AssertionError:
            if w <= MAX_WAITED or len(waited) == ATTEMPTS:
                raise


def test_split_every_slot(spyc, python, targets, tmp_path):
    """speedscope, on every slot: the file's own times, and report's."""
    check_format(spyc, python, targets, tmp_path, "speedscope")


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
@pytest.mark.parametrize("slot", matrix_slots(),
                         ids=[s.id for s in matrix_slots()])
def test_split_every_format(spyc, slot, fmt, targets, tmp_path):
    """The other formats, on the oldest and newest slots."""
    python = pyfind.require(slot)
    check_format(spyc, python, targets, tmp_path, fmt)
