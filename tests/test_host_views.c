// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The host's side of a recording, exact on recordings written here with
 * known states and CPUs:
 * - report --placement (user/model/placement.c): per VM, vCPU-time per NUMA
 *   node and last-level cache, migrations across them, SMT time beside
 *   another VM's vCPU, and the balancing move; the topology from a
 *   recording's metadata and from a sysfs tree, malformed metadata refused
 *   by offset;
 * - report --pcpu (user/model/pcpu.c) and plot --timeline (plot_gantt.c);
 * - the VMM's other threads in report (user/model/report.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli_run.h"
#include "helpers.h"
#include "model/summary.h"
#include "model/report.h"
#include "model/placement.h"
#include "model/pcpu.h"
#include "record/record.h"

#define S 1000000000ull

struct step {
	const char *vm;
	int pid, vcpu;
	uint64_t t;
	int state, pcpu; /* -1: unchanged */
};

/* A recording of [0, end) with the steps (in time order) and this topology metadata. */
static void write_rec(const char *path, const char *nodes, const char *llcs, const char *smt, const struct step *st,
		      size_t n, uint64_t end)
{
	struct sht_meta meta[4] = { { "level", "vcpu" } };
	struct sht_writer_opts o = { .no_sync = true, .meta = meta };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	size_t nm = 1;

	if (nodes)
		meta[nm++] = (struct sht_meta){ "topology.nodes", nodes };
	if (llcs)
		meta[nm++] = (struct sht_meta){ "topology.llcs", llcs };
	if (smt)
		meta[nm++] = (struct sht_meta){ "topology.smt", smt };
	o.nmeta = nm;
	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		char p[256];
		uint32_t a;

		snprintf(p, sizeof(p), "/vms/%s/pid", st[i].vm);
		cr_assert_eq(sht_writer_attr(w, p, &a), 0);
		if (st[i].t == 0 && st[i].vcpu == 0)
			cr_assert_eq(sht_writer_set_int(w, a, 0, st[i].pid), 0);
		if (st[i].state >= 0) {
			snprintf(p, sizeof(p), "/vms/%s/vcpus/%d/state", st[i].vm, st[i].vcpu);
			cr_assert_eq(sht_writer_attr(w, p, &a), 0);
			cr_assert_eq(sht_writer_set_int(w, a, st[i].t, st[i].state), 0);
		}
		if (st[i].pcpu >= 0) {
			snprintf(p, sizeof(p), "/vms/%s/vcpus/%d/pcpu", st[i].vm, st[i].vcpu);
			cr_assert_eq(sht_writer_attr(w, p, &a), 0);
			cr_assert_eq(sht_writer_set_int(w, a, st[i].t, st[i].pcpu), 0);
		}
	}
	cr_assert_eq(sht_writer_close(w, end, &err), 0, "%s", err.msg);
}

static void build(struct placement *p, const char *path, uint64_t t1, uint64_t t2, const char *vm,
		  const struct cpu_topology *host)
{
	struct vcpustat_error err = { 0 };
	const char *vms[1] = { vm };
	struct summary_filter f = { vms, vm ? 1 : 0 };
	struct sht_reader *r;

	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(placement_build(p, r, t1, t2, &f, host, &err), 0, "%s", err.msg);
	sht_close(r);
}

static const struct placement_vm *vm_named(const struct placement *p, const char *name)
{
	for (size_t i = 0; i < p->nr_vms; i++)
		if (!strcmp(p->vms[i].name, name))
			return &p->vms[i];
	cr_assert_fail("no VM %s in the placement", name);
	return NULL;
}

/*
 * 8 CPUs: nodes 0-3 and 4-7; last-level caches 0-1, 2-3, 4-7; cores (SMT
 * siblings) 0+2, 1+3, 4+5, 6+7. Over 10 s:
 *   web1 vCPU 0: guest on CPU 0 [0, 4), moves to CPU 1 (same node and cache)
 *     and runs [4, 6), is preempted [6, 7), moves to CPU 4 (other node, other
 *     cache) and runs [7, 10): 9 s on a CPU, 2 migrations, 1 across nodes and caches.
 *   web1 vCPU 1: in the hypervisor on CPU 5 all along (10 s).
 *   db vCPU 0: guest on CPU 2 [0, 5), then idle.
 * SMT: web1 vCPU 0 on CPU 0 beside db on CPU 2 for [0, 4): 4 s next to
 * another VM (db too: 4 s); on CPU 4 beside its own vCPU 1 on CPU 5 for
 * [7, 10), which sees the same 3 s: web1 has 6 s beside its own VM.
 */
static const struct step two_vms[] = {
	{ "web1", 100, 0, 0, 1, 0 },	  { "web1", 100, 1, 0, 2, 5 },	    { "db", 200, 0, 0, 1, 2 },
	{ "web1", 100, 0, 4 * S, -1, 1 }, { "db", 200, 0, 5 * S, 5, -1 },   { "web1", 100, 0, 6 * S, 3, -1 },
	{ "web1", 100, 0, 7 * S, 1, 4 },
};
#define NODES "0:0-3;1:4-7"
#define LLCS "0-1;2-3;4-7"
#define SMT "0,2;1,3;4,5;6,7"

Test(placement, per_node_cache_migrations_and_smt_are_exact)
{
	char path[] = "/tmp/vcpustat-placement-XXXXXX";
	const struct placement_vm *web1, *db;
	struct placement p;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_rec(path, NODES, LLCS, SMT, two_vms, sizeof(two_vms) / sizeof(two_vms[0]), 10 * S);
	build(&p, path, 0, 10 * S, NULL, NULL);
	cr_assert_str_eq(p.topo_source, "recording");
	cr_assert(p.has_nodes && p.has_llcs && p.has_smt);
	cr_assert_eq(p.nr_nodes, 2);
	cr_assert_eq(p.nr_llcs, 3);
	cr_assert_eq(p.node_cpus[0], 4);
	cr_assert_eq(p.node_cpus[1], 4);
	web1 = vm_named(&p, "web1");
	db = vm_named(&p, "db");
	cr_assert_eq(web1->pid, 100);
	cr_assert_eq(web1->vcpus, 2);
	cr_assert_eq(web1->run_ns, 19 * S);
	cr_assert_eq(web1->node_ns[0], 6 * S);
	cr_assert_eq(web1->node_ns[1], 13 * S);
	cr_assert_eq(web1->llc_ns[0], 6 * S);
	cr_assert_eq(web1->llc_ns[1], 0);
	cr_assert_eq(web1->llc_ns[2], 13 * S);
	cr_assert_eq(web1->migrations, 2);
	cr_assert_eq(web1->cross_node, 1);
	cr_assert_eq(web1->cross_llc, 1);
	cr_assert_eq(web1->smt_other_vm_ns, 4 * S);
	cr_assert_eq(web1->smt_same_vm_ns, 6 * S);
	cr_assert_eq(db->run_ns, 5 * S);
	cr_assert_eq(db->node_ns[0], 5 * S);
	cr_assert_eq(db->llc_ns[1], 5 * S);
	cr_assert_eq(db->migrations, 0);
	cr_assert_eq(db->smt_other_vm_ns, 4 * S);
	cr_assert_eq(db->smt_same_vm_ns, 0);
	cr_assert_eq(p.node_ns[0], 11 * S);
	cr_assert_eq(p.node_ns[1], 13 * S);
	/* 27.5 % and 32.5 %: 5 points apart, no move */
	cr_assert_eq(p.move.vm, -1);
	cr_assert_float_eq(p.move.spread, 0.05, 1e-9);
	placement_free(&p);

	/* a window: [3 s, 8 s) */
	build(&p, path, 3 * S, 8 * S, NULL, NULL);
	web1 = vm_named(&p, "web1");
	cr_assert_eq(web1->run_ns, (1 + 2 + 1) * S + 5 * S);
	cr_assert_eq(web1->migrations, 2);
	cr_assert_eq(web1->smt_other_vm_ns, 1 * S);
	cr_assert_eq(web1->smt_same_vm_ns, 2 * S);
	placement_free(&p);

	/* only web1: db's vCPU still counts as another VM beside it, and in the nodes' load */
	build(&p, path, 0, 10 * S, "web1", NULL);
	cr_assert_eq(p.nr_vms, 1);
	cr_assert_eq(p.vms[0].smt_other_vm_ns, 4 * S);
	cr_assert_eq(p.node_ns[0], 11 * S);
	placement_free(&p);
	unlink(path);
}

