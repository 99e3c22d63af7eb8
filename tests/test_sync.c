// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The convex hull synchronization (user/sync.c): accuracy, bounds, qualities, chains. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "sync/sync.h"
#include "sync_synth.h"

static struct vcpustat_sync_result solve(const struct vcpustat_sync_match *m, size_t n)
{
	struct vcpustat_sync_result r;
	struct vcpustat_error err = { 0 };
	int ret = vcpustat_sync_solve(m, n, &r, &err);

	cr_assert_eq(ret, 0, "solve: %s", err.msg);
	return r;
}

static struct vcpustat_sync_result solve_incremental(const struct vcpustat_sync_match *m, size_t n)
{
	struct vcpustat_sync_result r;
	struct vcpustat_error err = { 0 };
	struct vcpustat_sync *s;

	cr_assert_eq(vcpustat_sync_new(&s), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(vcpustat_sync_add(s, &m[i], &err), 0, "add %zu: %s", i, err.msg);
	vcpustat_sync_get(s, &r);
	vcpustat_sync_free(s);
	return r;
}

static void shuffle(struct vcpustat_sync_match *m, size_t n, uint64_t seed)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = synth_rand(&seed) % i;
		struct vcpustat_sync_match t = m[i - 1];

		m[i - 1] = m[j];
		m[j] = t;
	}
}

/* Largest |estimate - truth| in host ns over the measured range (and a bit
 * beyond), checking on the way that the truth and the estimate lie inside
 * the transform's bounds. */
static long double check_against_truth(const struct synth *p, const struct vcpustat_sync_result *r,
				       long double margin_ns)
{
	const struct vcpustat_sync_transform *t = &r->transform;
	long double g0 = t->guest_first - margin_ns, g1 = t->guest_last + margin_ns, worst = 0;
	const int steps = 4000;

	for (int i = 0; i <= steps; i++) {
		long double g = g0 + (g1 - g0) * i / steps, host, lo, hi, truth = synth_host(p, g);
		bool inside = g >= t->guest_first && g <= t->guest_last;

		vcpustat_sync_eval(t, g, &host, &lo, &hi);
		cr_assert(lo <= truth + 1e-3L && truth <= hi + 1e-3L,
			  "truth %.3Lf outside the bounds [%.3Lf, %.3Lf] at guest %.0Lf", truth, lo, hi, g);
		cr_assert(lo <= host && host <= hi, "estimate %.3Lf outside its own bounds [%.3Lf, %.3Lf]", host, lo, hi);
		if (inside) {
			cr_assert_leq(fmaxl(host - lo, hi - host), t->max_error_ns + 1e-3L, "max_error_ns is not the max");
			worst = fmaxl(worst, fabsl(host - truth));
		}
	}
	/* At both ends of the range, every feasible line is between the two
	 * extreme lines; the truth is one. */
	for (int end = 0; end < 2; end++) {
		long double x = end ? (long double)r->host_last_ns : (long double)r->host_first_ns;
		long double a = vcpustat_sync_line_at(&r->min_slope, x), b = vcpustat_sync_line_at(&r->max_slope, x);
		long double y = synth_guest(p, x);

		cr_assert(fminl(a, b) - 1e-3L <= y && y <= fmaxl(a, b) + 1e-3L,
			  "truth not between the extreme lines at host %.0Lf", x);
	}
	return worst;
}

