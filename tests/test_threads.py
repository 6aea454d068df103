# SPDX-License-Identifier: MIT
"""Thread states and the GIL, on every CPython slot.

tests/targets/states.py runs a thread blocked in time.sleep, one blocked on
a threading.Lock and one spinning in pure Python (and, in "gil" mode, one
working inside zlib.compress with the GIL released), and reports each
thread's ident and innermost frame as the interpreter sees it.
"""

import os
import re
import time

import pytest

from conftest import TARGETS, target_env
from conftest import spyc_json_threads  # noqa: F401 (documents the format)
from test_record import assert_exit_ok, parse_summary

# A share of CPU measured on a loaded machine can come out wrong by
# chance; a measurement that fails is taken again, at most this often.
GIL_MEASUREMENTS = 3


def folded(path):
    """[(frames root first, count)] of a folded file."""
    out = []
    with open(path) as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            out.append((stack.split(";"), int(count)))
    return out


def leaf_names(stacks):
    return set(frames[-1].split(" (")[0] for frames, _ in stacks)


def share(stacks, leaf):
    """Share of the samples whose innermost frame is function leaf."""
    total = sum(c for _, c in stacks)
    hit = sum(c for frames, c in stacks
              if frames[-1].split(" (")[0] == leaf)
    return float(hit) / total if total else 0.0


def frame_text(top):
    return "%s (%s:%d)" % (top[0], top[1], top[2])


def record(spyc, pid, path, *extra):
    res = spyc.run(["record", "--pid", pid, "--duration", 1,
                    "--full-filenames", "-o", path] + list(extra),
                   timeout=30)
    assert_exit_ok(res.returncode, parse_summary(res.stderr, res.describe()),
                   res.describe())
    return folded(path)


# Dumps test_dump_marks_states takes for one that finds the spinner
# running: now and then (seen on 3.10) it is caught
# while it hands the GIL over for a moment (a thread of the interpreter
# asked for it: the reporter ending, say) and waits to take it back.
STATE_DUMP_TRIES = 10


def test_dump_marks_states(spyc, python, targets):
    t = targets.start(python, "states.py", "{report}")
    roles = t.info["roles"]
    # Until the spinner runs, and holds the GIL where there is one: the
    # reporter thread takes the GIL from it for a moment after its
    # report is written, before it blocks (longer on a loaded machine).
    for _ in range(STATE_DUMP_TRIES):
        doc, res = spyc.dump_json(t.pid)
        by_ident = dict((th["thread_id"], th) for th in doc["threads"])
        spin = by_ident[roles["spinner"]["ident"]]
        if spin["state"] == "running" and (python.free_threaded or
                                           spin["holds_gil"]):
            break
        time.sleep(0.2)
    for role in ("sleeper", "locker"):
        th = by_ident[roles[role]["ident"]]
        assert th["state"] == "idle", (role, th)
        assert not th["holds_gil"], (role, th)
    spin = by_ident[roles["spinner"]["ident"]]
    assert spin["state"] == "running", spin
    assert doc["free_threaded"] == python.free_threaded, doc
    if python.free_threaded:
        # No GIL: no thread holds one, and none is said not to.
        assert all(th["holds_gil"] is None for th in doc["threads"]), doc
        spinning = ": running"
    else:
        # The only thread that wants the GIL never has to give it up.
        assert spin["holds_gil"], spin
        assert sum(1 for th in doc["threads"] if th["holds_gil"]) == 1
        spinning = ": running, holds the GIL"
    # The text form says the same.
    res = spyc.run(["dump", "--pid", t.pid])
    res.assert_ok()
    lines = res.stdout.splitlines()
    assert ("free-threaded, no GIL" in lines[1]) == python.free_threaded, \
        lines
    for role, want in (("sleeper", ": idle"), ("locker", ": idle"),
                       ("spinner", spinning)):
        header = [l for l in lines
                  if l.startswith("Thread 0x%x" % roles[role]["ident"])]
        assert len(header) == 1 and header[0].endswith(want), (role, lines)


def test_states_under_thread_churn(spyc, python, targets):
    """Threads that come and go while spyc looks (up to 3.10 it finds
    each thread's tid through glibc's struct pthread) leave the steady
    threads' states known."""
    t = targets.start(python, "states.py", "{report}", "churn")
    roles = t.info["roles"]
    for _ in range(10):
        doc, res = spyc.dump_json(t.pid)
        by_ident = dict((th["thread_id"], th) for th in doc["threads"])
        for role in ("sleeper", "locker"):
            th = by_ident[roles[role]["ident"]]
            assert th["state"] == "idle", (role, th)
        spin = by_ident[roles["spinner"]["ident"]]
        assert spin["state"] in ("running", "waiting for the GIL"), spin


