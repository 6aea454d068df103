/* SPDX-License-Identifier: MIT */
/* An object's attributes, read from outside: dicts, shared keys, values. */
#include "py/pyattr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"
#include "py/pycode.h"

/* More attributes than this in one dict means garbage. */
#define ATTR_MAX_ENTRIES 1024
/* A type object's fields that matter here lie within its first bytes. */
#define TYPE_HEAD_MAX 1024

static int read_word(pid_t pid, uint64_t addr, uint64_t *out)
{
	return proc_read(pid, addr, out, sizeof(*out));
}

static uint64_t get_word(const unsigned char *buf, long at)
{
	uint64_t v;

	memcpy(&v, buf + at, sizeof(v));
	return v;
}

int pyattr_supported(const struct py_offsets *off)
{
	return off->type_flags != OFF_NONE && off->dict_keys != OFF_NONE &&
	       off->dictkeys_nentries != OFF_NONE &&
	       off->dictkeys_indices != OFF_NONE &&
	       (off->dictkeys_size != OFF_NONE ||
		off->dictkeys_log2_index_bytes != OFF_NONE);
}

/* Is the str at addr exactly name? */
static int str_is(pid_t pid, const struct py_offsets *off, uint64_t addr,
		  const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	int same = !pystring_read(pid, off, addr, &sb) && sb.len &&
		   !strcmp(sb.buf, name);

	strbuf_release(&sb);
	return same;
}

/*
 * Find name among the keys object's entries.  Returns its index, with
 * the key's address and the entry's own value (0 in shared keys), or a
 * negative errno.
 */
static long keys_lookup(pid_t pid, const struct py_offsets *off, uint64_t keys,
			const char *name, uint64_t *key_out,
			uint64_t *value_out)
{
	unsigned char head[64];
	unsigned char *entries;
	int64_t nentries;
	uint64_t at;
	long esize, ekey, evalue, i, found = -ENOENT;
	int r;

	if (!keys || (size_t)off->dictkeys_indices > sizeof(head))
		return -EINVAL;
	r = proc_read(pid, keys, head, (size_t)off->dictkeys_indices);
	if (r)
		return r;
	memcpy(&nentries, head + off->dictkeys_nentries, sizeof(nentries));
	if (nentries < 0 || nentries > ATTR_MAX_ENTRIES)
		return -EINVAL;
	if (off->dictkeys_size != OFF_NONE) {
		/* Up to 3.10: the index width follows from dk_size. */
		int64_t size;
		uint64_t width;

		memcpy(&size, head + off->dictkeys_size, sizeof(size));
		if (size <= 0 || size > 8 * ATTR_MAX_ENTRIES)
			return -EINVAL;
		width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		at = keys + (uint64_t)off->dictkeys_indices +
		     (uint64_t)size * width;
		esize = off->dictentry_size;
		ekey = off->dictentry_key;
		evalue = off->dictentry_value;
	} else {
		unsigned log2_index = head[off->dictkeys_log2_index_bytes];

		if (log2_index > 20)
			return -EINVAL;
		at = keys + (uint64_t)off->dictkeys_indices +
		     ((uint64_t)1 << log2_index);
		if (head[off->dictkeys_kind] == off->dictkeys_kind_general) {
			esize = off->dictentry_size;
			ekey = off->dictentry_key;
			evalue = off->dictentry_value;
		} else {
			esize = off->unientry_size;
			ekey = off->unientry_key;
			evalue = off->unientry_value;
		}
	}
	if (!nentries)
		return -ENOENT;
	entries = xmalloc((size_t)(nentries * esize));
	r = proc_read(pid, at, entries, (size_t)(nentries * esize));
	for (i = 0; !r && i < nentries; i++) {
		uint64_t key = get_word(entries + i * esize, ekey);

		if (key && str_is(pid, off, key, name)) {
			*key_out = key;
			*value_out = get_word(entries + i * esize, evalue);
			found = i;
			break;
		}
	}
	free(entries);
	return r ? r : found;
}

/*
 * Where obj keeps its attributes: a dict, or a values array indexed
 * like its type's shared keys.  Returns 0 with *dict or *values set.
 */
