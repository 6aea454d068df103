/* SPDX-License-Identifier: MIT */
/* Unit tests of the profile reader: folded frames and thread labels,
 * speedscope units, evented profiles, GPU selection, bad input. */
#include <stdio.h>
#include <string.h>

#include "profile/profile-read.h"
#include "util.h"

#include "check.h"

static int read_str(struct profile *p, const char *text, unsigned flags)
{
	profile_init(p);
	return profile_read_mem(p, "test", text, strlen(text), flags);
}

/* The count of the stack of thread whose frames are the names given. */
static uint64_t count_of(const struct profile *p, uint32_t thread,
			 const char *const *names, size_t depth)
{
	const struct stacks *st = &p->stacks;
	size_t i, j;

	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		if (e->thread != thread || e->depth != depth)
			continue;
		for (j = 0; j < depth; j++)
			if (strcmp(st->frames[e->frames[j]].name, names[j]))
				break;
		if (j == depth)
			return e->count;
	}
	return 0;
}

static void test_folded_frames(void)
{
	static const char text[] =
	    "<module> (app.py:10);work (app.py:20);hot (app.py:3) 5\r\n"
	    "\n"
	    "<module> (app.py:10);work (app.py:20);hot (app.py:3) 2\n"
	    "[3 frames not read];fn (/a (b)/x.py:7);malloc (libc.so.6) 1\n"
	    "[empty] 4\n"
	    "std::vector<int>::push_back(int const&);f(int) 1\n";
	static const char *const hot[] = {"<module>", "work", "hot"};
	static const char *const cut[] = {"[3 frames not read]", "fn",
					  "malloc"};
	static const char *const native[] = {
	    "std::vector<int>::push_back(int const&)", "f(int)"};
	const struct stack_frame *f;
	struct profile p;
	size_t i;
	int found = 0;

	CHECK(read_str(&p, text, 0) == 0);
	CHECK(p.source == PROFILE_FOLDED && p.unit == PROFILE_UNIT_SAMPLES);
	CHECK(!p.thread_prefix && p.stacks.nr_threads == 1);
	CHECK(!strcmp(p.stacks.threads[0].name, "all threads"));
	CHECK(p.stacks.total_samples == 13);
	CHECK(count_of(&p, 0, hot, 3) == 7);
	CHECK(count_of(&p, 0, cut, 3) == 1);
	CHECK(count_of(&p, 0, native, 2) == 1);
	CHECK(count_of(&p, 0, NULL, 0) == 4);
	for (i = 0; i < p.stacks.nr_frames; i++) {
		f = &p.stacks.frames[i];
		if (!strcmp(f->name, "hot"))
			found += !strcmp(f->file, "app.py") && f->line == 3;
		if (!strcmp(f->name, "fn"))
			found +=
			    !strcmp(f->file, "/a (b)/x.py") && f->line == 7;
		if (!strcmp(f->name, "malloc"))
			found += !strcmp(f->file, "libc.so.6") && !f->line;
		if (f->name[0] == '[')
			found += !*f->file && !f->line;
	}
	CHECK(found == 4);
	profile_release(&p);
}

static void test_folded_threads(void)
{
	static const char text[] =
	    "thread 0x7f00aa (tid 12);main (m.py:1);a (m.py:5) 3\n"
	    "MainThread (tid 11);main (m.py:1) 2\n"
	    "worker (1) (tid 13);b (m.py:9) 1\n"
	    "thread 0x7f00aa (tid 12);main (m.py:1) 1\n"
	    "MainThread (tid 11) 6\n";
	static const char *const labels[] = {"thread 0x7f00aa (tid 12)",
					     "MainThread (tid 11)",
					     "worker (1) (tid 13)"};
	static const char *const main_a[] = {"main", "a"};
	char label[256];
	struct profile p;
	size_t i;

	CHECK(read_str(&p, text, 0) == 0);
	CHECK(p.thread_prefix);
	CHECK(p.stacks.nr_threads == 3);
	for (i = 0; i < p.stacks.nr_threads && i < 3; i++) {
		stacks_thread_label(&p.stacks.threads[i], label, sizeof(label));
		CHECK(!strcmp(label, labels[i]));
	}
	CHECK(p.stacks.threads[0].ident == 0x7f00aa);
	CHECK(p.stacks.threads[0].tid == 12 && !p.stacks.threads[0].name);
	CHECK(p.stacks.threads[1].tid == 11 &&
	      !strcmp(p.stacks.threads[1].name, "MainThread"));
	CHECK(p.stacks.threads[0].samples == 4);
	CHECK(p.stacks.threads[1].samples == 8);
	CHECK(count_of(&p, 0, main_a, 2) == 3);
	CHECK(count_of(&p, 1, NULL, 0) == 6);
	profile_release(&p);
}

