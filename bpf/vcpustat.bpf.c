// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat.bpf.c - tracepoint handlers that run the vCPU state machine
 * (include/vcpu_fsm.h) in the kernel and keep its results in maps.
 *
 * Every handler only turns its tracepoint into a struct vcpustat_event and
 * calls handle_event() (include/vcpustat_handler.h, shared with user-space
 * replay); the raw_tp injection program does the same with an event given by
 * user space, so tests exercise exactly this code.
 *
 * Tracepoints, and one optional fentry program (halt polling). Each
 * program's form is the one that needs least of the kernel
 * (docs/kernels.md): the scheduler's tracepoints tp_btf (typed task
 * pointers; vmlinux BTF); KVM's with scalar arguments raw_tp (no BTF of the
 * kvm module, which some kernels lack); kvm_entry, kvm_exit and the other
 * tracepoints whose fields the tracepoint itself computes, classic tp/
 * programs that read them at the offsets the tracepoint's format gives.
 * Built twice: the compat object (VCPUSTAT_NO_ATOMIC_OPS) is for kernels
 * without BPF's atomic or/and/fetch/cmpxchg (before 5.12); the loader picks
 * one by probing the kernel (user/live/compat.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "vcpustat_abi.h"
#include "core_fixes.bpf.h"


char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load. */
const volatile __u32 record_level = VCPUSTAT_LEVEL_NONE;
const volatile bool record_raw = false; /* also put every handled event in the ring buffer */
/*
 * Records go to this CPU's ring buffer (cpu_records) unless user space found
 * per-CPU rings unavailable and set this: then to the one shared ring
 * (records). Known at verification: the other branch is pruned.
 */
const volatile bool shared_ring = false;
/*
 * Task marks (docs/architecture.md, "The hot path"): the scheduler programs
 * in their _marks form test only the task structs, because every tracked
 * thread, and the thread running on a CPU where vCPUs wait, has an entry in
 * the task storage map marks. Set by user space before load.
 */
const volatile bool marks_mode = false;
/*
 * Wake the consumer only once this much data waits in a ring buffer (the
 * consumer also polls on a timer): a wakeup per record would cost more than
 * the record at high rates. Set to an eighth of each ring.
 */
const volatile __u64 wakeup_bytes = VCPUSTAT_RINGBUF_BYTES / 8;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_VCPUS);
	__type(key, __u32);
	__type(value, struct vcpustat_vcpu);
} vcpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_VMS);
	__type(key, __u32);
	__type(value, struct vcpustat_vm);
} vms SEC(".maps");

/*
 * Histograms (include/vcpustat_abi.h, struct vcpustat_hist_row): the rows,
 * which user space maps and reads; which rows are in use (key -> row index);
 * and the free rows' indices, all of them put there by user space at load.
 * The three have the same number of entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, VCPUSTAT_MAX_HISTS);
	__type(key, __u32);
	__type(value, struct vcpustat_hist_row);
} hist_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_HISTS);
	__type(key, struct vcpustat_hist_key);
	__type(value, __u32);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, VCPUSTAT_MAX_HISTS);
	__type(value, __u32);
} hist_free SEC(".maps");

/* Final state of vCPUs whose thread exited; user space reads and deletes them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_DEAD);
	__type(key, __u32);
	__type(value, struct vcpustat_vcpu);
} dead_vcpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VCPUSTAT_NR_LOST);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* The shared ring: used only when per-CPU rings are not (one page otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, VCPUSTAT_RINGBUF_BYTES);
} records SEC(".maps");

/*
 * One ring buffer per possible CPU: the handlers of a CPU reserve only in its
 * own ring, so CPUs never contend for a ring's lock and cache lines. The
 * loader creates the rings and puts them here (docs/architecture.md).
 */
struct ringbuf_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* the template; the loader sizes the rings */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* set to the number of possible CPUs before load */
	__type(key, __u32);
	__array(values, struct ringbuf_map);
} cpu_records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs before load */
	__type(key, __u32);
	__type(value, struct vcpustat_cpu);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_CULPRITS);
	__type(key, struct vcpustat_culprit_key);
	__type(value, struct vcpustat_culprit);
} culprits SEC(".maps");

/* Where each CPU is (placement), written by user space before it attaches. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs before load */
	__type(key, __u32);
	__type(value, struct vcpustat_cpu_topo);
} cpu_topo SEC(".maps");

/* vCPU-nanoseconds per (VM, CPU), closed intervals (placement). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_PLACES);
	__type(key, struct vcpustat_place_key);
	__type(value, __u64);
} vm_cpu SEC(".maps");

/* The VMM's threads that are no vCPU (include/vcpustat_abi.h), added by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_VMM_THREADS);
	__type(key, __u32);
	__type(value, struct vcpustat_vmm_thread);
} vmm_threads SEC(".maps");

/*
 * The exact set of tracked threads (vCPUs and VMM threads): one bit per
 * thread id, set while that thread is tracked (env_tid_tracked, whatever
 * program or injection added it). Sized by user space to cover pid_max.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536); /* words of 64 tids: pid_max <= 4194304 */
	__type(key, __u32);
	__type(value, __u64);
} vcpu_tids SEC(".maps");

/*
 * The hot path (struct vcpustat_hotpath, include/vcpustat_abi.h): everything
 * the scheduler handlers read before they know that an event concerns no
 * vCPU, in one page of its own (a custom data section is a map of its own,
 * page-aligned), read with plain loads: no helper call, no map lookup, no key
 * on the stack. On hosts where every kernel entry flushes the TLB (PTI
 * without PCID), each page a handler touches costs a page walk, ~20-45 ns,
 * a third to two thirds of an empty program (docs/architecture.md, "The hot
 * path").
 */
struct vcpustat_hotpath hotpath SEC(".data.hotpath");

