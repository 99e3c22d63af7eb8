// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * summary_json.c - the window model as the JSON document of a refresh
 * (docs/json.md), written as it is walked (util/jsonw.h): `top -j` writes one
 * at every refresh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/jsonw.h"
#include "util/util.h"
#include "model/placement.h"
#include "model/summary.h"

/* ---- JSON ---- */

static const char *const prog_status_names[] = {
	[VCPUSTAT_PROG_OFF] = "off",	       [VCPUSTAT_PROG_MISSING] = "missing", [VCPUSTAT_PROG_LOADED] = "loaded",
	[VCPUSTAT_PROG_ATTACHED] = "attached", [VCPUSTAT_PROG_FAILED] = "failed",
};

/*
 * "health": is vcpustat blind to a VM KVM runs (docs/json.md)? ok, the
 * problems by name, the VMs with one, what KVM was asked, and a sentence.
 */
static void health_write(struct jw *w, const struct summary *s)
{
	const struct health *h = &s->health;
	char msg[1024];

	jw_object(w, "health");
	jw_bool(w, "ok", !h->problems);
	jw_array(w, "problems");
	for (unsigned int b = 1; b < 1u << HEALTH_NR_PROBLEMS; b <<= 1)
		if (h->problems & b)
			jw_string(w, NULL, health_problem_name(b));
	jw_end(w);
	jw_int(w, "kvm_vms", h->kvm_vms);
	jw_string(w, "kvm_source", h->source);
	if (h->exits_why[0])
		jw_string(w, "kvm_exits_unknown", h->exits_why);
	jw_array(w, "vms");
	for (size_t i = 0; i < h->nr_vms; i++) {
		const struct health_vm *v = &h->vms[i];

		jw_object(w, NULL);
		jw_int(w, "pid", v->tgid);
		jw_array(w, "problems");
		for (unsigned int b = 1; b < 1u << HEALTH_NR_PROBLEMS; b <<= 1)
			if (v->problems & b)
				jw_string(w, NULL, health_problem_name(b));
		jw_end(w);
		if (v->kvm_known)
			jw_int(w, "kvm_exits", (long long)v->kvm_exits);
		jw_int(w, "seen_exits", (long long)v->seen_exits);
		jw_int(w, "userspace_exits", (long long)v->userspace_exits);
		jw_end(w);
	}
	jw_end(w);
	summary_health_message(s, msg, sizeof(msg));
	if (msg[0])
		jw_string(w, "message", msg);
	jw_end(w);
}

static void states_write(struct jw *w, const char *key, const __u64 ns[VCPU_NR_STATES])
{
	jw_object(w, key);
	for (unsigned int i = VCPU_GUEST; i < VCPU_NR_STATES; i++)
		jw_int(w, vcpu_state_name(i), (long long)ns[i]);
	jw_end(w);
}

static void shares_write(struct jw *w, const __u64 ns[VCPU_NR_STATES])
{
	__u64 total = 0;

	for (unsigned int i = 0; i < VCPU_NR_STATES; i++)
		total += ns[i];
	jw_object(w, "share");
	for (unsigned int i = VCPU_GUEST; i < VCPU_NR_STATES; i++)
		jw_real(w, vcpu_state_name(i), total ? (double)ns[i] / (double)total : 0);
	jw_end(w);
}

/* Halt polling in the window (docs/json.md "halt_poll"). */
static void halt_poll_write(struct jw *w, __u64 ok, __u64 failed, __u64 failed_ns, __u32 halt_poll_ns)
{
	jw_object(w, "halt_poll");
	jw_int(w, "ok", (long long)ok);
	jw_int(w, "failed", (long long)failed);
	jw_int(w, "failed_ns", (long long)failed_ns);
	jw_int(w, "halt_poll_ns", (long long)halt_poll_ns);
	jw_end(w);
}

