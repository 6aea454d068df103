/* SPDX-License-Identifier: MIT */
/* What sampling commands share: pacing samples at a rate, retrying a torn
 * sample, noticing that the target is gone, stopping a launched child. */
#include "cmd/sampleloop.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sys/proc.h"

/* How often to check, between failures, that the target did not exec. */
#define EXEC_CHECK_NS 500000000ULL
/* How often, and how far apart, to look again at a process that reads
 * said was gone, while /proc cannot yet tell an exit from an exec. */
#define GONE_RECHECKS 100
#define GONE_RECHECK_NS 2000000L
/*
 * How late a slot may be and still be sampled: a few of the scheduler's
 * slices (EEVDF's base slice is 0.75 ms times 1 + log2 of the CPUs), so
 * that a preempted spyc keeps the asked rate, yet bursts stay short.
 */
#define CATCH_UP_NS 4000000ULL
/*
 * The scheduler slice spyc asks for (sched_setattr's sched_runtime, for
 * SCHED_OTHER since Linux 6.12): a short one lets each wakeup preempt
 * the target's busy threads at once instead of waiting for their slice
 * to end.  Older kernels ignore it.
 */
#define SLICE_NS 100000ULL
/* How long a child hit by a terminal's Ctrl-C gets to stop by itself. */
#define CTRL_C_GRACE_NS 100000000L
/* How often a wait for the child looks at it and at spyc's signals. */
#define CHILD_POLL_NS 20000000L

volatile sig_atomic_t sampleloop_stop;
volatile sig_atomic_t sampleloop_signals_seen;

static void on_signal(int sig)
{
	sampleloop_stop = sig;
	sampleloop_signals_seen++;
}

void sampleloop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* sched_setattr(2)'s argument: glibc has no wrapper nor the struct. */
struct sched_attr_v1 {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

/* Ask for a short scheduler slice (SLICE_NS), keeping policy and nice. */
static void ask_short_slice(void)
{
#ifdef SYS_sched_setattr
	struct sched_attr_v1 attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	/* Not SCHED_FLAG_KEEP_PARAMS: it would keep the slice too. */
	attr.sched_flags = SCHED_FLAG_KEEP_POLICY;
	errno = 0;
	attr.sched_nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		return;
	attr.sched_runtime = SLICE_NS;
	/* Refused or ignored, spyc only samples less on time. */
	(void)syscall(SYS_sched_setattr, 0, &attr, 0);
#endif
}

void sampleloop_init(struct sampleloop *sl, double rate_hz)
{
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	ask_short_slice();
	/* Without an interpreter (--subprocesses' root): pacing only. */
	sl->mm_fd = -1;
	if (sl->rt.off) {
		py_sampler_init(&sl->ps, &sl->rt);
		if (!sl->tree && sl->rt.base)
			sl->mm_fd = proc_mm_open(sl->rt.pid);
		/* Only an address space that reads now can tell later. */
		if (sl->mm_fd >= 0 &&
		    proc_mm_same(sl->mm_fd, sl->rt.base) != 1) {
			close(sl->mm_fd);
			sl->mm_fd = -1;
		}
	}
	sl->interval = (uint64_t)(1e9 / rate_hz + 0.5);
	if (!sl->interval)
		sl->interval = 1;
	sl->next = sl->slot = sl->last_check = now_ns();
	sl->rng = (sl->next ^ ((uint64_t)getpid() << 32)) | 1;
}

void sampleloop_release(struct sampleloop *sl)
{
	if (sl->mm_fd >= 0)
		close(sl->mm_fd);
	sl->mm_fd = -1;
	free(sl->tids);
	free(sl->idents);
	free(sl->before);
	py_sample_release(&sl->sample);
	py_sampler_release(&sl->ps);
}

/* Reap the child if it has exited; returns 1 once it is reaped. */
static int reap_child(struct sampleloop *sl)
{
	pid_t got;
	int status;

	if (sl->child_reaped)
		return 1;
	got = waitpid(sl->child, &status, WNOHANG);
	/* A stop while --native held it is no exit. */
	if (got == sl->child && (WIFEXITED(status) || WIFSIGNALED(status))) {
		sl->child_status = status;
		sl->child_reaped = 1;
	} else if (got < 0 && errno == ECHILD) {
		/* Reaped by someone else: its status is lost. */
		sl->child_status = -1;
		sl->child_reaped = 1;
	}
	return sl->child_reaped;
}

int sampleloop_target_gone(struct sampleloop *sl)
{
	char state = proc_state(sl->rt.pid);

	if (state == 'T')
		sl->seen_stopped = 1;
	/* A pid that another process took since is gone just the same. */
	if ((sl->child && reap_child(sl)) || !proc_state_alive(state) ||
	    (sl->rt.start_time &&
	     proc_start_time(sl->rt.pid) != sl->rt.start_time)) {
		sl->ended = "the target exited";
		return 1;
	}
	/* Following a tree, the target may exec (a wrapper, Python). */
	if (sl->tree)
		return 0;
	if (pyruntime_still_valid(&sl->rt) == 0) {
		sl->ended = "the target exec'd another program";
		sl->execd = 1;
		return 1;
	}
	return 0;
}

/*
 * Reads said the process is gone, or (mm_gone) the address space sampling
 * began with was replaced: an exit or an exec in progress looks so for a
 * moment before /proc says which.  1 once it does (sl->ended set), 0 if
 * the process is still there running the same program.  An address space
 * replaced under the same program, mapped at the same addresses, is an
 * exec all the same.
 */
static int gone_for_sure(struct sampleloop *sl, int mm_gone)
{
	const struct timespec pause = {0, GONE_RECHECK_NS};
	int i;

	for (i = 0; i < GONE_RECHECKS; i++) {
		if (sampleloop_target_gone(sl))
			return 1;
		if (pyruntime_still_valid(&sl->rt) == 1) {
			if (!mm_gone)
				return 0;
			sl->ended = "the target exec'd another program";
			sl->execd = 1;
			return 1;
		}
		nanosleep(&pause, NULL);
	}
	/* Still without memory to read: as good as gone. */
	sl->ended = "the target exited";
	return 1;
}

enum drop_reason sampleloop_take(struct sampleloop *sl)
{
	enum drop_reason why;
	uint64_t now;

