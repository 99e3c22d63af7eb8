/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * export.h - the window model (model/model.h) for other programs: counters
 * for capacity planning, accumulated over successive windows and rendered as
 * Prometheus text, OpenMetrics, JSON or CSV (metrics.c, docs/metrics.md), and
 * SVG charts (plot.c). Over the live maps they are sampled by live/sample.c.
 */
#ifndef VCPUSTAT_EXPORT_H
#define VCPUSTAT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <jansson.h>
#include "util/util.h"
#include "sht/sht.h"
#include "model/summary.h"

/*
 * ---- metrics.c: the exporters' model ----
 * The exporters' model (docs/metrics.md): counters accumulated
 * over successive windows of the window model (model/model.h), so they stay
 * monotonic for as long as the process runs whatever the kernel maps forget,
 * rendered as Prometheus text 0.0.4, OpenMetrics 1.0, JSON or CSV. The four
 * renderings of one state carry the same numbers.
 */

enum metrics_format {
	METRICS_PROMETHEUS = 0, /* text exposition format 0.0.4 */
	METRICS_OPENMETRICS,	/* OpenMetrics 1.0 text */
	METRICS_JSON,
	METRICS_CSV,
};

#define METRICS_TOP_CULPRITS 5			   /* named culprits per VM by default */
#define METRICS_TOP_DETAILS 10			   /* named exit-detail rows per VM and kind by default */
#define METRICS_FORGET_NS (300ull * 1000000000ull) /* a VM's series outlive it by 5 min */
#define METRICS_NR_LE 23			   /* finite histogram buckets published */

/* The finite bucket edges published (ns, ascending): edges of the kernel's buckets. */
extern const unsigned long long metrics_le_ns[METRICS_NR_LE];