Test(sync, accurate_within_1us_on_60s_exchanges_with_drift_and_outliers)
{
	long double worst = 0, worst_bound = 0;

	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct synth p = synth_default(seed);
		struct vcpustat_sync_match *m;
		size_t n = synth_generate(&p, &m);
		struct vcpustat_sync_result r = solve(m, n), ri;
		long double err;

		cr_assert_gt(n, 1000);
		cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE, "seed %llu: %s", (unsigned long long)seed,
			     vcpustat_sync_quality_name(r.quality));
		cr_assert_eq(r.nr_host_to_guest + r.nr_guest_to_host, n);
		cr_assert(r.host_last_ns - r.host_first_ns > 59000000000ULL);
		err = check_against_truth(&p, &r, 5e9L);
		cr_assert_lt(err, 1000, "seed %llu: estimate %.1Lf ns from the truth", (unsigned long long)seed, err);
		cr_assert(fabsl(r.alpha - p.alpha) < 5e-8L, "drift off by %.3Lg", r.alpha - p.alpha);
		worst = fmaxl(worst, err);
		worst_bound = fmaxl(worst_bound, r.transform.max_error_ns);

		/* one by one in order: the same answer */
		ri = solve_incremental(m, n);
		cr_assert_eq(ri.quality, r.quality);
		cr_assert(ri.alpha == r.alpha && ri.beta == r.beta, "incremental differs from batch");
		free(m);
	}
	cr_log_info("sync: 20 synthetic 60 s runs: worst estimate error %.1Lf ns, worst guaranteed bound %.1Lf ns",
		    worst, worst_bound);
	fprintf(stderr, "sync: 20 synthetic 60 s runs: worst estimate error %.1Lf ns, worst guaranteed bound %.1Lf ns\n",
		worst, worst_bound);
}

Test(sync, order_of_the_matches_does_not_matter)
{
	struct synth p = synth_default(7);
	struct vcpustat_sync_match *m;
	size_t n = synth_generate(&p, &m);
	struct vcpustat_sync_result sorted = solve(m, n), shuffled, incremental;

	shuffle(m, n, 99);
	shuffled = solve(m, n);
	incremental = solve_incremental(m, n); /* mostly out of order: rebuilds from the hulls */
	cr_assert_eq(shuffled.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(incremental.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert(shuffled.alpha == sorted.alpha && shuffled.beta == sorted.beta);
	cr_assert(incremental.min_slope.slope == sorted.min_slope.slope);
	cr_assert(incremental.max_slope.slope == sorted.max_slope.slope);
	cr_assert(incremental.alpha == sorted.alpha && incremental.beta == sorted.beta);
	free(m);
}

Test(sync, large_timestamps_and_clock_behind)
{
	/* host on CLOCK_REALTIME (1.7e18 ns), guest on a monotonic clock that
	 * runs slow: guest = 0.9997 host - 1.7e18 + 3e11 */
	struct synth p = synth_default(3);
	struct vcpustat_sync_match *m;
	size_t n;
	struct vcpustat_sync_result r;
	long double err;

	p.alpha = 0.9997L;
	p.host0 = 1700000000000000000ULL;
	p.beta = 300e9L - 0.9997L * 1700000000000000000.0L;
	n = synth_generate(&p, &m);
	r = solve(m, n);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE);
	err = check_against_truth(&p, &r, 1e9L);
	cr_assert_lt(err, 1000, "estimate %.1Lf ns from the truth", err);
	free(m);
}

Test(sync, no_match_is_absent_and_identity)
{
	struct vcpustat_sync_result r = solve(NULL, 0);
	struct vcpustat_sync_time t;

	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ABSENT);
	cr_assert_str_eq(vcpustat_sync_quality_name(r.quality), "absent");
	cr_assert_eq(vcpustat_sync_apply(&r.transform, 123456789, &t), 0);
	cr_assert_eq(t.host_ns, 123456789);
	cr_assert_not(t.bounded);
	cr_assert_eq(t.error_ns, UINT64_MAX);
}

