# SPDX-License-Identifier: MIT
"""`spyc record` on tests/targets/hot.py, on every CPython slot.

hot.py spends ~all its time in <module> -> work() -> hot() and reports that
chain (names as its code objects give them, file) itself.  At least 95% of
the samples must have that chain, root first, at the root of the stack.
Output files are checked for structure (speedscope against its JSON schema,
folded line syntax, SVG frame boxes read back into stacks from their
titles) and against spyc's summary line.

Signal handling does not depend on the Python version, so those tests run
once, on the newest interpreter found.
"""

import json
import os
import re
import signal
import subprocess
import time
import xml.dom.minidom

import pytest

from conftest import (GC_FRAME, SPEEDSCOPE_SCHEMA, assert_running,
                      send_signal, target_env, wait_gone)

MIN_CHAIN_SHARE = 0.95
# The documented summary line, exactly:
#  spyc: 1234 samples, 5 dropped (5 torn reads), 12.34 s at 99.8 Hz -> out.json
# with the parenthesis only when something was dropped, and optionally why
# sampling ended, in parentheses after the file name (with, when 5% or more
# of the stacks kept were read again after changing mid-read, "; N% of
# stacks read again ...", and when the rate asked could not be kept,
# "; asked R Hz, N late": the slots skipped).
SUMMARY_RE = re.compile(
    r"^spyc: (?P<samples>\d+) samples?"
    r", (?P<dropped>\d+) dropped(?: \((?P<why>[^)]*)\))?"
    r", (?P<seconds>[0-9.]+) s at (?P<hz>[0-9.]+) Hz -> (?P<path>.+?)"
    r"(?: \((?P<ended>interrupted|terminated|--duration elapsed"
    r"|the target exited|the target exec'd another program)"
    r"(?:; (?:(?P<running>[^ ;()]+) still running"
    r"|ending (?P<ending>[^ ;()]+)))?"
    r"(?:; (?P<stopped>the target is stopped by a signal: left stopped"
    r"|the target was stopped by a signal for a while))?"
    r"(?:; (?P<unmerged>\d+) native stacks unmerged)?"
    r"(?:; (?P<reread>\d+)% of stacks read again after changing mid-read: "
    r"short calls may be under-counted)?"
    r"(?:; asked (?P<asked>[0-9.e+]+) Hz, (?P<late>\d+) late)?\))?$")
# What the other tests accept, so that a wording slip in the summary (checked
# on its own by test_summary_line_format) does not hide everything else: the
# same, optionally followed by a parenthesised remark after the file name.
LENIENT_SUMMARY_RE = re.compile(
    r"^spyc: (?P<samples>\d+) samples?"
    r"(?:, (?P<dropped>\d+) dropped(?: \((?P<why>[^)]*)\))?)?"
    r"(?:, (?P<truncated>\d+) truncated(?: \([^)]*\))?)?"
    r", (?P<seconds>[0-9.]+) s at (?P<hz>[0-9.]+) Hz -> (?P<path>.+?)"
    r"(?: \([^()]*\))?$")
# The summary's remark when the rate asked could not be kept, however the
# rest of the line reads.
ASKED_LATE_RE = re.compile(r"; asked (?P<asked>[0-9.e+]+) Hz, "
                           r"(?P<late>\d+) late(?=[;)])")
FOLDED_FRAME_RE = re.compile(r"^(?P<name>.+) \((?P<file>.+):(?P<line>\d+)\)$")


class Summary(object):
    def __init__(self, m):
        self.samples = int(m.group("samples"))
        self.dropped = int(m.group("dropped") or 0)
        self.why = m.group("why")
        self.seconds = float(m.group("seconds"))
        self.hz = float(m.group("hz"))
        self.path = m.group("path")
        self.ended = m.groupdict().get("ended")
        late = ASKED_LATE_RE.search(m.group(0))
        self.late = int(late.group("late")) if late else 0
        self.asked = float(late.group("asked")) if late else None
        self.running = m.groupdict().get("running")
        self.ending = m.groupdict().get("ending")
        truncated = m.groupdict().get("truncated")
        self.truncated = int(truncated) if truncated is not None else 0
        unmerged = m.groupdict().get("unmerged")
        self.unmerged = int(unmerged) if unmerged is not None else None


def parse_summary(stderr, describe, strict=False):
    """The one summary line; it must be the last line spyc wrote."""
    lines = [l for l in stderr.splitlines() if l.startswith("spyc: ")]
    regex = SUMMARY_RE if strict else LENIENT_SUMMARY_RE
    matches = [regex.match(l) for l in lines]
    matches = [m for m in matches if m]
    assert len(matches) == 1, (
        "expected exactly one summary line 'spyc: N samples, ... -> FILE'\n"
        + describe)
    assert lines[-1] == matches[0].group(0), (
        "the summary line should be spyc's last line\n" + describe)
    return Summary(matches[0])


# --- output parsers: each returns [(thread label or None, [(name, file,
# line)] root first, weight)] ---

_schema = None


