// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Exit details (kvm_pio, kvm_mmio, kvm_msr, kvm_page_fault): the rows the
 * handler keeps, exact, through user-space replay and through the kernel's
 * injection program; the full-table "other" row and its loss counter; the
 * window model's tables, JSON and text.
 */
#include <criterion/criterion.h>
#include <bpf/bpf.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_run.h"
#include "exit_reasons.h"
#include "helpers.h"
#include "live/live.h"
#include "export/export.h"
#include "model/summary.h"
#include "model/report.h"
#include "record/record.h"
#include "sht/sht.h"

#define VM 50
#define TID 51
/* VMX basic exit reasons (Intel SDM vol. 3, appendix C) */
#define EXIT_IO 30
#define EXIT_MSR_READ 31
#define EXIT_EPT_VIOLATION 48

/* One event of vCPU TID (VM VM), named as KVM names vCPU threads. */
static struct vcpustat_event ev(__u64 type, __u64 ts, __u64 a0, __u64 a1, __u64 a2)
{
	struct vcpustat_event e = { .type = type, .ts = ts, .tid = TID, .tgid = VM, .arg0 = a0, .arg1 = a1, .arg2 = a2 };

	snprintf(e.comm, sizeof(e.comm), "CPU 0/KVM");
	return e;
}

#define KVM_ENTRY(ts) ev(VCPUSTAT_EV_KVM_ENTRY, ts, 0, 0, 0)
#define KVM_EXIT(ts, reason) ev(VCPUSTAT_EV_KVM_EXIT, ts, reason, KVM_ISA_VMX, 0)

/*
 * The scenario (ns):
 *   100  entry
 *   200  exit IO_INSTRUCTION, 210 pio out 0x3f8               500 entry: 0x3f8 write, 300 ns
 *   600  exit EPT_VIOLATION, 610 page fault at 0x10008 (write),
 *        620 mmio 0x10008 read unsatisfied, 630 userspace exit MMIO,
 *        700 KVM_RUN, 710 mmio 0x10008 read (the value)      1000 entry: mmio 0x10008 read and
 *                                                                   page 0x10000 write, 400 ns each
 *   1100 exit MSR_WRITE, 1110 msr write 0x6e0                 1150 entry: 50 ns
 *   1160 msr read 0x10: after the entry, in guest mode: not an exit's, ignored
 *   1200 exit MSR_WRITE, 1210 msr write 0x6e0                 1300 entry: 100 ns (count 2, sum 150, max 100)
 *   1400 exit EPT_VIOLATION, 1410 page fault at 0x7f123 (fetch) 1425 entry: page 0x7f000 fetch, 25 ns
 *   1500 exit IO_INSTRUCTION, 1510 pio in 0x60, then the thread exits at 1600 (its exit is closed there)
 * and a thread that is no vCPU (tid 999) traces a pio: ignored.
 */
