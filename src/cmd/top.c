/* SPDX-License-Identifier: MIT */
/* spyc top: a live table of the functions a process is running, like top. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

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
/* Plain-text snapshots list at most this many rows. */
#define PLAIN_MAX_ROWS 50
/* The table's columns, in characters. */
#define PCT_WIDTH 6
#define TIME_WIDTH 9
#define THREAD_WIDTH 14
/*
 * Screen lines above the table's rows (one more for the output line in
 * launch mode), and below them (the key help).
 */
#define HEADER_LINES 6
#define FOOTER_LINES 1
/* Wide characters kept of a name or file name on screen. */
#define WIDE_MAX 512
/*
 * --gpu: rows of the GPU section on screen and in plain text; rows the
 * CPU table keeps before the GPU section gives up its own; how often
 * the channel is read, and at most how many records at a time.
 */
#define GPU_SCREEN_ROWS 5
#define GPU_PLAIN_ROWS 20
#define MIN_CPU_ROWS 3
#define GPU_POLL_NS 10000000ULL
#define GPU_DRAIN_PER_TICK (64 * GPUSESSION_BATCH)
/*
 * How late an activity's record reaches top after it ran: the agent
 * asks CUPTI for its records every 200 ms (agent/agent.c), then the
 * next drain.  A window's busy time is that of its interval this long
 * before, so that the records of the interval are in.
 */
#define GPU_RECORD_LAG_NS 300000000ULL
/* The GPU table's columns, in characters. */
#define GPU_PCT_WIDTH 8
#define GPU_TIME_WIDTH 10
#define GPU_CALLS_WIDTH 8

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

static const char help_line[] = "1-5 </> sort  l line/function  t threads  "
				"r recent/whole  p pause  q quit";

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
	int header_lines; /* screen lines above the table's rows */
	SCREEN *screen;	  /* NULL in plain-text mode */
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
		add_stacks(t, &t->fresh[i]->sample, pid, t->fresh[i]->cwd,
			   now, (uint64_t)(weight * 1e9));
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

static void format_time(char *buf, size_t size, double seconds)
{
	if (seconds < 100000.0)
		snprintf(buf, size, "%.2fs", seconds);
	else
		snprintf(buf, size, "%.0fs", seconds);
}

static void format_pct(char *buf, size_t size, double pct)
{
	if (pct < 0)
		snprintf(buf, size, "n/a");
	else
		snprintf(buf, size, "%.1f%%", pct);
}

/* The header's GIL share: "none" for a free-threaded target, no GIL. */
static void format_gil(const struct top *t, char *buf, size_t size)
{
	if (t->sl.rt.free_threaded)
		snprintf(buf, size, "none");
	else
		format_pct(buf, size, t->snap.gil_pct);
}

static void thread_label(const struct top *t, uint32_t thread, char *buf,
			 size_t size)
{
	const struct stack_thread *th;

	if (thread >= t->tt.names.nr_threads) {
		snprintf(buf, size, "all");
		return;
	}
	th = &t->tt.names.threads[thread];
	/* Per process: the process alone (its pid). */
	if (t->view.per_thread == TOP_PER_PROCESS && th->process) {
		snprintf(buf, size, "%s", th->process);
		return;
	}
	/* --subprocesses: PID/ before it */
	if (th->process) {
		int n = snprintf(buf, size, "%s/", th->process);

		if (n < 0 || (size_t)n >= size)
			return;
		buf += n;
		size -= (size_t)n;
	}
	if (th->name)
		snprintf(buf, size, "%s", th->name);
	else if (th->tid)
		snprintf(buf, size, "tid %ld", th->tid);
	else
		snprintf(buf, size, "0x%llx", (unsigned long long)th->ident);
}

static void describe_view(const struct top *t, struct strbuf *sb)
{
	if (t->view.recent)
		strbuf_addf(sb, "recent (%g s half-life)", HALF_LIFE_S);
	else
		strbuf_addstr(sb, "whole run");
	strbuf_addstr(sb, t->view.per_line ? ", per line" : ", per function");
	if (t->view.per_thread)
		strbuf_addstr(sb, t->view.per_thread == TOP_PER_PROCESS
				      ? ", per process"
				      : ", per thread");
	strbuf_addf(sb, ", sort %s", top_column_name(t->view.sort));
}

