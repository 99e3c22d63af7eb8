/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * util.h - what every part of libvcpustat uses: how a failure is reported
 * (error.c), a small hash table (hashmap.c), where an output file is written
 * and how (outfile.c), and I/O, clock and text helpers (util.c).
 */
#ifndef VCPUSTAT_UTIL_H
#define VCPUSTAT_UTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>

/*
 * ---- error.c: how library code reports a failure the user must understand ----
 * A negative errno as the return value plus, where the caller passed one, a
 * sentence naming what failed and where (file, offset or line, option).
 * Library code never prints and never exits.
 */

struct vcpustat_error {
	int code;      /* negative errno, 0 if none */
	char msg[512]; /* "FILE: offset 4096: bad checksum in node 3", ... */
};

/* Fill e (if non-NULL) and return code (a negative errno). */
int verror(struct vcpustat_error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * What a message echoes of an argument the user gave: s itself if it is
 * short, else its start and its length ("aaaa... (102400 bytes)", in buf),
 * so that what is wrong with it still fits in the message after it.
 */
#define ERROR_ECHO_MAX 64
const char *error_echo(const char *s, char *buf, size_t len);

/*
 * ---- hashmap.c: a small open-addressing hash table ----
 * Fixed-size keys and values, the user-space twin of a BPF hash map (replay,
 * reports). Values are stored inline; pointers returned stay valid until the
 * next insert (which may grow the table) or delete.
 */

struct hashmap {
	size_t key_size, value_size;
	size_t max_entries; /* inserts fail with -E2BIG beyond this (0: no limit) */
	size_t count, tombstones, cap;
	unsigned char *slots; /* cap * (1 + key_size + value_size), state byte first */
};

int hashmap_init(struct hashmap *m, size_t key_size, size_t value_size, size_t max_entries);
void hashmap_free(struct hashmap *m);
void *hashmap_lookup(const struct hashmap *m, const void *key);
/* Insert key with value (NULL: zeroed) unless present: 0, -EEXIST, -E2BIG or -ENOMEM. */
int hashmap_insert(struct hashmap *m, const void *key, const void *value);
/* Insert or overwrite. */
int hashmap_update(struct hashmap *m, const void *key, const void *value);
int hashmap_delete(struct hashmap *m, const void *key);
/* Iterate: start with *pos = 0; returns false at the end. */
bool hashmap_next(const struct hashmap *m, size_t *pos, void **key, void **value);

/*
 * ---- outfile.c: every output file (-o), one rule ----
 * What the path names, its symbolic links followed one by one, decides:
 *  - a regular file, or nothing yet (a new name): the content goes to a
 *    temporary file in the same directory as that file, renamed over it when
 *    whole: readers (node_exporter's textfile collector, scrapers, browsers)
 *    see the old or the new file, never half of one. A symlink stays a
 *    symlink: the file it names is replaced (made, if the link dangles).
 *  - anything else -- "-" (stdout), a character or block device (/dev/null),
 *    a FIFO, a socket, a terminal, a link of /proc (/dev/stdout is
 *    /proc/self/fd/1) -- is written in place, never replaced or removed. A
 *    link of our own /proc/self/fd is that descriptor itself (dup), so the
 *    bytes go where the shell's redirection sends them: `-o /dev/stdout >
 *    out.prom` fills out.prom. Opening a FIFO waits for its reader.
 *  - a directory is refused (CTF's output, a directory: outfile_dir_target()).
 * Every failure, a write's (ENOSPC, EPIPE: SIGPIPE is held while a target is
 * written in place) as an open's, is returned with a sentence naming the path.
 */

enum {
	/*
	 * The writer writes at offsets (pwrite, ftruncate) and may read back:
	 * its fd is always a regular file. A target written in place gets the
	 * file whole at outfile_close(), copied from a temporary file in $TMPDIR
	 * (or /tmp), so a FIFO or /dev/stdout can take an SHT file; a regular
	 * file behind /dev/stdout is emptied first (the output is its content).
	 */
	OUTFILE_SEEK = 1 << 0,
	/*
	 * The file is written under its own name as it grows (a live recording,
	 * readable while it is written and after a crash): a regular file is
	 * truncated, not replaced. With OUTFILE_SEEK, a target in place must
	 * seek (/dev/null does; a FIFO, a socket, a terminal is refused).
	 */
	OUTFILE_GROW = 1 << 1,
	OUTFILE_NO_SYNC = 1 << 2, /* no fsync of the temporary file before its rename (the writer syncs) */
};

struct outfile {
	int fd;		       /* where the writer writes */
	int dest;	       /* OUTFILE_SEEK in place: the target, written at outfile_close(); else -1 */
	unsigned int flags;
	bool in_place;	       /* the target is written in place, not replaced */
	bool regular;	       /* fd is a regular file */
	bool sigpipe;	       /* this file holds SIGPIPE blocked */
	char path[PATH_MAX];   /* as given ("stdout" for "-"), for messages */
	char target[PATH_MAX]; /* path, its symlinks followed: what is renamed over, or opened in place */
	char tmp[PATH_MAX];    /* the temporary file ("" once renamed, or when none) */
};

/* A closed outfile (outfile_abort() on it does nothing). */
void outfile_init(struct outfile *of);
/* Open path by the rule above: of->fd is where to write. 0, or a negative errno with err. */
int outfile_open(struct outfile *of, const char *path, unsigned int flags, struct vcpustat_error *err);
/* A temporary file takes its name now (the header of a file that grows is written); the fd stays open. */
int outfile_publish(struct outfile *of, struct vcpustat_error *err);
/*
 * The end: a temporary file is synced, closed and renamed over the target; a
 * target in place gets what was spooled, and is closed. Any failure removes
 * the temporary file (the target is as it was, unless written in place).
 */
int outfile_close(struct outfile *of, struct vcpustat_error *err);
/* The error path: closed, the temporary file removed (what a target in place got stays). */
void outfile_abort(struct outfile *of);

/*
 * Can path be written with these flags? The checks of outfile_open() without
 * opening a target in place (a FIFO's reader would see an end): a temporary
 * file is created and removed next to a regular or a new one. Fills err with
 * a sentence naming the path and the reason; returns 0 or a negative errno.
 */
int outfile_check(const char *path, unsigned int flags, struct vcpustat_error *err);

/* Write buf to path by the rule above; "-" is stdout. Mode 0644. */
int outfile_write(const char *path, const void *buf, size_t len, struct vcpustat_error *err);

/*
 * Is path written in place (see above)? 1, with what it is in *what ("a
 * FIFO (named pipe)", "stdout"); 0 for a regular file, a new name or a
 * directory; or a negative errno with err.
 */
int outfile_in_place(const char *path, const char **what, struct vcpustat_error *err);

/*
 * A directory output (CTF): path, its symlinks followed, must be a new name
 * or an empty directory, into target (len bytes): the name to rename the
 * finished directory to. Anything else is refused, saying what it is.
 */
int outfile_dir_target(const char *path, char *target, size_t len, struct vcpustat_error *err);

/*
 * The template of a temporary name next to path, "dir/.name.tmp.XXXXXX" (for
 * mkstemp() or mkdtemp(): a file or a directory renamed over path when
 * whole), in out (len bytes): 0, or -ENAMETOOLONG. Nothing is created.
 */
int outfile_temp_name(const char *path, char *out, size_t len);

/*
 * Refuse an output that is one of the inputs (n paths; NULL and "-" are
 * skipped): the same file (st_dev and st_ino) whatever the path, hard link,
 * symlink or /proc/self/fd/N. Call it before opening anything for writing.
 * 0, or -EEXIST with a sentence naming both; -EINVAL for an empty name.
 */
int outfile_refuse_input(const char *out, const char *const *inputs, size_t n, struct vcpustat_error *err);

/* ---- util.c: small helpers ---- */

/* write() all of buf, retrying on EINTR and short writes; 0 or a negative errno. */
int write_all(int fd, const void *buf, size_t len);
/* read() fd to its end into a new buffer (free it), retrying on EINTR; 0 or a negative errno. */
int read_fd(int fd, char **buf, size_t *len);
/* pwrite() all of buf at *off, which advances (on failure: to where it stopped). */
int pwrite_all(int fd, const void *buf, size_t len, __u64 *off);

/* What a file of st_mode mode is, for messages: "a directory", "a FIFO (named pipe)", ... */
const char *file_kind(unsigned int mode);
/*
 * Open path for reading; a FIFO that no one writes does not block (it reads
 * as empty). A directory is refused, and with regular_only anything but a
 * regular file (what must be read at any offset), with a sentence naming the
 * path and what it is. The fd, or a negative errno.
 */
int open_input(const char *path, bool regular_only, struct vcpustat_error *err);
/*
 * All of fd (a pipe, a device, a file) in memory, NUL-terminated, at most
 * limit bytes: beyond, or a NUL byte in the first 4 KiB (not text: /dev/zero),
 * it stops with an error naming name and the offset.
 */
int read_bounded(int fd, const char *name, size_t limit, char **out, size_t *len, struct vcpustat_error *err);
/*
 * Little-endian fields of our files (SHT, captures, the record ABI). One
 * policy: the files are little-endian and vcpustat runs on little-endian
 * hosts only (x86-64, arm64: the static assertion below), so a field is a
 * plain unaligned copy and a capture's events are the kernel's struct
 * vcpustat_event bytes as they are.
 */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "vcpustat's files are read and written on little-endian hosts only");

