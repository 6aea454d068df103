/* SPDX-License-Identifier: MIT */
/* Thread states: running, idle or waiting for the GIL, from /proc. */
#include "py/pystate.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/proc.h"
#include "util.h"

/* Read a /proc file's first line (without its newline) into buf. */
static void read_line(const char *path, char *buf, size_t size)
{
	proc_read_text(path, buf, size);
	buf[strcspn(buf, "\n")] = '\0';
}

struct py_task_file *pystate_task(struct pystate *st, long tid)
{
	struct py_task_file *tf;
	char path[64];
	size_t i;
	int fd;

	/* Each sample asks in the same order as the last: try the next. */
	i = st->task_hint;
	if (i < st->nr_task_files && st->task_files[i].tid == tid) {
		st->task_hint = i + 1;
		return &st->task_files[i];
	}
	for (i = 0; i < st->nr_task_files; i++)
		if (st->task_files[i].tid == tid) {
			st->task_hint = i + 1;
			return &st->task_files[i];
		}
	/* Threads come and go: start over rather than grow forever. */
	if (st->nr_task_files >= PY_MAX_THREADS) {
		for (i = 0; i < st->nr_task_files; i++)
			close(st->task_files[i].fd);
		st->nr_task_files = 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)st->pid,
		 tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ALLOC_GROW(st->task_files, st->nr_task_files + 1, st->alloc_task_files);
	tf = &st->task_files[st->nr_task_files++];
	st->task_hint = st->nr_task_files;
	tf->tid = tid;
	tf->fd = fd;
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/comm", (int)st->pid,
		 tid);
	read_line(path, tf->comm, sizeof(tf->comm));
	return tf;
}

static void forget_task(struct pystate *st, long tid)
{
	size_t i;

	for (i = 0; i < st->nr_task_files; i++) {
		if (st->task_files[i].tid != tid)
			continue;
		close(st->task_files[i].fd);
		st->task_files[i] = st->task_files[--st->nr_task_files];
		return;
	}
}

/* The scheduler state letter of a thread (proc(5): R, S, D, ...), or 0. */
static char task_state(struct pystate *st, long tid)
{
	char buf[512], *p;
	ssize_t n;
	struct py_task_file *tf = pystate_task(st, tid);

	if (!tf)
		return 0;
	proc_counts.file_calls++;
	n = pread(tf->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		forget_task(st, tid);
		return 0;
	}
	buf[n] = '\0';
	/* The state follows the last ')': the name may hold one. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* x86-64's futex(2); /proc/PID/task/TID/syscall gives its first argument. */
#define SYSCALL_FUTEX 202

/* What a thread seen asleep is doing now, by its system call. */
enum sleep_kind {
	SLEEP_OTHER,   /* in another call, or not known */
	SLEEP_GIL,     /* blocked in a futex inside the GIL: a GIL wait */
	SLEEP_WOKE_UP, /* running again ("running"): it woke since */
};

static enum sleep_kind sleeping_in(pid_t pid, long tid, uint64_t lo,
				   uint64_t hi)
{
	char path[64], buf[256];
	unsigned long long uaddr;
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall", (int)pid,
		 tid);
	if (proc_read_text(path, buf, sizeof(buf)) <= 0)
		return SLEEP_OTHER;
	if (!strncmp(buf, "running", 7))
		return SLEEP_WOKE_UP;
	if (sscanf(buf, "%ld %llx", &nr, &uaddr) != 2 || nr != SYSCALL_FUTEX)
		return SLEEP_OTHER;
	return uaddr >= lo && uaddr < hi ? SLEEP_GIL : SLEEP_OTHER;
}

int pystate_known_idle(struct pystate *st, struct py_thread *t)
{
	char state;

	if (!t->tid)
		return 0;
	state = t->sched = task_state(st, t->tid);
	return state && state != 'R' && state != 'D';
}

void pystate_annotate(struct pystate *st, struct py_sample *out,
		      const struct gil_view *gil, int want_state, int want_gil)
{
	size_t i;

	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		char state;

		t->holds_gil =
		    want_gil && gil->locked && gil->holder == t->tstate;
		if (t->skipped) {
			t->state = THREAD_IDLE;
			continue;
		}
		t->state = THREAD_UNKNOWN;
		if (!want_state || !t->tid)
			continue;
		/* Read before the walk when idle threads are left out. */
		state = t->sched ? t->sched : task_state(st, t->tid);
		if (!state)
			continue;
		/* R runs or is runnable; D is in the kernel on its behalf. */
		if (state == 'R' || state == 'D' || t->holds_gil) {
			t->state = THREAD_RUNNING;
			continue;
		}
		/*
		 * Asleep: on the GIL, or elsewhere.  A thread that woke
		 * between the two reads (given the GIL back) runs.
		 */
		switch (want_gil && gil->hi
			    ? sleeping_in(st->pid, t->tid, gil->lo, gil->hi)
			    : SLEEP_OTHER) {
		case SLEEP_GIL:
			t->state = THREAD_GIL_WAIT;
			break;
		case SLEEP_WOKE_UP:
			t->state = THREAD_RUNNING;
			break;
		default:
			t->state = THREAD_IDLE;
		}
	}
}

void pystate_init(struct pystate *st, pid_t pid)
{
	memset(st, 0, sizeof(*st));
	st->pid = pid;
}

void pystate_release(struct pystate *st)
{
	size_t i;

	for (i = 0; i < st->nr_task_files; i++)
		close(st->task_files[i].fd);
	free(st->task_files);
	st->task_files = NULL;
	st->nr_task_files = st->alloc_task_files = 0;
}
