/* SPDX-License-Identifier: MIT */
/* The source file a profile's frame names, found and read. */
#include "profile/source.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/*
 * Read path into sb if it is a regular file of at most max bytes (a
 * name in a profile may be anything, a FIFO or a device that would never
 * end) and text; 0 or -1.
 */
static void id_from_stat(const struct stat *st, struct source_id *id)
{
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->size = (uint64_t)st->st_size;
	id->mtime_ns =
	    (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static int read_text(const char *path, const struct source_id *want, size_t max,
		     struct strbuf *sb)
{
	struct stat st;
	struct source_id id;
	char buf[65536];
	ssize_t n;
	int fd = *path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;

	if (fd < 0)
		return -1;
	strbuf_reset(sb);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	id_from_stat(&st, &id);
	if (want && memcmp(&id, want, sizeof(id))) {
		close(fd);
		return SOURCE_CHANGED;
	}
	if ((unsigned long long)st.st_size > max) {
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

/* The worse of two reads' failures: another file beats none. */
static int worse(int a, int b)
{
	return a == SOURCE_CHANGED || b == SOURCE_CHANGED ? SOURCE_CHANGED : -1;
}

/* path under prefix if there is one, then as it is. */
static int read_under(const char *prefix, const char *path,
		      const struct source_id *id, size_t max, struct strbuf *sb)
{
	struct strbuf full = STRBUF_INIT;
	int r = -1, r2;

	if (prefix && *path == '/') {
		strbuf_addf(&full, "%s%s", prefix, path);
		r = read_text(full.buf, id, max, sb);
		strbuf_release(&full);
	}
	if (!r)
		return 0;
	r2 = read_text(path, id, max, sb);
	return r2 ? worse(r, r2) : 0;
}

int source_read(const char *file, char *const *roots, size_t nr_roots,
		const char *prefix, const struct source_id *id, size_t max,
		struct strbuf *sb)
{
	struct strbuf path = STRBUF_INIT;
	size_t i;
	int r = read_under(prefix, file, id, max, sb), r2;

	for (i = 0; r && *file && *file != '/' && i < nr_roots; i++) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%s", roots[i], file);
		r2 = read_under(prefix, path.buf, id, max, sb);
		r = r2 ? worse(r, r2) : 0;
	}
	strbuf_release(&path);
	if (r)
		strbuf_reset(sb);
	return r;
}

void source_id_format(const struct source_id *id, char *buf, size_t size)
{
	snprintf(buf, size, "%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64,
		 id->dev, id->ino, id->size, id->mtime_ns);
}

int source_id_parse(const char *text, struct source_id *id)
{
	int n = -1;

	if (sscanf(text, "%" SCNu64 ":%" SCNu64 ":%" SCNu64 ":%" SCNd64 "%n",
		   &id->dev, &id->ino, &id->size, &id->mtime_ns, &n) != 4 ||
	    text[n])
		return -1;
	return 0;
}

void source_files_init(struct source_files *sf)
{
	memset(sf, 0, sizeof(*sf));
	stacks_init(&sf->index);
}

void source_files_release(struct source_files *sf)
{
	stacks_release(&sf->index);
	free(sf->files);
	source_files_init(sf);
}

void source_files_note(struct source_files *sf, pid_t pid, const char *cwd,
		       const char *path, const char *name)
{
	struct strbuf full = STRBUF_INIT;
	struct source_file *f;
	struct stat st;
	uint32_t i;

	if (!*name || *name == '<' || !*path)
		return;
	i = stacks_frame(&sf->index, name, "", 0);
	if (i < sf->nr_files)
		return;
	ALLOC_GROW(sf->files, sf->nr_files + 1, sf->alloc_files);
	f = &sf->files[sf->nr_files++];
	memset(f, 0, sizeof(*f));
	f->name = sf->index.frames[i].name;
	/* As the target opened it: its root, its working directory. */
	if (*path == '/')
		strbuf_addf(&full, "/proc/%ld/root%s", (long)pid, path);
	else if (cwd && *cwd == '/')
		strbuf_addf(&full, "/proc/%ld/root%s/%s", (long)pid, cwd, path);
	if (full.len && !stat(full.buf, &st) && S_ISREG(st.st_mode)) {
		id_from_stat(&st, &f->id);
		f->known = 1;
	}
	strbuf_release(&full);
}

const struct source_id *source_files_find(const struct source_files *sf,
					  const char *name)
{
	size_t i;

	/* Written once per file: a search will do. */
	for (i = 0; i < sf->nr_files; i++)
		if (sf->files[i].known && !strcmp(sf->files[i].name, name))
			return &sf->files[i].id;
	return NULL;
}
