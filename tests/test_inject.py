# SPDX-License-Identifier: MIT
"""Loading a library into a running process (src/sys/inject.c), and the GPU
agent into one that never uses CUDA (src/gpu/gpu.c, agent/), through the
test driver tests/build/spyc-inject (built by `make test-tools`; not part
of spyc's command line).

A library injected into a Python of every slot must run (it writes a
file), and the target must finish with the same output and exit status as
a run without injection, with no thread left stopped.  A process that
exits mid-way, a non-Python process and a pid that is gone each fail with
one clear line.

From 3.14 the agent is loaded by a script the target runs through PEP 768
(sys.remote_exec's hook, src/py/remoteexec.c); ptrace remains the way for
older versions, for a target that disabled PEP 768, and for one whose main
thread reaches no eval breaker in time (blocked in a system call).
"""

import os
import subprocess
import sys
import time

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


NO_CUDA = "agent: no-cuda: no CUDA in this process (libcuda.so.1 not loaded)"


# PEP 768 tests run on 3.14+ only: older versions' refusal is told in
# test_remote_exec_script and test_agent_without_cuda, on every slot.
PEP768 = (3, 14)


def has_pep768(python):
    return tuple(python.version_info[:2]) >= PEP768


def need_agent():
    if not os.path.exists(AGENT):
        pytest.skip("spyc was built without the GPU agent (no CUPTI "
                    "headers found)")


def load_dirs():
    """The directories spyc makes for a PEP 768 load (script, token)."""
    found = set()
    for d in ("/dev/shm", os.environ.get("TMPDIR") or "/tmp"):
        try:
            found |= set(os.path.join(d, f) for f in os.listdir(d)
                         if f.startswith("spyc-load-"))
        except OSError:
            pass
    return found


def agent_lines(out):
    """(status line, way line) of spyc-inject --agent."""
    lines = out.strip().splitlines()
    assert len(lines) == 2, out
    assert lines[1].startswith("loaded through: "), out
    return lines[0], lines[1][len("loaded through: "):]


def test_agent_without_cuda(tools, python, targets, tmp_path):
    """The agent loads into every version, through PEP 768 from 3.14 (the
    main thread of inject_wait.py runs Python between short sleeps), with
    ptrace before; the target finishes as it would have, with nothing on
    its stderr (a script that raised would show there)."""
    need_agent()
    go = tmp_path / "go"
    t = targets.start(python, "inject_wait.py", str(go))
    before = channel_files()
    dirs = load_dirs()
    rc, out, err = run_inject(["--pid", t.pid, "--agent", AGENT])
    assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
    status, way = agent_lines(out)
    assert status == NO_CUDA, out
    if has_pep768(python):
        assert way == "PEP 768", out
    else:
        assert way.startswith("ptrace, not PEP 768: Python %s " %
                              python.version), out
        assert "has no PEP 768" in way, out
    assert_running(t.pid)
    # The channel's file is gone once the agent has it mapped; so is the
    # script's directory.
    assert channel_files() <= before
    assert load_dirs() <= dirs
    got = finish(t, go)
    want = baseline(python, tmp_path)
    assert got == want, "with the agent %r, without %r\nstderr:\n%s" % (
        got, want, t.errors())
    assert t.errors() == "", t.errors()


def test_agent_not_a_library(tools, python, targets, tmp_path):
    """An agent that is no library: the loader's reason is quoted, however
    it was loaded, and the target is unharmed."""
    go = tmp_path / "go"
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not an ELF file\n")
    t = targets.start(python, "inject_wait.py", str(go))
    rc, out, err = run_inject(["--pid", t.pid, "--agent", bogus])
    if has_pep768(python):
        one_error_line(rc, out, err, "could not be loaded into pid %d "
                       "through PEP 768: OSError: " % t.pid, "bogus.so")
    else:
        one_error_line(rc, out, err, "dlopen failed in pid %d" % t.pid,
                       "bogus.so")
    assert_running(t.pid)
    got = finish(t, go)
    assert got[0] == 0 and got[1].startswith("errors: 0 "), got
    assert t.errors() == "", t.errors()


def start_unmanaged(argv, tmp_path, env=None, ready=None):
    """Start argv (a target the TargetPool cannot start: options before
    the script) and wait for the file ready; returns the Popen, whose
    stdout and stderr are files in tmp_path."""
    out = open(str(tmp_path / "stdout"), "wb")
    err = open(str(tmp_path / "stderr"), "wb")
    proc = subprocess.Popen(argv, stdout=out, stderr=err,
                            stdin=subprocess.DEVNULL, env=target_env(env),
                            cwd=str(tmp_path))
    out.close()
    err.close()
    deadline = time.time() + 60
    while ready and not os.path.exists(ready):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail("target %s did not start:\n%s" % (
                argv, (tmp_path / "stderr").read_text()))
        time.sleep(0.02)
    return proc


