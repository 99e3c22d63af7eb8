// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report.c - the window model from an SHT file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "model/report.h"
#include "model/report_parts.h"

/* Intervals of attr meeting [t1, t2] (empty if attr is absent). */
int report_range(struct sht_reader *r, uint32_t attr, uint64_t t1, uint64_t t2, struct sht_interval **out, size_t *n,
		 struct vcpustat_error *err)
{
	*out = NULL;
	*n = 0;
	if (attr == SHT_NO_ATTR)
		return 0;
	return sht_query_range(r, attr, NULL, t1, t2, out, n, err);
}

/* A fresh summary for the samples of name: the files store names; isa and code come back from them. */
static void latency_init(struct latency_summary *l, unsigned int kind, const char *name)
{
	unsigned int isa = 0, code = 0;

	memset(l, 0, sizeof(*l));
	l->kind = kind;
	snprintf(l->name, sizeof(l->name), "%s", name);
	if (kind == VCPU_SAMPLE_EXIT && !exit_reason_from_name(name, &isa, &code)) {
		l->isa = isa;
		l->reason = code;
	} else if (kind == VCPU_SAMPLE_USERSPACE_EXIT && !userspace_exit_from_name(name, &code)) {
		l->reason = code;
	} else if (kind == VCPU_SAMPLE_WAKE) {
		int w = wake_reason_from_name(name);

		l->reason = w >= 0 ? (unsigned int)w : 0;
	} else if (kind == VCPU_SAMPLE_WAKE_VECTOR) {
		int w = wake_vector_from_name(name);

		l->reason = w >= 0 ? (unsigned int)w : 0;
	}
}

static struct latency_summary *latency_row(struct hashmap *m, unsigned int kind, const char *name)
{
	char key[32] = { 0 };
	struct latency_summary *l;

	snprintf(key, sizeof(key), "%s", name);
	l = hashmap_lookup(m, key);
	if (!l) {
		struct latency_summary fresh;

		latency_init(&fresh, kind, name);
		if (hashmap_insert(m, key, &fresh))
			return NULL;
		l = hashmap_lookup(m, key);
	}
	return l;
}

/* An exit still open at the end of what was seen: counted, with its time so far, and no latency. */
static int latency_add_open(struct hashmap *m, unsigned int kind, const char *name, uint64_t ns_so_far)
{
	struct latency_summary *l = latency_row(m, kind, name);

	if (!l)
		return -ENOMEM;
	l->count++;
	l->count_total++;
	l->open++;
	l->open_ns += ns_so_far;
	return 0;
}

static int latency_add(struct hashmap *m, unsigned int kind, const char *name, uint64_t ns)
{
	struct latency_summary *l = latency_row(m, kind, name);
	unsigned int b;

	if (!l)
		return -ENOMEM;
	b = lat_hist_bucket(ns);
	l->bucket[b]++;
	l->count++;
	l->count_total++;
	l->sum_ns += ns;
	if (ns > l->max_ns)
		l->max_ns = ns;
	return 0;
}

/* Rate over every exit; percentiles over the closed ones (open ones have no latency). */
static void latency_finish(struct latency_summary *l, double seconds)
{
	__u64 closed = l->count - l->open;

	l->rate = seconds > 0 ? (double)l->count / seconds : 0;
	l->p50_ns = min_u64(latency_percentile(l->bucket, closed, 0.50), l->max_ns);
	l->p90_ns = min_u64(latency_percentile(l->bucket, closed, 0.90), l->max_ns);
	l->p99_ns = min_u64(latency_percentile(l->bucket, closed, 0.99), l->max_ns);
}

