/* SPDX-License-Identifier: MIT */
/* Sampling the target's Python threads and frames, one sample at a time. */
#ifndef SPYC_PYSAMPLE_H
#define SPYC_PYSAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "py/calledge.h"
#include "py/pycode.h"
#include "py/pyruntime.h"
#include "sys/tidmap.h"

/*
 * Frames kept per thread by default (--max-depth): a deeper stack keeps
 * its innermost ones and a "[N frames not read]" stand-in for the rest.
 */
#define PY_DEFAULT_MAX_DEPTH 4096
/* Longest chain followed to its end; longer (or a loop in torn data)
 * drops the sample. */
#define PY_WALK_LIMIT (1u << 20)
/* Most threads and interpreters walked in one sample. */
#define PY_MAX_THREADS 4096
#define PY_MAX_INTERPS 64

/*
 * When threads are stopped to be read.  A stop lands late: the kernel
 * stops a thread that runs at its next entry to the kernel, which an
 * interrupt from another CPU forces within 20-40 us on a virtual
 * machine, but a system call made first takes it there sooner.  Stopped
 * reads of every sample lean to the system calls a program makes
 * (a loop that spends a third of its time around a 1 us system call
 * sampled there 99 times in 100), so only --native, whose native frames
 * must be of the moment the Python frames are, and dump stop every
 * thread; --blocking keeps a sample whose stacks were read whole.
 */
enum stop_reads {
	STOP_READS_NONE = 0,
	/* --blocking: the threads that run, read once stopped when one tore */
	STOP_READS_TORN,
	/* --native, dump: every thread that runs, read once stopped */
	STOP_READS_ALL,
};

/* Which stop_reads a command's --native and --blocking ask for. */
static inline int py_stop_reads(int stop, int native)
{
	if (!stop)
		return STOP_READS_NONE;
	return native ? STOP_READS_ALL : STOP_READS_TORN;
}

/* Why a sample was dropped.  Counted by commands. */
enum drop_reason {
	DROP_NONE = 0,
	DROP_READ,    /* a read failed: memory changed under us */
	DROP_INVALID, /* data that made no sense: a torn read */
	DROP_DEPTH,   /* more than PY_WALK_LIMIT frames, or a loop */
	DROP_GONE,    /* the process exited */
	DROP_NR,
};

/*
 * Frames off the data stack (generators', C-stack shims) per thread
 * copied with its chunk (3.11+).
 */
#define PY_SIDE_KEPT 24
/* Windows of memory a 3.11+ walk keeps copied around its frames off
 * the data stack (see py_sampler.windows). */
#define PY_WINDOWS 32

/* Bytes of a thread's name kept, with its NUL; longer ones are cut. */
#define PY_THREAD_NAME_MAX 64

/* A short name for a drop reason, e.g. "torn reads". */
const char *drop_reason_name(enum drop_reason reason);

struct py_frame {
	struct pycode *code;
	int line;
	int entry; /* the first frame its C eval call ran: see pywalk_push */
};

/* What a thread was doing when sampled (when the sampler was asked). */
enum py_thread_state {
	THREAD_UNKNOWN = 0,
	THREAD_RUNNING,	 /* on a CPU, or runnable */
	THREAD_IDLE,	 /* sleeping or blocked */
	THREAD_GIL_WAIT, /* blocked, waiting for the GIL */
};

/* "running", "idle", "waiting for the GIL" or "unknown". */
const char *thread_state_name(enum py_thread_state state);

struct py_sampler;
struct py_thread;
/*
 * Give t the native id inner, read from the target's memory (its id as
 * the target sees it): t->tid becomes spyc's id of that thread, 0 if the
 * target has no such thread (see tidmap_outer).
 */
void py_thread_set_tid(struct py_sampler *ps, struct py_thread *t,
		       long inner);

