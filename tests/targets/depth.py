# SPDX-License-Identifier: MIT
"""Trust target: the main thread recurses to exactly DEPTH Python frames
(<module> included, counted along its own frame chain) and stays there.

Modes:
- busy: bottom() spins in a loop with no calls, so its depth never
  changes and it is always on a CPU (for record);
- block: bottom() sleeps in time.sleep, a C call (for dump): the reported
  frames are then exactly the stack a dump must see.

It reports (with selfreport) {"depth": the frame count at bottom(),
measured there, "frames": ...}; in busy mode while the main thread waits
for the reporter, before it starts spinning.

Usage: depth.py DEPTH busy|block REPORT.json
"""

import sys
import time

import selfreport


def depth_here(frame):
    n = 0
    while frame is not None:
        n += 1
        frame = frame.f_back
    return n


def bottom(mode):
    depth = depth_here(sys._getframe())
    reporter = selfreport.start(sys.argv[3], 1, {"depth": depth,
                                                 "mode": mode})
    selfreport.ready()
    if mode == "block":
        time.sleep(3600)
    else:
        reporter.join()
        # Only now is the innermost frame bottom's loop: say so.
        with open(sys.argv[3] + ".busy", "w"):
            pass
        x = 1
        while True:
            x = (x * 1103515245 + 12345) % 2147483648


def recurse(n, mode):
    if n > 0:
        return recurse(n - 1, mode)
    return bottom(mode)


def main():
    want = int(sys.argv[1])
    mode = sys.argv[2]
    if mode not in ("busy", "block"):
        raise SystemExit("mode must be busy or block")
    sys.setrecursionlimit(want + 200)
    # Here: <module> -> main; recurse(k) adds k + 1 frames, bottom one.
    here = depth_here(sys._getframe())
    recurse(want - here - 2, mode)


if __name__ == "__main__":
    main()
