/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model.h - the window model: what happened to every VM and vCPU over a
 * window, and where it comes from. A window is built from two snapshots of
 * the maps (live, or replayed from a capture or a trace: base/snapshot.c,
 * summary.c) or from the intervals of a recording (report.c, playback.c),
 * and rendered as text or JSON (summary_text.c, summary_json.c) or by the
 * ncurses UI (user/cli/ui.c); the snapshots it starts from and the names
 * people recognize are the base layer's (base/base.h). The live view,
 * reports, time travel and the exporters all show this one model.
 */
#ifndef VCPUSTAT_MODEL_H
#define VCPUSTAT_MODEL_H

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

/*
 * ---- health.c: never blind without saying so (docs/vcpustat.md, "Health") ----
 * What KVM itself says of the VMs on this host (live/kvmview.c reads it: the
 * processes that hold a VM, and where debugfs lets it, KVM's count of each
 * VM's exits), against what vcpustat's programs saw, window after window.
 */
struct kvm_vm_seen {
	__u32 tgid;
	bool exits_known; /* KVM's exit count was read */
	__u64 exits;	  /* KVM's exits, summed over the VM's vCPUs */
	bool cpu_known;	  /* the VMM process's CPU time was read (/proc/<tgid>/stat) */
	__u64 cpu_ns;	  /* its user + system time */
	__u64 age_ns;	  /* how long the process has run (cpu_known) */
};

/* A VM that appeared since the previous check is judged once its VMM is this old (and ran). */
#define HEALTH_NEW_VM_AGE_NS 5000000000ull

/* A VM that used less CPU than this between two checks may be paused: its vCPUs unseen is not blindness. */
#define HEALTH_RUNNING_CPU_NS 10000000ull

struct kvm_view {
	__u64 ts; /* CLOCK_MONOTONIC ns when read (0: never read) */
	struct kvm_vm_seen *vms;
	size_t nr_vms;
	char source[16];     /* where the VMs were found: "debugfs" or "/proc" */
	char exits_why[160]; /* why KVM's exit counts are unknown ("" when known) */
};

/* What vcpustat counted of one VM since it attached (its vCPUs, dead ones too). */
struct health_seen {
	__u32 tgid;
	unsigned int nr_vcpus;
	__u64 kvm_exits, userspace_exits;
	__u64 oncpu_ns; /* its vCPUs' time on a CPU (guest, host, poll), closed intervals */
};

enum health_problem {
	HEALTH_VM_UNSEEN = 1 << 0,    /* KVM runs the VM, vcpustat tracks none of its vCPUs */
	HEALTH_EXITS_UNSEEN = 1 << 1, /* the VM exits (KVM counted exits, or its vCPUs return to their VMM for
					 exits), the programs counted none: kvm_exit does not fire for it */
	HEALTH_NO_EXIT_PROGRAM = 1 << 2, /* kvm_entry or kvm_exit is not attached while KVM has VMs */
};
#define HEALTH_NR_PROBLEMS 3
/* "vm_unseen", "exits_unseen", "no_exit_program" */
const char *health_problem_name(unsigned int bit);

/*
 * A VM's userspace exits that tell, without KVM's own counters, that
 * kvm_exit does not fire: a vCPU returns to its VMM only after a VM exit
 * (or a signal before any entry), so this many returns and no kvm_exit at
 * all means the tracepoint is silent.
 */
#define HEALTH_UEXITS_WITHOUT_EXITS 100
/*
 * Likewise a vCPU runs guest code only in KVM_RUN, and every tick, every
 * interrupt of its CPU is an exit: this much time on a CPU and no kvm_exit
 * at all means the tracepoint is silent (even a vCPU that never returns to
 * its VMM exits hundreds of times a second).
 */
#define HEALTH_ONCPU_WITHOUT_EXITS_NS 500000000ull

struct health_vm {
	__u32 tgid;
	unsigned int problems; /* enum health_problem bits */
	bool kvm_known;	       /* KVM's exit count is known for it */
	__u64 kvm_exits;       /* KVM's exits since the previous check (kvm_known) */
	__u64 seen_exits;      /* the programs' since the previous check */
	__u64 userspace_exits; /* its vCPUs' returns to the VMM since vcpustat attached */
	__u64 oncpu_ns;	       /* ... and their time on a CPU */
};

