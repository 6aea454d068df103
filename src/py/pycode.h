/* SPDX-License-Identifier: MIT */
/* Code objects of the target: a cache by address, line tables, and strings. */
#ifndef SPYC_PYCODE_H
#define SPYC_PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "py/pyruntime.h"
#include "util.h"

/* How a version maps bytecode offsets to lines. */
enum linetable_kind {
	LINETABLE_LNOTAB,    /* co_lnotab, 3.6 to 3.9 */
	LINETABLE_310,	     /* co_linetable, 3.10 */
	LINETABLE_LOCATIONS, /* location table, 3.11+ */
};

/* A line of a code object, with a number a user (record) attaches. */
struct pycode_line {
	int line;
	uint32_t id;
};

/*
 * co_flags of code that runs in a generator, coroutine or async
 * generator frame (CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE,
 * CO_ASYNC_GENERATOR in CPython's Include/cpython/code.h, the same in
 * every version): such a frame is never a thread's first.
 */
#define PYCODE_SUSPENDABLE (0x20 | 0x80 | 0x100 | 0x200)

/* A decoded code object.  Owned by its cache. */
struct pycode {
	uint64_t addr;
	uint64_t name_ptr, filename_ptr, linetable_ptr; /* to validate */
	int firstlineno;
	long framesize;	 /* words on the data stack (3.11+), 0 if unknown */
	long code_bytes; /* of its bytecode (3.11+), 0 if unknown */
	int flags;	 /* co_flags */
	int placeholder; /* "[N frames not read]": addr is N, no file */
	int hidden;	 /* the interpreter's, not the program's: see pycode.c */
	char *name;	 /* qualified name on 3.11+ */
	char *filename;
	unsigned char *linetable;
	size_t linetable_len;
	long last_addrq; /* memo of the last lookup */
	int last_line;
	struct pycode_line *lines;
	size_t nr_lines, alloc_lines;
};

struct pycode_cache {
	pid_t pid;
	const struct py_offsets *off;
	enum linetable_kind kind;
	uint64_t code_type; /* address of PyCode_Type once known */
	size_t header_len;  /* bytes of a code object to read to validate */
	int refcnt_at_0;    /* a live object's ob_refcnt is its first word */
	struct pycode **slots;
	size_t size, count;
	struct pycode **placeholders; /* see pycode_placeholder() */
	size_t nr_placeholders, alloc_placeholders;
	/* Replaced or evicted, still pointed at by the current sample. */
	struct pycode **retired;
	size_t nr_retired, alloc_retired;
};

void pycode_cache_init(struct pycode_cache *cache, const struct pyruntime *rt);
/* Free every entry and the table. */
void pycode_cache_release(struct pycode_cache *cache);

/*
 * Free the code objects that lookups replaced or evicted since the last
 * call.  Pointers from pycode_lookup() and pycode_placeholder() stay
 * valid until then: call it only when none is in use (py_sampler_sample
 * does, as it starts a sample).
 */
void pycode_cache_collect(struct pycode_cache *cache);

/*
 * The cached code object at addr, validated against header (its first
 * cache->header_len bytes, as just read from the target), decoding its
 * name, file name and line table on a miss or a change.  Returns NULL
 * if addr does not hold a readable code object (a torn read).
 */
struct pycode *pycode_lookup(struct pycode_cache *cache, uint64_t addr,
			     const unsigned char *header);

/*
 * The cached code object at addr as last validated, or, if the cache
 * has none there, the code object read now (pycode_lookup); NULL if
 * addr does not hold one.  No read once the code is known.
 */
struct pycode *pycode_known(struct pycode_cache *cache, uint64_t addr);

/*
 * The cached code object at addr as last validated, or NULL: no read,
 * so it may be out of date.  For checks that may only reject.
 */
struct pycode *pycode_peek(struct pycode_cache *cache, uint64_t addr);

/*
 * 3.11+: the cached code object whose bytecode holds the instruction at
 * address instr, or NULL: no read, a scan of the cache.
 */
struct pycode *pycode_find_instr(struct pycode_cache *cache, uint64_t instr);

/*
 * Words on the data stack (3.11+) of a frame of the code object whose
 * first cache->header_len bytes are header, or 0 if unknown.  Pure.
 */
long pycode_framesize(const struct pycode_cache *cache,
		      const unsigned char *header);

/*
 * A stand-in code object named "[N frames not read]" (no file, line 0)
 * for the outermost frames of a stack cut at the depth limit.  Owned by
 * the cache, like the others.
 */
struct pycode *pycode_placeholder(struct pycode_cache *cache, size_t omitted);

/*
 * A stand-in code object named name (no file, line 0, no cache), such as
 * the "<GC>" frame of a thread that runs the cycle collector.  Freed by
 * pycode_stand_in_free().
 */
struct pycode *pycode_stand_in(const char *name);
void pycode_stand_in_free(struct pycode *code);

/*
 * The line executing at byte offset addrq of the code's bytecode, or
 * firstlineno when the table says nothing.  Memoised per code object.
 */
int pycode_line(struct pycode_cache *cache, struct pycode *code, long addrq);

/*
 * Decode one line table.  addrq is a byte offset into the bytecode.
 * Returns the line, or firstlineno if none covers addrq.  Pure.
 */
int linetable_addr2line(enum linetable_kind kind, const unsigned char *table,
			size_t len, int firstlineno, long addrq);

/*
 * Append length characters of kind bytes each (1: Latin-1, 2: UCS-2,
 * 4: UCS-4) to out as UTF-8.  Invalid code points become U+FFFD.
 * Returns 0, or -1 for an unknown kind.  Pure.
 */
int unicode_to_utf8(struct strbuf *out, int kind, const void *data,
		    size_t length);

/*
 * Read the str object at addr of pid into out as UTF-8.  Returns 0, or
 * a negative errno (-EINVAL for something that is not a sane string).
 */
int pystring_read(pid_t pid, const struct py_offsets *off, uint64_t addr,
		  struct strbuf *out);
/*
 * pystring_read twice: the copies must agree (-EAGAIN if not, out left
 * empty).  For a name kept for long (a code object's, a thread's, a
 * task's), which a read gone wrong would give for as long.
 */
int pystring_read_confirmed(pid_t pid, const struct py_offsets *off,
			    uint64_t addr, struct strbuf *out);

#endif
