// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * placement.c - where the vCPUs of each VM ran over a window of a recording
 * (`vcpustat report --placement`, docs/vcpustat.md): vCPU-seconds per NUMA
 * node and per last-level cache, migrations across them, time on a core
 * whose other hardware thread ran another VM's vCPU, and which VM to move to
 * balance the nodes.
 *
 * A vCPU is on a CPU while its state is guest or host; the CPU is its pcpu
 * attribute (docs/sht-attributes.md). A migration is a change of pcpu.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model/placement.h"
#include "model/recording.h"

struct seg {
	uint64_t start, end;
	uint32_t cpu;
	int vm; /* index among every VM of the file, wanted or not */
	bool kept; /* a vCPU the filter keeps, on a CPU it keeps: counted for its VM */
};

struct segs {
	struct seg *v;
	size_t n, cap;
};

static int seg_add(struct segs *s, uint64_t a, uint64_t b, uint32_t cpu, int vm, bool kept)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct seg *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct seg){ a, b, cpu, vm, kept };
	return 0;
}

static int id_of(const int *ids, unsigned int nr, int64_t cpu)
{
	return ids && cpu >= 0 && cpu < nr ? ids[cpu] : -1;
}

/* Index of id in the list of distinct ids (the table's columns), -1 if unknown. */
static int col_of(const int *cols, int ncols, int id)
{
	for (int i = 0; i < ncols && id >= 0; i++)
		if (cols[i] == id)
			return i;
	return -1;
}

static int collect_cols(const int *ids, unsigned int nr, int **cols, int *ncols)
{
	*cols = calloc(nr ? nr : 1, sizeof(int));
	*ncols = 0;
	if (!*cols)
		return -ENOMEM;
	for (unsigned int c = 0; c < nr; c++) {
		int i = 0;

		if (ids[c] < 0)
			continue;
		while (i < *ncols && (*cols)[i] < ids[c])
			i++;
		if (i < *ncols && (*cols)[i] == ids[c])
			continue;
		memmove(&(*cols)[i + 1], &(*cols)[i], (size_t)(*ncols - i) * sizeof(int));
		(*cols)[i] = ids[c];
		(*ncols)++;
	}
	return 0;
}

static bool known(const int *ids, unsigned int nr)
{
	for (unsigned int c = 0; c < nr; c++)
		if (ids[c] >= 0)
			return true;
	return false;
}

int vcpu_on_cpu(struct sht_reader *r, uint32_t vc, uint64_t t1, uint64_t t2,
		int (*visit)(void *ctx, uint64_t a, uint64_t b, uint32_t cpu, int state), void *ctx,
		struct vcpustat_error *err)
{
	uint32_t st = sht_attr_child(r, vc, "state"), pc = sht_attr_child(r, vc, "pcpu");
	struct sht_interval *s = NULL, *c = NULL;
	size_t ns = 0, nc = 0, i = 0, j = 0;
	int e = 0;

	if (st == SHT_NO_ATTR || pc == SHT_NO_ATTR)
		return 0;
	if ((e = sht_query_range(r, st, NULL, t1, t2, &s, &ns, err)) ||
	    (e = sht_query_range(r, pc, NULL, t1, t2, &c, &nc, err)))
		goto out;
	/* both lists are sorted by start and do not overlap */
	while (i < ns && j < nc && !e) {
		uint64_t a = s[i].start > c[j].start ? s[i].start : c[j].start;
		uint64_t b = s[i].end < c[j].end ? s[i].end : c[j].end;

		if (a < t1)
			a = t1;
		if (b > t2)
			b = t2;
		if (a < b && s[i].value.type == SHT_INT &&
		    (s[i].value.i == VCPU_GUEST || s[i].value.i == VCPU_HOST || s[i].value.i == VCPU_POLL) &&
		    c[j].value.type == SHT_INT && c[j].value.i >= 0)
			e = visit(ctx, a, b, (uint32_t)c[j].value.i, (int)s[i].value.i);
		if (s[i].end < c[j].end)
			i++;
		else
			j++;
	}
	if (e == -ENOMEM)
		verror(err, e, "out of memory");
out:
	free(s);
	free(c);
	return e;
}

