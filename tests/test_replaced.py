# SPDX-License-Identifier: MIT
"""A target whose interpreter (or, with --native, a library) was replaced
on disk after it started, as a package upgrade does under a running job: the new file takes the old
one's path (written beside it, then renamed over it), and the target
keeps running the old one, which /proc/PID/maps now names
"PATH (deleted)".  spyc must read the file the target has mapped, not
whatever holds its path now: as root, through /proc/PID/map_files; as
another user, who may not open those, it refuses in one line that says
why and what would do.

Each slot's interpreter is copied (its executable and libpython; the
standard library linked) so that its files can be replaced; a shared
build is made to load the copied libpython with LD_LIBRARY_PATH (each
has a RUNPATH, which that overrides), which the test checks in its
maps."""

import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import (REPO, TARGETS, copy_spyc_for_other_users,
                      parse_dump_text, target_env)

NOBODY = 65534

SCRIPT = """\
import sys, time
def waits_here():
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    time.sleep(100)
waits_here()
"""
# waits_here's lines in SCRIPT ("-c": file "<string>").
WAIT_LINE = 5
CALL_LINE = 6


def copy_interpreter(python, into):
    """A copy of python's executable, and of its libpython if it has one,
    under into/bin and into/lib, with the rest of its lib/ linked.
    Returns the executable."""
    real = os.path.realpath(python.path)
    prefix = os.path.dirname(os.path.dirname(real))
    os.makedirs(os.path.join(into, "bin"))
    os.makedirs(os.path.join(into, "lib"))
    exe = os.path.join(into, "bin", os.path.basename(real))
    shutil.copy2(real, exe)
    for entry in os.listdir(os.path.join(prefix, "lib")):
        src = os.path.join(prefix, "lib", entry)
        dst = os.path.join(into, "lib", entry)
        if entry.startswith("libpython") and ".so" in entry:
            shutil.copy2(src, dst)
        else:
            os.symlink(src, dst)
    return exe


def file_to_replace(python, root, pid):
    """The copied libpython the target mapped (a shared build), else its
    executable."""
    mapped = [p for p in mapped_paths(pid)
              if p.startswith(os.path.join(root, "lib", "libpython"))]
    if not python.shared:
        assert not mapped, mapped
        return os.path.join(root, "bin",
                            os.path.basename(os.path.realpath(python.path)))
    assert len(mapped) == 1, (
        "the target must run the copied libpython: %s" % mapped)
    return mapped[0]


def replace_file(path):
    """What an upgrade does: another file written beside path, renamed
    over it.  The new file is another ELF file (the shell), so that a
    reader that opens the path finds no interpreter there."""
    new = path + ".new"
    shutil.copy2(shutil.which("sh"), new)
    os.rename(new, path)


