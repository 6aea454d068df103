/* SPDX-License-Identifier: MIT */
/*
 * spyc top's plain-text snapshots, for when standard output is not a
 * terminal: "key: value" lines, then the table, for scripts and tests.
 */
#include <errno.h>
#include <stdio.h>

#include "ui/topformat.h"
#include "ui/topview.h"

/* Plain-text snapshots list at most this many rows. */
#define PLAIN_MAX_ROWS 50
/* --gpu: rows of the GPU table. */
#define GPU_PLAIN_ROWS 20

/* Write s with control characters as '?': one line stays one line. */
static void put_clean(FILE *fp, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, fp);
}

/* --gpu: the GPU section's lines of a snapshot's header. */
static void print_gpu_header(const struct top_model *m, FILE *fp)
{
	const struct gputop_view *v = m->gpu_window;
	struct strbuf sb = STRBUF_INIT;
	char busy[32];
	int on = m->gpu_collecting;

	fputs("gpu: ", fp);
	if (on) {
		fputs("collecting", fp);
		if (m->gpu_how[0]) {
			fputs("; ", fp);
			put_clean(fp, m->gpu_how);
		}
	} else {
		put_clean(fp, m->gpu_why);
	}
	fprintf(fp, "\ngpu window: %.2f s\n", (double)v->wall_ns / 1e9);
	topfmt_gpu_busy(v, busy, sizeof(busy));
	fprintf(fp, "gpu busy: %s\n", on ? busy : "n/a");
	if (on)
		topfmt_gpu_idle(m, v, &sb);
	fputs("gpu idle in: ", fp);
	put_clean(fp, on ? sb.buf : "n/a");
	fputc('\n', fp);
	strbuf_reset(&sb);
	topfmt_gpu_work(v, &sb);
	fprintf(fp, "gpu work: %s\n", sb.buf);
	if (m->gpu_lost_known)
		fprintf(fp, "gpu lost: %llu\n",
			(unsigned long long)m->gpu_lost);
	else
		fputs("gpu lost: n/a\n", fp);
	strbuf_release(&sb);
}

/* --gpu: the GPU table of a snapshot, then a blank line. */
static void print_gpu_table(const struct top_model *m, FILE *fp)
{
	const struct gputop_view *v = m->gpu_window;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	topfmt_gpu_columns(&sb);
	fprintf(fp, "%s\n", sb.buf);
	for (i = 0; i < v->nr_rows && i < GPU_PLAIN_ROWS; i++) {
		strbuf_reset(&sb);
		topfmt_gpu_numbers(&sb, v, &v->rows[i]);
		fputs(sb.buf, fp);
		put_clean(fp, v->rows[i].name);
		fputc('\n', fp);
	}
	fputc('\n', fp);
	strbuf_release(&sb);
}

int toptext_print(FILE *fp, const struct top_model *m, uint64_t snapshot)
{
	struct strbuf sb = STRBUF_INIT;
	char idle[32], gil[32];
	size_t i;

	fprintf(fp, "snapshot: %llu\n", (unsigned long long)snapshot);
	fprintf(fp, "time: %.2f\n", m->elapsed);
	fprintf(fp, "pid: %d\n", m->pid);
	fputs("command: ", fp);
	put_clean(fp, m->cmdline);
	if (m->program_output) {
		fputs("\noutput: ", fp);
		put_clean(fp, m->program_output);
	}
	fprintf(fp, "\npython: %s\n", m->python);
	if (m->subprocesses)
		fprintf(fp, "processes: %u\n", m->processes);
	fprintf(fp, "threads: %u\n", m->threads);
	fprintf(fp, "samples/s: %s\n", m->rate ? m->rate : "n/a");
	topfmt_pct(idle, sizeof(idle), m->snap->idle_pct);
	topfmt_gil(m, gil, sizeof(gil));
	fprintf(fp, "idle: %s\ngil: %s\n", idle, gil);
	fprintf(fp, "errors: %s\n", m->errors);
	topfmt_view(m, &sb);
	fprintf(fp, "view: %s\n", sb.buf);
	strbuf_reset(&sb);
	if (m->gpu)
		print_gpu_header(m, fp);
	fputc('\n', fp);
	topfmt_columns(&sb, 0, NULL);
	fprintf(fp, "%s\n", sb.buf);
	for (i = 0; i < m->snap->nr_rows && i < PLAIN_MAX_ROWS; i++) {
		const struct top_row *r = &m->snap->rows[i];
		char tail[64];

		strbuf_reset(&sb);
		topfmt_numbers(&sb, r);
		fputs(sb.buf, fp);
		put_clean(fp, r->name);
		if (topfmt_row_has_file(r)) {
			fputs(" (", fp);
			put_clean(fp, r->file);
		}
		topfmt_row_tail(r, tail, sizeof(tail));
		fprintf(fp, "%s\n", tail);
	}
	strbuf_release(&sb);
	fputc('\n', fp);
	if (m->gpu)
		print_gpu_table(m, fp);
	if (fflush(fp) || ferror(fp)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}
