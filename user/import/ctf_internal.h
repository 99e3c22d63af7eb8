/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ctf_internal.h - LTTng kernel traces (CTF 1.8) through libbabeltrace2's
 * source.ctf.fs and utils.muxer: the events of trace.c, in time order.
 * Internal to user/import/ (trace.c); docs/import.md lists the LTTng event and field names.
 */
#ifndef VCPUSTAT_CTF_INTERNAL_H
#define VCPUSTAT_CTF_INTERNAL_H

#include "import/import.h"

struct ctf_reader;

/* Open the CTF trace at path (its directory, or its metadata file). Events are counted in *st. */
int ctf_open(struct ctf_reader **r, const char *path, const struct trace_opts *opts, struct trace_stats *st,
	     struct vcpustat_error *err);
/* 1 and *ev, 0 at the end, or a negative errno. */
int ctf_next(struct ctf_reader *r, struct trace_event *ev, struct vcpustat_error *err);
int ctf_rewind(struct ctf_reader *r, struct vcpustat_error *err);
void ctf_close(struct ctf_reader *r);

#endif
