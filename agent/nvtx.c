/* SPDX-License-Identifier: MIT */
/*
 * NVTX ranges: the agent as an NVTX tool.  NVTX's loader, compiled from
 * NVIDIA's headers into every library that uses NVTX (PyTorch, the nvtx
 * package), loads the library NVTX_INJECTION64_PATH names at the
 * program's first NVTX call and hands its InitializeInjectionNvtx2 a
 * function that gives out NVTX's function tables; the agent puts its
 * own push and pop there.  spyc names the agent there, and the channel
 * in SPYC_GPU_CHANNEL, in the environment of a program it launches: a
 * running program's NVTX has made up its mind long before spyc attaches.
 *
 * Each range pushed and popped goes to spyc as a record (GPU_REC_RANGE),
 * with its own mapping of the channel (the CUDA driver may start the
 * rest of the agent later, or never); each launch's stack names the
 * innermost range open on its thread (nvtx_innermost).  Ranges that
 * cross threads (nvtxRangeStart/End) and marks are not recorded.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "agent.h"
#include "libc-compat.h"
#include "ring.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

/* Ranges open on a thread that the agent follows; deeper ones only count. */
#define NVTX_DEPTH 64

/* The channel NVTX's records go to; mapped once, for the process's life. */
static struct ring_writer writer;
/* 1 once writer is mapped and the functions are NVTX's. */
static int recording;
/* 1 in a child forked from the target: its records are not the target's. */
static int forked;
/* The last range id given (ids are unique in the process, 1 on). */
static uint64_t last_id;

/* This thread's ranges open, outermost first, and their domains. */
static __thread struct open_range {
	uint64_t id; /* 0: not told to spyc */
	nvtxDomainHandle_t domain;
} opened[NVTX_DEPTH];
/* Ranges open on this thread, those deeper than NVTX_DEPTH too. */
static __thread unsigned depth;
/* This thread's id (gettid), once asked: a system call otherwise. */
static __thread uint32_t thread_id;

static uint32_t this_thread(void)
{
	if (!thread_id)
		thread_id = (uint32_t)compat_gettid();
	return thread_id;
}

static void in_child(void)
{
	forked = 1;
}

/* The channel, while spyc wants records in it; NULL otherwise. */
static struct ring_writer *channel(void)
{
	if (!__atomic_load_n(&recording, __ATOMIC_ACQUIRE) || forked ||
	    ring_control(&writer) == GPU_CONTROL_STOP)
		return NULL;
	return &writer;
}

uint64_t nvtx_innermost(void)
{
	unsigned n = depth < NVTX_DEPTH ? depth : NVTX_DEPTH;

	return n ? opened[n - 1].id : 0;
}

/*
 * A wide string into out as UTF-8: the bytes used, or size + 1 when it
 * does not fit (what fits is there, no character cut in two).
 */
static size_t utf8_from_wide(const wchar_t *s, char *out, size_t size)
{
	size_t n = 0;

	for (; *s; s++) {
		uint32_t c = (uint32_t)*s;
		unsigned char b[4];
		size_t len;

		if (c < 0x80) {
			b[0] = (unsigned char)c;
			len = 1;
		} else if (c < 0x800) {
			b[0] = (unsigned char)(0xc0 | c >> 6);
			b[1] = (unsigned char)(0x80 | (c & 0x3f));
			len = 2;
		} else if (c < 0x10000) {
			b[0] = (unsigned char)(0xe0 | c >> 12);
			b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			b[2] = (unsigned char)(0x80 | (c & 0x3f));
			len = 3;
		} else if (c < 0x110000) {
			b[0] = (unsigned char)(0xf0 | c >> 18);
			b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
			b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			b[3] = (unsigned char)(0x80 | (c & 0x3f));
			len = 4;
		} else {
			b[0] = '?';
			len = 1;
		}
		if (n + len > size)
			return size + 1;
		memcpy(out + n, b, len);
		n += len;
	}
	return n;
}

