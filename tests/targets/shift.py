# SPDX-License-Identifier: MIT
"""Diff target: the main thread alternates between two functions, alpha()
and beta(), each burning the CPU in its own frame (a loop calling
time.thread_time, a C function: no Python frame of its own), alpha for
SHARE of each round of ROUND seconds of CPU time, beta for the rest.  A
round is not a whole number of any sampling period, so samples taken at
a steady rate fall all over it.  Runs for SECONDS, then exits 0.

Usage: shift.py SHARE SECONDS
"""

import sys
import time

ROUND = 0.0013


def alpha(seconds):
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def beta(seconds):
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def main():
    share, seconds = float(sys.argv[1]), float(sys.argv[2])
    end = time.time() + seconds
    while time.time() < end:
        alpha(share * ROUND)
        beta((1 - share) * ROUND)


main()
