/* SPDX-License-Identifier: MIT */
/* spyc top's numbers: own and total time per line or function, per thread,
 * over the whole run and over a decaying recent window; no screen. */
#include "ui/toptable.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A cell's key: thread << 32 | FUNC_BIT for a function | name id. */
#define FUNC_BIT 0x80000000ULL
#define ID_MASK 0x7fffffffULL
/* The first size of the cell index; a power of two, kept half empty. */
#define INDEX_MIN 256
/*
 * Recent values are stored multiplied by exp(lambda * (now - epoch)), so
 * that decaying them costs nothing per sample.  Bring the epoch forward
 * this often (seconds) so that the factor stays far from overflow.
 */
#define RENORMALIZE_S 60.0
/* Sums per name id while a snapshot adds the threads up. */
enum { SUM_OWN, SUM_TOTAL, SUM_OWN_RECENT, SUM_TOTAL_RECENT, SUM_NR };

/* Counters of one (thread, line or function). */
struct top_cell {
	uint64_t key;
	uint64_t stamp;	   /* the thread-sample that last counted total here */
	double own, total; /* seconds over the whole run */
	double own_recent, total_recent; /* grown: see RENORMALIZE_S */
};

static const char *const column_names[TOP_COL_NR] = {
    [TOP_COL_OWN_PCT] = "%OWN",	     [TOP_COL_TOTAL_PCT] = "%TOTAL",
    [TOP_COL_OWN_TIME] = "OWNTIME",  [TOP_COL_TOTAL_TIME] = "TOTALTIME",
    [TOP_COL_FUNCTION] = "FUNCTION",
};

