// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics_json.c - the exporters' model as the JSON document of
 * docs/metrics.md, written as it is walked (util/jsonw.h): `serve` renders it
 * at every scrape of /metrics?format=json.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonw.h"
#include "util/util.h"
#include "export/export.h"
#include "export/metrics_internal.h"

/* ---- JSON ---- */

static void seconds_write(struct jw *w, const char *key, __u64 ns)
{
	jw_real(w, key, (double)ns / 1e9);
}

static void counts_write(struct jw *w, const struct acc_counts *c)
{
	jw_object(w, "seconds");
	for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
		seconds_write(w, vcpu_state_name(s), c->ns[s]);
	jw_end(w);
	/* vcpustat_vcpu_delay_seconds_total and vcpustat_vcpu_wait_seconds_total: preempted + wait */
	seconds_write(w, "delay_seconds", c->ns[VCPU_PREEMPTED] + c->ns[VCPU_WAIT]);
	seconds_write(w, "wait_seconds", c->ns[VCPU_PREEMPTED] + c->ns[VCPU_WAIT]);
	jw_int(w, "preemptions", (long long)c->preemptions);
	jw_int(w, "wakeups", (long long)c->wakeups);
	jw_int(w, "migrations", (long long)c->migrations);
	jw_int(w, "exit_count", (long long)c->exits);
	jw_int(w, "userspace_exit_count", (long long)c->uexits);
}

/* A histogram's object, opened (reason, count, sum, cumulative buckets): the caller adds to it and closes it. */
static void hist_open(struct jw *w, const char *key, const struct acc_hist *h, bool reason)
{
	__u64 cum = 0;
	unsigned int b = 0;

	jw_object(w, key);
	if (reason)
		jw_string(w, "reason", h->reason);
	jw_int(w, "count", (long long)h->count);
	seconds_write(w, "sum_seconds", h->sum_ns);
	jw_array(w, "buckets");
	for (unsigned int i = 0; i < METRICS_NR_LE; i++) {
		unsigned int end = lat_hist_bucket(metrics_le_ns[i]);

		for (; b < end; b++)
			cum += h->bucket[b];
		jw_object(w, NULL);
		jw_real(w, "le", metrics_le_seconds(i));
		jw_int(w, "count", (long long)cum);
		jw_end(w);
	}
	jw_object(w, NULL);
	jw_string(w, "le", "+Inf");
	jw_int(w, "count", (long long)h->count);
	jw_end(w);
	jw_end(w);
}

/*
 * The exit-detail series (metrics_detail_rows) as {kind, target, access,
 * [msr,] count, seconds}; then, with --address-spaces only, the guest address
 * spaces (rows of kind cr3) as {cr3, exits, seconds}.
 */
static void details_write(struct jw *w, const struct acc_vm *vm)
{
	struct detail_row *rows;
	size_t n, nr_cr3 = 0;
	char target[32];

	rows = metrics_detail_rows(vm, &n);
	jw_array(w, "exit_details");
	for (size_t r = 0; rows && r < n; r++) {
		const char *msr = detail_msr_name(rows[r].kind, rows[r].addr);

		if (rows[r].kind == VCPUSTAT_DETAIL_CR3) {
			nr_cr3++;
			continue;
		}
		jw_object(w, NULL);
		jw_string(w, "kind", detail_kind_name(rows[r].kind));
		jw_string(w, "target", detail_target_of(rows[r].kind, rows[r].addr, target, sizeof(target)));
		jw_string(w, "access", detail_access_name(rows[r].access));
		jw_int(w, "count", (long long)rows[r].count);
		seconds_write(w, "seconds", rows[r].ns);
		if (msr)
			jw_string(w, "msr", msr);
		jw_end(w);
	}
	jw_end(w);
	if (nr_cr3) {
		jw_array(w, "address_spaces");
		for (size_t r = 0; r < n; r++)
			if (rows[r].kind == VCPUSTAT_DETAIL_CR3) {
				jw_object(w, NULL);
				jw_string(w, "cr3", cr3_target(rows[r].addr, target, sizeof(target)));
				jw_int(w, "exits", (long long)rows[r].count);
				seconds_write(w, "seconds", rows[r].ns);
				jw_end(w);
			}
		jw_end(w);
	}
	free(rows);
}