static int by_count(const void *a, const void *b)
{
	const struct latency_summary *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int latency_collect(struct hashmap *m, struct latency_summary **out, size_t *n, double seconds)
{
	size_t pos = 0, i = 0;
	void *k, *v;

	*out = calloc(m->count ? m->count : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	while (hashmap_next(m, &pos, &k, &v)) {
		(*out)[i] = *(struct latency_summary *)v;
		latency_finish(&(*out)[i], seconds);
		i++;
	}
	*n = i;
	if (i > 1)
		qsort(*out, i, sizeof(**out), by_count);
	return 0;
}

/*
 * Who ran on each CPU, fetched once per CPU: current_tid (level full: every
 * switch), else runner_tid (level vcpu: only while tracked threads waited
 * there, null elsewhere; docs/sht-attributes.md).
 */
struct cpu_runs {
	struct hashmap cpus; /* cpu -> { struct sht_interval *iv; size_t n; } */
	uint32_t host_cpus;  /* /host/cpus attribute */
	bool full;	     /* a CPU has current_tid */
	uint64_t t1, t2;
};

struct runs {
	struct sht_interval *iv;
	size_t n;
};

static struct runs *cpu_runs_get(struct sht_reader *r, struct cpu_runs *cr, uint32_t cpu,
				 struct vcpustat_error *err, int *e)
{
	struct runs *hit = hashmap_lookup(&cr->cpus, &cpu), fresh = { 0 };
	char name[16];
	uint32_t a;

	*e = 0;
	if (hit)
		return hit;
	snprintf(name, sizeof(name), "%u", cpu);
	a = sht_attr_child(r, cr->host_cpus, name);
	a = a == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_child(r, a, cr->full ? "current_tid" : "runner_tid");
	*e = report_range(r, a, cr->t1, cr->t2, &fresh.iv, &fresh.n, err);
	if (*e || hashmap_insert(&cr->cpus, &cpu, &fresh)) {
		free(fresh.iv);
		*e = *e ? *e : -ENOMEM;
		return NULL;
	}
	return hashmap_lookup(&cr->cpus, &cpu);
}

size_t report_first_after(const struct sht_interval *iv, size_t n, uint64_t t)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t m = (a + b) / 2;

		if (iv[m].end <= t)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

const struct sht_interval *report_covering(const struct sht_interval *iv, size_t n, uint64_t t)
{
	size_t i = report_first_after(iv, n, t);

	if (i >= n || iv[i].start > t || iv[i].value.type == SHT_NULL)
		return NULL;
	return &iv[i];
}

struct culprit_acc {
	struct hashmap by_tid; /* tid -> ns */
};

/* Charge the threads that ran on cpu during [a, b) to the VM. */
int report_charge(struct sht_reader *r, struct cpu_runs *cr, struct hashmap *acc, uint32_t cpu, uint64_t a, uint64_t b,
		  struct vcpustat_error *err)
{
	struct runs *runs;
	int e;

	runs = cpu_runs_get(r, cr, cpu, err, &e);
	if (!runs)
		return e;
	/* from the first run that ends after a (the runs are sorted and do not overlap), not from the start */
	for (size_t i = report_first_after(runs->iv, runs->n, a); i < runs->n && runs->iv[i].start < b; i++) {
		const struct sht_interval *iv = &runs->iv[i];
		uint64_t s = max_u64(iv->start, a), t = min_u64(iv->end, b);
		uint32_t tid;
		uint64_t *ns;

		if (t <= s || iv->value.type != SHT_INT)
			continue;
		tid = (uint32_t)iv->value.i;
		ns = hashmap_lookup(acc, &tid);
		if (!ns) {
			uint64_t zero = 0;

			if (hashmap_insert(acc, &tid, &zero))
				return -ENOMEM;
			ns = hashmap_lookup(acc, &tid);
		}
		*ns += t - s;
	}
	return 0;
}

static int64_t int_at(struct sht_reader *r, uint32_t attr, uint64_t t, int64_t def)
{
	struct sht_interval *iv = NULL;
	const struct sht_interval *c;
	int64_t v = def;
	size_t n;

	if (attr == SHT_NO_ATTR || sht_query_range(r, attr, NULL, t, t, &iv, &n, NULL))
		return def;
	c = report_covering(iv, n, t);
	if (c && c->value.type == SHT_INT)
		v = c->value.i;
	free(iv);
	return v;
}

uint32_t report_first_child(struct sht_reader *r, uint32_t parent)
{
	return parent == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_first_child(r, parent);
}

bool report_host_recorded(struct sht_reader *r)
{
	uint32_t cpus = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "cpus");

	for (uint32_t c = report_first_child(r, cpus); c != SHT_NO_ATTR; c = sht_attr_next_sibling(r, c))
		if (sht_attr_child(r, c, "current_tid") != SHT_NO_ATTR)
			return true;
	return false;
}

int64_t report_first_int(struct sht_reader *r, uint32_t attr, int64_t def)
{
	const struct sht_info *info = sht_get_info(r);
	struct sht_interval *iv = NULL;
	int64_t v = def;
	size_t n;

	if (attr == SHT_NO_ATTR || sht_query_range(r, attr, NULL, info->start, info->end, &iv, &n, NULL))
		return def;
	for (size_t i = 0; i < n; i++)
		if (iv[i].value.type == SHT_INT) {
			v = iv[i].value.i;
			break;
		}
	free(iv);
	return v;
}

/* Which thread of report_thread_names() an attribute is of, and which of its attributes. */
enum thread_field { TF_NAME, TF_PID, TF_CGROUP, TF_PIDNS, TF_POD_NAME, TF_POD_NAMESPACE, TF_CONTAINER_NAME, TF_NR };

struct thread_attr {
	size_t at; /* index in t */
	enum thread_field field;
};

int report_thread_names(struct sht_reader *r, struct report_thread *t, size_t n, struct vcpustat_error *err)
{
	static const char *const child[TF_NR] = { "name", "pid", "cgroup", "pidns", "pod_name", "pod_namespace",
						  "container_name" };
	static const bool is_int[TF_NR] = { false, true, false, true, false, false, false };
	uint8_t *want = calloc(sht_nattrs(r) + 1, 1);
	struct hashmap of_attr; /* a thread's attribute -> struct thread_attr */
	struct sht_interval *iv = NULL;
	uint32_t taken = SHT_NO_ATTR;
	size_t niv = 0;
	bool any = false;
	int e = 0;

	for (size_t i = 0; i < n; i++) {
		t[i].pid = 0;
		t[i].pidns = 0;
		t[i].name = "";
		t[i].cgroup = "";
		t[i].pod_name = t[i].pod_namespace = t[i].container_name = "";
	}
	if (!want || hashmap_init(&of_attr, sizeof(uint32_t), sizeof(struct thread_attr), 0)) {
		free(want);
		return verror(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n && !e; i++) {
		if (t[i].th == SHT_NO_ATTR)
			continue;
		for (int k = 0; k < TF_NR && !e; k++) {
			struct thread_attr ta = { i, (enum thread_field)k };
			uint32_t a = sht_attr_child(r, t[i].th, child[k]);

			if (a != SHT_NO_ATTR && !(e = hashmap_update(&of_attr, &a, &ta)))
				want[a] = any = 1;
		}
	}
	if (!e && any)
		e = sht_query_range(r, SHT_NO_ATTR, want, sht_get_info(r)->start, sht_get_info(r)->end, &iv, &niv, err);
	/* sorted by attribute, then start: each attribute's first value of its type */
	for (size_t i = 0; i < niv && !e; i++) {
		const struct thread_attr *ta = hashmap_lookup(&of_attr, &iv[i].attr);
		struct report_thread *th;

		if (!ta || iv[i].attr == taken || iv[i].value.type != (is_int[ta->field] ? SHT_INT : SHT_STR))
			continue;
		th = &t[ta->at];
		switch (ta->field) {
		case TF_NAME: th->name = iv[i].value.s; break;
		case TF_PID: th->pid = (uint32_t)iv[i].value.i; break;
		case TF_CGROUP: th->cgroup = iv[i].value.s; break;
		case TF_PIDNS: th->pidns = (uint64_t)iv[i].value.i; break;
		case TF_POD_NAME: th->pod_name = iv[i].value.s; break;
		case TF_POD_NAMESPACE: th->pod_namespace = iv[i].value.s; break;
		case TF_CONTAINER_NAME: th->container_name = iv[i].value.s; break;
		default: break;
		}
		taken = iv[i].attr;
	}
	free(iv);
	free(want);
	hashmap_free(&of_attr);
	return e == -ENOMEM ? verror(err, e, "out of memory") : e;
}

/*
 * --pcpu: the stretches of time a vCPU's pcpu was in the set (NULL: no such
 * filter, all the time counts).
 */
struct vcpu_on {
	struct sht_interval *iv;
	size_t n;
};

static bool on_at(const struct vcpu_on *on, uint64_t t)
{
	return !on || on_set_at(on->iv, on->n, t);
}

static uint64_t on_ns(const struct vcpu_on *on, uint64_t a, uint64_t b)
{
	return !on ? (b > a ? b - a : 0) : on_set_ns(on->iv, on->n, a, b);
}

/*
 * The exits (exit_reason or userspace_exit intervals) of [t1, t2), counted
 * and added to the table by one rule: an exit belongs to the window of its
 * beginning (kvm_exit, kvm_userspace_exit: when the kernel counts it), with
 * its whole handling time, also if it ends after t2. An exit still being
 * handled when the file ends (cut by the end of a file, which is after
 * everything in it) is counted too, as open: its latency is not known, only
 * its time so far (to the file's end), which is in no histogram.
 * *open, open_name, *open_ns: the vCPU's open exit, if it began in the window.
 */
static int exits_in_window(const struct sht_interval *iv, size_t n, uint64_t t1, uint64_t t2, uint64_t file_end,
			   const struct vcpu_on *on, unsigned int kind, struct hashmap *table, __u64 *count,
			   __u64 *open, char open_name[32], __u64 *open_ns)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t ns = iv[i].end - iv[i].start;
		int e;

		if (iv[i].value.type != SHT_STR || iv[i].start < t1 || iv[i].start >= t2 || !on_at(on, iv[i].start))
			continue;
		if (iv[i].end >= file_end) {
			e = latency_add_open(table, kind, iv[i].value.s, ns);
			(*open)++;
			snprintf(open_name, 32, "%s", iv[i].value.s);
			*open_ns = ns;
		} else {
			e = latency_add(table, kind, iv[i].value.s, ns);
		}
		if (e)
			return e;
		(*count)++;
	}
	return 0;
}

/* One vCPU's window: states, transitions, exits, waits (and the culprits of its waits). */
/* Does [iv->start, iv->end) meet [t1, t2] as sht_query_range() means it? */
static bool meets(const struct sht_interval *iv, uint64_t t1, uint64_t t2)
{
	return iv->start <= t2 && (iv->end > t1 || (iv->start == iv->end && iv->start >= t1));
}

/*
 * A vCPU's state, pcpu and halt_poll_ns intervals from the file's start to
 * t2, its exits, userspace exits and exit accesses meeting [t1, t2], and its
 * tid: what separate range queries give, from one query over the attributes
 * (the intervals come sorted by attribute, then start). out[]: state,
 * exit_reason, userspace_exit, pcpu, exit_access, exit_fault, halt_poll_ns,
 * wake_reason, wake_vector, guest_cr3, guest_tid (meeting [t1, t2]), guest_level (from the
 * file's start, as state).
 */
enum {
	VA_STATE,
	VA_EXIT,
	VA_UEXIT,
	VA_PCPU,
	VA_ACCESS,
	VA_FAULT,
	VA_HALT_POLL_NS,
	VA_WAKE,
	VA_WAKE_VECTOR,
	VA_GUEST_CR3,
	VA_GUEST_TID,
	VA_GUEST_LEVEL,
	VA_NR,
	VA_TID = VA_NR
};

struct vcpu_ivs {
	struct sht_interval *iv[VA_NR];
	size_t n[VA_NR];
	bool has_access; /* the file records exit accesses (exit_access, exit_fault) */
};

static void vcpu_ivs_free(struct vcpu_ivs *v)
{
	for (int k = 0; k < VA_NR; k++)
		free(v->iv[k]);
}

