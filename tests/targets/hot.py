# SPDX-License-Identifier: MIT
"""Record target: ~all time in one pure-Python hot function.

<module> -> work() -> hot(), where hot() is a tight arithmetic loop with no
calls.  Runs for SECONDS (forever if 0 or missing), then prints a checksum
that does not depend on how long it ran or whether it was profiled, and
exits 0.  If REPORT.json is given, first writes there (atomically) the
chain a profiler should see, root first, as the code objects name it.
On SIGINT it prints "interrupted" and exits 130.

Usage: hot.py [SECONDS] [REPORT.json]
"""

import os
import sys
import time

CHUNK = 100000


def hot(n):
    x = 1
    i = 0
    while i < n:
        x = (x * 1103515245 + 12345 + i) % 2147483648
        i += 1
    return x


def work(seconds):
    deadline = time.time() + seconds if seconds > 0 else None
    first = hot(CHUNK)
    while deadline is None or time.time() < deadline:
        if hot(CHUNK) != first:
            raise SystemExit("hot() is not deterministic")
    return first


def code_name(code):
    return getattr(code, "co_qualname", code.co_name)


def to_json(value):
    """Just enough JSON for the report.  Not the json module: in launch mode
    every import is startup time sampled outside the chain (json pulls in
    re, ~20 ms), and that must stay well under 5% of the run."""
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        out = []
        for c in value:
            if c in '"\\':
                out.append("\\" + c)
            elif ord(c) < 0x20:
                out.append("\\u%04x" % ord(c))
            else:
                out.append(c)
        return '"%s"' % "".join(out)
    if isinstance(value, list):
        return "[%s]" % ", ".join(to_json(v) for v in value)
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (to_json(k), to_json(v))
                                  for k, v in value.items())
    raise TypeError(value)


def write_report(path):
    import threading    # ~2 ms, and only when a report is asked for
    module_code = sys._getframe(1).f_code
    doc = {
        "pid": os.getpid(),
        # As CPython names itself ("3.15.0rc1"), like platform's.
        "python_version": sys.version.split()[0],
        "thread_id": threading.get_ident(),
        "native_id": (threading.get_native_id()
                      if hasattr(threading, "get_native_id") else None),
        "thread_name": threading.current_thread().name,
        "chain": [{"name": code_name(c), "file": c.co_filename}
                  for c in (module_code, work.__code__, hot.__code__)],
    }
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(to_json(doc) + "\n")
    os.rename(tmp, path)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    if len(sys.argv) > 2:
        write_report(sys.argv[2])
    try:
        checksum = work(seconds)
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(130)
    print("checksum %d" % checksum)
