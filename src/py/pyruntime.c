/* SPDX-License-Identifier: MIT */
/* Finding a target's CPython interpreter: its runtime symbols, version and
 * offsets. */
#include "py/pyruntime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/access.h"
#include "sys/elfsym.h"
#include "sys/proc.h"
#include "util.h"

/* Oldest CPython whose structs spyc knows (the first generated table). */
#define OLDEST_SUPPORTED 0x03060000UL
/* 3.13 put _Py_DebugOffsets at the start of _PyRuntime (pycore_runtime.h). */
#define DEBUG_OFFSETS_SINCE 0x030D0000UL
#define DEBUG_COOKIE "xdebugpy"
/* No struct spyc reads is anywhere near this big; larger is garbage. */
#define PLAUSIBLE_STRUCT_SIZE (1L << 20)

static int fail(struct pyruntime *rt, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct pyruntime *rt, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rt->message, sizeof(rt->message), fmt, ap);
	va_end(ap);
	return status;
}

static int no_permission(struct pyruntime *rt)
{
	access_explain(rt->pid, ACCESS_READ, rt->message, sizeof(rt->message));
	return PYRT_NO_PERMISSION;
}

unsigned long py_version_parse(const char *s)
{
	unsigned int major, minor, micro, serial = 0;
	unsigned int level = 0xF;
	int n = 0;

	if (sscanf(s, "%u.%u.%u%n", &major, &minor, &micro, &n) != 3)
		return 0;
	if (major > 255 || minor > 255 || micro > 255)
		return 0;
	s += n;
	if (*s == 'a' || *s == 'b') {
		level = *s == 'a' ? 0xA : 0xB;
		serial = (unsigned int)strtoul(s + 1, NULL, 10);
	} else if (!strncmp(s, "rc", 2)) {
		level = 0xC;
		serial = (unsigned int)strtoul(s + 2, NULL, 10);
	}
	return (unsigned long)major << 24 | (unsigned long)minor << 16 |
	       (unsigned long)micro << 8 | level << 4 | (serial & 0xF);
}

static void version_format(unsigned long hex, char *buf, size_t size)
{
	static const char *const levels[16] = {
	    [0xA] = "a", [0xB] = "b", [0xC] = "rc"};
	unsigned int level = (hex >> 4) & 0xF;

	if (level == 0xF || !levels[level])
		snprintf(buf, size, "%lu.%lu.%lu", hex >> 24,
			 (hex >> 16) & 0xFF, (hex >> 8) & 0xFF);
	else
		snprintf(buf, size, "%lu.%lu.%lu%s%lu", hex >> 24,
			 (hex >> 16) & 0xFF, (hex >> 8) & 0xFF, levels[level],
			 hex & 0xF);
}

const struct py_offsets *
py_offsets_select(const struct py_offsets *const *tables, size_t n,
		  unsigned long hexversion, int free_threaded)
{
	const struct py_offsets *best = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct py_offsets *t = tables[i];

		if (hexversion < t->first_hex || hexversion > t->last_hex ||
		    !t->free_threaded != !free_threaded)
			continue;
		if (!best || t->last_hex - t->first_hex <
				 best->last_hex - best->first_hex)
			best = t;
	}
	return best;
}