static void culprit_write(struct jw *w, const char *process, const char *comm, const char *cgroup, const char *vm,
			  __u64 ns)
{
	jw_object(w, NULL);
	jw_string(w, "process", process);
	jw_string(w, "comm", comm);
	jw_string(w, "cgroup", cgroup);
	jw_string(w, "culprit_vm", vm);
	seconds_write(w, "seconds", ns);
	jw_end(w);
}

/* An object of the ids (node or cache) with time, as seconds by id. */
static void seconds_by_id_write(struct jw *w, const char *key, const __u64 *ns, int n)
{
	char id[16];

	jw_object(w, key);
	for (int d = 0; d < n; d++)
		if (ns[d]) {
			snprintf(id, sizeof(id), "%d", d);
			seconds_write(w, id, ns[d]);
		}
	jw_end(w);
}

/* vcpustat_placement_*: per node and cache, migrations across them, SMT sharing */
static void placement_write(struct jw *w, const struct acc_vm *vm)
{
	jw_object(w, "placement");
	seconds_by_id_write(w, "node_seconds", vm->node_ns, vm->nr_node);
	seconds_by_id_write(w, "llc_seconds", vm->llc_ns, vm->nr_llc);
	jw_int(w, "cross_node_migrations", (long long)vm->cross_node);
	jw_int(w, "cross_llc_migrations", (long long)vm->cross_llc);
	jw_int(w, "numa_balancing_moves", (long long)vm->numa_moves);
	seconds_write(w, "smt_other_vm_seconds", vm->smt_other_ns);
	seconds_write(w, "smt_same_vm_seconds", vm->smt_same_ns);
	jw_end(w);
}

static void vm_write(struct jw *w, const struct metrics *m, const struct acc_vm *vm)
{
	/* vcpustat_vm_info's labels, where known */
	const char *info[][2] = { { "cgroup", vm->cgroup },
				  { "pod", vm->container.pod },
				  { "pod_name", vm->container.pod_name },
				  { "namespace", vm->container.pod_namespace },
				  { "container", vm->container.name } };
	struct acc_culprit **named;
	size_t n;

	jw_object(w, NULL);
	jw_string(w, "vm", vm->name);
	jw_int(w, "vcpus_now", (long long)vm->vcpus_now);
	for (size_t k = 0; k < sizeof(info) / sizeof(info[0]); k++)
		if (info[k][1][0])
			jw_string(w, info[k][0], info[k][1]);
	counts_write(w, &vm->c);
	/* vcpustat_halt_polls_total, vcpustat_halt_poll_failed_seconds_total (per VM only) */
	jw_object(w, "halt_polls");
	jw_int(w, "ok", (long long)vm->c.polls_ok);
	jw_int(w, "failed", (long long)vm->c.polls_failed);
	jw_end(w);
	seconds_write(w, "halt_poll_failed_seconds", vm->c.poll_fail_ns);
	if (vm->c.nested) /* vcpustat_nested_l2_guest_seconds_total */
		seconds_write(w, "nested_l2_guest_seconds", vm->c.l2_ns);
	/* vcpustat_vmm_thread_cpu_seconds_total, vcpustat_vmm_thread_wait_seconds_total */
	if (vm->vmm_known) {
		jw_object(w, "vmm_threads");
		for (int k = 0; k < VMM_NR_KINDS; k++) {
			jw_object(w, k == VMM_EMULATOR ? "emulator" : "vhost");
			seconds_write(w, "cpu_seconds", vm->vmm_run_ns[k]);
			seconds_write(w, "wait_seconds", vm->vmm_wait_ns[k]);
			jw_end(w);
		}
		jw_end(w);
	}
	if (vm->place_known)
		placement_write(w, vm);
	/* vcpustat_vcpu_halt_poll_seconds: the largest of its vCPUs' (per vCPU below) */
	seconds_write(w, "halt_poll_seconds", vm->halt_poll_ns);
	if (!m->o.no_vcpu_labels) {
		jw_array(w, "vcpus");
		for (size_t v = 0; v < vm->nr_vcpus; v++) {
			jw_object(w, NULL);
			jw_int(w, "vcpu", (long long)vm->vcpus[v].index);
			counts_write(w, &vm->vcpus[v].c);
			seconds_write(w, "halt_poll_seconds", vm->vcpus[v].halt_poll_ns);
			jw_end(w);
		}
		jw_end(w);
	}
	jw_array(w, "exits");
	for (size_t e = 0; e < vm->nr_exits; e++) {
		hist_open(w, NULL, &vm->exits[e], true);
		if (m->gsys_known)
			jw_int(w, "guest_kernel", (long long)vm->exits[e].gsys);
		jw_end(w);
	}
	jw_end(w);
	jw_array(w, "userspace_exits");
	for (size_t e = 0; e < vm->nr_uexits; e++) {
		hist_open(w, NULL, &vm->uexits[e], true);
		jw_end(w);
	}
	jw_end(w);
	jw_array(w, "wake_reasons");
	for (size_t i = 0; i < vm->nr_wakes; i++) {
		hist_open(w, NULL, &vm->wakes[i], true);
		jw_end(w);
	}
	jw_end(w);
	jw_array(w, "wake_vectors");
	for (size_t i = 0; i < vm->nr_wake_vectors; i++) {
		hist_open(w, NULL, &vm->wake_vectors[i], false);
		jw_string(w, "vector", vm->wake_vectors[i].reason);
		jw_end(w);
	}
	jw_end(w);
	hist_open(w, "runqueue_wait", &vm->runq, false);
	jw_end(w);
	jw_array(w, "culprits");
	named = metrics_named_culprits(vm, &n);
	for (size_t c = 0; named && c < n; c++) {
		const struct culprit_key *ck = &named[c]->key;

		culprit_write(w, ck->process, ck->comm, ck->cgroup, ck->vm, named[c]->named_ns);
	}
	free(named);
	if (metrics_has_other(m, vm))
		culprit_write(w, "other", "other", "", "", vm->other_ns);
	jw_end(w);
	details_write(w, vm);
	jw_end(w);
}