/*
 * Exit details (include/vcpustat_abi.h): ports, MMIO addresses and MSRs in
 * one table, nested page faults by page in another, so that a guest touching
 * many pages cannot crowd the others out. Sized by user space.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_DETAILS);
	__type(key, struct vcpustat_detail_key);
	__type(value, struct vcpustat_detail);
} details SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_FAULT_PAGES);
	__type(key, struct vcpustat_detail_key);
	__type(value, struct vcpustat_detail);
} fault_pages SEC(".maps");

/* Guest address spaces (VCPUSTAT_DETAIL_CR3 rows, --address-spaces). Sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_GUEST_CR3S);
	__type(key, struct vcpustat_detail_key);
	__type(value, struct vcpustat_detail);
} guest_cr3s SEC(".maps");

/* The initial value of a new exit-detail row (all zero). */
const struct vcpustat_detail zero_detail = {};

/* Scratch space for a new vCPU record (too big for the 512-byte BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vcpustat_vcpu);
} scratch SEC(".maps");

/* ---- the storage the shared handler (vcpustat_handler.h) runs on ---- */

static __always_inline struct vcpustat_vcpu *env_vcpu_lookup(__u32 tid)
{
	return bpf_map_lookup_elem(&vcpus, &tid);
}

static __always_inline int env_vcpu_insert(__u32 tid, const struct vcpustat_vcpu *v)
{
	return bpf_map_update_elem(&vcpus, &tid, v, BPF_NOEXIST);
}

static __always_inline void env_vcpu_delete(__u32 tid)
{
	bpf_map_delete_elem(&vcpus, &tid);
}

static __always_inline int env_dead_insert(__u32 tid, const struct vcpustat_vcpu *v)
{
	return bpf_map_update_elem(&dead_vcpus, &tid, v, BPF_ANY);
}

static __always_inline struct vcpustat_vmm_thread *env_vmm_lookup(__u32 tid)
{
	return bpf_map_lookup_elem(&vmm_threads, &tid);
}

static __always_inline int env_vmm_insert(__u32 tid, const struct vcpustat_vmm_thread *t)
{
	return bpf_map_update_elem(&vmm_threads, &tid, t, BPF_NOEXIST);
}

static __always_inline void env_vmm_delete(__u32 tid)
{
	bpf_map_delete_elem(&vmm_threads, &tid);
}

static __always_inline const struct vcpustat_cpu_topo *env_cpu_topo(__u32 cpu)
{
	const struct vcpustat_cpu_topo *t = bpf_map_lookup_elem(&cpu_topo, &cpu);

	return t && t->valid ? t : NULL;
}

static __always_inline __u64 *env_place_get(const struct vcpustat_place_key *k)
{
	__u64 *ns = bpf_map_lookup_elem(&vm_cpu, k);
	__u64 zero = 0;

	if (ns)
		return ns;
	bpf_map_update_elem(&vm_cpu, k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&vm_cpu, k);
}

static __always_inline struct vcpustat_vm *env_vm_lookup(__u32 tgid)
{
	return bpf_map_lookup_elem(&vms, &tgid);
}

static __always_inline int env_vm_insert(__u32 tgid, const struct vcpustat_vm *vm)
{
	return bpf_map_update_elem(&vms, &tgid, vm, BPF_NOEXIST);
}

static __always_inline bool hist_key_eq(const struct vcpustat_hist_key *a, const struct vcpustat_hist_key *b)
{
	return a->tgid == b->tgid && a->reason == b->reason && a->kind == b->kind && a->isa == b->isa;
}

static __always_inline struct vcpustat_hist *env_hist_row(__u32 row, const struct vcpustat_hist_key *k)
{
	struct vcpustat_hist_row *r = bpf_map_lookup_elem(&hist_rows, &row);

	return r && hist_key_eq(&r->key, k) ? &r->hist : NULL;
}

/*
 * The row of key k, made from a free one if there is none: the new row's key
 * is written before the row is published in hists; two CPUs that make the
 * same key at once each take a row, and the one whose insert fails clears
 * its row and gives it back, then finds the other's.
 */
static __always_inline struct vcpustat_hist *env_hist_get(const struct vcpustat_hist_key *k, __u32 *row)
{
	struct vcpustat_hist_row *r;
	__u32 *in_use, n;
	int i;

	for (i = 0; i < 2; i++) {
		in_use = bpf_map_lookup_elem(&hists, k);
		if (in_use) {
			n = *in_use;
			r = bpf_map_lookup_elem(&hist_rows, &n);
			/* not k's: user space is freeing it (its VM has gone) */
			if (!r || !hist_key_eq(&r->key, k))
				return NULL;
			*row = n + 1;
			return &r->hist;
		}
		if (bpf_map_pop_elem(&hist_free, &n))
			return NULL;
		r = bpf_map_lookup_elem(&hist_rows, &n);
		if (!r)
			return NULL;
		r->key = *k;
		if (!bpf_map_update_elem(&hists, k, &n, BPF_NOEXIST)) {
			*row = n + 1;
			return &r->hist;
		}
		__builtin_memset(&r->key, 0, sizeof(r->key));
		bpf_map_push_elem(&hist_free, &n, 0);
	}
	return NULL;
}

static __always_inline struct vcpustat_culprit *env_culprit_get(const struct vcpustat_culprit_key *k,
								const struct vcpustat_culprit *init)
{
	struct vcpustat_culprit *c = bpf_map_lookup_elem(&culprits, k);

	if (c)
		return c;
	bpf_map_update_elem(&culprits, k, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&culprits, k);
}

static __always_inline struct vcpustat_detail *env_detail_get(const struct vcpustat_detail_key *k, bool create)
{
	void *map = k->kind == VCPUSTAT_DETAIL_PAGE_FAULT ? (void *)&fault_pages :
		    k->kind == VCPUSTAT_DETAIL_CR3	  ? (void *)&guest_cr3s :
							    (void *)&details;
	struct vcpustat_detail *d = bpf_map_lookup_elem(map, k);

	if (d || !create)
		return d;
	bpf_map_update_elem(map, k, &zero_detail, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, k);
}

