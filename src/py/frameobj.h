/* SPDX-License-Identifier: MIT */
/* Up to CPython 3.10: walking a thread's chain of frame objects. */
#ifndef SPYC_FRAMEOBJ_H
#define SPYC_FRAMEOBJ_H

#include "py/pywalk.h"

/* The walker of CPython 3.6-3.10 (a thread state's frame, f_back). */
extern const struct pywalk_ops frameobj_walker;

#endif
