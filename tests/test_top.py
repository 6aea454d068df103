# SPDX-License-Identifier: MIT
"""`spyc top`, on screen (under tmux) and as plain-text snapshots.

The screen tests run spyc top in a detached tmux server of their own (a
private socket per test, killed at the end), type keys with send-keys and
read the screen with capture-pane.  The targets say what spyc should show:
hot.py spends ~all its time in hot(); nested.py's outer() spends 30% in
its own loop and 70% in inner(), so own and total time order them
differently.  The screen's first row is compared with what the target
reports, never with a fixed name.

Top's code does not depend on the Python version beyond what record and
dump already test on every slot, so these run on two interpreters only:
the newest found and one older than 3.11 (whose frames are laid out the
old way).  Each is skipped by name when missing.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid

import pytest

import pyfind
from conftest import (SLOTS, launch_in_unwritable_dir, target_env,
                      top_until_snapshots, wait_gone)

SCREEN_TIMEOUT = 20.0
# How long plain-text top may take to show a snapshot a test waits for: a
# loaded machine may start the target or spyc seconds late.
SNAPSHOT_TIMEOUT = 30.0
# The plain-text format, as documented in spyc(1).
PLAIN_KEYS = ["snapshot", "time", "pid", "command", "python", "threads",
              "samples/s", "idle", "gil", "errors", "view"]
# In launch mode, where the program's output goes comes after its command.
LAUNCH_PLAIN_KEYS = PLAIN_KEYS[:4] + ["output"] + PLAIN_KEYS[4:]
# With --subprocesses, how many Python processes were read follows python.
TREE_PLAIN_KEYS = [keys[:keys.index("python") + 1] + ["processes"] +
                   keys[keys.index("python") + 1:]
                   for keys in (PLAIN_KEYS, LAUNCH_PLAIN_KEYS)]
LAUNCHED = os.path.join(os.path.dirname(__file__), "targets", "launched.py")
COLUMNS_RE = re.compile(r"^\s*%OWN\s+%TOTAL\s+OWNTIME\s+TOTALTIME\s+"
                        r"(?:THREAD\s+)?FUNCTION\s*$")
ROW_RE = re.compile(
    r"^\s*(?P<own>\d+\.\d)\s+(?P<total>\d+\.\d)"
    r"\s+(?P<own_s>\d+(?:\.\d+)?)s\s+(?P<total_s>\d+(?:\.\d+)?)s"
    r"\s+(?:(?P<thread>tid \d+|0x[0-9a-f]+|MainThread)\s+)?"
    r"(?P<function>\S.*?)\s*$")
FUNCTION_RE = re.compile(r"^(?P<name>.+?) \((?P<file>.*):(?P<line>\d+)\)$")
# A native row: "name (file:line) [native]", "name (file) [native]" where
# DWARF gives no line, "name [native]" where it gives nothing.
NATIVE_FUNCTION_RE = re.compile(
    r"^(?P<name>.+?)(?: \((?P<file>.+?)(?::(?P<line>\d+))?\))? \[native\]$")
# The stand-in root of a stack cut at --max-depth, and the frame of a
# thread running the cycle collector: no file, no line.
CUT_FUNCTION_RE = re.compile(
    r"^(?P<name>\[\d+ frames? not read\]|<GC>)$")


def _top_slots():
    """The newest interpreter's slot (with the GIL), the oldest found
    before 3.11, and the free-threaded slots spyc supports."""
    slots = [s for s in SLOTS if s.name != "static"]
    found = [s for s in slots if s.interpreter is not None and
             not s.is_free_threaded]
    newest = found[-1] if found else pyfind.Slot("newest", None)
    old = [s for s in found if s.interpreter.version_info[:2] < (3, 11)]
    old = old[0] if old else pyfind.Slot("pre-3.11", None)
    free = [s for s in slots if s.is_free_threaded]
    return ([newest] if old is newest else [newest, old]) + free


TOP_SLOTS = _top_slots()


@pytest.fixture(params=TOP_SLOTS, ids=[s.id for s in TOP_SLOTS])
def top_python(request):
    return pyfind.require(request.param)


@pytest.fixture
def tmux(tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not found (scripts/install-deps installs it)")
    sessions = []

    def start(argv, width=120, height=40, cwd=None):
        t = Tmux(tmp_path, width, height)
        sessions.append(t)
        t.start(argv, cwd)
        return t
    try:
        yield start
    finally:
        for t in sessions:
            t.kill()


class Tmux(object):
    """One detached tmux server running one command in a pane; the
    command's exit status lands in a file, then the pane idles so that
    it can still be read."""

    def __init__(self, tmp_path, width, height):
        self.socket = "spyc-top-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        self.width = width
        self.height = height
        self.status_path = str(tmp_path / ("status-" + self.socket))
        self.env = target_env()
        self.env.pop("TMUX", None)
        self.env["TERM"] = os.environ.get("TERM") or "xterm"

    def tmux(self, *args, **kw):
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null"] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, env=self.env, timeout=20, **kw)

    def start(self, argv, cwd=None):
        # A Ctrl-C reaches the whole foreground group, the shell too: the
        # trap keeps it alive to record spyc's status (and, unlike an
        # ignored signal, is not inherited).
        cmd = "trap : INT; %s; echo $? > %s; exec sleep 600" % (
            " ".join(shlex.quote(str(a)) for a in argv),
            shlex.quote(self.status_path))
        if cwd:
            cmd = "cd %s && %s" % (shlex.quote(str(cwd)), cmd)
        res = self.tmux("new-session", "-d", "-x", str(self.width),
                        "-y", str(self.height), cmd)
        assert res.returncode == 0, "tmux new-session failed: %s" % (
            res.stderr)

    def screen(self):
        res = self.tmux("capture-pane", "-p")
        assert res.returncode == 0, res.stderr
        return res.stdout

    def display(self, fmt):
        return self.tmux("display", "-p", fmt).stdout.strip()

    def keys(self, *keys):
        res = self.tmux("send-keys", *keys)
        assert res.returncode == 0, res.stderr

    def resize(self, width, height):
        res = self.tmux("resize-window", "-x", str(width), "-y",
                        str(height))
        assert res.returncode == 0, res.stderr

    def wait_screen(self, what, predicate, timeout=SCREEN_TIMEOUT):
        """Poll the screen until predicate(Screen) is true; returns it."""
        deadline = time.time() + timeout
        while True:
            s = Screen(self.screen())
            if predicate(s):
                return s
            if time.time() > deadline:
                pytest.fail("the screen never showed %s in %.0f s; it "
                            "shows:\n%s\nstatus: %s" % (
                                what, timeout, s.text, self.status()))
            time.sleep(0.1)

    def status(self):
        """spyc's exit status once it has ended, else None."""
        try:
            with open(self.status_path) as f:
                text = f.read().strip()
        except OSError:
            return None
        return int(text) if text else None

    def wait_status(self, timeout=SCREEN_TIMEOUT):
        deadline = time.time() + timeout
        while self.status() is None:
            if time.time() > deadline:
                pytest.fail("spyc top did not exit in %.0f s; the screen "
                            "shows:\n%s" % (timeout, self.screen()))
            time.sleep(0.05)
        return self.status()

    def pane_children(self):
        """Pids of the processes the pane's shell started."""
        shell = int(self.display("#{pane_pid}"))
        kids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == shell:
                kids.append(int(d))
        return kids

    def kill(self):
        try:
            self.tmux("kill-server")
        except (OSError, subprocess.SubprocessError):
            pass


