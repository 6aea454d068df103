/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libcupti.so, for the tests of --gpu on machines with no
 * GPU: the CUPTI functions spyc's agent calls, with CUPTI's own headers'
 * types, and "GPU work" that a test's Python program asks for through
 * the fake_* functions (with ctypes).  Each fake launch makes the records
 * a real one would (a runtime API call and a kernel, or a copy, with one
 * correlation id, on CUPTI's clock), calls the subscriber's callbacks
 * around the call as CUPTI does, and hands the records to the agent in
 * the buffers it gives: from a thread of its own every flush period,
 * only full buffers' worth (CUPTI's documentation of
 * cuptiActivityFlushPeriod); on cuptiActivityFlushAll(0), the records
 * that are complete (their work has ended); on a forced flush, all.  Timings
 * are made up; nothing here touches a device.
 *
 * As the real one: records are packed in a buffer each at its own
 * struct's size (the versions cupti_activity.h has last, which the agent
 * reads), times are CLOCK_REALTIME's unless a timestamp callback was
 * registered, ids of devices, contexts and streams are what the program
 * chose (a context's is its device's + 1: CUPTI's start at 1).  Modes,
 * from the environment, make it misbehave as CUPTI may:
 *   FAKE_CUPTI_KERNEL_KIND        kernels as CUPTI_ACTIVITY_KIND_KERNEL
 *   FAKE_CUPTI_CLOCK_STEP_NS=S    the wall clock steps by S ns (may be
 *   FAKE_CUPTI_CLOCK_STEP_AFTER=N   negative) after N launches
 *   FAKE_CUPTI_ZERO_EVERY=N       every Nth kernel has 0 start and end
 *   FAKE_CUPTI_DROP_EVERY=N       every Nth kernel is dropped, counted
 *                                 for cuptiActivityGetNumDroppedRecords
 *   FAKE_CUPTI_INVALID_RECORD     one record of the first buffer of
 *                                 four or more is invalid
 *                                 (CUPTI_ERROR_INVALID_KIND)
 *   FAKE_CUPTI_FAIL=f,g           these CUPTI functions fail
 *   FAKE_CUPTI_OTHER_CLIENT_AFTER=N  after N launches another client
 *                                 registers its buffer callbacks (as
 *                                 torch.profiler starting does), which
 *                                 take the records from then on
 *   FAKE_CUPTI_STATS=PATH         what it did, as JSON, written at exit
 *   FAKE_CUPTI_CORRELATION_STEP=S  correlation ids go up by S (mod 2^32,
 *                                 0 skipped): with 2^30 they repeat
 *                                 every four calls, as they do after
 *                                 2^32 calls of a long run
 *
 * API records are made per call as CUPTI 12.5 on makes them: enabling
 * the RUNTIME or DRIVER kind switches every call of it on (forgetting
 * earlier choices), disabling it every call off, and
 * cuptiActivityEnableRuntimeApi/DriverApi switch one call, with or
 * without the kind (cupti_activity.h).  FAKE_CUPTI_FAIL naming them
 * makes them fail with CUPTI_ERROR_NOT_SUPPORTED, as where per-call
 * switches are not supported.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* A launched kernel starts this long after its launch returns. */
#define LAUNCH_LATENCY_NS 3000ULL
#define MAX_STREAMS 64
#define MAX_CBIDS 1024
/* Records in what counts as a full buffer (the periodic flush's unit). */
#define FULL_BUFFER 4096
/* fake_collect_alone's buffers: the agent's size. */
#define ALONE_BUFFER_SIZE (1u << 20)

union fake_record {
	CUpti_Activity a;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityAPI api;
	CUpti_ActivityMemcpy6 copy;
	CUpti_ActivityMemset4 memset;
	CUpti_ActivitySynchronization2 sync;
};

/* A record's size in a buffer: its struct's, 8-byte aligned as CUPTI's. */
static size_t record_size(CUpti_ActivityKind kind)
{
	size_t n;

	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		n = sizeof(CUpti_ActivityKernel10);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		n = sizeof(CUpti_ActivityAPI);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		n = sizeof(CUpti_ActivityMemcpy6);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		n = sizeof(CUpti_ActivityMemset4);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		n = sizeof(CUpti_ActivitySynchronization2);
		break;
	default:
		return 0;
	}
	return (n + 7) & ~(size_t)7;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* One delivery at a time: the flush thread's or a FlushAll's. */
static pthread_mutex_t deliver_lock = PTHREAD_MUTEX_INITIALIZER;
static union fake_record *pending;
static size_t nr_pending, alloc_pending;
static uint64_t enabled_kinds; /* bit k: CUpti_ActivityKind k */
static uint32_t next_correlation;
static uint64_t stream_free_at[MAX_STREAMS];
static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static uint32_t period_ms = 100;
static int flusher_started;
static CUpti_CallbackFunc subscriber;
static void *subscriber_data;
/* [domain][cbid]: driver, runtime and resource callbacks */
#define NR_DOMAINS (CUPTI_CB_DOMAIN_RESOURCE + 1)
static unsigned char callback_on[NR_DOMAINS][MAX_CBIDS];
/* Which calls make API records: [0] runtime, [1] driver; by cbid. */
static unsigned char api_record_on[2][MAX_CBIDS];
static uint64_t alone_records; /* walked by fake_collect_alone's client */
static CUpti_ActivityThreadIdType thread_id_type;
static CUpti_TimestampCallbackFunc timestamp_callback;
/* Whether the calling thread captures a stream (fake_capture). */
static __thread int capturing;
/*
 * CUDA graphs (fake_capture, fake_graph_instantiate): each a list of
 * kernel nodes, its id, kernel and time; executable graphs are copies
 * with nodes of their own.  A node's id is CUPTI's: its graph's id (the
 * graph's index + 1) in the high 32 bits, its index in the graph in the
 * low ones, so that a copy's low half is its original's.  A CUgraphNode
 * is its id here.
 */
#define MAX_GRAPHS 64
#define MAX_NODES 64
static struct fake_graph {
	int nr;
	uint64_t node[MAX_NODES];
	const char *kernel[MAX_NODES];
	unsigned long long gpu_ns[MAX_NODES];
} graphs[2 * MAX_GRAPHS];
static int nr_graphs;
/* The graph the calling thread's capture fills, its index. */
static __thread int capture_graph = -1;
/* The device the calling thread's work goes to (cudaSetDevice). */
static __thread unsigned current_device;
/* The modes (see the top), read once. */
static struct {
	int kernel_kind, invalid_record;
	long long step_ns;
	unsigned long step_after, zero_every, drop_every, other_after;
	unsigned long correlation_step;
	const char *fail, *stats;
} mode;
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;
/* What the modes did, for FAKE_CUPTI_STATS; under lock. */
static struct {
	unsigned long launches, kernels, zeroed, dropped, dropped_unread;
	unsigned long invalid_lost, invalid_buffers;
	unsigned long api_records;   /* API records made, every call */
	unsigned long noise_records; /* of them, fake_api_noise's */
	unsigned long captured;	     /* launches into a stream capture */
} stats;

/* Kernel names outlive the records that point to them: kept forever. */
static char **names;
static size_t nr_names;

EXPORT int fake_launch(const char *kernel, unsigned long long gpu_ns,
		       unsigned stream);
EXPORT int fake_copy(unsigned long long bytes, unsigned long long gpu_ns,
		     unsigned stream);
EXPORT int fake_flood(int n);
EXPORT int fake_launch_native(const char *kernel, unsigned long long gpu_ns,
			      unsigned stream);
EXPORT int fake_engine_pass(const char *kernel, unsigned long long gpu_ns,
			    unsigned stream, int n, unsigned gap_us);
EXPORT int fake_engine_pass_ranged(const char *kernel,
				   unsigned long long gpu_ns, unsigned stream,
				   int n, unsigned gap_us, const char *range);
EXPORT int fake_enabled_kinds(void);
EXPORT int fake_subscribed(void);
EXPORT int fake_collect_alone(void);
static void other_client_arrives(void);
EXPORT int fake_set_device(unsigned device);
EXPORT int fake_context_id(void);
EXPORT int fake_memset(unsigned long long bytes, unsigned long long gpu_ns,
		       unsigned stream);
EXPORT int fake_sync(unsigned stream);
EXPORT int fake_driver_launch(const char *kernel, unsigned long long gpu_ns,
			      unsigned stream);
EXPORT int fake_api_noise(int n);
EXPORT int fake_capture(int begin);
EXPORT int fake_graph_launch(const char *kernel, unsigned long long gpu_ns,
			     unsigned stream, int n);
EXPORT int fake_graph_instantiate(int graph);
EXPORT int fake_graph_replay(int exec, unsigned stream);
EXPORT CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node,
						uint64_t *nodeId);