/* spyc record --subprocesses: each thread's label has its process's. */
static void test_processes(void)
{
	static const char folded[] =
	    "python a.py (pid 5);thread 0x10 (tid 5);main (a.py:1) 2\n"
	    "sh -c python b.py (pid 7);MainThread (tid 7);f (b.py:2) 3\n"
	    "python a.py (pid 5);thread 0x10 (tid 5);main (a.py:1) 1\n";
	static const char speedscope[] =
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"unit\":\"none\",\"name\":"
	    "\"x: y (pid 9): thread 0x20 (tid 9)\","
	    "\"samples\":[[0]],\"weights\":[4]}]}";
	static const char *const main_only[] = {"main"};
	char label[256];
	struct profile p;

	CHECK(read_str(&p, folded, 0) == 0);
	CHECK(p.thread_prefix && p.stacks.nr_threads == 2);
	CHECK(p.stacks.threads[0].process &&
	      !strcmp(p.stacks.threads[0].process, "python a.py (pid 5)"));
	CHECK(p.stacks.threads[0].ident == 0x10);
	CHECK(count_of(&p, 0, main_only, 1) == 3);
	stacks_thread_full_label(&p.stacks.threads[1], label, sizeof(label));
	CHECK(!strcmp(label, "sh -c python b.py (pid 7): MainThread (tid 7)"));
	profile_release(&p);

	CHECK(read_str(&p, speedscope, 0) == 0);
	CHECK(p.stacks.nr_threads == 1);
	CHECK(p.stacks.threads[0].process &&
	      !strcmp(p.stacks.threads[0].process, "x: y (pid 9)"));
	CHECK(p.stacks.threads[0].ident == 0x20 &&
	      p.stacks.threads[0].tid == 9);
	profile_release(&p);
}

static void test_speedscope(void)
{
	static const char text[] =
	    "{\"shared\":{\"frames\":["
	    "{\"name\":\"main\",\"file\":\"m.py\",\"line\":1},"
	    "{\"name\":\"a\",\"file\":\"m.py\",\"line\":5},"
	    "{\"name\":\"a\",\"file\":\"m.py\",\"line\":5},"
	    "{\"name\":\"[2 frames not read]\"},"
	    "{\"name\":\"kernel\"}]},"
	    "\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"thread 0x10 (tid 3)\","
	    "\"unit\":\"seconds\",\"startValue\":0,\"endValue\":0.05,"
	    "\"samples\":[[0,1],[0,2],[3,0]],\"weights\":[0.01,0.03,0.01]},"
	    "{\"type\":\"sampled\",\"name\":\"GPU time by launching stack\","
	    "\"unit\":\"seconds\",\"samples\":[[0,4]],\"weights\":[2.5]},"
	    "{\"type\":\"evented\",\"name\":\"GPU 0 stream 7\","
	    "\"unit\":\"seconds\",\"startValue\":0,\"endValue\":3,\"events\":["
	    "{\"type\":\"O\",\"frame\":4,\"at\":1},"
	    "{\"type\":\"C\",\"frame\":4,\"at\":1.5},"
	    "{\"type\":\"O\",\"frame\":4,\"at\":2},"
	    "{\"type\":\"C\",\"frame\":4,\"at\":3}]}],"
	    "\"name\":\"python m.py\",\"exporter\":\"spyc\"}";
	static const char *const main_a[] = {"main", "a"};
	struct profile p;

	CHECK(read_str(&p, text, 0) == 0);
	CHECK(p.source == PROFILE_SPEEDSCOPE);
	CHECK(p.unit == PROFILE_UNIT_SECONDS);
	CHECK(p.nr_profiles == 1 && p.nr_skipped == 2);
	CHECK(p.title && !strcmp(p.title, "python m.py"));
	/* Frames 1 and 2 are one frame: their samples add up. */
	CHECK(p.stacks.nr_frames == 4);
	CHECK(count_of(&p, 0, main_a, 2) == 40000000);
	CHECK(p.stacks.total_samples == 50000000);
	CHECK(profile_value(&p, p.stacks.total_samples) > 0.0499 &&
	      profile_value(&p, p.stacks.total_samples) < 0.0501);
	CHECK(p.stacks.threads[0].ident == 0x10 &&
	      p.stacks.threads[0].tid == 3);
	profile_release(&p);

	/* The stream's time is the GPU time by launching stack's again. */
	CHECK(read_str(&p, text, PROFILE_READ_GPU) == 0);
	CHECK(p.nr_profiles == 1 && p.nr_skipped == 1);
	CHECK(p.nr_streams_skipped == 1);
	CHECK(p.stacks.nr_threads == 1);
	CHECK(p.stacks.total_samples == 2500000000ULL);
	profile_release(&p);

	CHECK(read_str(&p, text, PROFILE_READ_CPU | PROFILE_READ_GPU) == 0);
	CHECK(p.nr_profiles == 2 && p.stacks.nr_threads == 2);
	profile_release(&p);
}

/*
 * Which profiles are the GPU's: those after spyc_process.cpu_profiles
 * (a thread named "GPU ..." is a CPU thread), or where a file does not
 * say, those named "GPU ..."; a stream's timeline is read where there is
 * no GPU time by launching stack; GPU idle time only when asked for.
 */
