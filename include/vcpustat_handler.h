/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vcpustat_handler.h - what happens on each event: vCPU discovery, the state
 * machine step (vcpu_fsm.h), histograms, culprits, and ring-buffer records.
 *
 * Shared by the BPF programs (bpf/vcpustat.bpf.c: maps and helpers) and by
 * user-space replay (user/record/replay.c: hash tables), so a capture replayed
 * offline produces exactly what the kernel produced live. Pure C.
 *
 * The includer defines, before including this file, these functions over
 * its storage (all static inline; "insert" never overwrites an existing key):
 *
 *   struct vcpustat_vcpu *env_vcpu_lookup(__u32 tid);
 *   int   env_vcpu_insert(__u32 tid, const struct vcpustat_vcpu *v);   0 or <0 (full)
 *   void  env_vcpu_delete(__u32 tid);
 *   int   env_dead_insert(__u32 tid, const struct vcpustat_vcpu *v);   0 or <0 (full)
 *   struct vcpustat_vm *env_vm_lookup(__u32 tgid);
 *   int   env_vm_insert(__u32 tgid, const struct vcpustat_vm *vm);
 *   struct vcpustat_hist *env_hist_get(const struct vcpustat_hist_key *k, __u32 *row);
 *                                                                      lookup or create zeroed; *row: its row
 *                                                                      index + 1 for the vCPU's cache (0: none)
 *   struct vcpustat_hist *env_hist_row(__u32 row, const struct vcpustat_hist_key *k);
 *                                                                      row index row (from *row - 1) if k
 *                                                                      still owns it, else NULL
 *   struct vcpustat_culprit *env_culprit_get(const struct vcpustat_culprit_key *k,
 *                                            const struct vcpustat_culprit *init);
 *   struct vcpustat_cpu *env_cpu(__u32 cpu);                           NULL if out of range
 *   struct vcpustat_vcpu *env_scratch_vcpu(void);                      room to build a new vCPU
 *   struct vcpustat_record *env_record_reserve(void);                  NULL if full
 *   void  env_record_submit(struct vcpustat_record *r);
 *   void  env_lost(__u32 what);                                        count a VCPUSTAT_LOST_*
 *   void  env_current_comm(char comm[16]);                             the current thread's name
 *   __u64 env_current_cgroup(void);                                    its cgroup v2 id
 *   __u32 env_record_level(void);                                      enum vcpustat_record_level
 *   void  env_vcpu_new(struct vcpustat_vcpu *v);                       a vCPU was created
 *   void  env_vcpu_gone(struct vcpustat_vcpu *v);                      ... is about to be deleted
 *   void  env_cpu_waiting(__u32 cpu, bool waiting);                   cpu's nr_waiting became (non)zero
 *   struct vcpustat_detail *env_detail_get(const struct vcpustat_detail_key *k, bool create);
 *                                                                      lookup (and create zeroed), NULL if none
 *   struct vcpustat_vmm_thread *env_vmm_lookup(__u32 tid);
 *   int   env_vmm_insert(__u32 tid, const struct vcpustat_vmm_thread *t);  0 or <0 (full)
 *   void  env_vmm_delete(__u32 tid);
 *   void  env_tid_tracked(__u32 tid, bool tracked);                   a VMM thread was added or is about to go
 *   bool  env_tid_maybe_tracked(__u32 tid);                           false: tid is certainly neither a vCPU nor
 *                                                                      a VMM thread (no lookup needed)
 *   const struct vcpustat_cpu_topo *env_cpu_topo(__u32 cpu);           NULL if unknown
 *   __u64 *env_place_get(const struct vcpustat_place_key *k);          lookup or create zeroed, NULL if full
 */
#ifndef VCPUSTAT_HANDLER_H
#define VCPUSTAT_HANDLER_H

#include "vcpustat_abi.h"

#ifndef HANDLER_INLINE
#define HANDLER_INLINE static inline __attribute__((always_inline))
#endif

/*
 * Make the compiler forget what it knows of x, so that a bounds check that
 * follows is made, on the register that is then used: when it knew the
 * bound already (a histogram bucket below 8 is the value itself), clang
 * dropped the check and indexed with a reloaded copy, whose bound the 6.1
 * verifier (the KVM lab's) does not know ("unbounded memory access").
 */
#define HANDLER_OPAQUE(x) __asm__ volatile("" : "+r"(x))
/*
 * (Such an x is 64 bits wide: a 32-bit one is compared as a zero-extended
 * copy, and a verifier before 5.11 does not carry the copy's bound back to
 * the register that indexes, as 5.10's did not.)
 */

/*
 * The atomic operations beyond a plain add: an atomic maximum (compare and
 * swap) and an add that returns the old value. BPF has them from Linux 5.12
 * (BPF_ATOMIC's fetch forms and cmpxchg); the compat BPF object, built with
 * VCPUSTAT_NO_ATOMIC_OPS for older kernels (docs/kernels.md), does without:
 * there a maximum raised by two CPUs at the same moment may keep the
 * smaller, and two vCPUs of one VM numbered by order of discovery at the
 * same moment may get the same number.
 */
HANDLER_INLINE void handler_max(__u64 *p, __u64 v)
{
#ifdef VCPUSTAT_NO_ATOMIC_OPS
	if (v > *p)
		*p = v;
#else
	__u64 old;
	int i;

	for (i = 0; i < 4; i++) { /* lock-free, retried a few times under contention */
		old = *p;
		if (v <= old || __sync_val_compare_and_swap(p, old, v) == old)
			break;
	}
#endif
}

HANDLER_INLINE __u32 handler_fetch_inc(__u32 *p)
{
#ifdef VCPUSTAT_NO_ATOMIC_OPS
	return (*p)++;
#else
	return __sync_fetch_and_add(p, 1);
#endif
}

HANDLER_INLINE void emit_at(const struct vcpustat_event *ev, __u64 ts, __u32 tid, __u32 tgid, __u32 vcpu, __u8 type,
			    __u8 from, __u8 to, __u32 arg0, __u32 arg1)
{
	struct vcpustat_record *r = env_record_reserve();

	if (!r) {
		env_lost(VCPUSTAT_LOST_RINGBUF);
		return;
	}
	r->ts = ts;
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
	env_record_submit(r);
}

HANDLER_INLINE void emit(const struct vcpustat_event *ev, __u32 tid, __u32 tgid, __u32 vcpu, __u8 type, __u8 from,
			 __u8 to, __u32 arg0, __u32 arg1)
{
	emit_at(ev, ev->ts, tid, tgid, vcpu, type, from, to, arg0, arg1);
}

/*
 * A record about vCPU v, stamped on the vCPU's own clock: never before its
 * last state change, so one vCPU's records are in time order even when an
 * event came from a CPU whose clock is slightly behind.
 */
