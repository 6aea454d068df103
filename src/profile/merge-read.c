/* SPDX-License-Identifier: MIT */
/*
 * Reading back spyc's speedscope files for spyc merge: parse, check that
 * every index is in range, pick out spyc_process.  Kept apart from the
 * merging so that a general profile reader can take its place.
 */
#include "profile/merge-read.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile-read.h"
#include "util.h"

/* Larger than any profile spyc writes; refuse rather than exhaust memory. */
#define MAX_PROFILE_BYTES (4ULL << 30)

/* Set why to "'path': fmt..." and return -1. */
static int bad(char *why, size_t size, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(char *why, size_t size, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(why, size, "'%s': ", path);

	if (n < 0 || (size_t)n >= size)
		return -1;
	va_start(ap, fmt);
	vsnprintf(why + n, size - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* The whole file, NUL-terminated, or NULL with errno set. */
static char *slurp(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;
	FILE *fp = fopen(path, "rb");

	if (!fp)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0) {
		strbuf_add(&sb, buf, n);
		if (sb.len > MAX_PROFILE_BYTES) {
			fclose(fp);
			strbuf_release(&sb);
			errno = EFBIG;
			return NULL;
		}
	}
	if (ferror(fp)) {
		int saved = errno ? errno : EIO;

		fclose(fp);
		strbuf_release(&sb);
		errno = saved;
		return NULL;
	}
	fclose(fp);
	return strbuf_detach(&sb);
}

/* Whether item is a whole number in [0, limit). */
static int index_ok(const cJSON *item, size_t limit)
{
	double v;

	if (!cJSON_IsNumber(item))
		return 0;
	v = item->valuedouble;
	return v >= 0 && v < (double)limit && v == floor(v);
}

static int check_sampled(const struct merge_input *in, const cJSON *p, size_t k,
			 char *why, size_t size)
{
	const cJSON *samples = cJSON_GetObjectItemCaseSensitive(p, "samples");
	const cJSON *weights = cJSON_GetObjectItemCaseSensitive(p, "weights");
	const cJSON *s, *f, *w;

	if (!cJSON_IsArray(samples) || !cJSON_IsArray(weights) ||
	    cJSON_GetArraySize(samples) != cJSON_GetArraySize(weights))
		return bad(why, size, in->path,
			   "profile %zu: samples and weights do not pair up",
			   k);
	cJSON_ArrayForEach(s, samples)
	{
		if (!cJSON_IsArray(s))
			return bad(why, size, in->path,
				   "profile %zu: a sample is not an array", k);
		cJSON_ArrayForEach(f, s)
		{
			if (!index_ok(f, in->nr_frames))
				return bad(why, size, in->path,
					   "profile %zu: a sample names no "
					   "frame",
					   k);
		}
	}
	cJSON_ArrayForEach(w, weights)
	{
		if (!cJSON_IsNumber(w) || !isfinite(w->valuedouble) ||
		    w->valuedouble < 0)
			return bad(why, size, in->path,
				   "profile %zu: a bad weight", k);
	}
	return 0;
}

static int check_evented(const struct merge_input *in, const cJSON *p, size_t k,
			 char *why, size_t size)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(p, "events");
	const cJSON *e;

	if (!cJSON_IsArray(events))
		return bad(why, size, in->path, "profile %zu: no events", k);
	cJSON_ArrayForEach(e, events)
	{
		if (!index_ok(cJSON_GetObjectItemCaseSensitive(e, "frame"),
			      in->nr_frames))
			return bad(why, size, in->path,
				   "profile %zu: an event names no frame", k);
	}
	return 0;
}

/* spyc_process, as out/speedscope.c writes it; absent is fine. */
static int read_process(struct merge_input *in, char *why, size_t size)
{
	const cJSON *proc =
	    cJSON_GetObjectItemCaseSensitive(in->root, "spyc_process");
	const cJSON *item;

	if (!proc)
		return 0;
	if (!cJSON_IsObject(proc))
		return bad(why, size, in->path,
			   "spyc_process is not an object");
	in->has_process = 1;
	item = cJSON_GetObjectItemCaseSensitive(proc, "pid");
	if (cJSON_IsNumber(item) && item->valuedouble > 0)
		in->pid = (long)item->valuedouble;
	item = cJSON_GetObjectItemCaseSensitive(proc, "rank");
	if (index_ok(item, (size_t)1 << 31)) {
		in->has_rank = 1;
		in->rank = (long)item->valuedouble;
	}
	in->host = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(proc, "host"));
	in->command = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(proc, "command"));
	item = cJSON_GetObjectItemCaseSensitive(proc, "rate_hz");
	if (cJSON_IsNumber(item) && isfinite(item->valuedouble) &&
	    item->valuedouble > 0)
		in->rate_hz = item->valuedouble;
	item = cJSON_GetObjectItemCaseSensitive(proc, "cpu_profiles");
	if (!index_ok(item, in->nr_profiles + 1))
		return bad(why, size, in->path,
			   "spyc_process.cpu_profiles is not a profile count");
	in->cpu_profiles = (size_t)item->valuedouble;
	return 0;
}

