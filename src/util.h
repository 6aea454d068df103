/* SPDX-License-Identifier: MIT */
/* Small helpers every subsystem uses: aborting allocators, error reporting,
 * strbuf. */
#ifndef SPYC_UTIL_H
#define SPYC_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Allocators that abort with a message on out-of-memory: never return NULL. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/*
 * Grow *ptr (an array of *alloc elements of elem_size bytes) so that it
 * holds at least need elements.  Doubles, so appends are amortised O(1).
 */
void grow_array(void **ptr, size_t *alloc, size_t need, size_t elem_size);
#define ALLOC_GROW(ptr, need, alloc)                                           \
	grow_array((void **)&(ptr), &(alloc), (need), sizeof(*(ptr)))

/* Print "spyc: <message>" to stderr and return -1.  For library code. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "spyc: warning: <message>" to stderr. */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "spyc: <message>" to stderr and exit(2).  For commands only. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* When set, error() and warning() print nothing (used by tests/benches). */
extern int quiet;

/* A growable NUL-terminated string.  buf is never NULL after init. */
struct strbuf {
	size_t len;
	size_t alloc;
	char *buf;
};
#define STRBUF_INIT                                                            \
	{                                                                      \
		0, 0, strbuf_empty                                             \
	}
extern char strbuf_empty[];

void strbuf_init(struct strbuf *sb, size_t hint);
/* Free the buffer and reset sb to empty. */
void strbuf_release(struct strbuf *sb);
/*
 * Copy the UTF-8 string src (NULL: empty) into dst of size bytes, cut
 * short if need be at a character boundary, and NUL-terminated.
 */
void utf8_truncate(char *dst, size_t size, const char *src);

/* Return the buffer (caller frees) and reset sb to empty. */
char *strbuf_detach(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* FNV-1a over len bytes, continuing from h (start with FNV_INIT). */
#define FNV_INIT 0xcbf29ce484222325ULL
uint64_t fnv1a(uint64_t h, const void *data, size_t len);

/* The 8-byte word at byte offset at of buf (a copy of target memory). */
static inline uint64_t load_u64(const void *buf, long at)
{
	uint64_t v;

	__builtin_memcpy(&v, (const char *)buf + at, sizeof(v));
	return v;
}

/* The 4-byte word at byte offset at of buf (a copy of target memory). */
static inline uint32_t load_u32(const void *buf, long at)
{
	uint32_t v;

	__builtin_memcpy(&v, (const char *)buf + at, sizeof(v));
	return v;
}

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);
/* CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), nanoseconds. */
uint64_t thread_cpu_ns(void);
/* Wall-clock time (CLOCK_REALTIME) in nanoseconds since the Unix epoch. */
uint64_t realtime_ns(void);

/*
 * Write data to path atomically: opened as "path.tmp.PID", filled by
 * write_fn (which returns 0 or a negative errno code, and reports
 * nothing), checked with fflush/ferror/fclose, renamed over path.
 * When path is a symlink, the file it leads to is the one written (the
 * temporary beside it), and the link stays.  Returns 0, or -1 after
 * reporting (and removing the temporary file); the report names path,
 * not the temporary file.
 */
int write_file_atomic(const char *path, int (*write_fn)(FILE *, void *),
		      void *data);

/*
 * Whether write_file_atomic(path) can work: path's directory exists and
 * a file can be created in it, and path is not a directory nor a file
 * that may not be replaced.  Creates and removes the temporary file to
 * find out; reports nothing.  Returns 0 or a negative errno code.
 */
int file_replaceable(const char *path);

#endif
