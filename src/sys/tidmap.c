// SPDX-License-Identifier: MIT
/*
 * Thread ids across pid namespaces.  /proc/PID/task/TID/status says, on
 * its NSpid line, a task's id in each pid namespace from /proc's (spyc's)
 * down to the task's own; a target not in a namespace below spyc's has
 * one id there, and its ids need no mapping.  The map is read whole, and
 * again (at most every TIDMAP_RELOAD_NS) when asked for an id it lacks:
 * a thread started since.
 *
 * A target in spyc's namespace needs no map, but an id read from its
 * memory is still checked: a torn read can give any number, and spyc
 * must never take someone else's task for the target's (ptrace, /proc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/proc.h"
#include "sys/tidmap.h"
#include "util.h"

#define TIDMAP_RELOAD_NS 20000000ULL /* 20 ms */
#define TIDMAP_MAX_TASKS 4096
/* How long an id checked to be the target's is taken on trust. */
#define TIDMAP_RECHECK_NS 1000000000ULL /* 1 s */

long tidmap_parse_nspid(const char *status, size_t *nr)
{
	const char *p = strncmp(status, "NSpid:", 6) ? strstr(status, "\nNSpid:")
						     : status;
	long last = 0;

	*nr = 0;
	if (!p)
		return 0;
	p = strchr(p, ':') + 1;
	for (;;) {
		char *end;
		long v;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		v = strtol(p, &end, 10);
		if (v <= 0)
			break;
		last = v;
		(*nr)++;
		p = end;
	}
	return *nr ? last : 0;
}

/* The innermost id of the status file at path, 0 if unreadable. */
static long read_nspid(const char *path, size_t *nr)
{
	char buf[4096];
	FILE *f = fopen(path, "re");
	size_t n;

	*nr = 0;
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	/* NSpid comes after Name..PPid: well within the first 4 KiB. */
	buf[n] = '\0';
	return tidmap_parse_nspid(buf, nr);
}

void tidmap_init(struct tidmap *m, pid_t pid)
{
	char path[64];
	size_t nr;
	long inner;

	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->inner_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	inner = read_nspid(path, &nr);
	if (nr > 1 && inner > 0) {
		m->nested = 1;
		m->inner_pid = (pid_t)inner;
	}
}

void tidmap_release(struct tidmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static void load(struct tidmap *m)
{
	long tasks[TIDMAP_MAX_TASKS];
	size_t n = proc_tasks(m->pid, tasks, ARRAY_SIZE(tasks)), i;

	m->nr = 0;
	m->loaded_ns = now_ns();
	for (i = 0; i < n; i++) {
		char path[80];
		size_t nr;
		long inner;

		snprintf(path, sizeof(path), "/proc/%d/task/%ld/status",
			 (int)m->pid, tasks[i]);
		inner = read_nspid(path, &nr);
		if (inner <= 0)
			continue;
		ALLOC_GROW(m->e, m->nr + 1, m->alloc);
		m->e[m->nr].inner = inner;
		m->e[m->nr].outer = tasks[i];
		m->nr++;
	}
}

static long find(const struct tidmap *m, long inner)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->e[i].inner == inner)
			return m->e[i].outer;
	return 0;
}

/*
 * Not nested: tid itself if it is one of the target's tasks, else 0.  The
 * ids found are kept (as entries of their own) for TIDMAP_RECHECK_NS,
 * then forgotten, so that each costs a look at /proc once a second.
 */
static long own_task(struct tidmap *m, long tid)
{
	uint64_t now = now_ns();
	char path[64];

	if (now - m->loaded_ns >= TIDMAP_RECHECK_NS ||
	    m->nr >= TIDMAP_MAX_TASKS) {
		m->nr = 0;
		m->loaded_ns = now;
	}
	if (find(m, tid))
		return tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%ld", (int)m->pid, tid);
	if (access(path, F_OK))
		return 0;
	ALLOC_GROW(m->e, m->nr + 1, m->alloc);
	m->e[m->nr].inner = m->e[m->nr].outer = tid;
	m->nr++;
	return tid;
}

long tidmap_outer(struct tidmap *m, long inner)
{
	long outer;

	if (inner <= 0)
		return 0;
	if (!m->nested)
		return own_task(m, inner);
	outer = find(m, inner);
	if (!outer && (!m->loaded_ns ||
		       now_ns() - m->loaded_ns >= TIDMAP_RELOAD_NS)) {
		load(m);
		outer = find(m, inner);
	}
	return outer;
}

size_t tidmap_inner_tasks(struct tidmap *m, long *ids, size_t max)
{
	size_t i;

	if (!m->nested)
		return proc_tasks(m->pid, ids, max);
	load(m);
	for (i = 0; i < m->nr && i < max; i++)
		ids[i] = m->e[i].inner;
	return i;
}
