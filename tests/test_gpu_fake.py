# SPDX-License-Identifier: MIT
"""`spyc record --gpu` end to end where there is no GPU: the program loads
stand-ins for the CUDA driver and CUPTI (tests/fakecuda/, built by `make
test-tools` with CUPTI's headers) and "launches" kernels and copies through
them.  The fake CUPTI makes the records a real one would (API calls,
kernels, copies, one correlation id each, on a clock of its own) and hands
them to spyc's real agent in CUPTI's way: so everything from the agent to
the outputs is tested for real; only the device is made up.  What needs a
real GPU (PyTorch, real kernels, their timing) is in tests/gpu/.
"""

import json
import os
import re
import subprocess
import time

import pytest

import browser
from conftest import SpycResult, assert_running, decode, target_env
from fakegpu import FAKE, PROLOGUE, START, build, needs_agent
from test_record import html_data

pytestmark = needs_agent

# The program: loads the fake driver and CUPTI as a CUDA program loads the
# real ones, lets the "driver" start spyc's agent (launch mode: the CUDA
# driver calls InitializeInjection) or waits to be attached to, then runs
# steps of an upload and GEMMs from known lines, and says what it launched.
PROGRAM = PROLOGUE + START + r"""
launched = {"gemm_kernel": 0, "copies": 0}

def forward():
    cupti.fake_launch(b"gemm_kernel", 200000, 7)  # GEMM LINE
    launched["gemm_kernel"] += 1

def upload():
    cupti.fake_copy(1 << 20, 100000, 3)  # COPY LINE
    launched["copies"] += 1

def spin(s):
    t = time.time()
    while time.time() - t < s:
        pass

t0 = time.time()
while time.time() - t0 < seconds:
    upload()
    for _ in range(4):
        forward()
    spin(0.002)
if len(sys.argv) > 5:
    launched["flood"] = cupti.fake_flood(int(sys.argv[5]))
launched["enabled_kinds"] = cupti.fake_enabled_kinds()
with open(report, "w") as f:
    json.dump(launched, f)
"""


# GPU idle time: each round launches four GEMMs of 5 ms, waits for the
# GPU to run them (spinning in wait_gpu()), then works on the host in
# host_work() for 50 ms while the GPU has nothing to do; it reports its
# rounds, GEMMs and the time it spent in host_work().
IDLE_PROGRAM = PROLOGUE + START + r"""
done = {"rounds": 0, "gemm_kernel": 0, "host_s": 0.0}

def before_cuda():
    t = time.monotonic()
    while time.monotonic() < t + 0.3:
        pass

def wait_gpu(t):
    while time.monotonic() < t:
        pass

def host_work():
    t = time.monotonic()
    while time.monotonic() < t + 0.05:
        pass
    done["host_s"] += time.monotonic() - t

def step():
    t = time.monotonic()
    for _ in range(4):
        cupti.fake_launch(b"gemm_kernel", 5000000, 7)
        done["gemm_kernel"] += 1
    wait_gpu(t + 0.0205)

before_cuda()
t0 = time.time()
while time.time() - t0 < seconds:
    step()
    host_work()
    done["rounds"] += 1
with open(report, "w") as f:
    json.dump(done, f)
"""
# spyc's sampling period in test_fake_gpu_idle (500 Hz): a sample stands
# for up to a period around it, so idle time moves up to that far at each
# boundary between host_work() and the code around it.
IDLE_PERIOD_S = 0.002