struct walk {
	struct segs *out;
	int vm;
	bool kept;		   /* the filter keeps the vCPU */
	const struct id_set *cpus; /* and these CPUs */
};

static int walk_add(void *ctx, uint64_t a, uint64_t b, uint32_t cpu, int state)
{
	struct walk *w = ctx;

	(void)state;
	return seg_add(w->out, a, b, cpu, w->vm, w->kept && id_set_has(w->cpus, cpu));
}

/*
 * One vCPU: its migrations (pcpu changes in the window), how many of them
 * the kernel's NUMA balancing made (numa_moves: set at each such move, in
 * the window; not filtered by CPU: the move is decided before the CPU it
 * goes to is known to the file) and its on-CPU segments.
 */
static int vcpu_walk(struct sht_reader *r, uint32_t vc, int vm, uint64_t t1, uint64_t t2, struct segs *out,
		     struct placement_vm *pv, const struct placement *p, const struct id_set *cpus,
		     struct vcpustat_error *err)
{
	uint32_t pc = sht_attr_child(r, vc, "pcpu");
	struct walk w = { out, vm, pv != NULL, cpus };
	struct sht_interval *c = NULL;
	size_t nc = 0;
	int e;

	if (pv && pc != SHT_NO_ATTR) {
		if ((e = sht_query_range(r, pc, NULL, t1, t2, &c, &nc, err)))
			return e;
		for (size_t k = 1; k < nc; k++) {
			const struct sht_interval *a = &c[k - 1], *b = &c[k];

			if (a->value.type != SHT_INT || b->value.type != SHT_INT || a->end != b->start ||
			    a->value.i == b->value.i || b->start < t1 || b->start >= t2 || b->value.i < 0 ||
			    !id_set_has(cpus, (uint32_t)b->value.i))
				continue;
			pv->migrations++;
			if (id_of(p->topo.node, p->topo.nr_cpus, a->value.i) !=
			    id_of(p->topo.node, p->topo.nr_cpus, b->value.i))
				pv->cross_node++;
			if (id_of(p->topo.llc, p->topo.nr_cpus, a->value.i) !=
			    id_of(p->topo.llc, p->topo.nr_cpus, b->value.i))
				pv->cross_llc++;
		}
		free(c);
	}
	pc = pv ? sht_attr_child(r, vc, "numa_moves") : SHT_NO_ATTR;
	if (pc != SHT_NO_ATTR) {
		c = NULL;
		nc = 0;
		if ((e = sht_query_range(r, pc, NULL, t1, t2, &c, &nc, err)))
			return e;
		for (size_t k = 0; k < nc; k++)
			if (c[k].value.type == SHT_INT && c[k].start >= t1 && c[k].start < t2)
				pv->numa_moves++;
		free(c);
	}
	return vcpu_on_cpu(r, vc, t1, t2, walk_add, &w, err);
}

/*
 * SMT: per core, a sweep over the segments of its CPUs in time order. While
 * a vCPU runs, another CPU of its core runs a vCPU of another VM (other), or
 * only vCPUs of its own VM (same).
 */
struct ev {
	uint64_t t;
	int is_start;
	size_t seg;
};

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->is_start - y->is_start; /* ends first */
}

static void smt_core(struct placement *p, const struct seg *v, struct ev *ev, size_t m, size_t *act,
		     const int *vm_to_row)
{
	size_t nact = 0;
	uint64_t prev = 0;

	for (size_t k = 0; k < m; k++) {
		ev[2 * k] = (struct ev){ v[k].start, 1, k };
		ev[2 * k + 1] = (struct ev){ v[k].end, 0, k };
	}
	qsort(ev, 2 * m, sizeof(*ev), ev_cmp);
	for (size_t k = 0; k < 2 * m; k++) {
		uint64_t dt = ev[k].t - prev;

		for (size_t i = 0; dt && i < nact; i++) {
			const struct seg *a = &v[act[i]];
			bool other = false, same = false;

			if (vm_to_row[a->vm] < 0 || !a->kept)
				continue;
			for (size_t j = 0; j < nact; j++) {
				const struct seg *b = &v[act[j]];

				if (b->cpu == a->cpu)
					continue;
				if (b->vm != a->vm)
					other = true;
				else
					same = true;
			}
			if (other)
				p->vms[vm_to_row[a->vm]].smt_other_vm_ns += dt;
			else if (same)
				p->vms[vm_to_row[a->vm]].smt_same_vm_ns += dt;
		}
		prev = ev[k].t;
		if (ev[k].is_start) {
			act[nact++] = ev[k].seg;
		} else {
			for (size_t i = 0; i < nact; i++)
				if (act[i] == ev[k].seg) {
					act[i] = act[--nact];
					break;
				}
		}
	}
}