static size_t scenario(struct vcpustat_event *out)
{
	struct vcpustat_event s[] = {
		KVM_ENTRY(100),
		KVM_EXIT(200, EXIT_IO),
		ev(VCPUSTAT_EV_PIO, 210, 0x3f8, 1, 1),
		KVM_ENTRY(500),
		KVM_EXIT(600, EXIT_EPT_VIOLATION),
		ev(VCPUSTAT_EV_PAGE_FAULT, 610, 0x10008, 0x2, 0),
		ev(VCPUSTAT_EV_MMIO, 620, 0x10008, 0, 4),
		ev(VCPUSTAT_EV_USERSPACE_EXIT, 630, KVM_UEXIT_MMIO, 0, 0),
		ev(VCPUSTAT_EV_KVM_RUN, 700, 0, 0, 0),
		ev(VCPUSTAT_EV_MMIO, 710, 0x10008, 1, 4),
		KVM_ENTRY(1000),
		KVM_EXIT(1100, VMX_EXIT_MSR_WRITE),
		ev(VCPUSTAT_EV_MSR, 1110, 0x6e0, 1, 0),
		KVM_ENTRY(1150),
		ev(VCPUSTAT_EV_MSR, 1160, 0x10, 0, 0),
		KVM_EXIT(1200, VMX_EXIT_MSR_WRITE),
		ev(VCPUSTAT_EV_MSR, 1210, 0x6e0, 1, 0),
		KVM_ENTRY(1300),
		KVM_EXIT(1400, EXIT_EPT_VIOLATION),
		ev(VCPUSTAT_EV_PAGE_FAULT, 1410, 0x7f123, 0x14, 0),
		KVM_ENTRY(1425),
		KVM_EXIT(1500, EXIT_IO),
		ev(VCPUSTAT_EV_PIO, 1510, 0x60, 0, 1),
		ev(VCPUSTAT_EV_PROCESS_EXIT, 1600, 0, 0, 0),
	};
	struct vcpustat_event stranger = ev(VCPUSTAT_EV_PIO, 1700, 0x70, 1, 1);
	size_t n = sizeof(s) / sizeof(s[0]);

	stranger.tid = 999;
	stranger.tgid = 999;
	memcpy(out, s, sizeof(s));
	out[n] = stranger;
	return n + 1;
}

struct want {
	__u8 kind, access;
	__u64 addr, count, sum_ns, max_ns;
};

static const struct want scenario_rows[] = {
	{ VCPUSTAT_DETAIL_PIO, VCPUSTAT_ACCESS_WRITE, 0x3f8, 1, 300, 300 },
	{ VCPUSTAT_DETAIL_PIO, VCPUSTAT_ACCESS_READ, 0x60, 1, 100, 100 },
	{ VCPUSTAT_DETAIL_MMIO, VCPUSTAT_ACCESS_READ, 0x10008, 1, 400, 400 },
	{ VCPUSTAT_DETAIL_MSR, VCPUSTAT_ACCESS_WRITE, 0x6e0, 2, 150, 100 },
	{ VCPUSTAT_DETAIL_PAGE_FAULT, VCPUSTAT_ACCESS_WRITE, 0x10000, 1, 400, 400 },
	{ VCPUSTAT_DETAIL_PAGE_FAULT, VCPUSTAT_ACCESS_FETCH, 0x7f000, 1, 25, 25 },
};
#define NR_SCENARIO_ROWS (sizeof(scenario_rows) / sizeof(scenario_rows[0]))

static const struct vcpustat_detail_entry *find_row(const struct vcpustat_snapshot *s, __u32 tgid, __u8 kind,
						    __u8 access, __u64 addr)
{
	for (size_t i = 0; i < s->nr_details; i++) {
		const struct vcpustat_detail_key *k = &s->details[i].key;

		if (k->tgid == tgid && k->kind == kind && k->access == access && k->addr == addr)
			return &s->details[i];
	}
	return NULL;
}

/* The snapshot holds exactly the scenario's rows, with their exact counts and times. */
static void assert_scenario_rows(const struct vcpustat_snapshot *s, const char *src)
{
	size_t counted = 0;

	for (size_t i = 0; i < s->nr_details; i++) {
		if (s->details[i].key.addr == VCPUSTAT_DETAIL_OTHER)
			cr_assert_eq(s->details[i].detail.count, 0, "%s: nothing in an \"other\" row", src);
		else
			counted++;
	}
	cr_assert_eq(counted, NR_SCENARIO_ROWS, "%s: %zu rows", src, counted);
	cr_assert_eq(s->nr_details, 2 * NR_SCENARIO_ROWS, "%s: each row's (kind, access) has its \"other\" row",
		     src);
	for (size_t i = 0; i < NR_SCENARIO_ROWS; i++) {
		const struct want *w = &scenario_rows[i];
		const struct vcpustat_detail_entry *e = find_row(s, VM, w->kind, w->access, w->addr);

		cr_assert_not_null(e, "%s: row %s %s 0x%llx", src, detail_kind_name(w->kind), detail_access_name(w->access),
				   (unsigned long long)w->addr);
		cr_assert_eq(e->detail.count, w->count, "%s: %s 0x%llx count", src, detail_kind_name(w->kind),
			     (unsigned long long)w->addr);
		cr_assert_eq(e->detail.sum_ns, w->sum_ns, "%s: %s 0x%llx sum", src, detail_kind_name(w->kind),
			     (unsigned long long)w->addr);
		cr_assert_eq(e->detail.max_ns, w->max_ns, "%s: %s 0x%llx max", src, detail_kind_name(w->kind),
			     (unsigned long long)w->addr);
	}
	cr_assert_eq(s->lost[VCPUSTAT_LOST_DETAIL_FULL], 0, "%s: nothing lost", src);
}

