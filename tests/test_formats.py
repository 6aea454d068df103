# SPDX-License-Identifier: MIT
"""`spyc record --format pprof` and `--format chrome`, on every CPython slot.

pprof: the file is decoded here (gzip, then protobuf wire format by a small
decoder of the test's own, which knows profile.proto's field numbers), and
then read by a real reader, `go tool pprof` (Debian's golang-go; the Go
half is skipped by name without it): both must count the samples of
spyc's summary line and find hot.py's chain, names, files and lines.

Chrome trace: the JSON is checked for the Trace Event Format's structure
(metadata naming the process and threads, "X" slices that nest per thread
and, written as they end, end in file order), for hot.py's chain nested as
it runs, and for slice lengths that add up to the sampled time; then it is
loaded by Chrome DevTools' own trace engine (npm's @paulirish/trace_engine,
the model behind DevTools' Performance panel, installed by
scripts/install-deps), which must build the same slices.  Perfetto's
trace processor is not on npm nor in Debian, and chrome://tracing needs a
browser and a network: DevTools' engine is the real importer used here.
"""

import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter

import pytest

from conftest import TESTS, target_env
from test_record import MIN_CHAIN_SHARE, assert_exit_ok, parse_summary

DEVTOOLS_ENGINE = os.path.join(TESTS, "build", "node_modules", "@paulirish",
                               "trace_engine")
CHROME_IMPORT = os.path.join(TESTS, "tools", "chrome-trace-import.mjs")
RECORD_SECONDS = 1.5
RATE = 200


def record(spyc, pid, out, *extra):
    """Record pid for RECORD_SECONDS; (result, summary), and the summary
    gets .wall: how long spyc ran, which bounds any span it measured (a
    loaded machine can make the last samples late, after the duration)."""
    start = time.monotonic()
    res = spyc.run(["record", "--pid", pid, "--duration", RECORD_SECONDS,
                    "--rate", RATE, "-o", out] + list(extra), timeout=60)
    wall = time.monotonic() - start
    summary = parse_summary(res.stderr, res.describe())
    summary.wall = wall
    assert_exit_ok(res.returncode, summary, res.describe())
    assert os.path.exists(out), "no output file\n" + res.describe()
    assert sorted(os.listdir(os.path.dirname(out))) == [
        os.path.basename(out)], "temporary files left behind"
    return res, summary


def body_lines(path, function):
    """(first, last) line of the body of the def of function in the file
    at path: a sample inside it is at one of these, never at the def line
    (where a writer that gave each frame its function's first line would
    put it)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            first = node.body[0].lineno
            assert first > node.lineno, "def %s is on one line" % function
            last = max(getattr(n, "lineno", first) for n in ast.walk(node))
            return first, last
    raise AssertionError("no def %s in %s" % (function, path))


# --- pprof: protobuf wire format, just enough for profile.proto ---

def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def pb_fields(buf):
    """{field number: [values]}: ints for varints, bytes for the rest."""
    out = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value = bytes(buf[i:i + n])
            assert len(value) == n, "truncated field %d" % field
            i += n
        elif wire == 1:
            value = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wire == 5:
            value = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise AssertionError("bad wire type %d" % wire)
        out.setdefault(field, []).append(value)
    return out


def pb_ints(fields, number):
    """A repeated integer field, packed or not."""
    values = []
    for v in fields.get(number, []):
        if isinstance(v, bytes):
            i = 0
            while i < len(v):
                x, i = _varint(v, i)
                values.append(x)
        else:
            values.append(v)
    return values


def pb_int(fields, number):
    values = pb_ints(fields, number)
    return values[-1] if values else 0


def decode_pprof(path):
    """The profile as plain Python: sample types, samples (values, stack
    root first as (name, file, line), {label: value}), period..."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:2] == b"\x1f\x8b", "a pprof file is gzipped"
    p = pb_fields(gzip.decompress(raw))
    strings = [s.decode("utf-8") for s in p.get(6, [])]
    assert strings and strings[0] == "", "string_table[0] must be ''"
    assert len(set(strings)) == len(strings), "strings must be unique"

    def vt(b):
        f = pb_fields(b)
        return strings[pb_int(f, 1)], strings[pb_int(f, 2)]

    functions = {}
    for b in p.get(5, []):
        f = pb_fields(b)
        functions[pb_int(f, 1)] = (strings[pb_int(f, 2)],
                                   strings[pb_int(f, 4)])
    locations = {}
    for b in p.get(4, []):
        f = pb_fields(b)
        lines = [pb_fields(l) for l in f.get(4, [])]
        assert len(lines) == 1, "one Line per location (no inlining)"
        name, file = functions[pb_int(lines[0], 1)]
        locations[pb_int(f, 1)] = (name, file, pb_int(lines[0], 2))
    assert 0 not in locations and 0 not in functions, "ids are nonzero"
    samples = []
    for b in p.get(2, []):
        f = pb_fields(b)
        labels = {}
        for lb in f.get(3, []):
            lf = pb_fields(lb)
            labels[strings[pb_int(lf, 1)]] = strings[pb_int(lf, 2)]
        stack = [locations[i] for i in pb_ints(f, 1)]
        samples.append((pb_ints(f, 2), stack[::-1], labels))
    return {
        "sample_types": [vt(b) for b in p.get(1, [])],
        "period_type": vt(p[11][0]) if 11 in p else None,
        "period": pb_int(p, 12),
        "duration_nanos": pb_int(p, 10),
        "time_nanos": pb_int(p, 9),
        "samples": samples,
        "comments": [strings[i] for i in pb_ints(p, 13)],
    }


