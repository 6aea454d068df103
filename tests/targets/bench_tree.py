# SPDX-License-Identifier: MIT
"""Benchmark target for --subprocesses: CHILDREN processes, each running
bench_busy.py with one thread DEPTH calls deep, under an idle parent.

Usage: bench_tree.py CHILDREN DEPTH [LIFETIME_SECS]

Prints "ready" on stdout once every child is at the bottom of its stack.
The children exit by themselves after LIFETIME_SECS (default 120), and
so does the parent.  Must run unchanged on CPython 3.6 .. 3.15.
"""

import os
import subprocess
import sys
import time

children = int(sys.argv[1])
depth = sys.argv[2]
lifetime = sys.argv[3] if len(sys.argv) > 3 else "120"
busy = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "bench_busy.py")
procs = [subprocess.Popen([sys.executable, busy, depth, "1", lifetime],
                          stdout=subprocess.PIPE)
         for _ in range(children)]
for p in procs:
    if p.stdout.readline() != b"ready\n":
        sys.exit("a child was not ready")
sys.stdout.write("ready\n")
sys.stdout.flush()
time.sleep(float(lifetime))
