// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * import.c - host trace -> the kernel's handler (replay) -> SHT, with guest
 * traces synchronized and merged (import.h, docs/import.md).
 *
 * The host trace is read once, or twice when a first pass is needed: to find
 * the sync protocol's host events (guests given: the transform must be known
 * before the guest events can be merged), or to group vCPU threads into VMs
 * when the trace does not say which process a thread belongs to.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "import/import.h"
#include "record/record.h"
#include "sht/sht.h"

#define MAX_META 40

struct tid_sync {
	uint32_t tid;
	uint64_t key, ts;
};

/* What the trace told about each thread, by tid: a two-level table (pages of 4096 tids). */
#define TID_PAGE_BITS 12
#define TID_PAGE (1u << TID_PAGE_BITS)

struct tid_info {
	uint32_t tgid;	  /* its process, if has_tgid */
	uint8_t has_tgid; /* the trace said (TGID column, LTTng pid) */
	uint8_t has_comm;
	char comm[16];	  /* the latest name seen */
};

struct tidtab {
	struct tid_info **pages;
	size_t npages;
};

static struct tid_info *tid_get(struct tidtab *t, uint32_t tid, bool create)
{
	size_t pg = tid >> TID_PAGE_BITS;

	if (pg >= t->npages) {
		size_t n = t->npages ? t->npages : 64;
		struct tid_info **p;

		if (!create)
			return NULL;
		while (n <= pg)
			n *= 2;
		p = realloc(t->pages, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + t->npages, 0, (n - t->npages) * sizeof(*p));
		t->pages = p;
		t->npages = n;
	}
	if (!t->pages[pg]) {
		if (!create)
			return NULL;
		t->pages[pg] = calloc(TID_PAGE, sizeof(struct tid_info));
		if (!t->pages[pg])
			return NULL;
	}
	return &t->pages[pg][tid & (TID_PAGE - 1)];
}

static void tidtab_free(struct tidtab *t)
{
	for (size_t i = 0; i < t->npages; i++)
		free(t->pages[i]);
	free(t->pages);
	memset(t, 0, sizeof(*t));
}

struct guest_input {
	uint32_t tgid;
	struct ml_guest_event *ev;
	size_t n;
	long parent;		     /* a nested guest: its L1's index in the options' guests, else -1 */
	size_t ml;		     /* its index in the multi-level analysis */
	char name[64];		     /* a nested guest: its name in L1's trace (pid<N>) */
	struct ml_vcpu_event *vev;   /* ... its vCPUs' states in L1's trace, on the host's clock */
	size_t nv;
};

struct import {
	const struct import_opts *o;
	struct import_result *res;
	struct hashmap explicit;     /* tid -> u32 VM id (--vm NAME=TIDS: the first TID) */
	struct hashmap names;	     /* VM id -> char[64] display name (--vm-name, --vm) */
	struct tidtab tids;	     /* what the trace told about threads: process, name */
	struct hashmap inferred;     /* tid -> u32 VM id: vCPU threads grouped by name (no process known) */
	struct hashmap inferred_ids; /* VM id -> u8 */
	struct hashmap kvm_tids;     /* tid -> u8: 1 had KVM events, 2 had kvm_entry or kvm_exit */
	struct hashmap pending;	     /* tid -> u64 key of a sync hypercall waiting for its kvm_entry */
	struct hashmap orphans;	     /* tid -> u8: vCPU threads made their own VM */
	struct hashmap vcpus_seen;   /* tid -> u8 (VCPU_NEW records) */
	struct hashmap vms_seen;     /* tgid -> u8 */
	struct tid_sync *b, *c;
	size_t nb, nc, capb, capc;
	bool scanned;
	char namebuf[64];
	struct capture_reader *cap; /* the host trace is a vcpustat capture: its names and lost counts */
	struct trace_opts topts;    /* the host trace's: its CPUs those of the handler's table (--cpus) */
	/* the replay pass */
	struct replay *rp;
	struct recorder *rec;
	struct ml *ml;
	struct guest_input *gin;
	struct vcpustat_error *err;
	struct sht_meta meta[MAX_META]; /* the file's metadata (the recorder keeps pointers to it) */
	char meta_keys[MAX_META][96];
	char meta_vals[MAX_META][512];
	size_t nmeta;
};

static int import_init(struct import *im, const struct import_opts *o, struct import_result *res)
{
	int e = 0;

	memset(im, 0, sizeof(*im));
	im->o = o;
	im->res = res;
	im->topts = o->trace;
	im->topts.nr_cpus = o->nr_cpus ? o->nr_cpus : 1024; /* replay_new()'s table */
	e = e ? e : hashmap_init(&im->explicit, sizeof(uint32_t), sizeof(uint32_t), 0);
	e = e ? e : hashmap_init(&im->names, sizeof(uint32_t), 64, 0);
	e = e ? e : hashmap_init(&im->inferred, sizeof(uint32_t), sizeof(uint32_t), 0);
	e = e ? e : hashmap_init(&im->inferred_ids, sizeof(uint32_t), 1, 0);
	e = e ? e : hashmap_init(&im->kvm_tids, sizeof(uint32_t), 1, 0);
	e = e ? e : hashmap_init(&im->pending, sizeof(uint32_t), sizeof(uint64_t), 0);
	e = e ? e : hashmap_init(&im->orphans, sizeof(uint32_t), 1, 0);
	e = e ? e : hashmap_init(&im->vcpus_seen, sizeof(uint32_t), 1, 0);
	e = e ? e : hashmap_init(&im->vms_seen, sizeof(uint32_t), 1, 0);
	if (e)
		return e;
	/* the options' names and thread lists */
	for (size_t i = 0; i < o->nvms; i++) {
		const struct import_vm_threads *v = &o->vms[i];
		char name[64] = { 0 };
		uint32_t id;

		if (!v->ntids)
			continue;
		id = v->tids[0];
		snprintf(name, sizeof(name), "%s", v->name);
		if (hashmap_update(&im->names, &id, name))
			return -ENOMEM;
		for (size_t t = 0; t < v->ntids; t++)
			if (hashmap_update(&im->explicit, &v->tids[t], &id))
				return -ENOMEM;
	}
	for (size_t i = 0; i < o->nnames; i++) {
		char name[64] = { 0 };

		snprintf(name, sizeof(name), "%s", o->names[i].name);
		if (hashmap_update(&im->names, &o->names[i].pid, name))
			return -ENOMEM;
	}
	return 0;
}

