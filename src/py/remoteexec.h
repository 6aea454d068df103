/* SPDX-License-Identifier: MIT */
/*
 * Running a Python script in a target through the interpreter's own
 * remote-execution hook, PEP 768 (what sys.remote_exec() does, CPython
 * 3.14+): the script's path is written into a thread's state and the
 * thread runs it, with the GIL held, at its next eval-breaker check.
 */
#ifndef SPYC_REMOTEEXEC_H
#define SPYC_REMOTEEXEC_H

#include <sys/types.h>

/*
 * Ask pid's main thread to run the Python file script (a path the target
 * can open; shorter than the target's debugger_script_path, 512 bytes in
 * 3.14) and wait up to timeout_ms for the thread to take the request.
 * The target raises the audit event "cpython.remote_debugger_script" and runs
 * the file with exec() in a fresh namespace; anything the script raises
 * is printed by the target to its stderr as unraisable, so a script must
 * catch everything itself.  These are the only bytes spyc ever writes
 * into a running target's memory outside src/sys/inject.c.
 *
 * Returns 0 once the thread has taken the request (it is running the
 * script, or has run it), or a negative errno with msg set to one line:
 *   -ENOTSUP    the target has no PEP 768: a Python before 3.14, or one
 *               where it is disabled (-X disable-remote-debug,
 *               PYTHON_DISABLE_REMOTE_DEBUG, a build --without-remote-
 *               debug); nothing was written
 *   -ETIMEDOUT  the thread did not take it in time (it is blocked in C
 *               code, or in a system call); the request was withdrawn,
 *               and the script will not run
 *   -EINPROGRESS  the thread took it in the instant it was withdrawn:
 *               it may run the script (once), or may not
 *   -ENAMETOOLONG  script does not fit in the thread's buffer
 *   -EBUSY      another debugger's script is pending in that thread
 *   -ESRCH, -EPERM, -ENOENT (no Python or no main thread found),
 *   -EFAULT (a read or write of the target failed)
 * On -ETIMEDOUT and -EINPROGRESS the thread's please-stop bit may stay
 * set: it makes the thread look at its eval breaker once more, which
 * does nothing when no one asked for anything.
 */
int remote_exec_script(pid_t pid, const char *script, int timeout_ms, char *msg,
		       size_t size);

#endif
