/* SPDX-License-Identifier: MIT */
/*
 * GPU activity as the agent reported it, and what spyc makes of it: each
 * kernel's stack (the Python stack of its launch, else the launching
 * thread's nearest CPU sample), per-stream
 * timelines, and an nvprof-like summary.  Pure: no target, no channel.
 */
#ifndef SPYC_GPUPROF_H
#define SPYC_GPUPROF_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpuchan-layout.h"
#include "gpu/gpunames.h"
#include "gpu/gpunvtx.h"
#include "profile/stacks.h"

struct strbuf;

/* One CPU sample of one thread: when, which thread, which stack entry. */
struct gpu_cpu_sample {
	uint64_t t_ns; /* spyc's clock (now_ns(), CLOCK_MONOTONIC) */
	long tid;
	uint32_t entry; /* index in the CPU stacks' entries */
};

/* What the attribution and the timelines need of a CUDA API call. */
struct gpu_api_call {
	uint64_t correlation; /* CUPTI's 32-bit id, unwrapped (gpuprof.c) */
	uint32_t tid;
	uint64_t start, end; /* CUPTI's clock */
	uint32_t pid;
	uint32_t cbid;	 /* CUPTI's callback id */
	uint32_t domain; /* 1: driver, 2: runtime */
	uint32_t name;	 /* index in api_names, UINT32_MAX: none given */
};

/*
 * How CUPTI's clock relates to spyc's, from the agent's clock pairs:
 * monotonic = cupti + offset_ns.  drift_ns is the last pair's offset
 * minus the first's: how far the two clocks moved apart over the run.
 */
struct gpu_clock_alignment {
	int known; /* 0: no pair was seen; times are then CUPTI's as they are */
	int64_t offset_ns;
	int64_t drift_ns;
	uint64_t pairs;
};

/*
 * A kernel, copy or memset as gpuprof keeps it: its interval and what
 * names it, in 48 bytes rather than its 256-byte record (a kernel's
 * name is its distinct name's record, kept once).
 */
struct gpu_act {
	struct gpu_interval iv;
	uint64_t bytes;	 /* a copy's or memset's */
	uint32_t kernel; /* a kernel's name: gp->kernels[kernel] */
	uint8_t type;	 /* GPU_REC_KERNEL, GPU_REC_MEMCPY or GPU_REC_MEMSET */
	uint8_t copy_kind;
	/* times iv.correlation wrapped before it: its id is 64 bits */
	uint16_t wraps;
};

/*
 * What a run keeps of each device's activities once it folds them
 * (gpuprof_fold): when its work started, the threads that launched it,
 * and its busy spans that reach past the time idle is charged to.
 * GPU_ANY_DEVICE's: every device's together.
 */
struct gpu_device_state {
	uint32_t device;
	uint64_t first; /* its first activity's start, spyc's clock */
	struct gpu_span {
		uint64_t start, end;
	} * rest;
	size_t nr_rest, alloc_rest;
	uint32_t *tids;
	size_t nr_tids, alloc_tids;
};
#define GPU_ANY_DEVICE UINT32_MAX

/*
 * The summary's figures of activities folded away: per leaf (a frame
 * of gp->folded), and all together.
 */
struct gpu_row_stats {
	uint64_t calls, total, min, max;
};