def test_record_idle_filter(spyc, python, targets, tmp_path):
    t = targets.start(python, "states.py", "{report}")
    roles = t.info["roles"]
    busy = record(spyc, t.pid, str(tmp_path / "busy.txt"))
    # The blocked threads never show; the spinner is (nearly) all there is
    # (the main thread may wake for a moment).
    leaves = set(frames[-1] for frames, _ in busy)
    for role in ("sleeper", "locker"):
        assert frame_text(roles[role]["top"]) not in leaves, (role, busy)
    assert share(busy, "spinner") > 0.9, busy
    every = record(spyc, t.pid, str(tmp_path / "idle.txt"), "--idle")
    leaves = set(frames[-1] for frames, _ in every)
    # Idle threads show where they wait, exactly as they report it.
    for role in ("sleeper", "locker"):
        assert frame_text(roles[role]["top"]) in leaves, (role, leaves)
    assert "spinner" in leaf_names(every)


def busy_samples(spyc, pid, path):
    """Samples of the threads on a CPU, the reporter's last moments left
    out: the spinner's and the compressor's."""
    busy = record(spyc, pid, path)
    # The reporter may still be finishing when sampling starts: it is
    # on a CPU then, and rightly shown, but only for a moment.
    reporter = [(f, c) for f, c in busy
                if any(x.startswith("report (") for x in f)]
    assert sum(c for _, c in reporter) <= 0.05 * sum(c for _, c in busy)
    busy = [s for s in busy if s not in reporter]
    # Both work on a CPU: the filter below must have something to remove.
    assert leaf_names(busy) == {"spinner", "compressor"}, busy
    return busy


def gil_shares(spyc, pid, tmp_path, n):
    """Compressor's share of the busy samples without and with --gil, and
    the spinner's with it."""
    busy = busy_samples(spyc, pid, str(tmp_path / ("busy%d.txt" % n)))
    gil = record(spyc, pid, str(tmp_path / ("gil%d.txt" % n)), "--gil")
    return (share(busy, "compressor"), share(gil, "compressor"),
            share(gil, "spinner"))


def gil_holders(spyc, pid):
    holders = []
    for _ in range(10):
        doc, res = spyc.dump_json(pid)
        holders += [th["thread_id"] for th in doc["threads"]
                    if th["holds_gil"]]
    return holders


def test_record_gil(spyc, python, targets, tmp_path):
    t = targets.start(python, "states.py", "{report}", "gil")
    roles = t.info["roles"]
    if python.free_threaded:
        busy_samples(spyc, t.pid, str(tmp_path / "busy.txt"))
        # Nothing to filter by: --gil says so in one line, and fails.
        res = spyc.run(["record", "--pid", t.pid, "--duration", 1,
                        "--gil", "-o", str(tmp_path / "gil.txt")],
                       timeout=30)
        res.assert_error(2, "free-threaded", "no GIL", "--gil")
        assert not os.path.exists(str(tmp_path / "gil.txt"))
        doc, res = spyc.dump_json(t.pid)
        assert all(th["holds_gil"] is None for th in doc["threads"]), doc
        return
    spinner = roles["spinner"]["ident"]
    compressor = roles["compressor"]["ident"]
    # The compressor holds the GIL only between two compress calls.  How
    # much CPU it gets beside the spinner depends on the machine's load
    # (and a loaded machine may preempt it while it holds the GIL): it
    # must be seen working, and --gil must take away most of it.  Between
    # a release and the next take nobody holds the GIL; mostly the
    # spinner does.
    measured = []
    for n in range(GIL_MEASUREMENTS):
        busy_c, gil_c, gil_s = gil_shares(spyc, t.pid, tmp_path, n)
        holders = gil_holders(spyc, t.pid)
        assert set(holders) <= {spinner, compressor}, holders
        measured.append("compressor %.2f busy, %.2f --gil; spinner %.2f "
                        "--gil; spinner held the GIL in %d of 10 dumps" % (
                            busy_c, gil_c, gil_s, holders.count(spinner)))
        if (busy_c > 0.1 and gil_c < busy_c / 2 and gil_s > 0.9
                and holders.count(spinner) >= 3):
            return
    pytest.fail("--gil did not filter the compressor out in %d "
                "measurements:\n  %s" % (GIL_MEASUREMENTS,
                                          "\n  ".join(measured)))