/*
 * The kernel's NUMA balancing in a recording: its moves of a vCPU
 * (sched_move_numa / sched_swap_numa, EV_NUMA_MOVE) through the handler and
 * the recorder (REC_NUMA_MOVE, attribute numa_moves), counted by report
 * --placement in the window. vCPU 0 of VM 70 is moved at 2 us and 5 us; a
 * thread that is no vCPU is moved at 3 us and counts nowhere.
 */
static struct vcpustat_event numa_ev(__u64 type, __u64 ts, __u32 tid, __u64 a0, __u64 a1)
{
	struct vcpustat_event e = { .type = type, .ts = ts, .tid = tid, .tgid = tid == 71 ? 70 : tid, .arg0 = a0,
				    .arg1 = a1 };

	snprintf(e.comm, sizeof(e.comm), tid == 71 ? "CPU 0/KVM" : "worker");
	return e;
}

Test(placement, numa_balancing_moves_are_recorded_and_counted_in_the_window)
{
	const struct vcpustat_event evs[] = {
		numa_ev(VCPUSTAT_EV_KVM_ENTRY, 1000, 71, 0, 0),	     numa_ev(VCPUSTAT_EV_NUMA_MOVE, 2000, 71, 0, 1),
		numa_ev(VCPUSTAT_EV_NUMA_MOVE, 3000, 999, 0, 1),    numa_ev(VCPUSTAT_EV_NUMA_MOVE, 5000, 71, 1, 0),
		numa_ev(VCPUSTAT_EV_KVM_EXIT, 9000, 71, 30, 0),
	};
	char path[] = "/tmp/vcpustat-numa-XXXXXX";
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	replay_to_sht(evs, sizeof(evs) / sizeof(evs[0]), 70, "numa", 10000, path);
	{
		struct vcpustat_error err = { 0 };
		struct sht_interval *iv = NULL;
		struct sht_reader *rd;
		size_t n = 0;
		uint32_t a;

		cr_assert_eq(sht_open(&rd, path, &err), 0, "%s", err.msg);
		cr_assert_eq(sht_attr_lookup(rd, "/vms/numa/vcpus/0/numa_moves", &a), 0, "the attribute is made");
		cr_assert_eq(sht_query_range(rd, a, NULL, sht_get_info(rd)->start, sht_get_info(rd)->end, &iv, &n, &err),
			     0, "%s", err.msg);
		while (n && iv[n - 1].value.type == SHT_NULL) /* the file's end */
			n--;
		cr_assert_eq(n, 2, "one value per move of the vCPU");
		cr_assert_eq(iv[0].value.i, 1);
		cr_assert_eq(iv[1].value.i, 2);
		cr_assert_eq(iv[1].start - iv[0].start, 3000, "at 2 us and 5 us");
		free(iv);
		sht_close(rd);
	}
	RUN(&r, "report", path, "--placement");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "NUMA-b"), "%s", r.out);
	RUN(&r, "report", path, "--placement", "-j");
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		json_error_t je;
		json_t *doc = json_loads(r.out, 0, &je), *vm;

		cr_assert_not_null(doc, "%s: %s", je.text, r.out);
		vm = json_array_get(json_object_get(json_object_get(doc, "placement"), "vms"), 0);
		cr_assert_eq(json_integer_value(json_object_get(vm, "numa_balancing_moves")), 2, "%s", r.out);
		json_decref(doc);
	}
	/* a window holding the second move only */
	RUN(&r, "report", path, "--placement", "-j", "--from", "4000");
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		json_error_t je;
		json_t *doc = json_loads(r.out, 0, &je), *vm;

		cr_assert_not_null(doc, "%s: %s", je.text, r.out);
		vm = json_array_get(json_object_get(json_object_get(doc, "placement"), "vms"), 0);
		cr_assert_eq(json_integer_value(json_object_get(vm, "numa_balancing_moves")), 1, "%s", r.out);
		json_decref(doc);
	}
	unlink(path);
}

/*
 * node 0 full (big: 3 vCPUs, small: 1), node 1 one busy vCPU (other): 100 %
 * and 25 %. Moving big would only swap the nodes (25 % and 100 %); moving
 * small gives 75 % and 50 %: suggested, with its arithmetic.
 */
Test(placement, suggests_the_move_that_balances_the_nodes)
{
	static const struct step st[] = {
		{ "big", 1, 0, 0, 1, 0 }, { "big", 1, 1, 0, 1, 1 }, { "big", 1, 2, 0, 1, 3 },
		{ "small", 2, 0, 0, 1, 2 }, { "other", 3, 0, 0, 1, 4 },
	};
	char path[] = "/tmp/vcpustat-placement-XXXXXX", *line;
	struct placement p;
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_rec(path, NODES, NULL, NULL, st, sizeof(st) / sizeof(st[0]), 10 * S);
	build(&p, path, 0, 10 * S, NULL, NULL);
	cr_assert(!p.has_llcs && !p.has_smt);
	cr_assert_geq(p.move.vm, 0);
	cr_assert_str_eq(p.vms[p.move.vm].name, "small");
	cr_assert_eq(p.node_ids[p.move.from], 0);
	cr_assert_eq(p.node_ids[p.move.to], 1);
	cr_assert_float_eq(p.move.hot_util, 1.0, 1e-9);
	cr_assert_float_eq(p.move.cold_util, 0.25, 1e-9);
	cr_assert_float_eq(p.move.hot_after, 0.75, 1e-9);
	cr_assert_float_eq(p.move.cold_after, 0.50, 1e-9);
	placement_free(&p);

	RUN(&r, "report", path, "--placement");
	cr_assert_eq(r.status, 0, "%s", r.err);
	line = strstr(r.out, "move small");
	cr_assert_not_null(line, "%s", r.out);
	cr_assert(!strncmp(line,
			   "move small (1.00 busy vCPUs on node 0) to node 1: node 0 (4.00 - 1.00) / 4 = 75.0%, node 1 "
			   "(1.00 + 1.00) / 4 = 50.0%: 25.0 points apart\n",
			   strlen("move small (1.00 busy vCPUs on node 0) to node 1: node 0 (4.00 - 1.00) / 4 = 75.0%, "
				  "node 1 (1.00 + 1.00) / 4 = 50.0%: 25.0 points apart\n")),
		  "%s", r.out);
	cr_assert_not_null(strstr(r.out, "last-level caches not known, SMT not known"), "%s", r.out);

	RUN(&r, "report", path, "--placement", "-j", "--vm", "big");
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		json_error_t je;
		json_t *doc = json_loads(r.out, 0, &je), *pl, *vm;

		cr_assert_not_null(doc, "%s: %s", je.text, r.out);
		pl = json_object_get(doc, "placement");
		cr_assert_str_eq(json_string_value(json_object_get(pl, "topology")), "recording");
		cr_assert_eq(json_array_size(json_object_get(pl, "vms")), 1);
		vm = json_array_get(json_object_get(pl, "vms"), 0);
		cr_assert_str_eq(json_string_value(json_object_get(vm, "vm")), "big");
		cr_assert_eq(json_integer_value(json_object_get(vm, "run_ns")), 30 * S);
		cr_assert(json_is_null(json_object_get(vm, "smt_other_vm_ns")), "no SMT topology: null, not 0");
		cr_assert(json_is_null(json_object_get(vm, "llcs")));
		cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(vm, "nodes"), 0), "ns")),
			     30 * S);
		/* only big may move: moving it swaps the nodes, no gain */
		cr_assert(json_is_null(json_object_get(pl, "move")), "%s", r.out);
		cr_assert_eq(json_integer_value(json_object_get(doc, "to_ns")), 10 * S);
		json_decref(doc);
	}
	unlink(path);
}

