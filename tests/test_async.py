# SPDX-License-Identifier: MIT
"""Live tests of --async (CPython 3.14+): asyncio tasks seen from outside.

dump --async must show each task of tests/targets/async_tasks.py with the
coroutine chain and the awaiting tasks the target reports about itself
(asyncio.all_tasks(), each task's cr_await chain, get_stack() and
capture_call_graph()).  record --async must give a running task's samples
the stack of the tasks awaiting it, each under a '<task>' frame, as
tests/targets/async_busy.py says they should read.  On older Pythons
--async is refused with one clear line.
"""

import json
import os

import pytest

import pyfind

ASYNC_SINCE = (3, 14)


def old_python():
    """The newest supported CPython older than 3.14, or None."""
    found = [i for i in pyfind.discover() if i.supported and
             tuple(i.version_info[:2]) < ASYNC_SINCE]
    return max(found, key=lambda i: i.version_info) if found else None


def frames(entries):
    return [(f["name"], f["file"], f["line"]) for f in entries]


def spyc_tasks(doc):
    """{name: (task, thread native id)} from dump --async --json."""
    out = {}
    for th in doc["threads"]:
        for task in th["tasks"]:
            assert task["name"] not in out, "two tasks named %r" % task["name"]
            out[task["name"]] = (task, th["native_id"])
    return out


@pytest.mark.slots(since=ASYNC_SINCE)
def test_dump_async_json(spyc, python, targets):
    t = targets.start(python, "async_tasks.py")
    info = t.wait_report(settle=False)
    doc, res = spyc.dump_json(t.pid, extra=["--async"])
    assert doc["asyncio_found"] is True
    assert doc["tasks_of_exited_threads"] == []
    got = spyc_tasks(doc)
    want = dict((task["name"], task) for task in info["tasks"])
    assert sorted(got) == sorted(want), res.describe()
    for name, task in sorted(want.items()):
        mine, tid = got[name]
        assert tid == task["thread_native_id"], name
        assert mine["state"] == "waiting", name
        assert frames(mine["frames"]) == frames(task["frames"]), (
            "task %r: coroutine chain differs\n%s" % (name, res.describe()))
        # get_stack() gives the task's own coroutine: the outermost.
        assert frames(mine["frames"])[-1:] == frames(task["stack"]), name
        assert sorted(a["name"] for a in mine["awaited_by"]) == \
            task["awaited_by"], name


# Dumps of async_churn.py, and how many must be read whole.
CHURN_DUMPS = 40
CHURN_MIN_WHOLE = 20


def source_line(path, line):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (IOError, OSError):
        return None
    return lines[line - 1] if 0 < line <= len(lines) else None


@pytest.mark.slots(since=ASYNC_SINCE)
def test_dump_async_waiting_tasks_wait(spyc, python, targets):
    """Tasks that take turns every few microseconds, dumped without
    stopping them: a task dump says is waiting waits at an await (at a
    yield, in asyncio's own generators).  One whose coroutine was running
    when it was read (its thread moved on between the read of which task
    runs and of the task) is a torn read, never shown waiting at a line of
    its work."""
    t = targets.start(python, "async_churn.py")
    t.wait_report(settle=False)
    check_churn_dumps(spyc, t)


def check_churn_dumps(spyc, target, env=None):
    """CHURN_DUMPS dumps --async of async_churn.py: at least
    CHURN_MIN_WHOLE read whole, and in those every waiting task's
    innermost frame at an await or a yield."""
    bad, whole = [], 0
    for _ in range(CHURN_DUMPS):
        res = spyc.run(["dump", "--pid", target.pid, "--async", "--json"],
                       env=env)
        if res.returncode != 0:
            continue
        whole += 1
        for th in json.loads(res.stdout)["threads"]:
            for task in th["tasks"]:
                if task["state"] != "waiting" or not task["frames"]:
                    continue
                f = task["frames"][0]
                text = source_line(f["file"], f["line"])
                assert text is not None, (f, res.describe())
                if "await" not in text and "yield" not in text:
                    bad.append("%s: %s (%s:%d) %r" % (
                        task["name"], f["name"], f["file"], f["line"],
                        text.strip()))
    assert whole >= CHURN_MIN_WHOLE, (
        "only %d of %d dumps read whole" % (whole, CHURN_DUMPS))
    assert not bad, ("tasks shown waiting at a line that is no await, in "
                     "%d dumps:\n  %s" % (whole, "\n  ".join(bad[:10])))


