// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Halts handled in KVM (an in-kernel irqchip): halt polling split out of
 * host time (EV_HALT, EV_HALT_END, EV_HALT_POLL_NS), and why a sleeping vCPU
 * woke and how long until it ran guest code (EV_APIC_ACCEPT, the waker at
 * sched_waking), exact, through user-space replay and through the kernel's
 * injection program: both run include/vcpustat_handler.h.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "exit_reasons.h"
#include "helpers.h"
#include "export/export.h"
#include "live/live.h"
#include "model/summary.h"
#include "record/record.h"

#define VM 60
#define TID0 61	   /* vCPU 0 */
#define TID1 62	   /* vCPU 1 */
#define DEVICE 999 /* a thread of no vCPU: a vhost worker, say */

static struct vcpustat_event kvm(__u64 type, __u64 ts, __u32 tid, __u64 a0, __u64 a1, __u64 a2)
{
	struct vcpustat_event e = { .type = type, .ts = ts, .tid = tid, .tgid = tid == DEVICE ? 900 : VM,
				    .cpu = tid == TID0 ? 0 : 1, .arg0 = a0, .arg1 = a1, .arg2 = a2 };

	if (tid != DEVICE)
		snprintf(e.comm, sizeof(e.comm), "CPU %d/KVM", tid - TID0);
	return e;
}

/* tid goes to sleep on cpu (the idle task comes in). */
static struct vcpustat_event sleep_ev(__u64 ts, __u32 tid, __u32 cpu)
{
	struct vcpustat_event e = { .type = VCPUSTAT_EV_SWITCH, .ts = ts, .cpu = cpu, .tid = tid, .tgid = VM,
				    .arg0 = 1 /* TASK_INTERRUPTIBLE */ };

	snprintf(e.comm, sizeof(e.comm), "CPU %d/KVM", tid - TID0);
	return e;
}

/* tid comes in on cpu (after the idle task). */
static struct vcpustat_event run_ev(__u64 ts, __u32 tid, __u32 cpu)
{
	struct vcpustat_event e = { .type = VCPUSTAT_EV_SWITCH, .ts = ts, .cpu = cpu, .tid2 = tid, .tgid2 = VM };

	snprintf(e.comm, sizeof(e.comm), "swapper/%u", cpu);
	return e;
}

/* waker (0: an interrupt on an idle CPU) starts waking tid (sched_waking), on its CPU cpu. */
static struct vcpustat_event waking_ev(__u64 ts, __u32 tid, __u32 waker, __u32 cpu)
{
	return (struct vcpustat_event){ .type = VCPUSTAT_EV_WAKING, .ts = ts, .cpu = cpu, .tid = tid, .tgid = VM,
					.tid2 = waker };
}

/* tid is woken (sched_wakeup), reported on CPU cpu (the waker's, or the target's for a queued wakeup). */
static struct vcpustat_event wake_ev(__u64 ts, __u32 tid, __u32 cpu)
{
	return (struct vcpustat_event){ .type = VCPUSTAT_EV_WAKEUP, .ts = ts, .cpu = cpu, .tid = tid, .tgid = VM,
					.arg0 = cpu };
}

#define ENTRY(ts, tid) kvm(VCPUSTAT_EV_KVM_ENTRY, ts, tid, (tid) - TID0, 0, 0)
#define HLT(ts, tid) kvm(VCPUSTAT_EV_KVM_EXIT, ts, tid, SVM_EXIT_HLT, KVM_ISA_SVM, (tid) - TID0)
#define HALT(ts, tid, poll_ns) kvm(VCPUSTAT_EV_HALT, ts, tid, poll_ns, (poll_ns) != 0, 0)
#define HALT_END(ts, tid, waited) kvm(VCPUSTAT_EV_HALT_END, ts, tid, 0, waited, 1)
#define ACCEPT(ts, tid, apicid, vec) kvm(VCPUSTAT_EV_APIC_ACCEPT, ts, tid, apicid, vec, 0)
#define INJ(ts, tid, vec) kvm(VCPUSTAT_EV_INJ_VIRQ, ts, tid, vec, 0, 0)

