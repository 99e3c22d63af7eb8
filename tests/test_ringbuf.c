// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One ring buffer per CPU: records made on two CPUs at once (injections run
 * by threads pinned to CPU 0 and CPU 1: the injection program runs on the
 * caller's CPU) each land in their CPU's ring, come out of vcpustat_drain()
 * merged in time order with nothing lost, and a full ring loses records on
 * its own CPU only. The shared ring (the fallback) passes the same test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "helpers.h"
#include "live/live.h"

#define PER_CPU 2000
#define ENTRY_BYTES (8 + sizeof(struct vcpustat_record)) /* a ring's header, then the record */

static struct vcpustat *vs;
static struct ring_buffer *rb;
static struct vcpustat_record *recs;
static size_t nrecs;

static int on_record(void *ctx, const struct vcpustat_record *r)
{
	(void)ctx;
	if (nrecs < 2 * PER_CPU + 1)
		recs[nrecs++] = *r;
	return 0;
}

static void open_rings(unsigned int ringbuf_bytes, bool single_ring)
{
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_FULL, .ringbuf_bytes = ringbuf_bytes,
				      .single_ring = single_ring };
	struct vcpustat_consumer c = { .on_record = on_record };
	int err;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(two_cpus_unavailable());
	err = vcpustat_open(&vs, &o);
	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
	rb = vcpustat_ring_buffer(vs, &c);
	cr_assert_not_null(rb);
	recs = calloc(2 * PER_CPU + 1, sizeof(*recs));
	cr_assert_not_null(recs);
	nrecs = 0;
}

static void teardown(void)
{
	ring_buffer__free(rb);
	rb = NULL;
	vcpustat_close(vs);
	vs = NULL;
	free(recs);
	recs = NULL;
}

TestSuite(ringbuf, .fini = teardown);

/* A thread on one CPU injecting switches of ordinary threads: one SWITCH record each (level full). */
struct injector {
	int cpu, n;
	__u64 ts0, step;
	pthread_barrier_t *go;
	int err, ran_on;
};

static void *inject_on_cpu(void *arg)
{
	struct injector *in = arg;

	if (pin_to_cpu(in->cpu)) {
		in->err = -errno;
		return NULL;
	}
	if (in->go)
		pthread_barrier_wait(in->go);
	in->ran_on = sched_getcpu();
	for (int i = 0; i < in->n && !in->err; i++) {
		struct vcpustat_event ev = { .type = VCPUSTAT_EV_SWITCH, .ts = in->ts0 + (__u64)i * in->step,
					     .cpu = (__u64)in->cpu, .tid = 100 + (__u64)in->cpu, .tgid = 100,
					     .tid2 = 200 + (__u64)in->cpu, .tgid2 = 200, .arg1 = 1, .arg2 = 1 };

		snprintf(ev.comm, sizeof(ev.comm), "on-cpu-%d", in->cpu);
		in->err = vcpustat_inject(vs, &ev);
		if (sched_getcpu() != in->cpu)
			in->ran_on = sched_getcpu();
	}
	return NULL;
}

static void run_injectors(struct injector *in, int n, bool together)
{
	pthread_barrier_t go;
	pthread_t t[2];

	pthread_barrier_init(&go, NULL, (unsigned int)n);
	for (int i = 0; i < n; i++) {
		in[i].go = together ? &go : NULL;
		cr_assert_eq(pthread_create(&t[i], NULL, inject_on_cpu, &in[i]), 0);
		if (!together)
			pthread_join(t[i], NULL);
	}
	for (int i = 0; together && i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(in[i].err, 0, "inject on CPU %d: %s", in[i].cpu, strerror(-in[i].err));
		cr_assert_eq(in[i].ran_on, in[i].cpu, "the injector of CPU %d ran on CPU %d", in[i].cpu,
			     in[i].ran_on);
	}
}

