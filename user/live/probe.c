// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * probe.c - `vcpustat probe`: what this host gives vcpustat (docs/kernels.md):
 * the kernel's features as compat.c finds them, which object and mode the
 * loader chooses, each program's form and fate, and whether kvm_exit fires
 * for the VMs that KVM runs, watched for a while against KVM's own count.
 * What a user pastes into a bug report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "live/live.h"
#include "util/jsonw.h"

static void sleep_ns(__u64 ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* KVM's exits and the programs' of every VM in both views, for the verdict. */
static void exits_verdict(struct probe_report *r, const struct kvm_view *k0, const struct kvm_view *k1,
			  const struct health_seen *s0, size_t n0, const struct health_seen *s1, size_t n1)
{
	bool known = k1->nr_vms > 0;

	r->kvm_vms = (unsigned int)k1->nr_vms;
	for (size_t i = 0; i < k1->nr_vms; i++) {
		const struct kvm_vm_seen *v = &k1->vms[i];

		for (size_t j = 0; j < k0->nr_vms; j++)
			if (k0->vms[j].tgid == v->tgid && v->exits_known && k0->vms[j].exits_known &&
			    v->exits >= k0->vms[j].exits)
				r->kvm_exits += v->exits - k0->vms[j].exits;
		known &= v->exits_known;
	}
	for (size_t i = 0; i < n1; i++) {
		__u64 before = 0, u_before = 0;

		for (size_t j = 0; j < n0; j++)
			if (s0[j].tgid == s1[i].tgid) {
				before = s0[j].kvm_exits;
				u_before = s0[j].userspace_exits;
			}
		r->seen_exits += s1[i].kvm_exits > before ? s1[i].kvm_exits - before : 0;
		r->userspace_exits += s1[i].userspace_exits > u_before ? s1[i].userspace_exits - u_before : 0;
	}
	r->kvm_exits_known = known;
	snprintf(r->kvm_exits_why, sizeof(r->kvm_exits_why), "%s", k1->exits_why);
	if (!k1->nr_vms)
		r->kvm_exit = PROBE_EXIT_UNKNOWN;
	else if (r->seen_exits)
		r->kvm_exit = PROBE_EXIT_FIRES;
	else if ((known && r->kvm_exits) || r->userspace_exits >= HEALTH_UEXITS_WITHOUT_EXITS)
		r->kvm_exit = PROBE_EXIT_SILENT;
	else
		r->kvm_exit = PROBE_EXIT_UNKNOWN; /* VMs, but none exited while watched */
}

/* Open, attach, watch: the parts of the report that need the BPF programs. */
static void probe_live(struct probe_report *r, double seconds)
{
	const struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE };
	struct vcpustat_snapshot a, b;
	struct health_seen *s0 = NULL, *s1 = NULL;
	struct kvm_view k0 = { 0 }, k1 = { 0 };
	const struct vcpustat_prog *progs;
	struct health_tracker t = { 0 };
	struct vcpustat *vs;
	const char *how;
	size_t n0 = 0, n1 = 0;
	int err;

	err = vcpustat_open(&vs, &opts);
	if (err) {
		r->open_err = err;
		snprintf(r->open_error, sizeof(r->open_error), "%s", vcpustat_open_failure());
		return;
	}
	r->opened = true;
	err = vcpustat_attach(vs);
	r->attach_err = err < 0 ? err : 0;
	r->nr_progs = vcpustat_progs(vs, &progs);
	if (r->nr_progs > PROBE_MAX_PROGS)
		r->nr_progs = PROBE_MAX_PROGS;
	memcpy(r->progs, progs, r->nr_progs * sizeof(*progs));
	r->compat = vcpustat_compat(vs);
	r->marks = vcpustat_marks(vs);
	vcpustat_rings(vs, &how);
	snprintf(r->rings, sizeof(r->rings), "%s", how);
	vcpustat_seed(vs, NULL);
	r->seconds = seconds;
	if (kvm_view_read(&k0, NULL, NULL, NULL) || vcpustat_snapshot(vs, &a))
		goto out;
	health_seen_of(&a, &s0, &n0);
	vcpustat_snapshot_free(&a);
	sleep_ns((__u64)(seconds * 1e9));
	if (kvm_view_read(&k1, NULL, NULL, NULL) || vcpustat_snapshot(vs, &b))
		goto out;
	health_seen_of(&b, &s1, &n1);
	vcpustat_snapshot_free(&b);
	exits_verdict(r, &k0, &k1, s0, n0, s1, n1);
	r->watched = true;
	if (!health_check(&t, &k0, s0, n0, vcpustat_exits_attached(vs), &r->health)) {
		health_free(&r->health);
		health_check(&t, &k1, s1, n1, vcpustat_exits_attached(vs), &r->health);
	}
out:
	health_tracker_free(&t);
	kvm_view_free(&k0);
	kvm_view_free(&k1);
	free(s0);
	free(s1);
	vcpustat_close(vs);
}

