/* SPDX-License-Identifier: MIT */
/* What the agent's files share: the clock, and the NVTX range open. */
#ifndef SPYC_AGENT_H
#define SPYC_AGENT_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns: spyc's clock, and CUPTI's once it is set to it. */
uint64_t agent_monotonic_ns(void);

/*
 * The id of the innermost NVTX range open on the calling thread that
 * spyc was told of (agent/nvtx.c), 0 if none.
 */
uint64_t nvtx_innermost(void);

#endif
