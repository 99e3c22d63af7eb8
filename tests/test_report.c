// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat report over windows of imported and recorded files. One rule
 * for every count: an exit belongs to the window of its kvm_exit (or
 * kvm_userspace_exit), in the vCPU's kvm_exits and in the exit-reason table
 * alike; that holds when its kvm_entry is the trace's last event, when it
 * ends exactly at --to, for random traces and random windows, and when
 * events precede a recording's start. Also: each exit's isa and code in
 * `report -j`, and the times of files without a wall clock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record/record.h"
#include "helpers.h"
#include "host_scenario.h"
#include "import_helpers.h"
#include "model/summary.h"
#include "model/report.h"

#define MONO0 5000000000000ull	     /* a recording's start on CLOCK_MONOTONIC */
#define REAL0 1795356187000000000ull /* 2026-11-22T14:03:07Z */

static void build(const char *sht, uint64_t t1, uint64_t t2, struct summary *s)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	bool culprits;

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(s, r, t1, t2, NULL, &culprits, &err), 0, "%s", err.msg);
	sht_close(r);
}

static uint64_t file_end(const char *sht)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	uint64_t end;

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	end = sht_get_info(r)->end;
	sht_close(r);
	return end;
}

static __u64 table_count(const struct latency_summary *l, size_t n)
{
	__u64 sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += l[i].count;
	return sum;
}

/* The one rule: every VM's exits are in its tables, no more, no less. */
static void assert_one_rule(const struct summary *s, uint64_t t1, uint64_t t2)
{
	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];

		cr_assert_eq(vm->kvm_exits, table_count(vm->exits, vm->nr_exits),
			     "VM %s, window [%llu, %llu): kvm_exits %llu, exit-reason table %llu", vm->name,
			     (unsigned long long)t1, (unsigned long long)t2, (unsigned long long)vm->kvm_exits,
			     (unsigned long long)table_count(vm->exits, vm->nr_exits));
		cr_assert_eq(vm->userspace_exits, table_count(vm->uexits, vm->nr_uexits),
			     "VM %s, window [%llu, %llu): userspace_exits %llu, userspace-exit table %llu", vm->name,
			     (unsigned long long)t1, (unsigned long long)t2, (unsigned long long)vm->userspace_exits,
			     (unsigned long long)table_count(vm->uexits, vm->nr_uexits));
	}
}

static const struct latency_summary *named(const struct latency_summary *l, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			return &l[i];
	return NULL;
}

/* ---- imports ---- */

static char *import_tevs(const struct tev *e, size_t n)
{
	static const struct layout l = { .tgid = true, .irq = true, .decimals = 9 };
	struct import_opts o = { 0 };
	char *sht;

	o.host = imp_write_trace(e, n, &l);
	sht = imp_run(&o, NULL);
	unlink(o.host);
	return sht;
}

/*
 * Seen on a real `trace-cmd report`: the 7th exit, closed by the trace's
 * last event, was in kvm_exits but not in the table (count 6, kvm_exits 7).
 */
Test(report, import_exit_closed_by_the_last_event_is_counted)
{
	struct tev e[32];
	struct summary s;
	const struct latency_summary *msr;
	size_t n = 0;
	char *sht;

	e[n++] = sw(0, 0, 0, "R", 1001);
	e[n++] = kvm(T_ENTRY, 5, 0, 1001, NULL);
	for (int i = 0; i < 7; i++) {
		e[n++] = kvm(T_KEXIT, 10 + 10 * (uint64_t)i, 0, 1001, "MSR_WRITE");
		e[n++] = kvm(T_ENTRY, 12 + 10 * (uint64_t)i, 0, 1001, NULL); /* the last is the trace's last event */
	}
	sht = import_tevs(e, n);
	build(sht, 0, file_end(sht), &s);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].kvm_exits, 7);
	msr = named(s.vms[0].exits, s.vms[0].nr_exits, "MSR_WRITE");
	cr_assert_not_null(msr);
	cr_assert_eq(msr->count, 7, "count %llu, kvm_exits 7", (unsigned long long)msr->count);
	cr_assert_eq(msr->sum_ns, 7 * 2000, "each exit lasted 2 us");
	cr_assert_eq(s.vms[0].vcpus[0].state, VCPU_GUEST, "the last event put the vCPU in guest mode");
	summary_free(&s);
	unlink(sht);
}

/* A random plausible host trace: 3 vCPU threads of 2 VMs and a hog on 2 CPUs, many equal timestamps. */
static size_t random_trace(unsigned int *seed, struct tev *e, size_t max)
{
	static const uint32_t vcpus[] = { 1001, 1002, 2001 };
	static const char *const reasons[] = { "MSR_WRITE", "HLT", "IO_INSTRUCTION", "EPT_VIOLATION" };
	static const uint32_t ureasons[] = { 2, 5, 6, 10 };
	uint64_t t = 0;
	size_t n = 0;

	while (n < max) {
		uint32_t p = vcpus[rand_r(seed) % 3], cpu = (uint32_t)rand_r(seed) % 2;
		int r = rand_r(seed) % 100;

		t += (uint64_t)(rand_r(seed) % 4) * 700; /* ns; a quarter at the same ns */
		if (r < 25)
			e[n] = kvm(T_ENTRY, 0, cpu, p, NULL);
		else if (r < 55)
			e[n] = kvm(T_KEXIT, 0, cpu, p, reasons[rand_r(seed) % 4]);
		else if (r < 68) {
			e[n] = kvm(T_UEXIT, 0, cpu, p, NULL);
			e[n].ureason = ureasons[rand_r(seed) % 4];
		} else if (r < 78) {
			e[n] = kvm(T_FPU, 0, cpu, p, NULL);
		} else if (r < 90) {
			e[n] = rand_r(seed) % 2 ? sw(0, cpu, p, rand_r(seed) % 2 ? "R+" : "S", HOG) : sw(0, cpu, HOG, "R+", p);
		} else {
			e[n] = wake(0, cpu, HOG, p, cpu);
		}
		e[n++].ts = BASE + t;
	}
	return n;
}

