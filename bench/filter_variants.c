// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * filter-variants: what each ingredient of a scheduler handler's non-vCPU
 * path costs on this machine (bench/filter_variants.bpf.c). For each variant
 * and round: the empty pair alone on sched_switch/sched_wakeup during one
 * workload, then the variant's pair alone during another; bpf_stats
 * (run_time_ns / run_cnt) of each. Prints per round and the medians.
 *
 * usage: filter-variants [-r ROUNDS] [-t SEC] [VARIANT...]   (root; quiet machine)
 * The workload is `stress-ng --switch 2 -t SEC`.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "filter_variants.skel.h"
#include "foreign_progs.h"

#define MAX_ROUNDS 64

static const char *const variants[] = { "pid", "rodata", "map", "cpumap", "ktime", "main", "hotpage", "storage", "storage_only", "rqlen" };
#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct cost {
	__u64 cnt, ns;
};

static struct cost prog_cost(struct bpf_program *p)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct cost c = { 0 };

	memset(&info, 0, sizeof(info));
	if (p && !bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len)) {
		c.cnt = info.run_cnt;
		c.ns = info.run_time_ns;
	}
	return c;
}

static double per_run(struct cost a, struct cost b)
{
	return b.cnt > a.cnt ? (double)(b.ns - a.ns) / (double)(b.cnt - a.cnt) : 0;
}

static int run_workload(const char *secs)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execlp("stress-ng", "stress-ng", "--switch", "2", "-t", secs, "-q", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

/* Attach sw and wk (wk may be NULL) alone, run the workload, return their ns per run. */
static int measure(struct bpf_program *sw, struct bpf_program *wk, const char *secs, double *sw_ns, double *wk_ns)
{
	struct bpf_link *l1 = bpf_program__attach(sw), *l2 = wk ? bpf_program__attach(wk) : NULL;
	struct cost s0 = prog_cost(sw), w0 = prog_cost(wk);
	int err;

	if (!l1 || (wk && !l2)) {
		bpf_link__destroy(l1);
		bpf_link__destroy(l2);
		return -errno;
	}
	err = run_workload(secs);
	*sw_ns = per_run(s0, prog_cost(sw));
	*wk_ns = wk ? per_run(w0, prog_cost(wk)) : 0;
	bpf_link__destroy(l1);
	bpf_link__destroy(l2);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static double res[NR_VARIANTS][4][MAX_ROUNDS]; /* variant sw, empty sw, variant wk, empty wk */
	const char *chosen[NR_VARIANTS];
	struct filter_variants_bpf *skel;
	int c, rounds = 3, nchosen = 0, stats_fd, err = 1;
	char secs[16] = "2";

	while ((c = getopt(argc, argv, "r:t:h")) != -1) {
		switch (c) {
		case 'r': rounds = atoi(optarg); break;
		case 't': snprintf(secs, sizeof(secs), "%d", atoi(optarg)); break;
		default:
			fprintf(stderr, "usage: %s [-r ROUNDS] [-t SEC] [VARIANT...]\nvariants:", argv[0]);
			for (size_t i = 0; i < NR_VARIANTS; i++)
				fprintf(stderr, " %s", variants[i]);
			fprintf(stderr, "\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 3;
	for (size_t i = 0; i < NR_VARIANTS; i++) {
		bool want = optind == argc;

		for (int a = optind; a < argc; a++)
			want |= !strcmp(argv[a], variants[i]);
		if (want)
			chosen[nchosen++] = variants[i];
	}

	warn_foreign_sched_programs();
	skel = filter_variants_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "filter-variants: cannot load the variants (root needed)\n");
		return 1;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "filter-variants: bpf_enable_stats: %s\n", strerror(errno));
		goto out;
	}
	printf("variant   round  switch: variant / empty ns        wakeup: variant / empty ns\n");
	for (int r = 0; r < rounds; r++) {
		for (int v = 0; v < nchosen; v++) {
			char name[32];
			struct bpf_program *sw, *wk;
			double *out[4];
			int k;

			for (k = 0; k < (int)NR_VARIANTS && strcmp(variants[k], chosen[v]); k++)
				;
			for (int j = 0; j < 4; j++)
				out[j] = &res[k][j][r];
			snprintf(name, sizeof(name), "sw_%s", chosen[v]);
			sw = bpf_object__find_program_by_name(skel->obj, name);
			snprintf(name, sizeof(name), "wk_%s", chosen[v]);
			wk = bpf_object__find_program_by_name(skel->obj, name);
			if (measure(skel->progs.sw_empty, wk ? skel->progs.wk_empty : NULL, secs, out[1], out[3]) ||
			    measure(sw, wk, secs, out[0], out[2])) {
				fprintf(stderr, "filter-variants: %s: attach or workload failed\n", chosen[v]);
				goto out;
			}
			printf("%-9s %5d  %6.1f / %5.1f (%.2fx)", chosen[v], r + 1, *out[0], *out[1], *out[0] / *out[1]);
			if (wk)
				printf("        %6.1f / %5.1f (%.2fx)", *out[2], *out[3], *out[2] / *out[3]);
			printf("\n");
			fflush(stdout);
		}
	}
	printf("\nmedians over %d rounds (extra ns over the empty program measured next to it):\n", rounds);
	for (int v = 0; v < nchosen; v++) {
		double m[4];
		int k;

		for (k = 0; k < (int)NR_VARIANTS && strcmp(variants[k], chosen[v]); k++)
			;
		for (int j = 0; j < 4; j++)
			m[j] = median(res[k][j], rounds);
		printf("%-9s switch %6.1f / %5.1f ns (%+5.1f, %.2fx)", chosen[v], m[0], m[1], m[0] - m[1], m[0] / m[1]);
		if (m[2] > 0)
			printf("   wakeup %6.1f / %5.1f ns (%+5.1f, %.2fx)", m[2], m[3], m[2] - m[3], m[2] / m[3]);
		printf("\n");
	}
	err = 0;
out:
	if (stats_fd >= 0)
		close(stats_fd);
	filter_variants_bpf__destroy(skel);
	return err;
}