static int smt_sweep(struct placement *p, const struct segs *all, const int *vm_to_row)
{
	unsigned int nr = p->topo.nr_cpus;
	struct seg *v = malloc((all->n + 1) * sizeof(*v));
	struct ev *ev = malloc((2 * all->n + 1) * sizeof(*ev));
	size_t *act = malloc((all->n + 1) * sizeof(*act)), *first = NULL;
	int ncores = 0, e = 0;

	if (!v || !ev || !act) {
		e = -ENOMEM;
		goto out;
	}
	for (unsigned int c = 0; c < nr; c++)
		if (p->topo.core[c] + 1 > ncores)
			ncores = p->topo.core[c] + 1;
	/* the segments grouped by core (a counting sort), each core swept alone */
	first = calloc((size_t)ncores + 2, sizeof(*first));
	if (!first) {
		e = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < all->n; k++) {
		int core = id_of(p->topo.core, nr, all->v[k].cpu);

		if (core >= 0)
			first[core + 2]++;
	}
	for (int core = 0; core < ncores; core++)
		first[core + 2] += first[core + 1];
	for (size_t k = 0; k < all->n; k++) {
		int core = id_of(p->topo.core, nr, all->v[k].cpu);

		if (core >= 0)
			v[first[core + 1]++] = all->v[k];
	}
	for (int core = 0; core < ncores; core++)
		if (first[core + 1] - first[core] > 1)
			smt_core(p, v + first[core], ev, first[core + 1] - first[core], act, vm_to_row);
out:
	free(first);
	free(v);
	free(ev);
	free(act);
	return e;
}

/* Which VM to move from the busiest node (by share of its CPUs) to the least busy, and the result. */
static void suggest(struct placement *p)
{
	struct placement_move *mv = &p->move;
	double w = (double)(p->t2 - p->t1) / 1e9;
	int hot = -1, cold = -1;

	memset(mv, 0, sizeof(*mv));
	mv->vm = -1;
	if (p->nr_nodes < 2 || w <= 0)
		return;
	for (int i = 0; i < p->nr_nodes; i++) {
		double u = (double)p->node_ns[i] / 1e9 / w / p->node_cpus[i];

		if (hot < 0 || u > mv->hot_util)
			hot = i, mv->hot_util = u;
		if (cold < 0 || u < mv->cold_util)
			cold = i, mv->cold_util = u;
	}
	mv->from = hot;
	mv->to = cold;
	if (hot == cold)
		return;
	mv->spread = mv->hot_util - mv->cold_util;
	mv->best_spread = mv->spread;
	for (size_t v = 0; v < p->nr_vms; v++) {
		double load = (double)p->vms[v].node_ns[hot] / 1e9 / w; /* CPUs it keeps busy there */
		double h = ((double)p->node_ns[hot] / 1e9 / w - load) / p->node_cpus[hot];
		double c = ((double)p->node_ns[cold] / 1e9 / w + load) / p->node_cpus[cold];
		double spread = fabs(h - c);

		if (load > 0 && spread < mv->best_spread - 1e-12) {
			mv->vm = (int)v;
			mv->load = load;
			mv->hot_after = h;
			mv->cold_after = c;
			mv->best_spread = spread;
		}
	}
	/* worth it only if the nodes are apart by 10 points and the move brings them 5 points closer */
	if (mv->vm >= 0 && (mv->spread < PLACEMENT_SPREAD_MIN || mv->spread - mv->best_spread < PLACEMENT_GAIN_MIN))
		mv->vm = -1;
}

