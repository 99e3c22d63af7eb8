// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tracedat.c - trace-cmd's binary trace.dat through libtracecmd: the file's
 * per-CPU buffers merged in time order by tracecmd_iterate_events_multi()
 * (the very iterator `trace-cmd report` prints with: same order, same
 * tie-breaks), each record's fields read through libtraceevent
 * (tep_find_field, tep_read_number_field) into a struct trace_event, as
 * ftrace.c makes it from the same event printed as text.
 *
 * No byte of the format is parsed here but the first few of its header
 * (magic, version, endianness, long and page size, the compression name),
 * checked before libtracecmd is given the file: libtracecmd leaks (or, for a
 * file cut inside that header, leaks a descriptor) when its own checks fail
 * that early. Every field is read within its record: a field the format
 * places beyond the record's end is an error, not a read past it.
 *
 * libtracecmd 3.1.6 (Debian 12's) crashes on a file whose CPU buffers lie
 * past its end (a truncated version 6 file): tracecmd_open() fails, then
 * tracecmd_close() of its half-made handle closes descriptor 0 and follows a
 * NULL list pointer; and libtraceevent's kbuffer_load_subbuffer() reads out
 * of bounds on a CPU buffer page whose header is damaged (found by
 * fuzz-tracedat in CI on 2026-11-23; whether that read faults depends on the
 * heap's layout: a check in a child that then let this process read the
 * pages passed a file it crashed on, 2026-11-28). Telling such files apart
 * would take parsing the file's sections and pages, which is libtracecmd's
 * job: so the CPU buffers are only ever read in a child process. The child
 * opens the file (tracecmd_open), iterates over its records and writes each
 * one, as raw bytes with its CPU, time, file offset and lost-event count,
 * to a pipe; nothing else. This process reads the file's headers and
 * formats only (tracecmd_open_head, which loads no buffer page, and only
 * after the child has opened the same file) and converts the records it
 * receives through libtraceevent's formats, within each record's bytes.
 * A child that dies before saying it reached the end is a damaged file,
 * reported after the records it sent (an import fails as a whole, writing
 * nothing). Our own conversion runs here, where ASan and the fuzzer see it.
 *
 * The child's iterator is tracecmd_iterate_events_multi(), push-style (a
 * callback per record); trace_next() is pull: the records come in chunks of
 * up to CHUNK_BYTES, converted a chunk at a time into a batch of events.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <trace-cmd.h>
#include <event-parse.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/common_interface_defs.h>
#define SANITIZED 1
#endif
#endif
#include "import/binary_internal.h"
#include "import/tracedat_internal.h"
#include "model/summary.h"
#include "sync/sync.h"

#define TRACEDAT_MAGIC "\027\010\104tracing"
#define CHUNK_BYTES (1u << 20) /* records sent by the child at a time */

enum kind {
	K_SWITCH,
	K_WAKEUP,
	K_WAKEUP_NEW,
	K_MIGRATE,
	K_EXIT,
	K_KVM_ENTRY,
	K_KVM_EXIT,
	K_KVM_UEXIT,
	K_KVM_FPU,
	K_KVM_HYPERCALL,
	K_KVM_PIO,
	K_KVM_MMIO,
	K_KVM_MSR,
	K_KVM_PAGE_FAULT,
	K_PRINT,
	K_NR,
};

#define MAX_FIELDS 5

/* The events read, with their fields (in this order: f[0], f[1], ...). */
static const struct {
	const char *sys, *name;
	const char *field[MAX_FIELDS];
} kinds[K_NR] = {
	[K_SWITCH] = { "sched", "sched_switch", { "prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid" } },
	[K_WAKEUP] = { "sched", "sched_wakeup", { "comm", "pid", "target_cpu" } },
	[K_WAKEUP_NEW] = { "sched", "sched_wakeup_new", { "comm", "pid", "target_cpu" } },
	[K_MIGRATE] = { "sched", "sched_migrate_task", { "comm", "pid", "orig_cpu", "dest_cpu" } },
	[K_EXIT] = { "sched", "sched_process_exit", { "comm", "pid", "group_dead" } },
	[K_KVM_ENTRY] = { "kvm", "kvm_entry", { "vcpu_id" } },
	[K_KVM_EXIT] = { "kvm", "kvm_exit", { "exit_reason", "isa", "vcpu_id" } },
	[K_KVM_UEXIT] = { "kvm", "kvm_userspace_exit", { "reason", "errno" } },
	[K_KVM_FPU] = { "kvm", "kvm_fpu", { "load" } },
	[K_KVM_HYPERCALL] = { "kvm", "kvm_hypercall", { "nr", "a0", "a1" } },
	[K_KVM_PIO] = { "kvm", "kvm_pio", { "rw", "port", "size" } },
	[K_KVM_MMIO] = { "kvm", "kvm_mmio", { "type", "gpa", "len" } },
	[K_KVM_MSR] = { "kvm", "kvm_msr", { "write", "ecx", "exception" } },
	[K_KVM_PAGE_FAULT] = { "kvm", "kvm_page_fault", { "fault_address", "error_code" } },
	[K_PRINT] = { "ftrace", "print", { "buf" } },
};

