# SPDX-License-Identifier: MIT
"""spyc under injected faults, on every CPython slot.

tests/build/spyc-faults is spyc built with `make FAULTS=1`: SPYC_FAULTS makes
its remote reads fail, stop short, return random bytes or stale bytes, and
its ptrace calls fail, at the rates it names (src/sys/faults.h).  Every command
is run against real targets at a high rate, so that each run meets hundreds
of faults, and must still behave: no signal, no hang, exit 0 or 1 (1 with
the losses counted in the summary), a well-formed output file, and the
target running on, no thread of it left stopped or traced.  What spyc keeps
must be right: a sample it cannot read cleanly is dropped, never kept with
a frame the target does not have, so every kept frame is one of the
target's own functions (or of the modules its threads run in), and the
stacks the target is known to spend its time in hold most of the samples.

A failure message holds the SPYC_FAULTS used, seed included, to run again.
"""

import json
import os
import re
import subprocess
import time
import zlib

import pytest

from conftest import (REPO, TARGETS, TargetPool, decode, parse_dump_text,
                      spyc_json_threads, target_env, top_until_snapshots,
                      without_gc)
from test_record import (FOLDED_FRAME_RE, parse_speedscope,
                         parse_summary)
from test_top import parse_plain

FAULTS_BINARY = os.path.join(REPO, "tests", "build", "spyc-faults")
# Rates of the runs that make profiles: about one read in 30 goes wrong.
RATES = "read=0.01,garbage=0.01,stale=0.01,ptrace=0.02"
# dump reads each stack once (if it is consistent): twice the rates, and
# several runs, reach its paths; higher, a deep stack is never read whole.
DUMP_RATES = "read=0.02,garbage=0.02,stale=0.02,ptrace=0.04"
DUMP_RUNS = 4
# High enough that a run meets faults by the hundred; short enough that the
# file runs in a few minutes on every slot.
RATE_HZ = 2000
SECONDS = 1.5
# Every slot also meets this many samples under faults per record option
# and in top's sampler, in runs as fast as spyc samples (some 20 kHz).
MANY_SAMPLES = 100000
# --native stops and unwinds the thread in each sample (some 7 kHz here),
# each sample some five ptrace calls: fewer samples meet ptrace faults by
# the thousand.
MANY_NATIVE_SAMPLES = 40000
MANY_HZ = 50000
MANY_RUN_SECONDS = 2
# Bounds that a loaded machine (a few kHz) still meets MANY_SAMPLES in.
MANY_RUNS_MAX = 60
MANY_TOP_SECONDS = 240
# spyc must be done well within this, whatever the faults do.
TIMEOUT = 60
# How long a target may take to show it runs on after spyc is gone.
RUN_ON_TIMEOUT = 10.0
# Of the samples spyc keeps, the share that must carry the stack the
# target is known to spend its time in: hot.py's chain, or each of
# states.py's threads in its own function.  A correct spyc keeps over 99%
# there (hot.py steps out of hot() into work() between calls); less than
# this would be faults bending the profile unseen.
MIN_KEPT_CHAIN_SHARE = 0.9
# Modules whose functions a target's frames may show besides its own
# script's: its threads' bootstrap, and the import system's frozen code;
# and the module the dump targets (deep.py) report themselves with.
STDLIB_MODULES = ["threading", "importlib._bootstrap",
                  "importlib._bootstrap_external"]
TARGET_MODULES = [os.path.join(TARGETS, "selfreport.py")]
# The modules an event loop's thread runs in under its tasks.
ASYNCIO_MODULES = ["asyncio.runners", "asyncio.base_events",
                   "asyncio.events", "asyncio.tasks", "asyncio.locks",
                   "asyncio.unix_events", "asyncio.selector_events",
                   "selectors"]
