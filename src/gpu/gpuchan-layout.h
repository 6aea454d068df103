/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory channel between spyc and its GPU agent: the layout
 * both sides agree on.  Included by spyc (src/gpu/gpuchan.c, the reader) and
 * by the agent (agent/ring.c, the writer), so it depends on nothing else.
 *
 * spyc creates a file (under /dev/shm), writes the header and the slots'
 * sequence numbers, and names the file to the agent (SPYC_GPU_CHANNEL in
 * the environment of a launched program; an argument of the agent's
 * attach entry point otherwise).  Both map it shared.  The agent is the
 * producer (any of its threads: CUPTI's buffer thread, the threads that
 * launch kernels), spyc the only consumer.  The ring is a bounded queue
 * in which each slot carries a sequence number (Dmitry Vyukov's bounded
 * MPMC queue): a producer claims a position with one compare-and-swap,
 * fills the slot, and publishes it by storing position + 1 in the slot;
 * spyc reads a slot only once it is published, and frees it by storing
 * position + nr_slots.  Nobody ever waits: a full ring drops the record
 * and counts it in lost.
 *
 * The target can scribble over any of this (it is the target's memory
 * too), so the reader validates the header on every read and each
 * record it copies; the agent validates the header before it writes.
 */
#ifndef SPYC_GPUCHAN_LAYOUT_H
#define SPYC_GPUCHAN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* "spycgpu\0" as a little-endian word. */
#define GPUCHAN_MAGIC 0x0075706763797073ULL
/* Bumped on any change of this file's layouts. */
#define GPUCHAN_VERSION 9
/* The environment variable that names the channel in launch mode. */
#define GPUCHAN_ENV "SPYC_GPU_CHANNEL"
/* The header fills one page, so records start page-aligned. */
#define GPUCHAN_HEADER_SIZE 4096
#define GPUCHAN_RECORD_SIZE 256
/* What is left of a slot after its sequence number and a record's type. */
#define GPU_RECORD_PAYLOAD (GPUCHAN_RECORD_SIZE - 16)
/* Bounds the reader and the writer both check (a power of two each). */
#define GPUCHAN_MIN_SLOTS 2u
#define GPUCHAN_MAX_SLOTS (1u << 20)
#define GPUCHAN_MESSAGE_SIZE 160
/* An API call's name, NUL-terminated (longer ones are cut). */
#define GPU_API_NAME_SIZE 64

/* What the agent says about itself, in header.status. */
enum gpu_agent_status {
	GPU_AGENT_WAITING = 0,	    /* spyc's initial value: no agent yet */
	GPU_AGENT_STARTING = 1,	    /* the agent has mapped the channel */
	GPU_AGENT_RUNNING = 2,	    /* CUPTI is collecting */
	GPU_AGENT_NO_CUDA = 3,	    /* the process has not loaded CUDA */
	GPU_AGENT_NO_CUPTI = 4,	    /* no libcupti could be loaded */
	GPU_AGENT_CUPTI_ERROR = 5,  /* a CUPTI call failed (detail: result) */
	GPU_AGENT_STOPPED = 6,	    /* quiet again: activities disabled */
	GPU_AGENT_ALREADY = 7,	    /* another channel already has the agent */
	GPU_AGENT_OTHER_CLIENT = 8, /* another CUPTI client: nothing enabled */
	GPU_AGENT_STATUS_MAX = 8
};

/* Whether the agent copies launches' Python stacks (header.launch_stacks). */
enum gpu_launch_stacks {
	GPU_STACKS_UNKNOWN = 0,	  /* not decided yet */
	GPU_STACKS_ON = 1,	  /* subscribed to CUPTI's launch callbacks */
	GPU_STACKS_NO_PYTHON = 2, /* no Python interpreter in the process */
	GPU_STACKS_NO_CALLBACKS = 3, /* this CUPTI has no callback API */
	GPU_STACKS_SUBSCRIBED = 4,   /* CUPTI refused the subscription */
	GPU_STACKS_MAX = 4
};

/* What spyc asks of the agent, in header.control. */
enum gpu_agent_control {
	GPU_CONTROL_RUN = 0,
	GPU_CONTROL_STOP = 1, /* disable activities, flush, go quiet */
};