HANDLER_INLINE void emit_vcpu(const struct vcpustat_event *ev, const struct vcpustat_vcpu *v, __u8 type, __u8 from,
			      __u8 to, __u32 arg0, __u32 arg1)
{
	if (env_record_level() >= VCPUSTAT_LEVEL_VCPU)
		emit_at(ev, ev->ts > v->fsm.since ? ev->ts : v->fsm.since, v->tid, v->tgid, v->index, type, from, to,
			arg0, arg1);
}

/*
 * The way of v->hist_slot where a (kind, reason) row's index is cached: the
 * top bits of a multiplicative (Fibonacci) hash, so that the few rows one
 * entry touches (an exit's reason, a wake-up's reason and vector) seldom
 * share a way.
 */
HANDLER_INLINE __u32 hist_cache_way(__u32 kind, __u32 reason)
{
	return ((reason ^ (kind << 16)) * 2654435761u) >> (32 - VCPUSTAT_HIST_CACHE_BITS);
}

/*
 * A latency sample of vCPU v into its VM's histogram of the sample's (kind,
 * ISA, reason): found through v's cache of row indices when it holds the
 * row (the common case: a vCPU exits again and again for the same few
 * reasons), else looked up (or made) by key, and then cached.
 */
HANDLER_INLINE void hist_add(struct vcpustat_vcpu *v, const struct vcpu_fsm_sample *smp)
{
	struct vcpustat_hist_key key = {
		.tgid = v->tgid,
		.kind = (__u16)smp->kind,
		.isa = (__u16)smp->isa,
		.reason = smp->reason,
	};
	struct vcpustat_hist *h = NULL;
	__u64 ns = smp->ns;
	__u64 way = hist_cache_way(smp->kind, smp->reason), idx;
	__u32 row;

	HANDLER_OPAQUE(way);
	if (way >= VCPUSTAT_HIST_CACHE)
		return;
	row = v->hist_slot[way];
	if (row)
		h = env_hist_row(row - 1, &key);
	if (!h) {
		h = env_hist_get(&key, &row);
		if (!h) {
			env_lost(VCPUSTAT_LOST_HIST_FULL);
			return;
		}
		v->hist_slot[way] = row;
	}
	idx = lat_hist_bucket(ns);
	HANDLER_OPAQUE(idx);
	if (idx >= LAT_HIST_BUCKETS)
		return;
	__sync_fetch_and_add(&h->bucket[idx], 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
	__sync_fetch_and_add(&h->count, 1);
	if (smp->gsys)
		__sync_fetch_and_add(&h->gsys, 1);
	handler_max(&h->max_ns, ns);
}

/* ---- exit details (docs/record-abi.md, "Exit details") ---- */

HANDLER_INLINE void detail_add(__u32 tgid, __u8 kind, __u8 access, __u64 addr, __u64 ns)
{
	struct vcpustat_detail_key key = { .tgid = tgid, .kind = kind, .access = access, .pad = 0, .addr = addr };
	struct vcpustat_detail_key other = key;
	struct vcpustat_detail *d;

	other.addr = VCPUSTAT_DETAIL_OTHER;
	d = env_detail_get(&key, false);
	if (!d) {
		/*
		 * A new key: its (VM, kind, access) catch-all row is made first,
		 * while there is room, so that keys a full table cannot hold
		 * are counted there rather than lost.
		 */
		env_detail_get(&other, true);
		d = env_detail_get(&key, true);
		if (!d)
			d = env_detail_get(&other, false);
		if (!d) {
			env_lost(VCPUSTAT_LOST_DETAIL_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&d->count, 1);
	__sync_fetch_and_add(&d->sum_ns, ns);
	handler_max(&d->max_ns, ns);
}

/*
 * An access the open exit made (kvm_pio, kvm_mmio, kvm_msr, kvm_page_fault
 * between a kvm_exit and its kvm_entry): kept in the vCPU until the entry.
 * Only the first of each table: an MMIO read that user space completes
 * traces kvm_mmio twice (unsatisfied, then the value), one exit.
 */
HANDLER_INLINE void on_exit_detail(const struct vcpustat_event *ev)
{
	struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);

	if (!v || !(v->fsm.flags & VCPU_F_IN_EXIT))
		return;
	switch (ev->type) {
	case VCPUSTAT_EV_PAGE_FAULT:
		if (v->fault_pending)
			return;
		v->fault_pending = 1;
		v->fault_addr = ev->arg0 & ~0xfffULL;
		/* x86 page-fault error code: bit 1 write, bit 4 instruction fetch */
		v->fault_access = (ev->arg1 & 0x10) ? VCPUSTAT_ACCESS_FETCH :
				  (ev->arg1 & 0x2)  ? VCPUSTAT_ACCESS_WRITE :
						      VCPUSTAT_ACCESS_READ;
		emit_vcpu(ev, v, VCPUSTAT_REC_DETAIL, VCPUSTAT_DETAIL_PAGE_FAULT, v->fault_access, (__u32)v->fault_addr,
			  (__u32)(v->fault_addr >> 32));
		return;
	case VCPUSTAT_EV_PIO:
		if (v->detail_kind)
			return;
		v->detail_kind = VCPUSTAT_DETAIL_PIO;
		v->detail_access = ev->arg1 ? VCPUSTAT_ACCESS_WRITE : VCPUSTAT_ACCESS_READ;
		break;
	case VCPUSTAT_EV_MMIO:
		if (v->detail_kind)
			return;
		v->detail_kind = VCPUSTAT_DETAIL_MMIO;
		v->detail_access = ev->arg1 == 2 ? VCPUSTAT_ACCESS_WRITE : VCPUSTAT_ACCESS_READ;
		break;
	case VCPUSTAT_EV_MSR:
		if (v->detail_kind)
			return;
		v->detail_kind = VCPUSTAT_DETAIL_MSR;
		v->detail_access = ev->arg1 ? VCPUSTAT_ACCESS_WRITE : VCPUSTAT_ACCESS_READ;
		break;
	default:
		return;
	}
	v->detail_addr = ev->arg0;
	emit_vcpu(ev, v, VCPUSTAT_REC_DETAIL, v->detail_kind, v->detail_access, (__u32)v->detail_addr,
		  (__u32)(v->detail_addr >> 32));
}

/*
 * The guest's address space at an exit (EV_GUEST_CR3, after the exit's own
 * event has closed the guest interval): the guest time the vCPU gathered
 * since its last one, and one exit, are charged to this CR3 (a row of the
 * VM's guest_cr3s table). The guest time a vCPU had before its first is
 * charged there too: it is counted from its discovery, as its guest state.
 */
HANDLER_INLINE void on_guest_cr3(const struct vcpustat_event *ev)
{
	struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);
	__u64 guest;

	if (!v)
		return;
	guest = v->fsm.ns[VCPU_GUEST];
	detail_add(v->tgid, VCPUSTAT_DETAIL_CR3, VCPUSTAT_ACCESS_READ, ev->arg0, guest - v->cr3_guest_ns);
	v->cr3_guest_ns = guest;
	/* recordings: the value at the exit's time (the state it began), so that it covers the interval's end */
	if ((ev->arg0 | 1) != v->cr3_last) {
		v->cr3_last = ev->arg0 | 1;
		if (env_record_level() >= VCPUSTAT_LEVEL_VCPU)
			emit_at(ev, v->fsm.since, v->tid, v->tgid, v->index, VCPUSTAT_REC_GUEST_CR3, 0, 0, (__u32)ev->arg0,
				(__u32)(ev->arg0 >> 32));
	}
}

/* kvm_entry or the thread's exit (before the state machine closes the exit): charge its details. */
HANDLER_INLINE void exit_details_close(struct vcpustat_vcpu *v, __u64 now)
{
	__u64 ns;

	if (!v->detail_kind && !v->fault_pending && !v->nested_pending)
		return;
	ns = vcpu_fsm_elapsed(v->fsm.exit_since, now);
	if (v->nested_pending)
		detail_add(v->tgid, VCPUSTAT_DETAIL_NESTED, v->nested_reflected ? VCPUSTAT_ACCESS_L1 : VCPUSTAT_ACCESS_L0,
			   v->nested_reason | (__u64)v->nested_isa << 32, ns);
	v->nested_pending = 0;
	if (v->detail_kind)
		detail_add(v->tgid, v->detail_kind, v->detail_access, v->detail_addr, ns);
	if (v->fault_pending)
		detail_add(v->tgid, VCPUSTAT_DETAIL_PAGE_FAULT, v->fault_access, v->fault_addr, ns);
	v->detail_kind = 0;
	v->fault_pending = 0;
}

/*
 * Nested virtualization. The L1 hypervisor running in the vCPU ran its guest
 * (EV_NESTED_ENTER, with the vCPU in host mode: KVM emulates the VMRUN or
 * VMLAUNCH): from there the vCPU's guest time is L2's, until KVM reflects an
 * exit to L1 (EV_NESTED_EXIT). Exits in between are exits from L2: handled
 * by KVM (L0), or reflected to L1 if EV_NESTED_EXIT comes before their
 * kvm_entry (exit_details_close charges them).
 */
HANDLER_INLINE void on_nested(const struct vcpustat_event *ev)
{
	struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);
	__u8 l2 = ev->type == VCPUSTAT_EV_NESTED_ENTER;

	if (!v || v->in_l2 == l2)
		return;
	if (l2) {
		v->l2_mark_ns = v->fsm.ns[VCPU_GUEST];
	} else {
		v->l2_guest_ns += v->fsm.ns[VCPU_GUEST] - v->l2_mark_ns;
		if (v->nested_pending)
			v->nested_reflected = 1;
	}
	v->in_l2 = l2;
	emit_vcpu(ev, v, VCPUSTAT_REC_NESTED, (__u8)v->fsm.state, (__u8)v->fsm.state, l2 ? 2 : 1, 0);
}

