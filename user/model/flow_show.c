// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flow_show.c - an execution flow (flow.c) as text or JSON (model.h, docs/json.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model/flow.h"

/* The tree system -> process -> thread of the culprits at or above min_impact. */
struct tprocess {
	uint32_t pid;
	const char *name;
	uint64_t ns;
	size_t *threads; /* culprit indices, by ns (the culprits' order) */
	size_t nthreads;
};

struct tsystem {
	const char *name;
	bool in_vm;
	uint64_t ns;
	struct tprocess *procs;
	size_t nprocs;
};

struct tree {
	struct tsystem *sys;
	size_t nsys;
	size_t hidden;	    /* culprits below min_impact */
	uint64_t hidden_ns; /* their time */
};

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->nsys; i++) {
		for (size_t j = 0; j < t->sys[i].nprocs; j++)
			free(t->sys[i].procs[j].threads);
		free(t->sys[i].procs);
	}
	free(t->sys);
	memset(t, 0, sizeof(*t));
}

static int by_sys_ns(const void *a, const void *b)
{
	const struct tsystem *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_proc_ns(const void *a, const void *b)
{
	const struct tprocess *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool shown(const struct flow_culprit *c, double min_impact)
{
	return c->ns > 0 && c->impact >= min_impact;
}

static int tree_build(struct tree *t, const struct flow *f, double min_impact)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < f->nculprits; i++) {
		const struct flow_culprit *c = &f->culprits[i];
		struct tsystem *s = NULL;
		struct tprocess *p = NULL;
		size_t *th;

		if (!shown(c, min_impact)) {
			t->hidden += c->ns > 0;
			t->hidden_ns += c->ns;
			continue;
		}
		for (size_t k = 0; k < t->nsys && !s; k++)
			if (t->sys[k].in_vm == c->in_vm && !strcmp(t->sys[k].name, c->system))
				s = &t->sys[k];
		if (!s) {
			struct tsystem *a = realloc(t->sys, (t->nsys + 1) * sizeof(*a));

			if (!a)
				return -ENOMEM;
			t->sys = a;
			s = &t->sys[t->nsys++];
			memset(s, 0, sizeof(*s));
			s->name = c->system;
			s->in_vm = c->in_vm;
		}
		for (size_t k = 0; k < s->nprocs && !p; k++)
			if (s->procs[k].pid == c->pid && !strcmp(s->procs[k].name, c->process))
				p = &s->procs[k];
		if (!p) {
			struct tprocess *a = realloc(s->procs, (s->nprocs + 1) * sizeof(*a));

			if (!a)
				return -ENOMEM;
			s->procs = a;
			p = &s->procs[s->nprocs++];
			memset(p, 0, sizeof(*p));
			p->pid = c->pid;
			p->name = c->process;
		}
		th = realloc(p->threads, (p->nthreads + 1) * sizeof(*th));
		if (!th)
			return -ENOMEM;
		p->threads = th;
		p->threads[p->nthreads++] = i;
		p->ns += c->ns;
		s->ns += c->ns;
	}
	for (size_t k = 0; k < t->nsys; k++)
		if (t->sys[k].nprocs > 1)
			qsort(t->sys[k].procs, t->sys[k].nprocs, sizeof(*t->sys[k].procs), by_proc_ns);
	if (t->nsys > 1)
		qsort(t->sys, t->nsys, sizeof(*t->sys), by_sys_ns);
	return 0;
}

