// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * refresh-cost: CPU time of one live-view refresh (read every map, build the
 * window summary, render it as JSON and as text) with N simulated vCPUs in the
 * maps, created through the injection program: VMS VMs x VCPUS vCPUs, each
 * with exits of several reasons, preemptions and culprits. Compared in the
 * same run with reading the maps only (the floor) and with `bpftool map dump`
 * of the vcpus map (a generic tool over the same data).
 *
 * usage: refresh-cost [-v VMS] [-c VCPUS_PER_VM] [-r REFRESHES]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "live/live.h"
#include "model/model.h"

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int inject(struct vcpustat *vs, __u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2,
		  __u32 tgid2, __u64 a0, __u64 a1, __u64 a2)
{
	struct vcpustat_event ev = { .type = type, .ts = ts, .cpu = cpu, .tid = tid, .tgid = tgid, .tid2 = tid2,
				     .tgid2 = tgid2, .arg0 = a0, .arg1 = a1, .arg2 = a2 };

	snprintf(ev.comm, sizeof(ev.comm), "CPU %u/KVM", tid % 100);
	return vcpustat_inject(vs, &ev);
}

/* Activity for every vCPU: exits of 6 reasons, a preemption by another VM's vCPU. */
static int simulate(struct vcpustat *vs, int vms, int vcpus, __u64 *ts)
{
	static const __u32 reasons[] = { 30, 32, 48, 12, 1, 10 };
	int err = 0;

	for (int round = 0; round < 3 && !err; round++)
		for (int m = 0; m < vms && !err; m++)
			for (int c = 0; c < vcpus && !err; c++) {
				__u32 tgid = 100000 + (__u32)m * 1000, tid = tgid + 1 + (__u32)c;
				__u32 other = 100000 + (__u32)((m + 1) % vms) * 1000 + 1, cpu = (__u32)c % 64;

				for (int r = 0; r < 6 && !err; r++) {
					err = inject(vs, VCPUSTAT_EV_KVM_EXIT, (*ts += 100), cpu, tid, tgid, 0, 0,
						     reasons[r], KVM_ISA_VMX, (__u64)c);
					if (!err)
						err = inject(vs, VCPUSTAT_EV_KVM_ENTRY, (*ts += 900 + r * 50), cpu, tid,
							     tgid, 0, 0, (__u64)c, 0, 0);
				}
				if (!err)
					err = inject(vs, VCPUSTAT_EV_SWITCH, (*ts += 100), cpu, tid, tgid, other,
						     100000 + (__u32)((m + 1) % vms) * 1000, 0, 1, 1);
				if (!err)
					err = inject(vs, VCPUSTAT_EV_SWITCH, (*ts += 5000), cpu, other,
						     100000 + (__u32)((m + 1) % vms) * 1000, tid, tgid, 0, 1, 1);
			}
	return err;
}

int main(int argc, char **argv)
{
	struct vcpustat_options opts = { .max_hists = 16384 };
	struct vcpustat_snapshot prev, cur;
	int vms = 50, vcpus = 20, refreshes = 50, c;
	double t0, maps_ms = 0, full_ms = 0;
	struct vcpustat *vs;
	struct names names;
	__u64 ts = 1000000;
	FILE *devnull;

	while ((c = getopt(argc, argv, "v:c:r:h")) != -1) {
		switch (c) {
		case 'v': vms = atoi(optarg); break;
		case 'c': vcpus = atoi(optarg); break;
		case 'r': refreshes = atoi(optarg); break;
		default: fprintf(stderr, "usage: %s [-v VMS] [-c VCPUS_PER_VM] [-r REFRESHES]\n", argv[0]); return 2;
		}
	}
	if (vcpustat_open(&vs, &opts)) {
		fprintf(stderr, "refresh-cost: cannot load the BPF object (root needed)\n");
		return 1;
	}
	if (simulate(vs, vms, vcpus, &ts)) {
		fprintf(stderr, "refresh-cost: injection failed\n");
		return 1;
	}
	names_init(&names, NULL, NULL);
	devnull = fopen("/dev/null", "w");
	vcpustat_snapshot(vs, &prev);
	for (int i = 0; i < refreshes; i++) {
		struct summary s;
		json_t *doc;
		char *text;

		simulate(vs, vms, vcpus, &ts); /* new activity between refreshes (not timed) */
		t0 = cpu_ms();
		vcpustat_snapshot(vs, &cur);
		maps_ms += cpu_ms() - t0;
		summary_build(&s, &prev, &cur, &names, NULL);
		doc = summary_json(&s, NULL, 0);
		text = json_dumps(doc, JSON_COMPACT);
		fputs(text, devnull);
		summary_print(devnull, &s, NULL, 0, 5);
		full_ms += cpu_ms() - t0;
		free(text);
		json_decref(doc);
		summary_free(&s);
		vcpustat_snapshot_free(&prev);
		prev = cur;
	}
	printf("%d vCPUs (%d VMs x %d), %zu histograms, %zu culprits: refresh %.2f ms CPU "
	       "(maps only %.2f ms; summary + JSON + text %.2f ms), mean of %d\n",
	       vms * vcpus, vms, vcpus, prev.nr_hists, prev.nr_culprits, full_ms / refreshes, maps_ms / refreshes,
	       (full_ms - maps_ms) / refreshes, refreshes);
	{
		char cmd[256];
		struct timespec a, b;

		snprintf(cmd, sizeof(cmd), "bpftool map dump id $(bpftool map show name vcpus | head -1 | cut -d: -f1) "
					   "> /dev/null");
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (system(cmd) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("peer: bpftool map dump of the vcpus map alone: %.1f ms wall\n",
			       (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
		}
	}
	vcpustat_snapshot_free(&prev);
	fclose(devnull);
	names_free(&names);
	vcpustat_close(vs);
	return 0;
}
