// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of the state machine in include/vcpu_fsm.h: every transition. */
#include <criterion/criterion.h>
#include <string.h>
#include "vcpu_fsm.h"

static struct vcpu_fsm f;
static struct vcpu_fsm_step s;

static void fresh(unsigned long long now)
{
	memset(&f, 0xa5, sizeof(f)); /* init must set every field */
	vcpu_fsm_init(&f, now);
	memset(&s, 0xa5, sizeof(s));
}

/* A vCPU running in HOST on cpu 0 since t=1000. */
static void running_host(void)
{
	fresh(0);
	vcpu_fsm_userspace_exit(&f, 1000, KVM_UEXIT_IO, &s);
	vcpu_fsm_switch_in(&f, 1000, 0, &s);
	cr_assert_eq(f.state, VCPU_HOST);
}

Test(fsm, init_is_unknown)
{
	fresh(42);
	cr_assert_eq(f.state, VCPU_UNKNOWN);
	cr_assert_eq(f.since, 42);
	cr_assert_eq(f.pcpu, VCPU_PCPU_NONE);
	for (int i = 0; i < VCPU_NR_STATES; i++)
		cr_assert_eq(f.ns[i], 0);
	cr_assert_eq(f.flags, 0);
	cr_assert_eq(f.preemptions + f.wakeups + f.migrations + f.kvm_exits + f.userspace_exits, 0);
}

Test(fsm, unknown_thread_becomes_vcpu_on_first_kvm_event)
{
	fresh(5000); /* discovered at t=5000 by its first KVM event */
	vcpu_fsm_kvm_exit(&f, 5000, VMX_EXIT_MSR_WRITE, KVM_ISA_VMX, &s);
	cr_assert_eq(s.from, VCPU_UNKNOWN);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.dur, 0);
	cr_assert_eq(f.ns[VCPU_UNKNOWN], 0);
	cr_assert_eq(f.kvm_exits, 1);
	cr_assert(f.flags & VCPU_F_IN_EXIT);

	fresh(7000);
	vcpu_fsm_kvm_entry(&f, 7000, &s);
	cr_assert_eq(s.from, VCPU_UNKNOWN);
	cr_assert_eq(s.to, VCPU_GUEST);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_NONE, "no exit was open: no sample");
}

Test(fsm, switch_out_runnable_is_preempted)
{
	running_host();
	vcpu_fsm_switch_out(&f, 1500, 0, 1, &s);
	cr_assert_eq(s.from, VCPU_HOST);
	cr_assert_eq(s.to, VCPU_PREEMPTED);
	cr_assert_eq(s.dur, 500);
	cr_assert_eq(f.ns[VCPU_HOST], 500);
	cr_assert_eq(f.since, 1500);
	cr_assert_eq(f.preemptions, 1);
}

Test(fsm, switch_out_sleeping_not_halted_is_blocked)
{
	running_host();
	vcpu_fsm_switch_out(&f, 1300, 0, 0, &s);
	cr_assert_eq(s.to, VCPU_BLOCKED);
	cr_assert_eq(f.preemptions, 0);
	cr_assert_eq(f.ns[VCPU_HOST], 300);
}

Test(fsm, switch_out_sleeping_after_hlt_exit_is_idle)
{
	running_host();
	vcpu_fsm_kvm_entry(&f, 1100, &s);
	vcpu_fsm_kvm_exit(&f, 1200, VMX_EXIT_HLT, KVM_ISA_VMX, &s);
	cr_assert(f.flags & VCPU_F_HALTED);
	vcpu_fsm_switch_out(&f, 1250, 0, 0, &s);
	cr_assert_eq(s.from, VCPU_HOST);
	cr_assert_eq(s.to, VCPU_IDLE);
}

Test(fsm, svm_hlt_and_userspace_hlt_are_idle)
{
	running_host();
	vcpu_fsm_kvm_entry(&f, 1100, &s);
	vcpu_fsm_kvm_exit(&f, 1200, SVM_EXIT_HLT, KVM_ISA_SVM, &s);
	vcpu_fsm_switch_out(&f, 1250, 0, 0, &s);
	cr_assert_eq(s.to, VCPU_IDLE);

	running_host();
	vcpu_fsm_userspace_exit(&f, 1100, KVM_UEXIT_HLT, &s);
	vcpu_fsm_switch_out(&f, 1250, 0, 0, &s);
	cr_assert_eq(s.to, VCPU_IDLE);
}

