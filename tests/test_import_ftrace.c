// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ftrace text parser, line by line: every layout (tgid and irq-flags
 * columns, 6/9 decimals, old and new kvm text, trace-cmd's plugin forms),
 * every event the analysis uses, prev_state letters, VMX/SVM exit-reason
 * names, and what it says about lines it cannot read.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "import/binary_internal.h"
#include "import/import.h"
#include "helpers.h"
#include "import_helpers.h"

static enum ftrace_line parse(struct ftrace_parser *p, const char *line, struct trace_event *ev)
{
	memset(ev, 0xa5, sizeof(*ev)); /* nothing is left over from before */
	return ftrace_parse_line(p, line, strlen(line), ev);
}

static void parse_ok(const char *line, struct trace_event *ev)
{
	struct ftrace_parser p;
	enum ftrace_line r;

	ftrace_parser_init(&p, 0);
	r = parse(&p, line, ev);
	cr_assert_eq(r, FTRACE_EVENT, "'%s': %d (%s)", line, r, r == FTRACE_BAD ? p.why : "");
}

Test(import_ftrace, header_columns_in_every_layout)
{
	static const char *const lines[] = {
		/* tracefs, record-tgid and irq-info on */
		("       CPU 0/KVM-4321    (   4300) [003] d..2.  4028.534052: kvm_entry: vcpu 2, rip 0xffffffff81000000 "
		 "intr_info 0x00000000 error_code 0x00000000"),
		/* no tgid column */
		"       CPU 0/KVM-4321    [003] d..2.  4028.534052: kvm_entry: vcpu 2, rip 0xffffffff81000000",
		/* no irq flags either (options/irq-info off), 9 decimals */
		"       CPU 0/KVM-4321    [003]  4028.534052000: kvm_entry: vcpu 2, rip 0xffffffff81000000",
		/* trace-cmd report */
		"       CPU 0/KVM-4321 [003]  4028.534052: kvm_entry:            vcpu 2, rip 0xffffffff81000000",
		/* tgid unknown to the kernel, old kvm_entry text, CRLF */
		"       CPU 0/KVM-4321    (-------) [003] .....  4028.534052: kvm_entry: vcpu 2\r",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct trace_event ev;

		parse_ok(lines[i], &ev);
		cr_assert_eq(ev.ev.type, VCPUSTAT_EV_KVM_ENTRY, "line %zu", i);
		cr_assert_eq(ev.ev.ts, 4028534052000ull, "line %zu: ts %llu", i, (unsigned long long)ev.ev.ts);
		cr_assert_eq(ev.ev.cpu, 3);
		cr_assert_eq(ev.pid, 4321);
		cr_assert_eq(ev.ev.tid, 4321);
		cr_assert_eq(ev.ev.arg0, 2, "vcpu id");
		cr_assert_str_eq(ev.cur_comm, "CPU 0/KVM");
		cr_assert_str_eq(ev.ev.comm, "CPU 0/KVM");
		cr_assert_eq(ev.tgid, i == 0 ? 4300 : -1, "line %zu: tgid %lld", i, (long long)ev.tgid);
		cr_assert_eq(ev.marker, 0);
	}
}

Test(import_ftrace, comm_with_dashes_spaces_and_digits)
{
	struct trace_event ev;

	parse_ok("    my-app-2-x-77    (     70) [001] d..2.   12.000001: sched_wakeup: comm=a b-1 pid=9 prio=120 "
		 "target_cpu=001",
		 &ev);
	cr_assert_str_eq(ev.cur_comm, "my-app-2-x");
	cr_assert_eq(ev.pid, 77);
	cr_assert_eq(ev.tgid, 70);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_WAKEUP);
	cr_assert_eq(ev.ev.tid, 9);
	cr_assert_str_eq(ev.ev.comm, "a b-1");
	cr_assert_eq(ev.ev.arg0, 1);
	cr_assert_eq(ev.ev.ts, 12000001000ull);
}

