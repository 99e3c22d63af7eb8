/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * summary.h - the window model itself: what happened to every VM and
 * vCPU over a window (summary.c), rendered as text or JSON
 * (summary_text.c, summary_json.c) or by the ncurses UI; its health
 * (health.h) and the filters it is built through (filter.h). model.h has
 * the whole model.
 */
#ifndef VCPUSTAT_MODEL_SUMMARY_H
#define VCPUSTAT_MODEL_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include <linux/types.h>
#include "vcpustat_abi.h"
#include "util/util.h"
#include "sht/sht.h"
#include "base/base.h"
#include "model/health.h"
#include "model/filter.h"

/* ---- containers (base/base.h) of the model's VMs and culprits ---- */

struct vm_summary;
/* A VM's container (recorded_container() of its cgroup and names). */
bool vm_container(const struct vm_summary *vm, struct container_ref *c);
struct culprit_summary;
/* A culprit's container, and its label ("" if none: then its cgroup path). */
bool culprit_container(const struct culprit_summary *cu, struct container_ref *c);
const char *culprit_cgroup_label(const struct culprit_summary *cu, char *buf, size_t len);

/*
 * ---- summary.c: the window model ----
 * What happened to every VM and vCPU over a window: state
 * shares, rates, exit reasons with latency percentiles, and who took the CPU.
 * Built from two snapshots (live maps, or replayed captures) and rendered
 * as text, JSON or by the ncurses UI. The live view, reports and exporters
 * all show this one model.
 */

struct vcpu_summary {
	__u32 tid, tgid, index, index_src;
	__u32 state; /* current state (at the end of the window) */
	__u32 pcpu;  /* current or last pCPU, VCPU_PCPU_NONE if unknown */
	char comm[16];
	bool gone;			 /* its thread exited during the window */
	__u64 ns[VCPU_NR_STATES];	 /* in the window */
	__u64 ns_total[VCPU_NR_STATES]; /* since it was first seen */
	__u64 preemptions, wakeups, migrations, kvm_exits, userspace_exits; /* in the window */
	/*
	 * Of kvm_exits and userspace_exits: the exit still being handled at the
	 * end of the window, whose latency is not known (0 or 1 each): a
	 * report's exit the file ends in, live the one in progress at the
	 * refresh. Its reason and its time so far (open_exit_ns: from its start
	 * to the end of what was seen; a lower bound of its latency).
	 */
	__u64 kvm_exits_open, userspace_exits_open;
	char open_exit[32], open_uexit[32];
	__u64 open_exit_ns, open_uexit_ns;
	/* halt polling (vcpu_fsm.h), counted when a poll ends: in the window */
	__u64 polls_ok;	    /* polls that saw the wake-up */
	__u64 polls_failed; /* polls that ended in sleep */
	__u64 poll_fail_ns; /* POLL time of the failed ones: CPU burnt for nothing */
	__u32 halt_poll_ns; /* its halt_poll_ns at the end of the window (0: polling off, or never seen) */
	__u64 cross_node, cross_llc; /* live: its migrations to another NUMA node / last-level cache */
	__u64 numa_moves;	     /* live: its moves the kernel's NUMA balancing made */
	/* nested virtualization: of its guest time, what ran in L2 (the L1 hypervisor's guest) */
	__u64 l2_ns, l2_ns_total; /* in the window, since it was first seen */
	bool in_l2;		  /* at the end of the window */
	bool nested;		  /* it ran L2, or its file says where it was (guest_level) */
};

/* One histogram's share of the window. */
struct latency_summary {
	__u32 kind;   /* enum vcpu_sample_kind */
	__u32 isa;    /* for VCPU_SAMPLE_EXIT */
	__u32 reason; /* exit reason / KVM_EXIT_* code */
	char name[32];
	__u64 count, sum_ns, max_ns; /* max since attach (the kernel keeps no per-window max) */
	/*
	 * Of count: exits still being handled at the end of the window
	 * (censored: their latency is not known), in no bucket, not in sum_ns,
	 * max_ns or the percentiles, which are over the count - open closed
	 * ones; open_ns: their time so far. Reports only: live rows are the
	 * kernel's histograms, which count an exit when it ends (open 0; the
	 * exit in progress is the vCPU's kvm_exits_open).
	 */
	__u64 open, open_ns;
	__u64 gsys;		     /* EXIT: of count, those that left guest kernel mode (summary.has_gsys) */
	double rate;		     /* per second */
	__u64 p50_ns, p90_ns, p99_ns;
	__u64 bucket[LAT_HIST_BUCKETS]; /* in the window */
	__u64 count_total;		/* since attach */
};