/*
 * Live (`top -b`, `-j`): the same balance over a window's summary, from each
 * VM's per-CPU vCPU time and the host's topology. Two nodes of two CPUs, a
 * 1 s window: a 0.9 + 0.9 s on node 0, b 0.5 s on node 0, c 0.2 s on node 1:
 * node 0 runs 2.3 busy vCPUs (115 %), node 1 0.2 (10 %); moving b leaves
 * 90 % and 35 % (55 points), moving a 25 % and 100 % (75): b moves.
 */
Test(placement, the_live_window_suggests_the_move_too)
{
	int node[] = { 0, 0, 1, 1 }, llc[] = { 0, 0, 1, 1 }, core[] = { 0, 1, 2, 3 };
	struct cpu_topology topo = { .nr_cpus = 4, .node = node, .llc = llc, .core = core };
	struct place_cpu pa[] = { { 0, 900000000 }, { 1, 900000000 } }, pb[] = { { 0, 500000000 } },
			 pc[] = { { 2, 200000000 } };
	struct vcpu_summary va[2] = { { .ns = { [VCPU_GUEST] = 900000000 } }, { .ns = { [VCPU_HOST] = 900000000 } } },
			    vb = { .ns = { [VCPU_GUEST] = 500000000 } }, vc = { .ns = { [VCPU_GUEST] = 200000000 } };
	struct vm_summary vms[3] = {
		{ .tgid = 10, .name = "a", .vcpus = va, .nr_vcpus = 2, .migrations = 3,
		  .place = { .known = true, .cpus = pa, .nr_cpus = 2, .cross_node = 1 } },
		{ .tgid = 20, .name = "b", .vcpus = &vb, .nr_vcpus = 1, .place = { .known = true, .cpus = pb, .nr_cpus = 1 } },
		{ .tgid = 30, .name = "c", .vcpus = &vc, .nr_vcpus = 1, .place = { .known = true, .cpus = pc, .nr_cpus = 1 } },
	};
	struct summary s = { .t0 = 5000000000ull, .t1 = 6000000000ull, .seconds = 1.0, .vms = vms, .nr_vms = 3,
			     .topo = &topo };
	const char *want = "  move b (0.50 busy vCPUs on node 0) to node 1: node 0 (2.30 - 0.50) / 2 = 90.0%, node 1 "
			   "(0.20 + 0.50) / 2 = 35.0%: 55.0 points apart\n";
	struct placement p;
	char *text = NULL;
	size_t len = 0;
	json_t *doc, *b, *mv;
	FILE *f;

	cr_assert_eq(placement_from_summary(&p, &s), 0);
	cr_assert_str_eq(p.topo_source, "host");
	cr_assert_eq(p.nr_vms, 3);
	cr_assert_eq(p.vms[0].vcpus, 2);
	cr_assert_eq(p.vms[0].run_ns, 1800000000ull);
	cr_assert_eq(p.vms[0].node_ns[0], 1800000000ull);
	cr_assert_eq(p.vms[0].migrations, 3);
	cr_assert_eq(p.vms[0].cross_node, 1);
	cr_assert_eq(p.node_ns[0], 2300000000ull);
	cr_assert_eq(p.node_ns[1], 200000000ull);
	cr_assert_geq(p.move.vm, 0);
	cr_assert_str_eq(p.vms[p.move.vm].name, "b");
	cr_assert_float_eq(p.move.hot_util, 1.15, 1e-9);
	cr_assert_float_eq(p.move.cold_util, 0.10, 1e-9);
	cr_assert_float_eq(p.move.hot_after, 0.90, 1e-9);
	cr_assert_float_eq(p.move.cold_after, 0.35, 1e-9);
	placement_free(&p);

	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	ASSERT_HOLDS("top -b", text, "\nHOST PLACEMENT (the VMs shown, over this interval)\nNUMA node",
		     "  utilization      115.0%      10.0%\n", want);
	free(text);

	doc = summary_json_checked(&s);
	b = json_object_get(doc, "balance");
	cr_assert_not_null(b, "-j: the balance");
	cr_assert_eq(json_array_size(json_object_get(b, "nodes")), 2);
	cr_assert_float_eq(json_real_value(json_object_get(json_array_get(json_object_get(b, "nodes"), 0), "busy_vcpus")),
			   2.3, 1e-9);
	mv = json_object_get(b, "move");
	cr_assert_str_eq(json_string_value(json_object_get(mv, "vm")), "b");
	cr_assert_eq(json_integer_value(json_object_get(mv, "to_node")), 1);
	json_decref(doc);

	/* one node: no balance in either */
	node[2] = node[3] = 0;
	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	cr_assert_null(strstr(text, "HOST PLACEMENT"), "%s", text);
	free(text);
	doc = summary_json_checked(&s);
	cr_assert_null(json_object_get(doc, "balance"));
	json_decref(doc);
}

Test(placement, a_recording_without_topology_says_so_and_host_topology_fills_in)
{
	char path[] = "/tmp/vcpustat-placement-XXXXXX";
	struct cpu_topology host;
	const char *const none[TOPOLOGY_NR_KEYS] = { NULL, NULL, NULL };
	const char *const v[TOPOLOGY_NR_KEYS] = { NODES, LLCS, SMT };
	struct vcpustat_error err = { 0 };
	struct placement p;
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_rec(path, NULL, NULL, NULL, two_vms, sizeof(two_vms) / sizeof(two_vms[0]), 10 * S);
	cr_assert_eq(topology_from_meta(&host, none, &err), -ENOENT);
	build(&p, path, 0, 10 * S, NULL, NULL);
	cr_assert_null(p.topo_source);
	cr_assert_eq(vm_named(&p, "web1")->run_ns, 19 * S, "the per-VM counts need no topology");
	cr_assert_eq(vm_named(&p, "web1")->migrations, 2);
	placement_free(&p);
	RUN(&r, "report", path, "--placement");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "no CPU topology in this recording"), "%s", r.out);

	cr_assert_eq(topology_from_meta(&host, v, &err), 0, "%s", err.msg);
	build(&p, path, 0, 10 * S, NULL, &host);
	cr_assert_str_eq(p.topo_source, "host");
	cr_assert_eq(vm_named(&p, "web1")->smt_other_vm_ns, 4 * S);
	cr_assert_eq(vm_named(&p, "web1")->cross_node, 1);
	placement_free(&p);
	topology_free(&host);

	RUN(&r, "report", path, "--host-topology");
	cr_assert_eq(r.status, 2, "--host-topology alone is a usage error: %s", r.err);
	cr_assert_not_null(strstr(r.err, "--host-topology goes with --placement"), "%s", r.err);
	unlink(path);
}

