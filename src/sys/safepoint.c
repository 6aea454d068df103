/* SPDX-License-Identifier: MIT */
/*
 * Whether a stopped thread may be made to call dlopen: not while it runs
 * (or is called from) the dynamic loader, the allocator, or the other
 * libc functions that hold the locks dlopen takes.
 */
#include "sys/safepoint.h"

#include <errno.h>
#include <libunwind-ptrace.h>
#include <stdlib.h>
#include <string.h>

#include "sys/remotesym.h"
#include "util.h"

/* Deepest native stack unwound. */
#define UNWIND_MAX_DEPTH 1024
/* How much live stack is searched for return addresses. */
#define STACK_SCAN_MAX (8u << 20)
#define STACK_CHUNK (64u << 10)
/*
 * Below rsp a hijacked thread needs room for the red zone, spyc's
 * scratch data, and dlopen with the library's constructors; a thread on
 * a small stack (a signal handler's sigaltstack) is not used.
 */
#define STACK_ROOM_MIN (128u << 10)

/*
 * libc functions that hold a lock dlopen also takes (the allocator's
 * arenas, the loader's lock, the thread-stack list) or that run the
 * loader: a thread inside one of them must not call dlopen.
 */
static const char *const libc_unsafe[] = {
    "malloc",	     "free",	      "calloc",	      "realloc",
    "reallocarray",  "memalign",      "posix_memalign", "aligned_alloc",
    "valloc",	     "pvalloc",	      "malloc_trim",  "malloc_usable_size",
    "mallinfo",	     "mallinfo2",     "malloc_stats", "malloc_info",
    "mallopt",	     "__libc_malloc", "__libc_free",  "__libc_calloc",
    "__libc_realloc", "__libc_memalign", "cfree",      "fork",
    "_Fork",	     "__libc_fork",   "vfork",	      "pthread_create",
    "pthread_exit",  "dlopen",	      "dlmopen",      "dlclose",
    "dlsym",	     "dlvsym",	      "dladdr",	      "dladdr1",
    "dlinfo",	     "dlerror",	      "dl_iterate_phdr",
    "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlclose",
    "_dl_find_object",
};

static void add_range(struct safepoint *sp, uint64_t start, uint64_t end,
		      const char *what)
{
	if (end <= start)
		return;
	ALLOC_GROW(sp->ranges, sp->nr + 1, sp->alloc);
	sp->ranges[sp->nr].start = start;
	sp->ranges[sp->nr].end = end;
	sp->ranges[sp->nr].what = what;
	sp->nr++;
}

static int by_start(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Whether path's base name looks like an allocator library. */
static int is_allocator(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strstr(base, "malloc") != NULL; /* jemalloc, tcmalloc, ... */
}

int safepoint_init(struct safepoint *sp, pid_t pid,
		   const struct proc_maps *maps)
{
	static const char *const libcs[] = {"libc", "libpthread"};
	const char *path;
	size_t i, j;
	int loader = 0;

	memset(sp, 0, sizeof(*sp));
	sp->pid = pid;
	for (i = 0; i < maps->nr; i++) {
		const struct proc_map *m = &maps->maps[i];
		const char *base;

		if (!m->path || m->path[0] != '/' || m->perms[2] != 'x')
			continue;
		base = strrchr(m->path, '/') + 1;
		if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-2.", 5) ||
		    !strncmp(base, "ld64.so", 7)) {
			add_range(sp, m->start, m->end,
				  "the dynamic loader");
			loader = 1;
		} else if (!strncmp(base, "libdl.", 6) ||
			   !strncmp(base, "libdl-", 6)) {
			add_range(sp, m->start, m->end, "libdl");
		} else if (is_allocator(m->path)) {
			add_range(sp, m->start, m->end,
				  "an allocator library");
		}
	}
	for (i = 0; i < ARRAY_SIZE(libcs); i++) {
		path = remotesym_library(maps, libcs[i]);
		if (!path)
			continue;
		for (j = 0; j < ARRAY_SIZE(libc_unsafe); j++) {
			uint64_t addr, size;

			if (!remotesym_lookup(pid, maps, path, libc_unsafe[j],
					      &addr, &size))
				add_range(sp, addr, addr + (size ? size : 1),
					  libc_unsafe[j]);
		}
	}
	if (sp->nr)
		qsort(sp->ranges, sp->nr, sizeof(*sp->ranges), by_start);
	sp->as = unw_create_addr_space(&_UPT_accessors, 0);
	if (sp->as)
		unw_set_caching_policy(sp->as, UNW_CACHE_GLOBAL);
	return loader ? 0 : -ENOENT;
}

void safepoint_release(struct safepoint *sp)
{
	if (sp->as)
		unw_destroy_addr_space(sp->as);
	free(sp->ranges);
	memset(sp, 0, sizeof(*sp));
}

/* The range holding addr, or NULL.  Ranges never overlap: each is a
 * whole library or a function of a library not taken whole. */
static const struct code_range *find_range(const struct safepoint *sp,
					   uint64_t addr)
{
	size_t lo = 0, hi = sp->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < sp->ranges[mid].start)
			hi = mid;
		else if (addr >= sp->ranges[mid].end)
			lo = mid + 1;
		else
			return &sp->ranges[mid];
	}
	return NULL;
}

/* The ModRM byte's reg field: /2 marks FF as a near call. */
static int is_call_modrm(unsigned char modrm, int mod)
{
	return ((modrm >> 3) & 7) == 2 && (modrm >> 6) == mod;
}