/* Everything a state-machine step produced: histogram samples and records. */
/* ---- placement: where vCPUs ran (vm_cpu), moves across nodes and caches, SMT siblings ---- */

/* The vCPU moved from CPU `from` to `to`: across a node, a last-level cache? */
HANDLER_INLINE void place_moved(struct vcpustat_vcpu *v, __u32 from, __u32 to)
{
	const struct vcpustat_cpu_topo *a = env_cpu_topo(from), *b;

	if (!a)
		return;
	b = env_cpu_topo(to);
	if (!b)
		return;
	if (a->node >= 0 && b->node >= 0 && a->node != b->node)
		v->cross_node++;
	if (a->llc >= 0 && b->llc >= 0 && a->llc != b->llc)
		v->cross_llc++;
}

/* Two vCPUs (of VMs a and b) shared a core for ns: vCPU-time beside another VM's vCPU, or beside its own VM's. */
HANDLER_INLINE void smt_add(__u32 a, __u32 b, __u64 ns)
{
	struct vcpustat_vm *vm = env_vm_lookup(a);

	if (a == b) {
		if (vm)
			__sync_fetch_and_add(&vm->smt_same_ns, 2 * ns);
		return;
	}
	if (vm)
		__sync_fetch_and_add(&vm->smt_other_ns, ns);
	vm = env_vm_lookup(b);
	if (vm)
		__sync_fetch_and_add(&vm->smt_other_ns, ns);
}

/* vCPU v comes on cpu at ts. */
HANDLER_INLINE void occupant_begin(struct vcpustat_cpu *c, struct vcpustat_vcpu *v, __u64 ts)
{
	c->occ_since = ts;
	c->occ_tgid = v->tgid;
	c->occ_tid = v->tid;
	v->oncpu_since = ts;
}

/*
 * The vCPU on cpu leaves it at ts: its time there, and its overlap with the
 * vCPU on its SMT sibling (that one's earlier overlaps were charged when they
 * ended: each overlap is charged by the first of the two to leave).
 */
HANDLER_INLINE void occupant_end(struct vcpustat_cpu *c, __u32 cpu, __u64 ts)
{
	struct vcpustat_place_key key = { .tgid = c->occ_tgid, .cpu = cpu };
	const struct vcpustat_cpu_topo *t;
	__u64 since = c->occ_since, *ns;

	c->occ_tid = 0;
	if (ts <= since)
		return;
	ns = env_place_get(&key);
	if (ns)
		__sync_fetch_and_add(ns, ts - since);
	else
		env_lost(VCPUSTAT_LOST_PLACE_FULL);
	t = env_cpu_topo(cpu);
	if (t && t->sibling != VCPU_PCPU_NONE && t->sibling != cpu) {
		struct vcpustat_cpu *sib = env_cpu(t->sibling);

		if (sib && sib->occ_tid) {
			__u64 from = sib->occ_since > since ? sib->occ_since : since;

			if (ts > from)
				smt_add(key.tgid, sib->occ_tgid, ts - from);
		}
	}
}

HANDLER_INLINE void apply_step(const struct vcpustat_event *ev, struct vcpustat_vcpu *v,
			       const struct vcpu_fsm_step *s, __u32 arg0, __u32 arg1)
{
	if (s->pcpu_changed && s->pcpu_from != VCPU_PCPU_NONE)
		place_moved(v, s->pcpu_from, v->fsm.pcpu);
	if (s->sample[0].kind != VCPU_SAMPLE_NONE)
		hist_add(v, &s->sample[0]);
	if (s->sample[1].kind != VCPU_SAMPLE_NONE)
		hist_add(v, &s->sample[1]);
	if (s->from != s->to)
		emit_vcpu(ev, v, VCPUSTAT_REC_STATE, (__u8)s->from, (__u8)s->to, arg0, arg1);
	else if (ev->type == VCPUSTAT_EV_KVM_EXIT)
		emit_vcpu(ev, v, VCPUSTAT_REC_EXIT, (__u8)s->from, (__u8)s->to, arg0, arg1);
	else if (ev->type == VCPUSTAT_EV_USERSPACE_EXIT)
		emit_vcpu(ev, v, VCPUSTAT_REC_UEXIT, (__u8)s->from, (__u8)s->to, arg0, arg1);
	else if (ev->type == VCPUSTAT_EV_KVM_RUN && s->sample[1].kind == VCPU_SAMPLE_USERSPACE_EXIT)
		emit_vcpu(ev, v, VCPUSTAT_REC_RUN, (__u8)s->from, (__u8)s->to, s->sample[1].reason, 0);
	if (s->pcpu_changed && ev->type != VCPUSTAT_EV_SWITCH)
		emit_vcpu(ev, v, VCPUSTAT_REC_PCPU, (__u8)s->to, (__u8)s->to, v->fsm.pcpu, 0);
}