struct tracedat_reader {
	char *path;
	struct trace_opts o;
	struct trace_stats *st;
	struct tracecmd_input *in; /* the headers and formats only (tracecmd_open_head) */
	struct tep_handle *tep;
	struct {
		int id; /* -1: not in this trace */
		struct tep_format_field *f[MAX_FIELDS];
	} ev[K_NR];
	struct tep_format_field *common_type, *common_pid;
	int header_size;	   /* the common fields end here (0: no event read is in the trace) */
	pid_t child;		   /* reading the CPU buffers (0: none) */
	int fd;			   /* the read end of its pipe (-1: none) */
	unsigned char *chunk;	   /* the records it sent last */
	size_t chunk_cap;
	struct trace_batch q;	   /* events of the last chunk */
	uint64_t index;		   /* records read */
	bool ended;
	int pending;		   /* an error met in the chunk, returned once its events are out */
	struct vcpustat_error cerr;
};

/*
 * What the child writes on its pipe: a message, then len bytes. MSG_RECORDS
 * carries records, each a struct raw_record and its size bytes of data,
 * padded to 8 bytes.
 */
enum { MSG_OPENED = 1, MSG_FAILED, MSG_RECORDS, MSG_END };

struct msg {
	uint32_t kind;
	int32_t ret; /* MSG_END: what the iterator returned */
	uint64_t len;
};

struct raw_record {
	uint64_t ts, offset;
	int64_t missed_events;
	int32_t cpu, size; /* size < 0: the record's own (no data follows) */
};

#define PAD8(n) (((n) + 7) & ~(size_t)7)

/* ---- the header: what libtracecmd must not fail on ---- */

bool tracedat_is(const char *path)
{
	char head[sizeof(TRACEDAT_MAGIC) - 1];
	struct stat st;
	int fd;
	bool yes;

	if (!strcmp(path, "-") || stat(path, &st) || !S_ISREG(st.st_mode))
		return false; /* a pipe is read as text, which refuses trace.dat saying so */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	yes = read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) && !memcmp(head, TRACEDAT_MAGIC, sizeof(head));
	close(fd);
	return yes;
}

/* A NUL-terminated string of at most max bytes at *pos in buf[0, n): its start, *pos moved past it. */
static const char *header_string(const char *buf, size_t n, size_t *pos, size_t max)
{
	const char *s = buf + *pos, *nul;

	if (*pos >= n)
		return NULL;
	nul = memchr(s, '\0', n - *pos < max + 1 ? n - *pos : max + 1);
	if (!nul)
		return NULL;
	*pos += (size_t)(nul - s) + 1;
	return s;
}