Test(import_ftrace, sched_switch_both_forms)
{
	struct trace_event ev;

	parse_ok("       CPU 1/KVM-1002    (   1000) [000] d..2.   100.000001234: sched_switch: prev_comm=CPU 1/KVM "
		 "prev_pid=1002 prev_prio=120 prev_state=R+ ==> next_comm=x prev_pid=y next_pid=555 next_prio=120",
		 &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_SWITCH);
	cr_assert_eq(ev.ev.tid, 1002);
	cr_assert_eq(ev.ev.tid2, 555);
	cr_assert_eq(ev.ev.arg0, 0);
	cr_assert_eq(ev.ev.arg1, 1, "R+ is a preemption");
	cr_assert_str_eq(ev.ev.comm, "CPU 1/KVM");
	cr_assert_str_eq(ev.next_comm, "x prev_pid=y");
	cr_assert_eq(ev.ev.ts, 100000001234ull);

	/* trace-cmd's sched_switch plugin */
	parse_ok("       CPU 1/KVM-1002  [000]   100.000001: sched_switch:         CPU 1/KVM:1002 [120] D ==> "
		 "swapper/0:0 [120]",
		 &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_SWITCH);
	cr_assert_eq(ev.ev.tid, 1002);
	cr_assert_eq(ev.ev.tid2, 0);
	cr_assert_eq(ev.ev.arg0, 2);
	cr_assert_eq(ev.ev.arg1, 0);
	cr_assert_str_eq(ev.ev.comm, "CPU 1/KVM");
	cr_assert_str_eq(ev.next_comm, "swapper/0");
}

