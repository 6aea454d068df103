/* SPDX-License-Identifier: MIT */
/* spyc record: sample a process until told to stop, then write a profile. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys/children.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "py/framename.h"
#include "gpu/gpuprof.h"
#include "gpu/gpusession.h"
#include "gpu/gpustack.h"
#include "sys/native.h"
#include "out/outname.h"
#include "out/output.h"
#include "sys/proc.h"
#include "py/pyasync.h"
#include "py/pysample.h"
#include "cmd/sampleloop.h"
#include "profile/source.h"
#include "profile/stacks.h"
#include "profile/timeline.h"
#include "util.h"

/*
 * Say so in the summary when at least this share of the stacks kept
 * was read again after changing mid-read.
 */
#define REREAD_NOTE_SHARE 0.05
/*
 * Exit 1 when more than this share of samples was dropped: the samples
 * lost were of the code then running, so any function's share may be
 * off by as many points, past the 3 points a profile is held to.
 */
#define DROP_TOLERANCE 0.03
/* --kill-after-duration: how long SIGTERM has before SIGKILL. */
#define KILL_GRACE_NS (5ULL * 1000000000ULL)
/* GPU records read at most per tick. */
#define GPU_DRAIN_PER_TICK (64 * GPUSESSION_BATCH)
/* Kernels the summary lists. */
#define GPU_SUMMARY_ROWS 20
/*
 * --gpu: launches that went on this long after CUPTI's last record (which
 * its flushes bring within a fraction of a second) had their records
 * taken by another CUPTI client.
 */
#define RECORDS_TAKEN_NS (2ULL * 1000000000ULL)
/*
 * SPYC_STATS: one round in this many is timed awake (each timing costs
 * two reads of the thread CPU clock, system calls that would weigh on
 * the figure they make).
 */
#define STATS_TIMED_EVERY 16

static const char usage_text[] =
    "usage: spyc record [options] --pid PID\n"
    "       spyc record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Sample a running process (or launch PROGRAM and sample it from its\n"
    "first Python frame) until Ctrl-C, SIGTERM, --duration, or the\n"
    "target's exit; then write a profile.\n"
    "\n"
    "  -p, --pid PID         sample this process\n"
    "  -o, --output FILE     where to write (default spyc-PID.json); in\n"
    "                        FILE, %p is the target's pid, %r the MPI rank\n"
    "                        (from OMPI_COMM_WORLD_RANK, PMI_RANK,\n"
    "                        PMIX_RANK or SLURM_PROCID; an error if none\n"
    "                        is set), %h the host name, %% a '%'\n"
    "  -f, --format FORMAT   speedscope, folded, svg, pprof, chrome or html\n"
    "                        (default: from the output's extension: .json,\n"
    "                        .txt/.folded, .svg, .pb.gz/.pprof (pprof),\n"
    "                        .trace.json (Chrome trace: a timeline per\n"
    "                        thread; spyc keeps 16 bytes per sample and 4\n"
    "                        per thread in it while sampling), .html (a\n"
    "                        page that opens from disk: flame graph and\n"
    "                        icicle, zoom, search, threads, functions))\n"
    "  -r, --rate HZ         samples per second (default 100)\n"
    "  -d, --duration SECS   stop after this many seconds; a launched\n"
    "                        program is left to run to its end, and\n"
    "                        spyc waits for it\n"
    "      --kill-after-duration\n"
    "                        with --duration and -- PROGRAM: end the\n"
    "                        program once the profile is written\n"
    "                        (SIGTERM, then SIGKILL 5 s later)\n"
    "  -t, --threads         folded and SVG: one stack prefix per thread\n"
    "                        (speedscope always has one profile per thread)\n"
    "  -F, --full-filenames  keep whole file names (default: shortened)\n"
    "  -i, --idle            keep threads that are sleeping or blocked\n"
    "                        (default: only threads running on a CPU)\n"
    "  -g, --gil             keep only the thread holding the GIL (refused "
    "for\n"
    "                        a free-threaded build, which has none)\n"
    "  -n, --native          merge native frames (C extensions, libc, the\n"
    "                        interpreter's helpers) into the Python stacks;\n"
    "                        stops each sampled thread briefly to read its\n"
    "                        registers (Python-only sampling never does)\n"
    "      --blocking        stop each sampled thread while its Python\n"
    "                        frames are read too (they cannot change under\n"
    "                        spyc), at the cost of a pause per sample\n"
    "      --nonblocking     never stop the target (the default without\n"
    "                        --native)\n"
    "      --max-depth N     Python frames kept per stack (default 4096);\n"
    "                        a deeper stack keeps its innermost N under a\n"
    "                        '[K frames not read]' root\n"
    "      --async           asyncio task stacks (CPython 3.14+): a thread\n"
    "                        running a task shows the tasks awaiting it,\n"
    "                        each as a '<task>' frame named for the task\n"
    "                        over its coroutines, then what the task runs;\n"
    "                        with --idle every waiting task counts too\n"
    "      --no-gc           no '<GC>' frame: time in CPython's cycle\n"
    "                        collector is shown as a '<GC>' frame on top\n"
    "                        of the stack that set it off (3.6+, not\n"
    "                        free-threaded builds, not with --native)\n"
    "  -s, --subprocesses    also sample the target's descendants as they\n"
    "                        start (fork, exec, spawn; pools, launchers,\n"
    "                        shell wrappers): each Python one under its\n"
    "                        own pid and command line; Python-only\n"
    "                        (not with --native, --blocking, --async or\n"
    "                        --gpu)\n"
    "      --gpu             also record CUDA kernels, copies and memsets\n"
    "                        (CUPTI, through spyc's agent): per-stream\n"
    "                        timelines (speedscope), GPU time on the\n"
    "                        launching thread's nearest CPU sample\n"
    "                        (speedscope, folded), and a summary\n"
    "      --gpu-timeline N  keep the newest N GPU activities for the\n"
    "                        timelines (default 1000000, 48 MB); the\n"
    "                        profile and the summary count them all\n"
    "  -h, --help            this help\n"
    "\n"
    "exit codes: 0 ok, 1 profile written but more than 3% of samples\n"
    "were dropped or none was taken, 2 failed, 64 usage error; with\n"
    "-- PROGRAM, once the profile is written, the program's own exit\n"
    "status instead of 0 or 1 (128 + N if signal N killed it), unless\n"
    "--kill-after-duration ended it\n";

