# SPDX-License-Identifier: MIT
"""spyc record's output name templates (%p %r %h %%), the process record in
its speedscope files, and spyc merge: the merged file and the load-imbalance
report, on profiles of real runs; merge's errors.  Real MPI is
test_mpi.py's.

The report's figures (each process's time, each function's total and own
time per process, their min, mean, max, standard deviation, slowest
process, the processes that never ran it, the order) are computed here
from the input files, as merge documents them, and must be merge's to the
last bits of a double (to the 3 decimals printed, in the text report)."""

import json
import math
import os
import socket

import pytest

import browser
from conftest import TARGETS, target_env
from test_record import html_data, parse_speedscope

RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def env_with(**ranks):
    """The targets' environment with no rank variable but those given."""
    env = target_env()
    for v in RANK_VARS:
        env.pop(v, None)
    env.update(ranks)
    return env


def hot(python, seconds):
    return ["--", python.path, os.path.join(TARGETS, "hot.py"), seconds]


def record(spyc, out, python, seconds, env=None, extra=()):
    res = spyc.run(["record", "-o", out] + list(extra) + hot(python, seconds),
                   env=env or env_with())
    return res


def only_file(directory, prefix):
    names = [n for n in os.listdir(str(directory)) if n.startswith(prefix)]
    assert len(names) == 1, "expected one %s* file in %s, found %r" % (
        prefix, directory, names)
    return os.path.join(str(directory), names[0])


# --- output name templates ------------------------------------------------

def test_template_pid_host_rank(spyc, any_python, tmp_path):
    """%p is the launched program's pid, %h the host, %r the first rank
    variable set (PMIX_RANK before SLURM_PROCID); the profile says so."""
    env = env_with(PMIX_RANK="3", SLURM_PROCID="7")
    res = record(spyc, tmp_path / "p.%p.%h.%r.%%.json", any_python, "0.3",
                 env=env)
    res.assert_ok()
    path = only_file(tmp_path, "p.")
    doc, stacks = parse_speedscope(path)
    proc = doc["spyc_process"]
    assert os.path.basename(path) == "p.%d.%s.3.%%.json" % (
        proc["pid"], socket.gethostname()), res.describe()
    assert proc["rank"] == 3 and proc["rank_from"] == "PMIX_RANK"
    assert proc["host"] == socket.gethostname()
    assert "hot.py" in proc["command"]
    assert proc["cpu_profiles"] == len(doc["profiles"])
    assert stacks, "no samples in %s" % path
    assert path in res.stderr, "the summary names the expanded file\n" + \
        res.describe()


def test_template_rank_precedence(spyc, any_python, tmp_path):
    env = env_with(OMPI_COMM_WORLD_RANK="1", PMI_RANK="2", SLURM_PROCID="4")
    record(spyc, tmp_path / "r%r.json", any_python, "0.1", env=env)
    assert os.path.exists(str(tmp_path / "r1.json"))
    env = env_with(SLURM_PROCID="4")
    record(spyc, tmp_path / "r%r.json", any_python, "0.1", env=env)
    assert os.path.exists(str(tmp_path / "r4.json"))


def test_template_attach_pid(spyc, any_python, targets, tmp_path):
    t = targets.start(any_python, "hot.py", 0, report=False)
    res = spyc.run(["record", "--pid", t.pid, "-d", "0.3", "-o",
                    tmp_path / "a.%p.json"], env=env_with())
    assert res.returncode in (0, 1), res.describe()
    doc, _ = parse_speedscope(str(tmp_path / ("a.%d.json" % t.pid)))
    assert doc["spyc_process"]["pid"] == t.pid
    assert doc["spyc_process"]["rank"] is None


def test_no_rank_recorded_without_variables(spyc, any_python, tmp_path):
    record(spyc, tmp_path / "x.json", any_python, "0.1").assert_ok()
    doc, _ = parse_speedscope(str(tmp_path / "x.json"))
    assert doc["spyc_process"]["rank"] is None


