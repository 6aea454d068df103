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

#include "commands.h"
#include "native.h"
#include "framename.h"
#include "proc.h"
#include "pyframe.h"
#include "sampleloop.h"
#include "toptable.h"
#include "util.h"

#define DEFAULT_RATE_HZ 100.0
#define MAX_RATE_HZ 100000.0
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
/* Screen lines above the table's rows, and below them (the key help). */
#define HEADER_LINES 6
#define FOOTER_LINES 1
/* Wide characters kept of a name or file name on screen. */
#define WIDE_MAX 512

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
    "  -g, --gil             count only the thread holding the GIL\n"
    "      --native          merge native frames in, as record does (stops\n"
    "                        each sampled thread briefly)\n"
    "      --blocking        stop each sampled thread while it is read\n"
    "      --nonblocking     never stop the target (the default without\n"
    "                        --native)\n"
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

/* Longest stack counted: Python frames and the native ones merged in. */
#define TOP_MAX_STACK (PY_MAX_DEPTH + NATIVE_MAX_DEPTH)

struct top_opts {
	pid_t pid;
	char **argv; /* launch mode */
	double rate;
	double interval;
	int idle;
	int gil;
	int native;
	int stop; /* stop each sampled thread while reading it */
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
	struct native_unwinder nu;   /* --native */
	struct merged_frame *merged; /* one merged stack, root first */
	char cwd[4096];
	char cmdline[1024];
	SCREEN *screen; /* NULL in plain-text mode */
	int paused;
	uint64_t start;	   /* when sampling started (now_ns()) */
	uint64_t prev;	   /* the last sample's time, 0 after a pause */
	double max_weight; /* seconds a sample may stand for */
	unsigned threads;  /* Python threads in the last sample */
	/* samples a second over the last refresh interval */
	uint64_t attempts, window_attempts, window_start;
	double achieved;
	uint64_t shown;	    /* refreshes so far */
	uint64_t snapshots; /* plain-text snapshots printed */
	int output_errno;
};

