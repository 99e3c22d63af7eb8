// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat import of host traces: every ftrace layout gives the same state
 * history for the same events; VM identity with and without the tgid
 * column; and what happens to bad input (file:line errors, --lenient
 * counts, out-of-order timestamps, empty and binary files).
 */
#include <criterion/criterion.h>
#include "helpers.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "import_helpers.h"

#include "host_scenario.h"

/* The layouts: the reference first. */
static const struct layout layouts[] = {
	{ .tgid = true, .irq = true, .decimals = 9 },
	{ .tgid = true, .irq = false, .decimals = 6 },
	{ .tgid = true, .irq = true, .decimals = 6, .old_kvm = true },
	{ .tgid = false, .irq = true, .decimals = 6 },
	{ .tgid = false, .irq = false, .decimals = 9, .old_kvm = true },
	{ .tgid = false, .irq = false, .decimals = 6, .plugin = true, .tracecmd = true },
};

static const char *import_layout(const struct tev *e, size_t n, const struct layout *l, struct imp_dump *d)
{
	static const struct import_vm_name with_tgid[] = { { VMA, "vmA" }, { VMB, "vmB" } };
	static const struct import_vm_name by_vcpu0[] = { { 1001, "vmA" }, { 2001, "vmB" } };
	struct import_opts o = { 0 };
	char *sht;

	o.host = imp_write_trace(e, n, l);
	/* without the tgid column, VMs are the runs of vCPU threads from each "CPU 0/KVM" (named by its tid) */
	o.names = l->tgid ? with_tgid : by_vcpu0;
	o.nnames = 2;
	sht = imp_run(&o, NULL);
	*d = imp_dump(sht, l->tgid ? NULL : "/pid");
	unlink(o.host);
	return sht;
}

/*
 * The reference's intervals that say the scenario was understood. The file
 * ends 1 ns after the trace's last event (150 us): it covers [0, 150001).
 */
static void assert_scenario(const struct imp_dump *d, bool svm)
{
	static const char *const vmx[] = {
		/* vmA vCPU 0: host (KVM_RUN) at 1 us, guest at 5, exit at 20 (MSR_WRITE, 2 us) ... */
		"/vms/vmA/vcpus/0/state 1000 5000 2",
		"/vms/vmA/vcpus/0/state 5000 20000 1",
		"/vms/vmA/vcpus/0/exit_reason 20000 22000 'MSR_WRITE'",
		"/vms/vmA/vcpus/0/state 51000 80000 3",	  /* preempted by the hog */
		"/host/cpus/0/current_tid 51000 80000 500", /* who ran meanwhile */
		"/vms/vmA/vcpus/1/state 31000 85000 5",	  /* idle after HLT, until woken */
		"/vms/vmA/vcpus/1/state 85000 90000 4",	  /* waiting for CPU 1 */
		"/vms/vmB/vcpus/0/state 125000 130000 6", /* blocked (D) */
		"/vms/vmB/vcpus/0/userspace_exit 61000 70000 'IO'",
		"/vms/vmB/vcpus/0/pcpu 95000 150001 0", /* migrated while waiting; to the file's end */
		"/vms/vmA/vcpus/0/sync 100000 102000 77",
		"/host/threads/500/state 49000 51000 'wait'",
		"/host/threads/500/name 49000 150001 'stress-ng'",
	};
	static const char *const svm_lines[] = {
		"/vms/vmA/vcpus/0/exit_reason 20000 22000 'msr'",
		"/vms/vmB/vcpus/0/exit_reason 120000 150001 'npf'", /* still open at the end */
	};

	for (size_t i = 0; i < (svm ? 2 : sizeof(vmx) / sizeof(vmx[0])); i++) {
		const char *want = svm ? svm_lines[i] : vmx[i];

		if (!imp_dump_has(d, want)) {
			for (size_t j = 0; j < d->n; j++)
				cr_log_info("%s", d->line[j]);
			cr_assert_fail("missing interval: %s", want);
		}
	}
}

