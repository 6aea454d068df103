# SPDX-License-Identifier: MIT
"""`spyc record --gpu` against a stand-in CUPTI that behaves as the real
one does where spyc's agent must get it right: every record kind the agent
enables (kernels as CONCURRENT_KERNEL and as KERNEL, copies, memsets,
synchronizations, runtime and driver calls) with non-zero device, context
and stream ids; CUPTI's own clock (CLOCK_REALTIME) stepping mid-run;
records with no timestamps; records CUPTI dropped; a buffer with an
invalid record; CUPTI calls that fail.  Each run's outputs are checked
against what the program itself did (and what the stand-in says it did,
FAKE_CUPTI_STATS).  The modes are described at the top of
tests/fakecuda/cupti.c.
"""

import json
import re
import subprocess

import pytest

from conftest import SpycResult, decode, target_env
from fakegpu import FAKE, PROLOGUE, build, needs_agent

pytestmark = needs_agent

# A program that uses device 1: GEMMs through the runtime (stream 13),
# kernels through the driver API (stream 14), memsets and syncs on
# stream 13, copies on stream 15; it counts what it did.
PROGRAM = PROLOGUE + r"""
cupti.fake_memset.argtypes = cupti.fake_copy.argtypes
cupti.fake_driver_launch.argtypes = cupti.fake_launch.argtypes
report, seconds = sys.argv[2], float(sys.argv[3])
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
cupti.fake_set_device(1)
did = {"gemm_kernel": 0, "driver_kernel": 0, "memsets": 0, "syncs": 0,
       "copies": 0, "start": time.monotonic(),
       "context": cupti.fake_context_id(), "driver_correlations": []}

def step():
    cupti.fake_copy(1 << 16, 50000, 15)
    did["copies"] += 1
    cupti.fake_memset(4096, 10000, 13)
    did["memsets"] += 1
    for _ in range(3):
        cupti.fake_launch(b"gemm_kernel", 200000, 13)
        did["gemm_kernel"] += 1
    did["driver_correlations"].append(
        cupti.fake_driver_launch(b"driver_kernel", 30000, 14))
    did["driver_kernel"] += 1
    cupti.fake_sync(13)
    did["syncs"] += 1

t = time.monotonic()
while time.monotonic() - t < seconds:
    step()
    s = time.monotonic()
    while time.monotonic() - s < 0.002:
        pass
did["end"] = time.monotonic()
with open(report, "w") as f:
    json.dump(did, f)
"""


@pytest.fixture(scope="module")
def fake_cuda(spyc):
    return build(spyc)


