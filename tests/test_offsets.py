# SPDX-License-Identifier: MIT
"""Without its built-in offset tables (SPYC_NO_OFFSET_TABLES=1), spyc must
still dump CPython 3.13+ exactly, from the interpreter's own
_Py_DebugOffsets, and say so in one line on stderr."""

import os

import pytest

from conftest import spyc_json_threads

DUMP_TARGETS = ["deep.py", "classes.py", "gen_coro.py", "unicode_名前.py",
                "threads.py"]


@pytest.mark.parametrize("target_name", DUMP_TARGETS,
                         ids=[os.path.splitext(t)[0] for t in DUMP_TARGETS])
def test_dump_without_offset_tables(spyc, python, targets, target_name):
    if python.version_info < (3, 13):
        pytest.skip("CPython %s has no _Py_DebugOffsets (3.13+)" %
                    python.minor)
    target = targets.start(python, target_name)
    env = dict(os.environ, SPYC_NO_OFFSET_TABLES="1")
    doc, res = spyc.dump_json(target.pid, env=env)
    notice = [l for l in res.stderr_lines if "_Py_DebugOffsets" in l]
    assert len(res.stderr_lines) == 1 and notice, (
        "expected one notice line mentioning _Py_DebugOffsets\n"
        + res.describe())
    assert doc["python_version"] == target.info["python_version"]
    target.assert_dump_matches(spyc_json_threads(doc),
                               "dump --json, SPYC_NO_OFFSET_TABLES=1")