struct health {
	bool checked;	       /* a check was made against an earlier one (live windows; never in reports) */
	unsigned int problems; /* enum health_problem bits, all VMs together */
	unsigned int kvm_vms;  /* VMs KVM has */
	char source[16];       /* kvm_view.source */
	char exits_why[160];   /* kvm_view.exits_why */
	struct health_vm *vms; /* the VMs with a problem */
	size_t nr_vms;
};

/* What the previous check saw: each VM's KVM and vcpustat counts then. */
struct health_tracker {
	struct kvm_view prev;
	struct health_seen *prev_seen;
	size_t nr_prev_seen;
	bool have_prev;
};

/*
 * One check: now (KVM's view), seen (vcpustat's counts, nr entries) and
 * whether kvm_entry and kvm_exit are attached, against the previous check
 * (the first check only remembers). A VM is judged only once it has been
 * there for a whole check interval: unseen if vcpustat tracks none of its
 * vCPUs while it ran (KVM's exit count or its VMM's CPU time grew, by
 * HEALTH_RUNNING_CPU_NS: a paused VM has no events to see; with neither
 * known, it is taken to run), or one that appeared since, if its VMM is
 * HEALTH_NEW_VM_AGE_NS old and ran as much; its exits unseen if KVM's count grew while the programs' did not,
 * or (KVM's counts unknown) HEALTH_UEXITS_WITHOUT_EXITS returns to the VMM
 * or HEALTH_ONCPU_WITHOUT_EXITS_NS on a CPU and no kvm_exit at all. Fills *h (free with health_free()); 0 or -ENOMEM.
 * The tracker takes a copy of now and seen.
 */
int health_check(struct health_tracker *t, const struct kvm_view *now, const struct health_seen *seen, size_t nr,
		 bool exit_programs, struct health *h);
void health_free(struct health *h);
void health_tracker_free(struct health_tracker *t);
void kvm_view_free(struct kvm_view *v);
/* A deep copy (0 or -ENOMEM). */
int health_copy(struct health *dst, const struct health *src);
/*
 * One sentence for the user on h's problems, naming up to three VMs (names:
 * a VM's name by its tgid, may be NULL), e.g. "KVM runs 2 VMs that vcpustat
 * sees none of the vCPUs of (pid 812, 907)". "" when h has none.
 */
void health_message(const struct health *h, const char *(*name)(void *ctx, __u32 tgid), void *ctx, char *out,
		    size_t len);
/* health_message() of a window's health, the VMs named as the window names them (its declaration follows). */
struct summary;
void summary_health_message(const struct summary *s, char *out, size_t len);

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
 * ---- filter.c: what the offline commands' filters keep (docs/vcpustat.md, "Filters") ----
 * A set of numbers as the options give them ("0,2-3", repeatable): vCPU
 * indexes, thread ids, CPUs. Empty (n == 0): no filter, every number.
 */
#define ID_SET_MAX 64

struct id_set {
	uint32_t lo[ID_SET_MAX], hi[ID_SET_MAX]; /* the items given: [lo, hi] */
	size_t n;
	char text[160]; /* as given, items joined with ',' (for messages and headers) */
};

/*
 * Add a list ("3", "0,2-3") to s: 0, or -EINVAL (not numbers, a range that
 * goes down, too many items; err says why, without naming the option).
 */
int id_set_add(struct id_set *s, const char *list, struct vcpustat_error *err);
/* Is id in s (true for an empty s)? */
bool id_set_has(const struct id_set *s, uint32_t id);

/*
 * What a command keeps of a recording; filters combine with AND, and an
 * empty one keeps everything. vcpus and tids select vCPUs (a vCPU is kept
 * if its index is in vcpus and its thread id in tids); tids also selects
 * host threads in the host-thread views; pcpus keeps the time spent on those
 * CPUs: a vCPU's state time counts while its pcpu attribute is in the set
 * (off CPU, that is the CPU it last ran on or waits on), and an event
 * (transition, exit, wait, poll, migration) counts if its pcpu is in the set
 * when it happens (a migration: the CPU it goes to).
 */
#define FILTER_MAX_CGROUPS 16