def check_pprof_values(prof, summary, clock):
    """Types, period, values; each thread was in every sample (the one
    thread of hot.py; all threads with --idle), so each thread's samples
    add up to the summary's count (of sampling ticks)."""
    assert prof["sample_types"] == [("samples", "count"),
                                    (clock, "nanoseconds")]
    assert prof["period_type"] == (clock, "nanoseconds")
    assert prof["period"] == round(1e9 / RATE)
    per_thread = Counter()
    for values, _, labels in prof["samples"]:
        per_thread[labels["thread"]] += values[0]
    for label, total in per_thread.items():
        assert total == summary.samples, (
            "the file counts %d samples of %s, the summary %d" % (
                total, label, summary.samples))
    for values, _, _ in prof["samples"]:
        assert values[0] > 0 and values[1] == values[0] * prof["period"]
    assert abs(prof["duration_nanos"] / 1e9 - summary.seconds) < 0.05


def chain_samples(samples, chain):
    """Of the (count, stack root first), the count that starts with chain."""
    hit = total = 0
    for count, stack in samples:
        total += count
        if len(stack) >= len(chain) and all(
                s[0] == c["name"] and s[1] == c["file"]
                for s, c in zip(stack, chain)):
            hit += count
    return hit, total


# --- go tool pprof ---

def go_pprof(args, tmp_path):
    """Run `go tool pprof ARGS`, offline, with its caches in tmp_path."""
    home = str(tmp_path / "gohome")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"),
               GOPATH=os.path.join(home, "go"), GOPROXY="off",
               GOTOOLCHAIN="local", PPROF_TMPDIR=home)
    res = subprocess.run(["go", "tool", "pprof", "-symbolize=none"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, timeout=120)
    out = res.stdout.decode("utf-8", "replace")
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 0, "go tool pprof %s failed:\n%s\n%s" % (
        " ".join(args), out, err)
    return out


_RAW_SAMPLE = re.compile(r"^\s+(\d+)\s+(\d+): ([\d ]*)$")
_RAW_LABEL = re.compile(r"^\s+(\w+):\[(.*)\]$")
_RAW_LOCATION = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*)$")


def parse_raw(text):
    """`go tool pprof -raw`: ([(values, [location ids] leaf first,
    {label: value})], {location id: "name file:line s=..." text})."""
    samples, locations, section = [], {}, None
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = _RAW_SAMPLE.match(line)
            if m:
                samples.append(([int(m.group(1)), int(m.group(2))],
                                [int(x) for x in m.group(3).split()], {}))
                continue
            m = _RAW_LABEL.match(line)
            if m and samples:
                samples[-1][2][m.group(1)] = m.group(2)
        elif section == "Locations":
            m = _RAW_LOCATION.match(line)
            if m:
                locations[int(m.group(1))] = m.group(2)
    return samples, locations


