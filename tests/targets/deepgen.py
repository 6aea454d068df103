# SPDX-License-Identifier: MIT
"""Trust target: a `yield from` chain of generators DEPTH deep (the
shape of json's pure-Python encoder on deeply nested data), whose
innermost one runs spin() and yields, over and over.  Every item passes
up the whole chain, so the thread's stack changes at every depth all the
time, a thousand frames and more deep, in generators' frames (which live
outside the data stack, in their generator objects).

The main thread first measures itself for CALIBRATE seconds: the share
of its time spent in spin() (timed around each call).  Then it reports
{"pid", "depth", "spin_share"} (atomically, to REPORT.json) and runs on
the same way, untimed, forever.

The stack at any moment, outermost first: <module>, main, drive, then
nest x k (0 <= k <= DEPTH + 1) and, only under all DEPTH + 1 of them,
spin.

Usage: deepgen.py DEPTH REPORT.json.  Must run unchanged on CPython
3.6 .. 3.15.
"""

import json
import os
import sys
import time

CALIBRATE = 1.5
# spin()'s loop: some 30 to 100 us, about what one item takes to pass up
# a chain a thousand deep.
SPIN = 1500


def spin():
    x = 0
    for i in range(SPIN):
        x += i
    return x


def nest(k, timed):
    if k:
        yield from nest(k - 1, timed)
        return
    if timed is None:
        while True:
            yield spin()
    while True:
        t0 = time.perf_counter()
        x = spin()
        timed[0] += time.perf_counter() - t0
        yield x


def drive(depth, seconds, timed):
    end = time.perf_counter() + seconds if seconds else None
    for _ in nest(depth, timed):
        if end is not None and time.perf_counter() > end:
            return


def write_report(path, doc):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


def main():
    depth = int(sys.argv[1])
    sys.setrecursionlimit(depth + 500)
    timed = [0.0]
    t0 = time.perf_counter()
    drive(depth, CALIBRATE, timed)
    share = timed[0] / (time.perf_counter() - t0)
    write_report(sys.argv[2], {"pid": os.getpid(), "depth": depth,
                               "spin_share": share})
    drive(depth, None, None)


if __name__ == "__main__":
    main()