Test(import, every_ftrace_layout_gives_the_same_intervals)
{
	static struct tev e[128];
	size_t n = scenario(e, false);
	struct imp_dump ref, ref_nopid, d;

	unlink(import_layout(e, n, &layouts[0], &ref));
	assert_scenario(&ref, false);
	unlink(import_layout(e, n, &layouts[0], &d));
	imp_assert_same(&ref, &d, "the same file twice");
	imp_dump_free(&d);
	/* the no-tgid layouts lack process ids: compare without the pid attributes */
	ref_nopid = ref;
	{
		struct imp_dump tmp = { 0 };

		for (size_t i = 0; i < ref.n; i++)
			if (!strstr(ref.line[i], "/pid ")) {
				tmp.line = realloc(tmp.line, (tmp.n + 1) * sizeof(*tmp.line));
				tmp.line[tmp.n++] = strdup(ref.line[i]);
			}
		ref_nopid = tmp;
	}
	for (size_t l = 1; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
		char what[64];

		snprintf(what, sizeof(what), "layout %zu", l);
		unlink(import_layout(e, n, &layouts[l], &d));
		imp_assert_same(layouts[l].tgid ? &ref : &ref_nopid, &d, what);
		imp_dump_free(&d);
	}
	imp_dump_free(&ref);
	imp_dump_free(&ref_nopid);
}

Test(import, svm_names_in_new_and_old_text_give_the_same_intervals)
{
	static struct tev e[128], old[128];
	size_t n = scenario(e, true);
	struct layout lo = { .tgid = true, .irq = true, .decimals = 6, .old_kvm = true };
	struct imp_dump ref, d;

	unlink(import_layout(e, n, &layouts[0], &ref));
	assert_scenario(&ref, true);
	/* old kernels printed SVM exits by their constant names: EXIT_IOIO, EXIT_NPF, ... */
	memcpy(old, e, n * sizeof(*e));
	for (size_t i = 0; i < n; i++) {
		static const char *const map[][2] = { { "msr", "EXIT_MSR" }, { "hlt", "EXIT_HLT" },
						      { "interrupt", "EXIT_INTR" }, { "io", "EXIT_IOIO" },
						      { "npf", "EXIT_NPF" } };

		for (size_t m = 0; old[i].reason && m < 5; m++)
			if (!strcmp(old[i].reason, map[m][0])) {
				old[i].reason = map[m][1];
				break;
			}
	}
	unlink(import_layout(old, n, &lo, &d));
	imp_assert_same(&ref, &d, "old SVM text");
	imp_dump_free(&d);
	imp_dump_free(&ref);
}

Test(import, vm_threads_given_on_the_command_line)
{
	static struct tev e[128];
	static const uint32_t a[] = { 1001, 1002 }, b[] = { 2001 };
	static const struct import_vm_threads vms[] = { { "vmA", a, 2 }, { "vmB", b, 1 } };
	struct layout l = { .decimals = 6 };
	struct import_opts o = { .vms = vms, .nvms = 2 };
	struct import_result res;
	struct imp_dump d;
	char *sht;

	o.host = imp_write_trace(e, scenario(e, false), &l);
	sht = imp_run(&o, &res);
	cr_assert_not(res.two_passes, "--vm: no need to group threads first");
	cr_assert_eq(res.vms, 2);
	cr_assert_eq(res.vcpus, 3);
	d = imp_dump(sht, NULL);
	assert_scenario(&d, false);
	cr_assert(imp_dump_has(&d, "/vms/vmA/pid 1000 150001 1001"), "a --vm VM's id is its first thread");
	imp_dump_free(&d);
	import_result_free(&res);
	unlink(sht);
	unlink(o.host);
}

Test(import, vcpu_threads_without_process_are_grouped_from_vcpu0)
{
	static struct tev e[128];
	struct layout l = { .decimals = 6 };
	struct import_opts o = { 0 };
	struct import_result res;
	struct imp_dump d;
	char *sht;

	o.host = imp_write_trace(e, scenario(e, false), &l);
	sht = imp_run(&o, &res);
	cr_assert(res.two_passes);
	cr_assert_eq(res.vms, 2);
	cr_assert_eq(res.orphan_vcpus, 0);
	d = imp_dump(sht, NULL);
	cr_assert(imp_dump_has(&d, "/vms/vm-tid1001/vcpus/1/state 31000 85000 5"), "CPU 1/KVM 1002 joins 1001's VM");
	cr_assert(imp_dump_has(&d, "/vms/vm-tid2001/vcpus/0/state 125000 130000 6"));
	imp_dump_free(&d);
	import_result_free(&res);
	unlink(sht);
	unlink(o.host);
}

/* ---- bad input ---- */

#define LINE_OK "       CPU 0/KVM-1001    (   1000) [000] d..2.   100.000001: kvm_entry: vcpu 0, rip 0x0\n"
#define LINE_OK2 "       CPU 0/KVM-1001    (   1000) [000] d..2.   100.000009: kvm_exit: vcpu 0 reason HLT rip 0x0\n"

static int import_text(const char *text, bool lenient, struct import_result *res, struct vcpustat_error *err)
{
	struct import_opts o = { .trace.lenient = lenient, .no_sync = true };
	char *sht = imp_tmp(".sht");
	int e;

	o.host = imp_write_text(text);
	o.out = sht;
	e = vcpustat_import(&o, res, err);
	unlink(o.host);
	unlink(sht);
	return e;
}

