/* SPDX-License-Identifier: MIT */
/*
 * Launch stacks: what spyc tells the agent about the target's frames,
 * and the agent's stack records put back together.
 */
#include "gpu/gpustack.h"

#include <string.h>

#include "offsets.h"

/* An offset as the layout holds it: -1 for one that does not apply. */
static int32_t layout_offset(long off)
{
	return off == OFF_NONE || off < 0 || off > INT32_MAX ? -1
							     : (int32_t)off;
}

int gpu_py_layout_fill(const struct py_offsets *off, struct gpu_py_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->cframe_current = l->tstate_base = l->frame_owner = l->owner_skip =
	    -1;
	l->max_frames = GPU_STACK_MAX;
	if (off->iframe_tlbc_index != OFF_NONE)
		return -1;
	if (off->tstate_frame != OFF_NONE) {
		l->kind = GPU_PY_FRAME_OBJECTS;
		l->tstate_frame = layout_offset(off->tstate_frame);
		l->frame_back = layout_offset(off->frame_back);
		l->frame_code = layout_offset(off->frame_code);
		l->frame_pos = layout_offset(off->frame_lasti);
	} else {
		if (off->tstate_cframe != OFF_NONE) {
			l->kind = GPU_PY_CFRAME;
			l->tstate_frame = layout_offset(off->tstate_cframe);
			l->cframe_current =
			    layout_offset(off->cframe_current_frame);
		} else {
			l->kind = GPU_PY_CURRENT_FRAME;
			l->tstate_frame =
			    layout_offset(off->tstate_current_frame);
		}
		l->tstate_base = layout_offset(off->tstate_base_frame);
		l->frame_back = layout_offset(off->iframe_previous);
		l->frame_code = layout_offset(off->iframe_code);
		l->frame_pos = layout_offset(off->iframe_instr);
		l->frame_owner = layout_offset(off->iframe_owner);
		l->owner_skip = layout_offset(off->owner_cstack);
	}
	if (l->tstate_frame < 0 || l->frame_back < 0 || l->frame_code < 0 ||
	    l->frame_pos < 0 ||
	    (l->kind == GPU_PY_CFRAME && l->cframe_current < 0))
		return -1;
	l->sum = gpu_py_layout_sum(l);
	return 0;
}

void gpustack_init(struct gpustack_asm *a)
{
	memset(a, 0, sizeof(*a));
}

static struct gpustack_pending *find_pending(struct gpustack_asm *a,
					     uint64_t correlation)
{
	size_t i;

	for (i = 0; i < GPUSTACK_PENDING; i++)
		if (a->pending[i].used &&
		    a->pending[i].correlation == correlation)
			return &a->pending[i];
	return NULL;
}

/* A free slot, giving up the stack that waited longest if none is. */
static struct gpustack_pending *new_pending(struct gpustack_asm *a)
{
	struct gpustack_pending *oldest = &a->pending[0];
	size_t i;

	for (i = 0; i < GPUSTACK_PENDING; i++) {
		if (!a->pending[i].used)
			return &a->pending[i];
		if (a->pending[i].last < oldest->last)
			oldest = &a->pending[i];
	}
	a->incomplete++;
	oldest->used = 0;
	return oldest;
}

int gpustack_feed(struct gpustack_asm *a, const struct gpu_stack *rec,
		  struct gpustack_done *done)
{
	struct gpustack_pending *p;

	a->fed++;
	memset(done, 0, sizeof(*done));
	done->correlation = rec->correlation;
	done->tid = rec->tid;
	done->range = rec->range; /* every part of a stack names it */
	done->node = (rec->flags & GPU_STACK_NODE) != 0;
	if (rec->alias) {
		done->alias = rec->alias;
		return rec->alias != rec->correlation ? 1 : (a->invalid++, 0);
	}
	/* A thread with no Python frames but NVTX ranges open. */
	if (!rec->depth && !rec->count && !rec->first && rec->range) {
		done->frames = a->one;
		return 1;
	}
	if (!rec->count || rec->count > GPU_STACK_FRAMES ||
	    rec->depth > GPU_STACK_MAX ||
	    (unsigned)rec->first + rec->count > rec->depth) {
		a->invalid++;
		return 0;
	}
	done->cut = rec->flags & GPU_STACK_CUT;
	/* Most stacks fit one record. */
	if (!rec->first && rec->count == rec->depth) {
		memcpy(a->one, rec->frames, rec->count * sizeof(*a->one));
		done->nr = rec->count;
		done->frames = a->one;
		return 1;
	}
	/* (A node's and a launch's ids may be equal: pieces of each are
	 * told apart by their thread, depth and place.) */
	p = find_pending(a, rec->correlation);
	if (p && (p->have != rec->first || p->depth != rec->depth ||
		  p->tid != rec->tid)) {
		a->incomplete++;
		p->used = 0;
		if (rec->first)
			return 0;
		p = NULL;
	}
	if (!p) {
		/* Its first part was lost. */
		if (rec->first) {
			a->incomplete++;
			return 0;
		}
		p = new_pending(a);
		p->used = 1;
		p->correlation = rec->correlation;
		p->tid = rec->tid;
		p->depth = rec->depth;
		p->have = 0;
	}
	p->cut = done->cut;
	p->last = a->fed;
	memcpy(p->frames + p->have, rec->frames,
	       rec->count * sizeof(*p->frames));
	p->have += rec->count;
	if (p->have < p->depth)
		return 0;
	p->used = 0;
	done->nr = p->depth;
	done->frames = p->frames;
	return 1;
}
