# SPDX-License-Identifier: MIT
"""Trust target: many short calls with a call graph known by construction,
so that frame objects are freed and reused all the time (on 3.6 .. 3.10
through each code object's spare frame and the interpreter's free list,
between different code objects when a function recurses).

The functions are generated from CALLS: cg_X(n) does a little arithmetic
and calls each function CALLS lists for it, in order; a function that
lists itself recurses while n > 0 (n counts down), so recursion stays
short.  The main thread calls cg_root forever from main(), never sleeping.

It reports (with selfreport, while the main thread waits for the
reporter) {"edges": [[caller, callee], ...]}: every pair of function
names that can be caller and callee in the steady state, that is
<module> -> main, main -> cg_root and CALLS, and
{"generated_file": the file name the generated functions have}.

Usage: callgraph.py REPORT.json
"""

import sys

import selfreport

GENERATED_FILE = "<callgraph>"

CALLS = {
    "cg_root": ["cg_a", "cg_b", "cg_rec", "cg_c"],
    "cg_a": ["cg_leaf1", "cg_d", "cg_leaf2"],
    "cg_b": ["cg_d", "cg_e"],
    "cg_c": ["cg_e", "cg_pingpong"],
    "cg_d": ["cg_leaf2", "cg_leaf3"],
    "cg_e": ["cg_leaf1", "cg_leaf3", "cg_leaf4"],
    "cg_rec": ["cg_rec", "cg_leaf4"],
    "cg_pingpong": ["cg_pongping"],
    "cg_pongping": ["cg_pingpong", "cg_leaf1"],
    "cg_leaf1": [],
    "cg_leaf2": [],
    "cg_leaf3": [],
    "cg_leaf4": [],
}
# Recursion: cg_rec calls itself, cg_pingpong and cg_pongping call each
# other; both stop when n reaches 0.
RECURSIVE = {("cg_rec", "cg_rec"), ("cg_pongping", "cg_pingpong")}


def generate():
    lines = []
    for name in sorted(CALLS):
        lines.append("def %s(n):" % name)
        lines.append("    s = n * 7 + %d" % len(name))
        for callee in CALLS[name]:
            if (name, callee) in RECURSIVE:
                lines.append("    if n > 0:")
                lines.append("        s += %s(n - 1)" % callee)
            elif callee == "cg_pingpong" or callee == "cg_rec":
                lines.append("    s += %s(n %% 6 + 1)" % callee)
            else:
                lines.append("    s += %s(n)" % callee)
        lines.append("    return s % 1000003")
        lines.append("")
    return "\n".join(lines)


exec(compile(generate(), GENERATED_FILE, "exec"), globals())


def main():
    edges = [["<module>", "main"], ["main", "cg_root"]]
    for caller in sorted(CALLS):
        for callee in CALLS[caller]:
            edges.append([caller, callee])
    first = cg_root(0)  # noqa: F821 (generated)
    reporter = selfreport.start(sys.argv[1], 1, {
        "edges": edges, "generated_file": GENERATED_FILE})
    selfreport.ready()
    reporter.join()
    i = 0
    while True:
        i += 1
        s = cg_root(i % 5)  # noqa: F821 (generated)
        if i % 5 == 0 and s != first:
            raise SystemExit("cg_root() is not deterministic")


if __name__ == "__main__":
    main()
