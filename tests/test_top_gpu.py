# SPDX-License-Identifier: MIT
"""`spyc top --gpu` where there is no GPU: the program loads the stand-ins
for the CUDA driver and CUPTI (tests/fakecuda/, built by `make test-tools`)
and "launches" kernels and copies through them, which spyc's real agent
reports; top's GPU section must show them, window by window, and leave
the agent quiet when it ends.  Plain-text snapshots are read as the man
page describes them; one test reads the screen under tmux.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import (assert_running, decode, target_env,
                      top_until_snapshots)
from fakegpu import FAKE, PROLOGUE, START, build, needs_agent

# Generous: a loaded 2-core machine runs these beside other tests.
TIMEOUT = 90

# The program: loads the fake driver and CUPTI as a CUDA program loads the
# real ones; in launch mode has the "driver" start spyc's agent (the CUDA
# driver calls InitializeInjection), else says it is ready to be attached
# to; then for the given seconds (0: until FILE.stop exists) uploads and
# runs 4 GEMMs a step; at its end writes what it launched and whether any
# CUPTI activity kind is still enabled.
PROGRAM = PROLOGUE + START + r"""
launched = {"gemm_kernel": 0, "copies": 0}

def step():
    cupti.fake_copy(1 << 20, 100000, 3)
    launched["copies"] += 1
    for _ in range(4):
        cupti.fake_launch(b"gemm_kernel", 200000, 7)
        launched["gemm_kernel"] += 1
    t = time.time()
    while time.time() - t < 0.002:
        pass

t0 = time.time()
while (time.time() - t0 < seconds if seconds else
       not os.path.exists(report + ".stop")):
    step()
launched["enabled_kinds"] = cupti.fake_enabled_kinds()
launched["nvtx_tool"] = os.environ.get("NVTX_INJECTION64_PATH")
with open(report, "w") as f:
    json.dump(launched, f)
"""

# A program that never touches CUDA.
NO_CUDA = r"""
import os, sys, time
report = sys.argv[1]
with open(report + ".ready", "w") as f:
    f.write(str(os.getpid()))
t0 = time.time()
while time.time() - t0 < float(sys.argv[2]):
    pass
