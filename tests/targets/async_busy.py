# SPDX-License-Identifier: MIT
"""Record target (CPython 3.14+): an asyncio task that keeps the CPU busy.

The task "busy" runs crunch() -> compute(), a tight loop that never
yields; the task "outer" awaits "busy"; the task "sleepy" waits in
nap() -> asyncio.sleep(); the loop's first task "main" waits on an event.
Once they are all in place it writes (atomically) the stacks a profiler
with --async should see, root first, as [name, file] pairs: a task is
[task name, "<task>"].

Usage: async_busy.py REPORT.json
"""

import asyncio
import json
import os
import sys

HERE = os.path.abspath(__file__)


def compute(n):
    x = 1
    i = 0
    while i < n:
        x = (x * 1103515245 + 12345 + i) % 2147483648
        i += 1
    return x


async def crunch(started):
    await started.wait()
    while True:
        compute(100000)


async def outer(busy):
    await busy


async def nap():
    await asyncio.sleep(3600)


def write_report(path):
    running = [["outer", "<task>"], ["outer", HERE], ["busy", "<task>"],
               ["crunch", HERE], ["compute", HERE]]
    waiting = [["sleepy", "<task>"], ["nap", HERE], ["sleep", asyncio.tasks.__file__]]
    doc = {"pid": os.getpid(), "running": running, "waiting": waiting}
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


async def main(path):
    started = asyncio.Event()
    busy = asyncio.create_task(crunch(started), name="busy")
    asyncio.create_task(outer(busy), name="outer")
    asyncio.create_task(nap(), name="sleepy")
    # Let "outer" and "sleepy" reach their awaits before "busy" spins.
    for _ in range(3):
        await asyncio.sleep(0)
    write_report(path)
    started.set()
    await asyncio.Event().wait()


if __name__ == "__main__":
    runner = asyncio.Runner()
    with runner:
        loop = runner.get_loop()
        loop.run_until_complete(loop.create_task(main(sys.argv[1]),
                                                 name="main"))
