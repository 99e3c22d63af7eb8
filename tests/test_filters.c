// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The filters of the offline commands (--vcpu, --tid, --pcpu; with --vm),
 * exact on a recording written here: two VMs of two vCPUs each, moving
 * between CPUs. The expected values are worked out by hand below, from the
 * timeline, not by the code under test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_run.h"
#include "export/export.h"
#include "model/health.h"
#include "model/filter.h"
#include "model/report.h"
#include "model/placement.h"
#include "model/query_view.h"
#include "model/flow.h"

#define S 1000000000ull
#define MS 1000000ull

struct set {
	uint64_t t;
	const char *path;
	int64_t i;
	const char *s; /* a string value; "" ends it (null) */
};

/*
 * [0, 10 s), states 1 guest, 2 host, 3 preempted, 4 wait, 5 idle, 6 blocked:
 *
 * a (pid 100) vCPU 0, tid 101, pcpu 0 throughout:
 *   guest [0, 4), host [4, 4.5) (exit hlt), idle [4.5, 10)
 * a vCPU 1, tid 102, pcpu 1 [0, 5), pcpu 2 [5, 10):
 *   guest [0, 1), host [1, 1.5) (exit npf), guest [1.5, 2), preempted [2, 3),
 *   guest [3, 5.5), host [5.5, 6) (exit hlt), idle [6, 8), wait [8, 9), guest [9, 10)
 * b (pid 200) vCPU 0, tid 201, pcpu 2 [0, 5), pcpu 0 [5, 10):
 *   guest [0, 3), blocked [3, 6), guest [6, 10)
 * b vCPU 1, tid 202, pcpu 3 throughout: guest [0, 10)
 */
static const struct set rec[] = {
	{ 0, "/vms/a/pid", 100 },
	{ 0, "/vms/a/vcpus/0/tid", 101 },
	{ 0, "/vms/a/vcpus/0/pcpu", 0 },
	{ 0, "/vms/a/vcpus/0/state", 1 },
	{ 0, "/vms/a/vcpus/1/tid", 102 },
	{ 0, "/vms/a/vcpus/1/pcpu", 1 },
	{ 0, "/vms/a/vcpus/1/state", 1 },
	{ 0, "/vms/b/pid", 200 },
	{ 0, "/vms/b/vcpus/0/tid", 201 },
	{ 0, "/vms/b/vcpus/0/pcpu", 2 },
	{ 0, "/vms/b/vcpus/0/state", 1 },
	{ 0, "/vms/b/vcpus/1/tid", 202 },
	{ 0, "/vms/b/vcpus/1/pcpu", 3 },
	{ 0, "/vms/b/vcpus/1/state", 1 },
	{ 1 * S, "/vms/a/vcpus/1/state", 2 },
	{ 1 * S, "/vms/a/vcpus/1/exit_reason", 0, "npf" },
	{ 1500 * MS, "/vms/a/vcpus/1/state", 1 },
	{ 1500 * MS, "/vms/a/vcpus/1/exit_reason", 0, "" },
	{ 2 * S, "/vms/a/vcpus/1/state", 3 },
	{ 3 * S, "/vms/a/vcpus/1/state", 1 },
	{ 3 * S, "/vms/b/vcpus/0/state", 6 },
	{ 4 * S, "/vms/a/vcpus/0/state", 2 },
	{ 4 * S, "/vms/a/vcpus/0/exit_reason", 0, "hlt" },
	{ 4500 * MS, "/vms/a/vcpus/0/state", 5 },
	{ 4500 * MS, "/vms/a/vcpus/0/exit_reason", 0, "" },
	{ 5 * S, "/vms/a/vcpus/1/pcpu", 2 },
	{ 5 * S, "/vms/b/vcpus/0/pcpu", 0 },
	{ 5500 * MS, "/vms/a/vcpus/1/state", 2 },
	{ 5500 * MS, "/vms/a/vcpus/1/exit_reason", 0, "hlt" },
	{ 6 * S, "/vms/a/vcpus/1/state", 5 },
	{ 6 * S, "/vms/a/vcpus/1/exit_reason", 0, "" },
	{ 6 * S, "/vms/b/vcpus/0/state", 1 },
	{ 8 * S, "/vms/a/vcpus/1/state", 4 },
	{ 9 * S, "/vms/a/vcpus/1/state", 1 },
};

/* The values of set[0..n) into a new file at path (a mkstemp template), ending at 10 s. */
static void write_set(char *path, const struct set *set, size_t n)
{
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		uint32_t a;

		cr_assert_eq(sht_writer_attr(w, set[i].path, &a), 0);
		if (set[i].s && !set[i].s[0])
			cr_assert_eq(sht_writer_set_null(w, a, set[i].t), 0);
		else if (set[i].s)
			cr_assert_eq(sht_writer_set_str(w, a, set[i].t, set[i].s), 0);
		else
			cr_assert_eq(sht_writer_set_int(w, a, set[i].t, set[i].i), 0);
	}
	cr_assert_eq(sht_writer_close(w, 10 * S, &err), 0, "%s", err.msg);
}

static void write_rec(char *path)
{
	write_set(path, rec, sizeof(rec) / sizeof(rec[0]));
}