struct summary_filter {
	const char *const *vms; /* VM names or pids to keep; NULL/0: all */
	size_t nr_vms;
	struct id_set vcpus, tids, pcpus;
	/*
	 * --cgroup: VMs whose VMM process's cgroup matches one of these
	 * (cgroup_matches()). Live, summary_build() asks /proc; offline,
	 * summary_filter_cgroups_to_vms() turns them into the VM names of the
	 * file (vms).
	 */
	const char *cgroups[FILTER_MAX_CGROUPS];
	size_t nr_cgroups;
};

/* Does f keep a VM whose VMM is in cgroup (the path, "" if unknown)? true without --cgroup. */
bool summary_filter_wants_cgroup(const struct summary_filter *f, const char *cgroup);
/* ... in cgroup, its container named (where this host's runtime does not) as a recording kept it. */
bool summary_filter_wants_recorded_cgroup(const struct summary_filter *f, const char *cgroup, const char *pod_name,
					  const char *pod_namespace, const char *name);

/* Does f keep the vCPU of this index and thread id (its VM aside)? */
bool summary_filter_wants_vcpu(const struct summary_filter *f, uint32_t index, uint32_t tid);
/* Does f narrow the vCPUs (--vcpu, --tid)? */
bool summary_filter_vcpus(const struct summary_filter *f);
/* Does f set any of --vcpu, --tid, --pcpu? */
bool summary_filter_narrows(const struct summary_filter *f);
/* The filters of f as options, for messages: "--vcpu 1 --pcpu 0-3" ("" if none). */
const char *summary_filter_text(const struct summary_filter *f, char *buf, size_t len);

/*
 * --cgroup on a recording: the VMs of r that --vm keeps and whose recorded
 * cgroup (/vms/<vm>/cgroup, its container named by this host's runtime or
 * as the recording kept it) matches become f's --vm list, by name: copies in
 * keep (the caller's, alive as long as f; the first FILTER_MAX_VMS VMs),
 * since commands may open the file again. 0 (f without --cgroup: nothing to
 * do); -ENOENT if no VM matches, with err naming the patterns and the VMs'
 * cgroups ("--cgroup web-*: no VM of FILE runs in such a cgroup (their
 * cgroups: a: /a.scope)"); -ENOMEM.
 */
#define FILTER_MAX_VMS 1024

struct filter_vms {
	char names[FILTER_MAX_VMS][128];
	const char *vms[FILTER_MAX_VMS];
};
int summary_filter_cgroups_to_vms(struct summary_filter *f, struct sht_reader *r, const char *file,
				  struct filter_vms *keep, struct vcpustat_error *err);

/*
 * Does each filter of f select something in the file r (whatever the
 * window)? Every item of --vcpu must be the index of a vCPU of a VM that
 * --vm keeps, every item of --tid the thread id of a vCPU or a host thread,
 * and some CPU of --pcpu must be in the file (a vCPU's pcpu or
 * /host/cpus/<n>). 0, or -ENOENT with err naming the filter and file
 * ("--vcpu 7: no such vCPU in FILE (its vCPUs: 0-1)"); -ENOMEM.
 */
int summary_filter_check(struct sht_reader *r, const char *file, const struct summary_filter *f,
			 struct vcpustat_error *err);

/*
 * The stretches of pc[0..n) (a vCPU's pcpu intervals, by start) whose CPU
 * is in cpus, adjacent ones merged, into out (room for n; may be pc).
 * Returns how many.
 */
size_t pcpu_on_set(const struct sht_interval *pc, size_t n, const struct id_set *cpus, struct sht_interval *out);
/* The time of [a, b) within the stretches on[0..n) (pcpu_on_set()'s). */
uint64_t on_set_ns(const struct sht_interval *on, size_t n, uint64_t a, uint64_t b);
/* Is t within one of the stretches on[0..n)? */
bool on_set_at(const struct sht_interval *on, size_t n, uint64_t t);
/*
 * The stretches of [t1, t2) the vCPU vc (/vms/<vm>/vcpus/<n>) spent with its
 * pcpu in cpus: *out (free it), *n of them. 0 or the reader's error.
 */