static void latency_write(struct jw *w, const char *key, const struct latency_summary *l, bool gsys_known)
{
	jw_object(w, key);
	jw_string(w, "reason", l->name);
	jw_int(w, "count", (long long)l->count);
	jw_real(w, "rate", l->rate);
	jw_int(w, "sum_ns", (long long)l->sum_ns);
	jw_int(w, "p50_ns", (long long)l->p50_ns);
	jw_int(w, "p90_ns", (long long)l->p90_ns);
	jw_int(w, "p99_ns", (long long)l->p99_ns);
	jw_int(w, "max_ns", (long long)l->max_ns);
	jw_int(w, "count_total", (long long)l->count_total);
	if (l->kind == VCPU_SAMPLE_EXIT || l->kind == VCPU_SAMPLE_USERSPACE_EXIT) {
		jw_int(w, "open", (long long)l->open); /* docs/json.md "Open exits" */
		jw_int(w, "open_ns", (long long)l->open_ns);
	}
	if (l->kind == VCPU_SAMPLE_EXIT) {
		jw_string(w, "isa", l->isa == KVM_ISA_VMX ? "vmx" : l->isa == KVM_ISA_SVM ? "svm" : "?");
		jw_int(w, "code", l->reason);
		if (gsys_known)
			jw_int(w, "guest_kernel", (long long)l->gsys);
	} else if (l->kind == VCPU_SAMPLE_USERSPACE_EXIT) {
		jw_int(w, "code", l->reason);
	} else if (l->kind == VCPU_SAMPLE_WAKE_VECTOR) {
		jw_int(w, "vector", l->reason);
	}
	jw_end(w);
}

static void detail_write(struct jw *w, const struct detail_summary *d)
{
	const char *name = detail_msr_name(d->kind, d->addr);
	char target[32];

	jw_object(w, NULL);
	jw_string(w, "kind", detail_kind_name(d->kind));
	jw_string(w, "target", detail_target_of(d->kind, d->addr, target, sizeof(target)));
	jw_string(w, "access", detail_access_name(d->access));
	jw_int(w, "count", (long long)d->count);
	jw_real(w, "rate", d->rate);
	jw_int(w, "sum_ns", (long long)d->sum_ns);
	jw_int(w, "max_ns", (long long)d->max_ns);
	jw_int(w, "count_total", (long long)d->count_total);
	jw_int(w, "sum_ns_total", (long long)d->sum_ns_total);
	if (name)
		jw_string(w, "name", name);
	jw_end(w);
}

static void vcpu_write(struct jw *w, const struct summary *s, const struct vm_summary *vm, const struct vcpu_summary *v)
{
	jw_object(w, NULL);
	jw_string(w, "vm", vm->name);
	jw_int(w, "pid", (long long)vm->tgid);
	jw_int(w, "vcpu", (long long)v->index);
	jw_int(w, "tid", (long long)v->tid);
	jw_string(w, "state", vcpu_state_name(v->state));
	jw_string(w, "comm", v->comm);
	jw_bool(w, "gone", v->gone);
	if (v->pcpu == VCPU_PCPU_NONE)
		jw_null(w, "pcpu");
	else
		jw_int(w, "pcpu", v->pcpu);
	states_write(w, "ns", v->ns);
	states_write(w, "ns_total", v->ns_total);
	shares_write(w, v->ns);
	jw_int(w, "preemptions", (long long)v->preemptions);
	jw_int(w, "wakeups", (long long)v->wakeups);
	jw_int(w, "migrations", (long long)v->migrations);
	jw_int(w, "kvm_exits", (long long)v->kvm_exits);
	jw_int(w, "userspace_exits", (long long)v->userspace_exits);
	jw_int(w, "kvm_exits_open", (long long)v->kvm_exits_open);
	jw_int(w, "userspace_exits_open", (long long)v->userspace_exits_open);
	if (v->kvm_exits_open) {
		jw_string(w, "open_exit", v->open_exit);
		jw_int(w, "open_exit_ns", (long long)v->open_exit_ns);
	}
	if (v->userspace_exits_open) {
		jw_string(w, "open_userspace_exit", v->open_uexit);
		jw_int(w, "open_userspace_exit_ns", (long long)v->open_uexit_ns);
	}
	jw_real(w, "preemptions_per_s", summary_per_s(s, v->preemptions));
	jw_real(w, "wakeups_per_s", summary_per_s(s, v->wakeups));
	jw_real(w, "migrations_per_s", summary_per_s(s, v->migrations));
	halt_poll_write(w, v->polls_ok, v->polls_failed, v->poll_fail_ns, v->halt_poll_ns);
	if (v->nested) { /* docs/json.md "Nested virtualization" */
		jw_object(w, "nested");
		jw_int(w, "l2_guest_ns", (long long)v->l2_ns);
		jw_int(w, "l2_guest_ns_total", (long long)v->l2_ns_total);
		jw_bool(w, "in_l2", v->in_l2);
		jw_end(w);
	}
	jw_end(w);
}

