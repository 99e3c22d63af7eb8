// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pcpu.c - the fused per-physical-CPU view of a window of a recording
 * (`vcpustat report --pcpu`, docs/record.md): for each CPU, how its time went
 * to guest code (which VM and vCPU), the hypervisor on behalf of a vCPU, host
 * threads (which; a VMM's own threads named with their VM) and idle, and its
 * top occupants.
 *
 * vCPU time comes from each vCPU's state and pcpu (vcpu_on_cpu), and where
 * its pcpu has no value yet, from the CPU /host/cpus/<n>/current_tid shows
 * its thread on; host threads and idle from current_tid, which only --level
 * full records: without it they are "not recorded".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model/pcpu.h"
#include "model/recording.h"

struct occ_key {
	uint32_t cpu;
	int kind;
	int vm;	     /* index among the file's VMs, -1 */
	int vcpu;    /* -1 */
	uint32_t tid;
	int64_t guest_tid; /* -1: not known */
};

struct walk {
	int (*visit)(void *ctx, const struct pcpu_seg *s);
	void *ctx;
	struct hashmap vcpu_tids; /* tid -> 1 */
	const struct id_set *cpus; /* only these CPUs (NULL, empty: all) */
};

static int emit(struct walk *w, const struct pcpu_seg *s)
{
	return id_set_has(w->cpus, s->cpu) ? w->visit(w->ctx, s) : 0;
}

struct vcpu_ctx {
	struct walk *w;
	int vm, vcpu;
	uint32_t tid;
	struct sht_interval *gtid; /* guest_tid intervals (imports with guest traces), in time order */
	size_t ngtid, at;
};

/*
 * A stretch of the vCPU on a CPU; in guest code, cut where the guest thread
 * it ran changes (guest_tid), each piece naming it.
 */
static int vcpu_visit(void *ctx, uint64_t a, uint64_t b, uint32_t cpu, int state)
{
	struct vcpu_ctx *c = ctx;
	struct pcpu_seg s = { cpu, a, b, state == VCPU_GUEST ? PCPU_GUEST : PCPU_HYPERVISOR, c->vm, c->vcpu, c->tid, -1 };
	int e = 0;

	if (state != VCPU_GUEST || !c->ngtid)
		return emit(c->w, &s);
	for (uint64_t t = a; t < b && !e; t = s.end) {
		const struct sht_interval *g;

		while (c->at < c->ngtid && c->gtid[c->at].end <= t)
			c->at++;
		g = c->at < c->ngtid ? &c->gtid[c->at] : NULL;
		s.start = t;
		if (!g || g->start >= b) { /* before the guest's first switch on it, or after its trace: not known */
			s.end = b;
			s.guest_tid = -1;
		} else if (g->start > t) {
			s.end = g->start;
			s.guest_tid = -1;
		} else {
			s.end = g->end < b ? g->end : b;
			s.guest_tid = g->value.type == SHT_INT ? g->value.i : -1;
		}
		e = emit(c->w, &s);
	}
	return e;
}

/* A vCPU thread's stretch on a CPU, as /host/cpus/<n>/current_tid (level full) tells it. */
struct on_cpu {
	uint32_t tid, cpu;
	uint64_t start, end;
};

static int by_tid_start(const void *a, const void *b)
{
	const struct on_cpu *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Every vCPU thread's stretches on a CPU in [t1, t2], by thread and time. */
static int vcpu_threads_on_cpus(struct walk *w, struct sht_reader *r, uint64_t t1, uint64_t t2, struct on_cpu **out,
				size_t *nout, struct vcpustat_error *err)
{
	uint32_t cpus = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "cpus");
	struct on_cpu *v = NULL;
	size_t n = 0, cap = 0;
	int e = 0;

	for (uint32_t c = report_first_child(r, cpus); c != SHT_NO_ATTR && !e; c = sht_attr_next_sibling(r, c)) {
		uint32_t cur = sht_attr_child(r, c, "current_tid"), cpu = (uint32_t)atoi(sht_attr_name(r, c));
		struct sht_interval *iv = NULL;
		size_t ni = 0;

		if (cur == SHT_NO_ATTR || (e = sht_query_range(r, cur, NULL, t1, t2, &iv, &ni, err)))
			continue;
		for (size_t i = 0; i < ni && !e; i++) {
			uint32_t tid = iv[i].value.type == SHT_INT ? (uint32_t)iv[i].value.i : 0;

			if (!tid || !hashmap_lookup(&w->vcpu_tids, &tid))
				continue;
			if (n == cap) {
				struct on_cpu *a = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*a));

				if (!a) {
					e = -ENOMEM;
					break;
				}
				v = a;
			}
			v[n++] = (struct on_cpu){ tid, cpu, iv[i].start < t1 ? t1 : iv[i].start,
						  iv[i].end > t2 ? t2 : iv[i].end };
		}
		free(iv);
	}
	if (e) {
		free(v);
		return e;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), by_tid_start);
	*out = v;
	*nout = n;
	return 0;
}

