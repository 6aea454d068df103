# SPDX-License-Identifier: MIT
"""`spyc record --gpu` on a real GPU: a small PyTorch training loop
(train_small.py) must show its GEMM kernels, on the Python stack of the
line that called the layers (the stack the agent copied at each launch),
with as much GPU time under that line as torch.cuda.Event timing of the
forward passes measures (within 15%), and its host-to-device copies;
in launch and in attach mode.  Skipped, with the reason, where there is
no NVIDIA GPU or no PyTorch with CUDA.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, target_env, newest_python

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train_small.py")
AGENT = os.environ.get("SPYC_AGENT") or os.path.join(REPO, "spyc-agent.so")


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        res = subprocess.run([smi, "-L"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0 and b"GPU" in res.stdout


pytestmark = [
    pytest.mark.skipif(not have_gpu(),
                       reason="no NVIDIA GPU on this machine"),
    pytest.mark.skipif(not os.path.exists(AGENT),
                       reason="spyc was built without the GPU agent"),
]


@pytest.fixture(scope="module")
def torch_py():
    """An interpreter that imports torch with CUDA; the test is skipped
    where there is none."""
    py = torch_python()
    if py is None:
        pytest.skip("no Python with PyTorch and CUDA here "
                    "(set SPYC_TORCH_PYTHON)")
    return py


def torch_python():
    """An interpreter that imports torch with CUDA, else None."""
    candidates = [os.environ.get("SPYC_TORCH_PYTHON"), sys.executable,
                  shutil.which("python3")]
    py = newest_python()
    if py is not None:
        candidates.append(py.path)
    for c in candidates:
        if not c:
            continue
        res = subprocess.run(
            [c, "-c", "import torch; assert torch.cuda.is_available()"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if res.returncode == 0:
            return c
    return None


# The kernel families cuBLAS runs GEMMs with: Hopper's nvjet_* and
# sm90_xmma*, cutlass, and the older *gemm* names.
GEMM_FAMILIES = ("gemm", "xmma", "cutlass", "nvjet")


def marked_line(marker):
    with open(TRAIN) as f:
        for n, line in enumerate(f, 1):
            if "# " + marker in line:
                return n
    raise AssertionError("no %s line in %s" % (marker, TRAIN))


def check_profile(doc, stderr, forward_ms):
    frames = doc["shared"]["frames"]
    meta = doc["spyc_gpu"]
    assert meta["attribution"].startswith("launch-stack")
    assert meta["by_launch_stack"] > 0, stderr
    assert meta["clock"]["aligned"]
    streams = [p for p in doc["profiles"] if p["type"] == "evented"]
    assert streams, "no GPU stream timeline"
    gpu = [p for p in doc["profiles"]
           if p["name"].startswith("GPU time by launching stack")]
    assert len(gpu) == 1
    forward, backward = marked_line("LAYER-CALL"), marked_line("BACKWARD-CALL")
    under = {forward: 0.0, backward: 0.0}
    gemm_forward = gemm_backward = gemm_elsewhere = copies = 0.0
    for sample, weight in zip(gpu[0]["samples"], gpu[0]["weights"]):
        leaf = frames[sample[-1]]["name"].lower()
        lines = set(frames[i].get("line") for i in sample
                    if frames[i].get("file", "").endswith("train_small.py"))
        is_gemm = any(k in leaf for k in GEMM_FAMILIES)
        for line in under:
            if line in lines:
                under[line] += weight
        if forward in lines:
            gemm_forward += weight if is_gemm else 0.0
        elif backward in lines:
            gemm_backward += weight if is_gemm else 0.0
        elif is_gemm:
            gemm_elsewhere += weight
        if leaf == "[memcpy htod]":
            copies += weight
    ratio = under[forward] * 1e3 / forward_ms
    print("forward: %.1f ms by spyc, %.1f ms by torch.cuda.Event (%.3f); "
          "backward GEMMs %.1f ms under backward(), %.1f ms elsewhere" % (
              under[forward] * 1e3, forward_ms, ratio, gemm_backward * 1e3,
              gemm_elsewhere * 1e3))
    assert gemm_forward > 0, (
        "no GEMM attributed to train_small.py:%d\n%s" % (forward, stderr))
    # Every kernel of the forward passes is under the line that ran them.
    assert 0.85 <= ratio <= 1.15, (
        "GPU time under train_small.py:%d: %.1f ms; torch.cuda.Event: "
        "%.1f ms\n%s" % (forward, under[forward] * 1e3, forward_ms, stderr))
    # The backward pass's, launched by autograd's own threads, on the
    # stack of the thread that called backward().
    assert gemm_backward > 0 and gemm_elsewhere <= 0.05 * gemm_backward, (
        "backward GEMMs: %.1f ms under train_small.py:%d, %.1f ms "
        "elsewhere\n%s" % (gemm_backward * 1e3, backward,
                           gemm_elsewhere * 1e3, stderr))
    assert copies > 0, "no host-to-device copy recorded"


def test_torch_training_gemms(spyc, tmp_path, torch_py):
    py = torch_py
    out = tmp_path / "train.json"
    res = spyc.run(["record", "--gpu", "--rate", "500", "-o", out, "--", py,
                    TRAIN, "200"], env=target_env(), timeout=600)
    assert res.returncode == 0, res.describe()
    assert "GPU activities" in res.stderr, res.describe()
    result = json.loads(res.stdout.strip().splitlines()[-1])
    with open(str(out), encoding="utf-8") as f:
        doc = json.load(f)
    check_profile(doc, res.stderr, result["forward_ms"])


def launch_stacks(doc):
    """(frame names, root first; seconds) of the GPU time by launching
    stack."""
    frames = doc["shared"]["frames"]
    gpu = [p for p in doc["profiles"]
           if p["name"].startswith("GPU time by launching stack")][0]
    for sample, weight in zip(gpu["samples"], gpu["weights"]):
        yield [frames[i]["name"] for i in sample], weight


def nvtx_time(doc, name):
    """Seconds of GPU time with the NVTX range name on their stack, and
    of GEMMs with it there, of the launching-stack profile."""
    total = gemms = 0.0
    for names, weight in launch_stacks(doc):
        if "[NVTX] " + name in names:
            total += weight
            if any(k in names[-1].lower() for k in GEMM_FAMILIES):
                gemms += weight
    return total, gemms


def test_torch_nvtx_ranges(spyc, tmp_path, torch_py):
    """torch.cuda.nvtx ranges: the forward passes' GPU time under
    "forward" as torch.cuda.Event measures it (within 15%); the backward
    pass's GEMMs, launched by autograd's threads, under "backward" (the
    ranges of the thread waiting in the engine); every GEMM under
    "step"; the summary's table of ranges."""
    out = tmp_path / "nvtx.json"
    res = spyc.run(["record", "--gpu", "--rate", "500", "-o", out, "--",
                    torch_py, TRAIN, "100", "--nvtx"], env=target_env(),
                   timeout=600)
    assert res.returncode == 0, res.describe()
    result = json.loads(res.stdout.strip().splitlines()[-1])
    with open(str(out), encoding="utf-8") as f:
        doc = json.load(f)
    forward, _ = nvtx_time(doc, "forward")
    _, backward_gemms = nvtx_time(doc, "backward")
    _, step_gemms = nvtx_time(doc, "step")
    print("nvtx: forward %.1f ms (torch.cuda.Event %.1f ms), backward GEMMs "
          "%.1f ms, step GEMMs %.1f ms" % (
              forward * 1e3, result["forward_ms"], backward_gemms * 1e3,
              step_gemms * 1e3))
    assert 0.85 <= forward * 1e3 / result["forward_ms"] <= 1.15, \
        res.describe()
    assert backward_gemms > 0.5 * forward, res.describe()
    assert "NVTX ranges by the GPU time launched inside them" in \
        res.stderr, res.describe()


