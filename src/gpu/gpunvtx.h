/* SPDX-License-Identifier: MIT */
/*
 * NVTX ranges as the agent reported them (GPU_REC_RANGE): which ranges
 * were open around each launch, as paths of range names, and each
 * range's time on its thread, for the timeline.  Pure: no target, no
 * channel.
 */
#ifndef SPYC_GPUNVTX_H
#define SPYC_GPUNVTX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpu/gpuchan-layout.h"
#include "profile/stacks.h"

/* How a range shows as a frame: "[NVTX] forward". */
#define GPU_NVTX_PREFIX "[NVTX] "
/* Whether a frame of this name stands for an NVTX range. */
static inline int gpunvtx_frame(const char *name)
{
	return !strncmp(name, GPU_NVTX_PREFIX, sizeof(GPU_NVTX_PREFIX) - 1);
}

/* The deepest path of ranges a launch is put under. */
#define GPU_NVTX_DEPTH 64

/*
 * A path of ranges, one inside the next: node 0 is none; node i is the
 * range named name (a frame of names) inside the path parent.
 */
struct gpunvtx_node {
	uint32_t parent, name;
};

/* A range pushed and not popped yet. */
struct gpunvtx_open {
	uint64_t id, start;
	uint32_t tid, node;
};

/* A range on its thread's timeline: times are spyc's clock's. */
struct gpunvtx_range {
	uint64_t start, end;
	uint32_t tid, node;
};

struct gpunvtx {
	struct gpunvtx_node *nodes;
	size_t nr_nodes, alloc_nodes;
	uint32_t *node_index; /* by (parent, name): node + 1, 0 a free slot */
	size_t node_index_size;
	struct stacks names; /* frame i: a range's name as frames show it */
	struct gpunvtx_open *open;
	size_t nr_open, alloc_open;
	/* popped (and at the end those still open): the newest ones */
	struct gpunvtx_range *ranges;
	size_t nr_ranges, alloc_ranges;
	uint64_t pushed, popped;
	uint64_t off_timeline; /* ranges let go of, the newest kept */
	uint64_t open_lost;    /* open ones given up (their pop never came) */
};

void gpunvtx_init(struct gpunvtx *nv);
void gpunvtx_release(struct gpunvtx *nv);

/*
 * Take a range pushed or popped.  Once keep and an eighth more ranges
 * are on the timeline, only the newest keep stay there.
 */
void gpunvtx_add(struct gpunvtx *nv, const struct gpu_range *r, size_t keep);

/* The path of the open range with this id: 0 when none is known. */
uint32_t gpunvtx_node_of(const struct gpunvtx *nv, uint64_t id);

/*
 * The path of the innermost range open on thread tid at t, as far as the
 * timeline still holds it: 0 if none.
 */
uint32_t gpunvtx_node_at(const struct gpunvtx *nv, uint32_t tid, uint64_t t);

/*
 * The frame names of a path's ranges, outermost first, at most max of
 * the innermost; returns how many.  Valid while nv is.
 */
size_t gpunvtx_path(const struct gpunvtx *nv, uint32_t node, const char **names,
		    size_t max);

/* A path's innermost range's name, as frames show it ("" for none). */
const char *gpunvtx_name(const struct gpunvtx *nv, uint32_t node);

/* The ranges still open, put on the timeline as ending at end. */
void gpunvtx_close_open(struct gpunvtx *nv, uint64_t end);

/*
 * The name a range is grouped by: the message up to PyTorch's
 * ", seq = " (and ", op_id = ", ", sizes = ", ", input_op_ids = "),
 * which torch.autograd.profiler.emit_nvtx adds to every op's range and
 * which would make each call a frame of its own.  Returns its length.
 */
size_t gpunvtx_group_len(const char *name, size_t len);

#endif
