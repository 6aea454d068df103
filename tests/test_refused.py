# SPDX-License-Identifier: MIT
"""Free-threaded builds spyc does not read (pyfind.REFUSED_FREE_THREADED:
no offset table made from their headers and tested).  One test each,
instead of an always-skipped copy of every per-version test: where the
build is here, every command that reads a target refuses it in one line
naming the version and the free-threaded builds spyc reads, exit 2, with
nothing written and the target left running; where it is not, the test is
skipped by name."""

import os
import re

import pytest

import pyfind

REFUSED = pyfind.refused_slots()
REFUSAL_RE = re.compile(
    r"^spyc: Python 3\.\d+\.\d+\S* in pid \d+ is a free-threaded build, "
    r"which spyc reads only for 3\.\d+t(, 3\.\d+t)*$")


@pytest.mark.parametrize("slot", REFUSED, ids=[s.id for s in REFUSED])
def test_refused(spyc, slot, targets, tmp_path):
    py = pyfind.require(slot)
    assert py.free_threaded and "%d.%dt" % py.version_info[:2] == slot.name
    t = targets.start(py, "hot.py", 0, "{report}")
    out = str(tmp_path / "out.json")
    for args in (["dump", "--pid", t.pid],
                 ["dump", "--pid", t.pid, "--native"],
                 ["record", "--pid", t.pid, "--duration", 1, "-o", out],
                 ["record", "--pid", t.pid, "--duration", 1, "--blocking",
                  "-o", out]):
        res = spyc.run(args, timeout=60)
        assert res.returncode == 2, res.describe()
        assert len(res.stderr_lines) == 1 and \
            REFUSAL_RE.match(res.stderr_lines[0]), res.describe()
        assert "%d.%d." % py.version_info[:2] in res.stderr_lines[0]
        assert res.stdout == "", res.describe()
        assert not os.path.exists(out), res.describe()
        assert t.proc.poll() is None, "the target died\n" + res.describe()