/*
 * The column names as the table's first line, aligned over the numbers;
 * at (if not NULL) gets where each name starts.
 */
static void format_columns(struct strbuf *sb, int per_thread, int *at)
{
	static const int widths[TOP_COL_NR] = {PCT_WIDTH, PCT_WIDTH, TIME_WIDTH,
					       TIME_WIDTH, 0};
	int col;

	for (col = 0; col < TOP_COL_NR; col++) {
		const char *name = top_column_name((enum top_column)col);
		int w = widths[col] ? widths[col] : (int)strlen(name);

		if (col == TOP_COL_FUNCTION) {
			strbuf_addch(sb, ' ');
			if (per_thread)
				strbuf_addf(sb, "%-*s ", THREAD_WIDTH,
					    per_thread == TOP_PER_PROCESS
						? "PROCESS"
						: "THREAD");
		}
		if (at)
			at[col] = (int)sb->len + w - (int)strlen(name);
		strbuf_addf(sb, "%*s", w, name);
		if (col != TOP_COL_FUNCTION)
			strbuf_addch(sb, ' ');
	}
}

/*
 * A row's function is "name (file:line)", a native one's with " [native]"
 * after it.  What is not known is left out, never made up as ":0": the
 * line where DWARF gives none ("name (file) [native]"), the file too
 * where it gives nothing ("name [native]") and for the stand-in root of
 * a stack cut at --max-depth ("[K frames not read]").
 */
static int row_has_file(const struct top_row *r)
{
	return r->file[0] != '\0';
}

/* What follows the file name: ":line)" or ")", then " [native]". */
static void row_tail(const struct top_row *r, char *buf, size_t size)
{
	const char *native = r->native ? " [native]" : "";

	if (!row_has_file(r))
		snprintf(buf, size, "%s", native);
	else if (r->line <= 0)
		snprintf(buf, size, ")%s", native);
	else
		snprintf(buf, size, ":%d)%s", r->line, native);
}

/* A row's numbers, padded up to where the function's name goes. */
static void format_numbers(struct strbuf *sb, const struct top_row *r)
{
	char own[32], total[32];

	format_time(own, sizeof(own), r->own_time);
	format_time(total, sizeof(total), r->total_time);
	strbuf_addf(sb, "%*.1f %*.1f %*s %*s  ", PCT_WIDTH, r->own_pct,
		    PCT_WIDTH, r->total_pct, TIME_WIDTH, own, TIME_WIDTH,
		    total);
}

/* --- the GPU section (--gpu) --- */

/* One record from the channel; none counts while sampling is paused. */
static void gpu_record(void *ctx, const struct gpu_record *rec)
{
	struct top *t = ctx;

	if (!t->paused)
		gputop_add(&t->gt, rec);
}

/* What the GPU section shows: the last interval, or the whole run. */
static const struct gputop_view *gpu_view(const struct top *t)
{
	return t->view.recent ? &t->gt.window : &t->gt.run;
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
	if (n > GPU_SCREEN_ROWS)
		n = GPU_SCREEN_ROWS;
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

static void format_gpu_time(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000000ULL)
		snprintf(buf, size, "%.1fus", (double)ns / 1e3);
	else if (ns < 1000000000ULL)
		snprintf(buf, size, "%.2fms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", (double)ns / 1e9);
}

/* "last 1.00 s" or "whole run, 12.00 s": the time the view covers. */
static void gpu_describe_window(const struct top *t, struct strbuf *sb)
{
	const struct gputop_view *v = gpu_view(t);

	strbuf_addf(sb, "%s%.2f s", t->view.recent ? "last " : "whole run, ",
		    (double)v->wall_ns / 1e9);
}

/* "400 kernels, 100 copies, 0 memsets" */
static void gpu_describe_work(const struct gputop_view *v, struct strbuf *sb)
{
	strbuf_addf(sb, "%llu kernels, %llu copies, %llu memsets",
		    (unsigned long long)v->kernels,
		    (unsigned long long)v->copies,
		    (unsigned long long)v->memsets);
}

