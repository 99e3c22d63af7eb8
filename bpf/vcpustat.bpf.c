// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat.bpf.c - tracepoint handlers that run the vCPU state machine
 * (include/vcpu_fsm.h) in the kernel and keep its results in maps.
 *
 * Every handler only turns its tracepoint into a struct vcpustat_event and
 * calls handle_event(); the raw_tp injection program does the same with an
 * event given by user space, so tests exercise exactly this code.
 *
 * Tracepoints only (no kprobes/fentry). Scheduler and the scalar KVM
 * tracepoints use tp_btf (cheap, no tracefs needed); kvm_entry/kvm_exit use
 * classic tp/ programs because their fields (exit reason, isa) are computed
 * by the tracepoint itself, and CO-RE handles their layout across kernels.
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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VCPUSTAT_MAX_HISTS);
	__type(key, struct vcpustat_hist_key);
	__type(value, struct vcpustat_hist);
} hists SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, VCPUSTAT_RINGBUF_BYTES);
} records SEC(".maps");

/* Scratch space for values too big for the 512-byte BPF stack. */
struct scratch {
	struct vcpustat_vcpu vcpu;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* The initial value of a new histogram (all zero). */
const struct vcpustat_hist zero_hist = {};

static __always_inline void lost_inc(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &what);

	if (n)
		*n += 1;
}

static __always_inline void emit(const struct vcpustat_event *ev, __u32 tid, __u32 tgid, __u32 vcpu,
				 __u8 type, __u8 from, __u8 to, __u32 arg0, __u32 arg1)
{
	struct vcpustat_record *r;

	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		lost_inc(VCPUSTAT_LOST_RINGBUF);
		return;
	}
	r->ts = ev->ts;
	r->tid = tid;
	r->tgid = tgid;
	r->type = type;
	r->cause = (__u8)ev->type;
	r->from = from;
	r->to = to;
	r->cpu = (__u16)ev->cpu;
	r->vcpu = (__u16)vcpu;
	r->arg0 = arg0;
	r->arg1 = arg1;
	bpf_ringbuf_submit(r, 0);
}

static __always_inline void emit_vcpu(const struct vcpustat_event *ev, const struct vcpustat_vcpu *v, __u8 type,
				      __u8 from, __u8 to, __u32 arg0, __u32 arg1)
{
	if (record_level >= VCPUSTAT_LEVEL_VCPU)
		emit(ev, v->tid, v->tgid, v->index, type, from, to, arg0, arg1);
}

static __always_inline void hist_add(__u32 tgid, const struct vcpu_fsm_sample *smp)
{
	struct vcpustat_hist_key key = {
		.tgid = tgid,
		.kind = (__u16)smp->kind,
		.isa = (__u16)smp->isa,
		.reason = smp->reason,
	};
	struct vcpustat_hist *h;
	__u64 ns = smp->ns, old;
	__u32 idx;
	int i;

	h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		bpf_map_update_elem(&hists, &key, &zero_hist, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h) {
			lost_inc(VCPUSTAT_LOST_HIST_FULL);
			return;
		}
	}
	idx = lat_hist_bucket(ns);
	if (idx >= LAT_HIST_BUCKETS)
		return;
	__sync_fetch_and_add(&h->bucket[idx], 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
	__sync_fetch_and_add(&h->count, 1);
	for (i = 0; i < 4; i++) {
		old = h->max_ns;
		if (ns <= old || __sync_val_compare_and_swap(&h->max_ns, old, ns) == old)
			break;
	}
}

/* Everything a state machine step produced: records and histogram samples. */
static __always_inline void apply_step(const struct vcpustat_event *ev, const struct vcpustat_vcpu *v,
				       const struct vcpu_fsm_step *s, __u32 arg0, __u32 arg1)
{
	if (s->sample[0].kind != VCPU_SAMPLE_NONE)
		hist_add(v->tgid, &s->sample[0]);
	if (s->sample[1].kind != VCPU_SAMPLE_NONE)
		hist_add(v->tgid, &s->sample[1]);
	if (s->from != s->to)
		emit_vcpu(ev, v, VCPUSTAT_REC_STATE, s->from, s->to, arg0, arg1);
	else if (ev->type == VCPUSTAT_EV_KVM_EXIT)
		emit_vcpu(ev, v, VCPUSTAT_REC_EXIT, s->from, s->to, arg0, arg1);
	if (s->pcpu_changed && ev->type == VCPUSTAT_EV_MIGRATE)
		emit_vcpu(ev, v, VCPUSTAT_REC_PCPU, s->to, s->to, v->fsm.pcpu, 0);
}

