/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * live.h - libvcpustat's live layer, the only part that talks to the kernel:
 * open, load and attach the BPF programs (loader.c), inject synthetic events,
 * read the maps into plain C structs (base/base.h) and drain the ring buffer;
 * successive windows of the maps for the exporters (sample.c) and their source
 * for the HTTP server (serve/serve.h), and the exporter's session over
 * them (serve.c).
 * Everything else in libvcpustat is offline and builds without this.
 *
 * Functions return 0 (or a count) on success and a negative errno on
 * failure; they never exit and never print, except through the log function
 * set with vcpustat_set_log().
 */
#ifndef VCPUSTAT_LIVE_H
#define VCPUSTAT_LIVE_H

#ifdef VCPUSTAT_OFFLINE
#error "live/live.h is the live layer (libbpf): the offline library must not include it"
#endif

#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "vcpustat_abi.h"
#include "util/util.h"
#include "export/export.h"
#include "model/summary.h"
#include "serve/serve.h"

/* ---- compat.c: what this kernel gives the BPF programs (docs/kernels.md) ---- */

/* Each found by probing the kernel, never from its version number. */
struct vcpustat_kernel {
	char release[65];    /* uname -r */
	char machine[65];    /* uname -m */
	bool vmlinux_btf;    /* /sys/kernel/btf/vmlinux: CO-RE, tp_btf (required) */
	bool kvm_loaded;     /* the kvm module (or KVM built in: /sys/module/kvm) */
	bool kvm_btf;	     /* the kvm module's BTF: tp_btf and fentry on KVM */
	bool dev_kvm;	     /* /dev/kvm exists */
	bool dev_kvm_usable; /* ... and opens */
	bool tracefs;	     /* mounted (the tp/ programs' fields and attachment) */
	bool ringbuf;	     /* BPF ring buffers, 5.8 (required) */
	bool atomics;	     /* BPF atomic or/and/fetch/cmpxchg, 5.12: else the compat object */
	bool task_storage;   /* task storage maps, 5.11 (marks mode) */
	bool pidfd_thread;   /* pidfds of threads, 6.9 (marks mode) */
	bool task_from_pid;  /* the kfunc bpf_task_from_pid, 6.2 (marks mode) */
};

/* Probe this kernel (needs BPF privileges for the BPF probes). Returns 0. */
int compat_probe(struct vcpustat_kernel *k);

/* ---- kvmview.c: what KVM itself says of the VMs on this host (model.h, struct kvm_view) ---- */

/*
 * KVM's VMs, from KVM's debugfs folder (with their exits where debugfs can
 * be read: of every VM, or of those want_exits() says, as each read costs a
 * walk of the VM's vCPUs), else (or with proc_root given) from the
 * processes under proc_root ("/proc") that hold one. 0 or -errno; free with
 * kvm_view_free().
 */
int kvm_view_read(struct kvm_view *v, const char *proc_root, bool (*want_exits)(void *ctx, __u32 tgid), void *ctx);
/* Does process pid under proc_root hold a KVM VM (a file descriptor anon_inode:kvm-vm)? */
bool kvm_process_has_vm(const char *proc_root, const char *pid);
/* What vcpustat counted of each VM in snap (for health_check): *out malloc'ed, *n entries. 0 or -ENOMEM. */
int health_seen_of(const struct vcpustat_snapshot *snap, struct health_seen **out, size_t *n);

/* ---- probe.c: `vcpustat probe`, what this host gives vcpustat (docs/kernels.md) ---- */

enum probe_exit_verdict { PROBE_EXIT_UNKNOWN, PROBE_EXIT_FIRES, PROBE_EXIT_SILENT };
#define PROBE_MAX_PROGS 32

struct probe_report {
	struct vcpustat_kernel kernel;
	bool privileged;     /* BPF could be tried (else open_error says what is missing) */
	bool opened;	     /* the programs loaded */
	int open_err;	     /* ... else why (negative errno, open_error's sentence) */
	char open_error[256];
	int attach_err;	     /* a required program did not attach */
	bool compat, marks;  /* the object and the scheduler programs' mode */
	char rings[256];
	struct vcpustat_prog progs[PROBE_MAX_PROGS];
	size_t nr_progs;
	/* kvm_exit, watched for `seconds` against KVM's count */
	bool watched;
	double seconds;
	unsigned int kvm_vms;
	bool kvm_exits_known;
	char kvm_exits_why[160];
	__u64 kvm_exits, seen_exits, userspace_exits;
	enum probe_exit_verdict kvm_exit;
	struct health health; /* the health check over the same span */
};

