# SPDX-License-Identifier: MIT
"""spyc diff: what changed from one profile to another.

tests/targets/shift.py alternates between alpha() and beta(), alpha for a
share of each round that its argument sets: a run at 0.8 against one at
0.2 moves 60 points of own time from alpha to beta, and diff must put
those two on top, both changed; two runs at 0.5 differ by chance only,
and diff must say so of both.
"""

import json
import math
import re
import xml.etree.ElementTree as ET

import browser
from test_record import html_data
from test_report import record

SVG_NS = "{http://www.w3.org/2000/svg}"

# The truth moves 60 points; each profile's share of either function is
# also off by the sampling error and the time of the loop around them.
SHIFT_POINTS = 60.0
SHIFT_SLACK = 15.0
# Two runs of one program differ by chance: diff calls a change real at
# p <= 0.05, so a pair of runs now and then shows one.  A third run
# decides (both pairs showing one, about 1 in 1000 with a calibrated
# error, means the error is too small).
SAME_TRIES = 2
# report's summary line on the size of a real difference.
REAL_RE = re.compile(
    r"^Real difference \(95%\) from a profile as large: ([\d.]+) points on "
    r"a 50% share, ([\d.]+) on 10%, ([\d.]+) on 1%; 1 point on 10% needs "
    r"(\d+) samples a profile$")


def shift_profile(spyc, python, tmp_path, name, share, fmt="json"):
    path = str(tmp_path / ("%s.%s" % (name, fmt)))
    record(spyc, python, path, "shift.py", share, 2,
           extra=["--rate", "250"])
    return path


def diff(spyc, base, new, *extra):
    res = spyc.run(["diff", "--json", base, new] + list(extra))
    res.assert_ok()
    return json.loads(res.stdout), res


def by_name(rows):
    return dict((r["name"], r) for r in rows if r["file"].endswith(
        "shift.py"))


def test_diff_finds_the_shift(spyc, any_python, tmp_path):
    """alpha at 80% of each round, then 20%: alpha and beta are the two
    largest changes, each real, each about 60 points the right way; the
    text table says the same, and lists the lines."""
    base = shift_profile(spyc, any_python, tmp_path, "base", 0.8)
    # Folded against speedscope: any format spyc writes.
    new = shift_profile(spyc, any_python, tmp_path, "new", 0.2, "txt")
    doc, res = diff(spyc, base, new)
    top = doc["functions"][:2]
    assert set(r["name"] for r in top) == {"alpha", "beta"}, res.describe()
    rows = by_name(doc["functions"])
    for name, sign in (("alpha", -1), ("beta", 1)):
        r = rows[name]
        assert r["real"], (name, res.describe())
        assert abs(r["change"] - sign * SHIFT_POINTS) < SHIFT_SLACK, (
            name, res.describe())
        assert 0 < r["error"] < abs(r["change"]), (name, res.describe())
        assert abs(r["new_pct"] - r["base_pct"] - r["change"]) < 1e-6
    assert doc["base"]["samples"] > 300 and doc["new"]["samples"] > 300, (
        res.describe())
    lines = [r for r in doc["lines"][:2]]
    assert set(r["name"] for r in lines) == {"alpha", "beta"}, res.describe()
    assert all(r["line"] > 0 and r["real"] for r in lines), res.describe()
    text = spyc.run(["diff", base, new])
    text.assert_ok()
    marked = [l for l in text.stdout.splitlines()
              if l.endswith("(%s)" % rows["alpha"]["file"])]
    assert marked and not marked[0].startswith(" ~"), text.describe()
    assert "Functions: " in text.stdout and "Lines: " in text.stdout
    check_flame_graph(spyc, base, new, tmp_path)
    check_page(spyc, base, new, tmp_path, rows)


