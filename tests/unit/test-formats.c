/* SPDX-License-Identifier: MIT */
/* Unit tests of the pprof and Chrome trace writers, and the timeline. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "out/output.h"
#include "profile.pb-c.h"
#include "profile/stacks.h"
#include "profile/timeline.h"
#include "util.h"

#include "check.h"

#define MS 1000000ULL /* nanoseconds */

/* What fn writes to a temporary stream, as a buffer (caller frees). */
static unsigned char *write_to_buffer(int (*fn)(FILE *, const struct stacks *,
						const struct profile_meta *),
				      const struct stacks *st,
				      const struct profile_meta *meta,
				      size_t *len, int *ret)
{
	FILE *fp = tmpfile();
	unsigned char *buf;
	long size;

	if (!fp)
		abort();
	*ret = fn(fp, st, meta);
	fflush(fp);
	size = ftell(fp);
	rewind(fp);
	buf = xmalloc((size_t)size + 1);
	*len = fread(buf, 1, (size_t)size, fp);
	buf[*len] = 0;
	fclose(fp);
	return buf;
}

static void test_format_names(void)
{
	CHECK(output_format_parse("pprof") == FORMAT_PPROF);
	CHECK(output_format_parse("chrome") == FORMAT_CHROME);
	CHECK(output_format_parse("perfetto") == FORMAT_NONE);
	CHECK(output_format_from_path("a.trace.json") == FORMAT_CHROME);
	CHECK(output_format_from_path("dir.x/A.TRACE.JSON") == FORMAT_CHROME);
	CHECK(output_format_from_path("a.json") == FORMAT_SPEEDSCOPE);
	CHECK(output_format_from_path("trace.json") == FORMAT_SPEEDSCOPE);
	CHECK(output_format_from_path(".trace.json") == FORMAT_SPEEDSCOPE);
	CHECK(output_format_from_path("cpu.pb.gz") == FORMAT_PPROF);
	CHECK(output_format_from_path("cpu.pprof") == FORMAT_PPROF);
	CHECK(output_format_from_path("cpu.gz") == FORMAT_NONE);
	CHECK(output_format_from_path(".pprof") == FORMAT_NONE);
	CHECK(output_format_from_path("x.svg") == FORMAT_SVG);
	CHECK(output_format_from_path("x.folded") == FORMAT_FOLDED);
}

static void test_timeline(void)
{
	struct timeline tl;
	const uint32_t *e;
	size_t n;

	timeline_init(&tl);
	CHECK(timeline_add(&tl, 1) == -ENOSPC); /* no tick yet */
	CHECK(timeline_tick(&tl, 10) == 0);
	CHECK(timeline_add(&tl, 4) == 0);
	CHECK(timeline_add(&tl, 5) == 0);
	CHECK(timeline_tick(&tl, 20) == 0); /* a tick with no stacks */
	CHECK(timeline_tick(&tl, 30) == 0);
	CHECK(timeline_add(&tl, 6) == 0);
	CHECK(tl.nr_ticks == 3 && tl.nr_entries == 3);
	e = timeline_tick_entries(&tl, 0, &n);
	CHECK(n == 2 && e[0] == 4 && e[1] == 5);
	timeline_tick_entries(&tl, 1, &n);
	CHECK(n == 0);
	e = timeline_tick_entries(&tl, 2, &n);
	CHECK(n == 1 && e[0] == 6);
	tl.full = 1;
	CHECK(timeline_tick(&tl, 40) == -ENOSPC);
	CHECK(tl.nr_ticks == 3);
	timeline_release(&tl);
	CHECK(!tl.ticks && !tl.nr_ticks);
}

/*
 * Two threads; main: a;b (line 1), a;b (line 2), then a;c, then gone;
 * worker: w all along.  Thread 2 has no samples.
 */
struct fixture {
	struct stacks st;
	struct timeline tl;
	uint32_t t1, t2, t3;
	uint32_t ab1, ab2, ac, w;
};