/* A container: {"runtime", "id", "pod", "pod_name", "namespace", "name"}, each where known; null if none. */
static void container_write(struct jw *w, const char *key, const struct container_ref *c)
{
	const char *field[][2] = { { "runtime", c->runtime },	  { "id", c->id },
				   { "pod", c->pod },		  { "pod_name", c->pod_name },
				   { "namespace", c->pod_namespace }, { "name", c->name } };

	jw_object(w, key);
	for (size_t i = 0; i < sizeof(field) / sizeof(field[0]); i++)
		if (field[i][1][0])
			jw_string(w, field[i][0], field[i][1]);
	jw_end(w);
}

/* "container" (c, or null) and "pidns" (if known) of a VM or a thread, after its "cgroup". */
static void container_pidns_write(struct jw *w, const struct container_ref *c, __u64 pidns)
{
	if (c)
		container_write(w, "container", c);
	else
		jw_null(w, "container");
	if (pidns)
		jw_int(w, "pidns", (long long)pidns);
}

static void culprit_write(struct jw *w, const struct culprit_summary *c)
{
	struct container_ref ref;

	jw_object(w, NULL);
	jw_int(w, "tid", (long long)c->tid);
	jw_string(w, "comm", c->comm);
	jw_int(w, "pid", (long long)c->tgid);
	jw_string(w, "process", c->process);
	jw_string(w, "cgroup", c->cgroup);
	jw_int(w, "ns", (long long)c->ns);
	jw_real(w, "share", c->share);
	container_pidns_write(w, culprit_container(c, &ref) ? &ref : NULL, c->pidns);
	if (c->vm[0]) {
		jw_string(w, "vm", c->vm);
		jw_int(w, "vcpu", c->vcpu);
	}
	jw_end(w);
}

static void guest_thread_write(struct jw *w, const struct guest_thread_summary *g)
{
	jw_object(w, NULL);
	jw_int(w, "tid", (long long)g->tid);
	jw_string(w, "comm", g->comm);
	jw_int(w, "vcpu", g->vcpu);
	jw_object(w, "ns");
	for (unsigned int i = 0; i < GUEST_NR_STATES; i++)
		jw_int(w, guest_thread_state_name(i), (long long)g->ns[i]);
	jw_end(w);
	jw_int(w, "lost_to_host_ns", (long long)g->ns[GUEST_VIRT_PREEMPTED]);
	jw_object(w, "lost");
	jw_int(w, "hypervisor_ns", (long long)g->lost_hypervisor_ns);
	jw_int(w, "host_runq_ns", (long long)g->lost_runq_ns);
	jw_int(w, "host_blocked_ns", (long long)g->lost_blocked_ns);
	jw_end(w);
	jw_array(w, "culprits");
	for (size_t c = 0; c < g->nr_culprits; c++)
		culprit_write(w, &g->culprits[c]);
	jw_end(w);
	jw_end(w);
}

/* A live VM's placement (vm_place): per CPU, per node and cache (with the host's topology), moves, SMT. */
static void place_write(struct jw *w, const struct summary *s, const struct vm_summary *vm)
{
	char key[16];

	jw_object(w, "placement");
	jw_object(w, "cpu_ns");
	for (size_t i = 0; i < vm->place.nr_cpus; i++) {
		snprintf(key, sizeof(key), "%u", vm->place.cpus[i].cpu);
		jw_int(w, key, (long long)vm->place.cpus[i].ns);
	}
	jw_end(w);
	for (int llc = 0; llc < 2 && s->topo; llc++) {
		enum { MAX_IDS = 1024 };
		__u64 ns[MAX_IDS]; /* as the text's place_lines(): on the stack, not allocated per VM and refresh */

		jw_object(w, llc ? "llc_ns" : "node_ns");
		if (place_by(s, vm, llc, ns, MAX_IDS) >= 0)
			for (int id = 0; id < MAX_IDS; id++)
				if (ns[id]) {
					snprintf(key, sizeof(key), "%d", id);
					jw_int(w, key, (long long)ns[id]);
				}
		jw_end(w);
	}
	jw_int(w, "cross_node_migrations", (long long)vm->place.cross_node);
	jw_int(w, "cross_llc_migrations", (long long)vm->place.cross_llc);
	jw_int(w, "numa_balancing_moves", (long long)vm->place.numa_moves);
	jw_int(w, "smt_other_vm_ns", (long long)vm->place.smt_other_ns);
	jw_int(w, "smt_same_vm_ns", (long long)vm->place.smt_same_ns);
	jw_end(w);
}

