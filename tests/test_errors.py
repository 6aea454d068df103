# SPDX-License-Identifier: MIT
"""spyc's failures: exit 2 with exactly one `spyc: ...` line that says what
went wrong, and exit 64 for usage errors."""

import ctypes
import os
import shutil
import subprocess
import sys
import time

import pytest

import pyfind
from conftest import (copy_spyc_for_other_users, launch_in_unwritable_dir,
                      newest_python, target_env)

NOBODY = 65534
HERE = os.path.dirname(os.path.abspath(__file__))


def absent_pid():
    """A pid that no process has right now."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) - 1
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


@pytest.fixture
def sleeper():
    """A non-Python process: sleep 100."""
    proc = subprocess.Popen(["sleep", "100"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def start_python(path):
    """Start an interpreter that blocks in time.sleep once it is ready."""
    proc = subprocess.Popen(
        [path, "-c", "import sys, time\nsys.stdout.write('ready\\n')\n"
         "sys.stdout.flush()\ntime.sleep(100)\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=target_env())
    line = proc.stdout.readline()
    if line.strip() != b"ready":
        proc.kill()
        pytest.fail("%s did not start: %s" % (path, proc.stderr.read()))
    return proc


@pytest.mark.parametrize("cmd", ["dump", "record"])
def test_no_such_process(spyc, tmp_path, cmd):
    pid = absent_pid()
    args = [cmd, "--pid", pid]
    if cmd == "record":
        args += ["--duration", 1, "-o", str(tmp_path / "out.json")]
    res = spyc.run(args)
    res.assert_error(2, "no process")
    assert not os.path.exists(str(tmp_path / "out.json"))


@pytest.mark.parametrize("cmd", ["dump", "record"])
def test_not_python(spyc, sleeper, tmp_path, cmd):
    args = [cmd, "--pid", sleeper.pid]
    if cmd == "record":
        args += ["--duration", 1, "-o", str(tmp_path / "out.json")]
    res = spyc.run(args)
    # It must say what it found instead: the executable.
    res.assert_error(2, "not a Python process", "sleep")


@pytest.mark.parametrize("cmd", ["dump", "record", "top"])
def test_no_permission(spyc, cmd):
    """A process of another user, without the right to trace it: one line
    that says so and what to do, exit 2, no output file."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux)")
    if os.geteuid() != 0:
        pytest.skip("needs root: the test runs spyc as nobody against a "
                    "root-owned process")
    py = newest_python()
    if py is None:
        pytest.skip("no supported CPython (3.6-3.15) found on this machine")
    exe = copy_spyc_for_other_users(spyc.path)
    target = start_python(py.path)
    out = os.path.join(os.path.dirname(exe), "out.json")
    # nobody may write there: the output check passes, the attach fails.
    os.chmod(os.path.dirname(exe), 0o777)
    args = {"dump": ["dump", "--pid", target.pid],
            "record": ["record", "--pid", target.pid, "-o", out],
            "top": ["top", "--pid", target.pid]}[cmd]
    try:
        res = spyc.run(args, exe=exe, timeout=30,
                       prefix=[setpriv, "--reuid=%d" % NOBODY,
                               "--regid=%d" % NOBODY, "--clear-groups"])
        # Why (whose process, and who spyc runs as), and what to do.
        res.assert_error(2, "permission", "runs as uid 0",
                         "spyc as uid %d" % NOBODY, "CAP_SYS_PTRACE",
                         "run spyc as root")
        assert not os.path.exists(out), res.describe()
        assert target.poll() is None, "the target must live on"
    finally:
        target.kill()
        target.wait()
        shutil.rmtree(os.path.dirname(exe))


@pytest.fixture
def root_target():
    """A root-owned interpreter blocked in time.sleep (the newest)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the target must be root's")
    py = newest_python()
    if py is None:
        pytest.skip("no supported CPython (3.6-3.15) found on this machine")
    target = start_python(py.path)
    yield target
    target.kill()
    target.wait()


def test_root_without_capabilities(spyc, root_target):
    """spyc as root, but with no capability (an empty bounding set, as a
    container or a hardened service may leave root), against a process
    of root's with all of root's: the kernel refuses it, and the line says
    that the target holds capabilities spyc lacks, not "run as root"."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux)")
    res = spyc.run(["dump", "--pid", root_target.pid],
                   prefix=[setpriv, "--bounding-set=-all"])
    line = res.assert_error(2, "no permission to read",
                            "holds capabilities spyc does not",
                            "CAP_SYS_PTRACE")
    assert "run spyc as root" not in line, res.describe()
    assert root_target.poll() is None, "the target must live on"


# What a seccomp filter refuses, the command, what the line must say.
SECCOMP_CASES = [
    ("process_vm_readv", ["dump"], "read"),
    ("ptrace", ["dump", "--native"], "trace"),
    ("ptrace", ["dump", "--blocking"], "trace"),
    ("ptrace", ["record", "--native", "--duration", "1"], "trace"),
]