def speedscope_schema():
    global _schema
    if _schema is None:
        if not os.path.exists(SPEEDSCOPE_SCHEMA):
            return None
        with open(SPEEDSCOPE_SCHEMA) as f:
            _schema = json.load(f)
    return _schema


def parse_speedscope(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    schema = speedscope_schema()
    if schema is not None:
        import jsonschema
        jsonschema.validate(doc, schema)
    frames = doc["shared"]["frames"]
    stacks = []
    for prof in doc["profiles"]:
        assert prof["type"] == "sampled", prof["type"]
        assert prof["unit"] == "seconds", (
            "weights must be in seconds, unit is %r" % prof["unit"])
        assert len(prof["samples"]) == len(prof["weights"])
        for sample, weight in zip(prof["samples"], prof["weights"]):
            assert weight > 0
            stack = [(frames[i]["name"], frames[i].get("file"),
                      frames[i].get("line")) for i in sample]
            stacks.append((prof.get("name"), stack, weight))
    return doc, stacks


def parse_folded(path, threads=False):
    stacks = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.endswith("\n") or not text, "folded file must end in newline"
    for n, line in enumerate(text.splitlines(), 1):
        assert " " in line, "folded line %d has no count: %r" % (n, line)
        stack, count = line.rsplit(" ", 1)
        assert re.match(r"^[0-9]+$", count) and int(count) > 0, (
            "folded line %d: bad count: %r" % (n, line))
        parts = stack.split(";")
        label = parts.pop(0) if threads else None
        frames = []
        for i, p in enumerate(parts):
            if p == GC_FRAME and i == len(parts) - 1:
                # The collector's, on top: no file, no line.
                frames.append((GC_FRAME, None, None))
                continue
            m = FOLDED_FRAME_RE.match(p)
            assert m, "folded line %d: frame %r is not 'name (file:line)'" % (
                n, p)
            frames.append((m.group("name"), m.group("file"),
                           int(m.group("line"))))
        stacks.append((label, frames, int(count)))
    return stacks


# The data an HTML page (src/out/html.c) holds, in its script element
# spyc-data: {"samples", "threads": [label], "frames": [[name, file,
# line]], "stacks": [[thread, count, [frame, ...root first]]]}.
HTML_DATA_RE = re.compile(
    r'<script id="spyc-data" type="application/json">(.*?)</script>',
    re.S)


def html_data(path):
    """The profile data of an HTML page, as its viewer reads it."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    assert page.startswith("<!DOCTYPE html>"), "not an HTML page"
    m = HTML_DATA_RE.search(page)
    assert m, "the page holds no spyc-data script element"
    return json.loads(m.group(1))


def parse_html(path):
    """An HTML page's stacks, like the other parsers: (thread label,
    frames root first as (name, file, line), count)."""
    data = html_data(path)
    stacks = []
    for thread, count, ids in data["stacks"]:
        assert count > 0, "a stack with no samples: %r" % ids
        frames = []
        for i in ids:
            name, file, line = data["frames"][i]
            frames.append((name, file or None, line or None))
        stacks.append((data["threads"][thread], frames, count))
    assert sum(s[2] for s in stacks) == data["samples"], (
        "the stacks' samples do not add up to the page's total")
    return stacks


# What spyc's SVG writer (src/out/svg.c) puts in each frame's box: a
# <title> "LABEL \u2014 N samples (P%)", where LABEL is "name (file:line)"
# ("name (file)" without a line, "name" without either), "all" for the
# root, or a thread's label under --threads.
SVG_TITLE_RE = re.compile(r"^(?P<label>.+) \u2014 (?P<count>\d+) "
                          r"samples? \((?P<share>[0-9.]+)%\)$", re.S)
SVG_LABEL_RE = re.compile(r"^(?P<name>.+?)"
                          r"(?: \((?P<file>[^()]*?)(?::(?P<line>\d+))?\))?$")


def parse_svg(path, threads=False):
    """The flame graph as stacks, like the other parsers: every box (a
    <g class="f">) has one <title> with its label and sample count, which
    must agree with its data-n, and data-s places it among its siblings
    (samples to its left).  Boxes come depth first, parents first, each
    inside its parent's span, one row higher than it; a box's samples
    not in a drawn child (spyc leaves out boxes under 0.1%) are a stack
    ending there, so the weights add up to the root's count.  With
    threads, the first level is the thread label."""
    dom = xml.dom.minidom.parse(path)
    assert dom.documentElement.tagName == "svg"
    boxes = [g for g in dom.getElementsByTagName("g")
             if g.getAttribute("class") == "f"]
    assert boxes, "SVG has no frame boxes (<g class=\"f\">)"
    nodes = []
    for g in boxes:
        titles = g.getElementsByTagName("title")
        rects = g.getElementsByTagName("rect")
        assert len(titles) == 1 and len(rects) == 1, (
            "a frame box needs one <title> and one <rect>: %s"
            % g.toxml()[:200])
        title = "".join(c.data for c in titles[0].childNodes
                        if c.nodeType in (c.TEXT_NODE,
                                          c.CDATA_SECTION_NODE))
        m = SVG_TITLE_RE.match(title)
        assert m, "frame title %r is not 'LABEL \u2014 N samples (P%%)'" % (
            title)
        count = int(m.group("count"))
        assert count > 0 and count == int(g.getAttribute("data-n")), (
            "title %r disagrees with data-n=%s" % (
                title, g.getAttribute("data-n")))
        nodes.append({"label": m.group("label"), "count": count,
                      "share": float(m.group("share")),
                      "left": int(g.getAttribute("data-s")),
                      "y": float(rects[0].getAttribute("y")),
                      "children": 0})
    root = nodes[0]
    assert root["label"] == "all" and root["left"] == 0, (
        "the first box must be the root, 'all': %r" % root["label"])
    total = root["count"]
    row = None
    path = []       # the open boxes, root first
    stacks = []

    def close(node, below):
        """node's samples in no drawn box above it: a stack ending at it
        (below: the open boxes under it, root first)."""
        rest = node["count"] - node["children"]
        assert rest >= 0, "the boxes above %r hold more samples than it" % (
            node["label"])
        if rest:
            labels = [n["label"] for n in below[1:]]
            if node is not root:
                labels.append(node["label"])
            stacks.append((labels, rest))

    for node in nodes:
        assert abs(node["share"] - 100.0 * node["count"] / total) <= 0.006, (
            "%r: %d of %d samples is not %.2f%%" % (
                node["label"], node["count"], total, node["share"]))
        if node is not root:
            end = node["left"] + node["count"]
            while path and not (path[-1]["left"] <= node["left"] and
                                end <= path[-1]["left"] + path[-1]["count"]):
                close(path.pop(), path)
            assert path, "box %r lies outside the root" % node["label"]
            parent = path[-1]
            if row is None:
                row = parent["y"] - node["y"]
                assert row > 0, "a frame must be drawn above its caller"
            assert abs(parent["y"] - node["y"] - row) < 0.01, (
                "box %r is not one row above its caller %r" % (
                    node["label"], parent["label"]))
            parent["children"] += node["count"]
        path.append(node)
    while path:
        close(path.pop(), path)

    result = []
    for labels, weight in stacks:
        label = labels.pop(0) if threads and labels else None
        frames = []
        for text in labels:
            m = SVG_LABEL_RE.match(text)
            frames.append((m.group("name"), m.group("file"),
                           int(m.group("line")) if m.group("line")
                           else None))
        result.append((label, frames, weight))
    return result


def chain_share(stacks, chain, full_filenames, startup=False):
    """Share of weight whose stack starts (root first) with chain.  With
    startup (launch mode), stacks from before the program's own first
    frame (the interpreter's start-up: site, encodings, importlib) or in
    its first imports are left out, and (share, total, startup share) is
    returned."""
    def same_file(got, want):
        if full_filenames:
            return got == want
        return os.path.basename(got or "") == os.path.basename(want)

    total = hit = early = 0
    for _, frames, weight in stacks:
        if startup and not (frames and same_file(frames[0][1],
                                                  chain[0]["file"])):
            early += weight
            continue
        if startup and len(frames) > 1 and (
                frames[1][1] or "").startswith("<frozen importlib"):
            early += weight
            continue
        total += weight
        if len(frames) >= len(chain) and all(
                f[0] == c["name"] and same_file(f[1], c["file"])
                for f, c in zip(frames, chain)):
            hit += weight
    if startup:
        whole = total + early
        return ((hit / total if total else 0.0), total,
                (early / whole if whole else 0.0))
    return (hit / total if total else 0.0), total


def assert_exit_ok(code, summary, describe):
    """spyc exited 0, or 1 because more than 3% of the samples were
    dropped as torn reads (the target kept running while read: a loaded
    machine makes that rare, not impossible, in a short run), which the
    summary must then say, and never a large share."""
    if code == 1 and summary.dropped:
        taken = summary.samples + summary.dropped
        assert summary.dropped > 0.03 * taken, describe
        assert summary.dropped <= 0.1 * taken, describe
        return
    assert code == 0, describe


def format_stacks(stacks, limit=8):
    top = sorted(stacks, key=lambda s: -s[2])[:limit]
    return "\n".join("  %s x %s: %s" % (
        label or "", weight, ";".join("%s (%s:%s)" % f for f in frames))
        for label, frames, weight in top)


def check_merged_weights(stacks, summary, describe):
    """Speedscope samples with identical stacks may be merged into one whose
    weight is their total time.  Then the weights must be whole multiples of
    one sampling interval, about 1/Hz, and count summary.samples in all."""
    weights = [s[2] for s in stacks]
    unit = sum(weights) / summary.samples
    assert 0.85 / summary.hz <= unit <= 1.15 / summary.hz, (
        "file holds %d samples weighing %.3f s: %.2f ms per sample of the "
        "summary's %d, but sampling was at %.1f Hz\n%s" % (
            len(stacks), sum(weights), 1000 * unit, summary.samples,
            summary.hz, describe))
    off = [w for w in weights if abs(w / unit - round(w / unit)) > 0.05]
    assert not off, (
        "the file does not hold the summary's %d samples: its weights add "
        "up to %.3f s, and %s are not whole multiples of %.3f ms (that "
        "total / %d)\n%s" % (
            summary.samples, sum(weights), off[:5], 1000 * unit,
            summary.samples, describe))


# Launch mode samples the interpreter's start-up and the program's first
# imports too; on a loaded machine they can take a good part of a short
# run (a third of a second of 1 s has been seen), but never most of it.
MAX_STARTUP_SHARE = 0.5


def check_profile(out, fmt, chain, summary, describe, full_filenames=False,
                  launched=False):
    """Validate the output file; return its stacks."""
    assert os.path.exists(out), "no output file\n" + describe
    leftovers = [n for n in os.listdir(os.path.dirname(out))
                 if n != os.path.basename(out)]
    assert not leftovers, "left behind next to the output: %s" % leftovers
    assert summary.path == out or os.path.abspath(summary.path) == out or \
        os.path.basename(summary.path) == os.path.basename(out), describe
    assert summary.samples > 0, describe
    if fmt == "speedscope":
        _, stacks = parse_speedscope(out)
    elif fmt == "svg":
        stacks = parse_svg(out)
    elif fmt == "html":
        stacks = parse_html(out)
    else:
        stacks = parse_folded(out)
    if launched:
        share, _, early = chain_share(stacks, chain, full_filenames, True)
        assert early < MAX_STARTUP_SHARE, (
            "start-up (before the program's first frame, or in its first "
            "imports) took %.1f%% of "
            "the samples\n%s" % (100 * early, describe))
    else:
        share, _ = chain_share(stacks, chain, full_filenames)
    assert share >= MIN_CHAIN_SHARE, (
        "only %.1f%% of samples have the chain %s\ntop stacks:\n%s\n%s" % (
            100 * share, " -> ".join(c["name"] for c in chain),
            format_stacks(stacks), describe))
    if fmt == "speedscope":
        weight = sum(s[2] for s in stacks)
        assert 0.5 * summary.seconds <= weight <= 1.5 * summary.seconds, (
            "speedscope weights add up to %.3f s for %.2f s sampled\n%s" % (
                weight, summary.seconds, describe))
        if len(stacks) != summary.samples:
            check_merged_weights(stacks, summary, describe)
    else:
        n = sum(s[2] for s in stacks)
        assert n == summary.samples, (
            "file holds %d samples, summary says %d\n%s" % (
                n, summary.samples, describe))
    if fmt == "speedscope" and speedscope_schema() is None:
        pytest.skip("speedscope schema not found (%s; see tests/build/"
                    "package.json), the file was not validated against it; "
                    "all other checks passed" % SPEEDSCOPE_SCHEMA)
    return stacks


FORMATS = [("speedscope", ".json", []),
           ("folded", ".txt", ["--full-filenames"]),
           ("svg", ".svg", []),
           ("html", ".html", [])]


@pytest.mark.parametrize("fmt,ext,extra", FORMATS,
                         ids=[f[0] for f in FORMATS])
def test_record_pid(spyc, python, targets, tmp_path, fmt, ext, extra):
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / ("profile" + ext))
    os.mkdir(os.path.dirname(out))
    res = spyc.run(["record", "--pid", hot.pid, "--duration", 2, "-o", out]
                   + extra, timeout=30)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe())
    assert 1.5 <= summary.seconds <= 3.5, res.describe()
    assert hot.proc.poll() is None, "recording must not stop the target"
    check_profile(out, fmt, hot.info["chain"], summary, res.describe(),
                  full_filenames="--full-filenames" in extra)


def test_record_blocking(spyc, python, targets, tmp_path):
    """--blocking stops each sampled thread while it is read: the same
    profile, and the target runs on after; --nonblocking (the default)
    is accepted; --native cannot go without stopping threads."""
    hot = targets.start(python, "hot.py", 0, "{report}")
    for mode in ("--blocking", "--nonblocking"):
        os.mkdir(str(tmp_path / mode))
        out = str(tmp_path / mode / "profile.txt")
        res = spyc.run(["record", "--pid", hot.pid, "--duration", 1, mode,
                        "--full-filenames", "-o", out], timeout=30)
        res.assert_ok()
        summary = parse_summary(res.stderr, res.describe())
        check_profile(out, "folded", hot.info["chain"], summary,
                      res.describe(), full_filenames=True)
        assert hot.proc.poll() is None, "recording must not stop the target"
        assert_running(hot.pid)
    res = spyc.run(["record", "--pid", hot.pid, "--native", "--nonblocking",
                    "-o", str(tmp_path / "never.txt")], timeout=30)
    res.assert_error(64, "--nonblocking", "--native")


def test_summary_line_format(spyc, python, targets, tmp_path):
    """The summary line is exactly as documented (see SUMMARY_RE)."""
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "profile.txt")
    res = spyc.run(["record", "--pid", hot.pid, "--duration", 0.5, "-o", out],
                   timeout=30)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe(), strict=True)
    assert summary.path == out, res.describe()
    assert summary.ended == "--duration elapsed", res.describe()
    assert (summary.dropped > 0) == (summary.why is not None), (
        "the parenthesis after 'N dropped' belongs there only when N > 0\n"
        + res.describe())


def test_record_rate(spyc, python, targets, tmp_path):
    """--rate 250 --duration 1 asks for 250 slots, 4 ms apart.  Each is
    taken (a sample kept, dropped, or of no running thread) or, when
    spyc ran too late for it, counted late; none is added.  So the
    summary's time is the second asked, its rate is the samples the file
    holds (plus those dropped) over that second (hot.py's thread always
    runs: no slot finds no stack), at most the rate asked, and with the
    late slots it makes up the rate asked.  A loaded machine may make
    many slots late, never most."""
    rate, duration = 250, 1
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / "profile.txt")
    os.mkdir(os.path.dirname(out))
    res = spyc.run(["record", "--pid", hot.pid, "--duration", duration,
                    "--rate", rate, "--format", "folded", "-o", out],
                   timeout=30)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe())
    stacks = check_profile(out, "folded", hot.info["chain"], summary,
                           res.describe())
    slots = rate * duration
    # What the file shows was taken, and what the summary says was.
    held = sum(s[2] for s in stacks) + summary.dropped
    taken = summary.hz * duration
    assert abs(summary.seconds - duration) <= 0.01, (
        "sampling should last the --duration asked\n" + res.describe())
    assert summary.late == 0 or summary.asked == rate, res.describe()
    # The rate is shown to 0.1 Hz.  (A summary that gave the rate asked
    # rather than the one kept would pass here whenever no slot was
    # late; test_record_slow_and_fractional_rates' 0.5 Hz catches it.)
    assert abs(taken - held) <= 0.05 and taken <= slots + 0.05, (
        "%d Hz for %d s: %.1f samples taken, the file holds %d (and %d "
        "dropped)\n%s" % (rate, duration, taken, held - summary.dropped,
                          summary.dropped, res.describe()))
    # None is lost.  spyc held up across the deadline counts the slots
    # it missed up to when it woke, a few past the deadline among them.
    assert slots - 2 <= taken + summary.late <= 1.1 * slots, (
        "%d Hz for %d s is %d slots: %.1f taken and %d late\n%s" % (
            rate, duration, slots, taken, summary.late, res.describe()))
    assert held >= 0.5 * slots, (
        "the file holds %d of %d slots' samples\n%s" % (
            held, slots, res.describe()))


def test_record_counts_late_slots(spyc, any_python, tmp_path):
    """A rate spyc cannot keep (4 threads 50 deep at 100 kHz): the slots
    it could not take are counted as late, and with those taken they
    make up the rate asked over the --duration asked (slots on a fixed
    grid, no drift)."""
    busy = os.path.join(os.path.dirname(__file__), "targets",
                        "bench_busy.py")
    proc = subprocess.Popen([any_python.path, busy, "50", "4", "60"],
                            stdout=subprocess.PIPE, env=target_env())
    try:
        assert proc.stdout.readline() == b"ready\n"
        out = str(tmp_path / "fast.txt")
        res = spyc.run(["record", "--pid", proc.pid, "--rate", "100000",
                        "--duration", "1", "-o", out], timeout=60)
    finally:
        proc.kill()
        proc.wait()
    summary = parse_summary(res.stderr, res.describe(), strict=True)
    assert_exit_ok(res.returncode, summary, res.describe())
    assert summary.late > 0 and summary.asked == 100000, res.describe()
    assert abs(summary.seconds - 1) <= 0.01, res.describe()
    taken = summary.hz      # over the 1 s asked
    assert abs(taken + summary.late - 100000) <= 0.02 * 100000, (
        "100000 Hz for 1 s: %.0f taken and %d late\n%s" % (
            taken, summary.late, res.describe()))


@pytest.mark.parametrize("rate,duration,low,high", [
    ("0.5", 5, 2, 3),     # slots at 0, 2 and 4 s
    ("2.5", 4, 9, 11),    # 10 slots, every 0.4 s
], ids=["0.5Hz", "2.5Hz"])
def test_record_slow_and_fractional_rates(spyc, any_python, targets,
                                          tmp_path, rate, duration, low,
                                          high):
    """Rates below 1 Hz and fractional rates: the file holds the samples
    the rate asks for, sampling lasts the whole --duration, and the
    summary gives the rate achieved (the samples the file holds, and
    those dropped, over the --duration asked) precisely enough to tell
    0.5 from 0 and 1."""
    hot = targets.start(any_python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / "profile.txt")
    os.mkdir(os.path.dirname(out))
    res = spyc.run(["record", "--pid", hot.pid, "--duration", duration,
                    "--rate", rate, "-o", out], timeout=60)
    summary = parse_summary(res.stderr, res.describe(), strict=True)
    # With so few samples, one dropped is more than 3%: exit 1 says so.
    assert res.returncode == (1 if summary.dropped else 0), res.describe()
    assert summary.ended == "--duration elapsed", res.describe()
    held = sum(s[2] for s in parse_folded(out))
    assert held == summary.samples, res.describe()
    taken = held + summary.dropped
    assert low <= taken <= high, (
        "%s Hz for %s s should take %d to %d samples\n%s" % (
            rate, duration, low, high, res.describe()))
    assert duration - 0.05 <= summary.seconds <= duration + 2, (
        "sampling should last the whole --duration\n" + res.describe())
    # hot.py always runs: every slot taken has a stack, kept or dropped.
    assert abs(summary.hz - taken / duration) <= 0.01, (
        "the rate should be the samples the file holds (and those "
        "dropped) over the %s s asked\n%s" % (duration, res.describe()))
    assert 0.6 * float(rate) <= summary.hz <= 1.4 * float(rate), (
        res.describe())


def test_record_threads(spyc, python, targets, tmp_path):
    """--threads puts a thread label first in every folded stack."""
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / "profile.folded")
    os.mkdir(os.path.dirname(out))
    res = spyc.run(["record", "--pid", hot.pid, "--duration", 1, "--threads",
                    "-o", out], timeout=30)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe())
    stacks = parse_folded(out, threads=True)
    assert sum(s[2] for s in stacks) == summary.samples
    labels = set(s[0] for s in stacks)
    assert len(labels) == 1, "one thread, one label: %s" % sorted(labels)
    label = labels.pop()
    info = hot.info
    ident = info["thread_id"]
    # The main thread's native id is the pid, on every version.
    names = [str(info["native_id"] or hot.pid), "%x" % ident, str(ident),
             info["thread_name"]]
    assert any(n in label for n in names), (
        "thread label %r names none of %s" % (label, names))
    share, _ = chain_share(stacks, info["chain"], False)
    assert share >= MIN_CHAIN_SHARE, format_stacks(stacks)


# CPU seconds the launched program's start-up spends in a sitecustomize
# of its own: long enough that the samples of start-up do not hang on how
# soon a loaded machine lets spyc find the interpreter (a bare start-up
# takes milliseconds), short beside the run.
STARTUP_BURN = 0.3

SITECUSTOMIZE = """import time
t = time.process_time()
while time.process_time() - t < %r:
    pass
""" % STARTUP_BURN


def test_record_launch(spyc, python, tmp_path):
    """record -- PY hot.py 4: profile the whole run; the program's own
    output is the same as without spyc.  Start-up (site, .pth files, and
    here a sitecustomize that takes STARTUP_BURN) is sampled too, and must
    show, but take less than half the samples (MAX_STARTUP_SHARE: a loaded
    machine can make it a good part of a short run); at 4 s the run keeps
    it well under that."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    outdir = tmp_path / "out"
    outdir.mkdir()
    sitedir = tmp_path / "site"
    sitedir.mkdir()
    (sitedir / "sitecustomize.py").write_text(SITECUSTOMIZE)
    out = str(outdir / "out.json")
    report = str(workdir / "report.json")
    hot = os.path.join(os.path.dirname(__file__), "targets", "hot.py")
    env = target_env({"PYTHONPATH": str(sitedir)})
    # The unprofiled run goes at the same time, to keep the suite fast.
    plain = subprocess.Popen([python.path, hot, "4"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # 1 kHz: start-up takes milliseconds, and must show.
        res = spyc.run(["record", "--rate", "1000", "-o", out, "--",
                        python.path, hot, "4", report], env=env, timeout=60)
        plain_out, plain_err = plain.communicate(timeout=60)
    finally:
        if plain.poll() is None:
            plain.kill()
            plain.wait()
    assert plain.returncode == 0, plain_err
    res.assert_ok()
    assert res.stdout == plain_out.decode(), (
        "the program's output changed under spyc\n" + res.describe())
    summary = parse_summary(res.stderr, res.describe())
    assert 3.5 <= summary.seconds <= 8, res.describe()
    with open(report) as f:
        info = json.load(f)
    assert wait_gone(info["pid"], 1), "the child is still running"
    stacks = check_profile(out, "speedscope", info["chain"], summary,
                           res.describe(), launched=True)
    # Sampled from the first Python frame: the interpreter's start-up too.
    assert chain_share(stacks, info["chain"], False, True)[2] > 0, (
        format_stacks(stacks))
    in_site = sum(weight for _, frames, weight in stacks
                  if any(os.path.basename(f[1] or "") == "sitecustomize.py"
                         for f in frames))
    assert in_site > 0, (
        "no sample in the sitecustomize that start-up spends %.1f s in\n%s"
        % (STARTUP_BURN, format_stacks(stacks)))


# --- stopping: signals and the target's own exit ---

def sleeps(proc):
    """How many times spyc (proc) has slept so far: its voluntary context
    switches.  Between samples spyc sleeps until the next slot, once a
    slot; a slot it is too late for is skipped, not slept for."""
    try:
        with open("/proc/%d/status" % proc.pid) as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except OSError:
        pass
    assert proc.poll() is None, "spyc exited early: %s" % (
        proc.stderr.read().decode(errors="replace"))
    pytest.fail("no voluntary_ctxt_switches in /proc/%d/status" % proc.pid)


def wait_sleeps(proc, count, timeout=30):
    """Wait until spyc (proc) has slept count times in all.  At its
    default 100 Hz, 100 sleeps are about a second of sampling, however
    long spyc took to start and however loaded the machine is (its
    start-up sleeps a few times at most); a fixed sleep would say
    neither."""
    deadline = time.time() + timeout
    while sleeps(proc) < count:
        assert time.time() < deadline, (
            "spyc slept %d times in %d s, not %d: is it sampling?" % (
                sleeps(proc), timeout, count))
        time.sleep(0.02)


def finish(proc, timeout=30):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("spyc did not stop within %d s\nstderr: %s" % (
            timeout, err.decode(errors="replace")))
    describe = "exit code %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
        proc.returncode, out.decode(errors="replace"),
        err.decode(errors="replace"))
    return out.decode(errors="replace"), err.decode(errors="replace"), \
        describe


@pytest.mark.parametrize("sig,fmt,ext", [
    (signal.SIGINT, "speedscope", ".json"),
    (signal.SIGTERM, "folded", ".txt"),
], ids=["SIGINT", "SIGTERM"])
def test_stop_pid_by_signal(spyc, any_python, targets, tmp_path, sig, fmt,
                            ext):
    hot = targets.start(any_python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / ("profile" + ext))
    os.mkdir(os.path.dirname(out))
    proc = spyc.popen(["record", "--pid", hot.pid, "-o", out],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_sleeps(proc, 100)
    finally:
        send_signal(proc, sig)
    _, err, describe = finish(proc)
    assert hot.proc.poll() is None, "stopping spyc must not stop the target"
    summary = parse_summary(err, describe)
    assert_exit_ok(proc.returncode, summary, describe)
    assert 0.5 <= summary.seconds <= 5, describe
    check_profile(out, fmt, hot.info["chain"], summary, describe)


def test_stop_pid_target_exits(spyc, any_python, targets, tmp_path):
    hot = targets.start(any_python, "hot.py", 1.5, "{report}")
    out = str(tmp_path / "out" / "profile.svg")
    os.mkdir(os.path.dirname(out))
    res = spyc.run(["record", "--pid", hot.pid, "-o", out], timeout=30)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe())
    assert summary.seconds <= 3, res.describe()
    check_profile(out, "svg", hot.info["chain"], summary, res.describe())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_stop_launch_by_signal(spyc, any_python, tmp_path, sig):
    """In launch mode the signal is forwarded to the child."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    report = str(tmp_path / "report.json")
    hot = os.path.join(os.path.dirname(__file__), "targets", "hot.py")
    proc = spyc.popen(["record", "-o", out, "--", any_python.path, hot, "0",
                       report], env=target_env(),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 20
        while not os.path.exists(report):
            assert proc.poll() is None, "spyc exited early: %s" % (
                proc.stderr.read().decode(errors="replace"))
            assert time.time() < deadline, "the child never started"
            time.sleep(0.05)
        with open(report) as f:
            info = json.load(f)
        # At least twice as long in the chain as before it (start-up),
        # and a second at least: however slow start-up was.
        before = sleeps(proc)
        wait_sleeps(proc, before + max(100, 2 * before))
        send_signal(proc, sig)
        stdout, err, describe = finish(proc)
        child_gone = wait_gone(info["pid"], 5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # Never leave a hot.py spinning forever, whatever went wrong.
        if os.path.exists(report):
            with open(report) as f:
                pid = json.load(f)["pid"]
            if not wait_gone(pid, 0.1):
                os.kill(pid, signal.SIGKILL)
    assert child_gone, "the child was left running\n" + describe
    if sig == signal.SIGINT:
        assert "interrupted" in stdout, (
            "the child did not get SIGINT (hot.py prints 'interrupted')\n"
            + describe)
    # The program's own status: hot.py exits 130 on SIGINT, and SIGTERM
    # kills it (128 + 15).
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), (
        describe)
    summary = parse_summary(err, describe)
    check_profile(out, "speedscope", info["chain"], summary, describe,
                  launched=True)


# --- launch mode: the program's exit status, and --duration ---

LAUNCHED = os.path.join(os.path.dirname(__file__), "targets", "launched.py")
LAUNCHED_CHAIN = [{"name": "<module>", "file": LAUNCHED},
                  {"name": "spin", "file": LAUNCHED}]


def pid_alive(pid):
    return not wait_gone(pid, 0)


def read_pid(path, proc, timeout=20):
    """The pid launched.py --pidfile wrote, once it has."""
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, "spyc exited before the program started"
        assert time.time() < deadline, "the program never started"
        time.sleep(0.05)
    with open(path) as f:
        return int(f.read())


@pytest.mark.parametrize("action,status", [
    (["exit", 3], 3),
    (["exit", 0], 0),
    (["kill", 9], 128 + 9),
], ids=["exit-3", "exit-0", "SIGKILL"])
def test_launch_exit_status(spyc, any_python, tmp_path, action, status):
    """record -- PROGRAM exits with the program's own status once the
    profile is written, 128 + N when signal N killed it, as time(1)
    does; the profile is whole either way."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    res = spyc.run(["record", "-o", out, "--", any_python.path, LAUNCHED,
                    1] + action, env=target_env(), timeout=60)
    assert res.returncode == status, (
        "spyc should exit with the program's status %d\n%s" % (
            status, res.describe()))
    summary = parse_summary(res.stderr, res.describe(), strict=True)
    assert summary.ended == "the target exited", res.describe()
    check_profile(out, "speedscope", LAUNCHED_CHAIN, summary,
                  res.describe(), launched=True)