Test(import, malformed_line_is_an_error_naming_file_and_line)
{
	struct vcpustat_error err = { 0 };
	struct import_result res;
	int e;

	e = import_text("# tracer: nop\n" LINE_OK "  bash-12 [000] 100.000002: sched_switch: prev_comm=bash prev_pid=12\n"
		LINE_OK2, false, &res, &err);
	cr_assert_eq(e, -EINVAL);
	cr_assert(strstr(err.msg, ".txt:3: sched_switch: no prev_state="), "%s", err.msg);
	cr_assert(strstr(err.msg, "--lenient"), "%s", err.msg);
	import_result_free(&res);
}

Test(import, lenient_counts_malformed_lines_and_goes_on)
{
	struct vcpustat_error err = { 0 };
	struct import_result res;
	int e;

	e = import_text(LINE_OK "garbage\n\x01\x02\x03 more garbage\n  bash-12 [000] 100.000002: sched_switch: x\n"
			"  bash-12 [000] 100.000003: unknown_event: a=1\n" LINE_OK2 "  bash-12 [000] 100.00001",
			true, &res, &err);
	cr_assert_eq(e, 0, "%s", err.msg);
	cr_assert_eq(res.host.malformed, 4, "%llu", (unsigned long long)res.host.malformed);
	cr_assert_eq(res.host.events, 2);
	cr_assert_eq(res.host.skipped, 1);
	cr_assert_eq(res.host.nmessages, 4);
	cr_assert(strstr(res.host.messages[0], ".txt:2: not an ftrace event line"), "%s", res.host.messages[0]);
	cr_assert(strstr(res.host.messages[3], ".txt:7: ") && strstr(res.host.messages[3], "cut short"), "%s",
		  res.host.messages[3]);
	cr_assert_eq(res.vcpus, 1);
	import_result_free(&res);
}

Test(import, truncated_last_line_is_reported_as_such)
{
	struct vcpustat_error err = { 0 };
	struct import_result res;

	cr_assert_eq(import_text(LINE_OK "       CPU 0/KVM-1001    (   1000) [000] d..2.   100.0000", false, &res, &err),
		     -EINVAL);
	cr_assert(strstr(err.msg, ":2: ") && strstr(err.msg, "cut short"), "%s", err.msg);
	import_result_free(&res);
}

Test(import, out_of_order_timestamps_are_counted_and_clamped)
{
	struct vcpustat_error err = { 0 };
	struct import_result res;
	int e;

	/* the exit is reported 3 us before the entry it follows: the vCPU's clock never goes back */
	e = import_text(LINE_OK
			"       CPU 0/KVM-1001    (   1000) [000] d..2.   100.000005: kvm_exit: vcpu 0 reason HLT rip 0x0\n"
			"       CPU 0/KVM-1001    (   1000) [000] d..2.   100.000002: kvm_entry: vcpu 0, rip 0x0\n"
			"       CPU 0/KVM-1001    (   1000) [000] d..2.   100.000009: kvm_exit: vcpu 0 reason HLT rip 0x0\n",
			false, &res, &err);
	cr_assert_eq(e, 0, "%s", err.msg);
	cr_assert_eq(res.host.out_of_order, 1);
	cr_assert_eq(res.host.max_backstep_ns, 3000);
	cr_assert_eq(res.host.events, 4);
	import_result_free(&res);
}

Test(import, empty_file_and_headers_only)
{
	struct vcpustat_error err = { 0 };
	struct import_result res;

	cr_assert_eq(import_text("", false, &res, &err), -ENODATA);
	cr_assert(strstr(err.msg, "no event vcpustat uses"), "%s", err.msg);
	import_result_free(&res);
	cr_assert_eq(import_text("# tracer: nop\n#\n", false, &res, &err), -ENODATA);
	import_result_free(&res);
}

Test(import, binary_files_are_refused_with_a_reason)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *why;
	} cases[] = {
		{ "\027\010\104tracing6\0\0\0\0", 14, "trace.dat cut short in its header" }, /* read as one now */
		{ "\xc1\x1f\xfc\xc1\0\0\0\0", 8, "CTF stream" },
		{ "vcpuSHT\n\0\0\0\0", 12, "state history" },
		{ "\x7f" "ELF\x02\x01\x01\0\0\0\0\0", 12, "binary file" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vcpustat_error err = { 0 };
		struct import_opts o = { .no_sync = true };
		struct import_result res;
		char *path = imp_tmp(".bin");
		FILE *f = fopen(path, "w");

		fwrite(cases[i].bytes, 1, cases[i].len, f);
		fclose(f);
		o.host = path;
		o.out = imp_tmp(".sht");
		cr_assert_eq(vcpustat_import(&o, &res, &err), -EINVAL, "case %zu", i);
		cr_assert(strstr(err.msg, cases[i].why), "case %zu: %s", i, err.msg);
		cr_assert(strstr(err.msg, path), "case %zu: %s", i, err.msg);
		import_result_free(&res);
		unlink(path);
	}
}

