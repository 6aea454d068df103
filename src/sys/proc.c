/* SPDX-License-Identifier: MIT */
/* A target process seen from outside: existence, memory reads, maps. */
#include "sys/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "sys/faults.h" /* last: make FAULTS=1 wraps process_vm_readv */

/* A maps file larger than this is not a process we want to parse. */
#define MAPS_MAX_BYTES (64u << 20)

static int read_whole_file(const char *path, struct strbuf *sb, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	for (;;) {
		strbuf_grow(sb, 65536);
		n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
		if (sb->len > max)
			break;
	}
	close(fd);
	return 0;
}

void proc_maps_release(struct proc_maps *maps)
{
	size_t i;

	for (i = 0; i < maps->nr; i++)
		free(maps->maps[i].path);
	free(maps->maps);
	maps->maps = NULL;
	maps->nr = maps->alloc = 0;
}

int proc_maps_parse(struct proc_maps *maps, const char *text)
{
	const char *line = text;

	proc_maps_release(maps);
	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4096 + 256];
		unsigned long long start, end, offset, inode;
		char perms[8];
		int path_at = 0;
		struct proc_map *m;

		if (len >= sizeof(buf))
			return -1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line += len + (eol ? 1 : 0);
		if (!len)
			continue;
		if (sscanf(buf, "%llx-%llx %4s %llx %*x:%*x %llu %n", &start,
			   &end, perms, &offset, &inode, &path_at) < 5)
			return -1;
		ALLOC_GROW(maps->maps, maps->nr + 1, maps->alloc);
		m = &maps->maps[maps->nr++];
		m->start = start;
		m->end = end;
		m->offset = offset;
		m->inode = inode;
		memcpy(m->perms, perms, 4);
		m->perms[4] = '\0';
		m->path = NULL;
		if (path_at > 0 && buf[path_at])
			m->path = xstrdup(buf + path_at);
	}
	return (int)maps->nr;
}

int proc_maps_load(struct proc_maps *maps, pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	char path[64];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	ret = read_whole_file(path, &sb, MAPS_MAX_BYTES);
	if (ret < 0)
		goto out;
	ret = proc_maps_parse(maps, sb.buf) < 0 ? -EINVAL : 0;
out:
	strbuf_release(&sb);
	return ret;
}

const struct proc_map *proc_maps_find(const struct proc_maps *maps,
				      uint64_t addr)
{
	size_t lo = 0, hi = maps->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct proc_map *m = &maps->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

struct proc_counts proc_counts;

/* process_vm_readv, counted (and timed) in proc_counts; errno as it. */
static ssize_t counted_readv(pid_t pid, const struct iovec *local,
			     const struct iovec *remote, size_t n)
{
	uint64_t start = proc_counts.timed ? now_ns() : 0;
	ssize_t got;
	int err;

	proc_counts.remote_reads++;
	got = process_vm_readv(pid, local, n, remote, n, 0);
	if (proc_counts.timed) {
		err = errno;
		proc_counts.remote_read_ns += now_ns() - start;
		errno = err;
	}
	return got;
}

ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (!len)
		return 0;
	n = counted_readv(pid, &local, &remote, 1);
	return n < 0 ? -errno : n;
}

int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = proc_read_some(pid, addr, buf, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Reads proc_read_stable() makes before it gives up. */
#define STABLE_TRIES 8

int proc_read_stable(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	unsigned char *again = xmalloc(len ? len : 1);
	int have = 0, tries, r = 0;

	for (tries = 0; tries < STABLE_TRIES; tries++) {
		r = proc_read(pid, addr, have ? again : buf, len);
		if (r == -ESRCH || r == -EPERM)
			break;
		if (r < 0) {
			have = 0;
			continue;
		}
		if (have && !memcmp(buf, again, len))
			break;
		if (have)
			memcpy(buf, again, len);
		have = 1;
	}
	if (tries == STABLE_TRIES)
		r = r < 0 ? r : -EAGAIN;
	free(again);
	return r;
}

int proc_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = {(void *)buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EFAULT;
	return 0;
}

int proc_readv(pid_t pid, const struct iovec *local, const struct iovec *remote,
	       size_t n)
{
	size_t done = 0;
	int whole = 0;

	while (done < n) {
		size_t batch = n - done < IOV_MAX ? n - done : IOV_MAX;
		ssize_t got;

		got = counted_readv(pid, local + done, remote + done, batch);
		size_t i, total = 0;

		if (got < 0) {
			if (!whole && (errno == ESRCH || errno == EPERM))
				return -errno;
			got = 0;
		}
		/*
		 * process_vm_readv stops at the first region that faults:
		 * count what arrived, zero the rest, and retry after it.
		 */
		for (i = 0; i < batch; i++) {
			size_t want = local[done + i].iov_len;

			if ((size_t)got >= total + want) {
				whole++;
				total += want;
				continue;
			}
			break;
		}
		if (i < batch) {
			memset(local[done + i].iov_base, 0,
			       local[done + i].iov_len);
			i++;
		}
		done += i;
	}
	return whole;
}

int proc_exists(pid_t pid)
{
	if (pid <= 0)
		return 0;
	return kill(pid, 0) == 0 || errno == EPERM;
}

char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *fp;
	char state = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	if (fgets(buf, sizeof(buf), fp)) {
		/* The state follows the last ')': the name may hold one. */
		p = strrchr(buf, ')');
		if (p && p[1] == ' ')
			state = p[2];
	}
	fclose(fp);
	return state;
}

