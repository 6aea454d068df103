/* SPDX-License-Identifier: MIT */
/* The source file a profile's frame names, found and read. */
#include "profile/source.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/*
 * Read path into sb if it is a regular file of at most max bytes (a
 * name in a profile may be anything, a FIFO or a device that would never
 * end) and text; 0 or -1.
 */
static int read_text(const char *path, size_t max, struct strbuf *sb)
{
	struct stat st;
	char buf[65536];
	ssize_t n;
	int fd = *path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;

	if (fd < 0)
		return -1;
	strbuf_reset(sb);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size > max) {
		close(fd);
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0 && sb->len <= max)
		strbuf_add(sb, buf, (size_t)n);
	close(fd);
	if (n < 0 || sb->len > max || memchr(sb->buf, '\0', sb->len)) {
		strbuf_reset(sb);
		return -1;
	}
	return 0;
}

/* path under prefix if there is one, then as it is. */
static int read_under(const char *prefix, const char *path, size_t max,
		      struct strbuf *sb)
{
	struct strbuf full = STRBUF_INIT;
	int r = -1;

	if (prefix && *path == '/') {
		strbuf_addf(&full, "%s%s", prefix, path);
		r = read_text(full.buf, max, sb);
		strbuf_release(&full);
	}
	return r ? read_text(path, max, sb) : 0;
}

int source_read(const char *file, char *const *roots, size_t nr_roots,
		const char *prefix, size_t max, struct strbuf *sb)
{
	struct strbuf path = STRBUF_INIT;
	size_t i;
	int r = read_under(prefix, file, max, sb);

	for (i = 0; r && *file && *file != '/' && i < nr_roots; i++) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%s", roots[i], file);
		r = read_under(prefix, path.buf, max, sb);
	}
	strbuf_release(&path);
	if (r)
		strbuf_reset(sb);
	return r;
}
