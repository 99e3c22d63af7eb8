// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * summary.c - the window model (model.h): a summary built from two snapshots.
 * Rendered by summary_json.c and summary_text.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/util.h"
#include "model/summary.h"

__u64 latency_percentile(const __u64 *bucket, __u64 count, double q)
{
	__u64 want, seen = 0;
	unsigned int b;

	if (!count)
		return 0;
	want = (__u64)(q * (double)count + 0.5);
	if (want < 1)
		want = 1;
	for (b = 0; b < LAT_HIST_BUCKETS; b++) {
		__u64 lo, hi;

		if (!bucket[b] || seen + bucket[b] < want) {
			seen += bucket[b];
			continue;
		}
		lo = lat_hist_lower(b);
		hi = b == LAT_HIST_BUCKETS - 1 ? lo : lat_hist_upper(b);
		/* linear within the bucket */
		return lo + (__u64)((double)(hi - lo) * (double)(want - seen) / (double)(bucket[b] + 1));
	}
	return lat_hist_lower(LAT_HIST_BUCKETS - 1);
}

double vcpu_share(const struct summary *s, const struct vcpu_summary *v, unsigned int state)
{
	__u64 total = 0;

	for (unsigned int i = 0; i < VCPU_NR_STATES; i++)
		total += v->ns[i];
	return total && state < VCPU_NR_STATES ? (double)v->ns[state] / (double)total : 0;
}

double vm_share(const struct summary *s, const struct vm_summary *vm, unsigned int state)
{
	__u64 total = 0;

	for (unsigned int i = 0; i < VCPU_NR_STATES; i++)
		total += vm->ns[i];
	return total && state < VCPU_NR_STATES ? (double)vm->ns[state] / (double)total : 0;
}

/*
 * Room for element n of an array that only grows one element at a time:
 * capacities 1, 2, 4, 8, ... (reallocated when n is 0 or a power of two),
 * so that building a summary of N VMs does not copy the array N times.
 */
static void *grow(void *arr, size_t n, size_t size)
{
	if (n & (n - 1))
		return arr;
	return realloc(arr, (n ? 2 * n : 1) * size);
}