/*
 * A vCPU in POLL whose KVM poll loop gave up before this event: POLL ends
 * where the loop did (vcpu_fsm_poll_expire), recorded at that time.
 */
HANDLER_INLINE void poll_expire(const struct vcpustat_event *ev, struct vcpustat_vcpu *v)
{
	struct vcpu_fsm_step s;

	if ((v->fsm.flags & VCPU_F_POLLING) && vcpu_fsm_poll_expire(&v->fsm, ev->ts, &s) &&
	    env_record_level() >= VCPUSTAT_LEVEL_VCPU)
		emit_at(ev, s.at, v->tid, v->tgid, v->index, VCPUSTAT_REC_STATE, (__u8)s.from, (__u8)s.to, 0, 0);
}

/* ---- level full: the host's side of every switch and wakeup ---- */

/* SWITCH record; to = 1: prev is exiting (TASK_DEAD, EXIT_ZOMBIE or EXIT_DEAD). */
HANDLER_INLINE void emit_host_switch(const struct vcpustat_event *ev)
{
	int runnable = ev->arg1 || ev->arg0 == 0;

	if (env_record_level() >= VCPUSTAT_LEVEL_FULL)
		emit(ev, (__u32)ev->tid, (__u32)ev->tgid, VCPUSTAT_VCPU_NONE, VCPUSTAT_REC_SWITCH, (__u8)runnable,
		     (ev->arg0 & 0xb0) ? 1 : 0, (__u32)ev->tid2, (__u32)ev->tgid2);
}

HANDLER_INLINE void emit_host_wakeup(const struct vcpustat_event *ev)
{
	if (env_record_level() >= VCPUSTAT_LEVEL_FULL)
		emit(ev, (__u32)ev->tid, (__u32)ev->tgid, VCPUSTAT_VCPU_NONE, VCPUSTAT_REC_WAKEUP, 0, 0,
		     (__u32)ev->arg0, 0);
}

/* ---- culprits: who ran while vCPUs waited ---- */

/*
 * Level vcpu: who runs on cpu while tracked threads wait there (REC_RUNNER),
 * so that a recording tells the culprits without every switch of the host
 * (level full): a record when the first one starts waiting, at each switch
 * while any waits, and when the last one stops.
 */
HANDLER_INLINE void emit_runner(const struct vcpustat_event *ev, __u32 cpu, __u32 tid, __u32 tgid, __u8 what)
{
	if (env_record_level() == VCPUSTAT_LEVEL_VCPU)
		emit(ev, tid, tgid, VCPUSTAT_VCPU_NONE, VCPUSTAT_REC_RUNNER, what, 0, cpu, 0);
}

/*
 * The first thread waiting on cpu began to at ev: who runs there, as the
 * event saw it. A switch notes the thread it switches in once it is done
 * (on_switch).
 */
HANDLER_INLINE void runner_begin(const struct vcpustat_event *ev, __u32 cpu)
{
	if (ev->type == VCPUSTAT_EV_SWITCH)
		return;
	if ((ev->type == VCPUSTAT_EV_WAKEUP || ev->type == VCPUSTAT_EV_WAKEUP_NEW || ev->type == VCPUSTAT_EV_MIGRATE) &&
	    (ev->arg2 & VCPUSTAT_RUNNER_KNOWN))
		emit_runner(ev, cpu, (__u32)ev->tid2, (__u32)ev->tgid2, VCPUSTAT_RUNNER_IS);
	else
		emit_runner(ev, cpu, 0, 0, VCPUSTAT_RUNNER_UNKNOWN);
}

/*
 * A thread (a vCPU, or a VMM thread: key_tgid | VCPUSTAT_CULPRIT_VMM) starts
 * waiting on cpu's run queue at ev; *wait_cpu, *wait_slot: where, for
 * waiter_end().
 */
HANDLER_INLINE void waiter_begin(const struct vcpustat_event *ev, __u32 tid, __u32 key_tgid, __u32 cpu,
				 __u32 *wait_cpu, __u32 *wait_slot)
{
	struct vcpustat_cpu *c = env_cpu(cpu);
	__u32 i;

	if (!c)
		return;
	for (i = 0; i < VCPUSTAT_WAIT_SLOTS; i++) {
		if (c->waiting[i].tid)
			continue;
		c->waiting[i].tgid = key_tgid;
		c->waiting[i].since = ev->ts;
		c->waiting[i].tid = tid;
		if (!c->nr_waiting++) {
			env_cpu_waiting(cpu, true);
			runner_begin(ev, cpu);
		}
		*wait_cpu = cpu;
		*wait_slot = i;
		return;
	}
	env_lost(VCPUSTAT_LOST_WAIT_SLOTS);
}

/* The thread no longer waits at ev (it runs, sleeps, exits or moves). */
HANDLER_INLINE void waiter_end(const struct vcpustat_event *ev, __u32 tid, __u32 *wait_cpu, __u32 *wait_slot)
{
	__u32 slot = *wait_slot, cpu = *wait_cpu;
	struct vcpustat_cpu *c;

	if (cpu == VCPU_PCPU_NONE)
		return;
	c = env_cpu(cpu);
	*wait_cpu = VCPU_PCPU_NONE;
	if (!c || slot >= VCPUSTAT_WAIT_SLOTS || c->waiting[slot].tid != tid)
		return;
	c->waiting[slot].tid = 0;
	if (c->nr_waiting && !--c->nr_waiting) {
		env_cpu_waiting(cpu, false);
		emit_runner(ev, cpu, 0, 0, VCPUSTAT_RUNNER_NONE);
	}
}

/* The vCPU starts waiting on cpu's run queue at ev. */
HANDLER_INLINE void wait_begin(const struct vcpustat_event *ev, struct vcpustat_vcpu *v, __u32 cpu)
{
	waiter_begin(ev, v->tid, v->tgid, cpu, &v->wait_cpu, &v->wait_slot);
}

/* The vCPU no longer waits (it runs, sleeps, exits or moves). */
HANDLER_INLINE void wait_end(const struct vcpustat_event *ev, struct vcpustat_vcpu *v)
{
	waiter_end(ev, v->tid, &v->wait_cpu, &v->wait_slot);
}

