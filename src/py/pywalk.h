/* SPDX-License-Identifier: MIT */
/* What the frame walks of every CPython layout share (pyframe.c for 3.11+,
 * frameobj.c up to 3.10): bounding a chain, and noting its frames. */
#ifndef SPYC_PYWALK_H
#define SPYC_PYWALK_H

#include <stdint.h>

#include "py/pysample.h"

/*
 * Brent's cycle finding over the addresses of one chain: a torn read
 * can link frames into a loop, which must end the walk early and
 * cheaply.  Also bounds the walk at PY_WALK_LIMIT frames.
 */
struct pywalk_loop {
	uint64_t mark; /* an address seen earlier in the chain */
	size_t power, since, steps;
};

void pywalk_loop_init(struct pywalk_loop *lc);

/*
 * DROP_INVALID if addr closes a loop (only torn data links a chain into
 * one), DROP_DEPTH if the chain is longer than PY_WALK_LIMIT, else
 * DROP_NONE.
 */
enum drop_reason pywalk_loop_step(struct pywalk_loop *lc, uint64_t addr);

/* ps->entries[] value of the "[N frames not read]" stand-in (code is N). */
#define PYWALK_PLACEHOLDER 2

/*
 * Note a frame of the walk at the end of out, in ps's scratch, for
 * pyresolve_frames: where it is (frame, 0 for a stand-in), its code's
 * address, its instruction's offset (addrq, -1 unknown).  entry: the
 * frame is the first one its C-level evaluation call ran (always up to
 * 3.10, where each frame has its own call).
 */
void pywalk_push(struct py_sampler *ps, struct py_sample *out, uint64_t frame,
		 uint64_t code, long addrq, int entry);

/*
 * 1 if frame number depth of a walk (0: the innermost) is past the
 * depth limit: then it is counted in ps->omitted instead of kept.
 */
int pywalk_past_limit(struct py_sampler *ps, size_t depth);

/* End a cut walk with its "[N frames not read]" stand-in. */
void pywalk_push_omitted(struct py_sampler *ps, struct py_sample *out);

/*
 * A copy of the thread state (ps->fresh_tstate) taken in the same
 * process_vm_readv as the frames it points to is of nearly the same
 * instant: take it into ps->tstate_buf if it is one (same interpreter
 * as the first copy; a copy that failed reads as zeros).
 */
void pywalk_take_fresh_tstate(struct py_sampler *ps);

#endif
