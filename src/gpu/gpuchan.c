/* SPDX-License-Identifier: MIT */
/* spyc's end of the GPU channel: create it, read records, read the status. */
#include "gpu/gpuchan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

size_t gpuchan_size(uint32_t nr_slots)
{
	return GPUCHAN_HEADER_SIZE + (size_t)nr_slots * GPUCHAN_RECORD_SIZE;
}

int gpuchan_init_mem(struct gpuchan *c, void *mem, size_t size,
		     uint32_t nr_slots)
{
	struct gpuchan_header *h = mem;
	struct gpuchan_slot *slots;
	uint32_t i;

	memset(c, 0, sizeof(*c));
	if (nr_slots < GPUCHAN_MIN_SLOTS || nr_slots > GPUCHAN_MAX_SLOTS ||
	    (nr_slots & (nr_slots - 1)) || size < gpuchan_size(nr_slots))
		return -EINVAL;
	memset(mem, 0, gpuchan_size(nr_slots));
	h->magic = GPUCHAN_MAGIC;
	h->version = GPUCHAN_VERSION;
	h->header_size = GPUCHAN_HEADER_SIZE;
	h->record_size = GPUCHAN_RECORD_SIZE;
	h->nr_slots = nr_slots;
	h->total_size = gpuchan_size(nr_slots);
	h->spyc_pid = (uint64_t)getpid();
	h->status = GPU_AGENT_WAITING;
	h->control = GPU_CONTROL_RUN;
	/* Each slot is free for the round that starts at its index. */
	slots = (struct gpuchan_slot *)((char *)mem + GPUCHAN_HEADER_SIZE);
	for (i = 0; i < nr_slots; i++)
		slots[i].seq = i;
	h->geometry_sum = gpuchan_geometry_sum(h);
	c->mem = mem;
	c->size = gpuchan_size(nr_slots);
	c->nr_slots = nr_slots;
	return 0;
}

/* The directory for channel files: shared memory if there is any. */
static const char *channel_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (!access("/dev/shm", W_OK | X_OK))
		return "/dev/shm";
	return tmp && *tmp ? tmp : "/tmp";
}

/* The file's name in a directory of the target's root. */
#define CHANNEL_NAME "channel"

/*
 * Create the file: under channel_dir() with dir_fd -1, else as
 * CHANNEL_NAME in dir_fd (dir, as the target sees it).
 */
