/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of launch stacks (src/gpu/gpustack.c): the layout spyc hands
 * the agent, for every offset table, and the agent's stack records, as
 * its own ring writer (agent/ring.c) put them in a channel and spyc's
 * reader took them out, put back together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/ring.h"
#include "gpu/gpuchan.h"
#include "gpu/gpustack.h"
#include "offsets.h"
#include "util.h"

#include "check.h"

/*
 * Every table gives a layout of its kind, but those of free-threaded
 * builds with thread-local bytecode (3.14t on: a frame's instruction may
 * be in a copy the agent does not follow); 3.13t has none.
 */
static void test_layouts(void)
{
	size_t i;

	for (i = 0; i < py_offset_tables_count; i++) {
		const struct py_offsets *off = py_offset_tables[i];
		struct gpu_py_layout l;
		unsigned minor = (off->hexversion >> 16) & 0xff;
		int r = gpu_py_layout_fill(off, &l);

		if (off->free_threaded && off->iframe_tlbc_index != OFF_NONE) {
			CHECK(r == -1);
			continue;
		}
		CHECK(r == 0);
		CHECK(l.sum == gpu_py_layout_sum(&l) && !l.ready);
		CHECK(l.max_frames == GPU_STACK_MAX);
		CHECK(l.kind == (minor <= 10   ? GPU_PY_FRAME_OBJECTS
				 : minor <= 12 ? GPU_PY_CFRAME
					       : GPU_PY_CURRENT_FRAME));
		CHECK(l.frame_back >= 0 && l.frame_code >= 0 &&
		      l.frame_pos >= 0 && l.tstate_frame >= 0);
		/* 3.11+: shims (3.12+) are skipped, by their owner. */
		CHECK((minor >= 12) == (l.owner_skip >= 0));
		CHECK((minor >= 11) == (l.frame_owner >= 0));
		if (failed)
			fprintf(stderr, "table %s\n", off->version);
	}
}

/* A stack of depth frames (code i+1, pos 10*i) as the agent writes it. */
static size_t stack_records(struct gpu_record *out, uint32_t corr, uint32_t tid,
			    unsigned depth, int cut)
{
	size_t nr = 0;
	unsigned first = 0, i;

	do {
		struct gpu_record *r = &out[nr++];
		unsigned count = depth - first < GPU_STACK_FRAMES
				     ? depth - first
				     : GPU_STACK_FRAMES;

		memset(r, 0, sizeof(*r));
		r->type = GPU_REC_STACK;
		r->size = sizeof(r->u.stack);
		r->u.stack.correlation = corr;
		r->u.stack.tid = tid;
		r->u.stack.depth = (uint8_t)depth;
		r->u.stack.first = (uint8_t)first;
		r->u.stack.count = (uint8_t)count;
		r->u.stack.flags = cut ? GPU_STACK_CUT : 0;
		for (i = 0; i < count; i++) {
			r->u.stack.frames[i].code = first + i + 1;
			r->u.stack.frames[i].pos = 10 * (first + i);
		}
		first += count;
	} while (first < depth);
	return nr;
}

static int frames_ok(const struct gpustack_done *d, unsigned depth)
{
	size_t i;

	if (d->nr != depth)
		return 0;
	for (i = 0; i < depth; i++)
		if (d->frames[i].code != i + 1 || d->frames[i].pos != 10 * i)
			return 0;
	return 1;
}

/* Through a real channel: the agent's writer, spyc's reader. */
static size_t through_channel(const struct gpu_record *in, size_t n,
			      struct gpu_record *out)
{
	size_t size = gpuchan_size(64), i;
	void *mem = xmalloc(size);
	struct gpuchan c;
	struct ring_writer w;
	int got;

	CHECK(!gpuchan_init_mem(&c, mem, size, 64));
	CHECK(!ring_writer_attach(&w, mem, size));
	for (i = 0; i < n; i++)
		CHECK(!ring_write(&w, &in[i]));
	got = gpuchan_read(&c, out, 64);
	CHECK(got == (int)n);
	free(mem);
	return got > 0 ? (size_t)got : 0;
}

static void test_reassembly(void)
{
	struct gpu_record in[64], out[64], *deep, *other;
	struct gpustack_asm *a = xmalloc(sizeof(*a));
	struct gpustack_done d;
	size_t n = 0, got, i, done = 0;

	gpustack_init(a);
	/* One record; three records (30 frames) interleaved with another
	 * thread's two (20 frames); an alias; the deepest, cut. */
	n += stack_records(in + n, 1, 100, 5, 0);
	deep = in + n;
	n += stack_records(in + n, 2, 100, 30, 0);
	other = in + n;
	n += stack_records(in + n, 3, 200, 20, 0);
	/* interleave: 2a 3a 2b 3b 2c */
	{
		struct gpu_record t[5] = {deep[0], other[0], deep[1], other[1],
					  deep[2]};
		memcpy(deep, t, sizeof(t));
	}
	memset(&in[n], 0, sizeof(in[n]));
	in[n].type = GPU_REC_STACK;
	in[n].size = sizeof(in[n].u.stack);
	in[n].u.stack.correlation = 4;
	in[n].u.stack.tid = 100;
	in[n].u.stack.alias = 2;
	n++;
	n += stack_records(in + n, 5, 100, GPU_STACK_MAX, 1);
	got = through_channel(in, n, out);
	for (i = 0; i < got; i++) {
		if (!gpustack_feed(a, &out[i].u.stack, &d))
			continue;
		done++;
		switch (d.correlation) {
		case 1:
			CHECK(frames_ok(&d, 5) && d.tid == 100 && !d.cut);
			break;
		case 2:
			CHECK(frames_ok(&d, 30) && d.tid == 100);
			break;
		case 3:
			CHECK(frames_ok(&d, 20) && d.tid == 200);
			break;
		case 4:
			CHECK(d.alias == 2 && !d.nr);
			break;
		case 5:
			CHECK(frames_ok(&d, GPU_STACK_MAX) && d.cut);
			break;
		default:
			CHECK(!"an unknown stack");
		}
	}
	CHECK(done == 5);
	CHECK(!a->invalid && !a->incomplete);

	/* A part lost (the ring was full): that stack is given up. */
	gpustack_init(a);
	n = stack_records(in, 7, 100, 40, 0);
	CHECK(n == (40 + GPU_STACK_FRAMES - 1) / GPU_STACK_FRAMES && n >= 3);
	CHECK(!gpustack_feed(a, &in[0].u.stack, &d));
	CHECK(!gpustack_feed(a, &in[2].u.stack, &d));
	CHECK(a->incomplete == 1);
	/* Torn: more frames than a record holds, past the depth. */
	in[0].u.stack.count = GPU_STACK_FRAMES + 1;
	CHECK(!gpustack_feed(a, &in[0].u.stack, &d));
	in[0].u.stack.count = GPU_STACK_FRAMES;
	in[0].u.stack.depth = GPU_STACK_FRAMES - 1;
	CHECK(!gpustack_feed(a, &in[0].u.stack, &d));
	CHECK(a->invalid == 2);
	free(a);
}

int main(void)
{
	test_layouts();
	test_reassembly();
	return failed;
}
