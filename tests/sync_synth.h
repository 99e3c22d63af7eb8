/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sync_synth.h - synthetic host/guest message exchanges with a known clock
 * relation, for the synchronization tests (and bench/sync_bench.c).
 *
 * Truth: guest = alpha * host + beta. Rounds follow the hypercall protocol:
 * the guest sends at host time t (event a), the host receives after a one-way
 * delay (b), answers a little later (c), the guest receives after another
 * delay (d). Delays are uniform in [delay_min, delay_max] ns, with a fraction
 * `outliers` of them 10 to 100 times longer; rounds are gap_min..gap_max ns apart.
 */
#ifndef VCPUSTAT_TEST_SYNC_SYNTH_H
#define VCPUSTAT_TEST_SYNC_SYNTH_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "sync/sync.h"

struct synth {
	long double alpha, beta; /* guest = alpha * host + beta */
	uint64_t host0;		 /* host time of the first round */
	uint64_t duration_ns;
	uint64_t seed;
	double delay_min, delay_max; /* ns */
	double outliers;	     /* fraction of delays that are long */
	double gap_min, gap_max;     /* ns between rounds */
};

/* The brief's example: guest = 1.0002 x host + 5 s, 60 s, 2-50 us delays,
 * 1 % outliers, a round every 10-100 ms. */
static inline struct synth synth_default(uint64_t seed)
{
	return (struct synth){ .alpha = 1.0002L, .beta = 5e9L, .host0 = 1000000000000ULL,
			       .duration_ns = 60000000000ULL, .seed = seed, .delay_min = 2000, .delay_max = 50000,
			       .outliers = 0.01, .gap_min = 10e6, .gap_max = 100e6 };
}

static inline uint64_t synth_rand(uint64_t *state) /* splitmix64 */
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline double synth_uniform(uint64_t *state, double lo, double hi)
{
	return lo + (hi - lo) * ((double)(synth_rand(state) >> 11) / 9007199254740992.0);
}

static inline double synth_delay(const struct synth *p, uint64_t *st)
{
	double d = synth_uniform(st, p->delay_min, p->delay_max);

	if (synth_uniform(st, 0, 1) < p->outliers)
		d *= synth_uniform(st, 10, 100);
	return d;
}

static inline long double synth_guest(const struct synth *p, long double host)
{
	return p->alpha * host + p->beta;
}

/* The true host time of a guest time. */
static inline long double synth_host(const struct synth *p, long double guest)
{
	return (guest - p->beta) / p->alpha;
}

/* One a->b and one c->d match per round, in the order a trace would give
 * them. Returns the number of matches (malloc'ed into *out). */
static inline size_t synth_generate(const struct synth *p, struct vcpustat_sync_match **out)
{
	size_t n = 0, cap = 1024;
	struct vcpustat_sync_match *v = malloc(cap * sizeof(*v));
	uint64_t st = p->seed * 0x2545f4914f6cdd1dULL + 1;
	long double t = (long double)p->host0, end = (long double)p->host0 + (long double)p->duration_ns;
	uint64_t key = 1;

	while (v && t <= end) {
		long double b = t + synth_delay(p, &st);
		long double c = b + synth_uniform(&st, 1000, 5000);
		long double d = c + synth_delay(p, &st);

		if (n + 2 > cap) {
			struct vcpustat_sync_match *nv = realloc(v, 2 * cap * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		v[n++] = (struct vcpustat_sync_match){ (uint64_t)llroundl(synth_guest(p, t)), (uint64_t)llroundl(b), key,
						       VCPUSTAT_SYNC_GUEST_TO_HOST };
		v[n++] = (struct vcpustat_sync_match){ (uint64_t)llroundl(c), (uint64_t)llroundl(synth_guest(p, d)), key,
						       VCPUSTAT_SYNC_HOST_TO_GUEST };
		key++;
		t += synth_uniform(&st, p->gap_min, p->gap_max);
	}
	*out = v;
	return v ? n : 0;
}

#endif