"""

GPU_KEYS = ["gpu", "gpu window", "gpu busy", "gpu idle in", "gpu work",
            "gpu lost"]
IDLE_IN_RE = re.compile(r"^(\d+\.\d)% (\S+) \((\S+):(\d+)\)$")
GPU_COLUMNS_RE = re.compile(r"^\s*%GPUTIME\s+GPUTIME\s+CALLS\s+NAME$")
GPU_ROW_RE = re.compile(
    r"^\s*(?P<share>\d+\.\d)\s+(?P<time>\d+(?:\.\d+)?)(?P<unit>us|ms|s)"
    r"\s+(?P<calls>\d+)\s+(?P<name>\S.*)$")
WORK_RE = re.compile(r"^(\d+) kernels, (\d+) copies, (\d+) memsets$")


@pytest.fixture(scope="module")
def fake_cuda(spyc):
    return build(spyc)


def parse_gpu_plain(text):
    """top --gpu's plain-text snapshots: [(header, cpu rows, gpu rows)].
    Each is a header block (the usual keys, then GPU_KEYS), the CPU
    table, the GPU table (its column names, then rows), each block ended
    by a blank line."""
    blocks = text.split("\n\n")
    assert blocks[-1] == "", "output must end with a blank line: %r" % (
        text[-200:])
    blocks.pop()
    assert len(blocks) % 3 == 0, "header, CPU and GPU blocks: %r" % (
        text[-2000:])
    snapshots = []
    for head, cpu, gpu in zip(blocks[0::3], blocks[1::3], blocks[2::3]):
        header = {}
        keys = []
        for line in head.split("\n"):
            key, sep, value = line.partition(": ")
            assert sep, "header line is not 'key: value': %r" % line
            keys.append(key)
            header[key] = value
        assert keys[0] == "snapshot" and keys[-len(GPU_KEYS):] == GPU_KEYS, (
            "header keys: %r" % keys)
        cpu_lines = cpu.split("\n")
        assert "FUNCTION" in cpu_lines[0], cpu
        gpu_lines = gpu.split("\n")
        assert GPU_COLUMNS_RE.match(gpu_lines[0]), gpu_lines[0]
        rows = {}
        for line in gpu_lines[1:]:
            m = GPU_ROW_RE.match(line)
            assert m, "not a GPU row: %r" % line
            rows[m.group("name")] = (int(m.group("calls")),
                                     float(m.group("share")))
        snapshots.append((header, cpu_lines[1:], rows))
    assert [int(h["snapshot"]) for h, _, _ in snapshots] == list(
        range(1, len(snapshots) + 1))
    return snapshots


def check_collecting(snapshots, describe):
    """Every snapshot's GPU section is consistent: rows add up to its
    work line, shares to 100%, 4 GEMMs to a copy; none lost.  Busy is
    by the activities' own times over the interval 300 ms back, the rows
    by when records came: a window with rows may have had none running
    in its interval (the first), but some window was busy."""
    any_busy = False
    for header, cpu_rows, rows in snapshots:
        assert header["gpu"].startswith("collecting"), describe
        assert header["gpu lost"] == "0", describe
        m = WORK_RE.match(header["gpu work"])
        assert m, header["gpu work"]
        kernels, copies, memsets = map(int, m.groups())
        assert rows.get("gemm_kernel", (0, 0))[0] == kernels, describe
        assert rows.get("[memcpy HtoD]", (0, 0))[0] == copies, describe
        assert memsets == 0
        assert set(rows) <= {"gemm_kernel", "[memcpy HtoD]"}, rows
        if rows:
            assert abs(sum(s for _, s in rows.values()) - 100) < 0.3, rows
            busy = header["gpu busy"]
            assert re.match(r"^\d+\.\d%$", busy), busy
            assert 0 <= float(busy[:-1]) <= 100, busy
            any_busy = any_busy or float(busy[:-1]) > 0
        # A window holds whole buffers of CUPTI's: steps may be cut.
        assert abs(kernels - 4 * copies) <= 8, (kernels, copies, describe)
    assert any(rows for _, _, rows in snapshots), describe
    assert any_busy, describe


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def start_attached(tmp_path, python, text, args):
    """Start a program that writes REPORT.ready when it may be attached to;
    returns (process, report path)."""
    script = write(tmp_path, "prog.py", text)
    report = str(tmp_path / "launched.json")
    proc = subprocess.Popen([python.path, script] + args(report),
                            env=target_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while not os.path.exists(report + ".ready"):
        assert proc.poll() is None, decode(proc.communicate()[1])
        assert time.time() < deadline, "the program never got ready"
        time.sleep(0.02)
    return proc, report


def finish(proc, report, timeout=60):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, decode(err)
    assert decode(err) == "", decode(err)
    with open(report) as f:
        return json.load(f)


@needs_agent
def test_top_gpu_attach(spyc, fake_cuda, any_python, tmp_path):
    """--pid: the agent is loaded into the running program; the snapshots
    show the fake kernel and copies, no more than the program launched;
    once top ends (SIGTERM), the agent is quiet and the program runs on
    to its normal end."""
    proc, report = start_attached(
        tmp_path, any_python, PROGRAM,
        lambda report: [FAKE, "attach", "0", report])
    try:
        code, text, describe = top_until_snapshots(
            spyc, ["--gpu", "--pid", proc.pid, "--interval", "0.5"],
            str(tmp_path / "top.out"), 3, timeout=TIMEOUT,
            until=lambda t: t.count(" gemm_kernel\n") >= 2)
        assert_running(proc.pid)
    finally:
        open(report + ".stop", "w").close()
        launched = finish(proc, report)
    assert code == 0, describe
    snapshots = parse_gpu_plain(text)
    check_collecting(snapshots, describe)
    header = snapshots[0][0]
    assert re.match(r"^collecting; agent loaded into pid %d through "
                    r"(PEP 768|ptrace)" % proc.pid, header["gpu"]), describe
    # Whole snapshots: their windows are disjoint, so their sum too.
    total = sum(rows.get("gemm_kernel", (0, 0))[0]
                for _, _, rows in snapshots)
    assert 0 < total <= launched["gemm_kernel"], (total, launched)
    assert launched["enabled_kinds"] == 0, launched


@needs_agent
def test_top_gpu_launch_counts_every_launch(spyc, fake_cuda, any_python,
                                            tmp_path):
    """Launch mode, until the program exits: the CUDA driver loads the
    agent; summed over the snapshots, every kernel and copy the program
    launched is counted once."""
    script = write(tmp_path, "prog.py", PROGRAM)
    report = str(tmp_path / "launched.json")
    res = spyc.run(["top", "--gpu", "--interval", "0.5",
                    "--program-output", tmp_path / "prog.out", "--",
                    any_python.path, script, FAKE, "launch", "2", report],
                   env=target_env(), timeout=TIMEOUT)
    assert res.returncode == 0, res.describe()
    with open(report) as f:
        launched = json.load(f)
    snapshots = parse_gpu_plain(res.stdout)
    check_collecting(snapshots, res.describe())
    assert snapshots[0][0]["gpu"] == (
        "collecting; agent loaded by the CUDA driver "
        "(CUDA_INJECTION64_PATH)"), res.describe()
    for key, name in (("gemm_kernel", "gemm_kernel"),
                      ("copies", "[memcpy HtoD]")):
        total = sum(rows.get(name, (0, 0))[0] for _, _, rows in snapshots)
        assert total == launched[key], (key, total, launched,
                                        res.describe())
    assert [l for l in res.stderr_lines if "exited" not in l] == [], (
        res.describe())
    # top shows no NVTX range: the program's NVTX is left off.
    assert launched["nvtx_tool"] is None, launched


@needs_agent
def test_top_gpu_idle_in(spyc, fake_cuda, any_python, tmp_path):
    """Live GPU idle time by what the launching thread ran: a program
    that runs 20 ms of GEMMs, waits for them, then works on the host for
    50 ms a round leaves the GPU idle in host_work() 50 of every 50.5 ms
    (wait_gpu() the rest); a snapshot's "gpu idle in" names host_work()
    first, with most of the window's idle time (n/a where no sample of
    a launching thread stood for any: before the first launch)."""
    from test_gpu_fake import IDLE_PROGRAM
    script = write(tmp_path, "idle.py", IDLE_PROGRAM)
    report = str(tmp_path / "done.json")
    res = spyc.run(["top", "--gpu", "--interval", "0.5", "--rate", "200",
                    "--program-output", tmp_path / "prog.out", "--",
                    any_python.path, script, FAKE, "launch", "3", report],
                   env=target_env(), timeout=TIMEOUT)
    assert res.returncode == 0, res.describe()
    snapshots = parse_gpu_plain(res.stdout)
    loop = IDLE_PROGRAM.splitlines().index(
        "    while time.monotonic() < t + 0.05:") + 1
    spin = (loop, loop + 1)
    shares = []
    for header, _, _ in snapshots:
        said = header["gpu idle in"]
        if said == "n/a":
            continue
        parts = [IDLE_IN_RE.match(p) for p in said.split("; ")]
        assert all(parts) and 1 <= len(parts) <= 3, said
        total = sum(float(m.group(1)) for m in parts)
        assert 99.5 <= total <= 100.5 or len(parts) == 3, said
        assert all(m.group(3).endswith("idle.py") for m in parts), said
        first = parts[0]
        if first.group(2) == "host_work":
            # Its spin loop's lines, where the program is.
            assert int(first.group(4)) in spin, (said, spin)
        shares.append(float(first.group(1))
                      if first.group(2) == "host_work" else 0.0)
    # Its first rounds fill the first snapshot or two with work.
    assert len(shares) >= 3, res.describe()
    shares.sort()
    # Samples stand for half a period each way: at 200 Hz, the 2.5 ms
    # either side of a boundary can go to the wrong side of it.
    assert shares[len(shares) // 2] >= 85.0, (shares, res.describe())


@needs_agent
def test_top_gpu_no_cuda_attach(spyc, any_python, tmp_path):
    """--pid on a program that never uses CUDA: one line says so in each
    snapshot's GPU section; the CPU view is as without --gpu."""
    proc, report = start_attached(tmp_path, any_python, NO_CUDA,
                                  lambda report: [report, "60"])
    try:
        code, text, describe = top_until_snapshots(
            spyc, ["--gpu", "--pid", proc.pid, "--interval", "0.5"],
            str(tmp_path / "top.out"), 2, timeout=TIMEOUT)
        assert_running(proc.pid)
    finally:
        proc.kill()
        proc.communicate()
    assert code == 0, describe
    snapshots = parse_gpu_plain(text)
    assert len(snapshots) >= 2, describe
    for header, cpu_rows, rows in snapshots:
        assert header["gpu"].startswith(
            "pid %d used no CUDA yet" % proc.pid), describe
        assert header["gpu busy"] == "n/a"
        assert header["gpu work"] == "0 kernels, 0 copies, 0 memsets"
        assert rows == {}, describe
    assert any("prog.py" in row for _, cpu, _ in snapshots
               for row in cpu), describe