# Every function that files (by path) and modules (by name) compile to,
# as the interpreter that runs it names them: [[name, file]] in JSON.
# Must run unchanged on 3.6 .. 3.15.
LIST_FUNCTIONS = r"""
import importlib, json, sys
def walk(code, out):
    out.append([getattr(code, "co_qualname", code.co_name),
                code.co_filename])
    for c in code.co_consts:
        if hasattr(c, "co_consts"):
            walk(c, out)
out = []
for arg in sys.argv[1:]:
    if arg.endswith(".py"):
        with open(arg, "rb") as f:
            code = compile(f.read(), arg, "exec")
    else:
        spec = importlib.import_module(arg).__spec__
        code = spec.loader.get_code(spec.name)
    walk(code, out)
print(json.dumps(out))
"""
# The stand-ins spyc puts for the frames past --max-depth and for time in
# the cycle collector: no file.
STAND_IN_RE = re.compile(r"^(?:\[\d+ frames? not read\]|<GC>)$")
# A native frame (--native): a symbol, or "library+0xOFFSET" where there
# is none; its file, where DWARF gives one, a C or assembly source.
NATIVE_NAME_RE = re.compile(r"^(?:[A-Za-z_][\w.@$]*|\S+\+0x[0-9a-f]+)$")
NATIVE_FILE_RE = re.compile(r"\.(?:c|h|S|s|cc|cpp|hpp)$")