Test(fsm, vmx_hlt_code_means_something_else_on_svm)
{
	running_host();
	/* 12 is HLT on VMX but read_cr... on SVM: not a halt */
	vcpu_fsm_kvm_exit(&f, 1200, VMX_EXIT_HLT, KVM_ISA_SVM, &s);
	vcpu_fsm_switch_out(&f, 1250, 0, 0, &s);
	cr_assert_eq(s.to, VCPU_BLOCKED);
}

Test(fsm, vmx_hlt_with_flag_bits_is_still_hlt)
{
	running_host();
	vcpu_fsm_kvm_exit(&f, 1200, 0x80000000u | VMX_EXIT_HLT, KVM_ISA_VMX, &s);
	cr_assert(f.flags & VCPU_F_HALTED);
}

Test(fsm, halt_cleared_by_entry_other_exit_and_run_enter)
{
	running_host();
	vcpu_fsm_kvm_exit(&f, 1200, VMX_EXIT_HLT, KVM_ISA_VMX, &s);
	vcpu_fsm_kvm_entry(&f, 1300, &s);
	cr_assert_not(f.flags & VCPU_F_HALTED, "kvm_entry ends the halt");

	vcpu_fsm_kvm_exit(&f, 1400, VMX_EXIT_HLT, KVM_ISA_VMX, &s);
	vcpu_fsm_kvm_exit(&f, 1500, VMX_EXIT_MSR_WRITE, KVM_ISA_VMX, &s);
	cr_assert_not(f.flags & VCPU_F_HALTED, "a later exit for another reason ends it");

	vcpu_fsm_userspace_exit(&f, 1600, KVM_UEXIT_HLT, &s);
	cr_assert(f.flags & VCPU_F_HALTED);
	vcpu_fsm_userspace_exit(&f, 1700, KVM_UEXIT_INTR, &s);
	cr_assert(f.flags & VCPU_F_HALTED, "a signal does not end a halt");
	vcpu_fsm_userspace_exit(&f, 1800, KVM_UEXIT_IO, &s);
	cr_assert_not(f.flags & VCPU_F_HALTED, "an I/O exit does");

	vcpu_fsm_userspace_exit(&f, 1900, KVM_UEXIT_HLT, &s);
	vcpu_fsm_run_enter(&f, 2000, &s);
	cr_assert_not(f.flags & VCPU_F_HALTED, "the VMM re-entering KVM_RUN after KVM_EXIT_HLT ends it");
}

Test(fsm, wakeup_from_idle_blocked_unknown_is_wait)
{
	static const unsigned int from[] = { VCPU_IDLE, VCPU_BLOCKED, VCPU_UNKNOWN };

	for (unsigned int i = 0; i < 3; i++) {
		fresh(100);
		f.state = from[i];
		vcpu_fsm_wakeup(&f, 400, &s);
		cr_assert_eq(s.from, from[i]);
		cr_assert_eq(s.to, VCPU_WAIT);
		cr_assert_eq(s.dur, 300);
		cr_assert_eq(f.ns[from[i]], 300);
		cr_assert_eq(f.wakeups, 1);
	}
}

Test(fsm, wakeup_of_running_or_runnable_vcpu_writes_nothing)
{
	static const unsigned int from[] = { VCPU_GUEST, VCPU_HOST, VCPU_PREEMPTED, VCPU_WAIT };
	struct vcpu_fsm before;

	for (unsigned int i = 0; i < 4; i++) {
		fresh(100);
		f.state = from[i];
		before = f;
		vcpu_fsm_wakeup(&f, 400, &s);
		cr_assert_eq(s.from, s.to);
		cr_assert_eq(memcmp(&before, &f, sizeof(f)), 0, "state %u: a concurrent wakeup must not write", from[i]);
	}
}

Test(fsm, wait_after_wakeup_then_runq_sample_on_switch_in)
{
	running_host();
	vcpu_fsm_switch_out(&f, 2000, 0, 0, &s); /* BLOCKED */
	vcpu_fsm_wakeup(&f, 5000, &s);	      /* WAIT */
	vcpu_fsm_switch_in(&f, 5750, 0, &s);
	cr_assert_eq(s.from, VCPU_WAIT);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_RUNQ_WAIT);
	cr_assert_eq(s.sample[0].ns, 750);
	cr_assert_eq(f.ns[VCPU_BLOCKED], 3000);
	cr_assert_eq(f.ns[VCPU_WAIT], 750);
}

