/* SPDX-License-Identifier: MIT */
/*
 * spyc's GPU agent: a library the CUDA driver loads (CUDA_INJECTION64_PATH)
 * or spyc injects into a running process.  It loads CUPTI at run time,
 * collects activity records, and hands them to spyc through the channel
 * (agent/ring.c).  It never prints to, blocks, aborts or exits its host:
 * every failure becomes a status in the channel's header.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "agent.h"
#include "libc-compat.h"
#include "pystack.h"
#include "ring.h"

#define EXPORT __attribute__((visibility("default")))

/* CUPTI's activity buffers: the size its documentation suggests. */
#define ACTIVITY_BUFFER_SIZE (1u << 20)
#define ACTIVITY_BUFFER_ALIGN 8
/*
 * CUPTI's worker thread's period (cuptiActivityFlushPeriod), in ms: it
 * hands over only full buffers ("periodic flush can return only those
 * activity buffers which are full", says its documentation), which a
 * quiet program takes minutes to fill.
 */
#define FLUSH_PERIOD_MS 100
/*
 * So the watcher asks for the rest this often (ms), with a default
 * flush (cuptiActivityFlushAll(0)): buffers whose records are complete,
 * full or not, which its documentation says may be done "at a regular
 * interval in a separate thread".  A forced flush, which also hands over
 * incomplete records, is kept for the end.  spyc drains the channel as
 * it samples: a kernel reaches it within some 200 ms, not in bursts.
 */
#define WATCH_FLUSH_MS 200
/* How often the agent's watcher thread looks at spyc's control word. */
#define CONTROL_POLL_MS 20

/* The CUPTI functions the agent uses, resolved with dlsym. */
static struct {
	void *handle;
	__typeof__(cuptiGetVersion) *get_version;
	__typeof__(cuptiGetResultString) *get_result_string;
	__typeof__(cuptiGetTimestamp) *get_timestamp;
	__typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
	__typeof__(cuptiActivityEnable) *enable;
	__typeof__(cuptiActivityDisable) *disable;
	__typeof__(cuptiActivityFlushAll) *flush_all;
	__typeof__(cuptiActivityGetNextRecord) *next_record;
	/* Optional (older CUPTIs lack them): resolved when present. */
	__typeof__(cuptiActivityFlushPeriod) *flush_period;
	__typeof__(cuptiSetThreadIdType) *set_thread_id_type;
	__typeof__(cuptiGetCallbackName) *get_callback_name;
	__typeof__(cuptiGetGraphNodeId) *get_graph_node_id;
	__typeof__(cuptiSubscribe) *subscribe;
	__typeof__(cuptiUnsubscribe) *unsubscribe;
	__typeof__(cuptiEnableCallback) *enable_callback;
	__typeof__(cuptiActivityRegisterTimestampCallback) *timestamp_callback;
	__typeof__(cuptiActivityGetNumDroppedRecords) *dropped_records;
	__typeof__(cuptiActivityEnableRuntimeApi) *enable_runtime_api;
	__typeof__(cuptiActivityEnableDriverApi) *enable_driver_api;
} cupti;

/* What the agent exports: declared here, its only users being outside. */
EXPORT int InitializeInjection(void);
EXPORT int spyc_agent_attach(const char *channel);

/*
 * The channel of the spyc served now (chan()): the first one's, or a
 * later spyc's once the one before it has stopped.  A channel once
 * mapped stays mapped for the process's life (one per attach): a
 * callback on another thread may still write to the one it loaded.
 */
static struct ring_writer first_writer;
static struct ring_writer *writer_now = &first_writer;
/* 0: not started; 1: started (or starting) for a channel. */
static int started;
/* 1 once this spyc's collection has stopped (stop_collecting). */
static int stopped;
/*
 * 1 once the last spyc's session is over (stopped, its watcher gone, or
 * it could not start): a later spyc may then start one of its own.
 */
static int ended;
/* 1 once CUPTI's activity callbacks and clock are set: kept for good. */
static int callbacks_set;
/* 1 while the watcher thread runs. */
static int watching;
/* The launch callbacks' subscription, NULL when there is none. */
static CUpti_SubscriberHandle subscriber;
/* spyc's layout of the target's frames, once checked (launch_layout). */
static struct gpu_py_layout layout;
static int layout_ok;
/* 1 once CUPTI takes its timestamps from monotonic_ns (the callback). */
static int monotonic_clock;
/* Inside a runtime call that copied its stack: its correlation id. */
static __thread uint32_t runtime_correlation;
/*
 * Stream captures this thread has begun and not ended, through the
 * runtime and through the driver (a runtime capture makes a driver one
 * inside it): launches meanwhile are recorded into a CUDA graph and
 * queue no work, so no stack of theirs is copied.
 */
static __thread unsigned captures[2];

/* The calls that queue work on a device: a stack is copied at each. */
static const CUpti_CallbackId runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
static const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
};

/* The start and end of a stream capture, whose callbacks are watched. */
static const CUpti_CallbackId runtime_capture_begins[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030,
};
static const CUpti_CallbackId runtime_capture_ends[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000,
};
static const CUpti_CallbackId driver_capture_begins[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
};
static const CUpti_CallbackId driver_capture_ends[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
};
/* A CUDA graph's nodes made and copied: their stacks. */
static const CUpti_CallbackId graph_node_calls[] = {
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
};

/*
 * The calls whose API records spyc uses besides the launches above: the
 * waits, which the Chrome trace shows on the calling thread's row.
 */
