// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics_text.c - the exporters' model as Prometheus text 0.0.4, OpenMetrics
 * 1.0 or CSV: one walk over the families of samples, three syntaxes
 * (docs/metrics.md); and metrics_render(), the entry point for all four formats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonw.h"
#include "util/util.h"
#include "export/export.h"
#include "export/metrics_internal.h"

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
	"target", "access", "msr", "result", "node", "llc", "across", "beside", "vector", "cr3",
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


static const struct family fam_seconds = {
	"vcpustat_vcpu_seconds", F_COUNTER, "seconds",
	"vCPU-seconds spent in each state (guest, host, poll, preempted, wait, idle, blocked, unknown)"};
/*
 * Fleet conventions (docs/metrics.md "Names other exporters use"): the run-queue
 * time of a vCPU, preempted + wait, under the names KubeVirt's and the libvirt
 * exporters' dashboards query. Both of libvirt's fields are that time (delay:
 * sched_info's run_delay, what KVM reports to the guest as steal; wait:
 * schedstats' wait_sum), so both carry the same number.
 */
static const struct family fam_delay = {
	"vcpustat_vcpu_delay_seconds", F_COUNTER, "seconds",
	"vCPU-seconds runnable without a CPU (states preempted + wait): the guest's steal time; libvirt vcpu.N.delay"};
static const struct family fam_wait = {
	"vcpustat_vcpu_wait_seconds", F_COUNTER, "seconds",
	"vCPU-seconds runnable without a CPU (states preempted + wait), as libvirt's vcpu.N.wait counts them"};
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
static const struct family fam_wake_lat = {
	"vcpustat_wakeup_to_guest_duration_seconds", F_HISTOGRAM, "seconds",
	"Wake-ups of sleeping vCPUs by reason (timer, ipi, device, other): from the wake-up to the next entry into the guest"};
static const struct family fam_wake_vec = {
	"vcpustat_wakeup_vector_to_guest_duration_seconds", F_HISTOGRAM, "seconds",
	"The same wake-ups by the interrupt vector KVM injected at that entry (0x40; none: none seen, as with posted "
	"interrupts)"};
static const struct family fam_runq = {"vcpustat_runqueue_wait_duration_seconds", F_HISTOGRAM, "seconds",
				       "Run-queue waits of vCPUs: from preempted or woken to on a CPU again"};
static const struct family fam_culprit = {
	"vcpustat_culprit_seconds", F_COUNTER, "seconds",
	"vCPU-seconds the VM's vCPUs waited for a CPU while this thread ran on it (top N per VM, the rest as other)"};
static const struct family fam_detail = {
	"vcpustat_exit_detail", F_COUNTER, NULL,
	"Exits by what they accessed: I/O port, MMIO address, MSR, faulting page (top N per VM and kind, the rest as other)"};
static const struct family fam_detail_s = {
	"vcpustat_exit_detail_seconds", F_COUNTER, "seconds",
	"Handling time, kvm_exit to kvm_entry, of the exits counted in vcpustat_exit_detail_total"};
static const struct family fam_as = {
	"vcpustat_guest_address_space_exits", F_COUNTER, NULL,
	"Exits by the guest's CR3 at the exit (--address-spaces; top N per VM by exits, the rest as other; unknown: "
	"KVM held no valid copy)"};
static const struct family fam_as_s = {
	"vcpustat_guest_address_space_seconds", F_COUNTER, "seconds",
	"Guest time before the exits counted in vcpustat_guest_address_space_exits_total, by the same CR3"};
static const struct family fam_gsys = {
	"vcpustat_exit_guest_kernel", F_COUNTER, NULL,
	"VM exits that left guest kernel mode (a 64-bit guest RIP in the upper half), by exit reason; "
	"divided by vcpustat_exit_duration_seconds_count: perf-prof's %gsys"};
static const struct family fam_polls = {
	"vcpustat_halt_polls", F_COUNTER, NULL,
	"Halt polls of the VM's vCPUs that ended, by result: ok (the wake-up came while KVM polled), "
	"failed (the vCPU went to sleep)"};