@pytest.mark.parametrize("template,env,words", [
    ("p.%r.json", {}, ["%r", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                       "SLURM_PROCID"]),
    ("p.%r.json", {"PMI_RANK": "one"}, ["PMI_RANK", "one"]),
    ("p.%q.json", {}, ["%q"]),
    ("p.json%", {"PMI_RANK": "0"}, ["lone"]),
])
def test_template_usage_errors(spyc, any_python, tmp_path, template, env,
                               words):
    marker = tmp_path / "ran"
    res = spyc.run(["record", "-f", "speedscope", "-o", tmp_path / template,
                    "--",
                    any_python.path, "-c",
                    "open(%r, 'w').close()" % str(marker)],
                   env=env_with(**env))
    res.assert_error(64, *words)
    assert not marker.exists(), "the program ran despite the usage error"


def test_template_unwritable_names_expanded_path(spyc, any_python, tmp_path):
    """The output is checked before the program starts, under the name the
    user will see: %r and %h expanded; a launched program's %p kept."""
    missing = tmp_path / "missing"
    marker = tmp_path / "ran"
    prog = ["--", any_python.path, "-c", "open(%r, 'w').close()" % str(marker)]
    res = spyc.run(["record", "-o", missing / "p.%r.%h.%p.json"] + prog,
                   env=env_with(SLURM_PROCID="5"))
    res.assert_error(2, "cannot write", str(missing / (
        "p.5.%s.%%p.json" % socket.gethostname())))
    assert not marker.exists()


# --- spyc merge -------------------------------------------------------------

@pytest.fixture
def two_runs(spyc, any_python, tmp_path):
    """Two profiles of hot.py, the second running three times as long."""
    short, long_ = tmp_path / "short.json", tmp_path / "long.json"
    record(spyc, short, any_python, "0.4").assert_ok()
    record(spyc, long_, any_python, "1.2").assert_ok()
    return str(short), str(long_)


def stacks_by_name(doc):
    """{profile name: sorted [(frame names root first, weight)]}."""
    frames = doc["shared"]["frames"]
    out = {}
    for p in doc["profiles"]:
        out[p["name"]] = sorted(
            (tuple((frames[i]["name"], frames[i].get("file"),
                    frames[i].get("line")) for i in s), w)
            for s, w in zip(p["samples"], p["weights"]))
    return out


# --- the report merge must give, computed here from its inputs ---

def read_input(path):
    """A profile as merge is documented to take it: its label (the MPI
    rank, else the pid, else the file name), its rank (None if none), its
    frames as functions ((name, file), lines merged) and its CPU
    profiles: the sampled ones before any GPU one."""
    with open(str(path)) as f:
        doc = json.load(f)
    proc = doc.get("spyc_process") or {}
    if proc.get("rank") is not None:
        label = "rank %d" % proc["rank"]
    elif proc.get("pid"):
        label = "pid %d" % proc["pid"]
    else:
        label = os.path.basename(str(path))
    funcs = [(fr["name"], fr.get("file", ""))
             for fr in doc["shared"]["frames"]]
    cpu = []
    for prof in doc["profiles"]:
        if prof["type"] != "sampled" or prof["name"].startswith("GPU"):
            break
        cpu.append(prof)
    return {"path": str(path), "label": label, "rank": proc.get("rank"),
            "funcs": funcs, "cpu": cpu}


def count_input(unit):
    """({function: time with it on the stack, once per sample however
    often it recurs}, {function: time as the innermost frame}, all the
    time sampled) of one input, summed sample by sample in file order."""
    total, own, everything = {}, {}, 0.0
    funcs = unit["funcs"]
    for prof in unit["cpu"]:
        for sample, weight in zip(prof["samples"], prof["weights"]):
            everything += weight
            if not sample:
                continue
            for f in set(funcs[i] for i in sample):
                total[f] = total.get(f, 0.0) + weight
            leaf = funcs[sample[-1]]
            own[leaf] = own.get(leaf, 0.0) + weight
    return total, own, everything


def spread(values):
    """min, mean, max, standard deviation (of the population) of one
    function's values, one per process; slowest: the first holding max."""
    n = len(values)
    mean = sum(values) / n
    return {"min": min(values), "mean": mean, "max": max(values),
            "stddev": math.sqrt(sum((v - mean) * (v - mean)
                                    for v in values) / n),
            "slowest": values.index(max(values)), "values": values}