def record(spyc, python, tmp_path, out, env=None, seconds="1", rate="200",
           program=PROGRAM, args=()):
    """spyc record --gpu of program (PROGRAM) with the stand-in's modes in
    env.  Returns spyc's result, what the program did, what the stand-in
    did."""
    text = program
    program = tmp_path / "cuda_program.py"
    program.write_text(text)
    report = tmp_path / "did.json"
    stats = tmp_path / "fake_stats.json"
    extra = dict(env or {})
    extra["FAKE_CUPTI_STATS"] = str(stats)
    proc = spyc.popen(["record", "--gpu", "--rate", rate, "-o", out] +
                      list(args) + ["--", python.path, program, FAKE, report,
                                    seconds],
                      env=target_env(extra), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    try:
        so, se = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        so, se = proc.communicate()
        pytest.fail("spyc did not finish: %s" % decode(se))
    res = SpycResult(["spyc", "record", "--gpu", str(out)], proc.returncode,
                     decode(so), decode(se))
    assert res.returncode == 0, res.describe()
    with open(str(report)) as f:
        did = json.load(f)
    with open(str(stats)) as f:
        fake = json.load(f)
    return res, did, fake


def activities_line(res):
    m = re.search(r"GPU activities \(CUPTI\): (\d+) kernels, (\d+) copies, "
                  r"(\d+) memsets, (\d+) records lost", res.stderr)
    assert m, res.describe()
    return tuple(int(g) for g in m.groups())


def dropped_line(res):
    m = re.search(r"records dropped: (\d+) with no timestamps \(CUPTI gave "
                  r"0\), (\d+) by CUPTI \(no buffer space\), (\d+) CUPTI "
                  r"buffers cut short by an invalid record", res.stderr)
    return tuple(int(g) for g in m.groups()) if m else (0, 0, 0)


def summary_rows(res):
    """{name: (calls, total ms)} of the summary's table."""
    rows = {}
    for line in res.stderr_lines:
        m = re.match(r"\s+[\d.]+%\s+([\d.]+)(ns|us|ms|s)\s+(\d+)\s+\S+\s+\S+"
                     r"\s+\S+\s+(\S.*)$", line)
        if m:
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
            rows[m.group(4)] = (int(m.group(3)), float(m.group(1)) * scale)
    return rows


def chrome_rows(events):
    """{(process name, row name): [X events]} of a Chrome trace."""
    procs, threads, rows = {}, {}, {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    for e in events:
        if e["ph"] == "X":
            key = (procs.get(e["pid"]), threads.get((e["pid"], e["tid"])))
            rows.setdefault(key, []).append(e)
    return rows


@pytest.mark.parametrize("kernel_kind", ["CONCURRENT_KERNEL", "KERNEL"])
def test_record_kinds_and_ids_chrome(spyc, fake_cuda, any_python, tmp_path,
                                     kernel_kind):
    """Each kind on its device's and stream's row of the Chrome trace, as
    many as the program made; the driver call and the runtime calls on
    the API row by CUPTI's names; an arrow from each launch; the summary
    counts every kind, synchronizations too, and says CUPTI's times were
    on CLOCK_MONOTONIC (the agent's timestamp callback)."""
    env = {"FAKE_CUPTI_KERNEL_KIND": "1"} if kernel_kind == "KERNEL" else {}
    out = tmp_path / "out.trace.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, env)
    assert did["gemm_kernel"] > 20, did
    kernels, copies, memsets, lost = activities_line(res)
    assert (kernels, copies, memsets, lost) == (
        did["gemm_kernel"] + did["driver_kernel"], did["copies"],
        did["memsets"], 0), res.describe()
    assert "synchronizations: %d, " % did["syncs"] in res.stderr, \
        res.describe()
    assert "CUPTI on CLOCK_MONOTONIC, by the agent's timestamp callback" \
        in res.stderr, res.describe()
    assert dropped_line(res) == (0, 0, 0), res.describe()
    with open(str(out)) as f:
        events = json.load(f)["traceEvents"]
    rows = chrome_rows(events)
    gpu_rows = dict((k, v) for k, v in rows.items()
                    if k[0] and k[0].startswith("GPU "))
    assert sorted(gpu_rows) == [("GPU 1", "stream 13"), ("GPU 1", "stream 14"),
                                ("GPU 1", "stream 15")], sorted(rows)
    names13 = [e["name"] for e in gpu_rows[("GPU 1", "stream 13")]]
    assert names13.count("gemm_kernel") == did["gemm_kernel"]
    assert names13.count("[memset]") == did["memsets"]
    assert len(names13) == did["gemm_kernel"] + did["memsets"], \
        sorted(set(names13))
    assert [e["name"] for e in gpu_rows[("GPU 1", "stream 14")]] == \
        ["driver_kernel"] * did["driver_kernel"]
    assert [e["name"] for e in gpu_rows[("GPU 1", "stream 15")]] == \
        ["[memcpy HtoD]"] * did["copies"]
    # Times exact, on the CPU rows' clock, within the program's run.
    span_us = (did["end"] - did["start"]) * 1e6
    for e in gpu_rows[("GPU 1", "stream 13")]:
        if e["name"] == "gemm_kernel":
            assert e["dur"] == 200, e
        assert -2e6 < e["ts"] < span_us + 5e6, (e, span_us)
    api = {}
    for (proc, row), evs in rows.items():
        if row and row.startswith("CUDA API: "):
            for e in evs:
                api[e["name"]] = api.get(e["name"], 0) + 1
    assert api == {"cudaLaunchKernel": did["gemm_kernel"],
                   "cuLaunchKernel": did["driver_kernel"],
                   "cudaMemsetAsync": did["memsets"],
                   "cudaMemcpyAsync": did["copies"],
                   "cudaStreamSynchronize": did["syncs"]}, api
    flows = set(e["id"] for e in events if e["ph"] == "f")
    assert len(flows) == kernels + copies + memsets
    # Ids: the context the program's work ran in; each driver launch's
    # kernel and call by the correlation id the launch returned.
    assert set(e["args"]["context"] for evs in gpu_rows.values()
               for e in evs) == {did["context"]}
    assert sorted(e["args"]["correlation"]
                  for e in gpu_rows[("GPU 1", "stream 14")]) == \
        sorted(did["driver_correlations"])
    calls = dict((e["args"]["correlation"], e["name"])
                 for (proc, row), evs in rows.items()
                 if row and row.startswith("CUDA API: ") for e in evs)
    assert set(calls[c] for c in did["driver_correlations"]) == \
        {"cuLaunchKernel"}


def test_record_kinds_and_ids_speedscope(spyc, fake_cuda, any_python, tmp_path):
    """speedscope: an evented profile per device and stream, each with
    the program's kernels, memsets and copies; spyc_gpu counts the
    synchronizations and the records dropped (none)."""
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out)
    with open(str(out)) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    opened = {}
    for p in doc["profiles"]:
        if p["name"].startswith("GPU ") and p["type"] == "evented":
            opened[p["name"]] = sorted(
                frames[e["frame"]]["name"] for e in p["events"]
                if e["type"] == "O")
    assert sorted(opened) == ["GPU 1 stream 13", "GPU 1 stream 14",
                              "GPU 1 stream 15"], sorted(opened)
    assert opened["GPU 1 stream 13"] == sorted(
        ["gemm_kernel"] * did["gemm_kernel"] + ["[memset]"] * did["memsets"])
    assert opened["GPU 1 stream 14"] == ["driver_kernel"] * \
        did["driver_kernel"]
    assert opened["GPU 1 stream 15"] == ["[memcpy HtoD]"] * did["copies"]
    g = doc["spyc_gpu"]
    assert g["synchronizations"] == did["syncs"], g
    assert (g["records_lost"], g["records_without_time"],
            g["records_dropped_by_cupti"], g["buffers_cut_short"]) == \
        (0, 0, 0, 0), g


def test_wall_clock_step_and_zero_timestamps(spyc, fake_cuda, any_python,
                                             tmp_path):
    """CUPTI's own clock (CLOCK_REALTIME) steps an hour back mid-run, and
    every 7th kernel comes with 0 start and end: with the agent's
    timestamp callback no kernel moves, each keeps its exact duration, and
    those with no time are dropped and counted in the summary."""
    out = tmp_path / "out.trace.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, {
        "FAKE_CUPTI_CLOCK_STEP_NS": str(-3600 * 10**9),
        "FAKE_CUPTI_CLOCK_STEP_AFTER": "40",
        "FAKE_CUPTI_ZERO_EVERY": "7"})
    launched = did["gemm_kernel"] + did["driver_kernel"]
    assert fake["launches"] == launched > 40, (fake, did)
    assert fake["zeroed"] == launched // 7, fake
    kernels = activities_line(res)[0]
    assert kernels == launched - fake["zeroed"], res.describe()
    assert dropped_line(res) == (fake["zeroed"], 0, 0), res.describe()
    with open(str(out)) as f:
        events = json.load(f)["traceEvents"]
    rows = chrome_rows(events)
    span_us = (did["end"] - did["start"]) * 1e6
    gemms = [e for e in rows[("GPU 1", "stream 13")]
             if e["name"] == "gemm_kernel"]
    assert gemms
    for e in gemms:
        assert e["dur"] == 200, e
        assert -2e6 < e["ts"] < span_us + 5e6, (e, span_us)
    starts = [e["ts"] for e in gemms]
    assert starts == sorted(starts)