int py_offsets_from_debug(struct py_offsets *out, const struct py_offsets *base,
			  const unsigned char *raw, size_t len)
{
	uint64_t version;
	size_t i;

	if (base->debug_size == OFF_NONE || !base->debug_fields ||
	    len < (size_t)base->debug_size || memcmp(raw, DEBUG_COOKIE, 8))
		return -1;
	*out = *base;
	memcpy(&version, raw + base->debug_version_at, sizeof(version));
	out->hexversion = (unsigned long)version;
	out->first_hex = out->last_hex = (unsigned long)version;
	out->version = NULL;
	/* Not published: keep the walk on paths that need only what is. */
	out->tstate_datastack_top = OFF_NONE;
	out->unicode_data = OFF_NONE;
	out->compact_size = OFF_NONE;
	/* Nor where objects keep their attributes: no threading names. */
	out->frame_localsplus = OFF_NONE;
	out->iframe_localsplus = OFF_NONE;
	out->type_flags = OFF_NONE;
	for (i = 0; i < base->nr_debug_fields; i++) {
		const struct py_debug_field *f = &base->debug_fields[i];
		uint64_t v;

		if (f->debug_at < 0 || (size_t)f->debug_at + 8 > len)
			return -1;
		memcpy(&v, raw + f->debug_at, sizeof(v));
		if (v >= (uint64_t)PLAUSIBLE_STRUCT_SIZE)
			return -1;
		memcpy((char *)out + f->field_at, &(long){(long)v},
		       sizeof(long));
	}
	/* Sizes first; every offset must lie inside its struct. */
	if (out->tstate_next >= out->tstate_size ||
	    out->tstate_current_frame >= out->tstate_size ||
	    out->iframe_previous >= out->iframe_size ||
	    out->iframe_code >= out->iframe_size ||
	    out->code_filename >= out->code_size ||
	    out->code_name >= out->code_size ||
	    out->code_linetable >= out->code_size ||
	    (out->tstate_base_frame != OFF_NONE &&
	     out->tstate_base_frame + 8 > out->tstate_size))
		return -1;
	/* The target gives the GIL's fields from the interpreter's start. */
	if (out->interp_gil != OFF_NONE && out->gil_locked >= out->interp_gil &&
	    out->gil_last_holder >= out->interp_gil) {
		out->gil_locked -= out->interp_gil;
		out->gil_last_holder -= out->interp_gil;
	}
	out->interp_gil_ptr = OFF_NONE;
	if (out->compact_size == OFF_NONE)
		out->compact_size =
		    out->ascii_size + (base->compact_size - base->ascii_size);
	return 0;
}

static int lib_version_prefix(const char *path, char *buf, size_t size)
{
	const char *base = strrchr(path, '/');
	const char *p;
	unsigned int major, minor;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	if (!p || sscanf(p, "python%u.%u", &major, &minor) != 2)
		return -1;
	snprintf(buf, size, "%u.%u.", major, minor);
	return 0;
}

/* Start address of path's first mapping (file offset 0), or 0. */
static uint64_t map_base(const struct proc_maps *maps, const char *path)
{
	size_t i;

	for (i = 0; i < maps->nr; i++)
		if (maps->maps[i].path && !strcmp(maps->maps[i].path, path) &&
		    maps->maps[i].offset == 0)
			return maps->maps[i].start;
	return 0;
}

/*
 * Before 3.11 there is no Py_Version, and compilers fold the version
 * string into code.  But sys.version, built from Py_GetVersion() at
 * start-up, sits in the binary's data: "3.9.18 (main, ...".  Scan the
 * binary's writable mappings (and the anonymous .bss after them) of the
 * running target for it.  Returns 0 with the version in buf, -EPERM if
 * spyc may not read the target, or -ENOENT.
 */
