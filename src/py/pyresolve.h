/* SPDX-License-Identifier: MIT */
/* Naming the frames a walk found: code objects and lines. */
#ifndef SPYC_PYRESOLVE_H
#define SPYC_PYRESOLVE_H

#include <stddef.h>

#include "py/pywalk.h"

/*
 * Turn the code addresses of the frames walked from frame number from
 * on into out->frames: code objects (read in one batch, through the
 * cache) and lines.  Returns DROP_NONE or why the sample must be
 * dropped.
 */
enum drop_reason pyresolve_frames(struct pywalk *w, struct py_sample *out,
				  size_t from);

/* Free what pyresolve_frames keeps in w. */
void pyresolve_release(struct pywalk *w);

#endif
