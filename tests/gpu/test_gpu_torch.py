# SPDX-License-Identifier: MIT
"""`spyc record --gpu` on a real GPU: a small PyTorch training loop
(train_small.py) must show its GEMM kernels, on the stack of the Python
line that called the layers, and its host-to-device copies.  Skipped,
with the reason, where there is no NVIDIA GPU or no PyTorch with CUDA.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, target_env, newest_python

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train_small.py")
AGENT = os.path.join(REPO, "spyc-agent.so")


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


def layer_line():
    with open(TRAIN) as f:
        for n, line in enumerate(f, 1):
            if "# LAYER-CALL" in line:
                return n
    raise AssertionError("no LAYER-CALL line in " + TRAIN)


def test_torch_training_gemms(spyc, tmp_path):
    py = torch_python()
    if py is None:
        pytest.skip("no Python with PyTorch and CUDA here "
                    "(set SPYC_TORCH_PYTHON)")
    out = tmp_path / "train.json"
    res = spyc.run(["record", "--gpu", "--rate", "500", "-o", out, "--", py,
                    TRAIN, "300"], env=target_env(), timeout=600)
    assert res.returncode == 0, res.describe()
    assert "GPU activities" in res.stderr, res.describe()
    with open(str(out), encoding="utf-8") as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    meta = doc["spyc_gpu"]
    assert meta["attribution"].startswith("nearest-sample")
    assert meta["clock"]["aligned"]
    streams = [p for p in doc["profiles"] if p["type"] == "evented"]
    assert streams, "no GPU stream timeline"
    gpu = [p for p in doc["profiles"]
           if p["name"].startswith("GPU time by launching stack")]
    assert len(gpu) == 1
    gemm_time = 0.0
    on_layer_line = 0.0
    copies = 0.0
    line = layer_line()
    for sample, weight in zip(gpu[0]["samples"], gpu[0]["weights"]):
        leaf = frames[sample[-1]]["name"]
        if "gemm" in leaf.lower():
            gemm_time += weight
            if any(frames[i].get("file", "").endswith("train_small.py") and
                   frames[i].get("line") == line for i in sample):
                on_layer_line += weight
        if leaf == "[memcpy HtoD]":
            copies += weight
    assert gemm_time > 0, "no GEMM kernel recorded:\n" + res.stderr
    assert on_layer_line > 0, (
        "no GEMM attributed to train_small.py:%d\n%s" % (line, res.stderr))
    assert copies > 0, "no host-to-device copy recorded"