/* A window edge: an event's time (or 1 ns off it) half of the time, else anywhere. */
static uint64_t random_edge(unsigned int *seed, const struct tev *e, size_t n, uint64_t end)
{
	if (rand_r(seed) % 2) {
		uint64_t t = e[rand_r(seed) % n].ts - BASE;

		return t + (uint64_t)(rand_r(seed) % 3) - (t ? 1 : 0);
	}
	return (uint64_t)rand_r(seed) % (end + 1);
}

static void check_random_windows(const char *sht, unsigned int *seed, const struct tev *e, size_t n, int windows)
{
	uint64_t end = file_end(sht);
	struct summary s;

	build(sht, 0, end, &s);
	assert_one_rule(&s, 0, end);
	cr_assert_gt(s.nr_vms, 0);
	summary_free(&s);
	for (int w = 0; w < windows; w++) {
		uint64_t a = random_edge(seed, e, n, end), b = random_edge(seed, e, n, end);

		if (a > end)
			a = end;
		if (b > end)
			b = end;
		if (a == b)
			continue;
		if (a > b) {
			uint64_t x = a;

			a = b;
			b = x;
		}
		build(sht, a, b, &s);
		assert_one_rule(&s, a, b);
		summary_free(&s);
	}
}

Test(report, property_import_kvm_exits_equal_the_tables_for_random_windows, .timeout = 120)
{
	struct tev *e = calloc(400, sizeof(*e));

	for (unsigned int run = 0; run < 12; run++) {
		unsigned int seed = 1000 + run;
		size_t n = random_trace(&seed, e, 100 + (size_t)(rand_r(&seed) % 300));
		char *sht = import_tevs(e, n);

		check_random_windows(sht, &seed, e, n, 60);
		unlink(sht);
	}
	free(e);
}

/* ---- recordings (replays of captures: what `vcpustat record` writes) ---- */

static struct vcpustat_event at(int64_t t, uint32_t tid, __u64 type, __u64 a0, __u64 a1)
{
	struct vcpustat_event ev = { .type = type, .ts = (__u64)((int64_t)MONO0 + t), .tid = tid, .tgid = tid / 1000 * 1000,
				     .arg0 = a0, .arg1 = a1 };

	snprintf(ev.comm, sizeof(ev.comm), "CPU %u/KVM", tid % 1000 - 1);
	if (type == VCPUSTAT_EV_KVM_ENTRY)
		ev.arg0 = tid % 1000 - 1;
	if (type == VCPUSTAT_EV_KVM_EXIT)
		ev.arg2 = tid % 1000 - 1;
	return ev;
}

#define ENTRY(t) at(t, 1001, VCPUSTAT_EV_KVM_ENTRY, 0, 0)
#define EXIT(t, code) at(t, 1001, VCPUSTAT_EV_KVM_EXIT, code, KVM_ISA_SVM)
#define UEXIT(t, code) at(t, 1001, VCPUSTAT_EV_USERSPACE_EXIT, code, 0)
#define RUN(t) at(t, 1001, VCPUSTAT_EV_KVM_RUN, 0, 0)