/* `report FILE -j ARGS...`: the document. */
static json_t *report_json(const char *path, const char *a1, const char *a2, const char *a3, const char *a4)
{
	json_error_t je;
	struct run r;
	json_t *doc;

	if (a4)
		RUN(&r, "report", path, "-j", a1, a2, a3, a4);
	else if (a3)
		RUN(&r, "report", path, "-j", a1, a2, a3);
	else
		RUN(&r, "report", path, "-j", a1, a2);
	cr_assert_eq(r.status, 0, "report %s %s: %s", a1, a2, r.err);
	doc = json_loads(r.out, 0, &je);
	cr_assert_not_null(doc, "%s: %s", je.text, r.out);
	return doc;
}

static json_t *vm_of(json_t *doc, const char *name)
{
	json_t *vms = json_object_get(doc, "vms"), *vm;
	size_t i;

	json_array_foreach(vms, i, vm)
		if (!strcmp(json_string_value(json_object_get(vm, "vm")), name))
			return vm;
	return NULL;
}

static long long ns_of(json_t *o, const char *state)
{
	return json_integer_value(json_object_get(json_object_get(o, "ns"), state));
}

static long long exits_of(json_t *vm, const char *reason)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(vm, "exits"), i, e)
		if (!strcmp(json_string_value(json_object_get(e, "reason")), reason))
			return json_integer_value(json_object_get(e, "count"));
	return 0;
}

static long long int_of(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

Test(filters, report_vcpu_keeps_those_vcpus_and_the_vm_totals_are_theirs)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	json_t *doc, *a, *b, *v;
	struct run r;

	write_rec(path);
	doc = report_json(path, "--vcpu", "1", NULL, NULL);
	a = vm_of(doc, "a");
	b = vm_of(doc, "b");
	cr_assert(a && b);
	cr_assert_eq(json_array_size(json_object_get(a, "vcpus")), 1);
	v = json_array_get(json_object_get(a, "vcpus"), 0);
	cr_assert_eq(int_of(v, "vcpu"), 1);
	/* a vCPU 1: guest 1 + 0.5 + 2.5 + 1, host 0.5 + 0.5, preempted 1, idle 2, wait 1 */
	cr_assert_eq(ns_of(a, "guest"), 5 * S);
	cr_assert_eq(ns_of(a, "host"), 1 * S);
	cr_assert_eq(ns_of(a, "preempted"), 1 * S);
	cr_assert_eq(ns_of(a, "idle"), 2 * S);
	cr_assert_eq(ns_of(a, "wait"), 1 * S);
	cr_assert_eq(ns_of(a, "blocked"), 0);
	cr_assert_float_eq(json_real_value(json_object_get(json_object_get(a, "share"), "guest")), 0.5, 1e-9);
	cr_assert_eq(exits_of(a, "npf"), 1);
	cr_assert_eq(exits_of(a, "hlt"), 1, "vCPU 0's hlt is not counted");
	cr_assert_eq(int_of(v, "preemptions"), 1);
	cr_assert_eq(int_of(v, "wakeups"), 1);
	cr_assert_eq(int_of(v, "migrations"), 1);
	cr_assert_eq(int_of(a, "vcpus_of"), 2);
	cr_assert_eq(ns_of(b, "guest"), 10 * S, "b vCPU 1 only");
	cr_assert_eq(json_array_size(json_object_get(b, "exits")), 0);
	json_decref(doc);

	/* lists and repetition: --vcpu 0,1 and --vcpu 0 --vcpu 1 keep all */
	doc = report_json(path, "--vcpu", "0", "--vcpu", "1");
	cr_assert_eq(ns_of(vm_of(doc, "a"), "guest"), 9 * S);
	json_decref(doc);
	doc = report_json(path, "--vcpu", "0-1", NULL, NULL);
	cr_assert_eq(ns_of(vm_of(doc, "a"), "guest"), 9 * S);
	json_decref(doc);

	/* the text says which vCPUs the totals are over */
	RUN(&r, "report", path, "--vcpu", "1", "--vm", "a");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "filtered: totals over vCPU 1 of 2"), "%s", r.out);
	cr_assert_null(strstr(r.out, "VM b"), "--vm a: %s", r.out);
	unlink(path);
}

Test(filters, report_tid_keeps_the_vcpu_of_that_thread)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	json_t *doc, *a;

	write_rec(path);
	doc = report_json(path, "--tid", "102", NULL, NULL);
	cr_assert_eq(json_array_size(json_object_get(doc, "vms")), 1, "b has no vCPU of thread 102");
	a = vm_of(doc, "a");
	cr_assert_not_null(a);
	cr_assert_eq(int_of(json_array_get(json_object_get(a, "vcpus"), 0), "tid"), 102);
	cr_assert_eq(ns_of(a, "guest"), 5 * S);
	cr_assert_eq(exits_of(a, "npf") + exits_of(a, "hlt"), 2);
	json_decref(doc);

	/* --tid and --vcpu together: AND */
	doc = report_json(path, "--tid", "201", "--vcpu", "0");
	cr_assert_eq(json_array_size(json_object_get(doc, "vms")), 1);
	cr_assert_eq(ns_of(vm_of(doc, "b"), "guest"), 7 * S);
	cr_assert_eq(ns_of(vm_of(doc, "b"), "blocked"), 3 * S);
	json_decref(doc);
	unlink(path);
}

