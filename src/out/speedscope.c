/* SPDX-License-Identifier: MIT */
/* Speedscope writer: one sampled profile per thread, in speedscope's JSON. */
#include "out/output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu/gpuprof.h"
#include "profile/profile-read.h"
#include "profile/source.h"
#include "util.h"

/* From speedscope's file-format-schema.json, FileFormat.File.$schema. */
#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* Add a string member, made valid UTF-8; 0 or -1 if cJSON ran out. */
static int add_string(cJSON *obj, const char *key, const char *s,
		      struct strbuf *tmp)
{
	return cJSON_AddStringToObject(obj, key, output_utf8(s, tmp)) ? 0 : -1;
}

static int add_frames(cJSON *shared, const struct stacks *st,
		      struct strbuf *tmp)
{
	cJSON *frames, *frame;
	size_t i;

	frames = cJSON_AddArrayToObject(shared, "frames");
	if (!frames)
		return -1;
	for (i = 0; i < st->nr_frames; i++) {
		const struct stack_frame *f = &st->frames[i];

		frame = cJSON_CreateObject();
		if (!frame)
			return -1;
		if (!cJSON_AddItemToArray(frames, frame)) {
			cJSON_Delete(frame);
			return -1;
		}
		if (add_string(frame, "name", f->name, tmp))
			return -1;
		if (*f->file && add_string(frame, "file", f->file, tmp))
			return -1;
		if (f->line && !cJSON_AddNumberToObject(frame, "line", f->line))
			return -1;
	}
	return 0;
}

/*
 * Each sample is a raw "[id,...]" text rather than an array of cJSON
 * numbers: a node per frame id costs about 80 bytes, which for a long
 * profile of deep stacks would take hundreds of megabytes.
 */
static cJSON *sample_raw(const struct stack_entry *e, struct strbuf *tmp)
{
	uint32_t j;

	strbuf_reset(tmp);
	strbuf_addch(tmp, '[');
	for (j = 0; j < e->depth; j++)
		strbuf_addf(tmp, "%s%u", j ? "," : "", (unsigned)e->frames[j]);
	strbuf_addch(tmp, ']');
	return cJSON_CreateRaw(tmp->buf);
}

static int add_profile(cJSON *profiles, const struct stacks *st,
		       uint32_t thread, const uint32_t *entries, size_t nr,
		       double rate_hz, struct strbuf *tmp)
{
	cJSON *profile, *samples, *weights, *item;
	char label[256];
	double weight, total = 0;
	size_t i;

	profile = cJSON_CreateObject();
	if (!profile)
		return -1;
	if (!cJSON_AddItemToArray(profiles, profile)) {
		cJSON_Delete(profile);
		return -1;
	}
	stacks_thread_full_label(&st->threads[thread], label, sizeof(label));
	if (!cJSON_AddStringToObject(profile, "type", "sampled") ||
	    add_string(profile, "name", label, tmp) ||
	    !cJSON_AddStringToObject(profile, "unit",
				     rate_hz > 0 ? "seconds" : "none") ||
	    !cJSON_AddNumberToObject(profile, "startValue", 0))
		return -1;
	samples = cJSON_AddArrayToObject(profile, "samples");
	weights = cJSON_AddArrayToObject(profile, "weights");
	if (!samples || !weights)
		return -1;
	for (i = 0; i < nr; i++) {
		const struct stack_entry *e = &st->entries[entries[i]];

		item = sample_raw(e, tmp);
		if (!item)
			return -1;
		if (!cJSON_AddItemToArray(samples, item)) {
			cJSON_Delete(item);
			return -1;
		}
		weight =
		    rate_hz > 0 ? (double)e->count / rate_hz : (double)e->count;
		total += weight;
		item = cJSON_CreateNumber(weight);
		if (!item)
			return -1;
		if (!cJSON_AddItemToArray(weights, item)) {
			cJSON_Delete(item);
			return -1;
		}
	}
	/* The sum of the weights as written, so the two always agree. */
	if (!cJSON_AddNumberToObject(profile, "endValue", total))
		return -1;
	return 0;
}

