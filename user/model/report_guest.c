// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_guest.c - a recording's guest threads in the window (vcpustat import
 * with guest traces, docs/import.md): what each ran, on which vCPU, and what
 * it lost while its vCPU was preempted, with who took the CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "model/report_parts.h"

/* A vCPU's timelines in the window. */
struct vcpu_lines {
	uint32_t index;
	struct sht_interval *gtid, *state, *pcpu;
	size_t ngtid, nstate, npcpu;
};

static int guest_state_of(const char *s)
{
	for (unsigned int i = 0; i < GUEST_NR_STATES; i++)
		if (!strcmp(s, guest_thread_state_name(i)))
			return (int)i;
	return -1;
}

/* [s, e) of a guest thread's virt_preempted time, on vCPU v: what the vCPU did, and who ran. */
static int lost_on_vcpu(struct sht_reader *r, const struct vcpu_lines *v, uint64_t s, uint64_t e,
			struct guest_thread_summary *g, struct cpu_runs *cr, struct hashmap *acc,
			struct vcpustat_error *err)
{
	for (size_t i = report_first_after(v->state, v->nstate, s); i < v->nstate && v->state[i].start < e; i++) {
		const struct sht_interval *iv = &v->state[i];
		uint64_t a = max_u64(iv->start, s), b = min_u64(iv->end, e);
		const struct sht_interval *p;
		int err2;

		if (b <= a || iv->value.type != SHT_INT)
			continue;
		switch (iv->value.i) {
		case VCPU_HOST:
		case VCPU_GUEST:
		case VCPU_POLL:
			g->lost_hypervisor_ns += b - a;
			break;
		case VCPU_PREEMPTED:
		case VCPU_WAIT:
			g->lost_runq_ns += b - a;
			p = report_covering(v->pcpu, v->npcpu, iv->start);
			if (cr && p && p->value.type == SHT_INT) {
				err2 = report_charge(r, cr, acc, (uint32_t)p->value.i, a, b, err);
				if (err2)
					return err2;
			}
			break;
		case VCPU_IDLE:
		case VCPU_BLOCKED:
			g->lost_blocked_ns += b - a;
			break;
		default:
			break;
		}
	}
	return 0;
}

static int by_lost_desc(const void *a, const void *b)
{
	const struct guest_thread_summary *x = a, *y = b;

	if (x->ns[GUEST_VIRT_PREEMPTED] != y->ns[GUEST_VIRT_PREEMPTED])
		return x->ns[GUEST_VIRT_PREEMPTED] > y->ns[GUEST_VIRT_PREEMPTED] ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* One guest thread's window. */
static int guest_thread(struct sht_reader *r, uint32_t th, const struct vcpu_lines *vl, size_t nvl, uint64_t t1,
			uint64_t t2, struct cpu_runs *cr, struct hashmap *vcpu_of_tid, struct guest_thread_summary *g,
			struct vcpustat_error *err)
{
	struct sht_interval *st = NULL, *nm = NULL;
	size_t nst = 0, nnm = 0;
	struct hashmap acc;
	uint32_t tid = (uint32_t)strtoul(sht_attr_name(r, th), NULL, 10);
	int e;

	memset(g, 0, sizeof(*g));
	g->tid = tid;
	g->vcpu = -1;
	if (hashmap_init(&acc, sizeof(uint32_t), sizeof(uint64_t), 0))
		return -ENOMEM;
	e = report_range(r, sht_attr_child(r, th, "state"), t1, t2, &st, &nst, err);
	if (!e)
		e = report_range(r, sht_attr_child(r, th, "name"), sht_get_info(r)->start, t2, &nm, &nnm, err);
	for (size_t i = 0; !e && i < nnm; i++)
		if (nm[i].value.type == SHT_STR)
			snprintf(g->comm, sizeof(g->comm), "%s", nm[i].value.s);
	for (size_t i = 0; !e && i < nst; i++) {
		uint64_t s = max_u64(st[i].start, t1), t = min_u64(st[i].end, t2);
		int state = st[i].value.type == SHT_STR ? guest_state_of(st[i].value.s) : -1;

		if (state < 0 || t <= s)
			continue;
		g->ns[state] += t - s;
		if (state != GUEST_RUNNING && state != GUEST_VIRT_PREEMPTED)
			continue;
		/* which vCPU it was on: the guest_tid intervals that name it */
		for (size_t v = 0; !e && v < nvl; v++)
			for (size_t k = report_first_after(vl[v].gtid, vl[v].ngtid, s);
			     !e && k < vl[v].ngtid && vl[v].gtid[k].start < t; k++) {
				const struct sht_interval *gi = &vl[v].gtid[k];

				if (gi->value.type != SHT_INT || gi->value.i != (int64_t)tid)
					continue;
				g->vcpu = (int)vl[v].index;
				if (state == GUEST_VIRT_PREEMPTED)
					e = lost_on_vcpu(r, &vl[v], max_u64(gi->start, s), min_u64(gi->end, t), g, cr,
							 &acc, err);
			}
	}
	if (!e)
		e = report_culprits_fill(r, &g->culprits, &g->nr_culprits, &acc, vcpu_of_tid, g->lost_runq_ns);
	if (!e && g->nr_culprits > 1)
		qsort(g->culprits, g->nr_culprits, sizeof(*g->culprits), report_by_ns_desc);
	hashmap_free(&acc);
	free(st);
	free(nm);
	return e;
}

static void vcpu_lines_free(struct vcpu_lines *vl, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(vl[i].gtid);
		free(vl[i].state);
		free(vl[i].pcpu);
	}
	free(vl);
}