/*
 * The scenario (ns), SVM, vCPU 0 on CPU 0, vCPU 1 on CPU 1:
 *   vCPU 0   1000 hlt, 1100 halt (poll 40 us), 1700 halt ends, not slept: a poll that worked, 600 ns
 *            2000 hlt, 2100 halt (poll 40 us), 45000 sleeps: KVM's loop gave up at 42100, a failed
 *                 poll of 40000 ns, then 2900 ns on its way to sleep (host)
 *            (1750: KVM injects 0xec into it, awake: no wake-up's vector)
 *            50000 woken by an interrupt on an idle CPU (waker 0), 50100 runs, 50200 halt ends,
 *                 50300 its own LAPIC accepts its timer's interrupt: a timer wake-up, 400 ns to 50400;
 *                 KVM injects 0x40 (50350), then 0x41 (50360): the first is the wake-up's vector
 *   vCPU 1   3000 hlt, 3050 halt (no poll: budget 0), 3100 sleeps
 *            60000 vCPU 0's LAPIC write: vCPU 1's LAPIC accepts 0x41, 60005 vCPU 0 starts waking it
 *                 (sched_waking), 60010 it is woken, reported on its own CPU 1: an IPI, 990 ns to 61000,
 *                 vector 0x41 injected at 60900
 *            62000 hlt, 62100 sleeps; 70000 a device thread's interrupt (on CPU 1), 70005 it wakes
 *                 vCPU 1: a device wake-up, 195 ns to 70200, vector 0x22 injected at 70150
 *            71000 hlt, 71100 sleeps; 80000 woken on CPU 0 by no interrupt's thread (0): other, 300 ns
 *            81000 hlt, 81100 sleeps; 90000 the device's interrupt on CPU 1, but vCPU 1 is woken at
 *                 2090000 (2 ms later: not that interrupt's kick): other, 100 ns
 *            (neither "other" wake-up has a vector injected: "none", 2, 400 ns)
 */
static size_t scenario(struct vcpustat_event *out)
{
	const struct vcpustat_event s[] = {
		ENTRY(100, TID0),
		ENTRY(100, TID1),
		kvm(VCPUSTAT_EV_HALT_POLL_NS, 900, TID0, 40000, 20000, 0 | 1ull << 32),
		HLT(1000, TID0),
		HALT(1100, TID0, 40000),
		HALT_END(1700, TID0, 0),
		INJ(1750, TID0, 0xec),
		ENTRY(1800, TID0),
		HLT(2000, TID0),
		HALT(2100, TID0, 40000),
		HLT(3000, TID1),
		HALT(3050, TID1, 0),
		sleep_ev(3100, TID1, 1),
		sleep_ev(45000, TID0, 0),
		waking_ev(49990, TID0, 0, 0),
		wake_ev(50000, TID0, 0),
		run_ev(50100, TID0, 0),
		HALT_END(50200, TID0, 1),
		ACCEPT(50300, TID0, 0, 0x40),
		INJ(50350, TID0, 0x40),
		INJ(50360, TID0, 0x41),
		ENTRY(50400, TID0),
		ACCEPT(60000, TID0, 1, 0x41),
		waking_ev(60005, TID1, TID0, 0),
		wake_ev(60010, TID1, 1), /* queued to vCPU 1's idle CPU: reported there */
		run_ev(60500, TID1, 1),
		INJ(60900, TID1, 0x41),
		ENTRY(61000, TID1),
		HLT(62000, TID1),
		sleep_ev(62100, TID1, 1),
		ACCEPT(70000, DEVICE, 1, 0x22),
		waking_ev(70003, TID1, DEVICE, 1),
		wake_ev(70005, TID1, 1),
		run_ev(70100, TID1, 1),
		INJ(70150, TID1, 0x22),
		ENTRY(70200, TID1),
		HLT(71000, TID1),
		sleep_ev(71100, TID1, 1),
		waking_ev(79990, TID1, 0, 0),
		wake_ev(80000, TID1, 0),
		run_ev(80100, TID1, 1),
		ENTRY(80300, TID1),
		HLT(81000, TID1),
		sleep_ev(81100, TID1, 1),
		ACCEPT(90000, DEVICE, 1, 0x22),
		waking_ev(2089990, TID1, DEVICE, 1),
		wake_ev(2090000, TID1, 1),
		run_ev(2090050, TID1, 1),
		ENTRY(2090100, TID1),
	};

	memcpy(out, s, sizeof(s));
	return sizeof(s) / sizeof(s[0]);
}

