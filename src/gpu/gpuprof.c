/* SPDX-License-Identifier: MIT */
/*
 * GPU activity as the agent reported it, and what spyc makes of it: each
 * kernel's stack (the Python stack of its launch, else the launching
 * thread's nearest CPU sample), per-stream
 * timelines, and an nvprof-like summary.
 */
#include "gpu/gpuprof.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile-read.h"
#include "util.h"

#ifdef HAVE_DEMANGLE
/* Where libstdc++ demangles C++ names (C ABI, so C can call it). */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len,
			    int *status);
#endif

/* A C++ name demangled (the caller frees it), or NULL. */
static char *demangle(const char *mangled)
{
#ifdef HAVE_DEMANGLE
	int status = -1;
	char *s;

	if (strncmp(mangled, "_Z", 2))
		return NULL;
	s = __cxa_demangle(mangled, NULL, NULL, &status);
	if (s && !status)
		return s;
	free(s);
#else
	(void)mangled;
#endif
	return NULL;
}

int gpuprof_demangles(void)
{
#ifdef HAVE_DEMANGLE
	return 1;
#else
	return 0;
#endif
}

/* CUpti_ActivityMemcpyKind's values, as cupti_activity.h numbers them. */
static const char *const copy_kinds[] = {
    "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
    "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP",
};

const char *gpu_copy_kind_name(unsigned kind)
{
	return kind < ARRAY_SIZE(copy_kinds) ? copy_kinds[kind] : "unknown";
}

void gpuprof_init(struct gpuprof *gp)
{
	memset(gp, 0, sizeof(*gp));
	stacks_init(&gp->stacks);
	stacks_init(&gp->idle);
	stacks_init(&gp->launch_stacks);
	stacks_init(&gp->waiting_stacks);
	stacks_init(&gp->kernel_keys);
	stacks_init(&gp->folded);
	stacks_init(&gp->folded_idle);
	stacks_init(&gp->captured);
	stacks_init(&gp->capture_view);
	gpu_names_init(&gp->names);
	gpunvtx_init(&gp->nvtx);
}

void gpuprof_release(struct gpuprof *gp)
{
	size_t i;

	for (i = 0; i < gp->nr_api_names; i++)
		free(gp->api_names[i]);
	free(gp->api_names);
	free(gp->pairs);
	gpu_names_release(&gp->names);
	free(gp->python_frame);
	free(gp->line_time);
	free(gp->launches);
	free(gp->launch_ids);
	stacks_release(&gp->launch_stacks);
	free(gp->acts);
	free(gp->kernels);
	stacks_release(&gp->kernel_keys);
	free(gp->apis);
	free(gp->samples);
	free(gp->waiting);
	stacks_release(&gp->waiting_stacks);
	free(gp->leaf);
	stacks_release(&gp->stacks);
	free(gp->idle_line_time);
	stacks_release(&gp->idle);
	free(gp->waiting_python);
	free(gp->nodes);
	stacks_release(&gp->captured);
	stacks_release(&gp->capture_view);
	free(gp->captured_leaf);
	stacks_release(&gp->folded);
	stacks_release(&gp->folded_idle);
	free(gp->folded_line_time);
	free(gp->folded_idle_line_time);
	free(gp->folded_kernel_leaf);
	free(gp->folded_rows);
	free(gp->folded_map);
	for (i = 0; i < gp->nr_devs; i++) {
		free(gp->devs[i].rest);
		free(gp->devs[i].tids);
	}
	free(gp->devs);
	free(gp->launch_nvtx);
	gpunvtx_release(&gp->nvtx);
	gpuprof_init(gp);
}

static void add_clock(struct gpuprof *gp, const struct gpu_clock *c)
{
	int64_t offset = (int64_t)(c->monotonic_ns - c->cupti_ns);

	if (!gp->clock.known) {
		gp->clock.known = 1;
		gp->clock.offset_ns = offset;
	}
	gp->clock.drift_ns = offset - gp->clock.offset_ns;
	gp->clock.pairs++;
	ALLOC_GROW(gp->pairs, gp->nr_pairs + 1, gp->alloc_pairs);
	gp->pairs[gp->nr_pairs++] = *c;
	gp->pairs_sorted = 0;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct gpu_clock *x = a, *y = b;

	return (x->cupti_ns > y->cupti_ns) - (x->cupti_ns < y->cupti_ns);
}

/* The index of an API call's name in gp->api_names (added if new). */
static uint32_t api_name_index(struct gpuprof *gp, const struct gpu_api *api)
{
	char name[GPU_API_NAME_SIZE];
	size_t i;

	/* The channel is the target's memory too: take what is a string. */
	memcpy(name, api->name, sizeof(name));
	name[sizeof(name) - 1] = 0;
	if (!name[0])
		return UINT32_MAX;
	/* A few dozen distinct calls in a whole run: the newest first. */
	for (i = gp->nr_api_names; i-- > 0;)
		if (!strcmp(gp->api_names[i], name))
			return (uint32_t)i;
	ALLOC_GROW(gp->api_names, gp->nr_api_names + 1, gp->alloc_api_names);
	gp->api_names[gp->nr_api_names] = xstrdup(name);
	return (uint32_t)gp->nr_api_names++;
}

/* The index in gp->kernels of kernel record rec's name, added if new. */
static uint32_t kernel_name(struct gpuprof *gp, const struct gpu_record *rec)
{
	char key[GPU_KERNEL_KEY_MAX];
	uint32_t id;

	gpu_kernel_key(&rec->u.kernel, key);
	/* Interned as frames of their own, in the order they came. */
	id = stacks_frame(&gp->kernel_keys, key, "", 0);
	if (id == gp->nr_kernels) {
		ALLOC_GROW(gp->kernels, gp->nr_kernels + 1, gp->alloc_kernels);
		gp->kernels[gp->nr_kernels] = *rec;
		gp->kernels[gp->nr_kernels++]
		    .u.kernel.name[sizeof(rec->u.kernel.name) - 1] = '\0';
	}
	return id;
}

/*
 * CUPTI's 32-bit correlation id c as 64 bits: the value with c's low
 * bits nearest the highest id seen, which it becomes if higher.  Records
 * come a little out of order (launch stacks ahead of CUPTI's buffers),
 * never 2^31 ids apart.  0 stays CUPTI's "none".
 */
static uint64_t unwrap(struct gpuprof *gp, uint32_t c)
{
	const uint64_t half = 1ULL << 31, whole = 1ULL << 32;
	uint64_t top = gp->corr_top, v = (top & ~(whole - 1)) | c;

	if (!c)
		return 0;
	if (v + half < top)
		v += whole;
	else if (v > top + half && v >= whole)
		v -= whole;
	if (v > gp->corr_top)
		gp->corr_top = v;
	return v;
}

static void note_graph_kernel(struct gpuprof *gp, const struct gpu_act *act,
			      uint64_t node);

void gpuprof_add(struct gpuprof *gp, const struct gpu_record *rec)
{
	switch (rec->type) {
	case GPU_REC_KERNEL:
	case GPU_REC_MEMCPY:
	case GPU_REC_MEMSET: {
		/* Each has a struct gpu_interval (gpu_record_interval). */
		struct gpu_act *a;

		ALLOC_GROW(gp->acts, gp->nr_acts + 1, gp->alloc_acts);
		a = &gp->acts[gp->nr_acts++];
		memset(a, 0, sizeof(*a));
		a->iv = *gpu_record_interval(rec);
		a->wraps = (uint16_t)(unwrap(gp, a->iv.correlation) >> 32);
		a->type = (uint8_t)rec->type;
		if (rec->type == GPU_REC_KERNEL) {
			a->kernel = kernel_name(gp, rec);
			if (rec->u.kernel.graph_node)
				note_graph_kernel(gp, a,
						  rec->u.kernel.graph_node);
		} else if (rec->type == GPU_REC_MEMCPY) {
			a->bytes = rec->u.memcpy.bytes;
			a->copy_kind = rec->u.memcpy.copy_kind;
		} else {
			a->bytes = rec->u.memset.bytes;
		}
		break;
	}
	case GPU_REC_API: {
		struct gpu_api_call *a;

		ALLOC_GROW(gp->apis, gp->nr_apis + 1, gp->alloc_apis);
		a = &gp->apis[gp->nr_apis++];
		a->correlation = unwrap(gp, rec->u.api.correlation);
		a->tid = rec->u.api.tid;
		a->start = rec->u.api.start;
		a->end = rec->u.api.end < a->start ? a->start : rec->u.api.end;
		a->pid = rec->u.api.pid;
		a->cbid = rec->u.api.cbid;
		a->domain = rec->u.api.domain;
		a->name = api_name_index(gp, &rec->u.api);
		break;
	}
	case GPU_REC_SYNC:
		gp->syncs++;
		if (rec->u.sync.iv.end > rec->u.sync.iv.start)
			gp->sync_time +=
			    rec->u.sync.iv.end - rec->u.sync.iv.start;
		break;
	case GPU_REC_CLOCK:
		add_clock(gp, &rec->u.clock);
		break;
	case GPU_REC_NAME:
		gpu_names_add(&gp->names, &rec->u.name);
		break;
	case GPU_REC_RANGE:
		gpunvtx_add(&gp->nvtx, &rec->u.range,
			    gp->keep ? gp->keep : GPU_KEEP_DEFAULT);
		break;
	default:
		break;
	}
}

void gpuprof_cpu_sample(struct gpuprof *gp, uint64_t t_ns, long tid,
			uint32_t entry)
{
	struct gpu_cpu_sample *s;

	ALLOC_GROW(gp->samples, gp->nr_samples + 1, gp->alloc_samples);
	s = &gp->samples[gp->nr_samples++];
	s->t_ns = t_ns;
	s->tid = tid;
	s->entry = entry;
}

static int is_python_frame(const struct gpuprof *gp, uint32_t f);

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail) &&
	       (n == m || s[n - m - 1] == '/');
}

int gpuprof_autograd_file(const char *file)
{
	return file && (ends_with(file, "torch/autograd/graph.py") ||
			ends_with(file, "torch/autograd/__init__.py"));
}