int vcpu_on_set(struct sht_reader *r, uint32_t vc, const struct id_set *cpus, uint64_t t1, uint64_t t2,
		struct sht_interval **out, size_t *n, struct vcpustat_error *err);
/*
 * Cut the intervals iv[0..*n) (by start, not overlapping) to the stretches
 * on[0..non): an interval partly on them becomes its pieces there, one off
 * them goes. *iv is reallocated. 0 or -ENOMEM.
 */
int intervals_clip(struct sht_interval **iv, size_t *n, const struct sht_interval *on, size_t non);

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

/*
 * ---- report.c: a window of a recording ----
 * The live view's tables for any window of a recording: builds the
 * window model (above) from the intervals of an SHT file written by
 * `vcpustat record`, `replay` or `import` (docs/sht-attributes.md).
 */

/*
 * The summary of [t1, t2) (ns since the trace start) of the file r:
 * per-state time, transitions, exits with their latencies from the
 * exit_reason and userspace_exit intervals, run-queue waits, and
 * (for level-full recordings) culprits from /host/cpus/<n>/current_tid.
 * An exit belongs to the window of its kvm_exit (kvm_userspace_exit), in the
 * vCPU's counts and in the reason tables alike, with its whole handling time;
 * one the file ends in the middle of is in neither (docs/record.md).
 * In a report, ns_total counts from the start of the file; wall_t1 (or, for
 * a file without a wall clock, no_wall_clock) is set for the text header.
 * *has_culprits says whether the file could tell who took the CPU.
 */
int report_build(struct summary *s, struct sht_reader *r, uint64_t t1, uint64_t t2, const struct summary_filter *f,
		 bool *has_culprits, struct vcpustat_error *err);

/*
 * The first child of parent, SHT_NO_ATTR if parent is SHT_NO_ATTR (an
 * attribute the file does not have: no /vms, a VM without vcpus), where
 * sht_attr_first_child() would give the first top-level attribute.
 */
uint32_t report_first_child(struct sht_reader *r, uint32_t parent);
/* A level-full file: a CPU has current_tid (level vcpu has runner_tid only, where tracked threads waited). */
bool report_host_recorded(struct sht_reader *r);

/* The first of iv[0..n) (one attribute's intervals: sorted, not overlapping) that ends after t; n if none. */
size_t report_first_after(const struct sht_interval *iv, size_t n, uint64_t t);
/* The interval of iv[0..n) (sorted, not overlapping) that covers t and has a value; NULL if none. */
const struct sht_interval *report_covering(const struct sht_interval *iv, size_t n, uint64_t t);

/* The first non-null integer of attr (a VM's pid, a vCPU's tid), def if none. */
int64_t report_first_int(struct sht_reader *r, uint32_t attr, int64_t def);

/* A thread of a recording and the first value of its name and pid attributes. */
struct report_thread {
	uint32_t th;	  /* /host/threads/<tid> or /vms/<vm>/threads/<guest tid>; SHT_NO_ATTR: none */
	uint32_t tid;	  /* the caller's (report_thread_names() leaves it) */
	uint32_t pid;	  /* the first integer of th's pid, 0 if none */
	const char *name; /* the first string of th's name (the reader's), "" if none */
	const char *cgroup; /* the first string of th's cgroup, "" if none */
	uint64_t pidns;	    /* the first integer of th's pidns, 0 if none */
	/* the first strings of th's pod_name, pod_namespace, container_name, "" if none */
	const char *pod_name, *pod_namespace, *container_name;
};

/*
 * The name and pid of the n threads t[i].th (each at most once) from one
 * range query over those attributes of them all: a query per thread would
 * read every leaf of the file again for each. 0, -ENOMEM or the query's
 * error (with err); t[i].name and pid are set ("", 0) whatever it returns.
 */
int report_thread_names(struct sht_reader *r, struct report_thread *t, size_t n, struct vcpustat_error *err);

/*
 * A vCPU of a recording (vc: its attribute /vms/<vm>/vcpus/<n>) on CPUs over
 * [t1, t2): visit() for each stretch in state guest or host, with its CPU (the
 * pcpu attribute), in time order; a non-zero return stops and is returned.
 */
int vcpu_on_cpu(struct sht_reader *r, uint32_t vc, uint64_t t1, uint64_t t2,
		int (*visit)(void *ctx, uint64_t a, uint64_t b, uint32_t cpu, int state), void *ctx,
		struct vcpustat_error *err);

