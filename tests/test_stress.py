# SPDX-License-Identifier: MIT
"""spyc against a target that churns: threads, code objects, generators,
coroutines and exceptions come and go while spyc samples at a high rate.
Torn reads must be dropped and counted, never crash spyc or produce a
broken profile, and the target must compute exactly what it computes
unprofiled."""

import json
import os
import subprocess

from conftest import TARGETS, target_env
from test_record import parse_summary

ROUNDS = "60"


def test_churn_at_high_rate(spyc, python, tmp_path):
    script = os.path.join(TARGETS, "churn.py")
    plain = subprocess.run([python.path, script, ROUNDS],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=target_env(), timeout=300,
                           universal_newlines=True)
    assert plain.returncode == 0, plain.stderr
    out = str(tmp_path / "churn.json")
    res = spyc.run(["record", "--rate", "2000", "--full-filenames", "-o",
                    out, "--", python.path, script, ROUNDS],
                   env=target_env(), timeout=300)
    # 0, or 1 if more than 3% of samples were torn: both are honest.
    assert res.returncode in (0, 1), res.describe()
    assert res.stdout == plain.stdout, "profiled target computed otherwise"
    summary = parse_summary(res.stderr, res.describe())
    assert summary.samples > 0
    with open(out) as f:
        doc = json.load(f)
    names = set(fr["name"] for fr in doc["shared"]["frames"])
    # The sampled threads ran these; a profile of garbage would not say so.
    assert names & {"recurse", "gen", "worker", "fresh_function", "failing"}
    total = sum(sum(p["weights"]) for p in doc["profiles"])
    assert total > 0


EXECS = r"""
import os, sys, time
def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
spin(1.0)
# The same interpreter again: only the mappings tell spyc it changed.
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3)"])
"""


def test_target_execs_mid_record(spyc, python, tmp_path):
    """A target that execs mid-sample: spyc notices, stops, and writes a
    complete profile of what it saw before."""
    proc = subprocess.Popen([python.path, "-c", EXECS], env=target_env())
    try:
        out = str(tmp_path / "exec.txt")
        res = spyc.run(["record", "--pid", str(proc.pid), "--rate", "200",
                        "-o", out], timeout=60)
        assert res.returncode in (0, 1), res.describe()
        assert "exec" in res.stderr, res.describe()
        summary = parse_summary(res.stderr, res.describe())
        assert summary.seconds < 3.0, "spyc kept sampling the new program"
        with open(out) as f:
            lines = f.read().splitlines()
        assert any("spin" in l for l in lines), lines[:5]
        # One thread: every sample with a stack is one count.
        assert 0 < sum(int(l.rsplit(" ", 1)[1]) for l in lines) <= \
            summary.samples
    finally:
        proc.kill()
        proc.wait()
