// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sample.c - the exporters' counters over the live maps: each sample is the
 * next live window (session.c), added to the metrics model (export.h).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "live/live.h"

int metrics_live_init(struct metrics_live *l, struct vcpustat *vs, const struct metrics_opts *o,
		      const struct summary_filter *filter)
{
	const struct vcpustat_prog *progs;
	size_t n;

	memset(l, 0, sizeof(*l));
	if (live_window_init(&l->w, vs, filter))
		return -ENOMEM;
	l->m = metrics_new(o);
	if (!l->m) {
		live_window_free(&l->w);
		return -ENOMEM;
	}
	metrics_set_clock(l->m, (long long)vcpustat_realtime_ns() - (long long)vcpustat_now_ns());
	n = vcpustat_progs(vs, &progs);
	metrics_set_programs(l->m, progs, n);
	/* vCPUs of running VMs were seeded at the attach, just before: the counters start now */
	metrics_start(l->m, vcpustat_now_ns());
	return 0;
}

int metrics_live_sample(struct metrics_live *l)
{
	struct summary s;
	int err;

	err = live_window_next(&l->w, &s);
	if (err)
		return err;
	err = metrics_add(l->m, &s);
	summary_free(&s);
	metrics_forget(l->m, l->w.prev.ts, METRICS_FORGET_NS);
	l->last_sample = l->w.prev.ts;
	return err;
}

static int live_source_sample(void *ctx, unsigned long long *ts)
{
	struct metrics_live *l = ctx;
	int err = metrics_live_sample(l);

	if (!err)
		*ts = l->last_sample;
	return err;
}

struct httpd_source metrics_live_source(struct metrics_live *l)
{
	return (struct httpd_source){
		.m = l->m, .sample = live_source_sample, .ctx = l, .last_sample = l->last_sample, .what = "the BPF maps"
	};
}

void metrics_live_free(struct metrics_live *l)
{
	live_window_free(&l->w);
	metrics_free(l->m);
	memset(l, 0, sizeof(*l));
}

/* Sleep until CLOCK_MONOTONIC deadline (ns) or *stop. */
static void sleep_until(unsigned long long deadline, volatile const sig_atomic_t *stop)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000ull),
			       .tv_nsec = (long)(deadline % 1000000000ull) };

	while (!*stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int metrics_live_export(struct metrics_live *l, double interval, double every, volatile const sig_atomic_t *stop,
			enum metrics_format fmt, const char *path, struct vcpustat_error *err)
{
	unsigned long long next = vcpustat_now_ns() + (unsigned long long)(interval * 1e9);
	int e;

	for (;;) {
		sleep_until(next, stop);
		if (*stop && every > 0)
			return 0; /* stopped between two writes: the file is complete */
		e = metrics_live_sample(l);
		if (e)
			return verror(err, e, "cannot read the BPF maps: %s", strerror(-e));
		e = metrics_write(l->m, fmt, path, err);
		if (e || every <= 0 || *stop)
			return e;
		next += (unsigned long long)(every * 1e9);
		if (next < vcpustat_now_ns()) /* fell behind: no burst of catch-up writes */
			next = vcpustat_now_ns() + (unsigned long long)(every * 1e9);
	}
}
