/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * recording.h - reading a recording as every offline analysis does (report,
 * placement, pcpu, flow, query, the filters): its attributes' first values,
 * the intervals that cover a time, its threads' names, a vCPU on its CPUs.
 * Defined in report.c; nothing here builds a window.
 */
#ifndef VCPUSTAT_MODEL_RECORDING_H
#define VCPUSTAT_MODEL_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"
#include "sht/sht.h"
#include "model/filter.h"

/*
 * The first child of parent, SHT_NO_ATTR if parent is SHT_NO_ATTR (an
 * attribute the file does not have: no /vms, a VM without vcpus), where
 * sht_attr_first_child() would give the first top-level attribute.
 */
uint32_t report_first_child(struct sht_reader *r, uint32_t parent);
/* A level-full file: a CPU has current_tid (level vcpu has runner_tid only, where tracked threads waited). */
bool report_host_recorded(struct sht_reader *r);

/* The first of iv[0..n) (one attribute's intervals: sorted, not overlapping) that ends after t; n if none. */
size_t report_first_after(const struct sht_interval *iv, size_t n, uint64_t t);
/* The interval of iv[0..n) (sorted, not overlapping) that covers t and has a value; NULL if none. */
const struct sht_interval *report_covering(const struct sht_interval *iv, size_t n, uint64_t t);

/* The first non-null integer of attr (a VM's pid, a vCPU's tid), def if none. */
int64_t report_first_int(struct sht_reader *r, uint32_t attr, int64_t def);

/* A thread of a recording and the first value of its name and pid attributes. */
struct report_thread {
	uint32_t th;	  /* /host/threads/<tid> or /vms/<vm>/threads/<guest tid>; SHT_NO_ATTR: none */
	uint32_t tid;	  /* the caller's (report_thread_names() leaves it) */
	uint32_t pid;	  /* the first integer of th's pid, 0 if none */
	const char *name; /* the first string of th's name (the reader's), "" if none */
	const char *cgroup; /* the first string of th's cgroup, "" if none */
	uint64_t pidns;	    /* the first integer of th's pidns, 0 if none */
	/* the first strings of th's pod_name, pod_namespace, container_name, "" if none */
	const char *pod_name, *pod_namespace, *container_name;
};

/*
 * The name and pid of the n threads t[i].th (each at most once) from one
 * range query over those attributes of them all: a query per thread would
 * read every leaf of the file again for each. 0, -ENOMEM or the query's
 * error (with err); t[i].name and pid are set ("", 0) whatever it returns.
 */
int report_thread_names(struct sht_reader *r, struct report_thread *t, size_t n, struct vcpustat_error *err);

/*
 * A vCPU of a recording (vc: its attribute /vms/<vm>/vcpus/<n>) on CPUs over
 * [t1, t2): visit() for each stretch in state guest or host, with its CPU (the
 * pcpu attribute), in time order; a non-zero return stops and is returned.
 */
int vcpu_on_cpu(struct sht_reader *r, uint32_t vc, uint64_t t1, uint64_t t2,
		int (*visit)(void *ctx, uint64_t a, uint64_t b, uint32_t cpu, int state), void *ctx,
		struct vcpustat_error *err);

#endif /* VCPUSTAT_MODEL_RECORDING_H */