struct record_opts {
	struct sample_opts s; /* the target, and how to read it */
	const char *output;
	enum output_format format;
	double duration;
	int threads;
	int full_filenames;
	int kill_after_duration;
	size_t gpu_timeline;  /* --gpu-timeline, else 0 */
	const char *template; /* --output as given: %p %r %h %% */
	const char *rank;     /* MPI rank from the environment, or NULL */
	const char *rank_var; /* the variable it came from */
	char host[256];	      /* "" if unknown */
};

struct recorder {
	struct record_opts *opts;
	struct sampleloop sl;
	struct stacks stacks;
	/*
	 * The output has no place for threads (folded or SVG without
	 * --threads): every stack counts under one thread, so that a
	 * process that starts thread after thread costs nothing per thread.
	 */
	int one_thread;
	uint32_t the_thread;
	char cwd[4096];
	uint32_t *scratch; /* root-first frame ids of one stack */
	uint64_t samples, empty;
	uint64_t unmerged;  /* --native stacks that did not line up */
	uint64_t truncated; /* stacks cut at --max-depth */
	size_t max_stack;   /* longest stack: Python and native frames */
	struct native_unwinder nu;
	struct merged_frame *merged; /* scratch for one merged stack */
	struct pyasync async;	     /* --async */
	/* --gpu: the channel and the agent; what they reported */
	struct gpusession gpu;
	struct gpuprof gp;
	struct gpustack_asm gsa;	/* launch stacks being put together */
	struct py_sample launch_sample; /* one of them, being named */
	struct stack_frame *launch_frames;
	size_t alloc_launch_frames;
	/* --subprocesses: every process of the tree, the target first */
	struct children kids;
	size_t tree_added;     /* threads with a stack in this tick */
	uint64_t threads_read; /* in the samples kept, for SPYC_STATS */
	/*
	 * SPYC_STATS: spyc's CPU time awake, from each wakeup to the next
	 * sleep (ns), apart from what the sleeps and wakeups cost it, in
	 * one round of STATS_TIMED_EVERY (reading the thread CPU clock is
	 * a system call), and the threads read in those rounds
	 */
	int stats;
	uint64_t rounds, awake_cpu_ns, timed_threads;
	const char *cwd_now; /* of the process whose sample is being added */
	pid_t pid_now;	     /* that process */
	struct source_files files; /* which file each Python file name is */
	struct source_roots roots; /* what short file names are under */
	/* --format chrome: the samples in time order */
	struct timeline timeline;
	int timeline_on;
	const char *ended;	/* why sampling stopped, for the summary */
	int at_deadline;	/* it stopped because --duration elapsed */
	double elapsed;		/* seconds sampled */
	uint64_t start_unix_ns; /* when sampling began, wall clock */
};

