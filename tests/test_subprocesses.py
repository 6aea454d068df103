# SPDX-License-Identifier: MIT
"""`spyc record --subprocesses`: the target's descendants, each under its
own pid, on every CPython slot.

tests/targets/family.py builds process trees (a multiprocessing Pool by
fork and by spawn, a fork that exits early, fork then exec, a shell that
stays between spyc's target and Python, a program that is not Python) in
which each member spends its time in a function of its own and says
which pid it is.
"""

import json
import os
import re
import signal
import subprocess
import time

import pytest

import browser
from conftest import TARGETS, target_env, wait_gone
from test_record import assert_exit_ok, html_data, parse_summary

FAMILY = os.path.join(TARGETS, "family.py")
PROCESS_RE = re.compile(r"^(?P<cmd>.*) \(pid (?P<pid>\d+)\)$")
SAMPLED_RE = re.compile(r"; (?P<n>\d+) process(?:es)? sampled\)$")
# Sampling rounds to wait for once spyc must have seen a process: it looks
# for new ones every 50 ms (5 rounds at the default 100 Hz), then samples
# each one every round.
ROUNDS = 50


def folded_by_pid(path):
    """{pid: [(frames root first, count)]} of a folded file written with
    --threads --subprocesses: every line is process;thread;frames."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            parts = stack.split(";")
            m = PROCESS_RE.match(parts[0])
            assert m, "root %r is not 'command line (pid N)'" % parts[0]
            # Up to 3.10 a thread's tid is found in glibc's struct
            # pthread, which a process may not show at every moment.
            assert re.search(r"\(tid \d+\)$|^thread 0x[0-9a-f]+$",
                             parts[1]), parts[1]
            out.setdefault(int(m.group("pid")), []).append(
                ([p.split(" (")[0] for p in parts[2:]], int(count)))
    return out


def samples_in(stacks, function):
    return sum(c for frames, c in stacks if function in frames)


def record_tree(spyc, args, tmp_path, name="tree.txt", timeout=120):
    out = str(tmp_path / name)
    res = spyc.run(["record", "--subprocesses", "--threads", "-o", out] +
                   [str(a) for a in args], env=target_env(), timeout=timeout)
    return out, res


def read_report(path):
    with open(path) as f:
        return json.load(f)


def sleeps(pid):
    """Voluntary context switches of pid's threads and of its
    descendants' (a wrapper script's spyc, as under valgrind, too)."""
    n = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for tid in tids:
        task = "/proc/%d/task/%s/" % (pid, tid)
        try:
            with open(task + "status") as f:
                n += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)",
                                   f.read(), re.M).group(1))
            with open(task + "children") as f:
                n += sum(sleeps(int(kid)) for kid in f.read().split())
        except (IOError, OSError, AttributeError):
            pass
    return n


def wait_rounds(proc, rounds, timeout=60):
    """Wait until spyc, started as proc, has taken rounds sampling rounds
    more: it sleeps once between two, so they are counted as its sleeps,
    however late a loaded machine runs them."""
    start = sleeps(proc.pid)
    deadline = time.time() + timeout
    while sleeps(proc.pid) - start < rounds:
        assert proc.poll() is None, "spyc ended (exit %s): %s" % (
            proc.returncode, proc.communicate()[1])
        if time.time() > deadline:
            pytest.fail("spyc took %d sampling rounds of %d in %.0f s" % (
                sleeps(proc.pid) - start, rounds, timeout))
        time.sleep(0.05)


def process_states(pids):
    """{pid: (state letter, TracerPid)} of the pids still there."""
    out = {}
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                text = f.read()
        except (IOError, OSError):
            continue
        state = re.search(r"^State:\s+(\S)", text, re.M).group(1)
        tracer = int(re.search(r"^TracerPid:\s+(\d+)", text, re.M).group(1))
        out[pid] = (state, tracer)
    return out


def test_brief_python_children_not_named_other(spyc, python, tmp_path):
    """Python children that live a few milliseconds are mostly gone while
    their interpreter starts: none may be named as not Python; those
    spyc saw but could not read are named as gone before it could tell."""
    report = str(tmp_path / "report.json")
    out, res = record_tree(spyc, ["--", python.path, FAMILY, report,
                                  "brief"], tmp_path)
    summary = parse_summary(res.stderr, res.describe())
    assert_exit_ok(res.returncode, summary, res.describe())
    brief = set(read_report(report)["roles"]["brief"])
    by_pid = folded_by_pid(out)
    assert samples_in(by_pid[read_report(report)["pid"]],
                      "parent_work") > 0, res.describe()

    def named(words):
        return set(int(x) for l in res.stderr_lines if words in l
                   for x in re.findall(r"\(pid (\d+)\)", l))
    assert not named("not Python") & brief, (
        "Python children named as not Python: %s\n%s" % (
            sorted(named("not Python") & brief), res.describe()))
    # The only processes of the tree that live so briefly.
    gone = named("exited before spyc could tell")
    assert gone <= brief and not gone & set(by_pid), res.describe()


def test_mixed_tree(spyc, python, tmp_path):
    """Fork (exiting early), fork+exec, a shell wrapper and a program that
    is not Python, launched: each Python member's own work shows under
    its own pid; the one that is not Python is named in one notice."""
    report = str(tmp_path / "report.json")
    out, res = record_tree(spyc, ["--", python.path, FAMILY, report,
                                  "mixed"], tmp_path)
    summary = parse_summary(res.stderr, res.describe())
    assert_exit_ok(res.returncode, summary, res.describe())
    info = read_report(report)
    roles = info["roles"]
    by_pid = folded_by_pid(out)
    for role, pid in sorted(roles.items()):
        assert samples_in(by_pid.get(pid, []), role + "_work") > 0, (
            role, pid, sorted(by_pid), res.describe())
        # A member's work shows under no other pid.
        for other, stacks in by_pid.items():
            if other != pid:
                assert not samples_in(stacks, role + "_work"), (role, other)
    assert samples_in(by_pid[info["pid"]], "parent_work") > 0, sorted(by_pid)
    # The parent, forked, execd and shell (the shell itself is not Python,
    # and the Python under it is another process).
    m = SAMPLED_RE.search(res.stderr_lines[-1])
    assert m and int(m.group("n")) >= 4, res.describe()
    notes = [l for l in res.stderr_lines if "not Python" in l]
    assert len(notes) == 1, res.describe()
    assert re.search(r"\bsleep 1 \(pid \d+\)", notes[0]), notes[0]
    assert re.search(r"\bsh -c .*\(pid \d+\)", notes[0]), notes[0]


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool(spyc, python, tmp_path, method):
    """A multiprocessing Pool: each worker that did a task shows
    pool_work under its own pid, in speedscope (a profile per process
    and thread) as in folded output."""
    report = str(tmp_path / "report.json")
    out = str(tmp_path / "pool.json")
    res = spyc.run(["record", "--subprocesses", "-o", out, "--",
                    python.path, FAMILY, report, "pool", method],
                   env=target_env(), timeout=120)
    assert_exit_ok(res.returncode, parse_summary(res.stderr,
                                                 res.describe()),
                   res.describe())
    workers = read_report(report)["roles"]["pool"]
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    names = doc["shared"]["frames"]
    seen = {}
    for p in doc["profiles"]:
        # (a tid up to 3.10 is best-effort: see folded_by_pid)
        m = re.match(r"^(?P<cmd>.*) \(pid (?P<pid>\d+)\): "
                     r"(?:.* \(tid \d+\)|thread 0x[0-9a-f]+)$", p["name"])
        assert m, "profile %r is not 'process (pid N): thread'" % p["name"]
        n = sum(1 for s in p["samples"]
                if any(names[i]["name"] == "pool_work" for i in s))
        pid = int(m.group("pid"))
        seen[pid] = seen.get(pid, 0) + n
    for pid in workers:
        assert seen.get(pid, 0) > 0, (pid, seen, res.describe())
    assert sum(seen.values()) == sum(seen[p] for p in workers if p in seen)
    # Every member is Python, and each one in the profile was sampled:
    # none may be named as not Python (they were, once they exited).
    profiled = set(int(m.group(1)) for m in
                   (re.search(r"\(pid (\d+)\):", p["name"])
                    for p in doc["profiles"]) if m)
    named = set(int(x) for l in res.stderr_lines if "not Python" in l
                for x in re.findall(r"\(pid (\d+)\)", l))
    assert not named & profiled, (
        "processes in the profile named as not Python: %s\n%s" % (
            sorted(named & profiled), res.describe()))


def test_attach_picks_up_children(spyc, python, targets, tmp_path):
    """--pid with --subprocesses: children that exist already and one
    that starts while spyc samples; stopped by SIGINT, spyc writes its
    profile and leaves no process of the tree stopped or traced."""
    t = targets.start(python, "family.py", "{report}", "tree")
    roles = t.info["roles"]
    out = str(tmp_path / "attach.txt")
    proc = spyc.popen(["record", "--subprocesses", "--threads", "--pid",
                       t.pid, "-o", out], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, universal_newlines=True)
    late = None
    deadline = time.time() + 60
    while late is None and time.time() < deadline:
        try:
            with open(t.report_path + ".late") as f:
                late = int(f.read() or 0) or None
        except (IOError, OSError, ValueError):
            time.sleep(0.05)
    assert late, "the late child never started"
    # It wrote its pid just before its work: spyc finds it within a few
    # rounds, then samples it in each.
    wait_rounds(proc, ROUNDS)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode in (0, 1), stderr
    assert "interrupted" in stderr.splitlines()[-1], stderr
    by_pid = folded_by_pid(out)
    for role, pid in list(roles.items()) + [("late", late)]:
        assert samples_in(by_pid.get(pid, []), role + "_work") > 0, (
            role, pid, sorted(by_pid), stderr)
    tree = [t.pid] + list(roles.values()) + [late]
    for pid, (state, tracer) in process_states(tree).items():
        assert state not in "tT" and tracer == 0, (pid, state, tracer)
    t.kill()
    for pid in tree:
        assert wait_gone(pid), "pid %d outlived its parent" % pid


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL", "duration"])
def test_tree_left_running(spyc, python, targets, tmp_path, how):
    """However spyc stops following a tree (SIGTERM, SIGKILL, the end of
    --duration), every process of it is left running: none stopped, none
    traced, and the tree lives on until its own end."""
    t = targets.start(python, "family.py", "{report}", "tree")
    roles = t.info["roles"]
    out = str(tmp_path / "tree.json")
    args = ["record", "--subprocesses", "--pid", t.pid, "-o", out]
    if how == "duration":
        args += ["--duration", "1.5"]
    proc = spyc.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      universal_newlines=True)
    if how != "duration":
        # Stopped while it samples the tree.
        wait_rounds(proc, ROUNDS)
        proc.send_signal(getattr(signal, how))
    _, stderr = proc.communicate(timeout=60)
    if how == "SIGKILL":
        assert proc.returncode == -signal.SIGKILL, stderr
        assert not os.path.exists(out), "a killed record left %s" % out
    else:
        assert proc.returncode in (0, 1), stderr
        with open(out, encoding="utf-8") as f:
            assert json.load(f)["profiles"], stderr
    tree = [t.pid] + list(roles.values())
    states = process_states(tree)
    assert t.pid in states, "the target did not outlive spyc: " + stderr
    for pid, (state, tracer) in states.items():
        assert state not in "tT" and tracer == 0, (pid, state, tracer,
                                                   stderr)
    t.kill()
    for pid in tree:
        assert wait_gone(pid), "pid %d outlived its parent" % pid


def test_refusals(spyc, any_python, tmp_path):
    """Options that need one interpreter's threads stopped are refused
    with --subprocesses, in one line, before anything runs."""
    marker = tmp_path / "ran"
    for opt in ("--native", "--blocking", "--async", "--gpu"):
        res = spyc.run(["record", "--subprocesses", opt, "-o",
                        str(tmp_path / "x.json"), "--", any_python.path,
                        "-c", "open(%r, 'w')" % str(marker)])
        res.assert_error(64, "--subprocesses", opt)
        assert not marker.exists()
    res = spyc.run(["record", "--subprocesses", "--pid", "999999999", "-o",
                    str(tmp_path / "x.json")])
    res.assert_error(2, "no process with pid 999999999")


def test_dump_tree(spyc, python, targets):
    """dump --subprocesses: one block per process of the tree, each with
    the stack its own work gives it, in text and in JSON."""
    t = targets.start(python, "family.py", "{report}", "tree")
    roles = t.info["roles"]
    res = spyc.run(["dump", "--subprocesses", "--pid", t.pid])
    res.assert_ok()
    blocks = {}
    for block in res.stdout.split("\nProcess ")[0:]:
        m = re.match(r"^(?:Process )?(\d+): ", block)
        assert m, res.stdout
        blocks[int(m.group(1))] = block
    assert t.pid in blocks, res.stdout
    for role, pid in roles.items():
        assert re.search(r"^    %s_work \(" % role, blocks.get(pid, ""),
                         re.M), (role, pid, res.stdout)
    doc, res = spyc.dump_json(t.pid, extra=["--subprocesses"])
    by_pid = dict((p["pid"], p) for p in doc["processes"])
    assert t.pid in by_pid, doc
    for role, pid in roles.items():
        names = [f["name"] for th in by_pid[pid]["threads"]
                 for f in th["frames"]]
        assert role + "_work" in names, (role, names)
        assert by_pid[pid]["python_version"] == python.version


def test_top_tree(spyc, python, targets, tmp_path):
    """top --subprocesses: the functions of every process of the tree
    in one table, and how many processes were read."""
    from conftest import top_until_snapshots
    from test_top import parse_plain
    t = targets.start(python, "family.py", "{report}", "tree")
    code, text, describe = top_until_snapshots(
        spyc, ["--subprocesses", "--pid", t.pid, "--interval", "0.5"],
        str(tmp_path / "top.txt"), 3)
    assert code == 0, describe
    header, rows = parse_plain(text)[-1]
    # The parent and its two workers; the late one may have started.
    assert int(header["processes"]) >= 3, describe
    assert header["python"] == python.version, describe
    names = set(r["name"] for r in rows)
    assert {"early_a_work", "early_b_work"} <= names, describe


def test_svg_process_then_thread(spyc, any_python, tmp_path):
    """An SVG flame graph with --threads: a box per process, and under it
    a box per thread named as the thread alone."""
    import xml.dom.minidom
    report = str(tmp_path / "report.json")
    out, res = record_tree(spyc, ["--", any_python.path, FAMILY, report,
                                  "pool", "fork"], tmp_path, "pool.svg")
    assert_exit_ok(res.returncode, parse_summary(res.stderr,
                                                 res.describe()),
                   res.describe())
    workers = read_report(report)["roles"]["pool"]
    titles = [t.firstChild.data.split(" \u2014 ")[0] for t in
              xml.dom.minidom.parse(out).getElementsByTagName("title")]
    processes = [t for t in titles if PROCESS_RE.match(t)]
    pids = set(int(PROCESS_RE.match(t).group("pid")) for t in processes)
    assert set(workers) <= pids, (workers, processes)
    threads = [t for t in titles if re.search(r"\(tid \d+\)$", t)]
    assert threads and not any("(pid " in t for t in threads), threads
    # A process's box comes right before its threads' (depth first).
    first = titles.index(processes[0])
    assert re.search(r"\(tid \d+\)$", titles[first + 1]), titles[:5]


def test_html_process_then_thread(spyc, any_python, tmp_path):
    """An HTML page of a process tree: each process once, each thread
    named alone and said to be of its process; in a browser, choosing a
    process draws the samples of its threads, and only those."""
    report = str(tmp_path / "report.json")
    out, res = record_tree(spyc, ["--", any_python.path, FAMILY, report,
                                  "pool", "fork"], tmp_path, "pool.html")
    assert_exit_ok(res.returncode, parse_summary(res.stderr,
                                                 res.describe()),
                   res.describe())
    workers = read_report(report)["roles"]["pool"]
    data = html_data(out)
    pids = [int(PROCESS_RE.match(p).group("pid")) for p in data["processes"]]
    assert len(set(pids)) == len(pids) and set(workers) <= set(pids), (
        workers, data["processes"])
    assert len(data["thread_process"]) == len(data["threads"])
    assert all(0 <= k < len(pids) for k in data["thread_process"]), data
    assert not any("(pid " in t for t in data["threads"]), data["threads"]
    k = pids.index(workers[0])
    want = sum(c for t, c, _ in data["stacks"]
               if data["thread_process"][t] == k)
    with browser.shown(out) as page:
        groups = page.evaluate(
            "document.querySelectorAll('#thread optgroup').length")
        assert groups == len(pids)
        page.select("thread", "p%d" % k)
        assert page.evaluate("spyc.root().n") == want > 0
        assert page.errors() == []