/* Does the filter keep the VM of this name and pid (no filter: every VM)? */
bool summary_filter_wants(const struct summary_filter *f, const char *name, uint32_t pid);

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

/*
 * ---- pcpu.c: the fused per-physical-CPU view (`vcpustat report --pcpu`) ----
 * Per CPU over [t1, t2): time in guest code and in the hypervisor per VM and
 * vCPU (from the vCPUs' state and pcpu), host threads and idle (from
 * /host/cpus/<n>/current_tid: --level full only, host_recorded), the rest
 * unknown; the top occupants (top, 0: all; the rest summed in others).
 */
enum pcpu_kind { PCPU_IDLE, PCPU_GUEST, PCPU_HYPERVISOR, PCPU_HOST, PCPU_NR_KINDS };
#define PCPU_UNKNOWN PCPU_NR_KINDS /* ns[] index: the window's time no record covers */

struct pcpu_occupant {
	int kind;     /* PCPU_GUEST, PCPU_HYPERVISOR (a vCPU), PCPU_HOST (a host thread) */
	char vm[128]; /* a vCPU's VM, or the VM whose VMM process the host thread is in; "" */
	int vcpu;
	uint32_t tid, pid;
	char comm[64];
	int64_t guest_tid;    /* in guest code: the guest thread (0: the guest CPU idle), -1: not known */
	char guest_comm[64];  /* its name, from an imported guest trace */
	uint64_t ns;
};

struct pcpu_row {
	uint32_t cpu;
	uint64_t ns[PCPU_NR_KINDS + 1];
	struct pcpu_occupant *occ; /* most first */
	size_t nr_occ, others;
	uint64_t others_ns;
};

struct pcpu_view {
	uint64_t t1, t2;
	bool host_recorded;
	struct pcpu_row *cpus; /* by CPU number: the CPUs something was recorded on */
	size_t nr_cpus;
};

/*
 * Every stretch of every CPU's time over [t1, t2] that the recording tells:
 * a vCPU in guest code or the hypervisor (vm: the VM's index among /vms, vcpu,
 * tid), a host thread (tid) or idle. Per CPU in time order for vCPUs and for
 * the host side each, not merged; only the CPUs in cpus (NULL or empty: all).
 * visit's non-zero return stops the walk.
 */
struct pcpu_seg {
	uint32_t cpu;
	uint64_t start, end;
	int kind; /* enum pcpu_kind */
	int vm, vcpu; /* -1 for host threads and idle */
	uint32_t tid;
	int64_t guest_tid; /* in guest code, with a guest trace: the guest thread (0: idle); else -1 */
};
int pcpu_walk(struct sht_reader *r, uint64_t t1, uint64_t t2, const struct id_set *cpus,
	      int (*visit)(void *ctx, const struct pcpu_seg *s), void *ctx, struct vcpustat_error *err);
/*
 * The view; f (may be NULL): --pcpu keeps those CPUs' rows, --tid the
 * occupants with those thread ids (a CPU's shares stay whole).
 */
int pcpu_build(struct pcpu_view *v, struct sht_reader *r, uint64_t t1, uint64_t t2, unsigned int top,
	       const struct summary_filter *f, struct vcpustat_error *err);
void pcpu_print(FILE *f, const struct pcpu_view *v);
json_t *pcpu_json(const struct pcpu_view *v);
void pcpu_free(struct pcpu_view *v);

/*
 * The window's fields of `vcpustat report -j` (docs/json.md), added to doc (a
 * summary_json() document of that window): file, from_ns, to_ns, wall_clock,
 * from, to (null without a wall clock), culprits_recorded, and recovered for
 * an unfinished file.
 */
void report_json_window(json_t *doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			bool has_culprits);