static __always_inline struct vcpustat_cpu *env_cpu(__u32 cpu)
{
	return bpf_map_lookup_elem(&cpus, &cpu);
}

static __always_inline struct vcpustat_vcpu *env_scratch_vcpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/*
 * The ring this CPU records in (NULL: its slot is empty, which the loader
 * never leaves). The CPU running the program, not the event's: injected
 * events say any CPU but run on the caller's.
 */
static __always_inline void *record_ring(void)
{
	__u32 cpu;

	if (shared_ring)
		return &records;
	cpu = bpf_get_smp_processor_id();
	return bpf_map_lookup_elem(&cpu_records, &cpu);
}

static __always_inline void *ring_reserve(__u64 size)
{
	void *ring = record_ring();

	return ring ? bpf_ringbuf_reserve(ring, size, 0) : NULL;
}

/* Wake the consumer once an eighth of this ring waits (each ring on its own). */
static __always_inline void ring_submit(void *r)
{
	void *ring = record_ring();
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (ring && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

static __always_inline struct vcpustat_record *env_record_reserve(void)
{
	return ring_reserve(sizeof(struct vcpustat_record));
}

static __always_inline void env_record_submit(struct vcpustat_record *r)
{
	ring_submit(r);
}

static __always_inline void env_lost(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &what);

	if (n)
		*n += 1;
}

static __always_inline void env_current_comm(char comm[16])
{
	bpf_get_current_comm(comm, 16);
}

static __always_inline __u64 env_current_cgroup(void)
{
	return bpf_get_current_cgroup_id();
}

static __always_inline __u32 env_record_level(void)
{
	return record_level;
}

#ifdef VCPUSTAT_NO_ATOMIC_OPS
/*
 * The compat object (kernels without BPF's atomic or/and, before 5.12:
 * docs/kernels.md) keeps no bitmaps of tracked threads, which need them:
 * whether a thread is tracked is a lookup in the vCPU and VMM-thread maps,
 * and every scheduler event goes past the hot page's tests to that lookup.
 */
static __always_inline int tid_bit(__u32 tid)
{
	return env_vcpu_lookup(tid) || env_vmm_lookup(tid);
}

static __always_inline bool env_tid_maybe_tracked(__u32 tid)
{
	return true; /* the handler's own lookup decides */
}

static __always_inline bool hot_maybe_tracked(__u32 tid)
{
	return true;
}

static __always_inline bool hot_cpu_waiting(__u32 cpu)
{
	return true;
}

static __always_inline void env_tid_tracked(__u32 tid, bool tracked)
{
}

static __always_inline void env_cpu_waiting(__u32 cpu, bool waiting)
{
}
#else
static __always_inline __u64 *tid_word(__u32 tid)
{
	__u32 w = tid >> 6;

	return bpf_map_lookup_elem(&vcpu_tids, &w);
}

/* tid's bit in the exact bitmap of tracked threads: 1 set, 0 clear, -1 beyond the bitmap. */
static __always_inline int tid_bit(__u32 tid)
{
	__u64 *word = tid_word(tid);

	return word ? (int)((*word >> (tid & 63)) & 1) : -1;
}

/* The handler's question (vcpustat_handler.h), from the exact bitmap: a tid it does not cover may be tracked. */
static __always_inline bool env_tid_maybe_tracked(__u32 tid)
{
	return tid_bit(tid) != 0;
}

/* Might thread tid be tracked (a vCPU or a VMM thread)? false: certainly not (one load from the hot page). */
static __always_inline bool hot_maybe_tracked(__u32 tid)
{
	__u32 slot = tid & (VCPUSTAT_HOT_TID_SLOTS - 1);

	return (hotpath.maybe_tids[slot >> 6] >> (slot & 63)) & 1;
}

/*
 * The word of waiting_cpus holding cpu's bit; the caller has checked
 * cpu < VCPUSTAT_HOT_CPUS. The mask changes nothing then, but keeps the index
 * provably in bounds for verifiers that do not carry that check across a
 * 32-bit register copy (6.1's, in the KVM lab, rejected the program).
 */
static __always_inline __u64 *hot_cpu_word(__u32 cpu)
{
	__u32 word = cpu >> 6;

	barrier_var(word);
	word &= VCPUSTAT_HOT_CPUS / 64 - 1;
	return &hotpath.waiting_cpus[word];
}

/* Do vCPUs wait on this CPU's run queue? (one load from the hot page) */
static __always_inline bool hot_cpu_waiting(__u32 cpu)
{
	if (cpu >= VCPUSTAT_HOT_CPUS)
		return true;
	return (*hot_cpu_word(cpu) >> (cpu & 63)) & 1;
}

/* Is any tid of this hot slot still a tracked vCPU? (exact bitmap, up to pid_max) */
static __always_inline bool slot_tracked(__u32 slot)
{
	__u32 k;

	for (k = 0; k < 65536 / (VCPUSTAT_HOT_TID_SLOTS / 64); k++) {
		__u32 w = (slot >> 6) + k * (VCPUSTAT_HOT_TID_SLOTS / 64);
		__u64 *word = bpf_map_lookup_elem(&vcpu_tids, &w);

		if (!word)
			break;
		if (*word & (1ull << (slot & 63)))
			return true;
	}
	return false;
}

#endif /* !VCPUSTAT_NO_ATOMIC_OPS */

/*
 * marks: an entry per tracked thread (made where the thread is current, or
 * by user space through its pidfd) and per thread running on a CPU where
 * vCPUs wait (passed on at each switch there). Only its existence matters:
 * task_struct::bpf_storage is NULL for a thread with no task storage at all.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} marks SEC(".maps");

static __always_inline bool task_marked(struct task_struct *t)
{
	return t->bpf_storage;
}

static __noinline void mark_task(struct task_struct *t)
{
	if (t && t->pid && !t->bpf_storage)
		bpf_task_storage_get(&marks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

#ifndef VCPUSTAT_NO_ATOMIC_OPS
/*
 * The exact bit first, then the hot slot: a reader that sees the slot set
 * finds the exact bit too. Clearing rechecks the slot's other tids after
 * clearing it, so that a thread added concurrently with the same slot keeps
 * its bit (atomic operations are full barriers).
 */
static __always_inline void env_tid_tracked(__u32 tid, bool tracked)
{
	__u32 slot = tid & (VCPUSTAT_HOT_TID_SLOTS - 1);
	__u64 *word = tid_word(tid), bit = 1ull << (slot & 63);

	if (tracked) {
		if (word)
			__sync_fetch_and_or(word, 1ull << (tid & 63));
		__sync_fetch_and_or(&hotpath.maybe_tids[slot >> 6], bit);
		/* a thread tracked where it is current (a vCPU's first KVM event); user space marks seeds */
		if (marks_mode && tid == (__u32)bpf_get_current_pid_tgid())
			mark_task(bpf_get_current_task_btf());
		return;
	}
	if (word)
		__sync_fetch_and_and(word, ~(1ull << (tid & 63)));
	if (slot_tracked(slot))
		return;
	__sync_fetch_and_and(&hotpath.maybe_tids[slot >> 6], ~bit);
	if (slot_tracked(slot))
		__sync_fetch_and_or(&hotpath.maybe_tids[slot >> 6], bit);
}

#endif /* !VCPUSTAT_NO_ATOMIC_OPS */

static __always_inline void env_vcpu_new(struct vcpustat_vcpu *v)
{
	env_tid_tracked(v->tid, true);
}

static __always_inline void env_vcpu_gone(struct vcpustat_vcpu *v)
{
	env_tid_tracked(v->tid, false);
}

#ifndef VCPUSTAT_NO_ATOMIC_OPS
/* cpus[cpu].nr_waiting changed, under that CPU's run-queue lock. */
static __always_inline void env_cpu_waiting(__u32 cpu, bool waiting)
{
	__u64 bit = 1ull << (cpu & 63);

	if (cpu >= VCPUSTAT_HOT_CPUS)
		return;
	if (waiting)
		__sync_fetch_and_or(hot_cpu_word(cpu), bit);
	else
		__sync_fetch_and_and(hot_cpu_word(cpu), ~bit);
}
#endif

#include "vcpustat_handler.h"

/* An event about the current thread, with time and CPU filled in. */
static __always_inline void event_current(struct vcpustat_event *ev, __u64 type)
{
	__u64 id = bpf_get_current_pid_tgid();

	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->ts = bpf_ktime_get_ns();
	ev->cpu = bpf_get_smp_processor_id();
	ev->tid = (__u32)id;
	ev->tgid = id >> 32;
}

/*
 * An event about task p (not necessarily current). tp_btf gives BTF-typed
 * task pointers: plain loads (CO-RE-relocated, checked by the verifier) are
 * much cheaper than bpf_probe_read_kernel() on this hot path.
 */
static __always_inline void event_task(struct vcpustat_event *ev, __u64 type, struct task_struct *p)
{
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->ts = bpf_ktime_get_ns();
	ev->cpu = bpf_get_smp_processor_id();
	ev->tid = (__u32)p->pid;
	ev->tgid = (__u32)p->tgid;
}

/*
 * Capture mode: the event, complete with what the handler would read from the
 * current task (its name, its cgroup), goes to the ring buffer before it is
 * handled, so that user-space replay sees exactly what the kernel saw.
 */
static __always_inline void capture_event(struct vcpustat_event *ev)
{
	struct vcpustat_event *r;

	if (!record_raw)
		return;
	if (!ev->comm[0] && (ev->type == VCPUSTAT_EV_SWITCH || ev->type >= VCPUSTAT_EV_KVM_ENTRY))
		bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	if (ev->type == VCPUSTAT_EV_SWITCH && !ev->arg2)
		ev->arg2 = bpf_get_current_cgroup_id();
	r = ring_reserve(sizeof(*r));
	if (r) {
		__builtin_memcpy(r, ev, sizeof(*r));
		ring_submit(r);
	} else {
		env_lost(VCPUSTAT_LOST_RINGBUF);
	}
}

static __always_inline int run_event(struct vcpustat_event *ev)
{
	capture_event(ev);
	return handle_event(ev);
}

/* Is thread t tracked: a vCPU, or a VMM thread? */
static __always_inline bool is_tracked_task(struct task_struct *t)
{
	return tid_bit((__u32)t->pid) > 0;
}

/*
 * The scheduler handlers in two parts. The program itself only tests the hot
 * page (hotpath) and returns when the event concerns no vCPU, no vCPU waits
 * for this CPU and nothing is recorded for ordinary threads: it touches no
 * memory but the task structs the scheduler has just used and that one page,
 * and no stack. Everything else is in a subprogram (noinline), whose stack
 * (a private one on recent kernels) and maps are touched only when needed.
 */
static __noinline int switch_slow(struct task_struct *prev, struct task_struct *next, __u32 cpu, bool preempt)
{
	struct vcpustat_event ev;
	struct vcpustat_cpu *c;
	bool ordinary;

	/*
	 * Two ordinary threads while no vCPU waits for this CPU: the handler
	 * would change nothing; at level full only the host's record is due.
	 */
	c = env_cpu(cpu);
	ordinary = !is_tracked_task(prev) && !is_tracked_task(next) && (!c || !c->nr_waiting);
	if (ordinary && record_level < VCPUSTAT_LEVEL_FULL)
		return 0;
	event_task(&ev, VCPUSTAT_EV_SWITCH, prev);
	ev.tid2 = (__u32)next->pid;
	ev.tgid2 = (__u32)next->tgid;
	ev.arg0 = get_task_state(prev);
	ev.arg1 = preempt;
	if (!ordinary)
		return run_event(&ev);
	capture_event(&ev);
	emit_host_switch(&ev);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (!hot_maybe_tracked(prev->pid) && !hot_maybe_tracked(next->pid) && !hot_cpu_waiting(cpu) &&
	    !hotpath.level_full)
		return 0;
	return switch_slow(prev, next, cpu, preempt);
}

/*
 * Level vcpu: the thread running on cpu, where tracked thread p now waits
 * (REC_RUNNER: a recording's culprits). This CPU's own is current; another
 * one's is read through p's run queue, whose lock a wakeup holds (CFS: the
 * run queue is reached through p's cfs_rq; another class, or a kernel
 * without group scheduling's field, leaves it unknown until its next switch).
 */
static __always_inline void runner_of(struct task_struct *p, __u32 cpu, struct vcpustat_event *ev)
{
	struct task_struct *curr;
	struct rq *rq;

	if (record_level != VCPUSTAT_LEVEL_VCPU)
		return;
	if (cpu == (__u32)ev->cpu) {
		__u64 id = bpf_get_current_pid_tgid(); /* not the task's BTF pointer: that needs 5.11 */

		ev->tid2 = (__u32)id;
		ev->tgid2 = id >> 32;
		ev->arg2 = VCPUSTAT_RUNNER_KNOWN;
		return;
	}
	if (!bpf_core_field_exists(p->se.cfs_rq) || !p->se.cfs_rq)
		return;
	rq = p->se.cfs_rq->rq;
	if (!rq || rq->cpu != (int)cpu)
		return;
	curr = rq->curr;
	if (!curr)
		return;
	ev->tid2 = (__u32)curr->pid;
	ev->tgid2 = (__u32)curr->tgid;
	ev->arg2 = VCPUSTAT_RUNNER_KNOWN;
}

static __noinline int wakeup_slow(struct task_struct *p, __u64 type)
{
	struct vcpustat_event ev;
	bool vcpu = is_tracked_task(p);

	if (!vcpu && record_level < VCPUSTAT_LEVEL_FULL)
		return 0;
	event_task(&ev, type, p);
	ev.arg0 = get_task_cpu(p);
	if (vcpu) {
		runner_of(p, (__u32)ev.arg0, &ev);
		return run_event(&ev);
	}
	capture_event(&ev);
	emit_host_wakeup(&ev); /* all the handler would do for an ordinary thread */
	return 0;
}

/*
 * sched_wakeup and sched_wakeup_new: one body, the event type apart. Inlined
 * into each program, so that the hot-page test stays the first thing each
 * does, with no call before it.
 */
static __always_inline int sched_wakeup_common(struct task_struct *p, __u64 type)
{
	if (!hot_maybe_tracked(p->pid) && !hotpath.level_full)
		return 0;
	return wakeup_slow(p, type);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup, struct task_struct *p)
{
	return sched_wakeup_common(p, VCPUSTAT_EV_WAKEUP);
}

/*
 * sched_waking: in the waker's context (try_to_wake_up, under p->pi_lock),
 * where sched_wakeup may not be (a wakeup queued to an idle CPU fires there).
 * Only a vCPU's wake-up matters: the waker tells why it woke.
 */
static __noinline int waking_slow(struct task_struct *p)
{
	struct vcpustat_event ev;

	if (!is_tracked_task(p))
		return 0;
	event_task(&ev, VCPUSTAT_EV_WAKING, p);
	ev.tid2 = (__u32)bpf_get_current_pid_tgid();
	return run_event(&ev);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_sched_waking, struct task_struct *p)
{
	if (!hot_maybe_tracked(p->pid))
		return 0;
	return waking_slow(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_sched_wakeup_new, struct task_struct *p)
{
	return sched_wakeup_common(p, VCPUSTAT_EV_WAKEUP_NEW);
}

static __noinline int migrate_slow(struct task_struct *p, int dest_cpu)
{
	struct vcpustat_event ev;

	if (!is_tracked_task(p))
		return 0;
	event_task(&ev, VCPUSTAT_EV_MIGRATE, p);
	ev.arg0 = (__u32)dest_cpu;
	ev.arg1 = get_task_cpu(p);
	/*
	 * Pulled by this CPU's load balancer: current runs there. Pushed to
	 * another: p's run queue is still its origin's, not dest's: not known.
	 */
	runner_of(p, (__u32)dest_cpu, &ev);
	return run_event(&ev);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	if (!hot_maybe_tracked(p->pid))
		return 0;
	return migrate_slow(p, dest_cpu);
}

/*
 * ---- the same programs in marks mode (marks_mode) ----
 * Each tests only the task structs it is given: a thread with no task
 * storage at all (bpf_storage NULL) is neither tracked nor running where
 * vCPUs wait. Behind that test, the same work as above; then the mark
 * follows the CPU: after a switch where vCPUs wait, the thread that now runs
 * is marked (its own switch will be charged to them), and the one that ran
 * loses its mark unless it is tracked. A tracked thread woken to wait on a
 * CPU marks the thread running there. A waiting vCPU that the load balancer
 * moves does not (the destination's run queue is not locked here): until
 * the thread running there switches out, its switches are not seen, and the
 * wait is charged to the thread that runs when the next one is.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch_marks, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu;
	struct vcpustat_cpu *c;
	int ret;

	if (!task_marked(prev) && !task_marked(next))
		return 0;
	cpu = bpf_get_smp_processor_id();
	ret = switch_slow(prev, next, cpu, preempt);
	c = env_cpu(cpu);
	if (c && c->nr_waiting && !is_tracked_task(next))
		mark_task(next);
	if (task_marked(prev) && !is_tracked_task(prev))
		bpf_task_storage_delete(&marks, prev);
	return ret;
}

/* Linux 6.2+ (marks mode needs 6.9): a trusted pointer to the thread of a pid, for the remote runner */
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

/*
 * The thread running on p's CPU, where p now waits, gets the mark. A remote
 * wakeup holds that CPU's run-queue lock, so its running thread stays; the
 * pointer to it is reached by walking (untrusted), hence the lookup by pid.
 */
static __noinline void mark_runner(struct task_struct *p)
{
	__u32 cpu = get_task_cpu(p);
	struct vcpustat_cpu *c = env_cpu(cpu);
	struct task_struct *t;
	int pid;

	if (!c || !c->nr_waiting)
		return;
	if (cpu == bpf_get_smp_processor_id()) {
		mark_task(bpf_get_current_task_btf());
		return;
	}
	if (!bpf_core_field_exists(p->se.cfs_rq))
		return;
	pid = p->se.cfs_rq->rq->curr->pid;
	if (!pid)
		return;
	t = bpf_task_from_pid(pid);
	if (t) {
		mark_task(t);
		bpf_task_release(t);
	}
}

static __always_inline int sched_wakeup_marks(struct task_struct *p, __u64 type)
{
	int ret;

	if (!task_marked(p))
		return 0;
	ret = wakeup_slow(p, type);
	if (is_tracked_task(p))
		mark_runner(p);
	return ret;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup_marks, struct task_struct *p)
{
	return sched_wakeup_marks(p, VCPUSTAT_EV_WAKEUP);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_sched_wakeup_new_marks, struct task_struct *p)
{
	return sched_wakeup_marks(p, VCPUSTAT_EV_WAKEUP_NEW);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_sched_waking_marks, struct task_struct *p)
{
	if (!task_marked(p))
		return 0;
	return waking_slow(p);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_sched_migrate_task_marks, struct task_struct *p, int dest_cpu)
{
	if (!task_marked(p))
		return 0;
	return migrate_slow(p, dest_cpu);
}

/*
 * NUMA balancing moves a task (sched_move_numa) or swaps two
 * (sched_swap_numa): which of a vCPU's moves the kernel's balancer made,
 * rather than the load balancer or an affinity change. Kernels without
 * CONFIG_NUMA_BALANCING have neither tracepoint: the loader leaves these out.
 */
static __noinline int numa_move(struct task_struct *p, int from, int to)
{
	struct vcpustat_event ev;

	if (!is_tracked_task(p))
		return 0;
	event_task(&ev, VCPUSTAT_EV_NUMA_MOVE, p);
	ev.arg0 = (__u32)from;
	ev.arg1 = (__u32)to;
	return run_event(&ev);
}

SEC("tp_btf/sched_move_numa")
int BPF_PROG(on_sched_move_numa, struct task_struct *p, int src_cpu, int dst_cpu)
{
	if (!hot_maybe_tracked(p->pid))
		return 0;
	return numa_move(p, src_cpu, dst_cpu);
}

SEC("tp_btf/sched_swap_numa")
int BPF_PROG(on_sched_swap_numa, struct task_struct *src, int src_cpu, struct task_struct *dst, int dst_cpu)
{
	/* either may be NULL (the verifier says so from 6.x's BTF) */
	if (src && hot_maybe_tracked(src->pid))
		numa_move(src, src_cpu, dst_cpu);
	if (dst && hot_maybe_tracked(dst->pid))
		numa_move(dst, dst_cpu, src_cpu);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_sched_process_exit, struct task_struct *p)
{
	/* signal->live reaches 0 in do_exit() before this tracepoint when the group is dead. */
	bool group_dead = p->signal->live.counter == 0;
	struct vcpustat_event ev;

	if (!group_dead && (!hot_maybe_tracked(p->pid) || !is_tracked_task(p)))
		return 0;
	event_task(&ev, VCPUSTAT_EV_PROCESS_EXIT, p);
	ev.arg0 = group_dead;
	return run_event(&ev);
}

/*
 * A classic tp/ program runs as a filter in front of the tracepoint's perf
 * events: returning 0 drops the event for every perf user of it on the host
 * (perf_trace_run_bpf_submit). `perf kvm stat record`, `perf record -e
 * kvm:kvm_exit` and any other perf tool would then see no kvm_entry/kvm_exit
 * while vcpustat runs (found in the KVM lab, where perf kvm stat recorded 0
 * exits beside vcpustat). So these return 1: the event goes on to perf.
 * (tp_btf/raw_tp programs' return values are ignored.)
 */
#define TP_PASS 1

/*
 * The classic tp/ programs read their fields where this kernel's tracepoint
 * format puts them (tp_fields, struct vcpustat_tp_fields: set by the loader
 * from tracefs before load). That needs no BTF of the kvm module (Debian
 * 11's 5.10 has none) and follows the fields' moves between kernels
 * (kvm_exit's arguments changed in 5.16, kvm_page_fault's in 6.x): the
 * format is the tracepoint's stable ABI, the one perf reads. A field's
 * offset and size are constants to the verifier (frozen rodata).
 */
const volatile struct vcpustat_tp_fields tp_fields = {};

static __always_inline __u64 tp_field(void *ctx, __u16 off, __u16 size)
{
	__u64 v = 0;

	if (size && size <= sizeof(v))
		bpf_probe_read_kernel(&v, size, (char *)ctx + off);
	return v;
}

#define TP_FIELD(ctx, name) tp_field(ctx, tp_fields.name.off, tp_fields.name.size)

SEC("tp/kvm/kvm_entry")
int on_kvm_entry(void *ctx)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_KVM_ENTRY);
	ev.arg0 = tp_fields.entry_vcpu_id.size ? (__u32)TP_FIELD(ctx, entry_vcpu_id) : 0xffffffffu;
	run_event(&ev);
	return TP_PASS;
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit(void *ctx)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_KVM_EXIT);
	ev.arg0 = (__u32)TP_FIELD(ctx, exit_reason);
	ev.arg1 = (__u32)TP_FIELD(ctx, exit_isa);
	ev.arg2 = tp_fields.exit_vcpu_id.size ? (__u32)TP_FIELD(ctx, exit_vcpu_id) : 0xffffffffu;
	/* guest kernel mode, as perf-prof's %gsys tells it: a 64-bit guest RIP in the upper half */
	if (tp_fields.exit_guest_rip.size == 8 && (__s64)TP_FIELD(ctx, exit_guest_rip) < 0)
		ev.arg2 |= VCPUSTAT_EXIT_GSYS;
	run_event(&ev);
	return TP_PASS;
}

