/* SPDX-License-Identifier: MIT */
/* spyc top: a live table of the functions a process is running, like top. */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/children.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "sys/native.h"
#include "py/framename.h"
#include "gpu/gpusession.h"
#include "gpu/gputop.h"
#include "sys/proc.h"
#include "py/pyasync.h"
#include "py/pysample.h"
#include "cmd/sampleloop.h"
#include "ui/toptable.h"
#include "ui/topview.h"
#include "util.h"

#define DEFAULT_INTERVAL_S 1.0
#define MAX_INTERVAL_S 86400.0
/* The recent view: a sample's weight halves every this many seconds. */
#define HALF_LIFE_S 2.0
/* How often keys are read (nanoseconds): a tenth of a second feels slow. */
#define KEY_POLL_NS 20000000ULL
/* While paused, how often to look whether the target is still there. */
#define PAUSED_CHECK_NS 200000000ULL
/* A sample stands for at most this long (seconds) after a stall. */
#define MAX_WEIGHT_S 1.0
/* --gpu: how often the channel is read, and at most how many records. */
#define GPU_POLL_NS 10000000ULL
#define GPU_DRAIN_PER_TICK (64 * GPUSESSION_BATCH)
/*
 * How late an activity's record reaches top after it ran: the agent
 * asks CUPTI for its records every 200 ms (agent/agent.c), then the
 * next drain.  A window's busy time is that of its interval this long
 * before, so that the records of the interval are in.
 */
#define GPU_RECORD_LAG_NS 300000000ULL
static const char usage_text[] =
    "usage: spyc top [options] --pid PID\n"
    "       spyc top [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Show the functions a process is running in a full-screen table that\n"
    "refreshes, like top: share of samples in which each one is running\n"
    "(own) and on the stack (total), and for how long.  When standard\n"
    "output is not a terminal, print a plain-text snapshot per interval.\n"
    "\n"
    "  -p, --pid PID         watch this process\n"
    "  -r, --rate HZ         samples per second (default 100)\n"
    "      --interval SECS   refresh every SECS seconds (default 1)\n"
    "  -i, --idle            count threads that are sleeping or blocked too\n"
    "                        (default: only threads running on a CPU)\n"
    "  -g, --gil             count only the thread holding the GIL (refused\n"
    "                        for a free-threaded build, which has none)\n"
    "      --native          merge native frames in, as record does (stops\n"
    "                        each sampled thread briefly)\n"
    "      --blocking        stop each sampled thread while it is read\n"
    "      --nonblocking     never stop the target (the default without\n"
    "                        --native)\n"
    "      --max-depth N     Python frames kept per stack (default 4096)\n"
    "      --async           asyncio task stacks (CPython 3.14+), as record\n"
    "                        --async makes them\n"
    "      --no-gc           no '<GC>' row for time in the cycle collector\n"
    "  -s, --subprocesses    also the target's descendants as they start,\n"
    "                        as record --subprocesses follows them; t\n"
    "                        shows a row per process and thread, labelled\n"
    "                        PID/THREAD, then per process (Python frames\n"
    "                        only)\n"
    "      --gpu             also the CUDA kernels, copies and memsets of\n"
    "                        each interval by GPU time, and how busy the\n"
    "                        GPU was (CUPTI, through spyc's agent, as\n"
    "                        record --gpu)\n"
    "      --program-output FILE\n"
    "                        with -- PROGRAM: where its standard output and\n"
    "                        error go (default spyc-PID.out, PID the\n"
    "                        program's, in the current directory)\n"
    "  -h, --help            this help\n"
    "\n"
    "keys: 1-5 sort by a column, < > move the sort column, l per line or\n"
    "per function, t per thread, r recent or whole run, p or space pause\n"
    "sampling, q quit\n"
    "\n"
    "exit codes: 0 ok (quit, interrupted, or the target exited), 2 failed,\n"
    "64 usage error\n";

