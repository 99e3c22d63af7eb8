// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporters' model (user/metrics.c): histogram buckets from the kernel's
 * log-linear ones, counters that only grow across windows, bounded culprit
 * series, the four formats agreeing on the same state (also on the real
 * maps, filled through the injection program), HTTP content negotiation,
 * atomic output files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "export_helpers.h"
#include "helpers.h"
#include "live/live.h"
#include "export/export.h"
#include "util/util.h"

/* ---- synthetic windows ---- */

static struct vm_summary *add_vm(struct summary *s, const char *name, __u32 tgid)
{
	struct vm_summary *vm;

	s->vms = realloc(s->vms, (s->nr_vms + 1) * sizeof(*s->vms));
	vm = &s->vms[s->nr_vms++];
	memset(vm, 0, sizeof(*vm));
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	vm->tgid = tgid;
	vm->runq.kind = VCPU_SAMPLE_RUNQ_WAIT;
	return vm;
}

static struct vcpu_summary *add_vcpu(struct vm_summary *vm, __u32 index, __u64 ns_each)
{
	struct vcpu_summary *v;

	vm->vcpus = realloc(vm->vcpus, (vm->nr_vcpus + 1) * sizeof(*vm->vcpus));
	v = &vm->vcpus[vm->nr_vcpus++];
	memset(v, 0, sizeof(*v));
	v->index = index;
	v->tid = vm->tgid + 1 + index;
	for (unsigned int st = 0; st < VCPU_NR_STATES; st++)
		v->ns[st] = ns_each * (st + 1);
	v->preemptions = 3;
	v->wakeups = 5;
	v->userspace_exits = 7;
	return v;
}

static struct latency_summary *add_uexit(struct vm_summary *vm, const char *reason)
{
	struct latency_summary *l;

	vm->uexits = realloc(vm->uexits, (vm->nr_uexits + 1) * sizeof(*vm->uexits));
	l = &vm->uexits[vm->nr_uexits++];
	memset(l, 0, sizeof(*l));
	l->kind = VCPU_SAMPLE_USERSPACE_EXIT;
	snprintf(l->name, sizeof(l->name), "%s", reason);
	return l;
}

static void add_culprit(struct vm_summary *vm, const char *process, const char *comm, __u64 ns)
{
	struct culprit_summary *c;

	vm->culprits = realloc(vm->culprits, (vm->nr_culprits + 1) * sizeof(*vm->culprits));
	c = &vm->culprits[vm->nr_culprits++];
	memset(c, 0, sizeof(*c));
	snprintf(c->process, sizeof(c->process), "%s", process);
	snprintf(c->comm, sizeof(c->comm), "%s", comm);
	snprintf(c->cgroup, sizeof(c->cgroup), "/system.slice");
	c->vcpu = -1;
	c->ns = ns;
}

static char *render(const struct metrics *m, enum metrics_format f)
{
	char *buf;
	size_t len;

	cr_assert_eq(metrics_render(m, f, &buf, &len), 0);
	cr_assert_eq(strlen(buf), len);
	if (f == METRICS_JSON) /* one document and a newline */
		expect_janssons_text(buf, len - 1);
	return buf;
}

static void parse(const struct metrics *m, struct prom_doc *d)
{
	char *text = render(m, METRICS_PROMETHEUS);

	prom_parse(text, d);
	free(text);
}

/* The published edges are edges of the kernel's buckets, 1-2-5 within 5 %, ascending. */
Test(export, published_le_are_kernel_bucket_edges_near_1_2_5)
{
	static const double nominal[] = { 5e2, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6,
					  5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10 };

	cr_assert_eq(sizeof(nominal) / sizeof(nominal[0]), METRICS_NR_LE);
	for (unsigned int i = 0; i < METRICS_NR_LE; i++) {
		unsigned int b = lat_hist_bucket(metrics_le_ns[i]);
		double err = ((double)metrics_le_ns[i] - nominal[i]) / nominal[i];

		cr_assert_eq(lat_hist_lower(b), metrics_le_ns[i], "edge %u (%llu ns) is a kernel bucket's lower bound", i,
			     metrics_le_ns[i]);
		cr_assert_lt(err < 0 ? -err : err, 0.05, "edge %llu ns is within 5 %% of %g", metrics_le_ns[i],
			     nominal[i]);
		if (i)
			cr_assert_gt(metrics_le_ns[i], metrics_le_ns[i - 1]);
	}
}

/*
 * Samples spread over all 256 kernel buckets, added over two windows: every
 * published bucket is exactly the number of samples below its edge, buckets
 * are cumulative, +Inf = _count = all samples, _sum is exact.
 */
Test(export, histogram_buckets_are_exact_cumulative_and_inf_equals_count)
{
	struct metrics_opts o = { .top_culprits = 5 };
	struct metrics *m = metrics_new(&o);
	__u64 truth[LAT_HIST_BUCKETS] = { 0 }, total = 0, sum = 0;
	struct prom_doc d;
	char labels[128];

	srand(7);
	for (int w = 0; w < 2; w++) {
		struct summary s = { .t0 = (__u64)w * 1000000000ull, .t1 = (__u64)(w + 1) * 1000000000ull };
		struct vm_summary *vm = add_vm(&s, "web1", 100);
		struct latency_summary *l = add_uexit(vm, "IO");

		add_vcpu(vm, 0, 1000);
		for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++) {
			__u64 n = (__u64)(rand() % 5);

			l->bucket[b] = n;
			l->count += n;
			l->sum_ns += n * lat_hist_lower(b);
			vm->runq.bucket[b] = b % 3;
			vm->runq.count += b % 3;
			truth[b] += n;
			total += n;
			sum += n * lat_hist_lower(b);
		}
		cr_assert_eq(metrics_add(m, &s), 0);
		summary_free(&s);
	}
	parse(m, &d);
	cr_assert_eq(prom_check_histograms(&d), 2, "the IO exits and the run-queue waits");
	for (unsigned int i = 0; i < METRICS_NR_LE; i++) {
		char le[32];
		__u64 below = 0;

		for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
			if (lat_hist_upper(b) <= metrics_le_ns[i])
				below += truth[b];
		snprintf(le, sizeof(le), "%.17g", (double)metrics_le_ns[i] / 1e9);
		for (const struct prom_sample *p = d.s; p < d.s + d.n; p++)
			if (!strcmp(p->name, "vcpustat_userspace_exit_duration_seconds_bucket") &&
			    strstr(p->labels, "reason=\"IO\"") && strtod(strstr(p->labels, "le=\"") + 4, NULL) == strtod(le, NULL))
				cr_assert_eq((__u64)p->value, below, "le=%s: %llu samples below the edge", le,
					     (unsigned long long)below);
	}
	snprintf(labels, sizeof(labels), "vm=\"web1\",reason=\"IO\"");
	cr_assert_eq((__u64)prom_value(&d, "vcpustat_userspace_exit_duration_seconds_count", labels), total);
	cr_assert_float_eq(prom_value(&d, "vcpustat_userspace_exit_duration_seconds_sum", labels), (double)sum / 1e9,
			   1e-9);
	prom_free(&d);
	metrics_free(m);
}

