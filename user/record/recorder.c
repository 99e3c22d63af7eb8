// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* recorder.c - records -> State History Tree files (docs/sht-attributes.md). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/util.h"
#include "record/record.h"

#define REORDER_DEFAULT_NS 20000000ull

/*
 * An attribute we write, with its current value: a file starts with the
 * value every attribute has at its first instant (events before a
 * recording's start, rotation). An exit (exit_reason, userspace_exit) is an
 * event, not a state: one that began before a file's start is not in it.
 */
struct attr {
	char *path;
	uint32_t id; /* in the current file, SHT_NO_ATTR until used there */
	enum sht_type type;
	int64_t i;
	const char *s; /* interned */
	bool exit;     /* an exit being handled: not carried into a new file */
};

struct vcpu_attrs {
	uint32_t tgid, index;
	size_t state, exit, uexit, pcpu, tid, sync, access, fault, wake, wake_vector, guest_cr3, numa_moves,
		guest_level, halt_poll_ns; /* that last */
};
#define VCPU_NR_ATTRS 14

struct thread_attrs {
	size_t state, name, pid;
};

/* A VMM thread's attributes at level vcpu: /vms/<vm>/vmm/<tid>/{state,kind,name,cpu}. */
struct vmm_attrs {
	size_t state, kind, name, cpu;
};

/*
 * An attribute value given by recorder_set(), kept in the reorder window
 * beside the records: same size, ts at the same place, and a marker where a
 * record has its type, so that one heap orders both.
 */
#define PENDING_VALUE 0xffu
struct attr_value {
	uint64_t ts;
	uint32_t attr; /* index in recorder.attrs */
	uint8_t type;  /* enum sht_type */
	uint8_t pad[3];
	uint8_t marker; /* PENDING_VALUE */
	uint8_t pad2[7];
	union {
		int64_t i;
		const char *s; /* interned */
	};
};
_Static_assert(sizeof(struct attr_value) == sizeof(struct vcpustat_record), "attr_value: size of a record");
_Static_assert(offsetof(struct attr_value, marker) == offsetof(struct vcpustat_record, type),
	       "attr_value: marker where a record has its type");

struct pending {
	union {
		struct vcpustat_record rec;
		struct attr_value val;
	};
	uint64_t seq;
};

struct recorder {
	struct recorder_opts o;
	struct sht_writer *w; /* NULL after a failed rotation: failed says why */
	int failed;
	char path[4096];
	char **files; /* files written, oldest first (rotation) */
	size_t nfiles;
	char stamp[32]; /* rotation: the second in the last file's name, and its counter there */
	int stamp_n;
	uint64_t file_start; /* t of the current file's first instant */
	struct attr *attrs;
	size_t nattrs;
	struct hashmap vcpus;	/* tid -> struct vcpu_attrs */
	struct hashmap threads; /* tid -> struct thread_attrs */
	struct hashmap vmm;	/* tid -> struct vmm_attrs (level vcpu) */
	struct hashmap cpus;	/* cpu -> size_t attr index of current_tid; cpu | 1 << 31: of runner_tid */
	struct hashmap vms;	/* tgid -> char[64] path name */
	struct hashmap vm_names; /* char[64] path name -> tgid */
	struct hashmap strings; /* u64 hash of the text -> struct interned * (those with that hash) */
	struct hashmap reason_names; /* (kind << 40 | isa << 32 | reason) -> interned name */
	const char *s_running, *s_preempted, *s_blocked, *s_wait;
	size_t lost_attr;
	struct pending *heap;  /* records that came out of order */
	size_t nheap, capheap;
	struct pending *fifo;  /* records that came in order (most): a ring */
	size_t fhead, nfifo, capfifo;
	uint64_t seq, max_ts, last_t;
	bool begun; /* a record at or after mono_start_ns was applied: the file's history has begun */
	struct recorder_stats st;
	uint64_t intervals_closed; /* intervals of files already closed */
	uint64_t closed_bytes;	   /* the size of the last file closed */
};

/* An interned string: one copy of each text (at most SHT_MAX_STRING - 1 bytes), kept to the end. */
struct interned {
	struct interned *next; /* another text with the same hash */
	char s[];
};

/*
 * The one copy of s's text (cut to SHT_MAX_STRING - 1 bytes), NULL if out of
 * memory. Keyed by a hash of the text's own bytes: a string is set at every
 * state change of a guest thread in an import (2 M times for 1 M guest
 * events), and a key of SHT_MAX_STRING bytes hashed and compared whole cost
 * more than the rest of the import (bench/RESULTS.md, "fused").
 */
static const char *intern(struct recorder *r, const char *s)
{
	size_t n = strnlen(s, SHT_MAX_STRING - 1);
	uint64_t h = 1469598103934665603ull;
	struct interned **hit, *fresh, *head = NULL;

	for (size_t i = 0; i < n; i++) /* FNV-1a */
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	hit = hashmap_lookup(&r->strings, &h);
	if (hit)
		for (head = *hit; head; head = head->next)
			if (!strncmp(head->s, s, n) && !head->s[n])
				return head->s;
	fresh = malloc(sizeof(*fresh) + n + 1);
	if (!fresh)
		return NULL;
	memcpy(fresh->s, s, n);
	fresh->s[n] = '\0';
	fresh->next = hit ? *hit : NULL;
	if (hashmap_update(&r->strings, &h, &fresh)) {
		free(fresh);
		return NULL;
	}
	return fresh->s;
}