Test(details, each_exit_is_counted_once_per_table_with_its_handling_time)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct replay *rp = replay_events(evs, scenario(evs), 0);

	cr_assert_eq(replay_snapshot(rp, &snap), 0);
	assert_scenario_rows(&snap, "replay");
	vcpustat_snapshot_free(&snap);
	replay_free(rp);
}

Test(details, the_kernel_keeps_the_same_rows_as_replay)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;

	SKIP_UNLESS(bpf_unavailable());
	vs = inject_events(evs, scenario(evs), false, &snap);
	assert_scenario_rows(&snap, "kernel");
	vcpustat_snapshot_free(&snap);
	/* a reaped VM leaves no rows behind */
	cr_assert_eq(vcpustat_reap_vm(vs, VM), 0);
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(snap.nr_details, 0, "the VM's rows went with it");
	vcpustat_snapshot_free(&snap);
	vcpustat_close(vs);
}

/* n MSR-read exits of 10 ns each, on MSRs first .. first + n - 1. */
static size_t msr_exits(struct vcpustat_event *out, __u64 t, __u32 first, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++, t += 100) {
		out[k++] = KVM_EXIT(t, EXIT_MSR_READ);
		out[k++] = ev(VCPUSTAT_EV_MSR, t + 1, first + i, 0, 0);
		out[k++] = KVM_ENTRY(t + 10);
	}
	return k;
}

/*
 * A table of 3 rows: 2 MSRs get rows, the third takes the (VM, msr, read)
 * "other" row, and everything after it goes there too. A write of a new
 * MSR finds no room for its own "other" row either: lost, and counted.
 */
Test(details, a_full_table_counts_new_keys_in_other_and_then_loses_them_counted)
{
	struct vcpustat_event evs[64];
	struct vcpustat_snapshot snap;
	const struct vcpustat_detail_entry *e;
	struct replay *rp;
	size_t n = 0;

	evs[n++] = KVM_ENTRY(10);
	n += msr_exits(evs + n, 100, 0x800, 5);
	evs[n++] = KVM_EXIT(1000, VMX_EXIT_MSR_WRITE);
	evs[n++] = ev(VCPUSTAT_EV_MSR, 1001, 0x900, 1, 0);
	evs[n++] = KVM_ENTRY(1010);
	rp = replay_events(evs, n, 3);
	cr_assert_eq(replay_snapshot(rp, &snap), 0);
	cr_assert_eq(snap.nr_details, 3, "0x800, 0x801 and the other row made before them");
	cr_assert_not_null(find_row(&snap, VM, VCPUSTAT_DETAIL_MSR, VCPUSTAT_ACCESS_READ, 0x800));
	cr_assert_not_null(find_row(&snap, VM, VCPUSTAT_DETAIL_MSR, VCPUSTAT_ACCESS_READ, 0x801));
	e = find_row(&snap, VM, VCPUSTAT_DETAIL_MSR, VCPUSTAT_ACCESS_READ, VCPUSTAT_DETAIL_OTHER);
	cr_assert_not_null(e, "the other row");
	cr_assert_eq(e->detail.count, 3, "0x802, 0x803, 0x804");
	cr_assert_eq(e->detail.sum_ns, 30);
	cr_assert_eq(snap.lost[VCPUSTAT_LOST_DETAIL_FULL], 1, "the write had no room at all");
	vcpustat_snapshot_free(&snap);
	replay_free(rp);
}