/* How a CPython keeps a thread's current frame (gpu_py_layout.kind). */
enum gpu_py_kind {
	GPU_PY_NONE = 0,	  /* no layout: the agent copies no stacks */
	GPU_PY_FRAME_OBJECTS = 1, /* up to 3.10: tstate->frame, f_back */
	GPU_PY_CFRAME = 2, /* 3.11, 3.12: tstate->cframe->current_frame */
	GPU_PY_CURRENT_FRAME = 3, /* 3.13+: tstate->current_frame */
	GPU_PY_KIND_MAX = 3
};

/*
 * Where a launching thread's Python frames are, for the agent to copy
 * them in its own process at each launch (GPU_REC_STACK): offsets from
 * spyc's table for the target's CPython.  spyc writes it once it knows
 * the interpreter, ready last; the agent uses it only once ready is 1
 * and sum checks.  Offsets that do not apply are -1.
 */
struct gpu_py_layout {
	uint32_t ready;	      /* 1 once the rest is written */
	uint32_t kind;	      /* enum gpu_py_kind */
	int32_t tstate_frame; /* PyThreadState: frame, cframe, current_frame */
	int32_t cframe_current; /* _PyCFrame.current_frame (GPU_PY_CFRAME) */
	int32_t tstate_base;	/* 3.15: the thread's base frame, the end */
	int32_t frame_back;	/* f_back, or previous */
	int32_t frame_code;	/* f_code, or f_executable */
	int32_t frame_pos;   /* f_lasti (an int), or the instruction pointer */
	int32_t frame_owner; /* owner (a byte), 3.11+ */
	int32_t owner_skip;  /* frames of this owner are not Python's */
	uint32_t max_frames; /* copy at most this many (<= GPU_STACK_MAX) */
	uint32_t reserved;
	uint64_t sum; /* gpu_py_layout_sum() */
};

/*
 * The header.  The first block is written by spyc before anyone else
 * maps the file and never changes; geometry_sum covers it, so a torn or
 * foreign header is refused.  Words that change are each alone in a
 * cache line, written with atomic operations.
 */
struct gpuchan_header {
	/* spyc, once */
	uint64_t magic;
	uint32_t version;
	uint32_t header_size; /* GPUCHAN_HEADER_SIZE: records start here */
	uint32_t record_size; /* GPUCHAN_RECORD_SIZE */
	uint32_t nr_slots;    /* a power of two */
	uint64_t total_size;  /* of the file: header + slots */
	uint64_t spyc_pid;
	uint64_t geometry_sum; /* FNV-1a of the fields above */
	/*
	 * spyc, once it has launched its target (0 until then, and when it
	 * attaches): the one process whose CUDA driver's agent reports here.
	 * The target's children inherit the environment that names the
	 * channel; their agents only count themselves (other_processes).
	 */
	uint32_t target_pid;
	char pad0[64 - 52];

	/* the agent */
	uint32_t status;		    /* enum gpu_agent_status */
	int32_t status_detail;		    /* a CUptiResult or errno, else 0 */
	uint32_t agent_pid;		    /* the process the agent runs in */
	uint32_t cupti_version;		    /* cuptiGetVersion(), once loaded */
	char message[GPUCHAN_MESSAGE_SIZE]; /* one line; NUL-terminated */
	uint32_t launch_stacks;		    /* enum gpu_launch_stacks */
	char pad1[256 - 64 - 20 - GPUCHAN_MESSAGE_SIZE];

	uint64_t head; /* next position a producer claims */
	char pad2[56];
	uint64_t lost; /* records dropped because the ring was full */
	char pad3[56];
	uint64_t tail; /* spyc: next position it reads (for information) */
	char pad4[56];
	uint32_t control; /* spyc: enum gpu_agent_control */
	char pad5[60];

	/* spyc, once it knows the target's interpreter */
	struct gpu_py_layout py;

	/*
	 * The agent: what it or CUPTI dropped, each a count it only adds
	 * to (atomically), and the clock its records' times are on.
	 */
	uint64_t zero_time;	/* records with a 0 start or end: no time */
	uint64_t cupti_dropped; /* cuptiActivityGetNumDroppedRecords' sum */
	uint64_t bad_buffers;	/* buffers whose walk stopped at an error */
	/* agents the CUDA driver started in processes not the target */
	uint64_t other_processes;
	uint32_t clock;	      /* enum gpu_agent_clock */
	uint32_t api_records; /* enum gpu_api_records */
	/*
	 * launches made while their thread captured a stream into a CUDA
	 * graph: they queue no work, so the agent copies no stack of them
	 */
	uint64_t captured_launches;
	/* the NVTX ranges the agent recorded (enum gpu_nvtx_state) */
	uint32_t nvtx;
	uint32_t reserved;
};

