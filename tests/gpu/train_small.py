# SPDX-License-Identifier: MIT
"""A small PyTorch training loop on the GPU, for tests/gpu: a few Linear
layers, a DataLoader, .to('cuda').  The line that calls the model is
marked, so that the test can find it in spyc's GPU stacks.  The forward
passes are also timed with torch.cuda.Event, which the test compares with
the GPU time spyc finds under that line; the layers are large enough that
the GPU, not the launches, sets the pace.  Prints one JSON line."""
import json
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

WIDTH = 4096
BATCH = 1024


def main(steps):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(8 * BATCH, WIDTH),
                         torch.randn(8 * BATCH, WIDTH))
    loader = DataLoader(data, batch_size=BATCH, shuffle=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH)).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    forward_ms = 0.0
    done = 0
    while done < steps:
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
            if done >= steps:
                break
    torch.cuda.synchronize()
    print(json.dumps({"loss": loss.item(), "steps": done,
                      "forward_ms": forward_ms}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
