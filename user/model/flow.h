/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flow.h - execution-flow recovery over a recording, and its text.
 */
#ifndef VCPUSTAT_MODEL_FLOW_H
#define VCPUSTAT_MODEL_FLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "model/summary.h"

/*
 * ---- flow.c: execution-flow recovery (preemption-analysis paper, Alg. 1-2) ----
 * Everything that delayed one thread (a host thread, or a guest thread of a
 * VM whose guest trace was imported) over its lifespan in a window of a
 * recording: the ordered intervals of its states, each with who ran instead
 * (the culprit: resolve() through host CPUs and, when the one who ran is a
 * vCPU of a VM with a guest trace, into that VM down to its guest thread,
 * with cycle protection), the culprits with their time and
 * D(T) = time T delayed the thread / the thread's lifespan (eq. 3).
 * flow_show.c renders it as text or JSON (docs/json.md).
 */

/* What the thread was doing over an interval of its flow. */
enum flow_kind {
	FLOW_RUNNING = 0,   /* it ran (a guest thread or a vCPU thread: in guest mode) */
	FLOW_HYPERVISOR,    /* its vCPU was in the hypervisor (host mode: exits, the VMM) */
	FLOW_GUEST_RUNQ,    /* runnable in its guest's run queue (preempted or woken, not current) */
	FLOW_HOST_RUNQ,	    /* runnable on the host, not running: preempted or woken (its vCPU, for a guest thread) */
	FLOW_HOST_BLOCKED,  /* a guest thread current in the guest whose vCPU was idle or blocked on the host */
	FLOW_BLOCKED,	    /* sleeping by itself (blocked; a vCPU thread: also idle): no culprit */
	FLOW_NR_KINDS,
};

/* What a culprit is. */
enum flow_role {
	FLOW_ROLE_THREAD = 0, /* a thread: of the host, or a guest thread of a VM */
	FLOW_ROLE_IDLE,	      /* a CPU's idle task: the host's, or a guest CPU's (guest tid 0) */
	FLOW_ROLE_HYPERVISOR, /* a vCPU in host mode: KVM and the VMM handling its exits (system: host) */
	FLOW_ROLE_VCPU,	      /* a vCPU in guest mode, its guest thread unknown (no guest trace) */
	FLOW_ROLE_UNRESOLVED, /* not known: no record of who ran, or resolve() met a cycle */
	FLOW_NR_ROLES,
};

struct flow_culprit {
	char system[64];  /* "host", or the VM's name */
	bool in_vm;	  /* system is a VM */
	uint32_t pid;	  /* host: the thread's process (the VMM, for a hypervisor); VM: 0 (guest traces carry none) */
	char process[64]; /* the process's name; in a VM: "guest" for guest threads, "vcpus" for vCPUs, "idle" */
	uint32_t tid;	  /* host tid, or guest tid (0: idle); a hypervisor or vCPU: the vCPU's host thread */
	char name[32];	  /* the thread's name ("swapper" for idle) */
	enum flow_role role;
	char vm[64];	  /* hypervisor, vCPU, unresolved: the VM concerned ("" if none) */
	int vcpu;	  /* and the vCPU index, else -1 */
	bool cycle;	  /* unresolved because resolve() came back to a CPU it was resolving */
	uint64_t ns;	  /* time it delayed the thread (in the lifespan) */
	double impact;	  /* D(T) = ns / lifespan */
};

struct flow_interval {
	uint64_t start, end;   /* [start, end), ns since the trace start */
	enum flow_kind kind;
	int32_t culprit;       /* index in flow.culprits, -1: none (running, blocked) */
};

/* The thread whose flow is wanted: `TID` (host) or `VM:GUEST_TID`. */
struct flow_target {
	bool guest;
	char vm[64]; /* guest: the VM's name (or its VMM pid, as given) */
	uint32_t tid;
};

struct flow {
	struct flow_target target;
	char vm[64];	     /* the target's VM (its name in the file): guest threads and vCPU threads */
	int vcpu;	     /* a vCPU thread: its index, else -1 */
	char name[32];	     /* the thread's name */
	uint64_t from, to;   /* the window asked for */
	uint64_t start, end; /* the thread's lifespan in the window */
	uint64_t ns[FLOW_NR_KINDS];
	struct flow_interval *iv; /* ordered, adjacent ones with the same kind and culprit merged */
	size_t niv;
	struct flow_culprit *culprits; /* by ns, descending (then system, tid) */
	size_t nculprits;
	bool host_cpus;	     /* the file records who ran on each CPU (level full) */
	bool guest_trace;    /* some VM of the file has guest threads (an import with guest traces) */
};

/* "running", "hypervisor", "guest_runqueue", "host_runqueue", "host_blocked", "blocked" */
const char *flow_kind_name(unsigned int kind);
/* "thread", "idle", "hypervisor", "vcpu", "unresolved" */
const char *flow_role_name(unsigned int role);

/* Parse THREAD: a host tid ("1234") or "VM:GUEST_TID" (the last ':' splits). -EINVAL, err says why. */
int flow_parse_target(const char *s, struct flow_target *t, struct vcpustat_error *err);

/*
 * The flow of t in the window [from, to) of r. -ENOENT (err names the file
 * and the thread) when the file has no such thread or VM, or the thread does
 * not live in the window; -ENOMEM, or a reader's error otherwise.
 */
int flow_build(struct flow *f, struct sht_reader *r, const struct flow_target *t, uint64_t from, uint64_t to,
	       struct vcpustat_error *err);
void flow_free(struct flow *f);

/*
 * flow_show.c: the flow as text (the intervals, the time by kind, the tree
 * system -> process -> thread with sums and D(T)), or as the "flow" object of
 * `report --flow -j` (docs/json.md). Culprits whose D(T) is below min_impact
 * are left out of the tree (their time is summed as hidden).
 */
void flow_print(FILE *out, const struct flow *f, struct sht_reader *r, const char *file, double min_impact);
json_t *flow_json(const struct flow *f, struct sht_reader *r, const char *file, double min_impact);

#endif /* VCPUSTAT_MODEL_FLOW_H */
