# SPDX-License-Identifier: MIT
"""Benchmark spyc against every CPython 3.6 .. 3.15 found, print tables.

Usage: python3 tests/bench.py [--quick] [--python X.Y[,X.Y...]] ...

For each test slot of tests/pyfind.py (3.6 .. 3.15, newest of each minor,
plus "static", the first non-shared build), one row of the first table:

  samples/s    the most samples per second spyc sustains: 4 threads, each
               50 calls deep and spinning in pure Python, --rate 100000;
               samples and seconds from spyc's summary line (one sample
               holds every thread's stack)
  drop         percentage of attempts in that run that were dropped
  us/sample    spyc's own CPU time (user + system) per sample in that run
  us@10 ..     the same for one thread at stack depth 10, 100 and 500
  x100Hz ..    target slowdown: median time of a fixed CPU-bound workload
               under `spyc record --rate R -- PY ...` over its median time
               unprofiled; runs interleaved, each measured by the target
               itself around the workload, so start-up is left out
  noise        (max - min) / median of the unprofiled runs, to judge the
               ratios by

and one row of the second table, the same measurements with `record
--native` (each sampled thread stopped with ptrace, unwound with libunwind):

  samples/s    sustained, same target and rate as above
  drop         as above
  us/sample    as above
  unmerged     share of the stacks recorded in that run whose native frames
               spyc could not merge (its summary's "N native stacks
               unmerged" over the stack counts in the folded output)
  x100Hz       target slowdown at --rate 100 --native, measured in the same
               interleaved rounds as the first table's columns, against the
               same unprofiled runs (so that table's noise applies)

Then the accuracy table (tests/accuracy.py, the harness tests/
test_accuracy.py bounds): on each slot, `record` and `record --blocking`
at 1 kHz of tests/targets/accuracy.py, whose functions burn the CPU in
generators, `yield from` chains, generator expressions, asyncio tasks and
plain calls and measure their own thread CPU time; per function, its
share of the samples (spyc) over its share of that CPU time (true).

Then the deep generator table: on each slot, plain `record` at
DEEPGEN_RATE of tests/targets/deepgen.py, a `yield from` chain of
generators 200, 500 and 1000 deep that passes every item up all of it
(the innermost runs spin() between items): spin()'s share of the samples
(spyc) and of the time the target measured itself (true), and samples
kept/dropped.  Reads of such a chain race the next item: the deeper it
is, the longer a read takes and the likelier it is torn.

Then two tables for the newest interpreter benchmarked only.  First, a target
with 100 threads blocked on a threading.Event and one thread spinning 50
calls deep (tests/targets/bench_idle.py), sampled at --rate 100000 by plain
`record`, `record --idle`, `record --blocking`, `record --native` and
`record --native --idle`: samples/s, drop, us/sample as above, and
stacks/sample, the number of thread stacks each sample kept (1 when idle
threads are filtered out, 101 with --idle).  With --blocking and --native,
those are the threads stopped for each sample.  Then `record` and `record
--native` on the same target with its 100 idle threads native ones
instead (libc threads in pause(), no Python in them, as a library's
workers are): "(native idle)".  Last, the cost of following
a process tree: `record --subprocesses` at --rate 100000 on an idle parent
and 8 child processes, each one thread spinning 50 calls deep
(tests/targets/bench_tree.py): rounds/s (a round reads every process),
dropped process reads per 100 rounds, and spyc's CPU per round and per
process followed.

Last, one goals table: each performance goal, the figure measured in this
run beside it, the goal's value, and "met" or "MISSED" (a missed goal is
not a failure: it leaves the exit status alone).  The target is
bench_busy.py with 4 threads spinning 50 calls deep and 1 thread blocked
for good, sampled by `spyc record --idle --format folded --pid` with
SPYC_STATS=1, 4 s a run (--quick: 2 s), on the newest 3.11+ and
on the newest 3.6 .. 3.10 slot benchmarked:

  CPU per thread-sample   spyc's CPU time at --rate 10000 over the threads
                          it read (its stats line); goal <= 5 us on 3.11+,
                          <= 10 us on 3.6 .. 3.10.  Beside it, the system
                          calls per thread read (process_vm_readv + /proc)
                          from that stats line, for information, and how
                          that CPU time splits between spyc awake (from
                          each wakeup to the next sleep, by its own
                          thread CPU clock) and the rest: what sleeping
                          and waking up 10000 times a second costs it,
                          which on a virtual machine can be most of it,
                          and of the time awake, how much went by inside
                          process_vm_readv (the kernel copying the
                          target's memory; timed around each call by
                          spyc, from that stats line).
                          And the floor: the CPU time of an empty loop
                          that sleeps as spyc does, to the same
                          deadlines (tests/build/spyc-sleeploop), run
                          right after, the same target running, per
                          wakeup and per thread-sample (shared by the
                          5 threads of a round)
  own sampler             spyc's CPU per thread-sample on a 3.15 target
                          over that of `python3.15 -m profiling.sampling
                          attach -a -r 10000 -d S --collapsed` on the same
                          process right after (its CPU time less that of
                          its start-up, its imports, measured apart, over
                          the thread stacks in its output); goal <= 0.5.
                          Uses 3.15 whenever tests/pyfind.py finds it,
                          benchmarked or not; "3.15 not found" otherwise
  achieved rate           at --rate 1000, 5000 and 10000: the summary's Hz
                          over the rate asked, goal >= 95%, with the slots
                          skipped ("late") and spyc's CPU time over the
                          time sampled (its share of one core)
  target CPU slowdown     from the slowdown runs of the first table, but by
                          the target's CPU time (time.process_time around
                          the workload) instead of its wall time: median
                          profiled over median unprofiled, less 1; goal
                          <= 1% at 100 Hz, <= 3% at 1000 Hz, with the
                          spread of the unprofiled CPU times as noise
  spyc RSS                VmRSS of spyc (/proc/PID/status) recording
                          tests/targets/churn.py (threads, code objects
                          and stacks that keep changing) at --rate 1000,
                          read 5 s and 25 s after its start (--quick: 3 s
                          and 11 s); the growth per sample between the two
                          is extrapolated to an hour at 100 Hz (360000
                          samples), goal < 50 MB; the row says it is
                          extrapolated
  idle threads left out   from the idle-threads table: `record` (each
                          thread's /proc/PID/task/TID/stat read, only the
                          busy thread walked) over `record --idle` (every
                          thread walked, no /proc): CPU per sample, goal
                          <= 1, leaving idle threads out costs no more
                          than the walks it saves

  --gpu rows              tests/targets/bench_gpu.py, a loop of 8 "launches"
                          a step through the stand-ins for CUPTI and the
                          CUDA driver (tests/fakecuda/, so no GPU is
                          needed) between bits of Python work, run in
                          turns three ways: plain; with the stand-in
                          CUPTI collecting the same activities for a
                          client that does nothing with them (what any
                          CUPTI-based profiler makes it do); and under
                          `spyc record --gpu --rate 100`.  Its CPU time
                          (time.process_time): the agent's own cost, spyc
                          over the stand-in collecting alone, less 1, goal
                          <= 5% (launch callbacks, stack copies, the
                          ring); the whole, spyc over plain, for
                          information (it holds the stand-in's own cost,
                          which is not CUPTI's: that needs a GPU,
                          tests/gpu/); the GPU records spyc says were
                          lost, goal 0; the growth of its VmRSS with the
                          agent, for information; spyc's own memory
                          (RssAnon at its end, SPYC_STATS=1) over a run
                          and one three times as long, with
                          --gpu-timeline 5000, per 100k more activities,
                          goal <= 1 MB (held whole, each costs about 175
                          bytes: 17 MB); and an NVTX range pushed and
                          popped (through NVIDIA's own loader) under
                          record --gpu, less one with no NVTX tool, the
                          fastest round of 1000 (rounds 5 ms apart), goal
                          <= 1 us

The goals add about a minute to a run (--quick: about half a minute).

spyc's CPU time is the RUSAGE_CHILDREN delta around the spyc process, which
is the only child reaped in between (it samples by --pid, so the target is
not its child).  Every run uses a copy of ./spyc taken at start, so that a
rebuild meanwhile changes nothing.  Progress goes to stderr, the tables to
stdout.

Standard library only; runs under any python3 >= 3.6.
Exit codes: 0 table printed, 1 table printed but some measurement failed,
2 could not run (no ./spyc), 64 usage error.
"""

import argparse
import json
import os
import platform
import re
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
TARGETS = os.path.join(TESTS, "targets")
BUSY = os.path.join(TARGETS, "bench_busy.py")
IDLE = os.path.join(TARGETS, "bench_idle.py")
WORK = os.path.join(TARGETS, "bench_work.py")
TREE = os.path.join(TARGETS, "bench_tree.py")
CHURN = os.path.join(TARGETS, "churn.py")
SPYC = os.path.join(REPO, "spyc")
# The copy of SPYC that every run uses (see snapshot_spyc); SPYC until then.
spyc_exe = SPYC