struct gpuprof {
	/* kernels, copies and memsets, in the order they came */
	struct gpu_act *acts;
	size_t nr_acts, alloc_acts;
	/* a record of each distinct kernel name, by gpu_kernel_key() */
	struct gpu_record *kernels;
	size_t nr_kernels, alloc_kernels;
	struct stacks kernel_keys; /* frame i: kernels[i]'s key */
	struct gpu_api_call *apis;
	size_t nr_apis, alloc_apis;
	struct gpu_names names; /* kernel names too long for their records */
	char **api_names;	/* the distinct names of API calls */
	size_t nr_api_names, alloc_api_names;
	/*
	 * The Python stacks the agent copied at launches: per launch, its
	 * correlation id, thread and stack (an entry of launch_stacks, root
	 * first), or the launch whose stack it is (alias).
	 */
	struct gpu_launch {
		uint64_t correlation, alias; /* unwrapped */
		uint32_t tid;
		uint32_t entry; /* in launch_stacks; UINT32_MAX: see alias */
	} * launches;
	size_t nr_launches, alloc_launches;
	struct stacks launch_stacks; /* its own frames: names, files, lines */
	/* per frame of launch_stacks: 1 for an NVTX range's (not Python) */
	unsigned char *launch_nvtx;
	size_t alloc_launch_nvtx;
	/* NVTX ranges: launch stacks end in the frames of those open */
	struct gpunvtx nvtx;
	/*
	 * CUDA graph nodes: the stack each was made on (captured from a
	 * stream, or added by a call), an entry of launch_stacks, or the
	 * node it is a copy of (alias: instantiated); sorted by id.
	 */
	struct gpu_node {
		uint64_t node, alias; /* CUPTI's ids (GPU_STACK_NODE) */
		uint32_t entry;	      /* UINT32_MAX: see alias */
	} * nodes;
	size_t nr_nodes, alloc_nodes;
	/*
	 * Kernels replayed from a graph, as they come: their time by the
	 * stack that made their node, under GPU_ROOT_CAPTURE, by frames of
	 * its own (capture_view has them on stacks' frames, once
	 * attributed); how many there were, and of them on such a stack.
	 */
	struct stacks captured;
	uint32_t *captured_leaf; /* per gp->kernels: its leaf in captured */
	size_t alloc_captured_leaf;
	uint64_t graph_kernels, graph_kernels_placed;
	uint64_t graph_ns, graph_placed_ns;
	/* of graph_kernels, those whose node's making was not seen */
	uint64_t graph_node_unknown;
	uint32_t *launch_ids;
	size_t alloc_launch_ids;
	uint64_t launch_unnamed; /* stacks whose code could not be read */
	/* Why no launch had its own stack, when none could: for the summary */
	char launch_off[160];
	/* per CPU frame id: 1 for a Python frame (not a native one) */
	unsigned char *python_frame;
	size_t alloc_python_frame;
	struct gpu_cpu_sample *samples;
	size_t nr_samples, alloc_samples;
	/*
	 * Samples of Python threads waiting in autograd's engine (a
	 * backward pass, whose kernels PyTorch launches from threads of its
	 * own, with no Python), their entries waiting_stacks'.  Sorted by
	 * time once attributed.
	 */
	struct gpu_cpu_sample *waiting;
	size_t nr_waiting, alloc_waiting;
	struct stacks waiting_stacks; /* its own frames: names, files, lines */
	/* per frame of waiting_stacks: 1 for a Python frame */
	unsigned char *waiting_python;
	size_t alloc_waiting_python;
	struct gpu_clock_alignment clock;
	/*
	 * Every pair (cupti_ns, monotonic_ns), sorted by CUPTI's time once
	 * attributed: a time goes by the pair nearest it, so that a step of
	 * CUPTI's clock (CLOCK_REALTIME, when the agent could not put CUPTI
	 * on CLOCK_MONOTONIC) moves only what came after it.
	 */
	struct gpu_clock *pairs;
	size_t nr_pairs, alloc_pairs;
	int pairs_sorted;
	uint64_t syncs;	    /* synchronisation records */
	uint64_t sync_time; /* their nanoseconds, all together */
	/* The caller sets these, from the channel's header. */
	uint64_t lost;		/* records the agent dropped: ring full */
	uint64_t zero_time;	/* records with no time, dropped */
	uint64_t cupti_dropped; /* records CUPTI dropped: no buffer space */
	uint64_t bad_buffers;	/* CUPTI buffers cut short: invalid record */
	/* launches into a stream capture: no work, no stack kept */
	uint64_t captured_launches;
	/* processes that inherited the channel from the target: not served */
	uint64_t other_processes;
	uint32_t nvtx_state; /* enum gpu_nvtx_state */
	/* the NVTX tool the program was given instead of spyc's, or "" */
	char nvtx_other[160];
	/*
	 * spyc's clock (now_ns) when a record of work or an API call, and
	 * a launch's stack, last arrived: launches going on with no records
	 * mean that another CUPTI client took CUPTI's activity buffers.
	 */
	uint64_t last_activity_at, last_launch_at;
	int monotonic_clock;  /* CUPTI's times are CLOCK_MONOTONIC's */
	uint32_t api_records; /* enum gpu_api_records: which calls */
	uint64_t t0_ns; /* spyc's clock when sampling started: time zero */
	/* when it ended (0: at the last CPU sample or activity) */
	uint64_t t1_ns;
	uint64_t period_ns; /* between CPU samples, as asked (0: not said) */
	/*
	 * CUPTI's correlation ids are 32 bits; gpuprof makes them 64 by
	 * taking each as the one nearest the highest seen (corr_top).
	 */
	uint64_t corr_top;
	/* How many of apis, launches, samples, waiting are in order. */
	size_t apis_sorted, launches_sorted, samples_sorted, waiting_sorted;

