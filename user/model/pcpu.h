/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pcpu.h - the fused per-physical-CPU view of a recording.
 */
#ifndef VCPUSTAT_MODEL_PCPU_H
#define VCPUSTAT_MODEL_PCPU_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "model/summary.h"

/*
 * ---- pcpu.c: the fused per-physical-CPU view (`vcpustat report --pcpu`) ----
 * Per CPU over [t1, t2): time in guest code and in the hypervisor per VM and
 * vCPU (from the vCPUs' state and pcpu), host threads and idle (from
 * /host/cpus/<n>/current_tid: --level full only, host_recorded), the rest
 * unknown; the top occupants (top, 0: all; the rest summed in others).
 */
enum pcpu_kind { PCPU_IDLE, PCPU_GUEST, PCPU_HYPERVISOR, PCPU_HOST, PCPU_NR_KINDS };
#define PCPU_UNKNOWN PCPU_NR_KINDS /* ns[] index: the window's time no record covers */

struct pcpu_occupant {
	int kind;     /* PCPU_GUEST, PCPU_HYPERVISOR (a vCPU), PCPU_HOST (a host thread) */
	char vm[128]; /* a vCPU's VM, or the VM whose VMM process the host thread is in; "" */
	int vcpu;
	uint32_t tid, pid;
	char comm[64];
	int64_t guest_tid;    /* in guest code: the guest thread (0: the guest CPU idle), -1: not known */
	char guest_comm[64];  /* its name, from an imported guest trace */
	uint64_t ns;
};

struct pcpu_row {
	uint32_t cpu;
	uint64_t ns[PCPU_NR_KINDS + 1];
	struct pcpu_occupant *occ; /* most first */
	size_t nr_occ, others;
	uint64_t others_ns;
};

struct pcpu_view {
	uint64_t t1, t2;
	bool host_recorded;
	struct pcpu_row *cpus; /* by CPU number: the CPUs something was recorded on */
	size_t nr_cpus;
};

/*
 * Every stretch of every CPU's time over [t1, t2] that the recording tells:
 * a vCPU in guest code or the hypervisor (vm: the VM's index among /vms, vcpu,
 * tid), a host thread (tid) or idle. Per CPU in time order for vCPUs and for
 * the host side each, not merged; only the CPUs in cpus (NULL or empty: all).
 * visit's non-zero return stops the walk.
 */
struct pcpu_seg {
	uint32_t cpu;
	uint64_t start, end;
	int kind; /* enum pcpu_kind */
	int vm, vcpu; /* -1 for host threads and idle */
	uint32_t tid;
	int64_t guest_tid; /* in guest code, with a guest trace: the guest thread (0: idle); else -1 */
};
int pcpu_walk(struct sht_reader *r, uint64_t t1, uint64_t t2, const struct id_set *cpus,
	      int (*visit)(void *ctx, const struct pcpu_seg *s), void *ctx, struct vcpustat_error *err);
/*
 * The view; f (may be NULL): --pcpu keeps those CPUs' rows, --tid the
 * occupants with those thread ids (a CPU's shares stay whole).
 */
int pcpu_build(struct pcpu_view *v, struct sht_reader *r, uint64_t t1, uint64_t t2, unsigned int top,
	       const struct summary_filter *f, struct vcpustat_error *err);
void pcpu_print(FILE *f, const struct pcpu_view *v);
json_t *pcpu_json(const struct pcpu_view *v);
void pcpu_free(struct pcpu_view *v);

#endif /* VCPUSTAT_MODEL_PCPU_H */