static void test_speedscope_kinds(void)
{
	static const char told[] =
	    "{\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"k\"},"
	    "{\"name\":\"[GPU 0 idle]\"}]},"
	    "\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"GPU feeder (tid 3)\","
	    "\"unit\":\"seconds\",\"samples\":[[0]],\"weights\":[0.25]},"
	    "{\"type\":\"evented\",\"name\":\"GPU 0 stream 7\","
	    "\"unit\":\"seconds\",\"startValue\":0,\"endValue\":3,\"events\":["
	    "{\"type\":\"O\",\"frame\":1,\"at\":1},"
	    "{\"type\":\"C\",\"frame\":1,\"at\":1.5}]},"
	    "{\"type\":\"sampled\",\"name\":\"GPU idle by Python stack\","
	    "\"unit\":\"seconds\",\"samples\":[[2,0]],\"weights\":[2]}],"
	    "\"spyc_process\":{\"cpu_profiles\":1}}";
	struct profile p;

	CHECK(read_str(&p, told, PROFILE_READ_CPU) == 0);
	CHECK(p.nr_profiles == 1 && p.nr_skipped == 2);
	CHECK(p.nr_idle_skipped == 1);
	CHECK(p.stacks.total_samples == 250000000);
	profile_release(&p);

	/* No GPU time by launching stack: the stream's time is read. */
	CHECK(read_str(&p, told, PROFILE_READ_GPU) == 0);
	CHECK(p.nr_profiles == 1 && p.nr_streams_skipped == 0);
	CHECK(p.stacks.total_samples == 500000000);
	profile_release(&p);

	CHECK(read_str(&p, told, PROFILE_READ_GPU | PROFILE_READ_GPU_IDLE) ==
	      0);
	CHECK(p.nr_profiles == 1 && p.nr_skipped == 2);
	CHECK(p.stacks.total_samples == 2000000000ULL);
	profile_release(&p);
}

static void test_units(void)
{
	static const char none[] =
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"none\","
	    "\"samples\":[[0]],\"weights\":[7]}]}";
	static const char ms[] =
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"milliseconds\","
	    "\"samples\":[[0]],\"weights\":[7]}]}";
	static const char mixed[] =
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"none\","
	    "\"samples\":[[0]],\"weights\":[7]},"
	    "{\"type\":\"sampled\",\"name\":\"u\",\"unit\":\"seconds\","
	    "\"samples\":[[0]],\"weights\":[7]}]}";
	struct profile p;

	CHECK(read_str(&p, none, 0) == 0);
	CHECK(p.unit == PROFILE_UNIT_SAMPLES && p.stacks.total_samples == 7);
	CHECK(!strcmp(p.stacks.threads[0].name, "t"));
	profile_release(&p);
	CHECK(read_str(&p, ms, 0) == 0);
	CHECK(p.unit == PROFILE_UNIT_SECONDS &&
	      p.stacks.total_samples == 7000000);
	profile_release(&p);
	CHECK(read_str(&p, mixed, 0) == -1);
	profile_release(&p);
}

static void test_bad_input(void)
{
	static const char *const bad[] = {
	    "",
	    "  \n\n",
	    "main (m.py:1)\n",		     /* no count */
	    "main (m.py:1) 12x\n",	     /* not a count */
	    "main (m.py:1);;a (m.py:2) 1\n", /* empty frame */
	    "main (m.py:1) 0\n",	     /* no samples */
	    "{\"shared\":{\"frames\":[]},\"profiles\":[]}",
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"seconds\","
	    "\"samples\":[[1]],\"weights\":[1]}]}", /* no frame 1 */
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"seconds\","
	    "\"samples\":[[0],[0]],\"weights\":[1]}]}", /* lengths differ */
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"parsecs\","
	    "\"samples\":[[0]],\"weights\":[1]}]}",
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":["
	    "{\"type\":\"evented\",\"name\":\"t\",\"unit\":\"seconds\","
	    "\"events\":[{\"type\":\"C\",\"frame\":0,\"at\":1}]}]}",
	    "{\"shared\":{\"frames\":[{\"name\":\"f\"}]},\"profiles\":[",
	    "{\"traceEvents\":[]}",
	};
	struct profile p;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		if (read_str(&p, bad[i], 0) != -1) {
			fprintf(stderr, "bad input %zu was accepted\n", i);
			failed = 1;
		}
		profile_release(&p);
	}
	profile_init(&p);
	CHECK(profile_read_mem(&p, "nul", "f 1\0\n", 5, 0) == -1);
	profile_release(&p);
	CHECK(profile_read(&p, "/nonexistent/spyc-test.json", 0) == -1);
	profile_release(&p);
}

int main(void)
{
	quiet = 1;
	test_folded_frames();
	test_folded_threads();
	test_processes();
	test_speedscope();
	test_speedscope_kinds();
	test_units();
	test_bad_input();
	if (!failed)
		printf("profile-read: ok\n");
	return failed;
}
