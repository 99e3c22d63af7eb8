// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * In-kernel tests: load the real BPF object, inject event sequences through
 * the raw_tp injection program (bpf_prog_test_run_opts), read the maps and the
 * ring buffer, and assert states, per-state nanoseconds, exit counts,
 * histogram buckets, culprits and records. The programs are loaded but not
 * attached, so only injected events reach the maps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "helpers.h"
#include "live/live.h"
#include "model/summary.h"

static struct vcpustat *vs;
static struct ring_buffer *rb;
static struct vcpustat_record recs[4096];
static size_t nrecs;

static int on_record(void *ctx, const struct vcpustat_record *r)
{
	if (nrecs < sizeof(recs) / sizeof(recs[0]))
		recs[nrecs++] = *r;
	return 0;
}

static void open_level(enum vcpustat_record_level level, unsigned int ringbuf_bytes)
{
	struct vcpustat_options o = { .record_level = level, .ringbuf_bytes = ringbuf_bytes };
	int err;

	SKIP_UNLESS(bpf_unavailable());
	err = vcpustat_open(&vs, &o);
	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
	{
		struct vcpustat_consumer c = { .on_record = on_record };

		rb = vcpustat_ring_buffer(vs, &c);
	}
	cr_assert_not_null(rb);
	nrecs = 0;
}

static void setup(void)
{
	open_level(VCPUSTAT_LEVEL_VCPU, 0);
}

static void teardown(void)
{
	ring_buffer__free(rb);
	rb = NULL;
	vcpustat_close(vs);
	vs = NULL;
}

static void inject(const struct vcpustat_event *ev)
{
	int err = vcpustat_inject(vs, ev);

	cr_assert_eq(err, 0, "inject type %llu: %s", (unsigned long long)ev->type, strerror(-err));
}

static void ev_switch(__u64 ts, __u32 cpu, __u32 prev, __u32 prev_tgid, __u64 prev_state, int preempt, __u32 next,
		      __u32 next_tgid)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_SWITCH, .ts = ts, .cpu = cpu, .tid = prev, .tgid = prev_tgid,
				     .tid2 = next, .tgid2 = next_tgid, .arg0 = prev_state, .arg1 = (__u64)preempt,
				     .arg2 = 1 /* cgroup id */ };

	snprintf(ev.comm, sizeof(ev.comm), "t%u", prev);
	inject(&ev);
}

static void ev_kvm(__u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u64 a0, __u64 a1, __u64 a2,
		   const char *comm)
{
	struct vcpustat_event ev = { .type = type, .ts = ts, .cpu = cpu, .tid = tid, .tgid = tgid,
				     .arg0 = a0, .arg1 = a1, .arg2 = a2 };

	strncpy(ev.comm, comm ? comm : "CPU 0/KVM", sizeof(ev.comm) - 1);
	inject(&ev);
}

static void ev_task(__u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u64 a0)
{
	struct vcpustat_event ev = { .type = type, .ts = ts, .cpu = cpu, .tid = tid, .tgid = tgid, .arg0 = a0 };

	inject(&ev);
}

#define KVM_ENTRY(ts, tid, tgid, vcpu) ev_kvm(VCPUSTAT_EV_KVM_ENTRY, ts, 0, tid, tgid, vcpu, 0, 0, NULL)
#define KVM_EXIT(ts, tid, tgid, reason, vcpu) \
	ev_kvm(VCPUSTAT_EV_KVM_EXIT, ts, 0, tid, tgid, reason, KVM_ISA_VMX, vcpu, NULL)

static bool get_vcpu(__u32 tid, struct vcpustat_vcpu *v)
{
	return bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpus"), &tid, v) == 0;
}

static bool get_hist(__u32 tgid, __u16 kind, __u16 isa, __u32 reason, struct vcpustat_hist *h)
{
	struct vcpustat_hist_key k = { .tgid = tgid, .kind = kind, .isa = isa, .reason = reason };
	struct vcpustat_hist_row r;
	__u32 row;

	if (bpf_map_lookup_elem(vcpustat_map_fd(vs, "hists"), &k, &row) ||
	    bpf_map_lookup_elem(vcpustat_map_fd(vs, "hist_rows"), &row, &r))
		return false;
	cr_assert_eq(memcmp(&r.key, &k, sizeof(k)), 0, "row %u of the hists map belongs to another key", row);
	*h = r.hist;
	return true;
}

static void drain(void)
{
	nrecs = 0;
	cr_assert_geq(vcpustat_drain(rb, 0), 0);
}

/* The STATE records of tid, in order. */
static size_t states_of(__u32 tid, struct vcpustat_record *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs && n < max; i++)
		if (recs[i].type == VCPUSTAT_REC_STATE && recs[i].tid == tid)
			out[n++] = recs[i];
	return n;
}

TestSuite(bpf, .init = setup, .fini = teardown);
TestSuite(bpf_level, .fini = teardown); /* each test opens with its own record level */

/*
 * A single-vCPU VM on pCPU 0 runs guest code, exits for MSR_WRITE (VMX 32),
 * is preempted for 50 ns by another thread, comes back, later halts (HLT) and
 * blocks, and is woken again.
 */