/*
 * Counters only grow: a vCPU that disappears, a VM that exits (and whose
 * series are forgotten later), and the same totals per VM without vCPU labels.
 */
Test(export, counters_stay_monotonic_when_vcpus_and_vms_go)
{
	struct metrics_opts with = { .top_culprits = 5 }, without = { .top_culprits = 5, .no_vcpu_labels = true };
	struct metrics *m = metrics_new(&with), *agg = metrics_new(&without);
	double last[3][VCPU_NR_STATES] = { { 0 } };
	struct prom_doc d;

	for (int w = 0; w < 4; w++) {
		struct summary s = { .t0 = (__u64)w * 1000, .t1 = (__u64)(w + 1) * 1000 };
		struct vm_summary *vm = add_vm(&s, "db", 200);

		add_vcpu(vm, 0, 10);
		if (w < 2) /* vCPU 1 goes away after window 1 */
			add_vcpu(vm, 1, 10)->gone = w == 1;
		if (w < 3) {
			struct vm_summary *other = add_vm(&s, "batch", 300);

			add_vcpu(other, 0, 5)->gone = w == 2;
			other->exited = w == 2;
		}
		cr_assert_eq(metrics_add(m, &s), 0);
		cr_assert_eq(metrics_add(agg, &s), 0);
		summary_free(&s);
		parse(m, &d);
		for (unsigned int st = 0; st < VCPU_NR_STATES; st++) {
			const char *vms[] = { "db", "db", "batch" }, *idx[] = { "0", "1", "0" };

			for (int k = 0; k < 3; k++) {
				char labels[128];
				const struct prom_sample *p;

				snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%s\",state=\"%s\"", vms[k], idx[k],
					 vcpu_state_name(st));
				p = prom_find(&d, "vcpustat_vcpu_seconds_total", labels);
				cr_assert_not_null(p, "window %d: %s still published", w, labels);
				cr_assert_geq(p->value, last[k][st], "window %d: %s went down", w, labels);
				last[k][st] = p->value;
			}
		}
		cr_assert_eq(prom_value(&d, "vcpustat_vcpus", "vm=\"db\""), w < 1 ? 2 : 1, "window %d", w);
		prom_free(&d);
	}
	/* db: vCPU 0 for 4 windows, vCPU 1 for 2: 10 * (st + 1) ns each */
	parse(agg, &d);
	for (unsigned int st = 0; st < VCPU_NR_STATES; st++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "vm=\"db\",state=\"%s\"", vcpu_state_name(st));
		cr_assert_float_eq(prom_value(&d, "vcpustat_vcpu_seconds_total", labels), 6 * 10.0 * (st + 1) / 1e9,
				   1e-12, "%s: the sum over the VM's vCPUs", labels);
	}
	cr_assert_eq(prom_value(&d, "vcpustat_vcpu_preemptions_total", "vm=\"db\""), 6 * 3);
	cr_assert_null(prom_find(&d, "vcpustat_vcpu_preemptions_total", "vm=\"db\",vcpu=\"0\""),
		       "no vcpu label with --no-vcpu-labels");
	prom_free(&d);
	/* the exited VM stays until forgotten, then its series go */
	metrics_forget(m, 4000, 100000);
	parse(m, &d);
	cr_assert_not_null(prom_find(&d, "vcpustat_vcpus", "vm=\"batch\""));
	prom_free(&d);
	metrics_forget(m, 4000 + 200000, 100000);
	parse(m, &d);
	cr_assert_null(prom_find(&d, "vcpustat_vcpus", "vm=\"batch\""), "forgotten");
	cr_assert_not_null(prom_find(&d, "vcpustat_vcpus", "vm=\"db\""), "alive: kept");
	prom_free(&d);
	metrics_free(m);
	metrics_free(agg);
}

/*
 * Culprits: at most N named series per VM plus "other"; each series only
 * grows while the ranking changes; nothing is counted twice.
 */
Test(export, culprits_top_n_and_other_stay_monotonic)
{
	struct metrics_opts o = { .top_culprits = 2 };
	struct metrics *m = metrics_new(&o);
	double seen[8] = { 0 }, other = 0, charged = 0;
	static const char *const names[] = { "a", "b", "c", "d" };

	for (int w = 0; w < 6; w++) {
		struct summary s = { .t0 = (__u64)w, .t1 = (__u64)w + 1 };
		struct vm_summary *vm = add_vm(&s, "web", 10);
		struct prom_doc d;
		double published = 0;
		size_t named = 0;

		add_vcpu(vm, 0, 1);
		/* the ranking changes: d is new and big from window 3 on */
		add_culprit(vm, "a", "a", 100);
		add_culprit(vm, "b", "b", 50);
		add_culprit(vm, "c", "c", (__u64)(10 * w));
		charged += 150 + 10 * w;
		if (w >= 3) {
			add_culprit(vm, "d", "d", 1000);
			charged += 1000;
		}
		cr_assert_eq(metrics_add(m, &s), 0);
		summary_free(&s);
		parse(m, &d);
		for (size_t i = 0; i < d.n; i++) {
			const struct prom_sample *p = &d.s[i];

			if (strcmp(p->name, "vcpustat_culprit_seconds_total"))
				continue;
			published += p->value * 1e9;
			if (strstr(p->labels, "process=\"other\"")) {
				cr_assert_geq(p->value, other, "other only grows");
				other = p->value;
				continue;
			}
			named++;
			for (int k = 0; k < 4; k++) {
				char want[64];

				snprintf(want, sizeof(want), "process=\"%s\"", names[k]);
				if (strstr(p->labels, want)) {
					cr_assert_geq(p->value, seen[k], "window %d: %s went down", w, names[k]);
					seen[k] = p->value;
				}
			}
			cr_assert(strstr(p->labels, "cgroup=\"/system.slice\""), "%s", p->labels);
		}
		cr_assert_leq(named, 2, "at most N named culprits");
		cr_assert_leq(published, charged + 0.5, "no time counted twice");
		if (w >= 3) {
			cr_assert_not_null(prom_find(&d, "vcpustat_culprit_seconds_total",
						     "vm=\"web\",process=\"d\",comm=\"d\",cgroup=\"/system.slice\""),
					   "the big newcomer is named");
		}
		prom_free(&d);
	}
	cr_assert_gt(other, 0);
	metrics_free(m);
}

/* A label value as the text formats print it. */
static const char *esc(const char *v, char *buf, size_t len)
{
	size_t n = 0;

	for (; *v && n + 3 < len; v++) {
		if (*v == '"' || *v == '\\')
			buf[n++] = '\\';
		buf[n++] = *v;
	}
	buf[n] = '\0';
	return buf;
}

