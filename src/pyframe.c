/* SPDX-License-Identifier: MIT */
/* Walking the target's Python threads and frames, one sample at a time. */
#include "pyframe.h"

#include "pyattr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "pyattr.h"
#include "util.h"

/* Largest data-stack chunk copied whole (CPython's are 16 KiB and up). */
#define CHUNK_MAX_BYTES (4u << 20)
/* Most data-stack chunks followed per thread. */
#define CHUNKS_MAX 64
/* Bytes of glibc's struct pthread searched for the tid field. */
#define PTHREAD_SCAN_BYTES 1024
/* Largest span of PyInterpreterState read for next and the threads. */
#define INTERP_HEAD_MAX 4096
/* Code object pointers on 3.14+ are tagged _PyStackRef: low bits. */
#define STACKREF_TAG_MASK ((uint64_t)7)

static const char *const drop_names[DROP_NR] = {
    [DROP_NONE] = "none",	   [DROP_READ] = "failed reads",
    [DROP_INVALID] = "torn reads", [DROP_DEPTH] = "too deep or looping",
    [DROP_GONE] = "process gone",
};

const char *thread_state_name(enum py_thread_state state)
{
	static const char *const names[] = {
	    [THREAD_UNKNOWN] = "unknown",
	    [THREAD_RUNNING] = "running",
	    [THREAD_IDLE] = "idle",
	    [THREAD_GIL_WAIT] = "waiting for the GIL",
	};

	if (state < 0 || state >= (int)ARRAY_SIZE(names))
		return "unknown";
	return names[state];
}

const char *drop_reason_name(enum drop_reason reason)
{
	if (reason < 0 || reason >= DROP_NR)
		return "unknown";
	return drop_names[reason];
}

static uint64_t get_ptr(const unsigned char *buf, long at)
{
	uint64_t v;

	memcpy(&v, buf + at, sizeof(v));
	return v;
}

/* Make room for n regions in the sampler's batched-read vectors. */
static void grow_iov(struct py_sampler *ps, size_t n)
{
	size_t a = ps->alloc_iov;

	ALLOC_GROW(ps->local, n, a);
	a = ps->alloc_iov;
	ALLOC_GROW(ps->remote, n, a);
	ps->alloc_iov = a;
}

static enum drop_reason read_error(int r)
{
	return r == -ESRCH ? DROP_GONE : DROP_READ;
}