Test(sync, one_direction_is_incomplete)
{
	struct synth p = synth_default(5);
	struct vcpustat_sync_match *m;
	size_t n = synth_generate(&p, &m), k = 0;

	for (int dir = 0; dir < 2; dir++) {
		struct vcpustat_sync_match *one = malloc(n * sizeof(*one));
		struct vcpustat_sync_result r;

		k = 0;
		for (size_t i = 0; i < n; i++)
			if ((int)m[i].dir == dir)
				one[k++] = m[i];
		r = solve(one, k);
		cr_assert_eq(r.quality, VCPUSTAT_SYNC_INCOMPLETE, "direction %d: %s", dir,
			     vcpustat_sync_quality_name(r.quality));
		cr_assert_eq(r.alpha, 1);
		cr_assert_eq(dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? r.nr_host_to_guest : r.nr_guest_to_host, k);
		cr_assert(isinf(r.transform.max_error_ns));
		/* slope 1 touching the fastest message: every message still
		 * goes forward in time */
		for (size_t i = 0; i < k; i++) {
			long double host = one[i].dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? one[i].send_ns : one[i].recv_ns;
			long double guest = one[i].dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? one[i].recv_ns : one[i].send_ns;
			long double line = r.alpha * host + r.beta;

			if (dir == VCPUSTAT_SYNC_HOST_TO_GUEST)
				cr_assert_leq(line, guest + 1);
			else
				cr_assert_geq(line, guest - 1);
		}
		free(one);
	}
	free(m);
}

Test(sync, slope_bounded_on_one_side_is_approximate)
{
	/* host->guest sent at host 1000 received at guest 2000; guest->host
	 * sent at guest 2500 received at host 3000: alpha >= 0.25, no upper
	 * bound. Slope 1 is feasible, with an offset from -500 to 1000. */
	struct vcpustat_sync_match m[] = {
		{ 1000, 2000, 1, VCPUSTAT_SYNC_HOST_TO_GUEST },
		{ 2500, 3000, 2, VCPUSTAT_SYNC_GUEST_TO_HOST },
	};
	struct vcpustat_sync_result r = solve(m, 2);

	cr_assert_eq(r.quality, VCPUSTAT_SYNC_APPROXIMATE);
	cr_assert(r.has_min_slope);
	cr_assert_not(r.has_max_slope);
	cr_assert(fabsl(r.min_slope.slope - 0.25L) < 1e-15L);
	cr_assert_eq(r.alpha, 1);
	cr_assert(fabsl(r.beta - 250) < 1e-9L, "beta %.6Lf: midway between -500 and 1000", r.beta);
	cr_assert(isinf(r.transform.max_error_ns));

	/* Slope 1 infeasible (alpha >= 1.5): the slope is clamped to 1.5. */
	m[1] = (struct vcpustat_sync_match){ 5000, 3000, 2, VCPUSTAT_SYNC_GUEST_TO_HOST };
	r = solve(m, 2);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_APPROXIMATE);
	cr_assert(fabsl(r.alpha - 1.5L) < 1e-15L);
	cr_assert(fabsl(r.alpha * 1000 + r.beta - 2000) < 1e-9L, "the line touches both points");
	cr_assert(fabsl(r.alpha * 3000 + r.beta - 5000) < 1e-9L);
}

Test(sync, impossible_match_fails_and_keeps_the_last_good_transform)
{
	struct synth p = synth_default(11);
	struct vcpustat_sync_match *m, bad;
	size_t n = synth_generate(&p, &m), k;
	struct vcpustat_sync_result good, r, before;

	m = realloc(m, (n + 2) * sizeof(*m));
	good = solve(m, n);
	cr_assert_eq(good.quality, VCPUSTAT_SYNC_ACCURATE);

	/* at the end: a host->guest message received 100 us before it was sent */
	bad = (struct vcpustat_sync_match){ good.host_last_ns + 1000000, 0, 999, VCPUSTAT_SYNC_HOST_TO_GUEST };
	bad.recv_ns = (uint64_t)llroundl(synth_guest(&p, bad.send_ns)) - 100000;
	m[n] = bad;
	m[n + 1] = (struct vcpustat_sync_match){ bad.send_ns + 1000, bad.recv_ns + 10000000, 1000,
						 VCPUSTAT_SYNC_GUEST_TO_HOST }; /* after the failure */
	r = solve(m, n + 2);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_FAIL);
	cr_assert_str_eq(vcpustat_sync_quality_name(r.quality), "fail");
	cr_assert_eq(r.transform_quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(r.fail_index, n);
	cr_assert_eq(r.fail_match.key, 999);
	cr_assert_eq(r.nr_matches, n + 2);
	cr_assert_eq(r.nr_host_to_guest + r.nr_guest_to_host, n);
	cr_assert(r.alpha == good.alpha && r.beta == good.beta, "the last good transform is kept");
	cr_assert(r.transform.max_error_ns == good.transform.max_error_ns);

	/* in the middle (by host time): the last good transform is the one of
	 * the matches before it in host time; the incremental interface agrees */
	k = n / 2;
	bad.send_ns = m[k].dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? m[k].send_ns + 1 : m[k].recv_ns + 1;
	bad.recv_ns = (uint64_t)llroundl(synth_guest(&p, bad.send_ns)) - 100000;
	m[n] = bad;
	r = solve(m, n + 1);
	before = solve(m, k + 1);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_FAIL);
	cr_assert_eq(r.fail_index, n);
	cr_assert(r.alpha == before.alpha && r.beta == before.beta);
	cr_assert_eq(r.host_last_ns, before.host_last_ns);
	free(m);
}

