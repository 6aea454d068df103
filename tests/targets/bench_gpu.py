# SPDX-License-Identifier: MIT
"""The --gpu rows of `make bench`: a training-like loop of "launches"
through the stand-ins for CUPTI and the CUDA driver (tests/fakecuda/, no
GPU needed) between bits of Python work, from a few frames deep.

  python bench_gpu.py FAKE_DIR STEPS plain|alone|agent [NVTX_PAIRS]

agent: start spyc's agent as the CUDA driver would (CUDA_INJECTION64_PATH,
set by `spyc record --gpu`).  alone: no agent, but the stand-in CUPTI
collects the same activities for a client that does nothing with them
(fake_collect_alone), so that agent over alone is the agent's own cost.
With NVTX_PAIRS, then times that many NVTX ranges pushed and popped
through NVIDIA's own loader (tests/fakecuda/libnvtx.so): no tool, unless
`spyc record --gpu` named its agent in NVTX_INJECTION64_PATH.
Prints one JSON line: the CPU time of the loop (time.process_time), the
VmRSS at its end (KiB), the launches and the ns per NVTX range (the
fastest round of 1000; null without NVTX_PAIRS).
"""
import ctypes
import json
import os
import sys
import time

fake, steps, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctypes.CDLL(os.path.join(fake, "libcuda.so.1"))
cupti = ctypes.CDLL(os.path.join(fake, "libcupti.so"))
cupti.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong,
                              ctypes.c_uint]
if mode == "agent":
    ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
elif mode == "alone" and cupti.fake_collect_alone() != 0:
    sys.exit("bench_gpu.py: fake_collect_alone failed")
launches = 0


def layer(x):
    global launches
    cupti.fake_launch(b"gemm_kernel", 20000, 7)
    launches += 1
    return x + sum(i * i for i in range(300))


def forward(x):
    for _ in range(8):
        x = layer(x) % 1000
    return x


def vm_rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


start = time.process_time()
x = 0
for _ in range(steps):
    x = forward(x)
cpu = time.process_time() - start
nvtx_ns = None
if len(sys.argv) > 4:
    # Rounds of 1000 with a pause between, some 200k ranges a second as
    # a busy emit_nvtx does, which the channel takes without a loss.
    rounds, pairs = max(1, int(sys.argv[4]) // 1000), 1000
    nvtx = ctypes.CDLL(os.path.join(fake, "libnvtx.so"))
    push, pop = nvtx.nvtxRangePushA, nvtx.nvtxRangePop
    push.argtypes = [ctypes.c_char_p]
    push(b"warm-up")  # NVTX's loader finds its tool at the first call
    pop()
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(pairs):
            push(b"op")
            pop()
        ns = (time.perf_counter() - t) * 1e9 / pairs
        nvtx_ns = ns if nvtx_ns is None else min(nvtx_ns, ns)
        time.sleep(0.005)
print(json.dumps({"cpu": cpu, "rss_kib": vm_rss_kib(),
                  "launches": launches, "nvtx_ns": nvtx_ns,
                  "kinds": cupti.fake_enabled_kinds(),
                  "subscribed": cupti.fake_subscribed()}))