static void parse_options(struct record_opts *o, int argc, char **argv)
{
	enum { OPT_KILL_AFTER_DURATION = OPT_COMMAND, OPT_GPU_TIMELINE };
	static const struct option options[] = {
	    SAMPLE_OPTIONS,
	    SAMPLE_RATE_OPTIONS,
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"duration", required_argument, NULL, 'd'},
	    {"threads", no_argument, NULL, 't'},
	    {"full-filenames", no_argument, NULL, 'F'},
	    {"kill-after-duration", no_argument, NULL, OPT_KILL_AFTER_DURATION},
	    {"gpu-timeline", required_argument, NULL, OPT_GPU_TIMELINE},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	struct stat st;

	memset(o, 0, sizeof(*o));
	sample_opts_init(&o->s);
	while ((c = getopt_long(argc, argv, "+p:o:f:r:d:tFignsh", options,
				NULL)) != -1) {
		if (sample_option(&o->s, c, optarg))
			continue;
		switch (c) {
		case 'o':
			o->output = optarg;
			o->template = optarg;
			break;
		case 'f':
			o->format = output_format_parse(optarg);
			if (o->format == FORMAT_NONE) {
				fprintf(
				    stderr,
				    "spyc: unknown format '%s' (speedscope, "
				    "folded, svg, pprof, chrome or html)\n",
				    optarg);
				exit(EXIT_USAGE);
			}
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
		case OPT_KILL_AFTER_DURATION:
			o->kill_after_duration = 1;
			break;
		case OPT_GPU_TIMELINE:
			o->gpu_timeline = (size_t)parse_positive_arg(
			    "--gpu-timeline", optarg, 1e9);
			break;
		default:
			usage_exit(c, usage_text);
		}
	}
	sample_opts_finish(&o->s, argc, argv, optind, "record",
			   SAMPLE_LAUNCH | SAMPLE_TASK_STACKS);
	if (o->gpu_timeline && !o->s.gpu) {
		fprintf(stderr, "spyc: --gpu-timeline needs --gpu\n");
		exit(EXIT_USAGE);
	}
	/* spyc ends only a program it started, and only at a deadline. */
	if (o->kill_after_duration && (!o->s.argv || !o->duration)) {
		fprintf(stderr, "spyc: --kill-after-duration needs --duration "
				"and a program to launch (-- PROGRAM)\n");
		exit(EXIT_USAGE);
	}
	/*
	 * A directory can take no profile, whatever its name says: told
	 * as a write error (exit 2), before its extension is looked at.
	 */
	if (o->output && !stat(o->output, &st) && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "spyc: cannot write '%s': %s\n", o->output,
			strerror(EISDIR));
		exit(EXIT_FAILED);
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

/* Makes the stacks frame id of a Python (code, line), for pycode_line_id. */
static uint32_t make_frame_id(void *ctx, const struct pycode *code, int line)
{
	struct recorder *r = ctx;
	const char *file = code->filename;
	uint32_t id;

	if (!r->opts->full_filenames) {
		file = short_filename(code->filename, r->cwd_now);
		source_roots_note(&r->roots, code->filename, file);
	}
	source_files_note(&r->files, r->pid_now, r->cwd_now, code->filename,
			  file);
	id = stacks_frame(&r->stacks, code->name, file, line);

	/* --gpu's summary names the Python line of each launch. */
	if (r->opts->s.gpu)
		gpuprof_python_frame(&r->gp, id);
	return id;
}

static uint32_t frame_id(struct recorder *r, struct pycode *code, int line)
{
	return pycode_line_id(code, line, make_frame_id, r);
}

/* Makes the stacks frame id of a native frame, for native_thread_ids. */
static uint32_t make_native_id(void *ctx, struct native_sym *sym)
{
	struct recorder *r = ctx;

	return stacks_frame(&r->stacks, sym->name, sym->file ? sym->file : "",
			    sym->file ? sym->line : 0);
}

/* Thread t of s, root first, into r->scratch; returns its depth. */
static size_t stack_ids(struct recorder *r, const struct py_sample *s,
			const struct py_thread *t)
{
	const struct frame_namer fn = {make_frame_id, make_native_id, r};
	size_t n;
	int unmerged;

	n = native_thread_ids(r->opts->s.native ? &r->nu : NULL, s, t,
			      r->merged, r->max_stack, &fn, r->scratch,
			      &unmerged);
	r->unmerged += (uint64_t)unmerged;
	return n;
}

/*
 * --format chrome: put a sampling tick (entry STACKS_NO_ENTRY; the
 * stacks added next are its own) or one of its stacks in the timeline;
 * once it is full, say so once.
 */
static void timeline_record(struct recorder *r, uint64_t now, uint32_t entry)
{
	int ret;

	if (!r->timeline_on)
		return;
	ret = entry == STACKS_NO_ENTRY ? timeline_tick(&r->timeline, now)
				       : timeline_add(&r->timeline, entry);
	if (ret) {
		warning("the Chrome trace's timeline reached its memory "
			"limit: it ends %.1f s in (the totals go on)",
			(double)(now - r->timeline.t0_ns) / 1e9);
		r->timeline_on = 0;
	}
}

/* Whether thread t's innermost Python frame is in autograd's engine. */
static int waits_in_autograd(const struct py_sample *s,
			     const struct py_thread *t)
{
	return t->depth &&
	       gpuprof_autograd_file(s->frames[t->first].code->filename);
}

/*
 * --gpu: a thread that waits in autograd's engine is where the kernels
 * of its backward pass go, which PyTorch launches from threads with no
 * Python: keep its stack for them, from r->scratch (depth ids) or, for
 * a thread left out of the profile (idle; depth 0), read now.
 */
static void note_waiting(struct recorder *r, const struct py_sample *s,
			 const struct py_thread *t, uint64_t now, size_t depth)
{
	if (!r->gpu.on || !waits_in_autograd(s, t))
		return;
	if (!depth)
		depth = stack_ids(r, s, t);
	gpuprof_waiting_sample(&r->gp, now, t->tid, t->ident,
			       t->name[0] ? t->name : NULL, &r->stacks,
			       r->scratch, depth);
}

/*
 * Count the stacks of sample s, of the process labelled process (NULL
 * unless following several) whose directory is cwd; returns how many
 * threads had one.
 */
static size_t add_sample(struct recorder *r, const struct py_sample *s,
			 const char *process, const char *cwd, pid_t pid)
{
	uint64_t now = r->gpu.on || r->timeline_on ? now_ns() : 0;
	size_t i, added = 0;

	r->cwd_now = cwd;
	r->pid_now = pid;
	r->threads_read += s->nr_threads;
	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *t = &s->threads[i];
		uint32_t th, entry;
		size_t depth;

		if (!t->depth)
			continue;
		if (!thread_wanted(t, r->opts->s.idle, r->opts->s.gil)) {
			note_waiting(r, s, t, now, 0);
			continue;
		}
		depth = stack_ids(r, s, t);
		r->truncated += t->omitted > 0;
		th =
		    r->one_thread
			? r->the_thread
			: stacks_thread_in(&r->stacks, process, t->ident,
					   t->tid, t->name[0] ? t->name : NULL);
		entry = stacks_add(&r->stacks, th, r->scratch, depth, 1);
		if (r->gpu.on && entry != STACKS_NO_ENTRY) {
			gpuprof_cpu_sample(&r->gp, now, t->tid, entry);
			note_waiting(r, s, t, now, depth);
		}
		if (entry != STACKS_NO_ENTRY)
			timeline_record(r, now, entry);
		added++;
	}
	return added;
}

/*
 * --gpu: hand the agent the layout of the target's frames, so that it
 * copies the Python stack of each launch.  Not with --subprocesses (the
 * channel is shared by processes that may run other Pythons), nor for
 * a build whose frames the agent cannot copy (free-threaded).
 */
static void gpu_hand_layout(struct recorder *r)
{
	struct gpu_py_layout layout;

	if (!r->gpu.on)
		return;
	if (r->opts->s.subprocesses)
		snprintf(r->gp.launch_off, sizeof(r->gp.launch_off),
			 "--subprocesses");
	else if (gpu_py_layout_fill(r->sl.rt.off, &layout))
		snprintf(r->gp.launch_off, sizeof(r->gp.launch_off),
			 "a free-threaded CPython");
	else
		gpuchan_set_py_layout(&r->gpu.chan, &layout);
}

/*
 * The frames of the NVTX ranges open around a launch, outermost first,
 * after its Python frames: the range with this id and those around it.
 */
static size_t nvtx_frames(const struct gpunvtx *nv, uint64_t range,
			  struct stack_frame *frames)
{
	const char *names[GPU_NVTX_DEPTH];
	size_t n = gpunvtx_path(nv, gpunvtx_node_of(nv, range), names,
				GPU_NVTX_DEPTH),
	       i;

	for (i = 0; i < n; i++) {
		frames[i].name = names[i];
		frames[i].file = "";
		frames[i].line = 0;
	}
	return n;
}

/*
 * --gpu: a launch's Python stack as the agent copied it, named with the
 * code cache (reading the code objects it does not hold yet), into
 * r->gp.  A stack that cannot be named (the target is gone, or the
 * copy is garbage) is counted; its launch goes by the nearest sample.
 */
