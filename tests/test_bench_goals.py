# SPDX-License-Identifier: MIT
"""What the goals table of tests/bench.py relies on, checked against the
real programs: the goal target (bench_busy.py with an idle thread) has the
threads it says, spyc's SPYC_STATS line and summary parse with bench.py's
own patterns and count those threads, bench_work.py reports its CPU time
on every CPython, and CPython 3.15's own sampler takes the command line
bench.py gives it."""

import json
import os
import resource
import subprocess

import pytest

import bench
import pyfind
from conftest import target_env

TARGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "targets")
BUSY = os.path.join(TARGETS, "bench_busy.py")
WORK = os.path.join(TARGETS, "bench_work.py")
DEPTH, BUSY_THREADS, IDLE_THREADS = 20, 2, 1


def start_goal_target(python):
    """bench_busy.py with BUSY_THREADS spinning DEPTH deep and IDLE_THREADS
    blocked, once it says it is ready."""
    proc = subprocess.Popen([python.path, BUSY, str(DEPTH),
                             str(BUSY_THREADS), "60", str(IDLE_THREADS)],
                            stdout=subprocess.PIPE, env=target_env())
    line = proc.stdout.readline()
    if line != b"ready\n":
        proc.kill()
        proc.wait()
        pytest.fail("bench_busy.py printed %r, not ready" % line)
    return proc


def stop(proc):
    proc.kill()
    proc.wait()
    proc.stdout.close()


def folded_counts(path, word):
    """Thread stacks in a folded profile whose frames include word."""
    total = 0
    with open(path) as f:
        for line in f:
            head, _, count = line.rstrip("\n").rpartition(" ")
            if word in head:
                total += int(count)
    return total


def test_goal_target_stats_line(spyc, any_python, tmp_path):
    """spyc --idle on the goal target reads every thread each sample; its
    stats line and summary parse with bench.py's patterns and agree."""
    proc = start_goal_target(any_python)
    try:
        tasks = len(os.listdir("/proc/%d/task" % proc.pid))
        out = str(tmp_path / "goal.txt")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = spyc.run(["record", "--idle", "--rate", "200", "--duration",
                        "1", "--format", "folded", "--pid", proc.pid,
                        "-o", out], env=target_env({"SPYC_STATS": "1"}))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert proc.poll() is None, "target died while sampled"
    finally:
        stop(proc)
    assert res.returncode in (0, 1), res.describe()
    threads = BUSY_THREADS + IDLE_THREADS
    assert tasks == threads, "target has %d threads, not %d" % (tasks,
                                                                threads)
    summary = bench.SUMMARY_RE.search(res.stderr)
    stats = bench.STATS_RE.search(res.stderr)
    assert summary and stats, res.describe()
    samples, dropped = int(summary.group(1)), int(summary.group(2))
    read = int(stats.group(3))
    assert samples > 0, res.describe()
    # Every sample kept read every thread; a dropped one may have stopped
    # part way.
    assert threads * (samples - dropped) <= read <= threads * samples, \
        res.describe()
    # The calls per thread read are the counts over the threads read.
    assert abs(float(stats.group(4)) - int(stats.group(1)) / read) < 0.01
    assert abs(float(stats.group(5)) - int(stats.group(2)) / read) < 0.01
    # spyc's CPU time awake is part of its CPU time (the target, not
    # reaped yet, is not in RUSAGE_CHILDREN): more than none, and at 200 Hz
    # well below the whole, which pays for 200 sleeps and wakeups a second.
    cpu_us = 1e6 * ((after.ru_utime - before.ru_utime) +
                    (after.ru_stime - before.ru_stime))
    awake = stats.group(6)
    assert awake is not None, res.describe()
    # The time inside process_vm_readv is timed too: some, every read
    # being one.
    assert stats.group(8) is not None and float(stats.group(8)) > 0, \
        res.describe()
    assert 0 < float(awake) * read <= cpu_us, (
        "awake %s us per thread read x %d threads read, spyc's CPU %.0f us\n%s"
        % (awake, read, cpu_us, res.describe()))
    # The profile holds what the target is: as many stacks in idle() as
    # samples kept, BUSY_THREADS times that in spin().
    idle, busy = folded_counts(out, "idle"), folded_counts(out, "spin")
    assert idle == samples - dropped, res.describe()
    assert busy == BUSY_THREADS * idle, res.describe()
    assert bench.count_stacks(out) == threads * idle


def test_bench_work_reports_cpu_time(python):
    """bench_work.py runs on every CPython and prints wall and CPU time
    that bench.py's pattern reads; one thread cannot use more CPU than
    wall time (a little slack for the clocks' resolution)."""
    res = subprocess.run([python.path, WORK, "2000"], stdout=subprocess.PIPE,
                         env=target_env(), timeout=60)
    assert res.returncode == 0
    match = bench.ELAPSED_RE.search(res.stdout.decode())
    assert match, res.stdout
    wall, cpu = float(match.group(1)), float(match.group(2))
    assert 0 < cpu <= wall + 0.02, (wall, cpu)


