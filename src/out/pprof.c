/* SPDX-License-Identifier: MIT */
/* pprof writer: the stacks as google/pprof's profile.proto, gzipped. */
#include "out/output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "py/framename.h"
#include "profile.pb-c.h"
#include "util.h"

/* gzip's wrapper rather than zlib's: deflateInit2(3), windowBits + 16. */
#define GZIP_WINDOW_BITS (15 + 16)
#define GZIP_MEM_LEVEL 8
#define GZIP_CHUNK 65536

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;

/*
 * The profile's string table: strings[0] is "", each string is there
 * once.  Strings are copies, made valid UTF-8 (proto3 strings must be).
 */
struct strtab {
	char **strings;
	size_t nr, alloc;
	uint32_t *slots; /* open addressing: index + 1, 0 empty */
	size_t size;
	struct strbuf tmp;
};

static uint64_t strtab_hash(const char *s)
{
	return fnv1a(FNV_INIT, s, strlen(s));
}

static void strtab_rehash(struct strtab *tab, size_t size)
{
	size_t i, h;

	free(tab->slots);
	tab->slots = xcalloc(size, sizeof(*tab->slots));
	tab->size = size;
	for (i = 0; i < tab->nr; i++) {
		h = (size_t)strtab_hash(tab->strings[i]) & (size - 1);
		while (tab->slots[h])
			h = (h + 1) & (size - 1);
		tab->slots[h] = (uint32_t)i + 1;
	}
}

/* The index of s in the table, adding it if new. */
static int64_t strtab_index(struct strtab *tab, const char *s)
{
	size_t h;

	s = output_utf8(s, &tab->tmp);
	if (2 * (tab->nr + 1) > tab->size)
		strtab_rehash(tab, tab->size ? 2 * tab->size : 64);
	h = (size_t)strtab_hash(s) & (tab->size - 1);
	for (; tab->slots[h]; h = (h + 1) & (tab->size - 1))
		if (!strcmp(tab->strings[tab->slots[h] - 1], s))
			return tab->slots[h] - 1;
	ALLOC_GROW(tab->strings, tab->nr + 1, tab->alloc);
	tab->strings[tab->nr] = xstrdup(s);
	tab->slots[h] = (uint32_t)++tab->nr;
	return (int64_t)tab->nr - 1;
}

static void strtab_init(struct strtab *tab)
{
	memset(tab, 0, sizeof(*tab));
	strbuf_init(&tab->tmp, 0);
	strtab_index(tab, ""); /* profile.proto: string_table[0] is "" */
}

static void strtab_release(struct strtab *tab)
{
	size_t i;

	for (i = 0; i < tab->nr; i++)
		free(tab->strings[i]);
	free(tab->strings);
	free(tab->slots);
	strbuf_release(&tab->tmp);
}

/* protobuf-c's output buffer, deflating what it is given into fp. */
struct gzip_sink {
	ProtobufCBuffer base; /* first: protobuf-c hands &base back */
	z_stream z;
	FILE *fp;
	unsigned char out[GZIP_CHUNK];
	int err; /* first error, a negative errno code */
};

static void gzip_deflate(struct gzip_sink *sink, const uint8_t *data,
			 size_t len, int flush)
{
	size_t n;
	int zret;

	sink->z.next_in = (unsigned char *)data;
	sink->z.avail_in = (uInt)len;
	do {
		sink->z.next_out = sink->out;
		sink->z.avail_out = sizeof(sink->out);
		zret = deflate(&sink->z, flush);
		if (zret == Z_STREAM_ERROR) {
			sink->err = -EIO;
			return;
		}
		n = sizeof(sink->out) - sink->z.avail_out;
		if (n && fwrite(sink->out, 1, n, sink->fp) != n) {
			sink->err = errno ? -errno : -EIO;
			return;
		}
	} while (sink->z.avail_out == 0 ||
		 (flush == Z_FINISH && zret != Z_STREAM_END));
}

static void gzip_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gzip_sink *sink = (struct gzip_sink *)buf;

	/* avail_in is an unsigned int: feed a huge run in pieces. */
	while (!sink->err && len) {
		size_t n = len > GZIP_CHUNK ? GZIP_CHUNK : len;

		gzip_deflate(sink, data, n, Z_NO_FLUSH);
		data += n;
		len -= n;
	}
}

