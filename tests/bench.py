# SPDX-License-Identifier: MIT
"""Benchmark spyc against every CPython 3.6 .. 3.13 found, print tables.

Usage: python3 tests/bench.py [--quick] [--python X.Y[,X.Y...]] ...

For each test slot of tests/pyfind.py (3.6 .. 3.13, newest of each minor,
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

Then one last table, for the newest interpreter benchmarked only: a target
with 100 threads blocked on a threading.Event and one thread spinning 50
calls deep (tests/targets/bench_idle.py), sampled at --rate 100000 by plain
`record`, `record --idle`, `record --blocking`, `record --native` and
`record --native --idle`: samples/s, drop, us/sample as above, and
stacks/sample, the number of thread stacks each sample kept (1 when idle
threads are filtered out, 101 with --idle).  With --blocking and --native,
those are the threads stopped for each sample.

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
SPYC = os.path.join(REPO, "spyc")
# The copy of SPYC that every run uses (see snapshot_spyc); SPYC until then.
spyc_exe = SPYC

sys.path.insert(0, TESTS)
import pyfind  # noqa: E402

MAX_RATE = 100000           # the highest --rate spyc accepts
THREADS_DEEP = (50, 4)      # the throughput run: depth, threads
DEPTHS = (10, 100, 500)
SLOW_RATES = (100, 1000)
NATIVE_SLOW_RATES = (100,)  # the same, with record --native
IDLE_DEEP = (100, 50)       # the idle-threads run: idle threads, busy depth
# spyc options for the rows of the idle-threads table.
IDLE_MODES = ((), ("--idle",), ("--blocking",), ("--native",),
              ("--native", "--idle"))
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
    # per-depth run s, workload s, runs per rate
    False: dict(rate_secs=2.0, depth_secs=1.5, work_secs=1.6, runs=7),
    True: dict(rate_secs=1.0, depth_secs=0.75, work_secs=0.5, runs=3),
}

SUMMARY_RE = re.compile(r"spyc: (\d+) samples, (\d+) dropped.*?, "
                        r"([0-9.]+) s at ([0-9.]+) Hz")
UNMERGED_RE = re.compile(r"(\d+) native stacks? unmerged")

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


def start(argv, **kwargs):
    """Popen in its own process group, remembered until stop() reaps it.
    A process that spyc launches lands in the same group, so killing the
    group kills it too."""
    try:
        proc = subprocess.Popen(argv, env=target_env(),
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


def run_spyc(argv, timeout, workdir, stdout=subprocess.DEVNULL):
    """Run spyc to completion; returns (summary match, CPU seconds it used,
    its stdout).  Raises BenchError if it failed or printed no summary."""
    errpath = os.path.join(workdir, "spyc.err")
    with open(errpath, "wb") as err:
        before = children_cpu()
        proc = start([spyc_exe] + argv, stdout=stdout, stderr=err)
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


ELAPSED_RE = re.compile(r"^elapsed ([0-9.]+) ", re.M)


def mode_name(mode):
    """A slowdown mode: None (unprofiled) or (rate, native)."""
    if mode is None:
        return "unprofiled"
    return "%d Hz%s" % (mode[0], " --native" if mode[1] else "")


def time_work(python, iterations, mode, workdir, failures):
    """Seconds the workload took by its own clock, profiled in mode, a
    (rate, native) pair, or not profiled, when mode is None.  Each failed
    launch under spyc that was retried adds its message to failures."""
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
    return float(match.group(1))


SLOW_MODES = ([(r, False) for r in SLOW_RATES] +
              [(r, True) for r in NATIVE_SLOW_RATES])


def slowdown(python, cfg, workdir, failures):
    """({mode: median profiled / median unprofiled} for SLOW_MODES,
    spread of the unprofiled runs)."""
    # The faster of two, as the first run may pay for a cold page cache.
    t = min(time_work(python, CALIBRATE_ITERATIONS, None, workdir, failures)
            for _ in range(2))
    iterations = max(1, int(CALIBRATE_ITERATIONS * cfg["work_secs"] / t))
    modes = [None] + SLOW_MODES
    times = dict((m, []) for m in modes)
    for i in range(cfg["runs"]):
        # Rotate the order each round, so that no mode always runs first
        # (or right after the noisiest one).
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        for mode in order:
            times[mode].append(time_work(python, iterations, mode, workdir,
                                         failures))
    base = statistics.median(times[None])
    progress("    workload %d iterations; medians: unprofiled %.3f s, %s"
             % (iterations, base, ", ".join(
                 "%s %.3f s" % (mode_name(m), statistics.median(times[m]))
                 for m in SLOW_MODES)))
    ratios = dict((m, statistics.median(times[m]) / base)
                  for m in SLOW_MODES)
    spread = (max(times[None]) - min(times[None])) / base
    return ratios, spread


COLUMNS = (["python", "build", "samples/s", "drop",
            MICRO + "/sample"] +
           ["%s@%d" % (MICRO, d) for d in DEPTHS] +
           ["%s%dHz" % (TIMES, r) for r in SLOW_RATES] + ["noise"])
NATIVE_COLUMNS = (["python", "build", "samples/s", "drop",
                   MICRO + "/sample", "unmerged"] +
                  ["%s%dHz" % (TIMES, r) for r in NATIVE_SLOW_RATES])
IDLE_COLUMNS = ["python", "spyc", "samples/s", "drop",
                MICRO + "/sample", "stacks/sample"]


def measure(name, what, fn, errors):
    """fn(), or None when it raised BenchError, which adds a line to
    errors and to the progress output."""
    try:
        return fn()
    except BenchError as e:
        errors.append("%s %s: %s" % (name, what, e))
        progress("    %s: error: %s" % (what, e))
        return None


def bench_slot(slot, cfg, errors, notes):
    """The slot's rows of the first two tables; failed cells read "error"
    and add a line to errors; launches that worked only when retried add
    to notes."""
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
    """The rows of the idle-threads table, one per IDLE_MODES, for slot."""
    python = slot.interpreter
    nidle, depth = IDLE_DEEP
    rows = []
    workdir = tempfile.mkdtemp(prefix="spyc-bench-")
    try:
        for options in IDLE_MODES:
            name = idle_mode_name(options)
            progress("  %s: %d idle threads + 1 x %d deep, %s --rate %d, "
                     "%.1f s" % (slot.name, nidle, depth, name, MAX_RATE,
                                 cfg["rate_secs"]))
            r = measure(slot.name, name, lambda: sample_target(
                python, [IDLE, str(nidle), str(depth), str(BUSY_LIFETIME)],
                cfg["rate_secs"], workdir, options), errors)
            rows.append([slot.name if not rows else "", name] +
                        (["%.0f" % r["rate"], "%.1f%%" % r["drop"],
                          "%.1f" % r["us"], "%.1f" % r["stacks"]] if r
                         else ["error"] * 4))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def print_table(columns, rows):
    """Aligned columns: names left, numbers right; short rows padded."""
    rows = [r + [""] * (len(columns) - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in [columns] + rows)
              for i in range(len(columns))]
    for r in [columns] + rows:
        cells = [text.ljust(widths[i]) if i < 2 else text.rjust(widths[i])
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
          "spinning %d deep, --rate %d:" % (nidle, depth, MAX_RATE))
    print_legend([
        ("samples/s", "sustained"),
        ("drop", "as above"),
        (MICRO + "/sample", "as above"),
        ("stacks/sample", "thread stacks each sample kept (idle threads "
         "are left out unless --idle);\nwith --native, also the "
         "threads stopped for each sample"),
    ])
    print_table(IDLE_COLUMNS, rows)


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
        "installed CPython 3.6 .. 3.13 and print tables.")
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
    slots = [s for s in pyfind.slots()
             if not args.wanted or s.name in args.wanted]
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        snapdir = snapshot_spyc()
    except OSError as e:
        sys.stderr.write("bench: cannot copy %s: %s\n" % (SPYC, e))
        return 2
    try:
        return bench(args, cfg, slots)
    finally:
        shutil.rmtree(snapdir, ignore_errors=True)


def bench(args, cfg, slots):
    """Everything after the set-up: header, measurements, tables."""
    print_header(cfg, args.quick)
    rows, native_rows, idle_rows, errors, notes = [], [], [], [], []
    started = time.monotonic()
    try:
        for slot in slots:
            if slot.interpreter is None:
                progress("  %s: not found" % slot.name)
                rows.append([slot.name, "not found"])
                native_rows.append([slot.name, "not found"])
            else:
                row, native_row = bench_slot(slot, cfg, errors, notes)
                rows.append(row)
                native_rows.append(native_row)
        idle_slot = newest(slots)
        if idle_slot is not None:
            idle_rows = bench_idle(idle_slot, cfg, errors)
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
