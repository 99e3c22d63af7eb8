/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * import_synth.h - host and guest traces of the synchronization protocol
 * (docs/sync.md, "The protocol") with a known clock relation (sync_synth.h): on the
 * host, kvm_exit (VMCALL), kvm_hypercall (b) and the next kvm_entry (c) of a
 * vCPU thread; in the guest, the agent's markers a and d. As struct tev
 * arrays, so tests can add their own events and print any layout.
 */
#ifndef VCPUSTAT_TEST_IMPORT_SYNTH_H
#define VCPUSTAT_TEST_IMPORT_SYNTH_H

#include <stdlib.h>
#include "sync_synth.h"
#include "trace_synth.h"

struct sync_traces {
	uint32_t vcpu_pid, vm_tgid, host_cpu, vcpu; /* the vCPU thread that takes the hypercalls */
	uint32_t agent_pid, guest_cpu;		    /* the guest agent */
	uint64_t key0;				    /* first key */
	bool no_d;				    /* the guest writes no d markers (one direction only) */
	long double jump_after;			    /* the guest clock jumps after this host time (0: never) */
	long double jump_ns;			    /* by this much */
};

/* Appends to *h / *g (realloc'ed; *nh, *ng updated). Returns the rounds. */
static inline size_t sync_tevs(const struct synth *p, const struct sync_traces *o, struct tev **h, size_t *nh,
			       struct tev **g, size_t *ng)
{
	struct vcpustat_sync_match *m;
	size_t n = synth_generate(p, &m), rounds = n / 2;

	*h = realloc(*h, (*nh + 3 * rounds) * sizeof(**h));
	*g = realloc(*g, (*ng + 2 * rounds) * sizeof(**g));
	for (size_t i = 0; i < rounds; i++) {
		const struct vcpustat_sync_match *ab = &m[2 * i], *cd = &m[2 * i + 1];
		uint64_t key = o->key0 + i, a = ab->send_ns, d = cd->recv_ns;
		struct tev base = { .cpu = o->host_cpu, .pid = o->vcpu_pid, .tgid = o->vm_tgid,
				    .comm = o->vcpu ? "CPU 1/KVM" : "CPU 0/KVM", .vcpu = o->vcpu };
		struct tev agent = { .type = T_MARKER, .cpu = o->guest_cpu, .pid = o->agent_pid,
				     .tgid = o->agent_pid, .comm = "vcpustat-sync-a", .key = key };

		if (o->jump_after > 0 && (long double)ab->recv_ns > o->jump_after) {
			a += (uint64_t)o->jump_ns;
			d += (uint64_t)o->jump_ns;
		}
		base.type = T_KEXIT;
		base.ts = ab->recv_ns - 400;
		base.reason = "VMCALL";
		(*h)[(*nh)++] = base;
		base.type = T_HCALL;
		base.ts = ab->recv_ns;
		base.key = key;
		(*h)[(*nh)++] = base;
		base.type = T_ENTRY;
		base.ts = cd->send_ns;
		(*h)[(*nh)++] = base;
		agent.ts = a;
		agent.mark = 'a';
		(*g)[(*ng)++] = agent;
		if (!o->no_d) {
			agent.ts = d;
			agent.mark = 'd';
			(*g)[(*ng)++] = agent;
		}
	}
	free(m);
	return rounds;
}

/* Sort by time, keeping the order of equal times (as a trace merges its CPUs). */
static inline void tev_sort(struct tev *e, size_t n)
{
	struct tev *tmp = malloc(n * sizeof(*tmp));

	for (size_t w = 1; tmp && w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = e[j].ts < e[i].ts ? e[j++] : e[i++];
			while (i < mid)
				tmp[k++] = e[i++];
			while (j < hi)
				tmp[k++] = e[j++];
		}
		memcpy(e, tmp, n * sizeof(*e));
	}
	free(tmp);
}

#endif