Test(fsm, preempted_then_back_gives_runq_sample)
{
	running_host();
	vcpu_fsm_switch_out(&f, 2000, 0, 1, &s);
	vcpu_fsm_switch_in(&f, 2050, 0, &s);
	cr_assert_eq(s.from, VCPU_PREEMPTED);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_RUNQ_WAIT);
	cr_assert_eq(s.sample[0].ns, 50);
}

Test(fsm, switch_in_without_wakeup_has_no_runq_sample)
{
	running_host();
	vcpu_fsm_switch_out(&f, 2000, 0, 0, &s);
	vcpu_fsm_switch_in(&f, 2100, 0, &s);
	cr_assert_eq(s.from, VCPU_BLOCKED);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_NONE);
}

Test(fsm, duplicate_switch_in_changes_nothing)
{
	running_host();
	vcpu_fsm_kvm_entry(&f, 1500, &s);
	vcpu_fsm_switch_in(&f, 1600, 0, &s);
	cr_assert_eq(s.from, VCPU_GUEST);
	cr_assert_eq(s.to, VCPU_GUEST);
	cr_assert_eq(f.since, 1500);
}

Test(fsm, host_guest_host_exit_latency_per_reason)
{
	running_host();
	vcpu_fsm_kvm_entry(&f, 2000, &s);
	cr_assert_eq(s.from, VCPU_HOST);
	cr_assert_eq(s.to, VCPU_GUEST);

	vcpu_fsm_kvm_exit(&f, 3000, VMX_EXIT_MSR_WRITE, KVM_ISA_VMX, &s);
	cr_assert_eq(s.from, VCPU_GUEST);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.dur, 1000);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_NONE, "the exit is open, not yet measured");

	vcpu_fsm_kvm_entry(&f, 3400, &s);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_EXIT);
	cr_assert_eq(s.sample[0].reason, VMX_EXIT_MSR_WRITE);
	cr_assert_eq(s.sample[0].isa, KVM_ISA_VMX);
	cr_assert_eq(s.sample[0].ns, 400);

	vcpu_fsm_kvm_exit(&f, 4000, 30 /* IO_INSTRUCTION */, KVM_ISA_VMX, &s);
	vcpu_fsm_kvm_entry(&f, 4100, &s);
	cr_assert_eq(s.sample[0].reason, 30);
	cr_assert_eq(s.sample[0].ns, 100);

	cr_assert_eq(f.ns[VCPU_GUEST], 1000 + 600);
	cr_assert_eq(f.ns[VCPU_HOST], 1000 + 400 + 100);
	cr_assert_eq(f.kvm_exits, 2);
}

Test(fsm, kvm_exit_while_in_host_changes_no_state)
{
	running_host();
	vcpu_fsm_kvm_exit(&f, 1500, VMX_EXIT_MSR_WRITE, KVM_ISA_VMX, &s);
	cr_assert_eq(s.from, VCPU_HOST);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(f.since, 1000);
}

Test(fsm, missed_entry_drops_the_open_exit)
{
	running_host();
	vcpu_fsm_kvm_entry(&f, 1100, &s);
	vcpu_fsm_kvm_exit(&f, 1200, VMX_EXIT_MSR_WRITE, KVM_ISA_VMX, &s);
	vcpu_fsm_kvm_exit(&f, 9000, 30, KVM_ISA_VMX, &s); /* the kvm_entry in between was missed */
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_NONE, "no made-up sample");
	vcpu_fsm_kvm_entry(&f, 9050, &s);
	cr_assert_eq(s.sample[0].reason, 30);
	cr_assert_eq(s.sample[0].ns, 50);
}

