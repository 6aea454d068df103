/* SPDX-License-Identifier: MIT */
/*
 * top --gpu: the kernels, copies and memsets reported over each refresh
 * interval and since the start, by GPU time, and how busy the GPU was.
 */
#include "gpu/gputop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpuprof.h"
#include "util.h"

/* FNV-1a's offset basis. */
#define FNV_BASIS 0xcbf29ce484222325ULL
#define OTHER_KEY "o"
#define OTHER_NAME "[other kernels]"

enum { WINDOW = 0, RUN = 1 };
enum { KERNELS, COPIES, MEMSETS };

void gputop_init(struct gputop *g)
{
	memset(g, 0, sizeof(*g));
	gpu_names_init(&g->long_names);
}

void gputop_release(struct gputop *g)
{
	size_t i;

	for (i = 0; i < g->nr_names; i++) {
		free(g->names[i].key);
		free(g->names[i].name);
	}
	free(g->names);
	gpu_names_release(&g->long_names);
	free(g->index);
	free(g->spans);
	free(g->ticks);
	free(g->idle);
	free(g->window.rows);
	free(g->run.rows);
	gputop_init(g);
}

static uint64_t hash_key(const char *key)
{
	return fnv1a(FNV_BASIS, key, strlen(key));
}

/* Put name i in an index of size slots (a power of two, never full). */
static void index_put(uint32_t *index, size_t size, const char *key, uint32_t i)
{
	size_t at = (size_t)hash_key(key) & (size - 1);

	while (index[at])
		at = (at + 1) & (size - 1);
	index[at] = i + 1;
}

/* Keep the index at most half full. */
static void index_grow(struct gputop *g)
{
	size_t size = g->index_size ? 2 * g->index_size : 64, i;

	if (2 * (g->nr_names + 1) <= g->index_size)
		return;
	free(g->index);
	g->index = xcalloc(size, sizeof(*g->index));
	g->index_size = size;
	for (i = 0; i < g->nr_names; i++)
		index_put(g->index, size, g->names[i].key, (uint32_t)i);
}

/* The name of key (rec's, when it is new); never fails. */
static struct gputop_name *find_name(struct gputop *g, const char *key,
				     const struct gpu_record *rec)
{
	struct strbuf sb = STRBUF_INIT;
	struct gputop_name *n;
	size_t at;

	if (g->index_size) {
		at = (size_t)hash_key(key) & (g->index_size - 1);
		for (; g->index[at]; at = (at + 1) & (g->index_size - 1)) {
			n = &g->names[g->index[at] - 1];
			if (!strcmp(n->key, key))
				return n;
		}
	}
	/* Past the limit, new names all count as one. */
	if (g->nr_names >= GPUTOP_MAX_NAMES && strcmp(key, OTHER_KEY))
		return find_name(g, OTHER_KEY, NULL);
	index_grow(g);
	ALLOC_GROW(g->names, g->nr_names + 1, g->alloc_names);
	n = &g->names[g->nr_names];
	memset(n, 0, sizeof(*n));
	n->key = xstrdup(key);
	if (rec) {
		/* Demangled once per name, not once per launch. */
		gpuprof_activity_name(&g->long_names, rec, &sb);
		n->name = strbuf_detach(&sb);
	} else {
		n->name = xstrdup(OTHER_NAME);
	}
	index_put(g->index, g->index_size, key, (uint32_t)g->nr_names);
	g->nr_names++;
	return n;
}

/* Whether thread tid launched GPU work. */
static int launched(const struct gputop *g, long tid)
{
	size_t i;

	for (i = 0; i < g->nr_launch_tids; i++)
		if (g->launch_tids[i] == tid)
			return 1;
	return 0;
}

/* Note that thread tid launched GPU work. */
static void note_launcher(struct gputop *g, long tid)
{
	if (!launched(g, tid) && g->nr_launch_tids < GPUTOP_LAUNCH_TIDS)
		g->launch_tids[g->nr_launch_tids++] = tid;
}