/*
 * --address-spaces: the guest's CR3 at each exit (the vCPU-state paper's
 * guest address spaces, seen from the host alone). A second program on
 * kvm_exit, attached after on_kvm_exit so that it runs after it on each exit
 * (a tracepoint calls its probes in the order they were attached; the perf
 * probe of the tp/ program is there first); it reads the vCPU that tp_btf
 * hands over:
 * - SVM with nested paging: the VMCB's save area holds the guest's CR3,
 *   saved by the #VMEXIT (struct vcpu_svm is kvm_amd's: CO-RE finds it in
 *   the module's BTF; absent, the branch is pruned at load);
 * - SVM with shadow paging (svm_npt false, from kvm_amd's npt parameter):
 *   KVM's copy, kvm_vcpu.arch.cr3, which every CR3 write updates (they exit);
 * - VMX: KVM's copy where it is valid (regs_avail has VCPU_EXREG_CR3); with
 *   EPT the CR3 is in the VMCS, which KVM reads only when it needs it:
 *   VCPUSTAT_CR3_UNKNOWN then.
 * The low 12 bits (PCID, cache flags) are cleared.
 */
const volatile bool svm_npt = true;

struct vmcb_save_area___vcpustat {
	__u64 cr3;
} __attribute__((preserve_access_index));