static int vcpu_attrs(struct sht_reader *r, uint32_t vc, uint64_t t1, uint64_t t2, struct vcpu_ivs *out,
		      uint32_t *tid, struct vcpustat_error *err)
{
	static const char *const names[VA_NR + 1] = { "state",	    "exit_reason",  "userspace_exit", "pcpu",
						      "exit_access", "exit_fault",   "halt_poll_ns",   "wake_reason",
						      "wake_vector", "guest_cr3",    "guest_tid",      "guest_level",
						      "tid" };
	struct sht_interval *all = NULL;
	size_t nall = 0;
	uint32_t attr[VA_NR + 1];
	uint8_t *want = calloc(sht_nattrs(r) + 1, 1);
	bool tid_seen = false;
	int e;

	memset(out, 0, sizeof(*out));
	if (!want)
		return verror(err, -ENOMEM, "out of memory");
	for (int k = 0; k <= VA_NR; k++) {
		attr[k] = sht_attr_child(r, vc, names[k]);
		if (attr[k] != SHT_NO_ATTR)
			want[attr[k]] = 1;
	}
	out->has_access = attr[VA_ACCESS] != SHT_NO_ATTR;
	e = sht_query_range(r, SHT_NO_ATTR, want, sht_get_info(r)->start, t2, &all, &nall, err);
	free(want);
	for (int k = 0; k < VA_NR && !e; k++) {
		out->iv[k] = calloc(nall + 1, sizeof(*out->iv[k]));
		if (!out->iv[k])
			e = verror(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nall && !e; i++) {
		int k = 0;

		while (k <= VA_NR && attr[k] != all[i].attr)
			k++;
		if (k == VA_TID) {
			if (!tid_seen && all[i].value.type == SHT_INT) {
				*tid = (uint32_t)all[i].value.i;
				tid_seen = true;
			}
		} else if (k < VA_NR && (k == VA_STATE || k == VA_PCPU || k == VA_HALT_POLL_NS || k == VA_GUEST_LEVEL ||
					 meets(&all[i], t1, t2))) {
			out->iv[k][out->n[k]++] = all[i];
		}
	}
	free(all);
	/* a tid first set after t2 (a vCPU that had no state by then either) */
	if (!e && !tid_seen)
		*tid = (uint32_t)report_first_int(r, attr[VA_TID], 0);
	return e;
}

/* The row of key (a NUL-padded 64-byte string) in a VM's exit-detail table, made zeroed; NULL: out of memory. */
static struct detail_summary *detail_row(struct hashmap *table, const char *key)
{
	char k[64] = { 0 };
	struct detail_summary *d, fresh = { 0 };

	snprintf(k, sizeof(k), "%s", key);
	d = hashmap_lookup(table, k);
	if (d || hashmap_insert(table, k, &fresh))
		return d;
	return hashmap_lookup(table, k);
}

/* One exit of ns in the row of key (detail_row()): 0, or -ENOMEM. */
static int detail_charge(struct hashmap *table, const char *key, uint64_t ns)
{
	struct detail_summary *d = detail_row(table, key);

	if (!d)
		return -ENOMEM;
	d->count++;
	d->sum_ns += ns;
	if (ns > d->max_ns)
		d->max_ns = ns;
	return 0;
}

/*
 * The exit accesses (exit_access or exit_fault intervals) of [t1, t2], by the
 * rule of the exits themselves: each belongs to the window of its exit's
 * kvm_exit, with that exit's whole handling time (kvm_exit to kvm_entry, as
 * the kernel's tables count it), and an exit the file ends in is in none.
 * table: the attribute's string ("msr 0xc0000080 read") -> struct detail_summary.
 */
static int details_in_window(const struct sht_interval *iv, size_t n, const struct sht_interval *ex, size_t nex,
			     uint64_t t1, uint64_t t2, uint64_t file_end, const struct vcpu_on *on,
			     struct hashmap *table)
{
	for (size_t i = 0; i < n; i++) {
		const struct sht_interval *x;
		char key[64];

		if (iv[i].value.type != SHT_STR)
			continue;
		x = report_covering(ex, nex, iv[i].start);
		if (!x || x->value.type != SHT_STR || x->start < t1 || x->start >= t2 || x->end >= file_end ||
		    !on_at(on, x->start))
			continue;
		snprintf(key, sizeof(key), "%s", iv[i].value.s);
		if (detail_charge(table, key, x->end - x->start))
			return -ENOMEM;
	}
	return 0;
}

/* "msr 0xc0000080 read" back into kind, target and access; false for anything else. */
static bool detail_parse(const char *s, struct detail_summary *d)
{
	char kind[16], target[24], access[8], *end;

	if (sscanf(s, "%15s %23s %7s", kind, target, access) != 3)
		return false;
	for (d->kind = 1; d->kind < VCPUSTAT_NR_DETAIL_KINDS && strcmp(detail_kind_name(d->kind), kind); d->kind++)
		;
	for (d->access = 0; d->access < VCPUSTAT_NR_ACCESSES && strcmp(detail_access_name(d->access), access);
	     d->access++)
		;
	if (d->kind >= VCPUSTAT_NR_DETAIL_KINDS || d->access >= VCPUSTAT_NR_ACCESSES)
		return false;
	if (!strcmp(target, "other")) {
		d->addr = VCPUSTAT_DETAIL_OTHER;
		return true;
	}
	if (d->kind == VCPUSTAT_DETAIL_CR3 && !strcmp(target, "unknown")) {
		d->addr = VCPUSTAT_CR3_UNKNOWN;
		return true;
	}
	errno = 0;
	d->addr = strtoull(target, &end, 16);
	return !errno && *end == '\0' && !strncmp(target, "0x", 2);
}

/*
 * A VM's exit-detail table (string -> detail_summary) as its rows, and its
 * guest address spaces ("cr3 ..." keys) as those; in a report, _total is
 * the window's.
 */
static int details_collect(struct hashmap *table, struct vm_summary *vs, double seconds)
{
	size_t pos = 0;
	void *k, *v;

	vs->details = calloc(table->count + 1, sizeof(*vs->details));
	vs->address_spaces = calloc(table->count + 1, sizeof(*vs->address_spaces));
	if (!vs->details || !vs->address_spaces)
		return -ENOMEM;
	while (hashmap_next(table, &pos, &k, &v)) {
		struct detail_summary d = *(struct detail_summary *)v;

		if (!detail_parse(k, &d))
			continue; /* not a value vcpustat writes: nothing to show it as */
		d.count_total = d.count;
		d.sum_ns_total = d.sum_ns;
		d.rate = seconds > 0 ? (double)d.count / seconds : 0;
		if (d.kind == VCPUSTAT_DETAIL_CR3)
			vs->address_spaces[vs->nr_address_spaces++] = d;
		else
			vs->details[vs->nr_details++] = d;
	}
	if (vs->nr_details > 1)
		qsort(vs->details, vs->nr_details, sizeof(*vs->details), detail_summary_cmp);
	if (vs->nr_address_spaces > 1)
		qsort(vs->address_spaces, vs->nr_address_spaces, sizeof(*vs->address_spaces), address_space_cmp);
	return 0;
}

/* A vote for the guest thread of an address space: the thread current at one of its exits. */
struct cr3_vote {
	char cr3[24]; /* the guest_cr3 value */
	uint32_t tid; /* the guest thread */
};

/*
 * The guest address spaces of [t1, t2) (guest_cr3: --address-spaces
 * recordings), as the kernel's table counts them: each guest interval
 * (guest state) goes, whole, to the CR3 the guest exited in (the value at
 * its end, set at that exit), in the window of its exit, with one exit; one
 * the file or the vCPU's life ends in (no exit) is in none. Keys
 * "cr3 <target> read" in the VM's exit-detail table (details_collect).
 * With the guest's threads imported (gt: guest_tid), each exit is also a
 * vote (votes: struct cr3_vote -> u64 exits) for the guest thread current
 * on the vCPU at that instant, the one whose CR3 it read; the idle task
 * (0), which runs in whatever address space it found, has none.
 */
static int spaces_in_window(const struct sht_interval *cr, size_t ncr, const struct sht_interval *st, size_t nst,
			    const struct sht_interval *gt, size_t ngt, uint64_t t1, uint64_t t2,
			    const struct vcpu_on *on, struct hashmap *table, struct hashmap *votes)
{
	for (size_t i = 0; ncr && i + 1 < nst; i++) {
		const struct sht_interval *x, *g;
		char key[64];
		uint64_t end = st[i].end, ns = st[i].end - st[i].start;

		if (st[i].value.type != SHT_INT || st[i].value.i != VCPU_GUEST || end < t1 || end >= t2 ||
		    st[i + 1].start != end || st[i + 1].value.type != SHT_INT || !on_at(on, end))
			continue;
		x = report_covering(cr, ncr, end);
		if (!x || x->value.type != SHT_STR)
			continue;
		snprintf(key, sizeof(key), "cr3 %s read", x->value.s);
		if (detail_charge(table, key, ns))
			return -ENOMEM;
		g = report_covering(gt, ngt, end);
		if (g && g->value.type == SHT_INT && g->value.i > 0) {
			struct cr3_vote k = { .tid = (uint32_t)g->value.i };
			uint64_t *n, one = 1;

			snprintf(k.cr3, sizeof(k.cr3), "%s", x->value.s);
			if ((n = hashmap_lookup(votes, &k)))
				(*n)++;
			else if (hashmap_insert(votes, &k, &one))
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Name the address spaces of vs from the votes of spaces_in_window(): the
 * guest thread with the most exits in each (ties: the lower tid), and its
 * name in the guest as of t2.
 */
static int spaces_name(struct sht_reader *r, uint32_t vm, struct vm_summary *vs, struct hashmap *votes, uint64_t t2,
		       struct vcpustat_error *err)
{
	uint32_t threads = sht_attr_child(r, vm, "threads");
	int e = 0;

	for (size_t i = 0; i < vs->nr_address_spaces && votes->count && !e; i++) {
		struct detail_summary *d = &vs->address_spaces[i];
		struct sht_interval *nm = NULL;
		size_t pos = 0, nnm = 0;
		char target[24], tid[16];
		void *k, *v;

		if (d->addr == VCPUSTAT_DETAIL_OTHER)
			continue;
		if (d->addr == VCPUSTAT_CR3_UNKNOWN)
			snprintf(target, sizeof(target), "unknown");
		else
			snprintf(target, sizeof(target), "0x%llx", (unsigned long long)d->addr);
		while (hashmap_next(votes, &pos, &k, &v)) {
			const struct cr3_vote *c = k;
			uint64_t n = *(uint64_t *)v;

			if (strcmp(c->cr3, target) || n < d->guest_tid_exits ||
			    (n == d->guest_tid_exits && c->tid > d->guest_tid))
				continue;
			d->guest_tid = c->tid;
			d->guest_tid_exits = n;
		}
		if (!d->guest_tid)
			continue;
		snprintf(tid, sizeof(tid), "%u", d->guest_tid);
		e = report_range(r, sht_attr_child(r, sht_attr_child(r, threads, tid), "name"), sht_get_info(r)->start,
				 t2, &nm, &nnm, err);
		for (size_t j = 0; !e && j < nnm; j++)
			if (nm[j].value.type == SHT_STR && nm[j].start < t2)
				snprintf(d->guest_comm, sizeof(d->guest_comm), "%s", nm[j].value.s);
		free(nm);
	}
	return e;
}

/*
 * Nested virtualization (guest_level: 2 while the vCPU runs the L1
 * hypervisor's guest, 1 after): its guest time in L2, in the window and up
 * to t2, and its exits from L2 as rows "nested <code | isa << 32> l0|l1" of
 * the VM's exit-detail table, as the kernel's counts them: an exit that began
 * in L2, in the window of its kvm_exit, with its whole handling time; l1 if
 * the vCPU was back in L1 by its end (KVM reflected it), else l0. An exit the
 * file ends in is in none.
 */
static int nested_in_window(const struct sht_interval *lv, size_t nlv, const struct sht_interval *st, size_t nst,
			    const struct sht_interval *ex, size_t nex, uint64_t t1, uint64_t t2, uint64_t file_end,
			    const struct vcpu_on *on, struct vcpu_summary *out, struct hashmap *table)
{
	size_t j = 0;

	if (!nlv)
		return 0;
	out->nested = true;
	for (size_t i = 0; i < nst; i++) {
		uint64_t a = st[i].start, b = min_u64(st[i].end, t2);

		if (st[i].value.type != SHT_INT || st[i].value.i != VCPU_GUEST || b <= a)
			continue;
		while (j < nlv && lv[j].end <= a) /* both come by start */
			j++;
		for (size_t k = j; k < nlv && lv[k].start < b; k++) {
			uint64_t x = max_u64(a, lv[k].start), y = min_u64(b, lv[k].end);

			if (y <= x || lv[k].value.type != SHT_INT || lv[k].value.i != 2)
				continue;
			out->l2_ns_total += on_ns(on, x, y);
			if (min_u64(y, t2) > max_u64(x, t1))
				out->l2_ns += on_ns(on, max_u64(x, t1), min_u64(y, t2));
		}
	}
	for (size_t i = nlv; i-- > 0;)
		if (lv[i].start < t2) {
			out->in_l2 = lv[i].value.type == SHT_INT && lv[i].value.i == 2 && lv[i].end >= t2;
			break;
		}
	for (size_t i = 0; i < nex; i++) {
		const struct sht_interval *at = report_covering(lv, nlv, ex[i].start), *end;
		unsigned int isa, code;
		char key[64];

		if (ex[i].value.type != SHT_STR || ex[i].start < t1 || ex[i].start >= t2 || ex[i].end >= file_end ||
		    !on_at(on, ex[i].start) || !at || at->value.type != SHT_INT || at->value.i != 2 ||
		    exit_reason_from_name(ex[i].value.s, &isa, &code))
			continue;
		end = report_covering(lv, nlv, ex[i].end > ex[i].start ? ex[i].end - 1 : ex[i].start);
		snprintf(key, sizeof(key), "nested 0x%llx %s", (unsigned long long)((uint64_t)isa << 32 | code),
			 end && end->value.type == SHT_INT && end->value.i == 1 ? "l1" : "l0");
		if (detail_charge(table, key, ex[i].end - ex[i].start))
			return -ENOMEM;
	}
	return 0;
}

/*
 * A vCPU's halt polls that ended in [t1, t2), from its state's transitions,
 * as the state machine counts them (include/vcpu_fsm.h). A poll is a POLL
 * interval, or several with PREEMPTED between them (preempted while polling,
 * it polls again when back on its CPU). After it, the vCPU is in HOST (the
 * wake-up came, or KVM's poll loop gave up and it is on its way to sleep),
 * maybe preempted on the way: the poll was ok if the vCPU next enters the
 * guest, failed if it next sleeps (IDLE or BLOCKED) or went straight to
 * sleep from POLL; a failed one adds all its POLL time to poll_fail_ns. A
 * poll whose end the file does not show (the vCPU gone) is not counted.
 */
static void polls_in_window(const struct sht_interval *st, size_t nst, uint64_t t1, uint64_t t2,
			    const struct vcpu_on *on, struct vcpu_summary *out)
{
	enum { NONE, POLLING, AFTER } at = NONE;
	uint64_t poll_ns = 0;

	for (size_t i = 0; i < nst; i++) {
		const struct sht_interval *iv = &st[i];
		int64_t v = iv->value.type == SHT_INT ? iv->value.i : -1;
		bool ends = iv->start >= t1 && iv->start < t2 && on_at(on, iv->start);

		if (i && st[i - 1].end != iv->start) /* a gap: the vCPU was gone */
			at = NONE;
		if (v == VCPU_POLL) {
			if (at != POLLING)
				poll_ns = 0;
			at = POLLING;
			poll_ns += iv->end - iv->start;
			continue;
		}
		if (at == NONE || v == VCPU_PREEMPTED || v == VCPU_WAIT)
			continue;
		if (v == VCPU_HOST) {
			at = AFTER;
			continue;
		}
		if (v == VCPU_GUEST && at == AFTER && ends) {
			out->polls_ok++;
		} else if ((v == VCPU_IDLE || v == VCPU_BLOCKED) && ends) {
			out->polls_failed++;
			out->poll_fail_ns += poll_ns;
		}
		at = NONE;
	}
}

/*
 * The wake-ups of a sleeping vCPU whose first kvm_entry falls in [t1, t2),
 * by reason (wk: wake_reason, kind VCPU_SAMPLE_WAKE) or by vector (wk:
 * wake_vector, kind VCPU_SAMPLE_WAKE_VECTOR): each such interval starts at
 * that entry (REC_WAKE); the wake-up is
 * the end of the vCPU's last idle or blocked state before it (the kernel's
 * sample: wake-up to entry). One whose wake-up the file does not hold (woken
 * before the file began) is in no window, like an exit's.
 */
static int wakes_in_window(const struct sht_interval *wk, size_t nwk, const struct sht_interval *st, size_t nst,
			   uint64_t t1, uint64_t t2, const struct vcpu_on *on, unsigned int kind, struct hashmap *wakes)
{
	size_t j = 0;
	int e = 0;

	for (size_t i = 0; i < nwk && !e; i++) {
		uint64_t at = wk[i].start;

		if (wk[i].value.type != SHT_STR || at < t1 || at >= t2 || !on_at(on, at))
			continue;
		/* the state intervals come by start: the last asleep one that ended by the entry */
		while (j < nst && st[j].start < at)
			j++;
		for (size_t k = j; k-- > 0;)
			if (st[k].value.type == SHT_INT && (st[k].value.i == VCPU_IDLE || st[k].value.i == VCPU_BLOCKED) &&
			    st[k].end <= at) { /* asleep since before the file, too: the wake-up is in it */
				e = latency_add(wakes, kind, wk[i].value.s, at - st[k].end);
				break;
			}
	}
	return e;
}

static int vcpu_window(struct sht_reader *r, uint32_t vc, uint32_t index, uint64_t t1, uint64_t t2,
		       struct vcpu_summary *out, struct hashmap *exits, struct hashmap *uexits, struct hashmap *runq,
		       struct hashmap *wakes /* [2]: by reason, by vector */,
		       struct cpu_runs *cr, struct hashmap *culprits, struct hashmap *details, struct hashmap *cr3_votes,
		       bool *has_details, const struct id_set *cpus, struct vcpustat_error *err)
{
	const struct sht_info *info = sht_get_info(r);
	struct vcpu_on set = { 0 }, *on = NULL;
	struct vcpu_ivs ivs;
	struct sht_interval *st, *ex, *ux, *pc;
	size_t nst, nex, nux, npc;
	const struct sht_interval *last = NULL;
	int e;

	memset(out, 0, sizeof(*out));
	out->index = index;
	out->pcpu = VCPU_PCPU_NONE;
	/* the vCPU's attributes in one query: each range query reads every leaf the range meets */
	e = vcpu_attrs(r, vc, t1, t2, &ivs, &out->tid, err);
	st = ivs.iv[VA_STATE], nst = ivs.n[VA_STATE];
	ex = ivs.iv[VA_EXIT], nex = ivs.n[VA_EXIT];
	ux = ivs.iv[VA_UEXIT], nux = ivs.n[VA_UEXIT];
	pc = ivs.iv[VA_PCPU], npc = ivs.n[VA_PCPU];
	if (e)
		goto out;
	if (cpus && cpus->n) {
		on = &set;
		set.iv = calloc(npc + 1, sizeof(*set.iv));
		if (!set.iv) {
			e = verror(err, -ENOMEM, "out of memory");
			goto out;
		}
		set.n = pcpu_on_set(pc, npc, cpus, set.iv);
	}
	*has_details |= ivs.has_access;
	for (size_t i = 0; i < nst; i++) {
		const struct sht_interval *iv = &st[i];
		uint64_t s = max_u64(iv->start, t1), t = min_u64(iv->end, t2);
		int64_t v = iv->value.i;
		/* the state before; -1 for a first value (the file's start, the vCPU's first state): no transition */
		int64_t prev = i && st[i - 1].end == iv->start && st[i - 1].value.type == SHT_INT ? st[i - 1].value.i : -1;

		if (iv->value.type != SHT_INT || v < 0 || v >= VCPU_NR_STATES)
			continue;
		if (iv->start < t2)
			out->ns_total[v] += on_ns(on, iv->start, min_u64(iv->end, t2));
		if (iv->start < t2 && iv->end > iv->start)
			last = iv;
		if (t > s)
			out->ns[v] += on_ns(on, s, t);
		if (iv->start >= t1 && iv->start < t2 && on_at(on, iv->start)) {
			if (v == VCPU_PREEMPTED && prev >= 0)
				out->preemptions++;
			if (v == VCPU_WAIT && (prev == VCPU_IDLE || prev == VCPU_BLOCKED || prev == VCPU_UNKNOWN))
				out->wakeups++;
		}
		/* run-queue waits that ended in the window (the file holds their start), and who ran meanwhile */
		if ((v == VCPU_PREEMPTED || v == VCPU_WAIT) && prev >= 0 && iv->end > t1 && iv->end <= t2 &&
		    on_at(on, iv->end) && i + 1 < nst && st[i + 1].start == iv->end && st[i + 1].value.type == SHT_INT &&
		    (st[i + 1].value.i == VCPU_HOST || st[i + 1].value.i == VCPU_GUEST ||
		     st[i + 1].value.i == VCPU_POLL)) {
			e = latency_add(runq, VCPU_SAMPLE_RUNQ_WAIT, "runq_wait", iv->end - iv->start);
			if (e)
				goto out;
		}
		if ((v == VCPU_PREEMPTED || v == VCPU_WAIT) && cr && t > s) {
			/*
			 * Each stretch of the wait on its CPU (the load balancer may
			 * move a queued vCPU), charged to who ran there, as the live
			 * view charges it; --pcpu: the stretches on a CPU of the set.
			 */
			for (size_t k = report_first_after(pc, npc, s); k < npc && pc[k].start < t && !e; k++) {
				uint64_t a = max_u64(pc[k].start, s), b = min_u64(pc[k].end, t);

				if (b > a && pc[k].value.type == SHT_INT && pc[k].value.i >= 0 &&
				    (!on || id_set_has(cpus, (uint32_t)pc[k].value.i)))
					e = report_charge(r, cr, culprits, (uint32_t)pc[k].value.i, a, b, err);
			}
			if (e)
				goto out;
		}
	}
	if (last) {
		out->state = (uint32_t)last->value.i;
		out->gone = last->end < t2 && last->end < info->end;
	}
	for (size_t i = 0; i < npc; i++) {
		if (pc[i].value.type != SHT_INT || pc[i].start >= t2)
			continue;
		out->pcpu = (uint32_t)pc[i].value.i;
		if (pc[i].start >= t1 && i && pc[i - 1].value.type == SHT_INT && pc[i - 1].value.i != pc[i].value.i &&
		    on_at(on, pc[i].start))
			out->migrations++;
	}
	polls_in_window(st, nst, t1, t2, on, out);
	for (size_t i = 0; i < ivs.n[VA_HALT_POLL_NS]; i++) {
		const struct sht_interval *h = &ivs.iv[VA_HALT_POLL_NS][i];

		if (h->start < t2 && h->value.type == SHT_INT)
			out->halt_poll_ns = (uint32_t)h->value.i;
	}
	e = exits_in_window(ex, nex, t1, t2, info->end, on, VCPU_SAMPLE_EXIT, exits, &out->kvm_exits,
			    &out->kvm_exits_open, out->open_exit, &out->open_exit_ns);
	if (!e)
		e = exits_in_window(ux, nux, t1, t2, info->end, on, VCPU_SAMPLE_USERSPACE_EXIT, uexits,
				    &out->userspace_exits, &out->userspace_exits_open, out->open_uexit,
				    &out->open_uexit_ns);
	for (int k = VA_ACCESS; k <= VA_FAULT && !e; k++)
		e = details_in_window(ivs.iv[k], ivs.n[k], ex, nex, t1, t2, info->end, on, details);
	if (!e)
		e = nested_in_window(ivs.iv[VA_GUEST_LEVEL], ivs.n[VA_GUEST_LEVEL], st, nst, ex, nex, t1, t2, info->end, on,
				     out, details);
	*has_details |= ivs.n[VA_GUEST_LEVEL] > 0; /* its exits from L2 are exit details */
	if (!e)
		e = spaces_in_window(ivs.iv[VA_GUEST_CR3], ivs.n[VA_GUEST_CR3], st, nst, ivs.iv[VA_GUEST_TID],
				     ivs.n[VA_GUEST_TID], t1, t2, on, details, cr3_votes);
	if (!e)
		e = wakes_in_window(ivs.iv[VA_WAKE], ivs.n[VA_WAKE], st, nst, t1, t2, on, VCPU_SAMPLE_WAKE, &wakes[0]);
	if (!e)
		e = wakes_in_window(ivs.iv[VA_WAKE_VECTOR], ivs.n[VA_WAKE_VECTOR], st, nst, t1, t2, on,
				    VCPU_SAMPLE_WAKE_VECTOR, &wakes[1]);
out:
	free(set.iv);
	vcpu_ivs_free(&ivs);
	return e;
}

/* Which VM and vCPU a thread is. */
struct vcpu_ref {
	char vm[64];
	int vcpu;
};

/*
 * The culprits of acc (tid -> ns) as summaries: names from /host/threads (one
 * query for the name and pid attributes of them all), VM and vCPU if a vCPU.
 */
int report_culprits_fill(struct sht_reader *r, struct culprit_summary **out, size_t *nout, struct hashmap *acc,
			 struct hashmap *vcpu_of_tid, __u64 waited)
{
	uint32_t threads = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "threads");
	struct report_thread *th;
	size_t pos = 0, i = 0;
	void *k, *v;
	int e;

	*out = calloc(acc->count ? acc->count : 1, sizeof(**out));
	th = calloc(acc->count ? acc->count : 1, sizeof(*th));
	if (!*out || !th) {
		free(th);
		return -ENOMEM;
	}
	while (hashmap_next(acc, &pos, &k, &v)) {
		struct culprit_summary *c = &(*out)[i];
		uint32_t tid = *(uint32_t *)k;
		char name[16];
		const struct vcpu_ref *who;

		memset(c, 0, sizeof(*c));
		c->tid = tid;
		c->ns = *(uint64_t *)v;
		c->share = waited ? (double)c->ns / (double)waited : 0;
		c->vcpu = -1;
		snprintf(name, sizeof(name), "%u", tid);
		th[i].th = threads == SHT_NO_ATTR || tid == 0 ? SHT_NO_ATTR : sht_attr_child(r, threads, name);
		if (tid == 0) {
			snprintf(c->comm, sizeof(c->comm), "(idle)");
			snprintf(c->process, sizeof(c->process), "idle");
		}
		who = hashmap_lookup(vcpu_of_tid, &tid);
		if (who && tid) {
			snprintf(c->vm, sizeof(c->vm), "%s", who->vm);
			c->vcpu = who->vcpu;
		}
		i++;
	}
	*nout = i;
	/* names are for the reader: a file whose names cannot be read still has its culprits (unnamed) */
	e = report_thread_names(r, th, i, NULL);
	for (size_t j = 0; j < i; j++) {
		struct culprit_summary *c = &(*out)[j];

		if (th[j].th == SHT_NO_ATTR)
			continue;
		snprintf(c->comm, sizeof(c->comm), "%s", th[j].name);
		snprintf(c->process, sizeof(c->process), "%s", c->comm);
		snprintf(c->cgroup, sizeof(c->cgroup), "%s", th[j].cgroup);
		snprintf(c->pod_name, sizeof(c->pod_name), "%s", th[j].pod_name);
		snprintf(c->pod_namespace, sizeof(c->pod_namespace), "%s", th[j].pod_namespace);
		snprintf(c->container_name, sizeof(c->container_name), "%s", th[j].container_name);
		c->tgid = th[j].pid;
		c->pidns = th[j].pidns;
	}
	free(th);
	return e == -ENOMEM ? e : 0;
}

static int culprits_collect(struct sht_reader *r, struct vm_summary *vm, struct hashmap *acc,
			    struct hashmap *vcpu_of_tid)
{
	return report_culprits_fill(r, &vm->culprits, &vm->nr_culprits, acc, vcpu_of_tid,
				    vm->ns[VCPU_PREEMPTED] + vm->ns[VCPU_WAIT]);
}

/* ---- the VMM's other threads (level full) ---- */

/* The CPU thread tid is current on at t, by current_tid, or -1. */
static int cpu_of(struct sht_reader *r, struct cpu_runs *cr, uint32_t tid, uint64_t t, struct vcpustat_error *err,
		  int *e)
{
	for (uint32_t c = report_first_child(r, cr->host_cpus); c != SHT_NO_ATTR; c = sht_attr_next_sibling(r, c)) {
		uint32_t cpu = (uint32_t)atoi(sht_attr_name(r, c));
		struct runs *runs = cpu_runs_get(r, cr, cpu, err, e);
		const struct sht_interval *iv;

		if (!runs)
			return -1;
		iv = report_covering(runs->iv, runs->n, t);
		if (iv && iv->value.type == SHT_INT && (uint32_t)iv->value.i == tid)
			return (int)cpu;
	}
	return -1;
}

/* Charge [a, b) of a wait to who ran on the CPUs that cpu_attr says it waited on meanwhile. */
static int charge_on(struct sht_reader *r, struct cpu_runs *cr, struct hashmap *acc, uint32_t cpu_attr, uint64_t a,
		     uint64_t b, struct vcpustat_error *err)
{
	struct sht_interval *iv = NULL;
	size_t n = 0;
	int e = report_range(r, cpu_attr, a, b, &iv, &n, err);

	for (size_t i = 0; i < n && !e; i++) {
		uint64_t s = max_u64(iv[i].start, a), t = min_u64(iv[i].end, b);

		if (t > s && iv[i].value.type == SHT_INT && iv[i].value.i >= 0)
			e = report_charge(r, cr, acc, (uint32_t)iv[i].value.i, s, t, err);
	}
	free(iv);
	return e;
}

/*
 * One thread of the VMM: its run and wait time in [t1, t2), and the threads
 * that ran where it waited: on the CPU its cpu attribute names (level vcpu),
 * else on the CPU it ran on next, or the one before (level full).
 */
static int vmm_thread(struct sht_reader *r, uint32_t th, uint32_t tid, int kind, struct vm_summary *vs,
		      struct cpu_runs *cr, struct hashmap *acc, struct vcpustat_error *err)
{
	/* acc NULL: a level-vcpu recording without runners (older ones), nobody to tell who ran instead */
	uint32_t cpu_attr = sht_attr_child(r, th, "cpu");
	struct sht_interval *iv = NULL;
	bool seen = false;
	size_t n = 0;
	int e = report_range(r, sht_attr_child(r, th, "state"), cr->t1, cr->t2, &iv, &n, err);

	for (size_t i = 0; i < n && !e; i++) {
		uint64_t a = max_u64(iv[i].start, cr->t1), b = min_u64(iv[i].end, cr->t2);
		int cpu;

		if (a >= b || iv[i].value.type != SHT_STR)
			continue;
		if (!strcmp(iv[i].value.s, "running")) {
			vs->vmm.run_ns[kind] += b - a;
			seen = true;
		} else if (!strcmp(iv[i].value.s, "preempted") || !strcmp(iv[i].value.s, "wait")) {
			vs->vmm.wait_ns[kind] += b - a;
			seen = true;
			if (!acc)
				continue;
			if (cpu_attr != SHT_NO_ATTR) {
				e = charge_on(r, cr, acc, cpu_attr, a, b, err);
				continue;
			}
			cpu = cpu_of(r, cr, tid, iv[i].end, err, &e);
			if (cpu < 0 && !e && iv[i].start)
				cpu = cpu_of(r, cr, tid, iv[i].start - 1, err, &e);
			if (cpu >= 0 && !e)
				e = report_charge(r, cr, acc, (uint32_t)cpu, a, b, err);
		}
	}
	free(iv);
	vs->vmm.threads[kind] += seen;
	return e;
}

/* Every host thread with its tid, pid and name (one query for the pids and names of them all). */
static int host_threads(struct sht_reader *r, struct report_thread **out, size_t *n, struct vcpustat_error *err)
{
	uint32_t threads = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "threads");

	*out = NULL;
	*n = 0;
	for (uint32_t th = report_first_child(r, threads); th != SHT_NO_ATTR; th = sht_attr_next_sibling(r, th)) {
		struct report_thread *a = realloc(*out, (*n + 1) * sizeof(*a));

		if (!a)
			return verror(err, -ENOMEM, "out of memory");
		*out = a;
		a[(*n)++] = (struct report_thread){ .th = th, .tid = (uint32_t)atoi(sht_attr_name(r, th)) };
	}
	return *n ? report_thread_names(r, *out, *n, err) : 0;
}

/* The VMM threads' culprits from acc (tid -> ns), by ns, their shares of the threads' waiting. */
static int vmm_culprits(struct sht_reader *r, struct vm_summary *vs, struct hashmap *acc, struct hashmap *vcpu_of_tid)
{
	int e = report_culprits_fill(r, &vs->vmm.culprits, &vs->vmm.nr_culprits, acc, vcpu_of_tid,
				     vs->vmm.wait_ns[VMM_EMULATOR] + vs->vmm.wait_ns[VMM_VHOST]);

	if (!e && vs->vmm.nr_culprits > 1)
		qsort(vs->vmm.culprits, vs->vmm.nr_culprits, sizeof(*vs->vmm.culprits), report_by_ns_desc);
	return e;
}

static int vmm_threads(struct sht_reader *r, struct vm_summary *vs, struct cpu_runs *cr, struct hashmap *vcpu_of_tid,
		       const struct report_thread *ht, size_t nht, const struct id_set *tids, struct vcpustat_error *err)
{
	struct hashmap acc;
	char vhost[32];
	int e = 0;

	vs->vmm.known = true;
	snprintf(vhost, sizeof(vhost), "vhost-%u", vs->tgid);
	if (hashmap_init(&acc, sizeof(uint32_t), sizeof(uint64_t), 0))
		return -ENOMEM;
	for (size_t i = 0; i < nht && !e; i++) {
		if (!id_set_has(tids, ht[i].tid))
			continue;
		/* vhost workers: kernel threads, or (Linux 6.4+) threads of the VMM process itself */
		if (!strcmp(ht[i].name, vhost))
			e = vmm_thread(r, ht[i].th, ht[i].tid, VMM_VHOST, vs, cr, &acc, err);
		else if (ht[i].pid == vs->tgid && vs->tgid && !hashmap_lookup(vcpu_of_tid, &ht[i].tid))
			e = vmm_thread(r, ht[i].th, ht[i].tid, VMM_EMULATOR, vs, cr, &acc, err);
	}
	if (!e)
		e = vmm_culprits(r, vs, &acc, vcpu_of_tid);
	hashmap_free(&acc);
	return e;
}

/* The first string value of attr into buf ("" if none). */
static const char *first_str(struct sht_reader *r, uint32_t attr, char *buf, size_t len)
{
	const struct sht_info *info = sht_get_info(r);
	struct sht_interval *iv = NULL;
	size_t n;

	buf[0] = '\0';
	if (attr == SHT_NO_ATTR || sht_query_range(r, attr, NULL, info->start, info->end, &iv, &n, NULL))
		return buf;
	for (size_t i = 0; i < n; i++)
		if (iv[i].value.type == SHT_STR) {
			snprintf(buf, len, "%s", iv[i].value.s);
			break;
		}
	free(iv);
	return buf;
}

/*
 * A level-vcpu recording's VMM threads (/vms/<vm>/vmm/<tid>, record VMM):
 * their time on a CPU and waiting, and who ran where they waited (the CPUs'
 * runner_tid) if the file records runners (culprits; older files do not).
 */
static int vmm_threads_recorded(struct sht_reader *r, uint32_t vmm, struct vm_summary *vs, struct cpu_runs *cr,
				bool culprits, struct hashmap *vcpu_of_tid, const struct id_set *tids,
				struct vcpustat_error *err)
{
	struct hashmap acc;
	int e = 0;

	vs->vmm.known = true;
	vs->vmm.no_culprits = !culprits;
	if (hashmap_init(&acc, sizeof(uint32_t), sizeof(uint64_t), 0))
		return verror(err, -ENOMEM, "out of memory");
	for (uint32_t th = report_first_child(r, vmm); th != SHT_NO_ATTR && !e; th = sht_attr_next_sibling(r, th)) {
		uint32_t tid = (uint32_t)atoi(sht_attr_name(r, th));
		char kind[16];

		if (id_set_has(tids, tid))
			e = vmm_thread(r, th, tid,
				       !strcmp(first_str(r, sht_attr_child(r, th, "kind"), kind, sizeof(kind)), "vhost") ?
					       VMM_VHOST :
					       VMM_EMULATOR,
				       vs, cr, culprits ? &acc : NULL, err);
	}
	if (!e && culprits)
		e = vmm_culprits(r, vs, &acc, vcpu_of_tid);
	hashmap_free(&acc);
	return e;
}

int report_by_ns_desc(const void *a, const void *b)
{
	const struct culprit_summary *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int by_index(const void *a, const void *b)
{
	const struct vcpu_summary *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* What every VM of one report reads: the window, the filter, and what the VMs share. */
struct report_ctx {
	struct sht_reader *r;
	uint64_t t1, t2;
	const struct summary_filter *f;
	bool has_culprits;
	uint32_t host;
	struct cpu_runs cr;
	struct hashmap vcpu_of_tid; /* tid -> struct vcpu_ref, every VM's vCPUs */
	struct report_thread *ht;   /* the host threads, read at the first VM that needs them */
	size_t nht;
};

/* One VM's accumulators over its vCPUs: by exit reason, by wake reason and vector, and the rest. */
struct vm_accs {
	struct hashmap exits, uexits, runq, culprits, details, cr3_votes, wakes[2]; /* by reason, by vector */
};

static void vm_accs_init(struct vm_accs *a)
{
	hashmap_init(&a->exits, 32, sizeof(struct latency_summary), 0);
	hashmap_init(&a->uexits, 32, sizeof(struct latency_summary), 0);
	hashmap_init(&a->runq, 32, sizeof(struct latency_summary), 0);
	hashmap_init(&a->wakes[0], 32, sizeof(struct latency_summary), 0);
	hashmap_init(&a->wakes[1], 32, sizeof(struct latency_summary), 0);
	hashmap_init(&a->culprits, sizeof(uint32_t), sizeof(uint64_t), 0);
	hashmap_init(&a->details, 64, sizeof(struct detail_summary), 0);
	hashmap_init(&a->cr3_votes, sizeof(struct cr3_vote), sizeof(uint64_t), 0);
}

static void vm_accs_free(struct vm_accs *a)
{
	hashmap_free(&a->exits);
	hashmap_free(&a->uexits);
	hashmap_free(&a->runq);
	hashmap_free(&a->wakes[0]);
	hashmap_free(&a->wakes[1]);
	hashmap_free(&a->culprits);
	hashmap_free(&a->details);
	hashmap_free(&a->cr3_votes);
}

/* Every VM's vCPU threads into c->vcpu_of_tid, also of VMs filtered out: a culprit may be one of them. */
static int vcpus_of_tids(struct report_ctx *c, uint32_t vms)
{
	struct sht_reader *r = c->r;

	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm))
		for (uint32_t vc = report_first_child(r, sht_attr_child(r, vm, "vcpus")); vc != SHT_NO_ATTR;
		     vc = sht_attr_next_sibling(r, vc)) {
			uint32_t tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0);
			struct vcpu_ref who = { .vcpu = atoi(sht_attr_name(r, vc)) };

			snprintf(who.vm, sizeof(who.vm), "%s", sht_attr_name(r, vm));
			if (tid && !hashmap_lookup(&c->vcpu_of_tid, &tid) &&
			    hashmap_insert(&c->vcpu_of_tid, &tid, &who))
				return -ENOMEM;
		}
	return 0;
}

/* A new VM summary at the end of s, named from proc: NULL when out of memory. */
static struct vm_summary *vm_new(struct summary *s, struct sht_reader *r, uint32_t vm, const struct report_thread *proc)
{
	struct vm_summary *vs, *arr = realloc(s->vms, (s->nr_vms + 1) * sizeof(*arr));

	if (!arr)
		return NULL;
	s->vms = arr;
	vs = &s->vms[s->nr_vms++];
	memset(vs, 0, sizeof(*vs));
	vs->tgid = proc->pid;
	snprintf(vs->name, sizeof(vs->name), "%s", sht_attr_name(r, vm));
	snprintf(vs->cgroup, sizeof(vs->cgroup), "%s", proc->cgroup);
	vs->pidns = proc->pidns;
	snprintf(vs->pod_name, sizeof(vs->pod_name), "%s", proc->pod_name);
	snprintf(vs->pod_namespace, sizeof(vs->pod_namespace), "%s", proc->pod_namespace);
	snprintf(vs->container_name, sizeof(vs->container_name), "%s", proc->container_name);
	vs->runq.kind = VCPU_SAMPLE_RUNQ_WAIT;
	return vs;
}

/* vCPU v's window added to its VM's. */
static int vm_add_vcpu(struct report_ctx *c, struct vm_summary *vs, const struct vcpu_summary *v)
{
	struct vcpu_summary *va = realloc(vs->vcpus, (vs->nr_vcpus + 1) * sizeof(*va));

	if (!va)
		return -ENOMEM;
	vs->vcpus = va;
	vs->vcpus[vs->nr_vcpus++] = *v;
	summary_vm_add_vcpu(vs, v);
	if (v->tid) {
		struct vcpu_ref who = { .vcpu = (int)v->index };

		snprintf(who.vm, sizeof(who.vm), "%s", vs->name);
		hashmap_update(&c->vcpu_of_tid, &v->tid, &who);
	}
	return 0;
}

/* The vCPUs of VM attribute vm the filter keeps and that lived in the window, into vs and a. */
static int vm_vcpus(struct report_ctx *c, struct summary *s, uint32_t vm, struct vm_summary *vs, struct vm_accs *a,
		    struct vcpustat_error *err)
{
	struct sht_reader *r = c->r;
	const struct summary_filter *f = c->f;
	int e = 0;

	for (uint32_t vc = report_first_child(r, sht_attr_child(r, vm, "vcpus")); vc != SHT_NO_ATTR && !e;
	     vc = sht_attr_next_sibling(r, vc)) {
		uint32_t index = (uint32_t)atoi(sht_attr_name(r, vc));
		struct vcpu_summary v;
		bool seen = false;

		if (summary_filter_vcpus(f)) {
			uint32_t tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0);

			vs->nr_vcpus_all++;
			if (!summary_filter_wants_vcpu(f, index, tid))
				continue;
		}
		e = vcpu_window(r, vc, index, c->t1, c->t2, &v, &a->exits, &a->uexits, &a->runq, a->wakes,
				c->has_culprits ? &c->cr : NULL, &a->culprits, &a->details, &a->cr3_votes,
				&s->has_details, f ? &f->pcpus : NULL, err);
		if (e)
			break;
		for (unsigned int k = 0; k < VCPU_NR_STATES; k++)
			seen |= v.ns[k] > 0;
		if (seen) /* else no life in the window */
			e = vm_add_vcpu(c, vs, &v);
	}
	return e;
}