Test(bpf, scenario_msr_write_preempt_50ns_halt)
{
	const __u32 vm = 4000, vcpu = 4001, other = 5001, other_vm = 5000;
	struct vcpustat_record st[16];
	struct vcpustat_vcpu v;
	struct vcpustat_hist h;
	struct {
		__u64 ts;
		__u8 from, to;
	} want[] = {
		{ 1000000, VCPU_UNKNOWN, VCPU_GUEST },	 { 1010000, VCPU_GUEST, VCPU_HOST },
		{ 1010500, VCPU_HOST, VCPU_PREEMPTED },	 { 1010550, VCPU_PREEMPTED, VCPU_HOST },
		{ 1011000, VCPU_HOST, VCPU_GUEST },	 { 1020000, VCPU_GUEST, VCPU_HOST },
		{ 1020200, VCPU_HOST, VCPU_IDLE },	 { 1030000, VCPU_IDLE, VCPU_WAIT },
		{ 1030300, VCPU_WAIT, VCPU_HOST },
	};
	size_t n;

	KVM_ENTRY(1000000, vcpu, vm, 0);
	KVM_EXIT(1010000, vcpu, vm, VMX_EXIT_MSR_WRITE, 0);
	ev_switch(1010500, 0, vcpu, vm, 0, 1, other, other_vm); /* preempted */
	ev_switch(1010550, 0, other, other_vm, 0, 1, vcpu, vm); /* back 50 ns later */
	KVM_ENTRY(1011000, vcpu, vm, 0);
	KVM_EXIT(1020000, vcpu, vm, VMX_EXIT_HLT, 0);
	ev_switch(1020200, 0, vcpu, vm, 1 /* TASK_INTERRUPTIBLE */, 0, 0, 0); /* blocks in the halt */
	ev_task(VCPUSTAT_EV_WAKEUP, 1030000, 1, vcpu, vm, 0);		      /* woken from CPU 1 */
	ev_switch(1030300, 0, 0, 0, 0, 0, vcpu, vm);

	cr_assert(get_vcpu(vcpu, &v));
	cr_assert_eq(v.tgid, vm);
	cr_assert_eq(v.index, 0);
	cr_assert_eq(v.index_src, VCPUSTAT_INDEX_KVM);
	cr_assert_eq(v.fsm.state, VCPU_HOST);
	cr_assert_eq(v.fsm.since, 1030300);
	cr_assert_eq(v.fsm.pcpu, 0);
	cr_assert_eq(v.fsm.ns[VCPU_GUEST], 10000 + 9000);
	cr_assert_eq(v.fsm.ns[VCPU_HOST], 500 + 450 + 200);
	cr_assert_eq(v.fsm.ns[VCPU_PREEMPTED], 50);
	cr_assert_eq(v.fsm.ns[VCPU_IDLE], 9800);
	cr_assert_eq(v.fsm.ns[VCPU_WAIT], 300);
	cr_assert_eq(v.fsm.ns[VCPU_BLOCKED], 0);
	cr_assert_eq(v.fsm.preemptions, 1);
	cr_assert_eq(v.fsm.wakeups, 1);
	cr_assert_eq(v.fsm.kvm_exits, 2);

	/* exact intervals, from the ring buffer */
	drain();
	n = states_of(vcpu, st, 16);
	cr_assert_eq(n, sizeof(want) / sizeof(want[0]), "%zu state records", n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(st[i].ts, want[i].ts, "record %zu ts", i);
		cr_assert_eq(st[i].from, want[i].from, "record %zu from", i);
		cr_assert_eq(st[i].to, want[i].to, "record %zu to", i);
		cr_assert_eq(st[i].tgid, vm);
		cr_assert_eq(st[i].vcpu, 0);
	}
	cr_assert_eq(st[1].arg0, VMX_EXIT_MSR_WRITE, "the exit record carries its reason");
	cr_assert_eq(st[1].arg1, KVM_ISA_VMX);

	/* the MSR_WRITE exit took 1000 ns (exit -> entry), one sample in the right bucket */
	cr_assert(get_hist(vm, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, VMX_EXIT_MSR_WRITE, &h));
	cr_assert_eq(h.count, 1);
	cr_assert_eq(h.sum_ns, 1000);
	cr_assert_eq(h.max_ns, 1000);
	cr_assert_eq(h.bucket[lat_hist_bucket(1000)], 1);
	/* the HLT exit is still open: no sample yet */
	cr_assert_not(get_hist(vm, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, VMX_EXIT_HLT, &h) && h.count);
	/* run-queue waits: 50 ns preempted + 300 ns after the wakeup */
	cr_assert(get_hist(vm, VCPU_SAMPLE_RUNQ_WAIT, 0, 0, &h));
	cr_assert_eq(h.count, 2);
	cr_assert_eq(h.sum_ns, 350);
	cr_assert_eq(h.bucket[lat_hist_bucket(50)], 1);
	cr_assert_eq(h.bucket[lat_hist_bucket(300)], 1);

	/* who took the CPU: thread 5001 for 50 ns, then the idle CPU for 300 ns */
	{
		struct vcpustat_culprit_key k = { .vm_tgid = vm, .tid = other };
		struct vcpustat_culprit c;

		cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "culprits"), &k, &c), 0);
		cr_assert_eq(c.ns, 50);
		cr_assert_eq(c.tgid, other_vm);
		cr_assert_str_eq(c.comm, "t5001");
		k.tid = 0;
		cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "culprits"), &k, &c), 0);
		cr_assert_eq(c.ns, 300);
	}
}

