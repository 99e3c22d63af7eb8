/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.h - the exporters' model (docs/metrics.md): counters accumulated
 * over successive windows of the summary model (summary.h), so they stay
 * monotonic for as long as the process runs whatever the kernel maps forget,
 * rendered as Prometheus text 0.0.4, OpenMetrics 1.0, JSON or CSV. The four
 * renderings of one state carry the same numbers.
 */
#ifndef VCPUSTAT_METRICS_H
#define VCPUSTAT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "loader.h"
#include "summary.h"

enum metrics_format {
	METRICS_PROMETHEUS = 0, /* text exposition format 0.0.4 */
	METRICS_OPENMETRICS,	/* OpenMetrics 1.0 text */
	METRICS_JSON,
	METRICS_CSV,
};

#define METRICS_TOP_CULPRITS 5			   /* named culprits per VM by default */
#define METRICS_FORGET_NS (300ull * 1000000000ull) /* a VM's series outlive it by 5 min */
#define METRICS_NR_LE 23			   /* finite histogram buckets published */

/* The finite bucket edges published (ns, ascending): edges of the kernel's buckets. */
extern const unsigned long long metrics_le_ns[METRICS_NR_LE];

struct metrics_opts {
	bool no_vcpu_labels;	   /* per-VM series only (no vcpu label) */
	unsigned int top_culprits; /* named culprits per VM; the rest is "other" */
};

struct metrics;

struct metrics *metrics_new(const struct metrics_opts *opts);
void metrics_free(struct metrics *m);

/*
 * Add the window s (what happened between its two snapshots, or in a file
 * window) to the counters. Windows must follow each other. Returns 0 or
 * -ENOMEM.
 */
int metrics_add(struct metrics *m, const struct summary *s);

/* Drop the series of VMs that have not been alive for forget_ns before now (the clock of the windows). */
void metrics_forget(struct metrics *m, unsigned long long now, unsigned long long forget_ns);

/* The counters start at t (the clock of the windows), not at the first window's start. */
void metrics_start(struct metrics *m, unsigned long long t);
/* Wall clock: CLOCK_REALTIME ns = window time + offset (live: realtime - monotonic; file: its real start). */
void metrics_set_clock(struct metrics *m, long long real_offset_ns);
/* No wall clock (a file of an imported trace): no start time is given (no Unix time to give). */
void metrics_set_no_clock(struct metrics *m);
/* The tracepoint programs (live): vcpustat_tracepoint_attached. */
void metrics_set_programs(struct metrics *m, const struct vcpustat_prog *progs, size_t n);
/* The counters describe a window of a recording (JSON: source "file"). */
void metrics_set_file(struct metrics *m, const char *file, unsigned long long from_ns, unsigned long long to_ns,
		      const char *from, const char *to);

/* How many VMs and vCPUs (now) the model holds. */
size_t metrics_nr_vms(const struct metrics *m);
size_t metrics_nr_vcpus(const struct metrics *m);

/* Render into a malloc'ed buffer (*buf, *len; NUL-terminated). 0 or -ENOMEM. */
int metrics_render(const struct metrics *m, enum metrics_format f, char **buf, size_t *len);
/* The JSON document (docs/metrics.md). */
json_t *metrics_json(const struct metrics *m);

/* "prometheus", "openmetrics", "json", "csv" -> format; -EINVAL if unknown. */
int metrics_format_parse(const char *name, enum metrics_format *f);
/* The HTTP Content-Type of a format. */
const char *metrics_content_type(enum metrics_format f);

/* ---- live: successive windows of the maps ---- */

struct metrics_live {
	struct vcpustat *vs;
	struct names names;
	struct vcpustat_snapshot prev;
	bool have_prev;
	struct metrics *m;
	const struct summary_filter *filter;
	unsigned long long last_sample; /* CLOCK_MONOTONIC ns of the last snapshot (0: none) */
};

/* Counters over the maps of vs (attached), from its next sample on. filter may be NULL. */
int metrics_live_init(struct metrics_live *l, struct vcpustat *vs, const struct metrics_opts *o,
		      const struct summary_filter *filter);
/*
 * Read the maps and add the window since the previous sample (the first one:
 * since each vCPU was first seen); reap the VMs that exited (their final
 * counts are in), fold the culprits that exited (vcpustat_prune) and forget
 * the series of VMs gone for METRICS_FORGET_NS.
 */
int metrics_live_sample(struct metrics_live *l);
void metrics_live_free(struct metrics_live *l);
#endif