static const struct vcpustat_vcpu *find_vcpu(const struct vcpustat_snapshot *s, __u32 tid)
{
	for (size_t i = 0; i < s->nr_vcpus; i++)
		if (s->vcpus[i].tid == tid)
			return &s->vcpus[i];
	return NULL;
}

/* The VM's histogram of kind (VCPU_SAMPLE_WAKE or _WAKE_VECTOR) and reason (or vector), or NULL. */
static const struct vcpustat_hist *find_hist(const struct vcpustat_snapshot *s, __u32 kind, __u32 reason)
{
	for (size_t i = 0; i < s->nr_hists; i++)
		if (s->hists[i].key.tgid == VM && s->hists[i].key.kind == kind && s->hists[i].key.reason == reason)
			return &s->hists[i].hist;
	return NULL;
}

static const struct vcpustat_hist *find_wake(const struct vcpustat_snapshot *s, __u32 reason)
{
	return find_hist(s, VCPU_SAMPLE_WAKE, reason);
}

/* The wake-ups by vector the scenario makes: what each test checks, in the maps, outputs and reports. */
static const struct {
	__u32 vector;
	const char *name;
	__u64 count, sum_ns;
} want_vectors[] = {
	{ 0x40, "0x40", 1, 400 },
	{ 0x41, "0x41", 1, 990 },
	{ 0x22, "0x22", 1, 195 },
	{ 0, "none", 2, 400 },
};
#define NR_WANT_VECTORS (sizeof(want_vectors) / sizeof(want_vectors[0]))

static void assert_scenario(const struct vcpustat_snapshot *s, const char *src)
{
	const struct vcpustat_vcpu *v0 = find_vcpu(s, TID0), *v1 = find_vcpu(s, TID1);
	static const struct {
		__u32 reason;
		__u64 count, sum_ns;
	} wakes[] = {
		{ VCPU_WAKE_TIMER, 1, 400 },
		{ VCPU_WAKE_IPI, 1, 990 },
		{ VCPU_WAKE_DEVICE, 1, 195 },
		{ VCPU_WAKE_OTHER, 2, 300 + 100 },
	};

	cr_assert_not_null(v0, "%s: vCPU 0", src);
	cr_assert_not_null(v1, "%s: vCPU 1", src);
	cr_assert_eq(v0->fsm.polls_ok, 1, "%s", src);
	cr_assert_eq(v0->fsm.polls_failed, 1, "%s", src);
	cr_assert_eq(v0->fsm.ns[VCPU_POLL], 600 + 40000, "%s: POLL %llu", src, v0->fsm.ns[VCPU_POLL]);
	cr_assert_eq(v0->fsm.poll_fail_ns, 40000, "%s", src);
	cr_assert_eq(v0->fsm.ns[VCPU_HOST], 100 + 100 + 100 + 2900 + 300, "%s: host %llu", src,
		     v0->fsm.ns[VCPU_HOST]);
	cr_assert_eq(v0->fsm.halt_poll_ns, 40000, "%s", src);
	cr_assert_eq(v1->fsm.polls_ok + v1->fsm.polls_failed, 0, "%s: a halt without a budget is no poll", src);
	cr_assert_eq(v1->fsm.ns[VCPU_POLL], 0, "%s", src);
	for (size_t i = 0; i < sizeof(wakes) / sizeof(wakes[0]); i++) {
		const struct vcpustat_hist *h = find_wake(s, wakes[i].reason);

		cr_assert_not_null(h, "%s: wake-ups by %s", src, wake_reason_name(wakes[i].reason));
		cr_assert_eq(h->count, wakes[i].count, "%s: %s count %llu", src, wake_reason_name(wakes[i].reason),
			     h->count);
		cr_assert_eq(h->sum_ns, wakes[i].sum_ns, "%s: %s sum %llu", src, wake_reason_name(wakes[i].reason),
			     h->sum_ns);
	}
	for (size_t i = 0; i < NR_WANT_VECTORS; i++) {
		const struct vcpustat_hist *h = find_hist(s, VCPU_SAMPLE_WAKE_VECTOR, want_vectors[i].vector);

		cr_assert_not_null(h, "%s: wake-ups by vector %s", src, want_vectors[i].name);
		cr_assert_eq(h->count, want_vectors[i].count, "%s: vector %s count %llu", src, want_vectors[i].name,
			     h->count);
		cr_assert_eq(h->sum_ns, want_vectors[i].sum_ns, "%s: vector %s sum %llu", src, want_vectors[i].name,
			     h->sum_ns);
	}
	cr_assert_null(find_hist(s, VCPU_SAMPLE_WAKE_VECTOR, 0xec), "%s: 0xec went to an awake vCPU", src);
}