/* A 64-bit mix (MurmurHash3's finaliser): keys differ in few bits. */
static uint64_t hash_key(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

static void index_insert(uint32_t *index, size_t size, uint64_t key,
			 uint32_t value)
{
	size_t i = hash_key(key) & (size - 1);

	while (index[i])
		i = (i + 1) & (size - 1);
	index[i] = value;
}

static void rehash(struct toptable *tt, size_t size)
{
	size_t i;

	free(tt->index);
	tt->index = xcalloc(size, sizeof(*tt->index));
	tt->index_size = size;
	for (i = 0; i < tt->nr_cells; i++)
		index_insert(tt->index, size, tt->cells[i].key,
			     (uint32_t)(i + 1));
}

/* The cell of key, created zeroed if new.  Valid until the next call. */
static struct top_cell *cell(struct toptable *tt, uint64_t key)
{
	size_t mask = tt->index_size - 1;
	size_t i = hash_key(key) & mask;
	struct top_cell *c;
	uint32_t at;

	while ((at = tt->index[i])) {
		if (tt->cells[at - 1].key == key)
			return &tt->cells[at - 1];
		i = (i + 1) & mask;
	}
	ALLOC_GROW(tt->cells, tt->nr_cells + 1, tt->alloc_cells);
	c = &tt->cells[tt->nr_cells++];
	memset(c, 0, sizeof(*c));
	c->key = key;
	if (tt->nr_cells * 2 > tt->index_size)
		rehash(tt, tt->index_size * 2);
	else
		tt->index[i] = (uint32_t)tt->nr_cells;
	return c;
}

static void count(struct toptable *tt, uint64_t key, int own, double w,
		  double w_recent)
{
	struct top_cell *c = cell(tt, key);

	if (own) {
		c->own += w;
		c->own_recent += w_recent;
	}
	/* Recursion: a function on the stack twice ran once. */
	if (c->stamp != tt->seq) {
		c->stamp = tt->seq;
		c->total += w;
		c->total_recent += w_recent;
	}
}

static void scale_totals(struct top_totals *t, double f)
{
	t->wall *= f;
	t->thread_known *= f;
	t->thread_idle *= f;
	t->gil_known *= f;
	t->gil_held *= f;
}

static void add_totals(struct top_totals *t, double w,
		       const struct top_sample_info *info)
{
	unsigned idle = info->idle < info->known ? info->idle : info->known;

	t->wall += w;
	t->thread_known += w * info->known;
	t->thread_idle += w * idle;
	/* A sampler that knows no thread's state does not know the GIL's. */
	if (info->known || info->gil_held) {
		t->gil_known += w;
		if (info->gil_held)
			t->gil_held += w;
	}
}

static void renormalize(struct toptable *tt, double now)
{
	double f = exp(-tt->lambda * (now - tt->epoch));
	size_t i;

	for (i = 0; i < tt->nr_cells; i++) {
		tt->cells[i].own_recent *= f;
		tt->cells[i].total_recent *= f;
	}
	scale_totals(&tt->recent, f);
	tt->epoch = now;
}

void toptable_init(struct toptable *tt, double half_life)
{
	memset(tt, 0, sizeof(*tt));
	stacks_init(&tt->names);
	tt->half_life = half_life > 0 ? half_life : 1.0;
	tt->lambda = log(2.0) / tt->half_life;
	tt->grow = 1.0;
	tt->index_size = INDEX_MIN;
	tt->index = xcalloc(tt->index_size, sizeof(*tt->index));
}

void toptable_release(struct toptable *tt)
{
	free(tt->scratch);
	free(tt->index);
	free(tt->cells);
	free(tt->native);
	free(tt->func_line);
	free(tt->func_of);
	stacks_release(&tt->names);
	memset(tt, 0, sizeof(*tt));
}

/* A site, counted per function as the function of func_file. */
static uint32_t add_site(struct toptable *tt, const char *name,
			 const char *file, int line, const char *func_file,
			 int first_line)
{
	uint32_t site = stacks_frame(&tt->names, name, file, line);
	uint32_t func = stacks_frame(&tt->names, name, func_file, 0);
	size_t n = tt->names.nr_frames, old;

	old = tt->alloc_func_of;
	ALLOC_GROW(tt->func_of, n, tt->alloc_func_of);
	if (tt->alloc_func_of > old)
		memset(tt->func_of + old, 0,
		       (tt->alloc_func_of - old) * sizeof(*tt->func_of));
	old = tt->alloc_func_line;
	ALLOC_GROW(tt->func_line, n, tt->alloc_func_line);
	while (old < tt->alloc_func_line)
		tt->func_line[old++] = -1;
	old = tt->alloc_native;
	ALLOC_GROW(tt->native, n, tt->alloc_native);
	if (tt->alloc_native > old)
		memset(tt->native + old, 0, tt->alloc_native - old);
	tt->func_of[site] = func;
	if (tt->func_line[func] < 0)
		tt->func_line[func] = first_line;
	return site;
}

uint32_t toptable_site(struct toptable *tt, const char *name, const char *file,
		       int line, int first_line)
{
	return add_site(tt, name, file, line, file, first_line);
}

uint32_t toptable_native_site(struct toptable *tt, const char *name,
			      const char *file, int line, const char *func_file,
			      int func_line)
{
	uint32_t site =
	    add_site(tt, name, file, line, func_file ? func_file : file,
		     func_file ? func_line : 0);

	tt->native[site] = tt->native[tt->func_of[site]] = 1;
	return site;
}

uint32_t toptable_thread(struct toptable *tt, uint64_t ident, long tid,
			 const char *name)
{
	return stacks_thread(&tt->names, ident, tid, name);
}

uint32_t toptable_thread_in(struct toptable *tt, const char *process,
			    uint64_t ident, long tid, const char *name)
{
	return stacks_thread_in(&tt->names, process, ident, tid, name);
}

void toptable_sample(struct toptable *tt, double now, double weight,
		     const struct top_sample_info *info)
{
	if (now < tt->last)
		now = tt->last;
	tt->last = now;
	if (now - tt->epoch > RENORMALIZE_S)
		renormalize(tt, now);
	tt->grow = exp(tt->lambda * (now - tt->epoch));
	tt->weight = weight;
	tt->samples++;
	add_totals(&tt->whole, weight, info);
	add_totals(&tt->recent, weight * tt->grow, info);
}

void toptable_add(struct toptable *tt, uint32_t thread, const uint32_t *sites,
		  size_t depth)
{
	uint64_t base = (uint64_t)thread << 32;
	double w = tt->weight, w_recent = w * tt->grow;
	size_t i;

	tt->seq++;
	for (i = 0; i < depth; i++) {
		uint32_t site = sites[i];

		if (site >= tt->names.nr_frames)
			continue;
		count(tt, base | site, !i, w, w_recent);
		count(tt, base | FUNC_BIT | tt->func_of[site], !i, w, w_recent);
	}
}

static int cmp_double(double a, double b)
{
	return a < b ? -1 : a > b;
}

static int cmp_names(const struct top_row *a, const struct top_row *b)
{
	int c = strcmp(a->name, b->name);

	if (!c)
		c = strcmp(a->file, b->file);
	if (!c)
		c = (a->line > b->line) - (a->line < b->line);
	if (!c)
		c = (a->thread > b->thread) - (a->thread < b->thread);
	return c;
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct top_row *a = pa, *b = pb;
	enum top_column col = *(const enum top_column *)arg;
	int c = 0;

	switch (col) {
	case TOP_COL_OWN_PCT:
		c = cmp_double(b->own_pct, a->own_pct);
		break;
	case TOP_COL_TOTAL_PCT:
		c = cmp_double(b->total_pct, a->total_pct);
		break;
	case TOP_COL_OWN_TIME:
		c = cmp_double(b->own_time, a->own_time);
		break;
	case TOP_COL_TOTAL_TIME:
		c = cmp_double(b->total_time, a->total_time);
		break;
	case TOP_COL_FUNCTION:
	case TOP_COL_NR:
		return cmp_names(a, b);
	}
	if (!c)
		c = cmp_double(b->own_time, a->own_time);
	if (!c)
		c = cmp_double(b->total_time, a->total_time);
	return c ? c : cmp_names(a, b);
}

static void add_row(struct top_snapshot *snap, const struct toptable *tt,
		    uint32_t id, int func, uint32_t thread, const double *sum,
		    int recent)
{
	const struct stack_frame *f = &tt->names.frames[id];
	double own = recent ? sum[SUM_OWN_RECENT] : sum[SUM_OWN];
	double total = recent ? sum[SUM_TOTAL_RECENT] : sum[SUM_TOTAL];
	double wall = recent ? tt->recent.wall : tt->whole.wall;
	/* Recent sums are stored grown; this brings them to now. */
	double scale = recent ? 1.0 / tt->grow : 1.0;
	struct top_row *r;

	ALLOC_GROW(snap->rows, snap->nr_rows + 1, snap->alloc_rows);
	r = &snap->rows[snap->nr_rows++];
	r->name = f->name;
	r->file = f->file;
	r->line = func ? tt->func_line[id] : f->line;
	r->native = tt->native[id];
	r->thread = thread;
	r->own_pct = wall > 0 ? 100.0 * own / wall : 0.0;
	r->total_pct = wall > 0 ? 100.0 * total / wall : 0.0;
	r->own_time = own * scale;
	r->total_time = total * scale;
}

static void cell_sums(const struct top_cell *c, double *sum)
{
	sum[SUM_OWN] += c->own;
	sum[SUM_TOTAL] += c->total;
	sum[SUM_OWN_RECENT] += c->own_recent;
	sum[SUM_TOTAL_RECENT] += c->total_recent;
}

/* A cell's sums under the row it adds to: (thread, site). */
struct top_part {
	uint32_t thread, id;
	const struct top_cell *cell;
};

static int cmp_parts(const void *a, const void *b)
{
	const struct top_part *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

/*
 * TOP_PER_PROCESS: a row per process and site, the sums of its threads'
 * cells, under the process's first thread.
 */
static void per_process_rows(struct toptable *tt, const struct top_view *view,
			     uint64_t want, struct top_snapshot *snap)
{
	const struct stack_thread *th = tt->names.threads;
	size_t nt = tt->names.nr_threads, i, j, n = 0;
	uint32_t *first = xmalloc((nt ? nt : 1) * sizeof(*first));
	struct top_part *parts =
	    xmalloc((tt->nr_cells ? tt->nr_cells : 1) * sizeof(*parts));

	/* Process labels are interned: one pointer per process. */
	for (i = 0; i < nt; i++)
		for (first[i] = (uint32_t)i, j = 0; j < i; j++)
			if (th[j].process == th[i].process) {
				first[i] = first[j];
				break;
			}
	for (i = 0; i < tt->nr_cells; i++) {
		const struct top_cell *c = &tt->cells[i];
		uint32_t thread = (uint32_t)(c->key >> 32);

		if ((c->key & FUNC_BIT) != want || !(c->total > 0))
			continue;
		parts[n].thread = thread < nt ? first[thread] : thread;
		parts[n].id = (uint32_t)(c->key & ID_MASK);
		parts[n++].cell = c;
	}
	qsort(parts, n, sizeof(*parts), cmp_parts);
	for (i = 0; i < n; i = j) {
		double sum[SUM_NR] = {0};

		for (j = i; j < n && !cmp_parts(&parts[i], &parts[j]); j++)
			cell_sums(parts[j].cell, sum);
		add_row(snap, tt, parts[i].id, !!want, parts[i].thread, sum,
			view->recent);
	}
	free(parts);
	free(first);
}

void toptable_snapshot(struct toptable *tt, const struct top_view *view,
		       struct top_snapshot *snap)
{
	const struct top_totals *t = view->recent ? &tt->recent : &tt->whole;
	uint64_t want = view->per_line ? 0 : FUNC_BIT;
	enum top_column sort = view->sort;
	size_t i, n = tt->names.nr_frames;

	snap->nr_rows = 0;
	snap->wall = t->wall * (view->recent ? 1.0 / tt->grow : 1.0);
	snap->idle_pct = t->thread_known > 0
			     ? 100.0 * t->thread_idle / t->thread_known
			     : -1.0;
	snap->gil_pct =
	    t->gil_known > 0 ? 100.0 * t->gil_held / t->gil_known : -1.0;
	if (view->per_thread == TOP_PER_PROCESS) {
		per_process_rows(tt, view, want, snap);
	} else if (view->per_thread) {
		for (i = 0; i < tt->nr_cells; i++) {
			const struct top_cell *c = &tt->cells[i];
			double sum[SUM_NR] = {0};

			if ((c->key & FUNC_BIT) != want || !(c->total > 0))
				continue;
			cell_sums(c, sum);
			add_row(snap, tt, (uint32_t)(c->key & ID_MASK), !!want,
				(uint32_t)(c->key >> 32), sum, view->recent);
		}
	} else {
		ALLOC_GROW(tt->scratch, n * SUM_NR, tt->alloc_scratch);
		if (n) /* no table yet: memset(NULL, 0, 0) is undefined */
			memset(tt->scratch, 0,
			       n * SUM_NR * sizeof(*tt->scratch));
		for (i = 0; i < tt->nr_cells; i++) {
			const struct top_cell *c = &tt->cells[i];

			if ((c->key & FUNC_BIT) != want)
				continue;
			cell_sums(c, tt->scratch + (c->key & ID_MASK) * SUM_NR);
		}
		for (i = 0; i < n; i++)
			if (tt->scratch[i * SUM_NR + SUM_TOTAL] > 0)
				add_row(snap, tt, (uint32_t)i, !!want,
					TOP_ALL_THREADS,
					tt->scratch + i * SUM_NR, view->recent);
	}
	if ((unsigned)sort >= TOP_COL_NR)
		sort = TOP_COL_OWN_TIME;
	if (snap->nr_rows) /* rows is NULL then, which qsort_r may not get */
		qsort_r(snap->rows, snap->nr_rows, sizeof(*snap->rows),
			cmp_rows, &sort);
}

void top_snapshot_release(struct top_snapshot *snap)
{
	free(snap->rows);
	memset(snap, 0, sizeof(*snap));
}

const char *top_column_name(enum top_column col)
{
	if ((unsigned)col >= TOP_COL_NR)
		return "?";
	return column_names[col];
}
