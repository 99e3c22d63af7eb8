// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * import's options into struct import_opts (struct import_args), and its
 * end-of-run report: warnings, text, JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "import/import.h"

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || end == s || *end || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

void import_args_init(struct import_args *ia, int argc, char **argv)
{
	size_t clen = 0;

	memset(ia, 0, sizeof(*ia));
	for (int i = 0; i < argc && clen < sizeof(ia->command) - 2; i++)
		clen += (size_t)snprintf(ia->command + clen, sizeof(ia->command) - clen, "%s%s",
					 i ? " " : "vcpustat ", argv[i]);
	ia->o.guests = ia->guests;
	ia->o.names = ia->names;
	ia->o.vms = ia->vms;
	ia->o.meta = ia->meta;
	ia->o.command = ia->command;
}

void import_args_free(struct import_args *ia)
{
	for (size_t i = 0; i < IMPORT_MAX_ITEMS; i++)
		free(ia->tidbufs[i]);
}

int import_args_guest(struct import_args *ia, char *arg, struct vcpustat_error *err)
{
	char *eq = strchr(arg, '='), *at;

	if (!eq || eq == arg || !eq[1] || ia->o.nguests >= IMPORT_MAX_ITEMS)
		return verror(err, -EINVAL, "--guest %s: VM=GUEST_TRACE or VM@L1=GUEST_TRACE expected (at most %d)",
			      arg, IMPORT_MAX_ITEMS);
	*eq = '\0';
	at = strchr(arg, '@');
	if (at && (at == arg || !at[1] || strchr(at + 1, '@'))) {
		*eq = '=';
		return verror(err, -EINVAL, "--guest %s: VM@L1=GUEST_TRACE expected (the nested VM, then its L1)",
			      arg);
	}
	if (at)
		*at = '\0';
	ia->guests[ia->o.nguests++] = (struct import_guest){ arg, eq + 1, at ? at + 1 : NULL };
	return 0;
}

int import_args_vm_name(struct import_args *ia, char *arg, struct vcpustat_error *err)
{
	char *eq = strchr(arg, '=');

	if (!eq || !eq[1] || ia->o.nnames >= IMPORT_MAX_ITEMS)
		return verror(err, -EINVAL, "--vm-name %s: PID=NAME expected", arg);
	*eq = '\0';
	if (parse_u32(arg, &ia->names[ia->o.nnames].pid))
		return verror(err, -EINVAL, "--vm-name %s=%s: PID must be a number", arg, eq + 1);
	ia->names[ia->o.nnames++].name = eq + 1;
	return 0;
}

