/* SPDX-License-Identifier: MIT */
/* Native stacks: stopping a thread briefly, unwinding it with libunwind, naming
 * frames with libdw, and merging with Python frames. */
#include "sys/native.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind-ptrace.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/access.h"
#include "sys/proc.h"
#include "util.h"
#include "sys/faults.h" /* last: make FAULTS=1 wraps ptrace */

/* Bytes of a stopped thread's stack copied in one read: most unwinds need no
 * more. */
#define STACK_COPY_BYTES (64u << 10)
/* x86-64 SysV: leaf functions may use 128 bytes below the stack pointer. */
#define RED_ZONE 128
/* Addresses in no known module make spyc re-read the maps at most this often.
 */
#define REREPORT_NS 1000000000ULL
/*
 * Threads tried, and tries of each, before the kernel is taken to refuse
 * spyc the target's threads (a refusal is the same every time; a thread
 * may be exiting).
 */
#define PROBE_TASKS 8
#define PROBE_TRIES 4
/* Interrupts asked of a seized thread before it is taken for gone. */
#define INTERRUPT_TRIES 4
#ifdef HAVE_DEMANGLE
/* Where libstdc++ demangles C++ names (C ABI, so C can call it). */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len,
			    int *status);
#endif

/* libunwind hands accessors the UPT context: ours is found here. */
static struct native_unwinder *active;

static struct native_thread *find_thread(struct native_unwinder *nu, long tid)
{
	size_t i;

	for (i = 0; i < nu->nr_threads; i++)
		if (nu->threads[i].tid == tid)
			return &nu->threads[i];
	return NULL;
}

static int read_word(struct native_unwinder *nu, uint64_t addr, uint64_t *val)
{
	struct native_thread *t = nu->current;

	/* Unwinders chase garbage too: compare without overflow. */
	if (t && addr >= t->stack_lo && t->stack_len >= 8 &&
	    addr - t->stack_lo <= t->stack_len - 8) {
		memcpy(val, t->stack + (addr - t->stack_lo), 8);
		return 0;
	}
	return unwindmem_read(&nu->mem, addr, val);
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
		      int write, void *arg)
{
	uint64_t v;

	if (write || !active)
		return -UNW_EINVAL;
	if (read_word(active, addr, &v))
		return -UNW_EINVAL;
	*val = v;
	return 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
		      int write, void *arg)
{
	const struct user_regs_struct *r;

	if (write || !active || !active->current)
		return -UNW_EBADREG;
	r = &active->current->regs;
	switch (reg) {
	case UNW_X86_64_RAX:
		*val = r->rax;
		break;
	case UNW_X86_64_RDX:
		*val = r->rdx;
		break;
	case UNW_X86_64_RCX:
		*val = r->rcx;
		break;
	case UNW_X86_64_RBX:
		*val = r->rbx;
		break;
	case UNW_X86_64_RSI:
		*val = r->rsi;
		break;
	case UNW_X86_64_RDI:
		*val = r->rdi;
		break;
	case UNW_X86_64_RBP:
		*val = r->rbp;
		break;
	case UNW_X86_64_RSP:
		*val = r->rsp;
		break;
	case UNW_X86_64_R8:
		*val = r->r8;
		break;
	case UNW_X86_64_R9:
		*val = r->r9;
		break;
	case UNW_X86_64_R10:
		*val = r->r10;
		break;
	case UNW_X86_64_R11:
		*val = r->r11;
		break;
	case UNW_X86_64_R12:
		*val = r->r12;
		break;
	case UNW_X86_64_R13:
		*val = r->r13;
		break;
	case UNW_X86_64_R14:
		*val = r->r14;
		break;
	case UNW_X86_64_R15:
		*val = r->r15;
		break;
	case UNW_X86_64_RIP:
		*val = r->rip;
		break;
	default:
		return -UNW_EBADREG;
	}
	return 0;
}

/* libunwind's, exported though not declared: ip in a search table. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
					      unw_word_t ip, unw_dyn_info_t *di,
					      unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* Whether an .eh_frame_hdr encoding reads 4 bytes (what ld writes). */
static int four_bytes(unsigned char enc)
{
	return (enc & 0x0f) == DW_EH_PE_udata4 ||
	       (enc & 0x0f) == DW_EH_PE_sdata4;
}