Test(import_ftrace, prev_state_letters)
{
	static const struct {
		const char *s;
		uint64_t state;
		int preempt;
	} ok[] = {
		{ "R", 0, 0 },	    { "R+", 0, 1 },	{ "S", 0x1, 0 },  { "D", 0x2, 0 },    { "T", 0x4, 0 },
		{ "t", 0x8, 0 },    { "X", 0x10, 0 },	{ "Z", 0x20, 0 }, { "P", 0x40, 0 },   { "I", 0x402, 0 },
		{ "D|K", 0x102, 0 }, { "S|W", 0x201, 0 }, { "x", 0x80, 0 }, { "D|N", 0x402, 0 }, { "S+", 0x1, 1 },
	};
	static const char *const bad[] = { "", "Q", "S|", "|S", "SD", "+", "R++", "s" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t st = 99;
		int pre = 99;

		cr_assert_eq(ftrace_prev_state(ok[i].s, strlen(ok[i].s), &st, &pre), 0, "%s", ok[i].s);
		cr_assert_eq(st, ok[i].state, "%s: %#llx", ok[i].s, (unsigned long long)st);
		cr_assert_eq(pre, ok[i].preempt, "%s", ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t st;
		int pre;

		cr_assert_eq(ftrace_prev_state(bad[i], strlen(bad[i]), &st, &pre), -1, "'%s' accepted", bad[i]);
	}
}

/*
 * trace.dat and LTTng give prev_state as the number the kernel prints as a
 * letter: both conversions must agree on every value of the report (Linux
 * >= 4.14), and the numeric one rejects what is outside it.
 */
Test(import_ftrace, numeric_prev_state_is_what_its_letter_says)
{
	static const struct {
		int64_t v;
		const char *letter;
	} report[] = {
		{ 0, "R" },    { 0x100, "R+" }, { 0x1, "S" },	{ 0x2, "D" },  { 0x4, "T" },
		{ 0x8, "t" },  { 0x10, "X" },	{ 0x20, "Z" }, { 0x40, "P" }, { 0x80, "I" },
	};
	static const int64_t bad[] = { -1, 0x200, 0x1000, INT64_MIN };

	for (size_t i = 0; i < sizeof(report) / sizeof(report[0]); i++) {
		__u64 st = 99, pre = 99;
		uint64_t lst = 98;
		int lpre = 98;

		cr_assert(binary_prev_state(report[i].v, &st, &pre), "%#llx", (long long)report[i].v);
		cr_assert_eq(ftrace_prev_state(report[i].letter, strlen(report[i].letter), &lst, &lpre), 0);
		cr_assert_eq(st, lst, "%#llx = %s: state %#llx, the letter's %#llx", (long long)report[i].v,
			     report[i].letter, (unsigned long long)st, (unsigned long long)lst);
		cr_assert_eq(pre, (__u64)lpre, "%#llx = %s: preempt", (long long)report[i].v, report[i].letter);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		__u64 st, pre;

		cr_assert_not(binary_prev_state(bad[i], &st, &pre), "%lld accepted", (long long)bad[i]);
	}
}

Test(import_ftrace, exit_reason_names_vmx_svm_old_and_numbers)
{
	static const struct {
		const char *name;
		unsigned int hint;
		uint32_t code, isa;
	} ok[] = {
		{ "MSR_WRITE", 0, 32, KVM_ISA_VMX },
		{ "EPT_VIOLATION", 0, 48, KVM_ISA_VMX },
		{ "HLT", 0, 12, KVM_ISA_VMX },
		{ "IO_INSTRUCTION", 0, 30, KVM_ISA_VMX },
		{ "npf", 0, 0x400, KVM_ISA_SVM },
		{ "hlt", 0, 0x78, KVM_ISA_SVM },
		{ "io", 0, 0x7b, KVM_ISA_SVM },
		{ "msr", 0, 0x7c, KVM_ISA_SVM },
		{ "DE excp", 0, 0x40, KVM_ISA_SVM },
		{ "PF excp", 0, 0x4e, KVM_ISA_SVM },
		{ "hypercall", 0, 0x81, KVM_ISA_SVM },
		{ "idle-halt", 0, 0xa6, KVM_ISA_SVM },
		{ "EXIT_IOIO", 0, 0x7b, KVM_ISA_SVM },
		{ "EXIT_NPF", 0, 0x400, KVM_ISA_SVM },
		{ "SVM_EXIT_VMMCALL", 0, 0x81, KVM_ISA_SVM },
		{ "EXIT_HLT", 0, 0x78, KVM_ISA_SVM },
		{ "EXIT_REASON_HLT", 0, 12, KVM_ISA_VMX },
		{ "EXIT_REASON_EPT_VIOLATION", 0, 48, KVM_ISA_VMX },
		{ "msr_write", 0, 32, KVM_ISA_VMX },
		{ "Hlt", KVM_ISA_SVM, 0x78, KVM_ISA_SVM },
		{ "Hlt", 0, 12, KVM_ISA_VMX },
		{ "30", 0, 30, KVM_ISA_VMX },
		{ "0x7b", KVM_ISA_SVM, 0x7b, KVM_ISA_SVM },
	};
	static const char *const bad[] = { "", "NO_SUCH_REASON", "EXIT_BOGUS", "12x", "0x" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint32_t code = 0, isa = 0;

		cr_assert_eq(ftrace_exit_reason(ok[i].name, strlen(ok[i].name), ok[i].hint, &code, &isa), 0, "%s",
			     ok[i].name);
		cr_assert_eq(code, ok[i].code, "%s: %#x", ok[i].name, code);
		cr_assert_eq(isa, ok[i].isa, "%s: isa %u", ok[i].name, isa);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t code, isa;

		cr_assert_eq(ftrace_exit_reason(bad[i], strlen(bad[i]), 0, &code, &isa), -1, "'%s' accepted", bad[i]);
	}
}

Test(import_ftrace, kvm_exit_old_and_new_text)
{
	struct trace_event ev;

	parse_ok("       CPU 0/KVM-4321    [003] d..2.  4028.534052: kvm_exit: vcpu 1 reason EPT_VIOLATION rip "
		 "0xffffffff81000000 info1 0x0000000000000181 info2 0x0000000000000000 intr_info 0x00000000 "
		 "error_code 0x00000000 requests 0x0000000000000000",
		 &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_KVM_EXIT);
	cr_assert_eq(ev.ev.arg0, 48);
	cr_assert_eq(ev.ev.arg1, KVM_ISA_VMX);
	cr_assert_eq(ev.ev.arg2, 1);

	parse_ok("       CPU 0/KVM-4321    [003] d..2.  4028.534052: kvm_exit: reason EXIT_IOIO rip 0xffffffff8103a2b6 "
		 "info 1f80049 ffffffff8103a2b8",
		 &ev);
	cr_assert_eq(ev.ev.arg0, 0x7b);
	cr_assert_eq(ev.ev.arg1, KVM_ISA_SVM);
	cr_assert_eq(ev.ev.arg2, 0xffffffffu, "no vcpu id in the old text");

	parse_ok("       CPU 0/KVM-4321    [003] d..2.  4028.534052: kvm_exit: vcpu 0 reason DE excp rip 0x0 info1 0x0",
		 &ev);
	cr_assert_eq(ev.ev.arg0, 0x40);
	cr_assert_eq(ev.ev.arg1, KVM_ISA_SVM);

	parse_ok("       CPU 0/KVM-4321    [003] d..2.  4028.534052: kvm_exit: vcpu 0 reason INVALID_STATE "
		 "FAILED_VMENTRY rip 0x0 info1 0x0",
		 &ev);
	cr_assert_eq(ev.ev.arg0, 0x80000021u);
	cr_assert_eq(ev.ev.arg1, KVM_ISA_VMX);
}

Test(import_ftrace, unknown_reason_is_counted_not_fatal)
{
	struct ftrace_parser p;
	struct trace_event ev;

	ftrace_parser_init(&p, 0);
	cr_assert_eq(parse(&p, "  CPU 0/KVM-1 [000] 1.000001: kvm_exit: vcpu 0 reason FROBNICATE rip 0x0", &ev),
		     FTRACE_EVENT);
	cr_assert_eq(ev.ev.arg0, 0xffff);
	cr_assert_eq(p.unknown_reasons, 1);
}

Test(import_ftrace, other_kvm_events)
{
	struct trace_event ev;
	struct ftrace_parser p;

	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_userspace_exit: reason KVM_EXIT_IO (2)", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_USERSPACE_EXIT);
	cr_assert_eq(ev.ev.arg0, 2);
	cr_assert_eq(ev.ev.arg1, 0);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_userspace_exit: reason restart (4)", &ev);
	cr_assert_eq(ev.ev.arg0, KVM_UEXIT_INTR);
	cr_assert_eq((int32_t)ev.ev.arg1, -4);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_fpu: load", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_KVM_RUN);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_hypercall: nr 0x56435331 a0 0x1000000000002a a1 0x7 a2 0x0 a3 0x0",
		 &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_HYPERCALL);
	cr_assert_eq(ev.ev.arg0, VCPUSTAT_SYNC_HYPERCALL_NR);
	cr_assert_eq(ev.ev.arg1, 0x1000000000002aull);
	cr_assert_eq(ev.ev.arg2, 7);
	parse_ok(" stress-9 [001] 5.000000: sched_migrate_task: comm=CPU 2/KVM pid=1003 prio=120 orig_cpu=1 dest_cpu=0",
		 &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_MIGRATE);
	cr_assert_eq(ev.ev.tid, 1003);
	cr_assert_eq(ev.ev.arg0, 0);
	cr_assert_eq(ev.ev.arg1, 1);
	parse_ok(" qemu-9 [001] 5.000000: sched_process_exit: comm=qemu pid=9 prio=120 group_dead=true", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_PROCESS_EXIT);
	cr_assert_eq(ev.ev.arg0, 1);
	parse_ok(" bash-9 [001] 5.000000: sched_wakeup_new: comm=bash pid=10 prio=120 target_cpu=001", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_WAKEUP_NEW);
	parse_ok(" bash-9 [001] 5.000000: sched_wakeup: bash:10 [120] success=1 CPU:001", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_WAKEUP);
	cr_assert_eq(ev.ev.tid, 10);
	cr_assert_eq(ev.ev.arg0, 1);

	ftrace_parser_init(&p, 0);
	cr_assert_eq(parse(&p, " CPU 0/KVM-7 [001] 5.000000: kvm_fpu: unload", &ev), FTRACE_SKIP);
	cr_assert_eq(parse(&p, " CPU 0/KVM-7 [001] 5.000000: kvm_hypercall: nr 0x9 a0 0x1 a1 0x0", &ev), FTRACE_SKIP);
	cr_assert_eq(parse(&p, " CPU 0/KVM-7 [001] 5.000000: kvm_cpuid: func 1 idx 0 rax 306a9 rbx 100800", &ev),
		     FTRACE_SKIP, "a KVM event vcpustat does not use");
	cr_assert_eq(parse(&p, " bash-7 [001] 5.000000: tracing_mark_write: hello", &ev), FTRACE_SKIP);
}

