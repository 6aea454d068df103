# SPDX-License-Identifier: MIT
"""Headless Chromium driven through its DevTools protocol, to check what
a user sees when spyc's pages and graphs open in a browser.

    with Browser(width=1200, height=600) as b:
        page = b.open("file:///tmp/out.svg")
        page.evaluate("window.scrollY")

Needs chromium and the websocket-client module (Debian's chromium and
python3-websocket; scripts/install-deps installs them): skip() says
which is missing.
"""

import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

try:
    import websocket
except ImportError:
    websocket = None

# Chromium on a loaded 2-core machine: seconds to start, to load a page.
START_TIMEOUT = 60.0
LOAD_TIMEOUT = 30.0


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def missing():
    """Why a browser cannot be driven here, or None."""
    if chromium() is None:
        return "chromium is not installed (scripts/install-deps installs it)"
    if websocket is None:
        return ("the websocket-client module is missing (Debian: "
                "python3-websocket; scripts/install-deps installs it)")
    return None


@contextlib.contextmanager
def shown(path, width=1200, height=700):
    """The page at path opened in headless Chromium, watched for errors
    (Page.errors); without a browser the test is skipped, the page's data
    having been checked."""
    import pytest
    why = missing()
    if why:
        pytest.skip("the page's data is checked; not shown: " + why)
    with Browser(width, height) as b:
        yield b.open("file://" + os.path.abspath(str(path)), watch=True)


class Page(object):
    """One tab, attached in the browser's session."""

    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def evaluate(self, expression):
        """The value of a JavaScript expression (JSON-able) in the page;
        raises RuntimeError with the exception it threw."""
        res = self.browser.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True,
            "awaitPromise": True}, self.session)
        if "exceptionDetails" in res:
            raise RuntimeError("%s: %s" % (expression, json.dumps(
                res["exceptionDetails"])))
        return res["result"].get("value")

    def errors(self):
        """Exceptions the page threw and errors it logged so far (a page
        opened with watch=True)."""
        self.evaluate("0")  # reads the events sent before this reply
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails"))[:500])
            elif (e["method"] == "Runtime.consoleAPICalled" and
                  p.get("type") == "error"):
                out.append(json.dumps(p.get("args"))[:500])
            elif (e["method"] == "Log.entryAdded" and
                  p.get("entry", {}).get("level") == "error"):
                out.append(json.dumps(p["entry"])[:500])
        return out

    def select(self, element_id, value):
        """Choose value in the <select> element_id, as a user's choice
        does: the page gets its change event."""
        self.evaluate("""(function (s) {
            s.value = %s; s.dispatchEvent(new Event('change'));
            })(document.getElementById(%s))""" % (
            json.dumps(value), json.dumps(element_id)))

    def click(self, x, y):
        """A click of the mouse's left button at (x, y) of the page's
        viewport, as a user's: the page gets its events with their
        coordinates."""
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.call("Input.dispatchMouseEvent", {
                "type": kind, "x": x, "y": y, "button": "left",
                "clickCount": 1}, self.session)

    def wait_loaded(self, url):
        """Wait until url (not the blank page a tab starts with) has
        loaded."""
        deadline = time.time() + LOAD_TIMEOUT
        while self.evaluate("location.href + ' ' + document.readyState") != (
                url + " complete"):
            if time.time() > deadline:
                raise RuntimeError("the page did not load in %d s" %
                                   LOAD_TIMEOUT)
            time.sleep(0.05)


class Browser(object):
    def __init__(self, width=1200, height=800):
        self.profile = tempfile.mkdtemp(prefix="spyc-chromium-")
        self.proc = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--hide-scrollbars", "--no-first-run",
             "--window-size=%d,%d" % (width, height),
             "--user-data-dir=" + self.profile,
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            universal_newlines=True)
        url = None
        deadline = time.time() + START_TIMEOUT
        # It says where it listens on stderr, among other lines.
        for line in self.proc.stderr:
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
            if time.time() > deadline:
                break
        if url is None:
            self.close()
            raise RuntimeError("chromium did not start its DevTools")
        self.ws = websocket.create_connection(url, timeout=LOAD_TIMEOUT)
        self.ids = itertools.count(1)
        self.events = []

    def call(self, method, params=None, session=None):
        msg = {"id": next(self.ids), "method": method,
               "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if "method" in reply:
                self.events.append(reply)
                continue
            if reply.get("id") == msg["id"]:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]

    def open(self, url, watch=False):
        """A new tab at url, loaded.  With watch, the tab listens for
        errors before it loads url (Page.errors)."""
        target = self.call("Target.createTarget", {
            "url": "about:blank" if watch else url})["targetId"]
        session = self.call("Target.attachToTarget", {
            "targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        if watch:
            self.call("Runtime.enable", {}, session)
            self.call("Log.enable", {}, session)
            self.call("Page.navigate", {"url": url}, session)
        page.wait_loaded(url)
        return page

    def close(self):
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait()
            self.proc.stderr.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
