# SPDX-License-Identifier: MIT
"""Live-test plumbing: build ./spyc once, one test slot per CPython, targets.

Fixtures:
  spyc        (session) builds ./spyc with make once; a Spyc runner.
              SPYC_TEST_BINARY=/path/to/spyc tests that binary instead,
              without building (e.g. an installed copy, or a wrapper script
              that runs spyc under valgrind).
  python      the slot's pyfind.Interpreter; tests using it are parametrized
              over pyfind.slots() (3.6 .. 3.15, the free-threaded 3.13t,
              3.14t and 3.15t, and "static") and skipped by name where the
              slot is empty.
              SPYC_TEST_SLOTS=newest keeps only the newest slot.
              SPYC_TEST_TIER=quick (make test) keeps every slot for the
              core files only (QUICK_EVERY_SLOT), the newest for the rest.
              SPYC_REQUIRE=slots,agent,tools (.ci/run sets it): the
              session fails at once when a slot is empty (a CPython not
              found, the shared folder's not unpacked), the GPU agent was not
              built or a tool the tests use is missing
              (REQUIRED_PROGRAMS, REQUIRED_FILES), instead of skipping the
              tests that need them.
  targets     (function) a TargetPool: start tests/targets/*.py, always
              killed at teardown.

A target writes what it knows about itself (pid, threads, stacks) to a JSON
report; tests compare spyc's output with that, never with fixed answers.
"""

import difflib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
TARGETS = os.path.join(TESTS, "targets")
SPYC = os.path.join(REPO, "spyc")
SPEEDSCOPE_SCHEMA = os.path.join(
    TESTS, "build", "node_modules", "speedscope", "dist", "release",
    "file-format-schema.json")

sys.path.insert(0, TESTS)
import pyfind  # noqa: E402

SLOTS = pyfind.slots()
# SPYC_TEST_SLOTS=newest: only the newest supported slot (make test-sanitize
# runs spyc under sanitizers, slower, on one version).
if os.environ.get("SPYC_TEST_SLOTS") == "newest":
    SLOTS = [s for s in SLOTS
             if s.interpreter is not None and s.name != "static" and
             not s.is_free_threaded][-1:]
# SPYC_TEST_TIER=quick (make test): the core paths on every slot (the
# files of QUICK_EVERY_SLOT), every other file's slot tests on the newest
# slot only, and the files of QUICK_LEFT_OUT not at all; make test-all
# (what CI runs) runs everything.
QUICK = os.environ.get("SPYC_TEST_TIER") == "quick"
# dump, and profiles against the truth the targets report: every version.
QUICK_EVERY_SLOT = set(["test_dump.py", "test_accuracy.py"])
# Tests of those files that compare two ways of reading over long runs
# (some 6 s a version): the quick tier runs them on the newest slot only.
QUICK_NEWEST_ONLY_TESTS = set([
    "test_blocking_does_not_lean_to_system_calls",
    "test_yield_from_chain_generators_kept",
    "test_plain_agrees_with_stopped_reads"])
# Of the files above, what the quick tier runs on spread_slots() only:
# (test, what its id holds); every slot still runs the profile against
# the CPU time each function measured (plain reads) and dump --blocking
# against the stopped target, the same tests' other modes, the stopped
# reads over fastgen.py's every workload and the generator and asyncio
# walks running where the walk differs; CPython's own sampler is
# compared on the shared build only.  spyc top's slot tests run on the
# newest slot and the newest free-threaded one.
QUICK_SPREAD_ONLY = set([
    ("test_shares_match_cpu_time", "-blocking]"),
    ("test_stopped_reads_never_torn", ""),
    ("test_plain_reads_generators", ""),
    ("test_asyncio_stacks_start_at_the_root", ""),
    ("test_agrees_with_cpython_sampler", "-static]")])
# Fault injection, hostile targets and stress: the long robustness runs.
QUICK_LEFT_OUT = set(["test_faults.py", "test_hostile.py", "test_stress.py",
                      "test_valgrind.py"])
