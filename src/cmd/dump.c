/* SPDX-License-Identifier: MIT */
/* spyc dump: print every Python thread's current stack, once. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys/children.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "sys/native.h"
#include "sys/proc.h"
#include "py/pyasync.h"
#include "py/pysample.h"
#include "cmd/sampleloop.h"
#include "util.h"

/* A running target can tear a read; try this many times for a clean one. */
#define DUMP_ATTEMPTS 20

static const char usage_text[] =
    "usage: spyc dump --pid PID [--json] [--native] [--blocking]\n"
    "                 [--max-depth N] [--async] [--no-gc] [--subprocesses]\n"
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
    "      --max-depth N  Python frames shown per thread (default 4096);\n"
    "                  a deeper stack ends with '[K frames not read]'\n"
    "      --async     also each thread's asyncio tasks (CPython 3.14+):\n"
    "                  name, the coroutines each awaits, innermost first,\n"
    "                  and the tasks awaiting it\n"
    "      --no-gc     no '<GC>' frame on the thread running the cycle\n"
    "                  collector\n"
    "  -s, --subprocesses  also every descendant of PID that runs Python,\n"
    "                  one block each (JSON: {\"processes\": [...],\n"
    "                  \"not_python\": [...]}); Python frames only\n"
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
	if (m->py && m->py->code->placeholder)
		return cJSON_AddStringToObject(fr, "name", m->py->code->name)
			   ? 0
			   : -1;
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

/* frames[0..n-1] of the sample as a JSON array named "frames" of obj. */
static int add_py_frames_json(cJSON *obj, const struct py_frame *frames,
			      size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, "frames");
	size_t i;

	if (!arr)
		return -1;
	for (i = 0; i < n; i++) {
		struct merged_frame m = {&frames[i], NULL};

		if (add_frame_json(arr, &m))
			return -1;
	}
	return 0;
}

/* The tasks of thread (-1: of threads that exited) as array "tasks". */
static int add_tasks_json(cJSON *obj, const char *key,
			  const struct py_sample *s, long thread)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, key);
	size_t i, j;

	if (!arr)
		return -1;
	for (i = 0; i < s->nr_tasks; i++) {
		const struct py_task *task = &s->tasks[i];
		cJSON *tj, *by;

		if (task->thread != thread)
			continue;
		tj = cJSON_CreateObject();
		if (!tj || !cJSON_AddItemToArray(arr, tj) ||
		    !cJSON_AddNumberToObject(tj, "id", (double)task->addr) ||
		    !cJSON_AddStringToObject(tj, "name", task->name) ||
		    !cJSON_AddStringToObject(
			tj, "state", task->running ? "running" : "waiting") ||
		    !(by = cJSON_AddArrayToObject(tj, "awaited_by")))
			return -1;
		for (j = 0; j < task->nr_awaiters; j++) {
			const struct py_task *a =
			    &s->tasks[s->awaiters[task->awaiters_first + j]];
			cJSON *aj = cJSON_CreateObject();

			if (!aj || !cJSON_AddItemToArray(by, aj) ||
			    !cJSON_AddNumberToObject(aj, "id",
						     (double)a->addr) ||
			    !cJSON_AddStringToObject(aj, "name", a->name))
				return -1;
		}
		if (add_py_frames_json(tj, s->frames + task->first,
				       task->depth))
			return -1;
	}
	return 0;
}