static int scan_data_for_version(pid_t pid, const struct proc_maps *maps,
				 const char *path, const char *want_prefix,
				 char *buf, size_t size)
{
	static unsigned char chunk[65536 + 32];
	size_t i;
	int found = 0, in_binary = 0, refused = 0;

	for (i = 0; i < maps->nr && found < 2; i++) {
		const struct proc_map *m = &maps->maps[i];
		uint64_t at;

		if (m->path && !strcmp(m->path, path)) {
			in_binary = 1;
		} else if (m->path || !in_binary) {
			in_binary = 0;
			continue;
		} else {
			in_binary = 0; /* the .bss right after the binary */
		}
		if (m->perms[1] != 'w' || m->end - m->start > (64u << 20))
			continue;
		for (at = m->start; at < m->end && found < 2; at += 65536) {
			size_t len = m->end - at < sizeof(chunk)
					 ? (size_t)(m->end - at)
					 : sizeof(chunk);
			size_t j;

			int r = proc_read(pid, at, chunk, len);

			if (r) {
				refused |= r == -EPERM;
				continue;
			}
			for (j = 0; j + 8 < len; j++) {
				size_t k = j;
				int wanted;

				if ((chunk[j] != '2' && chunk[j] != '3') ||
				    chunk[j + 1] != '.' ||
				    (j && chunk[j - 1] != '\0'))
					continue;
				while (k < len && k - j < 24 &&
				       chunk[k] != ' ' && chunk[k])
					k++;
				if (k + 1 >= len || chunk[k] != ' ' ||
				    chunk[k + 1] != '(' || k - j >= size ||
				    !is_version_string((char *)chunk + j,
						       k - j))
					continue;
				wanted =
				    want_prefix &&
				    !strncmp((char *)chunk + j, want_prefix,
					     strlen(want_prefix));
				if (found && !wanted)
					continue;
				memcpy(buf, chunk + j, k - j);
				buf[k - j] = '\0';
				found = wanted || !want_prefix ? 2 : 1;
				if (found == 2)
					break;
			}
		}
	}
	return found ? 0 : refused ? -EPERM : -ENOENT;
}

/*
 * Is path (as pid sees it) linked against libpython, which the dynamic
 * loader has not mapped yet?  That is a Python process just starting.
 */
static int needs_libpython(pid_t pid, const struct proc_maps *maps,
			   const char *path)
{
	struct elfsym es;
	char *file = proc_mapped_file(pid, maps, path);
	int saved_quiet = quiet, needs = 0;

	quiet = 1;
	if (file && !elfsym_open(&es, file)) {
		needs = elfsym_needs(&es, "libpython");
		elfsym_close(&es);
	}
	quiet = saved_quiet;
	free(file);
	return needs;
}

static int is_libpython(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython", 9) && strstr(base, ".so");
}

/*
 * The file mapped at path left its path (replaced or deleted since the
 * target mapped it), and spyc may not open the mapping's own.
 */
static int file_gone(struct pyruntime *rt, const char *path)
{
	size_t len = strlen(path) - strlen(" (deleted)");

	return fail(rt, PYRT_NO_PERMISSION,
		    "pid %d's %.*s was replaced or deleted on disk after it "
		    "was loaded: spyc reads the loaded file through "
		    "/proc/%d/map_files, which needs root (CAP_SYS_ADMIN)",
		    (int)rt->pid, (int)len, path, (int)rt->pid);
}

/*
 * The target runs path, which spyc may not read (a non-root spyc given
 * CAP_SYS_PTRACE alone reads memory, not files under a directory the
 * target's user keeps to itself).
 */
static int file_unreadable(struct pyruntime *rt, const char *path)
{
	return fail(rt, PYRT_NO_PERMISSION,
		    "cannot read %s, which pid %d has mapped: %s; run spyc "
		    "as root or as the target's user, or give it "
		    "CAP_DAC_READ_SEARCH beside CAP_SYS_PTRACE (setcap "
		    "cap_sys_ptrace,cap_dac_read_search+ep spyc)",
		    path, (int)rt->pid, strerror(errno));
}

/*
 * Look for the interpreter in one mapped file.  Returns 1 if found (rt
 * filled), 0 if the file holds no interpreter, or a negative status.
 */
