/* SPDX-License-Identifier: MIT */
/* A profile's samples summed by function and by line (see tally.h). */
#include "profile/tally.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void tally_init(struct tally *t, const struct profile *prof)
{
	const struct stacks *st = &prof->stacks;
	size_t i;

	memset(t, 0, sizeof(*t));
	t->prof = prof;
	stacks_init(&t->funcs);
	t->func_of =
	    xmalloc((st->nr_frames ? st->nr_frames : 1) * sizeof(*t->func_of));
	for (i = 0; i < st->nr_frames; i++)
		t->func_of[i] = stacks_frame(&t->funcs, st->frames[i].name,
					     st->frames[i].file, 0);
	t->own_func = xcalloc(t->funcs.nr_frames + 1, sizeof(uint64_t));
	t->total_func = xcalloc(t->funcs.nr_frames + 1, sizeof(uint64_t));
	t->seen_func = xcalloc(t->funcs.nr_frames + 1, sizeof(uint64_t));
	t->own_line = xcalloc(st->nr_frames + 1, sizeof(uint64_t));
	t->total_line = xcalloc(st->nr_frames + 1, sizeof(uint64_t));
	t->seen_line = xcalloc(st->nr_frames + 1, sizeof(uint64_t));
}

void tally_release(struct tally *t)
{
	free(t->seen_line);
	free(t->total_line);
	free(t->own_line);
	free(t->seen_func);
	free(t->total_func);
	free(t->own_func);
	free(t->func_of);
	stacks_release(&t->funcs);
	memset(t, 0, sizeof(*t));
}

void tally_count(struct tally *t, uint32_t thread)
{
	const struct stacks *st = &t->prof->stacks;
	size_t i, j;
	uint32_t id, f;

	memset(t->own_func, 0, t->funcs.nr_frames * sizeof(uint64_t));
	memset(t->total_func, 0, t->funcs.nr_frames * sizeof(uint64_t));
	memset(t->own_line, 0, st->nr_frames * sizeof(uint64_t));
	memset(t->total_line, 0, st->nr_frames * sizeof(uint64_t));
	memset(t->seen_func, 0, t->funcs.nr_frames * sizeof(uint64_t));
	memset(t->seen_line, 0, st->nr_frames * sizeof(uint64_t));
	t->section_total = 0;
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];
		uint64_t stamp = i + 1;

		if (thread != UINT32_MAX && e->thread != thread)
			continue;
		t->section_total += e->count;
		if (!e->count || !e->depth)
			continue;
		id = e->frames[e->depth - 1];
		t->own_line[id] += e->count;
		t->own_func[t->func_of[id]] += e->count;
		/* Recursion: a function or line counts once per sample. */
		for (j = 0; j < e->depth; j++) {
			id = e->frames[j];
			f = t->func_of[id];
			if (t->seen_line[id] != stamp) {
				t->seen_line[id] = stamp;
				t->total_line[id] += e->count;
			}
			if (t->seen_func[f] != stamp) {
				t->seen_func[f] = stamp;
				t->total_func[f] += e->count;
			}
		}
	}
}

double tally_samples(const struct tally *t)
{
	if (t->prof->unit != PROFILE_UNIT_SECONDS)
		return (double)t->section_total;
	return round((double)t->section_total / 1e9 * t->prof->rate_hz);
}

double tally_share(const struct tally *t, uint64_t count)
{
	return t->section_total ? (double)count / (double)t->section_total
				: 0.0;
}

double tally_share_variance(double p, double n)
{
	return n < 1 ? -1.0 : p * (1.0 - p) / n;
}

double tally_samples_for_difference(double p, double d)
{
	return 2.0 * TALLY_Z95 * TALLY_Z95 * p * (1.0 - p) / (d * d);
}
