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
 * fuzz-tracedat in CI on 2026-11-23). Telling these apart would take parsing
 * the file's sections and pages, which is libtracecmd's job: so the first
 * open of a file is tried in a child process, which also reads every record,
 * and only a file that opens and reads there is opened here (the price: the
 * file's records are read twice). That check is not airtight: the out-of-bounds
 * read may land on mapped memory in the child and not in this process (seen
 * once, in the fuzzer, on 2026-11-28: tests/data/tracedat/README.md). Reading
 * the records in the child and passing them here would close it; not done yet.
 *
 * The iterator is push-style (a callback per record); trace_next() is pull:
 * the callback fills a batch and stops the iteration (returning -1), which
 * the next batch resumes where the per-CPU cursors stand.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
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
#include "import/tracedat_internal.h"
#include "model/model.h"
#include "sync/sync.h"

#define TRACEDAT_MAGIC "\027\010\104tracing"
#define TRACEDAT_BATCH 4096

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
	struct tracecmd_input *in;
	struct tep_handle *tep;
	struct {
		int id; /* -1: not in this trace */
		struct tep_format_field *f[MAX_FIELDS];
	} ev[K_NR];
	struct tep_format_field *common_type, *common_pid;
	int header_size;	   /* the common fields end here (0: no event read is in the trace) */
	struct trace_batch q; /* events of the last batch */
	uint64_t index;		   /* records read */
	bool paused, ended;
	int pending;		   /* an error met in the batch, returned once its events are out */
	struct vcpustat_error cerr;
};

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

/*
 * prev_state as Linux >= 4.14 reports it: 1 S, 2 D, 4 T, 8 t, 0x10 X, 0x20 Z,
 * 0x40 P, 0x80 I, | 0x100 (TASK_REPORT_MAX) when preempted; to the kernel's
 * TASK_* bits as ftrace.c reads the same letters ("S+" = S, preempted).
 */
static bool prev_state(int64_t v, __u64 *state, __u64 *preempt)
{
	uint64_t s = (uint64_t)v & 0xff;

	if (v < 0 || v > 0x1ff)
		return false;
	*preempt = !!(v & 0x100);
	*state = s & 0x80 ? (s & ~0x80ull) | 0x402 : s; /* I: TASK_IDLE, a sleep, not an exit */
	return true;
}

/* ---- events ---- */

enum conv { CONV_EVENT = 1, CONV_SKIP, CONV_BAD };

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

static enum conv convert(struct tracedat_reader *r, const struct tep_record *rec, struct trace_event *t)
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
		if (!prev_state(v, &e->arg0, &e->arg1))
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

/* ---- the iteration ---- */

static int on_record(struct tracecmd_input *in, struct tep_record *rec, int cpu, void *data)
{
	struct tracedat_reader *r = data;
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
	if (r->q.n >= TRACEDAT_BATCH) {
		r->paused = true;
		return -1; /* stops the iterator; the next batch goes on from here */
	}
	return 0;
}

static void reader_free(struct tracedat_reader *r)
{
	if (r->in)
		tracecmd_close(r->in);
	r->in = NULL;
	r->tep = NULL;
	r->q.n = r->q.pos = 0;
	r->index = 0;
	r->paused = r->ended = false;
	r->pending = 0;
}

#define OPEN_FLAGS TRACECMD_FL_LOAD_NO_PLUGINS

static int cannot_open(const char *path, struct vcpustat_error *err)
{
	return verror(err, -EINVAL, "%s: libtracecmd cannot read this trace.dat: its headers, event formats or CPU "
				    "buffers are damaged or cut short (was the file truncated?)",
		      path);
}

static int skip_record(struct tracecmd_input *in, struct tep_record *rec, int cpu, void *data)
{
	(void)in;
	(void)rec;
	(void)cpu;
	(void)data;
	return 0;
}

/* Open and read path with libtracecmd in a child (see the top): 0 if it can, or the error. */
static int try_open(const char *path, struct vcpustat_error *err)
{
	struct tracecmd_input *in;
	int status, null;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return verror(err, -errno, "%s: cannot fork to open it: %s", path, strerror(errno));
	if (!pid) {
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
		/* no tracecmd_close, no leak check: _exit */
		in = tracecmd_open(path, OPEN_FLAGS);
		if (!in)
			_exit(1);
		/* every record, as the import will read them: a damaged CPU buffer crashes here, not there */
		tracecmd_iterate_events_multi(&in, 1, skip_record, NULL);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return verror(err, -errno, "%s: %s", path, strerror(errno));
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFSIGNALED(status))
		return verror(err, -EINVAL, "%s: libtracecmd crashed (signal %d) opening or reading this trace.dat: "
					    "its CPU buffers or headers are damaged or cut short (was the file truncated?)",
			      path, WTERMSIG(status));
	return cannot_open(path, err);
}

static int reader_open(struct tracedat_reader *r, bool first, struct vcpustat_error *err)
{
	int e = check_header(r->path, err);

	if (e)
		return e;
	/* libtracecmd and libtraceevent print their complaints; the error below says what failed */
	tracecmd_set_loglevel(TEP_LOG_NONE);
	tep_set_loglevel(TEP_LOG_NONE);
	if (first && (e = try_open(r->path, err)))
		return e;
	r->in = tracecmd_open(r->path, OPEN_FLAGS);
	if (!r->in)
		return cannot_open(r->path, err);
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
	r->o = *opts;
	r->st = st;
	e = reader_open(r, true, err);
	if (e) {
		tracedat_close(r);
		return e;
	}
	*rp = r;
	return 0;
}

int tracedat_next(struct tracedat_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	while (r->q.pos == r->q.n) {
		int ret;

		if (r->pending)
			return verror(err, r->pending, "%s%s", r->cerr.msg,
				      r->pending == -EINVAL ? " (--lenient skips malformed events)" : "");
		if (r->ended)
			return 0;
		r->q.n = r->q.pos = 0;
		r->paused = false;
		ret = tracecmd_iterate_events_multi(&r->in, 1, on_record, r);
		if (r->paused || r->pending)
			continue;
		if (ret < 0) { /* libtracecmd's own: a record of an unknown event type after lost events */
			snprintf(r->cerr.msg, sizeof(r->cerr.msg), "%s: libtracecmd stopped after record %llu: a "
								 "damaged CPU buffer?",
				 r->path, (unsigned long long)r->index);
			r->pending = -EIO;
			continue;
		}
		r->ended = true;
	}
	*ev = r->q.ev[r->q.pos++];
	return 1;
}

int tracedat_rewind(struct tracedat_reader *r, struct vcpustat_error *err)
{
	reader_free(r);
	return reader_open(r, false, err);
}

void tracedat_close(struct tracedat_reader *r)
{
	if (!r)
		return;
	reader_free(r);
	free(r->q.ev);
	free(r->path);
	free(r);
}