/* The exit details, as the kernel prints them (arch/x86/kvm/trace.h, include/trace/events/kvm.h). */
Test(import_ftrace, exit_detail_events)
{
	struct trace_event ev;

	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_pio: pio_write at 0x3f8 size 1 count 1 val 0x41 ", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_PIO);
	cr_assert_eq(ev.ev.tid, 7);
	cr_assert_eq(ev.ev.arg0, 0x3f8);
	cr_assert_eq(ev.ev.arg1, 1, "a write");
	cr_assert_eq(ev.ev.arg2, 1);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_pio: pio_read at 0x10 size 4 count 1 val 0x7d0 ", &ev);
	cr_assert_eq(ev.ev.arg0, 0x10);
	cr_assert_eq(ev.ev.arg1, 0);
	cr_assert_eq(ev.ev.arg2, 4);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_mmio: mmio write len 1 gpa 0x10000 val 0x0", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_MMIO);
	cr_assert_eq(ev.ev.arg0, 0x10000);
	cr_assert_eq(ev.ev.arg1, 2, "KVM_TRACE_MMIO_WRITE");
	cr_assert_eq(ev.ev.arg2, 1);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_mmio: mmio unsatisfied-read len 4 gpa 0xfee00030 val 0x0", &ev);
	cr_assert_eq(ev.ev.arg0, 0xfee00030);
	cr_assert_eq(ev.ev.arg1, 0);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_mmio: mmio read len 4 gpa 0xfee00030 val 0x50014", &ev);
	cr_assert_eq(ev.ev.arg1, 1);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_msr: msr_read c0000080 = 0x0", &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_MSR);
	cr_assert_eq(ev.ev.arg0, 0xc0000080);
	cr_assert_eq(ev.ev.arg1, 0);
	cr_assert_eq(ev.ev.arg2, 0);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_msr: msr_write 6e0 = 0x1f3a2 (#GP)", &ev);
	cr_assert_eq(ev.ev.arg0, 0x6e0);
	cr_assert_eq(ev.ev.arg1, 1);
	cr_assert_eq(ev.ev.arg2, 1, "it raised #GP");
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_page_fault: vcpu 0 rip 0x1042 address 0x0000000000010000 "
		 "error_code 0x100000006",
		 &ev);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_PAGE_FAULT);
	cr_assert_eq(ev.ev.arg0, 0x10000);
	cr_assert_eq(ev.ev.arg1, 0x100000006ull);
	parse_ok(" CPU 0/KVM-7 [001] 5.000000: kvm_page_fault: address 7f123 error_code 14", &ev);
	cr_assert_eq(ev.ev.arg0, 0x7f123, "before 6.x: bare hexadecimal");
	cr_assert_eq(ev.ev.arg1, 0x14);
}