static int attr_new(struct recorder *r, const char *path, size_t *idx)
{
	struct attr *a = realloc(r->attrs, (r->nattrs + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	r->attrs = a;
	a = &r->attrs[r->nattrs];
	memset(a, 0, sizeof(*a));
	a->path = strdup(path);
	if (!a->path)
		return -ENOMEM;
	a->id = SHT_NO_ATTR;
	a->type = SHT_NULL;
	*idx = r->nattrs++;
	return 0;
}

static int attr_id(struct recorder *r, struct attr *a)
{
	if (a->id == SHT_NO_ATTR)
		return sht_writer_attr(r->w, a->path, &a->id);
	return 0;
}

/*
 * The attribute at idx holds v from t on (nothing is written when it already
 * does). Strings must be interned (intern(), reason_name()): equal strings
 * are the same pointer.
 */
/* An attribute made only when first set (a vCPU's exit_access, exit_fault, halt_poll_ns): setting it before is nothing. */
#define ATTR_NONE ((size_t)-1)

static int size_rotate(struct recorder *r, const struct attr *a, uint64_t t, const char *s);

static int attr_set(struct recorder *r, size_t idx, uint64_t t, enum sht_type type, int64_t i, const char *s)
{
	struct attr *a;
	struct sht_value v = { .type = type, .i = i };
	int err;

	if (idx == ATTR_NONE)
		return 0;
	a = &r->attrs[idx];

	if (type == SHT_STR && !s)
		return -ENOMEM; /* a failed intern() */
	if (a->type == type && (type == SHT_NULL || (type == SHT_INT && a->i == i) || (type == SHT_STR && a->s == s)))
		return 0;
	if (a->type == SHT_NULL && type == SHT_NULL)
		return 0;
	err = size_rotate(r, a, t, type == SHT_STR ? s : NULL);
	if (err)
		return err;
	a->type = type;
	a->i = i;
	a->s = s;
	if (!r->begun)
		return 0; /* before the start: the value the file will start with */
	err = attr_id(r, a);
	if (err)
		return err;
	v.s = s;
	return sht_writer_set(r->w, a->id, t, &v);
}

static int set_int(struct recorder *r, size_t idx, uint64_t t, int64_t i)
{
	return attr_set(r, idx, t, SHT_INT, i, NULL);
}

static int set_str(struct recorder *r, size_t idx, uint64_t t, const char *s)
{
	return attr_set(r, idx, t, SHT_STR, 0, s);
}

static int set_null(struct recorder *r, size_t idx, uint64_t t)
{
	return attr_set(r, idx, t, SHT_NULL, 0, NULL);
}

/* ---- files ---- */

static void file_name(struct recorder *r, uint64_t t, char *out, size_t len)
{
	const char *p = r->o.path;
	size_t stem = strlen(p);
	time_t secs;
	struct tm tm;
	char stamp[32];
	int n;

	if (!r->o.max_bytes && !r->o.rotate_ns) {
		snprintf(out, len, "%s", p);
		return;
	}
	if (stem > 4 && !strcmp(p + stem - 4, ".sht"))
		stem -= 4;
	secs = (time_t)((r->o.real_start_ns + t) / 1000000000ull);
	localtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	/*
	 * Two rotations within a second: a counter, after the last file's (not
	 * the name of a file deleted since, see free_space()), and past any file
	 * that is there.
	 */
	n = strcmp(stamp, r->stamp) ? 1 : r->stamp_n + 1;
	for (;; n++) {
		if (n == 1)
			snprintf(out, len, "%.*s-%s.sht", (int)stem, p, stamp);
		else
			snprintf(out, len, "%.*s-%s-%d.sht", (int)stem, p, stamp, n);
		if (access(out, F_OK) || n >= 1000)
			break;
	}
	snprintf(r->stamp, sizeof(r->stamp), "%s", stamp);
	r->stamp_n = n;
}

/*
 * Every attribute starts the file at t with its current value, but for
 * exits in progress: they began before the file, they are not in it.
 */
static int file_values(struct recorder *r, uint64_t t)
{
	for (size_t i = 0; i < r->nattrs; i++) {
		struct attr *a = &r->attrs[i];
		struct sht_value v = { .type = a->type, .i = a->i, .s = a->s };
		int e;

		if (a->exit)
			a->type = SHT_NULL;
		if (a->type == SHT_NULL)
			continue;
		e = attr_id(r, a);
		if (!e)
			e = sht_writer_set(r->w, a->id, t, &v);
		if (e)
			return e;
	}
	return 0;
}

/*
 * The first record at or after the start: what the records before it said
 * becomes the file's values at its start (none of them is an event of the file).
 */
static int begin(struct recorder *r)
{
	if (r->begun)
		return 0;
	r->begun = true;
	return file_values(r, r->file_start);
}

/* Rotation: forget the oldest file of the series, and delete it. */
static void drop_oldest(struct recorder *r)
{
	unlink(r->files[0]);
	free(r->files[0]);
	memmove(r->files, r->files + 1, (r->nfiles - 1) * sizeof(*r->files));
	r->nfiles--;
}

/*
 * The disk is full while path is written (rotation with keep: the files of
 * the series may be deleted): delete the oldest file of the series, unless it
 * is path, so that the write can go on. The newest files are kept, and the one
 * being written always; -ENOSPC when there is nothing left to delete.
 */
static int free_space(void *ctx, const char *path)
{
	struct recorder *r = ctx;

	if (!r->nfiles || !strcmp(r->files[0], path))
		return -ENOSPC;
	drop_oldest(r);
	r->st.freed++;
	return 0;
}

/* Rotation names its files after path (NAME-<time>.sht): not after a device's or a FIFO's. */
static int series_check(const char *path, struct vcpustat_error *err)
{
	const char *what = NULL;
	int e = outfile_in_place(path, &what, err);

	if (e <= 0)
		return e;
	return verror(err, -EINVAL,
		      "%s: is %s: rotation writes a series of files named after it (NAME-<time>.sht); give a file name",
		      path, what);
}

static int file_open(struct recorder *r, uint64_t t, struct vcpustat_error *err)
{
	bool rotating = r->o.max_bytes || r->o.rotate_ns;
	struct sht_writer_opts wo = {
		.tree_start = t,
		.mono_start_ns = r->o.mono_start_ns,
		.real_start_ns = r->o.real_start_ns,
		.meta = r->o.meta,
		.nmeta = r->o.nmeta,
		.no_sync = r->o.no_sync,
		/* a file of the series appears with its header whole, or not at all */
		.whole_header = rotating,
		.atomic = r->o.atomic,
		.no_space = rotating && r->o.keep ? free_space : NULL,
		.ctx = r,
	};
	char **files;
	int e;

	file_name(r, t, r->path, sizeof(r->path));
	e = sht_writer_create(&r->w, r->path, &wo, err);
	if (e)
		return e;
	r->file_start = t;
	files = realloc(r->files, (r->nfiles + 1) * sizeof(*files));
	if (!files)
		return verror(err, -ENOMEM, "out of memory");
	r->files = files;
	r->files[r->nfiles] = strdup(r->path);
	if (!r->files[r->nfiles])
		return verror(err, -ENOMEM, "out of memory");
	r->nfiles++;
	r->st.files++;
	for (size_t i = 0; i < r->nattrs; i++)
		r->attrs[i].id = SHT_NO_ATTR;
	if (r->begun) {
		e = file_values(r, t);
		if (e)
			return verror(err, e, "%s: %s", r->path, strerror(-e));
	}
	/* rotation keeps the newest files */
	while (r->o.keep && r->nfiles > r->o.keep)
		drop_oldest(r);
	return 0;
}

static int file_close(struct recorder *r, uint64_t t, struct vcpustat_error *err)
{
	struct sht_writer_stats ws;
	int e;

	if (!r->w)
		return r->failed;
	e = sht_writer_finish(r->w, t, &ws, err);
	r->w = NULL;
	r->intervals_closed += ws.intervals; /* the intervals the close ended too: the file's count */
	r->closed_bytes = ws.bytes;
	return e;
}

/* Close the file at t and go on in the next one. */
static int rotate(struct recorder *r, uint64_t t, struct vcpustat_error *err)
{
	int e = file_close(r, t, err);

	if (!e)
		e = file_open(r, t, err);
	if (e && !r->w) /* no file to go on with: every later write fails with e */
		r->failed = e;
	return e;
}

static int maybe_rotate(struct recorder *r, uint64_t t, struct vcpustat_error *err)
{
	bool due = false;

	if (!r->o.max_bytes && !r->o.rotate_ns)
		return 0;
	if (!r->w)
		return r->failed;
	if (r->o.rotate_ns && t >= r->file_start + r->o.rotate_ns)
		due = true;
	if (!due || t <= r->file_start)
		return 0;
	return rotate(r, t, err);
}

/*
 * --max-size: before a set, rotate at t if the file, closed after it, could
 * be larger than max_bytes (the writer's own bound: sht_writer_close_size()),
 * so that every file of the series is at most max_bytes. The set then goes
 * into the new file. A file's first instant is never cut: a file holds at
 * least the values it starts with.
 */
static int size_rotate(struct recorder *r, const struct attr *a, uint64_t t, const char *s)
{
	size_t defs = 0;

	if (!r->o.max_bytes || !r->w || !r->begun || t <= r->file_start)
		return 0;
	if (a->id == SHT_NO_ATTR) { /* its path's components, each a definition: its name + 12 bytes */
		defs = 12;
		for (const char *c = a->path; *c; c++)
			defs += 1 + (*c == '/') * 12;
	}
	if (s)
		defs += strlen(s) + 8;
	if (sht_writer_close_size(r->w, defs, false) <= r->o.max_bytes)
		return 0;
	return rotate(r, t, NULL);
}

/* ---- attributes of vCPUs, threads, CPUs ---- */

static const char *vm_path_name(struct recorder *r, uint32_t tgid)
{
	char name[64] = { 0 }, cand[64] = { 0 };
	char *hit = hashmap_lookup(&r->vms, &tgid);
	const char *given;
	uint32_t *owner;

	if (hit)
		return hit;
	given = r->o.vm_name ? r->o.vm_name(r->o.ctx, tgid) : NULL;
	if (given && *given)
		snprintf(name, sizeof(name), "%s", given);
	else
		snprintf(name, sizeof(name), "pid%u", tgid);
	for (char *c = name; *c; c++)
		if (*c == '/')
			*c = '_';
	snprintf(cand, sizeof(cand), "%s", name);
	owner = hashmap_lookup(&r->vm_names, cand);
	if (owner && *owner != tgid) { /* two VMs with one name: the second gets its pid */
		memset(cand, 0, sizeof(cand));
		snprintf(cand, sizeof(cand), "%.50s#%u", name, tgid);
	}
	if (hashmap_update(&r->vms, &tgid, cand) || hashmap_update(&r->vm_names, cand, &tgid))
		return NULL;
	return hashmap_lookup(&r->vms, &tgid);
}

static int vcpu_attrs_make(struct recorder *r, uint32_t tgid, uint32_t index, struct vcpu_attrs *va, uint64_t t)
{
	static const char *const leaf[] = { "state", "exit_reason", "userspace_exit", "pcpu", "tid", "sync" };
	size_t *slots[] = { &va->state, &va->exit, &va->uexit, &va->pcpu, &va->tid, &va->sync };
	const char *vm = vm_path_name(r, tgid);
	char path[512];
	int e;

	if (!vm)
		return -ENOMEM;
	va->tgid = tgid;
	va->index = index;
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		snprintf(path, sizeof(path), "/vms/%s/vcpus/%u/%s", vm, index, leaf[i]);
		e = attr_new(r, path, slots[i]);
		if (e)
			return e;
	}
	r->attrs[va->exit].exit = true;
	r->attrs[va->uexit].exit = true;
	/* made at the vCPU's first exit detail: a file without them does not say "none" (docs/sht-attributes.md) */
	va->access = va->fault = ATTR_NONE;
	va->halt_poll_ns = ATTR_NONE; /* and at its first halt_poll_ns: an older file does not say 0 */
	va->wake = ATTR_NONE;	      /* and at its first wake-up's entry */
	va->wake_vector = ATTR_NONE;
	va->guest_cr3 = ATTR_NONE; /* and at its first guest CR3 (--address-spaces) */
	va->numa_moves = ATTR_NONE; /* and at its first move by NUMA balancing */
	va->guest_level = ATTR_NONE; /* and when it first runs a nested guest (L2) */
	return 0;
}

/* A vCPU's attribute made at its first value (*slot ATTR_NONE until then): /vms/<vm>/vcpus/<n>/<leaf>. */
static int vcpu_lazy_attr(struct recorder *r, const struct vcpu_attrs *va, size_t *slot, const char *leaf)
{
	char path[512];

	if (*slot != ATTR_NONE)
		return 0;
	snprintf(path, sizeof(path), "/vms/%s/vcpus/%u/%s", vm_path_name(r, va->tgid), va->index, leaf);
	return attr_new(r, path, slot);
}

/*
 * Under parent ("/vms/<vm>" or "/host/threads/<tid>"): tid's cgroup and
 * pidns, if the callback knows them; c (may be NULL): the container the
 * cgroup names (runtime[0] and pod[0] "" if none).
 */
static int cgroup_attrs(struct recorder *r, const char *parent, uint32_t tid, uint64_t t, struct container_ref *c)
{
	const char *cg;
	uint64_t pidns = 0;
	char path[512];
	size_t idx;
	int e;

	if (!r->o.cgroup || !(cg = r->o.cgroup(r->o.ctx, tid, &pidns)))
		return 0;
	if (c)
		cgroup_container(cg, c);
	snprintf(path, sizeof(path), "%s/cgroup", parent);
	e = attr_new(r, path, &idx);
	if (!e)
		e = set_str(r, idx, t, intern(r, cg));
	if (!e && pidns) {
		snprintf(path, sizeof(path), "%s/pidns", parent);
		e = attr_new(r, path, &idx);
		if (!e)
			e = set_int(r, idx, t, (int64_t)pidns);
	}
	return e;
}

/*
 * Under parent ("/vms/<vm>" or "/host/threads/<tid>"): the Kubernetes names
 * this host's container runtime gives the container (pod_name, pod_namespace,
 * container_name), so that a report made elsewhere, or after the pod is
 * gone, still names it.
 */
static int k8s_attrs(struct recorder *r, const char *vm, const struct container_ref *c, uint64_t t)
{
	const char *leaf[3] = { "pod_name", "pod_namespace", "container_name" };
	const char *v[3] = { c->pod_name, c->pod_namespace, c->name };
	char path[512];
	int e = 0;

	for (int i = 0; i < 3 && !e; i++) {
		size_t idx;

		if (!v[i][0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", vm, leaf[i]);
		e = attr_new(r, path, &idx);
		if (!e)
			e = set_str(r, idx, t, intern(r, v[i]));
	}
	return e;
}

static int vm_pid_attr(struct recorder *r, uint32_t tgid, uint64_t t)
{
	struct container_ref c = { 0 };
	char path[512], vm[300];
	size_t idx;
	int e;

	snprintf(vm, sizeof(vm), "/vms/%s", vm_path_name(r, tgid));
	snprintf(path, sizeof(path), "%s/pid", vm);
	for (size_t i = 0; i < r->nattrs; i++)
		if (!strcmp(r->attrs[i].path, path))
			return 0;
	e = attr_new(r, path, &idx);
	if (!e)
		e = set_int(r, idx, t, tgid);
	if (!e)
		e = cgroup_attrs(r, vm, tgid, t, &c);
	return e ? e : k8s_attrs(r, vm, &c, t);
}

static int vcpu_null_all(struct recorder *r, struct vcpu_attrs *va, uint64_t t)
{
	size_t all[VCPU_NR_ATTRS] = { va->state, va->exit,   va->uexit, va->pcpu,	     va->tid,
				      va->sync,	 va->access, va->fault, va->wake,	     va->wake_vector,
				      va->guest_cr3, va->numa_moves, va->guest_level, va->halt_poll_ns };
	int e = 0;

	for (size_t i = 0; i < VCPU_NR_ATTRS && !e; i++)
		e = set_null(r, all[i], t);
	return e;
}

/* The vCPU of a record, created (or re-indexed) as needed. */
static struct vcpu_attrs *vcpu_get(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, int *err)
{
	struct vcpu_attrs *va = hashmap_lookup(&r->vcpus, &rec->tid), fresh;

	*err = 0;
	if (rec->vcpu == VCPUSTAT_VCPU_NONE)
		return va;
	if (va && va->index == rec->vcpu && va->tgid == rec->tgid)
		return va;
	if (va) { /* re-indexed: the old attributes end, the new ones take the values */
		struct vcpu_attrs old = *va;
		size_t oldi[VCPU_NR_ATTRS] = { old.state, old.exit,	old.uexit, old.pcpu,	     old.tid,
					       old.sync,  old.access,	old.fault, old.wake,	     old.wake_vector,
					       old.guest_cr3, old.numa_moves, old.guest_level, old.halt_poll_ns };
		struct attr saved[VCPU_NR_ATTRS];

		for (size_t i = 0; i < VCPU_NR_ATTRS; i++)
			if (oldi[i] != ATTR_NONE)
				saved[i] = r->attrs[oldi[i]];
		*err = vcpu_null_all(r, va, t);
		if (!*err)
			*err = vcpu_attrs_make(r, rec->tgid, rec->vcpu, &fresh, t);
		if (*err)
			return NULL;
		{
			size_t newi[VCPU_NR_ATTRS] = { fresh.state, fresh.exit,	  fresh.uexit, fresh.pcpu,
						       fresh.tid,   fresh.sync,	  fresh.access, fresh.fault,
						       fresh.wake,  fresh.wake_vector, fresh.guest_cr3, fresh.numa_moves,
						       fresh.guest_level, fresh.halt_poll_ns };

			for (size_t i = 0; i < VCPU_NR_ATTRS && !*err; i++)
				if (oldi[i] != ATTR_NONE) /* an open exit's access is not carried to the new index */
					*err = attr_set(r, newi[i], t, saved[i].type, saved[i].i, saved[i].s);
		}
		/* halt_poll_ns is a setting, not an exit's: the new index has it too */
		if (!*err && old.halt_poll_ns != ATTR_NONE && saved[VCPU_NR_ATTRS - 1].type == SHT_INT) {
			*err = vcpu_lazy_attr(r, &fresh, &fresh.halt_poll_ns, "halt_poll_ns");
			if (!*err)
				*err = set_int(r, fresh.halt_poll_ns, t, saved[VCPU_NR_ATTRS - 1].i);
		}
	} else {
		*err = vcpu_attrs_make(r, rec->tgid, rec->vcpu, &fresh, t);
		if (!*err)
			*err = vm_pid_attr(r, rec->tgid, t);
		if (!*err)
			*err = set_int(r, fresh.tid, t, rec->tid);
	}
	if (*err || hashmap_update(&r->vcpus, &rec->tid, &fresh)) {
		*err = *err ? *err : -ENOMEM;
		return NULL;
	}
	return hashmap_lookup(&r->vcpus, &rec->tid);
}

static struct thread_attrs *thread_get(struct recorder *r, uint32_t tid, uint64_t t, int *err)
{
	struct thread_attrs *ta = hashmap_lookup(&r->threads, &tid), fresh;
	const char *name = NULL;
	uint32_t tgid = 0;
	char path[256];

	*err = 0;
	if (ta)
		return ta;
	snprintf(path, sizeof(path), "/host/threads/%u/state", tid);
	*err = attr_new(r, path, &fresh.state);
	snprintf(path, sizeof(path), "/host/threads/%u/name", tid);
	if (!*err)
		*err = attr_new(r, path, &fresh.name);
	snprintf(path, sizeof(path), "/host/threads/%u/pid", tid);
	if (!*err)
		*err = attr_new(r, path, &fresh.pid);
	if (!*err && r->o.thread_name)
		name = r->o.thread_name(r->o.ctx, tid, &tgid);
	if (!*err && name)
		*err = set_str(r, fresh.name, t, intern(r, name));
	if (!*err && name)
		*err = set_int(r, fresh.pid, t, tgid);
	snprintf(path, sizeof(path), "/host/threads/%u", tid);
	if (!*err && name) {
		struct container_ref c = { 0 };

		*err = cgroup_attrs(r, path, tid, t, &c);
		if (!*err)
			*err = k8s_attrs(r, path, &c, t);
	}
	if (*err || hashmap_update(&r->threads, &tid, &fresh)) {
		*err = *err ? *err : -ENOMEM;
		return NULL;
	}
	return hashmap_lookup(&r->threads, &tid);
}

/* A VMM thread of a level-vcpu recording (REC_VMM): /vms/<vm>/vmm/<tid>/{state,kind,name,cpu}. */
static struct vmm_attrs *vmm_get(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, int *err)
{
	static const char *const kind[VCPUSTAT_NR_VMM_KINDS] = { "emulator", "vhost" };
	struct vmm_attrs *ta = hashmap_lookup(&r->vmm, &rec->tid), fresh;
	const char *vm = vm_path_name(r, rec->tgid), *name = NULL;
	uint32_t tgid = 0;
	char path[512];

	*err = 0;
	if (ta)
		return ta;
	if (!vm || rec->from >= VCPUSTAT_NR_VMM_KINDS) {
		*err = vm ? -EINVAL : -ENOMEM;
		return NULL;
	}
	snprintf(path, sizeof(path), "/vms/%s/vmm/%u/state", vm, rec->tid);
	*err = attr_new(r, path, &fresh.state);
	snprintf(path, sizeof(path), "/vms/%s/vmm/%u/kind", vm, rec->tid);
	if (!*err)
		*err = attr_new(r, path, &fresh.kind);
	if (!*err)
		*err = set_str(r, fresh.kind, t, intern(r, kind[rec->from]));
	snprintf(path, sizeof(path), "/vms/%s/vmm/%u/name", vm, rec->tid);
	if (!*err)
		*err = attr_new(r, path, &fresh.name);
	snprintf(path, sizeof(path), "/vms/%s/vmm/%u/cpu", vm, rec->tid);
	if (!*err)
		*err = attr_new(r, path, &fresh.cpu);
	if (!*err && r->o.thread_name)
		name = r->o.thread_name(r->o.ctx, rec->tid, &tgid);
	if (!*err && name)
		*err = set_str(r, fresh.name, t, intern(r, name));
	if (!*err)
		*err = vm_pid_attr(r, rec->tgid, t);
	if (*err || hashmap_update(&r->vmm, &rec->tid, &fresh)) {
		*err = *err ? *err : -ENOMEM;
		return NULL;
	}
	return hashmap_lookup(&r->vmm, &rec->tid);
}

/* /host/cpus/<cpu>/current_tid (level full), or runner_tid (level vcpu: REC_RUNNER). */
static int cpu_attr(struct recorder *r, uint32_t cpu, bool runner, size_t *idx)
{
	uint32_t key = runner ? cpu | 0x80000000u : cpu;
	size_t *hit = hashmap_lookup(&r->cpus, &key);
	char path[128];
	int e;

	if (hit) {
		*idx = *hit;
		return 0;
	}
	snprintf(path, sizeof(path), "/host/cpus/%u/%s", cpu, runner ? "runner_tid" : "current_tid");
	e = attr_new(r, path, idx);
	return e ? e : hashmap_update(&r->cpus, &key, idx);
}

/* The interned name of an exit reason (userspace: a KVM_EXIT_* code), cached by code. */
static const char *reason_name(struct recorder *r, bool userspace, uint32_t isa, uint32_t reason)
{
	uint64_t key = (uint64_t)userspace << 40 | (uint64_t)(isa & 0xff) << 32 | reason;
	const char **hit = hashmap_lookup(&r->reason_names, &key), *s;
	char buf[32];

	if (hit)
		return *hit;
	s = intern(r, userspace ? userspace_exit_name(reason, buf, sizeof(buf)) :
				  exit_reason_name(isa, reason, buf, sizeof(buf)));
	if (s && hashmap_insert(&r->reason_names, &key, &s))
		return NULL;
	return s;
}

/* An exit detail as the exit_access/exit_fault attributes hold it: "msr 0xc0000080 read" (docs/sht-attributes.md). */
static const char *detail_value(struct recorder *r, const struct vcpustat_record *rec)
{
	char buf[64], target[32];

	snprintf(buf, sizeof(buf), "%s %s %s", detail_kind_name(rec->from),
		 detail_target(rec->arg0 | (uint64_t)rec->arg1 << 32, target, sizeof(target)), detail_access_name(rec->to));
	return intern(r, buf);
}

/* A new exit, or none any more: the accesses of the last one end. */
static int details_end(struct recorder *r, const struct vcpu_attrs *va, uint64_t t)
{
	int e = set_null(r, va->access, t);

	return e ? e : set_null(r, va->fault, t);
}

/* ---- one record ---- */

/* The file time of mono time ts, never before the last one applied (late: clamped). */
static uint64_t file_time(struct recorder *r, uint64_t ts)
{
	uint64_t t = ts > r->o.mono_start_ns ? ts - r->o.mono_start_ns : 0;

	if (t < r->last_t) {
		t = r->last_t; /* behind the reorder window: clamp */
		r->st.late++;
	}
	r->last_t = t;
	return t;
}

/* Records before the start only make the file's values at its start. */
static int begin_at(struct recorder *r, uint64_t ts)
{
	return ts >= r->o.mono_start_ns ? begin(r) : 0;
}

static int apply_value(struct recorder *r, const struct attr_value *v)
{
	uint64_t t = file_time(r, v->ts);
	int e = begin_at(r, v->ts);

	if (!e)
		e = maybe_rotate(r, t, NULL);
	if (e)
		return e;
	return attr_set(r, v->attr, t, (enum sht_type)v->type, v->type == SHT_INT ? v->i : 0,
			v->type == SHT_STR ? v->s : NULL);
}

/*
 * ---- one record: a function per record type, chosen by the table below ----
 * Those of a thread (a switch, a wake-up, a VMM thread, a CPU's runner) take
 * va NULL; every other gets the record's vCPU, made known first if new.
 */
typedef int apply_fn(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va);

static int apply_switch(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	struct thread_attrs *prev, *next;
	size_t cpu;
	int e = cpu_attr(r, rec->cpu, false, &cpu);

	if (!e)
		e = set_int(r, cpu, t, rec->arg0);
	prev = e ? NULL : thread_get(r, rec->tid, t, &e);
	if (prev && rec->tid)
		e = rec->to ? set_null(r, prev->state, t) :
			      set_str(r, prev->state, t, rec->from ? r->s_preempted : r->s_blocked);
	next = e ? NULL : thread_get(r, rec->arg0, t, &e);
	if (next && rec->arg0)
		e = set_str(r, next->state, t, r->s_running);
	return e;
}

/* Who runs where tracked threads wait: the thread's names come with it. */
static int apply_runner(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	size_t cpu;
	int e = cpu_attr(r, rec->arg0, true, &cpu);

	if (e)
		return e;
	if (rec->from != VCPUSTAT_RUNNER_IS)
		return set_null(r, cpu, t);
	e = set_int(r, cpu, t, rec->tid);
	if (!e && rec->tid)
		thread_get(r, rec->tid, t, &e);
	return e;
}

static int apply_wakeup(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	int e = 0;
	struct thread_attrs *th = thread_get(r, rec->tid, t, &e);

	return th ? set_str(r, th->state, t, r->s_wait) : e;
}

/* A VMM thread's state; UNKNOWN: it exited or became a vCPU, and its attributes end. */
static int apply_vmm(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	int e = 0;
	struct vmm_attrs *th = vmm_get(r, rec, t, &e);
	const char *st = rec->to == VCPUSTAT_VMM_T_RUN ? r->s_running :
			 rec->to == VCPUSTAT_VMM_T_WAIT ? r->s_wait :
			 rec->to == VCPUSTAT_VMM_T_SLEEP ? r->s_blocked : NULL;

	if (!th)
		return e;
	if (st) {
		e = set_str(r, th->state, t, st);
		return e ? e : set_int(r, th->cpu, t, rec->arg0);
	}
	e = set_null(r, th->state, t);
	if (!e)
		e = set_null(r, th->name, t);
	if (!e)
		e = set_null(r, th->kind, t);
	if (!e)
		e = set_null(r, th->cpu, t);
	hashmap_delete(&r->vmm, &rec->tid);
	return e;
}

static int apply_state(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	int e = set_int(r, va->state, t, rec->to);

	if (!e && rec->cause == VCPUSTAT_EV_KVM_EXIT)
		e = details_end(r, va, t);
	if (!e && rec->cause == VCPUSTAT_EV_KVM_EXIT)
		e = set_str(r, va->exit, t, reason_name(r, false, rec->arg1, rec->arg0));
	if (!e && rec->cause == VCPUSTAT_EV_USERSPACE_EXIT)
		e = set_str(r, va->uexit, t, reason_name(r, true, 0, rec->arg0));
	if (!e && rec->to == VCPU_GUEST) { /* kvm_entry ends both kinds of exit, and their accesses */
		e = set_null(r, va->exit, t);
		if (!e)
			e = set_null(r, va->uexit, t);
		if (!e)
			e = details_end(r, va, t);
	}
	if (!e && rec->cause == VCPUSTAT_EV_KVM_RUN)
		e = set_null(r, va->uexit, t);
	if (!e && rec->cause == VCPUSTAT_EV_SWITCH)
		e = set_int(r, va->pcpu, t, rec->cpu);
	if (!e && (rec->to == VCPU_IDLE || rec->to == VCPU_BLOCKED)) { /* asleep: its last wake-up's reason ends */
		e = set_null(r, va->wake, t);
		if (!e)
			e = set_null(r, va->wake_vector, t);
	}
	return e;
}

static int apply_exit(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	int e = details_end(r, va, t);

	return e ? e : set_str(r, va->exit, t, reason_name(r, false, rec->arg1, rec->arg0));
}

static int apply_detail(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	bool fault = rec->from == VCPUSTAT_DETAIL_PAGE_FAULT;
	size_t *slot = fault ? &va->fault : &va->access;
	const char *v = detail_value(r, rec);

	if (!v)
		return -ENOMEM;
	if (*slot == ATTR_NONE) {
		int e = vcpu_lazy_attr(r, va, slot, fault ? "exit_fault" : "exit_access");

		if (e)
			return e;
		r->attrs[*slot].exit = true;
	}
	return set_str(r, *slot, t, v);
}

static int apply_uexit(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return set_str(r, va->uexit, t, reason_name(r, true, 0, rec->arg0));
}

static int apply_run(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return set_null(r, va->uexit, t);
}

static int apply_pcpu(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return set_int(r, va->pcpu, t, rec->arg0);
}

static int apply_hypercall(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return set_int(r, va->sync, t, (int64_t)(rec->arg0 | (uint64_t)rec->arg1 << 32));
}

static int apply_sync_entry(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return set_null(r, va->sync, t);
}

/* An attribute of the vCPU made at its first value: an integer, arg0. */
static int lazy_int(struct recorder *r, struct vcpu_attrs *va, size_t *slot, const char *leaf, uint64_t t,
		    int64_t i)
{
	int e = vcpu_lazy_attr(r, va, slot, leaf);

	return e ? e : set_int(r, *slot, t, i);
}

static int apply_halt_poll_ns(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return lazy_int(r, va, &va->halt_poll_ns, "halt_poll_ns", t, rec->arg0);
}

/* Each move sets the vCPU's count: report counts the sets. */
static int apply_numa_move(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return lazy_int(r, va, &va->numa_moves, "numa_moves", t, rec->arg0);
}

/* 2: in L2 (the L1 hypervisor's guest), 1: back in L1. */
static int apply_nested(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	return lazy_int(r, va, &va->guest_level, "guest_level", t, rec->arg0);
}

static int apply_wake(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	char buf[8];
	int e = vcpu_lazy_attr(r, va, &va->wake, "wake_reason");

	if (!e)
		e = set_str(r, va->wake, t, intern(r, wake_reason_name(rec->arg0)));
	if (!e)
		e = vcpu_lazy_attr(r, va, &va->wake_vector, "wake_vector");
	if (!e)
		e = set_str(r, va->wake_vector, t, intern(r, wake_vector_name(rec->from, buf, sizeof(buf))));
	return e;
}

static int apply_guest_cr3(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	char buf[24];
	int e = vcpu_lazy_attr(r, va, &va->guest_cr3, "guest_cr3");

	return e ? e : set_str(r, va->guest_cr3, t,
			       intern(r, cr3_target(rec->arg0 | (uint64_t)rec->arg1 << 32, buf, sizeof(buf))));
}

static int apply_vcpu_gone(struct recorder *r, const struct vcpustat_record *rec, uint64_t t, struct vcpu_attrs *va)
{
	int e = vcpu_null_all(r, va, t);

	hashmap_delete(&r->vcpus, &rec->tid);
	return e;
}

/*
 * What each record type does. A type with no entry (VCPU_NEW, and any this
 * recorder does not know) only makes its vCPU known: vcpu_get does the work.
 */
static const struct {
	apply_fn *fn;
	bool thread; /* of a thread, not of a vCPU: va is NULL */
} applies[VCPUSTAT_NR_RECORDS] = {
	[VCPUSTAT_REC_SWITCH] = { apply_switch, true },
	[VCPUSTAT_REC_RUNNER] = { apply_runner, true },
	[VCPUSTAT_REC_WAKEUP] = { apply_wakeup, true },
	[VCPUSTAT_REC_VMM] = { apply_vmm, true },
	[VCPUSTAT_REC_STATE] = { apply_state },
	[VCPUSTAT_REC_EXIT] = { apply_exit },
	[VCPUSTAT_REC_DETAIL] = { apply_detail },
	[VCPUSTAT_REC_UEXIT] = { apply_uexit },
	[VCPUSTAT_REC_RUN] = { apply_run },
	[VCPUSTAT_REC_PCPU] = { apply_pcpu },
	[VCPUSTAT_REC_HYPERCALL] = { apply_hypercall },
	[VCPUSTAT_REC_SYNC_ENTRY] = { apply_sync_entry },
	[VCPUSTAT_REC_HALT_POLL_NS] = { apply_halt_poll_ns },
	[VCPUSTAT_REC_WAKE] = { apply_wake },
	[VCPUSTAT_REC_GUEST_CR3] = { apply_guest_cr3 },
	[VCPUSTAT_REC_NUMA_MOVE] = { apply_numa_move },
	[VCPUSTAT_REC_NESTED] = { apply_nested },
	[VCPUSTAT_REC_VCPU_GONE] = { apply_vcpu_gone },
};

static int apply(struct recorder *r, const struct vcpustat_record *rec)
{
	uint64_t t = file_time(r, rec->ts);
	apply_fn *fn = rec->type < VCPUSTAT_NR_RECORDS ? applies[rec->type].fn : NULL;
	struct vcpu_attrs *va = NULL;
	int e = begin_at(r, rec->ts);

	if (!e)
		e = maybe_rotate(r, t, NULL);
	if (e)
		return e;
	if (!fn || !applies[rec->type].thread) {
		va = vcpu_get(r, rec, t, &e);
		if (!va)
			return e;
	}
	return fn ? fn(r, rec, t, va) : 0;
}

/*
 * ---- the reorder window, by (ts, arrival) ----
 * Records that arrive in time order (nearly all) queue in a FIFO; the few
 * older than the newest queued one go to a min-heap. The next record is the
 * earlier of the two heads.
 */

static bool before(const struct pending *a, const struct pending *b)
{
	return a->rec.ts < b->rec.ts || (a->rec.ts == b->rec.ts && a->seq < b->seq);
}

static int fifo_push(struct recorder *r, const struct pending *p)
{
	if (r->nfifo == r->capfifo) {
		size_t cap = r->capfifo ? r->capfifo * 2 : 4096;
		struct pending *f = malloc(cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < r->nfifo; i++) /* unwrap the ring */
			f[i] = r->fifo[(r->fhead + i) % r->capfifo];
		free(r->fifo);
		r->fifo = f;
		r->fhead = 0;
		r->capfifo = cap;
	}
	r->fifo[(r->fhead + r->nfifo++) % r->capfifo] = *p;
	return 0;
}

static int heap_push(struct recorder *r, const struct vcpustat_record *rec)
{
	struct pending p;
	size_t i;

	p.rec = *rec;
	p.seq = r->seq++;
	if (!r->nfifo || !before(&p, &r->fifo[(r->fhead + r->nfifo - 1) % r->capfifo]))
		return fifo_push(r, &p);
	if (r->nheap == r->capheap) {
		size_t cap = r->capheap ? r->capheap * 2 : 4096;
		struct pending *h = realloc(r->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		r->heap = h;
		r->capheap = cap;
	}
	i = r->nheap++;
	r->heap[i] = p;
	while (i && before(&r->heap[i], &r->heap[(i - 1) / 2])) {
		struct pending tmp = r->heap[i];

		r->heap[i] = r->heap[(i - 1) / 2];
		r->heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
	return 0;
}

static void heap_pop(struct recorder *r, struct pending *out)
{
	size_t i = 0;

	*out = r->heap[0];
	r->heap[0] = r->heap[--r->nheap];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct pending tmp;

		if (l < r->nheap && before(&r->heap[l], &r->heap[m]))
			m = l;
		if (l + 1 < r->nheap && before(&r->heap[l + 1], &r->heap[m]))
			m = l + 1;
		if (m == i)
			break;
		tmp = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = tmp;
		i = m;
	}
}

/* The next record in (ts, arrival) order, or NULL. */
static const struct pending *queue_peek(const struct recorder *r)
{
	const struct pending *f = r->nfifo ? &r->fifo[r->fhead] : NULL;

	if (!r->nheap)
		return f;
	return !f || before(&r->heap[0], f) ? &r->heap[0] : f;
}

static void queue_pop(struct recorder *r, struct pending *out)
{
	if (r->nheap && queue_peek(r) == &r->heap[0]) {
		heap_pop(r, out);
		return;
	}
	*out = r->fifo[r->fhead];
	r->fhead = (r->fhead + 1) % r->capfifo;
	r->nfifo--;
}

static int drain(struct recorder *r, bool all, struct vcpustat_error *err)
{
	const struct pending *next;

	while ((next = queue_peek(r)) && (all || next->rec.ts + r->o.reorder_ns <= r->max_ts)) {
		struct pending p;
		int e;

		queue_pop(r, &p);
		e = p.rec.type == PENDING_VALUE ? apply_value(r, &p.val) : apply(r, &p.rec);
		if (e) {
			const struct vcpustat_error *we = r->w ? sht_writer_error(r->w) : NULL;

			if (we && we->code)
				return verror(err, e, "%s", we->msg);
			return verror(err, e, "%s: %s", r->path, strerror(-e));
		}
	}
	return 0;
}

int recorder_add(struct recorder *r, const struct vcpustat_record *rec, struct vcpustat_error *err)
{
	int e = heap_push(r, rec);

	if (e)
		return verror(err, e, "out of memory");
	r->st.records++;
	if (rec->ts > r->max_ts)
		r->max_ts = rec->ts;
	return drain(r, false, err);
}

int recorder_attr(struct recorder *r, const char *path, uint32_t *attr, struct vcpustat_error *err)
{
	size_t idx;
	int e;

	if (!path || path[0] != '/' || strlen(path) > SHT_MAX_PATH)
		return verror(err, -EINVAL, "bad attribute path '%s'", path ? path : "(null)");
	e = attr_new(r, path, &idx);
	if (e)
		return verror(err, e, "out of memory");
	*attr = (uint32_t)idx;
	return 0;
}

/* A value into the reorder window; advance: it moves the window like a record. */
static int queue_value(struct recorder *r, uint32_t attr, uint64_t ts, const struct sht_value *v, bool advance,
		       struct vcpustat_error *err)
{
	struct pending p = { 0 };
	int e;

	if (attr >= r->nattrs || (v->type != SHT_NULL && v->type != SHT_INT && v->type != SHT_STR))
		return verror(err, -EINVAL, "bad attribute %u or value type %d", attr, (int)v->type);
	p.val.ts = ts;
	p.val.attr = attr;
	p.val.type = (uint8_t)v->type;
	p.val.marker = PENDING_VALUE;
	if (v->type == SHT_INT)
		p.val.i = v->i;
	if (v->type == SHT_STR && !(p.val.s = intern(r, v->s ? v->s : "")))
		return verror(err, -ENOMEM, "out of memory");
	e = heap_push(r, &p.rec);
	if (e)
		return verror(err, e, "out of memory");
	if (advance && ts > r->max_ts)
		r->max_ts = ts;
	return drain(r, false, err);
}

int recorder_set(struct recorder *r, uint32_t attr, uint64_t ts, const struct sht_value *v,
		 struct vcpustat_error *err)
{
	return queue_value(r, attr, ts, v, true, err);
}

const char *recorder_vm_path(struct recorder *r, uint32_t tgid)
{
	return vm_path_name(r, tgid);
}

/*
 * The lost count at mono time t, ordered with the records by (ts, arrival) in
 * the reorder window, and, unlike a record, without moving the window: the
 * live recorder calls this at wall-clock ticks, replay at the capture's
 * timestamps, and a tick ahead of records still in the ring would otherwise
 * push those records out of the window (clamped as late) in one and not in
 * the other, so that replay would not give the live recording's file.
 */
int recorder_lost(struct recorder *r, uint64_t t, uint64_t lost, struct vcpustat_error *err)
{
	struct sht_value v = { .type = SHT_INT, .i = (int64_t)lost };

	return queue_value(r, (uint32_t)r->lost_attr, t, &v, false, err);
}

int recorder_flush(struct recorder *r, struct vcpustat_error *err)
{
	int e;

	/* --max-size: when sealing the leaf now could take the file over it, the close seals it instead */
	if (r->w && r->o.max_bytes && r->begun && r->last_t > r->file_start &&
	    sht_writer_close_size(r->w, 0, true) > r->o.max_bytes)
		return rotate(r, r->last_t, err);
	e = r->w ? sht_writer_flush(r->w) : r->failed;

	return e ? verror(err, e, "%s: %s", r->path, strerror(-e)) : 0;
}

void recorder_get_stats(const struct recorder *r, struct recorder_stats *st)
{
	struct sht_writer_stats ws = { 0 };

	*st = r->st;
	if (r->w)
		sht_writer_get_stats(r->w, &ws);
	st->intervals = r->intervals_closed + ws.intervals;
	st->bytes = r->w ? ws.bytes : r->closed_bytes;
	snprintf(st->path, sizeof(st->path), "%s", r->path);
}

static void recorder_free(struct recorder *r)
{
	size_t pos = 0;
	void *k, *v;

	if (!r)
		return;
	if (r->w)
		sht_writer_abandon(r->w); /* opts.atomic: path is as it was */
	for (size_t i = 0; i < r->nattrs; i++)
		free(r->attrs[i].path);
	free(r->attrs);
	while (hashmap_next(&r->strings, &pos, &k, &v))
		for (struct interned *s = *(struct interned **)v, *next; s; s = next) {
			next = s->next;
			free(s);
		}
	hashmap_free(&r->strings);
	hashmap_free(&r->reason_names);
	hashmap_free(&r->vcpus);
	hashmap_free(&r->threads);
	hashmap_free(&r->vmm);
	hashmap_free(&r->cpus);
	hashmap_free(&r->vms);
	hashmap_free(&r->vm_names);
	for (size_t i = 0; i < r->nfiles; i++)
		free(r->files[i]);
	free(r->files);
	free(r->heap);
	free(r->fifo);
	free(r);
}

uint64_t recorder_min_size(void)
{
	return sht_writer_min_size(NULL);
}

int recorder_opts_check(const struct recorder_opts *o, struct vcpustat_error *err)
{
	bool rotating = o->max_bytes || o->rotate_ns;

	if (o->atomic && rotating)
		return verror(err, -EINVAL, "%s: an atomic recording does not rotate", o->path);
	if (o->max_bytes && o->max_bytes < recorder_min_size())
		return verror(err, -EINVAL,
			      "--max-size %llu: a file of the series takes at least %llu bytes (%lluK: its header, one "
			      "node and its footer)",
			      (unsigned long long)o->max_bytes, (unsigned long long)recorder_min_size(),
			      (unsigned long long)recorder_min_size() / 1024);
	if (o->keep && !rotating)
		return verror(err, -EINVAL, "--keep only makes sense with --max-size or --rotate-every");
	return 0;
}

int recorder_open(struct recorder **rp, const struct recorder_opts *opts, struct vcpustat_error *err)
{
	struct recorder *r;
	int e;

	*rp = NULL;
	e = recorder_opts_check(opts, err);
	if (e)
		return e;
	r = calloc(1, sizeof(*r));
	if (!r)
		return verror(err, -ENOMEM, "out of memory");
	r->o = *opts;
	if (r->o.max_bytes || r->o.rotate_ns) {
		e = series_check(opts->path, err);
		if (e) {
			free(r);
			return e;
		}
	}
	if (!r->o.reorder_ns)
		r->o.reorder_ns = REORDER_DEFAULT_NS;
	e = hashmap_init(&r->vcpus, sizeof(uint32_t), sizeof(struct vcpu_attrs), 0);
	if (!e)
		e = hashmap_init(&r->threads, sizeof(uint32_t), sizeof(struct thread_attrs), 0);
	if (!e)
		e = hashmap_init(&r->vmm, sizeof(uint32_t), sizeof(struct vmm_attrs), 0);
	if (!e)
		e = hashmap_init(&r->cpus, sizeof(uint32_t), sizeof(size_t), 0);
	if (!e)
		e = hashmap_init(&r->vms, sizeof(uint32_t), 64, 0);
	if (!e)
		e = hashmap_init(&r->vm_names, 64, sizeof(uint32_t), 0);
	if (!e)
		e = hashmap_init(&r->strings, sizeof(uint64_t), sizeof(struct interned *), 0);
	if (!e)
		e = hashmap_init(&r->reason_names, sizeof(uint64_t), sizeof(char *), 0);
	if (!e)
		e = attr_new(r, "/meta/lost", &r->lost_attr);
	if (!e) {
		r->s_running = intern(r, "running");
		r->s_preempted = intern(r, "preempted");
		r->s_blocked = intern(r, "blocked");
		r->s_wait = intern(r, "wait");
		if (!r->s_running || !r->s_preempted || !r->s_blocked || !r->s_wait)
			e = -ENOMEM;
	}
	if (e) {
		recorder_free(r);
		return verror(err, e, "out of memory");
	}
	e = file_open(r, 0, err);
	if (e) {
		recorder_free(r);
		return e;
	}
	e = set_int(r, r->lost_attr, 0, 0);
	if (e) {
		recorder_free(r);
		return verror(err, e, "%s: %s", opts->path, strerror(-e));
	}
	*rp = r;
	return 0;
}

/*
 * recorder_close(); commit: an atomic recording's file replaces path (else it
 * is removed); *st (may be NULL): what was written, the close included.
 */
static int close_file(struct recorder *r, uint64_t end_mono_ns, bool commit, struct recorder_stats *st,
		      struct vcpustat_error *err)
{
	uint64_t t;
	int e;

	e = drain(r, true, err);
	if (!e) {
		e = begin(r);
		if (e)
			verror(err, e, "%s: %s", r->path, strerror(-e));
	}
	/*
	 * A file covers [start, end): everything in it happened before its end.
	 * So an interval that ends at the end was cut by it (an exit still being
	 * handled), and one a record closed (a kvm_entry at the very last
	 * instant) ends before it.
	 */
	t = end_mono_ns > r->o.mono_start_ns ? end_mono_ns - r->o.mono_start_ns : 0;
	if (t <= r->last_t)
		t = r->last_t + 1;
	/* opts.atomic: closed (renamed over path) only to commit it, else abandoned (removed) */
	if (!e && (commit || !r->o.atomic))
		e = file_close(r, t, err);
	if (st)
		recorder_get_stats(r, st);
	recorder_free(r);
	return e;
}

int recorder_close(struct recorder *r, uint64_t end_mono_ns, struct vcpustat_error *err)
{
	return close_file(r, end_mono_ns, false, NULL, err);
}

int recorder_finish(struct recorder **rp, uint64_t end_mono_ns, struct recorder_stats *st, struct vcpustat_error *err)
{
	struct recorder *r = *rp;

	*rp = NULL;
	return close_file(r, end_mono_ns, true, st, err);
}
