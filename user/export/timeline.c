// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * timeline.c - a recording's timeline for other viewers (export.h): the
 * tracks and their intervals in time order (timeline_internal.h), and the
 * Chrome trace-event JSON that Perfetto's UI and chrome://tracing open, one
 * event at a time (each built with jansson, written as it is made: memory
 * does not grow with the file). The CTF writer is timeline_ctf.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export/timeline_internal.h"
#include "vcpu_fsm.h"
#include "model/recording.h"

#define TL_CHUNK_INTERVALS 100000 /* intervals read per slice of time, about */

/* ---- the tracks ---- */

static bool vm_kept(const char *name, int64_t pid, const struct summary_filter *f)
{
	char p[24];

	if (!f || !f->nr_vms)
		return true;
	snprintf(p, sizeof(p), "%" PRId64, pid);
	for (size_t i = 0; i < f->nr_vms; i++)
		if (!strcmp(f->vms[i], name) || (pid >= 0 && !strcmp(f->vms[i], p)))
			return true;
	return false;
}

/* The first value of attr in the file (type SHT_NULL if none). */
static int first_value(struct sht_reader *r, uint32_t attr, struct sht_value *v, struct vcpustat_error *err)
{
	const struct sht_info *info = sht_get_info(r);
	struct sht_interval *iv = NULL;
	size_t n = 0;
	int e;

	memset(v, 0, sizeof(*v));
	if (attr == SHT_NO_ATTR)
		return 0;
	e = sht_query_range(r, attr, NULL, info->start, info->end, &iv, &n, err);
	for (size_t i = 0; !e && i < n; i++)
		if (iv[i].value.type != SHT_NULL) {
			*v = iv[i].value;
			break;
		}
	free(iv);
	return e;
}

