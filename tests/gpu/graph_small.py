# SPDX-License-Identifier: MIT
"""CUDA graphs for tests/gpu: a few Linear layers captured once and
replayed, either by hand (torch.cuda.CUDAGraph, mode "graph") or by
torch.compile(mode="reduce-overhead") (mode "compile").  The capture and
the warm-up run from their own lines; the replays from a marked line,
timed with torch.cuda.Event, which the test compares with the GPU time
spyc puts under that line (a replayed kernel carries the graph launch's
correlation id; no kernel runs from a launch made during the capture).
Ends with one JSON line: the replays and their GPU time (ms).

Usage: graph_small.py graph|compile [REPLAYS]
"""
import json
import sys

import torch

WIDTH = 4096
BATCH = 1024


def build():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH)).to("cuda")


def by_hand(model, x, replays):
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)  # WARM-UP
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = model(x)  # CAPTURE
    torch.cuda.synchronize()
    begin = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(replays):
        graph.replay()  # GRAPH-REPLAY
    end.record()
    end.synchronize()
    return out, begin.elapsed_time(end)


def compiled(model, x, replays):
    fast = torch.compile(model, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):
            fast(x)  # COMPILED-WARM-UP
        torch.cuda.synchronize()
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(replays):
            out = fast(x)  # COMPILED-CALL
        end.record()
        end.synchronize()
    return out, begin.elapsed_time(end)


def main():
    mode = sys.argv[1]
    replays = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    model = build()
    x = torch.randn(BATCH, WIDTH, device="cuda")
    run = {"graph": by_hand, "compile": compiled}[mode]
    out, ms = run(model, x, replays)
    torch.cuda.synchronize()
    print(json.dumps({"mode": mode, "replays": replays, "replay_ms": ms,
                      "sum": float(out.float().sum())}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
