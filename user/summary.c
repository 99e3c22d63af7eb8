// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* summary.c - the window model (summary.h): build, JSON and text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hashmap.h"
#include "summary.h"

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
	return err;
}

static bool vm_wanted(const struct summary_filter *f, __u32 tgid, const char *name)
{
	char pid[16];

	if (!f || !f->nr_vms)
		return true;
	snprintf(pid, sizeof(pid), "%u", tgid);
	for (size_t i = 0; i < f->nr_vms; i++)
		if (!strcmp(f->vms[i], name) || !strcmp(f->vms[i], pid))
			return true;
	return false;
}

static struct vm_summary *vm_get(struct summary *s, struct hashmap *by_tgid, __u32 tgid, struct names *names)
{
	size_t *idx = hashmap_lookup(by_tgid, &tgid);
	struct vm_summary *vms, *vm;
	size_t i;

	if (idx)
		return &s->vms[*idx];
	vms = realloc(s->vms, (s->nr_vms + 1) * sizeof(*vms));
	if (!vms)
		return NULL;
	s->vms = vms;
	i = s->nr_vms++;
	vm = &s->vms[i];
	memset(vm, 0, sizeof(*vm));
	vm->tgid = tgid;
	snprintf(vm->name, sizeof(vm->name), "%s", names_vm(names, tgid));
	vm->runq.kind = VCPU_SAMPLE_RUNQ_WAIT;
	if (hashmap_update(by_tgid, &tgid, &i))
		return NULL;
	return vm;
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

	if (!vm_wanted(f, v->tgid, names_vm(names, v->tgid)))
		return 0;
	vm = vm_get(s, by_tgid, v->tgid, names);
	if (!vm)
		return -ENOMEM;
	arr = realloc(vm->vcpus, (vm->nr_vcpus + 1) * sizeof(*arr));
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
		vm->ns[i] += vs->ns[i];
	}
#define DELTA(field) (same ? sub0(v->fsm.field, pv->v->fsm.field) : v->fsm.field)
	vs->preemptions = DELTA(preemptions);
	vs->wakeups = DELTA(wakeups);
	vs->migrations = DELTA(migrations);
	vs->kvm_exits = DELTA(kvm_exits);
	vs->userspace_exits = DELTA(userspace_exits);
#undef DELTA
	vm->preemptions += vs->preemptions;
	vm->wakeups += vs->wakeups;
	vm->migrations += vs->migrations;
	vm->kvm_exits += vs->kvm_exits;
	vm->userspace_exits += vs->userspace_exits;
	return 0;
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
	else
		snprintf(l->name, sizeof(l->name), "runq_wait");
	l->count = before ? sub0(h->count, before->count) : h->count;
	l->sum_ns = before ? sub0(h->sum_ns, before->sum_ns) : h->sum_ns;
	l->max_ns = h->max_ns;
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
	struct latency_summary *a = realloc(*arr, (*n + 1) * sizeof(**arr));

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

