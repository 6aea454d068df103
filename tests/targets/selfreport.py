# SPDX-License-Identifier: MIT
"""Shared by the dump targets: let a process describe its own Python stacks.

Every thread of a target calls ready() just before it blocks at its known
place.  start() runs a reporter thread that waits until the expected number
of threads are ready and their stacks have stopped changing, then walks
sys._current_frames() (leaving itself out) and writes what it saw to a JSON
file, atomically, and exits.  The test waits for the file and for the
reporter's OS thread to be gone, then compares spyc's view with this one.

Must run unchanged on CPython 3.6 .. 3.15.
"""

import json
import os
import platform
import sys
import threading
import time

_cond = threading.Condition()
_ready = {}     # threading ident -> native id (None before 3.8)


def native_id():
    get = getattr(threading, "get_native_id", None)
    return get() if get is not None else None


def code_name(code):
    """What a profiler should print: co_qualname on 3.11+, else co_name."""
    return getattr(code, "co_qualname", code.co_name)


def ready():
    """Call from each thread just before it blocks at its known place."""
    with _cond:
        _ready[threading.get_ident()] = native_id()
        _cond.notify_all()


def stack(frame):
    """[name, file, line] for frame and its callers, innermost first."""
    out = []
    while frame is not None:
        out.append([code_name(frame.f_code), frame.f_code.co_filename,
                    frame.f_lineno])
        frame = frame.f_back
    return out


def _snapshot(me):
    return dict((ident, stack(frame))
                for ident, frame in sys._current_frames().items()
                if ident != me)


def _fail(msg):
    sys.stderr.write("selfreport: %s\n" % msg)
    sys.stderr.flush()
    os._exit(3)


def _report(path, nthreads, extra):
    me = threading.get_ident()
    deadline = time.time() + 30
    with _cond:
        while len(_ready) < nthreads:
            left = deadline - time.time()
            if left <= 0:
                _fail("only %d of %d threads became ready" %
                      (len(_ready), nthreads))
            _cond.wait(left)
    # A thread calls ready() a moment before it blocks: wait until two
    # snapshots, 0.2 s apart, agree and hold exactly the ready threads.
    prev = None
    while True:
        time.sleep(0.2)
        snap = _snapshot(me)
        if snap == prev and set(snap) == set(_ready):
            break
        if time.time() > deadline:
            _fail("stacks did not settle: %r" % (snap,))
        prev = snap

    names = dict((t.ident, t.name) for t in threading.enumerate())
    threads = []
    for ident in sorted(snap):
        threads.append({
            "thread_id": ident,
            "native_id": _ready[ident],
            "name": names.get(ident),
            "frames": [{"name": n, "file": f, "line": l}
                       for n, f, l in snap[ident]],
        })
    doc = {
        "pid": os.getpid(),
        "python_version": platform.python_version(),
        "main_thread_id": threading.main_thread().ident,
        "threads": threads,
    }
    if extra:
        doc.update(extra)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def start(path, nthreads, extra=None):
    """Report once nthreads threads (the main thread included) are ready."""
    t = threading.Thread(target=_report, args=(path, nthreads, extra),
                         name="selfreport")
    t.daemon = True
    t.start()
    return t

