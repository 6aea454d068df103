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
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import fakegpu
import pyfind
from conftest import (AGENT, REPORT_TIMEOUT, TARGETS, TESTS, SpycResult,
                      assert_running, decode)
from fakegpu import PROLOGUE
from test_gpu_fake import folded_gpu_stacks, gpu_summary
from test_subprocesses import folded_by_pid
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
# In every image: tests/lib/debugspin.c's library stripped, and its debug
# info under the image's /usr/lib/debug/.build-id only.
DEBUGSPIN = os.path.join(TESTS, "build", "lib", "debugspin.so")
DEBUGSPIN_IN_IMAGE = "/opt/lib/libspycdebugspin.so"


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


def build_id(path):
    """The hex build id of the ELF file at path."""
    out = decode(subprocess.check_output(["readelf", "-n", path]))
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def add_debugspin(root):
    """Put DEBUGSPIN under root stripped (no symbol for its static
    function), its debug info where a distribution puts it: under the
    root's /usr/lib/debug, by build id."""
    dest = root + DEBUGSPIN_IN_IMAGE
    os.makedirs(os.path.dirname(dest))
    subprocess.check_call(["objcopy", "--strip-all", DEBUGSPIN, dest])
    bid = build_id(DEBUGSPIN)
    debug = os.path.join(root, "usr", "lib", "debug", ".build-id", bid[:2],
                         bid[2:] + ".debug")
    os.makedirs(os.path.dirname(debug))
    subprocess.check_call(["objcopy", "--only-keep-debug", DEBUGSPIN,
                           debug])


