/* SPDX-License-Identifier: MIT */
/* Code objects of the target: a cache by address, line tables, and strings. */
#include "py/pycode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sys/proc.h"

/* Longest name or path we decode; longer means garbage. */
#define STRING_MAX_CHARS 8192
/* Largest line table we copy (a huge generated function has ~100 KiB). */
#define LINETABLE_MAX_BYTES (4u << 20)
/* Beyond this many cached code objects, start over (bounds memory). */
#define CACHE_MAX_ENTRIES (1u << 18)
/* Beyond this many "[N frames not read]" stand-ins, likewise. */
#define PLACEHOLDERS_MAX 4096
/* 3.11+ bytecode is in 2-byte code units (_Py_CODEUNIT). */
#define CODEUNIT_BYTES 2

static int get_int(const unsigned char *buf, long at)
{
	int v;

	memcpy(&v, buf + at, sizeof(v));
	return v;
}

void pycode_cache_init(struct pycode_cache *cache, const struct pyruntime *rt)
{
	const struct py_offsets *off = rt->off;
	long fields[] = {
	    off->object_type,	   off->var_size,	off->code_filename,
	    off->code_name,	   off->code_qualname,	off->code_linetable,
	    off->code_firstlineno, off->code_framesize, off->code_nlocalsplus,
	    off->code_stacksize,   off->code_flags,	off->code_tlbc};
	size_t i;
	long end = 0;

	memset(cache, 0, sizeof(*cache));
	cache->pid = rt->pid;
	cache->off = off;
	cache->code_type = rt->code_type;
	/* Free-threaded, an object's first word is its owner thread's. */
	cache->refcnt_at_0 = !off->free_threaded;
	if (rt->hexversion >= 0x030B0000UL)
		cache->kind = LINETABLE_LOCATIONS;
	else if (rt->hexversion >= 0x030A0000UL)
		cache->kind = LINETABLE_310;
	else
		cache->kind = LINETABLE_LNOTAB;
	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (fields[i] != OFF_NONE && fields[i] + 8 > end)
			end = fields[i] + 8;
	cache->header_len = (size_t)end;
	cache->size = 1024;
	cache->slots = xcalloc(cache->size, sizeof(*cache->slots));
}

static void pycode_free(struct pycode *code)
{
	free(code->name);
	free(code->filename);
	free(code->linetable);
	free(code->lines);
	free(code);
}

/*
 * Frames of the sample being taken may point at code: freed only by
 * pycode_cache_collect(), after the sample.
 */
static void retire(struct pycode_cache *cache, struct pycode *code)
{
	ALLOC_GROW(cache->retired, cache->nr_retired + 1, cache->alloc_retired);
	cache->retired[cache->nr_retired++] = code;
}

void pycode_cache_collect(struct pycode_cache *cache)
{
	size_t i;

	for (i = 0; i < cache->nr_retired; i++)
		pycode_free(cache->retired[i]);
	cache->nr_retired = 0;
}

/* Empty the cache; its entries are retired, not freed. */
static void cache_clear(struct pycode_cache *cache)
{
	size_t i;

	for (i = 0; i < cache->nr_placeholders; i++)
		retire(cache, cache->placeholders[i]);
	cache->nr_placeholders = 0;

	for (i = 0; i < cache->size; i++) {
		if (cache->slots[i])
			retire(cache, cache->slots[i]);
		cache->slots[i] = NULL;
	}
	cache->count = 0;
}

void pycode_cache_release(struct pycode_cache *cache)
{
	if (cache->slots)
		cache_clear(cache);
	pycode_cache_collect(cache);
	free(cache->slots);
	free(cache->placeholders);
	free(cache->retired);
	cache->slots = NULL;
	cache->placeholders = NULL;
	cache->retired = NULL;
	cache->alloc_retired = 0;
	cache->size = 0;
}

static size_t slot_of(const struct pycode_cache *cache, uint64_t addr)
{
	uint64_t h = addr * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h >> 20) & (cache->size - 1);
}