struct top_opts {
	struct sample_opts s;	    /* the target, and how to read it */
	const char *program_output; /* --program-output, or NULL */
	double interval;
};

/* Why the main loop ended. */
enum top_end {
	END_QUIT,
	END_SIGNAL,
	END_TARGET,
	END_OUTPUT, /* standard output failed (plain-text mode) */
};

struct top {
	const struct top_opts *opts;
	struct sampleloop sl;
	struct toptable tt;
	struct top_view view;
	struct top_snapshot snap;
	uint32_t *sites;	     /* one stack's site ids, innermost first */
	struct pyasync async;	     /* --async */
	struct native_unwinder nu;   /* --native */
	struct merged_frame *merged; /* one merged stack, root first */
	size_t max_stack;	     /* longest: Python and native frames */
	char cwd[4096];
	const char *cwd_now; /* of the process whose stacks are added */
	char cmdline[1024];
	/* --subprocesses: the tree, and the processes read cleanly now */
	struct children kids;
	const struct child **fresh;
	size_t nr_fresh, alloc_fresh;
	unsigned processes; /* Python processes in the last sample */
	/* Launch mode: the file the program writes to, else empty. */
	struct strbuf program_output;
	struct topscreen screen; /* its screen NULL in plain-text mode */
	int paused;
	uint64_t start;	   /* when sampling started (now_ns()) */
	uint64_t prev;	   /* the last sample's time, 0 after a pause */
	double max_weight; /* seconds a sample may stand for */
	unsigned threads;  /* Python threads in the last sample */
	/*
	 * Samples a second, from the samples taken since the one that
	 * started the window: counting samples per refresh instead would
	 * say 1 then 0 at 0.5 Hz.  Negative until two were taken.
	 */
	uint64_t window_first, window_last; /* now_ns() of the ends, 0: none */
	uint64_t window_attempts;	    /* after the first */
	double achieved;
	uint64_t shown;	    /* refreshes so far */
	uint64_t snapshots; /* plain-text snapshots printed */
	int output_errno;
	/* --gpu: the agent, what it reported, the window being filled */
	struct gpusession gpu;
	struct gputop gt;
	uint64_t gpu_window_start; /* now_ns() */
	struct gpuchan_state gpu_state;
	int gpu_state_ok;   /* gpu_state was read */
	int gpu_stopped;    /* the agent was told to stop */
	int gpu_rows_seen;  /* the most rows a GPU view had, for the screen */
	char gpu_note[640]; /* why the agent does not collect, or "" */
	struct strbuf gpu_how; /* how the agent came into the target */
	const char *gpu_way;   /* the same in a word or two, for the screen */
	char who[64];	       /* "pid N", or the launched program's name */
};