/* Bytes the kernel has put in CPU cpu's ring (its producer position). */
static unsigned long ring_produced(int cpu)
{
	long page = sysconf(_SC_PAGESIZE);
	__u32 key = (__u32)cpu, id = 0;
	unsigned long prod;
	int fd;
	void *p;

	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "cpu_records"), &key, &id), 0, "CPU %d has a ring", cpu);
	fd = bpf_map_get_fd_by_id(id);
	cr_assert_geq(fd, 0, "ring of CPU %d: %s", cpu, strerror(errno));
	p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, page);
	cr_assert_neq(p, MAP_FAILED, "ring of CPU %d: %s", cpu, strerror(errno));
	prod = __atomic_load_n((unsigned long *)p, __ATOMIC_ACQUIRE);
	munmap(p, (size_t)page);
	close(fd);
	return prod;
}

static void drain_all(void)
{
	int n;

	while ((n = vcpustat_drain(rb, 0)) > 0)
		;
	cr_assert_eq(n, 0, "vcpustat_drain: %s", strerror(-n));
}

static __u64 lost_ringbuf(void)
{
	__u64 lost[VCPUSTAT_NR_LOST];

	cr_assert_eq(vcpustat_lost(vs, lost), 0);
	return lost[VCPUSTAT_LOST_RINGBUF];
}

/*
 * Both CPUs record at once, with interleaved timestamps (CPU 0 even, CPU 1
 * odd). Every record arrives once, each CPU's in its order, and with per-CPU
 * rings all of them in time order: emptied one ring after the other (libbpf's
 * ring_buffer__consume), CPU 0's 2000 records would all come before CPU 1's.
 * (In the shared ring they come in the order they were reserved, which for
 * made-up timestamps is no time order: the recorder's reorder window is for
 * the small disorder of real ones.)
 */
static void two_cpus_in_time_order(bool merged)
{
	struct injector in[2] = { { .cpu = 0, .n = PER_CPU, .ts0 = 1000000, .step = 2 },
				  { .cpu = 1, .n = PER_CPU, .ts0 = 1000001, .step = 2 } };
	size_t per_cpu[2] = { 0, 0 };

	run_injectors(in, 2, true);
	drain_all();
	cr_assert_eq(nrecs, 2 * PER_CPU, "%zu records of %d", nrecs, 2 * PER_CPU);
	for (size_t i = 0; i < nrecs; i++) {
		unsigned int cpu = recs[i].cpu;

		cr_assert_eq(recs[i].type, VCPUSTAT_REC_SWITCH);
		cr_assert_lt(cpu, 2);
		cr_assert_eq(recs[i].tid, 100 + cpu, "record %zu: the thread of its CPU", i);
		cr_assert_eq(recs[i].ts, 1000000 + cpu + 2 * per_cpu[cpu], "CPU %u's record %zu out of order", cpu,
			     per_cpu[cpu]);
		if (merged)
			cr_assert_eq(recs[i].ts, 1000000 + i, "record %zu: ts %llu, CPU %u: out of time order", i,
				     (unsigned long long)recs[i].ts, cpu);
		per_cpu[cpu]++;
	}
	cr_assert_eq(per_cpu[0], PER_CPU);
	cr_assert_eq(per_cpu[1], PER_CPU);
	cr_assert_eq(lost_ringbuf(), 0, "nothing lost");
}

Test(ringbuf, two_cpus_each_in_its_ring_merged_in_time_order_nothing_lost)
{
	const char *how;

	open_rings(0, false);
	cr_assert_eq(vcpustat_rings(vs, &how), libbpf_num_possible_cpus(), "%s", how);
	two_cpus_in_time_order(true);
	/* each CPU's records went to its own ring */
	cr_assert_eq(ring_produced(0), PER_CPU * ENTRY_BYTES);
	cr_assert_eq(ring_produced(1), PER_CPU * ENTRY_BYTES);
	cr_log_info("%s", how);
}

Test(ringbuf, the_shared_ring_still_works_when_asked_for)
{
	const char *how;

	open_rings(0, true);
	cr_assert_eq(vcpustat_rings(vs, &how), 1, "%s", how);
	cr_assert_not_null(strstr(how, "shared"), "%s", how);
	two_cpus_in_time_order(false);
}

/*
 * One page per CPU (about 100 records): CPU 0 makes 500 records, CPU 1 makes
 * 50. CPU 0's ring fills up and its losses are counted on CPU 0; every one of
 * CPU 1's records arrives and CPU 1 counts no loss.
 */
