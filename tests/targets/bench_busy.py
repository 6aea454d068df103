# SPDX-License-Identifier: MIT
"""Benchmark target: THREADS threads, each DEPTH calls deep, spinning on CPU.

Usage: bench_busy.py DEPTH THREADS [LIFETIME_SECS [IDLE]]

Every thread (the main thread is one of them) recurses DEPTH levels into
descend() and then runs a pure-Python arithmetic loop at the bottom, so the
stack a profiler sees stays DEPTH frames of descend() (plus the two or three
frames that started the thread) for the whole run.  Once every thread is at
the bottom, prints "ready" on stdout.  Exits by itself after LIFETIME_SECS
(default 120), so a benchmark that dies cannot leave it spinning forever.
With IDLE (default 0), that many more threads are started first, each
blocked for good on a threading.Event that is never set, so the process
has THREADS + IDLE threads, IDLE of them asleep in the kernel.

Must run unchanged on CPython 3.6 .. 3.15.
"""

import os
import sys
import threading
import time

depth = int(sys.argv[1])
nthreads = int(sys.argv[2])
lifetime = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
nidle = int(sys.argv[4]) if len(sys.argv) > 4 else 0
deadline = time.monotonic() + lifetime

lock = threading.Lock()
at_bottom = [0]
never = threading.Event()
idle_started = threading.Semaphore(0)


def idle():
    idle_started.release()
    never.wait()


def spin():
    with lock:
        at_bottom[0] += 1
        if at_bottom[0] == nthreads:
            sys.stdout.write("ready\n")
            sys.stdout.flush()
    x = 1
    i = 0
    while True:
        x = (x * 1103515245 + 12345) % 2147483648
        i += 1
        # The clock is read rarely so that nearly every sample lands in
        # this frame, not in a C call below it.
        if i % 200000 == 0 and time.monotonic() > deadline:
            os._exit(0)


def descend(n):
    if n > 1:
        return descend(n - 1)
    return spin()


def main():
    # Each level costs one Python frame; leave room for the frames above.
    sys.setrecursionlimit(max(1000, depth + 100))
    for _ in range(nidle):
        t = threading.Thread(target=idle)
        t.daemon = True
        t.start()
    for _ in range(nidle):
        idle_started.acquire()
    for _ in range(nthreads - 1):
        t = threading.Thread(target=descend, args=(depth,))
        t.daemon = True
        t.start()
    descend(depth)


if __name__ == "__main__":
    main()
