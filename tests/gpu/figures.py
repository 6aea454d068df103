# SPDX-License-Identifier: MIT
"""The figures of a `spyc record --gpu` profile (speedscope JSON) of one
of tests/gpu's programs, for a person reading a real-GPU run: the GPU
time under each marked line of the program (and how much of it GEMMs),
by the root spyc put it under, the heaviest kernels, the longest kernel
name, and spyc's own counts (spyc_gpu).  The tests assert on the same
profile; this prints what they measured, pass or fail.

Usage: figures.py PROFILE.json PROGRAM.py [MARKER...]
"""
import json
import sys

GEMM_FAMILIES = ("gemm", "xmma", "cutlass", "nvjet")
GPU_STACKS = "GPU time by launching stack"
GPU_CAPTURED = "GPU time of graph kernels by capturing stack"


def marked_lines(program, markers):
    lines = {}
    with open(program) as f:
        for n, text in enumerate(f, 1):
            for m in markers:
                if "# " + m in text:
                    lines[n] = m
    return lines


def gpu_samples(doc, profile=GPU_STACKS):
    frames = doc["shared"]["frames"]
    for p in doc["profiles"]:
        if p["name"].startswith(profile):
            for s, w in zip(p["samples"], p["weights"]):
                yield [frames[i] for i in s], w


def main():
    path, program, markers = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    lines = marked_lines(program, markers)
    name = program.rsplit("/", 1)[-1]
    by_marker = dict((m, [0.0, 0.0]) for m in markers)
    roots, leaves = {}, {}
    total = 0.0
    longest = ""
    for stack, w in gpu_samples(doc):
        total += w
        root = stack[0]["name"] if stack else "?"
        roots[root] = roots.get(root, 0.0) + w
        leaf = stack[-1]["name"] if stack else "?"
        leaves[leaf] = leaves.get(leaf, 0.0) + w
        if len(leaf) > len(longest):
            longest = leaf
        gemm = any(k in leaf.lower() for k in GEMM_FAMILIES)
        for fr in stack:
            if fr.get("file", "").endswith(name) and fr.get("line") in lines:
                slot = by_marker[lines[fr["line"]]]
                slot[0] += w
                if gemm:
                    slot[1] += w
                break
    print("%s: GPU time %.1f ms" % (path, total * 1e3))
    for m in markers:
        print("  under %-15s %9.1f ms (GEMMs %.1f ms)" % (
            m, by_marker[m][0] * 1e3, by_marker[m][1] * 1e3))
    for root, w in sorted(roots.items(), key=lambda kv: -kv[1]):
        print("  root %9.1f ms  %s" % (w * 1e3, root[:100]))
    for leaf, w in sorted(leaves.items(), key=lambda kv: -kv[1])[:8]:
        print("  kernel %9.1f ms  %s" % (w * 1e3, leaf[:140]))
    print("  longest kernel name: %d characters" % len(longest))
    captured = dict((m, 0.0) for m in markers)
    for stack, w in gpu_samples(doc, GPU_CAPTURED):
        for fr in stack:
            if fr.get("file", "").endswith(name) and fr.get("line") in lines:
                captured[lines[fr["line"]]] += w
                break
    for m in markers:
        if captured[m]:
            print("  graph kernels by capturing stack, under %-15s %9.1f ms"
                  % (m, captured[m] * 1e3))
    print("  spyc_gpu: " + json.dumps(dict(
        (k, v) for k, v in doc.get("spyc_gpu", {}).items()
        if k != "attribution")))


if __name__ == "__main__":
    sys.exit(main())
