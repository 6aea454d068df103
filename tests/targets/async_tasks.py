# SPDX-License-Identifier: MIT
"""Dump target (CPython 3.14+): named asyncio tasks awaiting each other.

Main thread, loop "main", its tasks all waiting:
- "main": the loop's first task, waiting on an event;
- "worker-1" and an unnamed one ("Task-N"): worker -> middle -> leaf ->
  Event.wait, a chain of coroutines;
- "waiter": awaits the task "worker-1" itself;
- "gatherer": gathers the tasks "child-a" (a worker) and "child-b"
  (asyncio.sleep).
Thread "loop-2" runs a loop of its own with the task "other-thread".

Once every task waits, a plain callback of the main loop (so that no task
is running) writes what the target says about itself: asyncio.all_tasks()
of both loops, each task's coroutine chain (cr_await, innermost first),
its get_stack(), and the tasks awaiting it (capture_call_graph), then the
process waits for ever.

Usage: async_tasks.py REPORT.json
"""

import asyncio
import json
import os
import platform
import sys
import threading


def code_name(code):
    return code.co_qualname


def frame_entry(frame):
    return {"name": code_name(frame.f_code), "file": frame.f_code.co_filename,
            "line": frame.f_lineno}


def chain(task):
    """The task's coroutines, innermost first, as a profiler sees them."""
    out = []
    coro = task.get_coro()
    while coro is not None and hasattr(coro, "cr_await"):
        if coro.cr_frame is None:
            break
        out.append(frame_entry(coro.cr_frame))
        coro = coro.cr_await
    out.reverse()
    return out


def describe(task, thread):
    graph = asyncio.capture_call_graph(task)
    return {
        "id": id(task),
        "name": task.get_name(),
        "thread_native_id": thread,
        "frames": chain(task),
        "stack": [frame_entry(f) for f in task.get_stack()],
        "awaited_by": sorted(g.future.get_name() for g in graph.awaited_by
                             if isinstance(g.future, asyncio.Task)),
    }


async def leaf(ev):
    await ev.wait()


async def middle(ev):
    await leaf(ev)


async def worker(ev):
    await middle(ev)


async def waiter(task):
    await task


async def sleeper():
    await asyncio.sleep(3600)


async def gatherer(ev):
    await asyncio.gather(asyncio.create_task(worker(ev), name="child-a"),
                         asyncio.create_task(sleeper(), name="child-b"))


other = {}


def other_thread(ready):
    async def forever():
        await asyncio.Event().wait()

    loop = asyncio.new_event_loop()
    other["loop"] = loop
    other["tid"] = threading.get_native_id()
    task = loop.create_task(forever(), name="other-thread")
    loop.call_soon(ready.set)
    loop.run_until_complete(task)


def report(path, loop):
    tasks = [describe(t, threading.get_native_id())
             for t in asyncio.all_tasks(loop)]
    tasks += [describe(t, other["tid"])
              for t in asyncio.all_tasks(other["loop"])]
    doc = {
        "pid": os.getpid(),
        "python_version": platform.python_version(),
        "tasks": sorted(tasks, key=lambda t: t["name"]),
    }
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


async def main(path, ready):
    ev = asyncio.Event()
    w1 = asyncio.create_task(worker(ev), name="worker-1")
    asyncio.create_task(worker(ev))
    asyncio.create_task(waiter(w1), name="waiter")
    asyncio.create_task(gatherer(ev), name="gatherer")
    loop = asyncio.get_running_loop()
    # Run only when every task of both loops waits: none is running.
    await loop.run_in_executor(None, ready.wait)
    loop.call_later(0.2, report, path, loop)
    await ev.wait()


if __name__ == "__main__":
    started = threading.Event()
    threading.Thread(target=other_thread, args=(started,), name="loop-2",
                     daemon=True).start()
    runner = asyncio.Runner()
    with runner:
        loop = runner.get_loop()
        loop.run_until_complete(
            loop.create_task(main(sys.argv[1], started), name="main"))