static int create(struct gpuchan *c, uint32_t nr_slots, uid_t uid, gid_t gid,
		  int dir_fd, const char *dir)
{
	struct strbuf path = STRBUF_INIT;
	size_t size = gpuchan_size(nr_slots);
	void *mem = MAP_FAILED;
	int fd = -1, ret = -EIO, err;

	memset(c, 0, sizeof(*c));
	c->dir_fd = -1;
	if (dir_fd < 0) {
		strbuf_addf(&path, "%s/spyc-gpu-%d-XXXXXX", channel_dir(),
			    (int)getpid());
		fd = mkostemp(path.buf, O_CLOEXEC);
	} else {
		strbuf_addf(&path, "%s/" CHANNEL_NAME, dir);
		fd = openat(dir_fd, CHANNEL_NAME,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	}
	if (fd < 0) {
		ret = -errno;
		error("cannot create a GPU channel file '%s': %s", path.buf,
		      strerror(errno));
		goto out;
	}
	if (uid != (uid_t)-1 && fchown(fd, uid, gid)) {
		ret = -errno;
		error("cannot give '%s' to uid %d: %s", path.buf, (int)uid,
		      strerror(errno));
		goto out;
	}
	/*
	 * The blocks reserved now, not as pages are first written: on a
	 * full file system (a container's small /dev/shm) the agent's
	 * first store into a page with none would raise SIGBUS in the
	 * target.
	 */
	err = posix_fallocate(fd, 0, (off_t)size);
	if (err) {
		ret = -err;
		error("cannot reserve %zu bytes for '%s': %s", size, path.buf,
		      strerror(err));
		goto out;
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		ret = -errno;
		error("cannot map '%s': %s", path.buf, strerror(errno));
		goto out;
	}
	if (gpuchan_init_mem(c, mem, size, nr_slots)) {
		ret = -EINVAL;
		error("%u is not a valid number of GPU records", nr_slots);
		goto out;
	}
	if (dir_fd >= 0) {
		c->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
		if (c->dir_fd < 0) {
			ret = -errno;
			error("cannot keep a GPU channel's directory: %s",
			      strerror(errno));
			goto out;
		}
		c->name = xstrdup(CHANNEL_NAME);
	}
	c->owns_map = 1;
	c->path = strbuf_detach(&path);
	mem = MAP_FAILED;
	ret = 0;
out:
	if (mem != MAP_FAILED)
		munmap(mem, size);
	if (fd >= 0)
		close(fd);
	if (ret && fd >= 0) {
		if (dir_fd >= 0)
			unlinkat(dir_fd, CHANNEL_NAME, 0);
		else
			unlink(path.buf);
	}
	if (ret)
		memset(c, 0, sizeof(*c));
	strbuf_release(&path);
	return ret;
}

int gpuchan_create(struct gpuchan *c, uint32_t nr_slots, uid_t uid, gid_t gid)
{
	return create(c, nr_slots, uid, gid, -1, NULL);
}

int gpuchan_create_in(struct gpuchan *c, uint32_t nr_slots, uid_t uid,
		      gid_t gid, int dir_fd, const char *dir)
{
	return create(c, nr_slots, uid, gid, dir_fd, dir);
}

void gpuchan_unlink(struct gpuchan *c)
{
	if (c->name) {
		/* Never c->path: that is the target's, not spyc's. */
		unlinkat(c->dir_fd, c->name, 0);
		close(c->dir_fd);
	} else if (c->path) {
		unlink(c->path);
	}
	free(c->path);
	free(c->name);
	c->path = c->name = NULL;
	c->dir_fd = -1;
}

void gpuchan_release(struct gpuchan *c)
{
	gpuchan_unlink(c);
	if (c->owns_map && c->mem)
		munmap(c->mem, c->size);
	memset(c, 0, sizeof(*c));
}

const char *gpuchan_invalid(const struct gpuchan *c)
{
	const struct gpuchan_header *h = c->mem;

	if (!h)
		return "no channel";
	/*
	 * The fixed fields must also be the ones spyc wrote: a header that
	 * is valid but describes a bigger ring would send reads past the
	 * end of the mapping.
	 */
	if (h->nr_slots != c->nr_slots)
		return "the number of slots changed";
	return gpuchan_header_invalid(h, c->size);
}

/* Whether a record copied out of the ring is one spyc can use. */
static int record_valid(struct gpu_record *r)
{
	if (r->type == GPU_REC_NONE || r->type > GPU_REC_TYPE_MAX ||
	    r->size > sizeof(r->u))
		return 0;
	if (r->type == GPU_REC_KERNEL)
		r->u.kernel.name[sizeof(r->u.kernel.name) - 1] = '\0';
	return 1;
}

int gpuchan_read(struct gpuchan *c, struct gpu_record *out, size_t max)
{
	struct gpuchan_header *h = c->mem;
	struct gpuchan_slot *slots;
	size_t n = 0;

	if (gpuchan_invalid(c))
		return -EINVAL;
	slots = (struct gpuchan_slot *)((char *)c->mem + GPUCHAN_HEADER_SIZE);
	while (n < max) {
		uint64_t pos = c->next;
		struct gpuchan_slot *slot = &slots[pos & (c->nr_slots - 1)];
		uint64_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);

		/*
		 * Anything but "published for pos" is an empty slot, or one
		 * a producer is still filling (or garbage): stop here and
		 * look again next time.
		 */
		if (seq != pos + 1)
			break;
		memcpy(&out[n], &slot->record, sizeof(out[n]));
		/* The copy is taken before the slot is handed back. */
		__atomic_store_n(&slot->seq, pos + c->nr_slots,
				 __ATOMIC_RELEASE);
		c->next = pos + 1;
		if (record_valid(&out[n]))
			n++;
		else
			c->bad++;
	}
	__atomic_store_n(&h->tail, c->next, __ATOMIC_RELAXED);
	return (int)n;
}