static unsigned long env_number(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoul(v, NULL, 0) : 0;
}

static void write_stats(void)
{
	FILE *f;

	if (!mode.stats || !(f = fopen(mode.stats, "w")))
		return;
	pthread_mutex_lock(&lock);
	fprintf(
	    f,
	    "{\"launches\": %lu, \"kernels\": %lu, \"zeroed\": %lu, "
	    "\"dropped\": %lu, \"invalid_lost\": %lu, "
	    "\"invalid_buffers\": %lu, \"other_client_records\": %lu, "
	    "\"api_records\": %lu, \"noise_records\": %lu, "
	    "\"captured\": %lu}\n",
	    stats.launches, stats.kernels, stats.zeroed, stats.dropped,
	    stats.invalid_lost, stats.invalid_buffers,
	    (unsigned long)__atomic_load_n(&alone_records, __ATOMIC_RELAXED),
	    stats.api_records, stats.noise_records, stats.captured);
	pthread_mutex_unlock(&lock);
	fclose(f);
}

static void read_modes(void)
{
	const char *step = getenv("FAKE_CUPTI_CLOCK_STEP_NS");

	mode.kernel_kind = getenv("FAKE_CUPTI_KERNEL_KIND") != NULL;
	mode.invalid_record = getenv("FAKE_CUPTI_INVALID_RECORD") != NULL;
	mode.step_ns = step ? strtoll(step, NULL, 0) : 0;
	mode.step_after = env_number("FAKE_CUPTI_CLOCK_STEP_AFTER");
	mode.zero_every = env_number("FAKE_CUPTI_ZERO_EVERY");
	mode.drop_every = env_number("FAKE_CUPTI_DROP_EVERY");
	mode.other_after = env_number("FAKE_CUPTI_OTHER_CLIENT_AFTER");
	mode.correlation_step = env_number("FAKE_CUPTI_CORRELATION_STEP");
	mode.fail = getenv("FAKE_CUPTI_FAIL");
	mode.stats = getenv("FAKE_CUPTI_STATS");
	if (mode.stats)
		atexit(write_stats);
}

static void modes(void)
{
	pthread_once(&mode_once, read_modes);
}

