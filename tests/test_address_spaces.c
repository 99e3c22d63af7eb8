// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Guest address spaces (issue 13 item 7, --address-spaces): the guest's CR3
 * at each exit (EV_GUEST_CR3, a second program on kvm_exit that runs after
 * the exit's own event) charges the guest time the vCPU gathered since its
 * last one, and one exit, to a (VM, CR3) row. Exact through user-space replay
 * and the kernel's injection program; the full table's "other" row; the
 * window's table as JSON and text; the exit-detail tables never show them.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_run.h"
#include "exit_reasons.h"
#include "helpers.h"
#include "export/export.h"
#include "live/live.h"
#include "model/summary.h"
#include "record/record.h"

#define VM 70
#define EXIT_IO 30

static struct vcpustat_event ev(__u64 type, __u64 ts, __u32 tid, __u64 a0)
{
	struct vcpustat_event e = { .type = type, .ts = ts, .tid = tid, .tgid = VM, .arg0 = a0 };

	snprintf(e.comm, sizeof(e.comm), "CPU %u/KVM", tid - VM - 1);
	if (type == VCPUSTAT_EV_KVM_ENTRY) /* KVM's vcpu_id: the index */
		e.arg0 = tid - VM - 1;
	if (type == VCPUSTAT_EV_KVM_EXIT) {
		e.arg1 = KVM_ISA_SVM;
		e.arg2 = tid - VM - 1;
	}
	return e;
}

#define ENTRY(ts, tid) ev(VCPUSTAT_EV_KVM_ENTRY, ts, tid, 0) /* arg0: set by ev() */
#define EXIT(ts, tid, cr3) ev(VCPUSTAT_EV_KVM_EXIT, ts, tid, EXIT_IO), ev(VCPUSTAT_EV_GUEST_CR3, ts, tid, cr3)

/*
 * vCPU 71: guest 100..300 in 0x4000 (200), 400..1000 in 0x5000 (600),
 * 1100..1200 in 0x4000 (100), 1300..1350 with KVM's copy not valid (50);
 * vCPU 72: guest 150..550 in 0x4000 (400). A thread of no VM that says
 * CR3: nothing. Rows: 0x4000 3 exits 700 ns (longest 400), 0x5000 1 600,
 * unknown 1 50.
 */
static size_t scenario(struct vcpustat_event *out)
{
	struct vcpustat_event s[] = {
		ENTRY(100, 71),	    ENTRY(150, 72),	   EXIT(300, 71, 0x4000), ENTRY(400, 71),
		EXIT(550, 72, 0x4000), EXIT(1000, 71, 0x5000), ENTRY(1100, 71),	  EXIT(1200, 71, 0x4000),
		ENTRY(1300, 71),    EXIT(1350, 71, VCPUSTAT_CR3_UNKNOWN),
	};
	struct vcpustat_event stranger = ev(VCPUSTAT_EV_GUEST_CR3, 1400, 999, 0x6000);
	size_t n = sizeof(s) / sizeof(s[0]);

	stranger.tgid = 999;
	memcpy(out, s, sizeof(s));
	out[n] = stranger;
	return n + 1;
}

static const struct {
	__u64 cr3, exits, ns, max_ns;
} want[] = { { 0x4000, 3, 700, 400 }, { 0x5000, 1, 600, 600 }, { VCPUSTAT_CR3_UNKNOWN, 1, 50, 50 } };
#define NR_WANT (sizeof(want) / sizeof(want[0]))

static void assert_rows(const struct vcpustat_snapshot *s, const char *src)
{
	size_t rows = 0;

	for (size_t i = 0; i < s->nr_details; i++) {
		const struct vcpustat_detail_entry *e = &s->details[i];
		size_t w;

		if (e->key.kind != VCPUSTAT_DETAIL_CR3)
			continue;
		if (e->key.addr == VCPUSTAT_DETAIL_OTHER) { /* made with the first key, for when the table fills */
			cr_assert_eq(e->detail.count, 0, "%s: nothing in the other row", src);
			continue;
		}
		rows++;
		cr_assert_eq(e->key.tgid, VM, "%s: only the VM's vCPUs", src);
		for (w = 0; w < NR_WANT && want[w].cr3 != e->key.addr; w++)
			;
		cr_assert_lt(w, NR_WANT, "%s: CR3 0x%llx is no row of the scenario", src, (unsigned long long)e->key.addr);
		cr_assert_eq(e->detail.count, want[w].exits, "%s: 0x%llx exits", src, (unsigned long long)want[w].cr3);
		cr_assert_eq(e->detail.sum_ns, want[w].ns, "%s: 0x%llx guest ns", src, (unsigned long long)want[w].cr3);
		cr_assert_eq(e->detail.max_ns, want[w].max_ns, "%s: 0x%llx longest", src, (unsigned long long)want[w].cr3);
	}
	cr_assert_eq(rows, NR_WANT, "%s: %zu address spaces", src, rows);
}

Test(address_spaces, guest_time_and_exits_go_to_the_cr3_at_each_exit)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct replay *rp = replay_events(evs, scenario(evs), 0);

	cr_assert_eq(replay_snapshot(rp, &snap), 0);
	assert_rows(&snap, "replay");
	vcpustat_snapshot_free(&snap);
	replay_free(rp);
}