static int probe_binary(struct pyruntime *rt, const struct proc_maps *maps,
			const char *path, int shared)
{
	struct elfsym es;
	char *file = proc_mapped_file(rt->pid, maps, path);
	uint64_t runtime = 0, head = 0, current = 0, pyver = 0, code = 0;
	uint64_t base, bias;
	int ret = 0, saved_quiet = quiet;
	char prefix[16];
	static const char *const gil_names[] = {
	    "gil_locked", "gil_last_holder", "gil_mutex",
	    "gil_cond",	  "switch_mutex",    "switch_cond"};
	uint64_t *gil_addrs[] = {&rt->gil_locked,  &rt->gil_last_holder,
				 &rt->gil_sync[0], &rt->gil_sync[1],
				 &rt->gil_sync[2], &rt->gil_sync[3]};
	size_t i;

	if (!file)
		return file_gone(rt, path);
	if (faccessat(AT_FDCWD, file, R_OK, AT_EACCESS) &&
	    (errno == EACCES || errno == EPERM)) {
		ret = file_unreadable(rt, path);
		goto out;
	}
	quiet = 1;
	ret = elfsym_open(&es, file);
	quiet = saved_quiet;
	if (ret < 0) {
		ret = 0;
		goto out;
	}
	elfsym_lookup(&es, "_PyRuntime", &runtime);
	elfsym_lookup(&es, "interp_head", &head);
	elfsym_lookup(&es, "_PyThreadState_Current", &current);
	if (!runtime && !head && !current)
		goto out_close;
	elfsym_lookup(&es, "Py_Version", &pyver);
	elfsym_lookup(&es, "PyCode_Type", &code);
	/* 3.6's ceval_gil.h: static, so only in .symtab. */
	for (i = 0; i < ARRAY_SIZE(gil_names); i++)
		elfsym_lookup(&es, gil_names[i], gil_addrs[i]);
	/* And gcmodule.c's: only where the GIL's were (3.6). */
	if (rt->gil_locked)
		elfsym_lookup(&es, "collecting", &rt->gc_collecting);

	base = map_base(maps, path);
	bias = es.is_exec ? 0 : base - es.first_vaddr;
	snprintf(rt->binary, sizeof(rt->binary), "%s", path);
	rt->base = base;
	rt->shared = shared;
	rt->runtime = runtime ? runtime + bias : 0;
	rt->interp_head = head ? head + bias : 0;
	rt->tstate_current = current ? current + bias : 0;
	rt->code_type = code ? code + bias : 0;
	for (i = 0; i < ARRAY_SIZE(gil_addrs); i++)
		if (*gil_addrs[i])
			*gil_addrs[i] += bias;
	if (rt->gc_collecting)
		rt->gc_collecting += bias;

	if (pyver) {
		uint64_t v = 0;
		int r = proc_read_stable(rt->pid, pyver + bias, &v, sizeof(v));

		if (r == -EPERM) {
			ret = no_permission(rt);
			goto out_close;
		}
		if (r == 0)
			rt->hexversion = (unsigned long)(v & 0xFFFFFFFFUL);
	}
	if (!rt->hexversion) {
		char vs[32];
		const char *want;
		int r;

		if (lib_version_prefix(path, prefix, sizeof(prefix)))
			prefix[0] = '\0';
		want = prefix[0] ? prefix : NULL;
		r = scan_data_for_version(rt->pid, maps, path, want, vs,
					  sizeof(vs));
		if (r == -EPERM) {
			ret = no_permission(rt);
			goto out_close;
		}
		if (!r || !elfsym_find_version(&es, want, vs, sizeof(vs)))
			rt->hexversion = py_version_parse(vs);
	}
	ret = 1;
out_close:
	elfsym_close(&es);
out:
	free(file);
	return ret;
}

/*
 * Offsets read through a _Py_DebugOffsets layout spyc only assumes must
 * prove themselves: the first thread state must point back at its
 * interpreter.  1 if they do not (or cannot be checked yet: 0).
 */