/* `vcpustat replay` of a capture of these events, started at MONO0, ended at MONO0 + end. */
static char *replay(const struct vcpustat_event *ev, size_t n, uint64_t end)
{
	struct vcpustat_error err = { 0 };
	struct capture_writer *w;
	char *cap = imp_tmp(".vcap"), *sht = imp_tmp(".sht"), args[512], out[4096];

	cr_assert_eq(capture_create(&w, cap, MONO0, REAL0, "level=vcpu\ncpus=2\n", &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(capture_write(w, &ev[i], &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_end(w, MONO0 + end, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	snprintf(args, sizeof(args), "replay -q %s -o %s", cap, sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	unlink(cap);
	return sht;
}

/*
 * SVM exits of one vCPU; the first five events happened before the
 * recording started (they were in the ring buffer when it began).
 */
static size_t svm_recording(struct vcpustat_event *ev)
{
	size_t n = 0;

	ev[n++] = ENTRY(-5000);
	ev[n++] = EXIT(-4000, 0x400);	/* npf: wholly before the start */
	ev[n++] = ENTRY(-3000);
	ev[n++] = EXIT(-1000, 0x078);	/* hlt: in progress at the start */
	ev[n++] = UEXIT(-500, 5);	/* HLT: in progress at the start */
	ev[n++] = RUN(1000);
	ev[n++] = ENTRY(1500);
	ev[n++] = EXIT(2000, 0x07c);	/* msr, 500 ns: ends exactly at 2500 */
	ev[n++] = ENTRY(2500);
	ev[n++] = EXIT(3000, 0x07b);	/* io, 1100 ns: starts exactly at 3000 */
	ev[n++] = UEXIT(3100, 2);	/* IO, 900 ns */
	ev[n++] = RUN(4000);
	ev[n++] = ENTRY(4100);
	return n;
}

/* Seen with real SVM exits: events before the start became zero-length exits at t = 0. */
Test(report, recording_events_before_the_start_are_not_exits_of_the_file)
{
	static const uint64_t edges[] = { 0, 1, 999, 1000, 1001, 1500, 2000, 2499, 2500, 2501, 3000, 3100, 4000, 4100, 9999, 10000 };
	struct vcpustat_event ev[16];
	struct sht_interval *iv;
	struct sht_reader *r;
	struct summary s;
	size_t n = svm_recording(ev), niv;
	char *sht = replay(ev, n, 10000);

	build(sht, 0, 10000, &s);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].kvm_exits, 2, "msr and io: the exits that began in the recording");
	cr_assert_eq(s.vms[0].userspace_exits, 1);
	cr_assert_eq(s.vms[0].nr_exits, 2);
	cr_assert_eq(named(s.vms[0].exits, 2, "msr")->sum_ns, 500);
	cr_assert_eq(named(s.vms[0].exits, 2, "io")->sum_ns, 1100);
	cr_assert_null(named(s.vms[0].exits, 2, "hlt"), "hlt began before the start");
	cr_assert_eq(s.vms[0].nr_uexits, 1);
	cr_assert_eq(named(s.vms[0].uexits, 1, "IO")->sum_ns, 900);
	summary_free(&s);
	/* no interval stored as if the events had happened at the start */
	niv = imp_intervals(sht, "/vms/pid1000/vcpus/0/exit_reason", &iv, &r);
	for (size_t i = 0; i < niv; i++)
		cr_assert(iv[i].value.type != SHT_STR || iv[i].start > 0, "exit %s at t = %llu", iv[i].value.s,
			  (unsigned long long)iv[i].start);
	free(iv);
	sht_close(r);
	niv = imp_intervals(sht, "/vms/pid1000/vcpus/0/state", &iv, &r);
	cr_assert_geq(niv, 1);
	cr_assert_eq(iv[0].start, 0);
	cr_assert_eq(iv[0].end, 1500, "in the hypervisor from the start to the first kvm_entry");
	cr_assert_eq(iv[0].value.i, VCPU_HOST);
	free(iv);
	sht_close(r);
	/* and every window agrees with itself */
	for (size_t a = 0; a < sizeof(edges) / sizeof(edges[0]); a++)
		for (size_t b = a + 1; b < sizeof(edges) / sizeof(edges[0]); b++) {
			build(sht, edges[a], edges[b], &s);
			assert_one_rule(&s, edges[a], edges[b]);
			summary_free(&s);
		}
	unlink(sht);
}

static struct vcpustat_event switch_at(int64_t t, uint32_t prev, uint32_t next, bool preempt)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_SWITCH, .ts = (__u64)((int64_t)MONO0 + t), .tid = prev,
				     .tgid = prev / 1000 * 1000, .tid2 = next, .tgid2 = next / 1000 * 1000,
				     .arg1 = preempt };

	snprintf(ev.comm, sizeof(ev.comm), "%s", prev == 1001 ? "CPU 0/KVM" : "stress-ng");
	return ev;
}

/* A vCPU preempted before the recording started: its state at the start, not a preemption of the file. */
Test(report, recording_preempted_before_the_start_is_no_preemption_of_the_file)
{
	struct vcpustat_event ev[] = {
		ENTRY(-5000),
		switch_at(-4000, 1001, 500, true), /* preempted before the start */
		switch_at(1000, 500, 1001, false), /* back on the CPU: a wait of unknown length */
		ENTRY(1500),
		switch_at(2000, 1001, 500, true), /* preempted in the recording: 1000 ns */
		switch_at(3000, 500, 1001, false),
		ENTRY(3100),
	};
	char *sht = replay(ev, sizeof(ev) / sizeof(ev[0]), 10000);
	struct summary s;

	build(sht, 0, 10000, &s);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].preemptions, 1);
	cr_assert_eq(s.vms[0].vcpus[0].ns[VCPU_PREEMPTED], 1000 + 1000, "it was preempted from the start to 1000");
	cr_assert_eq(s.vms[0].runq.count, 1, "only the wait the file holds whole");
	cr_assert_eq(s.vms[0].runq.sum_ns, 1000);
	summary_free(&s);
	unlink(sht);
}

/* kvm_exits of the first vCPU, and the count of exit reason name (0 if absent) */
static void json_exits(json_t *j, const char *name, long long *kvm_exits, long long *count)
{
	json_t *vm = json_array_get(json_object_get(j, "vms"), 0), *x;
	size_t i;

	*kvm_exits = *count = 0;
	if (!vm)
		return;
	*kvm_exits = json_integer_value(json_object_get(json_array_get(json_object_get(vm, "vcpus"), 0), "kvm_exits"));
	json_array_foreach(json_object_get(vm, "exits"), i, x)
		if (!strcmp(json_string_value(json_object_get(x, "reason")), name))
			*count = json_integer_value(json_object_get(x, "count"));
}

/* report --to T: an exit that ends exactly at T began in the window: it is in it, everywhere. */
Test(report, recording_exit_ending_exactly_at_to_belongs_to_the_window_of_its_start)
{
	struct vcpustat_event ev[16];
	size_t n = svm_recording(ev);
	char *sht = replay(ev, n, 10000);
	long long exits, count;
	json_t *j;

	j = report_json(sht, "--to 2500"); /* msr: 2000 .. 2500 */
	json_exits(j, "msr", &exits, &count);
	cr_assert_eq(exits, 1);
	cr_assert_eq(count, 1);
	json_decref(j);
	j = report_json(sht, "--from 2500");
	json_exits(j, "msr", &exits, &count);
	cr_assert_eq(count, 0);
	cr_assert_eq(exits, 1, "only io");
	json_decref(j);
	j = report_json(sht, "--to 3000"); /* io begins at 3000: the next window's */
	json_exits(j, "io", &exits, &count);
	cr_assert_eq(count, 0);
	cr_assert_eq(exits, 1, "only msr");
	json_decref(j);
	j = report_json(sht, "--from 3000 --to 3001"); /* io, whole, although it ends after the window */
	json_exits(j, "io", &exits, &count);
	cr_assert_eq(count, 1);
	cr_assert_eq(exits, 1);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_array_get(json_object_get(json_array_get(json_object_get(j, "vms"), 0), "exits"), 0),
			     "sum_ns")),
		     1100);
	json_decref(j);
	unlink(sht);
}