/* Serialize the profile into fp, gzipped.  0 or a negative errno code. */
static int write_gzipped(FILE *fp, const Profile *profile)
{
	struct gzip_sink *sink = xcalloc(1, sizeof(*sink));
	int ret;

	sink->base.append = gzip_append;
	sink->fp = fp;
	if (deflateInit2(&sink->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
			 GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(sink);
		return -ENOMEM;
	}
	perftools__profiles__profile__pack_to_buffer(profile, &sink->base);
	if (!sink->err)
		gzip_deflate(sink, NULL, 0, Z_FINISH);
	ret = sink->err;
	deflateEnd(&sink->z);
	free(sink);
	return ret;
}

/* Everything the Profile message points to, owned here. */
struct pprof_build {
	struct strtab strings;
	ValueType sample_types[2], *sample_type_ptrs[2], period_type;
	Mapping mapping, *mapping_ptr;
	Function *functions, **function_ptrs;
	Location *locations, **location_ptrs;
	Line *lines, **line_ptrs;
	Sample *samples, **sample_ptrs;
	Label *thread_labels, **thread_label_ptrs;
	uint64_t *location_ids;
	int64_t *values;
	int64_t *comments;
	uint32_t *frame_fn, *fn_first;
};

static void value_type(ValueType *vt, struct strtab *tab, const char *type,
		       const char *unit)
{
	perftools__profiles__value_type__init(vt);
	vt->type = strtab_index(tab, type);
	vt->unit = strtab_index(tab, unit);
}

/*
 * A function per (name, file); a location per frame (function at a
 * line), its id the frame id + 1, since 0 is not an id.
 */
static void add_code(Profile *p, struct pprof_build *b, const struct stacks *st)
{
	size_t i, nr_fn;

	/*
	 * One mapping that says the profile is symbolized already, so that
	 * readers neither look for a binary nor try to symbolize.
	 */
	perftools__profiles__mapping__init(&b->mapping);
	b->mapping.id = 1;
	b->mapping.filename = strtab_index(&b->strings, "[python]");
	b->mapping.has_functions = 1;
	b->mapping.has_filenames = 1;
	b->mapping.has_line_numbers = 1;
	b->mapping_ptr = &b->mapping;
	p->n_mapping = 1;
	p->mapping = &b->mapping_ptr;

	b->frame_fn = output_frame_functions(st, &nr_fn, &b->fn_first);
	b->functions = xcalloc(nr_fn ? nr_fn : 1, sizeof(*b->functions));
	b->function_ptrs =
	    xcalloc(nr_fn ? nr_fn : 1, sizeof(*b->function_ptrs));
	for (i = 0; i < nr_fn; i++) {
		const struct stack_frame *f = &st->frames[b->fn_first[i]];
		Function *fn = &b->functions[i];

		perftools__profiles__function__init(fn);
		fn->id = i + 1;
		/*
		 * No system_name: pprof "demangles" a function whose
		 * system_name equals its name, and as C++ templates it
		 * strips "<module>" to "".
		 */
		fn->name = strtab_index(&b->strings, f->name);
		fn->filename = strtab_index(&b->strings, f->file);
		b->function_ptrs[i] = fn;
	}
	p->n_function = nr_fn;
	p->function = b->function_ptrs;

	b->locations = xcalloc(st->nr_frames + 1, sizeof(*b->locations));
	b->location_ptrs =
	    xcalloc(st->nr_frames + 1, sizeof(*b->location_ptrs));
	b->lines = xcalloc(st->nr_frames + 1, sizeof(*b->lines));
	b->line_ptrs = xcalloc(st->nr_frames + 1, sizeof(*b->line_ptrs));
	for (i = 0; i < st->nr_frames; i++) {
		Location *loc = &b->locations[i];
		Line *line = &b->lines[i];

		perftools__profiles__line__init(line);
		line->function_id = b->frame_fn[i] + 1;
		line->line = st->frames[i].line;
		b->line_ptrs[i] = line;
		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		loc->mapping_id = b->mapping.id;
		loc->n_line = 1;
		loc->line = &b->line_ptrs[i];
		b->location_ptrs[i] = loc;
	}
	p->n_location = st->nr_frames;
	p->location = b->location_ptrs;
}

/*
 * A sample per stacks entry (one thread, one stack), leaf first as
 * pprof wants, labelled with its thread as speedscope names its
 * profiles (and, following several processes, with its process too);
 * values: samples, and samples x period.
 */
static void add_samples(Profile *p, struct pprof_build *b,
			const struct stacks *st, size_t nr_values,
			int64_t period_ns)
{
	size_t i, j, n = 0, nr_ids = 0;
	uint64_t *ids;
	int64_t *values;
	char label[512];
	int64_t key = strtab_index(&b->strings, "thread");
	int64_t process_key = strtab_index(&b->strings, "process");

	/* Thread i's labels: thread_label_ptrs[2i] and, if any, [2i + 1]. */
	b->thread_labels =
	    xcalloc(2 * st->nr_threads + 1, sizeof(*b->thread_labels));
	b->thread_label_ptrs =
	    xcalloc(2 * st->nr_threads + 1, sizeof(*b->thread_label_ptrs));
	for (i = 0; i < st->nr_threads; i++) {
		const struct stack_thread *t = &st->threads[i];
		Label *l = &b->thread_labels[2 * i];

		perftools__profiles__label__init(l);
		stacks_thread_full_label(t, label, sizeof(label));
		l->key = key;
		l->str = strtab_index(&b->strings, label);
		b->thread_label_ptrs[2 * i] = l;
		if (!t->process)
			continue;
		l = &b->thread_labels[2 * i + 1];
		perftools__profiles__label__init(l);
		l->key = process_key;
		l->str = strtab_index(&b->strings, t->process);
		b->thread_label_ptrs[2 * i + 1] = l;
	}
	for (i = 0; i < st->nr_entries; i++)
		nr_ids += st->entries[i].depth;
	b->location_ids = ids = xmalloc((nr_ids + 1) * sizeof(*ids));
	b->values = values =
	    xmalloc((st->nr_entries * nr_values + 1) * sizeof(*values));
	b->samples = xcalloc(st->nr_entries + 1, sizeof(*b->samples));
	b->sample_ptrs = xcalloc(st->nr_entries + 1, sizeof(*b->sample_ptrs));
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];
		Sample *s = &b->samples[n];

		if (!e->count)
			continue;
		perftools__profiles__sample__init(s);
		s->n_location_id = e->depth;
		s->location_id = ids;
		for (j = 0; j < e->depth; j++)
			*ids++ = (uint64_t)e->frames[e->depth - 1 - j] + 1;
		s->n_value = nr_values;
		s->value = values;
		*values++ = (int64_t)e->count;
		if (nr_values > 1)
			*values++ = (int64_t)e->count * period_ns;
		s->n_label = st->threads[e->thread].process ? 2 : 1;
		s->label = &b->thread_label_ptrs[2 * e->thread];
		b->sample_ptrs[n++] = s;
	}
	p->n_sample = n;
	p->sample = b->sample_ptrs;
}