def expected_merge(paths):
    """What spyc merge PATHS must report, from the inputs alone:
    {"units": [read_input(), in the processes' order], "totals": [each
    one's time sampled],
    "functions": {function: {"total", "own": spread(), "none": [labels of
    the processes that never ran it]}}, "order": [every function, most
    imbalanced first]}."""
    units = [read_input(p) for p in paths]
    # Ranked inputs first, by rank; the others in the order given.
    units = [u for _, u in sorted(
        enumerate(units), key=lambda iu: (iu[1]["rank"] is None,
                                          iu[1]["rank"] or 0, iu[0]))]
    counted = [count_input(u) for u in units]
    first_met = []
    for u in units:
        for f in u["funcs"]:
            if f not in first_met:
                first_met.append(f)
    functions = {}
    for f in first_met:
        total = spread([c[0].get(f, 0.0) for c in counted])
        functions[f] = {
            "total": total, "own": spread([c[1].get(f, 0.0)
                                           for c in counted]),
            "none": [u["label"] for u, v in zip(units, total["values"])
                     if v == 0]}
    # Largest max - mean first, then larger max, then the function met
    # first (in the processes' order, each one's frames in file order).
    order = sorted(first_met, key=lambda f: (
        -(functions[f]["total"]["max"] - functions[f]["total"]["mean"]),
        -functions[f]["total"]["max"], first_met.index(f)))
    return {"units": units, "totals": [c[2] for c in counted],
            "functions": functions, "order": order}


def near(got, want):
    """Equal but for the last bits of a double (merge sums in the same
    order as here, and prints numbers that read back the same)."""
    return abs(got - want) <= 1e-9 * max(1.0, abs(want))


def assert_merge_report(report, paths, top=0):
    """merge --json's report of paths is the one computed from them:
    processes, totals, and each function's figures and place."""
    exp = expected_merge(paths)
    assert [(p["label"], p["file"]) for p in report["processes"]] == [
        (u["label"], u["path"]) for u in exp["units"]]
    for p, want in zip(report["processes"], exp["totals"]):
        assert near(p["total"], want), "%s: total %r, want %r" % (
            p["label"], p["total"], want)
    got = [(f["name"], f["file"]) for f in report["functions"]]
    want = exp["order"][:top] if top else exp["order"]
    assert got == want, "functions, most imbalanced first:\n  got  %s\n" \
        "  want %s" % (got, want)
    labels = [u["label"] for u in exp["units"]]
    for f in report["functions"]:
        e = exp["functions"][(f["name"], f["file"])]
        where = "%s (%s): %s\nwant: %s" % (
            f["name"], f["file"], json.dumps(f), json.dumps(e))
        for kind in ("total", "own"):
            assert len(f[kind]["values"]) == len(labels), where
            for key in ("min", "mean", "max", "stddev"):
                assert near(f[kind][key], e[kind][key]), "%s %s of %s" % (
                    kind, key, where)
            assert all(near(g, w) for g, w in zip(
                f[kind]["values"], e[kind]["values"])), "%s values of %s" % (
                    kind, where)
            assert f[kind]["slowest"] == e[kind]["slowest"], (
                "%s slowest of %s" % (kind, where))
        assert near(f["imbalance"],
                    e["total"]["max"] - e["total"]["mean"]), where
        assert f["slowest"] == labels[e["total"]["slowest"]], where
        assert f["none"] == e["none"], where
    return exp


