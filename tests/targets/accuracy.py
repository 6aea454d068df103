# SPDX-License-Identifier: MIT
"""Accuracy target: a main thread that burns CPU in known functions, each
measuring for itself how much CPU time it spent, so that a profile's
shares can be checked against the truth.

Each function named in BURNERS burns the CPU in its own frame (a loop
calling time.thread_time, a C function: no Python frame of its own) in
slices of a few hundred microseconds, and adds each slice's thread CPU
time to its total.  What runs between slices (generator hand-overs,
awaits, the driver loop) is not counted by anyone, and spyc's samples of
it are left out of the comparison too.

Workloads (argv[1]):
- yield_from: a 5-deep `yield from` chain of generators; the innermost
  one yields every slice, and each level burns its own slices on the way
  (so generator frames are resumed and suspended all the time);
- genexpr: generator expressions over generators that burn, consumed by
  sum() (a C caller between the frames);
- asyncio: an event loop of tasks that burn between short awaits
  (asyncio.sleep(0)), two levels of coroutines each;
- calls: plain functions, no generators (the control);
- all: one round of each of the above in turn (asyncio: one gather of
  two tasks on a loop run again each round).

Usage: accuracy.py WORKLOAD REPORT.json

It reports {"pid", "workload", "burners": [names]} once it runs, and on
each SIGUSR1 writes REPORT.json.N (N = 1, 2, ...: the signals it has had)
with {"cpu_ns": {name: thread CPU ns so far}}, atomically (cpushare.py).
Must run unchanged on CPython 3.6 .. 3.15.
"""

import asyncio
import sys

from cpushare import clock, serve

# Slices of different lengths, none a multiple of another or of a common
# sampling period, so that samples do not fall in step with them.
SLICES = {"leaf": 0.000310, "level2": 0.000170, "level4": 0.000230,
          "gen_a": 0.000290, "gen_b": 0.000130, "task_leaf": 0.000270,
          "task_mid": 0.000110, "call_a": 0.000330, "call_b": 0.000150}
cpu = dict((name, 0.0) for name in SLICES)


# --- yield_from: outer -> level2 -> level3 -> level4 -> leaf ---

def leaf(n):
    for i in range(n):
        t0 = clock()
        while clock() - t0 < SLICES["leaf"]:
            pass
        cpu["leaf"] += clock() - t0
        yield i


def level4(n):
    t0 = clock()
    while clock() - t0 < SLICES["level4"]:
        pass
    cpu["level4"] += clock() - t0
    yield from leaf(n)


def level3(n):
    yield from level4(n)
    yield from level4(n)


def level2(n):
    for _ in range(2):
        t0 = clock()
        while clock() - t0 < SLICES["level2"]:
            pass
        cpu["level2"] += clock() - t0
        yield from level3(n)


def outer(n):
    yield from level2(n)


def yield_from_round():
    return sum(outer(3))


# --- genexpr ---

def gen_a(n):
    for i in range(n):
        t0 = clock()
        while clock() - t0 < SLICES["gen_a"]:
            pass
        cpu["gen_a"] += clock() - t0
        yield i


def gen_b(n):
    for i in range(n):
        t0 = clock()
        while clock() - t0 < SLICES["gen_b"]:
            pass
        cpu["gen_b"] += clock() - t0
        yield i


def genexpr_round():
    return sum(x * 2 for x in gen_a(4)) + sum(x + 1 for x in gen_b(6))


# --- asyncio ---

async def task_leaf():
    for _ in range(3):
        t0 = clock()
        while clock() - t0 < SLICES["task_leaf"]:
            pass
        cpu["task_leaf"] += clock() - t0
        await asyncio.sleep(0)


async def task_mid():
    t0 = clock()
    while clock() - t0 < SLICES["task_mid"]:
        pass
    cpu["task_mid"] += clock() - t0
    await task_leaf()


async def asyncio_main():
    while True:
        await asyncio.gather(task_mid(), task_mid(), task_mid())


# --- calls ---

def call_a():
    t0 = clock()
    while clock() - t0 < SLICES["call_a"]:
        pass
    cpu["call_a"] += clock() - t0


def call_b():
    t0 = clock()
    while clock() - t0 < SLICES["call_b"]:
        pass
    cpu["call_b"] += clock() - t0


def calls_round():
    call_a()
    call_b()
    call_b()


def asyncio_round(loop):
    loop.run_until_complete(asyncio.gather(task_mid(), task_mid()))


def all_round(loop):
    yield_from_round()
    genexpr_round()
    asyncio_round(loop)
    calls_round()


WORKLOADS = {
    "yield_from": (yield_from_round, ["leaf", "level2", "level4"]),
    "genexpr": (genexpr_round, ["gen_a", "gen_b"]),
    "asyncio": (None, ["task_leaf", "task_mid"]),
    "calls": (calls_round, ["call_a", "call_b"]),
    "all": (all_round, sorted(SLICES)),
}


def main():
    workload, report = sys.argv[1], sys.argv[2]
    run, burners = WORKLOADS[workload]
    serve(report, workload, cpu, burners)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    if run is None:
        loop.run_until_complete(asyncio_main())
    if run is all_round:
        while True:
            run(loop)
    while True:
        run()


main()