def test_torch_emit_nvtx(spyc, tmp_path, torch_py):
    """torch.autograd.profiler.emit_nvtx: each op's range, pushed by
    PyTorch's own NVTX (its copy of NVIDIA's loader), forward on the
    step's thread and backward on autograd's threads: GEMMs sit under
    the forward ops' ranges and the backward ops' (*Backward0)."""
    out = tmp_path / "emit.json"
    res = spyc.run(["record", "--gpu", "--rate", "500", "-o", out, "--",
                    torch_py, TRAIN, "50", "--emit-nvtx"], env=target_env(),
                   timeout=600)
    assert res.returncode == 0, res.describe()
    with open(str(out), encoding="utf-8") as f:
        doc = json.load(f)
    forward_op = backward_op = 0.0
    for names, weight in launch_stacks(doc):
        if not any(k in names[-1].lower() for k in GEMM_FAMILIES):
            continue
        ranges = [n for n in names if n.startswith("[NVTX] ")]
        if any("Backward" in n for n in ranges):
            backward_op += weight
        elif any(n.startswith("[NVTX] aten::") for n in ranges):
            forward_op += weight
    print("emit_nvtx: GEMMs %.1f ms under forward ops, %.1f ms under "
          "backward ops" % (forward_op * 1e3, backward_op * 1e3))
    assert forward_op > 0 and backward_op > 0, res.describe()
    # No range is split by its seq or op_id.
    assert not any(", seq = " in f["name"] for f in doc["shared"]["frames"])


def losses(lines):
    """{step: loss} from train_small.py's --progress lines."""
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 4 and parts[0] == "step" and parts[2] == "loss":
            out[int(parts[1])] = float(parts[3])
    return out


