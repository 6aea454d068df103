/* SPDX-License-Identifier: MIT */
/* spyc record: sample a process until told to stop, then write a profile. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "native.h"
#include "output.h"
#include "proc.h"
#include "pyframe.h"
#include "stacks.h"
#include "util.h"

#define DEFAULT_RATE_HZ 100.0
#define MAX_RATE_HZ 100000.0
/* How often to check, between failures, that the target did not exec. */
#define EXEC_CHECK_NS 500000000ULL
/* Exit 1 when more than this share of samples was dropped. */
#define DROP_TOLERANCE 0.01

static const char usage_text[] =
    "usage: spyc record [options] --pid PID\n"
    "       spyc record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Sample a running process (or launch PROGRAM and sample it from its\n"
    "first Python frame) until Ctrl-C, SIGTERM, --duration, or the\n"
    "target's exit; then write a profile.\n"
    "\n"
    "  -p, --pid PID         sample this process\n"
    "  -o, --output FILE     where to write (default spyc-PID.json)\n"
    "  -f, --format FORMAT   speedscope, folded or svg (default: from the\n"
    "                        output's extension: .json, .txt/.folded, .svg)\n"
    "  -r, --rate HZ         samples per second (default 100)\n"
    "  -d, --duration SECS   stop after this many seconds\n"
    "  -t, --threads         folded and SVG: one stack prefix per thread\n"
    "                        (speedscope always has one profile per thread)\n"
    "  -F, --full-filenames  keep whole file names (default: shortened)\n"
    "  -i, --idle            keep threads that are sleeping or blocked\n"
    "                        (default: only threads running on a CPU)\n"
    "  -g, --gil             keep only the thread holding the GIL\n"
    "  -n, --native          merge native frames (C extensions, libc, the\n"
    "                        interpreter's helpers) into the Python stacks;\n"
    "                        stops each sampled thread briefly to read its\n"
    "                        registers (Python-only sampling never does)\n"
    "  -h, --help            this help\n"
    "\n"
    "exit codes: 0 ok, 1 profile written but more than 1% of samples\n"
    "were dropped or none was taken, 2 failed, 64 usage error\n";

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct record_opts {
	pid_t pid;
	const char *output;
	enum output_format format;
	double rate;
	double duration;
	int threads;
	int full_filenames;
	int idle; /* keep threads that are not on a CPU too */
	int gil;  /* keep only the thread holding the GIL */
	int native; /* merge native frames in */
	char **argv; /* launch mode */
};

struct recorder {
	struct record_opts *opts;
	struct pyruntime rt;
	struct py_sampler ps;
	struct py_sample sample;
	struct stacks stacks;
	char cwd[4096];
	uint32_t *scratch; /* root-first frame ids of one stack */
	uint64_t samples, empty, dropped[DROP_NR];
	uint64_t unmerged; /* --native stacks that did not line up */
	struct native_unwinder nu;
	struct merged_frame *merged; /* scratch for one merged stack */
	long *tids;
	size_t alloc_tids;
	struct py_thread *before;
	size_t alloc_before;
	pid_t child; /* launch mode, else 0 */
	int child_status, child_reaped;
	const char *ended; /* why sampling stopped, for the summary */
};

static double parse_positive(const char *opt, const char *arg, double max)
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

