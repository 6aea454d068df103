/* SPDX-License-Identifier: MIT */
/* Aggregation of sampled stacks: interned frames, threads, unique stacks. */
#include "profile/stacks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/*
 * Frame ids of entries live in chunks of this many ids (256 KiB), so that
 * a new stack costs no allocation until a chunk fills up, and an entry's
 * frames pointer stays valid for the life of the stacks.
 */
#define CHUNK_IDS (64 * 1024)
/* Bytes of string storage per block of the string pool. */
#define STRBLOCK_SIZE (64 * 1024)
/* FNV's 64-bit prime, for hash_words. */
#define FNV_PRIME 0x100000001b3ULL
/* The first size of every hash index; each is a power of two. */
#define INDEX_MIN 64

struct stacks_chunk {
	struct stacks_chunk *next;
	size_t used, size;
	uint32_t ids[];
};

struct strpool_block {
	struct strpool_block *next;
	size_t used, size;
	char data[];
};

struct strpool_slot {
	const char *str; /* NULL when the slot is empty */
	uint64_t hash;
};

/* Each distinct string stored once, at a stable address. */
struct stacks_strpool {
	struct strpool_block *blocks;
	struct strpool_slot *index;
	size_t nr, index_size;
};

static uint64_t hash_str(const char *s)
{
	return fnv1a(FNV_INIT, s, strlen(s) + 1);
}

static void strpool_rehash(struct stacks_strpool *pool, size_t size)
{
	struct strpool_slot *old = pool->index;
	size_t old_size = pool->index_size;
	size_t i, j;

	pool->index = xcalloc(size, sizeof(*pool->index));
	pool->index_size = size;
	for (i = 0; i < old_size; i++) {
		if (!old[i].str)
			continue;
		j = old[i].hash & (size - 1);
		while (pool->index[j].str)
			j = (j + 1) & (size - 1);
		pool->index[j] = old[i];
	}
	free(old);
}

static const char *strpool_store(struct stacks_strpool *pool, const char *s,
				 size_t len)
{
	struct strpool_block *b = pool->blocks;
	char *p;

	if (!b || b->size - b->used < len + 1) {
		size_t size = len + 1 > STRBLOCK_SIZE ? len + 1 : STRBLOCK_SIZE;

		b = xmalloc(sizeof(*b) + size);
		b->size = size;
		b->used = 0;
		b->next = pool->blocks;
		pool->blocks = b;
	}
	p = b->data + b->used;
	memcpy(p, s, len + 1);
	b->used += len + 1;
	return p;
}

/* Return the pool's copy of s, adding it if new. */
static const char *strpool_intern(struct stacks_strpool *pool, const char *s)
{
	uint64_t hash = hash_str(s);
	size_t mask, i;
	const char *copy;

	if (2 * (pool->nr + 1) > pool->index_size)
		strpool_rehash(pool, pool->index_size ? 2 * pool->index_size
						      : INDEX_MIN);
	mask = pool->index_size - 1;
	for (i = hash & mask; pool->index[i].str; i = (i + 1) & mask)
		if (pool->index[i].hash == hash &&
		    !strcmp(pool->index[i].str, s))
			return pool->index[i].str;
	copy = strpool_store(pool, s, strlen(s));
	pool->index[i].str = copy;
	pool->index[i].hash = hash;
	pool->nr++;
	return copy;
}

