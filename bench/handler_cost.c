// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * handler-cost: the in-kernel cost per event of vcpustat's scheduler handlers
 * next to empty programs on the same tracepoints, by bpf_stats (run_time_ns /
 * run_cnt) while a context-switch-heavy workload runs; and the cost of one
 * injected event (bpf_prog_test_run_opts).
 *
 * Each program is measured alone on its tracepoints, in phases of one run:
 * the empty programs, the floor's, then vcpustat, then the empty programs and
 * the floor's again (the empty and floor figures are over both of their
 * phases). The floor (issue 38 item 1, bench/sched_floor.bpf.c) is an empty
 * program plus one clock read: what any tracer that times events pays.
 * Attached together, the program that runs first on a tracepoint pays for
 * what both touch (on some hosts ~20-40 ns per event: bench/RESULTS.md,
 * issue 15), so the ratio would depend on the order of attachment; -c
 * measures that way anyway (both attached, vcpustat first: the method before
 * issue 15), with no floor.
 *
 * usage: handler-cost [-t SEC] [-n INJECTIONS] [-f] [-m] [-i N] [-b BUSY:SLEEP] [-c] [-- WORKLOAD ARGS...]
 * The default workload is `stress-ng --switch 2 -t SEC`, once per phase.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "live/live.h"
#include "empty.skel.h"
#include "sched_floor.skel.h"
#include "foreign_progs.h"
#include "prog_cost.h"

#define MAX_TRACKED 64

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* What one program did during the phases it was attached in. */
struct measured {
	struct prog_cost start, sum;
};

static void measure_start(struct measured *m, int fd)
{
	prog_cost(fd, &m->start);
}

static void measure_stop(struct measured *m, int fd)
{
	struct prog_cost now;

	prog_cost(fd, &now);
	m->sum.run_cnt += now.run_cnt - m->start.run_cnt;
	m->sum.run_time_ns += now.run_time_ns - m->start.run_time_ns;
}

static double measured_ns(const struct measured *m)
{
	struct prog_cost zero = { 0 };

	return per_run(&zero, &m->sum);
}

static struct ring_buffer *rb;
static volatile int draining;
static unsigned long long drained;
static pthread_t drainer;

static int count_record(void *ctx, const struct vcpustat_record *r)
{
	drained++;
	return 0;
}

static void *drain(void *arg)
{
	while (draining)
		vcpustat_drain(rb, 100);
	vcpustat_drain(rb, 0);
	return NULL;
}

/*
 * -i: threads that behave like the vCPUs of tools/microvm (busy, then
 * asleep as a halted guest, over and over), pinned to CPU 0 as microvm
 * --pin 0 does, and registered as vCPUs through vcpustat_add_vcpu() (the
 * injection program): on a host without /dev/kvm, real scheduler events of
 * tracked threads.
 */
static volatile int tracked_stop;
static volatile pid_t tracked_tid[MAX_TRACKED];
static unsigned int busy_us = 2000, sleep_us = 2000;

static void *tracked_thread(void *arg)
{
	long i = (long)arg;
	char name[16];
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	snprintf(name, sizeof(name), "CPU %ld/KVM", i);
	pthread_setname_np(pthread_self(), name);
	tracked_tid[i] = (pid_t)syscall(SYS_gettid);
	while (!tracked_stop) {
		struct timespec nap = { .tv_sec = sleep_us / 1000000, .tv_nsec = (sleep_us % 1000000) * 1000l };
		__u64 until = now_ns() + busy_us * 1000ull;

		while (now_ns() < until && !tracked_stop)
			;
		if (sleep_us)
			nanosleep(&nap, NULL);
	}
	return NULL;
}