/*
 * The binary-search table of the module mapped at ip, found in the
 * target's memory rather than in the module's file: its ELF and program
 * headers (in its first mapping), then PT_GNU_EH_FRAME's .eh_frame_hdr.
 * For a module whose file libunwind cannot open at the path maps gives:
 * one replaced on disk since it was loaded (an upgrade under a running
 * job: maps says "(deleted)"), or one out of spyc's reach.  Returns 0,
 * or -1 if there is no such table.
 */
static int table_from_memory(struct native_unwinder *nu, uint64_t ip,
			     unw_dyn_info_t *di)
{
	const struct proc_maps *maps = &nu->mem.ro;
	const struct proc_map *m = proc_maps_find(maps, ip), *first = NULL;
	Elf64_Phdr ph[64];
	Elf64_Ehdr eh;
	const Elf64_Phdr *text = NULL, *hdr_ph = NULL;
	uint64_t load_base, hdr;
	unsigned char head[12];
	uint32_t fdes;
	size_t i;

	if (!m || !m->inode)
		return -1;
	/* The module's first mapping: of its file's start, lowest. */
	for (i = 0; i < maps->nr; i++)
		if (maps->maps[i].inode == m->inode && !maps->maps[i].offset &&
		    maps->maps[i].path &&
		    !strcmp(maps->maps[i].path, m->path)) {
			first = &maps->maps[i];
			break;
		}
	if (!first || proc_read(nu->pid, first->start, &eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > sizeof(ph) / sizeof(ph[0]) ||
	    eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr) >
		first->end - first->start ||
	    proc_read(nu->pid, first->start + eh.e_phoff, ph,
		      eh.e_phnum * sizeof(Elf64_Phdr)))
		return -1;
	/* Where the segment of file offset 0 was put: the load bias. */
	for (i = 0; i < eh.e_phnum && ph[i].p_type != PT_LOAD; i++)
		;
	if (i == eh.e_phnum)
		return -1;
	load_base = first->start - (ph[i].p_vaddr & ~0xfffULL);
	for (i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			hdr_ph = &ph[i];
		else if (ph[i].p_type == PT_LOAD &&
			 ip - load_base >= ph[i].p_vaddr &&
			 ip - load_base - ph[i].p_vaddr < ph[i].p_memsz)
			text = &ph[i];
	}
	if (!hdr_ph || !text)
		return -1;
	hdr = load_base + hdr_ph->p_vaddr;
	/*
	 * version, the encodings of eh_frame_ptr, fde_count and the table,
	 * eh_frame_ptr, fde_count: the table follows, pairs of 4-byte
	 * offsets from hdr (datarel), as libunwind reads it.
	 */
	if (proc_read(nu->pid, hdr, head, sizeof(head)) || head[0] != 1 ||
	    !four_bytes(head[1]) || !four_bytes(head[2]) ||
	    (head[2] & 0x70) != DW_EH_PE_absptr ||
	    head[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -1;
	memcpy(&fdes, head + 8, sizeof(fdes));
	memset(di, 0, sizeof(*di));
	di->format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di->start_ip = load_base + text->p_vaddr;
	di->end_ip = di->start_ip + text->p_memsz;
	di->u.rti.segbase = hdr;
	di->u.rti.table_data = hdr + sizeof(head);
	di->u.rti.table_len = (uint64_t)fdes * 8 / sizeof(unw_word_t);
	return 0;
}

/*
 * libunwind's search, by the module's file at its maps path; where that
 * finds nothing, by the table in the target's memory (table_from_memory).
 */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info, void *arg)
{
	unw_dyn_info_t di;
	int r = _UPT_find_proc_info(as, ip, pi, need_unwind_info, arg);

	if (r != -UNW_ENOINFO || !active || table_from_memory(active, ip, &di))
		return r;
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi,
						  need_unwind_info, arg);
}

/*
 * Report the target's modules to libdw.  A target with a root of its own
 * (a container's mount namespace) names its files by paths of that
 * root: the same path here may be missing, or another file (the host's
 * libc where the container has its own), so its maps are read with each
 * path under /proc/PID/root, which leads to the target's own files.
 */
