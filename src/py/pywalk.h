/* SPDX-License-Identifier: MIT */
/*
 * The walk context: what a frame walker (frameobj.c up to 3.10, pyframe.c
 * for 3.11+) and the namer of its frames (pyresolve.c) are given, instead
 * of the whole sampler; the table of operations by which the sampler
 * calls the walker its target's version needs, chosen once; and what
 * every walk shares (bounding a chain, noting its frames, batched reads).
 */
#ifndef SPYC_PYWALK_H
#define SPYC_PYWALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "py/calledge.h"
#include "py/pycode.h"
#include "py/pyruntime.h"
#include "py/pystack.h"

/*
 * From 3.14 a frame's code and locals are _PyStackRefs: object pointers
 * with tag bits in their low bits (Py_TAG_BITS in pycore_stackref.h, 3
 * in builds with the GIL).  Objects are at least 8-byte aligned, so
 * clearing the low 3 bits gives the object, tagged or not, and leaves
 * the plain pointers of older versions as they are.  Free-threaded
 * builds tag with the low bit only (Py_TAG_BITS 1: Py_TAG_DEFERRED),
 * which the same mask clears; their cleared reference, PyStackRef_NULL,
 * is the bare tag, so it too reads as no object.
 */
#define PY_STACKREF_TAG_MASK ((uint64_t)7)

/*
 * Largest thread-local bytecode index believed (free-threaded builds):
 * CPython gives each live thread the smallest free one, so an index is
 * below the number of threads (PY_MAX_THREADS); more is a torn read.
 */
#define PY_TLBC_INDEX_MAX PY_MAX_THREADS

/* Each walker's own state, known only to the file that owns it. */
struct frameobj_state;
struct chunk_walk_state;
struct pyresolve_state;
struct pywalk;

/* A walker: the sampler calls it through these, and nothing else. */
struct pywalk_ops {
	/* Set up the walker's own state in w. */
	void (*init)(struct pywalk *w);
	/*
	 * Append the frames of the thread whose PyThreadState is at tstate
	 * (already copied into w->tstate_buf) to out, innermost first, as
	 * code addresses and instruction offsets in w's arrays; sets
	 * w->root_frame and w->omitted.  Returns DROP_NONE or why the
	 * sample must be dropped.
	 */
	enum drop_reason (*walk)(struct pywalk *w, uint64_t tstate,
				 struct py_sample *out);
	/*
	 * Before walking the threads whose thread states are copied at
	 * copies (the n at tstates[i] for which walk[i] is set, each
	 * rt->off->tstate_size bytes): make what each walk reads first for
	 * all of them in one process_vm_readv.
	 */
	void (*prefetch)(struct pywalk *w, const unsigned char *copies,
			 const uint64_t *tstates, const int *walk, size_t n);
	/* Forget what prefetch copied and no walk took: stale now. */
	void (*forget_prefetched)(struct pywalk *w);
	/* Free the walker's own state. */
	void (*release)(struct pywalk *w);
};

