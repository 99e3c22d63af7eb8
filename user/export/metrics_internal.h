/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_internal.h - the exporters' model as its renderers see it: the
 * accumulated state (metrics.c) that metrics_text.c and metrics_json.c walk.
 * Internal to user/export/; the API is export.h.
 */
#ifndef VCPUSTAT_METRICS_INTERNAL_H
#define VCPUSTAT_METRICS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "export/export.h"

struct acc_counts {
	__u64 ns[VCPU_NR_STATES];
	__u64 preemptions, wakeups, migrations, exits, uexits;
	__u64 polls_ok, polls_failed, poll_fail_ns; /* halt polls that ended */
	__u64 l2_ns;				    /* guest time in L2 (nested virtualization) */
	bool nested;				    /* it ran L2 */
};

struct acc_vcpu {
	__u32 index;
	__u32 halt_poll_ns; /* as of the last window it was in */
	struct acc_counts c;
};

struct acc_hist {
	char reason[32];
	__u64 count, sum_ns; /* count = the sum of the buckets, so +Inf == _count always */
	__u64 gsys;	     /* exits that left guest kernel mode (exits only) */
	__u64 bucket[LAT_HIST_BUCKETS];
};

struct culprit_key {
	char process[64];
	char comm[16];
	char cgroup[256];
	char vm[64];
};

struct acc_culprit {
	struct culprit_key key;
	__u64 total_ns; /* everything charged since the start: the ranking */
	__u64 named_ns; /* charged while it was in the top N: its series */
	__u64 delta;	/* in the window being added */
	bool named;
};

/* An exit-detail row (port, MMIO address, MSR, page) of a VM, as published. */
struct detail_key {
	__u8 kind, access; /* enum vcpustat_detail_kind, enum vcpustat_detail_access */
	__u8 pad[6];
	__u64 addr; /* VCPUSTAT_DETAIL_OTHER: the kernel's full-table row, always in "other" */
};

struct acc_detail {
	struct detail_key key;
	__u64 total;		     /* exits counted since the start: the ranking */
	__u64 named_count, named_ns; /* counted while it was in the top N: its series */
	__u64 delta_count, delta_ns; /* in the window being added */
	bool named;
};

/* One published exit-detail series pair: count and seconds (metrics_detail_rows). */
struct detail_row {
	__u8 kind, access;
	__u64 addr; /* VCPUSTAT_DETAIL_OTHER: "other" */
	__u64 count, ns;
};

struct acc_vm {
	char name[64];
	/* its VMM's cgroup and the container and Kubernetes pod it names, as of the last window (vcpustat_vm_info) */
	char cgroup[256];
	struct container_ref container;
	__u64 last_alive; /* end of the last window it had a live vCPU in */
	unsigned int vcpus_now;
	__u32 halt_poll_ns;	     /* the largest of its vCPUs', as of the last window it was in */
	unsigned long halt_poll_add; /* that window's metrics.nr_adds (VMs of one name: the largest) */
	struct acc_counts c;
	bool vmm_known;					 /* its VMM's other threads were accounted */
	/* placement (live, where the host's topology is known): vCPU-ns per node id and cache id */
	bool place_known;
	__u64 *node_ns, *llc_ns;
	int nr_node, nr_llc; /* ids 0 .. nr-1 */
	__u64 cross_node, cross_llc, numa_moves, smt_other_ns, smt_same_ns;
	__u64 vmm_run_ns[VMM_NR_KINDS], vmm_wait_ns[VMM_NR_KINDS]; /* by enum { VMM_EMULATOR, VMM_VHOST } */
	struct acc_vcpu *vcpus; /* by index */
	size_t nr_vcpus;
	struct acc_hist *exits, *uexits; /* by reason */
	size_t nr_exits, nr_uexits;
	struct acc_hist runq;
	struct acc_hist *wakes; /* wake-ups of sleeping vCPUs, by reason */
	size_t nr_wakes;
	struct acc_hist *wake_vectors; /* the same, by the vector injected ("0x40", "none") */
	size_t nr_wake_vectors;
	struct acc_culprit *culprits;
	size_t nr_culprits;
	struct hashmap culprit_idx; /* struct culprit_key -> size_t */
	__u64 other_ns;
	struct acc_detail *details;
	size_t nr_details;
	struct hashmap detail_idx; /* struct detail_key -> size_t */
	/* what rows outside the top N counted, per kind and access; used: published */
	__u64 other_count[VCPUSTAT_NR_DETAIL_KINDS][VCPUSTAT_NR_ACCESSES];
	__u64 other_dns[VCPUSTAT_NR_DETAIL_KINDS][VCPUSTAT_NR_ACCESSES];
	bool other_used[VCPUSTAT_NR_DETAIL_KINDS][VCPUSTAT_NR_ACCESSES];
};

struct prog_state {
	char tracepoint[64];
	int attached;
};

struct metrics {
	struct metrics_opts o;
	struct acc_vm **vms; /* by name */
	size_t nr_vms;
	bool started;
	unsigned long nr_adds;
	__u64 t0, t1;
	long long real_offset;
	bool no_clock; /* no wall clock: no start time */
	__u64 lost[VCPUSTAT_NR_LOST];
	struct prog_state *progs;
	size_t nr_progs;
	bool file;
	char file_path[512], from[64], to[64];
	__u64 from_ns, to_ns;
	char kernel[128];
	bool gsys_known; /* the windows came from the BPF maps or a replay (summary.has_gsys) */
	/* live: the last window's health check (model/health.c), counted by problem */
	bool health_checked;
	unsigned int health_problems, kvm_vms;
	unsigned int blind_vms[HEALTH_NR_PROBLEMS];
};

/* Edge i of the published buckets, in seconds. */
double metrics_le_seconds(unsigned int i);
/* The named culprits of vm, most time first (malloc'ed; NULL if none). */
struct acc_culprit **metrics_named_culprits(const struct acc_vm *vm, size_t *n);
/* "other" is published once a VM has more culprits than named ones. */
bool metrics_has_other(const struct metrics *m, const struct acc_vm *vm);
/*
 * The exit-detail series of vm: the named rows, then "other" per (kind,
 * access) once used; by kind, then count (descending). malloc'ed, NULL if none.
 */
struct detail_row *metrics_detail_rows(const struct acc_vm *vm, size_t *n);
/* Seconds the counters cover; their start as Unix time. */
double metrics_window_seconds(const struct metrics *m);
double metrics_start_time(const struct metrics *m);

#endif /* VCPUSTAT_METRICS_INTERNAL_H */