/* The window model: two snapshots, the rows counted between them, as JSON and as text. */
Test(details, the_window_shows_what_happened_in_it_as_json_and_text)
{
	struct vcpustat_event evs[64];
	struct vcpustat_snapshot a, b;
	struct summary s;
	struct names names;
	struct replay *rp;
	json_t *doc, *det, *row;
	char *text = NULL;
	size_t n = 0, len = 0;
	FILE *f;

	evs[n++] = KVM_ENTRY(10);
	n += msr_exits(evs + n, 100, 0xc0000080, 1); /* EFER, before the window */
	rp = replay_events(evs, n, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	n = msr_exits(evs, 1000, 0xc0000080, 1);
	n += msr_exits(evs + n, 2000, 0x12345678, 1);
	evs[n++] = KVM_EXIT(3000, EXIT_IO);
	evs[n++] = ev(VCPUSTAT_EV_PIO, 3001, 0x3f8, 1, 1);
	evs[n++] = KVM_ENTRY(3500);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	a.ts = 1000;
	b.ts = 1000 + 1000000000ull; /* a window of 1 s: rates are counts */
	cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
	cr_assert_eq(summary_build(&s, &a, &b, &names, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].nr_details, 3, "EFER, 0x12345678 and port 0x3f8 in the window");
	cr_assert_eq(s.vms[0].details[0].kind, VCPUSTAT_DETAIL_PIO, "by kind: ports first");

	doc = summary_json_checked(&s);
	det = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "exit_details");
	cr_assert(json_is_array(det));
	cr_assert_eq(json_array_size(det), 3);
	row = json_array_get(det, 1);
	cr_assert_str_eq(json_string_value(json_object_get(row, "kind")), "msr");
	cr_assert_str_eq(json_string_value(json_object_get(row, "target")), "0x12345678");
	cr_assert_null(json_object_get(row, "name"), "an MSR without a known name has none");
	row = json_array_get(det, 2);
	cr_assert_str_eq(json_string_value(json_object_get(row, "target")), "0xc0000080");
	cr_assert_str_eq(json_string_value(json_object_get(row, "name")), "EFER");
	cr_assert_str_eq(json_string_value(json_object_get(row, "access")), "read");
	cr_assert_eq(json_integer_value(json_object_get(row, "count")), 1, "one in the window");
	cr_assert_eq(json_integer_value(json_object_get(row, "count_total")), 2, "two since the start");
	cr_assert_eq(json_integer_value(json_object_get(row, "sum_ns")), 10);
	cr_assert_float_eq(json_real_value(json_object_get(row, "rate")), 1.0, 1e-9);
	json_decref(doc);

	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	cr_assert_not_null(strstr(text, "I/O PORT"), "%s", text);
	cr_assert_not_null(strstr(text, "0xc0000080 EFER"), "%s", text);
	cr_assert_not_null(strstr(text, "0x3f8"), "%s", text);
	cr_assert_not_null(strstr(text, "500ns"), "the port write's exit took 500 ns:\n%s", text);
	free(text);
	{
		/* plot: a bar per row, its tooltip naming it, the MSR by name */
		struct plot_doc pd = { .s = &s, .seconds = s.seconds, .window = "test", .source = "replay" };
		char *svg;

		cr_assert_eq(plot_svg(&pd, &svg, &len), 0);
		cr_assert_not_null(strstr(svg, "What the exits accessed"), "%s", svg);
		cr_assert_not_null(strstr(svg, "<title>pio 0x3f8 write: 1 exits, 500 ns in all</title>"), "%s", svg);
		cr_assert_not_null(strstr(svg, ">EFER read</text>"), "%s", svg);
		cr_assert_not_null(strstr(svg, ">0x12345678 read</text>"), "%s", svg);
		free(svg);
	}
	summary_free(&s);
	names_free(&names);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	replay_free(rp);
}