# A test that takes a minute on its own, those that wait out slow
# sampling rates in real time, and slow runs (5-8 s) of one feature's
# edge: spyc built without CUPTI, the agent attached a second time or to
# a target whose main thread is blocked, a diff of merged and Chrome
# trace profiles, an ignored SIGTERM waited out.
LONG_TESTS = set(["test_result_unchanged_under_thousands_of_native_samples"])
QUICK_LEFT_OUT_TESTS = LONG_TESTS | set([
    "test_plain_slow_rate", "test_record_slow_and_fractional_rates",
    "test_build_without_cupti", "test_fake_gpu_attach_again",
    "test_agent_main_thread_blocked", "test_diff_merged_and_chrome",
    "test_kill_after_duration"])
# A static build is read as its shared twin once its interpreter is found
# (the symbols in the executable, not in libpython): where a shared build
# of the same version fills its slot too, the long robustness runs and
# comparisons, and the walk's own files (its frames against the truth),
# which test the reading, run on that one only, in every tier.  Every
# other test runs on the static slot as on the others.
STATIC_LEFT_OUT = QUICK_LEFT_OUT | set(["test_trust.py", "test_accuracy.py"])
STATIC_LEFT_OUT_TESTS = QUICK_NEWEST_ONLY_TESTS | LONG_TESTS
# The long robustness files (fault injection, hostile targets, stress),
# whose every test takes a few seconds a slot: on spread_slots() only, the
# layouts where the walk differs, in every tier.  So of the free-threaded
# builds only the newest runs them: each older one runs every other test
# (its own tables, its walks held to the truth), and the newest reads as
# they do with thread-local bytecode besides.  Keeps a whole run under an
# hour.
SPREAD_ONLY_FILES = set(["test_faults.py", "test_hostile.py",
                         "test_stress.py"])
# valgrind's run (make test-valgrind) checks every version's reading but
# the older free-threaded builds', read as the newest is.
FREE_THREADED_LEFT_OUT = set(["test_valgrind.py"])
# Long robustness runs and comparisons (5-23 s a slot) of other files: on
# spread_slots() only too.  Every slot runs every other test of their
# files.
SPREAD_ONLY_TESTS = set([
    "test_short_calls_counted",                     # a comparison, 5-23 s
    "test_only_sampled_threads_are_stopped",        # 3 modes, ptrace's
    "test_tree_left_running",                       # 3 ways, ptrace's
    "test_threads_both_formats",                    # 2 formats' labels
    "test_record_subprocesses",                     # a tree, under faults
    "test_record_many_samples",                     # 3 modes, under faults
    "test_stopped_by_someone_else",                 # hostile: SIGSTOP'd
    "test_stopped_launched", "test_launched",       # hostile programs
    "test_attached_native",
    "test_blocking_does_not_lean_to_system_calls"])  # a comparison
# What must be here (SPYC_REQUIRE): "slots", every test slot filled;
# "agent", spyc-agent.so built; "tools", every program and package the
# tests check spyc's output or run their targets with (scripts/install-deps
# installs them).  A developer's machine may lack any and sees the tests
# skipped by name; CI must not lose them silently.
REQUIRE = set(w for w in os.environ.get("SPYC_REQUIRE", "").split(",") if w)
AGENT = os.path.join(REPO, "spyc-agent.so")
REQUIRED_PROGRAMS = (
    "go", "node", "tmux", "zsh", "strace", "valgrind",  # readers, terminals
    "setcap",                                           # test_replaced
    "podman", "runc",                                   # test_containers
    "munged", "slurmctld", "slurmd", "srun", "scontrol",  # test_slurm
    "mpirun",                                           # test_mpi
    "chromium")                                         # test_svg_view
REQUIRED_FILES = (
    SPEEDSCOPE_SCHEMA,
    os.path.join(TESTS, "build", "node_modules", "@paulirish",
                 "trace_engine"))
if platform.machine() == "x86_64":
    # test_agent_glibc: Debian 11's glibc, to load the agent with.
    REQUIRED_FILES += (os.path.join(TESTS, "build", "glibc-2.31", "lib",
                                    "x86_64-linux-gnu",
                                    "ld-linux-x86-64.so.2"),)
# Generous: a target starting on a loaded 2-core machine can take long.
REPORT_TIMEOUT = 60.0

# spyc's frame for time in the cycle collector: innermost, over the stack
# that set a collection off (tests/test_gc.py).  Any target may collect.
GC_FRAME = "<GC>"


def without_gc(frames, name=lambda f: f[0]):
    """A stack's frames, root first, without a "<GC>" frame on top; name
    gives a frame's function name."""
    if frames and name(frames[-1]) == GC_FRAME:
        return frames[:-1]
    return frames