static int report_modules(struct native_unwinder *nu)
{
	char path[64], root[64];
	struct strbuf sb = STRBUF_INIT;
	char *line = NULL;
	size_t cap = 0;
	FILE *in, *f;
	int r = -1;

	if (!nu->other_root)
		return dwfl_linux_proc_report(nu->dwfl, nu->pid);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)nu->pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)nu->pid);
	in = fopen(path, "re");
	if (!in)
		return -1;
	while (getline(&line, &cap, in) > 0) {
		/* Only a mapping's path has a slash in its line. */
		char *slash = strchr(line, '/');

		if (slash) {
			strbuf_add(&sb, line, (size_t)(slash - line));
			strbuf_addstr(&sb, root);
			strbuf_addstr(&sb, slash);
		} else {
			strbuf_addstr(&sb, line);
		}
	}
	fclose(in);
	free(line);
	if (sb.len && (f = fmemopen(sb.buf, sb.len, "r"))) {
		r = dwfl_linux_proc_maps_report(nu->dwfl, f);
		fclose(f);
	}
	strbuf_release(&sb);
	return r;
}

static int may_trace(pid_t pid);

/* Each module's userdata: its unwinder, for find_elf. */
static int set_module_unwinder(Dwfl_Module *mod, void **userdata,
			       const char *name, Dwarf_Addr start, void *arg)
{
	*userdata = arg;
	return DWARF_CB_OK;
}

/*
 * A module's file.  One that left its path since it was mapped (an
 * upgrade put another file there: maps says "(deleted)") is opened as
 * /proc/PID/map_files/START-END, the very file mapped, where spyc may
 * (root, or CAP_CHECKPOINT_RESTORE); never the file now at its path.
 * Else libdw's own search: the path (through /proc/PID/root for a
 * container), which is the mapped file.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *module_name,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct native_unwinder *nu = *userdata;
	const struct proc_map *m;
	Dwarf_Addr start;
	char path[96];
	int fd;

	if (!nu || !proc_path_deleted(module_name) ||
	    !dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL))
		goto libdw;
	m = proc_maps_find(&nu->mem.ro, start);
	if (!m || m->start != start || m->offset)
		goto libdw;
	proc_map_files_name(nu->pid, m, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto libdw;
	*file_name = xstrdup(path);
	*elfp = NULL;
	return fd;
libdw:
	return dwfl_linux_proc_find_elf(mod, userdata, module_name, base,
					file_name, elfp);
}

/*
 * Where libdw looks for a module's separate debug info: by default beside
 * it, in .debug beside it, and under /usr/lib/debug, by the module's
 * build id or its debug link.  A target with a root of its own has its
 * debug info under that root: its /usr/lib/debug is looked in first, by
 * build id (its modules' paths lead through /proc/PID/root, so their
 * debug links are followed there too), then this machine's, whose files
 * are taken for a build id that matches only.
 */
static Dwfl_Callbacks *dwfl_callbacks(struct native_unwinder *nu)
{
	Dwfl_Callbacks *cb = xcalloc(1, sizeof(*cb));
	struct strbuf sb = STRBUF_INIT;

	cb->find_elf = find_elf;
	cb->find_debuginfo = dwfl_standard_find_debuginfo;
	if (nu->other_root) {
		strbuf_addf(&sb,
			    ":.debug:/proc/%d/root/usr/lib/debug:"
			    "/usr/lib/debug",
			    (int)nu->pid);
		nu->debuginfo_path = strbuf_detach(&sb);
		cb->debuginfo_path = &nu->debuginfo_path;
	}
	nu->dwfl_callbacks = cb;
	return cb;
}

static void free_dwfl_callbacks(struct native_unwinder *nu)
{
	free(nu->dwfl_callbacks);
	free(nu->debuginfo_path);
	nu->dwfl_callbacks = NULL;
	nu->debuginfo_path = NULL;
}

