/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * plot.h - SVG charts of the window model: per VM, the share of its vCPU
 * time in each state over time (stacked bars per time bucket, from a
 * recording), each vCPU's shares over the window, and the histograms of
 * exit-handling latency, userspace-exit latency and run-queue wait. Plain
 * standalone SVG 1.1 (inline styles, no script, no external resource).
 */
#ifndef VCPUSTAT_PLOT_H
#define VCPUSTAT_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include "util/util.h"
#include "sht/sht.h"
#include "model/model.h"

#define PLOT_MAX_BUCKETS 1000

/* One VM's state time per time bucket, summed over its vCPUs. */
struct plot_timeline {
	char vm[64];
	size_t nr_buckets;
	uint64_t (*ns)[VCPU_NR_STATES]; /* [bucket][state] */
};

/*
 * The timelines of the VMs of r (those filter keeps) over [t1, t2) cut into
 * nbuckets equal buckets, from the /vms/<vm>/vcpus/<n>/state intervals.
 */
int plot_timelines(struct sht_reader *r, uint64_t t1, uint64_t t2, size_t nbuckets, const struct summary_filter *filter,
		   struct plot_timeline **out, size_t *n, struct vcpustat_error *err);
void plot_timelines_free(struct plot_timeline *tl, size_t n);

struct plot_doc {
	const struct summary *s;	/* the window: per-vCPU shares and the histograms */
	const struct plot_timeline *tl; /* per VM (by name), or NULL (live: no timeline) */
	size_t nr_tl;
	double seconds;	    /* length of the window */
	const char *window; /* "2026-11-22 14:03:07 .. 14:03:09 (2.0 s)" */
	const char *source; /* "day.sht", "live on host1" */
};

/* The SVG document, malloc'ed into *buf (*len bytes, NUL-terminated). 0 or -ENOMEM. */
int plot_svg(const struct plot_doc *d, char **buf, size_t *len);

#endif
