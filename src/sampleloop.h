/* SPDX-License-Identifier: MIT */
/* What sampling commands share: pacing samples at a rate, retrying a torn
 * sample, noticing that the target is gone, stopping a launched child. */
#ifndef SPYC_SAMPLELOOP_H
#define SPYC_SAMPLELOOP_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "native.h"
#include "pyframe.h"
#include "pyruntime.h"
#include "util.h"

/* The signal (SIGINT, SIGTERM or SIGHUP) that asked spyc to stop, or 0. */
extern volatile sig_atomic_t sampleloop_stop;

/* From now on SIGINT, SIGTERM and SIGHUP only set sampleloop_stop. */
void sampleloop_signals(void);

struct sampleloop {
	struct pyruntime rt; /* filled in by attach_or_die or launch_or_die */
	pid_t child;	     /* the launched program, else 0 */
	int child_status;
	int child_reaped;
	struct py_sampler ps;
	struct py_sample sample; /* what sampleloop_take() read */
	uint64_t interval;	 /* nanoseconds between samples */
	uint64_t next;		 /* when the next sample is due (now_ns()) */
	uint64_t last_check;	 /* the last look for an exec */
	uint64_t dropped[DROP_NR];
	const char *ended; /* why the target is gone, for messages */
	int execd;	   /* it is gone by exec'ing another program */
	/* --native: scratch for sampleloop_stop_wanted() */
	long *tids;
	size_t alloc_tids;
	struct py_thread *before;
	size_t alloc_before;
};

/*
 * Once sl->rt (and sl->child in launch mode) are set: get ready to take
 * rate_hz samples a second, the first one due now.  Lowers the process's
 * timer slack, whose default 50 us would cap the rate near 10 kHz.
 */
void sampleloop_init(struct sampleloop *sl, double rate_hz);
void sampleloop_release(struct sampleloop *sl);

/*
 * Sample every thread of the target into sl->sample, once more at once
 * if the first read was torn: the stack was changing under us, and
 * dropping instead would bias against code that calls a lot.  Returns
 * DROP_NONE; another reason when the sample was dropped (and counted in
 * sl->dropped); DROP_GONE once the target has exited or exec'd another
 * program (not counted; sl->ended says which).
 */
enum drop_reason sampleloop_take(struct sampleloop *sl);

/*
 * 1 if the target has exited or exec'd another program, with sl->ended
 * saying which ("the target exited"); else 0.  Reaps a launched child.
 */
int sampleloop_target_gone(struct sampleloop *sl);

/*
 * Move sl->next on by one interval; when that is already past (a slow
 * sample), to now: falling behind must not cause a burst of samples.
 * Returns the new sl->next.
 */
uint64_t sampleloop_schedule(struct sampleloop *sl);

/*
 * Sleep until deadline (a now_ns() time).  A signal cuts the sleep short
 * only if it set sampleloop_stop.
 */
void sleep_until(uint64_t deadline);

/*
 * Append "N dropped", and when N > 0 " (2 torn reads, 1 ...)", to sb.
 * Returns N.
 */
uint64_t sampleloop_describe_drops(const struct sampleloop *sl,
				   struct strbuf *sb);

/*
 * Does the user want t's stack?  With gil, only if t holds the GIL; with
 * idle, always; else if it runs on a CPU, or nobody could tell.
 */
int thread_wanted(const struct py_thread *t, int idle, int gil);

/*
 * --native, after sampleloop_take() returned DROP_NONE: stop just the
 * threads whose stacks are wanted (thread_wanted), then read the Python
 * frames again while they are stopped, so that Python and native frames
 * are of one instant, keeping each thread's state and GIL from before it
 * was stopped (a stopped thread looks idle).  Returns DROP_NONE, or the
 * reason the new read was dropped (counted).  The threads run again
 * before it returns; the caller unwinds them from their copies.
 */
enum drop_reason sampleloop_stop_wanted(struct sampleloop *sl,
					struct native_unwinder *nu, int idle,
					int gil);

/*
 * Launch mode: unless the child has exited, send it sig (if not 0), then
 * wait for it.  After a terminal's Ctrl-C (which reached the child too)
 * give it a moment to stop by itself before passing SIGINT on.
 */
void sampleloop_finish(struct sampleloop *sl, int sig);

#endif
