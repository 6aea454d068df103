# SPDX-License-Identifier: MIT
"""Without its built-in offset tables (SPYC_NO_OFFSET_TABLES=1), spyc must
still dump and record CPython 3.13+ exactly, from the interpreter's own
_Py_DebugOffsets, and say so in one line on stderr; older versions, which
publish no offsets, must be refused clearly."""

import os

import pytest

from conftest import spyc_json_threads
from test_record import check_profile, parse_summary

DUMP_TARGETS = ["deep.py", "classes.py", "gen_coro.py", "unicode_名前.py",
                "threads.py"]
NO_TABLES = dict(os.environ, SPYC_NO_OFFSET_TABLES="1")


def test_dump_without_offset_tables(spyc, python, targets):
    if python.version_info < (3, 13):
        target = targets.start(python, "threads.py")
        res = spyc.run(["dump", "--pid", target.pid, "--json"],
                       env=NO_TABLES)
        res.assert_error(2, "not supported", "no offset table",
                         "SPYC_NO_OFFSET_TABLES")
        return
    for name in DUMP_TARGETS:
        target = targets.start(python, name)
        doc, res = spyc.dump_json(target.pid, env=NO_TABLES)
        notice = [l for l in res.stderr_lines if "_Py_DebugOffsets" in l]
        assert len(res.stderr_lines) == 1 and notice, (
            "expected one notice line mentioning _Py_DebugOffsets\n"
            + res.describe())
        assert doc["python_version"] == target.info["python_version"]
        target.assert_dump_matches(spyc_json_threads(doc),
                                   "%s: dump --json, SPYC_NO_OFFSET_TABLES=1"
                                   % name)
        target.kill()


@pytest.mark.slots(since=(3, 13))
def test_record_without_offset_tables(spyc, python, targets, tmp_path):
    """record, too, from _Py_DebugOffsets alone: the profile of a busy
    target has its own hot chain, and stderr says so once beside the
    summary."""
    hot = targets.start(python, "hot.py", 0, "{report}")
    out = str(tmp_path / "out" / "profile.txt")
    os.mkdir(os.path.dirname(out))
    res = spyc.run(["record", "--pid", hot.pid, "--duration", 2,
                    "--format", "folded", "--full-filenames", "-o", out],
                   env=NO_TABLES, timeout=30)
    res.assert_ok()
    notice = [l for l in res.stderr_lines if "_Py_DebugOffsets" in l]
    assert len(notice) == 1 and len(res.stderr_lines) == 2, res.describe()
    summary = parse_summary(res.stderr_lines[-1], res.describe())
    check_profile(out, "folded", hot.info["chain"], summary, res.describe(),
                  full_filenames=True)


# Minor versions whose _Py_DebugOffsets moved fields of the one before
# (3.14 and 3.15 added fields mid-struct: see choose_offsets in
# src/py/pyruntime.c), so that read through the older layout its values are
# garbage.
DEBUG_OFFSETS_MOVED = {(3, 14), (3, 15)}


@pytest.mark.slots(since=(3, 14), free_threaded=False)
def test_future_version_through_older_layout(spyc, python, targets):
    """A CPython newer than every table spyc has, as 3.14 and 3.15 look to
    a spyc that stops at the minor version before theirs
    (SPYC_OFFSET_TABLES_UPTO): spyc reads its _Py_DebugOffsets as laid
    out like that older version's, and as 3.14 and 3.15 both moved
    fields (DEBUG_OFFSETS_MOVED), what it reads is implausible and spyc
    must refuse: one line that names the version, the layout it tried
    and the headers it needs, and no stacks guessed at."""
    minor = tuple(python.version_info[:2])
    if minor not in DEBUG_OFFSETS_MOVED:
        pytest.skip("what spyc should do depends on whether %d.%d moved "
                    "fields of _Py_DebugOffsets, not known here yet "
                    "(DEBUG_OFFSETS_MOVED)" % minor)
    older = "%d.%d" % (minor[0], minor[1] - 1)
    env = dict(NO_TABLES, SPYC_OFFSET_TABLES_UPTO=older)
    target = targets.start(python, "deep.py")
    res = spyc.run(["dump", "--pid", target.pid, "--json"], env=env)
    res.assert_error(2, "not supported", target.info["python_version"],
                     "_Py_DebugOffsets are not laid out as %s." % older,
                     "%d.%d's headers" % minor, "make offsets")
    assert not res.stdout, (
        "a refused target must not be dumped\n" + res.describe())
