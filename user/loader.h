/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * loader.h - libvcpustat's live layer: open, load and attach the BPF
 * programs, inject synthetic events, and read the maps into plain C structs.
 * The vcpustat CLI, the recorder and the exporters all sit on this.
 *
 * Functions return 0 (or a count) on success and a negative errno on
 * failure; they never exit and never print, except through the log function
 * set with vcpustat_set_log().
 */
#ifndef VCPUSTAT_LOADER_H
#define VCPUSTAT_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "vcpustat_abi.h"

struct vcpustat;
struct ring_buffer;

struct vcpustat_options {
	enum vcpustat_record_level record_level; /* what goes to the ring buffer */
	unsigned int max_vcpus;			 /* 0: VCPUSTAT_MAX_VCPUS */
	unsigned int max_vms;			 /* 0: VCPUSTAT_MAX_VMS */
	unsigned int max_hists;			 /* 0: VCPUSTAT_MAX_HISTS */
	unsigned int ringbuf_bytes;		 /* 0: VCPUSTAT_RINGBUF_BYTES (power of 2) */
	bool no_kvm;				 /* do not load/attach the KVM programs */
	bool record_raw;			 /* also capture every handled event (ring buffer) */
};

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

typedef void (*vcpustat_log_fn)(int level, const char *msg);
enum { VCPUSTAT_LOG_WARN = 0, VCPUSTAT_LOG_INFO, VCPUSTAT_LOG_DEBUG };

/* Route library and libbpf messages up to `max_level` to fn (NULL: silence). */
void vcpustat_set_log(vcpustat_log_fn fn, int max_level);

/*
 * What this process lacks to load BPF: writes a sentence naming the missing
 * capability into msg and returns -EPERM, or names the missing kernel BTF and
 * returns -ENOENT; 0 if all is there.
 */
int vcpustat_check_privileges(char *msg, size_t len);

/* Open and load the BPF object. Programs whose tracepoint is missing are left out (MISSING). */
int vcpustat_open(struct vcpustat **out, const struct vcpustat_options *opts);

/*
 * Attach every loaded tracepoint program (not the injection program).
 * Mounts tracefs at /sys/kernel/tracing first when a tp/ program needs it.
 * Returns the number attached; -errno if a required program failed (the
 * others stay attached). Per-program results: vcpustat_progs().
 */
int vcpustat_attach(struct vcpustat *vs);

/* Detach everything and free all resources. NULL is fine. */
void vcpustat_close(struct vcpustat *vs);

/* The tracepoint programs and what became of each; returns their number. */
size_t vcpustat_progs(const struct vcpustat *vs, const struct vcpustat_prog **progs);

/* Run the injection program once with ev (bpf_prog_test_run_opts). */
int vcpustat_inject(struct vcpustat *vs, const struct vcpustat_event *ev);

/*
 * Seed the vCPU table with the vCPU threads of VMs already running: threads
 * whose name gives a vCPU index ("CPU <n>/KVM", ...) in a process that holds
 * a KVM VM file descriptor. They start in UNKNOWN until their first event.
 * Returns the number of vCPUs added.
 */
int vcpustat_seed(struct vcpustat *vs, const char *proc_root);

/*
 * Track thread tid of process tgid as vCPU `index` from now on (state UNKNOWN
 * until its first event); comm may be NULL. -EEXIST if already tracked.
 */
int vcpustat_add_vcpu(struct vcpustat *vs, __u32 tid, __u32 tgid, __u32 index, const char *comm);

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

/*
 * Read all maps. Dead vCPUs are returned once and removed from the kernel
 * map (reaped). Free with vcpustat_snapshot_free().
 */
int vcpustat_snapshot(struct vcpustat *vs, struct vcpustat_snapshot *snap);
void vcpustat_snapshot_free(struct vcpustat_snapshot *snap);

/*
 * Keep the culprit table bounded on a long-running host: fold the entries of
 * threads that no longer exist into one "(exited)" entry per VM (key tid
 * VCPUSTAT_TID_EXITED), so totals stay monotonic. Returns how many were folded.
 */
int vcpustat_prune(struct vcpustat *vs, const char *proc_root);

/* The lost counters (summed over CPUs), without reading the other maps. */
int vcpustat_lost(struct vcpustat *vs, __u64 lost[VCPUSTAT_NR_LOST]);

/* Forget a VM whose process is gone: its vms entry, histograms and culprits. */
int vcpustat_reap_vm(struct vcpustat *vs, __u32 tgid);

/* What to call for each ring-buffer entry (a non-zero return stops the poll and is returned). */
typedef int (*vcpustat_record_fn)(void *ctx, const struct vcpustat_record *rec);
typedef int (*vcpustat_event_fn)(void *ctx, const struct vcpustat_event *ev);
struct vcpustat_consumer {
	vcpustat_record_fn on_record; /* records (level >= VCPU) */
	vcpustat_event_fn on_event;   /* raw events (record_raw); NULL: ignored */
	void *ctx;
};

/*
 * The ring buffer of records and raw events, consumed with libbpf's
 * ring_buffer__poll/consume (free with ring_buffer__free before vcpustat_close).
 * One consumer per struct vcpustat. The kernel wakes the consumer only when
 * an eighth of the buffer is full: drain with vcpustat_drain(), not a bare
 * ring_buffer__poll(), or records that trickle in wait for the next wakeup.
 */
struct ring_buffer *vcpustat_ring_buffer(struct vcpustat *vs, const struct vcpustat_consumer *c);

/*
 * Wait up to timeout_ms for the kernel to signal a full-enough buffer, then
 * consume what is there (also what trickled in without a wakeup) for at most
 * VCPUSTAT_DRAIN_MS more: a consumer slower than the kernel's producers still
 * gets back to its deadlines and signals, and calls again for the rest.
 * Returns the number of entries consumed or a negative errno.
 */
#define VCPUSTAT_DRAIN_MS 100
int vcpustat_drain(struct ring_buffer *rb, int timeout_ms);
/* The records ring buffer's consumer and producer positions (bytes); 0 or -errno. */
int vcpustat_ring_pos(struct vcpustat *vs, unsigned long *cons, unsigned long *prod);

/* Map and program file descriptors for benchmarks and tests. */
int vcpustat_map_fd(const struct vcpustat *vs, const char *map_name);
int vcpustat_prog_fd(const struct vcpustat *vs, const char *prog_name);

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns(). */
__u64 vcpustat_now_ns(void);

#endif /* VCPUSTAT_LOADER_H */
