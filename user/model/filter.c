// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * filter.c - what the offline commands' filters (--vm, --vcpu, --tid,
 * --pcpu, --cgroup) keep of a recording: the sets they give, whether a vCPU
 * is kept, the VMs of a file in the cgroups of --cgroup, whether each filter
 * selects something in a file, and the stretches of
 * time a vCPU spent on the CPUs of --pcpu (docs/vcpustat.md, "Filters").
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/base.h"
#include "model/filter.h"
#include "model/recording.h"

static int parse_u32(const char **p, uint32_t *v)
{
	char *end;
	unsigned long long x;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(*p, &end, 10);
	if (errno == ERANGE || (!errno && x > UINT32_MAX - 1))
		return -ERANGE;
	if (errno)
		return -EINVAL;
	*v = (uint32_t)x;
	*p = end;
	return 0;
}

/* A number of the list that parse_u32() refused: too large, or no number at all. */
static int out_of_range(int e, const char *at, struct vcpustat_error *err)
{
	char num[24];
	size_t n = strspn(at, "0123456789");

	if (e != -ERANGE)
		return verror(err, -EINVAL, "not a list of numbers");
	snprintf(num, sizeof(num), "%.*s%s", n > 20 ? 16 : (int)n, at, n > 20 ? "..." : "");
	return verror(err, -ERANGE, "%s is out of range (at most %u)", num, UINT32_MAX - 1);
}

int id_set_add(struct id_set *s, const char *list, struct vcpustat_error *err)
{
	const char *p = list;
	size_t n = s->n, len = strlen(s->text);

	if (!*p)
		return verror(err, -EINVAL, "an empty list");
	for (;;) {
		const char *at = p;
		uint32_t lo, hi;
		int e;

		if ((e = parse_u32(&p, &lo)))
			return out_of_range(e, at, err);
		hi = lo;
		if (*p == '-') {
			at = ++p;
			if ((e = parse_u32(&p, &hi)))
				return out_of_range(e, at, err);
			if (hi < lo)
				return verror(err, -EINVAL, "the range %u-%u goes down (A-B needs A <= B)", lo, hi);
		}
		if (n >= ID_SET_MAX)
			return verror(err, -EINVAL, "at most %d items", ID_SET_MAX);
		s->lo[n] = lo;
		s->hi[n] = hi;
		n++;
		if (!*p)
			break;
		if (*p != ',' || !p[1])
			return verror(err, -EINVAL, "not a list of numbers");
		p++;
	}
	s->n = n;
	snprintf(s->text + len, sizeof(s->text) - len, "%s%s", len ? "," : "", list);
	return 0;
}

bool id_set_has(const struct id_set *s, uint32_t id)
{
	if (!s || !s->n)
		return true;
	for (size_t i = 0; i < s->n; i++)
		if (id >= s->lo[i] && id <= s->hi[i])
			return true;
	return false;
}

/* Whether --vm's given is the VM's name: a recording stores a '/' of it as '_' (recorder.c). */
static bool vm_name_is(const char *given, const char *name)
{
	for (; *given && *name; given++, name++)
		if (*given != *name && !(*given == '/' && *name == '_'))
			return false;
	return !*given && !*name;
}

bool summary_filter_wants(const struct summary_filter *f, const char *name, uint32_t pid)
{
	char p[16];

	if (!f || !f->nr_vms)
		return true;
	snprintf(p, sizeof(p), "%u", pid);
	for (size_t i = 0; i < f->nr_vms; i++)
		if (vm_name_is(f->vms[i], name) || !strcmp(f->vms[i], p))
			return true;
	return false;
}

bool summary_filter_wants_vcpu(const struct summary_filter *f, uint32_t index, uint32_t tid)
{
	return !f || (id_set_has(&f->vcpus, index) && id_set_has(&f->tids, tid));
}

bool summary_filter_wants_recorded_cgroup(const struct summary_filter *f, const char *cgroup, const char *pod_name,
					  const char *pod_namespace, const char *name)
{
	if (!f || !f->nr_cgroups)
		return true;
	for (size_t i = 0; i < f->nr_cgroups; i++)
		if (recorded_cgroup_matches(f->cgroups[i], cgroup, pod_name, pod_namespace, name))
			return true;
	return false;
}

bool summary_filter_wants_cgroup(const struct summary_filter *f, const char *cgroup)
{
	return summary_filter_wants_recorded_cgroup(f, cgroup, "", "", "");
}

bool summary_filter_vcpus(const struct summary_filter *f)
{
	return f && (f->vcpus.n || f->tids.n);
}

bool summary_filter_narrows(const struct summary_filter *f)
{
	return f && (f->vcpus.n || f->tids.n || f->pcpus.n);
}

const char *summary_filter_text(const struct summary_filter *f, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	if (!f)
		return buf;
	if (f->vcpus.n)
		pos += (size_t)snprintf(buf + pos, len - pos, "--vcpu %s", f->vcpus.text);
	if (f->tids.n && pos < len)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s--tid %s", pos ? " " : "", f->tids.text);
	if (f->pcpus.n && pos < len)
		snprintf(buf + pos, len - pos, "%s--pcpu %s", pos ? " " : "", f->pcpus.text);
	return buf;
}

