/* SPDX-License-Identifier: MIT */
/*
 * Loading a shared library into a running process: one of its threads is
 * stopped with ptrace at a safe point, made to call dlopen (and then a
 * function of the library), and put back exactly as it was.
 */
#include "sys/inject.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#if defined(__x86_64__)

#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "sys/access.h"
#include "sys/proc.h"
#include "sys/remotesym.h"
#include "sys/safepoint.h"
#include "sys/faults.h" /* last: make FAULTS=1 wraps ptrace */

/* System V x86-64 ABI: the 128 bytes below rsp belong to the function. */
#define RED_ZONE 128
/* spyc's strings (the library's path, the entry's argument) go here. */
#define SCRATCH_SIZE (3 * 4096)
/*
 * A call returns to this address, which faults: the SIGSEGV at it, seen
 * by spyc as the tracer and never delivered, is how a call's end shows.
 */
#define RETURN_ADDRESS 0
/* <dlfcn.h>: the target's glibc uses the same value. */
#define TARGET_RTLD_NOW 2
/* Bigger than any XSAVE area (AVX-512 with AMX tiles is about 11 KiB). */
#define XSTATE_MAX (64u << 10)
/* EFLAGS.DF: the ABI wants it clear when a function is called. */
#define EFLAGS_DF 0x400
#define SAFE_POINT_WAIT_NS (3ULL * 1000000000ULL)
#define CALL_TIMEOUT_NS (60ULL * 1000000000ULL)
#define MAX_TASKS 4096

/* One thread held by spyc, and everything needed to put it back. */
struct hijack {
	pid_t pid, tid;
	int attached;
	int pending_signal; /* held back when we stopped it; given on detach */
	int regs_changed;
	struct user_regs_struct saved;
	unsigned char *xstate; /* vector and x87 registers */
	struct iovec xiov;
	int xstate_type; /* NT_X86_XSTATE or NT_PRFPREG */
	uint64_t scratch;      /* lowest byte written: the return address */
	size_t scratch_len;    /* up to below the red zone */
	unsigned char *scratch_saved;
	int scratch_written;
	uint64_t data_next; /* where the next string goes */
};

static int fail(struct inject_result *res, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct inject_result *res, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	return err;
}

static void nap(unsigned long ns)
{
	struct timespec ts = {0, (long)ns};

	nanosleep(&ts, NULL);
}

/* Seize tid and stop it.  Returns 0, -EPERM, or -ESRCH (it is gone). */
static int hijack_attach(struct hijack *h, pid_t pid, pid_t tid)
{
	int status;

	h->pid = pid;
	h->tid = tid;
	h->pending_signal = 0;
	h->regs_changed = 0;
	h->scratch_written = 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return errno == EPERM ? -EPERM : -ESRCH;
	h->attached = 1;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -ESRCH;
	for (;;) {
		pid_t r = waitpid(tid, &status, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(status)) {
			h->attached = 0; /* it exited: nothing to detach */
			return -ESRCH;
		}
		break;
	}
	/*
	 * Our interrupt shows as PTRACE_EVENT_STOP; anything else is a
	 * signal on its way to the target: hold it, deliver it on detach.
	 */
	if ((status >> 16) != PTRACE_EVENT_STOP)
		h->pending_signal = WSTOPSIG(status);
	if (ptrace(PTRACE_GETREGS, tid, 0, &h->saved))
		return -ESRCH;
	if (!h->xstate)
		h->xstate = xmalloc(XSTATE_MAX);
	h->xiov.iov_base = h->xstate;
	h->xiov.iov_len = XSTATE_MAX;
	h->xstate_type = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &h->xiov)) {
		/* No XSAVE: the x87 and SSE state is all there is. */
		h->xiov.iov_len = sizeof(struct user_fpregs_struct);
		h->xstate_type = NT_PRFPREG;
		if (ptrace(PTRACE_GETREGSET, tid, NT_PRFPREG, &h->xiov))
			return -ESRCH;
	}
	return 0;
}

/*
 * Put the thread back as it was and let it go: the bytes spyc wrote,
 * its registers, a signal held back.  Safe to call on any path.
 */
static void hijack_release(struct hijack *h)
{
	if (!h->attached)
		return;
	if (h->scratch_written)
		proc_write(h->pid, h->scratch, h->scratch_saved,
			   h->scratch_len);
	if (h->regs_changed) {
		ptrace(PTRACE_SETREGS, h->tid, 0, &h->saved);
		ptrace(PTRACE_SETREGSET, h->tid, h->xstate_type, &h->xiov);
	}
	ptrace(PTRACE_DETACH, h->tid, 0, h->pending_signal);
	h->attached = 0;
	h->scratch_written = 0;
	h->regs_changed = 0;
}