void py_sample_release(struct py_sample *s)
{
	free(s->threads);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

void py_sample_keep_states(struct py_sample *s, const struct py_thread *before,
			   size_t n)
{
	size_t i, j;

	for (i = 0; i < s->nr_threads; i++) {
		for (j = 0; j < n; j++) {
			if (before[j].ident != s->threads[i].ident)
				continue;
			s->threads[i].state = before[j].state;
			s->threads[i].holds_gil = before[j].holds_gil;
		}
	}
}

void py_sampler_init(struct py_sampler *ps, const struct pyruntime *rt)
{
	const struct py_offsets *off = rt->off;
	long frame_len =
	    off->frame_size != OFF_NONE ? off->frame_size : off->iframe_size;

	memset(ps, 0, sizeof(*ps));
	ps->rt = rt;
	pycode_cache_init(&ps->codes, rt);
	ps->tstate_buf = xcalloc(1, (size_t)off->tstate_size);
	ps->frame_buf = xcalloc(1, (size_t)frame_len);
	ps->pthread_tid_at = -1;
}

void py_sampler_release(struct py_sampler *ps)
{
	size_t i;

	pycode_cache_release(&ps->codes);
	free(ps->tstate_buf);
	free(ps->frame_buf);
	for (i = 0; i < ps->alloc_chunks; i++)
		free(ps->chunks[i].buf);
	free(ps->chunks);
	free(ps->code_addrs);
	free(ps->addrqs);
	free(ps->entries);
	free(ps->headers);
	free(ps->local);
	free(ps->remote);
	free(ps->tids);
	for (i = 0; i < ps->nr_memos; i++)
		free(ps->memos[i].addrs);
	free(ps->memos);
	free(ps->batch);
	free(ps->walk_frames);
	for (i = 0; i < ps->nr_task_files; i++)
		close(ps->task_files[i].fd);
	free(ps->task_files);
	free(ps->names);
	memset(ps, 0, sizeof(*ps));
}

/*
 * entry: the frame is the first one its C-level evaluation call ran
 * (always up to 3.10, where each frame has its own call).
 */
static enum drop_reason push_frame(struct py_sampler *ps, struct py_sample *out,
				   uint64_t code, long addrq, int entry)
{
	if (out->nr_frames >= PY_MAX_DEPTH * 4)
		return DROP_DEPTH;
	if (out->nr_frames >= ps->alloc_walk) {
		size_t n = ps->alloc_walk;

		ALLOC_GROW(ps->code_addrs, out->nr_frames + 1, n);
		n = ps->alloc_walk;
		ALLOC_GROW(ps->addrqs, out->nr_frames + 1, n);
		n = ps->alloc_walk;
		ALLOC_GROW(ps->entries, out->nr_frames + 1, n);
		ps->alloc_walk = n;
	}
	ps->code_addrs[out->nr_frames] = code;
	ps->addrqs[out->nr_frames] = addrq;
	ps->entries[out->nr_frames] = (unsigned char)entry;
	out->nr_frames++;
	return DROP_NONE;
}

static struct py_frame_memo *frame_memo(struct py_sampler *ps, uint64_t tstate)
{
	struct py_frame_memo *m;
	size_t i;

	for (i = 0; i < ps->nr_memos; i++)
		if (ps->memos[i].tstate == tstate)
			return &ps->memos[i];
	/* Threads come and go: bound the memos, recycling the oldest. */
	if (ps->nr_memos >= PY_MAX_THREADS) {
		m = &ps->memos[0];
	} else {
		ALLOC_GROW(ps->memos, ps->nr_memos + 1, ps->alloc_memos);
		m = &ps->memos[ps->nr_memos++];
		memset(m, 0, sizeof(*m));
	}
	m->tstate = tstate;
	m->nr = 0;
	return m;
}

/*
 * Read last sample's frames of this thread in one process_vm_readv.
 * Returns how many there are; frame i is at batch + i * frame_size.
 */
static size_t read_memo_batch(struct py_sampler *ps,
			      const struct py_frame_memo *m)
{
	size_t fs = (size_t)ps->rt->off->frame_size, i;
	int r;

	if (!m->nr)
		return 0;
	if (m->nr * fs > ps->alloc_batch) {
		free(ps->batch);
		ps->alloc_batch = m->nr * fs * 2;
		ps->batch = xmalloc(ps->alloc_batch);
	}
	grow_iov(ps, m->nr);
	for (i = 0; i < m->nr; i++) {
		ps->local[i].iov_base = ps->batch + i * fs;
		ps->local[i].iov_len = fs;
		ps->remote[i].iov_base = (void *)(uintptr_t)m->addrs[i];
		ps->remote[i].iov_len = fs;
	}
	r = proc_readv(ps->rt->pid, ps->local, ps->remote, m->nr);
	/* A region that failed reads as zeros: it will not link up. */
	return r < 0 ? 0 : m->nr;
}

/*
 * Up to 3.10: a linked list of PyFrameObjects.  Frames seen last sample
 * come from one batched read; only new ones cost a read each.
 */
static enum drop_reason walk_frame_objects(struct py_sampler *ps,
					   uint64_t tstate, uint64_t frame,
					   struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	size_t fs = (size_t)off->frame_size;
	int lasti_units = ps->codes.kind == LINETABLE_310;
	struct py_frame_memo *m = frame_memo(ps, tstate);
	size_t batched = read_memo_batch(ps, m), pos = 0, depth = 0;
	enum drop_reason why = DROP_NONE;

	while (frame) {
		const unsigned char *f;
		int lasti, r;

		if (depth >= PY_MAX_DEPTH) {
			why = DROP_DEPTH;
			break;
		}
		/* Usually the batch lines up; after a change, look it up. */
		if (pos >= batched || m->addrs[pos] != frame)
			for (pos = 0; pos < batched; pos++)
				if (m->addrs[pos] == frame)
					break;
		if (pos < batched) {
			f = ps->batch + pos * fs;
			pos++;
		} else {
			r = proc_read(ps->rt->pid, frame, ps->frame_buf, fs);
			if (r) {
				why = read_error(r);
				break;
			}
			f = ps->frame_buf;
		}
		memcpy(&lasti, f + off->frame_lasti, sizeof(lasti));
		/* 3.10 counts f_lasti in 2-byte instructions, before bytes. */
		why = push_frame(
		    ps, out, get_ptr(f, off->frame_code),
		    lasti < 0 ? -1 : (long)lasti * (lasti_units ? 2 : 1), 1);
		if (why)
			break;
		ALLOC_GROW(ps->walk_frames, depth + 1, ps->alloc_walk_frames);
		ps->walk_frames[depth++] = frame;
		ps->root_frame = frame;
		frame = get_ptr(f, off->frame_back);
	}
	/* Remember this walk for the next sample, even a failed one. */
	ALLOC_GROW(m->addrs, depth, m->alloc);
	if (depth)
		memcpy(m->addrs, ps->walk_frames, depth * sizeof(*m->addrs));
	m->nr = depth;
	return why;
}

static struct py_region *new_region(struct py_sampler *ps)
{
	size_t old = ps->alloc_chunks;
	struct py_region *rg;

	ALLOC_GROW(ps->chunks, ps->nr_chunks + 1, ps->alloc_chunks);
	if (ps->alloc_chunks > old)
		memset(ps->chunks + old, 0,
		       (ps->alloc_chunks - old) * sizeof(*ps->chunks));
	rg = &ps->chunks[ps->nr_chunks];
	rg->len = 0;
	return rg;
}

/* Copy [addr, addr+len) of the target into a new region; 0 or -errno. */
static int read_region(struct py_sampler *ps, uint64_t addr, size_t len)
{
	struct py_region *rg = new_region(ps);
	int r;

	if (len > rg->alloc) {
		free(rg->buf);
		rg->buf = xmalloc(len);
		rg->alloc = len;
	}
	r = proc_read(ps->rt->pid, addr, rg->buf, len);
	if (r)
		return r;
	rg->addr = addr;
	rg->len = len;
	ps->nr_chunks++;
	return 0;
}

/*
 * 3.11+: copy the used part of the thread's newest data-stack chunk in
 * one read; most of its frames live there.
 */
static void read_current_chunk(struct py_sampler *ps)
{
	const struct py_offsets *off = ps->rt->off;
	uint64_t chunk, top;

	ps->nr_chunks = 0;
	ps->next_chunk = 0;
	if (off->tstate_datastack_top == OFF_NONE ||
	    off->chunk_data == OFF_NONE)
		return;
	chunk = get_ptr(ps->tstate_buf, off->tstate_datastack_chunk);
	top = get_ptr(ps->tstate_buf, off->tstate_datastack_top);
	if (!chunk || top <= chunk || top - chunk > CHUNK_MAX_BYTES)
		return;
	if (read_region(ps, chunk, (size_t)(top - chunk)))
		return;
	ps->next_chunk = get_ptr(ps->chunks[0].buf, off->chunk_previous);
}

/* Copy the next older chunk, up to its saved top; 0 or -1. */
static int read_older_chunk(struct py_sampler *ps)
{
	const struct py_offsets *off = ps->rt->off;
	unsigned char head[64];
	uint64_t chunk = ps->next_chunk, top;
	size_t len;

	ps->next_chunk = 0;
	if (!chunk || ps->nr_chunks >= CHUNKS_MAX ||
	    (size_t)off->chunk_data > sizeof(head) ||
	    proc_read(ps->rt->pid, chunk, head, (size_t)off->chunk_data))
		return -1;
	/* The saved top counts PyObject * slots after data[]. */
	top = get_ptr(head, off->chunk_top);
	len = (size_t)off->chunk_data + (size_t)top * 8;
	if (top > CHUNK_MAX_BYTES / 8 || read_region(ps, chunk, len))
		return -1;
	ps->next_chunk = get_ptr(head, off->chunk_previous);
	return 0;
}

/* The bytes of the interpreter frame at addr, from a chunk or a read. */
static const unsigned char *iframe_bytes(struct py_sampler *ps, uint64_t addr,
					 int *err)
{
	size_t len = (size_t)ps->rt->off->iframe_size;
	size_t i;

	for (;;) {
		for (i = 0; i < ps->nr_chunks; i++) {
			const struct py_region *rg = &ps->chunks[i];

			/* Torn pointers can be anything: no overflow. */
			if (addr >= rg->addr && rg->len >= len &&
			    addr - rg->addr <= rg->len - len)
				return rg->buf + (addr - rg->addr);
		}
		/* Frames of generators live outside the chunks. */
		if (!ps->next_chunk || read_older_chunk(ps))
			break;
	}
	*err = proc_read(ps->rt->pid, addr, ps->frame_buf, len);
	return *err ? NULL : ps->frame_buf;
}

/* 3.11+: _PyInterpreterFrames linked by previous, mostly in chunks. */
static enum drop_reason walk_interpreter_frames(struct py_sampler *ps,
						uint64_t frame,
						struct py_sample *out)
{
	size_t first = out->nr_frames;
	const struct py_offsets *off = ps->rt->off;
	size_t depth = 0;
	enum drop_reason why;

	read_current_chunk(ps);
	while (frame) {
		const unsigned char *f;
		uint64_t code;
		unsigned char owner;
		int err = 0;

		if (++depth > PY_MAX_DEPTH)
			return DROP_DEPTH;
		f = iframe_bytes(ps, frame, &err);
		if (!f)
			return read_error(err);
		owner = f[off->iframe_owner];
		code = get_ptr(f, off->iframe_code) & ~STACKREF_TAG_MASK;
		if (off->owner_cstack == OFF_NONE ||
		    owner != off->owner_cstack) {
			uint64_t instr = get_ptr(f, off->iframe_instr);
			uint64_t start =
			    code + (uint64_t)off->code_code_adaptive;

			why = push_frame(ps, out, code,
					 instr >= start ? (long)(instr - start)
							: -1,
					 off->iframe_is_entry != OFF_NONE &&
					     f[off->iframe_is_entry]);
			if (why)
				return why;
			ps->root_frame = frame;
		} else if (out->nr_frames > first) {
			/* 3.12+: a C-stack shim starts each eval call. */
			ps->entries[out->nr_frames - 1] = 1;
		}
		frame = get_ptr(f, off->iframe_previous);
	}
	return DROP_NONE;
}

static enum drop_reason walk_thread(struct py_sampler *ps, uint64_t tstate,
				    struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	uint64_t frame;
	int r;

	if (off->tstate_frame != OFF_NONE)
		return walk_frame_objects(
		    ps, tstate, get_ptr(ps->tstate_buf, off->tstate_frame),
		    out);
	if (off->tstate_cframe != OFF_NONE) {
		uint64_t cframe = get_ptr(ps->tstate_buf, off->tstate_cframe);

		frame = 0;
		if (cframe) {
			r = proc_read(ps->rt->pid,
				      cframe +
					  (uint64_t)off->cframe_current_frame,
				      &frame, sizeof(frame));
			if (r)
				return read_error(r);
		}
	} else {
		frame = get_ptr(ps->tstate_buf, off->tstate_current_frame);
	}
	return walk_interpreter_frames(ps, frame, out);
}

/* Read every frame's code object header in one go, then decode. */
static enum drop_reason resolve_codes(struct py_sampler *ps,
				      struct py_sample *out)
{
	size_t n = out->nr_frames, hl = ps->codes.header_len, i, nio = 0;
	int r;

	if (!n)
		return DROP_NONE;
	if (n * hl > ps->alloc_headers) {
		free(ps->headers);
		ps->alloc_headers = n * hl * 2;
		ps->headers = xmalloc(ps->alloc_headers);
	}
	grow_iov(ps, n);
	for (i = 0; i < n; i++) {
		if (!ps->code_addrs[i])
			return DROP_INVALID;
		/* Recursion repeats a code object: read it once. */
		if (nio && ps->code_addrs[i] == ps->code_addrs[i - 1])
			continue;
		ps->local[nio].iov_base = ps->headers + nio * hl;
		ps->local[nio].iov_len = hl;
		ps->remote[nio].iov_base = (void *)(uintptr_t)ps->code_addrs[i];
		ps->remote[nio].iov_len = hl;
		nio++;
	}
	r = proc_readv(ps->rt->pid, ps->local, ps->remote, nio);
	if (r < 0)
		return read_error(r);
	if ((size_t)r != nio)
		return DROP_READ;
	ALLOC_GROW(out->frames, n, out->alloc_frames);
	nio = 0;
	for (i = 0; i < n; i++) {
		struct pycode *code;

		if (i && ps->code_addrs[i] == ps->code_addrs[i - 1]) {
			out->frames[i].code = out->frames[i - 1].code;
		} else {
			code = pycode_lookup(&ps->codes, ps->code_addrs[i],
					     ps->headers + nio * hl);
			nio++;
			if (!code)
				return DROP_INVALID;
			out->frames[i].code = code;
		}
		out->frames[i].entry = ps->entries[i];
		out->frames[i].line =
		    pycode_line(&ps->codes, out->frames[i].code, ps->addrqs[i]);
	}
	return DROP_NONE;
}

static int is_task(const long *tids, size_t n, long tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/*
 * Up to 3.10 the thread state has no native id, but glibc's struct
 * pthread (at the address of pthread_t) holds the tid.  Its offset
 * varies between glibc builds: find the first offset at which every
 * thread's struct holds one of the process's task ids.  A thread that
 * exits while it is looked at (its tid already cleared or reaped) may
 * miss, so with three threads or more one miss is allowed.
 */
static void find_pthread_tid_offset(struct py_sampler *ps,
				    const struct py_sample *out,
				    const long *tasks, size_t nr_tasks)
{
	unsigned char *bufs;
	size_t i, n = out->nr_threads;
	long at;

	if (!n || n > 64)
		return;
	bufs = xmalloc(n * PTHREAD_SCAN_BYTES);
	/* An unreadable struct (its thread gone) reads as zeros: a miss. */
	for (i = 0; i < n; i++)
		if (proc_read(ps->rt->pid, out->threads[i].ident,
			      bufs + i * PTHREAD_SCAN_BYTES,
			      PTHREAD_SCAN_BYTES))
			memset(bufs + i * PTHREAD_SCAN_BYTES, 0,
			       PTHREAD_SCAN_BYTES);
	for (at = 0; at + 4 <= PTHREAD_SCAN_BYTES; at += 4) {
		size_t misses = 0;

		for (i = 0; i < n; i++) {
			int32_t v;

			memcpy(&v, bufs + i * PTHREAD_SCAN_BYTES + at, 4);
			if ((v <= 0 || !is_task(tasks, nr_tasks, v)) &&
			    ++misses > (n >= 3 ? 1u : 0u))
				break;
		}
		if (i == n) {
			ps->pthread_tid_at = at;
			break;
		}
	}
	free(bufs);
}

static void fill_native_tids(struct py_sampler *ps, struct py_sample *out)
{
	long tasks[PY_MAX_THREADS];
	size_t nr_tasks, i, nio = 0;
	int32_t tids[PY_MAX_THREADS];
	size_t slot[PY_MAX_THREADS];

	if (ps->pthread_tid_at < 0) {
		nr_tasks = proc_tasks(ps->rt->pid, tasks, ARRAY_SIZE(tasks));
		find_pthread_tid_offset(ps, out, tasks, nr_tasks);
		if (ps->pthread_tid_at < 0)
			return;
	}
	grow_iov(ps, out->nr_threads);
	for (i = 0; i < out->nr_threads && nio < PY_MAX_THREADS; i++) {
		/* known_idle() may have read this one already. */
		if (out->threads[i].tid)
			continue;
		slot[nio] = i;
		ps->local[nio].iov_base = &tids[nio];
		ps->local[nio].iov_len = 4;
		ps->remote[nio].iov_base =
		    (void *)(uintptr_t)(out->threads[i].ident +
					(uint64_t)ps->pthread_tid_at);
		ps->remote[nio].iov_len = 4;
		nio++;
	}
	if (proc_readv(ps->rt->pid, ps->local, ps->remote, nio) < 0)
		return;
	for (i = 0; i < nio; i++)
		out->threads[slot[i]].tid = tids[i] > 0 ? tids[i] : 0;
}

/* Bytes of a pthread mutex or condition variable, at most. */
#define GIL_SYNC_SIZE 64

/* The GIL of one interpreter, as this sample saw it. */
struct gil_view {
	int locked;
	uint64_t holder; /* PyThreadState * of the last holder */
	uint64_t lo, hi; /* its struct: where waiters' futexes are */
};

/* Read the GIL serving interp.  Leaves g zeroed if unknown. */
static void read_gil(struct py_sampler *ps, uint64_t interp, struct gil_view *g)
{
	const struct pyruntime *rt = ps->rt;
	const struct py_offsets *off = rt->off;
	unsigned char buf[64];
	uint64_t gil = 0;
	int32_t locked;
	long span;
	size_t i;

	memset(g, 0, sizeof(*g));
	if (rt->gil_locked && rt->gil_last_holder) {
		/* 3.6: static variables in ceval_gil.h */
		if (proc_read(rt->pid, rt->gil_locked, &locked,
			      sizeof(locked)) ||
		    proc_read(rt->pid, rt->gil_last_holder, &g->holder,
			      sizeof(g->holder)))
			return;
		g->locked = locked > 0;
		/*
		 * A waiter blocks on gil_mutex or gil_cond; a thread asked to
		 * drop the GIL waits on switch_cond until another takes it.
		 * The four sit side by side: one span covers them.
		 */
		for (i = 0; i < ARRAY_SIZE(rt->gil_sync); i++) {
			uint64_t a = rt->gil_sync[i];

			if (!a)
				continue;
			if (!g->lo || a < g->lo)
				g->lo = a;
			if (a + GIL_SYNC_SIZE > g->hi)
				g->hi = a + GIL_SYNC_SIZE;
		}
		/* Not side by side after all: no guess. */
		if (g->hi - g->lo > 4 * GIL_SYNC_SIZE)
			g->lo = g->hi = 0;
		return;
	}
	if (off->gil_locked == OFF_NONE || off->gil_last_holder == OFF_NONE)
		return;
	if (off->runtime_gil != OFF_NONE && rt->runtime)
		gil = rt->runtime + (uint64_t)off->runtime_gil;
	else if (off->interp_gil_ptr != OFF_NONE)
		proc_read(rt->pid, interp + (uint64_t)off->interp_gil_ptr, &gil,
			  sizeof(gil));
	else if (off->interp_gil != OFF_NONE)
		gil = interp + (uint64_t)off->interp_gil;
	span = (off->gil_locked > off->gil_last_holder ? off->gil_locked
						       : off->gil_last_holder) +
	       8;
	if (!gil || span > (long)sizeof(buf) ||
	    proc_read(rt->pid, gil, buf, (size_t)span))
		return;
	memcpy(&locked, buf + off->gil_locked, sizeof(locked));
	g->locked = locked > 0;
	g->holder = get_ptr(buf, off->gil_last_holder);
	g->lo = gil;
	g->hi =
	    gil + (uint64_t)(off->gil_size != OFF_NONE ? off->gil_size : span);
}

/* Read a /proc file's first line (without its newline) into buf. */
static void read_line(const char *path, char *buf, size_t size)
{
	proc_read_text(path, buf, size);
	buf[strcspn(buf, "\n")] = '\0';
}

/* What spyc keeps open or knows about thread tid, or NULL if gone. */
static struct py_task_file *task_file(struct py_sampler *ps, long tid)
{
	struct py_task_file *tf;
	char path[64];
	size_t i;
	int fd;

	for (i = 0; i < ps->nr_task_files; i++)
		if (ps->task_files[i].tid == tid)
			return &ps->task_files[i];
	/* Threads come and go: start over rather than grow forever. */
	if (ps->nr_task_files >= PY_MAX_THREADS) {
		for (i = 0; i < ps->nr_task_files; i++)
			close(ps->task_files[i].fd);
		ps->nr_task_files = 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)ps->rt->pid,
		 tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ALLOC_GROW(ps->task_files, ps->nr_task_files + 1, ps->alloc_task_files);
	tf = &ps->task_files[ps->nr_task_files++];
	tf->tid = tid;
	tf->fd = fd;
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/comm", (int)ps->rt->pid,
		 tid);
	read_line(path, tf->comm, sizeof(tf->comm));
	return tf;
}

static void forget_task(struct py_sampler *ps, long tid)
{
	size_t i;

	for (i = 0; i < ps->nr_task_files; i++) {
		if (ps->task_files[i].tid != tid)
			continue;
		close(ps->task_files[i].fd);
		ps->task_files[i] = ps->task_files[--ps->nr_task_files];
		return;
	}
}

/* The scheduler state letter of a thread (proc(5): R, S, D, ...), or 0. */
static char task_state(struct py_sampler *ps, long tid)
{
	char buf[512], *p;
	ssize_t n;
	struct py_task_file *tf = task_file(ps, tid);

	if (!tf)
		return 0;
	n = pread(tf->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		forget_task(ps, tid);
		return 0;
	}
	buf[n] = '\0';
	/* The state follows the last ')': the name may hold one. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* x86-64's futex(2); /proc/PID/task/TID/syscall gives its first argument. */
#define SYSCALL_FUTEX 202

/* Is tid blocked in a futex inside [lo, hi)?  That is a GIL wait. */
static int waits_on(pid_t pid, long tid, uint64_t lo, uint64_t hi)
{
	char path[64], buf[256];
	unsigned long long uaddr;
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall", (int)pid,
		 tid);
	if (proc_read_text(path, buf, sizeof(buf)) <= 0)
		return 0;
	if (sscanf(buf, "%ld %llx", &nr, &uaddr) != 2 || nr != SYSCALL_FUTEX)
		return 0;
	return uaddr >= lo && uaddr < hi;
}

/*
 * Is t known to be off the CPU, before its frames are read?  Finds its
 * tid first if the thread state does not hold it (up to 3.10).
 */
static int known_idle(struct py_sampler *ps, struct py_thread *t)
{
	char st;

	if (!t->tid && ps->pthread_tid_at >= 0) {
		int32_t tid = 0;

		if (!proc_read(ps->rt->pid,
			       t->ident + (uint64_t)ps->pthread_tid_at, &tid,
			       sizeof(tid)) &&
		    tid > 0)
			t->tid = tid;
	}
	if (!t->tid)
		return 0;
	st = task_state(ps, t->tid);
	return st && st != 'R' && st != 'D';
}

/* Reads of a thread's name that may fail before it is given up on. */
#define NAME_TRIES 3

/* Is code threading's Thread._bootstrap or _bootstrap_inner? */
static int is_thread_bootstrap(const struct pycode *code)
{
	const char *name = strrchr(code->name, '.');
	const char *file = strrchr(code->filename, '/');

	name = name ? name + 1 : code->name;
	file = file ? file + 1 : code->filename;
	return (!strcmp(name, "_bootstrap") ||
		!strcmp(name, "_bootstrap_inner")) &&
	       !strcmp(file, "threading.py");
}

/*
 * The name threading gave each thread it started: the Thread object is
 * the first local (self) of the outermost frame, threading's
 * _bootstrap, and its name the str attribute _name.  Looked up once per
 * thread: a new thread can reuse an old one's thread state and frame
 * memory, but not (for a long while) its tid.
 */
static void python_names(struct py_sampler *ps, struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	long locals = off->frame_localsplus != OFF_NONE
			  ? off->frame_localsplus
			  : off->iframe_localsplus;
	size_t i, j;

	if (locals == OFF_NONE || !pyattr_supported(off))
		return;
	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		struct py_name_memo *nm = NULL;
		struct strbuf sb = STRBUF_INIT;
		uint64_t self;
		int r;

		if (!t->root_frame || !t->depth)
			continue;
		/* Threads keep their order between samples: try i first. */
		for (j = 0; j < ps->nr_names && !nm; j++) {
			size_t k = (i + j) % ps->nr_names;

			if (ps->names[k].tstate == t->tstate &&
			    ps->names[k].root_frame == t->root_frame &&
			    ps->names[k].tid == t->tid)
				nm = &ps->names[k];
		}
		if (!nm) {
			/* Threads come and go: start over, not grow forever. */
			if (ps->nr_names >= PY_MAX_THREADS)
				ps->nr_names = 0;
			ALLOC_GROW(ps->names, ps->nr_names + 1,
				   ps->alloc_names);
			nm = &ps->names[ps->nr_names++];
			memset(nm, 0, sizeof(*nm));
			nm->tstate = t->tstate;
			nm->root_frame = t->root_frame;
			nm->tid = t->tid;
		}
		if (nm->tries < NAME_TRIES &&
		    is_thread_bootstrap(
			out->frames[t->first + t->depth - 1].code)) {
			r = proc_read(ps->rt->pid,
				      t->root_frame + (uint64_t)locals, &self,
				      sizeof(self));
			if (!r)
				r = pyattr_str(ps->rt->pid, off, self, "_name",
					       &sb);
			/* A torn read: try again next sample, a few times. */
			if (r && r != -ENOENT) {
				nm->tries++;
				strbuf_release(&sb);
				continue;
			}
			utf8_truncate(nm->name, sizeof(nm->name), sb.buf);
			strbuf_release(&sb);
		}
		nm->tries = NAME_TRIES;
		memcpy(t->name, nm->name, sizeof(t->name));
	}
}

