/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * top.h - what `vcpustat top` (user/cmd_top.c) hands to its time-travel mode
 * (user/cmd_top_file.c): the live view's options, and the recording to play.
 */
#ifndef VCPUSTAT_TOP_H
#define VCPUSTAT_TOP_H

#include <stdbool.h>
#include "summary.h"

struct top_args {
	double delay;	 /* -d: the window, seconds */
	long iterations; /* -n: windows to show in -b/-j (-1: all) */
	long top;	 /* --top: rows per table in -b */
	bool batch, json;
	const struct summary_filter *filter;
	const char *file;	 /* the recording */
	const char *from;	 /* --from T (NULL: its start) */
	double speed;		 /* --speed X: play at X times the recorded pace (0: -b/-j as fast as they print, UI 1x) */
	const char *demo_reason; /* the demo plays its bundled recording because of this (NULL: not the demo) */
};

/* `vcpustat top --file`: the live view over a recording. Returns the exit code. */
int top_file(const struct top_args *a);

#endif
