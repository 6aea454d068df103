# SPDX-License-Identifier: MIT
"""Top target: a caller and a callee whose own and total orders differ.

<module> -> outer() -> inner().  In every round outer() spins in its own
loop for OUTER_S seconds, then calls inner(), which spins for INNER_S.
So by own time inner() comes first (70%) and outer() second (30%), but
by total time outer() (100%, like <module>) comes before inner().  The
rounds are timed, not counted, so the shares do not depend on the speed
of the interpreter or of the machine.  Rounds are short and of random
length: a round as long as the sampling interval would let the samples
fall in the same phase of every round and see any share at all.

Runs for SECONDS (forever if 0 or missing).  If REPORT.json is given,
first writes there (atomically) {pid, python_version, chain, own_share}:
the chain root first as the code objects name it, and the share of time
each function spends in its own code.

Usage: nested.py [SECONDS] [REPORT.json]
"""

import json
import os
import random
import sys
import time

OUTER_S = 0.0003
INNER_S = 0.0007


def inner(until):
    n = 0
    while time.perf_counter() < until:
        n += 1
    return n


def outer(seconds):
    deadline = time.perf_counter() + seconds if seconds > 0 else None
    n = 0
    while deadline is None or time.perf_counter() < deadline:
        scale = random.uniform(0.5, 1.5)
        until = time.perf_counter() + OUTER_S * scale
        while time.perf_counter() < until:
            n += 1
        n += inner(time.perf_counter() + INNER_S * scale)
    return n


def code_name(code):
    return getattr(code, "co_qualname", code.co_name)


def write_report(path):
    module_code = sys._getframe(1).f_code
    total = OUTER_S + INNER_S
    doc = {
        "pid": os.getpid(),
        # As CPython names itself ("3.15.0rc1"), like platform's.
        "python_version": sys.version.split()[0],
        "chain": [{"name": code_name(c), "file": c.co_filename}
                  for c in (module_code, outer.__code__, inner.__code__)],
        "own_share": {code_name(outer.__code__): OUTER_S / total,
                      code_name(inner.__code__): INNER_S / total},
    }
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    if len(sys.argv) > 2:
        write_report(sys.argv[2])
    outer(seconds)
