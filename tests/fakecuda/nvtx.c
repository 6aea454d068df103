/* SPDX-License-Identifier: MIT */
/*
 * A library that uses NVTX as PyTorch and the nvtx package do: built
 * from NVIDIA's NVTX 3 headers, NVTX's own loader included (it reads
 * NVTX_INJECTION64_PATH at the first call), with NVTX's functions
 * exported for a test program to call through ctypes.  Nothing here is
 * a stand-in: the tests run the agent against NVIDIA's loader.
 */
#define NVTX_EXPORT_API
#include <nvtx3/nvToolsExt.h>
