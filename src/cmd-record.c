/* SPDX-License-Identifier: MIT */
/* spyc record: sample a process until told to stop, then write a profile. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "framename.h"
#include "native.h"
#include "output.h"
#include "proc.h"
#include "pyframe.h"
#include "sampleloop.h"
#include "stacks.h"
#include "util.h"

#define DEFAULT_RATE_HZ 100.0
#define MAX_RATE_HZ 100000.0
/* Exit 1 when more than this share of samples was dropped. */
#define DROP_TOLERANCE 0.01
/* Longest stack recorded: Python frames and the native ones merged in. */
#define MAX_STACK (PY_MAX_DEPTH + NATIVE_MAX_DEPTH)

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
    "      --blocking        stop each sampled thread while its Python\n"
    "                        frames are read too (they cannot change under\n"
    "                        spyc), at the cost of a pause per sample\n"
    "      --nonblocking     never stop the target (the default without\n"
    "                        --native)\n"
    "  -h, --help            this help\n"
    "\n"
    "exit codes: 0 ok, 1 profile written but more than 1% of samples\n"
    "were dropped or none was taken, 2 failed, 64 usage error\n";

struct record_opts {
	pid_t pid;
	const char *output;
	enum output_format format;
	double rate;
	double duration;
	int threads;
	int full_filenames;
	int idle;    /* keep threads that are not on a CPU too */
	int gil;     /* keep only the thread holding the GIL */
	int native;  /* merge native frames in */
	int stop;    /* stop each sampled thread while reading it */
	char **argv; /* launch mode */
};

struct recorder {
	struct record_opts *opts;
	struct sampleloop sl;
	struct stacks stacks;
	char cwd[4096];
	uint32_t *scratch; /* root-first frame ids of one stack */
	uint64_t samples, empty;
	uint64_t unmerged; /* --native stacks that did not line up */
	struct native_unwinder nu;
	struct merged_frame *merged; /* scratch for one merged stack */
	const char *ended;	     /* why sampling stopped, for the summary */
};

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
	    {"blocking", no_argument, NULL, OPT_BLOCKING},
	    {"nonblocking", no_argument, NULL, OPT_NONBLOCKING},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, blocking = 0; /* 1: --blocking, 2: --nonblocking */

	memset(o, 0, sizeof(*o));
	o->rate = DEFAULT_RATE_HZ;
	while ((c = getopt_long(argc, argv, "+p:o:f:r:d:tFignh", options,
				NULL)) != -1) {
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
			o->rate =
			    parse_positive_arg("--rate", optarg, MAX_RATE_HZ);
			break;
		case 'd':
			o->duration =
			    parse_positive_arg("--duration", optarg, 1e9);
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
		case 'g':
			o->gil = 1;
			break;
		case 'n':
			o->native = 1;
			break;
		case OPT_BLOCKING:
		case OPT_NONBLOCKING:
			blocking |= c == OPT_BLOCKING ? 1 : 2;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(EXIT_OK);
		default:
			fputs(usage_text, stderr);
			exit(EXIT_USAGE);
		}
	}
	o->stop = threads_stopped(o->native, blocking);
	o->argv = parse_target(argc, argv, optind, o->pid, "record");
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

/* Makes the stacks frame id of a Python (code, line), for pycode_line_id. */
static uint32_t make_frame_id(void *ctx, const struct pycode *code, int line)
{
	struct recorder *r = ctx;

	return stacks_frame(&r->stacks, code->name,
			    r->opts->full_filenames
				? code->filename
				: short_filename(code->filename, r->cwd),
			    line);
}

static uint32_t frame_id(struct recorder *r, struct pycode *code, int line)
{
	return pycode_line_id(code, line, make_frame_id, r);
}

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
	size_t j, n;
	int unmerged;

	n = native_thread_frames(r->opts->native ? &r->nu : NULL, &r->sl.sample,
				 t, r->merged, MAX_STACK, &unmerged);
	r->unmerged += (uint64_t)unmerged;
	for (j = 0; j < n; j++) {
		const struct merged_frame *m = &r->merged[j];

		r->scratch[j] =
		    m->py ? frame_id(r, m->py->code, m->py->line)
			  : native_frame_id(r, (struct native_sym *)m->native);
	}
	return n;
}

/* Count the sample's stacks; returns how many threads had one. */
static size_t add_sample(struct recorder *r)
{
	const struct py_sample *s = &r->sl.sample;
	size_t i, added = 0;

	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *t = &s->threads[i];
		uint32_t th;
		size_t depth;

		if (!t->depth || !thread_wanted(t, r->opts->idle, r->opts->gil))
			continue;
		depth = stack_ids(r, t);
		th = stacks_thread(&r->stacks, t->ident, t->tid,
				   t->name[0] ? t->name : NULL);
		stacks_add(&r->stacks, th, r->scratch, depth, 1);
		added++;
	}
	return added;
}