/* The JSON object of one process's dump; NULL when out of memory. */
static cJSON *process_json(const struct pyruntime *rt,
			   const struct tidmap *tm,
			   const struct dump_thread *dt, size_t n, int native,
			   const struct py_sample *s, const struct pyasync *pa)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *threads;
	size_t i, j;
	int ret = -1;

	if (!root)
		goto out;
	if (!cJSON_AddNumberToObject(root, "pid", rt->pid) ||
	    (tm->nested &&
	     !cJSON_AddNumberToObject(root, "pid_in_namespace",
				      tm->inner_pid)) ||
	    !cJSON_AddStringToObject(root, "python_version", rt->version) ||
	    !cJSON_AddBoolToObject(root, "free_threaded", rt->free_threaded) ||
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
		if (t->inner_tid &&
		    !cJSON_AddNumberToObject(th, "native_id_in_namespace",
					     (double)t->inner_tid))
			goto out;
		if (t->name[0] ? !cJSON_AddStringToObject(th, "name", t->name)
			       : !cJSON_AddNullToObject(th, "name"))
			goto out;
		if (!cJSON_AddNumberToObject(th, "frames_not_read",
					     (double)t->omitted))
			goto out;
		if (!cJSON_AddStringToObject(th, "state",
					     thread_state_name(t->state)))
			goto out;
		/* No GIL to hold in a free-threaded build: not false, none. */
		if (rt->free_threaded
			? !cJSON_AddNullToObject(th, "holds_gil")
			: !cJSON_AddBoolToObject(th, "holds_gil", t->holds_gil))
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
		if (pa && add_tasks_json(th, "tasks", s, (long)i))
			goto out;
	}
	if (pa && (!cJSON_AddBoolToObject(root, "asyncio_found", pa->found) ||
		   add_tasks_json(root, "tasks_of_exited_threads", s, -1)))
		goto out;
	ret = 0;
out:
	if (ret) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* Print doc (NULL: out of memory) and free it; 0 or -1. */
static int print_json(cJSON *doc)
{
	char *text = doc ? cJSON_Print(doc) : NULL;

	cJSON_Delete(doc);
	if (!text) {
		error("out of memory building JSON");
		return -1;
	}
	puts(text);
	free(text);
	return 0;
}

/* The tasks of thread (-1: of threads that exited), each with its chain. */
static void print_tasks(const struct py_sample *s, long thread)
{
	size_t i, j;

	for (i = 0; i < s->nr_tasks; i++) {
		const struct py_task *task = &s->tasks[i];

		if (task->thread != thread)
			continue;
		printf("\n  Task \"%s\" (0x%llx): %s", task->name,
		       (unsigned long long)task->addr,
		       task->running ? "running" : "waiting");
		for (j = 0; j < task->nr_awaiters; j++)
			printf("%s\"%s\"", j ? ", " : ", awaited by ",
			       s->tasks[s->awaiters[task->awaiters_first + j]]
				   .name);
		printf("\n");
		for (j = 0; j < task->depth; j++) {
			const struct py_frame *f = &s->frames[task->first + j];

			printf("      %s (%s:%d)\n", f->code->name,
			       f->code->filename, f->line);
		}
	}
}

static void print_text(const struct pyruntime *rt, const struct tidmap *tm,
		       const struct dump_thread *dt, size_t n, int native,
		       const struct py_sample *s, const struct pyasync *pa)
{
	char cmdline[1024];
	size_t i, j;

	proc_cmdline(rt->pid, cmdline, sizeof(cmdline));
	if (tm->nested)
		printf("Process %d (pid %d in its namespace): %s\n",
		       (int)rt->pid, (int)tm->inner_pid, cmdline);
	else
		printf("Process %d: %s\n", (int)rt->pid, cmdline);
	printf("Python %s%s (%s)\n", rt->version,
	       rt->free_threaded ? " free-threaded, no GIL" : "", rt->binary);
	for (i = 0; i < n; i++) {
		const struct py_thread *t = dt[i].t;

		printf("\nThread 0x%llx", (unsigned long long)t->ident);
		if (t->inner_tid)
			printf(" (tid %ld, %ld in its namespace)", t->tid,
			       t->inner_tid);
		else if (t->tid)
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

			if (m->py && m->py->code->placeholder)
				printf("    %s\n", m->py->code->name);
			else if (m->py)
				printf("    %s (%s:%d)\n", m->py->code->name,
				       m->py->code->filename, m->py->line);
			else if (m->native->file)
				printf("    %s (%s:%d) [native]\n",
				       m->native->name, m->native->file,
				       m->native->line);
			else
				printf("    %s [native]\n", m->native->name);
		}
		if (pa)
			print_tasks(s, (long)i);
	}
	if (!pa)
		return;
	for (i = 0; i < s->nr_tasks && s->tasks[i].thread >= 0; i++)
		;
	if (i < s->nr_tasks) {
		printf("\nTasks of threads that have exited:\n");
		print_tasks(s, -1);
	}
	if (!s->nr_tasks)
		printf("\nNo asyncio tasks%s\n",
		       pa->found ? "" : ": the target has not imported asyncio");
}

