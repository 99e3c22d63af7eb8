// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * probe_fentry.bpf.c - can this kernel load an fentry program on
 * kvm_vcpu_halt? Loaded (never attached) by the loader before vcpustat's own
 * object, which holds such a program (halt polling): a kernel that refuses it
 * (no BPF trampolines, a function not traceable) then gets vcpustat without
 * that program instead of no vcpustat at all, at the cost of this tiny load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("fentry/kvm_vcpu_halt")
int BPF_PROG(probe_kvm_vcpu_halt)
{
	return 0;
}