/* Whether FAKE_CUPTI_FAIL names function. */
static int failing(const char *function)
{
	const char *p;
	size_t n = strlen(function);

	modes();
	for (p = mode.fail; p && (p = strstr(p, function)); p += n)
		if ((p == mode.fail || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/*
 * CUPTI's clock: the registered callback's, else CLOCK_REALTIME (CUPTI's
 * on Linux), which FAKE_CUPTI_CLOCK_STEP_NS steps once the program has
 * made FAKE_CUPTI_CLOCK_STEP_AFTER launches.
 */
/* How far the wall clock has stepped by now (0 on the callback's clock). */
static uint64_t clock_step(void)
{
	if (__atomic_load_n(&timestamp_callback, __ATOMIC_ACQUIRE))
		return 0;
	if (mode.step_ns &&
	    __atomic_load_n(&stats.launches, __ATOMIC_RELAXED) >=
		mode.step_after)
		return (uint64_t)mode.step_ns;
	return 0;
}

static uint64_t now(void)
{
	CUpti_TimestampCallbackFunc cb =
	    __atomic_load_n(&timestamp_callback, __ATOMIC_ACQUIRE);
	struct timespec ts;

	if (cb)
		return cb();
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec +
	       clock_step();
}

static int on(CUpti_ActivityKind kind)
{
	return (enabled_kinds >> kind) & 1;
}

static const char *intern(const char *name)
{
	size_t i;

	for (i = 0; i < nr_names; i++)
		if (!strcmp(names[i], name))
			return names[i];
	names = realloc(names, (nr_names + 1) * sizeof(*names));
	if (!names)
		abort();
	names[nr_names] = strdup(name);
	return names[nr_names++];
}

/* Add a record; lock held. */
static union fake_record *add(void)
{
	if (nr_pending == alloc_pending) {
		alloc_pending = alloc_pending ? 2 * alloc_pending : 1024;
		pending = realloc(pending, alloc_pending * sizeof(*pending));
		if (!pending)
			abort();
	}
	memset(&pending[nr_pending], 0, sizeof(*pending));
	return &pending[nr_pending++];
}

/*
 * FAKE_CUPTI_INVALID_RECORD: make the middle record of the first buffer
 * of four or more records invalid (kind 0, as an incomplete one), and
 * count it and those after it, which a client that stops there loses.
 */
static void spoil(uint8_t *buf, size_t *offsets, size_t n)
{
	if (!mode.invalid_record || n < 4 ||
	    __atomic_load_n(&stats.invalid_buffers, __ATOMIC_RELAXED))
		return;
	((CUpti_Activity *)(buf + offsets[n / 2]))->kind =
	    CUPTI_ACTIVITY_KIND_INVALID;
	stats.invalid_buffers++;
	stats.invalid_lost += n - n / 2;
}

/*
 * Hand the first max pending records (at most) to the agent, in as many
 * buffers as it takes.
 */
static void deliver(size_t max)
{
	static size_t *offsets;
	static size_t alloc_offsets;

	pthread_mutex_lock(&deliver_lock);
	for (;;) {
		uint8_t *buf = NULL;
		size_t size = 0, max_records = 0, used = 0, n = 0;

		pthread_mutex_lock(&lock);
		n = nr_pending < max ? nr_pending : max;
		pthread_mutex_unlock(&lock);
		if (!n || !requested || !completed)
			break;
		requested(&buf, &size, &max_records);
		if (!buf || size < sizeof(union fake_record))
			break;
		pthread_mutex_lock(&lock);
		for (n = 0; n < nr_pending && n < max; n++) {
			size_t len = record_size(pending[n].a.kind);

			if (used + len > size)
				break;
			if (n == alloc_offsets) {
				alloc_offsets = n ? 2 * n : 1024;
				offsets = realloc(
				    offsets, alloc_offsets * sizeof(*offsets));
				if (!offsets)
					abort();
			}
			offsets[n] = used;
			memcpy(buf + used, &pending[n], len);
			used += len;
		}
		spoil(buf, offsets, n);
		memmove(pending, pending + n,
			(nr_pending - n) * sizeof(*pending));
		nr_pending -= n;
		max -= n;
		pthread_mutex_unlock(&lock);
		completed(NULL, 0, buf, size, used);
	}
	pthread_mutex_unlock(&deliver_lock);
}

/*
 * Every flush period, hand over full buffers' worth of what is pending:
 * "periodic flush can return only those activity buffers which are
 * full" (cuptiActivityFlushPeriod's documentation).  The rest waits for
 * cuptiActivityFlushAll.
 */
static void *flusher(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {period_ms / 1000,
				      (long)(period_ms % 1000) * 1000000L};
		size_t n;

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&lock);
		n = nr_pending;
		pthread_mutex_unlock(&lock);
		if (n >= FULL_BUFFER)
			deliver(n / FULL_BUFFER * FULL_BUFFER);
	}
	return NULL;
}

/* How many pending records, from the first, have their times: ended. */
static size_t completed_records(void)
{
	uint64_t t = now();
	size_t n;

	pthread_mutex_lock(&lock);
	for (n = 0; n < nr_pending; n++) {
		const CUpti_Activity *a = &pending[n].a;
		uint64_t end = 0;

		if (a->kind == CUPTI_ACTIVITY_KIND_KERNEL ||
		    a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			end = pending[n].kernel.end;
		else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY)
			end = pending[n].copy.end;
		else if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET)
			end = pending[n].memset.end;
		if (end > t)
			break;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

/* The subscriber's callback for a call, if it asked for it. */
static void callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		     CUpti_ApiCallbackSite site, const char *function,
		     const char *symbol, uint32_t corr)
{
	CUpti_CallbackData d;

	if (!subscriber || cbid >= MAX_CBIDS || !callback_on[domain][cbid])
		return;
	memset(&d, 0, sizeof(d));
	d.callbackSite = site;
	d.functionName = function;
	d.symbolName = symbol;
	d.correlationId = corr;
	subscriber(subscriber_data, domain, cbid, &d);
}

/*
 * A runtime or driver call: its callbacks and its record, and what
 * inner(arg) does inside it (when not NULL), between the callbacks; the
 * call's end.
 */
static uint32_t call_with(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			  const char *function, const char *symbol,
			  uint64_t *end, void (*inner)(void *), void *arg)
{
	CUpti_ActivityKind kind = domain == CUPTI_CB_DOMAIN_DRIVER_API
				      ? CUPTI_ACTIVITY_KIND_DRIVER
				      : CUPTI_ACTIVITY_KIND_RUNTIME;
	uint32_t corr;
	uint64_t start;

	modes();
	do
		corr = __atomic_add_fetch(
		    &next_correlation,
		    mode.correlation_step ? (uint32_t)mode.correlation_step : 1,
		    __ATOMIC_RELAXED);
	while (!corr);
	callback(domain, cbid, CUPTI_API_ENTER, function, symbol, corr);
	if (inner)
		inner(arg);
	start = now();
	*end = now() + 500;
	callback(domain, cbid, CUPTI_API_EXIT, function, symbol, corr);
	pthread_mutex_lock(&lock);
	if (cbid < MAX_CBIDS &&
	    api_record_on[kind == CUPTI_ACTIVITY_KIND_DRIVER][cbid]) {
		CUpti_ActivityAPI *a = &add()->api;

		stats.api_records++;
		if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020 &&
		    kind == CUPTI_ACTIVITY_KIND_RUNTIME)
			stats.noise_records++;

		a->kind = kind;
		a->cbid = cbid;
		a->start = start;
		a->end = *end;
		a->processId = (uint32_t)getpid();
		a->threadId =
		    thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
			? (uint32_t)syscall(SYS_gettid)
			: (uint32_t)pthread_self();
		a->correlationId = corr;
	}
	pthread_mutex_unlock(&lock);
	return corr;
}

