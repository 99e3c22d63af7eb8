/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * health.h - the window model's health: what KVM says of the host's VMs
 * against what vcpustat saw (model.h has the whole model).
 */
#ifndef VCPUSTAT_MODEL_HEALTH_H
#define VCPUSTAT_MODEL_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

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

#endif /* VCPUSTAT_MODEL_HEALTH_H */
