/* SPDX-License-Identifier: MIT */
/* Unit tests of top --gpu's windows (src/gpu/gputop.c). */
#include <stdio.h>
#include <string.h>

#include "gpu/gputop.h"

#include "check.h"

static struct gpu_record kernel(const char *name, uint64_t start, uint64_t end)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_KERNEL;
	r.size = sizeof(r.u.kernel);
	r.u.kernel.iv.start = start;
	r.u.kernel.iv.end = end;
	snprintf(r.u.kernel.name, sizeof(r.u.kernel.name), "%s", name);
	return r;
}

static struct gpu_record copy(unsigned kind, uint64_t start, uint64_t end)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_MEMCPY;
	r.size = sizeof(r.u.memcpy);
	r.u.memcpy.iv.start = start;
	r.u.memcpy.iv.end = end;
	r.u.memcpy.copy_kind = (uint8_t)kind;
	r.u.memcpy.bytes = 4096;
	return r;
}

static void add(struct gputop *g, struct gpu_record r)
{
	gputop_add(g, &r);
}

/* Rows by GPU time, shares of it, busy time as the union of the spans. */
static void test_window(void)
{
	struct gputop g;
	struct gpu_record sync;
	const struct gputop_view *w = &g.window;

	gputop_init(&g);
	/* 100..400 and 300..500 overlap: busy 400 ns of 1000. */
	add(&g, kernel("small", 100, 200));
	add(&g, kernel("big", 300, 500));
	add(&g, kernel("small", 200, 400));
	add(&g, copy(1, 600, 700)); /* HtoD */
	/* Ignored: no time of its own on the GPU. */
	memset(&sync, 0, sizeof(sync));
	sync.type = GPU_REC_SYNC;
	gputop_add(&g, &sync);
	/* A demangled name, once. */
	add(&g, kernel("_Z4gemmPfi", 800, 810));
	/* Still running as the window closes: its part after it is later. */
	add(&g, kernel("late", 950, 1100));
	gputop_close_window(&g, 0, 1000);

	CHECK(w->nr_rows == 5);
	CHECK(w->kernels == 5 && w->copies == 1 && w->memsets == 0);
	CHECK(w->ns == 100 + 200 + 200 + 100 + 10 + 150);
	CHECK(!strcmp(w->rows[0].name, "small"));
	CHECK(w->rows[0].calls == 2 && w->rows[0].ns == 300);
	CHECK(!strcmp(w->rows[1].name, "big"));
	/* Equal time: more calls first, then by name. */
	CHECK(!strcmp(w->rows[2].name, "late"));
	CHECK(!strcmp(w->rows[3].name, "[memcpy HtoD]"));
	CHECK(!strcmp(w->rows[4].name, "gemm(float*, int)"));
	CHECK(w->busy_ns == 300 + 100 + 100 + 10 + 50);
	CHECK(w->wall_ns == 1000);
	CHECK(gputop_busy_pct(w) > 55.9 && gputop_busy_pct(w) < 56.1);

	/*
	 * The next window starts empty; the run adds up both.  A record that
	 * comes after its interval closed adds no busy time to a later one.
	 */
	add(&g, kernel("big", 2000, 2100));
	add(&g, kernel("bad", 3000, 2000)); /* end first: no time */
	add(&g, kernel("small", 400, 500)); /* late */
	gputop_close_window(&g, 1000, 2500);
	CHECK(w->nr_rows == 3);
	CHECK(!strcmp(w->rows[0].name, "big") && w->rows[0].calls == 1);
	CHECK(w->busy_ns == 100 + 100 && w->wall_ns == 1500);
	CHECK(g.run.nr_rows == 6);
	CHECK(g.run.kernels == 8 && g.run.copies == 1);
	CHECK(g.run.wall_ns == 2500 && g.run.busy_ns == 560 + 200);

	/* After a pause, what the window held is forgotten. */
	add(&g, kernel("small", 5000, 5100));
	gputop_reset_window(&g);
	gputop_close_window(&g, 5000, 5000);
	CHECK(w->nr_rows == 0 && w->kernels == 0);
	CHECK(gputop_busy_pct(w) < 0);

	/* A burst of records for a long span: at most the window, 100%. */
	add(&g, kernel("long", 0, 9000));
	add(&g, kernel("long", 6000, 7000));
	gputop_close_window(&g, 6000, 7000);
	CHECK(w->busy_ns == 1000 && gputop_busy_pct(w) == 100.0);
	/* The rest of the span is the next interval's. */
	gputop_close_window(&g, 7000, 8000);
	CHECK(w->busy_ns == 1000 && w->kernels == 0);
	gputop_release(&g);
}

static struct gpu_record api(uint32_t tid)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_API;
	r.size = sizeof(r.u.api);
	r.u.api.tid = tid;
	return r;
}

