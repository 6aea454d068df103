/* SPDX-License-Identifier: MIT */
/* Finding a target's CPython interpreter: its runtime symbols, version and
 * offsets. */
#ifndef SPYC_PYRUNTIME_H
#define SPYC_PYRUNTIME_H

#include <stdint.h>
#include <sys/types.h>

#include "offsets.h"

/* Why pyruntime_find failed. */
enum pyruntime_status {
	PYRT_OK = 0,
	PYRT_NO_PROCESS = -1, /* no such pid */
	PYRT_NO_PERMISSION = -2,
	PYRT_NOT_PYTHON = -3,  /* no interpreter found (yet) */
	PYRT_UNSUPPORTED = -4, /* an interpreter we cannot read */
	PYRT_NOT_READY =
	    -5, /* interpreter not started far enough to tell its version */
};

struct pyruntime {
	pid_t pid;
	char binary[4096]; /* the file holding the interpreter */
	int shared;	   /* 1 if binary is a libpython */
	char version[32];  /* "3.11.7" */
	unsigned long hexversion;
	/* built with Py_GIL_DISABLED, as its _Py_DebugOffsets says: no GIL */
	int free_threaded;
	uint64_t runtime;	 /* address of _PyRuntime (3.7+), or 0 */
	uint64_t interp_head;	 /* address of interp_head (3.6), or 0 */
	uint64_t tstate_current; /* address of _PyThreadState_Current (3.6) */
	uint64_t code_type;	 /* address of PyCode_Type, or 0 if unknown */
	/* 3.6 keeps the GIL in static variables: their addresses, or 0 */
	uint64_t gil_locked, gil_last_holder;
	/* and its mutexes and condition variables, where GIL waits block */
	uint64_t gil_sync[4];
	/* 3.6's cycle collector's static int collecting: its address, or 0 */
	uint64_t gc_collecting;
	uint64_t exe_inode; /* to notice an exec */
	uint64_t base;	    /* where binary is mapped: an exec moves it */
	uint64_t arg_start; /* and the argument strings */
	uint64_t start_time; /* to notice the pid taken by another process */
	const struct py_offsets *off; /* the offsets in use */
	struct py_offsets debug_off;  /* built from _Py_DebugOffsets */
	int from_debug_offsets;	      /* off points at debug_off */
	char notice[256];  /* a one-line notice for the user, or "" */
	char message[512]; /* what went wrong, one line, for commands */
};

/*
 * Find the interpreter of pid: look in a mapped libpython and in the
 * executable for _PyRuntime (3.7+) or interp_head (3.6), apply the load
 * bias, read the version from the target, and pick the offsets.
 * Returns PYRT_OK, or a negative enum pyruntime_status with rt->message
 * set to one line that says what was found and what to do.  Prints
 * nothing, so callers may poll it while a launched program starts.
 */
int pyruntime_find(struct pyruntime *rt, pid_t pid);

/*
 * 1 if the process still runs the program rt was found in: same
 * executable, and the interpreter's binary mapped where it was.  An
 * exec (even of the same python) changes one of them.  0 otherwise, -1
 * if it cannot tell (the process has no memory left: it is exiting).
 */
int pyruntime_still_valid(const struct pyruntime *rt);

/*
 * Address of the first PyInterpreterState, or 0 if there is none yet.
 * Returns 0 or a negative errno.
 */
int pyruntime_interp_head(const struct pyruntime *rt, uint64_t *interp);

/*
 * Pick the table for hexversion from tables[0..n-1], among those of
 * free-threaded builds if free_threaded, else among those of builds
 * with the GIL: the narrowest range holding it.  NULL if none does.
 * Pure; for tests.
 */
const struct py_offsets *
py_offsets_select(const struct py_offsets *const *tables, size_t n,
		  unsigned long hexversion, int free_threaded);

/*
 * The table of the newest version not newer than hexversion in
 * tables[0..n-1], of a free-threaded build or of one with the GIL as
 * free_threaded says (how a later version's _Py_DebugOffsets is laid
 * out, as far as spyc knows), or NULL.  Pure; for tests.
 */
const struct py_offsets *
py_offsets_newest_upto(const struct py_offsets *const *tables, size_t n,
		       unsigned long hexversion, int free_threaded);

/*
 * Fill out from a raw copy of a target's _Py_DebugOffsets, using the
 * layout described by base (a table of the same or an older version)
 * and base's values for what the target does not publish.  Returns 0,
 * or -1 if the cookie is wrong or an offset is implausible.  Pure.
 */
int py_offsets_from_debug(struct py_offsets *out, const struct py_offsets *base,
			  const unsigned char *raw, size_t len);

/* Parse "3.11.7" / "3.12.0rc1" into a PY_VERSION_HEX; 0 if malformed. */
unsigned long py_version_parse(const char *s);

#endif