/*
 * Whether the agent records NVTX ranges (header.nvtx): NVTX's loader in
 * the target loads it through NVTX_INJECTION64_PATH at the program's
 * first NVTX call, which spyc sets in a launched program's environment.
 */
enum gpu_nvtx_state {
	GPU_NVTX_NONE = 0,    /* no NVTX call yet, or NVTX not set to spyc */
	GPU_NVTX_ON = 1,      /* the agent has NVTX's functions */
	GPU_NVTX_REFUSED = 2, /* NVTX's loader gave no function table */
	GPU_NVTX_MAX = 2
};

/* Which CUDA API calls CUPTI makes records of (header.api_records). */
enum gpu_api_records {
	GPU_API_RECORDS_UNKNOWN = 0, /* not decided yet */
	/* launches, copies, memsets, synchronizations, graph launches */
	GPU_API_RECORDS_PROFILED = 1,
	/* every call: this CUPTI has no per-call switches (before 12.5) */
	GPU_API_RECORDS_ALL = 2,
	GPU_API_RECORDS_MAX = 2
};

/* Which clock CUPTI's times are on (header.clock). */
enum gpu_agent_clock {
	GPU_CLOCK_CUPTI = 0,	 /* CUPTI's own (CLOCK_REALTIME on Linux) */
	GPU_CLOCK_MONOTONIC = 1, /* CLOCK_MONOTONIC, through the agent's
				    timestamp callback */
};

/* What a record is. */
enum gpu_record_type {
	GPU_REC_NONE = 0,
	GPU_REC_KERNEL = 1,
	GPU_REC_MEMCPY = 2,
	GPU_REC_MEMSET = 3,
	GPU_REC_SYNC = 4,
	GPU_REC_API = 5,   /* a CUDA runtime or driver API call */
	GPU_REC_CLOCK = 6, /* a CUPTI timestamp and CLOCK_MONOTONIC together */
	GPU_REC_STACK = 7, /* part of the Python stack of a launch */
	GPU_REC_NAME = 8,  /* a piece of a kernel's name too long to inline */
	GPU_REC_RANGE = 9, /* an NVTX range pushed or popped */
	GPU_REC_TYPE_MAX = 9
};

/*
 * A kernel's name: the first GPU_KERNEL_NAME_INLINE - 1 bytes travel in
 * its record; a longer one is sent whole, once per distinct name, in
 * GPU_REC_NAME pieces before the first kernel that has it, and kernels
 * refer to it by its length and hash.  Names longer than GPU_NAME_MAX
 * (C++ templates can reach that) are cut there.
 */
#define GPU_KERNEL_NAME_INLINE 152
#define GPU_NAME_MAX 65536

/* FNV-1a 64 of a name's len bytes: how a kernel refers to its name. */
static inline uint64_t gpu_name_hash(const char *name, unsigned long len)
{
	uint64_t sum = 0xcbf29ce484222325ULL;
	unsigned long i;

	for (i = 0; i < len; i++)
		sum = (sum ^ (unsigned char)name[i]) * 0x100000001b3ULL;
	return sum;
}

/*
 * What every record of work on the GPU (a kernel, copy, memset or
 * synchronization) starts with.  Times are CUPTI's nanoseconds;
 * GPU_REC_CLOCK relates them to spyc's.  correlation ties the work to the
 * API call that queued it (struct gpu_api).
 */
struct gpu_interval {
	uint64_t start, end;
	uint32_t correlation;
	uint32_t device; /* GPU_NO_DEVICE for a synchronization */
	uint32_t context, stream;
};
#define GPU_NO_DEVICE UINT32_MAX

struct gpu_kernel {
	struct gpu_interval iv;
	uint32_t grid[3], block[3];
	uint32_t shared_static, shared_dynamic;
	uint16_t registers;
	uint16_t name_truncated; /* 1 if the name was cut at GPU_NAME_MAX */
	uint32_t name_len;	 /* of the whole name (at most GPU_NAME_MAX) */
	uint64_t name_hash;	 /* gpu_name_hash() of the whole name */
	/* the graph node it ran as (CUPTI's id), 0: not from a graph */
	uint64_t graph_node;
	/* mangled, NUL-terminated; its start only when name_len is longer */
	char name[GPU_KERNEL_NAME_INLINE];
};

