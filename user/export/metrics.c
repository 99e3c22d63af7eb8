// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics.c - the exporters' model (export.h, docs/metrics.md): counters
 * accumulated over windows. Rendered by metrics_text.c and metrics_json.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include "util/util.h"
#include "export/export.h"
#include "export/metrics_internal.h"
#include "model/report.h"

/* 1-2-5 from 500 ns to 10 s, each the nearest edge of a kernel bucket (docs/metrics.md) */
const unsigned long long metrics_le_ns[METRICS_NR_LE] = {
	512,       1024,	  2048,	     5120,	 10240,	     20480,	    49152,	   98304,
	196608,    491520,	  983040,    1966080,	 5242880,    10485760,	    20971520,	   50331648,
	100663296, 201326592, 503316480, 1006632960, 2013265920, 4831838208ull, 9663676416ull,
};

struct metrics *metrics_new(const struct metrics_opts *opts)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct utsname u;

	if (!m)
		return NULL;
	if (opts)
		m->o = *opts;
	else
		m->o.top_culprits = METRICS_TOP_CULPRITS;
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
	return m;
}

static void vm_free(struct acc_vm *vm)
{
	free(vm->vcpus);
	free(vm->exits);
	free(vm->uexits);
	free(vm->wakes);
	free(vm->wake_vectors);
	free(vm->culprits);
	hashmap_free(&vm->culprit_idx);
	free(vm->details);
	hashmap_free(&vm->detail_idx);
	free(vm->node_ns);
	free(vm->llc_ns);
	free(vm);
}

/* Add the window's placement of vs (per node and cache with the summary's topology) to vm. */
static int place_charge(struct acc_vm *vm, const struct summary *s, const struct vm_summary *vs)
{
	for (int llc = 0; llc < 2; llc++) {
		__u64 **arr = llc ? &vm->llc_ns : &vm->node_ns;
		int *nr = llc ? &vm->nr_llc : &vm->nr_node;

		for (size_t i = 0; i < vs->place.nr_cpus; i++) {
			__u32 cpu = vs->place.cpus[i].cpu;
			int id = cpu < s->topo->nr_cpus ? (llc ? s->topo->llc[cpu] : s->topo->node[cpu]) : -1;

			if (id < 0 || id > 65535)
				continue;
			if (id >= *nr) {
				__u64 *grown = realloc(*arr, (size_t)(id + 1) * sizeof(**arr));

				if (!grown)
					return -ENOMEM;
				memset(grown + *nr, 0, (size_t)(id + 1 - *nr) * sizeof(*grown));
				*arr = grown;
				*nr = id + 1;
			}
			(*arr)[id] += vs->place.cpus[i].ns;
		}
	}
	vm->place_known = true;
	vm->cross_node += vs->place.cross_node;
	vm->cross_llc += vs->place.cross_llc;
	vm->numa_moves += vs->place.numa_moves;
	vm->smt_other_ns += vs->place.smt_other_ns;
	vm->smt_same_ns += vs->place.smt_same_ns;
	return 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr_vms; i++)
		vm_free(m->vms[i]);
	free(m->vms);
	free(m->progs);
	free(m);
}

void metrics_start(struct metrics *m, unsigned long long t)
{
	m->started = true;
	m->t0 = m->t1 = t;
}

void metrics_set_clock(struct metrics *m, long long real_offset_ns)
{
	m->real_offset = real_offset_ns;
	m->no_clock = false;
}

void metrics_set_no_clock(struct metrics *m)
{
	m->real_offset = 0;
	m->no_clock = true;
}

void metrics_set_programs(struct metrics *m, const struct vcpustat_prog *progs, size_t n)
{
	struct prog_state *p = calloc(n ? n : 1, sizeof(*p));

	if (!p)
		return;
	size_t np = 0;

	/*
	 * One series per tracepoint of the programs that were wanted: attached
	 * when all of them are (kvm:kvm_exit has two with --address-spaces). A
	 * program not wanted (--no-kvm, injection, --address-spaces not asked)
	 * is no problem, and not listed.
	 */
	for (size_t i = 0; i < n; i++) {
		bool attached = progs[i].status == VCPUSTAT_PROG_ATTACHED;
		size_t j = 0;

		if (progs[i].status == VCPUSTAT_PROG_OFF)
			continue;
		while (j < np && strcmp(p[j].tracepoint, progs[i].tracepoint))
			j++;
		if (j < np) {
			p[j].attached &= attached;
			continue;
		}
		snprintf(p[np].tracepoint, sizeof(p[np].tracepoint), "%s", progs[i].tracepoint);
		p[np++].attached = attached;
	}
	free(m->progs);
	m->progs = p;
	m->nr_progs = np;
}

