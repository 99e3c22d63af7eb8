// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness for the pairs-file parser (vcpustat sync --pairs), and,
 * on what it accepts, the synchronization itself: batch and incremental (in
 * file order, which exercises the out-of-order path), transforms and chains.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sync/sync.h"

#define CHECK(cond)                                                                                                \
	do {                                                                                                       \
		if (!(cond))                                                                                       \
			__builtin_trap();                                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vcpustat_sync_match *m = NULL;
	struct vcpustat_error err = { 0 };
	struct vcpustat_sync_result r, ri;
	struct vcpustat_sync_transform chain;
	struct vcpustat_sync_time t;
	struct vcpustat_sync *s;
	size_t n = 0;
	int ret;

	ret = vcpustat_sync_parse_pairs((const char *)data, size, "fuzz", &m, &n, &err);
	if (ret) {
		CHECK(ret == -EINVAL && !m && !n);
		CHECK(!strncmp(err.msg, "fuzz:", 5));
		return 0;
	}
	CHECK(vcpustat_sync_solve(m, n, &r, &err) == 0);
	CHECK(r.quality <= VCPUSTAT_SYNC_FAIL && r.nr_matches == n);
	CHECK(r.nr_host_to_guest + r.nr_guest_to_host <= n);
	CHECK((r.quality == VCPUSTAT_SYNC_FAIL) == (r.nr_host_to_guest + r.nr_guest_to_host < n));

	CHECK(vcpustat_sync_new(&s) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK(vcpustat_sync_add(s, &m[i], &err) == 0);
	vcpustat_sync_get(s, &ri);
	vcpustat_sync_free(s);
	/* in any order, the same set is feasible or not */
	if (r.quality != VCPUSTAT_SYNC_FAIL)
		CHECK(ri.quality == r.quality);

	if (r.transform_quality == VCPUSTAT_SYNC_ACCURATE) {
		long double h, lo, hi;

		vcpustat_sync_eval(&r.transform, r.transform.guest_first, &h, &lo, &hi);
		CHECK(!(lo > h + 1) && !(h > hi + 1));
		CHECK(r.transform.max_error_ns >= 0);
	}
	for (size_t i = 0; i < n && i < 4; i++)
		(void)vcpustat_sync_apply(&r.transform, m[i].send_ns, &t);
	if (r.transform.mean.slope > 0 && vcpustat_sync_compose(&r.transform, &r.transform, &chain, &err) == 0)
		(void)vcpustat_sync_apply(&chain, n ? m[0].recv_ns : 0, &t);
	free(m);
	return 0;
}