/* The VM's accumulators as its tables: exits, details, address spaces, wake-ups, run-queue waits, culprits. */
static int vm_collect(struct report_ctx *c, uint32_t vm, struct vm_summary *vs, struct vm_accs *a, double seconds,
		      struct vcpustat_error *err)
{
	int e = latency_collect(&a->exits, &vs->exits, &vs->nr_exits, seconds);

	if (!e)
		e = latency_collect(&a->uexits, &vs->uexits, &vs->nr_uexits, seconds);
	if (!e)
		e = details_collect(&a->details, vs, seconds);
	if (!e)
		e = spaces_name(c->r, vm, vs, &a->cr3_votes, c->t2, err);
	if (!e)
		e = latency_collect(&a->wakes[0], &vs->wakes, &vs->nr_wakes, seconds);
	if (!e)
		e = latency_collect(&a->wakes[1], &vs->wake_vectors, &vs->nr_wake_vectors, seconds);
	if (!e && a->runq.count) {
		size_t pos = 0;
		void *k, *v;

		hashmap_next(&a->runq, &pos, &k, &v);
		vs->runq = *(struct latency_summary *)v;
		latency_finish(&vs->runq, seconds);
	}
	if (!e)
		e = culprits_collect(c->r, vs, &a->culprits, &c->vcpu_of_tid);
	return e;
}

