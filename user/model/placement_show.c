// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placement_show.c - `vcpustat report --placement` as text and JSON (docs/json.md). */
#include <stdlib.h>
#include <string.h>
#include "model/placement.h"

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static int cpus_on_core(const struct cpu_topology *t, int core)
{
	int n = 0;

	for (unsigned int c = 0; c < t->nr_cpus; c++)
		n += t->core[c] == core;
	return n;
}

static int max_threads(const struct cpu_topology *t)
{
	int m = 0;

	for (unsigned int c = 0; c < t->nr_cpus; c++) {
		int n = t->core[c] >= 0 ? cpus_on_core(t, t->core[c]) : 0;

		if (n > m)
			m = n;
	}
	return m;
}

static void print_topology(FILE *f, const struct placement *p)
{
	if (!p->topo_source) {
		fprintf(f, "no CPU topology in this recording (recorded before vcpustat kept it, or imported):\n"
			   "per-node, per-cache and SMT figures need --host-topology (this machine's)\n");
		return;
	}
	fprintf(f, "topology of the %s: %u CPUs", !strcmp(p->topo_source, "host") ? "host running report" : "recording",
		p->topo.nr_cpus);
	fprintf(f, p->has_nodes ? ", %d NUMA node%s" : ", NUMA nodes not known", p->nr_nodes, p->nr_nodes == 1 ? "" : "s");
	fprintf(f, p->has_llcs ? ", %d last-level cache%s" : ", last-level caches not known", p->nr_llcs,
		p->nr_llcs == 1 ? "" : "s");
	if (!p->has_smt)
		fprintf(f, ", SMT not known\n");
	else if (max_threads(&p->topo) < 2)
		fprintf(f, ", no SMT\n");
	else
		fprintf(f, ", %d threads per core\n", max_threads(&p->topo));
}

static void print_nodes(FILE *f, const struct placement *p, double w)
{
	if (!p->has_nodes)
		return;
	fprintf(f, "\n%-14s", "NUMA node");
	for (int i = 0; i < p->nr_nodes; i++)
		fprintf(f, " %10d", p->node_ids[i]);
	fprintf(f, "\n%-14s", "  CPUs");
	for (int i = 0; i < p->nr_nodes; i++)
		fprintf(f, " %10d", p->node_cpus[i]);
	fprintf(f, "\n%-14s", "  busy vCPUs");
	for (int i = 0; i < p->nr_nodes; i++)
		fprintf(f, " %10.2f", w > 0 ? secs(p->node_ns[i]) / w : 0);
	fprintf(f, "\n%-14s", "  utilization");
	for (int i = 0; i < p->nr_nodes; i++)
		fprintf(f, " %9.1f%%", w > 0 && p->node_cpus[i] ? 100 * secs(p->node_ns[i]) / w / p->node_cpus[i] : 0);
	fprintf(f, "\n(busy vCPUs: every VM's vCPU-seconds on the node's CPUs / the window)\n");
}

static void print_vms(FILE *f, const struct placement *p)
{
	bool smt = p->has_smt && max_threads(&p->topo) > 1;

	fprintf(f, "\n%-20s %5s %10s", "VM", "vCPUs", "on-CPU s");
	for (int i = 0; p->has_nodes && i < p->nr_nodes; i++) {
		char col[32];

		snprintf(col, sizeof(col), "node%d s", p->node_ids[i]);
		fprintf(f, " %11s", col);
	}
	fprintf(f, " %6s %6s %6s %6s %11s %11s\n", "migr", "x-LLC", "x-node", "NUMA-b", "SMT other", "SMT own");
	for (size_t v = 0; v < p->nr_vms; v++) {
		const struct placement_vm *pv = &p->vms[v];

		fprintf(f, "%-20.20s %5u %10.3f", pv->name, pv->vcpus, secs(pv->run_ns));
		for (int i = 0; p->has_nodes && i < p->nr_nodes; i++)
			fprintf(f, " %11.3f", secs(pv->node_ns[i]));
		fprintf(f, " %6llu", (unsigned long long)pv->migrations);
		if (p->has_llcs)
			fprintf(f, " %6llu", (unsigned long long)pv->cross_llc);
		else
			fprintf(f, " %6s", "-");
		if (p->has_nodes)
			fprintf(f, " %6llu", (unsigned long long)pv->cross_node);
		else
			fprintf(f, " %6s", "-");
		fprintf(f, " %6llu", (unsigned long long)pv->numa_moves);
		if (smt)
			fprintf(f, " %10.3fs %10.3fs\n", secs(pv->smt_other_vm_ns), secs(pv->smt_same_vm_ns));
		else
			fprintf(f, " %11s %11s\n", "-", "-");
	}
	fprintf(f, "(NUMA-b: migrations the kernel's NUMA balancing made, sched_move_numa and sched_swap_numa)\n");
	if (smt)
		fprintf(f, "(SMT other: on-CPU time while another hardware thread of the core ran another VM's vCPU;\n"
			   " SMT own: while it ran only vCPUs of the same VM)\n");
	if (!p->has_llcs)
		return;
	fprintf(f, "\nlast-level caches (on-CPU seconds per cache; the cache's CPUs in --json):\n");
	for (size_t v = 0; v < p->nr_vms; v++) {
		const struct placement_vm *pv = &p->vms[v];
		int shown = 0;

		fprintf(f, "  %-20.20s", pv->name);
		for (int i = 0; i < p->nr_llcs; i++)
			if (pv->llc_ns[i])
				fprintf(f, "%s llc%d %.3f", shown++ ? "," : "", p->llc_ids[i], secs(pv->llc_ns[i]));
		fprintf(f, "%s\n", shown ? "" : " -");
	}
}

