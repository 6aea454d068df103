/* SPDX-License-Identifier: MIT */
/*
 * The agent's copy of the calling thread's Python stack, taken in its own
 * process at a CUDA launch: code objects and positions only, named later
 * by spyc.
 */
#ifndef SPYC_AGENT_PYSTACK_H
#define SPYC_AGENT_PYSTACK_H

#include <stddef.h>

#include "gpu/gpuchan-layout.h"

/*
 * Find the interpreter's function that gives a thread its thread state.
 * Returns 0, or -1 when the process has no Python (no stacks then).
 */
int pystack_init(void);

/*
 * Copy the calling thread's Python frames, innermost first, into out
 * (at most min(max, layout->max_frames)), as layout (a checked copy)
 * says where they are.  Returns how many; *cut is set when there were
 * more.  0 for a thread with no Python frames or no thread state.
 */
size_t pystack_copy(const struct gpu_py_layout *layout,
		    struct gpu_stack_frame *out, size_t max, int *cut);

#endif