/*
 * The vCPU record of the current thread for a KVM event, creating it on the
 * thread's first KVM event (vCPU discovery). kvm_vcpu_id is the vcpu_id the
 * event carries, or -1.
 */
static __always_inline struct vcpustat_vcpu *vcpu_discover(struct vcpustat_event *ev, int kvm_vcpu_id)
{
	__u32 tid = (__u32)ev->tid, tgid = (__u32)ev->tgid, zero = 0;
	struct vcpustat_vcpu *v;
	struct vcpustat_vm *vm;
	struct scratch *sc;
	int idx;

	v = bpf_map_lookup_elem(&vcpus, &tid);
	if (v) {
		if (kvm_vcpu_id >= 0 && (v->index_src != VCPUSTAT_INDEX_KVM || v->index != (__u32)kvm_vcpu_id)) {
			v->index = (__u32)kvm_vcpu_id;
			v->index_src = VCPUSTAT_INDEX_KVM;
			emit_vcpu(ev, v, VCPUSTAT_REC_VCPU_NEW, v->fsm.state, v->fsm.state, VCPUSTAT_INDEX_KVM, 0);
		}
		return v;
	}

	vm = bpf_map_lookup_elem(&vms, &tgid);
	if (!vm) {
		struct vcpustat_vm init = { .discovered_ns = ev->ts, .tgid = tgid };

		bpf_map_update_elem(&vms, &tgid, &init, BPF_NOEXIST);
		vm = bpf_map_lookup_elem(&vms, &tgid);
		if (!vm) {
			lost_inc(VCPUSTAT_LOST_VM_FULL);
			return NULL;
		}
	}

	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return NULL;
	v = &sc->vcpu;
	__builtin_memset(v, 0, sizeof(*v));
	vcpu_fsm_init(&v->fsm, ev->ts);
	v->discovered_ns = ev->ts;
	v->tid = tid;
	v->tgid = tgid;
	if (ev->comm[0])
		__builtin_memcpy(v->comm, ev->comm, sizeof(v->comm));
	else
		bpf_get_current_comm(v->comm, sizeof(v->comm));
	if (kvm_vcpu_id >= 0) {
		v->index = (__u32)kvm_vcpu_id;
		v->index_src = VCPUSTAT_INDEX_KVM;
	} else if ((idx = vcpu_index_from_comm(v->comm)) >= 0) {
		v->index = (__u32)idx;
		v->index_src = VCPUSTAT_INDEX_COMM;
	} else {
		v->index = __sync_fetch_and_add(&vm->next_index, 1);
		v->index_src = VCPUSTAT_INDEX_ORDER;
	}
	if (bpf_map_update_elem(&vcpus, &tid, v, BPF_NOEXIST)) {
		lost_inc(VCPUSTAT_LOST_VCPU_FULL);
		return NULL;
	}
	emit_vcpu(ev, v, VCPUSTAT_REC_VCPU_NEW, VCPU_UNKNOWN, VCPU_UNKNOWN, v->index_src, 0);
	return bpf_map_lookup_elem(&vcpus, &tid);
}

static __always_inline void on_switch(struct vcpustat_event *ev)
{
	__u32 prev = (__u32)ev->tid, next = (__u32)ev->tid2;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;
	int runnable = ev->arg1 || ev->arg0 == 0;

	v = bpf_map_lookup_elem(&vcpus, &prev);
	if (v) {
		vcpu_fsm_switch_out(&v->fsm, ev->ts, runnable, &s);
		apply_step(ev, v, &s, (__u32)ev->arg0, 0);
	}
	v = bpf_map_lookup_elem(&vcpus, &next);
	if (v) {
		vcpu_fsm_switch_in(&v->fsm, ev->ts, (__u32)ev->cpu, &s);
		apply_step(ev, v, &s, (__u32)ev->cpu, 0);
	}
	if (record_level >= VCPUSTAT_LEVEL_FULL)
		emit(ev, prev, (__u32)ev->tgid, VCPUSTAT_VCPU_NONE, VCPUSTAT_REC_SWITCH, runnable, 0, next,
		     (__u32)ev->tgid2);
}

static __always_inline void on_wakeup(struct vcpustat_event *ev)
{
	__u32 tid = (__u32)ev->tid;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;

	v = bpf_map_lookup_elem(&vcpus, &tid);
	if (v) {
		vcpu_fsm_wakeup(&v->fsm, ev->ts, &s);
		apply_step(ev, v, &s, (__u32)ev->arg0, 0);
	}
	if (record_level >= VCPUSTAT_LEVEL_FULL)
		emit(ev, tid, (__u32)ev->tgid, VCPUSTAT_VCPU_NONE, VCPUSTAT_REC_WAKEUP, 0, 0, (__u32)ev->arg0, 0);
}

