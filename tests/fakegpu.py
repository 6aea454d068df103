# SPDX-License-Identifier: MIT
"""What the tests of --gpu without a GPU share: where spyc's agent and the
stand-ins for CUPTI and the CUDA driver (tests/fakecuda/, built by `make
test-tools`) are, a fixture that builds them, and the start of a program
that loads them as a CUDA program loads the real ones.
"""

import os
import subprocess

import pytest

from conftest import REPO, decode

AGENT = os.path.join(REPO, "spyc-agent.so")
FAKE = os.path.join(REPO, "tests", "build", "fakecuda")

needs_agent = pytest.mark.skipif(
    not os.path.exists(AGENT),
    reason="spyc was built without the GPU agent (no CUPTI headers)")

# A program's first lines: the fake driver and CUPTI loaded (their
# directory is argv[1]), cupti the fake CUPTI with the argument types of
# its launch functions.
PROLOGUE = r"""
import ctypes, json, os, sys, threading, time, traceback
fake = sys.argv[1]
ctypes.CDLL(os.path.join(fake, "libcuda.so.1"))
cupti = ctypes.CDLL(os.path.join(fake, "libcupti.so"))
cupti.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong,
                              ctypes.c_uint]
cupti.fake_launch_native.argtypes = cupti.fake_launch.argtypes
cupti.fake_engine_pass.argtypes = cupti.fake_launch.argtypes + [
    ctypes.c_int, ctypes.c_uint]
cupti.fake_copy.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong,
                            ctypes.c_uint]
"""

# Then, for a program run as `FAKE_DIR launch|attach SECONDS REPORT`:
# launch mode has the "driver" start spyc's agent (the CUDA driver calls
# InitializeInjection); attach mode writes REPORT.ready for the test.
START = r"""
mode, seconds, report = sys.argv[2], float(sys.argv[3]), sys.argv[4]
if mode == "launch":
    ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
else:
    with open(report + ".ready", "w") as f:
        f.write(str(os.getpid()))
"""


def build(spyc):
    """Build the stand-ins (and what else the injection tests load)."""
    res = subprocess.run(["make", "test-tools"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=900)
    assert res.returncode == 0, decode(res.stdout)[-3000:]
    assert os.path.exists(os.path.join(FAKE, "libcupti.so"))
    return FAKE
