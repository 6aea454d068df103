# SPDX-License-Identifier: MIT
"""spyc stopped at random moments, hundreds of times, on every CPython found:
the target is never left stopped or traced, never killed, and computes its
own result; a record stopped by a signal always leaves its complete file.

Usage: python3 tests/stress.py [--kills N] [--stops N] [--fault-samples N]
                               [--fault-dumps N] [--python X.Y,...]

The target (tests/targets/hostile.py rounds) does a fixed sum over and over
in 4 threads; the test knows the sum in closed form.  Per slot of
tests/pyfind.py, spyc is started on it again and again with `record --pid`
at 1 kHz and:

  SIGKILL   killed after a random 20 .. 600 ms, taking turns with
            --native, --blocking and both (threads held by ptrace when
            spyc dies); a file under the output name must never be partial;
  SIGTERM   SIGINT or SIGTERM after a random 100 .. 800 ms, taking turns
            with no option, --native, --blocking and --idle: spyc must
            exit 0 or 1 and leave its complete file;
  faults    tests/build/spyc-faults (make FAULTS=1) with about one read
            in 30 failing, cut short, random or stale and one ptrace call
            in 50 failing: record --idle, --native and --blocking each
            until it has met --fault-samples samples (default 10^5, taken
            and dropped) in 5 s runs at 5 kHz, --fault-dumps dumps (text,
            --json, --native) and 5 s of top's sampler; each run must end
            0 or 1, a record with its complete file.

After every run each thread of the target must be neither stopped (t, T)
nor traced (TracerPid 0).  Printed: one row per case with the runs, the
samples the summaries counted, and the failures by kind: crashes (spyc
ended by a signal it was not sent), hangs (no exit 20 s after the signal),
targets left stopped or traced, targets killed, files lost (missing,
partial or invalid), wrong results.  Exit status 1 if any is not zero.
"""

import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
import pyfind  # noqa: E402

SPYC = os.path.join(os.path.dirname(TESTS), "spyc")
FAULTS_SPYC = os.path.join(TESTS, "build", "spyc-faults")
# About one read in 30 goes wrong, as in tests/test_faults.py.
FAULT_RATES = "read=0.01,garbage=0.01,stale=0.01,ptrace=0.02"
FAULT_HZ = 5000
FAULT_RUN_SECONDS = 5
FAULT_RUNS_MAX = 60
SCRIPT = os.path.join(TESTS, "targets", "hostile.py")
WORK = 300000
HANG_SECONDS = 20
COLUMNS = ["crashes", "hangs", "left stopped", "targets killed",
           "files lost", "wrong results"]


def expected(n):
    return (n - 1) * n * (2 * n - 1) // 6


