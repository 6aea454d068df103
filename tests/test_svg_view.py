# SPDX-License-Identifier: MIT
"""An SVG flame graph as a browser opens it (headless Chromium): on its
root and the work above it, even when start-up left a tower of frames
far deeper than the rest (imports of a large package: `import torch`
runs a hundred deep), which sets the graph's height and which a browser
would show first, at the top."""

import os

import pytest

import browser
from conftest import target_env

# A thin tower 90 frames deep at start (0.1 s), then 2 s of shallow work.
TOWER = """\
import time
def tower(n):
    if n:
        return tower(n - 1)
    t = time.time()
    while time.time() - t < 0.1:
        pass
def work():
    t = time.time()
    while time.time() - t < 2:
        pass
tower(90)
work()
"""
WINDOW = (1200, 600)

# The root's box, what of the work's is in view, and the window's height.
VIEW = """(function () {
  var gs = document.getElementsByClassName('f'), work = null;
  for (var i = 0; i < gs.length; i++)
    if (gs[i].getElementsByTagName('title')[0].textContent
          .indexOf('work (') === 0)
      work = gs[i].getElementsByTagName('rect')[0].getBoundingClientRect();
  var root = gs[0].getElementsByTagName('rect')[0].getBoundingClientRect();
  return {root_top: root.top, root_bottom: root.bottom,
          work_top: work ? work.top : null, inner: window.innerHeight,
          height: document.documentElement.getBoundingClientRect().height};
})()"""


def test_svg_opens_on_the_root(spyc, any_python, tmp_path):
    why = browser.missing()
    if why:
        pytest.skip(why)
    script = tmp_path / "tower.py"
    script.write_text(TOWER)
    svg = str(tmp_path / "tower.svg")
    res = spyc.run(["record", "--rate", "250", "-o", svg, "--",
                    any_python.path, str(script)], env=target_env(),
                   timeout=60)
    res.assert_ok()
    with browser.Browser(*WINDOW) as b:
        view = b.open("file://" + os.path.abspath(svg)).evaluate(VIEW)
    assert view["height"] > 2 * view["inner"], (
        "the graph fits the window: nothing to check", view)
    assert 0 <= view["root_top"] and view["root_bottom"] <= view["inner"], (
        "the root is out of view as the graph opens", view)
    assert view["work_top"] is not None and 0 <= view["work_top"], view