Test(import, missing_file)
{
	struct vcpustat_error err = { 0 };
	struct import_opts o = { .host = "/nonexistent/trace.txt", .out = "/tmp/x.sht" };
	struct import_result res;

	cr_assert_eq(vcpustat_import(&o, &res, &err), -ENOENT);
	cr_assert(strstr(err.msg, "/nonexistent/trace.txt"), "%s", err.msg);
	import_result_free(&res);
}

/* ---- the command ---- */

Test(import, cli_reports_counts_and_errors)
{
	static struct tev e[128];
	struct layout l = { .tgid = true, .irq = true, .decimals = 6 };
	char *trace = imp_write_trace(e, scenario(e, false), &l), *sht = imp_tmp(".sht");
	char args[1024], out[8192];
	int rc;

	snprintf(args, sizeof(args), "import --host %s -o %s --vm-name 1000=vmA", trace, sht);
	rc = run_vcpustat(args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "42 lines, 34 events used, 2 skipped (events not used), 0 malformed"), "%s", out);
	cr_assert(strstr(out, "2 VMs, 3 vCPUs"), "%s", out);
	snprintf(args, sizeof(args), "report %s --vm vmA", sht);
	rc = run_vcpustat(args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "VM vmA (pid 1000)"), "%s", out);
	cr_assert(strstr(out, "stress-ng"), "the hog is named as the culprit: %s", out);
	snprintf(args, sizeof(args), "import --host %s -o %s --json", trace, sht);
	rc = run_vcpustat(args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "\"events\": 34"), "%s", out);
	/* errors */
	rc = run_vcpustat("import --host /nonexistent -o /tmp/x.sht", out, sizeof(out));
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "/nonexistent"), "%s", out);
	rc = run_vcpustat("import -o /tmp/x.sht", out, sizeof(out));
	cr_assert_eq(rc, 2, "%s", out);
	snprintf(args, sizeof(args), "import --host %s -o %s --guest nosuchvm=%s", trace, sht, trace);
	rc = run_vcpustat(args, out, sizeof(out));
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "--guest nosuchvm: no such VM") && strstr(out, "pid1000 (1000)"), "%s", out);
	unlink(trace);
	unlink(sht);
}

/* ---- parsing ahead in a second thread (large files) ---- */

/* The scenario again and again (shifted in time), over several parse-ahead chunks. */
static char *big_trace(size_t copies, const char *bad_line_at_half)
{
	static struct tev e[128];
	size_t n = scenario(e, false);
	struct layout l = { .tgid = true, .irq = true, .decimals = 9 };
	char *path = imp_tmp(".txt");
	FILE *f = fopen(path, "w");

	tev_header(f, &l);
	for (size_t c = 0; c < copies; c++) {
		if (c == copies / 2 && bad_line_at_half)
			fputs(bad_line_at_half, f);
		for (size_t i = 0; i < n; i++) {
			struct tev t = e[i];

			t.ts += c * 1000000ull;
			tev_write(f, &t, &l);
		}
	}
	fclose(f);
	return path;
}

static int import_mode(const char *host, int ahead, bool lenient, struct imp_dump *d, struct import_result *res,
		       struct vcpustat_error *err)
{
	struct import_opts o = { .host = host, .no_sync = true };
	char *sht = imp_tmp(".sht");
	int e;

	o.trace.parse_ahead = ahead;
	o.trace.lenient = lenient;
	o.out = sht;
	e = vcpustat_import(&o, res, err);
	if (!e && d)
		*d = imp_dump(sht, NULL);
	unlink(sht);
	return e;
}

