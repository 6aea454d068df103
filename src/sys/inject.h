/* SPDX-License-Identifier: MIT */
/*
 * Loading a shared library into a running process: one of its threads is
 * stopped with ptrace at a safe point, made to call dlopen (and then a
 * function of the library), and put back exactly as it was.
 */
#ifndef SPYC_INJECT_H
#define SPYC_INJECT_H

#include <stdint.h>
#include <sys/types.h>

struct inject_result {
	uint64_t handle;   /* what dlopen returned in the target */
	long tid;	   /* the thread that made the calls */
	int entry_called;  /* entry was found and returned */
	long entry_ret;	   /* what it returned (an int, sign-extended) */
	char message[512]; /* on failure, one line saying why */
};

/*
 * Load library (a path, made absolute here; the target must see the same
 * file) into pid with dlopen(RTLD_NOW), then, if entry is not NULL, call
 * the library's function int entry(const char *arg) with a copy of arg
 * (which may be NULL).  Only the thread that makes the calls is stopped,
 * and only while it is at a safe point (not in the allocator or the
 * loader: see safepoint.h); its registers and the stack bytes spyc
 * wrote are restored, and it is detached, on every path.
 *
 * Returns 0, or a negative errno with res->message set:
 *   -ESRCH      no such process, or it exited mid-way
 *   -EPERM      no permission to trace it
 *   -ENOENT     the library is not there for the target, no dlopen in
 *               the target (a static program), or no entry in library
 *   -EAGAIN     no thread came to a safe point in time
 *   -ELIBBAD    dlopen failed in the target (its dlerror() is quoted)
 *   -EFAULT     a call crashed in the target (its registers restored)
 *   -ETIMEDOUT  a call did not return in time (the target is left to
 *               finish it, which it cannot do safely: see README)
 *   -ENOSYS     not supported on this architecture
 * Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT while a call is in flight,
 * so that stopping spyc cannot leave the target mid-call.
 */
int inject_library(pid_t pid, const char *library, const char *entry,
		   const char *arg, struct inject_result *res);

/*
 * The same with library the target's own path to the file, taken as it
 * is (not resolved in spyc's root): a file spyc put under a container's
 * root, or a library the target has already loaded (dlopen then returns
 * it, whether or not its file is still there).
 */
int inject_library_as_seen(pid_t pid, const char *library, const char *entry,
			   const char *arg, struct inject_result *res);

#endif
