# SPDX-License-Identifier: MIT
"""The HTML page (-o profile.html) as a user opens it, in headless
Chromium: it loads from disk with no error, opens on the root and the
work under it (an icicle, even when start-up left a tower far deeper than
the rest), and its zoom, search, thread list, table and source view (of
sources the page took along: the script is gone when it opens) show what
the page's data says, which test_record and test_split hold to the
target's truth."""

import os
import re

import pytest

import browser
from conftest import target_env
from test_record import html_data, parse_summary

# A thin tower 90 frames deep at start (0.1 s), then two threads that
# burn the CPU in turn, each in a function of its own.
TARGET = """\
import threading, time
def spin(secs):
    t = time.time()
    while time.time() - t < secs:
        pass
def tower(n):
    if n:
        return tower(n - 1)
    spin(0.1)
def side_work():
    spin(1.5)
def work():
    spin(1.5)
tower(90)
side = threading.Thread(target=side_work, name="side")
side.start()
work()
side.join()
"""
WINDOW = (1200, 700)
# The line of TARGET where work() spends its time.
WORK_LINE = 13
assert TARGET.splitlines()[WORK_LINE - 1] == "    spin(1.5)" and \
    TARGET.splitlines()[WORK_LINE - 2] == "def work():"

# Each box of the graph: its text, position and the node it draws.
BOXES = """Array.from(document.querySelectorAll('#graph .n')).map(function (d) {
  var r = d.getBoundingClientRect();
  return {name: d.spycNode.name, file: d.spycNode.file, n: d.spycNode.n,
          depth: d.spycNode.depth, top: r.top, left: r.left,
          width: r.width, match: d.classList.contains('match')};
})"""
CLICK = """(function (name) {
  var ds = document.querySelectorAll('#graph .n');
  for (var i = 0; i < ds.length; i++)
    if (ds[i].spycNode.name === name) { ds[i].click(); return true; }
  return false;
})(%r)"""
SOURCE = """(function () {
  return {title: document.getElementById('source-title').textContent,
          lines: Array.from(document.querySelectorAll('#source .l')).map(
            function (r) { return {line: +r.getAttribute('data-line'),
                                   n: +r.getAttribute('data-n'),
                                   text: r.textContent}; })};
})()"""
TABLE = """Array.from(document.querySelector('#table tbody').rows).map(
  function (r) { return Array.from(r.cells).map(function (c) {
    return c.textContent; }); })"""


def record_page(spyc, python, tmp_path, name, text):
    """The script text (as name.py) run and recorded into name.html, the
    script then deleted (a page holds its sources: it opens where they
    are not); (the page's path, record's summary).  Skips without a
    browser."""
    why = browser.missing()
    if why:
        pytest.skip(why)
    script = tmp_path / (name + ".py")
    script.write_text(text)
    out = str(tmp_path / (name + ".html"))
    res = spyc.run(["record", "--rate", "250", "-o", out, "--",
                    python.path, str(script)], env=target_env(),
                   timeout=60)
    res.assert_ok()
    summary = parse_summary(res.stderr, res.describe())
    script.unlink()
    return out, summary


@pytest.fixture
def page_file(spyc, any_python, tmp_path):
    return record_page(spyc, any_python, tmp_path, "profile", TARGET)


def samples_with(data, thread, pattern):
    """Samples of thread (-1: all) whose stack has a function whose
    "name (file)" pattern matches."""
    rx = re.compile(pattern)
    n = 0
    for t, count, ids in data["stacks"]:
        if thread >= 0 and t != thread:
            continue
        if any(rx.search(data["frames"][i][0] + (
                " (%s)" % data["frames"][i][1] if data["frames"][i][1]
                else "")) for i in ids):
            n += count
    return n