Test(address_spaces, the_kernel_keeps_the_same_rows_as_replay)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;

	SKIP_UNLESS(bpf_unavailable());
	vs = inject_events(evs, scenario(evs), true, &snap);
	assert_rows(&snap, "kernel");
	vcpustat_snapshot_free(&snap);
	cr_assert_eq(vcpustat_reap_vm(vs, VM), 0);
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(snap.nr_details, 0, "a reaped VM's address spaces go with it");
	cr_assert_eq(snap.lost[VCPUSTAT_LOST_DETAIL_FULL], 0);
	vcpustat_snapshot_free(&snap);
	vcpustat_close(vs);
}

/*
 * A table of 2 rows: 0x4000 and the VM's "other" row (made first) fit;
 * 0x5000 and unknown are counted in "other".
 */
Test(address_spaces, a_full_table_counts_new_ones_in_other)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct replay *rp = replay_events(evs, scenario(evs), 2);
	const struct vcpustat_detail_entry *other = NULL;

	cr_assert_eq(replay_snapshot(rp, &snap), 0);
	for (size_t i = 0; i < snap.nr_details; i++)
		if (snap.details[i].key.kind == VCPUSTAT_DETAIL_CR3 && snap.details[i].key.addr == VCPUSTAT_DETAIL_OTHER)
			other = &snap.details[i];
	cr_assert_not_null(other);
	cr_assert_eq(other->detail.count, 2);
	cr_assert_eq(other->detail.sum_ns, 650);
	cr_assert_eq(snap.lost[VCPUSTAT_LOST_DETAIL_FULL], 0);
	vcpustat_snapshot_free(&snap);
	replay_free(rp);
}

Test(address_spaces, the_window_shows_them_by_guest_time_as_json_and_text)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot a = { 0 }, b;
	struct replay *rp = replay_events(evs, scenario(evs), 0);
	const struct vm_summary *vm;
	struct names names;
	struct summary s;
	json_t *doc, *as, *row;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(replay_snapshot(rp, &b), 0);
	b.ts = 1000000000ull; /* a window of 1 s: exits per second are counts */
	cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
	cr_assert_eq(summary_build(&s, &a, &b, &names, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	vm = &s.vms[0];
	cr_assert_eq(vm->nr_address_spaces, NR_WANT);
	cr_assert_eq(vm->nr_details, 0, "address spaces are no exit details");
	for (size_t i = 0; i < NR_WANT; i++) {
		cr_assert_eq(vm->address_spaces[i].addr, want[i].cr3, "row %zu: most guest time first", i);
		cr_assert_eq(vm->address_spaces[i].sum_ns, want[i].ns);
		cr_assert_eq(vm->address_spaces[i].count, want[i].exits);
	}

	doc = summary_json_checked(&s);
	as = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "address_spaces");
	cr_assert_eq(json_array_size(as), NR_WANT);
	row = json_array_get(as, 0);
	cr_assert_str_eq(json_string_value(json_object_get(row, "cr3")), "0x4000");
	cr_assert_eq(json_integer_value(json_object_get(row, "guest_ns")), 700);
	cr_assert_eq(json_integer_value(json_object_get(row, "exits")), 3);
	cr_assert_eq(json_integer_value(json_object_get(row, "max_ns")), 400);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(as, 2), "cr3")), "unknown");
	cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "exit_details")), 0,
		     "address spaces are no exit details");
	json_decref(doc);

	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	/* 700 / 1350 ns of guest time = 51.9 % */
	ASSERT_HOLDS("top -b", text, "    GUEST ADDRESS SPACE", "    CR3 0x4000                    700ns  51.9%          3        3.0",
		     "    CR3 unknown                    50ns   3.7%          1");
	cr_assert_null(strstr(text, "I/O PORT"), "%s", text);
	free(text);
	{
		struct panel_line lines[32];
		size_t nl = vm_panel_lines(&s, vm, lines, 32), k;

		for (k = 0; k < nl && strncmp(lines[k].text, "GUEST ADDRESS SPACE", 19); k++)
			;
		cr_assert_lt(k + 3, nl, "the panel has the table");
		cr_assert(lines[k].bold);
		cr_assert(!strncmp(lines[k + 1].text, "CR3 0x4000", 10), "%s", lines[k + 1].text);
	}
	{
		/* the exporters: two counters per CR3, none of them an exit detail; with a top of 1, other */
		struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS, .top_details = 1 };
		struct metrics *m = metrics_new(&mo);
		json_t *mdoc, *mas;

		cr_assert_not_null(m);
		cr_assert_eq(metrics_add(m, &s), 0);
		cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &text, &len), 0);
		ASSERT_HOLDS("Prometheus", text, "# TYPE vcpustat_guest_address_space_exits_total counter\n",
			     "vcpustat_guest_address_space_exits_total{vm=\"pid 70\",cr3=\"0x4000\"} 3\n",
			     "vcpustat_guest_address_space_seconds_total{vm=\"pid 70\",cr3=\"0x4000\"} 0.000000700\n",
			     "vcpustat_guest_address_space_exits_total{vm=\"pid 70\",cr3=\"other\"} 2\n",
			     "vcpustat_guest_address_space_seconds_total{vm=\"pid 70\",cr3=\"other\"} 0.000000650\n");
		cr_assert_null(strstr(text, "kind=\"cr3\""), "no exit-detail series of them:\n%s", text);
		free(text);
		cr_assert_eq(metrics_render(m, METRICS_CSV, &text, &len), 0);
		cr_assert_not_null(strstr(text, ",cr3,value\n"), "%.400s", text);
		free(text);
		cr_assert_eq(metrics_render(m, METRICS_JSON, &text, &len), 0);
		expect_janssons_text(text, len - 1);
		mdoc = json_loads(text, 0, NULL);
		cr_assert_not_null(mdoc, "%s", text);
		mas = json_object_get(json_array_get(json_object_get(mdoc, "vms"), 0), "address_spaces");
		cr_assert_eq(json_array_size(mas), 2, "%s", text);
		cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(mdoc, "vms"), 0), "exit_details")),
			     0, "%s", text);
		json_decref(mdoc);
		free(text);
		metrics_free(m);
	}
	summary_free(&s);
	names_free(&names);
	vcpustat_snapshot_free(&b);
	replay_free(rp);
}