Test(placement, malformed_topology_metadata_is_refused_with_its_key_and_offset)
{
	static const struct {
		const char *nodes, *llcs, *smt, *msg;
	} bad[] = {
		{ "0:0-3;1:4-x", NULL, NULL, "metadata topology.nodes: offset 10: not a CPU list" },
		{ "0-3", NULL, NULL, "metadata topology.nodes: offset 0: expected NODE:CPULIST" },
		{ "0:0-3;1:3-7", NULL, NULL, "metadata topology.nodes: offset 6: a CPU in two groups" },
		{ NODES, "0-1;2-3;", NULL, "metadata topology.llcs: offset 8: empty group" },
		{ NODES, "7-4", NULL, "metadata topology.llcs: offset 0: not a CPU list" },
		{ NODES, NULL, "0,,2", "metadata topology.smt: offset 2: not a CPU list" },
	};
	char path[] = "/tmp/vcpustat-placement-XXXXXX";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const v[TOPOLOGY_NR_KEYS] = { bad[i].nodes, bad[i].llcs, bad[i].smt };
		struct vcpustat_error err = { 0 };
		struct cpu_topology t;
		struct run r;
		int fd = mkstemp(path);

		cr_assert_eq(topology_from_meta(&t, v, &err), -EINVAL, "case %zu accepted", i);
		cr_assert(!strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)), "case %zu: %s", i, err.msg);
		cr_assert_geq(fd, 0);
		close(fd);
		write_rec(path, bad[i].nodes, bad[i].llcs, bad[i].smt, two_vms, 3, 10 * S);
		RUN(&r, "report", path, "--placement");
		cr_assert_eq(r.status, 1, "case %zu: %s", i, r.out);
		cr_assert_not_null(strstr(r.err, path), "the message names the file: %s", r.err);
		cr_assert_not_null(strstr(r.err, bad[i].msg), "case %zu: %s", i, r.err);
		cr_assert_eq(r.out[0], 0, "nothing on stdout: %s", r.out);
		unlink(path);
		strcpy(path, "/tmp/vcpustat-placement-XXXXXX");
	}
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* sysfs as the kernel lays it out (4 CPUs, 2 nodes, an L3 per node, SMT pairs 0+2 and 1+3) into metadata */
Test(placement, sysfs_topology_becomes_the_recordings_metadata)
{
	char root[] = "/tmp/vcpustat-sysfs-XXXXXX", rel[256], v[1024], cmd[600];
	static const char *const sib[] = { "0,2", "1,3", "0,2", "1,3" }, *const l3[] = { "0-1", "0-1", "2-3", "2-3" };
	struct record_meta *m = calloc(1, sizeof(*m));
	struct vcpustat_error err = { 0 };
	struct cpu_topology t;

	cr_assert_not_null(mkdtemp(root));
	put(root, "devices/system/cpu/possible", "0-3");
	put(root, "devices/system/node/node0/cpulist", "0-1");
	put(root, "devices/system/node/node1/cpulist", "2-3");
	put(root, "devices/system/node/online", "0-1"); /* not a node directory */
	for (int c = 0; c < 4; c++) {
		/* an L1 data cache per core, an L3 per node: the L3 is the last level */
		const char *const files[][2] = {
			{ "topology/thread_siblings_list", sib[c] }, { "cache/index0/level", "1" },
			{ "cache/index0/type", "Data" },	       { "cache/index0/shared_cpu_list", sib[c] },
			{ "cache/index1/level", "3" },		       { "cache/index1/type", "Unified" },
			{ "cache/index1/shared_cpu_list", l3[c] },
		};

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/%s", c, files[i][0]);
			put(root, rel, files[i][1]);
		}
	}
	cr_assert_eq(topology_read_sysfs(&t, root, &err), 0, "%s", err.msg);
	cr_assert_eq(t.nr_cpus, 4);
	cr_assert_eq(topology_meta(&t, TOPOLOGY_NODES, v, sizeof(v)), 0);
	cr_assert_str_eq(v, "0:0-1;1:2-3");
	cr_assert_eq(topology_meta(&t, TOPOLOGY_LLCS, v, sizeof(v)), 0);
	cr_assert_str_eq(v, "0-1;2-3");
	cr_assert_eq(topology_meta(&t, TOPOLOGY_SMT, v, sizeof(v)), 0);
	cr_assert_str_eq(v, "0,2;1,3");
	cr_assert_eq(topology_meta(&t, TOPOLOGY_SMT, v, 5), -E2BIG, "a value that does not fit is not cut");
	cr_assert_str_eq(v, "");
	topology_free(&t);

	/* what record keeps: the three keys, and nothing for what sysfs does not say */
	record_meta_topology(m, root);
	cr_assert_eq(m->n, 3);
	cr_assert_str_eq(m->key[2], "topology.smt");
	cr_assert_str_eq(m->value[2], "0,2;1,3");
	snprintf(cmd, sizeof(cmd), "rm -r %s/devices/system/cpu/cpu*/cache %s/devices/system/node", root, root);
	cr_assert_eq(system(cmd), 0);
	m->n = 0;
	record_meta_topology(m, root);
	cr_assert_eq(m->n, 1, "no nodes, no caches in sysfs: only topology.smt");
	cr_assert_str_eq(m->key[0], "topology.smt");
	snprintf(cmd, sizeof(cmd), "rm -r %s", root);
	cr_assert_eq(system(cmd), 0);
	free(m);
}

/* ---- report --pcpu (user/model/pcpu.c) ---- */

struct set {
	uint64_t t;
	const char *path;
	int64_t i;
	const char *s; /* a string value instead of i */
};

static void write_sets(const char *path, const struct set *st, size_t n, uint64_t end)
{
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		uint32_t a;

		cr_assert_eq(sht_writer_attr(w, st[i].path, &a), 0);
		if (st[i].s)
			cr_assert_eq(sht_writer_set_str(w, a, st[i].t, st[i].s), 0);
		else
			cr_assert_eq(sht_writer_set_int(w, a, st[i].t, st[i].i), 0);
	}
	cr_assert_eq(sht_writer_close(w, end, &err), 0, "%s", err.msg);
}

/*
 * CPU 0: web1's vCPU 0 (tid 101) in guest code [0, 3), in the hypervisor
 * [3, 4), preempted by the hog (tid 500) [4, 6), guest again [6, 10).
 * CPU 1: idle but for web1's VMM thread qemu-io (tid 102, pid 100) [5, 7).
 * With the host side (level full) every CPU's 10 s are accounted for; without
 * it, what only current_tid tells is unknown.
 */