/* A range's message into r's name (cut to fit, cut then set). */
static void set_name(struct gpu_range *r, const char *ascii,
		     const wchar_t *wide)
{
	size_t n = 0;

	if (ascii) {
		n = strnlen(ascii, sizeof(r->name) + 1);
		memcpy(r->name, ascii,
		       n < sizeof(r->name) ? n : sizeof(r->name));
	} else if (wide) {
		n = utf8_from_wide(wide, r->name, sizeof(r->name));
	}
	r->cut = n > sizeof(r->name);
	r->len = (uint16_t)(r->cut ? sizeof(r->name) : n);
	/* The wide text's whole characters that fit. */
	if (r->cut && wide)
		r->len = (uint16_t)strnlen(r->name, sizeof(r->name));
}

/*
 * A registered string's handle (nvtxDomainRegisterString*): the agent's
 * copy of the text, NUL-terminated, kept for the process's life as
 * NVTX's registrations are.
 */
static nvtxStringHandle_t register_text(const char *ascii, const wchar_t *wide)
{
	struct gpu_range tmp;
	char *copy;

	memset(&tmp, 0, sizeof(tmp));
	set_name(&tmp, ascii, wide);
	copy = malloc((size_t)tmp.len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, tmp.name, tmp.len);
	copy[tmp.len] = '\0';
	return (nvtxStringHandle_t)(void *)copy;
}

/* The message of event attributes: its text or wide text. */
static void attrib_message(const nvtxEventAttributes_t *a, const char **ascii,
			   const wchar_t **wide)
{
	size_t need =
	    offsetof(nvtxEventAttributes_t, message) + sizeof(a->message);

	*ascii = NULL;
	*wide = NULL;
	if (!a || a->version < 1 || a->size < need)
		return;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		*ascii = a->message.ascii;
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		*wide = a->message.unicode;
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		*ascii = (const char *)(const void *)a->message.registered;
		break;
	default:
		break;
	}
}

static int push(nvtxDomainHandle_t domain, const char *ascii,
		const wchar_t *wide)
{
	struct ring_writer *w = channel();
	unsigned level = depth;

	if (level < NVTX_DEPTH) {
		uint64_t id = 0;

		if (w) {
			struct gpu_record r;

			memset(&r, 0, sizeof(r));
			r.type = GPU_REC_RANGE;
			r.size = sizeof(r.u.range);
			id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
			r.u.range.id = id;
			r.u.range.parent = level ? opened[level - 1].id : 0;
			r.u.range.t = agent_monotonic_ns();
			r.u.range.tid = this_thread();
			set_name(&r.u.range, ascii, wide);
			if (ring_write(w, &r))
				id = 0; /* spyc never hears of it */
		}
		opened[level].id = id;
		opened[level].domain = domain;
	}
	depth = level + 1;
	return (int)level;
}

static int pop(nvtxDomainHandle_t domain)
{
	struct ring_writer *w;
	unsigned i;

	if (!depth)
		return -1;
	if (depth > NVTX_DEPTH)
		return (int)--depth;
	/* A domain's innermost range: domains need not nest in each other. */
	for (i = depth; i > 0 && opened[i - 1].domain != domain; i--)
		;
	if (!i)
		return -1;
	i--;
	w = channel();
	if (w && opened[i].id) {
		struct gpu_record r;

		memset(&r, 0, sizeof(r));
		r.type = GPU_REC_RANGE;
		r.size = sizeof(r.u.range);
		r.u.range.id = opened[i].id;
		r.u.range.t = agent_monotonic_ns();
		r.u.range.tid = this_thread();
		r.u.range.pop = 1;
		ring_write(w, &r);
	}
	memmove(opened + i, opened + i + 1, (depth - i - 1) * sizeof(*opened));
	depth--;
	return (int)i;
}

/* NVTX's functions, as the agent has them. */
static int NVTX_API push_a(const char *message)
{
	return push(NULL, message, NULL);
}

