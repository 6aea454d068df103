# SPDX-License-Identifier: MIT
"""Without its built-in offset tables (SPYC_NO_OFFSET_TABLES=1), spyc must
still dump and record CPython 3.13+ exactly, from the interpreter's own
_Py_DebugOffsets, and say so in one line on stderr; older versions, which
publish no offsets, must be refused clearly."""

import copy
import os
import shutil
import struct
import subprocess

import pytest

from conftest import REPO, spyc_json_threads
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


def elf_file_offsets(path, names):
    """{symbol: offset in the file} of the symbols named, from the ELF
    file's symbol tables and program headers (readelf)."""
    syms = subprocess.run(["readelf", "-Ws", path], stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout
    addrs = {}
    for line in syms.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[7] in names and int(cols[1], 16):
            addrs[cols[7]] = int(cols[1], 16)
    heads = subprocess.run(["readelf", "-lW", path], stdout=subprocess.PIPE,
                           universal_newlines=True, check=True).stdout
    loads = [[int(c, 16) for c in l.split()[1:5]]
             for l in heads.splitlines() if l.split()[:1] == ["LOAD"]]
    out = {}
    for name, addr in addrs.items():
        for offset, vaddr, _, filesz in loads:
            if vaddr <= addr < vaddr + filesz:
                out[name] = offset + addr - vaddr
    assert set(out) == set(names), "symbols %s not found in %s" % (
        sorted(set(names) - set(out)), path)
    return out


def runtime_file(python):
    """The ELF file that holds python's _PyRuntime: its libpython, or the
    executable itself for a static build."""
    ldd = subprocess.run(["ldd", python.realpath], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    for line in ldd.splitlines():
        if "libpython" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return python.realpath


def point_release(python, tmp_path, moved=None):
    """A copy of python that says it is the next point release (Py_Version
    and _Py_DebugOffsets.version both), as a release spyc has no table of
    its own for would; with moved, its _Py_DebugOffsets also give 8 more
    for the field at that byte of them.  Returns (interpreter, its
    environment, its version as "3.N.P")."""
    src = runtime_file(python)
    dst = str(tmp_path / os.path.basename(src))
    shutil.copy2(src, dst)
    at = elf_file_offsets(dst, ["Py_Version", "_PyRuntime"])
    major, minor, micro = python.version_info[:3]
    hexversion = (major << 24) | (minor << 16) | ((micro + 1) << 8) | 0xF0
    with open(dst, "r+b") as f:
        f.seek(at["Py_Version"])
        f.write(struct.pack("<I", hexversion))
        # _Py_DebugOffsets open _PyRuntime: an 8-byte cookie, then the
        # version as a uint64_t.
        f.seek(at["_PyRuntime"])
        assert f.read(8) == b"xdebugpy", "no _Py_DebugOffsets in " + dst
        f.write(struct.pack("<Q", hexversion))
        if moved is not None:
            f.seek(at["_PyRuntime"] + moved)
            value = struct.unpack("<Q", f.read(8))[0]
            f.seek(at["_PyRuntime"] + moved)
            f.write(struct.pack("<Q", value + 8))
    interp = copy.copy(python)
    env = {}
    if src == python.realpath:
        # A static build: the copy runs with the original's library.
        interp.path = interp.realpath = dst
        os.chmod(dst, 0o755)
        env["PYTHONHOME"] = os.path.dirname(os.path.dirname(
            python.realpath))
    else:
        env["LD_LIBRARY_PATH"] = os.path.dirname(dst)
    return interp, env, "%d.%d.%d" % (major, minor, micro + 1)


def debug_offset_of(python, name):
    """Where spyc's table for python's minor version says the field name
    sits in _Py_DebugOffsets (the generated offsets/cpython-3.N[t].c)."""
    table = os.path.join(REPO, "offsets", "cpython-%d.%d%s.c" % (
        python.version_info[0], python.version_info[1],
        "t" if python.free_threaded else ""))
    with open(table) as f:
        for line in f:
            if '"%s"' % name in line:
                return int(line.split(",")[2])
    pytest.fail("%s is not in %s" % (name, table))


@pytest.mark.slots(since=(3, 13))
def test_point_release_read_when_its_layout_is_known(spyc, python, targets,
                                                      tmp_path):
    """A point release newer than every table spyc has (3.N.P+1 where the
    table came from 3.N.P) whose _Py_DebugOffsets are the table's: read
    with the table, exactly, under its own version, with nothing said."""
    interp, env, version = point_release(python, tmp_path)
    target = targets.start(interp, "deep.py", env=env)
    doc, res = spyc.dump_json(target.pid)
    assert not res.stderr_lines, res.describe()
    assert doc["python_version"] == version, res.describe()
    target.assert_dump_matches(spyc_json_threads(doc),
                               "dump --json of %s" % version)


@pytest.mark.slots(since=(3, 13))
def test_point_release_with_a_moved_field_refused(spyc, python, targets,
                                                  tmp_path):
    """The same point release, but its _Py_DebugOffsets place a thread
    state's current frame 8 bytes further than the table does: its
    layout changed, so the table may be wrong in fields the target does
    not publish too.  Refused in one line that names the field, both
    values and what to do; no stack guessed at."""
    field = "thread_state.current_frame"
    at = debug_offset_of(python, field)
    interp, env, version = point_release(python, tmp_path, moved=at)
    target = targets.start(interp, "deep.py", env=env)
    res = spyc.run(["dump", "--pid", target.pid, "--json"])
    res.assert_error(2, "Python %s in pid %d is not supported" % (
        version, int(target.pid)), field, "make offsets")
    assert len(res.stderr_lines) == 1 and not res.stdout, res.describe()