/* The four formats of one state: same samples, same numbers. */
static void assert_formats_agree(const struct metrics *m)
{
	char *prom = render(m, METRICS_PROMETHEUS), *om = render(m, METRICS_OPENMETRICS);
	char *csv = render(m, METRICS_CSV), *js = render(m, METRICS_JSON);
	struct prom_doc p, o;
	json_error_t jerr;
	json_t *doc = json_loads(js, 0, &jerr), *vm;
	size_t i, rows = 0, compared = 0;
	char *line, *save = NULL;

	cr_assert_not_null(doc, "JSON: %s", jerr.text);
	prom_parse(prom, &p);
	prom_parse(om, &o);
	cr_assert(o.eof, "OpenMetrics ends with # EOF");
	cr_assert_eq(p.n, o.n, "same samples in Prometheus text and OpenMetrics");
	for (i = 0; i < p.n; i++) {
		cr_assert_str_eq(p.s[i].name, o.s[i].name);
		cr_assert_str_eq(p.s[i].labels, o.s[i].labels);
		cr_assert_str_eq(p.s[i].text, o.s[i].text);
	}
	cr_assert(strstr(om, "# TYPE vcpustat_vcpu_seconds counter\n# UNIT vcpustat_vcpu_seconds seconds\n"));
	cr_assert(strstr(prom, "# TYPE vcpustat_vcpu_seconds_total counter\n"));
	cr_assert(strstr(om, "# TYPE vcpustat_build info\n"));
	/* CSV: one row per sample (the info metrics aside), same order, same value text */
	line = strtok_r(csv, "\n", &save);
	cr_assert_str_eq(line, "metric,vm,vcpu,state,reason,le,process,comm,cgroup,culprit_vm,kind,tracepoint,target,access,msr,"
			       "result,node,llc,across,beside,vector,cr3,value");
	for (i = 0; (line = strtok_r(NULL, "\n", &save)); i++) {
		const char *comma = strrchr(line, ',');
		char name[64], value[256], field[260];
		int used;

		/* the info metrics (vcpustat_build_info, vcpustat_vm_info) are not in the CSV */
		while (i < p.n && strlen(p.s[i].name) > 5 && !strcmp(p.s[i].name + strlen(p.s[i].name) - 5, "_info"))
			i++;
		cr_assert_lt(i, p.n);
		cr_assert_eq(strncmp(line, p.s[i].name, strlen(p.s[i].name)), 0, "row %zu: %s vs %s", i, line,
			     p.s[i].name);
		cr_assert_str_eq(comma + 1, p.s[i].text, "row %zu: %s", i, line);
		/*
		 * every label is a column, and its value is in the row: no label is
		 * dropped (values with characters Prometheus escapes or CSV quotes are
		 * checked by the column alone)
		 */
		for (const char *l = p.s[i].labels; sscanf(l, "%63[a-z_]=\"%n", name, &used) == 1;) {
			size_t vlen = 0;
			bool plain = true;
			char col[80];

			for (l += used; *l && *l != '"'; l++) {
				if (*l == '\\' && l[1])
					l++, plain = false;
				plain &= *l != ',';
				if (vlen < sizeof(value) - 1)
					value[vlen++] = *l;
			}
			value[vlen] = '\0';
			l += *l == '"';
			l += *l == ',';
			snprintf(col, sizeof(col), ",%s,", name);
			cr_assert(strstr(",metric,vm,vcpu,state,reason,le,process,comm,cgroup,culprit_vm,kind,tracepoint,"
					 "target,access,msr,result,node,llc,across,beside,vector,cr3,value,", col),
				  "row %zu: label %s has no CSV column (%s)", i, name, p.s[i].labels);
			snprintf(field, sizeof(field), ",%s,", value);
			cr_assert(!plain || strstr(line, field), "row %zu: %s=%s not in %s", i, name, value, line);
		}
		rows++;
	}
	{
		size_t info = 0;

		for (size_t k = 0; k < p.n; k++)
			info += strlen(p.s[k].name) > 5 && !strcmp(p.s[k].name + strlen(p.s[k].name) - 5, "_info");
		cr_assert_geq(info, 1 + json_array_size(json_object_get(doc, "vms")), "build_info, and vm_info per VM");
		cr_assert_eq(rows, p.n - info, "every sample but the info metrics' has a CSV row");
	}
	/* JSON: the per-VM numbers */
	json_array_foreach(json_object_get(doc, "vms"), i, vm) {
		char name[160];
		json_t *v, *h;
		size_t k;

		esc(json_string_value(json_object_get(vm, "vm")), name, sizeof(name));
		json_array_foreach(json_object_get(vm, "vcpus"), k, v) {
			for (unsigned int st = 0; st < VCPU_NR_STATES; st++) {
				char labels[256];

				snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%lld\",state=\"%s\"", name,
					 json_integer_value(json_object_get(v, "vcpu")), vcpu_state_name(st));
				cr_assert_float_eq(json_real_value(json_object_get(json_object_get(v, "seconds"),
										    vcpu_state_name(st))),
						   prom_value(&p, "vcpustat_vcpu_seconds_total", labels), 1e-9, "%s",
						   labels);
				compared++;
			}
			for (unsigned int f = 0; f < 2; f++) {
				static const char *const field[] = { "delay_seconds", "wait_seconds" };
				static const char *const metric[] = { "vcpustat_vcpu_delay_seconds_total",
								      "vcpustat_vcpu_wait_seconds_total" };
				char labels[256];

				snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%lld\"", name,
					 json_integer_value(json_object_get(v, "vcpu")));
				cr_assert(json_is_real(json_object_get(v, field[f])), "%s: %s in the JSON", labels,
					  field[f]);
				cr_assert_float_eq(json_real_value(json_object_get(v, field[f])),
						   prom_value(&p, metric[f], labels), 1e-9, "%s %s", metric[f], labels);
				compared++;
			}
		}
		json_array_foreach(json_object_get(vm, "userspace_exits"), k, h) {
			char labels[256];
			json_t *b;
			size_t j;

			snprintf(labels, sizeof(labels), "vm=\"%s\",reason=\"%s\"", name,
				 json_string_value(json_object_get(h, "reason")));
			cr_assert_eq(json_integer_value(json_object_get(h, "count")),
				     (json_int_t)prom_value(&p, "vcpustat_userspace_exit_duration_seconds_count", labels));
			json_array_foreach(json_object_get(h, "buckets"), j, b) {
				const struct prom_sample *s = NULL;
				size_t seen = 0;

				for (size_t q = 0; q < p.n; q++)
					if (!strcmp(p.s[q].name, "vcpustat_userspace_exit_duration_seconds_bucket") &&
					    !strncmp(p.s[q].labels, labels, strlen(labels)) && seen++ == j)
						s = &p.s[q];
				cr_assert_not_null(s);
				cr_assert_eq(json_integer_value(json_object_get(b, "count")), (json_int_t)s->value);
				compared++;
			}
		}
	}
	cr_assert_gt(compared, 0);
	json_decref(doc);
	prom_free(&p);
	prom_free(&o);
	free(prom);
	free(om);
	free(csv);
	free(js);
}

