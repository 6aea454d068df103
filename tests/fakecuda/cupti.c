/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libcupti.so, for the tests of --gpu on machines with no
 * GPU: the CUPTI functions spyc's agent calls, with CUPTI's own headers'
 * types, and "GPU work" that a test's Python program asks for through
 * the fake_* functions (with ctypes).  Each fake launch makes the records
 * a real one would (a runtime API call and a kernel, or a copy, with one
 * correlation id, on CUPTI's clock), calls the subscriber's callbacks
 * around the call as CUPTI does, and hands the records to the agent in
 * the buffers it gives, from a thread of its own every flush period, or
 * at once on cuptiActivityFlushAll.  Timings are made up; nothing here
 * touches a device.
 */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* CUPTI's clock runs this far behind CLOCK_MONOTONIC here. */
#define CLOCK_BEHIND_NS 7000000000ULL
/* A launched kernel starts this long after its launch returns. */
#define LAUNCH_LATENCY_NS 3000ULL
#define MAX_STREAMS 64
#define MAX_CBIDS 1024
/* Records in what counts as a full buffer (FAKE_CUPTI_NO_FLUSH_PERIOD). */
#define FULL_BUFFER 4096
/* fake_collect_alone's buffers: the agent's size. */
#define ALONE_BUFFER_SIZE (1u << 20)

union fake_record {
	CUpti_Activity a;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityAPI api;
	CUpti_ActivityMemcpy6 copy;
};

/* Records are laid out in the agent's buffers this far apart. */
#define SLOT ((sizeof(union fake_record) + 7) & ~(size_t)7)

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
static unsigned char callback_on[3][MAX_CBIDS]; /* [domain][cbid] */
static uint64_t alone_records; /* walked by fake_collect_alone's client */
static CUpti_ActivityThreadIdType thread_id_type;

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
EXPORT int fake_enabled_kinds(void);
EXPORT int fake_subscribed(void);
EXPORT int fake_collect_alone(void);

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec -
	       CLOCK_BEHIND_NS;
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

/* Hand every pending record to the agent, in as many buffers as it takes. */
static void deliver(void)
{
	pthread_mutex_lock(&deliver_lock);
	for (;;) {
		uint8_t *buf = NULL;
		size_t size = 0, max = 0, n, i;

		pthread_mutex_lock(&lock);
		n = nr_pending;
		pthread_mutex_unlock(&lock);
		if (!n || !requested || !completed)
			break;
		requested(&buf, &size, &max);
		if (!buf || size < SLOT)
			break;
		pthread_mutex_lock(&lock);
		n = nr_pending < size / SLOT ? nr_pending : size / SLOT;
		for (i = 0; i < n; i++)
			memcpy(buf + i * SLOT, &pending[i], sizeof(*pending));
		memmove(pending, pending + n,
			(nr_pending - n) * sizeof(*pending));
		nr_pending -= n;
		pthread_mutex_unlock(&lock);
		completed(NULL, 0, buf, size, n * SLOT);
	}
	pthread_mutex_unlock(&deliver_lock);
}

/*
 * Every flush period, hand over what is pending.  With
 * FAKE_CUPTI_NO_FLUSH_PERIOD set, only full buffers' worth, as CUPTI does
 * without a flush period: the rest waits for cuptiActivityFlushAll.
 */
static void *flusher(void *arg)
{
	int only_full = getenv("FAKE_CUPTI_NO_FLUSH_PERIOD") != NULL;

	(void)arg;
	for (;;) {
		struct timespec ts = {period_ms / 1000,
				      (long)(period_ms % 1000) * 1000000L};
		size_t n;

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&lock);
		n = nr_pending;
		pthread_mutex_unlock(&lock);
		if (!only_full || n >= FULL_BUFFER)
			deliver();
	}
	return NULL;
}

/* The subscriber's callback for a runtime call, if it asked for it. */
static void callback(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
		     const char *function, const char *symbol, uint32_t corr)
{
	CUpti_CallbackData d;

	if (!subscriber || cbid >= MAX_CBIDS ||
	    !callback_on[CUPTI_CB_DOMAIN_RUNTIME_API][cbid])
		return;
	memset(&d, 0, sizeof(d));
	d.callbackSite = site;
	d.functionName = function;
	d.symbolName = symbol;
	d.correlationId = corr;
	subscriber(subscriber_data, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
}

/* A runtime call: its callbacks and its record; the call's times. */
static uint32_t api_call(CUpti_CallbackId cbid, const char *function,
			 const char *symbol, uint64_t *end)
{
	uint32_t corr =
	    __atomic_add_fetch(&next_correlation, 1, __ATOMIC_RELAXED);
	uint64_t start;

	callback(cbid, CUPTI_API_ENTER, function, symbol, corr);
	start = now();
	*end = now() + 500;
	callback(cbid, CUPTI_API_EXIT, function, symbol, corr);
	pthread_mutex_lock(&lock);
	if (on(CUPTI_ACTIVITY_KIND_RUNTIME)) {
		CUpti_ActivityAPI *a = &add()->api;

		a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
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

/* When work of gpu_ns queued on stream now runs: [*start, *end). */
static void schedule(unsigned stream, uint64_t issued, uint64_t gpu_ns,
		     uint64_t *start, uint64_t *end)
{
	uint64_t *free_at = &stream_free_at[stream % MAX_STREAMS];

	*start = issued + LAUNCH_LATENCY_NS;
	if (*start < *free_at)
		*start = *free_at;
	*end = *start + gpu_ns;
	*free_at = *end;
}

/*
 * cudaLaunchKernel of kernel on stream, taking gpu_ns on the device.
 * Returns the launch's correlation id.
 */
EXPORT int fake_launch(const char *kernel, unsigned long long gpu_ns,
		       unsigned stream)
{
	uint64_t issued;
	uint32_t corr =
	    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		     "cudaLaunchKernel", kernel, &issued);

	pthread_mutex_lock(&lock);
	if (on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
		CUpti_ActivityKernel10 *k = &add()->kernel;

		k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		schedule(stream, issued, gpu_ns, &k->start, &k->end);
		k->correlationId = corr;
		k->streamId = stream;
		k->gridX = k->gridY = k->gridZ = 1;
		k->blockX = 128;
		k->blockY = k->blockZ = 1;
		k->registersPerThread = 32;
		k->name = intern(kernel);
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
		alone_records++;
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
	*str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "fake CUPTI error";
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

	requested = funcBufferRequested;
	completed = funcBufferCompleted;
	if (!__atomic_exchange_n(&flusher_started, 1, __ATOMIC_ACQ_REL) &&
	    !pthread_create(&t, NULL, flusher, NULL))
		pthread_detach(t);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	__atomic_or_fetch(&enabled_kinds, 1ULL << kind, __ATOMIC_ACQ_REL);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	__atomic_and_fetch(&enabled_kinds, ~(1ULL << kind), __ATOMIC_ACQ_REL);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	deliver();
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
	uint8_t *next = *record ? (uint8_t *)*record + SLOT : buffer;

	if (next + SLOT > buffer + validBufferSizeBytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
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
	if ((unsigned)domain >= 3 || cbid >= MAX_CBIDS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	callback_on[domain][cbid] = enable ? 1 : 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
					      CUpti_SubscriberHandle sub,
					      CUpti_CallbackDomain domain)
{
	(void)sub;
	if ((unsigned)domain >= 3)
		return CUPTI_ERROR_INVALID_PARAMETER;
	memset(callback_on[domain], enable ? 1 : 0, MAX_CBIDS);
	return CUPTI_SUCCESS;
}
