/* SPDX-License-Identifier: MIT */
/* Unit tests of spyc top's numbers: own and total, lines and functions,
 * sorting, the recent view's decay, threads. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py/framename.h"
#include "ui/toptable.h"
#include "util.h"

#include "check.h"

/* A sample every 10 ms, as at the default rate. */
#define DT 0.01
#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

static const struct top_sample_info one_running = {1, 0, 0, 0};

/* The row named name (and at line, unless line < 0), or NULL. */
static const struct top_row *find(const struct top_snapshot *s,
				  const char *name, int line)
{
	size_t i;

	for (i = 0; i < s->nr_rows; i++)
		if (!strcmp(s->rows[i].name, name) &&
		    (line < 0 || s->rows[i].line == line))
			return &s->rows[i];
	return NULL;
}

static double now_s;

/* One sample of a single thread with stack sites[0..n-1], innermost first. */
static void sample(struct toptable *tt, uint32_t thread, const uint32_t *sites,
		   size_t n)
{
	now_s += DT;
	toptable_sample(tt, now_s, DT, &one_running);
	toptable_add(tt, thread, sites, n);
}

static void test_own_total_recursion(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 0, 0, TOP_COL_OWN_TIME};
	const struct top_row *r;
	uint32_t th, st[5];

	toptable_init(&tt, 2.0);
	now_s = 0;
	th = toptable_thread(&tt, 1, 100, NULL);
	/* main -> f (line 10) -> g -> f (line 12) -> f (line 12) */
	st[4] = toptable_site(&tt, "main", "app.py", 1, 1);
	st[3] = toptable_site(&tt, "f", "app.py", 10, 9);
	st[2] = toptable_site(&tt, "g", "app.py", 20, 19);
	st[1] = toptable_site(&tt, "f", "app.py", 12, 9);
	st[0] = st[1];
	sample(&tt, th, st, 5);
	sample(&tt, th, st + 2, 3); /* g -> f -> main */

	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 3);
	CHECK(NEAR(s.wall, 2 * DT));
	r = find(&s, "f", -1);
	CHECK(r && NEAR(r->own_time, DT) && NEAR(r->total_time, 2 * DT));
	CHECK(r && NEAR(r->own_pct, 50.0) && NEAR(r->total_pct, 100.0));
	/* Per function, the line shown is where it starts. */
	CHECK(r && r->line == 9 && !strcmp(r->file, "app.py"));
	CHECK(r && r->thread == TOP_ALL_THREADS);
	r = find(&s, "g", -1);
	CHECK(r && NEAR(r->own_time, DT) && NEAR(r->total_time, 2 * DT));
	r = find(&s, "main", -1);
	CHECK(r && NEAR(r->own_time, 0) && NEAR(r->total_pct, 100.0));

	/* Per line: line 12 recurred in the first sample, counted once. */
	v.per_line = 1;
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 4);
	r = find(&s, "f", 12);
	CHECK(r && NEAR(r->own_time, DT) && NEAR(r->total_time, DT));
	r = find(&s, "f", 10);
	CHECK(r && NEAR(r->own_time, 0) && NEAR(r->total_time, 2 * DT));
	CHECK(!find(&s, "f", 9));

	top_snapshot_release(&s);
	toptable_release(&tt);
}

