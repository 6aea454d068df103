/* SPDX-License-Identifier: MIT */
/* Values of command-line options that several commands take. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/commands.h"
#include "py/pysample.h"

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

size_t parse_max_depth(const char *arg)
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

char **parse_target(int argc, char **argv, int first, pid_t pid,
		    const char *command)
{
	char **program = first < argc ? argv + first : NULL;

	if (!pid == !program) {
		fprintf(stderr,
			"spyc: %s needs either --pid PID or -- PROGRAM "
			"[ARGS...]\n",
			command);
		exit(EXIT_USAGE);
	}
	return program;
}

int threads_stopped(int native, int blocking)
{
	int nonblocking = blocking & 2;

	blocking &= 1;
	if (nonblocking && (native || blocking)) {
		fprintf(stderr, "spyc: --nonblocking cannot go with %s: %s\n",
			native ? "--native" : "--blocking",
			native ? "reading a thread's registers means stopping "
				 "it"
			       : "choose one");
		exit(EXIT_USAGE);
	}
	return native || blocking;
}

void subprocesses_options_or_die(int native, int blocking, int async, int gpu)
{
	const char *opt = native	 ? "--native"
			  : blocking & 1 ? "--blocking"
			  : async	 ? "--async"
			  : gpu		 ? "--gpu"
					 : NULL;

	if (!opt)
		return;
	fprintf(stderr,
		"spyc: --subprocesses reads Python frames only: it cannot be "
		"used with %s\n",
		opt);
	exit(EXIT_USAGE);
}
