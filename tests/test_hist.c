// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The log-linear latency buckets shared by BPF and user space. */
#include <criterion/criterion.h>
#include "latency_hist.h"

Test(hist, log2_matches_definition)
{
	for (unsigned int p = 0; p < 64; p++) {
		unsigned long long v = 1ULL << p;

		cr_assert_eq(lat_hist_log2(v), p);
		if (p < 63)
			cr_assert_eq(lat_hist_log2(v | (v - 1)), p, "all bits below 2^%u", p);
		if (p > 1)
			cr_assert_eq(lat_hist_log2(v - 1), p - 1);
	}
}

Test(hist, small_values_are_exact)
{
	for (unsigned long long v = 0; v < 8; v++)
		cr_assert_eq(lat_hist_bucket(v), v);
	cr_assert_eq(lat_hist_bucket(8), 8);
	cr_assert_eq(lat_hist_bucket(15), 15);
	cr_assert_eq(lat_hist_bucket(16), 16);
	cr_assert_eq(lat_hist_bucket(17), 16, "[16,18) is one bucket of width 2");
}

Test(hist, every_bucket_contains_its_bounds_and_is_at_most_12_5_percent_wide)
{
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS - 1; b++) {
		unsigned long long lo = lat_hist_lower(b), hi = lat_hist_upper(b);

		cr_assert_lt(lo, hi, "bucket %u", b);
		cr_assert_eq(lat_hist_bucket(lo), b, "lower bound of %u", b);
		cr_assert_eq(lat_hist_bucket(hi - 1), b, "upper bound of %u", b);
		cr_assert_eq(lat_hist_upper(b), lat_hist_lower(b + 1), "buckets are contiguous");
		if (lo >= 8)
			cr_assert_leq((hi - lo) * 8, lo, "bucket %u [%llu,%llu) wider than 12.5%%", b, lo, hi);
	}
}

Test(hist, last_bucket_is_open_ended)
{
	unsigned int last = LAT_HIST_BUCKETS - 1;

	cr_assert_eq(lat_hist_lower(last), 15ULL << 30);
	cr_assert_eq(lat_hist_upper(last), ~0ULL);
	cr_assert_eq(lat_hist_bucket(15ULL << 30), last);
	cr_assert_eq(lat_hist_bucket(1ULL << 40), last);
	cr_assert_eq(lat_hist_bucket(~0ULL), last);
}

Test(hist, buckets_are_monotonic)
{
	unsigned int prev = 0;

	for (unsigned long long v = 1; v < (1ULL << 36); v = v * 9 / 8 + 1) {
		unsigned int b = lat_hist_bucket(v);

		cr_assert_geq(b, prev, "v=%llu", v);
		prev = b;
	}
}
