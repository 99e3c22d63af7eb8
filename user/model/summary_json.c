// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* summary_json.c - the window model as the JSON document of a refresh (docs/json.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/util.h"
#include "model/model.h"

/* ---- JSON ---- */

static const char *const prog_status_names[] = {
	[VCPUSTAT_PROG_OFF] = "off",	       [VCPUSTAT_PROG_MISSING] = "missing", [VCPUSTAT_PROG_LOADED] = "loaded",
	[VCPUSTAT_PROG_ATTACHED] = "attached", [VCPUSTAT_PROG_FAILED] = "failed",
};

static json_t *states_json(const __u64 ns[VCPU_NR_STATES])
{
	json_t *o = json_object();

	for (unsigned int i = VCPU_GUEST; i < VCPU_NR_STATES; i++)
		json_object_set_new(o, vcpu_state_name(i), json_integer((json_int_t)ns[i]));
	return o;
}

static json_t *shares_json(const __u64 ns[VCPU_NR_STATES])
{
	json_t *o = json_object();
	__u64 total = 0;

	for (unsigned int i = 0; i < VCPU_NR_STATES; i++)
		total += ns[i];
	for (unsigned int i = VCPU_GUEST; i < VCPU_NR_STATES; i++)
		json_object_set_new(o, vcpu_state_name(i), json_real(total ? (double)ns[i] / (double)total : 0));
	return o;
}

/* Halt polling in the window (docs/json.md "halt_poll"). */
static json_t *halt_poll_json(__u64 ok, __u64 failed, __u64 failed_ns, __u32 halt_poll_ns)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "ok", (json_int_t)ok, "failed", (json_int_t)failed, "failed_ns",
			 (json_int_t)failed_ns, "halt_poll_ns", (json_int_t)halt_poll_ns);
}

static json_t *latency_json(const struct latency_summary *l, bool gsys_known)
{
	json_t *o = json_pack("{s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "reason", l->name, "count",
			      (json_int_t)l->count, "rate", l->rate, "sum_ns", (json_int_t)l->sum_ns, "p50_ns",
			      (json_int_t)l->p50_ns, "p90_ns", (json_int_t)l->p90_ns, "p99_ns", (json_int_t)l->p99_ns,
			      "max_ns", (json_int_t)l->max_ns, "count_total", (json_int_t)l->count_total);

	if (l->kind == VCPU_SAMPLE_EXIT) {
		json_object_set_new(o, "isa", json_string(l->isa == KVM_ISA_VMX ? "vmx" :
							  l->isa == KVM_ISA_SVM ? "svm" : "?"));
		json_object_set_new(o, "code", json_integer(l->reason));
		if (gsys_known)
			json_object_set_new(o, "guest_kernel", json_integer((json_int_t)l->gsys));
	} else if (l->kind == VCPU_SAMPLE_USERSPACE_EXIT) {
		json_object_set_new(o, "code", json_integer(l->reason));
	} else if (l->kind == VCPU_SAMPLE_WAKE_VECTOR) {
		json_object_set_new(o, "vector", json_integer(l->reason));
	}
	return o;
}

static json_t *detail_json(const struct detail_summary *d)
{
	const char *name = detail_msr_name(d->kind, d->addr);
	char target[32];
	json_t *o;

	o = json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:I, s:I, s:I}", "kind", detail_kind_name(d->kind), "target",
		      detail_target_of(d->kind, d->addr, target, sizeof(target)), "access", detail_access_name(d->access), "count",
		      (json_int_t)d->count, "rate", d->rate, "sum_ns", (json_int_t)d->sum_ns, "max_ns",
		      (json_int_t)d->max_ns, "count_total", (json_int_t)d->count_total, "sum_ns_total",
		      (json_int_t)d->sum_ns_total);
	if (name)
		json_object_set_new(o, "name", json_string(name));
	return o;
}

