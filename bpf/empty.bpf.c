// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * empty.bpf.c - programs that do nothing, attached to the same tracepoints as
 * vcpustat's hot handlers. bench/ measures them in the same run as the real
 * handlers: the cost any BPF sched tracer pays on this kernel.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(empty_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(empty_sched_wakeup, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(empty_sched_waking, struct task_struct *p)
{
	return 0;
}
