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

struct py_task_file *pystate_task(struct py_sampler *ps, long tid)
{
	struct py_task_file *tf;
	char path[64];
	size_t i;
	int fd;

	/* Each sample asks in the same order as the last: try the next. */
	i = ps->task_hint;
	if (i < ps->nr_task_files && ps->task_files[i].tid == tid) {
		ps->task_hint = i + 1;
		return &ps->task_files[i];
	}
	for (i = 0; i < ps->nr_task_files; i++)
		if (ps->task_files[i].tid == tid) {
			ps->task_hint = i + 1;
			return &ps->task_files[i];
		}
	/* Threads come and go: start over rather than grow forever. */
	if (ps->nr_task_files >= PY_MAX_THREADS) {
		for (i = 0; i < ps->nr_task_files; i++)
			close(ps->task_files[i].fd);
		ps->nr_task_files = 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)ps->rt->pid,
		 tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ALLOC_GROW(ps->task_files, ps->nr_task_files + 1, ps->alloc_task_files);
	tf = &ps->task_files[ps->nr_task_files++];
	ps->task_hint = ps->nr_task_files;
	tf->tid = tid;
	tf->fd = fd;
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/comm", (int)ps->rt->pid,
		 tid);
	read_line(path, tf->comm, sizeof(tf->comm));
	return tf;
}

static void forget_task(struct py_sampler *ps, long tid)
{
	size_t i;

	for (i = 0; i < ps->nr_task_files; i++) {
		if (ps->task_files[i].tid != tid)
			continue;
		close(ps->task_files[i].fd);
		ps->task_files[i] = ps->task_files[--ps->nr_task_files];
		return;
	}
}

/* The scheduler state letter of a thread (proc(5): R, S, D, ...), or 0. */
static char task_state(struct py_sampler *ps, long tid)
{
	char buf[512], *p;
	ssize_t n;
	struct py_task_file *tf = pystate_task(ps, tid);

	if (!tf)
		return 0;
	proc_counts.file_calls++;
	n = pread(tf->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		forget_task(ps, tid);
		return 0;
	}
	buf[n] = '\0';
	/* The state follows the last ')': the name may hold one. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* x86-64's futex(2); /proc/PID/task/TID/syscall gives its first argument. */
#define SYSCALL_FUTEX 202

/* Is tid blocked in a futex inside [lo, hi)?  That is a GIL wait. */
static int waits_on(pid_t pid, long tid, uint64_t lo, uint64_t hi)
{
	char path[64], buf[256];
	unsigned long long uaddr;
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall", (int)pid,
		 tid);
	if (proc_read_text(path, buf, sizeof(buf)) <= 0)
		return 0;
	if (sscanf(buf, "%ld %llx", &nr, &uaddr) != 2 || nr != SYSCALL_FUTEX)
		return 0;
	return uaddr >= lo && uaddr < hi;
}

int pystate_known_idle(struct py_sampler *ps, struct py_thread *t)
{
	char st;

	if (!t->tid && ps->pthread_tid_at >= 0) {
		int32_t tid = 0;

		if (!proc_read(ps->rt->pid,
			       t->ident + (uint64_t)ps->pthread_tid_at, &tid,
			       sizeof(tid)) &&
		    tid > 0)
			py_thread_set_tid(ps, t, tid);
	}
	if (!t->tid)
		return 0;
	st = t->sched = task_state(ps, t->tid);
	return st && st != 'R' && st != 'D';
}

void pystate_annotate(struct py_sampler *ps, struct py_sample *out,
			     const struct gil_view *gil)
{
	size_t i;

	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		char st;

		t->holds_gil =
		    ps->want_gil && gil->locked && gil->holder == t->tstate;
		if (t->skipped) {
			t->state = THREAD_IDLE;
			continue;
		}
		t->state = THREAD_UNKNOWN;
		if (!ps->want_state || !t->tid)
			continue;
		/* Read before the walk when idle threads are left out. */
		st = t->sched ? t->sched : task_state(ps, t->tid);
		if (!st)
			continue;
		/* R runs or is runnable; D is in the kernel on its behalf. */
		if (st == 'R' || st == 'D' || t->holds_gil)
			t->state = THREAD_RUNNING;
		else if (ps->want_gil && gil->hi &&
			 waits_on(ps->rt->pid, t->tid, gil->lo, gil->hi))
			t->state = THREAD_GIL_WAIT;
		else
			t->state = THREAD_IDLE;
	}
}

void pystate_release(struct py_sampler *ps)
{
	size_t i;

	for (i = 0; i < ps->nr_task_files; i++)
		close(ps->task_files[i].fd);
	free(ps->task_files);
	ps->task_files = NULL;
	ps->nr_task_files = ps->alloc_task_files = 0;
}