static void format_gpu_busy(const struct gputop_view *v, char *buf, size_t size)
{
	format_pct(buf, size, gputop_busy_pct(v));
}

static void format_gpu_columns(struct strbuf *sb)
{
	strbuf_addf(sb, "%*s %*s %*s  NAME", GPU_PCT_WIDTH, "%GPUTIME",
		    GPU_TIME_WIDTH, "GPUTIME", GPU_CALLS_WIDTH, "CALLS");
}

/* A GPU row's numbers, padded up to where its name goes. */
static void format_gpu_numbers(struct strbuf *sb, const struct gputop_view *v,
			       const struct gputop_row *r)
{
	char time[32];

	format_gpu_time(time, sizeof(time), r->ns);
	strbuf_addf(sb, "%*.1f %*s %*llu  ", GPU_PCT_WIDTH,
		    v->ns ? 100.0 * (double)r->ns / (double)v->ns : 0.0,
		    GPU_TIME_WIDTH, time, GPU_CALLS_WIDTH,
		    (unsigned long long)r->calls);
}

/*
 * --gpu: what the launching threads ran while the GPU was idle in view
 * v: "62.1% host_work (idle.py:27); 20.0% ...", shares of the idle time
 * their samples stood for; "n/a" when there was none.
 */
static void gpu_describe_idle(const struct top *t, const struct gputop_view *v,
			      struct strbuf *sb)
{
	size_t i;

	if (!v->idle_ns || !v->nr_idle_top) {
		strbuf_addstr(sb, "n/a");
		return;
	}
	for (i = 0; i < v->nr_idle_top; i++) {
		const struct stack_frame *f =
		    &t->tt.names.frames[v->idle_top[i].site];

		strbuf_addf(sb, "%s%.1f%% %s", i ? "; " : "",
			    100.0 * (double)v->idle_top[i].ns /
				(double)v->idle_ns,
			    f->name);
		/* As rows name a function (row_tail). */
		if (f->file[0] && f->line > 0)
			strbuf_addf(sb, " (%s:%d)", f->file, f->line);
		else if (f->file[0])
			strbuf_addf(sb, " (%s)", f->file);
		if (v->idle_top[i].site < t->tt.alloc_native &&
		    t->tt.native[v->idle_top[i].site])
			strbuf_addstr(sb, " [native]");
	}
}

/* --- plain text --- */

/* Write s with control characters as '?': one line stays one line. */
static void put_clean(FILE *fp, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, fp);
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

/* --gpu: the GPU section's lines of a snapshot's header. */
static void print_gpu_header(const struct top *t, FILE *fp)
{
	const struct gputop_view *v = &t->gt.window;
	struct strbuf sb = STRBUF_INIT;
	char busy[32];
	int on = gpu_collecting(t, &sb);

	fputs("gpu: ", fp);
	if (on) {
		fputs("collecting", fp);
		if (t->gpu_how.len) {
			fputs("; ", fp);
			put_clean(fp, t->gpu_how.buf);
		}
	} else {
		put_clean(fp, sb.buf);
	}
	strbuf_reset(&sb);
	fprintf(fp, "\ngpu window: %.2f s\n", (double)v->wall_ns / 1e9);
	format_gpu_busy(v, busy, sizeof(busy));
	fprintf(fp, "gpu busy: %s\n", on ? busy : "n/a");
	if (on)
		gpu_describe_idle(t, v, &sb);
	fputs("gpu idle in: ", fp);
	put_clean(fp, on ? sb.buf : "n/a");
	fputc('\n', fp);
	strbuf_reset(&sb);
	gpu_describe_work(v, &sb);
	fprintf(fp, "gpu work: %s\n", sb.buf);
	if (t->gpu_state_ok)
		fprintf(fp, "gpu lost: %llu\n",
			(unsigned long long)t->gpu_state.lost);
	else
		fputs("gpu lost: n/a\n", fp);
	strbuf_release(&sb);
}