int native_init(struct native_unwinder *nu, const struct pyruntime *rt)
{
	unw_accessors_t acc = _UPT_accessors;
	Dwfl *dwfl;

	memset(nu, 0, sizeof(*nu));
	nu->pid = rt->pid;
	nu->rt = rt;
	if (may_trace(rt->pid))
		return -1;
	nu->other_root = proc_has_other_root(rt->pid);
	/* libunwind finds unwind tables; spyc reads the memory and registers.
	 */
	acc.access_mem = access_mem;
	acc.access_reg = access_reg;
	acc.find_proc_info = find_proc_info;
	nu->as = unw_create_addr_space(&acc, 0);
	if (!nu->as)
		return error("libunwind cannot create an address space");
	unw_set_caching_policy(nu->as, UNW_CACHE_GLOBAL);
	dwfl = dwfl_begin(dwfl_callbacks(nu));
	nu->dwfl = dwfl;
	if (!dwfl || report_modules(nu) || dwfl_report_end(dwfl, NULL, NULL) ||
	    dwfl_getmodules(dwfl, set_module_unwinder, nu, 0) < 0) {
		nu->dwfl = NULL;
		if (dwfl)
			dwfl_end(dwfl);
		free_dwfl_callbacks(nu);
		unw_destroy_addr_space(nu->as);
		nu->as = NULL;
		return error("libdw cannot read the modules of pid %d",
			     (int)rt->pid);
	}
	nu->dwfl = dwfl;
	/*
	 * One libunwind-ptrace context for the whole process: it finds the
	 * unwind tables of each module (through /proc/PID/maps) and keeps
	 * them; spyc's own accessors read memory and registers per thread.
	 */
	nu->upt = _UPT_create(rt->pid);
	if (!nu->upt) {
		dwfl_end(dwfl);
		nu->dwfl = NULL;
		free_dwfl_callbacks(nu);
		unw_destroy_addr_space(nu->as);
		nu->as = NULL;
		return error("libunwind cannot follow pid %d", (int)rt->pid);
	}
	nu->syms_size = 1024;
	nu->syms = xcalloc(nu->syms_size, sizeof(*nu->syms));
	unwindmem_init(&nu->mem, rt->pid);
	return 0;
}

int native_init_stopper(struct native_unwinder *nu, const struct pyruntime *rt)
{
	memset(nu, 0, sizeof(*nu));
	nu->pid = rt->pid;
	nu->rt = rt;
	return may_trace(rt->pid);
}

void native_release(struct native_unwinder *nu)
{
	size_t i;

	native_resume_all(nu);
	for (i = 0; i < nu->syms_size && nu->syms; i++) {
		if (!nu->syms[i])
			continue;
		free(nu->syms[i]->name);
		free(nu->syms[i]->file);
		free(nu->syms[i]->func_file);
		free(nu->syms[i]);
	}
	free(nu->syms);
	for (i = 0; i < nu->alloc_threads; i++)
		free(nu->threads[i].stack);
	free(nu->threads);
	if (nu->upt)
		_UPT_destroy(nu->upt);
	if (nu->dwfl)
		dwfl_end(nu->dwfl);
	free_dwfl_callbacks(nu);
	if (nu->as)
		unw_destroy_addr_space(nu->as);
	unwindmem_release(&nu->mem);
	memset(nu, 0, sizeof(*nu));
}

/*
 * Ask one of pid's threads to stop; 0 if asked, -1 if it is gone or
 * cannot be (t->stopped says whether it must be detached).  Once seized,
 * a task keeps its id until spyc lets it go: only then is it certain to
 * be pid's, not a task that took the id of one of pid's that ended (the
 * ids come from the target's memory).  Another's is let go unstopped.
 */
static int interrupt_one(pid_t pid, struct native_thread *t)
{
	char path[64];
	int k;

	t->pending_signal = 0;
	t->captured = 0;
	if (ptrace(PTRACE_SEIZE, t->tid, 0, 0))
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%ld", (int)pid, t->tid);
	if (access(path, F_OK)) {
		ptrace(PTRACE_DETACH, t->tid, 0, 0);
		return -1;
	}
	t->stopped = 1; /* attached: must be detached whatever happens */
	/*
	 * Only a stopped tracee can be let go: one seized but left running
	 * would stay spyc's, and stop at its next signal with no one to
	 * let it go on (a target's thread held until spyc exits).  So an
	 * interrupt that fails is asked again; one that fails every time
	 * is of a thread gone.
	 */
	for (k = 0; k < INTERRUPT_TRIES; k++)
		if (!ptrace(PTRACE_INTERRUPT, t->tid, 0, 0))
			return 0;
	return -1;
}