static void cache_insert(struct pycode_cache *cache, struct pycode *code)
{
	size_t i;

	if (cache->count >= CACHE_MAX_ENTRIES)
		cache_clear(cache);
	if ((cache->count + 1) * 2 > cache->size) {
		struct pycode **old = cache->slots;
		size_t old_size = cache->size;

		cache->size *= 2;
		cache->slots = xcalloc(cache->size, sizeof(*cache->slots));
		for (i = 0; i < old_size; i++) {
			size_t j;

			if (!old[i])
				continue;
			j = slot_of(cache, old[i]->addr);
			while (cache->slots[j])
				j = (j + 1) & (cache->size - 1);
			cache->slots[j] = old[i];
		}
		free(old);
	}
	i = slot_of(cache, code->addr);
	while (cache->slots[i])
		i = (i + 1) & (cache->size - 1);
	cache->slots[i] = code;
	cache->count++;
}

static struct pycode **cache_find(struct pycode_cache *cache, uint64_t addr)
{
	size_t i = slot_of(cache, addr);

	while (cache->slots[i]) {
		if (cache->slots[i]->addr == addr)
			return &cache->slots[i];
		i = (i + 1) & (cache->size - 1);
	}
	return NULL;
}

static void put_utf8(struct strbuf *out, uint32_t c)
{
	char b[4];

	if (c >= 0xD800 && c <= 0xDFFF)
		c = 0xFFFD; /* lone surrogates are not UTF-8 */
	if (c < 0x80) {
		strbuf_addch(out, (int)c);
	} else if (c < 0x800) {
		b[0] = (char)(0xC0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 0x3F));
		strbuf_add(out, b, 2);
	} else if (c < 0x10000) {
		b[0] = (char)(0xE0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		b[2] = (char)(0x80 | (c & 0x3F));
		strbuf_add(out, b, 3);
	} else if (c < 0x110000) {
		b[0] = (char)(0xF0 | (c >> 18));
		b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		b[3] = (char)(0x80 | (c & 0x3F));
		strbuf_add(out, b, 4);
	} else {
		put_utf8(out, 0xFFFD);
	}
}

int unicode_to_utf8(struct strbuf *out, int kind, const void *data,
		    size_t length)
{
	const unsigned char *p = data;
	size_t i;

	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	strbuf_grow(out, length * (size_t)(kind == 1 ? 2 : 4));
	for (i = 0; i < length; i++) {
		uint32_t c;

		if (kind == 1) {
			c = p[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, p + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, p + 4 * i, 4);
		}
		put_utf8(out, c);
	}
	return 0;
}

int pystring_read(pid_t pid, const struct py_offsets *off, uint64_t addr,
		  struct strbuf *out)
{
	unsigned char head[128];
	unsigned char stack_buf[1024];
	unsigned char *data = stack_buf;
	size_t head_len =
	    (size_t)(off->compact_size != OFF_NONE ? off->compact_size
						   : off->ascii_size);
	uint32_t state;
	int64_t length;
	int kind, compact, ascii, r;
	uint64_t data_addr;
	size_t bytes;