static int check_header(const char *path, struct vcpustat_error *err)
{
	char buf[256];
	const char *version, *zname = NULL, *zver;
	size_t pos = sizeof(TRACEDAT_MAGIC) - 1;
	uint32_t page;
	ssize_t n;
	int fd = open_input(path, true, err);

	if (fd < 0)
		return fd;
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0)
		return verror(err, -errno, "%s: %s", path, strerror(errno));
	version = header_string(buf, (size_t)n, &pos, 8);
	if (!version)
		return verror(err, -EINVAL, "%s: a trace-cmd trace.dat cut short in its header (%zd bytes)", path, n);
	if (strcmp(version, "6") && strcmp(version, "7"))
		return verror(err, -EINVAL, "%s: trace.dat file version '%.8s': libtracecmd reads versions 6 and 7",
			      path, version);
	if ((size_t)n < pos + 6)
		return verror(err, -EINVAL, "%s: a trace-cmd trace.dat cut short in its header (%zd bytes)", path, n);
	if (buf[pos] != 0 && buf[pos] != 1)
		return verror(err, -EINVAL, "%s: trace.dat header, offset %zu: endianness %d is neither 0 nor 1", path,
			      pos, buf[pos]);
	if (buf[pos + 1] != 4 && buf[pos + 1] != 8)
		return verror(err, -EINVAL, "%s: trace.dat header, offset %zu: the size of a long is %d, not 4 or 8",
			      path, pos + 1, buf[pos + 1]);
	memcpy(&page, buf + pos + 2, 4);
	page = buf[pos] ? be32toh(page) : le32toh(page);
	if (page < 1024 || page > (1u << 20) || (page & (page - 1)))
		return verror(err, -EINVAL, "%s: trace.dat header, offset %zu: page size %u is not a power of two "
					    "from 1 KiB to 1 MiB",
			      path, pos + 2, page);
	pos += 6;
	if (!strcmp(version, "7")) {
		size_t at = pos;

		zname = header_string(buf, (size_t)n, &pos, 64);
		zver = zname ? header_string(buf, (size_t)n, &pos, 64) : NULL;
		if (!zver || (size_t)n < pos + 8)
			return verror(err, -EINVAL, "%s: trace.dat header, offset %zu: cut short or no compression name",
				      path, at);
		/* Debian's libtracecmd is built with zstd only */
		if (strcmp(zname, "none") && strcmp(zname, "zstd"))
			return verror(err, -ENOTSUP, "%s: trace.dat compressed with '%.64s', which libtracecmd here does "
						     "not read (none, zstd)",
				      path, zname);
	}
	return 0;
}

/* ---- fields, always within the record ---- */

static bool raw_number(const struct tep_record *rec, const struct tep_format_field *f, uint64_t *v)
{
	unsigned long long x;

	if (!f || f->offset < 0 || f->size <= 0 || f->size > 8 || f->offset > rec->size - f->size ||
	    (f->flags & TEP_FIELD_IS_ARRAY && !(f->flags & TEP_FIELD_IS_DYNAMIC)))
		return false;
	if (tep_read_number_field((struct tep_format_field *)f, rec->data, &x))
		return false;
	*v = x;
	return true;
}

/* A number field, sign-extended when the format says it is signed. */
static bool get_int(const struct tep_record *rec, const struct tep_format_field *f, int64_t *v)
{
	uint64_t x;

	if (!f || f->flags & TEP_FIELD_IS_DYNAMIC || !raw_number(rec, f, &x))
		return false;
	if (f->flags & TEP_FIELD_IS_SIGNED && f->size < 8 && x >> (f->size * 8 - 1) & 1)
		x |= ~0ull << (f->size * 8);
	*v = (int64_t)x;
	return true;
}

static bool get_u32(const struct tep_record *rec, const struct tep_format_field *f, __u64 *v)
{
	int64_t x;

	if (!get_int(rec, f, &x) || x < 0 || x > UINT32_MAX)
		return false;
	*v = (__u64)x;
	return true;
}

/* A char array (comm), a __data_loc string or a trailing char buf[] into buf, NUL-terminated. */
static bool get_str(const struct tep_record *rec, const struct tep_format_field *f, char *buf, size_t len)
{
	uint64_t off, n, loc;
	const char *s;

	memset(buf, 0, len);
	if (!f)
		return false;
	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		if (f->size != 4 || !raw_number(rec, f, &loc))
			return false;
		off = loc & 0xffff;
		n = loc >> 16;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += (uint64_t)f->offset + (uint64_t)f->size;
	} else {
		if (!(f->flags & TEP_FIELD_IS_ARRAY) || f->offset < 0 || f->size < 0)
			return false;
		off = (uint64_t)f->offset;
		n = f->size ? (uint64_t)f->size : (rec->size > f->offset ? (uint64_t)(rec->size - f->offset) : 0);
	}
	if (rec->size < 0 || off > (uint64_t)rec->size || n > (uint64_t)rec->size - off)
		return false;
	s = (const char *)rec->data + off;
	n = strnlen(s, n);
	if (n > len - 1)
		n = len - 1;
	memcpy(buf, s, n);
	return true;
}

/* ---- events ---- */

static enum conv bad(struct tracedat_reader *r, const struct tep_record *rec, const char *name, const char *what)
{
	snprintf(r->cerr.msg, sizeof(r->cerr.msg), "%s: record %llu (%s on CPU %d at %llu ns, file offset %llu): %s",
		 r->path, (unsigned long long)r->index, name, rec->cpu, (unsigned long long)rec->ts,
		 (unsigned long long)rec->offset, what);
	return CONV_BAD;
}