/*
 * A switch on this CPU at ev->ts: the thread that ran since curr_since kept
 * every waiting vCPU from running; charge the overlap to it, per VM.
 */
HANDLER_INLINE void charge_culprits(const struct vcpustat_event *ev, struct vcpustat_cpu *c)
{
	struct vcpustat_culprit init = {};
	__u32 i;

	if (!c->nr_waiting)
		return;
	init.tgid = (__u32)ev->tgid;
	init.cgroup_id = ev->arg2 ? ev->arg2 : env_current_cgroup();
	if (ev->comm[0])
		__builtin_memcpy(init.comm, ev->comm, sizeof(init.comm));
	else
		env_current_comm(init.comm);
	for (i = 0; i < VCPUSTAT_WAIT_SLOTS; i++) {
		struct vcpustat_culprit_key key;
		struct vcpustat_culprit *cu;
		__u64 from;

		if (!c->waiting[i].tid)
			continue;
		from = c->waiting[i].since > c->curr_since ? c->waiting[i].since : c->curr_since;
		if (ev->ts <= from)
			continue;
		key.vm_tgid = c->waiting[i].tgid;
		key.tid = (__u32)ev->tid;
		cu = env_culprit_get(&key, &init);
		if (!cu) {
			env_lost(VCPUSTAT_LOST_CULPRIT_FULL);
			continue;
		}
		__sync_fetch_and_add(&cu->ns, ev->ts - from);
	}
}

/*
 * ---- the VMM's other threads (vmm_threads map): time on a CPU, waiting ----
 * Each closed interval goes to the thread and to its VM's totals (kept in
 * the vms map, so that a window still counts a thread that exited in it).
 */
HANDLER_INLINE void vmm_close(struct vcpustat_vmm_thread *t, __u64 ts)
{
	struct vcpustat_vm *vm;
	__u64 ns, k = t->kind;

	if (ts <= t->since || (t->state != VCPUSTAT_VMM_T_RUN && t->state != VCPUSTAT_VMM_T_WAIT))
		return;
	ns = ts - t->since;
	vm = env_vm_lookup(t->vm_tgid);
	HANDLER_OPAQUE(k);
	if (k >= VCPUSTAT_NR_VMM_KINDS)
		return;
	if (t->state == VCPUSTAT_VMM_T_RUN) {
		t->run_ns += ns;
		if (vm)
			__sync_fetch_and_add(&vm->vmm_run_ns[k], ns);
	} else {
		t->wait_ns += ns;
		if (vm)
			__sync_fetch_and_add(&vm->vmm_wait_ns[k], ns);
	}
}

/*
 * A VMM thread's state change as a record: at level vcpu only, where the
 * host's threads are not recorded (level full has them all, these among them).
 */
HANDLER_INLINE void vmm_emit(const struct vcpustat_event *ev, const struct vcpustat_vmm_thread *t, __u8 state,
			     __u32 cpu)
{
	if (env_record_level() == VCPUSTAT_LEVEL_VCPU)
		emit(ev, t->tid, t->vm_tgid, VCPUSTAT_VCPU_NONE, VCPUSTAT_REC_VMM, t->kind, state, cpu, 0);
}

/* The thread's state is now `state` from ev->ts on; waiting: on cpu's run queue. */
HANDLER_INLINE void vmm_enter(const struct vcpustat_event *ev, struct vcpustat_vmm_thread *t, __u8 state, __u32 cpu)
{
	__u64 ts = ev->ts;

	vmm_close(t, ts);
	waiter_end(ev, t->tid, &t->wait_cpu, &t->wait_slot);
	t->state = state;
	t->since = ts;
	vmm_emit(ev, t, state, cpu);
	if (state == VCPUSTAT_VMM_T_WAIT)
		waiter_begin(ev, t->tid, t->vm_tgid | VCPUSTAT_CULPRIT_VMM, cpu, &t->wait_cpu, &t->wait_slot);
}

/* The thread exits, or becomes a vCPU: its last interval closes, it leaves the map. */
HANDLER_INLINE void vmm_forget(const struct vcpustat_event *ev, struct vcpustat_vmm_thread *t, __u32 tid)
{
	__u64 ts = ev->ts;

	if (t->state != VCPUSTAT_VMM_T_UNKNOWN)
		vmm_emit(ev, t, VCPUSTAT_VMM_T_UNKNOWN, (__u32)ev->cpu);
	vmm_close(t, ts);
	waiter_end(ev, tid, &t->wait_cpu, &t->wait_slot);
	env_tid_tracked(tid, false);
	env_vmm_delete(tid);
}

/* User space found a VMM thread of a VM (EV_VMM_SEED). */
HANDLER_INLINE void on_vmm_seed(const struct vcpustat_event *ev)
{
	struct vcpustat_vmm_thread t = {};
	__u32 tid = (__u32)ev->tid;

	if (!tid || ev->arg0 >= VCPUSTAT_NR_VMM_KINDS || env_vcpu_lookup(tid) || env_vmm_lookup(tid))
		return;
	t.tid = tid;
	t.vm_tgid = (__u32)ev->tgid;
	t.kind = (__u8)ev->arg0;
	t.wait_cpu = VCPU_PCPU_NONE;
	__builtin_memcpy(t.comm, ev->comm, sizeof(t.comm));
	if (env_vmm_insert(tid, &t)) {
		env_lost(VCPUSTAT_LOST_VMM_FULL);
		return;
	}
	env_tid_tracked(tid, true);
}

/* ---- events ---- */

/* Create the vCPU of thread ev->tid with the given index (source src). */
HANDLER_INLINE struct vcpustat_vcpu *vcpu_create(const struct vcpustat_event *ev, int index, __u32 src)
{
	__u32 tid = (__u32)ev->tid, tgid = (__u32)ev->tgid;
	struct vcpustat_vmm_thread *t;
	struct vcpustat_vcpu *v;
	struct vcpustat_vm *vm;
	int idx;

	vm = env_vm_lookup(tgid);
	if (!vm) {
		struct vcpustat_vm init = { .discovered_ns = ev->ts, .tgid = tgid };

		env_vm_insert(tgid, &init);
		vm = env_vm_lookup(tgid);
		if (!vm) {
			env_lost(VCPUSTAT_LOST_VM_FULL);
			return NULL;
		}
	}
	t = env_vmm_lookup(tid);
	if (t)
		vmm_forget(ev, t, tid); /* it was taken for a VMM thread: it is a vCPU (its VM keeps its time) */

	v = env_scratch_vcpu();
	if (!v)
		return NULL;
	__builtin_memset(v, 0, sizeof(*v));
	vcpu_fsm_init(&v->fsm, ev->ts);
	v->discovered_ns = ev->ts;
	v->tid = tid;
	v->tgid = tgid;
	v->wait_cpu = VCPU_PCPU_NONE;
	if (src != VCPUSTAT_INDEX_SEED)
		v->fsm.pcpu = (__u32)ev->cpu; /* KVM events run in the vCPU thread, on its CPU */
	if (ev->comm[0])
		__builtin_memcpy(v->comm, ev->comm, sizeof(v->comm));
	else
		env_current_comm(v->comm);
	if (index >= 0) {
		v->index = (__u32)index;
		v->index_src = src;
	} else if ((idx = vcpu_index_from_comm(v->comm)) >= 0) {
		v->index = (__u32)idx;
		v->index_src = VCPUSTAT_INDEX_COMM;
	} else {
		v->index = handler_fetch_inc(&vm->next_index);
		v->index_src = VCPUSTAT_INDEX_ORDER;
	}
	if (env_vcpu_insert(tid, v)) {
		env_lost(VCPUSTAT_LOST_VCPU_FULL);
		return NULL;
	}
	emit_vcpu(ev, v, VCPUSTAT_REC_VCPU_NEW, VCPU_UNKNOWN, VCPU_UNKNOWN, v->index_src, 0);
	v = env_vcpu_lookup(tid);
	if (v)
		env_vcpu_new(v);
	return v;
}

