/* SPDX-License-Identifier: MIT */
/* Walking one thread's Python frames (named by pyresolve.h). */
#ifndef SPYC_PYFRAME_H
#define SPYC_PYFRAME_H

#include <stdint.h>

#include "py/pysample.h"

/*
 * Most bytes read before a frame that is read on its own, where its
 * generator keeps its state: ps->frame_buf has room for them.
 */
#define PY_FRAME_PREFIX_MAX 64

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

/*
 * Before walking threads whose thread states ps->tstate_bufs hold (the
 * n at tstates[i] for which walk[i] is set), copy what each walk reads
 * first for all of them in one process_vm_readv: on 3.11+ the thread
 * state again, its newest data-stack chunk, its shims; up to 3.10 the
 * thread state again and the frames of its recent walks.
 */
void pyframe_prefetch(struct py_sampler *ps, const uint64_t *tstates,
		      const int *walk, size_t n);

/*
 * Append the frames of the thread whose PyThreadState is at tstate
 * (already copied into ps->tstate_buf) to out, innermost first, as code
 * addresses and instruction offsets in ps's scratch; sets
 * ps->root_frame.  Returns DROP_NONE or why the sample must be dropped.
 */
enum drop_reason pyframe_walk(struct py_sampler *ps, uint64_t tstate,
			      struct py_sample *out);

/*
 * Append one interpreter frame found elsewhere (a suspended coroutine's,
 * for --async) to out: f is a copy of the frame at frame.  Resolved by
 * pyresolve_frames like the walked ones.
 */
void pyframe_push(struct py_sampler *ps, struct py_sample *out, uint64_t frame,
		  const unsigned char *f);

/*
 * Append one frame of a stack the GPU agent copied in the target (see
 * gpu_py_layout): its code word and position word as the frame held
 * them (f_lasti up to 3.10, else the instruction pointer).  Resolved by
 * pyresolve_frames like the walked ones.
 */
void pyframe_push_copied(struct py_sampler *ps, struct py_sample *out,
			 uint64_t code_word, uint64_t pos_word);

#endif