def raw_frame(text, name, file):
    """The line of a location's "name file:line s=N" text if it is name
    in file, else None."""
    prefix = "%s %s:" % (name, file)
    if not text.startswith(prefix):
        return None
    m = re.match(r"(\d+) s=", text[len(prefix):])
    return int(m.group(1)) if m else None


def check_with_go(out, tmp_path, summary, chain, hot_lines, describe):
    if shutil.which("go") is None:
        pytest.skip("go not found (Debian's golang-go, see scripts/"
                    "install-deps): the pprof file was checked by this "
                    "test's own decoder only, not read by go tool pprof")
    samples, locations = parse_raw(go_pprof(["-raw", out], tmp_path))
    total = sum(v[0] for v, _, _ in samples)
    assert total == summary.samples, (
        "go tool pprof counts %d samples, spyc's summary %d\n%s" % (
            total, summary.samples, describe))
    assert all("thread" in labels for _, _, labels in samples), (
        "every sample has a thread label")
    stacks = []
    for values, ids, _ in samples:
        stack = []
        for loc in reversed(ids):
            stack.append(locations[loc])
        stacks.append((values[0], stack))
    hit = 0
    for count, stack in stacks:
        if len(stack) >= len(chain) and all(
                raw_frame(s, c["name"], c["file"]) is not None
                for s, c in zip(stack, chain)):
            hit += count
            line = raw_frame(stack[len(chain) - 1], chain[-1]["name"],
                             chain[-1]["file"])
            assert hot_lines[0] <= line <= hot_lines[1], (
                "go tool pprof reads line %d for hot(), whose body is "
                "lines %d-%d" % (line, hot_lines[0], hot_lines[1]))
    assert hit >= MIN_CHAIN_SHARE * total, (
        "go tool pprof finds the chain %s in %d of %d samples" % (
            " -> ".join(c["name"] for c in chain), hit, total))
    top = go_pprof(["-top", "-sample_index=samples", out], tmp_path)
    m = re.search(r"of (\d+) total", top)
    assert m and int(m.group(1)) == summary.samples, top
    rows = [l.split() for l in top.splitlines()
            if re.match(r"^\s+\d+\s+[\d.]+%", l)]
    assert rows and rows[0][-1] == chain[-1]["name"], (
        "go tool pprof -top should put %s first:\n%s" % (
            chain[-1]["name"], top))


def test_pprof(spyc, python, targets, tmp_path):
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / "profile.pb.gz")
    os.mkdir(os.path.dirname(out))
    res, summary = record(spyc, hot.pid, out, "--full-filenames")
    describe = res.describe()
    chain = hot.info["chain"]
    hot_lines = body_lines(chain[-1]["file"], chain[-1]["name"])

    prof = decode_pprof(out)
    check_pprof_values(prof, summary, "cpu")
    assert any(hot.info["python_version"] in c for c in prof["comments"])
    hit, total = chain_samples([(v[0], s) for v, s, _ in prof["samples"]],
                               chain)
    assert hit >= MIN_CHAIN_SHARE * total, (
        "only %d of %d samples have the chain %s\n%s" % (
            hit, total, " -> ".join(c["name"] for c in chain), describe))
    for values, stack, labels in prof["samples"]:
        assert set(labels) == {"thread"}
        assert "(tid %d)" % hot.pid in labels["thread"], labels
        if len(stack) >= len(chain) and stack[len(chain) - 1][0] == "hot":
            line = stack[len(chain) - 1][2]
            assert hot_lines[0] <= line <= hot_lines[1], (
                "line %d is not in hot()'s body (%d-%d)" % (
                    (line,) + hot_lines))
    check_with_go(out, tmp_path, summary, chain, hot_lines, describe)


# --- Chrome trace ---