/* A list of numbers seen (sorted, unique) as "0-3, 8" for messages. */
struct seen {
	uint32_t *v;
	size_t n;
};

static int seen_add(struct seen *s, uint32_t v)
{
	uint32_t *a;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == v)
			return 0;
	a = realloc(s->v, (s->n + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	s->v = a;
	s->v[s->n++] = v;
	return 0;
}

/* The numbers that parent's children are named by (tids, CPUs) into s. */
static int seen_children(struct seen *s, struct sht_reader *r, uint32_t parent)
{
	int e = 0;

	for (uint32_t c = report_first_child(r, parent); c != SHT_NO_ATTR && !e; c = sht_attr_next_sibling(r, c))
		e = seen_add(s, (uint32_t)strtoul(sht_attr_name(r, c), NULL, 10));
	return e;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static const char *seen_text(struct seen *s, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
	for (size_t i = 0; i < s->n && pos < len; i++) {
		size_t j = i;

		while (j + 1 < s->n && s->v[j + 1] == s->v[j] + 1)
			j++;
		if (j > i)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%u-%u", pos ? "," : "", s->v[i], s->v[j]);
		else
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%u", pos ? "," : "", s->v[i]);
		i = j;
	}
	return buf;
}

static bool seen_meets(const struct seen *s, uint32_t lo, uint32_t hi)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] >= lo && s->v[i] <= hi)
			return true;
	return false;
}

/* The item i of set as given ("2-3"). */
static const char *item_text(const struct id_set *set, size_t i, char *buf, size_t len)
{
	if (set->lo[i] == set->hi[i])
		snprintf(buf, len, "%u", set->lo[i]);
	else
		snprintf(buf, len, "%u-%u", set->lo[i], set->hi[i]);
	return buf;
}

int summary_filter_cgroups_to_vms(struct summary_filter *f, struct sht_reader *r, const char *file,
				  struct filter_vms *keep, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	char seen[512] = "", pats[256] = "";
	size_t n = 0, len = 0, plen = 0;
	int e;

	if (!f->nr_cgroups)
		return 0;
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm)) {
		struct report_thread proc = { .th = vm };

		e = report_thread_names(r, &proc, 1, err);
		if (e)
			return e;
		if (!summary_filter_wants(f, sht_attr_name(r, vm), proc.pid))
			continue;
		if (summary_filter_wants_recorded_cgroup(f, proc.cgroup, proc.pod_name, proc.pod_namespace,
							 proc.container_name)) {
			if (n < FILTER_MAX_VMS) {
				snprintf(keep->names[n], sizeof(keep->names[n]), "%s", sht_attr_name(r, vm));
				keep->vms[n] = keep->names[n];
				n++;
			}
		} else if (len < sizeof(seen) - 1) {
			len += (size_t)snprintf(seen + len, sizeof(seen) - len, "%s%s: %s", len ? ", " : "",
						sht_attr_name(r, vm), proc.cgroup[0] ? proc.cgroup : "none recorded");
		}
	}
	if (n) {
		f->vms = keep->vms;
		f->nr_vms = n;
		return 0;
	}
	for (size_t i = 0; i < f->nr_cgroups && plen < sizeof(pats) - 1; i++)
		plen += (size_t)snprintf(pats + plen, sizeof(pats) - plen, "%s--cgroup %s", i ? " " : "", f->cgroups[i]);
	return verror(err, -ENOENT, "%s: no VM of %s runs in such a cgroup%s%s%s", pats, file,
		      len ? " (their cgroups: " : "", seen, len ? ")" : "");
}

