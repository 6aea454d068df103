# SPDX-License-Identifier: MIT
"""Dump target: deep recursion (150 and 2 x 100 frames) blocked at the bottom.

Usage: deep.py REPORT.json
"""

import sys
import threading
import time

import selfreport


def recurse(n):
    if n > 0:
        return recurse(n - 1)
    selfreport.ready()
    time.sleep(3600)


def ping(n):
    if n > 0:
        return pong(n - 1)
    selfreport.ready()
    time.sleep(3600)


def pong(n):
    return ping(n)


def main():
    t = threading.Thread(target=recurse, args=(150,), name="recurse-150")
    t.daemon = True
    t.start()
    selfreport.start(sys.argv[1], 2)
    ping(100)


if __name__ == "__main__":
    main()
