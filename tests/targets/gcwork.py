# SPDX-License-Identifier: MIT
"""GC target: a main thread whose time goes to building cyclic garbage in
build() and to CPython's cycle collector, each measured by the thread
itself, so that a profile's "<GC>" share can be checked against the
truth.

The collector's time is what gc.callbacks bracket: thread CPU time from
each "start" to its "stop" (the collections build()'s allocations set
off, and the full gc.collect() that ends each round, over a heap of
long-lived containers that makes it take milliseconds; a high threshold
makes them few and long, so that the callbacks' own time, which spyc
counts as the collector's, is a small part of it).  build()'s own
time is the rest of each round.  Both happen under build(): spyc puts
its "<GC>" frame on top of build()'s stack.

Usage: gcwork.py REPORT.json

It reports {"pid", "workload", "burners": ["<GC>", "build"]} once it
runs, and on each SIGUSR1 writes REPORT.json.N (N = 1, 2, ...) with
{"cpu_ns": {name: thread CPU ns so far}}, atomically, as accuracy.py
does (tests/accuracy.py reads both).  Must run unchanged on CPython
3.6 .. 3.15.
"""

import functools
import gc
import json
import os
import signal
import sys
import time

try:
    clock = time.thread_time        # 3.7+
except AttributeError:
    clock = functools.partial(time.clock_gettime,
                              time.CLOCK_THREAD_CPUTIME_ID)

cpu = {"<GC>": 0.0, "build": 0.0}
started = [None]

# Long-lived containers: every full collection traverses them all.
keep = [[i] for i in range(30000)]


def on_gc(phase, info):
    if phase == "start":
        started[0] = clock()
    elif started[0] is not None:
        cpu["<GC>"] += clock() - started[0]
        started[0] = None


def build(n):
    t0 = clock()
    gc_before = cpu["<GC>"]
    for i in range(n):
        a = [i]
        a.append(a)
        b = {"a": a}
        a.append(b)
    gc.collect()
    cpu["build"] += clock() - t0 - (cpu["<GC>"] - gc_before)


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


def main():
    report = sys.argv[1]
    signals = [0]

    def snapshot(signum, frame):
        signals[0] += 1
        write_json("%s.%d" % (report, signals[0]), {
            "cpu_ns": dict((name, int(t * 1e9)) for name, t in cpu.items())})

    signal.signal(signal.SIGUSR1, snapshot)
    # Few, long collections: the callbacks' own time (two thread_time
    # calls, system calls) is then a small part of the collector's.
    gc.set_threshold(50000)
    gc.callbacks.append(on_gc)
    write_json(report, {"pid": os.getpid(), "workload": "gc",
                        "burners": sorted(cpu)})
    while True:
        build(20000)


main()