Test(export, four_formats_agree_on_synthetic_windows)
{
	struct metrics_opts o = { .top_culprits = 1 };
	struct metrics *m = metrics_new(&o);
	struct summary s = { .t0 = 0, .t1 = 2000000000ull };
	struct vm_summary *vm = add_vm(&s, "we\"ird,name\\", 5);
	struct latency_summary *l = add_uexit(vm, "IO");

	add_vcpu(vm, 0, 123456789);
	add_vcpu(vm, 3, 1);
	l->bucket[100] = 4;
	l->bucket[200] = 1;
	add_culprit(vm, "stress-ng", "stress-ng-cpu", 5000);
	add_culprit(vm, "kworker", "kworker/0:1", 10);
	add_vm(&s, "web2", 6);
	add_vcpu(&s.vms[1], 0, 42);
	cr_assert_eq(metrics_add(m, &s), 0);
	summary_free(&s);
	assert_formats_agree(m);
	{
		char *prom = render(m, METRICS_PROMETHEUS), *csv = render(m, METRICS_CSV);

		cr_assert(strstr(prom, "vm=\"we\\\"ird,name\\\\\""), "label values escaped:\n%.400s", prom);
		cr_assert(strstr(csv, "\"we\"\"ird,name\\\""), "CSV fields quoted");
		free(prom);
		free(csv);
	}
	metrics_free(m);
}

/* What `promtool check metrics` (Prometheus's linter of expositions) says of text; its exit status. */
static int promtool_check_metrics(const char *text, char *out, size_t len)
{
	const char *path = scratch_file("export-promtool", "metrics.prom");
	char cmd[640];
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
	return run_shell(cmd, out, len);
}

/*
 * The fleet names (docs/metrics.md "Names other exporters use"): per vCPU,
 * vcpustat_vcpu_delay_seconds_total and vcpustat_vcpu_wait_seconds_total are
 * the states preempted + wait, to the nanosecond, over two windows; per VM
 * with --no-vcpu-labels the sum over its vCPUs; the same digits in
 * Prometheus text, OpenMetrics (a counter family with its unit) and CSV,
 * the same number in the JSON. None of the other states leaks in: they are
 * seconds long, the run-queue states nanoseconds apart.
 */
Test(export, delay_and_wait_seconds_are_preempted_plus_wait_to_the_ns)
{
	/* [vcpu][state]: per window; vCPU 3 of "web" never waited */
	static const __u64 ns[2][VCPU_NR_STATES] = {
		{ 5000000001ull, 7000000003ull, 11000000005ull, 1234567891ull, 987654321ull, 13000000007ull,
		  17000000009ull },
		{ 1ull, 2ull, 3ull, 0ull, 0ull, 4ull, 5ull },
	};
	struct metrics_opts with = { .top_culprits = 5 }, without = { .top_culprits = 5, .no_vcpu_labels = true };
	struct metrics *m = metrics_new(&with), *agg = metrics_new(&without);
	/* two windows: vCPU 0: 2 x (1234567891 + 987654321) = 4444444424 ns; vCPU 3: 0 */
	static const char *const want0 = "4.444444424", *want3 = "0.000000000";
	static const char *const metric[] = { "vcpustat_vcpu_delay_seconds_total", "vcpustat_vcpu_wait_seconds_total" };
	char *text, *om, *csv, *js;
	struct prom_doc d, o;
	json_t *doc, *vm, *v;

	for (int w = 0; w < 2; w++) {
		struct summary s = { .t0 = (__u64)w * 60000000000ull, .t1 = (__u64)(w + 1) * 60000000000ull };
		struct vm_summary *vmw = add_vm(&s, "web", 100);

		for (int c = 0; c < 2; c++) {
			struct vcpu_summary *vc = add_vcpu(vmw, c ? 3 : 0, 0);

			memcpy(vc->ns, ns[c], sizeof(vc->ns));
		}
		cr_assert_eq(metrics_add(m, &s), 0);
		cr_assert_eq(metrics_add(agg, &s), 0);
		summary_free(&s);
	}
	text = render(m, METRICS_PROMETHEUS);
	om = render(m, METRICS_OPENMETRICS);
	prom_parse(text, &d);
	prom_parse(om, &o);
	for (int f = 0; f < 2; f++) {
		char help[128], type[128];

		cr_assert_str_eq(prom_find(&d, metric[f], "vm=\"web\",vcpu=\"0\"")->text, want0, "%s", metric[f]);
		cr_assert_str_eq(prom_find(&d, metric[f], "vm=\"web\",vcpu=\"3\"")->text, want3, "%s", metric[f]);
		cr_assert_str_eq(prom_find(&o, metric[f], "vm=\"web\",vcpu=\"0\"")->text, want0, "OpenMetrics %s",
				 metric[f]);
		snprintf(type, sizeof(type), "# TYPE %s counter\n", metric[f]);
		cr_assert(strstr(text, type), "Prometheus text: %s", type);
		snprintf(help, sizeof(help), "# HELP %s vCPU-seconds runnable without a CPU (states preempted + wait)",
			 metric[f]);
		cr_assert(strstr(text, help), "its HELP says what it is made of: %s", help);
		snprintf(type, sizeof(type), "# TYPE %.*s counter\n# UNIT %.*s seconds\n", (int)strlen(metric[f]) - 6,
			 metric[f], (int)strlen(metric[f]) - 6, metric[f]);
		cr_assert(strstr(om, type), "OpenMetrics: a counter family in seconds: %s", type);
	}
	/* the state series themselves are untouched */
	cr_assert_str_eq(prom_find(&d, "vcpustat_vcpu_seconds_total", "vm=\"web\",vcpu=\"0\",state=\"preempted\"")->text,
			 "2.469135782");
	cr_assert_str_eq(prom_find(&d, "vcpustat_vcpu_seconds_total", "vm=\"web\",vcpu=\"0\",state=\"wait\"")->text,
			 "1.975308642");
	/* CSV: the same rows, same digits */
	csv = render(m, METRICS_CSV);
	cr_assert(strstr(csv, "\nvcpustat_vcpu_delay_seconds_total,web,0,,,,,,,,,,,,,,,,,,,,4.444444424\n"), "%.600s", csv);
	cr_assert(strstr(csv, "\nvcpustat_vcpu_wait_seconds_total,web,3,,,,,,,,,,,,,,,,,,,,0.000000000\n"), "%.600s", csv);
	free(csv);
	/* JSON: per vCPU and per VM */
	js = render(m, METRICS_JSON);
	doc = json_loads(js, 0, NULL);
	cr_assert_not_null(doc);
	vm = json_array_get(json_object_get(doc, "vms"), 0);
	v = json_array_get(json_object_get(vm, "vcpus"), 0);
	cr_assert_eq(json_real_value(json_object_get(v, "delay_seconds")), 4444444424.0 / 1e9);
	cr_assert_eq(json_real_value(json_object_get(v, "wait_seconds")), 4444444424.0 / 1e9);
	cr_assert_eq(json_real_value(json_object_get(vm, "delay_seconds")), 4444444424.0 / 1e9);
	cr_assert_eq(json_real_value(json_object_get(json_array_get(json_object_get(vm, "vcpus"), 1), "delay_seconds")),
		     0.0);
	json_decref(doc);
	free(js);
	prom_free(&d);
	prom_free(&o);
	free(text);
	free(om);
	assert_formats_agree(m);
	/* --no-vcpu-labels: one series per VM, the sum over its vCPUs */
	text = render(agg, METRICS_PROMETHEUS);
	prom_parse(text, &d);
	for (int f = 0; f < 2; f++) {
		cr_assert_str_eq(prom_find(&d, metric[f], "vm=\"web\"")->text, want0, "%s per VM", metric[f]);
		cr_assert_null(prom_find(&d, metric[f], "vm=\"web\",vcpu=\"0\""), "no vcpu label: %s", metric[f]);
	}
	prom_free(&d);
	free(text);
	metrics_free(m);
	metrics_free(agg);
}