@needs_agent
def test_top_gpu_no_cuda_launch(spyc, any_python, tmp_path):
    """Launch mode, no CUDA: the driver never loads the agent; the GPU
    section says so and top ends with the program, exit 0."""
    script = write(tmp_path, "prog.py", NO_CUDA)
    res = spyc.run(["top", "--gpu", "--interval", "0.5",
                    "--program-output", tmp_path / "prog.out", "--",
                    any_python.path, script, tmp_path / "r", "1.5"],
                   env=target_env(), timeout=TIMEOUT)
    assert res.returncode == 0, res.describe()
    name = os.path.basename(any_python.path)
    for header, _, rows in parse_gpu_plain(res.stdout):
        assert header["gpu"] == (
            "%s used no CUDA yet (the CUDA driver has not loaded spyc's "
            "agent)" % name), res.describe()
        assert rows == {}


@pytest.mark.parametrize("mode", ["launch", "pid"])
def test_top_gpu_refused_without_agent(spyc, any_python, tmp_path, mode):
    """No agent: one line, exit 2, before anything is launched."""
    marker = tmp_path / "ran"
    script = write(tmp_path, "mark.py",
                   "open(%r, 'w').close()\n" % str(marker))
    env = target_env({"SPYC_AGENT": str(tmp_path / "no-such-agent.so")})
    if mode == "launch":
        args = ["--", any_python.path, script]
    else:
        args = ["--pid", os.getpid()]
    res = spyc.run(["top", "--gpu"] + args, env=env, timeout=TIMEOUT)
    res.assert_error(2, "--gpu", "no-such-agent.so")
    assert res.stdout == "", res.describe()
    assert not marker.exists(), "the program ran although --gpu was refused"