	why = py_sampler_sample(&sl->ps, &sl->sample);
	if (why != DROP_NONE && why != DROP_GONE)
		why = py_sampler_sample(&sl->ps, &sl->sample);
	if (why == DROP_GONE && !gone_for_sure(sl, 0))
		why = DROP_READ; /* it was only between two programs */
	else if (why == DROP_GONE ||
		 (why != DROP_NONE && sampleloop_target_gone(sl)))
		return DROP_GONE;
	/*
	 * After the reads, so that a sample read wholly from the old
	 * program passes and one that may have crossed the exec does not.
	 */
	if (sl->mm_fd >= 0 && proc_mm_same(sl->mm_fd, sl->rt.base) == 0 &&
	    gone_for_sure(sl, 1))
		return DROP_GONE;
	if (why != DROP_NONE)
		sl->dropped[why]++;
	now = now_ns();
	if (now - sl->last_check > EXEC_CHECK_NS) {
		sl->last_check = now;
		if (sampleloop_target_gone(sl))
			return DROP_GONE;
	}
	return why;
}

enum drop_reason
sampleloop_take_tree(struct sampleloop *sl,
		     void (*add)(void *ctx, const struct child *ch), void *ctx)
{
	size_t i;

	children_scan(sl->tree, 0);
	for (i = 0; i < sl->tree->nr; i++) {
		struct child *ch = sl->tree->list[i];
		enum drop_reason why;

		if (ch->state != CHILD_PYTHON)
			continue;
		why = children_take(ch);
		if (why == DROP_GONE)
			continue;
		if (why != DROP_NONE) {
			sl->dropped[why]++;
			continue;
		}
		sl->tree_reads++;
		add(ctx, ch);
	}
	return sampleloop_target_gone(sl) ? DROP_GONE : DROP_NONE;
}

/* A random offset into a slot: [0, interval). */
static uint64_t into_slot(struct sampleloop *sl)
{
	sl->rng ^= sl->rng << 13;
	sl->rng ^= sl->rng >> 7;
	sl->rng ^= sl->rng << 17;
	return sl->rng % sl->interval;
}

uint64_t sampleloop_schedule(struct sampleloop *sl)
{
	uint64_t now = now_ns(), behind;

	sl->slot += sl->interval;
	/*
	 * Slots stay on the grid of the first one.  A slot whose time
	 * passed less than CATCH_UP_NS ago (spyc was preempted for a
	 * scheduler slice or two) is taken late, at once: the asked rate is
	 * kept at the cost of a short burst.  Older ones are skipped and
	 * counted, never made up.
	 */
	if (now > sl->slot + CATCH_UP_NS) {
		behind = (now - sl->slot - CATCH_UP_NS) / sl->interval + 1;
		sl->missed += behind;
		sl->slot += behind * sl->interval;
	}
	sl->next = sl->slot + into_slot(sl);
	return sl->next;
}

void sleep_until(uint64_t deadline)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(deadline / 1000000000ULL);
	ts.tv_nsec = (long)(deadline % 1000000000ULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
		   EINTR &&
	       !sampleloop_stop)
		;
}