def line_of(text, marker):
    for i, line in enumerate(text.splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(marker)


@pytest.fixture(scope="module")
def fake_cuda(spyc):
    return build(spyc)


def write_program(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(PROGRAM)
    return str(path)


def run(spyc, args, timeout=120):
    proc = spyc.popen(args, env=target_env(), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("spyc did not finish: %s" % decode(err))
    return SpycResult(["spyc"] + [str(a) for a in args], proc.returncode,
                      decode(out), decode(err))


def gpu_summary(res):
    """{kernel name: (calls, total ms)} from the GPU activities table."""
    rows = {}
    for line in res.stderr_lines:
        m = re.match(r"\s+[\d.]+%\s+([\d.]+)(ns|us|ms|s)\s+(\d+)\s+\S+\s+\S+"
                     r"\s+\S+\s+(\S.*)$", line)
        if m:
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
            rows[m.group(4)] = (int(m.group(3)), float(m.group(1)) * scale)
    return rows


def check_profile(res, out, launched):
    """Every launch the program made is in the profile, with its time."""
    assert res.returncode == 0, res.describe()
    assert any(l.startswith("spyc: GPU activities (CUPTI): ")
               for l in res.stderr_lines), res.describe()
    assert " 0 records lost" in res.stderr, res.describe()
    rows = gpu_summary(res)
    calls, total_ms = rows["gemm_kernel"]
    assert calls == launched["gemm_kernel"], res.describe()
    # 200 us each: the fake's times are exact.
    assert abs(total_ms - 0.2 * calls) < 0.01 * calls, res.describe()
    assert "memcpy: HtoD %.1f MiB in %d copies" % (
        launched["copies"], launched["copies"]) in res.stderr, res.describe()
    with open(out) as f:
        doc = json.load(f)
    names = [p["name"] for p in doc["profiles"]]
    assert "GPU 0 stream 7" in names and "GPU 0 stream 3" in names, names
    stream7 = doc["profiles"][names.index("GPU 0 stream 7")]
    frames = doc["shared"]["frames"]
    opened = [frames[e["frame"]]["name"] for e in stream7["events"]
              if e["type"] == "O"]
    assert opened.count("gemm_kernel") == launched["gemm_kernel"]
    return doc


def test_fake_gpu_launch_mode(spyc, fake_cuda, any_python, tmp_path):
    """Launch mode: the driver loads the agent; every kernel and copy the
    program launched is in the profile and the summary, none lost."""
    program = write_program(tmp_path)
    out = tmp_path / "out.json"
    report = str(tmp_path / "launched.json")
    res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", out, "--",
                     any_python.path, program, fake_cuda, "launch", "1.5",
                     report])
    with open(report) as f:
        launched = json.load(f)
    assert launched["gemm_kernel"] > 50, launched
    check_profile(res, out, launched)
    # spyc report --gpu: the GPU time the program made, once (the
    # streams' timelines hold it again), all of it under the program.
    rep = spyc.run(["report", "--gpu", "--json", "--top", "0", out])
    rep.assert_ok()
    doc = json.loads(rep.stdout)
    truth = 200e-6 * launched["gemm_kernel"] + 100e-6 * launched["copies"]
    assert abs(doc["total"] - truth) < 1e-6, (doc["total"], truth)
    assert doc["streams_skipped"] == 2, rep.stdout[:500]
    funcs = dict((f["name"], f) for f in doc["sections"][0]["functions"])
    assert abs(funcs["gemm_kernel"]["own"] -
               200e-6 * launched["gemm_kernel"]) < 1e-6, funcs["gemm_kernel"]
    assert funcs["<module>"]["total_pct"] > 99.9, funcs["<module>"]


def start_program(tmp_path, python, seconds, env_extra=None):
    program = write_program(tmp_path)
    report = str(tmp_path / "launched.json")
    env = target_env(env_extra)
    proc = subprocess.Popen([python.path, program, FAKE, "attach",
                             str(seconds), report], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while not os.path.exists(report + ".ready"):
        assert proc.poll() is None, decode(proc.communicate()[1])
        assert time.time() < deadline, "the program never got ready"
        time.sleep(0.02)
    return proc, report


def finish_program(proc, report):
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, decode(err)
    assert decode(err) == "", decode(err)
    with open(report) as f:
        return json.load(f)


def test_fake_gpu_attach_flushes_on_detach(spyc, fake_cuda, any_python,
                                           tmp_path):
    """Attach mode, with a CUPTI that hands over only full buffers by
    itself: the kernels spyc reports come from the agent's flushes (every
    200 ms, and when spyc stops).  Afterwards the agent is quiet (every
    activity kind disabled) and the program ends as it would have."""
    proc, report = start_program(tmp_path, any_python, 4)
    out = tmp_path / "out.json"
    try:
        res = run(spyc, ["record", "--gpu", "--rate", "200", "--duration",
                         "1", "-o", out, "--pid", proc.pid])
        assert_running(proc.pid)
    finally:
        launched = finish_program(proc, report)
    assert res.returncode == 0, res.describe()
    rows = gpu_summary(res)
    assert "gemm_kernel" in rows, res.describe()
    calls = rows["gemm_kernel"][0]
    # About a second of a 4 s run's launches.
    assert 50 <= calls < launched["gemm_kernel"], (calls, launched)
    assert " 0 records lost" in res.stderr, res.describe()
    assert launched["enabled_kinds"] == 0, launched


def test_fake_gpu_attach_again(spyc, fake_cuda, any_python, tmp_path):
    """Attach mode, three times to one program: a spyc that comes while
    another one's session goes on gets the CPU profile and says why; one
    that comes after the first has stopped gets the GPU's work of its own
    seconds, as the first did; afterwards the agent is quiet."""
    proc, report = start_program(tmp_path, any_python, 8)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    try:
        a = spyc.popen(["record", "--gpu", "--rate", "200", "--duration",
                        "3", "-o", first, "--pid", proc.pid],
                       env=target_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
        # The first spyc's session has begun once its agent is mapped.
        deadline = time.time() + 60
        while a.poll() is None and time.time() < deadline:
            with open("/proc/%d/maps" % proc.pid) as f:
                if "spyc-agent" in f.read():
                    break
            time.sleep(0.05)
        time.sleep(0.3)
        assert a.poll() is None, decode(a.communicate()[1])
        during = run(spyc, ["record", "--gpu", "--duration", "0.3", "-o",
                            tmp_path / "during.json", "--pid", proc.pid])
        a_err = decode(a.communicate(timeout=60)[1])
        after = run(spyc, ["record", "--gpu", "--rate", "200", "--duration",
                           "1", "-o", second, "--pid", proc.pid])
        assert_running(proc.pid)
    finally:
        launched = finish_program(proc, report)
    assert a.returncode == 0, a_err
    assert during.returncode == 0, during.describe()
    assert "the agent already reports to another spyc (already-attached" \
        in during.stderr, during.describe()
    assert after.returncode == 0, after.describe()
    assert "already" not in after.stderr, after.describe()
    calls = [gpu_summary(SpycResult([], 0, "", a_err))["gemm_kernel"][0],
             gpu_summary(after)["gemm_kernel"][0]]
    # Each about its own seconds of an 8 s run's launches.
    assert min(calls) >= 50 and sum(calls) < launched["gemm_kernel"], (
        calls, launched)
    for err in (a_err, after.stderr):
        assert " 0 records lost" in err, err
    assert launched["enabled_kinds"] == 0, launched


def test_fake_gpu_chrome_and_folded(spyc, fake_cuda, any_python, tmp_path):
    """The same run as Chrome trace and folded stacks: each launch's CUDA
    call on its thread's API row with an arrow to its kernel or copy, and
    folded GPU stacks ending in the kernel, weighted by its microseconds."""
    program = write_program(tmp_path)
    report = str(tmp_path / "launched.json")
    trace = tmp_path / "out.trace.json"
    res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", trace, "--",
                     any_python.path, program, FAKE, "launch", "1", report])
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        launched = json.load(f)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    api = [e for e in events if e["ph"] == "X" and e.get("cat") == "gpu" and
           e["tid"] >= 1e9]
    names = sorted(set(e["name"] for e in api))
    assert names == ["cudaLaunchKernel", "cudaMemcpyAsync"], names
    assert sum(e["name"] == "cudaLaunchKernel" for e in api) == \
        launched["gemm_kernel"]
    starts = set((e["pid"], e["tid"], e["ts"]) for e in events
                 if e["ph"] == "X")
    flows = {}
    for e in events:
        if e["ph"] in ("s", "f"):
            assert (e["pid"], e["tid"], e["ts"]) in starts, e
            flows.setdefault(e["id"], []).append(e["ph"])
    assert len(flows) == launched["gemm_kernel"] + launched["copies"]
    assert all(v == ["s", "f"] for v in flows.values())

    folded = tmp_path / "out.txt"
    res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", folded, "--",
                     any_python.path, program, FAKE, "launch", "1", report])
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        launched = json.load(f)
    gemm_us = 0
    for line in folded.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        if stack.endswith(";gemm_kernel"):
            assert stack.startswith("[GPU time"), line
            gemm_us += int(weight)
    assert gemm_us == 200 * launched["gemm_kernel"]