def test_top_gpu_usage(spyc):
    res = spyc.run(["top", "--gpu", "--subprocesses", "--pid", "1"])
    assert res.returncode == 64, res.describe()
    res = spyc.run(["top", "--help"])
    assert "--gpu" in res.stdout


# --- the screen, under tmux ---

@needs_agent
def test_top_gpu_screen(spyc, fake_cuda, any_python, tmp_path):
    """The live screen: a GPU section under the CPU table, with the fake
    kernel and its calls; r shows the whole run; q quits, the agent goes
    quiet and the program runs to its normal end."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux not found (scripts/install-deps installs it)")
    proc, report = start_attached(
        tmp_path, any_python, PROGRAM,
        lambda report: [FAKE, "attach", "0", report])
    socket = "spyc-top-gpu-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
    status = tmp_path / "status"
    env = target_env()
    env.pop("TMUX", None)
    env["TERM"] = os.environ.get("TERM") or "xterm"

    def tmux(*args):
        return subprocess.run(["tmux", "-L", socket, "-f", "/dev/null"] +
                              list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              universal_newlines=True, env=env, timeout=20)

    def screen():
        return tmux("capture-pane", "-p").stdout

    def wait_screen(predicate, what):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            text = screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        pytest.fail("the screen never showed %s:\n%s" % (what, screen()))

    cmd = "%s top --gpu --pid %d; echo $? > %s; exec sleep 600" % (
        shlex.quote(spyc.path), proc.pid, shlex.quote(str(status)))
    try:
        res = tmux("new-session", "-d", "-x", "120", "-y", "30", cmd)
        assert res.returncode == 0, res.stderr
        row = re.compile(r"^\s*\d+\.\d\s+\S+\s+(\d+)\s+gemm_kernel\s*$",
                         re.M)
        text = wait_screen(lambda t: row.search(t), "a gemm_kernel row")
        lines = text.splitlines()
        title = [i for i, l in enumerate(lines) if l.startswith("GPU: ")]
        cpu = [i for i, l in enumerate(lines) if "FUNCTION" in l]
        assert title and cpu and cpu[0] < title[0], text
        assert re.match(r"^GPU: last \d+\.\d\d s  busy: \d+\.\d%  \d+ "
                        r"kernels, \d+ copies, 0 memsets  lost: 0  agent: "
                        r"(PEP 768|ptrace)", lines[title[0]]), text
        assert int(row.search(text).group(1)) > 0
        # The key help stays on the last line.
        assert lines[-1].startswith("1-5"), text
        tmux("send-keys", "r")
        wait_screen(lambda t: "GPU: whole run, " in t, "the whole run")
        tmux("send-keys", "q")
        deadline = time.time() + TIMEOUT
        while not status.exists() or not status.read_text().strip():
            assert time.time() < deadline, screen()
            time.sleep(0.1)
        assert status.read_text().strip() == "0", screen()
        assert_running(proc.pid)
    finally:
        tmux("kill-server")
        open(report + ".stop", "w").close()
        launched = finish(proc, report)
    assert launched["enabled_kinds"] == 0, launched