class Screen(object):
    """A captured screen of spyc top: header lines, then the table."""

    def __init__(self, text):
        self.text = text
        self.lines = text.split("\n")
        self.rows = []
        self.columns_at = None
        for i, line in enumerate(self.lines):
            if COLUMNS_RE.match(line):
                self.columns_at = i
                break
        if self.columns_at is None:
            return
        for line in self.lines[self.columns_at + 1:]:
            m = ROW_RE.match(line)
            if not m:
                break
            self.rows.append(parse_row(m))

    def names(self):
        return [r["name"] for r in self.rows]

    def header_line(self, prefix):
        for line in self.lines[:self.columns_at or len(self.lines)]:
            if line.startswith(prefix):
                return line
        return None


def parse_row(m):
    """A table row's fields; "whole" is false for a row cut at the
    screen's edge, "native" true for a native frame's."""
    row = m.groupdict()
    row["native"] = False
    row["whole"] = True
    f = NATIVE_FUNCTION_RE.match(row["function"])
    if f:
        row["native"] = True
    else:
        f = FUNCTION_RE.match(row["function"]) or CUT_FUNCTION_RE.match(
            row["function"])
    if f:
        row.update(f.groupdict())
        row.setdefault("file", None)
        row.setdefault("line", None)
        if row["line"] is not None:
            row["line"] = int(row["line"])
    else:
        # Cut at the screen's edge: the name comes first.
        row["name"] = row["function"].split(" (", 1)[0]
        row["file"] = row["line"] = None
        row["whole"] = False
    for k in ("own", "total", "own_s", "total_s"):
        row[k] = float(row[k])
    return row