static void print_move(FILE *f, const struct placement *p, double w)
{
	const struct placement_move *m = &p->move;

	fprintf(f, "\nbalance: ");
	if (!p->has_nodes || p->nr_nodes < 2) {
		fprintf(f, "%s: nothing to balance\n", p->has_nodes ? "one NUMA node" : "NUMA nodes not known");
		return;
	}
	fprintf(f, "node %d runs %.2f busy vCPUs on %d CPUs (%.1f%%), node %d %.2f on %d (%.1f%%): %.1f points apart\n",
		p->node_ids[m->from], secs(p->node_ns[m->from]) / w, p->node_cpus[m->from], 100 * m->hot_util,
		p->node_ids[m->to], secs(p->node_ns[m->to]) / w, p->node_cpus[m->to], 100 * m->cold_util, 100 * m->spread);
	if (m->vm < 0) {
		fprintf(f, "  no move suggested (one is when the nodes are %.0f points apart or more and moving one\n"
			   "  VM's vCPUs brings them %.0f points closer)\n",
			100 * PLACEMENT_SPREAD_MIN, 100 * PLACEMENT_GAIN_MIN);
		return;
	}
	fprintf(f,
		"  move %s (%.2f busy vCPUs on node %d) to node %d: node %d (%.2f - %.2f) / %d = %.1f%%,"
		" node %d (%.2f + %.2f) / %d = %.1f%%: %.1f points apart\n",
		p->vms[m->vm].name, m->load, p->node_ids[m->from], p->node_ids[m->to], p->node_ids[m->from],
		secs(p->node_ns[m->from]) / w, m->load, p->node_cpus[m->from], 100 * m->hot_after, p->node_ids[m->to],
		secs(p->node_ns[m->to]) / w, m->load, p->node_cpus[m->to], 100 * m->cold_after, 100 * m->best_spread);
}

void placement_print(FILE *f, const struct placement *p)
{
	double w = secs(p->t2 - p->t1);

	print_topology(f, p);
	print_nodes(f, p, w);
	print_vms(f, p);
	if (p->topo_source)
		print_move(f, p, w);
}

void placement_print_balance(FILE *f, const struct placement *p)
{
	double w = secs(p->t2 - p->t1);

	if (!p->has_nodes || p->nr_nodes < 2 || w <= 0)
		return;
	fprintf(f, "\nHOST PLACEMENT (the VMs shown, over this interval)");
	print_nodes(f, p, w);
	print_move(f, p, w);
}

static json_t *cpus_json(const int *ids, unsigned int nr, int id)
{
	json_t *a = json_array();

	for (unsigned int c = 0; c < nr; c++)
		if (ids[c] == id)
			json_array_append_new(a, json_integer(c));
	return a;
}

