# SPDX-License-Identifier: MIT
"""Input that is not what spyc expects: a zombie, a kernel thread, output
paths that cannot be written (a symlink to a file nobody may write, a
read-only or a full filesystem), numbers that overflow.  Each gets one
clear line and the documented exit code, and never leaves a partial file
under the name given."""

import os
import subprocess
import tempfile
import time

import pytest

from conftest import TARGETS, target_env

PF_KTHREAD = 0x00200000


@pytest.fixture
def zombie():
    """The pid of a child that has exited and that nobody reaps yet."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    yield pid
    os.waitpid(pid, 0)


def kernel_thread():
    """A pid whose /proc stat flags say kernel thread, or None."""
    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (IOError, OSError):
            continue
        if int(fields[6]) & PF_KTHREAD:
            return int(name)
    return None


@pytest.mark.parametrize("cmd", ["dump", "record", "top"])
def test_zombie(spyc, zombie, tmp_path, cmd):
    out = tmp_path / "z.json"
    args = {"dump": ["dump"], "top": ["top"],
            "record": ["record", "-o", str(out), "--duration", "1"]}[cmd]
    res = spyc.run(args + ["--pid", zombie], timeout=30)
    res.assert_error(2, "pid %d" % zombie, "exited", "zombie")
    assert not out.exists()


@pytest.mark.parametrize("cmd", ["dump", "record"])
def test_kernel_thread(spyc, tmp_path, cmd):
    pid = kernel_thread()
    if pid is None:
        pytest.skip("no kernel thread is visible in this PID namespace")
    out = tmp_path / "k.json"
    args = ["dump"] if cmd == "dump" else ["record", "-o", str(out)]
    res = spyc.run(args + ["--pid", pid], timeout=30)
    res.assert_error(2, "pid %d" % pid, "kernel thread")
    assert not out.exists()


def test_symlink_to_unwritable(spyc, any_python, tmp_path):
    """An output that is a symlink to a file nobody may write (root
    included): refused before anything runs, naming the path given."""
    link = tmp_path / "out.json"
    link.symlink_to("/proc/version")
    marker = tmp_path / "ran"
    res = spyc.run(["record", "-o", str(link), "--", any_python.path, "-c",
                    "open(%r, 'w')" % str(marker)], timeout=30)
    res.assert_error(2, str(link))
    assert not marker.exists()
    assert os.path.islink(str(link))


@pytest.mark.parametrize("args,opt", [
    (["--rate", "1e400"], "--rate"),
    (["--rate", "nan"], "--rate"),
    (["--duration", "1e400"], "--duration"),
    (["--duration", "inf"], "--duration"),
    (["--max-depth", "9" * 30], "--max-depth"),
    (["--pid", "9" * 30], "pid"),
    (["--pid", "-1"], "pid"),
])
def test_overflowing_arguments(spyc, tmp_path, args, opt):
    full = ["record", "-o", str(tmp_path / "x.json")] + args
    if "--pid" not in args:
        full += ["--pid", str(os.getpid())]
    res = spyc.run(full, timeout=30)
    res.assert_error(64, opt)
    assert not (tmp_path / "x.json").exists()


def tmpfs_dir(options):
    """A directory on a fresh tmpfs mounted with options, unmounted and
    removed afterwards; skips where this user or kernel may not mount."""
    d = tempfile.mkdtemp(prefix="spyc-tmpfs-")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs",
                          d], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    if res.returncode != 0:
        os.rmdir(d)
        pytest.skip("cannot mount a tmpfs here (needs root and a kernel "
                    "that lets this namespace mount)")
    yield d
    subprocess.run(["umount", d])
    os.rmdir(d)


@pytest.fixture
def small_fs():
    """A directory on a 16 KiB tmpfs."""
    yield from tmpfs_dir("size=16k")


@pytest.fixture
def readonly_fs():
    yield from tmpfs_dir("size=16k,ro")


# Stacks of many depths, each deep: a speedscope file far above 16 KiB.
DEEP_AND_VARIED = """
import random, time
def down(n):
    return down(n - 1) if n else sum(range(2000))
end = time.time() + 1.5
while time.time() < end:
    down(random.randrange(1, 300))
"""


def test_full_filesystem(spyc, any_python, small_fs):
    """A profile larger than the filesystem has room for: one line naming
    the output, exit 2, and no file (not even a partial one) left."""
    out = os.path.join(small_fs, "big.json")
    res = spyc.run(["record", "--rate", "500", "-o", out, "--",
                    any_python.path, "-c", DEEP_AND_VARIED],
                   env=target_env(), timeout=60)
    assert res.returncode == 2, res.describe()
    errors = [l for l in res.stderr_lines if l.startswith("spyc: ") and
              " samples, " not in l]
    assert len(errors) == 1 and out in errors[0], res.describe()
    assert os.listdir(small_fs) == [], os.listdir(small_fs)


def test_symlink_written_through(spyc, any_python, tmp_path):
    """An output that is a symlink: the file it leads to is written, and
    the link stays a link."""
    target = tmp_path / "real.txt"
    link = tmp_path / "link.txt"
    link.symlink_to(target.name)
    res = spyc.run(["record", "-o", str(link), "--", any_python.path, "-c",
                    "sum(range(3000000))"], timeout=30)
    assert res.returncode == 0, res.describe()
    assert os.path.islink(str(link)) and target.exists()
    assert target.read_text().strip(), "the profile went nowhere"


def test_readonly_filesystem(spyc, any_python, readonly_fs, tmp_path):
    out = os.path.join(readonly_fs, "p.json")
    marker = tmp_path / "ran"
    res = spyc.run(["record", "-o", out, "--", any_python.path, "-c",
                    "open(%r, 'w')" % str(marker)], timeout=30)
    res.assert_error(2, out)
    assert not marker.exists()