static const CUpti_CallbackId runtime_waits[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000,
};
static const CUpti_CallbackId driver_waits[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
};
/*
 * The same by name, as cuptiGetCallbackName gives it: every variant
 * (_ptsz, _v2, 2D, 3D, ToSymbol, Ex) of a launch, copy, memset, graph
 * launch or wait, the lists above holding only the common ones.
 */
static const char *const kept_calls[] = {
    "cudaLaunch",
    "cudaMemcpy",
    "cudaMemset",
    "cudaGraphLaunch",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaStreamWaitEvent",
    "cuLaunch",
    "cuMemcpy",
    "cuMemset",
    "cuGraphLaunch",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "cuStreamWaitEvent",
};

/* The activity kinds collected, in the order they are enabled. */
static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
};

static struct ring_writer *chan(void)
{
	return __atomic_load_n(&writer_now, __ATOMIC_ACQUIRE);
}

static void set_status(enum gpu_agent_status status, int detail,
		       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_status(enum gpu_agent_status status, int detail,
		       const char *fmt, ...)
{
	char msg[GPUCHAN_MESSAGE_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ring_set_status(chan(), status, detail, msg);
}

static const char *result_string(CUptiResult r)
{
	const char *s = NULL;

	if (cupti.get_result_string &&
	    cupti.get_result_string(r, &s) == CUPTI_SUCCESS && s)
		return s;
	return "unknown CUPTI error";
}

/* Whether the CUDA driver is loaded in this process. */
static int cuda_loaded(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

	if (!h)
		return 0;
	dlclose(h); /* NOLOAD took a reference */
	return 1;
}

/* A library mapped in this process whose name holds key, for dl_iterate. */
struct mapped_lookup {
	const char *key;
	char path[4096];
};

static int find_mapped(struct dl_phdr_info *info, size_t size, void *data)
{
	struct mapped_lookup *m = data;

	if (info->dlpi_name && strstr(info->dlpi_name, m->key)) {
		snprintf(m->path, sizeof(m->path), "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

static const char *mapped_library(struct mapped_lookup *m, const char *key)
{
	m->key = key;
	m->path[0] = '\0';
	dl_iterate_phdr(find_mapped, m);
	return m->path[0] ? m->path : NULL;
}

static void *try_open(const char *path, int flags)
{
	return path && *path ? dlopen(path, flags) : NULL;
}

/*
 * Load CUPTI, preferring the copy the process already uses (PyTorch
 * ships one), then $SPYC_CUPTI, then one beside the CUDA runtime the
 * process uses (a pip-installed runtime keeps it in a sibling package),
 * then the loader's search path, then the toolkit spyc was built with.
 * Returns the handle, or NULL.
 */
static void *open_cupti(void)
{
	struct mapped_lookup m;
	char path[4096 + 64];
	const char *rt;
	void *h;

	h = try_open(mapped_library(&m, "/libcupti.so"),
		     RTLD_NOW | RTLD_NOLOAD);
	if (h)
		return h;
	h = try_open(getenv("SPYC_CUPTI"), RTLD_NOW | RTLD_LOCAL);
	if (h)
		return h;
	rt = mapped_library(&m, "/libcudart.so");
	if (rt) {
		const char *base = strrchr(rt, '/') + 1;
		const char *suffix = strstr(base, ".so");
		int dirlen = (int)(base - rt);

		snprintf(path, sizeof(path), "%.*slibcupti%s", dirlen, rt,
			 suffix);
		h = try_open(path, RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
		snprintf(path, sizeof(path),
			 "%.*s../../cuda_cupti/lib/libcupti%s", dirlen, rt,
			 suffix);
		h = try_open(path, RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	snprintf(path, sizeof(path), "libcupti.so.%d",
		 CUPTI_API_VERSION / 10000);
	h = try_open(path, RTLD_NOW | RTLD_LOCAL);
	if (h)
		return h;
	h = try_open("libcupti.so", RTLD_NOW | RTLD_LOCAL);
	if (h)
		return h;
#ifdef SPYC_CUPTI_FALLBACK
	h = try_open(SPYC_CUPTI_FALLBACK, RTLD_NOW | RTLD_LOCAL);
#endif
	return h;
}

/* Resolve every function; 0, or -1 naming the missing one in the status. */
static int resolve_cupti(void)
{
	static const struct {
		const char *name;
		size_t offset;
	} fns[] = {
#define FN(field, sym) {#sym, __builtin_offsetof(__typeof__(cupti), field)}
	    FN(get_version, cuptiGetVersion),
	    FN(get_result_string, cuptiGetResultString),
	    FN(get_timestamp, cuptiGetTimestamp),
	    FN(register_callbacks, cuptiActivityRegisterCallbacks),
	    FN(enable, cuptiActivityEnable),
	    FN(disable, cuptiActivityDisable),
	    FN(flush_all, cuptiActivityFlushAll),
	    FN(next_record, cuptiActivityGetNextRecord),
#undef FN
	};
	void *optional;
	size_t i;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(cupti.handle, fns[i].name);

		if (!f) {
			set_status(GPU_AGENT_NO_CUPTI, 0, "libcupti lacks %s",
				   fns[i].name);
			return -1;
		}
		memcpy((char *)&cupti + fns[i].offset, &f, sizeof(f));
	}
	optional = dlsym(cupti.handle, "cuptiActivityFlushPeriod");
	memcpy(&cupti.flush_period, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiSetThreadIdType");
	memcpy(&cupti.set_thread_id_type, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiGetCallbackName");
	memcpy(&cupti.get_callback_name, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiGetGraphNodeId");
	memcpy(&cupti.get_graph_node_id, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiSubscribe");
	memcpy(&cupti.subscribe, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiUnsubscribe");
	memcpy(&cupti.unsubscribe, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiEnableCallback");
	memcpy(&cupti.enable_callback, &optional, sizeof(optional));
	optional =
	    dlsym(cupti.handle, "cuptiActivityRegisterTimestampCallback");
	memcpy(&cupti.timestamp_callback, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiActivityGetNumDroppedRecords");
	memcpy(&cupti.dropped_records, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiActivityEnableRuntimeApi");
	memcpy(&cupti.enable_runtime_api, &optional, sizeof(optional));
	optional = dlsym(cupti.handle, "cuptiActivityEnableDriverApi");
	memcpy(&cupti.enable_driver_api, &optional, sizeof(optional));
	return 0;
}

/*
 * CUPTI's timestamps, once registered (cuptiActivityRegisterTimestampCallback):
 * CLOCK_MONOTONIC, which spyc samples by and which no wall-clock step
 * (NTP, date -s) moves; CUPTI's own on Linux is CLOCK_REALTIME.
 */
uint64_t agent_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI monotonic_ns(void)
{
	return agent_monotonic_ns();
}

/*
 * A pair of CUPTI's and CLOCK_MONOTONIC's readings.  With the timestamp
 * callback the two are one clock: the pair is one reading twice (whether
 * cuptiGetTimestamp goes through the callback is not documented).
 */
static void clock_record(void)
{
	struct gpu_record r;
	uint64_t t = 0;

	memset(&r, 0, sizeof(r));
	if (__atomic_load_n(&monotonic_clock, __ATOMIC_ACQUIRE))
		t = monotonic_ns();
	else if (cupti.get_timestamp(&t) != CUPTI_SUCCESS)
		return;
	r.type = GPU_REC_CLOCK;
	r.size = sizeof(r.u.clock);
	r.u.clock.cupti_ns = t;
	r.u.clock.monotonic_ns = monotonic_clock ? t : monotonic_ns();
	ring_write(chan(), &r);
}

/* Add what CUPTI says it dropped since it was last asked to the header. */
static void count_cupti_dropped(void)
{
	size_t dropped = 0;

	if (cupti.dropped_records &&
	    cupti.dropped_records(NULL, 0, &dropped) == CUPTI_SUCCESS &&
	    dropped)
		__atomic_add_fetch(&chan()->header->cupti_dropped,
				   (uint64_t)dropped, __ATOMIC_RELAXED);
}

/*
 * Whether an activity has no time: CUPTI gives 0 for a start or an end
 * it could not take (no device memory left for it, says
 * cuptiActivityGetNextRecord's documentation); such a record would be
 * put decades before the run.
 */
static int no_time(uint64_t start, uint64_t end)
{
	return !start || !end;
}

/*
 * The hashes of the long kernel names already sent whole (0: a free
 * slot): a name is sent once, before its first kernel.  Open addressing;
 * a name that finds no slot is sent again with each of its kernels.
 */
#define SENT_NAMES 4096
#define SENT_PROBES 64
static uint64_t sent_names[SENT_NAMES];

static int name_sent(uint64_t hash)
{
	size_t i;

	for (i = 0; i < SENT_PROBES; i++) {
		uint64_t h = __atomic_load_n(
		    &sent_names[(hash + i) % SENT_NAMES], __ATOMIC_ACQUIRE);

		if (h == hash)
			return 1;
		if (!h)
			return 0;
	}
	return 0;
}

static void mark_name_sent(uint64_t hash)
{
	size_t i;

	for (i = 0; i < SENT_PROBES; i++) {
		uint64_t *slot = &sent_names[(hash + i) % SENT_NAMES];
		uint64_t expected = 0;

		if (__atomic_compare_exchange_n(slot, &expected, hash, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE) ||
		    expected == hash)
			return;
	}
}

/*
 * Send a kernel name too long for its record in pieces, unless it was
 * sent already.  A piece the ring cannot take leaves the name unsent, to
 * be tried again with its next kernel; spyc shows its start meanwhile.
 */
static void send_long_name(const char *name, uint32_t len, uint64_t hash)
{
	struct gpu_record r;
	uint32_t off;

	if (!hash)
		hash = 1; /* 0 marks a free slot */
	if (name_sent(hash))
		return;
	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_NAME;
	r.size = sizeof(r.u.name);
	r.u.name.hash = hash;
	r.u.name.len = len;
	for (off = 0; off < len; off += GPU_NAME_PIECE) {
		uint32_t n =
		    len - off < GPU_NAME_PIECE ? len - off : GPU_NAME_PIECE;

		r.u.name.offset = off;
		r.u.name.count = n;
		memcpy(r.u.name.text, name + off, n);
		if (ring_write(chan(), &r))
			return;
	}
	mark_name_sent(hash);
}

/* The call's name as CUPTI knows it (a lookup in its tables), or "". */
static void api_name(struct gpu_api *o)
{
	const char *name = NULL;

	if (cupti.get_callback_name &&
	    cupti.get_callback_name((CUpti_CallbackDomain)o->domain, o->cbid,
				    &name) == CUPTI_SUCCESS &&
	    name)
		snprintf(o->name, sizeof(o->name), "%s", name);
}

/* Turn one CUPTI activity record into a channel record; 0 if not wanted. */
static int convert(const CUpti_Activity *a, struct gpu_record *r)
{
	memset(r, 0, sizeof(*r));
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)a;
		struct gpu_kernel *o = &r->u.kernel;
		const char *name = k->name ? k->name : "";
		size_t len = strnlen(name, GPU_NAME_MAX);

		r->type = GPU_REC_KERNEL;
		r->size = sizeof(*o);
		o->iv = (struct gpu_interval){
		    k->start,	 k->end,       k->correlationId,
		    k->deviceId, k->contextId, k->streamId,
		};
		o->grid[0] = (uint32_t)k->gridX;
		o->grid[1] = (uint32_t)k->gridY;
		o->grid[2] = (uint32_t)k->gridZ;
		o->block[0] = (uint32_t)k->blockX;
		o->block[1] = (uint32_t)k->blockY;
		o->block[2] = (uint32_t)k->blockZ;
		o->shared_static = (uint32_t)k->staticSharedMemory;
		o->shared_dynamic = (uint32_t)k->dynamicSharedMemory;
		o->registers = k->registersPerThread;
		o->graph_node = k->graphNodeId;
		o->name_truncated = name[len] != '\0';
		o->name_len = (uint32_t)len;
		o->name_hash = gpu_name_hash(name, len);
		if (!o->name_hash)
			o->name_hash = 1;
		if (len >= sizeof(o->name)) {
			send_long_name(name, (uint32_t)len, o->name_hash);
			len = sizeof(o->name) - 1;
		}
		memcpy(o->name, name, len);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)a;
		struct gpu_memcpy *o = &r->u.memcpy;

		r->type = GPU_REC_MEMCPY;
		r->size = sizeof(*o);
		o->iv = (struct gpu_interval){
		    m->start,	 m->end,       m->correlationId,
		    m->deviceId, m->contextId, m->streamId,
		};
		o->bytes = m->bytes;
		o->copy_kind = m->copyKind;
		o->src_kind = m->srcKind;
		o->dst_kind = m->dstKind;
		o->flags = m->flags;
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)a;
		struct gpu_memset *o = &r->u.memset;

		r->type = GPU_REC_MEMSET;
		r->size = sizeof(*o);
		o->iv = (struct gpu_interval){
		    m->start,	 m->end,       m->correlationId,
		    m->deviceId, m->contextId, m->streamId,
		};
		o->bytes = m->bytes;
		o->value = m->value;
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)a;
		struct gpu_sync *o = &r->u.sync;

		r->type = GPU_REC_SYNC;
		r->size = sizeof(*o);
		/* CUPTI names no device for a synchronization. */
		o->iv = (struct gpu_interval){
		    s->start,	   s->end,	 s->correlationId,
		    GPU_NO_DEVICE, s->contextId, s->streamId,
		};
		o->type = (uint32_t)s->type;
		o->event = s->cudaEventId;
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *p = (const void *)a;
		struct gpu_api *o = &r->u.api;

		r->type = GPU_REC_API;
		r->size = sizeof(*o);
		o->start = p->start;
		o->end = p->end;
		o->correlation = p->correlationId;
		o->cbid = p->cbid;
		o->domain = a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? 1 : 2;
		o->pid = p->processId;
		o->tid = p->threadId;
		o->result = (int32_t)p->returnValue;
		api_name(o);
		return 1;
	}
	default:
		return 0;
	}
}

static void stop_collecting(int flush);

/*
 * spyc's layout of the target's frames, once spyc has written it and it
 * checks (ready, its sum, offsets that make sense); NULL before.  The
 * checked copy is kept: spyc writes it once.
 */
static const struct gpu_py_layout *launch_layout(void)
{
	const struct gpu_py_layout *l = &chan()->header->py;
	struct gpu_py_layout copy;

	if (__atomic_load_n(&layout_ok, __ATOMIC_ACQUIRE))
		return &layout;
	if (!__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE))
		return NULL;
	memcpy(&copy, l, sizeof(copy));
	if (copy.sum != gpu_py_layout_sum(&copy) || !copy.kind ||
	    copy.kind > GPU_PY_KIND_MAX || copy.max_frames > GPU_STACK_MAX ||
	    copy.tstate_frame < 0 || copy.frame_back < 0 ||
	    copy.frame_code < 0 || copy.frame_pos < 0 ||
	    (copy.kind == GPU_PY_CFRAME && copy.cframe_current < 0))
		return NULL;
	layout = copy;
	__atomic_store_n(&layout_ok, 1, __ATOMIC_RELEASE);
	return &layout;
}

/*
 * Copy the calling thread's Python stack into the channel, as the stack
 * of the launch with this correlation id; with alias, only say that it
 * is the stack of the launch `alias` (a driver call inside a runtime
 * call).  Never waits: a full ring drops it, and spyc falls back to the
 * nearest CPU sample.
 */
static void write_stack(uint64_t correlation, uint64_t alias, uint8_t flags)
{
	const struct gpu_py_layout *l = launch_layout();
	struct gpu_stack_frame frames[GPU_STACK_MAX];
	uint64_t range = nvtx_innermost();
	struct gpu_record r;
	size_t n = 0, first;
	int cut = 0;

	if (!l)
		return;
	if (!alias)
		n = pystack_copy(l, frames, GPU_STACK_MAX, &cut);
	/* A thread with no Python frames: its NVTX ranges, if any. */
	if (!n && !alias && !range)
		return;
	memset(&r, 0, sizeof(r));
	r.type = GPU_REC_STACK;
	r.size = sizeof(r.u.stack);
	r.u.stack.correlation = correlation;
	r.u.stack.tid = (uint32_t)compat_gettid();
	r.u.stack.alias = alias;
	r.u.stack.depth = (uint8_t)n;
	r.u.stack.flags = (uint8_t)(flags | (cut ? GPU_STACK_CUT : 0));
	r.u.stack.range = range;
	first = 0;
	do {
		size_t count =
		    n - first < GPU_STACK_FRAMES ? n - first : GPU_STACK_FRAMES;

		r.u.stack.first = (uint8_t)first;
		r.u.stack.count = (uint8_t)count;
		memcpy(r.u.stack.frames, frames + first,
		       count * sizeof(*frames));
		memset(r.u.stack.frames + count, 0,
		       (GPU_STACK_FRAMES - count) * sizeof(*frames));
		if (ring_write(chan(), &r))
			return;
		first += count;
	} while (first < n);
}

static void write_launch_stack(uint32_t correlation, uint32_t alias)
{
	write_stack(correlation, alias, 0);
}

/*
 * CUPTI's resource callbacks for CUDA graphs: a node made (captured from
 * a stream, or added by a call) gets the making thread's stack, by the
 * node's id; a node copied into an executable graph (which the kernels
 * of its replays name) refers to the node it was copied from.
 */
static void graph_node_callback(CUpti_CallbackId cbid,
				const CUpti_ResourceData *d)
{
	const CUpti_GraphData *g = d ? d->resourceDescriptor : NULL;
	uint64_t node = 0, original = 0;

	if (!g || !cupti.get_graph_node_id ||
	    cupti.get_graph_node_id(g->node, &node) != CUPTI_SUCCESS || !node)
		return;
	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)
		write_stack(node, 0, GPU_STACK_NODE);
	else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED &&
		 cupti.get_graph_node_id(g->originalNode, &original) ==
		     CUPTI_SUCCESS &&
		 original && original != node)
		write_stack(node, original, GPU_STACK_NODE);
}

static int listed(CUpti_CallbackId cbid, const CUpti_CallbackId *ids, size_t n);
#define LISTED(cbid, ids) listed(cbid, ids, sizeof(ids) / sizeof(*ids))

/*
 * Whether call cbid begins or ends a stream capture; at its exit, keep
 * count of this thread's captures (one that failed to begin is none).
 */
static int capture_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			const CUpti_CallbackData *d)
{
	int driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
	int begin = driver ? LISTED(cbid, driver_capture_begins)
			   : LISTED(cbid, runtime_capture_begins);
	int end = driver ? LISTED(cbid, driver_capture_ends)
			 : LISTED(cbid, runtime_capture_ends);

	if (!begin && !end)
		return 0;
	if (d->callbackSite != CUPTI_API_EXIT)
		return 1;
	/* cudaError_t and CUresult: 0 is success. */
	if (begin &&
	    !(d->functionReturnValue && *(const int *)d->functionReturnValue))
		captures[driver]++;
	else if (end && captures[driver])
		captures[driver]--;
	return 1;
}

/* Count a launch into a stream capture: it queues no work. */
static void count_captured(void)
{
	if (chan())
		__atomic_add_fetch(&chan()->header->captured_launches, 1,
				   __ATOMIC_RELAXED);
}

/*
 * CUPTI's callback at each launch, on the launching thread, before the
 * call does anything: copy that thread's Python stack.  A driver call
 * made inside a runtime call that copied it refers to that copy.  A
 * launch into a stream capture is only counted; so are the starts and
 * ends of captures.
 */
static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain,
			       CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *d = data;
	int capturing = captures[0] || captures[1];

	(void)userdata;
	if (!d || __atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
		return;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		graph_node_callback(cbid, data);
		return;
	}
	if (capture_call(domain, cbid, d))
		return;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (d->callbackSite == CUPTI_API_EXIT) {
			runtime_correlation = 0;
			return;
		}
		runtime_correlation = d->correlationId;
		if (capturing)
			count_captured();
		else
			write_launch_stack(d->correlationId, 0);
	} else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
		   d->callbackSite == CUPTI_API_ENTER) {
		if (capturing) {
			if (!runtime_correlation)
				count_captured();
		} else if (!runtime_correlation) {
			write_launch_stack(d->correlationId, 0);
		} else if (runtime_correlation != d->correlationId) {
			write_launch_stack(d->correlationId,
					   runtime_correlation);
		}
	}
}

/*
 * Subscribe to CUPTI's callbacks, before anything else: CUPTI has one
 * subscriber at a time, and a process where another client (the PyTorch
 * profiler's Kineto, Nsight Systems, DCGM) already is has it.  Returns 0;
 * or -1 after saying in the status that another client has CUPTI: then
 * spyc enables nothing, since its activity buffers would take that
 * client's records (CUPTI has one set of buffer callbacks too).  A CUPTI
 * without callbacks, or one that refuses for another reason, leaves
 * subscriber NULL: activities are collected without launch stacks.
 */
static int subscribe_first(void)
{
	CUptiResult r;

	if (!cupti.subscribe || !cupti.unsubscribe || !cupti.enable_callback)
		return 0;
	r = cupti.subscribe(&subscriber, on_launch, NULL);
	if (r == CUPTI_SUCCESS)
		return 0;
	subscriber = NULL;
	if (r != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		return 0;
	set_status(GPU_AGENT_OTHER_CLIENT, (int)r,
		   "another CUPTI client (a profiler: torch.profiler, Nsight "
		   "Systems, DCGM) has CUPTI; spyc leaves its records alone");
	return -1;
}

/*
 * Ask CUPTI for on_launch at every launch, when the process has Python
 * and the subscription was had.  Returns whether it did, or why not.
 */
#define ARRAY_LEN(a) (sizeof(a) / sizeof(*(a)))

static void enable_callbacks(CUpti_CallbackDomain domain,
			     const CUpti_CallbackId *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cupti.enable_callback(1, subscriber, domain, ids[i]);
}

static enum gpu_launch_stacks subscribe_launches(void)
{
	size_t i;

	if (pystack_init())
		return GPU_STACKS_NO_PYTHON;
	if (!cupti.subscribe || !cupti.unsubscribe || !cupti.enable_callback)
		return GPU_STACKS_NO_CALLBACKS;
	if (!subscriber)
		return GPU_STACKS_SUBSCRIBED;
	for (i = 0; i < sizeof(runtime_launches) / sizeof(*runtime_launches);
	     i++)
		cupti.enable_callback(1, subscriber,
				      CUPTI_CB_DOMAIN_RUNTIME_API,
				      runtime_launches[i]);
	for (i = 0; i < sizeof(driver_launches) / sizeof(*driver_launches); i++)
		cupti.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				      driver_launches[i]);
	enable_callbacks(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_capture_begins,
			 ARRAY_LEN(runtime_capture_begins));
	enable_callbacks(CUPTI_CB_DOMAIN_RUNTIME_API, runtime_capture_ends,
			 ARRAY_LEN(runtime_capture_ends));
	enable_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, driver_capture_begins,
			 ARRAY_LEN(driver_capture_begins));
	enable_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, driver_capture_ends,
			 ARRAY_LEN(driver_capture_ends));
	if (cupti.get_graph_node_id)
		enable_callbacks(CUPTI_CB_DOMAIN_RESOURCE, graph_node_calls,
				 ARRAY_LEN(graph_node_calls));
	return GPU_STACKS_ON;
}

