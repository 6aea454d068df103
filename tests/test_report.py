# SPDX-License-Identifier: MIT
"""spyc report: the report of a profile spyc recorded from a real target,
checked against the same numbers computed here, independently, from the
same file (speedscope JSON, folded stacks, pprof and Chrome trace).

Own time: the samples whose innermost frame is in the function.  Total
time: the samples with the function anywhere on the stack, once per
sample however often it recurs.  A function is a name and a file, its
lines merged.
"""

import json
import math
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import SLOTS, TARGETS, newest_python, target_env
from test_formats import decode_pprof
from test_record import assert_exit_ok, html_data, parse_summary

# The frame text of folded files: "name (file:line)", "name (file)", "name".
FRAME_RE = re.compile(r"^(.*?) \((.*)\)$")
TID_LABEL_RE = re.compile(r"^(thread 0x[0-9a-f]+|.* \(tid \d+\))$")
# A line of a text report's line table; the source follows two spaces.
ROW_RE = re.compile(r"^  +(\d+) +(\S+) +([\d.]+)% +(\S+) +([\d.]+)%(?:  (.*))?$")
NS = 1e9
ERROR_RE = re.compile(
    "^Sampling error \\(95%, (\\d+) samples\\): \u00b1([\\d.]+) points on a "
    "50% share, \u00b1([\\d.]+) on 10%, \u00b1([\\d.]+) on 1%$")


def record(spyc, python, path, script, *args, **kw):
    """Launch python script args under spyc record -o path; returns the
    SpycResult.  kw: extra (record options), cwd, duration (then the
    program is ended when it elapses)."""
    argv = ["record", "--rate", "200", "-o", path] + list(kw.get("extra", ()))
    if kw.get("duration"):
        argv += ["--duration", kw["duration"], "--kill-after-duration"]
    argv += ["--", python.path, os.path.join(TARGETS, script)] + list(args)
    old = os.getcwd()
    os.chdir(kw.get("cwd", os.path.dirname(str(path))))
    try:
        res = spyc.run(argv, env=target_env(), timeout=90)
    finally:
        os.chdir(old)
    summary = parse_summary(res.stderr, res.describe())
    # These tests read the profile, not how many reads tore: a target
    # that calls as fast as callgraph.py, on a loaded machine, may have
    # many torn (and so dropped) reads.
    if res.returncode == 1 and summary.dropped:
        assert summary.samples > 0, res.describe()
        return res
    assert_exit_ok(res.returncode, summary, res.describe())
    assert summary.samples > 0, res.describe()
    return res


def record_pid(spyc, pid, path, *extra):
    res = spyc.run(["record", "--pid", pid, "--rate", "200", "--duration",
                    1.5, "-o", path] + list(extra), timeout=60)
    assert_exit_ok(res.returncode, parse_summary(res.stderr, res.describe()),
                   res.describe())
    return res


def report(spyc, path, *args, **kw):
    """The parsed JSON of spyc report --json path args."""
    res = spyc.run(["report", "--json", path] + list(args), **kw)
    res.assert_ok()
    try:
        return json.loads(res.stdout)
    except ValueError as e:
        pytest.fail("report --json printed invalid JSON (%s)\n%s" % (
            e, res.describe()))


# --- reading the files here: [(thread, [(name, file, line)] root first,
# count)] with count in samples, or in nanoseconds for speedscope seconds

def read_speedscope(path, gpu=False):
    with open(path) as f:
        doc = json.load(f)
    frames = [(fr["name"], fr.get("file", ""), fr.get("line", 0))
              for fr in doc["shared"]["frames"]]
    out = []
    for prof in doc["profiles"]:
        if prof["name"].startswith("GPU") != gpu:
            continue
        assert prof["type"] == "sampled" and prof["unit"] == "seconds"
        for sample, weight in zip(prof["samples"], prof["weights"]):
            out.append((prof["name"], [frames[i] for i in sample],
                        int(round(weight * NS))))
    return out


def parse_frame(text):
    m = FRAME_RE.match(text)
    if not m:
        return (text, "", 0)
    file, _, line = m.group(2).rpartition(":")
    if file and line.isdigit():
        return (m.group(1), file, int(line))
    return (m.group(1), m.group(2), 0)


def read_folded(path, prefixed, process=False):
    """prefixed: lines begin with the thread (record --threads); process:
    with the process before it (--subprocesses), labelled here as the
    report labels it, "process: thread"."""
    out = []
    with open(path) as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            parts = stack.split(";")
            thread = parts.pop(0) if prefixed else None
            if process:
                thread = "%s: %s" % (thread, parts.pop(0))
            if parts == ["[empty]"] and not prefixed:
                parts = []
            out.append((thread, [parse_frame(p) for p in parts], int(count)))
    return out


