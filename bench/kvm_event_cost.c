// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kvm-event-cost: the in-kernel cost per event of vcpustat's KVM handlers
 * (kvm_entry, kvm_exit and the exit details: kvm_pio, kvm_mmio, kvm_msr,
 * kvm_page_fault) next to empty programs on the same tracepoints, by
 * bpf_stats (run_time_ns / run_cnt), while tools/microvm runs its --mix
 * (every kind of exit, bench/kvm_empty.bpf.c). Needs /dev/kvm: the KVM lab.
 *
 * Phases of one run, each with a fresh microvm: the empty programs, the
 * floor's, vcpustat, the empty programs again, the floor's again (each set
 * alone on its tracepoints, as bench/handler_cost.c does it; the empty and
 * floor figures are over both their phases). The floor (issue 38 item 1):
 * an empty program plus one clock read, kept, on kvm_entry and kvm_exit --
 * the least any timing tracer pays per event.
 * vcpustat runs with --address-spaces: its second kvm_exit program (the
 * guest's CR3) is measured too, next to an empty tp_btf/kvm_exit program.
 *
 * usage: kvm-event-cost [-t SEC] [-l none|vcpu]
 *        kvm-event-cost -i N
 *
 * -i N: on any host with BPF (no /dev/kvm needed): N exits of one vCPU, each
 * kvm_exit, one exit detail (pio, mmio, msr, page fault in turn) and
 * kvm_entry, injected into vcpustat's handler (the raw_tp injection program:
 * the same handler code as the tracepoint programs run) and into an empty
 * raw_tp program given the same event, and into the floor's raw_tp (one
 * clock read); bpf_stats per event type. What the
 * handler costs on a real CPU, where the lab's emulation magnifies it. Then
 * halt cycles (inject_halt_bench): the halt-polling and wake-reason events.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "live/live.h"
#include "kvm_empty.skel.h"
#include "prog_cost.h"

/* the last: --address-spaces's second program on kvm_exit (tp_btf), next to an empty tp_btf one */
#define NR_TP 7
static const char *const tp_names[NR_TP] = { "kvm_entry", "kvm_exit", "kvm_pio", "kvm_mmio", "kvm_msr", "kvm_page_fault",
					      "kvm_exit (cr3)" };
static const char *const our_progs[NR_TP] = { "on_kvm_entry", "on_kvm_exit",	   "on_kvm_pio",     "on_kvm_mmio",
					      "on_kvm_msr",   "on_kvm_page_fault", "on_kvm_exit_cr3" };

/* What each program did over the phases it was attached in. */
struct sum {
	struct prog_cost c[NR_TP];
};

/*
 * The programs of one set, by tracepoint: the empty ones, or the floor's
 * (kvm_entry and kvm_exit only: NULL elsewhere, not measured).
 */
static void set_progs(struct kvm_empty_bpf *e, bool floor, struct bpf_program *p[NR_TP])
{
	struct bpf_program *const empty[NR_TP] = { e->progs.empty_kvm_entry, e->progs.empty_kvm_exit,
						   e->progs.empty_kvm_pio,   e->progs.empty_kvm_mmio,
						   e->progs.empty_kvm_msr,   e->progs.empty_kvm_page_fault,
						   e->progs.empty_kvm_exit_btf };
	struct bpf_program *const fl[NR_TP] = { e->progs.floor_kvm_entry, e->progs.floor_kvm_exit };

	memcpy(p, floor ? fl : empty, sizeof(empty));
}

/* The set's program fds (-1 where it has none). */
static void set_fds(struct kvm_empty_bpf *e, bool floor, int fd[NR_TP])
{
	struct bpf_program *p[NR_TP];

	set_progs(e, floor, p);
	for (int i = 0; i < NR_TP; i++)
		fd[i] = p[i] ? bpf_program__fd(p[i]) : -1;
}

/* Attach the programs of one set alone; links[] to destroy after the phase. */
static int attach_set(struct kvm_empty_bpf *e, bool floor, struct bpf_link *links[NR_TP])
{
	struct bpf_program *p[NR_TP];

	set_progs(e, floor, p);
	return prog_attach(p, links, NR_TP);
}

