/* SPDX-License-Identifier: MIT */
/* The subcommands, and what they share: exit codes and attaching to a target.
 */
#ifndef SPYC_COMMANDS_H
#define SPYC_COMMANDS_H

#include <sys/types.h>

#include "pyruntime.h"

#define SPYC_VERSION "0.1.0"

/* Exit codes, documented in --help and spyc(1). */
#define EXIT_OK 0
#define EXIT_DATA_LOST 1
#define EXIT_FAILED 2
#define EXIT_USAGE 64

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);

/*
 * Parse a pid argument.  Returns the pid, or dies with a usage error
 * (exit 64) naming the bad value.
 */
pid_t parse_pid(const char *arg);

/*
 * After getopt: the program to launch (argv from optind on), or NULL
 * with --pid.  Exactly one of the two must be given, or a usage error
 * (exit 64) names command.
 */
char **parse_target(int argc, char **argv, int first, pid_t pid,
		    const char *command);

/*
 * Parse the value of option opt (e.g. "--rate"): a number above 0 and at
 * most max.  Returns it, or dies with a usage error (exit 64) naming the
 * bad value.
 */
double parse_positive_arg(const char *opt, const char *arg, double max);

/* The long options --blocking and --nonblocking, as getopt returns them. */
#define OPT_BLOCKING 300
#define OPT_NONBLOCKING 301

/*
 * Whether each sampled thread is stopped while it is read: with --native
 * (registers can only be read so) or --blocking; never by default.
 * blocking has bit 1 for --blocking, 2 for --nonblocking; --nonblocking
 * with --native or --blocking is a usage error (exit 64).
 */
int threads_stopped(int native, int blocking);

/*
 * Find the interpreter of a running pid; on failure print rt->message
 * as one line and exit 2.  Prints rt->notice, if any, once.
 */
void attach_or_die(struct pyruntime *rt, pid_t pid);

/*
 * Start argv as a child (in spyc's process group) and wait until it runs
 * a Python interpreter.  Returns its pid with rt filled in; on failure
 * (exec error, the child exits first, not Python) prints one line and
 * exits 2.
 */
pid_t launch_or_die(struct pyruntime *rt, char **argv);

#endif