static int culprit_add(struct vm_summary *vm, const struct vcpustat_culprit_entry *e, __u64 ns,
		       const struct vcpustat_snapshot *cur, struct hashmap *vcpu_by_tid, struct names *names)
{
	struct culprit_summary *arr, *c;
	const struct vcpustat_vcpu **who;

	arr = realloc(vm->culprits, (vm->nr_culprits + 1) * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	vm->culprits = arr;
	c = &arr[vm->nr_culprits++];
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
	free(vm->culprits);
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
	memset(s, 0, sizeof(*s));
}

int summary_build(struct summary *s, const struct vcpustat_snapshot *prev, const struct vcpustat_snapshot *cur,
		  struct names *names, const struct summary_filter *filter)
{
	struct hashmap by_tgid, vcpu_by_tid, folded = { 0 };
	struct prev_index pi;
	size_t i;
	int err;

	memset(s, 0, sizeof(*s));
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
	for (i = 0; i < cur->nr_vcpus && !err; i++) {
		const struct vcpustat_vcpu *v = &cur->vcpus[i];

		err = hashmap_update(&vcpu_by_tid, &v->tid, &v);
		if (!err)
			err = vcpu_add(s, &by_tgid, names, &pi, filter, cur, v, false);
	}
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
	}
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
		if (idx && ns)
			err = culprit_add(&s->vms[*idx], e, ns, cur, &vcpu_by_tid, names);
	}
	hashmap_free(&folded);
	for (i = 0; i < s->nr_vms; i++) {
		struct vm_summary *vm = &s->vms[i];
		__u64 waited = vm->ns[VCPU_PREEMPTED] + vm->ns[VCPU_WAIT];

		sort(vm->vcpus, vm->nr_vcpus, sizeof(*vm->vcpus), by_index);
		sort(vm->exits, vm->nr_exits, sizeof(*vm->exits), by_rate);
		sort(vm->uexits, vm->nr_uexits, sizeof(*vm->uexits), by_rate);
		sort(vm->culprits, vm->nr_culprits, sizeof(*vm->culprits), by_ns);
		for (size_t c = 0; c < vm->nr_culprits; c++)
			vm->culprits[c].share = waited ? (double)vm->culprits[c].ns / (double)waited : 0;
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

/* ---- JSON ---- */

static const char *const lost_names[VCPUSTAT_NR_LOST] = {
	[VCPUSTAT_LOST_RINGBUF] = "ringbuf",	      [VCPUSTAT_LOST_VCPU_FULL] = "vcpu_table_full",
	[VCPUSTAT_LOST_VM_FULL] = "vm_table_full",     [VCPUSTAT_LOST_HIST_FULL] = "hist_table_full",
	[VCPUSTAT_LOST_DEAD_FULL] = "dead_table_full", [VCPUSTAT_LOST_CULPRIT_FULL] = "culprit_table_full",
	[VCPUSTAT_LOST_WAIT_SLOTS] = "wait_slots",
};

static const char *const prog_status_names[] = {
	[VCPUSTAT_PROG_OFF] = "off",	       [VCPUSTAT_PROG_MISSING] = "missing", [VCPUSTAT_PROG_LOADED] = "loaded",
	[VCPUSTAT_PROG_ATTACHED] = "attached", [VCPUSTAT_PROG_FAILED] = "failed",
};

static json_t *states_json(const __u64 ns[VCPU_NR_STATES])
{
	json_t *o = json_object();

	for (unsigned int i = VCPU_GUEST; i < VCPU_NR_STATES; i++)
		json_object_set_new(o, vcpu_state_name(i), json_integer((json_int_t)ns[i]));
	return o;
}

static json_t *shares_json(const __u64 ns[VCPU_NR_STATES])
{
	json_t *o = json_object();
	__u64 total = 0;

	for (unsigned int i = 0; i < VCPU_NR_STATES; i++)
		total += ns[i];
	for (unsigned int i = VCPU_GUEST; i < VCPU_NR_STATES; i++)
		json_object_set_new(o, vcpu_state_name(i), json_real(total ? (double)ns[i] / (double)total : 0));
	return o;
}

static double per_s(const struct summary *s, __u64 n)
{
	return s->seconds > 0 ? (double)n / s->seconds : 0;
}

static json_t *latency_json(const struct latency_summary *l)
{
	json_t *o = json_pack("{s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "reason", l->name, "count",
			      (json_int_t)l->count, "rate", l->rate, "sum_ns", (json_int_t)l->sum_ns, "p50_ns",
			      (json_int_t)l->p50_ns, "p90_ns", (json_int_t)l->p90_ns, "p99_ns", (json_int_t)l->p99_ns,
			      "max_ns", (json_int_t)l->max_ns, "count_total", (json_int_t)l->count_total);

	if (l->kind == VCPU_SAMPLE_EXIT) {
		json_object_set_new(o, "isa", json_string(l->isa == KVM_ISA_VMX ? "vmx" :
							  l->isa == KVM_ISA_SVM ? "svm" : "?"));
		json_object_set_new(o, "code", json_integer(l->reason));
	} else if (l->kind == VCPU_SAMPLE_USERSPACE_EXIT) {
		json_object_set_new(o, "code", json_integer(l->reason));
	}
	return o;
}

static json_t *vcpu_json(const struct summary *s, const struct vm_summary *vm, const struct vcpu_summary *v)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:b}", "vm", vm->name, "pid", (json_int_t)vm->tgid,
			      "vcpu", (json_int_t)v->index, "tid", (json_int_t)v->tid, "state",
			      vcpu_state_name(v->state), "comm", v->comm, "gone", v->gone);

	json_object_set_new(o, "pcpu", v->pcpu == VCPU_PCPU_NONE ? json_null() : json_integer(v->pcpu));
	json_object_set_new(o, "ns", states_json(v->ns));
	json_object_set_new(o, "ns_total", states_json(v->ns_total));
	json_object_set_new(o, "share", shares_json(v->ns));
	json_object_set_new(o, "preemptions", json_integer((json_int_t)v->preemptions));
	json_object_set_new(o, "wakeups", json_integer((json_int_t)v->wakeups));
	json_object_set_new(o, "migrations", json_integer((json_int_t)v->migrations));
	json_object_set_new(o, "kvm_exits", json_integer((json_int_t)v->kvm_exits));
	json_object_set_new(o, "userspace_exits", json_integer((json_int_t)v->userspace_exits));
	json_object_set_new(o, "preemptions_per_s", json_real(per_s(s, v->preemptions)));
	json_object_set_new(o, "wakeups_per_s", json_real(per_s(s, v->wakeups)));
	json_object_set_new(o, "migrations_per_s", json_real(per_s(s, v->migrations)));
	return o;
}