/* The VM's guest threads, and the VMM's other threads: not per vCPU (--vcpu) nor per CPU (--pcpu); --tid keeps those
 * threads. */
static int vm_threads(struct report_ctx *c, uint32_t vm, struct vm_summary *vs, struct vcpustat_error *err)
{
	struct sht_reader *r = c->r;
	const struct summary_filter *f = c->f;
	bool per_vcpu_or_cpu = f && (f->vcpus.n || f->pcpus.n);
	int e = report_guest_threads(r, vm, vs, c->t1, c->t2, c->has_culprits ? &c->cr : NULL, &c->vcpu_of_tid, err);

	if (!e && summary_filter_vcpus(f))
		report_guest_threads_keep(vs);
	if (e || per_vcpu_or_cpu)
		return e;
	if (c->cr.full && sht_attr_child(r, c->host, "threads") != SHT_NO_ATTR) {
		if (!c->ht && !(e = host_threads(r, &c->ht, &c->nht, err)) && !c->ht)
			c->ht = calloc(1, sizeof(*c->ht)); /* none: do not ask again */
		if (!e && !c->ht)
			e = verror(err, -ENOMEM, "out of memory");
		if (!e)
			e = vmm_threads(r, vs, &c->cr, &c->vcpu_of_tid, c->ht, c->nht, f ? &f->tids : NULL, err);
	} else if (sht_attr_child(r, vm, "vmm") != SHT_NO_ATTR) {
		e = vmm_threads_recorded(r, sht_attr_child(r, vm, "vmm"), vs, &c->cr, c->has_culprits, &c->vcpu_of_tid,
					 f ? &f->tids : NULL, err);
	}
	return e;
}