/*
 * Halt polling: polls by result and the time of the failed ones per VM,
 * counted across windows; halt_poll_ns per vCPU as of its last window (per
 * VM the largest, without vCPU labels); the state poll among the seconds.
 * The exact lines of each format.
 */
Test(export, halt_poll_families_exact_in_every_format)
{
	struct metrics_opts with = { .top_culprits = 5 }, without = { .top_culprits = 5, .no_vcpu_labels = true };
	struct metrics *m = metrics_new(&with), *agg = metrics_new(&without);
	static const __u64 ok[2][2] = { { 3, 2 }, { 1, 0 } }, failed[2][2] = { { 1, 0 }, { 2, 0 } };
	static const __u64 fail_ns[2][2] = { { 1500000000ull, 0 }, { 250000001ull, 0 } };
	static const __u32 hpns[2][2] = { { 200000, 0 }, { 100000, 0 } };
	static const char *const prom_lines[] = {
		"# TYPE vcpustat_halt_polls_total counter\n",
		"\nvcpustat_halt_polls_total{vm=\"web\",result=\"ok\"} 6\n",
		"\nvcpustat_halt_polls_total{vm=\"web\",result=\"failed\"} 3\n",
		"# TYPE vcpustat_halt_poll_failed_seconds_total counter\n",
		"\nvcpustat_halt_poll_failed_seconds_total{vm=\"web\"} 1.750000001\n",
		"# TYPE vcpustat_vcpu_halt_poll_seconds gauge\n",
		"\nvcpustat_vcpu_halt_poll_seconds{vm=\"web\",vcpu=\"0\"} 0.000100000\n",
		"\nvcpustat_vcpu_halt_poll_seconds{vm=\"web\",vcpu=\"3\"} 0.000000000\n",
		"\nvcpustat_vcpu_seconds_total{vm=\"web\",vcpu=\"0\",state=\"poll\"} 0.000000016\n",
	};
	static const char *const om_lines[] = {
		"# TYPE vcpustat_halt_polls counter\n",
		"\nvcpustat_halt_polls_total{vm=\"web\",result=\"ok\"} 6\n",
		"# TYPE vcpustat_halt_poll_failed_seconds counter\n# UNIT vcpustat_halt_poll_failed_seconds seconds\n",
		"# TYPE vcpustat_vcpu_halt_poll_seconds gauge\n# UNIT vcpustat_vcpu_halt_poll_seconds seconds\n",
	};
	static const char *const csv_lines[] = {
		"\nvcpustat_halt_polls_total,web,,,,,,,,,,,,,,ok,,,,,,,6\n",
		"\nvcpustat_halt_polls_total,web,,,,,,,,,,,,,,failed,,,,,,,3\n",
		"\nvcpustat_halt_poll_failed_seconds_total,web,,,,,,,,,,,,,,,,,,,,,1.750000001\n",
		"\nvcpustat_vcpu_halt_poll_seconds,web,0,,,,,,,,,,,,,,,,,,,,0.000100000\n",
	};
	char *text, *om, *csv, *js;
	json_t *doc, *vm;

	for (int w = 0; w < 2; w++) {
		struct summary s = { .t0 = (__u64)w * 60000000000ull, .t1 = (__u64)(w + 1) * 60000000000ull };
		struct vm_summary *vmw = add_vm(&s, "web", 100);

		for (int c = 0; c < 2; c++) {
			struct vcpu_summary *vc = add_vcpu(vmw, c ? 3 : 0, 1);

			vc->polls_ok = ok[w][c];
			vc->polls_failed = failed[w][c];
			vc->poll_fail_ns = fail_ns[w][c];
			vc->halt_poll_ns = hpns[w][c];
			summary_add_polls(vmw, vc);
		}
		cr_assert_eq(metrics_add(m, &s), 0);
		cr_assert_eq(metrics_add(agg, &s), 0);
		summary_free(&s);
	}
	text = render(m, METRICS_PROMETHEUS);
	om = render(m, METRICS_OPENMETRICS);
	csv = render(m, METRICS_CSV);
	for (size_t i = 0; i < sizeof(prom_lines) / sizeof(prom_lines[0]); i++)
		cr_assert(strstr(text, prom_lines[i]), "Prometheus text has %s", prom_lines[i]);
	cr_assert(strstr(text, "# HELP vcpustat_halt_polls_total Halt polls of the VM's vCPUs that ended, by result"));
	for (size_t i = 0; i < sizeof(om_lines) / sizeof(om_lines[0]); i++)
		cr_assert(strstr(om, om_lines[i]), "OpenMetrics has %s", om_lines[i]);
	for (size_t i = 0; i < sizeof(csv_lines) / sizeof(csv_lines[0]); i++)
		cr_assert(strstr(csv, csv_lines[i]), "CSV has %s", csv_lines[i]);
	js = render(m, METRICS_JSON);
	doc = json_loads(js, 0, NULL);
	cr_assert_not_null(doc);
	vm = json_array_get(json_object_get(doc, "vms"), 0);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(vm, "halt_polls"), "ok")), 6);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(vm, "halt_polls"), "failed")), 3);
	cr_assert_float_eq(json_real_value(json_object_get(vm, "halt_poll_failed_seconds")), 1.750000001, 1e-12);
	cr_assert_float_eq(json_real_value(json_object_get(vm, "halt_poll_seconds")), 0.0001, 1e-15);
	cr_assert_float_eq(
		json_real_value(json_object_get(json_array_get(json_object_get(vm, "vcpus"), 0), "halt_poll_seconds")),
		0.0001, 1e-15);
	json_decref(doc);
	free(js);
	free(text);
	free(om);
	free(csv);
	assert_formats_agree(m);
	/* --no-vcpu-labels: the largest halt_poll_ns of the VM's vCPUs, the same per-VM counters */
	text = render(agg, METRICS_PROMETHEUS);
	cr_assert(strstr(text, "\nvcpustat_vcpu_halt_poll_seconds{vm=\"web\"} 0.000100000\n"), "%s", text);
	cr_assert(strstr(text, "\nvcpustat_halt_polls_total{vm=\"web\",result=\"ok\"} 6\n"));
	cr_assert_null(strstr(text, "vcpustat_vcpu_halt_poll_seconds{vm=\"web\",vcpu="));
	free(text);
	metrics_free(m);
	metrics_free(agg);
}