static json_t *culprit_json(const struct culprit_summary *c)
{
	json_t *o = json_pack("{s:I, s:s, s:I, s:s, s:s, s:I, s:f}", "tid", (json_int_t)c->tid, "comm", c->comm,
			      "pid", (json_int_t)c->tgid, "process", c->process, "cgroup", c->cgroup, "ns",
			      (json_int_t)c->ns, "share", c->share);

	if (c->vm[0]) {
		json_object_set_new(o, "vm", json_string(c->vm));
		json_object_set_new(o, "vcpu", json_integer(c->vcpu));
	}
	return o;
}

static json_t *guest_thread_json(const struct guest_thread_summary *g)
{
	json_t *ns = json_object(), *cul = json_array(), *o;

	for (unsigned int i = 0; i < GUEST_NR_STATES; i++)
		json_object_set_new(ns, guest_state_names[i], json_integer((json_int_t)g->ns[i]));
	for (size_t c = 0; c < g->nr_culprits; c++)
		json_array_append_new(cul, culprit_json(&g->culprits[c]));
	o = json_pack("{s:I, s:s, s:i, s:o, s:I, s:{s:I, s:I, s:I}, s:o}", "tid", (json_int_t)g->tid, "comm", g->comm,
		      "vcpu", g->vcpu, "ns", ns, "lost_to_host_ns", (json_int_t)g->ns[GUEST_VIRT_PREEMPTED], "lost",
		      "hypervisor_ns", (json_int_t)g->lost_hypervisor_ns, "host_runq_ns", (json_int_t)g->lost_runq_ns,
		      "host_blocked_ns", (json_int_t)g->lost_blocked_ns, "culprits", cul);
	return o;
}