/* Wait until an interrupted thread stops; 0 if it did, -1 if it exited. */
static int wait_stopped(struct native_thread *t)
{
	int status;

	for (;;) {
		pid_t r = waitpid((pid_t)t->tid, &status, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(status)) {
			t->stopped = 0; /* it exited: nothing to detach */
			return -1;
		}
		/*
		 * Our interrupt shows as PTRACE_EVENT_STOP; anything else is
		 * a signal on its way to the target: hold it, deliver it on
		 * detach.  Either way the thread is stopped now.
		 */
		if ((status >> 16) != PTRACE_EVENT_STOP)
			t->pending_signal = WSTOPSIG(status);
		break;
	}
	return ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) ? -1 : 0;
}

/* Let go of thread i of nu, which could not be captured. */
static void drop_thread(struct native_unwinder *nu, size_t i)
{
	struct native_thread *t = &nu->threads[i], keep;

	if (t->stopped)
		ptrace(PTRACE_DETACH, t->tid, 0, t->pending_signal);
	t->stopped = 0;
	/* The last one takes its place; its stack buffer comes along. */
	keep = *t;
	*t = nu->threads[--nu->nr_threads];
	nu->threads[nu->nr_threads] = keep;
}

/*
 * Copy the top of a stopped thread's stack in one read, which ends
 * early where the stack's mapping does (the main thread near the top of
 * its stack).
 */
static void copy_stack(struct native_unwinder *nu, struct native_thread *t)
{
	ssize_t n;

	if (t->stack_alloc < STACK_COPY_BYTES) {
		free(t->stack);
		t->stack = xmalloc(STACK_COPY_BYTES);
		t->stack_alloc = STACK_COPY_BYTES;
	}
	t->stack_lo = t->regs.rsp - RED_ZONE;
	n = proc_read_some(nu->pid, t->stack_lo, t->stack, STACK_COPY_BYTES);
	t->stack_len = n > 0 ? (size_t)n : 0;
}

size_t native_stop(struct native_unwinder *nu, const long *tids, size_t n)
{
	size_t i;

	native_resume_all(nu);
	nu->nr_threads = 0;
	/*
	 * All are asked first, then waited for: they stop at once, each
	 * held for about the time of one stop, and spyc seldom has to
	 * sleep in waitpid for any but the first.
	 */
	for (i = 0; i < n; i++) {
		struct native_thread *t;
		size_t old = nu->alloc_threads;

		if (!tids[i])
			continue;
		ALLOC_GROW(nu->threads, nu->nr_threads + 1, nu->alloc_threads);
		if (nu->alloc_threads > old)
			memset(nu->threads + old, 0,
			       (nu->alloc_threads - old) *
				   sizeof(*nu->threads));
		t = &nu->threads[nu->nr_threads++];
		t->tid = tids[i];
		if (interrupt_one(nu->pid, t))
			drop_thread(nu, nu->nr_threads - 1);
	}
	for (i = 0; i < nu->nr_threads;) {
		struct native_thread *t = &nu->threads[i];

		if (wait_stopped(t)) {
			drop_thread(nu, i);
			continue;
		}
		/* Only an unwinder needs the stack (not --blocking). */
		if (nu->as)
			copy_stack(nu, t);
		t->captured = 1;
		i++;
	}
	unwindmem_new_stop(&nu->mem);
	return nu->nr_threads;
}

/*
 * May spyc trace pid's threads?  Each sample would otherwise find every
 * thread refused, and the profile come out without a native frame or a
 * stopped read.  The first thread that lets itself be stopped is let go
 * at once (a seized thread is detached only once stopped): one stop, as
 * for one sample.  Returns 0, or -1 after reporting why not.
 */
static int may_trace(pid_t pid)
{
	long tids[PROBE_TASKS];
	size_t n = proc_tasks(pid, tids, PROBE_TASKS), i;
	char why[512];

	for (i = 0; i < PROBE_TRIES * n; i++) {
		struct native_thread t;
		int r, err;

		memset(&t, 0, sizeof(t));
		t.tid = tids[i % n];
		r = interrupt_one(pid, &t);
		err = errno;
		if (!r)
			wait_stopped(&t);
		if (t.stopped)
			ptrace(PTRACE_DETACH, t.tid, 0, t.pending_signal);
		/* Else gone, or an error each sample meets in its turn. */
		if (!r || err != EPERM)
			return 0;
	}
	if (!n)
		return 0;
	access_explain(pid, ACCESS_TRACE, why, sizeof(why));
	return error("%s", why);
}