def file_matches(shown, real):
    """Top shows file names shortened, and on a narrow screen elided at
    the front ("...ets/hot.py")."""
    if shown is None:
        return True
    if shown.startswith("..."):
        return real.endswith(shown[3:])
    return real == shown or real.endswith("/" + shown)


def top_argv(spyc, *args):
    return [spyc.path, "top"] + [str(a) for a in args]


def check_first_row(screen, chain_entry, where):
    assert screen.rows, "%s: no rows:\n%s" % (where, screen.text)
    row = screen.rows[0]
    assert row["name"] == chain_entry["name"], (
        "%s: first row should be %s:\n%s" % (
            where, chain_entry["name"], screen.text))
    assert file_matches(row["file"], chain_entry["file"]), (
        "%s: first row's file should be %s:\n%s" % (
            where, chain_entry["file"], screen.text))


def check_header(screen, info, where):
    top = screen.lines[0]
    assert re.search(r"\bpid %d\b" % info["pid"], top), (
        "%s: the first line should give the pid %d:\n%s" % (
            where, info["pid"], screen.text))
    assert screen.header_line("Python %s " % info["python_version"]), (
        "%s: a header line should start with 'Python %s':\n%s" % (
            where, info["python_version"], screen.text))


# --- on screen ---

def test_screen_shows_hot_function(spyc, targets, top_python, tmux):
    t = targets.start(top_python, "hot.py", 0)
    hot = t.info["chain"][-1]
    term = tmux(top_argv(spyc, "--pid", t.pid, "--interval", 0.2))
    s = term.wait_screen("%s first" % hot["name"],
                         lambda s: s.rows and s.rows[0]["name"] ==
                         hot["name"])
    check_header(s, t.info, "120x40")
    check_first_row(s, hot, "120x40")
    assert s.rows[0]["own"] > 50, s.text
    # Its callers are on the stack as often, and never running.
    for caller in t.info["chain"][:-1]:
        row = [r for r in s.rows if r["name"] == caller["name"]]
        assert row and row[0]["own"] < s.rows[0]["own"], (
            "%s should be a row below %s:\n%s" % (
                caller["name"], hot["name"], s.text))
    assert term.display("#{alternate_on}") == "1", (
        "spyc top should draw on the alternate screen")
    term.keys("q")
    assert term.wait_status() == 0
    assert term.display("#{alternate_on}") == "0", (
        "the terminal was left on the alternate screen:\n" + term.screen())
    assert t.proc.poll() is None, "quitting top must not stop the target"


def test_per_thread_rows_show_names(spyc, targets, top_python, tmux):
    """In the per-thread view a thread shows its name (threading's, else
    its OS thread's), cut to the column; a thread with none its tid."""
    t = targets.start(top_python, "names.py", "{report}")
    names = ["both-py", "os-only", "crowded-40", "materialized-d",
             "renamed-later"]
    term = tmux(top_argv(spyc, "--pid", t.pid, "--idle", "--interval", 0.2))
    term.wait_screen("rows", lambda s: s.rows)
    term.keys("t")
    s = term.wait_screen(
        "a row for each named thread",
        lambda s: all(re.search(r"\s%s\s" % n, s.text) for n in names))
    # "plain-ŝpyc-名" takes 13 of the 14 columns (名 takes two): it
    # shows whole, never cut inside a character.
    assert "plain-" not in s.text or "plain-\u015dpyc-\u540d" in s.text, (
        s.text)
    term.keys("q")
    assert term.wait_status() == 0