def parse_chrome(path):
    """Check the Trace Event Format's structure; return (doc, metadata
    events, {tid: [X events, file order]})."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert set(doc) >= {"traceEvents", "displayTimeUnit", "otherData"}
    meta, slices, last_end = [], {}, None
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("M", "X"), ev
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "M":
            meta.append(ev)
            continue
        assert ev["cat"] and ev["name"], ev
        assert ev["ts"] >= 0 and ev["dur"] >= 0, ev
        assert ev["ts"] == int(ev["ts"]) and ev["dur"] == int(ev["dur"]), (
            "whole microseconds: %s" % ev)
        assert set(ev["args"]) == {"file", "line"}, ev
        end = ev["ts"] + ev["dur"]
        assert last_end is None or end >= last_end, (
            "slices are written as they end: %s ends before the one "
            "before it (%s)" % (ev, last_end))
        last_end = end
        slices.setdefault(ev["tid"], []).append(ev)
    return doc, meta, slices


def nest(events):
    """Per-thread nesting: every slice lies inside the one it starts in.
    Returns [(event, [names of its ancestors, root first])]."""
    order = sorted(range(len(events)),
                   key=lambda i: (events[i]["ts"], -events[i]["dur"], i))
    stack, out = [], []
    for i in order:
        ev = events[i]
        while stack and ev["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        if stack:
            parent = stack[-1]
            assert ev["ts"] + ev["dur"] <= parent["ts"] + parent["dur"], (
                "%s overlaps its parent %s without nesting" % (ev, parent))
        out.append((ev, [p["name"] for p in stack]))
        stack.append(ev)
    return out


def root_time(events):
    """Microseconds covered by a thread's root slices."""
    return sum(ev["dur"] for ev, parents in nest(events) if not parents)


def devtools_import(path, tmp_path):
    """What DevTools' trace engine made of the file, or None (reason)."""
    if shutil.which("node") is None:
        return None, "node not found"
    if not os.path.isdir(DEVTOOLS_ENGINE):
        return None, ("DevTools' trace engine (npm @paulirish/trace_engine) "
                      "not installed in %s (scripts/install-deps)" %
                      DEVTOOLS_ENGINE)
    out = str(tmp_path / "devtools.json")
    res = subprocess.run(["node", CHROME_IMPORT, DEVTOOLS_ENGINE, path, out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=120)
    log = res.stdout.decode("utf-8", "replace")
    assert res.returncode == 0, "DevTools' engine failed:\n" + log
    # It logs what it finds wrong (e.g. "Begin/End events mismatch").
    assert "mismatch" not in log and "Error" not in log, log
    with open(out) as f:
        return json.load(f), None


def check_devtools(path, tmp_path, slices, pid):
    """DevTools' engine must build every slice, nested the same way."""
    imported, why = devtools_import(path, tmp_path)
    if imported is None:
        return why
    assert imported["generic"], "a trace without Chrome's own events"
    assert [p for p, _ in imported["processNames"]] == [pid]
    got = dict((t["tid"], t) for t in imported["threads"] if t["pid"] == pid)
    assert sorted(got) == sorted(slices), (
        "DevTools sees threads %s, the file has %s" % (
            sorted(got), sorted(slices)))
    for tid, events in slices.items():
        t = got[tid]
        assert t["nodes"] == len(events), (
            "thread %d: DevTools kept %d of %d slices (it drops those that "
            "do not nest)" % (tid, t["nodes"], len(events)))
        assert t["names"] == dict(Counter(e["name"] for e in events))
        assert t["rootDur"] == root_time(events)
    return None


def check_durations(events, summary, describe):
    """A thread in every sample is covered from its first sample to one
    interval past its last: about samples x interval (more when samples
    are late or dropped), and no more than spyc ran."""
    interval = 1e6 / RATE
    covered = root_time(events)
    assert 0.8 * summary.samples * interval <= covered <= (
        summary.wall * 1e6 + interval), (
        "root slices cover %.0f ms for %d samples at %d Hz; spyc sampled "
        "%.2f s and ran %.2f s\n%s" % (
            covered / 1e3, summary.samples, RATE, summary.seconds,
            summary.wall, describe))


def test_chrome(spyc, python, targets, tmp_path):
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / "profile.trace.json")
    os.mkdir(os.path.dirname(out))
    res, summary = record(spyc, hot.pid, out, "--full-filenames")
    describe = res.describe()
    chain = hot.info["chain"]
    doc, meta, slices = parse_chrome(out)

    assert doc["otherData"]["samples"] == summary.samples
    assert doc["otherData"]["timeline_complete"] is True
    names = dict(((m["name"], m["tid"]), m["args"]) for m in meta)
    assert all(m["pid"] == hot.pid for m in meta)
    assert "(pid %d)" % hot.pid in names[("process_name", 0)]["name"]
    # The main thread's native id is the pid.
    assert sorted(slices) == [hot.pid], sorted(slices)
    assert "(tid %d)" % hot.pid in names[("thread_name", hot.pid)]["name"]

    nested = nest(slices[hot.pid])
    want = [c["name"] for c in chain]
    in_chain = [ev for ev, parents in nested
                if parents + [ev["name"]] == want and
                ev["args"]["file"] == chain[-1]["file"]]
    assert in_chain, "no %s slice under %s\n%s" % (
        want[-1], " -> ".join(want[:-1]), describe)
    hot_lines = body_lines(chain[-1]["file"], chain[-1]["name"])
    for ev in in_chain:
        assert hot_lines[0] <= ev["args"]["line"] <= hot_lines[1], (
            "a hot() slice at line %d, not in its body (%d-%d): %s" % (
                (ev["args"]["line"],) + hot_lines + (ev,)))
    hot_time = sum(ev["dur"] for ev in in_chain)
    assert hot_time >= MIN_CHAIN_SHARE * root_time(slices[hot.pid]) - \
        2e6 / RATE, "hot() covers %.0f of %.0f ms\n%s" % (
            hot_time / 1e3, root_time(slices[hot.pid]) / 1e3, describe)
    check_durations(slices[hot.pid], summary, describe)
    why = check_devtools(out, tmp_path, slices, hot.pid)
    if why:
        pytest.skip("%s: the trace was checked here but not loaded by a "
                    "real importer" % why)