static void address_spaces_write(struct jw *w, const struct vm_summary *vm)
{
	char t[32];

	jw_array(w, "address_spaces");
	for (size_t a = 0; a < vm->nr_address_spaces; a++) {
		const struct detail_summary *d = &vm->address_spaces[a];

		jw_object(w, NULL);
		jw_string(w, "cr3", cr3_target(d->addr, t, sizeof(t)));
		jw_int(w, "guest_ns", (long long)d->sum_ns);
		jw_int(w, "exits", (long long)d->count);
		jw_int(w, "max_ns", (long long)d->max_ns);
		jw_int(w, "guest_ns_total", (long long)d->sum_ns_total);
		jw_int(w, "exits_total", (long long)d->count_total);
		if (d->guest_tid) { /* reports with the guest's threads imported */
			jw_object(w, "guest_thread");
			jw_int(w, "tid", (long long)d->guest_tid);
			jw_string(w, "comm", d->guest_comm);
			jw_int(w, "exits", (long long)d->guest_tid_exits);
			jw_end(w);
		}
		jw_end(w);
	}
	jw_end(w);
}

static void vmm_write(struct jw *w, const struct vm_summary *vm)
{
	static const char *const kind[VMM_NR_KINDS] = { "emulator", "vhost" };

	jw_object(w, "vmm_threads");
	for (int k = 0; k < VMM_NR_KINDS; k++) {
		jw_object(w, kind[k]);
		jw_int(w, "threads", (int)vm->vmm.threads[k]);
		jw_int(w, "run_ns", (long long)vm->vmm.run_ns[k]);
		jw_int(w, "wait_ns", (long long)vm->vmm.wait_ns[k]);
		jw_end(w);
	}
	jw_array(w, "culprits");
	for (size_t c = 0; c < vm->vmm.nr_culprits; c++)
		culprit_write(w, &vm->vmm.culprits[c]);
	jw_end(w);
	jw_end(w);
}