def test_own_sampler_command_line(tmp_path):
    """CPython 3.15's profiling.sampling takes the command line bench.py
    gives it and writes collapsed stacks of every thread."""
    slot = [s for s in pyfind.slots() if s.name == "%d.%d" % bench.VERSUS]
    if not slot or slot[0].interpreter is None:
        pytest.skip("CPython %d.%d not found, so its own sampler cannot be "
                    "run" % bench.VERSUS)
    python = slot[0].interpreter
    proc = start_goal_target(python)
    out = str(tmp_path / "versus.txt")
    try:
        res = subprocess.run(
            [python.path, "-m", "profiling.sampling", "attach", "-a", "-r",
             "200", "-d", "1", "--collapsed", "-o", out, str(proc.pid)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=target_env(), timeout=120)
    finally:
        stop(proc)
    assert res.returncode == 0, res.stdout
    # Its stacks of each kind of thread; not checked for exact counts, as
    # how it counts a failed read is its own business.
    assert folded_counts(out, "idle") > 0, res.stdout
    assert folded_counts(out, "spin") > 0, res.stdout


def test_floor_loop():
    """tests/build/spyc-sleeploop, the floor row's measure, keeps spyc's
    grid of deadlines (never more wakeups than slots, late ones skipped),
    spends CPU time doing it, and parses with bench.py's own code; a bad
    command line is a usage error."""
    res = subprocess.run([bench.SLEEPLOOP, "1000", "0.5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    words = res.stdout.decode().split()
    assert words[0] == "wakeups" and words[2] == "cpu_us", words
    assert 0 < int(words[1]) <= 500, words
    assert float(words[3]) > 0, words
    errors = []
    per_wakeup = bench.goal_floor("test", 1000, 0.5, errors)
    assert not errors and per_wakeup > 0, (errors, per_wakeup)
    res = subprocess.run([bench.SLEEPLOOP, "fast"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60)
    assert res.returncode == 64 and b"usage" in res.stderr, res


def test_idle_left_out_reads_stat_once(spyc, any_python, tmp_path):
    """Without --idle, each thread's /proc/PID/task/TID/stat is read once a
    sample, before its stack (the idle one's stack is not walked, nor
    written): spyc's own count of /proc calls says at most one per thread
    per sample, beside a few made once (each thread's name)."""
    proc = start_goal_target(any_python)
    try:
        out = str(tmp_path / "busy.txt")
        res = spyc.run(["record", "--rate", "400", "--duration", "1",
                        "--format", "folded", "--pid", proc.pid, "-o", out],
                       env=target_env({"SPYC_STATS": "1"}))
        assert proc.poll() is None, "target died while sampled"
    finally:
        stop(proc)
    assert res.returncode in (0, 1), res.describe()
    summary = bench.SUMMARY_RE.search(res.stderr)
    stats = bench.STATS_RE.search(res.stderr)
    assert summary and stats, res.describe()
    samples = int(summary.group(1))
    assert samples >= 40, res.describe()
    threads = BUSY_THREADS + IDLE_THREADS
    # Each thread's name, /proc/PID/maps and the like: well below what
    # a second read of each busy thread's stat a sample would add.
    once = 100
    assert int(stats.group(2)) <= threads * samples + once, res.describe()
    assert folded_counts(out, "idle") == 0, res.describe()
    assert folded_counts(out, "spin") > 0, res.describe()


@pytest.mark.skipif(not os.path.exists(os.path.join(bench.FAKE_CUDA,
                                                    "libcupti.so")),
                    reason="no tests/build/fakecuda (make test-tools)")
def test_gpu_baseline_collects(spyc, any_python, tmp_path, monkeypatch):
    """The baseline of the agent's own cost (bench_gpu.py alone) makes the
    stand-in CUPTI collect what the agent has it collect under `spyc
    record --gpu` (as many activity kinds, a launch callback), where plain
    collects nothing: otherwise agent over alone would hold CUPTI's work
    too, or leave some of the agent's out."""
    if not os.path.exists(bench.AGENT):
        pytest.skip("no spyc-agent.so (built where CUPTI's headers are)")
    monkeypatch.setattr(bench, "spyc_exe", spyc.path)
    plain, _ = bench.gpu_run(any_python.path, 50, "plain", str(tmp_path))
    alone, _ = bench.gpu_run(any_python.path, 50, "alone", str(tmp_path))
    agent, lost = bench.gpu_run(any_python.path, 50, "agent", str(tmp_path))
    assert plain["launches"] == alone["launches"] == agent["launches"] == 400
    assert (plain["kinds"], plain["subscribed"]) == (0, 0), plain
    assert agent["kinds"] > 0 and agent["subscribed"] == 1, agent
    assert (alone["kinds"], alone["subscribed"]) == (agent["kinds"], 1), \
        (alone, agent)
    assert lost == 0


def test_native_idle_target(spyc, any_python):
    """bench_idle.py's native idle threads (the "(native idle)" rows) are
    there, asleep, and have no Python: spyc sees the spinning thread
    alone."""
    nidle = 5
    proc = subprocess.Popen([any_python.path, bench.IDLE, str(nidle), "10",
                             "60", "native"], stdout=subprocess.PIPE,
                            env=target_env())
    try:
        line = proc.stdout.readline()
        assert line == b"ready\n", line
        tasks = os.listdir("/proc/%d/task" % proc.pid)
        assert len(tasks) == nidle + 1, tasks
        states = []
        for tid in tasks:
            if int(tid) != proc.pid:
                with open("/proc/%d/task/%s/stat" % (proc.pid, tid)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        assert states == ["S"] * nidle, states
        res = spyc.run(["dump", "--json", "--pid", proc.pid])
        assert proc.poll() is None, "target died while dumped"
    finally:
        stop(proc)
    assert res.returncode == 0, res.describe()
    threads = json.loads(res.stdout)["threads"]
    assert len(threads) == 1, res.describe()
    assert any(f["name"] == "spin" for f in threads[0]["frames"]), \
        res.describe()