_private_basetemp = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # pytest's default temp dirs are shared by every pytest session of the
    # user and only the 3 newest are kept, so a session started next to
    # ours (a developer's, a benchmark's) can delete our files mid-test.
    # Unless --basetemp was given, use a directory no one else rotates.
    global _private_basetemp
    if not config.option.basetemp:
        _private_basetemp = tempfile.mkdtemp(prefix="spyc-tests-")
        config.option.basetemp = _private_basetemp
    config.addinivalue_line(
        "markers", "slots(since=(3, N), free_threaded=B, shared=B): run "
        "on the version slots that can have the feature only")


def pytest_sessionstart(session):
    unknown = REQUIRE - set(["slots", "agent", "tools"])
    if unknown:
        pytest.exit("SPYC_REQUIRE: unknown %s (known: slots, agent, tools)" %
                    ", ".join(sorted(unknown)), returncode=4)
    missing = []
    if "slots" in REQUIRE:
        missing += ["slot %s: %s" % (s.id, s.skip_reason)
                    for s in SLOTS if s.interpreter is None]
        # A version whose shared build is missing is filled by its static
        # build (the shared folder holds both of 3.15): its libpython
        # would go untested, and the static slot would be tested twice.
        missing += ["slot %s: only a static build of it was found (%s)" % (
                    s.id, s.interpreter.path) for s in SLOTS
                    if s.interpreter is not None and s.name != "static"
                    and not s.interpreter.shared]
    if "agent" in REQUIRE and not os.path.exists(AGENT):
        missing.append("%s was not built (no CUPTI headers found?)" % AGENT)
    if "tools" in REQUIRE:
        sbin = "/usr/sbin:/sbin:/usr/local/sbin"
        missing += ["%s: not found" % p for p in REQUIRED_PROGRAMS
                    if not (shutil.which(p) or shutil.which(p, path=sbin))]
        missing += ["%s: not found" % f for f in REQUIRED_FILES
                    if not os.path.exists(f)]
        import browser
        if browser.websocket is None:
            missing.append(browser.missing())
    if missing:
        pytest.exit("SPYC_REQUIRE=%s, but:\n  %s" % (
            ",".join(sorted(REQUIRE)), "\n  ".join(missing)), returncode=4)


def pytest_sessionfinish(session, exitstatus):
    if _private_basetemp and exitstatus == 0:
        shutil.rmtree(_private_basetemp, ignore_errors=True)


def seconds_per_file(stats):
    """{test file: seconds its tests took (setup, call, teardown)}."""
    per = {}
    for reports in stats.values():
        for r in reports:
            nodeid = getattr(r, "nodeid", "")
            seconds = getattr(r, "duration", None)
            if nodeid and seconds is not None:
                name = nodeid.split("::")[0]
                per[name] = per.get(name, 0.0) + seconds
    return per


