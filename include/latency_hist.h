/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Log-linear latency histogram buckets, shared by the BPF programs (which
 * fill them) and user space (which turns them into p50/p99 and Prometheus
 * buckets). Pure C: no libc, libbpf or kernel includes.
 *
 * Values are nanoseconds. Buckets 0..7 hold the values 0..7 exactly. Above
 * that, every power of two [2^p, 2^(p+1)) (p = 3..33) is split into 8 equal
 * sub-buckets of width 2^(p-3), so a bucket is at most 1/8 = 12.5 % wide
 * relative to its lower bound. Index = (p - 2) * 8 + sub-bucket, which
 * reaches 255 at the top of [2^33, 2^34) (~17.2 s). Bucket 255 is open-ended:
 * everything >= 15 * 2^30 ns (~16.1 s) lands there.
 */
#ifndef VCPUSTAT_LATENCY_HIST_H
#define VCPUSTAT_LATENCY_HIST_H

#define LAT_HIST_BUCKETS 256
#define LAT_HIST_SUB_BITS 3 /* 2^3 = 8 sub-buckets per power of two */

#ifndef LAT_HIST_INLINE
#define LAT_HIST_INLINE static inline __attribute__((always_inline))
#endif

/* floor(log2(v)) for v > 0, branchy but loop-free (BPF has no clz). */
LAT_HIST_INLINE unsigned int lat_hist_log2(unsigned long long v)
{
	unsigned int r = 0, shift;

	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffffULL) << 4;     v >>= shift; r |= shift;
	shift = (v > 0xffULL) << 3;       v >>= shift; r |= shift;
	shift = (v > 0xfULL) << 2;        v >>= shift; r |= shift;
	shift = (v > 0x3ULL) << 1;        v >>= shift; r |= shift;
	r |= (unsigned int)(v >> 1);
	return r;
}

LAT_HIST_INLINE unsigned int lat_hist_bucket(unsigned long long ns)
{
	unsigned int p, idx;

	if (ns < 8)
		return (unsigned int)ns;
	p = lat_hist_log2(ns);
	idx = (p - 2) * 8 + (unsigned int)((ns >> (p - LAT_HIST_SUB_BITS)) & 7);
	return idx < LAT_HIST_BUCKETS ? idx : LAT_HIST_BUCKETS - 1;
}

/* Smallest value that falls in bucket idx. */
LAT_HIST_INLINE unsigned long long lat_hist_lower(unsigned int idx)
{
	unsigned int p;

	if (idx < 8)
		return idx;
	p = idx / 8 + 2;
	return (1ULL << p) + (unsigned long long)(idx % 8) * (1ULL << (p - LAT_HIST_SUB_BITS));
}

/*
 * One past the largest value that falls in bucket idx (exclusive upper
 * bound); ~0ULL for the open-ended last bucket.
 */
LAT_HIST_INLINE unsigned long long lat_hist_upper(unsigned int idx)
{
	if (idx >= LAT_HIST_BUCKETS - 1)
		return ~0ULL;
	return lat_hist_lower(idx + 1);
}

#endif /* VCPUSTAT_LATENCY_HIST_H */