@pytest.mark.parametrize("denied,args,verb", SECCOMP_CASES,
                         ids=["-".join([c[0]] + c[1][:2])
                              for c in SECCOMP_CASES])
def test_seccomp_refusal(spyc, root_target, tmp_path, denied, args, verb):
    """spyc under a seccomp filter that refuses process_vm_readv or
    ptrace (a real filter, installed by tests/seccomp_deny.py as a
    container runtime's profile would): one line that names the filter,
    the system call and the fix, exit 2, no profile written, where before
    --native and --blocking went on and wrote a profile without a native
    frame or a stopped read."""
    if os.uname().machine != "x86_64":
        pytest.skip("seccomp_deny.py knows x86-64's system call numbers "
                    "only")
    out = str(tmp_path / "out.txt")
    extra = ["-o", out] if args[0] == "record" else []
    # make test-sanitize: LeakSanitizer stops spyc's threads with ptrace
    # at exit, which the filter refuses too.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    res = spyc.run(args + ["--pid", root_target.pid] + extra, env=env,
                   prefix=[sys.executable,
                           os.path.join(HERE, "seccomp_deny.py"), denied])
    res.assert_error(2, "no permission to %s pid %d" % (
        verb, root_target.pid), "seccomp filter", "refuses " + denied,
                     "seccomp=unconfined")
    assert not os.path.exists(out), res.describe()
    assert root_target.poll() is None, "the target must live on"


# Holds a ptrace seize of pid argv[1] (no stop) until killed.
TRACER = """
import ctypes, sys, time
PTRACE_SEIZE = 0x4206
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(PTRACE_SEIZE, int(sys.argv[1]), None, None):
    sys.exit("seize: errno %d" % ctypes.get_errno())
sys.stdout.write("seized\\n")
sys.stdout.flush()
time.sleep(100)
"""