static void gpu_launch_stack(struct recorder *r, const struct gpustack_done *d)
{
	struct py_sample *s = &r->launch_sample;
	size_t i, n = 0;

	if (d->alias) {
		if (d->node)
			gpuprof_node_stack(&r->gp, d->correlation, d->alias,
					   NULL, 0);
		else
			gpuprof_launch_stack(&r->gp, (uint32_t)d->correlation,
					     d->tid, (uint32_t)d->alias, NULL,
					     0);
		return;
	}
	s->nr_frames = 0;
	for (i = 0; i < d->nr; i++)
		py_sampler_push_copied(&r->sl.ps, s, d->frames[i].code,
				       d->frames[i].pos);
	/* No Python (an engine's thread): the ranges open on it only. */
	if (d->nr && py_sampler_name_frames(&r->sl.ps, s) != DROP_NONE) {
		r->gp.launch_unnamed++;
		return;
	}
	ALLOC_GROW(r->launch_frames, d->nr + 1 + GPU_NVTX_DEPTH,
		   r->alloc_launch_frames);
	if (d->cut) {
		r->launch_frames[n].name = GPU_ROOT_CUT;
		r->launch_frames[n].file = "";
		r->launch_frames[n++].line = 0;
	}
	if (!r->cwd_now) {
		r->cwd_now = r->cwd;
		r->pid_now = r->sl.rt.pid;
	}
	for (i = d->nr; i-- > 0;) {
		uint32_t id;

		if (s->frames[i].code->hidden)
			continue;
		/* frame_id may move r->stacks.frames: first the id. */
		id = frame_id(r, s->frames[i].code, s->frames[i].line);

		r->launch_frames[n++] = r->stacks.frames[id];
	}
	n += nvtx_frames(&r->gp.nvtx, d->range, r->launch_frames + n);
	if (d->node)
		gpuprof_node_stack(&r->gp, d->correlation, 0, r->launch_frames,
				   n);
	else
		gpuprof_launch_stack(&r->gp, (uint32_t)d->correlation, d->tid, 0,
				     r->launch_frames, n);
}

/* --gpu: keep what the outputs need of one record from the channel. */
static void gpu_keep(void *ctx, const struct gpu_record *rec)
{
	struct recorder *r = ctx;
	struct gpustack_done done;

	if (rec->type != GPU_REC_STACK) {
		if (gpu_record_interval(rec) || rec->type == GPU_REC_API)
			r->gp.last_activity_at = now_ns();
		gpuprof_add(&r->gp, rec);
		gpuprof_fold(&r->gp, &r->stacks);
		return;
	}
	r->gp.last_launch_at = now_ns();
	if (gpustack_feed(&r->gsa, &rec->u.stack, &done))
		gpu_launch_stack(r, &done);
}

/* --subprocesses: count the stacks of one process's clean read. */
static void add_process(void *ctx, const struct child *ch)
{
	struct recorder *r = ctx;

	r->tree_added +=
	    add_sample(r, &ch->sample, ch->label, ch->cwd, ch->pid);
}

/* Sample until told to stop; r->elapsed is how long it sampled. */
static void sample_loop(struct recorder *r)
{
	struct sampleloop *sl = &r->sl;
	uint64_t started = now_ns();
	uint64_t end = r->opts->duration > 0
			   ? started + (uint64_t)(r->opts->duration * 1e9)
			   : UINT64_MAX;

	/* Slots from now on: duration x rate of them end at the deadline. */
	sl->next = sl->slot = started;
	r->gp.t0_ns = started;
	r->gp.period_ns = (uint64_t)(1e9 / r->opts->s.rate);
	r->gp.keep = r->opts->gpu_timeline;
	r->timeline.t0_ns = started;
	r->start_unix_ns = realtime_ns();
	while (!sampleloop_stop) {
		enum drop_reason why;
		/*
		 * Not the first round, which reads every code object once
		 * (its names twice): the cost of a round once they are known.
		 */
		int timed = r->stats && r->rounds++ % STATS_TIMED_EVERY ==
					    STATS_TIMED_EVERY - 1;
		uint64_t woke = timed ? thread_cpu_ns() : 0;
		uint64_t threads_before = r->threads_read;

		if (r->opts->s.subprocesses) {
			r->tree_added = 0;
			/*
			 * One tick for the whole tree: a process whose read
			 * is dropped has none of its stacks in it.
			 */
			if (r->timeline_on)
				timeline_record(r, now_ns(), STACKS_NO_ENTRY);
			why = sampleloop_take_tree(sl, add_process, r);
			if (why == DROP_GONE) {
				r->ended = sl->ended;
				break;
			}
			if (r->tree_added)
				r->samples++;
			else
				r->empty++;
			goto next;
		}
		why = sampleloop_take(sl);
		if (why == DROP_GONE) {
			r->ended = sl->ended;
			break;
		}
		if (why == DROP_NONE && r->opts->s.stop)
			why = sampleloop_stop_wanted(
			    sl, &r->nu, r->opts->s.idle, r->opts->s.gil);
		if (why == DROP_NONE) {
			/* A dropped sample has no tick: stacks go on. */
			if (r->timeline_on)
				timeline_record(r, now_ns(), STACKS_NO_ENTRY);
			/* Before the first frame and after the last: nothing.
			 */
			if (add_sample(r, &sl->sample, NULL, r->cwd,
				       r->sl.rt.pid))
				r->samples++;
			else
				r->empty++;
		}
		gpusession_drain(&r->gpu, GPU_DRAIN_PER_TICK);
	next:
		if (timed) {
			r->awake_cpu_ns += thread_cpu_ns() - woke;
			r->timed_threads += r->threads_read - threads_before;
		}
		/*
		 * No sample is due before the deadline: the run still lasts
		 * until it (at 0.5 Hz, 5 s is 3 samples over 5 s, not 4 s).
		 */
		if (sampleloop_schedule(sl) >= end) {
			if (sampleloop_wait(sl, end)) {
				r->ended = sl->ended;
			} else if (!sampleloop_stop) {
				r->ended = "--duration elapsed";
				r->at_deadline = 1;
			}
			break;
		}
		if (sampleloop_wait(sl, sl->next)) {
			r->ended = sl->ended;
			break;
		}
	}
	if (sampleloop_stop && !r->ended)
		r->ended =
		    sampleloop_stop == SIGINT ? "interrupted" : "terminated";
	r->gp.t1_ns = now_ns();
	r->elapsed = (double)(r->gp.t1_ns - started) / 1e9;
	/* Waking up late at the deadline is not sampling time. */
	if (r->at_deadline) {
		r->elapsed = r->opts->duration;
		r->gp.t1_ns = started + (uint64_t)(r->opts->duration * 1e9);
	}
}