int vcpustat_probe(struct probe_report *r, double seconds)
{
	char msg[256];

	memset(r, 0, sizeof(*r));
	compat_probe(&r->kernel);
	if (vcpustat_check_privileges(msg, sizeof(msg))) {
		snprintf(r->open_error, sizeof(r->open_error), "%s", msg);
		r->open_err = -EPERM;
		return 0;
	}
	r->privileged = true;
	probe_live(r, seconds);
	return 0;
}

void probe_report_free(struct probe_report *r)
{
	health_free(&r->health);
}

static const char *const exit_verdicts[] = {
	[PROBE_EXIT_UNKNOWN] = "unknown",
	[PROBE_EXIT_FIRES] = "fires",
	[PROBE_EXIT_SILENT] = "silent",
};

static const char *const prog_status[] = {
	[VCPUSTAT_PROG_OFF] = "off",	       [VCPUSTAT_PROG_MISSING] = "missing", [VCPUSTAT_PROG_LOADED] = "loaded",
	[VCPUSTAT_PROG_ATTACHED] = "attached", [VCPUSTAT_PROG_FAILED] = "failed",
};

const char *probe_mode(const struct probe_report *r)
{
	return !r->opened ? "none" : r->marks ? "marks" : "hot page";
}

/* A sentence on kvm_exit: does it fire for the VMs KVM runs? */
static void exit_sentence(const struct probe_report *r, char *out, size_t len)
{
	if (!r->watched) {
		snprintf(out, len, "not watched (the programs did not load)");
	} else if (!r->kvm_vms) {
		snprintf(out, len, "unknown: KVM runs no VM now (start one and probe again)");
	} else if (r->kvm_exit == PROBE_EXIT_FIRES) {
		snprintf(out, len, "fires: the programs counted %llu exits in %.1f s%s", (unsigned long long)r->seen_exits,
			 r->seconds, "");
		if (r->kvm_exits_known)
			snprintf(out + strlen(out), len - strlen(out), ", KVM %llu", (unsigned long long)r->kvm_exits);
	} else if (r->kvm_exit == PROBE_EXIT_SILENT) {
		if (r->kvm_exits_known && r->kvm_exits)
			snprintf(out, len, "SILENT: KVM counted %llu exits in %.1f s, the programs none",
				 (unsigned long long)r->kvm_exits, r->seconds);
		else
			snprintf(out, len, "SILENT: the vCPUs returned to their VMM %llu times in %.1f s, and no kvm_exit "
					   "fired (a KVM without hardware virtualization?)",
				 (unsigned long long)r->userspace_exits, r->seconds);
	} else {
		snprintf(out, len, "unknown: KVM runs %u VM%s, none exited in %.1f s", r->kvm_vms,
			 r->kvm_vms == 1 ? "" : "s", r->seconds);
	}
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

void probe_print(FILE *f, const struct probe_report *r)
{
	const struct vcpustat_kernel *k = &r->kernel;
	char line[512];

	fprintf(f, "kernel     %s %s\n", k->release, k->machine);
	fprintf(f, "BTF        vmlinux %s, kvm module %s%s\n", yes(k->vmlinux_btf), yes(k->kvm_btf),
		k->kvm_loaded ? "" : " (no kvm module loaded)");
	fprintf(f, "/dev/kvm   %s\n", k->dev_kvm_usable ? "usable" : k->dev_kvm ? "present, cannot be opened" : "absent");
	fprintf(f, "tracefs    %s\n", k->tracefs ? "mounted" : "not mounted (vcpustat mounts it)");
	if (!r->privileged) {
		fprintf(f, "BPF        not probed: %s\n", r->open_error);
		return;
	}
	fprintf(f, "BPF        ring buffers %s, atomics %s, task storage %s, bpf_task_from_pid %s, pidfds of threads %s\n",
		yes(k->ringbuf), yes(k->atomics), yes(k->task_storage), yes(k->task_from_pid), yes(k->pidfd_thread));
	if (!r->opened) {
		fprintf(f, "programs   NOT LOADED: %s\n", r->open_error[0] ? r->open_error : strerror(-r->open_err));
		return;
	}
	fprintf(f, "object     %s\n", r->compat ? "compat (no BPF atomics beyond add on this kernel)" : "main");
	fprintf(f, "mode       %s\n", r->marks ? "marks (the scheduler programs test only task structs)" :
					       "hot page (the scheduler programs test one page of bits)");
	fprintf(f, "rings      %s\n", r->rings);
	fprintf(f, "programs\n");
	for (size_t i = 0; i < r->nr_progs; i++) {
		const struct vcpustat_prog *p = &r->progs[i];

		fprintf(f, "  %-28s %-27s %-15s %-8s%s%s\n", p->name, p->tracepoint, p->form, prog_status[p->status],
			p->message[0] ? " " : "", p->message);
	}
	exit_sentence(r, line, sizeof(line));
	fprintf(f, "kvm_exit   %s\n", line);
	if (r->kvm_vms && !r->kvm_exits_known && r->kvm_exits_why[0])
		fprintf(f, "           (KVM's own exit counts unknown: %s)\n", r->kvm_exits_why);
	if (r->health.problems) {
		health_message(&r->health, NULL, NULL, line, sizeof(line));
		fprintf(f, "BLIND      %s\n", line);
	}
}

void probe_json_write(struct jw *w, const struct probe_report *r)
{
	const struct vcpustat_kernel *k = &r->kernel;
	char line[512];

	jw_object(w, NULL);
	jw_object(w, "kernel");
	jw_string(w, "release", k->release);
	jw_string(w, "machine", k->machine);
	jw_bool(w, "vmlinux_btf", k->vmlinux_btf);
	jw_bool(w, "kvm_module", k->kvm_loaded);
	jw_bool(w, "kvm_btf", k->kvm_btf);
	jw_bool(w, "dev_kvm", k->dev_kvm);
	jw_bool(w, "dev_kvm_usable", k->dev_kvm_usable);
	jw_bool(w, "tracefs", k->tracefs);
	if (r->privileged) {
		jw_bool(w, "ringbuf", k->ringbuf);
		jw_bool(w, "atomics", k->atomics);
		jw_bool(w, "task_storage", k->task_storage);
		jw_bool(w, "task_from_pid", k->task_from_pid);
		jw_bool(w, "pidfd_thread", k->pidfd_thread);
	}
	jw_end(w);
	jw_bool(w, "loaded", r->opened);
	if (!r->opened) {
		jw_string(w, "error", r->open_error[0] ? r->open_error : strerror(-r->open_err));
		jw_end(w);
		return;
	}
	jw_string(w, "object", r->compat ? "compat" : "main");
	jw_string(w, "mode", r->marks ? "marks" : "hot_page");
	jw_string(w, "rings", r->rings);
	jw_array(w, "programs");
	for (size_t i = 0; i < r->nr_progs; i++) {
		const struct vcpustat_prog *p = &r->progs[i];

		jw_object(w, NULL);
		jw_string(w, "name", p->name);
		jw_string(w, "tracepoint", p->tracepoint);
		jw_string(w, "form", p->form);
		jw_string(w, "status", prog_status[p->status]);
		if (p->message[0])
			jw_string(w, "message", p->message);
		jw_end(w);
	}
	jw_end(w);
	jw_object(w, "kvm_exit");
	jw_string(w, "verdict", exit_verdicts[r->kvm_exit]);
	jw_real(w, "seconds", r->seconds);
	jw_int(w, "kvm_vms", r->kvm_vms);
	if (r->kvm_exits_known)
		jw_int(w, "kvm_exits", (long long)r->kvm_exits);
	else
		jw_null(w, "kvm_exits");
	if (r->kvm_exits_why[0])
		jw_string(w, "kvm_exits_unknown", r->kvm_exits_why);
	jw_int(w, "seen_exits", (long long)r->seen_exits);
	jw_int(w, "userspace_exits", (long long)r->userspace_exits);
	exit_sentence(r, line, sizeof(line));
	jw_string(w, "message", line);
	jw_end(w);
	jw_array(w, "health_problems");
	for (unsigned int b = 1; b < 1u << HEALTH_NR_PROBLEMS; b <<= 1)
		if (r->health.problems & b)
			jw_string(w, NULL, health_problem_name(b));
	jw_end(w);
	jw_end(w);
}
