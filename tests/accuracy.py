# SPDX-License-Identifier: MIT
"""The accuracy harness: a profile's shares against the truth.

targets/accuracy.py burns the CPU in known functions and measures, in
process, the thread CPU time each one spent (the truth).  measure() runs
spyc record over a window that the target brackets with two snapshots
of those times (SIGUSR1), and returns both sides: for each burning
function, its share of the samples whose innermost frame is one of the
burners, and its share of the CPU time they measured.

Used by tests/test_accuracy.py (bounds), tests/test_split.py (the same
bounds, in every output format) and tests/bench.py (the table).
"""

import json
import os
import re
import signal
import subprocess
import time

SUMMARY_RE = re.compile(r"^spyc: (?P<samples>\d+) samples?"
                        r"(?:, (?P<dropped>\d+) dropped"
                        r"(?: \((?P<why>[^)]*)\))?)?")
TORN_RE = re.compile(r"(\d+) torn reads")
# spyc's frame for time in the cycle collector (conftest.GC_FRAME).
GC_FRAME = "<GC>"
FRAME_NAME_RE = re.compile(r"^(?P<name>.+) \((?P<file>.+):\d+\)$")


class Measurement(object):
    def __init__(self, burners, counts, cpu_ns, samples, dropped, torn,
                 res):
        self.burners = burners
        self.counts = counts      # name -> samples with it innermost
        self.cpu_ns = cpu_ns      # name -> CPU ns it measured
        self.samples = samples    # kept, as the summary says
        self.dropped = dropped
        self.torn = torn
        self.res = res            # the SpycResult, for messages

    def spyc_share(self, name):
        total = sum(self.counts.values())
        return 100.0 * self.counts[name] / total if total else 0.0

    def true_share(self, name):
        total = sum(self.cpu_ns.values())
        return 100.0 * self.cpu_ns[name] / total if total else 0.0

    def worst(self, other=None):
        """(name, points) of the burner whose share is furthest from the
        truth, or from other's shares when other is a Measurement."""
        def ref(n):
            return other.spyc_share(n) if other else self.true_share(n)
        return max(((n, abs(self.spyc_share(n) - ref(n)))
                    for n in self.burners), key=lambda x: x[1])

    def table(self, other=None, label="spyc", other_label="truth"):
        rows = ["  %-10s %8s %8s" % ("function", label, other_label)]
        for n in self.burners:
            ref = other.spyc_share(n) if other else self.true_share(n)
            rows.append("  %-10s %7.1f%% %7.1f%%" % (n, self.spyc_share(n),
                                                     ref))
        return "\n".join(rows)


def _wait_file(path, proc, timeout):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise RuntimeError("accuracy target exited with %s" %
                               proc.returncode)
        if time.time() > deadline:
            raise RuntimeError("accuracy target wrote no %s in %.0f s" %
                               (os.path.basename(path), timeout))
        time.sleep(0.01)
    with open(path) as f:
        return json.load(f)


def innermost_counts(folded_path, burners):
    """name -> samples whose innermost frame is that burner (a function's
    frame, "name (file:line)", or a stand-in's such as "<GC>", which has
    no file)."""
    counts = dict((n, 0) for n in burners)
    with open(folded_path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            # Time in the collector is the burner's that set it off,
            # unless the collector is a burner itself (gcwork.py).
            if frames[-1] == GC_FRAME and GC_FRAME not in counts:
                frames = frames[:-1] or [""]
            leaf = frames[-1]
            m = FRAME_NAME_RE.match(leaf)
            name = m.group("name") if m else leaf
            if name in counts:
                counts[name] += int(count)
    return counts


class Target(object):
    """targets/accuracy.py WORKLOAD, started by popen(argv) (a Popen),
    once it has reported; what measure() needs of a conftest.Target."""

    def __init__(self, python_path, workload, workdir, popen):
        self.report_path = os.path.join(workdir, "accuracy.json")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "targets", "accuracy.py")
        self.proc = popen([python_path, script, workload, self.report_path])
        self.pid = self.proc.pid
        self.info = _wait_file(self.report_path, self.proc, 60)


def last_snapshot(report):
    """N of the newest REPORT.json.N the target has written (0: none)."""
    n = 0
    while os.path.exists("%s.%d" % (report, n + 1)):
        n += 1
    return n


def measure(spyc, target, out, rate, duration, extra=(), timeout=120,
            fmt="folded"):
    """Record target (a Target, or a conftest.Target of accuracy.py,
    reported) for duration s at rate Hz into out (in format fmt), between
    two snapshots.  spyc.run(args, timeout=) runs spyc and returns what
    has returncode, stderr and describe() (conftest.SpycResult).  The
    Measurement's counts are read from out when fmt is folded; else they
    are None, and the caller reads out."""
    report = target.report_path
    burners = target.info["burners"]
    snaps = []
    for when in ("before", "after"):
        if when == "after":
            res = spyc.run(["record", "--pid", target.pid, "--rate", rate,
                            "--duration", duration, "--format", fmt,
                            "-o", out] + list(extra), timeout=timeout)
        # The snapshot after the newest one there: a target measured
        # before, or a signal sent again below and handled late, has
        # written some already.
        seq = last_snapshot(report) + 1
        # The signal is handled between two bytecodes: sent again until
        # the snapshot is there (a lost one cannot hang the test).
        for _ in range(50):
            os.kill(target.pid, signal.SIGUSR1)
            try:
                snaps.append(_wait_file("%s.%d" % (report, seq),
                                        target.proc, 0.5))
                break
            except RuntimeError:
                if target.proc.poll() is not None:
                    raise
        else:
            raise RuntimeError("accuracy target took no snapshot")
    cpu_ns = dict((n, snaps[1]["cpu_ns"][n] - snaps[0]["cpu_ns"][n])
                  for n in burners)
    lines = [l for l in res.stderr.splitlines() if l.startswith("spyc: ")]
    m = SUMMARY_RE.match(lines[-1]) if lines else None
    samples = int(m.group("samples")) if m else 0
    dropped = int(m.group("dropped") or 0) if m else 0
    torn = 0
    if m and m.group("why"):
        t = TORN_RE.search(m.group("why"))
        torn = int(t.group(1)) if t else 0
    if fmt != "folded":
        counts = None
    elif os.path.exists(out):
        counts = innermost_counts(out, burners)
    else:
        counts = dict((n, 0) for n in burners)
    return Measurement(burners, counts, cpu_ns, samples, dropped, torn, res)