static const struct set fused[] = {
	{ 0, "/vms/web1/pid", 100 },
	{ 0, "/vms/web1/vcpus/0/tid", 101 },
	{ 0, "/vms/web1/vcpus/0/pcpu", 0 },
	{ 0, "/vms/web1/vcpus/0/state", 1 },
	{ 0, "/host/cpus/0/current_tid", 101 },
	{ 0, "/host/cpus/1/current_tid", 0 },
	{ 0, "/host/threads/500/name", 0, "hog" },
	{ 0, "/host/threads/500/pid", 500 },
	{ 0, "/host/threads/102/name", 0, "qemu-io" },
	{ 0, "/host/threads/102/pid", 100 },
	{ 3 * S, "/vms/web1/vcpus/0/state", 2 },
	{ 4 * S, "/vms/web1/vcpus/0/state", 3 },
	{ 4 * S, "/host/cpus/0/current_tid", 500 },
	{ 5 * S, "/host/cpus/1/current_tid", 102 },
	{ 6 * S, "/vms/web1/vcpus/0/state", 1 },
	{ 6 * S, "/host/cpus/0/current_tid", 101 },
	{ 7 * S, "/host/cpus/1/current_tid", 0 },
};

static void pcpu_of(struct pcpu_view *v, const char *path, unsigned int top)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;

	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(pcpu_build(v, r, 0, 10 * S, top, NULL, &err), 0, "%s", err.msg);
	sht_close(r);
}

Test(pcpu, every_cpus_window_is_guest_hypervisor_host_or_idle)
{
	char path[] = "/tmp/vcpustat-pcpu-XXXXXX";
	const struct pcpu_row *c0, *c1;
	struct pcpu_view v;
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, fused, sizeof(fused) / sizeof(fused[0]), 10 * S);
	pcpu_of(&v, path, 0);
	cr_assert(v.host_recorded);
	cr_assert_eq(v.nr_cpus, 2);
	c0 = &v.cpus[0];
	c1 = &v.cpus[1];
	cr_assert_eq(c0->cpu, 0);
	cr_assert_eq(c0->ns[PCPU_GUEST], 7 * S);
	cr_assert_eq(c0->ns[PCPU_HYPERVISOR], 1 * S);
	cr_assert_eq(c0->ns[PCPU_HOST], 2 * S);
	cr_assert_eq(c0->ns[PCPU_IDLE], 0);
	cr_assert_eq(c0->ns[PCPU_UNKNOWN], 0);
	cr_assert_eq(c0->nr_occ, 3);
	cr_assert_eq(c0->occ[0].kind, PCPU_GUEST);
	cr_assert_str_eq(c0->occ[0].vm, "web1");
	cr_assert_eq(c0->occ[0].tid, 101);
	cr_assert_eq(c0->occ[0].ns, 7 * S);
	cr_assert_eq(c0->occ[1].kind, PCPU_HOST);
	cr_assert_str_eq(c0->occ[1].comm, "hog");
	cr_assert_str_eq(c0->occ[1].vm, "", "the hog is no VM's");
	cr_assert_eq(c0->occ[1].ns, 2 * S);
	cr_assert_eq(c0->occ[2].kind, PCPU_HYPERVISOR);
	cr_assert_eq(c0->occ[2].ns, 1 * S);
	cr_assert_eq(c1->ns[PCPU_IDLE], 8 * S);
	cr_assert_eq(c1->ns[PCPU_HOST], 2 * S);
	cr_assert_eq(c1->nr_occ, 1);
	cr_assert_str_eq(c1->occ[0].vm, "web1", "qemu-io is in web1's VMM process");
	cr_assert_str_eq(c1->occ[0].comm, "qemu-io");
	cr_assert_eq(c1->occ[0].pid, 100);
	pcpu_free(&v);

	pcpu_of(&v, path, 1);
	cr_assert_eq(v.cpus[0].nr_occ, 1);
	cr_assert_eq(v.cpus[0].others, 2);
	cr_assert_eq(v.cpus[0].others_ns, 3 * S);
	pcpu_free(&v);

	RUN(&r, "report", path, "--pcpu");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "    0    0.0%   70.0%   10.0%   20.0%     0.0%  web1/0 guest 70.0%, hog (500) "
					 "20.0%, web1/0 hyperv 10.0%\n"),
			   "%s", r.out);
	cr_assert_not_null(strstr(r.out, "    1   80.0%    0.0%    0.0%   20.0%     0.0%  web1 VMM qemu-io (102) 20.0%\n"),
			   "%s", r.out);
	RUN(&r, "report", path, "--pcpu", "--vm", "web1");
	cr_assert_eq(r.status, 2, "%s", r.out);
	unlink(path);
}

/*
 * A vCPU switched in before the recording's first event of it gets its pcpu
 * only at its first switch-out (here at 4 s, the hog's preemption); until then
 * /host/cpus/0/current_tid says its thread ran there (issue 40: CPU 0 was 40 %
 * unknown). Its guest and hypervisor time go to CPU 0 as with the pcpu known.
 */
Test(pcpu, a_vcpu_whose_pcpu_comes_at_its_first_switch_out_is_placed_by_current_tid)
{
	char path[] = "/tmp/vcpustat-pcpu-XXXXXX";
	struct set late[sizeof(fused) / sizeof(fused[0])];
	const struct pcpu_row *c0;
	struct pcpu_view v;
	struct run r;
	size_t n = 0;
	int placed = 0, fd = mkstemp(path);

	for (size_t i = 0; i < sizeof(fused) / sizeof(fused[0]); i++) { /* in time order: the pcpu among 4 s's */
		if (!strcmp(fused[i].path, "/vms/web1/vcpus/0/pcpu"))
			continue;
		if (fused[i].t == 4 * S && !placed++)
			late[n++] = (struct set){ 4 * S, "/vms/web1/vcpus/0/pcpu", 0 };
		late[n++] = fused[i];
	}
	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, late, n, 10 * S);
	pcpu_of(&v, path, 0);
	cr_assert_eq(v.nr_cpus, 2);
	c0 = &v.cpus[0];
	cr_assert_eq(c0->ns[PCPU_GUEST], 7 * S, "%llu", (unsigned long long)c0->ns[PCPU_GUEST]);
	cr_assert_eq(c0->ns[PCPU_HYPERVISOR], 1 * S);
	cr_assert_eq(c0->ns[PCPU_HOST], 2 * S);
	cr_assert_eq(c0->ns[PCPU_UNKNOWN], 0, "%llu ns unknown", (unsigned long long)c0->ns[PCPU_UNKNOWN]);
	cr_assert_eq(c0->nr_occ, 3);
	cr_assert_eq(c0->occ[0].kind, PCPU_GUEST);
	cr_assert_eq(c0->occ[0].ns, 7 * S);
	pcpu_free(&v);
	RUN(&r, "report", path, "--pcpu");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "    0    0.0%   70.0%   10.0%   20.0%     0.0%  web1/0 guest 70.0%, hog (500) "
					 "20.0%, web1/0 hyperv 10.0%\n"),
			   "%s", r.out);
	RUN(&r, "report", path, "--pcpu", "--pcpu", "1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "web1/0"), "--pcpu 1: CPU 0's vCPU time is not CPU 1's: %s", r.out);
	unlink(path);
}