def test_merge_two_profiles(spyc, two_runs, tmp_path):
    short, long_ = two_runs
    out = tmp_path / "merged.json"
    res = spyc.run(["merge", short, long_, "-o", out, "--json", "--top",
                    "0"])
    res.assert_ok()
    report = json.loads(res.stdout)
    merged, _ = parse_speedscope(str(out))
    inputs = [parse_speedscope(p)[0] for p in (short, long_)]
    pids = [d["spyc_process"]["pid"] for d in inputs]

    # Every input profile is there, named for its process, its stacks
    # the same frame for frame.
    want = {}
    for d, pid in zip(inputs, pids):
        for name, st in stacks_by_name(d).items():
            want["pid %d: %s" % (pid, name)] = st
    assert stacks_by_name(merged) == want
    assert [s["pid"] for s in merged["spyc_merge"]] == pids

    # The report: per process, then hot() slowest in the longer run.
    assert [p["label"] for p in report["processes"]] == \
        ["pid %d" % p for p in pids]
    assert report["unit"] == "seconds"
    funcs = dict(((f["name"], f["file"]), f) for f in report["functions"])
    hot = [f for (name, _), f in funcs.items() if name == "hot"]
    assert len(hot) == 1, sorted(funcs)
    hot = hot[0]
    assert hot["slowest"] == "pid %d" % pids[1]
    vals = hot["total"]["values"]
    assert vals[1] > vals[0] > 0, vals
    assert hot["none"] == []
    # Every figure, and the order, as computed here from the inputs.
    assert_merge_report(report, [short, long_])


def check_text_row(line, function, exp):
    """A row of merge's text table: max-mean, min, mean, max, stddev (of
    total time), the slowest process, own max, the function and those
    that never ran it, as exp has them (to the 3 decimals printed)."""
    e = exp["functions"][function]
    total = e["total"]
    slowest = exp["units"][total["slowest"]]["label"]
    tokens = line.split()
    k = len(slowest.split())
    assert len(tokens) > 6 + k, line
    got = [float(t) for t in tokens[:5]] + [float(tokens[5 + k])]
    want = [total["max"] - total["mean"], total["min"], total["mean"],
            total["max"], total["stddev"], e["own"]["max"]]
    assert all(abs(g - w) <= 0.0005 + 1e-9 for g, w in zip(got, want)), (
        "%s\nwant %s" % (line, " ".join("%.3f" % w for w in want)))
    assert " ".join(tokens[5:5 + k]) == slowest, line
    name, file = function
    tail = "%s (%s)" % (name, file) if file else name
    if e["none"]:
        tail += "  [none in %s]" % ", ".join(e["none"])
    assert line.endswith("  " + tail), "%s\nwant it to end %r" % (line,
                                                                     tail)


def test_merge_text_report(spyc, two_runs):
    short, long_ = two_runs
    res = spyc.run(["merge", short, long_, "--top", "3"])
    res.assert_ok()
    exp = expected_merge([short, long_])
    lines = res.stdout.splitlines()
    assert lines[0] == "2 processes; CPU seconds sampled: %s" % ", ".join(
        "%s %.2f" % (u["label"], t) for u, t in zip(exp["units"],
                                                     exp["totals"])), (
        res.describe())
    header = [i for i, l in enumerate(lines) if "max-mean" in l]
    assert len(header) == 1, res.describe()
    rows = [l for l in lines[header[0] + 1:] if l.strip()]
    assert len(rows) == 3, res.describe()
    for row, function in zip(rows, exp["order"]):
        check_text_row(row, function, exp)
    pid_long = json.load(open(long_))["spyc_process"]["pid"]
    hot = [r for r in rows if " hot (" in r]
    assert len(hot) == 1 and ("pid %d" % pid_long) in hot[0], res.describe()
    assert not res.stderr.strip(), "no -o: nothing on stderr\n" + \
        res.describe()


# A program of its own for a third process: functions the others never
# ran, and one that recurses (counted once per sample in total time).
RECURSE = """import time
def rec(n):
    return rec(n - 1) + 1 if n else spin()
def spin():
    x = 0
    for i in range(20000):
        x += i
    return x
end = time.time() + %s
while time.time() < end:
    rec(6)
"""


