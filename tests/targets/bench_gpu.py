# SPDX-License-Identifier: MIT
"""The --gpu rows of `make bench`: a training-like loop of "launches"
through the stand-ins for CUPTI and the CUDA driver (tests/fakecuda/, no
GPU needed) between bits of Python work, from a few frames deep.

  python bench_gpu.py FAKE_DIR STEPS plain|alone|agent

agent: start spyc's agent as the CUDA driver would (CUDA_INJECTION64_PATH,
set by `spyc record --gpu`).  alone: no agent, but the stand-in CUPTI
collects the same activities for a client that does nothing with them
(fake_collect_alone), so that agent over alone is the agent's own cost.
Prints one JSON line: the CPU time of the loop (time.process_time), the
VmRSS at its end (KiB) and the launches.
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
print(json.dumps({"cpu": cpu, "rss_kib": vm_rss_kib(),
                  "launches": launches,
                  "kinds": cupti.fake_enabled_kinds(),
                  "subscribed": cupti.fake_subscribed()}))