int report_guest_threads(struct sht_reader *r, uint32_t vm, struct vm_summary *vs, uint64_t t1, uint64_t t2,
			 struct cpu_runs *cr, struct hashmap *vcpu_of_tid, struct vcpustat_error *err)
{
	uint32_t threads = sht_attr_child(r, vm, "threads"), vcpus = sht_attr_child(r, vm, "vcpus");
	struct vcpu_lines *vl = NULL;
	size_t nvl = 0;
	int e = 0;

	if (threads == SHT_NO_ATTR)
		return 0;
	for (uint32_t vc = report_first_child(r, vcpus); vc != SHT_NO_ATTR && !e; vc = sht_attr_next_sibling(r, vc)) {
		struct vcpu_lines *a = realloc(vl, (nvl + 1) * sizeof(*a)), *l;

		if (!a) {
			e = -ENOMEM;
			break;
		}
		vl = a;
		l = &vl[nvl++];
		memset(l, 0, sizeof(*l));
		l->index = (uint32_t)atoi(sht_attr_name(r, vc));
		e = report_range(r, sht_attr_child(r, vc, "guest_tid"), t1, t2, &l->gtid, &l->ngtid, err);
		if (!e)
			e = report_range(r, sht_attr_child(r, vc, "state"), t1, t2, &l->state, &l->nstate, err);
		if (!e)
			e = report_range(r, sht_attr_child(r, vc, "pcpu"), sht_get_info(r)->start, t2, &l->pcpu,
					 &l->npcpu, err);
	}
	for (uint32_t th = report_first_child(r, threads); th != SHT_NO_ATTR && !e; th = sht_attr_next_sibling(r, th)) {
		struct guest_thread_summary g, *a;
		bool seen = false;

		e = guest_thread(r, th, vl, nvl, t1, t2, cr, vcpu_of_tid, &g, err);
		for (unsigned int k = 0; k < GUEST_NR_STATES; k++)
			seen |= g.ns[k] > 0;
		if (e || !seen) {
			free(g.culprits);
			continue;
		}
		a = realloc(vs->guest_threads, (vs->nr_guest_threads + 1) * sizeof(*a));
		if (!a) {
			free(g.culprits);
			e = -ENOMEM;
			break;
		}
		vs->guest_threads = a;
		vs->guest_threads[vs->nr_guest_threads++] = g;
	}
	vcpu_lines_free(vl, nvl);
	if (!e && vs->nr_guest_threads > 1)
		qsort(vs->guest_threads, vs->nr_guest_threads, sizeof(*vs->guest_threads), by_lost_desc);
	return e;
}

/* --vcpu, --tid: the guest threads last current on a vCPU the filter keeps. */
void report_guest_threads_keep(struct vm_summary *vs)
{
	size_t k = 0;

	for (size_t g = 0; g < vs->nr_guest_threads; g++) {
		struct guest_thread_summary *t = &vs->guest_threads[g];
		bool kept = false;

		for (size_t v = 0; v < vs->nr_vcpus && t->vcpu >= 0; v++)
			kept |= vs->vcpus[v].index == (uint32_t)t->vcpu;
		if (kept)
			vs->guest_threads[k++] = *t;
		else
			free(t->culprits);
	}
	vs->nr_guest_threads = k;
}