/* The smaller and the larger of two times or counts. */
static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline __u16 get16(const void *p)
{
	__u16 v;

	memcpy(&v, p, 2);
	return v;
}

static inline __u32 get32(const void *p)
{
	__u32 v;

	memcpy(&v, p, 4);
	return v;
}

static inline __u64 get64(const void *p)
{
	__u64 v;

	memcpy(&v, p, 8);
	return v;
}

static inline void put16(void *p, __u16 v)
{
	memcpy(p, &v, 2);
}

static inline void put32(void *p, __u32 v)
{
	memcpy(p, &v, 4);
}

static inline void put64(void *p, __u64 v)
{
	memcpy(p, &v, 8);
}

/*
 * A duration, the one syntax of every duration option: a decimal number with
 * an optional unit, ns, us, ms, s, m, h or d ("1.5s", "250ms", "15m", "2h");
 * a bare number is seconds ("90", "0.5"). Exact to the nanosecond (no
 * floating point). 0, -EINVAL (malformed) or -ERANGE (beyond 2^64 ns).
 */
int parse_duration_ns(const char *s, __u64 *ns);

/* ns as seconds with nine decimals: "12.000345678". */
void fmt_secs(__u64 ns, char *buf, size_t len);

/* s escaped for XML/HTML text and attribute values (control characters become '?'). */
void xml_escape(FILE *f, const char *s);