def test_sort_keys_change_order(spyc, targets, top_python, tmux):
    t = targets.start(top_python, "nested.py", 0)
    chain = t.info["chain"]
    inner, outer = chain[-1]["name"], chain[-2]["name"]
    callers = set(c["name"] for c in chain[:-1])
    term = tmux(top_argv(spyc, "--pid", t.pid, "--interval", 0.2))

    s = term.wait_screen("%s first by own time" % inner,
                         lambda s: s.names()[:2] == [inner, outer])
    check_header(s, t.info, "sorted by own")
    assert s.header_line("view:") and "sort OWNTIME" in s.header_line(
        "view:"), s.text

    term.keys("2")
    s = term.wait_screen(
        "a caller of %s first by total" % inner,
        lambda s: "sort %TOTAL" in (s.header_line("view:") or "") and
        s.rows and s.rows[0]["name"] in callers and
        inner in s.names() and outer in s.names() and
        s.names().index(outer) < s.names().index(inner))
    assert s.rows[0]["total"] >= s.rows[s.names().index(inner)]["total"]

    # '<' moves the sort one column left: back to %OWN.
    term.keys("<")
    s = term.wait_screen("%s first again after '<'" % inner,
                         lambda s: "sort %OWN" in (
                             s.header_line("view:") or "") and
                         s.rows and s.rows[0]["name"] == inner)

    # Over the whole run, the shares are what the target says it does.
    share = t.info["own_share"]

    def near_shares(s):
        own = dict((r["name"], r["own"]) for r in s.rows)
        return ("whole run" in (s.header_line("view:") or "") and
                all(abs(own.get(name, 0) - 100 * want) < 10
                    for name, want in share.items()))
    term.keys("r")
    term.wait_screen("own shares near %r" % share, near_shares)
    term.keys("q")
    assert term.wait_status() == 0
    assert term.display("#{alternate_on}") == "0"


def test_views(spyc, targets, top_python, tmux):
    """l, t, r and p change what the header says and the rows."""
    t = targets.start(top_python, "hot.py", 0)
    hot = t.info["chain"][-1]
    term = tmux(top_argv(spyc, "--pid", t.pid, "--interval", 0.2))
    term.wait_screen("%s first" % hot["name"],
                     lambda s: s.rows and s.rows[0]["name"] == hot["name"])
    term.keys("l")
    s = term.wait_screen("a per-line view",
                         lambda s: "per line" in (s.header_line("view:")
                                                  or "") and s.rows)
    term.keys("t")
    s = term.wait_screen("a per-thread view",
                         lambda s: "per thread" in (s.header_line("view:")
                                                    or "") and s.rows and
                         s.rows[0]["thread"])
    # hot.py's one thread is the process's first, which threading calls
    # MainThread.
    assert t.info["native_id"] in (None, t.pid), t.info
    assert s.rows[0]["thread"] == "MainThread", s.text
    term.keys("r")
    term.wait_screen("the whole-run view",
                     lambda s: "whole run" in (s.header_line("view:") or ""))
    term.keys("p")
    s = term.wait_screen("paused", lambda s: "PAUSED" in s.text)
    term.keys("q")
    assert term.wait_status() == 0


@pytest.mark.parametrize("how", ["sigint", "sigterm"])
def test_signal_restores_terminal(spyc, targets, tmux, how):
    py = pyfind.require(TOP_SLOTS[0])
    t = targets.start(py, "hot.py", 0)
    term = tmux(top_argv(spyc, "--pid", t.pid, "--interval", 0.2))
    term.wait_screen("the table", lambda s: s.rows)
    assert term.display("#{alternate_on}") == "1"
    if how == "sigint":
        term.keys("C-c")
    else:
        kids = term.pane_children()
        assert len(kids) == 1, kids
        os.kill(kids[0], signal.SIGTERM)
    assert term.wait_status() == 0
    assert term.display("#{alternate_on}") == "0", term.screen()
    assert t.proc.poll() is None, "attached: the target must live on"


def test_target_exit_ends_top(spyc, targets, top_python, tmux):
    t = targets.start(top_python, "hot.py", 4)
    term = tmux(top_argv(spyc, "--pid", t.pid, "--interval", 0.2))
    term.wait_screen("the table", lambda s: s.rows)
    assert term.wait_status() == 0
    assert wait_gone(t.pid)
    assert term.display("#{alternate_on}") == "0"
    lines = [l for l in term.screen().splitlines() if l.strip()]
    assert "spyc: pid %d exited" % t.pid in lines, "\n".join(lines)


