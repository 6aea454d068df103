/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of spyc top's plain-text view: a snapshot printed from a
 * model over a toptable of known samples says what the table holds, in
 * its columns, one line per row, whatever the names hold; its header
 * says what the model says; a write that fails is reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/topview.h"
#include "util.h"

#include "check.h"

/* A sample every 10 ms, as at the default rate. */
#define DT 0.01

static const struct top_sample_info one_running = {1, 1, 0, 1};

struct fixture {
	struct toptable tt;
	struct top_view view;
	struct top_snapshot snap;
	struct top_model m;
	uint32_t work, main_, odd, native;
};

/*
 * 100 samples of one thread: 60 in work() under main(), 25 in main()
 * alone, 10 in a function whose name holds a newline and a tab, 5 in a
 * native function that DWARF gives no file for.
 */
static void fixture_init(struct fixture *f)
{
	uint32_t th, st[2];
	double now = 0;
	int i;

	memset(f, 0, sizeof(*f));
	toptable_init(&f->tt, 2.0);
	th = toptable_thread(&f->tt, 1, 100, NULL);
	f->main_ = toptable_site(&f->tt, "main", "app.py", 3, 1);
	f->work = toptable_site(&f->tt, "work", "lib/work.py", 12, 10);
	f->odd = toptable_site(&f->tt, "odd\nname\t", "app.py", 7, 6);
	f->native = toptable_native_site(&f->tt, "memcpy", "", 0, NULL, 0);
	for (i = 0; i < 100; i++) {
		now += DT;
		toptable_sample(&f->tt, now, DT, &one_running);
		st[1] = f->main_;
		if (i < 60)
			st[0] = f->work;
		else if (i < 85)
			st[0] = f->main_;
		else if (i < 95)
			st[0] = f->odd;
		else
			st[0] = f->native;
		if (st[0] == f->main_)
			toptable_add(&f->tt, th, st + 1, 1);
		else
			toptable_add(&f->tt, th, st, 2);
	}
	f->view.per_line = 1;
	f->view.sort = TOP_COL_OWN_TIME;
	toptable_snapshot(&f->tt, &f->view, &f->snap);
	f->m.pid = 4242;
	f->m.cmdline = "python app.py";
	f->m.python = "3.99.1";
	f->m.threads = 1;
	f->m.rate = "99.5";
	f->m.errors = "none";
	f->m.elapsed = 1.5;
	f->m.tt = &f->tt;
	f->m.view = &f->view;
	f->m.snap = &f->snap;
}

static void fixture_release(struct fixture *f)
{
	top_snapshot_release(&f->snap);
	toptable_release(&f->tt);
}

/* m printed as snapshot 7, into a string to free. */
static char *print(const struct top_model *m, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	*ret = toptext_print(fp, m, 7);
	fclose(fp);
	return buf;
}

/* The value of "key: value" in text, into out; 0 if there is no such line. */
static int value(const char *text, const char *key, char *out, size_t size)
{
	size_t n = strlen(key);
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ':' && p[n + 1] == ' ') {
			const char *end = strchr(p, '\n');
			size_t len =
			    (end ? (size_t)(end - p) : strlen(p)) - n - 2;

			if (len >= size)
				len = size - 1;
			memcpy(out, p + n + 2, len);
			out[len] = '\0';
			return 1;
		}
	return 0;
}

/* Where a row's name starts: after its numbers (%OWN %TOTAL OWNTIME TOTALTIME).
 */
#define NAME_AT (6 + 1 + 6 + 1 + 9 + 1 + 9 + 2)

/* The line of the table whose row's function starts with name, into out;
 * 0 if none. */
static int row_line(const char *text, const char *name, char *out, size_t size)
{
	const char *p = strstr(text, "\n\n");

	for (p = p ? p + 2 : NULL; p && *p;
	     p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len > NAME_AT && len < size &&
		    !strncmp(p + NAME_AT, name, strlen(name))) {
			memcpy(out, p, len);
			out[len] = '\0';
			return 1;
		}
	}
	return 0;
}

static void test_header(void)
{
	struct fixture f;
	char v[256], want[256];
	char *text;
	int ret;

	fixture_init(&f);
	text = print(&f.m, &ret);
	CHECK(ret == 0);
	CHECK(value(text, "snapshot", v, sizeof(v)) && !strcmp(v, "7"));
	CHECK(value(text, "time", v, sizeof(v)) && !strcmp(v, "1.50"));
	CHECK(value(text, "pid", v, sizeof(v)) && !strcmp(v, "4242"));
	CHECK(value(text, "command", v, sizeof(v)) && !strcmp(v, f.m.cmdline));
	CHECK(value(text, "python", v, sizeof(v)) && !strcmp(v, "3.99.1"));
	CHECK(value(text, "samples/s", v, sizeof(v)) && !strcmp(v, "99.5"));
	CHECK(value(text, "errors", v, sizeof(v)) && !strcmp(v, "none"));
	/* Every thread-sample ran, one thread held the GIL in each. */
	snprintf(want, sizeof(want), "%.1f%%", f.snap.idle_pct);
	CHECK(value(text, "idle", v, sizeof(v)) && !strcmp(v, want));
	CHECK(!strcmp(v, "0.0%"));
	CHECK(value(text, "gil", v, sizeof(v)) && !strcmp(v, "100.0%"));
	CHECK(value(text, "view", v, sizeof(v)) &&
	      !strcmp(v, "whole run, per line, sort OWNTIME"));
	/* Not following a tree, not launched, no --gpu: none of theirs. */
	CHECK(!value(text, "processes", v, sizeof(v)));
	CHECK(!value(text, "output", v, sizeof(v)));
	CHECK(!value(text, "gpu", v, sizeof(v)));
	free(text);

	/* Not known yet; no GIL; a tree; a launched program's output. */
	f.m.rate = NULL;
	f.m.free_threaded = 1;
	f.m.subprocesses = 1;
	f.m.processes = 3;
	f.m.program_output = "spyc-1.out";
	text = print(&f.m, &ret);
	CHECK(value(text, "samples/s", v, sizeof(v)) && !strcmp(v, "n/a"));
	CHECK(value(text, "gil", v, sizeof(v)) && !strcmp(v, "none"));
	CHECK(value(text, "processes", v, sizeof(v)) && !strcmp(v, "3"));
	CHECK(value(text, "output", v, sizeof(v)) && !strcmp(v, "spyc-1.out"));
	free(text);
	fixture_release(&f);
}

