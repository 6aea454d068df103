# SPDX-License-Identifier: MIT
"""spyc under valgrind memcheck: dump, short records and top's sampler on
real targets.

Run by `make test-valgrind` (SPYC_VALGRIND=1, every CPython found);
skipped otherwise, as valgrind makes spyc some 30 times slower.  Any
memcheck error (an invalid read or write, a use of uninitialised memory, a
leak of any kind, library globals kept until exit aside:
tests/valgrind.supp) fails the run.
"""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import TESTS, target_env
from test_record import parse_folded, parse_speedscope, parse_summary

VALGRIND_EXIT = 99
VALGRIND = ["valgrind", "-q", "--error-exitcode=%d" % VALGRIND_EXIT,
            "--leak-check=full", "--errors-for-leak-kinds=all",
            "--show-leak-kinds=all", "--num-callers=40",
            "--suppressions=%s" % os.path.join(TESTS, "valgrind.supp")]
TIMEOUT = 300

if os.environ.get("SPYC_VALGRIND") != "1":
    pytest.skip("valgrind tests run with make test-valgrind (SPYC_VALGRIND=1)",
                allow_module_level=True)
if shutil.which("valgrind") is None:
    pytest.skip("valgrind is not installed (scripts/install-deps installs it)",
                allow_module_level=True)


def memcheck(spyc, args, codes=(0, 1)):
    res = spyc.run(list(args), timeout=TIMEOUT, prefix=VALGRIND,
                   env=target_env())
    describe = res.describe()
    assert res.returncode != VALGRIND_EXIT, (
        "valgrind found errors\n" + describe)
    assert res.returncode in codes, describe
    assert not [l for l in res.stderr_lines if l.startswith("==")], (
        "valgrind wrote a report\n" + describe)
    return res


@pytest.mark.parametrize("extra", [[], ["--json"], ["--native"]],
                         ids=["text", "json", "native"])
def test_dump(spyc, python, targets, extra):
    t = targets.start(python, "threads.py")
    res = memcheck(spyc, ["dump", "--pid", t.pid] + extra)
    if extra == ["--json"]:
        assert json.loads(res.stdout)["threads"]
    else:
        assert "Thread 0x" in res.stdout


@pytest.mark.parametrize("extra,name", [
    ([], "out.json"), (["--threads"], "out.txt"),
    (["--native"], "native.txt")], ids=["speedscope", "folded", "native"])
def test_record(spyc, python, targets, tmp_path, extra, name):
    t = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / name)
    res = memcheck(spyc, ["record", "--pid", t.pid, "--duration", 1,
                          "-o", out] + extra)
    summary = parse_summary(res.stderr, res.describe())
    if name.endswith(".json"):
        _, stacks = parse_speedscope(out)
    elif extra == ["--threads"]:
        stacks = parse_folded(out, threads=True)
    else:
        stacks = open(out).read().splitlines()
    assert stacks or not summary.samples, res.describe()


def test_record_launch(spyc, python, tmp_path):
    out = str(tmp_path / "out.json")
    memcheck(spyc, ["record", "-o", out, "--", python.path,
                    os.path.join(TESTS, "targets", "hot.py"), 1])
    parse_speedscope(out)


def test_top(spyc, python, targets, tmp_path):
    """top's sampler and table under memcheck: plain snapshots to a file,
    then SIGTERM, which top takes as a normal end."""
    t = targets.start(python, "hot.py", 0, "{report}")
    screen = str(tmp_path / "top.txt")
    with open(screen, "wb") as out:
        proc = subprocess.Popen(
            VALGRIND + [spyc.path, "top", "--pid", str(t.pid), "--idle",
                        "--interval", "0.5"],
            stdout=out, stderr=subprocess.PIPE, env=target_env())
        deadline = time.time() + TIMEOUT
        while time.time() < deadline and proc.poll() is None:
            with open(screen) as f:
                if f.read().count("snapshot: ") >= 3:
                    break
            time.sleep(0.2)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail("top under valgrind did not stop on SIGTERM")
    err = err.decode(errors="replace")
    with open(screen) as f:
        text = f.read()
    describe = "exit %s\n%s\n%s" % (proc.returncode, text[-2000:], err)
    assert proc.returncode != VALGRIND_EXIT, "valgrind found errors\n" + \
        describe
    assert proc.returncode == 0, describe
    assert not [l for l in err.splitlines() if l.startswith("==")], (
        "valgrind wrote a report\n" + describe)
    assert text.count("snapshot: ") >= 3, describe
