/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the GPU converters (src/gpu/gpuprof.c, and the GPU parts of
 * the speedscope and folded writers), fed by records that the agent's
 * own writer (agent/ring.c) put in a channel and spyc's reader took out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../../agent/ring.h"
#include "gpu/gpuchan.h"
#include "gpu/gpuprof.h"
#include "out/output.h"
#include "profile/stacks.h"
#include "profile/timeline.h"
#include "util.h"

#include "check.h"

/* As in test-output.c: speedscope's own schema, from the live tests. */
#define SPEEDSCOPE_SCHEMA_FILE                                                 \
	"tests/build/node_modules/speedscope/dist/release/"                    \
	"file-format-schema.json"

/* CUPTI's clock runs this far behind CLOCK_MONOTONIC in the fixture. */
#define OFFSET 5000000ULL
#define T0 (OFFSET + 1000000ULL) /* sampling starts 1 ms after CUPTI's 1 ms */
#define TID_MAIN 100
#define TID_LOADER 200
#define TID_UNSAMPLED 300
#define RATE_HZ 100.0

struct fixture {
	struct stacks cpu;
	struct gpuprof gp;
	uint32_t th_main, th_loader;
	uint32_t e_step, e_forward, e_load;
};

static struct gpu_record kernel(uint32_t corr, const char *name, uint64_t start,
				uint64_t end, uint32_t stream)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_KERNEL;
	r.size = sizeof(r.u.kernel);
	r.u.kernel.iv.correlation = corr;
	r.u.kernel.iv.start = start;
	r.u.kernel.iv.end = end;
	r.u.kernel.iv.stream = stream;
	r.u.kernel.grid[0] = r.u.kernel.block[0] = 1;
	snprintf(r.u.kernel.name, sizeof(r.u.kernel.name), "%s", name);
	return r;
}

static struct gpu_record api(uint32_t corr, uint32_t tid, uint64_t start)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_API;
	r.size = sizeof(r.u.api);
	r.u.api.correlation = corr;
	r.u.api.tid = tid;
	r.u.api.pid = 1;
	r.u.api.domain = 2;
	r.u.api.start = start;
	r.u.api.end = start + 2000;
	/* Named as the agent names them (cuptiGetCallbackName); 5 is not. */
	if (corr != 5)
		snprintf(r.u.api.name, sizeof(r.u.api.name), "%s",
			 corr == 3 ? "cudaMemcpyAsync" : "cudaLaunchKernel");
	r.u.api.cbid = corr == 3 ? 41 : 211;
	return r;
}

static struct gpu_record copy(uint32_t corr, unsigned kind, uint64_t bytes,
			      uint64_t start, uint64_t end)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_MEMCPY;
	r.size = sizeof(r.u.memcpy);
	r.u.memcpy.iv.correlation = corr;
	r.u.memcpy.copy_kind = (uint8_t)kind;
	r.u.memcpy.bytes = bytes;
	r.u.memcpy.iv.start = start;
	r.u.memcpy.iv.end = end;
	r.u.memcpy.iv.stream = 7;
	return r;
}

static struct gpu_record clock_pair(uint64_t cupti, uint64_t mono)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_CLOCK;
	r.size = sizeof(r.u.clock);
	r.u.clock.cupti_ns = cupti;
	r.u.clock.monotonic_ns = mono;
	return r;
}

/* CPU time t (ns after sampling started) on CUPTI's clock. */
static uint64_t cupti_at(uint64_t t)
{
	return T0 + t - OFFSET;
}

/*
 * The CPU side: main runs step() then forward(), a loader thread load();
 * samples every 10 ms.  The GPU side, through the agent's writer: two
 * GEMMs launched from forward (t = 21 ms, 39 ms: nearest samples 20 and
 * 40, forward and forward), a copy from step (t = 2 ms: step), a kernel
 * with no launch record, one launched by a thread never sampled, and a
 * kernel whose mangled name demangles.
 */
static void fixture_init(struct fixture *fx)
{
	struct gpuchan c;
	struct ring_writer w;
	struct gpu_record recs[64], out[64];
	uint32_t f_main, f_step, f_forward, f_load, frames[3];
	size_t size = gpuchan_size(64), nr = 0, i;
	void *mem = xmalloc(size);
	int n;

	stacks_init(&fx->cpu);
	gpuprof_init(&fx->gp);
	fx->gp.t0_ns = T0;
	fx->th_main = stacks_thread(&fx->cpu, 0x1000, TID_MAIN, NULL);
	fx->th_loader = stacks_thread(&fx->cpu, 0x2000, TID_LOADER, "loader");
	f_main = stacks_frame(&fx->cpu, "<module>", "train.py", 40);
	f_step = stacks_frame(&fx->cpu, "step", "train.py", 20);
	f_forward = stacks_frame(&fx->cpu, "forward", "model.py", 12);
	f_load = stacks_frame(&fx->cpu, "load", "data.py", 5);
	frames[0] = f_main;
	frames[1] = f_step;
	fx->e_step = stacks_add(&fx->cpu, fx->th_main, frames, 2, 1);
	gpuprof_cpu_sample(&fx->gp, T0 + 0, TID_MAIN, fx->e_step);
	gpuprof_cpu_sample(&fx->gp, T0 + 10000000, TID_MAIN,
			   stacks_add(&fx->cpu, fx->th_main, frames, 2, 1));
	frames[2] = f_forward;
	fx->e_forward = stacks_add(&fx->cpu, fx->th_main, frames, 3, 1);
	gpuprof_cpu_sample(&fx->gp, T0 + 20000000, TID_MAIN, fx->e_forward);
	gpuprof_cpu_sample(&fx->gp, T0 + 40000000, TID_MAIN,
			   stacks_add(&fx->cpu, fx->th_main, frames, 3, 1));
	frames[0] = f_load;
	fx->e_load = stacks_add(&fx->cpu, fx->th_loader, frames, 1, 1);
	gpuprof_cpu_sample(&fx->gp, T0 + 20000000, TID_LOADER, fx->e_load);

	recs[nr++] = clock_pair(1000000, 1000000 + OFFSET);
	recs[nr++] = api(1, TID_MAIN, cupti_at(21000000));
	recs[nr++] = api(2, TID_MAIN, cupti_at(39000000));
	recs[nr++] = api(3, TID_MAIN, cupti_at(2000000));
	recs[nr++] = api(5, TID_UNSAMPLED, cupti_at(30000000));
	recs[nr++] = api(6, TID_MAIN, cupti_at(41000000));
	recs[nr++] = copy(3, 1, 4 << 20, cupti_at(3000000), cupti_at(4000000));
	recs[nr++] = kernel(1, "volta_sgemm_128x64_nn", cupti_at(22000000),
			    cupti_at(25000000), 7);
	recs[nr++] = kernel(2, "volta_sgemm_128x64_nn", cupti_at(40000000),
			    cupti_at(41000000), 7);
	/* no API record with correlation 4 */
	recs[nr++] =
	    kernel(4, "orphan", cupti_at(26000000), cupti_at(26500000), 7);
	recs[nr++] =
	    kernel(5, "unsampled", cupti_at(31000000), cupti_at(31100000), 9);
	recs[nr++] = kernel(6, "_Z6kernelPfi", cupti_at(42000000),
			    cupti_at(42002000), 7);
	recs[nr++] = clock_pair(50000000, 50000000 + OFFSET + 300);

	CHECK(!gpuchan_init_mem(&c, mem, size, 64));
	CHECK(!ring_writer_attach(&w, mem, size));
	for (i = 0; i < nr; i++)
		CHECK(!ring_write(&w, &recs[i]));
	n = gpuchan_read(&c, out, 64);
	CHECK(n == (int)nr);
	for (i = 0; n > 0 && i < (size_t)n; i++)
		gpuprof_add(&fx->gp, &out[i]);
	free(mem);
}