	/*
	 * Bounded memory: once keep and an eighth more activities are
	 * held, gpuprof_fold attributes all but the newest keep of them
	 * and lets them go, with the API calls and launch stacks older
	 * than every activity still held.  What they add to the profile is kept
	 * here, by frames of its own (mapped to gp->stacks' by
	 * gpuprof_attribute); the timeline outputs hold the activities still
	 * held.
	 */
	size_t keep;		   /* 0: GPU_KEEP_DEFAULT */
	uint64_t nr_folded;	   /* activities folded away */
	struct stacks folded;	   /* their GPU time by stack */
	struct stacks folded_idle; /* idle time charged up to idle_done */
	uint64_t *folded_line_time, *folded_idle_line_time; /* by frame */
	size_t nr_folded_line_time, nr_folded_idle_line_time;
	uint32_t *folded_kernel_leaf; /* per gp->kernels: its leaf in folded */
	size_t alloc_folded_kernel_leaf;
	struct gpu_row_stats *folded_rows; /* per frame of folded */
	size_t alloc_folded_rows;
	uint64_t folded_kernels, folded_copies, folded_memsets;
	uint64_t folded_time; /* all folded activities' nanoseconds */
	uint64_t folded_copy_bytes[16], folded_copy_time[16];
	uint64_t folded_copy_count[16];
	struct gpu_device_state *devs; /* the devices seen, and any device */
	size_t nr_devs, alloc_devs;
	uint64_t idle_done;    /* idle charged before this (0: none yet) */
	uint64_t busy_settled; /* any device's busy time before idle_done */
	uint64_t last_end;     /* the latest end folded, spyc's clock */
	/* per frame of folded, its id in stacks (gpuprof_attribute) */
	uint32_t *folded_map;

	/*
	 * Filled by gpuprof_attribute(): the CPU stacks' frames first, with
	 * the same ids, then the GPU ones; an entry per (launching thread,
	 * CPU stack, activity name), its count the activity's nanoseconds.
	 */
	struct stacks stacks;
	uint32_t *leaf;	     /* per activity: its name's frame id in stacks */
	uint64_t exact;	     /* placed on the Python stack of their launch */
	uint64_t attributed; /* activities placed on a CPU sample's stack */
	uint64_t no_launch;  /* no API call record with its correlation id */
	uint64_t no_sample;  /* no CPU sample of the launching thread */
	/* launched by a thread with no Python: on a waiting thread's stack */
	uint64_t by_waiting;
	/*
	 * GPU nanoseconds by the innermost Python frame (a line) of the
	 * launching stack, indexed by its frame id; nr_line_time entries.
	 */
	uint64_t *line_time;
	size_t nr_line_time;
	/*
	 * Filled by gpuprof_attribute() too: the time each device was idle
	 * (ran no kernel, copy or memset) from t0_ns to t1_ns, by what the
	 * threads that launched its work ran meanwhile.  A CPU sample of
	 * such a thread stands for the time from halfway to its thread's
	 * previous sample to halfway to its next (at most a period each
	 * way): the device's idle time in there goes on its stack, under
	 * GPU_ROOT_IDLE (split evenly when several threads launched on the
	 * device); idle time no such sample stands for goes under
	 * GPU_ROOT_IDLE and GPU_IDLE_UNSAMPLED.  Frames: the CPU stacks'
	 * first, with the same ids; counts: nanoseconds.
	 */
	struct stacks idle;
	/* captured's entries on stacks' frames (the same ids) */
	struct stacks capture_view;
	uint64_t idle_ns;	    /* all devices' idle time */
	uint64_t idle_window_ns;    /* all devices' time looked at */
	uint64_t idle_unsampled_ns; /* of idle_ns, under GPU_IDLE_UNSAMPLED */
	uint64_t *idle_line_time; /* by innermost Python frame, as line_time */
	size_t nr_idle_line_time;
	int attributed_done;
};