static void default_output(struct record_opts *o, pid_t pid, char *buf,
			   size_t size)
{
	static const char *const ext[] = {
	    [FORMAT_SPEEDSCOPE] = "json",   [FORMAT_FOLDED] = "txt",
	    [FORMAT_SVG] = "svg",	    [FORMAT_PPROF] = "pb.gz",
	    [FORMAT_CHROME] = "trace.json", [FORMAT_HTML] = "html"};

	snprintf(buf, size, "spyc-%d.%s", (int)pid, ext[o->format]);
	o->output = buf;
}

/*
 * Launchers' counts of the tasks they started together, each of which
 * may run spyc with the same --output (srun sets SLURM_STEP_NUM_TASKS
 * in a step only: a batch script's SLURM_NTASKS is not one launch).
 */
static const char *const task_count_vars[] = {
    "SLURM_STEP_NUM_TASKS",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    NULL,
};

/*
 * Say once when --output names one file and this process is one of
 * several tasks of a launch: if each runs spyc, each profile replaces
 * the last.  Only a warning: a wrapper may run spyc in one task alone.
 */
static void warn_shared_output(const struct record_opts *o)
{
	size_t i;

	if (!o->template || outname_uses(o->template, 'r') ||
	    outname_uses(o->template, 'p'))
		return;
	for (i = 0; task_count_vars[i]; i++) {
		const char *v = getenv(task_count_vars[i]);

		if (v && outname_rank_valid(v) && atol(v) > 1) {
			fprintf(
			    stderr,
			    "spyc: warning: this is one of %s tasks (%s) "
			    "and -o '%s' names one file: if each runs spyc, "
			    "each profile replaces the last; %%r in -o "
			    "names each rank's\n",
			    v, task_count_vars[i], o->template);
			return;
		}
	}
}

/*
 * Who spyc runs as, for --output's %r and %h and for the profile: the
 * MPI rank (unless not a number: then %r is refused) and the host name.
 */
static void find_rank_and_host(struct record_opts *o)
{
	o->rank = outname_rank_from_env(&o->rank_var);
	if (o->rank && !outname_rank_valid(o->rank)) {
		if (o->template && outname_uses(o->template, 'r')) {
			fprintf(stderr,
				"spyc: %%r in '%s': %s='%s' is not a rank "
				"number\n",
				o->template, o->rank_var, o->rank);
			exit(EXIT_USAGE);
		}
		o->rank = NULL;
	}
	if (gethostname(o->host, sizeof(o->host) - 1))
		o->host[0] = '\0';
	o->host[sizeof(o->host) - 1] = '\0';
	warn_shared_output(o);
}

/*
 * --output with its escapes expanded into sb, pid standing for %p (0 in
 * launch mode before the program has one: %p is left as it is); o->output
 * then names sb's text.  A bad template is a usage error (exit 64).
 */
static void expand_output_or_die(struct record_opts *o, pid_t pid,
				 struct strbuf *sb)
{
	struct outname_vars v = {pid, o->rank, o->host[0] ? o->host : NULL};
	char why[1024];

	if (outname_expand(o->template, &v, sb, why, sizeof(why))) {
		fprintf(stderr, "spyc: %s\n", why);
		exit(EXIT_USAGE);
	}
	o->output = sb->buf;
}

/*
 * Fail before attaching or launching anything when the profile could
 * not be written at the end: a long run must not be lost to a typo.
 * The name checked is --output expanded (into expanded); in launch mode
 * a %p in it is still "%p", the directory and the rest are checked.
 */
static void check_output_or_die(struct record_opts *o, char *buf, size_t size,
				struct strbuf *expanded)
{
	int ret;

	find_rank_and_host(o);
	if (o->template)
		expand_output_or_die(o, o->s.pid, expanded);
	if (!o->output && o->s.pid)
		default_output(o, o->s.pid, buf, size);
	if (o->output) {
		ret = file_replaceable(o->output);
		if (ret)
			die("cannot write '%s': %s", o->output, strerror(-ret));
		return;
	}
	/* Launch mode: the default name waits for the program's pid. */
	ret = file_replaceable("spyc-launch.json");
	if (ret)
		die("cannot write a profile in the current directory: %s; "
		    "use --output",
		    strerror(-ret));
}

/* argv[0] without its directory: what the summary calls the program. */
static const char *program_name(char **argv)
{
	const char *slash = strrchr(argv[0], '/');

	return slash && slash[1] ? slash + 1 : argv[0];
}

static void print_summary(struct recorder *r)
{
	struct strbuf sb = STRBUF_INIT;
	const struct sampleloop *sl = &r->sl;
	const char *stopped =
	    sl->rt.off || sl->tree ? sampleloop_stopped_note(sl) : NULL;
	uint64_t dropped;

	strbuf_addf(&sb, "spyc: %llu sample%s, ",
		    (unsigned long long)r->samples, r->samples == 1 ? "" : "s");
	dropped = sampleloop_describe_drops(sl, &sb);
	if (r->truncated)
		strbuf_addf(
		    &sb, ", %llu truncated (deeper than --max-depth %zu)",
		    (unsigned long long)r->truncated, r->opts->s.max_depth);
	/* Every sample taken, kept or not, over the time it took. */
	strbuf_addf(&sb, ", %.2f s at ", r->elapsed);
	sampleloop_add_rate(
	    &sb, r->elapsed > 0
		     ? (double)(r->samples + r->empty + dropped) / r->elapsed
		     : 0.0);
	strbuf_addf(&sb, " Hz -> %s", r->opts->output);
	if (r->ended) {
		strbuf_addf(&sb, " (%s", r->ended);
		/* Launch mode: say what happens to the program now. */
		if (r->at_deadline && sampleloop_child_running(&r->sl))
			strbuf_addf(&sb,
				    r->opts->kill_after_duration
					? "; ending %s"
					: "; %s still running",
				    program_name(r->opts->s.argv));
		if (stopped)
			strbuf_addf(&sb, "; %s", stopped);
		if (r->opts->s.native)
			strbuf_addf(&sb, "; %llu native stacks unmerged",
				    (unsigned long long)r->unmerged);
		/*
		 * Stacks that changed faster than they could be read, read
		 * again at a later moment: the profile leans to long calls.
		 */
		if (!r->opts->s.stop && sl->ps.walks &&
		    (double)sl->ps.walks_again >=
			REREAD_NOTE_SHARE * (double)sl->ps.walks)
			strbuf_addf(&sb,
				    "; %.0f%% of stacks read again after "
				    "changing mid-read: short calls may be "
				    "under-counted",
				    100.0 * (double)sl->ps.walks_again /
					(double)sl->ps.walks);
		/* The rate asked could not be kept: say by how much. */
		if (sl->missed) {
			strbuf_addf(&sb, "; asked %.10g Hz, %llu late",
				    r->opts->s.rate,
				    (unsigned long long)sl->missed);
		}
		if (r->opts->s.subprocesses)
			strbuf_addf(&sb, "; %zu process%s sampled",
				    children_sampled(&r->kids),
				    children_sampled(&r->kids) == 1 ? ""
								    : "es");
		strbuf_addch(&sb, ')');
	}
	fprintf(stderr, "%s\n", sb.buf);
	strbuf_release(&sb);
}