def check_page(spyc, base, new, tmp_path, rows):
    """diff -o diff.html: BASE's and NEW's stacks in the page; in a
    browser, NEW's drawn, alpha's box blue and beta's red, each with the
    change diff --json gives it, beyond chance; the root unchanged."""
    path = str(tmp_path / "diff.html")
    spyc.run(["diff", "-o", path, base, new]).assert_ok()
    data = html_data(path)
    assert data["diff"] is True and data["threads"] == ["BASE", "NEW"]
    with browser.shown(path) as page:
        boxes = page.evaluate("""Array.from(document.querySelectorAll(
            '#graph .n')).map(function (d) {
            return {name: d.spycNode.name, depth: d.spycNode.depth,
                    change: +d.getAttribute('data-change'),
                    chance: d.classList.contains('chance'),
                    colour: getComputedStyle(d).backgroundColor}; })""")
        assert page.errors() == []
    root = [x for x in boxes if x["depth"] == 0][0]
    assert root["change"] == 0, root
    for name, sign in (("alpha", -1), ("beta", 1)):
        box = max((x for x in boxes if x["name"] == name),
                  key=lambda x: abs(x["change"]))
        # The function's one place in shift.py: the change diff gives.
        assert abs(box["change"] - rows[name]["change"]) < 0.5, (box,
                                                                 rows[name])
        assert not box["chance"], box
        rgb = [int(c) for c in re.findall(r"\d+", box["colour"])][:3]
        assert (rgb[0] > rgb[2]) == (sign > 0) and abs(rgb[0] - rgb[2]) > 100, (
            name, box)


