/* SPDX-License-Identifier: MIT */
/* Unit tests of stack aggregation: interning, threads, dedup, volume. */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stacks.h"
#include "util.h"

#include "check.h"

static void test_frames(void)
{
	struct stacks st;
	uint32_t a, b, c, d, e, ids[5000];
	char name[32];
	size_t i;

	stacks_init(&st);
	a = stacks_frame(&st, "main", "app.py", 10);
	b = stacks_frame(&st, "main", "app.py", 10);
	c = stacks_frame(&st, "main", "app.py", 11);
	d = stacks_frame(&st, "main", "other.py", 10);
	e = stacks_frame(&st, "helper", "app.py", 10);
	CHECK(a == b);
	CHECK(a != c && a != d && a != e && c != d);
	CHECK(st.nr_frames == 4);
	CHECK(!strcmp(st.frames[c].name, "main"));
	CHECK(!strcmp(st.frames[d].file, "other.py"));
	CHECK(st.frames[c].line == 11);
	/* Interned: each distinct string is stored once. */
	CHECK(st.frames[a].name == st.frames[c].name);
	CHECK(st.frames[a].file == st.frames[e].file);

	/* Enough frames to rehash the index several times. */
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		snprintf(name, sizeof(name), "fn%zu", i % 1000);
		ids[i] = stacks_frame(&st, name, "big.py", (int)(i / 1000));
	}
	CHECK(st.nr_frames == 4 + ARRAY_SIZE(ids));
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		snprintf(name, sizeof(name), "fn%zu", i % 1000);
		CHECK(stacks_frame(&st, name, "big.py", (int)(i / 1000)) ==
		      ids[i]);
	}
	CHECK(stacks_frame(&st, "main", "app.py", 10) == a);
	CHECK(st.nr_frames == 4 + ARRAY_SIZE(ids));

	/* NULL strings read as empty ones. */
	CHECK(stacks_frame(&st, NULL, NULL, 0) == stacks_frame(&st, "", "", 0));
	stacks_release(&st);
	CHECK(st.nr_frames == 0 && st.frames == NULL);
}

static void test_utf8(void)
{
	static const char name[] = "caf\xc3\xa9_\xe4\xb8\x96\xe7\x95\x8c_"
				   "\xf0\x9f\x90\x8d";
	static const char file[] = "/tmp/\xc3\xbcn\xc3\xaf.py";
	struct stacks st;
	uint32_t id;

	stacks_init(&st);
	id = stacks_frame(&st, name, file, 3);
	CHECK(!strcmp(st.frames[id].name, name));
	CHECK(!strcmp(st.frames[id].file, file));
	CHECK(stacks_frame(&st, name, file, 3) == id);
	/* Differs only in the last byte of a multibyte character. */
	CHECK(stacks_frame(&st, "caf\xc3\xa8", file, 3) != id);
	stacks_release(&st);
}

static void test_threads(void)
{
	struct stacks st;
	uint32_t a, b, c;
	char label[64];

	stacks_init(&st);
	a = stacks_thread(&st, 0x7f00deadbeefULL, 0, NULL);
	b = stacks_thread(&st, 0x1234, 77, "Worker");
	CHECK(a != b);
	CHECK(st.nr_threads == 2);
	CHECK(st.threads[a].name == NULL && st.threads[a].tid == 0);

	stacks_thread_label(&st.threads[a], label, sizeof(label));
	CHECK(!strcmp(label, "thread 0x7f00deadbeef"));
	stacks_thread_label(&st.threads[b], label, sizeof(label));
	CHECK(!strcmp(label, "Worker (tid 77)"));

	/* Later calls fill in what was missing, and only that. */
	CHECK(stacks_thread(&st, 0x7f00deadbeefULL, 4242, NULL) == a);
	stacks_thread_label(&st.threads[a], label, sizeof(label));
	CHECK(!strcmp(label, "thread 0x7f00deadbeef (tid 4242)"));
	CHECK(stacks_thread(&st, 0x7f00deadbeefULL, 0, "MainThread") == a);
	CHECK(st.threads[a].tid == 4242);
	stacks_thread_label(&st.threads[a], label, sizeof(label));
	CHECK(!strcmp(label, "MainThread (tid 4242)"));
	CHECK(stacks_thread(&st, 0x7f00deadbeefULL, 4242, "Renamed") == a);
	CHECK(!strcmp(st.threads[a].name, "MainThread"));
	CHECK(st.threads[a].tid == 4242);
	CHECK(st.nr_threads == 2);

	/* Another tid with the same ident: a new thread that reused it. */
	c = stacks_thread(&st, 0x7f00deadbeefULL, 9, "Next");
	CHECK(c != a && c != b && st.nr_threads == 3);
	CHECK(st.threads[c].tid == 9 && !strcmp(st.threads[c].name, "Next"));
	/* An unknown tid goes to the newest thread of that ident. */
	CHECK(stacks_thread(&st, 0x7f00deadbeefULL, 0, NULL) == c);
	CHECK(stacks_thread(&st, 0x7f00deadbeefULL, 4242, NULL) == a);
	/*
	 * The same tid with another ident (a torn read of the thread
	 * state's pthread_t; the tid was checked): the same thread.
	 */
	CHECK(stacks_thread(&st, 0x107f00deadbeefULL, 4242, NULL) == a);
	CHECK(stacks_thread(&st, 0x1234, 9, NULL) == c);
	CHECK(st.nr_threads == 3);

	/* A short buffer truncates but stays terminated. */
	stacks_thread_label(&st.threads[a], label, 5);
	CHECK(!strcmp(label, "Main"));
	stacks_release(&st);
}

