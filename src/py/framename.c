/* SPDX-License-Identifier: MIT */
/* Naming sampled frames for people: shorter file names, and a per-line id
 * cached on each code object. */
#include "py/framename.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void target_cwd(pid_t pid, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	if (!size)
		return;
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	n = readlink(link, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
}

const char *short_filename(const char *file, const char *cwd)
{
	static const char *const markers[] = {"/site-packages/",
					      "/dist-packages/"};
	static const char stdlib[] = "/lib/python";
	const char *p, *best = NULL;
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(markers); i++) {
		p = strstr(file, markers[i]);
		if (p)
			best = p + strlen(markers[i]);
	}
	if (best)
		return best;
	/* "/lib/python3.11/json/decoder.py": after the version directory. */
	p = strstr(file, stdlib);
	if (p && (p = strchr(p + strlen(stdlib), '/')))
		return p + 1;
	n = strlen(cwd);
	if (n > 1 && !strncmp(file, cwd, n) && file[n] == '/')
		return file + n + 1;
	return file;
}

void source_roots_note(struct source_roots *sr, const char *file,
		       const char *short_name)
{
	size_t len, i;

	if (short_name == file || short_name - file < 2)
		return;
	/* What was taken off, without the slash that ends it. */
	len = (size_t)(short_name - file) - 1;
	for (i = 0; i < sr->nr; i++)
		if (strlen(sr->dirs[i]) == len &&
		    !strncmp(sr->dirs[i], file, len))
			return;
	if (sr->nr < SOURCE_ROOTS_MAX)
		sr->dirs[sr->nr++] = xstrndup(file, len);
}

void source_roots_release(struct source_roots *sr)
{
	size_t i;

	for (i = 0; i < sr->nr; i++)
		free(sr->dirs[i]);
	sr->nr = 0;
}

uint32_t pycode_line_id(struct pycode *code, int line, line_id_fn make,
			void *ctx)
{
	struct pycode_line *l;
	uint32_t id;
	size_t i;

	for (i = 0; i < code->nr_lines; i++)
		if (code->lines[i].line == line)
			return code->lines[i].id;
	id = make(ctx, code, line);
	ALLOC_GROW(code->lines, code->nr_lines + 1, code->alloc_lines);
	l = &code->lines[code->nr_lines++];
	l->line = line;
	l->id = id;
	return id;
}