static void parse_options(struct top_opts *o, int argc, char **argv)
{
	enum { OPT_INTERVAL = 256, OPT_NATIVE };
	static const struct option options[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"rate", required_argument, NULL, 'r'},
	    {"interval", required_argument, NULL, OPT_INTERVAL},
	    {"idle", no_argument, NULL, 'i'},
	    {"gil", no_argument, NULL, 'g'},
	    {"native", no_argument, NULL, OPT_NATIVE},
	    {"blocking", no_argument, NULL, OPT_BLOCKING},
	    {"nonblocking", no_argument, NULL, OPT_NONBLOCKING},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, blocking = 0; /* 1: --blocking, 2: --nonblocking */

	memset(o, 0, sizeof(*o));
	o->rate = DEFAULT_RATE_HZ;
	o->interval = DEFAULT_INTERVAL_S;
	while ((c = getopt_long(argc, argv, "+p:r:igh", options, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->pid = parse_pid(optarg);
			break;
		case 'r':
			o->rate =
			    parse_positive_arg("--rate", optarg, MAX_RATE_HZ);
			break;
		case OPT_INTERVAL:
			o->interval = parse_positive_arg("--interval", optarg,
							 MAX_INTERVAL_S);
			break;
		case 'i':
			o->idle = 1;
			break;
		case 'g':
			o->gil = 1;
			break;
		case OPT_NATIVE:
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
	o->argv = parse_target(argc, argv, optind, o->pid, "top");
}

static uint32_t make_site(void *ctx, const struct pycode *code, int line)
{
	struct top *t = ctx;

	return toptable_site(&t->tt, code->name,
			     short_filename(code->filename, t->cwd), line,
			     code->firstlineno);
}

/* The site of a native frame, cached on its symbol. */
static uint32_t native_site(struct top *t, struct native_sym *sym)
{
	if (sym->user_id < 0)
		sym->user_id =
		    toptable_site(&t->tt, sym->name, sym->file ? sym->file : "",
				  sym->file ? sym->line : 0, 0);
	return (uint32_t)sym->user_id;
}

/* Thread th's stack into t->sites, innermost first; returns its depth. */
static size_t stack_sites(struct top *t, const struct py_thread *th)
{
	size_t j, n;
	int unmerged;

	n = native_thread_frames(t->opts->native ? &t->nu : NULL, &t->sl.sample,
				 th, t->merged, TOP_MAX_STACK, &unmerged);
	for (j = 0; j < n; j++) {
		const struct merged_frame *m = &t->merged[n - 1 - j];

		t->sites[j] =
		    m->py
			? pycode_line_id(m->py->code, m->py->line, make_site, t)
			: native_site(t, (struct native_sym *)m->native);
	}
	return n;
}

static void add_sample(struct top *t, uint64_t now)
{
	const struct py_sample *s = &t->sl.sample;
	struct top_sample_info info;
	double weight;
	size_t i;

	memset(&info, 0, sizeof(info));
	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *th = &s->threads[i];

		info.threads++;
		if (th->state != THREAD_UNKNOWN) {
			info.known++;
			if (th->state != THREAD_RUNNING)
				info.idle++;
		}
		if (th->holds_gil)
			info.gil_held = 1;
	}
	/* Time since the last sample, dropped ones included. */
	weight = t->prev ? (double)(now - t->prev) / 1e9
			 : (double)t->sl.interval / 1e9;
	if (weight > t->max_weight)
		weight = t->max_weight;
	t->prev = now;
	t->threads = info.threads;
	toptable_sample(&t->tt, (double)(now - t->start) / 1e9, weight, &info);
	for (i = 0; i < s->nr_threads; i++) {
		const struct py_thread *th = &s->threads[i];

		if (!th->depth ||
		    !thread_wanted(th, t->opts->idle, t->opts->gil))
			continue;
		toptable_add(&t->tt,
			     toptable_thread(&t->tt, th->ident, th->tid,
					     th->name[0] ? th->name : NULL),
			     t->sites, stack_sites(t, th));
	}
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

static void thread_label(const struct top *t, uint32_t thread, char *buf,
			 size_t size)
{
	const struct stack_thread *th;

	if (thread >= t->tt.names.nr_threads) {
		snprintf(buf, size, "all");
		return;
	}
	th = &t->tt.names.threads[thread];
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
		strbuf_addstr(sb, ", per thread");
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
					    "THREAD");
		}
		if (at)
			at[col] = (int)sb->len + w - (int)strlen(name);
		strbuf_addf(sb, "%*s", w, name);
		if (col != TOP_COL_FUNCTION)
			strbuf_addch(sb, ' ');
	}
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

/* --- plain text --- */

/* Write s with control characters as '?': one line stays one line. */
static void put_clean(FILE *fp, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, fp);
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
	fprintf(fp, "\npython: %s\n", t->sl.rt.version);
	fprintf(fp, "threads: %u\n", t->threads);
	fprintf(fp, "samples/s: %.1f\n", t->achieved);
	format_pct(idle, sizeof(idle), t->snap.idle_pct);
	format_pct(gil, sizeof(gil), t->snap.gil_pct);
	fprintf(fp, "idle: %s\ngil: %s\n", idle, gil);
	sampleloop_describe_drops(&t->sl, &sb);
	fprintf(fp, "errors: %s\n", sb.buf);
	strbuf_reset(&sb);
	describe_view(t, &sb);
	fprintf(fp, "view: %s\n\n", sb.buf);
	strbuf_reset(&sb);
	format_columns(&sb, 0, NULL);
	fprintf(fp, "%s\n", sb.buf);
	for (i = 0; i < t->snap.nr_rows && i < PLAIN_MAX_ROWS; i++) {
		const struct top_row *r = &t->snap.rows[i];

		strbuf_reset(&sb);
		format_numbers(&sb, r);
		fputs(sb.buf, fp);
		put_clean(fp, r->name);
		fputs(" (", fp);
		put_clean(fp, r->file);
		fprintf(fp, ":%d)\n", r->line);
	}
	strbuf_release(&sb);
	fputc('\n', fp);
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
 * "name (file:line)" in width columns: when too long, the file name
 * loses its beginning ("name (...ets/hot.py:22)"), then the end goes.
 */
static void put_function(int y, int x, const struct top_row *r, int width)
{
	wchar_t out[3 * WIDE_MAX], file[WIDE_MAX];
	char tail[32];
	size_t len = 0, file_len = 0, skip = 0;
	int cols, file_cols, budget;

	if (width <= 0)
		return;
	snprintf(tail, sizeof(tail), ":%d)", r->line);
	cols = widen(r->name, out, &len, WIDE_MAX);
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

static void draw(struct top *t)
{
	struct strbuf sb = STRBUF_INIT;
	char idle[32], gil[32];
	int y, rows;
	size_t i;

	toptable_snapshot(&t->tt, &t->view, &t->snap);
	erase();
	strbuf_addf(&sb, "spyc top - pid %d: %s", (int)t->sl.rt.pid,
		    t->cmdline);
	put_text(0, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	format_pct(idle, sizeof(idle), t->snap.idle_pct);
	format_pct(gil, sizeof(gil), t->snap.gil_pct);
	strbuf_addf(&sb,
		    "Python %s  threads: %u  samples/s: ", t->sl.rt.version,
		    t->threads);
	if (t->paused)
		strbuf_addstr(&sb, "paused");
	else
		strbuf_addf(&sb, "%.1f", t->achieved);
	strbuf_addf(&sb, "  idle: %s  GIL: %s", idle, gil);
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
	strbuf_release(&sb);

	draw_columns(t, HEADER_LINES - 1);
	rows = LINES - HEADER_LINES - FOOTER_LINES;
	for (i = 0, y = HEADER_LINES; i < t->snap.nr_rows && (int)i < rows;
	     i++, y++)
		draw_row(t, y, &t->snap.rows[i]);
	if (LINES > HEADER_LINES) {
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
			t->view.per_thread = !t->view.per_thread;
			break;
		case 'r':
			t->view.recent = !t->view.recent;
			break;
		case 'p':
		case ' ':
			t->paused = !t->paused;
			t->prev = 0;
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

static int show(struct top *t, uint64_t now)
{
	double secs = (double)(now - t->window_start) / 1e9;

	/* A last, short interval says little: keep the previous rate. */
	if (secs > 0 && (secs >= t->opts->interval / 2 || !t->shown)) {
		t->achieved = (double)(t->attempts - t->window_attempts) / secs;
		t->window_start = now;
		t->window_attempts = t->attempts;
	}
	t->shown++;
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

	if (!refresh)
		refresh = 1;
	for (;;) {
		uint64_t deadline;

		if (sampleloop_stop)
			return END_SIGNAL;
		now = now_ns();
		if (!t->paused && now >= t->sl.next) {
			enum drop_reason why = sampleloop_take(&t->sl);

			if (why == DROP_GONE)
				return END_TARGET;
			t->attempts++;
			if (why == DROP_NONE && t->opts->stop)
				why = sampleloop_stop_wanted(&t->sl, &t->nu,
							     t->opts->idle,
							     t->opts->gil);
			if (why == DROP_NONE)
				add_sample(t, now_ns());
			sampleloop_schedule(&t->sl);
		} else if (t->paused && now >= next_check) {
			if (sampleloop_target_gone(&t->sl))
				return END_TARGET;
			next_check = now + PAUSED_CHECK_NS;
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
		sleep_until(deadline);
	}
}

int cmd_top(int argc, char **argv)
{
	struct top_opts opts;
	struct top t;
	enum top_end end = END_QUIT;
	int ret = EXIT_OK, stop = 0;

	/* Function and file names are UTF-8; so is the screen, mostly. */
	setlocale(LC_ALL, "");
	parse_options(&opts, argc, argv);
	memset(&t, 0, sizeof(t));
	t.opts = &opts;
	t.view.recent = 1;
	t.view.sort = TOP_COL_OWN_TIME;
	sampleloop_signals();
	if (opts.argv)
		t.sl.child = launch_or_die(&t.sl.rt, opts.argv);
	else
		attach_or_die(&t.sl.rt, opts.pid);
	target_cwd(t.sl.rt.pid, t.cwd, sizeof(t.cwd));
	proc_cmdline(t.sl.rt.pid, t.cmdline, sizeof(t.cmdline));
	toptable_init(&t.tt, HALF_LIFE_S);
	t.sites = xmalloc(TOP_MAX_STACK * sizeof(*t.sites));
	t.merged = xmalloc(TOP_MAX_STACK * sizeof(*t.merged));
	if (opts.native && native_init(&t.nu, &t.sl.rt))
		return EXIT_FAILED;
	if (opts.stop && !opts.native)
		native_init_stopper(&t.nu, &t.sl.rt);
	sampleloop_init(&t.sl, opts.rate);
	/* The header's %idle and %GIL need both, whatever the options. */
	t.sl.ps.want_state = 1;
	t.sl.ps.want_names = 1;
	t.sl.ps.want_gil = 1;
	/* Idle threads count in the header, but their stacks do not. */
	t.sl.ps.skip_idle = !opts.idle && !opts.gil;
	t.max_weight =
	    2.0 / opts.rate > MAX_WEIGHT_S ? 2.0 / opts.rate : MAX_WEIGHT_S;
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
	t.start = t.window_start = now_ns();
	end = run(&t);
	/* The last, partial interval too, so that a short run shows. */
	if (!t.screen && end != END_OUTPUT && t.tt.samples) {
		uint64_t now = now_ns();

		if (show(&t, now))
			end = END_OUTPUT;
	}
out:
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
	if (opts.stop)
		native_release(&t.nu);
	top_snapshot_release(&t.snap);
	toptable_release(&t.tt);
	sampleloop_release(&t.sl);
	return ret;
}