/* --gpu: the GPU table of a snapshot, then a blank line. */
static void print_gpu_table(const struct top *t, FILE *fp)
{
	const struct gputop_view *v = &t->gt.window;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	format_gpu_columns(&sb);
	fprintf(fp, "%s\n", sb.buf);
	for (i = 0; i < v->nr_rows && i < GPU_PLAIN_ROWS; i++) {
		strbuf_reset(&sb);
		format_gpu_numbers(&sb, v, &v->rows[i]);
		fputs(sb.buf, fp);
		put_clean(fp, v->rows[i].name);
		fputc('\n', fp);
	}
	fputc('\n', fp);
	strbuf_release(&sb);
}

static int print_snapshot(struct top *t)
{
	FILE *fp = stdout;
	struct strbuf sb = STRBUF_INIT;
	char idle[32], gil[32];
	size_t i;

	toptable_snapshot(&t->tt, &t->view, &t->snap);
	fprintf(fp, "snapshot: %llu\n", (unsigned long long)++t->snapshots);
	fprintf(fp, "time: %.2f\n", (double)(now_ns() - t->start) / 1e9);
	fprintf(fp, "pid: %d\n", (int)t->sl.rt.pid);
	fputs("command: ", fp);
	put_clean(fp, t->cmdline);
	if (t->program_output.len) {
		fputs("\noutput: ", fp);
		put_clean(fp, t->program_output.buf);
	}
	fprintf(fp, "\npython: %s\n", python_version(t));
	if (t->opts->s.subprocesses)
		fprintf(fp, "processes: %u\n", t->processes);
	fprintf(fp, "threads: %u\n", t->threads);
	fputs("samples/s: ", fp);
	if (t->achieved < 0) {
		fputs("n/a\n", fp);
	} else {
		sampleloop_add_rate(&sb, t->achieved);
		fprintf(fp, "%s\n", sb.buf);
		strbuf_reset(&sb);
	}
	format_pct(idle, sizeof(idle), t->snap.idle_pct);
	format_gil(t, gil, sizeof(gil));
	fprintf(fp, "idle: %s\ngil: %s\n", idle, gil);
	sampleloop_describe_drops(&t->sl, &sb);
	fprintf(fp, "errors: %s\n", sb.buf);
	strbuf_reset(&sb);
	describe_view(t, &sb);
	fprintf(fp, "view: %s\n", sb.buf);
	strbuf_reset(&sb);
	if (t->opts->s.gpu)
		print_gpu_header(t, fp);
	fputc('\n', fp);
	format_columns(&sb, 0, NULL);
	fprintf(fp, "%s\n", sb.buf);
	for (i = 0; i < t->snap.nr_rows && i < PLAIN_MAX_ROWS; i++) {
		const struct top_row *r = &t->snap.rows[i];

		char tail[64];

		strbuf_reset(&sb);
		format_numbers(&sb, r);
		fputs(sb.buf, fp);
		put_clean(fp, r->name);
		if (row_has_file(r)) {
			fputs(" (", fp);
			put_clean(fp, r->file);
		}
		row_tail(r, tail, sizeof(tail));
		fprintf(fp, "%s\n", tail);
	}
	strbuf_release(&sb);
	fputc('\n', fp);
	if (t->opts->s.gpu)
		print_gpu_table(t, fp);
	if (fflush(fp) || ferror(fp)) {
		t->output_errno = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

/* --- the screen --- */

/*
 * Append s to out (which holds *len of max wide characters) as wide
 * characters; bytes that are no character in the locale, and characters
 * that take no column or are control characters, become '?'.  Returns
 * the columns added.
 */
static int widen(const char *s, wchar_t *out, size_t *len, size_t max)
{
	mbstate_t state;
	int cols = 0;

	memset(&state, 0, sizeof(state));
	while (*s && *len < max) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, MB_CUR_MAX, &state);
		int w;

		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&state, 0, sizeof(state));
			wc = L'?';
			n = 1;
		}
		w = wcwidth(wc);
		if (w <= 0) {
			wc = L'?';
			w = 1;
		}
		out[(*len)++] = wc;
		cols += w;
		s += n;
	}
	return cols;
}