Test(filters, report_pcpu_counts_only_the_time_on_those_cpus)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	json_t *doc, *a, *b, *v;

	write_rec(path);
	doc = report_json(path, "--pcpu", "2", NULL, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "pcpus")), "2");
	/* a vCPU 1 on CPU 2 over [5, 10): guest [5, 5.5) and [9, 10), host [5.5, 6) (its hlt),
	 * idle [6, 8), wait [8, 9) (its wakeup); its migration at 5 s is into CPU 2 */
	a = vm_of(doc, "a");
	cr_assert_not_null(a);
	cr_assert_eq(json_array_size(json_object_get(a, "vcpus")), 1, "a vCPU 0 never was on CPU 2");
	v = json_array_get(json_object_get(a, "vcpus"), 0);
	cr_assert_eq(int_of(v, "vcpu"), 1);
	cr_assert_eq(ns_of(a, "guest"), 1500 * MS);
	cr_assert_eq(ns_of(a, "host"), 500 * MS);
	cr_assert_eq(ns_of(a, "idle"), 2 * S);
	cr_assert_eq(ns_of(a, "wait"), 1 * S);
	cr_assert_eq(ns_of(a, "preempted"), 0, "preempted on CPU 1");
	cr_assert_float_eq(json_real_value(json_object_get(json_object_get(a, "share"), "guest")), 0.3, 1e-9);
	cr_assert_eq(exits_of(a, "hlt"), 1);
	cr_assert_eq(exits_of(a, "npf"), 0, "on CPU 1");
	cr_assert_eq(int_of(v, "preemptions"), 0);
	cr_assert_eq(int_of(v, "wakeups"), 1);
	cr_assert_eq(int_of(v, "migrations"), 1);
	/* b vCPU 0 on CPU 2 over [0, 5): guest [0, 3), blocked [3, 5); it left for CPU 0 */
	b = vm_of(doc, "b");
	cr_assert_not_null(b);
	cr_assert_eq(json_array_size(json_object_get(b, "vcpus")), 1);
	v = json_array_get(json_object_get(b, "vcpus"), 0);
	cr_assert_eq(int_of(v, "vcpu"), 0);
	cr_assert_eq(ns_of(b, "guest"), 3 * S);
	cr_assert_eq(ns_of(b, "blocked"), 2 * S);
	cr_assert_eq(int_of(v, "migrations"), 0);
	json_decref(doc);

	/* a window and a list: [4 s, 7 s) on CPUs 0 and 3 */
	{
		struct run r;
		json_error_t je;

		RUN(&r, "report", path, "-j", "--pcpu", "0,3", "--from", "4s", "--to", "7s");
		cr_assert_eq(r.status, 0, "%s", r.err);
		doc = json_loads(r.out, 0, &je);
		cr_assert_not_null(doc);
		/* a vCPU 0: host [4, 4.5), idle [4.5, 7); b vCPU 0 (CPU 0 from 5): blocked [5, 6), guest [6, 7) */
		cr_assert_eq(ns_of(vm_of(doc, "a"), "host"), 500 * MS);
		cr_assert_eq(ns_of(vm_of(doc, "a"), "idle"), 2500 * MS);
		cr_assert_eq(exits_of(vm_of(doc, "a"), "hlt"), 1);
		/* b: vCPU 1 guest [4, 7) on CPU 3, vCPU 0 guest [6, 7) */
		cr_assert_eq(ns_of(vm_of(doc, "b"), "guest"), 4 * S);
		cr_assert_eq(ns_of(vm_of(doc, "b"), "blocked"), 1 * S);
		json_decref(doc);
	}
	unlink(path);
}

Test(filters, export_csv_has_only_the_rows_of_the_vcpu_kept)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	struct run r;
	int vcpu_rows = 0;

	write_rec(path);
	RUN(&r, "export", path, "-f", "csv", "--vcpu", "1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL, *c3 = c2 ? strchr(c2 + 1, ',') : NULL;

		cr_assert(c3, "%s", line);
		if (c3 == c2 + 1 || !strncmp(line, "metric,", 7))
			continue;
		cr_assert(c3 == c2 + 2 && c2[1] == '1', "a row of another vCPU: %s", line);
		vcpu_rows++;
		if (!strncmp(line, "vcpustat_vcpu_seconds_total,a,1,guest,", 38))
			cr_assert_float_eq(strtod(strrchr(line, ',') + 1, NULL), 5.0, 1e-9, "%s", line);
	}
	cr_assert_gt(vcpu_rows, 0);
	unlink(path);
}

