// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Placement, live (issue 12 item 5): where each VM's vCPUs ran, per CPU (then
 * per NUMA node and cache), their moves across nodes and caches, and the time
 * a vCPU shared its core with a vCPU of another VM or of its own, counted in
 * the kernel. Exact values through the injection program, on a topology that
 * fits any machine's first two CPUs: they are each other's SMT sibling and
 * yet on different nodes and caches, so that one scenario has all three.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <jansson.h>
#include "helpers.h"
#include "live/live.h"
#include "model/summary.h"
#include "model/placement.h"
#include "export/export.h"

static struct vcpustat *vs;

static void open_injection(void)
{
	int err;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(two_cpus_unavailable());
	err = vcpustat_open(&vs, NULL);
	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
}

static void close_vs(void)
{
	vcpustat_close(vs);
	vs = NULL;
}

TestSuite(place_live, .init = open_injection, .fini = close_vs);

static void inject(__u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2, __u64 a0, __u64 a1)
{
	struct vcpustat_event ev = {.type = type,
				    .ts = ts,
				    .cpu = cpu,
				    .tid = tid,
				    .tgid = tgid,
				    .tid2 = tid2,
				    .tgid2 = tid2 / 100 * 100,
				    .arg0 = a0,
				    .arg1 = a1};

	if (type == VCPUSTAT_EV_SWITCH)
		ev.arg2 = 1;
	snprintf(ev.comm, sizeof(ev.comm), "CPU %u/KVM", tid % 100 - 1);
	cr_assert_eq(vcpustat_inject(vs, &ev), 0);
}

/* prev (tgid prev/100*100, 0: idle) switched out sleeping on cpu, next in */
#define SWITCH(ts, cpu, prev, next) inject(VCPUSTAT_EV_SWITCH, ts, cpu, prev, (prev) / 100 * 100, next, 1, 0)

static void set_topology(void)
{
	int node[] = {0, 1}, llc[] = {0, 1}, core[] = {0, 0};
	struct cpu_topology t = {.nr_cpus = 2, .node = node, .llc = llc, .core = core};

	cr_assert_eq(vcpustat_set_topology(vs, &t), 2);
}

/*
 * VM 100 (vCPUs 101, 102) and VM 200 (vCPU 201):
 *  101 on CPU 0 1000..1500; 201 on CPU 1 1100..1600: they share the core 1100..1500
 *  (400 ns, each VM beside another VM's vCPU);
 *  101 on CPU 1 2000..2500 (a move to another node and cache, which NUMA
 *  balancing decided at 1890); 102 on CPU 0
 *  2100..2300 beside it: 200 ns of two vCPUs of the same VM (400 vCPU-ns).
 * VM 100: CPU 0 700 ns, CPU 1 500 ns; VM 200: CPU 1 500 ns.
 */
static void scenario(void)
{
	inject(VCPUSTAT_EV_SEED, 10, 0, 101, 100, 0, 0, 0);
	inject(VCPUSTAT_EV_SEED, 10, 0, 102, 100, 0, 1, 0);
	inject(VCPUSTAT_EV_SEED, 10, 0, 201, 200, 0, 0, 0);
	SWITCH(1000, 0, 0, 101);
	SWITCH(1100, 1, 0, 201);
	SWITCH(1500, 0, 101, 0);
	SWITCH(1600, 1, 201, 0);
	inject(VCPUSTAT_EV_NUMA_MOVE, 1890, 0, 101, 100, 0, 0, 1); /* the NUMA balancer moves it */
	inject(VCPUSTAT_EV_NUMA_MOVE, 1895, 0, 999, 900, 0, 0, 1); /* a thread of no VM: nothing */
	inject(VCPUSTAT_EV_WAKEUP, 1900, 0, 101, 100, 0, 1, 0);
	SWITCH(2000, 1, 0, 101);
	SWITCH(2100, 0, 0, 102);
	SWITCH(2300, 0, 102, 0);
	SWITCH(2500, 1, 101, 0);
}

static __u64 place_ns(__u32 tgid, __u32 cpu)
{
	struct vcpustat_place_key k = {.tgid = tgid, .cpu = cpu};
	__u64 ns = 0;

	bpf_map_lookup_elem(vcpustat_map_fd(vs, "vm_cpu"), &k, &ns);
	return ns;
}