def expected(stacks, thread=None):
    """{"total", "own": {(name, file): n}, "total_func": {...},
    "own_line": {(name, file, line): n}, "total_line": {...}} of the
    stacks of thread (None: all)."""
    exp = {"total": 0, "own": {}, "total_func": {}, "own_line": {},
           "total_line": {}}
    for t, frames, count in stacks:
        if thread is not None and t != thread:
            continue
        exp["total"] += count
        if not frames:
            continue
        leaf = frames[-1]
        for key, k in (("own", leaf[:2]), ("own_line", leaf)):
            exp[key][k] = exp[key].get(k, 0) + count
        for key, ks in (("total_func", set(f[:2] for f in frames)),
                        ("total_line", set(frames))):
            for k in ks:
                exp[key][k] = exp[key].get(k, 0) + count
    return exp


def ranked(exp, sort="own"):
    """[(name, file)] in the report's order: by the sort key, then the
    other, then name and file."""
    funcs = list(exp["total_func"])
    own = lambda f: exp["own"].get(f, 0)  # noqa: E731
    tot = lambda f: exp["total_func"][f]  # noqa: E731
    if sort == "own":
        key = lambda f: (-own(f), -tot(f), f[0].encode(), f[1].encode())  # noqa: E731,E501
    else:
        key = lambda f: (-tot(f), -own(f), f[0].encode(), f[1].encode())  # noqa: E731,E501
    return sorted(funcs, key=key)


def to_count(value, unit):
    """A report's value back in the unit of expected(): exact for samples,
    nanoseconds rounded for seconds."""
    return int(round(value * NS)) if unit == "seconds" else value


# z of a two-sided 95% interval.
Z95 = 1.96


def samples_behind(path, total, unit):
    """The samples behind a section's total, from the file: the total
    where the file counts samples, its time at the rate a speedscope file
    of spyc's says (spyc_process.rate_hz) or in periods of a pprof file,
    else None (a Chrome trace does not say them)."""
    if unit == "samples":
        return total
    if path.endswith(".pb.gz"):
        prof = decode_pprof(path)
        if prof["period_type"] and prof["period_type"][1] == "nanoseconds" \
                and prof["period"] > 0:
            return round(total / prof["period"])
        return None
    if not path.endswith(".json") or path.endswith(".trace.json"):
        return None
    with open(path) as f:
        rate = json.load(f).get("spyc_process", {}).get("rate_hz")
    return round(total / NS * rate) if rate else None


def share_error(count, total, n):
    """The sampling error, in points, of a share count / total of n
    samples: the half-width of its 95% interval."""
    p = float(count) / total
    return 100.0 * Z95 * math.sqrt(p * (1 - p) / n)


def assert_errors(sec, exp, n, describe):
    """Each share's sampling error, from the counts and samples of the
    file (None where the samples are not known)."""
    assert sec["samples"] == n, describe
    for f in sec["functions"]:
        k = (f["name"], f["file"])
        for key, count in (("own", exp["own"].get(k, 0)),
                           ("total", exp["total_func"][k])):
            err = f[key + "_pct_error"]
            if n is None:
                assert err is None, (k, describe)
            else:
                assert abs(err - share_error(count, exp["total"], n)) < \
                    1e-6, (k, key, describe)


def assert_section(sec, exp, unit, path, sort="own", top=20):
    describe = json.dumps(sec, indent=1)[:3000]
    assert to_count(sec["total"], unit) == exp["total"], describe
    assert_errors(sec, exp, samples_behind(path, exp["total"], unit),
                  describe)
    order = ranked(exp, sort)
    assert sec["nr_functions"] == len(order), describe
    got = [(f["name"], f["file"]) for f in sec["functions"]]
    assert got == order[:top], describe
    for f in sec["functions"]:
        k = (f["name"], f["file"])
        assert to_count(f["own"], unit) == exp["own"].get(k, 0), (k, describe)
        assert to_count(f["total"], unit) == exp["total_func"][k], (
            k, describe)
        assert abs(f["own_pct"] - 100.0 * exp["own"].get(k, 0) /
                   exp["total"]) < 1e-6, describe
        assert abs(f["total_pct"] - 100.0 * exp["total_func"][k] /
                   exp["total"]) < 1e-6, describe


def assert_line_table(table, exp, unit):
    func = (table["name"], table["file"])
    want = sorted(k for k in exp["total_line"] if k[:2] == func)
    got = [(func[0], func[1], row["line"]) for row in table["lines"]]
    assert got == want, json.dumps(table, indent=1)
    for row in table["lines"]:
        k = func + (row["line"],)
        assert to_count(row["own"], unit) == exp["own_line"].get(k, 0), k
        assert to_count(row["total"], unit) == exp["total_line"][k], k


def function_rows(text):
    """The FUNCTION column of a text report's (first) function table."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines)
                 if l.startswith("Functions by ")) + 2
    rows = []
    for l in lines[start:]:
        if not l.strip():
            break
        rows.append(l.split("%  ", 2)[2])
    return rows


def source_lines(path):
    with open(path, encoding="utf-8") as f:
        return [l.rstrip() for l in f.read().split("\n")]


def hot_lines():
    """Line numbers of hot()'s body in hot.py, as the file has them."""
    lines = source_lines(os.path.join(TARGETS, "hot.py"))
    start = lines.index("def hot(n):") + 1
    end = lines.index("    return x", start) + 1
    return set(range(start + 1, end + 1))