static void test_rows(void)
{
	struct fixture f;
	char line[512], want[512], own[32], total[32];
	char *text, *p;
	size_t i, rows = 0;
	int ret;

	fixture_init(&f);
	text = print(&f.m, &ret);
	/* One line per row of the snapshot, each the row's numbers. */
	CHECK(f.snap.nr_rows == 4);
	for (i = 0; i < f.snap.nr_rows; i++) {
		const struct top_row *r = &f.snap.rows[i];
		const char *name = r->name;

		if (strchr(name, '\n'))
			name = "odd?name?";
		CHECK(row_line(text, name, line, sizeof(line)));
		snprintf(own, sizeof(own), "%.2fs", r->own_time);
		snprintf(total, sizeof(total), "%.2fs", r->total_time);
		snprintf(want, sizeof(want), "%6.1f %6.1f %9s %9s  %s",
			 r->own_pct, r->total_pct, own, total, name);
		CHECK(!strncmp(line, want, strlen(want)));
	}
	/* The counts themselves: 60, 25 and 100, 10, 5 of 100 samples. */
	CHECK(row_line(text, "work (lib/work.py:12)", line, sizeof(line)));
	CHECK(!strncmp(line, "  60.0   60.0     0.60s     0.60s  ", NAME_AT));
	CHECK(row_line(text, "main (app.py:3)", line, sizeof(line)));
	CHECK(!strncmp(line, "  25.0  100.0     0.25s     1.00s  ", NAME_AT));
	/* Control characters stay out: one row, one line. */
	CHECK(row_line(text, "odd?name? (app.py:7)", line, sizeof(line)));
	CHECK(!strncmp(line, "  10.0   10.0 ", 14));
	/* Nothing made up where DWARF gave nothing. */
	CHECK(row_line(text, "memcpy [native]", line, sizeof(line)));
	CHECK(!strstr(line, "(") && !strstr(line, ":0"));
	/* Sorted on own time, largest first. */
	CHECK(strstr(text, "work (") < strstr(text, "main (") &&
	      strstr(text, "main (") < strstr(text, "odd?name?") &&
	      strstr(text, "odd?name?") < strstr(text, "memcpy"));
	/* The rows, then one blank line. */
	p = strstr(text, "%OWN");
	CHECK(p != NULL);
	for (p = p ? strchr(p, '\n') : NULL; p && p[1] && p[1] != '\n';
	     p = strchr(p + 1, '\n'))
		rows++;
	CHECK(rows == f.snap.nr_rows);
	free(text);
	fixture_release(&f);
}

static void test_gpu_not_collecting(void)
{
	struct fixture f;
	struct gputop_view window;
	char v[256];
	char *text;
	int ret;

	fixture_init(&f);
	memset(&window, 0, sizeof(window));
	f.m.gpu = 1;
	f.m.gpu_why = "pid 4242 used no CUDA yet";
	f.m.gpu_how = "";
	f.m.gpu_window = f.m.gpu_shown = &window;
	text = print(&f.m, &ret);
	CHECK(ret == 0);
	CHECK(value(text, "gpu", v, sizeof(v)) && !strcmp(v, f.m.gpu_why));
	CHECK(value(text, "gpu busy", v, sizeof(v)) && !strcmp(v, "n/a"));
	CHECK(value(text, "gpu idle in", v, sizeof(v)) && !strcmp(v, "n/a"));
	CHECK(value(text, "gpu lost", v, sizeof(v)) && !strcmp(v, "n/a"));
	free(text);

	f.m.gpu_collecting = 1;
	f.m.gpu_how = "agent loaded by the CUDA driver";
	f.m.gpu_lost_known = 1;
	f.m.gpu_lost = 12;
	text = print(&f.m, &ret);
	CHECK(value(text, "gpu", v, sizeof(v)) &&
	      !strcmp(v, "collecting; agent loaded by the CUDA driver"));
	CHECK(value(text, "gpu lost", v, sizeof(v)) && !strcmp(v, "12"));
	CHECK(value(text, "gpu work", v, sizeof(v)) &&
	      !strcmp(v, "0 kernels, 0 copies, 0 memsets"));
	free(text);
	fixture_release(&f);
}

/* A full disk: -1, with errno saying so, not a snapshot cut silently. */
static void test_write_fails(void)
{
	struct fixture f;
	FILE *fp = fopen("/dev/full", "w");

	if (!fp) {
		fprintf(stderr, "test-topview: no /dev/full: skipped\n");
		return;
	}
	fixture_init(&f);
	errno = 0;
	CHECK(toptext_print(fp, &f.m, 1) == -1);
	CHECK(errno == ENOSPC);
	fclose(fp);
	fixture_release(&f);
}

int main(void)
{
	test_header();
	test_rows();
	test_gpu_not_collecting();
	test_write_fails();
	return failed;
}
