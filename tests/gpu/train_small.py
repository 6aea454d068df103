# SPDX-License-Identifier: MIT
"""A small PyTorch training loop on the GPU, for tests/gpu: a few Linear
layers, a DataLoader, .to('cuda').  The line that calls the model in the
timed steps is marked, so that the test can find it in spyc's GPU
stacks.  Those forward passes are also timed with torch.cuda.Event,
which the test compares with the GPU time spyc finds under that line;
the layers are large enough that the GPU, not the launches, sets the
pace.  The model is warmed up first from another line (cuBLAS picks its
kernels then), and TF32 is set explicitly, so that every timed step runs
the same kernels.  With --progress N it prints "step S loss L" every N
steps, flushed, for a test that attaches mid-run and compares the losses
with a run of its own.  Ends with one JSON line."""
import argparse
import json
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

WIDTH = 4096
BATCH = 1024
WARMUP = 3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("steps", type=int, nargs="?", default=200)
    parser.add_argument("--progress", type=int, default=0)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(8 * BATCH, WIDTH),
                         torch.randn(8 * BATCH, WIDTH))
    loader = DataLoader(data, batch_size=BATCH, shuffle=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH)).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with torch.no_grad():
        warm = torch.randn(BATCH, WIDTH, device="cuda")
        for _ in range(WARMUP):
            model(warm)  # WARM-UP
    torch.cuda.synchronize()
    forward_ms = 0.0
    done = 0
    while done < args.steps:
        for x, y in loader:
            x, y = x.to("cuda"), y.to("cuda")
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            out = model(x)  # LAYER-CALL
            end.record()
            loss = torch.nn.functional.mse_loss(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            end.synchronize()
            forward_ms += begin.elapsed_time(end)
            done += 1
            if args.progress and done % args.progress == 0:
                print("step %d loss %r" % (done, loss.item()), flush=True)
            if done >= args.steps:
                break
    torch.cuda.synchronize()
    print(json.dumps({"loss": loss.item(), "steps": done,
                      "forward_ms": forward_ms}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