static void fixture_release(struct fixture *fx)
{
	gpuprof_release(&fx->gp);
	stacks_release(&fx->cpu);
}

/* The GPU stacks entry whose leaf is named leaf, or NULL. */
static const struct stack_entry *entry_for(const struct gpuprof *gp,
					   const char *leaf)
{
	size_t i;

	for (i = 0; i < gp->stacks.nr_entries; i++) {
		const struct stack_entry *e = &gp->stacks.entries[i];

		if (e->depth &&
		    !strcmp(gp->stacks.frames[e->frames[e->depth - 1]].name,
			    leaf))
			return e;
	}
	return NULL;
}

static void test_attribution(void)
{
	struct fixture fx;
	const struct stack_entry *e;
	const struct stack_frame *fr;
	size_t i;

	fixture_init(&fx);
	CHECK(fx.gp.nr_acts == 6);
	CHECK(fx.gp.nr_apis == 5);
	CHECK(fx.gp.clock.known && fx.gp.clock.offset_ns == (int64_t)OFFSET);
	CHECK(fx.gp.clock.pairs == 2 && fx.gp.clock.drift_ns == 300);
	CHECK(gpuprof_to_monotonic(&fx.gp, 1000) == 1000 + OFFSET);
	gpuprof_attribute(&fx.gp, &fx.cpu);

	/* The CPU frames keep their ids. */
	CHECK(fx.gp.stacks.nr_frames > fx.cpu.nr_frames);
	for (i = 0; i < fx.cpu.nr_frames; i++)
		CHECK(!strcmp(fx.gp.stacks.frames[i].name,
			      fx.cpu.frames[i].name) &&
		      fx.gp.stacks.frames[i].line == fx.cpu.frames[i].line);

	CHECK(fx.gp.attributed == 4);
	CHECK(fx.gp.no_launch == 1);
	CHECK(fx.gp.no_sample == 1);

	/* Both GEMMs: under forward, 3 ms + 1 ms of GPU time. */
	e = entry_for(&fx.gp, "volta_sgemm_128x64_nn");
	CHECK(e && e->depth == 5 && e->count == 4000000);
	if (e && e->depth == 5) {
		fr = &fx.gp.stacks.frames[e->frames[0]];
		CHECK(!strcmp(fr->name, GPU_ROOT_NEAREST));
		fr = &fx.gp.stacks.frames[e->frames[3]];
		CHECK(!strcmp(fr->name, "forward") && fr->line == 12);
		CHECK(fx.gp.stacks.threads[e->thread].tid == TID_MAIN);
	}
	/* The copy: launched at 2 ms, nearest the sample at 0, in step. */
	e = entry_for(&fx.gp, "[memcpy HtoD]");
	CHECK(e && e->depth == 4 && e->count == 1000000);
	if (e && e->depth == 4)
		CHECK(!strcmp(fx.gp.stacks.frames[e->frames[2]].name, "step"));
	e = entry_for(&fx.gp, "orphan");
	CHECK(e && e->depth == 2 &&
	      !strcmp(fx.gp.stacks.frames[e->frames[0]].name,
		      GPU_ROOT_NO_LAUNCH));
	e = entry_for(&fx.gp, "unsampled");
	CHECK(e && e->depth == 2 &&
	      !strcmp(fx.gp.stacks.frames[e->frames[0]].name,
		      GPU_ROOT_NO_SAMPLE) &&
	      fx.gp.stacks.threads[e->thread].tid == TID_UNSAMPLED);
	/* Demangled; launched at 41 ms, nearest the sample at 40. */
	e = entry_for(&fx.gp, "kernel(float*, int)");
	CHECK(e && e->depth == 5);
	/* A second call changes nothing. */
	gpuprof_attribute(&fx.gp, &fx.cpu);
	CHECK(fx.gp.attributed == 4);
	fixture_release(&fx);
}

/*
 * The kernel launched at 30 ms by a thread never sampled: on the stack
 * of a thread waiting in autograd's engine sampled within a second of
 * the launch, else under GPU_ROOT_NO_SAMPLE still.
 */
static void test_waiting(void)
{
	static const uint64_t at[] = {25000000, 1100000000};
	size_t k;

	CHECK(gpuprof_autograd_file(
	    "/v/lib/python3.12/site-packages/torch/autograd/graph.py"));
	CHECK(gpuprof_autograd_file("torch/autograd/__init__.py"));
	CHECK(!gpuprof_autograd_file("mytorch/autograd/graph.py"));
	CHECK(!gpuprof_autograd_file("torch/autograd/function.py"));
	CHECK(!gpuprof_autograd_file(NULL));
	for (k = 0; k < 2; k++) {
		struct fixture fx;
		const struct stack_entry *e;
		uint32_t frames[6];

		fixture_init(&fx);
		fx.gp.period_ns = 10000000;
		/* Deeper than any CPU stack: idle threads are not in them. */
		frames[0] = stacks_frame(&fx.cpu, "<module>", "train.py", 40);
		frames[1] = stacks_frame(&fx.cpu, "step", "train.py", 22);
		frames[2] = stacks_frame(&fx.cpu, "Tensor.backward",
					 "torch/_tensor.py", 631);
		frames[3] = stacks_frame(&fx.cpu, "backward",
					 "torch/autograd/__init__.py", 381);
		frames[4] = stacks_frame(&fx.cpu, "backward",
					 "torch/autograd/__init__.py", 380);
		frames[5] = stacks_frame(&fx.cpu, "_engine_run_backward",
					 "torch/autograd/graph.py", 829);
		/* The same stack twice: kept once. */
		gpuprof_waiting_sample(&fx.gp, T0 + at[k], TID_MAIN, 0x1000,
				       "MainThread", &fx.cpu, frames, 6);
		gpuprof_waiting_sample(&fx.gp, T0 + at[k] + 10000000, TID_MAIN,
				       0x1000, "MainThread", &fx.cpu, frames,
				       6);
		CHECK(fx.gp.nr_waiting == 2 &&
		      fx.gp.waiting_stacks.nr_entries == 1);
		gpuprof_attribute(&fx.gp, &fx.cpu);
		e = entry_for(&fx.gp, "unsampled");
		if (k == 0) {
			CHECK(fx.gp.by_waiting == 1 && fx.gp.no_sample == 0);
			CHECK(e && e->depth == 8 &&
			      !strcmp(fx.gp.stacks.frames[e->frames[0]].name,
				      GPU_ROOT_WAITING) &&
			      e->frames[6] == frames[5] &&
			      fx.gp.stacks.threads[e->thread].tid == TID_MAIN);
		} else {
			/* 1.07 s from the launch: too far. */
			CHECK(fx.gp.by_waiting == 0 && fx.gp.no_sample == 1);
			CHECK(e && e->depth == 2 &&
			      !strcmp(fx.gp.stacks.frames[e->frames[0]].name,
				      GPU_ROOT_NO_SAMPLE));
		}
		fixture_release(&fx);
	}
}