/* Without spyc_process: the sampled profiles before the GPU ones. */
static void count_cpu_profiles(struct merge_input *in)
{
	const cJSON *p;
	size_t n = 0;

	cJSON_ArrayForEach(p, in->profiles)
	{
		const char *type = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(p, "type"));
		const char *name = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(p, "name"));

		if (!type || strcmp(type, "sampled") ||
		    (name && !strncmp(name, PROFILE_GPU_STACKS_NAME,
				      strlen(PROFILE_GPU_STACKS_NAME))))
			break;
		n++;
	}
	in->cpu_profiles = n;
}

static int check(struct merge_input *in, char *why, size_t size)
{
	const cJSON *shared, *f, *p;
	const char *exporter;
	size_t k = 0;

	if (!cJSON_IsObject(in->root))
		return bad(why, size, in->path, "not a speedscope profile");
	exporter = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(in->root, "exporter"));
	if (!exporter || strcmp(exporter, "spyc"))
		return bad(why, size, in->path,
			   "not a profile written by spyc record (exporter "
			   "'%s')",
			   exporter ? exporter : "none");
	if (cJSON_GetObjectItemCaseSensitive(in->root, "spyc_merge"))
		return bad(why, size, in->path,
			   "already a merged profile; merge the files it was "
			   "made from");
	shared = cJSON_GetObjectItemCaseSensitive(in->root, "shared");
	in->frames = cJSON_GetObjectItemCaseSensitive(shared, "frames");
	in->profiles = cJSON_GetObjectItemCaseSensitive(in->root, "profiles");
	if (!cJSON_IsArray(in->frames) || !cJSON_IsArray(in->profiles))
		return bad(why, size, in->path,
			   "not a speedscope profile (no shared.frames or "
			   "profiles)");
	in->nr_frames = (size_t)cJSON_GetArraySize(in->frames);
	in->nr_profiles = (size_t)cJSON_GetArraySize(in->profiles);
	in->frame_names = xcalloc(in->nr_frames + 1, sizeof(char *));
	in->frame_files = xcalloc(in->nr_frames + 1, sizeof(char *));
	in->frame_lines = xcalloc(in->nr_frames + 1, sizeof(int));
	cJSON_ArrayForEach(f, in->frames)
	{
		const cJSON *line = cJSON_GetObjectItemCaseSensitive(f, "line");
		const char *file = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(f, "file"));

		in->frame_names[k] = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(f, "name"));
		if (!in->frame_names[k])
			return bad(why, size, in->path, "frame %zu has no name",
				   k);
		in->frame_files[k] = file ? file : "";
		in->frame_lines[k] = cJSON_IsNumber(line) ? line->valueint : 0;
		k++;
	}
	k = 0;
	cJSON_ArrayForEach(p, in->profiles)
	{
		const char *type = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(p, "type"));

		if (type && !strcmp(type, "sampled")) {
			if (check_sampled(in, p, k, why, size))
				return -1;
		} else if (type && !strcmp(type, "evented")) {
			if (check_evented(in, p, k, why, size))
				return -1;
		} else {
			return bad(why, size, in->path,
				   "profile %zu: unknown type '%s'", k,
				   type ? type : "none");
		}
		k++;
	}
	if (read_process(in, why, size))
		return -1;
	if (!in->has_process)
		count_cpu_profiles(in);
	k = 0;
	cJSON_ArrayForEach(p, in->profiles)
	{
		const char *type = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(p, "type"));
		const char *unit = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(p, "unit"));

		if (k++ == in->cpu_profiles)
			break;
		if (!type || strcmp(type, "sampled"))
			return bad(why, size, in->path,
				   "profile %zu: a CPU thread's profile is "
				   "not sampled",
				   k - 1);
		if (!unit || (in->unit && strcmp(unit, in->unit)))
			return bad(why, size, in->path,
				   "profile %zu: no unit, or not the other "
				   "profiles' unit",
				   k - 1);
		in->unit = unit;
	}
	return 0;
}

int merge_input_read(struct merge_input *in, const char *path, char *why,
		     size_t size)
{
	char *text;

	memset(in, 0, sizeof(*in));
	in->path = path;
	text = slurp(path);
	if (!text)
		return bad(why, size, path, "%s", strerror(errno));
	in->root = cJSON_Parse(text);
	free(text);
	if (!in->root)
		return bad(why, size, path, "not JSON");
	if (check(in, why, size)) {
		merge_input_release(in);
		return -1;
	}
	return 0;
}

void merge_input_release(struct merge_input *in)
{
	free(in->frame_names);
	free(in->frame_files);
	free(in->frame_lines);
	cJSON_Delete(in->root);
	memset(in, 0, sizeof(*in));
}
