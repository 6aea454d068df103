/* SPDX-License-Identifier: MIT */
/* Unit tests of the GPU channel: the agent's writer and spyc's reader. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/ring.h"
#include "gpu/gpuchan.h"
#include "util.h"

#include "check.h"

static struct gpu_record api_record(uint32_t correlation, uint32_t tid)
{
	struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_API;
	r.size = sizeof(r.u.api);
	r.u.api.correlation = correlation;
	r.u.api.tid = tid;
	r.u.api.start = correlation * 10ULL;
	r.u.api.end = correlation * 10ULL + 5;
	return r;
}

/* A channel of nr slots in fresh memory, with a writer on it. */
static void *setup(struct gpuchan *c, struct ring_writer *w, uint32_t nr)
{
	size_t size = gpuchan_size(nr);
	void *mem = xmalloc(size);

	CHECK(!gpuchan_init_mem(c, mem, size, nr));
	CHECK(!ring_writer_attach(w, mem, size));
	return mem;
}

static void test_write_read(void)
{
	struct gpuchan c;
	struct ring_writer w;
	struct gpu_record out[16];
	struct gpuchan_state st;
	void *mem = setup(&c, &w, 8);
	uint32_t i;

	CHECK(gpuchan_read(&c, out, 16) == 0);
	for (i = 0; i < 5; i++) {
		struct gpu_record r = api_record(i + 1, 7);

		CHECK(!ring_write(&w, &r));
	}
	CHECK(gpuchan_read(&c, out, 16) == 5);
	for (i = 0; i < 5; i++) {
		CHECK(out[i].type == GPU_REC_API);
		CHECK(out[i].u.api.correlation == i + 1);
		CHECK(out[i].u.api.end == (i + 1) * 10ULL + 5);
	}
	CHECK(gpuchan_read(&c, out, 16) == 0);
	CHECK(!gpuchan_state(&c, &st));
	CHECK(st.status == GPU_AGENT_WAITING && st.lost == 0);
	free(mem);
}

static void test_overflow(void)
{
	struct gpuchan c;
	struct ring_writer w;
	struct gpu_record out[16];
	struct gpuchan_state st;
	void *mem = setup(&c, &w, 8);
	uint32_t i, next = 1;
	int n, round;

	for (i = 0; i < 10; i++) {
		struct gpu_record r = api_record(i + 1, 1);

		CHECK(ring_write(&w, &r) == (i < 8 ? 0 : -ENOSPC));
	}
	CHECK(!gpuchan_state(&c, &st));
	CHECK(st.lost == 2);
	/* The first 8 survive, in order; what overflowed is gone. */
	CHECK(gpuchan_read(&c, out, 16) == 8);
	CHECK(out[0].u.api.correlation == 1 && out[7].u.api.correlation == 8);
	/* Reading frees the slots: many rounds around the ring. */
	for (round = 0; round < 50; round++) {
		for (i = 0; i < 3; i++) {
			struct gpu_record r = api_record(100 + next + i, 1);

			CHECK(!ring_write(&w, &r));
		}
		n = gpuchan_read(&c, out, 2);
		CHECK(n == 2);
		n += gpuchan_read(&c, out + 2, 16);
		CHECK(n == 3);
		for (i = 0; i < 3; i++)
			CHECK(out[i].u.api.correlation == 100 + next + i);
		next += 3;
	}
	CHECK(!gpuchan_state(&c, &st));
	CHECK(st.lost == 2);
	free(mem);
}

