/* SPDX-License-Identifier: MIT */
/* spyc dump: print every Python thread's current stack, once. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "proc.h"
#include "pyframe.h"
#include "util.h"

/* A running target can tear a read; try this many times for a clean one. */
#define DUMP_ATTEMPTS 20

static const char usage_text[] =
    "usage: spyc dump --pid PID [--json]\n"
    "\n"
    "Print every Python thread of PID with its stack, innermost frame\n"
    "first, as 'function (file:line)'.\n"
    "\n"
    "  -p, --pid PID   the process to inspect\n"
    "  -j, --json      print JSON instead of text\n"
    "  -h, --help      this help\n"
    "\n"
    "exit codes: 0 ok, 1 the stacks could not be read cleanly,\n"
    "2 failed (no such process, not Python, no permission, unsupported),\n"
    "64 usage error\n";

static int print_json(const struct pyruntime *rt, const struct py_sample *s)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *threads;
	char *text = NULL;
	size_t i, j;
	int ret = -1;

	if (!root)
		goto out;
	if (!cJSON_AddNumberToObject(root, "pid", rt->pid) ||
	    !cJSON_AddStringToObject(root, "python_version", rt->version) ||
	    !(threads = cJSON_AddArrayToObject(root, "threads")))
		goto out;
	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *t = &s->threads[i];
		cJSON *th = cJSON_CreateObject(), *frames;

		if (!th || !cJSON_AddItemToArray(threads, th))
			goto out;
		/* A pthread_t fits a double exactly only below 2^53. */
		if (!cJSON_AddNumberToObject(th, "thread_id", (double)t->ident))
			goto out;
		if (t->tid ? !cJSON_AddNumberToObject(th, "native_id",
						      (double)t->tid)
			   : !cJSON_AddNullToObject(th, "native_id"))
			goto out;
		if (!cJSON_AddStringToObject(th, "state",
					     thread_state_name(t->state)) ||
		    !cJSON_AddBoolToObject(th, "holds_gil", t->holds_gil))
			goto out;
		frames = cJSON_AddArrayToObject(th, "frames");
		if (!frames)
			goto out;
		for (j = 0; j < t->depth; j++) {
			const struct py_frame *f = &s->frames[t->first + j];
			cJSON *fr = cJSON_CreateObject();

			if (!fr || !cJSON_AddItemToArray(frames, fr) ||
			    !cJSON_AddStringToObject(fr, "name",
						     f->code->name) ||
			    !cJSON_AddStringToObject(fr, "file",
						     f->code->filename) ||
			    !cJSON_AddNumberToObject(fr, "line", f->line))
				goto out;
		}
	}
	text = cJSON_Print(root);
	if (!text)
		goto out;
	puts(text);
	ret = 0;
out:
	if (ret)
		error("out of memory building JSON");
	free(text);
	cJSON_Delete(root);
	return ret;
}

static void print_text(const struct pyruntime *rt, const struct py_sample *s)
{
	char cmdline[1024];
	size_t i, j;

	proc_cmdline(rt->pid, cmdline, sizeof(cmdline));
	printf("Process %d: %s\n", (int)rt->pid, cmdline);
	printf("Python %s (%s)\n", rt->version, rt->binary);
	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *t = &s->threads[i];

		printf("\nThread 0x%llx", (unsigned long long)t->ident);
		if (t->tid)
			printf(" (tid %ld)", t->tid);
		printf(": %s%s\n", thread_state_name(t->state),
		       t->holds_gil ? ", holds the GIL" : "");
		if (!t->depth)
			printf("    (no Python frames)\n");
		for (j = 0; j < t->depth; j++) {
			const struct py_frame *f = &s->frames[t->first + j];

			printf("    %s (%s:%d)\n", f->code->name,
			       f->code->filename, f->line);
		}
	}
}

int cmd_dump(int argc, char **argv)
{
	static const struct option options[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct pyruntime rt;
	struct py_sampler ps;
	struct py_sample sample = {0};
	enum drop_reason why = DROP_NONE;
	pid_t pid = 0;
	int json = 0, c, attempt, ret = EXIT_OK;

	while ((c = getopt_long(argc, argv, "p:jh", options, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = parse_pid(optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_OK;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (!pid || optind != argc) {
		fprintf(stderr,
			"spyc: dump needs --pid PID and nothing else\n");
		return EXIT_USAGE;
	}
	attach_or_die(&rt, pid);
	py_sampler_init(&ps, &rt);
	ps.want_state = 1;
	ps.want_gil = 1;
	for (attempt = 0; attempt < DUMP_ATTEMPTS; attempt++) {
		struct timespec ts = {0, 2000000};

		why = py_sampler_sample(&ps, &sample);
		if (why == DROP_NONE || why == DROP_GONE)
			break;
		nanosleep(&ts, NULL);
	}
	if (why == DROP_GONE) {
		fprintf(stderr, "spyc: pid %d exited\n", (int)pid);
		ret = EXIT_FAILED;
	} else if (why != DROP_NONE) {
		fprintf(stderr,
			"spyc: could not read a consistent stack from pid %d "
			"in %d attempts (%s)\n",
			(int)pid, DUMP_ATTEMPTS, drop_reason_name(why));
		ret = EXIT_DATA_LOST;
	} else if (json) {
		if (print_json(&rt, &sample))
			ret = EXIT_FAILED;
	} else {
		print_text(&rt, &sample);
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "spyc: cannot write to standard output\n");
		ret = EXIT_FAILED;
	}
	py_sample_release(&sample);
	py_sampler_release(&ps);
	return ret;
}