static void import_free(struct import *im)
{
	hashmap_free(&im->explicit);
	hashmap_free(&im->names);
	tidtab_free(&im->tids);
	hashmap_free(&im->inferred);
	hashmap_free(&im->inferred_ids);
	hashmap_free(&im->kvm_tids);
	hashmap_free(&im->pending);
	hashmap_free(&im->orphans);
	hashmap_free(&im->vcpus_seen);
	hashmap_free(&im->vms_seen);
	free(im->b);
	free(im->c);
	if (im->gin)
		for (size_t i = 0; i < im->o->nguests; i++) {
			free(im->gin[i].ev);
			free(im->gin[i].vev);
		}
	free(im->gin);
}

/* ---- what the trace says about threads ---- */

static void learn_name(struct import *im, uint64_t tid, const char comm[16])
{
	struct tid_info *t;

	if (!comm[0] || (comm[0] == '<' && !strcmp(comm, "<...>")))
		return;
	t = tid_get(&im->tids, (uint32_t)tid, true);
	if (t && (!t->has_comm || memcmp(t->comm, comm, 16))) { /* the latest name (threads rename themselves) */
		memcpy(t->comm, comm, 16);
		t->comm[15] = '\0';
		t->has_comm = 1;
	}
}

static void learn(struct import *im, const struct trace_event *te)
{
	if (te->tgid >= 0) {
		struct tid_info *t = tid_get(&im->tids, te->pid, true);

		if (t) {
			t->tgid = (uint32_t)te->tgid;
			t->has_tgid = 1;
		}
	}
	learn_name(im, te->pid, te->cur_comm);
	switch (te->ev.type) {
	case VCPUSTAT_EV_SWITCH:
		learn_name(im, te->ev.tid, te->ev.comm);
		learn_name(im, te->ev.tid2, te->next_comm);
		break;
	case VCPUSTAT_EV_WAKEUP:
	case VCPUSTAT_EV_WAKEUP_NEW:
	case VCPUSTAT_EV_MIGRATE:
	case VCPUSTAT_EV_PROCESS_EXIT:
		learn_name(im, te->ev.tid, te->ev.comm);
		break;
	default:
		break;
	}
}

/* The VM (process) of thread tid; told: the process the event itself says (-1: none). 0 if unknown. */
static uint32_t tgid_for(struct import *im, uint64_t tid, int64_t told)
{
	uint32_t t = (uint32_t)tid, *x;

	if (im->explicit.count && (x = hashmap_lookup(&im->explicit, &t)))
		return *x;
	if (told >= 0)
		return (uint32_t)told;
	{
		const struct tid_info *ti = tid_get(&im->tids, t, false);

		if (ti && ti->has_tgid)
			return ti->tgid;
	}
	if (im->inferred.count && (x = hashmap_lookup(&im->inferred, &t)))
		return *x;
	return 0;
}

/* The VM of a vCPU thread: its process, or (unknown) the thread itself. */
static uint32_t vm_of_vcpu(struct import *im, uint32_t tid, int64_t told)
{
	uint32_t id = tgid_for(im, tid, told);

	return id ? id : tid;
}

static const char *display_name(struct import *im, uint32_t id, char *buf, size_t len)
{
	const char *n = hashmap_lookup(&im->names, &id);

	if (!n && im->cap)
		n = capture_vm_name(im->cap, id); /* the name record gave it */
	if (n)
		snprintf(buf, len, "%s", n);
	else if (hashmap_lookup(&im->inferred_ids, &id))
		snprintf(buf, len, "vm-tid%u", id);
	else
		snprintf(buf, len, "pid%u", id);
	return buf;
}

static const char *vm_name_cb(void *ctx, uint32_t tgid)
{
	struct import *im = ctx;

	if (!hashmap_lookup(&im->names, &tgid) && !hashmap_lookup(&im->inferred_ids, &tgid) &&
	    !(im->cap && capture_vm_name(im->cap, tgid)))
		return NULL; /* the recorder's own: pid<N> */
	return display_name(im, tgid, im->namebuf, sizeof(im->namebuf));
}

static const char *thread_name_cb(void *ctx, uint32_t tid, uint32_t *tgid)
{
	struct import *im = ctx;
	const struct tid_info *t = tid_get(&im->tids, tid, false);
	const char *n;

	*tgid = tgid_for(im, tid, -1);
	if (im->cap && (n = capture_thread_name(im->cap, tid, tgid))) /* what record saw in /proc */
		return n;
	return t && t->has_comm ? t->comm : NULL;
}

static const char *cgroup_cb(void *ctx, uint32_t tid, uint64_t *pidns)
{
	struct import *im = ctx;

	return capture_thread_cgroup(im->cap, tid, pidns);
}

/* ---- the first pass: sync events, thread groups ---- */

static int push_sync(struct tid_sync **arr, size_t *n, size_t *cap, uint32_t tid, uint64_t key, uint64_t ts)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct tid_sync *a = realloc(*arr, c * sizeof(*a));

		if (!a)
			return -ENOMEM;
		*arr = a;
		*cap = c;
	}
	(*arr)[(*n)++] = (struct tid_sync){ tid, key, ts };
	return 0;
}

/* Host events b and c of the sync protocol, per thread. */
static int scan_sync(struct import *im, const struct trace_event *te)
{
	uint32_t tid = te->pid;
	uint64_t *key;
	uint8_t *flags, one = 0;

	if (te->ev.type < VCPUSTAT_EV_KVM_ENTRY || te->ev.type > VCPUSTAT_EV_HYPERCALL)
		return 0;
	flags = hashmap_lookup(&im->kvm_tids, &tid);
	if (!flags) {
		if (hashmap_insert(&im->kvm_tids, &tid, &one))
			return -ENOMEM;
		flags = hashmap_lookup(&im->kvm_tids, &tid);
	}
	*flags |= 1;
	switch (te->ev.type) {
	case VCPUSTAT_EV_KVM_ENTRY:
		*flags |= 2;
		key = hashmap_lookup(&im->pending, &tid);
		if (key) {
			uint64_t k = *key;

			hashmap_delete(&im->pending, &tid);
			return push_sync(&im->c, &im->nc, &im->capc, tid, k, te->ev.ts);
		}
		return 0;
	case VCPUSTAT_EV_KVM_EXIT:
		*flags |= 2;
		return 0;
	case VCPUSTAT_EV_HYPERCALL:
		if (te->ev.arg0 != VCPUSTAT_SYNC_HYPERCALL_NR)
			return 0;
		if (hashmap_update(&im->pending, &tid, &te->ev.arg1))
			return -ENOMEM;
		return push_sync(&im->b, &im->nb, &im->capb, tid, te->ev.arg1, te->ev.ts);
	default:
		return 0;
	}
}

