// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Nested virtualization (issue 13 item 4): a vCPU that runs an L1
 * hypervisor, which runs its own guest (L2). kvm_nested_vmenter
 * (EV_NESTED_ENTER) puts the vCPU in L2, kvm_nested_vmexit_inject
 * (EV_NESTED_EXIT) back in L1: its guest time splits into L1 and L2, and its
 * exits from L2 are counted by reason, handled here (L0) or reflected to L1.
 * Exact through user-space replay and the kernel's injection program, in the
 * window's JSON and text, and in a recording (attribute guest_level) for any
 * window.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli_run.h"
#include "export/export.h"
#include "exit_reasons.h"
#include "helpers.h"
#include "live/live.h"
#include "model/summary.h"
#include "record/record.h"

#define VM 80
#define VMRUN 0x80
#define VMMCALL 0x81
#define HLT 0x78
#define IO 0x7b
#define NPF 0x400

static struct vcpustat_event ev(__u64 type, __u64 ts, __u32 tid, __u64 a0)
{
	struct vcpustat_event e = { .type = type, .ts = ts, .tid = tid, .tgid = VM, .arg0 = a0 };

	snprintf(e.comm, sizeof(e.comm), "CPU %u/KVM", tid - VM - 1);
	if (type == VCPUSTAT_EV_KVM_ENTRY)
		e.arg0 = tid - VM - 1;
	if (type == VCPUSTAT_EV_KVM_EXIT) {
		e.arg1 = KVM_ISA_SVM;
		e.arg2 = tid - VM - 1;
	}
	return e;
}

#define ENTRY(ts, tid) ev(VCPUSTAT_EV_KVM_ENTRY, ts, tid, 0)
#define EXIT(ts, tid, why) ev(VCPUSTAT_EV_KVM_EXIT, ts, tid, why)
#define INTO_L2(ts, tid) ev(VCPUSTAT_EV_NESTED_ENTER, ts, tid, 0)
#define BACK_TO_L1(ts, tid) ev(VCPUSTAT_EV_NESTED_EXIT, ts, tid, 0)

/*
 * vCPU 0 (81): L1 runs 100..200 and exits on its VMRUN; KVM enters L2 at
 * 210; L2 runs 220..520 (nested page fault, handled here: 10 ns) and
 * 530..730 (VMMCALL, reflected to L1 at 735: 10 ns); L1 again 740..1040 (a
 * halt) and 1050..1100. Guest 950 ns, of which L2 500.
 * vCPU 1 (82): L1 100..150, VMRUN, into L2 at 160, in L2 from 170 on.
 */
static size_t scenario(struct vcpustat_event *out)
{
	const struct vcpustat_event s[] = {
		ENTRY(100, 81),	    ENTRY(100, 82),	EXIT(150, 82, VMRUN), INTO_L2(160, 82), ENTRY(170, 82),
		EXIT(200, 81, VMRUN), INTO_L2(210, 81), ENTRY(220, 81),	    EXIT(520, 81, NPF),	 ENTRY(530, 81),
		EXIT(730, 81, VMMCALL), BACK_TO_L1(735, 81), ENTRY(740, 81), EXIT(1040, 81, HLT), ENTRY(1050, 81),
		EXIT(1100, 81, IO),
	};

	memcpy(out, s, sizeof(s));
	return sizeof(s) / sizeof(s[0]);
}