/*
 * Keep freed memory for the next refresh instead of giving it back to the
 * kernel: buffers of up to 64 MiB come from the heap, which is not trimmed
 * below 256 MiB. A refresh of 10,000 vCPUs renders 20 MB of text and reads
 * megabytes of maps; mapped afresh each time, their pages are faulted in again
 * at every refresh, which on a VM host's guest kernel (PVM) cost more than the
 * rendering itself (bench/RESULTS.md, "Refresh at scale"). Called once at start.
 */
void heap_keep(void);

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns() and of the records. */
__u64 vcpustat_now_ns(void);
/* CLOCK_REALTIME in ns. */
__u64 vcpustat_realtime_ns(void);

/*
 * ---- topology.c: the host's CPUs by NUMA node, last-level cache and core ----
 * ids[cpu] (node: the node's own id; llc and core: numbered from 0 in order of
 * their first CPU), -1 where unknown. A recording keeps them in its metadata
 * (docs/sht-attributes.md, "Metadata").
 */
struct cpu_topology {
	unsigned int nr_cpus;
	int *node, *llc, *core;
};

enum topology_key { TOPOLOGY_NODES, TOPOLOGY_LLCS, TOPOLOGY_SMT, TOPOLOGY_NR_KEYS };
extern const char *const topology_meta_key[TOPOLOGY_NR_KEYS]; /* "topology.nodes", ... */

/* From root (NULL: /sys): what sysfs says; missing parts stay -1. */
int topology_read_sysfs(struct cpu_topology *t, const char *root, struct vcpustat_error *err);
/* The metadata value of key k in buf: -ENOENT (not known) or -E2BIG (does not fit len), buf "". */
int topology_meta(const struct cpu_topology *t, enum topology_key k, char *buf, size_t len);
/*
 * From metadata values (value[k] NULL: absent): -ENOENT if none names a CPU,
 * -EINVAL with err naming the key and offset for a malformed one.
 */
int topology_from_meta(struct cpu_topology *t, const char *const value[TOPOLOGY_NR_KEYS], struct vcpustat_error *err);
int topology_copy(struct cpu_topology *dst, const struct cpu_topology *src);
void topology_free(struct cpu_topology *t);

#endif /* VCPUSTAT_UTIL_H */