void metrics_set_file(struct metrics *m, const char *file, unsigned long long from_ns, unsigned long long to_ns,
		      const char *from, const char *to)
{
	m->file = true;
	snprintf(m->file_path, sizeof(m->file_path), "%s", file);
	snprintf(m->from, sizeof(m->from), "%s", from);
	snprintf(m->to, sizeof(m->to), "%s", to);
	m->from_ns = from_ns;
	m->to_ns = to_ns;
}

/* ---- accumulating ---- */

/* Index of the VM named name, or where it would go (*found false). */
static size_t vm_find(const struct metrics *m, const char *name, bool *found)
{
	size_t a = 0, b = m->nr_vms;

	while (a < b) {
		size_t mid = (a + b) / 2;
		int c = strcmp(m->vms[mid]->name, name);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			a = mid + 1;
		else
			b = mid;
	}
	*found = false;
	return a;
}

static struct acc_vm *vm_get(struct metrics *m, const char *name)
{
	struct acc_vm *vm, **arr;
	bool found;
	size_t i = vm_find(m, name, &found);

	if (found)
		return m->vms[i];
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	if (hashmap_init(&vm->culprit_idx, sizeof(struct culprit_key), sizeof(size_t), 0) ||
	    hashmap_init(&vm->detail_idx, sizeof(struct detail_key), sizeof(size_t), 0)) {
		vm_free(vm);
		return NULL;
	}
	arr = realloc(m->vms, (m->nr_vms + 1) * sizeof(*arr));
	if (!arr) {
		vm_free(vm);
		return NULL;
	}
	m->vms = arr;
	memmove(&arr[i + 1], &arr[i], (m->nr_vms - i) * sizeof(*arr));
	arr[i] = vm;
	m->nr_vms++;
	return vm;
}

static struct acc_vcpu *vcpu_get(struct acc_vm *vm, __u32 index)
{
	size_t a = 0, b = vm->nr_vcpus;
	struct acc_vcpu *arr;

	while (a < b) {
		size_t mid = (a + b) / 2;

		if (vm->vcpus[mid].index == index)
			return &vm->vcpus[mid];
		if (vm->vcpus[mid].index < index)
			a = mid + 1;
		else
			b = mid;
	}
	arr = realloc(vm->vcpus, (vm->nr_vcpus + 1) * sizeof(*arr));
	if (!arr)
		return NULL;
	vm->vcpus = arr;
	memmove(&arr[a + 1], &arr[a], (vm->nr_vcpus - a) * sizeof(*arr));
	memset(&arr[a], 0, sizeof(*arr));
	arr[a].index = index;
	vm->nr_vcpus++;
	return &arr[a];
}

static struct acc_hist *hist_get(struct acc_hist **arr, size_t *n, const char *reason)
{
	struct acc_hist *a;
	size_t i;

	for (i = 0; i < *n; i++) {
		int c = strcmp((*arr)[i].reason, reason);

		if (!c)
			return &(*arr)[i];
		if (c > 0)
			break;
	}
	a = realloc(*arr, (*n + 1) * sizeof(*a));
	if (!a)
		return NULL;
	*arr = a;
	memmove(&a[i + 1], &a[i], (*n - i) * sizeof(*a));
	memset(&a[i], 0, sizeof(*a));
	snprintf(a[i].reason, sizeof(a[i].reason), "%s", reason);
	(*n)++;
	return &a[i];
}

static void hist_add(struct acc_hist *h, const struct latency_summary *l)
{
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++) {
		h->bucket[b] += l->bucket[b];
		h->count += l->bucket[b];
	}
	h->sum_ns += l->sum_ns;
	h->gsys += l->gsys;
}

