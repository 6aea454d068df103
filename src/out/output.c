/* SPDX-License-Identifier: MIT */
/* Choosing a profile format and writing a profile file atomically. */
#include "out/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "profile/source.h"
#include "py/framename.h"
#include "util.h"

static const struct {
	const char *name;
	enum output_format format;
} formats[] = {
    {"speedscope", FORMAT_SPEEDSCOPE},
    {"folded", FORMAT_FOLDED},
    {"svg", FORMAT_SVG},
    {"pprof", FORMAT_PPROF},
    {"chrome", FORMAT_CHROME},
    {"html", FORMAT_HTML},
};

static const struct {
	const char *ext;
	enum output_format format;
} extensions[] = {
    /* Before ".json": the longest suffix that matches wins. */
    {".trace.json", FORMAT_CHROME}, {".json", FORMAT_SPEEDSCOPE},
    {".txt", FORMAT_FOLDED},	    {".folded", FORMAT_FOLDED},
    {".svg", FORMAT_SVG},	    {".pb.gz", FORMAT_PPROF},
    {".pprof", FORMAT_PPROF},	    {".html", FORMAT_HTML},
    {".htm", FORMAT_HTML},
};

enum output_format output_format_parse(const char *name)
{
	size_t i;

	if (!name)
		return FORMAT_NONE;
	for (i = 0; i < ARRAY_SIZE(formats); i++)
		if (!strcmp(name, formats[i].name))
			return formats[i].format;
	return FORMAT_NONE;
}

enum output_format output_format_from_path(const char *path)
{
	const char *base;
	size_t i, len, ext_len;

	if (!path)
		return FORMAT_NONE;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	len = strlen(base);
	for (i = 0; i < ARRAY_SIZE(extensions); i++) {
		ext_len = strlen(extensions[i].ext);
		/* "x.json" has a suffix; ".json" alone is a hidden file's. */
		if (len > ext_len &&
		    !strcasecmp(base + len - ext_len, extensions[i].ext))
			return extensions[i].format;
	}
	return FORMAT_NONE;
}

struct write_job {
	int (*fn)(FILE *fp, const struct stacks *st,
		  const struct profile_meta *meta);
	const struct stacks *st;
	const struct profile_meta *meta;
};

static int write_job_run(FILE *fp, void *data)
{
	struct write_job *job = data;

	return job->fn(fp, job->st, job->meta);
}

int output_write(const char *path, enum output_format fmt,
		 const struct stacks *st, const struct profile_meta *meta)
{
	struct write_job job = {NULL, st, meta};

	switch (fmt) {
	case FORMAT_SPEEDSCOPE:
		job.fn = out_speedscope_write;
		break;
	case FORMAT_FOLDED:
		job.fn = out_folded_write;
		break;
	case FORMAT_SVG:
		job.fn = out_svg_write;
		break;
	case FORMAT_PPROF:
		job.fn = out_pprof_write;
		break;
	case FORMAT_CHROME:
		job.fn = out_chrome_write;
		break;
	case FORMAT_HTML:
		job.fn = out_html_write;
		break;
	default:
		return error("cannot write '%s': unknown output format %d",
			     path, (int)fmt);
	}
	return write_file_atomic(path, write_job_run, &job);
}

