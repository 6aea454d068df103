# SPDX-License-Identifier: MIT
"""Time in CPython's cycle collector: a "<GC>" frame on top of the stack
that set a collection off, on every version.

targets/gcwork.py builds cyclic garbage in build() and collects it, and
measures for itself (gc.callbacks, thread CPU time) how much of its time
went to the collector and how much to build() (the truth).  spyc's
"<GC>" share, and build()'s, of the samples that end in either must be
those shares, within test_accuracy.py's bounds; every "<GC>" frame is
innermost, over build() (or the gc callback it runs); --no-gc shows
none, and the time goes to build()'s lines.  spyc dump shows the frame
while a collection runs.
"""

import json
import os
import re

import pytest

import accuracy
from test_accuracy import SHARE_POINTS, SHARE_SIGMAS, bound, check_kept
from test_record import assert_exit_ok, parse_summary

RATE = 500
DURATION = 2
GC = "<GC>"
FRAME_RE = re.compile(r"^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$")
# How many dumps may pass before one lands in a collection, which takes
# some 60% of gcwork.py's time: 0.4^60 is never chance.
DUMPS = 60
# The share of the "<GC>" samples over build() (the rest: main()'s call
# of build(), the snapshot's handler; 1-2% here).
MIN_IN_BUILD = 0.9
# The share of the "<GC>" samples that may go on another thread than the
# collector's (test_gc_share_beside_a_running_thread): up to 15% here.
MAX_GC_ELSEWHERE = 0.3


def folded_stacks(path):
    """[(frames root first, count)] of a folded file."""
    stacks = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            stacks.append((stack.split(";"), int(count)))
    return stacks


def names(frames):
    return [FRAME_RE.match(f).group("name") if FRAME_RE.match(f) else f
            for f in frames]


def record(spyc, target, tmp_path, extra=()):
    m = accuracy.measure(spyc, target, str(tmp_path / "gc.txt"), RATE,
                         DURATION, list(extra))
    assert_exit_ok(m.res.returncode,
                   parse_summary(m.res.stderr, m.res.describe()),
                   m.res.describe())
    check_kept(m, RATE, DURATION)
    return m, folded_stacks(str(tmp_path / "gc.txt"))


def check_shares(m, n, python):
    """The "<GC>" and build() shares of m (n samples in either) are the
    CPU time the target measured, within test_accuracy.py's bounds."""
    off = [b for b in m.burners
           if abs(m.spyc_share(b) - m.true_share(b)) >
           bound(m.true_share(b), n)]
    assert not off, (
        "%s: shares off the CPU time measured in process by more than %.0f "
        "points (or %.1f standard errors) for %s\n%s\n%s" % (
            python.version, SHARE_POINTS, SHARE_SIGMAS, ", ".join(off),
            m.table(), m.res.describe()))


def test_gc_share(spyc, python, targets, tmp_path):
    """The collector's share of the time, as "<GC>" frames over build(),
    is the share the target measured for itself."""
    t = targets.start(python, "gcwork.py")
    m, stacks = record(spyc, t, tmp_path)
    n = sum(m.counts.values())
    assert n >= 0.9 * m.samples, (
        "only %d of %d samples end in build() or <GC>\n%s" % (
            n, m.samples, m.table()))
    check_shares(m, n, python)
    # Where the frame sits: innermost, over the stack that set the
    # collection off: build() (or the gc callback it ran) nearly always;
    # main() too, whose call of build() allocates a frame up to 3.10, and
    # the snapshot's handler, whose JSON may.
    in_build = in_gc = 0
    for frames, count in stacks:
        got = names(frames)
        if GC not in got:
            continue
        assert got.index(GC) == len(got) - 1, got
        assert got[:2] == ["<module>", "main"], (
            "a <GC> frame over a stack that is not gcwork.py's: %s" % frames)
        in_gc += count
        if got[2:-1] in (["build"], ["build", "on_gc"]):
            in_build += count
    assert in_build >= MIN_IN_BUILD * in_gc, (
        "only %d of %d <GC> samples over build()\n%s" % (
            in_build, in_gc, m.res.describe()))


@pytest.mark.slots(since=(3, 13))
def test_gc_share_beside_a_running_thread(spyc, python, targets, tmp_path):
    """With a second thread spinning all along, the collector's time is
    still the collecting thread's: of the main thread's samples, "<GC>"
    and build() have the shares it measured for itself.  "<GC>" goes on
    the thread that held the GIL when spyc first saw the collection, or
    on a free-threaded build on the only thread attached to the
    interpreter (the collector stops every other for part of its work),
    and stays there while the collector's own gc.callbacks let the GIL go
    to the spinner.  The spinner is taken for the collector when spyc
    first saw a collection in such a moment: 0-15% of the "<GC>" samples
    here, against 55% when the GIL's holder was taken anew each sample
    (and none at all on a free-threaded build).  From 3.13, whose thread
    states say which threads are attached; older versions with a GIL are
    told the same way."""
    t = targets.start(python, "gcwork.py", "spinner")
    m, stacks = record(spyc, t, tmp_path)
    main = dict((b, 0) for b in m.burners)
    spinner = in_gc = wrong = 0
    for frames, count in stacks:
        got = names(frames)
        if "side" in got:
            spinner += count
        if GC in got:
            in_gc += count
            if got[:2] != ["<module>", "main"]:
                assert "side" in got, frames
                wrong += count
        if got[:2] == ["<module>", "main"] and got[-1] in main:
            main[got[-1]] += count
    assert spinner > 0, m.res.describe()
    assert wrong <= MAX_GC_ELSEWHERE * in_gc, (
        "%d of %d <GC> samples over the spinner\n%s" % (
            wrong, in_gc, m.res.describe()))
    m.counts = main
    assert m.counts[GC] > 0, m.table()
    check_shares(m, sum(main.values()), python)


def test_no_gc(spyc, any_python, targets, tmp_path):
    """--no-gc: no "<GC>" frame; the collector's time goes to the line of
    build() that set it off."""
    t = targets.start(any_python, "gcwork.py")
    m, stacks = record(spyc, t, tmp_path, ["--no-gc"])
    assert not [f for f, _ in stacks if GC in f], m.res.describe()
    assert m.true_share(GC) > 30, m.table()
    assert m.spyc_share("build") > 95, m.table()


def dump_frames(spyc, pid, extra=()):
    """The main thread's frame names, innermost first, from one spyc
    dump --json."""
    res = spyc.run(["dump", "--json", "--pid", pid] + list(extra),
                   timeout=30)
    assert res.returncode in (0, 1), res.describe()
    if res.returncode:
        return None
    doc = json.loads(res.stdout)
    threads = doc["threads"]
    assert len(threads) == 1, res.stdout
    return [f["name"] for f in threads[0]["frames"]]


def test_dump(spyc, any_python, targets):
    """spyc dump shows "<GC>" innermost while a collection runs, over
    build(); with --no-gc, never."""
    t = targets.start(any_python, "gcwork.py")
    seen = None
    for _ in range(DUMPS):
        frames = dump_frames(spyc, t.pid)
        if frames and frames[0] == GC:
            seen = frames
            break
        assert not frames or GC not in frames, frames
    assert seen, "no dump of %d showed <GC>" % DUMPS
    assert "build" in seen[1:3], seen
    for _ in range(DUMPS):
        frames = dump_frames(spyc, t.pid, ["--no-gc"])
        assert not frames or GC not in frames, frames
    assert os.path.exists("/proc/%d" % t.proc.pid), "the target must run on"