static void pprof_build_release(struct pprof_build *b)
{
	free(b->comments);
	free(b->frame_fn);
	free(b->fn_first);
	free(b->functions);
	free(b->function_ptrs);
	free(b->locations);
	free(b->location_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->thread_labels);
	free(b->thread_label_ptrs);
	free(b->location_ids);
	free(b->values);
	strtab_release(&b->strings);
}

int out_pprof_write(FILE *fp, const struct stacks *st,
		    const struct profile_meta *meta)
{
	struct pprof_build b;
	Profile p;
	double rate_hz = meta && isfinite(meta->rate_hz) ? meta->rate_hz : 0;
	/* Off-CPU threads kept (--idle): their samples are wall time. */
	const char *clock = meta && meta->idle ? "wall" : "cpu";
	int64_t period_ns = rate_hz > 0 ? llround(1e9 / rate_hz) : 0;
	size_t nr_values = period_ns > 0 ? 2 : 1;
	struct strbuf comment = STRBUF_INIT;
	const struct source_roots *roots = meta ? meta->source_roots : NULL;
	size_t i;
	int ret;

	memset(&b, 0, sizeof(b));
	strtab_init(&b.strings);
	perftools__profiles__profile__init(&p);

	/* By convention the count of events is the first sample type. */
	value_type(&b.sample_types[0], &b.strings, "samples", "count");
	value_type(&b.sample_types[1], &b.strings, clock, "nanoseconds");
	b.sample_type_ptrs[0] = &b.sample_types[0];
	b.sample_type_ptrs[1] = &b.sample_types[1];
	p.n_sample_type = nr_values;
	p.sample_type = b.sample_type_ptrs;
	if (period_ns > 0) {
		value_type(&b.period_type, &b.strings, clock, "nanoseconds");
		p.period_type = &b.period_type;
		p.period = period_ns;
		p.default_sample_type = b.sample_types[1].type;
	}
	if (meta && meta->duration_s > 0 && isfinite(meta->duration_s))
		p.duration_nanos = llround(meta->duration_s * 1e9);
	if (meta)
		p.time_nanos = (int64_t)meta->start_unix_ns;

	add_code(&p, &b, st);
	add_samples(&p, &b, st, nr_values, period_ns);

	b.comments = xcalloc(2 + (roots ? roots->nr : 0), sizeof(*b.comments));
	strbuf_addf(&comment, "spyc: %s",
		    meta && meta->title ? meta->title : "profile");
	b.comments[p.n_comment++] = strtab_index(&b.strings, comment.buf);
	if (meta && meta->python_version) {
		strbuf_reset(&comment);
		strbuf_addf(&comment, "Python %s", meta->python_version);
		b.comments[p.n_comment++] =
		    strtab_index(&b.strings, comment.buf);
	}
	/* Where spyc report finds the sources of the short file names. */
	for (i = 0; roots && i < roots->nr; i++) {
		strbuf_reset(&comment);
		strbuf_addf(&comment, OUTPUT_SOURCE_ROOT_COMMENT "%s",
			    roots->dirs[i]);
		b.comments[p.n_comment++] =
		    strtab_index(&b.strings, comment.buf);
	}
	p.comment = b.comments;
	/* Last: everything above added its strings. */
	p.n_string_table = b.strings.nr;
	p.string_table = b.strings.strings;

	ret = write_gzipped(fp, &p);
	strbuf_release(&comment);
	pprof_build_release(&b);
	return ret;
}