static void test_summary(void)
{
	struct fixture fx;
	struct strbuf sb = STRBUF_INIT;
	const char *gemm, *orphan, *lines;

	fixture_init(&fx);
	fx.gp.lost = 3;
	gpuprof_attribute(&fx.gp, &fx.cpu);
	gpuprof_summary(&fx.gp, 20, &sb);
	CHECK(strstr(sb.buf, "spyc: GPU activities (CUPTI): 5 kernels, 1 "
			     "copies, 0 memsets, 3 records lost\n") != NULL);
	CHECK(strstr(sb.buf, "Time(%)") && strstr(sb.buf, "Calls"));
	/* 4 ms of 5.602 ms, two calls, 1 ms min, 3 ms max, 2 ms average. */
	gemm = strstr(sb.buf, "volta_sgemm_128x64_nn");
	CHECK(gemm != NULL);
	CHECK(strstr(sb.buf,
		     "  71.40%     4.000ms       2     2.000ms     "
		     "1.000ms     3.000ms  volta_sgemm_128x64_nn\n") != NULL);
	/* By total time: the GEMMs first. */
	orphan = strstr(sb.buf, "orphan");
	CHECK(orphan && gemm && gemm < orphan);
	CHECK(strstr(sb.buf, "memcpy: HtoD 4.0 MiB in 1 copies, 1.000ms") !=
	      NULL);
	CHECK(strstr(sb.buf,
		     "attribution: 6 activities: 0 by the Python stack of "
		     "their launch, 4 by the launching thread's nearest CPU "
		     "sample, 0 by the stack of the thread waiting in "
		     "autograd's engine (a launching thread with no Python), "
		     "1 with no launch record, 1 with no sample of "
		     "the launching thread\n") != NULL);
	CHECK(strstr(sb.buf, "clock: CLOCK_MONOTONIC = CUPTI +5000000 ns (2 "
			     "pairs, drift 300 ns; CUPTI on its own "
			     "clock)") != NULL);
	CHECK(strstr(sb.buf, "GPU busy 5.602ms of 39.002ms") != NULL);
	/*
	 * Lines by the GPU time they launched: forward's two GEMMs and the
	 * demangled kernel (4.002 ms), then step's copy (1 ms); the orphan
	 * and the unsampled thread's kernel have no line.
	 */
	lines =
	    strstr(sb.buf, "  Python lines by the GPU time they launched:\n");
	CHECK(lines != NULL);
	CHECK(lines && strstr(lines, "   71.44%     4.002ms  forward "
				     "(model.py:12)\n   17.85%     1.000ms  "
				     "step (train.py:20)\n") != NULL);
	strbuf_reset(&sb);
	gpuprof_summary(&fx.gp, 1, &sb);
	CHECK(strstr(sb.buf, "(3 more)") != NULL);
	CHECK(strstr(sb.buf, "(1 more)") != NULL);
	if (failed)
		fputs(sb.buf, stderr);
	strbuf_release(&sb);
	fixture_release(&fx);
}

/*
 * Launch stacks the agent copied: an activity with one goes on it, under
 * GPU_ROOT_LAUNCH, even from a thread never sampled; a driver call's
 * alias leads to its runtime call's stack; the others are placed as
 * before.  The summary's lines are the launches' own.
 */
static void test_launch_stacks(void)
{
	struct fixture fx;
	struct strbuf sb = STRBUF_INIT;
	const struct stack_entry *e;
	/* GEMM 1 from forward's line 13 (its samples say line 12). */
	struct stack_frame frames[3] = {{"<module>", "train.py", 40},
					{"step", "train.py", 21},
					{"forward", "model.py", 13}};
	struct stack_frame worker = {"worker", "pool.py", 7};

	fixture_init(&fx);
	gpuprof_launch_stack(&fx.gp, 1, TID_MAIN, 0, frames, 3);
	/* The demangled kernel's launch (6): a driver call inside 1's. */
	gpuprof_launch_stack(&fx.gp, 6, TID_MAIN, 1, NULL, 0);
	/* The kernel of the thread never sampled. */
	gpuprof_launch_stack(&fx.gp, 5, TID_UNSAMPLED, 0, &worker, 1);
	/* An alias to a launch with no stack, and one to itself. */
	gpuprof_launch_stack(&fx.gp, 3, TID_MAIN, 99, NULL, 0);
	gpuprof_launch_stack(&fx.gp, 2, TID_MAIN, 2, NULL, 0);
	gpuprof_attribute(&fx.gp, &fx.cpu);
	CHECK(fx.gp.exact == 3);
	CHECK(fx.gp.attributed == 2);
	CHECK(fx.gp.no_launch == 1 && fx.gp.no_sample == 0);
	e = entry_for(&fx.gp, "unsampled");
	CHECK(
	    e && e->depth == 3 &&
	    !strcmp(fx.gp.stacks.frames[e->frames[0]].name, GPU_ROOT_LAUNCH) &&
	    !strcmp(fx.gp.stacks.frames[e->frames[1]].name, "worker") &&
	    fx.gp.stacks.threads[e->thread].tid == TID_UNSAMPLED);
	e = entry_for(&fx.gp, "kernel(float*, int)");
	CHECK(
	    e && e->depth == 5 &&
	    !strcmp(fx.gp.stacks.frames[e->frames[0]].name, GPU_ROOT_LAUNCH) &&
	    fx.gp.stacks.frames[e->frames[3]].line == 13);
	CHECK(!strcmp(gpuprof_stacks_name(&fx.gp),
		      "GPU time by launching stack (the Python stack of the "
		      "launch, else the nearest CPU sample)"));
	gpuprof_summary(&fx.gp, 20, &sb);
	/* 3 ms + 2 us from line 13; GEMM 2's 1 ms from line 12 (sampled). */
	CHECK(strstr(sb.buf,
		     "   53.59%     3.002ms  forward (model.py:13)\n") != NULL);
	CHECK(strstr(sb.buf,
		     "   17.85%     1.000ms  forward (model.py:12)\n") != NULL);
	CHECK(strstr(sb.buf, "    1.79%   100.000us  worker (pool.py:7)\n") !=
	      NULL);
	CHECK(strstr(sb.buf,
		     "6 activities: 3 by the Python stack of their "
		     "launch, 2 by the launching thread's nearest CPU "
		     "sample, 0 by the stack of the thread waiting in "
		     "autograd's engine (a launching thread with no Python), "
		     "1 with no launch record, 0 with") != NULL);
	if (failed)
		fputs(sb.buf, stderr);
	strbuf_release(&sb);
	fixture_release(&fx);
}

/*
 * With --native, the innermost frame of a launching stack is native:
 * the line charged is the innermost Python one below it.
 */
static void test_summary_python_lines(void)
{
	struct fixture fx;
	struct strbuf sb = STRBUF_INIT;
	uint32_t i;

	fixture_init(&fx);
	/* Every CPU frame but forward (model.py:12) is Python. */
	for (i = 0; i < fx.cpu.nr_frames; i++)
		if (strcmp(fx.cpu.frames[i].name, "forward"))
			gpuprof_python_frame(&fx.gp, i);
	gpuprof_attribute(&fx.gp, &fx.cpu);
	gpuprof_summary(&fx.gp, 20, &sb);
	CHECK(strstr(sb.buf, "   89.29%     5.002ms  step (train.py:20)\n") !=
	      NULL);
	CHECK(strstr(sb.buf, "forward (model.py:12)\n") == NULL);
	if (failed)
		fputs(sb.buf, stderr);
	strbuf_release(&sb);
	fixture_release(&fx);
}

static double fabs_diff(double a, double b)
{
	return a > b ? a - b : b - a;
}

static char *read_file_all(const char *path)
{
	FILE *fp = fopen(path, "r");
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;

	if (!fp)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(fp);
	return strbuf_detach(&sb);
}

/* The profile called name in root, or NULL. */
static const cJSON *profile_named(const cJSON *root, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(root, "profiles"))
	{
		const char *n =
		    cJSON_GetStringValue(cJSON_GetObjectItem(p, "name"));

		if (n && !strcmp(n, name))
			return p;
	}
	return NULL;
}

/* Write st (with the fixture's GPU profile) in fmt; the text, or NULL. */
static char *write_profile(struct fixture *fx, enum output_format fmt,
			   char *path)
{
	struct profile_meta meta = {.title = "python train.py (pid 1)",
				    .python_version = "3.12",
				    .rate_hz = RATE_HZ,
				    .duration_s = 0.05};
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return NULL;
	close(fd);
	gpuprof_attribute(&fx->gp, &fx->cpu);
	meta.gpu = &fx->gp;
	CHECK(output_write(path, fmt, &fx->cpu, &meta) == 0);
	return read_file_all(path);
}

