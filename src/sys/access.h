/* SPDX-License-Identifier: MIT */
/* Why the kernel refused spyc another process: the cause, and its fix. */
#ifndef SPYC_ACCESS_H
#define SPYC_ACCESS_H

#include <stddef.h>
#include <sys/types.h>

enum access_kind {
	ACCESS_READ,  /* process_vm_readv of its memory */
	ACCESS_TRACE, /* ptrace(PTRACE_SEIZE) of one of its threads */
};

/*
 * One line (no trailing newline, at most len bytes with its NUL) on why
 * an access of kind to pid failed with EPERM, naming what stood in the
 * way and how to lift it: a seccomp filter on spyc, Yama's
 * ptrace_scope, another user's process, capabilities the target holds
 * and spyc does not, a target that is not dumpable, or, when spyc holds
 * CAP_SYS_PTRACE already, a security module or user namespace; or, to
 * trace, another tracer (a debugger) holding the target.  Reads
 * only spyc's own and the target's /proc files, and probes the refused
 * system call on spyc itself (harmless: its own memory, a ptrace request
 * that fails on any untraced process).
 */
void access_explain(pid_t pid, enum access_kind kind, char *buf, size_t len);

#endif
