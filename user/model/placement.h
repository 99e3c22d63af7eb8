/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * placement.h - where each VM's vCPUs ran, over a recording or a live window.
 */
#ifndef VCPUSTAT_MODEL_PLACEMENT_H
#define VCPUSTAT_MODEL_PLACEMENT_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "model/summary.h"

/*
 * ---- placement.c: where each VM's vCPUs ran (`vcpustat report --placement`) ----
 * Over [t1, t2) of a recording: a vCPU is on a CPU while its state is guest or
 * host, on its pcpu. Per VM: vCPU-time per NUMA node and per last-level cache
 * (the columns: node_ids / llc_ids), pcpu changes (migrations) and those across
 * nodes and caches, and time on a core whose other hardware thread ran
 * another VM's vCPU (smt_other_vm_ns) or only its own VM's (smt_same_vm_ns).
 * The topology is the recording's (metadata topology.*) or the one given.
 */
#define PLACEMENT_SPREAD_MIN 0.10 /* nodes this far apart in utilization ... */
#define PLACEMENT_GAIN_MIN 0.05	  /* ... and a move bringing them this much closer: suggested */

struct placement_vm {
	char name[128];
	uint32_t pid;
	unsigned int vcpus;			    /* vCPUs that ran in the window */
	uint64_t run_ns;			    /* on a CPU (guest + host) */
	uint64_t *node_ns, node_unknown_ns;	    /* [nr_nodes] */
	uint64_t *llc_ns, llc_unknown_ns;	    /* [nr_llcs] */
	uint64_t migrations, cross_node, cross_llc; /* pcpu changes */
	uint64_t numa_moves; /* of those, the kernel's NUMA balancing's (recordings: numa_moves sets) */
	uint64_t smt_other_vm_ns, smt_same_vm_ns;
};

struct placement_move {
	int vm;		       /* index in vms, -1: no move suggested */
	int from, to;	       /* node columns: the busiest and the least busy (by share of their CPUs) */
	double hot_util, cold_util, spread; /* busy CPUs / CPUs, before */
	double load;			    /* CPUs the VM keeps busy on the busiest node */
	double hot_after, cold_after, best_spread;
};

struct placement {
	uint64_t t1, t2;
	const char *topo_source; /* "recording", "host", NULL: no topology */
	struct cpu_topology topo;
	bool has_nodes, has_llcs, has_smt;
	int *node_ids, nr_nodes, *llc_ids, nr_llcs;
	uint64_t *node_ns;	 /* every VM's vCPU-time per node (also of VMs the filter leaves out) */
	int *node_cpus;		 /* CPUs per node */
	struct placement_vm *vms;
	size_t nr_vms;
	struct placement_move move;
};

int placement_build(struct placement *p, struct sht_reader *r, uint64_t t1, uint64_t t2,
		    const struct summary_filter *f, const struct cpu_topology *host, struct vcpustat_error *err);
void placement_print(FILE *f, const struct placement *p);
/*
 * The same over a live window (`top`, `top -b`, `-j`): from each VM's
 * vm->place and s->topo (p->topo_source "host", or NULL without one). The
 * nodes' load is that of the VMs in s (a --vm filter leaves the others
 * out). -ENOMEM.
 */
int placement_from_summary(struct placement *p, const struct summary *s);
/* The host's nodes and the move (placement_print's last part); nothing unless there are 2 nodes or more. */
void placement_print_balance(FILE *f, const struct placement *p);
/* ... as JSON: {"nodes": [...], "move": {...} or null}; NULL unless there are 2 nodes or more. */
json_t *placement_balance_json(const struct placement *p);
json_t *placement_json(const struct placement *p);
void placement_free(struct placement *p);

#endif /* VCPUSTAT_MODEL_PLACEMENT_H */
