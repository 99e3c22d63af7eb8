/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * import.h - offline analysis of traces made by other tracers: a host trace
 * (ftrace text or LTTng CTF, trace.h) replayed through the kernel's own event
 * handler (replay.h, level full) into a State History Tree (record.h); guest
 * traces synchronized to the host's clock from the vcpustat_sync protocol
 * (sync.h) and merged by the multi-level analysis (multilevel.h).
 * docs/import.md describes the whole of it.
 */
#ifndef VCPUSTAT_IMPORT_H
#define VCPUSTAT_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "multilevel.h"
#include "sht/sht.h"
#include "sync.h"
#include "trace.h"

/* --vm-name PID=NAME: the display name of the VM whose VMM process is PID. */
struct import_vm_name {
	uint32_t pid;
	const char *name;
};

/* --vm NAME=TID,TID,...: these threads are the vCPUs of VM NAME (traces without thread groups). */
struct import_vm_threads {
	const char *name;
	const uint32_t *tids;
	size_t ntids;
};

/* --guest VM=TRACE: the guest trace of VM (its name, or its pid). */
struct import_guest {
	const char *vm;
	const char *path;
};

struct import_opts {
	const char *host; /* the host trace */
	const struct import_guest *guests;
	size_t nguests;
	const char *out; /* the .sht file */
	struct trace_opts trace;
	const struct import_vm_name *names;
	size_t nnames;
	const struct import_vm_threads *vms;
	size_t nvms;
	unsigned int nr_cpus; /* size of the handler's CPU table (0: 1024) */
	const char *command;  /* stored in the file's metadata (may be NULL) */
	const struct sht_meta *meta; /* more metadata (--meta: host, workload, recorded, ...) */
	size_t nmeta;
	bool no_sync;	      /* no fdatasync when the file is closed (tests, benchmarks) */
};

struct import_guest_result {
	char vm[64];	/* the VM's name in the file */
	uint32_t tgid;	/* its id (VMM pid, or see docs/import.md) */
	struct trace_stats trace;
	struct vcpustat_sync_result sync;
	struct vcpustat_sync_protocol_stats protocol;
	size_t na, nb, nc, nd;	/* sync events found: guest markers a/d, host b/c */
	uint64_t unmappable;	/* guest events whose host time is out of range (dropped) */
	bool host_mode_known;	/* the host trace shows this VM's kvm_entry/kvm_exit */
	struct ml_guest_stats ml;
};

struct import_result {
	struct trace_stats host;
	bool two_passes;	 /* the host trace was read twice (sync events, thread groups) */
	uint64_t records;	 /* handler records */
	uint64_t intervals;	 /* SHT intervals written */
	uint64_t late;		 /* records clamped by the recorder (older than its reorder window) */
	uint64_t vms, vcpus;	 /* VMs and vCPU threads found */
	uint64_t orphan_vcpus;	 /* vCPU threads without a known process: each made its own VM */
	uint64_t start_ns, end_ns; /* host trace time range (t = 0 of the file is start_ns) */
	struct import_guest_result *guests;
	size_t nguests;
};

/* Import: write opts->out. res is filled (free it with import_result_free) even on failure. */
int vcpustat_import(const struct import_opts *opts, struct import_result *res, struct vcpustat_error *err);
void import_result_free(struct import_result *res);

/* The four event lists of the synchronization protocol (sync.h), each side's clock. */
struct import_sync_events {
	struct vcpustat_sync_event *a, *b, *c, *d;
	size_t na, nb, nc, nd;
};
void import_sync_events_free(struct import_sync_events *s);

/*
 * Host side (b, c) from a host trace, or from an SHT recording (the intervals
 * of /vms/<vm>/vcpus/<n>/sync: start = b, end = c, on the recording's
 * CLOCK_MONOTONIC). vm: only that VM (name or pid; NULL: every VM).
 */
int import_host_sync_events(const char *path, const char *vm, const struct import_opts *opts,
			    struct import_sync_events *out, struct vcpustat_error *err);
/* Guest side (a, d): the vcpustat_sync markers of a guest trace. */
int import_guest_sync_events(const char *path, const struct trace_opts *opts, struct import_sync_events *out,
			     struct trace_stats *st, struct vcpustat_error *err);

/* Both, matched and solved: `vcpustat sync --host H --guest G`. */
int import_sync(const char *host, const char *guest, const char *vm, const struct import_opts *opts,
		struct vcpustat_sync_result *res, struct vcpustat_sync_protocol_stats *ps, struct import_sync_events *ev,
		struct vcpustat_error *err);

#endif