def make_image(podman, python, workdir, name, spyc_path):
    """Import an image whose /opt/py is python's prefix, with spyc at
    /usr/local/bin/spyc; returns the path of its interpreter inside."""
    out = subprocess.check_output(
        [python.path, "-c", "import sys; print(sys.prefix)"])
    # Resolved as the interpreter's path is: a prefix reached through a
    # symbolic link would put the interpreter outside /opt/py.
    prefix = os.path.realpath(decode(out).strip())
    root = os.path.join(workdir, "rootfs")
    shutil.copytree(prefix, os.path.join(root, "opt", "py"), symlinks=True,
                    ignore=shutil.ignore_patterns(*NOT_COPIED))
    for d in ("proc", "sys", "dev", "tmp", "etc", "out", "targets"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.makedirs(os.path.join(root, "usr", "local", "bin"))
    shutil.copy2(spyc_path, os.path.join(root, "usr", "local", "bin", "spyc"))
    elves = [python.realpath, spyc_path]
    if os.path.exists(AGENT):
        # Beside spyc, where it looks for it.
        shutil.copy2(AGENT, os.path.join(root, "usr", "local", "bin",
                                         os.path.basename(AGENT)))
        elves.append(AGENT)
    for top, _, files in os.walk(os.path.join(root, "opt", "py")):
        elves += [os.path.join(top, f) for f in files if ".so" in f]
    add_debugspin(root)
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


def wait_for_file(podman, name, path):
    """Wait for the container name's program to write path; fail at once
    should it end first."""
    deadline = time.time() + REPORT_TIMEOUT
    next_look = time.time() + 1
    while not os.path.exists(path):
        now = time.time()
        gone = now > next_look and podman.run(
            "inspect", "--format", "{{.State.Running}}", name) != "true"
        if gone and os.path.exists(path):
            break
        if gone or now > deadline:
            pytest.fail("the program in the container did not write %s%s:"
                        "\n%s" % (path, " (it ended)" if gone else "",
                                   podman.run("logs", name)))
        if now > next_look:
            next_look = now + 1
        time.sleep(0.05)


class Container(object):
    """A program running in a container (states.py unless told), its
    /out a directory of the test's; what it reported in /out/REPORT."""

    def __init__(self, podman, image, exe, workdir, name, argv=None,
                 volumes=(), report="report.json", options=()):
        self.podman = podman
        self.name = name
        self.pid = None
        self.out = os.path.join(workdir, "out")
        os.makedirs(self.out)
        mounts = ["-v", "%s:/targets:ro" % TARGETS,
                  "-v", "%s:/out" % self.out]
        for v in volumes:
            mounts += ["-v", v]
        podman.run(*(["run", "-d", "--name", name] + list(options) + mounts +
                     ["-e", "LD_LIBRARY_PATH=/opt/py/lib", image, exe] +
                     (argv or ["/targets/states.py", "/out/report.json"])))
        wait_for_file(podman, name, os.path.join(self.out, report))
        with open(os.path.join(self.out, report)) as f:
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


class Image(object):
    """An image made from a CPython of this machine: its tag, the path of
    its interpreter inside, and that CPython."""

    def __init__(self, tag, exe, python):
        self.tag, self.exe, self.python = tag, exe, python


@pytest.fixture(scope="module", params=VERSIONS)
def image(request, podman, spyc, tmp_path_factory):
    python = find_slot(request.param)
    workdir = str(tmp_path_factory.mktemp("image"))
    tag = "spyc-test-%s" % python.minor.replace(".", "")
    exe = make_image(podman, python, workdir, tag, spyc.path)
    yield Image(tag, exe, python)
    subprocess.run(podman.argv + ["rmi", "--force", tag], env=podman.env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=PODMAN_TIMEOUT)


def start_container(podman, image, workdir, name, **kw):
    """A Container, removed should its start fail."""
    try:
        return Container(podman, image.tag, image.exe, workdir, name, **kw)
    except BaseException:
        remove_container(podman, name)
        raise


@pytest.fixture(scope="module")
def container(image, podman, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("container"))
    c = start_container(podman, image, workdir, image.tag + "-states")
    c.image = image.tag
    c.exe = image.exe
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


def test_native_debug_info_in_container(spyc, image, podman, tmp_path):
    """--native names a function of a stripped library from its debug
    info under the container's /usr/lib/debug (by build id), which the
    host does not have: before, it was the library's name and an
    offset."""
    c = start_container(podman, image, str(tmp_path),
                        image.tag + "-debugspin",
                        argv=["/targets/debugspin.py", DEBUGSPIN_IN_IMAGE,
                              "/out/report.json"])
    try:
        res = spyc.run(["dump", "--pid", c.pid, "--native"])
        res.assert_ok()
        main = res.stdout.split("(tid %d" % c.pid, 1)[-1]
        frames = re.findall(r"^    (.*) \[native\]$", main, re.M)
        assert frames and frames[0].startswith("spyc_hidden_spin ("), (
            "the innermost frame is not named from the container's debug "
            "info\n" + res.describe())
        assert "debugspin.c:" in frames[0], res.describe()
        assert frames[1].startswith("spyc_debug_spin"), res.describe()
    finally:
        c.close()


def test_record_idle_filter(spyc, container, tmp_path):
    """Without --idle the blocked threads are left out, as on the host:
    their states are read through their host ids; --gil keeps the
    thread that holds the GIL."""
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
    # --gil: the thread that holds the GIL, read from the container's
    # interpreter: the spinner, never a blocked thread.
    gil = record("gil.txt", "--gil")
    leaves = set(frames[-1] for frames, _ in gil)
    for role in ("sleeper", "locker"):
        assert frame_text(roles[role]["top"]) not in leaves, (role, gil)
    assert share(gil, "spinner") > 0.9, gil


# A program that writes itself into the container's own file system and
# runs from there; DIR is also where the test puts another file of the
# same name on the host.
INNER_WORK = r"""
import json, os, sys, time

def inner_work():
    t = time.time()
    while True:
        sum(i * i for i in range(500))  # THE CONTAINER'S LINE

with open("/out/report.json", "w") as f:
    json.dump({"pid": os.getpid()}, f)
inner_work()
"""
INNER_START = r"""
import os, sys
d, text = sys.argv[1], sys.argv[2]
os.makedirs(d)
with open(os.path.join(d, "work.py"), "w") as f:
    f.write(text)
os.execv(sys.executable, [sys.executable, os.path.join(d, "work.py")])
"""


def test_report_container_sources(spyc, image, podman, tmp_path):
    """A profile of a target in a container carries its source files as
    the container has them, read through its root: once the container is
    gone, report shows the container's line, never the text of the host's
    file at the same path (the profile knows which file it was)."""
    inner = str(tmp_path / "inner")
    c = start_container(podman, image, str(tmp_path), image.tag + "-srcs",
                        argv=["-c", INNER_START, inner, INNER_WORK])
    try:
        path = str(tmp_path / "prof.json")
        res = spyc.run(["record", "--pid", c.pid, "--duration", 1, "-o",
                        path], timeout=60)
        assert res.returncode in (0, 1), res.describe()
    finally:
        c.close()
    # The host's file of that name: another text.
    os.makedirs(inner)
    with open(os.path.join(inner, "work.py"), "w") as f:
        f.write(INNER_WORK.replace("THE CONTAINER'S", "THE HOST'S"))
    out = spyc.run(["report", path, "-f", "inner_work"])
    out.assert_ok()
    assert "# THE CONTAINER'S LINE" in out.stdout, out.stdout
    assert "THE HOST'S" not in out.stdout, out.stdout
    # Without the texts, the identity alone: the host's is another file.
    with open(path) as f:
        doc = json.load(f)
    for entry in doc["spyc_sources"].values():
        entry.pop("text", None)
    with open(path, "w") as f:
        json.dump(doc, f)
    out = spyc.run(["report", path, "-f", "inner_work"])
    out.assert_ok()
    assert "THE HOST'S" not in out.stdout, out.stdout
    assert "(source changed since it was recorded: not shown)" in \
        out.stdout, out.stdout


# dump exits 1 when a thread's stack kept changing while it was read, in
# every attempt: on a loaded machine, now and then.  Taken again.
DUMP_TRIES = 3


def spyc_in(container, where, *args, **kw):
    """Run spyc in a container (podman exec, or a podman run of the
    image with more arguments), again on exit 1 up to tries times
    (DUMP_TRIES unless told): (exit code, stdout, stderr)."""
    return spyc_in_argv(container, where + ["/usr/local/bin/spyc"], *args,
                        **kw)


def spyc_in_argv(container, argv, *args, **kw):
    """Run argv (podman's, which runs spyc) with args after it, again on
    exit 1 as spyc_in does: (exit code, stdout, stderr)."""
    for _ in range(kw.get("tries", DUMP_TRIES)):
        res = subprocess.run(container.podman.argv + argv +
                             [str(a) for a in args],
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


# A seccomp profile that refuses what spyc needs (Docker's before 19.03
# refused both without CAP_SYS_PTRACE), allowing the rest.
REFUSING_PROFILE = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [{"names": ["process_vm_readv", "ptrace"],
                  "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
}


@pytest.mark.parametrize("refusal", ["seccomp", "no-capabilities"])
def test_sidecar_refused(container, tmp_path, refusal):
    """A sidecar the runtime does not let read the target, in the two
    ways a runtime's settings refuse it: a seccomp profile that refuses
    process_vm_readv and ptrace, and no capability at all beside a
    target that holds the default ones.  One line names the cause and
    the runtime's option that lifts it; exit 2."""
    if refusal == "seccomp":
        profile = str(tmp_path / "seccomp.json")
        with open(profile, "w") as f:
            json.dump(REFUSING_PROFILE, f)
        options = ["--cap-add", "SYS_PTRACE", "--security-opt",
                   "seccomp=" + profile]
        words = ["seccomp filter", "refuses process_vm_readv",
                 "--security-opt seccomp=unconfined"]
    else:
        options = ["--cap-drop", "ALL"]
        words = ["holds capabilities spyc does not",
                 "--cap-add SYS_PTRACE"]
    where = (["run", "--rm", "--pid", "container:" + container.name] +
             options + ["-e", "LD_LIBRARY_PATH=/opt/py/lib", container.image])
    code, out, err = spyc_in(container, where, "dump", "--pid",
                             container.info["pid"], tries=1)
    describe = "exit %d\n%s\n%s" % (code, out, err)
    assert code == 2, describe
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "spyc: no permission to read pid %d" % container.info["pid"]), (
            describe)
    for w in words:
        assert w in lines[0], (w, describe)


# The GPU program in the container: the fake CUDA driver and CUPTI
# (tests/fakecuda, mounted at /fake) loaded as a CUDA program loads the
# real ones (in launch mode the "driver" starts spyc's agent), then
# kernels launched from a known stack until the test says stop, or for
# STEPS steps; its own traceback at a launch is the truth to compare with.
GPU_PROGRAM = PROLOGUE + r"""
report = sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else -1
if os.environ.get("CUDA_INJECTION64_PATH"):
    ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
seen = {}
counts = {"gemm_kernel": 0}

class Model(object):
    def forward(self, n):
        return [self.layer(i) for i in range(n)]

    def layer(self, i):
        cupti.fake_launch(b"gemm_kernel", 100000, 7); here = None if seen else traceback.extract_stack()
        counts["gemm_kernel"] += 1
        if here is not None:
            seen["truth"] = [[f[2], f[1]] for f in here]
        return i

def train(model):
    n = 0
    while not os.path.exists(report + ".stop") and n != steps:
        n += 1
        model.forward(2)
        s = time.time()
        while time.time() - s < 0.001:
            pass

def publish(path, doc):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(path + ".tmp", path)

publish(report + ".ready", {"pid": os.getpid()})
train(Model())
publish(report, {"truth": seen["truth"], "counts": counts})
"""

# Where spyc may put its files under a container's root.
SPYC_DIRS = ("tmp", "var/tmp", "dev/shm")


def left_behind(pid):
    """What of spyc's is under pid's root."""
    found = []
    for d in SPYC_DIRS:
        try:
            names = os.listdir("/proc/%d/root/%s" % (pid, d))
        except OSError:
            continue
        found += ["/%s/%s" % (d, n) for n in names if n.startswith("spyc")]
    return found


AGENT_MAPPED = re.compile(r"/spyc-agent\.so( \(deleted\))?$")


# Run first by the program in test_gpu_attach_takes_no_symlink: its /tmp
# made a symbolic link to a directory of the host (argv[1]), /var/tmp
# made; then the GPU program.
SYMLINKED_TMP = r"""
import os, runpy, sys
os.rmdir("/tmp")
os.symlink(sys.argv[1], "/tmp")
os.makedirs("/var/tmp", exist_ok=True)
sys.argv = ["/gpu/train.py"] + sys.argv[2:]
runpy.run_path("/gpu/train.py", run_name="__main__")
"""


@pytest.fixture(scope="module")
def fake_cuda(spyc):
    if not os.path.exists(AGENT):
        pytest.skip("the GPU agent was not built (no CUPTI headers)")
    return fakegpu.build(spyc)


def gpu_container(fake, image, podman, tmp_path, suffix, first=(),
                  options=()):
    """The GPU program running in a container until told to stop, with
    the fake CUDA (fake) at /fake and the program at /gpu/train.py (after
    /gpu/first.py and its arguments, with first)."""
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    (gpu / "train.py").write_text(GPU_PROGRAM)
    (gpu / "first.py").write_text(SYMLINKED_TMP)
    argv = ["/gpu/train.py", "/fake", "/out/report.json"]
    if first:
        argv = ["/gpu/first.py"] + list(first) + argv[1:]
    return start_container(
        podman, image, str(tmp_path), image.tag + suffix,
        report="report.json.ready",
        volumes=["%s:/fake:ro" % fake, "%s:/gpu:ro" % gpu], argv=argv,
        options=options)


def check_launch_stacks(res, out, truth):
    """The GPU stacks of the folded profile out: those of gemm_kernel,
    and those of them that are exact, each as the program's truth says
    (its traceback, but the innermost line: the launch's)."""
    truth = [tuple(f) for f in truth]
    truth[-1] = (truth[-1][0], [i for i, l in enumerate(
        GPU_PROGRAM.splitlines(), 1) if "fake_launch(b\"gemm" in l][0])
    with open(out) as f:
        stacks = folded_gpu_stacks(f.read())
    gemm = dict((k, w) for k, w in stacks.items() if k[2] == "gemm_kernel")
    exact = dict((k, w) for k, w in gemm.items()
                 if k[0] == "[GPU time, by the Python stack of the launch]")
    assert exact, "no kernel on its launch's stack\n" + res.describe()
    for (root, frames, leaf), weight in exact.items():
        # Paths are the container's; methods by their qualified name.
        names = [(n.rsplit(".", 1)[-1], l) for n, l in frames]
        assert names == truth, (frames, truth)
    return gemm, exact


def loaded_agents(pid):
    """The (device, inode) of each spyc-agent.so file pid has mapped."""
    found = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and AGENT_MAPPED.search(fields[5].strip()):
                found.add((fields[3], fields[4]))
    return found


def test_gpu_attach(spyc, fake_cuda, image, podman, tmp_path):
    """spyc on the host loads its agent into a containerized program
    (PEP 768 from 3.14, ptrace before) through a directory it makes
    under the container's root, and reads the channel it made there: each
    kernel is on the Python stack that launched it, as the program's own
    traceback says; nothing of spyc's is left in the container."""
    c = gpu_container(fake_cuda, image, podman, tmp_path, "-gpu")
    try:
        out = str(tmp_path / "out.txt")
        res = spyc.run(["record", "--gpu", "--rate", "200", "--duration", 1,
                        "-o", out, "--pid", c.pid], timeout=120)
        leftovers = left_behind(c.pid)
        again = spyc.run(["record", "--gpu", "--duration", 0.2, "-o",
                          str(tmp_path / "again.txt"), "--pid", c.pid],
                         timeout=120)
        leftovers += left_behind(c.pid)
        agent_files = loaded_agents(c.pid)
        assert_running(c.pid)
        with open(os.path.join(c.out, "report.json.stop"), "w"):
            pass
        wait_for_file(podman, c.name, os.path.join(c.out, "report.json"))
        logs = podman.run("logs", c.name)
    finally:
        c.close()
    assert res.returncode == 0, res.describe()
    version = tuple(int(v) for v in image.python.minor.split("."))
    way = "PEP 768" if version >= (3, 14) else "ptrace"
    assert any(l.startswith("spyc: --gpu: agent loaded into pid %d through "
                            "%s" % (c.pid, way)) for l in res.stderr_lines), (
        res.describe())
    assert " 0 records lost" in res.stderr, res.describe()
    assert leftovers == [], leftovers
    # Once loaded, the agent is the same library for a later spyc (as it
    # is on the host): no second copy loaded, and it reports to that spyc
    # once the first one has stopped.
    assert again.returncode == 0, again.describe()
    assert "GPU activities (CUPTI)" in again.stderr and \
        "already" not in again.stderr, again.describe()
    assert len(agent_files) == 1, agent_files
    assert logs == "", logs
    with open(os.path.join(c.out, "report.json")) as f:
        got = json.load(f)
    gemm, exact = check_launch_stacks(res, out, got["truth"])
    # 100 us each: the fake's times are exact.  Kernels launched before
    # spyc knew the interpreter go by the launching thread's samples,
    # found by its host id (CUPTI gives the container's).
    calls = gpu_summary(res)["gemm_kernel"][0]
    assert sum(gemm.values()) == 100 * calls, gemm
    assert 0 < calls < got["counts"]["gemm_kernel"], (calls, got["counts"])
    assert not [k for k in gemm if k[0] ==
                "[GPU time, no CPU sample of the launching thread]"], gemm


def test_gpu_attach_takes_no_symlink(spyc, fake_cuda, image, podman,
                                     tmp_path):
    """A container whose /tmp is a symbolic link to an absolute path
    (followed through /proc/PID/root, it would lead into the host's
    root): spyc does not take it, and loads the agent through /var/tmp;
    nothing is written to the host's directory of that path."""
    host_dir = tmp_path / "host-side"
    host_dir.mkdir()
    c = gpu_container(fake_cuda, image, podman, tmp_path, "-symlink",
                      first=[str(host_dir)])
    try:
        assert os.readlink("/proc/%d/root/tmp" % c.pid) == str(host_dir)
        res = spyc.run(["record", "--gpu", "--duration", 0.5, "-o",
                        str(tmp_path / "out.txt"), "--pid", c.pid],
                       timeout=120)
        leftovers = left_behind(c.pid)
    finally:
        with open(os.path.join(c.out, "report.json.stop"), "w"):
            pass
        c.close()
    assert res.returncode == 0, res.describe()
    assert os.listdir(str(host_dir)) == [], os.listdir(str(host_dir))
    assert any(l.startswith("spyc: --gpu: agent loaded into pid %d" % c.pid)
               for l in res.stderr_lines), res.describe()
    assert "gemm_kernel" in gpu_summary(res), res.describe()
    assert leftovers == [], leftovers


def test_gpu_sidecar(spyc, fake_cuda, image, podman, tmp_path):
    """spyc in a sidecar (the target's pid namespace, a root of its own,
    SYS_PTRACE) loads its agent into the target as from the host: the
    target's root is not its own either."""
    c = gpu_container(fake_cuda, image, podman, tmp_path, "-gpusidecar")
    try:
        code, out, err = spyc_in(
            c, ["run", "--rm", "--pid", "container:" + c.name, "--cap-add",
                "SYS_PTRACE", "-v", "%s:/out" % c.out, "-e",
                "LD_LIBRARY_PATH=/opt/py/lib", image.tag],
            "record", "--gpu", "--rate", "200", "--duration", 0.5, "-o",
            "/out/sidecar.txt", "--pid", c.info["pid"],
            # Once: a second spyc would find the agent taken.
            tries=1)
        leftovers = left_behind(c.pid)
        assert_running(c.pid)
        with open(os.path.join(c.out, "report.json.stop"), "w"):
            pass
        wait_for_file(podman, c.name, os.path.join(c.out, "report.json"))
    finally:
        c.close()
    res = SpycResult(["spyc (in a sidecar)"], code, out, err)
    assert code == 0, res.describe()
    assert any(l.startswith("spyc: --gpu: agent loaded into pid %d through "
                            % c.info["pid"]) for l in res.stderr_lines), (
        res.describe())
    assert " 0 records lost" in err, res.describe()
    assert leftovers == [], leftovers
    with open(os.path.join(c.out, "report.json")) as f:
        got = json.load(f)
    check_launch_stacks(res, os.path.join(c.out, "sidecar.txt"),
                        got["truth"])


def test_gpu_launch_inside(spyc, fake_cuda, image, podman, tmp_path):
    """spyc inside the container launching the program (podman exec):
    the driver loads the agent from spyc's directory in the image, the
    channel is in the container's /dev/shm; every kernel the program
    launched is in the profile, on its launch's stack."""
    c = gpu_container(fake_cuda, image, podman, tmp_path, "-launch")
    try:
        code, out, err = spyc_in(
            c, ["exec", "-e", "LD_LIBRARY_PATH=/opt/py/lib", c.name],
            "record", "--gpu", "--rate", "200", "-o", "/out/launch.txt",
            "--", image.exe, "/gpu/train.py", "/fake", "/out/launch.json",
            200)
        leftovers = left_behind(c.pid)
    finally:
        with open(os.path.join(c.out, "report.json.stop"), "w"):
            pass
        c.close()
    res = SpycResult(["spyc (in the container)"], code, out, err)
    assert code == 0, res.describe()
    assert " 0 records lost" in err, res.describe()
    assert leftovers == [], leftovers
    with open(os.path.join(c.out, "launch.json")) as f:
        got = json.load(f)
    gemm, exact = check_launch_stacks(res, os.path.join(c.out, "launch.txt"),
                                      got["truth"])
    assert gpu_summary(res)["gemm_kernel"][0] == \
        got["counts"]["gemm_kernel"] == 400, (res.describe(), got)
    assert sum(gemm.values()) == 100 * 400, gemm


def test_gpu_refused_in_one_line(spyc, image, podman, tmp_path):
    """A container whose root is read-only, with /dev/shm noexec, has no
    place for the agent: one line says so and why (each place tried),
    and the CPU profile is still written (exit 0)."""
    if not os.path.exists(AGENT):
        pytest.skip("the GPU agent was not built (no CUPTI headers)")
    name = image.tag + "-readonly"
    c = start_container(podman, image, str(tmp_path), name,
                        options=["--read-only", "--read-only-tmpfs=false"])
    try:
        out = str(tmp_path / "out.txt")
        res = spyc.run(["record", "--gpu", "--pid", c.pid, "--duration",
                        0.5, "-o", out], timeout=60)
        with open("/proc/%d/mountinfo" % c.pid) as f:
            mounts = f.read()
    finally:
        c.close()
    assert res.returncode == 0, res.describe()
    said = [l for l in res.stderr_lines if "--gpu" in l]
    assert re.search(r" /dev/shm .*\bnoexec\b", mounts), mounts
    assert said == [
        "spyc: --gpu: pid %d runs in a container: no directory of pid %d's "
        "root takes a file of spyc's (/tmp: Read-only file system, /var/tmp: "
        "No such file or directory, /dev/shm: mounted noexec); CPU profile "
        "only" % (c.pid, c.pid)], res.describe()
    assert "spinner" in " ".join(open(out).read().split(";")), res.describe()


def test_gpu_channel_does_not_fit(spyc, fake_cuda, image, podman, tmp_path):
    """The only place for spyc's files is a 1 MiB /tmp: the agent fits,
    its 16 MiB channel does not.  One line says so; the program, which
    the agent would have killed with SIGBUS writing to pages the file
    system has no room for, goes on and ends as it should."""
    c = gpu_container(fake_cuda, image, podman, tmp_path, "-full",
                      options=["--read-only", "--read-only-tmpfs=false",
                               "--tmpfs", "/tmp:rw,size=1m,exec"])
    try:
        res = spyc.run(["record", "--gpu", "--duration", 0.5, "-o",
                        str(tmp_path / "out.txt"), "--pid", c.pid],
                       timeout=120)
        leftovers = left_behind(c.pid)
        with open(os.path.join(c.out, "report.json.stop"), "w"):
            pass
        wait_for_file(podman, c.name, os.path.join(c.out, "report.json"))
        logs = podman.run("logs", c.name)
    finally:
        c.close()
    assert res.returncode == 0, res.describe()
    said = [l for l in res.stderr_lines if "--gpu" in l]
    assert len(said) == 1 and re.match(
        r"spyc: --gpu: cannot create a channel for the GPU agent in "
        r"/tmp/spyc-\d+-\w+: No space left on device; CPU profile only$",
        said[0]), res.describe()
    assert leftovers == [], leftovers
    assert logs == "", logs


# A containerized parent that starts child Pythons, each spinning in a
# function of its own, and says which pid (the container's) each is.
FAMILY_PROGRAM = r"""
import json, os, subprocess, sys, time
out = sys.argv[1]
def publish(path, doc):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(path + ".tmp", path)
CHILD = '''
import json, os, sys, time
def child_%d_work():
    while not os.path.exists(sys.argv[1] + ".stop"):
        pass
path = sys.argv[1] + ".child%d"
with open(path + ".tmp", "w") as f:
    json.dump({"pid": os.getpid()}, f)
os.rename(path + ".tmp", path)
child_%d_work()
'''
def parent_work(kids):
    while not os.path.exists(out + ".stop"):
        pass
    for k in kids:
        k.wait()
kids = [subprocess.Popen([sys.executable, "-c", CHILD % (i, i, i), out])
        for i in (1, 2)]
while not all(os.path.exists(out + ".child%d" % i) for i in (1, 2)):
    time.sleep(0.01)
children = {}
for i in (1, 2):
    with open(out + ".child%d" % i) as f:
        children[i] = json.load(f)["pid"]
publish(out, {"pid": os.getpid(), "children": children})
parent_work(kids)
"""


def test_subprocesses(spyc, image, podman, tmp_path):
    """--subprocesses from the host on a containerized parent: its child
    Pythons are sampled too, each under its host pid, in the function it
    runs (what it said its pid is in the container maps to that pid)."""
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "family.py").write_text(FAMILY_PROGRAM)
    name = image.tag + "-family"
    c = start_container(podman, image, str(tmp_path), name,
                        volumes=["%s:/prog:ro" % prog],
                        argv=["/prog/family.py", "/out/report.json"])
    try:
        inner = {}
        with open("/proc/%d/task/%d/children" % (c.pid, c.pid)) as f:
            children = f.read().split()
        for child in children:
            with open("/proc/%s/status" % child) as f:
                nspid = re.search(r"^NSpid:\s+(.*)$", f.read(), re.M)
            inner[int(nspid.group(1).split()[-1])] = int(child)
        out = str(tmp_path / "tree.txt")
        res = spyc.run(["record", "--subprocesses", "--threads", "--duration",
                        0.5, "-o", out, "--pid", c.pid], timeout=120)
    finally:
        with open(os.path.join(c.out, "report.json.stop"), "w"):
            pass
        c.close()
    assert res.returncode == 0, res.describe()
    by_pid = folded_by_pid(out)
    assert c.info["pid"] != c.pid, c.info
    assert "parent_work" in [f for frames, _ in by_pid[c.pid]
                             for f in frames], by_pid.keys()
    for i, pid in c.info["children"].items():
        host = inner[pid]
        assert host != pid, (host, pid)
        stacks = by_pid.get(host)
        assert stacks, ("child %s (pid %d, %d in the container) was not "
                        "sampled" % (i, host, pid), sorted(by_pid))
        work = "child_%s_work" % i
        assert sum(n for frames, n in stacks if work in frames) > \
            0.9 * sum(n for _, n in stacks), (work, stacks)


# Run in a sidecar by the image's own interpreter (the image has no
# shell, no setcap): spyc copied to /tmp, given CAP_SYS_PTRACE as setcap
# gives it (the security.capability attribute, VFS_CAP_REVISION_2 with
# the effective bit) unless argv[1] is "plain", then run as nobody.
AS_NOBODY = r"""
import os, shutil, struct, sys
spyc = "/tmp/spyc"
shutil.copy2("/usr/local/bin/spyc", spyc)
os.chmod(spyc, 0o755)
if sys.argv[1] == "setcap":
    CAP_SYS_PTRACE = 19
    os.setxattr(spyc, "security.capability",
                struct.pack("<5I", 0x02000000 | 1, 1 << CAP_SYS_PTRACE, 0,
                            0, 0))
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
os.execv(spyc, [spyc] + sys.argv[2:])
"""


@pytest.mark.parametrize("caps", ["setcap", "plain"])
def test_sidecar_not_root(container, caps):
    """spyc as a user other than root in a sidecar (with SYS_PTRACE in
    its bounding set), the target root's: given CAP_SYS_PTRACE by setcap,
    as the README's Permissions section says, it reads the target as root
    does; without it, one line that names the capability, exit 2."""
    where = ["run", "--rm", "--pid", "container:" + container.name,
             "--cap-add", "SYS_PTRACE", "-e", "LD_LIBRARY_PATH=/opt/py/lib",
             container.image, container.exe, "-c", AS_NOBODY, caps]
    code, out, err = spyc_in_argv(container, where, "dump", "--pid",
                                  container.info["pid"], "--json",
                                  tries=DUMP_TRIES if caps == "setcap" else 1)
    describe = "exit %d\n%s\n%s" % (code, out, err)
    if caps == "setcap":
        assert code == 0, describe
        check_states(json.loads(out), container.info, describe)
        return
    assert code == 2, describe
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "spyc: no permission to read pid %d" % container.info["pid"]), (
            describe)
    assert "CAP_SYS_PTRACE" in lines[0], describe


