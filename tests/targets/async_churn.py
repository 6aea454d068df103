# SPDX-License-Identifier: MIT
"""--async target (CPython 3.14+): tasks that take turns every few
microseconds.  Eight tasks "churn-N" each loop over a little work and
`await asyncio.sleep(0)`, so that at any moment one of them runs and the
others wait at that await (asyncio's own __sleep0, at its yield, under
it).  Once they run, writes (atomically) REPORT.json {"pid"}.

Usage: async_churn.py REPORT.json
"""

import asyncio
import json
import os
import sys

TASKS = 8


async def churn(n):
    x = 0
    while True:
        for i in range(100):
            x += i * n
        await asyncio.sleep(0)


def write_report(path):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.rename(tmp, path)


async def main(path):
    for n in range(TASKS):
        asyncio.create_task(churn(n), name="churn-%d" % n)
    await asyncio.sleep(0)
    write_report(path)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
