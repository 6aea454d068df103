/* SPDX-License-Identifier: MIT */
/* Symbols and read-only data of an ELF file, through libelf. */
#include "sys/elfsym.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int elfsym_open(struct elfsym *es, const char *path)
{
	GElf_Ehdr ehdr;
	size_t i, nphdr;

	memset(es, 0, sizeof(*es));
	es->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return error("libelf is too old");
	es->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (es->fd < 0)
		return error("cannot open '%s': %s", path, strerror(errno));
	es->elf = elf_begin(es->fd, ELF_C_READ_MMAP, NULL);
	if (!es->elf || elf_kind(es->elf) != ELF_K_ELF ||
	    !gelf_getehdr(es->elf, &ehdr)) {
		elfsym_close(es);
		return error("'%s' is not an ELF file", path);
	}
	es->is_exec = ehdr.e_type == ET_EXEC;
	if (elf_getphdrnum(es->elf, &nphdr))
		nphdr = 0;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(es->elf, (int)i, &ph) &&
		    ph.p_type == PT_LOAD) {
			es->first_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			break;
		}
	}
	return 0;
}

int elfsym_needs(struct elfsym *es, const char *prefix)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(es->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(data, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(es->elf, sh.sh_link,
					  (size_t)dyn.d_un.d_val);
			if (name && !strncmp(name, prefix, strlen(prefix)))
				return 1;
		}
	}
	return 0;
}

int elfsym_section(struct elfsym *es, const char *name, uint64_t *addr,
		   uint64_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(es->elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(es->elf, scn))) {
		GElf_Shdr sh;
		const char *s;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_addr)
			continue;
		s = elf_strptr(es->elf, shstrndx, sh.sh_name);
		if (s && !strcmp(s, name)) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			return 0;
		}
	}
	return -1;
}

void elfsym_close(struct elfsym *es)
{
	if (es->elf)
		elf_end(es->elf);
	if (es->fd >= 0)
		close(es->fd);
	es->elf = NULL;
	es->fd = -1;
}

static int lookup_in(struct elfsym *es, Elf64_Word type, const char *name,
		     uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(es->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			s = elf_strptr(es->elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				*value = sym.st_value;
				if (size)
					*size = sym.st_size;
				return 0;
			}
		}
	}
	return -1;
}

int elfsym_lookup(struct elfsym *es, const char *name, uint64_t *value)
{
	return elfsym_lookup_sized(es, name, value, NULL);
}

int elfsym_lookup_sized(struct elfsym *es, const char *name, uint64_t *value,
			uint64_t *size)
{
	if (!lookup_in(es, SHT_DYNSYM, name, value, size))
		return 0;
	return lookup_in(es, SHT_SYMTAB, name, value, size);
}

int is_version_string(const char *s, size_t len)
{
	size_t i = 0;
	int part;

	for (part = 0; part < 3; part++) {
		size_t digits = 0;

		if (part && (i >= len || s[i++] != '.'))
			return 0;
		while (i < len && isdigit((unsigned char)s[i]) && digits < 3) {
			i++;
			digits++;
		}
		if (!digits)
			return 0;
	}
	if (s[0] != '2' && s[0] != '3')
		return 0;
	if (i < len && (s[i] == 'a' || s[i] == 'b')) {
		i++;
	} else if (i + 1 < len && s[i] == 'r' && s[i + 1] == 'c') {
		i += 2;
	} else {
		goto plus;
	}
	if (i >= len || !isdigit((unsigned char)s[i]))
		return 0;
	while (i < len && isdigit((unsigned char)s[i]))
		i++;
plus:
	if (i < len && s[i] == '+')
		i++;
	return i == len;
}

int elfsym_find_version(struct elfsym *es, const char *want_prefix, char *buf,
			size_t size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int found = 0;

	if (elf_getshdrstrndx(es->elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(es->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *name, *p, *end;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(es->elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".rodata"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		p = data->d_buf;
		end = p + data->d_size;
		while (p < end) {
			const char *nul = memchr(p, '\0', (size_t)(end - p));
			size_t len =
			    nul ? (size_t)(nul - p) : (size_t)(end - p);

			if (len >= 5 && len < size &&
			    is_version_string(p, len) &&
			    (p == data->d_buf || p[-1] == '\0')) {
				int wanted = want_prefix &&
					     !strncmp(p, want_prefix,
						      strlen(want_prefix));

				if (!found || wanted) {
					memcpy(buf, p, len);
					buf[len] = '\0';
					found = 1 + wanted;
				}
				if (found == 2)
					return 0;
			}
			p += len + 1;
		}
	}
	return found ? 0 : -1;
}