	if (!addr || head_len > sizeof(head))
		return -EINVAL;
	r = proc_read(pid, addr, head, head_len);
	if (r)
		return r;
	memcpy(&state, head + off->unicode_state, sizeof(state));
	memcpy(&length, head + off->unicode_length, sizeof(length));
	kind = (int)((state >> off->state_kind_shift) & 7);
	compact = (int)((state >> off->state_compact_shift) & 1);
	ascii = (int)((state >> off->state_ascii_shift) & 1);
	if (length < 0 || length > STRING_MAX_CHARS ||
	    (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
		return -EINVAL;
	if (compact && ascii)
		data_addr = addr + (uint64_t)off->ascii_size;
	else if (compact && off->compact_size != OFF_NONE)
		data_addr = addr + (uint64_t)off->compact_size;
	else if (!compact && off->unicode_data != OFF_NONE)
		memcpy(&data_addr, head + off->unicode_data, 8);
	else
		return -EINVAL;
	bytes = (size_t)length * (size_t)kind;
	if (bytes > sizeof(stack_buf))
		data = xmalloc(bytes);
	r = proc_read(pid, data_addr, data, bytes);
	if (!r)
		unicode_to_utf8(out, kind, data, (size_t)length);
	if (data != stack_buf)
		free(data);
	return r;
}

static int read_bytes_object(pid_t pid, const struct py_offsets *off,
			     uint64_t addr, unsigned char **buf, size_t *len)
{
	int64_t size;
	int r;

	*buf = NULL;
	*len = 0;
	r = proc_read(pid, addr + (uint64_t)off->var_size, &size, sizeof(size));
	if (r)
		return r;
	if (size < 0 || size > (int64_t)LINETABLE_MAX_BYTES)
		return -EINVAL;
	*buf = xmalloc((size_t)size + 1);
	r = proc_read(pid, addr + (uint64_t)off->bytes_sval, *buf,
		      (size_t)size);
	if (r) {
		free(*buf);
		*buf = NULL;
		return r;
	}
	*len = (size_t)size;
	return 0;
}

/* Is type the code type?  Learns PyCode_Type's address if unknown. */
static int is_code_type(struct pycode_cache *cache, uint64_t type)
{
	uint64_t name_ptr;
	char name[8];

	if (cache->code_type)
		return type == cache->code_type;
	if (!type ||
	    proc_read(cache->pid, type + (uint64_t)cache->off->type_name,
		      &name_ptr, sizeof(name_ptr)) ||
	    proc_read(cache->pid, name_ptr, name, 5) || memcmp(name, "code", 5))
		return 0;
	cache->code_type = type;
	return 1;
}

/* Words a frame of this code takes on the data stack (3.11+), or 0. */
static long frame_words(const struct py_offsets *off,
			const unsigned char *header)
{
	long n;

	if (off->code_framesize != OFF_NONE)
		n = get_int(header, off->code_framesize);
	else if (off->code_nlocalsplus != OFF_NONE &&
		 off->code_stacksize != OFF_NONE &&
		 off->frame_specials != OFF_NONE)
		n = (long)get_int(header, off->code_nlocalsplus) +
		    get_int(header, off->code_stacksize) + off->frame_specials;
	else
		return 0;
	return n > 0 ? n : 0;
}

/*
 * Does the code object at addr still have the header fields decode()
 * takes from header?  A code object's are fixed for its life, so a
 * second copy that differs means one of the two was torn, or the
 * address now holds another object: header was read once, in one
 * process_vm_readv with the sample's other headers, and a pointer in it
 * that is a little off (a stale or corrupted read) would otherwise be
 * decoded and cached as the code's own, naming the frame from whatever
 * it points at (an empty or wrong file name).  One read per decode.
 */
/*
 * Whether a code object's header, as read, can be a live object's.
 * Freed, pymalloc (and mimalloc) keep a link to the next free block in
 * its first word, where a live object counts its references: in its low
 * 32 bits (3.12+ immortal: UINT_MAX, or 3 << 30; 3.14+ keep flags in
 * the top 16 bits, 0 between), where a link has bits 32-47 set.
 */
static int looks_alive(const struct pycode_cache *cache,
		       const unsigned char *header)
{
	uint64_t refcnt = load_u64(header, 0);

	return !cache->refcnt_at_0 || (refcnt && !(refcnt >> 32 & 0xffff));
}

static int header_confirmed(struct pycode_cache *cache, uint64_t addr,
			    const unsigned char *header)
{
	const struct py_offsets *off = cache->off;
	long words[] = {off->object_type,   off->var_size,
			off->code_filename, off->code_name,
			off->code_qualname, off->code_linetable};
	long ints[] = {off->code_firstlineno, off->code_framesize,
		       off->code_nlocalsplus, off->code_stacksize,
		       off->code_flags};
	unsigned char *again = xmalloc(cache->header_len);
	int same = !proc_read(cache->pid, addr, again, cache->header_len) &&
		   looks_alive(cache, again);
	size_t i;

	for (i = 0; same && i < ARRAY_SIZE(words); i++)
		if (words[i] != OFF_NONE &&
		    memcmp(header + words[i], again + words[i], 8))
			same = 0;
	for (i = 0; same && i < ARRAY_SIZE(ints); i++)
		if (ints[i] != OFF_NONE &&
		    memcmp(header + ints[i], again + ints[i], 4))
			same = 0;
	free(again);
	return same;
}

int pystring_read_confirmed(pid_t pid, const struct py_offsets *off,
			    uint64_t addr, struct strbuf *out)
{
	struct strbuf again = STRBUF_INIT;
	int r = pystring_read(pid, off, addr, out);

	if (!r)
		r = pystring_read(pid, off, addr, &again);
	if (!r && (again.len != out->len ||
		   memcmp(again.buf, out->buf, out->len)))
		r = -EAGAIN;
	strbuf_release(&again);
	if (r)
		strbuf_reset(out);
	return r;
}

/*
 * The bytes object at addr (a line table), read twice: the copies must
 * agree, as the strings of pystring_read_confirmed do.  A table read wrong
 * would give every sample of the code a wrong line, for the object's
 * life.
 */
static int bytes_confirmed(pid_t pid, const struct py_offsets *off,
			   uint64_t addr, unsigned char **buf, size_t *len)
{
	unsigned char *again;
	size_t again_len;
	int r = read_bytes_object(pid, off, addr, buf, len);

	if (r)
		return r;
	r = read_bytes_object(pid, off, addr, &again, &again_len);
	if (!r && (again_len != *len || memcmp(again, *buf, *len)))
		r = -EAGAIN;
	free(again);
	if (r) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return r;
}

static struct pycode *decode(struct pycode_cache *cache, uint64_t addr,
			     const unsigned char *header)
{
	const struct py_offsets *off = cache->off;
	struct pycode *code = xcalloc(1, sizeof(*code));
	struct strbuf sb = STRBUF_INIT;
	long name_at = off->code_qualname != OFF_NONE ? off->code_qualname
						      : off->code_name;

	/*
	 * A frame read after it returned may name a code object freed since
	 * (a module's, once it has run): its memory still reads as one, two
	 * reads alike, but its strings and line table may be other objects'
	 * now (churn.py's exec'd <module>, 3.15: a line 3 of a one-line
	 * module, its line table read from another bytes object).  It must
	 * be alive before its strings are read and after (the header read
	 * again, below).
	 */
	if (!looks_alive(cache, header)) {
		free(code);
		return NULL;
	}
	code->addr = addr;
	code->name_ptr = load_u64(header, name_at);
	code->filename_ptr = load_u64(header, off->code_filename);
	code->linetable_ptr = load_u64(header, off->code_linetable);
	code->firstlineno = get_int(header, off->code_firstlineno);
	code->framesize = frame_words(off, header);
	/* 3.11+: ob_size counts the code units of co_code_adaptive. */
	if (cache->kind == LINETABLE_LOCATIONS && off->var_size != OFF_NONE) {
		int64_t units;

		memcpy(&units, header + off->var_size, sizeof(units));
		if (units > 0 && units < (int64_t)LINETABLE_MAX_BYTES)
			code->code_bytes = (long)units * CODEUNIT_BYTES;
	}
	code->flags = get_int(header, off->code_flags);
	code->last_addrq = -2;
	/*
	 * CPython's compiler gives every code object a name and a first
	 * line of 0 or more: anything else is a torn read, not believed.
	 */
	if (code->firstlineno < 0)
		goto fail;
	/* (Empty as a C string: a NUL read where the first letter was.) */
	if (pystring_read_confirmed(cache->pid, off, code->name_ptr, &sb) ||
	    !sb.buf[0])
		goto fail;
	code->name = strbuf_detach(&sb);
	if (pystring_read_confirmed(cache->pid, off, code->filename_ptr, &sb))
		goto fail;
	code->filename = strbuf_detach(&sb);
	if (bytes_confirmed(cache->pid, off, code->linetable_ptr,
			    &code->linetable, &code->linetable_len))
		goto fail;
	/*
	 * 3.13+: a class call whose __init__ is Python code runs it above a
	 * frame of the interpreter's own, _Py_InitCleanup (Python/
	 * specialize.c), a static code object named "__init__" in file
	 * "__init__" (one string), first line 0, that checks what __init__
	 * returned.  Not the program's: its frames are left out, the time
	 * they take the caller's, at its call.  The compiler never gives a
	 * code object a first line of 0 and its name for its file.
	 */
	code->hidden = !code->firstlineno &&
		       code->name_ptr == code->filename_ptr &&
		       !strcmp(code->name, "__init__");
	/*
	 * The header read again, once its strings are copied: a torn header
	 * is not believed, nor strings it no longer names (importlib gives a
	 * code object loaded from a .pyc its file name after the fact,
	 * _imp._fix_co_filename, freeing the old string, whose memory the
	 * next object takes: an exception's message, read as the file name).
	 */
	if (!header_confirmed(cache, addr, header))
		goto fail;
	return code;
fail:
	strbuf_release(&sb);
	pycode_free(code);
	return NULL;
}

struct pycode *pycode_lookup(struct pycode_cache *cache, uint64_t addr,
			     const unsigned char *header)
{
	const struct py_offsets *off = cache->off;
	long name_at = off->code_qualname != OFF_NONE ? off->code_qualname
						      : off->code_name;
	struct pycode **slot;
	struct pycode *code;

	if (!is_code_type(cache, load_u64(header, off->object_type)))
		return NULL;
	slot = cache_find(cache, addr);
	if (slot) {
		code = *slot;
		if (code->name_ptr == load_u64(header, name_at) &&
		    code->filename_ptr ==
			load_u64(header, off->code_filename) &&
		    code->linetable_ptr ==
			load_u64(header, off->code_linetable) &&
		    code->firstlineno == get_int(header, off->code_firstlineno))
			return code;
		/*
		 * The address now holds another code object (or one of the
		 * reads was torn): an earlier frame of this sample may still
		 * point at the old one.
		 */
		code = decode(cache, addr, header);
		if (!code)
			return NULL;
		retire(cache, *slot);
		*slot = code;
		return code;
	}
	code = decode(cache, addr, header);
	if (code)
		cache_insert(cache, code);
	return code;
}

struct pycode *pycode_peek(struct pycode_cache *cache, uint64_t addr)
{
	struct pycode **slot = cache_find(cache, addr);

	return slot ? *slot : NULL;
}

struct pycode *pycode_known(struct pycode_cache *cache, uint64_t addr)
{
	struct pycode *code = pycode_peek(cache, addr);
	unsigned char *header;

	if (code || !addr)
		return code;
	header = xmalloc(cache->header_len);
	if (!proc_read(cache->pid, addr, header, cache->header_len))
		code = pycode_lookup(cache, addr, header);
	free(header);
	return code;
}

struct pycode *pycode_find_instr(struct pycode_cache *cache, uint64_t instr)
{
	uint64_t at = (uint64_t)cache->off->code_code_adaptive;
	size_t i;

	if (cache->off->code_code_adaptive == OFF_NONE)
		return NULL;
	for (i = 0; i < cache->size; i++) {
		struct pycode *c = cache->slots[i];

		if (c && c->code_bytes && instr >= c->addr + at &&
		    instr - (c->addr + at) < (uint64_t)c->code_bytes)
			return c;
	}
	return NULL;
}

long pycode_framesize(const struct pycode_cache *cache,
		      const unsigned char *header)
{
	return frame_words(cache->off, header);
}

struct pycode *pycode_placeholder(struct pycode_cache *cache, size_t omitted)
{
	struct pycode *code;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	for (i = 0; i < cache->nr_placeholders; i++)
		if (cache->placeholders[i]->addr == omitted)
			return cache->placeholders[i];
	/* Depths that vary without end: start over, as the cache does. */
	if (cache->nr_placeholders >= PLACEHOLDERS_MAX) {
		for (i = 0; i < cache->nr_placeholders; i++)
			pycode_free(cache->placeholders[i]);
		cache->nr_placeholders = 0;
	}
	code = xcalloc(1, sizeof(*code));
	code->addr = omitted;
	strbuf_addf(&sb, "[%zu frame%s not read]", omitted,
		    omitted == 1 ? "" : "s");
	code->name = strbuf_detach(&sb);
	code->filename = xstrdup("");
	code->last_addrq = -2;
	code->placeholder = 1;
	ALLOC_GROW(cache->placeholders, cache->nr_placeholders + 1,
		   cache->alloc_placeholders);
	cache->placeholders[cache->nr_placeholders++] = code;
	return code;
}

struct pycode *pycode_stand_in(const char *name)
{
	struct pycode *code = xcalloc(1, sizeof(*code));

	code->name = xstrdup(name);
	code->filename = xstrdup("");
	code->last_addrq = -2;
	code->placeholder = 1;
	return code;
}

void pycode_stand_in_free(struct pycode *code)
{
	pycode_free(code);
}

int pycode_line(struct pycode_cache *cache, struct pycode *code, long addrq)
{
	if (code->placeholder)
		return 0;
	if (addrq == code->last_addrq)
		return code->last_line;
	code->last_line =
	    linetable_addr2line(cache->kind, code->linetable,
				code->linetable_len, code->firstlineno, addrq);
	/*
	 * Deltas that go below line 0: a line table read torn.  Line 0:
	 * 3.11+ put a module's first instruction (RESUME) there, where a
	 * module that has just started stands: it is at its first line.
	 */
	if (code->last_line <= 0)
		code->last_line = code->firstlineno;
	code->last_addrq = addrq;
	return code->last_line;
}

/* CPython's Objects/lnotab_notes.txt, as in PyCode_Addr2Line (<= 3.9). */
static int lnotab_addr2line(const unsigned char *p, size_t len, int line,
			    long addrq)
{
	long addr = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += p[i];
		if (addr > addrq)
			break;
		line += (signed char)p[i + 1];
	}
	return line;
}

/* 3.10's co_linetable: (bytecode delta, signed line delta) pairs. */
static int linetable310_addr2line(const unsigned char *p, size_t len,
				  int firstlineno, long addrq)
{
	long start, end = 0;
	int line = firstlineno, ar_line = -1;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		start = end;
		end += p[i];
		if ((signed char)p[i + 1] == -128) {
			ar_line = -1;
		} else {
			line += (signed char)p[i + 1];
			ar_line = line;
		}
		if (start <= addrq && addrq < end)
			return ar_line < 0 ? firstlineno : ar_line;
	}
	return firstlineno;
}