/* OS thread names that say more than the process's own name. */
static void name_threads(struct py_sampler *ps, struct py_sample *out)
{
	size_t i;

	if (!ps->process_name[0]) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)ps->rt->pid);
		read_line(path, ps->process_name, sizeof(ps->process_name));
	}
	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		struct py_task_file *tf = t->tid ? task_file(ps, t->tid) : NULL;

		/* A name from threading comes first. */
		if (!t->name[0] && tf && tf->comm[0] &&
		    strcmp(tf->comm, ps->process_name))
			memcpy(t->name, tf->comm, sizeof(tf->comm));
	}
}

/* Fill in what the commands asked for: states, GIL holder and waiters. */
static void annotate_threads(struct py_sampler *ps, struct py_sample *out,
			     const struct gil_view *gil)
{
	size_t i;

	for (i = 0; i < out->nr_threads; i++) {
		struct py_thread *t = &out->threads[i];
		char st;

		t->holds_gil =
		    ps->want_gil && gil->locked && gil->holder == t->tstate;
		if (t->skipped) {
			t->state = THREAD_IDLE;
			continue;
		}
		t->state = THREAD_UNKNOWN;
		if (!ps->want_state || !t->tid)
			continue;
		st = task_state(ps, t->tid);
		if (!st)
			continue;
		/* R runs or is runnable; D is in the kernel on its behalf. */
		if (st == 'R' || st == 'D' || t->holds_gil)
			t->state = THREAD_RUNNING;
		else if (ps->want_gil && gil->hi &&
			 waits_on(ps->rt->pid, t->tid, gil->lo, gil->hi))
			t->state = THREAD_GIL_WAIT;
		else
			t->state = THREAD_IDLE;
	}
}