static void test_speedscope(void)
{
	struct fixture fx;
	char path[] = "/tmp/spyc-test-gpuprof-XXXXXX";
	const cJSON *frames, *p, *ev, *g, *clock;
	cJSON *root = NULL;
	char *text, cmd[1024];
	double last_at = -1e9;
	int opens = 0, closes = 0, open_frame = -1, bad_nesting = 0;

	fixture_init(&fx);
	text = write_profile(&fx, FORMAT_SPEEDSCOPE, path);
	root = cJSON_Parse(text ? text : "");
	CHECK(root != NULL);
	if (!root)
		goto out;
	frames =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(root, "shared"), "frames");
	CHECK(cJSON_GetArraySize(frames) == (int)fx.gp.stacks.nr_frames);
	/* The CPU thread profiles, then GPU stacks, then two streams. */
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(root, "profiles")) == 6);
	CHECK(profile_named(root, "GPU idle by Python stack") != NULL);
	p = profile_named(root, "GPU time by launching stack (nearest CPU "
				"sample)");
	CHECK(p != NULL);
	if (p)
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "endValue")) >
		      0.005602 - 1e-9);
	CHECK(profile_named(root, "GPU 0 stream 9") != NULL);
	p = profile_named(root, "GPU 0 stream 7");
	CHECK(p != NULL);
	if (!p)
		goto out;
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p, "type")),
		      "evented"));
	/* Balanced, ordered, never two open at once; times in seconds. */
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(p, "events"))
	{
		const char *type =
		    cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
		int frame =
		    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(ev, "frame"));
		double at = cJSON_GetNumberValue(cJSON_GetObjectItem(ev, "at"));

		CHECK(at >= last_at);
		last_at = at;
		CHECK(frame >= 0 && frame < cJSON_GetArraySize(frames));
		if (!strcmp(type, "O")) {
			bad_nesting += open_frame != -1;
			open_frame = frame;
			opens++;
		} else {
			bad_nesting += open_frame != frame;
			open_frame = -1;
			closes++;
		}
	}
	CHECK(!bad_nesting && opens == 5 && closes == 5);
	/* The first GEMM ran 22 to 25 ms into sampling (CUPTI + offset). */
	ev = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "events"), 2);
	CHECK(ev &&
	      fabs_diff(cJSON_GetNumberValue(cJSON_GetObjectItem(ev, "at")),
			0.022) < 1e-9);
	ev = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "events"), 2);
	CHECK(ev &&
	      !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(
			  cJSON_GetArrayItem(
			      frames, (int)cJSON_GetNumberValue(
					  cJSON_GetObjectItem(ev, "frame"))),
			  "name")),
		      "volta_sgemm_128x64_nn"));
	g = cJSON_GetObjectItem(root, "spyc_gpu");
	CHECK(g != NULL);
	clock = cJSON_GetObjectItem(g, "clock");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(clock, "aligned")));
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(
		  clock, "monotonic_minus_cupti_ns")) == (double)OFFSET);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(clock, "drift_ns")) ==
	      300);
	CHECK(!strncmp(
	    cJSON_GetStringValue(cJSON_GetObjectItem(g, "attribution")),
	    "launch-stack, else nearest-sample", 33));
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(g, "by_launch_stack")) ==
	      0);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(g, "attributed")) == 4);

	if (access(SPEEDSCOPE_SCHEMA_FILE, R_OK)) {
		printf("skip: speedscope schema check: %s not installed\n",
		       SPEEDSCOPE_SCHEMA_FILE);
	} else if (system("python3 -c 'import jsonschema' 2>/dev/null")) {
		printf(
		    "skip: speedscope schema check: no python3 jsonschema\n");
	} else {
		snprintf(cmd, sizeof(cmd),
			 "python3 -c 'import json, sys, jsonschema; "
			 "jsonschema.validate(json.load(open(sys.argv[1])), "
			 "json.load(open(sys.argv[2])))' '%s' '%s'",
			 path, SPEEDSCOPE_SCHEMA_FILE);
		CHECK(system(cmd) == 0);
	}
out:
	cJSON_Delete(root);
	free(text);
	unlink(path);
	fixture_release(&fx);
}

static void test_folded(void)
{
	struct fixture fx;
	char path[] = "/tmp/spyc-test-gpuprof-XXXXXX";
	char *text;

	fixture_init(&fx);
	text = write_profile(&fx, FORMAT_FOLDED, path);
	CHECK(text != NULL);
	if (!text)
		goto out;
	/* CPU samples in microseconds too: 2 samples at 100 Hz. */
	CHECK(
	    strstr(text, "<module> (train.py:40);step (train.py:20) 20000\n"));
	CHECK(strstr(text, "<module> (train.py:40);step (train.py:20);forward "
			   "(model.py:12) 20000\n"));
	CHECK(strstr(text, "[GPU time, by the launching thread's nearest CPU "
			   "sample];<module> (train.py:40);step "
			   "(train.py:20);forward (model.py:12);"
			   "volta_sgemm_128x64_nn 4000\n"));
	CHECK(strstr(text, ";step (train.py:20);[memcpy HtoD] 1000\n"));
	CHECK(strstr(text, "[GPU time, no launch record];orphan 500\n"));
	CHECK(strstr(text, ";forward (model.py:12);kernel(float*, int) 2\n"));
	if (failed)
		fputs(text, stderr);
out:
	free(text);
	unlink(path);
	fixture_release(&fx);
}

/*
 * A long name whose pieces never came: its start, marked, with its hash,
 * not demangled.
 */
static void test_names(void)
{
	struct gpu_record r = kernel(1, "_ZN2at6native", 0, 1, 0);
	struct strbuf sb = STRBUF_INIT;

	r.u.kernel.name_len = 300;
	r.u.kernel.name_hash = 0xabcdef0123456789ULL;
	gpuprof_activity_name(NULL, &r, &sb);
	CHECK(!strcmp(sb.buf, "_ZN2at6native... [name abcdef01]"));
	strbuf_reset(&sb);
	r = copy(1, 2, 10, 0, 1);
	gpuprof_activity_name(NULL, &r, &sb);
	CHECK(!strcmp(sb.buf, "[memcpy DtoH]"));
	CHECK(!strcmp(gpu_copy_kind_name(200), "unknown"));
	strbuf_release(&sb);
}

/*
 * CUPTI's clock steps back mid-run (CLOCK_REALTIME): once attributed, a
 * time goes by the pair nearest it, so that neither side of the step
 * moves; before, by the first pair.
 */
static void test_clock_step(void)
{
	struct gpuprof gp;
	struct stacks cpu;
	struct gpu_record r;

	gpuprof_init(&gp);
	stacks_init(&cpu);
	r = clock_pair(1000000, 5000000);
	gpuprof_add(&gp, &r);
	r = clock_pair(2000000, 6000000);
	gpuprof_add(&gp, &r);
	/* The wall clock went 1.9 ms back: CUPTI's times with it. */
	r = clock_pair(1100000, 7000000);
	gpuprof_add(&gp, &r);
	r = kernel(1, "k", 1950000, 1960000, 7);
	gpuprof_add(&gp, &r);
	r = kernel(2, "k", 1150000, 1160000, 7);
	gpuprof_add(&gp, &r);
	CHECK(gpuprof_to_monotonic(&gp, 1150000) == 5150000);
	gpuprof_attribute(&gp, &cpu);
	CHECK(gpuprof_to_monotonic(&gp, 1950000) == 5950000);
	CHECK(gpuprof_to_monotonic(&gp, 1150000) == 7050000);
	CHECK(gpuprof_to_monotonic(&gp, 2500000) == 6500000);
	CHECK(gpuprof_to_monotonic(&gp, 10) == 4000010);
	gpuprof_release(&gp);
	stacks_release(&cpu);
}