/*
 * A VM named a/b is stored as a_b (a '/' would make a path level); --vm a/b,
 * the name the user gave, selects it (issue 40: it was refused).
 */
Test(pcpu, vm_named_with_a_slash_is_selected_by_that_name)
{
	char path[] = "/tmp/vcpustat-pcpu-XXXXXX";
	struct set ab[sizeof(fused) / sizeof(fused[0])];
	char names[sizeof(fused) / sizeof(fused[0])][64];
	struct run r;
	size_t n = 0;
	int fd = mkstemp(path);

	for (size_t i = 0; i < sizeof(fused) / sizeof(fused[0]); i++, n++) {
		ab[n] = fused[i];
		if (!strncmp(fused[i].path, "/vms/web1/", 10)) {
			snprintf(names[n], sizeof(names[n]), "/vms/a_b/%s", fused[i].path + 10);
			ab[n].path = names[n];
		}
	}
	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, ab, n, 10 * S);
	RUN(&r, "report", path, "--vm", "a/b");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "a_b"), "%s", r.out);
	RUN(&r, "report", path, "--vm", "a_b");
	cr_assert_eq(r.status, 0, "%s", r.err);
	RUN(&r, "report", path, "--vm", "a/c");
	cr_assert_eq(r.status, 2, "%s", r.out);
	unlink(path);
}

Test(pcpu, without_the_host_side_idle_and_host_threads_are_not_recorded)
{
	char path[] = "/tmp/vcpustat-pcpu-XXXXXX";
	struct set vonly[sizeof(fused) / sizeof(fused[0])];
	struct pcpu_view v;
	struct run r;
	size_t n = 0;
	int fd = mkstemp(path);

	for (size_t i = 0; i < sizeof(fused) / sizeof(fused[0]); i++)
		if (strncmp(fused[i].path, "/host/", 6))
			vonly[n++] = fused[i];
	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, vonly, n, 10 * S);
	pcpu_of(&v, path, 0);
	cr_assert(!v.host_recorded);
	cr_assert_eq(v.nr_cpus, 1, "only CPU 0 ran a vCPU");
	cr_assert_eq(v.cpus[0].ns[PCPU_GUEST], 7 * S);
	cr_assert_eq(v.cpus[0].ns[PCPU_HYPERVISOR], 1 * S);
	cr_assert_eq(v.cpus[0].ns[PCPU_UNKNOWN], 2 * S);
	pcpu_free(&v);
	RUN(&r, "report", path, "--pcpu", "-j");
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		json_t *doc = json_loads(r.out, 0, NULL), *cpu, *ns;

		cr_assert_not_null(doc, "%s", r.out);
		cr_assert(json_is_false(json_object_get(json_object_get(doc, "pcpu"), "host_recorded")));
		cpu = json_array_get(json_object_get(json_object_get(doc, "pcpu"), "cpus"), 0);
		ns = json_object_get(cpu, "ns");
		cr_assert(json_is_null(json_object_get(ns, "idle")), "not recorded is null, not 0: %s", r.out);
		cr_assert_eq(json_integer_value(json_object_get(ns, "unknown")), 2 * S);
		cr_assert_eq(json_integer_value(json_object_get(ns, "guest")), 7 * S);
		json_decref(doc);
	}
	unlink(path);
}

/* ---- plot --timeline (user/export/plot_gantt.c) ---- */

/* The <rect ...> element whose tooltip is title: it has this x, width and fill. */
static void assert_run(const char *svg, const char *title, int x, int width, const char *fill)
{
	char want[512], attrs[256];
	const char *t, *rect;

	snprintf(want, sizeof(want), "<title>%s</title>", title);
	t = strstr(svg, want);
	cr_assert_not_null(t, "no run \"%s\" in the chart", title);
	for (rect = t; rect > svg && strncmp(rect, "<rect ", 6); rect--)
		;
	snprintf(attrs, sizeof(attrs), "<rect x=\"%d\" ", x);
	cr_assert(!strncmp(rect, attrs, strlen(attrs)), "%s: %.120s", title, rect);
	snprintf(attrs, sizeof(attrs), " width=\"%d\" ", width);
	cr_assert(strstr(rect, attrs) && strstr(rect, attrs) < t, "%s: %.120s", title, rect);
	snprintf(attrs, sizeof(attrs), "fill:%s;", fill);
	cr_assert(strstr(rect, attrs) && strstr(rect, attrs) < t, "%s: %.120s", title, rect);
}

/*
 * The fused recording above as a Gantt chart: 1,000 pixel columns of 10 ms
 * starting at x = 170. CPU 0: web1 guest [0, 3), its hypervisor [3, 4), the
 * hog [4, 6), guest [6, 10); CPU 1: qemu-io [5, 7), idle (blank) otherwise;
 * web1's vCPU 0: guest, host, preempted, guest.
 */
