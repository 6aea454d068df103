/* SPDX-License-Identifier: MIT */
/* Small helpers every subsystem uses: aborting allocators, error reporting,
 * strbuf. */
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int quiet;
char strbuf_empty[1];

static void oom(size_t size)
{
	fprintf(stderr, "spyc: out of memory allocating %zu bytes\n", size);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		oom(size);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);
	if (!p)
		oom(size);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void grow_array(void **ptr, size_t *alloc, size_t need, size_t elem_size)
{
	size_t n;

	if (need <= *alloc)
		return;
	n = *alloc ? *alloc * 2 : 16;
	while (n < need)
		n *= 2;
	*ptr = xrealloc(*ptr, n * elem_size);
	*alloc = n;
}

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "spyc: %s%s\n", prefix, msg);
}

int error(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return -1;
	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
	exit(2);
}

void strbuf_init(struct strbuf *sb, size_t hint)
{
	sb->len = 0;
	sb->alloc = 0;
	sb->buf = strbuf_empty;
	if (hint)
		strbuf_grow(sb, hint);
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, 0);
}

char *strbuf_detach(struct strbuf *sb)
{
	char *s = sb->alloc ? sb->buf : xstrdup("");

	strbuf_init(sb, 0);
	return s;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	size_t n;

	if (need <= sb->alloc)
		return;
	n = sb->alloc ? sb->alloc * 2 : 64;
	while (n < need)
		n *= 2;
	if (sb->alloc) {
		sb->buf = xrealloc(sb->buf, n);
	} else {
		sb->buf = xmalloc(n);
		sb->buf[0] = '\0';
	}
	sb->alloc = n;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;

	strbuf_add(sb, &ch, 1);
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->len, sb->alloc ? sb->alloc - sb->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (!sb->alloc || (size_t)n >= sb->alloc - sb->len) {
		strbuf_grow(sb, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
		va_end(ap);
	}
	sb->len += (size_t)n;
}

uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int write_file_atomic(const char *path, int (*write_fn)(FILE *, void *),
		      void *data)
{
	struct strbuf tmp = STRBUF_INIT;
	FILE *fp;
	int ret = -1;
	int saved;

	strbuf_addf(&tmp, "%s.tmp.%d", path, (int)getpid());
	fp = fopen(tmp.buf, "w");
	if (!fp) {
		error("cannot write '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	if (write_fn(fp, data) < 0) {
		fclose(fp);
		goto out_unlink;
	}
	if (fflush(fp) || ferror(fp)) {
		saved = errno;
		fclose(fp);
		error("cannot write '%s': %s", tmp.buf, strerror(saved));
		goto out_unlink;
	}
	if (fclose(fp)) {
		error("cannot write '%s': %s", tmp.buf, strerror(errno));
		goto out_unlink;
	}
	if (rename(tmp.buf, path)) {
		error("cannot rename '%s' to '%s': %s", tmp.buf, path,
		      strerror(errno));
		goto out_unlink;
	}
	ret = 0;
	goto out;
out_unlink:
	unlink(tmp.buf);
out:
	strbuf_release(&tmp);
	return ret;
}

void utf8_truncate(char *dst, size_t size, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (!size)
		return;
	if (n >= size) {
		n = size - 1;
		/* Back off the continuation bytes of a cut character. */
		while (n && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}
