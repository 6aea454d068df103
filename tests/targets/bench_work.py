# SPDX-License-Identifier: MIT
"""Benchmark target: a fixed CPU-bound pure-Python workload that times itself.

Usage: bench_work.py ITERATIONS

Runs ITERATIONS rounds of a deterministic workload (integer arithmetic
spread over a few small functions, so there is a stack to sample) and
prints "elapsed SECONDS cpu SECONDS" on stdout: the wall time, measured
with time.perf_counter, and the CPU time of the process (user + system, all
threads: there is only one), measured with time.process_time, both around
the workload alone, so interpreter start-up and a profiler's attach time
are left out.  The same ITERATIONS always does the same work.

Must run unchanged on CPython 3.6 .. 3.15.
"""

import sys
import time


def mix(x, k):
    return (x * 1103515245 + k) % 2147483648


def inner(x, n):
    for k in range(n):
        x = mix(x, k)
    return x


def outer(iterations):
    x = 1
    for _ in range(iterations):
        x = inner(x, 100)
    return x


def main():
    iterations = int(sys.argv[1])
    start = time.perf_counter()
    cpu_start = time.process_time()
    result = outer(iterations)
    cpu = time.process_time() - cpu_start
    elapsed = time.perf_counter() - start
    sys.stdout.write("elapsed %.6f cpu %.6f result %d\n"
                     % (elapsed, cpu, result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