static void parse_options(struct top_opts *o, int argc, char **argv)
{
	enum { OPT_INTERVAL = OPT_COMMAND, OPT_PROGRAM_OUTPUT };
	static const struct option options[] = {
	    SAMPLE_OPTIONS,
	    SAMPLE_RATE_OPTIONS,
	    {"interval", required_argument, NULL, OPT_INTERVAL},
	    {"program-output", required_argument, NULL, OPT_PROGRAM_OUTPUT},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	sample_opts_init(&o->s);
	o->interval = DEFAULT_INTERVAL_S;
	while ((c = getopt_long(argc, argv, "+p:r:igsh", options, NULL)) !=
	       -1) {
		if (sample_option(&o->s, c, optarg))
			continue;
		switch (c) {
		case OPT_INTERVAL:
			o->interval = parse_positive_arg("--interval", optarg,
							 MAX_INTERVAL_S);
			break;
		case OPT_PROGRAM_OUTPUT:
			o->program_output = optarg;
			break;
		default:
			usage_exit(c, usage_text);
		}
	}
	sample_opts_finish(&o->s, argc, argv, optind, "top",
			   SAMPLE_LAUNCH | SAMPLE_TASK_STACKS);
	if (o->program_output && !o->s.argv) {
		fprintf(stderr, "spyc: --program-output needs a program to "
				"launch (-- PROGRAM)\n");
		exit(EXIT_USAGE);
	}
	if (o->program_output && !*o->program_output) {
		fprintf(stderr, "spyc: invalid --program-output ''\n");
		exit(EXIT_USAGE);
	}
}

static uint32_t make_site(void *ctx, const struct pycode *code, int line)
{
	struct top *t = ctx;

	return toptable_site(&t->tt, code->name,
			     short_filename(code->filename, t->cwd_now), line,
			     code->firstlineno);
}

/* Makes the site of a native frame, for native_thread_ids. */
static uint32_t make_native_site(void *ctx, struct native_sym *sym)
{
	struct top *t = ctx;

	/* Per function, a row shows where it starts, as Python's do. */
	native_describe_function(&t->nu, sym);
	return toptable_native_site(
	    &t->tt, sym->name, sym->file ? sym->file : "",
	    sym->file ? sym->line : 0, sym->func_file, sym->func_line);
}

/* Thread th of s into t->sites, innermost first; returns its depth. */
static size_t stack_sites(struct top *t, const struct py_sample *s,
			  const struct py_thread *th)
{
	const struct frame_namer fn = {make_site, make_native_site, t};
	size_t j, n;
	int unmerged;

	n = native_thread_ids(t->opts->s.native ? &t->nu : NULL, s, th,
			      t->merged, t->max_stack, &fn, t->sites,
			      &unmerged);
	for (j = 0; j < n / 2; j++) {
		uint32_t root = t->sites[j];

		t->sites[j] = t->sites[n - 1 - j];
		t->sites[n - 1 - j] = root;
	}
	return n;
}

/* What the header counts of sample s: its threads' states, the GIL. */
static void count_threads(const struct py_sample *s,
			  struct top_sample_info *info)
{
	size_t i;

	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *th = &s->threads[i];

		/* A waiting task's stack (--async) is no thread of its own. */
		if (th->is_task)
			continue;
		info->threads++;
		if (th->state != THREAD_UNKNOWN) {
			info->known++;
			if (th->state != THREAD_RUNNING)
				info->idle++;
		}
		if (th->holds_gil)
			info->gil_held = 1;
	}
}

/*
 * The stacks of sample s, of the process labelled process (or NULL),
 * taken at now and standing for the weight_ns before it.
 */
static void add_stacks(struct top *t, const struct py_sample *s,
		       const char *process, const char *cwd, uint64_t now,
		       uint64_t weight_ns)
{
	size_t i, n;

	t->cwd_now = cwd;
	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *th = &s->threads[i];

		if (!th->depth ||
		    !thread_wanted(th, t->opts->s.idle, t->opts->s.gil))
			continue;
		n = stack_sites(t, s, th);
		toptable_add(&t->tt,
			     toptable_thread_in(&t->tt, process, th->ident,
						th->tid,
						th->name[0] ? th->name : NULL),
			     t->sites, n);
		/* --gpu: what it ran while the GPU was idle, if it launches. */
		if (t->opts->s.gpu && n)
			gputop_tick(&t->gt, now, weight_ns, th->tid,
				    t->sites[0]);
	}
}

