// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* metrics_json.c - the exporters' model as the JSON document of docs/metrics.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "export/export.h"
#include "export/metrics_internal.h"

/* ---- JSON ---- */

static json_t *seconds_json(const __u64 ns[VCPU_NR_STATES])
{
	json_t *o = json_object();

	for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
		json_object_set_new(o, vcpu_state_name(s), json_real((double)ns[s] / 1e9));
	return o;
}

static void counts_json(json_t *o, const struct acc_counts *c)
{
	json_object_set_new(o, "seconds", seconds_json(c->ns));
	/* vcpustat_vcpu_delay_seconds_total and vcpustat_vcpu_wait_seconds_total: preempted + wait */
	json_object_set_new(o, "delay_seconds", json_real((double)(c->ns[VCPU_PREEMPTED] + c->ns[VCPU_WAIT]) / 1e9));
	json_object_set_new(o, "wait_seconds", json_real((double)(c->ns[VCPU_PREEMPTED] + c->ns[VCPU_WAIT]) / 1e9));
	json_object_set_new(o, "preemptions", json_integer((json_int_t)c->preemptions));
	json_object_set_new(o, "wakeups", json_integer((json_int_t)c->wakeups));
	json_object_set_new(o, "migrations", json_integer((json_int_t)c->migrations));
	json_object_set_new(o, "exit_count", json_integer((json_int_t)c->exits));
	json_object_set_new(o, "userspace_exit_count", json_integer((json_int_t)c->uexits));
}

static json_t *hist_json(const struct acc_hist *h, bool reason)
{
	json_t *o = json_object(), *buckets = json_array();
	__u64 cum = 0;
	unsigned int b = 0;

	if (reason)
		json_object_set_new(o, "reason", json_string(h->reason));
	json_object_set_new(o, "count", json_integer((json_int_t)h->count));
	json_object_set_new(o, "sum_seconds", json_real((double)h->sum_ns / 1e9));
	for (unsigned int i = 0; i < METRICS_NR_LE; i++) {
		unsigned int end = lat_hist_bucket(metrics_le_ns[i]);

		for (; b < end; b++)
			cum += h->bucket[b];
		json_array_append_new(buckets, json_pack("{s:f, s:I}", "le", metrics_le_seconds(i), "count", (json_int_t)cum));
	}
	json_array_append_new(buckets, json_pack("{s:s, s:I}", "le", "+Inf", "count", (json_int_t)h->count));
	json_object_set_new(o, "buckets", buckets);
	return o;
}

/* The guest address spaces (exit-detail rows of kind cr3), as {cr3, exits, seconds}. */
static json_t *address_spaces_json(const struct acc_vm *vm)
{
	json_t *arr = json_array();
	struct detail_row *rows;
	size_t n;

	rows = metrics_detail_rows(vm, &n);
	for (size_t r = 0; rows && r < n; r++) {
		char target[32];

		if (rows[r].kind == VCPUSTAT_DETAIL_CR3)
			json_array_append_new(arr, json_pack("{s:s, s:I, s:f}", "cr3",
							     cr3_target(rows[r].addr, target, sizeof(target)), "exits",
							     (json_int_t)rows[r].count, "seconds", (double)rows[r].ns / 1e9));
	}
	free(rows);
	return arr;
}

/* The exit-detail series (metrics_detail_rows), as {kind, target, access, [msr,] count, seconds}. */
static json_t *details_json(const struct acc_vm *vm)
{
	json_t *arr = json_array();
	struct detail_row *rows;
	size_t n;

	rows = metrics_detail_rows(vm, &n);
	for (size_t r = 0; rows && r < n; r++) {
		const char *msr = detail_msr_name(rows[r].kind, rows[r].addr);
		char target[32];
		json_t *o;

		if (rows[r].kind == VCPUSTAT_DETAIL_CR3)
			continue; /* address_spaces_json */
		o = json_pack("{s:s, s:s, s:s, s:I, s:f}", "kind", detail_kind_name(rows[r].kind), "target",
				      detail_target_of(rows[r].kind, rows[r].addr, target, sizeof(target)), "access",
				      detail_access_name(rows[r].access), "count", (json_int_t)rows[r].count, "seconds",
				      (double)rows[r].ns / 1e9);

		if (msr)
			json_object_set_new(o, "msr", json_string(msr));
		json_array_append_new(arr, o);
	}
	free(rows);
	return arr;
}