struct metrics_opts {
	bool no_vcpu_labels;	   /* per-VM series only (no vcpu label) */
	unsigned int top_culprits; /* named culprits per VM; the rest is "other" */
	unsigned int top_details;  /* named exit-detail rows per VM and kind (0: METRICS_TOP_DETAILS) */
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

/* Render into a malloc'ed buffer (*buf, *len; NUL-terminated). 0 or -ENOMEM. */
int metrics_render(const struct metrics *m, enum metrics_format f, char **buf, size_t *len);
/*
 * The same, the buffer first made room for expect bytes (the size of the
 * last rendering, say): a 20 MB text is then not copied at every doubling.
 */
int metrics_render_sized(const struct metrics *m, enum metrics_format f, size_t expect, char **buf, size_t *len);
/*
 * Rendered into path (util's outfile_write: a file replaced whole, a device
 * or a FIFO written in place) or, path NULL, to stdout.
 */
int metrics_write(const struct metrics *m, enum metrics_format fmt, const char *path, struct vcpustat_error *err);
/*
 * The metrics of the window [t1, t2] of recording r (named file in them);
 * *nr_vms: how many VMs the filter kept. 0 with *m (metrics_free it), or a
 * negative errno with err.
 */
struct sht_reader;
int metrics_of_recording(struct metrics **m, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			 const struct metrics_opts *mo, const struct summary_filter *filter, size_t *nr_vms,
			 struct vcpustat_error *err);
/* The JSON document (docs/metrics.md): written into w (util/jsonw.h), or as a jansson tree. */
struct jw;
void metrics_json_write(struct jw *w, const struct metrics *m);
json_t *metrics_json(const struct metrics *m);

/* "prometheus", "openmetrics", "json", "csv" -> format; -EINVAL if unknown. */
int metrics_format_parse(const char *name, enum metrics_format *f);
/* The HTTP Content-Type of a format. */
const char *metrics_content_type(enum metrics_format f);

/*
 * ---- plot.c: SVG charts ----
 * SVG charts of the window model: per VM, the share of its vCPU
 * time in each state over time (stacked bars per time bucket, from a
 * recording), each vCPU's shares over the window, and the histograms of
 * exit-handling latency, userspace-exit latency and run-queue wait. Plain
 * standalone SVG 1.1 (inline styles, no script, no external resource).
 */

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
/* The SVG into path ("-": stdout), by util's outfile_write (a file replaced whole, a device or FIFO in place). */
int plot_write(const struct plot_doc *d, const char *path, struct vcpustat_error *err);
/* `vcpustat plot FILE`: the charts of the window [t1, t2] of recording r (named file), into path. */
int plot_recording(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2, size_t buckets,
		   const struct summary_filter *filter, const char *path, struct vcpustat_error *err);
/*
 * `vcpustat plot FILE --timeline` (plot_gantt.c): a Gantt chart of [t1, t2) of
 * recording r (named file) into path: a row per physical CPU (what ran: a
 * VM's vCPU in guest code or the hypervisor, a host thread, idle) and per vCPU
 * of the VMs filter keeps (its state); each pixel column shows what took
 * most of its time.
 */
int plot_gantt(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2, const struct summary_filter *filter,
	       const char *path, struct vcpustat_error *err);
/* `vcpustat plot --live`: the charts of a live window s, sampled from start to end (wall clock), into path. */
int plot_live_window(const struct summary *s, time_t start, time_t end, const char *path, struct vcpustat_error *err);

/*
 * ---- timeline.c: a recording's timeline for other viewers ----
 * The intervals of a recording as tracks (docs/export.md): a process per VM
 * with a track per vCPU (its states; its exits and userspace exits on tracks
 * of their own), and a track per host CPU (the thread on it, level full;
 * the vCPUs on it from their state and pcpu, level vcpu). chrome-json: Chrome's trace-event JSON (Perfetto,
 * chrome://tracing), complete ("X") slices, ts/dur in µs with ns precision.
 * ctf: a CTF trace directory written by libbabeltrace2's sink.ctf.fs
 * (timeline_ctf.c; babeltrace2, Trace Compass), an event per interval.
 */

enum timeline_format {
	TIMELINE_CHROME_JSON = 0,
	TIMELINE_CTF,
};

/* "chrome-json", "ctf" -> format; -EINVAL if unknown. */
int timeline_format_parse(const char *name, enum timeline_format *f);
/*
 * Can the timeline be written to out? chrome-json: outfile_check(); ctf: out
 * (its symlinks followed) is a new or empty directory in a directory where
 * one can be made, not a file, a device or a FIFO (outfile_dir_target()). 0
 * or a negative errno with err.
 */
int timeline_check_output(enum timeline_format fmt, const char *out, struct vcpustat_error *err);
int timeline_ctf_check(const char *dir, struct vcpustat_error *err);
/*
 * The timeline of the window [t1, t2] of recording r (named file), the VMs
 * filter keeps (*nr_vms: how many; with --vcpu, --tid, --pcpu: those with a
 * vCPU track left; none kept: nothing is written) and every host CPU (those
 * of --pcpu, with only the threads of --tid), written to out atomically (a
 * temporary file renamed; nothing is left on an error). 0 or a negative
 * errno with err.
 */
int timeline_export(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		    const struct summary_filter *filter, enum timeline_format fmt, const char *out, size_t *nr_vms,
		    struct vcpustat_error *err);

/*
 * ---- window.c: `vcpustat export` of a window of a recording ----
 * What to write: the timeline (timeline: tfmt) or the metrics (fmt, mo);
 * out: the file (NULL: stdout; a timeline needs one).
 */
struct export_window {
	bool timeline;
	enum timeline_format tfmt;
	enum metrics_format fmt;
	struct metrics_opts mo;
	const char *out;
};
/* -f NAME: a timeline format (w->timeline set) or a metrics one (cleared); -EINVAL if neither. */
int export_format_parse(const char *name, struct export_window *w);
/*
 * The window [t1, t2] of recording r (named file) as w says, of what f
 * keeps; *nr_vms: how many VMs it kept. When f has a filter (--vm, --vcpu,
 * --tid, --pcpu) and kept no VM, nothing is written (the caller's error says
 * why). 0 or a negative errno with err.
 */
int export_window(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2, const struct summary_filter *f,
		  const struct export_window *w, size_t *nr_vms, struct vcpustat_error *err);

#endif /* VCPUSTAT_EXPORT_H */
