# SPDX-License-Identifier: MIT
"""`spyc dump` against targets in known states, on every CPython slot
(parallel.py: four threads running Python at once, on a free-threaded
build).

Each target (tests/targets/) blocks its threads at known places and reports
its own stacks; spyc's view must match it exactly: the same threads, and per
thread the same (name, file, line) frames, innermost first, and the native
thread id where the target knows it (3.8+).
"""

import os
import re

import pytest

from conftest import assert_running, parse_dump_text, spyc_json_threads

DUMP_TARGETS = ["deep.py", "classes.py", "gen_coro.py", "unicode_名前.py",
                "threads.py", "parallel.py"]

pytestmark = pytest.mark.parametrize(
    "target_name", DUMP_TARGETS, scope="module",
    ids=[os.path.splitext(t)[0] for t in DUMP_TARGETS])


@pytest.fixture(scope="module")
def target(python, target_name, tmp_path_factory):
    """One running target per (slot, script), shared by the tests below."""
    from conftest import TargetPool
    pool = TargetPool(tmp_path_factory)
    try:
        yield pool.start(python, target_name)
    finally:
        pool.close()


def test_target_is_sane(target, target_name):
    """Guard the targets themselves, so a broken target cannot make the
    comparisons below vacuous."""
    info = target.info
    assert info["python_version"] == target.python.version
    threads = target.expected_threads()
    assert info["main_thread_id"] in threads
    assert all(t["frames"] for t in threads.values())
    if target_name == "deep.py":
        assert max(len(t["frames"]) for t in threads.values()) >= 150
        assert min(len(t["frames"]) for t in threads.values()) >= 120
    if target_name == "threads.py":
        assert len(threads) >= 5
    if target_name == "parallel.py":
        # Four workers spinning in Python (at once where free-threaded).
        assert len(threads) == 5 and len(info["workers"]) == 4
    if target_name.startswith("unicode"):
        names = "".join(f[0] for t in threads.values() for f in t["frames"])
        assert any(0x80 <= ord(c) < 0x100 for c in names), "no UCS1 name"
        assert any(0x100 <= ord(c) < 0x10000 for c in names), "no UCS2 name"
        assert any(ord(c) >= 0x10000 for c in names), "no UCS4 name"
        assert "名前" in target.script


def test_dump_json(spyc, target):
    doc, res = spyc.dump_json(target.pid)
    assert doc["pid"] == target.pid, res.describe()
    assert doc["python_version"] == target.info["python_version"], \
        res.describe()
    target.assert_dump_matches(spyc_json_threads(doc), "dump --json")
    for t in doc["threads"]:
        for f in t["frames"]:
            assert isinstance(f["line"], int) and \
                not isinstance(f["line"], bool)


def test_dump_blocking(spyc, target):
    """--blocking reads each thread while it is stopped: the same stacks,
    and every thread runs again after."""
    doc, res = spyc.dump_json(target.pid, extra=["--blocking"])
    target.assert_dump_matches(spyc_json_threads(doc), "dump --blocking")
    assert_running(target.pid)


def test_dump_text(spyc, target):
    res = spyc.run(["dump", "--pid", target.pid])
    res.assert_ok()
    header, threads = parse_dump_text(res.stdout)
    assert header and re.match(r"^Process %d\b" % target.pid, header[0]), (
        "first line should be 'Process %d: ...'\n%s" % (target.pid,
                                                        res.describe()))
    version_re = r"^Python %s(\s|$)" % re.escape(target.info["python_version"])
    assert any(re.match(version_re, l) for l in header), (
        "header should have a 'Python X.Y.Z' line\n" + res.describe())
    target.assert_dump_matches(threads, "dump (text)")