static void test_lines_and_functions(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 0, 0, TOP_COL_OWN_TIME};
	const struct top_row *r;
	uint32_t th, a10, a11, other, i;

	toptable_init(&tt, 2.0);
	now_s = 0;
	th = toptable_thread(&tt, 1, 0, NULL);
	a10 = toptable_site(&tt, "a", "x.py", 10, 8);
	a11 = toptable_site(&tt, "a", "x.py", 11, 8);
	/* Same name, another file: another function. */
	other = toptable_site(&tt, "a", "y.py", 3, 2);
	CHECK(a10 != a11 && a10 != other);
	CHECK(toptable_site(&tt, "a", "x.py", 10, 8) == a10);
	for (i = 0; i < 3; i++)
		sample(&tt, th, &a10, 1);
	for (i = 0; i < 2; i++)
		sample(&tt, th, &a11, 1);
	for (i = 0; i < 4; i++)
		sample(&tt, th, &other, 1);

	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 2);
	/* a in x.py (5 samples) before a in y.py (4). */
	CHECK(!strcmp(s.rows[0].file, "x.py") && s.rows[0].line == 8);
	CHECK(NEAR(s.rows[0].own_time, 5 * DT));
	CHECK(!strcmp(s.rows[1].file, "y.py") && s.rows[1].line == 2);
	CHECK(NEAR(s.rows[1].own_time, 4 * DT));

	v.per_line = 1;
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 3);
	CHECK(!strcmp(s.rows[0].file, "y.py") && s.rows[0].line == 3);
	CHECK(s.rows[1].line == 10 && NEAR(s.rows[1].own_time, 3 * DT));
	CHECK(s.rows[2].line == 11 && NEAR(s.rows[2].own_time, 2 * DT));
	r = find(&s, "a", 11);
	CHECK(r && NEAR(r->own_pct, 100.0 * 2 / 9));

	top_snapshot_release(&s);
	toptable_release(&tt);
}

static void test_sorting(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 0, 0, TOP_COL_OWN_TIME};
	uint32_t th, st[2], zed, i;

	toptable_init(&tt, 2.0);
	now_s = 0;
	th = toptable_thread(&tt, 1, 0, NULL);
	/* inner: own 3, total 3; outer: own 2, total 5; zed: own 1. */
	st[0] = toptable_site(&tt, "inner", "m.py", 5, 4);
	st[1] = toptable_site(&tt, "outer", "m.py", 9, 8);
	zed = toptable_site(&tt, "zed", "m.py", 20, 19);
	for (i = 0; i < 3; i++)
		sample(&tt, th, st, 2);
	for (i = 0; i < 2; i++)
		sample(&tt, th, st + 1, 1);
	sample(&tt, th, &zed, 1);

	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 3);
	CHECK(!strcmp(s.rows[0].name, "inner"));
	CHECK(!strcmp(s.rows[1].name, "outer"));
	CHECK(!strcmp(s.rows[2].name, "zed"));
	v.sort = TOP_COL_OWN_PCT;
	toptable_snapshot(&tt, &v, &s);
	CHECK(!strcmp(s.rows[0].name, "inner"));
	CHECK(!strcmp(s.rows[2].name, "zed"));
	v.sort = TOP_COL_TOTAL_TIME;
	toptable_snapshot(&tt, &v, &s);
	CHECK(!strcmp(s.rows[0].name, "outer"));
	CHECK(!strcmp(s.rows[1].name, "inner"));
	CHECK(NEAR(s.rows[0].total_pct, 100.0 * 5 / 6));
	v.sort = TOP_COL_TOTAL_PCT;
	toptable_snapshot(&tt, &v, &s);
	CHECK(!strcmp(s.rows[0].name, "outer"));
	CHECK(!strcmp(s.rows[2].name, "zed"));
	v.sort = TOP_COL_FUNCTION;
	toptable_snapshot(&tt, &v, &s);
	CHECK(!strcmp(s.rows[0].name, "inner"));
	CHECK(!strcmp(s.rows[1].name, "outer"));
	CHECK(!strcmp(s.rows[2].name, "zed"));
	/* The recent view sorts the same way when nothing changed phase. */
	v.recent = 1;
	v.sort = TOP_COL_TOTAL_TIME;
	toptable_snapshot(&tt, &v, &s);
	CHECK(!strcmp(s.rows[0].name, "outer"));
	CHECK(!strcmp(top_column_name(TOP_COL_OWN_PCT), "%OWN"));
	CHECK(!strcmp(top_column_name(TOP_COL_NR), "?"));

	top_snapshot_release(&s);
	toptable_release(&tt);
}

