/* SPDX-License-Identifier: MIT */
/* Running a Python script in a target through PEP 768 (sys.remote_exec). */
#include "py/remoteexec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys/proc.h"
#include "py/pyruntime.h"
#include "util.h"

/* 3.14: the first CPython with PEP 768. */
#define PEP768_HEX 0x030E0000UL
/* How often the pending flag is looked at while the thread has not
 * taken the request. */
#define POLL_NS (2 * 1000 * 1000)
/* Bounds on what the target says its script buffer is (512 in 3.14). */
#define SCRIPT_PATH_MIN 2
#define SCRIPT_PATH_MAX 4096

/* Where the request goes: one thread state's fields, as addresses. */
struct request {
	pid_t pid;
	uint64_t pending;  /* int32_t debugger_pending_call */
	uint64_t path;	   /* char debugger_script_path[path_size] */
	uint64_t breaker;  /* uintptr_t eval_breaker */
	uint64_t stop_bit; /* _PY_EVAL_PLEASE_STOP_BIT */
	size_t path_size;
};

static int errno_of(int pyrt)
{
	switch (pyrt) {
	case PYRT_NO_PROCESS:
		return -ESRCH;
	case PYRT_NO_PERMISSION:
		return -EPERM;
	default:
		return -ENOENT;
	}
}

/* Whether the offsets describe fields inside a thread state. */
static int offsets_plausible(const struct py_offsets *off)
{
	long support = off->tstate_remote_debugger_support;

	if (off->interp_threads_main < 0 || off->interp_remote_debug < 0 ||
	    off->tstate_eval_breaker < 0 || support < 0 ||
	    off->debugger_pending_call < 0 || off->debugger_script_path < 0 ||
	    off->debugger_script_path_size < SCRIPT_PATH_MIN ||
	    off->debugger_script_path_size > SCRIPT_PATH_MAX)
		return 0;
	/* One bit, as pycore_ceval.h defines it. */
	if (off->eval_please_stop_bit <= 0 ||
	    (off->eval_please_stop_bit & (off->eval_please_stop_bit - 1)))
		return 0;
	return off->tstate_eval_breaker + 8 <= off->tstate_size &&
	       support + off->debugger_pending_call + 4 <= off->tstate_size &&
	       support + off->debugger_script_path +
		       off->debugger_script_path_size <=
		   off->tstate_size;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL),
			      (long)(ns % 1000000000ULL)};

	nanosleep(&ts, NULL);
}

/*
 * Find the main thread's state and check that the target allows the
 * request.  Returns 0 with rq filled, or a negative errno with msg set.
 */
static int find_request(struct request *rq, pid_t pid, size_t script_len,
			char *msg, size_t size)
{
	struct pyruntime *rt = xmalloc(sizeof(*rt));
	const struct py_offsets *off;
	uint64_t interp = 0, tstate = 0, support;
	int32_t enabled = 0;
	int err;

	err = pyruntime_find(rt, pid);
	if (err != PYRT_OK && err != PYRT_UNSUPPORTED) {
		snprintf(msg, size, "%s", rt->message);
		err = errno_of(err);
		goto out;
	}
	if (err == PYRT_UNSUPPORTED || rt->hexversion < PEP768_HEX) {
		snprintf(msg, size,
			 "Python %s in pid %d has no PEP 768 (3.14 and later "
			 "have)",
			 rt->version, (int)pid);
		err = -ENOTSUP;
		goto out;
	}
	off = rt->off;
	if (!offsets_plausible(off)) {
		snprintf(msg, size,
			 "Python %s in pid %d: spyc does not know where its "
			 "PEP 768 fields are",
			 rt->version, (int)pid);
		err = -ENOTSUP;
		goto out;
	}
	err = pyruntime_interp_head(rt, &interp);
	if (!err && !interp)
		err = -ENOENT;
	if (!err)
		err =
		    proc_read(pid, interp + (uint64_t)off->interp_remote_debug,
			      &enabled, sizeof(enabled));
	if (err) {
		snprintf(msg, size, "cannot read the interpreter of pid %d: %s",
			 (int)pid, strerror(-err));
		goto out;
	}
	/* config.remote_debug: 1 unless disabled (initconfig.h). */
	if (enabled != 1) {
		snprintf(
		    msg, size,
		    "remote execution (PEP 768) is disabled in pid %d "
		    "(-X disable-remote-debug, PYTHON_DISABLE_REMOTE_DEBUG, "
		    "or a build --without-remote-debug)",
		    (int)pid);
		err = -ENOTSUP;
		goto out;
	}
	err = proc_read(pid, interp + (uint64_t)off->interp_threads_main,
			&tstate, sizeof(tstate));
	if (!err && !tstate)
		err = -ENOENT;
	if (err) {
		snprintf(msg, size, "cannot find the main thread of pid %d: %s",
			 (int)pid, strerror(-err));
		goto out;
	}
	if (script_len + 1 > (size_t)off->debugger_script_path_size) {
		snprintf(msg, size,
			 "the script's path is longer than pid %d takes (%ld "
			 "bytes)",
			 (int)pid, off->debugger_script_path_size - 1);
		err = -ENAMETOOLONG;
		goto out;
	}
	support = tstate + (uint64_t)off->tstate_remote_debugger_support;
	rq->pid = pid;
	rq->pending = support + (uint64_t)off->debugger_pending_call;
	rq->path = support + (uint64_t)off->debugger_script_path;
	rq->breaker = tstate + (uint64_t)off->tstate_eval_breaker;
	rq->stop_bit = (uint64_t)off->eval_please_stop_bit;
	rq->path_size = (size_t)off->debugger_script_path_size;
	err = 0;
out:
	free(rt);
	return err;
}