/* The pieces of a long name, as the agent sends them (in any order). */
static void add_name_pieces(struct gpuprof *gp, const char *name, int reverse)
{
	uint32_t len = (uint32_t)strlen(name), n = 0, i;
	struct gpu_record r[GPU_NAME_MAX / GPU_NAME_PIECE + 1];
	uint32_t off;

	for (off = 0; off < len; off += GPU_NAME_PIECE, n++) {
		memset(&r[n], 0, sizeof(r[n]));
		r[n].type = GPU_REC_NAME;
		r[n].size = sizeof(r[n].u.name);
		r[n].u.name.hash = gpu_name_hash(name, len);
		r[n].u.name.len = len;
		r[n].u.name.offset = off;
		r[n].u.name.count =
		    len - off < GPU_NAME_PIECE ? len - off : GPU_NAME_PIECE;
		memcpy(r[n].u.name.text, name + off, r[n].u.name.count);
	}
	for (i = 0; i < n; i++)
		gpuprof_add(gp, &r[reverse ? n - 1 - i : i]);
	/* A piece again changes nothing. */
	if (n)
		gpuprof_add(gp, &r[0]);
}

/* A kernel record of a long name: its start, its length and hash. */
static struct gpu_record long_kernel(uint32_t corr, const char *name,
				     uint64_t start, uint64_t end)
{
	struct gpu_record r = kernel(corr, name, start, end, 7);

	r.u.kernel.name_len = (uint32_t)strlen(name);
	r.u.kernel.name_hash = gpu_name_hash(name, strlen(name));
	return r;
}

/*
 * Long kernel names: whole and demangled once their pieces came, never
 * merged with another that starts the same, each its own summary row.
 */
static void test_long_names(void)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, sb = STRBUF_INIT;
	struct gpu_record ka, kb, kc;
	struct stacks cpu;
	struct gpuprof gp;
	int i;

	/* Two names of 600+ characters that differ only at their end. */
	strbuf_addstr(&a, "_Z6kernelI");
	strbuf_addstr(&b, "_Z6kernelI");
	for (i = 0; i < 60; i++) {
		strbuf_addstr(&a, "N4cute5tupleE");
		strbuf_addstr(&b, "N4cute5tupleE");
	}
	strbuf_addstr(&a, "iEvT_");
	strbuf_addstr(&b, "lEvT_");
	gpuprof_init(&gp);
	stacks_init(&cpu);
	add_name_pieces(&gp, a.buf, 0);
	add_name_pieces(&gp, b.buf, 1);
	ka = long_kernel(1, a.buf, 1000, 3000);
	kb = long_kernel(2, b.buf, 4000, 5000);
	kc = long_kernel(3, b.buf, 6000, 7000);
	CHECK(strlen(ka.u.kernel.name) == GPU_KERNEL_NAME_INLINE - 1);
	CHECK(!strcmp(ka.u.kernel.name, kb.u.kernel.name));
	gpuprof_add(&gp, &ka);
	gpuprof_add(&gp, &kb);
	gpuprof_add(&gp, &kc);
	gpuprof_activity_name(&gp.names, &ka, &sb);
	CHECK(!strncmp(sb.buf, "void kernel<cute::tuple, ", 25));
	CHECK(strstr(sb.buf, ", int>(cute::tuple)") != NULL);
	CHECK(strlen(sb.buf) > 600);
	gpuprof_attribute(&gp, &cpu);
	strbuf_reset(&sb);
	gpuprof_summary(&gp, 10, &sb);
	CHECK(strstr(sb.buf, "3 kernels") != NULL);
	CHECK(strstr(sb.buf, "      1     2.000us") != NULL);
	CHECK(strstr(sb.buf, "      2     1.000us") != NULL);
	CHECK(strstr(sb.buf, ", long>(cute::tuple)\n") != NULL);
	CHECK(gp.leaf[0] != gp.leaf[1] && gp.leaf[1] == gp.leaf[2]);
	gpuprof_release(&gp);
	stacks_release(&cpu);

	/* Without the pieces: their starts, apart by their hashes. */
	gpuprof_init(&gp);
	stacks_init(&cpu);
	gpuprof_add(&gp, &ka);
	gpuprof_add(&gp, &kb);
	gpuprof_attribute(&gp, &cpu);
	CHECK(gp.leaf[0] != gp.leaf[1]);
	strbuf_reset(&sb);
	gpuprof_activity_name(&gp.names, &ka, &sb);
	CHECK(!strncmp(sb.buf, ka.u.kernel.name, GPU_KERNEL_NAME_INLINE - 1));
	CHECK(strstr(sb.buf, "... [name ") != NULL);
	gpuprof_release(&gp);
	stacks_release(&cpu);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&sb);
}

/* The X event of thread tid of process pid named name, or NULL. */
static const cJSON *chrome_x(const cJSON *events, double pid, double tid,
			     const char *name)
{
	const cJSON *ev;

	cJSON_ArrayForEach(ev, events)
	{
		const cJSON *n = cJSON_GetObjectItem(ev, "name");

		if (!strcmp(cJSON_GetObjectItem(ev, "ph")->valuestring, "X") &&
		    cJSON_GetObjectItem(ev, "pid")->valuedouble == pid &&
		    cJSON_GetObjectItem(ev, "tid")->valuedouble == tid && n &&
		    !strcmp(n->valuestring, name))
			return ev;
	}
	return NULL;
}

/* An X event of category cat at exactly (pid, tid, ts), or NULL. */
static const cJSON *slice_at(const cJSON *events, double pid, double tid,
			     double ts, const char *cat)
{
	const cJSON *ev;

	cJSON_ArrayForEach(ev, events)
	{
		const cJSON *c = cJSON_GetObjectItem(ev, "cat");

		if (!strcmp(cJSON_GetObjectItem(ev, "ph")->valuestring, "X") &&
		    cJSON_GetObjectItem(ev, "pid")->valuedouble == pid &&
		    cJSON_GetObjectItem(ev, "tid")->valuedouble == tid &&
		    cJSON_GetObjectItem(ev, "ts")->valuedouble == ts && c &&
		    !strcmp(c->valuestring, cat))
			return ev;
	}
	return NULL;
}

/*
 * Every launch that was recorded has a flow: an "s" on the launching
 * call's slice, an "f" with the same id (after it) on the activity's,
 * each at a slice's very start with the same category (how DevTools
 * binds them), the call before the activity.
 */
static void check_flows(const cJSON *events)
{
	const cJSON *ev, *s_ev[16] = {0}, *f_ev[16] = {0};
	int nr_s = 0, nr_f = 0, id;

	cJSON_ArrayForEach(ev, events)
	{
		const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;
		const cJSON *cat = cJSON_GetObjectItem(ev, "cat");
		const cJSON *slice;

		if (strcmp(ph, "s") && strcmp(ph, "f"))
			continue;
		id = (int)cJSON_GetObjectItem(ev, "id")->valuedouble;
		CHECK(id >= 0 && id < 16 && cat);
		if (id < 0 || id >= 16 || !cat)
			continue;
		slice = slice_at(events,
				 cJSON_GetObjectItem(ev, "pid")->valuedouble,
				 cJSON_GetObjectItem(ev, "tid")->valuedouble,
				 cJSON_GetObjectItem(ev, "ts")->valuedouble,
				 cat->valuestring);
		CHECK(slice != NULL);
		if (*ph == 's') {
			CHECK(!s_ev[id] && !f_ev[id]);
			s_ev[id] = ev;
			nr_s++;
		} else {
			CHECK(s_ev[id] && !f_ev[id]);
			CHECK(!strcmp(
			    cJSON_GetStringValue(cJSON_GetObjectItem(ev, "bp")),
			    "e"));
			f_ev[id] = ev;
			nr_f++;
		}
	}
	/* Five activities have a launch record; the orphan has none. */
	CHECK(nr_s == 5 && nr_f == 5);
	for (id = 0; id < 16; id++)
		if (s_ev[id] && f_ev[id])
			CHECK(cJSON_GetObjectItem(s_ev[id], "ts")->valuedouble <
			      cJSON_GetObjectItem(f_ev[id], "ts")->valuedouble);
}

