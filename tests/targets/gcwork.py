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

Usage: gcwork.py [spinner] REPORT.json

With "spinner", a second thread spins in side() all along (its time is
neither burner's): the collector's time is still the main thread's.

It reports {"pid", "workload", "burners": ["<GC>", "build"]} once it
runs, and on each SIGUSR1 writes REPORT.json.N (N = 1, 2, ...) with
{"cpu_ns": {name: thread CPU ns so far}}, atomically (cpushare.py, as
accuracy.py does; tests/accuracy.py reads both).  Must run unchanged on CPython
3.6 .. 3.15.
"""

import gc
import sys
import threading

from cpushare import clock, serve

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


def side():
    n = 0
    while True:
        n += 1


def main():
    # Few, long collections: the callbacks' own time (two thread_time
    # calls, system calls) is then a small part of the collector's.
    gc.set_threshold(50000)
    gc.callbacks.append(on_gc)
    if sys.argv[1] == "spinner":
        threading.Thread(target=side, name="spinner", daemon=True).start()
    serve(sys.argv[-1], "gc", cpu, sorted(cpu))
    while True:
        build(20000)


main()