/* The root frame of every GPU stack: how it was attributed. */
#define GPU_ROOT_LAUNCH "[GPU time, by the Python stack of the launch]"
#define GPU_ROOT_NEAREST                                                       \
	"[GPU time, by the launching thread's nearest CPU sample]"
#define GPU_ROOT_NO_LAUNCH "[GPU time, no launch record]"
/* Below the launch's frames when the agent copied only the innermost. */
#define GPU_ROOT_CUT "[deeper frames not copied at the launch]"
#define GPU_ROOT_NO_SAMPLE "[GPU time, no CPU sample of the launching thread]"
#define GPU_ROOT_WAITING                                                       \
	"[GPU time, launched for the thread waiting in autograd's engine]"
/* The root of the stacks of graph kernels by the making of their node. */
#define GPU_ROOT_CAPTURE                                                       \
	"[CUDA graph kernels, by the stack that made their node]"
/* The root of every stack of GPU idle time: "[GPU 0 idle]", per device. */
#define GPU_ROOT_IDLE "[GPU %u idle]"
#define GPU_IDLE_UNSAMPLED "[no CPU sample of a launching thread]"

void gpuprof_init(struct gpuprof *gp);
/* Free everything gp owns; gp is left empty (as after gpuprof_init). */
void gpuprof_release(struct gpuprof *gp);

/* Keep what outputs need of one record from the channel (a copy). */
void gpuprof_add(struct gpuprof *gp, const struct gpu_record *rec);

/* Activities held for the timeline by default: 48 MB of them. */
#define GPU_KEEP_DEFAULT 1000000

/*
 * Once gp holds keep and an eighth more activities (keep: gp->keep, else
 * GPU_KEEP_DEFAULT): attribute all but the newest keep
 * (cpu: the CPU stacks the samples' entries are of), charge the idle
 * time before the oldest one left, and let them go, with the API calls
 * and launch stacks older than every activity left.  Otherwise nothing.
 * Returns how many were folded.
 */
size_t gpuprof_fold(struct gpuprof *gp, const struct stacks *cpu);

/* Every activity of the run: those held and those folded away. */
uint64_t gpuprof_activities(const struct gpuprof *gp);

/* Note that thread tid's stack at t_ns was CPU stacks entry `entry`. */
void gpuprof_cpu_sample(struct gpuprof *gp, uint64_t t_ns, long tid,
			uint32_t entry);

/*
 * Whether a thread whose innermost Python frame is in this file waits in
 * autograd's engine (torch.autograd.backward and grad call it from
 * torch/autograd/graph.py, or from torch/autograd/__init__.py before
 * PyTorch 2.3): the thread that the engine's own threads launch for.
 */
int gpuprof_autograd_file(const char *file);

/*
 * Note that thread tid (ident, name) was waiting in autograd's engine
 * at t_ns, on the stack of these frame ids of cpu (root first).  A
 * kernel launched by a thread with no Python frames and no CPU sample
 * goes on the stack of the waiting sample nearest its launch, and under
 * the NVTX ranges open on the waiting thread at the launch.
 */
void gpuprof_waiting_sample(struct gpuprof *gp, uint64_t t_ns, long tid,
			    uint64_t ident, const char *name,
			    const struct stacks *cpu, const uint32_t *frames,
			    size_t depth);

/*
 * Note that CPU frame id `frame` is a Python one (a function at a line),
 * not a native one: the summary's "Python lines" are made of these.
 * When no frame is noted, every CPU frame counts as one.
 */
void gpuprof_python_frame(struct gpuprof *gp, uint32_t frame);

/*
 * The Python stack the agent copied at the launch with this correlation
 * id, on thread tid: frames root first (copied), then the NVTX ranges
 * open around it, outermost first (GPU_NVTX_PREFIX frames).  With alias
 * (not 0), no frames: the launch's stack is launch alias's.
 */
void gpuprof_launch_stack(struct gpuprof *gp, uint32_t correlation,
			  uint32_t tid, uint32_t alias,
			  const struct stack_frame *frames, size_t depth);