def start(exe, root, user=None):
    env = target_env({"LD_LIBRARY_PATH": os.path.join(root, "lib")})
    kw = {}
    if user is not None:
        kw = dict(user=user, group=user, extra_groups=[])
    proc = subprocess.Popen([exe, "-c", SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, **kw)
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        pytest.fail("%s did not start: %s" % (exe, proc.stderr.read()))
    # Past "ready" and its flush, in time.sleep: asleep twice in a row.
    asleep = 0
    deadline = time.time() + 30
    while asleep < 2 and time.time() < deadline:
        with open("/proc/%d/stat" % proc.pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        asleep = asleep + 1 if state == "S" else 0
        time.sleep(0.05)
    return proc


def mapped_paths(pid):
    with open("/proc/%d/maps" % pid) as f:
        return set(line.split(None, 5)[5].strip() for line in f
                   if len(line.split(None, 5)) == 6)


@pytest.fixture
def copied(python):
    root = tempfile.mkdtemp(prefix="spyc-replaced-")
    os.chmod(root, 0o755)
    try:
        yield root, copy_interpreter(python, root)
    finally:
        shutil.rmtree(root)


def test_dump_and_record_after_replace(spyc, python, copied, tmp_path):
    """As root: dump and record read the mapped interpreter; the stack is
    the one the target is in, at its lines."""
    if os.geteuid() != 0:
        pytest.skip("needs root: /proc/PID/map_files opens for root only")
    root, exe = copied
    proc = start(exe, root)
    try:
        replaced = file_to_replace(python, root, proc.pid)
        replace_file(replaced)
        assert replaced + " (deleted)" in mapped_paths(proc.pid)
        doc, res = spyc.dump_json(proc.pid)
        (thread,) = doc["threads"]
        got = [(f["name"], f["file"], f["line"]) for f in thread["frames"]]
        assert got == [("waits_here", "<string>", WAIT_LINE),
                       ("<module>", "<string>", CALL_LINE)], res.describe()
        out = str(tmp_path / "out.txt")
        res = spyc.run(["record", "--pid", proc.pid, "--idle",
                        "--duration", 1, "--rate", 50, "-o", out])
        assert res.returncode == 0, res.describe()
        with open(out) as f:
            stacks = [line.rsplit(" ", 1)[0] for line in f]
        assert stacks == ["<module> (<string>:%d);waits_here (<string>:%d)"
                          % (CALL_LINE, WAIT_LINE)], res.describe()
        assert proc.poll() is None, "the target must live on"
    finally:
        proc.kill()
        proc.wait()


def runs_as_nobody(python):
    """Whether nobody may run python (a pyenv under root's home is
    closed to other users)."""
    res = subprocess.run(["setpriv", "--reuid=%d" % NOBODY,
                          "--regid=%d" % NOBODY, "--clear-groups",
                          python.path, "-c", "pass"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=target_env(), timeout=60)
    return res.returncode == 0


def skip_unless_nobody_runs(python):
    """Skip, saying why, unless root may run python and spyc as nobody."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the target and spyc as nobody")
    if not runs_as_nobody(python):
        pytest.skip("CPython %s cannot be run by nobody here (its files "
                    "are closed to other users)" % python.version)


def test_refused_without_map_files(spyc, any_python):
    """As the target's own user, not root: /proc/PID/map_files is closed
    to spyc, and the path leads to another file: one line that says the
    file was replaced and what would read it, exit 2.  (What spyc says
    does not depend on the version: the newest.)"""
    python = any_python
    skip_unless_nobody_runs(python)
    root = tempfile.mkdtemp(prefix="spyc-replaced-")
    os.chmod(root, 0o755)
    exe = copy_interpreter(python, root)
    spyc_copy = copy_spyc_for_other_users(spyc.path)
    proc = start(exe, root, user=NOBODY)
    try:
        replaced = file_to_replace(python, root, proc.pid)
        replace_file(replaced)
        res = spyc.run(["dump", "--pid", proc.pid], exe=spyc_copy,
                       prefix=["setpriv", "--reuid=%d" % NOBODY,
                               "--regid=%d" % NOBODY, "--clear-groups"])
        line = res.assert_error(2, "replaced or deleted", replaced,
                                "map_files", "root")
        assert "(deleted)" not in line, res.describe()
        assert proc.poll() is None, "the target must live on"
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(os.path.dirname(spyc_copy))
        shutil.rmtree(root)


def test_capabilities_instead_of_root(spyc, any_python):
    """A non-root user given capabilities with setcap, as the README's
    Permissions section says, against a target of root's whose files
    (here its executable and libpython, in a directory of root's alone,
    as a pyenv under /root) that user cannot read: with CAP_SYS_PTRACE
    alone, one line that names the file and the capability to add, exit
    2 (spyc said "not a Python process"); with CAP_DAC_READ_SEARCH too,
    the stack, as root reads it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give capabilities and run as nobody")
    if shutil.which("setcap") is None and not os.path.exists(
            "/usr/sbin/setcap"):
        pytest.skip("setcap not found (Debian: libcap2-bin)")
    setcap = shutil.which("setcap") or "/usr/sbin/setcap"
    root = tempfile.mkdtemp(prefix="spyc-caps-")
    os.chmod(root, 0o700)
    exe = copy_interpreter(any_python, root)
    spyc_copy = copy_spyc_for_other_users(spyc.path)
    proc = start(exe, root)
    as_nobody = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                 "--clear-groups"]
    try:
        mapped = file_to_replace(any_python, root, proc.pid)
        subprocess.run([setcap, "cap_sys_ptrace+ep", spyc_copy], check=True)
        res = spyc.run(["dump", "--pid", proc.pid], exe=spyc_copy,
                       prefix=as_nobody)
        res.assert_error(2, "cannot read", mapped, "CAP_DAC_READ_SEARCH",
                         "setcap cap_sys_ptrace,cap_dac_read_search+ep")
        subprocess.run([setcap, "cap_sys_ptrace,cap_dac_read_search+ep",
                        spyc_copy], check=True)
        res = spyc.run(["dump", "--pid", proc.pid], exe=spyc_copy,
                       prefix=as_nobody)
        assert res.returncode == 0, res.describe()
        _, threads = parse_dump_text(res.stdout)
        assert [[(name, line) for name, _, line in t["frames"]]
                for t in threads.values()] == [
                    [("waits_here", WAIT_LINE), ("<module>", CALL_LINE)]], (
                        res.describe())
        assert proc.poll() is None, "the target must live on"
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(os.path.dirname(spyc_copy))
        shutil.rmtree(root)


# A library replaced under a target that runs it (--native): two builds
# of one source, laid out otherwise, the innermost function named
# otherwise in each (tests/lib/swapspin.c).
SWAPSPIN = os.path.join(REPO, "tests", "build", "lib", "swapspin.so")
SWAPSPIN2 = os.path.join(REPO, "tests", "build", "lib", "swapspin2.so")


class SwapTarget(object):
    """A target, as user (None: root), that spins in a copy of SWAPSPIN
    under root (mode 755), which replace() replaces with SWAPSPIN2 as an
    upgrade does."""

    def __init__(self, python, root, user=None):
        if not (os.path.exists(SWAPSPIN) and os.path.exists(SWAPSPIN2)):
            pytest.skip("tests/build/lib/swapspin*.so not built (make "
                        "test-tools)")
        self.lib = os.path.join(root, "libswapspin.so")
        shutil.copy2(SWAPSPIN, self.lib)
        os.chmod(self.lib, 0o755)
        out = os.path.join(root, "out")
        os.mkdir(out)
        if user is not None:
            os.chown(out, user, user)
        report = os.path.join(out, "report.json")
        kw = dict(user=user, group=user, extra_groups=[]) if user else {}
        self.proc = subprocess.Popen(
            [python.path, os.path.join(TARGETS, "debugspin.py"), self.lib,
             report, "spyc_swap_spin"], env=target_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
        self.pid = self.proc.pid
        deadline = time.time() + 60
        while not os.path.exists(report):
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                pytest.fail("debugspin.py did not start: %s" %
                            self.proc.stderr.read())
            time.sleep(0.05)

    def replace(self):
        new = self.lib + ".new"
        shutil.copy2(SWAPSPIN2, new)
        os.rename(new, self.lib)
        assert self.lib + " (deleted)" in mapped_paths(self.pid)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def main_frames(spyc, pid, **kw):
    """The names and frames of pid's main thread in dump --native."""
    res = spyc.run(["dump", "--pid", pid, "--json", "--native"], **kw)
    res.assert_ok()
    doc = json.loads(res.stdout)
    main = [th for th in doc["threads"] if th.get("native_id") == pid]
    assert len(main) == 1, res.describe()
    frames = main[0]["frames"]
    return [f["name"] for f in frames], frames, res


def python_names(frames):
    return [f["name"] for f in frames if not f.get("native")]


def assert_unwound_through(t, frames, before, res):
    """The Python frames under the replaced library's are those before
    the replacement, and the target lives on."""
    assert python_names(frames) == before, (
        "the stack is not unwound through the replaced library\n" +
        res.describe())
    assert t.proc.poll() is None, "the target must live on"


def test_library_replaced(spyc, any_python, tmp_path):
    """As root, a library replaced on disk while the target runs it is
    named and unwound from the file that is mapped: the innermost frame is
    swapspin.c's static function, by its name and line, under the
    library's exported one, and the Python frames under them follow, as
    before the replacement (before: 'libswapspin.so (deleted)+0x...', and
    the stack ended there)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: /proc/PID/map_files opens for root only")
    t = SwapTarget(any_python, str(tmp_path))
    try:
        names, frames, res = main_frames(spyc, t.pid)
        assert names[:2] == ["spyc_swap_inner_first", "spyc_swap_spin"], (
            names, res.describe())
        before = python_names(frames)
        assert before and before[-1] == "<module>", (names, res.describe())
        t.replace()
        names, frames, res = main_frames(spyc, t.pid)
        assert "spyc_swap_inner_second" not in names, (
            "named from the file now at the library's path\n" +
            res.describe())
        assert names[:2] == ["spyc_swap_inner_first", "spyc_swap_spin"], (
            "the replaced library's frames are not named from its own "
            "file\n" + res.describe())
        assert frames[0]["file"].endswith("swapspin.c") and \
            frames[0]["line"], (frames[0], res.describe())
        assert_unwound_through(t, frames, before, res)
    finally:
        t.close()


def test_library_replaced_as_another_user(spyc, any_python):
    """As the target's own user, not root: /proc/PID/map_files is closed,
    so the replaced library's two frames are left unnamed ('LIBRARY
    (deleted)+0xOFFSET'), never named from the file now at its path; they
    are unwound all the same, from the table in the target's memory: the
    Python frames under them are those before the replacement."""
    skip_unless_nobody_runs(any_python)
    root = tempfile.mkdtemp(prefix="spyc-swap-")
    os.chmod(root, 0o755)
    spyc_copy = copy_spyc_for_other_users(spyc.path)
    as_nobody = dict(exe=spyc_copy, prefix=[
        "setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
        "--clear-groups"])
    t = SwapTarget(any_python, root, user=NOBODY)
    try:
        names, frames, res = main_frames(spyc, t.pid, **as_nobody)
        before = python_names(frames)
        assert before and before[-1] == "<module>", (names, res.describe())
        t.replace()
        names, frames, res = main_frames(spyc, t.pid, **as_nobody)
        assert not [n for n in names if n.startswith("spyc_swap_inner")], (
            "named from a file that is not the one mapped\n" +
            res.describe())
        assert [n.split("+")[0] for n in names[:2]] == [
            "libswapspin.so (deleted)"] * 2, (names, res.describe())
        assert_unwound_through(t, frames, before, res)
    finally:
        t.close()
        shutil.rmtree(os.path.dirname(spyc_copy))
        shutil.rmtree(root)