static uint32_t domain_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const char *function, const char *symbol,
			    uint64_t *end)
{
	return call_with(domain, cbid, function, symbol, end, NULL, NULL);
}

static uint32_t api_call(CUpti_CallbackId cbid, const char *function,
			 const char *symbol, uint64_t *end)
{
	return domain_call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, function, symbol,
			   end);
}

/*
 * When work of gpu_ns queued on stream now runs: [*start, *end).  The
 * device's own timeline does not step with the wall clock (stream_free_at
 * is kept without the step); CUPTI puts its times on the stepped clock.
 */
static void schedule(unsigned stream, uint64_t issued, uint64_t gpu_ns,
		     uint64_t *start, uint64_t *end)
{
	uint64_t *free_at = &stream_free_at[stream % MAX_STREAMS];
	uint64_t step = clock_step();

	*start = issued - step + LAUNCH_LATENCY_NS;
	if (*start < *free_at)
		*start = *free_at;
	*end = *start + gpu_ns;
	*free_at = *end;
	*start += step;
	*end += step;
}

/*
 * cudaLaunchKernel of kernel on stream, taking gpu_ns on the device.
 * Returns the launch's correlation id.
 */
static void add_kernel_node(const char *kernel, unsigned long long gpu_ns,
			    unsigned stream, uint64_t issued, uint32_t corr,
			    uint64_t node);

/* The kernel record of a launch (correlation id corr); lock held. */
static void add_kernel(const char *kernel, unsigned long long gpu_ns,
		       unsigned stream, uint64_t issued, uint32_t corr)
{
	stats.launches++;
	/* Captured into a graph: no work now. */
	if (capturing) {
		stats.captured++;
		return;
	}
	add_kernel_node(kernel, gpu_ns, stream, issued, corr, 0);
}

/* A kernel's record, as graph node `node` (0: none); lock held. */
static void add_kernel_node(const char *kernel, unsigned long long gpu_ns,
			    unsigned stream, uint64_t issued, uint32_t corr,
			    uint64_t node)
{
	CUpti_ActivityKernel10 *k;
	uint64_t start, end;

	if (!on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
	    !on(CUPTI_ACTIVITY_KIND_KERNEL))
		return;
	/* The stream is busy whether or not CUPTI keeps the record. */
	schedule(stream, issued, gpu_ns, &start, &end);
	stats.kernels++;
	if (mode.drop_every && stats.kernels % mode.drop_every == 0) {
		stats.dropped++;
		stats.dropped_unread++;
		return;
	}
	k = &add()->kernel;
	k->kind = mode.kernel_kind ? CUPTI_ACTIVITY_KIND_KERNEL
				   : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->start = start;
	k->end = end;
	if (mode.zero_every && stats.kernels % mode.zero_every == 0) {
		k->start = k->end = 0;
		stats.zeroed++;
	}
	k->correlationId = corr;
	k->deviceId = current_device;
	k->contextId = current_device + 1;
	k->streamId = stream;
	k->gridX = k->gridY = k->gridZ = 1;
	k->blockX = 128;
	k->blockY = k->blockZ = 1;
	k->registersPerThread = 32;
	k->name = intern(kernel);
	k->graphNodeId = node;
}

/*
 * The resource callback for a graph node made (created) or copied into
 * an executable graph (cloned from original), on the calling thread.
 */