Test(halt, polls_and_wake_reasons_through_replay)
{
	struct replay_options o = { .record_level = VCPUSTAT_LEVEL_VCPU };
	struct vcpustat_event evs[64];
	struct vcpustat_snapshot snap;
	struct replay *rp;
	size_t n = scenario(evs);

	cr_assert_eq(replay_new(&rp, &o), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	cr_assert_eq(replay_snapshot(rp, &snap), 0);
	assert_scenario(&snap, "replay");
	vcpustat_snapshot_free(&snap);
	replay_free(rp);
}

Test(halt, the_kernel_counts_polls_and_wake_reasons_as_replay_does)
{
	struct vcpustat_event evs[64];
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;

	SKIP_UNLESS(bpf_unavailable());
	vs = inject_events(evs, scenario(evs), false, &snap);
	assert_scenario(&snap, "kernel");
	vcpustat_snapshot_free(&snap);
	vcpustat_close(vs);
}

/*
 * The device's interrupt races the vCPU's sleep: its waker's sched_waking
 * comes while the vCPU is still on its way out (the kernel traces waking for
 * a task in a sleeping state), the wake-up after its switch out, at once or
 * 2 ms later (a wake-up queued to the vCPU's CPU completes when that CPU
 * takes the IPI: 1.4-1.7 ms after the waking under the lab's emulation). The
 * wake-up is the device's, with its vector, however late.
 *
 * Spent (spent != 0): the waking finds the vCPU not yet asleep, and its
 * sched_wakeup changes nothing (the kernel's ttwu_runnable); the vCPU then
 * sleeps and is woken with no sched_waking seen (an event lost): that
 * wake-up is no device's, its hint went with the wake-up it belonged to.
 */
static void racing_sleep(struct vcpustat_event *evs, size_t *n, __u64 late, int spent)
{
	const struct vcpustat_event before[] = {
		ENTRY(100, TID0),
		HLT(1000, TID0),
		HALT(1100, TID0, 0),
		ACCEPT(2000, DEVICE, 0, 0x42),
		waking_ev(2005, TID0, DEVICE, 1),
	};
	const struct vcpustat_event after[] = {
		sleep_ev(2010, TID0, 0),
		wake_ev(2020 + late, TID0, 0), /* spent: its sched_waking not seen */
		run_ev(2030 + late, TID0, 0),
		INJ(2040 + late, TID0, 0x42),
		ENTRY(2050 + late, TID0),
	};

	memcpy(evs, before, sizeof(before));
	*n = sizeof(before) / sizeof(before[0]);
	if (spent)
		evs[(*n)++] = wake_ev(2008, TID0, 0); /* the vCPU still running: it changes nothing */
	memcpy(evs + *n, after, sizeof(after));
	*n += sizeof(after) / sizeof(after[0]);
}

Test(halt, a_device_interrupt_racing_the_sleep_names_the_device)
{
	struct vcpustat_options ko = { .record_level = VCPUSTAT_LEVEL_NONE };
	struct replay_options o = { .record_level = VCPUSTAT_LEVEL_VCPU };
	struct vcpustat_event evs[16];
	struct vcpustat_snapshot snap;
	size_t n;

	for (int kernel = 0; kernel < 2; kernel++)
		for (int late = 0; late < 2; late++)
			for (int spent = 0; spent < 2; spent++) {
				const char *src = kernel ? "kernel" : "replay";
				const struct vcpustat_hist *dev, *other, *vec;
				struct vcpustat *vs = NULL;
				struct replay *rp = NULL;

				racing_sleep(evs, &n, late ? 2000000 : 0, spent);
				if (kernel) {
					if (bpf_unavailable())
						continue; /* replay's half says it all; the kernel's needs BPF */
					cr_assert_eq(vcpustat_open(&vs, &ko), 0);
					for (size_t i = 0; i < n; i++)
						cr_assert_eq(vcpustat_inject(vs, &evs[i]), 0);
					cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
				} else {
					cr_assert_eq(replay_new(&rp, &o), 0);
					for (size_t i = 0; i < n; i++)
						cr_assert_eq(replay_event(rp, &evs[i]), 0);
					cr_assert_eq(replay_snapshot(rp, &snap), 0);
				}
				dev = find_wake(&snap, VCPU_WAKE_DEVICE);
				other = find_wake(&snap, VCPU_WAKE_OTHER);
				vec = find_hist(&snap, VCPU_SAMPLE_WAKE_VECTOR, 0x42);
				cr_assert_not_null(vec, "%s: the vector", src);
				cr_assert_eq(vec->count, 1, "%s: one wake-up by 0x42", src);
				cr_assert_eq(vec->sum_ns, 30);
				if (!spent) {
					cr_assert(dev && dev->count == 1 && dev->sum_ns == 30,
						  "%s: a device wake-up, 30 ns, its wakeup %s", src,
						  late ? "2 ms after its waking" : "at once");
					cr_assert_null(other);
				} else {
					cr_assert(other && other->count == 1 && other->sum_ns == 30,
						  "%s: a hint its own wake-up used is no cause of the next", src);
					cr_assert_null(dev);
				}
				vcpustat_snapshot_free(&snap);
				if (vs)
					vcpustat_close(vs);
				if (rp)
					replay_free(rp);
			}
}

Test(halt, wake_reasons_have_names_and_back)
{
	for (unsigned int r = 0; r < VCPU_NR_WAKE_REASONS; r++) {
		int back = wake_reason_from_name(wake_reason_name(r));

		cr_assert_eq(back, (int)r, "%s", wake_reason_name(r));
	}
	cr_assert_str_eq(wake_reason_name(VCPU_WAKE_IPI), "ipi");
	cr_assert_eq(wake_reason_from_name("nonsense"), -1);
}

Test(halt, wake_vectors_have_names_and_back)
{
	static const char *const bad[] = { "0x", "0x4", "0x400", "0xg1", "0x-1", "0x 1", "0x00", "40", "", "None" };
	char buf[8];

	for (unsigned int v = 0; v < 256; v++)
		cr_assert_eq(wake_vector_from_name(wake_vector_name(v, buf, sizeof(buf))), (int)v, "%u", v);
	cr_assert_str_eq(wake_vector_name(0xec, buf, sizeof(buf)), "0xec");
	cr_assert_str_eq(wake_vector_name(0, buf, sizeof(buf)), "none");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(wake_vector_from_name(bad[i]), -1, "\"%s\"", bad[i]);
}

/* The JSON row of `reason` in a VM's "wake_reasons" (NULL: none). */
static json_t *wake_row(json_t *wakes, const char *reason)
{
	json_t *r;
	size_t i;

	json_array_foreach(wakes, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "reason")), reason))
			return r;
	return NULL;
}