static int kind_of(const struct tracedat_reader *r, int id)
{
	for (int k = 0; k < K_NR; k++)
		if (r->ev[k].id == id)
			return k;
	return -1;
}

static enum conv convert_event(struct tracedat_reader *r, const struct tep_record *rec, struct trace_event *t,
			       const char **namep)
{
	struct vcpustat_event *e = &t->ev;
	struct tep_format_field *const *f;
	const char *name, *comm;
	int64_t v, pid;
	uint64_t type;
	__u64 u;
	int k;

	memset(t, 0, sizeof(*t));
	t->where = r->index;
	t->tgid = -1;
	if (!r->header_size)
		return CONV_SKIP; /* none of the events read is in this trace */
	if (rec->size < r->header_size || !raw_number(rec, r->common_type, &type))
		return bad(r, rec, "?", "shorter than the events' common fields");
	k = kind_of(r, (int)type);
	if (k < 0)
		return CONV_SKIP; /* by its type, before any field is read */
	name = kinds[k].name;
	*namep = name;
	f = r->ev[k].f;
	if (!get_int(rec, r->common_pid, &pid) || pid < 0 || pid > UINT32_MAX)
		return bad(r, rec, name, "no common_pid, or a negative one");
	e->ts = rec->ts;
	e->cpu = rec->cpu < 0 ? 0 : (__u32)rec->cpu;
	t->pid = (uint32_t)pid;
	comm = tep_data_comm_from_pid(r->tep, (int)pid); /* the saved cmdlines, as trace-cmd report prints */
	snprintf(t->cur_comm, sizeof(t->cur_comm), "%.15s", comm ? comm : "<...>");

	switch (k) {
	case K_SWITCH: {
		__u64 prev, next;

		if (!get_u32(rec, f[1], &prev) || !get_u32(rec, f[4], &next) || !get_int(rec, f[2], &v))
			return bad(r, rec, name, "no prev_pid, next_pid or prev_state");
		if (!binary_prev_state(v, &e->arg0, &e->arg1))
			return bad(r, rec, name, "prev_state is not the task-state report of Linux 4.14 or later");
		e->type = VCPUSTAT_EV_SWITCH;
		e->tid = prev;
		e->tid2 = next;
		get_str(rec, f[0], e->comm, sizeof(e->comm));
		get_str(rec, f[3], t->next_comm, sizeof(t->next_comm));
		return CONV_EVENT;
	}
	case K_WAKEUP:
	case K_WAKEUP_NEW:
		if (!get_u32(rec, f[1], &e->tid) || !get_u32(rec, f[2], &e->arg0))
			return bad(r, rec, name, "no pid or target_cpu");
		e->type = k == K_WAKEUP ? VCPUSTAT_EV_WAKEUP : VCPUSTAT_EV_WAKEUP_NEW;
		get_str(rec, f[0], e->comm, sizeof(e->comm));
		return CONV_EVENT;
	case K_MIGRATE:
		if (!get_u32(rec, f[1], &e->tid) || !get_u32(rec, f[2], &e->arg1) || !get_u32(rec, f[3], &e->arg0))
			return bad(r, rec, name, "no pid, orig_cpu or dest_cpu");
		e->type = VCPUSTAT_EV_MIGRATE;
		get_str(rec, f[0], e->comm, sizeof(e->comm));
		return CONV_EVENT;
	case K_EXIT:
		if (!get_u32(rec, f[1], &e->tid))
			return bad(r, rec, name, "no pid");
		e->type = VCPUSTAT_EV_PROCESS_EXIT;
		e->arg0 = get_int(rec, f[2], &v) && v; /* group_dead: Linux 6.16 and later */
		get_str(rec, f[0], e->comm, sizeof(e->comm));
		return CONV_EVENT;
	case K_PRINT: {
		char buf[256];

		get_str(rec, f[0], buf, sizeof(buf));
		t->marker = vcpustat_sync_parse_marker(buf, &t->key);
		return t->marker ? CONV_EVENT : CONV_SKIP;
	}
	default:
		break;
	}
	/* KVM events are about the current thread */
	e->tid = t->pid;
	memcpy(e->comm, t->cur_comm, sizeof(e->comm));
	switch (k) {
	case K_KVM_ENTRY:
		if (!get_u32(rec, f[0], &e->arg0))
			return bad(r, rec, name, "no vcpu_id");
		e->type = VCPUSTAT_EV_KVM_ENTRY;
		return CONV_EVENT;
	case K_KVM_EXIT: {
		char buf[32];

		if (!get_int(rec, f[0], &v))
			return bad(r, rec, name, "no exit_reason");
		e->type = VCPUSTAT_EV_KVM_EXIT;
		e->arg0 = (uint32_t)v; /* as the kernel has it, as the BPF program reads it */
		e->arg1 = get_u32(rec, f[1], &u) ? u : (r->o.isa ? r->o.isa : KVM_ISA_VMX);
		e->arg2 = get_u32(rec, f[2], &u) ? u : 0xffffffffu; /* vcpu_id: Linux 5.13 and later */
		if (exit_reason_name((unsigned int)e->arg1, (unsigned int)e->arg0, buf, sizeof(buf)) == buf)
			r->st->unknown_reasons++;
		return CONV_EVENT;
	}
	case K_KVM_UEXIT: {
		int64_t no = 0;

		if (!get_int(rec, f[0], &v))
			return bad(r, rec, name, "no reason");
		get_int(rec, f[1], &no);
		e->type = VCPUSTAT_EV_USERSPACE_EXIT;
		if (no < 0) { /* as the text says it: "restart (4)" is KVM_EXIT_INTR, "error (N)" no reason */
			e->arg0 = no == -EINTR ? KVM_UEXIT_INTR : 0;
			e->arg1 = (uint32_t)no;
		} else {
			e->arg0 = (uint32_t)v;
		}
		return CONV_EVENT;
	}
	case K_KVM_FPU:
		if (!get_int(rec, f[0], &v))
			return bad(r, rec, name, "no load");
		if (!v)
			return CONV_SKIP; /* unload: kvm_userspace_exit says why */
		e->type = VCPUSTAT_EV_KVM_RUN;
		return CONV_EVENT;
	case K_KVM_HYPERCALL: {
		int64_t a0, a1 = 0;

		if (!get_int(rec, f[0], &v) || !get_int(rec, f[1], &a0))
			return bad(r, rec, name, "no nr or a0");
		if ((uint64_t)v != VCPUSTAT_SYNC_HYPERCALL_NR)
			return CONV_SKIP; /* not ours: the BPF program ignores it too */
		get_int(rec, f[2], &a1);
		e->type = VCPUSTAT_EV_HYPERCALL;
		e->arg0 = (uint64_t)v;
		e->arg1 = (uint64_t)a0;
		e->arg2 = (uint64_t)a1;
		return CONV_EVENT;
	}
	case K_KVM_PIO:
	case K_KVM_MMIO:
	case K_KVM_MSR: {
		/* exit details: f[0] = direction/type, f[1] = port/address/index, f[2] = size/length/#GP */
		static const __u64 types[] = { [K_KVM_PIO] = VCPUSTAT_EV_PIO, [K_KVM_MMIO] = VCPUSTAT_EV_MMIO,
					       [K_KVM_MSR] = VCPUSTAT_EV_MSR };
		int64_t what, where, extra = 0;

		if (!get_int(rec, f[0], &what) || !get_int(rec, f[1], &where))
			return bad(r, rec, name, k == K_KVM_PIO ? "no rw or port" : k == K_KVM_MMIO ? "no type or gpa" :
										      "no write or ecx");
		get_int(rec, f[2], &extra);
		e->type = types[k];
		e->arg0 = k == K_KVM_MMIO ? (uint64_t)where : (uint32_t)where;
		e->arg1 = (uint32_t)what;
		e->arg2 = (uint32_t)extra;
		return CONV_EVENT;
	}
	case K_KVM_PAGE_FAULT: {
		int64_t addr, code;

		if (!get_int(rec, f[0], &addr) || !get_int(rec, f[1], &code))
			return bad(r, rec, name, "no fault_address or error_code");
		e->type = VCPUSTAT_EV_PAGE_FAULT;
		e->arg0 = (uint64_t)addr;
		e->arg1 = (uint64_t)code;
		return CONV_EVENT;
	}
	default:
		return CONV_SKIP;
	}
}