void metrics_json_write(struct jw *w, const struct metrics *m)
{
	jw_object(w, NULL);
	jw_string(w, "source", m->file ? "file" : "live");
	if (m->file) {
		jw_string(w, "file", m->file_path);
		jw_bool(w, "wall_clock", !m->no_clock);
		if (m->no_clock) {
			jw_null(w, "from");
			jw_null(w, "to");
		} else {
			jw_string(w, "from", m->from);
			jw_string(w, "to", m->to);
		}
		jw_int(w, "from_ns", (long long)m->from_ns);
		jw_int(w, "to_ns", (long long)m->to_ns);
	}
	jw_string(w, "version", VCPUSTAT_VERSION);
	jw_string(w, "kernel", m->kernel);
	if (m->started) {
		if (m->no_clock)
			jw_null(w, "start_time");
		else
			jw_real(w, "start_time", metrics_start_time(m));
		jw_real(w, "window_seconds", metrics_window_seconds(m));
	}
	jw_bool(w, "vcpu_labels", !m->o.no_vcpu_labels);
	jw_array(w, "vms");
	for (size_t i = 0; i < m->nr_vms; i++)
		vm_write(w, m, m->vms[i]);
	jw_end(w);
	jw_object(w, "lost");
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		jw_int(w, lost_kind_name(i), (long long)m->lost[i]);
	jw_end(w);
	if (m->nr_progs) {
		jw_object(w, "tracepoints");
		for (size_t i = 0; i < m->nr_progs; i++)
			jw_int(w, m->progs[i].tracepoint, m->progs[i].attached);
		jw_end(w);
	}
	if (m->health_checked) { /* as vcpustat_health_ok and vcpustat_blind_vms */
		jw_object(w, "health");
		jw_bool(w, "ok", !m->health_problems);
		jw_int(w, "kvm_vms", m->kvm_vms);
		jw_object(w, "blind_vms");
		for (unsigned int b = 0; b < HEALTH_NR_PROBLEMS; b++)
			jw_int(w, health_problem_name(1u << b),
			       1u << b == HEALTH_NO_EXIT_PROGRAM ? !!(m->health_problems & HEALTH_NO_EXIT_PROGRAM) :
								    m->blind_vms[b]);
		jw_end(w);
		jw_end(w);
	}
	jw_end(w);
}

json_t *metrics_json(const struct metrics *m)
{
	struct jw w = { 0 };
	json_t *doc;

	metrics_json_write(&w, m);
	doc = jw_parse(&w);
	jw_free(&w);
	return doc;
}
