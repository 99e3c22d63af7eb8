// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * window.c - what `vcpustat export` writes of a window of a recording: the
 * format named by -f (a metrics format or a timeline one), then the metrics
 * (metrics_of_recording + metrics_write) or the timeline (timeline_export),
 * with one rule for a filter that keeps nothing: nothing is written.
 */
#include <errno.h>
#include "export/export.h"

int export_format_parse(const char *name, struct export_window *w)
{
	w->timeline = !timeline_format_parse(name, &w->tfmt);
	if (w->timeline)
		return 0;
	return metrics_format_parse(name, &w->fmt);
}

int export_window(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2, const struct summary_filter *f,
		  const struct export_window *w, size_t *nr_vms, struct vcpustat_error *err)
{
	struct metrics *m;
	int e;

	if (w->timeline) /* writes nothing when it keeps no VM */
		return timeline_export(r, file, t1, t2, f, w->tfmt, w->out, nr_vms, err);
	e = metrics_of_recording(&m, r, file, t1, t2, &w->mo, f, nr_vms, err);
	if (e)
		return e;
	/* a filter that kept nothing is the caller's error: no document of nothing */
	if (*nr_vms || (!f->nr_vms && !summary_filter_narrows(f)))
		e = metrics_write(m, w->fmt, w->out, err);
	metrics_free(m);
	return e;
}