/* microvm --mix all for `seconds`: port I/O, MMIO, MSR reads and writes, cpuid, nested page faults, halts. */
static int run_microvm(int seconds)
{
	char bin[600], dur[16];
	int status;
	pid_t pid;

	sibling_binary(bin, sizeof(bin), "microvm");
	snprintf(dur, sizeof(dur), "%d", seconds);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		execl(bin, bin, "--vms", "1", "--vcpus", "2", "--mix", "all", "--busy-us", "2000", "--idle-us", "1000",
		      "--duration", dur, "-name", "guest=cost", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

/* Run microvm with the programs behind fd[] attached (by the caller), adding what they did to s. */
static int phase(const int fd[NR_TP], int seconds, struct sum *s)
{
	struct prog_cost a[NR_TP], b[NR_TP];
	int err;

	for (int i = 0; i < NR_TP; i++)
		if (fd[i] >= 0)
			prog_cost(fd[i], &a[i]);
	err = run_microvm(seconds);
	for (int i = 0; i < NR_TP; i++) {
		if (fd[i] < 0)
			continue;
		prog_cost(fd[i], &b[i]);
		s->c[i].run_cnt += b[i].run_cnt - a[i].run_cnt;
		s->c[i].run_time_ns += b[i].run_time_ns - a[i].run_time_ns;
	}
	return err;
}

static double ns_per(const struct prog_cost *c)
{
	static const struct prog_cost zero;

	return per_run(&zero, c);
}

/* One injection's in-kernel time (bpf_stats of the program at fd), or -1. */
/*
 * -l vcpu: the records are read as a recording reads them, after each event
 * and outside its measured time (undrained, a full ring buffer would make
 * every submission wake a reader that is not there: microseconds each).
 */
static struct ring_buffer *records;

static int drop_record(void *ctx, const struct vcpustat_record *r)
{
	(void)ctx;
	(void)r;
	return 0;
}

static double injected_ns(int fd, const struct vcpustat_event *ev, struct vcpustat *vs)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ev, .ctx_size_in = sizeof(*ev));
	struct prog_cost a, b;
	int err;

	prog_cost(fd, &a);
	err = vs ? vcpustat_inject(vs, ev) : bpf_prog_test_run_opts(fd, &o);
	prog_cost(fd, &b);
	if (records)
		vcpustat_drain(records, 0);
	if (err || b.run_cnt != a.run_cnt + 1)
		return -1;
	return (double)(b.run_time_ns - a.run_time_ns);
}

/*
 * The injected table: per event type, vcpustat's handler, the empty program
 * and the floor (one clock read), each given the same events; vcpustat's
 * time as a ratio to each.
 */
static void print_rows(const char *what, const char *const *names, int rows, double (*sum)[rows],
		       long (*cnt)[rows])
{
	printf("%-33s %10s %12s %12s %12s %7s %7s\n", what, "injected", "vcpustat", "empty", "floor", "/empty",
	       "/floor");
	for (int s = 0; s < rows; s++) {
		double m[3];

		for (int p = 0; p < 3; p++)
			m[p] = cnt[p][s] ? sum[p][s] / (double)cnt[p][s] : 0;
		printf("%-33s %10ld %9.1f ns %9.1f ns %9.1f ns %6.2fx %6.2fx\n", names[s], cnt[0][s], m[0], m[1], m[2],
		       m[1] > 0 ? m[0] / m[1] : 0, m[2] > 0 ? m[0] / m[2] : 0);
	}
}

