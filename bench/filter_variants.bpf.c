// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * filter_variants.bpf.c - where the cost of a scheduler handler's non-vCPU
 * path goes: one pair of programs (sched_switch, sched_wakeup) per variant,
 * each adding one ingredient to an empty program. bench/filter-variants runs
 * them one variant at a time, next to the empty pair (bench/RESULTS.md,
 * issue 15). None of them changes anything: the branches they take for
 * ordinary threads return 0; the rest only keeps the compiler honest.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 level; /* like vcpustat's record_level: 0 */
__u64 sink;

/* a 4 KiB bitmap in an array map (inlined lookups, the key on the stack), as vcpu_tids */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, __u64);
} tids SEC(".maps");

/* one entry per CPU, as vcpustat's cpus map */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64[34]);
} cpus SEC(".maps");

/* a page of global data read with plain loads, as vcpustat's .data.hotpath */
struct {
	__u64 tids[256];
	__u64 cpus[128];
} hot SEC(".data.hot");

struct big {
	__u64 x[24];
};

/* never taken for ordinary threads; needs > 64 bytes of stack (a private stack) */
static __noinline int slow(struct task_struct *t)
{
	struct big b;

	if (!t)
		return 0;
	__builtin_memset(&b, 0, sizeof(b));
	b.x[0] = bpf_ktime_get_ns();
	b.x[1] = t->tgid;
	bpf_probe_read_kernel(&b.x[2], 8, &t->flags);
	__sync_fetch_and_add(&sink, b.x[0] + b.x[1] + b.x[2] + b.x[5]);
	return 0;
}

static __always_inline bool map_bit(__u32 tid)
{
	__u32 w = tid >> 6;
	__u64 *word = bpf_map_lookup_elem(&tids, &w);

	return word && (*word >> (tid & 63)) & 1;
}

static __always_inline bool hot_bit(__u32 tid)
{
	__u32 slot = tid & 16383;

	return (hot.tids[slot >> 6] >> (slot & 63)) & 1;
}

static __always_inline bool hot_cpu(__u32 cpu)
{
	return cpu >= 8192 || (hot.cpus[cpu >> 6] >> (cpu & 63)) & 1;
}

/* A pid that no thread has (pid_max <= 4194304): keeps the loads without changing anything. */
#define NO_PID 0x7fffffff

#define SWITCH(name)                                                                                             \
	SEC("tp_btf/sched_switch")                                                                               \
	int BPF_PROG(sw_##name, bool preempt, struct task_struct *prev, struct task_struct *next)
#define WAKEUP(name) SEC("tp_btf/sched_wakeup") int BPF_PROG(wk_##name, struct task_struct *p)

/* nothing */
SWITCH(empty)
{
	return 0;
}
WAKEUP(empty)
{
	return 0;
}

/* read the tids of the threads (the task structs the scheduler has just used) */
SWITCH(pid)
{
	if (prev->pid == NO_PID || next->pid == NO_PID)
		return slow(prev);
	return 0;
}
WAKEUP(pid)
{
	if (p->pid == NO_PID)
		return slow(p);
	return 0;
}

/* ... and a const volatile (.rodata): the verifier knows its value, the load stays */
SWITCH(rodata)
{
	if (prev->pid == NO_PID || next->pid == NO_PID || level >= 2)
		return slow(prev);
	return 0;
}
WAKEUP(rodata)
{
	if (p->pid == NO_PID || level >= 2)
		return slow(p);
	return 0;
}

/* ... or one bitmap word per thread from an array map, as on main */
SWITCH(map)
{
	if (map_bit(prev->pid) || map_bit(next->pid))
		return slow(prev);
	return 0;
}
WAKEUP(map)
{
	if (map_bit(p->pid))
		return slow(p);
	return 0;
}

/* ... or this CPU's entry of an array map */
SWITCH(cpumap)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *c = bpf_map_lookup_elem(&cpus, &cpu);

	if (prev->pid == NO_PID || (c && c[1]))
		return slow(prev);
	return 0;
}

/* ... or a helper call before the filter: the clock */
SWITCH(ktime)
{
	if (prev->pid == NO_PID || bpf_ktime_get_ns() == 0)
		return slow(prev);
	return 0;
}

/* main's filter (before issue 15): two map words, this CPU's entry, .rodata, in one function */
SWITCH(main)
{
	__u32 cpu = bpf_get_smp_processor_id();
	bool a = map_bit(prev->pid), b = map_bit(next->pid);
	__u64 *c = bpf_map_lookup_elem(&cpus, &cpu);
	struct big big;

	if (!a && !b && (!c || !c[1]) && level < 2)
		return 0;
	__builtin_memset(&big, 0, sizeof(big)); /* the handler's event on the stack */
	big.x[0] = bpf_ktime_get_ns();
	__sync_fetch_and_add(&sink, big.x[0] + big.x[3]);
	return 0;
}
WAKEUP(main)
{
	struct big big;

	if (!map_bit(p->pid) && level < 2)
		return 0;
	__builtin_memset(&big, 0, sizeof(big));
	big.x[0] = bpf_ktime_get_ns();
	__sync_fetch_and_add(&sink, big.x[0] + big.x[3]);
	return 0;
}

/* the filter since issue 15: one page of global data, plain loads, the rest in a subprogram */
SWITCH(hotpage)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (!hot_bit(prev->pid) && !hot_bit(next->pid) && !hot_cpu(cpu))
		return 0;
	return slow(prev);
}
WAKEUP(hotpage)
{
	if (!hot_bit(p->pid))
		return 0;
	return slow(p);
}

/*
 * Memory the scheduler has just used instead of a page of our own: a task's
 * bpf_storage pointer (NULL unless some BPF task storage holds an entry for
 * it: vcpustat's for tracked threads) and this CPU's run queue length (no
 * thread waits when it is at most 1; reached through prev's cfs_rq, as the
 * kernel has no data symbols in kallsyms here); the hot page only past those.
 */
SWITCH(storage)
{
	if (!prev->bpf_storage && !next->bpf_storage) {
		/* this CPU's run queue, through prev's (the scheduler's own pointers, just used) */
		struct cfs_rq *cfs = prev->se.cfs_rq;

		if (cfs && cfs->rq->nr_running <= 1)
			return 0;
	}
	if (!hot_bit(prev->pid) && !hot_bit(next->pid) && !hot_cpu(bpf_get_smp_processor_id()))
		return 0;
	return slow(prev);
}
WAKEUP(storage)
{
	if (!p->bpf_storage)
		return 0;
	if (!hot_bit(p->pid))
		return 0;
	return slow(p);
}

/* the tasks' storage pointers alone: the floor of any filter */
SWITCH(storage_only)
{
	if (!prev->bpf_storage && !next->bpf_storage)
		return 0;
	return slow(prev);
}

/* the run queue's length through prev's cfs_rq, no hot page: what reaching it costs */
SWITCH(rqlen)
{
	struct cfs_rq *cfs = prev->se.cfs_rq;

	if (prev->pid == NO_PID || (cfs && cfs->rq->nr_running > 100000))
		return slow(prev);
	return 0;
}