void gpuprof_waiting_sample(struct gpuprof *gp, uint64_t t_ns, long tid,
			    uint64_t ident, const char *name,
			    const struct stacks *cpu, const uint32_t *frames,
			    size_t depth)
{
	uint32_t entry;
	struct gpu_cpu_sample *s;
	size_t i;

	ALLOC_GROW(gp->launch_ids, depth ? depth : 1, gp->alloc_launch_ids);
	for (i = 0; i < depth; i++) {
		const struct stack_frame *f = &cpu->frames[frames[i]];

		gp->launch_ids[i] = stacks_frame(&gp->waiting_stacks, f->name,
						 f->file, f->line);
	}
	for (i = 0; i < depth; i++) {
		size_t old = gp->alloc_waiting_python;

		ALLOC_GROW(gp->waiting_python, (size_t)gp->launch_ids[i] + 1,
			   gp->alloc_waiting_python);
		if (gp->alloc_waiting_python > old)
			memset(gp->waiting_python + old, 0,
			       gp->alloc_waiting_python - old);
		gp->waiting_python[gp->launch_ids[i]] =
		    (unsigned char)is_python_frame(gp, frames[i]);
	}
	entry = stacks_add(&gp->waiting_stacks,
			   stacks_thread(&gp->waiting_stacks, ident, tid, name),
			   gp->launch_ids, depth, 1);
	if (entry == STACKS_NO_ENTRY)
		return;
	ALLOC_GROW(gp->waiting, gp->nr_waiting + 1, gp->alloc_waiting);
	s = &gp->waiting[gp->nr_waiting++];
	s->t_ns = t_ns;
	s->tid = tid;
	s->entry = entry;
}

/* frames (root first) as an entry of gp->launch_stacks. */
static uint32_t launch_entry(struct gpuprof *gp,
			     const struct stack_frame *frames, size_t depth)
{
	size_t i;

	/* Launch stacks are interned per stack, under one thread. */
	if (!gp->launch_stacks.nr_threads)
		stacks_thread(&gp->launch_stacks, 0, 0, NULL);
	ALLOC_GROW(gp->launch_ids, depth ? depth : 1, gp->alloc_launch_ids);
	for (i = 0; i < depth; i++) {
		uint32_t id = stacks_frame(&gp->launch_stacks, frames[i].name,
					   frames[i].file, frames[i].line);
		size_t old = gp->alloc_launch_nvtx;

		if (id >= old) {
			ALLOC_GROW(gp->launch_nvtx, (size_t)id + 1,
				   gp->alloc_launch_nvtx);
			memset(gp->launch_nvtx + old, 0,
			       gp->alloc_launch_nvtx - old);
		}
		gp->launch_nvtx[id] = gpunvtx_frame(frames[i].name);
		gp->launch_ids[i] = id;
	}
	return stacks_add(&gp->launch_stacks, 0, gp->launch_ids, depth, 1);
}

void gpuprof_launch_stack(struct gpuprof *gp, uint32_t correlation,
			  uint32_t tid, uint32_t alias,
			  const struct stack_frame *frames, size_t depth)
{
	struct gpu_launch *l;

	ALLOC_GROW(gp->launches, gp->nr_launches + 1, gp->alloc_launches);
	l = &gp->launches[gp->nr_launches++];
	l->correlation = unwrap(gp, correlation);
	l->tid = tid;
	l->alias = unwrap(gp, alias);
	l->entry = alias ? UINT32_MAX : launch_entry(gp, frames, depth);
}

