/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * summary.h - what happened to every VM and vCPU over a window: state
 * shares, rates, exit reasons with latency percentiles, and who took the CPU.
 * Built from two snapshots (live maps, or replayed captures) and rendered
 * as text, JSON or by the ncurses UI. The live view, reports and exporters
 * all show this one model.
 */
#ifndef VCPUSTAT_SUMMARY_H
#define VCPUSTAT_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "loader.h"
#include "names.h"

struct vcpu_summary {
	__u32 tid, tgid, index, index_src;
	__u32 state; /* current state (at the end of the window) */
	__u32 pcpu;  /* current or last pCPU, VCPU_PCPU_NONE if unknown */
	char comm[16];
	bool gone;			 /* its thread exited during the window */
	__u64 ns[VCPU_NR_STATES];	 /* in the window */
	__u64 ns_total[VCPU_NR_STATES]; /* since it was first seen */
	__u64 preemptions, wakeups, migrations, kvm_exits, userspace_exits; /* in the window */
};

/* One histogram's share of the window. */
struct latency_summary {
	__u32 kind;   /* enum vcpu_sample_kind */
	__u32 isa;    /* for VCPU_SAMPLE_EXIT */
	__u32 reason; /* exit reason / KVM_EXIT_* code */
	char name[32];
	__u64 count, sum_ns, max_ns; /* max since attach (the kernel keeps no per-window max) */
	double rate;		     /* per second */
	__u64 p50_ns, p90_ns, p99_ns;
	__u64 bucket[LAT_HIST_BUCKETS]; /* in the window */
	__u64 count_total;		/* since attach */
};

struct culprit_summary {
	__u32 tid, tgid;
	__u64 cgroup_id;
	char comm[16];
	char process[64];
	char cgroup[256];
	char vm[64];	/* if the thread is a vCPU of a VM: that VM's name, else "" */
	int vcpu;	/* and its index, else -1 */
	__u64 ns;	/* vCPU-ns the VM waited while it ran, in the window */
	double share;	/* of the VM's preempted + wait time in the window */
};

/*
 * A guest thread (reports of `vcpustat import` with guest traces,
 * docs/import.md): what it experienced in the window, and what took its
 * vCPU while the guest believed it was running.
 */
enum guest_thread_state {
	GUEST_RUNNING = 0,	 /* current in the guest, its vCPU in guest mode */
	GUEST_VIRT_PREEMPTED,	 /* current in the guest, its vCPU not in guest mode: time lost to the host */
	GUEST_PREEMPTED,	 /* switched out runnable by the guest's scheduler */
	GUEST_WAIT,		 /* woken, not yet running in the guest */
	GUEST_BLOCKED,		 /* sleeping */
	GUEST_NR_STATES,
};

struct guest_thread_summary {
	__u32 tid;
	char comm[16];
	int vcpu;			/* the vCPU it was last current on in the window, -1 if none */
	__u64 ns[GUEST_NR_STATES];	/* in the window */
	/* virt_preempted time by what its vCPU was doing on the host: */
	__u64 lost_hypervisor_ns;	/* in the hypervisor (host mode: exits, the VMM) */
	__u64 lost_runq_ns;		/* preempted or waiting for a CPU: culprits below */
	__u64 lost_blocked_ns;		/* blocked or idle on the host */
	struct culprit_summary *culprits; /* who ran on the vCPU's CPU meanwhile, by ns; share = of lost_runq_ns */
	size_t nr_culprits;
};

struct vm_summary {
	__u32 tgid;
	char name[64];
	bool exited;
	struct vcpu_summary *vcpus; /* sorted by index */
	size_t nr_vcpus;
	__u64 ns[VCPU_NR_STATES]; /* summed over its vCPUs */
	__u64 preemptions, wakeups, migrations, kvm_exits, userspace_exits;
	struct latency_summary *exits; /* kvm exits, by rate, descending */
	size_t nr_exits;
	struct latency_summary *uexits; /* userspace exits, by rate */
	size_t nr_uexits;
	struct latency_summary runq; /* run-queue wait latency */
	struct culprit_summary *culprits; /* by ns, descending */
	size_t nr_culprits;
	struct guest_thread_summary *guest_threads; /* by virt_preempted time, descending (reports only) */
	size_t nr_guest_threads;
};

struct summary {
	__u64 t0, t1;	/* window, CLOCK_MONOTONIC ns (t0 = 0: since attach); reports: ns since trace start */
	__u64 wall_t1;	/* CLOCK_REALTIME ns of t1 for the text header (0: now) */
	bool no_wall_clock; /* a report of a file without a wall clock: the header shows t1 as +seconds */
	double seconds; /* t1 - t0 */
	struct vm_summary *vms; /* sorted by name, then pid */
	size_t nr_vms;
	__u64 lost[VCPUSTAT_NR_LOST];	    /* since attach */
	__u64 lost_window[VCPUSTAT_NR_LOST]; /* in the window */
};

struct summary_filter {
	const char *const *vms; /* VM names or pids to keep; NULL/0: all */
	size_t nr_vms;
};

/*
 * The window from prev to cur (prev NULL: since each vCPU was first seen).
 * Snapshots are not modified. names resolves VM, process and cgroup names.
 */
int summary_build(struct summary *s, const struct vcpustat_snapshot *prev, const struct vcpustat_snapshot *cur,
		  struct names *names, const struct summary_filter *filter);
void summary_free(struct summary *s);
void summary_free_vm(struct vm_summary *vm);

/* Latency percentile (0 < q < 1) of a bucket array: interpolated within its bucket. */
__u64 latency_percentile(const __u64 *bucket, __u64 count, double q);

/* A duration for people: "850ns", "12.5us", "3.2ms", "1.5s". */
const char *format_ns(__u64 ns, char *buf, size_t len);

/* Share of the window a vCPU spent in state (0..1). */
double vcpu_share(const struct summary *s, const struct vcpu_summary *v, unsigned int state);
/* "running", "virt_preempted", "preempted", "wait", "blocked" */
const char *guest_thread_state_name(unsigned int state);

/* Share of the VM's vCPU-time in state (0..1). */
double vm_share(const struct summary *s, const struct vm_summary *vm, unsigned int state);

/* The one JSON document of a refresh (docs/json.md). progs may be NULL. */
json_t *summary_json(const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs);

/* Plain-text tables (batch mode), top `top` rows per table (0: all). */
void summary_print(FILE *f, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs,
		   unsigned int top);

#endif