/* Each thread's frames, innermost first: merged with native ones if nu. */
static void thread_frames(struct dump_thread *dt, const struct py_sample *s,
			  struct native_unwinder *nu)
{
	size_t i, j, max = 0;
	struct merged_frame *root_first;

	for (i = 0; i < s->nr_threads; i++)
		if (s->threads[i].depth > max)
			max = s->threads[i].depth;
	max += NATIVE_MAX_DEPTH;
	root_first = xmalloc(max * sizeof(*root_first));
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
		/* A live Python has a thread: none found is a torn read. */
		if ((why == DROP_NONE && sample->nr_threads) ||
		    why == DROP_GONE)
			break;
		nanosleep(&ts, NULL);
	}
	return why;
}

struct dump_opts {
	struct sample_opts s; /* the target, and how to read it */
	int json;
};

/*
 * Dump the process rt describes: print its text block, or add its JSON
 * object to processes (NULL: print it alone).  Returns an exit code.
 */
static int dump_process(const struct dump_opts *o, const struct pyruntime *rt,
			cJSON *processes)
{
	struct py_sampler ps;
	struct py_sample sample = {0};
	struct native_unwinder nu;
	struct dump_thread *dt = NULL;
	struct pyasync pa;
	enum drop_reason why;
	pid_t pid = rt->pid;
	int ret = EXIT_OK;
	size_t i;

	if (o->s.async)
		async_or_die(&pa, rt, 0);
	if (o->s.native && native_init(&nu, rt))
		return EXIT_FAILED;
	if (o->s.stop && !o->s.native && native_init_stopper(&nu, rt))
		return EXIT_FAILED;
	py_sampler_init(&ps, rt);
	ps.want_state = 1;
	ps.want_gil = 1;
	ps.want_gc = sample_opts_want_gc(&o->s);
	ps.want_names = 1;
	ps.max_depth = o->s.max_depth;
	ps.async = o->s.async ? &pa : NULL;
	/* A stack torn now is read again once its thread is stopped. */
	ps.stop_reads = o->s.stop ? STOP_READS_ALL : STOP_READS_NONE;
	why = sample_clean(&ps, &sample);
	ps.stop_reads = 0;
	if (o->s.stop && why == DROP_NONE) {
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
		/* Stopped threads all look idle: keep what they were doing. */
		ps.want_state = 0;
		ps.want_gil = 0;
		/* Everything is copied: they go before unwinding. */
		why = sampleloop_read_stopped(&nu, &ps, &sample, tids, n);
		py_sample_keep_states(&sample, before, n);
		free(before);
		free(tids);
	}
	if (why == DROP_NONE && sample.nr_threads) {
		dt = xcalloc(sample.nr_threads + 1, sizeof(*dt));
		thread_frames(dt, &sample, o->s.native ? &nu : NULL);
	}
	if (why == DROP_NONE && !sample.nr_threads) {
		fprintf(stderr,
			"spyc: found no Python thread in pid %d in %d attempts\n",
			(int)pid, DUMP_ATTEMPTS);
		ret = EXIT_DATA_LOST;
	} else if (why == DROP_GONE) {
		fprintf(stderr, "spyc: pid %d exited\n", (int)pid);
		ret = EXIT_FAILED;
	} else if (why != DROP_NONE) {
		fprintf(stderr,
			"spyc: could not read a consistent stack from pid %d "
			"in %d attempts (%s)\n",
			(int)pid, DUMP_ATTEMPTS, drop_reason_name(why));
		ret = EXIT_DATA_LOST;
	} else if (o->json) {
		cJSON *doc =
		    process_json(rt, py_sampler_tidmap(&ps), dt, sample.nr_threads,
				 o->s.native, &sample, o->s.async ? &pa : NULL);

		if (processes) {
			if (!doc || !cJSON_AddItemToArray(processes, doc)) {
				cJSON_Delete(doc);
				error("out of memory building JSON");
				ret = EXIT_FAILED;
			}
		} else if (print_json(doc)) {
			ret = EXIT_FAILED;
		}
	} else {
		print_text(rt, py_sampler_tidmap(&ps), dt, sample.nr_threads, o->s.native,
			   &sample, o->s.async ? &pa : NULL);
	}
	for (i = 0; dt && i < sample.nr_threads; i++)
		free(dt[i].frames);
	free(dt);
	py_sample_release(&sample);
	py_sampler_release(&ps);
	if (o->s.async)
		pyasync_release(&pa);
	if (o->s.stop)
		native_release(&nu);
	return ret;
}