json_t *summary_json(const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs)
{
	json_t *doc = json_object(), *vms = json_array(), *lost = json_object(), *lostw = json_object();
	bool split = false, oncpu = false;

	json_object_set_new(doc, "ts", json_integer((json_int_t)s->t1));
	json_object_set_new(doc, "interval_s", json_real(s->seconds));
	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];
		json_t *o, *vcpus = json_array(), *exits = json_array(), *uexits = json_array(), *cul = json_array();

		o = json_pack("{s:s, s:I, s:b}", "vm", vm->name, "pid", (json_int_t)vm->tgid, "exited", vm->exited);
		json_object_set_new(o, "ns", states_json(vm->ns));
		json_object_set_new(o, "share", shares_json(vm->ns));
		json_object_set_new(o, "preemptions_per_s", json_real(per_s(s, vm->preemptions)));
		json_object_set_new(o, "wakeups_per_s", json_real(per_s(s, vm->wakeups)));
		json_object_set_new(o, "migrations_per_s", json_real(per_s(s, vm->migrations)));
		for (size_t v = 0; v < vm->nr_vcpus; v++)
			json_array_append_new(vcpus, vcpu_json(s, vm, &vm->vcpus[v]));
		for (size_t e = 0; e < vm->nr_exits; e++)
			json_array_append_new(exits, latency_json(&vm->exits[e]));
		for (size_t e = 0; e < vm->nr_uexits; e++)
			json_array_append_new(uexits, latency_json(&vm->uexits[e]));
		for (size_t c = 0; c < vm->nr_culprits; c++)
			json_array_append_new(cul, culprit_json(&vm->culprits[c]));
		json_object_set_new(o, "vcpus", vcpus);
		json_object_set_new(o, "exits", exits);
		json_object_set_new(o, "userspace_exits", uexits);
		json_object_set_new(o, "runq_wait", latency_json(&vm->runq));
		json_object_set_new(o, "culprits", cul);
		if (vm->nr_guest_threads) {
			json_t *gt = json_array();

			for (size_t g = 0; g < vm->nr_guest_threads; g++)
				json_array_append_new(gt, guest_thread_json(&vm->guest_threads[g]));
			json_object_set_new(o, "guest_threads", gt);
		}
		json_array_append_new(vms, o);
		split |= vm->ns[VCPU_GUEST] > 0 || vm->exits != NULL;
		oncpu |= vm->ns[VCPU_HOST] > 0;
	}
	json_object_set_new(doc, "vms", vms);
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++) {
		json_object_set_new(lost, lost_names[i], json_integer((json_int_t)s->lost[i]));
		json_object_set_new(lostw, lost_names[i], json_integer((json_int_t)s->lost_window[i]));
	}
	json_object_set_new(doc, "lost", lost);
	json_object_set_new(doc, "lost_window", lostw);
	if (progs) {
		json_t *arr = json_array();

		for (size_t i = 0; i < nr_progs; i++) {
			json_t *p = json_pack("{s:s, s:s, s:s}", "name", progs[i].name, "tracepoint",
					      progs[i].tracepoint, "status", prog_status_names[progs[i].status]);

			if (progs[i].message[0])
				json_object_set_new(p, "message", json_string(progs[i].message));
			json_array_append_new(arr, p);
		}
		json_object_set_new(doc, "programs", arr);
	}
	if (oncpu && !split)
		json_object_set_new(doc, "notes",
				    json_pack("[s]", "kvm_entry/kvm_exit did not fire: guest and hypervisor time are "
						     "not separated, on-CPU time is counted as host"));
	return doc;
}

/* ---- text ---- */

