# SPDX-License-Identifier: MIT
"""Launch-mode target: spins in <module> -> spin(), then ends as told.

Usage: launched.py [--pidfile FILE] [--ignore-term] [--print N] [--chatter]
                   SECONDS [exit STATUS | kill SIGNAL | after FILE STATUS]

  --pidfile FILE  first write the pid to FILE (atomically)
  --ignore-term   ignore SIGTERM
  --print N       first print N lines "out line K" to stdout and N lines
                  "err line K" to stderr, flushed
  --chatter       while spinning, print "chatter K" to stdout and to
                  stderr every tenth of a second, flushed
  SECONDS         spin this long, then exit 0 (0: spin forever)
  exit STATUS     then exit with STATUS
  kill SIGNAL     then kill itself with SIGNAL
  after FILE STATUS
                  spin until FILE appears (at most SECONDS), then exit
                  STATUS if it is a whole speedscope profile (JSON with
                  profiles), 90 if it is not, 91 if it never appeared
"""

import json
import os
import signal
import sys
import time


chatter = False


def spin(seconds, until=None):
    """Busy until the deadline or until the file until exists."""
    deadline = time.time() + seconds if seconds > 0 else None
    x = 1
    said = 0
    next_say = time.time()
    while deadline is None or time.time() < deadline:
        if until is not None and os.path.exists(until):
            return True
        if chatter and time.time() >= next_say:
            print("chatter %d" % said, flush=True)
            print("chatter %d" % said, file=sys.stderr, flush=True)
            said += 1
            next_say += 0.1
        for i in range(20000):
            x = (x * 1103515245 + 12345 + i) % 2147483648
    return False


def whole_profile(path):
    try:
        with open(path, encoding="utf-8") as f:
            return bool(json.load(f)["profiles"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


args = sys.argv[1:]
while args and args[0].startswith("--"):
    opt = args.pop(0)
    if opt == "--pidfile":
        path = args.pop(0)
        with open(path + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(path + ".tmp", path)
    elif opt == "--chatter":
        chatter = True
    elif opt == "--ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif opt == "--print":
        n = int(args.pop(0))
        for k in range(n):
            print("out line %d" % k)
            print("err line %d" % k, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    else:
        raise SystemExit("unknown option %s" % opt)
seconds = float(args[0])
action = args[1:]
if action and action[0] == "after":
    if not spin(seconds, action[1]):
        sys.exit(91)
    sys.exit(int(action[2]) if whole_profile(action[1]) else 90)
spin(seconds)
if action and action[0] == "exit":
    sys.exit(int(action[1]))
if action and action[0] == "kill":
    os.kill(os.getpid(), int(action[1]))