# The user scripts/install-deps adds for rootless podman, with subordinate
# uids and gids.
ROOTLESS_USER = "spyc-rootless"


class RootlessPodman(Podman):
    """podman run by user, rootless (the containers' root is the user's
    own uid on the host, their other ids its subordinate ones), with its
    storage, runtime directory and home under base, which the user owns."""

    def __init__(self, base, user):
        self.base = base
        uid = pwd.getpwnam(user).pw_uid
        conf = os.path.join(base, "containers.conf")
        with open(conf, "w") as f:
            f.write(CONTAINERS_CONF)
        xdg = os.path.join(base, "xdg")
        os.mkdir(xdg, 0o700)
        for d in (base, xdg):
            os.chown(d, uid, -1)
        self.env = dict(os.environ)
        self.argv = ["runuser", "-u", user, "--", "env",
                     "XDG_RUNTIME_DIR=" + xdg, "HOME=" + base,
                     "CONTAINERS_CONF=" + conf, "podman",
                     "--root", os.path.join(base, "storage"),
                     "--runroot", os.path.join(base, "run")]


class Rootless(object):
    """states.py in a rootless container: the podman, the host pid, what
    states.py reported, and a spyc the user can run."""


@pytest.fixture(scope="module")
def rootless(spyc, tmp_path_factory):
    for tool in ("podman", "runc", "runuser", "newuidmap", "newgidmap"):
        if not shutil.which(tool):
            pytest.skip("%s is not installed (scripts/install-deps "
                        "installs it)" % tool)
    try:
        user = pwd.getpwnam(ROOTLESS_USER)
    except KeyError:
        pytest.skip("no user %s to run rootless podman as "
                    "(scripts/install-deps adds it)" % ROOTLESS_USER)
    for ids in ("/etc/subuid", "/etc/subgid"):
        with open(ids) as f:
            if not any(line.startswith(ROOTLESS_USER + ":") for line in f):
                pytest.skip("%s has no subordinate ids in %s "
                            "(scripts/install-deps gives it some)" % (
                                ROOTLESS_USER, ids))
    # Where the user can reach: not under pytest's own directory (0700).
    base = tempfile.mkdtemp(prefix="spyc-rootless-")
    os.chmod(base, 0o755)
    p = RootlessPodman(base, ROOTLESS_USER)
    r = Rootless()
    r.podman, r.user, r.name = p, ROOTLESS_USER, "spyc-test-rootless"
    r.pid = None
    try:
        python = find_slot("newest")
        exe = make_image(p, python, str(tmp_path_factory.mktemp("rlimage")),
                         r.name, spyc.path)
        # spyc, and states.py, where the user can run and read them.
        r.spyc = os.path.join(base, "spyc")
        shutil.copy2(spyc.path, r.spyc)
        targets = os.path.join(base, "targets")
        os.mkdir(targets)
        shutil.copy2(os.path.join(TARGETS, "states.py"), targets)
        out = os.path.join(base, "out")
        os.mkdir(out)
        os.chown(out, user.pw_uid, -1)
        p.run("run", "-d", "--name", r.name, "-v", targets + ":/targets:ro",
              "-v", out + ":/out", "-e", "LD_LIBRARY_PATH=/opt/py/lib",
              r.name, exe, "/targets/states.py", "/out/report.json")
        wait_for_file(p, r.name, os.path.join(out, "report.json"))
        with open(os.path.join(out, "report.json")) as f:
            r.info = json.load(f)
        r.pid = int(p.run("inspect", "--format", "{{.State.Pid}}", r.name))
        yield r
    finally:
        remove_container(p, r.name, r.pid)
        p.close()


