/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * timeline_internal.h - what the two timeline writers (timeline.c: Chrome
 * trace-event JSON, timeline_ctf.c: CTF) share: the tracks of a recording
 * and its intervals on them in time order, read a slice of time at a time so
 * that memory stays bounded whatever the file's size.
 */
#ifndef VCPUSTAT_TIMELINE_INTERNAL_H
#define VCPUSTAT_TIMELINE_INTERNAL_H

#include <stdint.h>
#include "export/export.h"

enum tl_kind {
	TL_STATE = 0, /* /vms/<vm>/vcpus/<n>/state: enum vcpu_fsm_state */
	TL_EXIT,      /* /vms/<vm>/vcpus/<n>/exit_reason: the exit being handled */
	TL_UEXIT,     /* /vms/<vm>/vcpus/<n>/userspace_exit: the userspace exit being handled */
	TL_PCPU,      /* /host/cpus/<cpu>/current_tid: the thread on that CPU; without it (level vcpu), the
		       * vCPUs in guest code or the hypervisor there (their state and pcpu) */
	TL_NR_KINDS,
};

struct tl_vm {
	const char *name; /* owned by the reader */
	int64_t pid;	  /* the VMM's pid, -1 if the file has none */
};

struct tl_track {
	enum tl_kind kind;
	int vm;	      /* index in tl->vms; -1 for TL_PCPU */
	uint32_t num; /* vCPU index or CPU number */
	int vcpu;     /* a vCPU's track: its index in tl->vcpus; -1 for TL_PCPU */
};

/* A vCPU thread: tid -> (VM, vCPU), from /vms/<vm>/vcpus/<n>/tid (every VM, filtered or not). */
struct tl_vcpu_tid {
	int64_t tid;
	int vm;
	uint32_t vcpu;
};

/* A vCPU of the file (every VM): what tells the CPU tracks of a recording without /host/cpus. */
struct tl_vcpu {
	uint32_t state, pcpu; /* attributes (SHT_NO_ATTR: none) */
	int vm;
	uint32_t vcpu;
	int64_t tid; /* its first thread id, -1 if none */
	struct sht_interval *on; /* --pcpu: the stretches of [t1, t2] on those CPUs (owned) */
	size_t non;
};

/* A host thread's name, from /host/threads/<tid>/name. */
struct tl_thread {
	int64_t tid;
	const char *name; /* owned by the reader */
};

/* One interval of a track, cut to the window. */
struct tl_item {
	const struct tl_track *track;
	uint64_t start, end; /* [start, end), within [t1, t2] */
	struct sht_value value;
	/* a CPU track without /host/cpus: the vCPU on the CPU (value: its state, guest or host); else NULL */
	const struct tl_vcpu *on_cpu;
};

struct timeline {
	struct sht_reader *r;
	const char *file;
	uint64_t t1, t2;
	const struct summary_filter *filter; /* may be NULL */
	struct tl_vm *vms; /* every VM of the file (the filter keeps some) */
	size_t nr_vms;
	size_t nr_kept; /* VMs the filter kept */
	bool *kept;	/* [nr_vms] */
	struct tl_track *tracks;
	size_t nr_tracks;
	int32_t *track_of; /* [sht_nattrs]: the track of an attribute, or -1 */
	uint8_t *want;	   /* [sht_nattrs]: the attributes of tracks */
	struct tl_vcpu_tid *vtids;
	size_t nr_vtids;
	struct tl_thread *threads;
	size_t nr_threads;
	struct tl_vcpu *vcpus;
	size_t nr_vcpus;
	bool derived_cpus; /* no /host/cpus: CPU tracks from the vCPUs' state and pcpu */
	uint32_t *cpus;	   /* derived_cpus: the CPUs, ascending; track cpu_track0 + i is cpus[i] */
	size_t nr_cpus, cpu_track0;
	uint32_t *lo, *hi; /* [sht_nattrs]: an attribute's intervals in iv, [lo, hi) */

	/* the iteration */
	uint64_t chunk;		 /* length of a slice of time */
	uint64_t next;		 /* start of the next slice */
	struct sht_interval *iv; /* the current slice's intervals, by attribute */
	size_t niv;
	struct tl_item *items; /* the current slice's items, by start */
	size_t nitems, pos;
};

/*
 * The tracks of [t1, t2] of r: the vCPUs that filter keeps (--vm, --vcpu,
 * --tid), their intervals cut to the time on the CPUs of --pcpu; the CPUs of
 * --pcpu (all without it), only the threads of --tid on them. 0 or -errno with err.
 */
int tl_open(struct timeline *tl, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
	    const struct summary_filter *filter, struct vcpustat_error *err);
void tl_close(struct timeline *tl);
/* The next interval in time order (ties: in the order of tracks): 1 with *it, 0 at the end, -errno with err. */
int tl_next(struct timeline *tl, struct tl_item *it, struct vcpustat_error *err);
/* The VM and vCPU whose thread tid is, or NULL. */
const struct tl_vcpu_tid *tl_vcpu_of_tid(const struct timeline *tl, int64_t tid);
/* The name of host thread tid, or NULL. */
const char *tl_thread_name(const struct timeline *tl, int64_t tid);

/* timeline_ctf.c: the CTF trace of tl into the directory out (made under a temporary name, renamed). */
int timeline_ctf(struct timeline *tl, const char *out, struct vcpustat_error *err);

#endif /* VCPUSTAT_TIMELINE_INTERNAL_H */