/* Whether cbid is one of the n in ids. */
static int listed(CUpti_CallbackId cbid, const CUpti_CallbackId *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == cbid)
			return 1;
	return 0;
}

/* Whether the profile uses the API records of this call. */
static int call_kept(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	const char *name = NULL;
	size_t i;

	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API
		? LISTED(cbid, runtime_launches) || LISTED(cbid, runtime_waits)
		: LISTED(cbid, driver_launches) || LISTED(cbid, driver_waits))
		return 1;
	if (!cupti.get_callback_name ||
	    cupti.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS ||
	    !name)
		return 0;
	for (i = 0; i < sizeof(kept_calls) / sizeof(*kept_calls); i++)
		if (!strncmp(name, kept_calls[i], strlen(kept_calls[i])))
			return 1;
	return 0;
}

/*
 * Once the RUNTIME and DRIVER kinds are enabled, CUPTI records every
 * call (cudaGetDevice, cudaGetLastError, cuCtxGetCurrent: several per
 * launch in PyTorch), most of which spyc would carry through the ring
 * and keep for nothing.  Switch off the API records of every other call,
 * one callback id at a time (cuptiActivityEnableRuntimeApi and
 * cuptiActivityEnableDriverApi, CUDA 12.5 on): after the kinds, since
 * enabling a kind sets every call of it on again (cupti_activity.h),
 * which is also how Kineto leaves out the calls it does not want.  A
 * call newer than the headers spyc was built with stays on.  Returns
 * what CUPTI records: every call where it cannot switch them one by one.
 */