Test(ringbuf, a_full_ring_loses_on_its_own_cpu_only)
{
	long page = sysconf(_SC_PAGESIZE), online = sysconf(_SC_NPROCESSORS_ONLN);
	struct injector in[2] = { { .cpu = 0, .n = 500, .ts0 = 1000, .step = 1 },
				  { .cpu = 1, .n = 50, .ts0 = 5000, .step = 1 } };
	int ncpus = libbpf_num_possible_cpus(), lost_fd;
	__u32 key = VCPUSTAT_LOST_RINGBUF;
	size_t got[2] = { 0, 0 };
	__u64 *lost;

	open_rings((unsigned int)(page * online), false);
	run_injectors(in, 2, false);
	drain_all();
	for (size_t i = 0; i < nrecs; i++) {
		cr_assert_lt(recs[i].cpu, 2);
		if (recs[i].cpu == 1)
			cr_assert_eq(recs[i].ts, 5000 + got[1], "CPU 1's record %zu", got[1]);
		got[recs[i].cpu]++;
	}
	lost = calloc((size_t)ncpus, sizeof(*lost));
	cr_assert_not_null(lost);
	lost_fd = vcpustat_map_fd(vs, "lost");
	cr_assert_eq(bpf_map_lookup_elem(lost_fd, &key, lost), 0);
	cr_assert_gt(lost[0], 0, "CPU 0's ring overflowed");
	cr_assert_eq(got[0] + lost[0], 500, "CPU 0: %zu read + %llu lost", got[0], (unsigned long long)lost[0]);
	cr_assert_eq(got[1], 50, "CPU 1: every record");
	cr_assert_eq(lost[1], 0, "CPU 1 lost nothing");
	cr_log_info("CPU 0: %zu read, %llu lost; CPU 1: %zu read", got[0], (unsigned long long)lost[0], got[1]);
	free(lost);
}

/*
 * Real events: the programs attached, a ping-pong pinned to CPUs 0 and 1
 * (each handoff a wakeup across CPUs, switches on both), drained by
 * vcpustat_drain() every 100 ms at most. No record may come later than the
 * recorder's reorder window (20 ms, user/record/recorder.c) behind the newest
 * one before it: the recorder would clamp it. Emptied one ring after the
 * other, a whole drain period of one CPU (up to 100 ms) would come after the
 * other's.
 */
#define REORDER_WINDOW_NS 20000000ull

static struct {
	__u64 newest, worst_behind;
	size_t n[2], others, late;
} live;

static int check_order(void *ctx, const struct vcpustat_record *r)
{
	(void)ctx;
	if (r->cpu < 2)
		live.n[r->cpu]++;
	else
		live.others++;
	if (r->ts < live.newest && live.newest - r->ts > live.worst_behind)
		live.worst_behind = live.newest - r->ts;
	if (r->ts + REORDER_WINDOW_NS < live.newest)
		live.late++;
	if (r->ts > live.newest)
		live.newest = r->ts;
	return 0;
}

Test(ringbuf, real_switches_on_two_cpus_come_within_the_reorder_window, .timeout = 60)
{
	struct vcpustat_consumer c = { .on_record = check_order };
	pid_t pp;

	open_rings(0, false);
	ring_buffer__free(rb);
	rb = vcpustat_ring_buffer(vs, &c);
	cr_assert_not_null(rb);
	cr_assert_geq(vcpustat_attach(vs), 0);
	pp = start_pingpong(0, 1);
	cr_assert_gt(pp, 0);
	for (int i = 0; i < 10; i++)
		cr_assert_geq(vcpustat_drain(rb, 100), 0);
	kill(pp, SIGKILL);
	wait_exit(pp);
	drain_all();
	cr_log_info("CPU 0: %zu records, CPU 1: %zu; at most %llu ns behind the newest", live.n[0], live.n[1],
		    (unsigned long long)live.worst_behind);
	cr_assert_gt(live.n[0], 1000, "CPU 0 recorded (%zu)", live.n[0]);
	cr_assert_gt(live.n[1], 1000, "CPU 1 recorded (%zu)", live.n[1]);
	cr_assert_eq(live.late, 0, "%zu records more than the reorder window behind (worst %llu ns)", live.late,
		     (unsigned long long)live.worst_behind);
	cr_assert_eq(lost_ringbuf(), 0, "nothing lost");
}