/* Who a culprit is, for people. */
static const char *culprit_label(const struct flow_culprit *c, char *buf, size_t len)
{
	switch (c->role) {
	case FLOW_ROLE_THREAD:
		if (c->in_vm)
			snprintf(buf, len, "%s: %s (guest tid %u)", c->system, c->name, c->tid);
		else if (c->pid && strcmp(c->process, c->name))
			snprintf(buf, len, "host: %s (tid %u, process %s pid %u)", c->name, c->tid, c->process, c->pid);
		else if (c->pid)
			snprintf(buf, len, "host: %s (tid %u, pid %u)", c->name, c->tid, c->pid);
		else
			snprintf(buf, len, "host: %s (tid %u)", c->name, c->tid);
		break;
	case FLOW_ROLE_IDLE:
		snprintf(buf, len, "%s: idle", c->system);
		break;
	case FLOW_ROLE_HYPERVISOR:
		snprintf(buf, len, "host: hypervisor of %s vCPU %d (tid %u)", c->vm, c->vcpu, c->tid);
		break;
	case FLOW_ROLE_VCPU:
		snprintf(buf, len, "%s: vCPU %d in guest mode (guest thread unknown)", c->system, c->vcpu);
		break;
	default:
		if (c->vcpu >= 0)
			snprintf(buf, len, "%s: vCPU %d, unresolved%s", c->system, c->vcpu, c->cycle ? " (cycle)" : "");
		else if (c->in_vm)
			snprintf(buf, len, "%s: unresolved", c->system);
		else
			snprintf(buf, len, "unknown (no record of who ran)");
		break;
	}
	return buf;
}

static const char *kind_label(unsigned int k)
{
	static const char *const l[FLOW_NR_KINDS] = {
		[FLOW_RUNNING] = "running",	       [FLOW_HYPERVISOR] = "hypervisor",
		[FLOW_GUEST_RUNQ] = "guest run queue", [FLOW_HOST_RUNQ] = "host run queue",
		[FLOW_HOST_BLOCKED] = "host blocked",  [FLOW_BLOCKED] = "blocked",
	};

	return k < FLOW_NR_KINDS ? l[k] : "?";
}

static double pct(uint64_t ns, uint64_t life)
{
	return life ? 100.0 * (double)ns / (double)life : 0;
}

static void target_label(const struct flow *f, char *buf, size_t len)
{
	if (f->target.guest)
		snprintf(buf, len, "%s:%u (%s, guest thread)", f->vm, f->target.tid, f->name);
	else if (f->vcpu >= 0)
		snprintf(buf, len, "%u (%s, %s vCPU %d)", f->target.tid, f->name, f->vm, f->vcpu);
	else
		snprintf(buf, len, "%u (%s)", f->target.tid, f->name);
}

