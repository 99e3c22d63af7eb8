/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * filter.h - what the offline commands' filters keep of a recording
 * (--vm, --vcpu, --tid, --pcpu, --cgroup; model.h has the whole model).
 */
#ifndef VCPUSTAT_MODEL_FILTER_H
#define VCPUSTAT_MODEL_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"
#include "sht/sht.h"

/*
 * ---- filter.c: what the offline commands' filters keep (docs/vcpustat.md, "Filters") ----
 * A set of numbers as the options give them ("0,2-3", repeatable): vCPU
 * indexes, thread ids, CPUs. Empty (n == 0): no filter, every number.
 */
#define ID_SET_MAX 64

struct id_set {
	uint32_t lo[ID_SET_MAX], hi[ID_SET_MAX]; /* the items given: [lo, hi] */
	size_t n;
	char text[160]; /* as given, items joined with ',' (for messages and headers) */
};

/*
 * Add a list ("3", "0,2-3") to s: 0, or -EINVAL (not numbers, a range that
 * goes down, too many items; err says why, without naming the option).
 */
int id_set_add(struct id_set *s, const char *list, struct vcpustat_error *err);
/* Is id in s (true for an empty s)? */
bool id_set_has(const struct id_set *s, uint32_t id);

/*
 * What a command keeps of a recording; filters combine with AND, and an
 * empty one keeps everything. vcpus and tids select vCPUs (a vCPU is kept
 * if its index is in vcpus and its thread id in tids); tids also selects
 * host threads in the host-thread views; pcpus keeps the time spent on those
 * CPUs: a vCPU's state time counts while its pcpu attribute is in the set
 * (off CPU, that is the CPU it last ran on or waits on), and an event
 * (transition, exit, wait, poll, migration) counts if its pcpu is in the set
 * when it happens (a migration: the CPU it goes to).
 */
#define FILTER_MAX_CGROUPS 16

struct summary_filter {
	const char *const *vms; /* VM names or pids to keep; NULL/0: all */
	size_t nr_vms;
	struct id_set vcpus, tids, pcpus;
	/*
	 * --cgroup: VMs whose VMM process's cgroup matches one of these
	 * (cgroup_matches()). Live, summary_build() asks /proc; offline,
	 * summary_filter_cgroups_to_vms() turns them into the VM names of the
	 * file (vms).
	 */
	const char *cgroups[FILTER_MAX_CGROUPS];
	size_t nr_cgroups;
};

/* Does f keep the VM of this name and pid (no --vm: every VM)? */
bool summary_filter_wants(const struct summary_filter *f, const char *name, uint32_t pid);
/* Does f keep a VM whose VMM is in cgroup (the path, "" if unknown)? true without --cgroup. */
bool summary_filter_wants_cgroup(const struct summary_filter *f, const char *cgroup);
/* ... in cgroup, its container named (where this host's runtime does not) as a recording kept it. */
bool summary_filter_wants_recorded_cgroup(const struct summary_filter *f, const char *cgroup, const char *pod_name,
					  const char *pod_namespace, const char *name);

/* Does f keep the vCPU of this index and thread id (its VM aside)? */
bool summary_filter_wants_vcpu(const struct summary_filter *f, uint32_t index, uint32_t tid);
/* Does f narrow the vCPUs (--vcpu, --tid)? */
bool summary_filter_vcpus(const struct summary_filter *f);
/* Does f set any of --vcpu, --tid, --pcpu? */
bool summary_filter_narrows(const struct summary_filter *f);
/* The filters of f as options, for messages: "--vcpu 1 --pcpu 0-3" ("" if none). */
const char *summary_filter_text(const struct summary_filter *f, char *buf, size_t len);

/*
 * --cgroup on a recording: the VMs of r that --vm keeps and whose recorded
 * cgroup (/vms/<vm>/cgroup, its container named by this host's runtime or
 * as the recording kept it) matches become f's --vm list, by name: copies in
 * keep (the caller's, alive as long as f; the first FILTER_MAX_VMS VMs),
 * since commands may open the file again. 0 (f without --cgroup: nothing to
 * do); -ENOENT if no VM matches, with err naming the patterns and the VMs'
 * cgroups ("--cgroup web-*: no VM of FILE runs in such a cgroup (their
 * cgroups: a: /a.scope)"); -ENOMEM.
 */
#define FILTER_MAX_VMS 1024

struct filter_vms {
	char names[FILTER_MAX_VMS][128];
	const char *vms[FILTER_MAX_VMS];
};
int summary_filter_cgroups_to_vms(struct summary_filter *f, struct sht_reader *r, const char *file,
				  struct filter_vms *keep, struct vcpustat_error *err);

/*
 * Does each filter of f select something in the file r (whatever the
 * window)? Every item of --vcpu must be the index of a vCPU of a VM that
 * --vm keeps, every item of --tid the thread id of a vCPU or a host thread,
 * and some CPU of --pcpu must be in the file (a vCPU's pcpu or
 * /host/cpus/<n>). 0, or -ENOENT with err naming the filter and file
 * ("--vcpu 7: no such vCPU in FILE (its vCPUs: 0-1)"); -ENOMEM.
 */
int summary_filter_check(struct sht_reader *r, const char *file, const struct summary_filter *f,
			 struct vcpustat_error *err);

/*
 * The stretches of pc[0..n) (a vCPU's pcpu intervals, by start) whose CPU
 * is in cpus, adjacent ones merged, into out (room for n; may be pc).
 * Returns how many.
 */
size_t pcpu_on_set(const struct sht_interval *pc, size_t n, const struct id_set *cpus, struct sht_interval *out);
/* The time of [a, b) within the stretches on[0..n) (pcpu_on_set()'s). */
uint64_t on_set_ns(const struct sht_interval *on, size_t n, uint64_t a, uint64_t b);
/* Is t within one of the stretches on[0..n)? */
bool on_set_at(const struct sht_interval *on, size_t n, uint64_t t);
/*
 * The stretches of [t1, t2) the vCPU vc (/vms/<vm>/vcpus/<n>) spent with its
 * pcpu in cpus: *out (free it), *n of them. 0 or the reader's error.
 */
int vcpu_on_set(struct sht_reader *r, uint32_t vc, const struct id_set *cpus, uint64_t t1, uint64_t t2,
		struct sht_interval **out, size_t *n, struct vcpustat_error *err);
/*
 * Cut the intervals iv[0..*n) (by start, not overlapping) to the stretches
 * on[0..non): an interval partly on them becomes its pieces there, one off
 * them goes. *iv is reallocated. 0 or -ENOMEM.
 */
int intervals_clip(struct sht_interval **iv, size_t *n, const struct sht_interval *on, size_t non);

#endif /* VCPUSTAT_MODEL_FILTER_H */
