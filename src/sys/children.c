/* SPDX-License-Identifier: MIT */
/* Following a target's descendants (--subprocesses): finding them as they
 * start, telling the Python ones from the rest, sampling each Python one. */
#include "sys/children.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py/framename.h"
#include "sys/proc.h"
#include "util.h"

/* How often to look for new descendants. */
#define SCAN_INTERVAL_NS (50ULL * 1000000ULL)
/*
 * How long a new process may run without an interpreter before it is
 * taken for a program that is not Python: a wrapper or a fork that
 * execs Python does so within this, or its interpreter takes this
 * long to start.
 */
#define SETTLE_NS (5ULL * 1000000000ULL)
/* Threads per process whose children are looked for. */
#define MAX_TASKS 4096
/* Bytes of a command line kept in a label. */
#define LABEL_CMDLINE_MAX 160

static void add_child(struct children *c, pid_t pid);

void children_init(struct children *c, pid_t root,
		   void (*setup)(struct py_sampler *ps, void *ctx), void *ctx)
{
	memset(c, 0, sizeof(*c));
	c->root = root;
	c->setup = setup;
	c->ctx = ctx;
	add_child(c, root);
}

static void drop_sampler(struct child *ch)
{
	if (!ch->sampler_ready)
		return;
	py_sample_release(&ch->sample);
	py_sampler_release(&ch->ps);
	memset(&ch->sample, 0, sizeof(ch->sample));
	ch->sampler_ready = 0;
}

void children_release(struct children *c)
{
	size_t i;

	for (i = 0; i < c->nr; i++) {
		drop_sampler(c->list[i]);
		free(c->list[i]);
	}
	free(c->list);
	free(c->tids);
	memset(c, 0, sizeof(*c));
}

void children_label(pid_t pid, char *buf, size_t size)
{
	char cmd[LABEL_CMDLINE_MAX + 4] = "";

	proc_cmdline(pid, cmd, LABEL_CMDLINE_MAX);
	if (strlen(cmd) >= LABEL_CMDLINE_MAX - 1)
		strcpy(cmd + LABEL_CMDLINE_MAX - 4, "...");
	if (!cmd[0])
		snprintf(cmd, sizeof(cmd), "?");
	snprintf(buf, size, "%s (pid %d)", cmd, (int)pid);
}

static struct child *find_child(const struct children *c, pid_t pid)
{
	size_t i;

	for (i = 0; i < c->nr; i++)
		if (c->list[i]->pid == pid)
			return c->list[i];
	return NULL;
}

static void add_child(struct children *c, pid_t pid)
{
	struct child *ch;

	if (find_child(c, pid))
		return;
	ch = xcalloc(1, sizeof(*ch));
	ch->pid = pid;
	ch->state = CHILD_STARTING;
	ch->since = now_ns();
	ch->exe_inode = proc_exe_inode(pid);
	children_label(pid, ch->label, sizeof(ch->label));
	ALLOC_GROW(c->list, c->nr + 1, c->alloc);
	c->list[c->nr++] = ch;
}

/* Add the children of every thread of pid (Linux lists them per thread). */
static void add_children_of(struct children *c, pid_t pid)
{
	char path[96], buf[4096], *p, *end;
	size_t i, n;
	long v;

	if (!c->alloc_tids) {
		c->alloc_tids = MAX_TASKS;
		c->tids = xmalloc(MAX_TASKS * sizeof(*c->tids));
	}
	n = proc_tasks(pid, c->tids, c->alloc_tids);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/children",
			 (int)pid, c->tids[i]);
		if (proc_read_text(path, buf, sizeof(buf)) <= 0)
			continue;
		for (p = buf;; p = end) {
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			if (v > 0)
				add_child(c, (pid_t)v);
		}
	}
}

/* Label ch by its command line now, unless it has none (it exited). */
static void relabel(struct child *ch)
{
	char label[CHILD_LABEL_MAX];

	children_label(ch->pid, label, sizeof(label));
	if (strncmp(label, "? (pid ", 7))
		memcpy(ch->label, label, sizeof(label));
}