/*
 * The vCPU record of the current thread for a KVM event, creating it on the
 * thread's first KVM event (vCPU discovery). kvm_vcpu_id is the vcpu_id the
 * event carries, or -1.
 */
HANDLER_INLINE struct vcpustat_vcpu *vcpu_discover(const struct vcpustat_event *ev, int kvm_vcpu_id)
{
	__u32 tid = (__u32)ev->tid;
	struct vcpustat_vcpu *v;

	v = env_vcpu_lookup(tid);
	if (v) {
		if (kvm_vcpu_id >= 0 && (v->index_src != VCPUSTAT_INDEX_KVM || v->index != (__u32)kvm_vcpu_id)) {
			v->index = (__u32)kvm_vcpu_id;
			v->index_src = VCPUSTAT_INDEX_KVM;
			emit_vcpu(ev, v, VCPUSTAT_REC_VCPU_NEW, (__u8)v->fsm.state, (__u8)v->fsm.state,
				  VCPUSTAT_INDEX_KVM, 0);
		}
		return v;
	}
	return vcpu_create(ev, kvm_vcpu_id, VCPUSTAT_INDEX_KVM);
}

/* User space found a vCPU of a running VM: track it from now on (UNKNOWN until its first event). */
HANDLER_INLINE void on_seed(const struct vcpustat_event *ev)
{
	if (!env_vcpu_lookup((__u32)ev->tid))
		vcpu_create(ev, ev->arg0 <= 0xfffe ? (int)ev->arg0 : -1, VCPUSTAT_INDEX_SEED);
}

HANDLER_INLINE void on_switch(const struct vcpustat_event *ev)
{
	__u32 prev = (__u32)ev->tid, next = (__u32)ev->tid2, cpu = (__u32)ev->cpu;
	int runnable = ev->arg1 || ev->arg0 == 0;
	struct vcpustat_vmm_thread *t;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;
	struct vcpustat_cpu *c;
	bool maybe;

	c = env_cpu(cpu);
	if (c) {
		charge_culprits(ev, c);
		if (c->occ_tid == prev && prev)
			occupant_end(c, cpu, ev->ts);
		else
			c->occ_tid = 0; /* an occupant whose leaving was not seen: its time is not known */
	}

	/* on a CPU where vCPUs wait, most switches are between threads of no VM: no lookup for those */
	maybe = env_tid_maybe_tracked(prev);
	v = maybe ? env_vcpu_lookup(prev) : NULL;
	if (v) {
		poll_expire(ev, v);
		vcpu_fsm_switch_out(&v->fsm, ev->ts, cpu, runnable, &s);
		apply_step(ev, v, &s, (__u32)ev->arg0, 0);
		wait_end(ev, v); /* normally not waiting; be safe */
		if (runnable)
			wait_begin(ev, v, cpu);
	} else if (maybe && (t = env_vmm_lookup(prev))) {
		vmm_enter(ev, t, runnable ? VCPUSTAT_VMM_T_WAIT : VCPUSTAT_VMM_T_SLEEP, cpu);
	}
	maybe = env_tid_maybe_tracked(next);
	v = maybe ? env_vcpu_lookup(next) : NULL;
	if (v) {
		wait_end(ev, v);
		vcpu_fsm_switch_in(&v->fsm, ev->ts, cpu, &s);
		apply_step(ev, v, &s, cpu, 0);
		if (c)
			occupant_begin(c, v, ev->ts);
	} else if (maybe && (t = env_vmm_lookup(next))) {
		vmm_enter(ev, t, VCPUSTAT_VMM_T_RUN, cpu);
	}
	if (c) {
		c->curr_since = ev->ts;
		if (c->nr_waiting)
			emit_runner(ev, cpu, next, (__u32)ev->tgid2, VCPUSTAT_RUNNER_IS);
	}
	emit_host_switch(ev);
}

/*
 * sched_waking of a vCPU, in its waker's context: if the waker had just had
 * a LAPIC accept an interrupt on this CPU, that interrupt's kick is waking
 * the vCPU. (sched_wakeup, which changes the state, may fire later on the
 * vCPU's own CPU, where the waker is not current.) The kernel traces it only
 * for a task in a sleeping state, and every sched_waking is followed by the
 * one sched_wakeup of that wake-up, however late: a vCPU still on its way to
 * sleep is woken once its switch out is done, and a wake-up queued to the
 * vCPU's CPU completes when that CPU takes the IPI (1.4-1.7 ms later was
 * seen under the lab's emulation). So the hint is kept until the vCPU's next
 * sched_wakeup, which takes it (on_wakeup).
 */
HANDLER_INLINE void on_waking(const struct vcpustat_event *ev)
{
	struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);
	struct vcpustat_cpu *c;

	if (!v)
		return;
	c = env_cpu((__u32)ev->cpu);
	v->wake_hint = VCPU_WAKE_OTHER;
	if (c && ev->tid2 && c->irq_tid == (__u32)ev->tid2 && ev->ts >= c->irq_ts &&
	    ev->ts - c->irq_ts <= VCPUSTAT_WAKE_CAUSE_NS)
		v->wake_hint = (__u8)c->irq_reason;
}

/*
 * A sleeping vCPU was woken: why (enum vcpu_wake_reason)? hint: what its
 * waker's context said (on_waking); OTHER, until the vCPU's own thread raises
 * an interrupt for itself before its next kvm_entry (on_apic_accept: its
 * timer).
 */
HANDLER_INLINE void wake_begin(const struct vcpustat_event *ev, struct vcpustat_vcpu *v, __u8 hint)
{
	v->wake_pending = 1;
	v->wake_ts = ev->ts;
	v->wake_reason = hint;
	v->wake_vector = 0;
}

