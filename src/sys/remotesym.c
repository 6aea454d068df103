/* SPDX-License-Identifier: MIT */
/* Where a library a target has mapped keeps a symbol, in the target. */
#include "sys/remotesym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/elfsym.h"
#include "util.h"

const char *remotesym_library(const struct proc_maps *maps, const char *prefix)
{
	size_t i, len = strlen(prefix);

	for (i = 0; i < maps->nr; i++) {
		const char *path = maps->maps[i].path, *base;

		if (!path || path[0] != '/')
			continue;
		base = strrchr(path, '/') + 1;
		if (!strncmp(base, prefix, len) &&
		    (base[len] == '.' || base[len] == '-'))
			return path;
	}
	return NULL;
}

/* Whether a path of /proc/PID/maps is path, or path since deleted. */
static int same_file(const char *mapped, const char *path)
{
	size_t len = strlen(path);

	return !strncmp(mapped, path, len) &&
	       (!mapped[len] || !strcmp(mapped + len, " (deleted)"));
}

int remotesym_lookup(pid_t pid, const struct proc_maps *maps, const char *path,
		     const char *name, uint64_t *addr, uint64_t *size)
{
	struct elfsym es;
	char *file = NULL;
	uint64_t value = 0, base = 0, sz = 0;
	int saved_quiet = quiet, ret = -1;
	size_t i;

	for (i = 0; i < maps->nr; i++)
		if (maps->maps[i].path && same_file(maps->maps[i].path, path) &&
		    maps->maps[i].offset == 0) {
			base = maps->maps[i].start;
			/* The mapped file, whatever took its path since. */
			file = proc_mapped_file(pid, maps, maps->maps[i].path);
			break;
		}
	quiet = 1;
	if (base && (!file || elfsym_open(&es, file)))
		base = 0;
	if (base) {
		if (!elfsym_lookup_sized(&es, name, &value, &sz)) {
			*addr = value + elfsym_bias(&es, base);
			if (size)
				*size = sz;
			ret = 0;
		}
		elfsym_close(&es);
	}
	quiet = saved_quiet;
	free(file);
	return ret;
}
