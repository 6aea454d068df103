# SPDX-License-Identifier: MIT
"""spyc against a target that churns: threads, code objects, generators,
coroutines and exceptions come and go while spyc samples at a high rate.
Torn reads must be dropped and counted, never crash spyc or produce a
broken profile, and the target must compute exactly what it computes
unprofiled."""

import ast
import json
import os
import re
import subprocess

from conftest import GC_FRAME, TARGETS, target_env, without_gc
from test_record import format_stacks, parse_folded, parse_summary

ROUNDS = "60"
CHURN = os.path.join(TARGETS, "churn.py")
CHURN_FRESH = "f<N>"
# Who calls whom in churn.py: <module> runs main, which starts and joins
# the threads (in threading.py); each thread, from threading's bootstrap,
# runs worker; fresh_function runs code it has just compiled, from the
# file "<churn-N>": the module that defines f<N>, then f<N> (CHURN_FRESH).
# Before 3.12 main's list comprehension is a frame of its own.  Only main
# and its list comprehension call the standard library (threading: make,
# start and join the threads).
CHURN_CALLS = {
    "<module>": {"main"},
    "main": {"<listcomp>"},
    "<listcomp>": set(),
    "worker": {"run_coro", "fresh_function", "failing"},
    "run_coro": {"coro"},
    "coro": {"gen"},
    "gen": {"recurse"},
    "recurse": {"recurse"},
    "failing": {"failing"},
    "fresh_function": {CHURN_FRESH},
}
FRESH_FILE_RE = re.compile(r"^<churn-(\d+)>$")
# 3.13+ call a class's __init__ from a frame of its own, the code object
# CPython names _Py_InitCleanup (Python/specialize.c): named "__init__",
# in the file "__init__", with no line.  Python's own tracebacks leave it
# out; spyc shows it.
INIT_TRAMPOLINE = ("__init__", "__init__", None)
# Most kept samples once churn.py runs are of its own work: in main, or
# in a thread's worker, along churn.py's calls.  The rest is importing
# threading, and threads starting and ending.  (The interpreter's
# start-up before, which launch mode samples, is not counted.)
MIN_CHURN_SHARE = 0.8
LIBRARY_CALLERS = {"main", "<listcomp>"}


def function_lines(source):
    """{name: (first line, last line)} of the functions in source, its
    list comprehensions (<listcomp>: all of them) and <module> over all
    of it."""
    lines = {"<module>": (1, len(source.splitlines()))}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines[node.name] = (node.lineno, node.end_lineno)
        elif isinstance(node, ast.ListComp):
            first, last = lines.get("<listcomp>", (node.lineno,
                                                   node.end_lineno))
            lines["<listcomp>"] = (min(first, node.lineno),
                                   max(last, node.end_lineno))
    return lines


def library_dirs(python):
    """The target interpreter's standard library and site-packages: where
    the frames it shows on its own (start-up, threading) come from."""
    out = subprocess.check_output(
        [python.path, "-c", "import sysconfig; p = sysconfig.get_paths(); "
         "print('\\n'.join([p['stdlib'], p['purelib'], p['platlib']]))"],
        env=target_env(), universal_newlines=True)
    return [d for d in out.splitlines() if d]


def library_frame(frame, dirs, python):
    """Whether frame is the interpreter's own: a file of its standard
    library or site-packages (whole, or as spyc shortens it: relative to
    one of them), a frozen module, a .pth line that site runs at
    start-up (<string>), or 3.13+'s trampoline that runs a class's
    __init__ (INIT_TRAMPOLINE)."""
    name, path, line = frame
    if (name, path, line) == INIT_TRAMPOLINE:
        return python.version_info >= (3, 13)
    path = path or ""
    if path.startswith("<frozen ") and path.endswith(">"):
        return True
    if path == "<string>":
        return name == "<module>"
    if os.path.isabs(path):
        return any(path.startswith(d + os.sep) for d in dirs)
    return any(os.path.isfile(os.path.join(d, path)) for d in dirs)


def churn_frame(frame, lines):
    """The name in CHURN_CALLS that frame is, None if it is not of
    churn.py, or False if it is but makes no sense: a name churn.py does
    not define, a line outside the function, or in <churn-N> anything
    but its <module> (line 1) or f<N> (lines 1 and 2)."""
    name, path, line = frame
    fresh = FRESH_FILE_RE.match(path or "")
    if fresh:
        return CHURN_FRESH if (
            (name == "<module>" and line == 1) or
            (name == "f" + fresh.group(1) and line in (1, 2))) else False
    if path != CHURN:
        return None
    # 3.11 named comprehensions by where they are: main.<locals>.<listcomp>
    name = re.sub(r"^\w+\.<locals>\.", "", name)
    if name not in lines:
        return False
    first, last = lines[name]
    return name if line is not None and first <= line <= last else False


def on_churn_chain(kinds):
    """Whether a stack, as what churn_frame says of each frame, root first
    (None: a library frame), follows churn.py's calls: library frames
    (a thread's bootstrap) then worker, or <module> then main; then
    churn.py's calls; then library frames only under LIBRARY_CALLERS."""
    i = 0
    while i < len(kinds) and kinds[i] is None:
        i += 1
    own = []
    while i < len(kinds) and kinds[i] is not None:
        own.append(kinds[i])
        i += 1
    if own[:1] != (["worker"] if kinds[:1] == [None] else ["<module>"]):
        return False
    if own[0] == "<module>" and own[1:2] != ["main"]:
        return False
    if any(b not in CHURN_CALLS.get(a, ()) for a, b in zip(own, own[1:])):
        return False
    rest = kinds[i:]
    return not rest or (own[-1] in LIBRARY_CALLERS and
                        all(k is None for k in rest))


