// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The scheduler handlers' hot page (struct vcpustat_hotpath) decides, before
 * anything else, which events the handler never sees. It must never hide an
 * event that matters: every tracked vCPU has its slot bit (and its exact bit
 * in vcpu_tids), every CPU with vCPUs waiting has its bit; and it should not
 * keep bits of vCPUs that are gone. Checked on the real BPF object through the
 * injection program.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "helpers.h"
#include "live/live.h"

static struct vcpustat *vs;

static void open_level(enum vcpustat_record_level level)
{
	struct vcpustat_options o = { .record_level = level };
	int err;

	SKIP_UNLESS(bpf_unavailable());
	err = vcpustat_open(&vs, &o);
	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
}

static void setup(void)
{
	open_level(VCPUSTAT_LEVEL_NONE);
}

static void teardown(void)
{
	vcpustat_close(vs);
	vs = NULL;
}

static void read_hotpath(struct vcpustat_hotpath *h)
{
	int fd = vcpustat_map_fd(vs, ".data.hotpath");
	__u32 zero = 0;

	cr_assert_geq(fd, 0, "no .data.hotpath map");
	cr_assert_eq(bpf_map_lookup_elem(fd, &zero, h), 0);
}

static bool bit(const __u64 *words, __u32 n)
{
	return (words[n / 64] >> (n % 64)) & 1;
}

static bool is_tracked(__u32 tid)
{
	struct vcpustat_vcpu v;

	return bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpus"), &tid, &v) == 0;
}

static bool exact_bit(__u32 tid)
{
	__u32 w = tid / 64;
	__u64 word = 0;

	bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpu_tids"), &w, &word);
	return (word >> (tid % 64)) & 1;
}

static void inject(const struct vcpustat_event *ev)
{
	cr_assert_eq(vcpustat_inject(vs, ev), 0);
}

static void seed(__u32 tid, __u64 ts)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_SEED, .ts = ts, .tid = tid, .tgid = 100, .arg0 = 0 };

	inject(&ev);
}

static void process_exit(__u32 tid, __u64 ts)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_PROCESS_EXIT, .ts = ts, .tid = tid, .tgid = 100 };

	inject(&ev);
}

/* Two vCPUs whose tids share a slot: the slot stays set until both are gone. */
Test(hotpath, shared_slot_cleared_only_when_its_last_vcpu_goes, .init = setup, .fini = teardown)
{
	__u32 a = 101, b = 101 + VCPUSTAT_HOT_TID_SLOTS, slot = 101;
	struct vcpustat_hotpath h;

	read_hotpath(&h);
	cr_assert_not(bit(h.maybe_tids, slot));
	seed(a, 1000);
	seed(b, 1000);
	read_hotpath(&h);
	cr_assert(bit(h.maybe_tids, slot));
	cr_assert(exact_bit(a) && exact_bit(b));

	process_exit(a, 2000);
	read_hotpath(&h);
	cr_assert(bit(h.maybe_tids, slot), "b is still tracked");
	cr_assert_not(exact_bit(a));
	cr_assert(exact_bit(b));

	process_exit(b, 3000);
	read_hotpath(&h);
	cr_assert_not(bit(h.maybe_tids, slot), "no vCPU left in the slot");
	cr_assert_not(exact_bit(b));
}

/* A preempted vCPU waits on its CPU: that CPU's bit is set until it runs again. */
Test(hotpath, waiting_cpu_bit_follows_the_run_queue_wait, .init = setup, .fini = teardown)
{
	struct vcpustat_event out = { .type = VCPUSTAT_EV_SWITCH, .ts = 2000, .cpu = 1, .tid = 101, .tgid = 100,
				      .tid2 = 555, .tgid2 = 555, .arg0 = 0, .arg1 = 1 };
	struct vcpustat_event in = { .type = VCPUSTAT_EV_SWITCH, .ts = 3000, .cpu = 1, .tid = 555, .tgid = 555,
				     .tid2 = 101, .tgid2 = 100, .arg0 = 1, .arg1 = 0 };
	struct vcpustat_hotpath h;

	seed(101, 1000);
	read_hotpath(&h);
	cr_assert_not(bit(h.waiting_cpus, 1));
	inject(&out); /* preempted on CPU 1 */
	read_hotpath(&h);
	cr_assert(bit(h.waiting_cpus, 1));
	cr_assert_not(bit(h.waiting_cpus, 0));
	inject(&in); /* back on CPU 1 */
	read_hotpath(&h);
	cr_assert_not(bit(h.waiting_cpus, 1));
}

