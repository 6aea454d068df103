# SPDX-License-Identifier: MIT
"""Thread-state target: threads in known states, which report themselves.

Usage: states.py REPORT.json [gil|churn]

Threads: "sleeper" blocks in time.sleep, "locker" blocks on a
threading.Lock, "spinner" runs pure Python forever; with "gil", also
"compressor", which spends its time in zlib.compress, a C call that
releases the GIL while it works; with "churn", also "churner", which
keeps starting threads that live for a moment.  The main thread waits on an Event.
Once all are in place, a reporter (then idle) writes {pid, roles: {role: {ident,
top: [name, file, line]}}} with each thread's innermost frame
as the interpreter itself sees it.  Must run unchanged on 3.6 .. 3.15.
"""

import json
import os
import random
import sys
import threading
import time
import zlib

report_path = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else ""
held = threading.Lock()
held.acquire()
ready = {}
ready_cond = threading.Condition()
never = threading.Event()


def mark(role):
    # Name the OS thread after its role, as native libraries do; the
    # main thread keeps the process's name.
    try:
        with open("/proc/thread-self/comm", "w") as f:
            f.write(role)
    except (IOError, OSError):
        pass
    with ready_cond:
        ready[role] = threading.get_ident()
        ready_cond.notify_all()


def sleeper():
    mark("sleeper")
    time.sleep(3600)


def locker():
    mark("locker")
    held.acquire()


def spinner():
    mark("spinner")
    x = 0
    while True:
        x += 1


def compressor():
    # Noisy bytes keep each call busy for tens of milliseconds, far
    # longer than the wait to get the GIL back between calls.
    rng = random.Random(1)
    data = bytes(bytearray(rng.getrandbits(4) for _ in range(1 << 20)))
    mark("compressor")
    while True:
        zlib.compress(data, 9)


def churner():
    mark("churner")
    while True:
        t = threading.Thread(target=int)
        t.start()
        t.join()


def report(roles):
    with ready_cond:
        while len(ready) < len(roles):
            ready_cond.wait()
    time.sleep(0.5)
    frames = sys._current_frames()
    out = {"pid": os.getpid(), "roles": {}}
    for role, ident in ready.items():
        f = frames[ident]
        code = f.f_code
        out["roles"][role] = {
            "ident": ident,
            "top": [getattr(code, "co_qualname", code.co_name),
                    code.co_filename, f.f_lineno]}
    tmp = report_path + ".tmp"
    with open(tmp, "w") as fp:
        json.dump(out, fp)
    os.rename(tmp, report_path)
    # Stay, idle: a thread ending while a test samples would show its
    # teardown on a CPU.
    never.wait()


roles = [sleeper, locker, spinner] + {
    "gil": [compressor], "churn": [churner]}.get(mode, [])
for fn in roles:
    threading.Thread(target=fn, name=fn.__name__, daemon=True).start()
threading.Thread(target=report, args=(roles,), daemon=True).start()
never.wait()