/*
 * Said once, before the summary, when so many samples were dropped that
 * record exits 1: how many, what that does to the profile, and why, in
 * the words of the reason most samples were dropped for.
 */
static void drops_warning(const struct recorder *r, uint64_t dropped,
			  uint64_t taken)
{
	const struct sampleloop *sl = &r->sl;
	double share = 100.0 * (double)dropped / (double)taken;
	size_t i, most = DROP_INVALID;
	const char *why;

	for (i = 0; i < DROP_NR; i++)
		if (sl->dropped[i] > sl->dropped[most])
			most = i;
	switch (most) {
	case DROP_DEPTH:
		why = "most were deeper than spyc walks, or looped";
		break;
	case DROP_GONE:
		why = "most were taken as the process exited";
		break;
	default:
		why = r->opts->s.stop
			  ? "most changed while they were read"
			  : "most changed while they were read (generators "
			    "and calls of a few microseconds, often); "
			    "--blocking reads stopped threads";
		break;
	}
	warning("%.1f%% of samples dropped: any function's share may be "
		"off by as many points; %s",
		share, why);
}

/*
 * SPYC_STATS: what sampling cost in system calls, per thread read (the
 * threads of the samples kept; dropped reads cost calls too), how many
 * thread stacks were walked (each walk of each read, dropped or not; not
 * with --subprocesses, whose processes each have their own), and the
 * time spent in process_vm_readv per thread read.
 */
static void print_stats(const struct recorder *r)
{
	double n = r->threads_read ? (double)r->threads_read : 1.0;
	double timed = r->timed_threads ? (double)r->timed_threads : 1.0;
	char walked[64] = "";

	if (!r->opts->s.subprocesses)
		snprintf(walked, sizeof(walked),
			 "; %" PRIu64 " thread stacks walked", r->sl.ps.walks);
	fprintf(stderr,
		"spyc: stats: %" PRIu64 " process_vm_readv, %" PRIu64
		" /proc calls; %" PRIu64
		" threads read: %.2f + %.2f calls per thread read; "
		"%.2f us CPU awake per thread read%s; %.2f us in "
		"process_vm_readv per thread read\n",
		proc_counts.remote_reads, proc_counts.file_calls,
		r->threads_read, (double)proc_counts.remote_reads / n,
		(double)proc_counts.file_calls / n,
		(double)r->awake_cpu_ns / 1e3 / timed, walked,
		(double)proc_counts.remote_read_ns / 1e3 / n);
	/* Its own memory, not the channel's pages (shared, at most 16 MiB). */
	if (r->gpu.on)
		fprintf(stderr,
			"spyc: stats: --gpu: %" PRIu64
			" GPU activities, %zu held for the timeline; RssAnon "
			"%ld KiB\n",
			gpuprof_activities(&r->gp), r->gp.nr_acts,
			proc_self_status_kib("RssAnon:"));
}

/*
 * --gpu --pid: load the agent into the running target.  What keeps the
 * GPU profile from being made (no CUDA in the target, no CUPTI, a
 * failed injection) is said in one line; the CPU profile goes on.
 */
static void gpu_attach_setup(struct recorder *r, pid_t pid, const char *agent)
{
	char msg[512];
	int status;

	if (gpusession_attach(&r->gpu, pid, agent, &status, msg, sizeof(msg)))
		fprintf(stderr, "spyc: --gpu: %s; CPU profile only\n", msg);
}

/* --gpu --pid, with a GPU profile: how the agent came into the target. */
static void gpu_attach_notice(const struct recorder *r, pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;

	if (!r->gpu.attached)
		return;
	gpusession_describe_load(&r->gpu, pid, &sb);
	fprintf(stderr, "spyc: --gpu: %s\n", sb.buf);
	strbuf_release(&sb);
}

/*
 * --gpu, once sampling is over: the last records, the agent's status.
 * Returns the GPU profile to write (attributed to r->stacks), or NULL
 * after saying in one line why there is none.
 */
