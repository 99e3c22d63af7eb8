/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * names.h - turning numbers into names people recognize: vCPU states, exit
 * reasons, VM names (from the VMM's command line), process names and cgroup
 * paths (from /proc and /sys/fs/cgroup), with caches that survive refreshes.
 */
#ifndef VCPUSTAT_NAMES_H
#define VCPUSTAT_NAMES_H

#include <stddef.h>
#include <linux/types.h>
#include "hashmap.h"

/* "guest", "host", "preempted", "wait", "idle", "blocked", "unknown" */
const char *vcpu_state_name(unsigned int state);
/* The state whose name is s, or -1. */
int vcpu_state_from_name(const char *s);

/* "MSR_WRITE" (VMX), "hlt" (SVM); unknown codes as "VMX_123" / "SVM_0x7b". buf >= 24 bytes. */
const char *exit_reason_name(unsigned int isa, unsigned int reason, char *buf, size_t len);
/* "IO", "HLT", ... (KVM_EXIT_<NAME>); unknown as "KVM_EXIT_123". */
const char *userspace_exit_name(unsigned int reason, char *buf, size_t len);
/*
 * Back from those names (what recordings store) to the code: 0, or -ENOENT.
 * A VMX name gives the basic exit reason (the FAILED_VMENTRY flag is not in the name).
 */
int exit_reason_from_name(const char *name, unsigned int *isa, unsigned int *reason);
int userspace_exit_from_name(const char *name, unsigned int *reason);

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

#endif