static void parse_options(struct record_opts *o, int argc, char **argv)
{
	static const struct option options[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"rate", required_argument, NULL, 'r'},
	    {"duration", required_argument, NULL, 'd'},
	    {"threads", no_argument, NULL, 't'},
	    {"full-filenames", no_argument, NULL, 'F'},
	    {"idle", no_argument, NULL, 'i'},
	    {"gil", no_argument, NULL, 'g'},
	    {"native", no_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->rate = DEFAULT_RATE_HZ;
	while ((c = getopt_long(argc, argv, "+p:o:f:r:d:tFignh", options, NULL)) !=
	       -1) {
		switch (c) {
		case 'p':
			o->pid = parse_pid(optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->format = output_format_parse(optarg);
			if (o->format == FORMAT_NONE) {
				fprintf(
				    stderr,
				    "spyc: unknown format '%s' (speedscope, "
				    "folded or svg)\n",
				    optarg);
				exit(EXIT_USAGE);
			}
			break;
		case 'r':
			o->rate = parse_positive("--rate", optarg, MAX_RATE_HZ);
			break;
		case 'd':
			o->duration = parse_positive("--duration", optarg, 1e9);
			break;
		case 't':
			o->threads = 1;
			break;
		case 'F':
			o->full_filenames = 1;
			break;
		case 'i':
			o->idle = 1;
			break;
		case 'n':
			o->native = 1;
			break;
		case 'g':
			o->gil = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(EXIT_OK);
		default:
			fputs(usage_text, stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		o->argv = argv + optind;
	if (!o->pid == !o->argv) {
		fprintf(stderr, "spyc: record needs either --pid PID or "
				"-- PROGRAM [ARGS...]\n");
		exit(EXIT_USAGE);
	}
	if (o->output && o->format == FORMAT_NONE) {
		o->format = output_format_from_path(o->output);
		if (o->format == FORMAT_NONE) {
			fprintf(stderr,
				"spyc: cannot tell the format of '%s' from its "
				"extension; use --format\n",
				o->output);
			exit(EXIT_USAGE);
		}
	}
	if (o->format == FORMAT_NONE)
		o->format = FORMAT_SPEEDSCOPE;
}

/*
 * A shorter file name for profiles: the part after site-packages or the
 * standard library directory, or relative to the target's working
 * directory; else the whole name.
 */
static const char *short_filename(const struct recorder *r, const char *file)
{
	static const char *const markers[] = {"/site-packages/",
					      "/dist-packages/"};
	const char *p, *best = NULL;
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(markers); i++) {
		p = strstr(file, markers[i]);
		if (p)
			best = p + strlen(markers[i]);
	}
	if (best)
		return best;
	p = strstr(file, "/lib/python");
	if (p && (p = strchr(p + 11, '/')))
		return p + 1;
	n = strlen(r->cwd);
	if (n > 1 && !strncmp(file, r->cwd, n) && file[n] == '/')
		return file + n + 1;
	return file;
}

/* The stacks frame id of (code, line), cached on the code object. */
static uint32_t frame_id(struct recorder *r, struct pycode *code, int line)
{
	struct pycode_line *l;
	size_t i;

	for (i = 0; i < code->nr_lines; i++)
		if (code->lines[i].line == line)
			return code->lines[i].id;
	ALLOC_GROW(code->lines, code->nr_lines + 1, code->alloc_lines);
	l = &code->lines[code->nr_lines++];
	l->line = line;
	l->id = stacks_frame(&r->stacks, code->name,
			     r->opts->full_filenames
				 ? code->filename
				 : short_filename(r, code->filename),
			     line);
	return l->id;
}

/* Does the user want this thread's stack (--idle, --gil)? */
static int wanted(const struct record_opts *o, const struct py_thread *t)
{
	if (o->gil)
		return t->holds_gil;
	return o->idle || t->state == THREAD_RUNNING ||
	       t->state == THREAD_UNKNOWN;
}

/* Count the sample's stacks; returns how many threads had one. */
/* The stacks frame id of a native frame, cached on its symbol. */
static uint32_t native_frame_id(struct recorder *r, struct native_sym *sym)
{
	if (sym->user_id < 0)
		sym->user_id = stacks_frame(&r->stacks, sym->name,
					    sym->file ? sym->file : "",
					    sym->file ? sym->line : 0);
	return (uint32_t)sym->user_id;
}

/* Thread t's stack, root first, into r->scratch; returns its depth. */
static size_t stack_ids(struct recorder *r, const struct py_thread *t)
{
	const struct py_sample *s = &r->sample;
	uint64_t ips[NATIVE_MAX_DEPTH];
	size_t j, n, nips;
	int merged;

	if (!r->opts->native || !t->tid ||
	    !(nips = native_unwind(&r->nu, t->tid, ips, ARRAY_SIZE(ips)))) {
		for (j = 0; j < t->depth; j++) {
			const struct py_frame *f =
			    &s->frames[t->first + t->depth - 1 - j];

			r->scratch[j] = frame_id(r, f->code, f->line);
		}
		return t->depth;
	}
	n = native_merge(&r->nu, &s->frames[t->first], t->depth, ips, nips,
			 r->merged, PY_MAX_DEPTH + NATIVE_MAX_DEPTH, &merged);
	if (!merged)
		r->unmerged++;
	for (j = 0; j < n; j++)
		r->scratch[j] =
		    r->merged[j].py
			? frame_id(r, r->merged[j].py->code, r->merged[j].py->line)
			: native_frame_id(
			      r, (struct native_sym *)r->merged[j].native);
	return n;
}

static size_t add_sample(struct recorder *r)
{
	const struct py_sample *s = &r->sample;
	size_t i, added = 0;

	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *t = &s->threads[i];
		uint32_t th;
		size_t depth;

		if (!t->depth || !wanted(r->opts, t))
			continue;
		depth = stack_ids(r, t);
		th = stacks_thread(&r->stacks, t->ident, t->tid, NULL);
		stacks_add(&r->stacks, th, r->scratch, depth, 1);
		added++;
	}
	return added;
}

/*
 * --native: stop just the threads that will be sampled, read their
 * Python frames again while they are stopped (so both views are of one
 * instant), keeping what they were doing before they were stopped.
 */
static enum drop_reason stop_wanted(struct recorder *r)
{
	struct py_sample *s = &r->sample;
	size_t i, j, n = 0, nr = s->nr_threads;
	enum drop_reason why;

	ALLOC_GROW(r->tids, nr + 1, r->alloc_tids);
	ALLOC_GROW(r->before, nr + 1, r->alloc_before);
	for (i = 0; i < nr; i++)
		if (s->threads[i].depth && s->threads[i].tid &&
		    wanted(r->opts, &s->threads[i]))
			r->tids[n++] = s->threads[i].tid;
	if (!n)
		return DROP_NONE;
	memcpy(r->before, s->threads, nr * sizeof(*r->before));
	native_stop(&r->nu, r->tids, n);
	r->ps.want_state = r->ps.want_gil = 0;
	why = py_sampler_sample(&r->ps, s);
	r->ps.want_state = !r->opts->idle;
	r->ps.want_gil = r->opts->gil;
	for (i = 0; i < s->nr_threads; i++) {
		for (j = 0; j < nr; j++) {
			if (r->before[j].ident != s->threads[i].ident)
				continue;
			s->threads[i].state = r->before[j].state;
			s->threads[i].holds_gil = r->before[j].holds_gil;
		}
	}
	return why;
}

/* Has the target gone (exited, or exec'd another program)? */
static int target_gone(struct recorder *r)
{
	if (r->child && !r->child_reaped &&
	    waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
		r->child_reaped = 1;
		r->ended = "the target exited";
		return 1;
	}
	if (r->child_reaped || !proc_alive(r->rt.pid)) {
		r->ended = "the target exited";
		return 1;
	}
	if (!pyruntime_still_valid(&r->rt)) {
		r->ended = "the target exec'd another program";
		return 1;
	}
	return 0;
}

static void sample_loop(struct recorder *r)
{
	uint64_t interval = (uint64_t)(1e9 / r->opts->rate);
	uint64_t start = now_ns(), next = start, last_check = start;
	uint64_t end = r->opts->duration > 0
			   ? start + (uint64_t)(r->opts->duration * 1e9)
			   : UINT64_MAX;

	while (!stop_signal) {
		struct timespec ts;
		enum drop_reason why;
		uint64_t now;

		why = py_sampler_sample(&r->ps, &r->sample);
		/*
		 * A torn read means the stack was changing under us: one
		 * immediate retry usually sees it settled, and dropping
		 * instead would bias against code that calls a lot.
		 */
		if (why != DROP_NONE && why != DROP_GONE)
			why = py_sampler_sample(&r->ps, &r->sample);
		if (why == DROP_NONE && r->opts->native)
			why = stop_wanted(r);
		if (why == DROP_NONE) {
			/* Before the first frame and after the last: nothing. */
			if (add_sample(r))
				r->samples++;
			else
				r->empty++;
		}
		/* Stopped threads run again before anything else happens. */
		native_resume_all(&r->nu);
		if (why == DROP_GONE || (why != DROP_NONE && target_gone(r))) {
			if (!r->ended)
				r->ended = "the target exited";
			break;
		}
		if (why != DROP_NONE)
			r->dropped[why]++;
		now = now_ns();
		if (now - last_check > EXEC_CHECK_NS) {
			last_check = now;
			if (target_gone(r))
				break;
		}
		next += interval;
		if (next >= end) {
			r->ended = "--duration elapsed";
			break;
		}
		/* Fell behind (a slow sample): do not burst to catch up. */
		if (next <= now) {
			next = now;
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ULL);
		ts.tv_nsec = (long)(next % 1000000000ULL);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR &&
		       !stop_signal)
			;
	}
	if (stop_signal && !r->ended)
		r->ended = stop_signal == SIGINT ? "interrupted" : "terminated";
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void default_output(struct record_opts *o, pid_t pid, char *buf,
			   size_t size)
{
	static const char *const ext[] = {[FORMAT_SPEEDSCOPE] = "json",
					  [FORMAT_FOLDED] = "txt",
					  [FORMAT_SVG] = "svg"};

	snprintf(buf, size, "spyc-%d.%s", (int)pid, ext[o->format]);
	o->output = buf;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts opts;
	struct recorder r;
	struct profile_meta meta;
	char title[1200], cmdline[1024], outbuf[64];
	uint64_t started, dropped = 0;
	double elapsed;
	size_t i;
	int ret = EXIT_OK;

	parse_options(&opts, argc, argv);
	memset(&r, 0, sizeof(r));
	r.opts = &opts;
	install_signals();
	/* The default 50 us timer slack would cap the rate near 10 kHz. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (opts.argv) {
		r.child = launch_or_die(&r.rt, opts.argv);
	} else {
		attach_or_die(&r.rt, opts.pid);
	}
	if (!opts.output)
		default_output(&opts, r.rt.pid, outbuf, sizeof(outbuf));
	{
		char link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)r.rt.pid);
		n = readlink(link, r.cwd, sizeof(r.cwd) - 1);
		r.cwd[n > 0 ? n : 0] = '\0';
	}
	proc_cmdline(r.rt.pid, cmdline, sizeof(cmdline));
	py_sampler_init(&r.ps, &r.rt);
	r.ps.want_state = !opts.idle;
	r.ps.want_gil = opts.gil;
	stacks_init(&r.stacks);
	r.scratch = xmalloc((PY_MAX_DEPTH + NATIVE_MAX_DEPTH) *
			    sizeof(*r.scratch));
	if (opts.native) {
		if (native_init(&r.nu, &r.rt)) {
			ret = EXIT_FAILED;
			goto out;
		}
		r.merged = xmalloc((PY_MAX_DEPTH + NATIVE_MAX_DEPTH) *
				   sizeof(*r.merged));
	}

	started = now_ns();
	sample_loop(&r);
	elapsed = (double)(now_ns() - started) / 1e9;

	snprintf(title, sizeof(title), "%s (pid %d)", cmdline, (int)r.rt.pid);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.python_version = r.rt.version;
	meta.rate_hz = opts.rate;
	meta.duration_s = elapsed;
	meta.thread_prefix = opts.threads;
	if (output_write(opts.output, opts.format, &r.stacks, &meta)) {
		ret = EXIT_FAILED;
		goto out;
	}

	for (i = 0; i < DROP_NR; i++)
		dropped += r.dropped[i];
	{
		struct strbuf sb = STRBUF_INIT;
		const char *sep = " (";

		strbuf_addf(&sb, "spyc: %llu samples, %llu dropped",
			    (unsigned long long)r.samples,
			    (unsigned long long)dropped);
		for (i = 0; i < DROP_NR; i++) {
			if (!r.dropped[i])
				continue;
			strbuf_addf(&sb, "%s%llu %s", sep,
				    (unsigned long long)r.dropped[i],
				    drop_reason_name((enum drop_reason)i));
			sep = ", ";
		}
		if (dropped)
			strbuf_addch(&sb, ')');
		strbuf_addf(&sb, ", %.2f s at %.1f Hz -> %s", elapsed,
			    elapsed > 0
				? (double)(r.samples + r.empty + dropped) /
				      elapsed
				: 0.0,
			    opts.output);
		if (r.ended && opts.native)
			strbuf_addf(&sb, " (%s; %llu native stacks unmerged)",
				    r.ended, (unsigned long long)r.unmerged);
		else if (r.ended)
			strbuf_addf(&sb, " (%s)", r.ended);
		fprintf(stderr, "%s\n", sb.buf);
		strbuf_release(&sb);
	}
	if (!r.stacks.total_samples ||
	    (double)dropped > DROP_TOLERANCE * (double)(r.samples + dropped))
		ret = EXIT_DATA_LOST;
out:
	/*
	 * In launch mode spyc's life encloses the child's: pass a stop
	 * signal on (a terminal's Ctrl-C has reached it already) and wait.
	 */
	if (r.child && !r.child_reaped) {
		if (stop_signal == SIGINT) {
			struct timespec ts = {0, 100000000};

			nanosleep(&ts, NULL);
		}
		if (stop_signal &&
		    waitpid(r.child, &r.child_status, WNOHANG) != r.child)
			kill(r.child, stop_signal);
		waitpid(r.child, &r.child_status, 0);
	}
	free(r.scratch);
	free(r.merged);
	free(r.tids);
	free(r.before);
	if (opts.native)
		native_release(&r.nu);
	stacks_release(&r.stacks);
	py_sample_release(&r.sample);
	py_sampler_release(&r.ps);
	return ret;
}