static enum gpu_api_records keep_profiled_calls(void)
{
	CUpti_CallbackId cbid;
	unsigned long off = 0;

	if (!cupti.enable_runtime_api || !cupti.enable_driver_api)
		return GPU_API_RECORDS_ALL;
	for (cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; cbid++)
		if (!call_kept(CUPTI_CB_DOMAIN_RUNTIME_API, cbid) &&
		    cupti.enable_runtime_api(cbid, 0) == CUPTI_SUCCESS)
			off++;
	for (cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++)
		if (!call_kept(CUPTI_CB_DOMAIN_DRIVER_API, cbid) &&
		    cupti.enable_driver_api(cbid, 0) == CUPTI_SUCCESS)
			off++;
	return off ? GPU_API_RECORDS_PROFILED : GPU_API_RECORDS_ALL;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	void *p = NULL;

	/* A failed allocation hands CUPTI no buffer: it drops, we go on. */
	if (posix_memalign(&p, ACTIVITY_BUFFER_ALIGN, ACTIVITY_BUFFER_SIZE))
		p = NULL;
	*buffer = p;
	*size = p ? ACTIVITY_BUFFER_SIZE : 0;
	*max_records = 0;
}

/* A converted record's times (every kind convert() makes has them). */
static void record_times(const struct gpu_record *r, uint64_t *start,
			 uint64_t *end)
{
	const struct gpu_interval *iv = gpu_record_interval(r);

	*start = iv ? iv->start : r->u.api.start;
	*end = iv ? iv->end : r->u.api.end;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
				      uint8_t *buffer, size_t size,
				      size_t valid)
{
	CUpti_Activity *a = NULL;
	CUptiResult res = CUPTI_ERROR_MAX_LIMIT_REACHED;
	uint64_t zero = 0;

	(void)ctx;
	(void)stream;
	(void)size;
	/*
	 * CUPTI's documentation says to stop at any error: an invalid or
	 * incomplete record (CUPTI_ERROR_INVALID_KIND) has no size to step
	 * over, and asking again returns the same record.  The rest of the
	 * buffer is lost, and counted.
	 */
	while (buffer &&
	       (res = cupti.next_record(buffer, valid, &a)) == CUPTI_SUCCESS) {
		struct gpu_record r;
		uint64_t start, end;

		if (!convert(a, &r))
			continue;
		record_times(&r, &start, &end);
		if (no_time(start, end)) {
			zero++;
			continue;
		}
		ring_write(chan(), &r);
	}
	if (buffer && res != CUPTI_ERROR_MAX_LIMIT_REACHED)
		__atomic_add_fetch(&chan()->header->bad_buffers, 1,
				   __ATOMIC_RELAXED);
	if (zero)
		__atomic_add_fetch(&chan()->header->zero_time, zero,
				   __ATOMIC_RELAXED);
	count_cupti_dropped();
	free(buffer);
	/* A pair per buffer: spyc sees how the two clocks drift apart. */
	clock_record();
	/* Without a watcher, stop here (CUPTI's thread; no flush from it). */
	if (!__atomic_load_n(&watching, __ATOMIC_ACQUIRE) &&
	    ring_control(chan()) == GPU_CONTROL_STOP &&
	    !__atomic_load_n(&stopped, __ATOMIC_ACQUIRE)) {
		stop_collecting(0);
		__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
	}
}

