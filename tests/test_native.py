# SPDX-License-Identifier: MIT
"""--native on every CPython slot: a test C extension (tests/cext), built
here from each interpreter's own headers, calls back into Python; spyc
must show Python -> the C function, by its real name -> the Python
callback, in that order, and leave the target exactly as it was."""

import os
import re
import signal
import subprocess
import time

import pytest

import bench
from conftest import TARGETS, REPO, assert_running, target_env
from test_record import parse_summary

CEXT = os.path.join(REPO, "tests", "cext", "spycext.c")
# Only inside the interpreter under test; works on 3.6.
CONFIG = ("import sysconfig; print(sysconfig.get_paths()['include']); "
          "print(sysconfig.get_config_var('EXT_SUFFIX'))")


def build_extension(python, outdir):
    """Build spycext for python into outdir; skip if it has no headers."""
    out = subprocess.run([python.path, "-c", CONFIG], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True, timeout=60)
    include, suffix = out.stdout.split("\n")[:2]
    if not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("CPython %s has no headers (%s) to build the test "
                    "extension" % (python.version, include))
    target = os.path.join(outdir, "spycext" + suffix)
    subprocess.run(["cc", "-shared", "-fPIC", "-g", "-O0", "-I", include,
                    "-o", target, CEXT], check=True, timeout=120)
    return outdir


@pytest.fixture
def ext_dir(python, tmp_path):
    return build_extension(python, str(tmp_path))


def chain_positions(names, want):
    """Index of each name of want in names, or None if one is missing."""
    try:
        return [names.index(w) for w in want]
    except ValueError:
        return None


def test_dump_native_order(spyc, python, targets, ext_dir):
    t = targets.start(python, "native_cb.py", ext_dir, "{report}")
    doc, res = spyc.dump_json(t.pid, extra=["--native"])
    main = [th for th in doc["threads"]
            if th["thread_id"] == t.info["thread_id"]]
    assert len(main) == 1, res.describe()
    main = main[0]
    assert main["merged"], res.describe()
    frames = main["frames"]
    # The Python frames are exactly what the interpreter says...
    py = [[f["name"], f["file"], f["line"]] for f in frames
          if not f.get("native")]
    assert py == t.info["frames"], res.describe()
    # ...and the C function sits between them, by its own name.
    names = [f["name"] for f in frames]
    where = chain_positions(names, ["inner", "spycext_call_back", "outer"])
    assert where is not None and where == sorted(where), names
    cfunc = frames[where[1]]
    assert cfunc["native"] and cfunc["file"].endswith("spycext.c"), cfunc
    # Native frames above the callback: how it blocks (time.sleep's C).
    assert any(f.get("native") for f in frames[:where[0]]), names


def test_plt_stubs_named(spyc, python, targets, ext_dir, tmp_path):
    """A thread stopped in a PLT stub (a C function calling spycext_next
    through its module's PLT, for ever) gets the stub named as the
    function it jumps to, "spycext_next@plt", where it was
    "spycext...so+0x1060": no native frame of the extension or of
    libpython is left unnamed."""
    t = targets.start(python, "plt_spin.py", ext_dir, "{report}")
    out = str(tmp_path / "plt.txt")
    # About 10% of the samples are in the stub: 500 Hz leaves no chance
    # of none in a second.
    res = spyc.run(["record", "--native", "--pid", t.pid, "--duration", 1,
                    "--rate", 500, "--format", "folded", "-o", out],
                   timeout=60)
    res.assert_ok()
    with open(out) as f:
        folded = f.read()
    unnamed = re.findall(r"(?:spycext|libpython)[\w.-]*\+0x[0-9a-f]+",
                         folded)
    assert not unnamed, (sorted(set(unnamed)), res.describe())
    stacks = [line.rsplit(" ", 1) for line in folded.splitlines()]
    in_stub = sum(int(n) for s, n in stacks
                  if s.split(";")[-1].startswith("spycext_next@plt"))
    assert in_stub > 0, (folded, res.describe())


def test_record_native_order(spyc, python, targets, ext_dir, tmp_path):
    t = targets.start(python, "native_cb.py", ext_dir, "{report}", "spin")
    out = str(tmp_path / "native.txt")
    res = spyc.run(["record", "--native", "--pid", t.pid, "--duration", 1,
                    "-o", out], timeout=60)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe(), strict=True)
    assert summary.unmerged == 0, res.describe()
    total = hit = 0
    with open(out) as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            names = [fr.split(" (")[0] for fr in stack.split(";")]
            total += int(count)
            where = chain_positions(
                names, ["outer", "spycext_call_back", "inner"])
            if where is not None and where == sorted(where):
                hit += int(count)
    assert total > 0 and hit >= 0.95 * total, (hit, total)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_sigkill_never_leaves_target_stopped(spyc, any_python, targets,
                                             tmp_path):
    """SIGKILL spyc while it samples --native at a high rate, many times:
    the target must never be left stopped (state t/T) and keeps running."""
    t = targets.start(any_python, "states.py", "{report}")
    for i in range(20):
        proc = spyc.popen(["record", "--native", "--rate", "2000",
                           "--pid", t.pid, "-o",
                           str(tmp_path / ("k%d.txt" % i))])
        time.sleep(0.05 + 0.013 * i)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(0.2)
    assert_running(t.pid)
    before = cpu_ticks(t.pid)
    time.sleep(0.5)
    assert cpu_ticks(t.pid) > before, "the target no longer runs"


