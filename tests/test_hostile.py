# SPDX-License-Identifier: MIT
"""Hostile targets, on every supported version, launched and attached to:
a target that exits mid-sample, execs another program, forks and exits,
starts and ends about a thousand threads a second, recurses 10^4 deep,
changes its stack every microsecond, or is stopped by someone else.

Each time spyc ends with a complete file and one line that says how it
ended, the target is never left stopped or traced, and the target's own
result (sum of i*i below N, done through Python calls) is the closed form
computed here."""

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import TARGETS, target_env, thread_states, wait_gone
from test_record import parse_speedscope, parse_summary

SCRIPT = os.path.join(TARGETS, "hostile.py")
N = 6000000
RESULT_TIMEOUT = 120
# A free-threaded build starts a thread about six times slower (25 s for
# N's 30000 threads here): its threads mode does a sixth of the work.
N_THREADS_FREE_THREADED = N // 6
# The stopped tests' work, in N: the target must still run after about
# 0.8 s of it (the fastest version here does N in 0.9 s), and then it is
# waited for.
STOPPED_WORK = 3
MODES = ["exit", "exec", "forkexit", "threads", "deep", "flip"]
# What each mode's samples must show (the functions it runs).
SEEN = {
    "exit": {"span", "square"},
    "exec": {"span", "square"},
    "forkexit": {"span", "square"},
    "threads": {"worker", "span", "square", "in_threads"},
    "deep": {"recurse", "span", "square"},
    "flip": {"flip_span", "leaf_a", "leaf_b", "leaf_c"},
}
ENDED = {"exec": "exec'd another program"}


def expected(n):
    """sum(i * i for i in range(n)), in closed form."""
    return (n - 1) * n * (2 * n - 1) // 6


def wait_for(path, proc=None, timeout=RESULT_TIMEOUT, what="file"):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            pytest.fail("no %s %s after %d s" % (what, path, timeout))
        time.sleep(0.02)


def read_result(path):
    wait_for(path, what="result")
    with open(path) as f:
        return json.load(f)


def tracer_and_state(pid):
    """[(tid, state letter, TracerPid)] of pid's threads; [] if gone."""
    rows = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return rows
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                text = f.read()
        except OSError:
            continue
        fields = dict(l.split(":", 1) for l in text.splitlines() if ":" in l)
        rows.append((tid, fields["State"].split()[0],
                     int(fields["TracerPid"])))
    return rows


def assert_untouched(pid, stopped_ok=False):
    """No thread of pid is traced; none is stopped unless stopped_ok (the
    test stopped it itself)."""
    for tid, state, tracer in tracer_and_state(pid):
        assert tracer == 0, "thread %s of %d still traced by %d" % (
            tid, pid, tracer)
        if not stopped_ok:
            assert state not in ("t", "T"), (
                "thread %s of %d left stopped (%s)" % (tid, pid, state))


def check_record(res, out, mode):
    """spyc's exit, summary and file after a hostile target."""
    describe = res.describe()
    assert res.returncode in (0, 1), describe
    summary = parse_summary(res.stderr, describe)
    if res.returncode == 1:
        # Only for torn reads, and then the summary says how many.
        assert summary.dropped > 0, describe
    assert ENDED.get(mode, "the target exited") in res.stderr, describe
    doc, stacks = parse_speedscope(out)
    names = set()
    for _, frames, _ in stacks:
        names.update(f[0] for f in frames)
    assert names & SEEN[mode], (
        "no sample shows what the %s target ran (%s)\n%s" % (
            mode, sorted(SEEN[mode]), describe))
    for _, frames, _ in stacks:
        # The interpreter's start and threads' bootstraps have roots of
        # their own; the target's main() runs under <module>.
        if not any(f[0] == "main" and f[1].endswith("hostile.py")
                   for f in frames):
            continue
        # Under --native, C frames come first (C's main among them).
        py_main = [i for i, f in enumerate(frames)
                   if f[0] == "main" and f[1].endswith("hostile.py")][0]
        assert (frames[0][0].startswith("[") or
                "<module>" in [f[0] for f in frames[:py_main]]), (
            "a stack does not start at <module> or a [cut] root: %s\n%s" % (
                frames[:3], describe))
    if mode == "deep":
        assert any(f[0][0].startswith("[") and "not read" in f[0][0]
                   for _, f, _ in stacks), (
            "10^4 frames are past the default depth: stacks must keep "
            "their innermost frames under a '[N frames not read]' root\n" +
            describe)
        assert summary.truncated > 0, describe
    return summary