/*
 * spyc has stopped (or asked the agent to): disable every activity
 * kind, and with flush, hand spyc what CUPTI still buffers (so that an
 * attached spyc sees the kernels of its last moments), then say so.
 * Once only.
 */
static void stop_collecting(int flush)
{
	size_t i;

	if (__atomic_exchange_n(&stopped, 1, __ATOMIC_ACQ_REL))
		return;
	/* Another profiler of the process may want the subscription. */
	if (subscriber)
		cupti.unsubscribe(subscriber);
	subscriber = NULL;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cupti.disable(kinds[i]);
	if (flush && cupti.flush_all)
		cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	count_cupti_dropped();
	set_status(GPU_AGENT_STOPPED, 0,
		   flush ? "activities disabled, buffers flushed"
			 : "activities disabled");
}

/*
 * The watcher: a thread of the agent's that asks CUPTI for its complete
 * buffers every WATCH_FLUSH_MS, waits for spyc to say stop (polling the
 * channel's control word), stops collecting with a forced flush, and
 * ends.  It sleeps between looks and takes no lock the process
 * uses.
 */
static void *watch_control(void *arg)
{
	struct timespec ts = {0, CONTROL_POLL_MS * 1000000L};
	unsigned polls = 0;

	(void)arg;
	while (ring_control(chan()) != GPU_CONTROL_STOP) {
		nanosleep(&ts, NULL);
		if (++polls % (WATCH_FLUSH_MS / CONTROL_POLL_MS) == 0 &&
		    cupti.flush_all)
			cupti.flush_all(0);
	}
	stop_collecting(1);
	__atomic_store_n(&watching, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Start the watcher with every signal blocked, so that the process's
 * signals keep going to its own threads.  If it cannot be started, the
 * agent stops at CUPTI's next buffer instead.
 */
static void start_watcher(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;

	if (pthread_attr_init(&attr))
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&watching, 1, __ATOMIC_RELEASE);
	if (pthread_create(&t, &attr, watch_control, NULL))
		__atomic_store_n(&watching, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/*
 * At the process's exit: hand spyc what CUPTI still buffers, which would
 * otherwise be lost with the process (the last kernels of a launched
 * program).  The agent is never unloaded, so the handler stays valid.
 */
static void flush_at_exit(void)
{
	if (cupti.flush_all)
		cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	count_cupti_dropped();
}

/* The session cannot go on: a later spyc may start one of its own. */
static void session_over(void)
{
	if (subscriber)
		cupti.unsubscribe(subscriber);
	subscriber = NULL;
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
}

/*
 * What is set once for the process's life: CUPTI's thread ids, its
 * clock and its activity callbacks.  0, or -1 with the status set.
 */
static int set_callbacks(void)
{
	CUptiResult r;

	if (callbacks_set)
		return 0;
	/*
	 * Thread ids as the kernel knows them (gettid), which is what spyc
	 * samples by; the default is pthread_self() cut to 32 bits.
	 */
	if (cupti.set_thread_id_type)
		cupti.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	/*
	 * Before any kind is enabled, as its documentation asks, so that
	 * every record is on it.  Without it (older CUPTIs, or an error)
	 * times are on CUPTI's own clock, aligned by the clock pairs.
	 */
	if (cupti.timestamp_callback &&
	    cupti.timestamp_callback(monotonic_ns) == CUPTI_SUCCESS)
		__atomic_store_n(&monotonic_clock, 1, __ATOMIC_RELEASE);
	r = cupti.register_callbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS) {
		set_status(GPU_AGENT_CUPTI_ERROR, (int)r,
			   "cuptiActivityRegisterCallbacks: %s",
			   result_string(r));
		return -1;
	}
	if (cupti.flush_period)
		cupti.flush_period(FLUSH_PERIOD_MS);
	atexit(flush_at_exit);
	callbacks_set = 1;
	return 0;
}

/*
 * Load CUPTI (once) and start collecting for the channel's spyc; the
 * outcome is the status.
 */
static void start_cupti(void)
{
	enum gpu_api_records api_records;
	uint32_t version = 0;
	CUptiResult r;
	size_t i;

	if (!cupti.handle) {
		cupti.handle = open_cupti();
		if (!cupti.handle) {
			set_status(GPU_AGENT_NO_CUPTI, 0,
				   "no libcupti found (set SPYC_CUPTI to its "
				   "path)");
			session_over();
			return;
		}
		if (resolve_cupti()) {
			cupti.handle = NULL;
			session_over();
			return;
		}
	}
	if (cupti.get_version(&version) == CUPTI_SUCCESS)
		chan()->header->cupti_version = version;
	if (subscribe_first() || set_callbacks()) {
		session_over();
		return;
	}
	if (__atomic_load_n(&monotonic_clock, __ATOMIC_ACQUIRE))
		__atomic_store_n(&chan()->header->clock, GPU_CLOCK_MONOTONIC,
				 __ATOMIC_RELAXED);
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		r = cupti.enable(kinds[i]);
		if (r != CUPTI_SUCCESS) {
			set_status(GPU_AGENT_CUPTI_ERROR, (int)r,
				   "cuptiActivityEnable(%d): %s", (int)kinds[i],
				   result_string(r));
			while (i--)
				cupti.disable(kinds[i]);
			session_over();
			return;
		}
	}
	api_records = keep_profiled_calls();
	__atomic_store_n(&chan()->header->api_records, (uint32_t)api_records,
			 __ATOMIC_RELEASE);
	clock_record();
	__atomic_store_n(&chan()->header->launch_stacks,
			 (uint32_t)subscribe_launches(), __ATOMIC_RELEASE);
	set_status(GPU_AGENT_RUNNING, 0, "collecting (CUPTI API %u%s)", version,
		   api_records == GPU_API_RECORDS_ALL
		       ? "; every CUDA API call recorded: this CUPTI cannot "
			 "leave calls out"
		       : "");
	start_watcher();
}

/*
 * A later spyc's channel, once the session before it is over: the
 * agent starts again for it (CUPTI stays loaded, its callbacks set).
 * 0, GPU_AGENT_ALREADY while another spyc's session goes on, or -errno.
 */
static int start_again(const char *channel)
{
	struct ring_writer *w;
	int over = 1;

	if (!__atomic_compare_exchange_n(&ended, &over, 0, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		struct ring_writer other;

		/* Tell this spyc that another one has the agent. */
		if (ring_writer_open(&other, channel))
			return -EBUSY;
		ring_set_status(&other, GPU_AGENT_ALREADY, 0,
				"the agent already reports to another spyc");
		ring_writer_close(&other);
		return GPU_AGENT_ALREADY;
	}
	w = calloc(1, sizeof(*w));
	if (!w || ring_writer_open(w, channel)) {
		free(w);
		__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
		return -EBUSY;
	}
	__atomic_store_n(&writer_now, w, __ATOMIC_RELEASE);
	__atomic_store_n(&stopped, 0, __ATOMIC_RELEASE);
	set_status(GPU_AGENT_STARTING, 0, "agent loaded (again)");
	start_cupti();
	return 0;
}

/*
 * Start reporting to channel.  from_driver: called by the CUDA driver,
 * which is therefore loaded.  Returns the status reached, or -errno if
 * the channel could not be used (no one can be told then).
 */
static int agent_start(const char *channel, int from_driver)
{
	int expected = 0;
	int ret;

	if (!channel || !*channel)
		return -EINVAL;
	/*
	 * The driver's call comes in every process that inherited the
	 * environment: in the target's children only count it, leaving the
	 * channel (status, records, correlation ids) to the target's agent.
	 */
	if (from_driver) {
		struct ring_writer here;
		int mine;

		if (ring_writer_open(&here, channel))
			return -EBUSY;
		mine = ring_for_this_process(&here);
		ring_writer_close(&here);
		if (!mine)
			return -ESRCH;
	}
	if (!__atomic_compare_exchange_n(&started, &expected, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		ret = start_again(channel);
		return ret ? ret
			   : (int)__atomic_load_n(&chan()->header->status,
						  __ATOMIC_ACQUIRE);
	}
	ret = ring_writer_open(chan(), channel);
	if (ret) {
		__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
		return ret;
	}
	set_status(GPU_AGENT_STARTING, 0, "agent loaded");
	if (!from_driver && !cuda_loaded()) {
		set_status(GPU_AGENT_NO_CUDA, 0,
			   "no CUDA in this process (libcuda.so.1 not loaded)");
		/* CUDA may come later: a new attach may try again. */
		ring_writer_close(chan());
		__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
		return GPU_AGENT_NO_CUDA;
	}
	start_cupti();
	return (int)__atomic_load_n(&chan()->header->status, __ATOMIC_ACQUIRE);
}

/*
 * Called by the CUDA driver when CUDA_INJECTION64_PATH names this library,
 * once, as the driver initialises.  The channel is named by
 * SPYC_GPU_CHANNEL.  Returns 1 (success) whatever happened: a failure is
 * spyc's to report, never a reason for CUDA to fail.
 */
EXPORT int InitializeInjection(void)
{
	agent_start(getenv(GPUCHAN_ENV), 1);
	return 1;
}

/*
 * Called by spyc after it has loaded the library into a running process
 * (attach mode), with the channel's path.  Returns the status reached
 * (enum gpu_agent_status), or a negative errno when the channel could
 * not be opened.
 */
EXPORT int spyc_agent_attach(const char *channel)
{
	return agent_start(channel, 0);
}