/*
 * The vCPU's time on a CPU that its pcpu does not place: a vCPU switched in
 * before its first event gets its pcpu only at its first switch-out, but
 * current_tid says where its thread ran. Its pieces in guest code or the
 * hypervisor where pcpu has no value go to that CPU (stretches: its thread's,
 * in time order).
 */
static int unplaced(struct vcpu_ctx *c, struct sht_reader *r, uint32_t vc, uint64_t t1, uint64_t t2,
		    const struct on_cpu *on, size_t non, struct vcpustat_error *err)
{
	uint32_t st = sht_attr_child(r, vc, "state"), pc = sht_attr_child(r, vc, "pcpu");
	struct sht_interval *s = NULL, *p = NULL;
	size_t ns = 0, np = 0, i = 0, j = 0;
	int e = 0;

	if (!non || st == SHT_NO_ATTR)
		return 0;
	if ((e = sht_query_range(r, st, NULL, t1, t2, &s, &ns, err)) ||
	    (pc != SHT_NO_ATTR && (e = sht_query_range(r, pc, NULL, t1, t2, &p, &np, err))))
		goto out;
	c->at = 0; /* vcpu_visit() walks guest_tid forwards: from the start again */
	for (size_t k = 0; k < non && !e; k++) {
		for (; i < ns && s[i].end <= on[k].start; i++)
			;
		for (size_t si = i; si < ns && s[si].start < on[k].end && !e; si++) {
			uint64_t x = s[si].start > on[k].start ? s[si].start : on[k].start;
			uint64_t y = s[si].end < on[k].end ? s[si].end : on[k].end;
			int state = s[si].value.type == SHT_INT ? (int)s[si].value.i : -1;

			if (state != VCPU_GUEST && state != VCPU_HOST && state != VCPU_POLL)
				continue;
			for (; j < np && p[j].end <= x; j++)
				;
			/* the pieces of [x, y) where pcpu has no value (vcpu_on_cpu() gave the others) */
			for (size_t pj = j; pj < np && p[pj].start < y && x < y && !e; pj++) {
				if (p[pj].value.type != SHT_INT || p[pj].value.i < 0)
					continue;
				if (p[pj].start > x)
					e = vcpu_visit(c, x, p[pj].start, on[k].cpu, state);
				if (p[pj].end > x)
					x = p[pj].end;
			}
			if (!e && x < y)
				e = vcpu_visit(c, x, y, on[k].cpu, state);
		}
	}
out:
	free(s);
	free(p);
	return e;
}

/* Host threads and idle from current_tid (level full); vCPU threads are counted from their own states. */
static int host_side(struct walk *w, struct sht_reader *r, uint64_t t1, uint64_t t2, struct vcpustat_error *err)
{
	uint32_t cpus = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "cpus");
	int e = 0;

	for (uint32_t c = report_first_child(r, cpus); c != SHT_NO_ATTR && !e; c = sht_attr_next_sibling(r, c)) {
		uint32_t cur = sht_attr_child(r, c, "current_tid"), cpu = (uint32_t)atoi(sht_attr_name(r, c));
		struct sht_interval *iv = NULL;
		size_t n = 0;

		if (cur == SHT_NO_ATTR)
			continue;
		if ((e = sht_query_range(r, cur, NULL, t1, t2, &iv, &n, err)))
			break;
		for (size_t i = 0; i < n && !e; i++) {
			struct pcpu_seg s = { cpu,	 iv[i].start < t1 ? t1 : iv[i].start, iv[i].end > t2 ? t2 : iv[i].end,
					      PCPU_IDLE, -1, -1, 0, -1 };

			if (s.start >= s.end || iv[i].value.type != SHT_INT)
				continue;
			s.tid = (uint32_t)iv[i].value.i;
			if (s.tid && hashmap_lookup(&w->vcpu_tids, &s.tid))
				continue;
			if (s.tid)
				s.kind = PCPU_HOST;
			e = emit(w, &s);
		}
		free(iv);
	}
	return e;
}