/*
 * The scenario as one window of 1 s: JSON wake_reasons and halt_poll, the
 * text's WAKE-UP BY table and halt polling line, the exporters' wake-up
 * histogram and poll counters.
 */
Test(halt, the_window_shows_wake_reasons_and_polls_in_every_output)
{
	struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS };
	struct replay_options o = { .record_level = VCPUSTAT_LEVEL_VCPU };
	struct vcpustat_event evs[64];
	struct vcpustat_snapshot a, b;
	struct metrics *m = metrics_new(&mo);
	struct summary sum;
	struct names names;
	struct replay *rp;
	json_t *doc, *vm, *wakes, *r;
	char *text = NULL;
	size_t n = scenario(evs), len = 0;
	FILE *f;

	cr_assert_not_null(m);
	cr_assert_eq(replay_new(&rp, &o), 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	a.ts = 0;
	b.ts = 1000000000;
	cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
	cr_assert_eq(summary_build(&sum, &a, &b, &names, NULL), 0);
	cr_assert_eq(sum.nr_vms, 1);
	cr_assert_eq(sum.vms[0].nr_wakes, 4, "timer, ipi, device, other");

	doc = summary_json_checked(&sum);
	vm = json_array_get(json_object_get(doc, "vms"), 0);
	wakes = json_object_get(vm, "wake_reasons");
	cr_assert_eq(json_array_size(wakes), 4);
	r = wake_row(wakes, "ipi");
	cr_assert_not_null(r);
	cr_assert_eq(json_integer_value(json_object_get(r, "count")), 1);
	cr_assert_eq(json_integer_value(json_object_get(r, "sum_ns")), 990);
	cr_assert_eq(json_integer_value(json_object_get(r, "max_ns")), 990);
	r = wake_row(wakes, "other");
	cr_assert_eq(json_integer_value(json_object_get(r, "count")), 2);
	cr_assert_eq(json_integer_value(json_object_get(r, "sum_ns")), 400);
	wakes = json_object_get(vm, "wake_vectors");
	cr_assert_eq(json_array_size(wakes), NR_WANT_VECTORS);
	for (size_t i = 0; i < NR_WANT_VECTORS; i++) {
		r = wake_row(wakes, want_vectors[i].name);
		cr_assert_not_null(r, "%s", want_vectors[i].name);
		cr_assert_eq(json_integer_value(json_object_get(r, "vector")), want_vectors[i].vector);
		cr_assert_eq(json_integer_value(json_object_get(r, "count")), (json_int_t)want_vectors[i].count);
		cr_assert_eq(json_integer_value(json_object_get(r, "sum_ns")), (json_int_t)want_vectors[i].sum_ns);
	}
	r = json_object_get(vm, "halt_poll");
	cr_assert_eq(json_integer_value(json_object_get(r, "ok")), 1);
	cr_assert_eq(json_integer_value(json_object_get(r, "failed")), 1);
	cr_assert_eq(json_integer_value(json_object_get(r, "failed_ns")), 40000);
	json_decref(doc);

	f = open_memstream(&text, &len);
	summary_print(f, &sum, NULL, 0, 0);
	fclose(f);
	cr_assert_not_null(strstr(text, "WAKE-UP BY"), "%s", text);
	cr_assert_not_null(strstr(text, "    ipi                               1        1.0      990ns      990ns      990ns\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "    timer                             1        1.0      400ns      400ns      400ns\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "halt polling: 1 ok, 1 failed"), "%s", text);
	cr_assert_not_null(strstr(text, "    WAKE-UP VECTOR"), "%s", text);
	cr_assert_not_null(strstr(text, "    0x41                              1        1.0      990ns      990ns      990ns\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "    none                              2        2.0"), "%s", text);
	free(text);
	{
		/* the ncurses view's panel of the VM: both tables, headers in bold */
		struct panel_line lines[32];
		size_t nl = vm_panel_lines(&sum, &sum.vms[0], lines, 32), reasons = nl, vectors = nl;

		for (size_t i = 0; i < nl; i++) {
			if (!strncmp(lines[i].text, "WAKE-UP BY ", 11))
				reasons = i;
			if (!strncmp(lines[i].text, "WAKE-UP VECTOR ", 15))
				vectors = i;
		}
		cr_assert_eq(vectors, reasons + 1 + 4, "4 reasons, then the vectors (%zu lines)", nl);
		cr_assert(lines[reasons].bold && lines[vectors].bold && !lines[vectors + 1].bold);
		cr_assert_eq(nl, vectors + 1 + NR_WANT_VECTORS, "nothing after the vectors here");
		for (size_t i = 0; i < NR_WANT_VECTORS; i++) {
			size_t k = vectors + 1;

			while (k < nl && strncmp(lines[k].text, want_vectors[i].name, strlen(want_vectors[i].name)))
				k++;
			cr_assert_lt(k, nl, "%s in the panel", want_vectors[i].name);
		}
	}

	cr_assert_eq(metrics_add(m, &sum), 0);
	cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &text, &len), 0);
	cr_assert_not_null(strstr(text, "# TYPE vcpustat_wakeup_to_guest_duration_seconds histogram\n"), "%s", text);
	cr_assert_not_null(strstr(text, "vcpustat_wakeup_to_guest_duration_seconds_count{vm=\"pid 60\",reason=\"ipi\"} 1\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "vcpustat_wakeup_to_guest_duration_seconds_sum{vm=\"pid 60\",reason=\"ipi\"} 0.000000990\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "vcpustat_wakeup_to_guest_duration_seconds_count{vm=\"pid 60\",reason=\"other\"} 2\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "vcpustat_halt_polls_total{vm=\"pid 60\",result=\"failed\"} 1\n"), "%s", text);
	ASSERT_HOLDS("Prometheus", text,
		     "vcpustat_wakeup_vector_to_guest_duration_seconds_count{vm=\"pid 60\",vector=\"0x22\"} 1\n",
		     "vcpustat_wakeup_vector_to_guest_duration_seconds_sum{vm=\"pid 60\",vector=\"none\"} 0.000000400\n");
	free(text);
	/* CSV: the vector has its column (18 empty ones between vm and it; then cr3, empty) */
	cr_assert_eq(metrics_render(m, METRICS_CSV, &text, &len), 0);
	cr_assert_not_null(strstr(text, ",vector,cr3,value\n"), "%.300s", text);
	cr_assert_not_null(strstr(text, "vcpustat_wakeup_vector_to_guest_duration_seconds_count,pid 60,,,,,,,,,,,,,,,,,,,0x41,,1\n"),
			   "%s", text);
	free(text);
	/* JSON: each VM's wake_vectors */
	cr_assert_eq(metrics_render(m, METRICS_JSON, &text, &len), 0);
	expect_janssons_text(text, len - 1);
	doc = json_loads(text, 0, NULL);
	cr_assert_not_null(doc);
	wakes = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "wake_vectors");
	cr_assert_eq(json_array_size(wakes), NR_WANT_VECTORS, "%s", text);
	json_array_foreach(wakes, len, r)
		if (!strcmp(json_string_value(json_object_get(r, "vector")), "0x40"))
			break;
	cr_assert_lt(len, NR_WANT_VECTORS, "%s", text);
	cr_assert_eq(json_integer_value(json_object_get(r, "count")), 1);
	json_decref(doc);
	free(text);

	metrics_free(m);
	summary_free(&sum);
	names_free(&names);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	replay_free(rp);
}

/* `report -j SHT WINDOW`: the document (*doc, to free) and its first VM's wake_reasons, n rows of them. */
static json_t *report_wakes(const char *sht, const char *window, size_t n, json_t **doc)
{
	json_t *wakes;

	*doc = report_json(sht, window);
	wakes = json_object_get(json_array_get(json_object_get(*doc, "vms"), 0), "wake_reasons");
	cr_assert_eq(json_array_size(wakes), n, "report -j %s %s: %zu wake reasons", sht, window, json_array_size(wakes));
	return wakes;
}

/*
 * Recordings: `vcpustat replay` of a capture of the scenario writes each
 * wake-up's reason at its first kvm_entry (wake_reason), and `report` of the
 * file gives the same wake-up table as the kernel's maps, to the nanosecond
 * (the wake-up: the end of the vCPU's sleep in the file); a window that holds
 * only the IPI's entry has it alone.
 */
Test(halt, a_recording_gives_the_wake_reasons_of_the_live_maps)
{
	static const struct {
		const char *reason;
		long long count, sum_ns;
	} want[] = { { "timer", 1, 400 }, { "ipi", 1, 990 }, { "device", 1, 195 }, { "other", 2, 400 } };
	char sht[] = "/tmp/vcpustat-halt-XXXXXX.sht", args[512];
	static char out[1 << 16];
	struct vcpustat_event evs[64];
	size_t n = scenario(evs);
	json_t *doc, *wakes, *r;
	int fd;

	fd = mkstemps(sht, 4);
	cr_assert_geq(fd, 0);
	close(fd);
	replay_to_sht(evs, n, VM, "hv", 3000000, sht);

	wakes = report_wakes(sht, "", 4, &doc);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		r = wake_row(wakes, want[i].reason);
		cr_assert_not_null(r, "%s", want[i].reason);
		cr_assert_eq(json_integer_value(json_object_get(r, "count")), want[i].count, "%s", want[i].reason);
		cr_assert_eq(json_integer_value(json_object_get(r, "sum_ns")), want[i].sum_ns, "%s", want[i].reason);
	}
	/* and by vector (the wake_vector attribute), as the live maps have them */
	wakes = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "wake_vectors");
	cr_assert_eq(json_array_size(wakes), NR_WANT_VECTORS);
	for (size_t i = 0; i < NR_WANT_VECTORS; i++) {
		r = wake_row(wakes, want_vectors[i].name);
		cr_assert_not_null(r, "%s", want_vectors[i].name);
		cr_assert_eq(json_integer_value(json_object_get(r, "vector")), want_vectors[i].vector);
		cr_assert_eq(json_integer_value(json_object_get(r, "count")), (json_int_t)want_vectors[i].count, "%s",
			     want_vectors[i].name);
		cr_assert_eq(json_integer_value(json_object_get(r, "sum_ns")), (json_int_t)want_vectors[i].sum_ns, "%s",
			     want_vectors[i].name);
	}
	json_decref(doc);

	/* the IPI's entry at 61000 alone: [60500, 61500) */
	wakes = report_wakes(sht, "--from 60500 --to 61500", 1, &doc);
	r = wake_row(wakes, "ipi");
	cr_assert_not_null(r);
	cr_assert_eq(json_integer_value(json_object_get(r, "sum_ns")), 990);
	json_decref(doc);

	/* the text's table, and the attribute as query shows it */
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "WAKE-UP BY"), "%s", out);
	snprintf(args, sizeof(args), "query %s --at 61000 --path '/vms/hv/vcpus/1/wake_reason'", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "ipi"), "%s", out);
	snprintf(args, sizeof(args), "query %s --at 61000 --path '/vms/hv/vcpus/1/wake_vector'", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "0x41"), "%s", out);
	{
		/* plot: the wake-up histogram, stacked by reason */
		char svg[] = "/tmp/vcpustat-halt-XXXXXX.svg", *text = NULL;
		size_t len = 0;
		FILE *f;

		fd = mkstemps(svg, 4);
		cr_assert_geq(fd, 0);
		close(fd);
		snprintf(args, sizeof(args), "plot %s -o %s", sht, svg);
		cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
		f = fopen(svg, "r");
		cr_assert_not_null(f);
		cr_assert_gt(getdelim(&text, &len, '\0', f), 0);
		fclose(f);
		cr_assert_not_null(strstr(text, "Wake-up to guest code, by what woke the sleeping vCPU (5 in the window)"),
				   "%s", text);
		cr_assert_not_null(strstr(text, ">ipi (1)<"), "the reasons' legend");
		cr_assert_not_null(strstr(text, ">timer (1)<"), "the reasons' legend");
		/* ... and by vector: 0x22, 0x40 and 0x41 once each, none twice */
		cr_assert_not_null(strstr(text, "Wake-up to guest code, by the vector injected at that entry (5 in the window)"),
				   "%s", text);
		ASSERT_HOLDS("the vectors' legend", text, ">none (2)<", ">0x22 (1)<", ">0x40 (1)<", ">0x41 (1)<");
		free(text);
		unlink(svg);
	}
	unlink(sht);
}

/*
 * The vector tables and charts are left out only when every wake-up is
 * "none" (posted interrupts): one "none" row alone; any vector, or a vector
 * beside "none", is shown.
 */
Test(halt, vectors_are_hidden_only_when_none_was_ever_injected)
{
	struct latency_summary rows[2] = { { .kind = VCPU_SAMPLE_WAKE_VECTOR, .reason = 0, .count = 3 },
					   { .kind = VCPU_SAMPLE_WAKE_VECTOR, .reason = 0xec, .count = 1 } };
	struct vm_summary vm = { .wake_vectors = rows };

	cr_assert_not(wake_vectors_worth_showing(&vm), "no wake-up at all");
	vm.nr_wake_vectors = 1;
	cr_assert_not(wake_vectors_worth_showing(&vm), "only none");
	vm.nr_wake_vectors = 2;
	cr_assert(wake_vectors_worth_showing(&vm), "none and 0xec");
	vm.wake_vectors = &rows[1];
	vm.nr_wake_vectors = 1;
	cr_assert(wake_vectors_worth_showing(&vm), "0xec alone");
}