/* VM attribute vm in the window into s, unless the filter leaves it out or it did not live then. */
static int vm_report(struct report_ctx *c, struct summary *s, uint32_t vm, struct vcpustat_error *err)
{
	struct report_thread proc = { .th = vm }; /* its pid, cgroup, pidns, Kubernetes names: one query */
	struct vm_summary *vs;
	struct vm_accs a;
	int e = report_thread_names(c->r, &proc, 1, err);

	if (e || !summary_filter_wants(c->f, sht_attr_name(c->r, vm), proc.pid))
		return e;
	vs = vm_new(s, c->r, vm, &proc);
	if (!vs)
		return -ENOMEM;
	vm_accs_init(&a);
	e = vm_vcpus(c, s, vm, vs, &a, err);
	if (!e)
		e = vm_collect(c, vm, vs, &a, s->seconds, err);
	if (!e)
		e = vm_threads(c, vm, vs, err);
	vm_accs_free(&a);
	if (e)
		return e;
	if (vs->nr_vcpus > 1)
		qsort(vs->vcpus, vs->nr_vcpus, sizeof(*vs->vcpus), by_index);
	if (vs->nr_culprits > 1)
		qsort(vs->culprits, vs->nr_culprits, sizeof(*vs->culprits), report_by_ns_desc);
	if (!vs->nr_vcpus) { /* the VM did not live in the window */
		summary_free_vm(vs);
		s->nr_vms--;
	}
	return 0;
}