static int layout_mismatch(const struct pyruntime *rt,
			   const struct py_offsets *off)
{
	uint64_t interp = 0, tstate = 0, back = 0;

	if (proc_read(rt->pid,
		      rt->runtime + (uint64_t)off->runtime_interpreters_head,
		      &interp, sizeof(interp)) ||
	    !interp)
		return 0;
	if (proc_read(rt->pid, interp + (uint64_t)off->interp_threads_head,
		      &tstate, sizeof(tstate)) ||
	    !tstate)
		return 0;
	if (proc_read(rt->pid, tstate + (uint64_t)off->tstate_interp, &back,
		      sizeof(back)))
		return 1;
	return back != interp;
}

const struct py_offsets *
py_offsets_newest_upto(const struct py_offsets *const *tables, size_t n,
		       unsigned long hexversion, int free_threaded)
{
	const struct py_offsets *best = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct py_offsets *t = tables[i];

		if (t->first_hex <= hexversion &&
		    !t->free_threaded == !free_threaded &&
		    (!best || t->first_hex > best->first_hex))
			best = t;
	}
	return best;
}

/*
 * The minor versions spyc reads free-threaded builds of, as "3.14t": of
 * the tables that begin at hexversion cap or before.
 */
static void free_threaded_tables(char *buf, size_t size, unsigned long cap)
{
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < py_offset_tables_count && len + 16 < size; i++) {
		const struct py_offsets *t = py_offset_tables[i];

		if (t->free_threaded && t->first_hex <= cap)
			len += (size_t)snprintf(buf + len, size - len,
						"%s%lu.%lut", len ? ", " : "",
						t->first_hex >> 24,
						(t->first_hex >> 16) & 0xFF);
	}
	if (!len)
		snprintf(buf, size, "none");
}

/*
 * SPYC_OFFSET_TABLES_UPTO=X.Y, with SPYC_NO_OFFSET_TABLES: use no table
 * newer than X.Y for the layout of _Py_DebugOffsets, as a spyc built
 * before X.Y+1 came out would (how the tests read 3.15 as a future
 * version).  Returns the highest hexversion allowed: hexversion itself
 * when unset.
 */
static unsigned long tables_cap(unsigned long hexversion)
{
	const char *upto = getenv("SPYC_OFFSET_TABLES_UPTO");
	unsigned int major, minor;
	unsigned long cap;

	if (!upto || sscanf(upto, "%u.%u", &major, &minor) != 2 ||
	    major > 255 || minor > 255)
		return hexversion;
	cap = ((unsigned long)major << 24) | ((unsigned long)minor << 16) |
	      0xffffUL;
	return cap < hexversion ? cap : hexversion;
}

