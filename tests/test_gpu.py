# SPDX-License-Identifier: MIT
"""`spyc record --gpu` where there is no GPU work: the CPU profile is
written as without --gpu, spyc says in one line why there is no GPU
profile, and exits with the program's own status.  A spyc with no agent
refuses --gpu before it launches anything.  What needs a GPU is in
tests/gpu/.  The converters are unit-tested (tests/unit/test-gpuprof.c).
"""

import glob
import json
import os
import subprocess

import pytest

from conftest import REPO, target_env, decode

AGENT = os.path.join(REPO, "spyc-agent.so")

BUSY = """\
import sys, time
def spin():
    t = time.time()
    while time.time() - t < 0.4:
        pass
spin()
sys.exit(3)
"""

# Calls the agent's entry point as the CUDA driver would, so that the
# agent runs (and reports what it finds: here no driver, or no CUPTI)
# in a process with no GPU.
FAKE_DRIVER = """\
import ctypes, os, time
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
t = time.time()
while time.time() - t < 0.3:
    pass
"""

needs_agent = pytest.mark.skipif(
    not os.path.exists(AGENT),
    reason="spyc was built without the GPU agent (no CUPTI headers)")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_record(spyc, args, env=None, timeout=60):
    """(SpycResult, spyc's pid), so that its channel file can be looked for."""
    proc = spyc.popen(["record"] + args, env=env or target_env(),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("spyc record did not finish: %s" % decode(err))
    from conftest import SpycResult
    return SpycResult(["spyc", "record"] + [str(a) for a in args],
                      proc.returncode, decode(out), decode(err)), proc.pid


def channel_files(spyc_pid):
    return glob.glob("/dev/shm/spyc-gpu-%d-*" % spyc_pid) + \
        glob.glob("/tmp/spyc-gpu-%d-*" % spyc_pid)


@needs_agent
def test_gpu_no_cuda(spyc, any_python, tmp_path):
    script = write(tmp_path, "busy.py", BUSY)
    out = tmp_path / "out.json"
    res, pid = run_record(spyc, ["--gpu", "-o", out, "--", any_python.path,
                                 script])
    # The program's own exit status, as without --gpu.
    assert res.returncode == 3, res.describe()
    gpu_lines = [l for l in res.stderr_lines if "--gpu" in l]
    assert len(gpu_lines) == 1, res.describe()
    assert gpu_lines[0].startswith("spyc: --gpu: "), res.describe()
    assert "used no CUDA" in gpu_lines[0], res.describe()
    assert "CPU profile only" in gpu_lines[0], res.describe()
    with open(str(out), encoding="utf-8") as f:
        doc = json.load(f)
    names = [fr["name"] for fr in doc["shared"]["frames"]]
    assert "spin" in names
    assert all(p["type"] == "sampled" for p in doc["profiles"])
    assert "spyc_gpu" not in doc
    assert channel_files(pid) == [], "the channel file was left behind"


@needs_agent
def test_gpu_no_cuda_folded_weights_unchanged(spyc, any_python, tmp_path):
    """Without GPU records, folded weights stay sample counts."""
    script = write(tmp_path, "busy.py", BUSY)
    out = tmp_path / "out.txt"
    res, _ = run_record(spyc, ["--gpu", "--rate", "50", "-o", out, "--",
                               any_python.path, script])
    assert res.returncode == 3, res.describe()
    total = sum(int(l.rsplit(" ", 1)[1])
                for l in out.read_text().splitlines())
    # 0.4 s at 50 Hz: about 20 samples, never microseconds.
    assert 0 < total < 1000, out.read_text()


@needs_agent
def test_gpu_agent_status(spyc, any_python, tmp_path):
    """The agent runs but finds no usable CUDA: its own status is said."""
    script = write(tmp_path, "fake_driver.py", FAKE_DRIVER)
    out = tmp_path / "out.json"
    res, pid = run_record(spyc, ["--gpu", "-o", out, "--", any_python.path,
                                 script])
    assert res.returncode == 0, res.describe()
    gpu_lines = [l for l in res.stderr_lines if "--gpu" in l]
    assert len(gpu_lines) == 1, res.describe()
    line = gpu_lines[0]
    assert line.startswith("spyc: --gpu: "), res.describe()
    assert "used no CUDA" not in line, res.describe()
    assert "CPU profile only" in line, res.describe()
    assert out.exists()
    assert channel_files(pid) == []


def test_gpu_refused_without_agent(spyc, any_python, tmp_path):
    marker = tmp_path / "ran"
    script = write(tmp_path, "mark.py",
                   "open(%r, 'w').close()\n" % str(marker))
    env = target_env({"SPYC_AGENT": str(tmp_path / "no-such-agent.so")})
    res = spyc.run(["record", "--gpu", "-o", tmp_path / "out.json", "--",
                    any_python.path, script], env=env)
    res.assert_error(2, "--gpu", "no-such-agent.so")
    assert not marker.exists(), "the program ran although --gpu was refused"


@needs_agent
def test_gpu_attach_no_cuda(spyc, any_python, tmp_path):
    """--gpu --pid: the agent is injected, finds no CUDA, says so; the CPU
    profile is written and the target runs on to its end."""
    script = write(tmp_path, "spin.py", BUSY.replace("0.4", "3.0"))
    target = subprocess.Popen([any_python.path, script], env=target_env())
    try:
        # Let it reach its loop; spyc waits for no particular frame.
        import time
        time.sleep(0.5)
        out = tmp_path / "out.json"
        res, _ = run_record(spyc, ["--gpu", "--pid", target.pid,
                                   "--duration", "0.5", "-o", out])
        assert res.returncode == 0, res.describe()
        gpu_lines = [l for l in res.stderr_lines if "--gpu" in l]
        assert len(gpu_lines) == 1, res.describe()
        assert "no-cuda" in gpu_lines[0], res.describe()
        assert "CPU profile only" in gpu_lines[0], res.describe()
        assert out.exists()
    finally:
        assert target.wait(timeout=30) == 3


def test_gpu_chrome_trace_in_devtools(tmp_path):
    """The Chrome trace of a GPU profile (the converters' unit test writes
    it from records the agent's own ring writer produced: no GPU here)
    loads in Chrome DevTools' trace engine with every CUDA call, kernel
    and copy on its row and an arrow from each recorded launch to what
    it launched."""
    from test_formats import devtools_import
    res = subprocess.run(["make", "tests/build/unit-test-gpuprof"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=600)
    assert res.returncode == 0, decode(res.stdout)[-3000:]
    trace = str(tmp_path / "gpu.trace.json")
    res = subprocess.run([os.path.join(REPO, "tests", "build",
                                       "unit-test-gpuprof")],
                         env=dict(os.environ, SPYC_TEST_GPU_TRACE=trace),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=120)
    assert res.returncode == 0, decode(res.stdout)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    slices = dict(((e["pid"], e["tid"], e["ts"]), e) for e in events
                  if e["ph"] == "X")
    assert all(e["dur"] >= 0 for e in slices.values())
    flows = {}
    for e in events:
        if e["ph"] in ("s", "f"):
            # Each end of an arrow sits at the start of a slice.
            assert (e["pid"], e["tid"], e["ts"]) in slices, e
            flows.setdefault(e["id"], []).append(e["ph"])
    assert flows and all(v == ["s", "f"] for v in flows.values()), flows

    imported, why = devtools_import(trace, tmp_path)
    if imported is None:
        pytest.skip(why)
    rows = dict(((t["pid"], t["name"]), t["names"])
                for t in imported["threads"])
    assert rows[(1, "CUDA API: thread 0x1000 (tid 100)")] == {
        "cudaMemcpyAsync": 1, "cudaLaunchKernel": 3}
    assert rows[(1000000000, "stream 7")]["volta_sgemm_128x64_nn"] == 2
    assert sorted(imported["flows"]) == sorted([
        ["cudaMemcpyAsync", "[memcpy HtoD]"],
        ["cudaLaunchKernel", "volta_sgemm_128x64_nn"],
        ["cudaLaunchKernel", "volta_sgemm_128x64_nn"],
        ["cudaLaunchKernel", "kernel(float*, int)"],
        ["[CUDA runtime call 211]", "unsampled"]])