def run_as(user, argv):
    """argv run as user: (exit code, stdout, stderr)."""
    res = subprocess.run(["runuser", "-u", user, "--"] +
                         [str(a) for a in argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=PODMAN_TIMEOUT)
    return res.returncode, decode(res.stdout), decode(res.stderr)


def test_rootless(rootless):
    """Rootless podman: spyc run by the user who runs the container, with
    no capability at all, reads its processes (that user holds every
    capability in their user namespace): thread ids mapped to the
    host's, states read, --native stacks merged with the container's
    libpython named.  Another user is refused, in one line."""
    r = rootless
    owner = os.stat("/proc/%d" % r.pid).st_uid
    assert owner == pwd.getpwnam(r.user).pw_uid, (
        "the container's root is not the user's own uid", owner)
    for _ in range(DUMP_TRIES):
        code, out, err = run_as(r.user, [r.spyc, "dump", "--pid", r.pid,
                                         "--json"])
        if code != 1:
            break
    assert code == 0, err
    doc = json.loads(out)
    inner = {}
    for tid in os.listdir("/proc/%d/task" % r.pid):
        with open("/proc/%d/task/%s/status" % (r.pid, tid)) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    inner[int(tid)] = int(line.split()[-1])
    assert doc["pid_in_namespace"] == r.info["pid"] != r.pid, doc
    for th in doc["threads"]:
        assert th["native_id_in_namespace"] == inner[th["native_id"]], th
        assert th["state"] != "unknown", th
    check_states(doc, r.info, err)
    folded_path = os.path.join(r.podman.base, "out", "native.txt")
    code, out, err = run_as(r.user, [r.spyc, "record", "--native", "--pid",
                                     r.pid, "--duration", 1, "-o",
                                     folded_path])
    assert code == 0, err
    spins = [frames for frames, _ in folded(folded_path)
             if any(f.startswith("spinner (") for f in frames)]
    assert spins, "no sample of the spinner\n" + err
    # Under the spinner's Python frame, the interpreter's C functions.
    assert any(re.match(r"_?Py\w+", frames[-1]) for frames in spins), spins
    code, out, err = run_as("nobody", [r.spyc, "dump", "--pid", r.pid])
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert "CAP_SYS_PTRACE" in err, err
