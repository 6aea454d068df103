/* SPDX-License-Identifier: MIT */
/* Sampling the target's Python threads and frames, one sample at a time. */
#ifndef SPYC_PYSAMPLE_H
#define SPYC_PYSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "py/pyruntime.h"
#include "py/pystack.h"
#include "sys/tidmap.h"

/*
 * When threads are stopped to be read.  A stop lands late: the kernel
 * stops a thread that runs at its next entry to the kernel, which an
 * interrupt from another CPU forces within 20-40 us on a virtual
 * machine, but a system call made first takes it there sooner.  Stopped
 * reads of every sample lean to the system calls a program makes
 * (a loop that spends a third of its time around a 1 us system call
 * sampled there 99 times in 100), so only --native, whose native frames
 * must be of the moment the Python frames are, and dump stop every
 * thread; --blocking keeps a sample whose stacks were read whole.
 */
enum stop_reads {
	STOP_READS_NONE = 0,
	/* --blocking: the threads that run, read once stopped when one tore */
	STOP_READS_TORN,
	/* --native, dump: every thread that runs, read once stopped */
	STOP_READS_ALL,
};

/* Which stop_reads a command's --native and --blocking ask for. */
static inline int py_stop_reads(int stop, int native)
{
	if (!stop)
		return STOP_READS_NONE;
	return native ? STOP_READS_ALL : STOP_READS_TORN;
}

/*
 * The sampler of one target: what commands ask of it, what it counted,
 * and its own state (the walks', the caches'), which only pysample.c
 * and the files it hands parts of it to see.
 */
struct py_sampler_state;

struct py_sampler {
	const struct pyruntime *rt;
	/* What else to find out per thread; set by commands. */
	int want_state; /* running or idle, from /proc/PID/task/TID/stat */
	int want_gil;	/* who holds the GIL, and who waits for it */
	/*
	 * While the cycle collector runs, a "<GC>" frame on top of the stack
	 * of the thread that runs it, the GIL's holder (none on a build
	 * without a GIL).
	 * Commands leave it off with async (sample_opts_want_gc).
	 */
	int want_gc;
	/*
	 * Do not read the frames of threads that are not on a CPU: with
	 * want_state, when idle stacks will not be used anyway.
	 */
	int skip_idle;
	/*
	 * Threads are stopped and read again (enum stop_reads): a stack
	 * torn in this read is left to that one (py_thread.torn) rather
	 * than the sample dropped.
	 */
	int stop_reads;
	/* Thread names: threading's, else the OS's (/proc/PID/task/TID/comm) */
	int want_names;
	/*
	 * --async: read asyncio tasks through this (owned by the command),
	 * and with async_stacks turn stacks into task stacks, every waiting
	 * task's too with async_all.
	 */
	struct pyasync *async;
	int async_stacks, async_all;
	/* Frames kept per thread; 0 means PY_DEFAULT_MAX_DEPTH. */
	size_t max_depth;
	/*
	 * Thread stacks read, and of those kept how many were read from a
	 * thread state copied again because the first read tore: the
	 * stack changed faster than it could be read.  Reading again takes
	 * a later moment, which favours calls that last: a large share of
	 * these says short calls are under-counted.
	 */
	uint64_t walks, walks_again;
	struct py_sampler_state *state;
};

void py_sampler_init(struct py_sampler *ps, const struct pyruntime *rt);
void py_sampler_release(struct py_sampler *ps);

/*
 * Sample every Python thread of the target into out (cleared first).
 * Returns DROP_NONE, or the reason the whole sample must be dropped.
 */
enum drop_reason py_sampler_sample(struct py_sampler *ps,
				   struct py_sample *out);

/*
 * Read the frames of only the threads with these n idents in the samples
 * that follow (the second read of --native and --blocking: only the
 * threads it stopped); the others are added, marked skipped.  idents is
 * sorted in place and must outlive those samples; NULL: every thread
 * again.
 */
void py_sampler_walk_only(struct py_sampler *ps, uint64_t *idents, size_t n);

/*
 * The target's thread ids, as it sees them, mapped to spyc's (see
 * tidmap.h): owned by ps.
 */
const struct tidmap *py_sampler_tidmap(const struct py_sampler *ps);

/*
 * Append one frame of a stack copied in the target (the GPU agent's: see
 * gpu_py_layout) to out, innermost first: its code word and position
 * word as the frame held them (f_lasti up to 3.10, else the instruction
 * pointer).  py_sampler_name_frames then names them.
 */
void py_sampler_push_copied(struct py_sampler *ps, struct py_sample *out,
			    uint64_t code_word, uint64_t pos_word);

/*
 * Name out's frames pushed by py_sampler_push_copied (reading the code
 * objects the cache does not hold yet).  Returns DROP_NONE, or why they
 * could not be named.
 */
enum drop_reason py_sampler_name_frames(struct py_sampler *ps,
					struct py_sample *out);

#endif