/*
 * The exporters: counters since the start, row by row; with top_details 1,
 * the busiest MSR of the VM keeps its series and the other goes to "other"
 * (msr, read), whose count carries on from there: every series only grows.
 */
Test(details, exporters_publish_the_top_rows_per_kind_and_the_rest_as_other)
{
	struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS, .top_details = 1 };
	struct vcpustat_event evs[64];
	struct vcpustat_snapshot a, b, c;
	struct metrics *m = metrics_new(&mo);
	struct summary s;
	struct names names;
	struct replay *rp;
	char *text, *json_text;
	json_t *doc, *det;
	size_t n = 0, len;

	cr_assert_not_null(m);
	cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
	evs[n++] = KVM_ENTRY(10);
	rp = replay_events(evs, n, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	/* window 1: EFER read twice (10 ns each), MSR 0x1b read once */
	n = msr_exits(evs, 100, 0xc0000080, 1);
	n += msr_exits(evs + n, 200, 0xc0000080, 1);
	n += msr_exits(evs + n, 300, 0x1b, 1);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	a.ts = 1;
	b.ts = 1 + 1000000000ull;
	cr_assert_eq(summary_build(&s, &a, &b, &names, NULL), 0);
	cr_assert_eq(metrics_add(m, &s), 0);
	summary_free(&s);
	/* window 2: 0x1b three times: 4 in all, now the busiest: it takes the one name */
	n = msr_exits(evs, 1000, 0x1b, 1);
	n += msr_exits(evs + n, 1100, 0x1b, 1);
	n += msr_exits(evs + n, 1200, 0x1b, 1);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	cr_assert_eq(replay_snapshot(rp, &c), 0);
	c.ts = b.ts + 1000000000ull;
	cr_assert_eq(summary_build(&s, &b, &c, &names, NULL), 0);
	cr_assert_eq(metrics_add(m, &s), 0);
	summary_free(&s);

	cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &text, &len), 0);
	/* EFER: named in window 1 (2 exits); in window 2 0x1b (4 in all) took the one name */
	cr_assert_not_null(strstr(text, "vcpustat_exit_detail_total{vm=\"pid 50\",kind=\"msr\",target=\"0xc0000080\","
					"access=\"read\",msr=\"EFER\"} 2\n"), "%s", text);
	cr_assert_not_null(strstr(text, "vcpustat_exit_detail_total{vm=\"pid 50\",kind=\"msr\",target=\"0x1b\","
					"access=\"read\",msr=\"APIC_BASE\"} 3\n"), "%s", text);
	cr_assert_not_null(strstr(text, "vcpustat_exit_detail_total{vm=\"pid 50\",kind=\"msr\",target=\"other\","
					"access=\"read\"} 1\n"), "0x1b's window-1 exit stays in other: %s", text);
	cr_assert_not_null(strstr(text, "vcpustat_exit_detail_seconds_total{vm=\"pid 50\",kind=\"msr\",target=\"0x1b\","
					"access=\"read\",msr=\"APIC_BASE\"} 0.000000030\n"), "%s", text);
	free(text);
	cr_assert_eq(metrics_render(m, METRICS_JSON, &json_text, &len), 0);
	expect_janssons_text(json_text, len - 1);
	doc = json_loads(json_text, 0, NULL);
	cr_assert_not_null(doc);
	det = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "exit_details");
	cr_assert_eq(json_array_size(det), 3, "two named rows and other: %s", json_text);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(det, 0), "target")), "0x1b", "most first");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(det, 2), "target")), "other", "other last");
	json_decref(doc);
	free(json_text);
	metrics_free(m);
	names_free(&names);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	vcpustat_snapshot_free(&c);
	replay_free(rp);
}