/* The recent view forgets a phase that ended; the whole run does not. */
static void test_decay(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 0, 1, TOP_COL_OWN_TIME};
	const struct top_row *old, *cur;
	uint32_t th, a, b, i;
	double half = 2.0;

	toptable_init(&tt, half);
	now_s = 0;
	th = toptable_thread(&tt, 1, 0, NULL);
	a = toptable_site(&tt, "old_phase", "p.py", 1, 1);
	b = toptable_site(&tt, "new_phase", "p.py", 2, 2);
	/* 100 s of each: long enough to renormalise the weights. */
	for (i = 0; i < 10000; i++)
		sample(&tt, th, &a, 1);
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 1 && NEAR(s.rows[0].own_pct, 100.0));
	/* A steady phase: recent time tends to half / ln 2 seconds. */
	CHECK(fabs(s.rows[0].own_time - half / log(2.0)) < 0.01);
	for (i = 0; i < 10000; i++)
		sample(&tt, th, &b, 1);

	toptable_snapshot(&tt, &v, &s);
	CHECK(!strcmp(s.rows[0].name, "new_phase"));
	old = find(&s, "old_phase", -1);
	cur = find(&s, "new_phase", -1);
	CHECK(old && old->own_pct < 1e-6);
	CHECK(cur && cur->own_pct > 99.999);

	v.recent = 0;
	toptable_snapshot(&tt, &v, &s);
	old = find(&s, "old_phase", -1);
	cur = find(&s, "new_phase", -1);
	CHECK(old && NEAR(old->own_pct, 50.0) && NEAR(old->own_time, 100.0));
	CHECK(cur && NEAR(cur->own_pct, 50.0));

	/* A second after a change, the new phase shows up already. */
	for (i = 0; i < 100; i++)
		sample(&tt, th, &a, 1);
	v.recent = 1;
	toptable_snapshot(&tt, &v, &s);
	old = find(&s, "old_phase", -1);
	/* 1 - 2^(-1/2): 29% of the weight is in the last second. */
	CHECK(old && fabs(old->own_pct - 100.0 * (1 - pow(2, -0.5))) < 0.5);
	CHECK(!strcmp(s.rows[1].name, "old_phase"));

	top_snapshot_release(&s);
	toptable_release(&tt);
}

static void test_threads(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 1, 0, TOP_COL_OWN_TIME};
	const struct top_row *r;
	uint32_t t1, t2, f, g, st[2], i;
	size_t j;

	toptable_init(&tt, 2.0);
	now_s = 0;
	t1 = toptable_thread(&tt, 0x1000, 11, NULL);
	t2 = toptable_thread(&tt, 0x2000, 22, NULL);
	CHECK(t1 != t2 && toptable_thread(&tt, 0x1000, 11, NULL) == t1);
	f = toptable_site(&tt, "f", "t.py", 1, 1);
	g = toptable_site(&tt, "g", "t.py", 5, 5);
	st[0] = g;
	st[1] = f;
	/* Both threads in every sample: t1 runs f, t2 runs g from f. */
	for (i = 0; i < 10; i++) {
		static const struct top_sample_info two = {2, 0, 0, 0};

		now_s += DT;
		toptable_sample(&tt, now_s, DT, &two);
		toptable_add(&tt, t1, &f, 1);
		toptable_add(&tt, t2, st, 2);
	}
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 3);
	for (j = 0; j < s.nr_rows; j++) {
		r = &s.rows[j];
		if (!strcmp(r->name, "f") && r->thread == t1)
			CHECK(NEAR(r->own_pct, 100.0) &&
			      NEAR(r->total_pct, 100.0));
		else if (!strcmp(r->name, "f") && r->thread == t2)
			CHECK(NEAR(r->own_pct, 0) && NEAR(r->total_pct, 100.0));
		else
			CHECK(!strcmp(r->name, "g") && r->thread == t2 &&
			      NEAR(r->own_pct, 100.0));
	}
	CHECK(tt.names.threads[t2].tid == 22);

	/* Summed: f ran on two threads at once, like top's 200% CPU. */
	v.per_thread = 0;
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 2);
	r = find(&s, "f", -1);
	CHECK(r && NEAR(r->own_pct, 100.0) && NEAR(r->total_pct, 200.0));
	CHECK(r && NEAR(r->total_time, 20 * DT));

	top_snapshot_release(&s);
	toptable_release(&tt);
}