static void fixture_init(struct fixture *fx)
{
	struct stacks *st = &fx->st;
	uint32_t a, b1, b2, c, w, s[2];

	stacks_init(st);
	timeline_init(&fx->tl);
	fx->t1 = stacks_thread(st, 0x1000, 100, "MainThread");
	fx->t2 = stacks_thread(st, 0x2000, 200, "wo\"rker");
	fx->t3 = stacks_thread(st, 0x3000, 300, "never");
	a = stacks_frame(st, "a", "m.py", 10);
	b1 = stacks_frame(st, "b", "m.py", 1);
	b2 = stacks_frame(st, "b", "m.py", 2);
	c = stacks_frame(st, "<module>", "m.py", 3);
	w = stacks_frame(st, "w", "w.py", 5);
	s[0] = a;
	s[1] = b1;
	fx->ab1 = stacks_add(st, fx->t1, s, 2, 1);
	s[1] = b2;
	fx->ab2 = stacks_add(st, fx->t1, s, 2, 1);
	s[1] = c;
	fx->ac = stacks_add(st, fx->t1, s, 2, 1);
	fx->w = stacks_add(st, fx->t2, &w, 1, 4);

	fx->tl.t0_ns = 1000 * MS;
	timeline_tick(&fx->tl, 1000 * MS + 1);
	timeline_add(&fx->tl, fx->ab1);
	timeline_add(&fx->tl, fx->w);
	timeline_tick(&fx->tl, 1010 * MS);
	timeline_add(&fx->tl, fx->w);
	timeline_add(&fx->tl, fx->ab2);
	timeline_tick(&fx->tl, 1020 * MS);
	timeline_add(&fx->tl, fx->ac);
	timeline_add(&fx->tl, fx->w);
	timeline_tick(&fx->tl, 1030 * MS);
	timeline_add(&fx->tl, fx->w);
}

static void fixture_release(struct fixture *fx)
{
	timeline_release(&fx->tl);
	stacks_release(&fx->st);
}

/* The X event of tid named name that starts at ts, or NULL. */
static const cJSON *find_slice(const cJSON *events, int tid, const char *name,
			       double ts)
{
	const cJSON *ev;

	cJSON_ArrayForEach(ev, events)
	{
		const cJSON *ph = cJSON_GetObjectItem(ev, "ph");

		if (strcmp(ph->valuestring, "X") ||
		    cJSON_GetObjectItem(ev, "tid")->valueint != tid ||
		    strcmp(cJSON_GetObjectItem(ev, "name")->valuestring,
			   name) ||
		    cJSON_GetObjectItem(ev, "ts")->valuedouble != ts)
			continue;
		return ev;
	}
	return NULL;
}

static double dur(const cJSON *ev)
{
	return ev ? cJSON_GetObjectItem(ev, "dur")->valuedouble : -1;
}

static void test_chrome(void)
{
	struct fixture fx;
	struct profile_meta meta;
	unsigned char *buf;
	const cJSON *events, *ev, *a, *b;
	cJSON *doc;
	size_t len;
	int ret, n_x = 0, n_m = 0;
	double last_end = 0;

	fixture_init(&fx);
	memset(&meta, 0, sizeof(meta));
	meta.title = "python m.py (pid 42)";
	meta.rate_hz = 100;
	meta.pid = 42;

	/* Without a timeline there is nothing to draw. */
	buf = write_to_buffer(out_chrome_write, &fx.st, &meta, &len, &ret);
	CHECK(ret == -EINVAL);
	free(buf);

	meta.timeline = &fx.tl;
	buf = write_to_buffer(out_chrome_write, &fx.st, &meta, &len, &ret);
	CHECK(ret == 0);
	doc = cJSON_Parse((const char *)buf);
	CHECK(doc != NULL);
	if (!doc)
		goto out;
	events = cJSON_GetObjectItem(doc, "traceEvents");
	CHECK(cJSON_IsArray(events));
	cJSON_ArrayForEach(ev, events)
	{
		const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;

		CHECK(cJSON_GetObjectItem(ev, "pid")->valueint == 42);
		if (!strcmp(ph, "M")) {
			n_m++;
			/* The thread without samples gets no row. */
			CHECK(cJSON_GetObjectItem(ev, "tid")->valueint != 300);
			continue;
		}
		CHECK(!strcmp(ph, "X"));
		n_x++;
		/* Written as they end. */
		CHECK(dur(ev) + cJSON_GetObjectItem(ev, "ts")->valuedouble >=
		      last_end);
		last_end = dur(ev) + cJSON_GetObjectItem(ev, "ts")->valuedouble;
	}
	/* process_name; thread_name and sort index for 2 threads. */
	CHECK(n_m == 5);
	/* main: a, b (one slice over two lines), <module>; worker: w. */
	CHECK(n_x == 4);
	/* a from the first tick (1 ns in: 0 us) until main is gone (30 ms). */
	a = find_slice(events, 100, "a", 0);
	CHECK(dur(a) == 30000);
	b = find_slice(events, 100, "b", 0);
	CHECK(dur(b) == 20000);
	CHECK(b && cJSON_GetObjectItem(cJSON_GetObjectItem(b, "args"), "line")
			   ->valueint == 1);
	CHECK(dur(find_slice(events, 100, "<module>", 20000)) == 10000);
	/* The worker is in the last tick: one interval (10 ms) past it. */
	CHECK(dur(find_slice(events, 200, "w", 0)) == 40000);
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "otherData"),
				  "samples")
		  ->valueint == 7);
	CHECK(strstr((const char *)buf, "wo\\\"rker (tid 200)") != NULL);
	cJSON_Delete(doc);