Test(filters, plot_timeline_pcpu_draws_only_those_cpus)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX", svg_path[64], *svg = malloc(1 << 20);
	struct run r;

	write_rec(path);
	snprintf(svg_path, sizeof(svg_path), "%s.svg", path);
	RUN(&r, "plot", path, "--timeline", "--pcpu", "0", "-o", svg_path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(svg_path, svg, 1 << 20);
	/* CPU 0: a's guest code [0, 4), its hypervisor [4, 4.5), b's guest code [6, 10) */
	cr_assert(strstr(svg, "<title>CPU 0: a: guest code, 0.000000 .. 4.000000 s</title>"), "no CPU 0 row");
	cr_assert(strstr(svg, "<title>CPU 0: b: guest code, 6.000000 .. 10.000000 s</title>"));
	for (int c = 1; c <= 3; c++) {
		char t[32];

		snprintf(t, sizeof(t), "<title>CPU %d:", c);
		cr_assert_null(strstr(svg, t), "CPU %d is drawn", c);
		snprintf(t, sizeof(t), ">CPU %d<", c);
		cr_assert_null(strstr(svg, t), "CPU %d has a row", c);
	}
	/* the vCPUs that were on CPU 0, while they were there: b vCPU 0 from 5 s */
	cr_assert(strstr(svg, "<title>a vCPU 0: guest, 0.000000 .. 4.000000 s</title>"));
	cr_assert(strstr(svg, "<title>b vCPU 0: blocked, 5.000000 .. 6.000000 s</title>"), "%s", svg);
	cr_assert_null(strstr(svg, "<title>b vCPU 0: guest, 0.000000"), "b vCPU 0 was on CPU 2 then");
	cr_assert_null(strstr(svg, "<title>a vCPU 1:"));
	cr_assert_null(strstr(svg, "<title>b vCPU 1:"));
	unlink(svg_path);
	unlink(path);
	free(svg);
}

Test(filters, query_vcpu_prints_only_that_vcpus_paths)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	json_error_t je;
	json_t *doc, *at;
	struct run r;
	size_t i, n = 0;

	write_rec(path);
	RUN(&r, "query", path, "--json", "--vcpu", "1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_loads(r.out, 0, &je);
	cr_assert_not_null(doc, "%s", r.out);
	json_array_foreach(json_object_get(doc, "attributes"), i, at) {
		const char *p = json_string_value(json_object_get(at, "path"));

		cr_assert(!strncmp(p, "/vms/a/vcpus/1", 14) || !strncmp(p, "/vms/b/vcpus/1", 14), "%s", p);
		n++;
	}
	cr_assert_geq(n, 6, "both VMs' vCPU 1 with tid, pcpu, state");
	json_decref(doc);

	/* --pcpu at a time: the vCPUs on CPU 2 at 6 s (a vCPU 1; b vCPU 0 left at 5 s) */
	RUN(&r, "query", path, "--at", "6s", "--pcpu", "2");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "/vms/a/vcpus/1/state"), "%s", r.out);
	cr_assert_null(strstr(r.out, "/vms/b/"), "%s", r.out);
	cr_assert_null(strstr(r.out, "/vms/a/vcpus/0"), "%s", r.out);

	/* --tid and --vm */
	RUN(&r, "query", path, "--path", "/**", "--tid", "202", "--vm", "b");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "/vms/b/vcpus/1/tid"), "%s", r.out);
	cr_assert_null(strstr(r.out, "/vms/b/vcpus/0/"), "%s", r.out);
	cr_assert_null(strstr(r.out, "/vms/a/"), "%s", r.out);
	unlink(path);
}

/* What a filter that selects nothing, or a malformed value, says: the command, the option, the value; exit 2. */
Test(filters, errors_name_the_filter_and_are_usage_errors)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX", want[256];
	struct run r;

	write_rec(path);
	RUN(&r, "report", path, "--vcpu", "7");
	cr_assert_eq(r.status, 2, "%s", r.err);
	snprintf(want, sizeof(want), "report: --vcpu 7: no such vCPU in %s", path);
	cr_assert(strstr(r.err, want), "%s", r.err);

	RUN(&r, "report", path, "--vcpu", "x");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "report: --vcpu x: not a list of numbers"), "%s", r.err);

	RUN(&r, "report", path, "--pcpu", "3-1");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "report: --pcpu 3-1: the range 3-1 goes down"), "%s", r.err);

	/* a number too large is out of range, not "not a list of numbers" (issue 40) */
	RUN(&r, "report", path, "--pcpu", "0-4294967295");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "report: --pcpu 0-4294967295: 4294967295 is out of range (at most 4294967294)"), "%s",
		  r.err);
	RUN(&r, "report", path, "--tid", "123456789012345678901234567890");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, ": 1234567890123456... is out of range"), "%s", r.err);
	{ /* a long list is not echoed whole */
		static char many[20000];

		for (size_t i = 0; i + 2 < sizeof(many); i += 2)
			memcpy(many + i, "1,", 2);
		many[sizeof(many) - 2] = 'x';
		RUN(&r, "report", path, "--vcpu", many);
		cr_assert_eq(r.status, 2);
		cr_assert(strstr(r.err, "1,1,... (19999 bytes): at most"), "%s", r.err);
		cr_assert_lt(strlen(r.err), 300, "%zu bytes of error", strlen(r.err));
	}

	RUN(&r, "report", path, "--tid", "999");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--tid 999: no vCPU, VMM or host thread of"), "%s", r.err);

	RUN(&r, "report", path, "--pcpu", "9");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--pcpu 9: no such CPU in"), "%s", r.err);
	cr_assert(strstr(r.err, "its CPUs: 0-3"), "%s", r.err);

	RUN(&r, "report", path, "--vcpu", "1", "--vm", "b", "--pcpu", "0");
	cr_assert_eq(r.status, 2, "b vCPU 1 never ran on CPU 0: %s", r.err);
	cr_assert(strstr(r.err, "--vcpu 1 --pcpu 0: nothing of"), "%s", r.err);

	RUN(&r, "report", path, "--vcpu", "0", "--flow", "101");
	cr_assert_eq(r.status, 2);

	RUN(&r, "query", path, "--vcpu", "7");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "query: --vcpu 7: no such vCPU"), "%s", r.err);
	RUN(&r, "query", path, "--pcpu", "1-");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "query: --pcpu 1-:"), "%s", r.err);

	RUN(&r, "export", path, "-f", "csv", "--tid", "abc");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "export: --tid abc"), "%s", r.err);
	RUN(&r, "export", "-f", "csv", "--vcpu", "1");
	cr_assert_eq(r.status, 2, "live export takes no --vcpu: %s", r.err);

	RUN(&r, "plot", path, "--timeline", "--vcpu", "5", "-o", "/tmp/vcpustat-filters-none.svg");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "plot: --vcpu 5: no such vCPU"), "%s", r.err);

	RUN(&r, "top", "--file", path, "-b", "-n", "1", "--vcpu", "7");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "top: --vcpu 7: no such vCPU"), "%s", r.err);
	unlink(path);
}