def target_env():
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith("PYTHON") and not k.startswith("SPYC_"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def wait_file(path, seconds):
    deadline = time.time() + seconds
    while not os.path.exists(path):
        if time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


def untouched(pid):
    """'' if no thread of pid is stopped or traced, else what is."""
    bad = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return ""
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                fields = dict(l.split(":", 1) for l in f.read().splitlines()
                              if ":" in l)
        except OSError:
            continue
        state = fields["State"].split()[0]
        tracer = int(fields["TracerPid"])
        if state in ("t", "T") or tracer:
            bad.append("%s %s (tracer %d)" % (tid, state, tracer))
    return ", ".join(bad)


def file_ok(path):
    try:
        with open(path) as f:
            doc = json.load(f)
        return bool(doc.get("profiles"))
    except (OSError, ValueError):
        return False


def summary_samples(stderr, with_dropped=False):
    """The summary's sample count (plus its dropped ones)."""
    for line in stderr.splitlines():
        m = re.match(r"^spyc: (\d+) samples?(?:, (\d+) dropped)?", line)
        if m:
            return int(m.group(1)) + (
                int(m.group(2) or 0) if with_dropped else 0)
    return 0


class Case(object):
    def __init__(self, name):
        self.name = name
        self.runs = 0
        self.samples = None
        self.fails = dict((c, 0) for c in COLUMNS)
        self.notes = []

    def fail(self, column, note):
        self.fails[column] += 1
        if len(self.notes) < 10:
            self.notes.append(note)


def one_run(case, slot, target, out, opts, sig, delay):
    case.runs += 1
    if os.path.exists(out):
        os.unlink(out)
    proc = subprocess.Popen(
        [SPYC, "record", "--pid", str(target.pid), "--rate", "1000", "-o",
         out] + opts, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        case.fail("hangs", "%s %s: no exit %d s after %s" % (
            slot.id, " ".join(opts), HANG_SECONDS, sig.name))
        proc.kill()
        _, err = proc.communicate()
    err = err.decode(errors="replace")
    what = "%s %s after %.0f ms" % (slot.id, " ".join(opts) or "plain",
                                    delay * 1000)
    code = proc.returncode
    if code < 0 and -code != sig:
        case.fail("crashes", "%s: ended by signal %d\n%s" % (what, -code,
                                                            err))
    if sig == signal.SIGKILL:
        if os.path.exists(out) and not file_ok(out):
            case.fail("files lost", "%s: partial file left" % what)
    else:
        if code not in (0, 1):
            if code >= 0:
                case.fail("files lost", "%s: exit %d\n%s" % (what, code,
                                                            err))
        elif not file_ok(out):
            case.fail("files lost", "%s: no complete file\n%s" % (what,
                                                                 err))
        case.samples = (case.samples or 0) + summary_samples(err)
    bad = untouched(target.pid)
    if bad:
        case.fail("left stopped", "%s: %s" % (what, bad))
    if target.poll() is not None:
        case.fail("targets killed", "%s: target ended with %s" % (
            what, target.returncode))
        return False
    return True


def check_after(case, what, target):
    bad = untouched(target.pid)
    if bad:
        case.fail("left stopped", "%s: %s" % (what, bad))
    if target.poll() is not None:
        case.fail("targets killed", "%s: target ended with %s" % (
            what, target.returncode))
        return False
    return True


def faulty(case, argv, env, what, timeout=60):
    """Run spyc-faults; (exit code, stderr) or None if it hung."""
    case.runs += 1
    proc = subprocess.Popen([FAULTS_SPYC] + argv, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        case.fail("hangs", "%s: no exit in %d s" % (what, timeout))
        return None
    err = err.decode(errors="replace")
    if proc.returncode < 0:
        case.fail("crashes", "%s: ended by signal %d\n%s" % (
            what, -proc.returncode, err))
    elif proc.returncode not in (0, 1):
        case.fail("files lost", "%s: exit %d\n%s" % (
            what, proc.returncode, err))
    return proc.returncode, err


def fault_runs(case, slot, target, tmp, samples, dumps, rng):
    """spyc-faults against the target: records (plain --idle, --native,
    --blocking) until each has met `samples` samples, `dumps` dumps, and
    top's sampler; every run must end 0 or 1 with a complete file."""
    out = os.path.join(tmp, "%s.faults.json" % slot.id)
    case.samples = case.samples or 0
    for opts in (["--idle"], ["--native"], ["--blocking", "--idle"]):
        met = 0
        for _ in range(FAULT_RUNS_MAX):
            if met >= samples:
                break
            spec = "%s,seed=%d" % (FAULT_RATES, rng.randrange(1 << 30))
            env = dict(os.environ, SPYC_FAULTS=spec)
            what = "%s record %s (SPYC_FAULTS=%s)" % (slot.id, " ".join(opts),
                                                      spec)
            if os.path.exists(out):
                os.unlink(out)
            got = faulty(case, ["record", "--pid", str(target.pid),
                                "--rate", str(FAULT_HZ), "--duration",
                                str(FAULT_RUN_SECONDS), "-o", out] + opts,
                         env, what)
            if got and got[0] in (0, 1):
                if not file_ok(out):
                    case.fail("files lost", "%s: no complete file" % what)
                met += summary_samples(got[1], with_dropped=True)
            if not check_after(case, what, target):
                return False
        case.samples += met
    for i in range(dumps):
        spec = "%s,seed=%d" % (FAULT_RATES, rng.randrange(1 << 30))
        env = dict(os.environ, SPYC_FAULTS=spec)
        opts = [[], ["--json"], ["--native"]][i % 3]
        what = "%s dump %s (SPYC_FAULTS=%s)" % (slot.id, " ".join(opts), spec)
        faulty(case, ["dump", "--pid", str(target.pid)] + opts, env, what)
        case.samples += 1
        if not check_after(case, what, target):
            return False
    spec = "%s,seed=%d" % (FAULT_RATES, rng.randrange(1 << 30))
    env = dict(os.environ, SPYC_FAULTS=spec)
    what = "%s top (SPYC_FAULTS=%s)" % (slot.id, spec)
    case.runs += 1
    with open(os.path.join(tmp, "top.txt"), "w") as screen:
        proc = subprocess.Popen(
            [FAULTS_SPYC, "top", "--pid", str(target.pid), "--rate",
             str(FAULT_HZ), "--idle", "--interval", "0.5"], env=env,
            stdout=screen, stderr=subprocess.PIPE)
        time.sleep(FAULT_RUN_SECONDS)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=20)
            if proc.returncode not in (0, 1):
                case.fail("crashes" if proc.returncode < 0 else "files lost",
                          "%s: exit %d\n%s" % (what, proc.returncode,
                                               err.decode(errors="replace")))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            case.fail("hangs", "%s: no exit 20 s after SIGTERM" % what)
    return check_after(case, what, target)


def run_slot(slot, kills, stops, tmp, cases, rng, faults):
    py = slot.interpreter
    ready = os.path.join(tmp, "%s.ready" % slot.id)
    result = os.path.join(tmp, "%s.result" % slot.id)
    target = subprocess.Popen([py.path, SCRIPT, "rounds", str(WORK), ready,
                               result], env=target_env())
    try:
        if not wait_file(ready, 30):
            raise RuntimeError("%s: target never got ready" % slot.id)
        out = os.path.join(tmp, "%s.json" % slot.id)
        kill_opts = [["--native"], ["--blocking"], ["--native", "--blocking"]]
        stop_opts = [[], ["--native"], ["--blocking"], ["--idle"]]
        alive = True
        for i in range(kills):
            if not alive:
                break
            alive = one_run(cases[0], slot, target, out,
                            kill_opts[i % len(kill_opts)], signal.SIGKILL,
                            rng.uniform(0.02, 0.6))
        for i in range(stops):
            if not alive:
                break
            sig = signal.SIGINT if i % 2 else signal.SIGTERM
            alive = one_run(cases[1], slot, target, out,
                            stop_opts[i % len(stop_opts)], sig,
                            rng.uniform(0.1, 0.8))
        if alive and faults:
            alive = fault_runs(cases[2], slot, target, tmp, faults[0],
                               faults[1], rng)
        if not alive:
            return
        open(result + ".stop", "w").close()
        if not wait_file(result, 120):
            cases[1].fail("wrong results", "%s: no result" % slot.id)
            return
        with open(result) as f:
            total, rounds = json.load(f)["result"]
        if total != rounds * expected(WORK):
            cases[1].fail("wrong results", "%s: %d rounds summed %d" % (
                slot.id, rounds, total))
        target.wait(timeout=30)
    finally:
        if target.poll() is None:
            target.kill()
        target.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--stops", type=int, default=60)
    ap.add_argument("--fault-samples", type=int, default=100000,
                    help="samples (and dropped ones) each record option "
                    "meets under fault injection, per slot; 0: no faults")
    ap.add_argument("--fault-dumps", type=int, default=60)
    ap.add_argument("--python", help="X.Y[,X.Y...]: only these slots")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    if not os.access(SPYC, os.X_OK):
        sys.exit("stress: build spyc first (make)")
    slots = [s for s in pyfind.slots()
             if s.interpreter is not None and
             s.interpreter.supported]
    if args.python:
        want = args.python.split(",")
        slots = [s for s in slots if s.name in want]
    if not slots:
        sys.exit("stress: no supported CPython found")
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    cases = [Case("SIGKILL mid-sample (--native, --blocking)"),
             Case("SIGINT/SIGTERM mid-sample")]
    faults = None
    if args.fault_samples:
        if not os.access(FAULTS_SPYC, os.X_OK):
            sys.exit("stress: build tests/build/spyc-faults first (make "
                     "FAULTS=1)")
        faults = (args.fault_samples, args.fault_dumps)
        cases.append(Case("faults: record, --native, --blocking, dump, "
                          "top"))
    per_kills = int(math.ceil(args.kills / float(len(slots))))
    per_stops = int(math.ceil(args.stops / float(len(slots))))
    tmp = os.path.join("/tmp", "spyc-stress-%d" % os.getpid())
    os.makedirs(tmp)
    print("stress: %s, seed %d" % (", ".join(s.id for s in slots), seed))
    for slot in slots:
        sys.stdout.write("  %s ..." % slot.id)
        sys.stdout.flush()
        start = time.time()
        run_slot(slot, per_kills, per_stops, tmp, cases, rng, faults)
        print(" %.0f s" % (time.time() - start))
    widths = [max(len(c.name) for c in cases), 5, 8] + \
        [len(c) for c in COLUMNS]
    head = ["case", "runs", "samples"] + COLUMNS
    print()
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                    for i, (h, w) in enumerate(zip(head, widths))))
    failed = 0
    for c in cases:
        row = [c.name, str(c.runs),
               "-" if c.samples is None else str(c.samples)] + \
            [str(c.fails[k]) for k in COLUMNS]
        failed += sum(c.fails.values())
        print("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                        for i, (v, w) in enumerate(zip(row, widths))))
    for c in cases:
        for note in c.notes:
            print("%s: %s" % (c.name, note))
    print("\n%s" % ("all zero" if not failed else
                    "%d failures (seed %d)" % (failed, seed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