out:
	free(buf);
	fixture_release(&fx);
}

/* Gunzip buf; NULL if it is not gzip.  Caller frees. */
static unsigned char *gunzip(const unsigned char *buf, size_t len,
			     size_t *out_len)
{
	z_stream z;
	size_t alloc = 1 << 16;
	unsigned char *out = xmalloc(alloc);
	int zret;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		abort();
	z.next_in = (unsigned char *)buf;
	z.avail_in = (uInt)len;
	do {
		if (z.total_out == alloc) {
			alloc *= 2;
			out = xrealloc(out, alloc);
		}
		z.next_out = out + z.total_out;
		z.avail_out = (uInt)(alloc - z.total_out);
		zret = inflate(&z, Z_NO_FLUSH);
	} while (zret == Z_OK);
	*out_len = z.total_out;
	inflateEnd(&z);
	if (zret != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static void test_pprof(void)
{
	struct fixture fx;
	struct profile_meta meta;
	Perftools__Profiles__Profile *p;
	unsigned char *buf, *raw;
	size_t len, raw_len, i, j;
	uint64_t count = 0, nanos = 0;
	int ret, found_b2 = 0;

	fixture_init(&fx);
	memset(&meta, 0, sizeof(meta));
	meta.title = "python m.py (pid 42)";
	meta.python_version = "3.12.1";
	meta.rate_hz = 100;
	meta.duration_s = 0.04;
	meta.start_unix_ns = 1700000000000000000ULL;
	buf = write_to_buffer(out_pprof_write, &fx.st, &meta, &len, &ret);
	CHECK(ret == 0);
	raw = gunzip(buf, len, &raw_len);
	CHECK(raw != NULL);
	if (!raw)
		goto out;
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	CHECK(p != NULL);
	if (!p)
		goto out;
	CHECK(p->n_string_table > 0 && !strcmp(p->string_table[0], ""));
	CHECK(p->n_sample_type == 2);
	CHECK(!strcmp(p->string_table[p->sample_type[0]->type], "samples"));
	CHECK(!strcmp(p->string_table[p->sample_type[1]->type], "cpu"));
	CHECK(!strcmp(p->string_table[p->sample_type[1]->unit], "nanoseconds"));
	CHECK(p->period == 10000000);
	CHECK(p->duration_nanos == 40000000);
	CHECK(p->time_nanos == (int64_t)meta.start_unix_ns);
	/* Functions are (name, file): b at two lines is one function. */
	CHECK(p->n_function == 4);
	CHECK(p->n_location == fx.st.nr_frames);
	CHECK(p->n_sample == 4);
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		count += (uint64_t)s->value[0];
		nanos += (uint64_t)s->value[1];
		CHECK(s->n_label == 1);
		CHECK(!strcmp(p->string_table[s->label[0]->key], "thread"));
		for (j = 0; j < p->n_location; j++) {
			const Perftools__Profiles__Location *l = p->location[j];

			/* Leaf first: b at line 2 leads a sample. */
			if (l->id == s->location_id[0] && l->line[0]->line == 2)
				found_b2 = 1;
		}
	}
	CHECK(count == 7 && nanos == 7 * 10000000ULL);
	CHECK(found_b2);
	perftools__profiles__profile__free_unpacked(p, NULL);
out:
	free(raw);
	free(buf);
	fixture_release(&fx);
}

int main(void)
{
	test_format_names();
	test_timeline();
	test_chrome();
	test_pprof();
	if (!failed)
		printf("test-formats: all checks passed\n");
	return failed;
}
