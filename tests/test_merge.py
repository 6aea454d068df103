# SPDX-License-Identifier: MIT
"""spyc record's output name templates (%p %r %h %%), the process record in
its speedscope files, and spyc merge: the merged file and the load-imbalance
report, on profiles of real runs; merge's errors.  Real MPI is
test_mpi.py's."""

import json
import os
import socket

import pytest

from conftest import TARGETS, target_env
from test_record import parse_speedscope

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
    assert hot["total"]["max"] == max(vals)
    assert abs(hot["total"]["mean"] - sum(vals) / 2) < 1e-9
    assert hot["none"] == []
    # Sorted by max - mean, largest first.
    over = [f["imbalance"] for f in report["functions"]]
    assert over == sorted(over, reverse=True)
    # Totals: every sample of each input.
    for p, d in zip(report["processes"], inputs):
        want_total = sum(sum(pr["weights"]) for pr in d["profiles"])
        assert abs(p["total"] - want_total) < 1e-6


def test_merge_text_report(spyc, two_runs):
    short, long_ = two_runs
    res = spyc.run(["merge", short, long_, "--top", "3"])
    res.assert_ok()
    lines = res.stdout.splitlines()
    assert lines[0].startswith("2 processes"), res.describe()
    header = [i for i, l in enumerate(lines) if "max-mean" in l]
    assert len(header) == 1, res.describe()
    rows = [l for l in lines[header[0] + 1:] if l.strip()]
    assert len(rows) == 3, res.describe()
    pid_long = json.load(open(long_))["spyc_process"]["pid"]
    hot = [r for r in rows if " hot (" in r]
    assert len(hot) == 1 and ("pid %d" % pid_long) in hot[0], res.describe()
    assert not res.stderr.strip(), "no -o: nothing on stderr\n" + \
        res.describe()


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