int sampleloop_wait(struct sampleloop *sl, uint64_t deadline)
{
	uint64_t now;

	while (!sampleloop_stop && (now = now_ns()) < deadline) {
		if (deadline - now <= EXEC_CHECK_NS) {
			sleep_until(deadline);
			break;
		}
		sleep_until(now + EXEC_CHECK_NS);
		if (!sampleloop_stop && sampleloop_target_gone(sl))
			return 1;
	}
	return 0;
}

const char *sampleloop_stopped_note(const struct sampleloop *sl)
{
	if (proc_state(sl->rt.pid) == 'T')
		return "the target is stopped by a signal: left stopped";
	if (sl->seen_stopped)
		return "the target was stopped by a signal for a while";
	return NULL;
}

/* Decimals a rate shows with beyond the three significant digits. */
#define RATE_MAX_DECIMALS 9

void sampleloop_add_rate(struct strbuf *sb, double hz)
{
	char buf[64];
	int decimals = 1;
	size_t n;

	if (hz > 0 && hz < 10) {
		decimals = 2 - (int)floor(log10(hz));
		if (decimals > RATE_MAX_DECIMALS)
			decimals = RATE_MAX_DECIMALS;
	}
	snprintf(buf, sizeof(buf), "%.*f", decimals, hz);
	/* "0.500" reads as 0.5, but keep one decimal: "5.0". */
	n = strlen(buf);
	while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
		buf[--n] = '\0';
	strbuf_addstr(sb, buf);
}

uint64_t sampleloop_describe_drops(const struct sampleloop *sl,
				   struct strbuf *sb)
{
	const char *sep = " (";
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < DROP_NR; i++)
		total += sl->dropped[i];
	strbuf_addf(sb, "%llu dropped", (unsigned long long)total);
	for (i = 0; i < DROP_NR; i++) {
		if (!sl->dropped[i])
			continue;
		strbuf_addf(sb, "%s%llu %s", sep,
			    (unsigned long long)sl->dropped[i],
			    drop_reason_name((enum drop_reason)i));
		sep = ", ";
	}
	if (total)
		strbuf_addch(sb, ')');
	return total;
}

int thread_wanted(const struct py_thread *t, int idle, int gil)
{
	if (gil)
		return t->holds_gil;
	return idle || t->state == THREAD_RUNNING || t->state == THREAD_UNKNOWN;
}

enum drop_reason sampleloop_read_stopped(struct native_unwinder *nu,
					 struct py_sampler *ps,
					 struct py_sample *s, const long *tids,
					 size_t n)
{
	enum drop_reason why = DROP_NONE;
	int try;

	for (try = 0; try < NATIVE_STOP_TRIES; try++) {
		/* Let them run on a little, past the hand-over. */
		if (try)
			native_run_on(try);
		native_stop(nu, tids, n);
		why = py_sampler_sample(ps, s);
		/*
		 * Registers, stack top and Python frames are copied: let them
		 * go.
		 */
		native_resume_all(nu);
		if (why != DROP_INVALID && why != DROP_READ)
			break;
	}
	return why;
}

