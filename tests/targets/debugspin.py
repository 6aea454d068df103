# SPDX-License-Identifier: MIT
"""--native target: the main thread spins in a C library's function that
only the library's separate debug info names (tests/lib/debugspin.c), or
in another such library's.

Usage: debugspin.py LIBRARY REPORT.json [FUNCTION]
Reports {"pid": its pid as it sees it} once the library is loaded, then
calls FUNCTION (default spyc_debug_spin), which never returns.
"""

import ctypes
import json
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as f:
    json.dump({"pid": os.getpid()}, f)
os.rename(tmp, sys.argv[2])
getattr(lib, sys.argv[3] if len(sys.argv) > 3 else "spyc_debug_spin")()