/* Random events of three vCPUs, a fifth of them before the recording's start. */
static size_t random_recording(unsigned int *seed, struct vcpustat_event *ev, size_t max, uint64_t *end)
{
	static const uint32_t tids[] = { 1001, 1002, 2001 };
	static const __u64 reasons[] = { 0x400, 0x078, 0x07b, 0x07c, 0x060 };
	static const __u64 ureasons[] = { 2, 5, 6, 10 };
	int64_t t = -(int64_t)(max * 300);
	size_t n = 0;

	while (n < max) {
		uint32_t tid = tids[rand_r(seed) % 3];
		int r = rand_r(seed) % 100;

		t += (rand_r(seed) % 4) * 500;
		if (r < 35)
			ev[n] = at(t, tid, VCPUSTAT_EV_KVM_ENTRY, 0, 0);
		else if (r < 70)
			ev[n] = at(t, tid, VCPUSTAT_EV_KVM_EXIT, reasons[rand_r(seed) % 5], KVM_ISA_SVM);
		else if (r < 85)
			ev[n] = at(t, tid, VCPUSTAT_EV_USERSPACE_EXIT, ureasons[rand_r(seed) % 4], 0);
		else
			ev[n] = at(t, tid, VCPUSTAT_EV_KVM_RUN, 0, 0);
		ev[n++].cpu = (__u64)(tid % 2);
	}
	*end = t > 0 ? (uint64_t)t + (uint64_t)(rand_r(seed) % 2000) : 1000;
	return n;
}

Test(report, property_recording_with_events_before_the_start_for_random_windows, .timeout = 120)
{
	struct vcpustat_event *ev = calloc(400, sizeof(*ev));
	struct tev *times = calloc(400, sizeof(*times));

	for (unsigned int run = 0; run < 10; run++) {
		unsigned int seed = 2000 + run;
		uint64_t end;
		size_t n = random_recording(&seed, ev, 100 + (size_t)(rand_r(&seed) % 300), &end), m = 0;
		char *sht = replay(ev, n, end);

		for (size_t i = 0; i < n; i++) /* the window edges to try: the events' file times */
			if (ev[i].ts >= MONO0)
				times[m++].ts = BASE + ev[i].ts - MONO0;
		if (!m)
			times[m++].ts = BASE;
		check_random_windows(sht, &seed, times, m, 60);
		unlink(sht);
	}
	free(ev);
	free(times);
}

/* ---- isa and code of each exit in report -j ---- */

struct want_exit {
	const char *reason, *isa;
	long long code;
};

static void assert_isa_code(json_t *j, const struct want_exit *want, size_t nwant, const char *uname, long long ucode)
{
	size_t seen = 0, i, v;
	json_t *vm, *x;

	json_array_foreach(json_object_get(j, "vms"), v, vm) {
		json_array_foreach(json_object_get(vm, "exits"), i, x) {
			const char *reason = json_string_value(json_object_get(x, "reason"));
			size_t k;

			for (k = 0; k < nwant && strcmp(want[k].reason, reason); k++)
				;
			cr_assert_lt(k, nwant, "unexpected exit %s", reason);
			cr_assert_str_eq(json_string_value(json_object_get(x, "isa")), want[k].isa, "%s", reason);
			cr_assert_eq(json_integer_value(json_object_get(x, "code")), want[k].code, "%s", reason);
			seen++;
		}
		json_array_foreach(json_object_get(vm, "userspace_exits"), i, x) {
			cr_assert_str_eq(json_string_value(json_object_get(x, "reason")), uname);
			cr_assert_eq(json_integer_value(json_object_get(x, "code")), ucode);
			seen++;
		}
	}
	cr_assert_eq(seen, nwant + 1, "every exit of the scenario is in the report");
}

static void round_trip(unsigned int isa, unsigned int code)
{
	unsigned int isa2 = 0, code2 = 0;
	char buf[32];
	const char *name = exit_reason_name(isa, code, buf, sizeof(buf));

	cr_assert_eq(exit_reason_from_name(name, &isa2, &code2), 0, "%s", name);
	cr_assert_eq(isa2, isa, "%s", name);
	cr_assert_eq(code2, code, "%s", name);
}

static void round_trip_userspace(unsigned int code)
{
	unsigned int code2 = 0;
	char buf[32];
	const char *name = userspace_exit_name(code, buf, sizeof(buf));

	cr_assert_eq(userspace_exit_from_name(name, &code2), 0, "%s", name);
	cr_assert_eq(code2, code, "%s", name);
}

