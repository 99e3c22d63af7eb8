/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tracedat_internal.h - trace-cmd's binary trace.dat through libtracecmd (the
 * file, its per-CPU buffers merged in time order) and libtraceevent (the
 * event formats and fields): the events of trace.c. Internal to user/import/
 * (trace.c); docs/import.md lists the events and fields read.
 */
#ifndef VCPUSTAT_TRACEDAT_INTERNAL_H
#define VCPUSTAT_TRACEDAT_INTERNAL_H

#include <stdbool.h>
#include "import/import.h"

struct tracedat_reader;

/* Does the file at path start with trace-cmd's magic ("\x17\x08\x44tracing")? */
bool tracedat_is(const char *path);
/* Open the trace.dat at path. Events are counted in *st. */
int tracedat_open(struct tracedat_reader **r, const char *path, const struct trace_opts *opts,
		  struct trace_stats *st, struct vcpustat_error *err);
/* 1 and *ev, 0 at the end, or a negative errno. */
int tracedat_next(struct tracedat_reader *r, struct trace_event *ev, struct vcpustat_error *err);
int tracedat_rewind(struct tracedat_reader *r, struct vcpustat_error *err);
void tracedat_close(struct tracedat_reader *r);

#endif