static const struct family fam_poll_fail = {
	"vcpustat_halt_poll_failed_seconds", F_COUNTER, "seconds",
	"CPU-seconds the VM's vCPUs spent in halt polls that failed (state poll, then asleep all the same)"};
static const struct family fam_l2 = {
	"vcpustat_nested_l2_guest_seconds", F_COUNTER, "seconds",
	"Of the VM's guest vCPU-seconds, those its vCPUs ran an L1 hypervisor's guest (L2: nested virtualization); "
	"VMs that never did have no series"};
static const struct family fam_vmm_run = {
	"vcpustat_vmm_thread_cpu_seconds", F_COUNTER, "seconds",
	"CPU-seconds of the VM's VMM threads that are no vCPU, by kind: emulator (the VMM process's other threads: "
	"main loop, I/O threads), vhost (its vhost-<pid> workers)"};
static const struct family fam_vmm_wait = {
	"vcpustat_vmm_thread_wait_seconds", F_COUNTER, "seconds",
	"Seconds the VM's VMM threads that are no vCPU spent runnable, waiting for a CPU (emulator and vhost steal), "
	"by kind"};
static const struct family fam_place_node = {
	"vcpustat_placement_node_seconds", F_COUNTER, "seconds",
	"vCPU-seconds the VM's vCPUs ran on the CPUs of each NUMA node (live, with the host's topology)"};
static const struct family fam_place_llc = {
	"vcpustat_placement_llc_seconds", F_COUNTER, "seconds",
	"vCPU-seconds the VM's vCPUs ran under each last-level cache (numbered in order of their first CPU)"};
static const struct family fam_place_moves = {
	"vcpustat_placement_migrations", F_COUNTER, NULL,
	"Migrations of the VM's vCPUs to a CPU of another NUMA node (across=\"node\") or another last-level cache "
	"(across=\"llc\")"};
static const struct family fam_place_numa = {
	"vcpustat_placement_numa_balancing_moves", F_COUNTER, NULL,
	"Moves of the VM's vCPUs that the kernel's NUMA balancing made (sched_move_numa, sched_swap_numa)"};
static const struct family fam_place_smt = {
	"vcpustat_placement_smt_seconds", F_COUNTER, "seconds",
	"vCPU-seconds the VM's vCPUs ran while the other hardware thread of their core ran a vCPU of another VM "
	"(beside=\"other_vm\": the noisy-neighbour share) or of the same VM (beside=\"same_vm\")"};
static const struct family fam_halt_poll = {
	"vcpustat_vcpu_halt_poll_seconds", F_GAUGE, "seconds",
	"The vCPU's halt_poll_ns (how long KVM polls at its next halt) as last seen; 0: polling off or never seen"};
static const struct family fam_vcpus = {"vcpustat_vcpus", F_GAUGE, NULL, "vCPUs of the VM tracked now"};
static const struct family fam_lost = {"vcpustat_lost_records", F_COUNTER, NULL,
				       "Records the kernel side could not keep, by kind (docs/json.md)"};
static const struct family fam_tp = {"vcpustat_tracepoint_attached", F_GAUGE, NULL,
				     "1 if vcpustat's program on this tracepoint is attached, else 0"};
static const struct family fam_health = {
	"vcpustat_health_ok", F_GAUGE, NULL,
	"1 while vcpustat sees every VM that KVM runs and counts their exits; 0 when it is blind to some "
	"(vcpustat_blind_vms says how), alert on it as on up (live only)"};
static const struct family fam_blind = {
	"vcpustat_blind_vms", F_GAUGE, NULL,
	"VMs that KVM runs and vcpustat is blind to, by problem: vm_unseen (none of its vCPUs seen), exits_unseen "
	"(it exits, kvm_exit fired for none of them); no_exit_program: 1 if kvm_entry/kvm_exit is not attached while "
	"KVM runs VMs"};
static const struct family fam_kvm_vms = {"vcpustat_kvm_vms", F_GAUGE, NULL,
					  "VMs that KVM itself says it runs (its debugfs folder, or /proc)"};
static const struct family fam_start = {"vcpustat_start_time_seconds", F_GAUGE, "seconds",
					"Unix time the counters count from"};