void native_resume_all(struct native_unwinder *nu)
{
	size_t i;

	for (i = 0; i < nu->nr_threads; i++) {
		struct native_thread *t = &nu->threads[i];

		if (t->stopped)
			ptrace(PTRACE_DETACH, t->tid, 0, t->pending_signal);
		t->stopped = 0;
	}
}

void native_run_on(int tries)
{
	struct timespec ts = {0, 20000L << (2 * tries - 2)};

	nanosleep(&ts, NULL);
}

size_t native_unwind(struct native_unwinder *nu, long tid, uint64_t *ips,
		     size_t max)
{
	struct native_thread *t = find_thread(nu, tid);
	unw_cursor_t cursor;
	size_t n = 0;

	if (!t || !t->captured)
		return 0;
	active = nu;
	nu->current = t;
	if (unw_init_remote(&cursor, nu->as, nu->upt) == 0) {
		do {
			unw_word_t ip;

			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) || !ip)
				break;
			ips[n++] = ip;
		} while (n < max && unw_step(&cursor) > 0);
	}
	nu->current = NULL;
	active = NULL;
	return n;
}

static size_t sym_slot(const struct native_unwinder *nu, uint64_t ip)
{
	return (size_t)((ip * 0x9E3779B97F4A7C15ULL) >> 17) &
	       (nu->syms_size - 1);
}

static void sym_insert(struct native_unwinder *nu, struct native_sym *s)
{
	size_t i;

	if ((nu->nr_syms + 1) * 2 > nu->syms_size) {
		struct native_sym **old = nu->syms;
		size_t old_size = nu->syms_size;

		nu->syms_size *= 2;
		nu->syms = xcalloc(nu->syms_size, sizeof(*nu->syms));
		for (i = 0; i < old_size; i++)
			if (old[i])
				sym_insert(nu, old[i]), nu->nr_syms--;
		free(old);
	}
	i = sym_slot(nu, s->ip);
	while (nu->syms[i])
		i = (i + 1) & (nu->syms_size - 1);
	nu->syms[i] = s;
	nu->nr_syms++;
}

static const char *base_name(const char *path)
{
	const char *p = strrchr(path, '/');

	return p ? p + 1 : path;
}

/* How deep find_subprogram() looks into namespaces and classes. */
#define SCOPE_MAX_DEPTH 8

/*
 * The concrete function (DW_TAG_subprogram) under parent whose code holds
 * pc, into *out; 1 if found.  Not dwarf_getscopes(): inside inlined code
 * it goes on to the inlined function's abstract scopes, not its caller.
 */
static int find_subprogram(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out,
			   int depth)
{
	Dwarf_Die child;

	if (dwarf_child(parent, &child))
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_subprogram && dwarf_haspc(&child, pc) > 0) {
			*out = child;
			return 1;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		     tag == DW_TAG_structure_type) &&
		    depth < SCOPE_MAX_DEPTH &&
		    find_subprogram(&child, pc, out, depth + 1))
			return 1;
	} while (!dwarf_siblingof(&child, &child));
	return 0;
}

/* x86-64's PLT entries (the ABI's 16-byte stubs), in .plt and .plt.sec. */
#define PLT_ENTRY_BYTES 16

/*
 * Name the PLT stub holding ip in mod, which has no symbol of its own,
 * as the function it jumps to ("malloc@plt", as perf and gdb say), from
 * the relocation of its slot; 1 if ip is in a PLT at all (named
 * "MODULE@plt", module its file's name, when the slot cannot be told,
 * as in .plt.got), else 0.  A thread stopped while it calls through one
 * would otherwise show "libfoo.so+0x63580".
 */