/* From p->topo: what it knows, the node and cache columns, the CPUs per node; -ENOMEM. */
static int columns(struct placement *p)
{
	p->has_nodes = p->topo.node && known(p->topo.node, p->topo.nr_cpus);
	p->has_llcs = p->topo.llc && known(p->topo.llc, p->topo.nr_cpus);
	p->has_smt = p->topo.core && known(p->topo.core, p->topo.nr_cpus);
	if ((p->has_nodes && collect_cols(p->topo.node, p->topo.nr_cpus, &p->node_ids, &p->nr_nodes)) ||
	    (p->has_llcs && collect_cols(p->topo.llc, p->topo.nr_cpus, &p->llc_ids, &p->nr_llcs)))
		return -ENOMEM;
	p->node_ns = calloc((size_t)p->nr_nodes + 1, sizeof(uint64_t));
	p->node_cpus = calloc((size_t)p->nr_nodes + 1, sizeof(int));
	if (!p->node_ns || !p->node_cpus)
		return -ENOMEM;
	for (unsigned int c = 0; c < p->topo.nr_cpus && p->has_nodes; c++) {
		int col = col_of(p->node_ids, p->nr_nodes, p->topo.node[c]);

		if (col >= 0)
			p->node_cpus[col]++;
	}
	return 0;
}

/* A row for a VM, its node and cache columns zeroed; NULL: out of memory. */
static struct placement_vm *add_vm(struct placement *p, const char *name, uint32_t pid)
{
	struct placement_vm *arr = realloc(p->vms, (p->nr_vms + 1) * sizeof(*arr)), *pv;

	if (!arr)
		return NULL;
	p->vms = arr;
	pv = &arr[p->nr_vms];
	memset(pv, 0, sizeof(*pv));
	snprintf(pv->name, sizeof(pv->name), "%s", name);
	pv->pid = pid;
	pv->node_ns = calloc((size_t)p->nr_nodes + 1, sizeof(uint64_t));
	pv->llc_ns = calloc((size_t)p->nr_llcs + 1, sizeof(uint64_t));
	if (!pv->node_ns || !pv->llc_ns) {
		free(pv->node_ns);
		free(pv->llc_ns);
		return NULL;
	}
	p->nr_vms++;
	return pv;
}

int placement_from_summary(struct placement *p, const struct summary *s)
{
	memset(p, 0, sizeof(*p));
	p->t1 = s->t0;
	p->t2 = s->t0 + (uint64_t)(s->seconds * 1e9 + 0.5);
	p->topo_source = s->topo ? "host" : NULL;
	if ((s->topo && topology_copy(&p->topo, s->topo)) || columns(p))
		goto nomem;
	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];
		struct placement_vm *pv;

		if (!vm->place.known)
			continue;
		pv = add_vm(p, vm->name, vm->tgid);
		if (!pv)
			goto nomem;
		for (size_t v = 0; v < vm->nr_vcpus; v++)
			pv->vcpus += vm->vcpus[v].ns[VCPU_GUEST] + vm->vcpus[v].ns[VCPU_HOST] > 0;
		for (size_t c = 0; c < vm->place.nr_cpus; c++) {
			uint32_t cpu = vm->place.cpus[c].cpu;
			uint64_t d = vm->place.cpus[c].ns;
			int node = col_of(p->node_ids, p->nr_nodes, id_of(p->topo.node, p->topo.nr_cpus, cpu));
			int llc = col_of(p->llc_ids, p->nr_llcs, id_of(p->topo.llc, p->topo.nr_cpus, cpu));

			pv->run_ns += d;
			if (node >= 0) {
				pv->node_ns[node] += d;
				p->node_ns[node] += d;
			} else {
				pv->node_unknown_ns += d;
			}
			if (llc >= 0)
				pv->llc_ns[llc] += d;
			else
				pv->llc_unknown_ns += d;
		}
		pv->migrations = vm->migrations;
		pv->cross_node = vm->place.cross_node;
		pv->cross_llc = vm->place.cross_llc;
		pv->numa_moves = vm->place.numa_moves;
		pv->smt_other_vm_ns = vm->place.smt_other_ns;
		pv->smt_same_vm_ns = vm->place.smt_same_ns;
	}
	suggest(p);
	return 0;