/*
 * The woken vCPU enters the guest: the delivery delay it felt, by reason and
 * by the vector KVM injected for that entry (what the guest was woken to
 * handle; 0 when none was seen: posted interrupts, or no interrupt at all).
 */
HANDLER_INLINE void wake_end(const struct vcpustat_event *ev, struct vcpustat_vcpu *v)
{
	struct vcpu_fsm_sample ws = {
		.kind = VCPU_SAMPLE_WAKE,
		.reason = v->wake_reason,
		.ns = ev->ts > v->wake_ts ? ev->ts - v->wake_ts : 0,
	};

	v->wake_pending = 0;
	hist_add(v, &ws);
	ws.kind = VCPU_SAMPLE_WAKE_VECTOR;
	ws.reason = v->wake_vector;
	hist_add(v, &ws);
	/* recordings: the reason, at the entry (the wake-up itself is the state's change from asleep) */
	emit_vcpu(ev, v, VCPUSTAT_REC_WAKE, v->wake_vector, 0, v->wake_reason,
		  ws.ns > 0xffffffffull ? 0xffffffffu : (__u32)ws.ns);
}

/*
 * kvm_inj_virq (EV_INJ_VIRQ), on the vCPU's thread as it prepares an entry:
 * the first vector injected into a woken vCPU is the one it woke for.
 */
HANDLER_INLINE void on_inj_virq(const struct vcpustat_event *ev)
{
	struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);

	if (v && v->wake_pending && !v->wake_vector && ev->arg0 && ev->arg0 <= 0xff)
		v->wake_vector = (__u8)ev->arg0;
}

/*
 * kvm_apic_accept_irq (EV_APIC_ACCEPT): in the thread of a woken vCPU, for
 * itself, it is that vCPU's own interrupt (its LAPIC timer): the reason of a
 * wake-up not yet explained. Anywhere else it may be about to wake its
 * target: note it on this CPU, as from a vCPU (an IPI) or not (a device).
 */
HANDLER_INLINE void on_apic_accept(const struct vcpustat_event *ev)
{
	struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);
	struct vcpustat_cpu *c;

	if (v && v->wake_pending) {
		if (v->wake_reason == VCPU_WAKE_OTHER)
			v->wake_reason = VCPU_WAKE_TIMER;
		return;
	}
	if (v && v->index_src == VCPUSTAT_INDEX_KVM && (__u32)ev->arg0 == v->index)
		return; /* a running vCPU's own interrupt: it wakes nobody */
	c = env_cpu((__u32)ev->cpu);
	if (!c)
		return;
	c->irq_ts = ev->ts;
	c->irq_tid = (__u32)ev->tid;
	c->irq_reason = v ? VCPU_WAKE_IPI : VCPU_WAKE_DEVICE;
}

HANDLER_INLINE void on_wakeup(const struct vcpustat_event *ev)
{
	__u32 tid = (__u32)ev->tid;
	struct vcpustat_vmm_thread *t;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;

	if (!env_tid_maybe_tracked(tid)) { /* at level full: every host thread's wakeup */
		emit_host_wakeup(ev);
		return;
	}
	v = env_vcpu_lookup(tid);
	if (v) {
		/* this wake-up's sched_waking said why; a wake-up of a vCPU not yet asleep uses it up */
		__u8 hint = v->wake_hint;

		v->wake_hint = VCPU_WAKE_OTHER;
		vcpu_fsm_wakeup(&v->fsm, ev->ts, &s);
		apply_step(ev, v, &s, (__u32)ev->arg0, 0);
		if (s.from != s.to)
			wake_begin(ev, v, hint);
		if (v->fsm.state == VCPU_WAIT && v->wait_cpu == VCPU_PCPU_NONE)
			wait_begin(ev, v, (__u32)ev->arg0);
	} else if ((t = env_vmm_lookup(tid)) && t->state == VCPUSTAT_VMM_T_SLEEP) {
		/* not from UNKNOWN: a thread seeded while running may be woken before it sleeps */
		vmm_enter(ev, t, VCPUSTAT_VMM_T_WAIT, (__u32)ev->arg0);
	}
	emit_host_wakeup(ev);
}

HANDLER_INLINE void on_migrate(const struct vcpustat_event *ev)
{
	__u32 tid = (__u32)ev->tid, dest = (__u32)ev->arg0;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;

	if (!env_tid_maybe_tracked(tid))
		return;
	v = env_vcpu_lookup(tid);
	if (!v) {
		struct vcpustat_vmm_thread *t = env_vmm_lookup(tid);

		/* a queued VMM thread moved to another run queue: it now waits there */
		if (t && t->state == VCPUSTAT_VMM_T_WAIT && t->wait_cpu != VCPU_PCPU_NONE && t->wait_cpu != dest) {
			waiter_end(ev, tid, &t->wait_cpu, &t->wait_slot);
			vmm_emit(ev, t, VCPUSTAT_VMM_T_WAIT, dest);
			waiter_begin(ev, tid, t->vm_tgid | VCPUSTAT_CULPRIT_VMM, dest, &t->wait_cpu, &t->wait_slot);
		}
		return;
	}
	vcpu_fsm_migrate(&v->fsm, dest, &s);
	apply_step(ev, v, &s, 0, 0);
	if (v->wait_cpu != VCPU_PCPU_NONE && v->wait_cpu != dest) {
		/* a queued vCPU moved to another run queue: it now waits there */
		wait_end(ev, v);
		wait_begin(ev, v, dest);
	}
}

HANDLER_INLINE void on_process_exit(const struct vcpustat_event *ev)
{
	__u32 tid = (__u32)ev->tid, tgid = (__u32)ev->tgid;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;
	struct vcpustat_vm *vm;

	v = env_vcpu_lookup(tid);
	if (v) {
		struct vcpustat_cpu *c = env_cpu((__u32)ev->cpu);

		if (c && c->occ_tid == tid)
			occupant_end(c, (__u32)ev->cpu, ev->ts);
		wait_end(ev, v);
		if (v->fsm.flags & VCPU_F_IN_EXIT)
			exit_details_close(v, ev->ts); /* like its exit's latency sample */
		poll_expire(ev, v);
		vcpu_fsm_process_exit(&v->fsm, ev->ts, &s);
		if (s.sample[0].kind != VCPU_SAMPLE_NONE)
			hist_add(v, &s.sample[0]);
		if (s.sample[1].kind != VCPU_SAMPLE_NONE)
			hist_add(v, &s.sample[1]);
		emit_vcpu(ev, v, VCPUSTAT_REC_VCPU_GONE, (__u8)s.from, VCPU_UNKNOWN, 0, 0);
		if (env_dead_insert(tid, v))
			env_lost(VCPUSTAT_LOST_DEAD_FULL);
		env_vcpu_gone(v);
		env_vcpu_delete(tid);
	} else {
		struct vcpustat_vmm_thread *t = env_vmm_lookup(tid);

		if (t)
			vmm_forget(ev, t, tid);
	}
	if (ev->arg0) {
		vm = env_vm_lookup(tgid);
		if (vm)
			vm->exited_ns = ev->ts;
	}
}