static int plt_name(Dwfl_Module *mod, const char *module, uint64_t ip,
		    struct strbuf *sb)
{
	GElf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr sh, plt, rela_sh, dynsym_sh;
	const char *kind = NULL, *name = NULL;
	uint64_t addr = ip - bias, idx;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) ||
		    !(n = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(n, ".rela.plt"))
			rela = scn;
		else if ((!strcmp(n, ".plt") || !strcmp(n, ".plt.sec") ||
			  !strcmp(n, ".plt.got")) &&
			 addr >= sh.sh_addr && addr - sh.sh_addr < sh.sh_size) {
			kind = n;
			plt = sh;
		}
	}
	if (!kind)
		return 0;
	idx = (addr - plt.sh_addr) / PLT_ENTRY_BYTES;
	/* .plt begins with the stub that calls the dynamic linker. */
	if (!strcmp(kind, ".plt") && idx-- == 0)
		name = "_dl_runtime_resolve";
	else if (strcmp(kind, ".plt.got") && rela &&
		 gelf_getshdr(rela, &rela_sh) && rela_sh.sh_entsize) {
		Elf_Data *rd = elf_getdata(rela, NULL);
		Elf_Scn *dynsym = elf_getscn(elf, rela_sh.sh_link);
		Elf_Data *sd = dynsym ? elf_getdata(dynsym, NULL) : NULL;
		GElf_Rela r;
		GElf_Sym sym;

		if (rd && sd && gelf_getshdr(dynsym, &dynsym_sh) &&
		    idx < rela_sh.sh_size / rela_sh.sh_entsize &&
		    gelf_getrela(rd, (int)idx, &r) &&
		    gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
			name = elf_strptr(elf, dynsym_sh.sh_link, sym.st_name);
	}
	strbuf_addf(sb, "%s@plt", name && *name ? name : module);
	return 1;
}

static struct native_sym *describe(struct native_unwinder *nu, uint64_t ip)
{
	struct native_sym *s = xcalloc(1, sizeof(*s));
	Dwfl_Module *mod = dwfl_addrmodule(nu->dwfl, ip);
	const char *name = NULL, *mainfile = NULL, *modname = NULL;
	Dwarf_Addr start = 0;
	GElf_Off off = 0;
	GElf_Sym sym;
	struct strbuf sb = STRBUF_INIT;

	s->ip = ip;
	s->user_id = -1;
	if (!mod && now_ns() - nu->last_report > REREPORT_NS) {
		/* A library loaded since?  Look again, now and then. */
		nu->last_report = now_ns();
		dwfl_report_begin_add(nu->dwfl);
		report_modules(nu);
		dwfl_report_end(nu->dwfl, NULL, NULL);
		dwfl_getmodules(nu->dwfl, set_module_unwinder, nu, 0);
		mod = dwfl_addrmodule(nu->dwfl, ip);
	}
	if (mod) {
		modname = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL,
					   &mainfile, NULL);
		name =
		    dwfl_module_addrinfo(mod, ip, &off, &sym, NULL, NULL, NULL);
		if (mainfile)
			s->in_interp = !strcmp(mainfile, nu->rt->binary) ||
				       !strcmp(base_name(mainfile),
					       base_name(nu->rt->binary));
	}
	if (name) {
		int status = -1;
		char *demangled = NULL;

#ifdef HAVE_DEMANGLE
		if (name[0] == '_' && name[1] == 'Z')
			demangled = __cxa_demangle(name, NULL, NULL, &status);
#endif
		strbuf_addstr(&sb, demangled && !status ? demangled : name);
		free(demangled);
		s->is_eval = !strncmp(name, "_PyEval_EvalFrameDefault", 24);
	} else {
		const char *module = modname ? base_name(modname) : "?";

		if (!mod || !plt_name(mod, module, ip, &sb))
			strbuf_addf(&sb, "%s+0x%llx", module,
				    (unsigned long long)(ip - start));
	}
	s->name = strbuf_detach(&sb);
	if (mod) {
		Dwfl_Line *line = dwfl_module_getsrc(mod, ip);
		int lineno = 0;
		const char *file =
		    line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL)
			 : NULL;

		if (file) {
			s->file = xstrdup(file);
			s->line = lineno;
		}
	}
	return s;
}

const struct native_sym *native_symbolize(struct native_unwinder *nu,
					  uint64_t ip)
{
	size_t i = sym_slot(nu, ip);
	struct native_sym *s;

	while (nu->syms[i]) {
		if (nu->syms[i]->ip == ip)
			return nu->syms[i];
		i = (i + 1) & (nu->syms_size - 1);
	}
	s = describe(nu, ip);
	sym_insert(nu, s);
	return s;
}

void native_describe_function(struct native_unwinder *nu, struct native_sym *s)
{
	Dwfl_Module *mod;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu, func;
	const char *file;
	int line = 0;

	if (s->func_described)
		return;
	s->func_described = 1;
	mod = dwfl_addrmodule(nu->dwfl, s->ip);
	cu = mod ? dwfl_module_addrdie(mod, s->ip, &bias) : NULL;
	if (!cu || !find_subprogram(cu, s->ip - bias, &func, 0))
		return;
	/* Both follow DW_AT_specification and DW_AT_abstract_origin. */
	file = dwarf_decl_file(&func);
	if (!file)
		return;
	s->func_file = xstrdup(file);
	if (!dwarf_decl_line(&func, &line) && line > 0)
		s->func_line = line;
}

