/* SPDX-License-Identifier: MIT */
/* Why the kernel refused spyc another process: the cause, and its fix. */
#include "sys/access.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* CAP_SYS_PTRACE's bit in the Cap* masks (linux/capability.h). */
#define CAP_SYS_PTRACE_BIT 19
/* Parents followed from the target towards init, for Yama's scope 1. */
#define ANCESTORS_MAX 256

/* What /proc/PID/status says of a process's credentials. */
struct creds {
	long uid[3], gid[3]; /* real, effective, saved */
	uint64_t cap_prm, cap_eff;
	long seccomp;	   /* -1 if the kernel does not say */
	long ppid, tracer; /* tracer: 0 if none */
	int ok;
};

static void creds_read(const char *path, struct creds *c)
{
	char line[256];
	FILE *f = fopen(path, "r");

	memset(c, 0, sizeof(*c));
	c->seccomp = -1;
	c->ppid = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;

		if (!strncmp(line, "Uid:", 4))
			c->ok = sscanf(line + 4, "%ld %ld %ld", &c->uid[0],
				       &c->uid[1], &c->uid[2]) == 3;
		if (!strncmp(line, "Gid:", 4) &&
		    sscanf(line + 4, "%ld %ld %ld", &c->gid[0], &c->gid[1],
			   &c->gid[2]) != 3)
			c->gid[0] = c->gid[1] = c->gid[2] = -1;
		if (sscanf(line, "CapPrm: %llx", &mask) == 1)
			c->cap_prm = mask;
		if (sscanf(line, "CapEff: %llx", &mask) == 1)
			c->cap_eff = mask;
		if (!strncmp(line, "Seccomp:", 8))
			c->seccomp = strtol(line + 8, NULL, 10);
		if (!strncmp(line, "PPid:", 5))
			c->ppid = strtol(line + 5, NULL, 10);
		if (!strncmp(line, "TracerPid:", 10))
			c->tracer = strtol(line + 10, NULL, 10);
	}
	fclose(f);
}

static void creds_of(pid_t pid, struct creds *c)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	creds_read(path, c);
}

/*
 * Does a seccomp filter on spyc refuse the system call kind needs?  Each
 * probe is one the kernel allows any process on itself: a read of its
 * own memory, and a ptrace request that fails with ESRCH on a process
 * that is not traced by the caller.  A filter answers EPERM or ENOSYS.
 */
static int seccomp_refuses(enum access_kind kind)
{
	char from = 1, to = 0;
	struct iovec local = {&to, 1}, remote = {&from, 1};
	long r;

	errno = 0;
	if (kind == ACCESS_READ)
		r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	else
		r = ptrace(PTRACE_PEEKUSER, getpid(), 0, 0);
	return r < 0 && (errno == EPERM || errno == ENOSYS);
}

/* Yama's kernel.yama.ptrace_scope, -1 without Yama. */
static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &scope) != 1)
		scope = -1;
	fclose(f);
	return scope;
}

/* Is pid a descendant of spyc (Yama's scope 1 lets a parent trace)? */
static int is_descendant(pid_t pid)
{
	pid_t self = getpid();
	int i;

	for (i = 0; i < ANCESTORS_MAX && pid > 1; i++) {
		struct creds c;

		creds_of(pid, &c);
		if (c.ppid == self)
			return 1;
		pid = (pid_t)c.ppid;
	}
	return 0;
}

/* The same real, effective and saved ids as spyc's real ones? */
static int same_user(const struct creds *t)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	int i;

	for (i = 0; i < 3; i++)
		if (t->uid[i] != (long)uid || t->gid[i] != (long)gid)
			return 0;
	return 1;
}

/*
 * Not dumpable (it changed its credentials, or called prctl's
 * PR_SET_DUMPABLE with 0): the kernel then gives its /proc files to
 * root, whatever user it runs as.
 */
static int not_dumpable(pid_t pid, const struct creds *t)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return t->uid[1] != 0 && !stat(path, &st) && st.st_uid == 0;
}