def test_fake_gpu_html(spyc, fake_cuda, any_python, tmp_path):
    """An HTML page of a --gpu run holds the GPU time by the launching
    Python stack beside the CPU samples: every kernel's nanoseconds as the
    fake CUPTI made them (200 us each), under the line that launched it;
    in a browser, the page's GPU profile shows the same."""
    program = write_program(tmp_path)
    report = str(tmp_path / "launched.json")
    out = tmp_path / "out.html"
    res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", out, "--",
                     any_python.path, program, FAKE, "launch", "1", report])
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        launched = json.load(f)
    data = html_data(str(out))
    assert data["stacks"] and data["gpu"]["stacks"], data.keys()
    gemm_ns = 0
    gemm_line = line_of(PROGRAM, "# GEMM LINE")
    for _, ns, ids in data["gpu"]["stacks"]:
        frames = [data["frames"][i] for i in ids]
        if frames[-1][0] == "gemm_kernel":
            assert frames[0][0].startswith("[GPU time"), frames
            gemm_ns += ns
            python = [f for f in frames if f[1]]
            if python:
                assert python[-1][:1] == ["forward"], frames
                assert python[-1][2] == gemm_line, frames
    assert gemm_ns == 200000 * launched["gemm_kernel"]
    check_gpu_rows(data, launched)
    with browser.shown(out) as page:
        page.select("profile", "gpu")
        rows = page.evaluate("""Array.from(document.querySelector(
            '#table tbody').rows).map(function (r) {
            return Array.from(r.cells).map(function (c) {
              return c.textContent; }); })""")
        own = dict((r[0], r[2]) for r in rows)
        assert own["gemm_kernel"] == "%.3f ms" % (gemm_ns / 1e6), rows
        assert page.evaluate("spyc.root().n") == sum(
            s[1] for s in data["gpu"]["stacks"])
        # The third profile: the GPU's idle time by Python stack.
        idle_ns = sum(s[1] for s in data["gpu"]["idle"]["stacks"])
        assert idle_ns > 0, data["gpu"]["idle"]
        page.select("profile", "idle")
        assert page.evaluate("spyc.root().n") == idle_ns
        assert page.errors() == []
    # The rows: a click on the first GEMM shows the kernel's share of the
    # GPU time in the GPU profile, with the CPU profile chosen before.
    with browser.shown(out) as page:
        labels = page.evaluate("""Array.from(document.querySelectorAll(
            '#gpu-rows .gl')).map(function (l) { return l.textContent; })""")
        assert labels == ["GPU 0, stream 3", "GPU 0, stream 7"], labels
        first = [r for r in data["gpu"]["rows"] if r["stream"] == 7][0][
            "spans"][0]
        box = page.evaluate("""(function () {
            var c = document.querySelectorAll('#gpu-rows canvas')[1];
            c.scrollIntoView({block: 'center'});
            var r = c.getBoundingClientRect();
            return [r.left, r.top, r.width, r.height]; })()""")
        x = box[0] + (first[0] + first[1] / 2) / data["gpu"]["span_s"] * \
            box[2]
        page.click(x, box[1] + box[3] / 2)
        assert page.evaluate("document.getElementById('profile').value") \
            == "gpu"
        total = sum(s[1] for s in data["gpu"]["stacks"])
        assert page.evaluate(
            "document.getElementById('matched').textContent") == \
            "Matched: %.1f%%" % (100.0 * gemm_ns / total)
        assert "gemm_kernel" in page.evaluate(
            "document.getElementById('gpu-summary').textContent")
        assert page.errors() == []