/*
 * Reserve the scratch area below the red zone and save what is there.
 * Returns 0, or -EFAULT if the stack cannot be read there.
 */
static int hijack_scratch(struct hijack *h)
{
	uint64_t top = h->saved.rsp - RED_ZONE;
	/* 16-aligned data; the return address just below it, so that at
	 * the callee's entry rsp + 8 is 16-aligned as the ABI wants. */
	uint64_t data = (top - SCRATCH_SIZE) & ~15ULL;

	h->scratch = data - 8;
	h->scratch_len = top - h->scratch;
	h->data_next = data;
	if (!h->scratch_saved)
		h->scratch_saved = xmalloc(SCRATCH_SIZE + 32);
	if (proc_read(h->pid, h->scratch, h->scratch_saved, h->scratch_len))
		return -EFAULT;
	return 0;
}

/* Copy s into the scratch area; its address there, or 0 if it is full. */
static uint64_t put_string(struct hijack *h, const char *s)
{
	size_t len = strlen(s) + 1;
	uint64_t at = h->data_next;

	if (at + len > h->scratch + h->scratch_len)
		return 0;
	h->scratch_written = 1;
	if (proc_write(h->pid, at, s, len))
		return 0;
	h->data_next = (at + len + 15) & ~15ULL;
	return at;
}

/* Wait for a thread that was just sent PTRACE_INTERRUPT to stop. */
static int wait_stopped(pid_t tid)
{
	int status;

	for (;;) {
		pid_t r = waitpid(tid, &status, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		return r > 0 && WIFSTOPPED(status) ? 0 : -ESRCH;
	}
}

/*
 * Make the held thread call fn(a0, a1) and wait for it to return.
 * Returns 0 with the result in *ret, or a negative errno with
 * res->message set.  The thread is left stopped (unless it is gone).
 */
static int remote_call(struct hijack *h, uint64_t fn, uint64_t a0,
		       uint64_t a1, uint64_t *ret, struct inject_result *res)
{
	struct user_regs_struct regs = h->saved;
	uint64_t back = RETURN_ADDRESS, start = now_ns();
	unsigned long wait_ns = 50000;
	sigset_t block, old;
	int status, err = 0;

	h->scratch_written = 1;
	if (proc_write(h->pid, h->scratch, &back, sizeof(back)))
		return fail(res, -ESRCH, "pid %d exited during injection",
			    (int)h->pid);
	regs.rip = fn;
	regs.rdi = a0;
	regs.rsi = a1;
	regs.rax = 0; /* no vector registers for a variadic callee */
	regs.rsp = h->scratch;
	regs.eflags &= ~(unsigned long long)EFLAGS_DF;
	/*
	 * Not in a system call: had the thread been stopped inside one, the
	 * kernel would otherwise restart it at our function.  The saved
	 * registers keep the real value, so the call restarts when they
	 * are put back.
	 */
	regs.orig_rax = (unsigned long long)-1;
	h->regs_changed = 1;
	if (ptrace(PTRACE_SETREGS, h->tid, 0, &regs))
		return fail(res, -ESRCH, "pid %d exited during injection",
			    (int)h->pid);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (ptrace(PTRACE_CONT, h->tid, 0, 0))
		err = -ESRCH;
	while (!err) {
		pid_t r = waitpid(h->tid, &status, __WALL | WNOHANG);
		int sig;

		if (r == 0) {
			if (now_ns() - start > CALL_TIMEOUT_NS) {
				/* Stop it to put it back; the call is lost. */
				ptrace(PTRACE_INTERRUPT, h->tid, 0, 0);
				err = wait_stopped(h->tid) ? -ESRCH
							    : -ETIMEDOUT;
				break;
			}
			nap(wait_ns);
			if (wait_ns < 10000000)
				wait_ns *= 2;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			h->attached = 0;
			err = -ESRCH;
			break;
		}
		sig = WSTOPSIG(status);
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			/* Our first interrupt, or a group stop: go on. */
			ptrace(PTRACE_CONT, h->tid, 0, 0);
			continue;
		}
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
		    sig == SIGFPE || sig == SIGTRAP || sig == SIGABRT) {
			struct user_regs_struct now;

			if (ptrace(PTRACE_GETREGS, h->tid, 0, &now)) {
				err = -ESRCH;
				break;
			}
			if (sig == SIGSEGV && now.rip == RETURN_ADDRESS) {
				*ret = now.rax;
				break;
			}
			err = -EFAULT;
			fail(res, err,
			     "the call crashed in pid %d (signal %d at %#llx); "
			     "its registers were restored",
			     (int)h->pid, sig, now.rip);
			break;
		}
		/* The target's own signal: its handler runs, then the call. */
		if (ptrace(PTRACE_CONT, h->tid, 0, sig))
			err = -ESRCH;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (err == -ESRCH)
		return fail(res, err, "pid %d exited during injection",
			    (int)h->pid);
	if (err == -ETIMEDOUT)
		return fail(res, err,
			    "the call in pid %d did not return in %llu s; it "
			    "was abandoned",
			    (int)h->pid, CALL_TIMEOUT_NS / 1000000000ULL);
	return err;
}