static void assert_rows(const struct vcpustat_snapshot *s, const char *src)
{
	size_t rows = 0;

	for (size_t i = 0; i < s->nr_details; i++) {
		const struct vcpustat_detail_entry *e = &s->details[i];

		if (e->key.kind != VCPUSTAT_DETAIL_NESTED || e->key.addr == VCPUSTAT_DETAIL_OTHER)
			continue;
		rows++;
		cr_assert_eq(e->key.addr >> 32, KVM_ISA_SVM, "%s", src);
		if ((__u32)e->key.addr == NPF)
			cr_assert_eq(e->key.access, VCPUSTAT_ACCESS_L0, "%s: the fault was handled here", src);
		else if ((__u32)e->key.addr == VMMCALL)
			cr_assert_eq(e->key.access, VCPUSTAT_ACCESS_L1, "%s: the VMMCALL went to L1", src);
		else
			cr_assert_fail("%s: exit 0x%llx is no exit from L2", src, (unsigned long long)e->key.addr);
		cr_assert_eq(e->detail.count, 1, "%s", src);
		cr_assert_eq(e->detail.sum_ns, 10, "%s: its handling time", src);
	}
	cr_assert_eq(rows, 2, "%s: VMRUN, HLT and I/O were L1's exits", src);
	for (size_t i = 0; i < s->nr_vcpus; i++) {
		const struct vcpustat_vcpu *v = &s->vcpus[i];

		if (v->tid == 81) {
			cr_assert_eq(v->l2_guest_ns, 500, "%s", src);
			cr_assert_eq(v->in_l2, 0, "%s", src);
		} else {
			cr_assert_eq(v->in_l2, 1, "%s: vCPU 1 is in L2", src);
			cr_assert_eq(v->l2_mark_ns, 50, "%s: its L1 guest time before", src);
		}
	}
}

Test(nested, guest_time_splits_into_l1_and_l2_and_exits_from_l2_by_who_handled_them)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct replay *rp = replay_events(evs, scenario(evs), 0);

	cr_assert_eq(replay_snapshot(rp, &snap), 0);
	assert_rows(&snap, "replay");
	vcpustat_snapshot_free(&snap);
	replay_free(rp);
}

Test(nested, the_kernel_counts_the_same)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;

	SKIP_UNLESS(bpf_unavailable());
	vs = inject_events(evs, scenario(evs), false, &snap);
	assert_rows(&snap, "kernel");
	vcpustat_snapshot_free(&snap);
	vcpustat_close(vs);
}

Test(nested, the_window_shows_l2_time_and_exits_as_json_and_text)
{
	struct vcpustat_event evs[32];
	struct vcpustat_snapshot a = { 0 }, b;
	struct replay *rp = replay_events(evs, scenario(evs), 0);
	const struct vm_summary *vm;
	struct names names;
	struct summary s;
	json_t *doc, *jvm, *n;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(replay_snapshot(rp, &b), 0);
	b.ts = 2000; /* vCPU 1 is still in L2: 170..2000 */
	cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
	cr_assert_eq(summary_build(&s, &a, &b, &names, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	vm = &s.vms[0];
	cr_assert(vm->nested);
	cr_assert_eq(vm->vcpus[0].l2_ns, 500);
	cr_assert_eq(vm->vcpus[1].l2_ns, 1830);
	cr_assert(vm->vcpus[1].in_l2);
	cr_assert_eq(vm->l2_ns, 2330);
	cr_assert_eq(vm->ns[VCPU_GUEST], 950 + 50 + 1830);

	doc = summary_json_checked(&s);
	jvm = json_array_get(json_object_get(doc, "vms"), 0);
	n = json_object_get(jvm, "nested");
	cr_assert_eq(json_integer_value(json_object_get(n, "l2_guest_ns")), 2330);
	cr_assert_eq(json_integer_value(json_object_get(n, "exits_reflected_to_l1")), 1);
	cr_assert_eq(json_integer_value(json_object_get(n, "exits_handled_by_l0")), 1);
	n = json_object_get(json_array_get(json_object_get(jvm, "vcpus"), 1), "nested");
	cr_assert_eq(json_integer_value(json_object_get(n, "l2_guest_ns")), 1830);
	cr_assert(json_is_true(json_object_get(n, "in_l2")));
	{
		json_t *row;
		size_t i, seen = 0;

		json_array_foreach(json_object_get(jvm, "exit_details"), i, row) {
			const char *t = json_string_value(json_object_get(row, "target"));

			if (strcmp(json_string_value(json_object_get(row, "kind")), "nested"))
				continue;
			seen++;
			cr_assert_str_eq(json_string_value(json_object_get(row, "access")), !strcmp(t, "npf") ? "l0" : "l1",
					 "%s", t);
		}
		cr_assert_eq(seen, 2, "the exits from L2 by name: npf and hypercall (VMMCALL)");
	}
	json_decref(doc);

	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	/* 2330 of 2830 ns of guest time */
	ASSERT_HOLDS("top -b", text,
		     "    nested: L2 guest 2330ns (82.3% of guest time); exits from L2 2 (",
		     "1 reflected to L1, 1 handled here", "    EXIT FROM L2 (TO: L0/L1) ACCESS",
		     "    hypercall                l1              1", "    npf                      l0              1");
	free(text);
	{
		/* the exporters: L2's seconds per VM, the exits from L2 among the exit details */
		struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS, .top_details = 10 };
		struct metrics *m = metrics_new(&mo);

		cr_assert_not_null(m);
		cr_assert_eq(metrics_add(m, &s), 0);
		cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &text, &len), 0);
		ASSERT_HOLDS("Prometheus", text, "# TYPE vcpustat_nested_l2_guest_seconds_total counter\n",
			     "vcpustat_nested_l2_guest_seconds_total{vm=\"pid 80\"} 0.000002330\n",
			     "kind=\"nested\",target=\"hypercall\",access=\"l1\"",
			     "kind=\"nested\",target=\"npf\",access=\"l0\"");
		free(text);
		metrics_free(m);
	}
	summary_free(&s);
	names_free(&names);
	vcpustat_snapshot_free(&b);
	replay_free(rp);
}