/*
 * The guest's mode at each exit (kvm_exit's guest RIP, 64-bit guests: the
 * upper half is the kernel's): per exit reason, how many left guest kernel
 * mode, in the kernel's histograms as in replay's, and in the window's JSON,
 * text (%GSYS) and the exporters.
 */
static size_t gsys_scenario(struct vcpustat_event *out)
{
	size_t n = 0;

	out[n++] = KVM_ENTRY(10);
	for (int i = 0; i < 4; i++) { /* 4 MSR-write exits, 3 from the guest kernel */
		out[n] = KVM_EXIT(100 + 100 * i, VMX_EXIT_MSR_WRITE);
		if (i < 3)
			out[n].arg2 |= VCPUSTAT_EXIT_GSYS;
		n++;
		out[n++] = KVM_ENTRY(150 + 100 * i);
	}
	out[n++] = KVM_EXIT(1000, VMX_EXIT_HLT); /* from user mode (a real-mode guest, say) */
	out[n++] = KVM_ENTRY(1100);
	return n;
}

static void assert_gsys_hists(const struct vcpustat_snapshot *s, const char *src)
{
	size_t found = 0;

	for (size_t i = 0; i < s->nr_hists; i++) {
		const struct vcpustat_hist_entry *h = &s->hists[i];

		if (h->key.kind != VCPU_SAMPLE_EXIT)
			continue;
		found++;
		if (h->key.reason == VMX_EXIT_MSR_WRITE) {
			cr_assert_eq(h->hist.count, 4, "%s", src);
			cr_assert_eq(h->hist.gsys, 3, "%s: 3 of the MSR writes left guest kernel mode", src);
		} else {
			cr_assert_eq(h->key.reason, VMX_EXIT_HLT, "%s", src);
			cr_assert_eq(h->hist.gsys, 0, "%s: the HLT did not", src);
		}
	}
	cr_assert_eq(found, 2, "%s: two exit reasons", src);
}

Test(details, exits_from_guest_kernel_mode_are_counted_per_reason)
{
	struct vcpustat_event evs[32];
	size_t n = gsys_scenario(evs);
	struct replay *rp = replay_events(evs, n, 0);
	struct vcpustat_snapshot a, b;
	struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS };
	struct metrics *m = metrics_new(&mo);
	struct summary s;
	struct names names;
	json_t *doc, *exits, *e;
	char *text = NULL, *prom;
	size_t len = 0, i;
	bool msr = false;
	FILE *f;

	cr_assert_eq(replay_snapshot(rp, &b), 0);
	assert_gsys_hists(&b, "replay");
	memset(&a, 0, sizeof(a));
	a.ts = 1;
	b.ts = 1 + 1000000000ull;
	cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
	cr_assert_eq(summary_build(&s, &a, &b, &names, NULL), 0);
	doc = summary_json_checked(&s);
	exits = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "exits");
	json_array_foreach(exits, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "reason")), "MSR_WRITE"))
			continue;
		msr = true;
		cr_assert_eq(json_integer_value(json_object_get(e, "guest_kernel")), 3);
	}
	cr_assert(msr);
	json_decref(doc);
	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	cr_assert_not_null(strstr(text, "%GSYS"), "%s", text);
	cr_assert_not_null(strstr(text, "  75.0%"), "3 of 4 MSR writes:\n%s", text);
	free(text);
	cr_assert_eq(metrics_add(m, &s), 0);
	cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &prom, &len), 0);
	cr_assert_not_null(strstr(prom, "vcpustat_exit_guest_kernel_total{vm=\"pid 50\",reason=\"MSR_WRITE\"} 3\n"),
			   "%s", prom);
	cr_assert_not_null(strstr(prom, "vcpustat_exit_guest_kernel_total{vm=\"pid 50\",reason=\"HLT\"} 0\n"), "%s",
			   prom);
	free(prom);
	metrics_free(m);
	summary_free(&s);
	names_free(&names);
	vcpustat_snapshot_free(&b);
	replay_free(rp);
}