static int NVTX_API push_w(const wchar_t *message)
{
	return push(NULL, NULL, message);
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	const char *ascii;
	const wchar_t *wide;

	attrib_message(a, &ascii, &wide);
	return push(NULL, ascii, wide);
}

static int NVTX_API pop_core(void)
{
	return pop(NULL);
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t domain,
				   const nvtxEventAttributes_t *a)
{
	const char *ascii;
	const wchar_t *wide;

	attrib_message(a, &ascii, &wide);
	return push(domain, ascii, wide);
}

static int NVTX_API domain_pop(nvtxDomainHandle_t domain)
{
	return pop(domain);
}

static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t domain,
					      const char *s)
{
	(void)domain;
	return s ? register_text(s, NULL) : NULL;
}

static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t domain,
					      const wchar_t *s)
{
	(void)domain;
	return s ? register_text(NULL, s) : NULL;
}

/* Put fn in slot id of a module's table of n (ids below n; 0 is none). */
static void set_slot(NvtxFunctionTable table, unsigned n, unsigned id,
		     NvtxFunctionPointer fn)
{
	if (id < n && table[id])
		*table[id] = fn;
}

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

/* 1 once writer maps the channel of the process spyc launched. */
static int writer_open;

/* Map the channel SPYC_GPU_CHANNEL names, if this process is spyc's. */
static void open_channel(void)
{
	const char *path = getenv(GPUCHAN_ENV);

	if (!path || !*path || ring_writer_open(&writer, path))
		return;
	if (!ring_is_for_this_process(&writer)) {
		ring_writer_close(&writer);
		return;
	}
	writer_open = 1;
}

/*
 * Called by NVTX's loader, once per copy of it in the process.  Returns
 * 1 once the agent has NVTX's functions; 0 (NVTX's calls then do
 * nothing, and the loader unloads what it loaded) in a process spyc did
 * not launch, such as its children, or without the tables.
 */
EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	static int atfork_set;
	const NvtxExportTableCallbacks *cb;
	NvtxFunctionTable core = NULL, core2 = NULL;
	unsigned n = 0, n2 = 0;

	if (!get_table || forked)
		return 0;
	/* Copies of the loader in several libraries may come at once. */
	pthread_once(&once, open_channel);
	if (!writer_open)
		return 0;
	cb = get_table(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb) ||
	    !cb->GetModuleFunctionTable ||
	    !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &n) ||
	    !core) {
		if (!__atomic_load_n(&recording, __ATOMIC_ACQUIRE))
			__atomic_store_n(&writer.header->nvtx, GPU_NVTX_REFUSED,
					 __ATOMIC_RELEASE);
		return 0;
	}
	set_slot(core, n, NVTX_CBID_CORE_RangePushA, FN(push_a));
	set_slot(core, n, NVTX_CBID_CORE_RangePushW, FN(push_w));
	set_slot(core, n, NVTX_CBID_CORE_RangePushEx, FN(push_ex));
	set_slot(core, n, NVTX_CBID_CORE_RangePop, FN(pop_core));
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &n2) &&
	    core2) {
		set_slot(core2, n2, NVTX_CBID_CORE2_DomainRangePushEx,
			 FN(domain_push_ex));
		set_slot(core2, n2, NVTX_CBID_CORE2_DomainRangePop,
			 FN(domain_pop));
		set_slot(core2, n2, NVTX_CBID_CORE2_DomainRegisterStringA,
			 FN(register_a));
		set_slot(core2, n2, NVTX_CBID_CORE2_DomainRegisterStringW,
			 FN(register_w));
	}
	if (!__atomic_exchange_n(&atfork_set, 1, __ATOMIC_ACQ_REL))
		pthread_atfork(NULL, NULL, in_child);
	__atomic_store_n(&writer.header->nvtx, GPU_NVTX_ON, __ATOMIC_RELEASE);
	__atomic_store_n(&recording, 1, __ATOMIC_RELEASE);
	return 1;
}