@pytest.mark.slots(since=PEP768)
@pytest.mark.parametrize("how", ["-X", "env"])
def test_agent_pep768_disabled(tools, python, tmp_path, how):
    """A 3.14+ target run with -X disable-remote-debug (or
    PYTHON_DISABLE_REMOTE_DEBUG=1) gets the agent through ptrace, and
    spyc says why."""
    need_agent()
    go, report = tmp_path / "go", tmp_path / "report"
    opts = ["-X", "disable-remote-debug"] if how == "-X" else []
    env = {"PYTHON_DISABLE_REMOTE_DEBUG": "1"} if how == "env" else None
    proc = start_unmanaged(
        [python.path] + opts + [os.path.join(TARGETS, "inject_wait.py"),
                                str(go), str(report)],
        tmp_path, env=env, ready=str(report))
    try:
        rc, out, err = run_inject(["--pid", proc.pid, "--agent", AGENT])
        assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
        status, way = agent_lines(out)
        assert status == NO_CUDA, out
        assert way.startswith("ptrace, not PEP 768: remote execution "
                              "(PEP 768) is disabled in pid %d" % proc.pid), out
        assert_running(proc.pid)
        go.write_text("")
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    got = (proc.returncode, (tmp_path / "stdout").read_text())
    assert got == baseline(python, tmp_path), got
    assert (tmp_path / "stderr").read_text() == ""


# The main thread sleeps in one system call, which the eval breaker does
# not interrupt; another thread runs Python meanwhile.
BLOCKED = """\
import os, sys, threading, time
stop = threading.Event()
def spin():
    while not stop.is_set():
        sum(range(1000))
t = threading.Thread(target=spin)
t.start()
open(sys.argv[1] + ".tmp", "w").close()
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(float(sys.argv[2]))
stop.set()
t.join()
print("done %d" % sum(range(10)))
"""


@pytest.mark.slots(since=PEP768)
def test_agent_main_thread_blocked(tools, python, tmp_path):
    """A main thread blocked in C (time.sleep: one system call) never
    reaches an eval breaker: after 2 s spyc withdraws the request and
    loads the agent with ptrace, once; the script never runs, even when
    the thread wakes up, and the target ends as it would have."""
    need_agent()
    script = tmp_path / "blocked.py"
    script.write_text(BLOCKED)
    ready = tmp_path / "ready"
    proc = start_unmanaged([python.path, str(script), str(ready), "8"],
                           tmp_path, ready=str(ready))
    dirs = load_dirs()
    try:
        start = time.time()
        rc, out, err = run_inject(["--pid", proc.pid, "--agent", AGENT])
        took = time.time() - start
        assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
        status, way = agent_lines(out)
        assert status == NO_CUDA, out
        assert way.startswith("ptrace, not PEP 768: pid %d's main thread "
                              "reached no eval breaker in 2000 ms" %
                              proc.pid), out
        assert took >= 2.0, took
        assert load_dirs() <= dirs
        assert_running(proc.pid)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert (tmp_path / "stdout").read_text() == "done 45\n"
    # No "Can't open debugger script": the withdrawn request stayed so.
    assert (tmp_path / "stderr").read_text() == ""


MARK_SCRIPT = """\
try:
    import os, threading
    with open(%(tmp)r, "w") as f:
        f.write("%%d %%s" %% (os.getpid(),
                             threading.current_thread() is
                             threading.main_thread()))
    os.rename(%(tmp)r, %(mark)r)
except BaseException:
    pass
"""


def test_remote_exec_script(tools, python, targets, tmp_path):
    """src/py/remoteexec.c alone: the main thread of a 3.14+ target runs a
    script that spyc names; older versions are refused in one line."""
    go = tmp_path / "go"
    mark = tmp_path / "mark"
    script = tmp_path / "script.py"
    script.write_text(MARK_SCRIPT % {"tmp": str(mark) + ".tmp",
                                     "mark": str(mark)})
    t = targets.start(python, "inject_wait.py", str(go))
    rc, out, err = run_inject(["--pid", t.pid, "--remote-exec", script])
    if not has_pep768(python):
        one_error_line(rc, out, err, "Python %s in pid %d has no PEP 768" %
                       (python.version, t.pid))
    else:
        assert rc == 0, "exit %d\n%s%s" % (rc, out, err)
        assert out.strip() == "remote-exec: taken", out
        deadline = time.time() + 30
        while not mark.exists() and time.time() < deadline:
            time.sleep(0.02)
        assert mark.read_text() == "%d True" % t.pid
    assert_running(t.pid)
    got = finish(t, go)
    assert got == baseline(python, tmp_path), got
    assert t.errors() == "", t.errors()


def wait_main_thread_asleep(pid, timeout=20):
    """Until pid's main thread sleeps (state S: BLOCKED's time.sleep,
    the one thing it blocks in once it has said it is ready)."""
    deadline = time.time() + timeout
    while True:
        with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                return
        assert time.time() < deadline, "the main thread never slept"
        time.sleep(0.01)


@pytest.mark.slots(since=PEP768)
def test_remote_exec_timeout(tools, python, tmp_path):
    """A request the main thread does not take in time is withdrawn: the
    script does not run when the thread wakes up."""
    script = tmp_path / "blocked.py"
    script.write_text(BLOCKED)
    ready = tmp_path / "ready"
    mark = tmp_path / "mark"
    exec_script = tmp_path / "script.py"
    exec_script.write_text(MARK_SCRIPT % {"tmp": str(mark) + ".tmp",
                                          "mark": str(mark)})
    proc = start_unmanaged([python.path, str(script), str(ready), "3"],
                           tmp_path, ready=str(ready))
    try:
        # Ready is said a few bytecodes before the sleep: on a loaded
        # machine the main thread may run them only after the request.
        wait_main_thread_asleep(proc.pid)
        rc, out, err = run_inject(["--pid", proc.pid, "--remote-exec",
                                   exec_script, "--timeout", "300"])
        one_error_line(rc, out, err, "pid %d's main thread reached no eval "
                       "breaker in 300 ms" % proc.pid)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert (tmp_path / "stdout").read_text() == "done 45\n"
    assert (tmp_path / "stderr").read_text() == ""
    assert not mark.exists()