int pcpu_walk(struct sht_reader *r, uint64_t t1, uint64_t t2, const struct id_set *cpus,
	      int (*visit)(void *ctx, const struct pcpu_seg *s), void *ctx, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	struct walk w = { visit, ctx, .cpus = cpus };
	struct on_cpu *on = NULL;
	size_t non = 0, at = 0;
	int e = 0, nvm = 0;

	if (hashmap_init(&w.vcpu_tids, sizeof(uint32_t), 1, 0))
		return verror(err, -ENOMEM, "out of memory");
	/* every vCPU thread first: current_tid's stretches of those are told by the vCPUs' states */
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm))
		for (uint32_t vc = report_first_child(r, sht_attr_child(r, vm, "vcpus")); vc != SHT_NO_ATTR && !e;
		     vc = sht_attr_next_sibling(r, vc)) {
			uint32_t tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0);

			if (tid && hashmap_update(&w.vcpu_tids, &tid, NULL))
				e = -ENOMEM;
		}
	if (!e)
		e = vcpu_threads_on_cpus(&w, r, t1, t2, &on, &non, err);
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm)) {
		for (uint32_t vc = report_first_child(r, sht_attr_child(r, vm, "vcpus")); vc != SHT_NO_ATTR && !e;
		     vc = sht_attr_next_sibling(r, vc)) {
			struct vcpu_ctx c = { &w, nvm, atoi(sht_attr_name(r, vc)), 0 };
			uint32_t g = sht_attr_child(r, vc, "guest_tid");

			c.tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0);
			if (g != SHT_NO_ATTR)
				e = sht_query_range(r, g, NULL, t1, t2, &c.gtid, &c.ngtid, err);
			if (!e)
				e = vcpu_on_cpu(r, vc, t1, t2, vcpu_visit, &c, err);
			for (at = 0; at < non && on[at].tid < c.tid; at++)
				;
			if (!e && c.tid && at < non) {
				size_t end = at;

				while (end < non && on[end].tid == c.tid)
					end++;
				e = unplaced(&c, r, vc, t1, t2, on + at, end - at, err);
			}
			free(c.gtid);
		}
		nvm++;
	}
	if (!e)
		e = host_side(&w, r, t1, t2, err);
	free(on);
	hashmap_free(&w.vcpu_tids);
	return e == -ENOMEM ? verror(err, e, "out of memory") : e;
}

struct build {
	struct pcpu_view *v;
	struct hashmap occ; /* struct occ_key -> uint64_t ns */
	const struct id_set *tids; /* --tid: the occupants kept */
};

static struct pcpu_row *row(struct pcpu_view *v, uint32_t cpu)
{
	for (size_t i = 0; i < v->nr_cpus; i++)
		if (v->cpus[i].cpu == cpu)
			return &v->cpus[i];
	return NULL;
}

static int add(void *ctx, const struct pcpu_seg *s)
{
	struct build *b = ctx;
	struct pcpu_row *rw = row(b->v, s->cpu);
	uint64_t *have, ns = s->end - s->start;
	struct occ_key k;

	if (!rw) {
		struct pcpu_row *arr = realloc(b->v->cpus, (b->v->nr_cpus + 1) * sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		b->v->cpus = arr;
		rw = &arr[b->v->nr_cpus++];
		memset(rw, 0, sizeof(*rw));
		rw->cpu = s->cpu;
	}
	rw->ns[s->kind] += ns;
	if (s->kind == PCPU_IDLE || !id_set_has(b->tids, s->tid))
		return 0;
	memset(&k, 0, sizeof(k));
	k.cpu = s->cpu;
	k.kind = s->kind;
	k.vm = s->vm;
	k.vcpu = s->vcpu;
	k.tid = s->tid;
	k.guest_tid = s->guest_tid;
	have = hashmap_lookup(&b->occ, &k);
	if (have) {
		*have += ns;
		return 0;
	}
	return hashmap_insert(&b->occ, &k, &ns);
}

static int by_cpu(const void *a, const void *b)
{
	const struct pcpu_row *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static int by_ns(const void *a, const void *b)
{
	const struct pcpu_occupant *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The thread an occupant shown is named after: a guest thread in guest code
 * (/vms/<vm>/threads/<guest tid>), a host thread (/host/threads/<tid>);
 * SHT_NO_ATTR if none.
 */
static uint32_t occupant_thread(struct sht_reader *r, const struct pcpu_occupant *o)
{
	char name[24];

	if (o->kind == PCPU_GUEST && o->guest_tid > 0) {
		uint32_t vm = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "vms"), o->vm);

		snprintf(name, sizeof(name), "%lld", (long long)o->guest_tid);
		return sht_attr_child(r, sht_attr_child(r, vm, "threads"), name);
	}
	if (o->kind == PCPU_HOST) {
		uint32_t th = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "threads");

		snprintf(name, sizeof(name), "%u", o->tid);
		return th == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_child(r, th, name);
	}
	return SHT_NO_ATTR;
}