HANDLER_INLINE void on_kvm_event(const struct vcpustat_event *ev)
{
	int kvm_vcpu_id = -1;
	struct vcpu_fsm_step s;
	struct vcpustat_vcpu *v;
	__u32 arg0 = 0, arg1 = 0;

	if (ev->type == VCPUSTAT_EV_KVM_ENTRY)
		kvm_vcpu_id = (int)ev->arg0;
	else if (ev->type == VCPUSTAT_EV_KVM_EXIT)
		kvm_vcpu_id = (int)(__u32)ev->arg2; /* without VCPUSTAT_EXIT_GSYS */
	if (kvm_vcpu_id > 0xfffe) /* absent (-1) or out of the record's range */
		kvm_vcpu_id = -1;

	v = vcpu_discover(ev, kvm_vcpu_id);
	if (!v)
		return;
	{
		/* a KVM event runs in the vCPU's thread: it is on this CPU (seen here first if seeded, say) */
		struct vcpustat_cpu *c = env_cpu((__u32)ev->cpu);

		if (c && c->occ_tid != v->tid)
			occupant_begin(c, v, ev->ts);
	}

	switch (ev->type) {
	case VCPUSTAT_EV_KVM_ENTRY:
		if (v->fsm.flags & VCPU_F_IN_EXIT)
			exit_details_close(v, ev->ts);
		poll_expire(ev, v);
		if (v->wake_pending)
			wake_end(ev, v);
		vcpu_fsm_kvm_entry(&v->fsm, ev->ts, &s);
		if (v->sync_pending) {
			v->sync_pending = 0;
			if (env_record_level() >= VCPUSTAT_LEVEL_VCPU)
				emit(ev, v->tid, v->tgid, v->index, VCPUSTAT_REC_SYNC_ENTRY, 0, 0, (__u32)v->sync_key,
				     (__u32)(v->sync_key >> 32));
		}
		break;
	case VCPUSTAT_EV_KVM_EXIT:
		v->detail_kind = 0; /* an exit whose entry was never seen keeps nothing */
		v->fault_pending = 0;
		v->nested_pending = v->in_l2; /* an exit from L2 */
		v->nested_reflected = 0;
		v->nested_reason = (__u32)ev->arg0;
		v->nested_isa = (__u8)ev->arg1;
		vcpu_fsm_kvm_exit(&v->fsm, ev->ts, (__u32)ev->arg0, (__u32)ev->arg1, &s);
		if (ev->arg2 & VCPUSTAT_EXIT_GSYS)
			v->fsm.flags |= VCPU_F_EXIT_GSYS;
		else
			v->fsm.flags &= ~VCPU_F_EXIT_GSYS;
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
		if (env_record_level() >= VCPUSTAT_LEVEL_VCPU)
			emit(ev, v->tid, v->tgid, v->index, VCPUSTAT_REC_HYPERCALL, 0, 0, (__u32)ev->arg1,
			     (__u32)(ev->arg1 >> 32));
		return;
	default:
		return;
	}
	apply_step(ev, v, &s, arg0, arg1);
}

/*
 * Halt polling (EV_HALT, EV_HALT_END, EV_HALT_POLL_NS), on the vCPU's thread:
 * the state machine splits the poll out of HOST (vcpu_fsm.h); a change of
 * the vCPU's halt_poll_ns is recorded.
 */
HANDLER_INLINE void on_halt(const struct vcpustat_event *ev)
{
	int kvm_vcpu_id = ev->type == VCPUSTAT_EV_HALT_POLL_NS && (__u32)ev->arg2 <= 0xfffe ? (int)(__u32)ev->arg2 : -1;
	struct vcpustat_vcpu *v = vcpu_discover(ev, kvm_vcpu_id);
	struct vcpu_fsm_step s;
	__u32 old;

	if (!v)
		return;
	old = v->fsm.halt_poll_ns;
	if (ev->type == VCPUSTAT_EV_HALT) {
		vcpu_fsm_halt_begin(&v->fsm, ev->ts, ev->arg1 != 0, (__u32)ev->arg0, &s);
	} else if (ev->type == VCPUSTAT_EV_HALT_END) {
		poll_expire(ev, v);
		vcpu_fsm_halt_end(&v->fsm, ev->ts, ev->arg1 != 0, &s);
	} else {
		vcpu_fsm_step_clear(&s, v->fsm.state);
		v->fsm.halt_poll_ns = (__u32)ev->arg0;
	}
	apply_step(ev, v, &s, 0, 0);
	if (v->fsm.halt_poll_ns != old)
		emit_vcpu(ev, v, VCPUSTAT_REC_HALT_POLL_NS, (__u8)v->fsm.state, (__u8)v->fsm.state,
			  v->fsm.halt_poll_ns, 0);
}

/* The one entry point: real tracepoints, injection and replay all end here. */
HANDLER_INLINE int handle_event(const struct vcpustat_event *ev)
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
	case VCPUSTAT_EV_SEED:
		on_seed(ev);
		break;
	case VCPUSTAT_EV_PIO:
	case VCPUSTAT_EV_MMIO:
	case VCPUSTAT_EV_MSR:
	case VCPUSTAT_EV_PAGE_FAULT:
		on_exit_detail(ev);
		break;
	case VCPUSTAT_EV_HALT:
	case VCPUSTAT_EV_HALT_END:
	case VCPUSTAT_EV_HALT_POLL_NS:
		on_halt(ev);
		break;
	case VCPUSTAT_EV_APIC_ACCEPT:
		on_apic_accept(ev);
		break;
	case VCPUSTAT_EV_WAKING:
		on_waking(ev);
		break;
	case VCPUSTAT_EV_VMM_SEED:
		on_vmm_seed(ev);
		break;
	case VCPUSTAT_EV_INJ_VIRQ:
		on_inj_virq(ev);
		break;
	case VCPUSTAT_EV_GUEST_CR3:
		on_guest_cr3(ev);
		break;
	case VCPUSTAT_EV_NESTED_ENTER:
	case VCPUSTAT_EV_NESTED_EXIT:
		on_nested(ev);
		break;
	case VCPUSTAT_EV_NUMA_MOVE: {
		/* the move itself follows (sched_migrate_task); this says who decided it */
		struct vcpustat_vcpu *v = env_vcpu_lookup((__u32)ev->tid);

		if (v) {
			v->numa_moves++;
			emit_vcpu(ev, v, VCPUSTAT_REC_NUMA_MOVE, (__u8)v->fsm.state, (__u8)v->fsm.state,
				  (__u32)v->numa_moves, (__u32)(ev->arg0 & 0xffff) | (__u32)(ev->arg1 & 0xffff) << 16);
		}
		break;
	}
	}
	return 0;
}

#endif /* VCPUSTAT_HANDLER_H */