/* The symbol of frame i: a return address names its call, so look at ip-1. */
static const struct native_sym *frame_sym(struct native_unwinder *nu,
					  const uint64_t *ips, size_t i)
{
	return native_symbolize(nu, i ? ips[i] - 1 : ips[i]);
}

size_t native_merge(struct native_unwinder *nu, const struct py_frame *py,
		    size_t nr_py, const uint64_t *ips, size_t nr_ips,
		    struct merged_frame *out, size_t max, int *merged)
{
	size_t groups = 0, evals = 0, i, n = 0, innermost_eval = nr_ips;
	size_t group_end;

	for (i = 0; i < nr_py; i++)
		groups += py[i].entry;
	/* Python frames after the last entry mark belong to no call: odd. */
	if (nr_py && !py[nr_py - 1].entry)
		groups = (size_t)-1;
	for (i = 0; i < nr_ips; i++) {
		if (frame_sym(nu, ips, i)->is_eval) {
			evals++;
			if (innermost_eval == nr_ips)
				innermost_eval = i;
		}
	}
	*merged = groups == evals;
	if (!*merged) {
		for (i = nr_py; i-- > 0 && n < max;)
			out[n++] = (struct merged_frame){&py[i], NULL};
		for (i = innermost_eval; i-- > 0 && n < max;)
			out[n++] =
			    (struct merged_frame){NULL, frame_sym(nu, ips, i)};
		return n;
	}
	/*
	 * Root first: native frames from the outermost, each eval frame
	 * replaced by its group of Python frames (outermost group first).
	 */
	group_end = nr_py;
	for (i = nr_ips; i-- > 0 && n < max;) {
		const struct native_sym *s = frame_sym(nu, ips, i);

		if (s->is_eval) {
			size_t start = group_end ? group_end - 1 : 0, j;

			/* The group: inward until the next entry mark. */
			while (start > 0 && !py[start - 1].entry)
				start--;
			for (j = group_end; j-- > start && n < max;)
				out[n++] = (struct merged_frame){&py[j], NULL};
			group_end = start;
			continue;
		}
		/* The interpreter's plumbing between Python frames is noise. */
		if (s->in_interp && i > innermost_eval)
			continue;
		out[n++] = (struct merged_frame){NULL, s};
	}
	return n;
}

size_t native_thread_frames(struct native_unwinder *nu,
			    const struct py_sample *s,
			    const struct py_thread *t, struct merged_frame *out,
			    size_t max, int *unmerged)
{
	uint64_t ips[NATIVE_MAX_DEPTH];
	size_t j, n = 0, nips = 0;
	int merged = 1;

	if (nu && t->tid)
		nips = native_unwind(nu, t->tid, ips, ARRAY_SIZE(ips));
	if (nips) {
		n = native_merge(nu, &s->frames[t->first], t->depth, ips, nips,
				 out, max, &merged);
	} else {
		for (j = 0; j < t->depth && j < max; j++)
			out[n++] = (struct merged_frame){
			    &s->frames[t->first + t->depth - 1 - j], NULL};
	}
	*unmerged = !merged;
	return n;
}

size_t native_thread_ids(struct native_unwinder *nu, const struct py_sample *s,
			 const struct py_thread *t,
			 struct merged_frame *scratch, size_t max,
			 const struct frame_namer *fn, uint32_t *ids,
			 int *unmerged)
{
	size_t j, n = native_thread_frames(nu, s, t, scratch, max, unmerged);

	for (j = 0; j < n; j++) {
		const struct merged_frame *m = &scratch[j];
		struct native_sym *sym = (struct native_sym *)m->native;

		if (m->py) {
			ids[j] = pycode_line_id(m->py->code, m->py->line,
						fn->python, fn->ctx);
			continue;
		}
		if (sym->user_id < 0)
			sym->user_id = (long)fn->native(fn->ctx, sym);
		ids[j] = (uint32_t)sym->user_id;
	}
	return n;
}