enum drop_reason sampleloop_stop_wanted(struct sampleloop *sl,
					struct native_unwinder *nu, int idle,
					int gil)
{
	struct py_sample *s = &sl->sample;
	size_t i, n = 0, nr_idents = 0, nr = s->nr_threads;
	int want_state = sl->ps.want_state, want_gil = sl->ps.want_gil;
	int stop_reads = sl->ps.stop_reads;
	enum drop_reason why;
	int torn = 0;

	ALLOC_GROW(sl->tids, nr + 1, sl->alloc_tids);
	ALLOC_GROW(sl->idents, nr + 1, sl->alloc_idents);
	ALLOC_GROW(sl->before, nr + 1, sl->alloc_before);
	for (i = 0; i < nr; i++) {
		const struct py_thread *t = &s->threads[i];

		if ((!t->depth && !t->torn) || t->is_task ||
		    !thread_wanted(t, idle, gil))
			continue;
		/* A torn stack is read only once its thread is stopped. */
		if (!t->tid && t->torn) {
			why = DROP_INVALID;
			goto out;
		}
		sl->idents[nr_idents++] = t->ident;
		if (t->tid)
			sl->tids[n++] = t->tid;
		torn |= t->torn;
	}
	/* --blocking: a sample read whole is of the moment it was asked. */
	if (!n || (stop_reads == STOP_READS_TORN && !torn))
		return DROP_NONE;
	memcpy(sl->before, s->threads, nr * sizeof(*sl->before));
	sl->ps.want_state = sl->ps.want_gil = sl->ps.stop_reads = 0;
	/* Only the threads this sample keeps: the others stay unread. */
	py_sampler_walk_only(&sl->ps, sl->idents, nr_idents);
	why = sampleloop_read_stopped(nu, &sl->ps, s, sl->tids, n);
	py_sampler_walk_only(&sl->ps, NULL, 0);
	sl->ps.want_state = want_state;
	sl->ps.want_gil = want_gil;
	sl->ps.stop_reads = stop_reads;
	py_sample_keep_states(s, sl->before, nr);
out:
	if (why != DROP_NONE && why != DROP_GONE)
		sl->dropped[why]++;
	return why;
}

static void pass_on(struct sampleloop *sl, int sig)
{
	if (sig == SIGINT) {
		struct timespec ts = {0, CTRL_C_GRACE_NS};

		nanosleep(&ts, NULL);
	}
	/* Once reaped, its pid may be another process's. */
	if (!reap_child(sl))
		kill(sl->child, sig);
}

/*
 * Wait for the child to exit until deadline (a now_ns() time), passing
 * spyc's signals on to it.  Polls: a blocking waitpid() could miss a
 * signal that lands between the look at sampleloop_signals_seen and the
 * call.  Returns 1 once it is reaped, 0 at the deadline.
 */
static int wait_child(struct sampleloop *sl, uint64_t deadline)
{
	while (!reap_child(sl)) {
		struct timespec ts = {0, CHILD_POLL_NS};

		if (sl->signals_passed != sampleloop_signals_seen) {
			sl->signals_passed = sampleloop_signals_seen;
			pass_on(sl, sampleloop_stop);
			continue;
		}
		if (now_ns() >= deadline)
			return 0;
		nanosleep(&ts, NULL);
	}
	return 1;
}

void sampleloop_finish(struct sampleloop *sl, int sig)
{
	if (!sl->child || reap_child(sl))
		return;
	if (sig) {
		sl->signals_passed = sampleloop_signals_seen;
		pass_on(sl, sig);
	}
	wait_child(sl, UINT64_MAX);
}

int sampleloop_end_child(struct sampleloop *sl, uint64_t grace_ns)
{
	if (!sl->child || reap_child(sl))
		return 0;
	kill(sl->child, SIGTERM);
	if (!wait_child(sl, now_ns() + grace_ns)) {
		kill(sl->child, SIGKILL);
		wait_child(sl, UINT64_MAX);
	}
	return 1;
}

int sampleloop_child_running(struct sampleloop *sl)
{
	return sl->child && !reap_child(sl);
}

int sampleloop_child_exit_code(const struct sampleloop *sl)
{
	if (!sl->child || !sl->child_reaped || sl->child_status == -1)
		return -1;
	if (WIFEXITED(sl->child_status))
		return WEXITSTATUS(sl->child_status);
	if (WIFSIGNALED(sl->child_status))
		return 128 + WTERMSIG(sl->child_status);
	return -1;
}
