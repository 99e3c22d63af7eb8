// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sync_bench - how fast the convex hull synchronization is on N matches
 * (default 1,000,000), against baselines measured in the same run on the
 * same data: parsing the pairs file alone, and a least-squares line fit.
 * Prints accuracy against the known truth too. bench/sync.sh runs it.
 *
 *   vcpustat-bench-sync [N [REPEATS [PAIRS_FILE_TO_WRITE]]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sync/sync.h"
#include "sync_synth.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* guest = alpha host + beta by least squares over every point, centered. */
static void least_squares(const struct vcpustat_sync_match *m, size_t n, long double *alpha, long double *beta)
{
	long double x0 = (long double)(m[0].dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? m[0].send_ns : m[0].recv_ns);
	long double y0 = (long double)(m[0].dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? m[0].recv_ns : m[0].send_ns);
	long double sx = 0, sy = 0, sxx = 0, sxy = 0;

	for (size_t i = 0; i < n; i++) {
		bool h2g = m[i].dir == VCPUSTAT_SYNC_HOST_TO_GUEST;
		long double x = (long double)(h2g ? m[i].send_ns : m[i].recv_ns) - x0;
		long double y = (long double)(h2g ? m[i].recv_ns : m[i].send_ns) - y0;

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	*alpha = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	*beta = y0 + (sy - *alpha * sx) / n - *alpha * x0;
}

/* Worst |host estimate - true host| over the range, for guest = alpha host + beta. */
static long double worst_error(const struct synth *p, long double alpha, long double beta, long double g0,
			       long double g1)
{
	long double worst = 0;

	for (int i = 0; i <= 10000; i++) {
		long double g = g0 + (g1 - g0) * i / 10000;

		worst = fmaxl(worst, fabsl((g - beta) / alpha - synth_host(p, g)));
	}
	return worst;
}

#define BEST(var, repeats, ...)                                                                                    \
	do {                                                                                                       \
		var = 1e30;                                                                                        \
		for (int r_ = 0; r_ < (repeats); r_++) {                                                           \
			double t_ = now();                                                                         \
			__VA_ARGS__;                                                                                  \
			t_ = now() - t_;                                                                           \
			if (t_ < var)                                                                              \
				var = t_;                                                                          \
		}                                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	size_t want = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000, n, n2, len = 0, i;
	int repeats = argc > 2 ? atoi(argv[2]) : 5;
	const char *out = argc > 3 ? argv[3] : NULL;
	struct synth p = synth_default(1);
	struct vcpustat_sync_match *m, *parsed = NULL, *shuffled;
	struct vcpustat_sync_result r, ri, rs;
	struct vcpustat_error err = { 0 };
	double t_parse, t_solve, t_incr, t_lsq, t_shuf;
	long double la = 0, lb = 0, g0, g1;
	char *text;
	size_t cap;
	FILE *f;

	if (!want || repeats < 1) {
		fprintf(stderr, "usage: %s [N [REPEATS [PAIRS_FILE]]]\n", argv[0]);
		return 2;
	}
	/* one round (2 matches) every 10-100 ms: N matches span about N/2 x 55 ms */
	p.duration_ns = (uint64_t)(want / 2) * 60000000ULL + 1000000000ULL;
	n = synth_generate(&p, &m);
	if (n < want) {
		fprintf(stderr, "generated only %zu matches\n", n);
		return 1;
	}
	n = want;

	/* the pairs file, in memory (and on disk if asked) */
	cap = n * 64 + 64;
	text = malloc(cap);
	for (i = 0; i < n; i++) {
		bool h2g = m[i].dir == VCPUSTAT_SYNC_HOST_TO_GUEST;

		len += (size_t)snprintf(text + len, cap - len, "%s,%llu,%s,%llu\n", h2g ? "host" : "guest",
					(unsigned long long)m[i].send_ns, h2g ? "guest" : "host",
					(unsigned long long)m[i].recv_ns);
	}
	if (out) {
		f = fopen(out, "w");
		if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
			perror(out);
			return 1;
		}
	}

	BEST(t_parse, repeats, {
		free(parsed);
		if (vcpustat_sync_parse_pairs(text, len, "bench", &parsed, &n2, &err))
			return fprintf(stderr, "%s\n", err.msg), 1;
	});
	BEST(t_solve, repeats, {
		if (vcpustat_sync_solve(m, n, &r, &err))
			return fprintf(stderr, "%s\n", err.msg), 1;
	});
	BEST(t_incr, repeats, {
		struct vcpustat_sync *s;

		vcpustat_sync_new(&s);
		for (i = 0; i < n; i++)
			vcpustat_sync_add(s, &m[i], NULL);
		vcpustat_sync_get(s, &ri);
		vcpustat_sync_free(s);
	});
	BEST(t_lsq, repeats, least_squares(m, n, &la, &lb));
	shuffled = malloc(n * sizeof(*shuffled));
	memcpy(shuffled, m, n * sizeof(*m));
	{
		uint64_t st = 7;

		for (i = n; i > 1; i--) {
			size_t j = synth_rand(&st) % i;
			struct vcpustat_sync_match t = shuffled[i - 1];

			shuffled[i - 1] = shuffled[j];
			shuffled[j] = t;
		}
	}
	BEST(t_shuf, repeats, vcpustat_sync_solve(shuffled, n, &rs, NULL));

	g0 = r.transform.guest_first;
	g1 = r.transform.guest_last;
	printf("matches: %zu (%llu host->guest, %llu guest->host) over %.1f s of host time; pairs text %.1f MB\n", n,
	       (unsigned long long)r.nr_host_to_guest, (unsigned long long)r.nr_guest_to_host,
	       (r.host_last_ns - r.host_first_ns) / 1e9, len / 1e6);
	printf("best of %d runs:\n", repeats);
	printf("  %-44s %8.3f s  %6.1f ns/match\n", "parse the pairs text (baseline)", t_parse, t_parse / n * 1e9);
	printf("  %-44s %8.3f s  %6.1f ns/match\n", "least-squares fit (baseline)", t_lsq, t_lsq / n * 1e9);
	printf("  %-44s %8.3f s  %6.1f ns/match\n", "convex hull sync, batch (sorted input)", t_solve, t_solve / n * 1e9);
	printf("  %-44s %8.3f s  %6.1f ns/match\n", "convex hull sync, one by one (sync_add)", t_incr, t_incr / n * 1e9);
	printf("  %-44s %8.3f s  %6.1f ns/match\n", "convex hull sync, batch (shuffled input)", t_shuf, t_shuf / n * 1e9);
	printf("accuracy against the truth over the range:\n");
	printf("  convex hull: quality %s, worst error %.1Lf ns, guaranteed bound %.1Lf ns\n",
	       vcpustat_sync_quality_name(r.quality), worst_error(&p, r.alpha, r.beta, g0, g1),
	       r.transform.max_error_ns);
	printf("  least squares: worst error %.1Lf ns (no bound)\n", worst_error(&p, la, lb, g0, g1));
	if (ri.alpha != r.alpha || rs.alpha != r.alpha || n2 != n)
		printf("MISMATCH between the runs\n");
	free(text);
	free(parsed);
	free(shuffled);
	free(m);
	return 0;
}
