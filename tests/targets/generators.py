# SPDX-License-Identifier: MIT
"""Trust target: the main thread runs (CPU-bound, never sleeping) inside
generators, `yield from` chains, generator expressions and coroutines, so
that at almost any moment some generator is being resumed or suspended.

One round of work:
- json: a loop over json.JSONEncoder(check_circular=False).iterencode(d,
  _one_shot=False) on a nested dict (pure-Python generators, `yield from`);
- genexpr: sum(x * x for x in range(n));
- yield_from: a 3-level `yield from` chain (outer -> middle -> inner);
- coroutine: a 3-level coroutine chain (await), suspended at every step by
  an awaitable that yields, and driven by hand with coro.send(None).

Before it starts, the target runs one round under sys.setprofile and
records every (caller, callee) pair of Python frames it saw (frame.f_back
at each "call" event, which is also the resumer of a generator; and, from
3.11 on, a frame that returns a new generator, whose frame ran under it
for a moment), plus the callers above that round; that is the call graph
of the steady state.  It
then reports (with selfreport, while the main thread waits for the
reporter) {"edges": [[[caller name, file], [callee name, file]], ...]}
and loops over rounds forever.

Usage: generators.py REPORT.json
"""

import json
import sys
import types

import selfreport

code_name = selfreport.code_name


def nested_dict(depth, width):
    if depth == 0:
        return {"k%d" % i: [i, "s%d" % i, None, True] for i in range(width)}
    return {"d%d" % i: nested_dict(depth - 1, width) for i in range(width)}


DOC = nested_dict(3, 4)
ENCODER = json.JSONEncoder(check_circular=False)


def json_work():
    total = 0
    for chunk in ENCODER.iterencode(DOC, _one_shot=False):
        total += len(chunk)
    return total


def genexpr_work():
    return sum(x * x for x in range(3000))


def inner_gen(n):
    for i in range(n):
        yield i * 3 + 1


def middle_gen(n):
    yield 0
    yield from inner_gen(n)


def outer_gen(n):
    yield from middle_gen(n)
    yield -1


def yield_from_work():
    total = 0
    for v in outer_gen(2000):
        total += v
    return total


class Step(object):
    """An awaitable that suspends the whole coroutine chain once."""

    def __await__(self):
        yield


async def leaf_coro(n):
    acc = 0
    for i in range(n):
        acc += i * i
        if i % 16 == 0:
            await Step()
    return acc


async def middle_coro(n):
    return await leaf_coro(n)


async def outer_coro(n):
    return await middle_coro(n) + 1


def coroutine_work():
    coro = outer_coro(3000)
    while True:
        try:
            coro.send(None)
        except StopIteration as e:
            return e.value


def one_round():
    return (json_work() + genexpr_work() + yield_from_work()
            + coroutine_work())


GENERATOR_TYPES = (types.GeneratorType, types.CoroutineType,
                   types.AsyncGeneratorType)


def generator_code(gen):
    for attr in ("gi_code", "cr_code", "ag_code"):
        code = getattr(gen, attr, None)
        if code is not None:
            return code
    raise TypeError(gen)


def where(code):
    return [code_name(code), code.co_filename]


def traced_round():
    """Run one round under sys.setprofile; return the edges seen, and
    those of the frames above this one (which stay on the stack)."""
    edges = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_back is not None:
            edges.add((tuple(where(frame.f_back.f_code)),
                       tuple(where(frame.f_code))))
        elif event == "return" and isinstance(arg, GENERATOR_TYPES):
            # From 3.11 a generator function's frame runs for a moment
            # under the frame that calls it (to make the generator), which
            # gives no "call" event; a frame that returns a new generator
            # (JSONEncoder.iterencode) is such a caller.
            edges.add((tuple(where(frame.f_code)),
                       tuple(where(generator_code(arg)))))

    f = sys._getframe(1)
    while f is not None and f.f_back is not None:
        edges.add((tuple(where(f.f_back.f_code)), tuple(where(f.f_code))))
        f = f.f_back
    sys.setprofile(profile)
    try:
        one_round()
    finally:
        sys.setprofile(None)
    return sorted([list(a), list(b)] for a, b in edges)


def main():
    first = one_round()
    edges = traced_round()
    # main -> one_round is a steady-state edge made outside the traced
    # round (main calls one_round itself below).
    edge = [where(main.__code__), where(one_round.__code__)]
    if edge not in edges:
        edges.append(edge)
    # And main waits for the reporter (a first dump may find it there).
    import threading
    join = threading.Thread.join.__code__
    edges.append([where(main.__code__), where(join)])
    wait = getattr(threading.Thread, "_wait_for_tstate_lock", None)
    if wait is not None:        # up to 3.12 join waits in Python
        edges.append([where(join), where(wait.__code__)])
    reporter = selfreport.start(sys.argv[1], 1, {"edges": edges})
    selfreport.ready()
    reporter.join()
    while True:
        if one_round() != first:
            raise SystemExit("one_round() is not deterministic")


if __name__ == "__main__":
    main()