def test_fake_gpu_merged_html(spyc, fake_cuda, any_python, tmp_path):
    """spyc merge -o all.html of two --gpu runs (as of two MPI ranks): the
    page's GPU profile puts each run's GPU time under its process, each
    the time of the kernels and copies its program made; its rows are
    each run's streams, named by its process; in a browser, the GPU
    profile's first level is the two processes with their times."""
    program = write_program(tmp_path)
    runs = []
    for i, seconds in enumerate(("0.5", "0.3")):
        report = str(tmp_path / ("launched%d.json" % i))
        out = str(tmp_path / ("run%d.json" % i))
        res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", out, "--",
                         any_python.path, program, FAKE, "launch", seconds,
                         report])
        assert res.returncode == 0, res.describe()
        with open(report) as f:
            launched = json.load(f)
        with open(out) as f:
            pid = json.load(f)["spyc_process"]["pid"]
        runs.append((out, "pid %d" % pid, launched))
    page = str(tmp_path / "all.html")
    res = spyc.run(["merge", runs[0][0], runs[1][0], "-o", page])
    res.assert_ok()
    data = html_data(page)
    g = data["gpu"]
    assert data["processes"] == [r[1] for r in runs], data["processes"]
    by_process = {}
    for _, ns, ids in g["stacks"]:
        root = data["frames"][ids[0]][0]
        by_process[root] = by_process.get(root, 0) + ns
    want = dict((label, 200000 * launched["gemm_kernel"] +
                 100000 * launched["copies"]) for _, label, launched in runs)
    assert by_process == want, (by_process, want)
    for k, (_, label, launched) in enumerate(runs):
        rows = [r for r in g["rows"] if r["process"] == k]
        check_gpu_rows(dict(data, gpu=dict(g, rows=rows)), launched,
                       summary=False)
    # merge --gpu: the imbalance of the GPU time, each process's what its
    # program made, forward()'s its GEMMs', the longer run the slowest.
    res = spyc.run(["merge", "--gpu", "--json", "--top", "0", runs[0][0],
                    runs[1][0]])
    res.assert_ok()
    doc = json.loads(res.stdout)
    assert doc["time"] == "gpu" and doc["unit"] == "seconds", doc
    assert [p["label"] for p in doc["processes"]] == [r[1] for r in runs]
    for p, (_, label, _) in zip(doc["processes"], runs):
        assert abs(p["total"] - want[label] / 1e9) < 1e-6, (p, want)
    forward = [f for f in doc["functions"] if f["name"] == "forward"]
    assert len(forward) == 1, [f["name"] for f in doc["functions"]]
    # (Launches before spyc handed the agent its frames' layout go on the
    # nearest CPU sample's stack, which may be another function's.)
    assert forward[0]["total"]["values"] == pytest.approx(
        [200e-6 * launched["gemm_kernel"] for _, _, launched in runs],
        abs=200e-6 * 10), forward[0]
    assert forward[0]["total"]["slowest"] == 0, forward[0]
    with browser.shown(page) as pg:
        labels = pg.evaluate("""Array.from(document.querySelectorAll(
            '#gpu-rows .gl')).map(function (l) { return l.textContent; })""")
        assert labels == ["%s: GPU 0, stream %d" % (label, stream)
                          for _, label, _ in runs for stream in (3, 7)], labels
        pg.select("profile", "gpu")
        kids = pg.evaluate("""Array.from(spyc.root().kids.values()).map(
            function (k) { return [k.name, k.n]; })""")
        assert dict(kids) == want, kids
        assert pg.errors() == []


def check_gpu_rows(data, launched, summary=True):
    """The page's GPU rows: the copies on stream 3 and the GEMMs on stream
    7 (the streams the program chose), each one the program made, for the
    time the fake CUPTI gave it (100 us a copy, 200 us a GEMM), one after
    another within the time the rows cover; and the GPU summary (a page of
    one run's, not a merged one's)."""
    g = data["gpu"]
    rows = dict((r["stream"], r) for r in g["rows"])
    assert sorted(rows) == [3, 7], g["rows"]
    for stream, name, count, seconds in (
            (3, "[memcpy HtoD]", launched["copies"], 100e-6),
            (7, "gemm_kernel", launched["gemm_kernel"], 200e-6)):
        r = rows[stream]
        assert r["device"] == 0 and r["count"] == count == len(r["spans"]), (
            stream, r["count"], count)
        assert r["busy_ns"] == round(count * seconds * 1e9), r["busy_ns"]
        end = -1.0
        for start, dur, frame in r["spans"]:
            assert data["frames"][frame][0] == name, data["frames"][frame]
            assert abs(dur - seconds) < 1e-9, dur
            assert start >= end - 1e-9 and start + dur <= g["span_s"], (
                start, end, g["span_s"])
            end = start + dur
    if summary:
        assert "gemm_kernel" in g["summary"], g["summary"]
    else:
        assert "summary" not in g, g["summary"]