/* The files store names: every name vcpustat writes gives back its isa and code. */
Test(report, every_exit_reason_name_gives_back_its_isa_and_code)
{
	unsigned int isa, code;

#define X(c, n) round_trip(KVM_ISA_VMX, c);
	VCPUSTAT_VMX_EXIT_REASONS(X)
#undef X
#define X(c, n) round_trip(KVM_ISA_SVM, c);
	VCPUSTAT_SVM_EXIT_REASONS(X)
#undef X
#define X(c, n) round_trip_userspace(c);
	VCPUSTAT_KVM_EXIT_REASONS(X)
#undef X
	round_trip(KVM_ISA_VMX, 99);	    /* "VMX_99" */
	round_trip(KVM_ISA_SVM, 0x7777);    /* "SVM_0x7777" */
	round_trip_userspace(99);	    /* "KVM_EXIT_99" */
	cr_assert_eq(exit_reason_from_name("nonsense", &isa, &code), -ENOENT);
	cr_assert_eq(exit_reason_from_name("VMX_", &isa, &code), -ENOENT);
	cr_assert_eq(userspace_exit_from_name("KVM_EXIT_x", &code), -ENOENT);
}

static char *import_scenario(bool svm)
{
	struct tev e[64];

	return import_tevs(e, scenario(e, svm));
}

Test(report, json_isa_and_code_of_a_vmx_import)
{
	/* the scenario's last exits (vmA's MSR_READ, vmB's EPT_VIOLATION) are still open when the trace ends: rows too */
	static const struct want_exit want[] = {
		{ "MSR_WRITE", "vmx", 32 },	 { "HLT", "vmx", 12 },		{ "EXTERNAL_INTERRUPT", "vmx", 1 },
		{ "IO_INSTRUCTION", "vmx", 30 }, { "MSR_READ", "vmx", 31 },	{ "EPT_VIOLATION", "vmx", 48 },
	};
	char *sht = import_scenario(false);
	json_t *j = report_json(sht, "");

	assert_isa_code(j, want, 6, "IO", 2);
	json_decref(j);
	unlink(sht);
}

Test(report, json_isa_and_code_of_an_svm_import)
{
	static const struct want_exit want[] = {
		{ "msr", "svm", 0x7c },
		{ "hlt", "svm", 0x78 },
		{ "interrupt", "svm", 0x60 },
		{ "io", "svm", 0x7b },
		{ "npf", "svm", 0x400 }, /* open when the trace ends (vmA's open msr is in vmA's msr row) */
	};
	char *sht = import_scenario(true);
	json_t *j = report_json(sht, "");

	assert_isa_code(j, want, 5, "IO", 2);
	json_decref(j);
	unlink(sht);
}

Test(report, json_isa_and_code_of_an_svm_recording)
{
	static const struct want_exit want[] = { { "msr", "svm", 0x7c }, { "io", "svm", 0x7b } };
	struct vcpustat_event ev[16];
	size_t n = svm_recording(ev);
	char *sht = replay(ev, n, 10000);
	json_t *j = report_json(sht, "");

	assert_isa_code(j, want, 2, "IO", 2);
	json_decref(j);
	unlink(sht);
}

/* ---- times of files with and without a wall clock ---- */

static void run_ok(const char *args, char *out, size_t len)
{
	cr_assert_eq(run_vcpustat(args, out, len), 0, "vcpustat %s: %s", args, out);
}

/* Every way report, query and plot show times, for one file: all outputs concatenated. */
static char *all_times(const char *sht)
{
	static const char *const cmds[] = { "report %s",	     "report %s -j",	      "report %s --from 0.000001s",
					    "query %s",		     "query %s --json",	      "query %s --at 2us",
					    "query %s --at 2us --json", "query %s --path '/vms/**' --json",
					    "plot %s -o %s",	     "export --file %s -f json",
					    "export --file %s" };
	static char all[1 << 20];
	char args[1024], out[1 << 16], *svg = imp_tmp(".svg");
	size_t len = 0;

	setenv("TZ", "UTC", 1);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(args, sizeof(args), cmds[i], sht, svg);
		run_ok(args, out, sizeof(out));
		len += (size_t)snprintf(all + len, sizeof(all) - len, "%s\n", out);
	}
	{
		FILE *f = fopen(svg, "r");

		cr_assert_not_null(f, "plot wrote no %s", svg);
		len += fread(all + len, 1, sizeof(all) - len - 1, f);
		all[len] = '\0';
		fclose(f);
	}
	unlink(svg);
	return all;
}

Test(report, an_import_shows_trace_times_not_1970)
{
	char *sht = import_scenario(false), *all = all_times(sht), out[4096];

	cr_assert_null(strstr(all, "1970"), "a 1970 date in:\n%s", all);
	cr_assert_null(strstr(all, "00:00:00"), "a wall-clock time of day in:\n%s", all);
	cr_assert_not_null(strstr(all, "+0.000150001s"), "the file's end as seconds since the start:\n%s", all);
	cr_assert_not_null(strstr(all, "trace clock 1000.000000000"), "the tracer's own clock:\n%s", all);
	cr_assert_null(strstr(all, "vcpustat_start_time_seconds "), "no Unix time to give:\n%s", all);
	/* a wall-clock time cannot be placed in such a file: said plainly */
	{
		char args[512];

		snprintf(args, sizeof(args), "report %s --from 14:03:07", sht);
		cr_assert_neq(run_vcpustat(args, out, sizeof(out)), 0);
		cr_assert_not_null(strstr(out, "no wall clock"), "%s", out);
	}
	unlink(sht);
}

Test(report, a_recording_still_shows_wall_clock_times)
{
	struct vcpustat_event ev[16];
	size_t n = svm_recording(ev);
	char *sht = replay(ev, n, 10000), *all = all_times(sht);

	cr_assert_not_null(strstr(all, "2026-11-22T14:03:07"), "wall-clock times in:\n%s", all);
	cr_assert_null(strstr(all, "1970"), "%s", all);
	cr_assert_null(strstr(all, "trace clock"), "%s", all);
	cr_assert_not_null(strstr(all, "vcpustat_start_time_seconds 1795356187.000"), "%s", all);
	unlink(sht);
}