static void counts_add(struct acc_counts *c, const struct vcpu_summary *v)
{
	for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
		c->ns[s] += v->ns[s];
	c->preemptions += v->preemptions;
	c->wakeups += v->wakeups;
	c->migrations += v->migrations;
	c->exits += v->kvm_exits;
	c->uexits += v->userspace_exits;
	c->polls_ok += v->polls_ok;
	c->polls_failed += v->polls_failed;
	c->poll_fail_ns += v->poll_fail_ns;
	c->l2_ns += v->l2_ns;
	c->nested |= v->nested;
}

static int culprit_charge(struct acc_vm *vm, const struct culprit_summary *cs)
{
	struct culprit_key k;
	struct acc_culprit *arr;
	size_t *idx, i;

	memset(&k, 0, sizeof(k));
	snprintf(k.process, sizeof(k.process), "%s", cs->process);
	snprintf(k.comm, sizeof(k.comm), "%s", cs->comm);
	snprintf(k.cgroup, sizeof(k.cgroup), "%s", cs->cgroup);
	snprintf(k.vm, sizeof(k.vm), "%s", cs->vm);
	idx = hashmap_lookup(&vm->culprit_idx, &k);
	if (idx) {
		i = *idx;
	} else {
		arr = realloc(vm->culprits, (vm->nr_culprits + 1) * sizeof(*arr));
		if (!arr)
			return -ENOMEM;
		vm->culprits = arr;
		i = vm->nr_culprits;
		if (hashmap_insert(&vm->culprit_idx, &k, &i))
			return -ENOMEM;
		memset(&arr[i], 0, sizeof(arr[i]));
		arr[i].key = k;
		vm->nr_culprits++;
	}
	vm->culprits[i].total_ns += cs->ns;
	vm->culprits[i].delta += cs->ns;
	return 0;
}