/* The clean reads of this round: the target's, or the tree's. */
static void add_sample(struct top *t, uint64_t now)
{
	struct top_sample_info info;
	double weight;
	size_t i;

	memset(&info, 0, sizeof(info));
	if (t->opts->s.subprocesses)
		for (i = 0; i < t->nr_fresh; i++)
			count_threads(&t->fresh[i]->sample, &info);
	else
		count_threads(&t->sl.sample, &info);
	/* Time since the last sample, dropped ones included. */
	weight = t->prev ? (double)(now - t->prev) / 1e9
			 : (double)t->sl.interval / 1e9;
	if (weight > t->max_weight)
		weight = t->max_weight;
	t->prev = now;
	t->threads = info.threads;
	toptable_sample(&t->tt, (double)(now - t->start) / 1e9, weight, &info);
	if (!t->opts->s.subprocesses) {
		add_stacks(t, &t->sl.sample, NULL, t->cwd, now,
			   (uint64_t)(weight * 1e9));
		return;
	}
	t->processes = (unsigned)t->nr_fresh;
	for (i = 0; i < t->nr_fresh; i++) {
		char pid[32];

		/* The table's thread column is narrow: PID/THREAD. */
		snprintf(pid, sizeof(pid), "%d", (int)t->fresh[i]->pid);
		add_stacks(t, &t->fresh[i]->sample, pid, t->fresh[i]->cwd, now,
			   (uint64_t)(weight * 1e9));
	}
}

/* --subprocesses: note a process read cleanly in this round. */
static void note_fresh(void *ctx, const struct child *ch)
{
	struct top *t = ctx;

	ALLOC_GROW(t->fresh, t->nr_fresh + 1, t->alloc_fresh);
	t->fresh[t->nr_fresh++] = ch;
}

/* Take this round's sample: of the target, or of every process followed. */
static enum drop_reason take(struct top *t)
{
	if (!t->opts->s.subprocesses)
		return sampleloop_take(&t->sl);
	t->nr_fresh = 0;
	return sampleloop_take_tree(&t->sl, note_fresh, t);
}

/* --- the GPU section (--gpu) --- */

/* One record from the channel; none counts while sampling is paused. */
static void gpu_record(void *ctx, const struct gpu_record *rec)
{
	struct top *t = ctx;

	if (!t->paused)
		gputop_add(&t->gt, rec);
}

/*
 * At each refresh: the window that ends now becomes what the section
 * shows (unless paused: it stays as it was), and the agent's status
 * and count of records lost are read again.
 */
static void gpu_refresh(struct top *t, uint64_t now)
{
	size_t n;

	if (!t->opts->s.gpu)
		return;
	gpusession_drain(&t->gpu, GPU_DRAIN_PER_TICK);
	if (!t->paused) {
		/* Busy time of the interval records have come for. */
		gputop_close_window(
		    &t->gt,
		    t->gpu_window_start > GPU_RECORD_LAG_NS
			? t->gpu_window_start - GPU_RECORD_LAG_NS
			: 0,
		    now > GPU_RECORD_LAG_NS ? now - GPU_RECORD_LAG_NS : 0);
		t->gpu_window_start = now;
	}
	n = t->gt.window.nr_rows > t->gt.run.nr_rows ? t->gt.window.nr_rows
						     : t->gt.run.nr_rows;
	if ((int)n > t->gpu_rows_seen)
		t->gpu_rows_seen = (int)n;
	if (t->gpu.chan.mem)
		t->gpu_state_ok = !gpuchan_state(&t->gpu.chan, &t->gpu_state);
}

/*
 * Whether the agent collects (the section then has a table); if not, sb
 * gets the one line that says why.
 */
static int gpu_collecting(const struct top *t, struct strbuf *sb)
{
	const struct gpuchan_state *st = &t->gpu_state;

	if (t->gpu_note[0]) {
		strbuf_addstr(sb, t->gpu_note);
		return 0;
	}
	if (t->gpu.broken || !t->gpu_state_ok) {
		strbuf_addf(sb,
			    "the GPU channel was overwritten (%s); GPU records "
			    "from here on are lost",
			    t->gpu.broken ? t->gpu.broken
					  : gpuchan_invalid(&t->gpu.chan));
		return 0;
	}
	switch (st->status) {
	case GPU_AGENT_RUNNING:
	case GPU_AGENT_STOPPED:
		return 1;
	case GPU_AGENT_WAITING:
		strbuf_addf(sb,
			    "%s used no CUDA yet (the CUDA driver has not "
			    "loaded spyc's agent)",
			    t->who);
		return 0;
	case GPU_AGENT_STARTING:
		strbuf_addf(sb, "%s: spyc's agent is starting", t->who);
		return 0;
	default:
		strbuf_addf(sb, "%s: %s (%s)", t->who,
			    st->message[0] ? st->message : "no detail",
			    gpu_agent_status_name(st->status));
		return 0;
	}
}