/* ch has no interpreter (yet): look again. */
static void look_for_python(struct children *c, struct child *ch)
{
	int ret = pyruntime_find(&ch->rt, ch->pid);

	if (ret == PYRT_OK) {
		relabel(ch);
		target_cwd(ch->pid, ch->cwd, sizeof(ch->cwd));
		py_sampler_init(&ch->ps, &ch->rt);
		if (c->setup)
			c->setup(&ch->ps, c->ctx);
		ch->sampler_ready = 1;
		ch->runs_python = ch->was_python = 1;
		ch->state = CHILD_PYTHON;
		ch->why[0] = '\0';
		return;
	}
	if (ret == PYRT_NO_PROCESS || !proc_alive(ch->pid)) {
		ch->state = CHILD_GONE;
		return;
	}
	ch->other_looks = ret == PYRT_NOT_READY ? 0 : ch->other_looks + 1;
	/*
	 * A fork runs its parent's command line until it execs; one that
	 * has exited has none left: keep the last one seen.
	 */
	relabel(ch);
	if (ret == PYRT_NOT_READY)
		return;
	/* Not Python, or one spyc cannot read: believe it once it lasts. */
	if (ret == PYRT_NO_PERMISSION || now_ns() - ch->since > SETTLE_NS) {
		snprintf(ch->why, sizeof(ch->why), "%.159s", ch->rt.message);
		ch->state = CHILD_OTHER;
	}
}

/* The process behind ch is gone, or runs another program now. */
static void lost(struct child *ch)
{
	uint64_t inode;

	drop_sampler(ch);
	if (!proc_alive(ch->pid)) {
		ch->state = CHILD_GONE;
		return;
	}
	inode = proc_exe_inode(ch->pid);
	ch->exe_inode = inode;
	ch->runs_python = 0;
	ch->other_looks = 0;
	ch->since = now_ns();
	ch->state = CHILD_STARTING;
}

size_t children_scan(struct children *c, int force)
{
	uint64_t now = now_ns();
	size_t i, sampled = 0;

	if (!force && now < c->next_scan) {
		for (i = 0; i < c->nr; i++)
			sampled += c->list[i]->state == CHILD_PYTHON;
		return sampled;
	}
	c->next_scan = now + SCAN_INTERVAL_NS;
	/* c->nr grows as children are found: theirs are found too. */
	for (i = 0; i < c->nr; i++) {
		struct child *ch = c->list[i];

		if (ch->state == CHILD_GONE)
			continue;
		if (!proc_alive(ch->pid)) {
			drop_sampler(ch);
			ch->state = CHILD_GONE;
			continue;
		}
		add_children_of(c, ch->pid);
		switch (ch->state) {
		case CHILD_OTHER:
			/* It may exec Python later. */
			if (proc_exe_inode(ch->pid) != ch->exe_inode)
				lost(ch);
			break;
		case CHILD_PYTHON:
			if (pyruntime_still_valid(&ch->rt) == 0)
				lost(ch);
			break;
		default:
			break;
		}
		if (ch->state == CHILD_STARTING)
			look_for_python(c, ch);
		sampled += ch->state == CHILD_PYTHON;
	}
	return sampled;
}

enum drop_reason children_take(struct child *ch)
{
	enum drop_reason why;

	why = py_sampler_sample(&ch->ps, &ch->sample);
	if (why != DROP_NONE && why != DROP_GONE)
		why = py_sampler_sample(&ch->ps, &ch->sample);
	if (why == DROP_GONE ||
	    (why != DROP_NONE &&
	     (!proc_alive(ch->pid) || pyruntime_still_valid(&ch->rt) != 1))) {
		lost(ch);
		return DROP_GONE;
	}
	if (why != DROP_NONE)
		ch->dropped[why]++;
	else
		ch->samples++;
	return why;
}

size_t children_sampled(const struct children *c)
{
	size_t i, n = 0;

	for (i = 0; i < c->nr; i++)
		n += c->list[i]->samples > 0;
	return n;
}
