# SPDX-License-Identifier: MIT
"""Thread-relay target: named threads that run one after another.

Usage: relay.py [COUNT] [SECONDS]

COUNT threads (default 8), named relay-0, relay-1, ..., each spin for
SECONDS (default 0.25) in pure Python and end before the next starts, so
a new thread may reuse the memory of the one before it (its thread
state, its stack, its frames).  Prints "done" and exits.
Must run unchanged on 3.6 .. 3.15.
"""

import sys
import threading
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.25


def spin():
    end = time.time() + seconds
    while time.time() < end:
        pass


for i in range(count):
    t = threading.Thread(target=spin, name="relay-%d" % i)
    t.start()
    t.join()
print("done")
