/* SPDX-License-Identifier: MIT */
/* spyc dump: print every Python thread's current stack, once. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "native.h"
#include "proc.h"
#include "pyframe.h"
#include "util.h"

/* A running target can tear a read; try this many times for a clean one. */
#define DUMP_ATTEMPTS 20

static const char usage_text[] =
    "usage: spyc dump --pid PID [--json] [--native] [--blocking]\n"
    "\n"
    "Print every Python thread of PID, whether it is running, idle or\n"
    "waiting for the GIL and which holds the GIL, with its stack,\n"
    "innermost frame first, as 'function (file:line)'.\n"
    "\n"
    "  -p, --pid PID   the process to inspect\n"
    "  -j, --json      print JSON instead of text\n"
    "  -n, --native    show native frames too, merged with the Python ones\n"
    "                  (stops each thread for as long as it takes to read\n"
    "                  its registers and stack)\n"
    "      --blocking  stop each thread while its Python frames are read\n"
    "      --nonblocking  never stop the target (the default without\n"
    "                  --native)\n"
    "  -h, --help      this help\n"
    "\n"
    "exit codes: 0 ok, 1 the stacks could not be read cleanly,\n"
    "2 failed (no such process, not Python, no permission, unsupported),\n"
    "64 usage error\n";

/* What dump prints for one thread: its frames, innermost first. */
struct dump_thread {
	const struct py_thread *t;
	struct merged_frame *frames;
	size_t nr;
	int merged; /* 0 if native frames did not line up with Python's */
};

static int add_frame_json(cJSON *frames, const struct merged_frame *m)
{
	cJSON *fr = cJSON_CreateObject();

	if (!fr || !cJSON_AddItemToArray(frames, fr))
		return -1;
	if (m->py)
		return !cJSON_AddStringToObject(fr, "name",
						m->py->code->name) ||
			       !cJSON_AddStringToObject(
				   fr, "file", m->py->code->filename) ||
			       !cJSON_AddNumberToObject(fr, "line", m->py->line)
			   ? -1
			   : 0;
	if (!cJSON_AddStringToObject(fr, "name", m->native->name) ||
	    !cJSON_AddBoolToObject(fr, "native", 1))
		return -1;
	if (m->native->file &&
	    (!cJSON_AddStringToObject(fr, "file", m->native->file) ||
	     !cJSON_AddNumberToObject(fr, "line", m->native->line)))
		return -1;
	return 0;
}

static int print_json(const struct pyruntime *rt, const struct dump_thread *dt,
		      size_t n, int native)
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
	for (i = 0; i < n; i++) {
		const struct py_thread *t = dt[i].t;
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
		if (t->name[0] ? !cJSON_AddStringToObject(th, "name", t->name)
			       : !cJSON_AddNullToObject(th, "name"))
			goto out;
		if (!cJSON_AddStringToObject(th, "state",
					     thread_state_name(t->state)) ||
		    !cJSON_AddBoolToObject(th, "holds_gil", t->holds_gil))
			goto out;
		if (native &&
		    !cJSON_AddBoolToObject(th, "merged", dt[i].merged))
			goto out;
		frames = cJSON_AddArrayToObject(th, "frames");
		if (!frames)
			goto out;
		for (j = 0; j < dt[i].nr; j++)
			if (add_frame_json(frames, &dt[i].frames[j]))
				goto out;
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

static void print_text(const struct pyruntime *rt, const struct dump_thread *dt,
		       size_t n, int native)
{
	char cmdline[1024];
	size_t i, j;

	proc_cmdline(rt->pid, cmdline, sizeof(cmdline));
	printf("Process %d: %s\n", (int)rt->pid, cmdline);
	printf("Python %s (%s)\n", rt->version, rt->binary);
	for (i = 0; i < n; i++) {
		const struct py_thread *t = dt[i].t;

		printf("\nThread 0x%llx", (unsigned long long)t->ident);
		if (t->tid)
			printf(" (tid %ld)", t->tid);
		if (t->name[0])
			printf(" \"%s\"", t->name);
		printf(": %s%s%s\n", thread_state_name(t->state),
		       t->holds_gil ? ", holds the GIL" : "",
		       native && !dt[i].merged ? ", native frames unmerged"
					       : "");
		if (!dt[i].nr)
			printf("    (no Python frames)\n");
		for (j = 0; j < dt[i].nr; j++) {
			const struct merged_frame *m = &dt[i].frames[j];

			if (m->py)
				printf("    %s (%s:%d)\n", m->py->code->name,
				       m->py->code->filename, m->py->line);
			else if (m->native->file)
				printf("    %s (%s:%d) [native]\n",
				       m->native->name, m->native->file,
				       m->native->line);
			else
				printf("    %s [native]\n", m->native->name);
		}
	}
}

/* Each thread's frames, innermost first: merged with native ones if nu. */
static void thread_frames(struct dump_thread *dt, const struct py_sample *s,
			  struct native_unwinder *nu)
{
	size_t i, j, max = PY_MAX_DEPTH + NATIVE_MAX_DEPTH;
	struct merged_frame *root_first = xmalloc(max * sizeof(*root_first));

	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *t = &s->threads[i];
		int unmerged;
		size_t n =
		    native_thread_frames(nu, s, t, root_first, max, &unmerged);

		dt[i].t = t;
		dt[i].merged = !unmerged;
		dt[i].nr = n;
		dt[i].frames = xcalloc(n + 1, sizeof(*dt[i].frames));
		for (j = 0; j < n; j++)
			dt[i].frames[j] = root_first[n - 1 - j];
	}
	free(root_first);
}