def test_threads_both_formats(spyc, python, targets, tmp_path):
    """Four named threads taking turns (parallel.py), with --idle so that
    every thread is in every sample: each gets its own label (pprof) and
    row (Chrome), holding its own spin function, and each row covers the
    sampled time."""
    par = targets.start(python, "parallel.py")
    workers = par.info["workers"]
    expected = par.expected_threads()
    spin = dict((name, [f[0] for f in expected[ident]["frames"]][0])
                for name, ident in workers.items())
    os.mkdir(str(tmp_path / "p"))
    os.mkdir(str(tmp_path / "c"))
    pb = str(tmp_path / "p" / "threads.pprof")
    res, summary = record(spyc, par.pid, pb, "--idle")
    prof = decode_pprof(pb)
    check_pprof_values(prof, summary, "wall")
    by_label = {}
    for values, stack, labels in prof["samples"]:
        by_label.setdefault(labels["thread"], set()).update(
            s[0] for s in stack)
    for name, fn in spin.items():
        label = [l for l in by_label if l.startswith(name + " (tid ")]
        assert len(label) == 1, "no one pprof label for %s: %s" % (
            name, sorted(by_label))
        assert fn in by_label[label[0]], (name, fn, by_label[label[0]])
    if shutil.which("go"):
        samples, _ = parse_raw(go_pprof(["-raw", pb], tmp_path))
        per_thread = Counter()
        for values, _, labels in samples:
            per_thread[labels["thread"]] += values[0]
        assert per_thread == dict((l, summary.samples) for l in by_label)

    tr = str(tmp_path / "c" / "threads.trace.json")
    res, summary = record(spyc, par.pid, tr, "--idle")
    doc, meta, slices = parse_chrome(tr)
    thread_names = dict((m["tid"], m["args"]["name"]) for m in meta
                        if m["name"] == "thread_name")
    assert sorted(thread_names) == sorted(slices)
    assert len(slices) == len(workers) + 1, thread_names
    for name, fn in spin.items():
        tids = [t for t, n in thread_names.items()
                if n.startswith(name + " (tid ")]
        assert len(tids) == 1, (name, thread_names)
        events = slices[tids[0]]
        nested = nest(events)
        assert any(ev["name"] == fn and "via" in parents
                   for ev, parents in nested), (name, fn)
        # Every thread is in every sample (--idle): each row spans the
        # sampled time.
        check_durations(events, summary, "%s: %s" % (name, res.describe()))
    why = check_devtools(tr, tmp_path, slices, par.pid)
    if why:
        pytest.skip("%s: the trace was checked here but not loaded by a "
                    "real importer" % why)


@pytest.mark.parametrize("fmt,ext", [("pprof", ".pb.gz"),
                                     ("chrome", ".trace.json")])
