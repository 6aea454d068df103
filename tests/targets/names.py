# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Thread-name target: names from threading, from the OS, or from both.

Usage: names.py REPORT.json

Every thread waits on an Event.  Threads:
  a threading.Thread named with non-ASCII characters;
  one started with _thread.start_new_thread that names its OS thread;
  a threading.Thread that also names its OS thread (threading wins);
  a Thread subclass whose __dict__ was asked for (a materialized dict);
  a Thread subclass with many attributes and a __dict__ of its own;
  a Thread renamed after it started.
The reporter writes {pid, main, expected: {ident: name}}: the name each
thread should show, and the main thread's ident (spyc calls it MainThread).
Must run unchanged on 3.6 .. 3.15.
"""

import json
import os
import sys
import threading

try:
    import _thread
except ImportError:  # pragma: no cover
    import thread as _thread

report_path = sys.argv[1]
stop = threading.Event()
expected = {}
lock = threading.Lock()
count = [0]


def os_name(name):
    with open("/proc/thread-self/comm", "w") as f:
        f.write(name)


def arrived(name):
    with lock:
        expected[threading.get_ident()] = name
        count[0] += 1


def wait_as(name, comm=None):
    if comm:
        os_name(comm)
    arrived(name)
    stop.wait()


class Materialized(threading.Thread):
    def run(self):
        self.__dict__["extra"] = 1
        wait_as(self.name)


class Crowded(threading.Thread):
    def __init__(self, **kw):
        for i in range(40):
            setattr(self, "attr_%d" % i, i)
        threading.Thread.__init__(self, **kw)

    def run(self):
        # A plain dict of its own: no shared keys at all.
        self.__dict__ = dict(self.__dict__)
        wait_as(self.name)


started = [
    threading.Thread(target=wait_as, args=(u"plain-\u015dpyc-\u540d",),
                     name=u"plain-\u015dpyc-\u540d"),
    threading.Thread(target=wait_as, args=("both-py", "both-os"),
                     name="both-py"),
    Materialized(name="materialized-d"),
    Crowded(name="crowded-40"),
]
for t in started:
    t.daemon = True
    t.start()
_thread.start_new_thread(wait_as, ("os-only", "os-only"))

renamed_ready = threading.Event()


def renamed_body():
    renamed_ready.wait()
    wait_as("renamed-later")


renamed = threading.Thread(target=renamed_body, name="first-name")
renamed.daemon = True
renamed.start()
renamed.name = "renamed-later"
renamed_ready.set()

while True:
    with lock:
        if count[0] == 6:
            break
    stop.wait(0.01)
out = {"pid": os.getpid(), "main": threading.get_ident(),
       "expected": dict((str(k), v) for k, v in expected.items())}
tmp = report_path + ".tmp"
with open(tmp, "w") as fp:
    json.dump(out, fp)
os.rename(tmp, report_path)
stop.wait()
