/* SPDX-License-Identifier: MIT */
/* Small helpers every subsystem uses: aborting allocators, error reporting,
 * strbuf. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
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

uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The name write_file_atomic() fills before renaming it over path. */
static void atomic_tmp_name(struct strbuf *sb, const char *path)
{
	strbuf_addf(sb, "%s.tmp.%d", path, (int)getpid());
}

/*
 * The file that writing path replaces: path, or when path is a symlink
 * the file it leads to (through every link; a dangling one's target),
 * so that the rename replaces that file and leaves the link be, as a
 * plain write through the link would.  The caller frees it.
 */
static char *write_target(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	const char *slash;
	ssize_t n;

	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		return xstrdup(path);
	if (realpath(path, buf))
		return xstrdup(buf);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return xstrdup(path);
	buf[n] = '\0';
	slash = strrchr(path, '/');
	if (buf[0] == '/' || !slash)
		return xstrdup(buf);
	{
		struct strbuf sb = STRBUF_INIT;

		strbuf_addf(&sb, "%.*s/%s", (int)(slash - path), path, buf);
		return strbuf_detach(&sb);
	}
}

int file_replaceable(const char *given)
{
	struct strbuf tmp = STRBUF_INIT;
	struct stat st, dir_st;
	char *path, *dir;
	const char *slash;
	int fd, ret = 0;

	if (!*given)
		return -ENOENT;
	path = write_target(given);
	slash = strrchr(path, '/');
	if (slash == path)
		dir = xstrdup("/");
	else if (slash)
		dir = xstrndup(path, (size_t)(slash - path));
	else
		dir = xstrdup(".");
	if (stat(dir, &dir_st)) {
		ret = -errno;
		goto out;
	}
	if (!S_ISDIR(dir_st.st_mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (!stat(path, &st)) {
		/* rename() cannot put a file where a directory is. */
		if (S_ISDIR(st.st_mode)) {
			ret = -EISDIR;
			goto out;
		}
		/*
		 * In a sticky directory (/tmp) only the owner of a file or
		 * of the directory may replace it (unlink(2), EPERM).
		 */
		if ((dir_st.st_mode & S_ISVTX) && geteuid() != 0 &&
		    st.st_uid != geteuid() && dir_st.st_uid != geteuid()) {
			ret = -EPERM;
			goto out;
		}
	}
	/* Creating the very file that will be written tests it all. */
	atomic_tmp_name(&tmp, path);
	fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	close(fd);
	unlink(tmp.buf);
out:
	strbuf_release(&tmp);
	free(dir);
	free(path);
	return ret;
}

int write_file_atomic(const char *path, int (*write_fn)(FILE *, void *),
		      void *data)
{
	struct strbuf tmp = STRBUF_INIT;
	char *target = write_target(path);
	FILE *fp;
	int ret = -1;
	int saved;

	/* Errors name path, the file the user asked for, never tmp. */
	atomic_tmp_name(&tmp, target);
	fp = fopen(tmp.buf, "w");
	if (!fp) {
		error("cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	saved = write_fn(fp, data);
	if (saved < 0) {
		fclose(fp);
		error("cannot write '%s': %s", path, strerror(-saved));
		goto out_unlink;
	}
	if (fflush(fp) || ferror(fp)) {
		saved = errno;
		fclose(fp);
		error("cannot write '%s': %s", path, strerror(saved));
		goto out_unlink;
	}
	if (fclose(fp)) {
		error("cannot write '%s': %s", path, strerror(errno));
		goto out_unlink;
	}
	if (rename(tmp.buf, target)) {
		error("cannot write '%s': %s", path, strerror(errno));
		goto out_unlink;
	}
	ret = 0;
	goto out;
out_unlink:
	unlink(tmp.buf);
out:
	strbuf_release(&tmp);
	free(target);
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