struct vmcb___vcpustat {
	struct vmcb_save_area___vcpustat save;
} __attribute__((preserve_access_index));

struct vcpu_svm___vcpustat {
	struct vmcb___vcpustat *vmcb;
} __attribute__((preserve_access_index));

static __always_inline __u64 guest_cr3(struct kvm_vcpu *vcpu, __u32 isa)
{
	if (isa == KVM_ISA_SVM && svm_npt) {
		struct vcpu_svm___vcpustat *svm = (void *)vcpu;
		struct vmcb___vcpustat *vmcb;

		if (!bpf_core_field_exists(svm->vmcb))
			return VCPUSTAT_CR3_UNKNOWN;
		vmcb = BPF_CORE_READ(svm, vmcb);
		if (!vmcb)
			return VCPUSTAT_CR3_UNKNOWN;
		return BPF_CORE_READ(vmcb, save.cr3) & ~0xfffULL;
	}
	if (isa == KVM_ISA_VMX) {
		__u64 bit;

		if (!bpf_core_enum_value_exists(enum kvm_reg, VCPU_EXREG_CR3))
			return VCPUSTAT_CR3_UNKNOWN;
		bit = bpf_core_enum_value(enum kvm_reg, VCPU_EXREG_CR3);
		if (bit > 63 || !(BPF_CORE_READ(vcpu, arch.regs_avail) & (1ULL << bit)))
			return VCPUSTAT_CR3_UNKNOWN;
	} else if (isa != KVM_ISA_SVM) {
		return VCPUSTAT_CR3_UNKNOWN;
	}
	return BPF_CORE_READ(vcpu, arch.cr3) & ~0xfffULL;
}