static json_t *vcpu_json(const struct summary *s, const struct vm_summary *vm, const struct vcpu_summary *v)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:b}", "vm", vm->name, "pid", (json_int_t)vm->tgid,
			      "vcpu", (json_int_t)v->index, "tid", (json_int_t)v->tid, "state",
			      vcpu_state_name(v->state), "comm", v->comm, "gone", v->gone);

	json_object_set_new(o, "pcpu", v->pcpu == VCPU_PCPU_NONE ? json_null() : json_integer(v->pcpu));
	json_object_set_new(o, "ns", states_json(v->ns));
	json_object_set_new(o, "ns_total", states_json(v->ns_total));
	json_object_set_new(o, "share", shares_json(v->ns));
	json_object_set_new(o, "preemptions", json_integer((json_int_t)v->preemptions));
	json_object_set_new(o, "wakeups", json_integer((json_int_t)v->wakeups));
	json_object_set_new(o, "migrations", json_integer((json_int_t)v->migrations));
	json_object_set_new(o, "kvm_exits", json_integer((json_int_t)v->kvm_exits));
	json_object_set_new(o, "userspace_exits", json_integer((json_int_t)v->userspace_exits));
	json_object_set_new(o, "preemptions_per_s", json_real(summary_per_s(s, v->preemptions)));
	json_object_set_new(o, "wakeups_per_s", json_real(summary_per_s(s, v->wakeups)));
	json_object_set_new(o, "migrations_per_s", json_real(summary_per_s(s, v->migrations)));
	json_object_set_new(o, "halt_poll",
			    halt_poll_json(v->polls_ok, v->polls_failed, v->poll_fail_ns, v->halt_poll_ns));
	if (v->nested) /* docs/json.md "Nested virtualization" */
		json_object_set_new(o, "nested", json_pack("{s:I, s:I, s:b}", "l2_guest_ns", (json_int_t)v->l2_ns,
							   "l2_guest_ns_total", (json_int_t)v->l2_ns_total, "in_l2",
							   v->in_l2));
	return o;
}

/* A container as JSON: {"runtime", "id", "pod", "pod_name", "namespace", "name"}, each where known. */
static json_t *container_ref_json(const struct container_ref *c)
{
	const char *field[][2] = { { "runtime", c->runtime },	  { "id", c->id },
				   { "pod", c->pod },		  { "pod_name", c->pod_name },
				   { "namespace", c->pod_namespace }, { "name", c->name } };
	json_t *o = json_object();

	for (size_t i = 0; i < sizeof(field) / sizeof(field[0]); i++)
		if (field[i][1][0])
			json_object_set_new(o, field[i][0], json_string(field[i][1]));
	return o;
}

json_t *culprit_container_json(const struct culprit_summary *cu)
{
	struct container_ref c;

	return culprit_container(cu, &c) ? container_ref_json(&c) : json_null();
}

json_t *vm_container_json(const struct vm_summary *vm)
{
	struct container_ref c;

	return vm_container(vm, &c) ? container_ref_json(&c) : json_null();
}

/* "cgroup", "container" (given: culprit_container_json(), vm_container_json()) and "pidns" of a VM or a thread (pidns only if known). */
static void cgroup_fields(json_t *o, const char *cgroup, json_t *container, __u64 pidns)
{
	json_object_set_new(o, "cgroup", json_string(cgroup));
	json_object_set_new(o, "container", container);
	if (pidns)
		json_object_set_new(o, "pidns", json_integer((json_int_t)pidns));
}

static json_t *culprit_json(const struct culprit_summary *c)
{
	json_t *o = json_pack("{s:I, s:s, s:I, s:s, s:s, s:I, s:f}", "tid", (json_int_t)c->tid, "comm", c->comm,
			      "pid", (json_int_t)c->tgid, "process", c->process, "cgroup", c->cgroup, "ns",
			      (json_int_t)c->ns, "share", c->share);

	cgroup_fields(o, c->cgroup, culprit_container_json(c), c->pidns);
	if (c->vm[0]) {
		json_object_set_new(o, "vm", json_string(c->vm));
		json_object_set_new(o, "vcpu", json_integer(c->vcpu));
	}
	return o;
}

static json_t *guest_thread_json(const struct guest_thread_summary *g)
{
	json_t *ns = json_object(), *cul = json_array(), *o;

	for (unsigned int i = 0; i < GUEST_NR_STATES; i++)
		json_object_set_new(ns, guest_thread_state_name(i), json_integer((json_int_t)g->ns[i]));
	for (size_t c = 0; c < g->nr_culprits; c++)
		json_array_append_new(cul, culprit_json(&g->culprits[c]));
	o = json_pack("{s:I, s:s, s:i, s:o, s:I, s:{s:I, s:I, s:I}, s:o}", "tid", (json_int_t)g->tid, "comm", g->comm,
		      "vcpu", g->vcpu, "ns", ns, "lost_to_host_ns", (json_int_t)g->ns[GUEST_VIRT_PREEMPTED], "lost",
		      "hypervisor_ns", (json_int_t)g->lost_hypervisor_ns, "host_runq_ns", (json_int_t)g->lost_runq_ns,
		      "host_blocked_ns", (json_int_t)g->lost_blocked_ns, "culprits", cul);
	return o;
}