static void node_callback(CUpti_CallbackId cbid, uint64_t node,
			  uint64_t original)
{
	CUpti_ResourceData d;
	CUpti_GraphData g;

	if (!subscriber || !callback_on[CUPTI_CB_DOMAIN_RESOURCE][cbid])
		return;
	memset(&d, 0, sizeof(d));
	memset(&g, 0, sizeof(g));
	g.node = (CUgraphNode)(uintptr_t)node;
	g.originalNode = (CUgraphNode)(uintptr_t)original;
	g.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
	d.resourceDescriptor = &g;
	subscriber(subscriber_data, CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
}

/* Node i of graph (an index of graphs): its id. */
static uint64_t node_id(int graph, int i)
{
	return (uint64_t)(graph + 1) << 32 | (uint32_t)i;
}

/* A launch into a capture: its kernel and time. */
struct captured_launch {
	const char *kernel;
	unsigned long long gpu_ns;
};

/*
 * A kernel launched into the calling thread's capture: a node of its
 * graph, which CUPTI reports made inside the launch's driver call.
 */
static void capture_node(void *arg)
{
	const struct captured_launch *l = arg;
	struct fake_graph *g;
	uint64_t node = 0;

	pthread_mutex_lock(&lock);
	g = capture_graph >= 0 ? &graphs[capture_graph] : NULL;
	if (g && g->nr < MAX_NODES) {
		node = node_id(capture_graph, g->nr);
		g->node[g->nr] = node;
		g->kernel[g->nr] = intern(l->kernel);
		g->gpu_ns[g->nr++] = l->gpu_ns;
	}
	pthread_mutex_unlock(&lock);
	if (node)
		node_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node, 0);
}

/* The driver call a runtime launch into a capture makes. */
static void captured_driver_launch(void *arg)
{
	const struct captured_launch *l = arg;
	uint64_t end;

	call_with(CUPTI_CB_DOMAIN_DRIVER_API,
		  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel",
		  l->kernel, &end, capture_node, arg);
}

EXPORT int fake_launch(const char *kernel, unsigned long long gpu_ns,
		       unsigned stream)
{
	struct captured_launch l = {kernel, gpu_ns};
	uint64_t issued;
	uint32_t corr = call_with(
	    CUPTI_CB_DOMAIN_RUNTIME_API,
	    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
	    kernel, &issued, capturing ? captured_driver_launch : NULL, &l);
	int arrives;

	pthread_mutex_lock(&lock);
	add_kernel(kernel, gpu_ns, stream, issued, corr);
	arrives = mode.other_after && stats.launches == mode.other_after;
	pthread_mutex_unlock(&lock);
	if (arrives)
		other_client_arrives();
	return (int)corr;
}

/* cuLaunchKernel (the driver API, no runtime call around it). */
EXPORT int fake_driver_launch(const char *kernel, unsigned long long gpu_ns,
			      unsigned stream)
{
	uint64_t issued;
	uint32_t corr = domain_call(CUPTI_CB_DOMAIN_DRIVER_API,
				    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
				    "cuLaunchKernel", kernel, &issued);

	int arrives;

	pthread_mutex_lock(&lock);
	add_kernel(kernel, gpu_ns, stream, issued, corr);
	arrives = mode.other_after && stats.launches == mode.other_after;
	pthread_mutex_unlock(&lock);
	if (arrives)
		other_client_arrives();
	return (int)corr;
}

/*
 * n calls that queue no work and that spyc's profile does not use
 * (cudaGetDevice: PyTorch makes several such calls per launch).
 */
EXPORT int fake_api_noise(int n)
{
	uint64_t end;
	int i;

	for (i = 0; i < n; i++)
		api_call(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
			 "cudaGetDevice", NULL, &end);
	return n;
}

/*
 * cudaStreamBeginCapture (begin) or cudaStreamEndCapture, each with the
 * driver call the runtime makes for it: the calling thread's launches
 * in between are recorded into a graph and queue no work.
 */
EXPORT int fake_capture(int begin)
{
	uint64_t end;

	int graph = capture_graph;

	if (begin) {
		api_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
			 "cudaStreamBeginCapture", NULL, &end);
		domain_call(CUPTI_CB_DOMAIN_DRIVER_API,
			    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
			    "cuStreamBeginCapture_v2", NULL, &end);
		pthread_mutex_lock(&lock);
		capture_graph = nr_graphs < 2 * MAX_GRAPHS ? nr_graphs++ : -1;
		pthread_mutex_unlock(&lock);
		capturing = 1;
		return 0;
	}
	capturing = 0;
	capture_graph = -1;
	api_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
		 "cudaStreamEndCapture", NULL, &end);
	domain_call(CUPTI_CB_DOMAIN_DRIVER_API,
		    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
		    "cuStreamEndCapture", NULL, &end);
	/* The graph captured, for fake_graph_instantiate. */
	return graph;
}

/*
 * cudaGraphInstantiate of graph (fake_capture's): an executable graph
 * whose nodes are copies of graph's, with ids of their own (the ids its
 * replays' kernels carry), each reported made (on the instantiating
 * thread) and then cloned from its original, as CUDA 13's CUPTI does;
 * and, as there, one more node made that is a copy of none and never
 * runs.  Returns the executable graph, for fake_graph_replay; -1 on
 * error.
 */