def test_wall_clock_without_timestamp_callback(spyc, fake_cuda, any_python,
                                               tmp_path):
    """A CUPTI that refuses the timestamp callback (and callbacks, and its
    dropped count): times stay on CUPTI's clock, CLOCK_REALTIME here,
    which steps an hour back mid-run, and are put on spyc's through the
    agent's clock pair nearest each (one per buffer), so that nothing
    moves; kernels by the nearest CPU sample, as the summary says."""
    out = tmp_path / "out.trace.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, {
        "FAKE_CUPTI_FAIL": "cuptiActivityRegisterTimestampCallback,"
                           "cuptiSubscribe,cuptiActivityGetNumDroppedRecords",
        "FAKE_CUPTI_CLOCK_STEP_NS": str(-3600 * 10**9),
        "FAKE_CUPTI_CLOCK_STEP_AFTER": "100"})
    assert "CUPTI on its own clock" in res.stderr, res.describe()
    m = re.search(r"clock: CLOCK_MONOTONIC = CUPTI ([+-]\d+) ns", res.stderr)
    # CLOCK_REALTIME is decades ahead of CLOCK_MONOTONIC.
    assert m and int(m.group(1)) < -10**18, res.describe()
    assert "launch stacks: off (CUPTI refused spyc's subscription" in \
        res.stderr, \
        res.describe()
    assert activities_line(res)[0] == did["gemm_kernel"] + \
        did["driver_kernel"], res.describe()
    with open(str(out)) as f:
        rows = chrome_rows(json.load(f)["traceEvents"])
    span_us = (did["end"] - did["start"]) * 1e6
    assert fake["launches"] > 100, fake
    gemms = [e for e in rows[("GPU 1", "stream 13")]
             if e["name"] == "gemm_kernel"]
    for e in gemms:
        assert -2e6 < e["ts"] < span_us + 5e6, (e, span_us)
        assert e["dur"] == 200, e
    starts = [e["ts"] for e in gemms]
    assert starts == sorted(starts)
    m = re.search(r"GPU busy \S+ of ([\d.]+)(ns|us|ms|s) from the first",
                  res.stderr)
    assert m, res.describe()
    span_ms = float(m.group(1)) * {"ns": 1e-6, "us": 1e-3, "ms": 1.0,
                                   "s": 1e3}[m.group(2)]
    assert span_ms < span_us / 1e3 + 1000, res.describe()


def test_cupti_enable_fails(spyc, fake_cuda, any_python, tmp_path):
    """cuptiActivityEnable fails: spyc says so in one line, with CUPTI's
    error, and writes the CPU profile; the program runs to its end."""
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out,
                            {"FAKE_CUPTI_FAIL": "cuptiActivityEnable"},
                            seconds="0.3")
    assert did["gemm_kernel"] > 0
    gpu_lines = [l for l in res.stderr_lines if "--gpu" in l]
    assert len(gpu_lines) == 1, res.describe()
    assert "cupti-error" in gpu_lines[0] and \
        "CUPTI_ERROR_NOT_INITIALIZED" in gpu_lines[0], res.describe()
    assert "GPU activities" not in res.stderr
    assert json.load(open(str(out)))["profiles"]


def test_dropped_records_and_invalid_record(spyc, fake_cuda, any_python,
                                            tmp_path):
    """CUPTI drops every 5th kernel (no buffer space) and hands over a
    buffer with an invalid record: the agent reads CUPTI's dropped count
    (cuptiActivityGetNumDroppedRecords) into the summary, stops that
    buffer's walk at the invalid record, as CUPTI's documentation says
    (and counts it), and goes on with the next buffers."""
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, {
        "FAKE_CUPTI_DROP_EVERY": "5", "FAKE_CUPTI_INVALID_RECORD": "1"})
    launched = did["gemm_kernel"] + did["driver_kernel"]
    assert fake["kernels"] == launched and fake["dropped"] == launched // 5
    assert fake["invalid_buffers"] == 1 and fake["invalid_lost"] > 0, fake
    assert dropped_line(res) == (0, fake["dropped"], 1), res.describe()
    kernels = activities_line(res)[0]
    made = launched - fake["dropped"]
    assert made - fake["invalid_lost"] <= kernels < made, res.describe()
    doc = json.load(open(str(out)))
    g = doc["spyc_gpu"]
    assert (g["records_dropped_by_cupti"], g["buffers_cut_short"]) == \
        (fake["dropped"], 1), g


# Kernels whose mangled names are 800+ characters (as cuBLAS's and
# CUTLASS's templates are) and differ only at their end, and a short one.
NAMES_PROGRAM = PROLOGUE + r"""
report, seconds = sys.argv[2], float(sys.argv[3])
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
body = "N4cute5tupleE" * 60
names = {"int": ("_Z6kernelI" + body + "iEvT_").encode(),
         "long": ("_Z6kernelI" + body + "lEvT_").encode(),
         "short": b"_Z4gemmPfS_i"}
did = dict((k, 0) for k in names)
t = time.monotonic()
while time.monotonic() - t < seconds:
    for k in ("int", "long", "long", "short"):
        cupti.fake_launch(names[k], 100000, 7)
        did[k] += 1
    s = time.monotonic()
    while time.monotonic() - s < 0.002:
        pass
with open(report, "w") as f:
    json.dump(did, f)
"""


def test_long_kernel_names(spyc, fake_cuda, any_python, tmp_path):
    """Kernel names far longer than a channel record reach every output
    whole and demangled, each its own row even where two share their
    first hundreds of characters."""
    program = tmp_path / "names.py"
    program.write_text(NAMES_PROGRAM)
    report = tmp_path / "did.json"
    out = tmp_path / "out.trace.json"
    res = spyc.run(["record", "--gpu", "--rate", "100", "-o", out, "--",
                    any_python.path, program, FAKE, report, "0.7"],
                   env=target_env(), timeout=120)
    assert res.returncode == 0, res.describe()
    with open(str(report)) as f:
        did = json.load(f)
    tuple_list = ", ".join(["cute::tuple"] * 60)
    want = {"int": "void kernel<%s, int>(cute::tuple)" % tuple_list,
            "long": "void kernel<%s, long>(cute::tuple)" % tuple_list,
            "short": "gemm(float*, float*, int)"}
    rows = summary_rows(res)
    assert sorted(rows) == sorted(want.values()), res.describe()
    for k, name in want.items():
        assert rows[name][0] == did[k], (k, rows[name], did)
    with open(str(out)) as f:
        rows = chrome_rows(json.load(f)["traceEvents"])
    names = [e["name"] for e in rows[("GPU 0", "stream 7")]]
    for k, name in want.items():
        assert names.count(name) == did[k], (k, sorted(set(names)))


