# SPDX-License-Identifier: MIT
"""--native target: a C function that calls another through its module's
PLT for ever (spycext.spin_through_plt), holding the GIL.

Usage: plt_spin.py EXT_DIR REPORT.json; reports {"pid"} just before.
"""

import json
import os
import sys

sys.path.insert(0, sys.argv[1])
import spycext  # noqa: E402

tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as f:
    json.dump({"pid": os.getpid()}, f)
os.rename(tmp, sys.argv[2])
spycext.spin_through_plt()