/*
 * The GPU's idle time by what the launching thread ran: ticks of 100 ns
 * centred on them; a thread that launched nothing and ticks before any
 * launch charge nothing; ticks after the window wait for the next.
 */
static void test_idle(void)
{
	struct gputop g;
	const struct gputop_view *w = &g.window;

	gputop_init(&g);
	gputop_tick(&g, 50, 100, 7, 1); /* no launch yet: not kept */
	add(&g, api(7));
	/* busy 100..300 */
	add(&g, kernel("k", 100, 300));
	gputop_tick(&g, 100, 100, 7, 1); /* 50..150: 50 idle */
	gputop_tick(&g, 200, 100, 7, 2); /* 150..250: busy */
	gputop_tick(&g, 400, 100, 7, 3); /* 350..450: 100 idle */
	gputop_tick(&g, 500, 100, 7, 3); /* 450..550: 100 idle */
	gputop_tick(&g, 500, 100, 9, 4); /* launched nothing */
	gputop_tick(&g, 1200, 100, 7, 5); /* the next window's */
	gputop_close_window(&g, 0, 1000);
	CHECK(w->idle_ns == 250);
	CHECK(w->nr_idle_top == 2);
	CHECK(w->idle_top[0].site == 3 && w->idle_top[0].ns == 200);
	CHECK(w->idle_top[1].site == 1 && w->idle_top[1].ns == 50);
	gputop_close_window(&g, 1000, 2000);
	CHECK(w->idle_ns == 100 && w->nr_idle_top == 1 &&
	      w->idle_top[0].site == 5);
	gputop_close_window(&g, 2000, 3000);
	CHECK(w->idle_ns == 0 && w->nr_idle_top == 0);
	gputop_release(&g);
}

/* Many names: the index grows; past the limit they count as one. */
static void test_many_names(void)
{
	struct gputop g;
	char name[32];
	size_t i;

	gputop_init(&g);
	for (i = 0; i < GPUTOP_MAX_NAMES + 10; i++) {
		snprintf(name, sizeof(name), "k%zu", i);
		add(&g, kernel(name, i, i + 1));
	}
	add(&g, kernel("k7", 0, 1));
	gputop_close_window(&g, 0, 1000000);
	CHECK(g.nr_names == GPUTOP_MAX_NAMES + 1);
	CHECK(g.window.nr_rows == GPUTOP_MAX_NAMES + 1);
	CHECK(!strcmp(g.window.rows[0].name, "[other kernels]"));
	CHECK(g.window.rows[0].calls == 10);
	for (i = 0; i < g.window.nr_rows; i++)
		if (!strcmp(g.window.rows[i].name, "k7"))
			CHECK(g.window.rows[i].calls == 2);
	gputop_release(&g);
}

/*
 * Two long names that share their first 159 bytes: two rows; the one
 * whose pieces came shows whole, the other its start and hash.
 */
static void test_long_names(void)
{
	char a[400], b[400];
	struct gpu_record ka, kb, piece;
	struct gputop g;
	size_t i;

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	b[sizeof(b) - 2] = 'y';
	gputop_init(&g);
	for (i = 0; i < strlen(a); i += GPU_NAME_PIECE) {
		memset(&piece, 0, sizeof(piece));
		piece.type = GPU_REC_NAME;
		piece.u.name.hash = gpu_name_hash(a, strlen(a));
		piece.u.name.len = (uint32_t)strlen(a);
		piece.u.name.offset = (uint32_t)i;
		piece.u.name.count =
		    (uint32_t)(strlen(a) - i < GPU_NAME_PIECE ? strlen(a) - i
							      : GPU_NAME_PIECE);
		memcpy(piece.u.name.text, a + i, piece.u.name.count);
		gputop_add(&g, &piece);
	}
	ka = kernel(a, 0, 200);
	ka.u.kernel.name_len = (uint32_t)strlen(a);
	ka.u.kernel.name_hash = gpu_name_hash(a, strlen(a));
	kb = kernel(b, 0, 50);
	kb.u.kernel.name_len = (uint32_t)strlen(b);
	kb.u.kernel.name_hash = gpu_name_hash(b, strlen(b));
	add(&g, ka);
	add(&g, kb);
	add(&g, kb);
	gputop_close_window(&g, 0, 1000);
	CHECK(g.window.nr_rows == 2);
	CHECK(!strcmp(g.window.rows[0].name, a));
	CHECK(g.window.rows[1].calls == 2);
	CHECK(!strncmp(g.window.rows[1].name, b, GPU_KERNEL_NAME_INLINE - 1));
	CHECK(strstr(g.window.rows[1].name, "... [name ") != NULL);
	gputop_release(&g);
}

int main(void)
{
	test_window();
	test_idle();
	test_many_names();
	test_long_names();
	return failed;
}
