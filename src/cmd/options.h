/* SPDX-License-Identifier: MIT */
/* The options record, top and dump share: which process, how to read it. */
#ifndef SPYC_OPTIONS_H
#define SPYC_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <sys/types.h>

/* Samples a second, unless --rate says otherwise, and the most allowed. */
#define DEFAULT_RATE_HZ 100.0
#define MAX_RATE_HZ 100000.0

/* Long options without a letter, as getopt returns them. */
enum {
	OPT_BLOCKING = 300,
	OPT_NONBLOCKING,
	OPT_MAX_DEPTH,
	OPT_ASYNC,
	OPT_GPU,
	OPT_GPU_IDLE,
	OPT_NO_GC,
	OPT_COMMAND, /* a command's own options from here on */
};

/*
 * The entries of a getopt_long table for struct sample_opts: every
 * sampling command's, then those of the commands that sample at a rate.
 * --native is 'n' even where -n is not a short option (top).
 */
/* clang-format off */
#define SAMPLE_OPTIONS                                                   \
	{"pid", required_argument, NULL, 'p'},                           \
	    {"native", no_argument, NULL, 'n'},                          \
	    {"blocking", no_argument, NULL, OPT_BLOCKING},               \
	    {"nonblocking", no_argument, NULL, OPT_NONBLOCKING},         \
	    {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},       \
	    {"async", no_argument, NULL, OPT_ASYNC},                     \
	    {"no-gc", no_argument, NULL, OPT_NO_GC},                     \
	    {"subprocesses", no_argument, NULL, 's'}
#define SAMPLE_RATE_OPTIONS                                              \
	{"rate", required_argument, NULL, 'r'},                          \
	    {"idle", no_argument, NULL, 'i'},                            \
	    {"gil", no_argument, NULL, 'g'},                             \
	    {"gpu", no_argument, NULL, OPT_GPU}
/* clang-format on */

struct sample_opts {
	pid_t pid;	  /* --pid, else 0 */
	char **argv;	  /* the program to launch (after --), else NULL */
	double rate;	  /* samples a second */
	size_t max_depth; /* Python frames kept of a stack */
	int idle;	  /* keep threads that are not on a CPU too */
	int gil;	  /* keep only the thread holding the GIL */
	int native;	  /* merge native frames in */
	int async;	  /* asyncio task stacks */
	int stop;	  /* stop each sampled thread while reading it */
	int gpu;	  /* GPU kernels and copies from the agent */
	int subprocesses; /* follow the target's descendants too */
	int blocking;	  /* bit 1: --blocking, 2: --nonblocking */
	int no_gc;	  /* --no-gc: no <GC> frame */
};

/*
 * Whether the sampler puts a "<GC>" frame on the stack of the thread
 * running the cycle collector: unless --no-gc, and not with --native
 * (the collector's own C frames show there) or --async's task stacks.
 */
int sample_opts_want_gc(const struct sample_opts *o);

/* What sample_opts_finish allows. */
enum {
	SAMPLE_LAUNCH = 1,     /* -- PROGRAM instead of --pid */
	SAMPLE_TASK_STACKS = 2 /* --async's task stacks are the stacks */
};

/* The defaults, before the command line. */
void sample_opts_init(struct sample_opts *o);

/*
 * One option getopt_long returned (c, with its argument arg): if it is one
 * of struct sample_opts', take it and return 1; else return 0.  A bad
 * value is a usage error (exit 64) that names it.
 */
int sample_option(struct sample_opts *o, int c, const char *arg);

/*
 * After getopt: check that the options go together and take the target
 * (argv from first on), or print one line and exit 64.  command names
 * the command in messages; flags are SAMPLE_*.
 */
void sample_opts_finish(struct sample_opts *o, int argc, char **argv, int first,
			const char *command, unsigned flags);

/* -h: print usage to standard output, exit 0; else to stderr, exit 64. */
void usage_exit(int c, const char *usage);

/*
 * Parse a pid argument.  Returns the pid, or dies with a usage error
 * (exit 64) naming the bad value.
 */
pid_t parse_pid(const char *arg);

/*
 * Parse the value of option opt (e.g. "--rate"): a number above 0 and at
 * most max.  Returns it, or dies with a usage error (exit 64) naming the
 * bad value.
 */
double parse_positive_arg(const char *opt, const char *arg, double max);

/*
 * Parse a --top argument of report and diff: how many rows, 0 for all
 * (SIZE_MAX).  Dies with a usage error naming a bad value.
 */
size_t parse_top_arg(const char *arg);

/*
 * Parse a --sort argument of report and diff: 1 for "total", 0 for
 * "own".  Dies with a usage error naming any other.
 */
int parse_sort_total(const char *arg);

#endif