EXPORT int fake_graph_instantiate(int graph)
{
	struct fake_graph *g, *x;
	uint64_t end;
	int exec, i;

	api_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000,
		 "cudaGraphInstantiate", NULL, &end);
	pthread_mutex_lock(&lock);
	if (graph < 0 || graph >= nr_graphs || nr_graphs >= 2 * MAX_GRAPHS) {
		pthread_mutex_unlock(&lock);
		return -1;
	}
	exec = nr_graphs++;
	g = &graphs[graph];
	x = &graphs[exec];
	*x = *g;
	for (i = 0; i < x->nr; i++)
		x->node[i] = node_id(exec, i);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < x->nr; i++) {
		node_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, x->node[i],
			      0);
		node_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, x->node[i],
			      g->node[i]);
	}
	node_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
		      node_id(exec, x->nr), 0);
	return exec;
}

/*
 * cudaGraphLaunch of executable graph exec on stream: a kernel per
 * node, each with the launch's correlation id and its node's id.
 */
EXPORT int fake_graph_replay(int exec, unsigned stream)
{
	uint64_t issued;
	uint32_t corr =
	    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		     "cudaGraphLaunch", NULL, &issued);
	struct fake_graph *x;
	int i;

	pthread_mutex_lock(&lock);
	if (exec >= 0 && exec < nr_graphs) {
		x = &graphs[exec];
		for (i = 0; i < x->nr; i++) {
			stats.launches++;
			add_kernel_node(x->kernel[i], x->gpu_ns[i], stream,
					issued, corr, x->node[i]);
		}
	}
	pthread_mutex_unlock(&lock);
	return (int)corr;
}

EXPORT CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node,
						uint64_t *nodeId)
{
	if (!node || !nodeId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*nodeId = (uint64_t)(uintptr_t)node;
	return CUPTI_SUCCESS;
}

/*
 * cudaGraphLaunch of a graph of n kernels on stream: each kernel's
 * record has the graph launch's correlation id, as CUPTI's do.
 */
EXPORT int fake_graph_launch(const char *kernel, unsigned long long gpu_ns,
			     unsigned stream, int n)
{
	uint64_t issued;
	uint32_t corr =
	    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
		     "cudaGraphLaunch", NULL, &issued);
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < n; i++)
		add_kernel(kernel, gpu_ns, stream, issued, corr);
	pthread_mutex_unlock(&lock);
	return (int)corr;
}

/* cudaSetDevice: the calling thread's later work runs on device. */
EXPORT int fake_set_device(unsigned device)
{
	current_device = device;
	return 0;
}

/* The id of the calling thread's context (cuCtxGetId). */
EXPORT int fake_context_id(void)
{
	return (int)current_device + 1;
}

/* cudaMemsetAsync of bytes, taking gpu_ns. */
EXPORT int fake_memset(unsigned long long bytes, unsigned long long gpu_ns,
		       unsigned stream)
{
	uint64_t issued;
	uint32_t corr = api_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
				 "cudaMemsetAsync", NULL, &issued);

	pthread_mutex_lock(&lock);
	if (on(CUPTI_ACTIVITY_KIND_MEMSET)) {
		CUpti_ActivityMemset4 *m = &add()->memset;

		m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
		schedule(stream, issued, gpu_ns, &m->start, &m->end);
		m->bytes = bytes;
		m->value = 0;
		m->correlationId = corr;
		m->deviceId = current_device;
		m->contextId = current_device + 1;
		m->streamId = stream;
	}
	pthread_mutex_unlock(&lock);
	return (int)corr;
}

/*
 * cudaStreamSynchronize: the call waits (in made-up time) until the
 * stream's work is done; its synchronization record spans the wait.
 */
EXPORT int fake_sync(unsigned stream)
{
	uint64_t issued;
	uint32_t corr =
	    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
		     "cudaStreamSynchronize", NULL, &issued);

	pthread_mutex_lock(&lock);
	if (on(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) {
		CUpti_ActivitySynchronization2 *y = &add()->sync;
		uint64_t done =
		    stream_free_at[stream % MAX_STREAMS] + clock_step();

		y->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
		y->type =
		    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
		y->start = issued;
		y->end = done > issued ? done : issued + 1;
		y->correlationId = corr;
		y->contextId = current_device + 1;
		y->streamId = stream;
		y->cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	}
	pthread_mutex_unlock(&lock);
	return (int)corr;
}

/* cudaMemcpyAsync host to device of bytes, taking gpu_ns. */
EXPORT int fake_copy(unsigned long long bytes, unsigned long long gpu_ns,
		     unsigned stream)
{
	uint64_t issued;
	uint32_t corr = api_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
				 "cudaMemcpyAsync", NULL, &issued);

	pthread_mutex_lock(&lock);
	if (on(CUPTI_ACTIVITY_KIND_MEMCPY)) {
		CUpti_ActivityMemcpy6 *m = &add()->copy;

		m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		schedule(stream, issued, gpu_ns, &m->start, &m->end);
		m->bytes = bytes;
		m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
		m->correlationId = corr;
		m->deviceId = current_device;
		m->contextId = current_device + 1;
		m->streamId = stream;
	}
	pthread_mutex_unlock(&lock);
	return (int)corr;
}

struct native_launch {
	const char *kernel;
	unsigned long long gpu_ns;
	unsigned stream;
};

static void *launch_thread(void *arg)
{
	struct native_launch *l = arg;

	fake_launch(l->kernel, l->gpu_ns, l->stream);
	return NULL;
}

/*
 * A launch from a thread of the process's own that runs no Python (as
 * PyTorch's backward threads do): made and joined here.
 */
EXPORT int fake_launch_native(const char *kernel, unsigned long long gpu_ns,
			      unsigned stream)
{
	struct native_launch l = {kernel, gpu_ns, stream};
	pthread_t t;

	if (pthread_create(&t, NULL, launch_thread, &l))
		return -1;
	pthread_join(t, NULL);
	return 0;
}