Test(gantt, rows_of_cpus_and_vcpus_show_what_ran_to_the_pixel)
{
	char path[] = "/tmp/vcpustat-gantt-XXXXXX", svg_path[64], cmd[160], *svg = malloc(1 << 20);
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(svg_path, sizeof(svg_path), "%s.svg", path);
	write_sets(path, fused, sizeof(fused) / sizeof(fused[0]), 10 * S);
	RUN(&r, "plot", path, "--timeline", "-o", svg_path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(svg_path, svg, 1 << 20);
	assert_run(svg, "CPU 0: web1: guest code, 0.000000 .. 3.000000 s", 170, 300, "#2ca02c");
	assert_run(svg, "CPU 0: web1: hypervisor, 3.000000 .. 4.000000 s", 470, 100, "#145214");
	assert_run(svg, "CPU 0: a host thread, 4.000000 .. 6.000000 s", 570, 200, "#7f7f7f");
	assert_run(svg, "CPU 0: web1: guest code, 6.000000 .. 10.000000 s", 770, 400, "#2ca02c");
	assert_run(svg, "CPU 1: a host thread, 5.000000 .. 7.000000 s", 670, 200, "#7f7f7f");
	cr_assert_null(strstr(svg, "<title>CPU 1: idle"), "idle is left blank");
	assert_run(svg, "web1 vCPU 0: guest, 0.000000 .. 3.000000 s", 170, 300, "#2ca02c");
	assert_run(svg, "web1 vCPU 0: host, 3.000000 .. 4.000000 s", 470, 100, "#1f77b4");
	assert_run(svg, "web1 vCPU 0: preempted, 4.000000 .. 6.000000 s", 570, 200, "#d62728");
	cr_assert(strstr(svg, "Physical CPUs") < strstr(svg, ">vCPUs<"), "CPUs first, then vCPUs");
	if (!access("/usr/bin/xmllint", X_OK)) {
		snprintf(cmd, sizeof(cmd), "xmllint --noout %s", svg_path);
		cr_assert_eq(system(cmd), 0, "the SVG is not well-formed XML");
	}

	/* a window: [3.5 s, 4.5 s) is 1,000 columns of 1 ms */
	RUN(&r, "plot", path, "--timeline", "--from", "3.5s", "--to", "4.5s", "-o", svg_path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(svg_path, svg, 1 << 20);
	assert_run(svg, "CPU 0: web1: hypervisor, 0.000000 .. 0.500000 s", 170, 500, "#145214");
	assert_run(svg, "CPU 0: a host thread, 0.500000 .. 1.000000 s", 670, 500, "#7f7f7f");

	RUN(&r, "plot", path, "--timeline", "--live", "-o", svg_path);
	cr_assert_eq(r.status, 2, "--timeline with --live: %s", r.err);
	unlink(svg_path);
	unlink(path);
	free(svg);
}

/* Each pixel shows what took most of it: 7 ms of guest and 3 ms of preempted in one 10 ms column is guest. */
Test(gantt, a_pixel_shows_what_took_most_of_its_time)
{
	static const struct set st[] = {
		{ 0, "/vms/vm/pid", 7 }, { 0, "/vms/vm/vcpus/0/pcpu", 0 }, { 0, "/vms/vm/vcpus/0/state", 3 },
		{ 3000000, "/vms/vm/vcpus/0/state", 1 }, { 10000000, "/vms/vm/vcpus/0/state", 3 },
		{ 17000000, "/vms/vm/vcpus/0/state", 1 },
	};
	char path[] = "/tmp/vcpustat-gantt-XXXXXX", svg_path[64], *svg = malloc(1 << 20);
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(svg_path, sizeof(svg_path), "%s.svg", path);
	write_sets(path, st, sizeof(st) / sizeof(st[0]), 10 * S);
	RUN(&r, "plot", path, "--timeline", "--to", "1s", "-o", svg_path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(svg_path, svg, 1 << 20);
	/* 1 ms columns: [0, 3) ms preempted, then guest but [10, 17) ms */
	assert_run(svg, "vm vCPU 0: preempted, 0.000000 .. 0.003000 s", 170, 3, "#d62728");
	RUN(&r, "plot", path, "--timeline", "--to", "10s", "-o", svg_path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(svg_path, svg, 1 << 20);
	/* 10 ms columns: column 0 has 7 ms of guest, column 1 7 ms of preempted and 3 of guest */
	assert_run(svg, "vm vCPU 0: guest, 0.000000 .. 0.010000 s", 170, 1, "#2ca02c");
	assert_run(svg, "vm vCPU 0: preempted, 0.010000 .. 0.020000 s", 171, 1, "#d62728");
	unlink(svg_path);
	unlink(path);
	free(svg);
}

/* ---- the VMM's other threads in report (level full) ---- */

/*
 * web1 (pid 100): vCPU 0 (tid 101) on CPU 0 in guest code but [7, 8), when
 * the vhost worker vhost-100 (a kernel thread, tid 600) runs there after
 * waiting [6, 7) behind the vCPU. The emulator thread qemu-main (tid 102)
 * runs on CPU 1 [0, 2), is preempted [2, 5) -- the hog (tid 500) runs [2, 4),
 * then CPU 1 idles [4, 5) -- and runs again [5, 7), then sleeps.
 */
static const struct set vmm[] = {
	{ 0, "/vms/web1/pid", 100 },
	{ 0, "/vms/web1/vcpus/0/tid", 101 },
	{ 0, "/vms/web1/vcpus/0/pcpu", 0 },
	{ 0, "/vms/web1/vcpus/0/state", 1 },
	{ 0, "/host/cpus/0/current_tid", 101 },
	{ 0, "/host/cpus/1/current_tid", 102 },
	{ 0, "/host/threads/101/name", 0, "CPU 0/KVM" },
	{ 0, "/host/threads/101/pid", 100 },
	{ 0, "/host/threads/101/state", 0, "running" },
	{ 0, "/host/threads/102/name", 0, "qemu-main" },
	{ 0, "/host/threads/102/pid", 100 },
	{ 0, "/host/threads/102/state", 0, "running" },
	{ 0, "/host/threads/500/name", 0, "hog" },
	{ 0, "/host/threads/500/pid", 500 },
	{ 0, "/host/threads/500/state", 0, "wait" },
	{ 0, "/host/threads/600/name", 0, "vhost-100" },
	{ 0, "/host/threads/600/pid", 600 },
	{ 0, "/host/threads/600/state", 0, "blocked" },
	{ 2 * S, "/host/cpus/1/current_tid", 500 },
	{ 2 * S, "/host/threads/102/state", 0, "preempted" },
	{ 2 * S, "/host/threads/500/state", 0, "running" },
	{ 4 * S, "/host/cpus/1/current_tid", 0 },
	{ 4 * S, "/host/threads/500/state", 0, "blocked" },
	{ 5 * S, "/host/cpus/1/current_tid", 102 },
	{ 5 * S, "/host/threads/102/state", 0, "running" },
	{ 6 * S, "/host/threads/600/state", 0, "wait" },
	{ 7 * S, "/host/cpus/0/current_tid", 600 },
	{ 7 * S, "/host/cpus/1/current_tid", 0 },
	{ 7 * S, "/host/threads/102/state", 0, "blocked" },
	{ 7 * S, "/host/threads/600/state", 0, "running" },
	{ 7 * S, "/vms/web1/vcpus/0/state", 3 },
	{ 7 * S, "/host/threads/101/state", 0, "preempted" },
	{ 8 * S, "/host/cpus/0/current_tid", 101 },
	{ 8 * S, "/host/threads/600/state", 0, "blocked" },
	{ 8 * S, "/vms/web1/vcpus/0/state", 1 },
	{ 8 * S, "/host/threads/101/state", 0, "running" },
};

Test(vmm, emulator_and_vhost_threads_their_cpu_their_wait_and_who_took_it)
{
	char path[] = "/tmp/vcpustat-vmm-XXXXXX";
	struct vcpustat_error err = { 0 };
	const struct vmm_threads_summary *m;
	struct sht_reader *r;
	struct summary s;
	bool culprits;
	struct run run;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, vmm, sizeof(vmm) / sizeof(vmm[0]), 10 * S);
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(&s, r, 0, 10 * S, NULL, &culprits, &err), 0, "%s", err.msg);
	sht_close(r);
	cr_assert_eq(s.nr_vms, 1);
	m = &s.vms[0].vmm;
	cr_assert(m->known);
	cr_assert_eq(m->threads[VMM_EMULATOR], 1, "qemu-main, not the vCPU thread");
	cr_assert_eq(m->run_ns[VMM_EMULATOR], 4 * S);
	cr_assert_eq(m->wait_ns[VMM_EMULATOR], 3 * S);
	cr_assert_eq(m->threads[VMM_VHOST], 1, "vhost-100 is web1's by its name");
	cr_assert_eq(m->run_ns[VMM_VHOST], 1 * S);
	cr_assert_eq(m->wait_ns[VMM_VHOST], 1 * S);
	cr_assert_eq(m->nr_culprits, 3);
	cr_assert_eq(m->culprits[0].tid, 500, "the hog took 2 s of qemu-main's CPU");
	cr_assert_eq(m->culprits[0].ns, 2 * S);
	cr_assert_str_eq(m->culprits[0].comm, "hog");
	cr_assert_float_eq(m->culprits[0].share, 0.5, 1e-9);
	/* 1 s each: CPU 1 idle while qemu-main waited, web1's own vCPU while vhost-100 waited */
	cr_assert_eq(m->culprits[1].ns, 1 * S);
	cr_assert_eq(m->culprits[2].ns, 1 * S);
	cr_assert(m->culprits[1].tid == 0 || m->culprits[2].tid == 0);
	cr_assert(m->culprits[1].tid == 101 || m->culprits[2].tid == 101);
	for (int i = 1; i < 3; i++)
		if (m->culprits[i].tid == 101) {
			cr_assert_str_eq(m->culprits[i].vm, "web1");
			cr_assert_eq(m->culprits[i].vcpu, 0);
		}
	summary_free(&s);

	RUN(&run, "report", path);
	cr_assert_eq(run.status, 0, "%s", run.err);
	cr_assert_not_null(strstr(run.out, "    emulator/IO        1  4000.0ms    3000.0ms    42.9%\n"), "%s", run.out);
	cr_assert_not_null(strstr(run.out, "    vhost              1  1000.0ms    1000.0ms    50.0%\n"), "%s", run.out);
	RUN(&run, "report", path, "-j");
	cr_assert_eq(run.status, 0, "%s", run.err);
	{
		json_t *doc = json_loads(run.out, 0, NULL), *vm;

		cr_assert_not_null(doc, "%s", run.out);
		vm = json_array_get(json_object_get(doc, "vms"), 0);
		cr_assert_eq(json_integer_value(json_object_get(
				     json_object_get(json_object_get(vm, "vmm_threads"), "emulator"), "wait_ns")),
			     3 * S, "%s", run.out);
		cr_assert_eq(json_array_size(json_object_get(json_object_get(vm, "vmm_threads"), "culprits")), 3);
		json_decref(doc);
	}
	/* a window: [3 s, 6 s): qemu-main waits [3, 5) (hog 1 s, idle 1 s) and runs [5, 6) */
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(&s, r, 3 * S, 6 * S, NULL, &culprits, &err), 0, "%s", err.msg);
	sht_close(r);
	m = &s.vms[0].vmm;
	cr_assert_eq(m->run_ns[VMM_EMULATOR], 1 * S);
	cr_assert_eq(m->wait_ns[VMM_EMULATOR], 2 * S);
	cr_assert_eq(m->threads[VMM_VHOST], 0, "vhost-100 only slept in [3, 6)");
	cr_assert_eq(m->culprits[0].ns + m->culprits[1].ns, 2 * S);
	summary_free(&s);
	unlink(path);
}

Test(vmm, a_recording_without_the_host_side_has_no_vmm_table)
{
	char path[] = "/tmp/vcpustat-vmm-XXXXXX";
	struct run run;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, vmm, 4, 10 * S); /* the vCPU only */
	RUN(&run, "report", path);
	cr_assert_eq(run.status, 0, "%s", run.err);
	cr_assert_null(strstr(run.out, "VMM THREADS"), "%s", run.out);
	RUN(&run, "report", path, "-j");
	cr_assert_null(strstr(run.out, "vmm_threads"), "%s", run.out);
	unlink(path);
}