/*
 * Stop one of pid's threads where it may call dlopen, trying its threads
 * in turn (the main thread first) until one is, for a few seconds.
 */
static int stop_at_safe_point(struct hijack *h, pid_t pid,
			      const struct safepoint *sp,
			      const struct proc_maps *maps,
			      struct inject_result *res)
{
	uint64_t deadline = now_ns() + SAFE_POINT_WAIT_NS;
	const char *why = "nothing";
	long *tids = xcalloc(MAX_TASKS, sizeof(*tids));
	unsigned attempt = 0;
	int err;

	for (;; attempt++) {
		size_t n = proc_tasks(pid, tids, MAX_TASKS);

		if (!n || !proc_alive(pid)) {
			err = fail(res, -ESRCH, "pid %d exited during injection",
				   (int)pid);
			break;
		}
		err = hijack_attach(h, pid, (pid_t)tids[attempt % n]);
		if (err == -EPERM) {
			char refused[512];

			access_explain(pid, ACCESS_TRACE, refused,
				       sizeof(refused));
			err = fail(res, err, "%s", refused);
			break;
		}
		if (!err) {
			why = safepoint_check(sp, maps, h->tid, h->saved.rip,
					      h->saved.rsp);
			if (!why && !hijack_scratch(h))
				break;
			if (!why)
				why = "a stack without room";
		}
		hijack_release(h); /* nothing changed yet: just let it go */
		if (now_ns() > deadline) {
			err = fail(res, -EAGAIN,
				   "no thread of pid %d stopped at a safe point "
				   "in %llu s (the last was inside %s)",
				   (int)pid,
				   SAFE_POINT_WAIT_NS / 1000000000ULL, why);
			break;
		}
		/* Let it run on out of there; wait longer each round. */
		nap(1000000UL * (1 + attempt / n < 20 ? 1 + attempt / n : 20));
	}
	free(tids);
	return err;
}

/* Find dlopen (and dlerror, if it can be had) in the target. */
static int find_dlopen(pid_t pid, const struct proc_maps *maps,
		       uint64_t *dlopen_at, uint64_t *dlerror_at)
{
	const char *libc = remotesym_library(maps, "libc");
	const char *libdl = remotesym_library(maps, "libdl");

	*dlerror_at = 0;
	/* glibc 2.34 and later: in libc. */
	if (libc && !remotesym_lookup(pid, maps, libc, "dlopen", dlopen_at,
				      NULL)) {
		remotesym_lookup(pid, maps, libc, "dlerror", dlerror_at, NULL);
		return 0;
	}
	/* Before: in libdl, when the program links it (CPython does). */
	if (libdl && !remotesym_lookup(pid, maps, libdl, "dlopen", dlopen_at,
				       NULL)) {
		remotesym_lookup(pid, maps, libdl, "dlerror", dlerror_at, NULL);
		return 0;
	}
	/* Else libc's own entry, which takes the same two arguments. */
	if (libc && !remotesym_lookup(pid, maps, libc, "__libc_dlopen_mode",
				      dlopen_at, NULL))
		return 0;
	return -ENOENT;
}

/* dlerror()'s message in the target, into buf. */
static void remote_dlerror(struct hijack *h, uint64_t dlerror_at, char *buf,
			   size_t size, struct inject_result *res)
{
	uint64_t msg = 0;
	size_t len;

	snprintf(buf, size, "dlerror() not available");
	if (!dlerror_at || remote_call(h, dlerror_at, 0, 0, &msg, res) || !msg)
		return;
	/* It may end near the end of a page: shorter reads then. */
	for (len = size - 1; len >= 16; len /= 2)
		if (!proc_read(h->pid, msg, buf, len)) {
			buf[len] = '\0';
			return;
		}
	snprintf(buf, size, "dlerror() unreadable");
}

