# SPDX-License-Identifier: MIT
"""A small, realistic program to show what a spyc profile looks like.

Each round parses a generated CSV-like log, scores the records with a
numeric loop, sorts them, and renders a text report; the four phases cost
visibly different amounts of time.  Runs for about SECONDS (default 3),
then prints a summary and exits 0.

Usage: demo.py [SECONDS]
"""

import math
import random
import sys
import time


def generate_log(rng, n):
    users = ["alice", "bob", "carol", "dave", "erin", "frank"]
    lines = []
    for i in range(n):
        lines.append("%d,%s,%d,%.3f" % (i, rng.choice(users),
                                        rng.randint(100, 599),
                                        rng.random() * 2.5))
    return "\n".join(lines)


def parse_record(line):
    ident, user, status, latency = line.split(",")
    return {"id": int(ident), "user": user, "status": int(status),
            "latency": float(latency)}


def parse(text):
    return [parse_record(line) for line in text.splitlines() if line]


def score(records):
    # Deliberately numeric and loop-heavy: the hottest phase.
    for r in records:
        x = r["latency"]
        s = 0.0
        for k in range(1, 40):
            s += math.sin(x * k) / k
        r["score"] = s * (2 if r["status"] >= 500 else 1)
    return records


def rank(records):
    return sorted(records, key=lambda r: (-r["score"], r["user"], r["id"]))


def render(records, limit):
    out = []
    for r in records[:limit]:
        out.append("%6d %-6s %3d %8.3f %+.4f" % (r["id"], r["user"],
                                                 r["status"], r["latency"],
                                                 r["score"]))
    return "\n".join(out)


def one_round(rng):
    text = generate_log(rng, 2000)
    records = score(parse(text))
    return render(rank(records), 200)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    rng = random.Random(42)
    deadline = time.time() + seconds
    rounds = 0
    report = ""
    while time.time() < deadline:
        report = one_round(rng)
        rounds += 1
    print("demo: %d rounds, last report has %d lines" %
          (rounds, len(report.splitlines())))


if __name__ == "__main__":
    main()
