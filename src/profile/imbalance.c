/* SPDX-License-Identifier: MIT */
/* Load imbalance across processes: per-function times and their spread. */
#include "profile/imbalance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void imbalance_init(struct imbalance *im, size_t nr_units)
{
	memset(im, 0, sizeof(*im));
	im->nr_units = nr_units;
	stacks_init(&im->funcs);
	im->unit_total = xcalloc(nr_units ? nr_units : 1, sizeof(double));
}

void imbalance_release(struct imbalance *im)
{
	free(im->seen);
	free(im->unit_total);
	free(im->self);
	free(im->total);
	stacks_release(&im->funcs);
	memset(im, 0, sizeof(*im));
}

uint32_t imbalance_function(struct imbalance *im, const char *name,
			    const char *file)
{
	uint32_t id = stacks_frame(&im->funcs, name, file, 0);
	size_t old = im->alloc, n = im->nr_units;

	if (id < old)
		return id;
	im->alloc = old ? old * 2 : 64;
	while (im->alloc <= id)
		im->alloc *= 2;
	im->total = xrealloc(im->total, im->alloc * n * sizeof(double));
	im->self = xrealloc(im->self, im->alloc * n * sizeof(double));
	im->seen = xrealloc(im->seen, im->alloc * sizeof(uint64_t));
	memset(im->total + old * n, 0, (im->alloc - old) * n * sizeof(double));
	memset(im->self + old * n, 0, (im->alloc - old) * n * sizeof(double));
	memset(im->seen + old, 0, (im->alloc - old) * sizeof(uint64_t));
	return id;
}

void imbalance_add(struct imbalance *im, size_t unit, const uint32_t *funcs,
		   size_t depth, double weight)
{
	size_t i, n = im->nr_units;

	im->unit_total[unit] += weight;
	if (!depth)
		return;
	/* Sample numbers start at 1: seen[] starts at 0, "never". */
	im->sample++;
	for (i = 0; i < depth; i++) {
		if (im->seen[funcs[i]] == im->sample)
			continue;
		im->seen[funcs[i]] = im->sample;
		im->total[funcs[i] * n + unit] += weight;
	}
	im->self[funcs[depth - 1] * n + unit] += weight;
}

void imbalance_stats(const double *v, size_t n, struct imbalance_stats *out)
{
	double sum = 0, sq = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	out->min = out->max = v[0];
	for (i = 0; i < n; i++) {
		sum += v[i];
		if (v[i] < out->min)
			out->min = v[i];
		if (v[i] > out->max) {
			out->max = v[i];
			out->slowest = i;
		}
		out->none += v[i] == 0;
	}
	out->mean = sum / (double)n;
	for (i = 0; i < n; i++)
		sq += (v[i] - out->mean) * (v[i] - out->mean);
	out->stddev = sqrt(sq / (double)n);
}

/* For qsort: the ordering imbalance_order() documents. */
struct order_key {
	double over, max;
	uint32_t id;
};

static int compare_keys(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;

	if (x->over != y->over)
		return x->over > y->over ? -1 : 1;
	if (x->max != y->max)
		return x->max > y->max ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

uint32_t *imbalance_order(const struct imbalance *im)
{
	size_t i, nf = im->funcs.nr_frames;
	struct order_key *keys = xmalloc((nf ? nf : 1) * sizeof(*keys));
	uint32_t *order = xmalloc((nf ? nf : 1) * sizeof(*order));
	struct imbalance_stats st;

	for (i = 0; i < nf; i++) {
		imbalance_stats(im->total + i * im->nr_units, im->nr_units,
				&st);
		keys[i].over = st.max - st.mean;
		keys[i].max = st.max;
		keys[i].id = (uint32_t)i;
	}
	qsort(keys, nf, sizeof(*keys), compare_keys);
	for (i = 0; i < nf; i++)
		order[i] = keys[i].id;
	free(keys);
	return order;
}
