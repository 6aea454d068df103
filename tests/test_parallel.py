# SPDX-License-Identifier: MIT
"""Threads that run Python at the same time, on every CPython slot.

tests/targets/parallel.py runs four threads spinning in pure Python, each
at its own depth, on a line that never changes, and a main thread that
waits.  On a free-threaded build (3.14t) they all run at once; with the
GIL they take turns.  Either way every sample taken with --idle must show
every one of them, each with its own stack exactly as the target reports
it; `dump` is compared with the report in test_dump.py.
"""

import re

import pytest

from conftest import frame_line
from test_threads import folded


def kept_samples(res):
    """Samples taken and not dropped, from record's summary line."""
    m = re.search(r"spyc: (\d+) samples?, (\d+) dropped", res.stderr)
    assert m, "no summary line\n" + res.describe()
    return int(m.group(1)) - int(m.group(2))


def test_idle_samples_show_every_thread(spyc, python, targets, tmp_path):
    t = targets.start(python, "parallel.py")
    expected = t.expected_threads()
    workers = t.info["workers"]
    assert len(workers) == 4
    out = str(tmp_path / "all.txt")
    res = spyc.run(["record", "--pid", t.pid, "--idle", "--threads",
                    "--full-filenames", "--duration", 1, "-o", out],
                   timeout=30)
    res.assert_ok()
    kept = kept_samples(res)
    # A loaded machine may take fewer than the 100 asked for, not none.
    assert kept >= 5, res.describe()
    stacks = folded(out)
    for name, ident in sorted(workers.items()):
        # The thread is the root: "worker-a (tid N)".
        mine = [(frames[1:], count) for frames, count in stacks
                if frames[0].split(" (tid ")[0] == name]
        want = [frame_line(f) for f in reversed(expected[ident]["frames"])]
        # In every kept sample, and always at the same place.
        assert mine == [(want, kept)], (
            "%s: expected its stack in all %d samples\n  want %s\n  got  %s"
            "\n%s" % (name, kept, want, mine, res.describe()))


@pytest.mark.slots(free_threaded=True)
def test_threads_run_at_once(spyc, python, targets):
    """On a free-threaded build no lock keeps the spinning threads from
    running: all four are on a CPU or ready to run (R) in one sample.
    (With a GIL, threads take turns running Python.)"""
    t = targets.start(python, "parallel.py")
    workers = t.info["workers"]
    seen = []
    for _ in range(10):
        doc, res = spyc.dump_json(t.pid)
        assert doc["free_threaded"] is True, res.describe()
        by_ident = dict((th["thread_id"], th) for th in doc["threads"])
        assert all(by_ident[i]["holds_gil"] is None
                   for i in workers.values()), res.describe()
        running = sorted(n for n, i in workers.items()
                         if by_ident[i]["state"] == "running")
        seen.append(running)
        if len(running) == len(workers):
            break
    # Each is R all along but for a stop-the-world pause: one sample with
    # all four running is enough, however loaded the machine.
    assert sorted(workers) in seen, seen