/* --subprocesses: per process, the threads of one process add up. */
static void test_processes(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, TOP_PER_PROCESS, 0, TOP_COL_OWN_TIME};
	uint32_t a1, a2, b1, f, i;
	size_t j, rows_a = 0, rows_b = 0;

	toptable_init(&tt, 2.0);
	now_s = 0;
	/* A forked child's main thread has its parent's ident. */
	a1 = toptable_thread_in(&tt, "100", 0x1000, 100, NULL);
	a2 = toptable_thread_in(&tt, "100", 0x2000, 101, NULL);
	b1 = toptable_thread_in(&tt, "200", 0x1000, 200, NULL);
	CHECK(a1 != b1 && a2 != b1 && a1 != a2);
	f = toptable_site(&tt, "f", "t.py", 1, 1);
	for (i = 0; i < 10; i++) {
		static const struct top_sample_info three = {3, 0, 0, 0};

		now_s += DT;
		toptable_sample(&tt, now_s, DT, &three);
		toptable_add(&tt, a1, &f, 1);
		toptable_add(&tt, a2, &f, 1);
		toptable_add(&tt, b1, &f, 1);
	}
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 2);
	for (j = 0; j < s.nr_rows; j++) {
		const struct top_row *r = &s.rows[j];

		if (r->thread == a1) {
			rows_a++;
			CHECK(NEAR(r->own_pct, 200.0) &&
			      NEAR(r->own_time, 20 * DT));
		} else if (r->thread == b1) {
			rows_b++;
			CHECK(NEAR(r->own_pct, 100.0));
		}
	}
	CHECK(rows_a == 1 && rows_b == 1);
	/* Per thread: three rows; summed: one. */
	v.per_thread = TOP_PER_THREAD;
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 3);
	v.per_thread = 0;
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 1 && NEAR(s.rows[0].own_pct, 300.0));
	top_snapshot_release(&s);
	toptable_release(&tt);
}

static void test_idle_gil(void)
{
	static const struct top_sample_info unknown = {3, 0, 0, 0};
	static const struct top_sample_info half_idle = {4, 4, 2, 1};
	static const struct top_sample_info all_idle = {2, 2, 2, 0};
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 0, 0, TOP_COL_OWN_TIME};

	toptable_init(&tt, 2.0);
	toptable_sample(&tt, 1.0, DT, &unknown);
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.idle_pct < 0 && s.gil_pct < 0 && s.nr_rows == 0);
	toptable_sample(&tt, 2.0, DT, &half_idle);
	toptable_sample(&tt, 3.0, DT, &all_idle);
	toptable_snapshot(&tt, &v, &s);
	/* 2 + 2 idle of 4 + 2 known thread-samples; GIL in 1 of 2. */
	CHECK(NEAR(s.idle_pct, 100.0 * 4 / 6));
	CHECK(NEAR(s.gil_pct, 50.0));
	CHECK(NEAR(s.wall, 3 * DT));
	top_snapshot_release(&s);
	toptable_release(&tt);
}

/* Counting stacks seen before must not touch the heap (the hot path). */
static void test_no_alloc(void)
{
#ifdef __GLIBC__
	struct toptable tt;
	struct mallinfo2 before, after;
	uint32_t th[2], st[3];
	size_t i;

	toptable_init(&tt, 2.0);
	now_s = 0;
	th[0] = toptable_thread(&tt, 1, 0, NULL);
	th[1] = toptable_thread(&tt, 2, 0, NULL);
	st[0] = toptable_site(&tt, "c", "a.py", 3, 3);
	st[1] = toptable_site(&tt, "b", "a.py", 2, 2);
	st[2] = toptable_site(&tt, "a", "a.py", 1, 1);
	sample(&tt, th[0], st, 3);
	sample(&tt, th[1], st + 1, 2);
	toptable_add(&tt, th[1], st, 3);
	before = mallinfo2();
	for (i = 0; i < 20000; i++) {
		sample(&tt, th[i & 1], st + (i & 1), 3 - (i & 1));
		toptable_add(&tt, th[1], st, 3);
	}
	after = mallinfo2();
	CHECK(before.uordblks == after.uordblks);
	CHECK(before.hblkhd == after.hblkhd);
	toptable_release(&tt);
#endif
}

static uint32_t next_id;