/* Draw up to width columns of the wide string s at (y, x). */
static void put_wide(int y, int x, const wchar_t *s, size_t len, int width)
{
	size_t n = 0;
	int cols = 0;

	while (n < len) {
		int w = wcwidth(s[n]);

		if (cols + w > width)
			break;
		cols += w;
		n++;
	}
	if (n)
		mvaddnwstr(y, x, s, (int)n);
}

static void put_text(int y, int x, const char *s, int width)
{
	wchar_t wide[WIDE_MAX];
	size_t len = 0;

	if (width <= 0)
		return;
	widen(s, wide, &len, WIDE_MAX);
	put_wide(y, x, wide, len, width);
}

/*
 * "name (file:line)" in width columns (see row_tail): when too long, the
 * file name loses its beginning ("name (...ets/hot.py:22)"), then the
 * end goes.
 */
static void put_function(int y, int x, const struct top_row *r, int width)
{
	wchar_t out[3 * WIDE_MAX], file[WIDE_MAX];
	char tail[64];
	size_t len = 0, file_len = 0, skip = 0;
	int cols, file_cols, budget;

	if (width <= 0)
		return;
	row_tail(r, tail, sizeof(tail));
	cols = widen(r->name, out, &len, WIDE_MAX);
	if (row_has_file(r))
		cols += widen(" (", out, &len, 3 * WIDE_MAX);
	file_cols = widen(r->file, file, &file_len, WIDE_MAX);
	budget = width - cols - (int)strlen(tail);
	if (file_cols > budget && budget > 4) {
		cols += widen("...", out, &len, 3 * WIDE_MAX);
		budget -= 3;
		while (skip < file_len && file_cols > budget)
			file_cols -= wcwidth(file[skip++]);
	}
	for (; skip < file_len && len < 3 * WIDE_MAX; skip++)
		out[len++] = file[skip];
	widen(tail, out, &len, 3 * WIDE_MAX);
	put_wide(y, x, out, len, width);
}

