// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * handler-cost: the in-kernel cost per event of vcpustat's scheduler handlers
 * next to empty programs on the same tracepoints, measured in the same run by
 * bpf_stats (run_time_ns / run_cnt) while a context-switch-heavy workload
 * runs; and the cost of one injected event (bpf_prog_test_run_opts).
 *
 * usage: handler-cost [-t SEC] [-n INJECTIONS] [-- WORKLOAD ARGS...]
 * The default workload is `stress-ng --switch 2 -t SEC`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <pthread.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "live/live.h"
#include "empty.skel.h"

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

struct prog_cost {
	__u64 run_cnt, run_time_ns;
};

static int prog_cost(int fd, struct prog_cost *c)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	c->run_cnt = info.run_cnt;
	c->run_time_ns = info.run_time_ns;
	return 0;
}

static double per_run(const struct prog_cost *a, const struct prog_cost *b)
{
	__u64 n = b->run_cnt - a->run_cnt;

	return n ? (double)(b->run_time_ns - a->run_time_ns) / (double)n : 0;
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
	ring_buffer__consume(rb);
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

int main(int argc, char **argv)
{
	char secs[16], *dflt[] = { "stress-ng", "--switch", "2", "-t", secs, "-q", NULL };
	struct prog_cost v_sw0, v_sw1, v_wk0, v_wk1, e_sw0, e_sw1, e_wk0, e_wk1, inj0, inj1;
	struct vcpustat_options opts = { 0 };
	struct empty_bpf *empty = NULL;
	struct vcpustat *vs = NULL;
	char **workload = dflt;
	bool with_vms = false;
	pid_t vmm = -1;
	struct prog_cost all0[16], all1[16];
	const char *all_names[16];
	size_t nall = 0;
	int c, stats_fd = -1, err = 1, n_inject = 100000, seconds = 4;
	__u64 t0, t1;

	while ((c = getopt(argc, argv, "t:n:fmh")) != -1) {
		switch (c) {
		case 'm': with_vms = true; break;
		case 'f': opts.record_level = VCPUSTAT_LEVEL_FULL; break;
		case 't': seconds = atoi(optarg); break;
		case 'n': n_inject = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-t SEC] [-n INJECTIONS] [-f] [-m] [-- WORKLOAD ARGS...]\n"
					"  -f: record level full, with a thread draining the ring buffer\n"
					"  -m: also run microvm (2 VMs x 2 vCPUs on CPU 0) during the workload\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		workload = argv + optind;
	snprintf(secs, sizeof(secs), "%d", seconds);

	if (vcpustat_open(&vs, &opts) || vcpustat_attach(vs) <= 0) {
		fprintf(stderr, "handler-cost: cannot load/attach vcpustat (root needed)\n");
		goto out;
	}
	empty = empty_bpf__open_and_load();
	if (!empty || empty_bpf__attach(empty)) {
		fprintf(stderr, "handler-cost: cannot load/attach the empty programs\n");
		goto out;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "handler-cost: bpf_enable_stats: %s\n", strerror(errno));
		goto out;
	}

	{
		const struct vcpustat_prog *progs;
		size_t n = vcpustat_progs(vs, &progs);

		nall = n < 16 ? n : 16;
		for (size_t i = 0; i < nall; i++) {
			all_names[i] = progs[i].name;
			prog_cost(vcpustat_prog_fd(vs, progs[i].name), &all0[i]);
		}
	}
	prog_cost(vcpustat_prog_fd(vs, "on_sched_switch"), &v_sw0);
	prog_cost(vcpustat_prog_fd(vs, "on_sched_wakeup"), &v_wk0);
	prog_cost(bpf_program__fd(empty->progs.empty_sched_switch), &e_sw0);
	prog_cost(bpf_program__fd(empty->progs.empty_sched_wakeup), &e_wk0);
	if (opts.record_level == VCPUSTAT_LEVEL_FULL) {
		struct vcpustat_consumer cons = { .on_record = count_record };

		rb = vcpustat_ring_buffer(vs, &cons);
		draining = 1;
		pthread_create(&drainer, NULL, drain, NULL);
	}
	if (with_vms) {
		char self[512], bin[600], dur[16];
		ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

		self[len > 0 ? len : 0] = '\0';
		if (strrchr(self, '/'))
			*strrchr(self, '/') = '\0';
		snprintf(bin, sizeof(bin), "%s/microvm", self);
		snprintf(dur, sizeof(dur), "%d", seconds);
		vmm = fork();
		if (vmm == 0) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, STDOUT_FILENO);
			execl(bin, bin, "--vms", "2", "--vcpus", "2", "--pin", "0", "--duration", dur, (char *)NULL);
			_exit(127);
		}
	}
	if (run_workload(workload)) {
		fprintf(stderr, "handler-cost: the workload failed\n");
		goto out;
	}
	for (size_t i = 0; i < nall; i++)
		prog_cost(vcpustat_prog_fd(vs, all_names[i]), &all1[i]);
	prog_cost(vcpustat_prog_fd(vs, "on_sched_switch"), &v_sw1);
	prog_cost(vcpustat_prog_fd(vs, "on_sched_wakeup"), &v_wk1);
	prog_cost(bpf_program__fd(empty->progs.empty_sched_switch), &e_sw1);
	prog_cost(bpf_program__fd(empty->progs.empty_sched_wakeup), &e_wk1);

	/* injection: a kvm_exit/kvm_entry pair of one vCPU per iteration */
	if (vmm > 0)
		waitpid(vmm, NULL, 0);
	if (rb) {
		draining = 0;
		pthread_join(drainer, NULL);
		printf("records drained during the workload: %llu\n", drained);
	}
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

	printf("sched_switch: %llu events, vcpustat %.1f ns/event, empty %.1f ns/event, ratio %.2fx\n",
	       (unsigned long long)(v_sw1.run_cnt - v_sw0.run_cnt), per_run(&v_sw0, &v_sw1), per_run(&e_sw0, &e_sw1),
	       per_run(&v_sw0, &v_sw1) / per_run(&e_sw0, &e_sw1));
	printf("sched_wakeup: %llu events, vcpustat %.1f ns/event, empty %.1f ns/event, ratio %.2fx\n",
	       (unsigned long long)(v_wk1.run_cnt - v_wk0.run_cnt), per_run(&v_wk0, &v_wk1), per_run(&e_wk0, &e_wk1),
	       per_run(&v_wk0, &v_wk1) / per_run(&e_wk0, &e_wk1));
	printf("injection: %d events, %.1f ns/event in the kernel (bpf_stats), %.0f ns/event from user space "
	       "(with the syscall)\n",
	       n_inject, per_run(&inj0, &inj1), (double)(t1 - t0) / n_inject);
	printf("every vcpustat program during the workload (runs/s, ns/run):\n");
	for (size_t i = 0; i < nall; i++)
		if (all1[i].run_cnt > all0[i].run_cnt)
			printf("  %-24s %10.0f/s %7.1f ns\n", all_names[i],
			       (double)(all1[i].run_cnt - all0[i].run_cnt) / seconds, per_run(&all0[i], &all1[i]));
	err = 0;
out:
	if (stats_fd >= 0)
		close(stats_fd);
	empty_bpf__destroy(empty);
	ring_buffer__free(rb);
	vcpustat_close(vs);
	return err;
}