@pytest.mark.parametrize("mode", ["--native", "--blocking"])
def test_traced_already(spyc, root_target, mode):
    """A target another tracer holds (a debugger; here a process that
    seized it): --native and --blocking cannot trace it, and the line
    names that tracer, where before each sample found every thread
    refused and said nothing.  The target and its tracer live on."""
    tracer = subprocess.Popen([sys.executable, "-c", TRACER,
                               str(root_target.pid)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = tracer.stdout.readline()
        assert line.strip() == b"seized", tracer.stderr.read()
        res = spyc.run(["dump", mode, "--pid", root_target.pid])
        res.assert_error(2, "cannot trace pid %d" % root_target.pid,
                         "pid %d (python" % tracer.pid, "traces it already")
        assert tracer.poll() is None, "the tracer must live on"
        assert root_target.poll() is None, "the target must live on"
    finally:
        tracer.kill()
        tracer.wait()


def test_unsupported_version(spyc):
    py2 = pyfind.find(2)
    if py2 is None:
        pytest.skip("CPython 2.7 not found on this machine")
    target = start_python(py2.path)
    try:
        res = spyc.run(["dump", "--pid", target.pid])
        version = "%d.%d" % py2.version_info[:2]
        res.assert_error(2, "not supported", version)
    finally:
        target.kill()
        target.wait()


USAGE_ERRORS = [
    ([], "no command"),
    (["frobnicate"], "unknown command"),
    (["dump", "--bogus"], "unknown option"),
    (["dump"], "dump without --pid"),
    (["dump", "--pid", "abc"], "non-numeric pid"),
    (["record", "--rate", "abc", "--duration", "1", "-o", "x.json", "--",
      "true"], "non-numeric rate"),
    (["record", "--rate", "0", "--duration", "1", "-o", "x.json", "--",
      "true"], "zero rate"),
    (["record", "--rate", "-5", "--duration", "1", "-o", "x.json", "--",
      "true"], "negative rate"),
    (["record", "--format", "pdf", "-o", "x.json", "--", "true"],
     "unknown format"),
    (["record", "--bogus", "-o", "x.json", "--", "true"],
     "record unknown option"),
    (["record", "-o", "x.json"], "neither --pid nor a command"),
    (["record", "--native", "--nonblocking", "-o", "x.json", "--", "true"],
     "native cannot be nonblocking"),
    (["dump", "--pid", "1", "--blocking", "--nonblocking"],
     "blocking and nonblocking"),
    (["top", "--native", "--nonblocking", "--", "true"],
     "top native cannot be nonblocking"),
    (["record", "--kill-after-duration", "-o", "x.json", "--", "true"],
     "kill-after-duration without duration"),
    (["record", "--kill-after-duration", "--duration", "1", "--pid", "1",
      "-o", "x.json"], "kill-after-duration with pid"),
]


@pytest.mark.parametrize("args,what", USAGE_ERRORS,
                         ids=[u[1].replace(" ", "-") for u in USAGE_ERRORS])
def test_usage_error(spyc, tmp_path, args, what):
    cwd = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        res = spyc.run(args, timeout=20)
    finally:
        os.chdir(cwd)
    assert res.returncode == 64, "%s: expected exit 64\n%s" % (
        what, res.describe())
    assert res.stderr.strip(), "a usage error should say something"
    assert not os.path.exists(str(tmp_path / "x.json"))


UNWRITABLE = [
    ("nodir/out.json", "no such file"),
    ("adir", "is a directory"),
    ("afile/out.json", "not a directory"),
]


@pytest.mark.parametrize("out,why", UNWRITABLE,
                         ids=["missing-dir", "a-directory", "under-a-file"])
def test_unwritable_output_before_launch(spyc, any_python, tmp_path, out,
                                         why):
    """record checks that its output can be written before it launches
    anything: the program never runs, and the one line names the path as
    given."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    marker = tmp_path / "ran"
    cwd = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        res = spyc.run(["record", "--format", "folded", "-o", out, "--",
                        any_python.path, "-c",
                        "open(%r, 'w').close()" % str(marker)],
                       env=target_env(), timeout=30)
    finally:
        os.chdir(cwd)
    res.assert_error(2, "cannot write '%s'" % out, why)
    assert not marker.exists(), (
        "the program ran although the profile could not be written\n"
        + res.describe())
    assert ".tmp." not in res.stderr, res.describe()


def test_unwritable_default_output(spyc, any_python, tmp_path):
    """Without -o, launch mode checks that the current directory takes
    the default spyc-PID.json before the program runs (sysfs takes no
    new files, even from root)."""
    marker = tmp_path / "ran"
    code, lines, err = launch_in_unwritable_dir(spyc.path, ["record"],
                                                any_python, marker)
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith(
        "spyc: cannot write a profile in the current directory"), err
    assert "--output" in lines[0], err
    assert not marker.exists(), "the program ran"


def test_unwritable_output_before_attach(spyc, tmp_path):
    """With --pid too the output is checked first: the error is about the
    output, not about the process that does not exist."""
    out = str(tmp_path / "nodir" / "out.json")
    res = spyc.run(["record", "--pid", absent_pid(), "-o", out])
    res.assert_error(2, "cannot write '%s'" % out, "no such file")


def test_write_error_names_the_output(spyc, any_python, tmp_path):
    """A write that fails at the end (the directory went away while
    sampling) names the file the user gave, not the temporary one."""
    target = start_python(any_python.path)
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    out = str(outdir / "profile.json")
    try:
        proc = spyc.popen(["record", "--pid", target.pid, "--duration", 3,
                           "-o", out], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
        time.sleep(1)
        assert proc.poll() is None, proc.communicate()
        outdir.rmdir()
        _, err = proc.communicate(timeout=30)
    finally:
        target.kill()
        target.wait()
    err = err.decode(errors="replace")
    lines = [l for l in err.splitlines() if l.strip()]
    describe = "exit %s, stderr:\n%s" % (proc.returncode, err)
    assert proc.returncode == 2, describe
    assert lines == ["spyc: cannot write '%s': No such file or directory"
                     % out], describe


@pytest.mark.slots(shared=True)
def test_dump_waits_for_the_loader(spyc, python):
    """A shared-library CPython caught right after exec, before the
    dynamic loader has mapped libpython: spyc waits for it (as a user
    who runs `spyc dump --pid $!` at once would need) rather than
    calling it not Python.  Not made for a static build (no libpython
    to load), where it could only skip."""
    libc = ctypes.CDLL(None, use_errno=True)
    ptrace = libc.ptrace
    ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                       ctypes.c_void_p]
    PTRACE_TRACEME, PTRACE_DETACH = 0, 17
    # Traced from the start, the child stops at its exec, before ld.so
    # maps anything but the executable.
    proc = subprocess.Popen(
        [python.path, "-c", "import time\ntime.sleep(100)\n"],
        env=target_env(), preexec_fn=lambda: ptrace(PTRACE_TRACEME, 0,
                                                    None, None))
    try:
        _, status = os.waitpid(proc.pid, 0)
        assert os.WIFSTOPPED(status), status
        with open("/proc/%d/maps" % proc.pid) as f:
            assert "libpython" not in f.read()
        dump = spyc.popen(["dump", "--pid", proc.pid],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
        time.sleep(0.5)
        assert dump.poll() is None, "spyc gave up before libpython loaded"
        assert ptrace(PTRACE_DETACH, proc.pid, None, None) == 0
        out, err = dump.communicate(timeout=30)
        assert dump.returncode == 0, (out, err)
        assert ("Process %d" % proc.pid) in out, out
    finally:
        proc.kill()
        proc.wait()