# A few launches a second: far from filling a CUPTI buffer in the run.
SLOW_PROGRAM = PROLOGUE + r"""
report, seconds = sys.argv[2], float(sys.argv[3])
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
n, t = 0, time.monotonic()
while time.monotonic() - t < seconds:
    cupti.fake_launch(b"slow_kernel", 1000000, 7)
    n += 1
    time.sleep(0.02)
with open(report, "w") as f:
    json.dump({"slow_kernel": n, "seconds": time.monotonic() - t}, f)
"""


def test_live_view_gets_partial_buffers(spyc, fake_cuda, any_python,
                                        tmp_path):
    """A CUPTI whose own periodic flush hands over only full buffers, and
    a program that fills none: top --gpu still shows its kernels as it
    runs, window after window (the agent's watcher asks CUPTI for its
    complete buffers every 200 ms), not all at its end; and how busy the
    GPU was in each window, by the kernels' own times, is the program's
    share of 1 ms kernels."""
    from test_top_gpu import WORK_RE, parse_gpu_plain

    program = tmp_path / "slow.py"
    program.write_text(SLOW_PROGRAM)
    report = tmp_path / "did.json"
    res = spyc.run(["top", "--gpu", "--interval", "0.5", "--program-output",
                    tmp_path / "prog.out", "--", any_python.path, program,
                    FAKE, report, "3"], env=target_env(), timeout=90)
    assert res.returncode == 0, res.describe()
    with open(str(report)) as f:
        did = json.load(f)
    counts, busy = [], []
    for header, _, rows in parse_gpu_plain(res.stdout):
        m = WORK_RE.match(header["gpu work"])
        assert m, header
        counts.append(int(m.group(1)))
        busy.append(header["gpu busy"])
    assert sum(counts) == did["slow_kernel"], (counts, did)
    # Allow the first window (the agent loading) and the last.
    assert len(counts) >= 4 and \
        sum(1 for c in counts[1:-1] if c) >= len(counts) - 3, counts
    assert max(counts) < 0.6 * did["slow_kernel"], counts
    share = 100.0 * did["slow_kernel"] * 1e-3 / did["seconds"]
    # The first two intervals may start before the program's launches.
    for b in busy[2:-1]:
        assert abs(float(b.rstrip("%")) - share) < 1.5, (busy, share)


def test_other_cupti_client_first(spyc, fake_cuda, any_python, tmp_path):
    """Another CUPTI client (the PyTorch profiler's Kineto, Nsight Systems)
    has CUPTI when spyc's agent starts: CUPTI takes one subscriber and one
    set of activity buffers, so the agent enables nothing, and that
    client goes on getting every record; spyc says why there is no GPU
    profile and writes the CPU one."""
    program = PROGRAM.replace(
        "ctypes.CDLL(os.environ[\"CUDA_INJECTION64_PATH\"])",
        "assert cupti.fake_collect_alone() == 0\n"
        "ctypes.CDLL(os.environ[\"CUDA_INJECTION64_PATH\"])", 1)
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out,
                            program=program)
    assert ("another CUPTI client (a profiler: torch.profiler, Nsight "
            "Systems, DCGM) has CUPTI" in res.stderr), res.describe()
    assert "(other-cupti-client); CPU profile only" in res.stderr, (
        res.describe())
    # Its records all went to the other client: 3 GEMMs, a driver
    # kernel, a copy, a memset, a sync and their API calls a step.
    assert fake["other_client_records"] >= 5 * did["gemm_kernel"] // 3, (
        fake, did)
    with open(str(out)) as f:
        doc = json.load(f)
    assert not [p for p in doc["profiles"] if p["name"].startswith("GPU")]


def test_other_cupti_client_later(spyc, fake_cuda, any_python, tmp_path):
    """A client that starts later (torch.profiler inside the run) takes
    CUPTI's activity buffers from spyc's agent: the launches go on (the
    agent's launch callbacks still come) but no record reaches spyc.  The
    summary says so and how long, rather than a profile that just ends."""
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, {
        "FAKE_CUPTI_OTHER_CLIENT_AFTER": "300"}, seconds="3.5")
    m = re.search(r"CUPTI handed spyc no record of the last ([\d.]+) s of "
                  r"launches: another CUPTI client \(torch.profiler, Nsight "
                  r"Systems\) took CUPTI's activity buffers(; the GPU "
                  r"profile ends where they stopped|: no GPU profile)",
                  res.stderr)
    assert m, res.describe()
    # It took them after 300 launches (100 steps of a few ms), records
    # CUPTI held then included.
    span = did["end"] - did["start"]
    assert span - 2.5 < float(m.group(1)) <= span + 0.5, (span,
                                                          res.describe())
    assert fake["other_client_records"] > 0, fake
    if m.group(2).startswith(";"):
        assert activities_line(res)[0] <= 400, res.describe()