def work(python, mode):
    """The N that mode does on python."""
    if mode == "threads" and python.free_threaded:
        return N_THREADS_FREE_THREADED
    return N


def run_target(python, mode, tmp_path):
    ready = str(tmp_path / "ready")
    result = str(tmp_path / "result.json")
    argv = [python.path, SCRIPT, mode, str(work(python, mode)), ready, result]
    return argv, ready, result


@pytest.mark.parametrize("mode", MODES)
def test_launched(spyc, python, tmp_path, mode):
    """spyc record -- python hostile.py MODE: plain sampling at 1 kHz."""
    argv, _, result = run_target(python, mode, tmp_path)
    out = str(tmp_path / "out.json")
    res = spyc.run(["record", "--rate", "1000", "-o", out, "--"] + argv,
                   env=target_env(), timeout=RESULT_TIMEOUT)
    check_record(res, out, mode)
    got = read_result(result)
    assert got["result"] == expected(work(python, mode)), (
        "the target computed otherwise")
    if mode == "forkexit":
        assert wait_gone(got["pid"], 30)


@pytest.mark.parametrize("mode", MODES)
def test_attached_native(spyc, python, tmp_path, mode):
    """spyc record --native --pid PID at 1 kHz (every sample stops the
    threads it reads): the same, and no thread is left stopped or
    traced."""
    argv, ready, result = run_target(python, mode, tmp_path)
    proc = subprocess.Popen(argv, env=target_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        wait_for(ready, what="ready file", timeout=30)
        out = str(tmp_path / "out.json")
        res = spyc.run(["record", "--native", "--rate", "1000", "--pid",
                        proc.pid, "-o", out], timeout=RESULT_TIMEOUT)
        check_record(res, out, mode)
        got = read_result(result)
        if mode == "forkexit":
            # The child works on: spyc followed only the parent.
            assert_untouched(got["pid"])
        assert got["result"] == expected(work(python, mode)), (
            "the target computed otherwise")
        proc.wait(timeout=30)
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.mark.parametrize("opts", [[], ["--native", "--blocking"]],
                         ids=["plain", "native-blocking"])
def test_stopped_by_someone_else(spyc, python, tmp_path, opts):
    """The target is SIGSTOPped and SIGCONTed by someone else while spyc
    samples it, and is still stopped when spyc ends: spyc neither hangs
    nor resumes it, nor leaves it traced; SIGCONT then lets it finish with
    its own result."""
    n = N * STOPPED_WORK
    ready = str(tmp_path / "ready")
    result = str(tmp_path / "result.json")
    proc = subprocess.Popen([python.path, SCRIPT, "exit", str(n), ready,
                             result], env=target_env())
    try:
        wait_for(ready, what="ready file", timeout=30)
        out = str(tmp_path / "out.json")
        spyc_proc = spyc.popen(["record", "--rate", "500", "--duration",
                                "2.5", "--pid", proc.pid, "-o", out] + opts,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        time.sleep(0.4)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.4)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            o, e = spyc_proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            spyc_proc.kill()
            spyc_proc.communicate()
            pytest.fail("spyc hung on a stopped target")
        describe = "exit %s\n%s%s" % (spyc_proc.returncode,
                                      o.decode(errors="replace"),
                                      e.decode(errors="replace"))
        assert spyc_proc.returncode in (0, 1), describe
        parse_summary(e.decode(errors="replace"), describe)
        assert "the target is stopped by a signal: left stopped" in (
            e.decode(errors="replace")), describe
        parse_speedscope(out)
        # Still stopped, as its user left it, and traced by nobody.
        states = set(s for _, s, _ in tracer_and_state(proc.pid))
        assert states == {"T"}, (
            "the target should still be stopped: %s\n%s" % (
                tracer_and_state(proc.pid), describe))
        assert_untouched(proc.pid, stopped_ok=True)
        os.kill(proc.pid, signal.SIGCONT)
        got = read_result(result)
        assert got["result"] == expected(n), "the target computed otherwise"
        proc.wait(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait()


def test_stopped_launched(spyc, python, tmp_path):
    """Launch mode: the program spyc started is stopped and continued by
    someone else, and is stopped at --duration's deadline: spyc writes
    the profile, says the program was left stopped, does not resume it
    or leave it traced, and once it is continued passes on its exit."""
    n = N * STOPPED_WORK
    ready = str(tmp_path / "ready")
    result = str(tmp_path / "result.json")
    out = str(tmp_path / "out.json")
    spyc_proc = spyc.popen(["record", "--rate", "500", "--duration", "2.5",
                            "-o", out, "--", python.path, SCRIPT, "exit",
                            str(n), ready, result],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = None
    try:
        wait_for(ready, what="ready file", timeout=30)
        with open("/proc/%d/task/%d/children" % (spyc_proc.pid,
                                                  spyc_proc.pid)) as f:
            pid = int(f.read().split()[0])
        time.sleep(0.3)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.3)
        os.kill(pid, signal.SIGSTOP)
        # The profile is written at the deadline, the program still
        # stopped; spyc waits for it.
        wait_for(out, what="profile", timeout=60)
        parse_speedscope(out)
        states = set(s for _, s, _ in tracer_and_state(pid))
        assert states == {"T"}, (
            "the program should still be stopped: %s" % (
                tracer_and_state(pid),))
        assert_untouched(pid, stopped_ok=True)
        os.kill(pid, signal.SIGCONT)
        try:
            o, e = spyc_proc.communicate(timeout=RESULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail("spyc did not end once its program was continued")
        describe = "exit %s\n%s%s" % (spyc_proc.returncode,
                                      o.decode(errors="replace"),
                                      e.decode(errors="replace"))
        assert spyc_proc.returncode == 0, describe
        summary = parse_summary(e.decode(errors="replace"), describe,
                                strict=True)
        assert summary.ended == "--duration elapsed", describe
        assert summary.running == os.path.basename(python.path), describe
        got = read_result(result)
        assert got["result"] == expected(n), "the target computed otherwise"
    finally:
        if pid and spyc_proc.poll() is None:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        if spyc_proc.poll() is None:
            spyc_proc.kill()
        spyc_proc.wait()


def test_pid_reused(spyc, any_python, tmp_path):
    """The target dies and another Python takes its pid while spyc records
    it: spyc says the target exited, and nothing of the newcomer is in
    the profile."""
    if os.geteuid() != 0 or not os.path.exists(
            "/proc/sys/kernel/ns_last_pid"):
        pytest.skip("needs root and /proc/sys/kernel/ns_last_pid to hand "
                    "a chosen pid to a new process")
    impostor = ("import time\n"
                "def impostor():\n"
                "    end = time.time() + 20\n"
                "    while time.time() < end:\n"
                "        pass\n"
                "impostor()\n")
    for attempt in range(5):
        ready = str(tmp_path / ("ready%d" % attempt))
        result = str(tmp_path / ("result%d.json" % attempt))
        target = subprocess.Popen([any_python.path, SCRIPT, "exit",
                                   str(N * 50), ready, result],
                                  env=target_env())
        wait_for(ready, what="ready file", timeout=30)
        out = str(tmp_path / ("out%d.json" % attempt))
        spyc_proc = spyc.popen(["record", "--rate", "200", "--duration",
                                "15", "--pid", target.pid, "-o", out],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        time.sleep(0.5)
        pid = target.pid
        target.kill()
        target.wait()
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        newcomer = subprocess.Popen([any_python.path, "-c", impostor],
                                    env=target_env())
        try:
            if newcomer.pid != pid:
                spyc_proc.kill()
                spyc_proc.communicate()
                continue
            o, e = spyc_proc.communicate(timeout=30)
            err = e.decode(errors="replace")
            describe = "exit %s\n%s" % (spyc_proc.returncode, err)
            assert spyc_proc.returncode in (0, 1), describe
            assert "the target exited" in err, describe
            summary = parse_summary(err, describe)
            assert summary.seconds < 10, (
                "spyc went on sampling the pid's new owner\n" + describe)
            _, stacks = parse_speedscope(out)
            names = set(f[0] for _, frames, _ in stacks for f in frames)
            assert "impostor" not in names, describe
            assert names & SEEN["exit"], describe
            return
        finally:
            newcomer.kill()
            newcomer.wait()
            if spyc_proc.poll() is None:
                spyc_proc.kill()
                spyc_proc.communicate()
    pytest.skip("another process took the pid each time (a busy machine)")