/*
 * One row of a VM's exit-detail tables: what its exits accessed (port,
 * MMIO address, MSR, faulting page) and how long those exits took, kvm_exit
 * to kvm_entry (include/vcpustat_abi.h, "Exit details").
 */
struct detail_summary {
	__u32 kind;			 /* enum vcpustat_detail_kind */
	__u32 access;			 /* enum vcpustat_detail_access */
	__u64 addr;			 /* VCPUSTAT_DETAIL_OTHER: keys a full table could not hold */
	__u64 count, sum_ns;		 /* in the window */
	__u64 max_ns;			 /* since attach */
	__u64 count_total, sum_ns_total; /* since attach */
	double rate;			 /* per second */
	/*
	 * Guest address spaces (kind VCPUSTAT_DETAIL_CR3) in reports of files
	 * with imported guest traces: the guest thread current on the vCPU at
	 * most of the row's exits (the CR3 is read at the exit), idle excluded;
	 * guest_tid 0 if none was known.
	 */
	__u32 guest_tid;
	__u64 guest_tid_exits; /* at how many of the row's exits in the window */
	char guest_comm[16];
};

struct culprit_summary {
	__u32 tid, tgid;
	__u64 cgroup_id;
	char comm[16];
	char process[64];
	char cgroup[256]; /* its cgroup path (live: from the kernel's cgroup id; reports: the recorded one), "" if unknown */
	__u64 pidns;	  /* its PID namespace's inode (reports of --level full recordings), 0 if unknown */
	/* reports of --level full recordings: the Kubernetes names the recording host's runtime gave, "" if none */
	char pod_name[128], pod_namespace[64], container_name[64];
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

/*
 * The VMM's threads other than its vCPUs: [VMM_EMULATOR] its emulator and
 * I/O threads (threads of the VM's process), [VMM_VHOST] its vhost workers
 * (vhost-<pid>). Their time on a CPU and waiting for one (preempted + wait),
 * and who ran on the CPU they waited for. Live: the vmm_threads map (the
 * threads user space found, from their first event on); reports: a --level
 * full recording's host threads (the CPU they waited for: the one they ran
 * on next; if none in the window, the last).
 */
enum { VMM_EMULATOR = VCPUSTAT_VMM_EMULATOR, VMM_VHOST = VCPUSTAT_VMM_VHOST, VMM_NR_KINDS = VCPUSTAT_NR_VMM_KINDS };

/* A vmm_threads entry's time on a CPU (wait: waiting for one) at ts (CLOCK_MONOTONIC), its open interval included. */
__u64 vmm_thread_ns(const struct vcpustat_vmm_thread *t, __u64 ts, bool wait);

struct vmm_threads_summary {
	bool known; /* live, or a recording that has the host's threads (--level full) or its VMM threads' */
	bool no_culprits; /* a level-vcpu recording: who ran instead is not recorded */
	unsigned int threads[VMM_NR_KINDS]; /* that ran or waited in the window */
	__u64 run_ns[VMM_NR_KINDS], wait_ns[VMM_NR_KINDS];
	struct culprit_summary *culprits; /* by ns, descending; share: of all their waiting */
	size_t nr_culprits;
};

/*
 * Where a VM's vCPUs ran (live: the vm_cpu map and the kernel's topology,
 * vcpustat_set_topology()): vCPU-time per CPU, to be summed per node or
 * cache with the host's topology, migrations across nodes and caches, and
 * time on a core whose other hardware thread ran another VM's vCPU (or one
 * of its own). Recordings: `report --placement` (struct placement).
 */
struct place_cpu {
	__u32 cpu;
	__u64 ns;
};

struct vm_place {
	bool known;
	struct place_cpu *cpus; /* vCPU-ns per CPU in the window, by CPU */
	size_t nr_cpus;
	__u64 cross_node, cross_llc;
	__u64 numa_moves; /* moves of its vCPUs made by the kernel's NUMA balancing */
	__u64 smt_other_ns, smt_same_ns;
};

struct vm_summary {
	__u32 tgid;
	char name[64];
	char cgroup[256]; /* the VMM process's cgroup (cgroup_from_proc()), "" if unknown */
	__u64 pidns;	  /* its PID namespace's inode, 0 if unknown */
	/* reports: the Kubernetes names the recording host's runtime gave (/vms/<vm>/pod_name ...), "" if none */
	char pod_name[128], pod_namespace[64], container_name[64];
	bool exited;
	struct vcpu_summary *vcpus; /* sorted by index */
	size_t nr_vcpus;
	__u64 ns[VCPU_NR_STATES]; /* summed over its vCPUs */
	__u64 preemptions, wakeups, migrations, kvm_exits, userspace_exits;
	__u64 kvm_exits_open, userspace_exits_open; /* of those, open at the window's end (vcpu_summary) */
	__u64 polls_ok, polls_failed, poll_fail_ns; /* summed over its vCPUs */
	__u64 l2_ns;				    /* guest time in L2 (nested), summed over its vCPUs */
	bool nested;				    /* a vCPU of it ran L2 since the start */
	__u32 halt_poll_ns;			    /* the largest of its vCPUs' */
	struct latency_summary *exits; /* kvm exits, by rate, descending */
	size_t nr_exits;
	struct latency_summary *uexits; /* userspace exits, by rate */
	size_t nr_uexits;
	struct latency_summary runq; /* run-queue wait latency */
	struct latency_summary *wakes; /* wake-ups of its sleeping vCPUs by reason (VCPU_SAMPLE_WAKE):
					  from the wake-up to the next kvm_entry; by count, descending */
	size_t nr_wakes;
	struct latency_summary *wake_vectors; /* the same wake-ups by the vector injected at that entry
						 (VCPU_SAMPLE_WAKE_VECTOR; "none": none seen); by count */
	size_t nr_wake_vectors;
	struct detail_summary *details; /* rows counted in the window: by kind, then count, descending */
	size_t nr_details;
	struct detail_summary *address_spaces; /* --address-spaces (live): kind VCPUSTAT_DETAIL_CR3 rows,
						  addr = the guest's CR3 (VCPUSTAT_CR3_UNKNOWN, OTHER),
						  count = exits, sum_ns = guest time; by sum_ns, descending */
	size_t nr_address_spaces;
	struct culprit_summary *culprits; /* by ns, descending */
	size_t nr_culprits;
	struct guest_thread_summary *guest_threads; /* by virt_preempted time, descending (reports only) */
	size_t nr_guest_threads;
	struct vmm_threads_summary vmm; /* live, and reports of --level full recordings */
	struct vm_place place;		/* live only */
	unsigned int nr_vcpus_all; /* --vcpu, --tid: the vCPUs the VM has in the file (vcpus: the kept ones); 0 without */
};

struct summary {
	__u64 t0, t1;	/* window, CLOCK_MONOTONIC ns (t0 = 0: since attach); reports: ns since trace start */
	__u64 wall_t1;	/* CLOCK_REALTIME ns of t1 for the text header (0: now) */
	bool no_wall_clock; /* a report of a file without a wall clock: the header shows t1 as +seconds */
	bool has_details;   /* exit details are known (the BPF maps, a replay, or a recording that has
			       the exit_access/exit_fault attributes) */
	bool has_gsys;	    /* guest kernel-mode exits are known (the BPF maps or a replay only) */
	double seconds; /* t1 - t0 */
	struct vm_summary *vms; /* sorted by name, then pid */
	size_t nr_vms;
	__u64 lost[VCPUSTAT_NR_LOST];	    /* since attach */
	__u64 lost_window[VCPUSTAT_NR_LOST]; /* in the window */
	char pcpus[160]; /* --pcpu: the CPUs time is counted on ("0-3,8"); "" without */
	const struct cpu_topology *topo; /* live: the host's, to show vm_place per node and cache; NULL: none */
	struct health health;		 /* live: is vcpustat blind to a VM? (health.c) */
};

/* health_message() of a window's health, the VMs named as the window names them (health.h). */
void summary_health_message(const struct summary *s, char *out, size_t len);

/*
 * vm->place over s->topo: vCPU-ns per node (or last-level cache: llc) into
 * ns[id] for ids 0..max-1 (unknown ones not counted); returns the number of
 * ids with time, or -1 without a topology.
 */
int place_by(const struct summary *s, const struct vm_summary *vm, bool llc, __u64 *ns, int max);
/*
 * Are the VM's wake-ups by vector worth a table or chart: not when every one
 * is "none" (posted interrupts: KVM traced no injection at their entries).
 */
bool wake_vectors_worth_showing(const struct vm_summary *vm);
/* Does the host have more than one node, or cache, or SMT siblings (worth showing placement)? */
bool place_worth_showing(const struct cpu_topology *t);
/*
 * A VM's placement in the window as the text output (PLACEMENT) and the
 * ncurses view show it: its vCPU-time by node ("node 0 62.5 %, node 1 ..."),
 * by cache, its migrations across them, its SMT sharing; one per line, up to
 * PLACE_MAX_LINES. 0 when there is nothing to show (no topology, or a host
 * of one node and cache without SMT).
 */
#define PLACE_MAX_LINES 4
#define PLACE_LINE_LEN 256
size_t place_lines(const struct summary *s, const struct vm_summary *vm, char (*lines)[PLACE_LINE_LEN]);
/*
 * A VM's panel in the ncurses view (beside its exit reasons), line by line,
 * bold for a section's header: who took its CPU, its wake-ups by reason and
 * by vector, its VMM's other threads, its placement. At most max lines;
 * returns how many.
 */
struct panel_line {
	char text[PLACE_LINE_LEN + 128];
	bool bold;
};
size_t vm_panel_lines(const struct summary *s, const struct vm_summary *vm, struct panel_line *out, size_t max);

/*
 * The window from prev to cur (prev NULL: since each vCPU was first seen).
 * Snapshots are not modified. names resolves VM, process and cgroup names.
 */
int summary_build(struct summary *s, const struct vcpustat_snapshot *prev, const struct vcpustat_snapshot *cur,
		  struct names *names, const struct summary_filter *filter);
void summary_free(struct summary *s);
void summary_free_vm(struct vm_summary *vm);

/* Guest address spaces (detail_summary rows of kind VCPUSTAT_DETAIL_CR3): most guest time first, then exits, CR3. */
int address_space_cmp(const void *a, const void *b);
/* The order of a VM's exit-detail rows: by kind, then count (descending), then target and access. */
int detail_summary_cmp(const void *a, const void *b);

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
/* Events per second of the window s (0 for an empty window). */
double summary_per_s(const struct summary *s, __u64 n);
/* A vCPU's halt polling into its VM's: the counts summed, halt_poll_ns the largest. */
void summary_add_polls(struct vm_summary *vm, const struct vcpu_summary *v);
/*
 * A vCPU's window into its VM's: the time in each state, preemptions,
 * wake-ups, migrations, exits (and those open), L2 time and nested summed,
 * and its halt polling (summary_add_polls).
 */
void summary_vm_add_vcpu(struct vm_summary *vm, const struct vcpu_summary *v);
/* A VM's exits from L2 in the window: handled here (L0), reflected to L1. */
void vm_nested_exits(const struct vm_summary *vm, __u64 *l0, __u64 *l1);

/*
 * The one JSON document of a refresh (docs/json.md). progs may be NULL.
 * summary_json_write() writes it into w (util/jsonw.h: `top -j`, at every
 * refresh); summary_json() returns it as a jansson tree (for those who add to it).
 */
struct jw;
void summary_json_write(struct jw *w, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs);
json_t *summary_json(const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs);

/* Plain-text tables (batch mode), top `top` rows per table (0: all). */
void summary_print(FILE *f, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs,
		   unsigned int top);

#endif /* VCPUSTAT_MODEL_SUMMARY_H */
