/* SPDX-License-Identifier: MIT */
/* Chrome trace writer: each thread's stacks over time, in the Trace Event
 * Format (JSON) that Perfetto and chrome://tracing read. */
#include "out/output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu/gpuprof.h"
#include "profile/timeline.h"
#include "util.h"

/*
 * Layout of the file (Trace Event Format, "JSON Object Format"):
 *
 *   {"traceEvents": [
 *     M events: the process (the target's pid and title; following
 *       several, each process, pid and command line), the threads
 *       (tid, name and tid as speedscope names its profiles, order);
 *     CPU rows: "X" (complete) events, one per stretch of time a
 *       function was on a thread's stack, written as it ends: in order
 *       of their end, which the format allows (readers sort by start);
 *     CUDA API rows (--gpu): beside each thread that called CUDA, a
 *       row "CUDA API: " and its CPU row's label (tid API_TID_BASE +
 *       T) with an "X"
 *       event per runtime or driver call (args: its correlation id);
 *     NVTX rows (--gpu, a launched program's NVTX ranges): beside each
 *       thread that pushed ranges, a row "NVTX: " and its CPU row's
 *       label (tid NVTX_TID_BASE + T), an "X" event per range, nested
 *       as they were pushed;
 *     GPU rows (--gpu): a process per device, "GPU N" (pid
 *       GPU_PID_BASE + N), a thread per stream ("stream S", tid S),
 *       an "X" event per kernel, copy and memset, on the same clock
 *       as the CPU rows (args: its CUDA context and correlation ids),
 *       and a flow ("s" on the launching call, "f"
 *       on the activity, id the activity's index) from each launch to
 *       what it launched
 *   ], "displayTimeUnit": "ms", "otherData": {what spyc knows}}
 *
 * Events are written one by one as they are made (each built with
 * cJSON and freed), so memory stays that of one event, however long
 * the trace.  Times are whole microseconds since sampling began: a
 * slice's end is then exactly its start plus its length, so that a
 * child never seems to end after its parent (readers check), as it
 * can by a rounding error with fractions.
 *
 * Why "X" and not "B"/"E" pairs: Chrome DevTools' importer matches
 * every E with the last B of the whole file, not of its thread, so
 * the B/E of two threads sampled together do not pair up there.
 */

/* Category of the stack events: the "cat" of every X event. */
#define CATEGORY "spyc"
/* ... and of the GPU activities'. */
#define GPU_CATEGORY "gpu"
/* The pid of GPU device N's rows: far above any Linux pid (2^22). */
#define GPU_PID_BASE 1000000000.0
/* The tid of thread T's CUDA API row, in T's process. */
#define API_TID_BASE 1000000000.0
/* ... and of its NVTX row. */
#define NVTX_TID_BASE 2000000000.0
/* The category of NVTX ranges' events. */
#define NVTX_CATEGORY "nvtx"
/*
 * The name of the flows from launches to kernels.  A flow's events
 * share the category of the events they bind to (DevTools binds by
 * timestamp, pid, tid and category): GPU_CATEGORY, as API calls and
 * activities have.
 */
#define FLOW_NAME "launch"

/* A frame open on a thread's stack: since when, which frame then. */
struct open_frame {
	double ts_us;
	uint32_t frame;
};

/* A thread's open frames, root first: as deep as its current stack. */
struct open_stack {
	struct open_frame *frames;
	size_t alloc;
};

struct chrome_out {
	FILE *fp;
	const struct stacks *st;
	const struct profile_meta *meta;
	double pid;
	uint32_t *frame_fn;	 /* the function of each frame */
	struct open_stack *open; /* per thread of st */
	size_t nr_events;  /* written so far: a comma goes before the next */
	size_t extra_rows; /* CUDA API and NVTX rows, sorted after the CPU's */
	struct strbuf tmp;
	int err; /* first error: a negative errno code */
};

/* Write ev (which this frees) as the next element of traceEvents. */
static void emit(struct chrome_out *o, cJSON *ev)
{
	char *text;
	size_t len;

	if (!ev) {
		if (!o->err)
			o->err = -ENOMEM;
		return;
	}
	text = o->err ? NULL : cJSON_PrintUnformatted(ev);
	cJSON_Delete(ev);
	if (o->err)
		return;
	if (!text) {
		o->err = -ENOMEM;
		return;
	}
	len = strlen(text);
	if ((o->nr_events && fputs(",\n", o->fp) == EOF) ||
	    fwrite(text, 1, len, o->fp) != len)
		o->err = errno ? -errno : -EIO;
	o->nr_events++;
	cJSON_free(text);
}

