/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * base.h - what every stage shares, under the recorder and the window model:
 * the maps' contents as plain C structs and the callbacks that carry records
 * and raw events (snapshot.c), numbers into the names people recognize
 * (names.c), and the cgroups, PID namespaces and containers those name
 * (containers.c). The recorder (record/record.h) and the window model
 * (model/model.h) both build on it; it includes nothing above it.
 */
#ifndef VCPUSTAT_BASE_H
#define VCPUSTAT_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "vcpustat_abi.h"
#include "util/util.h"

/*
 * ---- snapshot.c: what the maps hold ----
 * What the BPF maps hold, as plain C structs, and the callbacks
 * that carry the ring buffer's records and raw events. The live layer
 * (live/live.h) fills these from the kernel; replay fills them from captures and
 * imported traces; the window model, reports and exporters read them. No
 * libbpf here: offline code builds and links without the live layer.
 */

/* One histogram: the key and its buckets. */
struct vcpustat_hist_entry {
	struct vcpustat_hist_key key;
	struct vcpustat_hist hist;
};

/* One (VM, CPU) of the vm_cpu map: its vCPUs' closed time on that CPU. */
struct vcpustat_place_entry {
	struct vcpustat_place_key key;
	__u64 ns;
};

/* One culprit: who ran (key.tid) while VM key.vm_tgid waited. */
/* One exit-detail row (details and fault_pages maps). */
struct vcpustat_detail_entry {
	struct vcpustat_detail_key key;
	struct vcpustat_detail detail;
};

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
	struct vcpustat_detail_entry *details; /* both maps' rows */
	size_t nr_details;
	struct vcpustat_vmm_thread *vmm; /* the VMM threads tracked (vmm_threads map) */
	size_t nr_vmm;
	struct vcpustat_place_entry *places; /* vm_cpu: vCPU-ns per (VM, CPU), closed intervals */
	size_t nr_places;
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
	bool kvm;		/* on KVM (off with --no-kvm) */
	char form[24];		/* how it hooks in: "tp_btf", "tp_btf (marks)", "raw_tp", "tp", "fentry" */
	enum vcpustat_prog_status status;
	int err;		/* negative errno for MISSING/FAILED */
	char message[160];	/* what went wrong, for the user */
};

/* One record (level >= VCPU) or raw event; a non-zero return stops the stream and is returned. */
typedef int (*vcpustat_record_fn)(void *ctx, const struct vcpustat_record *rec);
typedef int (*vcpustat_event_fn)(void *ctx, const struct vcpustat_event *ev);

/*
 * ---- names.c: numbers into names ----
 * Turning numbers into names people recognize: vCPU states, exit
 * reasons, VM names (from the VMM's command line), process names and cgroup
 * paths (from /proc and /sys/fs/cgroup), with caches that survive refreshes.
 */

/* "guest", "host", "preempted", "wait", "idle", "blocked", "poll", "unknown" */
const char *vcpu_state_name(unsigned int state);
/* The state whose name is s, or -1. */
int vcpu_state_from_name(const char *s);
/* Why a sleeping vCPU woke (enum vcpu_wake_reason): "other", "timer", "ipi", "device"; "invalid" */
const char *wake_reason_name(unsigned int reason);
/* The wake reason whose name is s, or -1. */
int wake_reason_from_name(const char *s);
/*
 * The vector a woken vCPU's first entry injected (VCPU_SAMPLE_WAKE_VECTOR's
 * reason): "0x40" (two hex digits), or "none" for 0 (none seen); its name
 * back to the vector, -1 if it is none of these.
 */
const char *wake_vector_name(unsigned int vector, char *buf, size_t len);
int wake_vector_from_name(const char *s);

/* "MSR_WRITE" (VMX), "hlt" (SVM); unknown codes as "VMX_123" / "SVM_0x7b". buf >= 24 bytes. */
const char *exit_reason_name(unsigned int isa, unsigned int reason, char *buf, size_t len);
/* "IO", "HLT", ... (KVM_EXIT_<NAME>); unknown as "KVM_EXIT_123". */
const char *userspace_exit_name(unsigned int reason, char *buf, size_t len);
/* Exit details: "pio", "mmio", "msr", "page_fault"; "read", "write", "fetch". */
const char *detail_kind_name(unsigned int kind);
const char *detail_access_name(unsigned int access);
/* A row's target as people read it: "0x3f8", "0xc0000080", "other". */
const char *detail_target(__u64 addr, char *buf, size_t len);
/* What a row of kind is about, for people: an exit from L2's reason name (nested), else detail_target(). */
const char *detail_target_of(unsigned int kind, __u64 addr, char *buf, size_t len);
/* A guest address space's row: "0x1a2b000", "other", "unknown" (VCPUSTAT_CR3_UNKNOWN). */
const char *cr3_target(__u64 addr, char *buf, size_t len);
/* The architectural or KVM name of an MSR ("EFER", "x2APIC_ICR"), NULL if not known. */
const char *msr_name(__u32 index);
/* The same for an exit-detail row: NULL unless it is an MSR's (not "other") with a known name. */
const char *detail_msr_name(unsigned int kind, __u64 addr);
/*
 * Back from those names (what recordings store) to the code: 0, or -ENOENT.
 * A VMX name gives the basic exit reason (the FAILED_VMENTRY flag is not in the name).
 */
int exit_reason_from_name(const char *name, unsigned int *isa, unsigned int *reason);
int userspace_exit_from_name(const char *name, unsigned int *reason);
/* What a lost-record counter counts: "ringbuf", "vcpu_table_full", ... (the series' and JSON keys). */
const char *lost_kind_name(unsigned int kind);