def pytest_terminal_summary(terminalreporter, exitstatus):
    # Where a whole run's time goes, for keeping it short.
    per = seconds_per_file(terminalreporter.stats)
    if len(per) > 1:
        terminalreporter.write_sep("-", "seconds per test file")
        for name, seconds in sorted(per.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line("%8.1f  %s" % (seconds, name))
    if _private_basetemp and exitstatus != 0 and \
            os.path.isdir(_private_basetemp):
        terminalreporter.write_line(
            "spyc tests: outputs and target logs kept in %s" %
            _private_basetemp)


def newest_slot():
    """The newest filled slot with the GIL, shared: the quick tier's."""
    found = [s for s in SLOTS
             if s.interpreter is not None and s.name != "static" and
             not s.is_free_threaded]
    return found[-1] if found else None


def static_twin_filled(slot):
    """Whether slot is a filled static one whose version a filled shared
    slot has too."""
    if slot is None or slot.name != "static" or slot.interpreter is None:
        return False
    v = tuple(slot.interpreter.version_info[:3])
    return any(s.interpreter is not None and s.name != "static" and
               not s.is_free_threaded and
               tuple(s.interpreter.version_info[:3]) == v for s in SLOTS)


def newest_free_threaded_slot():
    """The newest filled free-threaded slot, or None."""
    found = [s for s in SLOTS
             if s.interpreter is not None and s.is_free_threaded]
    return found[-1] if found else None


def spread_slots():
    """The slots where the walk differs: the oldest and newest with the
    GIL, 3.10 (the last of frame objects), 3.11 (the first of data-stack
    chunks), 3.12 (C-stack shims) and the newest free-threaded one."""
    filled = [s for s in SLOTS if s.interpreter is not None and
              s.name != "static" and not s.is_free_threaded]
    picked = filled[:1] + filled[-1:] + [
        s for s in filled
        if tuple(s.interpreter.version_info[:2]) in ((3, 10), (3, 11),
                                                      (3, 12))]
    ft = newest_free_threaded_slot()
    return set(s.id for s in picked + ([ft] if ft else []))


def quick_drops(item, name, slot, newest, newest_ft, spread):
    """Whether the quick tier leaves item out."""
    every_slot = (name in QUICK_EVERY_SLOT and
                  item.originalname not in QUICK_NEWEST_ONLY_TESTS)
    spread_only = any(item.originalname == test and held in item.name
                      for test, held in QUICK_SPREAD_ONLY)
    params = getattr(item, "callspec", None)
    top_slot = params.params.get("top_python") if params else None
    return name in QUICK_LEFT_OUT or \
        item.originalname in QUICK_LEFT_OUT_TESTS or (
            slot is not None and not every_slot and slot is not newest) or (
            spread_only and (slot is None or slot.id not in spread)) or (
            top_slot is not None and top_slot is not newest and
            top_slot is not newest_ft)


def pytest_collection_modifyitems(config, items):
    newest = newest_slot()
    newest_ft = newest_free_threaded_slot()
    spread = spread_slots()
    keep, drop = [], []
    for item in items:
        name = os.path.basename(str(item.fspath))
        params = getattr(item, "callspec", None)
        slot = params.params.get("python") if params else None
        if (QUICK and quick_drops(item, name, slot, newest, newest_ft, spread)) or (
                (name in STATIC_LEFT_OUT or
                 item.originalname in STATIC_LEFT_OUT_TESTS) and
                static_twin_filled(slot)) or (
                name in FREE_THREADED_LEFT_OUT and slot is not None and
                slot.is_free_threaded and slot is not newest_ft) or (
                (item.originalname in SPREAD_ONLY_TESTS or
                 name in SPREAD_ONLY_FILES) and
                slot is not None and slot.id not in spread):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def slot_version(slot):
    """(major, minor) of what fills slot, else of its name; None for an
    empty static slot."""
    if slot.interpreter is not None:
        return tuple(slot.interpreter.version_info[:2])
    m = re.match(r"^(\d+)\.(\d+)t?$", slot.name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def slot_wanted(slot, marker):
    """Whether a test marked slots(since=(3, N), free_threaded=B,
    shared=B) runs on slot (free_threaded: only those builds, or only the
    others; shared=True: not on a static build, nor the static slot): a
    copy that could only ever skip is not made (the refusal on the
    others, where there is one, is a test of its own)."""
    if marker is None:
        return True
    since = marker.kwargs.get("since")
    if since is not None:
        v = slot_version(slot)
        if v is not None and v < tuple(since):
            return False
    shared = marker.kwargs.get("shared")
    if shared is not None:
        is_shared = slot.name != "static" and (
            slot.interpreter is None or slot.interpreter.shared)
        if shared != is_shared:
            return False
    ft = marker.kwargs.get("free_threaded")
    return ft is None or ft == slot.is_free_threaded


def pytest_generate_tests(metafunc):
    if "python" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("slots")
        slots = [s for s in SLOTS if slot_wanted(s, marker)]
        metafunc.parametrize("python", slots, ids=[s.id for s in slots],
                             indirect=True, scope="module")


@pytest.fixture(scope="module")
def python(request):
    """The slot's interpreter; skips by name when the slot is empty."""
    return pyfind.require(request.param)


def newest_python():
    """The newest supported interpreter, for tests of spyc's own behaviour
    that do not depend on the Python version; None if there is none."""
    found = [s.interpreter for s in SLOTS
             if s.interpreter is not None and s.name != "static" and
             not s.is_free_threaded]
    return found[-1] if found else None


@pytest.fixture
def any_python():
    """The newest interpreter, for tests of behaviour that does not depend
    on the Python version; skipped by name when there is none."""
    py = newest_python()
    if py is None:
        pytest.skip("no supported CPython (3.6-3.15) found on this machine")
    return py


def target_env(extra=None):
    """Environment for targets: no user PYTHON* settings, UTF-8 locale (so
    3.6 decodes the non-ASCII file name as UTF-8), no .pyc litter."""
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith("PYTHON") and not k.startswith("SPYC_"))
    env["LC_ALL"] = "C.UTF-8"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


def decode(data):
    # Invalid UTF-8 from spyc shows up as U+FFFD in diffs instead of
    # aborting the test with a UnicodeDecodeError.
    return data.decode("utf-8", errors="replace")


class SpycResult(object):
    def __init__(self, args, returncode, stdout, stderr):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def describe(self):
        return ("$ %s\nexit code: %s\n--- stdout ---\n%s\n--- stderr ---\n%s"
                % (" ".join(self.args), self.returncode, self.stdout[-4000:],
                   self.stderr[-4000:]))

    @property
    def stderr_lines(self):
        return [l for l in self.stderr.splitlines() if l.strip()]

    def assert_ok(self):
        assert self.returncode == 0, "spyc failed\n" + self.describe()

    def assert_error(self, code, *words):
        """Exit code `code`, exactly one stderr line `spyc: ...` that
        contains every word (case-insensitive); returns that line."""
        assert self.returncode == code, (
            "expected exit code %d\n%s" % (code, self.describe()))
        lines = self.stderr_lines
        assert len(lines) == 1, (
            "expected exactly one line on stderr\n" + self.describe())
        line = lines[0]
        assert line.startswith("spyc: "), (
            "error line must start with 'spyc: '\n" + self.describe())
        for w in words:
            assert w.lower() in line.lower(), (
                "error line should mention %r\n%s" % (w, self.describe()))
        return line


class Spyc(object):
    """Runs the ./spyc binary."""

    def __init__(self, path):
        self.path = path

    def run(self, args, env=None, timeout=60, exe=None, prefix=()):
        argv = list(prefix) + [exe or self.path] + [str(a) for a in args]
        try:
            res = subprocess.run(argv, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env,
                                 timeout=timeout)
        except subprocess.TimeoutExpired as e:
            pytest.fail("spyc did not finish in %d s: %s\nstderr: %s" % (
                timeout, " ".join(argv), decode(e.stderr or b"")))
        return SpycResult(argv, res.returncode, decode(res.stdout),
                          decode(res.stderr))

    def popen(self, args, env=None, **kw):
        return subprocess.Popen([self.path] + [str(a) for a in args],
                                env=env, **kw)

    def dump_json(self, pid, env=None, extra=()):
        """(parsed JSON, SpycResult) of `spyc dump --pid PID --json`."""
        res = self.run(["dump", "--pid", pid, "--json"] + list(extra),
                       env=env)
        res.assert_ok()
        try:
            doc = json.loads(res.stdout)
        except ValueError as e:
            pytest.fail("dump --json printed invalid JSON (%s)\n%s" % (
                e, res.describe()))
        return doc, res


@pytest.fixture(scope="session")
def spyc():
    """Build ./spyc once with make; fail every test clearly if that fails."""
    override = os.environ.get("SPYC_TEST_BINARY")
    if override:
        if not os.access(override, os.X_OK):
            pytest.fail("SPYC_TEST_BINARY=%s is not executable" % override,
                        pytrace=False)
        return Spyc(os.path.abspath(override))
    try:
        res = subprocess.run(["make"], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=900)
    except (OSError, subprocess.SubprocessError) as e:
        pytest.fail("could not run make: %s" % e, pytrace=False)
    out = decode(res.stdout)
    if res.returncode != 0:
        pytest.fail("building ./spyc with make failed (exit %d):\n%s" % (
            res.returncode, "\n".join(out.splitlines()[-40:])), pytrace=False)
    if not os.access(SPYC, os.X_OK):
        pytest.fail("make succeeded but %s is not there" % SPYC,
                    pytrace=False)
    return Spyc(SPYC)


def frame_line(f):
    return "%s (%s:%s)" % (f[0], f[1], f[2])


class Target(object):
    """A running target script and what it reported about itself."""

    def __init__(self, python, script, args, workdir, env=None, report=True,
                 stdin=None):
        self.python = python
        self.script = os.path.join(TARGETS, script)
        self.workdir = workdir
        self.report_path = (os.path.join(workdir, "report.json")
                            if report else None)
        self.stdout_path = os.path.join(workdir, "stdout")
        self.stderr_path = os.path.join(workdir, "stderr")
        argv = [python.path, self.script] + [str(a) for a in args]
        if self.report_path and "{report}" in argv:
            argv[argv.index("{report}")] = self.report_path
        elif self.report_path:
            argv.append(self.report_path)
        self.argv = argv
        with open(self.stdout_path, "wb") as out, \
                open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL,
                                         env=target_env(env), cwd=workdir)
        self.pid = self.proc.pid
        self.info = None

    def output(self):
        with open(self.stdout_path, "rb") as f:
            return decode(f.read())

    def errors(self):
        with open(self.stderr_path, "rb") as f:
            return decode(f.read())

    def wait_report(self, timeout=REPORT_TIMEOUT, settle=True):
        """Wait for the JSON report; fail with the target's stderr if it
        dies or is late.  With settle, also wait until the process has
        exactly the reported threads (the reporter thread is gone)."""
        deadline = time.time() + timeout
        while not os.path.exists(self.report_path):
            if self.proc.poll() is not None:
                pytest.fail("target %s exited with %s before reporting:\n%s"
                            % (" ".join(self.argv), self.proc.returncode,
                               self.errors()))
            if time.time() > deadline:
                pytest.fail("target %s wrote no report in %.0f s:\n%s" % (
                    " ".join(self.argv), timeout, self.errors()))
            time.sleep(0.02)
        with open(self.report_path) as f:
            self.info = json.load(f)
        assert self.info["pid"] == self.pid
        if settle and "threads" in self.info:
            want = len(self.info["threads"])
            task_dir = "/proc/%d/task" % self.pid
            while True:
                have = len(os.listdir(task_dir))
                if have == want:
                    break
                if time.time() > deadline:
                    pytest.fail("target %s reported %d threads but has %d "
                                "tasks" % (self.script, want, have))
                time.sleep(0.01)
        return self.info

    def expected_threads(self):
        """{ident: {"native_id", "name", "frames": [(name, file, line)]}}."""
        return dict((t["thread_id"], {
            "native_id": t["native_id"], "name": t["name"],
            "frames": [(f["name"], f["file"], f["line"])
                       for f in t["frames"]]})
            for t in self.info["threads"])

    def assert_dump_matches(self, actual, where="dump --json"):
        """actual: {ident: {"native_id", "frames"}} as spyc saw it.  Every
        thread must match what the target reported, frame by frame."""
        expected = self.expected_threads()
        assert sorted(actual) == sorted(expected), (
            "%s: thread idents differ\n  expected %s\n  spyc     %s" % (
                where, sorted(expected), sorted(actual)))
        problems = []
        for ident in sorted(expected):
            want, got = expected[ident], actual[ident]
            label = "thread %#x (%s)" % (ident, want["name"])
            if want["frames"] != got["frames"]:
                diff = difflib.unified_diff(
                    [frame_line(f) for f in want["frames"]],
                    [frame_line(f) for f in got["frames"]],
                    "target says", "spyc says", lineterm="", n=2)
                problems.append("%s: frames differ (innermost first)\n%s" % (
                    label, "\n".join(diff)))
            if (want["native_id"] is not None and
                    want["native_id"] != got["native_id"]):
                problems.append("%s: native_id: target says %s, spyc says %s"
                                % (label, want["native_id"],
                                   got["native_id"]))
        assert not problems, "%s of %s on %s:\n%s" % (
            where, os.path.basename(self.script), self.python.version,
            "\n".join(problems))

    def kill(self):
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class TargetPool(object):
    """Starts targets and kills every one of them on close()."""

    def __init__(self, tmp_factory):
        self.tmp_factory = tmp_factory
        self.started = []

    def start(self, python, script, *args, **kw):
        """Start a target; with report=True (default) wait for its report.
        The report path is appended to args, or replaces "{report}"."""
        wait = kw.pop("wait", True)
        workdir = str(self.tmp_factory.mktemp("target"))
        t = Target(python, script, args, workdir, **kw)
        self.started.append(t)
        if t.report_path and wait:
            t.wait_report()
        return t

    def close(self):
        for t in self.started:
            t.kill()


