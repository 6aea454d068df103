/* SPDX-License-Identifier: MIT */
/* Symbols and read-only data of an ELF file, through libelf. */
#ifndef SPYC_ELFSYM_H
#define SPYC_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct elfsym {
	int fd;
	struct Elf *elf;
	int is_exec;	      /* ET_EXEC: linked at a fixed address */
	uint64_t first_vaddr; /* p_vaddr of the first PT_LOAD, page-aligned */
};

/* Open path.  Returns 0, or -1 after reporting why. */
int elfsym_open(struct elfsym *es, const char *path);
void elfsym_close(struct elfsym *es);

/*
 * Look name up in .dynsym, then .symtab.  Stores its (unrelocated)
 * st_value in *value and returns 0, or returns -1 if it is not there.
 */
int elfsym_lookup(struct elfsym *es, const char *name, uint64_t *value);
/* The same, also storing the symbol's st_size in *size (may be NULL). */
int elfsym_lookup_sized(struct elfsym *es, const char *name, uint64_t *value,
			uint64_t *size);
/*
 * The load bias of a shared object (es) mapped in a process with its
 * first page at base (the mapping of file offset 0): add it to a
 * symbol's value to get its address there.  0 for an ET_EXEC file.
 */
static inline uint64_t elfsym_bias(const struct elfsym *es, uint64_t base)
{
	return es->is_exec ? 0 : base - es->first_vaddr;
}

/*
 * Find the allocated section called name (".AsyncioDebug").  Stores its
 * (unrelocated) address and size and returns 0, or returns -1 if the
 * file has none.
 */
int elfsym_section(struct elfsym *es, const char *name, uint64_t *addr,
		   uint64_t *size);

/* Whether one of the file's DT_NEEDED libraries starts with prefix. */
int elfsym_needs(struct elfsym *es, const char *prefix);

/*
 * Find a CPython version string ("3.9.18", "3.12.0rc1") among the
 * NUL-terminated strings of .rodata, preferring one that starts with
 * want_prefix (e.g. "3.9." from a library name; may be NULL).  Returns 0
 * with the string in buf, or -1 if there is none.
 */
int elfsym_find_version(struct elfsym *es, const char *want_prefix, char *buf,
			size_t size);

/*
 * Whether s is exactly a CPython version: N.N.N with an optional
 * a/b/rc suffix and an optional '+'.  Pure; for tests.
 */
int is_version_string(const char *s, size_t len);

#endif