/* A live VM's placement (vm_place): per CPU, per node and cache (with the host's topology), moves, SMT. */
static json_t *place_json(const struct summary *s, const struct vm_summary *vm)
{
	json_t *o = json_object(), *cpus = json_object();
	char key[16];

	for (size_t i = 0; i < vm->place.nr_cpus; i++) {
		snprintf(key, sizeof(key), "%u", vm->place.cpus[i].cpu);
		json_object_set_new(cpus, key, json_integer((json_int_t)vm->place.cpus[i].ns));
	}
	json_object_set_new(o, "cpu_ns", cpus);
	for (int llc = 0; llc < 2 && s->topo; llc++) {
		enum { MAX_IDS = 1024 };
		__u64 *ns = calloc(MAX_IDS, sizeof(*ns));
		json_t *by = json_object();

		if (ns && place_by(s, vm, llc, ns, MAX_IDS) >= 0)
			for (int id = 0; id < MAX_IDS; id++)
				if (ns[id]) {
					snprintf(key, sizeof(key), "%d", id);
					json_object_set_new(by, key, json_integer((json_int_t)ns[id]));
				}
		free(ns);
		json_object_set_new(o, llc ? "llc_ns" : "node_ns", by);
	}
	json_object_set_new(o, "cross_node_migrations", json_integer((json_int_t)vm->place.cross_node));
	json_object_set_new(o, "cross_llc_migrations", json_integer((json_int_t)vm->place.cross_llc));
	json_object_set_new(o, "numa_balancing_moves", json_integer((json_int_t)vm->place.numa_moves));
	json_object_set_new(o, "smt_other_vm_ns", json_integer((json_int_t)vm->place.smt_other_ns));
	json_object_set_new(o, "smt_same_vm_ns", json_integer((json_int_t)vm->place.smt_same_ns));
	return o;
}