@pytest.fixture
def targets(tmp_path_factory):
    pool = TargetPool(tmp_path_factory)
    try:
        yield pool
    finally:
        pool.close()


def spyc_json_threads(doc):
    """spyc's dump --json as {ident: {"native_id", "frames"}}."""
    out = {}
    for t in doc["threads"]:
        out[t["thread_id"]] = {
            "native_id": t.get("native_id"),
            "frames": [(f["name"], f.get("file"), f.get("line"))
                       for f in t["frames"]]}
    return out


_THREAD_RE = re.compile(r"^Thread (0x[0-9a-fA-F]+)\b(.*)$")
_FRAME_RE = re.compile(r"^\s+(.+) \((.+):(\d+)\)$")
_TID_RE = re.compile(r"\btid (\d+)\b")


def parse_dump_text(text):
    """Parse `spyc dump` text: (header lines, {ident: {"native_id",
    "frames"}}).  Lines that are neither thread headers nor frames inside a
    thread are ignored (and returned in the header list when before the
    first thread)."""
    header, threads, cur = [], {}, None
    for line in text.splitlines():
        m = _THREAD_RE.match(line)
        if m:
            ident = int(m.group(1), 16)
            tid = _TID_RE.search(m.group(2))
            cur = threads.setdefault(ident, {
                "native_id": int(tid.group(1)) if tid else None,
                "frames": []})
            continue
        m = _FRAME_RE.match(line)
        if m and cur is not None:
            cur["frames"].append((m.group(1), m.group(2), int(m.group(3))))
        elif cur is None:
            header.append(line)
    return header, threads


