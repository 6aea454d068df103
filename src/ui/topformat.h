/* SPDX-License-Identifier: MIT */
/*
 * The words and numbers that top's screen and plain-text views share:
 * the columns' widths, a row's numbers and function, the view and the
 * GPU section in words.
 */
#ifndef SPYC_TOPFORMAT_H
#define SPYC_TOPFORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "ui/topview.h"
#include "util.h"

/* The table's columns, in characters. */
#define PCT_WIDTH 6
#define TIME_WIDTH 9
#define THREAD_WIDTH 14
/* The GPU table's columns, in characters. */
#define GPU_PCT_WIDTH 8
#define GPU_TIME_WIDTH 10
#define GPU_CALLS_WIDTH 8

/* "1.25s"; "n/a" for a negative share, else "12.5%". */
void topfmt_time(char *buf, size_t size, double seconds);
void topfmt_pct(char *buf, size_t size, double pct);
/* The header's GIL share: "none" for a free-threaded target, no GIL. */
void topfmt_gil(const struct top_model *m, char *buf, size_t size);
/* A row's thread: "all", its name, "tid N", "PID/name" or "PID". */
void topfmt_thread(const struct top_model *m, uint32_t thread, char *buf,
		   size_t size);
/* "recent (2 s half-life), per line, sort %OWN" */
void topfmt_view(const struct top_model *m, struct strbuf *sb);
/*
 * The column names as the table's first line, aligned over the numbers;
 * at (if not NULL) gets where each name starts.
 */
void topfmt_columns(struct strbuf *sb, int per_thread, int *at);
/*
 * A row's function is "name (file:line)", a native one's with " [native]"
 * after it.  What is not known is left out, never made up as ":0": the
 * line where DWARF gives none ("name (file) [native]"), the file too
 * where it gives nothing ("name [native]") and for the stand-in root of
 * a stack cut at --max-depth ("[K frames not read]").
 */
int topfmt_row_has_file(const struct top_row *r);
/* What follows the file name: ":line)" or ")", then " [native]". */
void topfmt_row_tail(const struct top_row *r, char *buf, size_t size);
/* A row's numbers, padded up to where the function's name goes. */
void topfmt_numbers(struct strbuf *sb, const struct top_row *r);

/* --gpu */
/* "last 1.00 s" or "whole run, 12.00 s": the time the view covers. */
void topfmt_gpu_window(const struct top_model *m, struct strbuf *sb);
/* "400 kernels, 100 copies, 0 memsets" */
void topfmt_gpu_work(const struct gputop_view *v, struct strbuf *sb);
void topfmt_gpu_busy(const struct gputop_view *v, char *buf, size_t size);
void topfmt_gpu_columns(struct strbuf *sb);
/* A GPU row's numbers, padded up to where its name goes. */
void topfmt_gpu_numbers(struct strbuf *sb, const struct gputop_view *v,
			const struct gputop_row *r);
/*
 * What the launching threads ran while the GPU was idle in view v:
 * "62.1% host_work (idle.py:27); 20.0% ...", shares of the idle time
 * their samples stood for; "n/a" when there was none.
 */
void topfmt_gpu_idle(const struct top_model *m, const struct gputop_view *v,
		     struct strbuf *sb);

#endif