static __always_inline void on_migrate(struct vcpustat_event *ev)
{
	__u32 tid = (__u32)ev->tid;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;

	v = bpf_map_lookup_elem(&vcpus, &tid);
	if (!v)
		return;
	vcpu_fsm_migrate(&v->fsm, (__u32)ev->arg0, &s);
	apply_step(ev, v, &s, 0, 0);
}

static __always_inline void on_process_exit(struct vcpustat_event *ev)
{
	__u32 tid = (__u32)ev->tid, tgid = (__u32)ev->tgid;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;
	struct vcpustat_vm *vm;

	v = bpf_map_lookup_elem(&vcpus, &tid);
	if (v) {
		vcpu_fsm_process_exit(&v->fsm, ev->ts, &s);
		emit_vcpu(ev, v, VCPUSTAT_REC_VCPU_GONE, s.from, VCPU_UNKNOWN, 0, 0);
		if (bpf_map_update_elem(&dead_vcpus, &tid, v, BPF_ANY))
			lost_inc(VCPUSTAT_LOST_DEAD_FULL);
		bpf_map_delete_elem(&vcpus, &tid);
	}
	if (ev->arg0) {
		vm = bpf_map_lookup_elem(&vms, &tgid);
		if (vm)
			vm->exited_ns = ev->ts;
	}
}

static __always_inline void on_kvm_event(struct vcpustat_event *ev)
{
	int kvm_vcpu_id = -1;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;
	__u32 arg0 = 0, arg1 = 0;

	if (ev->type == VCPUSTAT_EV_KVM_ENTRY)
		kvm_vcpu_id = (int)ev->arg0;
	else if (ev->type == VCPUSTAT_EV_KVM_EXIT)
		kvm_vcpu_id = (int)ev->arg2;
	if (kvm_vcpu_id > 0xfffe) /* the field is absent (-1) or out of range */
		kvm_vcpu_id = -1;

	v = vcpu_discover(ev, kvm_vcpu_id);
	if (!v)
		return;

	switch (ev->type) {
	case VCPUSTAT_EV_KVM_ENTRY:
		vcpu_fsm_kvm_entry(&v->fsm, ev->ts, &s);
		if (v->sync_pending) {
			v->sync_pending = 0;
			if (record_level >= VCPUSTAT_LEVEL_VCPU)
				emit(ev, v->tid, v->tgid, v->index, VCPUSTAT_REC_SYNC_ENTRY, 0, 0,
				     (__u32)v->sync_key, (__u32)(v->sync_key >> 32));
		}
		break;
	case VCPUSTAT_EV_KVM_EXIT:
		vcpu_fsm_kvm_exit(&v->fsm, ev->ts, (__u32)ev->arg0, (__u32)ev->arg1, &s);
		arg0 = (__u32)ev->arg0;
		arg1 = (__u32)ev->arg1;
		break;
	case VCPUSTAT_EV_USERSPACE_EXIT:
		vcpu_fsm_userspace_exit(&v->fsm, ev->ts, (__u32)ev->arg0, &s);
		arg0 = (__u32)ev->arg0;
		break;
	case VCPUSTAT_EV_KVM_RUN:
		vcpu_fsm_run_enter(&v->fsm, ev->ts, &s);
		break;
	case VCPUSTAT_EV_HYPERCALL:
		if (ev->arg0 != VCPUSTAT_SYNC_HYPERCALL_NR)
			return;
		v->sync_key = ev->arg1;
		v->sync_pending = 1;
		if (record_level >= VCPUSTAT_LEVEL_VCPU)
			emit(ev, v->tid, v->tgid, v->index, VCPUSTAT_REC_HYPERCALL, 0, 0, (__u32)ev->arg1,
			     (__u32)(ev->arg1 >> 32));
		return;
	default:
		return;
	}
	apply_step(ev, v, &s, arg0, arg1);
}

