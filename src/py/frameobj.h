/* SPDX-License-Identifier: MIT */
/* Up to CPython 3.10: walking a thread's chain of frame objects. */
#ifndef SPYC_FRAMEOBJ_H
#define SPYC_FRAMEOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "py/pysample.h"

/*
 * Append the frames of the thread whose PyThreadState is at tstate
 * (already copied into ps->tstate_buf) to out, innermost first, as code
 * addresses and instruction offsets in ps's scratch; sets
 * ps->root_frame.  Returns DROP_NONE or why the sample must be dropped
 * (then out has none of them).
 */
enum drop_reason frameobj_walk(struct py_sampler *ps, uint64_t tstate,
			       struct py_sample *out);

/*
 * Before walking threads whose thread states ps->tstate_bufs hold (the
 * n at tstates[i] for which walk[i] is set): make each walk's first
 * read (its thread state again, the frames of its recent walks) for all
 * of them in one process_vm_readv.
 */
void frameobj_prefetch(struct py_sampler *ps, const uint64_t *tstates,
		       const int *walk, size_t n);

/* Free what frameobj keeps in ps. */
void frameobj_release(struct py_sampler *ps);

#endif