/* The tid a thread is shown under: its native id, else its ident. */
static double thread_tid(const struct stack_thread *t)
{
	return t->tid ? (double)t->tid : (double)t->ident;
}

/*
 * The pid of a thread's process: the target's, or following several
 * processes the one its process label ends with ("... (pid N)", as
 * cmd/record.c makes them).
 */
static double thread_pid(const struct chrome_out *o,
			 const struct stack_thread *t)
{
	const char *paren = t->process ? strrchr(t->process, '(') : NULL;
	long pid;

	if (paren && sscanf(paren, "(pid %ld)", &pid) == 1)
		return (double)pid;
	return o->pid;
}

/* A new event {"ph", "pid", "tid", "ts"}, or NULL if cJSON ran out. */
static cJSON *event(struct chrome_out *o, const char *ph, double pid,
		    double tid, double ts_us)
{
	cJSON *ev = cJSON_CreateObject();

	if (ev && cJSON_AddStringToObject(ev, "ph", ph) &&
	    cJSON_AddNumberToObject(ev, "pid", pid) &&
	    cJSON_AddNumberToObject(ev, "tid", tid) &&
	    cJSON_AddNumberToObject(ev, "ts", ts_us))
		return ev;
	cJSON_Delete(ev);
	return NULL;
}

/* A metadata event: ph "M", name, args {key: string or number}. */
static void emit_meta(struct chrome_out *o, const char *name, double pid,
		      double tid, const char *key, const char *str, double num)
{
	cJSON *ev = event(o, "M", pid, tid, 0), *args;

	if (!ev)
		goto oom;
	args = cJSON_AddObjectToObject(ev, "args");
	if (!cJSON_AddStringToObject(ev, "name", name) || !args ||
	    !(str ? cJSON_AddStringToObject(args, key,
					    output_utf8(str, &o->tmp))
		  : cJSON_AddNumberToObject(args, key, num)))
		goto oom;
	emit(o, ev);
	return;
oom:
	cJSON_Delete(ev);
	emit(o, NULL);
}

/* Whether a thread before thread t with samples is of t's process. */
static int process_named(const struct stacks *st, size_t t)
{
	size_t i;

	for (i = 0; i < t; i++)
		if (st->threads[i].samples &&
		    st->threads[i].process == st->threads[t].process)
			return 1;
	return 0;
}

static void write_metadata(struct chrome_out *o)
{
	const struct stacks *st = o->st;
	char label[256];
	size_t t;

	for (t = 0; t < st->nr_threads; t++) {
		const struct stack_thread *th = &st->threads[t];
		double pid = thread_pid(o, th);

		if (!th->samples)
			continue;
		/* Process labels are interned: one pointer per process. */
		if (!process_named(st, t))
			emit_meta(o, "process_name", pid, 0, "name",
				  th->process	   ? th->process
				  : o->meta->title ? o->meta->title
						   : "spyc",
				  0);
		stacks_thread_label(th, label, sizeof(label));
		emit_meta(o, "thread_name", pid, thread_tid(th), "name", label,
			  0);
		/* Rows in the order threads were first seen, main first. */
		emit_meta(o, "thread_sort_index", pid, thread_tid(th),
			  "sort_index", NULL, (double)t);
	}
}

/* The stretch of time a frame was open, from o->ts_us to end_us. */
static void emit_frame(struct chrome_out *o, double pid, double tid,
		       const struct open_frame *open, double end_us)
{
	const struct stack_frame *f = &o->st->frames[open->frame];
	cJSON *ev = event(o, "X", pid, tid, open->ts_us), *args;

	if (!ev || !cJSON_AddNumberToObject(ev, "dur", end_us - open->ts_us) ||
	    !cJSON_AddStringToObject(ev, "name",
				     output_utf8(f->name, &o->tmp)) ||
	    !cJSON_AddStringToObject(ev, "cat", CATEGORY))
		goto oom;
	/* The line where the function was when it was first seen. */
	args = cJSON_AddObjectToObject(ev, "args");
	if (!args ||
	    !cJSON_AddStringToObject(args, "file",
				     output_utf8(f->file, &o->tmp)) ||
	    !cJSON_AddNumberToObject(args, "line", f->line))
		goto oom;
	emit(o, ev);
	return;
oom:
	cJSON_Delete(ev);
	emit(o, NULL);
}