struct vcpu_thread {
	uint32_t tid;
	int index;
};

static int by_tid(const void *a, const void *b)
{
	const struct vcpu_thread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * Threads named like vCPUs ("CPU 3/KVM") whose process the trace does not
 * tell: a VM is a run of such threads starting at its vCPU 0 (VMMs create
 * vCPU 0 first, and thread ids grow): each goes to the vCPU 0 thread with the
 * largest tid not above its own.
 */
static int infer_groups(struct import *im)
{
	struct vcpu_thread *v = NULL;
	size_t n = 0, cap = 0;
	uint32_t group = 0;
	bool have = false;
	int e = 0;

	for (size_t i = 0; i < im->tids.npages * TID_PAGE; i++) {
		const struct tid_info *ti = im->tids.pages[i / TID_PAGE] ? &im->tids.pages[i / TID_PAGE][i % TID_PAGE] : NULL;
		uint32_t tid = (uint32_t)i;
		int idx;

		if (!ti) {
			i += TID_PAGE - 1; /* an empty page */
			continue;
		}
		if (!ti->has_comm || ti->has_tgid || (idx = vcpu_index_from_comm(ti->comm)) < 0 ||
		    hashmap_lookup(&im->explicit, &tid))
			continue;
		if (n == cap) {
			struct vcpu_thread *a = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*a));

			if (!a) {
				free(v);
				return -ENOMEM;
			}
			v = a;
		}
		v[n++] = (struct vcpu_thread){ tid, idx };
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), by_tid);
	for (size_t i = 0; i < n && !e; i++) {
		uint8_t one = 1;

		if (v[i].index == 0 || !have) {
			group = v[i].tid;
			have = true;
		}
		e = hashmap_update(&im->inferred, &v[i].tid, &group);
		if (!e)
			e = hashmap_update(&im->inferred_ids, &group, &one);
	}
	free(v);
	return e;
}

static int scan(struct import *im, struct trace_reader *tr, struct vcpustat_error *err)
{
	struct trace_event te;
	int ret, e;

	while ((ret = trace_next(tr, &te, err)) == 1) {
		learn(im, &te);
		e = scan_sync(im, &te);
		if (e)
			return verror(err, e, "out of memory");
	}
	if (ret < 0)
		return ret;
	e = infer_groups(im);
	if (e)
		return verror(err, e, "out of memory");
	im->scanned = true;
	return 0;
}

/* The VMs of the scan: every process with a thread that had KVM events. */
static int vm_list(struct import *im, uint32_t **out, size_t *n)
{
	struct hashmap set;
	size_t pos = 0, i = 0;
	void *k, *v;
	uint8_t one = 1;

	*out = NULL;
	*n = 0;
	if (hashmap_init(&set, sizeof(uint32_t), 1, 0))
		return -ENOMEM;
	while (hashmap_next(&im->kvm_tids, &pos, &k, &v)) {
		uint32_t id = vm_of_vcpu(im, *(uint32_t *)k, -1);

		if (hashmap_update(&set, &id, &one)) {
			hashmap_free(&set);
			return -ENOMEM;
		}
	}
	*out = calloc(set.count ? set.count : 1, sizeof(**out));
	if (!*out) {
		hashmap_free(&set);
		return -ENOMEM;
	}
	pos = 0;
	while (hashmap_next(&set, &pos, &k, &v))
		(*out)[i++] = *(uint32_t *)k;
	*n = i;
	hashmap_free(&set);
	return 0;
}

/* --guest VM / --vm VM: a name (--vm-name, --vm, pid<N>, vm-tid<N>) or a number. */
static int resolve_vm(struct import *im, const char *spec, const char *what, uint32_t *id, struct vcpustat_error *err)
{
	char list[400] = "", name[64];
	uint32_t *vms;
	size_t n, len = 0;
	int e = vm_list(im, &vms, &n);

	if (e)
		return verror(err, e, "out of memory");
	for (size_t i = 0; i < n; i++) {
		char num[16];

		display_name(im, vms[i], name, sizeof(name));
		snprintf(num, sizeof(num), "%u", vms[i]);
		if (!strcmp(spec, name) || !strcmp(spec, num)) {
			*id = vms[i];
			free(vms);
			return 0;
		}
		if (len < sizeof(list) - 80)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (%u)", i ? ", " : "", name, vms[i]);
	}
	free(vms);
	return verror(err, -ENOENT, "%s %s: no such VM in %s (%s%s)", what, spec, im->o->host,
		      n ? "its VMs: " : "it shows no vCPU thread", list);
}

/* ---- guest traces ---- */

static int push_event(struct vcpustat_sync_event **arr, size_t *n, uint64_t key, uint64_t ts)
{
	if (!(*n & (*n - 1))) { /* grow at powers of two */
		struct vcpustat_sync_event *a = realloc(*arr, (*n ? *n * 2 : 1) * sizeof(*a));

		if (!a)
			return -ENOMEM;
		*arr = a;
	}
	(*arr)[(*n)++] = (struct vcpustat_sync_event){ key, ts };
	return 0;
}

void import_sync_events_free(struct import_sync_events *s)
{
	free(s->a);
	free(s->b);
	free(s->c);
	free(s->d);
	memset(s, 0, sizeof(*s));
}

/* The guest's scheduler events (guest clock) and sync markers. */
static int read_guest(const char *path, const struct trace_opts *opts, struct ml_guest_event **out, size_t *nout,
		      struct import_sync_events *sync, struct trace_stats *st, struct vcpustat_error *err)
{
	struct ml_guest_event *ev = NULL;
	size_t n = 0, cap = 0;
	struct trace_reader *tr;
	struct trace_event te;
	int ret;