/* The target's Python version; following a tree, the first one's. */
static const char *python_version(const struct top *t)
{
	size_t i;

	if (!t->opts->s.subprocesses)
		return t->sl.rt.version;
	for (i = 0; i < t->kids.nr; i++)
		if (t->kids.list[i]->runs_python)
			return t->kids.list[i]->rt.version;
	return "n/a";
}

/* --- the loop --- */

static void count_attempt(struct top *t, uint64_t now)
{
	if (!t->window_first) {
		t->window_first = now;
		return;
	}
	t->window_attempts++;
	t->window_last = now;
}

/* The words a model points to. */
struct model_words {
	struct strbuf errors, rate, why;
};

/*
 * What the views show now, into m: the table's rows (snap), the header,
 * the GPU section; its words go into w.
 */
static void fill_model(struct top *t, struct top_model *m,
		       struct model_words *w)
{
	toptable_snapshot(&t->tt, &t->view, &t->snap);
	memset(m, 0, sizeof(*m));
	m->pid = (int)t->sl.rt.pid;
	m->cmdline = t->cmdline;
	m->program_output =
	    t->program_output.len ? t->program_output.buf : NULL;
	m->python = python_version(t);
	m->free_threaded = t->sl.rt.free_threaded;
	m->subprocesses = t->opts->s.subprocesses;
	m->processes = t->processes;
	m->threads = t->threads;
	m->paused = t->paused;
	m->elapsed = (double)(now_ns() - t->start) / 1e9;
	m->tt = &t->tt;
	m->view = &t->view;
	m->snap = &t->snap;
	sampleloop_describe_drops(&t->sl, &w->errors);
	m->errors = w->errors.buf;
	if (t->achieved >= 0) {
		sampleloop_add_rate(&w->rate, t->achieved);
		m->rate = w->rate.buf;
	}
	if (!t->opts->s.gpu)
		return;
	m->gpu = 1;
	m->gpu_collecting = gpu_collecting(t, &w->why);
	m->gpu_why = w->why.buf;
	m->gpu_how = t->gpu_how.buf;
	m->gpu_way = t->gpu_way;
	m->gpu_window = &t->gt.window;
	m->gpu_shown = t->view.recent ? &t->gt.window : &t->gt.run;
	m->gpu_lost_known = t->gpu_state_ok;
	m->gpu_lost = t->gpu_state.lost;
	m->gpu_rows_seen = t->gpu_rows_seen;
}

/* Print a snapshot, or draw the screen. */
static int present(struct top *t)
{
	struct model_words w = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT};
	struct top_model m;
	int ret = 0;

	fill_model(t, &m, &w);
	if (t->screen.screen) {
		topscreen_draw(&t->screen, &m);
	} else if (toptext_print(stdout, &m, ++t->snapshots)) {
		t->output_errno = errno;
		ret = -1;
	}
	strbuf_release(&w.errors);
	strbuf_release(&w.rate);
	strbuf_release(&w.why);
	return ret;
}

/* Pause sampling, or resume it. */
static void pause_or_resume(struct top *t)
{
	t->paused = !t->paused;
	t->prev = 0;
	/* A pause is no sampling time. */
	t->window_first = t->window_attempts = 0;
	/* Nor GPU time: the window starts again on resume. */
	gputop_reset_window(&t->gt);
	t->gpu_window_start = now_ns();
}

