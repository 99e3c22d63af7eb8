/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * snapshot.h - what the BPF maps hold, as plain C structs, and the callbacks
 * that carry the ring buffer's records and raw events. The live layer
 * (loader.h) fills these from the kernel; replay fills them from captures and
 * imported traces; the window model, reports and exporters read them. No
 * libbpf here: offline code builds and links without the live layer.
 */
#ifndef VCPUSTAT_SNAPSHOT_H
#define VCPUSTAT_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "vcpustat_abi.h"

/* One histogram: the key and its buckets. */
struct vcpustat_hist_entry {
	struct vcpustat_hist_key key;
	struct vcpustat_hist hist;
};

/* One culprit: who ran (key.tid) while VM key.vm_tgid waited. */
struct vcpustat_culprit_entry {
	struct vcpustat_culprit_key key;
	struct vcpustat_culprit culprit;
};

/* Everything in the maps at one moment. */
struct vcpustat_snapshot {
	__u64 ts; /* CLOCK_MONOTONIC ns when the maps were read */
	struct vcpustat_vcpu *vcpus;
	size_t nr_vcpus;
	struct vcpustat_vcpu *dead; /* vCPUs whose thread exited since the last snapshot */
	size_t nr_dead;
	struct vcpustat_vm *vms;
	size_t nr_vms;
	struct vcpustat_hist_entry *hists;
	size_t nr_hists;
	struct vcpustat_culprit_entry *culprits;
	size_t nr_culprits;
	__u64 lost[VCPUSTAT_NR_LOST];
};

/* Free what a snapshot holds (vcpustat_snapshot(), replay_snapshot()) and zero it. */
void vcpustat_snapshot_free(struct vcpustat_snapshot *snap);

/* What became of one tracepoint program. */
enum vcpustat_prog_status {
	VCPUSTAT_PROG_OFF = 0,	/* not loaded: not wanted (injection, --no-kvm) */
	VCPUSTAT_PROG_MISSING,	/* not loaded: the kernel has no such tracepoint */
	VCPUSTAT_PROG_LOADED,	/* loaded, not attached (yet) */
	VCPUSTAT_PROG_ATTACHED, /* attached and running */
	VCPUSTAT_PROG_FAILED,	/* attach failed: err and message say why */
};

struct vcpustat_prog {
	const char *name;	/* program name, e.g. "on_kvm_exit" */
	const char *tracepoint; /* "sched:sched_switch", "kvm:kvm_exit", ... */
	bool required;		/* vcpustat cannot work without it */
	enum vcpustat_prog_status status;
	int err;		/* negative errno for MISSING/FAILED */
	char message[160];	/* what went wrong, for the user */
};

/* One record (level >= VCPU) or raw event; a non-zero return stops the stream and is returned. */
typedef int (*vcpustat_record_fn)(void *ctx, const struct vcpustat_record *rec);
typedef int (*vcpustat_event_fn)(void *ctx, const struct vcpustat_event *ev);

#endif /* VCPUSTAT_SNAPSHOT_H */
