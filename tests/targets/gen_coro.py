# SPDX-License-Identifier: MIT
"""Dump target: threads blocked inside running generators and coroutines.

- "generator": a for loop over a generator that delegates (yield from) to a
  sub-generator, whose body blocks while being iterated;
- "coroutine": a coroutine chain driven by hand with coro.send(None);
- "asyncio": an asyncio event loop running a task that iterates an async
  generator whose body blocks;
- main: sum() over a generator expression that blocks.

Usage: gen_coro.py REPORT.json
"""

import asyncio
import sys
import threading
import time

import selfreport


def sub_generator():
    yield 1
    selfreport.ready()
    time.sleep(3600)
    yield 2


def delegating_generator():
    yield 0
    yield from sub_generator()


def consume():
    total = 0
    for n in delegating_generator():
        total += n
    return total


async def leaf_coroutine():
    selfreport.ready()
    time.sleep(3600)


async def middle_coroutine():
    await leaf_coroutine()


def drive_by_hand():
    coro = middle_coroutine()
    coro.send(None)


async def ticker():
    yield 1
    selfreport.ready()
    time.sleep(3600)
    yield 2


async def async_main():
    await asyncio.sleep(0)
    async for _ in ticker():
        pass


def run_loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(async_main())


def slow(x):
    selfreport.ready()
    time.sleep(3600)
    return x


def main():
    for name, fn in [("generator", consume), ("coroutine", drive_by_hand),
                     ("asyncio", run_loop)]:
        t = threading.Thread(target=fn, name=name)
        t.daemon = True
        t.start()
    selfreport.start(sys.argv[1], 4)
    return sum(slow(x) for x in [1])


if __name__ == "__main__":
    main()