/* A piece of a long kernel name (GPU_REC_NAME), at offset of its len. */
#define GPU_NAME_PIECE (GPU_RECORD_PAYLOAD - 24)
struct gpu_name {
	uint64_t hash; /* gpu_name_hash() of the whole name */
	uint32_t len;  /* the whole name's */
	uint32_t offset;
	uint32_t count; /* bytes of text used */
	uint32_t reserved;
	char text[GPU_NAME_PIECE];
};

struct gpu_memcpy {
	struct gpu_interval iv;
	uint64_t bytes;
	uint8_t copy_kind; /* CUpti_ActivityMemcpyKind: HtoD, DtoH, ... */
	uint8_t src_kind, dst_kind;
	uint8_t flags; /* CUpti_ActivityFlag: async */
};

struct gpu_memset {
	struct gpu_interval iv;
	uint64_t bytes;
	uint32_t value;
};

struct gpu_sync {
	struct gpu_interval iv;
	uint32_t type; /* CUpti_ActivitySynchronizationType */
	uint32_t reserved;
	uint64_t event;
};

struct gpu_api {
	uint64_t start, end;
	uint32_t correlation;
	uint32_t cbid;	 /* CUPTI's callback id of the call */
	uint32_t domain; /* 1: driver, 2: runtime */
	uint32_t pid, tid;
	int32_t result;
	uint32_t reserved;
	/* CUPTI's name of the call ("cudaLaunchKernel"), "" if it has none */
	char name[GPU_API_NAME_SIZE];
};

struct gpu_clock {
	uint64_t cupti_ns;     /* cuptiGetTimestamp() */
	uint64_t monotonic_ns; /* CLOCK_MONOTONIC, read right after */
};

/*
 * The Python stack of the thread that made a launch (a CUDA call that
 * queues work), copied by the agent as the call began: frames innermost
 * first, each its code object's address and position (f_lasti, or its
 * instruction pointer) as gpu_py_layout says.  A stack of more than
 * GPU_STACK_FRAMES frames takes several records, all with its
 * correlation id, in order.  alias: the stack is the one of the launch
 * with that correlation id (a driver call made inside a runtime call),
 * and the record has no frames.
 */
#define GPU_STACK_FRAMES 13
#define GPU_STACK_MAX 126 /* frames copied at most: 10 records */
#define GPU_STACK_CUT 1	  /* flags: deeper than GPU_STACK_MAX */
/*
 * flags: the stack of a CUDA graph node's making (its capture, or the
 * call that added it), correlation then holding the node's id; with
 * alias, no frames: the node is a copy of node alias (instantiated).
 * A node's id is CUPTI's, all 64 bits: the graph's id above the node's
 * index in it, so that a copy's low half is its original's.
 */
#define GPU_STACK_NODE 2

struct gpu_stack_frame {
	uint64_t code, pos;
};

struct gpu_stack {
	uint64_t correlation; /* a launch's, or a node's id (GPU_STACK_NODE) */
	uint64_t alias;
	uint32_t tid;
	uint8_t first; /* frames[0]'s index in the stack (innermost: 0) */
	uint8_t count; /* frames in this record */
	uint8_t depth; /* frames in the whole stack */
	uint8_t flags;
	/* the innermost NVTX range open on the thread (its id), 0: none */
	uint64_t range;
	struct gpu_stack_frame frames[GPU_STACK_FRAMES];
};

/*
 * An NVTX range pushed (nvtxRangePush*, nvtxDomainRangePush*) or popped
 * on thread tid, at t (CLOCK_MONOTONIC's ns, spyc's clock whatever
 * CUPTI's is).  id is the range's, unique in the process (1 on); a push
 * names the range open around it on the thread (parent, 0: none) and
 * carries its message, cut to what the record holds (cut: it was
 * longer).  A launch's stack names the innermost range open on its
 * thread (gpu_stack.range), so spyc puts the launch's kernels under
 * every range open around it.
 */
#define GPU_RANGE_NAME (GPU_RECORD_PAYLOAD - 40)
struct gpu_range {
	uint64_t id, parent;
	uint64_t t;
	uint32_t tid;
	uint8_t pop; /* 0: pushed, 1: popped (no name) */
	uint8_t cut;
	uint16_t len; /* bytes of name used */
	uint64_t reserved;
	char name[GPU_RANGE_NAME];
};