def test_default_name_and_format_option(spyc, any_python, tmp_path, fmt,
                                        ext):
    """--format names the default file (spyc-PID.EXT) in launch mode, and
    --format wins over an extension (.json stays speedscope otherwise)."""
    code = "import time\nt = time.time()\nwhile time.time() - t < 0.5: pass\n"
    proc = subprocess.run(
        [spyc.path, "record", "--format", fmt, "--", any_python.path, "-c",
         code], cwd=str(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=target_env(), timeout=60)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in (0, 1), err
    files = os.listdir(str(tmp_path))
    assert len(files) == 1 and re.match(
        r"^spyc-\d+%s$" % re.escape(ext), files[0]), (files, err)
    path = os.path.join(str(tmp_path), files[0])
    forced = os.path.join(str(tmp_path), "forced.json")
    proc = subprocess.run(
        [spyc.path, "record", "--format", fmt, "-o", forced, "--",
         any_python.path, "-c", code], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=target_env(), timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    for p in (path, forced):
        with open(p, "rb") as f:
            head = f.read(2)
        if fmt == "pprof":
            assert head == b"\x1f\x8b", p
            decode_pprof(p)
        else:
            parse_chrome(p)


def test_unknown_format_lists_new_ones(spyc, tmp_path):
    res = spyc.run(["record", "--format", "perfetto", "-o",
                    str(tmp_path / "x"), "--pid", "1"])
    res.assert_error(64, "unknown format", "pprof", "chrome")


def test_subprocesses_both_formats(spyc, any_python, tmp_path):
    """--subprocesses (family.py mixed: fork, fork+exec, a shell wrapper):
    pprof labels each sample with its process and "process: thread";
    the Chrome trace gives each process its own pid and name, with each
    member's own work in its rows; DevTools loads it all."""
    family = os.path.join(TESTS, "targets", "family.py")
    files = {}
    for fmt, name in (("pprof", "tree.pb.gz"), ("chrome", "tree.trace.json")):
        report = str(tmp_path / (fmt + "-report.json"))
        out = str(tmp_path / name)
        res = spyc.run(["record", "--subprocesses", "-o", out, "--",
                        any_python.path, family, report, "mixed"],
                       env=target_env(), timeout=120)
        summary = parse_summary(res.stderr, res.describe())
        assert_exit_ok(res.returncode, summary, res.describe())
        with open(report) as f:
            info = json.load(f)
        files[fmt] = (out, info, res)

    out, info, res = files["pprof"]
    prof = decode_pprof(out)
    work = {}
    for values, stack, labels in prof["samples"]:
        m = re.search(r"\(pid (\d+)\)$", labels["process"])
        assert m, labels
        assert labels["thread"].startswith(labels["process"] + ": "), labels
        for frame in stack:
            work.setdefault(frame[0], set()).add(int(m.group(1)))
    for role, pid in info["roles"].items():
        assert work.get(role + "_work") == {pid}, (
            "%s_work should be in samples of pid %d only: %s\n%s" % (
                role, pid, work.get(role + "_work"), res.describe()))

    out, info, res = files["chrome"]
    doc, meta, _ = parse_chrome(out)
    process_names = dict((m["pid"], m["args"]["name"]) for m in meta
                         if m["name"] == "process_name")
    rows = {}
    for ev in doc["traceEvents"]:
        if ev["ph"] == "X":
            rows.setdefault((ev["pid"], ev["tid"]), []).append(ev)
    for pid, name in process_names.items():
        assert name.endswith("(pid %d)" % pid), (pid, name)
    assert set(p for p, _ in rows) == set(process_names)
    for role, pid in info["roles"].items():
        holders = set(p for (p, _), evs in rows.items()
                      if any(e["name"] == role + "_work" for e in evs))
        assert holders == {pid}, (role, pid, holders, res.describe())
    for evs in rows.values():
        nest(evs)
    imported, why = devtools_import(out, tmp_path)
    if imported is None:
        pytest.skip("%s: the trace was checked here but not loaded by a "
                    "real importer" % why)
    got = dict(((t["pid"], t["tid"]), t["nodes"])
               for t in imported["threads"])
    assert got == dict((k, len(v)) for k, v in rows.items()), got
