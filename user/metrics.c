// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* metrics.c - the exporters' model (metrics.h, docs/metrics.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include "hashmap.h"
#include "metrics.h"

/* 1-2-5 from 500 ns to 10 s, each the nearest edge of a kernel bucket (docs/metrics.md) */
const unsigned long long metrics_le_ns[METRICS_NR_LE] = {
	512,       1024,	  2048,	     5120,	 10240,	     20480,	    49152,	   98304,
	196608,    491520,	  983040,    1966080,	 5242880,    10485760,	    20971520,	   50331648,
	100663296, 201326592, 503316480, 1006632960, 2013265920, 4831838208ull, 9663676416ull,
};

static const char *const lost_kinds[VCPUSTAT_NR_LOST] = {
	[VCPUSTAT_LOST_RINGBUF] = "ringbuf",	   [VCPUSTAT_LOST_VCPU_FULL] = "vcpu_table_full",
	[VCPUSTAT_LOST_VM_FULL] = "vm_table_full",	   [VCPUSTAT_LOST_HIST_FULL] = "hist_table_full",
	[VCPUSTAT_LOST_DEAD_FULL] = "dead_table_full", [VCPUSTAT_LOST_CULPRIT_FULL] = "culprit_table_full",
	[VCPUSTAT_LOST_WAIT_SLOTS] = "wait_slots",
};

/* ---- the accumulated state ---- */

struct acc_counts {
	__u64 ns[VCPU_NR_STATES];
	__u64 preemptions, wakeups, migrations, exits, uexits;
};

struct acc_vcpu {
	__u32 index;
	struct acc_counts c;
};

struct acc_hist {
	char reason[32];
	__u64 count, sum_ns; /* count = the sum of the buckets, so +Inf == _count always */
	__u64 bucket[LAT_HIST_BUCKETS];
};

struct culprit_key {
	char process[64];
	char comm[16];
	char cgroup[256];
	char vm[64];
};

struct acc_culprit {
	struct culprit_key key;
	__u64 total_ns; /* everything charged since the start: the ranking */
	__u64 named_ns; /* charged while it was in the top N: its series */
	__u64 delta;	/* in the window being added */
	bool named;
};

struct acc_vm {
	char name[64];
	__u64 last_alive; /* end of the last window it had a live vCPU in */
	unsigned int vcpus_now;
	struct acc_counts c;
	struct acc_vcpu *vcpus; /* by index */
	size_t nr_vcpus;
	struct acc_hist *exits, *uexits; /* by reason */
	size_t nr_exits, nr_uexits;
	struct acc_hist runq;
	struct acc_culprit *culprits;
	size_t nr_culprits;
	struct hashmap culprit_idx; /* struct culprit_key -> size_t */
	__u64 other_ns;
};

struct prog_state {
	char tracepoint[64];
	int attached;
};

struct metrics {
	struct metrics_opts o;
	struct acc_vm **vms; /* by name */
	size_t nr_vms;
	bool started;
	unsigned long nr_adds;
	__u64 t0, t1;
	long long real_offset;
	bool no_clock; /* no wall clock: no start time */
	__u64 lost[VCPUSTAT_NR_LOST];
	struct prog_state *progs;
	size_t nr_progs;
	bool file;
	char file_path[512], from[64], to[64];
	__u64 from_ns, to_ns;
	char kernel[128];
};

struct metrics *metrics_new(const struct metrics_opts *opts)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct utsname u;

	if (!m)
		return NULL;
	if (opts)
		m->o = *opts;
	else
		m->o.top_culprits = METRICS_TOP_CULPRITS;
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
	return m;
}

static void vm_free(struct acc_vm *vm)
{
	free(vm->vcpus);
	free(vm->exits);
	free(vm->uexits);
	free(vm->culprits);
	hashmap_free(&vm->culprit_idx);
	free(vm);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr_vms; i++)
		vm_free(m->vms[i]);
	free(m->vms);
	free(m->progs);
	free(m);
}

void metrics_start(struct metrics *m, unsigned long long t)
{
	m->started = true;
	m->t0 = m->t1 = t;
}

void metrics_set_clock(struct metrics *m, long long real_offset_ns)
{
	m->real_offset = real_offset_ns;
	m->no_clock = false;
}

void metrics_set_no_clock(struct metrics *m)
{
	m->real_offset = 0;
	m->no_clock = true;
}

void metrics_set_programs(struct metrics *m, const struct vcpustat_prog *progs, size_t n)
{
	struct prog_state *p = calloc(n ? n : 1, sizeof(*p));

	if (!p)
		return;
	for (size_t i = 0; i < n; i++) {
		snprintf(p[i].tracepoint, sizeof(p[i].tracepoint), "%s", progs[i].tracepoint);
		p[i].attached = progs[i].status == VCPUSTAT_PROG_ATTACHED;
	}
	free(m->progs);
	m->progs = p;
	m->nr_progs = n;
}

