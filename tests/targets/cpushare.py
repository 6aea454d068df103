# SPDX-License-Identifier: MIT
"""Shared by the targets that measure their own functions' CPU time
(accuracy.py, gcwork.py): the clock, and the reports tests/accuracy.py
reads.

serve(path, workload, cpu) writes {"pid", "workload", "burners"} to path,
then on each SIGUSR1 path.N (N = 1, 2, ...: the signals it has had) with
{"cpu_ns": {name: thread CPU ns so far}}, from cpu ({name: seconds}),
each file atomically.  Must run unchanged on CPython 3.6 .. 3.15.
"""

import functools
import json
import os
import signal
import time

# C callables only: a Python function here would be the innermost frame.
try:
    clock = time.thread_time        # 3.7+
except AttributeError:
    clock = functools.partial(time.clock_gettime,
                              time.CLOCK_THREAD_CPUTIME_ID)


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


def serve(path, workload, cpu, burners):
    """Report burners (names in cpu) at path, and snapshots on SIGUSR1."""
    signals = [0]

    def snapshot(signum, frame):
        signals[0] += 1
        write_json("%s.%d" % (path, signals[0]), {
            "cpu_ns": dict((name, int(cpu[name] * 1e9))
                           for name in burners)})

    signal.signal(signal.SIGUSR1, snapshot)
    write_json(path, {"pid": os.getpid(), "workload": workload,
                      "burners": burners})
