// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sched_floor.bpf.c - the floor of a timing tracer on the scheduler's
 * tracepoints (issue 38 item 1): an empty program plus one clock read whose
 * value is kept, so that the read is not optimized away. Every tracer that
 * times a switch or a wake-up pays at least this; handler-cost measures it in
 * the same run as vcpustat's handlers and bpf/empty.bpf.c's empty programs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__u64 floor_ts;

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	floor_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_sched_wakeup, struct task_struct *p)
{
	floor_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(floor_sched_waking, struct task_struct *p)
{
	floor_ts = bpf_ktime_get_ns();
	return 0;
}