Test(fsm, userspace_exit_sampled_at_run_enter_and_at_entry)
{
	running_host();
	vcpu_fsm_kvm_entry(&f, 1100, &s);
	vcpu_fsm_kvm_exit(&f, 1200, 30, KVM_ISA_VMX, &s);
	vcpu_fsm_userspace_exit(&f, 1300, KVM_UEXIT_IO, &s);
	cr_assert_eq(f.userspace_exits, 2, "running_host() made one");
	vcpu_fsm_run_enter(&f, 1800, &s);
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_USERSPACE_EXIT);
	cr_assert_eq(s.sample[1].reason, KVM_UEXIT_IO);
	cr_assert_eq(s.sample[1].ns, 500);
	vcpu_fsm_kvm_entry(&f, 1900, &s);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_EXIT);
	cr_assert_eq(s.sample[0].ns, 700, "kvm exit latency spans the userspace round trip");
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_NONE, "already closed at run_enter");

	/* without kvm_fpu, kvm_entry closes the userspace exit */
	vcpu_fsm_kvm_exit(&f, 2000, 30, KVM_ISA_VMX, &s);
	vcpu_fsm_userspace_exit(&f, 2100, KVM_UEXIT_MMIO, &s);
	vcpu_fsm_kvm_entry(&f, 2350, &s);
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_USERSPACE_EXIT);
	cr_assert_eq(s.sample[1].reason, KVM_UEXIT_MMIO);
	cr_assert_eq(s.sample[1].ns, 250);
}

Test(fsm, consecutive_userspace_exits_make_no_sample)
{
	running_host();
	vcpu_fsm_userspace_exit(&f, 2000, KVM_UEXIT_IO, &s);
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_NONE);
}

Test(fsm, migrate_tracks_pcpu)
{
	fresh(0);
	vcpu_fsm_migrate(&f, 1, &s);
	cr_assert(s.pcpu_changed);
	cr_assert_eq(f.pcpu, 1);
	cr_assert_eq(f.migrations, 0, "first pCPU seen is not a migration");
	vcpu_fsm_migrate(&f, 1, &s);
	cr_assert_not(s.pcpu_changed);
	vcpu_fsm_migrate(&f, 0, &s);
	cr_assert_eq(f.migrations, 1);
	vcpu_fsm_switch_in(&f, 10, 1, &s); /* migration not reported by its tracepoint */
	cr_assert(s.pcpu_changed);
	cr_assert_eq(f.pcpu, 1);
	cr_assert_eq(f.migrations, 2);
}

Test(fsm, process_exit_closes_last_interval)
{
	running_host();
	vcpu_fsm_switch_out(&f, 1200, 0, 0, &s);
	vcpu_fsm_process_exit(&f, 1700, &s);
	cr_assert(s.gone);
	cr_assert_eq(s.from, VCPU_BLOCKED);
	cr_assert_eq(s.to, VCPU_UNKNOWN);
	cr_assert_eq(s.dur, 500);
	cr_assert_eq(f.ns[VCPU_BLOCKED], 500);
	/* the userspace exit opened at 1000 ended with the thread */
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_USERSPACE_EXIT);
	cr_assert_eq(s.sample[1].reason, KVM_UEXIT_IO);
	cr_assert_eq(s.sample[1].ns, 700);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_NONE);
}

/*
 * A vCPU stopped in the middle of an exit (halted, its VMM asleep, then told
 * to stop): KVM counted the exit, so it must reach the histograms once, at
 * the thread's end -- as the recording's exit_reason interval ends there.
 */
Test(fsm, process_exit_closes_open_exits_into_samples)
{
	fresh(0);
	vcpu_fsm_switch_in(&f, 100, 0, &s);
	vcpu_fsm_kvm_entry(&f, 200, &s);
	vcpu_fsm_kvm_exit(&f, 1000, SVM_EXIT_HLT, KVM_ISA_SVM, &s);
	vcpu_fsm_userspace_exit(&f, 1100, KVM_UEXIT_HLT, &s);
	vcpu_fsm_switch_out(&f, 1200, 0, 0, &s);
	vcpu_fsm_process_exit(&f, 5000, &s);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_EXIT);
	cr_assert_eq(s.sample[0].reason, SVM_EXIT_HLT);
	cr_assert_eq(s.sample[0].isa, KVM_ISA_SVM);
	cr_assert_eq(s.sample[0].ns, 4000);
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_USERSPACE_EXIT);
	cr_assert_eq(s.sample[1].reason, KVM_UEXIT_HLT);
	cr_assert_eq(s.sample[1].ns, 3900);
	cr_assert_eq(f.kvm_exits, 1);

	/* nothing open: no sample */
	fresh(0);
	vcpu_fsm_switch_in(&f, 100, 0, &s);
	vcpu_fsm_kvm_entry(&f, 200, &s);
	vcpu_fsm_process_exit(&f, 300, &s);
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_NONE);
	cr_assert_eq(s.sample[1].kind, VCPU_SAMPLE_NONE);
}