void gputop_add(struct gputop *g, const struct gpu_record *rec)
{
	const struct gpu_interval *iv;
	struct gpu_record copy;
	struct gputop_name *n;
	char key[GPU_KERNEL_KEY_MAX];
	uint64_t ns;

	switch (rec->type) {
	case GPU_REC_KERNEL:
		copy = *rec;
		copy.u.kernel.name[sizeof(copy.u.kernel.name) - 1] = '\0';
		rec = &copy;
		gpu_kernel_key(&rec->u.kernel, key);
		g->counts[KERNELS]++;
		break;
	case GPU_REC_MEMCPY:
		snprintf(key, sizeof(key), "c%u",
			 (unsigned)rec->u.memcpy.copy_kind);
		g->counts[COPIES]++;
		break;
	case GPU_REC_MEMSET:
		snprintf(key, sizeof(key), "s");
		g->counts[MEMSETS]++;
		break;
	case GPU_REC_NAME:
		gpu_names_add(&g->long_names, &rec->u.name);
		return;
	case GPU_REC_API:
		note_launcher(g, (long)rec->u.api.tid);
		return;
	case GPU_REC_CLOCK:
		if (!g->clock_known)
			g->offset_ns = (int64_t)(rec->u.clock.monotonic_ns -
						 rec->u.clock.cupti_ns);
		g->clock_known = 1;
		return;
	default:
		return;
	}
	/* A record whose end comes first took no time that can be told. */
	iv = gpu_record_interval(rec);
	ns = iv->end > iv->start ? iv->end - iv->start : 0;
	n = find_name(g, key, rec);
	n->calls[WINDOW]++;
	n->ns[WINDOW] += ns;
	if (ns) {
		ALLOC_GROW(g->spans, g->nr_spans + 1, g->alloc_spans);
		g->spans[g->nr_spans][0] = iv->start + (uint64_t)g->offset_ns;
		g->spans[g->nr_spans][1] = iv->end + (uint64_t)g->offset_ns;
		g->nr_spans++;
	}
}