SEC("tp_btf/kvm_exit")
int BPF_PROG(on_kvm_exit_cr3, struct kvm_vcpu *vcpu, __u32 isa)
{
	struct vcpustat_event ev;

	/* vcpu may be NULL to the verifier (6.12's says so of tracepoint arguments) */
	if (!vcpu || !hot_maybe_tracked((__u32)bpf_get_current_pid_tgid()))
		return 0;
	event_current(&ev, VCPUSTAT_EV_GUEST_CR3);
	ev.arg0 = guest_cr3(vcpu, isa);
	return run_event(&ev);
}

SEC("raw_tp/kvm_userspace_exit")
int BPF_PROG(on_kvm_userspace_exit, __u32 reason, int errno)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_USERSPACE_EXIT);
	ev.arg0 = reason;
	ev.arg1 = (__u32)errno;
	return run_event(&ev);
}

SEC("raw_tp/kvm_fpu")
int BPF_PROG(on_kvm_fpu, int load)
{
	struct vcpustat_event ev;

	if (!load)
		return 0; /* leaving KVM_RUN: kvm_userspace_exit follows and says why */
	event_current(&ev, VCPUSTAT_EV_KVM_RUN);
	return run_event(&ev);
}

SEC("raw_tp/kvm_hypercall")
int BPF_PROG(on_kvm_hypercall, unsigned long nr, unsigned long a0, unsigned long a1)
{
	struct vcpustat_event ev;

	if (nr != VCPUSTAT_SYNC_HYPERCALL_NR)
		return 0;
	event_current(&ev, VCPUSTAT_EV_HYPERCALL);
	ev.arg0 = nr;
	ev.arg1 = a0;
	ev.arg2 = a1;
	return run_event(&ev);
}

