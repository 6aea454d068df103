/* SPDX-License-Identifier: MIT */
/* A target process seen from outside: existence, memory reads, maps. */
#ifndef SPYC_PROC_H
#define SPYC_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* One line of /proc/PID/maps. */
struct proc_map {
	uint64_t start, end, offset;
	uint64_t inode;
	char perms[5];
	char *path; /* NULL for anonymous mappings */
};

struct proc_maps {
	struct proc_map *maps;
	size_t nr, alloc;
};

/*
 * Parse the text of a /proc/PID/maps file into maps (which is cleared
 * first).  Returns the number of mappings, or -1 on a malformed line.
 */
int proc_maps_parse(struct proc_maps *maps, const char *text);
/* Read /proc/PID/maps into maps.  Returns 0 or a negative errno. */
int proc_maps_load(struct proc_maps *maps, pid_t pid);
/* The mapping of maps (sorted by address, as read) holding addr, or NULL. */
const struct proc_map *proc_maps_find(const struct proc_maps *maps,
				      uint64_t addr);
void proc_maps_release(struct proc_maps *maps);

/*
 * System calls spyc made to read targets, for its own cost figures
 * (SPYC_STATS): process_vm_readv calls, and those that read /proc
 * files (open, read, close: each counts).  With timed set, also the
 * time spent inside process_vm_readv (by CLOCK_MONOTONIC around each
 * call: a read runs on spyc's CPU time, so this is what reads cost it).
 */
struct proc_counts {
	uint64_t remote_reads;
	uint64_t file_calls;
	int timed;
	uint64_t remote_read_ns;
};
extern struct proc_counts proc_counts;

/*
 * Read len bytes at addr of pid into buf.  Returns 0, or a negative
 * errno: -ESRCH (gone), -EPERM (not allowed), -EFAULT (unmapped or a
 * short read).  Never blocks the target.
 */
int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/*
 * Read up to len bytes at addr of pid into buf, stopping where the
 * mapping ends.  Returns the bytes read, or a negative errno as
 * proc_read when not even the first page could be read.
 */
ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len);

/*
 * Read data that does not change once the target has written it (a
 * version number, _Py_DebugOffsets): read until two reads in a row agree,
 * so that one read torn by the target's start-up, or wrong, is not
 * believed.  Returns 0, a negative errno as proc_read, or -EAGAIN when no
 * two reads agreed.
 */
int proc_read_stable(pid_t pid, uint64_t addr, void *buf, size_t len);

/*
 * Write len bytes from buf at addr of pid: only ever the stack of a
 * thread spyc holds stopped (src/sys/inject.c), or a thread state's PEP 768
 * request fields (src/py/remoteexec.c).  Returns 0 or a negative errno, as
 * proc_read.
 */
int proc_write(pid_t pid, uint64_t addr, const void *buf, size_t len);

/*
 * Read n regions at once (one process_vm_readv per IOV_MAX regions).
 * Regions that could not be read are zero-filled; returns the number of
 * regions read whole, or a negative errno when nothing could be read.
 */
int proc_readv(pid_t pid, const struct iovec *local, const struct iovec *remote,
	       size_t n);

/* 1 if pid exists (even as a zombie we may not trace), else 0. */
int proc_exists(pid_t pid);
/* 1 if pid exists and is not a zombie or dead. */
int proc_alive(pid_t pid);
/*
 * pid's state letter from /proc/PID/stat ('R', 'S', 'T' stopped by a
 * signal, 't' stopped by a tracer, 'Z', ...), or 0 if it is not there.
 */
char proc_state(pid_t pid);
/* 1 if a process in state (proc_state's letter) is alive: not 0, a
 * zombie or dead. */
int proc_state_alive(char state);

/* What kind of process pid is, as /proc/PID/stat says. */
enum proc_kind {
	PROC_GONE,	    /* no such process (or its stat unreadable) */
	PROC_USER,	    /* a running (or sleeping, stopped...) program */
	PROC_ZOMBIE,	    /* exited, not reaped yet */
	PROC_KERNEL_THREAD, /* PF_KTHREAD: no user memory to read */
};
enum proc_kind proc_kind(pid_t pid);

/*
 * The target's executable path (readlink /proc/PID/exe) into buf.
 * Returns 0 or a negative errno.
 */
int proc_exe(pid_t pid, char *buf, size_t size);
/* Inode of the target's executable, 0 if unknown: changes on exec. */
uint64_t proc_exe_inode(pid_t pid);
/*
 * Where the kernel put the target's argument strings (/proc/PID/stat
 * field 48): randomised on every exec, so a change means an exec even of
 * the same non-PIE program.  0 if unknown.
 */
uint64_t proc_arg_start(pid_t pid);
/*
 * When the process started, in clock ticks since boot (/proc/PID/stat
 * field 22): a pid reused by another process has another.  0 if unknown.
 */
uint64_t proc_start_time(pid_t pid);

/*
 * Open pid's address space as it is now (/proc/PID/mem), to tell later
 * that it was replaced.  Returns the descriptor (the caller closes it),
 * or -1 when it cannot be opened.
 */
int proc_mm_open(pid_t pid);

/*
 * 1 if the address space fd was opened on is still pid's: a byte at addr
 * (any mapped address) reads through it; 0 once it is gone (an exec gave
 * the process a new one, or it exited): the kernel then reads nothing;
 * -1 if the read failed otherwise.  One pread, cheap enough for every
 * sample.
 */
int proc_mm_same(int fd, uint64_t addr);
/* Numeric field N (from 3, the state) of /proc/PID/stat; 0 if unknown. */
uint64_t proc_stat_field(pid_t pid, int field);
/* The command line, arguments joined by spaces, into buf ("" if none). */
void proc_cmdline(pid_t pid, char *buf, size_t size);

/*
 * Path under which spyc can open a file the target has mapped, going
 * through /proc/PID/root so that containers work.  Caller frees.
 */
char *proc_file_path(pid_t pid, const char *path);

/*
 * Path under which spyc can open the very file mapped at path (as maps,
 * just read, names it) in pid: /proc/PID/map_files/START-END where spyc
 * may (root), which is the mapping's own file even when another has
 * taken its path since (an upgrade under a running job: maps then says
 * "(deleted)"); else proc_file_path's, unless the mapped file is gone
 * from its path (NULL then).  Caller frees.
 */
char *proc_mapped_file(pid_t pid, const struct proc_maps *maps,
		       const char *path);

/*
 * The name of the very file mapped at m in pid, into buf:
 * /proc/PID/map_files/START-END (opened by root, or with
 * CAP_CHECKPOINT_RESTORE).
 */
void proc_map_files_name(pid_t pid, const struct proc_map *m, char *buf,
			 size_t size);

/*
 * Whether a path as maps gives it says that the file mapped has left
 * that path since ("PATH (deleted)").
 */
int proc_path_deleted(const char *path);

/*
 * Read a small text file (a /proc entry) into buf, NUL-terminated.
 * Returns the bytes read, or -1 (buf then holds "").
 */
ssize_t proc_read_text(const char *path, char *buf, size_t size);

/* Native thread ids of pid (from /proc/PID/task), count returned. */
size_t proc_tasks(pid_t pid, long *tids, size_t max);

/* A "Field:  N kB" line of this process's status ("RssAnon:"), or -1. */
long proc_self_status_kib(const char *field);

/* Does pid see another root directory than spyc (a container's)? */
int proc_has_other_root(pid_t pid);

#endif
