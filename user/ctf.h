/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ctf.h - LTTng kernel traces (CTF 1.8) through libbabeltrace2's
 * source.ctf.fs and utils.muxer: the events of trace.h, in time order.
 * Used by trace.c; docs/import.md lists the LTTng event and field names.
 */
#ifndef VCPUSTAT_CTF_H
#define VCPUSTAT_CTF_H

#include "trace.h"

struct ctf_reader;

/* Open the CTF trace at path (its directory, or its metadata file). Events are counted in *st. */
int ctf_open(struct ctf_reader **r, const char *path, const struct trace_opts *opts, struct trace_stats *st,
	     struct vcpustat_error *err);
/* 1 and *ev, 0 at the end, or a negative errno. */
int ctf_next(struct ctf_reader *r, struct trace_event *ev, struct vcpustat_error *err);
int ctf_rewind(struct ctf_reader *r, struct vcpustat_error *err);
void ctf_close(struct ctf_reader *r);

#endif