Test(fsm, out_of_order_timestamps_never_go_negative)
{
	running_host();
	vcpu_fsm_switch_out(&f, 2000, 0, 0, &s);
	/* the waker's clock is 30 ns behind */
	vcpu_fsm_wakeup(&f, 1970, &s);
	cr_assert_eq(s.to, VCPU_WAIT);
	cr_assert_eq(s.dur, 0);
	cr_assert_eq(f.since, 2000, "since never moves backwards");
	cr_assert_eq(f.ns[VCPU_BLOCKED], 0);
	vcpu_fsm_switch_in(&f, 2100, 0, &s);
	cr_assert_eq(s.sample[0].ns, 100);
	vcpu_fsm_kvm_exit(&f, 2200, 30, KVM_ISA_VMX, &s);
	vcpu_fsm_kvm_entry(&f, 2150, &s);
	cr_assert_eq(s.sample[0].ns, 0);
	cr_assert_eq(vcpu_fsm_elapsed(10, 5), 0);
}

Test(fsm, total_includes_open_interval)
{
	running_host();
	cr_assert_eq(vcpu_fsm_total(&f, VCPU_HOST, 1600), 600);
	cr_assert_eq(vcpu_fsm_total(&f, VCPU_GUEST, 1600), 0);
	cr_assert_eq(vcpu_fsm_total(&f, VCPU_NR_STATES, 1600), 0);
}

/* The scenario, at the state-machine level (test_bpf.c runs it in the kernel). */
Test(fsm, scenario_msr_write_preempt_halt)
{
	fresh(1000);
	vcpu_fsm_kvm_entry(&f, 1000, &s);		   /* discovered, guest code */
	vcpu_fsm_kvm_exit(&f, 2000, VMX_EXIT_MSR_WRITE, 1, &s); /* MSR_WRITE */
	vcpu_fsm_switch_out(&f, 2100, 0, 1, &s);		   /* preempted */
	vcpu_fsm_switch_in(&f, 2150, 0, &s);		   /* 50 ns later */
	vcpu_fsm_kvm_entry(&f, 2200, &s);
	cr_assert_eq(s.sample[0].ns, 200);
	vcpu_fsm_kvm_exit(&f, 5000, VMX_EXIT_HLT, 1, &s);
	vcpu_fsm_switch_out(&f, 5100, 0, 0, &s);
	cr_assert_eq(s.to, VCPU_IDLE);
	cr_assert_eq(f.ns[VCPU_GUEST], 1000 + 2800);
	cr_assert_eq(f.ns[VCPU_HOST], 100 + 50 + 100);
	cr_assert_eq(f.ns[VCPU_PREEMPTED], 50);
	cr_assert_eq(f.preemptions, 1);
}

Test(fsm_comm, qemu_firecracker_cloud_hypervisor_names)
{
	struct {
		const char *comm;
		int index;
	} cases[] = {
		{ "CPU 0/KVM", 0 },	{ "CPU 12/KVM", 12 },	 { "CPU 123456/KVM", 123456 },
		{ "CPU /KVM", -1 },	{ "CPU 1/KVMx", -1 },	 { "CPU 1", -1 },
		{ "CPU 1/TCG", -1 },	{ "CPUx1/KVM", -1 },	 { "fc_vcpu 3", 3 },
		{ "fc_vcpu x", -1 },	{ "vcpu7", 7 },		 { "vcpu", -1 },
		{ "vcpu7a", -1 },	{ "qemu-system-x86", -1 }, { "", -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char comm[16] = { 0 };

		strncpy(comm, cases[i].comm, sizeof(comm) - 1);
		cr_assert_eq(vcpu_index_from_comm(comm), cases[i].index, "%s", cases[i].comm);
	}
}

/* ---- halt polling (in-kernel irqchip: KVM handles HLT, may poll first) ---- */

/* A vCPU that exited for HLT at t=1000 (SVM), on cpu 0. */
static void hlt_exit(void)
{
	fresh(0);
	vcpu_fsm_switch_in(&f, 0, 0, &s);
	vcpu_fsm_kvm_entry(&f, 0, &s);
	vcpu_fsm_kvm_exit(&f, 1000, SVM_EXIT_HLT, KVM_ISA_SVM, &s);
	cr_assert(f.flags & VCPU_F_HALTED);
}

Test(fsm, halt_without_polling_changes_nothing)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 0, 0, &s);
	cr_assert_eq(s.from, s.to, "no poll: no state change");
	cr_assert_eq(f.state, VCPU_HOST);
	cr_assert_not(f.flags & VCPU_F_POLLING);
	vcpu_fsm_switch_out(&f, 1200, 0, 0, &s);
	cr_assert_eq(s.to, VCPU_IDLE);
	vcpu_fsm_halt_end(&f, 5000, 1, &s);
	cr_assert_eq(f.polls_ok + f.polls_failed, 0, "a halt KVM did not poll is no poll");
	cr_assert_eq(f.ns[VCPU_POLL], 0);
}

