# SPDX-License-Identifier: MIT
"""A target in a container, spyc on the host: podman with runc.

The image is made here from a CPython of this machine, copied under
/opt/py with the libraries ldd names (no registry is reachable): inside,
the interpreter's files are at paths the host does not have, and the
target has pid and mount namespaces of its own.  tests/targets/states.py
runs in it and reports its threads; spyc is given the target's host pid.
Its thread ids (what its interpreter keeps) are the container's: spyc
must map them to the host's before it reads a thread's state or stops a
thread, and read the target's libraries through its root.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import pyfind
from conftest import AGENT, REPORT_TIMEOUT, TARGETS, decode
from test_threads import folded, frame_text, share

# What this machine's podman needs (runc: crun refuses its cgroups; its
# hard limits are below podman's defaults; no network to set up).
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
netns = "none"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""
# Up to 3.10 a thread's id comes from glibc's struct pthread, from 3.11
# from the thread state: one version of each.
VERSIONS = ["3.9", "newest"]
# Left out of the copy of the interpreter: its tests and what no target
# here imports.
NOT_COPIED = ("test", "tests", "idlelib", "tkinter", "turtledemo",
              "ensurepip", "site-packages", "*.a", "include", "share")
PODMAN_TIMEOUT = 120


def find_slot(version):
    """The slot for version ("newest": the newest shared build with the
    GIL), or a skip naming what is missing."""
    slots = [s for s in pyfind.slots()
             if s.interpreter is not None and s.name != "static" and
             not s.is_free_threaded and s.interpreter.shared]
    if version == "newest":
        if not slots:
            pytest.skip("no shared CPython found for the container image")
        return slots[-1].interpreter
    for s in slots:
        if s.name == version:
            return s.interpreter
    pytest.skip("CPython %s (shared) not found for the container image" %
                version)


class Podman(object):
    """podman with storage of its own under base, removed at the end."""

    def __init__(self, base):
        self.base = base
        conf = os.path.join(base, "containers.conf")
        with open(conf, "w") as f:
            f.write(CONTAINERS_CONF)
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        self.argv = ["podman", "--root", os.path.join(base, "storage"),
                     "--runroot", os.path.join(base, "run")]

    def run(self, *args, **kw):
        res = subprocess.run(self.argv + list(args), env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=PODMAN_TIMEOUT, **kw)
        if res.returncode != 0:
            pytest.fail("podman %s: exit %d\n%s" % (
                " ".join(args), res.returncode, decode(res.stderr)))
        return decode(res.stdout).strip()

    def close(self):
        # Not `podman system reset`: it also removes the locks that every
        # podman of the machine shares, the user's containers' too.
        for args in (["rm", "--all", "--force", "--time", "0"],
                     ["rmi", "--all", "--force"]):
            subprocess.run(self.argv + args, env=self.env,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=PODMAN_TIMEOUT)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    for tool in ("podman", "runc"):
        if not shutil.which(tool):
            pytest.skip("%s is not installed (scripts/install-deps "
                        "installs podman and runc)" % tool)
    p = Podman(str(tmp_path_factory.mktemp("podman")))
    yield p
    p.close()


def libraries(files):
    """Every library ldd names for files, the loader included."""
    res = subprocess.run(["ldd"] + files, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    found = set()
    for line in decode(res.stdout).splitlines():
        # A file's own name heads its list, unindented.
        m = re.search(r"=> (/\S+)", line) or re.match(r"\t(/\S+)", line)
        if m:
            found.add(m.group(1))
    return found


def make_image(podman, python, workdir, name, spyc_path):
    """Import an image whose /opt/py is python's prefix, with spyc at
    /usr/local/bin/spyc; returns the path of its interpreter inside."""
    out = subprocess.check_output(
        [python.path, "-c", "import sys; print(sys.prefix)"])
    prefix = decode(out).strip()
    root = os.path.join(workdir, "rootfs")
    shutil.copytree(prefix, os.path.join(root, "opt", "py"), symlinks=True,
                    ignore=shutil.ignore_patterns(*NOT_COPIED))
    for d in ("proc", "sys", "dev", "tmp", "etc", "out", "targets"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.makedirs(os.path.join(root, "usr", "local", "bin"))
    shutil.copy2(spyc_path, os.path.join(root, "usr", "local", "bin", "spyc"))
    elves = [python.realpath, spyc_path]
    for top, _, files in os.walk(os.path.join(root, "opt", "py")):
        elves += [os.path.join(top, f) for f in files if ".so" in f]
    for lib in libraries(elves):
        if lib.startswith(prefix + "/"):
            continue
        dest = root + lib
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(lib, dest)
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."],
                           stdout=subprocess.PIPE)
    podman.run("import", "-", name, stdin=tar.stdout)
    tar.wait()
    shutil.rmtree(root)
    return "/opt/py/" + os.path.relpath(python.realpath, prefix)


def remove_container(podman, name, pid=None):
    """Remove the container; its process killed in any case, should
    podman fail to (a target left spinning would load every later
    test)."""
    subprocess.run(podman.argv + ["rm", "--force", "--time", "0", name],
                   env=podman.env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=PODMAN_TIMEOUT)
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Container(object):
    """states.py running in a container; what it reported."""

    def __init__(self, podman, image, exe, workdir, name):
        self.podman = podman
        self.name = name
        out = os.path.join(workdir, "out")
        os.makedirs(out)
        podman.run("run", "-d", "--name", name,
                   "-v", "%s:/targets:ro" % TARGETS, "-v", "%s:/out" % out,
                   "-e", "LD_LIBRARY_PATH=/opt/py/lib", image,
                   exe, "/targets/states.py", "/out/report.json")
        report = os.path.join(out, "report.json")
        deadline = time.time() + REPORT_TIMEOUT
        while not os.path.exists(report):
            if time.time() > deadline:
                pytest.fail("states.py in the container did not report:\n" +
                            podman.run("logs", name))
            time.sleep(0.1)
        with open(report) as f:
            self.info = json.load(f)
        self.pid = int(podman.run("inspect", "--format", "{{.State.Pid}}",
                                  name))

    def inner_ids(self):
        """{host tid: the container's tid} of the target's tasks."""
        ids = {}
        for tid in os.listdir("/proc/%d/task" % self.pid):
            with open("/proc/%d/task/%s/status" % (self.pid, tid)) as f:
                for line in f:
                    if line.startswith("NSpid:"):
                        ids[int(tid)] = int(line.split()[-1])
        return ids

    def close(self):
        remove_container(self.podman, self.name, self.pid)


@pytest.fixture(scope="module", params=VERSIONS)
def container(request, podman, spyc, tmp_path_factory):
    python = find_slot(request.param)
    workdir = str(tmp_path_factory.mktemp("container"))
    tag = "spyc-test-%s" % python.minor.replace(".", "")
    exe = make_image(podman, python, workdir, tag, spyc.path)
    try:
        c = Container(podman, tag, exe, workdir, tag + "-states")
    except BaseException:
        remove_container(podman, tag + "-states")
        raise
    c.image = tag
    yield c
    c.close()


def check_states(doc, info, describe):
    """dump --json's threads against what states.py reported."""
    by_ident = dict((th["thread_id"], th) for th in doc["threads"])
    roles = info["roles"]
    for role in ("sleeper", "locker"):
        th = by_ident[roles[role]["ident"]]
        assert th["state"] == "idle", (role, describe)
        assert th["frames"][0]["name"] == roles[role]["top"][0], (
            role, describe)
    spin = by_ident[roles["spinner"]["ident"]]
    assert spin["state"] in ("running", "waiting for the GIL"), describe


def test_dump_maps_thread_ids(spyc, container):
    """Each thread's id is the host's, its state is read (not unknown),
    and the ids the container sees are shown beside them."""
    doc, res = spyc.dump_json(container.pid)
    inner = container.inner_ids()
    assert inner[container.pid] != container.pid, (
        "the target is not in a pid namespace of its own", inner)
    assert doc["pid"] == container.pid, res.describe()
    assert doc["pid_in_namespace"] == container.info["pid"], res.describe()
    for th in doc["threads"]:
        assert th["native_id"] in inner, (th, inner)
        assert th["native_id_in_namespace"] == inner[th["native_id"]], th
        assert th["state"] != "unknown", th
    check_states(doc, container.info, res.describe())
    main = [th for th in doc["threads"] if th["native_id"] == container.pid]
    assert main and main[0]["name"] == "MainThread", doc["threads"]
    text = spyc.run(["dump", "--pid", container.pid])
    text.assert_ok()
    assert "Process %d (pid %d in its namespace)" % (
        container.pid, container.info["pid"]) in text.stdout, text.describe()
    for host, tid in inner.items():
        assert "(tid %d, %d in its namespace)" % (host, tid) in text.stdout, (
            text.describe())


def test_native_stops_only_the_target(spyc, container, tmp_path):
    """--native traces the target's own threads, by their host ids (the
    container's ids are other processes here), and names the frames of
    the container's libpython, a file the host does not have."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (scripts/install-deps "
                    "installs it)")
    log = str(tmp_path / "strace.txt")
    res = spyc.run(["dump", "--pid", container.pid, "--native"],
                   prefix=["strace", "-f", "-qq", "-e", "trace=ptrace",
                           "-o", log])
    res.assert_ok()
    with open(log) as f:
        traced = set(int(t) for t in re.findall(
            r"ptrace\(PTRACE_(?:SEIZE|ATTACH|INTERRUPT), (\d+)", f.read()))
    tasks = set(container.inner_ids())
    assert traced, "no thread was traced\n" + res.describe()
    assert traced <= tasks, (
        "spyc traced tasks that are not the target's: %s (the target's: "
        "%s)\n%s" % (sorted(traced - tasks), sorted(tasks), res.describe()))
    assert not re.search(r"libpython[\w.]*\+0x", res.stdout), (
        "libpython's frames left unnamed\n" + res.describe())
    assert "native frames unmerged" not in res.stdout, res.describe()
    # The C API's functions are libpython's (PyThread_acquire_lock_timed,
    # _PySemaphore_Wait, under a thread that waits).
    assert re.search(r"^ +_?Py\w+ .*\[native\]$", res.stdout, re.M), (
        "no frame of libpython named\n" + res.describe())


def test_record_idle_filter(spyc, container, tmp_path):
    """Without --idle the blocked threads are left out, as on the host:
    their states are read through their host ids."""
    roles = container.info["roles"]

    def record(name, *extra):
        path = str(tmp_path / name)
        res = spyc.run(["record", "--pid", container.pid, "--duration", 1,
                        "--full-filenames", "-o", path] + list(extra),
                       timeout=60)
        assert res.returncode == 0, res.describe()
        return folded(path)

    busy = record("busy.txt")
    leaves = set(frames[-1] for frames, _ in busy)
    for role in ("sleeper", "locker"):
        assert frame_text(roles[role]["top"]) not in leaves, (role, busy)
    assert share(busy, "spinner") > 0.9, busy
    every = record("idle.txt", "--idle")
    leaves = set(frames[-1] for frames, _ in every)
    for role in ("sleeper", "locker"):
        assert frame_text(roles[role]["top"]) in leaves, (role, leaves)


# dump exits 1 when a thread's stack kept changing while it was read, in
# every attempt: on a loaded machine, now and then.  Taken again.
DUMP_TRIES = 3


def spyc_in(container, where, *args):
    """Run spyc in a container (podman exec, or a podman run of the
    image with more arguments): (exit code, stdout, stderr)."""
    for _ in range(DUMP_TRIES):
        res = subprocess.run(container.podman.argv + where +
                             ["/usr/local/bin/spyc"] + [str(a) for a in args],
                             env=container.podman.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=PODMAN_TIMEOUT)
        if res.returncode != 1:
            break
    return res.returncode, decode(res.stdout), decode(res.stderr)


def test_inside_the_container(container):
    """spyc run in the target's own container: its ids are spyc's."""
    code, out, err = spyc_in(container, ["exec", container.name], "dump",
                             "--pid", container.info["pid"], "--json")
    describe = "exit %d\n%s\n%s" % (code, out, err)
    assert code == 0, describe
    doc = json.loads(out)
    assert doc["pid"] == container.info["pid"], describe
    assert "pid_in_namespace" not in doc, describe
    assert set(th["native_id"] for th in doc["threads"]) == set(
        container.inner_ids().values()), describe
    check_states(doc, container.info, describe)


def test_sidecar(container):
    """spyc in a container of its own that shares the target's pid
    namespace (podman's --pid container:NAME, as Kubernetes' debug
    containers and shareProcessNamespace do), with SYS_PTRACE; --native
    reads the target's libraries through its root, not the sidecar's."""
    where = ["run", "--rm", "--pid", "container:" + container.name,
             "--cap-add", "SYS_PTRACE", "-e", "LD_LIBRARY_PATH=/opt/py/lib",
             container.image]
    code, out, err = spyc_in(container, where, "dump", "--pid",
                             container.info["pid"], "--json")
    describe = "exit %d\n%s\n%s" % (code, out, err)
    assert code == 0, describe
    check_states(json.loads(out), container.info, describe)
    code, out, err = spyc_in(container, where, "dump", "--native", "--pid",
                             container.info["pid"])
    describe = "exit %d\n%s\n%s" % (code, out, err)
    assert code == 0, describe
    assert re.search(r"^ +_?Py\w+ .*\[native\]$", out, re.M), describe
    assert "native frames unmerged" not in out, describe


def test_gpu_refused_in_one_line(spyc, container, tmp_path):
    """--gpu into a container is not done yet: one line says so and why,
    and the CPU profile is still written (exit 0)."""
    if not os.path.exists(AGENT):
        pytest.skip("the GPU agent was not built (no CUPTI headers)")
    out = str(tmp_path / "out.txt")
    res = spyc.run(["record", "--gpu", "--pid", container.pid, "--duration",
                    1, "-o", out], timeout=60)
    assert res.returncode == 0, res.describe()
    said = [l for l in res.stderr_lines if "--gpu" in l]
    assert said == [
        "spyc: --gpu: pid %d runs in a container (its root is not spyc's): "
        "the GPU agent cannot be loaded into it from outside yet; run spyc "
        "inside the container; CPU profile only" % container.pid], (
            res.describe())
    assert "spinner" in " ".join(open(out).read().split(";")), res.describe()