@pytest.mark.parametrize("per_call", [True, False])
def test_api_records_of_profiled_calls_only(spyc, fake_cuda, any_python,
                                            tmp_path, per_call):
    """CUPTI records every runtime and driver call once their kinds are
    enabled (PyTorch makes several cudaGetDevice-like calls per launch).
    The agent switches off all but the launches, copies, memsets and
    synchronizations the profile uses (cuptiActivityEnableRuntimeApi/
    DriverApi): the program's 20 other calls a step make no record, and
    the profile is the same.  A CUPTI whose per-call switches fail
    records them all, as before, and spyc_gpu says so."""
    program = PROGRAM.replace(
        "    cupti.fake_sync(13)\n",
        "    cupti.fake_sync(13)\n"
        "    did[\"noise\"] = did.get(\"noise\", 0) + "
        "cupti.fake_api_noise(20)\n", 1)
    env = {} if per_call else {
        "FAKE_CUPTI_FAIL":
        "cuptiActivityEnableRuntimeApi,cuptiActivityEnableDriverApi"}
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, env,
                            program=program)
    steps = did["copies"]
    assert steps > 10 and did["noise"] == 20 * steps, did
    # A step's copy, memset, 3 runtime and 1 driver launches and sync.
    profiled = 7 * steps
    if per_call:
        assert (fake["noise_records"], fake["api_records"]) == \
            (0, profiled), (fake, did)
    else:
        assert (fake["noise_records"], fake["api_records"]) == \
            (did["noise"], profiled + did["noise"]), (fake, did)
    with open(str(out)) as f:
        doc = json.load(f)
    g = doc["spyc_gpu"]
    assert g["cuda_api_records"] == (
        "launches, copies, memsets, synchronizations" if per_call else
        "all (this CUPTI cannot leave calls out: before CUDA 12.5)"), g
    assert activities_line(res)[:3] == (
        did["gemm_kernel"] + did["driver_kernel"], did["copies"],
        did["memsets"]), res.describe()
    assert g["activities"] == did["gemm_kernel"] + did["driver_kernel"] + \
        did["copies"] + did["memsets"], g
    assert g["no_launch_record"] == 0 and g["synchronizations"] == \
        did["syncs"], g
    # The program launches from its first line on: on a loaded machine
    # a few launches may come before spyc has told the agent where the
    # interpreter's frames are, and go by the nearest CPU sample.
    assert g["by_launch_stack"] + g["attributed"] == g["activities"], g
    assert g["by_launch_stack"] >= 0.95 * g["activities"], g


# Launches from two lines, one from A to two from B, several thousand a
# second, each line its own kernel.
LONG_RUN_PROGRAM = PROLOGUE + r"""
report, seconds = sys.argv[2], float(sys.argv[3])
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
did = {"a": 0, "b": 0}

def line_a():
    cupti.fake_launch(b"kernel_a", 20000, 7)  # LINE A
    did["a"] += 1

def line_b():
    cupti.fake_launch(b"kernel_b", 30000, 7)  # LINE B
    did["b"] += 1

t = time.monotonic()
while time.monotonic() - t < seconds:
    line_a()
    line_b()
    line_b()
    s = time.monotonic()
    while time.monotonic() - s < 0.0003:
        pass
with open(report, "w") as f:
    json.dump(did, f)
"""


def test_long_run_bounded_and_ids_repeating(spyc, fake_cuda, any_python,
                                            tmp_path):
    """A long run as the stand-in makes one in seconds: correlation ids
    that repeat every four calls (as CUPTI's 32-bit ids do after 2^32
    calls) and a timeline of 300 activities held (--gpu-timeline) while
    thousands are launched.  Every kernel still goes on the stack of its
    own launch's line (never on the other line's, whose launches share
    its ids), the profile and summary count every one launched, and the
    summary says how many the timeline holds."""
    out = tmp_path / "out.txt"
    res, did, fake = record(
        spyc, any_python, tmp_path, out,
        {"FAKE_CUPTI_CORRELATION_STEP": str(1 << 30)}, seconds="2",
        program=LONG_RUN_PROGRAM, args=["--gpu-timeline", "300"])
    launched = did["a"] + did["b"]
    assert launched > 3000 and fake["launches"] == launched, did
    m = re.search(r"timeline: the newest (\d+) of (\d+) activities",
                  res.stderr)
    assert m, res.describe()
    held, total = int(m.group(1)), int(m.group(2))
    assert 300 <= held < 600 and total == launched, res.describe()
    assert summary_rows(res)["kernel_a"][0] == did["a"], res.describe()
    assert summary_rows(res)["kernel_b"][0] == did["b"], res.describe()
    line_a = LONG_RUN_PROGRAM.splitlines().index(
        [x for x in LONG_RUN_PROGRAM.splitlines() if "# LINE A" in x][0]) + 1
    line_b = line_a + 4
    by_launch = "[GPU time, by the Python stack of the launch]"
    time_us = {}
    for line in out.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        parts = stack.split(";")
        if not parts[0].startswith("[GPU time"):
            continue
        leaf = parts[-1]
        assert leaf in ("kernel_a", "kernel_b"), line
        time_us[leaf] = time_us.get(leaf, 0) + int(weight)
        if parts[0] == by_launch:
            want = line_a if leaf == "kernel_a" else line_b
            assert parts[-2].endswith(":%d)" % want), line
    assert time_us == {"kernel_a": 20 * did["a"],
                       "kernel_b": 30 * did["b"]}, (time_us, did)
    m = re.search(r"attribution: (\d+) activities: (\d+) by the Python "
                  r"stack of their launch", res.stderr)
    assert m and int(m.group(1)) == launched, res.describe()
    assert int(m.group(2)) >= 0.8 * launched, res.describe()


# A CUDA graph as torch.cuda.graphs and torch.compile's reduce-overhead
# mode make one: kernels launched into a stream capture from three lines,
# two of them the same kernel (queuing no work, each making a node of the
# graph), the graph instantiated (its nodes copied, with ids of their
# own), then replayed
# again and again, each replay's kernels carrying the graph launch's
# correlation id and their copied node's id; eager kernels between
# replays, and now and then another capture (never instantiated).
GRAPH_PROGRAM = PROLOGUE + r"""
report, seconds = sys.argv[2], float(sys.argv[3])
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
did = {"captured": 0, "replays": 0, "eager": 0}

def layer_a():
    cupti.fake_launch(b"graph_kernel_a", 40000, 7)  # CAPTURE A

def layer_b():
    cupti.fake_launch(b"graph_kernel_b", 20000, 7)  # CAPTURE B

def layer_c():
    cupti.fake_launch(b"graph_kernel_b", 20000, 7)  # CAPTURE C

def model():
    layer_a()
    layer_b()
    layer_c()
    did["captured"] += 3

def capture():
    cupti.fake_capture(1)
    model()
    return cupti.fake_capture(0)

def replay(graph):
    cupti.fake_graph_replay(graph, 7)  # REPLAY
    did["replays"] += 1

def eager():
    cupti.fake_launch(b"eager_kernel", 50000, 7)  # EAGER
    did["eager"] += 1

graph = cupti.fake_graph_instantiate(capture())
t = time.monotonic()
while time.monotonic() - t < seconds:
    replay(graph)
    eager()
    if did["replays"] % 200 == 0:
        capture()
    s = time.monotonic()
    while time.monotonic() - s < 0.0005:
        pass
with open(report, "w") as f:
    json.dump(did, f)
"""