/*
 * Turn a thread's stack from old to new (stacks entry + 1; 0: none) at
 * ts_us: end the frames past the part they share, then open the new
 * ones.  Frames are compared by function, not line,
 * so that a function stays one slice while its line changes.
 */
static void switch_stack(struct chrome_out *o, uint32_t thread, uint32_t old,
			 uint32_t new, double ts_us)
{
	const struct stack_entry *a = old ? &o->st->entries[old - 1] : NULL;
	const struct stack_entry *b = new ? &o->st->entries[new - 1] : NULL;
	uint32_t da = a ? a->depth : 0, db = b ? b->depth : 0, k = 0, j;
	double tid = thread_tid(&o->st->threads[thread]);
	double pid = thread_pid(o, &o->st->threads[thread]);
	struct open_stack *open = &o->open[thread];

	while (k < da && k < db &&
	       o->frame_fn[a->frames[k]] == o->frame_fn[b->frames[k]])
		k++;
	/*
	 * All end now: outermost first, for readers that order slices of
	 * the same start and length as the file does, parents first.
	 */
	for (j = k; j < da; j++)
		emit_frame(o, pid, tid, &open->frames[j], ts_us);
	ALLOC_GROW(open->frames, db, open->alloc);
	for (j = k; j < db; j++) {
		open->frames[j].ts_us = ts_us;
		open->frames[j].frame = b->frames[j];
	}
}

/*
 * The CPU rows.  A stack sampled at a tick lasts until the thread's
 * next tick with another stack, or until a tick without the thread
 * (idle then, or gone); the last tick's stacks last one interval.
 * Ticks dropped (a torn read) are not in the timeline: stacks go on
 * through them.
 */
static int write_cpu_threads(struct chrome_out *o)
{
	const struct timeline *tl = o->meta->timeline;
	const struct stacks *st = o->st;
	size_t nr_threads = st->nr_threads ? st->nr_threads : 1;
	uint32_t *cur = xcalloc(nr_threads, sizeof(*cur));
	size_t *seen = xcalloc(nr_threads, sizeof(*seen));
	uint32_t *active = xmalloc(nr_threads * sizeof(*active));
	double rate = o->meta->rate_hz;
	double interval_us = rate > 0 && isfinite(rate) ? round(1e6 / rate) : 0;
	double ts = 0;
	size_t i, j, n, nr_active = 0, kept;

	o->open = xcalloc(nr_threads, sizeof(*o->open));

	for (i = 0; i < tl->nr_ticks && !o->err; i++) {
		const uint32_t *entries = timeline_tick_entries(tl, i, &n);

		ts = (double)(((int64_t)(tl->ticks[i].t_ns - tl->t0_ns) + 500) /
			      1000);
		for (j = 0; j < n; j++) {
			uint32_t th = st->entries[entries[j]].thread;

			seen[th] = i + 1;
			if (!cur[th])
				active[nr_active++] = th;
			if (cur[th] != entries[j] + 1)
				switch_stack(o, th, cur[th], entries[j] + 1,
					     ts);
			cur[th] = entries[j] + 1;
		}
		for (j = kept = 0; j < nr_active; j++) {
			uint32_t th = active[j];

			if (seen[th] == i + 1) {
				active[kept++] = th;
				continue;
			}
			switch_stack(o, th, cur[th], 0, ts);
			cur[th] = 0;
		}
		nr_active = kept;
	}
	for (j = 0; j < nr_active; j++)
		switch_stack(o, active[j], cur[active[j]], 0, ts + interval_us);
	for (j = 0; j < st->nr_threads; j++)
		free(o->open[j].frames);
	free(o->open);
	free(active);
	free(seen);
	free(cur);
	return o->err;
}

/* Microseconds since sampling started of a CUPTI time, to the ns. */
static double api_us(const struct chrome_out *o, uint64_t cupti_ns)
{
	const struct gpuprof *gp = o->meta->gpu;

	return (double)(int64_t)(gpuprof_to_monotonic(gp, cupti_ns) -
				 o->meta->timeline->t0_ns) /
	       1000.0;
}