Test(filters, top_file_and_report_pcpu_view_take_the_filters)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	struct run r;

	write_rec(path);
	RUN(&r, "top", "--file", path, "-b", "-n", "1", "-d", "10", "--vcpu", "1", "--vm", "a");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "filtered: totals over vCPU 1 of 2"), "%s", r.out);

	/* `--pcpu` alone is the per-CPU view; with a list after it, the filter */
	RUN(&r, "report", path, "--pcpu");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "per physical CPU"), "%s", r.out);
	RUN(&r, "report", "--pcpu", "--pcpu", "0,2", path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "per physical CPU"), "%s", r.out);
	cr_assert(strstr(r.out, "\n    0 ") && strstr(r.out, "\n    2 "), "%s", r.out);
	cr_assert_null(strstr(r.out, "\n    1 "), "%s", r.out);
	cr_assert_null(strstr(r.out, "\n    3 "), "%s", r.out);
	/* the view with --tid: every CPU's shares, the occupants of that thread only */
	RUN(&r, "report", path, "--pcpu", "--tid", "102");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "a/1 guest"), "%s", r.out);
	cr_assert_null(strstr(r.out, "b/0"), "%s", r.out);
	cr_assert_null(strstr(r.out, "a/0"), "%s", r.out);
	RUN(&r, "report", path, "--pcpu", "--vcpu", "1");
	cr_assert_eq(r.status, 2, "the view is per CPU: %s", r.err);
	RUN(&r, "report", path, "--pcpu", "0");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "per physical CPU"), "a list: the filter, not the view: %s", r.out);
	cr_assert(strstr(r.out, "[time on pCPUs 0 only]"), "%s", r.out);
	RUN(&r, "report", path, "--pcpu=1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "[time on pCPUs 1 only]"), "%s", r.out);
	unlink(path);
}

/* One complete event ("X") of a chrome-json timeline, in µs. */
struct slice {
	const char *cat, *name;
	double ts, dur;
};

static size_t slices(json_t *doc, const char *cat, struct slice *out, size_t max)
{
	json_t *ev;
	size_t i, n = 0;

	json_array_foreach(json_object_get(doc, "traceEvents"), i, ev) {
		const char *c = json_string_value(json_object_get(ev, "cat"));

		if (strcmp(json_string_value(json_object_get(ev, "ph")), "X") || !c || strcmp(c, cat))
			continue;
		cr_assert_lt(n, max, "more %s slices than expected", cat);
		out[n++] = (struct slice){ c, json_string_value(json_object_get(ev, "name")),
					   json_number_value(json_object_get(ev, "ts")),
					   json_number_value(json_object_get(ev, "dur")) };
	}
	return n;
}

static void assert_slice(const struct slice *s, const char *name, double ts_s, double dur_s)
{
	cr_assert_str_eq(s->name, name);
	cr_assert_float_eq(s->ts, ts_s * 1e6, 1e-3, "%s at %f", name, s->ts);
	cr_assert_float_eq(s->dur, dur_s * 1e6, 1e-3, "%s for %f", name, s->dur);
}

/*
 * export -f chrome-json --vcpu 1 --pcpu 2: a vCPU 1's track from 5 s (when it
 * came to CPU 2), its exit there; CPU 2's track, what ran on it: b vCPU 0
 * [0, 3), a vCPU 1 [5, 6) and [9, 10). No other track.
 */