/*
 * An event that fires on a vCPU's own thread and concerns nothing else: the
 * exit details (what the open exit accessed; the handler keeps it for the
 * kvm_entry: include/vcpustat_handler.h, on_exit_detail) and the halt's
 * (on_halt). Only tracked vCPUs count: one hot-page load decides for every
 * other thread.
 */
static __always_inline int vcpu_thread_event(__u64 type, __u64 arg0, __u64 arg1, __u64 arg2)
{
	struct vcpustat_event ev;

	if (!hot_maybe_tracked((__u32)bpf_get_current_pid_tgid()))
		return 0;
	event_current(&ev, type);
	ev.arg0 = arg0;
	ev.arg1 = arg1;
	ev.arg2 = arg2;
	return run_event(&ev);
}

/*
 * Nested virtualization: the L1 hypervisor in a vCPU runs its guest (L2),
 * and KVM reflects an exit of L2 back to L1. Only the moments matter: the
 * arguments (which differ between kernels) are not read.
 */
SEC("raw_tp/kvm_nested_vmenter")
int BPF_PROG(on_kvm_nested_vmenter)
{
	return vcpu_thread_event(VCPUSTAT_EV_NESTED_ENTER, 0, 0, 0);
}

SEC("raw_tp/kvm_nested_vmexit_inject")
int BPF_PROG(on_kvm_nested_vmexit_inject)
{
	return vcpu_thread_event(VCPUSTAT_EV_NESTED_EXIT, 0, 0, 0);
}

