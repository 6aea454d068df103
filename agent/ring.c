/* SPDX-License-Identifier: MIT */
/* The agent's end of the GPU channel: map it, write records, set status. */
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libc-compat.h"

/*
 * A producer that loses the race for a position this many times in a
 * row drops its record rather than spin: the target must never wait on
 * the agent.
 */
#define CLAIM_TRIES 64

int ring_writer_attach(struct ring_writer *w, void *mem, size_t len)
{
	struct gpuchan_header *h = mem;

	memset(w, 0, sizeof(*w));
	if (len < GPUCHAN_HEADER_SIZE || gpuchan_header_invalid(h, len))
		return -EINVAL;
	w->header = h;
	w->slots = (struct gpuchan_slot *)((char *)mem + h->header_size);
	w->mask = h->nr_slots - 1;
	return 0;
}

int ring_writer_open(struct ring_writer *w, const char *path)
{
	struct stat st;
	void *mem;
	int fd, ret;

	memset(w, 0, sizeof(*w));
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (compat_fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < GPUCHAN_HEADER_SIZE) {
		close(fd);
		return -EINVAL;
	}
	mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	ret = mem == MAP_FAILED ? -errno : 0;
	close(fd); /* the mapping keeps the file */
	if (ret)
		return ret;
	ret = ring_writer_attach(w, mem, (size_t)st.st_size);
	if (ret) {
		munmap(mem, (size_t)st.st_size);
		return ret;
	}
	w->map_size = (size_t)st.st_size;
	return 0;
}

void ring_writer_close(struct ring_writer *w)
{
	if (w->header && w->map_size)
		munmap(w->header, w->map_size);
	memset(w, 0, sizeof(*w));
}

int ring_write(struct ring_writer *w, const struct gpu_record *rec)
{
	struct gpuchan_header *h = w->header;
	int tries;

	if (!h)
		return -ENOSPC;
	for (tries = 0; tries < CLAIM_TRIES; tries++) {
		uint64_t pos = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
		struct gpuchan_slot *slot = &w->slots[pos & w->mask];
		uint64_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
		int64_t diff = (int64_t)(seq - pos);

		if (diff < 0)
			break; /* spyc has not read this slot's last round */
		if (diff > 0)
			continue; /* another producer took pos: look again */
		if (!__atomic_compare_exchange_n(&h->head, &pos, pos + 1, 0,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			continue;
		memcpy(&slot->record, rec, sizeof(*rec));
		__atomic_store_n(&slot->seq, pos + 1, __ATOMIC_RELEASE);
		return 0;
	}
	__atomic_fetch_add(&h->lost, 1, __ATOMIC_RELAXED);
	return -ENOSPC;
}

int ring_is_for_this_process(const struct ring_writer *w)
{
	const struct gpuchan_header *h = w->header;
	uint32_t target = __atomic_load_n(&h->target_pid, __ATOMIC_ACQUIRE);

	return target ? (uint32_t)getpid() == target
		      : (uint64_t)getppid() == h->spyc_pid;
}

int ring_for_this_process(struct ring_writer *w)
{
	if (ring_is_for_this_process(w))
		return 1;
	__atomic_add_fetch(&w->header->other_processes, 1, __ATOMIC_RELAXED);
	return 0;
}

void ring_set_status(struct ring_writer *w, enum gpu_agent_status status,
		     int detail, const char *message)
{
	struct gpuchan_header *h = w->header;
	size_t len = message ? strnlen(message, GPUCHAN_MESSAGE_SIZE - 1) : 0;

	if (!h)
		return;
	h->status_detail = detail;
	h->agent_pid = (uint32_t)getpid();
	memcpy(h->message, message ? message : "", len);
	h->message[len] = '\0';
	__atomic_store_n(&h->status, (uint32_t)status, __ATOMIC_RELEASE);
}

uint32_t ring_control(const struct ring_writer *w)
{
	if (!w->header)
		return GPU_CONTROL_STOP;
	return __atomic_load_n(&w->header->control, __ATOMIC_ACQUIRE);
}