/* Act on the keys typed; returns 1 to quit, else 0 (redrawn if need be). */
static int read_keys(struct top *t)
{
	int keys =
	    topscreen_keys(&t->screen, &t->view, t->opts->s.subprocesses);

	if (keys & TOPKEY_QUIT)
		return 1;
	if (keys & TOPKEY_PAUSE)
		pause_or_resume(t);
	if (keys & TOPKEY_CHANGED)
		present(t);
	return 0;
}

static int show(struct top *t, uint64_t now)
{
	double secs = (double)(t->window_last - t->window_first) / 1e9;

	/* A short window says little: keep the previous rate, if any. */
	if (t->window_attempts && secs > 0 &&
	    (secs >= t->opts->interval / 2 || t->achieved < 0)) {
		t->achieved = (double)t->window_attempts / secs;
		t->window_first = t->window_last;
		t->window_attempts = 0;
	}
	t->shown++;
	gpu_refresh(t, now);
	return present(t);
}

static enum top_end run(struct top *t)
{
	uint64_t refresh = (uint64_t)(t->opts->interval * 1e9);
	uint64_t now = now_ns();
	uint64_t next_show = now + refresh, next_keys = now, next_check = now;
	uint64_t next_gpu = now;

	if (!refresh)
		refresh = 1;
	for (;;) {
		uint64_t deadline;

		if (sampleloop_stop)
			return END_SIGNAL;
		now = now_ns();
		if (!t->paused && now >= t->sl.next) {
			enum drop_reason why = take(t);

			if (why == DROP_GONE)
				return END_TARGET;
			/* Its slot's start: a sample is at a random moment of
			 * it. */
			count_attempt(t, t->sl.slot);
			if (why == DROP_NONE && t->opts->s.stop)
				why = sampleloop_stop_wanted(&t->sl, &t->nu,
							     t->opts->s.idle,
							     t->opts->s.gil);
			if (why == DROP_NONE)
				add_sample(t, now_ns());
			sampleloop_schedule(&t->sl);
		} else if (t->paused && now >= next_check) {
			if (sampleloop_target_gone(&t->sl))
				return END_TARGET;
			next_check = now + PAUSED_CHECK_NS;
		}
		/* Read while paused too, so that the ring never fills. */
		if (t->gpu.on && now >= next_gpu) {
			gpusession_drain(&t->gpu, GPU_DRAIN_PER_TICK);
			next_gpu = now + GPU_POLL_NS;
		}
		if (t->screen.screen && now >= next_keys) {
			if (read_keys(t))
				return END_QUIT;
			next_keys = now + KEY_POLL_NS;
		}
		if (now >= next_show) {
			if (show(t, now))
				return END_OUTPUT;
			next_show += refresh;
			if (next_show <= now)
				next_show = now + refresh;
		}
		deadline = next_show;
		if (!t->paused && t->sl.next < deadline)
			deadline = t->sl.next;
		if (t->paused && next_check < deadline)
			deadline = next_check;
		if (t->screen.screen && next_keys < deadline)
			deadline = next_keys;
		if (t->gpu.on && next_gpu < deadline)
			deadline = next_gpu;
		if (sampleloop_wait(&t->sl, deadline))
			return END_TARGET;
	}
}

/*
 * --gpu: whom the GPU section names, and, with --pid, the agent loaded
 * into the target (launch mode: the program's environment already names
 * it).  What keeps the agent from collecting is the section's one line.
 */