def test_launch_write_failure_wins(spyc, any_python, tmp_path):
    """When the profile cannot be written, spyc's own failure (2) is the
    exit status, not the program's."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    pidfile = str(tmp_path / "pid")
    proc = spyc.popen(["record", "-o", out, "--", any_python.path, LAUNCHED,
                       "--pidfile", pidfile, 2, "exit", 3],
                      env=target_env(), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    # The program runs (for 2 s): spyc got past its start, and writes
    # only when the program is done.
    read_pid(pidfile, proc)
    outdir.rmdir()
    _, err, describe = finish(proc)
    assert proc.returncode == 2, describe
    assert "cannot write '%s'" % out in err, describe


def test_launch_duration_leaves_program_running(spyc, any_python, tmp_path):
    """--duration in launch mode writes the profile at the deadline and
    leaves the program running: the program waits for the profile, finds
    it whole, and exits 5, which spyc passes on."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    res = spyc.run(["record", "--duration", 1, "-o", out, "--",
                    any_python.path, LAUNCHED, 60, "after", out, 5],
                   env=target_env(), timeout=60)
    assert res.returncode == 5, (
        "the program should have found a whole profile while it ran "
        "(90: not whole, 91: never there)\n" + res.describe())
    summary = parse_summary(res.stderr, res.describe(), strict=True)
    assert summary.ended == "--duration elapsed", res.describe()
    assert summary.running == os.path.basename(any_python.path), (
        "the summary should say the program still runs\n" + res.describe())
    assert 0.95 <= summary.seconds <= 3, res.describe()
    check_profile(out, "speedscope", LAUNCHED_CHAIN, summary,
                  res.describe(), launched=True)


