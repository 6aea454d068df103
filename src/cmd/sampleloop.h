/* SPDX-License-Identifier: MIT */
/* What sampling commands share: pacing samples at a rate, retrying a torn
 * sample, noticing that the target is gone, stopping a launched child. */
#ifndef SPYC_SAMPLELOOP_H
#define SPYC_SAMPLELOOP_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/children.h"
#include "sys/native.h"
#include "py/pysample.h"
#include "py/pyruntime.h"
#include "util.h"

/* The signal (SIGINT, SIGTERM or SIGHUP) that asked spyc to stop, or 0. */
extern volatile sig_atomic_t sampleloop_stop;
/* How many of those signals spyc got: the last one is sampleloop_stop. */
extern volatile sig_atomic_t sampleloop_signals_seen;

/* From now on SIGINT, SIGTERM and SIGHUP only set sampleloop_stop. */
void sampleloop_signals(void);

struct sampleloop {
	struct pyruntime rt; /* filled in by attach_or_die or launch_or_die */
	pid_t child;	     /* the launched program, else 0 */
	int child_status;    /* as waitpid() gave it, once reaped */
	int child_reaped;
	sig_atomic_t signals_passed; /* sampleloop_signals_seen, passed on */
	struct py_sampler ps;
	struct py_sample sample; /* what sampleloop_take() read */
	uint64_t interval;	 /* nanoseconds between samples */
	uint64_t slot;		 /* when the next sample's slot starts */
	uint64_t next;		 /* when the next sample is due (now_ns()) */
	uint64_t rng;		 /* xorshift64 state: where in its slot */
	uint64_t missed;	 /* slots skipped: their time passed */
	uint64_t last_check;	 /* the last look for an exec */
	/*
	 * The target's address space when sampling began (proc_mm_open),
	 * looked at after every sample: an exec of the same non-PIE
	 * program keeps every address spyc reads valid, so reads alone
	 * would go on naming the new program's frames from the old one's
	 * code cache.  -1 when none.
	 */
	int mm_fd;
	uint64_t dropped[DROP_NR];
	const char *ended; /* why the target is gone, for messages */
	int execd;	   /* it is gone by exec'ing another program */
	/* someone stopped it (SIGSTOP, SIGTSTP) while it was sampled */
	int seen_stopped;
	/* --native: scratch for sampleloop_stop_wanted() */
	long *tids;
	size_t alloc_tids;
	uint64_t *idents; /* of the threads read again */
	size_t alloc_idents;
	struct py_thread *before;
	size_t alloc_before;
	/*
	 * --subprocesses: the processes followed (the command's), the
	 * target first; sl->rt then holds only the target's pid, and the
	 * target is gone only once it has exited.
	 */
	struct children *tree;
	uint64_t tree_reads; /* clean reads of one process */
};

/*
 * Once sl->rt (and sl->child in launch mode) are set: get ready to take
 * rate_hz samples a second, the first one due now.  With no interpreter
 * in sl->rt (only its pid), just the pacing.  Lowers the process's
 * timer slack, whose default 50 us would cap the rate near 10 kHz, and
 * asks the scheduler for a short slice, so that spyc's wakeups preempt
 * the target's busy threads on time.
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
 * --subprocesses: sample every Python process of sl->tree once (looking
 * for new ones first, at most every so often), calling add(ctx, child)
 * for each clean read; a dropped read is counted in sl->dropped.
 * Returns DROP_GONE once the target has exited (sl->ended says so),
 * else DROP_NONE.
 */
enum drop_reason
sampleloop_take_tree(struct sampleloop *sl,
		     void (*add)(void *ctx, const struct child *ch), void *ctx);

/*
 * 1 if the target has exited or exec'd another program, with sl->ended
 * saying which ("the target exited"); else 0.  Reaps a launched child,
 * and notes in sl->seen_stopped a target stopped by a signal.
 */
int sampleloop_target_gone(struct sampleloop *sl);

/*
 * Move on to the next slot of the grid that started at the first sample
 * (no drift): one interval on, and sl->next to a random moment in it.
 * Samples a fixed interval apart run in step with a program that
 * repeats at about that period (a loop of 1 ms steps at 1 kHz): its
 * samples fall at nearly the same point of each step, one after the
 * other, and a profile of a few seconds says more about the phase than
 * about the program.  One sample at a random moment of each slot keeps
 * the rate and leaves no period to fall in step with.  A slot due a
 * little while ago (a slow sample, spyc preempted for a scheduler slice
 * or two) is still taken, at once, so that the asked rate is kept;
 * slots whose time passed longer ago are skipped and counted in
 * sl->missed, never made up in a long burst.  Returns the new sl->next.
 */
uint64_t sampleloop_schedule(struct sampleloop *sl);

/*
 * Sleep until deadline (a now_ns() time).  A signal cuts the sleep short
 * only if it set sampleloop_stop.
 */
void sleep_until(uint64_t deadline);

/*
 * sleep_until(deadline), looking every half second meanwhile whether the
 * target is gone, so that a slow rate does not keep spyc waiting on a
 * target that has exited.  Returns 1 if it is gone (sl->ended says how),
 * else 0 (the deadline passed, or sampleloop_stop was set).
 */
int sampleloop_wait(struct sampleloop *sl, uint64_t deadline);

/*
 * Append a rate in Hz with three significant digits and at least one
 * decimal, never an exponent: "0.5", "2.49", "99.7", "9999.7".
 */
void sampleloop_add_rate(struct strbuf *sb, double hz);

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
 * Stop the threads tids[0..n-1], read ps's sample s while they are
 * stopped, and let them go; a thread caught handing over between two
 * frames (the read torn or failed) is let run on and stopped again, up
 * to NATIVE_STOP_TRIES stops.  Returns the last read's drop reason.
 */
enum drop_reason sampleloop_read_stopped(struct native_unwinder *nu,
					 struct py_sampler *ps,
					 struct py_sample *s, const long *tids,
					 size_t n);

/*
 * --native, after sampleloop_take() returned DROP_NONE: stop just the
 * threads whose stacks are wanted (thread_wanted), then read the Python
 * frames of those threads alone again while they are stopped (the others
 * are left unread, as they are not kept), so that Python and native frames
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
 * wait for it to exit, passing on each SIGINT, SIGTERM or SIGHUP that
 * spyc gets meanwhile (and one it got since sampling stopped).  After a
 * terminal's Ctrl-C (which reached the child too) give it a moment to
 * stop by itself before passing SIGINT on.
 */
void sampleloop_finish(struct sampleloop *sl, int sig);

/*
 * Launch mode: end the child: SIGTERM, then SIGKILL if it is still there
 * grace_ns later, and reap it.  Returns 1 if it was still running (spyc
 * ended it), 0 if it had exited already.
 */
int sampleloop_end_child(struct sampleloop *sl, uint64_t grace_ns);

/* Launch mode: 1 while the child runs, 0 once it has exited (reaped). */
int sampleloop_child_running(struct sampleloop *sl);

/*
 * The reaped child's exit status as a shell gives it: its exit code, or
 * 128 + the number of the signal that killed it; -1 if not known.
 */
int sampleloop_child_exit_code(const struct sampleloop *sl);

/*
 * For the summary line: what became of a target someone stopped while it
 * was sampled ("the target was stopped by a signal ..."), or NULL if
 * nobody did.
 */
const char *sampleloop_stopped_note(const struct sampleloop *sl);

#endif