static json_t *culprit_json(const char *process, const char *comm, const char *cgroup, const char *vm, __u64 ns)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:f}", "process", process, "comm", comm, "cgroup", cgroup, "culprit_vm",
			 vm, "seconds", (double)ns / 1e9);
}

json_t *metrics_json(const struct metrics *m)
{
	json_t *doc = json_object(), *vms = json_array(), *lost = json_object();

	json_object_set_new(doc, "source", json_string(m->file ? "file" : "live"));
	if (m->file) {
		json_object_set_new(doc, "file", json_string(m->file_path));
		json_object_set_new(doc, "wall_clock", json_boolean(!m->no_clock));
		json_object_set_new(doc, "from", m->no_clock ? json_null() : json_string(m->from));
		json_object_set_new(doc, "to", m->no_clock ? json_null() : json_string(m->to));
		json_object_set_new(doc, "from_ns", json_integer((json_int_t)m->from_ns));
		json_object_set_new(doc, "to_ns", json_integer((json_int_t)m->to_ns));
	}
	json_object_set_new(doc, "version", json_string(VCPUSTAT_VERSION));
	json_object_set_new(doc, "kernel", json_string(m->kernel));
	if (m->started) {
		json_object_set_new(doc, "start_time", m->no_clock ? json_null() : json_real(metrics_start_time(m)));
		json_object_set_new(doc, "window_seconds", json_real(metrics_window_seconds(m)));
	}
	json_object_set_new(doc, "vcpu_labels", json_boolean(!m->o.no_vcpu_labels));
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		json_t *o = json_pack("{s:s, s:I}", "vm", vm->name, "vcpus_now", (json_int_t)vm->vcpus_now);
		/* vcpustat_vm_info's labels, where known */
		const char *info[][2] = { { "cgroup", vm->cgroup },
					  { "pod", vm->container.pod },
					  { "pod_name", vm->container.pod_name },
					  { "namespace", vm->container.pod_namespace },
					  { "container", vm->container.name } };

		for (size_t k = 0; k < sizeof(info) / sizeof(info[0]); k++)
			if (info[k][1][0])
				json_object_set_new(o, info[k][0], json_string(info[k][1]));
		json_t *exits = json_array(), *uexits = json_array(), *cul = json_array();
		struct acc_culprit **named;
		size_t n;

		counts_json(o, &vm->c);
		/* vcpustat_halt_polls_total, vcpustat_halt_poll_failed_seconds_total (per VM only) */
		json_object_set_new(o, "halt_polls",
				    json_pack("{s:I, s:I}", "ok", (json_int_t)vm->c.polls_ok, "failed",
					      (json_int_t)vm->c.polls_failed));
		json_object_set_new(o, "halt_poll_failed_seconds", json_real((double)vm->c.poll_fail_ns / 1e9));
		if (vm->c.nested) /* vcpustat_nested_l2_guest_seconds_total */
			json_object_set_new(o, "nested_l2_guest_seconds", json_real((double)vm->c.l2_ns / 1e9));
		/* vcpustat_vmm_thread_cpu_seconds_total, vcpustat_vmm_thread_wait_seconds_total */
		if (vm->vmm_known) {
			json_t *t = json_object();

			for (int k = 0; k < VMM_NR_KINDS; k++)
				json_object_set_new(t, k == VMM_EMULATOR ? "emulator" : "vhost",
						    json_pack("{s:f, s:f}", "cpu_seconds", (double)vm->vmm_run_ns[k] / 1e9,
							      "wait_seconds", (double)vm->vmm_wait_ns[k] / 1e9));
			json_object_set_new(o, "vmm_threads", t);
		}
		/* vcpustat_placement_*: per node and cache, migrations across them, SMT sharing */
		if (vm->place_known) {
			json_t *pl = json_object(), *nodes = json_object(), *llcs = json_object();
			char id[16];

			for (int d = 0; d < vm->nr_node; d++)
				if (vm->node_ns[d]) {
					snprintf(id, sizeof(id), "%d", d);
					json_object_set_new(nodes, id, json_real((double)vm->node_ns[d] / 1e9));
				}
			for (int d = 0; d < vm->nr_llc; d++)
				if (vm->llc_ns[d]) {
					snprintf(id, sizeof(id), "%d", d);
					json_object_set_new(llcs, id, json_real((double)vm->llc_ns[d] / 1e9));
				}
			json_object_set_new(pl, "node_seconds", nodes);
			json_object_set_new(pl, "llc_seconds", llcs);
			json_object_set_new(pl, "cross_node_migrations", json_integer((json_int_t)vm->cross_node));
			json_object_set_new(pl, "cross_llc_migrations", json_integer((json_int_t)vm->cross_llc));
			json_object_set_new(pl, "numa_balancing_moves", json_integer((json_int_t)vm->numa_moves));
			json_object_set_new(pl, "smt_other_vm_seconds", json_real((double)vm->smt_other_ns / 1e9));
			json_object_set_new(pl, "smt_same_vm_seconds", json_real((double)vm->smt_same_ns / 1e9));
			json_object_set_new(o, "placement", pl);
		}
		/* vcpustat_vcpu_halt_poll_seconds: the largest of its vCPUs' (per vCPU below) */
		json_object_set_new(o, "halt_poll_seconds", json_real((double)vm->halt_poll_ns / 1e9));
		if (!m->o.no_vcpu_labels) {
			json_t *vcpus = json_array();

			for (size_t v = 0; v < vm->nr_vcpus; v++) {
				json_t *vo = json_pack("{s:I}", "vcpu", (json_int_t)vm->vcpus[v].index);

				counts_json(vo, &vm->vcpus[v].c);
				json_object_set_new(vo, "halt_poll_seconds",
						    json_real((double)vm->vcpus[v].halt_poll_ns / 1e9));
				json_array_append_new(vcpus, vo);
			}
			json_object_set_new(o, "vcpus", vcpus);
		}
		for (size_t e = 0; e < vm->nr_exits; e++) {
			json_t *h = hist_json(&vm->exits[e], true);

			if (m->gsys_known)
				json_object_set_new(h, "guest_kernel", json_integer((json_int_t)vm->exits[e].gsys));
			json_array_append_new(exits, h);
		}
		for (size_t e = 0; e < vm->nr_uexits; e++)
			json_array_append_new(uexits, hist_json(&vm->uexits[e], true));
		json_object_set_new(o, "exits", exits);
		json_object_set_new(o, "userspace_exits", uexits);
		{
			json_t *wakes = json_array();

			for (size_t w = 0; w < vm->nr_wakes; w++)
				json_array_append_new(wakes, hist_json(&vm->wakes[w], true));
			json_object_set_new(o, "wake_reasons", wakes);
			wakes = json_array();
			for (size_t w = 0; w < vm->nr_wake_vectors; w++) {
				json_t *h = hist_json(&vm->wake_vectors[w], false);

				json_object_set_new(h, "vector", json_string(vm->wake_vectors[w].reason));
				json_array_append_new(wakes, h);
			}
			json_object_set_new(o, "wake_vectors", wakes);
		}
		json_object_set_new(o, "runqueue_wait", hist_json(&vm->runq, false));
		named = metrics_named_culprits(vm, &n);
		for (size_t c = 0; named && c < n; c++) {
			const struct culprit_key *ck = &named[c]->key;

			json_array_append_new(
			    cul, culprit_json(ck->process, ck->comm, ck->cgroup, ck->vm, named[c]->named_ns));
		}
		free(named);
		if (metrics_has_other(m, vm))
			json_array_append_new(cul, culprit_json("other", "other", "", "", vm->other_ns));
		json_object_set_new(o, "culprits", cul);
		json_object_set_new(o, "exit_details", details_json(vm));
		{
			json_t *as = address_spaces_json(vm); /* --address-spaces only */

			if (json_array_size(as))
				json_object_set_new(o, "address_spaces", as);
			else
				json_decref(as);
		}
		json_array_append_new(vms, o);
	}
	json_object_set_new(doc, "vms", vms);
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		json_object_set_new(lost, lost_kind_name(i), json_integer((json_int_t)m->lost[i]));
	json_object_set_new(doc, "lost", lost);
	if (m->nr_progs) {
		json_t *tp = json_object();

		for (size_t i = 0; i < m->nr_progs; i++)
			json_object_set_new(tp, m->progs[i].tracepoint, json_integer(m->progs[i].attached));
		json_object_set_new(doc, "tracepoints", tp);
	}
	return doc;
}