def test_launch_mode(spyc, top_python, tmux, tmp_path):
    report = str(tmp_path / "report.json")
    term = tmux(top_argv(spyc, "--interval", 0.2, "--", top_python.path,
                         os.path.join(os.path.dirname(__file__), "targets",
                                      "hot.py"), 0, report),
                cwd=tmp_path)
    s = term.wait_screen("the table", lambda s: s.rows and os.path.exists(
        report))
    with open(report) as f:
        info = json.load(f)
    hot = info["chain"][-1]
    s = term.wait_screen("%s first" % hot["name"],
                         lambda s: s.rows and s.rows[0]["name"] ==
                         hot["name"])
    check_header(s, info, "launch mode")
    # The program's output goes to a file named after it, in the
    # current directory.
    assert s.header_line("output: ") == "output: spyc-%d.out" % info["pid"], (
        s.text)
    assert (tmp_path / ("spyc-%d.out" % info["pid"])).exists()
    term.keys("q")
    assert term.wait_status() == 0
    # Quitting ends the program top started.
    assert wait_gone(info["pid"]), "the launched program is still running"


def test_launch_output_off_screen(spyc, tmux, tmp_path):
    """A launched program's prints go to its file, not over the table;
    --program-output names the file."""
    py = pyfind.require(TOP_SLOTS[0])
    prog_out = str(tmp_path / "prog.out")
    term = tmux(top_argv(spyc, "--interval", 0.2, "--program-output",
                         prog_out, "--", py.path, LAUNCHED, "--chatter", 0))
    s = term.wait_screen("spin first", lambda s: s.rows and
                         s.rows[0]["name"] == "spin")
    assert s.header_line("output: ") == "output: " + prog_out, s.text
    # It says something every tenth of a second: wait for a few lines in
    # its file, then look for any of them on the screen.
    deadline = time.time() + SCREEN_TIMEOUT
    while True:
        with open(prog_out) as f:
            text = f.read()
        if "chatter 5\n" in text or time.time() > deadline:
            break
        time.sleep(0.1)
    assert "chatter 5\n" in text, (
        "%s has no 'chatter 5' in %.0f s:\n%s" % (prog_out, SCREEN_TIMEOUT,
                                                  text))
    s = Screen(term.screen())
    assert not re.search(r"(?<!-)chatter \d", s.text), (
        "the program's output is on the screen:\n" + s.text)
    term.keys("q")
    assert term.wait_status() == 0


def test_small_terminal_and_resize(spyc, targets, top_python, tmux):
    t = targets.start(top_python, "hot.py", 0)
    hot = t.info["chain"][-1]
    term = tmux(top_argv(spyc, "--pid", t.pid, "--interval", 0.2),
                width=80, height=24)
    s = term.wait_screen("%s first at 80x24" % hot["name"],
                         lambda s: s.rows and s.rows[0]["name"] ==
                         hot["name"])
    check_header(s, t.info, "80x24")
    check_first_row(s, hot, "80x24")
    assert all(len(l) <= 80 for l in s.lines), s.text
    assert "q quit" in s.lines[23], "the key help belongs on line 24"

    term.resize(132, 50)
    s = term.wait_screen("the key help on line 50 after a resize",
                         lambda s: len(s.lines) >= 50 and
                         "q quit" in s.lines[49] and s.rows)
    check_first_row(s, hot, "132x50")
    # tmux keeps the bottom of a shrunk pane: wait for spyc's redraw.
    term.resize(80, 24)
    s = term.wait_screen("a redraw at 80x24",
                         lambda s: "q quit" in s.lines[23] and
                         s.lines[0].startswith("spyc top") and s.rows)
    check_header(s, t.info, "80x24 again")
    term.keys("q")
    assert term.wait_status() == 0


# --- plain text ---

def parse_plain(text, allow_cut=False):
    """Plain-text snapshots: [(header dict, [row])], checking the format:
    a header block of `key: value` lines, a blank line, the column
    names, the rows, a blank line.  Rows cut at the screen's edge fail
    unless allow_cut."""
    blocks = text.split("\n\n")
    assert blocks[-1] == "", "output must end with a blank line: %r" % (
        text[-200:])
    blocks.pop()
    assert len(blocks) % 2 == 0, "header and table blocks must alternate"
    snapshots = []
    for head, table in zip(blocks[0::2], blocks[1::2]):
        header = {}
        keys = []
        for line in head.split("\n"):
            key, sep, value = line.partition(": ")
            assert sep, "header line is not 'key: value': %r" % line
            keys.append(key)
            header[key] = value
        assert keys in [PLAIN_KEYS, LAUNCH_PLAIN_KEYS] + TREE_PLAIN_KEYS, (
            "header keys: %r" % keys)
        lines = table.split("\n")
        assert COLUMNS_RE.match(lines[0]), "column names: %r" % lines[0]
        rows = []
        for line in lines[1:]:
            m = ROW_RE.match(line)
            assert m, "not a table row: %r" % line
            row = parse_row(m)
            assert row["whole"] or allow_cut, "cut row: %r" % line
            rows.append(row)
        snapshots.append((header, rows))
    assert [int(h["snapshot"]) for h, _ in snapshots] == list(
        range(1, len(snapshots) + 1))
    return snapshots


