# SPDX-License-Identifier: MIT
"""A free-threaded build of a minor version spyc has no table for (no offset
table made from its headers and tested: the next one, 3.16t, when it comes)
is refused.  Its _Py_DebugOffsets say where its thread states and frames
are, but not how its objects are laid out, which a free-threaded build
changes.  Each free-threaded slot that has an older free-threaded table
before it plays that part: without the built-in tables
(SPYC_NO_OFFSET_TABLES) and with none newer than the minor version before
its own (SPYC_OFFSET_TABLES_UPTO), as a spyc released before it would see
it.  Every command that reads a target refuses it in one line naming the
version and the free-threaded builds spyc reads, exit 2, with nothing
written and the target left running."""

import os
import re

import pytest

REFUSAL_RE = re.compile(
    r"^spyc: Python 3\.\d+\.\d+\S* in pid \d+ is a free-threaded build, "
    r"which spyc reads only for 3\.\d+t(, 3\.\d+t)* "
    r"\(SPYC_NO_OFFSET_TABLES is set\)$")


@pytest.mark.slots(since=(3, 14), free_threaded=True)
def test_refused(spyc, python, targets, tmp_path):
    major, minor = python.version_info[:2]
    older = "%d.%d" % (major, minor - 1)
    env = dict(os.environ, SPYC_NO_OFFSET_TABLES="1",
               SPYC_OFFSET_TABLES_UPTO=older)
    t = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out.json")
    for args in (["dump", "--pid", t.pid],
                 ["dump", "--pid", t.pid, "--native"],
                 ["record", "--pid", t.pid, "--duration", 1, "-o", out],
                 ["record", "--pid", t.pid, "--duration", 1, "--blocking",
                  "-o", out]):
        res = spyc.run(args, timeout=60, env=env)
        assert res.returncode == 2, res.describe()
        assert len(res.stderr_lines) == 1 and \
            REFUSAL_RE.match(res.stderr_lines[0]), res.describe()
        line = res.stderr_lines[0]
        assert "Python %d.%d." % (major, minor) in line, res.describe()
        # The builds it names are those of the tables it may use: up to
        # the minor version before the target's, that one included.
        assert "%st" % older in line and \
            "%d.%dt" % (major, minor) not in line, res.describe()
        assert res.stdout == "", res.describe()
        assert not os.path.exists(out), res.describe()
        assert t.proc.poll() is None, "the target died\n" + res.describe()