void flow_print(FILE *out, const struct flow *f, struct sht_reader *r, const char *file, double min_impact)
{
	uint64_t life = f->end - f->start;
	char a[64], b[64], d[32], who[192], label[160];
	struct tree t;
	int w;

	target_label(f, label, sizeof(label));
	sht_format_time(r, f->start, false, a, sizeof(a));
	sht_format_time(r, f->end, false, b, sizeof(b));
	fprintf(out, "%s: flow of thread %s%s\n", file, label,
		sht_get_info(r)->recovered ? "  [unfinished recording: up to its last sealed node]" : "");
	fprintf(out, "lifespan in the window: %s .. %s (%s)\n", a, b, format_ns(life, d, sizeof(d)));
	for (unsigned int k = 0; k < FLOW_NR_KINDS; k++)
		fprintf(out, "%s%s %s (%.1f%%)", k ? ", " : "  ", kind_label(k), format_ns(f->ns[k], d, sizeof(d)),
			pct(f->ns[k], life));
	fprintf(out, "\n");
	if (!f->host_cpus)
		fprintf(out, "(who ran on the host's CPUs: recorded only with `vcpustat record --level full`)\n");

	fprintf(out, "\nwho delayed it, D(T) = time / lifespan:\n");
	if (tree_build(&t, f, min_impact)) {
		fprintf(out, "  (out of memory)\n");
		tree_free(&t);
		return;
	}
	if (!t.nsys)
		fprintf(out, "  nobody%s\n", t.hidden ? " above --min-impact" : "");
	else
		fprintf(out, "  %-52s %10s  %7s\n", "SYSTEM / PROCESS / THREAD", "TIME", "D(T)");
	for (size_t s = 0; s < t.nsys; s++) {
		const struct tsystem *sy = &t.sys[s];

		snprintf(who, sizeof(who), "%s%s", sy->in_vm ? "VM " : "", sy->name);
		fprintf(out, "  %-52s %10s  %6.2f%%\n", who, format_ns(sy->ns, d, sizeof(d)), pct(sy->ns, life));
		for (size_t p = 0; p < sy->nprocs; p++) {
			const struct tprocess *pr = &sy->procs[p];

			if (pr->pid)
				snprintf(who, sizeof(who), "  %s (pid %u)", pr->name, pr->pid);
			else
				snprintf(who, sizeof(who), "  %s", pr->name);
			fprintf(out, "  %-52s %10s  %6.2f%%\n", who, format_ns(pr->ns, d, sizeof(d)),
				pct(pr->ns, life));
			for (size_t k = 0; k < pr->nthreads; k++) {
				const struct flow_culprit *c = &f->culprits[pr->threads[k]];

				switch (c->role) {
				case FLOW_ROLE_THREAD:
					snprintf(who, sizeof(who), "    %s (%stid %u)", c->name,
						 c->in_vm ? "guest " : "", c->tid);
					break;
				case FLOW_ROLE_IDLE:
					snprintf(who, sizeof(who), "    swapper (idle)");
					break;
				case FLOW_ROLE_HYPERVISOR:
					snprintf(who, sizeof(who), "    vCPU %d hypervisor (tid %u)", c->vcpu, c->tid);
					break;
				case FLOW_ROLE_VCPU:
					snprintf(who, sizeof(who), "    vCPU %d guest code (tid %u)", c->vcpu, c->tid);
					break;
				default:
					snprintf(who, sizeof(who), "    %s", c->name);
					break;
				}
				fprintf(out, "  %-52s %10s  %6.2f%%\n", who, format_ns(c->ns, d, sizeof(d)),
					c->impact * 100);
			}
		}
	}
	if (t.hidden)
		fprintf(out, "  (%zu culprit%s under --min-impact %g: %s, %.2f%%)\n", t.hidden,
			t.hidden == 1 ? "" : "s", min_impact, format_ns(t.hidden_ns, d, sizeof(d)),
			pct(t.hidden_ns, life));
	tree_free(&t);

	/* the times' width: wall-clock times (recordings) or +seconds (imports) */
	sht_format_time(r, f->end, false, b, sizeof(b));
	w = (int)strlen(b);
	fprintf(out, "\nintervals (%zu):\n", f->niv);
	fprintf(out, "  %-*s %-*s %10s  %-15s  %s\n", w, "START", w, "END", "DURATION", "STATE", "WHO RAN INSTEAD");
	for (size_t i = 0; i < f->niv; i++) {
		const struct flow_interval *iv = &f->iv[i];

		sht_format_time(r, iv->start, false, a, sizeof(a));
		sht_format_time(r, iv->end, false, b, sizeof(b));
		fprintf(out, "  %-*s %-*s %10s  %-15s  %s\n", w, a, w, b, format_ns(iv->end - iv->start, d, sizeof(d)),
			kind_label(iv->kind),
			iv->culprit >= 0 ? culprit_label(&f->culprits[iv->culprit], who, sizeof(who)) : "-");
	}
}

static json_t *culprit_json(const struct flow_culprit *c, size_t id)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer((json_int_t)id));
	json_object_set_new(o, "system", json_string(c->system));
	json_object_set_new(o, "in_vm", json_boolean(c->in_vm));
	json_object_set_new(o, "process", json_string(c->process));
	json_object_set_new(o, "pid", c->pid ? json_integer(c->pid) : json_null());
	json_object_set_new(o, "tid", json_integer(c->tid));
	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "role", json_string(flow_role_name(c->role)));
	json_object_set_new(o, "vm", c->vm[0] ? json_string(c->vm) : json_null());
	json_object_set_new(o, "vcpu", c->vcpu >= 0 ? json_integer(c->vcpu) : json_null());
	if (c->role == FLOW_ROLE_UNRESOLVED)
		json_object_set_new(o, "cycle", json_boolean(c->cycle));
	json_object_set_new(o, "ns", json_integer((json_int_t)c->ns));
	json_object_set_new(o, "impact", json_real(c->impact));
	return o;
}