def speedscope_profile(doc, name):
    """{(frame names with lines, root first): weight} of the profile of
    doc whose name begins with name."""
    frames = doc["shared"]["frames"]
    out = {}
    for p in doc["profiles"]:
        if not p["name"].startswith(name):
            continue
        for sample, weight in zip(p["samples"], p["weights"]):
            key = tuple("%s:%s" % (frames[i]["name"], frames[i].get("line", 0))
                        for i in sample)
            out[key] = out.get(key, 0) + weight
    return out


def test_graph_capture_and_replay(spyc, fake_cuda, any_python, tmp_path):
    """Launches into a stream capture queue no work: the agent copies no
    launch stack of theirs (the summary counts them), and no kernel is
    ever put on their line as its launch.  Every kernel a graph replay
    runs goes on the stack of the graph's launch (the replay's line),
    never on another launch's; and, in a second profile, on the stack
    that captured its node (the model's lines), through the copy of the
    node that instantiation made, which CUPTI reports made as well (on
    the instantiation's stack) and whose id is its original's in its low
    32 bits.  Eager kernels go on their own line."""
    out = tmp_path / "out.json"
    res, did, fake = record(spyc, any_python, tmp_path, out, seconds="1.5",
                            program=GRAPH_PROGRAM)
    assert did["replays"] > 300 and fake["captured"] == did["captured"], \
        (did, fake)
    m = re.search(r"launch stacks: (\d+) launches captured into CUDA graphs",
                  res.stderr)
    assert m and int(m.group(1)) == did["captured"], res.describe()
    m = re.search(r"CUDA graphs: (\d+) kernels replayed from graphs \(.*\), "
                  r"(\d+) of them on the stack that made their node",
                  res.stderr)
    assert m, res.describe()
    assert int(m.group(1)) == int(m.group(2)) == 3 * did["replays"], \
        res.describe()
    assert "nodes made before spyc was there" not in res.stderr, \
        res.describe()
    lines = GRAPH_PROGRAM.splitlines()
    line = dict((tag, [i for i, x in enumerate(lines, 1)
                       if "# " + tag in x][0])
                for tag in ("CAPTURE A", "CAPTURE B", "CAPTURE C", "REPLAY",
                            "EAGER"))
    doc = json.load(open(str(out)))
    launch = speedscope_profile(doc, "GPU time by launching stack")
    want = {"graph_kernel_a": line["REPLAY"], "graph_kernel_b": line["REPLAY"],
            "eager_kernel": line["EAGER"]}
    time_s, exact_s = {}, {}
    for stack, seconds in launch.items():
        leaf = stack[-1].rsplit(":", 1)[0]
        assert leaf in want, stack
        assert not any(f.endswith(":%d" % line["CAPTURE A"]) or
                       f.endswith(":%d" % line["CAPTURE B"])
                       for f in stack), stack
        time_s[leaf] = time_s.get(leaf, 0) + seconds
        if stack[0].startswith("[GPU time, by the Python stack of the "
                               "launch]"):
            assert stack[-2].endswith(":%d" % want[leaf]), stack
            exact_s[leaf] = exact_s.get(leaf, 0) + seconds
    truth = {"graph_kernel_a": 40e-6 * did["replays"],
             "graph_kernel_b": 2 * 20e-6 * did["replays"],
             "eager_kernel": 50e-6 * did["eager"]}
    for leaf, t in truth.items():
        assert abs(time_s.get(leaf, 0) - t) < 1e-6, (leaf, time_s, truth)
    assert exact_s.get("graph_kernel_a", 0) >= 0.8 * truth["graph_kernel_a"]
    # The second view: each graph kernel on the line that captured it,
    # under the model's frames, all its time.
    captured = speedscope_profile(doc, "GPU time of graph kernels by "
                                  "capturing stack")
    by_line = {}
    for stack, seconds in captured.items():
        leaf = stack[-1].rsplit(":", 1)[0]
        assert stack[0].startswith("[CUDA graph kernels, by the stack that "
                                   "made their node]"), stack
        assert any(f.startswith("model:") for f in stack), stack
        by_line[(leaf, stack[-2])] = by_line.get((leaf, stack[-2]), 0) + \
            seconds
    want = {("graph_kernel_a", "layer_a:%d" % line["CAPTURE A"]):
            truth["graph_kernel_a"],
            ("graph_kernel_b", "layer_b:%d" % line["CAPTURE B"]):
            truth["graph_kernel_b"] / 2,
            ("graph_kernel_b", "layer_c:%d" % line["CAPTURE C"]):
            truth["graph_kernel_b"] / 2}
    assert set(by_line) == set(want), by_line
    for key, t in want.items():
        assert abs(by_line[key] - t) < 1e-6, (key, by_line, want)