/*
 * The names (and a host thread's pid) of the occupants shown, read for all of
 * them in one query: a query per occupant would read every leaf of the file
 * again for each. A name that cannot be read is left empty ("?"); only running out
 * of memory is an error.
 */
static int occupant_names(struct sht_reader *r, struct pcpu_view *v, struct vcpustat_error *err)
{
	struct report_thread *t;
	struct hashmap at; /* thread attribute -> index in t */
	size_t n = 0, shown = 0;
	int e = 0;

	for (size_t i = 0; i < v->nr_cpus; i++)
		shown += v->cpus[i].nr_occ;
	t = calloc(shown ? shown : 1, sizeof(*t));
	if (!t || hashmap_init(&at, sizeof(uint32_t), sizeof(size_t), 0)) {
		free(t);
		return verror(err, -ENOMEM, "out of memory");
	}
	/* a host thread is shown on every CPU it is among the top of: its name is read once */
	for (size_t i = 0; i < v->nr_cpus && !e; i++)
		for (size_t o = 0; o < v->cpus[i].nr_occ && !e; o++) {
			uint32_t th = occupant_thread(r, &v->cpus[i].occ[o]);

			if (th == SHT_NO_ATTR || hashmap_lookup(&at, &th))
				continue;
			if (!(e = hashmap_insert(&at, &th, &n)))
				t[n++].th = th;
		}
	if (!e && n)
		e = report_thread_names(r, t, n, NULL);
	for (size_t i = 0; i < v->nr_cpus && e != -ENOMEM; i++)
		for (size_t o = 0; o < v->cpus[i].nr_occ; o++) {
			struct pcpu_occupant *oc = &v->cpus[i].occ[o];
			uint32_t th = occupant_thread(r, oc);
			const size_t *k = th == SHT_NO_ATTR ? NULL : hashmap_lookup(&at, &th);

			if (!k)
				continue;
			if (oc->kind == PCPU_HOST) {
				snprintf(oc->comm, sizeof(oc->comm), "%s", t[*k].name);
				oc->pid = t[*k].pid;
			} else {
				snprintf(oc->guest_comm, sizeof(oc->guest_comm), "%s", t[*k].name);
			}
		}
	free(t);
	hashmap_free(&at);
	return e == -ENOMEM ? verror(err, e, "out of memory") : 0;
}