/*
 * ---- report_show.c: what `vcpustat report` shows of a window [t1, t2] ----
 * With doc NULL, text to f (a line naming file and window, then the view);
 * else the JSON document in *doc (the caller prints and frees it). 0, or a
 * negative errno with err filled.
 *
 * report_show_window: the live view's tables (report_build; top rows per
 * table, 0: all); *nr_vms the VMs the filters kept. When filter has --vm or
 * --vcpu/--tid/--pcpu and kept no VM, nothing is shown (the caller's error
 * says why: cli_filter_none_kept, cli_vm_none_matched).
 * report_show_placement: --placement (host_topology: this machine's, from
 * sysfs); nothing shown when --vm kept no VM (*nr_vms 0).
 * report_show_pcpu: --pcpu, top occupants per CPU.
 * report_show_flow: --flow THREAD (target: flow_parse_target()'s), culprits
 * below min_impact left out; -ENOENT when the file has no such thread.
 */
int report_show_window(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		       const struct summary_filter *filter, unsigned int top, size_t *nr_vms, struct vcpustat_error *err);
int report_show_placement(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			  const struct summary_filter *filter, bool host_topology, size_t *nr_vms,
			  struct vcpustat_error *err);
int report_show_pcpu(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		     const struct summary_filter *filter, unsigned int top, struct vcpustat_error *err);
struct flow_target;
int report_show_flow(FILE *f, json_t **doc, struct sht_reader *r, const char *file, const struct flow_target *target,
		     const char *thread, uint64_t t1, uint64_t t2, double min_impact, struct vcpustat_error *err);

/*
 * ---- playback.c: time travel over a recording ----
 * Time travel over a recording (`vcpustat top --file`, and
 * `--demo` without /dev/kvm): the live view's windows one after another,
 * from any instant of an SHT file, as `atop -r` plays its logs. Every window
 * is the report's window model (report_build): a step shows exactly what
 * `vcpustat report --from T1 --to T2` shows for the same window.
 *
 * Windows are [t, t + step); the last one ends at the end of what the file
 * holds (an unfinished file ends at its last sealed node), so it may be
 * shorter, or up to a tenth of a step longer. Stepping moves t by whole
 * windows; seeking puts t anywhere.
 */

struct playback {
	struct sht_reader *r; /* owned */
	const char *path;
	uint64_t start, end; /* what can be played: [start, end), ns since the trace start */
	uint64_t step;	     /* window length, ns */
	uint64_t t;	     /* the current window starts here */
};

/* Open path (a .sht file) at its start. 0, or a negative errno with err naming the file. */
int playback_open(struct playback *pb, const char *path, uint64_t step_ns, struct vcpustat_error *err);
void playback_close(struct playback *pb);

/* The current window [*t1, *t2). */
void playback_window(const struct playback *pb, uint64_t *t1, uint64_t *t2);
/* The current window is the last one of the file. */
bool playback_at_end(const struct playback *pb);
/* Move by n windows (n < 0: back), stopping at the first and the last; returns the windows moved. */
long playback_step(struct playback *pb, long n);
/*
 * The current window starts at t (ns since the trace start); -ERANGE, with
 * err saying what the file holds, if t is at or after its end.
 */
int playback_seek(struct playback *pb, uint64_t t, struct vcpustat_error *err);
/* Parse a time as `report --from` does (sht_parse_time) and seek to it. */
int playback_seek_str(struct playback *pb, const char *s, struct vcpustat_error *err);

/* The summary of the current window: report_build(). */
int playback_build(struct playback *pb, struct summary *s, const struct summary_filter *f, bool *has_culprits,
		   struct vcpustat_error *err);

/*
 * What the recording is, from its metadata (docs/json.md "source"): file,
 * host, recorded (wall time of its start), command, workload, level, duration_s.
 */
json_t *playback_source_json(const struct playback *pb);
/* "recording of HOST at TIME (WHAT RAN)" for people. */
void playback_label(const struct playback *pb, char *buf, size_t len);
/* "12.000" : seconds since the start of the file, for positions. */
const char *playback_seconds(uint64_t t, char *buf, size_t len);

/*
 * ---- query_view.c: what `vcpustat query` shows of an SHT file ----
 * With doc NULL, text to f; else the JSON document in *doc (the caller
 * prints and frees it). Attributes named `state` show vCPU state names (JSON:
 * the number and the name). 0, or a negative errno with err filled.
 *
 * query_show_info: the file (version, times, counts, metadata).
 * query_show_at: the value at t of every attribute selected in want (NULL:
 * all) that holds one or has no children.
 * query_show_range: the intervals in [t1, t2] of the attributes in want.
 */