static void gpu_setup(struct top *t, const char *agent)
{
	pid_t pid = t->sl.rt.pid;
	char msg[512];
	int status;

	if (t->opts->s.argv) {
		const char *slash = strrchr(t->opts->s.argv[0], '/');

		snprintf(t->who, sizeof(t->who), "%s",
			 slash && slash[1] ? slash + 1 : t->opts->s.argv[0]);
		strbuf_addstr(&t->gpu_how, "agent loaded by the CUDA driver "
					   "(CUDA_INJECTION64_PATH)");
		t->gpu_way = "CUDA_INJECTION64_PATH";
	} else {
		snprintf(t->who, sizeof(t->who), "pid %d", (int)pid);
		if (!gpusession_attach(&t->gpu, pid, agent, &status, msg,
				       sizeof(msg))) {
			gpusession_describe_load(&t->gpu, pid, &t->gpu_how);
			t->gpu_way = gpu_load_way_name(t->gpu.how.way);
		} else if (status == GPU_AGENT_NO_CUDA)
			snprintf(t->gpu_note, sizeof(t->gpu_note),
				 "pid %d used no CUDA yet when spyc's agent "
				 "was loaded (through %s); start top again "
				 "to try again",
				 (int)pid, gpu_load_way_name(t->gpu.how.way));
		else
			snprintf(t->gpu_note, sizeof(t->gpu_note), "%s", msg);
	}
	if (t->gpu.chan.mem)
		t->gpu_state_ok = !gpuchan_state(&t->gpu.chan, &t->gpu_state);
}

/*
 * --gpu, as top ends: have the agent stop and flush, and wait for it
 * (at most 2 s), so that nothing of spyc's keeps running in the target.
 */
static void gpu_stop(struct top *t)
{
	if (!t->opts->s.gpu || t->gpu_stopped)
		return;
	gpusession_stop(&t->gpu, t->sl.rt.pid);
	t->gpu_stopped = 1;
}

/* What every sampled process's sampler reads, as the options ask. */
static void setup_sampler(struct py_sampler *ps, void *ctx)
{
	const struct top_opts *opts = ctx;

	/* The header's %idle and %GIL need both, whatever the options. */
	ps->want_state = 1;
	ps->want_names = 1;
	ps->want_gil = 1;
	ps->want_gc = sample_opts_want_gc(&opts->s);
	ps->max_depth = opts->s.max_depth;
	/* Idle threads count in the header, but their stacks do not. */
	ps->skip_idle = !opts->s.idle && !opts->s.gil;
	ps->stop_reads = py_stop_reads(opts->s.stop, opts->s.native);
}