/*
 * vcpustat_tracepoint_attached: one series per tracepoint (two programs on
 * kvm:kvm_exit with --address-spaces), 0 when any program wanted on it is
 * not attached, and no series for programs not wanted; the JSON's
 * "tracepoints" agrees.
 */
Test(export, tracepoint_attached_once_per_tracepoint_and_only_what_was_wanted)
{
	struct metrics_opts o = { 0 };
	struct vcpustat_prog progs[] = {
		{ .name = "on_sched_switch", .tracepoint = "sched:sched_switch", .status = VCPUSTAT_PROG_ATTACHED },
		{ .name = "on_kvm_exit", .tracepoint = "kvm:kvm_exit", .status = VCPUSTAT_PROG_ATTACHED },
		{ .name = "on_kvm_exit_cr3", .tracepoint = "kvm:kvm_exit", .status = VCPUSTAT_PROG_OFF },
		{ .name = "on_kvm_pio", .tracepoint = "kvm:kvm_pio", .status = VCPUSTAT_PROG_OFF },
		{ .name = "on_kvm_vcpu_halt", .tracepoint = "fentry:kvm_vcpu_halt", .status = VCPUSTAT_PROG_FAILED },
		{ .name = "on_kvm_msr", .tracepoint = "kvm:kvm_msr", .status = VCPUSTAT_PROG_MISSING },
	};
	const char *want[][2] = { { "sched:sched_switch", "1" },
				  { "kvm:kvm_exit", "1" },
				  { "fentry:kvm_vcpu_halt", "0" },
				  { "kvm:kvm_msr", "0" } };

	for (int pass = 0; pass < 2; pass++) {
		struct metrics *m = metrics_new(&o);
		struct summary s = { .t0 = 0, .t1 = 1000000000ull };
		char *text, *js, line[160];
		json_t *doc, *tp;
		const char *p;
		size_t n = 0;

		if (pass) /* --address-spaces asked, and its program refused: kvm:kvm_exit is not all there */
			progs[2].status = VCPUSTAT_PROG_FAILED;
		add_vcpu(add_vm(&s, "web1", 5), 0, 1000);
		metrics_set_programs(m, progs, sizeof(progs) / sizeof(progs[0]));
		cr_assert_eq(metrics_add(m, &s), 0);
		summary_free(&s);
		text = render(m, METRICS_PROMETHEUS);
		for (p = strstr(text, "\nvcpustat_tracepoint_attached{"); p;
		     p = strstr(p + 1, "\nvcpustat_tracepoint_attached{"))
			n++;
		cr_assert_eq(n, 4, "one series per wanted tracepoint, not %zu:\n%s", n, text);
		js = render(m, METRICS_JSON);
		doc = json_loads(js, 0, NULL);
		tp = json_object_get(doc, "tracepoints");
		cr_assert_eq(json_object_size(tp), 4, "%s", js);
		for (size_t i = 0; i < 4; i++) {
			const char *v = pass && i == 1 ? "0" : want[i][1];

			snprintf(line, sizeof(line), "\nvcpustat_tracepoint_attached{tracepoint=\"%s\"} %s\n", want[i][0], v);
			cr_assert(strstr(text, line), "%s expected in:\n%s", line + 1, text);
			cr_assert_eq(json_integer_value(json_object_get(tp, want[i][0])), atoi(v), "JSON %s", want[i][0]);
		}
		json_decref(doc);
		free(js);
		free(text);
		metrics_free(m);
	}
}

/*
 * vcpustat_vm_info: one series per VM, its VMM's cgroup (escaped: libvirt's
 * "\x2d") and, where the runtime's bundle names them, its pod and container;
 * promtool accepts it; the CSV leaves it out, as build_info.
 */
Test(export, vm_info_names_the_cgroup_and_the_kubernetes_pod)
{
#define VI_CID "dd2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
#define VI_UID "6b1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"
	static const char pod_cg[] = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
				     "6b1e2f3a_4b5c_6d7e_8f90_a1b2c3d4e5f6.slice/cri-containerd-" VI_CID ".scope";
	char run[] = "/tmp/vcpustat-run-XXXXXX", cmd[1024], out[8192], *text;
	struct metrics_opts o = { 0 };
	struct metrics *m = metrics_new(&o);
	struct summary s = { .t0 = 0, .t1 = 1000000000ull };
	struct vm_summary *web, *db;

	cr_assert_not_null(mkdtemp(run));
	snprintf(cmd, sizeof(cmd),
		 "d='%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s' && mkdir -p \"$d\" && printf '%%s' "
		 "'{\"annotations\": {\"io.kubernetes.cri.container-name\": \"compute\", \"io.kubernetes.cri.sandbox-name\": "
		 "\"virt-launcher-web1-x7k2p\", \"io.kubernetes.cri.sandbox-namespace\": \"prod\"}}' > \"$d/config.json\"",
		 run, VI_CID);
	cr_assert_eq(system(cmd), 0);
	setenv("VCPUSTAT_RUN_DIR", run, 1);
	web = add_vm(&s, "web1", 5);
	snprintf(web->cgroup, sizeof(web->cgroup), "%s", pod_cg);
	add_vcpu(web, 0, 1000);
	db = add_vm(&s, "db", 6);
	snprintf(db->cgroup, sizeof(db->cgroup), "/machine.slice/machine-qemu\\x2d1\\x2ddb.scope");
	add_vcpu(db, 0, 1000);
	add_vcpu(add_vm(&s, "bare", 7), 0, 1000);
	cr_assert_eq(metrics_add(m, &s), 0);
	unsetenv("VCPUSTAT_RUN_DIR");
	summary_free(&s);
	text = render(m, METRICS_PROMETHEUS);
	cr_assert(strstr(text, "\nvcpustat_vm_info{vm=\"web1\",cgroup=\"" ) &&
			  strstr(text, "\",pod=\"" VI_UID "\",pod_name=\"virt-launcher-web1-x7k2p\",namespace=\"prod\","
				       "container=\"compute\"} 1\n"),
		  "%s", text);
	cr_assert(strstr(text, "\nvcpustat_vm_info{vm=\"db\",cgroup=\"/machine.slice/machine-qemu\\\\x2d1\\\\x2ddb.scope\"} 1\n"),
		  "libvirt's \\x2d escaped: %s", text);
	cr_assert(strstr(text, "\nvcpustat_vm_info{vm=\"bare\"} 1\n"), "a VM without a cgroup: %s", text);
	if (!system("command -v promtool > /dev/null 2>&1"))
		cr_assert_eq(promtool_check_metrics(text, out, sizeof(out)), 0, "promtool: %s", out);
	free(text);
	text = render(m, METRICS_CSV);
	cr_assert_null(strstr(text, "vcpustat_vm_info"), "no info metric in the CSV");
	free(text);
	text = render(m, METRICS_JSON);
	{
		json_t *doc = json_loads(text, 0, NULL), *vm;
		size_t i;
		int seen = 0;

		cr_assert_not_null(doc, "%s", text);
		json_array_foreach(json_object_get(doc, "vms"), i, vm) {
			const char *name = json_string_value(json_object_get(vm, "vm"));

			if (!strcmp(name, "web1")) {
				cr_assert_str_eq(json_string_value(json_object_get(vm, "pod_name")), "virt-launcher-web1-x7k2p");
				cr_assert_str_eq(json_string_value(json_object_get(vm, "container")), "compute");
				seen++;
			} else if (!strcmp(name, "bare")) {
				cr_assert_null(json_object_get(vm, "cgroup"), "not known: left out");
				seen++;
			}
		}
		cr_assert_eq(seen, 2, "%s", text);
		json_decref(doc);
	}
	free(text);
	metrics_free(m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run);
	cr_assert_eq(system(cmd), 0);
	scratch_remove();
}