struct py_thread {
	uint64_t ident;	 /* threading ident (pthread_t) */
	long tid;	 /* native thread id (spyc's), 0 if unknown */
	/* its id as the target sees it, in a pid namespace of its own (a
	 * container); 0 where that is tid */
	long inner_tid;
	uint64_t tstate; /* its PyThreadState */
	enum py_thread_state state;
	int holds_gil; /* 1 if this thread held the GIL */
	/* threading's name for it, or else its OS name when that differs
	 * from the process's; UTF-8 */
	char name[PY_THREAD_NAME_MAX];
	uint64_t root_frame; /* its outermost Python frame, 0 if unread */
	int skipped;	     /* idle, so its frames were not read (skip_idle) */
	/*
	 * Its scheduler state letter (proc(5): R, S, D, ...) as read for
	 * this sample, 0 if not read yet: /proc is read once a sample.
	 */
	char sched;
	size_t first;	     /* frames[first .. first+depth) of the sample */
	size_t depth;	     /* innermost first */
	/*
	 * Frames beyond the depth limit, not read: the stack then ends
	 * with a stand-in frame "[omitted frames not read]" (its code's
	 * placeholder flag is set), counted in depth.
	 */
	size_t omitted;
	/*
	 * --async with all tasks: not a thread but a waiting task's stack,
	 * of the thread whose ident, tid and name it has.
	 */
	int is_task;
	/*
	 * With ps->stop_reads: its stack changed while it was read (torn,
	 * or a read through it failed): not kept (depth 0), left to the
	 * read made while it is stopped.
	 */
	int torn;
	/*
	 * 3.13+: 1 if its thread state said it was attached to the
	 * interpreter (the GIL's holder; on a free-threaded build any
	 * thread that may run Python code), 0 if not, -1 not known.
	 */
	int attached;
};

struct py_task;

/*
 * Frames of a torn read kept as its key (see walk_thread in pysample.c):
 * the innermost, the generators' frames under it and the first frame
 * that is not a generator's.  A chain of `yield from` deeper than this
 * is keyed by its innermost frames only.
 */
#define WALK_KEY_MAX 16

/* A frame of a torn read, as the walk arrays held it. */
struct walk_key {
	uint64_t frame, code, tlbc_array;
	long addrq;
	int32_t tlbc;
	unsigned char entry;
	unsigned char line_known; /* addrq and tlbc are the frame's then */
};

/*
 * What was under a generator's frame when a stack holding it was last
 * read whole: its callers down to the first frame that is not a
 * generator's (in a `yield from` chain, those that delegate to it).  A
 * torn read that found the generator running, linked to nothing by the
 * time its frame was copied, takes them as its key's (see take_key in
 * pysample.c).  Slots by frame address, the newest kept.
 */
#define GEN_CALLERS_SLOTS 256

struct gen_callers {
	uint64_t frame, code; /* the generator's frame */
	size_t nr;
	struct walk_key under[WALK_KEY_MAX - 1];
};

/* A thread's key, for the read made once it is stopped. */
struct walk_stop_key {
	uint64_t ident;
	size_t nr;
	struct walk_key key[WALK_KEY_MAX];
};

/* One sample of every thread.  Reused between samples: no allocation once warm.
 */
struct py_sample {
	struct py_thread *threads;
	size_t nr_threads, alloc_threads;
	struct py_frame *frames;
	size_t nr_frames, alloc_frames;
	/* --async: the asyncio tasks, and indexes of the tasks awaiting each */
	struct py_task *tasks;
	size_t nr_tasks, alloc_tasks;
	size_t *awaiters;
	size_t nr_awaiters, alloc_awaiters;
};

void py_sample_release(struct py_sample *s);

/*
 * Give each thread of s the state and GIL holding of the thread with its
 * ident in before[0..n-1]: read again while stopped, every thread would
 * look idle.
 */
void py_sample_keep_states(struct py_sample *s, const struct py_thread *before,
			   size_t n);

/* A memory region copied from the target for this sample. */
struct py_region {
	uint64_t addr;
	size_t len;
	unsigned char *buf;
	size_t alloc;
};

/* Slots of py_sampler's memo of returned frames' code (a power of 2). */
#define PY_RETURNED_MEMO 256