/*
 * Halt polling, in-kernel halts of one SVM vCPU (hlt = 0x78): a poll that
 * sees the wake-up (ok), then one preempted in the middle, which ends its
 * polling (KVM's loop stops when the scheduler wants the CPU): back in HOST,
 * it goes to sleep (failed, its POLL stretch its burnt time), then a
 * change of halt_poll_ns. A recording counts them from the state's
 * transitions, the maps from the state machine: the same numbers.
 */
static size_t halt_poll_events(struct vcpustat_event *ev)
{
	size_t n = 0;

	ev[n++] = ENTRY(1000);
	ev[n++] = EXIT(2000, 0x078);
	ev[n++] = at(2100, 1001, VCPUSTAT_EV_HALT, 200000, 1); /* POLL, halt_poll_ns 200000 */
	ev[n++] = at(2400, 1001, VCPUSTAT_EV_HALT_END, 300, 0); /* ok: 300 ns polled */
	ev[n++] = ENTRY(2500);
	ev[n++] = EXIT(3000, 0x078);
	ev[n++] = at(3100, 1001, VCPUSTAT_EV_HALT, 200000, 1);
	ev[n++] = switch_at(3300, 1001, 500, true);  /* preempted while polling: 200 ns */
	ev[n++] = switch_at(3500, 500, 1001, false); /* HOST: the loop is over */
	ev[n] = switch_at(3800, 1001, 0, false);     /* asleep: failed */
	ev[n++].arg0 = 1;			     /* TASK_INTERRUPTIBLE */
	ev[n++] = at(4500, 1001, VCPUSTAT_EV_WAKEUP, 0, 0);
	ev[n++] = switch_at(4600, 0, 1001, false);
	ev[n++] = at(4700, 1001, VCPUSTAT_EV_HALT_END, 1600, 1); /* the halt ends: no poll under way */
	ev[n++] = ENTRY(5000);
	ev[n] = at(5100, 1001, VCPUSTAT_EV_HALT_POLL_NS, 100000, 200000);
	ev[n++].arg2 = 0; /* vcpu_id 0, shrunk */
	return n;
}

static void assert_polls(const struct vcpu_summary *v, __u64 ok, __u64 failed, __u64 fail_ns, __u32 hpns,
			 const char *what)
{
	cr_assert_eq(v->polls_ok, ok, "%s: polls_ok %llu", what, (unsigned long long)v->polls_ok);
	cr_assert_eq(v->polls_failed, failed, "%s: polls_failed %llu", what, (unsigned long long)v->polls_failed);
	cr_assert_eq(v->poll_fail_ns, fail_ns, "%s: poll_fail_ns %llu", what, (unsigned long long)v->poll_fail_ns);
	cr_assert_eq(v->halt_poll_ns, hpns, "%s: halt_poll_ns %u", what, v->halt_poll_ns);
}

Test(report, recording_counts_halt_polls_from_the_state_as_the_maps_do)
{
	struct vcpustat_event ev[32];
	size_t n = halt_poll_events(ev);
	char *sht = replay(ev, n, 10000);
	struct summary s;
	json_t *j, *vm, *v;

	build(sht, 0, 10000, &s);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].nr_vcpus, 1);
	assert_polls(&s.vms[0].vcpus[0], 1, 1, 200, 100000, "whole file");
	cr_assert_eq(s.vms[0].vcpus[0].ns[VCPU_POLL], 300 + 200);
	cr_assert_eq(s.vms[0].vcpus[0].ns[VCPU_PREEMPTED], 200);
	cr_assert_eq(s.vms[0].polls_ok, 1);
	cr_assert_eq(s.vms[0].polls_failed, 1);
	cr_assert_eq(s.vms[0].poll_fail_ns, 200);
	cr_assert_eq(s.vms[0].halt_poll_ns, 100000);
	cr_assert_eq(s.vms[0].runq.count, 2, "the preempted poll's wait and the wakeup's, both ended into HOST");
	summary_free(&s);
	/* each poll in the window of its end, a failed one with all its POLL time */
	build(sht, 0, 3000, &s);
	assert_polls(&s.vms[0].vcpus[0], 1, 0, 0, 200000, "[0, 3000)");
	summary_free(&s);
	build(sht, 3000, 3700, &s);
	assert_polls(&s.vms[0].vcpus[0], 0, 0, 0, 200000, "[3000, 3700): the poll is under way");
	cr_assert_eq(s.vms[0].vcpus[0].ns[VCPU_POLL], 200);
	summary_free(&s);
	build(sht, 3700, 10000, &s);
	assert_polls(&s.vms[0].vcpus[0], 0, 1, 200, 100000, "[3700, 10000)");
	summary_free(&s);
	/* report -j: "halt_poll" per vCPU and per VM */
	j = report_json(sht, "");
	vm = json_array_get(json_object_get(j, "vms"), 0);
	v = json_array_get(json_object_get(vm, "vcpus"), 0);
	for (int k = 0; k < 2; k++) {
		json_t *hp = json_object_get(k ? vm : v, "halt_poll");

		cr_assert_eq(json_integer_value(json_object_get(hp, "ok")), 1);
		cr_assert_eq(json_integer_value(json_object_get(hp, "failed")), 1);
		cr_assert_eq(json_integer_value(json_object_get(hp, "failed_ns")), 200);
		cr_assert_eq(json_integer_value(json_object_get(hp, "halt_poll_ns")), 100000);
		cr_assert_eq(json_integer_value(json_object_get(json_object_get(k ? vm : v, "ns"), "poll")), 500);
	}
	json_decref(j);
	/* the file: halt_poll_ns from its first value on, state 7 while polling */
	{
		struct sht_interval *iv;
		struct sht_reader *r;
		size_t niv = imp_intervals(sht, "/vms/pid1000/vcpus/0/halt_poll_ns", &iv, &r);

		cr_assert_eq(niv, 2);
		cr_assert_eq(iv[0].start, 2100);
		cr_assert_eq(iv[0].value.i, 200000);
		cr_assert_eq(iv[1].start, 5100);
		cr_assert_eq(iv[1].value.i, 100000);
		free(iv);
		sht_close(r);
	}
	/* the maps, through the same handler: the same counts */
	{
		struct replay *rp;
		struct vcpustat_snapshot snap;
		struct names names;

		cr_assert_eq(replay_new(&rp, NULL), 0);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(replay_event(rp, &ev[i]), 0);
		cr_assert_eq(replay_snapshot(rp, &snap), 0);
		cr_assert_eq(names_init(&names, "/nonexistent", "/nonexistent"), 0);
		snap.ts = MONO0 + 10000;
		cr_assert_eq(summary_build(&s, NULL, &snap, &names, NULL), 0);
		cr_assert_eq(s.nr_vms, 1);
		assert_polls(&s.vms[0].vcpus[0], 1, 1, 200, 100000, "maps");
		cr_assert_eq(s.vms[0].vcpus[0].ns[VCPU_POLL], 500);
		summary_free(&s);
		vcpustat_snapshot_free(&snap);
		names_free(&names);
		replay_free(rp);
	}
	unlink(sht);
}