static const struct gpuprof *gpu_finish(struct recorder *r, const char *who)
{
	struct gpuchan_state st;

	if (!r->gpu.chan.mem)
		return NULL;
	gpusession_stop(&r->gpu, r->sl.rt.pid);
	/* Ranges never popped go on the timeline up to now. */
	gpunvtx_close_open(&r->gp.nvtx, now_ns());
	if (gpuchan_state(&r->gpu.chan, &st)) {
		fprintf(stderr, "spyc: --gpu: the GPU channel was overwritten; "
				"no GPU profile\n");
		return NULL;
	}
	r->gp.lost = st.lost;
	r->gp.zero_time = st.zero_time;
	r->gp.cupti_dropped = st.cupti_dropped;
	r->gp.bad_buffers = st.bad_buffers;
	r->gp.captured_launches = st.captured_launches;
	r->gp.other_processes = st.other_processes;
	r->gp.monotonic_clock = st.clock == GPU_CLOCK_MONOTONIC;
	r->gp.api_records = st.api_records;
	r->gp.nvtx_state = st.nvtx;
	snprintf(r->gp.nvtx_other, sizeof(r->gp.nvtx_other), "%s",
		 r->gpu.nvtx_other ? r->gpu.nvtx_other : "");
	if (st.other_processes)
		fprintf(stderr,
			"spyc: notice: --gpu: %" PRIu64
			" other process%s (the target's children, which "
			"inherit the CUDA driver's setting) started CUDA: "
			"--gpu profiles the GPU work of %s alone\n",
			st.other_processes, st.other_processes == 1 ? "" : "es",
			who);
	switch (st.status) {
	case GPU_AGENT_WAITING:
		fprintf(stderr,
			"spyc: --gpu: %s used no CUDA (the CUDA driver never "
			"loaded spyc's agent); CPU profile only\n",
			who);
		return NULL;
	case GPU_AGENT_RUNNING:
	case GPU_AGENT_STOPPED:
		if (r->gp.last_launch_at >
		    r->gp.last_activity_at + RECORDS_TAKEN_NS) {
			fprintf(stderr,
				"spyc: --gpu: CUPTI handed spyc no record of "
				"the last %.1f s of launches: another CUPTI "
				"client (torch.profiler, Nsight Systems) took "
				"CUPTI's activity buffers%s\n",
				(double)(r->gp.last_launch_at -
					 (r->gp.last_activity_at
					      ? r->gp.last_activity_at
					      : r->gp.t0_ns)) /
				    1e9,
				gpuprof_activities(&r->gp)
				    ? "; the GPU profile ends "
				      "where they stopped"
				    : ": no GPU profile");
			if (!gpuprof_activities(&r->gp))
				return NULL;
		}
		if (!gpuprof_activities(&r->gp)) {
			fprintf(stderr,
				"spyc: --gpu: %s ran no kernel, copy or memset "
				"that CUPTI reported (%" PRIu64
				" records lost); CPU profile only\n",
				who, st.lost);
			return NULL;
		}
		if (!r->gp.launch_off[0] &&
		    gpu_launch_stacks_why(st.launch_stacks))
			snprintf(r->gp.launch_off, sizeof(r->gp.launch_off),
				 "%s", gpu_launch_stacks_why(st.launch_stacks));
		gpuprof_attribute(&r->gp, &r->stacks);
		return &r->gp;
	default:
		fprintf(stderr, "spyc: --gpu: %s: %s (%s); CPU profile only\n",
			who, st.message[0] ? st.message : "no detail",
			gpu_agent_status_name(st.status));
		return NULL;
	}
}

/* What every sampled process's sampler reads, as the options ask. */
static void setup_sampler(struct py_sampler *ps, void *ctx)
{
	const struct record_opts *opts = ctx;

	ps->want_state = !opts->s.idle;
	ps->want_gil = opts->s.gil;
	ps->want_gc = sample_opts_want_gc(&opts->s);
	ps->want_names = 1;
	/* Idle threads' stacks are not kept: do not even read them. */
	/* --gpu reads them for the thread waiting in a backward pass. */
	ps->skip_idle = !opts->s.idle && !opts->s.gil && !opts->s.gpu;
	ps->max_depth = opts->s.max_depth;
	ps->stop_reads = py_stop_reads(opts->s.stop, opts->s.native);
}

/*
 * --subprocesses: start following the tree from the target, which need
 * not be Python itself (a launcher, a shell wrapper).
 */
static void follow_tree_or_die(struct recorder *r)
{
	struct record_opts *opts = r->opts;

	if (opts->s.argv) {
		r->sl.child = launch_program_or_die(opts->s.argv, NULL);
		r->sl.rt.pid = r->sl.child;
	} else {
		if (!proc_exists(opts->s.pid))
			die("no process with pid %d", (int)opts->s.pid);
		r->sl.rt.pid = opts->s.pid;
	}
	children_init(&r->kids, r->sl.rt.pid, setup_sampler, opts);
	children_scan(&r->kids, 1);
	r->sl.tree = &r->kids;
}

/*
 * Whether ch, never found running Python, was seen to run a program that
 * is not (or not one spyc can read), rather than exiting before spyc
 * could tell: a Python program that lives a few milliseconds is gone
 * while its interpreter starts.
 */
static int seen_not_python(const struct child *ch)
{
	return ch->state == CHILD_OTHER || ch->other_looks >= 2;
}

/*
 * --subprocesses: one notice naming the processes that were not
 * sampled because they are not Python (or not one spyc can read), and
 * one naming those that exited before spyc could tell.
 */