struct engine_pass {
	const char *kernel;
	unsigned long long gpu_ns;
	unsigned stream;
	int n;
	unsigned gap_us;
	const char *range; /* pushed around each launch, when not NULL */
};

static void *engine_thread(void *arg)
{
	struct engine_pass *p = arg;
	struct timespec gap = {0, (long)p->gap_us * 1000L};
	/* NVTX as the program loaded it (RTLD_GLOBAL): PyTorch's emit_nvtx. */
	int (*push)(const char *) =
	    p->range
		? (int (*)(const char *))dlsym(RTLD_DEFAULT, "nvtxRangePushA")
		: NULL;
	int (*pop)(void) =
	    push ? (int (*)(void))dlsym(RTLD_DEFAULT, "nvtxRangePop") : NULL;
	int i;

	for (i = 0; i < p->n; i++) {
		if (push && pop)
			push(p->range);
		fake_launch(p->kernel, p->gpu_ns, p->stream);
		if (push && pop)
			pop();
		nanosleep(&gap, NULL);
	}
	return NULL;
}

/*
 * A backward pass as PyTorch's autograd engine runs one: a thread of the
 * process's own, with no Python, launches n kernels gap_us apart while
 * the caller waits for it (here, in pthread_join).
 */
static int engine_pass(struct engine_pass *p)
{
	pthread_t t;

	if (pthread_create(&t, NULL, engine_thread, p))
		return -1;
	pthread_join(t, NULL);
	return p->n;
}

EXPORT int fake_engine_pass(const char *kernel, unsigned long long gpu_ns,
			    unsigned stream, int n, unsigned gap_us)
{
	struct engine_pass p = {kernel, gpu_ns, stream, n, gap_us, NULL};

	return engine_pass(&p);
}

/* The same, each launch inside an NVTX range of its own (emit_nvtx). */
EXPORT int fake_engine_pass_ranged(const char *kernel,
				   unsigned long long gpu_ns, unsigned stream,
				   int n, unsigned gap_us, const char *range)
{
	struct engine_pass p = {kernel, gpu_ns, stream, n, gap_us, range};

	return engine_pass(&p);
}

/* n launches of 1 us kernels, as fast as they go: to fill a ring. */
EXPORT int fake_flood(int n)
{
	int i;

	for (i = 0; i < n; i++)
		fake_launch("flood_kernel", 1000, 1);
	return n;
}

/* How many activity kinds are enabled now. */
EXPORT int fake_enabled_kinds(void)
{
	return __builtin_popcountll(
	    __atomic_load_n(&enabled_kinds, __ATOMIC_ACQUIRE));
}

/* Whether a callback subscriber is registered. */
EXPORT int fake_subscribed(void)
{
	return subscriber != NULL;
}

/*
 * make bench's baseline for the agent's cost: what any client of CUPTI
 * asks of it, with nothing done on top.  The activity kinds spyc's agent
 * enables (agent/agent.c's kinds[]: test_gpu_baseline_collects checks
 * that they agree), a launch callback that returns at once, buffers
 * that are walked and freed.  Call once, instead of loading the agent.
 */
static void CUPTIAPI alone_requested(uint8_t **buffer, size_t *size,
				     size_t *max_records)
{
	void *p = NULL;

	if (posix_memalign(&p, 8, ALONE_BUFFER_SIZE))
		p = NULL;
	*buffer = p;
	*size = p ? ALONE_BUFFER_SIZE : 0;
	*max_records = 0;
}

