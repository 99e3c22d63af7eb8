// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sample.c - the exporters' counters over the live maps: each sample reads the
 * maps, adds the window since the previous sample to the metrics model
 * (metrics.h), and keeps the kernel's tables bounded (reaping, pruning).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "live/live.h"

int metrics_live_init(struct metrics_live *l, struct vcpustat *vs, const struct metrics_opts *o,
		      const struct summary_filter *filter)
{
	const struct vcpustat_prog *progs;
	struct timespec rt;
	size_t n;

	memset(l, 0, sizeof(*l));
	l->vs = vs;
	l->filter = filter;
	if (names_init(&l->names, NULL, NULL))
		return -ENOMEM;
	l->m = metrics_new(o);
	if (!l->m) {
		names_free(&l->names);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	metrics_set_clock(l->m, (long long)((__u64)rt.tv_sec * 1000000000ull + (__u64)rt.tv_nsec) -
				    (long long)vcpustat_now_ns());
	n = vcpustat_progs(vs, &progs);
	metrics_set_programs(l->m, progs, n);
	/* vCPUs of running VMs were seeded at the attach, just before: the counters start now */
	metrics_start(l->m, vcpustat_now_ns());
	return 0;
}

int metrics_live_sample(struct metrics_live *l)
{
	struct vcpustat_snapshot cur;
	struct summary s;
	int err;

	err = vcpustat_snapshot(l->vs, &cur);
	if (err)
		return err;
	names_refresh(&l->names);
	err = summary_build(&s, l->have_prev ? &l->prev : NULL, &cur, &l->names, l->filter);
	if (err) {
		vcpustat_snapshot_free(&cur);
		return err;
	}
	err = metrics_add(l->m, &s);
	summary_free(&s);
	/* VMs that exited: their last window is counted, the kernel may forget them */
	for (size_t i = 0; i < cur.nr_vms; i++)
		if (cur.vms[i].exited_ns)
			vcpustat_reap_vm(l->vs, cur.vms[i].tgid);
	/* culprits that exited: folded into one entry per VM, the table stays bounded */
	vcpustat_prune(l->vs, NULL);
	metrics_forget(l->m, cur.ts, METRICS_FORGET_NS);
	if (l->have_prev)
		vcpustat_snapshot_free(&l->prev);
	l->prev = cur;
	l->have_prev = true;
	l->last_sample = cur.ts;
	return err;
}

void metrics_live_free(struct metrics_live *l)
{
	if (l->have_prev)
		vcpustat_snapshot_free(&l->prev);
	metrics_free(l->m);
	names_free(&l->names);
	memset(l, 0, sizeof(*l));
}