/*
 * A recording without /vms (a host with no VM while it recorded): no view
 * takes its top-level attributes for VMs (sht_attr_first_child() of an
 * absent /vms is the first top-level attribute).
 */
Test(pcpu, a_recording_without_vms_has_none_in_any_view)
{
	static const struct set st[] = {
		{ 0, "/meta/lost", 0 }, { 0, "/host/cpus/0/current_tid", 0 }, { 5 * S, "/host/cpus/0/current_tid", 9 },
	};
	char path[] = "/tmp/vcpustat-novm-XXXXXX", svg_path[64];
	struct placement p;
	struct run r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(svg_path, sizeof(svg_path), "%s.svg", path);
	write_sets(path, st, sizeof(st) / sizeof(st[0]), 10 * S);
	build(&p, path, 0, 10 * S, NULL, NULL);
	cr_assert_eq(p.nr_vms, 0);
	placement_free(&p);
	RUN(&r, "report", path, "--pcpu", "-j");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "\"vm\":\"meta\""), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\"idle\":5000000000"), "%s", r.out);
	/* a window where no CPU has any time: no CPU rows, and no sort of nothing (UBSan: qsort(NULL)) */
	RUN(&r, "report", path, "--pcpu", "--from", "10.5s", "--to", "11s");
	cr_assert_null(strstr(r.err, "runtime error"), "%s", r.err);
	cr_assert_null(strstr(r.err, "Sanitizer"), "%s", r.err);
	RUN(&r, "report", path, "--placement");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "meta"), "%s", r.out);
	RUN(&r, "plot", path, "--timeline", "-o", svg_path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	RUN(&r, "report", path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "VM meta"), "%s", r.out);
	unlink(svg_path);
	unlink(path);
}

/*
 * With a guest trace (an import): web1's vCPU 0 in guest code ran nginx
 * (guest tid 1234) [0, 2), the guest's idle [2, 3) and cron (777) from 6 s;
 * before the guest's first switch on the CPU nothing names the guest thread.
 */
Test(pcpu, guest_code_names_the_guest_thread_when_a_guest_trace_tells_it)
{
	struct set st[sizeof(fused) / sizeof(fused[0]) + 6];
	static const struct set guest[] = {
		{ 0, "/vms/web1/threads/1234/name", 0, "nginx" }, { 0, "/vms/web1/threads/777/name", 0, "cron" },
		{ 1 * S, "/vms/web1/vcpus/0/guest_tid", 1234 },	   { 2 * S, "/vms/web1/vcpus/0/guest_tid", 0 },
		{ 6 * S, "/vms/web1/vcpus/0/guest_tid", 777 },
	};
	char path[] = "/tmp/vcpustat-pcpu-XXXXXX";
	const struct pcpu_row *c0;
	struct pcpu_view v;
	struct run r;
	size_t n = 0, g = 0;
	int fd = mkstemp(path);

	/* merge by time: the writer wants them in order */
	for (size_t i = 0; i < sizeof(fused) / sizeof(fused[0]); i++) {
		while (g < sizeof(guest) / sizeof(guest[0]) && guest[g].t <= fused[i].t)
			st[n++] = guest[g++];
		st[n++] = fused[i];
	}
	while (g < sizeof(guest) / sizeof(guest[0]))
		st[n++] = guest[g++];
	cr_assert_geq(fd, 0);
	close(fd);
	write_sets(path, st, n, 10 * S);
	pcpu_of(&v, path, 0);
	c0 = &v.cpus[0];
	cr_assert_eq(c0->ns[PCPU_GUEST], 7 * S, "the guest threads split the vCPU's guest time, no more");
	cr_assert_eq(c0->nr_occ, 6);
	cr_assert_eq(c0->occ[0].guest_tid, 777);
	cr_assert_str_eq(c0->occ[0].guest_comm, "cron");
	cr_assert_eq(c0->occ[0].ns, 4 * S);
	for (size_t i = 1; i < c0->nr_occ; i++) {
		const struct pcpu_occupant *o = &c0->occ[i];

		if (o->kind == PCPU_GUEST && o->guest_tid == 1234)
			cr_assert(o->ns == 1 * S && !strcmp(o->guest_comm, "nginx"));
		else if (o->kind == PCPU_GUEST && o->guest_tid == 0)
			cr_assert_eq(o->ns, 1 * S, "the guest's idle");
		else if (o->kind == PCPU_GUEST)
			cr_assert(o->guest_tid == -1 && o->ns == 1 * S, "[0, 1 s): before the guest trace names it");
	}
	pcpu_free(&v);
	RUN(&r, "report", path, "--pcpu", "--top", "0");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "web1/0 guest cron (777) 40.0%"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "web1/0 guest nginx (1234) 10.0%"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "web1/0 guest idle 10.0%"), "%s", r.out);
	unlink(path);
}