static void tree_notice(struct recorder *r)
{
	struct strbuf other = STRBUF_INIT, gone = STRBUF_INIT;
	size_t i, n_other = 0, n_gone = 0;

	for (i = 0; i < r->kids.nr; i++) {
		const struct child *ch = r->kids.list[i];
		struct strbuf *sb;

		/*
		 * One that exits is lost as it goes, and runs no Python
		 * then: it was sampled all the same.
		 */
		if (ch->runs_python || ch->was_python)
			continue;
		if (seen_not_python(ch)) {
			sb = &other;
			n_other++;
		} else {
			sb = &gone;
			n_gone++;
		}
		strbuf_addstr(sb, sb->len ? ", " : "");
		strbuf_addstr(sb, ch->label);
	}
	if (n_other)
		fprintf(stderr,
			"spyc: notice: %zu process%s not Python, not "
			"sampled: %s\n",
			n_other, n_other == 1 ? "" : "es", other.buf);
	if (n_gone)
		fprintf(stderr,
			"spyc: notice: %zu process%s exited before spyc could "
			"tell what %s ran: %s\n",
			n_gone, n_gone == 1 ? "" : "es",
			n_gone == 1 ? "it" : "they", gone.buf);
	strbuf_release(&other);
	strbuf_release(&gone);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts opts;
	struct recorder r;
	struct profile_meta meta;
	struct profile_process process;
	char title[1200], cmdline[1024], outbuf[64], who[64];
	char *agent = NULL;
	struct strbuf output = STRBUF_INIT;
	uint64_t dropped = 0, taken;
	int too_many;
	size_t i;
	int ret = EXIT_OK, ended_by_spyc = 0, code;

	parse_options(&opts, argc, argv);
	check_output_or_die(&opts, outbuf, sizeof(outbuf), &output);
	memset(&r, 0, sizeof(r));
	r.opts = &opts;
	gpuprof_init(&r.gp);
	source_files_init(&r.files);
	gpustack_init(&r.gsa);
	gpusession_init(&r.gpu, gpu_keep, &r);
	r.gpu.warn = 1;
	timeline_init(&r.timeline);
	r.timeline_on = opts.format == FORMAT_CHROME;
	if (opts.s.gpu)
		agent = gpusession_agent_or_die();
	sampleloop_signals();
	if (opts.s.gpu && opts.s.argv)
		gpusession_launch_setup(&r.gpu, agent, 1);
	if (opts.s.subprocesses)
		follow_tree_or_die(&r);
	else if (opts.s.argv)
		r.sl.child = launch_or_die(&r.sl.rt, opts.s.argv, NULL);
	else
		attach_or_die(&r.sl.rt, opts.s.pid);
	if (opts.s.gpu && opts.s.argv)
		gpusession_launched(&r.gpu, r.sl.child);
	else if (opts.s.gpu)
		gpu_attach_setup(&r, opts.s.pid, agent);
	if (opts.s.gil && !opts.s.subprocesses)
		gil_option_or_die(&r.sl.rt, r.sl.child);
	if (!opts.output)
		default_output(&opts, r.sl.rt.pid, outbuf, sizeof(outbuf));
	else if (opts.s.argv && outname_uses(opts.template, 'p'))
		expand_output_or_die(&opts, r.sl.rt.pid, &output);
	target_cwd(r.sl.rt.pid, r.cwd, sizeof(r.cwd));
	proc_cmdline(r.sl.rt.pid, cmdline, sizeof(cmdline));
	sampleloop_init(&r.sl, opts.s.rate);
	setup_sampler(&r.sl.ps, &opts);
	stacks_init(&r.stacks);
	r.one_thread =
	    (opts.format == FORMAT_FOLDED || opts.format == FORMAT_SVG) &&
	    !opts.threads && !opts.s.gpu && !opts.s.subprocesses;
	if (r.one_thread)
		r.the_thread = stacks_thread(&r.stacks, 0, 0, NULL);
	if (opts.s.async)
		async_sampler_or_die(&r.sl.ps, &r.async, &r.sl.rt, r.sl.child,
				     opts.s.idle);
	/* The frames kept, the stand-in for the rest, the native ones. */
	r.max_stack = opts.s.max_depth + 1 + NATIVE_MAX_DEPTH;
	r.scratch = xmalloc(r.max_stack * sizeof(*r.scratch));
	r.merged = xmalloc(r.max_stack * sizeof(*r.merged));
	if (opts.s.native && native_init(&r.nu, &r.sl.rt)) {
		ret = EXIT_FAILED;
		goto out;
	}
	if (opts.s.stop && !opts.s.native &&
	    native_init_stopper(&r.nu, &r.sl.rt)) {
		ret = EXIT_FAILED;
		goto out;
	}

	gpu_hand_layout(&r);
	r.stats = getenv("SPYC_STATS") != NULL;
	proc_counts.timed = r.stats;
	sample_loop(&r);
	if (opts.s.argv)
		snprintf(who, sizeof(who), "%s", program_name(opts.s.argv));
	else
		snprintf(who, sizeof(who), "pid %d", (int)opts.s.pid);

	snprintf(title, sizeof(title), "%s (pid %d)", cmdline,
		 (int)r.sl.rt.pid);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.python_version = r.sl.rt.version;
	meta.rate_hz = opts.s.rate;
	meta.duration_s = r.elapsed;
	meta.thread_prefix = opts.threads;
	meta.gpu = gpu_finish(&r, who);
	process.pid = r.sl.rt.pid;
	process.command = cmdline;
	process.host = opts.host[0] ? opts.host : NULL;
	process.rank = opts.rank;
	process.rank_var = opts.rank_var;
	meta.process = &process;
	meta.pid = (long)r.sl.rt.pid;
	meta.start_unix_ns = r.start_unix_ns;
	meta.idle = opts.s.idle;
	meta.source_roots = &r.roots;
	meta.source_files = &r.files;
	if (opts.format == FORMAT_CHROME)
		meta.timeline = &r.timeline;
	if (output_write(opts.output, opts.format, &r.stacks, &meta)) {
		ret = EXIT_FAILED;
		goto out;
	}
	if (meta.gpu) {
		struct strbuf sb = STRBUF_INIT;

		gpuprof_summary(meta.gpu, GPU_SUMMARY_ROWS, &sb);
		fputs(sb.buf, stderr);
		strbuf_release(&sb);
		gpu_attach_notice(&r, opts.s.pid);
	}
	if (opts.s.subprocesses)
		tree_notice(&r);
	if (r.stats)
		print_stats(&r);
	for (i = 0; i < DROP_NR; i++)
		dropped += r.sl.dropped[i];
	/* Following several processes, each one's read counts. */
	if (opts.s.subprocesses)
		taken = r.sl.tree_reads;
	else
		taken = r.samples;
	too_many = (double)dropped > DROP_TOLERANCE * (double)(taken + dropped);
	if (too_many)
		drops_warning(&r, dropped, taken + dropped);
	print_summary(&r);
	if (!r.stacks.total_samples || too_many)
		ret = EXIT_DATA_LOST;
out:
	if (opts.kill_after_duration && r.at_deadline)
		ended_by_spyc = sampleloop_end_child(&r.sl, KILL_GRACE_NS);
	/* In launch mode spyc's life encloses the child's. */
	sampleloop_finish(&r.sl, sampleloop_stop);
	/*
	 * As time(1) and perf stat do: the program's own status, which
	 * says more than spyc's 0 or 1, unless spyc failed or ended it.
	 */
	code = sampleloop_child_exit_code(&r.sl);
	if (ret != EXIT_FAILED && !ended_by_spyc && code >= 0)
		ret = code;
	free(r.scratch);
	source_roots_release(&r.roots);
	source_files_release(&r.files);
	free(r.merged);
	if (opts.s.stop)
		native_release(&r.nu);
	stacks_release(&r.stacks);
	sampleloop_release(&r.sl);
	pyasync_release(&r.async);
	children_release(&r.kids);
	gpusession_release(&r.gpu);
	gpuprof_release(&r.gp);
	py_sample_release(&r.launch_sample);
	free(r.launch_frames);
	timeline_release(&r.timeline);
	free(agent);
	strbuf_release(&output);
	return ret;
}
