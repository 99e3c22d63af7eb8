// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ctf.c - LTTng CTF traces (placeholder until the libbabeltrace2 reader lands). */
#include <errno.h>
#include "ctf.h"

int ctf_open(struct ctf_reader **r, const char *path, const struct trace_opts *opts, struct trace_stats *st,
	     struct vcpustat_error *err)
{
	*r = NULL;
	return verror(err, -ENOTSUP, "%s: CTF traces are not supported yet", path);
}

int ctf_next(struct ctf_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	return 0;
}

int ctf_rewind(struct ctf_reader *r, struct vcpustat_error *err)
{
	return 0;
}

void ctf_close(struct ctf_reader *r)
{
}