Test(bpf, switch_out_preempted_idle_blocked)
{
	/* three vCPUs of one VM, each switched out differently */
	struct vcpustat_vcpu v;

	for (__u32 i = 0; i < 3; i++)
		ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 100, 0, 701 + i, 700, KVM_UEXIT_IO, 0, 0, NULL);
	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 150, 0, 702, 700, KVM_UEXIT_HLT, 0, 0, NULL);
	ev_switch(200, 0, 701, 700, 0, 1, 0, 0);	 /* preempt */
	ev_switch(200, 0, 702, 700, 1, 0, 0, 0);	 /* sleeps after HLT */
	ev_switch(200, 0, 703, 700, 2 /* D */, 0, 0, 0); /* sleeps after I/O */
	cr_assert(get_vcpu(701, &v));
	cr_assert_eq(v.fsm.state, VCPU_PREEMPTED);
	cr_assert(get_vcpu(702, &v));
	cr_assert_eq(v.fsm.state, VCPU_IDLE);
	cr_assert(get_vcpu(703, &v));
	cr_assert_eq(v.fsm.state, VCPU_BLOCKED);
	cr_assert_eq(v.fsm.ns[VCPU_HOST], 100);
}

Test(bpf, preempt_flag_wins_over_prev_state)
{
	struct vcpustat_vcpu v;

	ev_kvm(VCPUSTAT_EV_KVM_RUN, 100, 0, 801, 800, 0, 0, 0, NULL);
	ev_switch(300, 0, 801, 800, 1, 1, 0, 0); /* preempted while setting TASK_INTERRUPTIBLE */
	cr_assert(get_vcpu(801, &v));
	cr_assert_eq(v.fsm.state, VCPU_PREEMPTED);
}

Test(bpf, discovery_index_sources)
{
	struct vcpustat_vcpu v;
	struct vcpustat_record *r = NULL;

	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 10, 0, 901, 900, KVM_UEXIT_IO, 0, 0, "CPU 3/KVM");
	cr_assert(get_vcpu(901, &v));
	cr_assert_eq(v.index, 3);
	cr_assert_eq(v.index_src, VCPUSTAT_INDEX_COMM);
	cr_assert_str_eq(v.comm, "CPU 3/KVM");

	ev_kvm(VCPUSTAT_EV_KVM_RUN, 20, 0, 911, 910, 0, 0, 0, "vmm-worker");
	ev_kvm(VCPUSTAT_EV_KVM_RUN, 21, 0, 912, 910, 0, 0, 0, "vmm-worker");
	cr_assert(get_vcpu(911, &v));
	cr_assert_eq(v.index, 0);
	cr_assert_eq(v.index_src, VCPUSTAT_INDEX_ORDER);
	cr_assert(get_vcpu(912, &v));
	cr_assert_eq(v.index, 1);

	/* kvm_exit's vcpu_id is authoritative and re-indexes */
	KVM_EXIT(30, 912, 910, 30, 7);
	cr_assert(get_vcpu(912, &v));
	cr_assert_eq(v.index, 7);
	cr_assert_eq(v.index_src, VCPUSTAT_INDEX_KVM);

	drain();
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].type == VCPUSTAT_REC_VCPU_NEW && recs[i].tid == 912 && recs[i].vcpu == 7)
			r = &recs[i];
	cr_assert_not_null(r, "re-index announced in a VCPU_NEW record");
	cr_assert_eq(r->arg0, VCPUSTAT_INDEX_KVM);
}

Test(bpf, non_vcpu_threads_are_not_tracked)
{
	struct vcpustat_vcpu v;

	ev_switch(100, 0, 1234, 1234, 0, 1, 1235, 1235);
	ev_task(VCPUSTAT_EV_WAKEUP, 150, 0, 1234, 1234, 0);
	ev_task(VCPUSTAT_EV_MIGRATE, 160, 0, 1234, 1234, 1);
	ev_task(VCPUSTAT_EV_PROCESS_EXIT, 170, 0, 1234, 1234, 1);
	cr_assert_not(get_vcpu(1234, &v));
	cr_assert_not(get_vcpu(1235, &v));
	drain();
	cr_assert_eq(nrecs, 0, "level vcpu records nothing for other threads");
}

Test(bpf, wakeup_from_another_cpu_with_an_older_clock)
{
	struct vcpustat_vcpu v;

	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 1000, 0, 601, 600, KVM_UEXIT_IO, 0, 0, NULL);
	ev_switch(2000, 0, 601, 600, 1, 0, 0, 0);
	ev_task(VCPUSTAT_EV_WAKEUP, 1990, 1, 601, 600, 0); /* waker's clock 10 ns behind */
	cr_assert(get_vcpu(601, &v));
	cr_assert_eq(v.fsm.state, VCPU_WAIT);
	cr_assert_eq(v.fsm.since, 2000);
	cr_assert_eq(v.fsm.ns[VCPU_BLOCKED], 0);
	ev_switch(2500, 0, 0, 0, 0, 0, 601, 600);
	cr_assert(get_vcpu(601, &v));
	cr_assert_eq(v.fsm.ns[VCPU_WAIT], 500);
}

Test(bpf, wakeup_of_running_vcpu_changes_nothing)
{
	struct vcpustat_vcpu before, after;

	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 1000, 0, 611, 610, KVM_UEXIT_IO, 0, 0, NULL);
	cr_assert(get_vcpu(611, &before));
	ev_task(VCPUSTAT_EV_WAKEUP, 1100, 1, 611, 610, 0);
	cr_assert(get_vcpu(611, &after));
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0);
}