static void vm_write(struct jw *w, const struct summary *s, const struct vm_summary *vm)
{
	struct container_ref ref;
	__u64 l0, l1;

	jw_object(w, NULL);
	jw_string(w, "vm", vm->name);
	jw_int(w, "pid", (long long)vm->tgid);
	jw_bool(w, "exited", vm->exited);
	jw_string(w, "cgroup", vm->cgroup);
	container_pidns_write(w, vm_container(vm, &ref) ? &ref : NULL, vm->pidns);
	states_write(w, "ns", vm->ns);
	shares_write(w, vm->ns);
	jw_real(w, "preemptions_per_s", summary_per_s(s, vm->preemptions));
	jw_real(w, "wakeups_per_s", summary_per_s(s, vm->wakeups));
	jw_real(w, "migrations_per_s", summary_per_s(s, vm->migrations));
	halt_poll_write(w, vm->polls_ok, vm->polls_failed, vm->poll_fail_ns, vm->halt_poll_ns);
	jw_array(w, "vcpus");
	for (size_t v = 0; v < vm->nr_vcpus; v++)
		vcpu_write(w, s, vm, &vm->vcpus[v]);
	jw_end(w);
	if (vm->nr_vcpus_all)
		jw_int(w, "vcpus_of", (long long)vm->nr_vcpus_all);
	jw_array(w, "exits");
	for (size_t e = 0; e < vm->nr_exits; e++)
		latency_write(w, NULL, &vm->exits[e], s->has_gsys);
	jw_end(w);
	jw_array(w, "userspace_exits");
	for (size_t e = 0; e < vm->nr_uexits; e++)
		latency_write(w, NULL, &vm->uexits[e], false);
	jw_end(w);
	latency_write(w, "runq_wait", &vm->runq, false);
	jw_array(w, "wake_reasons");
	for (size_t i = 0; i < vm->nr_wakes; i++)
		latency_write(w, NULL, &vm->wakes[i], false);
	jw_end(w);
	jw_array(w, "wake_vectors");
	for (size_t i = 0; i < vm->nr_wake_vectors; i++)
		latency_write(w, NULL, &vm->wake_vectors[i], false);
	jw_end(w);
	jw_array(w, "culprits");
	for (size_t c = 0; c < vm->nr_culprits; c++)
		culprit_write(w, &vm->culprits[c]);
	jw_end(w);
	if (s->has_details) {
		jw_array(w, "exit_details");
		for (size_t d = 0; d < vm->nr_details; d++)
			detail_write(w, &vm->details[d]);
		jw_end(w);
	}
	if (vm->nr_address_spaces)
		address_spaces_write(w, vm);
	vm_nested_exits(vm, &l0, &l1);
	if (vm->nested || l0 || l1) { /* the rows themselves: exit_details, kind "nested" */
		jw_object(w, "nested");
		jw_int(w, "l2_guest_ns", (long long)vm->l2_ns);
		jw_int(w, "exits_reflected_to_l1", (long long)l1);
		jw_int(w, "exits_handled_by_l0", (long long)l0);
		jw_end(w);
	}
	if (vm->vmm.known)
		vmm_write(w, vm);
	if (vm->place.known)
		place_write(w, s, vm);
	if (vm->nr_guest_threads) {
		jw_array(w, "guest_threads");
		for (size_t g = 0; g < vm->nr_guest_threads; g++)
			guest_thread_write(w, &vm->guest_threads[g]);
		jw_end(w);
	}
	jw_end(w);
}

void summary_json_write(struct jw *w, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs)
{
	bool split = false, oncpu = false;

	jw_object(w, NULL);
	jw_int(w, "ts", (long long)s->t1);
	jw_real(w, "interval_s", s->seconds);
	if (s->pcpus[0])
		jw_string(w, "pcpus", s->pcpus);
	jw_array(w, "vms");
	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];

		vm_write(w, s, vm);
		split |= vm->ns[VCPU_GUEST] > 0 || vm->exits != NULL;
		oncpu |= vm->ns[VCPU_HOST] > 0;
	}
	jw_end(w);
	if (s->topo) {
		struct placement p;

		if (!placement_from_summary(&p, s)) {
			json_t *b = placement_balance_json(&p);

			if (b)
				jw_json(w, "balance", b);
			placement_free(&p);
		}
	}
	jw_object(w, "lost");
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		jw_int(w, lost_kind_name(i), (long long)s->lost[i]);
	jw_end(w);
	jw_object(w, "lost_window");
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		jw_int(w, lost_kind_name(i), (long long)s->lost_window[i]);
	jw_end(w);
	if (s->health.checked)
		health_write(w, s);
	if (progs) {
		jw_array(w, "programs");
		for (size_t i = 0; i < nr_progs; i++) {
			jw_object(w, NULL);
			jw_string(w, "name", progs[i].name);
			jw_string(w, "tracepoint", progs[i].tracepoint);
			if (progs[i].form[0])
				jw_string(w, "form", progs[i].form);
			jw_string(w, "status", prog_status_names[progs[i].status]);
			if (progs[i].message[0])
				jw_string(w, "message", progs[i].message);
			jw_end(w);
		}
		jw_end(w);
	}
	if (oncpu && !split) {
		jw_array(w, "notes");
		jw_string(w, NULL, "kvm_entry/kvm_exit did not fire: guest and hypervisor time are not separated, "
				   "on-CPU time is counted as host");
		jw_end(w);
	}
	jw_end(w);
}

json_t *summary_json(const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs)
{
	struct jw w = { 0 };
	json_t *doc;

	summary_json_write(&w, s, progs, nr_progs);
	doc = jw_parse(&w);
	jw_free(&w);
	return doc;
}
