/* SPDX-License-Identifier: MIT */
/* Following a target's descendants (--subprocesses): finding them as they
 * start, telling the Python ones from the rest, sampling each Python one. */
#ifndef SPYC_CHILDREN_H
#define SPYC_CHILDREN_H

#include <stdint.h>
#include <sys/types.h>

#include "py/pyruntime.h"
#include "py/pysample.h"

enum child_state {
	CHILD_STARTING, /* no interpreter found yet: it may still exec one */
	CHILD_PYTHON,	/* being sampled */
	CHILD_OTHER,	/* not Python (or not readable): not sampled */
	CHILD_GONE,	/* exited */
};

/* Bytes of a child's label kept: "command line (pid N)". */
#define CHILD_LABEL_MAX 256

struct child {
	pid_t pid;
	enum child_state state;
	uint64_t since;	    /* first seen, or since its last exec (now_ns) */
	uint64_t exe_inode; /* of the program it runs, to notice an exec */
	struct pyruntime rt;
	struct py_sampler ps; /* set up while CHILD_PYTHON */
	struct py_sample sample;
	int sampler_ready;
	/*
	 * An interpreter was found in the program it runs (or last ran):
	 * a fork of Python is one until it execs another program.
	 */
	int runs_python;
	/*
	 * An interpreter was found in it at some time: it is in the
	 * profile's processes even after it exits or execs another program.
	 */
	int was_python;
	char label[CHILD_LABEL_MAX];
	char cwd[4096]; /* its directory, to shorten file names */
	char why[160];	/* CHILD_OTHER: why it is not sampled, one line */
	/*
	 * Looks in a row, while it had no interpreter, that found a
	 * program that is not Python (or not one spyc can read), rather
	 * than one still starting: one look may be of a process exiting.
	 */
	int other_looks;
	uint64_t samples;
	uint64_t dropped[DROP_NR];
};

struct children {
	pid_t root;
	/* Root first.  Pointers: each child's sampler points at its rt. */
	struct child **list;
	size_t nr, alloc;
	uint64_t next_scan;
	/* Sets up a new Python child's sampler as the command wants it. */
	void (*setup)(struct py_sampler *ps, void *ctx);
	void *ctx;
	/* scratch */
	long *tids;
	size_t alloc_tids;
};

/*
 * Follow root and its descendants: c->list[0] is root, which need not
 * be Python (a shell wrapper, a launcher).  setup(ps, ctx) is called on
 * each Python process's sampler once it is initialised.
 */
void children_init(struct children *c, pid_t root,
		   void (*setup)(struct py_sampler *ps, void *ctx), void *ctx);
void children_release(struct children *c);

/*
 * At most once per scan interval (and always with force): look for new
 * descendants, and for an interpreter in those that had none yet or
 * exec'd.  Cheap between intervals.  Returns how many children are
 * being sampled.
 */
size_t children_scan(struct children *c, int force);

/*
 * Sample child ch (CHILD_PYTHON) into ch->sample, once more at once if
 * the first read was torn.  Returns DROP_NONE, a drop reason (counted
 * in ch->dropped), or DROP_GONE once it has exited or exec'd (then its
 * state says which, and it is looked at again by the next scan).
 */
enum drop_reason children_take(struct child *ch);

/* How many children gave at least one sample. */
size_t children_sampled(const struct children *c);

/* The process label spyc gives pid: "command line (pid N)". */
void children_label(pid_t pid, char *buf, size_t size);

#endif