def test_result_unchanged_under_thousands_of_native_samples(spyc, any_python,
                                                            tmp_path):
    """--native at 400 Hz for the whole run (about 9 s here, some 3000
    samples), each sample a ptrace stop and a native unwind of every
    thread: the program computes exactly what it computes unprofiled."""
    script = os.path.join(TARGETS, "churn.py")
    rounds = "600"
    plain = subprocess.run([any_python.path, script, rounds],
                           stdout=subprocess.PIPE, env=target_env(),
                           universal_newlines=True, timeout=600)
    assert plain.returncode == 0
    out = str(tmp_path / "native.txt")
    res = spyc.run(["record", "--native", "--rate", "400", "--duration",
                    "120", "-o", out, "--", any_python.path, script, rounds],
                   env=target_env(), timeout=900)
    assert res.returncode in (0, 1), res.describe()
    assert res.stdout == plain.stdout
    summary = parse_summary(res.stderr, res.describe())
    assert summary.samples >= 1000, res.describe()


def context_switches(pid):
    """{thread name: voluntary + involuntary context switches so far}."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                out[name] = sum(int(l.split()[1]) for l in f
                                if "ctxt_switches" in l)
        except OSError:
            pass
    return out


def test_only_sampled_threads_are_stopped(spyc, python, targets, tmp_path):
    """--native and --blocking stop the threads they sample and no other:
    a blocked thread that ptrace stopped would wake (a context switch)
    for every sample; left alone it does not wake at all.  --blocking
    stops the sampled threads only in a sample where a read tore, which
    a blocked thread's never does: with --idle, blocked threads are
    stopped in those samples only, not in every one."""
    t = targets.start(python, "states.py", "{report}")
    idle = ("sleeper", "locker")

    def woken(*options):
        before = context_switches(t.pid)
        res = spyc.run(["record", "--pid", t.pid, "--rate", 500,
                        "--duration", 1, "-o",
                        str(tmp_path / "out.txt")] + list(options),
                       timeout=30)
        res.assert_ok()
        after = context_switches(t.pid)
        return dict((n, after[n] - before[n]) for n in idle)

    assert woken("--native") == {"sleeper": 0, "locker": 0}
    assert woken("--blocking") == {"sleeper": 0, "locker": 0}
    # With --idle they are sampled, so stopped: the measure sees it.
    assert min(woken("--native", "--idle").values()) >= 50
    assert max(woken("--blocking", "--idle").values()) < 50
    # dump stops every thread only when asked to.
    for options, stopped in (([], False), (["--blocking"], True)):
        before = context_switches(t.pid)
        spyc.run(["dump", "--pid", t.pid] + options).assert_ok()
        after = context_switches(t.pid)
        assert all((after[n] > before[n]) == stopped for n in idle), (
            options, before, after)
    assert_running(t.pid)


def test_only_sampled_threads_are_read_again(spyc, python, targets,
                                             tmp_path):
    """--native and --blocking read again, while they are stopped, the
    Python stacks of the threads they stopped, and no other: on states.py
    (one thread running, three blocked) each sample walks two stacks, the
    running thread's to find it and again once stopped.  Reading every
    thread again made five a sample."""
    t = targets.start(python, "states.py", "{report}")
    # (and its reporter, for a moment)
    threads = len(os.listdir("/proc/%d/task" % t.pid))
    assert threads >= 4, "states.py has %d threads, not 4" % threads
    for option in ("--native", "--blocking"):
        res = spyc.run(["record", "--pid", t.pid, "--rate", 200,
                        "--duration", 1, option, "-o",
                        str(tmp_path / "out.txt")],
                       env=target_env({"SPYC_STATS": "1"}), timeout=30)
        res.assert_ok()
        summary = bench.SUMMARY_RE.search(res.stderr)
        stats = bench.STATS_RE.search(res.stderr)
        assert summary and stats and stats.group(7), res.describe()
        samples, dropped = int(summary.group(1)), int(summary.group(2))
        walked = int(stats.group(7))
        assert samples > 0, res.describe()
        # A dropped read walked too, once or twice; the first read may
        # walk every thread (before their states are known).
        assert samples <= walked <= 2 * (samples + dropped) + threads, (
            "%s: %d stacks walked in %d samples (%d dropped)\n%s"
            % (option, walked, samples, dropped, res.describe()))
        # What was read again is the running thread's stack, and no
        # blocked one: a read again that left out the wrong thread
        # would lose it from the profile.
        counts = {}
        with open(str(tmp_path / "out.txt"), encoding="utf-8") as f:
            for line in f:
                stack, count = line.rstrip("\n").rsplit(" ", 1)
                for role in ("spinner", "sleeper", "locker"):
                    if role + " (" in stack:
                        counts[role] = counts.get(role, 0) + int(count)
        assert counts.get("spinner", 0) >= samples // 2, (option, counts,
                                                          res.describe())
        assert "sleeper" not in counts and "locker" not in counts, (
            option, counts)
    assert_running(t.pid)