int follows_call(const unsigned char code[8])
{
	/* call rel32: E8 xx xx xx xx */
	if (code[3] == 0xe8)
		return 1;
	/* call *%reg: FF D0+r (with an optional REX prefix before it) */
	if (code[6] == 0xff && is_call_modrm(code[7], 3))
		return 1;
	/* call *disp8(%reg): FF 50+r d8 */
	if (code[5] == 0xff && is_call_modrm(code[6], 1) &&
	    (code[6] & 7) != 4)
		return 1;
	/* call *disp8(%reg,%idx): FF 54 sib d8 */
	if (code[4] == 0xff && is_call_modrm(code[5], 1) && (code[5] & 7) == 4)
		return 1;
	/* call *(%reg): FF 10+r (not rsp, rbp) */
	if (code[6] == 0xff && is_call_modrm(code[7], 0) &&
	    (code[7] & 7) != 4 && (code[7] & 7) != 5)
		return 1;
	/* call *(%reg,%idx): FF 14 sib */
	if (code[5] == 0xff && is_call_modrm(code[6], 0) && (code[6] & 7) == 4)
		return 1;
	/* call *disp32(%reg) FF 90+r d32, or *disp32(%rip) FF 15 d32 */
	if (code[2] == 0xff &&
	    (is_call_modrm(code[3], 2) ||
	     (is_call_modrm(code[3], 0) && (code[3] & 7) == 5)) &&
	    (code[3] & 7) != 4)
		return 1;
	/* call *disp32(%reg,%idx): FF 94 sib d32 */
	if (code[1] == 0xff && is_call_modrm(code[2], 2) && (code[2] & 7) == 4)
		return 1;
	return 0;
}

/* Whether the word w, found on the stack, returns into unsafe code. */
static const char *returns_into(const struct safepoint *sp, uint64_t w)
{
	const struct code_range *r = find_range(sp, w);
	unsigned char code[8];

	/* A return address is past a call: never a function's first byte. */
	if (!r || w == r->start || w < 8)
		return NULL;
	if (proc_read(sp->pid, w - 8, code, sizeof(code)))
		return NULL;
	return follows_call(code) ? r->what : NULL;
}

/* The mapping holding rsp, or NULL. */
static const struct proc_map *stack_mapping(const struct proc_maps *maps,
					    uint64_t rsp)
{
	size_t i;

	for (i = 0; i < maps->nr; i++)
		if (rsp >= maps->maps[i].start && rsp < maps->maps[i].end)
			return &maps->maps[i];
	return NULL;
}

/* Whether there is room below rsp for dlopen: NULL if so, else why not. */
static const char *room_check(const struct proc_maps *maps, uint64_t rsp)
{
	const struct proc_map *stack = stack_mapping(maps, rsp);

	/* The main thread's [stack] grows on demand: its mapping may be
	 * small yet have room. */
	if (!stack || (rsp - stack->start < STACK_ROOM_MIN &&
		       !(stack->path && !strcmp(stack->path, "[stack]"))))
		return "a small stack (a signal handler's?)";
	return NULL;
}

/*
 * Walk tid's native stack with libunwind.  Returns 1 with *why set (NULL
 * when no frame is in unsafe code) if the walk got past the first frame,
 * else 0: the stack could not be unwound.
 */
static int unwind_check(const struct safepoint *sp, pid_t tid,
			const char **why)
{
	unw_cursor_t cursor;
	void *upt;
	int depth = 0, step = 1;

	*why = NULL;
	if (!sp->as || !(upt = _UPT_create(tid)))
		return 0;
	if (unw_init_remote(&cursor, sp->as, upt) == 0) {
		do {
			unw_word_t ip;
			const struct code_range *r;

			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || !ip)
				break;
			/* A caller's ip is a return address: look before it. */
			r = find_range(sp, depth ? ip - 1 : ip);
			if (r) {
				*why = r->what;
				break;
			}
			depth++;
		} while (depth < UNWIND_MAX_DEPTH &&
			 (step = unw_step(&cursor)) > 0);
	}
	_UPT_destroy(upt);
	/* Only a walk that failed at once says nothing. */
	return *why || depth > 1 || step == 0;
}

/* The conservative check: any return address into unsafe code. */
static const char *scan_stack(const struct safepoint *sp,
			      const struct proc_maps *maps, uint64_t rsp)
{
	const struct proc_map *stack = stack_mapping(maps, rsp);
	uint64_t *buf, at, end;
	const char *why = NULL;
	size_t i;

	if (!stack)
		return "a stack that cannot be read";
	end = stack->end;
	if (end - rsp > STACK_SCAN_MAX)
		end = rsp + STACK_SCAN_MAX;
	buf = xmalloc(STACK_CHUNK);
	for (at = rsp & ~7ULL; at < end && !why; at += STACK_CHUNK) {
		size_t len = end - at < STACK_CHUNK ? end - at : STACK_CHUNK;

		if (proc_read(sp->pid, at, buf, len)) {
			why = "a stack that cannot be read";
			break;
		}
		for (i = 0; i < len / 8 && !why; i++)
			why = returns_into(sp, buf[i]);
	}
	free(buf);
	return why;
}

const char *safepoint_check(const struct safepoint *sp,
			    const struct proc_maps *maps, pid_t tid,
			    uint64_t ip, uint64_t rsp)
{
	const struct code_range *r = find_range(sp, ip);
	const char *why;

	if (r)
		return r->what;
	why = room_check(maps, rsp);
	if (why)
		return why;
	/*
	 * Unwinding sees only the live frames; a scan of the stack would
	 * also see the stale return addresses that big frames (the
	 * interpreter's) keep in their unused slots, and refuse too often.
	 * It is the fallback for a stack that cannot be unwound.
	 */
	if (unwind_check(sp, tid, &why))
		return why;
	return scan_stack(sp, maps, rsp);
}
