/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * core_fixes.bpf.h - kernel differences handled in one place with CO-RE.
 * The same compiled object loads on kernels before and after each change.
 * Callers pass BTF-typed pointers (tp_btf arguments): reads are direct loads.
 */
#ifndef VCPUSTAT_CORE_FIXES_BPF_H
#define VCPUSTAT_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* Linux 5.14 renamed task_struct::state to __state (commit 2f064a59a11f). */
struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u64 get_task_state(struct task_struct *t)
{
	struct task_struct___pre_5_14 *old = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return (__u64)old->state;
}

/*
 * The task's CPU: task_struct::thread_info.cpu on current x86 kernels;
 * task_struct::cpu on 5.3..5.15 (commit bcf9033e5449 moved it back in 5.16).
 */
struct task_struct___cpu_in_task {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 get_task_cpu(struct task_struct *t)
{
	struct task_struct___cpu_in_task *old = (void *)t;

	if (bpf_core_field_exists(old->cpu))
		return old->cpu;
	return t->thread_info.cpu;
}

#endif /* VCPUSTAT_CORE_FIXES_BPF_H */