/* The window of a recording: report -j as the kernel counts, for the whole file and for a part of it. */
Test(nested, a_recording_gives_the_same_for_any_window)
{
	char sht[] = "/tmp/vcpustat-nested-XXXXXX.sht", args[512];
	static char out[1 << 16];
	struct vcpustat_event evs[32];
	size_t n = scenario(evs);
	json_t *doc, *vm, *nv;
	int fd;

	fd = mkstemps(sht, 4);
	cr_assert_geq(fd, 0);
	close(fd);
	replay_to_sht(evs, n, VM, "nest", 2000, sht);

	snprintf(args, sizeof(args), "report -j %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	doc = json_loads(out, 0, NULL);
	cr_assert_not_null(doc, "%s", out);
	vm = json_array_get(json_object_get(doc, "vms"), 0);
	nv = json_object_get(vm, "nested");
	cr_assert_eq(json_integer_value(json_object_get(nv, "l2_guest_ns")), 2330, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(nv, "exits_reflected_to_l1")), 1, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(nv, "exits_handled_by_l0")), 1, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(json_array_get(json_object_get(vm, "vcpus"), 0), "nested"), "l2_guest_ns")),
		     500);
	json_decref(doc);

	/* [600, 1000): vCPU 0 in L2 600..730 and its VMMCALL (reflected); vCPU 1 in L2 all along */
	snprintf(args, sizeof(args), "report -j --from 600 --to 1000 %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	doc = json_loads(out, 0, NULL);
	cr_assert_not_null(doc, "%s", out);
	vm = json_array_get(json_object_get(doc, "vms"), 0);
	nv = json_object_get(vm, "nested");
	cr_assert_eq(json_integer_value(json_object_get(nv, "l2_guest_ns")), 130 + 400, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(nv, "exits_reflected_to_l1")), 1, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(nv, "exits_handled_by_l0")), 0, "%s", out);
	json_decref(doc);

	snprintf(args, sizeof(args), "query %s --at 800 --path '/vms/nest/vcpus/0/guest_level'", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "1"), "%s", out);
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "nested: L2 guest 2330ns"), "%s", out);
	unlink(sht);
}