static const struct family fam_window = {"vcpustat_window_seconds", F_GAUGE, "seconds", "Seconds the counters cover"};
static const struct family fam_samples = {"vcpustat_map_reads", F_COUNTER, NULL,
					  "Reads of the BPF maps the counters were built from (live only)"};
static const struct family fam_vm_info = {
	"vcpustat_vm", F_INFO, NULL,
	"The VM's VMM cgroup and, where known, its Kubernetes pod and container; always 1, for joins on vm"};
static const struct family fam_build = {"vcpustat_build", F_INFO, NULL, "vcpustat's version and the kernel's"};

typedef __u64 (*count_fn)(const struct acc_counts *c);

/* Time on a run queue without a CPU: switched out while runnable, or woken and not yet on a CPU. */
static __u64 get_runq_ns(const struct acc_counts *c)
{
	return c->ns[VCPU_PREEMPTED] + c->ns[VCPU_WAIT];
}

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

/* One sample per vCPU (per VM with --no-vcpu-labels); ns: get() is nanoseconds, printed as seconds. */
static void walk_counter(struct sink *k, const struct metrics *m, const struct family *f, count_fn get, bool ns)
{
	char idx[16], val[32];

	family_begin(k, f);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];

		if (m->o.no_vcpu_labels) {
			struct label l[] = {{"vm", vm->name}};

			emit(k, "_total", l, 1,
			     ns ? fmt_seconds(val, sizeof(val), get(&vm->c)) : fmt_u64(val, sizeof(val), get(&vm->c)));
			continue;
		}
		for (size_t v = 0; v < vm->nr_vcpus; v++) {
			struct label l[] = {{"vm", vm->name}, {"vcpu", idx}};

			snprintf(idx, sizeof(idx), "%u", vm->vcpus[v].index);
			emit(k, "_total", l, 2,
			     ns ? fmt_seconds(val, sizeof(val), get(&vm->vcpus[v].c))
				: fmt_u64(val, sizeof(val), get(&vm->vcpus[v].c)));
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

/* One histogram's samples: labelled vm, and key=value unless value is NULL. */
static void emit_hist(struct sink *k, const struct acc_hist *h, const char *vm, const char *key, const char *value)
{
	char val[32];
	struct label l[] = { { "vm", vm }, { key, value }, { "le", NULL } };
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
			emit_hist(k, &m->vms[i]->exits[e], m->vms[i]->name, "reason", m->vms[i]->exits[e].reason);
	family_begin(k, &fam_uexit_lat);
	for (size_t i = 0; i < m->nr_vms; i++)
		for (size_t e = 0; e < m->vms[i]->nr_uexits; e++)
			emit_hist(k, &m->vms[i]->uexits[e], m->vms[i]->name, "reason", m->vms[i]->uexits[e].reason);
	family_begin(k, &fam_runq);
	for (size_t i = 0; i < m->nr_vms; i++)
		emit_hist(k, &m->vms[i]->runq, m->vms[i]->name, "reason", NULL);
	family_begin(k, &fam_wake_lat);
	for (size_t i = 0; i < m->nr_vms; i++)
		for (size_t w = 0; w < m->vms[i]->nr_wakes; w++)
			emit_hist(k, &m->vms[i]->wakes[w], m->vms[i]->name, "reason", m->vms[i]->wakes[w].reason);
	family_begin(k, &fam_wake_vec);
	for (size_t i = 0; i < m->nr_vms; i++)
		for (size_t w = 0; w < m->vms[i]->nr_wake_vectors; w++)
			emit_hist(k, &m->vms[i]->wake_vectors[w], m->vms[i]->name, "vector",
				  m->vms[i]->wake_vectors[w].reason);
	if (!m->gsys_known)
		return; /* recordings do not keep the guest's mode */
	family_begin(k, &fam_gsys);
	for (size_t i = 0; i < m->nr_vms; i++)
		for (size_t e = 0; e < m->vms[i]->nr_exits; e++) {
			struct label l[] = { { "vm", m->vms[i]->name }, { "reason", m->vms[i]->exits[e].reason } };
			char val[32];

			emit(k, "_total", l, 2, fmt_u64(val, sizeof(val), m->vms[i]->exits[e].gsys));
		}
}


static void walk_culprits(struct sink *k, const struct metrics *m)
{
	char val[32];

	family_begin(k, &fam_culprit);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		struct acc_culprit **named;
		size_t n;

		named = metrics_named_culprits(vm, &n);
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
		if (metrics_has_other(m, vm)) {
			struct label l[] = {{"vm", vm->name}, {"process", "other"}, {"comm", "other"}};

			emit(k, "_total", l, 3, fmt_seconds(val, sizeof(val), vm->other_ns));
		}
	}
}