/* The one entry point: real tracepoints and the injection program both end here. */
static __always_inline int handle_event(struct vcpustat_event *ev)
{
	switch (ev->type) {
	case VCPUSTAT_EV_SWITCH:
		on_switch(ev);
		break;
	case VCPUSTAT_EV_WAKEUP:
	case VCPUSTAT_EV_WAKEUP_NEW:
		on_wakeup(ev);
		break;
	case VCPUSTAT_EV_MIGRATE:
		on_migrate(ev);
		break;
	case VCPUSTAT_EV_PROCESS_EXIT:
		on_process_exit(ev);
		break;
	case VCPUSTAT_EV_KVM_ENTRY:
	case VCPUSTAT_EV_KVM_EXIT:
	case VCPUSTAT_EV_USERSPACE_EXIT:
	case VCPUSTAT_EV_KVM_RUN:
	case VCPUSTAT_EV_HYPERCALL:
		on_kvm_event(ev);
		break;
	}
	return 0;
}

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

/* An event about task p (not necessarily current). */
static __always_inline void event_task(struct vcpustat_event *ev, __u64 type, struct task_struct *p)
{
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->ts = bpf_ktime_get_ns();
	ev->cpu = bpf_get_smp_processor_id();
	ev->tid = (__u32)BPF_CORE_READ(p, pid);
	ev->tgid = (__u32)BPF_CORE_READ(p, tgid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct vcpustat_event ev;

	event_task(&ev, VCPUSTAT_EV_SWITCH, prev);
	ev.tid2 = (__u32)BPF_CORE_READ(next, pid);
	ev.tgid2 = (__u32)BPF_CORE_READ(next, tgid);
	ev.arg0 = get_task_state(prev);
	ev.arg1 = preempt;
	return handle_event(&ev);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup, struct task_struct *p)
{
	struct vcpustat_event ev;

	event_task(&ev, VCPUSTAT_EV_WAKEUP, p);
	ev.arg0 = get_task_cpu(p);
	return handle_event(&ev);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_sched_wakeup_new, struct task_struct *p)
{
	struct vcpustat_event ev;

	event_task(&ev, VCPUSTAT_EV_WAKEUP_NEW, p);
	ev.arg0 = get_task_cpu(p);
	return handle_event(&ev);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct vcpustat_event ev;

	event_task(&ev, VCPUSTAT_EV_MIGRATE, p);
	ev.arg0 = (__u32)dest_cpu;
	ev.arg1 = get_task_cpu(p);
	return handle_event(&ev);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_sched_process_exit, struct task_struct *p)
{
	struct vcpustat_event ev;

	event_task(&ev, VCPUSTAT_EV_PROCESS_EXIT, p);
	/* signal->live reaches 0 in do_exit() before this tracepoint when the group is dead. */
	ev.arg0 = BPF_CORE_READ(p, signal, live.counter) == 0;
	return handle_event(&ev);
}

SEC("tp/kvm/kvm_entry")
int on_kvm_entry(struct trace_event_raw_kvm_entry *ctx)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_KVM_ENTRY);
	ev.arg0 = BPF_CORE_READ(ctx, vcpu_id);
	return handle_event(&ev);
}

SEC("tp/kvm/kvm_exit")
int on_kvm_exit(struct trace_event_raw_kvm_exit *ctx)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_KVM_EXIT);
	ev.arg0 = BPF_CORE_READ(ctx, exit_reason);
	ev.arg1 = BPF_CORE_READ(ctx, isa);
	if (bpf_core_field_exists(ctx->vcpu_id))
		ev.arg2 = BPF_CORE_READ(ctx, vcpu_id);
	else
		ev.arg2 = 0xffffffffu;
	return handle_event(&ev);
}

SEC("tp_btf/kvm_userspace_exit")
int BPF_PROG(on_kvm_userspace_exit, __u32 reason, int errno)
{
	struct vcpustat_event ev;

	event_current(&ev, VCPUSTAT_EV_USERSPACE_EXIT);
	ev.arg0 = reason;
	ev.arg1 = (__u32)errno;
	return handle_event(&ev);
}

SEC("tp_btf/kvm_fpu")
int BPF_PROG(on_kvm_fpu, int load)
{
	struct vcpustat_event ev;

	if (!load)
		return 0; /* leaving KVM_RUN: kvm_userspace_exit follows and says why */
	event_current(&ev, VCPUSTAT_EV_KVM_RUN);
	return handle_event(&ev);
}

SEC("tp_btf/kvm_hypercall")
int BPF_PROG(on_kvm_hypercall, unsigned long nr, unsigned long a0, unsigned long a1)
{
	struct vcpustat_event ev;

	if (nr != VCPUSTAT_SYNC_HYPERCALL_NR)
		return 0;
	event_current(&ev, VCPUSTAT_EV_HYPERCALL);
	ev.arg0 = nr;
	ev.arg1 = a0;
	ev.arg2 = a1;
	return handle_event(&ev);
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
	return handle_event(&ev);
}