static int same_frames(const struct stack_entry *e, const uint32_t *frames,
		       size_t depth)
{
	return e->depth == depth &&
	       (!depth || !memcmp(e->frames, frames, depth * sizeof(*frames)));
}

static void test_add(void)
{
	struct stacks st;
	uint32_t t0, t1, f[4], other[2];
	const uint32_t *kept;
	size_t i;

	stacks_init(&st);
	t0 = stacks_thread(&st, 1, 0, NULL);
	t1 = stacks_thread(&st, 2, 0, NULL);
	f[0] = stacks_frame(&st, "<module>", "m.py", 1);
	f[1] = stacks_frame(&st, "run", "m.py", 5);
	f[2] = stacks_frame(&st, "step", "m.py", 9);
	f[3] = stacks_frame(&st, "leaf", "m.py", 12);

	for (i = 0; i < 5; i++)
		stacks_add(&st, t0, f, 4, 1);
	CHECK(st.nr_entries == 1);
	CHECK(st.entries[0].count == 5);
	CHECK(st.entries[0].thread == t0);
	CHECK(same_frames(&st.entries[0], f, 4));
	CHECK(st.entries[0].frames != f); /* copied */

	stacks_add(&st, t1, f, 4, 2);  /* same frames, other thread */
	stacks_add(&st, t0, f, 3, 3);  /* a prefix */
	stacks_add(&st, t0, f, 0, 1);  /* no frames at all */
	stacks_add(&st, t0, f, 4, 10); /* seen before */
	other[0] = f[1];
	other[1] = f[0];
	stacks_add(&st, t0, other, 2, 1); /* order matters */
	CHECK(st.nr_entries == 5);
	CHECK(st.entries[0].count == 15);
	CHECK(st.entries[1].thread == t1 && st.entries[1].count == 2);
	CHECK(same_frames(&st.entries[2], f, 3) && st.entries[2].count == 3);
	CHECK(st.entries[3].depth == 0 && st.entries[3].count == 1);
	CHECK(same_frames(&st.entries[4], other, 2));
	CHECK(st.total_samples == 22);
	CHECK(st.threads[t0].samples == 20);
	CHECK(st.threads[t1].samples == 2);

	/* Bad ids are refused, and change nothing. */
	quiet = 1;
	stacks_add(&st, 99, f, 4, 1);
	other[0] = 12345;
	stacks_add(&st, t0, other, 2, 1);
	quiet = 0;
	CHECK(st.nr_entries == 5);
	CHECK(st.total_samples == 22);

	/* Frame arrays stay put while the entries array grows. */
	kept = st.entries[0].frames;
	for (i = 0; i < 20000; i++) {
		uint32_t g[2] = {f[0],
				 stacks_frame(&st, "gen", "g.py", (int)i + 1)};

		stacks_add(&st, t1, g, 2, 1);
	}
	CHECK(st.entries[0].frames == kept);
	CHECK(same_frames(&st.entries[0], f, 4));
	CHECK(st.nr_entries == 20005);
	CHECK(st.total_samples == 20022);

	/* Released stacks can be used again. */
	stacks_release(&st);
	CHECK(st.nr_entries == 0 && st.total_samples == 0);
	t0 = stacks_thread(&st, 1, 0, NULL);
	f[0] = stacks_frame(&st, "again", "a.py", 1);
	stacks_add(&st, t0, f, 1, 7);
	CHECK(st.nr_entries == 1 && st.total_samples == 7);
	stacks_release(&st);
}

/*
 * Threads with the same frames share one frames array: a process that
 * starts thread after thread costs an entry per thread and stack, not a
 * copy of the stack each time.
 */
static void test_shared_frames(void)
{
	struct stacks st;
	uint32_t t, f[3], g[3];
	const uint32_t *first;
	size_t i, used;

	stacks_init(&st);
	f[0] = stacks_frame(&st, "<module>", "m.py", 1);
	f[1] = stacks_frame(&st, "run", "m.py", 5);
	f[2] = stacks_frame(&st, "leaf", "m.py", 9);
	t = stacks_thread(&st, 1, 1, NULL);
	stacks_add(&st, t, f, 3, 1);
	first = st.entries[0].frames;
	used = st.chunks ? 1 : 0;
	CHECK(used);
	for (i = 2; i < 5002; i++) {
		t = stacks_thread(&st, i, (long)i, NULL);
		stacks_add(&st, t, f, 3, 1);
		stacks_add(&st, t, f, 2, 1); /* its prefix: shared too */
	}
	CHECK(st.nr_entries == 1 + 2 * 5000);
	for (i = 0; i < st.nr_entries; i++) {
		if (st.entries[i].depth == 3)
			CHECK(st.entries[i].frames == first);
		else
			CHECK(st.entries[i].frames ==
			      st.entries[2].frames);
	}
	CHECK(st.entries[2].frames != first);
	/* Two sequences stored in all. */
	CHECK(st.nr_seqs == 2);
	/* Same frames in another order, or another depth: not shared. */
	g[0] = f[0];
	g[1] = f[2];
	g[2] = f[1];
	stacks_add(&st, t, g, 3, 1);
	CHECK(st.entries[st.nr_entries - 1].frames != first);
	CHECK(same_frames(&st.entries[st.nr_entries - 1], g, 3));
	CHECK(st.nr_seqs == 3);
	/* Counts stay per thread and stack. */
	CHECK(st.entries[0].count == 1 && st.total_samples == 10002);
	stacks_release(&st);
}