int import_args_vm(struct import_args *ia, char *arg, struct vcpustat_error *err)
{
	char *eq = strchr(arg, '='), *tok, *save = NULL;
	uint32_t *tids;
	size_t n = 0;

	if (!eq || eq == arg || !eq[1] || ia->o.nvms >= IMPORT_MAX_ITEMS)
		return verror(err, -EINVAL, "--vm %s: NAME=TID[,TID...] expected", arg);
	*eq = '\0';
	tids = calloc(strlen(eq + 1), sizeof(*tids));
	if (!tids)
		return verror(err, -ENOMEM, "out of memory");
	ia->tidbufs[ia->o.nvms] = tids;
	for (tok = strtok_r(eq + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (parse_u32(tok, &tids[n++]))
			return verror(err, -EINVAL, "--vm %s=...: '%s' is not a thread id", arg, tok);
	ia->vms[ia->o.nvms++] = (struct import_vm_threads){ arg, tids, n };
	return 0;
}

int import_args_isa(struct import_args *ia, const char *arg, struct vcpustat_error *err)
{
	if (!strcmp(arg, "vmx"))
		ia->o.trace.isa = KVM_ISA_VMX;
	else if (!strcmp(arg, "svm"))
		ia->o.trace.isa = KVM_ISA_SVM;
	else
		return verror(err, -EINVAL, "--isa %s: vmx or svm", arg);
	return 0;
}

int import_args_cpus(struct import_args *ia, const char *arg, struct vcpustat_error *err)
{
	if (parse_u32(arg, &ia->o.nr_cpus) || !ia->o.nr_cpus || ia->o.nr_cpus > 65536)
		return verror(err, -EINVAL, "--cpus %s: a number of CPUs (1..65536)", arg);
	return 0;
}

int import_args_refuse_input(const struct import_args *ia, struct vcpustat_error *err)
{
	const char *in[IMPORT_MAX_ITEMS + 1];
	size_t n = 0;

	in[n++] = ia->o.host;
	for (size_t i = 0; i < ia->o.nguests; i++)
		in[n++] = ia->guests[i].path;
	return outfile_refuse_input(ia->o.out, in, n, err);
}

static const char *quality_hint(const struct import_guest_result *g)
{
	switch (g->sync.quality) {
	case VCPUSTAT_SYNC_APPROXIMATE:
		return "approximate: the drift is bounded on one side only; the merge has no error bound";
	case VCPUSTAT_SYNC_INCOMPLETE:
		return "incomplete: sync messages in one direction only; no drift assumed, no error bound";
	case VCPUSTAT_SYNC_FAIL:
		return "fail: the sync messages contradict each other after a point; the last good transform was used";
	default:
		return NULL;
	}
}

void import_warnings(const struct import_opts *o, const struct import_result *res, import_warn_fn warn)
{
	const struct trace_stats *h = &res->host;

	for (unsigned int i = 0; i < h->nmessages; i++)
		warn("skipped: %s", h->messages[i]);
	if (h->malformed > h->nmessages)
		warn("%s: %llu malformed lines skipped in all (the first %u shown)", o->host,
		     (unsigned long long)h->malformed, h->nmessages);
	if (h->lost)
		warn("%s: the tracer lost %llu events (%llu LOST lines): the timeline has holes there", o->host,
		     (unsigned long long)h->lost, (unsigned long long)h->lost_lines);
	if (res->late)
		warn("%s: %llu records came more than 20 ms out of time order and were clamped", o->host,
		     (unsigned long long)res->late);
	if (h->unknown_reasons)
		warn("%s: %llu kvm_exit lines had exit reasons vcpustat does not know (recorded as VMX_65535)",
		     o->host, (unsigned long long)h->unknown_reasons);
	if (res->orphan_vcpus)
		warn("%s: %llu vCPU threads with no known process, each made its own VM: trace with "
		     "options/record-tgid, or say --vm NAME=TID,...",
		     o->host, (unsigned long long)res->orphan_vcpus);
	for (size_t i = 0; i < res->nguests; i++) {
		const struct import_guest_result *g = &res->guests[i];
		const char *hint = quality_hint(g);

		for (unsigned int m = 0; m < g->trace.nmessages; m++)
			warn("skipped: %s", g->trace.messages[m]);
		if (hint)
			warn("%s (VM %s): sync %s", o->guests[i].path, g->vm, hint);
		if (!g->host_mode_known && g->parent[0])
			warn("%s (VM %s): the trace of %s shows no kvm_entry/kvm_exit for this VM: a vCPU in %s's "
			     "hypervisor counts as running guest code",
			     o->guests[i].path, g->vm, g->parent, g->parent);
		else if (!g->host_mode_known)
			warn("%s (VM %s): the host trace shows no kvm_entry/kvm_exit for this VM: a vCPU in the "
			     "hypervisor counts as running guest code (virt_preempted = preempted, waiting or "
			     "blocked on the host)",
			     o->guests[i].path, g->vm);
		if (g->ml.after_end)
			warn("%s (VM %s): %llu guest events after the end of the host trace were not used",
			     o->guests[i].path, g->vm, (unsigned long long)g->ml.after_end);
	}
}

static json_t *trace_json(const char *path, const struct trace_stats *t)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "path", path, "lines",
			      (json_int_t)t->lines, "events", (json_int_t)t->events, "skipped", (json_int_t)t->skipped,
			      "malformed", (json_int_t)t->malformed, "lost", (json_int_t)t->lost, "out_of_order",
			      (json_int_t)t->out_of_order, "max_backstep_ns", (json_int_t)t->max_backstep_ns,
			      "first_ns", (json_int_t)t->first_ns, "last_ns", (json_int_t)t->last_ns);
	json_t *msgs = json_array();

	for (unsigned int i = 0; i < t->nmessages; i++)
		json_array_append_new(msgs, json_string(t->messages[i]));
	json_object_set_new(o, "messages", msgs);
	return o;
}

static json_t *num_or_null(long double v)
{
	return isfinite(v) ? json_real((double)v) : json_null();
}

