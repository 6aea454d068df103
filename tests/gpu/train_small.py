# SPDX-License-Identifier: MIT
"""A small PyTorch training loop on the GPU, for tests/gpu: a few Linear
layers, a DataLoader, .to('cuda').  The line that calls the model in the
timed steps is marked, so that the test can find it in spyc's GPU
stacks.  Those forward passes are also timed with torch.cuda.Event,
which the test compares with the GPU time spyc finds under that line;
the layers are large enough that the GPU, not the launches, sets the
pace (a forward pass is 4 ms of GEMMs on an H200, against some 0.3 ms
between the first event and the first kernel).  The model is warmed up first from another line (cuBLAS picks its
kernels then), and TF32 is set explicitly, so that every timed step runs
the same kernels.  With --progress N it prints "step S loss L" every N
steps, flushed, for a test that attaches mid-run and compares the losses
with a run of its own.  With --torch-profiler N, the first N timed steps
run under torch.profiler, which counts the CUDA kernels it saw.  With
--nvtx, each timed step runs inside torch.cuda.nvtx ranges ("step",
"forward" around the layers' call, "backward" around backward()); with
--emit-nvtx, under torch.autograd.profiler.emit_nvtx too (a range per
op, forward and backward).  Ends
with one JSON line: the loss, the steps, the forward passes' GPU time
(ms), the timed steps' wall time (s) and the profiler's kernel count."""
import argparse
import contextlib
import json
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

WIDTH = 4096
BATCH = 2048
WARMUP = 3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("steps", type=int, nargs="?", default=200)
    parser.add_argument("--progress", type=int, default=0)
    parser.add_argument("--torch-profiler", type=int, default=0)
    parser.add_argument("--nvtx", action="store_true")
    parser.add_argument("--emit-nvtx", action="store_true")
    args = parser.parse_args()

    def nvtx(name):
        if args.nvtx:
            return torch.cuda.nvtx.range(name)
        return contextlib.nullcontext()

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
    profiled = None
    watch = contextlib.ExitStack()
    if args.torch_profiler:
        profiled = watch.enter_context(torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CUDA]))
    if args.emit_nvtx:
        watch.enter_context(torch.autograd.profiler.emit_nvtx())
    started = time.monotonic()
    while done < args.steps:
        for x, y in loader:
            x, y = x.to("cuda"), y.to("cuda")
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            with nvtx("step"):
                begin.record()
                with nvtx("forward"):
                    out = model(x)  # LAYER-CALL
                end.record()
                loss = torch.nn.functional.mse_loss(out, y)
                opt.zero_grad()
                with nvtx("backward"):
                    loss.backward()  # BACKWARD-CALL
                opt.step()
            end.synchronize()
            forward_ms += begin.elapsed_time(end)
            done += 1
            if done == args.torch_profiler:
                watch.close()
            if args.progress and done % args.progress == 0:
                print("step %d loss %r" % (done, loss.item()), flush=True)
            if done >= args.steps:
                break
    torch.cuda.synchronize()
    wall_s = time.monotonic() - started
    watch.close()
    kernels = None
    if profiled is not None:
        kernels = sum(1 for e in profiled.events()
                      if e.device_type == torch.autograd.DeviceType.CUDA)
    print(json.dumps({"loss": loss.item(), "steps": done,
                      "forward_ms": forward_ms, "wall_s": wall_s,
                      "profiler_kernels": kernels}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
