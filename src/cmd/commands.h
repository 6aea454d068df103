/* SPDX-License-Identifier: MIT */
/* The subcommands, and what they share: exit codes and attaching to a target.
 */
#ifndef SPYC_COMMANDS_H
#define SPYC_COMMANDS_H

#include <stddef.h>
#include <sys/types.h>

#include "py/pyruntime.h"

#define SPYC_VERSION "0.1.0"

/* Exit codes, documented in --help and spyc(1). */
#define EXIT_OK 0
#define EXIT_DATA_LOST 1
#define EXIT_FAILED 2
#define EXIT_USAGE 64

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);

struct pyasync;

/*
 * --async: check that the target can be read so (3.14+, offsets known)
 * and look for its _asyncio module, into pa.  On failure ends child (a
 * launched program, else 0), prints one line and exits 2.  Returns 1 if
 * the target has not imported asyncio yet, else 0.
 */
int async_or_die(struct pyasync *pa, const struct pyruntime *rt,
		 pid_t child);

/*
 * --async for record and top: what the sampler of a target found by
 * attach_or_die or launch_or_die needs, or die as async_or_die does.
 * all_tasks: every waiting task gets a stack too (with --idle).
 */
struct py_sampler;
void async_sampler_or_die(struct py_sampler *ps, struct pyasync *pa,
			  const struct pyruntime *rt, pid_t child,
			  int all_tasks);

/*
 * Find the interpreter of a running pid; on failure print rt->message
 * as one line and exit 2.  Prints rt->notice, if any, once.
 */
void attach_or_die(struct pyruntime *rt, pid_t pid);

/*
 * For --gil: a free-threaded target has no GIL for a thread to hold.
 * Then print one line saying so, end child (a launched program, or 0)
 * and exit 2; else return.
 */
void gil_option_or_die(const struct pyruntime *rt, pid_t child);

struct strbuf;

/*
 * Start argv as a child (in spyc's process group) and wait until it runs
 * a Python interpreter.  Returns its pid with rt filled in; on failure
 * (exec error, the child exits first, not Python) prints one line and
 * exits 2.  With output NULL the child shares spyc's standard output and
 * error; else both go to the file output names (created or truncated),
 * or when output is empty to spyc-PID.out in the current directory, PID
 * being the child's, whose name is then put in output.  Standard input
 * is always spyc's.
 */
pid_t launch_or_die(struct pyruntime *rt, char **argv, struct strbuf *output);

/*
 * launch_or_die without the wait: returns once argv has been exec'd,
 * Python or not (--subprocesses finds its interpreters as they start).
 */
pid_t launch_program_or_die(char **argv, struct strbuf *output);

#endif