def check_flame_graph(spyc, base, new, tmp_path):
    """diff -o: NEW's stacks, alpha's frame blue (its share shrank) and
    beta's red, each one's tooltip giving its change; the root white."""
    svg = str(tmp_path / "diff.svg")
    res = spyc.run(["diff", "-o", svg, base, new])
    res.assert_ok()
    spyc.run(["diff", "-o", str(tmp_path), base, new]).assert_error(
        2, str(tmp_path))
    seen = {}
    for g in ET.parse(svg).getroot().iter(SVG_NS + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(SVG_NS + "title").text
        fill = g.find(SVG_NS + "rect").get("fill")
        name = title.split(" ", 1)[0]
        m = re.search(r", BASE ([\d.]+)%, ([-+][\d.]+) points$", title)
        assert m, title
        rgb = tuple(int(c) for c in re.findall(r"\d+", fill))
        seen.setdefault(name, []).append((float(m.group(2)), rgb, title))
    change, rgb, title = seen["all"][0]
    assert change == 0 and rgb[0] == rgb[2], title
    for name, sign in (("alpha", -1), ("beta", 1)):
        change, rgb, title = max(seen[name], key=lambda c: abs(c[0]))
        assert abs(change - sign * SHIFT_POINTS) < SHIFT_SLACK, title
        red, blue = rgb[0], rgb[2]
        assert (red > blue) == (sign > 0) and abs(red - blue) > 100, (
            name, rgb, title)


def test_diff_same_program_within_chance(spyc, any_python, tmp_path):
    """Two runs of shift.py at 0.5: alpha's and beta's changes are
    within chance."""
    runs = [shift_profile(spyc, any_python, tmp_path, "run0", 0.5)]
    for i in range(SAME_TRIES):
        runs.append(shift_profile(spyc, any_python, tmp_path,
                                  "run%d" % (i + 1), 0.5))
        doc, res = diff(spyc, runs[0], runs[-1])
        rows = by_name(doc["functions"])
        assert set(rows) >= {"alpha", "beta"}, res.describe()
        real = [n for n in ("alpha", "beta") if rows[n]["real"]]
        if not real:
            return
    assert not real, (
        "two runs of one program: %s changed beyond chance in %d pairs\n%s"
        % (", ".join(real), SAME_TRIES, res.describe()))


def test_diff_merged_and_chrome(spyc, any_python, tmp_path):
    """Merged profiles (spyc merge of runs sampled at one rate) say their
    samples, so their changes have errors; a Chrome trace does not, and
    its changes are not known ('?', null), never called real."""
    runs = [shift_profile(spyc, any_python, tmp_path, "r%d" % i, share)
            for i, share in enumerate((0.8, 0.8, 0.2))]
    merged = []
    for name, inputs in (("base", runs[:2]), ("new", runs[2:])):
        path = str(tmp_path / ("merged-%s.json" % name))
        spyc.run(["merge", "-o", path] + inputs).assert_ok()
        merged.append(path)
    doc, res = diff(spyc, merged[0], merged[1])
    assert doc["base"]["samples"] > 600 and doc["new"]["samples"] > 300, (
        res.describe())
    rows = by_name(doc["functions"])
    for name, sign in (("alpha", -1), ("beta", 1)):
        assert rows[name]["real"] is True, res.describe()
        assert abs(rows[name]["change"] - sign * SHIFT_POINTS) < (
            SHIFT_SLACK), res.describe()
    trace = str(tmp_path / "new.trace.json")
    record(spyc, any_python, trace, "shift.py", 0.2, 2,
           extra=["--rate", "250"])
    doc, res = diff(spyc, runs[0], trace)
    assert doc["new"]["samples"] is None, res.describe()
    assert doc["functions_changed"] == 0 and doc["functions_not_known"] > 0
    rows = by_name(doc["functions"])
    assert rows["alpha"]["real"] is None and rows["alpha"]["error"] is None
    assert abs(rows["alpha"]["change"] + SHIFT_POINTS) < SHIFT_SLACK
    text = spyc.run(["diff", runs[0], trace])
    text.assert_ok()
    assert any(l.startswith(" ?") and "alpha (" in l
               for l in text.stdout.splitlines()), text.describe()


def test_diff_bad_input(spyc, tmp_path):
    """A missing profile, one file, a bad --top: one line each."""
    missing = str(tmp_path / "missing.json")
    other = tmp_path / "empty.txt"
    other.write_text("")
    res = spyc.run(["diff", missing, str(other)])
    assert res.returncode == 2 and len(res.stderr_lines) == 1, res.describe()
    assert missing in res.stderr, res.describe()
    spyc.run(["diff", missing]).assert_error(64, "two profile")
    spyc.run(["diff", "--top", "-1", missing, missing]).assert_error(
        64, "--top")
    spyc.run(["diff", "--sort", "self", missing, missing]).assert_error(
        64, "--sort")


def folded(path, n, k):
    """A folded profile of n samples, k of them in f() and the rest in
    g(), both under main()."""
    with open(path, "w") as f:
        f.write("main (m.py:1);f (m.py:5) %d\nmain (m.py:1);g (m.py:9) %d\n"
                % (k, n - k))
    return str(path)


def test_report_says_what_diff_calls_real(spyc, tmp_path):
    """report's summary says how large a difference from a profile as
    large is real, and how many samples a point needs: diff, given two
    such profiles, calls a change a little over that size real and a
    little under it chance.  The sizes are the report's; the verdicts,
    diff's own test of the two profiles' counts."""
    n = 20000
    base = folded(tmp_path / "base.folded", n, n // 10)
    res = spyc.run(["report", "--json", base])
    res.assert_ok()
    sec = json.loads(res.stdout)["sections"][0]
    assert sec["samples"] == n, res.stdout[:2000]
    need = sec["real_difference_pct"]
    for share, key in ((0.5, "50"), (0.1, "10"), (0.01, "1")):
        # The half-width of the 95% interval of the difference of two
        # shares p of n samples each.
        want = 100 * 1.96 * math.sqrt(2 * share * (1 - share) / n)
        assert abs(need[key] - want) < 1e-6, (key, need)

    def verdict(path_new):
        doc, res = diff(spyc, base, path_new)
        rows = dict((r["name"], r) for r in doc["functions"])
        return rows["f"]["real"], res

    for factor, real in ((1.2, True), (0.8, False)):
        k = int(round(n * (0.1 + factor * need["10"] / 100)))
        got, res = verdict(folded(tmp_path / ("new%s.folded" % factor),
                                  n, k))
        assert got is real, (factor, k, need["10"], res.describe())
    # The text: the same sizes, and the samples a profile needs for a
    # point on a 10% share, which diff bears out at that size.
    res = spyc.run(["report", base])
    res.assert_ok()
    m = [REAL_RE.match(l) for l in res.stdout.splitlines()]
    m = [x for x in m if x]
    assert len(m) == 1, res.stdout
    for key, got in zip(("50", "10", "1"), m[0].groups()[:3]):
        assert abs(float(got) - need[key]) <= 0.051, (key, m[0].group(0))
    each = int(m[0].group(4))
    for factor, real in ((1.3, True), (0.7, False)):
        size = int(each * factor) // 10 * 10
        base2 = folded(tmp_path / ("b%s.folded" % factor), size, size // 10)
        new2 = folded(tmp_path / ("n%s.folded" % factor), size,
                      size // 10 + size // 100)
        doc, res = diff(spyc, base2, new2)
        rows = dict((r["name"], r) for r in doc["functions"])
        assert rows["f"]["real"] is real, (factor, size, res.describe())
