/* SPDX-License-Identifier: MIT */
/* A sample of the target's Python threads: its threads, their frames, and
 * why a sample was dropped (what the sampler hands to commands). */
#ifndef SPYC_PYSTACK_H
#define SPYC_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Frames kept per thread by default (--max-depth): a deeper stack keeps
 * its innermost ones and a "[N frames not read]" stand-in for the rest.
 */
#define PY_DEFAULT_MAX_DEPTH 4096
/* Longest chain followed to its end; longer (or a loop in torn data)
 * drops the sample. */
#define PY_WALK_LIMIT (1u << 20)
/* Most threads and interpreters walked in one sample. */
#define PY_MAX_THREADS 4096
#define PY_MAX_INTERPS 64

/* Why a sample was dropped.  Counted by commands. */
enum drop_reason {
	DROP_NONE = 0,
	DROP_READ,    /* a read failed: memory changed under us */
	DROP_INVALID, /* data that made no sense: a torn read */
	DROP_DEPTH,   /* more than PY_WALK_LIMIT frames, or a loop */
	DROP_GONE,    /* the process exited */
	DROP_NR,
};

/* Bytes of a thread's name kept, with its NUL; longer ones are cut. */
#define PY_THREAD_NAME_MAX 64

/* A short name for a drop reason, e.g. "torn reads". */
const char *drop_reason_name(enum drop_reason reason);

struct py_frame {
	struct pycode *code;
	int line;
	int entry; /* the first frame its C eval call ran: see pywalk_push */
};

/* What a thread was doing when sampled (when the sampler was asked). */
enum py_thread_state {
	THREAD_UNKNOWN = 0,
	THREAD_RUNNING,	 /* on a CPU, or runnable */
	THREAD_IDLE,	 /* sleeping or blocked */
	THREAD_GIL_WAIT, /* blocked, waiting for the GIL */
};

/* "running", "idle", "waiting for the GIL" or "unknown". */
const char *thread_state_name(enum py_thread_state state);

struct py_thread {
	uint64_t ident;	 /* threading ident (pthread_t) */
	long tid;	 /* native thread id (spyc's), 0 if unknown */
	/* its id as the target sees it, in a pid namespace of its own (a
	 * container); 0 where that is tid */
	long inner_tid;
	uint64_t tstate; /* its PyThreadState */
	enum py_thread_state state;
	int holds_gil; /* 1 if this thread held the GIL */
	/* threading's name for it, or else its OS name when that differs
	 * from the process's; UTF-8 */
	char name[PY_THREAD_NAME_MAX];
	uint64_t root_frame; /* its outermost Python frame, 0 if unread */
	int skipped;	     /* idle, so its frames were not read (skip_idle) */
	/*
	 * Its scheduler state letter (proc(5): R, S, D, ...) as read for
	 * this sample, 0 if not read yet: /proc is read once a sample.
	 */
	char sched;
	size_t first;	     /* frames[first .. first+depth) of the sample */
	size_t depth;	     /* innermost first */
	/*
	 * Frames beyond the depth limit, not read: the stack then ends
	 * with a stand-in frame "[omitted frames not read]" (its code's
	 * placeholder flag is set), counted in depth.
	 */
	size_t omitted;
	/*
	 * --async with all tasks: not a thread but a waiting task's stack,
	 * of the thread whose ident, tid and name it has.
	 */
	int is_task;
	/*
	 * With the sampler's stop_reads: its stack changed while it was
	 * read (torn, or a read through it failed): not kept (depth 0),
	 * left to the read made while it is stopped.
	 */
	int torn;
	/*
	 * 3.13+: 1 if its thread state said it was attached to the
	 * interpreter (the GIL's holder; on a free-threaded build any
	 * thread that may run Python code), 0 if not, -1 not known.
	 */
	int attached;
};

struct py_task;

/* One sample of every thread.  Reused between samples: no allocation once warm.
 */
struct py_sample {
	struct py_thread *threads;
	size_t nr_threads, alloc_threads;
	struct py_frame *frames;
	size_t nr_frames, alloc_frames;
	/* --async: the asyncio tasks, and indexes of the tasks awaiting each */
	struct py_task *tasks;
	size_t nr_tasks, alloc_tasks;
	size_t *awaiters;
	size_t nr_awaiters, alloc_awaiters;
};

void py_sample_release(struct py_sample *s);

/*
 * Give each thread of s the state and GIL holding of the thread with its
 * ident in before[0..n-1]: read again while stopped, every thread would
 * look idle.
 */
void py_sample_keep_states(struct py_sample *s, const struct py_thread *before,
			   size_t n);

#endif