def test_churn_at_high_rate(spyc, python, tmp_path):
    """churn.py launched under spyc at 2 kHz prints the checksum it prints
    alone; every frame of the profile is one churn.py runs (a name it
    defines, at a line of that function; <churn-N>'s code only from
    <churn-N>) or the interpreter's own; and most samples follow
    churn.py's calls (CHURN_CALLS), root first."""
    script = os.path.join(TARGETS, "churn.py")
    plain = subprocess.run([python.path, script, ROUNDS],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=target_env(), timeout=300,
                           universal_newlines=True)
    assert plain.returncode == 0, plain.stderr
    out = str(tmp_path / "churn.json")
    res = spyc.run(["record", "--rate", "2000", "--full-filenames", "-o",
                    out, "--", python.path, script, ROUNDS],
                   env=target_env(), timeout=300)
    # 0, or 1 if more than 3% of samples were torn: both are honest.
    assert res.returncode in (0, 1), res.describe()
    assert res.stdout == plain.stdout, "profiled target computed otherwise"
    summary = parse_summary(res.stderr, res.describe())
    assert summary.samples > 0
    with open(out) as f:
        doc = json.load(f)
    frames = [(fr["name"], fr.get("file"), fr.get("line"))
              for fr in doc["shared"]["frames"]]
    # The collector's frame, where churn.py's garbage set one off, is
    # left out: it is the interpreter's own, on top of any stack.
    stacks = [(p.get("name"), without_gc([frames[i] for i in sample]),
               weight)
              for p in doc["profiles"]
              for sample, weight in zip(p["samples"], p["weights"])]
    frames = [f for f in frames if f[0] != GC_FRAME]
    # Every frame is one churn.py runs, at a line of its function, or the
    # interpreter's own: a torn read kept would show as something else.
    with open(CHURN) as f:
        lines = function_lines(f.read())
    dirs = library_dirs(python)
    kinds = {}
    for frame in frames:
        kind = churn_frame(frame, lines)
        assert kind is not False and (kind or library_frame(frame, dirs,
                                                             python)), (
            "frame %s (%s:%s) is neither churn.py's nor the interpreter's "
            "(%s)\n%s" % (frame + (", ".join(dirs), res.describe())))
        kinds[frame] = kind
    # Of the samples once churn.py runs: the interpreter's start-up,
    # before, takes a share that grows with the machine's load.
    total = sum(w for _, fs, w in stacks if any(kinds[f] for f in fs))
    on_chain = sum(w for _, fs, w in stacks
                   if on_churn_chain([kinds[f] for f in fs]))
    assert total > 0 and on_chain >= MIN_CHURN_SHARE * total, (
        "only %.1f%% of the samples follow churn.py's calls\ntop stacks:"
        "\n%s\n%s" % (100.0 * on_chain / total, format_stacks(stacks),
                       res.describe()))


# The program spins for a second: most of its samples, past its start-up.
MIN_SPIN_SHARE = 0.8
EXECS = r"""
import os, sys, time
def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
spin(1.0)
# The same interpreter again: only the mappings tell spyc it changed.
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3)"])
"""


def test_target_execs_mid_record(spyc, python, tmp_path):
    """A target that execs mid-sample: spyc notices, stops, and writes a
    complete profile of what it saw before: the program's frames and the
    interpreter's, mostly <module> -> spin."""
    proc = subprocess.Popen([python.path, "-c", EXECS], env=target_env())
    try:
        out = str(tmp_path / "exec.txt")
        res = spyc.run(["record", "--pid", str(proc.pid), "--rate", "200",
                        "-o", out], timeout=60)
        assert res.returncode in (0, 1), res.describe()
        assert "exec" in res.stderr, res.describe()
        summary = parse_summary(res.stderr, res.describe())
        assert summary.seconds < 3.0, "spyc kept sampling the new program"
        stacks = parse_folded(out)
        # One thread: every sample with a stack is one count.
        total = sum(w for _, _, w in stacks)
        assert 0 < total <= summary.samples, res.describe()
        # Its frames are the program's own (-c: "<string>"), at lines
        # of their functions, or the interpreter's (spyc may come while
        # it starts); most samples are of <module> -> spin.
        lines = function_lines(EXECS)
        dirs = library_dirs(python)
        for _, frames, _ in stacks:
            for name, path, line in without_gc(frames):
                own = path == "<string>" and name in lines and \
                    lines[name][0] <= line <= lines[name][1]
                assert own or library_frame((name, path, line), dirs,
                                            python), (
                    "frame %s (%s:%s) is neither the program's nor the "
                    "interpreter's\n%s" % (name, path, line,
                                           res.describe()))
        spin = sum(w for _, frames, w in stacks
                   if [(n, p) for n, p, _ in frames] ==
                   [("<module>", "<string>"), ("spin", "<string>")])
        # Of the samples once the program runs (not its start-up, which
        # a loaded machine makes longer).
        total = sum(w for _, frames, w in stacks
                    if any(p == "<string>" for _, p, _ in frames))
        assert spin >= MIN_SPIN_SHARE * total, (
            "only %d of %d samples are <module> -> spin\n%s\n%s" % (
                spin, total, format_stacks(stacks), res.describe()))
    finally:
        proc.kill()
        proc.wait()