static uint32_t make_id(void *ctx, const struct pycode *code, int line)
{
	(*(int *)ctx)++;
	return next_id++;
}

/* Top names sites once per line of a code object. */
static void test_line_ids(void)
{
	struct pycode code;
	int made = 0;

	memset(&code, 0, sizeof(code));
	next_id = 7;
	CHECK(pycode_line_id(&code, 10, make_id, &made) == 7);
	CHECK(pycode_line_id(&code, 11, make_id, &made) == 8);
	CHECK(pycode_line_id(&code, 10, make_id, &made) == 7);
	CHECK(made == 2 && code.nr_lines == 2);
	free(code.lines);

	CHECK(!strcmp(short_filename("/usr/lib/python3.11/site-packages/"
				     "numpy/core.py",
				     "/home/me"),
		      "numpy/core.py"));
	CHECK(!strcmp(
	    short_filename("/usr/lib/python3.11/json/decoder.py", "/home/me"),
	    "json/decoder.py"));
	CHECK(!strcmp(short_filename("/home/me/app/main.py", "/home/me"),
		      "app/main.py"));
	CHECK(!strcmp(short_filename("/home/meow/main.py", "/home/me"),
		      "/home/meow/main.py"));
	CHECK(!strcmp(short_filename("main.py", ""), "main.py"));
}

/*
 * Native rows: marked native; per function at the function's declared
 * file and line, one row however many headers its inlined code is in;
 * none made up where DWARF says nothing.
 */
static void test_native_sites(void)
{
	struct toptable tt;
	struct top_snapshot s = {0};
	struct top_view v = {0, 0, 0, TOP_COL_OWN_TIME};
	const struct top_row *r;
	uint32_t th, st[4];

	toptable_init(&tt, 2.0);
	now_s = 0;
	th = toptable_thread(&tt, 1, 100, NULL);
	/* _start -> main.py's f -> c_add, inlined code of c_add in a header */
	st[3] = toptable_native_site(&tt, "_start", "", 0, NULL, 0);
	st[2] = toptable_site(&tt, "f", "main.py", 5, 4);
	st[1] =
	    toptable_native_site(&tt, "c_add", "long.c", 120, "long.c", 100);
	st[0] =
	    toptable_native_site(&tt, "c_add", "inline.h", 7, "long.c", 100);
	sample(&tt, th, st, 4);
	sample(&tt, th, st + 1, 3);

	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 3);
	r = find(&s, "c_add", -1);
	CHECK(r && r->native && !strcmp(r->file, "long.c") && r->line == 100);
	CHECK(r && NEAR(r->own_pct, 100.0));
	r = find(&s, "_start", -1);
	CHECK(r && r->native && !strcmp(r->file, "") && r->line == 0);
	CHECK(r && NEAR(r->total_pct, 100.0) && NEAR(r->own_pct, 0.0));
	r = find(&s, "f", -1);
	CHECK(r && !r->native && r->line == 4);

	v.per_line = 1;
	toptable_snapshot(&tt, &v, &s);
	CHECK(s.nr_rows == 4);
	r = find(&s, "c_add", 7);
	CHECK(r && r->native && !strcmp(r->file, "inline.h"));
	r = find(&s, "c_add", 120);
	CHECK(r && r->native && !strcmp(r->file, "long.c"));
	r = find(&s, "f", 5);
	CHECK(r && !r->native);

	/* Without a declaration, a function is of its site's file, line 0. */
	st[0] = toptable_native_site(&tt, "asm_fn", "fn.S", 3, NULL, 0);
	sample(&tt, th, st, 1);
	v.per_line = 0;
	toptable_snapshot(&tt, &v, &s);
	r = find(&s, "asm_fn", -1);
	CHECK(r && r->native && !strcmp(r->file, "fn.S") && r->line == 0);

	top_snapshot_release(&s);
	toptable_release(&tt);
}

int main(void)
{
	test_own_total_recursion();
	test_lines_and_functions();
	test_sorting();
	test_decay();
	test_threads();
	test_processes();
	test_idle_gil();
	test_no_alloc();
	test_line_ids();
	test_native_sites();
	if (!failed)
		printf("test-toptable: all checks passed\n");
	return failed;
}
