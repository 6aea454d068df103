/* SPDX-License-Identifier: MIT */
/* The options record, top and dump share, parsed in one place. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/options.h"
#include "py/pysample.h"

pid_t parse_pid(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v <= 0 || v > INT_MAX) {
		fprintf(stderr, "spyc: invalid pid '%s'\n", arg);
		exit(EXIT_USAGE);
	}
	return (pid_t)v;
}

double parse_positive_arg(const char *opt, const char *arg, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || end == arg || !(v > 0) || v > max) {
		fprintf(stderr, "spyc: invalid %s '%s'\n", opt, arg);
		exit(EXIT_USAGE);
	}
	return v;
}

static size_t parse_max_depth(const char *arg)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *end || end == arg || v < 1 || v > PY_WALK_LIMIT) {
		fprintf(stderr,
			"spyc: invalid --max-depth '%s' (1 to %u frames)\n",
			arg, PY_WALK_LIMIT);
		exit(EXIT_USAGE);
	}
	return (size_t)v;
}

void sample_opts_init(struct sample_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rate = DEFAULT_RATE_HZ;
	o->max_depth = PY_DEFAULT_MAX_DEPTH;
}

int sample_option(struct sample_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'p':
		o->pid = parse_pid(arg);
		return 1;
	case 'r':
		o->rate = parse_positive_arg("--rate", arg, MAX_RATE_HZ);
		return 1;
	case 'i':
		o->idle = 1;
		return 1;
	case 'g':
		o->gil = 1;
		return 1;
	case 'n':
		o->native = 1;
		return 1;
	case OPT_BLOCKING:
		o->blocking |= 1;
		return 1;
	case OPT_NONBLOCKING:
		o->blocking |= 2;
		return 1;
	case OPT_MAX_DEPTH:
		o->max_depth = parse_max_depth(arg);
		return 1;
	case OPT_ASYNC:
		o->async = 1;
		return 1;
	case OPT_GPU:
		o->gpu = 1;
		return 1;
	case OPT_NO_GC:
		o->no_gc = 1;
		return 1;
	case 's':
		o->subprocesses = 1;
		return 1;
	}
	return 0;
}

int sample_opts_want_gc(const struct sample_opts *o)
{
	return !o->no_gc && !o->native && !o->async;
}

/*
 * Each sampled thread is stopped while it is read with --native
 * (registers can only be read so) or --blocking; never by default.
 */
static void stop_or_die(struct sample_opts *o)
{
	if ((o->blocking & 2) && (o->native || (o->blocking & 1))) {
		fprintf(stderr, "spyc: --nonblocking cannot go with %s: %s\n",
			o->native ? "--native" : "--blocking",
			o->native
			    ? "reading a thread's registers means stopping "
			      "it"
			    : "choose one");
		exit(EXIT_USAGE);
	}
	o->stop = o->native || (o->blocking & 1);
}

/*
 * --subprocesses reads every process's Python frames without stopping
 * it: not with --native, --blocking, --async or --gpu.
 */
static void subprocesses_or_die(const struct sample_opts *o)
{
	const char *opt = o->native	    ? "--native"
			  : o->blocking & 1 ? "--blocking"
			  : o->async	    ? "--async"
			  : o->gpu	    ? "--gpu"
					    : NULL;

	if (!o->subprocesses || !opt)
		return;
	fprintf(stderr,
		"spyc: --subprocesses reads Python frames only: it cannot be "
		"used with %s\n",
		opt);
	exit(EXIT_USAGE);
}

void sample_opts_finish(struct sample_opts *o, int argc, char **argv, int first,
			const char *command, unsigned flags)
{
	if (!(flags & SAMPLE_LAUNCH) && (!o->pid || first != argc)) {
		fprintf(stderr, "spyc: %s needs --pid PID and nothing else\n",
			command);
		exit(EXIT_USAGE);
	}
	stop_or_die(o);
	if ((flags & SAMPLE_TASK_STACKS) && o->async && o->native) {
		fprintf(stderr,
			"spyc: --async and --native cannot be used "
			"together: task stacks are Python frames only\n");
		exit(EXIT_USAGE);
	}
	subprocesses_or_die(o);
	if (!(flags & SAMPLE_LAUNCH))
		return;
	o->argv = first < argc ? argv + first : NULL;
	if (!o->pid == !o->argv) {
		fprintf(stderr,
			"spyc: %s needs either --pid PID or -- PROGRAM "
			"[ARGS...]\n",
			command);
		exit(EXIT_USAGE);
	}
}

void usage_exit(int c, const char *usage)
{
	fputs(usage, c == 'h' ? stdout : stderr);
	exit(c == 'h' ? EXIT_OK : EXIT_USAGE);
}

/* More rows than any profile has functions. */
#define MAX_TOP 1000000

size_t parse_top_arg(const char *arg)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *end || end == arg || v < 0 || v > MAX_TOP) {
		fprintf(stderr,
			"spyc: invalid --top '%s' (0 for all, or 1 to "
			"%d)\n",
			arg, MAX_TOP);
		exit(EXIT_USAGE);
	}
	/* 0: every row, as merge --top 0 has it. */
	return v ? (size_t)v : SIZE_MAX;
}

int parse_sort_total(const char *arg)
{
	if (strcmp(arg, "own") && strcmp(arg, "total")) {
		fprintf(stderr, "spyc: invalid --sort '%s' (own or total)\n",
			arg);
		exit(EXIT_USAGE);
	}
	return !strcmp(arg, "total");
}