int proc_state_alive(char state)
{
	return state && state != 'Z' && state != 'X' && state != 'x';
}

int proc_alive(pid_t pid)
{
	return proc_state_alive(proc_state(pid));
}

/* PF_KTHREAD in the flags field of /proc/PID/stat (linux/sched.h). */
#define PROC_PF_KTHREAD 0x00200000UL

enum proc_kind proc_kind(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	char state = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (proc_read_text(path, buf, sizeof(buf)) <= 0)
		return PROC_GONE;
	/* After the name (which may hold ')'): state, then 5 fields, flags. */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return PROC_USER;
	if (state == 'Z' || state == 'X' || state == 'x')
		return PROC_ZOMBIE;
	if (flags & PROC_PF_KTHREAD)
		return PROC_KERNEL_THREAD;
	return PROC_USER;
}

int proc_exe(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

uint64_t proc_exe_inode(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return 0;
	return (uint64_t)st.st_ino ^ ((uint64_t)st.st_dev << 40);
}

uint64_t proc_stat_field(pid_t pid, int field)
{
	char path[64], buf[2048], *p;
	unsigned long long v = 0;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (proc_read_text(path, buf, sizeof(buf)) <= 0)
		return 0;
	/* Fields count from the state, field 3, after the last ')'. */
	if (field < 3 || !(p = strrchr(buf, ')')))
		return 0;
	p += 2;
	for (n = 3; n < field && p; n++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		sscanf(p, "%llu", &v);
	return v;
}

uint64_t proc_arg_start(pid_t pid)
{
	return proc_stat_field(pid, 48);
}

uint64_t proc_start_time(pid_t pid)
{
	return proc_stat_field(pid, 22);
}

int proc_mm_open(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int proc_mm_same(int fd, uint64_t addr)
{
	unsigned char byte;
	ssize_t n = pread(fd, &byte, 1, (off_t)addr);

	/* The descriptor pins the old mm, not its pages: reads see EOF. */
	if (n == 1)
		return 1;
	return n == 0 ? 0 : -1;
}

ssize_t proc_read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	proc_counts.file_calls += 3; /* open, read, close */
	buf[0] = '\0';
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

void proc_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = proc_read_text(path, buf, size);
	if (n <= 0)
		return;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
}

char *proc_file_path(pid_t pid, const char *path)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addf(&sb, "/proc/%d/root%s", (int)pid, path);
	/* spyc's effective ids and capabilities, as the open will use. */
	if (faccessat(AT_FDCWD, sb.buf, R_OK, AT_EACCESS)) {
		strbuf_reset(&sb);
		strbuf_addstr(&sb, path);
	}
	return strbuf_detach(&sb);
}

void proc_map_files_name(pid_t pid, const struct proc_map *m, char *buf,
			 size_t size)
{
	snprintf(buf, size, "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
}

int proc_path_deleted(const char *path)
{
	static const char deleted[] = " (deleted)";
	size_t len = strlen(path);

	return len >= sizeof(deleted) - 1 &&
	       !strcmp(path + len - (sizeof(deleted) - 1), deleted);
}

char *proc_mapped_file(pid_t pid, const struct proc_maps *maps,
		       const char *path)
{
	const struct proc_map *m = NULL;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	for (i = 0; i < maps->nr; i++) {
		const struct proc_map *it = &maps->maps[i];

		if (it->path && !strcmp(it->path, path) &&
		    (!m || !it->offset)) {
			m = it;
			if (!m->offset)
				break;
		}
	}
	if (m) {
		char name[96];

		proc_map_files_name(pid, m, name, sizeof(name));
		strbuf_addstr(&sb, name);
		/*
		 * With spyc's effective ids and capabilities (a non-root
		 * spyc given CAP_CHECKPOINT_RESTORE by setcap may follow
		 * these links); access() would check its real ones only.
		 */
		if (!faccessat(AT_FDCWD, sb.buf, R_OK, AT_EACCESS))
			return strbuf_detach(&sb);
		strbuf_release(&sb);
	}
	if (proc_path_deleted(path))
		return NULL;
	return proc_file_path(pid, path);
}

int proc_has_other_root(pid_t pid)
{
	char path[64];
	struct stat mine, its;

	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	return !stat("/", &mine) && !stat(path, &its) &&
	       (mine.st_dev != its.st_dev || mine.st_ino != its.st_ino);
}

size_t proc_tasks(pid_t pid, long *tids, size_t max)
{
	char path[64];
	DIR *dir;
	struct dirent *de;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	/* open, getdents until empty (twice for a small one), close */
	proc_counts.file_calls += 4;
	dir = opendir(path);
	if (!dir)
		return 0;
	while (n < max && (de = readdir(dir))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		tids[n++] = strtol(de->d_name, NULL, 10);
	}
	closedir(dir);
	return n;
}

long proc_self_status_kib(const char *field)
{
	char buf[4096];
	const char *at;

	if (proc_read_text("/proc/self/status", buf, sizeof(buf)) <= 0)
		return -1;
	at = strstr(buf, field);
	return at ? strtol(at + strlen(field), NULL, 10) : -1;
}