def test_torch_training_attach(spyc, tmp_path, torch_py):
    """Attach mode: spyc loads the agent into the running loop (PEP 768
    on 3.14+, else ptrace) once it has printed its first progress line,
    records a few seconds, and the loop goes on to the same losses, step
    by step, as a run without spyc."""
    import threading
    py = torch_py
    steps, every = "800", "20"
    proc = subprocess.Popen([py, TRAIN, steps, "--progress", every],
                            stdout=subprocess.PIPE, env=target_env(),
                            universal_newlines=True)
    lines = []
    started = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            started.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert started.wait(600), "the loop printed no progress line"
        out = tmp_path / "attach.json"
        res = spyc.run(["record", "--gpu", "--rate", "200", "--duration",
                        "5", "-o", out, "--pid", str(proc.pid)],
                       env=target_env(), timeout=120)
        assert res.returncode == 0, res.describe()
        assert "GPU activities" in res.stderr, res.describe()
        assert "agent loaded into pid" in res.stderr, res.describe()
        assert proc.poll() is None, (
            "the loop ended before spyc did: the comparison would not "
            "cover the attached seconds (more steps needed)")
        doc = json.load(open(str(out), encoding="utf-8"))
        assert doc["spyc_gpu"]["by_launch_stack"] > 0, res.stderr
    finally:
        proc.wait(timeout=900)
        reader.join(60)
    assert proc.returncode == 0
    ref = subprocess.run([py, TRAIN, steps, "--progress", every],
                         stdout=subprocess.PIPE, env=target_env(),
                         universal_newlines=True, timeout=900)
    assert ref.returncode == 0
    got, want = losses(lines), losses(ref.stdout.splitlines())
    assert len(want) == int(steps) // int(every), ref.stdout[-2000:]
    assert sorted(got) == sorted(want), "steps printed differ"
    off = [(s, got[s], want[s]) for s in sorted(want)
           if abs(got[s] - want[s]) > 1e-5 * max(abs(want[s]), 1e-12)]
    assert not off, "losses changed under spyc (step, with, without): " \
        "%s" % off[:5]
    assert json.loads(lines[-1])["steps"] == int(steps)


GRAPH = os.path.join(HERE, "graph_small.py")


def time_under(doc, program, marker,
               profile="GPU time by launching stack"):
    """GPU seconds under the line of program marked `# marker` in the
    GPU profile named profile, and how many of them are GEMMs'."""
    with open(program) as f:
        line = [n for n, text in enumerate(f, 1) if "# " + marker in text]
    assert len(line) == 1, (marker, line)
    frames = doc["shared"]["frames"]
    gpu = [p for p in doc["profiles"] if p["name"].startswith(profile)]
    assert len(gpu) == 1
    total = gemm = 0.0
    for sample, weight in zip(gpu[0]["samples"], gpu[0]["weights"]):
        if any(frames[i].get("file", "").endswith(os.path.basename(program))
               and frames[i].get("line") == line[0] for i in sample):
            total += weight
            leaf = frames[sample[-1]]["name"].lower()
            if any(k in leaf for k in GEMM_FAMILIES):
                gemm += weight
    return total, gemm


@pytest.mark.parametrize("mode", ["graph", "compile"])
def test_torch_cuda_graph_replay(spyc, tmp_path, mode, torch_py):
    """Kernels replayed from a CUDA graph (captured by hand, or by
    torch.compile(mode="reduce-overhead")) carry the graph launch's
    correlation id: their GPU time is under the line that replayed the
    graph, as much as torch.cuda.Event timed there (within 15%); none is
    under the capture's line, whose launches run no kernel.  In the
    second view, by the stack that captured each node, the kernels are
    under the line that captured the graph."""
    py = torch_py
    out = tmp_path / "graph.json"
    res = spyc.run(["record", "--gpu", "--rate", "200", "-o", out, "--", py,
                    GRAPH, mode, "300"], env=target_env(), timeout=600)
    assert res.returncode == 0, res.describe()
    result = json.loads(res.stdout.strip().splitlines()[-1])
    with open(str(out), encoding="utf-8") as f:
        doc = json.load(f)
    marker = "GRAPH-REPLAY" if mode == "graph" else "COMPILED-CALL"
    replayed, gemm = time_under(doc, GRAPH, marker)
    ratio = replayed * 1e3 / result["replay_ms"]
    print("%s: %.1f ms under the replay line, %.1f ms by torch.cuda.Event "
          "(%.3f)" % (mode, replayed * 1e3, result["replay_ms"], ratio))
    assert gemm > 0, res.stderr
    assert 0.85 <= ratio <= 1.15, res.stderr
    if mode == "graph":
        assert time_under(doc, GRAPH, "CAPTURE")[0] == 0.0, res.stderr
    # The second view: the graph's kernels on the stack that captured
    # their nodes (the model's lines under the capture's; torch.compile
    # captures in a warm-up call), all of the replays' time.
    captured, _ = time_under(doc, GRAPH, "CAPTURE" if mode == "graph"
                             else "COMPILED-WARM-UP",
                             "GPU time of graph kernels by capturing stack")
    print("%s: %.1f ms of graph kernels under the capture's line" % (
        mode, captured * 1e3))
    assert captured >= 0.85 * replayed, res.stderr
    # Every replayed kernel's node was made while spyc ran: each is on
    # the stack that made it (none lost to a node id cut to 32 bits, in
    # which an instantiated copy's id is its original's).
    m = re.search(r"CUDA graphs: (\d+) kernels replayed from graphs "
                  r"\(.*?\), (\d+) of them on the stack that made their "
                  r"node", res.stderr)
    assert m and int(m.group(1)) == int(m.group(2)) > 0, res.stderr
