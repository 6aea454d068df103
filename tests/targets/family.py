# SPDX-License-Identifier: MIT
"""--subprocesses target: a process tree whose members each spend their
time in a function of their own and say which pid they are.

Usage: family.py REPORT MODE [ARG]

  mixed       the parent forks a child that works briefly and exits
              early ("forked"), runs this file again through fork and
              exec ("execd") and through a shell that stays its parent
              ("shell"), and runs a program that is not Python (sleep);
              then works itself ("parent") and waits for all of them.
  pool METHOD a multiprocessing Pool of 2 workers started by METHOD
              (fork, spawn, forkserver) maps pool_work over 4 tasks;
              REPORT says which pids did the work.
  tree        for attaching: two forked workers ("early_a", "early_b")
              work until the parent goes away; once REPORT is written,
              one more ("late") starts a second later.
  brief       the parent runs 30 Python children one after another,
              each "-c pass" (a few milliseconds), then works itself;
              REPORT's "brief" lists their pids.

Each member writes its pid to REPORT.ROLE; the parent writes REPORT as
{"pid": pid, "roles": {role: pid or [pids]}}.  Must run unchanged on
3.6 .. 3.15.
"""

import json
import multiprocessing
import os
import subprocess
import sys
import time

report_path = sys.argv[1]
mode = sys.argv[2]


def spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        x += 1
    return x


def mark(role):
    with open("%s.%s" % (report_path, role), "w") as f:
        f.write(str(os.getpid()))


def read_mark(role):
    for _ in range(3000):
        try:
            with open("%s.%s" % (report_path, role)) as f:
                text = f.read()
            if text:
                return int(text)
        except (IOError, OSError, ValueError):
            pass
        time.sleep(0.01)
    raise SystemExit("no pid from " + role)


def write_report(roles):
    tmp = report_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "roles": roles}, f)
    os.rename(tmp, report_path)


def forked_work():
    spin(0.6)


def execd_work():
    spin(1.0)


def shell_work():
    spin(1.0)


def parent_work():
    spin(0.5)


def pool_work(seconds):
    spin(seconds)
    return os.getpid()


def tree_work(parent):
    # Until the parent goes away: a killed test must leave nothing.
    while os.getppid() == parent:
        spin(0.05)


def early_a_work(parent):
    tree_work(parent)


def early_b_work(parent):
    tree_work(parent)


def late_work(parent):
    tree_work(parent)


def fork_worker(role, work):
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            mark(role)
            work(parent)
        finally:
            os._exit(0)
    return pid


def mixed():
    pid = os.fork()
    if pid == 0:
        try:
            mark("forked")
            forked_work()
        finally:
            os._exit(0)
    me = [sys.executable, os.path.abspath(__file__), report_path]
    execd = subprocess.Popen(me + ["execd"])
    # "; true": the shell cannot exec Python in its own place.
    shell = subprocess.Popen(["sh", "-c", '"$@"; true', "sh"] + me +
                             ["shell"])
    other = subprocess.Popen(["sleep", "1"])
    parent_work()
    os.waitpid(pid, 0)
    for p in (execd, shell, other):
        p.wait()
    write_report(dict((role, read_mark(role))
                      for role in ("forked", "execd", "shell")))


def pool(method):
    ctx = multiprocessing.get_context(method)
    p = ctx.Pool(2)
    try:
        pids = p.map(pool_work, [0.4] * 4, chunksize=1)
    finally:
        p.close()
        p.join()
    write_report({"pool": sorted(set(pids))})


def tree():
    fork_worker("early_a", early_a_work)
    fork_worker("early_b", early_b_work)
    write_report(dict((role, read_mark(role))
                      for role in ("early_a", "early_b")))
    time.sleep(1.0)
    fork_worker("late", late_work)
    while True:
        time.sleep(3600)


def brief():
    """Python children that live a few milliseconds each, one after
    another: most are gone while their interpreter starts."""
    pids = []
    for _ in range(BRIEF_CHILDREN):
        p = subprocess.Popen([sys.executable, "-c", "pass"])
        pids.append(p.pid)
        p.wait()
    parent_work()
    write_report({"brief": pids})


BRIEF_CHILDREN = 30

if mode == "mixed":
    mixed()
elif mode == "brief":
    brief()
elif mode in ("execd", "shell"):
    mark(mode)
    (execd_work if mode == "execd" else shell_work)()
elif mode == "pool":
    if __name__ == "__main__":
        pool(sys.argv[3])
elif mode == "tree":
    tree()
else:
    raise SystemExit("unknown mode " + mode)