Test(import_ftrace, sync_markers)
{
	struct trace_event ev;

	parse_ok(" agent-77 [002] d..1. 1005.000000123: tracing_mark_write: vcpustat_sync: a k=0x2000000000017", &ev);
	cr_assert_eq(ev.marker, 'a');
	cr_assert_eq(ev.key, 0x2000000000017ull);
	cr_assert_eq(ev.ev.type, VCPUSTAT_EV_NONE);
	cr_assert_eq(ev.ev.ts, 1005000000123ull);
	/* trace-cmd report prints the marker as a print event */
	parse_ok(" agent-77 [002]  1005.000000: print:                tracing_mark_write: vcpustat_sync: d k=42", &ev);
	cr_assert_eq(ev.marker, 'd');
	cr_assert_eq(ev.key, 42);
}

Test(import_ftrace, headers_and_lost_lines)
{
	static const char *const headers[] = {
		"# tracer: nop", "#", "", "   ", "cpus=2", "version = 6", "CPU 0 is empty", "CPU 1 is empty",
	};
	struct ftrace_parser p;
	struct trace_event ev;

	ftrace_parser_init(&p, 0);
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++)
		cr_assert_eq(parse(&p, headers[i], &ev), FTRACE_HEADER, "'%s'", headers[i]);
	cr_assert_eq(parse(&p, "CPU:1 [LOST 1234 EVENTS]", &ev), FTRACE_LOST);
	cr_assert_eq(p.lost, 1234);
	cr_assert_eq(parse(&p, "CPU:0 [77 EVENTS DROPPED]", &ev), FTRACE_LOST);
	cr_assert_eq(p.lost, 77);
}