Test(filters, chrome_json_keeps_the_vcpu_tracks_cut_to_the_cpus_and_those_cpus)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX", out[64];
	struct slice s[16];
	json_error_t je;
	struct run r;
	json_t *doc;

	write_rec(path);
	snprintf(out, sizeof(out), "%s.json", path);
	RUN(&r, "export", path, "-f", "chrome-json", "--vcpu", "1", "--pcpu", "2", "-o", out);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_load_file(out, 0, &je);
	cr_assert_not_null(doc, "%s", je.text);
	cr_assert_eq(slices(doc, "state", s, 16), 5);
	assert_slice(&s[0], "guest", 5, 0.5);
	assert_slice(&s[1], "host", 5.5, 0.5);
	assert_slice(&s[2], "idle", 6, 2);
	assert_slice(&s[3], "wait", 8, 1);
	assert_slice(&s[4], "guest", 9, 1);
	cr_assert_eq(slices(doc, "exit", s, 16), 1, "npf was on CPU 1");
	assert_slice(&s[0], "hlt", 5.5, 0.5);
	cr_assert_eq(slices(doc, "vcpu", s, 16), 4);
	assert_slice(&s[0], "b vCPU 0", 0, 3);
	assert_slice(&s[1], "a vCPU 1", 5, 0.5);
	assert_slice(&s[2], "a vCPU 1", 5.5, 0.5);
	assert_slice(&s[3], "a vCPU 1", 9, 1);
	json_decref(doc);

	/* filters that keep no vCPU track: the usage error, and no file */
	unlink(out);
	RUN(&r, "export", path, "-f", "chrome-json", "--vcpu", "1", "--vm", "b", "--pcpu", "0", "-o", out);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "export: --vcpu 1 --pcpu 0: nothing of"), "%s", r.err);
	cr_assert_neq(access(out, F_OK), 0, "nothing is written");
	unlink(path);
}

static json_t *placement_vm(json_t *doc, const char *name)
{
	json_t *vm;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(doc, "placement"), "vms"), i, vm)
		if (!strcmp(json_string_value(json_object_get(vm, "vm")), name))
			return vm;
	return NULL;
}

/*
 * report --placement: on a CPU is guest or host. --vcpu 1: a vCPU 1 on CPUs
 * 5 s guest + 1 s host, its one migration; b vCPU 1 10 s. --pcpu 2: a vCPU 1
 * on CPU 2 [5, 6) and [9, 10), its move there; b vCPU 0 [0, 3), its move away
 * (to CPU 0) not counted.
 */
Test(filters, placement_counts_the_vcpus_and_cpus_kept)
{
	char path[] = "/tmp/vcpustat-filters-XXXXXX";
	json_t *doc, *a, *b;

	write_rec(path);
	doc = report_json(path, "--placement", "--vcpu", "1", NULL);
	a = placement_vm(doc, "a");
	b = placement_vm(doc, "b");
	cr_assert(a && b);
	cr_assert_eq(int_of(a, "vcpus"), 1);
	cr_assert_eq(int_of(a, "run_ns"), 6 * S);
	cr_assert_eq(int_of(a, "migrations"), 1);
	cr_assert_eq(int_of(b, "vcpus"), 1);
	cr_assert_eq(int_of(b, "run_ns"), 10 * S);
	cr_assert_eq(int_of(b, "migrations"), 0);
	json_decref(doc);

	doc = report_json(path, "--placement", "--pcpu", "2", NULL);
	a = placement_vm(doc, "a");
	b = placement_vm(doc, "b");
	cr_assert(a && b);
	cr_assert_eq(int_of(a, "vcpus"), 1);
	cr_assert_eq(int_of(a, "run_ns"), 2 * S);
	cr_assert_eq(int_of(a, "migrations"), 1);
	cr_assert_eq(int_of(b, "vcpus"), 1);
	cr_assert_eq(int_of(b, "run_ns"), 3 * S);
	cr_assert_eq(int_of(b, "migrations"), 0);
	json_decref(doc);
	unlink(path);
}

/*
 * --cgroup on a recording (summary_filter_cgroups_to_vms): three VMs, a in a
 * libvirt scope, b in a pod's cgroup, c with no cgroup recorded.
 */
#define A_CG "/machine.slice/machine-qemu\\x2d1\\x2da.scope/libvirt/emulator"
#define B_CG "/kubepods.slice/kubepods-pod1.slice/cri-containerd-0123abcd4567ef89.scope"

static const struct set cgroup_rec[] = {
	{ 0, "/vms/a/pid", 100 },	    { 0, "/vms/a/cgroup", 0, A_CG },	     { 0, "/vms/a/vcpus/0/state", 1 },
	{ 0, "/vms/b/pid", 200 },	    { 0, "/vms/b/cgroup", 0, B_CG },	     { 0, "/vms/b/vcpus/0/state", 1 },
	{ 0, "/vms/c/pid", 300 },	    { 0, "/vms/c/vcpus/0/state", 1 },
};

/* f's --vm list after --cgroup pats[0..n) (and --vm vm, if not NULL): the return value, the list in list. */
static int cgroups_to_vms(const char *path, const char *const *pats, size_t n, const char *vm, char *list,
			  size_t len, struct vcpustat_error *err)
{
	static struct filter_vms keep;
	struct summary_filter f = { 0 };
	const char *vms[1] = { vm };
	struct sht_reader *r;
	size_t used = 0;
	int e;

	cr_assert_eq(sht_open(&r, path, err), 0, "%s", err->msg);
	for (size_t i = 0; i < n; i++)
		f.cgroups[f.nr_cgroups++] = pats[i];
	if (vm) {
		f.vms = vms;
		f.nr_vms = 1;
	}
	e = summary_filter_cgroups_to_vms(&f, r, "rec.sht", &keep, err);
	list[0] = '\0';
	for (size_t i = 0; i < f.nr_vms; i++)
		used += (size_t)snprintf(list + used, len - used, "%s%s", i ? " " : "", f.vms[i]);
	if (!e && n)
		cr_assert_eq(f.vms, keep.vms, "the names are the caller's copies");
	sht_close(r);
	return e;
}