/* The record as an event, its CPUs checked: one beyond --cpus (or 65535) is malformed, never another CPU. */
static enum conv convert(struct tracedat_reader *r, const struct tep_record *rec, struct trace_event *t)
{
	const char *name = "?";
	enum conv c = convert_event(r, rec, t, &name);
	char why[160];

	if (c == CONV_EVENT && !trace_cpus_ok(&r->o, &t->ev, why, sizeof(why)))
		return bad(r, rec, name, why);
	return c;
}

/* ---- the child: reads the CPU buffers, sends the records ---- */

struct shipper {
	int fd;
	unsigned char *buf;
	size_t n;
};

static void pipe_write(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(2); /* the reader is gone */
		b += w;
		n -= (size_t)w;
	}
}

static void send_msg(int fd, uint32_t kind, int32_t ret, const void *p, size_t len)
{
	struct msg m = { .kind = kind, .ret = ret, .len = len };

	pipe_write(fd, &m, sizeof(m));
	if (len)
		pipe_write(fd, p, len);
}

static void flush_records(struct shipper *sh)
{
	if (sh->n)
		send_msg(sh->fd, MSG_RECORDS, 0, sh->buf, sh->n);
	sh->n = 0;
}

static int ship(struct tracecmd_input *in, struct tep_record *rec, int cpu, void *data)
{
	struct shipper *sh = data;
	struct raw_record h = { .ts = rec->ts, .offset = rec->offset, .missed_events = rec->missed_events,
				.cpu = rec->cpu, .size = rec->data ? rec->size : -1 };
	size_t need = sizeof(h) + (h.size > 0 ? PAD8((size_t)h.size) : 0);

	(void)in;
	(void)cpu;
	if (sh->n + need > CHUNK_BYTES)
		flush_records(sh);
	if (need > CHUNK_BYTES) { /* no record is this big (a page is at most 1 MiB): as if empty */
		h.size = -1;
		need = sizeof(h);
	}
	memcpy(sh->buf + sh->n, &h, sizeof(h));
	if (h.size > 0) {
		memcpy(sh->buf + sh->n + sizeof(h), rec->data, (size_t)h.size);
		memset(sh->buf + sh->n + sizeof(h) + h.size, 0, need - sizeof(h) - (size_t)h.size);
	}
	sh->n += need;
	return 0;
}