Test(sync, crossing_hulls_at_the_same_host_time_fail)
{
	/* received by the guest (guest 100) before the guest sent something
	 * (guest 200) that the host received at the very moment it sent the
	 * first one */
	struct vcpustat_sync_match m[] = {
		{ 200, 5000, 1, VCPUSTAT_SYNC_GUEST_TO_HOST },
		{ 5000, 100, 2, VCPUSTAT_SYNC_HOST_TO_GUEST },
	};
	struct vcpustat_sync_result r = solve(m, 2);

	cr_assert_eq(r.quality, VCPUSTAT_SYNC_FAIL);
	cr_assert_eq(r.transform_quality, VCPUSTAT_SYNC_INCOMPLETE);
	cr_assert_eq(r.fail_index, 1);
}

/*
 * Brute force on small integer point sets (many ties and collinear points):
 * the slope range is [max slope(u, l) over u left of l, min slope(l, u) over
 * l left of u]; feasible iff that range holds a positive slope and points at
 * the same host time are in order.
 */
Test(sync, extreme_lines_match_brute_force_on_small_sets)
{
	uint64_t st = 12345;

	for (int round = 0; round < 3000; round++) {
		size_t n = 2 + synth_rand(&st) % 9, i, j;
		struct vcpustat_sync_match m[12];
		long double amin = -INFINITY, amax = INFINITY;
		bool feasible = true;
		struct vcpustat_sync_result r, ri;
		int range = round < 1500 ? 8 : 1000;

		for (i = 0; i < n; i++) {
			uint64_t x = synth_rand(&st) % range, y = x + synth_rand(&st) % range;

			/* above points higher on average: feasible more often than not */
			if (synth_rand(&st) & 1)
				m[i] = (struct vcpustat_sync_match){ x, y + range / 2, i, VCPUSTAT_SYNC_HOST_TO_GUEST };
			else
				m[i] = (struct vcpustat_sync_match){ y, x, i, VCPUSTAT_SYNC_GUEST_TO_HOST };
		}
		for (i = 0; i < n; i++) {
			if (m[i].dir != VCPUSTAT_SYNC_HOST_TO_GUEST)
				continue;
			for (j = 0; j < n; j++) {
				long double ux = m[i].send_ns, uy = m[i].recv_ns, lx = m[j].recv_ns, ly = m[j].send_ns;

				if (m[j].dir != VCPUSTAT_SYNC_GUEST_TO_HOST)
					continue;
				if (lx < ux)
					amax = fminl(amax, (uy - ly) / (ux - lx));
				else if (ux < lx)
					amin = fmaxl(amin, (ly - uy) / (lx - ux));
				else if (uy < ly)
					feasible = false;
			}
		}
		if (amin > amax || amax <= 0) /* clocks run forward */
			feasible = false;
		r = solve(m, n);
		shuffle(m, n, st);
		ri = solve_incremental(m, n);
		cr_assert_eq(r.quality == VCPUSTAT_SYNC_FAIL, !feasible, "round %d: quality %s, brute force %s", round,
			     vcpustat_sync_quality_name(r.quality), feasible ? "feasible" : "infeasible");
		cr_assert_eq(ri.quality == VCPUSTAT_SYNC_FAIL, !feasible, "round %d (incremental, any order)", round);
		if (!feasible)
			continue;
		cr_assert_eq(r.has_min_slope, isfinite(amin) && amin > 0, "round %d", round);
		cr_assert_eq(r.has_max_slope, isfinite(amax), "round %d", round);
		cr_assert_eq(ri.quality, r.quality);
		if (r.has_min_slope) {
			cr_assert(fabsl(r.min_slope.slope - amin) < 1e-12L, "round %d: min slope %.15Lf, brute force %.15Lf",
				  round, r.min_slope.slope, amin);
			cr_assert(fabsl(ri.min_slope.slope - amin) < 1e-12L, "round %d (incremental)", round);
		}
		if (r.has_max_slope) {
			cr_assert(fabsl(r.max_slope.slope - amax) < 1e-12L, "round %d: max slope %.15Lf, brute force %.15Lf",
				  round, r.max_slope.slope, amax);
			cr_assert(fabsl(ri.max_slope.slope - amax) < 1e-12L, "round %d (incremental)", round);
		}
		/* the estimate satisfies every match */
		for (i = 0; i < n; i++) {
			bool up = m[i].dir == VCPUSTAT_SYNC_HOST_TO_GUEST;
			long double x = up ? m[i].send_ns : m[i].recv_ns, y = up ? m[i].recv_ns : m[i].send_ns;
			long double line = r.alpha * x + r.beta;

			if (up)
				cr_assert_leq(line, y + 1e-6L, "round %d: estimate above a host->guest point", round);
			else
				cr_assert_geq(line, y - 1e-6L, "round %d: estimate below a guest->host point", round);
		}
	}
}