Test(details, the_kernel_counts_guest_kernel_exits_as_replay_does)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;

	SKIP_UNLESS(bpf_unavailable());
	vs = inject_events(evs, gsys_scenario(evs), false, &snap);
	assert_gsys_hists(&snap, "kernel");
	vcpustat_snapshot_free(&snap);
	vcpustat_close(vs);
}

/*
 * A recording keeps the exit details (exit_access, exit_fault): the report
 * of the file gives back the kernel's rows exactly -- each access under its
 * exit, with that exit's whole handling time -- and JSON and text show them.
 */
Test(details, a_recording_keeps_them_and_its_report_gives_the_same_rows)
{
	struct vcpustat_event evs[32];
	struct rec_session_opts so = { 0 };
	struct replay_options ro = { .record_level = VCPUSTAT_LEVEL_VCPU, .on_record = rec_session_record };
	struct rec_session_stats st;
	struct vcpustat_error err = { 0 };
	struct rec_session *rs;
	struct sht_reader *rd;
	struct replay *rp;
	struct summary s;
	char path[] = "/tmp/vcpustat-details-XXXXXX";
	size_t n = scenario(evs);
	bool culprits;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	so.rec.path = path;
	so.rec.mono_start_ns = 0;
	so.rec.real_start_ns = 1700000000ull * 1000000000ull;
	so.rec.no_sync = true;
	cr_assert_eq(rec_session_open(&rs, &so, &err), 0, "%s", err.msg);
	ro.ctx = rs;
	cr_assert_eq(replay_new(&rp, &ro), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	replay_free(rp);
	cr_assert_eq(rec_session_finish(&rs, 2000, &st, &err), 0, "%s", err.msg);

	cr_assert_eq(sht_open(&rd, path, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(&s, rd, 0, 2000, NULL, &culprits, &err), 0, "%s", err.msg);
	cr_assert(s.has_details, "the file has the vCPU's exit_access attribute");
	cr_assert_not(s.has_gsys, "a recording does not keep the guest's mode");
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].nr_details, NR_SCENARIO_ROWS);
	for (size_t i = 0; i < NR_SCENARIO_ROWS; i++) {
		const struct want *w = &scenario_rows[i];
		const struct detail_summary *d = NULL;

		for (size_t j = 0; j < s.vms[0].nr_details; j++)
			if (s.vms[0].details[j].kind == w->kind && s.vms[0].details[j].access == w->access &&
			    s.vms[0].details[j].addr == w->addr)
				d = &s.vms[0].details[j];
		cr_assert_not_null(d, "report: %s 0x%llx", detail_kind_name(w->kind), (unsigned long long)w->addr);
		cr_assert_eq(d->count, w->count, "report: %s 0x%llx count", detail_kind_name(w->kind),
			     (unsigned long long)w->addr);
		cr_assert_eq(d->sum_ns, w->sum_ns, "report: %s 0x%llx: the exit's whole handling time",
			     detail_kind_name(w->kind), (unsigned long long)w->addr);
		cr_assert_eq(d->max_ns, w->max_ns);
	}
	/* a window that holds only the first exit (200 -> 500) */
	summary_free(&s);
	cr_assert_eq(report_build(&s, rd, 150, 550, NULL, &culprits, &err), 0, "%s", err.msg);
	cr_assert_eq(s.vms[0].nr_details, 1);
	cr_assert_eq(s.vms[0].details[0].addr, 0x3f8);
	cr_assert_eq(s.vms[0].details[0].sum_ns, 300);
	summary_free(&s);
	sht_close(rd);
	unlink(path);
}

/*
 * From a host's ftrace text (what `perf kvm stat` users have) to a report:
 * `vcpustat import` turns kvm_pio, kvm_mmio and kvm_msr lines into the
 * exits' accesses, and `report -j` shows them with each exit's time.
 */