def copy_spyc_for_other_users(spyc_path):
    """A copy of spyc that an unprivileged user can execute: pytest's
    tmp_path is mode 0700, so use a fresh mkdtemp chmod 755.  Returns the
    path; the caller removes its directory."""
    d = tempfile.mkdtemp(prefix="spyc-unpriv-")
    os.chmod(d, 0o755)
    dst = os.path.join(d, "spyc")
    shutil.copy2(spyc_path, dst)
    os.chmod(dst, 0o755)
    return dst


def wait_gone(pid, timeout=10.0):
    """True once pid no longer exists (or is a zombie)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


def send_signal(proc, sig):
    if proc.poll() is None:
        os.kill(proc.pid, sig)


def thread_states(pid):
    """{tid: state letter of /proc/PID/task/TID/stat} of a process."""
    states = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                states[tid] = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            pass
    return states


def assert_running(pid):
    """No thread of pid is left stopped (t or T) by spyc."""
    states = thread_states(pid)
    assert not [s for s in states.values() if s in ("t", "T")], states


def launch_in_unwritable_dir(spyc_path, args, python, marker):
    """Run `spyc ARGS -- PYTHON -c <make marker>` in a directory that takes
    no new files (sysfs refuses them, even to root).  Returns (exit code,
    the non-blank lines of stderr, stderr)."""
    proc = subprocess.run(
        [spyc_path] + list(args) + ["--", python.path, "-c",
                                    "open(%r, 'w').close()" % str(marker)],
        cwd="/sys", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=target_env(), timeout=30)
    err = proc.stderr.decode(errors="replace")
    return proc.returncode, [l for l in err.splitlines() if l.strip()], err


def top_until_snapshots(spyc, args, out_path, count, timeout=20, env=None,
                        until=None):
    """Run `spyc top ARGS` with its screen in out_path until it has shown
    count snapshots (or until(text of whole snapshots) is true, or it
    exited, or timeout seconds), then SIGTERM it.
    env: spyc's environment (default target_env()).
    Returns (exit code, out_path's text, a description for failures)."""
    with open(out_path, "wb") as out:
        proc = spyc.popen(["top"] + list(args), env=env or target_env(),
                          stdout=out, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + timeout
            while time.time() < deadline and proc.poll() is None:
                with open(out_path) as f:
                    text = f.read()
                if text.count("snapshot: ") >= count:
                    break
                # Whole snapshots: up to the last table's blank line.
                whole = text[:text.rfind("\n\n", 0, text.rfind(
                    "snapshot: ")) + 2] if "snapshot: " in text else ""
                if until and whole.count("snapshot: ") and until(whole):
                    break
                time.sleep(0.05)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    with open(out_path) as f:
        text = f.read()
    describe = "stdout:\n%s\nstderr:\n%s" % (text[-3000:],
                                             decode(err))
    return proc.returncode, text, describe