static int choose_offsets(struct pyruntime *rt)
{
	const struct py_offsets *table = NULL, *base;
	const char *no_tables = getenv("SPYC_NO_OFFSET_TABLES");
	unsigned char raw[4096];
	int r;

	int use_tables = !no_tables || !*no_tables || !strcmp(no_tables, "0");
	uint64_t free_threaded;

	/* Free-threaded builds began with 3.13, which says which it is. */
	if (use_tables)
		table =
		    py_offsets_select(py_offset_tables, py_offset_tables_count,
				      rt->hexversion, 0);
	if (rt->hexversion < DEBUG_OFFSETS_SINCE) {
		if (!table)
			return fail(
			    rt, PYRT_UNSUPPORTED,
			    "Python %s in pid %d is not supported: "
			    "spyc has no offset table for it%s",
			    rt->version, (int)rt->pid,
			    no_tables ? " (SPYC_NO_OFFSET_TABLES is set)" : "");
		rt->off = table;
		return PYRT_OK;
	}

	/*
	 * 3.13+: the target publishes its offsets; read and use them.  The
	 * layout of _Py_DebugOffsets itself changes between minor versions
	 * (3.14 and 3.15 added fields mid-struct), so without a table for
	 * the target read it as the newest table not newer than the target
	 * lays it out.
	 */
	base = table ? table
		     : py_offsets_newest_upto(py_offset_tables,
					      py_offset_tables_count,
					      tables_cap(rt->hexversion), 0);
	if (!base)
		base = py_offsets_newest_upto(py_offset_tables,
					      py_offset_tables_count,
					      tables_cap(rt->hexversion), 1);
	if (!base)
		goto unsupported;
	if (base->debug_size == OFF_NONE ||
	    (size_t)base->debug_size > sizeof(raw))
		goto unsupported;
	r = proc_read_stable(rt->pid, rt->runtime, raw,
			     (size_t)base->debug_size);
	if (r == -EPERM)
		return no_permission(rt);
	/* The loader may not have mapped the data segment yet. */
	if (r < 0)
		return fail(rt, r == -ESRCH ? PYRT_NO_PROCESS : PYRT_NOT_READY,
			    "cannot read _PyRuntime of pid %d: %s",
			    (int)rt->pid, strerror(-r));
	/*
	 * No cookie yet: the loader has reserved libpython's span but not
	 * mapped its data segment there (what is read is other bytes of
	 * the file, or zeros), and the interpreter has not started.
	 */
	if (memcmp(raw, DEBUG_COOKIE, 8))
		return fail(rt, PYRT_NOT_READY,
			    "pid %d's _PyRuntime holds no _Py_DebugOffsets "
			    "(not loaded yet, or not CPython)",
			    (int)rt->pid);
	/*
	 * Whether the target is free-threaded is its own word, not its file
	 * name's: _Py_DebugOffsets.free_threaded.  Its layout of
	 * _Py_DebugOffsets is that of the build with the GIL (the struct is
	 * the same; only its values differ), but every object it describes
	 * is laid out anew: read it with a free-threaded table of the same
	 * minor version, and refuse a version no such table was made and
	 * tested for (a newer one).
	 */
	memcpy(&free_threaded, raw + base->debug_free_threaded_at,
	       sizeof(free_threaded));
	if (free_threaded) {
		char known[64];

		rt->free_threaded = 1;
		table = use_tables ? py_offsets_select(py_offset_tables,
						       py_offset_tables_count,
						       rt->hexversion, 1)
				   : NULL;
		base = table ? table
			     : py_offsets_newest_upto(
				   py_offset_tables, py_offset_tables_count,
				   tables_cap(rt->hexversion), 1);
		if (!base ||
		    (base->first_hex >> 16) != (rt->hexversion >> 16)) {
			free_threaded_tables(known, sizeof(known),
					     tables_cap(rt->hexversion));
			return fail(rt, PYRT_UNSUPPORTED,
				    "Python %s in pid %d is a free-threaded "
				    "build, which spyc reads only for %s%s",
				    rt->version, (int)rt->pid, known,
				    no_tables && !use_tables
					? " (SPYC_NO_OFFSET_TABLES is set)"
					: "");
		}
		if ((size_t)base->debug_size > sizeof(raw))
			goto unsupported;
	}
	if (py_offsets_from_debug(&rt->debug_off, base, raw,
				  (size_t)base->debug_size))
		goto unsupported;
	if (!table && layout_mismatch(rt, &rt->debug_off))
		return fail(rt, PYRT_UNSUPPORTED,
			    "Python %s in pid %d is not supported: its "
			    "_Py_DebugOffsets layout is newer than this spyc "
			    "knows (newest: %s)",
			    rt->version, (int)rt->pid, base->version);
	rt->debug_off.version = rt->version;
	rt->off = &rt->debug_off;
	rt->from_debug_offsets = 1;
	if (table) {
		size_t i;

		/*
		 * The table of the target's minor version reads any point
		 * release whose published offsets are the table's: one
		 * that moved any of them moved fields it does not publish
		 * too, which the table would read wrong.
		 */
		for (i = 0; i < table->nr_debug_fields; i++) {
			const struct py_debug_field *f =
			    &table->debug_fields[i];
			long mine, theirs;

			memcpy(&mine, (const char *)table + f->field_at,
			       sizeof(long));
			memcpy(&theirs,
			       (const char *)&rt->debug_off + f->field_at,
			       sizeof(long));
			if (mine != theirs)
				return fail(
				    rt, PYRT_UNSUPPORTED,
				    "Python %s in pid %d is not supported: "
				    "its _Py_DebugOffsets give %s as %ld, "
				    "the offset table for %s as %ld (a "
				    "changed layout); it needs a table made "
				    "from its own headers (make offsets)",
				    rt->version, (int)rt->pid, f->name, theirs,
				    table->version, mine);
		}
		rt->off = table;
		rt->from_debug_offsets = 0;
	} else {
		snprintf(rt->notice, sizeof(rt->notice),
			 "no offset table for CPython %s; using the offsets "
			 "it publishes (_Py_DebugOffsets), which do not say "
			 "where threading keeps thread names: only the OS's "
			 "are shown",
			 rt->version);
	}
	return PYRT_OK;
unsupported:
	if (!base)
		return fail(rt, PYRT_UNSUPPORTED,
			    "Python %s in pid %d is not supported: it has no "
			    "_Py_DebugOffsets that this spyc can read",
			    rt->version, (int)rt->pid);
	return fail(rt, PYRT_UNSUPPORTED,
		    "Python %s in pid %d is not supported: its "
		    "_Py_DebugOffsets are not laid out as %s's, the newest "
		    "this spyc knows; it needs an offset table made from "
		    "%lu.%lu's headers (make offsets)",
		    rt->version, (int)rt->pid, base->version,
		    rt->hexversion >> 24, (rt->hexversion >> 16) & 0xff);
}