json_t *import_result_json(const struct import_opts *o, const struct import_result *res)
{
	json_t *doc = json_pack("{s:s, s:o, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "output", o->out, "host",
				trace_json(o->host, &res->host), "two_passes", res->two_passes, "records",
				(json_int_t)res->records, "intervals", (json_int_t)res->intervals, "late",
				(json_int_t)res->late, "vms", (json_int_t)res->vms, "vcpus", (json_int_t)res->vcpus,
				"start_ns", (json_int_t)res->start_ns, "end_ns", (json_int_t)res->end_ns);
	json_t *guests = json_array();

	for (size_t i = 0; i < res->nguests; i++) {
		const struct import_guest_result *g = &res->guests[i];
		const struct vcpustat_sync_transform *t = &g->sync.transform;
		json_t *j;

		json_array_append_new(
			guests,
			j =
			json_pack("{s:s, s:I, s:o, s:{s:s, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}, s:I, s:I, s:I, "
				  "s:b}",
				  "vm", g->vm, "pid", (json_int_t)g->tgid, "trace", trace_json(o->guests[i].path, &g->trace),
				  "sync", "quality", vcpustat_sync_quality_name(g->sync.quality), "a",
				  num_or_null(t->mean.slope), "b", num_or_null(vcpustat_sync_line_offset(&t->mean)),
				  "max_error_ns", num_or_null(t->max_error_ns), "a_markers", (json_int_t)g->na, "d_markers",
				  (json_int_t)g->nd, "hypercalls", (json_int_t)g->nb, "entries", (json_int_t)g->nc,
				  "guest_to_host", (json_int_t)g->protocol.guest_to_host, "host_to_guest",
				  (json_int_t)g->protocol.host_to_guest, "events", (json_int_t)g->ml.applied, "after_end",
				  (json_int_t)g->ml.after_end, "threads", (json_int_t)g->ml.threads, "host_mode_known",
				  g->host_mode_known));
		if (g->parent[0]) /* nested: through its L1 (sync above: to the host, composed) */
			json_object_set_new(j, "through",
					    json_pack("{s:s, s:o, s:o, s:I}", "vm", g->parent, "a",
						      num_or_null(g->to_parent.mean.slope), "b",
						      num_or_null(vcpustat_sync_line_offset(&g->to_parent.mean)),
						      "vcpu_states", (json_int_t)g->parent_states));
	}
	json_object_set_new(doc, "guests", guests);
	return doc;
}

void import_report_text(FILE *f, const char *prog, const struct import_opts *o, const struct import_result *res)
{
	const struct trace_stats *h = &res->host;

	fprintf(f,
		"%s: %s: %llu lines, %llu events used, %llu skipped (events not used), %llu malformed, "
		"%llu lost by the tracer, %llu out of order (by up to %.3f ms)%s\n",
		prog, o->host, (unsigned long long)h->lines, (unsigned long long)h->events,
		(unsigned long long)h->skipped, (unsigned long long)h->malformed, (unsigned long long)h->lost,
		(unsigned long long)h->out_of_order, h->max_backstep_ns / 1e6, res->two_passes ? " (read twice)" : "");
	for (size_t i = 0; i < res->nguests; i++) {
		const struct import_guest_result *g = &res->guests[i];
		const struct vcpustat_sync_transform *t = &g->sync.transform;

		fprintf(f,
			"%s: %s -> VM %s: %llu events used, %llu threads; sync %s from %zu+%zu matches "
			"(host = guest × %.12Lf %+.9Lf s, error ≤ %.0Lf ns)\n",
			prog, o->guests[i].path, g->vm, (unsigned long long)g->ml.applied,
			(unsigned long long)g->ml.threads, vcpustat_sync_quality_name(g->sync.quality),
			g->protocol.guest_to_host, g->protocol.host_to_guest, t->mean.slope,
			vcpustat_sync_line_offset(&t->mean) / 1e9L, t->max_error_ns);
		if (g->parent[0])
			fprintf(f, "%s:   nested in VM %s: synchronized through its trace (%s = guest × %.12Lf %+.9Lf s), "
				   "%llu vCPU states from it\n",
				prog, g->parent, g->parent, g->to_parent.mean.slope,
				vcpustat_sync_line_offset(&g->to_parent.mean) / 1e9L,
				(unsigned long long)g->parent_states);
	}
	fprintf(f, "%s: %llu VMs, %llu vCPUs -> %llu records -> %llu intervals in %s\n", prog,
		(unsigned long long)res->vms, (unsigned long long)res->vcpus, (unsigned long long)res->records,
		(unsigned long long)res->intervals, o->out);
}