#define NR_STACKS 1000
#define NR_ADDS 100000
#define MAX_DEPTH 40

/* A small deterministic generator, so failures reproduce. */
static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(*state >> 33);
}

static void test_volume(void)
{
	static uint32_t frames[NR_STACKS][MAX_DEPTH];
	static size_t depth[NR_STACKS];
	static uint32_t thread[NR_STACKS];
	static uint64_t expect[NR_STACKS];
	uint64_t state = 42, thread_total[4] = {0}, sum = 0;
	uint32_t fids[200], tids[4];
	struct stacks st;
	char name[32];
	size_t i, j, k;

	stacks_init(&st);
	for (i = 0; i < ARRAY_SIZE(tids); i++)
		tids[i] = stacks_thread(&st, 1000 + i, (long)i, NULL);
	for (i = 0; i < ARRAY_SIZE(fids); i++) {
		snprintf(name, sizeof(name), "func_%zu", i);
		fids[i] = stacks_frame(&st, name, "vol.py", (int)i);
	}
	/* Distinct stacks: stack i starts with frame i % 200, i / 200. */
	for (i = 0; i < NR_STACKS; i++) {
		depth[i] = 2 + next_random(&state) % (MAX_DEPTH - 1);
		thread[i] = tids[i % ARRAY_SIZE(tids)];
		frames[i][0] = fids[i % 200];
		frames[i][1] = fids[i / 200];
		for (j = 2; j < depth[i]; j++)
			frames[i][j] = fids[next_random(&state) % 200];
	}
	for (k = 0; k < NR_ADDS; k++) {
		i = next_random(&state) % NR_STACKS;
		stacks_add(&st, thread[i], frames[i], depth[i], 1);
		expect[i]++;
		thread_total[i % ARRAY_SIZE(tids)]++;
	}
	CHECK(st.total_samples == NR_ADDS);
	CHECK(st.nr_frames == ARRAY_SIZE(fids));
	CHECK(st.nr_threads == ARRAY_SIZE(tids));
	for (i = 0; i < ARRAY_SIZE(tids); i++)
		CHECK(st.threads[tids[i]].samples == thread_total[i]);
	/* Every stack used at least once appears once, with its count. */
	k = 0;
	for (i = 0; i < NR_STACKS; i++)
		k += expect[i] != 0;
	CHECK(st.nr_entries == k);
	for (i = 0; i < st.nr_entries; i++) {
		const struct stack_entry *e = &st.entries[i];
		size_t found = NR_STACKS;

		for (j = 0; j < NR_STACKS; j++)
			if (e->thread == thread[j] &&
			    same_frames(e, frames[j], depth[j]))
				found = j;
		CHECK(found < NR_STACKS);
		if (found < NR_STACKS)
			CHECK(e->count == expect[found]);
		sum += e->count;
	}
	CHECK(sum == NR_ADDS);
	stacks_release(&st);
}

/* Adding a stack seen before must not touch the heap (hot path). */
static void test_no_alloc(void)
{
#ifdef __GLIBC__
	struct stacks st;
	struct mallinfo2 before, after;
	uint32_t t, f[3];
	size_t i;

	stacks_init(&st);
	t = stacks_thread(&st, 1, 0, "main");
	f[0] = stacks_frame(&st, "a", "a.py", 1);
	f[1] = stacks_frame(&st, "b", "a.py", 2);
	f[2] = stacks_frame(&st, "c", "a.py", 3);
	stacks_add(&st, t, f, 3, 1);
	stacks_add(&st, t, f, 2, 1);
	before = mallinfo2();
	for (i = 0; i < 10000; i++) {
		stacks_add(&st, t, f, 3, 1);
		stacks_add(&st, t, f, 2, 1);
	}
	after = mallinfo2();
	CHECK(before.uordblks == after.uordblks);
	CHECK(before.hblkhd == after.hblkhd);
	CHECK(st.nr_entries == 2 && st.total_samples == 20002);
	stacks_release(&st);
#endif
}

int main(void)
{
	test_frames();
	test_utf8();
	test_threads();
	test_add();
	test_shared_frames();
	test_volume();
	test_no_alloc();
	if (!failed)
		printf("test-stacks: all checks passed\n");
	return failed;
}