void metrics_set_file(struct metrics *m, const char *file, unsigned long long from_ns, unsigned long long to_ns,
		      const char *from, const char *to)
{
	m->file = true;
	snprintf(m->file_path, sizeof(m->file_path), "%s", file);
	snprintf(m->from, sizeof(m->from), "%s", from);
	snprintf(m->to, sizeof(m->to), "%s", to);
	m->from_ns = from_ns;
	m->to_ns = to_ns;
}

size_t metrics_nr_vms(const struct metrics *m)
{
	return m->nr_vms;
}

size_t metrics_nr_vcpus(const struct metrics *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nr_vms; i++)
		n += m->vms[i]->vcpus_now;
	return n;
}

/* ---- accumulating ---- */

/* Index of the VM named name, or where it would go (*found false). */
static size_t vm_find(const struct metrics *m, const char *name, bool *found)
{
	size_t a = 0, b = m->nr_vms;

	while (a < b) {
		size_t mid = (a + b) / 2;
		int c = strcmp(m->vms[mid]->name, name);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			a = mid + 1;
		else
			b = mid;
	}
	*found = false;
	return a;
}

static struct acc_vm *vm_get(struct metrics *m, const char *name)
{
	struct acc_vm *vm, **arr;
	bool found;
	size_t i = vm_find(m, name, &found);

	if (found)
		return m->vms[i];
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	if (hashmap_init(&vm->culprit_idx, sizeof(struct culprit_key), sizeof(size_t), 0)) {
		free(vm);
		return NULL;
	}
	arr = realloc(m->vms, (m->nr_vms + 1) * sizeof(*arr));
	if (!arr) {
		vm_free(vm);
		return NULL;
	}
	m->vms = arr;
	memmove(&arr[i + 1], &arr[i], (m->nr_vms - i) * sizeof(*arr));
	arr[i] = vm;
	m->nr_vms++;
	return vm;
}

static struct acc_vcpu *vcpu_get(struct acc_vm *vm, __u32 index)
{
	size_t a = 0, b = vm->nr_vcpus;
	struct acc_vcpu *arr;

	while (a < b) {
		size_t mid = (a + b) / 2;

		if (vm->vcpus[mid].index == index)
			return &vm->vcpus[mid];
		if (vm->vcpus[mid].index < index)
			a = mid + 1;
		else
			b = mid;
	}
	arr = realloc(vm->vcpus, (vm->nr_vcpus + 1) * sizeof(*arr));
	if (!arr)
		return NULL;
	vm->vcpus = arr;
	memmove(&arr[a + 1], &arr[a], (vm->nr_vcpus - a) * sizeof(*arr));
	memset(&arr[a], 0, sizeof(*arr));
	arr[a].index = index;
	vm->nr_vcpus++;
	return &arr[a];
}

static struct acc_hist *hist_get(struct acc_hist **arr, size_t *n, const char *reason)
{
	struct acc_hist *a;
	size_t i;

	for (i = 0; i < *n; i++) {
		int c = strcmp((*arr)[i].reason, reason);

		if (!c)
			return &(*arr)[i];
		if (c > 0)
			break;
	}
	a = realloc(*arr, (*n + 1) * sizeof(*a));
	if (!a)
		return NULL;
	*arr = a;
	memmove(&a[i + 1], &a[i], (*n - i) * sizeof(*a));
	memset(&a[i], 0, sizeof(*a));
	snprintf(a[i].reason, sizeof(a[i].reason), "%s", reason);
	(*n)++;
	return &a[i];
}

static void hist_add(struct acc_hist *h, const struct latency_summary *l)
{
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++) {
		h->bucket[b] += l->bucket[b];
		h->count += l->bucket[b];
	}
	h->sum_ns += l->sum_ns;
}

static void counts_add(struct acc_counts *c, const struct vcpu_summary *v)
{
	for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
		c->ns[s] += v->ns[s];
	c->preemptions += v->preemptions;
	c->wakeups += v->wakeups;
	c->migrations += v->migrations;
	c->exits += v->kvm_exits;
	c->uexits += v->userspace_exits;
}

static int culprit_charge(struct acc_vm *vm, const struct culprit_summary *cs)
{
	struct culprit_key k;
	struct acc_culprit *arr;
	size_t *idx, i;

	memset(&k, 0, sizeof(k));
	snprintf(k.process, sizeof(k.process), "%s", cs->process);
	snprintf(k.comm, sizeof(k.comm), "%s", cs->comm);
	snprintf(k.cgroup, sizeof(k.cgroup), "%s", cs->cgroup);
	snprintf(k.vm, sizeof(k.vm), "%s", cs->vm);
	idx = hashmap_lookup(&vm->culprit_idx, &k);
	if (idx) {
		i = *idx;
	} else {
		arr = realloc(vm->culprits, (vm->nr_culprits + 1) * sizeof(*arr));
		if (!arr)
			return -ENOMEM;
		vm->culprits = arr;
		i = vm->nr_culprits;
		if (hashmap_insert(&vm->culprit_idx, &k, &i))
			return -ENOMEM;
		memset(&arr[i], 0, sizeof(arr[i]));
		arr[i].key = k;
		vm->nr_culprits++;
	}
	vm->culprits[i].total_ns += cs->ns;
	vm->culprits[i].delta += cs->ns;
	return 0;
}

