// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * refresh-cost: CPU time of one live-view refresh (read every map, build the
 * window model) with N simulated vCPUs in the maps, created through the
 * injection program: VMS VMs x VCPUS vCPUs, each with exits of several
 * reasons, preemptions and culprits; then, each measured on its own, what an
 * output adds: the text of `top -b`, the JSON document of `top -j` (written
 * as the window is walked, checked equal to jansson's dump of it). Compared
 * in the same run with reading the maps only (the floor) and with `bpftool
 * map dump` of the vcpus map (a generic tool over the same data).
 *
 * usage: refresh-cost [-v VMS] [-c VCPUS_PER_VM] [-r REFRESHES] [-n] [-K]
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "cli/cli.h"
#include "live/live.h"
#include "util/util.h"
#include "model/summary.h"
#include "util/jsonw.h"

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

static double ms_of(double total, int n)
{
	return n ? total / n : 0;
}

int main(int argc, char **argv)
{
	struct vcpustat_options opts = { .max_hists = 16384, .max_vcpus = 16384, .max_vms = 4096 };
	int vms = 50, vcpus = 20, refreshes = 50, c;
	double t0, first_ms, maps_ms = 0, window_ms = 0, text_ms = 0, json_ms = 0, dumpf_ms = 0;
	int out;
	bool quiet = false, keep_heap = true;
	struct live_window w;
	struct jw jw = { 0 }, tree_text = { 0 };
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;
	size_t nr_hists = 0, nr_culprits = 0;
	__u64 ts = 1000000;
	FILE *devnull;

	while ((c = getopt(argc, argv, "v:c:r:nKh")) != -1) {
		switch (c) {
		case 'v': vms = atoi(optarg); break;
		case 'c': vcpus = atoi(optarg); break;
		case 'r': refreshes = atoi(optarg); break;
		case 'n': quiet = true; break;
		case 'K': keep_heap = false; break;
		default:
			fprintf(stderr, "usage: %s [-v VMS] [-c VCPUS_PER_VM] [-r REFRESHES] [-n] [-K]\n"
					"  -n: no new activity between refreshes (for profiling the refresh alone)\n"
					"  -K: without heap_keep() (the heap given back to the kernel: the baseline)\n",
				argv[0]);
			return 2;
		}
	}
	if (vms < 1 || vms > 4000 || vcpus < 1 || vcpus > 100 || refreshes < 1) {
		fprintf(stderr, "refresh-cost: 1 <= VMS <= 4000, 1 <= VCPUS_PER_VM <= 100, REFRESHES >= 1\n");
		return 2;
	}
	if (keep_heap)
		heap_keep(); /* as vcpustat does */
	if (vcpustat_open(&vs, &opts)) {
		fprintf(stderr, "refresh-cost: cannot load the BPF object (root needed)\n");
		return 1;
	}
	if (simulate(vs, vms, vcpus, &ts)) {
		fprintf(stderr, "refresh-cost: injection failed\n");
		return 1;
	}
	devnull = fopen("/dev/null", "w");
	if (!devnull || live_window_init(&w, vs, NULL) || live_window_next(&w, NULL)) {
		fprintf(stderr, "refresh-cost: cannot read the maps\n");
		return 1;
	}
	/*
	 * The first refresh after the start resolves every VM's name in /proc and
	 * faults the read buffers in: reported on its own, not in the means.
	 */
	{
		struct summary s;

		t0 = cpu_ms();
		if (live_window_next(&w, &s))
			return 1;
		first_ms = cpu_ms() - t0;
		summary_free(&s);
	}
	/* stdout to /dev/null while `top -j` prints (cli_json_print) */
	fflush(stdout);
	out = dup(STDOUT_FILENO);
	if (out < 0 || dup2(fileno(devnull), STDOUT_FILENO) < 0)
		return 1;
	for (int i = 0; i < refreshes; i++) {
		struct summary s;
		json_t *doc;

		if (!quiet)
			simulate(vs, vms, vcpus, &ts); /* new activity between refreshes (not timed) */
		/* the floor: reading the maps, nothing else */
		t0 = cpu_ms();
		if (vcpustat_snapshot(vs, &snap))
			return 1;
		maps_ms += cpu_ms() - t0;
		nr_hists = snap.nr_hists;
		nr_culprits = snap.nr_culprits;
		vcpustat_snapshot_free(&snap);
		/* what every refresh does: the live window (maps, names, window model, reaping) */
		t0 = cpu_ms();
		if (live_window_next(&w, &s))
			return 1;
		window_ms += cpu_ms() - t0;
		/* then what its output needs: `top -b` prints text ... */
		t0 = cpu_ms();
		summary_print(devnull, &s, NULL, 0, 5);
		text_ms += cpu_ms() - t0;
		/* ... `top -j` one JSON document, written and printed as top does (stdout is /dev/null here) */
		t0 = cpu_ms();
		jw_reset(&jw);
		summary_json_write(&jw, &s, NULL, 0);
		if (cli_json_print_text(&jw))
			return 1;
		json_ms += cpu_ms() - t0;
		/*
		 * the baseline: jansson's share alone of the way top -j went before
		 * 2026-11-29 (the same document as a tree, dumped and freed; building the
		 * tree, 5 ms at 1,000 vCPUs then, not counted)
		 */
		doc = summary_json(&s, NULL, 0);
		if (!doc)
			return 1;
		t0 = cpu_ms();
		jw_reset(&tree_text);
		json_dump_callback(doc, jw_dump_callback, &tree_text, JSON_COMPACT | JSON_REAL_PRECISION(17));
		json_decref(doc);
		dumpf_ms += cpu_ms() - t0;
		if (jw_len(&tree_text) != jw_len(&jw) - 1 || memcmp(jw_text(&tree_text), jw.p, jw_len(&tree_text))) {
			fprintf(stderr, "refresh-cost: the written document differs from jansson's dump of it\n");
			return 1;
		}
		summary_free(&s);
	}
	fflush(stdout);
	dup2(out, STDOUT_FILENO);
	close(out);
	printf("%d vCPUs (%d VMs x %d), %zu histograms, %zu culprits, mean of %d refreshes%s%s, CPU per refresh:\n",
	       vms * vcpus, vms, vcpus, nr_hists, nr_culprits, refreshes, quiet ? " (no new activity)" : "",
	       keep_heap ? "" : ", without heap_keep()");
	printf("  first refresh after the start       %7.2f ms  (names from /proc, buffers faulted in; not in the means)\n",
	       first_ms);
	printf("  read the maps only (baseline)       %7.2f ms\n", ms_of(maps_ms, refreshes));
	printf("  live window (maps + window model)   %7.2f ms\n", ms_of(window_ms, refreshes));
	printf("  + text (top -b)                     %7.2f ms  -> refresh of top -b %.2f ms\n",
	       ms_of(text_ms, refreshes), ms_of(window_ms + text_ms, refreshes));
	printf("  + JSON (top -j)                     %7.2f ms  -> refresh of top -j %.2f ms\n",
	       ms_of(json_ms, refreshes), ms_of(window_ms + json_ms, refreshes));
	printf("    baseline: jansson's dump + free   %7.2f ms  (of the same document as a tree, its build not counted)\n",
	       ms_of(dumpf_ms, refreshes));
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
	live_window_free(&w);
	jw_free(&jw);
	jw_free(&tree_text);
	fclose(devnull);
	vcpustat_close(vs);
	return 0;
}
