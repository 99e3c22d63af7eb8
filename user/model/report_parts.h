/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_parts.h - what report.c shares with the parts of report_build() in
 * files of their own (report_guest.c). Not an API: only report*.c include it.
 */
#ifndef VCPUSTAT_MODEL_REPORT_PARTS_H
#define VCPUSTAT_MODEL_REPORT_PARTS_H

#include <stdint.h>
#include "util/util.h"
#include "model/report.h"

/* Who ran on each CPU in the window: its runs, read once per CPU when first asked (report.c). */
struct cpu_runs;

/* Intervals of attr meeting [t1, t2] (none if attr is SHT_NO_ATTR): 0 or -errno with err. */
int report_range(struct sht_reader *r, uint32_t attr, uint64_t t1, uint64_t t2, struct sht_interval **out, size_t *n,
		 struct vcpustat_error *err);
/* Charge the threads that ran on cpu during [a, b) into acc (tid -> ns). */
int report_charge(struct sht_reader *r, struct cpu_runs *cr, struct hashmap *acc, uint32_t cpu, uint64_t a, uint64_t b,
		  struct vcpustat_error *err);
/* The culprits of acc (tid -> ns) as summaries, named from /host/threads; a vCPU's as VM and vCPU. */
int report_culprits_fill(struct sht_reader *r, struct culprit_summary **out, size_t *nout, struct hashmap *acc,
			 struct hashmap *vcpu_of_tid, __u64 waited);
/* qsort: culprits by ns, the largest first, then by tid. */
int report_by_ns_desc(const void *a, const void *b);

/*
 * report_guest.c: the guest threads of VM attribute vm in [t1, t2] into vs
 * (cr NULL: no culprits recorded), and, with --vcpu, only those that ran on
 * the vCPUs the filter keeps.
 */
int report_guest_threads(struct sht_reader *r, uint32_t vm, struct vm_summary *vs, uint64_t t1, uint64_t t2,
			 struct cpu_runs *cr, struct hashmap *vcpu_of_tid, struct vcpustat_error *err);
void report_guest_threads_keep(struct vm_summary *vs);

#endif /* VCPUSTAT_MODEL_REPORT_PARTS_H */