void gpuchan_set_target(struct gpuchan *c, pid_t pid)
{
	struct gpuchan_header *h = c->mem;

	if (!gpuchan_invalid(c))
		__atomic_store_n(&h->target_pid, (uint32_t)pid,
				 __ATOMIC_RELEASE);
}

int gpuchan_state(const struct gpuchan *c, struct gpuchan_state *st)
{
	const struct gpuchan_header *h = c->mem;
	uint32_t status;

	memset(st, 0, sizeof(*st));
	if (gpuchan_invalid(c))
		return -EINVAL;
	status = __atomic_load_n(&h->status, __ATOMIC_ACQUIRE);
	if (status > GPU_AGENT_STATUS_MAX)
		return -EINVAL;
	st->status = (enum gpu_agent_status)status;
	st->detail = h->status_detail;
	st->agent_pid = h->agent_pid;
	st->cupti_version = h->cupti_version;
	st->lost = __atomic_load_n(&h->lost, __ATOMIC_RELAXED);
	st->zero_time = __atomic_load_n(&h->zero_time, __ATOMIC_RELAXED);
	st->cupti_dropped =
	    __atomic_load_n(&h->cupti_dropped, __ATOMIC_RELAXED);
	st->bad_buffers = __atomic_load_n(&h->bad_buffers, __ATOMIC_RELAXED);
	st->captured_launches =
	    __atomic_load_n(&h->captured_launches, __ATOMIC_RELAXED);
	st->other_processes =
	    __atomic_load_n(&h->other_processes, __ATOMIC_RELAXED);
	st->clock = __atomic_load_n(&h->clock, __ATOMIC_RELAXED);
	st->api_records = __atomic_load_n(&h->api_records, __ATOMIC_ACQUIRE);
	if (st->api_records > GPU_API_RECORDS_MAX)
		st->api_records = GPU_API_RECORDS_UNKNOWN;
	st->nvtx = __atomic_load_n(&h->nvtx, __ATOMIC_ACQUIRE);
	if (st->nvtx > GPU_NVTX_MAX)
		st->nvtx = GPU_NVTX_NONE;
	memcpy(st->message, h->message, sizeof(st->message));
	st->message[sizeof(st->message) - 1] = '\0';
	st->launch_stacks =
	    __atomic_load_n(&h->launch_stacks, __ATOMIC_ACQUIRE);
	if (st->launch_stacks > GPU_STACKS_MAX)
		st->launch_stacks = GPU_STACKS_UNKNOWN;
	return 0;
}

const char *gpu_launch_stacks_why(uint32_t launch_stacks)
{
	switch (launch_stacks) {
	case GPU_STACKS_ON:
		return NULL;
	case GPU_STACKS_NO_PYTHON:
		return "the agent found no Python interpreter in the process";
	case GPU_STACKS_NO_CALLBACKS:
		return "this CUPTI has no callback API";
	case GPU_STACKS_SUBSCRIBED:
		return "CUPTI refused spyc's subscription to its callbacks";
	default:
		return "the agent did not say";
	}
}

void gpuchan_control(struct gpuchan *c, enum gpu_agent_control control)
{
	struct gpuchan_header *h = c->mem;

	if (h)
		__atomic_store_n(&h->control, (uint32_t)control,
				 __ATOMIC_RELEASE);
}

void gpuchan_set_py_layout(struct gpuchan *c,
			   const struct gpu_py_layout *layout)
{
	struct gpuchan_header *h = c->mem;

	if (!h || __atomic_load_n(&h->py.ready, __ATOMIC_ACQUIRE))
		return;
	memcpy(&h->py, layout, sizeof(*layout));
	h->py.ready = 0;
	__atomic_store_n(&h->py.ready, 1, __ATOMIC_RELEASE);
}

const char *gpu_agent_status_name(int status)
{
	static const char *const names[] = {
	    "waiting", "starting",	   "running",
	    "no-cuda", "no-cupti",	   "cupti-error",
	    "stopped", "already-attached", "other-cupti-client"};

	if (status < 0 || (size_t)status >= ARRAY_SIZE(names))
		return "unknown";
	return names[status];
}