/*
 * Random event sequences (vCPUs created, preempted, woken, migrated and
 * exiting, with tids that share slots): after every batch, the hot page is
 * exactly the vCPU set folded into slots, and exactly the CPUs with waiters.
 */
Test(hotpath, mirrors_vcpus_and_waiting_cpus_under_random_events, .init = setup, .fini = teardown)
{
	static const __u32 tids[] = { 101, 102, 101 + VCPUSTAT_HOT_TID_SLOTS, 102 + VCPUSTAT_HOT_TID_SLOTS, 201, 900, 0 };
	const size_t ntids = sizeof(tids) / sizeof(tids[0]);
	int cpus_fd = vcpustat_map_fd(vs, "cpus");
	unsigned int seed_r = 15;
	__u64 ts = 1000;

	for (int round = 0; round < 100; round++) {
		struct vcpustat_hotpath h;

		for (int i = 0; i < 200; i++) {
			struct vcpustat_event ev = { 0 };
			__u32 tid = tids[rand_r(&seed_r) % ntids], tid2 = tids[rand_r(&seed_r) % ntids];
			int r = rand_r(&seed_r) % 100;

			ts += (__u64)(rand_r(&seed_r) % 5000);
			ev.ts = ts;
			ev.cpu = (__u64)(rand_r(&seed_r) % 2);
			ev.tid = tid;
			ev.tgid = tid % VCPUSTAT_HOT_TID_SLOTS / 100 * 100;
			if (r < 45) {
				ev.type = VCPUSTAT_EV_SWITCH;
				ev.tid2 = tid2;
				ev.tgid2 = tid2 % VCPUSTAT_HOT_TID_SLOTS / 100 * 100;
				ev.arg0 = (__u64)(rand_r(&seed_r) % 2); /* running or sleeping */
				ev.arg1 = (__u64)(rand_r(&seed_r) % 2);
			} else if (r < 65) {
				ev.type = VCPUSTAT_EV_WAKEUP;
				ev.arg0 = (__u64)(rand_r(&seed_r) % 2);
			} else if (r < 75) {
				ev.type = VCPUSTAT_EV_MIGRATE;
				ev.arg0 = (__u64)(rand_r(&seed_r) % 2);
			} else if (r < 85) {
				ev.type = VCPUSTAT_EV_KVM_RUN;
			} else if (r < 92) {
				ev.type = VCPUSTAT_EV_SEED;
			} else {
				ev.type = VCPUSTAT_EV_PROCESS_EXIT;
			}
			inject(&ev);
		}
		read_hotpath(&h);
		for (size_t i = 0; i < ntids; i++) {
			__u32 tid = tids[i];

			cr_assert_eq(exact_bit(tid), is_tracked(tid), "round %d: exact bit of %u", round, tid);
			if (is_tracked(tid))
				cr_assert(bit(h.maybe_tids, tid % VCPUSTAT_HOT_TID_SLOTS), "round %d: slot of %u",
					  round, tid);
		}
		for (__u32 slot = 0; slot < VCPUSTAT_HOT_TID_SLOTS; slot++) {
			bool any = false;

			if (!bit(h.maybe_tids, slot))
				continue;
			for (size_t i = 0; i < ntids; i++)
				any |= tids[i] % VCPUSTAT_HOT_TID_SLOTS == slot && is_tracked(tids[i]);
			cr_assert(any, "round %d: slot %u set with no vCPU in it", round, slot);
		}
		for (__u32 cpu = 0; cpu < 2; cpu++) {
			struct vcpustat_cpu c;

			if (bpf_map_lookup_elem(cpus_fd, &cpu, &c))
				continue; /* a one-CPU machine */
			cr_assert_eq(bit(h.waiting_cpus, cpu), c.nr_waiting != 0, "round %d: CPU %u (%u waiting)",
				     round, cpu, c.nr_waiting);
		}
	}
}

Test(hotpath, level_full_is_on_the_hot_page)
{
	struct vcpustat_hotpath h;

	open_level(VCPUSTAT_LEVEL_FULL);
	read_hotpath(&h);
	cr_assert_eq(h.level_full, 1);
	teardown();
	open_level(VCPUSTAT_LEVEL_VCPU);
	read_hotpath(&h);
	cr_assert_eq(h.level_full, 0);
	teardown();
}