int pcpu_build(struct pcpu_view *v, struct sht_reader *r, uint64_t t1, uint64_t t2, unsigned int top,
	       const struct summary_filter *f, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	struct build b = { .v = v, .tids = f ? &f->tids : NULL };
	char (*vm_names)[128] = NULL;
	uint32_t *vm_pids = NULL;
	size_t pos = 0;
	void *k, *val;
	int e = 0, nvm = 0;

	memset(v, 0, sizeof(*v));
	v->t1 = t1;
	v->t2 = t2;
	v->host_recorded = report_host_recorded(r);
	if (hashmap_init(&b.occ, sizeof(struct occ_key), sizeof(uint64_t), 0))
		return verror(err, -ENOMEM, "out of memory");
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm))
		nvm++;
	vm_names = calloc((size_t)nvm + 1, sizeof(*vm_names));
	vm_pids = calloc((size_t)nvm + 1, sizeof(*vm_pids));
	if (!vm_names || !vm_pids) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	nvm = 0;
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm), nvm++) {
		snprintf(vm_names[nvm], sizeof(vm_names[0]), "%s", sht_attr_name(r, vm));
		vm_pids[nvm] = (uint32_t)report_first_int(r, sht_attr_child(r, vm, "pid"), 0);
	}
	e = pcpu_walk(r, t1, t2, f ? &f->pcpus : NULL, add, &b, err);
	if (e)
		goto out;
	/* each CPU's occupants, most first; the window's rest is unknown (not recorded, or no value) */
	while (hashmap_next(&b.occ, &pos, &k, &val)) {
		const struct occ_key *key = k;
		struct pcpu_row *rw = row(v, key->cpu);
		struct pcpu_occupant *o, *arr = realloc(rw->occ, (rw->nr_occ + 1) * sizeof(*arr));

		if (!arr) {
			e = verror(err, -ENOMEM, "out of memory");
			goto out;
		}
		rw->occ = arr;
		o = &arr[rw->nr_occ++];
		memset(o, 0, sizeof(*o));
		o->kind = key->kind;
		o->vcpu = key->vcpu;
		o->tid = key->tid;
		o->guest_tid = key->guest_tid;
		o->ns = *(uint64_t *)val;
		if (key->vm >= 0)
			snprintf(o->vm, sizeof(o->vm), "%s", vm_names[key->vm]);
	}
	if (v->nr_cpus > 1) /* none: a window past the end of the file (qsort of NULL is undefined) */
		qsort(v->cpus, v->nr_cpus, sizeof(*v->cpus), by_cpu);
	for (size_t i = 0; i < v->nr_cpus; i++) {
		struct pcpu_row *rw = &v->cpus[i];
		uint64_t known = 0;

		for (int s = 0; s < PCPU_NR_KINDS; s++)
			known += rw->ns[s];
		rw->ns[PCPU_UNKNOWN] = t2 - t1 > known ? t2 - t1 - known : 0;
		if (rw->nr_occ > 1)
			qsort(rw->occ, rw->nr_occ, sizeof(*rw->occ), by_ns);
		if (top && rw->nr_occ > top) {
			rw->others = rw->nr_occ - top;
			for (size_t o = top; o < rw->nr_occ; o++)
				rw->others_ns += rw->occ[o].ns;
			rw->nr_occ = top;
		}
	}
	e = occupant_names(r, v, err);
	if (e)
		goto out;
	for (size_t i = 0; i < v->nr_cpus; i++) {
		struct pcpu_row *rw = &v->cpus[i];

		for (size_t o = 0; o < rw->nr_occ; o++) {
			if (rw->occ[o].kind != PCPU_HOST)
				continue;
			for (int m = 0; m < nvm; m++)
				if (rw->occ[o].pid && rw->occ[o].pid == vm_pids[m]) /* the VMM's own thread */
					snprintf(rw->occ[o].vm, sizeof(rw->occ[o].vm), "%s", vm_names[m]);
		}
	}
out:
	hashmap_free(&b.occ);
	free(vm_names);
	free(vm_pids);
	if (e)
		pcpu_free(v);
	return e;
}

void pcpu_free(struct pcpu_view *v)
{
	for (size_t i = 0; i < v->nr_cpus; i++)
		free(v->cpus[i].occ);
	free(v->cpus);
	memset(v, 0, sizeof(*v));
}

static const char *const kind_name[PCPU_NR_KINDS + 1] = { "idle", "guest", "hypervisor", "host", "unknown" };

static double pct(uint64_t ns, const struct pcpu_view *v)
{
	return v->t2 > v->t1 ? 100.0 * (double)ns / (double)(v->t2 - v->t1) : 0;
}