Test(import_ftrace, malformed_lines_say_what_is_wrong)
{
	static const struct {
		const char *line;
		const char *why; /* a piece of the message */
	} bad[] = {
		{ "garbage", "no '<comm>-<pid> [<cpu>]'" },
		{ "  bash-12 [000]", "timestamp" },
		{ "  bash-12 [000] 12.5", "timestamp" },
		{ "  bash-12 [000] 1234567: sched_switch: prev_comm=a", "counter trace clock" },
		{ "  bash-12 [000] 1.0000000001: sched_switch: x", "the timestamp has 10 decimals: at most 9" },
		{ "  bash-12 [000] 1.000001 sched_switch: x", "timestamp" },
		{ "  bash-12 [000] 1.000001: ", "'<event>:'" },
		{ "  bash-12 [000] 1.000001: sched_switch: prev_comm=bash prev_pid=12 prev_prio=120 prev_state=S ==> "
		  "next_comm=x next_p",
		  "next_pid" },
		{ "  bash-12 [000] 1.000001: sched_switch: prev_comm=bash prev_pid=12 prev_prio=120 prev_state=Q ==> "
		  "next_comm=x next_pid=1 next_prio=120",
		  "prev_state" },
		{ "  bash-12 [000] 1.000001: sched_switch: prev_comm=bash prev_pid=-1 prev_prio=120", "prev_pid" },
		{ "  bash-12 [000] 1.000001: sched_wakeup: comm=bash pid=13 prio=120", "target_cpu" },
		{ "  bash-12 [000] 1.000001: kvm_entry: vcpu", "kvm_entry" },
		{ "  bash-12 [000] 1.000001: kvm_exit: rip 0x0", "kvm_exit" },
		{ "  bash-12 [000] 1.000001: kvm_userspace_exit: reason KVM_EXIT_IO", "kvm_userspace_exit" },
		{ "  bash-12 [000] 1.000001: kvm_fpu: maybe", "kvm_fpu" },
		{ "  bash-12 [000] 1.000001: kvm_hypercall: nr 0x56435331", "a0" },
		{ "  bash-12 [000] 1.000001: kvm_pio: pio_poke at 0x10 size 1", "pio_read" },
		{ "  bash-12 [000] 1.000001: kvm_pio: pio_read at 0x10000 size 1", "16-bit" },
		{ "  bash-12 [000] 1.000001: kvm_pio: pio_read at 0x10", "size" },
		{ "  bash-12 [000] 1.000001: kvm_mmio: mmio peek len 1 gpa 0x0 val 0x0", "type" },
		{ "  bash-12 [000] 1.000001: kvm_mmio: mmio write len 1 val 0x0", "gpa" },
		{ "  bash-12 [000] 1.000001: kvm_msr: msr_read = 0x0", "MSR index" },
		{ "  bash-12 [000] 1.000001: kvm_page_fault: vcpu 0 rip 0x0 error_code 0x6", "address" },
		{ "  bash-12 [000] 1.000001: kvm_page_fault: address 0x1000", "error_code" },
		{ "  bash-99999999999 [000] 1.000001: kvm_fpu: load", "no '<comm>-<pid> [<cpu>]'" },
		{ "  bash-12 [99999999999] 1.000001: kvm_fpu: load", "no '<comm>-<pid> [<cpu>]'" },
		{ "  bash-12 [000] 99999999999.000001: kvm_fpu: load", "the timestamp's seconds are out of range" },
		{ "  bash-12 [000] d..2. 1.00000000012: kvm_fpu: load", "the timestamp has 11 decimals" },
	};
	struct ftrace_parser p;
	struct trace_event ev;

	ftrace_parser_init(&p, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse(&p, bad[i].line, &ev), FTRACE_BAD, "'%s' accepted", bad[i].line);
		cr_assert(strstr(p.why, bad[i].why), "'%s': '%s' does not mention '%s'", bad[i].line, p.why, bad[i].why);
	}
}