Test(filters, cgroup_patterns_become_the_vms_of_the_file_in_those_cgroups)
{
	char path[] = "/tmp/vcpustat-filters-cg-XXXXXX", list[256];
	const char *libvirt[] = { "/machine.slice/*" }, *both[] = { "/machine.slice/*", "0123abcd" },
		   *none[] = { "/system.slice/*" };
	struct vcpustat_error err = { 0 };

	write_set(path, cgroup_rec, sizeof(cgroup_rec) / sizeof(cgroup_rec[0]));
	cr_assert_eq(cgroups_to_vms(path, NULL, 0, NULL, list, sizeof(list), &err), 0);
	cr_assert_str_eq(list, "", "no --cgroup: f is left as it was");
	cr_assert_eq(cgroups_to_vms(path, libvirt, 1, NULL, list, sizeof(list), &err), 0, "%s", err.msg);
	cr_assert_str_eq(list, "a", "a glob of the path");
	cr_assert_eq(cgroups_to_vms(path, both, 2, NULL, list, sizeof(list), &err), 0, "%s", err.msg);
	cr_assert_str_eq(list, "a b", "either pattern; b by its container id's start");
	cr_assert_eq(cgroups_to_vms(path, both, 2, "200", list, sizeof(list), &err), 0, "%s", err.msg);
	cr_assert_str_eq(list, "b", "and --vm (by pid)");

	cr_assert_eq(cgroups_to_vms(path, none, 1, NULL, list, sizeof(list), &err), -ENOENT);
	cr_assert_str_eq(err.msg, "--cgroup /system.slice/*: no VM of rec.sht runs in such a cgroup (their cgroups: a: "
				  A_CG ", b: " B_CG ", c: none recorded)");
	cr_assert_eq(cgroups_to_vms(path, libvirt, 1, "b", list, sizeof(list), &err), -ENOENT);
	cr_assert_str_eq(err.msg, "--cgroup /machine.slice/*: no VM of rec.sht runs in such a cgroup (their cgroups: b: "
				  B_CG ")", "only the VMs --vm keeps are named");
	unlink(path);
}

/* Is the attribute at path selected in want? */
static bool wanted(struct sht_reader *r, const uint8_t *want, const char *path)
{
	uint32_t id;

	cr_assert_eq(sht_attr_lookup(r, path, &id), 0, "%s", path);
	return want[id];
}

/* query's selection and times (model/query_view.c), on the recording above. */
Test(filters, query_selects_the_path_times_and_filters_of_a_recording)
{
	char path[] = "/tmp/vcpustat-filters-q-XXXXXX";
	struct summary_filter f = { 0 };
	struct vcpustat_error err = { 0 };
	const char *vms[] = { "a" };
	struct sht_reader *r;
	uint8_t *want;
	uint64_t t1, t2;

	write_rec(path);
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(query_select_path(r, NULL, &want, &err), 0);
	cr_assert_null(want, "no --path: every attribute");
	cr_assert_eq(query_select_path(r, "/vms/a/**", &want, &err), 0, "%s", err.msg);
	cr_assert(wanted(r, want, "/vms/a/vcpus/1/state") && !wanted(r, want, "/vms/b/pid"));
	free(want);
	cr_assert_eq(query_select_path(r, "/vms/c", &want, &err), -ENOENT);
	cr_assert_str_eq(err.msg, "no attribute /vms/c");
	free(want);

	cr_assert_eq(query_times(r, "f", NULL, NULL, NULL, &t1, &t2, &err), 0);
	cr_assert(t1 == 0 && t2 == 10 * S, "the whole file: %llu %llu", (unsigned long long)t1, (unsigned long long)t2);
	cr_assert_eq(query_times(r, "f", "2s", "1s", NULL, &t1, &t2, &err), 0, "%s", err.msg);
	cr_assert(t1 == 2 * S && t2 == 2 * S, "--at: one instant, --from aside");
	cr_assert_eq(query_times(r, "f", NULL, "1s", "3s", &t1, &t2, &err), 0, "%s", err.msg);
	cr_assert(t1 == 1 * S && t2 == 3 * S);
	cr_assert_eq(query_times(r, "f", "11s", NULL, NULL, &t1, &t2, &err), -EINVAL);
	cr_assert_str_eq(err.msg, "--at 11s: after the end of the history of f (10000000000 ns since the start)");
	cr_assert_eq(query_times(r, "f", "soon", NULL, NULL, &t1, &t2, &err), -EINVAL);
	cr_assert(!strncmp(err.msg, "--at: ", 6), "%s", err.msg);
	cr_assert_eq(query_times(r, "f", NULL, "3s", "1s", &t1, &t2, &err), -ERANGE);
	cr_assert_str_eq(err.msg, "--from 3s is after --to 1s");

	want = NULL;
	cr_assert_eq(query_narrow(r, "f", &f, 0, 10 * S, &want, &err), 0);
	cr_assert_null(want, "no filter: nothing to narrow");
	cr_assert_eq(id_set_add(&f.vcpus, "1", &err), 0);
	cr_assert_eq(query_narrow(r, "f", &f, 0, 10 * S, &want, &err), 0, "%s", err.msg);
	cr_assert_not_null(want);
	cr_assert(wanted(r, want, "/vms/a/vcpus/1/state") && wanted(r, want, "/vms/b/vcpus/1/state"));
	cr_assert(!wanted(r, want, "/vms/a/vcpus/0/state"), "--vcpu 1 leaves vCPU 0 out");
	free(want);
	want = NULL;
	memset(&f, 0, sizeof(f));
	f.vms = vms;
	f.nr_vms = 1;
	cr_assert_eq(id_set_add(&f.tids, "201", &err), 0);
	cr_assert_eq(query_narrow(r, "f", &f, 0, 10 * S, &want, &err), -ENOENT, "b's vCPU is not a's");
	cr_assert_str_eq(err.msg, "--tid 201: no attribute of f matches these filters together");
	free(want);
	sht_close(r);
	unlink(path);
}

