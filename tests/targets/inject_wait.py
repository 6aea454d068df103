# SPDX-License-Identifier: MIT
"""A target for library injection: threads that allocate, compute with
floats, sleep and wait on a condition, each checking its own results,
until the file argv[1] exists; then a fixed computation.  It prints only
what does not depend on timing (the check failures, which must be 0, and
the fixed result), so a run with a library injected must print exactly
what a run without prints.

Usage: inject_wait.py GO_FILE REPORT
"""

import json
import math
import os
import sys
import threading
import time

GO, REPORT = sys.argv[1], sys.argv[2]
errors = []
stop = threading.Event()
cond = threading.Condition()


def allocate():
    while not stop.is_set():
        xs = [i * i for i in range(300)]
        d = dict((str(i), i) for i in range(50))
        if sum(xs) != 8955050 or len(d) != 50:
            errors.append("allocate")


def float_sum():
    acc = 0.0
    for i in range(1, 200):
        acc += math.sqrt(i) * math.sin(i) / i
    return acc


FLOAT_SUM = float_sum()


def floats():
    # Exactly equal every time: vector registers put back bit for bit.
    while not stop.is_set():
        acc = float_sum()
        if acc != FLOAT_SUM:
            errors.append("floats %r" % acc)


def sleeper():
    n = 0
    while not stop.is_set():
        time.sleep(0.002)
        n += 1


def waiter():
    with cond:
        while not stop.is_set():
            cond.wait(0.05)


def main():
    threads = [threading.Thread(target=f, name=f.__name__)
               for f in (allocate, floats, sleeper, waiter)]
    for t in threads:
        t.start()
    tmp = REPORT + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.rename(tmp, REPORT)
    # The main thread alternates between sleeping (a system call to
    # restart) and allocating, so both kinds of stop are seen.
    while not os.path.exists(GO):
        time.sleep(0.005)
        [str(i) for i in range(100)]
    stop.set()
    with cond:
        cond.notify_all()
    for t in threads:
        t.join()
    total = sum(i * i % 7 for i in range(100000))
    print("errors: %d %s" % (len(errors), sorted(set(errors))[:3]))
    print("result: %d" % total)
    sys.stdout.flush()


main()