/* Ranking: most time first; on a tie the one already named stays ahead. */
static int by_total(const void *a, const void *b)
{
	const struct acc_culprit *x = *(struct acc_culprit *const *)a, *y = *(struct acc_culprit *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->named != y->named)
		return x->named ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* After a window's charges: the top N are named; what the others were charged goes to "other". */
static int culprits_settle(struct acc_vm *vm, unsigned int top)
{
	struct acc_culprit **order;
	size_t i;

	if (!vm->nr_culprits)
		return 0;
	order = malloc(vm->nr_culprits * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < vm->nr_culprits; i++)
		order[i] = &vm->culprits[i];
	if (vm->nr_culprits > 1)
		qsort(order, vm->nr_culprits, sizeof(*order), by_total);
	for (i = 0; i < vm->nr_culprits; i++) {
		struct acc_culprit *c = order[i];

		c->named = i < top;
		if (c->named)
			c->named_ns += c->delta;
		else
			vm->other_ns += c->delta;
		c->delta = 0;
	}
	free(order);
	return 0;
}

int metrics_add(struct metrics *m, const struct summary *s)
{
	int err = 0;

	if (!m->started) {
		m->started = true;
		m->t0 = s->t0;
	} else if (!m->nr_adds && s->t0 < m->t0) {
		m->t0 = s->t0; /* vCPUs seeded at the attach, just before metrics_start() */
	}
	m->nr_adds++;
	m->t1 = s->t1;
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		m->lost[i] += s->lost_window[i];
	for (size_t i = 0; i < m->nr_vms; i++)
		m->vms[i]->vcpus_now = 0;
	for (size_t i = 0; i < s->nr_vms && !err; i++) {
		const struct vm_summary *vs = &s->vms[i];
		struct acc_vm *vm = vm_get(m, vs->name);
		bool alive = false;

		if (!vm)
			return -ENOMEM;
		for (size_t v = 0; v < vs->nr_vcpus; v++) {
			const struct vcpu_summary *c = &vs->vcpus[v];

			counts_add(&vm->c, c);
			if (!m->o.no_vcpu_labels) {
				struct acc_vcpu *av = vcpu_get(vm, c->index);

				if (!av)
					return -ENOMEM;
				counts_add(&av->c, c);
			}
			if (!c->gone) {
				vm->vcpus_now++;
				alive = true;
			}
		}
		if ((alive && !vs->exited) || !vm->last_alive)
			vm->last_alive = s->t1;
		for (size_t e = 0; e < vs->nr_exits; e++) {
			struct acc_hist *h = hist_get(&vm->exits, &vm->nr_exits, vs->exits[e].name);

			if (!h)
				return -ENOMEM;
			hist_add(h, &vs->exits[e]);
		}
		for (size_t e = 0; e < vs->nr_uexits; e++) {
			struct acc_hist *h = hist_get(&vm->uexits, &vm->nr_uexits, vs->uexits[e].name);

			if (!h)
				return -ENOMEM;
			hist_add(h, &vs->uexits[e]);
		}
		hist_add(&vm->runq, &vs->runq);
		for (size_t c = 0; c < vs->nr_culprits && !err; c++)
			err = culprit_charge(vm, &vs->culprits[c]);
	}
	/* after all VMs: two VMs of the same name charge the same culprits */
	for (size_t i = 0; i < m->nr_vms && !err; i++)
		err = culprits_settle(m->vms[i], m->o.top_culprits);
	return err;
}

void metrics_forget(struct metrics *m, unsigned long long now, unsigned long long forget_ns)
{
	size_t i = 0, j = 0;

	for (i = 0; i < m->nr_vms; i++) {
		struct acc_vm *vm = m->vms[i];

		if (!vm->vcpus_now && vm->last_alive + forget_ns < now) {
			vm_free(vm);
			continue;
		}
		m->vms[j++] = vm;
	}
	m->nr_vms = j;
}

/* ---- rendering: families of samples, walked once per format ---- */

enum family_type { F_COUNTER, F_GAUGE, F_HISTOGRAM, F_INFO };

struct family {
	const char *name; /* the OpenMetrics family name (no _total / _info) */
	enum family_type type;
	const char *unit; /* "seconds" or NULL */
	const char *help;
};

struct label {
	const char *name, *value;
};

/* CSV columns: the union of all label names (build_info's are left out). */
static const char *const csv_columns[] = {
	"vm", "vcpu", "state", "reason", "le", "process", "comm", "cgroup", "culprit_vm", "kind", "tracepoint",
};
#define NR_CSV_COLUMNS (sizeof(csv_columns) / sizeof(csv_columns[0]))

/* The text being rendered: a growing buffer (a scrape of 1,000 vCPUs is ~2 MB). */
struct out {
	char *p;
	size_t len, cap;
	bool oom;
};

static bool out_reserve(struct out *o, size_t n)
{
	char *p;
	size_t cap;

	if (o->len + n < o->cap)
		return true;
	if (o->oom)
		return false;
	cap = o->cap ? o->cap * 2 : 65536;
	while (cap <= o->len + n)
		cap *= 2;
	p = realloc(o->p, cap);
	if (!p) {
		o->oom = true;
		return false;
	}
	o->p = p;
	o->cap = cap;
	return true;
}

static void out_mem(struct out *o, const void *s, size_t n)
{
	if (!out_reserve(o, n))
		return;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static void out_chr(struct out *o, char c)
{
	out_mem(o, &c, 1);
}

struct sink {
	enum metrics_format f;
	struct out *out;
	const struct family *fam;
	bool fam_started;
	char le[METRICS_NR_LE][32]; /* the edges as text, once per rendering */
};

static const char *const type_names[] = {
	[F_COUNTER] = "counter", [F_GAUGE] = "gauge", [F_HISTOGRAM] = "histogram", [F_INFO] = "info"};

static const char *sample_suffix(enum family_type t)
{
	return t == F_COUNTER ? "_total" : t == F_INFO ? "_info" : "";
}

/* Label values and HELP text: valid UTF-8, escaped for the text formats. */
static void put_escaped(struct out *out, const char *s, bool quotes)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t plain = 0;

	/* the usual case: printable ASCII with nothing to escape */
	while (p[plain] >= 0x20 && p[plain] < 0x7f && p[plain] != '\\' && p[plain] != '"')
		plain++;
	if (!p[plain]) {
		out_mem(out, s, plain);
		return;
	}
	while (*p) {
		unsigned int len = *p < 0x80		 ? 1
				   : (*p & 0xe0) == 0xc0 ? 2
				   : (*p & 0xf0) == 0xe0 ? 3
				   : (*p & 0xf8) == 0xf0 ? 4
							 : 0;
		bool ok = len > 0;

		for (unsigned int i = 1; ok && i < len; i++)
			ok = (p[i] & 0xc0) == 0x80;
		if (!ok) { /* not UTF-8: a replacement character */
			out_chr(out, '?');
			p++;
			continue;
		}
		if (*p == '\\')
			out_str(out, "\\\\");
		else if (*p == '\n')
			out_str(out, "\\n");
		else if (*p == '"' && quotes)
			out_str(out, "\\\"");
		else if (*p < 0x20 || *p == 0x7f)
			out_chr(out, '?');
		else
			out_mem(out, p, len);
		p += len;
	}
}

static void put_csv_field(struct out *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		out_str(out, s);
		return;
	}
	out_chr(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			out_chr(out, '"');
		out_chr(out, *s);
	}
	out_chr(out, '"');
}