def test_html_page(page_file):
    path, summary = page_file
    data = html_data(path)
    # Each thread's stack at a sample is one: two threads, up to twice.
    assert summary.samples <= data["samples"] <= 2 * summary.samples
    with browser.Browser(*WINDOW) as b:
        page = b.open("file://" + os.path.abspath(path), watch=True)
        assert page.errors() == []
        assert page.evaluate("spyc.root().n") == data["samples"]
        boxes = page.evaluate(BOXES)
        inner = page.evaluate("window.innerHeight")
        # Opens on the root, on top, and the work under it on screen.
        root = [x for x in boxes if x["depth"] == 0]
        assert len(root) == 1 and root[0]["n"] == data["samples"], root
        work = [x for x in boxes if x["name"] == "work"]
        assert work and 0 < work[0]["top"] < inner, (work, inner)
        assert root[0]["top"] < work[0]["top"]
        graph_width = root[0]["width"]

        # A click zooms: work takes the width, its callers stay above.
        assert page.evaluate(CLICK % "work")
        assert page.evaluate("spyc.view().name") == "work"
        zoomed = page.evaluate(BOXES)
        work = [x for x in zoomed if x["name"] == "work"]
        assert abs(work[0]["width"] - graph_width) < 1, work
        assert all(x["name"] != "side_work" for x in zoomed), (
            "a function beside the zoomed one is still drawn")
        # The function's source, each line with its samples: work's
        # time is in its call of spin (line WORK_LINE).
        rows = page.evaluate(SOURCE)
        assert rows["title"].startswith("work ("), rows
        busiest = max(rows["lines"], key=lambda r: r["n"])
        assert busiest["line"] == WORK_LINE, rows
        assert busiest["text"].endswith(TARGET.splitlines()[WORK_LINE - 1]), (
            busiest)
        assert busiest["n"] == work[0]["n"], (busiest, work)
        page.evaluate("document.getElementById('reset').click()")
        assert page.evaluate("spyc.view().depth") == 0

        # Search: the matches highlighted, their share as the data has it.
        share = page.evaluate("""(function () {
            var s = document.getElementById('search');
            s.value = 'side_work';
            s.dispatchEvent(new Event('input'));
            return document.getElementById('matched').textContent; })()""")
        want = 100.0 * samples_with(data, -1, "side_work") / data["samples"]
        assert want > 5, "the side thread ran: %.1f%%" % want
        assert share == "Matched: %.1f%%" % want, (share, want)
        hits = [x for x in page.evaluate(BOXES) if x["match"]]
        assert hits and all(x["name"] == "side_work" for x in hits), hits

        # The table sorts by the column clicked.
        page.evaluate("document.querySelector('#table th[data-k=self]')"
                      ".click()")
        own = [int(r[2]) for r in page.evaluate(TABLE)]
        assert own == sorted(own), own
        page.evaluate("document.querySelector('#table th[data-k=name]')"
                      ".click()")
        names = [r[0] for r in page.evaluate(TABLE)]
        assert names == sorted(names), names
        total = {r[0]: int(r[4]) for r in page.evaluate(TABLE)}
        assert total["work"] == samples_with(data, -1, r"^work \(")

        # One thread: its samples only.
        side = [i for i, t in enumerate(data["threads"]) if "side" in t]
        assert len(side) == 1, data["threads"]
        page.select("thread", "t%d" % side[0])
        want = sum(c for t, c, _ in data["stacks"] if t == side[0])
        assert page.evaluate("spyc.root().n") == want
        names = set(x["name"] for x in page.evaluate(BOXES))
        assert "side_work" in names and "work" not in names, names

        # A flame graph: the root at the bottom.
        page.evaluate("document.getElementById('mode').click()")
        boxes = page.evaluate(BOXES)
        root = [x for x in boxes if x["depth"] == 0][0]
        assert root["top"] == max(x["top"] for x in boxes)
        assert page.errors() == []


# A function whose file name is markup that would end the page's script
# element and inject an element of its own, were the data not escaped.
HOSTILE_FILE = '</script><b id="injected">x</b><script>'
HOSTILE = """\
import time
src = '''def burn():
    t = time.time()
    while time.time() - t < 1:
        pass
'''
exec(compile(src, %r, "exec"))
burn()
""" % HOSTILE_FILE


def test_html_page_markup_in_names(spyc, any_python, tmp_path):
    """Names and files are data, never markup: the page loads with no
    error and shows the file name as text."""
    out, _ = record_page(spyc, any_python, tmp_path, "hostile", HOSTILE)
    with browser.Browser(*WINDOW) as b:
        page = b.open("file://" + os.path.abspath(out), watch=True)
        assert page.errors() == []
        assert page.evaluate("document.getElementById('injected')") is None
        files = set(x["file"] for x in page.evaluate(BOXES)
                    if x["name"] == "burn")
        assert files == {HOSTILE_FILE}, files