Test(details, an_imported_ftrace_text_reports_its_exit_details)
{
	static const char *const lines[] = {
		"# tracer: nop",
		"  CPU 0/KVM-701 [000] 1.000000000: kvm_fpu: load",
		"  CPU 0/KVM-701 [000] 1.000001000: kvm_entry: vcpu 0, rip 0x1000",
		"  CPU 0/KVM-701 [000] 1.000010000: kvm_exit: vcpu 0 reason IO_INSTRUCTION rip 0x1000 info 100000 0",
		"  CPU 0/KVM-701 [000] 1.000011000: kvm_pio: pio_write at 0x3f8 size 1 count 1 val 0x41 ",
		"  CPU 0/KVM-701 [000] 1.000014000: kvm_entry: vcpu 0, rip 0x1002",
		"  CPU 0/KVM-701 [000] 1.000020000: kvm_exit: vcpu 0 reason MSR_READ rip 0x1002 info 0 0",
		"  CPU 0/KVM-701 [000] 1.000020500: kvm_msr: msr_read c0000080 = 0x500",
		"  CPU 0/KVM-701 [000] 1.000021000: kvm_entry: vcpu 0, rip 0x1004",
		"  CPU 0/KVM-701 [000] 1.000030000: kvm_exit: vcpu 0 reason MSR_READ rip 0x1004 info 0 0",
		"  CPU 0/KVM-701 [000] 1.000030500: kvm_msr: msr_read c0000080 = 0x500",
		"  CPU 0/KVM-701 [000] 1.000033000: kvm_entry: vcpu 0, rip 0x1006",
		"  CPU 0/KVM-701 [000] 1.000040000: kvm_exit: vcpu 0 reason EPT_MISCONFIG rip 0x1006 info 0 0",
		"  CPU 0/KVM-701 [000] 1.000041000: kvm_mmio: mmio write len 4 gpa 0xfebf0000 val 0x1",
		"  CPU 0/KVM-701 [000] 1.000045000: kvm_entry: vcpu 0, rip 0x1008",
		"  CPU 0/KVM-701 [000] 1.000050000: kvm_exit: vcpu 0 reason HLT rip 0x1008 info 0 0",
		"  CPU 0/KVM-701 [000] 1.000060000: kvm_entry: vcpu 0, rip 0x1009",
	};
	char txt[] = "/tmp/vcpustat-details-txt-XXXXXX", sht[64];
	json_t *doc, *det;
	struct run r;
	int fd = mkstemp(txt);
	FILE *f = fdopen(fd, "w");

	cr_assert_not_null(f);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		fprintf(f, "%s\n", lines[i]);
	fclose(f);
	snprintf(sht, sizeof(sht), "%s.sht", txt);
	RUN(&r, "import", "--host", txt, "-o", sht);
	cr_assert_eq(r.status, 0, "%s", r.err);
	RUN(&r, "report", sht, "-j");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_loads(r.out, 0, NULL);
	cr_assert_not_null(doc, "%s", r.out);
	det = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "exit_details");
	cr_assert(json_is_array(det), "%s", r.out);
	cr_assert_eq(json_array_size(det), 3, "%s", r.out);
	/* by kind: pio, mmio, msr */
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(det, 0), "target")), "0x3f8");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(det, 0), "sum_ns")), 4000, "exit to entry");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(det, 1), "target")), "0xfebf0000");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(det, 1), "access")), "write");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(det, 1), "sum_ns")), 5000);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(det, 2), "name")), "EFER");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(det, 2), "count")), 2);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(det, 2), "sum_ns")), 1000 + 3000);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(det, 2), "max_ns")), 3000);
	json_decref(doc);
	RUN(&r, "report", sht);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "0xc0000080 EFER"), "%s", r.out);
	unlink(sht);
	unlink(txt);
}