/*
 * Prometheus's own linter accepts the text exposition of a state with every
 * family (states, the fleet names, counters, the three histograms, culprits
 * and other, lost records), with and without vCPU labels.
 */
Test(export, prometheus_text_passes_promtool_check_metrics)
{
	struct metrics_opts opts[] = { { .top_culprits = 1 }, { .top_culprits = 1, .no_vcpu_labels = true } };
	char out[8192];

	if (system("command -v promtool > /dev/null 2>&1"))
		cr_skip_test("promtool is not installed (Debian package prometheus; tools/deps.sh installs it)");
	for (size_t i = 0; i < 2; i++) {
		struct metrics *m = metrics_new(&opts[i]);
		struct summary s = { .t0 = 0, .t1 = 2000000000ull };
		struct vm_summary *vm = add_vm(&s, "web1", 5);
		struct latency_summary *l = add_uexit(vm, "IO");
		char *text;

		add_vcpu(vm, 0, 123456789);
		add_vcpu(vm, 1, 1000);
		l->bucket[100] = 4;
		l->count = 4;
		vm->runq.bucket[120] = 2;
		vm->runq.count = 2;
		add_culprit(vm, "stress-ng", "stress-ng-cpu", 5000);
		add_culprit(vm, "kworker", "kworker/0:1", 10);
		cr_assert_eq(metrics_add(m, &s), 0);
		summary_free(&s);
		text = render(m, METRICS_PROMETHEUS);
		cr_assert(strstr(text, "vcpustat_vcpu_delay_seconds_total{vm=\"web1\""), "%.300s", text);
		cr_assert_eq(promtool_check_metrics(text, out, sizeof(out)), 0,
			     "promtool check metrics refused the exposition (%s vCPU labels):\n%s", i ? "without" : "with",
			     out);
		free(text);
		metrics_free(m);
	}
	scratch_remove();
}

/* Prometheus asks for OpenMetrics first; curl and browsers get the text format. */
Test(export, accept_header_negotiation)
{
	cr_assert_eq(httpd_negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
				     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
		     METRICS_OPENMETRICS);
	cr_assert_eq(httpd_negotiate("application/openmetrics-text"), METRICS_OPENMETRICS);
	cr_assert_eq(httpd_negotiate(NULL), METRICS_PROMETHEUS);
	cr_assert_eq(httpd_negotiate("*/*"), METRICS_PROMETHEUS);
	cr_assert_eq(httpd_negotiate("text/plain;version=0.0.4"), METRICS_PROMETHEUS);
	cr_assert_eq(httpd_negotiate("text/html,application/xhtml+xml,*/*;q=0.8"), METRICS_PROMETHEUS);
	cr_assert_eq(httpd_negotiate("text/plain, application/openmetrics-text;q=0.5"), METRICS_PROMETHEUS);
	cr_assert_eq(httpd_negotiate("application/openmetrics-text;q=0"), METRICS_PROMETHEUS);
	cr_assert_eq(httpd_negotiate("text/plain;q=0.3, application/openmetrics-text;q=0.9"), METRICS_OPENMETRICS);
}

static size_t entries(const char *dir)
{
	char cmd[256];
	FILE *p;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	p = popen(cmd, "r");
	cr_assert_eq(fscanf(p, "%zu", &n), 1);
	pclose(p);
	return n;
}

/* Atomic writes: complete or absent; non-regular targets written in place, never replaced. */
Test(export, output_files_are_atomic_and_spare_non_regular_targets)
{
	char dir[] = "/tmp/vcpustat-outfile-XXXXXX", path[256], bad[256], buf[64];
	struct vcpustat_error err = { 0 };
	struct stat st;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.prom", dir);
	cr_assert_eq(outfile_check(path, 0, &err), 0, "%s", err.msg);
	cr_assert_eq(entries(dir), 0, "the check leaves nothing behind");
	cr_assert_eq(outfile_write(path, "one\n", 4, &err), 0, "%s", err.msg);
	cr_assert_eq(outfile_write(path, "two\n", 4, &err), 0, "%s", err.msg);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "readable by a collector running as another user");
	f = fopen(path, "r");
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_assert_str_eq(buf, "two\n");
	cr_assert_eq(entries(dir), 1, "no temporary file left");
	/* a null device stays a device (a private one, never the host's /dev; more in test_outfile.c) */
	if (!geteuid()) {
		snprintf(bad, sizeof(bad), "%s/null", dir);
		cr_assert_eq(mknod(bad, S_IFCHR | 0666, makedev(1, 3)), 0, "%s", strerror(errno));
		cr_assert_eq(outfile_write(bad, "x", 1, &err), 0, "%s", err.msg);
		cr_assert_eq(stat(bad, &st), 0);
		cr_assert(S_ISCHR(st.st_mode));
		unlink(bad);
	}
	/* errors name the path */
	snprintf(bad, sizeof(bad), "%s/missing/x.prom", dir);
	cr_assert_eq(outfile_check(bad, 0, &err), -ENOENT);
	cr_assert(strstr(err.msg, bad), "%s", err.msg);
	cr_assert_neq(outfile_write(bad, "x", 1, &err), 0);
	cr_assert_eq(outfile_check(dir, 0, &err), -EISDIR, "%s", err.msg);
	unlink(path);
	rmdir(dir);
}