@pytest.fixture(scope="session")
def faults_spyc(spyc):
    """tests/build/spyc-faults, built with make if it is missing or old;
    SPYC_FAULTS_BINARY=PATH tests that spyc instead (make test-sanitize:
    tests/build/spyc-asan, which has the fault injection too)."""
    from conftest import Spyc
    override = os.environ.get("SPYC_FAULTS_BINARY")
    if override:
        return Spyc(os.path.abspath(override))
    res = subprocess.run(["make", "tests/build/spyc-faults"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=900)
    if res.returncode != 0:
        pytest.fail("make tests/build/spyc-faults failed:\n%s" %
                    "\n".join(decode(res.stdout).splitlines()[-40:]),
                    pytrace=False)
    return Spyc(FAULTS_BINARY)


@pytest.fixture(scope="module")
def slot_targets(python, tmp_path_factory):
    """The slot's targets, started once and shared by its tests: states.py
    (threads sleeping, blocked and spinning), hot.py (one busy thread) and
    deep.py (deep recursion)."""
    pool = TargetPool(tmp_path_factory)
    try:
        yield {
            "states": pool.start(python, "states.py", "{report}"),
            "hot": pool.start(python, "hot.py", 0, "{report}"),
            "deep": pool.start(python, "deep.py", "{report}"),
        }
    finally:
        pool.close()


def faults_env(rates, python, what, n=0, counts=None):
    """spyc's environment: the rates and a seed of the test's own; with
    counts, spyc writes there how many faults it injected."""
    seed = zlib.crc32(("%s %s %d" % (python.version, what, n)).encode())
    spec = "%s,seed=%d" % (rates, seed)
    if counts:
        spec += ",counts=%s" % counts
    return target_env({"SPYC_FAULTS": spec}), spec


def injected(counts, describe):
    """{kind: n} from the file spyc-faults wrote at exit."""
    try:
        with open(counts) as f:
            text = f.read()
    except (IOError, OSError):
        pytest.fail("spyc-faults wrote no counts to %s: was SPYC_FAULTS "
                    "read at all?\n%s" % (counts, describe))
    return dict((k, int(v)) for k, v in
                (item.split("=") for item in text.split()))


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def task_status(pid):
    """{tid: (State letter, TracerPid)} of every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                fields = dict(l.split(":", 1) for l in f if ":" in l)
        except OSError:
            continue  # a thread that just ended
        out[int(tid)] = (fields["State"].split()[0],
                         int(fields["TracerPid"]))
    return out


def assert_target_runs_on(target, describe):
    """After spyc: the target is alive, no thread is stopped or traced, and
    one that spins (all but deep.py and family.py) keeps using CPU."""
    assert target.proc.poll() is None, (
        "the target died (exit %s) under spyc\n%s\n--- target stderr ---\n%s"
        % (target.proc.returncode, describe, target.errors()))
    status = task_status(target.pid)
    bad = dict((tid, s) for tid, s in status.items()
               if s[0] in ("t", "T") or s[1] != 0)
    assert not bad, ("threads left stopped or traced after spyc exited "
                     "{tid: (state, tracer)}: %s\n%s" % (bad, describe))
    if target.script.endswith(("deep.py", "family.py")):
        return  # its threads sleep; family.py's parent waits
    before = cpu_ticks(target.pid)
    deadline = time.time() + RUN_ON_TIMEOUT
    while cpu_ticks(target.pid) == before:
        assert time.time() < deadline, (
            "the target used no CPU for %.0f s after spyc exited\n%s" % (
                RUN_ON_TIMEOUT, describe))
        time.sleep(0.05)


def assert_survived(res, spec):
    """No signal, exit 0 or 1; returns the description for messages."""
    describe = "SPYC_FAULTS=%s\n%s" % (spec, res.describe())
    assert res.returncode >= 0, "spyc was killed by signal %d\n%s" % (
        -res.returncode, describe)
    assert res.returncode in (0, 1), describe
    return describe


def record(spyc, python, target, tmp_path, what, out_name, *extra):
    """Run record under faults and check what every record run must
    satisfy; returns (summary, output path, description)."""
    counts = str(tmp_path / "faults.txt")
    env, spec = faults_env(RATES, python, what, counts=counts)
    out = str(tmp_path / out_name)
    res = spyc.run(["record", "--pid", target.pid, "--rate", RATE_HZ,
                    "--duration", SECONDS, "-o", out] + list(extra),
                   env=env, timeout=TIMEOUT)
    describe = assert_survived(res, spec)
    # A run that met no fault would prove nothing.
    got = injected(counts, describe)
    assert got["read"] + got["garbage"] + got["stale"] > 0, (
        "no read fault injected (%s)\n%s" % (got, describe))
    # --blocking stops a thread only when all its reads tore: seldom.
    if "--native" in extra:
        assert got["ptrace"] > 0, (
            "no ptrace fault injected (%s)\n%s" % (got, describe))
    summary = parse_summary(res.stderr, describe)
    if res.returncode == 1:
        assert summary.dropped > 0 or summary.samples == 0, (
            "exit 1 but the summary counts nothing lost\n" + describe)
    check_drops_said(res, summary, describe)
    assert summary.samples + summary.dropped > 0, (
        "nothing sampled in %s s at %d Hz\n%s" % (SECONDS, RATE_HZ, describe))
    assert os.path.exists(out), "no output written\n" + describe
    assert_target_runs_on(target, describe)
    return summary, out, describe


# Exit 1 once more than this share of samples was dropped (spyc's
# DROP_TOLERANCE), with a warning that says the share.
DROP_TOLERANCE = 0.03
DROPS_WARNING_RE = re.compile(
    r"^spyc: warning: (\d+\.\d)% of samples dropped: any function's share "
    r"may be off by as many points; most (.+)$")


def check_drops_said(res, summary, describe):
    """Exit 1 and the warning, with the share the summary's counts give,
    exactly when more than DROP_TOLERANCE of the samples was dropped."""
    taken = summary.samples + summary.dropped
    said = [m for m in map(DROPS_WARNING_RE.match, res.stderr_lines) if m]
    if summary.dropped > DROP_TOLERANCE * taken:
        assert res.returncode == 1, describe
        assert len(said) == 1, "no warning of the drops\n" + describe
        assert said[0].group(1) == "%.1f" % (
            100.0 * summary.dropped / taken), describe
    else:
        assert not said, describe
        assert res.returncode == (1 if summary.samples == 0 else 0), describe


def test_drops_warning(faults_spyc, any_python, targets, tmp_path):
    """Many reads failing: exit 1 and one warning saying which share of
    the samples was dropped, why, and what to do, before the summary."""
    target = targets.start(any_python, "hot.py", 0, "{report}")
    env, spec = faults_env("read=0.2,garbage=0.2", any_python, "warning")
    res = faults_spyc.run(["record", "--pid", target.pid, "--rate", 200,
                           "--duration", 1, "-o", str(tmp_path / "o.txt")],
                          env=env, timeout=TIMEOUT)
    describe = assert_survived(res, spec)
    summary = parse_summary(res.stderr, describe)
    assert summary.dropped > DROP_TOLERANCE * (
        summary.samples + summary.dropped), describe
    check_drops_said(res, summary, describe)
    assert "--blocking reads stopped threads" in res.stderr, describe


def parse_folded_any(path):
    """Folded lines, native frames (some have no file) or not:
    [(None, [frame text], count)].  Records end at "\n" only: names read
    as garbage may hold the other characters str.splitlines() splits at,
    which the format does not reserve."""
    stacks = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.endswith("\n") or not text, "folded file must end in newline"
    for n, line in enumerate(text.split("\n")[:-1], 1):
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit() and int(count) > 0, (
            "folded line %d is not 'STACK COUNT': %r" % (n, line))
        frames = stack.split(";")
        assert all(f.strip() for f in frames), (
            "folded line %d: an empty frame: %r" % (n, line))
        stacks.append((None, frames, int(count)))
    return stacks


def known_functions(target, modules=()):
    """{name: {file}}: every function of the target's script, of
    TARGET_MODULES, of STDLIB_MODULES and of modules, as the target's
    interpreter names them.  Listed once per target."""
    if getattr(target, "known", None) is None:
        res = subprocess.run(
            [target.python.path, "-c", LIST_FUNCTIONS, target.script] +
            TARGET_MODULES + STDLIB_MODULES + list(modules),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=target_env(), timeout=TIMEOUT)
        assert res.returncode == 0, (
            "could not list the functions of %s:\n%s" % (
                target.script, decode(res.stderr)))
        target.known = {}
        for name, path in json.loads(decode(res.stdout)):
            target.known.setdefault(name, set()).add(path)
    return target.known


def same_file(shown, path):
    """spyc shows a file by its whole path, or by its end (the part
    below the directory it took off)."""
    return bool(shown) and (shown == path or path.endswith("/" + shown))


def frame_of(frame):
    """(name, file or None) of a frame parsed as (name, file, line), or
    of a folded frame's text."""
    if not isinstance(frame, str):
        return frame[0], frame[1] or None
    m = FOLDED_FRAME_RE.match(frame)
    return (m.group("name"), m.group("file")) if m else (frame, None)


def is_python(file):
    """Whether a frame of a --native stack is a Python one: spyc names a
    native frame by its symbol and its C source, never a .py file."""
    return bool(file) and (file.endswith(".py") or
                           file.startswith("<frozen "))


def unknown_frame(name, file, known, native):
    """Why the frame is not one the target can have, or None."""
    if native and not is_python(file):
        if NATIVE_NAME_RE.match(name) and (
                not file or NATIVE_FILE_RE.search(file)):
            return None
        return "not a native frame"
    if STAND_IN_RE.match(name) and not file:
        return None
    if not any(same_file(file, path) for path in known.get(name, ())):
        return "no such function in the target"
    return None


def python_frames(frames, native):
    """The (name, file) of a stack's Python frames, root first."""
    out = [frame_of(f) for f in frames]
    return [f for f in out if not native or is_python(f[1])]


def starts_with(frames, chain):
    return len(frames) >= len(chain) and all(
        f[0] == c["name"] and same_file(f[1], c["file"])
        for f, c in zip(frames, chain))


def format_kept(stacks, limit=8):
    top = sorted(stacks, key=lambda s: -s[2])[:limit]
    return "\n".join("  %s x %s: %s" % (label or "", weight, ";".join(
        "%s (%s)" % frame_of(f) for f in frames))
        for label, frames, weight in top)


def thread_roles(target):
    """{role: [name, file, line]} of states.py's threads: the function
    each one stays in, as the target saw it."""
    return dict((role, r["top"]) for role, r in target.info["roles"].items())


def check_stacks(stacks, summary, describe, known=None, chain=None,
                 roles=None, native=False, labelled=False):
    """Every stack is whole; with known (known_functions()), all its
    frames are the target's; with chain, at least MIN_KEPT_CHAIN_SHARE of
    the weight starts (root first, Python frames only) with it; with
    roles (thread_roles()), at least that share of each role's thread (a
    profile labelled "ROLE (...") ends in its function.
    labelled: each folded stack's first frame is its thread's label."""
    assert all(frames for _, frames, _ in stacks) or not stacks
    if summary.samples:
        assert stacks, "%d samples but no stack written\n%s" % (
            summary.samples, describe)
    bad, total, hit = [], 0, 0
    # {role: [its thread's weight, the part in its function]}
    per_role = dict((role, [0, 0]) for role in roles or ())
    verdicts = {}   # a run holds few distinct frames, in many stacks
    for label, frames, weight in stacks:
        body = frames[1:] if labelled else frames
        for frame in body:
            name, file = frame_of(frame)
            if (name, file) not in verdicts:
                verdicts[name, file] = known is not None and unknown_frame(
                    name, file, known, native)
            why = verdicts[name, file]
            if why:
                bad.append("%s (%s): %s, in %s" % (name, file, why, ";".join(
                    "%s (%s)" % frame_of(f) for f in body)))
        body = python_frames(body, native)
        total += weight
        if chain and starts_with(body, chain):
            hit += weight
        for role, top in (roles or {}).items():
            if (label or "").startswith(role + " ("):
                per_role[role][0] += weight
                if body and body[-1][0] == top[0] and same_file(
                        body[-1][1], top[1]):
                    per_role[role][1] += weight
    assert not bad, (
        "%d frames kept that the target does not have (a sample read "
        "wrong must be dropped):\n  %s\n%s" % (
            len(bad), "\n  ".join(bad[:10]), describe))
    assert not chain or hit >= MIN_KEPT_CHAIN_SHARE * total, (
        "only %.1f%% of the kept samples have the chain %s\ntop stacks:\n"
        "%s\n%s" % (100.0 * hit / total if total else 0,
                     " -> ".join(c["name"] for c in chain),
                     format_kept(stacks), describe))
    for role, (mine, in_top) in sorted(per_role.items()):
        assert mine and in_top >= MIN_KEPT_CHAIN_SHARE * mine, (
            "thread %s is in %s (as the target says) in only %.1f%% of "
            "its kept samples\ntop stacks:\n%s\n%s" % (
                role, roles[role][0], 100.0 * in_top / mine if mine else 0,
                format_kept(stacks), describe))


def check_threads(stacks, target, describe, labelled=False):
    """Each thread a profile names ("NAME (tid N)", a folded stack's first
    frame where labelled) is a task of the target, under one name: a
    thread id read as garbage must drop the sample, never name a thread
    (or one that ptrace would stop) that is not the target's, and one
    thread is one profile."""
    tasks = set(int(t) for t in os.listdir("/proc/%s/task" % target.pid))
    names = {}
    for label, frames, _ in stacks:
        label = frames[0] if labelled else label
        m = re.search(r"\(tid ([0-9]+)\)$", label or "")
        assert m and int(m.group(1)) in tasks, (
            "a thread labelled %r is not one of the target's tasks %s\n%s"
            % (label, sorted(tasks), describe))
        names.setdefault(int(m.group(1)), set()).add(label)
    split = dict((tid, n) for tid, n in names.items() if len(n) > 1)
    assert not split, "threads under several names: %s\n%s" % (split,
                                                             describe)


def check_rows(snapshots, known, leaves, describe):
    """Every row of top's plain snapshots is one of the target's functions
    (known: known_functions()); a row cut at the screen's edge, its name.
    Each of leaves ([{"name", "file"}], functions a thread of the target
    stays in) has at least MIN_KEPT_CHAIN_SHARE of the samples as its own
    time in every snapshot: %OWN counts 100 per thread in every sample."""
    for header, rows in snapshots:
        where = "snapshot %s" % header["snapshot"]
        for r in rows:
            if r["whole"]:
                why = unknown_frame(r["name"], r["file"], known, r["native"])
            else:
                why = (r["name"] not in known and
                       not STAND_IN_RE.match(r["name"]) and
                       "no such function")
            assert not why, (
                "%s: a row the target does not have (%s): %s\n%s" % (
                    where, why, r["function"], describe))
        for leaf in leaves:
            own = sum(r["own"] for r in rows if r["whole"] and
                      r["name"] == leaf["name"] and
                      same_file(r["file"], leaf["file"]))
            assert own >= 100 * MIN_KEPT_CHAIN_SHARE, (
                "%s: %s, which a thread of the target stays in, has %.1f%% "
                "of the samples as its own\n%s" % (
                    where, leaf["name"], own, describe))


@pytest.mark.parametrize("spec", ["read=2", "read", "seed=x",
                                  "noise=0.1", "counts="])
def test_malformed_spec(faults_spyc, any_python, targets, spec):
    """A SPYC_FAULTS that does not parse ends spyc with one line naming
    it and exit 2, never a run with faults other than those asked for."""
    target = targets.start(any_python, "hot.py", 0, "{report}")
    res = faults_spyc.run(["dump", "--pid", target.pid],
                          env=target_env({"SPYC_FAULTS": spec}),
                          timeout=TIMEOUT)
    assert res.returncode == 2, res.describe()
    assert len(res.stderr_lines) == 1, res.describe()
    assert res.stderr_lines[0].startswith("spyc: SPYC_FAULTS='%s'" % spec), (
        res.describe())


def test_record_speedscope(faults_spyc, python, slot_targets, tmp_path):
    summary, out, describe = record(
        faults_spyc, python, slot_targets["states"], tmp_path, "speedscope",
        "out.json", "--idle")
    try:
        _, stacks = parse_speedscope(out)
    except ValueError as e:
        pytest.fail("invalid speedscope JSON (%s)\n%s" % (e, describe))
    target = slot_targets["states"]
    check_stacks(stacks, summary, describe, known_functions(target),
                 roles=thread_roles(target))
    check_threads(stacks, target, describe)


def test_record_folded(faults_spyc, python, slot_targets, tmp_path):
    summary, out, describe = record(
        faults_spyc, python, slot_targets["hot"], tmp_path, "folded",
        "out.txt", "--threads")
    stacks = parse_folded_any(out)
    for _, frames, _ in stacks:
        # Python frames, after the thread's label: a name, a line >= 0
        # (but for the collector's frame, on top, which has neither).
        assert all(re.match(r"^.+ \(.*:[0-9]+\)$", f)
                   for f in without_gc(frames[1:], name=lambda f: f)), (
            "a frame is not 'name (file:line)': %r\n%s" % (frames, describe))
    hot = slot_targets["hot"]
    check_stacks(stacks, summary, describe, known_functions(hot),
                 chain=hot.info["chain"], labelled=True)
    check_threads(stacks, hot, describe, labelled=True)


def test_record_native(faults_spyc, python, slot_targets, tmp_path):
    hot = slot_targets["hot"]
    summary, out, describe = record(
        faults_spyc, python, hot, tmp_path, "native", "out.txt", "--native")
    check_stacks(parse_folded_any(out), summary, describe,
                 known_functions(hot), chain=hot.info["chain"], native=True)


def test_record_blocking(faults_spyc, python, slot_targets, tmp_path):
    summary, out, describe = record(
        faults_spyc, python, slot_targets["states"], tmp_path, "blocking",
        "out.json", "--blocking", "--idle")
    _, stacks = parse_speedscope(out)
    target = slot_targets["states"]
    check_stacks(stacks, summary, describe, known_functions(target),
                 roles=thread_roles(target))
    check_threads(stacks, target, describe)


@pytest.mark.parametrize("mode", ["text", "json", "native"])
def test_dump(faults_spyc, python, slot_targets, mode):
    """dump of deep stacks and of several threads: exit 0, or 1 with a
    line saying the stacks could not be read cleanly; output that parses."""
    extra = {"text": [], "json": ["--json"], "native": ["--native"]}[mode]
    for n in range(DUMP_RUNS):
        target = slot_targets["deep" if n % 2 else "states"]
        env, spec = faults_env(DUMP_RATES, python, "dump " + mode, n)
        res = faults_spyc.run(["dump", "--pid", target.pid] + extra,
                              env=env, timeout=TIMEOUT)
        describe = assert_survived(res, spec)
        if res.returncode == 1:
            assert [l for l in res.stderr_lines
                    if l.startswith("spyc: ")], (
                "exit 1 with no 'spyc: ' line saying why\n" + describe)
            assert_target_runs_on(target, describe)
            continue
        if mode == "json":
            try:
                doc = json.loads(res.stdout)
            except ValueError as e:
                pytest.fail("invalid JSON (%s)\n%s" % (e, describe))
            assert doc["threads"], describe
            threads = spyc_json_threads(doc)
        else:
            assert "Thread 0x" in res.stdout, describe
            # Its Python frames: a native one ends in "[native]".
            threads = parse_dump_text(res.stdout)[1]
        # Exit 0 says every stack was read cleanly: each frame is the
        # target's.
        known = known_functions(target)
        # (dump lists a thread's frames innermost first.)
        bad = ["%s (%s:%s)" % f for t in threads.values()
               for f in t["frames"]
               if unknown_frame(f[0], f[1], known, False)]
        assert not bad, (
            "exit 0, with frames the target does not have:\n  %s\n%s" % (
                "\n  ".join(bad[:10]), describe))
        assert_target_runs_on(target, describe)


@pytest.mark.parametrize("opts", [["--idle"], ["--native"],
                                  ["--blocking", "--idle"]],
                         ids=["plain", "native", "blocking"])
def test_record_many_samples(faults_spyc, python, slot_targets, tmp_path,
                             opts):
    """Records under faults, one after another as fast as spyc samples,
    until they have met MANY_SAMPLES samples (--native:
    MANY_NATIVE_SAMPLES): every one survives with a whole file of hot.py's
    own frames and leaves the target running."""
    hot = slot_targets["hot"]
    known = known_functions(hot)
    met, runs = 0, 0
    want = MANY_NATIVE_SAMPLES if "--native" in opts else MANY_SAMPLES
    while met < want:
        assert runs < MANY_RUNS_MAX, (
            "only %d samples in %d runs of %d s at %d Hz" % (
                met, runs, MANY_RUN_SECONDS, MANY_HZ))
        counts = str(tmp_path / "faults.txt")
        env, spec = faults_env(RATES, python, "many %s" % " ".join(opts),
                               runs, counts=counts)
        out = str(tmp_path / "many.json")
        res = faults_spyc.run(
            ["record", "--pid", hot.pid, "--rate", MANY_HZ,
             "--duration", MANY_RUN_SECONDS, "-o", out] + opts,
            env=env, timeout=TIMEOUT)
        describe = assert_survived(res, spec)
        summary = parse_summary(res.stderr, describe)
        got = injected(counts, describe)
        assert got["read"] + got["garbage"] + got["stale"] > 0, (
            "no read fault injected (%s)\n%s" % (got, describe))
        try:
            _, stacks = parse_speedscope(out)
        except ValueError as e:
            pytest.fail("invalid speedscope JSON (%s)\n%s" % (e, describe))
        check_stacks(stacks, summary, describe, known,
                     chain=hot.info["chain"], native="--native" in opts)
        assert_target_runs_on(hot, describe)
        met += summary.samples + summary.dropped
        runs += 1


def test_top_many_samples(faults_spyc, python, slot_targets, tmp_path):
    """top's sampler under faults until its snapshots add up to
    MANY_SAMPLES samples (samples/s over each one-second interval)."""
    target = slot_targets["hot"]
    env, spec = faults_env(RATES, python, "top many")
    code, text, describe = top_until_snapshots(
        faults_spyc, ["--pid", target.pid, "--rate", MANY_HZ, "--idle",
                      "--interval", 1], str(tmp_path / "top.txt"),
        MANY_TOP_SECONDS, timeout=MANY_TOP_SECONDS, env=env,
        until=lambda t: sum(
            float(h["samples/s"]) for h, _ in parse_plain(t, True))
        >= MANY_SAMPLES)
    describe = "SPYC_FAULTS=%s\n%s" % (spec, describe)
    assert code >= 0, "spyc top was killed by signal %d\n%s" % (-code,
                                                                 describe)
    assert code in (0, 1), describe
    snapshots = parse_plain(text, True)
    met = sum(float(h["samples/s"]) for h, _ in snapshots)
    assert met >= MANY_SAMPLES, "top sampled only %d\n%s" % (met, describe)
    check_rows(snapshots, known_functions(target), [target.info["chain"][-1]],
               describe)
    assert_target_runs_on(target, describe)


def test_top_plain(faults_spyc, python, slot_targets, tmp_path):
    target = slot_targets["states"]
    env, spec = faults_env(RATES, python, "top")
    code, text, describe = top_until_snapshots(
        faults_spyc, ["--pid", target.pid, "--rate", RATE_HZ, "--idle",
                      "--interval", 0.5], str(tmp_path / "top.txt"), 3,
        env=env)
    describe = "SPYC_FAULTS=%s\n%s" % (spec, describe)
    assert code >= 0, "spyc top was killed by signal %d\n%s" % (-code,
                                                                 describe)
    assert code in (0, 1), describe
    # A long name may run past the screen's edge: its row is cut there,
    # which is all the format promises of a long name.
    snapshots = parse_plain(text, allow_cut=True)
    assert snapshots, "no snapshot\n" + describe
    check_rows(snapshots, known_functions(target),
               [{"name": top[0], "file": top[1]}
                for top in thread_roles(target).values()], describe)
    assert_target_runs_on(target, describe)


def test_record_subprocesses(faults_spyc, python, targets, tmp_path):
    """--subprocesses under faults: a tree of three Python processes, each
    read through its own sampler; losses are counted per process."""
    tree = targets.start(python, "family.py", "{report}", "tree")
    summary, out, describe = record(
        faults_spyc, python, tree, tmp_path, "subprocesses", "out.json",
        "--subprocesses")
    _, stacks = parse_speedscope(out)
    check_stacks(stacks, summary, describe, known_functions(tree))
    # Only the workers run (the parent sleeps): each in tree_work's spin.
    total = sum(w for _, _, w in stacks)
    spinning = sum(w for _, frames, w in stacks
                   if [f[0] for f in map(frame_of, frames[-2:])] ==
                   ["tree_work", "spin"])
    assert spinning >= MIN_KEPT_CHAIN_SHARE * total, (
        "only %d of %d kept samples end in tree_work -> spin, where the "
        "workers spend their time\ntop stacks:\n%s\n%s" % (
            spinning, total, format_kept(stacks), describe))


# Stale reads, as often as a thread that moves on between two reads of a
# dump: the read of which task runs, and of a task.
CHURN_RATES = "stale=0.05"


@pytest.mark.slots(since=(3, 14))
def test_dump_async_waiting_at_await(faults_spyc, python, targets):
    """dump --async of tasks that take turns every few microseconds, under
    stale reads: a task read waiting whose coroutine runs (a later read
    than the one that said which task runs) is torn, never shown waiting
    at a line of its work.  The binary before showed 34 such tasks in 150
    dumps on 3.14 (at churn()'s loop, not its await)."""
    from test_async import check_churn_dumps
    t = targets.start(python, "async_churn.py", "{report}")
    env, _ = faults_env(CHURN_RATES, python, "churn")
    check_churn_dumps(faults_spyc, t, env)


@pytest.mark.slots(since=(3, 14))
def test_record_async(faults_spyc, python, targets, tmp_path):
    """--async (3.14+) under faults: task records read from the target's
    own lists, as torn as any other read."""
    target = targets.start(python, "async_busy.py", "{report}")
    summary, out, describe = record(
        faults_spyc, python, target, tmp_path, "async", "out.json",
        "--async")
    _, stacks = parse_speedscope(out)
    # The target's functions, asyncio's (a thread's own frames, where its
    # task is not read), and its tasks (a task is [name, "<task>"]).
    known = known_functions(target, ASYNCIO_MODULES)
    for name in ("main", "outer", "busy", "sleepy"):
        known[name] = set(known.get(name, ())) | set(["<task>"])
    check_stacks(stacks, summary, describe, known,
                 chain=[{"name": n, "file": f}
                        for n, f in target.info["running"]])


# test_native_threads_let_go: most ptrace calls fail, so that a thread
# seized and left running (its interrupt failed) is met at once.
LET_GO_RATES = "ptrace=0.3"
LET_GO_HZ = 20
LET_GO_SECONDS = 3
# A look between samples finds a thread of the target stopped by spyc
# only while a sample reads it (under a millisecond in 50): this share of
# the looks allows for a loaded machine.
MAX_TRACED_LOOKS = 0.25
# ... and the main thread, which spins, is in nearly every sample.
MIN_SAMPLED = 0.7


def test_native_threads_let_go(faults_spyc, any_python, targets, tmp_path):
    """--native under failing ptrace calls: every thread spyc seized is
    let go, even one whose interrupt failed (a tracee can be let go only
    once stopped; one seized and left running stays spyc's, and stops at
    its next signal with no one to let it go on).  Between samples no
    thread of the target (whose main thread takes a signal every 10 ms)
    is spyc's, and the spinning main thread is in nearly every sample.
    The binary before left both threads traced for the whole run and kept
    10 samples of 60."""
    t = targets.start(any_python, "alarms.py", "{report}")
    env, spec = faults_env(LET_GO_RATES, any_python, "let go")
    out = str(tmp_path / "out.txt")
    err_path = str(tmp_path / "stderr")
    with open(err_path, "w") as err:
        proc = faults_spyc.popen(
            ["record", "--native", "--pid", t.pid, "--rate", LET_GO_HZ,
             "--duration", LET_GO_SECONDS, "-o", out], env=env,
            stdout=subprocess.DEVNULL, stderr=err)
    looks, traced = 0, []
    try:
        while proc.poll() is None:
            now = task_status(t.pid)
            looks += 1
            if any(tracer == proc.pid for _, tracer in now.values()):
                traced.append(now)
            time.sleep(0.05)
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with open(err_path) as f:
        stderr = f.read()
    describe = "SPYC_FAULTS=%s\nexit %d\n%s" % (spec, proc.returncode,
                                                 stderr)
    assert proc.returncode in (0, 1), describe
    assert len(traced) <= MAX_TRACED_LOOKS * looks, (
        "%d of %d looks between samples found a thread of the target "
        "traced by spyc (%s)\n%s" % (len(traced), looks, traced[-1],
                                     describe))
    summary = parse_summary(stderr, describe)
    want = LET_GO_HZ * LET_GO_SECONDS
    assert summary.samples >= MIN_SAMPLED * want, (
        "%d samples of %d: the spinning main thread was left out\n%s" % (
            summary.samples, want, describe))
    assert_target_runs_on(t, describe)
