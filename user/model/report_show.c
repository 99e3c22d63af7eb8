// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_show.c - what `vcpustat report` shows of a window of a recording,
 * as text or as a JSON document (query_view.c's convention): the live view's
 * tables (report_build), --placement, --pcpu and --flow, each with the line
 * or the fields that say which file and window it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "model/flow.h"
#include "model/pcpu.h"
#include "model/placement.h"
#include "model/report.h"

/* A view of the window (--placement, --pcpu) as JSON: the window's fields and the view under key. */
static json_t *view_json(const char *file, struct sht_reader *r, uint64_t t1, uint64_t t2, const char *key,
			 json_t *view)
{
	json_t *doc = json_object();

	report_json_window(doc, r, file, t1, t2, false);
	json_object_del(doc, "culprits_recorded");
	json_object_set_new(doc, key, view);
	return doc;
}

/* The line above a view's text: the file, its window and what the view is. */
static void view_header(FILE *f, const char *file, struct sht_reader *r, uint64_t t1, uint64_t t2, const char *what)
{
	char a[64], b[64];

	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	fprintf(f, "%s: %s .. %s (%.3f s): %s\n", file, a, b, (t2 - t1) / 1e9, what);
}

/* The line above the tables: the window on the recording's clock (and the trace's, without a wall clock). */
static void window_header(FILE *f, const char *file, struct sht_reader *r, uint64_t t1, uint64_t t2)
{
	char a[64], b[64], clock[128] = "";

	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	if (!sht_has_wall_clock(r)) {
		char c1[32], c2[32];

		sht_format_trace_clock(r, t1, c1, sizeof(c1));
		sht_format_trace_clock(r, t2, c2, sizeof(c2));
		snprintf(clock, sizeof(clock), "; trace clock %s .. %s s, no wall clock", c1, c2);
	}
	fprintf(f, "%s: %s .. %s (%.3f s%s)%s\n", file, a, b, (t2 - t1) / 1e9, clock,
		sht_get_info(r)->recovered ? "  [unfinished recording: up to its last sealed node]" : "");
}

int report_show_window(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		       const struct summary_filter *filter, unsigned int top, size_t *nr_vms, struct vcpustat_error *err)
{
	struct summary s;
	bool culprits;
	int e = report_build(&s, r, t1, t2, filter, &culprits, err);

	if (e)
		return e;
	*nr_vms = s.nr_vms;
	if (!s.nr_vms && (summary_filter_narrows(filter) || filter->nr_vms)) {
		/* the filters kept nothing: the caller says so */
	} else if (doc) {
		*doc = summary_json(&s, NULL, 0);
		report_json_window(*doc, r, file, t1, t2, culprits);
	} else {
		window_header(f, file, r, t1, t2);
		summary_print(f, &s, NULL, 0, top);
		if (!culprits)
			fprintf(f, "\n(who took the CPU: not in this recording; `vcpustat record` now keeps it at any level)\n");
	}
	summary_free(&s);
	return 0;
}

int report_show_placement(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			  const struct summary_filter *filter, bool host_topology, size_t *nr_vms,
			  struct vcpustat_error *err)
{
	struct vcpustat_error why = { 0 };
	struct cpu_topology host;
	struct placement p;
	int e;

	if (host_topology && (e = topology_read_sysfs(&host, NULL, &why)))
		return verror(err, e, "--host-topology: %s", why.msg);
	e = placement_build(&p, r, t1, t2, filter, host_topology ? &host : NULL, &why);
	if (host_topology)
		topology_free(&host);
	if (e)
		return verror(err, e, "%s: %s", file, why.msg);
	*nr_vms = p.nr_vms;
	if (!p.nr_vms && filter->nr_vms) {
		/* --vm kept nothing: the caller says so */
	} else if (doc) {
		*doc = view_json(file, r, t1, t2, "placement", placement_json(&p));
	} else {
		view_header(f, file, r, t1, t2, "placement");
		placement_print(f, &p);
	}
	placement_free(&p);
	return 0;
}

int report_show_pcpu(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		     const struct summary_filter *filter, unsigned int top, struct vcpustat_error *err)
{
	struct vcpustat_error why = { 0 };
	struct pcpu_view v;
	int e = pcpu_build(&v, r, t1, t2, top, filter, &why);

	if (e)
		return verror(err, e, "%s: %s", file, why.msg);
	if (doc) {
		*doc = view_json(file, r, t1, t2, "pcpu", pcpu_json(&v));
	} else {
		view_header(f, file, r, t1, t2, "per physical CPU");
		pcpu_print(f, &v);
	}
	pcpu_free(&v);
	return 0;
}

int report_show_flow(FILE *f, json_t **doc, struct sht_reader *r, const char *file, const struct flow_target *target,
		     const char *thread, uint64_t t1, uint64_t t2, double min_impact, struct vcpustat_error *err)
{
	struct vcpustat_error why = { 0 };
	struct flow fl;
	int e = 0;

	if (flow_build(&fl, r, target, t1, t2, &why))
		return verror(err, why.code ? why.code : -EINVAL, "%s: --flow %s: %s", file, thread, why.msg);
	if (doc && !(*doc = flow_json(&fl, r, file, min_impact)))
		e = verror(err, -ENOMEM, "out of memory");
	else if (!doc)
		flow_print(f, &fl, r, file, min_impact);
	flow_free(&fl);
	return e;
}