static int add_track(struct timeline *tl, uint32_t attr, enum tl_kind kind, int vm, uint32_t num, int vcpu)
{
	struct tl_track *t;

	if (attr == SHT_NO_ATTR)
		return 0;
	t = realloc(tl->tracks, (tl->nr_tracks + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	tl->tracks = t;
	t[tl->nr_tracks] = (struct tl_track){ .kind = kind, .vm = vm, .num = num, .vcpu = vcpu };
	tl->track_of[attr] = (int32_t)tl->nr_tracks++;
	tl->want[attr] = 1;
	return 0;
}

/* A number as an attribute name ("3"), or -1. */
static long long name_num(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	return errno || end == s || *end || v < 0 || v > UINT32_MAX ? -1 : v;
}

static int cmp_vtid(const void *a, const void *b)
{
	const struct tl_vcpu_tid *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct tl_thread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Every tid of every vCPU of VM vm. */
static int add_vcpu_tids(struct timeline *tl, uint32_t tid_attr, int vm, uint32_t vcpu, struct vcpustat_error *err)
{
	const struct sht_info *info = sht_get_info(tl->r);
	struct sht_interval *iv = NULL;
	size_t n = 0;
	int e =
	    tid_attr == SHT_NO_ATTR ? 0 : sht_query_range(tl->r, tid_attr, NULL, info->start, info->end, &iv, &n, err);

	for (size_t i = 0; !e && i < n; i++) {
		struct tl_vcpu_tid *v;

		if (iv[i].value.type != SHT_INT || iv[i].value.i <= 0)
			continue;
		v = realloc(tl->vtids, (tl->nr_vtids + 1) * sizeof(*v));
		if (!v) {
			e = verror(err, -ENOMEM, "out of memory");
			break;
		}
		tl->vtids = v;
		v[tl->nr_vtids++] = (struct tl_vcpu_tid){ .tid = iv[i].value.i, .vm = vm, .vcpu = vcpu };
	}
	free(iv);
	return e;
}

static int add_vcpu(struct timeline *tl, uint32_t vc, int vm, uint32_t n, struct vcpustat_error *err)
{
	struct tl_vcpu *v = realloc(tl->vcpus, (tl->nr_vcpus + 1) * sizeof(*v));
	struct sht_value tid;
	int e;

	if (!v)
		return verror(err, -ENOMEM, "out of memory");
	tl->vcpus = v;
	e = first_value(tl->r, sht_attr_child(tl->r, vc, "tid"), &tid, err);
	if (e)
		return e;
	v[tl->nr_vcpus++] = (struct tl_vcpu){ .state = sht_attr_child(tl->r, vc, "state"),
					      .pcpu = sht_attr_child(tl->r, vc, "pcpu"),
					      .vm = vm,
					      .vcpu = n,
					      .tid = tid.type == SHT_INT ? tid.i : -1 };
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * No /host/cpus (level vcpu): a CPU track for every CPU a vCPU was on, told
 * by the vCPUs' state (guest or host: on the CPU) and pcpu (which).
 */
static int derive_cpus(struct timeline *tl, struct vcpustat_error *err)
{
	const struct sht_info *info = sht_get_info(tl->r);
	uint32_t nattrs = sht_nattrs(tl->r);
	int e = 0;

	for (size_t k = 0; k < tl->nr_vcpus && !e; k++) {
		struct sht_interval *iv = NULL;
		size_t n = 0;

		if (tl->vcpus[k].pcpu == SHT_NO_ATTR || tl->vcpus[k].state == SHT_NO_ATTR)
			continue;
		tl->want[tl->vcpus[k].pcpu] = tl->want[tl->vcpus[k].state] = 1;
		e = sht_query_range(tl->r, tl->vcpus[k].pcpu, NULL, info->start, info->end, &iv, &n, err);
		for (size_t i = 0; !e && i < n; i++) {
			uint32_t *c;

			if (iv[i].value.type != SHT_INT || iv[i].value.i < 0 || iv[i].value.i > UINT32_MAX ||
			    !id_set_has(tl->filter ? &tl->filter->pcpus : NULL, (uint32_t)iv[i].value.i))
				continue;
			c = realloc(tl->cpus, (tl->nr_cpus + 1) * sizeof(*c));
			if (!c) {
				e = verror(err, -ENOMEM, "out of memory");
				break;
			}
			tl->cpus = c;
			c[tl->nr_cpus++] = (uint32_t)iv[i].value.i;
		}
		free(iv);
	}
	if (e)
		return e;
	if (tl->nr_cpus) {
		size_t u = 0;

		qsort(tl->cpus, tl->nr_cpus, sizeof(*tl->cpus), cmp_u32);
		for (size_t i = 0; i < tl->nr_cpus; i++)
			if (!u || tl->cpus[u - 1] != tl->cpus[i])
				tl->cpus[u++] = tl->cpus[i];
		tl->nr_cpus = u;
	}
	tl->lo = calloc(nattrs ? nattrs : 1, sizeof(*tl->lo));
	tl->hi = calloc(nattrs ? nattrs : 1, sizeof(*tl->hi));
	if (!tl->lo || !tl->hi)
		return verror(err, -ENOMEM, "out of memory");
	tl->derived_cpus = true;
	tl->cpu_track0 = tl->nr_tracks;
	for (size_t i = 0; i < tl->nr_cpus; i++) {
		struct tl_track *t = realloc(tl->tracks, (tl->nr_tracks + 1) * sizeof(*t));

		if (!t)
			return verror(err, -ENOMEM, "out of memory");
		tl->tracks = t;
		t[tl->nr_tracks++] = (struct tl_track){ .kind = TL_PCPU, .vm = -1, .num = tl->cpus[i], .vcpu = -1 };
	}
	return 0;
}

static int load_threads(struct timeline *tl, struct vcpustat_error *err)
{
	uint32_t host = sht_attr_child(tl->r, SHT_NO_ATTR, "host");
	uint32_t threads = host == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_child(tl->r, host, "threads");
	int e = 0;

	if (threads == SHT_NO_ATTR)
		return 0;
	for (uint32_t t = sht_attr_first_child(tl->r, threads); t != SHT_NO_ATTR && !e;
	     t = sht_attr_next_sibling(tl->r, t)) {
		long long tid = name_num(sht_attr_name(tl->r, t));
		struct tl_thread *th;
		struct sht_value v;

		if (tid < 0)
			continue;
		e = first_value(tl->r, sht_attr_child(tl->r, t, "name"), &v, err);
		if (e || v.type != SHT_STR)
			continue;
		th = realloc(tl->threads, (tl->nr_threads + 1) * sizeof(*th));
		if (!th)
			return verror(err, -ENOMEM, "out of memory");
		tl->threads = th;
		th[tl->nr_threads++] = (struct tl_thread){ .tid = tid, .name = v.s };
	}
	if (!e && tl->nr_threads)
		qsort(tl->threads, tl->nr_threads, sizeof(*tl->threads), cmp_thread);
	return e;
}

static int load_vms(struct timeline *tl, const struct summary_filter *filter, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(tl->r, SHT_NO_ATTR, "vms");
	int e = 0;

	/* (the first child of SHT_NO_ATTR is the first top-level attribute: no /vms, no VM) */
	if (vms == SHT_NO_ATTR)
		return 0;
	for (uint32_t vm = sht_attr_first_child(tl->r, vms); vm != SHT_NO_ATTR && !e;
	     vm = sht_attr_next_sibling(tl->r, vm)) {
		uint32_t vcpus = sht_attr_child(tl->r, vm, "vcpus");
		struct sht_value pid;
		struct tl_vm *v;
		bool *k;
		int idx = (int)tl->nr_vms;

		e = first_value(tl->r, sht_attr_child(tl->r, vm, "pid"), &pid, err);
		if (e)
			break;
		v = realloc(tl->vms, (tl->nr_vms + 1) * sizeof(*v));
		k = v ? realloc(tl->kept, (tl->nr_vms + 1) * sizeof(*k)) : NULL;
		if (v)
			tl->vms = v;
		if (!k)
			return verror(err, -ENOMEM, "out of memory");
		tl->kept = k;
		v[idx] = (struct tl_vm){ .name = sht_attr_name(tl->r, vm), .pid = pid.type == SHT_INT ? pid.i : -1 };
		k[idx] = vm_kept(v[idx].name, v[idx].pid, filter);
		tl->nr_vms++;
		tl->nr_kept += k[idx];
		for (uint32_t vc = vcpus == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_first_child(tl->r, vcpus);
		     vc != SHT_NO_ATTR && !e; vc = sht_attr_next_sibling(tl->r, vc)) {
			long long n = name_num(sht_attr_name(tl->r, vc));

			if (n < 0)
				continue;
			e = add_vcpu(tl, vc, idx, (uint32_t)n, err);
			if (!e)
				e = add_vcpu_tids(tl, sht_attr_child(tl->r, vc, "tid"), idx, (uint32_t)n, err);
			if (e || !k[idx] ||
			    !summary_filter_wants_vcpu(filter, (uint32_t)n, (uint32_t)tl->vcpus[tl->nr_vcpus - 1].tid))
				continue;
			if (filter && filter->pcpus.n) {
				struct tl_vcpu *v = &tl->vcpus[tl->nr_vcpus - 1];

				e = vcpu_on_set(tl->r, vc, &filter->pcpus, tl->t1, tl->t2, &v->on, &v->non, err);
				if (e || !v->non) /* never on those CPUs: no track */
					continue;
			}
			if (add_track(tl, sht_attr_child(tl->r, vc, "state"), TL_STATE, idx, (uint32_t)n, (int)tl->nr_vcpus - 1) ||
			    add_track(tl, sht_attr_child(tl->r, vc, "exit_reason"), TL_EXIT, idx, (uint32_t)n,
				      (int)tl->nr_vcpus - 1) ||
			    add_track(tl, sht_attr_child(tl->r, vc, "userspace_exit"), TL_UEXIT, idx, (uint32_t)n,
				      (int)tl->nr_vcpus - 1))
				e = verror(err, -ENOMEM, "out of memory");
		}
	}
	if (!e && tl->nr_vtids)
		qsort(tl->vtids, tl->nr_vtids, sizeof(*tl->vtids), cmp_vtid);
	return e;
}

static int load_cpus(struct timeline *tl, struct vcpustat_error *err)
{
	uint32_t host = sht_attr_child(tl->r, SHT_NO_ATTR, "host");
	uint32_t cpus = host == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_child(tl->r, host, "cpus");

	/* level vcpu (runner_tid only, where tracked threads waited): the CPUs' tracks from the vCPUs */
	if (cpus == SHT_NO_ATTR || !report_host_recorded(tl->r))
		return derive_cpus(tl, err);
	for (uint32_t c = sht_attr_first_child(tl->r, cpus); c != SHT_NO_ATTR; c = sht_attr_next_sibling(tl->r, c)) {
		long long n = name_num(sht_attr_name(tl->r, c));

		if (n >= 0 && id_set_has(tl->filter ? &tl->filter->pcpus : NULL, (uint32_t)n) &&
		    add_track(tl, sht_attr_child(tl->r, c, "current_tid"), TL_PCPU, -1, (uint32_t)n, -1))
			return verror(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int tl_open(struct timeline *tl, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
	    const struct summary_filter *filter, struct vcpustat_error *err)
{
	uint32_t nattrs = sht_nattrs(r);
	uint64_t nchunks;
	int e;

	memset(tl, 0, sizeof(*tl));
	tl->r = r;
	tl->file = file;
	tl->t1 = t1;
	tl->t2 = t2 > t1 ? t2 : t1;
	tl->filter = filter;
	tl->track_of = malloc((nattrs ? nattrs : 1) * sizeof(*tl->track_of));
	tl->want = calloc(nattrs ? nattrs : 1, 1);
	if (!tl->track_of || !tl->want) {
		tl_close(tl);
		return verror(err, -ENOMEM, "out of memory");
	}
	for (uint32_t a = 0; a < nattrs; a++)
		tl->track_of[a] = -1;
	e = load_vms(tl, filter, err);
	if (!e)
		e = load_cpus(tl, err);
	if (!e)
		e = load_threads(tl, err);
	if (e) {
		tl_close(tl);
		return e;
	}
	nchunks = sht_get_info(r)->nintervals / TL_CHUNK_INTERVALS + 1;
	tl->chunk = (tl->t2 - tl->t1) / nchunks;
	if (!tl->chunk)
		tl->chunk = 1;
	tl->next = tl->t1;
	return 0;
}

void tl_close(struct timeline *tl)
{
	free(tl->vms);
	free(tl->kept);
	free(tl->tracks);
	free(tl->track_of);
	free(tl->want);
	free(tl->vtids);
	free(tl->threads);
	for (size_t k = 0; k < tl->nr_vcpus; k++)
		free(tl->vcpus[k].on);
	free(tl->vcpus);
	free(tl->cpus);
	free(tl->lo);
	free(tl->hi);
	free(tl->iv);
	free(tl->items);
	memset(tl, 0, sizeof(*tl));
}

static uint64_t clip_start(const struct timeline *tl, const struct sht_interval *iv)
{
	return iv->start < tl->t1 ? tl->t1 : iv->start;
}

static int cmp_item(const void *a, const void *b)
{
	const struct tl_item *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->track < y->track ? -1 : x->track > y->track;
}

static int add_item(struct timeline *tl, size_t *cap, const struct tl_item *it)
{
	if (tl->nitems == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		struct tl_item *p = realloc(tl->items, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		tl->items = p;
		*cap = n;
	}
	tl->items[tl->nitems++] = *it;
	return 0;
}

/* The track of CPU cpu (derived CPU tracks), or NULL. */
static const struct tl_track *cpu_track(const struct timeline *tl, int64_t cpu)
{
	uint32_t key = (uint32_t)cpu, *c;

	if (cpu < 0 || cpu > UINT32_MAX || !tl->nr_cpus)
		return NULL;
	c = bsearch(&key, tl->cpus, tl->nr_cpus, sizeof(key), cmp_u32);
	return c ? &tl->tracks[tl->cpu_track0 + (size_t)(c - tl->cpus)] : NULL;
}

/* The stretches of vCPU v on a CPU (in guest code or the hypervisor) that start in [a, b). */
static int on_cpu_items(struct timeline *tl, const struct tl_vcpu *v, uint64_t a, uint64_t b, size_t *cap)
{
	const struct sht_interval *st = tl->iv + tl->lo[v->state], *pc = tl->iv + tl->lo[v->pcpu];
	size_t ns = tl->hi[v->state] - tl->lo[v->state], np = tl->hi[v->pcpu] - tl->lo[v->pcpu];

	/* both sorted by start, neither overlapping itself: walk them together */
	for (size_t i = 0, j = 0; i < ns && j < np;) {
		uint64_t s = st[i].start > pc[j].start ? st[i].start : pc[j].start;
		uint64_t e = st[i].end < pc[j].end ? st[i].end : pc[j].end;
		bool on = st[i].value.type == SHT_INT && (st[i].value.i == VCPU_GUEST || st[i].value.i == VCPU_HOST ||
							   st[i].value.i == VCPU_POLL);

		if (s < tl->t1)
			s = tl->t1;
		if (e > tl->t2)
			e = tl->t2;
		if (on && pc[j].value.type == SHT_INT && e > s && s >= a && s < b &&
		    id_set_has(tl->filter ? &tl->filter->tids : NULL, (uint32_t)v->tid)) {
			struct tl_item it = { .track = cpu_track(tl, pc[j].value.i),
					      .start = s,
					      .end = e,
					      .value = st[i].value,
					      .on_cpu = v };

			if (it.track && add_item(tl, cap, &it))
				return -ENOMEM;
		}
		if (st[i].end < pc[j].end)
			i++;
		else
			j++;
	}
	return 0;
}

/*
 * Add it; a vCPU's with --pcpu: its pieces on those CPUs that start in
 * [a, b) (each slice reads the intervals meeting it: the one a piece starts
 * in adds it).
 */
static int add_clipped(struct timeline *tl, size_t *cap, const struct tl_item *it, uint64_t a, uint64_t b)
{
	const struct tl_vcpu *v = it->track->vcpu >= 0 ? &tl->vcpus[it->track->vcpu] : NULL;

	if (!v || !tl->filter || !tl->filter->pcpus.n)
		return add_item(tl, cap, it);
	for (size_t j = report_first_after(v->on, v->non, it->start); j < v->non && v->on[j].start < it->end; j++) {
		struct tl_item p = *it;

		p.start = v->on[j].start > it->start ? v->on[j].start : it->start;
		p.end = v->on[j].end < it->end ? v->on[j].end : it->end;
		if (p.end > p.start && p.start >= a && p.start < b && add_item(tl, cap, &p))
			return -ENOMEM;
	}
	return 0;
}

/* Read the next slice of time [a, b): the items that start in it (after clipping to the window). */
static int next_chunk(struct timeline *tl, struct vcpustat_error *err)
{
	uint64_t a = tl->next, b = tl->t2 - a > tl->chunk ? a + tl->chunk : tl->t2;
	uint32_t nattrs = sht_nattrs(tl->r);
	size_t n = 0, cap = 0;
	int e;

	free(tl->iv);
	tl->iv = NULL;
	tl->niv = tl->nitems = tl->pos = 0;
	tl->next = b;
	if (!tl->nr_tracks)
		return 0;
	e = sht_query_range(tl->r, SHT_NO_ATTR, tl->want, a, b, &tl->iv, &n, err);
	if (e)
		return e;
	tl->niv = n;
	for (size_t i = 0; i < n; i++) {
		const struct sht_interval *iv = &tl->iv[i];
		uint64_t s = clip_start(tl, iv), end = iv->end > tl->t2 ? tl->t2 : iv->end;
		struct tl_item it;

		if (tl->derived_cpus && iv->attr < nattrs) { /* sorted by attribute: each one's range */
			if (!i || iv->attr != tl->iv[i - 1].attr)
				tl->lo[iv->attr] = (uint32_t)i;
			tl->hi[iv->attr] = (uint32_t)i + 1;
		}
		if (end <= s || iv->value.type == SHT_NULL || iv->attr >= nattrs || tl->track_of[iv->attr] < 0)
			continue;
		/* (a vCPU's with --pcpu: add_clipped() takes the pieces that start in the slice) */
		if ((s < a || s >= b) && !(tl->filter && tl->filter->pcpus.n && tl->tracks[tl->track_of[iv->attr]].vcpu >= 0))
			continue;
		if (tl->tracks[tl->track_of[iv->attr]].kind == TL_PCPU && iv->value.type == SHT_INT && !iv->value.i)
			continue; /* an idle CPU: no slice */
		it = (struct tl_item){
			.track = &tl->tracks[tl->track_of[iv->attr]], .start = s, .end = end, .value = iv->value
		};
		if (it.track->kind == TL_PCPU && tl->filter && tl->filter->tids.n &&
		    (iv->value.type != SHT_INT || iv->value.i < 0 || !id_set_has(&tl->filter->tids, (uint32_t)iv->value.i)))
			continue; /* --tid: only those threads on the CPUs */
		if (add_clipped(tl, &cap, &it, a, b))
			return verror(err, -ENOMEM, "out of memory");
	}
	for (size_t k = 0; tl->derived_cpus && k < tl->nr_vcpus; k++) {
		const struct tl_vcpu *v = &tl->vcpus[k];

		if (v->state == SHT_NO_ATTR || v->pcpu == SHT_NO_ATTR)
			continue;
		if (on_cpu_items(tl, v, a, b, &cap))
			return verror(err, -ENOMEM, "out of memory");
		tl->lo[v->state] = tl->hi[v->state] = tl->lo[v->pcpu] = tl->hi[v->pcpu] = 0;
	}
	if (tl->nitems > 1)
		qsort(tl->items, tl->nitems, sizeof(*tl->items), cmp_item);
	return 0;
}

int tl_next(struct timeline *tl, struct tl_item *it, struct vcpustat_error *err)
{
	while (tl->pos >= tl->nitems) {
		int e;

		if (tl->next >= tl->t2)
			return 0;
		e = next_chunk(tl, err);
		if (e)
			return e;
	}
	*it = tl->items[tl->pos++];
	return 1;
}

const struct tl_vcpu_tid *tl_vcpu_of_tid(const struct timeline *tl, int64_t tid)
{
	struct tl_vcpu_tid key = { .tid = tid };

	return tl->nr_vtids ? bsearch(&key, tl->vtids, tl->nr_vtids, sizeof(key), cmp_vtid) : NULL;
}

const char *tl_thread_name(const struct timeline *tl, int64_t tid)
{
	struct tl_thread key = { .tid = tid }, *t;

	t = tl->nr_threads ? bsearch(&key, tl->threads, tl->nr_threads, sizeof(key), cmp_thread) : NULL;
	return t ? t->name : NULL;
}

/* ---- formats ---- */

int timeline_format_parse(const char *name, enum timeline_format *f)
{
	if (!strcmp(name, "chrome-json"))
		*f = TIMELINE_CHROME_JSON;
	else if (!strcmp(name, "ctf"))
		*f = TIMELINE_CTF;
	else
		return -EINVAL;
	return 0;
}

int timeline_check_output(enum timeline_format fmt, const char *out, struct vcpustat_error *err)
{
	return fmt == TIMELINE_CTF ? timeline_ctf_check(out, err) : outfile_check(out, 0, err);
}

/* ---- Chrome trace-event JSON ---- */

/*
 * pids and tids of the JSON: a VM is its VMM's pid (its real one), the host
 * CPUs one process above any Linux pid (PID_MAX_LIMIT is 2^22), VMs without
 * a pid the next ones; threads (tracks) are numbered from there, each
 * unique in the file (Perfetto keys threads by tid).
 */
#define CJ_PID_BASE 4194304ll /* 2^22 */

struct cj {
	FILE *f;
	const struct timeline *tl;
	int64_t pcpu_pid;
	int64_t *vm_pid;    /* [nr_vms] */
	int64_t *track_tid; /* [nr_tracks] */
	size_t nevents;
	bool werr;
};

/* Digits for ns precision in µs: the integer part's digits and 3 decimals, within a double's 17. */
static int precision(double us)
{
	int d = 1;

	for (double x = fabs(us); x >= 10 && d < 17; x /= 10)
		d++;
	return d + 3 > 17 ? 17 : d + 3;
}

static void cj_emit(struct cj *c, json_t *ev, double max_us)
{
	if (!ev) {
		c->werr = true;
		return;
	}
	if ((c->nevents++ && fputs(",\n", c->f) == EOF) ||
	    json_dumpf(ev, c->f, JSON_COMPACT | JSON_REAL_PRECISION(precision(max_us))))
		c->werr = true;
	json_decref(ev);
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void cj_meta(struct cj *c, const char *what, int64_t pid, int64_t tid, json_t *args)
{
	cj_emit(c,
		json_pack("{s:s, s:s, s:f, s:I, s:I, s:o}", "name", what, "ph", "M", "ts", 0.0, "pid", (json_int_t)pid,
			  "tid", (json_int_t)tid, "args", args),
		0);
}

static const char *const track_suffix[TL_NR_KINDS] = {
	[TL_STATE] = "",
	[TL_EXIT] = " exits",
	[TL_UEXIT] = " userspace exits",
	[TL_PCPU] = "",
};

static void cj_tracks(struct cj *c)
{
	const struct timeline *tl = c->tl;
	bool pcpu_named = false;

	for (size_t v = 0; v < tl->nr_vms; v++) {
		if (!tl->kept[v])
			continue;
		cj_meta(c, "process_name", c->vm_pid[v], c->vm_pid[v], json_pack("{s:s}", "name", tl->vms[v].name));
		cj_meta(c, "process_sort_index", c->vm_pid[v], c->vm_pid[v],
			json_pack("{s:I}", "sort_index", (json_int_t)v));
	}
	for (size_t i = 0; i < tl->nr_tracks; i++) {
		const struct tl_track *t = &tl->tracks[i];
		int64_t pid = t->kind == TL_PCPU ? c->pcpu_pid : c->vm_pid[t->vm];
		char name[64];

		if (t->kind == TL_PCPU && !pcpu_named) {
			cj_meta(c, "process_name", pid, pid, json_pack("{s:s}", "name", "host CPUs"));
			cj_meta(c, "process_sort_index", pid, pid, json_pack("{s:I}", "sort_index", (json_int_t)-1));
			pcpu_named = true;
		}
		snprintf(name, sizeof(name), "%s %u%s", t->kind == TL_PCPU ? "CPU" : "vCPU", t->num,
			 track_suffix[t->kind]);
		cj_meta(c, "thread_name", pid, c->track_tid[i], json_pack("{s:s}", "name", name));
		cj_meta(
		    c, "thread_sort_index", pid, c->track_tid[i],
		    json_pack("{s:I}", "sort_index", (json_int_t)(t->kind == TL_PCPU ? t->num : t->num * 3 + t->kind)));
	}
}

/* Chrome's reserved colour names, by vCPU state. */
static const char *const state_cname[VCPU_NR_STATES] = {
	[VCPU_UNKNOWN] = "grey",
	[VCPU_GUEST] = "thread_state_running",
	[VCPU_HOST] = "thread_state_iowait",
	[VCPU_PREEMPTED] = "thread_state_runnable",
	[VCPU_WAIT] = "rail_response",
	[VCPU_IDLE] = "thread_state_sleeping",
	[VCPU_BLOCKED] = "thread_state_uninterruptible",
	[VCPU_POLL] = "olive",
};

static void cj_item(struct cj *c, const struct tl_item *it)
{
	const struct tl_track *t = it->track;
	size_t ti = (size_t)(t - c->tl->tracks);
	int64_t pid = t->kind == TL_PCPU ? c->pcpu_pid : c->vm_pid[t->vm];
	json_t *ev = json_pack("{s:s, s:f, s:f, s:I, s:I}", "ph", "X", "ts", us(it->start), "dur",
			       us(it->end - it->start), "pid", (json_int_t)pid, "tid", (json_int_t)c->track_tid[ti]);
	char name[128];

	if (!ev) {
		c->werr = true;
		return;
	}
	switch (t->kind) {
	case TL_STATE: {
		unsigned int s = it->value.type == SHT_INT && it->value.i >= 0 && it->value.i < VCPU_NR_STATES
				     ? (unsigned int)it->value.i
				     : VCPU_NR_STATES;

		json_object_set_new(ev, "name", json_string(vcpu_state_name(s)));
		json_object_set_new(ev, "cat", json_string("state"));
		if (s < VCPU_NR_STATES)
			json_object_set_new(ev, "cname", json_string(state_cname[s]));
		break;
	}
	case TL_EXIT:
	case TL_UEXIT:
		json_object_set_new(ev, "name", json_string(it->value.type == SHT_STR ? it->value.s : "?"));
		json_object_set_new(ev, "cat", json_string(t->kind == TL_EXIT ? "exit" : "userspace_exit"));
		break;
	case TL_PCPU: {
		int64_t tid = it->on_cpu ? it->on_cpu->tid : it->value.type == SHT_INT ? it->value.i : -1;
		const struct tl_vcpu_tid *vc = it->on_cpu ? NULL : tl_vcpu_of_tid(c->tl, tid);
		const char *tn = tl_thread_name(c->tl, tid);
		json_t *args = json_pack("{s:I}", "tid", (json_int_t)tid);

		if (it->on_cpu) { /* level vcpu: the vCPU's state and pcpu */
			snprintf(name, sizeof(name), "%s vCPU %u", c->tl->vms[it->on_cpu->vm].name, it->on_cpu->vcpu);
			json_object_set_new(args, "vm", json_string(c->tl->vms[it->on_cpu->vm].name));
			json_object_set_new(args, "vcpu", json_integer(it->on_cpu->vcpu));
			json_object_set_new(args, "state",
					    json_string(it->value.i == VCPU_GUEST ? "guest" : "hypervisor"));
		} else if (vc) {
			snprintf(name, sizeof(name), "%s vCPU %u", c->tl->vms[vc->vm].name, vc->vcpu);
			json_object_set_new(args, "vm", json_string(c->tl->vms[vc->vm].name));
			json_object_set_new(args, "vcpu", json_integer(vc->vcpu));
		} else if (tn) {
			snprintf(name, sizeof(name), "%s", tn);
		} else {
			snprintf(name, sizeof(name), "tid %" PRId64, tid);
		}
		if (tn)
			json_object_set_new(args, "comm", json_string(tn));
		json_object_set_new(ev, "name", json_string(name));
		json_object_set_new(ev, "cat", json_string(vc || it->on_cpu ? "vcpu" : "thread"));
		json_object_set_new(ev, "args", args);
		break;
	}
	default:
		break;
	}
	cj_emit(c, ev, us(it->end));
}

static json_t *cj_other(const struct timeline *tl)
{
	const struct sht_info *info = sht_get_info(tl->r);
	const char *host = sht_meta_get(tl->r, "host");
	json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "source", "vcpustat", "file", tl->file, "from_ns",
			      (json_int_t)tl->t1, "to_ns", (json_int_t)tl->t2, "mono_start_ns",
			      (json_int_t)info->mono_start_ns, "real_start_ns", (json_int_t)info->real_start_ns);

	if (o && host)
		json_object_set_new(o, "host", json_string(host));
	return o;
}

/* The trace-event JSON of the timeline into f. 0, or -errno with err (f then holds garbage). */
static int chrome_json(struct timeline *tl, FILE *f, const char *out, struct vcpustat_error *err)
{
	struct cj c = { .f = f, .tl = tl, .pcpu_pid = CJ_PID_BASE + 1 };
	int64_t next_id = CJ_PID_BASE + 2;
	struct tl_item it;
	json_t *other;
	int e = 0, n = 0;

	c.vm_pid = calloc(tl->nr_vms ? tl->nr_vms : 1, sizeof(*c.vm_pid));
	c.track_tid = calloc(tl->nr_tracks ? tl->nr_tracks : 1, sizeof(*c.track_tid));
	if (!c.vm_pid || !c.track_tid) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	/* a pid shared by two VMs (one after the other) keeps the first; the second gets its own */
	for (size_t v = 0; v < tl->nr_vms; v++) {
		bool taken = tl->vms[v].pid <= 0 || tl->vms[v].pid >= CJ_PID_BASE;

		for (size_t w = 0; w < v && !taken; w++)
			taken = c.vm_pid[w] == tl->vms[v].pid;
		c.vm_pid[v] = taken ? next_id++ : tl->vms[v].pid;
	}
	for (size_t i = 0; i < tl->nr_tracks; i++)
		c.track_tid[i] = next_id++;
	if (fputs("{\"traceEvents\":[\n", f) == EOF)
		c.werr = true;
	cj_tracks(&c);
	while (!c.werr && (n = tl_next(tl, &it, err)) > 0)
		cj_item(&c, &it);
	if (n < 0) {
		e = n;
		goto out;
	}
	other = cj_other(tl);
	if (fputs("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":", f) == EOF || !other ||
	    json_dumpf(other, f, JSON_COMPACT) || fputs("}\n", f) == EOF)
		c.werr = true;
	json_decref(other);
	if (c.werr)
		e = verror(err, -EIO, "%s: cannot write: %s", out, errno ? strerror(errno) : "out of memory");
out:
	free(c.vm_pid);
	free(c.track_tid);
	return e;
}

static int export_chrome_json(struct timeline *tl, const char *out, struct vcpustat_error *err)
{
	struct outfile of;
	FILE *f;
	int fd2, e = outfile_open(&of, out, 0, err);

	if (e)
		return e;
	fd2 = dup(of.fd);
	f = fd2 >= 0 ? fdopen(fd2, "w") : NULL;
	if (!f) {
		e = verror(err, -errno, "%s: %s", out, strerror(errno));
		if (fd2 >= 0)
			close(fd2);
		goto fail;
	}
	errno = 0;
	e = chrome_json(tl, f, out, err);
	if (fclose(f) && !e)
		e = verror(err, -errno, "%s: cannot write: %s", out, strerror(errno));
	if (e)
		goto fail;
	return outfile_close(&of, err);
fail:
	outfile_abort(&of);
	return e;
}

int timeline_export(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
		    const struct summary_filter *filter, enum timeline_format fmt, const char *out, size_t *nr_vms,
		    struct vcpustat_error *err)
{
	struct timeline tl;
	int e = tl_open(&tl, r, file, t1, t2, filter, err);

	size_t kept = e ? 0 : tl.nr_kept;

	if (!e && summary_filter_narrows(filter)) { /* --vcpu, --tid, --pcpu: the VMs with a vCPU track left */
		kept = 0;
		for (size_t v = 0; v < tl.nr_vms; v++)
			for (size_t k = 0; k < tl.nr_tracks; k++)
				if (tl.tracks[k].vm == (int)v) {
					kept++;
					break;
				}
	}
	if (nr_vms)
		*nr_vms = kept;
	if (e)
		return e;
	if (filter && (filter->nr_vms || summary_filter_narrows(filter)) && !kept)
		e = 0; /* the caller says which VMs there are, or that the filters keep nothing; nothing is written */
	else if (fmt == TIMELINE_CHROME_JSON)
		e = export_chrome_json(&tl, out, err);
	else
		e = timeline_ctf(&tl, out, err);
	tl_close(&tl);
	return e;
}