static int find_attributes(pid_t pid, const struct py_offsets *off,
			   uint64_t obj, const unsigned char *type,
			   uint64_t *dict, uint64_t *values)
{
	uint64_t flags = get_word(type, off->type_flags);
	int64_t dictoffset;
	int r;

	*dict = *values = 0;
	if (off->tpflags_managed_dict != OFF_NONE &&
	    (flags & (uint64_t)off->tpflags_managed_dict)) {
		if (off->inline_values_at != OFF_NONE &&
		    (flags & (uint64_t)off->tpflags_inline_values)) {
			/* 3.13+: inline, unless a dict took them over */
			uint64_t v = obj + (uint64_t)off->inline_values_at;
			unsigned char valid = 0;

			r = proc_read(pid, v + (uint64_t)off->dictvalues_valid,
				      &valid, 1);
			if (r)
				return r;
			if (valid)
				*values = v + (uint64_t)off->dictvalues_values;
		}
		if (!*values && off->managed_values_at != OFF_NONE) {
			uint64_t w;

			r = read_word(
			    pid, obj + (uint64_t)off->managed_values_at, &w);
			if (r)
				return r;
			if (off->managed_values_untag == OFF_NONE) {
				/* 3.11: a pointer of its own */
				if (w)
					*values =
					    w +
					    (uint64_t)off->dictvalues_values;
			} else if (w & 1) {
				/* 3.12: tagged values */
				*values = w +
					  (uint64_t)off->managed_values_untag +
					  (uint64_t)off->dictvalues_values;
			} else {
				/* 3.12: the same word holds the dict */
				*dict = w;
				return 0;
			}
		}
		if (*values)
			return 0;
		return read_word(pid, obj + (uint64_t)off->managed_dict_at,
				 dict);
	}
	memcpy(&dictoffset, type + off->type_dictoffset, sizeof(dictoffset));
	/* Negative offsets count from the end of variable-size objects. */
	if (dictoffset <= 0 || dictoffset > TYPE_HEAD_MAX)
		return -ENOENT;
	return read_word(pid, obj + (uint64_t)dictoffset, dict);
}

int pyattr_str(pid_t pid, const struct py_offsets *off, uint64_t obj,
	       const char *name, struct strbuf *out)
{
	unsigned char type[TYPE_HEAD_MAX];
	uint64_t type_addr, dict, values, keys, key = 0, value = 0, key_type,
						value_type;
	long need = off->heaptype_cached_keys + 8, ix;
	int r;

	if (!pyattr_supported(off) || need > (long)sizeof(type))
		return -ENOENT;
	r = read_word(pid, obj + (uint64_t)off->object_type, &type_addr);
	if (r)
		return r;
	if (!type_addr)
		return -EINVAL;
	r = proc_read(pid, type_addr, type, (size_t)need);
	if (r)
		return r;
	r = find_attributes(pid, off, obj, type, &dict, &values);
	if (r)
		return r;
	if (values) {
		keys = get_word(type, off->heaptype_cached_keys);
	} else if (dict) {
		unsigned char d[64];

		if ((size_t)off->dict_values + 8 > sizeof(d))
			return -EINVAL;
		r = proc_read(pid, dict, d, (size_t)off->dict_values + 8);
		if (r)
			return r;
		keys = get_word(d, off->dict_keys);
		values = get_word(d, off->dict_values);
		if (values)
			values += (uint64_t)off->dictvalues_values;
	} else {
		return -ENOENT;
	}
	ix = keys_lookup(pid, off, keys, name, &key, &value);
	if (ix < 0)
		return (int)ix;
	if (values) {
		r = read_word(pid, values + (uint64_t)ix * 8, &value);
		if (r)
			return r;
	}
	if (!value)
		return -ENOENT;
	/* The value must be a str, as the key is. */
	r = read_word(pid, key + (uint64_t)off->object_type, &key_type);
	if (!r)
		r = read_word(pid, value + (uint64_t)off->object_type,
			      &value_type);
	if (r)
		return r;
	if (key_type != value_type)
		return -ENOENT;
	r = pystring_read_confirmed(pid, off, value, out);
	return r == -EINVAL ? -ENOENT : r;
}