static void test_status(void)
{
	struct gpuchan c;
	struct ring_writer w;
	struct gpuchan_state st;
	char longmsg[400];
	void *mem = setup(&c, &w, 4);

	ring_set_status(&w, GPU_AGENT_NO_CUDA, 0, "no CUDA in this process");
	CHECK(!gpuchan_state(&c, &st));
	CHECK(st.status == GPU_AGENT_NO_CUDA);
	CHECK(!strcmp(st.message, "no CUDA in this process"));
	CHECK(!strcmp(gpu_agent_status_name(st.status), "no-cuda"));
	memset(longmsg, 'x', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	ring_set_status(&w, GPU_AGENT_CUPTI_ERROR, 17, longmsg);
	CHECK(!gpuchan_state(&c, &st));
	CHECK(st.detail == 17);
	CHECK(strlen(st.message) == GPUCHAN_MESSAGE_SIZE - 1);
	CHECK(ring_control(&w) == GPU_CONTROL_RUN);
	gpuchan_control(&c, GPU_CONTROL_STOP);
	CHECK(ring_control(&w) == GPU_CONTROL_STOP);
	/* A status word no agent writes is garbage. */
	((struct gpuchan_header *)mem)->status = 99;
	CHECK(gpuchan_state(&c, &st) == -EINVAL);
	CHECK(!strcmp(gpu_agent_status_name(99), "unknown"));
	free(mem);
}

static void test_garbage(void)
{
	struct gpuchan c;
	struct ring_writer w, w2;
	struct gpu_record out[4], r = api_record(5, 1);
	struct gpuchan_header *h;
	void *mem = setup(&c, &w, 4);
	size_t size = gpuchan_size(4);

	h = mem;
	/* A record of no known type is dropped and counted. */
	r.type = 77;
	CHECK(!ring_write(&w, &r));
	r = api_record(6, 1);
	CHECK(!ring_write(&w, &r));
	CHECK(gpuchan_read(&c, out, 4) == 1);
	CHECK(out[0].u.api.correlation == 6 && c.bad == 1);

	/* A changed geometry field without its checksum: torn. */
	h->nr_slots = 1u << 30;
	CHECK(gpuchan_invalid(&c) != NULL);
	CHECK(gpuchan_read(&c, out, 4) == -EINVAL);
	CHECK(ring_writer_attach(&w2, mem, size) == -EINVAL);
	h->nr_slots = 4;
	CHECK(gpuchan_invalid(&c) == NULL);

	/* Even with a matching checksum a bigger ring is refused. */
	h->nr_slots = 8;
	h->total_size = gpuchan_size(8);
	h->geometry_sum = gpuchan_geometry_sum(h);
	CHECK(gpuchan_invalid(&c) != NULL);
	CHECK(ring_writer_attach(&w2, mem, size) == -EINVAL);

	/* Garbage throughout. */
	memset(mem, 0xa5, GPUCHAN_HEADER_SIZE);
	CHECK(gpuchan_invalid(&c) != NULL);
	CHECK(gpuchan_read(&c, out, 4) == -EINVAL);
	CHECK(ring_writer_attach(&w2, mem, size) == -EINVAL);
	CHECK(ring_writer_attach(&w2, mem, 100) == -EINVAL);
	free(mem);
}

static void test_file(void)
{
	struct gpuchan c;
	struct ring_writer w;
	struct gpu_record out[2], r = api_record(42, 3);

	quiet = 1;
	CHECK(!gpuchan_create(&c, 16, (uid_t)-1, (gid_t)-1));
	quiet = 0;
	CHECK(c.path != NULL);
	CHECK(!ring_writer_open(&w, c.path));
	CHECK(!ring_write(&w, &r));
	ring_set_status(&w, GPU_AGENT_RUNNING, 0, "ok");
	CHECK(gpuchan_read(&c, out, 2) == 1 && out[0].u.api.correlation == 42);
	gpuchan_unlink(&c);
	CHECK(ring_writer_open(&w, "/nonexistent/spyc-gpu") == -ENOENT);
	CHECK(ring_writer_open(&w, "/dev/null") == -EINVAL);
	ring_writer_close(&w);
	gpuchan_release(&c);
}

#define PRODUCERS 4
#define PER_PRODUCER 20000

static struct ring_writer shared_writer;
static int producers_done;

static void *produce(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg, i;

	for (i = 0; i < PER_PRODUCER; i++) {
		struct gpu_record r = api_record(i, id);

		ring_write(&shared_writer, &r);
	}
	__atomic_fetch_add(&producers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Producers on several threads while spyc reads: every record comes out
 * whole, each producer's in its own order, and read + lost = written.
 */
static void test_concurrent(void)
{
	struct gpuchan c;
	struct gpuchan_state st;
	pthread_t th[PRODUCERS];
	struct gpu_record out[64];
	int64_t last[PRODUCERS];
	uint64_t got = 0;
	void *mem = setup(&c, &shared_writer, 256);
	int i, n, done = 0;

	for (i = 0; i < PRODUCERS; i++) {
		last[i] = -1;
		CHECK(!pthread_create(&th[i], NULL, produce,
				      (void *)(uintptr_t)i));
	}
	for (;;) {
		n = gpuchan_read(&c, out, 64);
		CHECK(n >= 0);
		for (i = 0; i < n; i++) {
			uint32_t p = out[i].u.api.tid;

			CHECK(p < PRODUCERS);
			if (p >= PRODUCERS)
				continue;
			CHECK((int64_t)out[i].u.api.correlation > last[p]);
			CHECK(out[i].u.api.end ==
			      out[i].u.api.correlation * 10ULL + 5);
			last[p] = out[i].u.api.correlation;
		}
		got += (uint64_t)n;
		/* Once all are done, one more empty read ends it. */
		if (done && n == 0)
			break;
		done = __atomic_load_n(&producers_done, __ATOMIC_ACQUIRE) ==
		       PRODUCERS;
	}
	for (i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	CHECK(!gpuchan_state(&c, &st));
	CHECK(got + st.lost == (uint64_t)PRODUCERS * PER_PRODUCER);
	CHECK(c.bad == 0);
	free(mem);
}

int main(void)
{
	test_write_read();
	test_overflow();
	test_status();
	test_garbage();
	test_file();
	test_concurrent();
	return failed;
}