int query_show_info(FILE *f, json_t **doc, struct sht_reader *r, const char *file, bool utc,
		    struct vcpustat_error *err);
int query_show_at(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t, const uint8_t *want,
		  bool utc, struct vcpustat_error *err);
int query_show_range(FILE *f, json_t **doc, struct sht_reader *r, const char *file, const uint8_t *want, uint64_t t1,
		     uint64_t t2, bool utc, struct vcpustat_error *err);

/*
 * The filters of query: clear in want (one byte per attribute) those f does
 * not keep. Every filter given must keep an attribute: --vm the subtree
 * /vms/<vm>; --vcpu /vms/<any>/vcpus/<n>; --tid the subtrees of the vCPUs
 * whose tid it is and /host/threads/<tid>; --pcpu /host/cpus/<cpu> and the
 * subtrees of the vCPUs whose pcpu was one of those CPUs at some time of
 * [t1, t2] (--at: t1 = t2). *kept: the attributes left. 0 or -ENOMEM.
 */
int query_filter(struct sht_reader *r, const struct summary_filter *f, uint64_t t1, uint64_t t2, uint8_t *want,
		 size_t *kept, struct vcpustat_error *err);

/*
 * The selection of query: *want (one byte per attribute, the caller frees;
 * NULL: every attribute). query_select_path: the attributes of --path P
 * (sht_select; path NULL: leaves *want NULL), 0, -ENOENT (no such attribute)
 * or -ENOMEM. query_narrow: then the filters of f over [t1, t2]
 * (query_filter; *want made first if NULL), nothing to do without --vm or
 * a filter that narrows; 0, -ENOENT with err "--vcpu 7: no attribute of
 * FILE matches these filters together" when none is kept, or -ENOMEM.
 */
int query_select_path(struct sht_reader *r, const char *path, uint8_t **want, struct vcpustat_error *err);
int query_narrow(struct sht_reader *r, const char *file, const struct summary_filter *f, uint64_t t1, uint64_t t2,
		 uint8_t **want, struct vcpustat_error *err);

/*
 * The times of query: --at T (at; then *t1 = *t2 = T), else the range of
 * --path between --from and --to (NULL: the file's start, its end). 0, or
 * -EINVAL with err naming the option (a time that does not parse, --at after
 * the end of the history of file), -ERANGE when --from is after --to.
 */
int query_times(struct sht_reader *r, const char *file, const char *at, const char *from, const char *to,
		uint64_t *t1, uint64_t *t2, struct vcpustat_error *err);

/*
 * ---- flow.c: execution-flow recovery (preemption-analysis paper, Alg. 1-2) ----
 * Everything that delayed one thread (a host thread, or a guest thread of a
 * VM whose guest trace was imported) over its lifespan in a window of a
 * recording: the ordered intervals of its states, each with who ran instead
 * (the culprit: resolve() through host CPUs and, when the one who ran is a
 * vCPU of a VM with a guest trace, into that VM down to its guest thread,
 * with cycle protection), the culprits with their time and
 * D(T) = time T delayed the thread / the thread's lifespan (eq. 3).
 * flow_show.c renders it as text or JSON (docs/json.md).
 */

/* What the thread was doing over an interval of its flow. */
enum flow_kind {
	FLOW_RUNNING = 0,   /* it ran (a guest thread or a vCPU thread: in guest mode) */
	FLOW_HYPERVISOR,    /* its vCPU was in the hypervisor (host mode: exits, the VMM) */
	FLOW_GUEST_RUNQ,    /* runnable in its guest's run queue (preempted or woken, not current) */
	FLOW_HOST_RUNQ,	    /* runnable on the host, not running: preempted or woken (its vCPU, for a guest thread) */
	FLOW_HOST_BLOCKED,  /* a guest thread current in the guest whose vCPU was idle or blocked on the host */
	FLOW_BLOCKED,	    /* sleeping by itself (blocked; a vCPU thread: also idle): no culprit */
	FLOW_NR_KINDS,
};