def check_snapshots(snapshots, info, describe):
    hot = info["chain"][-1]
    assert len(snapshots) >= 2, "expected 2 snapshots or more\n" + describe
    for i, (header, rows) in enumerate(snapshots):
        assert int(header["pid"]) == info["pid"]
        assert header["python"] == info["python_version"]
        # The last one may be taken as the target exits, when its
        # interpreter has let go of its thread states: none to count.
        last = i == len(snapshots) - 1
        assert int(header["threads"]) >= (0 if last else 1), describe
        assert float(header["samples/s"]) > 0
        assert re.match(r"^(n/a|\d+\.\d%)$", header["idle"]), header
        # A free-threaded build has no GIL: "none".
        assert re.match(r"^(n/a|none|\d+\.\d%)$", header["gil"]), header
        assert re.match(r"^\d+ dropped", header["errors"]), header
        assert "hot.py" in header["command"]
        assert rows, "a snapshot without rows\n" + describe
        assert rows[0]["name"] == hot["name"], (
            "first row should be %s\n%s" % (hot["name"], describe))
        assert file_matches(rows[0]["file"], hot["file"]), describe
        assert rows[0]["own"] > 50, describe
        for r in rows:
            assert r["own"] <= r["total"] + 0.05, describe


def top_until(spyc, args, out_path, what, wanted,
              timeout=SNAPSHOT_TIMEOUT):
    """Run plain-text `spyc top ARGS` until one of its snapshots satisfies
    wanted(header, rows), then stop it with SIGTERM; fails, saying what
    it waited for, when none has in timeout seconds.  Returns (that
    snapshot's header, its rows, top's whole output, a description for
    failures)."""
    code, text, describe = top_until_snapshots(
        spyc, [str(a) for a in args], str(out_path), float("inf"),
        timeout=timeout, until=lambda whole: any(
            wanted(h, rows) for h, rows in parse_plain(whole)))
    assert code == 0, describe
    for header, rows in parse_plain(text):
        if wanted(header, rows):
            return header, rows, text, describe
    pytest.fail("no snapshot of spyc top showed %s in %.0f s\n%s" % (
        what, timeout, describe))


@pytest.mark.parametrize("mode", [[], ["--blocking"]],
                         ids=["nonblocking", "blocking"])
def test_plain_snapshots_until_target_exits(spyc, targets, top_python, mode):
    t = targets.start(top_python, "hot.py", 2.5)
    res = spyc.run(["top", "--pid", t.pid, "--interval", 0.5] + mode,
                   env=target_env(), timeout=30)
    res.assert_ok()
    assert "\x1b" not in res.stdout, "escape codes in plain-text mode"
    check_snapshots(parse_plain(res.stdout), t.info, res.describe())
    assert res.stderr_lines == ["spyc: pid %d exited" % t.pid], (
        res.describe())


def test_plain_snapshots_until_sigterm(spyc, targets, top_python, tmp_path):
    t = targets.start(top_python, "hot.py", 0)
    code, text, describe = top_until_snapshots(
        spyc, ["--pid", t.pid, "--interval", 0.5],
        str(tmp_path / "top.out"), 2)
    assert code == 0, describe
    check_snapshots(parse_plain(text), t.info, describe)
    assert t.proc.poll() is None, "the target must live on"


def test_plain_slow_rate(spyc, targets, tmp_path):
    """top --rate 0.5 samples every 2 s and says 0.5 samples/s, not 1 and
    0 by turns (what counting samples per 1 s refresh gives); n/a only
    until it has two samples to go by."""
    py = pyfind.require(TOP_SLOTS[0])
    t = targets.start(py, "hot.py", 0)

    def known_rates(text):
        return [h["samples/s"] for h, _ in parse_plain(text)
                if h["samples/s"] != "n/a"]
    code, text, describe = top_until_snapshots(
        spyc, ["--pid", t.pid, "--rate", 0.5, "--interval", 1],
        str(tmp_path / "top.out"), float("inf"), timeout=60,
        until=lambda whole: len(known_rates(whole)) >= 3)
    assert code == 0, describe
    snaps = parse_plain(text)
    rates = [h["samples/s"] for h, _ in snaps]
    known = known_rates(text)
    assert len(known) >= 3, (
        "fewer than 3 snapshots gave a rate in 60 s\n" + describe)
    assert rates[len(rates) - len(known):] == known, (
        "n/a belongs only before the first rate\n" + describe)
    for r in known:
        assert 0.35 <= float(r) <= 0.7, (
            "samples/s should be about 0.5\n" + describe)
    assert snaps[-1][1][0]["name"] == t.info["chain"][-1]["name"], (
        describe)