sys.path.insert(0, TESTS)
import pyfind  # noqa: E402
import accuracy  # noqa: E402

MAX_RATE = 100000           # the highest --rate spyc accepts
THREADS_DEEP = (50, 4)      # the throughput run: depth, threads
DEPTHS = (10, 100, 500)
SLOW_RATES = (100, 1000)
NATIVE_SLOW_RATES = (100,)  # the same, with record --native
IDLE_DEEP = (100, 50)       # the idle-threads run: idle threads, busy depth
# spyc options for the rows of the idle-threads table.
IDLE_MODES = ((), ("--idle",), ("--blocking",), ("--native",),
              ("--native", "--idle"))
# And on the same target with native threads (no Python) as the idle ones.
IDLE_NATIVE_MODES = ((), ("--native",))
# The process-tree run: children (one busy thread each), their depth.
TREE_DEEP = (8, 50)
# The goals table.  Its target, bench_busy.py: depth, busy threads, idle
# threads.
GOAL_DEEP = (50, 4, 1)
GOAL_RATE = 10000           # the rate of the CPU per thread-sample runs
GOAL_RATES = (1000, 5000, 10000)    # the achieved-rate runs
# CPU per thread-sample, in microseconds, on the newest slot benchmarked in
# each range of versions: (label, lowest, highest, goal).
GOAL_US = (("3.11+", (3, 11), (3, 99), 5.0),
           ("3.6-3.10", (3, 6), (3, 10), 10.0))
VERSUS = (3, 15)            # the CPython whose own sampler spyc is beside
GOAL_VERSUS = 0.5           # spyc's CPU per thread-sample over that one's
GOAL_RATE_SHARE = 95.0      # % of the asked rate achieved
# The accuracy table: the rate, and spyc's modes beside the truth.
ACCURACY_RATE = 1000
ACCURACY_MODES = ((), ("--blocking",))
# The deep generator table: deepgen.py's depths, and the rate.
DEEPGEN = os.path.join(TARGETS, "deepgen.py")
DEEPGEN_DEPTHS = (200, 500, 1000)
DEEPGEN_RATE = 100
GOAL_SLOWDOWN = {100: 1.0, 1000: 3.0}   # % more target CPU time, by rate
RSS_RATE = 1000             # the RSS run: 10 times the samples of 100 Hz
HOUR_SAMPLES = 100 * 3600   # an hour at 100 Hz
GOAL_RSS_MB = 50.0          # spyc's RSS after that hour
# Leaving idle threads out (record) costs no more than walking them
# (record --idle): CPU per sample, one over the other, on bench_idle.py.
GOAL_IDLE_SHARE = 1.0
# --gpu: the fake-CUDA training loop (tests/targets/bench_gpu.py), its steps
# (8 launches each) per run by --quick, the rate, and the slowdown goal (%).
GPU_TARGET = os.path.join(TARGETS, "bench_gpu.py")
FAKE_CUDA = os.path.join(TESTS, "build", "fakecuda")
SLEEPLOOP = os.path.join(TESTS, "build", "spyc-sleeploop")
AGENT = os.path.join(REPO, "spyc-agent.so")
GPU_STEPS = {False: 6000, True: 2000}
GPU_RATE = 100
GOAL_GPU_SLOWDOWN = 5.0
# spyc's memory with --gpu, once the timeline is full: what it keeps of
# each activity folded away (its API call, launch stack and record are
# let go), per 100k more.  Held whole, one costs about 100 bytes: 10 MB.
GPU_MEM_TIMELINE = 5000
GOAL_GPU_MEM_GROWTH_MB = 1.0
# NVTX ranges pushed and popped in each run of bench_gpu.py, and what one
# may cost the target more under record --gpu than with no NVTX tool.
GPU_NVTX_PAIRS = 100000
GOAL_GPU_NVTX_NS = 1000.0
CHURN_ROUNDS = 10 ** 9      # churn.py rounds: it runs until stopped
# Iterations of bench_work.py used to time an interpreter before scaling the
# workload to the wanted length (about 0.3-0.6 s on this class of machine).
CALIBRATE_ITERATIONS = 20000
# bench_busy.py exits by itself after this long, in case we die unseen.
BUSY_LIFETIME = 120
READY_TIMEOUT = 30.0
# A launch that spyc fails (exit 2 before the workload ran) is retried up to
# this many times in all, and counted in the notes under the table.
LAUNCH_TRIES = 10

SETTINGS = {
    # throughput run s (also --native and each idle-threads run),
    # per-depth run s, workload s, runs per rate; each goal run s (whole:
    # profiling.sampling takes no fraction), the two VmRSS readings s
    False: dict(rate_secs=2.0, depth_secs=1.5, work_secs=1.6, runs=7,
                goal_secs=4, rss_at=(5, 25), accuracy_secs=3),
    True: dict(rate_secs=1.0, depth_secs=0.75, work_secs=0.5, runs=3,
               goal_secs=2, rss_at=(3, 11), accuracy_secs=2),
}

SUMMARY_RE = re.compile(r"spyc: (\d+) samples?, (\d+) dropped.*?, "
                        r"([0-9.]+) s at ([0-9.]+) Hz")
UNMERGED_RE = re.compile(r"(\d+) native stacks? unmerged")
# The line SPYC_STATS=1 adds before the summary.
STATS_RE = re.compile(r"spyc: stats: (\d+) process_vm_readv, (\d+) /proc "
                      r"calls?; (\d+) threads? read: ([0-9.]+) \+ "
                      r"([0-9.]+) calls per thread read"
                      r"(?:; ([0-9.]+) us CPU awake per thread read)?"
                      r"(?:; (\d+) thread stacks walked)?"
                      r"(?:; ([0-9.]+) us in process_vm_readv per thread "
                      r"read)?")
LATE_RE = re.compile(r"asked ([0-9.]+) Hz, (\d+) late")

# Every process we start, by pid, so that every path can kill what is left.
live = {}


class BenchError(Exception):
    """A measurement that could not be made; the message says why."""


def can_print(text):
    enc = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(enc)
        return True
    except (UnicodeError, LookupError):
        return False


MICRO = "\u00b5s" if can_print("\u00b5\u00d7") else "us"
TIMES = "\u00d7" if MICRO != "us" else "x"
LE = "\u2264" if can_print("\u2264\u2265") else "<="
GE = "\u2265" if LE != "<=" else ">="