struct pywalk {
	const struct pyruntime *rt;
	struct pycode_cache codes;
	/* Frames kept per thread; 0 means PY_DEFAULT_MAX_DEPTH. */
	size_t max_depth;
	/* per-sample scratch, kept between samples */
	unsigned char *tstate_buf; /* the walked thread's thread state */
	unsigned char *fresh_tstate; /* read again beside the frames */
	uint64_t *code_addrs;
	uint64_t *frame_addrs; /* where each walked frame is, 0 if a stand-in */
	long *addrqs;
	unsigned char *entries;
	/* 1 where the frame is a generator's or coroutine's (3.11+) */
	unsigned char *gen_frames;
	/*
	 * Free-threaded builds: the thread-local bytecode copy each frame
	 * runs (0: the code's own, whose offset addrqs holds; else addrqs
	 * holds the frame's instruction pointer until pyresolve_frames
	 * finds the copy), and the code's co_tlbc array as last read.
	 */
	int32_t *tlbcs;
	uint64_t *tlbc_arrays;
	size_t alloc_walk;
	struct iovec *local, *remote;
	size_t alloc_iov;
	/*
	 * A walk that tore at a frame it read: that frame and its code as
	 * read (the link to it, from the frame before, was read whole), 0
	 * if the walk did not end so.  See take_key in pysample.c.
	 */
	uint64_t torn_at, torn_at_code;
	long torn_at_addrq; /* its instruction as read (-1: unknown) */
	int torn_at_gen;    /* torn_at is a generator's frame */
	/*
	 * 3.11+: torn_at was copied by the same read as the walk's last
	 * frame, the one linked to it (see learn_torn_gen_edge)
	 */
	int torn_at_with_callee;
	/*
	 * 3.11+: the calls seen (calledge.h), and the caller and callee
	 * pairs of the walk just done not among them yet, which
	 * edges_still_hold reads again (see there).
	 */
	struct call_edges call_edges;
	size_t omitted; /* frames of the walk just done past max_depth */
	uint32_t sample_stamp; /* counts samples: which one a check was in */
	int moved; /* the walk just done took a new copy of the thread state */
	uint64_t root_frame; /* outermost frame of the walk just done */
	/* The version's walker, and each part's own state (NULL if none). */
	const struct pywalk_ops *ops;
	struct frameobj_state *frameobj;
	struct chunk_walk_state *chunk_walk;
	struct pyresolve_state *resolve;
};

/*
 * Set w up for rt's version with the walker ops: its scratch, its code
 * cache, its walker's state.  Undone by pywalk_release.
 */
void pywalk_init(struct pywalk *w, const struct pyruntime *rt,
		 const struct pywalk_ops *ops);
void pywalk_release(struct pywalk *w);

/* Room for n regions in w->local and w->remote. */
void pywalk_grow_iov(struct pywalk *w, size_t n);
/* Region i copies len bytes at addr to buf. */
void pywalk_set_iov(struct pywalk *w, size_t i, void *buf, uint64_t addr,
		    size_t len);
/* The drop reason for a failed read (r, a negative errno). */
enum drop_reason pywalk_read_error(int r);

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

/* w->entries[] value of the "[N frames not read]" stand-in (code is N). */
#define PYWALK_PLACEHOLDER 2

/*
 * Note a frame of the walk at the end of out, in w's scratch, for
 * pyresolve_frames: where it is (frame, 0 for a stand-in), its code's
 * address, its instruction's offset (addrq, -1 unknown).  entry: the
 * frame is the first one its C-level evaluation call ran (always up to
 * 3.10, where each frame has its own call).
 */
void pywalk_push(struct pywalk *w, struct py_sample *out, uint64_t frame,
		 uint64_t code, long addrq, int entry);

/*
 * 1 if frame number depth of a walk (0: the innermost) is past the
 * depth limit: then it is counted in w->omitted instead of kept.
 */
int pywalk_past_limit(struct pywalk *w, size_t depth);

/* End a cut walk with its "[N frames not read]" stand-in. */
void pywalk_push_omitted(struct pywalk *w, struct py_sample *out);

/*
 * A copy of the thread state (w->fresh_tstate) taken in the same
 * process_vm_readv as the frames it points to is of nearly the same
 * instant: take it into w->tstate_buf if it is one (same interpreter
 * as the first copy; a copy that failed reads as zeros).
 */
void pywalk_take_fresh_tstate(struct pywalk *w);

/*
 * Does t's stack start where a thread's must?  A generator's or a
 * coroutine's frame is never a thread's first: reached as the last
 * frame, the chain was read while that generator was suspending or
 * resuming, and its link to its caller was missed.  (Frames past the
 * depth limit are not read: nothing to tell then.)  Its frames must be
 * named (pyresolve_frames).  1 if it does.
 */
int pywalk_starts_at_root(const struct py_sample *out,
			  const struct py_thread *t);

#endif
