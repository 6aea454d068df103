/* SPDX-License-Identifier: MIT */
/* NVTX ranges: paths of names, PyTorch's grouping, the bounded timeline. */
#include <string.h>

#include "check.h"
#include "gpu/gpunvtx.h"

static struct gpu_range range(uint64_t id, uint64_t parent, uint64_t t,
			      uint32_t tid, const char *name)
{
	struct gpu_range r;

	memset(&r, 0, sizeof(r));
	r.id = id;
	r.parent = parent;
	r.t = t;
	r.tid = tid;
	if (name) {
		r.len = (uint16_t)strlen(name);
		memcpy(r.name, name, r.len);
	} else {
		r.pop = 1;
	}
	return r;
}

static void add(struct gpunvtx *nv, struct gpu_range r)
{
	gpunvtx_add(nv, &r, 0);
}

/* The path of the open range id, joined by ';'. */
static const char *path(const struct gpunvtx *nv, uint64_t id)
{
	static char buf[1024];
	const char *names[GPU_NVTX_DEPTH];
	size_t n = gpunvtx_path(nv, gpunvtx_node_of(nv, id), names,
				GPU_NVTX_DEPTH),
	       i;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i)
			strcat(buf, ";");
		strcat(buf, names[i]);
	}
	return buf;
}

static void test_paths(void)
{
	struct gpunvtx nv;
	char longer[300];

	gpunvtx_init(&nv);
	add(&nv, range(1, 0, 100, 7, "step"));
	add(&nv, range(2, 1, 110, 7, "aten::mm, seq = 5, op_id = 9"));
	CHECK(!strcmp(path(&nv, 2), "[NVTX] step;[NVTX] aten::mm"));
	add(&nv, range(2, 0, 130, 7, NULL));
	/* Another call of the op: the same path, whatever its seq. */
	add(&nv, range(3, 1, 140, 7, "aten::mm, seq = 6, sizes = [[2, 3]]"));
	CHECK(gpunvtx_node_of(&nv, 3) != 0);
	CHECK(!strcmp(path(&nv, 3), "[NVTX] step;[NVTX] aten::mm"));
	CHECK(nv.nr_nodes == 3);
	/* A popped range, and one never heard of, have no path. */
	CHECK(!gpunvtx_node_of(&nv, 2) && !gpunvtx_node_of(&nv, 99));
	CHECK(!strcmp(path(&nv, 2), ""));
	/* A parent lost on the way: the range at the root. */
	add(&nv, range(4, 77, 150, 8, ""));
	CHECK(!strcmp(path(&nv, 4), "[NVTX] (no message)"));
	/* A message the agent cut. */
	memset(longer, 'x', sizeof(longer));
	{
		struct gpu_range r = range(5, 4, 160, 8, NULL);

		r.pop = 0;
		r.cut = 1;
		r.len = sizeof(r.name);
		memcpy(r.name, longer, sizeof(r.name));
		add(&nv, r);
		CHECK(strlen(gpunvtx_name(&nv, gpunvtx_node_of(&nv, 5))) ==
		      strlen(GPU_NVTX_PREFIX) + sizeof(r.name) + 3);
	}
	/* Cut inside a character (text pushed as UTF-8): that one left out. */
	{
		struct gpu_range r = range(6, 0, 165, 9, NULL);
		size_t i;

		r.pop = 0;
		r.cut = 1;
		r.len = sizeof(r.name);
		for (i = 0; i + 3 <= sizeof(r.name); i += 3)
			memcpy(r.name + i, "\xe2\x9c\x93", 3); /* U+2713 */
		memcpy(r.name + i, "\xe2\x9c", sizeof(r.name) - i);
		add(&nv, r);
		CHECK(strlen(gpunvtx_name(&nv, gpunvtx_node_of(&nv, 6))) ==
		      strlen(GPU_NVTX_PREFIX) + i + 3);
		CHECK(!strcmp(gpunvtx_name(&nv, gpunvtx_node_of(&nv, 6)) +
				  strlen(GPU_NVTX_PREFIX) + i,
			      "..."));
	}
	/* A pop of a range not open changes nothing. */
	add(&nv, range(42, 0, 170, 7, NULL));
	CHECK(nv.popped == 1 && nv.pushed == 6 && nv.nr_open == 5);
	/* The timeline: the popped one, then those open, to the end. */
	CHECK(nv.nr_ranges == 1 && nv.ranges[0].start == 110 &&
	      nv.ranges[0].end == 130 && nv.ranges[0].tid == 7);
	gpunvtx_close_open(&nv, 1000);
	CHECK(nv.nr_ranges == 6 && !nv.nr_open);
	CHECK(nv.ranges[1].start == 100 && nv.ranges[1].end == 1000);
	CHECK(!strcmp(gpunvtx_name(&nv, nv.ranges[1].node), "[NVTX] step"));
	gpunvtx_release(&nv);
}

static void test_bounded(void)
{
	struct gpunvtx nv;
	uint64_t id;

	gpunvtx_init(&nv);
	for (id = 1; id <= 1000; id++) {
		struct gpu_range push = range(id, 0, id * 10, 1, "r");
		struct gpu_range pop = range(id, 0, id * 10 + 5, 1, NULL);

		gpunvtx_add(&nv, &push, 100);
		gpunvtx_add(&nv, &pop, 100);
		CHECK(nv.nr_ranges <= 100 + 100 / 8);
	}
	/* The newest kept, every one counted. */
	CHECK(nv.ranges[nv.nr_ranges - 1].start == 10000);
	CHECK(nv.off_timeline + nv.nr_ranges == 1000);
	CHECK(nv.nr_nodes == 2);
	gpunvtx_release(&nv);
}

/* The ranges open on a thread at a time, from the timeline and those open. */
static void test_node_at(void)
{
	struct gpunvtx nv;
	uint32_t step, backward;

	gpunvtx_init(&nv);
	/* Thread 1: step [100, 400) holding backward [200, 300). */
	add(&nv, range(1, 0, 100, 1, "step"));
	step = gpunvtx_node_of(&nv, 1);
	add(&nv, range(2, 1, 200, 1, "backward"));
	backward = gpunvtx_node_of(&nv, 2);
	/* Thread 2's range, ending in between. */
	add(&nv, range(3, 0, 150, 2, "other"));
	add(&nv, range(3, 0, 250, 2, NULL));
	add(&nv, range(2, 0, 300, 1, NULL));
	/* step still open: found among the open ones. */
	CHECK(gpunvtx_node_at(&nv, 1, 350) == step);
	CHECK(gpunvtx_node_at(&nv, 1, 250) == backward);
	CHECK(gpunvtx_node_at(&nv, 1, 150) == step);
	CHECK(gpunvtx_node_at(&nv, 1, 50) == 0);
	add(&nv, range(1, 0, 400, 1, NULL));
	CHECK(gpunvtx_node_at(&nv, 1, 250) == backward);
	CHECK(gpunvtx_node_at(&nv, 1, 350) == step);
	CHECK(gpunvtx_node_at(&nv, 1, 450) == 0);
	CHECK(gpunvtx_node_at(&nv, 3, 250) == 0);
	gpunvtx_release(&nv);
}

static void test_grouping(void)
{
	const char *s = "aten::addmm, op_id = 3, sizes = [[1]]";

	CHECK(gpunvtx_group_len(s, strlen(s)) == strlen("aten::addmm"));
	s = "forward";
	CHECK(gpunvtx_group_len(s, strlen(s)) == strlen(s));
}

int main(void)
{
	test_paths();
	test_bounded();
	test_node_at();
	test_grouping();
	return failed;
}
