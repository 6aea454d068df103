# SPDX-License-Identifier: MIT
"""Line-table decoding against each interpreter's own answer.

Each interpreter compiles a set of its standard-library modules and writes,
for every code object, its line table and the line it says each bytecode
offset belongs to (dis.findlinestarts up to 3.9, co_lines() from 3.10).
spyc's decoder (tests/unit/test-pycode.c, --vectors) must agree on all.
"""

import os
import subprocess

import pytest

from conftest import REPO

UNIT = os.path.join(REPO, "tests", "build", "unit-test-pycode")

# Runs inside the interpreter under test; must work on 3.6.
DUMP = r"""
import dis, sys, types
kind = 'lnotab' if sys.version_info < (3, 10) else (
    '310' if sys.version_info < (3, 11) else 'locations')
out = open(sys.argv[1], 'w')
def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            for x in walk(c):
                yield x
def expected(co):
    if kind == 'lnotab':
        starts = list(dis.findlinestarts(co))
        line = co.co_firstlineno
        points = []
        for off in range(0, len(co.co_code), 2):
            for s, l in starts:
                if s <= off:
                    line = l
            points.append((off, line))
        return points
    points = []
    for start, end, line in co.co_lines():
        if line is None:
            continue
        for off in range(start, end, 2):
            points.append((off, line))
    return points
import argparse, threading, json.decoder, asyncio.base_events
for mod in (argparse, threading, json.decoder, asyncio.base_events):
    src = open(mod.__file__, encoding='utf-8').read()
    for co in walk(compile(src, mod.__file__, 'exec')):
        table = co.co_lnotab if kind == 'lnotab' else co.co_linetable
        pts = expected(co)
        out.write('%s %d %s %s\n' % (kind, co.co_firstlineno,
                  table.hex() or '-',
                  ' '.join('%d:%d' % p for p in pts)))
out.close()
"""


@pytest.fixture(scope="session")
def unit_binary(spyc):
    subprocess.run(["make", "-s", "tests/build/unit-test-pycode"], cwd=REPO,
                   check=True)
    return UNIT


def test_linetables_match_interpreter(python, unit_binary, tmp_path):
    vectors = str(tmp_path / "vectors.txt")
    subprocess.run([python.path, "-c", DUMP, vectors], check=True,
                   timeout=120)
    res = subprocess.run([unit_binary, "--vectors", vectors],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "checked" in res.stdout