# NVTX ranges, pushed through NVIDIA's own NVTX loader (libnvtx.so is
# built from NVIDIA's headers, loader and all), around the stand-in's
# launches: on the main thread with each kind of message (text, event
# attributes, a registered string in a domain, a PyTorch emit_nvtx-like
# message whose seq changes), on a second thread (a wide message), in a
# forked child and in a child program (neither of which is the target).
NVTX_PROGRAM = PROLOGUE + r"""
report, seconds = sys.argv[2], float(sys.argv[3])
nvtx = ctypes.CDLL(os.path.join(fake, "libnvtx.so"))
nvtx.nvtxRangePushA.argtypes = [ctypes.c_char_p]
nvtx.nvtxRangePushW.argtypes = [ctypes.c_wchar_p]
nvtx.nvtxDomainCreateA.restype = ctypes.c_void_p
nvtx.nvtxDomainCreateA.argtypes = [ctypes.c_char_p]
nvtx.nvtxDomainRegisterStringA.restype = ctypes.c_void_p
nvtx.nvtxDomainRegisterStringA.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
nvtx.nvtxDomainRangePop.argtypes = [ctypes.c_void_p]

class Attributes(ctypes.Structure):
    # nvtxEventAttributes_v2
    _fields_ = [("version", ctypes.c_uint16), ("size", ctypes.c_uint16),
                ("category", ctypes.c_uint32), ("colorType", ctypes.c_int32),
                ("color", ctypes.c_uint32), ("payloadType", ctypes.c_int32),
                ("reserved0", ctypes.c_int32), ("payload", ctypes.c_uint64),
                ("messageType", ctypes.c_int32),
                ("message", ctypes.c_void_p)]

def attributes(kind, message):
    a = Attributes(3, ctypes.sizeof(Attributes), 0, 0, 0, 0, 0, 0, kind,
                   message)
    return a

nvtx.nvtxRangePushEx.argtypes = [ctypes.POINTER(Attributes)]
nvtx.nvtxDomainRangePushEx.argtypes = [ctypes.c_void_p,
                                       ctypes.POINTER(Attributes)]
did = {"pushes": 0, "steps": 0, "fwd": 0, "bwd": 0, "out": 0, "worker": 0,
       "levels": [], "empty_pop": None}

def push(text):
    did["pushes"] += 1
    return nvtx.nvtxRangePushA(text)

did["empty_pop"] = nvtx.nvtxRangePop()
did["levels"].append(push(b"setup"))  # before CUDA starts
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
domain = nvtx.nvtxDomainCreateA(b"spyc-test")
registered = nvtx.nvtxDomainRegisterStringA(domain, b"backward")
text = ctypes.create_string_buffer(64)

def forward(seq):
    text.value = b"forward, seq = %d, op_id = %d" % (seq, seq + 1)
    did["pushes"] += 1
    did["levels"].append(nvtx.nvtxRangePushEx(
        attributes(1, ctypes.addressof(text))))
    cupti.fake_launch(b"fwd_kernel", 30000, 7)  # FORWARD
    did["fwd"] += 1
    nvtx.nvtxRangePop()

def backward():
    did["pushes"] += 1
    nvtx.nvtxDomainRangePushEx(domain, attributes(3, registered))
    for _ in range(2):
        cupti.fake_launch(b"bwd_kernel", 60000, 7)  # BACKWARD
        did["bwd"] += 1
    nvtx.nvtxDomainRangePop(domain)

def worker():
    while not stop:
        did["pushes"] += 1
        nvtx.nvtxRangePushW(u"w\u00f6rker \u2713")
        cupti.fake_launch(b"worker_kernel", 20000, 8)  # WORKER
        did["worker"] += 1
        nvtx.nvtxRangePop()
        time.sleep(0.002)

stop = False
th = threading.Thread(target=worker)
th.start()
pid = os.fork()
if pid == 0:
    # A forked child: its ranges are not the target's.
    for _ in range(100):
        nvtx.nvtxRangePushA(b"forked child")
        nvtx.nvtxRangePop()
    os._exit(0)
os.waitpid(pid, 0)
# Messages longer than a record holds: cut, whole characters only.
for long_message in (b"x" * 300, u"\u2713" * 100):
    did["pushes"] += 1
    if isinstance(long_message, bytes):
        nvtx.nvtxRangePushA(long_message)
    else:
        nvtx.nvtxRangePushW(long_message)
    cupti.fake_launch(b"long_kernel", 5000, 7)  # LONG
    nvtx.nvtxRangePop()
import subprocess
child = subprocess.run([sys.executable, "-c",
    "import ctypes, sys; n = ctypes.CDLL(sys.argv[1]); "
    "n.nvtxRangePushA(b'child program'); n.nvtxRangePop(); print('ok')",
    os.path.join(fake, "libnvtx.so")], stdout=subprocess.PIPE)
did["child"] = child.stdout.decode().strip()
t = time.monotonic()
while time.monotonic() - t < seconds:
    did["levels"].append(push(b"step"))
    forward(did["steps"])
    backward()
    nvtx.nvtxRangePop()
    did["steps"] += 1
    cupti.fake_launch(b"outside_kernel", 10000, 7)  # OUTSIDE
    did["out"] += 1
    s = time.monotonic()
    while time.monotonic() - s < 0.0005:
        pass
stop = True
th.join()
with open(report, "w") as f:
    json.dump(did, f)
"""


def nvtx_record(spyc, python, tmp_path, name, env=None, fmt=None):
    out = tmp_path / name
    args = ["--format", fmt] if fmt else []
    res, did, fake = record(spyc, python, tmp_path, out, env=env,
                            seconds="1.5", program=NVTX_PROGRAM, args=args)
    return res, did, out