@pytest.fixture(scope="module")
def newest():
    py = newest_python()
    if py is None:
        pytest.skip("no supported CPython (3.6-3.15) found on this machine")
    return py


@pytest.fixture(scope="module")
def hot_profiles(spyc, newest, tmp_path_factory):
    """hot.py recorded with --full-filenames as speedscope, folded and
    pprof."""
    d = tmp_path_factory.mktemp("hot")
    paths = {}
    for fmt in ("json", "txt", "pb.gz", "trace.json", "html"):
        paths[fmt] = str(d / ("hot." + fmt))
        record(spyc, newest, paths[fmt], "hot.py", 1.5,
               extra=["--full-filenames"])
    return paths


@pytest.fixture(scope="module")
def callgraph_profiles(spyc, newest, tmp_path_factory):
    """callgraph.py (recursion, many functions) in each format report
    reads, recorded at once by as many spyc attached to one run of it.
    6 s each: its calls are so short that on a slow machine the first
    seconds' reads of its stacks can all tear (dropped, counted) until
    spyc has learnt its call pairs."""
    d = tmp_path_factory.mktemp("callgraph")
    ready = str(d / "report.json")
    target = subprocess.Popen(
        [newest.path, os.path.join(TARGETS, "callgraph.py"), ready],
        env=target_env(), cwd=str(d), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    paths, recorders = {}, {}
    try:
        deadline = time.time() + 60
        while not os.path.exists(ready):
            assert target.poll() is None and time.time() < deadline, (
                "callgraph.py did not start")
            time.sleep(0.05)
        for fmt in ("json", "txt", "pb.gz", "trace.json", "html"):
            paths[fmt] = str(d / ("cg." + fmt))
            recorders[fmt] = subprocess.Popen(
                [spyc.path, "record", "--pid", str(target.pid), "--rate",
                 "200", "--duration", "6", "--full-filenames", "-o",
                 paths[fmt]], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
        for fmt, rec in recorders.items():
            _, err = rec.communicate(timeout=90)
            describe = "record -o %s: exit %d\n%s" % (
                paths[fmt], rec.returncode, err.decode("utf-8", "replace"))
            summary = parse_summary(err.decode("utf-8", "replace"),
                                    describe)
            # As record() takes them: reads of a target that calls this
            # fast may tear, on a loaded machine.
            if rec.returncode != 1 or not summary.dropped:
                assert_exit_ok(rec.returncode, summary, describe)
            assert summary.samples > 0, describe
    finally:
        for rec in recorders.values():
            if rec.poll() is None:
                rec.kill()
                rec.wait()
        target.kill()
        target.wait()
    return paths


def read_pprof(path):
    """Each sample's time (its value in nanoseconds), labelled with its
    thread as speedscope names its profiles."""
    prof = decode_pprof(path)
    at = [u for _, u in prof["sample_types"]].index("nanoseconds")
    return [(labels.get("thread"), stack, values[at])
            for values, stack, labels in prof["samples"]]


def read_chrome(path):
    """Each stretch of time in which a thread's open "spyc" slices (its
    stack, outermost first) did not change, in nanoseconds, labelled with
    the thread's name."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = dict(((e["pid"], e["tid"]), e["args"]["name"]) for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name")
    rows = {}
    for e in events:
        if e["ph"] == "X" and e.get("cat") == "spyc":
            rows.setdefault((e["pid"], e["tid"]), []).append(e)
    out = []
    for row, evs in rows.items():
        # Every moment a slice starts or ends; between two, the slices
        # open then, outermost (earliest, then longest) first.
        cuts = sorted(set([e["ts"] for e in evs] +
                          [e["ts"] + e["dur"] for e in evs]))
        for a, b in zip(cuts, cuts[1:]):
            on = sorted((e for e in evs
                         if e["ts"] <= a and e["ts"] + e["dur"] >= b),
                        key=lambda e: (e["ts"], -e["dur"]))
            if on:
                out.append((names.get(row), [
                    (e["name"], e["args"]["file"], e["args"]["line"])
                    for e in on], int(round((b - a) * 1000))))
    return out


def read_html(path):
    """An HTML page's data as stacks: its thread labels as report gives
    them ("process: thread" in a process tree)."""
    data = html_data(path)
    out = []
    for thread, count, ids in data["stacks"]:
        label = data["threads"][thread]
        k = data["thread_process"][thread]
        if k >= 0:
            label = "%s: %s" % (data["processes"][k], label)
        out.append((label, [tuple(data["frames"][i]) for i in ids], count))
    return out


def read(path, prefixed=False, process=False):
    if path.endswith(".html"):
        return read_html(path), "samples"
    if path.endswith(".trace.json"):
        return read_chrome(path), "seconds"
    if path.endswith(".json"):
        return read_speedscope(path), "seconds"
    if path.endswith(".pb.gz"):
        return read_pprof(path), "seconds"
    return read_folded(path, prefixed, process), "samples"


@pytest.mark.parametrize("fmt", ["json", "txt", "pb.gz", "trace.json",
                                 "html"])
def test_hot_matches_the_file(spyc, hot_profiles, fmt):
    path = hot_profiles[fmt]
    stacks, unit = read(path)
    exp = expected(stacks)
    doc = report(spyc, path)
    assert doc["unit"] == unit
    assert doc["format"] == {"json": "speedscope", "txt": "folded",
                             "pb.gz": "pprof", "trace.json": "chrome",
                             "html": "html"}[fmt]
    assert to_count(doc["total"], unit) == exp["total"]
    assert len(doc["sections"]) == 1 and doc["sections"][0]["thread"] is None
    sec = doc["sections"][0]
    assert_section(sec, exp, unit, path)
    # hot() is the hottest function by far: it is first, and its lines
    # are hot()'s own lines, with their source as the file has it.
    hot = sec["functions"][0]
    assert hot["name"] == "hot", json.dumps(sec, indent=1)[:2000]
    assert os.path.samefile(hot["file"], os.path.join(TARGETS, "hot.py"))
    assert hot["own_pct"] > 50, hot
    tables = sec["line_tables"]
    assert 1 <= len(tables) <= 3
    assert (tables[0]["name"], tables[0]["file"]) == (hot["name"],
                                                      hot["file"])
    for t in tables:
        assert_line_table(t, exp, unit)
    assert tables[0]["source_found"]
    src = source_lines(hot["file"])
    body = hot_lines()
    for row in tables[0]["lines"]:
        assert row["line"] in body, row
        assert row["source"] == src[row["line"] - 1], row


def test_recursion_counts_once(spyc, callgraph_profiles):
    """callgraph.py's cg_rec and cg_pingpong recurse: a stack holds them
    several times, and total time still counts each sample once."""
    for fmt in ("json", "txt", "pb.gz", "trace.json", "html"):
        path = callgraph_profiles[fmt]
        stacks, unit = read(path)
        repeated = [frames for _, frames, _ in stacks
                    if len(set(f[:2] for f in frames)) < len(frames)]
        assert repeated, "no recursive stack was sampled in %s" % path
        exp = expected(stacks)
        for sort in ("own", "total"):
            doc = report(spyc, path, "--sort", sort, "--top", 1000)
            assert doc["sort"] == sort
            assert_section(doc["sections"][0], exp, unit, path, sort,
                           1000)
            for t in doc["sections"][0]["line_tables"]:
                assert_line_table(t, exp, unit)


def test_top(spyc, callgraph_profiles):
    path = callgraph_profiles["txt"]
    stacks, unit = read(path)
    exp = expected(stacks)
    assert len(exp["total_func"]) > 5
    for n in (1, 5):
        doc = report(spyc, path, "--top", n)
        assert_section(doc["sections"][0], exp, unit, path, "own", n)
        assert len(doc["sections"][0]["functions"]) == n
    # 0: every function, as merge --top 0 has it.
    doc = report(spyc, path, "--top", 0)
    assert_section(doc["sections"][0], exp, unit, path, "own",
                   len(exp["total_func"]))
    assert len(doc["sections"][0]["functions"]) == len(exp["total_func"])
    res = spyc.run(["report", path, "-n", 5, "-s", "total"])
    res.assert_ok()
    assert function_rows(res.stdout) == [
        "%s (%s)" % f if f[1] else f[0] for f in ranked(exp, "total")][:5]


def test_function_option(spyc, callgraph_profiles):
    path = callgraph_profiles["json"]
    stacks, unit = read(path)
    exp = expected(stacks)
    names = set(f[0] for f in exp["total_func"])
    # Exact qualified name: that function only, though others contain it.
    assert "cg_rec" in names and "cg_root" in names
    doc = report(spyc, path, "--function", "cg_rec")
    tables = doc["sections"][0]["line_tables"]
    assert [t["name"] for t in tables] == ["cg_rec"]
    assert_line_table(tables[0], exp, unit)
    # A substring: every function whose name holds it; given twice, both.
    # The leaves are short calls: a loaded run may sample none of them.
    sub = next(s for s in ("leaf", "ping", "cg_")
               if any(s in n and n != "cg_root" for n in names))
    doc = report(spyc, path, "-f", sub, "-f", "cg_root")
    got = sorted(t["name"] for t in doc["sections"][0]["line_tables"])
    want = sorted(set(n for n in names if sub in n) | set(["cg_root"]))
    assert got == want and any(sub in n for n in got if n != "cg_root")
    for t in doc["sections"][0]["line_tables"]:
        assert_line_table(t, exp, unit)
    # <callgraph>'s functions have no file to read.
    assert not any(t["source_found"] for t in tables)
    res = spyc.run(["report", path, "--function", "no_such_function_xyz"])
    res.assert_error(2, path, "no_such_function_xyz")


def test_text_report(spyc, hot_profiles):
    """The text report: hot() first in the table, and a line table whose
    source column is the real text of hot.py at each line."""
    path = hot_profiles["txt"]
    res = spyc.run(["report", path])
    res.assert_ok()
    out = res.stdout.splitlines()
    stacks, _ = read(path)
    exp = expected(stacks)
    # The sampling error at three shares, from the samples in the file.
    m = [ERROR_RE.match(l) for l in out]
    m = [x for x in m if x]
    assert len(m) == 1, res.stdout
    n = exp["total"]
    assert int(m[0].group(1)) == n, m[0].group(0)
    for share, got in zip((0.5, 0.1, 0.01), m[0].groups()[1:]):
        assert abs(float(got) - share_error(share * n, n, n)) <= 0.051, (
            share, m[0].group(0))
    hot = os.path.join(TARGETS, "hot.py")
    assert function_rows(res.stdout)[0] in (
        "hot (%s)" % hot, "hot (%s)" % os.path.realpath(hot)), res.stdout
    header = [i for i, l in enumerate(out) if l.startswith("Lines of hot (")]
    assert len(header) == 1, res.stdout
    assert "(source not found)" not in out[header[0]]
    src = source_lines(hot)
    body = hot_lines()
    seen = set()
    for l in out[header[0] + 2:]:
        m = ROW_RE.match(l)
        if not m:
            break
        line = int(m.group(1))
        assert m.group(6) == src[line - 1], (l, src[line - 1])
        if m.group(2) != "":
            k = next(k for k in exp["total_line"]
                     if k[0] == "hot" and k[2] == line)
            assert int(m.group(2)) == exp["own_line"].get(k, 0), l
            assert int(m.group(4)) == exp["total_line"][k], l
            seen.add(line)
    want = set(k[2] for k in exp["total_line"] if k[0] == "hot")
    assert seen == want and seen <= body, res.stdout


@pytest.mark.parametrize("fmt", ["json", "pb.gz", "trace.json", "txt"])
def test_short_filenames(spyc, newest, tmp_path, fmt):
    """Without --full-filenames, names are relative to where the program
    ran: found from there; from elsewhere too in speedscope, pprof and
    Chrome traces, which name the directory record took off ("(source not found)" in
    folded stacks, which cannot), until that directory goes."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(os.path.join(TARGETS, "hot.py"), str(work / "hot.py"))
    path = str(tmp_path / ("short." + fmt))
    argv = ["record", "--rate", "200", "-o", path, "--", newest.path,
            "hot.py", 1]
    old = os.getcwd()
    os.chdir(str(work))
    try:
        res = spyc.run(argv, env=target_env(), timeout=60)
        assert_exit_ok(res.returncode,
                       parse_summary(res.stderr, res.describe()),
                       res.describe())
        here = report(spyc, path, "--function", "hot")
        text_here = spyc.run(["report", path, "-f", "hot"])
    finally:
        os.chdir(old)
    t = here["sections"][0]["line_tables"][0]
    assert t["file"] == "hot.py" and t["source_found"], t
    src = source_lines(str(work / "hot.py"))
    assert all(r["source"] == src[r["line"] - 1] for r in t["lines"])
    text_here.assert_ok()
    assert "Lines of hot (hot.py): " in text_here.stdout
    assert "(source not found)" not in text_here.stdout.split(
        "Lines of hot")[1].split("\n")[0]

    def from_elsewhere():
        os.chdir(str(tmp_path))
        try:
            return (report(spyc, path, "--function", "hot"),
                    spyc.run(["report", path, "-f", "hot"]))
        finally:
            os.chdir(old)

    there, text_there = from_elsewhere()
    t = there["sections"][0]["line_tables"][0]
    text_there.assert_ok()
    if fmt != "txt":
        assert t["source_found"], t
        assert all(r["source"] == src[r["line"] - 1] for r in t["lines"])
        # The directory the name is under, gone: nothing else is tried.
        os.rename(str(work), str(tmp_path / "moved"))
        there, text_there = from_elsewhere()
        t = there["sections"][0]["line_tables"][0]
    if fmt == "json":
        # Speedscope files carry the sources themselves.
        assert t["source_found"], t
        assert all(r["source"] == src[r["line"] - 1] for r in t["lines"])
        return
    assert not t["source_found"] and all(r["source"] is None
                                         for r in t["lines"])
    text_there.assert_ok()
    assert re.search(r"^Lines of hot \(hot\.py\): .*\(source not found\)$",
                     text_there.stdout, re.M), text_there.stdout


@pytest.mark.parametrize("fmt", ["json", "pb.gz"])
def test_stdlib_sources(spyc, newest, tmp_path, fmt):
    """The standard library's file names are short ("json/encoder.py"):
    report shows their source, the file of the interpreter that ran, from
    any directory, as the profile names the directory record took off."""
    path = str(tmp_path / ("json." + fmt))
    script = ("import json, json.encoder\n"
              "json.encoder.c_make_encoder = None\n"
              "d = dict(('k%d' % i, [i, {'a': [1, 2]}]) for i in range(50))\n"
              "for _ in range(3000):\n"
              "    json.dumps(d, indent=1)\n")
    res = spyc.run(["record", "--rate", "200", "--duration", 2,
                    "--kill-after-duration", "-o", path, "--", newest.path,
                    "-c", script], env=target_env(), timeout=60)
    assert res.returncode in (0, 1), res.describe()
    encoder = subprocess.check_output(
        [newest.path, "-c", "import json.encoder; "
         "print(json.encoder.__file__)"]).decode().strip()
    old = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        doc = report(spyc, path, "--function", "_iterencode")
    finally:
        os.chdir(old)
    tables = [t for t in doc["sections"][0]["line_tables"]
              if t["file"] == "json/encoder.py"]
    assert tables, json.dumps(doc, indent=1)[:3000]
    src = source_lines(encoder)
    for t in tables:
        assert t["source_found"], t
        assert all(r["source"] == src[r["line"] - 1] for r in t["lines"]), t


def test_source_not_a_file(spyc, hot_profiles, tmp_path):
    """A file name in a profile that is a FIFO or a directory now: no
    source, and no hang reading it."""
    with open(hot_profiles["txt"]) as f:
        text = f.read()
    hot = os.path.join(TARGETS, "hot.py")
    assert hot in text
    fifo = str(tmp_path / "hot.py")
    os.mkfifo(fifo)
    path = str(tmp_path / "moved.txt")
    with open(path, "w") as f:
        f.write(text.replace(hot, fifo))
    doc = report(spyc, path, "--function", "hot", timeout=30)
    table = doc["sections"][0]["line_tables"][0]
    assert table["file"] == fifo and not table["source_found"]
    assert all(r["source"] is None for r in table["lines"])


@pytest.mark.parametrize("fmt", ["json", "txt", "pb.gz", "trace.json"])
def test_threads(spyc, newest, targets, tmp_path, fmt):
    """parallel.py's four spinning threads: --threads gives a section per
    thread (speedscope profile, folded --threads prefix, pprof thread
    label, Chrome trace row), each with the numbers of that thread's
    samples alone."""
    t = targets.start(newest, "parallel.py")
    path = str(tmp_path / ("par." + fmt))
    record_pid(spyc, t.pid, path, "--full-filenames", "--threads")
    stacks, unit = read(path, prefixed=True)
    labels = []
    for label, _, _ in stacks:
        if label not in labels:
            labels.append(label)
    assert len(labels) >= 2, labels
    doc = report(spyc, path, "--threads")
    got = [s["thread"] for s in doc["sections"]]
    assert sorted(got) == sorted(labels)
    for sec in doc["sections"]:
        exp = expected(stacks, sec["thread"])
        assert_section(sec, exp, unit, path)
        for table in sec["line_tables"]:
            assert_line_table(table, exp, unit)
    # Without --threads: one section, all threads added up.
    doc = report(spyc, path)
    assert len(doc["sections"]) == 1
    assert_section(doc["sections"][0], expected(stacks), unit, path)
    res = spyc.run(["report", path, "--threads"])
    res.assert_ok()
    for label in labels:
        assert "== %s: " % label in res.stdout, res.stdout


@pytest.mark.parametrize("fmt", ["json", "txt"])
def test_subprocesses(spyc, newest, tmp_path, fmt):
    """record --subprocesses --threads of family.py's process tree: a
    section per thread of each process, labelled "process: thread" as
    speedscope's profiles are, with that thread's numbers."""
    path = str(tmp_path / ("family." + fmt))
    res = spyc.run(["record", "--subprocesses", "--threads", "--rate", 200,
                    "-o", path, "--", newest.path,
                    os.path.join(TARGETS, "family.py"),
                    str(tmp_path / "family-report"), "mixed"],
                   env=target_env(), timeout=120)
    assert_exit_ok(res.returncode, parse_summary(res.stderr, res.describe()),
                   res.describe())
    stacks, unit = read(path, prefixed=True, process=True)
    labels = set(label for label, _, _ in stacks)
    assert len(labels) >= 2, labels
    doc = report(spyc, path, "--threads")
    assert sorted(s["thread"] for s in doc["sections"]) == sorted(labels)
    for sec in doc["sections"]:
        assert re.match(r"^.* \(pid \d+\)$", sec["process"]), sec["process"]
        assert sec["thread"].startswith(sec["process"] + ": ")
        exp = expected(stacks, sec["thread"])
        assert_section(sec, exp, unit, path)
        for table in sec["line_tables"]:
            assert_line_table(table, exp, unit)


def test_folded_without_prefix_threads(spyc, hot_profiles):
    """--threads on a folded file recorded without --threads: one section,
    and one line saying why."""
    path = hot_profiles["txt"]
    res = spyc.run(["report", "--json", "--threads", path])
    res.assert_ok()
    doc = json.loads(res.stdout)
    assert [s["thread"] for s in doc["sections"]] == ["all threads"]
    assert len(res.stderr_lines) == 1 and "--threads" in res.stderr


def test_gpu_profiles_left_out(spyc, hot_profiles, tmp_path):
    """Profiles named "GPU ..." (spyc record --gpu's) are left out unless
    --gpu asks for them, and then only they are reported.  The GPU
    profile here is hot.json's CPU samples under another name, which no
    GPU machine is needed for."""
    with open(hot_profiles["json"]) as f:
        doc = json.load(f)
    cpu = doc["profiles"][0]
    gpu = dict(cpu, name="GPU time by launching stack (nearest CPU sample)",
               weights=[w * 3 for w in cpu["weights"]])
    doc["profiles"].append(gpu)
    path = str(tmp_path / "gpu.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    plain = report(spyc, path)
    assert plain["profiles"] == 1 and plain["profiles_skipped"] == 1
    assert abs(plain["total"] - cpu["endValue"]) < 1e-6
    with_gpu = report(spyc, path, "--gpu")
    assert with_gpu["profiles"] == 1 and with_gpu["profiles_skipped"] == 1
    assert abs(with_gpu["total"] - 3 * cpu["endValue"]) < 1e-6
    res = spyc.run(["report", path])
    res.assert_ok()
    assert "not shown: 1 GPU profile" in res.stdout


@pytest.mark.parametrize("slot", SLOTS, ids=[s.id for s in SLOTS])
def test_every_python(spyc, slot, tmp_path):
    """A short folded profile of hot.py on each CPython: the report's
    numbers are the file's."""
    import pyfind
    python = pyfind.require(slot)
    path = str(tmp_path / "hot.txt")
    record(spyc, python, path, "hot.py", 0.5, extra=["--full-filenames"])
    stacks, unit = read(path)
    exp = expected(stacks)
    doc = report(spyc, path)
    assert_section(doc["sections"][0], exp, unit, path)
    for t in doc["sections"][0]["line_tables"]:
        assert_line_table(t, exp, unit)


# --- bad input: one line naming the file, exit 2; usage: exit 64

def test_bad_files(spyc, hot_profiles, tmp_path):
    missing = str(tmp_path / "missing.json")
    spyc.run(["report", missing]).assert_error(2, missing)
    spyc.run(["report", str(tmp_path)]).assert_error(2, str(tmp_path))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    spyc.run(["report", str(empty)]).assert_error(2, str(empty), "empty")
    # A FIFO no one writes to reads as empty: no hang.
    fifo = str(tmp_path / "fifo.txt")
    os.mkfifo(fifo)
    spyc.run(["report", fifo], timeout=20).assert_error(2, fifo, "empty")
    # A Python file, JSON that is not speedscope, a binary.
    script = os.path.join(TARGETS, "hot.py")
    spyc.run(["report", script]).assert_error(2, script, "not a profile")
    other = tmp_path / "other.json"
    other.write_text('{"traces": []}\n')
    spyc.run(["report", str(other)]).assert_error(2, str(other),
                                                  "not a profile")
    # A Chrome trace with no stack rows; one whose slice is not one.
    empty = tmp_path / "empty.trace.json"
    empty.write_text('{"traceEvents": []}\n')
    spyc.run(["report", str(empty)]).assert_error(2, str(empty),
                                                  "no samples")
    bad = tmp_path / "bad.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "spyc", "pid": 1, '
                   '"tid": 1, "name": "f", "ts": 0, "dur": -5, '
                   '"args": {"file": "a.py", "line": 1}}]}\n')
    spyc.run(["report", str(bad)]).assert_error(2, str(bad), "not a profile")
    inside = tmp_path / "inside.trace.json"
    inside.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "spyc", "pid": 1, "tid": 1, "name": n, "ts": ts,
         "dur": dur, "args": {"file": "a.py", "line": 1}}
        for n, ts, dur in (("outer", 0, 10), ("inner", 5, 10))]}))
    spyc.run(["report", str(inside)]).assert_error(2, str(inside),
                                                   "not a profile")
    broken = tmp_path / "broken.json"
    with open(hot_profiles["json"]) as f:
        broken.write_text(f.read()[:200])
    spyc.run(["report", str(broken)]).assert_error(2, str(broken),
                                                   "not a profile")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    spyc.run(["report", str(binary)]).assert_error(2, str(binary))
    # A folded file whose last line has lost its count.
    with open(hot_profiles["txt"]) as f:
        text = f.read()
    cut = tmp_path / "cut.txt"
    cut.write_text(text.rstrip("\n").rsplit(" ", 1)[0] + "\n")
    spyc.run(["report", str(cut)]).assert_error(2, str(cut), "line")
    # A real profile with its samples taken out.
    with open(hot_profiles["json"]) as f:
        doc = json.load(f)
    for prof in doc["profiles"]:
        prof["samples"], prof["weights"], prof["endValue"] = [], [], 0
    nothing = tmp_path / "nothing.json"
    nothing.write_text(json.dumps(doc))
    spyc.run(["report", str(nothing)]).assert_error(2, str(nothing),
                                                    "no samples")
    # Folded stacks all counted 0.
    zero = tmp_path / "zero.txt"
    zero.write_text("".join(l.rsplit(" ", 1)[0] + " 0\n"
                            for l in text.splitlines()))
    spyc.run(["report", str(zero)]).assert_error(2, str(zero), "no samples")
    # gzip that is not pprof, and a pprof file cut short.
    import gzip
    gz = tmp_path / "notes.pb.gz"
    gz.write_bytes(gzip.compress(b"not a protocol buffer" * 10))
    spyc.run(["report", str(gz)]).assert_error(2, str(gz), "not a profile")
    with open(hot_profiles["pb.gz"], "rb") as f:
        data = f.read()
    short = tmp_path / "short.pb.gz"
    short.write_bytes(data[:len(data) // 2])
    spyc.run(["report", str(short)]).assert_error(2, str(short),
                                                  "not a profile")
    # An HTML page without spyc's data, one whose data is cut short, and
    # one whose stack names a frame the page does not have.
    with open(hot_profiles["html"]) as f:
        page = f.read()
    plain = tmp_path / "plain.html"
    plain.write_text("<!DOCTYPE html><html><body>hello</body></html>\n")
    spyc.run(["report", str(plain)]).assert_error(2, str(plain),
                                                  "not a profile")
    cut = tmp_path / "cut.html"
    cut.write_text(page[:page.index('"stacks"') + 20] + "</script>")
    spyc.run(["report", str(cut)]).assert_error(2, str(cut), "not a profile")
    data = html_data(hot_profiles["html"])
    data["stacks"][0][2].append(len(data["frames"]) + 7)
    stray = tmp_path / "stray.html"
    stray.write_text(page.replace(
        re.search(r'<script id="spyc-data" type="application/json">(.*?)'
                  r'</script>', page, re.S).group(1), json.dumps(data)))
    spyc.run(["report", str(stray)]).assert_error(2, str(stray), "frame")
    # pprof holds no GPU profiles.
    spyc.run(["report", "--gpu", hot_profiles["pb.gz"]]).assert_error(
        2, hot_profiles["pb.gz"], "CPU samples only")


@pytest.mark.parametrize("args", [
    [], ["a.json", "b.json"], ["--top", "-1", "a.json"],
    ["--top", "x", "a.json"], ["--sort", "name", "a.json"],
    ["--function", "", "a.json"], ["--no-such-option", "a.json"],
], ids=["no-file", "two-files", "top-negative", "top-x", "sort-name",
        "empty-function", "unknown-option"])
def test_usage_errors(spyc, args):
    res = spyc.run(["report"] + args)
    assert res.returncode == 64, res.describe()
    assert res.stderr_lines and res.stderr_lines[0].startswith("spyc: ") \
        or "unrecognized option" in res.stderr, res.describe()
    assert res.stdout == "", res.describe()


def test_stdin(spyc, hot_profiles):
    """A profile piped in: /dev/stdin reads like the file."""
    with open(hot_profiles["txt"], "rb") as f:
        data = f.read()
    proc = subprocess.run([spyc.path, "report", "--json", "/dev/stdin"],
                          input=data, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    piped = json.loads(proc.stdout.decode())
    direct = report(spyc, hot_profiles["txt"])
    assert piped["sections"] == direct["sections"]


def test_help(spyc):
    res = spyc.run(["report", "--help"])
    res.assert_ok()
    for opt in ("--top", "--sort", "--function", "--threads", "--json",
                "--gpu", "exit codes"):
        assert opt in res.stdout
    top = spyc.run(["--help"])
    assert re.search(r"^  report ", top.stdout, re.M), top.stdout


def test_sources_as_recorded(spyc, newest, tmp_path):
    """Speedscope profiles carry the source files as the target ran them
    (spyc_sources: each file's identity, and the busiest ones' text):
    report shows the text recorded after the file was replaced (a
    checkout, an upgrade); without the text, it says the file at that
    path is another one, and shows none of it."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(os.path.join(TARGETS, "hot.py"), str(work / "hot.py"))
    path = str(tmp_path / "prof.json")
    old = os.getcwd()
    os.chdir(str(work))
    try:
        res = spyc.run(["record", "--rate", "200", "-o", path, "--",
                        newest.path, "hot.py", 1], env=target_env(),
                       timeout=90)
    finally:
        os.chdir(old)
    assert_exit_ok(res.returncode, parse_summary(res.stderr, res.describe()),
                   res.describe())
    src = source_lines(str(work / "hot.py"))
    # Replaced as editors and package managers do: a new file renamed
    # over the old one, every line of it another.
    with open(str(work / "hot.py.new"), "w") as f:
        f.write("".join("# replaced %d\n" % i for i in range(len(src))))
    os.rename(str(work / "hot.py.new"), str(work / "hot.py"))
    t = report(spyc, path, "--function", "hot")["sections"][0][
        "line_tables"][0]
    assert t["source_found"] and not t["source_changed"], t
    assert t["lines"] and all(r["source"] == src[r["line"] - 1]
                              for r in t["lines"]), t
    # The same profile without the texts: the identity alone.
    with open(path) as f:
        doc = json.load(f)
    assert "hot.py" in doc["spyc_sources"], sorted(doc["spyc_sources"])
    for entry in doc["spyc_sources"].values():
        assert re.match(r"^\d+:\d+:\d+:-?\d+$", entry["id"]), entry
        entry.pop("text", None)
    bare = str(tmp_path / "bare.json")
    with open(bare, "w") as f:
        json.dump(doc, f)
    t = report(spyc, bare, "--function", "hot")["sections"][0][
        "line_tables"][0]
    assert not t["source_found"] and t["source_changed"], t
    assert all(r["source"] is None for r in t["lines"]), t
    text = spyc.run(["report", bare, "-f", "hot"])
    text.assert_ok()
    assert re.search(r"^Lines of hot \(hot\.py\): .*\(source changed "
                     r"since it was recorded: not shown\)$", text.stdout,
                     re.M), text.stdout
