# SPDX-License-Identifier: MIT
"""Target whose innermost function has no locals and no value stack
(`while True: pass`): on 3.11 and 3.12 such a frame ends before the end
of CPython's frame struct.  <module> -> outer() -> spin(), forever.
outer() writes REPORT.json ({"pid"}) just before it calls spin().

Usage: bare.py REPORT.json
"""

import json
import os
import sys


def spin():
    while True:
        pass


def outer(report):
    tmp = report + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.rename(tmp, report)
    spin()


outer(sys.argv[1])
