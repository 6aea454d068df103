/* SPDX-License-Identifier: MIT */
/* The GPU agent seen from spyc: where it is, and loading it into a target. */
#ifndef SPYC_GPU_H
#define SPYC_GPU_H

#include <stddef.h>
#include <sys/types.h>

#include "gpu/gpuchan.h"

/*
 * The agent library: $SPYC_AGENT if set, else spyc-agent.so beside the
 * running spyc executable (the build tree), else in ../lib/spyc/ from
 * it (where make install puts it).  Returns a path the caller frees, or NULL
 * (with why set to one line) when spyc was built without the agent or
 * the file is missing.
 */
char *gpu_agent_path(char *why, size_t size);

/* How the agent came into the target. */
enum gpu_load_way {
	GPU_LOADED_PTRACE, /* dlopen called by a thread spyc held (inject.c) */
	GPU_LOADED_PEP768, /* a Python script the target ran (remoteexec.c) */
};

struct gpu_attach_result {
	enum gpu_load_way way;
	/* With ptrace: why PEP 768 was not used, one line; else "" */
	char why_not_pep768[256];
};

/*
 * Create a channel for pid (a file the target's user may open), load
 * the agent into pid and have it report there.  From CPython 3.14, where
 * the target allows it, the target's main thread loads it with ctypes
 * in a script it runs through PEP 768 (sys.remote_exec); when the target
 * does not allow it, or its main thread reaches no eval breaker within
 * 2 s, spyc loads it with ptrace (src/sys/inject.c), as for older versions.
 * A token file that the script and spyc each try to rename makes sure
 * the agent is loaded once, one way.  how says which way was used.
 * Returns 0 with chan ready and st the status the agent reached (it may
 * well be GPU_AGENT_NO_CUDA), or a negative errno as inject_library()
 * does, with msg set to one line; chan is then released.
 */
int gpu_attach(pid_t pid, const char *agent, struct gpuchan *chan,
	       struct gpuchan_state *st, struct gpu_attach_result *how,
	       char *msg, size_t size);

/* "PEP 768" or "ptrace", for messages.  Never NULL. */
const char *gpu_load_way_name(enum gpu_load_way way);

#endif