static void family_begin(struct sink *k, const struct family *f)
{
	k->fam = f;
	k->fam_started = false;
}

static void family_header(struct sink *k)
{
	const struct family *f = k->fam;
	struct out *out = k->out;

	k->fam_started = true;
	if (k->f == METRICS_PROMETHEUS) {
		out_str(out, "# HELP ");
		out_str(out, f->name);
		out_str(out, sample_suffix(f->type));
		out_chr(out, ' ');
		put_escaped(out, f->help, false);
		out_str(out, "\n# TYPE ");
		out_str(out, f->name);
		out_str(out, sample_suffix(f->type));
		out_chr(out, ' ');
		out_str(out, f->type == F_INFO ? "gauge" : type_names[f->type]);
		out_chr(out, '\n');
	} else if (k->f == METRICS_OPENMETRICS) {
		out_str(out, "# TYPE ");
		out_str(out, f->name);
		out_chr(out, ' ');
		out_str(out, type_names[f->type]);
		out_chr(out, '\n');
		if (f->unit) {
			out_str(out, "# UNIT ");
			out_str(out, f->name);
			out_chr(out, ' ');
			out_str(out, f->unit);
			out_chr(out, '\n');
		}
		out_str(out, "# HELP ");
		out_str(out, f->name);
		out_chr(out, ' ');
		put_escaped(out, f->help, false);
		out_chr(out, '\n');
	}
}

static void emit(struct sink *k, const char *suffix, const struct label *l, size_t n, const char *value)
{
	struct out *out = k->out;
	bool first = true;

	if (!k->fam_started)
		family_header(k);
	if (k->f == METRICS_CSV) {
		if (k->fam->type == F_INFO)
			return;
		out_str(out, k->fam->name);
		out_str(out, suffix);
		for (size_t c = 0; c < NR_CSV_COLUMNS; c++) {
			const char *v = "";

			for (size_t i = 0; i < n; i++)
				if (l[i].value && !strcmp(l[i].name, csv_columns[c]))
					v = l[i].value;
			out_chr(out, ',');
			put_csv_field(out, v);
		}
		out_chr(out, ',');
		out_str(out, value);
		out_chr(out, '\n');
		return;
	}
	out_str(out, k->fam->name);
	out_str(out, suffix);
	for (size_t i = 0; i < n; i++) {
		if (!l[i].value || !l[i].value[0])
			continue; /* an empty label is no label */
		out_chr(out, first ? '{' : ',');
		out_str(out, l[i].name);
		out_str(out, "=\"");
		put_escaped(out, l[i].value, true);
		out_chr(out, '"');
		first = false;
	}
	if (!first)
		out_chr(out, '}');
	out_chr(out, ' ');
	out_str(out, value);
	out_chr(out, '\n');
}

