/* SPDX-License-Identifier: MIT */
/* Speedscope writer: one sampled profile per thread, in speedscope's JSON. */
#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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
	stacks_thread_label(&st->threads[thread], label, sizeof(label));
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

int out_speedscope_write(FILE *fp, const struct stacks *st,
			 const struct profile_meta *meta)
{
	struct strbuf tmp = STRBUF_INIT;
	const char *title = meta && meta->title ? meta->title : "spyc";
	/* Without a usable rate, weights are sample counts (unit "none"). */
	double rate_hz = meta && isfinite(meta->rate_hz) ? meta->rate_hz : 0;
	cJSON *root, *shared, *profiles;
	uint32_t *order = NULL;
	size_t *start = NULL;
	char *text = NULL;
	size_t t, len;
	int ret = -1;

	root = cJSON_CreateObject();
	if (!root)
		goto out_oom;
	if (!cJSON_AddStringToObject(root, "$schema", SPEEDSCOPE_SCHEMA))
		goto out_oom;
	shared = cJSON_AddObjectToObject(root, "shared");
	if (!shared || add_frames(shared, st, &tmp))
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
	}
	if (add_string(root, "name", title, &tmp) ||
	    !cJSON_AddNumberToObject(root, "activeProfileIndex", 0) ||
	    !cJSON_AddStringToObject(root, "exporter", "spyc"))
		goto out_oom;

	text = cJSON_PrintUnformatted(root);
	if (!text)
		goto out_oom;
	len = strlen(text);
	if (fwrite(text, 1, len, fp) != len || putc('\n', fp) == EOF) {
		ret = error("cannot write speedscope profile: %s",
			    strerror(errno));
		goto out;
	}
	ret = 0;
	goto out;
out_oom:
	ret = error("out of memory building the speedscope profile");
out:
	cJSON_free(text);
	free(start);
	free(order);
	cJSON_Delete(root);
	strbuf_release(&tmp);
	return ret;
}