def test_fake_gpu_idle(spyc, fake_cuda, any_python, tmp_path):
    """GPU idle time by Python stack: the device's idle time is the time
    sampled from its first work less its GEMMs' (the program's count,
    5 ms each), all of it in the profile of idle time, none while the
    program had not used CUDA yet (before_cuda()); host_work(), where the
    GPU has nothing to do, holds the time the program spent in it, within
    a sampling period at each of its ends; the summary puts host_work()
    first; report --gpu-idle reads the same."""
    program = tmp_path / "idle.py"
    program.write_text(IDLE_PROGRAM)
    report = str(tmp_path / "done.json")
    out = str(tmp_path / "out.json")
    res = run(spyc, ["record", "--gpu", "--rate", "500", "-o", out, "--",
                     any_python.path, str(program), FAKE, "launch", "1.5",
                     report])
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        done = json.load(f)
    assert done["rounds"] >= 10, done
    with open(out) as f:
        doc = json.load(f)
    g = doc["spyc_gpu"]
    busy = 0.005 * done["gemm_kernel"]
    assert abs(g["idle_s"] - (g["idle_window_s"] - busy)) < 1e-6, (g, busy)
    idle = [p for p in doc["profiles"]
            if p["name"] == "GPU idle by Python stack"]
    assert len(idle) == 1, [p["name"] for p in doc["profiles"]]
    assert abs(sum(idle[0]["weights"]) - g["idle_s"]) < 1e-6
    frames = doc["shared"]["frames"]
    by_leaf = {}
    for sample, w in zip(idle[0]["samples"], idle[0]["weights"]):
        leaf = frames[sample[-1]]["name"]
        by_leaf[leaf] = by_leaf.get(leaf, 0.0) + w
    assert "before_cuda" not in by_leaf, by_leaf
    slack = done["rounds"] * IDLE_PERIOD_S
    assert done["host_s"] - slack <= by_leaf.get("host_work", 0) <= \
        done["host_s"] + slack, (by_leaf, done)
    # The GPU ran the GEMMs while wait_gpu() waited: it left the GPU
    # idle only for the half millisecond it waited beyond them.
    assert by_leaf.get("wait_gpu", 0) <= done["rounds"] * (
        0.0005 + IDLE_PERIOD_S), (by_leaf, done)
    m = re.search(r"GPU idle ([\d.]+)% of the ", res.stderr)
    assert m and abs(float(m.group(1)) - 100 * g["idle_s"] /
                     g["idle_window_s"]) < 0.051, res.describe()
    lines = res.stderr[res.stderr.index("while the GPU was idle:"):]
    assert re.search(r"^\s+[\d.]+%\s+\S+\s+host_work ",
                     lines.splitlines()[1]), lines
    rep = spyc.run(["report", "--gpu-idle", "--json", out])
    rep.assert_ok()
    assert abs(json.loads(rep.stdout)["total"] - g["idle_s"]) < 1e-6


# What a page draws one by one, and its bins beyond (src/out/html.c).
PAGE_SPANS_MAX = 50000
PAGE_BINS = 1000


def test_fake_gpu_ring_overflow(spyc, fake_cuda, any_python, tmp_path):
    """A burst of 300000 launches at the end, far more than the ring holds
    at once: what does not fit is counted as lost, the rest is reported,
    and spyc and the program finish as they should.  The HTML page of so
    many has every kernel and copy kept on its stream's row, which adds
    up to the time of its kernels and copies, one by one or, when the
    ring kept more than the page draws so, in bins."""
    program = write_program(tmp_path)
    report = str(tmp_path / "launched.json")
    out = tmp_path / "out.html"
    res = run(spyc, ["record", "--gpu", "--rate", "100", "-o", out, "--",
                     any_python.path, program, FAKE, "launch", "0.2", report,
                     "300000"], timeout=300)
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        launched = json.load(f)
    m = re.search(r"GPU activities \(CUPTI\): (\d+) kernels, (\d+) copies, "
                  r"0 memsets, (\d+) records lost", res.stderr)
    assert m, res.describe()
    kernels, lost = int(m.group(1)), int(m.group(3))
    # Each launch is two records: its API call and its kernel.
    assert kernels + lost >= launched["gemm_kernel"] + launched["flood"], (
        kernels, lost, launched)
    assert kernels <= launched["gemm_kernel"] + launched["flood"]
    g = html_data(str(out))["gpu"]
    total = sum(r["count"] for r in g["rows"])
    assert total == kernels + int(re.search(
        r"(\d+) copies", res.stderr).group(1)), g["rows"]
    for r in g["rows"]:
        busy_s = r["busy_ns"] / 1e9
        if total <= PAGE_SPANS_MAX:
            assert len(r["spans"]) == r["count"], sorted(r)
            busy = sum(dur for _, dur, _ in r["spans"])
            assert abs(busy - busy_s) < 1e-9 * r["count"], (busy, busy_s)
            continue
        # More than the page draws one by one (how many the ring kept
        # depends on the machine's speed): each row by how busy it was
        # in each of PAGE_BINS bins, in per mille, rounded down.
        assert "spans" not in r and len(r["bins"]) == PAGE_BINS, sorted(r)
        width = g["span_s"] / PAGE_BINS
        binned = sum(r["bins"]) / 1000.0 * width
        assert binned <= busy_s + 1e-9 * r["count"], (binned, busy_s)
        if max(r["bins"]) < 1000:
            assert binned >= busy_s - width - 1e-9 * r["count"], (
                binned, busy_s)


EXIT_MIDWAY = PROLOGUE + r"""
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
cupti.fake_flood(100000)
# CUPTI hands the agent its records on another thread while this one
# leaves at once, without the exit handlers that would flush.
threading.Thread(target=cupti.cuptiActivityFlushAll, args=(0,)).start()
os._exit(7)
"""