enum drop_reason py_sampler_sample(struct py_sampler *ps, struct py_sample *out)
{
	const struct py_offsets *off = ps->rt->off;
	uint64_t interp;
	size_t interps = 0;
	struct gil_view gil;
	enum drop_reason why;
	int r;

	out->nr_threads = 0;
	out->nr_frames = 0;
	r = pyruntime_interp_head(ps->rt, &interp);
	if (r)
		return read_error(r);
	/* The main interpreter's GIL: the one Python threads share. */
	memset(&gil, 0, sizeof(gil));
	if (ps->want_gil && interp)
		read_gil(ps, interp, &gil);
	while (interp) {
		/* Both fields in one read: they sit near the start. */
		unsigned char head[INTERP_HEAD_MAX];
		long lo = off->interp_next < off->interp_threads_head
			      ? off->interp_next
			      : off->interp_threads_head;
		long hi = off->interp_next < off->interp_threads_head
			      ? off->interp_threads_head
			      : off->interp_next;
		uint64_t tstate, next_interp;
		size_t threads = 0;

		if (++interps > PY_MAX_INTERPS)
			return DROP_DEPTH;
		if (hi + 8 - lo > INTERP_HEAD_MAX)
			return DROP_INVALID;
		r = proc_read(ps->rt->pid, interp + (uint64_t)lo, head,
			      (size_t)(hi + 8 - lo));
		if (r)
			return read_error(r);
		tstate = get_ptr(head, off->interp_threads_head - lo);
		next_interp = get_ptr(head, off->interp_next - lo);
		while (tstate) {
			struct py_thread *t;

			if (++threads > PY_MAX_THREADS)
				return DROP_DEPTH;
			r = proc_read(ps->rt->pid, tstate, ps->tstate_buf,
				      (size_t)off->tstate_size);
			if (r)
				return read_error(r);
			if (get_ptr(ps->tstate_buf, off->tstate_interp) !=
			    interp)
				return DROP_INVALID;
			ALLOC_GROW(out->threads, out->nr_threads + 1,
				   out->alloc_threads);
			t = &out->threads[out->nr_threads++];
			t->ident =
			    get_ptr(ps->tstate_buf, off->tstate_thread_id);
			t->tid =
			    off->tstate_native_thread_id == OFF_NONE
				? 0
				: (long)get_ptr(ps->tstate_buf,
						off->tstate_native_thread_id);
			t->tstate = tstate;
			t->state = THREAD_UNKNOWN;
			t->holds_gil = 0;
			t->name[0] = '\0';
			t->first = out->nr_frames;
			t->skipped = ps->skip_idle && ps->want_state &&
				     known_idle(ps, t);
			ps->root_frame = 0;
			if (!t->skipped) {
				why = walk_thread(ps, tstate, out);
				if (why)
					return why;
			}
			t->root_frame = ps->root_frame;
			t->depth = out->nr_frames - t->first;
			tstate = get_ptr(ps->tstate_buf, off->tstate_next);
		}
		interp = next_interp;
	}
	why = resolve_codes(ps, out);
	if (why)
		return why;
	if (off->tstate_native_thread_id == OFF_NONE)
		fill_native_tids(ps, out);
	if (ps->want_state || ps->want_gil)
		annotate_threads(ps, out, &gil);
	if (ps->want_names) {
		python_names(ps, out);
		name_threads(ps, out);
	}
	return DROP_NONE;
}