Test(sync, apply_rounds_and_bounds)
{
	struct synth p = synth_default(2);
	struct vcpustat_sync_match *m;
	size_t n = synth_generate(&p, &m);
	struct vcpustat_sync_result r = solve(m, n);
	struct vcpustat_sync_time t;
	uint64_t g = (uint64_t)((r.transform.guest_first + r.transform.guest_last) / 2);
	long double host, lo, hi;

	vcpustat_sync_eval(&r.transform, g, &host, &lo, &hi);
	cr_assert_eq(vcpustat_sync_apply(&r.transform, g, &t), 0);
	cr_assert_eq(t.host_ns, (uint64_t)llroundl(host));
	cr_assert(t.bounded);
	cr_assert_eq(t.earliest_ns, (uint64_t)floorl(lo));
	cr_assert_eq(t.latest_ns, (uint64_t)ceill(hi));
	cr_assert_eq(t.error_ns, t.host_ns - t.earliest_ns > t.latest_ns - t.host_ns ? t.host_ns - t.earliest_ns :
										     t.latest_ns - t.host_ns);
	cr_assert_leq(t.error_ns, (uint64_t)ceill(r.transform.max_error_ns) + 1);
	/* the true host time is in [earliest, latest] */
	cr_assert_leq(t.earliest_ns, (uint64_t)synth_host(&p, g));
	cr_assert_geq(t.latest_ns, (uint64_t)synth_host(&p, g));
	/* a guest time mapping below host 0 is out of range */
	cr_assert_eq(vcpustat_sync_apply(&r.transform, 1000, &t), -ERANGE);
	free(m);
}