def test_nvtx_ranges(spyc, fake_cuda, any_python, tmp_path):
    """Each kernel sits under the NVTX ranges open on its launching
    thread at its launch (after its Python frames, outermost first), with
    all of its time; PyTorch's per-call seq and op_id do not split a
    range; ranges of each thread stay on that thread; the summary, report
    and the Chrome trace's NVTX rows hold the same figures; a forked
    child and a child program record nothing and run as before."""
    res, did, out = nvtx_record(spyc, any_python, tmp_path, "out.json")
    assert did["child"] == "ok" and did["empty_pop"] < 0, did
    # NVTX's levels: setup at 0, each step inside it at 1, forward at 2.
    assert did["levels"][0] == 0 and set(did["levels"][1:]) == {1, 2}, did
    lines = NVTX_PROGRAM.splitlines()
    line = dict((tag, [i for i, x in enumerate(lines, 1)
                       if "# " + tag in x][0])
                for tag in ("FORWARD", "BACKWARD", "WORKER", "OUTSIDE", "LONG"))
    want = {
        "fwd_kernel": ("forward", line["FORWARD"],
                       ["setup", "step", "forward"], 30e-6 * did["fwd"]),
        "bwd_kernel": ("backward", line["BACKWARD"],
                       ["setup", "step", "backward"], 60e-6 * did["bwd"]),
        "outside_kernel": ("<module>", line["OUTSIDE"], ["setup"],
                           10e-6 * did["out"]),
        "worker_kernel": ("worker", line["WORKER"],
                          [u"w\u00f6rker \u2713"], 20e-6 * did["worker"]),
        "long_kernel": ("<module>", line["LONG"], None, 2 * 5e-6),
    }
    doc = json.load(open(str(out)))
    assert doc["spyc_gpu"]["nvtx_ranges_pushed"] == did["pushes"]
    got, exact, truth = {}, {}, {}
    for stack, seconds in speedscope_profile(
            doc, "GPU time by launching stack").items():
        leaf = stack[-1].rsplit(":", 1)[0]
        got[leaf] = got.get(leaf, 0) + seconds
        # Launches before spyc knew the interpreter (a loaded machine)
        # go by the nearest sample: no launch stack, no ranges.
        if not stack[0].startswith("[GPU time, by the Python stack"):
            assert not any(f.startswith("[NVTX]") for f in stack), stack
            continue
        exact[leaf] = exact.get(leaf, 0) + seconds
        fn, ln, ranges, _ = want[leaf]
        if ranges is None:
            # setup, then the cut message (its first 200 bytes).
            assert stack[-3][:-2] == "[NVTX] setup", stack
            assert stack[-2][:-2] in ("[NVTX] " + "x" * 200 + "...",
                                      u"[NVTX] " + u"\u2713" * 66 +
                                      "..."), stack
            ranges = ["setup", stack[-2][len("[NVTX] "):-2]]
        nr = len(ranges)
        assert [f[:-2] for f in stack[-1 - nr:-1]] == \
            ["[NVTX] " + r for r in ranges], stack
        assert stack[-2 - nr] == "%s:%d" % (fn, ln), stack
        assert not any(f.startswith("[NVTX]") for f in stack[:-1 - nr]), \
            stack
        for r in ranges:
            truth[r] = truth.get(r, 0) + seconds
    for leaf, (_, _, _, t) in want.items():
        assert abs(got.get(leaf, 0) - t) < 1e-6, (leaf, got, want)
    # Most by their launch's stack, and the ranges' times from those:
    # step's are its forward's and backward's, setup's every main
    # thread kernel's.
    assert sum(exact.values()) >= 0.5 * sum(got.values()), (exact, got)
    assert abs(truth["step"] - truth["forward"] - truth["backward"]) < 1e-6
    assert abs(truth["setup"] - sum(
        t for k, t in exact.items() if k != "worker_kernel")) < 1e-6, truth
    # The summary: every push counted, each range's time inclusive.
    m = re.search(r"NVTX ranges: (\d+) pushed; ([\d.]+)% of the GPU time "
                  r"was launched inside one", res.stderr)
    assert m and int(m.group(1)) == did["pushes"], (did, res.describe())
    assert abs(float(m.group(2)) - 100.0 * sum(exact.values()) /
               sum(got.values())) < 0.06, res.describe()
    rows = {}
    for l in res.stderr_lines:
        r = re.match(r"\s+([\d.]+)%\s+([\d.]+)(ns|us|ms|s)\s+\[NVTX\] (.*)$",
                     l)
        if r:
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[r.group(3)]
            rows[r.group(4)] = float(r.group(2)) * scale
    assert set(rows) == set(truth), (rows, res.describe())
    for name, t in truth.items():
        assert abs(rows[name] - t) <= 0.001 * t + 1e-6, (name, rows, truth)
    # report --gpu groups by range too (JSON: seconds to the microsecond).
    rep = spyc.run(["report", "--gpu", "--json", out])
    assert rep.returncode == 0, rep.describe()
    sec = json.loads(rep.stdout)["sections"][0]
    ranges = dict((x["name"], x["total"]) for x in sec["nvtx_ranges"])
    assert set(ranges) == set(truth), (ranges, truth)
    for name, t in truth.items():
        assert abs(ranges[name] - t) < 1e-5, (name, ranges, truth)
    text = spyc.run(["report", "--gpu", out])
    assert "NVTX ranges by the GPU time launched inside them (%d of %d)" % (
        len(truth), len(truth)) in text.stdout, text.describe()

    # The timeline: every range on its thread's NVTX row, nested.
    res, did, out = nvtx_record(spyc, any_python, tmp_path, "out.trace",
                                fmt="chrome")
    events = json.load(open(str(out)))["traceEvents"]
    by_row = {}
    for (proc, row), evs in chrome_rows(events).items():
        if row and row.startswith("NVTX: "):
            by_row[row] = [e for e in evs if e.get("cat") == "nvtx"]
    assert len(by_row) == 2, list(by_row)
    main = [r for r in by_row if "MainThread" in r][0]
    other = [r for r in by_row if r != main][0]
    names = [e["name"] for e in by_row[main]]
    assert names.count("step") == did["steps"], (names.count("step"), did)
    assert names.count("forward") == did["fwd"]
    assert names.count("backward") == did["steps"]
    assert names.count("setup") == 1
    assert set(e["name"] for e in by_row[other]) == {u"w\u00f6rker \u2713"}
    assert len(by_row[other]) == did["worker"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in by_row[main]
                   if e["name"] == "step")
    setup = [e for e in by_row[main] if e["name"] == "setup"][0]
    for e in by_row[main]:
        if e["name"] in ("forward", "backward"):
            assert any(a <= e["ts"] and e["ts"] + e["dur"] <= b + 1e-3
                       for a, b in steps), e
        assert setup["ts"] <= e["ts"] and \
            e["ts"] + e["dur"] <= setup["ts"] + setup["dur"] + 1e-3, e


def test_nvtx_other_tool(spyc, fake_cuda, any_python, tmp_path):
    """A program whose NVTX_INJECTION64_PATH names another tool keeps it:
    spyc records no range and says why."""
    res, did, out = nvtx_record(
        spyc, any_python, tmp_path, "out.json",
        env={"NVTX_INJECTION64_PATH": str(tmp_path / "other-tool.so")})
    assert "NVTX: not recorded: NVTX_INJECTION64_PATH names another tool " \
        "(%s)" % (tmp_path / "other-tool.so") in res.stderr, res.describe()
    assert "NVTX ranges:" not in res.stderr
    doc = json.load(open(str(out)))
    assert not any(f["name"].startswith("[NVTX]")
                   for f in doc["shared"]["frames"])
    assert did["fwd"] > 100