static void draw_columns(const struct top *t, int y)
{
	struct strbuf sb = STRBUF_INIT;
	int at[TOP_COL_NR], sort = (int)t->view.sort;

	format_columns(&sb, t->view.per_thread, at);
	attron(A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	put_text(y, 0, sb.buf, COLS);
	attroff(A_REVERSE);
	/* Column names are ASCII: a byte is a column. */
	if (at[sort] < COLS)
		mvchgat(y, at[sort], (int)strlen(top_column_name(t->view.sort)),
			A_REVERSE | A_BOLD | A_UNDERLINE, 0, NULL);
	strbuf_release(&sb);
}

static void draw_row(const struct top *t, int y, const struct top_row *r)
{
	struct strbuf sb = STRBUF_INIT;
	char label[64];
	int x;

	format_numbers(&sb, r);
	x = (int)sb.len;
	put_text(y, 0, sb.buf, COLS);
	if (t->view.per_thread) {
		/* A name may be wider than the column, or not ASCII. */
		thread_label(t, r->thread, label, sizeof(label));
		put_text(y, x, label,
			 THREAD_WIDTH < COLS - x ? THREAD_WIDTH : COLS - x);
		x += THREAD_WIDTH + 1;
	}
	put_function(y, x, r, COLS - x);
	strbuf_release(&sb);
}

/* --gpu: where the GPU section goes on screen. */
struct gpu_layout {
	int lines; /* screen lines it takes */
	int blank; /* a blank line above it */
	int rows;  /* table rows; the column names too when not 0 */
};

/*
 * --gpu: the section's share of avail screen lines (those between the
 * column names and the key help).  The CPU table keeps MIN_CPU_ROWS rows
 * first; then the section gives up its blank line, then its rows (the
 * column names with the last one), down to its title.
 */
static void gpu_layout(const struct top *t, int collecting, int avail,
		       struct gpu_layout *l)
{
	int budget = avail - MIN_CPU_ROWS;
	int rows = collecting ? t->gpu_rows_seen : 0;

	memset(l, 0, sizeof(*l));
	if (!t->opts->s.gpu || avail < 2)
		return;
	if (budget < 1)
		budget = 1;
	if (budget >= 2 + (rows ? 1 + rows : 0)) {
		l->blank = 1;
		l->rows = rows;
	} else if (rows && budget >= 3) {
		l->rows = budget - 2;
	}
	l->lines = l->blank + 1 + (l->rows ? 1 + l->rows : 0);
}

/*
 * --gpu: the section at line y: the title (what the view covers, how
 * busy the GPU was, the work, records lost, how the agent came), the
 * column names and the rows; or the one line saying why the agent does
 * not collect.
 */
static void draw_gpu(const struct top *t, int y, const struct gpu_layout *l,
		     int collecting, const char *why)
{
	const struct gputop_view *v = gpu_view(t);
	struct strbuf sb = STRBUF_INIT;
	char busy[32];
	int i;

	if (!l->lines)
		return;
	y += l->blank;
	strbuf_addstr(&sb, "GPU: ");
	if (!collecting) {
		strbuf_addstr(&sb, why);
		put_text(y, 0, sb.buf, COLS);
		goto out;
	}
	gpu_describe_window(t, &sb);
	format_gpu_busy(v, busy, sizeof(busy));
	strbuf_addf(&sb, "  busy: %s  ", busy);
	gpu_describe_work(v, &sb);
	if (t->gpu_state_ok)
		strbuf_addf(&sb, "  lost: %llu",
			    (unsigned long long)t->gpu_state.lost);
	if (t->gpu_way)
		strbuf_addf(&sb, "  agent: %s", t->gpu_way);
	if (v->idle_ns) {
		strbuf_addstr(&sb, "  idle in: ");
		gpu_describe_idle(t, v, &sb);
	}
	put_text(y++, 0, sb.buf, COLS);
	if (!l->rows)
		goto out;
	strbuf_reset(&sb);
	format_gpu_columns(&sb);
	attron(A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	put_text(y++, 0, sb.buf, COLS);
	attroff(A_REVERSE);
	for (i = 0; i < l->rows && (size_t)i < v->nr_rows; i++) {
		int x;

		strbuf_reset(&sb);
		format_gpu_numbers(&sb, v, &v->rows[i]);
		x = (int)sb.len;
		put_text(y, 0, sb.buf, COLS);
		put_text(y++, x, v->rows[i].name, COLS - x);
	}
out:
	strbuf_release(&sb);
}

static void draw(struct top *t)
{
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT;
	char idle[32], gil[32];
	struct gpu_layout gl;
	int y, rows, collecting = 0;
	size_t i;

	toptable_snapshot(&t->tt, &t->view, &t->snap);
	if (t->opts->s.gpu)
		collecting = gpu_collecting(t, &why);
	erase();
	strbuf_addf(&sb, "spyc top - pid %d: %s", (int)t->sl.rt.pid,
		    t->cmdline);
	put_text(0, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	format_pct(idle, sizeof(idle), t->snap.idle_pct);
	format_gil(t, gil, sizeof(gil));
	strbuf_addf(&sb, "Python %s  ", python_version(t));
	if (t->opts->s.subprocesses)
		strbuf_addf(&sb, "processes: %u  ", t->processes);
	strbuf_addf(&sb, "threads: %u  samples/s: ", t->threads);
	if (t->paused)
		strbuf_addstr(&sb, "paused");
	else if (t->achieved < 0)
		strbuf_addstr(&sb, "n/a");
	else
		sampleloop_add_rate(&sb, t->achieved);
	strbuf_addf(&sb, "  idle: %s  GIL: %s%s", idle, gil,
		    t->sl.rt.free_threaded ? " (free-threaded)" : "");
	put_text(1, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "errors: ");
	sampleloop_describe_drops(&t->sl, &sb);
	if (t->paused)
		strbuf_addstr(&sb, "   PAUSED (sampling stopped; p resumes)");
	put_text(2, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "view: ");
	describe_view(t, &sb);
	put_text(3, 0, sb.buf, COLS);
	if (t->program_output.len) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "output: %s", t->program_output.buf);
		put_text(4, 0, sb.buf, COLS);
	}
	strbuf_release(&sb);

	draw_columns(t, t->header_lines - 1);
	rows = LINES - t->header_lines - FOOTER_LINES;
	gpu_layout(t, collecting, rows, &gl);
	rows -= gl.lines;
	for (i = 0, y = t->header_lines; i < t->snap.nr_rows && (int)i < rows;
	     i++, y++)
		draw_row(t, y, &t->snap.rows[i]);
	draw_gpu(t, t->header_lines + rows, &gl, collecting, why.buf);
	strbuf_release(&why);
	if (LINES > t->header_lines) {
		attron(A_REVERSE);
		mvhline(LINES - 1, 0, ' ', COLS);
		put_text(LINES - 1, 0, help_line, COLS);
		attroff(A_REVERSE);
	}
	refresh();
}

static int screen_open(struct top *t)
{
	const char *term = getenv("TERM");
	char *cup;

	t->screen = newterm(NULL, stdout, stdin);
	if (!t->screen)
		return error(
		    "cannot drive the terminal '%s'; redirect standard "
		    "output for plain-text snapshots",
		    term ? term : "");
	set_term(t->screen);
	cup = tigetstr("cup");
	if (!cup || cup == (char *)-1) {
		endwin();
		delscreen(t->screen);
		t->screen = NULL;
		return error("the terminal '%s' cannot move its cursor; "
			     "redirect standard output for plain-text "
			     "snapshots",
			     term ? term : "");
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	return 0;
}

/* Read the keys typed; returns 1 to quit, else 0 (redrawn if needed). */
static int read_keys(struct top *t)
{
	int ch, changed = 0;

	while ((ch = getch()) != ERR) {
		switch (ch) {
		case 'q':
		case 'Q':
			return 1;
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
			t->view.sort = (enum top_column)(ch - '1');
			break;
		case '<':
		case KEY_LEFT:
			if (t->view.sort > 0)
				t->view.sort--;
			break;
		case '>':
		case KEY_RIGHT:
			if (t->view.sort < TOP_COL_NR - 1)
				t->view.sort++;
			break;
		case 'l':
			t->view.per_line = !t->view.per_line;
			break;
		case 't':
			/* Following a tree: per thread, per process, summed. */
			if (t->view.per_thread == TOP_PER_THREAD &&
			    t->opts->s.subprocesses)
				t->view.per_thread = TOP_PER_PROCESS;
			else
				t->view.per_thread = !t->view.per_thread;
			break;
		case 'r':
			t->view.recent = !t->view.recent;
			break;
		case 'p':
		case ' ':
			t->paused = !t->paused;
			t->prev = 0;
			/* A pause is no sampling time. */
			t->window_first = t->window_attempts = 0;
			/* Nor GPU time: the window starts again on resume. */
			gputop_reset_window(&t->gt);
			t->gpu_window_start = now_ns();
			break;
		case 'L' &
		    0x1f: /* Ctrl-L: repaint what another program wrote */
			clearok(curscr, TRUE);
			break;
		case KEY_RESIZE:
			break;
		default:
			continue;
		}
		changed = 1;
	}
	if (changed)
		draw(t);
	return 0;
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
	if (!t->screen)
		return print_snapshot(t);
	draw(t);
	return 0;
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
			/* Its slot's start: a sample is at a random moment of it. */
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
		if (t->screen && now >= next_keys) {
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
		if (t->screen && next_keys < deadline)
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
	t.header_lines = HEADER_LINES;
	strbuf_init(&t.program_output, 0);
	strbuf_init(&t.gpu_how, 0);
	gputop_init(&t.gt);
	gpusession_init(&t.gpu, gpu_record, &t);
	/* Refused before anything is launched or attached. */
	if (opts.s.gpu)
		agent = gpusession_agent_or_die();
	sampleloop_signals();
	if (opts.s.argv && opts.s.gpu)
		gpusession_launch_setup(&t.gpu, agent);
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
		t.header_lines++;
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
		if (screen_open(&t)) {
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
	if (!t.screen && end != END_OUTPUT && t.tt.samples) {
		uint64_t now = now_ns();

		if (show(&t, now))
			end = END_OUTPUT;
	}
out:
	gpu_stop(&t);
	if (t.screen) {
		endwin();
		delscreen(t.screen);
	}
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