static int inject_bench(struct kvm_empty_bpf *empty, struct vcpustat *vs, int n)
{
	static const char *const names[] = { "kvm_exit",       "kvm_pio",   "kvm_mmio", "kvm_msr",
					     "kvm_page_fault", "kvm_entry", "kvm_entry, exit without a detail" };
	static const __u64 details[] = { VCPUSTAT_EV_PIO, VCPUSTAT_EV_MMIO, VCPUSTAT_EV_MSR, VCPUSTAT_EV_PAGE_FAULT };
	double sum[3][7] = { { 0 } };
	long cnt[3][7] = { { 0 } };
	int fds[3] = { vcpustat_prog_fd(vs, "inject"), bpf_program__fd(empty->progs.empty_inject),
		       bpf_program__fd(empty->progs.floor_inject) };

	for (int i = 0; i < n; i++) {
		struct vcpustat_event ev[3] = {
			{ .type = VCPUSTAT_EV_KVM_EXIT, .arg0 = 30, .arg1 = 1 },
			{ .type = details[i % 4], .arg0 = 0x3f8 + (__u64)(i % 8), .arg1 = (__u64)(i & 1), .arg2 = 1 },
			{ .type = VCPUSTAT_EV_KVM_ENTRY },
		};
		/* every other exit has no detail (an exit for HLT, CPUID...): its kvm_entry has none to charge */
		bool plain = (i / 4) & 1;
		int slot[3] = { 0, 1 + i % 4, plain ? 6 : 5 };

		for (int k = 0; k < 3; k++) {
			if (k == 1 && plain)
				continue;
			ev[k].ts = 1000000 + (__u64)i * 1000 + (__u64)k * 100;
			ev[k].tid = 999999;
			ev[k].tgid = 999998;
			snprintf(ev[k].comm, sizeof(ev[k].comm), "CPU 0/KVM");
			for (int p = 0; p < 3; p++) {
				double ns = injected_ns(fds[p], &ev[k], p ? NULL : vs);

				if (ns < 0)
					return -1;
				sum[p][slot[k]] += ns;
				cnt[p][slot[k]]++;
			}
		}
	}
	print_rows("event", names, 7, sum, cnt);
	return 0;
}

/*
 * -i, halts in KVM: N halt cycles of vCPU A, each: kvm_exit(HLT), the
 * halt's start (fentry kvm_vcpu_halt); then in turn either a poll that
 * sees the wake-up (kvm_vcpu_wakeup, not waited) or a sleep (sched_switch
 * out) ended by vCPU B's IPI (kvm_apic_accept_irq in B's thread,
 * sched_waking, sched_wakeup, a switch between two threads of no VM on
 * A's CPU while A waits there, sched_switch in, kvm_vcpu_wakeup waited,
 * kvm_inj_virq of the IPI's vector); kvm_entry (which closes the wake-up's
 * samples, by reason and by vector). Each event into vcpustat's
 * handler and into the empty raw_tp, per event type.
 */