/* Probe the kernel, load and attach the programs, watch the VMs for seconds (probe_report_free() it). 0. */
int vcpustat_probe(struct probe_report *r, double seconds);
void probe_report_free(struct probe_report *r);
/* The report as text, and as one JSON object (docs/kernels.md). */
void probe_print(FILE *f, const struct probe_report *r);
struct jw;
void probe_json_write(struct jw *w, const struct probe_report *r);
/* "marks", "hot page", or "none" (not loaded). */
const char *probe_mode(const struct probe_report *r);

/* ---- loader.c: the BPF object, its programs, maps and ring buffer ---- */

struct vcpustat;
struct ring_buffer;

struct vcpustat_options {
	enum vcpustat_record_level record_level; /* what goes to the ring buffer */
	unsigned int max_vcpus;			 /* 0: VCPUSTAT_MAX_VCPUS */
	unsigned int max_vms;			 /* 0: VCPUSTAT_MAX_VMS */
	unsigned int max_hists;			 /* 0: VCPUSTAT_MAX_HISTS */
	unsigned int max_details;		 /* rows of each exit-detail map (0: VCPUSTAT_MAX_DETAILS,
						    VCPUSTAT_MAX_FAULT_PAGES) */
	unsigned int ringbuf_bytes;		 /* the rings' total, split among the online CPUs
						    (0: VCPUSTAT_RINGBUF_BYTES, and at least
						    VCPUSTAT_RINGBUF_CPU_MIN_BYTES per CPU) */
	bool no_kvm;				 /* do not load/attach the KVM programs */
	bool record_raw;			 /* also capture every handled event (ring buffer) */
	bool single_ring;			 /* one ring shared by all CPUs, not one per CPU */
	bool address_spaces;			 /* the guest's CR3 at each exit (on_kvm_exit_cr3) */
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

/*
 * Open and load the BPF object. Programs whose tracepoint is missing are left
 * out (MISSING). Records go to one ring buffer per possible CPU; if those
 * cannot be made (or opts->single_ring), to one ring shared by all CPUs, with
 * a warning in the log: vcpustat_rings() says which.
 */
int vcpustat_open(struct vcpustat **out, const struct vcpustat_options *opts);

/* The number of ring buffers (1: the shared one), and in *how a sentence saying which, how big and why. */
int vcpustat_rings(const struct vcpustat *vs, const char **how);

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
/*
 * Marks mode (docs/architecture.md, "The hot path"): the scheduler programs
 * test only the task structs, every tracked thread having an entry in the
 * task-storage map "marks". Chosen at open where the kernel gives pidfds of
 * threads (Linux 6.9), below level full, unless VCPUSTAT_NO_MARKS is set.
 */
bool vcpustat_marks(const struct vcpustat *vs);
/* The compat object (docs/kernels.md: no BPF atomics beyond add, before 5.12) is loaded. */
bool vcpustat_compat(const struct vcpustat *vs);
/* What vcpustat_open() found of the kernel (compat.c). */
const struct vcpustat_kernel *vcpustat_kernel(const struct vcpustat *vs);
/* Are kvm_entry and kvm_exit both attached (exits counted)? */
bool vcpustat_exits_attached(const struct vcpustat *vs);
/*
 * Why the last vcpustat_open() failed, in a sentence for the user (the
 * missing kernel feature, the program the verifier refused), or "".
 */
const char *vcpustat_open_failure(void);

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

/*
 * Tell the kernel side where each CPU is (placement: moves across NUMA nodes
 * and last-level caches, SMT siblings); t->core identifies a CPU's core.
 * Before the programs run. Returns the number of CPUs set, or -errno.
 */
int vcpustat_set_topology(struct vcpustat *vs, const struct cpu_topology *t);

/*
 * Track thread tid of VM tgid as one of its VMM's other threads (emulator,
 * I/O thread, vhost worker) from now on: its time on a CPU and waiting for
 * one from its first scheduler event. comm may be NULL.
 */
int vcpustat_add_vmm_thread(struct vcpustat *vs, __u32 tid, __u32 tgid, enum vcpustat_vmm_kind kind,
			    const char *comm);

/*
 * Find the VMM threads of the running VMs in snap that are not tracked yet:
 * the threads of each VM's process that are no vCPU (a thread named like a
 * vCPU waits for its first KVM event), vhost-<pid> workers among them (Linux
 * 6.4+), looked at when a VM is first seen and then at most every
 * VCPUSTAT_VMM_SCAN_NS; and vhost-<pid> kernel threads (older kernels: a walk
 * of every process, at most every VCPUSTAT_VHOST_SCAN_NS). Returns how many
 * were added.
 */
#define VCPUSTAT_VMM_SCAN_NS 2000000000ull
#define VCPUSTAT_VHOST_SCAN_NS 5000000000ull
int vcpustat_seed_vmm(struct vcpustat *vs, const struct vcpustat_snapshot *snap, const char *proc_root);

/*
 * Read all maps. Dead vCPUs are returned once and removed from the kernel
 * map (reaped). Free with vcpustat_snapshot_free() (model/model.h).
 */
int vcpustat_snapshot(struct vcpustat *vs, struct vcpustat_snapshot *snap);

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
struct vcpustat_consumer {
	vcpustat_record_fn on_record; /* records (level >= VCPU) */
	vcpustat_event_fn on_event;   /* raw events (record_raw); NULL: ignored */
	void *ctx;
};

/*
 * The ring buffers of records and raw events (every CPU's, in one libbpf
 * ring_buffer; free with ring_buffer__free before vcpustat_close). One
 * consumer per struct vcpustat. Drain with vcpustat_drain(): it merges the
 * CPUs' rings in time order. (A bare ring_buffer__consume() empties one ring
 * after the other, out of order across CPUs; and the kernel wakes the
 * consumer only when an eighth of a ring is full, so a bare
 * ring_buffer__poll() leaves records that trickle in waiting.)
 */
struct ring_buffer *vcpustat_ring_buffer(struct vcpustat *vs, const struct vcpustat_consumer *c);

/*
 * Wait up to timeout_ms for the kernel to signal a full-enough ring, then
 * consume what all the rings hold (also what trickled in without a wakeup),
 * oldest first across CPUs, for at most VCPUSTAT_DRAIN_MS more: a consumer
 * slower than the kernel's producers still gets back to its deadlines and
 * signals, and calls again for the rest. Returns the number of entries
 * consumed or a negative errno.
 */
#define VCPUSTAT_DRAIN_MS 100
int vcpustat_drain(struct ring_buffer *rb, int timeout_ms);
/*
 * How far the drain has come, on the scale all the rings share (their
 * entries' CLOCK_MONOTONIC timestamps): *prod is now, *cons the time of the
 * oldest entry still waiting in any ring (now if none): everything made
 * before a *prod is consumed once *cons has reached it. 0, or -EINVAL
 * before vcpustat_ring_buffer().
 */
int vcpustat_ring_pos(struct vcpustat *vs, unsigned long *cons, unsigned long *prod);

/* Map and program file descriptors for benchmarks and tests. */
int vcpustat_map_fd(const struct vcpustat *vs, const char *map_name);
int vcpustat_prog_fd(const struct vcpustat *vs, const char *prog_name);

/* The lost counters' sum (0 if they cannot be read). */
__u64 vcpustat_lost_total(struct vcpustat *vs);

/*
 * ---- session.c: the live sessions ----
 * A recording: the ring buffer drained into a record session
 * (record/record.h) until *stop, the duration or a failure, with its lost
 * count every second and a flush every 5 s; then what the kernel produced
 * before the stop, for at most final_drain_s. Every 10 s the kernel's tables
 * forget the VMs that exited and fold the culprits that exited, as a live
 * window does: a long recording with VMs coming and going keeps them bounded.
 */
struct rec_session;

struct live_record_opts {
	__u64 duration_ns;		/* 0: until *stop */
	volatile const sig_atomic_t *stop; /* set by a signal handler */
	unsigned int final_drain_s;
	bool seed_vmm; /* look for the VMs' VMM threads every second (level vcpu: their records) */
};

struct live_record_result {
	__u64 end_ns; /* when it stopped (CLOCK_MONOTONIC) */
	__u64 lost;   /* the kernel's lost-record total then */
	bool behind;  /* the final drain ran out of time: the newest records are not in */
	/*
	 * Health (model/health.c), checked every LIVE_HEALTH_EVERY_NS while it
	 * recorded: the problems of all checks together, and the last check
	 * that found one (health_free() it).
	 */
	unsigned int health_problems;
	struct health health;
};

/*
 * A live recording's session: so with the time it starts, the host's CPUs,
 * names from /proc, and the metadata a live recording has (record/record.h,
 * record_meta_live: level, argv as its command, then user's).
 */
struct rec_session_opts;
struct record_meta;
int live_record_open(struct rec_session **s, struct rec_session_opts *so, enum vcpustat_record_level level, int argc,
		     char **argv, const struct record_meta *user, struct vcpustat_error *err);
/* 0, or a negative errno with err (the session's own error, or the ring buffer's). */
int live_record(struct vcpustat *vs, struct rec_session *s, const struct live_record_opts *o,
		struct live_record_result *res, struct vcpustat_error *err);

/*
 * A live window: each live_window_next() reads the maps, builds the summary
 * of the window since the previous call into *s (the first: since each vCPU
 * was first seen; s NULL: only take the start of the next window), reaps the
 * VMs that exited (their final counts are in) and folds the culprits that
 * exited (vcpustat_prune). `top` and the exporters' samples drive one.
 */
struct live_window {
	struct vcpustat *vs;
	struct names names;
	struct vcpustat_snapshot prev; /* the end of the last window */
	bool have_prev;
	const struct summary_filter *filter;
	struct cpu_topology topo; /* the host's (sysfs), given to the kernel side and to the summaries */
	bool have_topo;
	/* health (model/health.c): checked at most every LIVE_HEALTH_EVERY_NS, the last result in each window */
	struct health_tracker tracker;
	struct health health;
	__u64 health_ts;
};

/* How often a live window asks KVM about its VMs (a walk of /proc where KVM's debugfs is not there). */
#define LIVE_HEALTH_EVERY_NS 2000000000ull

int live_window_init(struct live_window *w, struct vcpustat *vs, const struct summary_filter *filter);
int live_window_next(struct live_window *w, struct summary *s);
void live_window_free(struct live_window *w);
/*
 * One window of interval_ns from now: its summary into *s (summary_free it).
 * 0; -EINTR when *stop (may be NULL) was set or a signal ended the wait
 * first (then no summary); or the error reading the maps. `plot --live`.
 */
int live_window_sample(struct vcpustat *vs, const struct summary_filter *filter, __u64 interval_ns,
		       volatile const sig_atomic_t *stop, struct summary *s);

/* ---- sample.c: successive windows of the maps, for the exporters ---- */

struct metrics_live {
	struct live_window w;
	struct metrics *m;
	unsigned long long last_sample; /* CLOCK_MONOTONIC ns of the last snapshot (0: none) */
};

/* Counters over the maps of vs (attached), from its next sample on. filter may be NULL. */
int metrics_live_init(struct metrics_live *l, struct vcpustat *vs, const struct metrics_opts *o,
		      const struct summary_filter *filter);
/*
 * Read the maps and add the window since the previous sample (the first one:
 * since each vCPU was first seen); reap the VMs that exited (their final
 * counts are in), fold the culprits that exited (vcpustat_prune) and forget
 * the series of VMs gone for METRICS_FORGET_NS.
 */
int metrics_live_sample(struct metrics_live *l);
void metrics_live_free(struct metrics_live *l);
/* l as the HTTP server's source (serve/serve.h): each of its samples is metrics_live_sample(l). */
struct httpd_source metrics_live_source(struct metrics_live *l);
/*
 * `vcpustat export` of the live maps: a sample after interval seconds,
 * written (metrics_write: path, or stdout); with every > 0, again every
 * `every` seconds until *stop (a stop between two writes leaves the last
 * file whole). 0, or the first failure (-errno, err).
 */
int metrics_live_export(struct metrics_live *l, double interval, double every, volatile const sig_atomic_t *stop,
			enum metrics_format fmt, const char *path, struct vcpustat_error *err);

/*
 * ---- serve.c: the exporter's session over the live maps ----
 * serve/serve.h's session (serve_prepare() first) with the live samples
 * behind it: serve_live_start(), once the BPF programs are attached, starts
 * metrics_live over vs (mo, filter), then serve_start() over its source;
 * serve_live_stop() stops the server, then the samples (also after a
 * failure, and of a zeroed sl: metrics_live_free() takes a zeroed one and
 * a failed metrics_live_init()'s alike).
 */
struct serve_live {
	struct serve s;
	struct metrics_live live;
};

int serve_live_start(struct serve_live *sl, struct vcpustat *vs, const struct metrics_opts *mo,
		     const struct summary_filter *filter, struct vcpustat_error *err);
void serve_live_stop(struct serve_live *sl);

#endif /* VCPUSTAT_LIVE_H */