/* A recording without halt_poll_ns (no in-kernel halt, or an older vcpustat) does not say 0: no attribute. */
Test(report, recording_without_halts_has_no_halt_poll_ns_attribute)
{
	struct vcpustat_event ev[16];
	size_t n = svm_recording(ev);
	char *sht = replay(ev, n, 10000);
	struct sht_reader *r;
	struct vcpustat_error err = { 0 };

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_attr_child(r, sht_attr_child(r, sht_attr_child(r, sht_attr_child(r, sht_attr_child(r,
			SHT_NO_ATTR, "vms"), "pid1000"), "vcpus"), "0"), "halt_poll_ns"), SHT_NO_ATTR);
	cr_assert_neq(sht_attr_child(r, sht_attr_child(r, sht_attr_child(r, sht_attr_child(r, sht_attr_child(r,
			SHT_NO_ATTR, "vms"), "pid1000"), "vcpus"), "0"), "state"), SHT_NO_ATTR);
	sht_close(r);
	unlink(sht);
}

/* ---- exits still open at the end (issue 40 item 3) ---- */

/*
 * The shape of a real VMX trace (6.x text): vCPU 1's last event is
 * `kvm_exit: vcpu 1 reason TRIPLE_FAULT`, no kvm_entry after it. On SVM the
 * same with `shutdown`, and the userspace exit that follows it (SHUTDOWN).
 */
static size_t open_at_end_trace(struct tev *e, bool svm)
{
	size_t n = 0;

	e[n++] = sw(0, 1, 0, "R", 1002);
	e[n++] = kvm(T_ENTRY, 5, 1, 1002, NULL);
	e[n++] = kvm(T_KEXIT, 10, 1, 1002, svm ? "npf" : "EXTERNAL_INTERRUPT");
	e[n++] = kvm(T_ENTRY, 12, 1, 1002, NULL); /* 2 us */
	e[n++] = kvm(T_KEXIT, 20, 1, 1002, svm ? "msr" : "HLT");
	e[n++] = kvm(T_ENTRY, 30, 1, 1002, NULL); /* 10 us */
	e[n++] = kvm(T_KEXIT, 40, 1, 1002, svm ? "shutdown" : "TRIPLE_FAULT");
	if (svm) {
		e[n] = kvm(T_UEXIT, 50, 1, 1002, NULL);
		e[n++].ureason = 8; /* KVM_EXIT_SHUTDOWN */
	}
	return n;
}