Test(bpf, process_exit_frees_the_vcpu_and_keeps_its_totals)
{
	struct vcpustat_snapshot snap;
	struct vcpustat_vcpu v;
	struct vcpustat_vm vm;
	__u32 tgid = 500;

	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 1000, 0, 501, 500, KVM_UEXIT_IO, 0, 0, NULL);
	ev_switch(1400, 0, 501, 500, 1, 0, 0, 0);
	ev_task(VCPUSTAT_EV_PROCESS_EXIT, 1700, 0, 501, 500, 1 /* group dead */);
	cr_assert_not(get_vcpu(501, &v), "freed from the vcpus map");
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &tgid, &vm), 0);
	cr_assert_eq(vm.exited_ns, 1700);

	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(snap.nr_vcpus, 0);
	cr_assert_eq(snap.nr_dead, 1);
	cr_assert_eq(snap.dead[0].tid, 501);
	cr_assert_eq(snap.dead[0].fsm.ns[VCPU_HOST], 400);
	cr_assert_eq(snap.dead[0].fsm.ns[VCPU_BLOCKED], 300);
	vcpustat_snapshot_free(&snap);
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(snap.nr_dead, 0, "dead vCPUs are reported once");
	cr_assert_eq(snap.nr_vms, 1);
	vcpustat_snapshot_free(&snap);

	cr_assert_eq(vcpustat_reap_vm(vs, tgid), 0);
	cr_assert_neq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &tgid, &vm), 0);

	drain();
	cr_assert_eq(recs[nrecs - 1].type, VCPUSTAT_REC_VCPU_GONE);
	cr_assert_eq(recs[nrecs - 1].from, VCPU_BLOCKED);
}

Test(bpf, exit_latency_histogram_buckets)
{
	static const __u64 lat[] = { 0, 1, 7, 8, 100, 999, 1000, 1001, 4096, 65536, 1000000, 123456789, 20000000000ull };
	const size_t n = sizeof(lat) / sizeof(lat[0]);
	__u64 want[LAT_HIST_BUCKETS] = { 0 }, sum = 0, max = 0, t = 1000;
	struct vcpustat_hist h;

	for (size_t i = 0; i < n; i++) {
		KVM_EXIT(t, 301, 300, 48 /* EPT_VIOLATION */, 0);
		KVM_ENTRY(t + lat[i], 301, 300, 0);
		t += lat[i] + 10;
		want[lat_hist_bucket(lat[i])]++;
		sum += lat[i];
		max = lat[i] > max ? lat[i] : max;
	}
	cr_assert(get_hist(300, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 48, &h));
	cr_assert_eq(h.count, n);
	cr_assert_eq(h.sum_ns, sum);
	cr_assert_eq(h.max_ns, max);
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
		cr_assert_eq(h.bucket[b], want[b], "bucket %u", b);
}

/*
 * The histograms' rows (struct vcpustat_hist_row): a VM's rows, once it is
 * reaped, serve the next VM from zero, and a vCPU whose cached row index now
 * points at another VM's row neither adds to that row nor takes it back.
 * Two rows in all, so that "full" is reached and counted.
 */
