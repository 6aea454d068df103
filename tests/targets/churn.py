# SPDX-License-Identifier: MIT
"""A target that keeps changing under a profiler: threads start and end,
code objects are created and freed (so their addresses are reused),
generators and coroutines suspend and resume, recursion depth varies,
exceptions unwind.  Runs argv[1] work rounds, then prints a checksum that
depends only on the work done, so a profiled run must print the same as an
unprofiled one with the same round count.

With argv[2] == "bounded" the fresh functions' names and file names cycle
through a thousand, so that the set of distinct stacks stops growing while
everything else keeps churning (make soak)."""

import sys
import threading

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
NAMES = 1000 if sys.argv[2:3] == ["bounded"] else None


def recurse(n, acc):
    if n == 0:
        return acc
    return recurse(n - 1, (acc * 31 + n) % 1000003)


def gen(n):
    for i in range(n):
        yield recurse(i % 40, i)


async def coro(n):
    return sum(gen(n))


def run_coro(n):
    c = coro(n)
    try:
        c.send(None)
    except StopIteration as e:
        return e.value


def fresh_function(i):
    # A new code object every call; the old one is freed.
    ns = {}
    name = i % NAMES if NAMES else i
    exec(compile("def f%d(x):\n    return x * %d + 1\n" % (name, i % 7),
                 "<churn-%d>" % name, "exec"), ns)
    return ns["f%d" % name](i)


def failing(n):
    if n == 0:
        raise ValueError("bottom")
    return failing(n - 1)


def worker(seed, out, idx):
    total = 0
    for i in range(30):
        total += run_coro(10 + (seed + i) % 20)
        total += fresh_function(seed * 100 + i)
        try:
            failing((seed + i) % 30)
        except ValueError:
            total += 1
    out[idx] = total % 1000000007


def main():
    checksum = 0
    for r in range(ROUNDS):
        out = [0] * 4
        threads = [threading.Thread(target=worker, args=(r * 4 + k, out, k))
                   for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        checksum = (checksum * 7 + sum(out)) % 1000000007
    print("checksum %d" % checksum)


if __name__ == "__main__":
    main()