@pytest.mark.slots(since=ASYNC_SINCE)
def test_dump_async_text(spyc, python, targets):
    t = targets.start(python, "async_tasks.py")
    t.wait_report(settle=False)
    res = spyc.run(["dump", "--pid", t.pid, "--async"])
    res.assert_ok()
    assert 'Task "worker-1" (0x' in res.stdout
    assert ': waiting, awaited by "waiter"\n' in res.stdout
    assert '  Task "other-thread" (0x' in res.stdout
    # Without --async, nothing changes.
    res = spyc.run(["dump", "--pid", t.pid])
    res.assert_ok()
    assert "Task " not in res.stdout


def read_folded(path):
    """[(frames root first as (name, file), count)]; file is '<task>' for a
    task, else the frame's file without its line."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            stack, count = line.rsplit(" ", 1)
            fr = []
            for part in stack.split(";"):
                name, rest = part.rsplit(" (", 1)
                fr.append((name, rest.rstrip(")").rsplit(":", 1)[0]
                           if rest != "<task>)" else "<task>"))
            out.append((fr, int(count)))
    return out


def same_stack(stack, want):
    return len(stack) == len(want) and all(
        n == wn and (f == wf or (f != "<task>" and wf.endswith("/" + f)))
        for (n, f), (wn, wf) in zip(stack, want))


@pytest.mark.slots(since=ASYNC_SINCE)
@pytest.mark.parametrize("idle", [False, True], ids=["running", "idle"])
def test_record_async(spyc, python, targets, tmp_path, idle):
    t = targets.start(python, "async_busy.py")
    info = t.wait_report(settle=False)
    out = str(tmp_path / "async.folded")
    args = ["record", "--pid", t.pid, "--async", "--duration", "2",
            "-o", out] + (["--idle"] if idle else [])
    res = spyc.run(args, timeout=30)
    res.assert_ok()
    stacks = read_folded(out)
    running = sum(c for s, c in stacks if same_stack(s, info["running"]))
    total = sum(c for s, c in stacks)
    # With --idle each sample also has a stack per waiting task: the
    # main task's and sleepy's.
    share = 0.25 if idle else 0.5
    assert running >= total * share and running > 0, (
        "the busy task's stack should hold most samples\n%s\n%s" % (
            open(out).read(), res.describe()))
    waiting = sum(c for s, c in stacks if same_stack(s, info["waiting"]))
    if idle:
        assert waiting > 0, open(out).read()
    else:
        assert waiting == 0 and not any(
            f == "<task>" and n == "main" for s, c in stacks for n, f in s)


@pytest.mark.slots(since=ASYNC_SINCE)
def test_async_speedscope(spyc, python, targets, tmp_path):
    t = targets.start(python, "async_busy.py")
    t.wait_report(settle=False)
    out = str(tmp_path / "async.json")
    spyc.run(["record", "--pid", t.pid, "--async", "--duration", "1",
              "-o", out], timeout=30).assert_ok()
    with open(out) as f:
        doc = json.load(f)
    names = [(fr["name"], fr.get("file")) for fr in doc["shared"]["frames"]]
    assert ("busy", "<task>") in names and ("outer", "<task>") in names


@pytest.mark.slots(since=ASYNC_SINCE)
def test_async_without_asyncio(spyc, python, targets):
    """A target that never imported asyncio: no tasks, and dump says so."""
    t = targets.start(python, "hot.py", 0, "{report}")
    t.wait_report(settle=False)
    res = spyc.run(["dump", "--pid", t.pid, "--async"])
    res.assert_ok()
    assert "No asyncio tasks" in res.stdout
    if python.version_info[:2] == (3, 14):
        # A lib-dynload module there: not mapped until imported.
        assert "has not imported asyncio" in res.stdout
    doc, _ = spyc.dump_json(t.pid, extra=["--async"])
    assert all(th["tasks"] == [] for th in doc["threads"])


def test_async_needs_314(spyc, targets, tmp_path):
    py = old_python()
    if py is None:
        pytest.skip("no CPython older than 3.14 found on this machine")
    t = targets.start(py, "hot.py", 0, "{report}")
    t.wait_report(settle=False)
    out = str(tmp_path / "never.json")
    for cmd in (["dump"], ["record", "-d", "1", "-o", out]):
        res = spyc.run(cmd + ["--pid", t.pid, "--async"])
        res.assert_error(2, "--async", "3.14")
    assert not os.path.exists(out)


def test_async_native_refused(spyc):
    res = spyc.run(["record", "--pid", "1", "--async", "--native"])
    res.assert_error(64, "--async", "--native")