/* What a culprit is. */
enum flow_role {
	FLOW_ROLE_THREAD = 0, /* a thread: of the host, or a guest thread of a VM */
	FLOW_ROLE_IDLE,	      /* a CPU's idle task: the host's, or a guest CPU's (guest tid 0) */
	FLOW_ROLE_HYPERVISOR, /* a vCPU in host mode: KVM and the VMM handling its exits (system: host) */
	FLOW_ROLE_VCPU,	      /* a vCPU in guest mode, its guest thread unknown (no guest trace) */
	FLOW_ROLE_UNRESOLVED, /* not known: no record of who ran, or resolve() met a cycle */
	FLOW_NR_ROLES,
};

struct flow_culprit {
	char system[64];  /* "host", or the VM's name */
	bool in_vm;	  /* system is a VM */
	uint32_t pid;	  /* host: the thread's process (the VMM, for a hypervisor); VM: 0 (guest traces carry none) */
	char process[64]; /* the process's name; in a VM: "guest" for guest threads, "vcpus" for vCPUs, "idle" */
	uint32_t tid;	  /* host tid, or guest tid (0: idle); a hypervisor or vCPU: the vCPU's host thread */
	char name[32];	  /* the thread's name ("swapper" for idle) */
	enum flow_role role;
	char vm[64];	  /* hypervisor, vCPU, unresolved: the VM concerned ("" if none) */
	int vcpu;	  /* and the vCPU index, else -1 */
	bool cycle;	  /* unresolved because resolve() came back to a CPU it was resolving */
	uint64_t ns;	  /* time it delayed the thread (in the lifespan) */
	double impact;	  /* D(T) = ns / lifespan */
};

struct flow_interval {
	uint64_t start, end;   /* [start, end), ns since the trace start */
	enum flow_kind kind;
	int32_t culprit;       /* index in flow.culprits, -1: none (running, blocked) */
};

/* The thread whose flow is wanted: `TID` (host) or `VM:GUEST_TID`. */
struct flow_target {
	bool guest;
	char vm[64]; /* guest: the VM's name (or its VMM pid, as given) */
	uint32_t tid;
};

struct flow {
	struct flow_target target;
	char vm[64];	     /* the target's VM (its name in the file): guest threads and vCPU threads */
	int vcpu;	     /* a vCPU thread: its index, else -1 */
	char name[32];	     /* the thread's name */
	uint64_t from, to;   /* the window asked for */
	uint64_t start, end; /* the thread's lifespan in the window */
	uint64_t ns[FLOW_NR_KINDS];
	struct flow_interval *iv; /* ordered, adjacent ones with the same kind and culprit merged */
	size_t niv;
	struct flow_culprit *culprits; /* by ns, descending (then system, tid) */
	size_t nculprits;
	bool host_cpus;	     /* the file records who ran on each CPU (level full) */
	bool guest_trace;    /* some VM of the file has guest threads (an import with guest traces) */
};

/* "running", "hypervisor", "guest_runqueue", "host_runqueue", "host_blocked", "blocked" */
const char *flow_kind_name(unsigned int kind);
/* "thread", "idle", "hypervisor", "vcpu", "unresolved" */
const char *flow_role_name(unsigned int role);

/* Parse THREAD: a host tid ("1234") or "VM:GUEST_TID" (the last ':' splits). -EINVAL, err says why. */
int flow_parse_target(const char *s, struct flow_target *t, struct vcpustat_error *err);

/*
 * The flow of t in the window [from, to) of r. -ENOENT (err names the file
 * and the thread) when the file has no such thread or VM, or the thread does
 * not live in the window; -ENOMEM, or a reader's error otherwise.
 */
int flow_build(struct flow *f, struct sht_reader *r, const struct flow_target *t, uint64_t from, uint64_t to,
	       struct vcpustat_error *err);
void flow_free(struct flow *f);

/*
 * flow_show.c: the flow as text (the intervals, the time by kind, the tree
 * system -> process -> thread with sums and D(T)), or as the "flow" object of
 * `report --flow -j` (docs/json.md). Culprits whose D(T) is below min_impact
 * are left out of the tree (their time is summed as hidden).
 */
void flow_print(FILE *out, const struct flow *f, struct sht_reader *r, const char *file, double min_impact);
json_t *flow_json(const struct flow *f, struct sht_reader *r, const char *file, double min_impact);

#endif /* VCPUSTAT_MODEL_H */
