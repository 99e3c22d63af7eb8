/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report.h - a window of a recording as the window model (report.c) and
 * what `vcpustat report` shows of it (report_show.c).
 */
#ifndef VCPUSTAT_MODEL_REPORT_H
#define VCPUSTAT_MODEL_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "sht/sht.h"
#include "model/summary.h"
#include "model/recording.h"

/*
 * ---- report.c: a window of a recording ----
 * The live view's tables for any window of a recording: builds the
 * window model (summary.h) from the intervals of an SHT file written by
 * `vcpustat record`, `replay` or `import` (docs/sht-attributes.md).
 */

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
 * ---- report_show.c: what `vcpustat report` shows of a window [t1, t2] ----
 * With doc NULL, text to f (a line naming file and window, then the view);
 * else the JSON document in *doc (the caller prints and frees it). 0, or a
 * negative errno with err filled.
 *
 * report_show_window: the live view's tables (report_build; top rows per
 * table, 0: all); *nr_vms the VMs the filters kept. When filter has --vm or
 * --vcpu/--tid/--pcpu and kept no VM, nothing is shown (the caller's error
 * says why: cli_filter_none_kept, cli_vm_none_matched).
 * report_show_placement: --placement (host_topology: this machine's, from
 * sysfs); nothing shown when --vm kept no VM (*nr_vms 0).
 * report_show_pcpu: --pcpu, top occupants per CPU.
 * report_show_flow: --flow THREAD (target: flow_parse_target()'s), culprits
 * below min_impact left out; -ENOENT when the file has no such thread.
 */
int report_show_window(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		       const struct summary_filter *filter, unsigned int top, size_t *nr_vms, struct vcpustat_error *err);
int report_show_placement(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			  const struct summary_filter *filter, bool host_topology, size_t *nr_vms,
			  struct vcpustat_error *err);
int report_show_pcpu(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		     const struct summary_filter *filter, unsigned int top, struct vcpustat_error *err);
struct flow_target;
int report_show_flow(FILE *f, json_t **doc, struct sht_reader *r, const char *file, const struct flow_target *target,
		     const char *thread, uint64_t t1, uint64_t t2, double min_impact, struct vcpustat_error *err);

/*
 * The window's fields of `vcpustat report -j` (docs/json.md), added to doc (a
 * summary_json() document of that window): file, from_ns, to_ns, wall_clock,
 * from, to (null without a wall clock), culprits_recorded, and recovered for
 * an unfinished file.
 */
void report_json_window(json_t *doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			bool has_culprits);

#endif /* VCPUSTAT_MODEL_REPORT_H */