static __u64 sub0(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* Per-state totals of a vCPU record at time t (a dead vCPU's clock stopped at its exit). */
static void vcpu_totals(const struct vcpustat_vcpu *v, __u64 t, bool dead, __u64 out[VCPU_NR_STATES])
{
	for (unsigned int i = 0; i < VCPU_NR_STATES; i++)
		out[i] = dead ? v->fsm.ns[i] : vcpu_fsm_total(&v->fsm, i, t);
}

struct prev_index {
	struct hashmap vcpus;	 /* tid -> const struct vcpustat_vcpu * (+ dead flag) */
	struct hashmap hists;	 /* key -> const struct vcpustat_hist * */
	struct hashmap culprits; /* key -> const struct vcpustat_culprit * */
	struct hashmap details;	 /* key -> const struct vcpustat_detail * */
};

struct prev_vcpu {
	const struct vcpustat_vcpu *v;
	bool dead;
};

static void prev_index_free(struct prev_index *p)
{
	hashmap_free(&p->vcpus);
	hashmap_free(&p->hists);
	hashmap_free(&p->culprits);
	hashmap_free(&p->details);
}

static int prev_index_build(struct prev_index *p, const struct vcpustat_snapshot *prev)
{
	int err;
	size_t i;

	memset(p, 0, sizeof(*p));
	err = hashmap_init(&p->vcpus, sizeof(__u32), sizeof(struct prev_vcpu), 0);
	if (!err)
		err = hashmap_init(&p->hists, sizeof(struct vcpustat_hist_key), sizeof(void *), 0);
	if (!err)
		err = hashmap_init(&p->culprits, sizeof(struct vcpustat_culprit_key), sizeof(void *), 0);
	if (!err)
		err = hashmap_init(&p->details, sizeof(struct vcpustat_detail_key), sizeof(void *), 0);
	if (err || !prev)
		return err;
	for (i = 0; i < prev->nr_vcpus && !err; i++) {
		struct prev_vcpu pv = { &prev->vcpus[i], false };

		err = hashmap_update(&p->vcpus, &prev->vcpus[i].tid, &pv);
	}
	for (i = 0; i < prev->nr_hists && !err; i++) {
		const struct vcpustat_hist *h = &prev->hists[i].hist;

		err = hashmap_update(&p->hists, &prev->hists[i].key, &h);
	}
	for (i = 0; i < prev->nr_culprits && !err; i++) {
		const struct vcpustat_culprit *c = &prev->culprits[i].culprit;

		err = hashmap_update(&p->culprits, &prev->culprits[i].key, &c);
	}
	for (i = 0; i < prev->nr_details && !err; i++) {
		const struct vcpustat_detail *d = &prev->details[i].detail;

		err = hashmap_update(&p->details, &prev->details[i].key, &d);
	}
	return err;
}

/* --vm and (live: from /proc, only when given) --cgroup. */
static bool vm_wanted(const struct summary_filter *f, struct names *names, __u32 tgid)
{
	__u64 pidns;

	if (!summary_filter_wants(f, names_vm(names, tgid), tgid))
		return false;
	return !f || !f->nr_cgroups || summary_filter_wants_cgroup(f, names_vm_cgroup(names, tgid, &pidns));
}

static struct vm_summary *vm_get(struct summary *s, struct hashmap *by_tgid, __u32 tgid, struct names *names)
{
	size_t *idx = hashmap_lookup(by_tgid, &tgid);
	struct vm_summary *vms, *vm;
	size_t i;

	if (idx)
		return &s->vms[*idx];
	vms = grow(s->vms, s->nr_vms, sizeof(*vms));
	if (!vms)
		return NULL;
	s->vms = vms;
	i = s->nr_vms++;
	vm = &s->vms[i];
	memset(vm, 0, sizeof(*vm));
	vm->tgid = tgid;
	snprintf(vm->name, sizeof(vm->name), "%s", names_vm(names, tgid));
	snprintf(vm->cgroup, sizeof(vm->cgroup), "%s", names_vm_cgroup(names, tgid, &vm->pidns));
	vm->runq.kind = VCPU_SAMPLE_RUNQ_WAIT;
	if (hashmap_update(by_tgid, &tgid, &i))
		return NULL;
	return vm;
}

/* L2's guest time of a vCPU: its closed stays, and the one it is in (guest time since it entered L2). */
static __u64 l2_total(const struct vcpustat_vcpu *v, __u64 guest_ns)
{
	return v->l2_guest_ns + (v->in_l2 ? sub0(guest_ns, v->l2_mark_ns) : 0);
}

/*
 * The exits in progress at the end of the window (docs/json.md "Open
 * exits"), if they began in it, as the report of a file counts an exit the
 * file ends in: open in the window of its start, with its time so far. One
 * the previous snapshot already saw (the same start) began before.
 */
static void vcpu_open_exits(struct vcpu_summary *vs, const struct vcpustat_vcpu *v, const struct vcpustat_vcpu *prev,
			    __u64 now)
{
	const struct vcpu_fsm *f = &v->fsm, *p = prev ? &prev->fsm : NULL;
	char buf[32];

	if ((f->flags & VCPU_F_IN_EXIT) && !(p && (p->flags & VCPU_F_IN_EXIT) && p->exit_since == f->exit_since)) {
		vs->kvm_exits_open = 1;
		snprintf(vs->open_exit, sizeof(vs->open_exit), "%s",
			 exit_reason_name(f->exit_isa, f->exit_reason, buf, sizeof(buf)));
		vs->open_exit_ns = sub0(now, f->exit_since);
	}
	if ((f->flags & VCPU_F_IN_UEXIT) &&
	    !(p && (p->flags & VCPU_F_IN_UEXIT) && p->uexit_since == f->uexit_since)) {
		vs->userspace_exits_open = 1;
		snprintf(vs->open_uexit, sizeof(vs->open_uexit), "%s",
			 userspace_exit_name(f->uexit_reason, buf, sizeof(buf)));
		vs->open_uexit_ns = sub0(now, f->uexit_since);
	}
}

static int vcpu_add(struct summary *s, struct hashmap *by_tgid, struct names *names, struct prev_index *pi,
		    const struct summary_filter *f, const struct vcpustat_snapshot *cur, const struct vcpustat_vcpu *v,
		    bool dead)
{
	struct prev_vcpu *pv = hashmap_lookup(&pi->vcpus, &v->tid);
	__u64 now[VCPU_NR_STATES], before[VCPU_NR_STATES] = { 0 };
	struct vcpu_summary *vs, *arr;
	struct vm_summary *vm;
	bool same;

	if (!vm_wanted(f, names, v->tgid))
		return 0;
	vm = vm_get(s, by_tgid, v->tgid, names);
	if (!vm)
		return -ENOMEM;
	arr = grow(vm->vcpus, vm->nr_vcpus, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	vm->vcpus = arr;
	vs = &vm->vcpus[vm->nr_vcpus++];
	memset(vs, 0, sizeof(*vs));
	vs->tid = v->tid;
	vs->tgid = v->tgid;
	vs->index = v->index;
	vs->index_src = v->index_src;
	vs->state = v->fsm.state;
	vs->pcpu = v->fsm.pcpu;
	vs->gone = dead;
	memcpy(vs->comm, v->comm, sizeof(vs->comm));
	vs->comm[sizeof(vs->comm) - 1] = '\0';

	vcpu_totals(v, cur->ts, dead, now);
	/* the same vCPU as in the previous snapshot (not a new thread that reused the tid) */
	same = pv && pv->v->discovered_ns == v->discovered_ns;
	if (same)
		vcpu_totals(pv->v, s->t0, pv->dead, before);
	for (unsigned int i = 0; i < VCPU_NR_STATES; i++) {
		vs->ns_total[i] = now[i];
		vs->ns[i] = sub0(now[i], before[i]);
	}
#define DELTA(field) (same ? sub0(v->fsm.field, pv->v->fsm.field) : v->fsm.field)
	vs->preemptions = DELTA(preemptions);
	vs->wakeups = DELTA(wakeups);
	vs->migrations = DELTA(migrations);
	vs->kvm_exits = DELTA(kvm_exits);
	vs->userspace_exits = DELTA(userspace_exits);
	vs->polls_ok = DELTA(polls_ok);
	vs->polls_failed = DELTA(polls_failed);
	vs->poll_fail_ns = DELTA(poll_fail_ns);
#undef DELTA
	vcpu_open_exits(vs, v, same ? pv->v : NULL, cur->ts);
	vs->cross_node = same ? sub0(v->cross_node, pv->v->cross_node) : v->cross_node;
	vs->cross_llc = same ? sub0(v->cross_llc, pv->v->cross_llc) : v->cross_llc;
	vm->place.cross_node += vs->cross_node;
	vm->place.cross_llc += vs->cross_llc;
	vs->numa_moves = same ? sub0(v->numa_moves, pv->v->numa_moves) : v->numa_moves;
	vm->place.numa_moves += vs->numa_moves;
	vs->halt_poll_ns = v->fsm.halt_poll_ns;
	vs->l2_ns_total = l2_total(v, now[VCPU_GUEST]);
	vs->l2_ns = same ? sub0(vs->l2_ns_total, l2_total(pv->v, before[VCPU_GUEST])) : vs->l2_ns_total;
	vs->in_l2 = v->in_l2;
	vs->nested = vs->l2_ns_total || v->in_l2;
	summary_vm_add_vcpu(vm, vs);
	return 0;
}

void vm_nested_exits(const struct vm_summary *vm, __u64 *l0, __u64 *l1)
{
	*l0 = *l1 = 0;
	for (size_t i = 0; i < vm->nr_details; i++)
		if (vm->details[i].kind == VCPUSTAT_DETAIL_NESTED)
			*(vm->details[i].access == VCPUSTAT_ACCESS_L1 ? l1 : l0) += vm->details[i].count;
}

void summary_add_polls(struct vm_summary *vm, const struct vcpu_summary *v)
{
	vm->polls_ok += v->polls_ok;
	vm->polls_failed += v->polls_failed;
	vm->poll_fail_ns += v->poll_fail_ns;
	if (v->halt_poll_ns > vm->halt_poll_ns)
		vm->halt_poll_ns = v->halt_poll_ns;
}

void summary_vm_add_vcpu(struct vm_summary *vm, const struct vcpu_summary *v)
{
	for (unsigned int k = 0; k < VCPU_NR_STATES; k++)
		vm->ns[k] += v->ns[k];
	vm->preemptions += v->preemptions;
	vm->wakeups += v->wakeups;
	vm->migrations += v->migrations;
	vm->kvm_exits += v->kvm_exits;
	vm->userspace_exits += v->userspace_exits;
	vm->kvm_exits_open += v->kvm_exits_open;
	vm->userspace_exits_open += v->userspace_exits_open;
	vm->l2_ns += v->l2_ns;
	vm->nested |= v->nested;
	summary_add_polls(vm, v);
}

static void latency_fill(struct latency_summary *l, const struct vcpustat_hist_key *k, const struct vcpustat_hist *h,
			 const struct vcpustat_hist *before, double seconds)
{
	char buf[32];

	l->kind = k->kind;
	l->isa = k->isa;
	l->reason = k->reason;
	if (k->kind == VCPU_SAMPLE_EXIT)
		snprintf(l->name, sizeof(l->name), "%s", exit_reason_name(k->isa, k->reason, buf, sizeof(buf)));
	else if (k->kind == VCPU_SAMPLE_USERSPACE_EXIT)
		snprintf(l->name, sizeof(l->name), "%s", userspace_exit_name(k->reason, buf, sizeof(buf)));
	else if (k->kind == VCPU_SAMPLE_WAKE)
		snprintf(l->name, sizeof(l->name), "%s", wake_reason_name(k->reason));
	else if (k->kind == VCPU_SAMPLE_WAKE_VECTOR)
		snprintf(l->name, sizeof(l->name), "%s", wake_vector_name(k->reason, buf, sizeof(buf)));
	else
		snprintf(l->name, sizeof(l->name), "runq_wait");
	l->count = before ? sub0(h->count, before->count) : h->count;
	l->sum_ns = before ? sub0(h->sum_ns, before->sum_ns) : h->sum_ns;
	l->max_ns = h->max_ns;
	l->gsys = before ? sub0(h->gsys, before->gsys) : h->gsys;
	l->count_total = h->count;
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
		l->bucket[b] = before ? sub0(h->bucket[b], before->bucket[b]) : h->bucket[b];
	l->rate = seconds > 0 ? (double)l->count / seconds : 0;
	l->p50_ns = latency_percentile(l->bucket, l->count, 0.50);
	l->p90_ns = latency_percentile(l->bucket, l->count, 0.90);
	l->p99_ns = latency_percentile(l->bucket, l->count, 0.99);
	if (l->count && l->p99_ns > l->max_ns)
		l->p99_ns = l->max_ns;
	if (l->count && l->p90_ns > l->max_ns)
		l->p90_ns = l->max_ns;
	if (l->count && l->p50_ns > l->max_ns)
		l->p50_ns = l->max_ns;
}

static int latency_append(struct latency_summary **arr, size_t *n, const struct latency_summary *l)
{
	struct latency_summary *a = grow(*arr, *n, sizeof(**arr));

	if (!a)
		return -ENOMEM;
	*arr = a;
	a[(*n)++] = *l;
	return 0;
}

/* qsort that accepts an empty (NULL) array */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static int by_rate(const void *a, const void *b)
{
	const struct latency_summary *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->count_total != y->count_total)
		return x->count_total > y->count_total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_ns(const void *a, const void *b)
{
	const struct culprit_summary *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int address_space_cmp(const void *a, const void *b)
{
	const struct detail_summary *x = a, *y = b;

	if (x->sum_ns != y->sum_ns)
		return x->sum_ns > y->sum_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int detail_summary_cmp(const void *a, const void *b)
{
	const struct detail_summary *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->access < y->access ? -1 : x->access > y->access;
}

/* The window's share of one exit-detail row, appended to its VM's table if it counted anything. */
static int detail_add(struct summary *s, struct hashmap *by_tgid, const struct prev_index *pi,
		      const struct vcpustat_detail_entry *e)
{
	const struct vcpustat_detail **before = hashmap_lookup(&pi->details, &e->key);
	size_t *idx = hashmap_lookup(by_tgid, &e->key.tgid);
	struct detail_summary *d;
	struct vm_summary *vm;
	__u64 count;

	count = sub0(e->detail.count, before ? (*before)->count : 0);
	if (!idx || !count)
		return 0;
	vm = &s->vms[*idx];
	if (e->key.kind == VCPUSTAT_DETAIL_CR3) { /* guest address spaces: a table of their own */
		d = grow(vm->address_spaces, vm->nr_address_spaces, sizeof(*d));
		if (!d)
			return -ENOMEM;
		vm->address_spaces = d;
		d += vm->nr_address_spaces++;
	} else {
		d = grow(vm->details, vm->nr_details, sizeof(*d));
		if (!d)
			return -ENOMEM;
		vm->details = d;
		d += vm->nr_details++;
	}
	memset(d, 0, sizeof(*d));
	d->kind = e->key.kind;
	d->access = e->key.access;
	d->addr = e->key.addr;
	d->count = count;
	d->sum_ns = sub0(e->detail.sum_ns, before ? (*before)->sum_ns : 0);
	d->max_ns = e->detail.max_ns;
	d->count_total = e->detail.count;
	d->sum_ns_total = e->detail.sum_ns;
	d->rate = s->seconds > 0 ? (double)count / s->seconds : 0;
	return 0;
}

static int by_index(const void *a, const void *b)
{
	const struct vcpu_summary *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int by_name(const void *a, const void *b)
{
	const struct vm_summary *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->tgid < y->tgid ? -1 : x->tgid > y->tgid);
}

/* Append culprit e (ns in the window) to the list *list of *n. */
static int culprit_add(struct culprit_summary **list, size_t *n, const struct vcpustat_culprit_entry *e, __u64 ns,
		       struct hashmap *vcpu_by_tid, struct names *names)
{
	struct culprit_summary *arr, *c;
	const struct vcpustat_vcpu **who;

	arr = grow(*list, *n, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	*list = arr;
	c = &arr[(*n)++];
	memset(c, 0, sizeof(*c));
	c->tid = e->key.tid;
	c->tgid = e->culprit.tgid;
	c->cgroup_id = e->culprit.cgroup_id;
	memcpy(c->comm, e->culprit.comm, sizeof(c->comm));
	c->comm[sizeof(c->comm) - 1] = '\0';
	if (!c->tid)
		snprintf(c->comm, sizeof(c->comm), "(idle)");
	if (c->tid == VCPUSTAT_TID_EXITED)
		snprintf(c->process, sizeof(c->process), "threads that exited");
	else
		snprintf(c->process, sizeof(c->process), "%s", c->tid ? names_process(names, c->tgid) : "idle");
	snprintf(c->cgroup, sizeof(c->cgroup), "%s", names_cgroup(names, c->cgroup_id));
	c->vcpu = -1;
	who = hashmap_lookup(vcpu_by_tid, &c->tid);
	if (who && c->tid && c->tid != VCPUSTAT_TID_EXITED) {
		snprintf(c->vm, sizeof(c->vm), "%s", names_vm(names, (*who)->tgid));
		c->vcpu = (int)(*who)->index;
	}
	c->ns = ns;
	return 0;
}

/* A VMM thread's time on a CPU (wait: waiting for one) at ts, its open interval included. */
__u64 vmm_thread_ns(const struct vcpustat_vmm_thread *t, __u64 ts, bool wait)
{
	__u64 ns = wait ? t->wait_ns : t->run_ns;

	if (t->state == (wait ? VCPUSTAT_VMM_T_WAIT : VCPUSTAT_VMM_T_RUN) && ts > t->since)
		ns += ts - t->since;
	return ns;
}

/* Add snap's VMM times (closed: the vms map; open: the threads') to acc[vm index][run 0..1, wait 2..3]. */
static void vmm_totals(const struct vcpustat_snapshot *snap, const struct hashmap *by_tgid, __u64 (*acc)[4])
{
	size_t i;

	for (i = 0; i < snap->nr_vms; i++) {
		const size_t *idx = hashmap_lookup(by_tgid, &snap->vms[i].tgid);

		for (int k = 0; idx && k < VMM_NR_KINDS; k++) {
			acc[*idx][k] += snap->vms[i].vmm_run_ns[k];
			acc[*idx][2 + k] += snap->vms[i].vmm_wait_ns[k];
		}
	}
	for (i = 0; i < snap->nr_vmm; i++) {
		const struct vcpustat_vmm_thread *t = &snap->vmm[i];
		const size_t *idx = hashmap_lookup(by_tgid, &t->vm_tgid);

		if (!idx || t->kind >= VMM_NR_KINDS)
			continue;
		acc[*idx][t->kind] += vmm_thread_ns(t, snap->ts, false) - t->run_ns;
		acc[*idx][2 + t->kind] += vmm_thread_ns(t, snap->ts, true) - t->wait_ns;
	}
}

/*
 * The window of the live VMs' VMM threads (the vmm_threads map): their times,
 * and how many ran or waited in it.
 */
static int vmm_window(struct summary *s, const struct hashmap *by_tgid, const struct vcpustat_snapshot *prev,
		      const struct vcpustat_snapshot *cur)
{
	__u64(*now)[4] = calloc(s->nr_vms + 1, sizeof(*now)), (*then)[4] = calloc(s->nr_vms + 1, sizeof(*then));
	struct hashmap before;
	size_t i;
	int err = -ENOMEM;

	if (!now || !then || hashmap_init(&before, sizeof(__u32), sizeof(__u64), 0))
		goto out;
	vmm_totals(cur, by_tgid, now);
	if (prev)
		vmm_totals(prev, by_tgid, then);
	for (i = 0; i < s->nr_vms; i++) {
		s->vms[i].vmm.known = true;
		for (int k = 0; k < VMM_NR_KINDS; k++) {
			s->vms[i].vmm.run_ns[k] = sub0(now[i][k], then[i][k]);
			s->vms[i].vmm.wait_ns[k] = sub0(now[i][2 + k], then[i][2 + k]);
		}
	}
	err = 0;
	for (i = 0; prev && i < prev->nr_vmm && !err; i++) {
		const struct vcpustat_vmm_thread *t = &prev->vmm[i];
		__u64 ns = vmm_thread_ns(t, prev->ts, false) + vmm_thread_ns(t, prev->ts, true);

		err = hashmap_update(&before, &t->tid, &ns);
	}
	for (i = 0; i < cur->nr_vmm && !err; i++) {
		const struct vcpustat_vmm_thread *t = &cur->vmm[i];
		const size_t *idx = hashmap_lookup(by_tgid, &t->vm_tgid);
		const __u64 *was = hashmap_lookup(&before, &t->tid);

		if (!idx || t->kind >= VMM_NR_KINDS)
			continue;
		if (vmm_thread_ns(t, cur->ts, false) + vmm_thread_ns(t, cur->ts, true) > (was ? *was : 0) ||
		    t->state == VCPUSTAT_VMM_T_RUN || t->state == VCPUSTAT_VMM_T_WAIT)
			s->vms[*idx].vmm.threads[t->kind]++;
	}
	hashmap_free(&before);
out:
	free(now);
	free(then);
	return err;
}

/* snap's vCPU-time per (VM, CPU) into m (key -> __u64): closed (vm_cpu) and open (the vCPUs on a CPU now). */
static int place_totals(const struct vcpustat_snapshot *snap, struct hashmap *m)
{
	int err = 0;

	for (size_t i = 0; i < snap->nr_places && !err; i++)
		err = hashmap_update(m, &snap->places[i].key, &snap->places[i].ns);
	for (size_t i = 0; i < snap->nr_vcpus && !err; i++) {
		const struct vcpustat_vcpu *v = &snap->vcpus[i];
		struct vcpustat_place_key k = { .tgid = v->tgid, .cpu = v->fsm.pcpu };
		unsigned int st = v->fsm.state;
		__u64 *ns, open;

		if (!v->oncpu_since || snap->ts <= v->oncpu_since || v->fsm.pcpu == VCPU_PCPU_NONE ||
		    (st != VCPU_GUEST && st != VCPU_HOST && st != VCPU_POLL))
			continue;
		open = snap->ts - v->oncpu_since;
		ns = hashmap_lookup(m, &k);
		if (ns)
			*ns += open;
		else
			err = hashmap_update(m, &k, &open);
	}
	return err;
}

static int by_place_cpu(const void *a, const void *b)
{
	const struct place_cpu *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* The live VMs' placement in the window: time per CPU, SMT sharing (cross-node/LLC moves: vcpu_add). */
static int place_window(struct summary *s, const struct hashmap *by_tgid, const struct vcpustat_snapshot *prev,
			const struct vcpustat_snapshot *cur)
{
	struct hashmap now, then;
	size_t pos = 0;
	void *k, *v;
	int err;

	err = hashmap_init(&now, sizeof(struct vcpustat_place_key), sizeof(__u64), 0);
	if (err)
		return err;
	err = hashmap_init(&then, sizeof(struct vcpustat_place_key), sizeof(__u64), 0);
	if (err) {
		hashmap_free(&now);
		return err;
	}
	err = place_totals(cur, &now);
	if (!err && prev)
		err = place_totals(prev, &then);
	while (!err && hashmap_next(&now, &pos, &k, &v)) {
		const struct vcpustat_place_key *key = k;
		const __u64 *was = hashmap_lookup(&then, key);
		const size_t *idx = hashmap_lookup(by_tgid, &key->tgid);
		__u64 ns = sub0(*(const __u64 *)v, was ? *was : 0);
		struct vm_place *p;
		struct place_cpu *arr;

		if (!idx || !ns)
			continue;
		p = &s->vms[*idx].place;
		arr = grow(p->cpus, p->nr_cpus, sizeof(*arr));
		if (!arr) {
			err = -ENOMEM;
			break;
		}
		p->cpus = arr;
		arr[p->nr_cpus++] = (struct place_cpu){ .cpu = key->cpu, .ns = ns };
	}
	/* SMT: the vms map's counters, each VM's previous entry found by tgid */
	hashmap_free(&then);
	if (!err)
		err = hashmap_init(&then, sizeof(__u32), sizeof(size_t), 0);
	for (size_t i = 0; !err && prev && i < prev->nr_vms; i++)
		err = hashmap_update(&then, &prev->vms[i].tgid, &i);
	for (size_t i = 0; !err && i < cur->nr_vms; i++) {
		const size_t *idx = hashmap_lookup(by_tgid, &cur->vms[i].tgid);
		const size_t *j = prev ? hashmap_lookup(&then, &cur->vms[i].tgid) : NULL;

		if (!idx)
			continue;
		s->vms[*idx].place.smt_other_ns = sub0(cur->vms[i].smt_other_ns, j ? prev->vms[*j].smt_other_ns : 0);
		s->vms[*idx].place.smt_same_ns = sub0(cur->vms[i].smt_same_ns, j ? prev->vms[*j].smt_same_ns : 0);
	}
	for (size_t i = 0; i < s->nr_vms; i++) {
		s->vms[i].place.known = true;
		sort(s->vms[i].place.cpus, s->vms[i].place.nr_cpus, sizeof(struct place_cpu), by_place_cpu);
	}
	hashmap_free(&now);
	hashmap_free(&then);
	return err;
}

int place_by(const struct summary *s, const struct vm_summary *vm, bool llc, __u64 *ns, int max)
{
	int n = 0;

	if (!s->topo)
		return -1;
	memset(ns, 0, (size_t)max * sizeof(*ns));
	for (size_t i = 0; i < vm->place.nr_cpus; i++) {
		__u32 cpu = vm->place.cpus[i].cpu;
		int id = cpu < s->topo->nr_cpus ? (llc ? s->topo->llc[cpu] : s->topo->node[cpu]) : -1;

		if (id < 0 || id >= max)
			continue;
		n += !ns[id];
		ns[id] += vm->place.cpus[i].ns;
	}
	return n;
}

bool wake_vectors_worth_showing(const struct vm_summary *vm)
{
	/* row 0 is "none" (reason 0) only when it is the most frequent; any other row is a vector */
	return vm->nr_wake_vectors > 1 || (vm->nr_wake_vectors && vm->wake_vectors[0].reason);
}

bool place_worth_showing(const struct cpu_topology *t)
{
	if (!t)
		return false;
	for (unsigned int c = 1; c < t->nr_cpus; c++)
		if ((t->node[c] >= 0 && t->node[c] != t->node[0]) || (t->llc[c] >= 0 && t->llc[c] != t->llc[0]) ||
		    (t->core[c] >= 0 && t->core[c] == t->core[0]))
			return true;
	for (unsigned int c = 1; c < t->nr_cpus; c++)
		for (unsigned int d = c + 1; d < t->nr_cpus; d++)
			if (t->core[c] >= 0 && t->core[c] == t->core[d])
				return true;
	return false;
}

static const char *const guest_state_names[GUEST_NR_STATES] = {
	[GUEST_RUNNING] = "running",	 [GUEST_VIRT_PREEMPTED] = "virt_preempted", [GUEST_PREEMPTED] = "preempted",
	[GUEST_WAIT] = "wait",		 [GUEST_BLOCKED] = "blocked",
};

const char *guest_thread_state_name(unsigned int state)
{
	return state < GUEST_NR_STATES ? guest_state_names[state] : "invalid";
}

void summary_free_vm(struct vm_summary *vm)
{
	free(vm->vcpus);
	free(vm->exits);
	free(vm->uexits);
	free(vm->wakes);
	free(vm->wake_vectors);
	free(vm->culprits);
	free(vm->details);
	free(vm->address_spaces);
	free(vm->vmm.culprits);
	free(vm->place.cpus);
	for (size_t i = 0; i < vm->nr_guest_threads; i++)
		free(vm->guest_threads[i].culprits);
	free(vm->guest_threads);
	memset(vm, 0, sizeof(*vm));
}

void summary_free(struct summary *s)
{
	for (size_t i = 0; i < s->nr_vms; i++)
		summary_free_vm(&s->vms[i]);
	free(s->vms);
	health_free(&s->health);
	memset(s, 0, sizeof(*s));
}

int summary_build(struct summary *s, const struct vcpustat_snapshot *prev, const struct vcpustat_snapshot *cur,
		  struct names *names, const struct summary_filter *filter)
{
	struct hashmap by_tgid, vcpu_by_tid, folded = { 0 }, dead_by_tid = { 0 };
	struct prev_index pi;
	size_t i;
	int err;

	memset(s, 0, sizeof(*s));
	s->has_details = true;
	s->has_gsys = true;
	s->t0 = prev ? prev->ts : 0;
	s->t1 = cur->ts;
	s->seconds = (double)(s->t1 - (prev ? prev->ts : 0)) / 1e9;
	err = prev_index_build(&pi, prev);
	if (err)
		return err;
	err = hashmap_init(&by_tgid, sizeof(__u32), sizeof(size_t), 0);
	if (err) {
		prev_index_free(&pi);
		return err;
	}
	err = hashmap_init(&vcpu_by_tid, sizeof(__u32), sizeof(void *), 0);
	/*
	 * A vCPU that exited while the maps were read can be in both tables: read
	 * alive, then moved to the dead ones before those were read. Its dead
	 * entry is final; counting both would count its window twice.
	 */
	if (!err)
		err = hashmap_init(&dead_by_tid, sizeof(__u32), sizeof(__u64), 0);
	for (i = 0; i < cur->nr_dead && !err; i++)
		err = hashmap_update(&dead_by_tid, &cur->dead[i].tid, &cur->dead[i].discovered_ns);
	for (i = 0; i < cur->nr_vcpus && !err; i++) {
		const struct vcpustat_vcpu *v = &cur->vcpus[i];
		const __u64 *died = hashmap_lookup(&dead_by_tid, &v->tid);

		err = hashmap_update(&vcpu_by_tid, &v->tid, &v);
		if (!err && !(died && *died == v->discovered_ns))
			err = vcpu_add(s, &by_tgid, names, &pi, filter, cur, v, false);
	}
	hashmap_free(&dead_by_tid);
	for (i = 0; i < cur->nr_dead && !err; i++)
		err = vcpu_add(s, &by_tgid, names, &pi, filter, cur, &cur->dead[i], true);
	/* a window without a previous snapshot starts at the first vCPU's discovery */
	if (!prev) {
		__u64 first = cur->ts;

		for (i = 0; i < cur->nr_vcpus; i++)
			if (cur->vcpus[i].discovered_ns < first)
				first = cur->vcpus[i].discovered_ns;
		s->t0 = first;
		s->seconds = (double)(s->t1 - first) / 1e9;
	}
	for (i = 0; i < cur->nr_vms; i++) {
		size_t *idx = hashmap_lookup(&by_tgid, &cur->vms[i].tgid);

		if (idx)
			s->vms[*idx].exited = cur->vms[i].exited_ns != 0;
	}
	for (i = 0; i < cur->nr_hists && !err; i++) {
		const struct vcpustat_hist_entry *e = &cur->hists[i];
		const struct vcpustat_hist **before = hashmap_lookup(&pi.hists, &e->key);
		size_t *idx = hashmap_lookup(&by_tgid, &e->key.tgid);
		struct latency_summary l;
		struct vm_summary *vm;

		if (!idx)
			continue;
		vm = &s->vms[*idx];
		memset(&l, 0, sizeof(l));
		latency_fill(&l, &e->key, &e->hist, before ? *before : NULL, s->seconds);
		if (e->key.kind == VCPU_SAMPLE_EXIT)
			err = latency_append(&vm->exits, &vm->nr_exits, &l);
		else if (e->key.kind == VCPU_SAMPLE_USERSPACE_EXIT)
			err = latency_append(&vm->uexits, &vm->nr_uexits, &l);
		else if (e->key.kind == VCPU_SAMPLE_RUNQ_WAIT)
			vm->runq = l;
		else if (e->key.kind == VCPU_SAMPLE_WAKE)
			err = latency_append(&vm->wakes, &vm->nr_wakes, &l);
		else if (e->key.kind == VCPU_SAMPLE_WAKE_VECTOR)
			err = latency_append(&vm->wake_vectors, &vm->nr_wake_vectors, &l);
	}
	for (i = 0; i < cur->nr_details && !err; i++)
		err = detail_add(s, &by_tgid, &pi, &cur->details[i]);
	/*
	 * Entries of exited threads are folded into the VM's "exited" entry
	 * between snapshots (vcpustat_prune): what they had counted before
	 * belongs to that entry's previous value, or it would count twice.
	 */
	if (!err)
		err = hashmap_init(&folded, sizeof(__u32), sizeof(__u64), 0);
	if (!err && prev) {
		struct hashmap in_cur;

		err = hashmap_init(&in_cur, sizeof(struct vcpustat_culprit_key), 1, 0);
		for (i = 0; i < cur->nr_culprits && !err; i++)
			err = hashmap_insert(&in_cur, &cur->culprits[i].key, NULL);
		for (i = 0; i < prev->nr_culprits && !err; i++) {
			const struct vcpustat_culprit_entry *e = &prev->culprits[i];
			__u64 *f;

			if (e->key.tid == VCPUSTAT_TID_EXITED || hashmap_lookup(&in_cur, &e->key))
				continue;
			f = hashmap_lookup(&folded, &e->key.vm_tgid);
			if (f)
				*f += e->culprit.ns;
			else
				err = hashmap_insert(&folded, &e->key.vm_tgid, &e->culprit.ns);
		}
		hashmap_free(&in_cur);
	}
	for (i = 0; i < cur->nr_culprits && !err; i++) {
		const struct vcpustat_culprit_entry *e = &cur->culprits[i];
		const struct vcpustat_culprit **before = hashmap_lookup(&pi.culprits, &e->key);
		size_t *idx = hashmap_lookup(&by_tgid, &e->key.vm_tgid);
		__u64 was = before ? (*before)->ns : 0, ns;

		if (e->key.tid == VCPUSTAT_TID_EXITED) {
			__u64 *f = hashmap_lookup(&folded, &e->key.vm_tgid);

			was += f ? *f : 0;
		}
		ns = sub0(e->culprit.ns, was);
		if (!ns)
			continue;
		if (idx)
			err = culprit_add(&s->vms[*idx].culprits, &s->vms[*idx].nr_culprits, e, ns, &vcpu_by_tid, names);
		else if (e->key.vm_tgid & VCPUSTAT_CULPRIT_VMM) {
			__u32 tgid = e->key.vm_tgid & ~VCPUSTAT_CULPRIT_VMM;

			idx = hashmap_lookup(&by_tgid, &tgid);
			if (idx)
				err = culprit_add(&s->vms[*idx].vmm.culprits, &s->vms[*idx].vmm.nr_culprits, e, ns,
						  &vcpu_by_tid, names);
		}
	}
	if (!err)
		err = vmm_window(s, &by_tgid, prev, cur);
	if (!err)
		err = place_window(s, &by_tgid, prev, cur);
	hashmap_free(&folded);
	for (i = 0; i < s->nr_vms; i++) {
		struct vm_summary *vm = &s->vms[i];
		__u64 waited = vm->ns[VCPU_PREEMPTED] + vm->ns[VCPU_WAIT];

		sort(vm->vcpus, vm->nr_vcpus, sizeof(*vm->vcpus), by_index);
		sort(vm->exits, vm->nr_exits, sizeof(*vm->exits), by_rate);
		sort(vm->uexits, vm->nr_uexits, sizeof(*vm->uexits), by_rate);
		sort(vm->wakes, vm->nr_wakes, sizeof(*vm->wakes), by_rate);
		sort(vm->wake_vectors, vm->nr_wake_vectors, sizeof(*vm->wake_vectors), by_rate);
		sort(vm->culprits, vm->nr_culprits, sizeof(*vm->culprits), by_ns);
		sort(vm->details, vm->nr_details, sizeof(*vm->details), detail_summary_cmp);
		sort(vm->address_spaces, vm->nr_address_spaces, sizeof(*vm->address_spaces), address_space_cmp);
		for (size_t c = 0; c < vm->nr_culprits; c++)
			vm->culprits[c].share = waited ? (double)vm->culprits[c].ns / (double)waited : 0;
		waited = vm->vmm.wait_ns[VMM_EMULATOR] + vm->vmm.wait_ns[VMM_VHOST];
		sort(vm->vmm.culprits, vm->vmm.nr_culprits, sizeof(*vm->vmm.culprits), by_ns);
		for (size_t c = 0; c < vm->vmm.nr_culprits; c++)
			vm->vmm.culprits[c].share = waited ? (double)vm->vmm.culprits[c].ns / (double)waited : 0;
	}
	sort(s->vms, s->nr_vms, sizeof(*s->vms), by_name);
	for (i = 0; i < VCPUSTAT_NR_LOST; i++) {
		s->lost[i] = cur->lost[i];
		s->lost_window[i] = prev ? sub0(cur->lost[i], prev->lost[i]) : cur->lost[i];
	}
	hashmap_free(&vcpu_by_tid);
	hashmap_free(&by_tgid);
	prev_index_free(&pi);
	if (err)
		summary_free(s);
	return err;
}

double summary_per_s(const struct summary *s, __u64 n)
{
	return s->seconds > 0 ? (double)n / s->seconds : 0;
}

bool vm_container(const struct vm_summary *vm, struct container_ref *c)
{
	return recorded_container(vm->cgroup, vm->pod_name, vm->pod_namespace, vm->container_name, c);
}

bool culprit_container(const struct culprit_summary *cu, struct container_ref *c)
{
	return recorded_container(cu->cgroup, cu->pod_name, cu->pod_namespace, cu->container_name, c);
}

const char *culprit_cgroup_label(const struct culprit_summary *cu, char *buf, size_t len)
{
	return recorded_container_label(cu->cgroup, cu->pod_name, cu->pod_namespace, cu->container_name, buf, len);
}