/* v in decimal at the end of buf[0..len); returns where it starts. */
static char *u64_dec(char *buf, size_t len, __u64 v)
{
	char *p = buf + len - 1;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return p;
}

static const char *fmt_u64(char *buf, size_t len, __u64 v)
{
	return u64_dec(buf, len, v);
}

/* ns as seconds with 9 decimals, exactly. */
static const char *fmt_seconds(char *buf, size_t len, __u64 ns)
{
	char frac[16], *f = u64_dec(frac, sizeof(frac), ns % 1000000000ull), *i;
	size_t nf = strlen(f);

	i = u64_dec(buf, len - 10, ns / 1000000000ull);
	i[strlen(i)] = '.';
	/* zero-pad the fraction to 9 digits */
	memset(buf + len - 10, '0', 9 - nf);
	memcpy(buf + len - 10 + 9 - nf, f, nf);
	buf[len - 1] = '\0';
	return i;
}

static const char *fmt_double(char *buf, size_t len, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

static double le_seconds(unsigned int i)
{
	return (double)metrics_le_ns[i] / 1e9;
}

static const struct family fam_seconds = {
	"vcpustat_vcpu_seconds", F_COUNTER, "seconds",
	"vCPU-seconds spent in each state (guest, host, preempted, wait, idle, blocked, unknown)"};
static const struct family fam_preempt = {"vcpustat_vcpu_preemptions", F_COUNTER, NULL,
					  "Times a vCPU was switched out while runnable (involuntary)"};
static const struct family fam_wakeups = {"vcpustat_vcpu_wakeups", F_COUNTER, NULL,
					  "Wakeups of a vCPU out of idle or blocked"};
static const struct family fam_migr = {"vcpustat_vcpu_migrations", F_COUNTER, NULL, "Moves of a vCPU to another CPU"};
static const struct family fam_vexits = {"vcpustat_vcpu_exits", F_COUNTER, NULL,
					 "VM exits (kvm_exit events) of a vCPU"};
static const struct family fam_vuexits = {"vcpustat_vcpu_userspace_exits", F_COUNTER, NULL,
					  "Exits of a vCPU to the VMM's user space (kvm_userspace_exit events)"};
static const struct family fam_exit_lat = {"vcpustat_exit_duration_seconds", F_HISTOGRAM, "seconds",
					   "VM exit handling latency, kvm_exit to the next kvm_entry, by exit reason"};
static const struct family fam_uexit_lat = {
	"vcpustat_userspace_exit_duration_seconds", F_HISTOGRAM, "seconds",
	"Userspace exit handling latency, kvm_userspace_exit to the next KVM_RUN, by KVM_EXIT reason"};
static const struct family fam_runq = {"vcpustat_runqueue_wait_duration_seconds", F_HISTOGRAM, "seconds",
				       "Run-queue waits of vCPUs: from preempted or woken to on a CPU again"};
static const struct family fam_culprit = {
	"vcpustat_culprit_seconds", F_COUNTER, "seconds",
	"vCPU-seconds the VM's vCPUs waited for a CPU while this thread ran on it (top N per VM, the rest as other)"};
static const struct family fam_vcpus = {"vcpustat_vcpus", F_GAUGE, NULL, "vCPUs of the VM tracked now"};
static const struct family fam_lost = {"vcpustat_lost_records", F_COUNTER, NULL,
				       "Records the kernel side could not keep, by kind (docs/json.md)"};
static const struct family fam_tp = {"vcpustat_tracepoint_attached", F_GAUGE, NULL,
				     "1 if vcpustat's program on this tracepoint is attached, else 0"};
static const struct family fam_start = {"vcpustat_start_time_seconds", F_GAUGE, "seconds",
					"Unix time the counters count from"};
static const struct family fam_window = {"vcpustat_window_seconds", F_GAUGE, "seconds", "Seconds the counters cover"};
static const struct family fam_build = {"vcpustat_build", F_INFO, NULL, "vcpustat's version and the kernel's"};

typedef __u64 (*count_fn)(const struct acc_counts *c);

static __u64 get_preempt(const struct acc_counts *c)
{
	return c->preemptions;
}

static __u64 get_wakeups(const struct acc_counts *c)
{
	return c->wakeups;
}

static __u64 get_migr(const struct acc_counts *c)
{
	return c->migrations;
}

static __u64 get_exits(const struct acc_counts *c)
{
	return c->exits;
}

static __u64 get_uexits(const struct acc_counts *c)
{
	return c->uexits;
}

static void walk_counter(struct sink *k, const struct metrics *m, const struct family *f, count_fn get)
{
	char idx[16], val[32];

	family_begin(k, f);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];

		if (m->o.no_vcpu_labels) {
			struct label l[] = {{"vm", vm->name}};

			emit(k, "_total", l, 1, fmt_u64(val, sizeof(val), get(&vm->c)));
			continue;
		}
		for (size_t v = 0; v < vm->nr_vcpus; v++) {
			struct label l[] = {{"vm", vm->name}, {"vcpu", idx}};

			snprintf(idx, sizeof(idx), "%u", vm->vcpus[v].index);
			emit(k, "_total", l, 2, fmt_u64(val, sizeof(val), get(&vm->vcpus[v].c)));
		}
	}
}