/*
 * --gpu --format chrome: a row per device and stream under a process
 * "GPU N", each activity an X event on the CPU rows' clock (us since
 * sampling started).
 */
static void test_chrome(void)
{
	struct fixture fx;
	struct timeline tl;
	struct profile_meta meta = {.title = "python train.py (pid 1)",
				    .rate_hz = RATE_HZ,
				    .duration_s = 0.05,
				    .pid = 1};
	char path[] = "/tmp/spyc-test-gpuprof-XXXXXX";
	const cJSON *events, *ev;
	cJSON *root = NULL;
	char *text = NULL;
	int fd, gpu_names = 0;

	fixture_init(&fx);
	timeline_init(&tl);
	tl.t0_ns = T0;
	CHECK(!timeline_tick(&tl, T0) && !timeline_add(&tl, fx.e_step));
	CHECK(!timeline_tick(&tl, T0 + 20000000) &&
	      !timeline_add(&tl, fx.e_forward) &&
	      !timeline_add(&tl, fx.e_load));
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		goto out;
	close(fd);
	gpuprof_attribute(&fx.gp, &fx.cpu);
	meta.gpu = &fx.gp;
	meta.timeline = &tl;
	CHECK(output_write(path, FORMAT_CHROME, &fx.cpu, &meta) == 0);
	text = read_file_all(path);
	root = cJSON_Parse(text ? text : "");
	CHECK(root != NULL);
	if (!root)
		goto out;
	events = cJSON_GetObjectItem(root, "traceEvents");
	cJSON_ArrayForEach(ev, events)
	{
		const cJSON *args = cJSON_GetObjectItem(ev, "args");
		const cJSON *name =
		    args ? cJSON_GetObjectItem(args, "name") : NULL;

		if (name && cJSON_IsString(name) &&
		    !strcmp(name->valuestring, "GPU 0"))
			gpu_names++;
	}
	CHECK(gpu_names == 1);
	/* Launched 21 ms after sampling started, ran 22-25 ms. */
	ev = chrome_x(events, 1e9, 7, "volta_sgemm_128x64_nn");
	CHECK(ev && cJSON_GetObjectItem(ev, "ts")->valuedouble == 22000 &&
	      cJSON_GetObjectItem(ev, "dur")->valuedouble == 3000);
	ev = chrome_x(events, 1e9, 9, "unsampled");
	CHECK(ev && cJSON_GetObjectItem(ev, "ts")->valuedouble == 31000 &&
	      cJSON_GetObjectItem(ev, "dur")->valuedouble == 100);
	ev = chrome_x(events, 1e9, 7, "kernel(float*, int)");
	CHECK(ev && cJSON_GetObjectItem(ev, "dur")->valuedouble == 2);
	/* The CPU rows are still there, under the target's pid. */
	CHECK(chrome_x(events, 1, TID_MAIN, "step") != NULL);
	/* Each thread's CUDA calls on a row beside it, to the ns. */
	ev = chrome_x(events, 1, 1e9 + TID_MAIN, "cudaMemcpyAsync");
	CHECK(ev && cJSON_GetObjectItem(ev, "ts")->valuedouble == 2000 &&
	      cJSON_GetObjectItem(ev, "dur")->valuedouble == 2);
	CHECK(chrome_x(events, 1, 1e9 + TID_MAIN, "cudaLaunchKernel") != NULL);
	CHECK(chrome_x(events, 1, 1e9 + TID_UNSAMPLED,
		       "[CUDA runtime call 211]") != NULL);
	check_flows(events);
	/* The clocks' alignment, as in the speedscope output. */
	ev = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "otherData"),
				 "gpu_clock");
	CHECK(ev && cJSON_IsTrue(cJSON_GetObjectItem(ev, "aligned")) &&
	      cJSON_GetNumberValue(cJSON_GetObjectItem(
		  ev, "monotonic_minus_cupti_ns")) == (double)OFFSET &&
	      cJSON_GetNumberValue(cJSON_GetObjectItem(ev, "drift_ns")) == 300);
	/* For tests/test_gpu.py, which loads it in DevTools' engine. */
	if (getenv("SPYC_TEST_GPU_TRACE"))
		CHECK(!rename(path, getenv("SPYC_TEST_GPU_TRACE")));
out:
	cJSON_Delete(root);
	free(text);
	unlink(path);
	timeline_release(&tl);
	fixture_release(&fx);
}

/*
 * CUPTI's correlation ids are 32 bits and wrap in a long run: an activity
 * goes with the call of its id that started last before it.
 */
static void test_correlation_wrap(void)
{
	struct gpuprof gp;
	struct stacks cpu;
	struct gpu_record r;
	const struct gpu_api_call *a;
	size_t i;

	gpuprof_init(&gp);
	stacks_init(&cpu);
	r = api(7, TID_LOADER, 5000000);
	gpuprof_add(&gp, &r);
	r = api(7, TID_MAIN, 1000000);
	gpuprof_add(&gp, &r);
	r = api(8, TID_MAIN, 1100000);
	gpuprof_add(&gp, &r);
	r = kernel(7, "late", 5100000, 5200000, 7);
	gpuprof_add(&gp, &r);
	r = kernel(7, "early", 1100000, 1200000, 7);
	gpuprof_add(&gp, &r);
	r = kernel(8, "other", 1200000, 1300000, 7);
	gpuprof_add(&gp, &r);
	gpuprof_attribute(&gp, &cpu);
	for (i = 0; i < gp.nr_acts; i++) {
		a = gpuprof_launch(&gp, &gp.acts[i]);
		CHECK(a);
		if (!a)
			continue;
		if (gp.acts[i].type == GPU_REC_KERNEL &&
		    !strcmp(gp.kernels[gp.acts[i].kernel].u.kernel.name,
			    "late"))
			CHECK(a->tid == TID_LOADER && a->start == 5000000);
		else
			CHECK(a->tid == TID_MAIN);
	}
	gpuprof_release(&gp);
	stacks_release(&cpu);
}

/* The idle stacks' nanoseconds whose innermost frame is named leaf. */
static uint64_t idle_under(const struct gpuprof *gp, const char *leaf)
{
	uint64_t ns = 0;
	size_t i;

	for (i = 0; i < gp->idle.nr_entries; i++) {
		const struct stack_entry *e = &gp->idle.entries[i];

		if (e->depth &&
		    !strcmp(gp->stacks.frames[e->frames[e->depth - 1]].name,
			    leaf))
			ns += e->count;
	}
	return ns;
}

/*
 * GPU idle time by what the launching thread ran: sampling from 0 to 100
 * ms, a sample every 10 ms (at 5, 15, ..., 75 ms: none after), the
 * thread in busy() up to 45 ms and in host() from 55 ms; the device busy
 * from 1 to 50 ms, on two streams whose kernels overlap.  Idle from the
 * device's first work (1 ms; before it, the program had not used it):
 * 50 to 100 ms, 50-80 under host()'s samples (each stands for 10 ms),
 * 80-100 under no sample; none under busy().
 */
