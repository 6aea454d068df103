# SPDX-License-Identifier: MIT
"""An hour of spyc record at 1 kHz on a target whose stacks churn: spyc's
memory must plateau, bounded by the target's distinct stacks, not grow with
the length of the run.

Usage: python3 tests/soak.py [--seconds S] [--rate HZ] [--every S]
                             [--python X.Y]

The target is tests/targets/churn.py (threads, code objects, generators,
coroutines and exceptions coming and going; its fresh functions' names
cycling through a thousand, so that its distinct stacks are bounded while
its threads and code objects are not), launched under
`spyc record --rate HZ --duration S --kill-after-duration --format folded`
with the newest supported CPython (or --python).  spyc's resident set size
(VmRSS) is read every --every seconds and printed as a table.  The run
passes if the file is complete and the RSS of the last third of the run
stays within 10% (and 4 MB) of the highest RSS seen by the end of the first
third; exit status 1 otherwise.
"""

import argparse
import os
import subprocess
import sys
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
import pyfind  # noqa: E402

SPYC = os.path.join(os.path.dirname(TESTS), "spyc")
CHURN = os.path.join(TESTS, "targets", "churn.py")


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3600)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--every", type=float, default=60)
    ap.add_argument("--python", help="X.Y: the slot to run")
    args = ap.parse_args()
    if not os.access(SPYC, os.X_OK):
        sys.exit("soak: build spyc first (make)")
    slots = [s for s in pyfind.slots()
             if s.interpreter is not None and
             s.name != "static" and not s.is_free_threaded]
    if args.python:
        slots = [s for s in slots if s.name == args.python]
    if not slots:
        sys.exit("soak: no supported CPython found")
    py = slots[-1].interpreter
    out = "/tmp/spyc-soak-%d.txt" % os.getpid()
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith("PYTHON"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.Popen(
        [SPYC, "record", "--rate", str(args.rate), "--duration",
         str(args.seconds), "--kill-after-duration", "--format", "folded",
         "-o", out, "--", py.path, CHURN, "100000000", "bounded"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    print("soak: %s, %g s at %g Hz, spyc pid %d" % (
        py.minor, args.seconds, args.rate, proc.pid))
    print("%8s  %10s" % ("seconds", "RSS MB"))
    start = time.time()
    readings = []
    while proc.poll() is None:
        rss = rss_kib(proc.pid)
        if rss:
            t = time.time() - start
            readings.append((t, rss))
            print("%8.0f  %10.1f" % (t, rss / 1024.0))
            sys.stdout.flush()
        deadline = time.time() + args.every
        while proc.poll() is None and time.time() < deadline:
            time.sleep(0.5)
    err = proc.stderr.read().decode(errors="replace")
    print(err.strip())
    ok = proc.returncode in (0, 1) and os.path.getsize(out) > 0
    third = args.seconds / 3.0
    early = [r for t, r in readings if t <= third]
    late = [r for t, r in readings if t >= 2 * third]
    if early and late:
        bound = max(max(early) * 1.10, max(early) + 4096)
        plateau = max(late) <= bound
        print("highest RSS by %.0f s: %.1f MB; highest after %.0f s: %.1f "
              "MB (bound %.1f MB): %s" % (
                  third, max(early) / 1024.0, 2 * third, max(late) / 1024.0,
                  bound / 1024.0, "plateau" if plateau else "GROWING"))
    else:
        plateau = False
        print("too few readings to judge: use a longer --seconds or a "
              "shorter --every")
    if not ok:
        print("spyc exited %s or left no file" % proc.returncode)
    os.unlink(out)
    sys.exit(0 if ok and plateau else 1)


if __name__ == "__main__":
    main()