def test_merge_imbalance(spyc, any_python, two_runs, tmp_path):
    """Three processes, one ranked (listed first) that ran other code,
    recursing: every figure of the report, JSON (all functions, and
    --top) and text, is the one computed here from the three inputs."""
    short, long_ = two_runs
    rec = str(tmp_path / "rec.json")
    spyc.run(["record", "-o", rec, "--", any_python.path, "-c",
              RECURSE % 0.6], env=env_with(PMI_RANK="5")).assert_ok()
    paths = [short, long_, rec]
    res = spyc.run(["merge"] + paths + ["--json", "--top", "0"])
    res.assert_ok()
    exp = assert_merge_report(json.loads(res.stdout), paths)
    # What the inputs must hold for that to test something: the ranked
    # process first, rec only in it, sampled while recursing.
    unit = exp["units"][0]
    assert unit["path"] == rec and unit["label"] == "rank 5"
    assert len(exp["functions"][("rec", "<string>")]["none"]) == 2
    deep = [s for p in unit["cpu"] for s in p["samples"]
            if [unit["funcs"][i] for i in s].count(("rec", "<string>")) > 1]
    assert deep, "no sample of rec() recursing in %s" % rec
    res = spyc.run(["merge"] + paths + ["--json", "--top", "4"])
    res.assert_ok()
    assert_merge_report(json.loads(res.stdout), paths, top=4)
    res = spyc.run(["merge"] + paths + ["--top", "0"])
    res.assert_ok()
    lines = res.stdout.splitlines()
    start = [i for i, l in enumerate(lines) if "max-mean" in l][0] + 1
    rows = [l for l in lines[start:] if l.strip()]
    assert len(rows) == len(exp["order"]), res.describe()
    for row, function in zip(rows, exp["order"]):
        check_text_row(row, function, exp)


def test_merge_without_process_record(spyc, two_runs, tmp_path):
    """A profile without spyc_process (an older spyc) is named by file."""
    short, _ = two_runs
    with open(short) as f:
        doc = json.load(f)
    del doc["spyc_process"]
    old = tmp_path / "old-run.json"
    old.write_text(json.dumps(doc))
    res = spyc.run(["merge", str(old), short, "--json"])
    res.assert_ok()
    labels = [p["label"] for p in json.loads(res.stdout)["processes"]]
    assert labels == ["old-run.json", "pid %d" % json.load(
        open(short))["spyc_process"]["pid"]]


def test_merge_orders_by_rank(spyc, any_python, tmp_path):
    for rank in ("10", "2"):
        record(spyc, tmp_path / "r.%r.json", any_python, "0.2",
               env=env_with(PMI_RANK=rank)).assert_ok()
    res = spyc.run(["merge", tmp_path / "r.10.json", tmp_path / "r.2.json",
                    "--json"])
    res.assert_ok()
    procs = json.loads(res.stdout)["processes"]
    assert [p["rank"] for p in procs] == [2, 10]
    assert [p["label"] for p in procs] == ["rank 2", "rank 10"]
    assert_merge_report(json.loads(res.stdout), [tmp_path / "r.10.json",
                                                 tmp_path / "r.2.json"],
                        top=20)


