/* SPDX-License-Identifier: MIT */
/* NVTX ranges: paths of range names, and a timeline per thread. */
#include "gpu/gpunvtx.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Ranges open at once, at most: more means pops were lost. */
#define GPU_NVTX_OPEN_MAX 65536

void gpunvtx_init(struct gpunvtx *nv)
{
	memset(nv, 0, sizeof(*nv));
	stacks_init(&nv->names);
}

void gpunvtx_release(struct gpunvtx *nv)
{
	free(nv->nodes);
	free(nv->node_index);
	free(nv->open);
	free(nv->ranges);
	stacks_release(&nv->names);
	memset(nv, 0, sizeof(*nv));
}

size_t gpunvtx_group_len(const char *name, size_t len)
{
	static const char *const tails[] = {
	    ", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
	size_t i, cut = len;

	for (i = 0; i < ARRAY_SIZE(tails); i++) {
		const char *at = memmem(name, len, tails[i], strlen(tails[i]));

		if (at && (size_t)(at - name) < cut)
			cut = (size_t)(at - name);
	}
	return cut;
}

static uint64_t node_hash(uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

	return h ^ h >> 29;
}

static void node_rehash(struct gpunvtx *nv, size_t size)
{
	size_t i;

	free(nv->node_index);
	nv->node_index = xcalloc(size, sizeof(*nv->node_index));
	nv->node_index_size = size;
	for (i = 1; i < nv->nr_nodes; i++) {
		size_t at = node_hash(nv->nodes[i].parent, nv->nodes[i].name) &
			    (size - 1);

		while (nv->node_index[at])
			at = (at + 1) & (size - 1);
		nv->node_index[at] = (uint32_t)i + 1;
	}
}

/* The path of range `name` inside path parent, made if new. */
static uint32_t node(struct gpunvtx *nv, uint32_t parent, uint32_t name)
{
	size_t at;

	if (2 * (nv->nr_nodes + 1) > nv->node_index_size)
		node_rehash(nv,
			    nv->node_index_size ? 2 * nv->node_index_size : 64);
	at = node_hash(parent, name) & (nv->node_index_size - 1);
	for (; nv->node_index[at]; at = (at + 1) & (nv->node_index_size - 1)) {
		const struct gpunvtx_node *n =
		    &nv->nodes[nv->node_index[at] - 1];

		if (n->parent == parent && n->name == name)
			return nv->node_index[at] - 1;
	}
	/* Node 0, no range, made with the first. */
	if (!nv->nr_nodes) {
		ALLOC_GROW(nv->nodes, 1, nv->alloc_nodes);
		nv->nodes[0].parent = 0;
		nv->nodes[0].name = stacks_frame(&nv->names, "", "", 0);
		nv->nr_nodes = 1;
	}
	ALLOC_GROW(nv->nodes, nv->nr_nodes + 1, nv->alloc_nodes);
	nv->nodes[nv->nr_nodes].parent = parent;
	nv->nodes[nv->nr_nodes].name = name;
	nv->node_index[at] = (uint32_t)nv->nr_nodes + 1;
	return (uint32_t)nv->nr_nodes++;
}

/* n bytes of UTF-8 text cut anywhere, less a last character cut in two. */
static size_t utf8_whole(const char *s, size_t n)
{
	size_t back = 0, want;
	unsigned char lead;

	while (back < 3 && back < n &&
	       ((unsigned char)s[n - 1 - back] & 0xc0) == 0x80)
		back++;
	if (back == n)
		return n;
	lead = (unsigned char)s[n - 1 - back];
	want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	return want > back + 1 ? n - 1 - back : n;
}

/* A pushed range's name as frames show it. */
static uint32_t range_name(struct gpunvtx *nv, const struct gpu_range *r)
{
	size_t len = r->len < sizeof(r->name) ? r->len : sizeof(r->name);
	size_t group = gpunvtx_group_len(r->name, len);
	char buf[sizeof(GPU_NVTX_PREFIX) + sizeof(r->name) + 4];
	size_t n = 0;

	memcpy(buf, GPU_NVTX_PREFIX, strlen(GPU_NVTX_PREFIX));
	n = strlen(GPU_NVTX_PREFIX);
	if (!group) {
		memcpy(buf + n, "(no message)", 12);
		n += 12;
	} else {
		/* A message with a NUL in it ends there. */
		int cut;

		group = strnlen(r->name, group);
		cut = r->cut && group == len;
		if (cut)
			group = utf8_whole(r->name, group);
		memcpy(buf + n, r->name, group);
		n += group;
		if (cut) {
			memcpy(buf + n, "...", 3);
			n += 3;
		}
	}
	buf[n] = '\0';
	return stacks_frame(&nv->names, buf, "", 0);
}

static struct gpunvtx_open *find_open(const struct gpunvtx *nv, uint64_t id)
{
	size_t i;

	/* The range popped is most often the one pushed last. */
	for (i = nv->nr_open; i-- > 0;)
		if (nv->open[i].id == id)
			return &nv->open[i];
	return NULL;
}

uint32_t gpunvtx_node_of(const struct gpunvtx *nv, uint64_t id)
{
	const struct gpunvtx_open *o = id ? find_open(nv, id) : NULL;

	return o ? o->node : 0;
}

/* Ranges of the timeline looked at for one time, at most. */
#define GPU_NVTX_SCAN 4096

uint32_t gpunvtx_node_at(const struct gpunvtx *nv, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = nv->nr_ranges, i;

	/*
	 * The timeline is in the order ranges ended: the first range of
	 * tid that ends at t or later and began by t is the innermost one
	 * around t (one nested in it would end first).
	 */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (nv->ranges[mid].end < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < nv->nr_ranges && i < lo + GPU_NVTX_SCAN; i++)
		if (nv->ranges[i].tid == tid && nv->ranges[i].start <= t)
			return nv->ranges[i].node;
	/* Else one still open: the last pushed by t. */
	for (i = nv->nr_open; i-- > 0;)
		if (nv->open[i].tid == tid && nv->open[i].start <= t)
			return nv->open[i].node;
	return 0;
}

static void timeline_add(struct gpunvtx *nv, const struct gpunvtx_open *o,
			 uint64_t end, size_t keep)
{
	struct gpunvtx_range *r;

	if (keep && nv->nr_ranges >= keep + keep / 8) {
		size_t drop = nv->nr_ranges - keep;

		memmove(nv->ranges, nv->ranges + drop,
			keep * sizeof(*nv->ranges));
		nv->nr_ranges = keep;
		nv->off_timeline += drop;
	}
	ALLOC_GROW(nv->ranges, nv->nr_ranges + 1, nv->alloc_ranges);
	r = &nv->ranges[nv->nr_ranges++];
	r->start = o->start;
	r->end = end > o->start ? end : o->start;
	r->tid = o->tid;
	r->node = o->node;
}

void gpunvtx_add(struct gpunvtx *nv, const struct gpu_range *r, size_t keep)
{
	struct gpunvtx_open *o;

	if (!r->id)
		return;
	if (r->pop) {
		o = find_open(nv, r->id);
		if (!o)
			return;
		nv->popped++;
		timeline_add(nv, o, r->t, keep);
		memmove(o, o + 1,
			(size_t)(nv->open + nv->nr_open - o - 1) * sizeof(*o));
		nv->nr_open--;
		return;
	}
	if (nv->nr_open >= GPU_NVTX_OPEN_MAX) {
		size_t drop = nv->nr_open / 2;

		memmove(nv->open, nv->open + drop,
			(nv->nr_open - drop) * sizeof(*nv->open));
		nv->nr_open -= drop;
		nv->open_lost += drop;
	}
	nv->pushed++;
	ALLOC_GROW(nv->open, nv->nr_open + 1, nv->alloc_open);
	o = &nv->open[nv->nr_open++];
	o->id = r->id;
	o->start = r->t;
	o->tid = r->tid;
	/* A parent never heard of (the ring dropped it): at the root. */
	o->node = node(nv, gpunvtx_node_of(nv, r->parent), range_name(nv, r));
}

size_t gpunvtx_path(const struct gpunvtx *nv, uint32_t n, const char **names,
		    size_t max)
{
	size_t depth = 0, i;
	uint32_t at;

	for (at = n; at && at < nv->nr_nodes; at = nv->nodes[at].parent)
		depth++;
	if (depth > max)
		depth = max;
	for (i = depth, at = n; i > 0; at = nv->nodes[at].parent)
		names[--i] = nv->names.frames[nv->nodes[at].name].name;
	return depth;
}

const char *gpunvtx_name(const struct gpunvtx *nv, uint32_t n)
{
	if (!n || n >= nv->nr_nodes)
		return "";
	return nv->names.frames[nv->nodes[n].name].name;
}

void gpunvtx_close_open(struct gpunvtx *nv, uint64_t end)
{
	size_t i;

	for (i = 0; i < nv->nr_open; i++)
		timeline_add(nv, &nv->open[i], end, 0);
	nv->nr_open = 0;
}