def test_launch_duration_passes_signals_on(spyc, any_python, tmp_path):
    """While spyc waits for the program after --duration, a SIGTERM to
    spyc is passed on to it."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    pidfile = str(tmp_path / "pid")
    proc = spyc.popen(["record", "--duration", 1, "-o", out, "--",
                       any_python.path, LAUNCHED, "--pidfile", pidfile, 600],
                      env=target_env(), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    pid = None
    try:
        pid = read_pid(pidfile, proc)
        deadline = time.time() + 30
        while not os.path.exists(out):
            assert proc.poll() is None, "spyc exited while the program runs"
            assert time.time() < deadline, "no profile after --duration"
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None, "spyc should wait for the program"
        assert pid_alive(pid), "the program should still run"
        proc.send_signal(signal.SIGTERM)
        _, err, describe = finish(proc)
        assert wait_gone(pid, 5), "SIGTERM did not reach the program"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pid and not wait_gone(pid, 0.1):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGTERM, describe
    summary = parse_summary(err, describe, strict=True)
    assert summary.running, describe
    check_profile(out, "speedscope", LAUNCHED_CHAIN, summary, describe,
                  launched=True)


@pytest.mark.parametrize("ignore_term", [False, True],
                         ids=["SIGTERM", "SIGKILL"])
def test_kill_after_duration(spyc, any_python, tmp_path, ignore_term):
    """--kill-after-duration ends a program that would run for an hour
    once the profile is written: SIGTERM, and SIGKILL a few seconds
    later for one that ignores it.  spyc then exits as it would for
    --pid (0): the program's status says only how spyc ended it."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    pidfile = str(tmp_path / "pid")
    opts = ["--pidfile", pidfile] + (["--ignore-term"] if ignore_term
                                     else [])
    started = time.time()
    proc = spyc.popen(["record", "--duration", 1, "--kill-after-duration",
                       "-o", out, "--", any_python.path, LAUNCHED] + opts +
                      [3600], env=target_env(), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    pid = None
    try:
        pid = read_pid(pidfile, proc)
        _, err, describe = finish(proc, timeout=60)
        took = time.time() - started
        gone = wait_gone(pid, 1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pid and not wait_gone(pid, 0.1):
            os.kill(pid, signal.SIGKILL)
    assert gone, "the program was left running\n" + describe
    summary = parse_summary(err, describe, strict=True)
    assert_exit_ok(proc.returncode, summary, describe)
    if ignore_term:
        assert took >= 5, "SIGKILL came before the grace period\n" + describe
    assert summary.ended == "--duration elapsed", describe
    assert summary.ending == os.path.basename(any_python.path), describe
    check_profile(out, "speedscope", LAUNCHED_CHAIN, summary, describe,
                  launched=True)
