/* SPDX-License-Identifier: MIT */
/* What sampling commands share: pacing samples at a rate, retrying a torn
 * sample, noticing that the target is gone, stopping a launched child. */
#include "sampleloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "proc.h"

/* How often to check, between failures, that the target did not exec. */
#define EXEC_CHECK_NS 500000000ULL
/* How long a child hit by a terminal's Ctrl-C gets to stop by itself. */
#define CTRL_C_GRACE_NS 100000000L

volatile sig_atomic_t sampleloop_stop;

static void on_signal(int sig)
{
	sampleloop_stop = sig;
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

void sampleloop_init(struct sampleloop *sl, double rate_hz)
{
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	py_sampler_init(&sl->ps, &sl->rt);
	sl->interval = (uint64_t)(1e9 / rate_hz);
	if (!sl->interval)
		sl->interval = 1;
	sl->next = sl->last_check = now_ns();
}

void sampleloop_release(struct sampleloop *sl)
{
	free(sl->tids);
	free(sl->before);
	py_sample_release(&sl->sample);
	py_sampler_release(&sl->ps);
}

int sampleloop_target_gone(struct sampleloop *sl)
{
	if (sl->child && !sl->child_reaped &&
	    waitpid(sl->child, &sl->child_status, WNOHANG) == sl->child) {
		sl->child_reaped = 1;
		sl->ended = "the target exited";
		return 1;
	}
	if (sl->child_reaped || !proc_alive(sl->rt.pid)) {
		sl->ended = "the target exited";
		return 1;
	}
	if (!pyruntime_still_valid(&sl->rt)) {
		sl->ended = "the target exec'd another program";
		sl->execd = 1;
		return 1;
	}
	return 0;
}

enum drop_reason sampleloop_take(struct sampleloop *sl)
{
	enum drop_reason why;
	uint64_t now;

	why = py_sampler_sample(&sl->ps, &sl->sample);
	if (why != DROP_NONE && why != DROP_GONE)
		why = py_sampler_sample(&sl->ps, &sl->sample);
	if (why == DROP_GONE ||
	    (why != DROP_NONE && sampleloop_target_gone(sl))) {
		if (!sl->ended)
			sl->ended = "the target exited";
		return DROP_GONE;
	}
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

uint64_t sampleloop_schedule(struct sampleloop *sl)
{
	uint64_t now = now_ns();

	sl->next += sl->interval;
	if (sl->next <= now)
		sl->next = now;
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

enum drop_reason sampleloop_stop_wanted(struct sampleloop *sl,
					struct native_unwinder *nu, int idle,
					int gil)
{
	struct py_sample *s = &sl->sample;
	size_t i, n = 0, nr = s->nr_threads;
	int want_state = sl->ps.want_state, want_gil = sl->ps.want_gil;
	enum drop_reason why;

	ALLOC_GROW(sl->tids, nr + 1, sl->alloc_tids);
	ALLOC_GROW(sl->before, nr + 1, sl->alloc_before);
	for (i = 0; i < nr; i++)
		if (s->threads[i].depth && s->threads[i].tid &&
		    thread_wanted(&s->threads[i], idle, gil))
			sl->tids[n++] = s->threads[i].tid;
	if (!n)
		return DROP_NONE;
	memcpy(sl->before, s->threads, nr * sizeof(*sl->before));
	native_stop(nu, sl->tids, n);
	sl->ps.want_state = sl->ps.want_gil = 0;
	why = py_sampler_sample(&sl->ps, s);
	/* Registers, stack top and Python frames are copied: let them go. */
	native_resume_all(nu);
	sl->ps.want_state = want_state;
	sl->ps.want_gil = want_gil;
	if (why != DROP_NONE && why != DROP_GONE)
		sl->dropped[why]++;
	py_sample_keep_states(s, sl->before, nr);
	return why;
}

void sampleloop_finish(struct sampleloop *sl, int sig)
{
	if (!sl->child || sl->child_reaped)
		return;
	if (sig == SIGINT) {
		struct timespec ts = {0, CTRL_C_GRACE_NS};

		nanosleep(&ts, NULL);
	}
	if (sig &&
	    waitpid(sl->child, &sl->child_status, WNOHANG) == sl->child) {
		sl->child_reaped = 1;
		return;
	}
	if (sig)
		kill(sl->child, sig);
	/* A second Ctrl-C interrupts the wait, not spyc's duty to wait. */
	while (waitpid(sl->child, &sl->child_status, 0) < 0 && errno == EINTR)
		;
	sl->child_reaped = 1;
}