static void test_idle(void)
{
	struct stacks cpu;
	struct gpuprof gp;
	struct strbuf sb = STRBUF_INIT;
	uint32_t th, f_main, frames[2], e_busy, e_host;
	uint64_t t;
	int i;

	stacks_init(&cpu);
	gpuprof_init(&gp);
	gp.t0_ns = T0;
	gp.t1_ns = T0 + 100000000;
	gp.period_ns = 10000000;
	th = stacks_thread(&cpu, 0x1000, TID_MAIN, NULL);
	f_main = stacks_frame(&cpu, "<module>", "train.py", 1);
	frames[0] = f_main;
	frames[1] = stacks_frame(&cpu, "busy", "train.py", 5);
	e_busy = stacks_add(&cpu, th, frames, 2, 1);
	frames[1] = stacks_frame(&cpu, "host", "train.py", 9);
	e_host = stacks_add(&cpu, th, frames, 2, 1);
	for (t = 5; t <= 75; t += 10)
		gpuprof_cpu_sample(&gp, T0 + t * 1000000, TID_MAIN,
				   t < 50 ? e_busy : e_host);
	for (i = 0; i < 4; i++) {
		/* Kernels on streams 7 and 9: 1-20, 10-30, 25-40, 35-50 ms. */
		static const uint64_t from[] = {1, 10, 25, 35};
		static const uint64_t to[] = {20, 30, 40, 50};
		struct gpu_record a = api((uint32_t)i + 1, TID_MAIN,
					  cupti_at(from[i] * 1000000 - 500000));
		struct gpu_record k =
		    kernel((uint32_t)i + 1, "k", cupti_at(from[i] * 1000000),
			   cupti_at(to[i] * 1000000), i % 2 ? 9 : 7);

		gpuprof_add(&gp, &a);
		gpuprof_add(&gp, &k);
	}
	{
		struct gpu_record c = clock_pair(1000000, 1000000 + OFFSET);

		gpuprof_add(&gp, &c);
	}
	gpuprof_attribute(&gp, &cpu);
	CHECK(gp.idle_window_ns == 99000000);
	CHECK(gp.idle_ns == 50000000);
	CHECK(gp.idle_unsampled_ns == 20000000);
	CHECK(idle_under(&gp, "busy") == 0);
	CHECK(idle_under(&gp, "host") == 30000000);
	CHECK(idle_under(&gp, GPU_IDLE_UNSAMPLED) == 20000000);
	CHECK(gp.idle.total_samples == gp.idle_ns);
	gpuprof_summary(&gp, 10, &sb);
	CHECK(strstr(sb.buf ? sb.buf : "",
		     "GPU idle 50.5% of the 99.000ms sampled from its first "
		     "work (50.000ms), 20.000ms of it while no launching "
		     "thread was sampled") != NULL);
	CHECK(strstr(sb.buf ? sb.buf : "", "host (train.py:9)") != NULL);
	strbuf_release(&sb);
	gpuprof_release(&gp);
	stacks_release(&cpu);
}

/*
 * The HTML page of a run with more kernels than it draws one by one:
 * 60000 kernels of 500 ns, one every 1000 ns over the 60 ms of the run,
 * so that each of the stream's 1000 bins of 60 us was busy half of it.
 */
static void test_html_bins(void)
{
	struct stacks cpu;
	struct gpuprof gp;
	struct profile_meta meta = {.title = "python train.py (pid 1)",
				    .rate_hz = RATE_HZ,
				    .duration_s = 0.06};
	char path[] = "/tmp/spyc-test-gpuprof-XXXXXX";
	const char *tag = "<script id=\"spyc-data\" type=\"application/json\">";
	const cJSON *rows, *row, *bins, *b;
	cJSON *root = NULL;
	char *text = NULL, *json, *end;
	int fd, i, off = 0;

	stacks_init(&cpu);
	gpuprof_init(&gp);
	for (i = 0; i < 60000; i++) {
		struct gpu_record r =
		    kernel((uint32_t)i + 1, "k", 1000ULL * (uint64_t)i,
			   1000ULL * (uint64_t)i + 500, 1);

		gpuprof_add(&gp, &r);
	}
	gpuprof_attribute(&gp, &cpu);
	meta.gpu = &gp;
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd >= 0) {
		close(fd);
		CHECK(output_write(path, FORMAT_HTML, &cpu, &meta) == 0);
		text = read_file_all(path);
		unlink(path);
	}
	json = text ? strstr(text, tag) : NULL;
	end = json ? strstr(json, "</script>") : NULL;
	CHECK(json && end);
	if (json && end) {
		*end = '\0';
		root = cJSON_Parse(json + strlen(tag));
	}
	rows = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "gpu"), "rows");
	CHECK(cJSON_GetArraySize(rows) == 1);
	row = cJSON_GetArrayItem(rows, 0);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(row, "count")) == 60000);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(row, "busy_ns")) ==
	      60000 * 500.0);
	CHECK(cJSON_GetObjectItem(row, "spans") == NULL);
	bins = cJSON_GetObjectItem(row, "bins");
	CHECK(cJSON_GetArraySize(bins) == 1000);
	cJSON_ArrayForEach(b, bins)
	{
		double v = cJSON_GetNumberValue(b);

		off += v < 499 || v > 500;
	}
	CHECK(off == 0);
	cJSON_Delete(root);
	free(text);
	gpuprof_release(&gp);
	stacks_release(&cpu);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* st's entries as sorted lines, "thread: frame;frame count", by names. */
static char *stacks_text(const struct stacks *st)
{
	struct strbuf sb = STRBUF_INIT, line = STRBUF_INIT;
	char **lines = xcalloc(st->nr_entries + 1, sizeof(*lines));
	size_t i, j;

	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];
		const struct stack_thread *t = &st->threads[e->thread];

		strbuf_reset(&line);
		strbuf_addf(&line, "%llu/%ld/%s:", (unsigned long long)t->ident,
			    t->tid, t->name ? t->name : "");
		for (j = 0; j < e->depth; j++)
			strbuf_addf(&line, "%s%s", j ? ";" : " ",
				    st->frames[e->frames[j]].name);
		strbuf_addf(&line, " %llu", (unsigned long long)e->count);
		lines[i] = xstrdup(line.buf);
	}
	qsort(lines, st->nr_entries, sizeof(*lines), cmp_str);
	for (i = 0; i < st->nr_entries; i++) {
		strbuf_addf(&sb, "%s\n", lines[i]);
		free(lines[i]);
	}
	free(lines);
	strbuf_release(&line);
	return strbuf_detach(&sb);
}

/* The summary without its timeline line (which says what was folded). */
static char *summary_text(const struct gpuprof *gp)
{
	struct strbuf sb = STRBUF_INIT;
	char *t, *end;

	gpuprof_summary(gp, 50, &sb);
	t = strstr(sb.buf, "  timeline: ");
	if (t && (end = strchr(t, '\n')))
		memmove(t, end + 1, strlen(end + 1) + 1);
	return strbuf_detach(&sb);
}

static struct gpu_record memset_rec(uint32_t corr, uint64_t start, uint64_t end,
				    uint32_t device)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_MEMSET;
	r.size = sizeof(r.u.memset);
	r.u.memset.iv.correlation = corr;
	r.u.memset.iv.start = start;
	r.u.memset.iv.end = end;
	r.u.memset.iv.device = device;
	r.u.memset.iv.stream = 3;
	r.u.memset.bytes = 4096;
	return r;
}

/*
 * A run of n launches 600 us apart over about n * 0.6 ms, fed to gp in
 * the order the channel gives them, gpuprof_fold after each record
 * when fold: main launches on device 0 (a stack of its own at three in
 * four launches, else by the nearest sample), the loader on device 1
 * (by its nearest sample); kernels of six names and lengths, copies,
 * memsets, one launch in 97 with no API record.  Correlation ids from
 * first_corr on, by step (mod 2^32).
 */