Test(place_live, time_per_cpu_moves_across_nodes_and_smt_sharing_are_exact)
{
	struct vcpustat_vm a, b;
	struct vcpustat_vcpu v;
	__u32 key;

	set_topology();
	scenario();
	cr_assert_eq(place_ns(100, 0), 700);
	cr_assert_eq(place_ns(100, 1), 500);
	cr_assert_eq(place_ns(200, 1), 500);
	cr_assert_eq(place_ns(200, 0), 0);
	key = 100;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &key, &a), 0);
	key = 200;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &key, &b), 0);
	cr_assert_eq(a.smt_other_ns, 400, "101 beside 201, 1100..1500");
	cr_assert_eq(b.smt_other_ns, 400);
	cr_assert_eq(a.smt_same_ns, 400, "101 and 102 side by side 2100..2300: 2 x 200 vCPU-ns");
	cr_assert_eq(b.smt_same_ns, 0);
	key = 101;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpus"), &key, &v), 0);
	cr_assert_eq(v.fsm.migrations, 1);
	cr_assert_eq(v.cross_node, 1);
	cr_assert_eq(v.cross_llc, 1);
	cr_assert_eq(v.numa_moves, 1, "NUMA balancing's move");
	key = 102;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpus"), &key, &v), 0);
	cr_assert_eq(v.cross_node, 0, "its first CPU is no move");
}

Test(place_live, without_a_topology_only_the_time_per_cpu_is_known)
{
	struct vcpustat_vm a;
	struct vcpustat_vcpu v;
	__u32 key = 100;

	scenario();
	cr_assert_eq(place_ns(100, 0), 700);
	cr_assert_eq(place_ns(100, 1), 500);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &key, &a), 0);
	cr_assert_eq(a.smt_other_ns + a.smt_same_ns, 0);
	key = 101;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpus"), &key, &v), 0);
	cr_assert_eq(v.fsm.migrations, 1);
	cr_assert_eq(v.cross_node + v.cross_llc, 0);
	cr_assert_eq(v.numa_moves, 1, "NUMA balancing's moves need no topology");
}

