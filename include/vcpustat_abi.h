/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vcpustat_abi.h - the binary interface between the BPF programs and user
 * space: the event that drives the state machine (also the injection
 * program's context), the ring-buffer record, and the map keys and values.
 * docs/record-abi.md documents it; keep both in sync, and bump
 * VCPUSTAT_ABI_VERSION on any layout change. The sizes and offsets that
 * something outside this header depends on (the ring buffers, the capture
 * file, the injection program's context, the hash maps' keys, the hot page)
 * are static assertions below each struct, compiled on both sides (the BPF
 * objects and user space): a change that moves them fails both builds. A
 * hash map's key has no implicit padding: every byte of it is the key.
 */
#ifndef VCPUSTAT_ABI_H
#define VCPUSTAT_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "vcpu_fsm.h"
#include "latency_hist.h"

#define VCPUSTAT_ABI_VERSION 8

/* What happened (struct vcpustat_event.type; also record.cause). */
enum vcpustat_event_type {
	VCPUSTAT_EV_NONE = 0,
	VCPUSTAT_EV_SWITCH,	    /* sched_switch: tid/tgid = prev, tid2/tgid2 = next,
				       arg0 = prev_state (TASK_* bits, 0 = running),
				       arg1 = preempt (1: involuntary),
				       arg2 = prev's cgroup id, comm = prev's name
				       (0 / empty: the handler reads them from current) */
	VCPUSTAT_EV_WAKEUP,	    /* sched_wakeup: tid/tgid = woken, arg0 = target cpu;
				       for a tracked thread, arg2 = VCPUSTAT_RUNNER_KNOWN when
				       tid2/tgid2 = the thread running on the target cpu
				       (0: its idle task) */
	VCPUSTAT_EV_WAKEUP_NEW,	    /* sched_wakeup_new: same */
	VCPUSTAT_EV_PROCESS_EXIT,   /* sched_process_exit: tid/tgid = exiting thread,
				       arg0 = group_dead (last thread of the process) */
	VCPUSTAT_EV_MIGRATE,	    /* sched_migrate_task: tid/tgid, arg0 = dest cpu,
				       arg1 = orig cpu; arg2 = VCPUSTAT_RUNNER_KNOWN when
				       tid2/tgid2 = the thread running on dest (the move
				       runs there: a pull by its load balancer) */
	VCPUSTAT_EV_KVM_ENTRY,	    /* kvm_entry: tid/tgid = current, arg0 = vcpu_id */
	VCPUSTAT_EV_KVM_EXIT,	    /* kvm_exit: arg0 = exit_reason, arg1 = isa,
				       arg2 = vcpu_id | VCPUSTAT_EXIT_GSYS if the guest
				       RIP was in the upper (kernel) half */
	VCPUSTAT_EV_USERSPACE_EXIT, /* kvm_userspace_exit: arg0 = reason, arg1 = errno */
	VCPUSTAT_EV_KVM_RUN,	    /* kvm_fpu(1): KVM_RUN entered */
	VCPUSTAT_EV_HYPERCALL,	    /* kvm_hypercall: arg0 = nr, arg1 = a0, arg2 = a1 */
	VCPUSTAT_EV_SEED,	    /* user space adds a vCPU it found (a VM already running):
				       tid/tgid, arg0 = vCPU index, comm = thread name */
	VCPUSTAT_EV_PIO,	    /* kvm_pio: arg0 = port, arg1 = rw (1: out), arg2 = size */
	VCPUSTAT_EV_MMIO,	    /* kvm_mmio: arg0 = guest-physical address, arg1 = type
				       (KVM_TRACE_MMIO_*: 0 read unsatisfied, 1 read, 2 write), arg2 = len */
	VCPUSTAT_EV_MSR,	    /* kvm_msr: arg0 = MSR index, arg1 = write, arg2 = exception */
	VCPUSTAT_EV_PAGE_FAULT,	    /* kvm_page_fault: arg0 = fault address (guest-physical for
				       nested/EPT faults), arg1 = error code */
	VCPUSTAT_EV_HALT,	    /* an in-kernel halt begins (kvm_vcpu_halt), on the vCPU's
				       thread: arg0 = its halt_poll_ns, arg1 = 1 if KVM
				       polls this halt (halt_poll_ns != 0 and the guest
				       left host polling on) */
	VCPUSTAT_EV_HALT_END,	    /* kvm_vcpu_wakeup: the halt ended; arg0 = its ns (poll
				       and sleep), arg1 = waited (it slept), arg2 = valid */
	VCPUSTAT_EV_HALT_POLL_NS,   /* kvm_halt_poll_ns: arg0 = new, arg1 = old,
				       arg2 = vcpu_id | grow << 32 */
	VCPUSTAT_EV_APIC_ACCEPT,    /* kvm_apic_accept_irq: a LAPIC accepted an interrupt;
				       tid = current, arg0 = the target's APIC id, arg1 = vector */
	VCPUSTAT_EV_WAKING,	    /* sched_waking, in the waker's context (sched_wakeup may
				       fire on the target's CPU): tid/tgid = the woken,
				       tid2 = the waker (current) */
	VCPUSTAT_EV_VMM_SEED,	    /* user space adds a thread of a VM's VMM that is no vCPU
				       (emulator, I/O thread, vhost worker): tid = it,
				       tgid = the VM, arg0 = enum vcpustat_vmm_kind,
				       comm = its name */
	VCPUSTAT_EV_INJ_VIRQ,	    /* kvm_inj_virq: KVM injects an interrupt into the current
				       vCPU (its next entry delivers it): arg0 = vector */
	VCPUSTAT_EV_NUMA_MOVE,	    /* sched_move_numa, sched_swap_numa: the kernel's NUMA
				       balancing moves tid/tgid: arg0 = from cpu, arg1 = to cpu */
	VCPUSTAT_EV_GUEST_CR3,	    /* kvm_exit (a second program, --address-spaces), after the
				       exit's own event: the guest's CR3 at the exit, page-aligned
				       (arg0; VCPUSTAT_CR3_UNKNOWN: KVM held no valid copy) */
	VCPUSTAT_EV_NESTED_ENTER,   /* kvm_nested_vmenter: the L1 hypervisor in the vCPU ran
				       VMRUN/VMLAUNCH/VMRESUME; its next entries run its guest (L2) */
	VCPUSTAT_EV_NESTED_EXIT,    /* kvm_nested_vmexit_inject: KVM reflects an exit of L2 to
				       L1 (an emulated VM exit): the vCPU is back in L1 */
	VCPUSTAT_NR_EVENTS,
};

/*
 * One event, as the tracepoint handlers build it and as the injection
 * program receives it: 12 u64 slots, exactly the raw_tp u64-array context
 * (ctx_size_in = sizeof(struct vcpustat_event) = 96 bytes). Fields the event
 * type does not use are zero. comm is the current thread's name for KVM
 * events (used to read the vCPU index from names like "CPU 3/KVM") and the
 * previous thread's name for switches (culprits); all-zero means "not given":
 * the BPF handler then reads the current task's comm.
 */
struct vcpustat_event {
	__u64 type; /* enum vcpustat_event_type */
	__u64 ts;   /* ns, CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 cpu;  /* CPU the event happened on */
	__u64 tid;
	__u64 tgid;
	__u64 tid2;
	__u64 tgid2;
	__u64 arg0;
	__u64 arg1;
	__u64 arg2;
	char comm[16];
};

/* The raw_tp context of the injection program: 12 u64 slots (docs/record-abi.md's table). */
_Static_assert(sizeof(struct vcpustat_event) == 96, "vcpustat_event: 12 u64 slots, 96 bytes");
_Static_assert(__builtin_offsetof(struct vcpustat_event, arg2) == 9 * 8, "vcpustat_event: arg2 is slot 9");
_Static_assert(__builtin_offsetof(struct vcpustat_event, comm) == 10 * 8, "vcpustat_event: comm is slots 10-11");

/* sched_wakeup's and sched_migrate_task's arg2: tid2/tgid2 is the thread on the target CPU. */
#define VCPUSTAT_RUNNER_KNOWN 1ULL

/* kvm_exit's arg2: bit 32 = the exit left guest kernel mode (64-bit guests: RIP bit 63). */
#define VCPUSTAT_EXIT_GSYS (1ULL << 32)

/*
 * Where the classic tp/ programs find their tracepoint's fields (the rodata
 * tp_fields, set by the loader before load from the tracepoint's format in
 * tracefs, events/kvm/<event>/format): the offset in the raw event and the
 * size in bytes; size 0 where this kernel's tracepoint has no such field.
 * docs/kernels.md.
 */
struct vcpustat_tp_field {
	__u16 off;
	__u16 size;
};

struct vcpustat_tp_fields {
	struct vcpustat_tp_field entry_vcpu_id;	 /* kvm_entry */
	struct vcpustat_tp_field exit_reason;	 /* kvm_exit */
	struct vcpustat_tp_field exit_isa;
	struct vcpustat_tp_field exit_vcpu_id;
	struct vcpustat_tp_field exit_guest_rip;
	struct vcpustat_tp_field pf_address;	 /* kvm_page_fault */
	struct vcpustat_tp_field pf_error_code;
	struct vcpustat_tp_field apic_apicid;	 /* kvm_apic_accept_irq */
	struct vcpustat_tp_field apic_vec;
};

/* Ring-buffer record types (struct vcpustat_record.type). */
enum vcpustat_record_type {
	VCPUSTAT_REC_NONE = 0,
	VCPUSTAT_REC_STATE,	/* vCPU state change: from -> to at ts.
				   cause KVM_EXIT: arg0 = exit reason, arg1 = isa;
				   cause USERSPACE_EXIT: arg0 = reason;
				   cause SWITCH (switch-in): arg0 = cpu */
	VCPUSTAT_REC_EXIT,	/* kvm_exit that changed no state (HOST -> HOST):
				   arg0 = reason, arg1 = isa */
	VCPUSTAT_REC_PCPU,	/* vCPU's pCPU changed: arg0 = new cpu */
	VCPUSTAT_REC_VCPU_NEW,	/* a thread became a vCPU: vcpu = index, arg0 = how
				   the index was found (enum vcpustat_index_src) */
	VCPUSTAT_REC_VCPU_GONE, /* the vCPU's thread exited: from = last state */
	VCPUSTAT_REC_SWITCH,	/* (level full) sched_switch on cpu: tid/tgid = prev,
				   arg0 = next tid, arg1 = next tgid,
				   from = 1 if prev still runnable, else 0;
				   to = 1 if prev is exiting */
	VCPUSTAT_REC_WAKEUP,	/* (level full) wakeup of tid on cpu arg0 */
	VCPUSTAT_REC_HYPERCALL, /* kvm_hypercall with the sync nr: arg0/arg1 = a0 low/high */
	VCPUSTAT_REC_SYNC_ENTRY, /* first kvm_entry after a sync hypercall: arg0/arg1 = key */
	VCPUSTAT_REC_UEXIT,	/* kvm_userspace_exit that changed no state: arg0 = reason */
	VCPUSTAT_REC_RUN,	/* KVM_RUN entered, closing an open userspace exit: arg0 = its reason */
	VCPUSTAT_REC_DETAIL,	/* the open exit's first access of a table (exit details): from = kind,
				   to = access, arg0/arg1 = address low/high (page faults: the page) */
	VCPUSTAT_REC_HALT_POLL_NS, /* the vCPU's halt_poll_ns changed (or was first seen): arg0 = it */
	VCPUSTAT_REC_WAKE,	   /* a vCPU woken from sleep reached its first kvm_entry (before that
				      entry's REC_STATE, same ts): arg0 = enum vcpu_wake_reason,
				      arg1 = ns since the wake-up (capped at 2^32 - 1),
				      from = the vector injected at that entry (kvm_inj_virq;
				      0: none seen) */
	VCPUSTAT_REC_GUEST_CR3,	   /* the guest's CR3 at an exit (EV_GUEST_CR3) differs from its last
				      one: arg0/arg1 = CR3 low/high, ts = the exit's (the state's start) */
	VCPUSTAT_REC_NUMA_MOVE,	   /* the kernel's NUMA balancing moved the vCPU (EV_NUMA_MOVE):
				      arg0 = its numa_moves after this one, arg1 = from CPU (low 16
				      bits) and to CPU (high 16) */
	VCPUSTAT_REC_NESTED,	   /* the vCPU went into L2 (EV_NESTED_ENTER: arg0 = 2) or back
				      to L1 (EV_NESTED_EXIT: arg0 = 1) */
	VCPUSTAT_REC_VMM,	   /* (level vcpu only) a thread of a VM's VMM that is no vCPU
				      (vmm_threads) changed state: tid = it, tgid = the VM,
				      from = enum vcpustat_vmm_kind, to = enum vcpustat_vmm_state
				      (UNKNOWN: it exited or became a vCPU), arg0 = the CPU it
				      runs on, waits on or left; also when a waiting one moves
				      to another run queue (to WAIT again, arg0 the new CPU) */
	VCPUSTAT_REC_RUNNER,	   /* (level vcpu only) who runs on CPU arg0 while tracked threads
				      (vCPUs, VMM threads) wait on its run queue: the culprits of a
				      recording. from = enum vcpustat_runner: IS: tid/tgid runs
				      there from ts on (0: idle); UNKNOWN: a wait began there and
				      the thread running was not seen (until its next switch);
				      NONE: no tracked thread waits there any more */
	VCPUSTAT_NR_RECORDS,
};

#define VCPUSTAT_VCPU_NONE 0xffffu

/* REC_RUNNER's from. */
enum vcpustat_runner {
	VCPUSTAT_RUNNER_IS = 0,
	VCPUSTAT_RUNNER_UNKNOWN,
	VCPUSTAT_RUNNER_NONE,
};

/* One ring-buffer record: 32 bytes, naturally aligned. */
struct vcpustat_record {
	__u64 ts;    /* ns, CLOCK_MONOTONIC */
	__u32 tid;   /* the vCPU thread (or prev thread for REC_SWITCH) */
	__u32 tgid;  /* its process: the VM */
	__u8 type;   /* enum vcpustat_record_type */
	__u8 cause;  /* enum vcpustat_event_type that produced it */
	__u8 from;   /* enum vcpu_fsm_state before */
	__u8 to;     /* enum vcpu_fsm_state after */
	__u16 cpu;   /* CPU the event happened on */
	__u16 vcpu;  /* vCPU index, VCPUSTAT_VCPU_NONE if not a vCPU */
	__u32 arg0;
	__u32 arg1;
};

_Static_assert(sizeof(struct vcpustat_record) == 32, "vcpustat_record: 32 bytes");
_Static_assert(__builtin_offsetof(struct vcpustat_record, type) == 16, "vcpustat_record: type at 16");
_Static_assert(__builtin_offsetof(struct vcpustat_record, cpu) == 20, "vcpustat_record: cpu at 20");
_Static_assert(__builtin_offsetof(struct vcpustat_record, arg0) == 24, "vcpustat_record: arg0 at 24");

/*
 * With record_raw set (rodata), every event the handler runs on also goes to
 * the ring buffer as a whole struct vcpustat_event (96 bytes, with comm and
 * cgroup id filled in) just before it is handled: a capture that user-space
 * replay turns into exactly the same records. Ring-buffer entries are told
 * apart by size: 32 bytes = struct vcpustat_record, 96 = struct vcpustat_event.
 */
_Static_assert(sizeof(struct vcpustat_record) != sizeof(struct vcpustat_event),
	       "ring-buffer entries are told apart by size: a record and an event must differ");

/* Record levels (rodata record_level): what goes to the ring buffer. */
enum vcpustat_record_level {
	VCPUSTAT_LEVEL_NONE = 0, /* maps only: the live view and the exporters */
	VCPUSTAT_LEVEL_VCPU,	 /* vCPU states, exit reasons, pCPUs */
	VCPUSTAT_LEVEL_FULL,	 /* also every sched_switch and wakeup (host view) */
};

/* Where a vCPU's index came from (vcpu.index_src). */
enum vcpustat_index_src {
	VCPUSTAT_INDEX_ORDER = 0,  /* order of discovery in its VM */
	VCPUSTAT_INDEX_COMM,	   /* thread name "CPU <n>/KVM" */
	VCPUSTAT_INDEX_KVM,	   /* kvm_entry/kvm_exit vcpu_id */
	VCPUSTAT_INDEX_SEED,	   /* set by user space (seeded from /proc) */
};

/* Ways of a vCPU's cache of its histogram rows (vcpustat_vcpu.hist_slot): a power of two. */
#define VCPUSTAT_HIST_CACHE_BITS 3
#define VCPUSTAT_HIST_CACHE (1u << VCPUSTAT_HIST_CACHE_BITS)

/* vcpus map: key = tid (__u32). */
struct vcpustat_vcpu {
	struct vcpu_fsm fsm;
	__u64 discovered_ns;
	__u32 tid;
	__u32 tgid;
	__u32 index;	 /* vCPU index in its VM */
	__u32 index_src; /* enum vcpustat_index_src */
	char comm[16];
	__u64 sync_key;	  /* key of a sync hypercall waiting for its kvm_entry */
	__u32 sync_pending;
	__u32 wait_cpu;	  /* CPU whose run queue it waits on (VCPU_PCPU_NONE: not waiting) */
	__u32 wait_slot;  /* its slot in that CPU's cpu.waiting[] */
	__u32 pad;
	/*
	 * The exit details of the open exit (EV_PIO/MMIO/MSR, EV_PAGE_FAULT),
	 * charged at its kvm_entry: the first access, and the first page fault.
	 */
	__u64 detail_addr;
	__u64 fault_addr;
	__u8 detail_kind;   /* enum vcpustat_detail_kind, 0: none pending */
	__u8 detail_access; /* enum vcpustat_detail_access */
	__u8 fault_pending;
	__u8 fault_access;
	__u8 wake_pending;  /* woken from IDLE/BLOCKED, its next kvm_entry not yet seen */
	__u8 wake_reason;   /* enum vcpu_wake_reason (OTHER until known) */
	__u8 wake_hint;	    /* what its waker's context said (EV_WAKING), for its next sched_wakeup */
	__u8 wake_vector;   /* the first vector injected since that wake-up (EV_INJ_VIRQ), 0: none yet */
	__u64 wake_ts;	    /* when it was woken */
	/* placement (cpu_topo map): */
	__u64 oncpu_since;  /* when it last came on a CPU (its pcpu): its time there is charged at its leaving */
	__u64 cross_node;   /* pCPU changes to another NUMA node */
	__u64 cross_llc;    /* ... to another last-level cache */
	__u64 numa_moves;   /* moves the kernel's NUMA balancing made (EV_NUMA_MOVE) */
	__u64 cr3_guest_ns; /* fsm.ns[VCPU_GUEST] at its last EV_GUEST_CR3: the guest time since is the next one's */
	__u64 cr3_last;	    /* that event's CR3 | 1 (CR3s are page-aligned), 0: none yet (REC_GUEST_CR3 on a change) */
	/* nested virtualization: the vCPU runs an L1 hypervisor, which runs its own guest (L2) */
	__u64 l2_guest_ns;     /* guest time in L2, its closed stays */
	__u64 l2_mark_ns;      /* fsm.ns[VCPU_GUEST] when it last went into L2 */
	__u32 nested_reason;   /* the open exit's reason, if it left L2 */
	__u8 in_l2;	       /* between L1's VMRUN/VMLAUNCH (EV_NESTED_ENTER) and the exit reflected to it */
	__u8 nested_pending;   /* the open exit left L2: a row of the nested-exit table at its kvm_entry */
	__u8 nested_reflected; /* ... and KVM reflected it to L1 (EV_NESTED_EXIT) */
	__u8 nested_isa;
	__u8 pad2[8];
	/*
	 * The BPF side's cache of its histogram rows (hist_rows map): index + 1
	 * of the row of a recent (kind, ISA, reason), at hist_cache_way()
	 * (vcpustat_handler.h); 0: none. A hint, checked against the row's key
	 * at each use. Not state: snapshots show it zeroed (user/live/loader.c),
	 * and user-space replay, whose rows are in a hash table, leaves it zero.
	 */
	__u32 hist_slot[VCPUSTAT_HIST_CACHE];
};

/*
 * cpus map: key = CPU number. The vCPUs waiting on each CPU's run queue
 * (PREEMPTED there, or woken with it as target), so that each switch can
 * charge the thread that just ran to the VMs it kept waiting (culprits).
 * Written only under that CPU's run-queue lock (switches, wakeups targeting
 * it, migrations), so one writer at a time. curr_since is the time of the
 * last switch seen while a vCPU was involved or waiting; the thread switched
 * out at t ran since max(curr_since, the waiter's since), which is exact
 * because switches are skipped only while nobody waits.
 */
#define VCPUSTAT_WAIT_SLOTS 16
struct vcpustat_wait_slot {
	__u32 tid;  /* 0: free */
	__u32 tgid; /* the waiting vCPU's VM */
	__u64 since;
};

struct vcpustat_cpu {
	__u64 curr_since; /* last switch the handler saw while it mattered (see below) */
	__u32 nr_waiting; /* occupied slots */
	__u32 pad;
	struct vcpustat_wait_slot waiting[VCPUSTAT_WAIT_SLOTS];
	/*
	 * The last interrupt a LAPIC accepted on this CPU outside its target's
	 * own thread (EV_APIC_ACCEPT): by whom, when, and what kind of wake-up
	 * it makes (enum vcpu_wake_reason). A wake-up of a sleeping vCPU by the
	 * same thread soon after (VCPUSTAT_WAKE_CAUSE_NS) was that interrupt's
	 * kick. Written by this CPU's own events.
	 */
	__u64 irq_ts;
	__u32 irq_tid;
	__u32 irq_reason;
	/*
	 * The vCPU on this CPU now (occ_tid 0: none), since when: written by this
	 * CPU's own events, read by its SMT sibling's (placement).
	 */
	__u32 occ_tid;
	__u32 occ_tgid;
	__u64 occ_since;
};

/*
 * cpu_topo map: key = CPU number, written by user space (vcpustat_set_topology)
 * before it attaches; valid 0: no topology for that CPU. Where the CPU is:
 * what placement needs in the kernel (moves across nodes and caches, and
 * which CPU shares its core).
 */
struct vcpustat_cpu_topo {
	__s32 node;    /* NUMA node, -1: unknown */
	__s32 llc;     /* last-level cache id, -1: unknown */
	__u32 sibling; /* another hardware thread of its core, VCPU_PCPU_NONE: none */
	__u32 valid;
};

/* vm_cpu map: the vCPU-nanoseconds each VM ran on each CPU (placement), closed intervals. */
struct vcpustat_place_key {
	__u32 tgid;
	__u32 cpu;
};
_Static_assert(sizeof(struct vcpustat_place_key) == 8, "vcpustat_place_key: a hash key without padding");

/* An interrupt accepted this long (or less) before a sched_waking by the same thread caused it. */
#define VCPUSTAT_WAKE_CAUSE_NS 1000000ull

/* culprits map: who ran while a VM's vCPUs waited for their CPU. */
struct vcpustat_culprit_key {
	__u32 vm_tgid; /* the VM kept waiting; | VCPUSTAT_CULPRIT_VMM: its VMM threads were */
	__u32 tid;     /* the thread that ran (0: the CPU was idle; VCPUSTAT_TID_EXITED: threads gone since) */
};
_Static_assert(sizeof(struct vcpustat_culprit_key) == 8, "vcpustat_culprit_key: a hash key without padding");

/* culprit_key.vm_tgid of what kept a VM's VMM threads (not its vCPUs) waiting (pids are < 2^22) */
#define VCPUSTAT_CULPRIT_VMM 0x80000000u

/* Culprit entries of exited threads are folded into this one by user space (vcpustat_prune). */
#define VCPUSTAT_TID_EXITED 0xffffffffu

struct vcpustat_culprit {
	__u64 ns;	 /* vCPU-nanoseconds of waiting it caused (sum over waiting vCPUs) */
	__u64 cgroup_id; /* its cgroup (v2) id, resolved to a path by user space */
	__u32 tgid;	 /* its process */
	__u32 pad;
	char comm[16];	 /* its thread name when first seen */
};

/* vms map: key = tgid (__u32). */
struct vcpustat_vm {
	__u64 discovered_ns;
	__u32 tgid;
	__u32 next_index; /* next index handed out by order of discovery */
	__u64 exited_ns;  /* when its last thread exited (0: alive); user space reaps it */
	/* its VMM threads' closed intervals (vmm_thread.run_ns, wait_ns), by enum vcpustat_vmm_kind */
	__u64 vmm_run_ns[2];
	__u64 vmm_wait_ns[2];
	/*
	 * vCPU-time of its vCPUs on a core whose other hardware thread ran a vCPU
	 * of another VM (smt_other_ns) or of this VM (smt_same_ns), charged when
	 * the first of the two leaves
	 */
	__u64 smt_other_ns;
	__u64 smt_same_ns;
};

/*
 * vmm_threads map: key = tid (__u32). The threads of a VM's VMM that are no
 * vCPU, added by user space (EV_VMM_SEED) when it finds them in the VM's
 * process (or a vhost-<pid> worker): their time on a CPU and waiting for one,
 * from their first scheduler event on (state VMM_T_UNKNOWN until then). A
 * thread that turns out to be a vCPU (its first KVM event) leaves this map.
 */
enum vcpustat_vmm_kind {
	VCPUSTAT_VMM_EMULATOR = 0, /* the VMM process's other threads: main loop, I/O threads */
	VCPUSTAT_VMM_VHOST,	   /* vhost-<pid> workers (kernel threads, or the VMM's own on 6.4+) */
	VCPUSTAT_NR_VMM_KINDS,
};

enum vcpustat_vmm_state {
	VCPUSTAT_VMM_T_UNKNOWN = 0,
	VCPUSTAT_VMM_T_RUN,   /* on a CPU */
	VCPUSTAT_VMM_T_WAIT,  /* runnable: woken or preempted, waiting on wait_cpu's run queue */
	VCPUSTAT_VMM_T_SLEEP, /* switched out sleeping */
};

struct vcpustat_vmm_thread {
	__u64 since;   /* when its state began */
	__u64 run_ns;  /* closed intervals on a CPU */
	__u64 wait_ns; /* closed intervals waiting for one */
	__u32 tid;
	__u32 vm_tgid;
	__u32 wait_cpu; /* VCPU_PCPU_NONE: not waiting */
	__u32 wait_slot;
	__u8 kind;  /* enum vcpustat_vmm_kind */
	__u8 state; /* enum vcpustat_vmm_state */
	__u8 pad[6];
	char comm[16];
};

/* Histogram kinds (hist_key.kind) = enum vcpu_sample_kind. */
struct vcpustat_hist_key {
	__u32 tgid;
	__u16 kind;   /* enum vcpu_sample_kind */
	__u16 isa;    /* KVM_ISA_* for VCPU_SAMPLE_EXIT, else 0 */
	__u32 reason; /* exit reason (VMX basic or SVM code), KVM_EXIT_* code, or 0 */
};
_Static_assert(sizeof(struct vcpustat_hist_key) == 12, "vcpustat_hist_key: a hash key without padding");

struct vcpustat_hist {
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
	__u64 gsys; /* exits (VCPU_SAMPLE_EXIT) that left guest kernel mode */
	__u64 bucket[LAT_HIST_BUCKETS];
};

/*
 * The histograms live in the rows of an array (hist_rows map), so that a
 * vCPU reaches the row of its exit's reason by its index, cached in its
 * record (vcpustat_vcpu.hist_slot), without a hash lookup. The hists map
 * (key -> row index) says which rows are in use; hist_free (a queue) holds
 * the free rows' indices. A free row is all zero, its key too (tgid 0):
 * user space zeroes a row before it gives its index back.
 */
struct vcpustat_hist_row {
	struct vcpustat_hist_key key;
	__u32 pad;
	struct vcpustat_hist hist;
};

/*
 * Exit details (details map: port I/O, MMIO, MSRs; fault_pages map: nested
 * page faults): per VM, what the exits accessed, counted at the exit's
 * kvm_entry with its handling time (kvm_exit to kvm_entry, the same time
 * as the exit's latency sample). An exit is in each kind's table at most
 * once (its first access of that kind); an MMIO exit that began as a nested
 * page fault is in both tables. Each (tgid, kind, access) has an "other"
 * row, addr VCPUSTAT_DETAIL_OTHER, made with its first key: when a map is
 * full, new keys are counted there; only when that row could not be made
 * either is the sample lost (LOST_DETAIL_FULL).
 */
enum vcpustat_detail_kind {
	VCPUSTAT_DETAIL_NONE = 0,
	VCPUSTAT_DETAIL_PIO,	    /* addr = port */
	VCPUSTAT_DETAIL_MMIO,	    /* addr = guest-physical address */
	VCPUSTAT_DETAIL_MSR,	    /* addr = MSR index */
	VCPUSTAT_DETAIL_PAGE_FAULT, /* addr = faulting page (address & ~0xfff) */
	VCPUSTAT_DETAIL_CR3,	    /* guest address spaces (guest_cr3s map, EV_GUEST_CR3): addr =
				       the guest's CR3 at the exits, count = exits, sum_ns = guest
				       time before them, max_ns = the longest; access = READ */
	VCPUSTAT_DETAIL_NESTED,	    /* exits from L2 (nested virtualization): addr = exit reason |
				       isa << 32, access = L0 (handled by this host's KVM) or L1
				       (reflected to the L1 hypervisor); its handling time */
	VCPUSTAT_NR_DETAIL_KINDS,
};

enum vcpustat_detail_access {
	VCPUSTAT_ACCESS_READ = 0,
	VCPUSTAT_ACCESS_WRITE,
	VCPUSTAT_ACCESS_FETCH, /* page faults: an instruction fetch */
	VCPUSTAT_ACCESS_L0,    /* exits from L2 handled by this host's KVM (L0) */
	VCPUSTAT_ACCESS_L1,    /* exits from L2 reflected to the L1 hypervisor */
	VCPUSTAT_NR_ACCESSES,
};

#define VCPUSTAT_DETAIL_OTHER 0xffffffffffffffffULL
#define VCPUSTAT_CR3_UNKNOWN 0xfffffffffffff000ULL /* EV_GUEST_CR3: KVM held no valid copy of CR3 */

struct vcpustat_detail_key {
	__u32 tgid;
	__u8 kind;   /* enum vcpustat_detail_kind */
	__u8 access; /* enum vcpustat_detail_access */
	__u16 pad;
	__u64 addr;
};
_Static_assert(sizeof(struct vcpustat_detail_key) == 16, "vcpustat_detail_key: a hash key without padding");

struct vcpustat_detail {
	__u64 count;
	__u64 sum_ns; /* handling time: kvm_exit to the next kvm_entry */
	__u64 max_ns;
};

/*
 * The scheduler handlers' hot page (BPF global data section .data.hotpath,
 * one page-aligned map of its own): all they read before they know that an
 * event concerns no vCPU. maybe_tids: bit (tid % VCPUSTAT_HOT_TID_SLOTS) is
 * set while some tracked vCPU has a tid in that slot; only then does the
 * exact test (map vcpu_tids) run. waiting_cpus: bit n is set while vCPUs
 * wait on CPU n's run queue (cpus[n].nr_waiting > 0), so that every switch
 * there is charged to culprits; CPUs from VCPUSTAT_HOT_CPUS on count as
 * always waited on. level_full: set by user space before load when the
 * record level is full (every switch and wakeup is recorded).
 */
#define VCPUSTAT_HOT_TID_SLOTS 16384
#define VCPUSTAT_HOT_CPUS 8192 /* x86 NR_CPUS is at most 8192 */

struct vcpustat_hotpath {
	__u64 maybe_tids[VCPUSTAT_HOT_TID_SLOTS / 64];
	__u64 waiting_cpus[VCPUSTAT_HOT_CPUS / 64];
	__u32 level_full;
	__u32 pad;
};
_Static_assert(sizeof(struct vcpustat_hotpath) <= 4096, "vcpustat_hotpath: the scheduler handlers' one page");

/* Indexes of the per-CPU "lost" counters: nothing is dropped silently. */
enum vcpustat_lost {
	VCPUSTAT_LOST_RINGBUF = 0, /* ring buffer full: records dropped */
	VCPUSTAT_LOST_VCPU_FULL,   /* vcpus map full: a vCPU not tracked */
	VCPUSTAT_LOST_VM_FULL,	   /* vms map full */
	VCPUSTAT_LOST_HIST_FULL,   /* hists map full: samples dropped */
	VCPUSTAT_LOST_DEAD_FULL,   /* dead_vcpus map full: final totals dropped */
	VCPUSTAT_LOST_CULPRIT_FULL, /* culprits map full: culprit time dropped */
	VCPUSTAT_LOST_WAIT_SLOTS,  /* > VCPUSTAT_WAIT_SLOTS vCPUs waited on one CPU: not attributed */
	VCPUSTAT_LOST_DETAIL_FULL, /* details/fault_pages/guest_cr3s map full, even for the "other" row */
	VCPUSTAT_LOST_VMM_FULL,	   /* vmm_threads map full: a VMM thread not tracked */
	VCPUSTAT_LOST_PLACE_FULL,  /* vm_cpu map full: on-CPU time of a (VM, CPU) not kept */
	VCPUSTAT_NR_LOST,
};

/* Default map sizes (user space may change them before load). */
#define VCPUSTAT_MAX_VCPUS 8192
#define VCPUSTAT_MAX_VMS 2048
#define VCPUSTAT_MAX_HISTS 4096
#define VCPUSTAT_MAX_DEAD 1024
#define VCPUSTAT_MAX_CULPRITS 16384
#define VCPUSTAT_MAX_DETAILS 4096     /* port, MMIO and MSR rows of all VMs */
#define VCPUSTAT_MAX_FAULT_PAGES 4096 /* page-fault rows of all VMs */
#define VCPUSTAT_MAX_GUEST_CR3S 4096  /* guest address-space rows of all VMs */
#define VCPUSTAT_MAX_VMM_THREADS 8192 /* VMM threads (not vCPUs) of all VMs */
#define VCPUSTAT_MAX_PLACES 16384     /* (VM, CPU) pairs of vm_cpu */
#define VCPUSTAT_RINGBUF_BYTES (8u << 20)	   /* all CPUs' rings together, by default... */
#define VCPUSTAT_RINGBUF_CPU_MIN_BYTES (1u << 20) /* ... but at least this per CPU */

/* Guest clock synchronization hypercall (docs/sync.md, "The protocol"): "VCS1". */
#define VCPUSTAT_SYNC_HYPERCALL_NR 0x56435331ULL

#endif /* VCPUSTAT_ABI_H */