	ret = trace_open(&tr, path, opts, err);
	if (ret)
		return ret;
	if (trace_get_format(tr) == TRACE_CAPTURE) {
		trace_close(tr);
		return verror(err, -EINVAL,
			      "%s: a vcpustat capture is a host's events; a guest trace is the guest kernel's own "
			      "(ftrace, trace-cmd or LTTng, with the sync agent's markers: docs/import.md)",
			      path);
	}
	while ((ret = trace_next(tr, &te, err)) == 1) {
		struct ml_guest_event g = { .ts = te.ev.ts, .tid = (uint32_t)te.ev.tid, .cpu = (uint32_t)te.ev.cpu };

		if (te.marker) {
			ret = push_event(te.marker == 'a' ? &sync->a : &sync->d, te.marker == 'a' ? &sync->na : &sync->nd,
					 te.key, te.ev.ts);
			if (ret)
				break;
			continue;
		}
		if (!out)
			continue;
		switch (te.ev.type) {
		case VCPUSTAT_EV_SWITCH:
			g.type = ML_EV_SWITCH;
			g.tid2 = (uint32_t)te.ev.tid2;
			if (te.ev.arg1 || te.ev.arg0 == 0)
				g.flags |= ML_F_RUNNABLE;
			if (te.ev.arg0 & 0xb0) /* EXIT_DEAD, EXIT_ZOMBIE, TASK_DEAD */
				g.flags |= ML_F_EXITING;
			memcpy(g.comm2, te.next_comm, 16);
			break;
		case VCPUSTAT_EV_WAKEUP:
		case VCPUSTAT_EV_WAKEUP_NEW:
			g.type = ML_EV_WAKEUP;
			break;
		case VCPUSTAT_EV_PROCESS_EXIT:
			g.type = ML_EV_EXIT;
			break;
		default:
			continue;
		}
		memcpy(g.comm, te.ev.comm, 16);
		if (n == cap) {
			struct ml_guest_event *a = realloc(ev, (cap = cap ? cap * 2 : 4096) * sizeof(*a));

			if (!a) {
				ret = -ENOMEM;
				break;
			}
			ev = a;
		}
		ev[n++] = g;
	}
	if (st)
		*st = *trace_get_stats(tr);
	trace_close(tr);
	if (ret < 0) {
		free(ev);
		return err && err->code ? ret : verror(err, ret, "%s: %s", path, strerror(-ret));
	}
	if (out) {
		*out = ev;
		*nout = n;
	}
	return 0;
}

int import_guest_sync_events(const char *path, const struct trace_opts *opts, struct import_sync_events *out,
			     struct trace_stats *st, struct vcpustat_error *err)
{
	return read_guest(path, opts, NULL, NULL, out, st, err);
}

/* b and c of VM id (0: all) from the scan. */
static int host_events_of(struct import *im, uint32_t id, struct import_sync_events *out)
{
	for (size_t i = 0; i < im->nb; i++)
		if ((!id || vm_of_vcpu(im, im->b[i].tid, -1) == id) && push_event(&out->b, &out->nb, im->b[i].key, im->b[i].ts))
			return -ENOMEM;
	for (size_t i = 0; i < im->nc; i++)
		if ((!id || vm_of_vcpu(im, im->c[i].tid, -1) == id) && push_event(&out->c, &out->nc, im->c[i].key, im->c[i].ts))
			return -ENOMEM;
	return 0;
}

static int solve(const struct import_sync_events *s, struct vcpustat_sync_result *res,
		 struct vcpustat_sync_protocol_stats *ps, struct vcpustat_error *err)
{
	struct vcpustat_sync_match *m = NULL;
	size_t n = 0;
	int e;

	e = vcpustat_sync_match_protocol(s->a, s->na, s->b, s->nb, s->c, s->nc, s->d, s->nd, &m, &n, ps, err);
	if (!e)
		e = vcpustat_sync_solve(m, n, res, err);
	free(m);
	return e;
}

/* Stable sort by ts (a merge sort through a scratch array). */
static int sort_events(struct ml_guest_event *ev, size_t n)
{
	struct ml_guest_event *tmp;
	bool sorted = true;

	for (size_t i = 1; i < n && sorted; i++)
		sorted = ev[i - 1].ts <= ev[i].ts;
	if (sorted)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = ev[j].ts < ev[i].ts ? ev[j++] : ev[i++];
			while (i < mid)
				tmp[k++] = ev[i++];
			while (j < hi)
				tmp[k++] = ev[j++];
		}
		memcpy(ev, tmp, n * sizeof(*ev));
	}
	free(tmp);
	return 0;
}

/* A guest's events from its clock to the host's (dropping what the transform cannot place), sorted. */
static int map_events(struct guest_input *in, struct import_guest_result *gr)
{
	size_t w = 0;

	for (size_t i = 0; i < in->n; i++) {
		uint64_t host;

		if (vcpustat_sync_map(&gr->sync.transform, in->ev[i].ts, &host)) {
			gr->unmappable++;
			continue;
		}
		in->ev[w] = in->ev[i];
		in->ev[w++].ts = host;
	}
	in->n = w;
	return sort_events(in->ev, in->n);
}

/* Does the trace show VM id's guest-mode transitions (kvm_entry, kvm_exit)? */
static bool shows_kvm_mode(struct import *im, uint32_t id)
{
	size_t pos = 0;
	void *k, *v;

	while (hashmap_next(&im->kvm_tids, &pos, &k, &v))
		if ((*(uint8_t *)v & 2) && vm_of_vcpu(im, *(uint32_t *)k, -1) == id)
			return true;
	return false;
}

/*
 * The guest trace at path: its events (guest clock) into in, synchronized
 * with VM in->tgid of the host trace host scanned (its b and c events): the
 * transform in gr->sync.
 */
static int sync_guest(struct import *host, const char *path, struct guest_input *in, struct import_guest_result *gr,
		      struct vcpustat_error *err)
{
	struct import_sync_events s = { 0 };
	int e = read_guest(path, &host->o->trace, &in->ev, &in->n, &s, &gr->trace, err);

	if (!e)
		e = host_events_of(host, in->tgid, &s) ? verror(err, -ENOMEM, "out of memory") : 0;
	if (!e)
		e = solve(&s, &gr->sync, &gr->protocol, err);
	gr->na = s.na;
	gr->nb = s.nb;
	gr->nc = s.nc;
	gr->nd = s.nd;
	import_sync_events_free(&s);
	return e;
}