const char *format_ns(__u64 ns, char *buf, size_t len)
{
	if (ns < 10000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", ns / 1e9);
	return buf;
}

static void print_latency_table(FILE *f, const char *title, const struct latency_summary *l, size_t n,
				unsigned int top, double seconds)
{
	char a[24], b[24], c[24];

	if (!n)
		return;
	fprintf(f, "    %-24s %10s %10s %10s %10s %10s\n", title, "COUNT", "RATE/s", "P50", "P99", "MAX");
	for (size_t i = 0; i < n && (!top || i < top); i++)
		fprintf(f, "    %-24s %10llu %10.1f %10s %10s %10s\n", l[i].name, (unsigned long long)l[i].count,
			l[i].rate, l[i].count ? format_ns(l[i].p50_ns, a, sizeof(a)) : "-",
			l[i].count ? format_ns(l[i].p99_ns, b, sizeof(b)) : "-", format_ns(l[i].max_ns, c, sizeof(c)));
}

static void print_culprit(FILE *f, const char *indent, const struct culprit_summary *cu)
{
	char who[96], b[24];

	if (cu->vm[0])
		snprintf(who, sizeof(who), "VM %s vCPU %d", cu->vm, cu->vcpu);
	else
		snprintf(who, sizeof(who), "%s (%u)", cu->process, cu->tgid);
	fprintf(f, "%s%5.1f%% %-10s %-8u %-16s %-20s %s\n", indent, 100 * cu->share, format_ns(cu->ns, b, sizeof(b)),
		cu->tid, cu->comm, who, cu->cgroup);
}

/* The guest threads of a VM (reports with guest traces): time lost to the host, and to whom. */
static void print_guest_threads(FILE *f, const struct summary *s, const struct vm_summary *vm, unsigned int top)
{
	char a[24], b[24], c[24], d[24], e[24], g[24], h[24], vcpu[12];

	if (!vm->nr_guest_threads)
		return;
	fprintf(f, "    GUEST THREADS: time lost to the host (virt_preempted: running in the guest, its vCPU not)\n");
	fprintf(f, "    %-8s %-16s %4s %10s %10s %7s %10s %10s %10s %10s %10s\n", "TID", "THREAD", "VCPU", "RUNNING",
		"LOST", "LOST%", "HYPERVSR", "HOST RUNQ", "HOST BLKD", "PREEMPTED", "BLOCKED");
	for (size_t i = 0; i < vm->nr_guest_threads && (!top || i < top); i++) {
		const struct guest_thread_summary *t = &vm->guest_threads[i];
		__u64 on = t->ns[GUEST_RUNNING] + t->ns[GUEST_VIRT_PREEMPTED];

		snprintf(vcpu, sizeof(vcpu), t->vcpu < 0 ? "-" : "%d", t->vcpu);
		fprintf(f, "    %-8u %-16s %4s %10s %10s %6.1f%% %10s %10s %10s %10s %10s\n", t->tid, t->comm, vcpu,
			format_ns(t->ns[GUEST_RUNNING], a, sizeof(a)), format_ns(t->ns[GUEST_VIRT_PREEMPTED], b, sizeof(b)),
			on ? 100.0 * (double)t->ns[GUEST_VIRT_PREEMPTED] / (double)on : 0.0,
			format_ns(t->lost_hypervisor_ns, c, sizeof(c)), format_ns(t->lost_runq_ns, d, sizeof(d)),
			format_ns(t->lost_blocked_ns, e, sizeof(e)),
			format_ns(t->ns[GUEST_PREEMPTED] + t->ns[GUEST_WAIT], g, sizeof(g)),
			format_ns(t->ns[GUEST_BLOCKED], h, sizeof(h)));
		for (size_t k = 0; k < t->nr_culprits && k < 3; k++) {
			if (!k)
				fprintf(f, "      took its vCPU's CPU: %-6s %-10s %-8s %-16s %-20s %s\n", "SHARE", "TIME", "TID",
					"THREAD", "PROCESS / VM", "CGROUP");
			print_culprit(f, "                           ", &t->culprits[k]);
		}
	}
	(void)s;
}

void summary_print(FILE *f, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs,
		   unsigned int top)
{
	size_t nvcpus = 0;
	__u64 lost = 0;
	bool split = false, oncpu = false;
	char ts[32];
	time_t now = time(NULL);

	for (size_t i = 0; i < s->nr_vms; i++)
		nvcpus += s->vms[i].nr_vcpus;
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		lost += s->lost[i];
	if (s->wall_t1)
		now = (time_t)(s->wall_t1 / 1000000000ull);
	if (s->no_wall_clock)
		snprintf(ts, sizeof(ts), "+%.6fs", (double)s->t1 / 1e9);
	else
		strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	fprintf(f, "vcpustat %s  interval %.2fs  VMs %zu  vCPUs %zu  lost %llu\n", ts, s->seconds, s->nr_vms, nvcpus,
		(unsigned long long)lost);
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		if (s->lost_window[i])
			fprintf(f, "  LOST %llu %s this interval (%llu since start)\n",
				(unsigned long long)s->lost_window[i], lost_names[i], (unsigned long long)s->lost[i]);
	for (size_t i = 0; i < nr_progs; i++)
		if (progs[i].status == VCPUSTAT_PROG_FAILED || progs[i].status == VCPUSTAT_PROG_MISSING)
			fprintf(f, "  NOT ATTACHED %s: %s\n", progs[i].tracepoint, progs[i].message);
	if (!s->nr_vms)
		fprintf(f, "  no VMs seen yet (vCPU threads appear at their first KVM event; try --demo)\n");

	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];

		split |= vm->ns[VCPU_GUEST] > 0 || vm->nr_exits;
		oncpu |= vm->ns[VCPU_HOST] > 0;
		fprintf(f, "\nVM %s (pid %u)%s: guest %.1f%% host %.1f%% preempted %.1f%% wait %.1f%% idle %.1f%% "
			   "blocked %.1f%%  preempt/s %.0f wake/s %.0f migr/s %.0f\n",
			vm->name, vm->tgid, vm->exited ? " [exited]" : "", 100 * vm_share(s, vm, VCPU_GUEST),
			100 * vm_share(s, vm, VCPU_HOST), 100 * vm_share(s, vm, VCPU_PREEMPTED),
			100 * vm_share(s, vm, VCPU_WAIT), 100 * vm_share(s, vm, VCPU_IDLE),
			100 * vm_share(s, vm, VCPU_BLOCKED), per_s(s, vm->preemptions), per_s(s, vm->wakeups),
			per_s(s, vm->migrations));
		fprintf(f, "    %-5s %-8s %-10s %4s %7s %7s %7s %7s %7s %7s %8s %8s %7s\n", "VCPU", "TID", "STATE", "PCPU",
			"GUEST", "HOST", "PREEMPT", "WAIT", "IDLE", "BLOCKED", "PREEMPT/s", "WAKE/s", "MIGR/s");
		for (size_t v = 0; v < vm->nr_vcpus; v++) {
			const struct vcpu_summary *c = &vm->vcpus[v];
			char pcpu[12];

			snprintf(pcpu, sizeof(pcpu), c->pcpu == VCPU_PCPU_NONE ? "-" : "%u", c->pcpu);
			fprintf(f, "    %-5u %-8u %-10s %4s %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %8.0f %8.0f %7.0f\n",
				c->index, c->tid, c->gone ? "exited" : vcpu_state_name(c->state), pcpu,
				100 * vcpu_share(s, c, VCPU_GUEST), 100 * vcpu_share(s, c, VCPU_HOST),
				100 * vcpu_share(s, c, VCPU_PREEMPTED), 100 * vcpu_share(s, c, VCPU_WAIT),
				100 * vcpu_share(s, c, VCPU_IDLE), 100 * vcpu_share(s, c, VCPU_BLOCKED),
				per_s(s, c->preemptions), per_s(s, c->wakeups), per_s(s, c->migrations));
		}
		print_latency_table(f, "EXIT REASON", vm->exits, vm->nr_exits, top, s->seconds);
		print_latency_table(f, "USERSPACE EXIT", vm->uexits, vm->nr_uexits, top, s->seconds);
		if (vm->runq.count)
			print_latency_table(f, "RUN-QUEUE WAIT", &vm->runq, 1, 1, s->seconds);
		if (vm->nr_culprits) {
			fprintf(f, "    %-6s %-10s %-8s %-16s %-20s %s\n", "SHARE", "TIME", "TID", "THREAD",
				"PROCESS / VM", "CGROUP");
			for (size_t c = 0; c < vm->nr_culprits && (!top || c < top); c++)
				print_culprit(f, "    ", &vm->culprits[c]);
		}
		print_guest_threads(f, s, vm, top);
	}
	if (oncpu && !split)
		fprintf(f, "\nnote: kvm_entry/kvm_exit did not fire: guest and hypervisor time are not separated; "
			   "on-CPU time is counted as host\n");
	fflush(f);
}