static void sample_loop(struct recorder *r)
{
	struct sampleloop *sl = &r->sl;
	uint64_t end = r->opts->duration > 0
			   ? now_ns() + (uint64_t)(r->opts->duration * 1e9)
			   : UINT64_MAX;

	while (!sampleloop_stop) {
		enum drop_reason why = sampleloop_take(sl);

		if (why == DROP_GONE) {
			r->ended = sl->ended;
			break;
		}
		if (why == DROP_NONE && r->opts->stop)
			why = sampleloop_stop_wanted(sl, &r->nu, r->opts->idle,
						     r->opts->gil);
		if (why == DROP_NONE) {
			/* Before the first frame and after the last: nothing.
			 */
			if (add_sample(r))
				r->samples++;
			else
				r->empty++;
		}
		if (sampleloop_schedule(sl) >= end) {
			r->ended = "--duration elapsed";
			break;
		}
		sleep_until(sl->next);
	}
	if (sampleloop_stop && !r->ended)
		r->ended =
		    sampleloop_stop == SIGINT ? "interrupted" : "terminated";
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

static void print_summary(const struct recorder *r, double elapsed)
{
	struct strbuf sb = STRBUF_INIT;
	const struct sampleloop *sl = &r->sl;
	uint64_t dropped;

	strbuf_addf(&sb, "spyc: %llu samples, ",
		    (unsigned long long)r->samples);
	dropped = sampleloop_describe_drops(sl, &sb);
	strbuf_addf(&sb, ", %.2f s at %.1f Hz -> %s", elapsed,
		    elapsed > 0
			? (double)(r->samples + r->empty + dropped) / elapsed
			: 0.0,
		    r->opts->output);
	if (r->ended && r->opts->native)
		strbuf_addf(&sb, " (%s; %llu native stacks unmerged)", r->ended,
			    (unsigned long long)r->unmerged);
	else if (r->ended)
		strbuf_addf(&sb, " (%s)", r->ended);
	fprintf(stderr, "%s\n", sb.buf);
	strbuf_release(&sb);
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
	sampleloop_signals();
	if (opts.argv)
		r.sl.child = launch_or_die(&r.sl.rt, opts.argv);
	else
		attach_or_die(&r.sl.rt, opts.pid);
	if (!opts.output)
		default_output(&opts, r.sl.rt.pid, outbuf, sizeof(outbuf));
	target_cwd(r.sl.rt.pid, r.cwd, sizeof(r.cwd));
	proc_cmdline(r.sl.rt.pid, cmdline, sizeof(cmdline));
	sampleloop_init(&r.sl, opts.rate);
	r.sl.ps.want_state = !opts.idle;
	r.sl.ps.want_gil = opts.gil;
	r.sl.ps.want_names = 1;
	/* Idle threads' stacks are not kept: do not even read them. */
	r.sl.ps.skip_idle = !opts.idle && !opts.gil;
	stacks_init(&r.stacks);
	r.scratch = xmalloc(MAX_STACK * sizeof(*r.scratch));
	r.merged = xmalloc(MAX_STACK * sizeof(*r.merged));
	if (opts.native && native_init(&r.nu, &r.sl.rt)) {
		ret = EXIT_FAILED;
		goto out;
	}
	if (opts.stop && !opts.native)
		native_init_stopper(&r.nu, &r.sl.rt);

	started = now_ns();
	sample_loop(&r);
	elapsed = (double)(now_ns() - started) / 1e9;

	snprintf(title, sizeof(title), "%s (pid %d)", cmdline,
		 (int)r.sl.rt.pid);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.python_version = r.sl.rt.version;
	meta.rate_hz = opts.rate;
	meta.duration_s = elapsed;
	meta.thread_prefix = opts.threads;
	if (output_write(opts.output, opts.format, &r.stacks, &meta)) {
		ret = EXIT_FAILED;
		goto out;
	}
	print_summary(&r, elapsed);
	for (i = 0; i < DROP_NR; i++)
		dropped += r.sl.dropped[i];
	if (!r.stacks.total_samples ||
	    (double)dropped > DROP_TOLERANCE * (double)(r.samples + dropped))
		ret = EXIT_DATA_LOST;
out:
	/* In launch mode spyc's life encloses the child's. */
	sampleloop_finish(&r.sl, sampleloop_stop);
	free(r.scratch);
	free(r.merged);
	if (opts.stop)
		native_release(&r.nu);
	stacks_release(&r.stacks);
	sampleloop_release(&r.sl);
	return ret;
}