/* What the sync protocol dropped, for a "no synchronization" message ("" if nothing). */
static const char *sync_dropped(const struct vcpustat_sync_protocol_stats *ps, char *buf, size_t len)
{
	buf[0] = 0;
	if (ps->duplicate_keys || ps->inconsistent_keys)
		snprintf(buf, len, "; dropped: %zu keys seen twice in a trace (a trace given twice?), %zu reused",
			 ps->duplicate_keys, ps->inconsistent_keys);
	return buf;
}

static int prepare_guest(struct import *im, size_t gi, struct vcpustat_error *err)
{
	const struct import_guest *g = &im->o->guests[gi];
	struct import_guest_result *gr = &im->res->guests[gi];
	struct guest_input *in = &im->gin[gi];
	char dropped[256];
	int e;

	e = resolve_vm(im, g->vm, "--guest", &in->tgid, err);
	if (e)
		return e;
	gr->tgid = in->tgid;
	display_name(im, in->tgid, gr->vm, sizeof(gr->vm));
	e = sync_guest(im, g->path, in, gr, err);
	if (e)
		return e;
	if (gr->sync.transform_quality == VCPUSTAT_SYNC_ABSENT)
		return verror(err, -ENODATA,
			      "%s: cannot place the guest's events on the host's timeline: no synchronization "
			      "(guest markers: %zu a, %zu d; host events of VM %s in %s: %zu hypercalls, %zu entries; "
			      "matched: %zu%s). Run vcpustat-sync-agent in the guest while both traces record "
			      "(docs/import.md)",
			      g->path, gr->na, gr->nd, gr->vm, im->o->host, gr->nb, gr->nc,
			      gr->protocol.guest_to_host + gr->protocol.host_to_guest,
			      sync_dropped(&gr->protocol, dropped, sizeof(dropped)));
	if (map_events(in, gr))
		return verror(err, -ENOMEM, "out of memory");
	gr->host_mode_known = shows_kvm_mode(im, in->tgid);
	return 0;
}

/* ---- nested guests (L2 in L1) ---- */

static void complete(struct import *im, const struct trace_event *te, struct vcpustat_event *ev);

struct nested_collect {
	uint32_t tgid; /* L2's VMM in L1 */
	const struct vcpustat_sync_transform *to_host; /* L1 -> L0 */
	struct ml_vcpu_event *v;
	size_t n, cap;
	uint64_t unmappable;
};

