/* SPDX-License-Identifier: MIT */
/* From CPython 3.11: walking a thread's interpreter frames (named by
 * pyresolve.h). */
#ifndef SPYC_PYFRAME_H
#define SPYC_PYFRAME_H

#include <stdint.h>

#include "py/pywalk.h"

/* The walker of CPython 3.11+ (interpreter frames, data-stack chunks). */
extern const struct pywalk_ops chunk_walker;

/*
 * Append one interpreter frame found elsewhere (a suspended coroutine's,
 * for --async) to out: f is a copy of the frame at frame.  Resolved by
 * pyresolve_frames like the walked ones.
 */
void pyframe_push(struct pywalk *w, struct py_sample *out, uint64_t frame,
		  const unsigned char *f);

#endif