/* Ranking: most time first; on a tie the one already named stays ahead. */
static int by_total(const void *a, const void *b)
{
	const struct acc_culprit *x = *(struct acc_culprit *const *)a, *y = *(struct acc_culprit *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->named != y->named)
		return x->named ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* After a window's charges: the top N are named; what the others were charged goes to "other". */
static int culprits_settle(struct acc_vm *vm, unsigned int top)
{
	struct acc_culprit **order;
	size_t i;

	if (!vm->nr_culprits)
		return 0;
	order = malloc(vm->nr_culprits * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < vm->nr_culprits; i++)
		order[i] = &vm->culprits[i];
	if (vm->nr_culprits > 1)
		qsort(order, vm->nr_culprits, sizeof(*order), by_total);
	for (i = 0; i < vm->nr_culprits; i++) {
		struct acc_culprit *c = order[i];

		c->named = i < top;
		if (c->named)
			c->named_ns += c->delta;
		else
			vm->other_ns += c->delta;
		c->delta = 0;
	}
	free(order);
	return 0;
}

static int detail_charge(struct acc_vm *vm, const struct detail_summary *ds)
{
	struct detail_key k;
	struct acc_detail *arr;
	size_t *idx, i;

	if (ds->kind >= VCPUSTAT_NR_DETAIL_KINDS || ds->access >= VCPUSTAT_NR_ACCESSES)
		return 0;
	memset(&k, 0, sizeof(k));
	k.kind = (__u8)ds->kind;
	k.access = (__u8)ds->access;
	k.addr = ds->addr;
	idx = hashmap_lookup(&vm->detail_idx, &k);
	if (idx) {
		i = *idx;
	} else {
		arr = realloc(vm->details, (vm->nr_details + 1) * sizeof(*arr));
		if (!arr)
			return -ENOMEM;
		vm->details = arr;
		i = vm->nr_details;
		if (hashmap_insert(&vm->detail_idx, &k, &i))
			return -ENOMEM;
		memset(&arr[i], 0, sizeof(arr[i]));
		arr[i].key = k;
		vm->nr_details++;
	}
	vm->details[i].total += ds->count;
	vm->details[i].delta_count += ds->count;
	vm->details[i].delta_ns += ds->sum_ns;
	return 0;
}

/* Ranking within a kind: most exits first; on a tie the one already named stays ahead. */
static int detail_by_total(const void *a, const void *b)
{
	const struct acc_detail *x = *(struct acc_detail *const *)a, *y = *(struct acc_detail *const *)b;

	if (x->key.kind != y->key.kind)
		return x->key.kind < y->key.kind ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->named != y->named)
		return x->named ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* After a window: the top N of each kind are named; what the others counted goes to their "other". */
static int details_settle(struct acc_vm *vm, unsigned int top)
{
	struct acc_detail **order;
	unsigned int rank = 0, kind = VCPUSTAT_NR_DETAIL_KINDS;

	if (!vm->nr_details)
		return 0;
	order = malloc(vm->nr_details * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < vm->nr_details; i++)
		order[i] = &vm->details[i];
	if (vm->nr_details > 1)
		qsort(order, vm->nr_details, sizeof(*order), detail_by_total);
	for (size_t i = 0; i < vm->nr_details; i++) {
		struct acc_detail *d = order[i];
		unsigned int k = d->key.kind, a = d->key.access;

		if (k != kind) {
			kind = k;
			rank = 0;
		}
		d->named = d->key.addr != VCPUSTAT_DETAIL_OTHER && rank < top;
		if (d->named) {
			rank++;
			d->named_count += d->delta_count;
			d->named_ns += d->delta_ns;
		} else {
			vm->other_used[k][a] = true;
			vm->other_count[k][a] += d->delta_count;
			vm->other_dns[k][a] += d->delta_ns;
		}
		d->delta_count = d->delta_ns = 0;
	}
	free(order);
	return 0;
}

int metrics_add(struct metrics *m, const struct summary *s)
{
	int err = 0;

	if (!m->started) {
		m->started = true;
		m->t0 = s->t0;
	} else if (!m->nr_adds && s->t0 < m->t0) {
		m->t0 = s->t0; /* vCPUs seeded at the attach, just before metrics_start() */
	}
	m->nr_adds++;
	m->t1 = s->t1;
	m->gsys_known |= s->has_gsys;
	if (s->health.checked) {
		m->health_checked = true;
		m->health_problems = s->health.problems;
		m->kvm_vms = s->health.kvm_vms;
		for (unsigned int b = 0; b < HEALTH_NR_PROBLEMS; b++) {
			m->blind_vms[b] = 0;
			for (size_t i = 0; i < s->health.nr_vms; i++)
				m->blind_vms[b] += !!(s->health.vms[i].problems & (1u << b));
		}
	}
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		m->lost[i] += s->lost_window[i];
	for (size_t i = 0; i < m->nr_vms; i++)
		m->vms[i]->vcpus_now = 0;
	for (size_t i = 0; i < s->nr_vms && !err; i++) {
		const struct vm_summary *vs = &s->vms[i];
		struct acc_vm *vm = vm_get(m, vs->name);
		bool alive = false;

		if (!vm)
			return -ENOMEM;
		if (vs->cgroup[0]) { /* vcpustat_vm_info: the latest of the VMs of this name with one */
			snprintf(vm->cgroup, sizeof(vm->cgroup), "%s", vs->cgroup);
			vm_container(vs, &vm->container); /* all "" where the cgroup names none */
		}
		for (size_t v = 0; v < vs->nr_vcpus; v++) {
			const struct vcpu_summary *c = &vs->vcpus[v];

			counts_add(&vm->c, c);
			if (!m->o.no_vcpu_labels) {
				struct acc_vcpu *av = vcpu_get(vm, c->index);

				if (!av)
					return -ENOMEM;
				counts_add(&av->c, c);
				av->halt_poll_ns = c->halt_poll_ns;
			}
			if (!c->gone) {
				vm->vcpus_now++;
				alive = true;
			}
		}
		if (vs->nr_vcpus && (vm->halt_poll_add != m->nr_adds || vs->halt_poll_ns > vm->halt_poll_ns)) {
			vm->halt_poll_ns = vs->halt_poll_ns;
			vm->halt_poll_add = m->nr_adds;
		}
		if ((alive && !vs->exited) || !vm->last_alive)
			vm->last_alive = s->t1;
		for (size_t e = 0; e < vs->nr_exits; e++) {
			struct acc_hist *h = hist_get(&vm->exits, &vm->nr_exits, vs->exits[e].name);

			if (!h)
				return -ENOMEM;
			hist_add(h, &vs->exits[e]);
		}
		for (size_t e = 0; e < vs->nr_uexits; e++) {
			struct acc_hist *h = hist_get(&vm->uexits, &vm->nr_uexits, vs->uexits[e].name);

			if (!h)
				return -ENOMEM;
			hist_add(h, &vs->uexits[e]);
		}
		hist_add(&vm->runq, &vs->runq);
		for (size_t w = 0; w < vs->nr_wakes; w++) {
			struct acc_hist *h = hist_get(&vm->wakes, &vm->nr_wakes, vs->wakes[w].name);

			if (!h)
				return -ENOMEM;
			hist_add(h, &vs->wakes[w]);
		}
		for (size_t w = 0; w < vs->nr_wake_vectors; w++) {
			struct acc_hist *h = hist_get(&vm->wake_vectors, &vm->nr_wake_vectors, vs->wake_vectors[w].name);

			if (!h)
				return -ENOMEM;
			hist_add(h, &vs->wake_vectors[w]);
		}
		if (vs->place.known && s->topo) {
			err = place_charge(vm, s, vs);
			if (err)
				return err;
		}
		if (vs->vmm.known) {
			vm->vmm_known = true;
			for (int k = 0; k < VMM_NR_KINDS; k++) {
				vm->vmm_run_ns[k] += vs->vmm.run_ns[k];
				vm->vmm_wait_ns[k] += vs->vmm.wait_ns[k];
			}
		}
		for (size_t c = 0; c < vs->nr_culprits && !err; c++)
			err = culprit_charge(vm, &vs->culprits[c]);
		for (size_t d = 0; d < vs->nr_details && !err; d++)
			err = detail_charge(vm, &vs->details[d]);
		/* guest address spaces: rows of their own kind, named and settled as the exit details are */
		for (size_t d = 0; d < vs->nr_address_spaces && !err; d++)
			err = detail_charge(vm, &vs->address_spaces[d]);
	}
	/* after all VMs: two VMs of the same name charge the same culprits */
	for (size_t i = 0; i < m->nr_vms && !err; i++) {
		err = culprits_settle(m->vms[i], m->o.top_culprits);
		if (!err)
			err = details_settle(m->vms[i], m->o.top_details ? m->o.top_details : METRICS_TOP_DETAILS);
	}
	return err;
}

void metrics_forget(struct metrics *m, unsigned long long now, unsigned long long forget_ns)
{
	size_t i = 0, j = 0;

	for (i = 0; i < m->nr_vms; i++) {
		struct acc_vm *vm = m->vms[i];

		if (!vm->vcpus_now && vm->last_alive + forget_ns < now) {
			vm_free(vm);
			continue;
		}
		m->vms[j++] = vm;
	}
	m->nr_vms = j;
}

/* ---- what the renderers share ---- */

double metrics_le_seconds(unsigned int i)
{
	return (double)metrics_le_ns[i] / 1e9;
}

static int by_named_ns(const void *a, const void *b)
{
	const struct acc_culprit *x = *(struct acc_culprit *const *)a, *y = *(struct acc_culprit *const *)b;

	if (x->named_ns != y->named_ns)
		return x->named_ns > y->named_ns ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* The named culprits of vm, most time first (malloc'ed; NULL if none). */
struct acc_culprit **metrics_named_culprits(const struct acc_vm *vm, size_t *n)
{
	struct acc_culprit **arr;

	*n = 0;
	arr = malloc((vm->nr_culprits ? vm->nr_culprits : 1) * sizeof(*arr));
	if (!arr)
		return NULL;
	for (size_t c = 0; c < vm->nr_culprits; c++)
		if (vm->culprits[c].named)
			arr[(*n)++] = &vm->culprits[c];
	if (*n > 1)
		qsort(arr, *n, sizeof(*arr), by_named_ns);
	return arr;
}

static int row_by_kind_count(const void *a, const void *b)
{
	const struct detail_row *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if ((x->addr == VCPUSTAT_DETAIL_OTHER) != (y->addr == VCPUSTAT_DETAIL_OTHER))
		return x->addr == VCPUSTAT_DETAIL_OTHER ? 1 : -1; /* "other" last */
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->access < y->access ? -1 : x->access > y->access;
}

struct detail_row *metrics_detail_rows(const struct acc_vm *vm, size_t *n)
{
	struct detail_row *rows;
	size_t max = vm->nr_details + VCPUSTAT_NR_DETAIL_KINDS * VCPUSTAT_NR_ACCESSES;

	*n = 0;
	rows = calloc(max, sizeof(*rows));
	if (!rows)
		return NULL;
	for (size_t i = 0; i < vm->nr_details; i++) {
		const struct acc_detail *d = &vm->details[i];

		if (d->named || d->named_count)
			rows[(*n)++] = (struct detail_row){ d->key.kind, d->key.access, d->key.addr, d->named_count,
							    d->named_ns };
	}
	for (unsigned int k = 0; k < VCPUSTAT_NR_DETAIL_KINDS; k++)
		for (unsigned int a = 0; a < VCPUSTAT_NR_ACCESSES; a++)
			if (vm->other_used[k][a])
				rows[(*n)++] = (struct detail_row){ (__u8)k, (__u8)a, VCPUSTAT_DETAIL_OTHER,
								    vm->other_count[k][a], vm->other_dns[k][a] };
	if (*n > 1)
		qsort(rows, *n, sizeof(*rows), row_by_kind_count);
	return rows;
}

/* "other" is published once a VM has more culprits than named ones. */
bool metrics_has_other(const struct metrics *m, const struct acc_vm *vm)
{
	return vm->nr_culprits > m->o.top_culprits;
}

double metrics_window_seconds(const struct metrics *m)
{
	return m->started && m->t1 > m->t0 ? (double)(m->t1 - m->t0) / 1e9 : 0;
}

double metrics_start_time(const struct metrics *m)
{
	return (double)((long long)m->t0 + m->real_offset) / 1e9;
}

/* ---- formats ---- */

int metrics_format_parse(const char *name, enum metrics_format *f)
{
	static const char *const names[] = {"prometheus", "openmetrics", "json", "csv"};

	for (unsigned int i = 0; i < 4; i++)
		if (!strcmp(name, names[i])) {
			*f = (enum metrics_format)i;
			return 0;
		}
	return -EINVAL;
}

const char *metrics_content_type(enum metrics_format f)
{
	switch (f) {
	case METRICS_OPENMETRICS:
		return "application/openmetrics-text; version=1.0.0; charset=utf-8";
	case METRICS_JSON:
		return "application/json";
	case METRICS_CSV:
		return "text/csv; charset=utf-8";
	default:
		return "text/plain; version=0.0.4; charset=utf-8";
	}
}


int metrics_write(const struct metrics *m, enum metrics_format fmt, const char *path, struct vcpustat_error *err)
{
	char *buf;
	size_t len;
	int e = 0;

	if (metrics_render(m, fmt, &buf, &len))
		return verror(err, -ENOMEM, "out of memory");
	if (path)
		e = outfile_write(path, buf, len, err);
	else if (fwrite(buf, 1, len, stdout) != len || fflush(stdout))
		e = verror(err, -errno, "writing to stdout: %s", strerror(errno));
	free(buf);
	return e;
}

int metrics_of_recording(struct metrics **out, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			 const struct metrics_opts *mo, const struct summary_filter *filter, size_t *nr_vms,
			 struct vcpustat_error *err)
{
	const struct sht_info *info = sht_get_info(r);
	struct metrics *m;
	struct summary s;
	char a[64], b[64];
	bool culprits;
	int e;

	*out = NULL;
	e = report_build(&s, r, t1, t2, filter, &culprits, err);
	if (e)
		return e;
	*nr_vms = s.nr_vms;
	m = metrics_new(mo);
	if (!m || metrics_add(m, &s)) {
		summary_free(&s);
		metrics_free(m);
		return verror(err, -ENOMEM, "out of memory");
	}
	summary_free(&s);
	if (sht_has_wall_clock(r))
		metrics_set_clock(m, (long long)info->real_start_ns);
	else
		metrics_set_no_clock(m);
	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	metrics_set_file(m, file, t1, t2, a, b);
	*out = m;
	return 0;
}