/*
 * `perf script` text (perf's columns: "<comm> <tid> [<cpu>] <secs>.<ns>:
 * <system>:<event>: <fields>", the comm right-aligned and apart from the tid
 * by spaces): real lines recorded in the KVM lab (perf 6.1.192, `perf record
 * -e sched:… -e kvm:…` while microvm ran with --mix all, `perf script --ns`;
 * tests/data/perf-script-kvmlab.txt, 2001 lines) give every interval that
 * the same lines in ftrace's columns give.
 */
Test(import_ftrace, perf_script_text_gives_the_intervals_of_the_same_events_as_ftrace_text)
{
	const char *perf = VCPUSTAT_SOURCE_DIR "/tests/data/perf-script-kvmlab.txt";
	char *ftr = imp_tmp(".txt"), cmd[1024], out[4096], *a_sht, *b_sht;
	struct import_opts o = { 0 };
	struct import_result res;
	struct imp_dump a, b;

	/* perf's columns rewritten as ftrace's, by sed: "<comm>-<tid> [<cpu>] <ts>: <event>:" */
	snprintf(cmd, sizeof(cmd),
		 "sed -E 's/^ *(.*[^ ]) +([0-9]+) +(\\[[0-9]+\\]) +([0-9.]+:) +[a-z_0-9]+:([a-z_0-9]+:)/\\1-\\2 \\3 \\4 \\5/' "
		 "'%s' > '%s'",
		 perf, ftr);
	cr_assert_eq(run_shell(cmd, out, sizeof(out)), 0, "%s", out);
	o.host = perf;
	a_sht = imp_run(&o, &res);
	cr_assert_eq(res.host.lines, 2001);
	cr_assert_eq(res.host.events, 2001, "%llu of the 2001 lines are events", (unsigned long long)res.host.events);
	cr_assert_eq(res.host.skipped, 0, "every event is one vcpustat uses");
	cr_assert_eq(res.vcpus, 2, "microvm's 2 vCPUs (threads named 'CPU n/KVM': comms with spaces)");
	import_result_free(&res);
	o.host = ftr;
	b_sht = imp_run(&o, NULL);
	a = imp_dump(a_sht, NULL);
	b = imp_dump(b_sht, NULL);
	cr_assert_gt(a.n, 1000, "%zu intervals", a.n);
	imp_assert_same(&a, &b, "perf script vs ftrace text");
	cr_log_info("perf script text: %zu intervals, the same as the ftrace text's", a.n);
	imp_dump_free(&a);
	imp_dump_free(&b);
	unlink(a_sht);
	unlink(b_sht);
	unlink(ftr); /* imp_tmp's paths are its own (not malloc'ed) */
}