static int cmp_span(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/*
 * The time within [from, to) covered by at least one span, the spans
 * sorted by start.
 */
static uint64_t covered_ns(const struct gputop *g, uint64_t from, uint64_t to)
{
	uint64_t busy = 0, start = 0, end = 0;
	size_t i;
	int any = 0;

	for (i = 0; i < g->nr_spans && g->spans[i][0] < to; i++) {
		uint64_t s = g->spans[i][0] > from ? g->spans[i][0] : from;
		uint64_t e = g->spans[i][1] < to ? g->spans[i][1] : to;

		if (s >= e)
			continue;
		if (any && s <= end) {
			if (e > end)
				end = e;
			continue;
		}
		busy += end - start;
		start = s;
		end = e;
		any = 1;
	}
	return busy + (end - start);
}

/*
 * Charge the ticks up to `to` with the GPU's idle time in the spans they
 * stand for (a launching thread's only), by site; the later ones wait.
 * A tick stands for its weight centred on it, as record's samples do.
 */
static void charge_ticks(struct gputop *g, uint64_t to)
{
	size_t i, j, kept = 0;

	for (i = 0; i < g->nr_ticks; i++) {
		const struct gputop_tick *k = &g->ticks[i];
		uint64_t from, idle;

		if (k->t_ns > to) {
			g->ticks[kept++] = *k;
			continue;
		}
		if (!launched(g, k->tid))
			continue;
		/* Halfway to the sample before, as far again after. */
		from =
		    k->t_ns > k->weight_ns / 2 ? k->t_ns - k->weight_ns / 2 : 0;
		idle = k->weight_ns - covered_ns(g, from, from + k->weight_ns);
		if (!idle)
			continue;
		for (j = 0; j < g->nr_idle && g->idle[j].site != k->site; j++)
			;
		if (j == g->nr_idle) {
			ALLOC_GROW(g->idle, g->nr_idle + 1, g->alloc_idle);
			g->idle[g->nr_idle].site = k->site;
			g->idle[g->nr_idle++].ns = 0;
		}
		g->idle[j].ns += idle;
	}
	g->nr_ticks = kept;
}

static int cmp_idle(const void *a, const void *b)
{
	const struct gputop_idle *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* The window's idle time by site into w; the tally starts again. */
static void close_idle(struct gputop *g, struct gputop_view *w)
{
	size_t i;

	w->idle_ns = 0;
	for (i = 0; i < g->nr_idle; i++)
		w->idle_ns += g->idle[i].ns;
	if (g->nr_idle)
		qsort(g->idle, g->nr_idle, sizeof(*g->idle), cmp_idle);
	w->nr_idle_top =
	    g->nr_idle < GPUTOP_IDLE_TOP ? g->nr_idle : GPUTOP_IDLE_TOP;
	if (w->nr_idle_top)
		memcpy(w->idle_top, g->idle, w->nr_idle_top * sizeof(*g->idle));
	g->nr_idle = 0;
}

void gputop_tick(struct gputop *g, uint64_t t_ns, uint64_t weight_ns, long tid,
		 uint32_t site)
{
	struct gputop_tick *k;

	/* Before any launch there is no idle GPU to speak of. */
	if (!g->nr_launch_tids)
		return;
	ALLOC_GROW(g->ticks, g->nr_ticks + 1, g->alloc_ticks);
	k = &g->ticks[g->nr_ticks++];
	k->t_ns = t_ns;
	k->weight_ns = weight_ns;
	k->tid = tid;
	k->site = site;
}

/*
 * The time within [from, to) covered by at least one span; the spans
 * that end by `to` are dropped (the next interval starts there).
 */
static uint64_t union_ns(struct gputop *g, uint64_t from, uint64_t to)
{
	uint64_t busy;
	size_t i, kept = 0;

	if (g->nr_spans)
		qsort(g->spans, g->nr_spans, sizeof(*g->spans), cmp_span);
	busy = covered_ns(g, from, to);
	for (i = 0; i < g->nr_spans; i++)
		if (g->spans[i][1] > to)
			memmove(g->spans[kept++], g->spans[i],
				sizeof(*g->spans));
	g->nr_spans = kept;
	return busy;
}

static int cmp_row(const void *a, const void *b)
{
	const struct gputop_row *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* v's rows: the names with work in counts slot `which`, largest first. */
static void make_rows(struct gputop *g, struct gputop_view *v, int which)
{
	size_t i;

	v->nr_rows = 0;
	v->ns = 0;
	for (i = 0; i < g->nr_names; i++) {
		const struct gputop_name *n = &g->names[i];
		struct gputop_row *r;

		if (!n->calls[which])
			continue;
		ALLOC_GROW(v->rows, v->nr_rows + 1, v->alloc_rows);
		r = &v->rows[v->nr_rows++];
		r->name = n->name;
		r->calls = n->calls[which];
		r->ns = n->ns[which];
		v->ns += r->ns;
	}
	if (v->nr_rows)
		qsort(v->rows, v->nr_rows, sizeof(*v->rows), cmp_row);
}

/* The window's counts back to 0 (its spans stay: they have times). */
static void clear_counts(struct gputop *g)
{
	size_t i;

	for (i = 0; i < g->nr_names; i++) {
		g->names[i].calls[WINDOW] = 0;
		g->names[i].ns[WINDOW] = 0;
	}
	memset(g->counts, 0, sizeof(g->counts));
}

void gputop_close_window(struct gputop *g, uint64_t from_ns, uint64_t to_ns)
{
	struct gputop_view *w = &g->window, *run = &g->run;
	uint64_t wall_ns = to_ns > from_ns ? to_ns - from_ns : 0;
	uint64_t busy;
	size_t i;

	if (g->nr_spans)
		qsort(g->spans, g->nr_spans, sizeof(*g->spans), cmp_span);
	charge_ticks(g, to_ns);
	close_idle(g, w);
	busy = union_ns(g, from_ns, to_ns);

	make_rows(g, w, WINDOW);
	w->kernels = g->counts[KERNELS];
	w->copies = g->counts[COPIES];
	w->memsets = g->counts[MEMSETS];
	w->busy_ns = busy;
	w->wall_ns = wall_ns;
	for (i = 0; i < g->nr_names; i++) {
		g->names[i].calls[RUN] += g->names[i].calls[WINDOW];
		g->names[i].ns[RUN] += g->names[i].ns[WINDOW];
	}
	make_rows(g, run, RUN);
	run->kernels += w->kernels;
	run->copies += w->copies;
	run->memsets += w->memsets;
	run->busy_ns += busy;
	run->wall_ns += wall_ns;
	clear_counts(g);
	g->windows++;
}

void gputop_reset_window(struct gputop *g)
{
	clear_counts(g);
	g->nr_spans = 0;
	g->nr_ticks = 0;
	g->nr_idle = 0;
}

double gputop_busy_pct(const struct gputop_view *v)
{
	double pct;

	if (!v->wall_ns)
		return -1.0;
	pct = 100.0 * (double)v->busy_ns / (double)v->wall_ns;
	return pct > 100.0 ? 100.0 : pct;
}