SEC("raw_tp/kvm_pio")
int BPF_PROG(on_kvm_pio, unsigned int rw, unsigned int port, unsigned int size, unsigned int count)
{
	return vcpu_thread_event(VCPUSTAT_EV_PIO, port, rw, size);
}

SEC("raw_tp/kvm_mmio")
int BPF_PROG(on_kvm_mmio, int type, int len, __u64 gpa)
{
	return vcpu_thread_event(VCPUSTAT_EV_MMIO, gpa, (__u32)type, (__u32)len);
}

SEC("raw_tp/kvm_msr")
int BPF_PROG(on_kvm_msr, unsigned int write, __u32 ecx, __u64 data, bool exception)
{
	return vcpu_thread_event(VCPUSTAT_EV_MSR, ecx, write, exception);
}

/* kvm_page_fault's arguments changed (a vcpu pointer came first from 6.x on): a classic tp/ program. */
SEC("tp/kvm/kvm_page_fault")
int on_kvm_page_fault(void *ctx)
{
	if (hot_maybe_tracked((__u32)bpf_get_current_pid_tgid()))
		vcpu_thread_event(VCPUSTAT_EV_PAGE_FAULT, TP_FIELD(ctx, pf_address), TP_FIELD(ctx, pf_error_code), 0);
	return TP_PASS;
}

/*
 * Wake reasons: a LAPIC accepted an interrupt (any VM's, any vector). In the
 * sender's thread, just before the kick that wakes a sleeping target; in the
 * target's own thread, once it woke, for its own LAPIC timer. Classic tp/
 * with CO-RE reads: the fields are stable, the arguments' types were not.
 */
SEC("tp/kvm/kvm_apic_accept_irq")
int on_kvm_apic_accept_irq(void *ctx)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_APIC_ACCEPT);
	ev.arg0 = (__u32)TP_FIELD(ctx, apic_apicid);
	ev.arg1 = (__u32)TP_FIELD(ctx, apic_vec);
	run_event(&ev);
	return TP_PASS;
}

/*
 * The vector KVM injects into the current vCPU before an entry: that of a
 * vCPU's first entry after a wake-up says what woke it (a guest timer's
 * vector, an IPI's, a device's). Only the first argument is read: it is the
 * vector in every kernel (6.x added two more after it).
 */
SEC("raw_tp/kvm_inj_virq")
int BPF_PROG(on_kvm_inj_virq, unsigned int vector)
{
	return vcpu_thread_event(VCPUSTAT_EV_INJ_VIRQ, vector, 0, 0);
}

/*
 * Halt polling. KVM has no tracepoint where an in-kernel halt begins, and
 * polls (or not) from there: kvm_vcpu_halt (virt/kvm/kvm_main.c, 5.17 on) is
 * that point, and reads what decides whether it polls: the vCPU's
 * halt_poll_ns, and on x86 the guest's MSR_KVM_POLL_CONTROL (bit 0 clear: the
 * guest polls itself, the host must not: kvm_arch_no_poll()).
 */
SEC("fentry/kvm_vcpu_halt")
int BPF_PROG(on_kvm_vcpu_halt, struct kvm_vcpu *vcpu)
{
	__u32 poll_ns = BPF_CORE_READ(vcpu, halt_poll_ns);
	bool poll = poll_ns != 0;

	if (bpf_core_field_exists(vcpu->arch.msr_kvm_poll_control) &&
	    !(BPF_CORE_READ(vcpu, arch.msr_kvm_poll_control) & 1))
		poll = false;
	return vcpu_thread_event(VCPUSTAT_EV_HALT, poll_ns, poll, 0);
}

SEC("raw_tp/kvm_vcpu_wakeup")
int BPF_PROG(on_kvm_vcpu_wakeup, __u64 ns, bool waited, bool valid)
{
	return vcpu_thread_event(VCPUSTAT_EV_HALT_END, ns, waited, valid);
}

SEC("raw_tp/kvm_halt_poll_ns")
int BPF_PROG(on_kvm_halt_poll_ns, bool grow, unsigned int vcpu_id, unsigned int new, unsigned int old)
{
	return vcpu_thread_event(VCPUSTAT_EV_HALT_POLL_NS, new, old, vcpu_id | (__u64)grow << 32);
}

/*
 * Injection: ctx is a struct vcpustat_event given by user space through
 * bpf_prog_test_run_opts (ctx_in, 96 bytes). Never attached.
 */
SEC("raw_tp")
int inject(__u64 *ctx)
{
	struct vcpustat_event ev;

	__builtin_memcpy(&ev, ctx, sizeof(ev));
	return run_event(&ev); /* captured like the others (seeding goes this way) */
}