static int inject_halt_bench(struct kvm_empty_bpf *empty, struct vcpustat *vs, int n)
{
	enum { HLT, HALT, END_OK, SLEEP, ACCEPT, WAKING, WAKEUP, OTHERS, RUN, END_WAITED, INJ, ENTRY, NR_ROWS };
	static const char *const names[NR_ROWS] = {
		"kvm_exit (hlt)",	     "kvm_vcpu_halt (fentry)",  "kvm_vcpu_wakeup (poll ok)", "sched_switch (out, asleep)",
		"kvm_apic_accept_irq (ipi)", "sched_waking",		"sched_wakeup",		     "sched_switch (others, A waits)",
		"sched_switch (in)",	     "kvm_vcpu_wakeup (waited)", "kvm_inj_virq (woken)",	     "kvm_entry (after a halt)",
	};
	double sum[3][NR_ROWS] = { { 0 } };
	long cnt[3][NR_ROWS] = { { 0 } };
	int fds[3] = { vcpustat_prog_fd(vs, "inject"), bpf_program__fd(empty->progs.empty_inject),
		       bpf_program__fd(empty->progs.floor_inject) };
	const __u32 A = 999997, B = 999996, VM = 999995, X = 999994, Y = 999993;

	for (int i = 0; i < n; i++) {
		__u64 t = 100000000 + (__u64)i * 100000;
		bool slept = i & 1;
		struct vcpustat_event ev[12];
		int slot[12], k = 0;

		memset(ev, 0, sizeof(ev));
#define EV(row, type_, tid_, cpu_, a0, a1, a2) \
	(ev[k] = (struct vcpustat_event){ .type = (type_), .ts = t + (__u64)k * 1000, .tid = (tid_), .tgid = VM, \
					  .cpu = (cpu_), .arg0 = (a0), .arg1 = (a1), .arg2 = (a2) }, \
	 slot[k++] = (row))
		EV(HLT, VCPUSTAT_EV_KVM_EXIT, A, 0, 0x78, 2 /* SVM */, 0);
		EV(HALT, VCPUSTAT_EV_HALT, A, 0, 200000, 1, 0);
		if (!slept) {
			EV(END_OK, VCPUSTAT_EV_HALT_END, A, 0, 3000, 0, 1);
		} else {
			EV(SLEEP, VCPUSTAT_EV_SWITCH, A, 0, 1, 0, 0);
			EV(ACCEPT, VCPUSTAT_EV_APIC_ACCEPT, B, 1, 0, 0x41, 0);
			EV(WAKING, VCPUSTAT_EV_WAKING, A, 1, 0, 0, 0);
			ev[k - 1].tid2 = B;
			EV(WAKEUP, VCPUSTAT_EV_WAKEUP, A, 1, 0, 0, 0);
			/* two threads of no VM switch on CPU 0 while A waits there: charged as its culprit */
			EV(OTHERS, VCPUSTAT_EV_SWITCH, X, 0, 0, 1, 0);
			ev[k - 1].tgid = X;
			ev[k - 1].tid2 = Y;
			ev[k - 1].tgid2 = Y;
			EV(RUN, VCPUSTAT_EV_SWITCH, 0, 0, 0, 0, 0);
			ev[k - 1].tid2 = A;
			ev[k - 1].tgid2 = VM;
			EV(END_WAITED, VCPUSTAT_EV_HALT_END, A, 0, 9000, 1, 1);
			EV(INJ, VCPUSTAT_EV_INJ_VIRQ, A, 0, 0x41, 0, 0);
		}
		EV(ENTRY, VCPUSTAT_EV_KVM_ENTRY, A, 0, 0, 0, 0);
#undef EV
		for (int j = 0; j < k; j++) {
			if (ev[j].tid == X)
				snprintf(ev[j].comm, sizeof(ev[j].comm), "worker");
			else if (ev[j].tid)
				snprintf(ev[j].comm, sizeof(ev[j].comm), "CPU %d/KVM", ev[j].tid == A ? 0 : 1);
			for (int p = 0; p < 3; p++) {
				double ns = injected_ns(fds[p], &ev[j], p ? NULL : vs);

				if (ns < 0)
					return -1;
				sum[p][slot[j]] += ns;
				cnt[p][slot[j]]++;
			}
		}
	}
	print_rows("event (halts in KVM)", names, NR_ROWS, sum, cnt);
	return 0;
}

