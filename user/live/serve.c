// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * serve.c - the exporter's session over the live maps: serve/session.c's
 * session with metrics_live (sample.c) as the HTTP server's source.
 */
#include <errno.h>
#include "live/live.h"

int serve_live_start(struct serve_live *sl, struct vcpustat *vs, const struct metrics_opts *mo,
		     const struct summary_filter *filter, struct vcpustat_error *err)
{
	struct httpd_source src;

	if (metrics_live_init(&sl->live, vs, mo, filter))
		return verror(err, -ENOMEM, "out of memory");
	src = metrics_live_source(&sl->live);
	return serve_start(&sl->s, &src, err);
}

void serve_live_stop(struct serve_live *sl)
{
	serve_stop(&sl->s); /* the server first: it samples the live maps */
	metrics_live_free(&sl->live);
}