/*
 * The rows of metrics_detail_rows() as two families of counters (count, then
 * seconds): the exit details, by kind, target, access (and MSR name), or,
 * with cr3, the guest address spaces (rows of kind cr3), by CR3.
 */
static void walk_detail_rows(struct sink *k, const struct metrics *m, bool cr3)
{
	for (int pass = 0; pass < 2; pass++) {
		family_begin(k, cr3 ? (pass ? &fam_as_s : &fam_as) : (pass ? &fam_detail_s : &fam_detail));
		for (size_t i = 0; i < m->nr_vms; i++) {
			const struct acc_vm *vm = m->vms[i];
			struct detail_row *rows;
			size_t n;

			rows = metrics_detail_rows(vm, &n);
			for (size_t r = 0; rows && r < n; r++) {
				char target[32], val[32];
				struct label l[5] = { { "vm", vm->name } };
				size_t nl = 1;

				if ((rows[r].kind == VCPUSTAT_DETAIL_CR3) != cr3)
					continue;
				if (cr3) {
					l[nl++] = (struct label){ "cr3", cr3_target(rows[r].addr, target, sizeof(target)) };
				} else {
					l[nl++] = (struct label){ "kind", detail_kind_name(rows[r].kind) };
					l[nl++] = (struct label){ "target", detail_target_of(rows[r].kind, rows[r].addr, target, sizeof(target)) };
					l[nl++] = (struct label){ "access", detail_access_name(rows[r].access) };
					l[nl++] = (struct label){ "msr", detail_msr_name(rows[r].kind, rows[r].addr) };
				}
				emit(k, "_total", l, nl,
				     pass ? fmt_seconds(val, sizeof(val), rows[r].ns) : fmt_u64(val, sizeof(val), rows[r].count));
			}
			free(rows);
		}
	}
}

/* Halt polling: polls by result and the time of the failed ones per VM, halt_poll_ns per vCPU. */
static void walk_halt_polls(struct sink *k, const struct metrics *m)
{
	char val[32], idx[16];

	family_begin(k, &fam_polls);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		struct label ok[] = { { "vm", vm->name }, { "result", "ok" } };
		struct label failed[] = { { "vm", vm->name }, { "result", "failed" } };

		emit(k, "_total", ok, 2, fmt_u64(val, sizeof(val), vm->c.polls_ok));
		emit(k, "_total", failed, 2, fmt_u64(val, sizeof(val), vm->c.polls_failed));
	}
	family_begin(k, &fam_poll_fail);
	for (size_t i = 0; i < m->nr_vms; i++) {
		struct label l[] = { { "vm", m->vms[i]->name } };

		emit(k, "_total", l, 1, fmt_seconds(val, sizeof(val), m->vms[i]->c.poll_fail_ns));
	}
	family_begin(k, &fam_l2);
	for (size_t i = 0; i < m->nr_vms; i++) {
		struct label l[] = { { "vm", m->vms[i]->name } };

		if (m->vms[i]->c.nested)
			emit(k, "_total", l, 1, fmt_seconds(val, sizeof(val), m->vms[i]->c.l2_ns));
	}
	family_begin(k, &fam_halt_poll);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];

		if (m->o.no_vcpu_labels) {
			struct label l[] = { { "vm", vm->name } };

			emit(k, "", l, 1, fmt_seconds(val, sizeof(val), vm->halt_poll_ns));
			continue;
		}
		for (size_t v = 0; v < vm->nr_vcpus; v++) {
			struct label l[] = { { "vm", vm->name }, { "vcpu", idx } };

			snprintf(idx, sizeof(idx), "%u", vm->vcpus[v].index);
			emit(k, "", l, 2, fmt_seconds(val, sizeof(val), vm->vcpus[v].halt_poll_ns));
		}
	}
}