static void walk_seconds(struct sink *k, const struct metrics *m)
{
	char idx[16], val[32];

	family_begin(k, &fam_seconds);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		size_t n = m->o.no_vcpu_labels ? 1 : vm->nr_vcpus;

		for (size_t v = 0; v < n; v++) {
			const struct acc_counts *c = m->o.no_vcpu_labels ? &vm->c : &vm->vcpus[v].c;

			if (!m->o.no_vcpu_labels)
				snprintf(idx, sizeof(idx), "%u", vm->vcpus[v].index);
			for (unsigned int s = 0; s < VCPU_NR_STATES; s++) {
				struct label l[] = {{"vm", vm->name},
						    {"vcpu", m->o.no_vcpu_labels ? NULL : idx},
						    {"state", vcpu_state_name(s)}};

				emit(k, "_total", l, 3, fmt_seconds(val, sizeof(val), c->ns[s]));
			}
		}
	}
}

static void emit_hist(struct sink *k, const struct acc_hist *h, const char *vm, const char *reason)
{
	char val[32];
	struct label l[] = { { "vm", vm }, { "reason", reason }, { "le", NULL } };
	__u64 cum = 0;
	unsigned int b = 0;

	for (unsigned int i = 0; i < METRICS_NR_LE; i++) {
		unsigned int end = lat_hist_bucket(metrics_le_ns[i]);

		for (; b < end; b++)
			cum += h->bucket[b];
		l[2].value = k->le[i];
		emit(k, "_bucket", l, 3, fmt_u64(val, sizeof(val), cum));
	}
	l[2].value = "+Inf";
	emit(k, "_bucket", l, 3, fmt_u64(val, sizeof(val), h->count));
	emit(k, "_sum", l, 2, fmt_seconds(val, sizeof(val), h->sum_ns));
	emit(k, "_count", l, 2, fmt_u64(val, sizeof(val), h->count));
}

static void walk_hists(struct sink *k, const struct metrics *m)
{
	family_begin(k, &fam_exit_lat);
	for (size_t i = 0; i < m->nr_vms; i++)
		for (size_t e = 0; e < m->vms[i]->nr_exits; e++)
			emit_hist(k, &m->vms[i]->exits[e], m->vms[i]->name, m->vms[i]->exits[e].reason);
	family_begin(k, &fam_uexit_lat);
	for (size_t i = 0; i < m->nr_vms; i++)
		for (size_t e = 0; e < m->vms[i]->nr_uexits; e++)
			emit_hist(k, &m->vms[i]->uexits[e], m->vms[i]->name, m->vms[i]->uexits[e].reason);
	family_begin(k, &fam_runq);
	for (size_t i = 0; i < m->nr_vms; i++)
		emit_hist(k, &m->vms[i]->runq, m->vms[i]->name, NULL);
}