nomem:
	placement_free(p);
	return -ENOMEM;
}

int placement_build(struct placement *p, struct sht_reader *r, uint64_t t1, uint64_t t2,
		    const struct summary_filter *f, const struct cpu_topology *host, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	struct segs all = { 0 };
	int *vm_to_row = NULL, nvm = 0, e = 0;
	const char *val[TOPOLOGY_NR_KEYS];

	memset(p, 0, sizeof(*p));
	p->t1 = t1;
	p->t2 = t2;
	if (host) {
		p->topo_source = "host";
		e = topology_copy(&p->topo, host);
	} else {
		p->topo_source = "recording";
		for (int k = 0; k < TOPOLOGY_NR_KEYS; k++)
			val[k] = sht_meta_get(r, topology_meta_key[k]);
		e = topology_from_meta(&p->topo, val, err);
		if (e == -ENOENT) {
			e = 0;
			p->topo_source = NULL; /* none: the counts are still per VM */
		}
	}
	if (e)
		return e == -ENOMEM ? verror(err, e, "out of memory") : e;
	if (columns(p)) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm))
		nvm++;
	vm_to_row = malloc(((size_t)nvm + 1) * sizeof(int));
	if (!vm_to_row) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	nvm = 0;
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm)) {
		uint32_t pidattr = sht_attr_child(r, vm, "pid"), vcpus = sht_attr_child(r, vm, "vcpus");
		uint32_t pid = (uint32_t)report_first_int(r, pidattr, 0);
		struct placement_vm *pv = NULL;
		size_t first = all.n;

		vm_to_row[nvm] = -1;
		if (summary_filter_wants(f, sht_attr_name(r, vm), pid)) {
			pv = add_vm(p, sht_attr_name(r, vm), pid);
			if (!pv) {
				e = verror(err, -ENOMEM, "out of memory");
				break;
			}
			vm_to_row[nvm] = (int)p->nr_vms - 1;
		}
		for (uint32_t vc = report_first_child(r, vcpus); vc != SHT_NO_ATTR && !e;
		     vc = sht_attr_next_sibling(r, vc)) {
			size_t before = all.n;
			bool kept = pv && summary_filter_wants_vcpu(f, (uint32_t)atoi(sht_attr_name(r, vc)),
					(uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0));

			e = vcpu_walk(r, vc, nvm, t1, t2, &all, kept ? pv : NULL, p, f ? &f->pcpus : NULL, err);
			for (size_t k = before; kept && k < all.n; k++)
				if (all.v[k].kept) {
					pv->vcpus++;
					break;
				}
		}
		for (size_t k = first; k < all.n && !e; k++) {
			const struct seg *s = &all.v[k];
			uint64_t d = s->end - s->start;
			int node = col_of(p->node_ids, p->nr_nodes, id_of(p->topo.node, p->topo.nr_cpus, s->cpu));
			int llc = col_of(p->llc_ids, p->nr_llcs, id_of(p->topo.llc, p->topo.nr_cpus, s->cpu));

			if (node >= 0)
				p->node_ns[node] += d; /* every VM's: the nodes' load */
			if (!pv || !s->kept)
				continue;
			pv->run_ns += d;
			if (node >= 0)
				pv->node_ns[node] += d;
			else
				pv->node_unknown_ns += d;
			if (llc >= 0)
				pv->llc_ns[llc] += d;
			else
				pv->llc_unknown_ns += d;
		}
		nvm++;
	}
	if (!e && p->has_smt && smt_sweep(p, &all, vm_to_row))
		e = verror(err, -ENOMEM, "out of memory");
	if (!e)
		suggest(p);
out:
	free(all.v);
	free(vm_to_row);
	if (e)
		placement_free(p);
	return e;
}

void placement_free(struct placement *p)
{
	for (size_t i = 0; i < p->nr_vms; i++) {
		free(p->vms[i].node_ns);
		free(p->vms[i].llc_ns);
	}
	free(p->vms);
	free(p->node_ids);
	free(p->llc_ids);
	free(p->node_ns);
	free(p->node_cpus);
	topology_free(&p->topo);
	memset(p, 0, sizeof(*p));
}