@pytest.mark.parametrize("named", [False, True],
                         ids=["default-file", "program-output"])
def test_plain_launch_output(spyc, tmp_path, named):
    """In launch mode the program's standard output and error go to a
    file (spyc-PID.out in the current directory, or --program-output),
    which every snapshot names: none of its lines reach top's output."""
    py = pyfind.require(TOP_SLOTS[0])
    extra = ["--program-output", "its.out"] if named else []
    proc = spyc.popen(["top", "--interval", 0.5] + extra +
                      ["--", py.path, LAUNCHED, "--print", 20, "--chatter",
                       2.5],
                      env=target_env(), cwd=str(tmp_path),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out, err = out.decode(), err.decode()
    describe = "exit %s\nstdout:\n%s\nstderr:\n%s" % (
        proc.returncode, out[-3000:], err)
    assert proc.returncode == 0, describe
    for said in (r"out line \d", r"err line \d", r"(?<!-)chatter \d"):
        assert not re.search(said, out) and not re.search(said, err), (
            "the program's output reached top's\n" + describe)
    snaps = parse_plain(out)
    pid = int(snaps[0][0]["pid"])
    want = "its.out" if named else "spyc-%d.out" % pid
    for header, _ in snaps:
        assert header.get("output") == want, describe
    with open(str(tmp_path / want)) as f:
        text = f.read()
    for k in range(20):
        assert "out line %d\n" % k in text and "err line %d\n" % k in text, (
            text)
    assert "chatter 10\n" in text, text
    # Nothing else of the program's lands in the directory.
    assert sorted(os.listdir(str(tmp_path))) == [want], (
        os.listdir(str(tmp_path)))


def test_cut_stack_root_row(spyc, targets, tmp_path):
    """The stand-in root of a stack cut at --max-depth is a row of its own,
    "[K frames not read]", with no made-up file or ":0" line."""
    py = pyfind.require(TOP_SLOTS[0])
    t = targets.start(py, "depth.py", 500, "busy", "{report}")
    # The target is at its depth before it reports: every sample is cut.
    _, rows, text, describe = top_until(
        spyc, ["--pid", t.pid, "--interval", 0.5, "--max-depth", 100],
        tmp_path / "top.out", "rows", lambda header, rows: rows)
    assert ":0)" not in text and "()" not in text, describe
    cut = [r for r in rows if r["name"].endswith(" frames not read]")]
    assert [r["function"] for r in cut] == ["[400 frames not read]"], (
        describe)
    assert cut[0]["total"] > 90, describe


def test_launch_output_unwritable(spyc, tmp_path):
    """A file for the program's output that cannot be made: exit 2 with
    one line naming it, and the program never runs (sysfs takes no new
    files, even from root)."""
    py = pyfind.require(TOP_SLOTS[0])
    marker = tmp_path / "ran"
    code, lines, err = launch_in_unwritable_dir(spyc.path, ["top"], py,
                                                marker)
    assert code == 2, err
    assert len(lines) == 1 and re.match(
        r"^spyc: cannot write the program's output to 'spyc-\d+\.out': ",
        lines[0]), err
    assert not marker.exists(), "the program ran"


def test_idle_and_gil_filters(spyc, targets, top_python, tmp_path):
    """Idle threads are left out unless --idle; --gil keeps the holder.
    The header's idle share comes from the sampler's thread states."""
    t = targets.start(top_python, "states.py")
    roles = t.info["roles"]
    tops = {r: roles[r]["top"][0] for r in ("spinner", "sleeper", "locker")}

    def snapshot(what, names, *opts):
        """The first snapshot whose rows include every function named."""
        return top_until(
            spyc, ["--pid", t.pid, "--interval", 0.5] + list(opts),
            tmp_path / ("top%s.out" % "".join(opts)), what,
            lambda header, rows: set(names) <= set(r["name"] for r in rows))

    header, rows, _, describe = snapshot(
        "the spinner's %s" % tops["spinner"], [tops["spinner"]])
    # The sleeper, locker and waiting main thread are idle: a share of
    # the threads' time.  n/a would mean no thread states were read.
    assert header["idle"] != "n/a", (
        "idle: n/a in a snapshot with rows: spyc reported no thread "
        "states\n" + describe)
    assert float(header["idle"].rstrip("%")) > 0, describe
    assert tops["sleeper"] not in set(r["name"] for r in rows), describe

    snapshot("every thread's function with --idle", tops.values(), "--idle")

    if top_python.free_threaded:
        # No GIL to hold: --gil says so in one line, and fails.
        res = spyc.run(["top", "--pid", t.pid, "--gil"], env=target_env(),
                       timeout=30)
        res.assert_error(2, "free-threaded", "no GIL", "--gil")
        assert header["gil"] == "none", header
        return
    _, rows, _, describe = snapshot(
        "the GIL holder's %s with --gil" % tops["spinner"],
        [tops["spinner"]], "--gil")
    assert tops["sleeper"] not in set(r["name"] for r in rows), describe


# --- usage ---

def test_native_frames(spyc, targets, top_python, tmp_path):
    """--native: the C function between Python frames shows up as a row,
    by its own name, and the Python rows are still there."""
    from test_native import build_extension
    ext = build_extension(top_python, str(tmp_path))
    t = targets.start(top_python, "native_cb.py", ext, "{report}", "spin")
    names = {"inner", "outer", "spycext_call_back"}
    _, rows, _, describe = top_until(
        spyc, ["--native", "--pid", t.pid, "--interval", 0.5],
        tmp_path / "top.out", "rows for %s" % ", ".join(sorted(names)),
        lambda header, rows: names <= set(r["name"] for r in rows))
    # The C function only waits for its callback: on the stack, not busy.
    row = [r for r in rows if r["name"] == "spycext_call_back"][0]
    assert row["total"] > 90 and row["own"] < 5, describe
    # Per function, a native row shows where the function starts, as a
    # Python row does (DWARF's declaration line), and says it is native.
    from test_native import CEXT
    with open(CEXT) as f:
        starts = [n for n, text in enumerate(f, 1)
                  if text.startswith("spycext_call_back(")]
    assert row["native"] and row["file"].endswith("spycext.c"), row
    assert row["line"] == starts[0], (
        "spycext_call_back starts at line %d\n%s" % (starts[0], describe))
    assert not [r for r in rows if not r["native"] and r["name"] ==
                "spycext_call_back"], describe


def test_native_rows_without_dwarf(spyc, targets, tmp_path):
    """A native frame DWARF says nothing about (here _start, of crt1.o)
    is a row "name [native]", with no made-up ":0" line; one with a file
    but no line is "name (file) [native]"."""
    py = pyfind.require(TOP_SLOTS[0])
    t = targets.start(py, "hot.py", 0)
    chain = set(entry["name"] for entry in t.info["chain"])
    _, rows, text, describe = top_until(
        spyc, ["--native", "--pid", t.pid, "--interval", 0.5],
        tmp_path / "top.out", "native rows and the target's Python ones",
        lambda header, rows: any(r["native"] for r in rows) and chain <= set(
            r["name"] for r in rows if not r["native"]))
    assert ":0)" not in text, describe
    native = [r for r in rows if r["native"]]
    for r in native:
        assert r["line"] is None or r["line"] > 0, r
    bare = [r for r in native if r["file"] is None]
    if not bare:
        pytest.skip("every native frame of %s had DWARF here: no row "
                    "without a file to check" % py.path)
    assert all(r["function"] == r["name"] + " [native]" for r in bare), (
        describe)


def test_usage_errors(spyc):
    spyc.run(["top"]).assert_error(64, "--pid")
    spyc.run(["top", "--rate", "0", "--pid", 1]).assert_error(64, "--rate")
    spyc.run(["top", "--interval", "x", "--pid", 1]).assert_error(
        64, "--interval")
    spyc.run(["top", "--program-output", "x.out", "--pid", 1]).assert_error(
        64, "--program-output")
    res = spyc.run(["top", "--help"])
    res.assert_ok()
    assert "--interval" in res.stdout and "q quit" in res.stdout
