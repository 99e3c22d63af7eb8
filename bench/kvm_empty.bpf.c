// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kvm_empty.bpf.c - programs that do nothing, on the KVM tracepoints vcpustat
 * handles, each of the attach kind vcpustat uses there (classic tp/ for
 * kvm_entry, kvm_exit and kvm_page_fault, tp_btf/ for the others), so that
 * bench/kvm-event-cost.sh compares like with like.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* classic tracepoint programs return 1: the event goes on to perf, as vcpustat's do */
SEC("tp/kvm/kvm_entry")
int empty_kvm_entry(void *ctx)
{
	return 1;
}

SEC("tp/kvm/kvm_exit")
int empty_kvm_exit(void *ctx)
{
	return 1;
}

/* beside --address-spaces's on_kvm_exit_cr3, of its kind */
SEC("tp_btf/kvm_exit")
int BPF_PROG(empty_kvm_exit_btf, struct kvm_vcpu *vcpu, __u32 isa)
{
	return 0;
}

SEC("tp/kvm/kvm_page_fault")
int empty_kvm_page_fault(void *ctx)
{
	return 1;
}

SEC("tp_btf/kvm_pio")
int BPF_PROG(empty_kvm_pio, unsigned int rw, unsigned int port)
{
	return 0;
}

SEC("tp_btf/kvm_mmio")
int BPF_PROG(empty_kvm_mmio, int type, int len)
{
	return 0;
}

SEC("tp_btf/kvm_msr")
int BPF_PROG(empty_kvm_msr, unsigned int write, __u32 ecx)
{
	return 0;
}

/* The injection's baseline: a raw_tp program given the same 96-byte event, doing nothing with it. */
SEC("raw_tp")
int empty_inject(__u64 *ctx)
{
	return 0;
}

/*
 * The floor of a timing tracer (issue 38 item 1): every one reads a clock per
 * event, so the least a handler that measures anything can cost is an empty
 * program plus one bpf_ktime_get_ns(), its value kept (stored, as a real
 * tracer would store it). Of the same attach kinds as the empty ones.
 */
__u64 floor_ts;

SEC("tp/kvm/kvm_entry")
int floor_kvm_entry(void *ctx)
{
	floor_ts = bpf_ktime_get_ns();
	return 1;
}

SEC("tp/kvm/kvm_exit")
int floor_kvm_exit(void *ctx)
{
	floor_ts = bpf_ktime_get_ns();
	return 1;
}

/* The injection's floor: a raw_tp program given the same event, reading the clock once. */
SEC("raw_tp")
int floor_inject(__u64 *ctx)
{
	floor_ts = bpf_ktime_get_ns();
	return 0;
}