def test_thread_names(spyc, python, targets, tmp_path):
    """Names that threading gave (non-ASCII too, whatever layout the
    Thread's attributes have), else the OS thread's own name (as native
    libraries set it), in dump, in speedscope's per-thread profiles,
    and in folded output with --threads."""
    t = targets.start(python, "names.py", "{report}")
    want = dict((int(k), v) for k, v in t.info["expected"].items())
    doc, res = spyc.dump_json(t.pid)
    names = dict((th["thread_id"], th["name"]) for th in doc["threads"])
    assert dict((i, names.get(i)) for i in want) == want, names
    # The process's first thread keeps the process's OS name, and
    # threading does not start it: it is called what threading calls it.
    assert names[t.info["main"]] == "MainThread", names
    assert doc["threads"][[th["thread_id"] for th in doc["threads"]].index(
        t.info["main"])]["native_id"] == t.pid, doc["threads"]
    res = spyc.run(["dump", "--pid", t.pid])
    res.assert_ok()
    for ident, name in want.items():
        assert "Thread 0x%x (tid " % ident in res.stdout, res.stdout
        # A thread counted as arrived may still be on its way into its
        # wait (a loaded machine widens that moment): idle, or running.
        assert re.search(r' "%s": (idle|running)' % re.escape(name),
                         res.stdout), (name, res.stdout)

    out = str(tmp_path / "named.txt")
    record(spyc, t.pid, out, "--idle", "--threads")
    labels = set(frames[0] for frames, _ in folded(out))
    for name in list(want.values()) + ["MainThread"]:
        assert any(l.startswith(name + " (tid ") for l in labels), labels
    assert "MainThread (tid %d)" % t.pid in labels, labels

    out = str(tmp_path / "named.json")
    res = spyc.run(["record", "--pid", t.pid, "--duration", 1, "--idle",
                    "-o", out], timeout=30)
    res.assert_ok()
    import json
    with open(out, encoding="utf-8") as f:
        profiles = [p["name"] for p in json.load(f)["profiles"]]
    for name in want.values():
        assert any(p.startswith(name + " (tid ") for p in profiles), profiles
    assert any(p.endswith("MainThread (tid %d)" % t.pid)
               for p in profiles), profiles


@pytest.mark.slots(since=(3, 13))
def test_thread_names_without_offset_tables(spyc, python, targets):
    """From _Py_DebugOffsets alone (3.13+) spyc cannot know how objects
    keep their attributes: OS names still show, threading's do not."""
    t = targets.start(python, "names.py", "{report}")
    env = dict(os.environ, SPYC_NO_OFFSET_TABLES="1")
    doc, res = spyc.dump_json(t.pid, env=env)
    # Said once, in the one notice.
    assert len(res.stderr_lines) == 1 and \
        "thread names" in res.stderr_lines[0], res.describe()
    names = dict((th["thread_id"], th["name"]) for th in doc["threads"])
    by_want = dict((v, names[int(k)])
                   for k, v in t.info["expected"].items())
    assert by_want["os-only"] == "os-only", names
    assert by_want["both-py"] == "both-os", names
    if python.version_info < (3, 14):
        assert by_want["crowded-40"] is None, names
    else:
        # 3.14's threading names each thread's OS thread as it starts
        # (Thread._bootstrap_inner), and again on a rename only from
        # the thread itself: the OS name shows, and a thread renamed
        # by another keeps the OS name it started with.
        assert by_want["crowded-40"] == "crowded-40", names
        assert by_want["renamed-later"] == "first-name", names


def test_threads_that_reuse_an_ident(spyc, python, tmp_path):
    """Threads that run one after another reuse each other's pthread_t
    (and often their thread state and frame memory): each is still a
    thread of its own, with its own name and tid."""
    out = str(tmp_path / "relay.txt")
    res = spyc.run(["record", "--threads", "-o", out, "--", python.path,
                    os.path.join(TARGETS, "relay.py"), 6, 0.3],
                   env=target_env(), timeout=60)
    res.assert_ok()
    labels = {}
    for frames, count in folded(out):
        labels[frames[0]] = labels.get(frames[0], 0) + count
    relay = {}
    for label in labels:
        m = re.match(r"^(relay-\d+) \(tid (\d+)\)$", label)
        if m:
            relay.setdefault(m.group(1), set()).add(int(m.group(2)))
    assert sorted(relay) == ["relay-%d" % i for i in range(6)], labels
    tids = [t for ts in relay.values() for t in ts]
    # One tid per thread, and no tid under two names.
    assert all(len(ts) == 1 for ts in relay.values()), labels
    assert len(set(tids)) == len(tids), labels
