/* SPDX-License-Identifier: MIT */
/* Thread states: running, idle or waiting for the GIL, from /proc. */
#ifndef SPYC_PYSTATE_H
#define SPYC_PYSTATE_H

#include <stddef.h>
#include <sys/types.h>

#include "py/pygil.h"
#include "py/pystack.h"

/* What spyc keeps open or knows about one task (thread) of the target. */
struct py_task_file {
	long tid;
	int fd;	       /* its stat, kept open */
	char comm[16]; /* its name when first seen (TASK_COMM_LEN) */
};

/* The target's tasks' files, kept open between samples. */
struct pystate {
	pid_t pid;
	struct py_task_file *task_files;
	size_t nr_task_files, alloc_task_files;
	/* where the next thread's file is likely: threads come in order */
	size_t task_hint;
};

void pystate_init(struct pystate *st, pid_t pid);

/*
 * What spyc keeps open or knows about thread tid of the target (its
 * stat file, its OS name), or NULL if the thread is gone.  Owned by st.
 */
struct py_task_file *pystate_task(struct pystate *st, long tid);

/* Is t (its tid known) off the CPU, before its frames are read? */
int pystate_known_idle(struct pystate *st, struct py_thread *t);

/*
 * Fill in what the commands asked for: with want_state each thread's
 * state, with want_gil the GIL's holder and its waiters.
 */
void pystate_annotate(struct pystate *st, struct py_sample *out,
		      const struct gil_view *gil, int want_state,
		      int want_gil);

/* Close the files pystate_task() keeps open. */
void pystate_release(struct pystate *st);

#endif