/* L1's handler records: the states of L2's vCPUs, on the host's clock. */
static int collect_nested(void *ctx, const struct vcpustat_record *rec)
{
	struct nested_collect *c = ctx;
	uint64_t host;

	if (rec->tgid != c->tgid || rec->vcpu == VCPUSTAT_VCPU_NONE ||
	    (rec->type != VCPUSTAT_REC_STATE && rec->type != VCPUSTAT_REC_VCPU_NEW &&
	     rec->type != VCPUSTAT_REC_VCPU_GONE))
		return 0;
	if (vcpustat_sync_map(c->to_host, rec->ts, &host)) {
		c->unmappable++;
		return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct ml_vcpu_event *a = realloc(c->v, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		c->v = a;
		c->cap = cap;
	}
	c->v[c->n++] = (struct ml_vcpu_event){ .ts = host, .vcpu = rec->vcpu, .cpu = rec->cpu,
					       .state = rec->type == VCPUSTAT_REC_VCPU_GONE ? VCPU_UNKNOWN : rec->to };
	return 0;
}

/*
 * --guest VM@L1=TRACE: L1's trace (its own --guest) is VM's host trace: it
 * is scanned as a host trace is (VM's vCPU threads, the sync protocol's
 * hypercalls and entries), VM's trace synchronized to it, that transform
 * composed with L1's, and L1's trace replayed through the handler for the
 * states of VM's vCPUs in L1.
 */
static int prepare_nested(struct import *im, size_t gi, struct vcpustat_error *err)
{
	const struct import_guest *g = &im->o->guests[gi];
	struct import_guest_result *gr = &im->res->guests[gi];
	struct guest_input *in = &im->gin[gi];
	long p = in->parent;
	const struct import_guest_result *pr = &im->res->guests[p];
	const char *l1 = im->o->guests[p].path;
	struct import_opts so = { .host = l1, .trace = im->o->trace, .nr_cpus = im->o->nr_cpus };
	struct import_result sres = { 0 };
	struct nested_collect col = { .to_host = &pr->sync.transform };
	struct replay_options po = { .record_level = VCPUSTAT_LEVEL_VCPU, .on_record = collect_nested,
				     .ctx = &col, .nr_cpus = im->o->nr_cpus };
	struct replay *rp = NULL;
	struct trace_reader *tr = NULL;
	char dropped[256];
	struct trace_event te;
	struct import sub;
	int e;

	if (import_init(&sub, &so, &sres)) {
		import_free(&sub);
		return verror(err, -ENOMEM, "out of memory");
	}
	e = trace_open(&tr, l1, &sub.topts, err);
	if (!e)
		e = scan(&sub, tr, err);
	if (!e)
		e = resolve_vm(&sub, g->vm, "--guest", &in->tgid, err);
	if (e)
		goto out;
	gr->tgid = in->tgid;
	snprintf(gr->parent, sizeof(gr->parent), "%s", pr->vm);
	display_name(&sub, in->tgid, in->name, sizeof(in->name));
	snprintf(gr->vm, sizeof(gr->vm), "%.31s.%.31s", gr->parent, in->name);
	e = sync_guest(&sub, g->path, in, gr, err);
	if (e)
		goto out;
	if (gr->sync.transform_quality == VCPUSTAT_SYNC_ABSENT) {
		e = verror(err, -ENODATA,
			   "%s: cannot place the nested guest's events on its L1's timeline: no synchronization "
			   "(guest markers: %zu a, %zu d; events of VM %s in %s: %zu hypercalls, %zu entries; "
			   "matched: %zu%s). Run vcpustat-sync-agent in the nested guest while both traces record "
			   "(docs/import.md)",
			   g->path, gr->na, gr->nd, in->name, l1, gr->nb, gr->nc,
			   gr->protocol.guest_to_host + gr->protocol.host_to_guest,
			   sync_dropped(&gr->protocol, dropped, sizeof(dropped)));
		goto out;
	}
	gr->to_parent = gr->sync.transform;
	e = vcpustat_sync_compose(&pr->sync.transform, &gr->to_parent, &gr->sync.transform, err);
	if (e)
		goto out;
	if (map_events(in, gr)) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	gr->host_mode_known = shows_kvm_mode(&sub, in->tgid);
	/* L1's view of the nested VM's vCPUs */
	col.tgid = in->tgid;
	e = trace_rewind(tr, err);
	if (!e && replay_new(&rp, &po))
		e = verror(err, -ENOMEM, "out of memory");
	while (!e && (e = trace_next(tr, &te, err)) == 1) {
		struct vcpustat_event ev;

		learn(&sub, &te);
		complete(&sub, &te, &ev);
		e = replay_event(rp, &ev);
		if (e)
			e = verror(err, e, "%s: %s", l1, strerror(-e));
	}
	if (e)
		goto out;
	in->vev = col.v;
	in->nv = col.n;
	col.v = NULL;
	gr->parent_states = col.n;
	gr->unmappable += col.unmappable;
out:
	free(col.v);
	replay_free(rp);
	trace_close(tr);
	import_free(&sub);
	return e;
}

/* ---- the replay pass ---- */

static int on_record(void *ctx, const struct vcpustat_record *rec)
{
	struct import *im = ctx;
	uint8_t one = 1;
	int e;

	if (rec->type == VCPUSTAT_REC_VCPU_NEW) {
		if (!hashmap_lookup(&im->vcpus_seen, &rec->tid) && !hashmap_insert(&im->vcpus_seen, &rec->tid, &one))
			im->res->vcpus++;
		if (!hashmap_lookup(&im->vms_seen, &rec->tgid) && !hashmap_insert(&im->vms_seen, &rec->tgid, &one))
			im->res->vms++;
	}
	if (im->ml) {
		e = ml_host_record(im->ml, rec, im->err);
		if (e)
			return e;
	}
	return recorder_add(im->rec, rec, im->err);
}

/* The event as the handler wants it: process ids filled in, names where ftrace lost them. */
static void complete(struct import *im, const struct trace_event *te, struct vcpustat_event *ev)
{
	*ev = te->ev;
	switch (ev->type) {
	case VCPUSTAT_EV_SWITCH:
		ev->tgid = tgid_for(im, ev->tid, ev->tid == te->pid ? te->tgid : -1);
		ev->tgid2 = tgid_for(im, ev->tid2, -1);
		break;
	case VCPUSTAT_EV_WAKEUP:
	case VCPUSTAT_EV_WAKEUP_NEW:
	case VCPUSTAT_EV_MIGRATE:
	case VCPUSTAT_EV_PROCESS_EXIT:
		ev->tgid = tgid_for(im, ev->tid, ev->tid == te->pid ? te->tgid : -1);
		break;
	default: { /* KVM events: the current thread, a vCPU */
		uint32_t tid = (uint32_t)ev->tid;
		uint8_t one = 1;

		ev->tgid = tgid_for(im, tid, te->tgid);
		if (!ev->tgid) {
			ev->tgid = tid;
			if (!hashmap_lookup(&im->orphans, &tid) && !hashmap_insert(&im->orphans, &tid, &one))
				im->res->orphan_vcpus++;
		}
		if (ev->comm[0] == '<') {
			const struct tid_info *t = tid_get(&im->tids, tid, false);

			memset(ev->comm, 0, sizeof(ev->comm));
			if (t && t->has_comm)
				memcpy(ev->comm, t->comm, 16);
		}
		break;
	}
	}
}

static void add_meta(struct import *im, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add_meta(struct import *im, const char *key, const char *fmt, ...)
{
	va_list ap;

	if (im->nmeta >= MAX_META)
		return;
	snprintf(im->meta_keys[im->nmeta], sizeof(im->meta_keys[0]), "%s", key);
	va_start(ap, fmt);
	vsnprintf(im->meta_vals[im->nmeta], sizeof(im->meta_vals[0]), fmt, ap);
	va_end(ap);
	im->meta[im->nmeta].key = im->meta_keys[im->nmeta];
	im->meta[im->nmeta].value = im->meta_vals[im->nmeta];
	im->nmeta++;
}

/* Whether "key=value" text has the line want. */
static bool meta_has_line(const char *text, const char *want)
{
	size_t n = strlen(want);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, want, n) && (l[n] == '\n' || l[n] == '\0'))
			return true;
	return false;
}