def test_fake_gpu_target_exits_mid_transfer(spyc, fake_cuda, any_python,
                                            tmp_path):
    """The program exits while the agent is writing records: spyc keeps
    what arrived, writes the profile and exits with the program's status."""
    program = tmp_path / "exit.py"
    program.write_text(EXIT_MIDWAY)
    out = tmp_path / "out.json"
    res = run(spyc, ["record", "--gpu", "--rate", "100", "-o", out, "--",
                     any_python.path, program, FAKE])
    assert res.returncode == 7, res.describe()
    assert json.load(open(out))["profiles"]
    assert len([l for l in res.stderr_lines
                if l.startswith("spyc: ") and "--gpu" in l or
                "GPU activities" in l]) == 1, res.describe()


# Launches from a known, deep Python stack (a generator, a method called
# through __call__, a list comprehension, which is a frame of its own up
# to 3.11), and from a thread with no Python.  The program keeps its own
# view of the stack at the launch (traceback), to compare with spyc's.
STACKS_PROGRAM = PROLOGUE + r"""
report = sys.argv[2]
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
seen = {}
counts = {"gemm_kernel": 0, "native_kernel": 0}

class Model(object):
    def __call__(self, n):
        return self.forward(n)

    def forward(self, n):
        return [self.layer(i) for i in range(n)]

    def layer(self, i):
        cupti.fake_launch(b"gemm_kernel", 100000, 7); here = traceback.extract_stack()
        counts["gemm_kernel"] += 1
        if "truth" not in seen:
            seen["truth"] = [[f[2], f[1]] for f in here]
        return i

def batches(model):
    while True:
        yield model(2)

def train(seconds):
    it = batches(Model())
    t = time.time()
    while time.time() - t < seconds:
        next(it)
        cupti.fake_launch_native(b"native_kernel", 50000, 9)
        counts["native_kernel"] += 1
        s = time.time()
        while time.time() - s < 0.001:
            pass

train(float(sys.argv[3]))
with open(report, "w") as f:
    json.dump({"truth": seen["truth"], "counts": counts}, f)
"""

def seconds(text):
    """Seconds in a duration the summary wrote: "1.5s", "12.3ms"..."""
    m = re.match(r"^([\d.]+)(ns|us|ms|s)$", text)
    assert m, text
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3,
                                "s": 1.0}[m.group(2)]


FOLDED_FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def folded_gpu_stacks(text):
    """{(root, tuple of (name, line) frames, leaf): weight} of the GPU
    stacks of a folded --gpu profile."""
    out = {}
    for line in text.splitlines():
        stack, weight = line.rsplit(" ", 1)
        parts = stack.split(";")
        if not parts[0].startswith("[GPU time"):
            continue
        frames = []
        for p in parts[1:-1]:
            m = FOLDED_FRAME.match(p)
            assert m, p
            frames.append((m.group(1), int(m.group(3))))
        key = (parts[0], tuple(frames), parts[-1])
        out[key] = out.get(key, 0) + int(weight)
    return out


def test_fake_gpu_launch_stacks(spyc, fake_cuda, python, tmp_path):
    """Each kernel goes on the Python stack that launched it, as the agent
    copied it in the program at the launch: the same frames and lines as
    the program's own traceback there (but the innermost line, which is
    the launch's), on every version; a kernel launched by a thread with
    no Python falls back, and says so."""
    program = tmp_path / "stacks.py"
    program.write_text(STACKS_PROGRAM)
    launch_line = line_of(STACKS_PROGRAM, "fake_launch(b\"gemm_kernel\"")
    report = str(tmp_path / "report.json")
    out = tmp_path / "out.txt"
    res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", out, "--",
                     python.path, program, FAKE, report, "1.5"])
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        got = json.load(f)
    truth = [tuple(f) for f in got["truth"]]
    truth[-1] = (truth[-1][0], launch_line)
    stacks = folded_gpu_stacks(out.read_text())
    exact = dict((k, w) for k, w in stacks.items()
                 if k[0] == "[GPU time, by the Python stack of the launch]")
    gemm = dict((k, w) for k, w in exact.items() if k[2] == "gemm_kernel")
    if python.free_threaded and tuple(python.version_info[:2]) >= (3, 14):
        # Its frames may run a thread's own copy of the bytecode, which
        # the agent does not follow: every launch by the nearest sample.
        # (3.13t has no such copies: exact, as with the GIL.)
        assert not exact, exact
        assert "launch stacks: off (a free-threaded CPython): by the " \
            "nearest CPU sample instead" in res.stderr, res.describe()
        assert sum(w for k, w in stacks.items()
                   if k[2] == "gemm_kernel") == \
            100 * got["counts"]["gemm_kernel"]
        return
    assert gemm, "no kernel on its launch's stack\n" + res.describe()
    # (Launches drained once the program is gone cannot be named: said.)
    assert "launch stacks: off" not in res.stderr, res.describe()
    for (root, frames, leaf), weight in gemm.items():
        # spyc names methods by their qualified name where it can.
        names = [(n.rsplit(".", 1)[-1], l) for n, l in frames]
        assert names == truth, (frames, truth)
    # Launches before spyc knew the interpreter go by the nearest sample:
    # most go by their own stack.
    exact_us = sum(gemm.values())
    all_us = sum(w for k, w in stacks.items() if k[2] == "gemm_kernel")
    assert exact_us >= 0.5 * all_us, (exact_us, all_us)
    assert all_us == 100 * got["counts"]["gemm_kernel"]
    # No Python on the launching thread: no stack, no sample either.
    native = [k for k in stacks if k[2] == "native_kernel"]
    assert native and all(
        k[0] == "[GPU time, no CPU sample of the launching thread]"
        for k in native), native
    assert re.search(r"attribution: \d+ activities: [1-9]\d* by the Python "
                     r"stack of their launch", res.stderr), res.describe()
    assert "Model.layer" in res.stderr or "layer (" in res.stderr


