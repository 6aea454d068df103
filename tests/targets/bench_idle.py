# SPDX-License-Identifier: MIT
"""Benchmark target: IDLE threads blocked for good, one thread spinning.

Usage: bench_idle.py IDLE DEPTH [LIFETIME_SECS [python|native]]

Starts IDLE threads that each block on a threading.Event that is never set
(asleep in the kernel, in a futex wait, for the whole run); with native,
threads that never ran Python instead (pthread_create'd by ctypes, each
asleep in pause(), as a library's worker threads are), then the main
thread recurses DEPTH levels into descend() and runs a pure-Python
arithmetic loop at the bottom, as in bench_busy.py.  Prints "ready" on
stdout once every idle thread has started and the main thread is at the
bottom.  Exits by itself after LIFETIME_SECS (default 120), so a benchmark
that dies cannot leave it spinning forever.

A profiler that samples only running threads sees one stack per sample
here; one that keeps idle threads sees IDLE + 1 (1 with native, whose
threads have no Python stack).

Must run unchanged on CPython 3.6 .. 3.15.
"""

import os
import sys
import threading
import time

nidle = int(sys.argv[1])
depth = int(sys.argv[2])
lifetime = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
native = len(sys.argv) > 4 and sys.argv[4] == "native"
deadline = time.monotonic() + lifetime

never = threading.Event()
started = threading.Semaphore(0)


def idle():
    started.release()
    never.wait()


def start_native_threads(n):
    """n threads of libc's, each running pause() (which ignores the
    argument it is started with) for good: no Python thread state."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pause = ctypes.cast(libc.pause, ctypes.c_void_p)
    ident = ctypes.c_ulong()
    for _ in range(n):
        err = libc.pthread_create(ctypes.byref(ident), None, pause, None)
        if err:
            sys.exit("bench_idle.py: pthread_create: %s" % os.strerror(err))


def spin():
    # Every idle thread has called release() just before its wait(); give
    # the last few a moment to get from there into the kernel.
    for _ in range(0 if native else nidle):
        started.acquire()
    time.sleep(0.1)
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
    sys.setrecursionlimit(max(1000, depth + 100))
    if native:
        start_native_threads(nidle)
    for _ in range(0 if native else nidle):
        t = threading.Thread(target=idle)
        t.daemon = True
        t.start()
    descend(depth)


if __name__ == "__main__":
    main()
