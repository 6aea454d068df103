/* SPDX-License-Identifier: MIT */
/*
 * A target's thread ids as it sees them, mapped to spyc's.  A process in
 * a container has pid namespaces of its own: the ids its interpreter
 * keeps (a thread state's native id, glibc's tid in struct pthread) are
 * the container's, while /proc and ptrace take spyc's.
 */
#ifndef SPYC_TIDMAP_H
#define SPYC_TIDMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tidmap_entry {
	long inner, outer; /* the target's id for a thread, and spyc's */
};

struct tidmap {
	pid_t pid;
	int nested; /* the target's pid namespace is not spyc's */
	pid_t inner_pid; /* the target's pid as it sees it */
	/* nested: the map; else the ids found to be the target's */
	struct tidmap_entry *e;
	size_t nr, alloc;
	uint64_t loaded_ns; /* when the entries were last read (now_ns) */
};

/*
 * Learn whether pid (spyc's id of the target) lives in a pid namespace
 * below spyc's: the NSpid line of its /proc status names more than one
 * id.  Kernels without NSpid (before 4.1) read as not nested.
 */
void tidmap_init(struct tidmap *m, pid_t pid);
void tidmap_release(struct tidmap *m);

/*
 * spyc's id of the target's thread inner (its id as the target sees it);
 * inner itself when the target shares spyc's namespace, 0 when no task
 * of the target has that id (a thread gone, or a torn read): such an id
 * is never used, for /proc or ptrace, as someone else's could be.  An id
 * found is trusted for up to a second: a thread that ends within it
 * keeps its id (which the kernel gives again only once pid_max ids
 * later).
 */
long tidmap_outer(struct tidmap *m, long inner);

/*
 * The target's task ids as it sees them, at most max, into ids: what
 * its own memory holds.  Returns how many.
 */
size_t tidmap_inner_tasks(struct tidmap *m, long *ids, size_t max);

/*
 * The last id of the NSpid line in the /proc status text status (the id
 * in the innermost namespace), and in *nr how many ids the line has; 0
 * (and *nr 0) without one.
 */
long tidmap_parse_nspid(const char *status, size_t *nr);

#endif
