# SPDX-License-Identifier: MIT
"""Target that takes a signal every ALARM_S seconds: its main thread spins
in spin(), and a SIGALRM handler counts the signals it got.  A thread that
a tracer seized and left running stops at its next signal until that
tracer lets it go on: the count stalls, and so does spin().

Writes (atomically) REPORT.json {"pid"} once the alarms run, and
REPORT.json.ticks ("COUNT TIME") every half second.

Usage: alarms.py REPORT.json.  Must run unchanged on 3.6 .. 3.15.
"""

import json
import os
import signal
import sys
import threading
import time

ALARM_S = 0.01
ticks = [0]


def on_alarm(signum, frame):
    ticks[0] += 1


def write(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def report_ticks(path):
    while True:
        time.sleep(0.5)
        write(path, "%d %f\n" % (ticks[0], time.time()))


def spin():
    x = 0
    while True:
        x += 1


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, ALARM_S, ALARM_S)
    t = threading.Thread(target=report_ticks, args=(sys.argv[1] + ".ticks",))
    t.daemon = True
    t.start()
    write(sys.argv[1], json.dumps({"pid": os.getpid()}))
    spin()