/*
 * Length of the valid UTF-8 sequence starting at s (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0.  A NUL
 * is never a continuation byte, so this never reads past the string.
 */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	if (s[0] < 0xe0) {
		n = 2;
	} else if (s[0] < 0xf0) {
		n = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else {
		n = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

const char *output_utf8(const char *s, struct strbuf *tmp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	strbuf_reset(tmp);
	while (*p && (n = utf8_len(p)))
		p += n;
	if (!*p)
		return s;
	strbuf_add(tmp, s, (const char *)p - s);
	while (*p) {
		n = utf8_len(p);
		if (n) {
			strbuf_add(tmp, p, n);
			p += n;
		} else {
			strbuf_addstr(tmp, "\xef\xbf\xbd");
			p++;
		}
	}
	return tmp->buf;
}

uint32_t *output_frame_functions(const struct stacks *st, size_t *nr_functions,
				 uint32_t **first_frame)
{
	uint32_t *fn =
	    xmalloc((st->nr_frames ? st->nr_frames : 1) * sizeof(*fn));
	uint32_t *first =
	    xmalloc((st->nr_frames ? st->nr_frames : 1) * sizeof(*first));
	/* Open addressing over frame ids + 1 (0: empty), half full at most. */
	size_t size = 16, mask, i, h, n = 0;
	uint32_t *slots;

	while (size < 2 * st->nr_frames)
		size *= 2;
	mask = size - 1;
	slots = xcalloc(size, sizeof(*slots));
	for (i = 0; i < st->nr_frames; i++) {
		const struct stack_frame *f = &st->frames[i];

		/* stacks interns its strings: equal strings, equal pointers. */
		h = (size_t)fnv1a(fnv1a(FNV_INIT, &f->name, sizeof(f->name)),
				  &f->file, sizeof(f->file));
		for (h &= mask; slots[h]; h = (h + 1) & mask) {
			const struct stack_frame *g = &st->frames[slots[h] - 1];

			if (g->name == f->name && g->file == f->file)
				break;
		}
		if (!slots[h]) {
			slots[h] = (uint32_t)i + 1;
			first[n] = (uint32_t)i;
			fn[i] = (uint32_t)n++;
		} else {
			fn[i] = fn[slots[h] - 1];
		}
	}
	free(slots);
	*nr_functions = n;
	*first_frame = first;
	return fn;
}

int output_add_source_roots(cJSON *obj, const struct profile_meta *meta,
			    struct strbuf *tmp)
{
	const struct source_roots *sr = meta ? meta->source_roots : NULL;
	cJSON *arr, *item;
	size_t i;

	if (!sr || !sr->nr)
		return 0;
	arr = cJSON_AddArrayToObject(obj, OUTPUT_SOURCE_ROOTS);
	if (!arr)
		return -1;
	for (i = 0; i < sr->nr; i++) {
		item = cJSON_CreateString(output_utf8(sr->dirs[i], tmp));
		if (!item || !cJSON_AddItemToArray(arr, item)) {
			cJSON_Delete(item);
			return -1;
		}
	}
	return 0;
}

/* A file name and the samples with a frame in it. */
struct file_use {
	const char *file;
	uint64_t samples;
	size_t stamp; /* the last entry counted + 1 */
};

static int by_name(const void *a, const void *b)
{
	const struct file_use *x = a, *y = b;

	return strcmp(x->file, y->file);
}

static int busiest_first(const void *a, const void *b)
{
	const struct file_use *x = a, *y = b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

/* A source file's text is read whole or not at all: at most this much. */
#define SOURCE_FILE_MAX (1u << 20)

size_t output_sources(const struct stacks *st, const struct profile_meta *meta,
		      size_t budget, struct output_source **out)
{
	struct file_use *use = xcalloc(st->nr_frames + 1, sizeof(*use));
	size_t *of = xcalloc(st->nr_frames + 1, sizeof(*of));
	struct output_source *src;
	struct strbuf text = STRBUF_INIT;
	char prefix[64] = "", *const *roots = NULL;
	size_t i, j, nr = 0, n = 0, total = 0, nr_roots = 0;
	struct stat sbuf;

	/* The files, once each (frames name each many times). */
	for (i = 0; i < st->nr_frames; i++)
		use[i].file = st->frames[i].file ? st->frames[i].file : "";
	qsort(use, st->nr_frames, sizeof(*use), by_name);
	for (i = 0; i < st->nr_frames; i++)
		if (!nr || strcmp(use[nr - 1].file, use[i].file))
			use[nr++] = use[i];
	for (i = 0; i < st->nr_frames; i++) {
		struct file_use key = {
		    st->frames[i].file ? st->frames[i].file : "", 0, 0};
		struct file_use *u =
		    bsearch(&key, use, nr, sizeof(*use), by_name);

		of[i] = (size_t)(u - use);
	}
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		for (j = 0; j < e->depth; j++) {
			struct file_use *u = &use[of[e->frames[j]]];

			if (u->stamp != i + 1) {
				u->stamp = i + 1;
				u->samples += e->count;
			}
		}
	}
	qsort(use, nr, sizeof(*use), busiest_first);
	if (meta && meta->pid > 0) {
		snprintf(prefix, sizeof(prefix), "/proc/%ld/root", meta->pid);
		if (stat(prefix, &sbuf))
			prefix[0] = '\0';
	}
	if (meta && meta->source_roots) {
		roots = meta->source_roots->dirs;
		nr_roots = meta->source_roots->nr;
	}
	src = xcalloc(nr + 1, sizeof(*src));
	for (i = 0; i < nr && use[i].samples; i++) {
		struct output_source *o;
		int r;

		if (!*use[i].file || *use[i].file == '<')
			continue;
		o = &src[n++];
		o->file = use[i].file;
		o->samples = use[i].samples;
		o->id = meta && meta->source_files
			    ? source_files_find(meta->source_files, o->file)
			    : NULL;
		if (total >= budget)
			continue;
		r = source_read(o->file, roots, nr_roots,
				*prefix ? prefix : NULL, o->id, SOURCE_FILE_MAX,
				&text);
		o->changed = r == SOURCE_CHANGED;
		if (r || total + text.len > budget)
			continue;
		total += text.len;
		o->text = strbuf_detach(&text);
	}
	strbuf_release(&text);
	free(use);
	free(of);
	*out = src;
	return n;
}

void output_sources_free(struct output_source *src, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(src[i].text);
	free(src);
}