json_t *flow_json(const struct flow *f, struct sht_reader *r, const char *file, double min_impact)
{
	json_t *o = json_object(), *th = json_object(), *ls = json_object(), *tm = json_object();
	json_t *ivs = json_array(), *cs = json_array(), *tree = json_array();
	uint64_t life = f->end - f->start;
	struct tree t;

	json_object_set_new(th, "tid", json_integer(f->target.tid));
	json_object_set_new(th, "guest", json_boolean(f->target.guest));
	json_object_set_new(th, "name", json_string(f->name));
	json_object_set_new(th, "vm", f->vm[0] ? json_string(f->vm) : json_null());
	json_object_set_new(th, "vcpu", f->vcpu >= 0 ? json_integer(f->vcpu) : json_null());
	json_object_set_new(o, "thread", th);
	json_object_set_new(o, "from_ns", json_integer((json_int_t)f->from));
	json_object_set_new(o, "to_ns", json_integer((json_int_t)f->to));
	json_object_set_new(ls, "start_ns", json_integer((json_int_t)f->start));
	json_object_set_new(ls, "end_ns", json_integer((json_int_t)f->end));
	json_object_set_new(ls, "ns", json_integer((json_int_t)life));
	json_object_set_new(o, "lifespan", ls);
	for (unsigned int k = 0; k < FLOW_NR_KINDS; k++)
		json_object_set_new(tm, flow_kind_name(k), json_integer((json_int_t)f->ns[k]));
	json_object_set_new(o, "time_ns", tm);
	json_object_set_new(o, "culprits_recorded", json_boolean(f->host_cpus));
	json_object_set_new(o, "min_impact", json_real(min_impact));
	for (size_t i = 0; i < f->niv; i++) {
		json_t *v = json_object();

		json_object_set_new(v, "start_ns", json_integer((json_int_t)f->iv[i].start));
		json_object_set_new(v, "end_ns", json_integer((json_int_t)f->iv[i].end));
		json_object_set_new(v, "state", json_string(flow_kind_name(f->iv[i].kind)));
		json_object_set_new(v, "culprit", f->iv[i].culprit >= 0 ? json_integer(f->iv[i].culprit) : json_null());
		json_array_append_new(ivs, v);
	}
	json_object_set_new(o, "intervals", ivs);
	for (size_t i = 0; i < f->nculprits; i++)
		json_array_append_new(cs, culprit_json(&f->culprits[i], i));
	json_object_set_new(o, "culprits", cs);
	if (tree_build(&t, f, min_impact)) {
		tree_free(&t);
		json_decref(tree);
		json_decref(o);
		return NULL;
	}
	for (size_t s = 0; s < t.nsys; s++) {
		const struct tsystem *sy = &t.sys[s];
		json_t *so = json_object(), *ps = json_array();

		json_object_set_new(so, "system", json_string(sy->name));
		json_object_set_new(so, "in_vm", json_boolean(sy->in_vm));
		json_object_set_new(so, "ns", json_integer((json_int_t)sy->ns));
		json_object_set_new(so, "impact", json_real(life ? (double)sy->ns / (double)life : 0));
		for (size_t p = 0; p < sy->nprocs; p++) {
			const struct tprocess *pr = &sy->procs[p];
			json_t *po = json_object(), *ts = json_array();

			json_object_set_new(po, "process", json_string(pr->name));
			json_object_set_new(po, "pid", pr->pid ? json_integer(pr->pid) : json_null());
			json_object_set_new(po, "ns", json_integer((json_int_t)pr->ns));
			json_object_set_new(po, "impact", json_real(life ? (double)pr->ns / (double)life : 0));
			for (size_t k = 0; k < pr->nthreads; k++)
				json_array_append_new(ts, json_integer((json_int_t)pr->threads[k]));
			json_object_set_new(po, "culprits", ts);
			json_array_append_new(ps, po);
		}
		json_object_set_new(so, "processes", ps);
		json_array_append_new(tree, so);
	}
	json_object_set_new(o, "tree", tree);
	json_object_set_new(o, "hidden_culprits", json_integer((json_int_t)t.hidden));
	json_object_set_new(o, "hidden_ns", json_integer((json_int_t)t.hidden_ns));
	tree_free(&t);
	{
		json_t *doc = json_object();

		json_object_set_new(doc, "file", json_string(file));
		json_object_set_new(doc, "flow", o);
		if (sht_get_info(r)->recovered)
			json_object_set_new(doc, "recovered", json_true());
		return doc;
	}
}