static enum drop_reason sample_clean(struct py_sampler *ps,
				     struct py_sample *sample)
{
	enum drop_reason why = DROP_NONE;
	int attempt;

	for (attempt = 0; attempt < DUMP_ATTEMPTS; attempt++) {
		struct timespec ts = {0, 2000000};

		why = py_sampler_sample(ps, sample);
		if (why == DROP_NONE || why == DROP_GONE)
			break;
		nanosleep(&ts, NULL);
	}
	return why;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option options[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"json", no_argument, NULL, 'j'},
	    {"native", no_argument, NULL, 'n'},
	    {"blocking", no_argument, NULL, OPT_BLOCKING},
	    {"nonblocking", no_argument, NULL, OPT_NONBLOCKING},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct pyruntime rt;
	struct py_sampler ps;
	struct py_sample sample = {0};
	struct native_unwinder nu;
	struct dump_thread *dt = NULL;
	enum drop_reason why;
	pid_t pid = 0;
	int json = 0, native = 0, stop, c;
	int blocking = 0; /* 1: --blocking, 2: --nonblocking */
	int ret = EXIT_OK;
	size_t i;

	while ((c = getopt_long(argc, argv, "p:jnh", options, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = parse_pid(optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'n':
			native = 1;
			break;
		case OPT_BLOCKING:
		case OPT_NONBLOCKING:
			blocking |= c == OPT_BLOCKING ? 1 : 2;
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
	stop = threads_stopped(native, blocking);
	attach_or_die(&rt, pid);
	if (native && native_init(&nu, &rt))
		return EXIT_FAILED;
	if (stop && !native)
		native_init_stopper(&nu, &rt);
	py_sampler_init(&ps, &rt);
	ps.want_state = 1;
	ps.want_gil = 1;
	ps.want_names = 1;
	why = sample_clean(&ps, &sample);
	if (stop && why == DROP_NONE) {
		/*
		 * Stop the threads, then read their Python frames again so
		 * both views are of the same instant.
		 */
		size_t n = sample.nr_threads;
		long *tids = xcalloc(n + 1, sizeof(*tids));
		struct py_thread *before = xcalloc(n + 1, sizeof(*before));

		for (i = 0; i < n; i++)
			tids[i] = sample.threads[i].tid;
		memcpy(before, sample.threads, n * sizeof(*before));
		native_stop(&nu, tids, n);
		/* Stopped threads all look idle: keep what they were doing. */
		ps.want_state = 0;
		ps.want_gil = 0;
		why = sample_clean(&ps, &sample);
		/* Everything is copied: let them go before unwinding. */
		native_resume_all(&nu);
		py_sample_keep_states(&sample, before, n);
		free(before);
		free(tids);
	}
	if (why == DROP_NONE) {
		dt = xcalloc(sample.nr_threads + 1, sizeof(*dt));
		thread_frames(dt, &sample, native ? &nu : NULL);
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
		if (print_json(&rt, dt, sample.nr_threads, native))
			ret = EXIT_FAILED;
	} else {
		print_text(&rt, dt, sample.nr_threads, native);
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "spyc: cannot write to standard output\n");
		ret = EXIT_FAILED;
	}
	for (i = 0; dt && i < sample.nr_threads; i++)
		free(dt[i].frames);
	free(dt);
	py_sample_release(&sample);
	py_sampler_release(&ps);
	if (stop)
		native_release(&nu);
	return ret;
}