#define OPEN_FLAGS TRACECMD_FL_LOAD_NO_PLUGINS

static void __attribute__((noreturn)) child_main(const char *path, int fd)
{
	struct shipper sh = { .fd = fd };
	struct tracecmd_input *in;
	int null, ret;

#ifdef SANITIZED
	/* a crash here is the parent's to report: not the fuzzer's (its death callback writes a crash file) */
	__sanitizer_set_death_callback(NULL);
#endif
	/* libtracecmd printf()s "File possibly truncated" on stdout */
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	sh.buf = malloc(CHUNK_BYTES);
	if (!sh.buf)
		_exit(3);
	/* no tracecmd_close, no leak check: _exit */
	in = tracecmd_open(path, OPEN_FLAGS);
	if (!in) {
		send_msg(fd, MSG_FAILED, 0, NULL, 0);
		_exit(0);
	}
	send_msg(fd, MSG_OPENED, 0, NULL, 0);
	ret = tracecmd_iterate_events_multi(&in, 1, ship, &sh);
	flush_records(&sh);
	send_msg(fd, MSG_END, ret, NULL, 0);
	_exit(0);
}

/* ---- this process: the records into events ---- */

/* One record: 0 to go on, -1 to stop at it (r->pending says why). */
static int on_record(struct tracedat_reader *r, const struct tep_record *rec)
{
	struct trace_event t;

	r->index++;
	r->st->lines++;
	if (rec->missed_events) { /* trace-cmd report: "CPU:n [N EVENTS DROPPED]" */
		r->st->lost_lines++;
		if (rec->missed_events > 0)
			r->st->lost += (uint64_t)rec->missed_events;
	}
	switch (convert(r, rec, &t)) {
	case CONV_EVENT:
		if (trace_batch_push(&r->q, &t)) {
			snprintf(r->cerr.msg, sizeof(r->cerr.msg), "%s: out of memory", r->path);
			r->pending = -ENOMEM;
			return -1;
		}
		break;
	case CONV_SKIP:
		r->st->skipped++;
		break;
	case CONV_BAD:
		if (!r->o.lenient) {
			r->pending = -EINVAL;
			return -1;
		}
		r->st->malformed++;
		if (r->st->nmessages < TRACE_KEEP_MESSAGES)
			snprintf(r->st->messages[r->st->nmessages++], sizeof(r->st->messages[0]), "%.255s",
				 r->cerr.msg);
		break;
	}
	return 0;
}