void pcpu_print(FILE *f, const struct pcpu_view *v)
{
	fprintf(f, "%5s %7s %7s %7s %7s %8s  %s\n", "pCPU", "idle", "guest", "hyperv", "host",
		v->host_recorded ? "unknown" : "not rec", "top occupants");
	for (size_t i = 0; i < v->nr_cpus; i++) {
		const struct pcpu_row *rw = &v->cpus[i];

		fprintf(f, "%5u", rw->cpu);
		if (v->host_recorded)
			fprintf(f, " %6.1f%%", pct(rw->ns[PCPU_IDLE], v));
		else
			fprintf(f, " %7s", "-");
		fprintf(f, " %6.1f%% %6.1f%%", pct(rw->ns[PCPU_GUEST], v), pct(rw->ns[PCPU_HYPERVISOR], v));
		if (v->host_recorded)
			fprintf(f, " %6.1f%%", pct(rw->ns[PCPU_HOST], v));
		else
			fprintf(f, " %7s", "-");
		fprintf(f, " %7.1f%% ", pct(rw->ns[PCPU_UNKNOWN], v));
		for (size_t o = 0; o < rw->nr_occ; o++) {
			const struct pcpu_occupant *oc = &rw->occ[o];

			fprintf(f, "%s", o ? ", " : " ");
			if (oc->kind == PCPU_HOST && oc->vm[0])
				fprintf(f, "%s VMM %s (%u)", oc->vm, oc->comm[0] ? oc->comm : "?", oc->tid);
			else if (oc->kind == PCPU_HOST)
				fprintf(f, "%s (%u)", oc->comm[0] ? oc->comm : "?", oc->tid);
			else if (oc->kind == PCPU_GUEST && oc->guest_tid > 0)
				fprintf(f, "%s/%d guest %s (%lld)", oc->vm, oc->vcpu, oc->guest_comm[0] ? oc->guest_comm : "?",
					(long long)oc->guest_tid);
			else if (oc->kind == PCPU_GUEST && oc->guest_tid == 0)
				fprintf(f, "%s/%d guest idle", oc->vm, oc->vcpu);
			else
				fprintf(f, "%s/%d %s", oc->vm, oc->vcpu, oc->kind == PCPU_GUEST ? "guest" : "hyperv");
			fprintf(f, " %.1f%%", pct(oc->ns, v));
		}
		if (rw->others)
			fprintf(f, ", %zu more %.1f%%", rw->others, pct(rw->others_ns, v));
		fprintf(f, "\n");
	}
	if (!v->nr_cpus)
		fprintf(f, "(no vCPU ran in the window%s)\n", v->host_recorded ? " and no CPU was recorded" : "");
	if (!v->host_recorded)
		fprintf(f, "(idle and host threads: recorded only with `vcpustat record --level full`)\n");
}

json_t *pcpu_json(const struct pcpu_view *v)
{
	json_t *cpus = json_array();

	for (size_t i = 0; i < v->nr_cpus; i++) {
		const struct pcpu_row *rw = &v->cpus[i];
		json_t *ns = json_object(), *occ = json_array();

		for (int s = 0; s <= PCPU_NR_KINDS; s++)
			json_object_set_new(ns, kind_name[s],
					    !v->host_recorded && (s == PCPU_IDLE || s == PCPU_HOST)
						    ? json_null()
						    : json_integer((json_int_t)rw->ns[s]));
		for (size_t o = 0; o < rw->nr_occ; o++) {
			const struct pcpu_occupant *oc = &rw->occ[o];
			json_t *j = json_pack("{s:s, s:I}", "kind", kind_name[oc->kind], "ns", (json_int_t)oc->ns);

			json_object_set_new(j, "vm", oc->vm[0] ? json_string(oc->vm) : json_null());
			if (oc->kind != PCPU_HOST)
				json_object_set_new(j, "vcpu", json_integer(oc->vcpu));
			if (oc->kind == PCPU_GUEST && oc->guest_tid >= 0) {
				json_object_set_new(j, "guest_tid", json_integer(oc->guest_tid));
				json_object_set_new(j, "guest_comm", oc->guest_tid ? json_string(oc->guest_comm) : json_null());
			}
			json_object_set_new(j, "tid", json_integer(oc->tid));
			if (oc->kind == PCPU_HOST) {
				json_object_set_new(j, "comm", json_string(oc->comm));
				json_object_set_new(j, "pid", json_integer(oc->pid));
			}
			json_array_append_new(occ, j);
		}
		json_array_append_new(cpus, json_pack("{s:i, s:o, s:o, s:i, s:I}", "cpu", (int)rw->cpu, "ns", ns,
						      "occupants", occ, "others", (int)rw->others, "others_ns",
						      (json_int_t)rw->others_ns));
	}
	return json_pack("{s:b, s:o}", "host_recorded", v->host_recorded, "cpus", cpus);
}