int pyruntime_find(struct pyruntime *rt, pid_t pid)
{
	struct proc_maps maps = {0};
	char exe[4096];
	size_t i;
	int ret, found = 0;

	memset(rt, 0, sizeof(*rt));
	rt->pid = pid;
	if (!proc_exists(pid))
		return fail(rt, PYRT_NO_PROCESS, "no process with pid %d",
			    (int)pid);
	switch (proc_kind(pid)) {
	case PROC_ZOMBIE:
		return fail(rt, PYRT_NO_PROCESS,
			    "pid %d has exited (a zombie its parent has not "
			    "reaped): there is nothing to sample",
			    (int)pid);
	case PROC_KERNEL_THREAD:
		return fail(rt, PYRT_NOT_PYTHON,
			    "pid %d is a kernel thread, not a Python process",
			    (int)pid);
	default:
		break;
	}
	ret = proc_maps_load(&maps, pid);
	if (ret == -EACCES || ret == -EPERM)
		return no_permission(rt);
	if (ret < 0)
		return fail(rt, PYRT_NO_PROCESS, "cannot read pid %d: %s",
			    (int)pid, strerror(-ret));
	/* Only a process that is exiting has no mappings left. */
	if (!maps.nr) {
		proc_maps_release(&maps);
		return fail(rt, PYRT_NO_PROCESS,
			    "pid %d is exiting: there is nothing to sample",
			    (int)pid);
	}
	if (proc_exe(pid, exe, sizeof(exe)))
		exe[0] = '\0';
	rt->exe_inode = proc_exe_inode(pid);
	rt->arg_start = proc_arg_start(pid);
	rt->start_time = proc_start_time(pid);

	for (i = 0; i < maps.nr && !found; i++) {
		const char *path = maps.maps[i].path;

		if (!path || maps.maps[i].offset || !is_libpython(path))
			continue;
		found = probe_binary(rt, &maps, path, 1);
	}
	if (!found && exe[0])
		found = probe_binary(rt, &maps, exe, 0);
	if (found < 0) {
		ret = found;
		goto out;
	}
	if (!found && exe[0] && needs_libpython(pid, &maps, exe)) {
		ret = fail(rt, PYRT_NOT_READY,
			   "pid %d (%s) has not loaded libpython yet", (int)pid,
			   exe);
		goto out;
	}
	/* Its maps read as it exited (none of its files): no answer. */
	if (!found && (!proc_exists(pid) || proc_kind(pid) == PROC_ZOMBIE)) {
		ret = fail(rt, PYRT_NO_PROCESS, "pid %d exited", (int)pid);
		goto out;
	}
	if (!found) {
		ret = fail(rt, PYRT_NOT_PYTHON,
			   "pid %d (%s) is not a Python process: no libpython "
			   "is mapped and the executable has no _PyRuntime or "
			   "interp_head symbol",
			   (int)pid, exe[0] ? exe : "executable unknown");
		goto out;
	}
	if (!rt->hexversion) {
		ret = fail(rt, PYRT_NOT_READY,
			   "cannot tell which Python version %s is (pid %d)",
			   rt->binary, (int)pid);
		goto out;
	}
	version_format(rt->hexversion, rt->version, sizeof(rt->version));
	if (rt->hexversion < OLDEST_SUPPORTED) {
		ret = fail(rt, PYRT_UNSUPPORTED,
			   "Python %s in pid %d is not supported (spyc reads "
			   "CPython 3.6 and later)",
			   rt->version, (int)pid);
		goto out;
	}
	if (rt->hexversion >= 0x03070000UL && !rt->runtime) {
		ret = fail(rt, PYRT_UNSUPPORTED,
			   "Python %s in pid %d has no _PyRuntime symbol",
			   rt->version, (int)pid);
		goto out;
	}
	ret = choose_offsets(rt);
	if (ret)
		goto out;
	/* A read now tells us early whether we may read at all. */
	{
		uint64_t interp;

		ret = pyruntime_interp_head(rt, &interp);
		if (ret == -EPERM)
			ret = no_permission(rt);
		else if (ret == -ESRCH)
			ret = fail(rt, PYRT_NO_PROCESS, "pid %d exited",
				   (int)pid);
		else
			ret = PYRT_OK;
	}
out:
	proc_maps_release(&maps);
	return ret;
}