static void CUPTIAPI alone_completed(CUcontext ctx, uint32_t stream,
				     uint8_t *buffer, size_t size, size_t valid)
{
	CUpti_Activity *a = NULL;

	(void)ctx;
	(void)stream;
	(void)size;
	while (buffer &&
	       cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
		__atomic_add_fetch(&alone_records, 1, __ATOMIC_RELAXED);
	free(buffer);
}

static void CUPTIAPI alone_callback(void *userdata, CUpti_CallbackDomain domain,
				    CUpti_CallbackId cbid, const void *data)
{
	(void)userdata;
	(void)domain;
	(void)cbid;
	(void)data;
}

/* FAKE_CUPTI_OTHER_CLIENT_AFTER: a client that takes the buffers. */
static void other_client_arrives(void)
{
	cuptiActivityRegisterCallbacks(alone_requested, alone_completed);
}

EXPORT int fake_collect_alone(void)
{
	static const CUpti_ActivityKind kinds[] = {
	    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    CUPTI_ACTIVITY_KIND_MEMCPY,
	    CUPTI_ACTIVITY_KIND_MEMSET,
	    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	    CUPTI_ACTIVITY_KIND_RUNTIME,
	    CUPTI_ACTIVITY_KIND_DRIVER,
	};
	CUpti_SubscriberHandle sub;
	size_t i;

	cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	cuptiActivityRegisterCallbacks(alone_requested, alone_completed);
	for (i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
		cuptiActivityEnable(kinds[i]);
	if (cuptiSubscribe(&sub, alone_callback, NULL) != CUPTI_SUCCESS)
		return -1;
	cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
			    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	return 0;
}

/* What CUPTI exports, as far as the agent uses it. */

EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result,
						 const char **str)
{
	switch (result) {
	case CUPTI_SUCCESS:
		*str = "CUPTI_SUCCESS";
		break;
	case CUPTI_ERROR_NOT_INITIALIZED:
		*str = "CUPTI_ERROR_NOT_INITIALIZED";
		break;
	case CUPTI_ERROR_INVALID_KIND:
		*str = "CUPTI_ERROR_INVALID_KIND";
		break;
	default:
		*str = "CUPTI_ERROR_UNKNOWN";
	}
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc func)
{
	if (failing(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!func)
		return CUPTI_ERROR_INVALID_PARAMETER;
	__atomic_store_n(&timestamp_callback, func, __ATOMIC_RELEASE);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
							      uint32_t streamId,
							      size_t *dropped)
{
	(void)context;
	(void)streamId;
	if (failing(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	*dropped = stats.dropped_unread;
	stats.dropped_unread = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
	*timestamp = now();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc funcBufferRequested,
    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
	pthread_t t;

	if (failing(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	requested = funcBufferRequested;
	completed = funcBufferCompleted;
	if (!__atomic_exchange_n(&flusher_started, 1, __ATOMIC_ACQ_REL) &&
	    !pthread_create(&t, NULL, flusher, NULL))
		pthread_detach(t);
	return CUPTI_SUCCESS;
}

/*
 * Enabling the RUNTIME or DRIVER kind switches every call of it on,
 * "overriding" the per-call switches set before (cupti_activity.h);
 * disabling it, every call off.
 */
static void set_api_records(CUpti_ActivityKind kind, int on)
{
	if (kind != CUPTI_ACTIVITY_KIND_RUNTIME &&
	    kind != CUPTI_ACTIVITY_KIND_DRIVER)
		return;
	pthread_mutex_lock(&lock);
	memset(api_record_on[kind == CUPTI_ACTIVITY_KIND_DRIVER], on ? 1 : 0,
	       MAX_CBIDS);
	pthread_mutex_unlock(&lock);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (failing(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	__atomic_or_fetch(&enabled_kinds, 1ULL << kind, __ATOMIC_ACQ_REL);
	set_api_records(kind, 1);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	__atomic_and_fetch(&enabled_kinds, ~(1ULL << kind), __ATOMIC_ACQ_REL);
	set_api_records(kind, 0);
	return CUPTI_SUCCESS;
}

/* One call's API records on or off (cupti_activity.h's semantics). */
static CUptiResult enable_api(const char *function, int driver,
			      CUpti_CallbackId cbid, uint32_t size,
			      uint8_t enable)
{
	if (failing(function))
		return CUPTI_ERROR_NOT_SUPPORTED;
	/* Not documented: what the real one gives for an unknown id. */
	if (!cbid || cbid >= size || cbid >= MAX_CBIDS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	api_record_on[driver][cbid] = enable ? 1 : 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid,
							  uint8_t enable)
{
	return enable_api(__func__, 0, cbid, CUPTI_RUNTIME_TRACE_CBID_SIZE,
			  enable);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid,
							 uint8_t enable)
{
	return enable_api(__func__, 1, cbid, CUPTI_DRIVER_TRACE_CBID_SIZE,
			  enable);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	if (failing(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	/*
	 * Forced: every buffer, complete or not; else only buffers whose
	 * records are all complete (here: up to the first that is not).
	 */
	deliver(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED ? SIZE_MAX
							: completed_records());
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
	period_ms = time ? time : 100;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(
    uint8_t *buffer, size_t validBufferSizeBytes, CUpti_Activity **record)
{
	uint8_t *next, *end = buffer + validBufferSizeBytes;
	size_t len;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	/*
	 * An invalid record has no size: the walk cannot go past it, and
	 * is given the same error again.
	 */
	if (*record && !record_size((*record)->kind))
		return CUPTI_ERROR_INVALID_KIND;
	next = *record ? (uint8_t *)*record + record_size((*record)->kind)
		       : buffer;
	if (next + sizeof(CUpti_Activity) > end)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	len = record_size(((CUpti_Activity *)next)->kind);
	if (!len || next + len > end) {
		*record = (CUpti_Activity *)next;
		return CUPTI_ERROR_INVALID_KIND;
	}
	*record = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI
cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	thread_id_type = type;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain,
						 uint32_t cbid,
						 const char **name)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
		*name = "cudaLaunchKernel";
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
		 cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020)
		*name = "cudaMemcpyAsync";
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
		 cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020)
		*name = "cudaMemsetAsync";
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
		 cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020)
		*name = "cudaStreamSynchronize";
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
		 cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
		*name = "cuLaunchKernel";
	else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
		 cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020)
		*name = "cudaGetDevice";
	else
		return CUPTI_ERROR_INVALID_PARAMETER;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub,
					   CUpti_CallbackFunc callback_fn,
					   void *userdata)
{
	if (subscriber)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	if (failing(__func__))
		return CUPTI_ERROR_NOT_INITIALIZED;
	subscriber_data = userdata;
	subscriber = callback_fn;
	*sub = (CUpti_SubscriberHandle)&subscriber;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	(void)sub;
	subscriber = NULL;
	memset(callback_on, 0, sizeof(callback_on));
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
						CUpti_SubscriberHandle sub,
						CUpti_CallbackDomain domain,
						CUpti_CallbackId cbid)
{
	(void)sub;
	if ((unsigned)domain >= NR_DOMAINS || cbid >= MAX_CBIDS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	callback_on[domain][cbid] = enable ? 1 : 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
					      CUpti_SubscriberHandle sub,
					      CUpti_CallbackDomain domain)
{
	(void)sub;
	if ((unsigned)domain >= NR_DOMAINS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	memset(callback_on[domain], enable ? 1 : 0, MAX_CBIDS);
	return CUPTI_SUCCESS;
}
