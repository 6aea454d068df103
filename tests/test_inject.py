# SPDX-License-Identifier: MIT
"""Loading a library into a running process (src/inject.c), and the GPU
agent into one that never uses CUDA (src/gpu.c, agent/), through the
test driver tests/build/spyc-inject (built by `make test-tools`; not part
of spyc's command line).

A library injected into a Python of every slot must run (it writes a
file), and the target must finish with the same output and exit status as
a run without injection, with no thread left stopped.  A process that
exits mid-way, a non-Python process and a pid that is gone each fail with
one clear line.
"""

import os
import subprocess
import sys

import pytest

from conftest import REPO, TARGETS, assert_running, target_env, decode

BUILD = os.path.join(REPO, "tests", "build")
INJECT = os.path.join(BUILD, "spyc-inject")
MARK_LIB = os.path.join(BUILD, "lib", "inject-mark.so")
EXIT_LIB = os.path.join(BUILD, "lib", "inject-exit.so")
AGENT = os.path.join(REPO, "spyc-agent.so")

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
    reason="library injection is implemented for x86-64 Linux only")


@pytest.fixture(scope="session")
def tools(spyc):
    """Build the injector's driver and the test libraries once."""
    res = subprocess.run(["make", "test-tools"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=900)
    if res.returncode != 0:
        pytest.fail("make test-tools failed:\n%s" % decode(res.stdout)[-3000:],
                    pytrace=False)
    return INJECT


def run_inject(args, timeout=60):
    res = subprocess.run([INJECT] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=timeout)
    return res.returncode, decode(res.stdout), decode(res.stderr)


def one_error_line(rc, out, err, *words):
    lines = [l for l in err.splitlines() if l.strip()]
    desc = "exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err)
    assert rc == 2, desc
    assert len(lines) == 1 and lines[0].startswith("spyc: "), desc
    for w in words:
        assert w.lower() in lines[0].lower(), desc
    return lines[0]


def baseline(python, tmp_path):
    """Output and exit status of inject_wait.py left alone."""
    go = tmp_path / "go-baseline"
    go.write_text("")
    res = subprocess.run(
        [python.path, os.path.join(TARGETS, "inject_wait.py"), str(go),
         str(tmp_path / "report-baseline")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=target_env(),
        cwd=str(tmp_path), timeout=120)
    return res.returncode, decode(res.stdout)


def channel_files():
    try:
        return set(f for f in os.listdir("/dev/shm")
                   if f.startswith("spyc-gpu-"))
    except OSError:
        return set()


def finish(target, go, timeout=120):
    go.write_text("")
    try:
        target.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("target did not finish after injection:\n%s" %
                    target.errors())
    return target.proc.returncode, target.output()


def test_inject_library(tools, python, targets, tmp_path):
    mark = tmp_path / "mark"
    go = tmp_path / "go"
    t = targets.start(python, "inject_wait.py", str(go),
                      env={"SPYC_TEST_MARK": str(mark)})
    rc, out, err = run_inject(["--pid", t.pid, "--call", "spyc_test_entry",
                               "hello world", MARK_LIB])
    assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
    assert "spyc_test_entry returned 42" in out, out
    lines = mark.read_text().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("loaded pid=%d " % t.pid), lines
    assert lines[1].startswith("entry arg=hello world pid=%d " % t.pid), lines
    assert_running(t.pid)
    # Injecting the same library again only calls its entry again.
    rc, out, err = run_inject(["--pid", t.pid, "--call", "spyc_test_entry",
                               "again", MARK_LIB])
    assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
    assert len(mark.read_text().splitlines()) == 3
    assert_running(t.pid)
    got = finish(t, go)
    want = baseline(python, tmp_path)
    assert got == want, "with injection %r, without %r\nstderr:\n%s" % (
        got, want, t.errors())
    assert got[1].startswith("errors: 0 "), got


def test_inject_exits_midway(tools, any_python, targets, tmp_path):
    go = tmp_path / "go"
    t = targets.start(any_python, "inject_wait.py", str(go))
    rc, out, err = run_inject(["--pid", t.pid, EXIT_LIB])
    one_error_line(rc, out, err, "pid %d exited during injection" % t.pid)
    t.proc.wait(timeout=30)
    assert t.proc.returncode == 7


def test_inject_not_python(tools, tmp_path):
    proc = subprocess.Popen(["sleep", "60"])
    try:
        rc, out, err = run_inject(["--pid", proc.pid, MARK_LIB])
        one_error_line(rc, out, err, "pid %d" % proc.pid,
                       "not a Python process")
        assert_running(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_inject_gone(tools, tmp_path):
    proc = subprocess.Popen(["true"])
    proc.wait()
    rc, out, err = run_inject(["--pid", proc.pid, "--any", MARK_LIB])
    one_error_line(rc, out, err, "no process with pid %d" % proc.pid)


def test_inject_missing_library(tools, any_python, targets, tmp_path):
    go = tmp_path / "go"
    t = targets.start(any_python, "inject_wait.py", str(go))
    rc, out, err = run_inject(["--pid", t.pid,
                               str(tmp_path / "no-such-lib.so")])
    one_error_line(rc, out, err, "cannot find", "no-such-lib.so")
    # A file that is not a library: dlopen's own reason is quoted.
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not an ELF file\n")
    rc, out, err = run_inject(["--pid", t.pid, str(bogus)])
    one_error_line(rc, out, err, "dlopen failed in pid %d" % t.pid,
                   "bogus.so")
    assert_running(t.pid)
    got = finish(t, go)
    assert got[0] == 0 and got[1].startswith("errors: 0 "), got


def test_agent_without_cuda(tools, python, targets, tmp_path):
    if not os.path.exists(AGENT):
        pytest.skip("spyc was built without the GPU agent (no CUPTI "
                    "headers found)")
    go = tmp_path / "go"
    t = targets.start(python, "inject_wait.py", str(go))
    before = channel_files()
    rc, out, err = run_inject(["--pid", t.pid, "--agent", AGENT])
    assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
    assert out.strip() == ("agent: no-cuda: no CUDA in this process "
                           "(libcuda.so.1 not loaded)"), out
    assert_running(t.pid)
    # The channel's file is gone once the agent has it mapped.
    assert channel_files() <= before
    got = finish(t, go)
    assert got[0] == 0 and got[1].startswith("errors: 0 "), got