json_t *summary_json(const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs)
{
	json_t *doc = json_object(), *vms = json_array(), *lost = json_object(), *lostw = json_object();
	bool split = false, oncpu = false;

	json_object_set_new(doc, "ts", json_integer((json_int_t)s->t1));
	json_object_set_new(doc, "interval_s", json_real(s->seconds));
	if (s->pcpus[0])
		json_object_set_new(doc, "pcpus", json_string(s->pcpus));
	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];
		json_t *o, *vcpus = json_array(), *exits = json_array(), *uexits = json_array(), *cul = json_array();

		o = json_pack("{s:s, s:I, s:b}", "vm", vm->name, "pid", (json_int_t)vm->tgid, "exited", vm->exited);
		cgroup_fields(o, vm->cgroup, vm_container_json(vm), vm->pidns);
		json_object_set_new(o, "ns", states_json(vm->ns));
		json_object_set_new(o, "share", shares_json(vm->ns));
		json_object_set_new(o, "preemptions_per_s", json_real(summary_per_s(s, vm->preemptions)));
		json_object_set_new(o, "wakeups_per_s", json_real(summary_per_s(s, vm->wakeups)));
		json_object_set_new(o, "migrations_per_s", json_real(summary_per_s(s, vm->migrations)));
		json_object_set_new(o, "halt_poll",
				    halt_poll_json(vm->polls_ok, vm->polls_failed, vm->poll_fail_ns, vm->halt_poll_ns));
		for (size_t v = 0; v < vm->nr_vcpus; v++)
			json_array_append_new(vcpus, vcpu_json(s, vm, &vm->vcpus[v]));
		for (size_t e = 0; e < vm->nr_exits; e++)
			json_array_append_new(exits, latency_json(&vm->exits[e], s->has_gsys));
		for (size_t e = 0; e < vm->nr_uexits; e++)
			json_array_append_new(uexits, latency_json(&vm->uexits[e], false));
		for (size_t c = 0; c < vm->nr_culprits; c++)
			json_array_append_new(cul, culprit_json(&vm->culprits[c]));
		json_object_set_new(o, "vcpus", vcpus);
		if (vm->nr_vcpus_all)
			json_object_set_new(o, "vcpus_of", json_integer(vm->nr_vcpus_all));
		json_object_set_new(o, "exits", exits);
		json_object_set_new(o, "userspace_exits", uexits);
		json_object_set_new(o, "runq_wait", latency_json(&vm->runq, false));
		{
			json_t *wakes = json_array();

			for (size_t w = 0; w < vm->nr_wakes; w++)
				json_array_append_new(wakes, latency_json(&vm->wakes[w], false));
			json_object_set_new(o, "wake_reasons", wakes);
			wakes = json_array();
			for (size_t w = 0; w < vm->nr_wake_vectors; w++)
				json_array_append_new(wakes, latency_json(&vm->wake_vectors[w], false));
			json_object_set_new(o, "wake_vectors", wakes);
		}
		json_object_set_new(o, "culprits", cul);
		if (s->has_details) {
			json_t *det = json_array();

			for (size_t d = 0; d < vm->nr_details; d++)
				json_array_append_new(det, detail_json(&vm->details[d]));
			json_object_set_new(o, "exit_details", det);
		}
		if (vm->nr_address_spaces) {
			json_t *as = json_array();
			char t[32];

			for (size_t a = 0; a < vm->nr_address_spaces; a++) {
				const struct detail_summary *d = &vm->address_spaces[a];

				json_t *row = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "cr3",
							cr3_target(d->addr, t, sizeof(t)), "guest_ns", (json_int_t)d->sum_ns,
							"exits", (json_int_t)d->count, "max_ns", (json_int_t)d->max_ns,
							"guest_ns_total", (json_int_t)d->sum_ns_total, "exits_total",
							(json_int_t)d->count_total);

				if (d->guest_tid) /* reports with the guest's threads imported */
					json_object_set_new(row, "guest_thread",
							    json_pack("{s:I, s:s, s:I}", "tid", (json_int_t)d->guest_tid,
								      "comm", d->guest_comm, "exits",
								      (json_int_t)d->guest_tid_exits));
				json_array_append_new(as, row);
			}
			json_object_set_new(o, "address_spaces", as);
		}
		{
			__u64 l0, l1;

			vm_nested_exits(vm, &l0, &l1);
			if (vm->nested || l0 || l1) /* the rows themselves: exit_details, kind "nested" */
				json_object_set_new(o, "nested",
						    json_pack("{s:I, s:I, s:I}", "l2_guest_ns", (json_int_t)vm->l2_ns,
							      "exits_reflected_to_l1", (json_int_t)l1,
							      "exits_handled_by_l0", (json_int_t)l0));
		}
		if (vm->vmm.known) {
			json_t *vmm = json_object(), *vc = json_array();
			static const char *const kind[VMM_NR_KINDS] = { "emulator", "vhost" };

			for (int k = 0; k < VMM_NR_KINDS; k++)
				json_object_set_new(vmm, kind[k],
						    json_pack("{s:i, s:I, s:I}", "threads", (int)vm->vmm.threads[k],
							      "run_ns", (json_int_t)vm->vmm.run_ns[k], "wait_ns",
							      (json_int_t)vm->vmm.wait_ns[k]));
			for (size_t c = 0; c < vm->vmm.nr_culprits; c++)
				json_array_append_new(vc, culprit_json(&vm->vmm.culprits[c]));
			json_object_set_new(vmm, "culprits", vc);
			json_object_set_new(o, "vmm_threads", vmm);
		}
		if (vm->place.known)
			json_object_set_new(o, "placement", place_json(s, vm));
		if (vm->nr_guest_threads) {
			json_t *gt = json_array();

			for (size_t g = 0; g < vm->nr_guest_threads; g++)
				json_array_append_new(gt, guest_thread_json(&vm->guest_threads[g]));
			json_object_set_new(o, "guest_threads", gt);
		}
		json_array_append_new(vms, o);
		split |= vm->ns[VCPU_GUEST] > 0 || vm->exits != NULL;
		oncpu |= vm->ns[VCPU_HOST] > 0;
	}
	json_object_set_new(doc, "vms", vms);
	if (s->topo) {
		struct placement p;
		json_t *b;

		if (!placement_from_summary(&p, s)) {
			b = placement_balance_json(&p);
			if (b)
				json_object_set_new(doc, "balance", b);
			placement_free(&p);
		}
	}
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++) {
		json_object_set_new(lost, lost_kind_name(i), json_integer((json_int_t)s->lost[i]));
		json_object_set_new(lostw, lost_kind_name(i), json_integer((json_int_t)s->lost_window[i]));
	}
	json_object_set_new(doc, "lost", lost);
	json_object_set_new(doc, "lost_window", lostw);
	if (progs) {
		json_t *arr = json_array();

		for (size_t i = 0; i < nr_progs; i++) {
			json_t *p = json_pack("{s:s, s:s, s:s}", "name", progs[i].name, "tracepoint",
					      progs[i].tracepoint, "status", prog_status_names[progs[i].status]);

			if (progs[i].message[0])
				json_object_set_new(p, "message", json_string(progs[i].message));
			json_array_append_new(arr, p);
		}
		json_object_set_new(doc, "programs", arr);
	}
	if (oncpu && !split)
		json_object_set_new(doc, "notes",
				    json_pack("[s]", "kvm_entry/kvm_exit did not fire: guest and hypervisor time are "
						     "not separated, on-CPU time is counted as host"));
	return doc;
}