/*
 * Group the entries with samples by thread (a counting sort, so each
 * thread's samples keep their first-seen order): on return the entries
 * of thread t are order[start[t] .. start[t + 1] - 1].
 */
static void group_by_thread(const struct stacks *st, uint32_t *order,
			    size_t *start)
{
	size_t i, t, *next;

	memset(start, 0, (st->nr_threads + 1) * sizeof(*start));
	for (i = 0; i < st->nr_entries; i++)
		if (st->entries[i].count)
			start[st->entries[i].thread + 1]++;
	for (t = 0; t < st->nr_threads; t++)
		start[t + 1] += start[t];
	next = xmalloc((st->nr_threads + 1) * sizeof(*next));
	memcpy(next, start, (st->nr_threads + 1) * sizeof(*next));
	for (i = 0; i < st->nr_entries; i++)
		if (st->entries[i].count)
			order[next[st->entries[i].thread]++] = (uint32_t)i;
	free(next);
}

/* Add a number to an array; 0 or -1 if cJSON ran out. */
static int push_number(cJSON *array, double v)
{
	cJSON *item = cJSON_CreateNumber(v);

	if (!item)
		return -1;
	if (!cJSON_AddItemToArray(array, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

/*
 * GPU stacks (st: gp->stacks or gp->idle, frames of gp->stacks), all
 * threads together, weighing seconds (their counts are nanoseconds).
 */
static int add_gpu_stacks(cJSON *profiles, const struct stacks *st,
			  const char *name, struct strbuf *tmp)
{
	cJSON *profile, *samples, *weights, *item;
	double total = 0;
	size_t i;

	profile = cJSON_CreateObject();
	if (!profile)
		return -1;
	if (!cJSON_AddItemToArray(profiles, profile)) {
		cJSON_Delete(profile);
		return -1;
	}
	if (!cJSON_AddStringToObject(profile, "type", "sampled") ||
	    !cJSON_AddStringToObject(profile, "name", name) ||
	    !cJSON_AddStringToObject(profile, "unit", "seconds") ||
	    !cJSON_AddNumberToObject(profile, "startValue", 0))
		return -1;
	samples = cJSON_AddArrayToObject(profile, "samples");
	weights = cJSON_AddArrayToObject(profile, "weights");
	if (!samples || !weights)
		return -1;
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		if (!e->count)
			continue;
		item = sample_raw(e, tmp);
		if (!item)
			return -1;
		if (!cJSON_AddItemToArray(samples, item)) {
			cJSON_Delete(item);
			return -1;
		}
		total += (double)e->count / 1e9;
		if (push_number(weights, (double)e->count / 1e9))
			return -1;
	}
	return cJSON_AddNumberToObject(profile, "endValue", total) ? 0 : -1;
}

/* One open or close event of an evented profile. */
static int push_event(cJSON *events, const char *type, uint32_t frame,
		      double at)
{
	cJSON *ev = cJSON_CreateObject();

	if (!ev)
		return -1;
	if (!cJSON_AddItemToArray(events, ev)) {
		cJSON_Delete(ev);
		return -1;
	}
	return cJSON_AddStringToObject(ev, "type", type) &&
		       cJSON_AddNumberToObject(ev, "frame", frame) &&
		       cJSON_AddNumberToObject(ev, "at", at)
		   ? 0
		   : -1;
}

/*
 * One evented profile per device and stream: each kernel, copy and
 * memset from its start to its end, in seconds from the start of
 * sampling on spyc's clock.  Activities of one stream run one after the
 * other; a start before the previous end (clock jitter) is moved to it,
 * so that events nest as speedscope requires.
 */
static int add_gpu_streams(cJSON *profiles, const struct gpuprof *gp)
{
	uint32_t *order = gpuprof_timeline(gp);
	size_t i = 0;
	int ret = -1;

	while (i < gp->nr_acts) {
		const struct gpu_interval *iv = &gp->acts[order[i]].iv;
		uint32_t device = iv->device, stream = iv->stream;
		double prev_end = -1e300, first = 0;
		cJSON *profile, *events;
		char name[64];
		size_t j;

		profile = cJSON_CreateObject();
		if (!profile)
			goto out;
		if (!cJSON_AddItemToArray(profiles, profile)) {
			cJSON_Delete(profile);
			goto out;
		}
		snprintf(name, sizeof(name), "GPU %u stream %u", device,
			 stream);
		events = cJSON_CreateArray();
		if (!events)
			goto out;
		if (!cJSON_AddStringToObject(profile, "type", "evented") ||
		    !cJSON_AddStringToObject(profile, "name", name) ||
		    !cJSON_AddStringToObject(profile, "unit", "seconds")) {
			cJSON_Delete(events);
			goto out;
		}
		for (j = i; j < gp->nr_acts; j++) {
			const struct gpu_act *act = &gp->acts[order[j]];
			const struct gpu_interval *at_iv = &act->iv;
			uint64_t start, end;
			double at, until;

			if (at_iv->device != device || at_iv->stream != stream)
				break;
			gpuprof_activity_times(act, &start, &end);
			at = ((double)gpuprof_to_monotonic(gp, start) -
			      (double)gp->t0_ns) /
			     1e9;
			until = ((double)gpuprof_to_monotonic(gp, end) -
				 (double)gp->t0_ns) /
				1e9;
			if (at < prev_end)
				at = prev_end;
			if (until < at)
				until = at;
			if (j == i)
				first = at;
			if (push_event(events, "O", gp->leaf[order[j]], at) ||
			    push_event(events, "C", gp->leaf[order[j]],
				       until)) {
				cJSON_Delete(events);
				goto out;
			}
			prev_end = until;
		}
		/* Activity before sampling started reads as negative time. */
		if (!cJSON_AddNumberToObject(profile, "startValue",
					     first < 0 ? first : 0) ||
		    !cJSON_AddNumberToObject(profile, "endValue", prev_end)) {
			cJSON_Delete(events);
			goto out;
		}
		if (!cJSON_AddItemToObject(profile, "events", events)) {
			cJSON_Delete(events);
			goto out;
		}
		i = j;
	}
	ret = 0;
out:
	free(order);
	return ret;
}

/*
 * What a reader needs to line GPU and CPU times up, and how kernels
 * were given stacks: a member of spyc's own beside speedscope's.
 */
/* Which CUDA API calls CUPTI made records of (spyc_gpu.cuda_api_records). */
static const char *api_records_name(uint32_t api_records)
{
	switch (api_records) {
	case GPU_API_RECORDS_PROFILED:
		return "launches, copies, memsets, synchronizations";
	case GPU_API_RECORDS_ALL:
		return "all (this CUPTI cannot leave calls out: before CUDA "
		       "12.5)";
	default:
		return "unknown";
	}
}

static int add_gpu_meta(cJSON *root, const struct gpuprof *gp)
{
	cJSON *g = cJSON_AddObjectToObject(root, "spyc_gpu"), *clock;

	if (!g)
		return -1;
	clock = cJSON_AddObjectToObject(g, "clock");
	if (!clock ||
	    !cJSON_AddBoolToObject(clock, "aligned", gp->clock.known) ||
	    !cJSON_AddNumberToObject(clock, "monotonic_minus_cupti_ns",
				     (double)gp->clock.offset_ns) ||
	    !cJSON_AddNumberToObject(clock, "pairs", (double)gp->clock.pairs) ||
	    !cJSON_AddNumberToObject(clock, "drift_ns",
				     (double)gp->clock.drift_ns) ||
	    !cJSON_AddNumberToObject(clock, "zero_monotonic_ns",
				     (double)gp->t0_ns) ||
	    !cJSON_AddStringToObject(
		g, "attribution",
		"launch-stack, else nearest-sample: each activity is placed "
		"on the Python stack the agent copied at its launch (the "
		"CUDA call with the same correlation id), else on the CPU "
		"sample of its launching thread nearest in time to the "
		"launch, else (a launching thread with no Python) on the "
		"stack of the thread waiting in autograd's engine") ||
	    !cJSON_AddNumberToObject(g, "activities",
				     (double)gpuprof_activities(gp)) ||
	    !cJSON_AddNumberToObject(g, "activities_on_timeline",
				     (double)gp->nr_acts) ||
	    !cJSON_AddNumberToObject(g, "by_launch_stack", (double)gp->exact) ||
	    !cJSON_AddNumberToObject(g, "attributed", (double)gp->attributed) ||
	    !cJSON_AddNumberToObject(g, "no_launch_record",
				     (double)gp->no_launch) ||
	    !cJSON_AddNumberToObject(g, "no_cpu_sample",
				     (double)gp->no_sample) ||
	    !cJSON_AddNumberToObject(g, "by_waiting_thread",
				     (double)gp->by_waiting) ||
	    !cJSON_AddNumberToObject(g, "records_lost", (double)gp->lost) ||
	    !cJSON_AddNumberToObject(g, "records_without_time",
				     (double)gp->zero_time) ||
	    !cJSON_AddNumberToObject(g, "records_dropped_by_cupti",
				     (double)gp->cupti_dropped) ||
	    !cJSON_AddNumberToObject(g, "buffers_cut_short",
				     (double)gp->bad_buffers) ||
	    !cJSON_AddNumberToObject(g, "other_processes_not_profiled",
				     (double)gp->other_processes) ||
	    !cJSON_AddNumberToObject(g, "synchronizations",
				     (double)gp->syncs) ||
	    !cJSON_AddStringToObject(g, "cuda_api_records",
				     api_records_name(gp->api_records)) ||
	    !cJSON_AddNumberToObject(g, "idle_s", (double)gp->idle_ns / 1e9) ||
	    !cJSON_AddNumberToObject(g, "idle_window_s",
				     (double)gp->idle_window_ns / 1e9) ||
	    !cJSON_AddNumberToObject(g, "idle_unsampled_s",
				     (double)gp->idle_unsampled_ns / 1e9) ||
	    !cJSON_AddNumberToObject(g, "nvtx_ranges_pushed",
				     (double)gp->nvtx.pushed))
		return -1;
	return 0;
}

/*
 * Who was profiled: pid, host, command line, MPI rank; and how many of
 * the profiles, from the first, are CPU threads.  spyc merge reads it.
 */
/* The texts of the busiest sources speedscope files carry, at most. */
#define SPEEDSCOPE_SOURCES_MAX (2u << 20)

/*
 * OUTPUT_SOURCES: each source file of st's frames that record knew, as
 * the target ran it ("id": source_id_format's), with its text for the
 * busiest ones: spyc report then shows that text, or a file at its path
 * only if it is the same file, never another (a container's that is
 * gone, one replaced since).  0 or -1.
 */
static int add_sources(cJSON *root, const struct stacks *st,
		       const struct profile_meta *meta, struct strbuf *tmp)
{
	struct output_source *src;
	size_t nr, i;
	cJSON *all;
	int bad = 0;

	if (!meta || !meta->source_files)
		return 0;
	nr = output_sources(st, meta, SPEEDSCOPE_SOURCES_MAX, &src);
	all = cJSON_AddObjectToObject(root, OUTPUT_SOURCES);
	bad = !all;
	for (i = 0; !bad && i < nr; i++) {
		const struct source_id *id = src[i].id;
		char text_id[128];
		cJSON *f;

		if (!id)
			continue;
		/* A string: JSON's numbers are doubles, 53 bits. */
		source_id_format(id, text_id, sizeof(text_id));
		f = cJSON_AddObjectToObject(all, output_utf8(src[i].file, tmp));
		bad = !f || !cJSON_AddStringToObject(f, "id", text_id) ||
		      (src[i].text &&
		       !cJSON_AddStringToObject(f, "text",
						output_utf8(src[i].text, tmp)));
	}
	output_sources_free(src, nr);
	return bad ? -1 : 0;
}

static int add_process_meta(cJSON *root, const struct profile_process *meta,
			    size_t cpu_profiles, double rate_hz,
			    struct strbuf *tmp)
{
	cJSON *p = cJSON_AddObjectToObject(root, "spyc_process");

	if (!p || !cJSON_AddNumberToObject(p, "pid", (double)meta->pid) ||
	    !cJSON_AddNumberToObject(p, "cpu_profiles", (double)cpu_profiles))
		return -1;
	/* The CPU weights' rate: each sample weighs 1 / rate_hz seconds. */
	if (rate_hz > 0 && !cJSON_AddNumberToObject(p, "rate_hz", rate_hz))
		return -1;
	if (meta->command && add_string(p, "command", meta->command, tmp))
		return -1;
	if (meta->host && add_string(p, "host", meta->host, tmp))
		return -1;
	if (meta->rank) {
		if (!cJSON_AddNumberToObject(p, "rank", atof(meta->rank)) ||
		    (meta->rank_var &&
		     !cJSON_AddStringToObject(p, "rank_from", meta->rank_var)))
			return -1;
	} else if (!cJSON_AddNullToObject(p, "rank")) {
		return -1;
	}
	return 0;
}

int out_speedscope_write(FILE *fp, const struct stacks *st,
			 const struct profile_meta *meta)
{
	struct strbuf tmp = STRBUF_INIT;
	const char *title = meta && meta->title ? meta->title : "spyc";
	/* Without a usable rate, weights are sample counts (unit "none"). */
	double rate_hz = meta && isfinite(meta->rate_hz) ? meta->rate_hz : 0;
	const struct gpuprof *gpu = meta ? meta->gpu : NULL;
	cJSON *root, *shared, *profiles;
	uint32_t *order = NULL;
	size_t *start = NULL;
	char *text = NULL;
	size_t t, len, cpu_profiles = 0;
	int ret = -1;

	root = cJSON_CreateObject();
	if (!root)
		goto out_oom;
	if (!cJSON_AddStringToObject(root, "$schema", SPEEDSCOPE_SCHEMA))
		goto out_oom;
	shared = cJSON_AddObjectToObject(root, "shared");
	/* The GPU stacks' frames are the CPU ones, same ids, and more. */
	if (!shared || add_frames(shared, gpu ? &gpu->stacks : st, &tmp))
		goto out_oom;
	profiles = cJSON_AddArrayToObject(root, "profiles");
	if (!profiles)
		goto out_oom;
	order = xmalloc((st->nr_entries ? st->nr_entries : 1) * sizeof(*order));
	start = xmalloc((st->nr_threads + 1) * sizeof(*start));
	group_by_thread(st, order, start);
	for (t = 0; t < st->nr_threads; t++) {
		if (start[t] == start[t + 1])
			continue;
		if (add_profile(profiles, st, (uint32_t)t, order + start[t],
				start[t + 1] - start[t], rate_hz, &tmp))
			goto out_oom;
		cpu_profiles++;
	}
	if (gpu && (add_gpu_stacks(profiles, &gpu->stacks,
				   gpuprof_stacks_name(gpu), &tmp) ||
		    add_gpu_streams(profiles, gpu) ||
		    (gpu->idle.nr_entries &&
		     add_gpu_stacks(profiles, &gpu->idle, PROFILE_GPU_IDLE_NAME,
				    &tmp)) ||
		    (gpu->capture_view.nr_entries &&
		     add_gpu_stacks(profiles, &gpu->capture_view,
				    PROFILE_GPU_CAPTURE_NAME, &tmp)) ||
		    add_gpu_meta(root, gpu)))
		goto out_oom;
	if (add_string(root, "name", title, &tmp) ||
	    !cJSON_AddNumberToObject(root, "activeProfileIndex", 0) ||
	    !cJSON_AddStringToObject(root, "exporter", "spyc"))
		goto out_oom;
	if (meta && meta->process &&
	    add_process_meta(root, meta->process, cpu_profiles, rate_hz, &tmp))
		goto out_oom;
	if (output_add_source_roots(root, meta, &tmp) ||
	    add_sources(root, st, meta, &tmp))
		goto out_oom;

	text = cJSON_PrintUnformatted(root);
	if (!text)
		goto out_oom;
	len = strlen(text);
	if (fwrite(text, 1, len, fp) != len || putc('\n', fp) == EOF) {
		ret = errno ? -errno : -EIO;
		goto out;
	}
	ret = 0;
	goto out;
out_oom:
	ret = -ENOMEM;
out:
	cJSON_free(text);
	free(start);
	free(order);
	cJSON_Delete(root);
	strbuf_release(&tmp);
	return ret;
}