/*
 * inject_library(), with library resolved here (resolve) or taken as the
 * target's own path.
 */
static int inject(pid_t pid, const char *library, int resolve,
		  const char *entry, const char *arg, struct inject_result *res)
{
	struct proc_maps maps = {0};
	struct safepoint sp = {0};
	struct hijack h;
	char *path = NULL, *visible = NULL;
	uint64_t dlopen_at, dlerror_at, at, ret = 0;
	int err;

	memset(res, 0, sizeof(*res));
	memset(&h, 0, sizeof(h));
	if (!proc_alive(pid))
		return fail(res, -ESRCH, "no process with pid %d", (int)pid);
	path = resolve ? realpath(library, NULL) : xstrdup(library);
	if (!path) {
		err = fail(res, -ENOENT, "cannot find '%s': %s", library,
			   strerror(errno));
		goto out;
	}
	visible = proc_file_path(pid, path);
	if (resolve && access(visible, R_OK)) {
		err = proc_alive(pid)
			  ? fail(res, -ENOENT,
				 "'%s' is not visible to pid %d (another "
				 "mount namespace?)",
				 path, (int)pid)
			  : fail(res, -ESRCH, "no process with pid %d",
				 (int)pid);
		goto out;
	}
	err = proc_maps_load(&maps, pid);
	if (err) {
		err = err == -EACCES || err == -EPERM
			  ? fail(res, -EPERM, "no permission to read pid %d",
				 (int)pid)
			  : fail(res, -ESRCH, "no process with pid %d",
				 (int)pid);
		goto out;
	}
	if (find_dlopen(pid, &maps, &dlopen_at, &dlerror_at) ||
	    safepoint_init(&sp, pid, &maps)) {
		err = fail(res, -ENOENT,
			   "pid %d has no dynamic loader or dlopen (a "
			   "statically linked program?)",
			   (int)pid);
		goto out;
	}
	err = stop_at_safe_point(&h, pid, &sp, &maps, res);
	if (err)
		goto out;
	res->tid = h.tid;
	at = put_string(&h, path);
	if (!at) {
		err = fail(res, -ESRCH, "pid %d exited during injection",
			   (int)pid);
		goto out;
	}
	err = remote_call(&h, dlopen_at, at, TARGET_RTLD_NOW, &ret, res);
	if (err)
		goto out;
	res->handle = ret;
	if (!ret) {
		char why[256];

		remote_dlerror(&h, dlerror_at, why, sizeof(why), res);
		err = fail(res, -ELIBBAD, "dlopen failed in pid %d: %s",
			   (int)pid, why);
		goto out;
	}
	if (!entry)
		goto out;
	if (proc_maps_load(&maps, pid) ||
	    remotesym_lookup(pid, &maps, path, entry, &at, NULL)) {
		err = fail(res, -ENOENT, "'%s' has no function %s", path,
			   entry);
		goto out;
	}
	err = remote_call(&h, at, arg ? put_string(&h, arg) : 0, 0, &ret, res);
	if (err)
		goto out;
	res->entry_called = 1;
	res->entry_ret = (long)(int)ret;
out:
	hijack_release(&h);
	free(h.xstate);
	free(h.scratch_saved);
	safepoint_release(&sp);
	proc_maps_release(&maps);
	free(visible);
	free(path);
	return err;
}

int inject_library(pid_t pid, const char *library, const char *entry,
		   const char *arg, struct inject_result *res)
{
	return inject(pid, library, 1, entry, arg, res);
}

int inject_library_as_seen(pid_t pid, const char *library, const char *entry,
			   const char *arg, struct inject_result *res)
{
	return inject(pid, library, 0, entry, arg, res);
}

#else

int inject_library_as_seen(pid_t pid, const char *library, const char *entry,
			   const char *arg, struct inject_result *res)
{
	return inject_library(pid, library, entry, arg, res);
}

int inject_library(pid_t pid, const char *library, const char *entry,
		   const char *arg, struct inject_result *res)
{
	memset(res, 0, sizeof(*res));
	snprintf(res->message, sizeof(res->message),
		 "loading a library into a process is only done on x86-64");
	return -ENOSYS;
}

#endif
