/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report.h - the live view's tables for any window of a recording: builds the
 * window model (summary.h) from the intervals of an SHT file written by
 * `vcpustat record`, `replay` or `import` (docs/sht-attributes.md).
 */
#ifndef VCPUSTAT_REPORT_H
#define VCPUSTAT_REPORT_H

#include <stdint.h>
#include "error.h"
#include "sht/sht.h"
#include "summary.h"

/*
 * The summary of [t1, t2) (ns since the trace start) of the file r:
 * per-state time, transitions, exits with their latencies from the
 * exit_reason and userspace_exit intervals, run-queue waits, and
 * (for level-full recordings) culprits from /host/cpus/<n>/current_tid.
 * An exit belongs to the window of its kvm_exit (kvm_userspace_exit), in the
 * vCPU's counts and in the reason tables alike, with its whole handling time;
 * one the file ends in the middle of is in neither (docs/record.md).
 * In a report, ns_total counts from the start of the file; wall_t1 (or, for
 * a file without a wall clock, no_wall_clock) is set for the text header.
 * *has_culprits says whether the file could tell who took the CPU.
 */
int report_build(struct summary *s, struct sht_reader *r, uint64_t t1, uint64_t t2, const struct summary_filter *f,
		 bool *has_culprits, struct vcpustat_error *err);

/*
 * The window's fields of `vcpustat report -j` (docs/json.md), added to doc (a
 * summary_json() document of that window): file, from_ns, to_ns, wall_clock,
 * from, to (null without a wall clock), culprits_recorded, and recovered for
 * an unfinished file.
 */
void report_json_window(json_t *doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			bool has_culprits);

#endif