# A training step as PyTorch runs one: a forward kernel launched from
# Python, then a backward pass whose kernels a thread with no Python
# launches while the step's thread waits in autograd's engine (a module
# at torch/autograd/graph.py, as in PyTorch, in the directory argv[5]).
ENGINE = r"""
def _engine_run_backward(cupti):
    return cupti.fake_engine_pass(b"backward_kernel", 200000, 7, 4, 2000)
"""
BACKWARD_PROGRAM = PROLOGUE + START + r"""
sys.path.insert(0, sys.argv[5])
from torch.autograd import graph
counts = {"forward_kernel": 0, "backward_kernel": 0}

def step():
    cupti.fake_launch(b"forward_kernel", 100000, 7)
    counts["forward_kernel"] += 1
    counts["backward_kernel"] += graph._engine_run_backward(cupti)  # BACKWARD
    t = time.time()
    while time.time() - t < 0.002:
        pass

t0 = time.time()
while time.time() - t0 < seconds:
    step()
with open(report, "w") as f:
    json.dump(counts, f)
"""


def engine_program(tmp_path, engine, text):
    """A program (text) and autograd's engine module as PyTorch has it,
    torch/autograd/graph.py (engine) under tmp_path/lib: the program's
    path, and where its report and spyc's output go."""
    where = tmp_path / "lib" / "torch" / "autograd"
    where.mkdir(parents=True)
    for d in (where.parent, where):
        (d / "__init__.py").write_text("")
    (where / "graph.py").write_text(engine)
    program = tmp_path / "train.py"
    program.write_text(text)
    return program, tmp_path / "report.json", tmp_path / "out.txt"


@pytest.mark.parametrize("idle", [False, True], ids=["busy-only", "idle"])
def test_fake_gpu_backward_pass(spyc, fake_cuda, any_python, tmp_path, idle):
    """Kernels that a thread with no Python launches while the step's
    thread waits in autograd's engine (PyTorch's backward pass) go on
    the waiting thread's stack, under the line that called backward, under
    a root that says so: all but the few launched far from any sample
    of the waiting thread (none at 200 Hz here), whether or not idle
    threads are in the CPU profile."""
    program, report, out = engine_program(tmp_path, ENGINE, BACKWARD_PROGRAM)
    res = run(spyc, ["record", "--gpu", "--rate", "200", "--format",
                     "folded", "-o", out] + (["--idle"] if idle else []) +
              ["--", any_python.path, program, FAKE, "launch", "2", report,
               tmp_path / "lib"])
    assert res.returncode == 0, res.describe()
    counts = json.loads(report.read_text())
    stacks = folded_gpu_stacks(out.read_text())
    backward = dict((k, w) for k, w in stacks.items()
                    if k[2] == "backward_kernel")
    # 200 us each: every one launched is in the profile.
    assert sum(backward.values()) == 200 * counts["backward_kernel"]
    call = line_of(BACKWARD_PROGRAM, "# BACKWARD")
    engine_line = line_of(ENGINE, "fake_engine_pass")
    waiting = "[GPU time, launched for the thread waiting in autograd's " \
        "engine]"
    placed = 0
    for (root, frames, leaf), weight in backward.items():
        if root != waiting:
            assert root == "[GPU time, no CPU sample of the launching " \
                "thread]", root
            continue
        names = [(n, l) for n, l in frames]
        assert names[-2:] == [("step", call),
                              ("_engine_run_backward", engine_line)], names
        placed += weight
    assert placed >= 0.9 * 200 * counts["backward_kernel"], (
        placed, backward, res.stderr)
    # The summary's lines are innermost frames: the engine's call.
    assert re.search(r"\d+\.\d+%% +\S+ +_engine_run_backward "
                     r"\(\S*graph.py:%d\)" % engine_line,
                     res.stderr), res.describe()
    m = re.search(r"(\d+) by the stack of the thread waiting in autograd's "
                  r"engine", res.stderr)
    assert m and int(m.group(1)) * 200 == placed, res.describe()
    # Launches from the step's own thread keep their own stacks.
    forward = [k for k in stacks if k[2] == "forward_kernel"]
    assert forward and all(k[0] != waiting for k in forward), forward
    if not idle:
        return
    # With idle threads sampled, the GPU's idle time goes to the step's
    # thread; none of it waits for a sample of the engine's thread, which
    # never comes (as a second launching thread it would have half).
    m = re.search(r"GPU idle [\d.]+% of the \S+ sampled from its first "
                  r"work \((\S+)\)"
                  r"(?:, (\S+) of it while no launching thread was "
                  r"sampled)?", res.stderr)
    assert m, res.describe()
    idle, unsampled = seconds(m.group(1)), seconds(m.group(2) or "0s")
    assert idle > 0 and unsampled <= 0.1 * idle, res.describe()