int pyruntime_still_valid(const struct pyruntime *rt)
{
	struct proc_maps maps = {0};
	uint64_t inode = proc_exe_inode(rt->pid);
	uint64_t args = proc_arg_start(rt->pid);
	uint64_t base;

	/* No memory (an exit under way) shows no executable, no arguments. */
	if ((!inode && rt->exe_inode) || (!args && rt->arg_start))
		return -1;
	if (inode != rt->exe_inode || args != rt->arg_start)
		return 0;
	if (proc_maps_load(&maps, rt->pid))
		return -1;
	base = map_base(&maps, rt->binary);
	proc_maps_release(&maps);
	if (base == rt->base)
		return 1;
	/*
	 * Maps read as an exit took the memory away show nothing mapped,
	 * though the executable and arguments were still there a moment
	 * before: look again, or that exit would pass for an exec.
	 */
	if (!base && (!proc_exe_inode(rt->pid) || !proc_arg_start(rt->pid)))
		return -1;
	return 0;
}

int pyruntime_interp_head(const struct pyruntime *rt, uint64_t *interp)
{
	uint64_t tstate = 0;
	int r;

	*interp = 0;
	if (rt->runtime)
		return proc_read(
		    rt->pid,
		    rt->runtime + (uint64_t)rt->off->runtime_interpreters_head,
		    interp, sizeof(*interp));
	if (rt->interp_head)
		return proc_read(rt->pid, rt->interp_head, interp,
				 sizeof(*interp));
	/* A stripped 3.6: reach the interpreter through the GIL holder. */
	r = proc_read(rt->pid, rt->tstate_current, &tstate, sizeof(tstate));
	if (r || !tstate)
		return r;
	return proc_read(rt->pid, tstate + (uint64_t)rt->off->tstate_interp,
			 interp, sizeof(*interp));
}