Test(place_live, the_summary_and_its_outputs_give_the_window)
{
	int node[] = {0, 1}, llc[] = {0, 1}, core[] = {0, 0};
	struct cpu_topology topo = {.nr_cpus = 2, .node = node, .llc = llc, .core = core};
	struct vcpustat_snapshot s0, s1;
	const struct vm_summary *a;
	struct summary s;
	struct names n;
	json_t *doc, *p;
	char *text;
	size_t len;
	FILE *f;

	set_topology();
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	cr_assert_eq(vcpustat_snapshot(vs, &s0), 0);
	scenario();
	cr_assert_eq(vcpustat_snapshot(vs, &s1), 0);
	cr_assert_eq(summary_build(&s, &s0, &s1, &n, NULL), 0);
	s.topo = &topo;
	cr_assert_eq(s.nr_vms, 2);
	a = &s.vms[0];
	cr_assert_eq(a->tgid, 100);
	cr_assert(a->place.known);
	cr_assert_eq(a->place.nr_cpus, 2);
	cr_assert_eq(a->place.cpus[0].cpu, 0);
	cr_assert_eq(a->place.cpus[0].ns, 700);
	cr_assert_eq(a->place.cpus[1].ns, 500);
	cr_assert_eq(a->place.cross_node, 1);
	cr_assert_eq(a->place.cross_llc, 1);
	cr_assert_eq(a->place.numa_moves, 1);
	cr_assert_eq(s.vms[1].place.numa_moves, 0);
	cr_assert_eq(a->place.smt_other_ns, 400);
	cr_assert_eq(a->place.smt_same_ns, 400);
	cr_assert_eq(s.vms[1].place.smt_other_ns, 400);

	/* JSON: per node and cache with the host's topology */
	doc = summary_json_checked(&s);
	p = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "placement");
	cr_assert_not_null(p);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(p, "node_ns"), "0")), 700);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(p, "node_ns"), "1")), 500);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(p, "llc_ns"), "1")), 500);
	cr_assert_eq(json_integer_value(json_object_get(p, "cross_node_migrations")), 1);
	cr_assert_eq(json_integer_value(json_object_get(p, "numa_balancing_moves")), 1);
	cr_assert_eq(json_integer_value(json_object_get(p, "smt_other_vm_ns")), 400);
	cr_assert_eq(json_integer_value(json_object_get(p, "smt_same_vm_ns")), 400);
	json_decref(doc);

	/* text: the VM's placement line */
	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	cr_assert_not_null(strstr(text, "PLACEMENT  node 0 58.3 %, node 1 41.7 %"), "%s", text);
	cr_assert_not_null(strstr(text, "1 migration across nodes, 1 across caches, 1 by NUMA balancing;"), "%s", text);
	free(text);

	/* the ncurses view's panel of the VM: its placement section, the same lines */
	{
		struct panel_line lines[32];
		size_t nl = vm_panel_lines(&s, a, lines, 32), at = nl;

		for (size_t i = 0; i < nl; i++)
			if (!strcmp(lines[i].text, "PLACEMENT"))
				at = i;
		cr_assert_eq(at + 5, nl, "a PLACEMENT header and 4 lines, the last (%zu lines)", nl);
		cr_assert(lines[at].bold);
		cr_assert_str_eq(lines[at + 1].text, "node 0 58.3 %, node 1 41.7 %");
		cr_assert_str_eq(lines[at + 3].text, "1 migration across nodes, 1 across caches, 1 by NUMA balancing");
		cr_assert_not_null(strstr(lines[at + 4].text, "SMT: "), "%s", lines[at + 4].text);
		cr_assert_eq(vm_panel_lines(&s, a, lines, 2), 2, "no more lines than asked for");
	}

	/* the exporters: per node and cache, moves, SMT */
	{
		struct metrics *m = metrics_new(NULL);
		char *out = NULL;
		size_t olen = 0;

		cr_assert_not_null(m);
		cr_assert_eq(metrics_add(m, &s), 0);
		cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &out, &olen), 0);
		cr_assert_not_null(
		    strstr(out, "vcpustat_placement_node_seconds_total{vm=\"pid 100\",node=\"0\"} 0.000000700"), "%s",
		    out);
		cr_assert_not_null(
		    strstr(out, "vcpustat_placement_llc_seconds_total{vm=\"pid 100\",llc=\"1\"} 0.000000500"), "%s",
		    out);
		cr_assert_not_null(strstr(out, "vcpustat_placement_migrations_total{vm=\"pid 100\",across=\"node\"} 1"),
				   "%s", out);
		ASSERT_HOLDS("Prometheus", out, "vcpustat_placement_numa_balancing_moves_total{vm=\"pid 100\"} 1\n",
			     "vcpustat_placement_numa_balancing_moves_total{vm=\"pid 200\"} 0\n");
		cr_assert_not_null(
		    strstr(out, "vcpustat_placement_smt_seconds_total{vm=\"pid 200\",beside=\"other_vm\"} 0.000000400"),
		    "%s", out);
		free(out);
		/* CSV: node, llc, across and beside have their columns (after result) */
		cr_assert_eq(metrics_render(m, METRICS_CSV, &out, &olen), 0);
		ASSERT_HOLDS("CSV", out, "vcpustat_placement_node_seconds_total,pid 100,,,,,,,,,,,,,,,0,,,,,,0.000000700\n",
			     "vcpustat_placement_llc_seconds_total,pid 100,,,,,,,,,,,,,,,,1,,,,,0.000000500\n",
			     "vcpustat_placement_migrations_total,pid 100,,,,,,,,,,,,,,,,,node,,,,1\n",
			     "vcpustat_placement_smt_seconds_total,pid 200,,,,,,,,,,,,,,,,,,other_vm,,,0.000000400\n");
		free(out);
		/* JSON: the same seconds by node and cache id, the ids without time left out */
		cr_assert_eq(metrics_render(m, METRICS_JSON, &out, &olen), 0);
		{
			json_t *doc, *vm = NULL, *p;
			size_t i;

			expect_janssons_text(out, olen - 1); /* without its newline */
			doc = json_loads(out, 0, NULL);

			json_array_foreach (json_object_get(doc, "vms"), i, vm)
				if (!strcmp(json_string_value(json_object_get(vm, "vm")), "pid 100"))
					break;
			cr_assert_not_null(vm, "%s", out);
			p = json_object_get(vm, "placement");
			cr_assert_float_eq(json_real_value(json_object_get(json_object_get(p, "node_seconds"), "0")), 7e-7, 1e-15);
			cr_assert_eq(json_object_size(json_object_get(p, "node_seconds")), 2, "%s", out);
			cr_assert_float_eq(json_real_value(json_object_get(json_object_get(p, "llc_seconds"), "1")), 5e-7, 1e-15);
			cr_assert_eq(json_integer_value(json_object_get(p, "cross_node_migrations")), 1);
			json_decref(doc);
		}
		free(out);
		metrics_free(m);
	}
	summary_free(&s);
	vcpustat_snapshot_free(&s0);
	vcpustat_snapshot_free(&s1);
	names_free(&n);
}