Test(fsm, successful_poll_is_poll_then_host)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 40000, &s);
	cr_assert_eq(s.from, VCPU_HOST);
	cr_assert_eq(s.to, VCPU_POLL);
	cr_assert_eq(s.dur, 100, "exit handling before the halt stays host");
	cr_assert_eq(f.halt_poll_ns, 40000);
	vcpu_fsm_halt_end(&f, 1800, 0, &s);
	cr_assert_eq(s.from, VCPU_POLL);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.dur, 700);
	cr_assert_eq(f.ns[VCPU_POLL], 700);
	cr_assert_eq(f.polls_ok, 1);
	cr_assert_eq(f.polls_failed, 0);
	cr_assert_eq(f.poll_fail_ns, 0);
	vcpu_fsm_kvm_entry(&f, 1900, &s);
	cr_assert_eq(f.ns[VCPU_HOST], 200);
	cr_assert_eq(f.state, VCPU_GUEST);
}

Test(fsm, failed_poll_ends_in_idle_and_counts_its_cpu_time)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 40000, &s);
	vcpu_fsm_switch_out(&f, 41100, 0, 0, &s);
	cr_assert_eq(s.from, VCPU_POLL);
	cr_assert_eq(s.to, VCPU_IDLE);
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.poll_fail_ns, 40000);
	cr_assert_not(f.flags & VCPU_F_POLLING);
	vcpu_fsm_wakeup(&f, 90000, &s);
	cr_assert_eq(s.to, VCPU_WAIT);
	vcpu_fsm_switch_in(&f, 90500, 0, &s);
	cr_assert_eq(s.to, VCPU_HOST, "back from sleep: no poll under way");
	vcpu_fsm_halt_end(&f, 90600, 1, &s);
	cr_assert_eq(s.from, s.to, "the failed poll was counted at the switch");
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.polls_ok, 0);
	cr_assert_eq(f.ns[VCPU_POLL], 40000);
}

/*
 * Preempted while polling: KVM's loop had stopped for the scheduler (it
 * polls only while nothing else wants the CPU), so the vCPU comes back in
 * HOST on its way to sleep; the poll is counted when it sleeps (failed, with
 * its POLL time only) or when the halt ends.
 */
Test(fsm, preempted_poll_ends_its_poll_time_and_counts_at_the_halt_end_or_sleep)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 40000, &s);
	vcpu_fsm_switch_out(&f, 2100, 0, 1, &s); /* preempted while polling */
	cr_assert_eq(s.to, VCPU_PREEMPTED);
	cr_assert(f.flags & VCPU_F_POLLING, "the poll's outcome is still to come");
	vcpu_fsm_switch_in(&f, 7100, 1, &s);
	cr_assert_eq(s.from, VCPU_PREEMPTED);
	cr_assert_eq(s.to, VCPU_HOST, "KVM's loop stopped when the scheduler wanted the CPU");
	cr_assert_eq(s.sample[0].kind, VCPU_SAMPLE_RUNQ_WAIT);
	vcpu_fsm_switch_in(&f, 7150, 1, &s);
	cr_assert_eq(s.from, s.to, "a duplicate switch-in changes nothing");
	cr_assert_eq(vcpu_fsm_poll_expire(&f, 8000, &s), 0, "no POLL left to end");
	vcpu_fsm_switch_out(&f, 9100, 1, 0, &s);
	cr_assert_eq(s.to, VCPU_IDLE);
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.poll_fail_ns, 1000, "its POLL time only: not the 5000 ns preempted nor the 2000 after");
	cr_assert_eq(f.ns[VCPU_PREEMPTED], 5000);
	cr_assert_eq(f.ns[VCPU_POLL], 1000);

	/* the same, but the wake-up came meanwhile: the halt ends without a sleep, KVM's success */
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 20000, 1, 40000, &s);
	vcpu_fsm_switch_out(&f, 20500, 0, 1, &s);
	vcpu_fsm_switch_in(&f, 21500, 0, &s);
	cr_assert_eq(s.to, VCPU_HOST);
	vcpu_fsm_halt_end(&f, 21600, 0, &s);
	cr_assert_eq(f.polls_ok, 1);
	cr_assert_eq(f.ns[VCPU_POLL], 500);
}

