# SPDX-License-Identifier: MIT
"""A small PyTorch training loop on the GPU, for tests/gpu: a few Linear
layers, a DataLoader, .to('cuda').  The line that calls the model is
marked, so that the test can find it in spyc's GPU stacks."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def main(steps):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(4096, 512), torch.randn(4096, 512))
    loader = DataLoader(data, batch_size=256, shuffle=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 512)).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    done = 0
    while done < steps:
        for x, y in loader:
            x, y = x.to("cuda"), y.to("cuda")
            out = model(x)  # LAYER-CALL
            loss = torch.nn.functional.mse_loss(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done >= steps:
                break
    torch.cuda.synchronize()
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