static int run_workload(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "handler-cost: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

static pid_t start_microvm(int seconds)
{
	char bin[600], dur[16];
	pid_t pid;

	sibling_binary(bin, sizeof(bin), "microvm");
	snprintf(dur, sizeof(dur), "%d", seconds);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		execl(bin, bin, "--vms", "2", "--vcpus", "2", "--pin", "0", "--duration", dur, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * A set of programs on sched_switch, sched_wakeup and sched_waking: the empty
 * ones, or the floor's (an empty program plus one clock read).
 */
struct prog_set {
	struct bpf_program *p[3];
	struct measured m[3];
};

/* Attach a set's programs, run the workload, add up their costs, detach. */
static int set_phase(struct prog_set *s, char **workload)
{
	struct bpf_link *links[3];
	int err = prog_attach(s->p, links, 3);

	if (!err) {
		for (int i = 0; i < 3; i++)
			measure_start(&s->m[i], bpf_program__fd(s->p[i]));
		err = run_workload(workload);
		for (int i = 0; i < 3; i++)
			measure_stop(&s->m[i], bpf_program__fd(s->p[i]));
	}
	prog_detach(links, 3);
	return err;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-t SEC] [-n INJECTIONS] [-f] [-m] [-i N] [-b BUSY_US:SLEEP_US] [-c] [-- WORKLOAD ARGS...]\n"
		"  -t SEC   length of each phase (default 4): empty programs, floor, vcpustat, empty, floor\n"
		"  -f       record level full, with a thread draining the ring buffer\n"
		"  -m       also run microvm (2 VMs x 2 vCPUs on CPU 0) during the run (needs /dev/kvm)\n"
		"  -i N     also run N threads tracked as vCPUs (registered with vcpustat_add_vcpu),\n"
		"           on CPU 0, each busy BUSY_US then asleep SLEEP_US (-b, default 2000:2000)\n"
		"  -c       old method: empty programs attached with vcpustat (after it), in one phase\n",
		argv0);
}

int main(int argc, char **argv)
{
	char secs[16], *dflt[] = { "stress-ng", "--switch", "2", "-t", secs, "-q", NULL };
	struct measured v_sw = { 0 }, v_wk = { 0 }, v_wg = { 0 }, all[24];
	struct prog_set es = { 0 }, fs = { 0 };
	struct measured *const e_sw = &es.m[0], *const e_wk = &es.m[1], *const e_wg = &es.m[2];
	struct sched_floor_bpf *floor = NULL;
	struct vcpustat_options opts = { 0 };
	struct prog_cost inj0, inj1;
	struct empty_bpf *empty = NULL;
	struct vcpustat *vs = NULL;
	pthread_t tracked[MAX_TRACKED];
	const char *all_names[24];
	char **workload = dflt;
	bool with_vms = false, concurrent = false;
	int c, stats_fd = -1, err = 1, n_inject = 100000, seconds = 4, n_tracked = 0, sw_fd, wk_fd, wg_fd;
	pid_t vmm = -1;
	size_t nall = 0;
	__u64 t0, t1;

	while ((c = getopt(argc, argv, "t:n:fmi:b:ch")) != -1) {
		switch (c) {
		case 'm': with_vms = true; break;
		case 'f': opts.record_level = VCPUSTAT_LEVEL_FULL; break;
		case 't': seconds = atoi(optarg); break;
		case 'n': n_inject = atoi(optarg); break;
		case 'i': n_tracked = atoi(optarg); break;
		case 'b':
			if (sscanf(optarg, "%u:%u", &busy_us, &sleep_us) != 2) {
				usage(argv[0]);
				return 2;
			}
			break;
		case 'c': concurrent = true; break;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (n_tracked < 0 || n_tracked > MAX_TRACKED) {
		fprintf(stderr, "handler-cost: -i takes 0 to %d threads\n", MAX_TRACKED);
		return 2;
	}
	if (optind < argc)
		workload = argv + optind;
	snprintf(secs, sizeof(secs), "%d", seconds);

	warn_foreign_sched_programs();
	if (vcpustat_open(&vs, &opts)) {
		fprintf(stderr, "handler-cost: cannot load vcpustat (root needed)\n");
		goto out;
	}
	printf("scheduler programs: %s\n",
	       vcpustat_marks(vs) ? "marks mode (task structs only)" : "hot page (VCPUSTAT_NO_MARKS, or no thread pidfds)");
	empty = empty_bpf__open_and_load();
	if (!empty) {
		fprintf(stderr, "handler-cost: cannot load the empty programs\n");
		goto out;
	}
	floor = sched_floor_bpf__open_and_load();
	if (!floor) {
		fprintf(stderr, "handler-cost: cannot load the floor's programs\n");
		goto out;
	}
	es = (struct prog_set){ .p = { empty->progs.empty_sched_switch, empty->progs.empty_sched_wakeup,
				       empty->progs.empty_sched_waking } };
	fs = (struct prog_set){ .p = { floor->progs.floor_sched_switch, floor->progs.floor_sched_wakeup,
				       floor->progs.floor_sched_waking } };
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "handler-cost: bpf_enable_stats: %s\n", strerror(errno));
		goto out;
	}
	sw_fd = vcpustat_prog_fd(vs, "on_sched_switch");
	wk_fd = vcpustat_prog_fd(vs, "on_sched_wakeup");
	wg_fd = vcpustat_prog_fd(vs, "on_sched_waking");

	for (long i = 0; i < n_tracked; i++) {
		char name[16];

		pthread_create(&tracked[i], NULL, tracked_thread, (void *)i);
		while (!tracked_tid[i])
			usleep(1000);
		snprintf(name, sizeof(name), "CPU %u/KVM", (unsigned int)(i & 0xffff)); /* a comm: 15 characters at most */
		if (vcpustat_add_vcpu(vs, (__u32)tracked_tid[i], (__u32)getpid(), (__u32)i, name)) {
			fprintf(stderr, "handler-cost: cannot track thread %d\n", tracked_tid[i]);
			goto out;
		}
	}
	if (with_vms)
		vmm = start_microvm(concurrent ? seconds : 5 * seconds + 1); /* all five phases */

	if (!concurrent && (set_phase(&es, workload) || set_phase(&fs, workload))) {
		fprintf(stderr, "handler-cost: the workload failed\n");
		goto out;
	}

	if (vcpustat_attach(vs) <= 0) {
		fprintf(stderr, "handler-cost: cannot attach vcpustat\n");
		goto out;
	}
	if (concurrent && empty_bpf__attach(empty)) {
		fprintf(stderr, "handler-cost: cannot attach the empty programs\n");
		goto out;
	}
	{
		const struct vcpustat_prog *progs;
		size_t n = vcpustat_progs(vs, &progs);

		nall = n < 24 ? n : 24;
		for (size_t i = 0; i < nall; i++) {
			all_names[i] = progs[i].name;
			memset(&all[i], 0, sizeof(all[i]));
			measure_start(&all[i], vcpustat_prog_fd(vs, progs[i].name));
		}
	}
	measure_start(&v_sw, sw_fd);
	measure_start(&v_wk, wk_fd);
	measure_start(&v_wg, wg_fd);
	if (concurrent) {
		measure_start(e_sw, bpf_program__fd(empty->progs.empty_sched_switch));
		measure_start(e_wk, bpf_program__fd(empty->progs.empty_sched_wakeup));
		measure_start(e_wg, bpf_program__fd(empty->progs.empty_sched_waking));
	}
	if (opts.record_level == VCPUSTAT_LEVEL_FULL) {
		struct vcpustat_consumer cons = { .on_record = count_record };

		rb = vcpustat_ring_buffer(vs, &cons);
		draining = 1;
		pthread_create(&drainer, NULL, drain, NULL);
	}
	if (run_workload(workload)) {
		fprintf(stderr, "handler-cost: the workload failed\n");
		goto out;
	}
	for (size_t i = 0; i < nall; i++)
		measure_stop(&all[i], vcpustat_prog_fd(vs, all_names[i]));
	measure_stop(&v_sw, sw_fd);
	measure_stop(&v_wk, wk_fd);
	measure_stop(&v_wg, wg_fd);
	if (concurrent) {
		measure_stop(e_sw, bpf_program__fd(empty->progs.empty_sched_switch));
		measure_stop(e_wk, bpf_program__fd(empty->progs.empty_sched_wakeup));
		measure_stop(e_wg, bpf_program__fd(empty->progs.empty_sched_waking));
		empty_bpf__detach(empty);
	}
	if (rb) {
		draining = 0;
		pthread_join(drainer, NULL);
		printf("records drained during the workload: %llu\n", drained);
	}
	if (n_tracked) {
		struct vcpustat_snapshot snap;
		unsigned long long preempt = 0, wake = 0;

		if (vcpustat_snapshot(vs, &snap) == 0) {
			for (size_t i = 0; i < snap.nr_vcpus; i++) {
				preempt += snap.vcpus[i].fsm.preemptions;
				wake += snap.vcpus[i].fsm.wakeups;
			}
			printf("%d tracked threads: %zu vCPUs tracked, %llu preemptions, %llu wakeups, "
			       "%zu culprit entries\n",
			       n_tracked, snap.nr_vcpus, preempt, wake, snap.nr_culprits);
			vcpustat_snapshot_free(&snap);
		}
	}

	/* injection: a kvm_exit/kvm_entry pair of one vCPU per iteration */
	prog_cost(vcpustat_prog_fd(vs, "inject"), &inj0);
	t0 = now_ns();
	for (int i = 0; i < n_inject; i++) {
		struct vcpustat_event ev = { .type = (i & 1) ? VCPUSTAT_EV_KVM_ENTRY : VCPUSTAT_EV_KVM_EXIT,
					     .ts = 1000 + (__u64)i * 100, .tid = 999999, .tgid = 999998,
					     .arg0 = (i & 1) ? 0 : 30, .arg1 = KVM_ISA_VMX };

		if (vcpustat_inject(vs, &ev)) {
			fprintf(stderr, "handler-cost: injection failed\n");
			goto out;
		}
	}
	t1 = now_ns();
	prog_cost(vcpustat_prog_fd(vs, "inject"), &inj1);
	vcpustat_close(vs);
	vs = NULL;

	if (!concurrent && (set_phase(&es, workload) || set_phase(&fs, workload))) {
		fprintf(stderr, "handler-cost: the workload failed\n");
		goto out;
	}

	{
		static const char *const tp[3] = { "sched_switch", "sched_wakeup", "sched_waking" };
		const struct measured *v[3] = { &v_sw, &v_wk, &v_wg };

		for (int i = 0; i < 3; i++) {
			printf("%s: %llu events, vcpustat %.1f ns/event, empty %.1f ns/event (%llu events), ratio %.2fx\n",
			       tp[i], (unsigned long long)v[i]->sum.run_cnt, measured_ns(v[i]), measured_ns(&es.m[i]),
			       (unsigned long long)es.m[i].sum.run_cnt, measured_ns(v[i]) / measured_ns(&es.m[i]));
			if (!concurrent)
				printf("%s floor: %.1f ns/event (%llu events), vcpustat %.2fx the floor\n", tp[i],
				       measured_ns(&fs.m[i]), (unsigned long long)fs.m[i].sum.run_cnt,
				       measured_ns(v[i]) / measured_ns(&fs.m[i]));
		}
	}
	printf("injection: %d events, %.1f ns/event in the kernel (bpf_stats), %.0f ns/event from user space "
	       "(with the syscall)\n",
	       n_inject, per_run(&inj0, &inj1), (double)(t1 - t0) / n_inject);
	printf("every vcpustat program during the workload (runs/s, ns/run):\n");
	for (size_t i = 0; i < nall; i++)
		if (all[i].sum.run_cnt)
			printf("  %-24s %10.0f/s %7.1f ns\n", all_names[i], (double)all[i].sum.run_cnt / seconds,
			       measured_ns(&all[i]));
	err = 0;
out:
	tracked_stop = 1;
	for (int i = 0; i < n_tracked; i++)
		if (tracked_tid[i])
			pthread_join(tracked[i], NULL);
	if (vmm > 0)
		waitpid(vmm, NULL, 0);
	if (stats_fd >= 0)
		close(stats_fd);
	empty_bpf__destroy(empty);
	sched_floor_bpf__destroy(floor);
	ring_buffer__free(rb);
	vcpustat_close(vs);
	return err;
}