/*
 * Recordings: `vcpustat replay` of a capture of the scenario writes the
 * guest's CR3 as the vCPU's guest_cr3 attribute (set at the exits where it
 * changed), and `report -j` of the file gives the kernel's table to the
 * nanosecond; a window that holds only the exit at 1000 has 0x5000 alone.
 */
Test(address_spaces, a_recording_gives_the_same_table)
{
	char sht[] = "/tmp/vcpustat-as-XXXXXX.sht", args[512];
	static char out[1 << 16];
	struct vcpustat_event evs[32];
	size_t n = scenario(evs);
	json_t *doc, *as;
	int fd;

	fd = mkstemps(sht, 4);
	cr_assert_geq(fd, 0);
	close(fd);
	replay_to_sht(evs, n, VM, "asp", 3000, sht);

	snprintf(args, sizeof(args), "report -j %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	doc = json_loads(out, 0, NULL);
	cr_assert_not_null(doc, "%s", out);
	as = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "address_spaces");
	cr_assert_eq(json_array_size(as), NR_WANT, "%s", out);
	for (size_t i = 0; i < NR_WANT; i++) {
		json_t *row = json_array_get(as, i);
		char t[32];

		cr_assert_str_eq(json_string_value(json_object_get(row, "cr3")), cr3_target(want[i].cr3, t, sizeof(t)));
		cr_assert_eq(json_integer_value(json_object_get(row, "guest_ns")), (json_int_t)want[i].ns, "%s", t);
		cr_assert_eq(json_integer_value(json_object_get(row, "exits")), (json_int_t)want[i].exits, "%s", t);
		cr_assert_eq(json_integer_value(json_object_get(row, "max_ns")), (json_int_t)want[i].max_ns, "%s", t);
	}
	json_decref(doc);

	snprintf(args, sizeof(args), "report -j --from 900 --to 1100 %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	doc = json_loads(out, 0, NULL);
	cr_assert_not_null(doc, "%s", out);
	as = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "address_spaces");
	cr_assert_eq(json_array_size(as), 1, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(as, 0), "cr3")), "0x5000");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(as, 0), "guest_ns")), 600);
	json_decref(doc);

	/* the attribute, as query shows it, and the text */
	snprintf(args, sizeof(args), "query %s --at 1000 --path '/vms/asp/vcpus/0/guest_cr3'", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "0x5000"), "%s", out);
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "CR3 0x4000"), "%s", out);
	{
		/* plot: a bar per address space, most guest time first */
		char svg[] = "/tmp/vcpustat-as-XXXXXX.svg", *text;

		fd = mkstemps(svg, 4);
		cr_assert_geq(fd, 0);
		close(fd);
		snprintf(args, sizeof(args), "plot %s -o %s", sht, svg);
		cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
		text = slurp_file(svg);
		ASSERT_HOLDS("plot", text, "Guest address spaces: guest time by the guest&apos;s CR3 at the exit",
			     "<title>CR3 0x4000: 700 ns of guest time, 3 exits</title>", ">CR3 unknown</text>");
		cr_assert_lt(strstr(text, ">CR3 0x4000<"), strstr(text, ">CR3 0x5000<"), "0x4000 (700 ns) first");
		free(text);
		unlink(svg);
	}
	unlink(sht);
}