/* Culprits that are vCPUs of a VM later in the list: named now that all are known. */
static void culprits_name_vcpus(struct culprit_summary *cu, size_t n, struct hashmap *vcpu_of_tid)
{
	for (size_t i = 0; i < n; i++) {
		const struct vcpu_ref *who = hashmap_lookup(vcpu_of_tid, &cu[i].tid);

		if (who && !cu[i].vm[0] && cu[i].tid) {
			snprintf(cu[i].vm, sizeof(cu[i].vm), "%s", who->vm);
			cu[i].vcpu = who->vcpu;
		}
	}
}

/* The ring buffer's losses: since the start, and in the window. */
static void report_lost(struct summary *s, struct sht_reader *r, uint64_t t1, uint64_t t2)
{
	uint32_t lost_attr = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "meta"), "lost");
	int64_t l1, l2;

	if (lost_attr == SHT_NO_ATTR)
		return;
	l1 = int_at(r, lost_attr, t1, 0);
	l2 = int_at(r, lost_attr, t2 ? t2 - 1 : 0, l1);
	s->lost[VCPUSTAT_LOST_RINGBUF] = (__u64)l2;
	s->lost_window[VCPUSTAT_LOST_RINGBUF] = l2 > l1 ? (__u64)(l2 - l1) : 0;
}

