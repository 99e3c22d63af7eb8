// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trace-cmd's binary trace.dat through libtracecmd: real files recorded in the
 * KVM lab (tests/data/tracedat/README.md) give the same state history, every
 * interval of every attribute, as the text `trace-cmd report` prints of them
 * (run here at test time); a truncated or damaged file is an error that
 * names it, and leaves no output.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "helpers.h"
#include "import_helpers.h"

static const char *const dat_files[] = { "microvm-v6.dat", "microvm-v7.dat" };

static const char *data_path(const char *name)
{
	static char paths[8][512];
	static int n;
	char *p = paths[n++ % 8];

	snprintf(p, 512, "%s/tests/data/tracedat/%s", VCPUSTAT_SOURCE_DIR, name);
	return p;
}

static bool have_trace_cmd(void)
{
	char out[256];

	return run_shell("trace-cmd --version", out, sizeof(out)) >= 0 && strstr(out, "trace-cmd version");
}

/* `trace-cmd report ARGS -i dat` into a new text file. */
static char *report(const char *dat, const char *args)
{
	char *txt = imp_tmp(".txt"), cmd[1200], out[4096];
	int rc;

	snprintf(cmd, sizeof(cmd), "trace-cmd report %s -i '%s' > '%s' 2>/dev/null", args, dat, txt);
	rc = run_shell(cmd, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s: %s", cmd, out);
	return txt;
}

static struct imp_dump import_dump(const char *host, struct import_result *res)
{
	struct import_opts o = { .host = host };
	struct imp_dump d;
	char *sht = imp_run(&o, res);

	cr_assert_eq(res->host.malformed, 0);
	d = imp_dump(sht, NULL);
	unlink(sht);
	return d;
}

static void same_as_report(const char *name, const char *args)
{
	const char *dat = data_path(name);
	struct import_result rd, rt;
	struct imp_dump a, b;
	char *txt, what[256];

	if (!have_trace_cmd())
		cr_skip_test("trace-cmd is not installed (Debian package trace-cmd): no text to compare with");
	txt = report(dat, args);
	a = import_dump(txt, &rt);
	b = import_dump(dat, &rd);
	cr_assert_gt(a.n, 1000, "%s: %zu intervals", name, a.n);
	snprintf(what, sizeof(what), "%s vs `trace-cmd report %s`", name, args);
	imp_assert_same(&a, &b, what);
	/* the same events, and the same two VMs of two vCPUs (microvm --vms 2 --vcpus 2) */
	cr_assert_eq(rd.host.events, rt.host.events);
	cr_assert_eq(rd.host.skipped, rt.host.skipped);
	cr_assert_eq(rd.host.lost, rt.host.lost);
	cr_assert_eq(rd.records, rt.records);
	cr_assert_eq(rd.start_ns, rt.start_ns);
	cr_assert_eq(rd.end_ns, rt.end_ns);
	cr_assert_eq(rd.vms, 2);
	cr_assert_eq(rd.vcpus, 4);
	cr_assert_eq(rd.host.out_of_order, 0, "libtracecmd merges the CPUs in time order");
	cr_assert_eq(rd.host.lines, rd.host.events + rd.host.skipped, "one 'line' per record");
	import_result_free(&rd);
	import_result_free(&rt);
	imp_dump_free(&a);
	imp_dump_free(&b);
	unlink(txt);
}

/* -N: no plugins, the kernel's own print formats (kvm_exit: "vcpu 1 reason npf ..."); -t: ns */
Test(import_tracedat, v6_same_intervals_as_trace_cmd_report)
{
	same_as_report(dat_files[0], "-N -t");
}

Test(import_tracedat, v7_zstd_same_intervals_as_trace_cmd_report)
{
	same_as_report(dat_files[1], "-N -t");
}