json_t *placement_json(const struct placement *p)
{
	json_t *o = json_object(), *nodes = json_array(), *llcs = json_array(), *vms = json_array(), *move;
	double w = secs(p->t2 - p->t1);

	json_object_set_new(o, "topology", p->topo_source ? json_string(p->topo_source) : json_null());
	json_object_set_new(o, "smt", json_boolean(p->has_smt && max_threads(&p->topo) > 1));
	for (int i = 0; i < p->nr_nodes; i++)
		json_array_append_new(nodes, json_pack("{s:i, s:o, s:I, s:f, s:f}", "node", p->node_ids[i], "cpus",
						       cpus_json(p->topo.node, p->topo.nr_cpus, p->node_ids[i]), "ns",
						       (json_int_t)p->node_ns[i], "busy_vcpus",
						       w > 0 ? secs(p->node_ns[i]) / w : 0.0, "utilization",
						       w > 0 && p->node_cpus[i] ? secs(p->node_ns[i]) / w / p->node_cpus[i]
										: 0.0));
	for (int i = 0; i < p->nr_llcs; i++)
		json_array_append_new(llcs, json_pack("{s:i, s:o}", "llc", p->llc_ids[i], "cpus",
						      cpus_json(p->topo.llc, p->topo.nr_cpus, p->llc_ids[i])));
	json_object_set_new(o, "nodes", p->has_nodes ? nodes : (json_decref(nodes), json_null()));
	json_object_set_new(o, "llcs", p->has_llcs ? llcs : (json_decref(llcs), json_null()));
	for (size_t v = 0; v < p->nr_vms; v++) {
		const struct placement_vm *pv = &p->vms[v];
		json_t *vm = json_pack("{s:s, s:i, s:i, s:I, s:I}", "vm", pv->name, "pid", (int)pv->pid, "vcpus",
				       (int)pv->vcpus, "run_ns", (json_int_t)pv->run_ns, "migrations",
				       (json_int_t)pv->migrations);
		json_t *vn = json_array(), *vl = json_array();

		for (int i = 0; i < p->nr_nodes; i++)
			json_array_append_new(vn, json_pack("{s:i, s:I}", "node", p->node_ids[i], "ns",
							    (json_int_t)pv->node_ns[i]));
		for (int i = 0; i < p->nr_llcs; i++)
			json_array_append_new(vl, json_pack("{s:i, s:I}", "llc", p->llc_ids[i], "ns",
							    (json_int_t)pv->llc_ns[i]));
		json_object_set_new(vm, "nodes", p->has_nodes ? vn : (json_decref(vn), json_null()));
		json_object_set_new(vm, "llcs", p->has_llcs ? vl : (json_decref(vl), json_null()));
		json_object_set_new(vm, "cross_node_migrations",
				    p->has_nodes ? json_integer((json_int_t)pv->cross_node) : json_null());
		json_object_set_new(vm, "cross_llc_migrations",
				    p->has_llcs ? json_integer((json_int_t)pv->cross_llc) : json_null());
		json_object_set_new(vm, "numa_balancing_moves", json_integer((json_int_t)pv->numa_moves));
		json_object_set_new(vm, "smt_other_vm_ns",
				    p->has_smt ? json_integer((json_int_t)pv->smt_other_vm_ns) : json_null());
		json_object_set_new(vm, "smt_same_vm_ns",
				    p->has_smt ? json_integer((json_int_t)pv->smt_same_vm_ns) : json_null());
		json_array_append_new(vms, vm);
	}
	json_object_set_new(o, "vms", vms);
	if (p->has_nodes && p->nr_nodes > 1 && p->move.vm >= 0) {
		const struct placement_move *m = &p->move;

		move = json_pack("{s:s, s:i, s:i, s:f, s:{s:f, s:f}, s:{s:f, s:f}}", "vm", p->vms[m->vm].name,
				 "from_node", p->node_ids[m->from], "to_node", p->node_ids[m->to], "busy_vcpus", m->load,
				 "before", "from", m->hot_util, "to", m->cold_util, "after", "from", m->hot_after, "to",
				 m->cold_after);
	} else {
		move = json_null();
	}
	json_object_set_new(o, "move", move);
	return o;
}

json_t *placement_balance_json(const struct placement *p)
{
	json_t *all, *o;

	if (!p->has_nodes || p->nr_nodes < 2 || p->t2 <= p->t1)
		return NULL;
	all = placement_json(p);
	o = json_pack("{s:O, s:O}", "nodes", json_object_get(all, "nodes"), "move", json_object_get(all, "move"));
	json_decref(all);
	return o;
}