struct py_sampler {
	const struct pyruntime *rt;
	struct pycode_cache codes;
	/* per-sample scratch, kept between samples */
	unsigned char *tstate_buf;
	/*
	 * The last sample's interpreter (when it was the only one) and its
	 * thread states, in order: read again all at once in the next
	 * sample (see prefetch_threads), into tstate_bufs.
	 */
	uint64_t pre_interp;
	uint64_t *pre_tstates;
	size_t nr_pre, alloc_pre;
	/* With want_gc, the collector's flag, read with them (pre_gc_read) */
	int32_t pre_gc;
	int pre_gc_read;
	/*
	 * Up to 3.10 (no native id in the thread state): each one's
	 * pthread_t as last seen, and the tid its struct pthread held when
	 * read again with the thread states; 0 when not read.
	 */
	uint64_t *pre_idents;
	int32_t *pre_tids;
	size_t alloc_pre_idents, alloc_pre_tids;
	unsigned char *tstate_bufs;
	size_t alloc_tstate_bufs;
	unsigned char *pre_head;
	unsigned char *fresh_tstate; /* read again beside the frames */
	unsigned char *frame_buf;
	struct py_region *chunks;
	size_t nr_chunks, alloc_chunks;
	uint64_t next_chunk; /* older chunk not read yet, 0 when none */
	/*
	 * 3.11+: the memory around frames the walk found off every chunk
	 * (generators' frames, most), copied a window at a time: a chain
	 * of generators nested thousands deep sits in a few allocator
	 * pools.  Good for one walk; the oldest one read is replaced.
	 */
	struct py_region windows[PY_WINDOWS];
	unsigned char window_used[PY_WINDOWS]; /* a frame was taken from it */
	/* how many walks in a row each was copied for and none took one */
	unsigned char window_idle[PY_WINDOWS];
	/* the bytes of each the walk took frames from: [lo, hi) */
	uint64_t window_lo[PY_WINDOWS], window_hi[PY_WINDOWS];
	size_t nr_windows, next_window;
	uint64_t *code_addrs;
	uint64_t *frame_addrs; /* where each walked frame is, 0 if a stand-in */
	long *addrqs;
	unsigned char *entries;
	/* 1 where the frame is a generator's or coroutine's (3.11+) */
	unsigned char *gen_frames;
	/*
	 * Free-threaded builds: the thread-local bytecode copy each frame
	 * runs (0: the code's own, whose offset addrqs holds; else addrqs
	 * holds the frame's instruction pointer until pyresolve_frames
	 * finds the copy), and the code's co_tlbc array as last read.
	 */
	int32_t *tlbcs;
	uint64_t *tlbc_arrays;
	size_t alloc_walk;
	/*
	 * A whole read of a torn stack that did not hold the frame the
	 * first read found innermost, kept while later reads look for that
	 * frame (see walk_thread): its frames as the arrays above hold them.
	 */
	struct walk_spare {
		uint64_t *code_addrs, *frame_addrs, *tlbc_arrays;
		long *addrqs;
		unsigned char *entries, *gen_frames;
		int32_t *tlbcs;
		size_t nr, alloc;
		uint64_t root_frame;
		size_t omitted;
	} spare;
	/* pyresolve_frames's reads of co_tlbc arrays: two words a frame */
	uint64_t *tlbc_words;
	size_t *tlbc_slots;
	size_t alloc_tlbc_words, alloc_tlbc_slots;
	/*
	 * pyresolve_frames: the distinct code objects of the frames it
	 * resolves, by address, each one's header read once however many
	 * frames run it; headers holds the copies.
	 */
	unsigned char *headers;
	size_t alloc_headers;
	struct py_code_read {
		uint64_t addr;
		size_t at;	     /* its header's offset in headers */
		struct pycode *code; /* once looked up, else NULL */
	} * codes_read;
	size_t alloc_codes_read;
	struct iovec *local, *remote;
	size_t alloc_iov;
	/*
	 * Up to 3.10: per thread, the frame objects its recent walks went
	 * through, read again in one batch by the next walk (frameobj.c).
	 */
	struct py_frame_memo {
		uint64_t tstate;
		/*
		 * the frames of its recent walks, by height above its
		 * outermost frame, highest first: callees before callers
		 */
		struct py_known_frame {
			uint64_t addr;
			/* its two copies' offsets in the spans' bytes */
			size_t at, at2;
			uint32_t height;
			uint32_t seen; /* walks, the last one it was in */
		} * known;
		size_t nr, alloc;
		uint32_t walks;
		/* the depth of its deepest recent walk, and that walk */
		size_t peak;
		uint32_t peak_walk;
		/*
		 * the known frames grouped by address into the regions read
		 * (frames close together share one): planned again only when
		 * the set of frames changed
		 */
		struct py_span {
			uint64_t addr;
			size_t len;
			size_t from, nr;  /* its frames, in by_addr */
			uint32_t highest, lowest; /* its frames' heights */
		} * spans;
		size_t nr_spans, alloc_spans, span_bytes;
		int plan_stale;
	} * memos;
	size_t nr_memos, alloc_memos;
	/* One batch read of a walk of frame objects: see frameobj.c. */
	struct py_frame_batch {
		unsigned char *buf; /* the copies */
		uint64_t *addrs;    /* where each frame was copied from */
		/*
		 * where in buf its copies are (copies are made in the order
		 * of buf): at2 is SIZE_MAX for the first frame of a read,
		 * copied once
		 */
		size_t *at, *at2;
		long *known; /* its index in the memo's known, or -1 */
		size_t n, alloc_buf, alloc_addrs, alloc_at, alloc_at2;
		size_t alloc_known;
	} batch;
	unsigned char *anchor_buf; /* the frame a batch read starts from */
	/*
	 * Up to 3.10: frame objects seen, any thread's, each with its code
	 * (a frame seen with several is of the free list, not one code
	 * object's spare frame): an open-addressing table (see frameobj.c),
	 * address 0 for an empty slot.
	 */
	struct py_frame_seen {
		uint64_t addr, code;
		uint32_t runs; /* times seen with that code, up to a bound */
		uint32_t free; /* seen with another code: of the free list */
	} * frames_seen;
	size_t nr_frames_seen;
	/* scratch for planning spans: known frames by address */
	struct py_addr_index {
		uint64_t addr;
		size_t index;
	} * by_addr;
	size_t alloc_by_addr;
	/*
	 * Up to 3.10, when the thread states were prefetched: each walked
	 * thread's first batch read (its thread state again, its known
	 * frames), made for all of them in one process_vm_readv
	 * (frameobj_prefetch); each taken by the thread's walk.
	 */
	struct py_frames_pre {
		uint64_t tstate;
		unsigned char *fresh;
		struct py_frame_batch batch;
		int ready; /* read, not taken yet */
	} * pre_frames;
	size_t nr_pre_frames, alloc_pre_frames;
	/* Up to 3.10: the frames of the walk being done, innermost first */
	uint64_t *walk_frames;
	long *walk_known;     /* index in the memo's known frames, or -1 */
	uint64_t *walk_codes; /* each one's code */
	size_t alloc_walk_frames, alloc_walk_known, alloc_walk_codes;
	/*
	 * 3.11+: the chunk frames reached from a frame read at another
	 * time (a generator's, or one in another chunk), with the fields
	 * the walk used, and where the walk started: read again at its end.
	 */
	struct py_link_check {
		uint64_t addr, code, previous, instr;
		/*
		 * its callee when that is a generator's frame, else 0; and
		 * the C-stack shim between them (3.12+), else 0
		 */
		uint64_t gen, shim;
	} * links;
	size_t nr_links, alloc_links;
	unsigned char *link_buf;
	size_t alloc_link_buf;
	uint64_t walk_cframe, walk_frame;
	/*
	 * A walk that tore at a frame it read: that frame and its code as
	 * read (the link to it, from the frame before, was read whole), 0
	 * if the walk did not end so.  See take_key in pysample.c.
	 */
	uint64_t torn_at, torn_at_code;
	long torn_at_addrq; /* its instruction as read (-1: unknown) */
	int torn_at_gen;    /* torn_at is a generator's frame */
	struct gen_callers *gen_callers; /* GEN_CALLERS_SLOTS, or NULL */
	/*
	 * Calls to or from a generator's frame (caller's code, callee's)
	 * seen in stacks read whole: a key's frames are put back only on
	 * such calls (a generator's object, freed, can come back at the
	 * same place under another caller).
	 */
	struct call_edges gen_edges;
	/*
	 * 3.11+: the calls seen (calledge.h), and the caller and callee
	 * pairs of the walk just done not among them yet, which
	 * edges_still_hold reads again (see there).
	 */
	struct call_edges call_edges;
	struct py_edge_check {
		uint64_t caller, callee; /* the frames' addresses */
		struct call_edge edge;
		uint64_t caller_instr, caller_previous;
		uint64_t callee_instr; /* as the walk found it */
		int callee_innermost;  /* the walk's first frame */
		/* 3.11-3.13: the code units at the two instructions */
		uint8_t caller_unit[2], callee_unit[2];
	} * edge_checks;
	size_t nr_edge_checks, alloc_edge_checks;
	unsigned char *edge_buf;
	size_t alloc_edge_buf;
	/* 3.14+: the code objects found for returned frames' instructions */
	struct py_returned_memo {
		uint64_t instr, code;
	} returned[PY_RETURNED_MEMO];
	/*
	 * 3.11+: per thread state, the frames off the data stack its last
	 * walk went through (generators', and 3.12+ the C-stack shims, the
	 * one at the bottom there for the thread's life), copied again with
	 * its chunk (side_buf, in the same process_vm_readv) so that the
	 * walk need not read them on their own.
	 */
	struct py_side_memo {
		uint64_t tstate;
		uint64_t addrs[PY_SIDE_KEPT];
		size_t nr;
		/*
		 * the windows its last walks took frames from, each with
		 * how many walks in a row since took none
		 */
		uint64_t win_addrs[PY_WINDOWS];
		size_t win_lens[PY_WINDOWS];
		unsigned char win_idle[PY_WINDOWS];
		size_t nr_win;
	} * side_memos;
	size_t nr_side_memos, alloc_side_memos;
	struct py_side_memo *side_now; /* the walked thread's, or NULL */
	uint64_t side_addrs[PY_SIDE_KEPT];
	size_t nr_side;
	unsigned char *side_buf;
	/*
	 * 3.11+, when the thread states were prefetched: each thread's
	 * fresh thread state, C frame's current frame, newest chunk and
	 * shims, read for all the threads walked in one process_vm_readv
	 * (pyframe_prefetch); each taken by the thread's walk.
	 */
	struct py_chunk_pre {
		uint64_t tstate, cframe, current, chunk, top;
		size_t len; /* of the chunk's copy, 0 when none */
		unsigned char *fresh, *buf, *side;
		size_t alloc; /* of buf */
		uint64_t side_addrs[PY_SIDE_KEPT];
		size_t nr_side;
		int ready; /* read, not taken yet */
	} * pre_chunks;
	size_t nr_pre_chunks, alloc_pre_chunks;
	int *pre_walk; /* of the prefetched threads, those walked */
	size_t alloc_pre_walk;
	/* the side frames the walk went through off the chunk, for side_now */
	uint64_t walk_side[PY_SIDE_KEPT];
	size_t nr_walk_side;
	/* What else to find out per thread; set by commands. */
	int want_state; /* running or idle, from /proc/PID/task/TID/stat */
	int want_gil;	/* who holds the GIL, and who waits for it */
	/*
	 * While the cycle collector runs, a "<GC>" frame on top of the stack
	 * of the thread that runs it, the GIL's holder (none on a build
	 * without a GIL); gc_code is that frame's stand-in code object.
	 * Commands leave it off with async (sample_opts_want_gc).
	 */
	int want_gc;
	struct pycode *gc_code;
	/*
	 * The thread state of the thread running the collection seen last
	 * (0: none seen yet, or not told), kept while samples see it run:
	 * a collection runs in one thread from start to end.
	 */
	uint64_t gc_collector;
	/*
	 * Do not read the frames of threads that are not on a CPU: with
	 * want_state, when idle stacks will not be used anyway.
	 */
	int skip_idle;
	/*
	 * Threads are stopped and read again (enum stop_reads): a stack
	 * torn in this read is left to that one (py_thread.torn) rather
	 * than the sample dropped.
	 */
	int stop_reads;
	/*
	 * STOP_READS_TORN: the keys of the threads whose first read tore
	 * (see walk_thread in pysample.c), for the read made while they are
	 * stopped: that read is of a later moment.
	 */
	struct walk_stop_key *stop_keys;
	size_t nr_stop_keys, alloc_stop_keys;
	/* py_sampler_walk_only's idents, sorted; NULL: every thread */
	const uint64_t *walk_only;
	size_t nr_walk_only;
	/* Thread names: threading's, else the OS's (/proc/PID/task/TID/comm) */
	int want_names;
	/*
	 * --async: read asyncio tasks through this (owned by the command),
	 * and with async_stacks turn stacks into task stacks, every waiting
	 * task's too with async_all.
	 */
	struct pyasync *async;
	int async_stacks, async_all;
	/* Frames kept per thread; 0 means PY_DEFAULT_MAX_DEPTH. */
	size_t max_depth;
	size_t omitted; /* frames of the walk just done past max_depth */
	/*
	 * Thread stacks read, and of those kept how many were read from a
	 * thread state copied again because the first read tore: the
	 * stack changed faster than it could be read.  Reading again takes
	 * a later moment, which favours calls that last: a large share of
	 * these says short calls are under-counted.
	 */
	uint64_t walks, walks_again;
	uint32_t sample_stamp; /* counts samples: which one a check was in */
	int moved; /* the walk just done took a new copy of the thread state */
	char process_name[16];
	struct py_task_file {
		long tid;
		int fd;	       /* its stat, kept open */
		char comm[16]; /* its name when first seen (TASK_COMM_LEN) */
	} * task_files;
	size_t nr_task_files, alloc_task_files;
	/* where the next thread's file is likely: threads come in order */
	size_t task_hint;
	/* threading's thread names, by thread state, outermost frame, tid */
	struct py_name_memo {
		uint64_t tstate, root_frame;
		long tid;
		char name[PY_THREAD_NAME_MAX]; /* empty: it has none */
		int tries; /* failed reads so far; NAME_TRIES once settled */
	} * names;
	size_t nr_names, alloc_names;
	uint64_t root_frame; /* outermost frame of the walk just done */
	/* glibc's struct pthread: where it keeps the tid (up to 3.10) */
	long pthread_tid_at;
	/* the target's thread ids, as it sees them, to spyc's */
	struct tidmap tidmap;
	struct {
		uint64_t ident;
		long tid;
	} * tids;
	size_t nr_tids, alloc_tids;
};

void py_sampler_init(struct py_sampler *ps, const struct pyruntime *rt);
void py_sampler_release(struct py_sampler *ps);

/*
 * Sample every Python thread of the target into out (cleared first).
 * Returns DROP_NONE, or the reason the whole sample must be dropped.
 */
enum drop_reason py_sampler_sample(struct py_sampler *ps,
				   struct py_sample *out);

/*
 * Read the frames of only the threads with these n idents in the samples
 * that follow (the second read of --native and --blocking: only the
 * threads it stopped); the others are added, marked skipped.  idents is
 * sorted in place and must outlive those samples; NULL: every thread
 * again.
 */
void py_sampler_walk_only(struct py_sampler *ps, uint64_t *idents, size_t n);

/* For the sampler's own files: room for n regions in ps->local/remote. */
void py_sampler_grow_iov(struct py_sampler *ps, size_t n);
/* For the sampler's own files: region i copies len bytes at addr to buf. */
void py_sampler_set_iov(struct py_sampler *ps, size_t i, void *buf,
			uint64_t addr, size_t len);
/* For the sampler's own files: the drop reason for a failed read. */
enum drop_reason py_read_error(int r);

#endif
