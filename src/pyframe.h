/* SPDX-License-Identifier: MIT */
/* Walking the target's Python threads and frames, one sample at a time. */
#ifndef SPYC_PYFRAME_H
#define SPYC_PYFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "pycode.h"
#include "pyruntime.h"

/* Deepest stack spyc follows; deeper (or a loop in torn data) drops. */
#define PY_MAX_DEPTH 4096
/* Most threads and interpreters walked in one sample. */
#define PY_MAX_THREADS 4096
#define PY_MAX_INTERPS 64

/* Why a sample was dropped.  Counted by commands. */
enum drop_reason {
	DROP_NONE = 0,
	DROP_READ,    /* a read failed: memory changed under us */
	DROP_INVALID, /* data that made no sense: a torn read */
	DROP_DEPTH,   /* more than PY_MAX_DEPTH frames, or a loop */
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
	int entry; /* the first frame its C eval call ran: see push_frame */
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
	long tid;	 /* native thread id, 0 if unknown */
	uint64_t tstate; /* its PyThreadState */
	enum py_thread_state state;
	int holds_gil; /* 1 if this thread held the GIL */
	/* threading's name for it, or else its OS name when that differs
	 * from the process's; UTF-8 */
	char name[PY_THREAD_NAME_MAX];
	uint64_t root_frame; /* its outermost Python frame, 0 if unread */
	int skipped;	     /* idle, so its frames were not read (skip_idle) */
	size_t first;	     /* frames[first .. first+depth) of the sample */
	size_t depth;	     /* innermost first */
};

/* One sample of every thread.  Reused between samples: no allocation once warm.
 */
struct py_sample {
	struct py_thread *threads;
	size_t nr_threads, alloc_threads;
	struct py_frame *frames;
	size_t nr_frames, alloc_frames;
};

void py_sample_release(struct py_sample *s);

/*
 * Give each thread of s the state and GIL holding of the thread with its
 * ident in before[0..n-1]: read again while stopped, every thread would
 * look idle.
 */
void py_sample_keep_states(struct py_sample *s, const struct py_thread *before,
			   size_t n);

/* A memory region copied from the target for this sample. */
struct py_region {
	uint64_t addr;
	size_t len;
	unsigned char *buf;
	size_t alloc;
};

struct py_sampler {
	const struct pyruntime *rt;
	struct pycode_cache codes;
	/* per-sample scratch, kept between samples */
	unsigned char *tstate_buf;
	unsigned char *frame_buf;
	struct py_region *chunks;
	size_t nr_chunks, alloc_chunks;
	uint64_t next_chunk; /* older chunk not read yet, 0 when none */
	uint64_t *code_addrs;
	long *addrqs;
	unsigned char *entries;
	size_t alloc_walk;
	unsigned char *headers;
	size_t alloc_headers;
	struct iovec *local, *remote;
	size_t alloc_iov;
	/*
	 * Up to 3.10: each thread's frame addresses in the last sample.
	 * Callers' frames rarely change between samples, so they are read
	 * again in one batch and only the links are checked.
	 */
	struct py_frame_memo {
		uint64_t tstate;
		uint64_t *addrs;
		size_t nr, alloc;
	} * memos;
	size_t nr_memos, alloc_memos;
	unsigned char *batch;
	size_t alloc_batch;
	uint64_t *walk_frames;
	size_t alloc_walk_frames;
	/* What else to find out per thread; set by commands. */
	int want_state; /* running or idle, from /proc/PID/task/TID/stat */
	int want_gil;	/* who holds the GIL, and who waits for it */
	/*
	 * Do not read the frames of threads that are not on a CPU: with
	 * want_state, when idle stacks will not be used anyway.
	 */
	int skip_idle;
	/* Thread names: threading's, else the OS's (/proc/PID/task/TID/comm) */
	int want_names;
	char process_name[16];
	struct py_task_file {
		long tid;
		int fd;	       /* its stat, kept open */
		char comm[16]; /* its name when first seen (TASK_COMM_LEN) */
	} * task_files;
	size_t nr_task_files, alloc_task_files;
	/* threading's thread names, by thread state, outermost frame, tid */
	struct py_name_memo {
		uint64_t tstate, root_frame;
		long tid;
		char name[PY_THREAD_NAME_MAX]; /* empty: it has none */
		int tries; /* failed reads so far; NAME_TRIES once settled */
	} * names;
	size_t nr_names, alloc_names;
	uint64_t root_frame; /* outermost frame of the walk just done */
	/* glibc's struct pthread: where it keeps the tid (up to 3.10) */
	long pthread_tid_at;
	struct {
		uint64_t ident;
		long tid;
	} * tids;
	size_t nr_tids, alloc_tids;
};

void py_sampler_init(struct py_sampler *ps, const struct pyruntime *rt);
void py_sampler_release(struct py_sampler *ps);

/*
 * Sample every Python thread of the target into out (cleared first).
 * Returns DROP_NONE, or the reason the whole sample must be dropped.
 */
enum drop_reason py_sampler_sample(struct py_sampler *ps,
				   struct py_sample *out);

#endif