Test(sync, chained_transform_equals_direct_composition_within_bounds)
{
	/* L1 on L0: guest1 = 1.0002 host0 + 5 s; L2 on L1: guest2 = 0.9999 guest1 + 2 s */
	struct synth p10 = synth_default(21), p21 = synth_default(22), p20 = synth_default(23);
	struct vcpustat_sync_match *m10, *m21, *m20;
	size_t n10 = synth_generate(&p10, &m10), n21, n20;
	struct vcpustat_sync_result r10, r21, r20;
	struct vcpustat_sync_transform chain, deep;
	struct vcpustat_error err = { 0 };
	long double worst = 0;

	p21.alpha = 0.9999L;
	p21.beta = 2e9L;
	p21.host0 = (uint64_t)llroundl(synth_guest(&p10, p10.host0));
	p20.alpha = p21.alpha * p10.alpha;
	p20.beta = p21.alpha * p10.beta + p21.beta;
	n21 = synth_generate(&p21, &m21);
	n20 = synth_generate(&p20, &m20);
	r10 = solve(m10, n10);
	r21 = solve(m21, n21);
	r20 = solve(m20, n20);
	cr_assert_eq(r10.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(r21.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(r20.quality, VCPUSTAT_SYNC_ACCURATE);

	cr_assert_eq(vcpustat_sync_compose(&r10.transform, &r21.transform, &chain, &err), 0, "%s", err.msg);
	cr_assert_eq(chain.nr_early, 9);
	cr_assert(isfinite(chain.max_error_ns));
	for (int i = 0; i <= 1000; i++) {
		long double g2 = chain.guest_first + (chain.guest_last - chain.guest_first) * i / 1000;
		long double h, lo, hi, h1, lo1, hi1, h0, dh, dlo, dhi;
		long double truth = synth_host(&p10, synth_host(&p21, g2));

		vcpustat_sync_eval(&chain, g2, &h, &lo, &hi);
		/* the chain's estimate is the composition of the estimates */
		vcpustat_sync_eval(&r21.transform, g2, &h1, &lo1, &hi1);
		vcpustat_sync_eval(&r10.transform, h1, &h0, NULL, NULL);
		cr_assert(fabsl(h - h0) < 0.01L, "chain %.3Lf != composition %.3Lf", h, h0);
		/* and its bounds are each step's bounds applied in turn */
		vcpustat_sync_eval(&r10.transform, lo1, NULL, &dlo, NULL);
		vcpustat_sync_eval(&r10.transform, hi1, NULL, NULL, &dhi);
		cr_assert(fabsl(lo - dlo) < 0.01L && fabsl(hi - dhi) < 0.01L);
		cr_assert(lo <= truth && truth <= hi, "truth outside the chain's bounds at guest2 %.0Lf", g2);
		cr_assert_leq(fmaxl(h - lo, hi - h), chain.max_error_ns + 1e-3L);
		/* the direct L2 -> L0 synchronization agrees within both bounds */
		vcpustat_sync_eval(&r20.transform, g2, &dh, NULL, NULL);
		if (g2 >= r20.transform.guest_first && g2 <= r20.transform.guest_last)
			cr_assert_leq(fabsl(h - dh), chain.max_error_ns + r20.transform.max_error_ns,
				      "chain and direct differ by %.1Lf ns", fabsl(h - dh));
		worst = fmaxl(worst, fabsl(h - truth));
	}
	cr_assert_lt(worst, 2000, "chained estimate %.1Lf ns from the truth", worst);

	/* three levels fit (27 bound lines), four do not */
	cr_assert_eq(vcpustat_sync_compose(&chain, &r21.transform, &deep, &err), 0);
	cr_assert_eq(deep.nr_early, 27);
	cr_assert_eq(vcpustat_sync_compose(&deep, &r21.transform, &deep, &err), -E2BIG);
	cr_assert(strstr(err.msg, "bound lines"));
	free(m10);
	free(m21);
	free(m20);
}

Test(sync, rejects_bad_matches)
{
	struct vcpustat_sync_match m = { VCPUSTAT_SYNC_MAX_NS + 1, 5, 0, VCPUSTAT_SYNC_HOST_TO_GUEST };
	struct vcpustat_error err = { 0 };
	struct vcpustat_sync_result r;
	struct vcpustat_sync *s;

	cr_assert_eq(vcpustat_sync_solve(&m, 1, &r, &err), -ERANGE);
	cr_assert(strstr(err.msg, "2^62"), "%s", err.msg);
	m.send_ns = 1;
	m.dir = (enum vcpustat_sync_dir)7;
	cr_assert_eq(vcpustat_sync_new(&s), 0);
	cr_assert_eq(vcpustat_sync_add(s, &m, &err), -EINVAL);
	cr_assert(strstr(err.msg, "direction"), "%s", err.msg);
	vcpustat_sync_free(s);
}
