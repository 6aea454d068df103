/* SPDX-License-Identifier: MIT */
/* Thread names: threading's, read from the Thread object, else the OS's. */
#ifndef SPYC_PYNAMES_H
#define SPYC_PYNAMES_H

#include "py/pysample.h"

/*
 * Name each thread of out that has a name worth showing: the one
 * threading gave it, else its OS name when that differs from the
 * process's.  Names are remembered per thread in ps.
 */
void pynames_fill(struct py_sampler *ps, struct py_sample *out);

#endif
