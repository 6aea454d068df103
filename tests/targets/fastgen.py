# SPDX-License-Identifier: MIT
"""Generator-heavy target: code that lives in short-lived generator
frames, resumed and suspended every few microseconds (issue 21).

Workloads (argv[1]), each a loop forever:
- json: json.dumps(doc, indent=1), with the C encoder where the version
  has one for it (3.13+) and json's pure-Python generators before;
- pyjson: the same with json's pure-Python encoder forced (a nest of
  generators and `yield from`, on every version);
- yield_from: a 5-deep `yield from` chain yielding every item;
- genexpr: sum() over a generator expression;
- asyncio: an event loop of short awaits (asyncio.sleep(0));
- syscalls: a microsecond or so of Python (py_work), then one short
  system call (sys_work: os.getppid()), in turn (not part of all);
- phases: the first half of every millisecond of the clock in
  first_half, the second in second_half (not part of all);
- generators: pyjson, yield_from and genexpr in turn, PHASE seconds
  each (pure Python, no system call: reads of the target stopped are
  the reference);
- all: a few milliseconds of each in turn.

Usage: fastgen.py WORKLOAD REPORT.json; reports {"pid", "workload"}
once it runs.  Must run unchanged on CPython 3.6 .. 3.15.
"""

import asyncio
import json
import json.encoder
import os
import sys
import time

DOC = dict(("k%d" % i, [i, str(i), {"a": [1, 2, 3], "b": None}])
           for i in range(40))


def json_round():
    json.dumps(DOC, indent=1)


def pyjson_round():
    keep = json.encoder.c_make_encoder
    json.encoder.c_make_encoder = None
    try:
        json.dumps(DOC, indent=1)
    finally:
        json.encoder.c_make_encoder = keep


def g5(n):
    for i in range(n):
        yield i


def g4(n):
    yield from g5(n)


def g3(n):
    yield from g4(n)


def g2(n):
    yield from g3(n)


def g1(n):
    yield from g2(n)


def yield_from_round():
    return sum(g1(200))


def genexpr_round():
    return sum(x * x for x in range(600))


async def short_await():
    await asyncio.sleep(0)


async def awaiter():
    for _ in range(20):
        await short_await()


def asyncio_round(loop):
    loop.run_until_complete(awaiter())


def py_work():
    s = 0
    for i in range(20):
        s += i
    return s


def sys_work():
    return os.getppid()


PERIOD = 0.001


def first_half(until):
    while time.perf_counter() < until:
        pass


def second_half(until):
    while time.perf_counter() < until:
        pass


def phases_round():
    now = time.perf_counter()
    start = now - now % PERIOD
    if now - start < PERIOD / 2:
        first_half(start + PERIOD / 2)
    else:
        second_half(start + PERIOD)


def syscalls_round():
    for _ in range(100):
        py_work()
        sys_work()


# How long each workload of "generators" runs in turn.
PHASE = 0.02


def main():
    workload, report = sys.argv[1], sys.argv[2]
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    rounds = {"json": json_round, "pyjson": pyjson_round,
              "yield_from": yield_from_round, "genexpr": genexpr_round,
              "asyncio": lambda: asyncio_round(loop),
              "syscalls": syscalls_round, "phases": phases_round}
    tmp = report + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "workload": workload}, f)
    os.rename(tmp, report)
    if workload == "generators":
        order = [rounds[k] for k in ("genexpr", "pyjson", "yield_from")]
        while True:
            for r in order:
                until = time.time() + PHASE
                while time.time() < until:
                    r()
    if workload == "all":
        order = [rounds[k] for k in sorted(rounds)
                 if k not in ("syscalls", "phases")]
        while True:
            for r in order:
                for _ in range(4):
                    r()
    run = rounds[workload]
    while True:
        run()


main()