static void report_ctx_free(struct report_ctx *c)
{
	size_t pos = 0;
	void *k, *v;

	while (hashmap_next(&c->cr.cpus, &pos, &k, &v))
		free(((struct runs *)v)->iv);
	hashmap_free(&c->cr.cpus);
	hashmap_free(&c->vcpu_of_tid);
	free(c->ht);
}

int report_build(struct summary *s, struct sht_reader *r, uint64_t t1, uint64_t t2, const struct summary_filter *f,
		 bool *has_culprits, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	struct report_ctx c = { .r = r, .t1 = t1, .t2 = t2, .f = f, .host = sht_attr_child(r, SHT_NO_ATTR, "host") };
	const char *culprits;
	int e;

	memset(s, 0, sizeof(*s));
	s->t0 = t1;
	s->t1 = t2;
	s->no_wall_clock = !sht_has_wall_clock(r);
	if (!s->no_wall_clock)
		s->wall_t1 = sht_get_info(r)->real_start_ns + t2;
	s->seconds = t2 > t1 ? (double)(t2 - t1) / 1e9 : 0;
	if (f && f->pcpus.n)
		snprintf(s->pcpus, sizeof(s->pcpus), "%s", f->pcpus.text);
	c.cr.host_cpus = sht_attr_child(r, c.host, "cpus");
	c.cr.full = report_host_recorded(r);
	c.cr.t1 = t1;
	c.cr.t2 = t2;
	/* a level-vcpu recording says it records runners even if no tracked thread ever waited */
	culprits = sht_meta_get(r, "culprits");
	c.has_culprits = *has_culprits = c.cr.host_cpus != SHT_NO_ATTR || (culprits && !strcmp(culprits, "runners"));
	if (hashmap_init(&c.cr.cpus, sizeof(uint32_t), sizeof(struct runs), 0) ||
	    hashmap_init(&c.vcpu_of_tid, sizeof(uint32_t), sizeof(struct vcpu_ref), 0)) {
		hashmap_free(&c.cr.cpus);
		return verror(err, -ENOMEM, "out of memory");
	}
	e = vcpus_of_tids(&c, vms);
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm))
		e = vm_report(&c, s, vm, err);
	for (size_t i = 0; i < s->nr_vms && !e; i++) {
		culprits_name_vcpus(s->vms[i].culprits, s->vms[i].nr_culprits, &c.vcpu_of_tid);
		for (size_t g = 0; g < s->vms[i].nr_guest_threads; g++)
			culprits_name_vcpus(s->vms[i].guest_threads[g].culprits, s->vms[i].guest_threads[g].nr_culprits,
					    &c.vcpu_of_tid);
	}
	if (!e)
		report_lost(s, r, t1, t2);
	report_ctx_free(&c);
	if (e) {
		summary_free(s);
		if (err && !err->code)
			verror(err, e, "%s", strerror(-e));
		return err && err->code ? err->code : e;
	}
	return 0;
}

void report_json_window(json_t *doc, struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2,
			bool has_culprits)
{
	bool wall = sht_has_wall_clock(r);
	char a[64], b[64];

	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	json_object_set_new(doc, "file", json_string(file));
	json_object_set_new(doc, "from_ns", json_integer((json_int_t)t1));
	json_object_set_new(doc, "to_ns", json_integer((json_int_t)t2));
	json_object_set_new(doc, "wall_clock", json_boolean(wall));
	json_object_set_new(doc, "from", wall ? json_string(a) : json_null());
	json_object_set_new(doc, "to", wall ? json_string(b) : json_null());
	json_object_set_new(doc, "culprits_recorded", json_boolean(has_culprits));
	if (sht_get_info(r)->recovered)
		json_object_set_new(doc, "recovered", json_true());
}
