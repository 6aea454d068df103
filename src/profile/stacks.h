/* SPDX-License-Identifier: MIT */
/* Aggregation of sampled stacks: interned frames, threads, and weighted unique
 * stacks. */
#ifndef SPYC_STACKS_H
#define SPYC_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One distinct frame: a function at a line.  Strings are owned by stacks. */
struct stack_frame {
	const char *name; /* qualified where the version has it */
	const char *file;
	int line; /* 0 when unknown */
};

/* One sampled thread.  name may be NULL. */
struct stack_thread {
	/*
	 * Its process, "command line (pid N)", when spyc follows several
	 * (--subprocesses); NULL otherwise.  Interned: equal labels are
	 * the same pointer.
	 */
	const char *process;
	uint64_t ident; /* Python's threading ident (pthread_t) */
	long tid;	/* native thread id, 0 when unknown */
	char *name;
	uint64_t samples;
	/*
	 * The entry its last stack went to, + 1 (0: none yet): a thread
	 * sampled often repeats its stack, found again without hashing.
	 */
	uint32_t last_entry;
};

/*
 * One distinct (thread, stack), with how many samples had it.  Entries of
 * different threads with the same frames share one frames array.
 */
struct stack_entry {
	uint32_t thread;
	uint32_t depth;
	const uint32_t *frames; /* depth frame ids, root first */
	uint64_t count;
};

struct stacks {
	struct stack_frame *frames;
	size_t nr_frames, alloc_frames;
	struct stack_thread *threads;
	size_t nr_threads, alloc_threads;
	struct stack_entry *entries;
	size_t nr_entries, alloc_entries;
	uint64_t total_samples;
	/* private: hash indexes and storage */
	uint32_t *frame_index;
	size_t frame_index_size;
	uint32_t *entry_index;
	size_t entry_index_size;
	uint64_t *entry_hash;
	/* each distinct frame sequence's first entry + 1, by its hash */
	uint32_t *seq_index;
	size_t seq_index_size, nr_seqs;
	struct stacks_chunk *chunks;
	struct stacks_strpool *strings;
};

void stacks_init(struct stacks *st);
/* Free everything st owns; st is left empty and may be reused. */
void stacks_release(struct stacks *st);

/*
 * Return the id of the frame (name, file, line), adding it if new.
 * The strings are copied (interned) on first use.
 */
uint32_t stacks_frame(struct stacks *st, const char *name, const char *file,
		      int line);

/*
 * Return the id of the thread with this tid, or, where it or the call has
 * none (0), with this ident, adding it if new: the same ident with
 * another tid is another thread, one that reused an ended thread's
 * pthread_t.  A later call with a non-NULL name or a non-zero tid fills
 * in what was missing.
 */
uint32_t stacks_thread(struct stacks *st, uint64_t ident, long tid,
		       const char *name);
/* The same, for a thread of the process labelled process (NULL: none). */
uint32_t stacks_thread_in(struct stacks *st, const char *process,
			  uint64_t ident, long tid, const char *name);

/* What stacks_add() returns when it could not add. */
#define STACKS_NO_ENTRY UINT32_MAX

/*
 * Count `count` samples of thread with the stack frames[0..depth-1],
 * root first.  The frame ids are copied.  No allocation once a stack has
 * been seen before.  Returns the index of the entry in st->entries, or
 * STACKS_NO_ENTRY after reporting a bad thread.
 */
uint32_t stacks_add(struct stacks *st, uint32_t thread, const uint32_t *frames,
		    size_t depth, uint64_t count);

/* Label for a thread in outputs: "name (tid N)" or "thread 0x... (tid N)". */
void stacks_thread_label(const struct stack_thread *t, char *buf, size_t size);
/* The same after "process: " when the thread has a process. */
void stacks_thread_full_label(const struct stack_thread *t, char *buf,
			      size_t size);

#endif
