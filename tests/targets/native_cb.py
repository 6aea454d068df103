# SPDX-License-Identifier: MIT
"""--native target: Python -> C (spycext.call_back) -> Python callback.

Usage: native_cb.py EXT_DIR REPORT.json [spin]

outer() calls the C function spycext.call_back(inner); inner() blocks in
time.sleep (or, with "spin", spins in pure Python).  The report gives the
Python frames of the main thread, innermost first, as the interpreter
sees them, once inner() is running.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import spycext  # noqa: E402

report_path = sys.argv[2]
spin = len(sys.argv) > 3 and sys.argv[3] == "spin"
main_ident = threading.get_ident()


def name_of(code):
    return getattr(code, "co_qualname", code.co_name)


def report():
    time.sleep(0.5)
    frame = sys._current_frames()[main_ident]
    frames = []
    while frame is not None:
        frames.append([name_of(frame.f_code), frame.f_code.co_filename,
                       frame.f_lineno])
        frame = frame.f_back
    tmp = report_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "thread_id": main_ident,
                   "frames": frames}, f)
    os.rename(tmp, report_path)


def inner():
    threading.Thread(target=report, daemon=True).start()
    if spin:
        x = 0
        while True:
            x += 1
    time.sleep(3600)


def outer():
    spycext.call_back(inner)


outer()
