/* SPDX-License-Identifier: MIT */
/* Thread names: threading's, read from the Thread object, else the OS's. */
#ifndef SPYC_PYNAMES_H
#define SPYC_PYNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "py/pyruntime.h"
#include "py/pystack.h"
#include "py/pystate.h"

/* Thread names known, kept between samples. */
struct pynames {
	const struct pyruntime *rt;
	char process_name[16];
	/* threading's thread names, by thread state, outermost frame, tid */
	struct py_name_memo {
		uint64_t tstate, root_frame;
		long tid;
		char name[PY_THREAD_NAME_MAX]; /* empty: it has none */
		int tries; /* failed reads so far; NAME_TRIES once settled */
	} * names;
	size_t nr_names, alloc_names;
};

void pynames_init(struct pynames *nm, const struct pyruntime *rt);

/*
 * Name each thread of out that has a name worth showing: the one
 * threading gave it, else its OS name (from tasks) when that differs
 * from the process's.  Names are remembered per thread in nm.
 */
void pynames_fill(struct pynames *nm, struct pystate *tasks,
		  struct py_sample *out);

void pynames_release(struct pynames *nm);

#endif
