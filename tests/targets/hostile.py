# SPDX-License-Identifier: MIT
"""Hostile target: a fixed amount of work done in a way that is hard on a
sampler, with a result the test computes on its own.

Every mode computes sum(i * i for i in range(N)) for the N it is given,
through Python calls (so there are stacks to sample), and writes
{"result": R, "pid": pid} atomically to RESULT: the test compares R with
the closed form.  READY is created once the hostile phase has begun (the
attach tests wait for it).

Modes:
- exit:     work, then exit (spyc sees the target exit mid-sample);
- exec:     work half, then exec a fresh interpreter that does the rest;
- forkexit: fork; both work, the parent exits when done and the child
            writes the result;
- threads:  the work split over short-lived threads, about a thousand
            started and ended a second;
- deep:     the work done at the bottom of a 10^4-deep recursion;
- rounds:   the work over and over, split over 4 threads, until
            RESULT.stop exists; the result is [total, rounds] (make
            stress);
- flip:     the work done through calls that change the stack every
            microsecond or so (a different leaf on each call).

Usage: hostile.py MODE N READY RESULT [START]
"""

import json
import os
import sys
import threading

DEPTH = 10000


def write_result(path, value):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump({"result": value, "pid": os.getpid()}, f)
    os.rename(tmp, path)


def ready(path):
    with open(path, "a"):
        pass


def square(i):
    return i * i


def span(lo, hi):
    total = 0
    for i in range(lo, hi):
        total += square(i)
    return total


def leaf_a(i):
    return i * i


def leaf_b(i):
    return i * (i + 1) - i


def leaf_c(i):
    return (i - 1) * (i + 1) + 1


def flip_span(lo, hi):
    leaves = (leaf_a, leaf_b, leaf_c)
    total = 0
    for i in range(lo, hi):
        total += leaves[i % 3](i)
    return total


def recurse(n, lo, hi):
    if n > 1:
        return recurse(n - 1, lo, hi)
    return span(lo, hi)


def in_threads(n, ready_path):
    chunk = 200
    results = []
    lock = threading.Lock()

    def worker(lo, hi):
        value = span(lo, hi)
        with lock:
            results.append(value)

    ready(ready_path)
    for lo in range(0, n, chunk):
        t = threading.Thread(target=worker, args=(lo, min(n, lo + chunk)))
        t.start()
        t.join()
    return sum(results)


def in_workers(n, count):
    results = [0] * count
    bounds = [n * k // count for k in range(count + 1)]

    def worker(k):
        results[k] = span(bounds[k], bounds[k + 1])

    threads = [threading.Thread(target=worker, args=(k,))
               for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(results)


def main():
    mode, n, ready_path, result_path = sys.argv[1:5]
    n = int(n)
    start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    if mode == "exit":
        ready(ready_path)
        write_result(result_path, span(0, n))
    elif mode == "exec":
        ready(ready_path)
        half = span(0, n // 2)
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, __file__, "exec-rest",
                                  str(n), ready_path, result_path,
                                  str(half)])
    elif mode == "exec-rest":
        write_result(result_path, start + span(n // 2, n))
    elif mode == "forkexit":
        # Both work; the parent exits when done, without a word, and the
        # child, which spyc does not follow, writes the result.
        if os.fork():
            ready(ready_path)
            span(0, n)
            os._exit(0)
        write_result(result_path, span(0, n))
        os._exit(0)
    elif mode == "threads":
        write_result(result_path, in_threads(n, ready_path))
    elif mode == "deep":
        sys.setrecursionlimit(DEPTH + 100)
        ready(ready_path)
        write_result(result_path, recurse(DEPTH, 0, n))
    elif mode == "rounds":
        # Until RESULT.stop exists: rounds of the work split over 4
        # threads; the result counts them.
        ready(ready_path)
        total, rounds = 0, 0
        while not os.path.exists(result_path + ".stop") or not rounds:
            total += in_workers(n, 4)
            rounds += 1
        write_result(result_path, [total, rounds])
    elif mode == "flip":
        ready(ready_path)
        write_result(result_path, flip_span(0, n))
    else:
        sys.exit("hostile.py: unknown mode %r" % mode)


if __name__ == "__main__":
    main()