def test_merge_errors(spyc, two_runs, tmp_path):
    short, long_ = two_runs
    missing = tmp_path / "nope.json"
    spyc.run(["merge", short, missing]).assert_error(2, str(missing))

    notjson = tmp_path / "notjson.json"
    notjson.write_text("{not json")
    spyc.run(["merge", notjson]).assert_error(2, str(notjson), "json")

    other = tmp_path / "other.json"
    other.write_text(json.dumps({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": []}, "profiles": [], "exporter": "py-spy"}))
    spyc.run(["merge", other]).assert_error(2, str(other), "spyc")

    with open(short) as f:
        doc = json.load(f)
    doc["profiles"][0]["samples"][0] = [len(doc["shared"]["frames"])]
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text(json.dumps(doc))
    spyc.run(["merge", corrupt]).assert_error(2, str(corrupt), "frame")

    merged = tmp_path / "merged.json"
    spyc.run(["merge", short, long_, "-o", merged]).assert_ok()
    spyc.run(["merge", merged, short]).assert_error(2, str(merged), "merged")

    out = tmp_path / "no-dir" / "m.json"
    spyc.run(["merge", short, "-o", out]).assert_error(2, str(out))


@pytest.mark.parametrize("args,what", [
    ([], "profile"),
    (["--top", "x", "{f}"], "--top"),
    (["--top", "-1", "{f}"], "--top"),
    (["--bogus", "{f}"], None),
    (["{f}", "{f}"], "same profile"),
])
def test_merge_usage_errors(spyc, two_runs, args, what):
    args = [a.replace("{f}", two_runs[0]) for a in args]
    res = spyc.run(["merge"] + args)
    assert res.returncode == 64, res.describe()
    if what:
        res.assert_error(64, what)


def test_merge_help(spyc):
    res = spyc.run(["merge", "--help"])
    res.assert_ok()
    assert "--top" in res.stdout and "exit codes" in res.stdout
    assert "merge" in spyc.run(["--help"]).stdout


def test_merge_keeps_evented_profiles(spyc, two_runs, tmp_path):
    """Profiles other than CPU threads (--gpu's evented stream timelines)
    are carried over with their frames remapped, and left out of the
    report.  No GPU here: the timeline is added to a real CPU profile."""
    short, long_ = two_runs
    with open(long_) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    last = len(frames) - 1
    doc["profiles"].append({
        "type": "evented", "name": "GPU 0 stream 7", "unit": "seconds",
        "startValue": 0, "endValue": 0.5,
        "events": [{"type": "O", "frame": last, "at": 0.1},
                   {"type": "C", "frame": last, "at": 0.5}]})
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps(doc))
    out = tmp_path / "merged.json"
    res = spyc.run(["merge", short, gpu, "-o", out, "--json", "--top", "0"])
    res.assert_ok()
    # (parse_speedscope takes sampled profiles only.)
    with open(str(out)) as f:
        merged = json.load(f)
    pid = doc["spyc_process"]["pid"]
    stream = [p for p in merged["profiles"]
              if p["name"] == "pid %d: GPU 0 stream 7" % pid]
    assert len(stream) == 1, [p["name"] for p in merged["profiles"]]
    for ev in stream[0]["events"]:
        assert merged["shared"]["frames"][ev["frame"]] == frames[last]
    # The report's totals are the CPU profiles' alone.
    proc = json.loads(res.stdout)["processes"][1]
    cpu = sum(sum(p["weights"]) for p in doc["profiles"]
              if p["type"] == "sampled")
    assert abs(proc["total"] - cpu) < 1e-6
    assert_merge_report(json.loads(res.stdout), [short, str(gpu)])


def test_merge_html(spyc, two_runs, tmp_path):
    """merge -o merged.html: a page of every input's CPU samples, a
    process per input named as the report names it, a thread per CPU
    profile, each stack the input's, its weight in samples again (the
    seconds record wrote times the rate)."""
    short, long_ = two_runs
    out = str(tmp_path / "merged.html")
    res = spyc.run(["merge", short, long_, "-o", out])
    res.assert_ok()
    data = html_data(out)
    inputs = [parse_speedscope(p)[0] for p in (short, long_)]
    labels = ["pid %d" % d["spyc_process"]["pid"] for d in inputs]
    assert data["processes"] == labels
    got = {}
    for thread, count, ids in data["stacks"]:
        key = (data["processes"][data["thread_process"][thread]],
               data["threads"][thread])
        got.setdefault(key, []).append((tuple(
            (data["frames"][i][0], data["frames"][i][1] or None,
             data["frames"][i][2] or None) for i in ids), count))
    want = {}
    for d, label in zip(inputs, labels):
        rate = d["spyc_process"]["rate_hz"]
        for name, st in stacks_by_name(d).items():
            want[(label, name)] = [(frames, int(round(w * rate)))
                                   for frames, w in st]
    assert dict((k, sorted(v)) for k, v in got.items()) == \
        dict((k, sorted(v)) for k, v in want.items())
    # In a browser: a group of the thread list per input, named as the
    # data names it, each drawing its own samples alone.
    with browser.shown(out) as page:
        groups = page.evaluate("""Array.from(document.querySelectorAll(
            '#thread optgroup')).map(function (g) { return [g.label,
            Array.from(g.children).map(function (o) {
              return o.value; })]; })""")
        assert [g[0] for g in groups] == labels, groups
        for k, (label, values) in enumerate(groups):
            threads = [i for i, p in enumerate(data["thread_process"])
                       if p == k]
            assert values == ["p%d" % k] + ["t%d" % i for i in threads], (
                label, values)
            page.select("thread", "p%d" % k)
            assert page.evaluate("spyc.root().n") == sum(
                c for t, c, _ in data["stacks"] if t in threads), label
        assert page.errors() == []