void access_explain(pid_t pid, enum access_kind kind, char *buf, size_t len)
{
	const char *verb = kind == ACCESS_READ ? "read" : "trace";
	const char *call = kind == ACCESS_READ ? "process_vm_readv" : "ptrace";
	const char *give = "give spyc CAP_SYS_PTRACE (setcap "
			   "cap_sys_ptrace+ep spyc; in a container, "
			   "--cap-add SYS_PTRACE)";
	struct creds self, target;
	int has_cap, scope;

	creds_read("/proc/self/status", &self);
	creds_of(pid, &target);
	has_cap = !!(self.cap_eff & (1ULL << CAP_SYS_PTRACE_BIT));
	scope = yama_scope();

	if (kind == ACCESS_TRACE && target.tracer > 0 &&
	    target.tracer != (long)getpid()) {
		char comm[64] = "?", path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%ld/comm", target.tracer);
		f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		snprintf(buf, len,
			 "cannot trace pid %d: pid %ld (%s) traces it already, "
			 "and a thread has one tracer at a time: let that one "
			 "go (quit the debugger or strace) and run spyc again",
			 (int)pid, target.tracer, comm);
	} else if (seccomp_refuses(kind)) {
		snprintf(buf, len,
			 "no permission to %s pid %d: a seccomp filter on spyc "
			 "refuses %s (Seccomp: %ld in /proc/self/status): give "
			 "spyc's container SYS_PTRACE (--cap-add SYS_PTRACE; "
			 "Kubernetes: securityContext.capabilities.add), which "
			 "the default profiles of Docker, podman and containerd "
			 "then let call it, or a profile that allows "
			 "process_vm_readv and ptrace (--security-opt "
			 "seccomp=unconfined)",
			 verb, (int)pid, call, self.seccomp);
	} else if (scope == 3) {
		snprintf(buf, len,
			 "no permission to %s pid %d: kernel.yama.ptrace_scope "
			 "is 3, which lets no process %s another until the "
			 "next boot",
			 verb, (int)pid, verb);
	} else if (!has_cap && target.ok && !same_user(&target)) {
		snprintf(buf, len,
			 "no permission to %s pid %d: it runs as uid %ld, spyc "
			 "as uid %ld without CAP_SYS_PTRACE: run spyc as %s, "
			 "or %s",
			 verb, (int)pid, target.uid[1], (long)getuid(),
			 target.uid[1] ? "the same user or root" : "root",
			 give);
	} else if (!has_cap && target.ok && not_dumpable(pid, &target)) {
		snprintf(buf, len,
			 "no permission to %s pid %d: it is not dumpable (it "
			 "changed its user or group, or called "
			 "prctl(PR_SET_DUMPABLE, 0)): %s",
			 verb, (int)pid, give);
	} else if (!has_cap && target.ok && (target.cap_prm & ~self.cap_prm)) {
		snprintf(buf, len,
			 "no permission to %s pid %d: it holds capabilities "
			 "spyc does not (CapPrm %016llx, spyc's %016llx): run "
			 "spyc with all of root's capabilities, or %s",
			 verb, (int)pid, (unsigned long long)target.cap_prm,
			 (unsigned long long)self.cap_prm, give);
	} else if (!has_cap && scope == 2) {
		snprintf(buf, len,
			 "no permission to %s pid %d: kernel.yama.ptrace_scope "
			 "is 2, which lets only CAP_SYS_PTRACE %s: %s",
			 verb, (int)pid, verb, give);
	} else if (!has_cap && scope == 1 && !is_descendant(pid)) {
		snprintf(buf, len,
			 "no permission to %s pid %d: kernel.yama.ptrace_scope "
			 "is 1, which lets only a parent or CAP_SYS_PTRACE %s: "
			 "launch the program under spyc (spyc record -- "
			 "PROGRAM), set kernel.yama.ptrace_scope to 0, or %s",
			 verb, (int)pid, verb, give);
	} else if (has_cap) {
		snprintf(
		    buf, len,
		    "no permission to %s pid %d, though spyc holds "
		    "CAP_SYS_PTRACE: a security module (AppArmor, SELinux) "
		    "or a user namespace spyc is not over stands between "
		    "them (spyc in a rootless container cannot %s a "
		    "process outside it)",
		    verb, (int)pid, verb);
	} else {
		snprintf(buf, len,
			 "no permission to %s pid %d: run spyc as root or as "
			 "the target's user, or %s",
			 verb, (int)pid, give);
	}
}