/* The VMM's other threads per VM and kind: CPU and waiting (VMs whose VMM threads were accounted). */
static void walk_vmm_threads(struct sink *k, const struct metrics *m)
{
	static const char *const kind[VMM_NR_KINDS] = { "emulator", "vhost" };
	char val[32];

	for (int pass = 0; pass < 2; pass++) {
		family_begin(k, pass ? &fam_vmm_wait : &fam_vmm_run);
		for (size_t i = 0; i < m->nr_vms; i++) {
			const struct acc_vm *vm = m->vms[i];

			for (int t = 0; vm->vmm_known && t < VMM_NR_KINDS; t++) {
				struct label l[] = { { "vm", vm->name }, { "kind", kind[t] } };

				emit(k, "_total", l, 2,
				     fmt_seconds(val, sizeof(val), pass ? vm->vmm_wait_ns[t] : vm->vmm_run_ns[t]));
			}
		}
	}
}

/* Placement per VM (VMs whose placement is known: live, with a topology). */
static void walk_placement(struct sink *k, const struct metrics *m)
{
	char val[32], id[16];

	for (int llc = 0; llc < 2; llc++) {
		family_begin(k, llc ? &fam_place_llc : &fam_place_node);
		for (size_t i = 0; i < m->nr_vms; i++) {
			const struct acc_vm *vm = m->vms[i];
			const __u64 *ns = llc ? vm->llc_ns : vm->node_ns;
			int nr = llc ? vm->nr_llc : vm->nr_node;

			for (int d = 0; vm->place_known && d < nr; d++) {
				struct label l[] = { { "vm", vm->name }, { llc ? "llc" : "node", id } };

				if (!ns[d])
					continue;
				snprintf(id, sizeof(id), "%d", d);
				emit(k, "_total", l, 2, fmt_seconds(val, sizeof(val), ns[d]));
			}
		}
	}
	family_begin(k, &fam_place_moves);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		struct label n[] = { { "vm", vm->name }, { "across", "node" } };
		struct label c[] = { { "vm", vm->name }, { "across", "llc" } };

		if (!vm->place_known)
			continue;
		emit(k, "_total", n, 2, fmt_u64(val, sizeof(val), vm->cross_node));
		emit(k, "_total", c, 2, fmt_u64(val, sizeof(val), vm->cross_llc));
	}
	family_begin(k, &fam_place_numa);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		struct label l[] = { { "vm", vm->name } };

		if (vm->place_known)
			emit(k, "_total", l, 1, fmt_u64(val, sizeof(val), vm->numa_moves));
	}
	family_begin(k, &fam_place_smt);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		struct label o[] = { { "vm", vm->name }, { "beside", "other_vm" } };
		struct label sm[] = { { "vm", vm->name }, { "beside", "same_vm" } };

		if (!vm->place_known)
			continue;
		emit(k, "_total", o, 2, fmt_seconds(val, sizeof(val), vm->smt_other_ns));
		emit(k, "_total", sm, 2, fmt_seconds(val, sizeof(val), vm->smt_same_ns));
	}
}