static int replay_pass(struct import *im, struct trace_reader *tr, struct vcpustat_error *err)
{
	const struct import_opts *o = im->o;
	struct replay_options po = { .record_level = VCPUSTAT_LEVEL_FULL, .on_record = on_record, .nr_cpus = o->nr_cpus };
	struct recorder_opts ro = { 0 };
	struct trace_event te;
	struct vcpustat_event ev;
	struct recorder_stats rs;
	const uint64_t(*lost)[2] = NULL;
	size_t nlost = 0, li = 0;
	uint64_t start, last;
	int ret, e = 0;

	im->err = err;
	po.ctx = im;
	ret = trace_next(tr, &te, err);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return verror(err, -ENODATA, "%s: no event vcpustat uses (%llu lines: sched_switch, sched_wakeup, kvm_* "
					     "... are needed; see docs/import.md)",
			      o->host, (unsigned long long)trace_get_stats(tr)->lines);
	/* t = 0: the trace's first event; a capture's own start (its first events can be older: record's rule) */
	start = im->cap ? capture_get_info(im->cap)->mono_start_ns : te.ev.ts;
	im->res->start_ns = start;
	last = te.ev.ts;
	if (im->cap) { /* the handler at the capture's level, as record ran it (replay does the same) */
		if (!meta_has_line(capture_get_info(im->cap)->meta, "level=full"))
			po.record_level = VCPUSTAT_LEVEL_VCPU;
		lost = capture_lost(im->cap, &nlost);
	}
	if (replay_new(&im->rp, &po))
		return verror(err, -ENOMEM, "out of memory");
	add_meta(im, "tool", "vcpustat %s", VCPUSTAT_VERSION);
	if (o->command)
		add_meta(im, "command", "%s", o->command);
	add_meta(im, "level", "%s", record_level_name(po.record_level));
	add_meta(im, "source", "import");
	add_meta(im, "host_trace", "%s", o->host);
	add_meta(im, "host_format", "%s",
		 trace_get_format(tr) == TRACE_CTF	 ? "ctf"
		 : trace_get_format(tr) == TRACE_TRACEDAT ? "trace.dat"
		 : trace_get_format(tr) == TRACE_CAPTURE  ? "capture"
							  : "ftrace");
	add_meta(im, "trace_start_ns", "%llu", (unsigned long long)start);
	for (size_t i = 0; i < o->nguests; i++) {
		const struct import_guest_result *g = &im->res->guests[i];
		const struct vcpustat_sync_transform *t = &g->sync.transform;
		char key[96];

		snprintf(key, sizeof(key), "guest_trace.%s", g->vm);
		add_meta(im, key, "%s", o->guests[i].path);
		snprintf(key, sizeof(key), "sync.%s", g->vm);
		add_meta(im, key, "quality=%s a=%.12Lf b=%.0Lf ref_guest_ns=%.0Lf ref_host_ns=%.0Lf max_error_ns=%.0Lf%s%s",
			 vcpustat_sync_quality_name(g->sync.quality), t->mean.slope, vcpustat_sync_line_offset(&t->mean),
			 t->mean.x_ref, t->mean.y_ref, t->max_error_ns, g->parent[0] ? " through=" : "", g->parent);
	}
	for (size_t i = 0; i < o->nmeta; i++)
		add_meta(im, o->meta[i].key, "%s", o->meta[i].value);
	ro.path = o->out;
	ro.mono_start_ns = start;
	ro.meta = im->meta;
	ro.nmeta = im->nmeta;
	ro.vm_name = vm_name_cb;
	ro.thread_name = thread_name_cb;
	ro.ctx = im;
	if (im->cap) {
		const struct capture_info *ci = capture_get_info(im->cap);

		ro.real_start_ns = ci->real_start_ns; /* the wall clock it kept, at its start */
		ro.cgroup = cgroup_cb;
	}
	ro.no_sync = o->no_sync;
	ro.atomic = true; /* a failed import leaves no half file, and an existing one as it was */
	e = recorder_open(&im->rec, &ro, err);
	if (e)
		return e;
	if (o->nguests) {
		size_t k = 0;

		if (ml_new(&im->ml, im->rec, start))
			return verror(err, -ENOMEM, "out of memory");
		/* the host's guests first (ml's index k), then the nested ones, each after its L1 */
		for (size_t i = 0; i < o->nguests && !e; i++)
			if (im->gin[i].parent < 0 && !(e = ml_add_guest(im->ml, im->gin[i].tgid, im->gin[i].ev, im->gin[i].n,
									 im->res->guests[i].host_mode_known, err)))
				im->gin[i].ml = k++;
		for (size_t i = 0; i < o->nguests && !e; i++)
			if (im->gin[i].parent >= 0 &&
			    !(e = ml_add_nested(im->ml, im->gin[im->gin[i].parent].ml, im->gin[i].name, im->gin[i].ev,
						im->gin[i].n, im->gin[i].vev, im->gin[i].nv,
						im->res->guests[i].host_mode_known, err)))
				im->gin[i].ml = k++;
		if (e)
			return e;
	}
	do {
		learn(im, &te);
		if (im->cap) { /* the handler's own events, as the kernel gave them */
			ev = te.ev;
			for (; li < nlost && lost[li][0] <= ev.ts && !e; li++)
				e = recorder_lost(im->rec, lost[li][0], lost[li][1], err);
			if (e)
				return e;
		} else {
			complete(im, &te, &ev);
		}
		if (replay_event(im->rp, &ev))
			return err->code ? err->code : verror(err, -EIO, "%s: cannot write", o->out);
		if (ev.ts > last)
			last = ev.ts;
	} while ((ret = trace_next(tr, &te, err)) == 1);
	if (ret < 0)
		return ret;
	for (; li < nlost && !e; li++)
		e = recorder_lost(im->rec, lost[li][0], lost[li][1], err);
	if (e)
		return e;
	im->res->end_ns = last;
	if (im->ml) {
		e = ml_finish(im->ml, last, err);
		if (e)
			return e;
		for (size_t i = 0; i < o->nguests; i++)
			ml_get_stats(im->ml, im->gin[i].ml, &im->res->guests[i].ml);
	}
	e = recorder_finish(&im->rec, last, &rs, err);
	im->res->records = rs.records;
	if (e)
		return e;
	im->res->late = rs.late;
	im->res->intervals = rs.intervals; /* the file's (the output may be a device or a FIFO: not read back) */
	return 0;
}

int vcpustat_import(const struct import_opts *o, struct import_result *res, struct vcpustat_error *err)
{
	struct trace_reader *tr = NULL;
	struct import im;
	bool need_scan = o->nguests > 0;
	int e;

	memset(res, 0, sizeof(*res));
	if (o->nguests) {
		res->guests = calloc(o->nguests, sizeof(*res->guests));
		if (!res->guests)
			return verror(err, -ENOMEM, "out of memory");
		res->nguests = o->nguests;
	}
	if (import_init(&im, o, res)) {
		import_free(&im);
		return verror(err, -ENOMEM, "out of memory");
	}
	im.gin = calloc(o->nguests ? o->nguests : 1, sizeof(*im.gin));
	if (!im.gin) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	e = trace_open(&tr, o->host, &im.topts, err);
	if (e)
		goto out;
	im.cap = trace_get_capture(tr);
	if (!need_scan && !o->nvms) { /* no thread groups in the trace: group vCPU threads by name first */
		struct trace_event te;

		e = trace_next(tr, &te, err);
		if (e < 0)
			goto out;
		need_scan = e == 1 && te.tgid < 0;
		e = trace_rewind(tr, err);
		if (e)
			goto out;
		im.cap = trace_get_capture(tr); /* opened again */
	}
	if (need_scan) {
		e = scan(&im, tr, err);
		if (e)
			goto out;
		res->two_passes = true;
		/* the host's guests, then the nested ones (their L1's transform is known by then) */
		for (size_t i = 0; i < o->nguests && !e; i++) {
			im.gin[i].parent = -1;
			if (o->guests[i].parent)
				continue;
			e = prepare_guest(&im, i, err);
			for (size_t j = 0; j < i && !e; j++)
				if (!o->guests[j].parent && im.gin[j].tgid == im.gin[i].tgid)
					e = verror(err, -EINVAL, "--guest %s and --guest %s: the same VM (%s) twice",
						   o->guests[j].vm, o->guests[i].vm, res->guests[i].vm);
		}
		for (size_t i = 0; i < o->nguests && !e; i++) {
			if (!o->guests[i].parent)
				continue;
			for (size_t j = 0; j < o->nguests && im.gin[i].parent < 0; j++)
				if (!o->guests[j].parent &&
				    (!strcmp(o->guests[i].parent, o->guests[j].vm) ||
				     !strcmp(o->guests[i].parent, res->guests[j].vm)))
					im.gin[i].parent = (long)j;
			if (im.gin[i].parent < 0) {
				e = verror(err, -EINVAL,
					   "--guest %s@%s: %s is not a guest of the host given with --guest %s=TRACE "
					   "(a nested guest is synchronized through its L1's trace)",
					   o->guests[i].vm, o->guests[i].parent, o->guests[i].parent, o->guests[i].parent);
				break;
			}
			e = prepare_nested(&im, i, err);
			for (size_t j = 0; j < i && !e; j++)
				if (!strcmp(res->guests[j].vm, res->guests[i].vm))
					e = verror(err, -EINVAL, "--guest %s@%s and --guest %s: the same VM (%s) twice",
						   o->guests[i].vm, o->guests[i].parent, o->guests[j].vm, res->guests[i].vm);
		}
		if (e)
			goto out;
		e = trace_rewind(tr, err);
		if (e)
			goto out;
		im.cap = trace_get_capture(tr); /* opened again */
	}
	e = replay_pass(&im, tr, err);
out:
	if (tr)
		res->host = *trace_get_stats(tr);
	if (im.rec) {
		recorder_close(im.rec, res->end_ns, NULL);
		im.rec = NULL;
	}
	ml_free(im.ml);
	replay_free(im.rp);
	trace_close(tr);
	import_free(&im);
	return e;
}