/* One record as it travels (without the slot's sequence number). */
struct gpu_record {
	uint16_t type; /* enum gpu_record_type */
	uint16_t size; /* bytes of the payload used */
	uint32_t reserved;
	union {
		struct gpu_kernel kernel;
		struct gpu_memcpy memcpy;
		struct gpu_memset memset;
		struct gpu_sync sync;
		struct gpu_api api;
		struct gpu_clock clock;
		struct gpu_stack stack;
		struct gpu_name name;
		struct gpu_range range;
		unsigned char raw[GPU_RECORD_PAYLOAD];
	} u;
};

/* The interval a record of work on the GPU starts with; NULL for others. */
static inline const struct gpu_interval *
gpu_record_interval(const struct gpu_record *r)
{
	switch (r->type) {
	case GPU_REC_KERNEL:
		return &r->u.kernel.iv;
	case GPU_REC_MEMCPY:
		return &r->u.memcpy.iv;
	case GPU_REC_MEMSET:
		return &r->u.memset.iv;
	case GPU_REC_SYNC:
		return &r->u.sync.iv;
	default:
		return NULL;
	}
}

/* A slot of the ring: the queue's sequence number, then the record. */
struct gpuchan_slot {
	uint64_t seq;
	struct gpu_record record;
};

_Static_assert(sizeof(struct gpuchan_header) <= GPUCHAN_HEADER_SIZE,
	       "the header fits its page");
_Static_assert(sizeof(struct gpuchan_slot) == GPUCHAN_RECORD_SIZE,
	       "slots have the advertised size");
_Static_assert(sizeof(struct gpu_kernel) <= GPU_RECORD_PAYLOAD,
	       "a kernel fits a record");
_Static_assert(sizeof(struct gpu_name) == GPU_RECORD_PAYLOAD,
	       "a name piece fills a record");
_Static_assert(sizeof(struct gpu_api) <= GPU_RECORD_PAYLOAD,
	       "an API call fits a record");
_Static_assert(sizeof(struct gpu_stack) <= GPU_RECORD_PAYLOAD,
	       "a stack record fits a record");
_Static_assert(GPU_STACK_MAX < 256, "stack indexes fit a byte");
_Static_assert(sizeof(struct gpu_range) == GPU_RECORD_PAYLOAD,
	       "a range fills a record");

/* FNV-1a 64 over a layout's fields from kind to reserved. */
static inline uint64_t gpu_py_layout_sum(const struct gpu_py_layout *l)
{
	const unsigned char *p = (const unsigned char *)&l->kind;
	uint64_t sum = 0xcbf29ce484222325ULL;
	unsigned long i;

	for (i = 0; i < __builtin_offsetof(struct gpu_py_layout, sum) -
			    __builtin_offsetof(struct gpu_py_layout, kind);
	     i++)
		sum = (sum ^ p[i]) * 0x100000001b3ULL;
	return sum;
}

/* FNV-1a 64 over the header's fixed fields: what geometry_sum holds. */
static inline uint64_t gpuchan_geometry_sum(const struct gpuchan_header *h)
{
	const unsigned char *p = (const unsigned char *)h;
	uint64_t sum = 0xcbf29ce484222325ULL;
	unsigned long i;

	for (i = 0; i < __builtin_offsetof(struct gpuchan_header, geometry_sum);
	     i++)
		sum = (sum ^ p[i]) * 0x100000001b3ULL;
	return sum;
}

/*
 * Whether the fixed part of a header describes a channel of this
 * version that fits in size bytes.  Returns NULL if so, else why not
 * (a constant string).  Pure; both sides use it.
 */
static inline const char *gpuchan_header_invalid(const struct gpuchan_header *h,
						 uint64_t size)
{
	uint32_t n = h->nr_slots;

	if (size < GPUCHAN_HEADER_SIZE)
		return "too small for a header";
	if (h->magic != GPUCHAN_MAGIC)
		return "not a spyc GPU channel (bad magic)";
	if (h->version != GPUCHAN_VERSION)
		return "a channel of another version";
	if (h->geometry_sum != gpuchan_geometry_sum(h))
		return "header checksum mismatch (torn or overwritten)";
	if (h->header_size != GPUCHAN_HEADER_SIZE ||
	    h->record_size != GPUCHAN_RECORD_SIZE)
		return "unexpected header or record size";
	if (n < GPUCHAN_MIN_SLOTS || n > GPUCHAN_MAX_SLOTS || (n & (n - 1)))
		return "implausible number of slots";
	if (h->total_size != (uint64_t)GPUCHAN_HEADER_SIZE +
				 (uint64_t)n * GPUCHAN_RECORD_SIZE ||
	    h->total_size > size)
		return "size does not match the slots";
	return 0;
}

#endif