static void walk(struct sink *k, const struct metrics *m)
{
	char val[64];

	walk_seconds(k, m);
	walk_counter(k, m, &fam_delay, get_runq_ns, true);
	walk_counter(k, m, &fam_wait, get_runq_ns, true);
	walk_counter(k, m, &fam_preempt, get_preempt, false);
	walk_counter(k, m, &fam_wakeups, get_wakeups, false);
	walk_counter(k, m, &fam_migr, get_migr, false);
	walk_counter(k, m, &fam_vexits, get_exits, false);
	walk_counter(k, m, &fam_vuexits, get_uexits, false);
	walk_halt_polls(k, m);
	walk_vmm_threads(k, m);
	walk_placement(k, m);
	walk_hists(k, m);
	walk_culprits(k, m);
	walk_detail_rows(k, m, false);
	walk_detail_rows(k, m, true);
	family_begin(k, &fam_vcpus);
	for (size_t i = 0; i < m->nr_vms; i++) {
		struct label l[] = {{"vm", m->vms[i]->name}};

		emit(k, "", l, 1, fmt_u64(val, sizeof(val), m->vms[i]->vcpus_now));
	}
	family_begin(k, &fam_vm_info);
	for (size_t i = 0; i < m->nr_vms; i++) {
		const struct acc_vm *vm = m->vms[i];
		const struct container_ref *c = &vm->container;
		struct label l[] = {{"vm", vm->name},	       {"cgroup", vm->cgroup},		 {"pod", c->pod},
				    {"pod_name", c->pod_name}, {"namespace", c->pod_namespace}, {"container", c->name}};

		emit(k, "_info", l, 6, "1");
	}
	family_begin(k, &fam_lost);
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++) {
		struct label l[] = {{"kind", lost_kind_name(i)}};

		emit(k, "_total", l, 1, fmt_u64(val, sizeof(val), m->lost[i]));
	}
	family_begin(k, &fam_tp);
	for (size_t i = 0; i < m->nr_progs; i++) {
		struct label l[] = {{"tracepoint", m->progs[i].tracepoint}};

		emit(k, "", l, 1, m->progs[i].attached ? "1" : "0");
	}
	if (m->health_checked) {
		family_begin(k, &fam_health);
		emit(k, "", NULL, 0, m->health_problems ? "0" : "1");
		family_begin(k, &fam_blind);
		for (unsigned int b = 0; b < HEALTH_NR_PROBLEMS; b++) {
			struct label l[] = {{"problem", health_problem_name(1u << b)}};
			unsigned int n = m->blind_vms[b];

			if (1u << b == HEALTH_NO_EXIT_PROGRAM)
				n = !!(m->health_problems & HEALTH_NO_EXIT_PROGRAM);
			emit(k, "", l, 1, fmt_u64(val, sizeof(val), n));
		}
		family_begin(k, &fam_kvm_vms);
		emit(k, "", NULL, 0, fmt_u64(val, sizeof(val), m->kvm_vms));
	}
	if (m->started && !m->no_clock) {
		family_begin(k, &fam_start);
		snprintf(val, sizeof(val), "%.3f", metrics_start_time(m));
		emit(k, "", NULL, 0, val);
	}
	if (m->started) {
		family_begin(k, &fam_window);
		emit(k, "", NULL, 0, fmt_double(val, sizeof(val), metrics_window_seconds(m)));
	}
	if (!m->file) {
		family_begin(k, &fam_samples);
		emit(k, "_total", NULL, 0, fmt_u64(val, sizeof(val), m->nr_adds));
	}
	family_begin(k, &fam_build);
	{
		struct label l[] = {{"version", VCPUSTAT_VERSION}, {"kernel", m->kernel}};

		emit(k, "_info", l, 2, "1");
	}
}

/* ---- entry points ---- */

int metrics_render(const struct metrics *m, enum metrics_format f, char **buf, size_t *len)
{
	return metrics_render_sized(m, f, 0, buf, len);
}

int metrics_render_sized(const struct metrics *m, enum metrics_format f, size_t expect, char **buf, size_t *len)
{
	struct out out = { 0 };
	struct sink *k;

	*buf = NULL;
	*len = 0;
	if (f == METRICS_JSON) {
		/* the writer's buffer is the result: no copy of the document */
		struct jw w = { 0 };
		int err;

		if (expect && !jw_reserve(&w, expect + expect / 8)) {
			jw_free(&w);
			return -ENOMEM;
		}
		metrics_json_write(&w, m);
		jw_raw(&w, "\n", 1);
		err = jw_error(&w);
		*buf = jw_release(&w, len);
		return err;
	}
	/* room for what is expected and an eighth more: growing after that is rare */
	if (expect && !out_reserve(&out, expect + expect / 8))
		return -ENOMEM;
	k = calloc(1, sizeof(*k));
	if (!k) {
		free(out.p);
		return -ENOMEM;
	}
	k->f = f;
	k->out = &out;
	for (unsigned int i = 0; i < METRICS_NR_LE; i++)
		fmt_double(k->le[i], sizeof(k->le[i]), metrics_le_seconds(i));
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
	if (out.oom || !out.p) {
		free(out.p);
		return -ENOMEM;
	}
	*buf = out.p;
	*len = out.len;
	return 0;
}