def progress(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def pdeathsig_setter():
    """A function for the child to call before exec so that it is killed
    if bench.py dies, even by SIGKILL, which no finally can catch
    (prctl PR_SET_PDEATHSIG, <linux/prctl.h>); None where unavailable.
    Made here, in the parent: the child should only call it."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None
    PR_SET_PDEATHSIG = 1

    def setter():
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return setter


DIE_WITH_PARENT = pdeathsig_setter()


def target_env():
    """No user PYTHON* or SPYC_* settings, a UTF-8 locale, no .pyc files."""
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith("PYTHON") and not k.startswith("SPYC_"))
    env["LC_ALL"] = "C.UTF-8"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def start(argv, extra_env=None, **kwargs):
    """Popen in its own process group, remembered until stop() reaps it.
    A process that spyc launches lands in the same group, so killing the
    group kills it too.  extra_env: settings added to target_env()."""
    env = target_env()
    env.update(extra_env or {})
    try:
        proc = subprocess.Popen(argv, env=env,
                                start_new_session=True,
                                preexec_fn=DIE_WITH_PARENT, **kwargs)
    except OSError as e:
        raise BenchError("cannot run %s: %s" % (argv[0], e))
    live[proc.pid] = proc
    return proc


def stop(proc):
    """Kill proc's whole process group (if still there) and reap proc."""
    if proc.pid not in live:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    live.pop(proc.pid, None)


def stop_all():
    for proc in list(live.values()):
        stop(proc)


def on_sigterm(signum, frame):
    # Turn SIGTERM into an exception so that the finally clauses run.
    raise SystemExit(128 + signum)


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_spyc(argv, timeout, workdir, stdout=subprocess.DEVNULL,
             extra_env=None):
    """Run spyc to completion; returns (summary match, CPU seconds it used,
    its stdout).  Raises BenchError if it failed or printed no summary.
    Its stderr is left in workdir/spyc.err."""
    errpath = os.path.join(workdir, "spyc.err")
    with open(errpath, "wb") as err:
        before = children_cpu()
        proc = start([spyc_exe] + argv, stdout=stdout, stderr=err,
                     extra_env=extra_env)
        try:
            try:
                out, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise BenchError("spyc still running after %.0f s" % timeout)
            cpu = children_cpu() - before
            rc = proc.returncode
        finally:
            stop(proc)
    text = read_file(errpath)
    match = SUMMARY_RE.search(text)
    if rc not in (0, 1) or match is None:
        raise BenchError("spyc exited %s: %s" % (rc, last_line(text)))
    return match, cpu, (out or b"").decode("utf-8", "replace")


def wait_ready(proc, errpath):
    """Wait until the busy target prints "ready"."""
    deadline = time.monotonic() + READY_TIMEOUT
    buf = b""
    while b"ready\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchError("target not ready after %.0f s" % READY_TIMEOUT)
        readable, _, _ = select.select([proc.stdout], [], [], left)
        if readable:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                proc.wait()
                raise BenchError("target exited %s before it was ready: %s"
                                 % (proc.returncode,
                                    last_line(read_file(errpath))))
            buf += chunk


def count_stacks(path):
    """Thread stacks recorded in a folded profile: the sum of the counts
    that end its lines."""
    total = 0
    for line in read_file(path).splitlines():
        head, _, count = line.rpartition(" ")
        if head and count.isdigit():
            total += int(count)
    return total


def sample_target(python, script_args, secs, workdir, options=()):
    """spyc record at MAX_RATE, with options, for secs against the target
    python script_args (bench_busy.py or bench_idle.py, which print "ready"
    once settled); returns a dict: rate (samples/s), drop (%), us (CPU
    microseconds per sample), stacks (thread stacks per sample) and
    unmerged (% of those stacks; None when spyc reported none)."""
    errpath = os.path.join(workdir, "target.err")
    with open(errpath, "wb") as err:
        target = start([python.path] + list(script_args),
                       stdout=subprocess.PIPE, stderr=err)
    outpath = os.path.join(workdir, "busy.txt")
    try:
        wait_ready(target, errpath)
        match, cpu, _ = run_spyc(
            ["record", "--pid", str(target.pid), "--rate", str(MAX_RATE),
             "--duration", str(secs), "-o", outpath] + list(options),
            timeout=secs + 60, workdir=workdir)
        if target.poll() is not None:
            raise BenchError("target exited %s while sampled: %s"
                             % (target.returncode,
                                last_line(read_file(errpath))))
    finally:
        stop(target)
    samples, dropped = int(match.group(1)), int(match.group(2))
    elapsed = float(match.group(3))
    if samples == 0 or elapsed <= 0:
        raise BenchError("spyc took no samples: %s" % match.group(0))
    stacks = count_stacks(outpath)
    unmerged = UNMERGED_RE.search(read_file(os.path.join(workdir,
                                                         "spyc.err")))
    return dict(rate=samples / elapsed,
                drop=100.0 * dropped / (samples + dropped),
                us=1e6 * cpu / samples, stacks=float(stacks) / samples,
                unmerged=(100.0 * int(unmerged.group(1)) / max(1, stacks)
                          if unmerged else None))


def sample_busy(python, depth, threads, secs, workdir, options=()):
    """sample_target() on bench_busy.py: threads threads, depth deep."""
    return sample_target(python, [BUSY, str(depth), str(threads),
                                  str(BUSY_LIFETIME)], secs, workdir, options)


ELAPSED_RE = re.compile(r"^elapsed ([0-9.]+) cpu ([0-9.]+) ", re.M)


def mode_name(mode):
    """A slowdown mode: None (unprofiled) or (rate, native)."""
    if mode is None:
        return "unprofiled"
    return "%d Hz%s" % (mode[0], " --native" if mode[1] else "")


def time_work(python, iterations, mode, workdir, failures):
    """(wall seconds, CPU seconds) the workload took by its own clocks,
    profiled in mode, a (rate, native) pair, or not profiled, when mode is
    None.  Each failed launch under spyc that was retried adds its message
    to failures."""
    argv = [python.path, WORK, str(iterations)]
    if mode is None:
        errpath = os.path.join(workdir, "work.err")
        with open(errpath, "wb") as err:
            proc = start(argv, stdout=subprocess.PIPE, stderr=err)
            try:
                try:
                    out, _ = proc.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    raise BenchError("workload still running after 120 s")
            finally:
                stop(proc)
        out = out.decode("utf-8", "replace")
        if proc.returncode != 0:
            raise BenchError("workload exited %s: %s" % (
                proc.returncode, last_line(read_file(errpath))))
    else:
        for attempt in range(LAUNCH_TRIES):
            try:
                _, _, out = run_spyc(
                    ["record", "--rate", str(mode[0])] +
                    (["--native"] if mode[1] else []) +
                    ["-o", os.path.join(workdir, "work.txt"), "--"] + argv,
                    timeout=120, workdir=workdir, stdout=subprocess.PIPE)
                break
            except BenchError as e:
                if attempt + 1 == LAUNCH_TRIES:
                    raise BenchError("%s (%d tries)" % (e, LAUNCH_TRIES))
                failures.append(str(e))
    match = ELAPSED_RE.search(out)
    if match is None:
        raise BenchError("workload printed no time: %s" % last_line(out))
    return float(match.group(1)), float(match.group(2))


SLOW_MODES = ([(r, False) for r in SLOW_RATES] +
              [(r, True) for r in NATIVE_SLOW_RATES])


def slowdown(python, cfg, workdir, failures):
    """({mode: median profiled / median unprofiled} for SLOW_MODES,
    spread of the unprofiled runs, the same two by the target's CPU time
    instead of its wall time)."""
    # The faster of two, as the first run may pay for a cold page cache.
    t = min(time_work(python, CALIBRATE_ITERATIONS, None, workdir,
                      failures)[0] for _ in range(2))
    iterations = max(1, int(CALIBRATE_ITERATIONS * cfg["work_secs"] / t))
    modes = [None] + SLOW_MODES
    times = dict((m, []) for m in modes)
    cpus = dict((m, []) for m in modes)
    for i in range(cfg["runs"]):
        # Rotate the order each round, so that no mode always runs first
        # (or right after the noisiest one).
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        for mode in order:
            wall, cpu = time_work(python, iterations, mode, workdir,
                                  failures)
            times[mode].append(wall)
            cpus[mode].append(cpu)
    base = statistics.median(times[None])
    progress("    workload %d iterations; medians: unprofiled %.3f s, %s"
             % (iterations, base, ", ".join(
                 "%s %.3f s" % (mode_name(m), statistics.median(times[m]))
                 for m in SLOW_MODES)))
    ratios = dict((m, statistics.median(times[m]) / base)
                  for m in SLOW_MODES)
    spread = (max(times[None]) - min(times[None])) / base
    cpu_base = statistics.median(cpus[None])
    cpu_ratios = dict((m, statistics.median(cpus[m]) / cpu_base)
                      for m in SLOW_MODES)
    cpu_spread = (max(cpus[None]) - min(cpus[None])) / cpu_base
    return ratios, spread, cpu_ratios, cpu_spread


COLUMNS = (["python", "build", "samples/s", "drop",
            MICRO + "/sample"] +
           ["%s@%d" % (MICRO, d) for d in DEPTHS] +
           ["%s%dHz" % (TIMES, r) for r in SLOW_RATES] + ["noise"])
NATIVE_COLUMNS = (["python", "build", "samples/s", "drop",
                   MICRO + "/sample", "unmerged"] +
                  ["%s%dHz" % (TIMES, r) for r in NATIVE_SLOW_RATES])
IDLE_COLUMNS = ["python", "spyc", "samples/s", "drop",
                MICRO + "/sample", "stacks/sample"]
TREE_COLUMNS = ["python", "rounds/s", "drop", MICRO + "/round",
                MICRO + "/process"]
GOAL_COLUMNS = ["goal", "python", "measured", "goal", "result"]


def measure(name, what, fn, errors):
    """fn(), or None when it raised BenchError, which adds a line to
    errors and to the progress output."""
    try:
        return fn()
    except BenchError as e:
        errors.append("%s %s: %s" % (name, what, e))
        progress("    %s: error: %s" % (what, e))
        return None


def bench_slot(slot, cfg, errors, notes, cpu_slowdowns):
    """The slot's rows of the first two tables; failed cells read "error"
    and add a line to errors; launches that worked only when retried add
    to notes.  The slowdowns by the target's CPU time go into
    cpu_slowdowns[slot.name], as ({mode: ratio}, spread), for the goals
    table."""
    python = slot.interpreter
    row = [slot.name, "%s %s" % (python.version, python.kind)]
    native_row = list(row)
    workdir = tempfile.mkdtemp(prefix="spyc-bench-")

    def cell(what, fn):
        return measure(slot.name, what, fn, errors)

    try:
        depth, threads = THREADS_DEEP
        progress("  %s (%s): %d threads x %d deep, --rate %d, %.1f s"
                 % (slot.name, python.path, threads, depth, MAX_RATE,
                    cfg["rate_secs"]))
        r = cell("throughput", lambda: sample_busy(
            python, depth, threads, cfg["rate_secs"], workdir))
        row += (["%.0f" % r["rate"], "%.1f%%" % r["drop"], "%.1f" % r["us"]]
                if r else ["error"] * 3)
        for d in DEPTHS:
            progress("    depth %d, 1 thread, %.2f s" % (d, cfg["depth_secs"]))
            r = cell("depth %d" % d, lambda: sample_busy(
                python, d, 1, cfg["depth_secs"], workdir))
            row.append("%.1f" % r["us"] if r else "error")
        progress("    --native: %d threads x %d deep, --rate %d, %.1f s"
                 % (threads, depth, MAX_RATE, cfg["rate_secs"]))
        r = cell("--native throughput", lambda: sample_busy(
            python, depth, threads, cfg["rate_secs"], workdir,
            ["--native"]))
        if r:
            native_row += ["%.0f" % r["rate"], "%.1f%%" % r["drop"],
                           "%.1f" % r["us"],
                           "?" if r["unmerged"] is None
                           else "%.1f%%" % r["unmerged"]]
        else:
            native_row += ["error"] * 4
        progress("    slowdown: %d runs each of unprofiled, %s"
                 % (cfg["runs"], ", ".join(mode_name(m)
                                           for m in SLOW_MODES)))
        failures = []
        r = cell("slowdown", lambda: slowdown(python, cfg, workdir, failures))
        if r:
            cpu_slowdowns[slot.name] = (r[2], r[3])
        launches = cfg["runs"] * len(SLOW_MODES) + len(failures)
        # Group by message, leaving out the pid that differs every time.
        counts = {}
        for msg in failures:
            msg = re.sub(r" \(pid \d+\)", "", msg)
            counts[msg] = counts.get(msg, 0) + 1
        for msg, n in sorted(counts.items()):
            notes.append("%s: %d of %d launches under spyc failed and were "
                         "retried: %s" % (slot.name, n, launches, msg))
        row += (["%.2f%s" % (r[0][(rate, False)], TIMES)
                 for rate in SLOW_RATES] + ["%.0f%%" % (100 * r[1])] if r
                else ["error"] * (len(SLOW_RATES) + 1))
        native_row += (["%.2f%s" % (r[0][(rate, True)], TIMES)
                        for rate in NATIVE_SLOW_RATES] if r
                       else ["error"] * len(NATIVE_SLOW_RATES))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return row, native_row


def idle_mode_name(options):
    return " ".join(("record",) + tuple(options))


def bench_idle(slot, cfg, errors):
    """The rows of the idle-threads table, one per IDLE_MODES, for slot,
    and {mode name: sample_target() or None}."""
    python = slot.interpreter
    nidle, depth = IDLE_DEEP
    rows, results = [], {}
    workdir = tempfile.mkdtemp(prefix="spyc-bench-")
    runs = [(o, "python") for o in IDLE_MODES] + \
        [(o, "native") for o in IDLE_NATIVE_MODES]
    try:
        for options, kind in runs:
            name = idle_mode_name(options)
            if kind == "native":
                name += " (native idle)"
            progress("  %s: %d idle threads (%s) + 1 x %d deep, %s --rate "
                     "%d, %.1f s" % (slot.name, nidle, kind, depth, name,
                                     MAX_RATE, cfg["rate_secs"]))
            r = measure(slot.name, name, lambda: sample_target(
                python, [IDLE, str(nidle), str(depth), str(BUSY_LIFETIME),
                         kind], cfg["rate_secs"], workdir, options), errors)
            results[name] = r
            rows.append([slot.name if not rows else "", name] +
                        (["%.0f" % r["rate"], "%.1f%%" % r["drop"],
                          "%.1f" % r["us"], "%.1f" % r["stacks"]] if r
                         else ["error"] * 4))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows, results


def bench_tree(slot, cfg, errors):
    """The row of the process-tree table for slot: record --subprocesses
    on bench_tree.py (an idle parent and TREE_DEEP's busy children)."""
    python = slot.interpreter
    children, depth = TREE_DEEP
    workdir = tempfile.mkdtemp(prefix="spyc-bench-")
    try:
        progress("  %s: %d child processes x %d deep, record "
                 "--subprocesses --rate %d, %.1f s" % (
                     slot.name, children, depth, MAX_RATE,
                     cfg["rate_secs"]))
        r = measure(slot.name, "subprocesses", lambda: sample_target(
            python, [TREE, str(children), str(depth), str(BUSY_LIFETIME)],
            cfg["rate_secs"], workdir, ("--subprocesses",)), errors)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if not r:
        return [[slot.name] + ["error"] * 4]
    # Every process of the tree is read each round, the idle parent too.
    return [[slot.name, "%.0f" % r["rate"], "%.1f%%" % r["drop"],
             "%.1f" % r["us"], "%.1f" % (r["us"] / (children + 1))]]


def print_tree_table(rows):
    children, depth = TREE_DEEP
    print("process tree: record --subprocesses on an idle parent and %d "
          "child processes,\neach one thread spinning %d deep, --rate %d:"
          % (children, depth, MAX_RATE))
    print_legend([
        ("rounds/s", "sustained: a round reads every process of the tree"),
        ("drop", "reads of one process dropped, per 100 rounds taken"),
        (MICRO + "/round", "spyc's CPU time per round"),
        (MICRO + "/process", "the same per process followed (%d)"
         % (children + 1)),
    ])
    print_table(TREE_COLUMNS, rows)


def vm_rss_kib(pid):
    """VmRSS of pid in KiB, from /proc/PID/status (proc(5))."""
    for line in read_file("/proc/%d/status" % pid).splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError("no VmRSS in /proc/%d/status (process gone?)" % pid)


def run_measured(argv, timeout):
    """Run argv to completion; returns (exit status, CPU seconds it used,
    its stdout and stderr together)."""
    before = children_cpu()
    proc = start(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BenchError("%s still running after %.0f s"
                             % (os.path.basename(argv[0]), timeout))
        cpu = children_cpu() - before
        rc = proc.returncode
    finally:
        stop(proc)
    return rc, cpu, out.decode("utf-8", "replace")


def check_alive(target, errpath):
    if target.poll() is not None:
        raise BenchError("target exited %s while sampled: %s"
                         % (target.returncode, last_line(read_file(errpath))))


def goal_spyc(target, errpath, rate, secs, workdir):
    """spyc record --idle at rate for secs on the goal target, with
    SPYC_STATS=1; returns a dict: us (CPU microseconds per thread read),
    calls (process_vm_readv and /proc calls per thread read, or None when
    spyc printed no stats), share (achieved rate over rate, in %), late
    (slots skipped) and core (spyc's CPU time over the time sampled, %)."""
    outpath = os.path.join(workdir, "goal.txt")
    match, cpu, _ = run_spyc(
        ["record", "--idle", "--rate", str(rate), "--duration", str(secs),
         "--format", "folded", "--pid", str(target.pid), "-o", outpath],
        timeout=secs + 60, workdir=workdir, extra_env={"SPYC_STATS": "1"})
    check_alive(target, errpath)
    text = read_file(os.path.join(workdir, "spyc.err"))
    samples, elapsed = int(match.group(1)), float(match.group(3))
    stats = STATS_RE.search(text)
    # Without the stats line (a spyc that lacks SPYC_STATS), the thread
    # stacks in the profile are the threads read.
    threads = int(stats.group(3)) if stats else count_stacks(outpath)
    if samples == 0 or threads == 0 or elapsed <= 0:
        raise BenchError("spyc read no threads: %s" % match.group(0))
    late = LATE_RE.search(text)
    return dict(us=1e6 * cpu / threads,
                calls=((float(stats.group(4)), float(stats.group(5)))
                       if stats else None),
                awake=(float(stats.group(6))
                       if stats and stats.group(6) else None),
                reads=(float(stats.group(8))
                       if stats and stats.group(8) else None),
                share=100.0 * float(match.group(4)) / rate,
                late=int(late.group(2)) if late else 0,
                core=100.0 * cpu / elapsed)


def goal_versus(python, target, errpath, secs, workdir):
    """CPython's own sampler (python -m profiling.sampling attach, all
    threads, GOAL_RATE, collapsed stacks) for secs on the goal target, which
    runs under that same python; returns a dict: us (its CPU microseconds
    per thread stack recorded, its start-up left out), startup (CPU seconds
    of that start-up)."""
    # Its start-up (the imports, about half a second of CPU on a loaded
    # machine) is measured on its own and taken off, so that the figure
    # compares sampling with sampling; spyc's own start-up is a few ms.
    rc, startup, out = run_measured(
        [python.path, "-c", "import profiling.sampling.cli, "
         "_remote_debugging"], timeout=120)
    if rc != 0:
        raise BenchError("%s has no usable profiling.sampling: %s"
                         % (python.path, last_line(out)))
    outpath = os.path.join(workdir, "versus.txt")
    rc, cpu, out = run_measured(
        [python.path, "-m", "profiling.sampling", "attach", "-a",
         "-r", str(GOAL_RATE), "-d", str(secs), "--collapsed",
         "-o", outpath, str(target.pid)], timeout=secs + 120)
    check_alive(target, errpath)
    stacks = count_stacks(outpath)
    if rc != 0 or stacks == 0:
        raise BenchError("profiling.sampling exited %s with %d stacks: %s"
                         % (rc, stacks, last_line(out)))
    return dict(us=1e6 * max(0.0, cpu - startup) / stacks, startup=startup)


def goal_runs(slot, rates, versus, cfg, errors):
    """spyc at each of rates on one goal target (bench_busy.py, GOAL_DEEP)
    run by slot's interpreter, then, with versus, that interpreter's own
    sampler on the same process, and the floor (goal_floor()) while the
    same target runs, as it does under spyc; returns {rate: goal_spyc()
    or None, "versus": goal_versus() or None, "floor": goal_floor()}.
    Failures add to errors."""
    python = slot.interpreter
    depth, busy, idle = GOAL_DEEP
    secs = cfg["goal_secs"]
    results = dict((rate, None) for rate in rates)
    results["versus"] = results["floor"] = None
    workdir = tempfile.mkdtemp(prefix="spyc-bench-")
    errpath = os.path.join(workdir, "target.err")
    try:
        with open(errpath, "wb") as err:
            target = start([python.path, BUSY, str(depth), str(busy),
                            str(BUSY_LIFETIME), str(idle)],
                           stdout=subprocess.PIPE, stderr=err)
        try:
            if measure(slot.name, "goal target", lambda: wait_ready(
                    target, errpath) or True, errors) is None:
                return results
            for rate in rates:
                progress("  %s: goals, %d threads x %d deep + %d idle, "
                         "record --idle --rate %d, %d s" % (
                             slot.name, busy, depth, idle, rate, secs))
                results[rate] = measure(
                    slot.name, "goal run at %d Hz" % rate,
                    lambda: goal_spyc(target, errpath, rate, secs, workdir),
                    errors)
            if GOAL_RATE in rates:
                results["floor"] = goal_floor(slot.name, GOAL_RATE, secs,
                                              errors)
            if versus:
                progress("  %s: goals, python -m profiling.sampling attach "
                         "-a -r %d -d %d on the same target"
                         % (slot.name, GOAL_RATE, secs))
                results["versus"] = measure(
                    slot.name, "profiling.sampling", lambda: goal_versus(
                        python, target, errpath, secs, workdir), errors)
        finally:
            stop(target)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def goal_rss(slot, cfg, errors):
    """spyc record --rate RSS_RATE on churn.py run by slot's interpreter,
    its VmRSS read at the two times of cfg["rss_at"] (seconds after its
    start); returns (KiB at the first, KiB at the second, achieved Hz), or
    None when it failed (and errors has a line)."""
    python = slot.interpreter
    first, second = cfg["rss_at"]
    workdir = tempfile.mkdtemp(prefix="spyc-bench-")

    def run():
        errpath = os.path.join(workdir, "target.err")
        spyc_err = os.path.join(workdir, "spyc.err")
        with open(errpath, "wb") as err:
            churn = start([python.path, CHURN, str(CHURN_ROUNDS)],
                          stdout=subprocess.DEVNULL, stderr=err)
        try:
            # Let it start its first threads, so that spyc finds an
            # initialised interpreter.
            time.sleep(1.0)
            check_alive(churn, errpath)
            with open(spyc_err, "wb") as err:
                spyc = start([spyc_exe, "record", "--rate", str(RSS_RATE),
                              "--duration", str(second + 30), "--format",
                              "folded", "-o",
                              os.path.join(workdir, "churn.txt"),
                              "--pid", str(churn.pid)],
                             stdout=subprocess.DEVNULL, stderr=err)
            try:
                began = time.monotonic()
                rss = []
                for at in (first, second):
                    time.sleep(max(0.0, began + at - time.monotonic()))
                    if spyc.poll() is not None:
                        raise BenchError("spyc exited %s after %.0f s: %s"
                                         % (spyc.returncode,
                                            time.monotonic() - began,
                                            last_line(read_file(spyc_err))))
                    rss.append(vm_rss_kib(spyc.pid))
                # Ends sampling early; spyc writes the profile and its
                # summary as for --duration.
                spyc.send_signal(signal.SIGINT)
                try:
                    rc = spyc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    raise BenchError("spyc still running 60 s after SIGINT")
            finally:
                stop(spyc)
            check_alive(churn, errpath)
        finally:
            stop(churn)
        match = SUMMARY_RE.search(read_file(spyc_err))
        if rc not in (0, 1) or match is None:
            raise BenchError("spyc exited %s: %s"
                             % (rc, last_line(read_file(spyc_err))))
        return rss[0], rss[1], float(match.group(4))

    try:
        progress("  %s: goals, spyc RSS on churn.py, --rate %d, VmRSS at "
                 "%d s and %d s" % (slot.name, RSS_RATE, first, second))
        return measure(slot.name, "RSS on churn.py", run, errors)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def goal_floor(name, rate, secs, errors):
    """tests/build/spyc-sleeploop at rate Hz for secs seconds: spyc's
    pacing with nothing done between wakeups (run beside the target that
    spyc samples, which keeps the CPUs as busy as they were then: waking
    up on an idle CPU costs more).  Returns its CPU time per wakeup in
    microseconds, or None when it failed (and errors has a line that
    starts with name)."""
    def run():
        try:
            out = subprocess.run([SLEEPLOOP, str(rate), str(secs)],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, timeout=secs + 60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BenchError("spyc-sleeploop: %s" % e)
        match = re.match(r"wakeups (\d+) cpu_us (\d+)",
                         out.stdout.decode())
        if out.returncode or not match or not int(match.group(1)):
            raise BenchError("spyc-sleeploop exited %d: %s" % (
                out.returncode, last_line(out.stderr.decode() or
                                          out.stdout.decode())))
        return float(match.group(2)) / int(match.group(1))

    progress("  %s: goals, the machine's floor, an empty loop sleeping as "
             "spyc does at %d Hz, %g s, the same target running"
             % (name, rate, secs))
    return measure(name, "spyc-sleeploop", run, errors)


def idle_goal_row(slot, results):
    """The goals row of what leaving idle threads out costs: record's CPU
    per sample over record --idle's on the idle-threads target, where
    record reads each thread's /proc/PID/task/TID/stat and walks only the
    busy thread, and --idle walks every thread without reading /proc."""
    what = "idle threads left out, CPU per sample"
    goal_text = "%s %.2f%s of --idle" % (LE, GOAL_IDLE_SHARE, TIMES)
    if slot is None:
        return [what, "-", "no slot benchmarked", goal_text, "-"]
    left_out = results.get(idle_mode_name(()))
    walked = results.get(idle_mode_name(("--idle",)))
    if not left_out or not walked or walked["us"] <= 0:
        return [what, slot.name, "error", goal_text, "error"]
    ratio = left_out["us"] / walked["us"]
    return [what, slot.name, "%.1f / %.1f %s = %.2f%s (%d idle + 1 busy)" % (
        left_out["us"], walked["us"], MICRO, ratio, TIMES, IDLE_DEEP[0]),
        goal_text, met(ratio <= GOAL_IDLE_SHARE)]


def met(ok):
    return "met" if ok else "MISSED"


def bench_goals(slots, all_slots, cfg, errors, cpu_slowdowns, idle):
    """The rows of the goals table (see the docstring): measured here,
    except the slowdowns, which bench_slot() left in cpu_slowdowns, and
    the idle filtering's cost, from idle: (the slot of the idle-threads
    table or None, bench_idle()'s results)."""
    picks = []
    for label, low, high, goal in GOAL_US:
        picks.append((label, goal, newest(
            [s for s in slots if s.interpreter is not None and
             low <= tuple(s.interpreter.version_info[:2]) <= high])))
    versus_name = "%d.%d" % VERSUS
    versus_slot = ([s for s in all_slots if s.name == versus_name and
                    s.interpreter is not None] or [None])[0]
    runs = {}
    for _, _, slot in picks:
        if slot is not None and slot.name not in runs:
            runs[slot.name] = goal_runs(slot, GOAL_RATES,
                                        slot.name == versus_name, cfg,
                                        errors)
    if versus_slot is not None and versus_name not in runs:
        runs[versus_name] = goal_runs(versus_slot, (GOAL_RATE,), True, cfg,
                                      errors)
    rss_slot = newest([slot for _, _, slot in picks if slot is not None])
    rss = goal_rss(rss_slot, cfg, errors) if rss_slot else None

    rows = []
    for label, goal, slot in picks:
        what = "CPU per thread-sample at %g kHz" % (GOAL_RATE / 1000.0)
        if slot is None:
            rows.append([what, label, "no %s slot benchmarked" % label,
                         "%s %g %s" % (LE, goal, MICRO), "-"])
            continue
        r = runs[slot.name][GOAL_RATE]
        rows.append([what, slot.name] + (
            ["%.1f %s" % (r["us"], MICRO), "%s %g %s" % (LE, goal, MICRO),
             met(r["us"] <= goal)] if r else
            ["error", "%s %g %s" % (LE, goal, MICRO), "error"]))
        rows.append(["  system calls per thread read", slot.name,
                     ("%.2f process_vm_readv + %.2f /proc" % r["calls"]
                      if r and r["calls"] else
                      "error" if not r else "not printed"), "", ""])
        if r and r["awake"] is not None:
            rows.append(["  awake / sleeping and waking up", slot.name,
                         "%.1f / %.1f %s" % (r["awake"],
                                             r["us"] - r["awake"], MICRO),
                         "", ""])
        if r and r["reads"] is not None:
            rows.append(["  of awake, in process_vm_readv", slot.name,
                         "%.1f %s" % (r["reads"], MICRO), "", ""])
        floor = runs[slot.name]["floor"]
        if r and floor is not None:
            per_round = sum(GOAL_DEEP[1:])
            rows.append(["  floor: sleeping and waking up alone", slot.name,
                         "%.1f %s a wakeup = %.1f %s a thread-sample at %d "
                         "threads" % (floor, MICRO, floor / per_round, MICRO,
                                      per_round), "", ""])
    what = "CPU per thread-sample, spyc / %s's own" % versus_name
    goal_text = "%s %.2f%s" % (LE, GOAL_VERSUS, TIMES)
    if versus_slot is None:
        rows.append([what, versus_name, "%s not found" % versus_name,
                     goal_text, "-"])
    else:
        mine = runs[versus_name][GOAL_RATE]
        theirs = runs[versus_name]["versus"]
        if mine and theirs and theirs["us"] > 0:
            ratio = mine["us"] / theirs["us"]
            rows.append([what, versus_name, "%.1f / %.1f %s = %.2f%s" % (
                mine["us"], theirs["us"], MICRO, ratio, TIMES), goal_text,
                met(ratio <= GOAL_VERSUS)])
        else:
            rows.append([what, versus_name, "error", goal_text, "error"])
    for _, _, slot in picks:
        if slot is None:
            continue
        for rate in GOAL_RATES:
            r = runs[slot.name][rate]
            rows.append(["achieved rate at %g kHz" % (rate / 1000.0),
                         slot.name] + (
                ["%.1f%% (%d late; spyc %.0f%% of a core)" % (
                    r["share"], r["late"], r["core"]),
                 "%s %g%%" % (GE, GOAL_RATE_SHARE),
                 met(r["share"] >= GOAL_RATE_SHARE)] if r else
                ["error", "%s %g%%" % (GE, GOAL_RATE_SHARE), "error"]))
    for _, _, slot in picks:
        if slot is None:
            continue
        s = cpu_slowdowns.get(slot.name)
        for rate in SLOW_RATES:
            goal = GOAL_SLOWDOWN[rate]
            goal_text = "%s %g%%" % (LE, goal)
            what = "target CPU time slowdown at %d Hz" % rate
            if s is None:
                rows.append([what, slot.name, "error", goal_text, "error"])
                continue
            pct = 100.0 * (s[0][(rate, False)] - 1)
            rows.append([what, slot.name, "%+.1f%% (noise %.0f%%)" % (
                pct, 100.0 * s[1]), goal_text, met(pct <= goal)])
    rows.append(idle_goal_row(*idle))
    what = "spyc RSS after 1 h at 100 Hz"
    goal_text = "< %g MB" % GOAL_RSS_MB
    if rss is None:
        rows.append([what, rss_slot.name if rss_slot else "-",
                     "error" if rss_slot else "no slot benchmarked",
                     goal_text, "error" if rss_slot else "-"])
    else:
        first, second = cfg["rss_at"]
        kib1, kib2, hz = rss
        done1, done2 = hz * first, hz * second
        # KiB per sample, over the samples between the two readings; a
        # shrinking RSS is taken as no growth.
        growth = max(0.0, float(kib2 - kib1) / max(1.0, done2 - done1))
        projected = (kib2 + growth * max(0.0, HOUR_SAMPLES - done2)) * 1024
        rows.append([what, rss_slot.name, "%.1f MB extrapolated (%.1f MB at "
                     "%d s, %.1f MB at %d s, %.0f Hz)" % (
                         projected / 1e6, kib1 * 1024 / 1e6, first,
                         kib2 * 1024 / 1e6, second, hz), goal_text,
                     met(projected / 1e6 < GOAL_RSS_MB)])
    return rows


# The line SPYC_STATS=1 adds with --gpu.
GPU_STATS_RE = re.compile(r"spyc: stats: --gpu: (\d+) GPU activities, (\d+) "
                          r"held for the timeline; RssAnon (\d+) KiB")


def gpu_run(python, steps, mode, workdir, spyc_args=(), stats=None,
            nvtx_pairs=0):
    """One run of bench_gpu.py in mode (plain, alone: the stand-in CUPTI
    collecting without the agent, or agent: under `spyc record --gpu`
    and spyc_args): its JSON line, and with spyc the GPU records it says
    were lost; with stats (a list), spyc's SPYC_STATS --gpu figures
    appended (activities, held, its RssAnon in KiB at the end)."""
    argv = [python, GPU_TARGET, FAKE_CUDA, str(steps), mode]
    if nvtx_pairs:
        argv.append(str(nvtx_pairs))
    lost = None
    if mode == "agent":
        out = os.path.join(workdir, "gpu.txt")
        _, _, text = run_spyc(["record", "--gpu", "--rate", str(GPU_RATE),
                               "--format", "folded", "-o", out] +
                              list(spyc_args) + ["--"] + argv,
                              300, workdir, stdout=subprocess.PIPE,
                              extra_env={"SPYC_STATS": "1"}
                              if stats is not None else None)
        if stats is not None:
            m = GPU_STATS_RE.search(
                read_file(os.path.join(workdir, "spyc.err")))
            if m is None:
                raise BenchError("spyc printed no --gpu stats line")
            stats.append(tuple(int(g) for g in m.groups()))
        m = re.search(r"(\d+) records lost",
                      read_file(os.path.join(workdir, "spyc.err")))
        if m is None:
            raise BenchError("spyc printed no GPU summary: %s" % last_line(
                read_file(os.path.join(workdir, "spyc.err"))))
        lost = int(m.group(1))
    else:
        proc = start(argv, stdout=subprocess.PIPE)
        try:
            out, _ = proc.communicate(timeout=300)
        finally:
            stop(proc)
        text = (out or b"").decode("utf-8", "replace")
    try:
        result = json.loads(last_line(text))
    except ValueError:
        raise BenchError("bench_gpu.py printed %r" % last_line(text))
    return result, lost


def bench_gpu(slot, cfg, quick, errors):
    """The --gpu goal rows, on slot: the target's CPU slowdown with
    `record --gpu` at GPU_RATE, records lost, the agent's memory in the
    target.  With the stand-ins for CUPTI and the driver (no GPU needed):
    what it measures is spyc's agent (callbacks, stack copies, the ring)
    and not CUPTI's own cost, which needs a GPU."""
    what = ("target CPU time slowdown, record --gpu at %d Hz, the agent's "
            "own" % GPU_RATE)
    goal_text = "%s %g%%" % (LE, GOAL_GPU_SLOWDOWN)
    if not (os.path.exists(AGENT) and
            os.path.exists(os.path.join(FAKE_CUDA, "libcupti.so"))):
        return [[what, slot.name, "no agent or tests/fakecuda (make "
                 "test-tools)", goal_text, "-"]]
    workdir = tempfile.mkdtemp(prefix="spyc-bench-gpu-")
    steps = GPU_STEPS[quick]
    plain, alone, profiled, lost, rss, mem = [], [], [], [], [], []
    nvtx_plain, nvtx_agent = [], []
    try:
        progress("  %s: --gpu, %d steps of 8 fake launches, %d runs each "
                 "of 3 ways" % (slot.name, steps, cfg["runs"]))
        for _ in range(cfg["runs"]):
            a, _ = gpu_run(slot.interpreter.path, steps, "plain", workdir,
                           nvtx_pairs=GPU_NVTX_PAIRS)
            c, _ = gpu_run(slot.interpreter.path, steps, "alone", workdir)
            b, n = gpu_run(slot.interpreter.path, steps, "agent", workdir,
                           nvtx_pairs=GPU_NVTX_PAIRS)
            nvtx_plain.append(a["nvtx_ns"])
            nvtx_agent.append(b["nvtx_ns"])
            plain.append(a["cpu"])
            alone.append(c["cpu"])
            profiled.append(b["cpu"])
            lost.append((n, 2 * b["launches"]))
            rss.append(b["rss_kib"] - a["rss_kib"])
        # spyc's own memory as a run goes on: a run and one three times
        # as long, the timeline held to GPU_MEM_TIMELINE activities.
        for n in (steps, 3 * steps):
            gpu_run(slot.interpreter.path, n, "agent", workdir,
                    ["--gpu-timeline", str(GPU_MEM_TIMELINE)], mem)
    except BenchError as e:
        errors.append("%s: --gpu: %s" % (slot.name, e))
        return [[what, slot.name, "error", goal_text, "error"]]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    own = 100.0 * (statistics.median(profiled) / statistics.median(alone)
                   - 1)
    whole = 100.0 * (statistics.median(profiled) / statistics.median(plain)
                     - 1)
    noise = 100.0 * (max(alone) - min(alone)) / statistics.median(alone)
    growth = ((mem[1][2] - mem[0][2]) / 1024.0 * 1e5 /
              max(1, mem[1][0] - mem[0][0]))
    nvtx_more = statistics.median(nvtx_agent) - statistics.median(nvtx_plain)
    return [
        [what, slot.name, "%+.1f%% (noise %.0f%%; over the stand-in CUPTI "
         "collecting alone)" % (own, noise), goal_text,
         met(own <= GOAL_GPU_SLOWDOWN)],
        ["  the whole, over no profiler", slot.name, "%+.1f%% (the "
         "stand-in's own cost is not CUPTI's: that needs a GPU)" % whole,
         "-", "-"],
        ["  GPU records lost", slot.name, "%d of %d" % max(lost), "0",
         met(max(lost)[0] == 0)],
        ["  agent's memory in the target", slot.name,
         "%+.1f MB VmRSS (median; its ring, CUPTI's buffers)" % (
             statistics.median(rss) / 1024.0), "-", "-"],
        ["  spyc's memory, per 100k more GPU activities", slot.name,
         "%+.2f MB RssAnon (%d then %d activities, %d held for the "
         "timeline)" % (growth, mem[0][0], mem[1][0], GPU_MEM_TIMELINE),
         "%s %g MB" % (LE, GOAL_GPU_MEM_GROWTH_MB),
         met(growth <= GOAL_GPU_MEM_GROWTH_MB)],
        ["  an NVTX range (push and pop) in the target", slot.name,
         "%+.0f ns (%.0f ns under record --gpu, %.0f ns with no NVTX "
         "tool; ctypes calls)" % (nvtx_more, statistics.median(nvtx_agent),
                                  statistics.median(nvtx_plain)),
         "%s %g ns" % (LE, GOAL_GPU_NVTX_NS),
         met(nvtx_more <= GOAL_GPU_NVTX_NS)],
    ]


def print_goals_table(rows, cfg):
    depth, busy, idle = GOAL_DEEP
    print("goals, on the newest 3.11+ and newest 3.6-3.10 slot "
          "benchmarked: spyc record\n--idle --format folded --pid, %d s "
          "a run, %d threads spinning %d deep + %d idle:"
          % (cfg["goal_secs"], busy, depth, idle))
    print_legend([
        ("CPU per", "spyc's CPU time over the threads it read "
         "(SPYC_STATS=1)"),
        ("system calls", "per thread read, as spyc counts them "
         "(SPYC_STATS=1)"),
        ("awake", "the part of CPU per spent from each wakeup to the next "
         "sleep\n(spyc's thread CPU clock, timed in 1 round of 16); the "
         "rest is what\nsleeping and waking up costs it; of awake, the "
         "time inside\nprocess_vm_readv (the kernel's copying, timed "
         "around each call)"),
        ("floor", "the CPU time of spyc's pacing alone (tests/build/"
         "spyc-sleeploop:\nsleeps to the same deadlines, does nothing "
         "between), beside the\nsame target, per wakeup and shared by "
         "the threads of a round:\nwhat no sampler that wakes up this "
         "often can spend less than"),
        ("own sampler", "spyc's CPU per thread-sample over that of "
         "CPython's own\nsampler on the same process (profiling.sampling "
         "attach -a;\nits start-up measured apart and left out)"),
        ("rate", "the summary's Hz over the rate asked; late: slots "
         "skipped"),
        ("slowdown", "median CPU time (time.process_time) of "
         "bench_work.py under\n--rate R over its median unprofiled, "
         "from the interleaved runs\nof the first table; noise: the "
         "spread of the unprofiled CPU\ntimes (a figure within it means "
         "little, met or not)"),
        ("idle", "record (idle threads left out by their /proc stat) over "
         "record\n--idle (every thread walked), CPU per sample on the "
         "idle-threads\ntarget above"),
        ("RSS", "spyc's VmRSS on churn.py (threads, stacks, code objects "
         "that\nkeep changing) at --rate %d, read twice; its growth "
         "per\nsample extrapolated to %d samples" % (RSS_RATE,
                                                      HOUR_SAMPLES)),
    ])
    print_table(GOAL_COLUMNS, rows, left=len(GOAL_COLUMNS))


def print_table(columns, rows, left=2):
    """Aligned columns: the first left (names) to the left, the others
    (numbers) to the right; short rows padded."""
    rows = [r + [""] * (len(columns) - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in [columns] + rows)
              for i in range(len(columns))]
    for r in [columns] + rows:
        cells = [text.ljust(widths[i]) if i < left else text.rjust(widths[i])
                 for i, text in enumerate(r)]
        print("  ".join(cells).rstrip())


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def spyc_version():
    try:
        res = subprocess.run([spyc_exe, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=10,
                             universal_newlines=True)
        return res.stdout.strip() or "(no output, exit %d)" % res.returncode
    except (OSError, subprocess.SubprocessError) as e:
        return "unknown (%s)" % e


def snapshot_spyc():
    """Copy SPYC into a new directory and use the copy from now on, so that
    a rebuild during the benchmark (`make` in another shell) neither breaks
    a launch nor mixes two builds in one table.  Returns the directory,
    for the caller to remove."""
    global spyc_exe
    snapdir = tempfile.mkdtemp(prefix="spyc-bench-bin-")
    copy = os.path.join(snapdir, "spyc")
    shutil.copy2(SPYC, copy)
    # spyc looks for its GPU agent beside itself.
    if os.path.exists(AGENT):
        shutil.copy2(AGENT, os.path.join(snapdir, os.path.basename(AGENT)))
    spyc_exe = copy
    return snapdir


def print_header(cfg, quick):
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    print("spyc benchmark (%s)" % ("quick" if quick else "full"))
    print("  machine: %s CPUs (%s usable), %s" % (os.cpu_count(), usable,
                                                  cpu_model()))
    print("  kernel:  %s %s; load average %s" % (
        platform.system(), platform.release(),
        " ".join("%.2f" % x for x in os.getloadavg())))
    print("  spyc:    %s (%s, copied at start)" % (spyc_version(), SPYC))
    print("  runs:    throughput %.1f s, per depth %.2f s, workload ~%.1f s "
          "x %d runs per rate" % (cfg["rate_secs"], cfg["depth_secs"],
                                  cfg["work_secs"], cfg["runs"]))
    print()
    legend = [
        ("samples/s", "sustained at --rate %d, %d threads x %d deep (one "
         "sample holds every thread's stack)"
         % ((MAX_RATE,) + THREADS_DEEP[::-1])),
        ("drop", "share of attempts dropped in that run"),
        (MICRO + "/sample", "spyc CPU time (user+sys) per sample in that run"),
        (MICRO + "@N", "the same with 1 thread N deep"),
        (TIMES + "R Hz", "median workload time under spyc --rate R / "
         "median unprofiled"),
        ("noise", "spread (max - min) / median of the unprofiled runs: "
         "the ratios mean little\nwhen it is near their distance "
         "from 1"),
    ]
    print_legend(legend)


def print_legend(legend):
    """(name, text) pairs, texts aligned; a newline in a text continues
    it under itself."""
    width = max([11] + [len(name) for name, _ in legend])
    for name, text in legend:
        lines = text.split("\n")
        print("  %-*s %s" % (width, name, lines[0]))
        for line in lines[1:]:
            print("  %-*s %s" % (width, "", line))
    print()
    sys.stdout.flush()


def print_native_table(rows):
    print("record --native (each sampled thread stopped with ptrace and "
          "unwound with libunwind):")
    print_legend([
        ("samples/s", "sustained, same target and rate as above"),
        ("drop", "as above"),
        (MICRO + "/sample", "as above"),
        ("unmerged", "share of the stacks recorded whose native frames "
         "spyc could not merge"),
        (TIMES + "R Hz", "median workload time under spyc --rate R --native "
         "/ median unprofiled,\nfrom the same interleaved runs as "
         "above (same noise)"),
    ])
    print_table(NATIVE_COLUMNS, rows)


def print_idle_table(rows):
    nidle, depth = IDLE_DEEP
    print("idle threads: %d threads blocked on a threading.Event + 1 "
          "spinning %d deep, --rate %d\n(native idle: %d threads of libc's "
          "in pause() instead, no Python in them):"
          % (nidle, depth, MAX_RATE, nidle))
    print_legend([
        ("samples/s", "sustained"),
        ("drop", "as above"),
        (MICRO + "/sample", "as above"),
        ("stacks/sample", "thread stacks each sample kept (idle threads "
         "are left out unless --idle);\nwith --native, also the "
         "threads stopped for each sample"),
    ])
    print_table(IDLE_COLUMNS, rows)


class AccuracySpyc(object):
    """What accuracy.measure() runs spyc with: spyc_exe, its stderr kept."""

    class Result(object):
        def __init__(self, argv, returncode, stderr):
            self.argv, self.returncode, self.stderr = argv, returncode, stderr

        def describe(self):
            return "%s: exit %s: %s" % (" ".join(self.argv), self.returncode,
                                        last_line(self.stderr))

    def run(self, args, timeout=120):
        argv = [spyc_exe] + [str(a) for a in args]
        proc = start(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BenchError("spyc still running after %.0f s" % timeout)
        finally:
            stop(proc)
        return self.Result(argv, proc.returncode,
                           (err or b"").decode("utf-8", "replace"))


def bench_accuracy(slots, cfg, errors):
    """The accuracy harness (tests/accuracy.py) on each slot: record and
    record --blocking at ACCURACY_RATE for cfg["accuracy_secs"] of
    accuracy.py's every workload; one row per slot and mode: each
    burner's share by spyc / by the CPU time it measured itself."""
    rows = []
    for slot in slots:
        if slot.interpreter is None:
            continue
        workdir = tempfile.mkdtemp(prefix="spyc-bench-acc-")
        target = None
        try:
            target = accuracy.Target(slot.interpreter.path, "all", workdir,
                                     lambda argv: start(argv))
            for mode in ACCURACY_MODES:
                label = " ".join(mode) or "plain"
                progress("  %s: accuracy %s" % (slot.name, label))
                m = accuracy.measure(AccuracySpyc(), target,
                                     os.path.join(workdir, "acc.txt"),
                                     ACCURACY_RATE, cfg["accuracy_secs"],
                                     mode)
                name, worst = m.worst()
                rows.append((slot.name, label, m, name, worst))
        except (BenchError, RuntimeError, OSError) as e:
            errors.append("%s: accuracy: %s" % (slot.name, e))
        finally:
            if target is not None:
                stop(target.proc)
            shutil.rmtree(workdir, ignore_errors=True)
    return rows


def print_accuracy_table(rows):
    print("accuracy: each function's share of the samples (spyc) and of the "
          "CPU time it measured itself (true), %d Hz, tests/targets/"
          "accuracy.py (every workload in turn)" % ACCURACY_RATE)
    print_legend([
        ("worst", "the function furthest from the truth, and by how many "
         "points"),
        ("kept/drop", "samples kept and dropped, from spyc's summary")])
    burners = rows[0][2].burners
    columns = ["python", "mode"] + burners + ["worst", "kept/drop"]
    table = []
    for slot, mode, m, name, worst in rows:
        table.append([slot, mode] + [
            "%.1f/%.1f" % (m.spyc_share(b), m.true_share(b))
            for b in burners] + ["%s %.1f" % (name, worst),
                                 "%d/%d" % (m.samples, m.dropped)])
    print_table(columns, table)


def deepgen_run(python, depth, secs, workdir):
    """One plain record of deepgen.py at depth: (spin()'s share of the
    samples, its share of the target's time, samples, dropped)."""
    report = os.path.join(workdir, "deepgen-%d.json" % depth)
    target = start([python, DEEPGEN, str(depth), report],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not os.path.exists(report):
            if target.poll() is not None or time.monotonic() > deadline:
                raise BenchError("deepgen.py %d never reported" % depth)
            time.sleep(0.05)
        with open(report) as f:
            true = json.load(f)["spin_share"]
        out = os.path.join(workdir, "deepgen.txt")
        match, _, _ = run_spyc(["record", "--pid", str(target.pid),
                                "--rate", str(DEEPGEN_RATE), "--duration",
                                str(secs), "--format", "folded", "-o", out],
                               secs + 60, workdir)
    finally:
        stop(target)
    total = spin = 0
    for line in read_file(out).splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        total += int(count)
        if stack.rsplit(";", 1)[-1].startswith("spin "):
            spin += int(count)
    return (spin / float(total) if total else 0.0, true,
            int(match.group(1)), int(match.group(2)))


def bench_deepgen(slots, cfg, errors):
    """deepgen.py at each of DEEPGEN_DEPTHS on each slot: one row per
    slot, a (spyc, true, kept, dropped) per depth."""
    rows = []
    for slot in slots:
        if slot.interpreter is None:
            continue
        workdir = tempfile.mkdtemp(prefix="spyc-bench-deepgen-")
        row = []
        try:
            for depth in DEEPGEN_DEPTHS:
                progress("  %s: deep generators, %d" % (slot.name, depth))
                row.append(deepgen_run(slot.interpreter.path, depth,
                                       cfg["accuracy_secs"], workdir))
            rows.append((slot.name, row))
        except (BenchError, OSError, ValueError, KeyError) as e:
            errors.append("%s: deep generators: %s" % (slot.name, e))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return rows


def print_deepgen_table(rows):
    print("deep generators: spin()'s share of the samples (spyc) and of the "
          "time the target measured (true), plain record at %d Hz, tests/"
          "targets/deepgen.py at each depth" % DEEPGEN_RATE)
    print_legend([
        ("N deep", "spyc/true in percent, then samples kept/dropped")])
    columns = ["python"] + ["%d deep" % d for d in DEEPGEN_DEPTHS]
    table = []
    for slot, row in rows:
        table.append([slot] + ["%.1f/%.1f %d/%d" % (100 * got, 100 * true,
                                                    kept, dropped)
                               for got, true, kept, dropped in row])
    print_table(columns, table, left=1)


def newest(slots):
    """The slot with the newest interpreter (the first of equals), or
    None when no slot has one."""
    best = None
    for slot in slots:
        python = slot.interpreter
        if python is not None and (
                best is None or tuple(python.version_info) >
                tuple(best.interpreter.version_info)):
            best = slot
    return best


def parse_args(argv):
    names = [s.name for s in pyfind.slots()]
    p = argparse.ArgumentParser(
        prog="bench.py", description="Benchmark spyc against every "
        "installed CPython 3.6 .. 3.15 and print tables.")
    p.add_argument("--quick", action="store_true",
                   help="shorter runs and fewer of them (about a third of "
                   "the time)")
    p.add_argument("--python", action="append", default=[], metavar="X.Y",
                   help="only these slots (%s); repeat or separate with "
                   "commas" % ", ".join(names))
    args = p.parse_args(argv)
    wanted = []
    for item in args.python:
        for name in item.split(","):
            name = name.strip()
            if not name:
                continue
            if name not in names:
                p.error("--python %s: not one of %s" % (name,
                                                        ", ".join(names)))
            if name not in wanted:
                wanted.append(name)
    args.wanted = wanted
    return args


def main(argv):
    try:
        args = parse_args(argv)
    except SystemExit as e:
        return 64 if e.code else 0
    if not (os.path.isfile(SPYC) and os.access(SPYC, os.X_OK)):
        sys.stderr.write("bench: %s not found or not executable; run `make` "
                         "first\n" % SPYC)
        return 2
    cfg = SETTINGS[args.quick]
    all_slots = pyfind.slots()
    slots = [s for s in all_slots
             if not args.wanted or s.name in args.wanted]
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        snapdir = snapshot_spyc()
    except OSError as e:
        sys.stderr.write("bench: cannot copy %s: %s\n" % (SPYC, e))
        return 2
    try:
        return bench(args, cfg, slots, all_slots)
    finally:
        shutil.rmtree(snapdir, ignore_errors=True)


def bench(args, cfg, slots, all_slots):
    """Everything after the set-up: header, measurements, tables.  slots:
    those to benchmark; all_slots: every one found (the goals table's
    comparison uses 3.15 when found, benchmarked or not)."""
    print_header(cfg, args.quick)
    rows, native_rows, idle_rows, errors, notes = [], [], [], [], []
    tree_rows, goal_rows, cpu_slowdowns = [], [], {}
    accuracy_rows, deepgen_rows = [], []
    idle_results = {}
    started = time.monotonic()
    try:
        for slot in slots:
            if slot.interpreter is None:
                progress("  %s: not found" % slot.name)
                rows.append([slot.name, "not found"])
                native_rows.append([slot.name, "not found"])
            else:
                row, native_row = bench_slot(slot, cfg, errors, notes,
                                             cpu_slowdowns)
                rows.append(row)
                native_rows.append(native_row)
        idle_slot = newest(slots)
        if idle_slot is not None:
            idle_rows, idle_results = bench_idle(idle_slot, cfg, errors)
            tree_rows = bench_tree(idle_slot, cfg, errors)
        accuracy_rows = bench_accuracy(slots, cfg, errors)
        deepgen_rows = bench_deepgen(slots, cfg, errors)
        goal_rows = bench_goals(slots, all_slots, cfg, errors, cpu_slowdowns,
                                (idle_slot, idle_results))
        if idle_slot is not None:
            goal_rows += bench_gpu(idle_slot, cfg, args.quick, errors)
    except KeyboardInterrupt:
        progress("bench: interrupted")
        return 130
    finally:
        stop_all()
    print_table(COLUMNS, rows)
    print()
    print_native_table(native_rows)
    if idle_rows:
        print()
        print_idle_table(idle_rows)
    if tree_rows:
        print()
        print_tree_table(tree_rows)
    if accuracy_rows:
        print()
        print_accuracy_table(accuracy_rows)
    if deepgen_rows:
        print()
        print_deepgen_table(deepgen_rows)
    if goal_rows:
        print()
        print_goals_table(goal_rows, cfg)
    for title, lines in (("notes", notes), ("errors", errors)):
        if lines:
            print()
            print(title + ":")
            for line in lines:
                print("  " + line)
    print()
    print("took %.0f s; load average now %s" % (
        time.monotonic() - started,
        " ".join("%.2f" % x for x in os.getloadavg())))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