/* The node with this id, or NULL (gp->nodes is sorted by id). */
static struct gpu_node *find_node(const struct gpuprof *gp, uint64_t node)
{
	size_t lo = 0, hi = gp->nr_nodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gp->nodes[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < gp->nr_nodes && gp->nodes[lo].node == node ? &gp->nodes[lo]
							       : NULL;
}

void gpuprof_node_stack(struct gpuprof *gp, uint64_t node, uint64_t alias,
			const struct stack_frame *frames, size_t depth)
{
	struct gpu_node *n = find_node(gp, node);
	size_t at;

	if (!node)
		return;
	/*
	 * A copy's link to its original wins over a stack of its own:
	 * instantiation reports the copies it makes as made, with its
	 * caller's stack, beside saying what each is a copy of.
	 */
	if (n && !alias && n->alias)
		return;
	/* Nodes come as graphs are made, a few at a time: kept sorted. */
	if (!n) {
		ALLOC_GROW(gp->nodes, gp->nr_nodes + 1, gp->alloc_nodes);
		for (at = gp->nr_nodes; at > 0 && gp->nodes[at - 1].node > node;
		     at--)
			;
		memmove(gp->nodes + at + 1, gp->nodes + at,
			(gp->nr_nodes - at) * sizeof(*gp->nodes));
		gp->nr_nodes++;
		n = &gp->nodes[at];
	}
	n->node = node;
	n->alias = alias;
	n->entry = alias ? UINT32_MAX : launch_entry(gp, frames, depth);
}

static const struct gpu_record *act_record(const struct gpuprof *gp,
					   const struct gpu_act *act,
					   struct gpu_record *tmp);

/* How many copies of copies a node's stack is looked for through. */
#define GPU_NODE_HOPS 4

/*
 * act, a kernel replayed as graph node `node`: its time on the stack
 * that made the node (gp->captured), when there is one.
 */
static void note_graph_kernel(struct gpuprof *gp, const struct gpu_act *act,
			      uint64_t node)
{
	const struct gpu_node *n = find_node(gp, node);
	const struct stack_entry *e;
	struct strbuf sb = STRBUF_INIT;
	struct gpu_record tmp;
	uint64_t start, end, ns;
	uint32_t *frames, leaf;
	size_t hops, i, old = gp->alloc_captured_leaf;

	gpuprof_activity_times(act, &start, &end);
	ns = end - start;
	gp->graph_kernels++;
	gp->graph_ns += ns;
	for (hops = 0; n && n->alias && hops < GPU_NODE_HOPS; hops++)
		n = find_node(gp, n->alias);
	if (!n)
		gp->graph_node_unknown++;
	if (!n || n->entry >= gp->launch_stacks.nr_entries)
		return;
	e = &gp->launch_stacks.entries[n->entry];
	if (act->kernel >= old ||
	    gp->captured_leaf[act->kernel] == UINT32_MAX) {
		gpuprof_activity_name(&gp->names, act_record(gp, act, &tmp),
				      &sb);
		leaf = stacks_frame(&gp->captured, sb.buf, "", 0);
		ALLOC_GROW(gp->captured_leaf, (size_t)act->kernel + 1,
			   gp->alloc_captured_leaf);
		if (gp->alloc_captured_leaf > old)
			memset(gp->captured_leaf + old, 0xff,
			       (gp->alloc_captured_leaf - old) *
				   sizeof(*gp->captured_leaf));
		gp->captured_leaf[act->kernel] = leaf;
		strbuf_release(&sb);
	}
	frames = xmalloc((e->depth + 2) * sizeof(*frames));
	frames[0] = stacks_frame(&gp->captured, GPU_ROOT_CAPTURE, "", 0);
	for (i = 0; i < e->depth; i++) {
		const struct stack_frame *f =
		    &gp->launch_stacks.frames[e->frames[i]];

		frames[1 + i] =
		    stacks_frame(&gp->captured, f->name, f->file, f->line);
	}
	frames[1 + e->depth] = gp->captured_leaf[act->kernel];
	stacks_add(&gp->captured,
		   stacks_thread(&gp->captured, 0, 0, "[CUDA graph nodes]"),
		   frames, e->depth + 2, ns);
	free(frames);
	gp->graph_kernels_placed++;
	gp->graph_placed_ns += ns;
}

void gpuprof_python_frame(struct gpuprof *gp, uint32_t frame)
{
	size_t old = gp->alloc_python_frame;

	ALLOC_GROW(gp->python_frame, (size_t)frame + 1, gp->alloc_python_frame);
	if (gp->alloc_python_frame > old)
		memset(gp->python_frame + old, 0, gp->alloc_python_frame - old);
	gp->python_frame[frame] = 1;
}

void gpuprof_api_name(const struct gpuprof *gp, const struct gpu_api_call *a,
		      struct strbuf *sb)
{
	if (a->name < gp->nr_api_names)
		strbuf_addstr(sb, gp->api_names[a->name]);
	else
		strbuf_addf(sb, "[CUDA %s call %u]",
			    a->domain == 1 ? "driver" : "runtime", a->cbid);
}

uint64_t gpuprof_to_monotonic(const struct gpuprof *gp, uint64_t cupti_ns)
{
	const struct gpu_clock *p;
	size_t lo = 0, hi = gp->nr_pairs;

	if (!gp->clock.known)
		return cupti_ns;
	if (!gp->pairs_sorted || !gp->nr_pairs)
		return cupti_ns + (uint64_t)gp->clock.offset_ns;
	/* The first pair at or after cupti_ns, or the one before. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gp->pairs[mid].cupti_ns < cupti_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == gp->nr_pairs ||
	    (lo > 0 && cupti_ns - gp->pairs[lo - 1].cupti_ns <
			   gp->pairs[lo].cupti_ns - cupti_ns))
		lo--;
	p = &gp->pairs[lo];
	return cupti_ns + (p->monotonic_ns - p->cupti_ns);
}

void gpuprof_activity_times(const struct gpu_act *act, uint64_t *start,
			    uint64_t *end)
{
	*start = act->iv.start;
	*end = act->iv.end > *start ? act->iv.end : *start;
}

/* act's correlation id, which its launch has too (0 for none). */
static uint64_t activity_correlation(const struct gpu_act *act)
{
	return act->iv.correlation
		   ? (uint64_t)act->wraps << 32 | act->iv.correlation
		   : 0;
}

/*
 * A record that names act as gpuprof_activity_name() reads it: its
 * kernel name's, or for a copy or memset one made in tmp.
 */
static const struct gpu_record *act_record(const struct gpuprof *gp,
					   const struct gpu_act *act,
					   struct gpu_record *tmp)
{
	if (act->type == GPU_REC_KERNEL)
		return &gp->kernels[act->kernel];
	memset(tmp, 0, sizeof(*tmp));
	tmp->type = act->type;
	tmp->u.memcpy.iv = act->iv;
	if (act->type == GPU_REC_MEMCPY) {
		tmp->u.memcpy.bytes = act->bytes;
		tmp->u.memcpy.copy_kind = act->copy_kind;
	} else {
		tmp->u.memset.bytes = act->bytes;
	}
	return tmp;
}

void gpuprof_act_name(const struct gpuprof *gp, const struct gpu_act *act,
		      struct strbuf *sb)
{
	struct gpu_record tmp;

	gpuprof_activity_name(&gp->names, act_record(gp, act, &tmp), sb);
}

void gpuprof_activity_name(const struct gpu_names *names,
			   const struct gpu_record *act, struct strbuf *sb)
{
	const struct gpu_kernel *k = &act->u.kernel;
	struct strbuf mangled = STRBUF_INIT;
	char *demangled = NULL;
	int whole;

	switch (act->type) {
	case GPU_REC_KERNEL:
		whole = gpu_names_kernel(names, k, &mangled);
		/* A cut name does not demangle: show it as it is. */
		if (whole)
			demangled = demangle(mangled.buf);
		strbuf_addstr(sb, demangled	? demangled
				  : mangled.len ? mangled.buf
						: "[kernel]");
		if (!whole)
			strbuf_addf(sb, "... [name %08x]",
				    (unsigned)(k->name_hash >> 32));
		free(demangled);
		strbuf_release(&mangled);
		break;
	case GPU_REC_MEMCPY:
		strbuf_addf(sb, "[memcpy %s]",
			    gpu_copy_kind_name(act->u.memcpy.copy_kind));
		break;
	case GPU_REC_MEMSET:
		strbuf_addstr(sb, "[memset]");
		break;
	default:
		strbuf_addstr(sb, "[unknown]");
	}
}

static int cmp_api(const void *a, const void *b)
{
	const struct gpu_api_call *x = a, *y = b;

	if (x->correlation != y->correlation)
		return x->correlation < y->correlation ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_sample(const void *a, const void *b)
{
	const struct gpu_cpu_sample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

/*
 * The API call with this correlation id (unwrapped) that launched work
 * starting at t (CUPTI's clock), or NULL.  Should ids still repeat (a
 * record that came 2^31 ids late), the work's is the last call to start
 * before it.
 */
static const struct gpu_api_call *find_api(const struct gpuprof *gp,
					   uint64_t correlation, uint64_t t)
{
	size_t lo = 0, hi = gp->nr_apis, best;

	/* Correlation id 0 is CUPTI's "none". */
	if (!correlation)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gp->apis[mid].correlation < correlation)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == gp->nr_apis || gp->apis[lo].correlation != correlation)
		return NULL;
	for (best = lo;
	     lo < gp->nr_apis && gp->apis[lo].correlation == correlation &&
	     gp->apis[lo].start <= t;
	     lo++)
		best = lo;
	return &gp->apis[best];
}

/* When act started, on CUPTI's clock. */
static uint64_t activity_start(const struct gpu_act *act)
{
	uint64_t start, end;

	gpuprof_activity_times(act, &start, &end);
	return start;
}

const struct gpu_api_call *gpuprof_launch(const struct gpuprof *gp,
					  const struct gpu_act *act)
{
	return gp->attributed_done ? find_api(gp, activity_correlation(act),
					      activity_start(act))
				   : NULL;
}

static int cmp_launch(const void *a, const void *b)
{
	const struct gpu_launch *x = a, *y = b;

	if (x->correlation != y->correlation)
		return x->correlation < y->correlation ? -1 : 1;
	return 0;
}

/* The launch stack of the launch with this correlation id, or NULL. */
static const struct gpu_launch *find_launch(const struct gpuprof *gp,
					    uint64_t correlation)
{
	struct gpu_launch key = {correlation, 0, 0, 0};
	const struct gpu_launch *l;

	if (!correlation || !gp->nr_launches)
		return NULL;
	l = bsearch(&key, gp->launches, gp->nr_launches, sizeof(key),
		    cmp_launch);
	/* A driver call inside a runtime call: the runtime call's. */
	if (l && l->alias)
		l = l->alias == correlation ? NULL : find_launch(gp, l->alias);
	return l && l->entry < gp->launch_stacks.nr_entries ? l : NULL;
}

/* The sample of tid nearest to t_ns, or NULL: samples sorted by cmp_sample. */
static const struct gpu_cpu_sample *nearest_sample(const struct gpuprof *gp,
						   long tid, uint64_t t_ns)
{
	const struct gpu_cpu_sample *s = gp->samples;
	size_t lo = 0, hi = gp->nr_samples, first;

	/* The first sample of tid at or after t_ns. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].tid < tid ||
		    (s[mid].tid == tid && s[mid].t_ns < t_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	if (first < gp->nr_samples && s[first].tid == tid) {
		if (first > 0 && s[first - 1].tid == tid &&
		    t_ns - s[first - 1].t_ns < s[first].t_ns - t_ns)
			return &s[first - 1];
		return &s[first];
	}
	if (first > 0 && s[first - 1].tid == tid)
		return &s[first - 1];
	return NULL;
}

static int cmp_sample_time(const void *a, const void *b)
{
	const struct gpu_cpu_sample *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * How far from a launch the sample of a waiting thread may be.  A
 * backward pass launches its kernels in a millisecond or two, between
 * two samples more often than not (on an H200, 29% of a small model's
 * backward kernels had no waiting sample within two periods at 500 Hz),
 * and a training step repeats the same backward call: a missed pass is
 * told by the nearest one sampled, within a second.
 */
#define WAITING_REACH_NS 1000000000ULL

/*
 * The sample of a thread waiting in autograd's engine nearest t_ns,
 * within WAITING_REACH_NS, or NULL.  gp->waiting is sorted by time.
 */
static const struct gpu_cpu_sample *nearest_waiting(const struct gpuprof *gp,
						    uint64_t t_ns)
{
	const struct gpu_cpu_sample *w = gp->waiting, *best = NULL;
	uint64_t reach = WAITING_REACH_NS;
	size_t lo = 0, hi = gp->nr_waiting;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w[mid].t_ns < t_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < gp->nr_waiting)
		best = &w[lo];
	if (lo > 0 && (!best || t_ns - w[lo - 1].t_ns < best->t_ns - t_ns))
		best = &w[lo - 1];
	if (best &&
	    (best->t_ns > t_ns ? best->t_ns - t_ns : t_ns - best->t_ns) > reach)
		return NULL;
	return best;
}

/* Add from's entries to to, their frames by map (from's id -> to's). */
static void stacks_merge_mapped(struct stacks *to, const struct stacks *from,
				const uint32_t *map)
{
	uint32_t *frames = NULL;
	size_t alloc = 0, i, j;

	for (i = 0; i < from->nr_entries; i++) {
		const struct stack_entry *e = &from->entries[i];
		const struct stack_thread *t = &from->threads[e->thread];

		ALLOC_GROW(frames, (size_t)e->depth + 1, alloc);
		for (j = 0; j < e->depth; j++)
			frames[j] = map[e->frames[j]];
		stacks_add(to, stacks_thread(to, t->ident, t->tid, t->name),
			   frames, e->depth, e->count);
	}
	free(frames);
}

/* Give every activity its name's frame in gp->stacks (gp->leaf). */
static void assign_leaves(struct gpuprof *gp)
{
	struct stacks names; /* mangled name -> id, through its interning */
	struct strbuf sb = STRBUF_INIT;
	uint32_t *leaf_of_name = NULL;
	size_t alloc = 0, i;

	stacks_init(&names);
	gp->leaf = xmalloc((gp->nr_acts ? gp->nr_acts : 1) * sizeof(*gp->leaf));
	for (i = 0; i < gp->nr_acts; i++) {
		struct gpu_record tmp;
		const struct gpu_record *act =
		    act_record(gp, &gp->acts[i], &tmp);
		uint32_t id;
		size_t old;

		strbuf_reset(&sb);
		/* A kernel by its mangled name, whole or its start and hash. */
		if (act->type == GPU_REC_KERNEL &&
		    !gpu_names_kernel(&gp->names, &act->u.kernel, &sb))
			strbuf_addf(&sb, "\001%016" PRIx64,
				    act->u.kernel.name_hash);
		else if (act->type != GPU_REC_KERNEL)
			gpuprof_activity_name(&gp->names, act, &sb);
		id = stacks_frame(&names, sb.buf, "", 0);
		old = alloc;
		ALLOC_GROW(leaf_of_name, (size_t)id + 1, alloc);
		if (alloc > old)
			memset(leaf_of_name + old, 0xff,
			       (alloc - old) * sizeof(*leaf_of_name));
		if (leaf_of_name[id] == UINT32_MAX) {
			strbuf_reset(&sb);
			gpuprof_activity_name(&gp->names, act, &sb);
			leaf_of_name[id] =
			    stacks_frame(&gp->stacks, sb.buf, "", 0);
		}
		gp->leaf[i] = leaf_of_name[id];
	}
	free(leaf_of_name);
	stacks_release(&names);
	strbuf_release(&sb);
}

/* Whether CPU frame id f is a Python one (all are, when none was noted). */
static int is_python_frame(const struct gpuprof *gp, uint32_t f)
{
	if (!gp->python_frame)
		return 1;
	return f < gp->alloc_python_frame && gp->python_frame[f];
}

/* (*time)[f] += ns, *time grown (zeroed) to hold f. */
static void add_time_at(uint64_t **time, size_t *nr, uint32_t f, uint64_t ns)
{
	size_t old = *nr;

	if (f >= *nr) {
		ALLOC_GROW(*time, (size_t)f + 1, *nr);
		memset(*time + old, 0, (*nr - old) * sizeof(**time));
	}
	(*time)[f] += ns;
}

/*
 * Where attribution puts time: gp->stacks and gp->idle at the end, or
 * gp->folded and gp->folded_idle while a run folds (gpuprof_fold),
 * whose frames are their own.  cpu_map takes a CPU frame id to st's
 * (NULL: the same ids); launch_map and waiting_map those of
 * gp->launch_stacks and gp->waiting_stacks.  Line times go by st's ids.
 */
struct sink {
	struct stacks *st;
	uint32_t *cpu_map, *launch_map, *waiting_map;
	uint64_t **line_time;
	size_t *nr_line_time;
	uint32_t root_launch, root_nearest, root_no_launch, root_no_sample;
	uint32_t root_waiting;
	uint32_t *frames; /* room for the deepest stacks (sink_open) */
};

static uint32_t sink_cpu_frame(const struct sink *k, uint32_t f)
{
	return k->cpu_map ? k->cpu_map[f] : f;
}

/* Charge ns to the innermost Python frame of CPU frames (root first). */
static void add_cpu_line_time(const struct gpuprof *gp, const struct sink *k,
			      const uint32_t *frames, size_t depth, uint64_t ns)
{
	size_t i;

	for (i = depth; i-- > 0;)
		if (is_python_frame(gp, frames[i])) {
			add_time_at(k->line_time, k->nr_line_time,
				    sink_cpu_frame(k, frames[i]), ns);
			return;
		}
}

/* The sink's thread for CPU thread tid: named as the CPU one. */
static uint32_t launch_thread(struct stacks *st, const struct stacks *cpu,
			      uint32_t tid)
{
	size_t t;

	for (t = 0; t < cpu->nr_threads; t++) {
		const struct stack_thread *th = &cpu->threads[t];

		if (th->tid == (long)tid)
			return stacks_thread(st, th->ident, th->tid, th->name);
	}
	return stacks_thread(st, 0, (long)tid, NULL);
}

/* The ids in to of from's frames (by name, file and line); freed by the caller.
 */
static uint32_t *frames_in(struct stacks *to, const struct stacks *from)
{
	uint32_t *map = xmalloc((from->nr_frames + 1) * sizeof(*map));
	size_t i;

	for (i = 0; i < from->nr_frames; i++)
		map[i] =
		    stacks_frame(to, from->frames[i].name, from->frames[i].file,
				 from->frames[i].line);
	return map;
}

/* The deepest stack attribution may write, but for its root and leaf. */
static size_t deepest(const struct gpuprof *gp, const struct stacks *cpu)
{
	const struct stacks *all[] = {cpu, &gp->launch_stacks,
				      &gp->waiting_stacks};
	size_t max = 0, i, j;

	for (j = 0; j < ARRAY_SIZE(all); j++)
		for (i = 0; i < all[j]->nr_entries; i++)
			if (all[j]->entries[i].depth > max)
				max = all[j]->entries[i].depth;
	return max;
}

/* Make k's roots, maps and room in st (cpu_map: whether to map). */
static void sink_open(struct sink *k, struct gpuprof *gp,
		      const struct stacks *cpu, struct stacks *st, int cpu_map,
		      uint64_t **line_time, size_t *nr_line_time)
{
	k->st = st;
	k->cpu_map = cpu_map ? frames_in(st, cpu) : NULL;
	k->line_time = line_time;
	k->nr_line_time = nr_line_time;
	k->root_launch = stacks_frame(st, GPU_ROOT_LAUNCH, "", 0);
	k->root_nearest = stacks_frame(st, GPU_ROOT_NEAREST, "", 0);
	k->root_no_launch = stacks_frame(st, GPU_ROOT_NO_LAUNCH, "", 0);
	k->root_no_sample = stacks_frame(st, GPU_ROOT_NO_SAMPLE, "", 0);
	k->root_waiting = stacks_frame(st, GPU_ROOT_WAITING, "", 0);
	k->launch_map = frames_in(st, &gp->launch_stacks);
	k->waiting_map = frames_in(st, &gp->waiting_stacks);
	/* A waiting thread's stack and ranges, then a launch's ranges. */
	k->frames = xmalloc((2 * deepest(gp, cpu) + GPU_NVTX_DEPTH + 2) *
			    sizeof(*k->frames));
}

static void sink_close(struct sink *k)
{
	free(k->cpu_map);
	free(k->launch_map);
	free(k->waiting_map);
	free(k->frames);
}

/*
 * The frames in k of the NVTX ranges open on a waiting thread at time t
 * (spyc's clock), outermost first (those around its backward()); how
 * many.  t is a launch's: inside the wait, where a sample's time may
 * be a moment outside it.
 */
static size_t waiting_ranges(struct gpuprof *gp, const struct sink *k, long tid,
			     uint64_t t, uint32_t *frames)
{
	const char *names[GPU_NVTX_DEPTH];
	size_t n, i;

	n = gpunvtx_path(&gp->nvtx,
			 gpunvtx_node_at(&gp->nvtx, (uint32_t)tid, t), names,
			 GPU_NVTX_DEPTH);
	for (i = 0; i < n; i++)
		frames[i] = stacks_frame(k->st, names[i], "", 0);
	return n;
}

/*
 * Put act, whose name is frame leaf of k's stacks, on the Python stack
 * of its launch, else on the launching thread's nearest sample's, else
 * on a waiting thread's (gpuprof_attribute).  The API calls, launches,
 * samples and waiting samples are sorted.
 */
static void attribute_act(struct gpuprof *gp, const struct stacks *cpu,
			  struct sink *k, const struct gpu_act *act,
			  uint32_t leaf)
{
	uint64_t corr = activity_correlation(act), start, end, ns;
	const struct gpu_api_call *api =
	    find_api(gp, corr, activity_start(act));
	const struct gpu_launch *launch = find_launch(gp, corr);
	const struct gpu_cpu_sample *s = NULL;
	const struct stack_entry *e = NULL, *ranges = NULL;
	uint32_t *frames = k->frames, thread;
	size_t depth = 0, j, python = 0;

	gpuprof_activity_times(act, &start, &end);
	ns = end - start;
	if (launch) {
		e = &gp->launch_stacks.entries[launch->entry];
		/* A launch's own stack is Python, then its NVTX ranges. */
		for (python = e->depth;
		     python > 0 && gp->launch_nvtx[e->frames[python - 1]];
		     python--)
			;
		/*
		 * Ranges only (a thread with no Python): placed as a
		 * launch without a stack is, and under them.
		 */
		if (!python) {
			ranges = e;
			e = NULL;
		}
	}
	if (e) {
		thread = launch_thread(k->st, cpu, launch->tid);
		frames[depth++] = k->root_launch;
		for (j = 0; j < e->depth; j++)
			frames[depth++] = k->launch_map[e->frames[j]];
		gp->exact++;
		/* The innermost Python frame: frames[0] is the root. */
		add_time_at(k->line_time, k->nr_line_time, frames[python], ns);
		frames[depth++] = leaf;
		stacks_add(k->st, thread, frames, depth, ns);
		return;
	}
	if (api)
		s = nearest_sample(gp, (long)api->tid,
				   gpuprof_to_monotonic(gp, api->start));
	if (s && s->entry < cpu->nr_entries)
		e = &cpu->entries[s->entry];
	/*
	 * A thread never sampled (no Python frames) that launched while a
	 * thread waited in autograd's engine: the engine's, launching that
	 * thread's backward pass.
	 */
	if (api && !s &&
	    (s = nearest_waiting(gp, gpuprof_to_monotonic(gp, api->start)))) {
		const struct stack_entry *w =
		    &gp->waiting_stacks.entries[s->entry];
		const struct stack_thread *t =
		    &gp->waiting_stacks.threads[w->thread];

		thread = stacks_thread(k->st, t->ident, t->tid, t->name);
		frames[depth++] = k->root_waiting;
		for (j = 0; j < w->depth; j++)
			frames[depth++] = k->waiting_map[w->frames[j]];
		depth += waiting_ranges(gp, k, s->tid,
					gpuprof_to_monotonic(gp, api->start),
					frames + depth);
		gp->by_waiting++;
		for (j = w->depth; j-- > 0;)
			if (w->frames[j] < gp->alloc_waiting_python &&
			    gp->waiting_python[w->frames[j]]) {
				add_time_at(k->line_time, k->nr_line_time,
					    frames[1 + j], ns);
				break;
			}
	} else if (e) {
		const struct stack_thread *t = &cpu->threads[e->thread];

		thread = stacks_thread(k->st, t->ident, t->tid, t->name);
		frames[depth++] = k->root_nearest;
		for (j = 0; j < e->depth; j++)
			frames[depth++] = sink_cpu_frame(k, e->frames[j]);
		gp->attributed++;
		add_cpu_line_time(gp, k, e->frames, e->depth, ns);
	} else if (api) {
		thread = stacks_thread(k->st, 0, (long)api->tid, NULL);
		frames[depth++] = k->root_no_sample;
		gp->no_sample++;
	} else {
		thread = stacks_thread(k->st, 0, 0, "[no launch record]");
		frames[depth++] = k->root_no_launch;
		gp->no_launch++;
	}
	for (j = 0; ranges && j < ranges->depth; j++)
		frames[depth++] = k->launch_map[ranges->frames[j]];
	frames[depth++] = leaf;
	stacks_add(k->st, thread, frames, depth, ns);
}

/* A device's busy time: its activities' union, each span with the busy
 * time before it. */
struct busy {
	uint64_t start, end, before;
};

static int cmp_busy(const void *a, const void *b)
{
	const struct busy *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* The state of device (GPU_ANY_DEVICE: of all), made if new. */
static struct gpu_device_state *device_state(struct gpuprof *gp,
					     uint32_t device)
{
	struct gpu_device_state *d;
	size_t i;

	for (i = 0; i < gp->nr_devs; i++)
		if (gp->devs[i].device == device)
			return &gp->devs[i];
	ALLOC_GROW(gp->devs, gp->nr_devs + 1, gp->alloc_devs);
	d = &gp->devs[gp->nr_devs++];
	memset(d, 0, sizeof(*d));
	d->device = device;
	d->first = UINT64_MAX;
	return d;
}

/* act's interval on spyc's clock, its end no earlier than its start. */
static void act_span(const struct gpuprof *gp, const struct gpu_act *act,
		     uint64_t *start, uint64_t *end)
{
	gpuprof_activity_times(act, start, end);
	*start = gpuprof_to_monotonic(gp, *start);
	*end = gpuprof_to_monotonic(gp, *end);
	if (*end < *start)
		*end = *start;
}

/*
 * Device's busy spans on spyc's clock, merged, by start: those folded
 * that reach past gp->idle_done and, with held, those of the activities
 * held (a fold leaves them out: they start after what it charges);
 * *out is the caller's to free.
 */
static size_t device_busy(const struct gpuprof *gp, uint32_t device, int held,
			  struct busy **out)
{
	const struct gpu_device_state *d = NULL;
	size_t i, n = 0, m = 0, rest = 0;
	uint64_t before = 0;
	struct busy *b;

	for (i = 0; i < gp->nr_devs; i++)
		if (gp->devs[i].device == device)
			d = &gp->devs[i];
	rest = d ? d->nr_rest : 0;
	b = xmalloc((gp->nr_acts + rest + 1) * sizeof(*b));
	for (i = 0; held && i < gp->nr_acts; i++) {
		if (device != GPU_ANY_DEVICE && gp->acts[i].iv.device != device)
			continue;
		act_span(gp, &gp->acts[i], &b[n].start, &b[n].end);
		n++;
	}
	for (i = 0; i < rest; i++) {
		b[n].start = d->rest[i].start;
		b[n++].end = d->rest[i].end;
	}
	if (n)
		qsort(b, n, sizeof(*b), cmp_busy);
	for (i = 0; i < n; i++) {
		if (m && b[i].start <= b[m - 1].end) {
			if (b[i].end > b[m - 1].end)
				b[m - 1].end = b[i].end;
			continue;
		}
		b[m++] = b[i];
	}
	for (i = 0; i < m; i++) {
		b[i].before = before;
		before += b[i].end - b[i].start;
	}
	*out = b;
	return m;
}

/* The busy time of spans b[0..n) before t. */
static uint64_t busy_before(const struct busy *b, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	/* The first span that starts at or after t; the one before counts. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	lo--;
	return b[lo].before + (t < b[lo].end ? t : b[lo].end) - b[lo].start;
}

/* The idle time of spans b[0..n) in [a, z). */
static uint64_t idle_in(const struct busy *b, size_t n, uint64_t a, uint64_t z)
{
	return z > a ? (z - a) - (busy_before(b, n, z) - busy_before(b, n, a))
		     : 0;
}

/* The thread that launched act (its launch's, or its API call's), or 0. */
static uint32_t launching_tid(const struct gpuprof *gp,
			      const struct gpu_act *act)
{
	const struct gpu_launch *l = find_launch(gp, activity_correlation(act));
	const struct gpu_api_call *api;

	if (l)
		return l->tid;
	api = find_api(gp, activity_correlation(act), activity_start(act));
	return api ? api->tid : 0;
}

/*
 * Note act in its device's state: when the device's work started, who
 * launched it (a thread never sampled, with no Python, has no stack to
 * charge idle time to), and with span (folding) its busy span.
 */
static void note_device_work(struct gpuprof *gp, const struct gpu_act *act,
			     int span)
{
	struct gpu_device_state *d = device_state(gp, act->iv.device);
	struct gpu_device_state *any;
	uint64_t start, end;
	uint32_t tid = launching_tid(gp, act);
	size_t k;

	act_span(gp, act, &start, &end);
	if (start < d->first)
		d->first = start;
	if (tid && nearest_sample(gp, (long)tid, gp->t0_ns)) {
		for (k = 0; k < d->nr_tids && d->tids[k] != tid; k++)
			;
		if (k == d->nr_tids) {
			ALLOC_GROW(d->tids, d->nr_tids + 1, d->alloc_tids);
			d->tids[d->nr_tids++] = tid;
		}
	}
	if (!span)
		return;
	ALLOC_GROW(d->rest, d->nr_rest + 1, d->alloc_rest);
	d->rest[d->nr_rest].start = start;
	d->rest[d->nr_rest++].end = end;
	any = device_state(gp, GPU_ANY_DEVICE);
	if (start < any->first)
		any->first = start;
	ALLOC_GROW(any->rest, any->nr_rest + 1, any->alloc_rest);
	any->rest[any->nr_rest].start = start;
	any->rest[any->nr_rest++].end = end;
	if (end > gp->last_end)
		gp->last_end = end;
}

/*
 * Sample s (of gp->samples, sorted by thread and time) stands for the
 * time [*a, *z): from halfway to its thread's previous sample to halfway
 * to its next, at most a period each way, within [t0, t1].
 */
static void sample_window(const struct gpuprof *gp, size_t s, uint64_t t0,
			  uint64_t t1, uint64_t *a, uint64_t *z)
{
	const struct gpu_cpu_sample *x = &gp->samples[s];
	uint64_t cap = gp->period_ns ? gp->period_ns : UINT64_MAX;
	uint64_t half = gp->period_ns / 2, left = half, right = half;

	if (s > 0 && gp->samples[s - 1].tid == x->tid)
		left = (x->t_ns - gp->samples[s - 1].t_ns) / 2;
	if (s + 1 < gp->nr_samples && gp->samples[s + 1].tid == x->tid)
		right = (gp->samples[s + 1].t_ns - x->t_ns) / 2;
	left = left < cap ? left : cap;
	right = right < cap ? right : cap;
	*a = x->t_ns > t0 + left ? x->t_ns - left : t0;
	*z = x->t_ns + right < t1 ? x->t_ns + right : t1;
	if (*z < *a)
		*z = *a;
}

/*
 * Charge each device's idle time from gp->idle_done (or its first work,
 * or t0_ns) to t1 to the stacks of the CPU samples of the threads that
 * launched its work (gpuprof.h), in k's stacks and idle line times;
 * with held, the busy spans of the activities held count (device_busy).
 * The samples, API calls and launches are sorted.
 */
static void charge_idle(struct gpuprof *gp, const struct stacks *cpu,
			struct sink *k, uint64_t t1, int held)
{
	uint32_t unsampled = stacks_frame(k->st, GPU_IDLE_UNSAMPLED, "", 0);
	uint32_t *frames = k->frames;
	char root_name[64];
	size_t d, s, j;

	for (d = 0; d < gp->nr_devs; d++) {
		const struct gpu_device_state *dev = &gp->devs[d];
		struct busy *b;
		size_t nb, nr_tids = dev->nr_tids;
		/*
		 * From the device's first work: before it, the program had
		 * not used it yet (imports, loading data, building the
		 * model), which is not the GPU waiting for it.
		 */
		uint64_t from = dev->first > gp->t0_ns ? dev->first : gp->t0_ns;
		uint64_t idle, charged = 0;
		uint32_t root;

		if (dev->device == GPU_ANY_DEVICE)
			continue;
		if (from < gp->idle_done)
			from = gp->idle_done;
		if (from >= t1)
			continue;
		nb = device_busy(gp, dev->device, held, &b);
		idle = idle_in(b, nb, from, t1);
		snprintf(root_name, sizeof(root_name), GPU_ROOT_IDLE,
			 dev->device);
		root = stacks_frame(k->st, root_name, "", 0);
		gp->idle_window_ns += t1 - from;
		gp->idle_ns += idle;
		for (s = 0; nr_tids && s < gp->nr_samples; s++) {
			const struct gpu_cpu_sample *x = &gp->samples[s];
			const struct stack_entry *e;
			const struct stack_thread *t;
			uint64_t a, z, ns;

			for (j = 0; j < nr_tids && (long)dev->tids[j] != x->tid;
			     j++)
				;
			if (j == nr_tids || x->entry >= cpu->nr_entries)
				continue;
			sample_window(gp, s, from, t1, &a, &z);
			ns = idle_in(b, nb, a, z) / nr_tids;
			if (!ns)
				continue;
			e = &cpu->entries[x->entry];
			t = &cpu->threads[e->thread];
			frames[0] = root;
			for (j = 0; j < e->depth; j++)
				frames[1 + j] = sink_cpu_frame(k, e->frames[j]);
			stacks_add(
			    k->st,
			    stacks_thread(k->st, t->ident, t->tid, t->name),
			    frames, e->depth + 1, ns);
			add_cpu_line_time(gp, k, e->frames, e->depth, ns);
			charged += ns;
		}
		if (idle > charged) {
			frames[0] = root;
			frames[1] = unsampled;
			stacks_add(
			    k->st,
			    stacks_thread(k->st, 0, 0, GPU_IDLE_UNSAMPLED),
			    frames, 2, idle - charged);
			gp->idle_unsampled_ns += idle - charged;
		}
		free(b);
	}
}

/* Sort what attribution looks things up in. */
/*
 * Sort base[0..n) (size bytes each) by cmp, its first *sorted already
 * in order: the rest (what came since the last sort) is sorted and
 * merged in, so that a fold costs what came since the one before.
 */
static void sort_tail(void *base, size_t n, size_t *sorted, size_t size,
		      int (*cmp)(const void *, const void *))
{
	char *a = base, *tmp, *x, *y, *end, *o;
	size_t k = *sorted <= n ? *sorted : 0;

	*sorted = n;
	/* (qsort's array may not be NULL, even with nothing in it.) */
	if (n == k)
		return;
	qsort(a + k * size, n - k, size, cmp);
	if (!k || cmp(a + (k - 1) * size, a + k * size) <= 0)
		return;
	tmp = xmalloc(n * size);
	x = a;
	y = a + k * size;
	end = a + n * size;
	o = tmp;
	while (x < a + k * size && y < end) {
		char **from = cmp(y, x) < 0 ? &y : &x;

		memcpy(o, *from, size);
		*from += size;
		o += size;
	}
	memcpy(o, x, (size_t)(a + k * size - x));
	o += a + k * size - x;
	memcpy(o, y, (size_t)(end - y));
	memcpy(a, tmp, n * size);
	free(tmp);
}

static void sort_lookups(struct gpuprof *gp)
{
	if (gp->nr_pairs)
		qsort(gp->pairs, gp->nr_pairs, sizeof(*gp->pairs), cmp_pair);
	gp->pairs_sorted = 1;
	sort_tail(gp->apis, gp->nr_apis, &gp->apis_sorted, sizeof(*gp->apis),
		  cmp_api);
	sort_tail(gp->launches, gp->nr_launches, &gp->launches_sorted,
		  sizeof(*gp->launches), cmp_launch);
	sort_tail(gp->samples, gp->nr_samples, &gp->samples_sorted,
		  sizeof(*gp->samples), cmp_sample);
	sort_tail(gp->waiting, gp->nr_waiting, &gp->waiting_sorted,
		  sizeof(*gp->waiting), cmp_sample_time);
}

/* act's leaf in gp->folded: its name, as assign_leaves names it. */
static uint32_t folded_leaf(struct gpuprof *gp, const struct gpu_act *act,
			    struct strbuf *sb)
{
	struct gpu_record tmp;
	uint32_t id;
	size_t old = gp->alloc_folded_kernel_leaf;

	if (act->type == GPU_REC_KERNEL && act->kernel < old &&
	    gp->folded_kernel_leaf[act->kernel] != UINT32_MAX)
		return gp->folded_kernel_leaf[act->kernel];
	strbuf_reset(sb);
	gpuprof_activity_name(&gp->names, act_record(gp, act, &tmp), sb);
	id = stacks_frame(&gp->folded, sb->buf, "", 0);
	if (act->type == GPU_REC_KERNEL) {
		ALLOC_GROW(gp->folded_kernel_leaf, (size_t)act->kernel + 1,
			   gp->alloc_folded_kernel_leaf);
		if (gp->alloc_folded_kernel_leaf > old)
			memset(gp->folded_kernel_leaf + old, 0xff,
			       (gp->alloc_folded_kernel_leaf - old) *
				   sizeof(*gp->folded_kernel_leaf));
		gp->folded_kernel_leaf[act->kernel] = id;
	}
	return id;
}

/* Add act (leaf: its name's frame in gp->folded) to the summary's figures. */
static void fold_figures(struct gpuprof *gp, const struct gpu_act *act,
			 uint32_t leaf)
{
	uint64_t start, end, d;
	struct gpu_row_stats *r;
	size_t old = gp->alloc_folded_rows, i;

	gpuprof_activity_times(act, &start, &end);
	d = end - start;
	gp->folded_time += d;
	if (act->type == GPU_REC_MEMCPY) {
		unsigned k = act->copy_kind;

		if (k >= ARRAY_SIZE(copy_kinds))
			k = 0;
		gp->folded_copy_bytes[k] += act->bytes;
		gp->folded_copy_time[k] += d;
		gp->folded_copy_count[k]++;
		gp->folded_copies++;
		return;
	}
	if (act->type == GPU_REC_KERNEL)
		gp->folded_kernels++;
	else
		gp->folded_memsets++;
	ALLOC_GROW(gp->folded_rows, (size_t)leaf + 1, gp->alloc_folded_rows);
	for (i = old; i < gp->alloc_folded_rows; i++) {
		memset(&gp->folded_rows[i], 0, sizeof(gp->folded_rows[i]));
		gp->folded_rows[i].min = UINT64_MAX;
	}
	r = &gp->folded_rows[leaf];
	r->calls++;
	r->total += d;
	if (d < r->min)
		r->min = d;
	if (d > r->max)
		r->max = d;
}

/*
 * Drop the folded spans that end by t, cutting those that reach past it
 * to start there; GPU_ANY_DEVICE's busy time before t is kept in
 * gp->busy_settled.
 */
static void settle_spans(struct gpuprof *gp, uint64_t t)
{
	size_t d, i, n;

	for (d = 0; d < gp->nr_devs; d++) {
		struct gpu_device_state *dev = &gp->devs[d];
		struct busy *b = NULL;
		size_t nb = 0;

		if (dev->device == GPU_ANY_DEVICE) {
			nb = device_busy(gp, GPU_ANY_DEVICE, 0, &b);
			gp->busy_settled += busy_before(b, nb, t) -
					    busy_before(b, nb, gp->idle_done);
			free(b);
		}
		for (i = n = 0; i < dev->nr_rest; i++) {
			if (dev->rest[i].end <= t)
				continue;
			dev->rest[n] = dev->rest[i];
			if (dev->rest[n].start < t)
				dev->rest[n].start = t;
			n++;
		}
		dev->nr_rest = n;
	}
}

/*
 * Drop the elements of an array (*n of them, size bytes each, sorted by
 * a 64-bit correlation id at offset off) whose id is below c.
 */
static void drop_below(void *base, size_t *n, size_t size, size_t off,
		       uint64_t c)
{
	size_t lo = 0, hi = *n;
	uint64_t id;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		memcpy(&id, (char *)base + mid * size + off, sizeof(id));
		if (id < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return;
	memmove(base, (char *)base + lo * size, (*n - lo) * size);
	*n -= lo;
}

/*
 * How far below the oldest activity held API calls and launches are
 * kept: a launch's driver call inside its runtime call has the next id,
 * and its stack is the runtime call's.
 */
#define GPU_KEEP_IDS_BELOW 1024

size_t gpuprof_fold(struct gpuprof *gp, const struct stacks *cpu)
{
	size_t keep = gp->keep ? gp->keep : GPU_KEEP_DEFAULT, fold, i;
	uint64_t settle = UINT64_MAX, oldest = UINT64_MAX;
	struct strbuf sb = STRBUF_INIT;
	struct sink k;

	/* An eighth more at a time: each fold a short pause of sampling. */
	if (gp->attributed_done || gp->nr_acts < keep + (keep + 7) / 8)
		return 0;
	fold = gp->nr_acts - keep;
	sort_lookups(gp);
	if (!gp->folded.nr_threads)
		stacks_init(&gp->folded);
	sink_open(&k, gp, cpu, &gp->folded, 1, &gp->folded_line_time,
		  &gp->nr_folded_line_time);
	for (i = 0; i < fold; i++) {
		const struct gpu_act *act = &gp->acts[i];
		uint32_t leaf = folded_leaf(gp, act, &sb);

		note_device_work(gp, act, 1);
		attribute_act(gp, cpu, &k, act, leaf);
		fold_figures(gp, act, leaf);
	}
	sink_close(&k);
	/* Idle is charged up to the oldest activity held. */
	for (i = fold; i < gp->nr_acts; i++) {
		uint64_t start, end, c = activity_correlation(&gp->acts[i]);

		act_span(gp, &gp->acts[i], &start, &end);
		if (start < settle)
			settle = start;
		if (c && c < oldest)
			oldest = c;
	}
	memmove(gp->acts, gp->acts + fold, keep * sizeof(*gp->acts));
	gp->nr_acts = keep;
	gp->nr_folded += fold;
	if (settle > gp->idle_done) {
		sink_open(&k, gp, cpu, &gp->folded_idle, 1,
			  &gp->folded_idle_line_time,
			  &gp->nr_folded_idle_line_time);
		charge_idle(gp, cpu, &k, settle, 0);
		sink_close(&k);
		settle_spans(gp, settle);
		gp->idle_done = settle;
	}
	/* API calls and launches of work folded (or none: captures). */
	if (oldest != UINT64_MAX && oldest > GPU_KEEP_IDS_BELOW) {
		oldest -= GPU_KEEP_IDS_BELOW;
		drop_below(gp->apis, &gp->nr_apis, sizeof(*gp->apis),
			   offsetof(struct gpu_api_call, correlation), oldest);
		drop_below(gp->launches, &gp->nr_launches,
			   sizeof(*gp->launches),
			   offsetof(struct gpu_launch, correlation), oldest);
		/* What is left is still in order. */
		gp->apis_sorted = gp->nr_apis;
		gp->launches_sorted = gp->nr_launches;
	}
	strbuf_release(&sb);
	return fold;
}

uint64_t gpuprof_activities(const struct gpuprof *gp)
{
	return gp->nr_acts + gp->nr_folded;
}

/*
 * gp->idle: each device's idle time from t0_ns to t1_ns by the stacks of
 * the CPU samples of the threads that launched its work (gpuprof.h),
 * with what gpuprof_fold charged before.  After attribution has sorted
 * the samples, API calls and launches.
 */
static void attribute_idle(struct gpuprof *gp, const struct stacks *cpu)
{
	uint64_t t1 = gp->t1_ns;
	uint32_t *map;
	char root_name[64];
	struct sink k;
	size_t i, d;

	if (!t1) {
		t1 = gp->last_end;
		for (i = 0; i < gp->nr_samples; i++)
			if (gp->samples[i].t_ns > t1)
				t1 = gp->samples[i].t_ns;
		for (i = 0; i < gp->nr_acts; i++) {
			uint64_t start, end;

			act_span(gp, &gp->acts[i], &start, &end);
			if (end > t1)
				t1 = end;
		}
	}
	if (t1 <= gp->t0_ns)
		return;
	for (i = 0; i < gp->nr_acts; i++)
		note_device_work(gp, &gp->acts[i], 0);
	/*
	 * The roots are frames of gp->stacks too, whose frames are all the
	 * idle stacks' (the same ids): outputs write one table of frames.
	 */
	for (d = 0; d < gp->nr_devs; d++) {
		if (gp->devs[d].device == GPU_ANY_DEVICE)
			continue;
		snprintf(root_name, sizeof(root_name), GPU_ROOT_IDLE,
			 gp->devs[d].device);
		stacks_frame(&gp->stacks, root_name, "", 0);
	}
	stacks_frame(&gp->stacks, GPU_IDLE_UNSAMPLED, "", 0);
	map = frames_in(&gp->stacks, &gp->folded_idle);
	for (i = 0; i < gp->stacks.nr_frames; i++)
		stacks_frame(&gp->idle, gp->stacks.frames[i].name,
			     gp->stacks.frames[i].file,
			     gp->stacks.frames[i].line);
	/* What gpuprof_fold charged, on the same frames. */
	stacks_merge_mapped(&gp->idle, &gp->folded_idle, map);
	for (i = 0; i < gp->nr_folded_idle_line_time; i++)
		if (gp->folded_idle_line_time[i])
			add_time_at(&gp->idle_line_time, &gp->nr_idle_line_time,
				    map[i], gp->folded_idle_line_time[i]);
	free(map);
	memset(&k, 0, sizeof(k));
	k.st = &gp->idle;
	k.line_time = &gp->idle_line_time;
	k.nr_line_time = &gp->nr_idle_line_time;
	k.frames = xmalloc((deepest(gp, cpu) + 2) * sizeof(*k.frames));
	charge_idle(gp, cpu, &k, t1, 1);
	free(k.frames);
}

const char *gpuprof_stacks_name(const struct gpuprof *gp)
{
	if (gp->exact && !gp->attributed)
		return PROFILE_GPU_STACKS_NAME " (the Python stack of each "
					       "launch)";
	if (gp->exact)
		return PROFILE_GPU_STACKS_NAME " (the Python stack of the "
					       "launch, else the nearest CPU "
					       "sample)";
	return PROFILE_GPU_STACKS_NAME " (nearest CPU sample)";
}

void gpuprof_attribute(struct gpuprof *gp, const struct stacks *cpu)
{
	struct sink k;
	uint32_t *map;
	size_t i;

	if (gp->attributed_done)
		return;
	gp->attributed_done = 1;
	sort_lookups(gp);
	/* The CPU frames first, so that their ids are the same here. */
	for (i = 0; i < cpu->nr_frames; i++)
		stacks_frame(&gp->stacks, cpu->frames[i].name,
			     cpu->frames[i].file, cpu->frames[i].line);
	sink_open(&k, gp, cpu, &gp->stacks, 0, &gp->line_time,
		  &gp->nr_line_time);
	assign_leaves(gp);
	for (i = 0; i < gp->nr_acts; i++)
		attribute_act(gp, cpu, &k, &gp->acts[i], gp->leaf[i]);
	sink_close(&k);
	/* What gpuprof_fold attributed, on the same frames. */
	map = frames_in(&gp->stacks, &gp->folded);
	stacks_merge_mapped(&gp->stacks, &gp->folded, map);
	for (i = 0; i < gp->nr_folded_line_time; i++)
		if (gp->folded_line_time[i])
			add_time_at(&gp->line_time, &gp->nr_line_time, map[i],
				    gp->folded_line_time[i]);
	gp->folded_map = map;
	attribute_idle(gp, cpu);
	/* Graph kernels by their node's making: on stacks' frames too. */
	map = frames_in(&gp->stacks, &gp->captured);
	for (i = 0; i < gp->stacks.nr_frames; i++)
		stacks_frame(&gp->capture_view, gp->stacks.frames[i].name,
			     gp->stacks.frames[i].file,
			     gp->stacks.frames[i].line);
	stacks_merge_mapped(&gp->capture_view, &gp->captured, map);
	free(map);
}

static int cmp_timeline(const void *a, const void *b, void *ctx)
{
	const struct gpuprof *gp = ctx;
	const struct gpu_act *x = &gp->acts[*(const uint32_t *)a];
	const struct gpu_act *y = &gp->acts[*(const uint32_t *)b];
	const struct gpu_interval *xi = &x->iv;
	const struct gpu_interval *yi = &y->iv;
	uint64_t x0, x1, y0, y1;

	if (xi->device != yi->device)
		return xi->device < yi->device ? -1 : 1;
	if (xi->stream != yi->stream)
		return xi->stream < yi->stream ? -1 : 1;
	gpuprof_activity_times(x, &x0, &x1);
	gpuprof_activity_times(y, &y0, &y1);
	/* On spyc's clock: CUPTI's may have stepped between them. */
	x0 = gpuprof_to_monotonic(gp, x0);
	y0 = gpuprof_to_monotonic(gp, y0);
	if (x0 != y0)
		return x0 < y0 ? -1 : 1;
	/* Ties in index order, so the result does not depend on qsort. */
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

uint32_t *gpuprof_timeline(const struct gpuprof *gp)
{
	uint32_t *order;
	size_t i;

	if (!gp->nr_acts)
		return NULL;
	order = xmalloc(gp->nr_acts * sizeof(*order));
	for (i = 0; i < gp->nr_acts; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, gp->nr_acts, sizeof(*order), cmp_timeline, (void *)gp);
	return order;
}

/* Append a duration the way nvprof does: 812ns, 12.345us, 1.234ms, 2.5s. */
static void add_duration(struct strbuf *sb, int width, double ns)
{
	char buf[32];

	if (ns < 1e3)
		snprintf(buf, sizeof(buf), "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, sizeof(buf), "%.3fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, sizeof(buf), "%.3fms", ns / 1e6);
	else
		snprintf(buf, sizeof(buf), "%.3fs", ns / 1e9);
	strbuf_addf(sb, "%*s", width, buf);
}

static void add_bytes(struct strbuf *sb, double bytes)
{
	if (bytes < 1024)
		strbuf_addf(sb, "%.0f B", bytes);
	else if (bytes < 1024 * 1024)
		strbuf_addf(sb, "%.1f KiB", bytes / 1024);
	else if (bytes < 1024.0 * 1024 * 1024)
		strbuf_addf(sb, "%.1f MiB", bytes / (1024 * 1024));
	else
		strbuf_addf(sb, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
}

/* One row of the summary: every activity with one name. */
struct summary_row {
	uint32_t leaf;
	uint64_t calls, total, min, max;
};

static int cmp_row(const void *a, const void *b)
{
	const struct summary_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->leaf < y->leaf ? -1 : x->leaf > y->leaf;
}

/*
 * The time any device was busy, from the first activity's start (*first)
 * to the last one's end (*last), on spyc's clock.
 */
static uint64_t busy_time(const struct gpuprof *gp, uint64_t *first,
			  uint64_t *last)
{
	struct busy *b;
	size_t n = device_busy(gp, GPU_ANY_DEVICE, 1, &b), d;
	uint64_t busy = n ? b[n - 1].before + b[n - 1].end - b[n - 1].start : 0;

	*first = n ? b[0].start : UINT64_MAX;
	*last = n ? b[n - 1].end : 0;
	/* What gpuprof_fold settled, and its first and last work. */
	busy = gp->busy_settled + busy - busy_before(b, n, gp->idle_done);
	for (d = 0; d < gp->nr_devs; d++)
		if (gp->devs[d].device == GPU_ANY_DEVICE &&
		    gp->devs[d].first < *first)
			*first = gp->devs[d].first;
	if (gp->last_end > *last)
		*last = gp->last_end;
	if (*first == UINT64_MAX)
		*first = 0;
	free(b);
	return busy;
}

static int cmp_line(const void *a, const void *b, void *ctx)
{
	const uint64_t *t = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (t[x] != t[y])
		return t[x] > t[y] ? -1 : 1;
	return x < y ? -1 : 1;
}

/* The Python lines whose launches took the most GPU time, most first. */
/*
 * The lines of time[0..nr) (by frame id of frames, CPU ones first), the
 * most first, as shares of all_time, under the line header.
 */
static void add_line_rows(const uint64_t *time, size_t nr,
			  const struct stacks *frames, const char *header,
			  size_t max_rows, uint64_t all_time, struct strbuf *sb)
{
	uint32_t *order = xmalloc((nr ? nr : 1) * sizeof(*order));
	size_t n = 0, i;

	for (i = 0; i < nr; i++)
		if (time[i])
			order[n++] = (uint32_t)i;
	if (n) {
		qsort_r(order, n, sizeof(*order), cmp_line, (void *)time);
		strbuf_addf(sb, "  %s:\n", header);
	}
	for (i = 0; i < n && i < max_rows; i++) {
		const struct stack_frame *f = &frames->frames[order[i]];
		uint64_t t = time[order[i]];

		strbuf_addf(sb, "  %6.2f%% ",
			    all_time ? 100.0 * (double)t / (double)all_time
				     : 0.0);
		add_duration(sb, 11, (double)t);
		if (f->file && *f->file)
			strbuf_addf(sb, "  %s (%s:%d)\n", f->name, f->file,
				    f->line);
		else
			strbuf_addf(sb, "  %s\n", f->name);
	}
	if (n > max_rows)
		strbuf_addf(sb, "  (%zu more)\n", n - max_rows);
	free(order);
}

/*
 * The GPU time under each NVTX range (the ranges open around the
 * launches, as frames of gp->stacks show them), the most first: a
 * range's time is that of everything launched inside it.
 */
static void add_nvtx_rows(const struct gpuprof *gp, size_t max_rows,
			  uint64_t all_time, struct strbuf *sb)
{
	const struct stacks *st = &gp->stacks;
	uint64_t *time, inside = 0;
	uint32_t *seen;
	size_t i, j;

	if (gp->nvtx_other[0])
		strbuf_addf(sb,
			    "  NVTX: not recorded: NVTX_INJECTION64_PATH "
			    "names another tool (%s)\n",
			    gp->nvtx_other);
	if (gp->nvtx_state == GPU_NVTX_REFUSED)
		strbuf_addstr(sb, "  NVTX: the program's NVTX gave spyc no "
				  "function table: no ranges recorded\n");
	if (!gp->nvtx.pushed)
		return;
	time = xcalloc(st->nr_frames + 1, sizeof(*time));
	seen = xcalloc(st->nr_frames + 1, sizeof(*seen));
	for (i = 0; i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];
		int any = 0;

		for (j = 0; j < e->depth; j++) {
			uint32_t f = e->frames[j];

			if (seen[f] == i + 1 ||
			    !gpunvtx_frame(st->frames[f].name))
				continue;
			/* A range open twice around a launch counts once. */
			seen[f] = (uint32_t)i + 1;
			time[f] += e->count;
			any = 1;
		}
		if (any)
			inside += e->count;
	}
	strbuf_addf(sb,
		    "  NVTX ranges: %" PRIu64
		    " pushed; %.1f%% of the GPU time was launched inside one\n",
		    gp->nvtx.pushed,
		    all_time ? 100.0 * (double)inside / (double)all_time : 0.0);
	add_line_rows(time, st->nr_frames, st,
		      "NVTX ranges by the GPU time launched inside them",
		      max_rows, all_time, sb);
	free(seen);
	free(time);
}

void gpuprof_summary(const struct gpuprof *gp, size_t max_rows,
		     struct strbuf *sb)
{
	struct summary_row *rows;
	uint64_t copy_bytes[ARRAY_SIZE(copy_kinds)] = {0};
	uint64_t copy_time[ARRAY_SIZE(copy_kinds)] = {0};
	uint64_t copies[ARRAY_SIZE(copy_kinds)] = {0};
	uint64_t all_time = 0, kernels = 0, nr_copies = 0, memsets = 0;
	uint64_t first, last, busy;
	size_t nr_rows = 0, i, *row_of;
	int any_copy = 0;

	if (!gpuprof_activities(gp) || !gp->attributed_done)
		return;
	row_of = xmalloc(gp->stacks.nr_frames * sizeof(*row_of));
	for (i = 0; i < gp->stacks.nr_frames; i++)
		row_of[i] = SIZE_MAX;
	rows = xcalloc(gp->nr_acts + gp->folded.nr_frames + 1, sizeof(*rows));
	/* The activities folded away first: their figures, by leaf. */
	for (i = 0; i < gp->alloc_folded_rows && i < gp->folded.nr_frames;
	     i++) {
		const struct gpu_row_stats *f = &gp->folded_rows[i];
		uint32_t leaf = gp->folded_map[i];
		struct summary_row *r;

		if (!f->calls)
			continue;
		if (row_of[leaf] == SIZE_MAX) {
			row_of[leaf] = nr_rows;
			rows[nr_rows].leaf = leaf;
			rows[nr_rows].min = UINT64_MAX;
			nr_rows++;
		}
		r = &rows[row_of[leaf]];
		r->calls += f->calls;
		r->total += f->total;
		if (f->min < r->min)
			r->min = f->min;
		if (f->max > r->max)
			r->max = f->max;
	}
	all_time = gp->folded_time;
	kernels = gp->folded_kernels;
	memsets = gp->folded_memsets;
	nr_copies = gp->folded_copies;
	for (i = 0; i < ARRAY_SIZE(copy_kinds); i++) {
		copy_bytes[i] = gp->folded_copy_bytes[i];
		copy_time[i] = gp->folded_copy_time[i];
		copies[i] = gp->folded_copy_count[i];
	}
	for (i = 0; i < gp->nr_acts; i++) {
		const struct gpu_act *act = &gp->acts[i];
		uint64_t start, end, d;
		struct summary_row *r;

		gpuprof_activity_times(act, &start, &end);
		d = end - start;
		all_time += d;
		if (act->type == GPU_REC_MEMCPY) {
			unsigned k = act->copy_kind;

			if (k >= ARRAY_SIZE(copy_kinds))
				k = 0;
			copy_bytes[k] += act->bytes;
			copy_time[k] += d;
			copies[k]++;
			nr_copies++;
			continue;
		}
		if (act->type == GPU_REC_KERNEL)
			kernels++;
		else
			memsets++;
		if (row_of[gp->leaf[i]] == SIZE_MAX) {
			row_of[gp->leaf[i]] = nr_rows;
			rows[nr_rows].leaf = gp->leaf[i];
			rows[nr_rows].min = UINT64_MAX;
			nr_rows++;
		}
		r = &rows[row_of[gp->leaf[i]]];
		r->calls++;
		r->total += d;
		if (d < r->min)
			r->min = d;
		if (d > r->max)
			r->max = d;
	}
	qsort(rows, nr_rows, sizeof(*rows), cmp_row);

	strbuf_addf(sb,
		    "spyc: GPU activities (CUPTI): %" PRIu64
		    " kernels, %" PRIu64 " copies, %" PRIu64
		    " memsets, %" PRIu64 " records lost\n",
		    kernels, nr_copies, memsets, gp->lost);
	if (nr_rows)
		strbuf_addf(sb, "  %7s %11s %7s %11s %11s %11s  %s\n",
			    "Time(%)", "Total", "Calls", "Avg", "Min", "Max",
			    "Name");
	for (i = 0; i < nr_rows && i < max_rows; i++) {
		const struct summary_row *r = &rows[i];

		strbuf_addf(sb, "  %6.2f%% ",
			    all_time
				? 100.0 * (double)r->total / (double)all_time
				: 0.0);
		add_duration(sb, 11, (double)r->total);
		strbuf_addf(sb, " %7" PRIu64 " ", r->calls);
		add_duration(sb, 11, (double)r->total / (double)r->calls);
		strbuf_addch(sb, ' ');
		add_duration(sb, 11, (double)r->min);
		strbuf_addch(sb, ' ');
		add_duration(sb, 11, (double)r->max);
		strbuf_addf(sb, "  %s\n", gp->stacks.frames[r->leaf].name);
	}
	if (nr_rows > max_rows)
		strbuf_addf(sb, "  (%zu more)\n", nr_rows - max_rows);
	for (i = 0; i < ARRAY_SIZE(copy_kinds); i++) {
		if (!copies[i])
			continue;
		strbuf_addstr(sb, any_copy ? "; " : "  memcpy: ");
		any_copy = 1;
		strbuf_addf(sb, "%s ", copy_kinds[i]);
		add_bytes(sb, (double)copy_bytes[i]);
		strbuf_addf(sb, " in %" PRIu64 " copies, ", copies[i]);
		add_duration(sb, 0, (double)copy_time[i]);
		if (copy_time[i])
			strbuf_addf(sb, " (%.2f GB/s)",
				    (double)copy_bytes[i] /
					(double)copy_time[i]);
	}
	if (any_copy)
		strbuf_addch(sb, '\n');
	busy = busy_time(gp, &first, &last);
	strbuf_addstr(sb, "  GPU busy ");
	add_duration(sb, 0, (double)busy);
	strbuf_addstr(sb, " of ");
	add_duration(sb, 0, (double)(last - first));
	strbuf_addf(sb, " from the first activity to the last (idle %.1f%%)\n",
		    last > first
			? 100.0 - 100.0 * (double)busy / (double)(last - first)
			: 0.0);
	if (!gpuprof_demangles())
		strbuf_addstr(sb, "  names: C++ names mangled (spyc was built "
				  "without a demangler)\n");
	if (gp->syncs) {
		strbuf_addf(sb, "  synchronizations: %" PRIu64 ", ", gp->syncs);
		add_duration(sb, 0, (double)gp->sync_time);
		strbuf_addstr(sb, " waited\n");
	}
	if (gp->zero_time || gp->cupti_dropped || gp->bad_buffers)
		strbuf_addf(sb,
			    "  records dropped: %" PRIu64
			    " with no timestamps (CUPTI gave 0), %" PRIu64
			    " by CUPTI (no buffer space), %" PRIu64
			    " CUPTI buffers cut short by an invalid record\n",
			    gp->zero_time, gp->cupti_dropped, gp->bad_buffers);
	add_line_rows(gp->line_time, gp->nr_line_time, &gp->stacks,
		      "Python lines by the GPU time they launched", max_rows,
		      all_time, sb);
	add_nvtx_rows(gp, max_rows, all_time, sb);
	if (gp->idle_window_ns) {
		strbuf_addf(sb, "  GPU idle %.1f%% of the ",
			    100.0 * (double)gp->idle_ns /
				(double)gp->idle_window_ns);
		add_duration(sb, 0, (double)gp->idle_window_ns);
		strbuf_addstr(sb, " sampled from its first work (");
		add_duration(sb, 0, (double)gp->idle_ns);
		strbuf_addstr(sb, ")");
		if (gp->idle_unsampled_ns) {
			strbuf_addstr(sb, ", ");
			add_duration(sb, 0, (double)gp->idle_unsampled_ns);
			strbuf_addstr(sb, " of it while no launching thread "
					  "was sampled");
		}
		strbuf_addch(sb, '\n');
		add_line_rows(gp->idle_line_time, gp->nr_idle_line_time,
			      &gp->idle,
			      "Python lines the launching threads ran while "
			      "the GPU was idle",
			      max_rows, gp->idle_ns, sb);
	}
	if (gp->launch_off[0])
		strbuf_addf(sb,
			    "  launch stacks: off (%s): by the nearest CPU "
			    "sample instead\n",
			    gp->launch_off);
	if (gp->graph_kernels) {
		strbuf_addf(sb,
			    "  CUDA graphs: %" PRIu64
			    " kernels replayed from graphs (",
			    gp->graph_kernels);
		add_duration(sb, 0, (double)gp->graph_ns);
		strbuf_addf(sb,
			    "), %" PRIu64
			    " of them on the stack that made their node as "
			    "well (\"" PROFILE_GPU_CAPTURE_NAME "\")",
			    gp->graph_kernels_placed);
		if (gp->graph_node_unknown)
			strbuf_addf(sb,
				    "; %" PRIu64 " from nodes made before spyc "
				    "was there",
				    gp->graph_node_unknown);
		strbuf_addch(sb, '\n');
	}
	if (gp->captured_launches)
		strbuf_addf(sb,
			    "  launch stacks: %" PRIu64
			    " launches captured into CUDA graphs (stream "
			    "capture) queued no work: no stack kept; a graph's "
			    "kernels go on the stack that launched the graph\n",
			    gp->captured_launches);
	if (gp->launch_unnamed)
		strbuf_addf(sb,
			    "  launch stacks: %" PRIu64
			    " could not be named (their code could not be "
			    "read)\n",
			    gp->launch_unnamed);
	if (gp->nr_folded)
		strbuf_addf(sb,
			    "  timeline: the newest %zu of %" PRIu64
			    " activities (--gpu-timeline); the profile and "
			    "these figures have all\n",
			    gp->nr_acts, gpuprof_activities(gp));
	strbuf_addf(sb,
		    "  attribution: %" PRIu64 " activities: %" PRIu64
		    " by the Python stack of their launch, %" PRIu64
		    " by the launching thread's nearest CPU sample, %" PRIu64
		    " by the stack of the thread waiting in autograd's engine"
		    " (a launching thread with no Python), %" PRIu64
		    " with no launch record, %" PRIu64
		    " with no sample of the launching thread\n",
		    gpuprof_activities(gp), gp->exact, gp->attributed,
		    gp->by_waiting, gp->no_launch, gp->no_sample);
	if (gp->clock.known)
		strbuf_addf(
		    sb,
		    "  clock: CLOCK_MONOTONIC = CUPTI %+" PRId64 " ns (%" PRIu64
		    " pairs, drift %" PRId64 " ns; CUPTI on %s)\n",
		    gp->clock.offset_ns, gp->clock.pairs, gp->clock.drift_ns,
		    gp->monotonic_clock
			? "CLOCK_MONOTONIC, by the agent's timestamp "
			  "callback"
			: "its own clock");
	else
		strbuf_addstr(sb, "  clock: no alignment pair from the agent; "
				  "CUPTI times used as they are\n");
	free(rows);
	free(row_of);
}
