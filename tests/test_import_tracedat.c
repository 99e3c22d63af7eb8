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

/* A copy of the first n bytes of a data file, with bytes [at, at + len) set to c. */
static char *damaged_copy(const char *name, size_t n, size_t at, size_t len, int c)
{
	char *path = imp_tmp(".dat"), *buf = malloc(n);
	FILE *in = fopen(data_path(name), "rb"), *out = fopen(path, "wb");

	cr_assert(in && out && buf);
	cr_assert_eq(fread(buf, 1, n, in), n);
	if (len)
		memset(buf + at, c, len);
	cr_assert_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
	free(buf);
	return path;
}

/* `vcpustat import OPTS --host dat -o X.sht` fails with exit 1, names dat (and says why), writes nothing. */
static void import_fails_with(const char *opts, const char *dat, const char *why)
{
	char *sht = imp_tmp(".sht"), args[1200], out[8192];
	struct stat st;
	int rc;

	snprintf(args, sizeof(args), "import %s --host %s -o %s", opts, dat, sht);
	rc = run_vcpustat(args, out, sizeof(out));
	cr_assert_eq(rc, 1, "%s: %s", args, out);
	cr_assert(strstr(out, dat) && strstr(out, why), "%s: %s", args, out);
	cr_assert_not(strstr(out, "Sanitizer"), "%s", out);
	cr_assert_not(strstr(out, "File possibly truncated"), "libtracecmd's printf stays out of our output: %s", out);
	cr_assert_neq(stat(sht, &st), 0, "no output file");
	unlink(dat);
}

static void import_fails(const char *dat, const char *why)
{
	import_fails_with("", dat, why);
}

Test(import_tracedat, truncated_file_is_an_error)
{
	/* v6: libtracecmd 3.1.6 itself crashes on it (tracedat.c reads it only in a child) */
	import_fails(damaged_copy(dat_files[0], 150000, 0, 0, 0), "cut short (was the file truncated?)");
	/* v7 (sections, zstd), cut in its data */
	import_fails(damaged_copy(dat_files[1], 60000, 0, 0, 0), "cut short (was the file truncated?)");
	/* cut inside the header we check before libtracecmd */
	import_fails(damaged_copy(dat_files[0], 14, 0, 0, 0), "cut short in its header");
}

Test(import_tracedat, corrupted_file_is_an_error)
{
	/* the file version */
	import_fails(damaged_copy(dat_files[0], 253952, 10, 1, '9'), "file version '9'");
	/* the page size */
	import_fails(damaged_copy(dat_files[0], 253952, 14, 4, 0x7f), "page size");
	/* the event formats: garbage over the header page's format text (v6: right after the 18-byte header) */
	import_fails(damaged_copy(dat_files[0], 253952, 18, 400, 0xff), "cannot read this trace.dat");
	/*
	 * garbage over CPU 0's buffer pages from offset 86808 (fuzz-tracedat's find):
	 * libtraceevent's kbuffer_load_subbuffer() reads out of bounds on them, so the
	 * import reads the records in a child (tracedat.c)
	 */
	import_fails(damaged_copy(dat_files[0], 253952, 86808, 13086, 0xff), "damaged");
	/* --lenient skips malformed records, but the records past a crash are out of reach */
	import_fails_with("--lenient", damaged_copy(dat_files[0], 253952, 86808, 13086, 0xff), "its reader");
	/*
	 * fuzz-tracedat's find of 2026-11-28 (a mutated microvm-v6.dat): in the
	 * fuzzer's process libtraceevent read out of bounds on it (SEGV in
	 * kbuffer_load_subbuffer) after the child's check of that time had
	 * passed: that read depends on the heap's layout. Now the child that
	 * reads the pages dies, after the records it could send.
	 */
	import_fails(damaged_copy("fuzz-crash-2026-11-28.dat", 253952, 0, 0, 0), "cannot read this trace.dat");
	import_fails(damaged_copy("fuzz-crash-2026-11-28.dat", 253952, 0, 0, 0), "its reader");
}

/*
 * A record's CPU beyond --cpus is malformed, never another CPU (issue 40
 * item 4): the trace was taken on 2 CPUs, and with --cpus 1 its first
 * record that names CPU 1 (its own CPU, or a migration's orig_cpu) is
 * refused, naming the file, the record and its offset, and saying which
 * option takes it; both fixtures (v6, and v7's sections and zstd).
 */
Test(import_tracedat, a_cpu_beyond_cpus_is_refused_naming_the_record)
{
	import_fails_with("--cpus 1", damaged_copy(dat_files[0], 253952, 0, 0, 0), "1 is beyond --cpus 1 (CPUs 0 to 0");
	import_fails_with("--cpus 1", damaged_copy(dat_files[1], 99418, 0, 0, 0), "1 is beyond --cpus 1 (CPUs 0 to 0");
	import_fails_with("--cpus 1", damaged_copy(dat_files[0], 253952, 0, 0, 0), "--cpus 2 or more takes it");
	import_fails_with("--cpus 1", damaged_copy(dat_files[0], 253952, 0, 0, 0), ", file offset ");
}

Test(import_tracedat, on_a_pipe_it_is_refused_saying_so)
{
	char args[1200], out[4096];
	int rc;

	snprintf(args, sizeof(args), "import --host - -o /tmp/vcpustat-tracedat-pipe.sht < %s", data_path(dat_files[1]));
	rc = run_vcpustat(args, out, sizeof(out));
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "trace.dat") && strstr(out, "give it as a file"), "%s", out);
}

Test(import_tracedat, metadata_says_trace_dat)
{
	struct import_opts o = { .host = data_path(dat_files[1]) };
	struct vcpustat_error err = { 0 };
	struct import_result res;
	struct sht_reader *r;
	const char *v;
	char *sht = imp_run(&o, &res);

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	v = sht_meta_get(r, "host_format");
	cr_assert(v && !strcmp(v, "trace.dat"), "%s", v ? v : "(none)");
	sht_close(r);
	/* the VMs' end is in this file: their sched_process_exit events */
	cr_assert_eq(res.host.malformed, 0);
	cr_assert_gt(res.host.events, 10000);
	import_result_free(&res);
	unlink(sht);
}