/* export's window (export/window.c): the -f names, and a filter that kept nothing writes nothing. */
Test(filters, export_of_a_window_writes_nothing_a_filter_left_out)
{
	char path[] = "/tmp/vcpustat-filters-w-XXXXXX", out[64];
	struct export_window w = { .mo.top_culprits = METRICS_TOP_CULPRITS };
	struct summary_filter f = { 0 };
	struct vcpustat_error err = { 0 };
	const char *nobody[] = { "zz" };
	struct sht_reader *r;
	size_t nr_vms;

	cr_assert_eq(export_format_parse("ctf", &w), 0);
	cr_assert(w.timeline && w.tfmt == TIMELINE_CTF);
	cr_assert_eq(export_format_parse("csv", &w), 0);
	cr_assert(!w.timeline && w.fmt == METRICS_CSV, "a metrics format after a timeline one");
	cr_assert_eq(export_format_parse("yaml", &w), -EINVAL);

	write_rec(path);
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	f.vms = nobody;
	f.nr_vms = 1;
	snprintf(out, sizeof(out), "%s.csv", path);
	w.out = out;
	cr_assert_eq(export_window(r, "f", 0, 10 * S, &f, &w, &nr_vms, &err), 0, "%s", err.msg);
	cr_assert(nr_vms == 0 && access(out, F_OK) != 0, "--vm zz: nothing written");
	f.nr_vms = 0;
	cr_assert_eq(export_window(r, "f", 0, 10 * S, &f, &w, &nr_vms, &err), 0, "%s", err.msg);
	cr_assert(nr_vms == 2 && access(out, F_OK) == 0, "no filter: the metrics of both VMs");
	unlink(out);
	sht_close(r);
	unlink(path);
}

/* report_show_window() into a string: its return value; *text the text (free it), or *doc with doc. */
static int show_window(struct sht_reader *r, const struct summary_filter *f, char **text, json_t **doc, size_t *nr_vms)
{
	struct vcpustat_error err = { 0 };
	size_t len = 0;
	FILE *out = open_memstream(text, &len);
	int e;

	cr_assert_not_null(out);
	e = report_show_window(out, doc, r, "f", 0, 10 * S, f, 5, nr_vms, &err);
	cr_assert_eq(fclose(out), 0);
	return e;
}

/* report's tables of a window (model/report_show.c): text or JSON, and nothing shown when a filter kept nothing. */
Test(filters, report_shows_the_window_as_text_or_json_and_nothing_a_filter_left_out)
{
	char path[] = "/tmp/vcpustat-filters-r-XXXXXX", *text;
	struct summary_filter f = { 0 };
	struct vcpustat_error err = { 0 };
	const char *nobody[] = { "zz" };
	struct sht_reader *r;
	json_t *doc = NULL;
	size_t nr_vms;

	write_rec(path);
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(show_window(r, &f, &text, NULL, &nr_vms), 0);
	cr_assert_eq(nr_vms, 2);
	cr_assert(!strncmp(text, "f: ", 3), "the line naming the file and window first: %s", text);
	free(text);
	cr_assert_eq(show_window(r, &f, &text, &doc, &nr_vms), 0);
	cr_assert_str_eq(text, "", "JSON: no text");
	cr_assert_str_eq(json_string_value(json_object_get(doc, "file")), "f");
	cr_assert_eq(json_array_size(json_object_get(doc, "vms")), 2);
	json_decref(doc);
	free(text);

	f.vms = nobody;
	f.nr_vms = 1;
	doc = NULL;
	cr_assert_eq(show_window(r, &f, &text, &doc, &nr_vms), 0);
	cr_assert(nr_vms == 0 && !doc, "--vm zz: no document");
	free(text);
	cr_assert_eq(show_window(r, &f, &text, NULL, &nr_vms), 0);
	cr_assert_str_eq(text, "", "--vm zz: no text");
	free(text);
	sht_close(r);
	unlink(path);
}