/*
 * The Python stack the agent copied as CUDA graph node `node` was made
 * (captured from a stream, or added by a call): frames root first
 * (copied).  With alias (not 0), no frames: the node is a copy of node
 * alias, made as a graph was instantiated.
 */
void gpuprof_node_stack(struct gpuprof *gp, uint64_t node, uint64_t alias,
			const struct stack_frame *frames, size_t depth);

/*
 * A CUPTI time on spyc's clock (unchanged when no clock pair was seen):
 * by the first pair's offset, or once attributed, by the pair nearest
 * in CUPTI's time.
 */
uint64_t gpuprof_to_monotonic(const struct gpuprof *gp, uint64_t cupti_ns);

/*
 * Build gp->stacks and gp->leaf from the activities, the launch stacks,
 * the API calls and the CPU samples, whose entries are cpu's: each
 * activity goes on the Python stack the agent copied at its launch (the
 * one with its correlation id), under GPU_ROOT_LAUNCH; else on the stack
 * of the CPU sample of its launching thread (the API call with its
 * correlation id) nearest in time to the launch, under GPU_ROOT_NEAREST;
 * else, from a launching thread never sampled (no Python), on the stack
 * of the thread waiting in autograd's engine nearest the launch, under
 * GPU_ROOT_WAITING; one that cannot goes under GPU_ROOT_NO_LAUNCH or
 * GPU_ROOT_NO_SAMPLE.
 * Call once all records and samples are in; later calls do nothing.
 */
void gpuprof_attribute(struct gpuprof *gp, const struct stacks *cpu);

/*
 * The name outputs give an activity: a kernel's demangled name, whole
 * (a long one from names, which may be NULL); its mangled one when it
 * does not demangle; its start, "..." and its hash ("[name 1f2e3d4c]")
 * when spyc has only its start, so that two such names are never one;
 * "[memcpy HtoD]", "[memset]".  Appended to sb.
 */
void gpuprof_activity_name(const struct gpu_names *names,
			   const struct gpu_record *act, struct strbuf *sb);

/* Whether this spyc demangles C++ names (built with a demangler). */
int gpuprof_demangles(void);

/*
 * The API call that launched act (the one with its correlation id), or
 * NULL.  Only once gpuprof_attribute() has run.
 */
const struct gpu_api_call *gpuprof_launch(const struct gpuprof *gp,
					  const struct gpu_act *act);

/* An API call's name ("cudaLaunchKernel"; else "[CUDA runtime call 211]"). */
void gpuprof_api_name(const struct gpuprof *gp, const struct gpu_api_call *a,
		      struct strbuf *sb);

/*
 * An activity's start and end on CUPTI's clock, the end no earlier than
 * the start.  Its device, stream and ids: act->iv.
 */
void gpuprof_activity_times(const struct gpu_act *act, uint64_t *start,
			    uint64_t *end);

/* gpuprof_activity_name() of one of gp->acts. */
void gpuprof_act_name(const struct gpuprof *gp, const struct gpu_act *act,
		      struct strbuf *sb);

/*
 * The activities' indices ordered by device, stream and start: the
 * timeline of each stream in turn.  Returns an array of gp->nr_acts
 * indices the caller frees (NULL when there are none).
 */
uint32_t *gpuprof_timeline(const struct gpuprof *gp);

/*
 * Append the summary, like nvprof's "GPU activities", to sb: kernels
 * (and memsets) by total time, at most max_rows of them (name, calls,
 * total, average, min, max, share of all GPU activity time), copies
 * by direction, how busy the GPU was, the Python lines whose launches
 * took the most GPU time (at most max_rows), how activities were
 * attributed, and the clock alignment.  Lines end in '\n'; nothing for no
 * activity.
 */
void gpuprof_summary(const struct gpuprof *gp, size_t max_rows,
		     struct strbuf *sb);

/*
 * The name of the profile of GPU time by stack: "GPU time by launching
 * stack" and how the stacks were found.  Once attributed.
 */
const char *gpuprof_stacks_name(const struct gpuprof *gp);

/* "HtoD", "DtoH", ... for a CUpti_ActivityMemcpyKind; never NULL. */
const char *gpu_copy_kind_name(unsigned kind);

#endif