static void strpool_free(struct stacks_strpool *pool)
{
	struct strpool_block *b, *next;

	if (!pool)
		return;
	for (b = pool->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	free(pool->index);
	free(pool);
}

void stacks_init(struct stacks *st)
{
	memset(st, 0, sizeof(*st));
}

void stacks_release(struct stacks *st)
{
	struct stacks_chunk *c, *next;
	size_t i;

	for (c = st->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(st->entry_hash);
	free(st->entry_index);
	free(st->seq_index);
	free(st->frame_index);
	for (i = 0; i < st->nr_threads; i++)
		free(st->threads[i].name);
	free(st->entries);
	free(st->threads);
	free(st->frames);
	strpool_free(st->strings);
	stacks_init(st);
}

static uint64_t hash_frame(const char *name, const char *file, int line)
{
	uint64_t h = fnv1a(FNV_INIT, name, strlen(name) + 1);

	h = fnv1a(h, file, strlen(file) + 1);
	return fnv1a(h, &line, sizeof(line));
}

/*
 * Both indexes hold id + 1 in each slot, 0 meaning empty, and are kept at
 * most half full so that linear probing stays short.
 */
static void frame_index_rehash(struct stacks *st, size_t size)
{
	size_t i, j;

	free(st->frame_index);
	st->frame_index = xcalloc(size, sizeof(*st->frame_index));
	st->frame_index_size = size;
	for (i = 0; i < st->nr_frames; i++) {
		const struct stack_frame *f = &st->frames[i];

		j = hash_frame(f->name, f->file, f->line) & (size - 1);
		while (st->frame_index[j])
			j = (j + 1) & (size - 1);
		st->frame_index[j] = (uint32_t)i + 1;
	}
}

uint32_t stacks_frame(struct stacks *st, const char *name, const char *file,
		      int line)
{
	struct stack_frame *f;
	uint64_t hash;
	size_t mask, i;
	uint32_t id;

	if (!name)
		name = "";
	if (!file)
		file = "";
	if (2 * (st->nr_frames + 1) > st->frame_index_size)
		frame_index_rehash(st, st->frame_index_size
					   ? 2 * st->frame_index_size
					   : INDEX_MIN);
	hash = hash_frame(name, file, line);
	mask = st->frame_index_size - 1;
	for (i = hash & mask; st->frame_index[i]; i = (i + 1) & mask) {
		f = &st->frames[st->frame_index[i] - 1];
		if (f->line == line && !strcmp(f->name, name) &&
		    !strcmp(f->file, file))
			return st->frame_index[i] - 1;
	}
	id = (uint32_t)st->nr_frames;
	ALLOC_GROW(st->frames, st->nr_frames + 1, st->alloc_frames);
	f = &st->frames[st->nr_frames++];
	if (!st->strings)
		st->strings = xcalloc(1, sizeof(*st->strings));
	f->name = strpool_intern(st->strings, name);
	f->file = strpool_intern(st->strings, file);
	f->line = line;
	st->frame_index[i] = id + 1;
	return id;
}

uint32_t stacks_thread(struct stacks *st, uint64_t ident, long tid,
		       const char *name)
{
	return stacks_thread_in(st, NULL, ident, tid, name);
}

uint32_t stacks_thread_in(struct stacks *st, const char *process,
			  uint64_t ident, long tid, const char *name)
{
	struct stack_thread *t;
	size_t i;

	if (process) {
		if (!st->strings)
			st->strings = xcalloc(1, sizeof(*st->strings));
		process = strpool_intern(st->strings, process);
	}
	/*
	 * A process has few threads; a scan beats a hash here.  A thread
	 * that ended leaves its ident (its pthread_t) to the next one, but
	 * not its tid: the newest thread of that ident comes first.  A
	 * forked child's main thread has its parent's ident.  Where both
	 * have a tid, it decides alone: the kernel's id of a task is checked
	 * against the target's tasks, its pthread_t is not.
	 */
	for (i = st->nr_threads; i-- > 0;) {
		t = &st->threads[i];
		if (t->process != process ||
		    (t->tid && tid ? t->tid != tid : t->ident != ident))
			continue;
		if (!t->name && name)
			t->name = xstrdup(name);
		if (!t->tid && tid)
			t->tid = tid;
		return (uint32_t)i;
	}
	ALLOC_GROW(st->threads, st->nr_threads + 1, st->alloc_threads);
	t = &st->threads[st->nr_threads];
	t->process = process;
	t->ident = ident;
	t->tid = tid;
	t->name = name ? xstrdup(name) : NULL;
	t->samples = 0;
	t->last_entry = 0;
	return (uint32_t)st->nr_threads++;
}

/*
 * FNV-1a's step a 32-bit word at a time (a stack is hashed once a sample
 * per thread: a quarter of the multiplications of byte by byte), then
 * MurmurHash3's fmix64, so that the low bits an index uses depend on
 * every bit of every word.
 */
static uint64_t hash_words(uint64_t h, const uint32_t *words, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= words[i];
		h *= FNV_PRIME;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t hash_entry(uint32_t thread, const uint32_t *frames,
			   uint32_t depth)
{
	uint64_t h = (FNV_INIT ^ thread) * FNV_PRIME;

	h = (h ^ depth) * FNV_PRIME;
	return hash_words(h, frames, depth);
}

static void entry_index_rehash(struct stacks *st, size_t size)
{
	size_t i, j;

	free(st->entry_index);
	st->entry_index = xcalloc(size, sizeof(*st->entry_index));
	st->entry_index_size = size;
	for (i = 0; i < st->nr_entries; i++) {
		j = st->entry_hash[i] & (size - 1);
		while (st->entry_index[j])
			j = (j + 1) & (size - 1);
		st->entry_index[j] = (uint32_t)i + 1;
	}
}

/* Copy depth frame ids into chunk storage and return where they went. */
static const uint32_t *chunk_store(struct stacks *st, const uint32_t *frames,
				   uint32_t depth)
{
	struct stacks_chunk *c = st->chunks;
	uint32_t *p;

	if (!c || c->size - c->used < depth) {
		size_t size = depth > CHUNK_IDS ? depth : CHUNK_IDS;

		c = xmalloc(sizeof(*c) + size * sizeof(c->ids[0]));
		c->size = size;
		c->used = 0;
		c->next = st->chunks;
		st->chunks = c;
	}
	p = c->ids + c->used;
	if (depth)
		memcpy(p, frames, depth * sizeof(*frames));
	c->used += depth;
	return p;
}

static uint64_t hash_seq(const uint32_t *frames, uint32_t depth)
{
	uint64_t h = fnv1a(FNV_INIT, &depth, sizeof(depth));

	return depth ? fnv1a(h, frames, depth * sizeof(*frames)) : h;
}

/* The slot of seq_index that holds frames, or the empty one it would take. */
static size_t seq_slot(const struct stacks *st, const uint32_t *frames,
		       uint32_t depth)
{
	size_t mask = st->seq_index_size - 1, i;

	for (i = hash_seq(frames, depth) & mask; st->seq_index[i];
	     i = (i + 1) & mask) {
		const struct stack_entry *e =
		    &st->entries[st->seq_index[i] - 1];

		if (e->depth == depth &&
		    (!depth ||
		     !memcmp(e->frames, frames, depth * sizeof(*frames))))
			break;
	}
	return i;
}

static void seq_index_rehash(struct stacks *st, size_t size)
{
	size_t i, slot;

	free(st->seq_index);
	st->seq_index = xcalloc(size, sizeof(*st->seq_index));
	st->seq_index_size = size;
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];

		slot = seq_slot(st, e->frames, e->depth);
		if (!st->seq_index[slot])
			st->seq_index[slot] = (uint32_t)i + 1;
	}
}

/*
 * The frames array of an entry: the one an entry of any thread already
 * has for the same frames, else a copy in chunk storage.  id: the new
 * entry's id, recorded as the sequence's owner when it is new.
 */
static const uint32_t *shared_frames(struct stacks *st, const uint32_t *frames,
				     uint32_t depth, size_t id)
{
	const uint32_t *stored;
	size_t slot;

	if (2 * (st->nr_seqs + 1) > st->seq_index_size)
		seq_index_rehash(st, st->seq_index_size ? 2 * st->seq_index_size
							: INDEX_MIN);
	slot = seq_slot(st, frames, depth);
	if (st->seq_index[slot])
		return st->entries[st->seq_index[slot] - 1].frames;
	stored = chunk_store(st, frames, depth);
	st->seq_index[slot] = (uint32_t)id + 1;
	st->nr_seqs++;
	return stored;
}

static int same_entry(const struct stack_entry *e, uint32_t thread,
		      const uint32_t *frames, uint32_t depth)
{
	return e->thread == thread && e->depth == depth &&
	       (!depth || !memcmp(e->frames, frames, depth * sizeof(*frames)));
}

static struct stack_entry *find_entry(const struct stacks *st, uint64_t hash,
				      uint32_t thread, const uint32_t *frames,
				      uint32_t depth)
{
	size_t mask, i;
	uint32_t id;

	if (!st->entry_index_size)
		return NULL;
	mask = st->entry_index_size - 1;
	for (i = hash & mask; st->entry_index[i]; i = (i + 1) & mask) {
		id = st->entry_index[i] - 1;
		if (st->entry_hash[id] == hash &&
		    same_entry(&st->entries[id], thread, frames, depth))
			return &st->entries[id];
	}
	return NULL;
}

static struct stack_entry *new_entry(struct stacks *st, uint64_t hash,
				     uint32_t thread, const uint32_t *frames,
				     uint32_t depth)
{
	struct stack_entry *e;
	size_t mask, i, old_alloc;

	/* Validate a stack once, when first seen, so writers can trust it. */
	for (i = 0; i < depth; i++)
		if (frames[i] >= st->nr_frames) {
			error("stacks_add: bad frame id %" PRIu32, frames[i]);
			return NULL;
		}
	if (2 * (st->nr_entries + 1) > st->entry_index_size)
		entry_index_rehash(st, st->entry_index_size
					   ? 2 * st->entry_index_size
					   : INDEX_MIN);
	old_alloc = st->alloc_entries;
	ALLOC_GROW(st->entries, st->nr_entries + 1, st->alloc_entries);
	if (st->alloc_entries != old_alloc)
		st->entry_hash =
		    xrealloc(st->entry_hash,
			     st->alloc_entries * sizeof(*st->entry_hash));
	mask = st->entry_index_size - 1;
	for (i = hash & mask; st->entry_index[i]; i = (i + 1) & mask)
		;
	st->entry_index[i] = (uint32_t)st->nr_entries + 1;
	st->entry_hash[st->nr_entries] = hash;
	e = &st->entries[st->nr_entries];
	e->thread = thread;
	e->depth = depth;
	e->frames = NULL;
	e->count = 0;
	e->frames = shared_frames(st, frames, depth, st->nr_entries);
	st->nr_entries++;
	return e;
}

uint32_t stacks_add(struct stacks *st, uint32_t thread, const uint32_t *frames,
		    size_t depth, uint64_t count)
{
	struct stack_thread *t;
	struct stack_entry *e;
	uint64_t hash;

	if (thread >= st->nr_threads || depth > UINT32_MAX) {
		error("stacks_add: bad thread %" PRIu32 " or depth %zu", thread,
		      depth);
		return STACKS_NO_ENTRY;
	}
	t = &st->threads[thread];
	e = t->last_entry ? &st->entries[t->last_entry - 1] : NULL;
	if (!e || !same_entry(e, thread, frames, (uint32_t)depth)) {
		hash = hash_entry(thread, frames, (uint32_t)depth);
		e = find_entry(st, hash, thread, frames, (uint32_t)depth);
		if (!e)
			e = new_entry(st, hash, thread, frames,
				      (uint32_t)depth);
		if (!e)
			return STACKS_NO_ENTRY;
		t = &st->threads[thread];
		t->last_entry = (uint32_t)(e - st->entries) + 1;
	}
	e->count += count;
	t->samples += count;
	st->total_samples += count;
	return (uint32_t)(e - st->entries);
}

void stacks_thread_label(const struct stack_thread *t, char *buf, size_t size)
{
	char tid[32] = "";

	if (!size)
		return;
	if (t->tid)
		snprintf(tid, sizeof(tid), " (tid %ld)", t->tid);
	if (t->name)
		snprintf(buf, size, "%s%s", t->name, tid);
	else
		snprintf(buf, size, "thread 0x%" PRIx64 "%s", t->ident, tid);
}

void stacks_thread_full_label(const struct stack_thread *t, char *buf,
			      size_t size)
{
	size_t n;

	if (!size)
		return;
	if (!t->process) {
		stacks_thread_label(t, buf, size);
		return;
	}
	snprintf(buf, size, "%s: ", t->process);
	n = strlen(buf);
	stacks_thread_label(t, buf + n, size - n);
}