int main(int argc, char **argv)
{
	struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE, .address_spaces = true };
	struct sum v = { 0 }, e = { 0 }, f = { 0 };
	struct bpf_link *links[NR_TP] = { 0 };
	struct kvm_empty_bpf *empty = NULL;
	struct vcpustat *vs = NULL;
	int c, seconds = 3, stats_fd = -1, rc = 1, efd[NR_TP], ffd[NR_TP], vfd[NR_TP], n_inject = 0;

	while ((c = getopt(argc, argv, "t:l:i:h")) != -1) {
		switch (c) {
		case 'i':
			n_inject = atoi(optarg);
			if (n_inject < 1)
				goto usage;
			break;
		case 't':
			seconds = atoi(optarg);
			break;
		case 'l':
			if (!strcmp(optarg, "vcpu"))
				opts.record_level = VCPUSTAT_LEVEL_VCPU;
			else if (strcmp(optarg, "none"))
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (seconds < 1)
		goto usage;
	if (n_inject) { /* the injection baseline only: no KVM tracepoint is attached */
		empty = kvm_empty_bpf__open();
		if (empty) {
			struct bpf_program *p;

			bpf_object__for_each_program(p, empty->obj)
				bpf_program__set_autoload(p, p == empty->progs.empty_inject || p == empty->progs.floor_inject);
		}
		if (!empty || kvm_empty_bpf__load(empty) || vcpustat_open(&vs, &opts) ||
		    (stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0) {
			fprintf(stderr, "kvm-event-cost: cannot load the programs or enable bpf_stats (root needed)\n");
			goto out;
		}
		if (opts.record_level != VCPUSTAT_LEVEL_NONE) {
			struct vcpustat_consumer rc = { .on_record = drop_record };

			records = vcpustat_ring_buffer(vs, &rc);
			if (!records) {
				fprintf(stderr, "kvm-event-cost: cannot read the ring buffers\n");
				goto out;
			}
		}
		rc = inject_bench(empty, vs, n_inject) || inject_halt_bench(empty, vs, n_inject) ? 1 : 0;
		if (rc)
			fprintf(stderr, "kvm-event-cost: an injection failed\n");
		goto out;
	}
	if (access("/dev/kvm", R_OK | W_OK)) {
		fprintf(stderr, "kvm-event-cost: needs /dev/kvm (run it in the KVM lab: bench/kvm-event-cost.sh)\n");
		return 1;
	}
	empty = kvm_empty_bpf__open_and_load();
	if (!empty) {
		fprintf(stderr, "kvm-event-cost: cannot load the empty KVM programs (root? the kvm module?)\n");
		return 1;
	}
	set_fds(empty, false, efd);
	set_fds(empty, true, ffd);
	if (vcpustat_open(&vs, &opts)) {
		fprintf(stderr, "kvm-event-cost: cannot load vcpustat (root needed)\n");
		goto out;
	}
	for (int i = 0; i < NR_TP; i++)
		vfd[i] = vcpustat_prog_fd(vs, our_progs[i]);
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "kvm-event-cost: bpf_enable_stats: %s\n", strerror(errno));
		goto out;
	}
	for (int round = 0; round < 2; round++) {
		if (attach_set(empty, false, links) || phase(efd, seconds, &e))
			goto failed;
		prog_detach(links, NR_TP);
		if (attach_set(empty, true, links) || phase(ffd, seconds, &f))
			goto failed;
		prog_detach(links, NR_TP);
		if (round)
			break;
		if (vcpustat_attach(vs) <= 0 || phase(vfd, seconds, &v))
			goto failed;
		vcpustat_close(vs);
		vs = NULL;
	}

	printf("%-16s %12s %12s %12s %12s %12s %7s %7s\n", "tracepoint", "events", "vcpustat", "events", "empty",
	       "floor", "/empty", "/floor");
	for (int i = 0; i < NR_TP; i++) {
		double nv = ns_per(&v.c[i]), ne = ns_per(&e.c[i]), nf = f.c[i].run_cnt ? ns_per(&f.c[i]) : 0;

		printf("%-16s %12llu %9.1f ns %12llu %9.1f ns ", tp_names[i], (unsigned long long)v.c[i].run_cnt, nv,
		       (unsigned long long)e.c[i].run_cnt, ne);
		if (nf > 0)
			printf("%9.1f ns %6.2fx %6.2fx\n", nf, ne > 0 ? nv / ne : 0, nv / nf);
		else
			printf("%12s %6.2fx %7s\n", "-", ne > 0 ? nv / ne : 0, "-");
	}
	rc = 0;
	goto out;
failed:
	fprintf(stderr, "kvm-event-cost: a phase failed (attach, or microvm)\n");
out:
	prog_detach(links, NR_TP);
	if (stats_fd >= 0)
		close(stats_fd);
	ring_buffer__free(records);
	vcpustat_close(vs);
	kvm_empty_bpf__destroy(empty);
	return rc;
usage:
	fprintf(stderr, "usage: %s [-t SEC] [-l none|vcpu] | -i N [-l none|vcpu]\n", argv[0]);
	return 2;
}