Test(fsm, poll_that_waited_without_a_switch_is_failed_as_kvm_counts_it)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 40000, &s);
	vcpu_fsm_halt_end(&f, 41200, 1, &s);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.polls_ok, 0);
	cr_assert_eq(f.poll_fail_ns, 40100);
}

Test(fsm, poll_whose_end_was_missed_is_not_counted)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 40000, &s);
	vcpu_fsm_kvm_entry(&f, 1500, &s);
	cr_assert_eq(s.from, VCPU_POLL);
	cr_assert_eq(s.to, VCPU_GUEST);
	cr_assert_not(f.flags & VCPU_F_POLLING);
	cr_assert_eq(f.polls_ok + f.polls_failed, 0);
	vcpu_fsm_kvm_exit(&f, 2000, SVM_EXIT_HLT, KVM_ISA_SVM, &s);
	vcpu_fsm_switch_out(&f, 2100, 0, 0, &s);
	cr_assert_eq(f.polls_failed, 0, "no poll under way any more");
	cr_assert_eq(f.ns[VCPU_POLL], 400);
}

Test(fsm, two_polls_count_each_failed_ones_time_once)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 10000, &s);
	vcpu_fsm_halt_end(&f, 3100, 0, &s); /* ok: 2000 */
	vcpu_fsm_kvm_entry(&f, 3200, &s);
	vcpu_fsm_kvm_exit(&f, 4000, SVM_EXIT_HLT, KVM_ISA_SVM, &s);
	vcpu_fsm_halt_begin(&f, 4100, 1, 20000, &s);
	vcpu_fsm_switch_out(&f, 24100, 0, 0, &s); /* failed: 20000 */
	cr_assert_eq(f.polls_ok, 1);
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.ns[VCPU_POLL], 22000);
	cr_assert_eq(f.poll_fail_ns, 20000);
	cr_assert_eq(f.halt_poll_ns, 20000);
}

Test(fsm, poll_loop_giving_up_ends_poll_at_its_stop_time)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 40000, &s);
	cr_assert_eq(f.poll_stop, 41100);
	cr_assert_eq(vcpu_fsm_poll_expire(&f, 41100, &s), 0, "not after the stop yet");
	cr_assert_eq(vcpu_fsm_poll_expire(&f, 41500, &s), 1);
	cr_assert_eq(s.from, VCPU_POLL);
	cr_assert_eq(s.to, VCPU_HOST);
	cr_assert_eq(s.at, 41100, "POLL ends where KVM's loop gave up");
	cr_assert_eq(s.dur, 40000);
	cr_assert(f.flags & VCPU_F_POLLING, "the poll is counted when the vCPU sleeps");
	vcpu_fsm_switch_out(&f, 41500, 0, 0, &s);
	cr_assert_eq(s.from, VCPU_HOST);
	cr_assert_eq(s.to, VCPU_IDLE);
	cr_assert_eq(s.dur, 400, "the way into sleep is host time");
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.poll_fail_ns, 40000);
}

Test(fsm, preempted_past_the_stop_resumes_as_host)
{
	hlt_exit();
	vcpu_fsm_halt_begin(&f, 1100, 1, 10000, &s);
	vcpu_fsm_switch_out(&f, 5100, 0, 1, &s);
	vcpu_fsm_switch_in(&f, 20000, 0, &s);
	cr_assert_eq(s.to, VCPU_HOST, "KVM's loop is over: it only goes to sleep now");
	cr_assert_eq(vcpu_fsm_poll_expire(&f, 20100, &s), 0, "nothing left to end");
	vcpu_fsm_switch_out(&f, 20100, 0, 0, &s);
	cr_assert_eq(f.polls_failed, 1);
	cr_assert_eq(f.poll_fail_ns, 4000);
	cr_assert_eq(f.ns[VCPU_HOST], 100 + 100);
}