int cmd_top(int argc, char **argv)
{
	struct top_opts opts;
	struct top t;
	enum top_end end = END_QUIT;
	int ret = EXIT_OK, stop = 0;
	char *agent = NULL;

	/* Function and file names are UTF-8; so is the screen, mostly. */
	setlocale(LC_ALL, "");
	parse_options(&opts, argc, argv);
	memset(&t, 0, sizeof(t));
	t.opts = &opts;
	t.view.recent = 1;
	t.view.sort = TOP_COL_OWN_TIME;
	strbuf_init(&t.program_output, 0);
	strbuf_init(&t.gpu_how, 0);
	gputop_init(&t.gt);
	gpusession_init(&t.gpu, gpu_record, &t);
	/* Refused before anything is launched or attached. */
	if (opts.s.gpu)
		agent = gpusession_agent_or_die();
	sampleloop_signals();
	if (opts.s.argv && opts.s.gpu)
		/* top shows no NVTX range: NVTX is left off. */
		gpusession_launch_setup(&t.gpu, agent, 0);
	if (opts.s.argv) {
		/* The program's output would scroll the table away. */
		if (opts.program_output)
			strbuf_addstr(&t.program_output, opts.program_output);
		if (opts.s.subprocesses) {
			t.sl.child = launch_program_or_die(opts.s.argv,
							   &t.program_output);
			t.sl.rt.pid = t.sl.child;
		} else {
			t.sl.child = launch_or_die(&t.sl.rt, opts.s.argv,
						   &t.program_output);
		}
		if (opts.s.gpu)
			gpusession_launched(&t.gpu, t.sl.child);
	} else if (opts.s.subprocesses) {
		if (!proc_exists(opts.s.pid))
			die("no process with pid %d", (int)opts.s.pid);
		t.sl.rt.pid = opts.s.pid;
	} else {
		attach_or_die(&t.sl.rt, opts.s.pid);
	}
	if (opts.s.subprocesses) {
		children_init(&t.kids, t.sl.rt.pid, setup_sampler, &opts);
		children_scan(&t.kids, 1);
		t.sl.tree = &t.kids;
	}
	if (opts.s.gil && !opts.s.subprocesses)
		gil_option_or_die(&t.sl.rt, t.sl.child);
	target_cwd(t.sl.rt.pid, t.cwd, sizeof(t.cwd));
	proc_cmdline(t.sl.rt.pid, t.cmdline, sizeof(t.cmdline));
	toptable_init(&t.tt, HALF_LIFE_S);
	/* The frames kept, the stand-in for the rest, the native ones. */
	t.max_stack = opts.s.max_depth + 1 + NATIVE_MAX_DEPTH;
	t.sites = xmalloc(t.max_stack * sizeof(*t.sites));
	t.merged = xmalloc(t.max_stack * sizeof(*t.merged));
	if (opts.s.native && native_init(&t.nu, &t.sl.rt))
		return EXIT_FAILED;
	if (opts.s.stop && !opts.s.native &&
	    native_init_stopper(&t.nu, &t.sl.rt))
		return EXIT_FAILED;
	sampleloop_init(&t.sl, opts.s.rate);
	setup_sampler(&t.sl.ps, &opts);
	if (opts.s.async)
		async_sampler_or_die(&t.sl.ps, &t.async, &t.sl.rt, t.sl.child,
				     opts.s.idle);
	t.max_weight =
	    2.0 / opts.s.rate > MAX_WEIGHT_S ? 2.0 / opts.s.rate : MAX_WEIGHT_S;
	/* Last: no early return leaves the agent collecting in the target. */
	if (opts.s.gpu)
		gpu_setup(&t, agent);
	if (isatty(STDOUT_FILENO)) {
		if (topscreen_open(&t.screen)) {
			ret = EXIT_FAILED;
			end = END_QUIT;
			goto out;
		}
	} else {
		/* A reader that goes away (| head) ends top like q. */
		signal(SIGPIPE, SIG_IGN);
	}
	t.start = now_ns();
	t.gpu_window_start = t.start;
	t.achieved = -1;
	end = run(&t);
	/* Before the last snapshot: the agent's flush is in it. */
	gpu_stop(&t);
	/* The last, partial interval too, so that a short run shows. */
	if (!t.screen.screen && end != END_OUTPUT && t.tt.samples) {
		uint64_t now = now_ns();

		if (show(&t, now))
			end = END_OUTPUT;
	}
out:
	gpu_stop(&t);
	topscreen_close(&t.screen);
	if (end == END_TARGET)
		fprintf(stderr, "spyc: pid %d %s\n", (int)t.sl.rt.pid,
			t.sl.execd ? "exec'd another program" : "exited");
	if (end == END_OUTPUT && t.output_errno != EPIPE) {
		fprintf(stderr, "spyc: cannot write to standard output: %s\n",
			strerror(t.output_errno));
		ret = EXIT_FAILED;
	}
	/*
	 * spyc's life encloses a launched program's: pass a signal on, and
	 * end the program when the user quits or it became another one.
	 */
	if (end == END_SIGNAL)
		stop = sampleloop_stop;
	else if (end != END_TARGET || t.sl.execd)
		stop = SIGTERM;
	sampleloop_finish(&t.sl, stop);
	free(t.sites);
	free(t.merged);
	if (opts.s.stop)
		native_release(&t.nu);
	top_snapshot_release(&t.snap);
	toptable_release(&t.tt);
	strbuf_release(&t.program_output);
	sampleloop_release(&t.sl);
	pyasync_release(&t.async);
	children_release(&t.kids);
	free(t.fresh);
	gpusession_release(&t.gpu);
	gputop_release(&t.gt);
	strbuf_release(&t.gpu_how);
	free(agent);
	return ret;
}