void import_result_free(struct import_result *res)
{
	free(res->guests);
	memset(res, 0, sizeof(*res));
}

/* ---- synchronization only ---- */

static bool is_sht(const char *path)
{
	char head[8] = { 0 };
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	n = fread(head, 1, sizeof(head), f);
	fclose(f);
	return n == 8 && !memcmp(head, "vcpuSHT\n", 8);
}

/* b and c from the sync intervals of an SHT recording. */
static int sht_sync_events(const char *path, const char *vm, struct import_sync_events *out,
			   struct vcpustat_error *err)
{
	const struct sht_info *info;
	struct sht_reader *r;
	uint32_t vms;
	bool found = !vm;
	int e;

	e = sht_open(&r, path, err);
	if (e)
		return e;
	info = sht_get_info(r);
	vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	for (uint32_t a = vms == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_first_child(r, vms); a != SHT_NO_ATTR && !e;
	     a = sht_attr_next_sibling(r, a)) {
		uint32_t vcpus = sht_attr_child(r, a, "vcpus");

		if (vm) {
			uint32_t pid = sht_attr_child(r, a, "pid");
			struct sht_interval *iv = NULL;
			size_t n = 0;
			char num[24] = "";

			if (pid != SHT_NO_ATTR && !sht_query_range(r, pid, NULL, info->start, info->end, &iv, &n, NULL) && n &&
			    iv[0].value.type == SHT_INT)
				snprintf(num, sizeof(num), "%lld", (long long)iv[0].value.i);
			free(iv);
			if (strcmp(sht_attr_name(r, a), vm) && strcmp(num, vm))
				continue;
			found = true;
		}
		for (uint32_t c = vcpus == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_first_child(r, vcpus); c != SHT_NO_ATTR && !e;
		     c = sht_attr_next_sibling(r, c)) {
			uint32_t s = sht_attr_child(r, c, "sync");
			struct sht_interval *iv = NULL;
			size_t n = 0;

			if (s == SHT_NO_ATTR)
				continue;
			e = sht_query_range(r, s, NULL, info->start, info->end, &iv, &n, err);
			for (size_t i = 0; i < n && !e; i++) {
				uint64_t key = (uint64_t)iv[i].value.i;

				if (iv[i].value.type != SHT_INT)
					continue;
				e = push_event(&out->b, &out->nb, key, info->mono_start_ns + iv[i].start);
				/*
				 * The end is c. An interval still open when the recording
				 * ended also ends at the file's end, before the real c: a
				 * host->guest message said to leave earlier than it did only
				 * gives a weaker constraint, never a wrong one.
				 */
				if (!e)
					e = push_event(&out->c, &out->nc, key, info->mono_start_ns + iv[i].end);
			}
			free(iv);
		}
	}
	sht_close(r);
	if (!e && !found)
		e = verror(err, -ENOENT, "%s: no VM %s in this recording", path, vm);
	return e == -ENOMEM ? verror(err, e, "out of memory") : e;
}

int import_host_sync_events(const char *path, const char *vm, const struct import_opts *o,
			    struct import_sync_events *out, struct vcpustat_error *err)
{
	struct import_opts local = o ? *o : (struct import_opts){ 0 };
	struct import_result res = { 0 };
	struct trace_reader *tr = NULL;
	struct import im;
	uint32_t id = 0;
	int e;

	if (is_sht(path))
		return sht_sync_events(path, vm, out, err);
	local.host = path;
	local.nguests = 0;
	if (import_init(&im, &local, &res)) {
		import_free(&im);
		return verror(err, -ENOMEM, "out of memory");
	}
	e = trace_open(&tr, path, &local.trace, err);
	if (!e)
		e = scan(&im, tr, err);
	if (!e && vm)
		e = resolve_vm(&im, vm, "--vm", &id, err);
	if (!e && host_events_of(&im, id, out))
		e = verror(err, -ENOMEM, "out of memory");
	trace_close(tr);
	import_free(&im);
	return e;
}

int import_sync(const char *host, const char *guest, const char *vm, const struct import_opts *o,
		struct vcpustat_sync_result *res, struct vcpustat_sync_protocol_stats *ps, struct import_sync_events *ev,
		struct vcpustat_error *err)
{
	struct import_opts none = { 0 };
	int e;

	memset(ev, 0, sizeof(*ev));
	if (!o)
		o = &none;
	e = import_guest_sync_events(guest, &o->trace, ev, NULL, err);
	if (!e)
		e = import_host_sync_events(host, vm, o, ev, err);
	if (!e)
		e = solve(ev, res, ps, err);
	return e;
}