int summary_filter_check(struct sht_reader *r, const char *file, const struct summary_filter *f,
			 struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms"), host = sht_attr_child(r, SHT_NO_ATTR, "host");
	struct seen idx = { 0 }, tids = { 0 }, cpus = { 0 };
	uint8_t *want = NULL;
	struct sht_interval *iv = NULL;
	char list[256], item[32];
	size_t niv = 0;
	bool any_pcpu = false;
	int e = 0;

	if (!summary_filter_narrows(f))
		return 0;
	want = calloc(sht_nattrs(r) + 1, 1);
	if (!want)
		return verror(err, -ENOMEM, "out of memory");
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm)) {
		uint32_t pid = (uint32_t)report_first_int(r, sht_attr_child(r, vm, "pid"), 0);
		bool kept = summary_filter_wants(f, sht_attr_name(r, vm), pid);

		for (uint32_t vc = report_first_child(r, sht_attr_child(r, vm, "vcpus")); vc != SHT_NO_ATTR && !e;
		     vc = sht_attr_next_sibling(r, vc)) {
			uint32_t tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0), pc;

			if (kept)
				e = seen_add(&idx, (uint32_t)strtoul(sht_attr_name(r, vc), NULL, 10));
			if (!e && tid)
				e = seen_add(&tids, tid);
			pc = sht_attr_child(r, vc, "pcpu");
			if (pc != SHT_NO_ATTR)
				want[pc] = any_pcpu = true;
		}
		/* its VMM threads (a level-vcpu recording's) */
		if (!e)
			e = seen_children(&tids, r, sht_attr_child(r, vm, "vmm"));
	}
	if (!e)
		e = seen_children(&tids, r, sht_attr_child(r, host, "threads"));
	if (!e)
		e = seen_children(&cpus, r, sht_attr_child(r, host, "cpus"));
	if (!e && f->pcpus.n && any_pcpu)
		e = sht_query_range(r, SHT_NO_ATTR, want, sht_get_info(r)->start, sht_get_info(r)->end, &iv, &niv, err);
	for (size_t i = 0; i < niv && !e; i++)
		if (iv[i].value.type == SHT_INT && iv[i].value.i >= 0)
			e = seen_add(&cpus, (uint32_t)iv[i].value.i);
	if (e == -ENOMEM)
		verror(err, e, "out of memory");
	for (size_t i = 0; i < f->vcpus.n && !e; i++)
		if (!seen_meets(&idx, f->vcpus.lo[i], f->vcpus.hi[i]))
			e = verror(err, -ENOENT, "--vcpu %s: no such vCPU in %s (%s%s)", item_text(&f->vcpus, i, item, sizeof(item)),
				   file, idx.n ? f->nr_vms ? "the vCPUs of its VMs that --vm keeps: " : "its vCPUs: " : "no vCPU",
				   seen_text(&idx, list, sizeof(list)));
	for (size_t i = 0; i < f->tids.n && !e; i++)
		if (!seen_meets(&tids, f->tids.lo[i], f->tids.hi[i]))
			e = verror(err, -ENOENT, "--tid %s: no vCPU, VMM or host thread of %s has that thread id",
				   item_text(&f->tids, i, item, sizeof(item)), file);
	if (f->pcpus.n && !e) {
		bool met = false;

		for (size_t i = 0; i < f->pcpus.n; i++)
			met |= seen_meets(&cpus, f->pcpus.lo[i], f->pcpus.hi[i]);
		if (!met)
			e = verror(err, -ENOENT, "--pcpu %s: no such CPU in %s (%s%s)", f->pcpus.text, file,
				   cpus.n ? "its CPUs: " : "no CPU is recorded", seen_text(&cpus, list, sizeof(list)));
	}
	free(iv);
	free(want);
	free(idx.v);
	free(tids.v);
	free(cpus.v);
	return e;
}

size_t pcpu_on_set(const struct sht_interval *pc, size_t n, const struct id_set *cpus, struct sht_interval *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct sht_interval p = pc[i];

		if (p.value.type != SHT_INT || p.value.i < 0 || p.value.i > UINT32_MAX ||
		    !id_set_has(cpus, (uint32_t)p.value.i) || p.end <= p.start)
			continue;
		if (k && out[k - 1].end == p.start)
			out[k - 1].end = p.end;
		else
			out[k++] = p;
	}
	return k;
}

uint64_t on_set_ns(const struct sht_interval *on, size_t n, uint64_t a, uint64_t b)
{
	uint64_t ns = 0;

	for (size_t i = report_first_after(on, n, a); i < n && on[i].start < b; i++) {
		uint64_t s = on[i].start > a ? on[i].start : a, t = on[i].end < b ? on[i].end : b;

		if (t > s)
			ns += t - s;
	}
	return ns;
}

bool on_set_at(const struct sht_interval *on, size_t n, uint64_t t)
{
	size_t i = report_first_after(on, n, t);

	return i < n && on[i].start <= t;
}

int vcpu_on_set(struct sht_reader *r, uint32_t vc, const struct id_set *cpus, uint64_t t1, uint64_t t2,
		struct sht_interval **out, size_t *n, struct vcpustat_error *err)
{
	uint32_t pc = sht_attr_child(r, vc, "pcpu");
	int e;

	*out = NULL;
	*n = 0;
	if (pc == SHT_NO_ATTR)
		return 0;
	e = sht_query_range(r, pc, NULL, t1, t2, out, n, err);
	if (!e)
		*n = pcpu_on_set(*out, *n, cpus, *out);
	return e;
}

int intervals_clip(struct sht_interval **iv, size_t *n, const struct sht_interval *on, size_t non)
{
	struct sht_interval *out = NULL;
	size_t k = 0, cap = 0;

	for (size_t i = 0; i < *n; i++) {
		const struct sht_interval *x = &(*iv)[i];

		for (size_t j = report_first_after(on, non, x->start); j < non && on[j].start < x->end; j++) {
			struct sht_interval p = *x;

			p.start = on[j].start > x->start ? on[j].start : x->start;
			p.end = on[j].end < x->end ? on[j].end : x->end;
			if (p.end <= p.start && !(x->start == x->end && p.start == x->start))
				continue;
			if (k == cap) {
				struct sht_interval *a = realloc(out, (cap ? cap * 2 : 16) * sizeof(*a));

				if (!a) {
					free(out);
					return -ENOMEM;
				}
				out = a;
				cap = cap ? cap * 2 : 16;
			}
			out[k++] = p;
		}
	}
	free(*iv);
	*iv = out;
	*n = k;
	return 0;
}
