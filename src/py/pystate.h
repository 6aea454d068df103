/* SPDX-License-Identifier: MIT */
/* Thread states: running, idle or waiting for the GIL, from /proc. */
#ifndef SPYC_PYSTATE_H
#define SPYC_PYSTATE_H

#include "py/pygil.h"
#include "py/pysample.h"

/*
 * What spyc keeps open or knows about thread tid of the target (its
 * stat file, its OS name), or NULL if the thread is gone.  Owned by ps.
 */
struct py_task_file *pystate_task(struct py_sampler *ps, long tid);

/*
 * Is t known to be off the CPU, before its frames are read?  Finds its
 * tid first if the thread state does not hold it (up to 3.10).
 */
int pystate_known_idle(struct py_sampler *ps, struct py_thread *t);

/* Fill in what the commands asked for: states, GIL holder and waiters. */
void pystate_annotate(struct py_sampler *ps, struct py_sample *out,
		      const struct gil_view *gil);

/* Close the files pystate_task() keeps open. */
void pystate_release(struct py_sampler *ps);

#endif