static void check_open_at_end(bool svm)
{
	const char *last = svm ? "shutdown" : "TRIPLE_FAULT", *first = svm ? "npf" : "EXTERNAL_INTERRUPT";
	const struct latency_summary *l;
	struct tev e[16];
	struct summary s;
	char *sht = import_tevs(e, open_at_end_trace(e, svm));
	uint64_t end = file_end(sht);
	const struct vcpu_summary *v;

	build(sht, 0, end, &s);
	assert_one_rule(&s, 0, end);
	cr_assert_eq(s.nr_vms, 1);
	v = &s.vms[0].vcpus[0];
	cr_assert_eq(v->kvm_exits, 3, "three kvm_exit lines, kvm_exits %llu", (unsigned long long)v->kvm_exits);
	cr_assert_eq(v->kvm_exits_open, 1);
	cr_assert_str_eq(v->open_exit, last);
	cr_assert_eq(v->open_exit_ns, end - 40000, "open from its kvm_exit to the end of the trace");
	l = named(s.vms[0].exits, s.vms[0].nr_exits, last);
	cr_assert_not_null(l, "a row for %s", last);
	cr_assert_eq(l->count, 1);
	cr_assert_eq(l->open, 1);
	cr_assert_eq(l->open_ns, end - 40000);
	cr_assert_eq(l->sum_ns + l->max_ns + l->p50_ns + l->p99_ns, 0, "no latency invented");
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
		cr_assert_eq(l->bucket[b], 0, "in no bucket");
	l = named(s.vms[0].exits, s.vms[0].nr_exits, first);
	cr_assert_not_null(l);
	cr_assert_eq(l->count, 1);
	cr_assert_eq(l->open, 0);
	cr_assert_eq(l->sum_ns, 2000);
	if (svm) {
		cr_assert_eq(v->userspace_exits, 1);
		cr_assert_eq(v->userspace_exits_open, 1);
		cr_assert_str_eq(v->open_uexit, "SHUTDOWN");
		l = named(s.vms[0].uexits, s.vms[0].nr_uexits, "SHUTDOWN");
		cr_assert_not_null(l);
		cr_assert_eq(l->open, 1);
		cr_assert_eq(l->sum_ns, 0);
	}
	summary_free(&s);

	/* --to T just after its kvm_exit: it began in the window, open at its end */
	build(sht, 0, 40001, &s);
	assert_one_rule(&s, 0, 40001);
	cr_assert_eq(s.vms[0].vcpus[0].kvm_exits, 3);
	cr_assert_eq(s.vms[0].vcpus[0].kvm_exits_open, 1);
	l = named(s.vms[0].exits, s.vms[0].nr_exits, last);
	cr_assert(l && l->open == 1 && l->count == 1);
	/* the one before ends after T but in the file: closed, with its whole latency */
	summary_free(&s);
	build(sht, 0, 21000, &s);
	l = named(s.vms[0].exits, s.vms[0].nr_exits, svm ? "msr" : "HLT");
	cr_assert(l && l->count == 1 && l->open == 0 && l->sum_ns == 10000);
	cr_assert_eq(s.vms[0].vcpus[0].kvm_exits_open, 0);
	summary_free(&s);
	/* --to its kvm_exit: the next window's; --from after the one before: only it */
	build(sht, 0, 40000, &s);
	cr_assert_eq(s.vms[0].vcpus[0].kvm_exits, 2);
	cr_assert_null(named(s.vms[0].exits, s.vms[0].nr_exits, last));
	summary_free(&s);
	build(sht, 20001, end, &s);
	assert_one_rule(&s, 20001, end);
	cr_assert_eq(s.vms[0].vcpus[0].kvm_exits, 1);
	cr_assert_eq(s.vms[0].vcpus[0].kvm_exits_open, 1);
	cr_assert_eq(s.vms[0].nr_exits, 1);
	cr_assert_str_eq(s.vms[0].exits[0].name, last);
	summary_free(&s);
	unlink(sht);
}

Test(report, vmx_exit_open_at_the_end_of_the_trace_is_counted_open)
{
	check_open_at_end(false);
}

Test(report, svm_exit_open_at_the_end_of_the_trace_is_counted_open)
{
	check_open_at_end(true);
}

/* What a user sees: report -j's "open" fields and the text's "1 open". */
Test(report, json_and_text_show_the_open_exit)
{
	struct tev e[16];
	char *sht = import_tevs(e, open_at_end_trace(e, false)), args[512], out[8192];
	json_t *j = report_json(sht, ""), *vm = json_array_get(json_object_get(j, "vms"), 0), *v, *x;
	bool found = false;
	size_t i;

	v = json_array_get(json_object_get(vm, "vcpus"), 0);
	cr_assert_eq(json_integer_value(json_object_get(v, "kvm_exits")), 3);
	cr_assert_eq(json_integer_value(json_object_get(v, "kvm_exits_open")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(v, "open_exit")), "TRIPLE_FAULT");
	json_array_foreach(json_object_get(vm, "exits"), i, x) {
		long long open = json_integer_value(json_object_get(x, "open"));

		cr_assert_not_null(json_object_get(x, "open"), "every exit row has open");
		if (strcmp(json_string_value(json_object_get(x, "reason")), "TRIPLE_FAULT")) {
			cr_assert_eq(open, 0);
			continue;
		}
		found = true;
		cr_assert_eq(json_integer_value(json_object_get(x, "count")), 1);
		cr_assert_eq(open, 1);
		cr_assert_eq(json_integer_value(json_object_get(x, "sum_ns")), 0);
		cr_assert_eq(json_integer_value(json_object_get(x, "code")), 2);
	}
	cr_assert(found, "a TRIPLE_FAULT row");
	json_decref(j);
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "1 open"), "%s", out);
	cr_assert(strstr(out, "TRIPLE_FAULT"), "%s", out);
	unlink(sht);
}

/* export of the file: the open exit is in vcpustat_vcpu_exits_total, in no latency histogram's _count */
Test(report, export_counts_the_open_exit_in_the_exits_not_in_the_histograms)
{
	struct tev e[16];
	char *sht = import_tevs(e, open_at_end_trace(e, false)), args[512], out[65536];

	snprintf(args, sizeof(args), "export %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "vcpustat_vcpu_exits_total{vm=\"pid1000\",vcpu=\"1\"} 3\n"), "%s", out);
	cr_assert(strstr(out, "vcpustat_exit_duration_seconds_count{vm=\"pid1000\",reason=\"TRIPLE_FAULT\"} 0\n"),
		  "%s", out);
	cr_assert(strstr(out, "vcpustat_exit_duration_seconds_count{vm=\"pid1000\",reason=\"HLT\"} 1\n"), "%s",
		  out);
	unlink(sht);
}

/* top --file plays the file's windows: the last one shows the exit the file ends in as open */
Test(report, top_file_shows_the_open_exit)
{
	struct tev e[16];
	char *sht = import_tevs(e, open_at_end_trace(e, true)), args[512], out[16384];

	snprintf(args, sizeof(args), "top --file %s -b -n 1", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "shutdown"), "%s", out);
	cr_assert(strstr(out, "1 open"), "%s", out);
	cr_assert(strstr(out, "open at the end: vCPU 1 in userspace exit SHUTDOWN"), "%s", out);
	unlink(sht);
}