Test(import, parse_ahead_gives_the_same_file_stats_and_errors)
{
	const char *bad = "  bash-12 [000] 100.000002: sched_switch: prev_comm=bash prev_pid=12\n";
	char *good = big_trace(900, NULL), *broken = big_trace(900, bad), where[64];
	struct vcpustat_error e1 = { 0 }, e2 = { 0 };
	struct import_result r1, r2;
	struct imp_dump d1, d2;

	cr_assert_eq(import_mode(good, -1, false, &d1, &r1, &e1), 0, "%s", e1.msg);
	cr_assert_eq(import_mode(good, 1, false, &d2, &r2, &e2), 0, "%s", e2.msg);
	cr_assert_gt(r1.host.events, 3 * 8192, "several chunks");
	imp_assert_same(&d1, &d2, "parse ahead");
	cr_assert_eq(memcmp(&r1.host, &r2.host, sizeof(r1.host)), 0, "same statistics");
	imp_dump_free(&d1);
	imp_dump_free(&d2);
	import_result_free(&r1);
	import_result_free(&r2);
	/* a malformed line in the middle: the same error, or the same counts with --lenient */
	cr_assert_eq(import_mode(broken, -1, false, NULL, &r1, &e1), -EINVAL);
	cr_assert_eq(import_mode(broken, 1, false, NULL, &r2, &e2), -EINVAL);
	cr_assert_str_eq(e1.msg, e2.msg);
	snprintf(where, sizeof(where), ":%d: sched_switch: no prev_state=", 6 + 450 * 36 + 1); /* header, 450 copies */
	cr_assert(strstr(e1.msg, where), "%s (%s)", e1.msg, where);
	cr_assert_eq(r1.host.lines, r2.host.lines);
	import_result_free(&r1);
	import_result_free(&r2);
	cr_assert_eq(import_mode(broken, -1, true, &d1, &r1, &e1), 0, "%s", e1.msg);
	cr_assert_eq(import_mode(broken, 1, true, &d2, &r2, &e2), 0, "%s", e2.msg);
	cr_assert_eq(r1.host.malformed, 1);
	cr_assert_eq(memcmp(&r1.host, &r2.host, sizeof(r1.host)), 0, "same statistics");
	imp_assert_same(&d1, &d2, "parse ahead, lenient");
	imp_dump_free(&d1);
	imp_dump_free(&d2);
	import_result_free(&r1);
	import_result_free(&r2);
	unlink(good);
	unlink(broken);
}

/* import's options into import_opts (import/report.c): values kept, bad ones named as typed. */
Test(import, options_into_import_opts)
{
	char *argv[] = { "import", "--vm", "web=10,11,12", NULL };
	char vm[] = "web=10,11,12", bad_vm[] = "db=7,x", guest[] = "web=g.txt", name[] = "42=db";
	struct vcpustat_error err = { 0 };
	struct import_args ia;
	char path[4096];
	FILE *f;

	import_args_init(&ia, 3, argv);
	cr_assert_str_eq(ia.o.command, "vcpustat import --vm web=10,11,12");
	cr_assert_eq(import_args_vm(&ia, vm, &err), 0, "%s", err.msg);
	cr_assert_eq(ia.o.nvms, 1);
	cr_assert_str_eq(ia.o.vms[0].name, "web");
	cr_assert_eq(ia.o.vms[0].ntids, 3);
	cr_assert_eq(ia.o.vms[0].tids[2], 12);
	cr_assert_eq(import_args_vm(&ia, bad_vm, &err), -EINVAL);
	cr_assert_str_eq(err.msg, "--vm db=...: 'x' is not a thread id");
	cr_assert_eq(import_args_guest(&ia, guest, &err), 0, "%s", err.msg);
	cr_assert_str_eq(ia.o.guests[0].vm, "web");
	cr_assert_str_eq(ia.o.guests[0].path, "g.txt");
	cr_assert_eq(import_args_vm_name(&ia, name, &err), 0, "%s", err.msg);
	cr_assert_eq(ia.o.names[0].pid, 42);
	cr_assert_eq(import_args_isa(&ia, "svm", &err), 0);
	cr_assert_eq(ia.o.trace.isa, KVM_ISA_SVM);
	cr_assert_eq(import_args_isa(&ia, "arm", &err), -EINVAL);
	cr_assert_str_eq(err.msg, "--isa arm: vmx or svm");
	cr_assert_eq(import_args_cpus(&ia, "65537", &err), -EINVAL);
	cr_assert_str_eq(err.msg, "--cpus 65537: a number of CPUs (1..65536)");
	cr_assert_eq(import_args_cpus(&ia, "8", &err), 0);
	cr_assert_eq(ia.o.nr_cpus, 8);
	import_args_free(&ia);
	snprintf(path, sizeof(path), "%s/g.txt", scratch_dir("import-args"));
	f = fopen(path, "w");
	cr_assert(f);
	fclose(f);
	ia.o.host = "no-such-host-trace";
	ia.guests[0].path = path;
	ia.o.out = path;
	cr_assert_neq(import_args_refuse_input(&ia, &err), 0, "the output is the guest trace");
}