/* The records of a chunk of len bytes into r->q, until one is bad (not lenient). */
static void convert_chunk(struct tracedat_reader *r, size_t len)
{
	size_t pos = 0;

	while (len - pos >= sizeof(struct raw_record)) {
		struct raw_record h;
		struct tep_record rec;
		size_t data;

		memcpy(&h, r->chunk + pos, sizeof(h));
		pos += sizeof(h);
		data = h.size > 0 ? PAD8((size_t)h.size) : 0;
		if (data > len - pos)
			break; /* our child's own format: cannot happen */
		memset(&rec, 0, sizeof(rec));
		rec.ts = h.ts;
		rec.offset = h.offset;
		rec.missed_events = h.missed_events;
		rec.cpu = h.cpu;
		rec.size = h.size;
		rec.data = h.size >= 0 ? r->chunk + pos : NULL;
		pos += data;
		if (on_record(r, &rec))
			return;
	}
}

static void child_stop(struct tracedat_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->child > 0) {
		kill(r->child, SIGKILL);
		while (waitpid(r->child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	r->child = 0;
}

static int cannot_open(const char *path, struct vcpustat_error *err)
{
	return verror(err, -EINVAL, "%s: libtracecmd cannot read this trace.dat: its headers, event formats or CPU "
				    "buffers are damaged or cut short (was the file truncated?)",
		      path);
}

/* The child ended without saying it was done: how, into r->cerr; -EIO. */
static int child_died(struct tracedat_reader *r)
{
	char how[64], after[48] = "";
	int status = 0;
	pid_t pid = r->child;

	r->child = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid > 0 && WIFSIGNALED(status))
		snprintf(how, sizeof(how), "crashed (signal %d)", WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (r->index)
		snprintf(after, sizeof(after), " after record %llu", (unsigned long long)r->index);
	snprintf(r->cerr.msg, sizeof(r->cerr.msg),
		 "%s: libtracecmd cannot read this trace.dat: its reader %s%s: its CPU buffers or headers are "
		 "damaged or cut short (was the file truncated?)",
		 r->path, how, after);
	return -EIO;
}

/* n bytes from the pipe: 0, or -1 at its end (the child died) or on an error. */
static int read_full(int fd, void *p, size_t n)
{
	unsigned char *b = p;

	while (n) {
		ssize_t got = read(fd, b, n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		b += got;
		n -= (size_t)got;
	}
	return 0;
}

/* The child's next message into *m (its records into r->chunk): 0, or the child died (r->cerr says how). */
static int receive(struct tracedat_reader *r, struct msg *m)
{
	if (read_full(r->fd, m, sizeof(*m)))
		return child_died(r);
	if (m->kind != MSG_RECORDS) {
		if (m->len) /* our child sends no such thing */
			return child_died(r);
		return 0;
	}
	if (m->len > CHUNK_BYTES)
		return child_died(r);
	if (!r->chunk) {
		r->chunk = malloc(CHUNK_BYTES);
		if (!r->chunk) {
			snprintf(r->cerr.msg, sizeof(r->cerr.msg), "%s: out of memory", r->path);
			return -ENOMEM;
		}
	}
	if (read_full(r->fd, r->chunk, m->len))
		return child_died(r);
	return 0;
}

static void reader_free(struct tracedat_reader *r)
{
	child_stop(r);
	if (r->in)
		tracecmd_close(r->in);
	r->in = NULL;
	r->tep = NULL;
	r->q.n = r->q.pos = 0;
	r->index = 0;
	r->ended = false;
	r->pending = 0;
}

/* A child reading r->path; 0 once it has opened the file, or the error. */
static int child_start(struct tracedat_reader *r, struct vcpustat_error *err)
{
	struct msg m;
	int p[2], e;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return verror(err, -errno, "%s: cannot make a pipe to read it: %s", r->path, strerror(errno));
	fcntl(p[1], F_SETPIPE_SZ, (int)CHUNK_BYTES); /* fewer switches; the default 64 KiB works too */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		e = -errno;
		close(p[0]);
		close(p[1]);
		return verror(err, e, "%s: cannot fork to read it: %s", r->path, strerror(-e));
	}
	if (!pid) {
		close(p[0]);
		child_main(r->path, p[1]);
	}
	close(p[1]);
	r->child = pid;
	r->fd = p[0];
	e = receive(r, &m);
	if (!e && m.kind != MSG_OPENED) {
		child_stop(r);
		return cannot_open(r->path, err);
	}
	if (e) {
		child_stop(r);
		return verror(err, e, "%s", r->cerr.msg);
	}
	return 0;
}

static int reader_open(struct tracedat_reader *r, struct vcpustat_error *err)
{
	int e = check_header(r->path, err);

	if (e)
		return e;
	/* libtracecmd and libtraceevent print their complaints; the error below says what failed */
	tracecmd_set_loglevel(TEP_LOG_NONE);
	tep_set_loglevel(TEP_LOG_NONE);
	e = child_start(r, err);
	if (e)
		return e;
	/* the child has opened it: its headers parse; here only they are read (no CPU buffer page) */
	r->in = tracecmd_open_head(r->path, OPEN_FLAGS);
	if (!r->in) {
		child_stop(r);
		return cannot_open(r->path, err);
	}
	r->tep = tracecmd_get_tep(r->in);
	if (!r->tep) {
		reader_free(r);
		return verror(err, -EINVAL, "%s: libtracecmd gave no event formats", r->path);
	}
	r->header_size = 0;
	for (int k = 0; k < K_NR; k++) {
		struct tep_event *ev = tep_find_event_by_name(r->tep, kinds[k].sys, kinds[k].name);
		struct tep_format_field *ct, *cp;

		memset(r->ev[k].f, 0, sizeof(r->ev[k].f));
		r->ev[k].id = -1;
		if (!ev)
			continue;
		ct = tep_find_common_field(ev, "common_type");
		cp = tep_find_common_field(ev, "common_pid");
		if (!ct || !cp)
			continue; /* cannot be told apart or attributed: as if absent */
		if (!r->header_size) {
			r->common_type = ct;
			r->common_pid = cp;
			r->header_size = ct->offset + ct->size > cp->offset + cp->size ? ct->offset + ct->size
										: cp->offset + cp->size;
		}
		r->ev[k].id = ev->id;
		for (int i = 0; i < MAX_FIELDS && kinds[k].field[i]; i++)
			r->ev[k].f[i] = tep_find_field(ev, kinds[k].field[i]);
	}
	if (r->header_size <= 0 || r->common_type->offset < 0 || r->common_pid->offset < 0)
		r->header_size = 0;
	return 0;
}

int tracedat_open(struct tracedat_reader **rp, const char *path, const struct trace_opts *opts,
		  struct trace_stats *st, struct vcpustat_error *err)
{
	struct tracedat_reader *r = calloc(1, sizeof(*r));
	int e;

	*rp = NULL;
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return verror(err, -ENOMEM, "out of memory");
	}
	r->fd = -1;
	r->o = *opts;
	r->st = st;
	e = reader_open(r, err);
	if (e) {
		tracedat_close(r);
		return e;
	}
	*rp = r;
	return 0;
}

/* The child's next message: its records into r->q, or its end (r->ended, r->pending). */
static void next_chunk(struct tracedat_reader *r)
{
	struct msg m;
	int e;

	r->q.n = r->q.pos = 0;
	e = receive(r, &m);
	if (e) {
		r->pending = e;
		child_stop(r);
		return;
	}
	if (m.kind == MSG_RECORDS) {
		convert_chunk(r, (size_t)m.len);
		if (r->pending)
			child_stop(r);
		return;
	}
	if (m.kind == MSG_END && m.ret < 0) { /* libtracecmd's own: a record of an unknown event type after lost events */
		snprintf(r->cerr.msg, sizeof(r->cerr.msg), "%s: libtracecmd stopped after record %llu: a damaged CPU buffer?",
			 r->path, (unsigned long long)r->index);
		r->pending = -EIO;
	} else if (m.kind == MSG_END) {
		r->ended = true;
	} else {
		r->pending = child_died(r);
	}
	child_stop(r);
}

int tracedat_next(struct tracedat_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	while (r->q.pos == r->q.n) {
		if (r->pending)
			return verror(err, r->pending, "%s%s", r->cerr.msg,
				      r->pending == -EINVAL ? " (--lenient skips malformed events)" : "");
		if (r->ended)
			return 0;
		next_chunk(r);
	}
	*ev = r->q.ev[r->q.pos++];
	return 1;
}

int tracedat_rewind(struct tracedat_reader *r, struct vcpustat_error *err)
{
	reader_free(r);
	return reader_open(r, err);
}

void tracedat_close(struct tracedat_reader *r)
{
	if (!r)
		return;
	reader_free(r);
	free(r->chunk);
	free(r->q.ev);
	free(r->path);
	free(r);
}