/*
 * The VM name given on a VMM command line (NUL-separated arguments, as in
 * /proc/<pid>/cmdline): QEMU's `-name [guest=]NAME[,...]` (also `--name`, and
 * `,,` as an escaped comma). Returns 0 and fills out, or -1 if there is none.
 */
int vm_name_from_cmdline(const char *cmdline, size_t len, char *out, size_t outlen);

struct names {
	char proc_root[128];   /* "/proc" */
	char cgroup_root[128]; /* "/sys/fs/cgroup" */
	struct hashmap vms;    /* tgid -> char[64]: VM display names */
	struct hashmap procs;  /* tgid -> char[64]: process names */
	struct hashmap cgroups; /* cgroup id -> char[256]: paths */
	struct hashmap vm_cgroups; /* tgid -> {pidns, path}: VMM processes' cgroups */
	int cgroup_scanned;	/* rescans left this refresh */
};

int names_init(struct names *n, const char *proc_root, const char *cgroup_root);
void names_free(struct names *n);
/* Call once per refresh: allows one cgroup rescan for ids not seen before. */
void names_refresh(struct names *n);
/* The VM's display name: `-name` from its command line, else its process name, else "pid <tgid>". */
const char *names_vm(struct names *n, __u32 tgid);
/* The process name (comm of the thread group leader), else "pid <tgid>". */
const char *names_process(struct names *n, __u32 tgid);
/* A thread's name and process (from /proc/<tid>); NULL if it is gone. Not cached. */
const char *names_thread(struct names *n, __u32 tid, __u32 *tgid, char *buf, size_t len);
/* The cgroup v2 path of id ("/system.slice/x.service"), or "" if unknown. */
const char *names_cgroup(struct names *n, __u64 id);
/* A VMM process's cgroup ("" if unknown) and PID namespace inode, read once from /proc. */
const char *names_vm_cgroup(struct names *n, __u32 tgid, __u64 *pidns);

/*
 * ---- containers.c: cgroups, PID namespaces, and the containers they name ----
 */

/*
 * Where cgroup v2 is mounted: /sys/fs/cgroup on a v2 host, /sys/fs/cgroup/unified
 * on systemd's hybrid layout, else the first cgroup2 line of mounts (a
 * /proc/self/mounts-like file; NULL: look at those places, then
 * /proc/self/mounts). false if there is none.
 */
bool cgroup2_root(const char *mounts, char *out, size_t len);
/*
 * The cgroup that a /proc/<tid>/cgroup text places the thread in: its v2 path
 * ("/system.slice/x.service"), or, where that is the root and a v1 hierarchy
 * has it elsewhere (v1 and hybrid hosts), "<controllers>:<path>" of that
 * hierarchy (name=systemd, else cpu, else the first). 0, or -1 if there is none.
 */
int cgroup_from_proc(const char *text, char *out, size_t len);
/* Thread tid's cgroup (as cgroup_from_proc) and PID namespace inode (0: unknown) from /proc. -1 if gone. */
int names_thread_cgroup(struct names *n, __u32 tid, char *buf, size_t len, uint64_t *pidns);

/* What a cgroup path says about who made it. */
struct container_ref {
	char runtime[16]; /* "containerd", "cri-o", "docker", "podman", "container" (a pod's, runtime
			     not named), "libvirt", "lxc"; "" if none */
	char id[72];	  /* the container's id (hex) or the machine's name */
	char pod[40];	  /* the Kubernetes pod's uid, "" if none */
	/* from the runtime's OCI bundle on this host (containerd's CRI, CRI-O), "" if not found */
	char pod_name[128], pod_namespace[64], name[64];
};

/*
 * Parse a cgroup path (as recorded; a v1 "<controllers>:" prefix is skipped):
 * Kubernetes pods and their containers (systemd and cgroupfs drivers), docker,
 * podman, CRI-O and containerd scopes, libvirt machines, LXC. true if it names one.
 */
bool cgroup_container(const char *path, struct container_ref *c);
/*
 * The Kubernetes names of c (pod, namespace, container) when its runtime's
 * bundle is on this host: <run>/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/config.json
 * (containerd) or <run>/containers/storage/overlay-containers/<id>/userdata/config.json
 * (CRI-O), <run> = $VCPUSTAT_RUN_DIR or /run. Cached by id; true if named.
 */
bool container_names(struct container_ref *c);
/* "pod <uid> containerd 0123456789ab", "docker 0123456789ab", "libvirt web": ids cut to 12 digits. */
const char *container_label(const struct container_ref *c, char *buf, size_t len);
/*
 * Does pattern select the cgroup path: a glob (fnmatch) of the whole path, or
 * of the container's id, pod uid or label that the path names, or the
 * start of the container's id (at least 4 digits: "4f2a")? Never for "".
 */
bool cgroup_matches(const char *pattern, const char *cgroup);
/* The same, the container also named by what a recording kept (recorded_container()). */
bool recorded_cgroup_matches(const char *pattern, const char *cgroup, const char *pod_name, const char *pod_namespace,
			     const char *name);
/*
 * The container of a cgroup path, named by this host's runtime, else by the
 * names a recording kept (pod_name, pod_namespace, name: "" if none).
 */
bool recorded_container(const char *cgroup, const char *pod_name, const char *pod_namespace, const char *name,
			struct container_ref *c);
/* The label of recorded_container(), or the cgroup path itself if it names none (buf). */
const char *recorded_container_label(const char *cgroup, const char *pod_name, const char *pod_namespace,
				     const char *name, char *buf, size_t len);

#endif /* VCPUSTAT_BASE_H */