/*
 * A CPU number never wraps to another CPU (issue 40): a line on [65541] was
 * recorded as CPU 5 and mixed with its events, and CPU 1030 was taken with
 * the handler's table at its default 1024 CPUs. Now the line is refused,
 * named by file and line, or (--lenient) counted as malformed; --cpus takes
 * CPU 1030, and it keeps its number.
 */
#define SW(cpu, ts, prev, next)                                                                              \
	"  <idle>-" #prev " [" #cpu "] " ts ": sched_switch: prev_comm=x prev_pid=" #prev " prev_prio=120 "     \
	"prev_state=R ==> next_comm=CPU 0/KVM next_pid=" #next " next_prio=120\n"

static int import_text(const char *text, unsigned int nr_cpus, bool lenient, struct import_result *res,
		       struct vcpustat_error *err, char **sht, const char **path)
{
	struct import_opts o = { .nr_cpus = nr_cpus, .no_sync = true };
	int e;

	*path = o.host = imp_write_text(text);
	o.trace.lenient = lenient;
	*sht = imp_tmp(".sht");
	o.out = *sht;
	e = vcpustat_import(&o, res, err);
	return e;
}

Test(import_ftrace, a_cpu_beyond_the_table_is_refused_naming_the_line_never_wrapped)
{
	static const char wrap[] = SW(005, "1.000001", 0, 1001) SW(65541, "1.000002", 0, 2001);
	static const char big[] = SW(005, "1.000001", 0, 1001) SW(1030, "1.000002", 0, 2001);
	struct vcpustat_error err = { 0 };
	struct import_result res;
	struct imp_dump d;
	const char *path;
	char *sht, want[256];
	bool found = false;

	/* 65541: out of what a record holds, whatever --cpus says */
	cr_assert_eq(import_text(wrap, 65536, false, &res, &err, &sht, &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: CPU 65541 is out of range", path);
	cr_assert(strstr(err.msg, want) && strstr(err.msg, "0 to 65535"), "%s", err.msg);
	import_result_free(&res);
	cr_assert_neq(access(sht, F_OK), 0, "no file is left");
	unlink(path);
	/* --lenient: counted and said, and CPU 5 has only its own thread */
	cr_assert_eq(import_text(wrap, 0, true, &res, &err, &sht, &path), 0, "%s", err.msg);
	cr_assert_eq(res.host.malformed, 1);
	cr_assert(strstr(res.host.messages[0], "CPU 65541"), "%s", res.host.messages[0]);
	d = imp_dump(sht, NULL);
	for (size_t i = 0; i < d.n; i++)
		cr_assert(!strstr(d.line[i], "2001"), "the line on CPU 65541 is in the file: %s", d.line[i]);
	imp_dump_free(&d);
	import_result_free(&res);
	unlink(sht);
	unlink(path);
	/* 1030 with the default table of 1024: refused, saying which --cpus takes it */
	cr_assert_eq(import_text(big, 0, false, &res, &err, &sht, &path), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: CPU 1030 is beyond --cpus 1024", path);
	cr_assert(strstr(err.msg, want) && strstr(err.msg, "--cpus 1031"), "%s", err.msg);
	import_result_free(&res);
	unlink(path);
	/* --cpus 1031: CPU 1030 keeps its number */
	cr_assert_eq(import_text(big, 1031, false, &res, &err, &sht, &path), 0, "%s", err.msg);
	d = imp_dump(sht, NULL);
	for (size_t i = 0; i < d.n; i++)
		found |= !strncmp(d.line[i], "/host/cpus/1030/current_tid ", 28) && strstr(d.line[i], " 2001");
	cr_assert(found, "CPU 1030 lost its number");
	imp_dump_free(&d);
	import_result_free(&res);
	unlink(sht);
	unlink(path);
}
