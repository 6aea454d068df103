/* SPDX-License-Identifier: MIT */
/*
 * Launch stacks: the layout of the target's frames that spyc hands its
 * GPU agent, and the agent's copies of launching threads' stacks put
 * back together from their records.  Pure: no target, no channel.
 */
#ifndef SPYC_GPUSTACK_H
#define SPYC_GPUSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpuchan-layout.h"

struct py_offsets;

/*
 * The layout for a CPython whose offsets are off (sum set, ready left
 * 0).  Returns 0, or -1 for a build whose frames the agent cannot copy
 * (free-threaded ones, whose frames may run a thread's own copy of the
 * bytecode): the agent then copies no stacks.
 */
int gpu_py_layout_fill(const struct py_offsets *off,
		       struct gpu_py_layout *layout);

/* Stacks of several records being put together: a few at a time. */
#define GPUSTACK_PENDING 16

/* A stack put together: valid until the next gpustack_feed(). */
struct gpustack_done {
	uint64_t correlation; /* a launch's, or a node's id */
	uint32_t tid;
	uint64_t alias; /* not 0: the stack is the launch (or node) alias's */
	int cut;	/* the agent kept only the innermost GPU_STACK_MAX */
	int node; /* a graph node's (GPU_STACK_NODE): correlation is its id */
	uint64_t range; /* the innermost NVTX range open (gpu_stack.range) */
	size_t nr;	/* frames, innermost first */
	const struct gpu_stack_frame *frames;
};

struct gpustack_asm {
	struct gpustack_pending {
		uint64_t correlation;
		uint32_t tid;
		unsigned depth, have;
		int cut, used;
		uint64_t last; /* when a part last came (feed count) */
		struct gpu_stack_frame frames[GPU_STACK_MAX];
	} pending[GPUSTACK_PENDING];
	struct gpu_stack_frame one[GPU_STACK_FRAMES];
	uint64_t fed;
	uint64_t invalid;    /* records that made no sense (torn) */
	uint64_t incomplete; /* stacks given up with parts missing */
};

void gpustack_init(struct gpustack_asm *a);

/*
 * Take one GPU_REC_STACK record.  Returns 1 with *done filled when it
 * completes a stack (or is an alias), else 0.  Parts of a stack come in
 * order; one out of order, or missing (the ring dropped it), gives up
 * that stack (counted in incomplete); a record that makes no sense is
 * counted in invalid.
 */
int gpustack_feed(struct gpustack_asm *a, const struct gpu_stack *rec,
		  struct gpustack_done *done);

#endif