# The same step with NVTX ranges, through NVIDIA's own loader: the step's
# thread pushes "forward" and "backward" around its work, and the
# engine's thread (no Python) pushes a range of its own around each
# launch, as torch.autograd.profiler.emit_nvtx has PyTorch do.
ENGINE_RANGED = r"""
def _engine_run_backward(cupti):
    return cupti.fake_engine_pass_ranged(b"backward_kernel", 200000, 7, 4,
                                         2000, b"MmBackward0, seq = 7")
"""
BACKWARD_NVTX_PROGRAM = PROLOGUE + r"""
nvtx = ctypes.CDLL(os.path.join(fake, "libnvtx.so"), mode=ctypes.RTLD_GLOBAL)
nvtx.nvtxRangePushA.argtypes = [ctypes.c_char_p]
cupti.fake_engine_pass_ranged.argtypes = cupti.fake_launch.argtypes + [
    ctypes.c_int, ctypes.c_uint, ctypes.c_char_p]
""" + START + r"""
sys.path.insert(0, sys.argv[5])
from torch.autograd import graph
counts = {"forward_kernel": 0, "backward_kernel": 0}

def step():
    nvtx.nvtxRangePushA(b"forward")
    cupti.fake_launch(b"forward_kernel", 100000, 7)  # FORWARD
    nvtx.nvtxRangePop()
    counts["forward_kernel"] += 1
    nvtx.nvtxRangePushA(b"backward")
    counts["backward_kernel"] += graph._engine_run_backward(cupti)  # BACKWARD
    nvtx.nvtxRangePop()
    t = time.time()
    while time.time() - t < 0.002:
        pass

t0 = time.time()
while time.time() - t0 < seconds:
    step()
with open(report, "w") as f:
    json.dump(counts, f)
"""


def test_fake_gpu_backward_pass_nvtx(spyc, fake_cuda, any_python, tmp_path):
    """NVTX ranges around a backward pass: kernels that the engine's
    thread (no Python) launches go on the waiting thread's stack, then
    under the ranges open on the waiting thread as it was sampled
    (backward), then under the ranges the engine's thread had open at the
    launch (its op's); the forward kernel under its own range."""
    program, report, out = engine_program(tmp_path, ENGINE_RANGED,
                                          BACKWARD_NVTX_PROGRAM)
    engine = tmp_path / "lib" / "torch" / "autograd"
    res = run(spyc, ["record", "--gpu", "--rate", "200", "--format",
                     "folded", "-o", out, "--", any_python.path, program,
                     FAKE, "launch", "2", report, tmp_path / "lib"])
    assert res.returncode == 0, res.describe()
    counts = json.loads(report.read_text())
    call = line_of(BACKWARD_NVTX_PROGRAM, "# BACKWARD")
    forward_line = line_of(BACKWARD_NVTX_PROGRAM, "# FORWARD")
    engine_line = line_of(ENGINE_RANGED, "fake_engine_pass_ranged")
    waiting = "[GPU time, launched for the thread waiting in autograd's " \
        "engine]"
    placed = total = forward = 0
    for line in out.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        parts = stack.split(";")
        if not parts[0].startswith("[GPU time"):
            continue
        weight = int(weight)
        if parts[-1] == "forward_kernel":
            assert parts[-3:-1] == ["step (%s:%d)" % (program, forward_line),
                                    "[NVTX] forward"], parts
            forward += weight
            continue
        assert parts[-1] == "backward_kernel", parts
        # The engine's own range, always, right above its kernel.
        assert parts[-2] == "[NVTX] MmBackward0", parts
        total += weight
        if parts[0] != waiting:
            continue
        assert parts[-5:-2] == [
            "step (%s:%d)" % (program, call),
            "_engine_run_backward (%s:%d)" % (engine / "graph.py",
                                             engine_line),
            "[NVTX] backward"], parts
        placed += weight
    assert forward == 100 * counts["forward_kernel"], res.describe()
    assert total == 200 * counts["backward_kernel"], res.describe()
    assert placed >= 0.9 * total, (placed, total, res.stderr)
    # The summary: each range's GPU time, the engine's inside backward's.
    assert re.search(r"NVTX ranges: \d+ pushed", res.stderr), res.describe()


# A child the program starts before its own work: it inherits the
# environment that has the CUDA driver load spyc's agent, and launches
# kernels of its own (a DataLoader worker, a compile worker).
CHILD = PROLOGUE + r"""
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
for _ in range(20):
    cupti.fake_launch(b"child_kernel", 100000, 5)
"""


def test_fake_gpu_children_not_mixed_in(spyc, fake_cuda, any_python,
                                        tmp_path):
    """Launch mode: a child of the target inherits CUDA_INJECTION64_PATH
    and the channel's name, so the driver starts an agent in it too.
    Only the launched process's agent reports: none of the child's
    kernels is in the profile (its correlation ids would be mixed with
    the target's), every kernel of the target is, and the summary says
    that a child used CUDA without being profiled."""
    child = tmp_path / "worker.py"
    child.write_text(CHILD)
    program = tmp_path / "train.py"
    program.write_text(PROGRAM.replace(
        "launched = {", "import subprocess\n"
        "subprocess.run([sys.executable, %r, fake], check=True)\n"
        "launched = {" % str(child), 1))
    out = tmp_path / "out.json"
    report = str(tmp_path / "launched.json")
    res = run(spyc, ["record", "--gpu", "--rate", "200", "-o", out, "--",
                     any_python.path, str(program), fake_cuda, "launch",
                     "1.5", report])
    with open(report) as f:
        launched = json.load(f)
    doc = check_profile(res, out, launched)
    assert "child_kernel" not in gpu_summary(res), res.describe()
    assert not any(f["name"] == "child_kernel"
                   for f in doc["shared"]["frames"]), res.describe()
    assert ("spyc: notice: --gpu: 1 other process (the target's children"
            in res.stderr), res.describe()
    assert doc["spyc_gpu"]["other_processes_not_profiled"] == 1, (
        doc["spyc_gpu"])
