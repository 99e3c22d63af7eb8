// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The loader's kernel probes and tracepoint formats (user/live/compat.c):
 * the fields of kvm_exit, kvm_entry, kvm_page_fault and kvm_apic_accept_irq
 * as 5.10, 6.1 and 6.12 lay them out (their format files, as tracefs prints
 * them), and the probes on this kernel.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "live/compat.h"
#include "helpers.h"

static char dir[64];

static const char *write_format(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/vcpustat-compat-XXXXXX");
		cr_assert_not_null(mkdtemp(dir));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void cleanup(void)
{
	char path[128];

	if (!dir[0])
		return;
	snprintf(path, sizeof(path), "%s/format", dir);
	unlink(path);
	rmdir(dir);
	dir[0] = '\0';
}

#define COMMON                                                                                                      \
	"format:\n"                                                                                                 \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                                      \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                                      \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"                              \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

/* Debian 11's 5.10 (its kvm_exit before the 5.16 change of arguments, and without a vcpu_id in kvm_page_fault) */
static const char exit_510[] = "name: kvm_exit\nID: 1005\n" COMMON
			       "\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
			       "\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
			       "\tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n"
			       "\tfield:u64 info1;\toffset:32;\tsize:8;\tsigned:0;\n"
			       "\tfield:u64 info2;\toffset:40;\tsize:8;\tsigned:0;\n"
			       "\tfield:u32 intr_info;\toffset:48;\tsize:4;\tsigned:0;\n"
			       "\tfield:u32 error_code;\toffset:52;\tsize:4;\tsigned:0;\n"
			       "\tfield:unsigned int vcpu_id;\toffset:56;\tsize:4;\tsigned:0;\n\n"
			       "print fmt: \"vcpu %u reason %s\", REC->vcpu_id, REC->exit_reason\n";

static const char pf_510[] = "name: kvm_page_fault\nID: 1012\n" COMMON
			     "\tfield:unsigned long fault_address;\toffset:8;\tsize:8;\tsigned:0;\n"
			     "\tfield:unsigned int error_code;\toffset:16;\tsize:4;\tsigned:0;\n\n"
			     "print fmt: \"address %lx error_code %x\", REC->fault_address, REC->error_code\n";

/* Debian 13's 6.12 */
static const char pf_612[] = "name: kvm_page_fault\nID: 1012\n" COMMON
			     "\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
			     "\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
			     "\tfield:u64 fault_address;\toffset:24;\tsize:8;\tsigned:0;\n"
			     "\tfield:u64 error_code;\toffset:32;\tsize:8;\tsigned:0;\n\n"
			     "print fmt: \"vcpu %u rip 0x%lx\", REC->vcpu_id, REC->guest_rip\n";

static const char entry_612[] = "name: kvm_entry\nID: 115\n" COMMON
				"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
				"\tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n"
				"\tfield:bool immediate_exit;\toffset:24;\tsize:1;\tsigned:0;\n\n"
				"print fmt: \"vcpu %u, rip 0x%lx%s\", REC->vcpu_id, REC->rip, \"\"\n";

static const char apic[] = "name: kvm_apic_accept_irq\nID: 95\n" COMMON
			   "\tfield:__u32 apicid;\toffset:8;\tsize:4;\tsigned:0;\n"
			   "\tfield:__u16 dm;\toffset:12;\tsize:2;\tsigned:0;\n"
			   "\tfield:__u16 tm;\toffset:14;\tsize:2;\tsigned:0;\n"
			   "\tfield:__u8 vec;\toffset:16;\tsize:1;\tsigned:0;\n"
			   "\tfield:bool coalesced;\toffset:17;\tsize:1;\tsigned:0;\n\n"
			   "print fmt: \"apicid %x vec %u\", REC->apicid, REC->vec\n";

static int read_fields(const char *text, struct compat_format_field *want, size_t n, char *err, size_t len)
{
	return compat_format_fields(write_format("format", text), want, n, err, len);
}

Test(compat, kvm_exit_fields_where_5_10_puts_them, .fini = cleanup)
{
	struct vcpustat_tp_fields f = {};
	struct compat_format_field want[] = {
		{ "exit_reason", &f.exit_reason, true },
		{ "isa", &f.exit_isa, true },
		{ "vcpu_id", &f.exit_vcpu_id, false },
		{ "guest_rip", &f.exit_guest_rip, false },
	};
	char err[256] = "";

	cr_assert_eq(read_fields(exit_510, want, 4, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.exit_reason.off, 8);
	cr_assert_eq(f.exit_reason.size, 4);
	cr_assert_eq(f.exit_isa.off, 24);
	cr_assert_eq(f.exit_isa.size, 4);
	cr_assert_eq(f.exit_vcpu_id.off, 56);
	cr_assert_eq(f.exit_guest_rip.off, 16);
	cr_assert_eq(f.exit_guest_rip.size, 8);
}

Test(compat, kvm_page_fault_moved_its_fields_in_6_x, .fini = cleanup)
{
	struct vcpustat_tp_fields a = {}, b = {};
	struct compat_format_field wa[] = { { "fault_address", &a.pf_address, true }, { "error_code", &a.pf_error_code } };
	struct compat_format_field wb[] = { { "fault_address", &b.pf_address, true }, { "error_code", &b.pf_error_code } };
	char err[256] = "";

	cr_assert_eq(read_fields(pf_510, wa, 2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(read_fields(pf_612, wb, 2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(a.pf_address.off, 8);
	cr_assert_eq(a.pf_error_code.off, 16);
	cr_assert_eq(a.pf_error_code.size, 4, "5.10's error_code is an unsigned int");
	cr_assert_eq(b.pf_address.off, 24);
	cr_assert_eq(b.pf_error_code.off, 32);
	cr_assert_eq(b.pf_error_code.size, 8, "6.x's is a u64");
}

Test(compat, a_field_of_one_byte_and_one_not_asked_for, .fini = cleanup)
{
	struct vcpustat_tp_fields f = {};
	struct compat_format_field want[] = { { "apicid", &f.apic_apicid, true }, { "vec", &f.apic_vec, true } };
	char err[256] = "";

	cr_assert_eq(read_fields(apic, want, 2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.apic_apicid.off, 8);
	cr_assert_eq(f.apic_vec.off, 16);
	cr_assert_eq(f.apic_vec.size, 1);
	cr_assert(want[0].found && want[1].found);
}

Test(compat, an_optional_field_absent_is_size_zero_a_required_one_is_an_error, .fini = cleanup)
{
	struct vcpustat_tp_fields f = {};
	struct compat_format_field opt[] = { { "vcpu_id", &f.entry_vcpu_id, false },
					     { "guest_rip", &f.exit_guest_rip, false } };
	struct compat_format_field req[] = { { "exit_reason", &f.exit_reason, true } };
	char err[256] = "";

	cr_assert_eq(read_fields(entry_612, opt, 2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(f.entry_vcpu_id.off, 8);
	cr_assert_eq(f.entry_vcpu_id.size, 4);
	cr_assert_not(opt[1].found);
	cr_assert_eq(f.exit_guest_rip.size, 0, "absent: size 0, the programs read nothing");
	cr_assert_eq(read_fields(entry_612, req, 1, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "has no field exit_reason"), "%s", err);
}

Test(compat, a_field_beyond_what_the_programs_read_is_refused_with_its_line, .fini = cleanup)
{
	struct vcpustat_tp_fields f = {};
	struct compat_format_field want[] = { { "exit_reason", &f.exit_reason, true } };
	char err[256] = "";
	const char *bad = "name: kvm_exit\n" COMMON "\tfield:char exit_reason[16];\toffset:8;\tsize:16;\tsigned:0;\n";
	const char *far = "name: kvm_exit\n" COMMON "\tfield:u32 exit_reason;\toffset:70000;\tsize:4;\tsigned:0;\n";

	cr_assert_eq(read_fields(bad, want, 1, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "format:8: field exit_reason at offset 8 of size 16"), "%s", err);
	cr_assert_eq(read_fields(far, want, 1, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "offset 70000"), "%s", err);
}

Test(compat, a_missing_format_file_names_itself, .fini = cleanup)
{
	struct vcpustat_tp_fields f = {};
	struct compat_format_field want[] = { { "exit_reason", &f.exit_reason, true } };
	char err[256] = "";

	cr_assert_eq(compat_format_fields("/nonexistent/kvm_exit/format", want, 1, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "/nonexistent/kvm_exit/format: No such file"), "%s", err);
}

/* This kernel's own formats, where it has KVM and tracefs: what the loader gives the programs. */
Test(compat, this_kernels_kvm_tracepoints_have_the_fields_the_programs_read)
{
	struct vcpustat_tp_fields f = {};
	char err[256] = "";

	SKIP_UNLESS(geteuid() != 0 ? "not root: tracefs may be neither mounted nor mountable" : NULL);
	compat_ensure_tracefs(NULL);
	SKIP_UNLESS(!compat_tracepoint_in_tracefs("kvm", "kvm_exit") ? "no kvm:kvm_exit here (no kvm module)" : NULL);
	cr_assert_eq(compat_tp_fields("kvm", "kvm_exit", &f, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(compat_tp_fields("kvm", "kvm_entry", &f, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(compat_tp_fields("kvm", "kvm_apic_accept_irq", &f, err, sizeof(err)), 0, "%s", err);
	cr_assert_geq(f.exit_reason.off, 8, "after the common fields");
	cr_assert_eq(f.exit_reason.size, 4);
	cr_assert_eq(f.exit_isa.size, 4);
	cr_assert_eq(f.entry_vcpu_id.size, 4, "kvm_entry has its vcpu_id");
	cr_assert_eq(f.apic_vec.size, 1);
}

Test(compat, probes_of_this_kernel_are_consistent)
{
	struct vcpustat_kernel k;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_eq(compat_probe(&k), 0);
	cr_assert(k.release[0], "uname -r");
	cr_assert(k.vmlinux_btf == (access("/sys/kernel/btf/vmlinux", R_OK) == 0));
	cr_assert(k.ringbuf, "every kernel the tests run on has BPF ring buffers (5.8)");
	/* marks mode's parts come together: pidfds of threads (6.9) come after task storage (5.11) */
	if (k.pidfd_thread)
		cr_assert(k.task_storage && k.task_from_pid && k.atomics, "a 6.9+ kernel has 5.11's, 5.12's and 6.2's");
	if (k.task_from_pid)
		cr_assert(k.atomics, "bpf_task_from_pid (6.2) implies BPF atomics (5.12)");
}
