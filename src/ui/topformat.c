/* SPDX-License-Identifier: MIT */
/* The words and numbers that top's screen and plain-text views share. */
#include <stdio.h>
#include <string.h>

#include "ui/topformat.h"

void topfmt_time(char *buf, size_t size, double seconds)
{
	if (seconds < 100000.0)
		snprintf(buf, size, "%.2fs", seconds);
	else
		snprintf(buf, size, "%.0fs", seconds);
}

void topfmt_pct(char *buf, size_t size, double pct)
{
	if (pct < 0)
		snprintf(buf, size, "n/a");
	else
		snprintf(buf, size, "%.1f%%", pct);
}

void topfmt_gil(const struct top_model *m, char *buf, size_t size)
{
	if (m->free_threaded)
		snprintf(buf, size, "none");
	else
		topfmt_pct(buf, size, m->snap->gil_pct);
}

void topfmt_thread(const struct top_model *m, uint32_t thread, char *buf,
		   size_t size)
{
	const struct stack_thread *th;

	if (thread >= m->tt->names.nr_threads) {
		snprintf(buf, size, "all");
		return;
	}
	th = &m->tt->names.threads[thread];
	/* Per process: the process alone (its pid). */
	if (m->view->per_thread == TOP_PER_PROCESS && th->process) {
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

void topfmt_view(const struct top_model *m, struct strbuf *sb)
{
	if (m->view->recent)
		strbuf_addf(sb, "recent (%g s half-life)", m->tt->half_life);
	else
		strbuf_addstr(sb, "whole run");
	strbuf_addstr(sb, m->view->per_line ? ", per line" : ", per function");
	if (m->view->per_thread)
		strbuf_addstr(sb, m->view->per_thread == TOP_PER_PROCESS
				      ? ", per process"
				      : ", per thread");
	strbuf_addf(sb, ", sort %s", top_column_name(m->view->sort));
}

void topfmt_columns(struct strbuf *sb, int per_thread, int *at)
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

int topfmt_row_has_file(const struct top_row *r)
{
	return r->file[0] != '\0';
}

void topfmt_row_tail(const struct top_row *r, char *buf, size_t size)
{
	const char *native = r->native ? " [native]" : "";

	if (!topfmt_row_has_file(r))
		snprintf(buf, size, "%s", native);
	else if (r->line <= 0)
		snprintf(buf, size, ")%s", native);
	else
		snprintf(buf, size, ":%d)%s", r->line, native);
}

void topfmt_numbers(struct strbuf *sb, const struct top_row *r)
{
	char own[32], total[32];

	topfmt_time(own, sizeof(own), r->own_time);
	topfmt_time(total, sizeof(total), r->total_time);
	strbuf_addf(sb, "%*.1f %*.1f %*s %*s  ", PCT_WIDTH, r->own_pct,
		    PCT_WIDTH, r->total_pct, TIME_WIDTH, own, TIME_WIDTH,
		    total);
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

void topfmt_gpu_window(const struct top_model *m, struct strbuf *sb)
{
	const struct gputop_view *v = m->gpu_shown;

	strbuf_addf(sb, "%s%.2f s", m->view->recent ? "last " : "whole run, ",
		    (double)v->wall_ns / 1e9);
}

void topfmt_gpu_work(const struct gputop_view *v, struct strbuf *sb)
{
	strbuf_addf(sb, "%llu kernels, %llu copies, %llu memsets",
		    (unsigned long long)v->kernels,
		    (unsigned long long)v->copies,
		    (unsigned long long)v->memsets);
}

void topfmt_gpu_busy(const struct gputop_view *v, char *buf, size_t size)
{
	topfmt_pct(buf, size, gputop_busy_pct(v));
}

void topfmt_gpu_columns(struct strbuf *sb)
{
	strbuf_addf(sb, "%*s %*s %*s  NAME", GPU_PCT_WIDTH, "%GPUTIME",
		    GPU_TIME_WIDTH, "GPUTIME", GPU_CALLS_WIDTH, "CALLS");
}

void topfmt_gpu_numbers(struct strbuf *sb, const struct gputop_view *v,
			const struct gputop_row *r)
{
	char time[32];

	format_gpu_time(time, sizeof(time), r->ns);
	strbuf_addf(sb, "%*.1f %*s %*llu  ", GPU_PCT_WIDTH,
		    v->ns ? 100.0 * (double)r->ns / (double)v->ns : 0.0,
		    GPU_TIME_WIDTH, time, GPU_CALLS_WIDTH,
		    (unsigned long long)r->calls);
}

void topfmt_gpu_idle(const struct top_model *m, const struct gputop_view *v,
		     struct strbuf *sb)
{
	size_t i;

	if (!v->idle_ns || !v->nr_idle_top) {
		strbuf_addstr(sb, "n/a");
		return;
	}
	for (i = 0; i < v->nr_idle_top; i++) {
		const struct stack_frame *f =
		    &m->tt->names.frames[v->idle_top[i].site];

		strbuf_addf(sb, "%s%.1f%% %s", i ? "; " : "",
			    100.0 * (double)v->idle_top[i].ns /
				(double)v->idle_ns,
			    f->name);
		/* As rows name a function (topfmt_row_tail). */
		if (f->file[0] && f->line > 0)
			strbuf_addf(sb, " (%s:%d)", f->file, f->line);
		else if (f->file[0])
			strbuf_addf(sb, " (%s)", f->file);
		if (v->idle_top[i].site < m->tt->alloc_native &&
		    m->tt->native[v->idle_top[i].site])
			strbuf_addstr(sb, " [native]");
	}
}
