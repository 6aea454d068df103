/* SPDX-License-Identifier: MIT */
/*
 * spyc top's full screen (curses): the header, the table with its sort
 * column marked, the GPU section, the key help; and the keys.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "ui/topformat.h"
#include "ui/topview.h"

/*
 * Screen lines above the table's rows (one more for the output line in
 * launch mode), and below them (the key help).
 */
#define HEADER_LINES 6
#define FOOTER_LINES 1
/* Wide characters kept of a name or file name on screen. */
#define WIDE_MAX 512
/*
 * --gpu: at most this many rows in the GPU section; rows the CPU table
 * keeps before the section gives up its own.
 */
#define GPU_SCREEN_ROWS 5
#define MIN_CPU_ROWS 3

static const char help_line[] = "1-5 </> sort  l line/function  t threads  "
				"r recent/whole  p pause  q quit";

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
 * "name (file:line)" in width columns (see topfmt_row_tail): when too long, the
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
	topfmt_row_tail(r, tail, sizeof(tail));
	cols = widen(r->name, out, &len, WIDE_MAX);
	if (topfmt_row_has_file(r))
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

static void draw_columns(const struct top_model *m, int y)
{
	struct strbuf sb = STRBUF_INIT;
	int at[TOP_COL_NR], sort = (int)m->view->sort;

	topfmt_columns(&sb, m->view->per_thread, at);
	attron(A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	put_text(y, 0, sb.buf, COLS);
	attroff(A_REVERSE);
	/* Column names are ASCII: a byte is a column. */
	if (at[sort] < COLS)
		mvchgat(y, at[sort],
			(int)strlen(top_column_name(m->view->sort)),
			A_REVERSE | A_BOLD | A_UNDERLINE, 0, NULL);
	strbuf_release(&sb);
}

static void draw_row(const struct top_model *m, int y, const struct top_row *r)
{
	struct strbuf sb = STRBUF_INIT;
	char label[64];
	int x;

	topfmt_numbers(&sb, r);
	x = (int)sb.len;
	put_text(y, 0, sb.buf, COLS);
	if (m->view->per_thread) {
		/* A name may be wider than the column, or not ASCII. */
		topfmt_thread(m, r->thread, label, sizeof(label));
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
static void gpu_layout(const struct top_model *m, int avail,
		       struct gpu_layout *l)
{
	int budget = avail - MIN_CPU_ROWS;
	int rows = m->gpu_collecting ? m->gpu_rows_seen : 0;

	if (rows > GPU_SCREEN_ROWS)
		rows = GPU_SCREEN_ROWS;
	memset(l, 0, sizeof(*l));
	if (!m->gpu || avail < 2)
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
static void draw_gpu(const struct top_model *m, int y,
		     const struct gpu_layout *l)
{
	const struct gputop_view *v = m->gpu_shown;
	struct strbuf sb = STRBUF_INIT;
	char busy[32];
	int i;

	if (!l->lines)
		return;
	y += l->blank;
	strbuf_addstr(&sb, "GPU: ");
	if (!m->gpu_collecting) {
		strbuf_addstr(&sb, m->gpu_why);
		put_text(y, 0, sb.buf, COLS);
		goto out;
	}
	topfmt_gpu_window(m, &sb);
	topfmt_gpu_busy(v, busy, sizeof(busy));
	strbuf_addf(&sb, "  busy: %s  ", busy);
	topfmt_gpu_work(v, &sb);
	if (m->gpu_lost_known)
		strbuf_addf(&sb, "  lost: %llu",
			    (unsigned long long)m->gpu_lost);
	if (m->gpu_way)
		strbuf_addf(&sb, "  agent: %s", m->gpu_way);
	if (v->idle_ns) {
		strbuf_addstr(&sb, "  idle in: ");
		topfmt_gpu_idle(m, v, &sb);
	}
	put_text(y++, 0, sb.buf, COLS);
	if (!l->rows)
		goto out;
	strbuf_reset(&sb);
	topfmt_gpu_columns(&sb);
	attron(A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	put_text(y++, 0, sb.buf, COLS);
	attroff(A_REVERSE);
	for (i = 0; i < l->rows && (size_t)i < v->nr_rows; i++) {
		int x;

		strbuf_reset(&sb);
		topfmt_gpu_numbers(&sb, v, &v->rows[i]);
		x = (int)sb.len;
		put_text(y, 0, sb.buf, COLS);
		put_text(y++, x, v->rows[i].name, COLS - x);
	}
out:
	strbuf_release(&sb);
}

/* Lines above the table's rows: one more for the output line. */
static int header_lines(const struct top_model *m)
{
	return HEADER_LINES + (m->program_output ? 1 : 0);
}

void topscreen_draw(struct topscreen *ts, const struct top_model *m)
{
	struct strbuf sb = STRBUF_INIT;
	char idle[32], gil[32];
	struct gpu_layout gl;
	int y, rows, top = header_lines(m);
	size_t i;

	if (!ts->screen)
		return;
	erase();
	strbuf_addf(&sb, "spyc top - pid %d: %s", m->pid, m->cmdline);
	put_text(0, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	topfmt_pct(idle, sizeof(idle), m->snap->idle_pct);
	topfmt_gil(m, gil, sizeof(gil));
	strbuf_addf(&sb, "Python %s  ", m->python);
	if (m->subprocesses)
		strbuf_addf(&sb, "processes: %u  ", m->processes);
	strbuf_addf(&sb, "threads: %u  samples/s: %s", m->threads,
		    m->paused ? "paused"
		    : m->rate ? m->rate
			      : "n/a");
	strbuf_addf(&sb, "  idle: %s  GIL: %s%s", idle, gil,
		    m->free_threaded ? " (free-threaded)" : "");
	put_text(1, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	strbuf_addf(&sb, "errors: %s", m->errors);
	if (m->paused)
		strbuf_addstr(&sb, "   PAUSED (sampling stopped; p resumes)");
	put_text(2, 0, sb.buf, COLS);
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "view: ");
	topfmt_view(m, &sb);
	put_text(3, 0, sb.buf, COLS);
	if (m->program_output) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "output: %s", m->program_output);
		put_text(4, 0, sb.buf, COLS);
	}
	strbuf_release(&sb);

	draw_columns(m, top - 1);
	rows = LINES - top - FOOTER_LINES;
	gpu_layout(m, rows, &gl);
	rows -= gl.lines;
	for (i = 0, y = top; i < m->snap->nr_rows && (int)i < rows; i++, y++)
		draw_row(m, y, &m->snap->rows[i]);
	draw_gpu(m, top + rows, &gl);
	if (LINES > top) {
		attron(A_REVERSE);
		mvhline(LINES - 1, 0, ' ', COLS);
		put_text(LINES - 1, 0, help_line, COLS);
		attroff(A_REVERSE);
	}
	refresh();
}

int topscreen_open(struct topscreen *ts)
{
	const char *term = getenv("TERM");
	SCREEN *screen;
	char *cup;

	ts->screen = NULL;
	screen = newterm(NULL, stdout, stdin);
	if (!screen)
		return error(
		    "cannot drive the terminal '%s'; redirect standard "
		    "output for plain-text snapshots",
		    term ? term : "");
	set_term(screen);
	cup = tigetstr("cup");
	if (!cup || cup == (char *)-1) {
		endwin();
		delscreen(screen);
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
	ts->screen = screen;
	return 0;
}

void topscreen_close(struct topscreen *ts)
{
	if (!ts->screen)
		return;
	endwin();
	delscreen(ts->screen);
	ts->screen = NULL;
}

int topscreen_keys(struct topscreen *ts, struct top_view *view, int tree)
{
	int ch, got = 0;

	if (!ts->screen)
		return 0;
	while ((ch = getch()) != ERR) {
		switch (ch) {
		case 'q':
		case 'Q':
			return got | TOPKEY_QUIT;
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
			view->sort = (enum top_column)(ch - '1');
			break;
		case '<':
		case KEY_LEFT:
			if (view->sort > 0)
				view->sort--;
			break;
		case '>':
		case KEY_RIGHT:
			if (view->sort < TOP_COL_NR - 1)
				view->sort++;
			break;
		case 'l':
			view->per_line = !view->per_line;
			break;
		case 't':
			/* Following a tree: per thread, per process, summed. */
			if (view->per_thread == TOP_PER_THREAD && tree)
				view->per_thread = TOP_PER_PROCESS;
			else
				view->per_thread = !view->per_thread;
			break;
		case 'r':
			view->recent = !view->recent;
			break;
		case 'p':
		case ' ':
			/* Twice is none. */
			got ^= TOPKEY_PAUSE;
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
		got |= TOPKEY_CHANGED;
	}
	return got;
}