/* The process and row of an API call's events. */
static double api_pid(const struct chrome_out *o, const struct gpu_api_call *a)
{
	return a->pid ? (double)a->pid : o->pid;
}

static int cmp_api_row(const void *a, const void *b, void *ctx)
{
	const struct gpu_api_call *apis = ctx;
	const struct gpu_api_call *x = &apis[*(const uint32_t *)a];
	const struct gpu_api_call *y = &apis[*(const uint32_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * "PREFIX: " and the label of the CPU row of thread tid of process pid:
 * the name of a row beside it (its CUDA calls, its NVTX ranges).
 */
static void side_row_label(const struct chrome_out *o, const char *prefix,
			   uint32_t tid, double pid, char *label, size_t size)
{
	char cpu[256];
	size_t t;

	for (t = 0; t < o->st->nr_threads; t++) {
		const struct stack_thread *th = &o->st->threads[t];

		if (th->tid == (long)tid && th->samples &&
		    thread_pid(o, th) == pid) {
			stacks_thread_label(th, cpu, sizeof(cpu));
			snprintf(label, size, "%s: %s", prefix, cpu);
			return;
		}
	}
	snprintf(label, size, "%s: tid %u", prefix, tid);
}

/*
 * --gpu: each thread's CUDA runtime and driver calls on a row of their
 * own beside its CPU row (calls nest in no Python frame: the samples'
 * slices are too coarse to hold them), times to the nanosecond.
 */
static int write_api_rows(struct chrome_out *o)
{
	const struct gpuprof *gp = o->meta->gpu;
	uint32_t *order;
	size_t i;
	char label[300];

	if (!gp->nr_apis)
		return 0;
	order = xmalloc(gp->nr_apis * sizeof(*order));
	for (i = 0; i < gp->nr_apis; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, gp->nr_apis, sizeof(*order), cmp_api_row, gp->apis);
	for (i = 0; i < gp->nr_apis && !o->err; i++) {
		const struct gpu_api_call *a = &gp->apis[order[i]];
		const struct gpu_api_call *prev =
		    i ? &gp->apis[order[i - 1]] : NULL;
		double pid = api_pid(o, a), tid = API_TID_BASE + a->tid;
		cJSON *ev, *args;

		if (!prev || prev->pid != a->pid || prev->tid != a->tid) {
			side_row_label(o, "CUDA API", a->tid, pid, label,
				       sizeof(label));
			emit_meta(o, "thread_name", pid, tid, "name", label, 0);
			emit_meta(
			    o, "thread_sort_index", pid, tid, "sort_index",
			    NULL,
			    (double)(o->st->nr_threads + o->extra_rows++));
		}
		strbuf_reset(&o->tmp);
		gpuprof_api_name(gp, a, &o->tmp);
		ev = event(o, "X", pid, tid, api_us(o, a->start));
		args = ev ? cJSON_AddObjectToObject(ev, "args") : NULL;
		if (ev &&
		    (!cJSON_AddStringToObject(ev, "name", o->tmp.buf) ||
		     !cJSON_AddStringToObject(ev, "cat", GPU_CATEGORY) ||
		     !cJSON_AddNumberToObject(
			 ev, "dur", (double)(a->end - a->start) / 1000.0) ||
		     !args ||
		     !cJSON_AddNumberToObject(args, "correlation",
					      (double)a->correlation))) {
			cJSON_Delete(ev);
			ev = NULL;
		}
		emit(o, ev);
	}
	free(order);
	return o->err;
}

static int cmp_range_row(const void *a, const void *b, void *ctx)
{
	const struct gpunvtx_range *ranges = ctx;
	const struct gpunvtx_range *x = &ranges[*(const uint32_t *)a];
	const struct gpunvtx_range *y = &ranges[*(const uint32_t *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* An outer range before the inner one that starts with it. */
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * --gpu: each thread's NVTX ranges on a row of their own beside its CPU
 * row, nested as they were pushed, times to the nanosecond (they are on
 * spyc's clock already).
 */
static int write_nvtx_rows(struct chrome_out *o)
{
	const struct gpunvtx *nv = &o->meta->gpu->nvtx;
	uint32_t *order;
	size_t i;
	char label[300];

	if (!nv->nr_ranges)
		return 0;
	order = xmalloc(nv->nr_ranges * sizeof(*order));
	for (i = 0; i < nv->nr_ranges; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, nv->nr_ranges, sizeof(*order), cmp_range_row,
		nv->ranges);
	for (i = 0; i < nv->nr_ranges && !o->err; i++) {
		const struct gpunvtx_range *r = &nv->ranges[order[i]];
		double tid = NVTX_TID_BASE + r->tid;
		const char *name = gpunvtx_name(nv, r->node);
		cJSON *ev;

		if (!i || nv->ranges[order[i - 1]].tid != r->tid) {
			side_row_label(o, "NVTX", r->tid, o->pid, label,
				       sizeof(label));
			emit_meta(o, "thread_name", o->pid, tid, "name", label,
				  0);
			emit_meta(
			    o, "thread_sort_index", o->pid, tid, "sort_index",
			    NULL,
			    (double)(o->st->nr_threads + o->extra_rows++));
		}
		if (gpunvtx_frame(name))
			name += strlen(GPU_NVTX_PREFIX);
		ev = event(
		    o, "X", o->pid, tid,
		    (double)(int64_t)(r->start - o->meta->timeline->t0_ns) /
			1000.0);
		if (ev &&
		    (!cJSON_AddStringToObject(ev, "name", name) ||
		     !cJSON_AddStringToObject(ev, "cat", NVTX_CATEGORY) ||
		     !cJSON_AddNumberToObject(
			 ev, "dur", (double)(r->end - r->start) / 1000.0))) {
			cJSON_Delete(ev);
			ev = NULL;
		}
		emit(o, ev);
	}
	free(order);
	return o->err;
}

/*
 * A flow event of the arrow from a launch to activity `id`: ph "s" on
 * the launching call, "f" (bound to the enclosing slice, the activity)
 * on the activity.
 */
static void emit_flow(struct chrome_out *o, const char *ph, double pid,
		      double tid, double ts, size_t id)
{
	cJSON *ev = event(o, ph, pid, tid, ts);

	if (ev && (!cJSON_AddStringToObject(ev, "name", FLOW_NAME) ||
		   !cJSON_AddStringToObject(ev, "cat", GPU_CATEGORY) ||
		   !cJSON_AddNumberToObject(ev, "id", (double)id) ||
		   (ph[0] == 'f' && !cJSON_AddStringToObject(ev, "bp", "e")))) {
		cJSON_Delete(ev);
		ev = NULL;
	}
	emit(o, ev);
}

/*
 * --gpu: each device's streams as rows of their own, one X event per
 * activity, its time put on spyc's clock and made relative to the
 * start of sampling as the CPU rows' are.
 */
static int write_gpu_rows(struct chrome_out *o)
{
	const struct gpuprof *gp = o->meta->gpu;
	const struct timeline *tl = o->meta->timeline;
	uint32_t *order = gpuprof_timeline(gp);
	uint32_t device = 0, stream = 0, last_device = UINT32_MAX;
	uint32_t last_stream = UINT32_MAX;
	char label[64];
	size_t i;

	for (i = 0; order && i < gp->nr_acts && !o->err; i++) {
		const struct gpu_act *act = &gp->acts[order[i]];
		const struct gpu_interval *iv = &act->iv;
		const struct gpu_api_call *launch;
		uint64_t start, end;
		double pid, ts, dur;
		cJSON *ev, *args;

		device = iv->device;
		stream = iv->stream;
		pid = GPU_PID_BASE + (double)device;
		if (device != last_device) {
			snprintf(label, sizeof(label), "GPU %u", device);
			emit_meta(o, "process_name", pid, 0, "name", label, 0);
			last_stream = UINT32_MAX;
		}
		if (stream != last_stream) {
			snprintf(label, sizeof(label), "stream %u", stream);
			emit_meta(o, "thread_name", pid, stream, "name", label,
				  0);
		}
		last_device = device;
		last_stream = stream;
		gpuprof_activity_times(act, &start, &end);
		start = gpuprof_to_monotonic(gp, start);
		end = gpuprof_to_monotonic(gp, end);
		ts = (double)(((int64_t)(start - tl->t0_ns) + 500) / 1000);
		dur = end > start ? (double)((end - start + 500) / 1000) : 0;
		strbuf_reset(&o->tmp);
		gpuprof_act_name(gp, act, &o->tmp);
		ev = event(o, "X", pid, (double)stream, ts);
		args = ev ? cJSON_AddObjectToObject(ev, "args") : NULL;
		if (ev && (!cJSON_AddStringToObject(ev, "name", o->tmp.buf) ||
			   !cJSON_AddStringToObject(ev, "cat", GPU_CATEGORY) ||
			   !cJSON_AddNumberToObject(ev, "dur", dur) || !args ||
			   !cJSON_AddNumberToObject(args, "context",
						    (double)iv->context) ||
			   !cJSON_AddNumberToObject(args, "correlation",
						    (double)iv->correlation))) {
			cJSON_Delete(ev);
			ev = NULL;
		}
		emit(o, ev);
		launch = gpuprof_launch(gp, act);
		if (launch) {
			emit_flow(o, "s", api_pid(o, launch),
				  API_TID_BASE + launch->tid,
				  api_us(o, launch->start), order[i]);
			emit_flow(o, "f", pid, (double)stream, ts, order[i]);
		}
	}
	free(order);
	return o->err;
}

/*
 * --gpu: how CUPTI's clock was put on spyc's (CLOCK_MONOTONIC = CUPTI +
 * monotonic_minus_cupti_ns), as the speedscope output says it.
 */
static int add_gpu_clock(cJSON *d, const struct gpuprof *gp)
{
	cJSON *c = cJSON_AddObjectToObject(d, "gpu_clock");

	return c && cJSON_AddBoolToObject(c, "aligned", gp->clock.known) &&
	       cJSON_AddNumberToObject(c, "monotonic_minus_cupti_ns",
				       (double)gp->clock.offset_ns) &&
	       cJSON_AddNumberToObject(c, "pairs", (double)gp->clock.pairs) &&
	       cJSON_AddNumberToObject(c, "drift_ns",
				       (double)gp->clock.drift_ns) &&
	       cJSON_AddNumberToObject(c, "zero_monotonic_ns",
				       (double)gp->t0_ns);
}

/* spyc's own facts, in the member the format leaves to the producer. */
static cJSON *other_data(struct chrome_out *o)
{
	const struct profile_meta *meta = o->meta;
	cJSON *d = cJSON_CreateObject();

	if (!d || !cJSON_AddStringToObject(d, "exporter", "spyc") ||
	    !cJSON_AddNumberToObject(d, "rate_hz", meta->rate_hz) ||
	    !cJSON_AddNumberToObject(d, "duration_s", meta->duration_s) ||
	    !cJSON_AddNumberToObject(d, "samples",
				     (double)o->st->total_samples) ||
	    !cJSON_AddBoolToObject(d, "timeline_complete",
				   !meta->timeline->full) ||
	    (meta->python_version &&
	     !cJSON_AddStringToObject(d, "python_version",
				      meta->python_version)) ||
	    (meta->gpu && !add_gpu_clock(d, meta->gpu)) ||
	    output_add_source_roots(d, meta, &o->tmp)) {
		cJSON_Delete(d);
		return NULL;
	}
	return d;
}

int out_chrome_write(FILE *fp, const struct stacks *st,
		     const struct profile_meta *meta)
{
	struct chrome_out o;
	size_t nr_functions;
	uint32_t *fn_first;
	cJSON *other;
	char *text = NULL;
	int ret;

	if (!meta || !meta->timeline)
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	o.fp = fp;
	o.st = st;
	o.meta = meta;
	o.pid = (double)meta->pid;
	strbuf_init(&o.tmp, 0);
	o.frame_fn = output_frame_functions(st, &nr_functions, &fn_first);
	free(fn_first);

	if (fputs("{\"traceEvents\":[\n", fp) == EOF) {
		ret = errno ? -errno : -EIO;
		goto out;
	}
	write_metadata(&o);
	ret = write_cpu_threads(&o);
	if (!ret && meta->gpu)
		ret = write_api_rows(&o);
	if (!ret && meta->gpu)
		ret = write_nvtx_rows(&o);
	if (!ret && meta->gpu)
		ret = write_gpu_rows(&o);
	if (ret)
		goto out;
	other = other_data(&o);
	text = other ? cJSON_PrintUnformatted(other) : NULL;
	cJSON_Delete(other);
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	if (fprintf(fp,
		    "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":%s}\n",
		    text) < 0)
		ret = errno ? -errno : -EIO;
out:
	cJSON_free(text);
	free(o.frame_fn);
	strbuf_release(&o.tmp);
	return ret;
}
