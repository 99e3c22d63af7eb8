/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vcpu_fsm.h - the vCPU state machine, shared by the BPF programs (live) and
 * user space (offline replay), so both agree by construction.
 *
 * Pure C: no libc, libbpf or kernel includes, no I/O, no allocation. Every
 * function is inline and takes the current time from its caller.
 *
 * States:
 *
 *   UNKNOWN    not observed yet (a thread seeded from /proc, or just discovered)
 *   GUEST      executing guest code (VMX non-root / SVM guest mode)
 *   HOST       on a CPU in the hypervisor: handling an exit in KVM, or in the
 *              VMM's user space
 *   PREEMPTED  switched out while still runnable (involuntary)
 *   WAIT       woken up, runnable, waiting for a CPU
 *   IDLE       blocked because the guest halted (last exit was HLT)
 *   BLOCKED    blocked for a host-side reason (I/O emulation, a lock, a fault)
 *   POLL       on a CPU in KVM's halt polling: the guest halted and KVM spins
 *              for a wake-up before it puts the vCPU to sleep (value 7, after
 *              BLOCKED, so that the values of the others stay what they were)
 *
 * Transition table (event -> new state; "-" = no state change):
 *
 *   event                         from                     to
 *   ----------------------------  -----------------------  --------------------
 *   sched_switch, prev = vCPU,    any                      PREEMPTED
 *     still runnable (preempt or
 *     prev_state == TASK_RUNNING)
 *   sched_switch, prev = vCPU,    any                      IDLE if halted,
 *     sleeping (prev_state != 0)                           else BLOCKED; a poll
 *                                                          under way failed
 *   sched_switch, next = vCPU     any but GUEST/HOST/POLL  POLL if a poll is under
 *                                                          way (it was preempted),
 *                                                          else HOST
 *                                 GUEST, HOST, POLL        -   (duplicate)
 *   sched_wakeup(_new)            IDLE, BLOCKED, UNKNOWN   WAIT
 *                                 others                   -   (running or
 *                                                               already runnable)
 *   kvm_entry                     any                      GUEST; closes the open
 *                                                          exit: one latency sample
 *                                                          (reason, kvm_exit ->
 *                                                          kvm_entry) and one for an
 *                                                          open userspace exit
 *   kvm_exit(reason, isa)         any                      HOST; opens an exit
 *   kvm_userspace_exit(reason)    any                      HOST; opens a userspace exit
 *   KVM_RUN entered (kvm_fpu(1))  any                      HOST; closes the open
 *                                                          userspace exit: one sample
 *                                                          (reason, time the VMM took
 *                                                          before it re-entered KVM_RUN)
 *   sched_migrate_task(dest)      any                      -   (pCPU := dest)
 *   halt begins (kvm_vcpu_halt)   any                      POLL if KVM polls this
 *     (poll, halt_poll_ns)                                 halt, else -
 *   halt ends (kvm_vcpu_wakeup)   POLL                     HOST: the poll succeeded
 *     (waited)                                             (failed if waited: KVM
 *                                                          slept without a switch)
 *                                 others                   -
 *   halt_poll_ns changed          any                      -   (halt_poll_ns := new)
 *
 * pCPU: the CPU of the last switch, migration, or (at discovery) KVM event;
 * every change after the first is counted as a migration.
 *   sched_process_exit            any                      gone: the last interval is
 *                                                          closed, an open exit and
 *                                                          userspace exit close into
 *                                                          their samples (handling
 *                                                          ended with the thread), the
 *                                                          vCPU is freed
 *
 * "halted" is set by kvm_exit with the HLT reason (VMX 12, SVM 0x78) and by
 * kvm_userspace_exit with KVM_EXIT_HLT (a VMM without an in-kernel irqchip
 * handles HLT itself). It is cleared by kvm_entry (the guest runs again), by a
 * kvm_exit for another reason, by a userspace exit for another reason
 * except KVM_EXIT_INTR (a signal interrupting a halted vCPU does not end the
 * halt), and by re-entering KVM_RUN after a KVM_EXIT_HLT (the VMM resumes the
 * guest once its halt is over).
 *
 * Halt polling: with an in-kernel irqchip KVM handles HLT itself, and before
 * it puts the vCPU to sleep it may poll, on the CPU, for up to the vCPU's
 * halt_poll_ns (virt/kvm/kvm_main.c, kvm_vcpu_halt). That time was HOST; it
 * is POLL, with VCPU_F_POLLING set from the halt's beginning to the poll's
 * end. A poll succeeds when the wake-up comes while it spins (the halt ends
 * with the vCPU still on its CPU) and fails when the vCPU goes to sleep; the
 * CPU time of the failed ones is the capacity they burnt (poll_fail_ns).
 * KVM's loop gives up at the halt's beginning + halt_poll_ns (wall time),
 * or as soon as the scheduler wants the CPU (kvm_vcpu_can_poll: another task
 * runnable there, or need_resched): what the vCPU does after that on its way
 * to sleep (or back to the guest, if the wake-up came just then) is HOST
 * again, as in KVM's own halt_poll_*_ns. The first event after the stop time
 * ends POLL there (vcpu_fsm_poll_expire); a vCPU switched out runnable has
 * left the loop (it has no preemption point: the scheduler's want ended it),
 * so it is PREEMPTED, then HOST, and the poll is counted when the halt ends
 * or the vCPU sleeps, as KVM counts it. (On a fully preemptible kernel the
 * loop can resume after a preemption until its stop: KVM's wall-clock sums
 * then count the preempted time and the rest of the poll, we do not.)
 *
 * An exit is "open" from kvm_exit (or kvm_userspace_exit) until the event
 * that ends its handling; an open exit whose end was never seen (a missed
 * event) is dropped when the next exit of the same kind opens, never turned
 * into a made-up sample.
 *
 * Time: cumulative nanoseconds per state are kept in ns[]; the open interval
 * started at `since`. Timestamps from different CPUs (a wakeup is reported on
 * the waker's CPU) may arrive slightly out of order: an event older than
 * `since` closes a zero-length interval and never moves `since` backwards,
 * so no duration is ever negative.
 *
 * Concurrency (BPF): a vCPU's record is written by the CPU it runs on
 * (switch-out, KVM events) and, while it sleeps, by the waker's CPU (wakeup,
 * migrate). The kernel orders these for one task (the switch-out completes
 * before ttwu sees on_cpu == 0; wakeup and migration run under p->pi_lock),
 * so each field has one writer at a time. A wakeup that finds the vCPU
 * running or runnable writes nothing.
 */
#ifndef VCPU_FSM_H
#define VCPU_FSM_H

#include "exit_reasons.h"

#ifndef VCPU_FSM_INLINE
#define VCPU_FSM_INLINE static inline __attribute__((always_inline))
#endif

enum vcpu_fsm_state {
	VCPU_UNKNOWN = 0,
	VCPU_GUEST,
	VCPU_HOST,
	VCPU_PREEMPTED,
	VCPU_WAIT,
	VCPU_IDLE,
	VCPU_BLOCKED,
	VCPU_POLL,
	VCPU_NR_STATES,
};

/* fsm.flags */
#define VCPU_F_HALTED 0x1u  /* the guest halted; sleeping now means IDLE */
#define VCPU_F_IN_EXIT 0x2u /* a kvm_exit is open (exit_since, exit_reason) */
#define VCPU_F_IN_UEXIT 0x4u /* a userspace exit is open (uexit_since, uexit_reason) */
#define VCPU_F_EXIT_GSYS 0x8u /* the open kvm_exit left guest kernel mode (its guest RIP in the upper half) */
#define VCPU_F_POLLING 0x10u  /* a halt poll is under way (POLL, or PREEMPTED in it) */

#define VCPU_PCPU_NONE 0xffffffffu

struct vcpu_fsm {
	unsigned long long since;		 /* start of the open interval */
	unsigned long long ns[VCPU_NR_STATES]; /* closed time per state */
	unsigned long long exit_since;		 /* time of the open kvm_exit */
	unsigned long long uexit_since;		 /* time of the open userspace exit */
	unsigned int state;			 /* enum vcpu_fsm_state */
	unsigned int flags;			 /* VCPU_F_* */
	unsigned int exit_reason;		 /* last kvm_exit reason */
	unsigned int exit_isa;			 /* its isa (KVM_ISA_VMX/SVM) */
	unsigned int uexit_reason;		 /* last kvm_userspace_exit reason */
	unsigned int pcpu;			 /* current or last pCPU */
	/* event counters */
	unsigned long long preemptions;	 /* switch-outs while runnable */
	unsigned long long wakeups;	 /* wakeups out of IDLE/BLOCKED */
	unsigned long long migrations;	 /* pCPU changes */
	unsigned long long kvm_exits;	 /* kvm_exit events */
	unsigned long long userspace_exits; /* kvm_userspace_exit events */
	/* halt polling */
	unsigned long long polls_ok;	 /* polls that saw the wake-up */
	unsigned long long polls_failed; /* polls that ended in sleep */
	unsigned long long poll_fail_ns; /* POLL time of the failed ones (CPU burnt for nothing) */
	unsigned long long poll_from_ns; /* ns[VCPU_POLL] when the poll under way began */
	unsigned long long poll_stop;	 /* when KVM's poll loop under way gives up: begin + halt_poll_ns */
	unsigned int halt_poll_ns;	 /* the vCPU's halt_poll_ns, as last seen */
	unsigned int pad;
};

/* What kind of latency sample a step closed. */
enum vcpu_sample_kind {
	VCPU_SAMPLE_NONE = 0,
	VCPU_SAMPLE_EXIT,	    /* kvm_exit -> kvm_entry, by exit reason */
	VCPU_SAMPLE_USERSPACE_EXIT, /* kvm_userspace_exit -> kvm_entry, by reason */
	VCPU_SAMPLE_RUNQ_WAIT,	    /* PREEMPTED/WAIT -> on a CPU (run-queue latency) */
	VCPU_SAMPLE_WAKE,	    /* a sleeping vCPU's wake-up -> its next kvm_entry, by
				       enum vcpu_wake_reason (vcpustat_handler.h) */
	VCPU_SAMPLE_WAKE_VECTOR,    /* the same, by the vector injected at that entry
				       (kvm_inj_virq), 0 if none was seen */
	VCPU_NR_SAMPLE_KINDS,
};

/* Why a sleeping (IDLE or BLOCKED) vCPU woke (VCPU_SAMPLE_WAKE's reason). */
enum vcpu_wake_reason {
	VCPU_WAKE_OTHER = 0, /* none of the below seen (a signal, a KVM request, a VMM's own sleep) */
	VCPU_WAKE_TIMER,     /* an interrupt the vCPU raised for itself after it woke: its LAPIC timer */
	VCPU_WAKE_IPI,	     /* an interrupt another vCPU sent it, which woke it */
	VCPU_WAKE_DEVICE,    /* an interrupt from outside the vCPUs (irqfd, vhost, the VMM, the IOAPIC) */
	VCPU_NR_WAKE_REASONS,
};

/*
 * The result of one event: the state change (from == to when there is none),
 * the duration of the interval it closed, and up to two latency samples.
 */
struct vcpu_fsm_sample {
	unsigned int kind;   /* enum vcpu_sample_kind */
	unsigned int reason; /* exit reason (EXIT, USERSPACE_EXIT), else 0 */
	unsigned int isa;    /* KVM_ISA_* for EXIT, else 0 */
	unsigned int gsys;   /* EXIT: 1 if the guest was in kernel mode when it exited (VCPU_F_EXIT_GSYS) */
	unsigned long long ns;
};

struct vcpu_fsm_step {
	unsigned int from, to;	/* enum vcpu_fsm_state */
	unsigned int gone;	/* the vCPU's thread exited */
	unsigned int pcpu_changed;
	unsigned int pcpu_from;	/* with pcpu_changed: the pCPU before (VCPU_PCPU_NONE: none) */
	unsigned long long at;	/* start of the new interval */
	unsigned long long dur; /* length of the interval that closed */
	struct vcpu_fsm_sample sample[2];
};

VCPU_FSM_INLINE void vcpu_fsm_init(struct vcpu_fsm *f, unsigned long long now)
{
	unsigned int i;

	f->since = now;
	for (i = 0; i < VCPU_NR_STATES; i++)
		f->ns[i] = 0;
	f->exit_since = 0;
	f->uexit_since = 0;
	f->state = VCPU_UNKNOWN;
	f->flags = 0;
	f->exit_reason = 0;
	f->exit_isa = 0;
	f->uexit_reason = 0;
	f->pcpu = VCPU_PCPU_NONE;
	f->preemptions = 0;
	f->wakeups = 0;
	f->migrations = 0;
	f->kvm_exits = 0;
	f->userspace_exits = 0;
	f->polls_ok = 0;
	f->polls_failed = 0;
	f->poll_fail_ns = 0;
	f->poll_from_ns = 0;
	f->poll_stop = 0;
	f->halt_poll_ns = 0;
	f->pad = 0;
}

VCPU_FSM_INLINE void vcpu_fsm_step_clear(struct vcpu_fsm_step *s, unsigned int state)
{
	s->from = state;
	s->to = state;
	s->gone = 0;
	s->pcpu_changed = 0;
	s->pcpu_from = VCPU_PCPU_NONE;
	s->at = 0;
	s->dur = 0;
	for (unsigned int i = 0; i < 2; i++) {
		s->sample[i].kind = VCPU_SAMPLE_NONE;
		s->sample[i].reason = 0;
		s->sample[i].isa = 0;
		s->sample[i].gsys = 0;
		s->sample[i].ns = 0;
	}
}

/* Elapsed time from t0 to t1, clamped at zero for out-of-order timestamps. */
VCPU_FSM_INLINE unsigned long long vcpu_fsm_elapsed(unsigned long long t0, unsigned long long t1)
{
	return t1 > t0 ? t1 - t0 : 0;
}

_Static_assert((VCPU_NR_STATES & (VCPU_NR_STATES - 1)) == 0, "vcpu_fsm_ns_index() masks by VCPU_NR_STATES - 1");

/*
 * state (< VCPU_NR_STATES, checked by the caller) as an index of ns[] that
 * the BPF verifier can bound wherever the compiler keeps it: masked after an
 * opaque copy, so that the mask is neither folded into the check nor lost
 * when the checked value is spilled to the stack and loaded again (6.1's
 * verifier rejected `f->ns[f->state]` after a change elsewhere in the
 * handler moved the spill: "R0 unbounded memory access").
 */
VCPU_FSM_INLINE unsigned int vcpu_fsm_ns_index(unsigned int state)
{
	__asm__ volatile("" : "+r"(state));
	return state & (VCPU_NR_STATES - 1);
}

/* Close the open interval at `now` and enter `to`. */
VCPU_FSM_INLINE void vcpu_fsm_enter(struct vcpu_fsm *f, unsigned long long now, unsigned int to,
				    struct vcpu_fsm_step *s)
{
	unsigned long long dur = vcpu_fsm_elapsed(f->since, now);

	if (f->state < VCPU_NR_STATES)
		f->ns[vcpu_fsm_ns_index(f->state)] += dur;
	if (now > f->since)
		f->since = now;
	s->from = f->state;
	s->to = to;
	s->at = f->since;
	s->dur = dur;
	f->state = to;
}

VCPU_FSM_INLINE void vcpu_fsm_set_sample(struct vcpu_fsm_step *s, unsigned int slot, unsigned int kind,
					 unsigned int reason, unsigned int isa, unsigned long long ns)
{
	s->sample[slot].kind = kind;
	s->sample[slot].reason = reason;
	s->sample[slot].isa = isa;
	s->sample[slot].gsys = 0;
	s->sample[slot].ns = ns;
}

/* The vCPU is seen running on cpu: a different CPU than before is a migration. */
VCPU_FSM_INLINE void vcpu_fsm_on_cpu(struct vcpu_fsm *f, unsigned int cpu, struct vcpu_fsm_step *s)
{
	if (f->pcpu == cpu)
		return;
	if (f->pcpu != VCPU_PCPU_NONE)
		f->migrations++;
	s->pcpu_from = f->pcpu;
	f->pcpu = cpu;
	s->pcpu_changed = 1;
}

/*
 * The poll under way ends (after the interval that closed it): counted as
 * succeeded or failed, the failed one's POLL time in poll_fail_ns.
 */
VCPU_FSM_INLINE void vcpu_fsm_poll_end(struct vcpu_fsm *f, int ok)
{
	f->flags &= ~VCPU_F_POLLING;
	if (ok) {
		f->polls_ok++;
	} else {
		f->polls_failed++;
		f->poll_fail_ns += f->ns[VCPU_POLL] - f->poll_from_ns;
	}
}

/*
 * sched_switch with the vCPU as prev, on cpu.
 * runnable: preempt || prev_state == TASK_RUNNING.
 */
VCPU_FSM_INLINE void vcpu_fsm_switch_out(struct vcpu_fsm *f, unsigned long long now, unsigned int cpu,
					 int runnable, struct vcpu_fsm_step *s)
{
	unsigned int to;

	vcpu_fsm_step_clear(s, f->state);
	vcpu_fsm_on_cpu(f, cpu, s);
	if (runnable) {
		to = VCPU_PREEMPTED;
		f->preemptions++;
	} else {
		to = (f->flags & VCPU_F_HALTED) ? VCPU_IDLE : VCPU_BLOCKED;
	}
	vcpu_fsm_enter(f, now, to, s);
	if (!runnable && (f->flags & VCPU_F_POLLING))
		vcpu_fsm_poll_end(f, 0);
	else if (runnable && (f->flags & VCPU_F_POLLING) && f->poll_stop > now)
		f->poll_stop = now; /* preempted: KVM's loop stopped for the scheduler; no more POLL */
}

/* sched_switch with the vCPU as next, on cpu. */
VCPU_FSM_INLINE void vcpu_fsm_switch_in(struct vcpu_fsm *f, unsigned long long now, unsigned int cpu,
					struct vcpu_fsm_step *s)
{
	unsigned int from = f->state;

	vcpu_fsm_step_clear(s, from);
	vcpu_fsm_on_cpu(f, cpu, s);
	if (from == VCPU_GUEST || from == VCPU_HOST || from == VCPU_POLL)
		return;
	vcpu_fsm_enter(f, now, (f->flags & VCPU_F_POLLING) && now < f->poll_stop ? VCPU_POLL : VCPU_HOST, s);
	if (from == VCPU_PREEMPTED || from == VCPU_WAIT)
		vcpu_fsm_set_sample(s, 0, VCPU_SAMPLE_RUNQ_WAIT, 0, 0, s->dur);
}

/* Asleep (or not seen yet): a wakeup of the thread now is a wake-up of the vCPU. */
VCPU_FSM_INLINE int vcpu_fsm_asleep(const struct vcpu_fsm *f)
{
	return f->state == VCPU_IDLE || f->state == VCPU_BLOCKED || f->state == VCPU_UNKNOWN;
}

/* sched_wakeup / sched_wakeup_new of the vCPU thread (may run on another CPU). */
VCPU_FSM_INLINE void vcpu_fsm_wakeup(struct vcpu_fsm *f, unsigned long long now, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	if (!vcpu_fsm_asleep(f))
		return; /* running or already runnable: touch nothing */
	f->wakeups++;
	vcpu_fsm_enter(f, now, VCPU_WAIT, s);
}

/* sched_migrate_task of the vCPU thread to dest_cpu. */
VCPU_FSM_INLINE void vcpu_fsm_migrate(struct vcpu_fsm *f, unsigned int dest_cpu, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	vcpu_fsm_on_cpu(f, dest_cpu, s);
}

/* Closes an open kvm_exit and userspace exit at `now` into samples. */
VCPU_FSM_INLINE void vcpu_fsm_close_exits(struct vcpu_fsm *f, unsigned long long now,
					  struct vcpu_fsm_step *s)
{
	if (f->flags & VCPU_F_IN_EXIT) {
		vcpu_fsm_set_sample(s, 0, VCPU_SAMPLE_EXIT, f->exit_reason, f->exit_isa,
				    vcpu_fsm_elapsed(f->exit_since, now));
		s->sample[0].gsys = !!(f->flags & VCPU_F_EXIT_GSYS);
	}
	if (f->flags & VCPU_F_IN_UEXIT)
		vcpu_fsm_set_sample(s, 1, VCPU_SAMPLE_USERSPACE_EXIT, f->uexit_reason, 0,
				    vcpu_fsm_elapsed(f->uexit_since, now));
	f->flags &= ~(VCPU_F_IN_EXIT | VCPU_F_IN_UEXIT);
}

/* kvm_entry: the vCPU (re-)enters guest mode. */
VCPU_FSM_INLINE void vcpu_fsm_kvm_entry(struct vcpu_fsm *f, unsigned long long now, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	vcpu_fsm_close_exits(f, now, s);
	f->flags &= ~(VCPU_F_HALTED | VCPU_F_POLLING); /* a poll whose end was missed is not counted */
	if (f->state != VCPU_GUEST)
		vcpu_fsm_enter(f, now, VCPU_GUEST, s);
}

/* kvm_exit: the vCPU leaves guest mode for `reason` (isa says VMX or SVM). */
VCPU_FSM_INLINE void vcpu_fsm_kvm_exit(struct vcpu_fsm *f, unsigned long long now, unsigned int reason,
				       unsigned int isa, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	f->kvm_exits++;
	f->exit_reason = reason;
	f->exit_isa = isa;
	f->exit_since = now;
	f->flags |= VCPU_F_IN_EXIT;
	f->flags &= ~VCPU_F_POLLING; /* the guest ran again: a poll whose end was missed is over */
	if (vcpustat_exit_is_hlt(reason, isa))
		f->flags |= VCPU_F_HALTED;
	else
		f->flags &= ~VCPU_F_HALTED;
	if (f->state != VCPU_HOST)
		vcpu_fsm_enter(f, now, VCPU_HOST, s);
}

/* kvm_userspace_exit: KVM_RUN returns to the VMM with `reason` (KVM_EXIT_*). */
VCPU_FSM_INLINE void vcpu_fsm_userspace_exit(struct vcpu_fsm *f, unsigned long long now, unsigned int reason,
					     struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	f->userspace_exits++;
	f->uexit_reason = reason;
	f->uexit_since = now;
	f->flags |= VCPU_F_IN_UEXIT;
	if (reason == KVM_UEXIT_HLT)
		f->flags |= VCPU_F_HALTED;
	else if (reason != KVM_UEXIT_INTR)
		f->flags &= ~VCPU_F_HALTED;
	if (f->state != VCPU_HOST)
		vcpu_fsm_enter(f, now, VCPU_HOST, s);
}

/*
 * The vCPU thread enters the KVM_RUN ioctl (kvm_fpu(1), kvm_load_guest_fpu):
 * the VMM is done with the last userspace exit.
 */
VCPU_FSM_INLINE void vcpu_fsm_run_enter(struct vcpu_fsm *f, unsigned long long now, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	if (f->flags & VCPU_F_IN_UEXIT) {
		vcpu_fsm_set_sample(s, 1, VCPU_SAMPLE_USERSPACE_EXIT, f->uexit_reason, 0,
				    vcpu_fsm_elapsed(f->uexit_since, now));
		f->flags &= ~VCPU_F_IN_UEXIT;
		if (f->uexit_reason == KVM_UEXIT_HLT)
			f->flags &= ~VCPU_F_HALTED;
	}
	if (f->state != VCPU_HOST)
		vcpu_fsm_enter(f, now, VCPU_HOST, s);
}

/*
 * An in-kernel halt begins (kvm_vcpu_halt), on the vCPU's thread: KVM polls
 * this halt if `poll` (its halt_poll_ns, as KVM read it, is not 0 and the
 * guest has not turned host polling off).
 */
VCPU_FSM_INLINE void vcpu_fsm_halt_begin(struct vcpu_fsm *f, unsigned long long now, int poll,
					 unsigned int halt_poll_ns, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	f->halt_poll_ns = halt_poll_ns;
	if (!poll)
		return;
	f->flags |= VCPU_F_POLLING;
	if (f->state != VCPU_POLL)
		vcpu_fsm_enter(f, now, VCPU_POLL, s);
	f->poll_from_ns = f->ns[VCPU_POLL];
	f->poll_stop = now + halt_poll_ns;
}

/*
 * Before any event of a vCPU in POLL: if KVM's poll loop gave up before
 * `now` (poll_stop), POLL ends there and HOST begins (s->at = poll_stop).
 * Returns 1 if it did. The poll stays under way (VCPU_F_POLLING) until the
 * vCPU sleeps or the halt ends, which count it.
 */
VCPU_FSM_INLINE int vcpu_fsm_poll_expire(struct vcpu_fsm *f, unsigned long long now, struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	if (!(f->flags & VCPU_F_POLLING) || f->state != VCPU_POLL || now <= f->poll_stop || f->poll_stop <= f->since)
		return 0;
	vcpu_fsm_enter(f, f->poll_stop, VCPU_HOST, s);
	return 1;
}

/*
 * The in-kernel halt ends (kvm_vcpu_wakeup), on the vCPU's thread. A poll
 * still under way saw the wake-up; but if KVM says it waited, it went to
 * sleep and came back without a switch (the wake-up raced its schedule()),
 * and KVM counts that poll as failed, as we do.
 */
VCPU_FSM_INLINE void vcpu_fsm_halt_end(struct vcpu_fsm *f, unsigned long long now, int waited,
				       struct vcpu_fsm_step *s)
{
	vcpu_fsm_step_clear(s, f->state);
	if (!(f->flags & VCPU_F_POLLING))
		return;
	if (f->state == VCPU_POLL)
		vcpu_fsm_enter(f, now, VCPU_HOST, s);
	vcpu_fsm_poll_end(f, !waited);
}

/*
 * sched_process_exit of the vCPU thread: close the last interval; the caller
 * frees the vCPU. An exit still open (a vCPU stopped while KVM or the VMM
 * handled its last exit: a halt, an MMIO, the stop kick's own interrupt) ends
 * here, so that every exit KVM counted is in the histograms once, as in a
 * recording, whose exit_reason interval ends when the vCPU is gone.
 */
VCPU_FSM_INLINE void vcpu_fsm_process_exit(struct vcpu_fsm *f, unsigned long long now, struct vcpu_fsm_step *s)
{
	unsigned int state = f->state;

	vcpu_fsm_step_clear(s, state);
	vcpu_fsm_enter(f, now, state, s);
	vcpu_fsm_close_exits(f, now, s);
	s->to = VCPU_UNKNOWN;
	s->gone = 1;
}

/* Total time in `state` up to `now`, including the open interval. */
VCPU_FSM_INLINE unsigned long long vcpu_fsm_total(const struct vcpu_fsm *f, unsigned int state,
						  unsigned long long now)
{
	unsigned long long t;

	if (state >= VCPU_NR_STATES)
		return 0;
	t = f->ns[state];
	if (f->state == state)
		t += vcpu_fsm_elapsed(f->since, now);
	return t;
}

/* Parses decimal digits at comm[i..]; returns the value or -1, *end = first non-digit. */
VCPU_FSM_INLINE int vcpu_comm_number(const char comm[16], unsigned int i, unsigned int *end)
{
	unsigned int n = 0, digits = 0;

	for (; i < 16; i++) {
		char c = comm[i];

		if (c < '0' || c > '9')
			break;
		n = n * 10 + (unsigned int)(c - '0');
		digits++;
	}
	*end = i;
	return digits && digits <= 6 ? (int)n : -1;
}

/*
 * vCPU index from a VMM thread name, or -1 if the name is not a known vCPU
 * thread name. comm is a 16-byte task comm (NUL-padded). Known names:
 *   "CPU <n>/KVM"   QEMU (and tools/microvm)
 *   "fc_vcpu <n>"   Firecracker
 *   "vcpu<n>"       cloud-hypervisor, crosvm
 */
VCPU_FSM_INLINE int vcpu_index_from_comm(const char comm[16])
{
	unsigned int end = 0;
	int n;

	if (comm[0] == 'C' && comm[1] == 'P' && comm[2] == 'U' && comm[3] == ' ') {
		n = vcpu_comm_number(comm, 4, &end);
		if (n < 0 || end + 4 > 16 || comm[end] != '/' || comm[end + 1] != 'K' ||
		    comm[end + 2] != 'V' || comm[end + 3] != 'M' || (end + 4 < 16 && comm[end + 4]))
			return -1;
		return n;
	}
	if (comm[0] == 'f' && comm[1] == 'c' && comm[2] == '_' && comm[3] == 'v' && comm[4] == 'c' &&
	    comm[5] == 'p' && comm[6] == 'u' && comm[7] == ' ') {
		n = vcpu_comm_number(comm, 8, &end);
		return n >= 0 && (end >= 16 || !comm[end]) ? n : -1;
	}
	if (comm[0] == 'v' && comm[1] == 'c' && comm[2] == 'p' && comm[3] == 'u') {
		n = vcpu_comm_number(comm, 4, &end);
		return n >= 0 && (end >= 16 || !comm[end]) ? n : -1;
	}
	return -1;
}

#endif /* VCPU_FSM_H */