static int by_named_ns(const void *a, const void *b)
{
	const struct acc_culprit *x = *(struct acc_culprit *const *)a, *y = *(struct acc_culprit *const *)b;

	if (x->named_ns != y->named_ns)
		return x->named_ns > y->named_ns ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* The named culprits of vm, most time first (malloc'ed; NULL if none). */
static struct acc_culprit **named_culprits(const struct acc_vm *vm, size_t *n)
{
	struct acc_culprit **arr;

	*n = 0;
	arr = malloc((vm->nr_culprits ? vm->nr_culprits : 1) * sizeof(*arr));
	if (!arr)
		return NULL;
	for (size_t c = 0; c < vm->nr_culprits; c++)
		if (vm->culprits[c].named)
			arr[(*n)++] = &vm->culprits[c];
	if (*n > 1)
		qsort(arr, *n, sizeof(*arr), by_named_ns);
	return arr;
}

/* "other" is published once a VM has more culprits than named ones. */
static bool has_other(const struct metrics *m, const struct acc_vm *vm)
{
	return vm->nr_culprits > m->o.top_culprits;
}

static void walk_culprits(struct sink *k, const struct metrics *m)
{
	char val[32];

	family_begin(k, &fam_culprit);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		struct acc_culprit **named;
		size_t n;

		named = named_culprits(vm, &n);
		for (size_t c = 0; named && c < n; c++) {
			const struct culprit_key *ck = &named[c]->key;
			struct label l[] = {{"vm", vm->name},
					    {"process", ck->process},
					    {"comm", ck->comm},
					    {"cgroup", ck->cgroup},
					    {"culprit_vm", ck->vm}};

			emit(k, "_total", l, 5, fmt_seconds(val, sizeof(val), named[c]->named_ns));
		}
		free(named);
		if (has_other(m, vm)) {
			struct label l[] = {{"vm", vm->name}, {"process", "other"}, {"comm", "other"}};

			emit(k, "_total", l, 3, fmt_seconds(val, sizeof(val), vm->other_ns));
		}
	}
}

static double window_seconds(const struct metrics *m)
{
	return m->started && m->t1 > m->t0 ? (double)(m->t1 - m->t0) / 1e9 : 0;
}

static double start_time(const struct metrics *m)
{
	return (double)((long long)m->t0 + m->real_offset) / 1e9;
}

static void walk(struct sink *k, const struct metrics *m)
{
	char val[64];

	walk_seconds(k, m);
	walk_counter(k, m, &fam_preempt, get_preempt);
	walk_counter(k, m, &fam_wakeups, get_wakeups);
	walk_counter(k, m, &fam_migr, get_migr);
	walk_counter(k, m, &fam_vexits, get_exits);
	walk_counter(k, m, &fam_vuexits, get_uexits);
	walk_hists(k, m);
	walk_culprits(k, m);
	family_begin(k, &fam_vcpus);
	for (size_t i = 0; i < m->nr_vms; i++) {
		struct label l[] = {{"vm", m->vms[i]->name}};

		emit(k, "", l, 1, fmt_u64(val, sizeof(val), m->vms[i]->vcpus_now));
	}
	family_begin(k, &fam_lost);
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++) {
		struct label l[] = {{"kind", lost_kinds[i]}};

		emit(k, "_total", l, 1, fmt_u64(val, sizeof(val), m->lost[i]));
	}
	family_begin(k, &fam_tp);
	for (size_t i = 0; i < m->nr_progs; i++) {
		struct label l[] = {{"tracepoint", m->progs[i].tracepoint}};

		emit(k, "", l, 1, m->progs[i].attached ? "1" : "0");
	}
	if (m->started && !m->no_clock) {
		family_begin(k, &fam_start);
		snprintf(val, sizeof(val), "%.3f", start_time(m));
		emit(k, "", NULL, 0, val);
	}
	if (m->started) {
		family_begin(k, &fam_window);
		emit(k, "", NULL, 0, fmt_double(val, sizeof(val), window_seconds(m)));
	}
	family_begin(k, &fam_build);
	{
		struct label l[] = {{"version", VCPUSTAT_VERSION}, {"kernel", m->kernel}};

		emit(k, "_info", l, 2, "1");
	}
}

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
		json_array_append_new(buckets, json_pack("{s:f, s:I}", "le", le_seconds(i), "count", (json_int_t)cum));
	}
	json_array_append_new(buckets, json_pack("{s:s, s:I}", "le", "+Inf", "count", (json_int_t)h->count));
	json_object_set_new(o, "buckets", buckets);
	return o;
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
		json_object_set_new(doc, "start_time", m->no_clock ? json_null() : json_real(start_time(m)));
		json_object_set_new(doc, "window_seconds", json_real(window_seconds(m)));
	}
	json_object_set_new(doc, "vcpu_labels", json_boolean(!m->o.no_vcpu_labels));
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		json_t *o = json_pack("{s:s, s:I}", "vm", vm->name, "vcpus_now", (json_int_t)vm->vcpus_now);
		json_t *exits = json_array(), *uexits = json_array(), *cul = json_array();
		struct acc_culprit **named;
		size_t n;

		counts_json(o, &vm->c);
		if (!m->o.no_vcpu_labels) {
			json_t *vcpus = json_array();

			for (size_t v = 0; v < vm->nr_vcpus; v++) {
				json_t *vo = json_pack("{s:I}", "vcpu", (json_int_t)vm->vcpus[v].index);

				counts_json(vo, &vm->vcpus[v].c);
				json_array_append_new(vcpus, vo);
			}
			json_object_set_new(o, "vcpus", vcpus);
		}
		for (size_t e = 0; e < vm->nr_exits; e++)
			json_array_append_new(exits, hist_json(&vm->exits[e], true));
		for (size_t e = 0; e < vm->nr_uexits; e++)
			json_array_append_new(uexits, hist_json(&vm->uexits[e], true));
		json_object_set_new(o, "exits", exits);
		json_object_set_new(o, "userspace_exits", uexits);
		json_object_set_new(o, "runqueue_wait", hist_json(&vm->runq, false));
		named = named_culprits(vm, &n);
		for (size_t c = 0; named && c < n; c++) {
			const struct culprit_key *ck = &named[c]->key;

			json_array_append_new(
			    cul, culprit_json(ck->process, ck->comm, ck->cgroup, ck->vm, named[c]->named_ns));
		}
		free(named);
		if (has_other(m, vm))
			json_array_append_new(cul, culprit_json("other", "other", "", "", vm->other_ns));
		json_object_set_new(o, "culprits", cul);
		json_array_append_new(vms, o);
	}
	json_object_set_new(doc, "vms", vms);
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		json_object_set_new(lost, lost_kinds[i], json_integer((json_int_t)m->lost[i]));
	json_object_set_new(doc, "lost", lost);
	if (m->nr_progs) {
		json_t *tp = json_object();

		for (size_t i = 0; i < m->nr_progs; i++)
			json_object_set_new(tp, m->progs[i].tracepoint, json_integer(m->progs[i].attached));
		json_object_set_new(doc, "tracepoints", tp);
	}
	return doc;
}

