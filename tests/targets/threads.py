# SPDX-License-Identifier: MIT
"""Dump target: several named threads, each blocked in its own function.

Usage: threads.py REPORT.json
"""

import _thread
import os
import select
import sys
import threading
import time

try:
    import queue
except ImportError:
    import Queue as queue

import selfreport

held = threading.Lock()
never = threading.Event()
pipe_r, pipe_w = os.pipe()
main_queue = queue.Queue()


def sleeper():
    selfreport.ready()
    time.sleep(3600)


def waiter():
    selfreport.ready()
    never.wait()


def locker():
    selfreport.ready()
    held.acquire()


def reader():
    selfreport.ready()
    os.read(pipe_r, 1)


def selector():
    selfreport.ready()
    select.select([pipe_r], [], [])


def raw_thread():
    # Started with _thread: no threading.Thread object, no name.
    selfreport.ready()
    time.sleep(3600)


def main():
    held.acquire()
    workers = [("sleeper", sleeper), ("waiter", waiter), ("locker", locker),
               ("reader", reader), ("selector", selector)]
    for name, fn in workers:
        t = threading.Thread(target=fn, name="worker-" + name)
        t.daemon = True
        t.start()
    _thread.start_new_thread(raw_thread, ())
    selfreport.start(sys.argv[1], len(workers) + 2)
    selfreport.ready()
    main_queue.get()


if __name__ == "__main__":
    main()