static unsigned int scan_varint(const unsigned char **pp,
				const unsigned char *end)
{
	const unsigned char *p = *pp;
	unsigned int val, shift = 0;
	unsigned char b;

	if (p >= end)
		return 0;
	b = *p++;
	val = b & 63;
	while ((b & 64) && p < end && shift < 24) {
		b = *p++;
		shift += 6;
		val |= (unsigned int)(b & 63) << shift;
	}
	*pp = p;
	return val;
}

static int scan_signed_varint(const unsigned char **pp,
			      const unsigned char *end)
{
	unsigned int u = scan_varint(pp, end);

	return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

/* CPython's Objects/locations.md (3.11+). */
static int locations_addr2line(const unsigned char *p, size_t len,
			       int firstlineno, long addrq)
{
	const unsigned char *end = p + len;
	long start, stop = 0;
	int line = firstlineno;

	while (p < end) {
		int code = (*p >> 3) & 15;
		int units = (*p & 7) + 1;
		const unsigned char *q = p + 1;
		int delta = 0, has_line = 1;

		switch (code) {
		case 15: /* PY_CODE_LOCATION_INFO_NONE */
			has_line = 0;
			break;
		case 14: /* _LONG */
		case 13: /* _NO_COLUMNS */
			delta = scan_signed_varint(&q, end);
			break;
		case 10: /* _ONE_LINE0..2 */
		case 11:
		case 12:
			delta = code - 10;
			break;
		default: /* short forms: same line */
			break;
		}
		line += delta;
		start = stop;
		stop += (long)units * CODEUNIT_BYTES;
		if (start <= addrq && addrq < stop)
			return has_line ? line : firstlineno;
		/* Skip to the next entry: the one with the high bit set. */
		p++;
		while (p < end && !(*p & 128))
			p++;
	}
	return firstlineno;
}

int linetable_addr2line(enum linetable_kind kind, const unsigned char *table,
			size_t len, int firstlineno, long addrq)
{
	if (addrq < 0 || !table)
		return firstlineno;
	switch (kind) {
	case LINETABLE_LNOTAB:
		return lnotab_addr2line(table, len, firstlineno, addrq);
	case LINETABLE_310:
		return linetable310_addr2line(table, len, firstlineno, addrq);
	case LINETABLE_LOCATIONS:
		return locations_addr2line(table, len, firstlineno, addrq);
	}
	return firstlineno;
}