/*
 * The thread did not take the request in time: take it back.  The thread
 * takes a request by clearing the flag and then copying the path, and
 * runs nothing for an empty path (_PyRunRemoteDebugger, ceval_gil.c); so
 * the path is emptied first, and a flag still set after that means the
 * script cannot run whoever clears the flag.  A flag already clear means
 * the thread took it meanwhile, with the path whole or empty.
 * Returns -ETIMEDOUT or -EINPROGRESS, as remote_exec_script().
 */
static int withdraw(const struct request *rq)
{
	char nul = '\0';
	int32_t pending = 0, zero = 0;

	if (proc_write(rq->pid, rq->path, &nul, 1) ||
	    proc_read(rq->pid, rq->pending, &pending, sizeof(pending)))
		return -EINPROGRESS;
	if (pending != 1)
		return -EINPROGRESS;
	if (proc_write(rq->pid, rq->pending, &zero, sizeof(zero)))
		return -EINPROGRESS;
	return -ETIMEDOUT;
}

int remote_exec_script(pid_t pid, const char *script, int timeout_ms, char *msg,
		       size_t size)
{
	struct request rq;
	size_t len = strlen(script);
	int32_t pending = 0, one = 1;
	uint64_t breaker = 0, deadline;
	int err;

	err = find_request(&rq, pid, len, msg, size);
	if (err)
		return err;
	err = proc_read(pid, rq.pending, &pending, sizeof(pending));
	if (!err && pending) {
		snprintf(
		    msg, size,
		    "another remote debugger's script is pending in pid %d",
		    (int)pid);
		return -EBUSY;
	}
	/* The path first: the thread reads it only once the flag is set. */
	if (!err)
		err = proc_write(pid, rq.path, script, len + 1);
	if (!err)
		err = proc_write(pid, rq.pending, &one, sizeof(one));
	if (err) {
		snprintf(msg, size, "cannot ask pid %d to run a script: %s",
			 (int)pid, strerror(-err));
		return err;
	}
	/*
	 * Read, OR in the bit, write back, as sys.remote_exec() itself does:
	 * not atomic.  A bit the target sets or clears in eval_breaker
	 * between the read and the write (a GIL drop request, a signal, a
	 * GC) is undone; the target sets such bits again while their cause
	 * lasts, as CPython accepts for its own debugger.
	 */
	err = proc_read(pid, rq.breaker, &breaker, sizeof(breaker));
	if (!err) {
		breaker |= rq.stop_bit;
		err = proc_write(pid, rq.breaker, &breaker, sizeof(breaker));
	}
	if (err) {
		snprintf(msg, size, "cannot wake pid %d's main thread: %s",
			 (int)pid, strerror(-err));
		/* Never taken then, unless the thread looked by itself. */
		if (err != -ESRCH && withdraw(&rq) == -EINPROGRESS)
			return -EINPROGRESS;
		return err;
	}
	deadline =
	    now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ULL;
	for (;;) {
		err = proc_read(pid, rq.pending, &pending, sizeof(pending));
		if (err == -ESRCH) {
			snprintf(msg, size, "pid %d exited", (int)pid);
			return err;
		}
		if (!err && !pending)
			return 0;
		if (now_ns() >= deadline)
			break;
		sleep_ns(POLL_NS);
	}
	err = withdraw(&rq);
	if (err == -EINPROGRESS)
		snprintf(msg, size,
			 "pid %d's main thread took the script as it was "
			 "withdrawn after %d ms",
			 (int)pid, timeout_ms);
	else
		snprintf(
		    msg, size,
		    "pid %d's main thread reached no eval breaker in %d ms "
		    "(it is blocked in C code or a system call)",
		    (int)pid, timeout_ms);
	return err;
}