/* ---- on the real maps, through the injection program ---- */

static void inject(struct vcpustat *vs, __u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2,
		   __u32 tgid2, __u64 a0, __u64 a1, const char *comm)
{
	struct vcpustat_event ev = { .type = type, .ts = ts, .cpu = cpu, .tid = tid, .tgid = tgid, .tid2 = tid2,
				     .tgid2 = tgid2, .arg0 = a0, .arg1 = a1 };

	snprintf(ev.comm, sizeof(ev.comm), "%s", comm);
	cr_assert_eq(vcpustat_inject(vs, &ev), 0);
}

/*
 * Two VMs x 2 vCPUs made by injected events (userspace exits of two
 * reasons, preemptions by the other VM): the exposition of the real maps is
 * consistent in all four formats, its histograms are cumulative, and every
 * vCPU's state seconds add up to the time since it was first seen.
 */
Test(export, formats_agree_on_the_maps_filled_by_injection)
{
	struct vcpustat_options opts = { .max_vcpus = 64, .max_vms = 16, .max_hists = 64 };
	struct metrics_opts mo = { .top_culprits = 5 };
	struct metrics_live live;
	struct vcpustat *vs;
	struct prom_doc d;
	__u64 ts = vcpustat_now_ns() - 50000000ull, first = ts;
	char *text;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_eq(vcpustat_open(&vs, &opts), 0);
	for (int round = 0; round < 20; round++)
		for (__u32 m = 0; m < 2; m++)
			for (__u32 c = 0; c < 2; c++) {
				__u32 tgid = 4000000 + m * 100, tid = tgid + 1 + c, hog = 4000500;
				char comm[16];

				snprintf(comm, sizeof(comm), "CPU %u/KVM", c);
				inject(vs, VCPUSTAT_EV_USERSPACE_EXIT, ts += 1000, c, tid, tgid, 0, 0, 2 /* IO */, 0, comm);
				inject(vs, VCPUSTAT_EV_KVM_RUN, ts += 2000 + 100 * c, c, tid, tgid, 0, 0, 0, 0, comm);
				inject(vs, VCPUSTAT_EV_USERSPACE_EXIT, ts += 1000, c, tid, tgid, 0, 0, 5 /* HLT */, 0, comm);
				inject(vs, VCPUSTAT_EV_KVM_RUN, ts += 30000, c, tid, tgid, 0, 0, 0, 0, comm);
				/* preempted by a host thread, then back */
				inject(vs, VCPUSTAT_EV_SWITCH, ts += 100, c, tid, tgid, hog, hog, 0, 1, comm);
				inject(vs, VCPUSTAT_EV_SWITCH, ts += 5000, c, hog, hog, tid, tgid, 0, 1, "hog");
			}
	cr_assert_lt(ts, vcpustat_now_ns());
	cr_assert_eq(metrics_live_init(&live, vs, &mo, NULL), 0);
	cr_assert_eq(metrics_live_sample(&live), 0);
	assert_formats_agree(live.m);
	text = render(live.m, METRICS_PROMETHEUS);
	prom_parse(text, &d);
	cr_assert_eq(prom_check_histograms(&d), 2 * 3, "per VM: IO and HLT exits, run-queue waits");
	for (int m = 0; m < 2; m++) {
		char vm[32], labels[128];

		snprintf(vm, sizeof(vm), "pid %u", 4000000 + m * 100);
		snprintf(labels, sizeof(labels), "vm=\"%s\",reason=\"IO\"", vm);
		cr_assert_eq(prom_value(&d, "vcpustat_userspace_exit_duration_seconds_count", labels), 40);
		for (int c = 0; c < 2; c++) {
			double sum = 0;

			for (unsigned int st = 0; st < VCPU_NR_STATES; st++) {
				snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%d\",state=\"%s\"", vm, c,
					 vcpu_state_name(st));
				sum += prom_value(&d, "vcpustat_vcpu_seconds_total", labels);
			}
			/* first seen at its first event (>= first), observed until the sample */
			cr_assert_leq(sum, (double)(live.last_sample - first) / 1e9 + 1e-9);
			cr_assert_geq(sum, (double)(live.last_sample - ts) / 1e9);
			snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%d\"", vm, c);
			cr_assert_eq(prom_value(&d, "vcpustat_vcpu_preemptions_total", labels), 20);
		}
	}
	prom_free(&d);
	free(text);
	metrics_live_free(&live);
	vcpustat_close(vs);
}

/* vcpustat_map_reads_total in a scrape of h (curl). */
static double scrape_map_reads(struct httpd *h)
{
	static char text[1 << 16];
	char cmd[256];
	struct prom_doc d;
	double v;

	snprintf(cmd, sizeof(cmd), "curl -sf http://%s/metrics", httpd_address(h));
	cr_assert_eq(run_shell(cmd, text, sizeof(text)), 0, "%s: %s", cmd, text);
	prom_parse(text, &d);
	v = prom_value(&d, "vcpustat_map_reads_total", "");
	prom_free(&d);
	return v;
}

/*
 * vcpustat_map_reads_total counts the reads of the maps behind the served
 * counters: scrapes and refreshes within cache_ms of the last read are
 * answered from it and read nothing (bench/scrape-storm.sh relies on it to
 * show one read per cache interval under 100 connections); with the cache
 * off, each of them reads. Scraped over HTTP with curl from the exporter's
 * own server.
 */
Test(export, map_reads_total_counts_one_read_per_cache_interval)
{
	static const unsigned int cache_ms[] = { 600000, 0 };
	struct vcpustat_options opts = { .max_vcpus = 64, .max_vms = 16, .max_hists = 64 };
	struct metrics_opts mo = { .top_culprits = 5 };
	struct vcpustat *vs;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_eq(vcpustat_open(&vs, &opts), 0);
	for (size_t c = 0; c < 2; c++) {
		struct httpd_opts ho = { .cache_ms = cache_ms[c] };
		struct vcpustat_error err = { 0 };
		struct metrics_live live;
		struct httpd_source src;
		struct httpd *h;
		int fd;

		cr_assert_eq(metrics_live_init(&live, vs, &mo, NULL), 0);
		cr_assert_eq(httpd_listen("127.0.0.1:0", &fd, &err), 0, "%s", err.msg);
		src = metrics_live_source(&live);
		cr_assert_eq(httpd_start(&h, fd, &src, &ho, &err), 0, "%s", err.msg);
		for (int i = 1; i <= 5; i++)
			cr_assert_eq(scrape_map_reads(h), cache_ms[c] ? 1 : i, "cache %u ms, scrape %d", cache_ms[c], i);
		cr_assert_eq(httpd_refresh(h), 0);
		cr_assert_eq(scrape_map_reads(h), cache_ms[c] ? 1 : 7, "cache %u ms: after a refresh", cache_ms[c]);
		httpd_stop(h);
		metrics_live_free(&live);
	}
	vcpustat_close(vs);
}