/* ---- entry points ---- */

int metrics_render(const struct metrics *m, enum metrics_format f, char **buf, size_t *len)
{
	struct out out = { 0 };
	struct sink *k;

	*buf = NULL;
	*len = 0;
	if (f == METRICS_JSON) {
		json_t *doc = metrics_json(m);
		char *s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));

		json_decref(doc);
		if (!s)
			return -ENOMEM;
		out_str(&out, s);
		out_chr(&out, '\n');
		free(s);
	} else {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		k->f = f;
		k->out = &out;
		for (unsigned int i = 0; i < METRICS_NR_LE; i++)
			fmt_double(k->le[i], sizeof(k->le[i]), le_seconds(i));
		if (f == METRICS_CSV) {
			out_str(&out, "metric");
			for (size_t c = 0; c < NR_CSV_COLUMNS; c++) {
				out_chr(&out, ',');
				out_str(&out, csv_columns[c]);
			}
			out_str(&out, ",value\n");
		}
		walk(k, m);
		if (f == METRICS_OPENMETRICS)
			out_str(&out, "# EOF\n");
		free(k);
	}
	if (out.oom || !out.p) {
		free(out.p);
		return -ENOMEM;
	}
	*buf = out.p;
	*len = out.len;
	return 0;
}

int metrics_format_parse(const char *name, enum metrics_format *f)
{
	static const char *const names[] = {"prometheus", "openmetrics", "json", "csv"};

	for (unsigned int i = 0; i < 4; i++)
		if (!strcmp(name, names[i])) {
			*f = (enum metrics_format)i;
			return 0;
		}
	return -EINVAL;
}

const char *metrics_content_type(enum metrics_format f)
{
	switch (f) {
	case METRICS_OPENMETRICS:
		return "application/openmetrics-text; version=1.0.0; charset=utf-8";
	case METRICS_JSON:
		return "application/json";
	case METRICS_CSV:
		return "text/csv; charset=utf-8";
	default:
		return "text/plain; version=0.0.4; charset=utf-8";
	}
}

/* ---- live ---- */

int metrics_live_init(struct metrics_live *l, struct vcpustat *vs, const struct metrics_opts *o,
		      const struct summary_filter *filter)
{
	const struct vcpustat_prog *progs;
	struct timespec rt;
	size_t n;

	memset(l, 0, sizeof(*l));
	l->vs = vs;
	l->filter = filter;
	if (names_init(&l->names, NULL, NULL))
		return -ENOMEM;
	l->m = metrics_new(o);
	if (!l->m) {
		names_free(&l->names);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	metrics_set_clock(l->m, (long long)((__u64)rt.tv_sec * 1000000000ull + (__u64)rt.tv_nsec) -
				    (long long)vcpustat_now_ns());
	n = vcpustat_progs(vs, &progs);
	metrics_set_programs(l->m, progs, n);
	/* vCPUs of running VMs were seeded at the attach, just before: the counters start now */
	metrics_start(l->m, vcpustat_now_ns());
	return 0;
}

int metrics_live_sample(struct metrics_live *l)
{
	struct vcpustat_snapshot cur;
	struct summary s;
	int err;

	err = vcpustat_snapshot(l->vs, &cur);
	if (err)
		return err;
	names_refresh(&l->names);
	err = summary_build(&s, l->have_prev ? &l->prev : NULL, &cur, &l->names, l->filter);
	if (err) {
		vcpustat_snapshot_free(&cur);
		return err;
	}
	err = metrics_add(l->m, &s);
	summary_free(&s);
	/* VMs that exited: their last window is counted, the kernel may forget them */
	for (size_t i = 0; i < cur.nr_vms; i++)
		if (cur.vms[i].exited_ns)
			vcpustat_reap_vm(l->vs, cur.vms[i].tgid);
	/* culprits that exited: folded into one entry per VM, the table stays bounded */
	vcpustat_prune(l->vs, NULL);
	metrics_forget(l->m, cur.ts, METRICS_FORGET_NS);
	if (l->have_prev)
		vcpustat_snapshot_free(&l->prev);
	l->prev = cur;
	l->have_prev = true;
	l->last_sample = cur.ts;
	return err;
}

void metrics_live_free(struct metrics_live *l)
{
	if (l->have_prev)
		vcpustat_snapshot_free(&l->prev);
	metrics_free(l->m);
	names_free(&l->names);
	memset(l, 0, sizeof(*l));
}
