/* SPDX-License-Identifier: MIT */
/* The GPU agent seen from spyc: where it is, and loading it into a target. */
#ifndef SPYC_GPU_H
#define SPYC_GPU_H

#include <stddef.h>
#include <sys/types.h>

#include "gpuchan.h"

/*
 * The agent library: $SPYC_AGENT if set, else spyc-agent.so beside the
 * running spyc executable (the build tree), else in ../lib/spyc/ from
 * it (where make install puts it).  Returns a path the caller frees, or NULL
 * (with why set to one line) when spyc was built without the agent or
 * the file is missing.
 */
char *gpu_agent_path(char *why, size_t size);

/*
 * Create a channel for pid (a file the target's user may open), load
 * the agent into pid (src/inject.c) and have it report there.  Returns
 * 0 with chan ready and st the status the agent reached (it may well be
 * GPU_AGENT_NO_CUDA), or a negative errno as inject_library() does,
 * with msg set to one line; chan is then released.
 */
int gpu_attach(pid_t pid, const char *agent, struct gpuchan *chan,
	       struct gpuchan_state *st, char *msg, size_t size);

#endif