/*
 * --subprocesses: dump pid and every descendant that runs Python, one
 * block (or JSON object) each; name the others.  The worst exit code.
 */
static int dump_tree(const struct dump_opts *o, pid_t pid)
{
	struct children kids;
	cJSON *doc = NULL, *processes = NULL, *others = NULL;
	size_t i, sampled = 0;
	int ret = EXIT_OK, r;

	if (!proc_exists(pid))
		die("no process with pid %d", (int)pid);
	children_init(&kids, pid, NULL, NULL);
	children_scan(&kids, 1);
	if (o->json) {
		doc = cJSON_CreateObject();
		processes = doc ? cJSON_AddArrayToObject(doc, "processes") : NULL;
		others = doc ? cJSON_AddArrayToObject(doc, "not_python") : NULL;
		if (!others)
			die("out of memory building JSON");
	}
	for (i = 0; i < kids.nr; i++) {
		const struct child *ch = kids.list[i];

		if (ch->state == CHILD_GONE)
			continue;
		if (ch->state != CHILD_PYTHON) {
			cJSON *item;

			if (!o->json) {
				char cmdline[1024] = "";

				proc_cmdline(ch->pid, cmdline, sizeof(cmdline));
				printf("%sProcess %d: %s\nnot Python: not "
				       "dumped\n",
				       i ? "\n" : "", (int)ch->pid, cmdline);
				continue;
			}
			item = cJSON_CreateObject();
			if (!item || !cJSON_AddItemToArray(others, item) ||
			    !cJSON_AddNumberToObject(item, "pid", ch->pid) ||
			    !cJSON_AddStringToObject(item, "process",
						     ch->label))
				die("out of memory building JSON");
			continue;
		}
		if (!o->json && i)
			printf("\n");
		r = dump_process(o, &ch->rt, processes);
		sampled += r == EXIT_OK;
		if (r > ret)
			ret = r;
	}
	if (o->json && print_json(doc))
		ret = EXIT_FAILED;
	children_release(&kids);
	if (!sampled && ret == EXIT_OK) {
		fprintf(stderr, "spyc: no Python process in pid %d's tree\n",
			(int)pid);
		ret = EXIT_FAILED;
	}
	return ret;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option options[] = {
	    SAMPLE_OPTIONS,
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct dump_opts o = {0};
	struct pyruntime rt;
	int c, ret;

	sample_opts_init(&o.s);
	while ((c = getopt_long(argc, argv, "p:jnsh", options, NULL)) != -1) {
		if (sample_option(&o.s, c, optarg))
			continue;
		if (c != 'j')
			usage_exit(c, usage_text);
		o.json = 1;
	}
	sample_opts_finish(&o.s, argc, argv, optind, "dump", 0);
	if (o.s.subprocesses) {
		ret = dump_tree(&o, o.s.pid);
	} else {
		attach_or_die(&rt, o.s.pid);
		ret = dump_process(&o, &rt, NULL);
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "spyc: cannot write to standard output\n");
		ret = EXIT_FAILED;
	}
	return ret;
}