Test(bpf, histogram_rows_are_recycled_and_a_stale_cached_row_is_not_used)
{
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_VCPU, .max_hists = 2 };
	__u64 lost[VCPUSTAT_NR_LOST];
	struct vcpustat_snapshot snap;
	struct vcpustat_hist h;
	struct vcpustat_vcpu v;
	int err;

	teardown();
	err = vcpustat_open(&vs, &o);
	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
	rb = vcpustat_ring_buffer(vs, &(struct vcpustat_consumer){ .on_record = on_record });
	cr_assert_not_null(rb);

	/* VM 600 takes both rows */
	KVM_EXIT(1000, 601, 600, 30, 0);
	KVM_ENTRY(1100, 601, 600, 0);
	KVM_EXIT(1200, 601, 600, 48, 0);
	KVM_ENTRY(1400, 601, 600, 0);
	cr_assert(get_vcpu(601, &v));
	{
		unsigned int cached = 0;

		for (unsigned int w = 0; w < VCPUSTAT_HIST_CACHE; w++)
			cached += v.hist_slot[w] != 0;
		cr_assert_eq(cached, 2, "the vCPU caches its two rows");
	}
	/* VM 700 finds none */
	KVM_EXIT(2000, 701, 700, 30, 0);
	KVM_ENTRY(2050, 701, 700, 0);
	cr_assert_not(get_hist(700, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	cr_assert_eq(vcpustat_lost(vs, lost), 0);
	cr_assert_eq(lost[VCPUSTAT_LOST_HIST_FULL], 1);

	/* VM 600 reaped (its vCPU record stays, with its cache): VM 700 gets both rows, from zero */
	cr_assert_eq(vcpustat_reap_vm(vs, 600), 0);
	cr_assert_not(get_hist(600, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	KVM_EXIT(3000, 701, 700, 30, 0);
	KVM_ENTRY(3050, 701, 700, 0);
	KVM_EXIT(3100, 701, 700, 48, 0);
	KVM_ENTRY(3170, 701, 700, 0);
	cr_assert(get_hist(700, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	cr_assert_eq(h.count, 1);
	cr_assert_eq(h.sum_ns, 50);
	cr_assert_eq(h.max_ns, 50);
	cr_assert(get_hist(700, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 48, &h));
	cr_assert_eq(h.count, 1);
	cr_assert_eq(h.sum_ns, 70);

	/* vCPU 601's cached indices are 700's rows now: not used, and no row is free */
	KVM_EXIT(4000, 601, 600, 30, 0);
	KVM_ENTRY(4500, 601, 600, 0);
	KVM_EXIT(4600, 601, 600, 48, 0);
	KVM_ENTRY(5200, 601, 600, 0);
	cr_assert(get_hist(700, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	cr_assert_eq(h.count, 1, "VM 600's exit went into VM 700's row");
	cr_assert_eq(h.sum_ns, 50);
	cr_assert(get_hist(700, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 48, &h));
	cr_assert_eq(h.count, 1);
	cr_assert_not(get_hist(600, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	cr_assert_eq(vcpustat_lost(vs, lost), 0);
	cr_assert_eq(lost[VCPUSTAT_LOST_HIST_FULL], 3);

	/* a snapshot shows the rows in use, and no vCPU's cache */
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(snap.nr_hists, 2);
	for (size_t i = 0; i < snap.nr_hists; i++)
		cr_assert_eq(snap.hists[i].key.tgid, 700);
	cr_assert_eq(snap.nr_vcpus, 2);
	for (size_t i = 0; i < snap.nr_vcpus; i++)
		for (unsigned int w = 0; w < VCPUSTAT_HIST_CACHE; w++)
			cr_assert_eq(snap.vcpus[i].hist_slot[w], 0);
	vcpustat_snapshot_free(&snap);
}

/*
 * A vCPU whose thread ends in the middle of an exit (a halted vCPU told to
 * stop, an MMIO exit at the stop): the exit ends with the thread, into the
 * histogram, so that the histograms hold every exit KVM counted (the KVM lab
 * compares them with KVM's own counters: kvmlab/live_json_and_export_...).
 */
Test(bpf, exits_open_at_process_exit_reach_the_histograms)
{
	struct vcpustat_hist h;

	ev_kvm(VCPUSTAT_EV_KVM_EXIT, 1000, 0, 451, 450, SVM_EXIT_HLT, KVM_ISA_SVM, 0, NULL);
	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 1100, 0, 451, 450, KVM_UEXIT_HLT, 0, 0, NULL);
	ev_switch(1200, 0, 451, 450, 1, 0, 0, 0);
	ev_task(VCPUSTAT_EV_PROCESS_EXIT, 5000, 0, 451, 450, 1);
	cr_assert(get_hist(450, VCPU_SAMPLE_EXIT, KVM_ISA_SVM, SVM_EXIT_HLT, &h), "the open hlt exit is in the histogram");
	cr_assert_eq(h.count, 1);
	cr_assert_eq(h.sum_ns, 4000);
	cr_assert(get_hist(450, VCPU_SAMPLE_USERSPACE_EXIT, 0, KVM_UEXIT_HLT, &h));
	cr_assert_eq(h.count, 1);
	cr_assert_eq(h.sum_ns, 3900);
}

Test(bpf, exit_reasons_are_separate_per_vm_reason_and_isa)
{
	struct vcpustat_hist h;

	KVM_EXIT(100, 201, 200, 30, 0);
	KVM_ENTRY(150, 201, 200, 0);
	ev_kvm(VCPUSTAT_EV_KVM_EXIT, 200, 0, 201, 200, 30, KVM_ISA_SVM, 0, NULL);
	KVM_ENTRY(270, 201, 200, 0);
	KVM_EXIT(300, 211, 210, 30, 0);
	KVM_ENTRY(390, 211, 210, 0);
	cr_assert(get_hist(200, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	cr_assert_eq(h.sum_ns, 50);
	cr_assert(get_hist(200, VCPU_SAMPLE_EXIT, KVM_ISA_SVM, 30, &h));
	cr_assert_eq(h.sum_ns, 70);
	cr_assert(get_hist(210, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &h));
	cr_assert_eq(h.sum_ns, 90);
}

Test(bpf, userspace_exit_histogram_closed_by_kvm_run)
{
	struct vcpustat_hist h;
	struct vcpustat_vcpu v;

	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 1000, 0, 401, 400, KVM_UEXIT_IO, 0, 0, NULL);
	ev_kvm(VCPUSTAT_EV_KVM_RUN, 1250, 0, 401, 400, 0, 0, 0, NULL);
	ev_kvm(VCPUSTAT_EV_USERSPACE_EXIT, 2000, 0, 401, 400, KVM_UEXIT_HLT, 0, 0, NULL);
	ev_kvm(VCPUSTAT_EV_KVM_RUN, 9000, 0, 401, 400, 0, 0, 0, NULL);
	cr_assert(get_hist(400, VCPU_SAMPLE_USERSPACE_EXIT, 0, KVM_UEXIT_IO, &h));
	cr_assert_eq(h.count, 1);
	cr_assert_eq(h.sum_ns, 250);
	cr_assert(get_hist(400, VCPU_SAMPLE_USERSPACE_EXIT, 0, KVM_UEXIT_HLT, &h));
	cr_assert_eq(h.sum_ns, 7000);
	cr_assert(get_vcpu(401, &v));
	cr_assert_eq(v.fsm.userspace_exits, 2);
	cr_assert_not(v.fsm.flags & VCPU_F_HALTED);

	/* the record stream carries what an offline reader needs to rebuild these latencies */
	drain();
	{
		static const struct {
			__u8 type;
			__u64 ts;
			__u32 arg0;
		} want[] = {
			{ VCPUSTAT_REC_VCPU_NEW, 1000, VCPUSTAT_INDEX_COMM },
			{ VCPUSTAT_REC_STATE, 1000, KVM_UEXIT_IO }, /* UNKNOWN -> HOST */
			{ VCPUSTAT_REC_RUN, 1250, KVM_UEXIT_IO },
			{ VCPUSTAT_REC_UEXIT, 2000, KVM_UEXIT_HLT },
			{ VCPUSTAT_REC_RUN, 9000, KVM_UEXIT_HLT },
		};

		cr_assert_eq(nrecs, 5);
		for (size_t i = 0; i < 5; i++) {
			cr_assert_eq(recs[i].type, want[i].type, "record %zu type %u", i, recs[i].type);
			cr_assert_eq(recs[i].ts, want[i].ts, "record %zu ts", i);
			cr_assert_eq(recs[i].arg0, want[i].arg0, "record %zu arg0", i);
		}
	}
}

Test(bpf, migration_of_a_waiting_vcpu_moves_its_culprit_accounting)
{
	struct vcpustat_culprit_key k = { .vm_tgid = 100 };
	struct vcpustat_culprit c;
	struct vcpustat_vcpu v;
	int fd;

	ev_switch(50, 1, 0, 0, 0, 0, 7777, 7777);	 /* 7777 starts on CPU 1 at 50 */
	ev_kvm(VCPUSTAT_EV_KVM_RUN, 90, 0, 101, 100, 0, 0, 0, NULL);
	ev_switch(100, 0, 101, 100, 0, 1, 555, 555);	 /* preempted by 555 on CPU 0 */
	ev_task(VCPUSTAT_EV_MIGRATE, 160, 1, 101, 100, 1); /* pulled to CPU 1 at 160 */
	ev_switch(200, 1, 7777, 7777, 0, 1, 101, 100);	 /* 7777 leaves CPU 1 at 200 */
	ev_switch(230, 0, 555, 555, 0, 1, 0, 0);	 /* 555 leaves CPU 0 later */

	cr_assert(get_vcpu(101, &v));
	cr_assert_eq(v.fsm.pcpu, 1);
	cr_assert_eq(v.fsm.migrations, 1);
	cr_assert_eq(v.fsm.ns[VCPU_PREEMPTED], 100);
	fd = vcpustat_map_fd(vs, "culprits");
	k.tid = 7777;
	cr_assert_eq(bpf_map_lookup_elem(fd, &k, &c), 0);
	cr_assert_eq(c.ns, 40, "CPU 1's thread is charged from the migration on");
	k.tid = 555;
	cr_assert_neq(bpf_map_lookup_elem(fd, &k, &c), 0, "CPU 0's thread ran after the vCPU had left its queue");
}

Test(bpf, several_waiting_vcpus_charge_the_runner_for_each)
{
	struct vcpustat_culprit_key k = { .vm_tgid = 100, .tid = 999 };
	struct vcpustat_culprit c;

	ev_kvm(VCPUSTAT_EV_KVM_RUN, 10, 0, 101, 100, 0, 0, 0, NULL);
	ev_kvm(VCPUSTAT_EV_KVM_RUN, 10, 0, 102, 100, 0, 0, 0, NULL);
	ev_switch(100, 0, 101, 100, 0, 1, 102, 100);
	ev_switch(150, 0, 102, 100, 0, 1, 999, 999);
	ev_switch(400, 0, 999, 999, 0, 1, 101, 100);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "culprits"), &k, &c), 0);
	cr_assert_eq(c.ns, 250 + 250, "999 kept two vCPUs waiting for 250 ns each");
	k.tid = 102;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "culprits"), &k, &c), 0);
	cr_assert_eq(c.ns, 50, "a sibling vCPU is a culprit too");
}

Test(bpf, sync_hypercall_and_next_entry_are_recorded)
{
	const __u64 key = 0x0001000000000042ull;
	bool hc = false, entry = false;

	KVM_ENTRY(100, 51, 50, 0);
	KVM_EXIT(200, 51, 50, VMX_EXIT_VMCALL, 0);
	ev_kvm(VCPUSTAT_EV_HYPERCALL, 210, 0, 51, 50, VCPUSTAT_SYNC_HYPERCALL_NR, key, 0, NULL);
	ev_kvm(VCPUSTAT_EV_HYPERCALL, 220, 0, 51, 50, 9 /* another hypercall */, 1, 0, NULL);
	KVM_ENTRY(300, 51, 50, 0);
	KVM_EXIT(400, 51, 50, VMX_EXIT_VMCALL, 0);
	KVM_ENTRY(500, 51, 50, 0);
	drain();
	for (size_t i = 0; i < nrecs; i++) {
		__u64 k = recs[i].arg0 | (__u64)recs[i].arg1 << 32;

		if (recs[i].type == VCPUSTAT_REC_HYPERCALL) {
			cr_assert_not(hc, "one hypercall record");
			cr_assert_eq(recs[i].ts, 210);
			cr_assert_eq(k, key);
			hc = true;
		}
		if (recs[i].type == VCPUSTAT_REC_SYNC_ENTRY) {
			cr_assert_not(entry, "only the first entry after it");
			cr_assert_eq(recs[i].ts, 300);
			cr_assert_eq(k, key);
			entry = true;
		}
	}
	cr_assert(hc && entry);
}

Test(bpf_level, full_level_records_every_switch_and_wakeup)
{
	size_t sw = 0, wk = 0;

	open_level(VCPUSTAT_LEVEL_FULL, 0);
	ev_switch(100, 1, 10, 10, 0, 1, 11, 11);
	ev_task(VCPUSTAT_EV_WAKEUP, 120, 1, 10, 10, 1);
	ev_switch(150, 1, 11, 11, 1, 0, 10, 10);
	drain();
	for (size_t i = 0; i < nrecs; i++) {
		if (recs[i].type == VCPUSTAT_REC_SWITCH) {
			cr_assert_eq(recs[i].cpu, 1);
			sw++;
		}
		if (recs[i].type == VCPUSTAT_REC_WAKEUP) {
			cr_assert_eq(recs[i].tid, 10);
			cr_assert_eq(recs[i].arg0, 1);
			wk++;
		}
	}
	cr_assert_eq(sw, 2);
	cr_assert_eq(wk, 1);
	cr_assert_eq(recs[0].arg0, 11, "next tid");
	cr_assert_eq(recs[0].from, 1, "prev was runnable");
}

Test(bpf_level, level_none_records_nothing)
{
	open_level(VCPUSTAT_LEVEL_NONE, 0);
	KVM_ENTRY(100, 51, 50, 0);
	KVM_EXIT(200, 51, 50, 30, 0);
	drain();
	cr_assert_eq(nrecs, 0);
}

Test(bpf_level, full_ring_buffer_counts_every_lost_record)
{
	struct vcpustat_snapshot snap;
	size_t emitted = 0;

	open_level(VCPUSTAT_LEVEL_VCPU, 4096); /* 4 KiB: about 100 records */
	for (__u64 i = 0; i < 500; i++) {
		KVM_ENTRY(1000 + 2 * i, 51, 50, 0);
		KVM_EXIT(1001 + 2 * i, 51, 50, 30, 0);
	}
	emitted = 1 /* VCPU_NEW */ + 1000;
	drain();
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_gt(snap.lost[VCPUSTAT_LOST_RINGBUF], 0);
	cr_assert_eq(nrecs + snap.lost[VCPUSTAT_LOST_RINGBUF], emitted, "%zu read + %llu lost", nrecs,
		     (unsigned long long)snap.lost[VCPUSTAT_LOST_RINGBUF]);
	vcpustat_snapshot_free(&snap);
}

/*
 * A consumer slower than the kernel's producers: libbpf's consume loop keeps
 * going while records arrive, so without a budget vcpustat_drain() never
 * returned and `record --duration` never looked at its clock (seen in the
 * KVM lab). With one, each drain returns after a bounded share of the flood
 * and the next one carries on. (A hang here fails by the test's timeout.)
 */
struct flood {
	atomic_bool stop;
	int err;
	unsigned long injected;
};

static void *flood_thread(void *arg)
{
	struct flood *f = arg;

	for (__u64 i = 0; !atomic_load(&f->stop) && !f->err; i++) {
		struct vcpustat_event ev = { .type = VCPUSTAT_EV_KVM_EXIT, .ts = 1000 + 10 * i, .tid = 61, .tgid = 60,
					     .arg0 = 30, .arg1 = KVM_ISA_VMX };

		f->err = vcpustat_inject(vs, &ev);
		ev.type = VCPUSTAT_EV_KVM_ENTRY;
		ev.ts += 5;
		ev.arg0 = 0;
		if (!f->err)
			f->err = vcpustat_inject(vs, &ev);
		f->injected += 2;
	}
	return NULL;
}

static unsigned long slow_consumed;

static int slow_on_record(void *ctx, const struct vcpustat_record *r)
{
	(void)ctx;
	(void)r;
	slow_consumed++;
	usleep(200); /* far slower than an injection */
	return 0;
}

Test(bpf_level, drain_returns_while_a_flood_outpaces_the_consumer, .timeout = 60)
{
	struct vcpustat_consumer c = { .on_record = slow_on_record };
	struct flood f = { .stop = false };
	pthread_t t;
	int n1, n2;

	open_level(VCPUSTAT_LEVEL_VCPU, 0);
	ring_buffer__free(rb);
	rb = vcpustat_ring_buffer(vs, &c);
	cr_assert_not_null(rb);
	slow_consumed = 0;
	cr_assert_eq(pthread_create(&t, NULL, flood_thread, &f), 0);
	while (f.injected < 4096 && !f.err) /* the ring holds more than one drain can take */
		sched_yield();
	n1 = vcpustat_drain(rb, 10);
	n2 = vcpustat_drain(rb, 10);
	atomic_store(&f.stop, true);
	pthread_join(t, NULL);
	cr_assert_eq(f.err, 0, "inject: %s", strerror(-f.err));
	cr_assert_gt(n1, 0, "the first drain consumed records (%d)", n1);
	cr_assert_gt(n2, 0, "and the second went on with the rest (%d)", n2);
	cr_assert_eq((unsigned long)n1 + (unsigned long)n2, slow_consumed, "the return values count what was consumed");
	cr_log_info("a flood of %lu events: two drains returned after %d and %d records", f.injected, n1, n2);
}

/* Two CPUs inject exits of two vCPUs of one VM at once: atomic histogram updates lose nothing. */
struct hammer {
	int cpu;
	__u32 tid;
	int n;
	int err;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (int i = 0; i < h->n && !h->err; i++) {
		struct vcpustat_event ev = { .type = VCPUSTAT_EV_KVM_EXIT, .ts = 1000 + 10 * (__u64)i,
					     .cpu = (__u64)h->cpu, .tid = h->tid, .tgid = 77, .arg0 = 30,
					     .arg1 = KVM_ISA_VMX, .arg2 = h->tid - 78 };

		h->err = vcpustat_inject(vs, &ev);
		ev.type = VCPUSTAT_EV_KVM_ENTRY;
		ev.ts += 5;
		ev.arg0 = h->tid - 78;
		if (!h->err)
			h->err = vcpustat_inject(vs, &ev);
	}
	return NULL;
}

Test(bpf, concurrent_updates_from_two_cpus_lose_nothing)
{
	struct hammer h[2] = { { 0, 78, 20000, 0 }, { 1, 79, 20000, 0 } };
	pthread_t t[2];
	struct vcpustat_hist hist;

	if (libbpf_num_possible_cpus() < 2)
		cr_skip_test("needs 2 CPUs");
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, hammer_thread, &h[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(h[0].err, 0);
	cr_assert_eq(h[1].err, 0);
	cr_assert(get_hist(77, VCPU_SAMPLE_EXIT, KVM_ISA_VMX, 30, &hist));
	cr_assert_eq(hist.count, 40000);
	cr_assert_eq(hist.sum_ns, 40000 * 5);
	cr_assert_eq(hist.bucket[5], 40000);
}

Test(bpf, seeding_finds_running_vm_threads_from_proc)
{
	char root[] = "/tmp/vcpustat-proc-XXXXXX", path[512];
	struct vcpustat_vcpu v;
	FILE *f;

	cr_assert_not_null(mkdtemp(root));
	/* a fake /proc: process 4242 with a kvm-vm fd and threads "CPU 0/KVM", "CPU 1/KVM", "qemu" */
	snprintf(path, sizeof(path), "mkdir -p %s/4242/fd %s/4242/task/4243 %s/4242/task/4244 %s/4242/task/4242 "
				     "%s/99/fd %s/99/task/100 && ln -s anon_inode:kvm-vm %s/4242/fd/11",
		 root, root, root, root, root, root, root);
	cr_assert_eq(system(path), 0);
	const char *comms[][2] = { { "4242/task/4243", "CPU 0/KVM" },
				   { "4242/task/4244", "CPU 1/KVM" },
				   { "4242/task/4242", "qemu-system-x86" },
				   { "99/task/100", "CPU 0/KVM" } /* no kvm-vm fd: not a VM */ };
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s/comm", root, comms[i][0]);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fprintf(f, "%s\n", comms[i][1]);
		fclose(f);
	}
	cr_assert_eq(vcpustat_seed(vs, root), 2);
	cr_assert(get_vcpu(4244, &v));
	cr_assert_eq(v.index, 1);
	cr_assert_eq(v.tgid, 4242);
	cr_assert_eq(v.index_src, VCPUSTAT_INDEX_SEED);
	cr_assert_eq(v.fsm.state, VCPU_UNKNOWN);
	cr_assert_not(get_vcpu(100, &v));
	/* a seeded vCPU that was asleep is woken: UNKNOWN -> WAIT */
	ev_task(VCPUSTAT_EV_WAKEUP, v.fsm.since + 100, 0, 4244, 4242, 0);
	cr_assert(get_vcpu(4244, &v));
	cr_assert_eq(v.fsm.state, VCPU_WAIT);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	cr_assert_eq(system(path), 0);
}

/* Culprits of exited threads are folded into one entry per VM, without counting twice. */
Test(bpf, prune_folds_exited_threads_without_double_counting)
{
	struct vcpustat_snapshot a, b, c;
	struct summary s;
	struct names n;

	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	ev_kvm(VCPUSTAT_EV_KVM_RUN, 10, 0, 101, 100, 0, 0, 0, NULL);
	ev_switch(100, 0, 101, 100, 0, 1, 3999901, 3999901); /* a thread that does not exist (any more) */
	ev_switch(200, 0, 3999901, 3999901, 0, 1, 101, 100);
	cr_assert_eq(vcpustat_snapshot(vs, &a), 0);
	cr_assert_eq(vcpustat_prune(vs, NULL), 1);
	cr_assert_eq(vcpustat_snapshot(vs, &b), 0);
	cr_assert_eq(b.nr_culprits, 1);
	cr_assert_eq(b.culprits[0].key.tid, VCPUSTAT_TID_EXITED);
	cr_assert_eq(b.culprits[0].culprit.ns, 100);
	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	cr_assert_eq(s.vms[0].nr_culprits, 0, "the folded 100 ns were counted in the previous window");
	summary_free(&s);

	ev_switch(300, 0, 101, 100, 0, 1, 3999902, 3999902);
	ev_switch(350, 0, 3999902, 3999902, 0, 1, 101, 100);
	cr_assert_eq(vcpustat_prune(vs, NULL), 1);
	cr_assert_eq(vcpustat_snapshot(vs, &c), 0);
	cr_assert_eq(summary_build(&s, &b, &c, &n, NULL), 0);
	cr_assert_eq(s.vms[0].nr_culprits, 1);
	cr_assert_eq(s.vms[0].culprits[0].ns, 50);
	cr_assert_str_eq(s.vms[0].culprits[0].process, "threads that exited");
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	vcpustat_snapshot_free(&c);
	names_free(&n);
}