static void feed_run(struct gpuprof *gp, struct stacks *cpu, int fold, size_t n,
		     uint32_t first_corr, uint32_t step)
{
	uint32_t th_main = stacks_thread(cpu, 0x1000, TID_MAIN, NULL);
	uint32_t th_load = stacks_thread(cpu, 0x2000, TID_LOADER, "loader");
	uint32_t fr[3], e_a, e_b, e_load;
	struct stack_frame launch[3] = {{"<module>", "train.py", 40},
					{"step", "train.py", 21},
					{"forward", "model.py", 12}};
	uint64_t end_ns = T0 + n * 600000ULL + 20000000ULL, t;
	struct gpu_record r;
	size_t j;
	uint32_t corr = first_corr;

	fr[0] = stacks_frame(cpu, "<module>", "train.py", 40);
	fr[1] = stacks_frame(cpu, "step", "train.py", 20);
	e_a = stacks_add(cpu, th_main, fr, 2, 1);
	fr[1] = stacks_frame(cpu, "step", "train.py", 22);
	e_b = stacks_add(cpu, th_main, fr, 2, 1);
	fr[0] = stacks_frame(cpu, "load", "data.py", 5);
	e_load = stacks_add(cpu, th_load, fr, 1, 1);
	gp->t0_ns = T0;
	gp->t1_ns = end_ns;
	gp->period_ns = 10000000;
	/* The samples as the run takes them: every 10 ms, both threads. */
	for (t = T0; t < end_ns; t += 10000000) {
		gpuprof_cpu_sample(gp, t, TID_MAIN,
				   (t - T0) / 10000000 % 2 ? e_b : e_a);
		gpuprof_cpu_sample(gp, t + 1000, TID_LOADER, e_load);
	}
	r = clock_pair(1000000, 1000000 + OFFSET);
	gpuprof_add(gp, &r);
	for (j = 0; j < n; j++, corr += step) {
		int loader = j % 3 == 2;
		uint64_t at = cupti_at(1000000 + j * 600000ULL);
		uint64_t len = 100000 + (j % 6) * 37000 + (j % 5) * 1000;
		uint32_t c = corr ? corr : (corr += step);
		char name[16];

		if (!loader && j % 4 != 3)
			gpuprof_launch_stack(gp, c, TID_MAIN, 0, launch, 3);
		if (j % 97) {
			r = api(c, loader ? TID_LOADER : TID_MAIN, at);
			gpuprof_add(gp, &r);
		}
		if (j % 5 == 0) {
			r = copy(c, j % 2 ? 1 : 2, 1 << 20, at + 3000,
				 at + 3000 + len / 2);
			r.u.memcpy.iv.device = loader;
		} else if (j % 11 == 0) {
			r = memset_rec(c, at + 3000, at + 3000 + len / 4,
				       loader);
		} else {
			snprintf(name, sizeof(name), "k%zu", j % 6);
			r = kernel(c, name, at + 3000, at + 3000 + len,
				   (uint32_t)(loader * 10 + j % 2));
			r.u.kernel.iv.device = loader;
		}
		gpuprof_add(gp, &r);
		if (fold)
			gpuprof_fold(gp, cpu);
	}
}

/*
 * A run folded as it goes (gpuprof_fold, 100 activities held) makes the
 * same GPU stacks, idle stacks, line times and summary as the same run
 * held whole, and lets go of what it folded.
 */
static void test_fold(void)
{
	struct gpuprof whole, folded;
	struct stacks cpu_whole, cpu_folded;
	char *a, *b;

	gpuprof_init(&whole);
	gpuprof_init(&folded);
	stacks_init(&cpu_whole);
	stacks_init(&cpu_folded);
	folded.keep = 100;
	feed_run(&whole, &cpu_whole, 0, 3000, 1, 1);
	feed_run(&folded, &cpu_folded, 1, 3000, 1, 1);
	CHECK(whole.nr_acts == 3000 && !whole.nr_folded);
	CHECK(folded.nr_acts >= 100 && folded.nr_acts < 200);
	CHECK(gpuprof_activities(&folded) == 3000);
	/* What it let go: API calls and launch stacks of folded work. */
	CHECK(folded.nr_apis < 200 + 1024 && whole.nr_apis > 2900);
	CHECK(folded.nr_launches < 200 + 1024);
	gpuprof_attribute(&whole, &cpu_whole);
	gpuprof_attribute(&folded, &cpu_folded);
	CHECK(whole.exact == folded.exact && whole.exact > 1000);
	CHECK(whole.attributed == folded.attributed && whole.attributed > 500);
	CHECK(whole.no_launch == folded.no_launch && whole.no_launch > 5);
	a = stacks_text(&whole.stacks);
	b = stacks_text(&folded.stacks);
	CHECK(!strcmp(a, b));
	if (strcmp(a, b))
		fprintf(stderr, "whole:\n%s\nfolded:\n%s\n", a, b);
	free(a);
	free(b);
	a = stacks_text(&whole.idle);
	b = stacks_text(&folded.idle);
	CHECK(!strcmp(a, b) && whole.idle_ns > 0);
	if (strcmp(a, b))
		fprintf(stderr, "idle whole:\n%s\nidle folded:\n%s\n", a, b);
	free(a);
	free(b);
	CHECK(whole.idle_ns == folded.idle_ns &&
	      whole.idle_window_ns == folded.idle_window_ns &&
	      whole.idle_unsampled_ns == folded.idle_unsampled_ns);
	a = summary_text(&whole);
	b = summary_text(&folded);
	CHECK(!strcmp(a, b) && strstr(a, "Python lines by the GPU time"));
	if (strcmp(a, b))
		fprintf(stderr, "summary whole:\n%s\nsummary folded:\n%s\n", a,
			b);
	free(a);
	free(b);
	gpuprof_release(&whole);
	gpuprof_release(&folded);
	stacks_release(&cpu_whole);
	stacks_release(&cpu_folded);
}

/*
 * CUPTI's 32-bit correlation ids wrap in a long run (2^32 calls: an hour
 * and more of a launch-bound job): ids that repeat every four launches
 * (a step of 2^30) go each to its own launch's stack, as ids that never
 * repeat do, whether the run folds or not.
 */
static void test_correlation_ids_repeat(void)
{
	struct gpuprof plain, wrapped, wrapped_folded;
	struct stacks c1, c2, c3;
	char *a, *b, *c;

	gpuprof_init(&plain);
	gpuprof_init(&wrapped);
	gpuprof_init(&wrapped_folded);
	stacks_init(&c1);
	stacks_init(&c2);
	stacks_init(&c3);
	wrapped_folded.keep = 100;
	feed_run(&plain, &c1, 0, 1000, 1, 1);
	feed_run(&wrapped, &c2, 0, 1000, 0xfffff000u, 1u << 30);
	feed_run(&wrapped_folded, &c3, 1, 1000, 0xfffff000u, 1u << 30);
	gpuprof_attribute(&plain, &c1);
	gpuprof_attribute(&wrapped, &c2);
	gpuprof_attribute(&wrapped_folded, &c3);
	CHECK(plain.exact == wrapped.exact && plain.exact > 400);
	CHECK(plain.exact == wrapped_folded.exact);
	a = stacks_text(&plain.stacks);
	b = stacks_text(&wrapped.stacks);
	c = stacks_text(&wrapped_folded.stacks);
	CHECK(!strcmp(a, b) && !strcmp(a, c));
	if (strcmp(a, b))
		fprintf(stderr, "ids once:\n%s\nids repeating:\n%s\n", a, b);
	free(a);
	free(b);
	free(c);
	gpuprof_release(&plain);
	gpuprof_release(&wrapped);
	gpuprof_release(&wrapped_folded);
	stacks_release(&c1);
	stacks_release(&c2);
	stacks_release(&c3);
}

int main(void)
{
	test_fold();
	test_correlation_ids_repeat();
	test_correlation_wrap();
	test_attribution();
	test_waiting();
	test_summary();
	test_summary_python_lines();
	test_launch_stacks();
	test_speedscope();
	test_folded();
	test_chrome();
	test_names();
	test_long_names();
	test_clock_step();
	test_html_bins();
	test_idle();
	return failed;
}
