# SPDX-License-Identifier: MIT
"""Four threads running pure Python at once (on a free-threaded build; with
the GIL they take turns), each at its own depth in functions of its own,
spinning on one line, so that its stack never changes; the main thread
waits.  Reports itself (selfreport) with the workers' names and idents.

Usage: parallel.py REPORT.json
"""

import sys
import threading

import selfreport

stop = [False]


def spin_a():
    selfreport.ready()
    while not stop[0]: pass  # noqa: E701 (one line: a stack that holds still)


def spin_b():
    selfreport.ready()
    while not stop[0]: pass  # noqa: E701


def spin_c():
    selfreport.ready()
    while not stop[0]: pass  # noqa: E701


def spin_d():
    selfreport.ready()
    while not stop[0]: pass  # noqa: E701


def via(depth, fn):
    if depth:
        return via(depth - 1, fn)
    return fn()


WORKERS = [("worker-a", 0, spin_a), ("worker-b", 1, spin_b),
           ("worker-c", 2, spin_c), ("worker-d", 3, spin_d)]


def main():
    threads = []
    for name, depth, fn in WORKERS:
        t = threading.Thread(target=via, args=(depth, fn), name=name)
        t.daemon = True
        t.start()
        threads.append(t)
    selfreport.start(sys.argv[1], len(WORKERS) + 1, {
        "workers": dict((t.name, t.ident) for t in threads)})
    selfreport.ready()
    threads[0].join()


if __name__ == "__main__":
    main()
