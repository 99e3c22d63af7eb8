// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Execution-flow recovery (model/flow.c, `vcpustat report --flow`): exact
 * intervals, culprits and D(T) on synthetic recordings written with the SHT
 * writer in the shape docs/sht-attributes.md gives (level full, and guest
 * threads as `vcpustat import --guest` stores them), including the
 * preemption-analysis paper's case studies.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "model/summary.h"
#include "model/report.h"
#include "model/flow.h"
#include "sht/sht.h"
#include "cli_run.h"
#include "import/import.h"
#include "multilevel_scenario.h"

/* ---- synthetic recordings: events in any order, written in time order ---- */

struct sev {
	uint64_t t;
	size_t seq;
	char path[160];
	int type;
	int64_t i;
	char s[64];
};

struct synth_rec {
	struct sev *e;
	size_t n, cap;
};

static void put(struct synth_rec *s, uint64_t t, int type, int64_t i, const char *str, const char *fmt, va_list ap)
{
	struct sev *e;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->e = realloc(s->e, s->cap * sizeof(*s->e));
		cr_assert_not_null(s->e);
	}
	e = &s->e[s->n];
	memset(e, 0, sizeof(*e));
	e->t = t;
	e->seq = s->n++;
	e->type = type;
	e->i = i;
	if (str)
		snprintf(e->s, sizeof(e->s), "%s", str);
	vsnprintf(e->path, sizeof(e->path), fmt, ap);
}

__attribute__((format(printf, 4, 5))) static void set_i(struct synth_rec *s, uint64_t t, int64_t v, const char *fmt,
							...)
{
	va_list ap;

	va_start(ap, fmt);
	put(s, t, SHT_INT, v, NULL, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 4, 5))) static void set_s(struct synth_rec *s, uint64_t t, const char *v, const char *fmt,
							 ...)
{
	va_list ap;

	va_start(ap, fmt);
	put(s, t, SHT_STR, 0, v, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void set_null(struct synth_rec *s, uint64_t t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put(s, t, SHT_NULL, 0, NULL, fmt, ap);
	va_end(ap);
}

static int by_time(const void *a, const void *b)
{
	const struct sev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static char synth_paths[8][256];

/* The files a test wrote go when its process ends (each test runs in its own). */
static void synth_cleanup(void)
{
	for (size_t i = 0; i < 8; i++)
		if (synth_paths[i][0])
			unlink(synth_paths[i]);
}

/* Write the events to a fresh file (ending at end) and return its path (static buffer per name). */
static const char *synth_write(struct synth_rec *s, const char *name, uint64_t end)
{
	static int next;
	char *path = synth_paths[next++ % 8];
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;

	if (next == 1)
		atexit(synth_cleanup);
	if (path[0])
		unlink(path);
	snprintf(path, 256, "/tmp/vcpustat-flow-%d-%s.sht", (int)getpid(), name);
	qsort(s->e, s->n, sizeof(*s->e), by_time);
	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	for (size_t k = 0; k < s->n; k++) {
		struct sev *e = &s->e[k];
		struct sht_value v = { .type = e->type, .i = e->i, .s = e->s };
		uint32_t a;

		cr_assert_eq(sht_writer_attr(w, e->path, &a), 0, "%s", e->path);
		cr_assert_eq(sht_writer_set(w, a, e->t, &v), 0, "%s", e->path);
	}
	cr_assert_eq(sht_writer_close(w, end, &err), 0, "%s", err.msg);
	free(s->e);
	memset(s, 0, sizeof(*s));
	return path;
}

/* The host's view: threads, CPUs, VMs and vCPUs (docs/sht-attributes.md). */
static void host_thread(struct synth_rec *s, uint32_t tid, uint32_t pid, const char *name)
{
	set_s(s, 0, name, "/host/threads/%u/name", tid);
	set_i(s, 0, pid, "/host/threads/%u/pid", tid);
}

static void on_cpu(struct synth_rec *s, uint64_t t, uint32_t cpu, uint32_t tid)
{
	set_i(s, t, tid, "/host/cpus/%u/current_tid", cpu);
}

static void hstate(struct synth_rec *s, uint64_t t, uint32_t tid, const char *state)
{
	if (state)
		set_s(s, t, state, "/host/threads/%u/state", tid);
	else
		set_null(s, t, "/host/threads/%u/state", tid);
}

static void vm(struct synth_rec *s, const char *name, uint32_t pid)
{
	set_i(s, 0, pid, "/vms/%s/pid", name);
	host_thread(s, pid, pid, "qemu-system-x86");
}

static void vcpu(struct synth_rec *s, const char *vmname, uint32_t pid, unsigned int n, uint32_t tid)
{
	char name[16];

	set_i(s, 0, tid, "/vms/%s/vcpus/%u/tid", vmname, n);
	snprintf(name, sizeof(name), "CPU %u/KVM", n);
	set_s(s, 0, name, "/host/threads/%u/name", tid);
	set_i(s, 0, pid, "/host/threads/%u/pid", tid);
}

static void vstate(struct synth_rec *s, uint64_t t, const char *vmname, unsigned int n, int state, int pcpu)
{
	set_i(s, t, state, "/vms/%s/vcpus/%u/state", vmname, n);
	if (pcpu >= 0)
		set_i(s, t, pcpu, "/vms/%s/vcpus/%u/pcpu", vmname, n);
}

static void gtid(struct synth_rec *s, uint64_t t, const char *vmname, unsigned int n, uint32_t tid)
{
	set_i(s, t, tid, "/vms/%s/vcpus/%u/guest_tid", vmname, n);
}

static void gstate(struct synth_rec *s, uint64_t t, const char *vmname, uint32_t tid, const char *state)
{
	if (state)
		set_s(s, t, state, "/vms/%s/threads/%u/state", vmname, tid);
	else
		set_null(s, t, "/vms/%s/threads/%u/state", vmname, tid);
}

static void gname(struct synth_rec *s, const char *vmname, uint32_t tid, const char *name)
{
	set_s(s, 0, name, "/vms/%s/threads/%u/name", vmname, tid);
}

/* ---- reading flows back ---- */

static struct sht_reader *open_sht(const char *path)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;

	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	return r;
}

static void flow_of(struct sht_reader *r, const char *thread, uint64_t from, uint64_t to, struct flow *f)
{
	struct vcpustat_error err = { 0 };
	struct flow_target t;

	cr_assert_eq(flow_parse_target(thread, &t, &err), 0, "%s", err.msg);
	cr_assert_eq(flow_build(f, r, &t, from, to, &err), 0, "%s", err.msg);
}

/* A culprit as "system/role/tid" (+ "/vcpu" when it has one, "/cycle"), or "-". */
static const char *who(const struct flow *f, int32_t c)
{
	static char buf[4][160];
	static int k;
	char *b = buf[k++ % 4];
	const struct flow_culprit *cu;

	if (c < 0)
		return "-";
	cu = &f->culprits[c];
	snprintf(b, 160, "%s/%s/%u", cu->system, flow_role_name(cu->role), cu->tid);
	if (cu->vcpu >= 0)
		snprintf(b + strlen(b), 160 - strlen(b), "/%d", cu->vcpu);
	if (cu->cycle)
		snprintf(b + strlen(b), 160 - strlen(b), "/cycle");
	return b;
}

struct want_iv {
	uint64_t start, end;
	enum flow_kind kind;
	const char *who;
};

/* The first n intervals of the flow are w (it may have more). */
static void assert_prefix(const struct flow *f, const struct want_iv *w, size_t n)
{
	cr_assert_geq(f->niv, n, "%zu intervals, fewer than %zu", f->niv, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(f->iv[i].start, w[i].start, "interval %zu starts at %lu, not %lu", i,
			     (unsigned long)f->iv[i].start, (unsigned long)w[i].start);
		cr_assert_eq(f->iv[i].end, w[i].end, "interval %zu ends at %lu, not %lu", i,
			     (unsigned long)f->iv[i].end, (unsigned long)w[i].end);
		cr_assert_eq(f->iv[i].kind, w[i].kind, "interval %zu", i);
		cr_assert_str_eq(who(f, f->iv[i].culprit), w[i].who, "interval %zu", i);
	}
}

static void assert_intervals(const struct flow *f, const struct want_iv *w, size_t n)
{
	for (size_t i = 0; i < f->niv; i++)
		cr_log_info("[%lu, %lu) %s %s", (unsigned long)f->iv[i].start, (unsigned long)f->iv[i].end,
			    flow_kind_name(f->iv[i].kind), who(f, f->iv[i].culprit));
	for (size_t i = 0; i < f->niv && i < n; i++) {
		cr_expect_eq(f->iv[i].start, w[i].start, "interval %zu starts at %lu, not %lu", i,
			     (unsigned long)f->iv[i].start, (unsigned long)w[i].start);
		cr_expect_eq(f->iv[i].end, w[i].end, "interval %zu ends at %lu, not %lu", i,
			     (unsigned long)f->iv[i].end, (unsigned long)w[i].end);
		cr_expect_eq(f->iv[i].kind, w[i].kind, "interval %zu is %s, not %s", i, flow_kind_name(f->iv[i].kind),
			     flow_kind_name(w[i].kind));
		cr_expect_str_eq(who(f, f->iv[i].culprit), w[i].who, "interval %zu", i);
	}
	cr_assert_eq(f->niv, n, "%zu intervals, not %zu", f->niv, n);
}

/* The culprit named w ("system/role/tid..."): its ns and D(T). */
static const struct flow_culprit *culprit_named(const struct flow *f, const char *w)
{
	for (size_t i = 0; i < f->nculprits; i++)
		if (!strcmp(who(f, (int32_t)i), w))
			return &f->culprits[i];
	cr_assert_fail("no culprit %s", w);
	return NULL;
}

static void assert_culprit(const struct flow *f, const char *w, uint64_t ns, double impact)
{
	const struct flow_culprit *c = culprit_named(f, w);

	cr_expect_eq(c->ns, ns, "%s: %lu ns, not %lu", w, (unsigned long)c->ns, (unsigned long)ns);
	cr_expect(fabs(c->impact - impact) < 1e-12, "%s: D(T) %.15f, not %.15f", w, c->impact, impact);
}

/* ---- a host thread on a host of one CPU and another ---- */

/*
 * Thread 100 (worker) on CPU 0: preempted by burnP6 (200) then by 300
 * (kworker, of process 250), runs, sleeps, is woken while 200 runs on CPU 0
 * but then runs on CPU 1, where 400 ran meanwhile; exits at 5000.
 */
static const char *host_scenario(void)
{
	struct synth_rec s = { 0 };

	host_thread(&s, 100, 100, "worker");
	host_thread(&s, 200, 200, "burnP6");
	host_thread(&s, 250, 250, "kthreadd-x");
	host_thread(&s, 300, 250, "kworker");
	host_thread(&s, 400, 400, "other");
	on_cpu(&s, 0, 0, 100);
	on_cpu(&s, 0, 1, 400);
	hstate(&s, 0, 100, "running");
	hstate(&s, 1000, 100, "preempted");
	on_cpu(&s, 1000, 0, 200);
	on_cpu(&s, 1600, 0, 300);
	hstate(&s, 2000, 100, "running");
	on_cpu(&s, 2000, 0, 100);
	hstate(&s, 3000, 100, "blocked");
	on_cpu(&s, 3000, 0, 0);
	hstate(&s, 4000, 100, "wait");
	on_cpu(&s, 4000, 0, 200);
	hstate(&s, 4500, 100, "running");
	on_cpu(&s, 4500, 1, 100);
	hstate(&s, 5000, 100, NULL);
	on_cpu(&s, 5000, 1, 0);
	return synth_write(&s, "host", 6000);
}

Test(flow, host_thread_intervals_culprits_and_d_of_t)
{
	struct sht_reader *r = open_sht(host_scenario());
	struct flow f;
	static const struct want_iv want[] = {
		{ 0, 1000, FLOW_RUNNING, "-" },
		{ 1000, 1600, FLOW_HOST_RUNQ, "host/thread/200" },
		{ 1600, 2000, FLOW_HOST_RUNQ, "host/thread/300" },
		{ 2000, 3000, FLOW_RUNNING, "-" },
		{ 3000, 4000, FLOW_BLOCKED, "-" },
		{ 4000, 4500, FLOW_HOST_RUNQ, "host/thread/400" }, /* woken: the CPU it then ran on */
		{ 4500, 5000, FLOW_RUNNING, "-" },
	};

	flow_of(r, "100", 0, 6000, &f);
	cr_assert_eq(f.start, 0);
	cr_assert_eq(f.end, 5000);
	cr_assert_str_eq(f.name, "worker");
	cr_assert_eq(f.vcpu, -1);
	assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	cr_assert_eq(f.ns[FLOW_RUNNING], 2500);
	cr_assert_eq(f.ns[FLOW_HOST_RUNQ], 1500);
	cr_assert_eq(f.ns[FLOW_BLOCKED], 1000);
	cr_assert_eq(f.ns[FLOW_GUEST_RUNQ] + f.ns[FLOW_HYPERVISOR] + f.ns[FLOW_HOST_BLOCKED], 0);
	cr_assert_eq(f.nculprits, 3);
	/* by time: 200, 400, 300 */
	cr_assert_str_eq(who(&f, 0), "host/thread/200");
	cr_assert_str_eq(who(&f, 1), "host/thread/400");
	cr_assert_str_eq(who(&f, 2), "host/thread/300");
	assert_culprit(&f, "host/thread/200", 600, 600.0 / 5000);
	assert_culprit(&f, "host/thread/400", 500, 500.0 / 5000);
	assert_culprit(&f, "host/thread/300", 400, 400.0 / 5000);
	cr_assert_str_eq(f.culprits[2].name, "kworker");
	cr_assert_eq(f.culprits[2].pid, 250);
	cr_assert_str_eq(f.culprits[2].process, "kthreadd-x");
	flow_free(&f);
	sht_close(r);
}

Test(flow, host_thread_window_cuts_the_lifespan)
{
	struct sht_reader *r = open_sht(host_scenario());
	struct flow f;
	static const struct want_iv want[] = {
		{ 1500, 1600, FLOW_HOST_RUNQ, "host/thread/200" }, { 1600, 2000, FLOW_HOST_RUNQ, "host/thread/300" },
		{ 2000, 3000, FLOW_RUNNING, "-" },		   { 3000, 4000, FLOW_BLOCKED, "-" },
		{ 4000, 4200, FLOW_HOST_RUNQ, "host/thread/400" },
	};

	flow_of(r, "100", 1500, 4200, &f);
	cr_assert_eq(f.start, 1500);
	cr_assert_eq(f.end, 4200);
	assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	assert_culprit(&f, "host/thread/200", 100, 100.0 / 2700);
	assert_culprit(&f, "host/thread/300", 400, 400.0 / 2700);
	assert_culprit(&f, "host/thread/400", 200, 200.0 / 2700);
	flow_free(&f);
	sht_close(r);
}

/* ---- two VMs with guest traces on one pCPU (the paper's critical task, Fig. 14) ---- */

/*
 * pCPU 0 is shared by vm1's vCPU 0 (thread 1001), vm2's vCPU 0 (2001) and
 * burnP6 (500). In vm1, critical_task (345) and cc (346); in vm2, cc (77).
 */
static const char *two_vms(void)
{
	struct synth_rec s = { 0 };

	host_thread(&s, 500, 500, "burnP6");
	vm(&s, "vm1", 1000);
	vcpu(&s, "vm1", 1000, 0, 1001);
	vm(&s, "vm2", 2000);
	vcpu(&s, "vm2", 2000, 0, 2001);
	gname(&s, "vm1", 345, "critical_task");
	gname(&s, "vm1", 346, "cc");
	gname(&s, "vm2", 77, "cc");

	on_cpu(&s, 0, 0, 1001);
	vstate(&s, 0, "vm1", 0, VCPU_GUEST, 0);
	gtid(&s, 0, "vm1", 0, 345);
	gstate(&s, 0, "vm1", 345, "running");
	vstate(&s, 0, "vm2", 0, VCPU_IDLE, 0);
	gtid(&s, 0, "vm2", 0, 0);
	/* vm2's cc is woken at 500: its vCPU waits for pCPU 0, which runs vm1's critical_task */
	vstate(&s, 500, "vm2", 0, VCPU_WAIT, 0);
	gstate(&s, 500, "vm2", 77, "wait");
	/* vm1's vCPU exits (hypervisor), then is preempted by vm2's vCPU running cc */
	vstate(&s, 1000, "vm1", 0, VCPU_HOST, -1);
	gstate(&s, 1000, "vm1", 345, "virt_preempted");
	vstate(&s, 1100, "vm1", 0, VCPU_PREEMPTED, -1);
	on_cpu(&s, 1100, 0, 2001);
	vstate(&s, 1100, "vm2", 0, VCPU_GUEST, -1);
	gtid(&s, 1100, "vm2", 0, 77);
	gstate(&s, 1100, "vm2", 77, "running");
	/* cc sleeps; vm2's guest CPU idles, then its vCPU halts and burnP6 runs */
	gtid(&s, 1650, "vm2", 0, 0);
	gstate(&s, 1650, "vm2", 77, "blocked");
	on_cpu(&s, 1700, 0, 500);
	vstate(&s, 1700, "vm2", 0, VCPU_IDLE, -1);
	/* vm1's vCPU is back: hypervisor, then guest */
	on_cpu(&s, 2000, 0, 1001);
	vstate(&s, 2000, "vm1", 0, VCPU_HOST, -1);
	vstate(&s, 2050, "vm1", 0, VCPU_GUEST, -1);
	gstate(&s, 2050, "vm1", 345, "running");
	/* in vm1, cc preempts critical_task; then burnP6 preempts the vCPU */
	gtid(&s, 3000, "vm1", 0, 346);
	gstate(&s, 3000, "vm1", 345, "preempted");
	gstate(&s, 3000, "vm1", 346, "running");
	vstate(&s, 3500, "vm1", 0, VCPU_PREEMPTED, -1);
	on_cpu(&s, 3500, 0, 500);
	gstate(&s, 3500, "vm1", 346, "virt_preempted");
	on_cpu(&s, 3800, 0, 1001);
	vstate(&s, 3800, "vm1", 0, VCPU_GUEST, -1);
	gstate(&s, 3800, "vm1", 346, "running");
	gtid(&s, 4000, "vm1", 0, 345);
	gstate(&s, 4000, "vm1", 345, "running");
	gstate(&s, 4000, "vm1", 346, "blocked");
	gstate(&s, 5000, "vm1", 345, NULL);
	gtid(&s, 5000, "vm1", 0, 0);
	return synth_write(&s, "two-vms", 6000);
}

static const struct want_iv critical_want[] = {
	{ 0, 1000, FLOW_RUNNING, "-" },
	{ 1000, 1100, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
	{ 1100, 1650, FLOW_HOST_RUNQ, "vm2/thread/77" }, /* resolve(): into vm2, its guest thread */
	{ 1650, 1700, FLOW_HOST_RUNQ, "vm2/idle/0" },
	{ 1700, 2000, FLOW_HOST_RUNQ, "host/thread/500" },
	{ 2000, 2050, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
	{ 2050, 3000, FLOW_RUNNING, "-" },
	{ 3000, 3500, FLOW_GUEST_RUNQ, "vm1/thread/346" },
	{ 3500, 3800, FLOW_GUEST_RUNQ, "host/thread/500" }, /* its vCPU preempted on the host meanwhile */
	{ 3800, 4000, FLOW_GUEST_RUNQ, "vm1/thread/346" },
	{ 4000, 5000, FLOW_RUNNING, "-" },
};

Test(flow, critical_task_names_the_other_vms_guest_thread)
{
	struct sht_reader *r = open_sht(two_vms());
	struct flow f;

	flow_of(r, "vm1:345", 0, 6000, &f);
	cr_assert(f.target.guest);
	cr_assert_str_eq(f.vm, "vm1");
	cr_assert_str_eq(f.name, "critical_task");
	cr_assert_eq(f.start, 0);
	cr_assert_eq(f.end, 5000);
	assert_intervals(&f, critical_want, sizeof(critical_want) / sizeof(critical_want[0]));
	cr_assert_eq(f.ns[FLOW_RUNNING], 2950);
	cr_assert_eq(f.ns[FLOW_HYPERVISOR], 150);
	cr_assert_eq(f.ns[FLOW_HOST_RUNQ], 900);
	cr_assert_eq(f.ns[FLOW_GUEST_RUNQ], 1000);
	cr_assert_eq(f.nculprits, 5);
	assert_culprit(&f, "vm1/thread/346", 700, 0.14);
	assert_culprit(&f, "host/thread/500", 600, 0.12);
	assert_culprit(&f, "vm2/thread/77", 550, 0.11);
	assert_culprit(&f, "host/hypervisor/1001/0", 150, 0.03);
	assert_culprit(&f, "vm2/idle/0", 50, 0.01);
	cr_assert_str_eq(culprit_named(&f, "vm2/thread/77")->name, "cc");
	cr_assert(culprit_named(&f, "vm2/thread/77")->in_vm);
	cr_assert_str_eq(culprit_named(&f, "host/hypervisor/1001/0")->process, "vm1");
	cr_assert_eq(culprit_named(&f, "host/hypervisor/1001/0")->pid, 1000);
	flow_free(&f);
	sht_close(r);
}

Test(flow, the_other_vm_is_delayed_by_the_first_one_in_turn)
{
	struct sht_reader *r = open_sht(two_vms());
	struct flow f;
	static const struct want_iv want[] = {
		/* its vCPU waits for pCPU 0: vm1 runs critical_task */
		{ 500, 1000, FLOW_GUEST_RUNQ, "vm1/thread/345" },
		{ 1000, 1100, FLOW_GUEST_RUNQ, "host/hypervisor/1001/0" },
		{ 1100, 1650, FLOW_RUNNING, "-" },
		{ 1650, 6000, FLOW_BLOCKED, "-" },
	};

	flow_of(r, "vm2:77", 0, 6000, &f);
	assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	cr_assert_eq(f.start, 500);
	cr_assert_eq(f.end, 6000);
	assert_culprit(&f, "vm1/thread/345", 500, 500.0 / 5500);
	assert_culprit(&f, "host/hypervisor/1001/0", 100, 100.0 / 5500);
	cr_assert_str_eq(culprit_named(&f, "vm1/thread/345")->name, "critical_task");
	flow_free(&f);
	sht_close(r);
}

Test(flow, a_vcpu_thread_by_host_tid)
{
	struct sht_reader *r = open_sht(two_vms());
	struct flow f;
	static const struct want_iv want[] = {
		{ 0, 1000, FLOW_RUNNING, "-" },
		{ 1000, 1100, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
		{ 1100, 1650, FLOW_HOST_RUNQ, "vm2/thread/77" },
		{ 1650, 1700, FLOW_HOST_RUNQ, "vm2/idle/0" },
		{ 1700, 2000, FLOW_HOST_RUNQ, "host/thread/500" },
		{ 2000, 2050, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
		{ 2050, 3500, FLOW_RUNNING, "-" },
		{ 3500, 3800, FLOW_HOST_RUNQ, "host/thread/500" },
		{ 3800, 6000, FLOW_RUNNING, "-" },
	};

	flow_of(r, "1001", 0, 6000, &f);
	cr_assert_eq(f.vcpu, 0);
	cr_assert_str_eq(f.vm, "vm1");
	cr_assert_str_eq(f.name, "CPU 0/KVM");
	assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	assert_culprit(&f, "host/thread/500", 600, 0.1);
	flow_free(&f);
	sht_close(r);
}

/* ---- cycle protection: a file whose vCPUs wait for each other's CPU ---- */

/*
 * Inconsistent on purpose (as a damaged or hand-made file may be): worker
 * 100 is preempted on CPU 2, where vm1's vCPU runs; that vCPU says it is
 * preempted on CPU 0, where vm2's vCPU runs, which says it is preempted on
 * CPU 1, where vm1's vCPU runs again. resolve() must stop there.
 */
static const char *cycle_file(void)
{
	struct synth_rec s = { 0 };

	host_thread(&s, 100, 100, "worker");
	vm(&s, "vm1", 1000);
	vcpu(&s, "vm1", 1000, 0, 1001);
	vm(&s, "vm2", 2000);
	vcpu(&s, "vm2", 2000, 0, 2001);
	gname(&s, "vm1", 345, "critical_task");
	hstate(&s, 0, 100, "running");
	on_cpu(&s, 0, 2, 100);
	on_cpu(&s, 0, 0, 2001);
	on_cpu(&s, 0, 1, 1001);
	vstate(&s, 0, "vm1", 0, VCPU_PREEMPTED, 0);
	vstate(&s, 0, "vm2", 0, VCPU_PREEMPTED, 1);
	gtid(&s, 0, "vm1", 0, 345);
	gstate(&s, 0, "vm1", 345, "virt_preempted");
	hstate(&s, 1000, 100, "preempted");
	on_cpu(&s, 1000, 2, 1001);
	hstate(&s, 2000, 100, "running");
	on_cpu(&s, 2000, 2, 100);
	gstate(&s, 3000, "vm1", 345, NULL);
	hstate(&s, 3000, 100, NULL);
	return synth_write(&s, "cycle", 4000);
}

Test(flow, cycle_protection_host_thread, .timeout = 20)
{
	struct sht_reader *r = open_sht(cycle_file());
	struct flow f;
	static const struct want_iv want[] = {
		{ 0, 1000, FLOW_RUNNING, "-" },
		{ 1000, 2000, FLOW_HOST_RUNQ, "vm1/unresolved/0/0/cycle" },
		{ 2000, 3000, FLOW_RUNNING, "-" },
	};

	flow_of(r, "100", 0, 4000, &f);
	assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	cr_assert_eq(f.nculprits, 1);
	cr_assert(f.culprits[0].cycle);
	assert_culprit(&f, "vm1/unresolved/0/0/cycle", 1000, 1000.0 / 3000);
	flow_free(&f);
	sht_close(r);
}

Test(flow, cycle_protection_guest_thread, .timeout = 20)
{
	struct sht_reader *r = open_sht(cycle_file());
	struct flow f;
	static const struct want_iv want[] = {
		/* vm1 vCPU 0 preempted on CPU 0 -> vm2 vCPU 0 preempted on CPU 1 -> vm1 vCPU 0 again */
		{ 0, 3000, FLOW_HOST_RUNQ, "vm1/unresolved/0/0/cycle" },
	};

	flow_of(r, "vm1:345", 0, 4000, &f);
	assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	assert_culprit(&f, "vm1/unresolved/0/0/cycle", 3000, 1.0);
	flow_free(&f);
	sht_close(r);
}

/* ---- the paper's Fibonacci case: 0 % steal seen from the guest, preempted half the time ---- */

Test(flow, fibonacci_thread_preempted_half_the_time_by_another_vm)
{
	struct synth_rec s = { 0 };
	struct sht_reader *r;
	struct flow f;

	vm(&s, "debian", 1000);
	vcpu(&s, "debian", 1000, 0, 1001);
	vm(&s, "ubuntu", 2000);
	vcpu(&s, "ubuntu", 2000, 0, 2001);
	gname(&s, "debian", 42, "fibonacci");
	gname(&s, "ubuntu", 88, "burnP6");
	gtid(&s, 0, "debian", 0, 42);
	gtid(&s, 0, "ubuntu", 0, 88);
	gstate(&s, 0, "ubuntu", 88, "running");
	/* the guest's view: fibonacci current all along (never preempted in the guest) */
	for (unsigned int k = 0; k < 10; k++) {
		uint64_t t = 1000 * k;

		vstate(&s, t, "debian", 0, VCPU_GUEST, 0);
		gstate(&s, t, "debian", 42, "running");
		vstate(&s, t, "ubuntu", 0, VCPU_PREEMPTED, 0);
		on_cpu(&s, t, 0, 1001);
		vstate(&s, t + 500, "debian", 0, VCPU_PREEMPTED, 0);
		gstate(&s, t + 500, "debian", 42, "virt_preempted");
		vstate(&s, t + 500, "ubuntu", 0, VCPU_GUEST, 0);
		on_cpu(&s, t + 500, 0, 2001);
	}
	gstate(&s, 10000, "debian", 42, NULL);
	r = open_sht(synth_write(&s, "fibonacci", 10000));
	flow_of(r, "debian:42", 0, 10000, &f);
	cr_assert_eq(f.niv, 20);
	for (size_t i = 0; i < f.niv; i++) {
		cr_assert_eq(f.iv[i].start, 500 * i);
		cr_assert_eq(f.iv[i].kind, i % 2 ? FLOW_HOST_RUNQ : FLOW_RUNNING);
		cr_assert_str_eq(who(&f, f.iv[i].culprit), i % 2 ? "ubuntu/thread/88" : "-");
	}
	cr_assert_eq(f.ns[FLOW_GUEST_RUNQ], 0); /* what the guest sees: never waiting */
	cr_assert_eq(f.ns[FLOW_RUNNING], 5000);
	cr_assert_eq(f.nculprits, 1);
	assert_culprit(&f, "ubuntu/thread/88", 5000, 0.5);
	cr_assert_str_eq(f.culprits[0].name, "burnP6");
	flow_free(&f);
	sht_close(r);
}

/* ---- the paper's residual timer: another VM's idle vCPU woken by a forgotten timer ---- */

Test(flow, forgotten_timer_in_another_vm_wakes_its_vcpu)
{
	struct synth_rec s = { 0 };
	struct sht_reader *r;
	struct flow f;

	host_thread(&s, 500, 500, "burnP6");
	vm(&s, "debian", 1000);
	vcpu(&s, "debian", 1000, 0, 1001);
	vm(&s, "ubuntu", 2000);
	vcpu(&s, "ubuntu", 2000, 0, 2001);
	gname(&s, "debian", 3525, "critical_task");
	gtid(&s, 0, "debian", 0, 3525);
	gstate(&s, 0, "debian", 3525, "running");
	vstate(&s, 0, "debian", 0, VCPU_GUEST, 0);
	vstate(&s, 0, "ubuntu", 0, VCPU_IDLE, 0);
	gtid(&s, 0, "ubuntu", 0, 0);
	on_cpu(&s, 0, 0, 1001);
	/* every 1000 ns ubuntu's timer fires: its vCPU runs the idle task for 100 ns on pCPU 0 */
	for (unsigned int k = 1; k <= 4; k++) {
		uint64_t t = 1000 * k;

		vstate(&s, t - 50, "ubuntu", 0, VCPU_WAIT, 0);
		vstate(&s, t, "debian", 0, VCPU_PREEMPTED, 0);
		gstate(&s, t, "debian", 3525, "virt_preempted");
		vstate(&s, t, "ubuntu", 0, VCPU_GUEST, 0);
		on_cpu(&s, t, 0, 2001);
		vstate(&s, t + 100, "ubuntu", 0, VCPU_IDLE, 0);
		vstate(&s, t + 100, "debian", 0, VCPU_GUEST, 0);
		gstate(&s, t + 100, "debian", 3525, "running");
		on_cpu(&s, t + 100, 0, 1001);
	}
	/* and burnP6 once */
	vstate(&s, 4500, "debian", 0, VCPU_PREEMPTED, 0);
	gstate(&s, 4500, "debian", 3525, "virt_preempted");
	on_cpu(&s, 4500, 0, 500);
	vstate(&s, 4700, "debian", 0, VCPU_GUEST, 0);
	gstate(&s, 4700, "debian", 3525, "running");
	on_cpu(&s, 4700, 0, 1001);
	gstate(&s, 5000, "debian", 3525, NULL);
	r = open_sht(synth_write(&s, "timer", 6000));
	flow_of(r, "debian:3525", 0, 6000, &f);
	cr_assert_eq(f.niv, 11);
	cr_assert_eq(f.nculprits, 2);
	cr_assert_str_eq(who(&f, 0), "ubuntu/idle/0"); /* the idle task of the other VM: 400 ns */
	assert_culprit(&f, "ubuntu/idle/0", 400, 0.08);
	assert_culprit(&f, "host/thread/500", 200, 0.04);
	cr_assert(f.culprits[0].in_vm);
	cr_assert_str_eq(f.culprits[0].name, "swapper");
	for (size_t i = 1; i < 9; i += 2) {
		cr_assert_eq(f.iv[i].start, 1000 * (i / 2 + 1));
		cr_assert_eq(f.iv[i].end, 1000 * (i / 2 + 1) + 100);
		cr_assert_str_eq(who(&f, f.iv[i].culprit), "ubuntu/idle/0");
	}
	flow_free(&f);
	sht_close(r);
}

/* ---- the command: JSON, text, --min-impact, errors ---- */

static json_t *flow_json_run(const char *sht, const char *thread, const char *min_impact)
{
	struct run *r = malloc(sizeof(*r));
	json_error_t je;
	json_t *j;

	cr_assert_not_null(r);
	if (min_impact)
		RUN(r, "report", sht, "--flow", thread, "--min-impact", min_impact, "-j");
	else
		RUN(r, "report", sht, "--flow", thread, "-j");
	cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
	j = json_loads(r->out, 0, &je);
	cr_assert_not_null(j, "%s: %s", je.text, r->out);
	free(r);
	return j;
}

static long long jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	cr_assert(json_is_integer(v), "%s is not an integer", k);
	return json_integer_value(v);
}

Test(flow, json_intervals_culprits_and_tree_with_min_impact)
{
	const char *sht = two_vms();
	json_t *doc = flow_json_run(sht, "vm1:345", "0.05"), *f = json_object_get(doc, "flow"), *iv, *cs, *tree;
	static const char *const sys[] = { "host", "vm1", "vm2" };
	static const long long sys_ns[] = { 600, 700, 550 };

	cr_assert_str_eq(json_string_value(json_object_get(doc, "file")), sht);
	cr_assert_not_null(f);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(f, "thread"), "name")), "critical_task");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(f, "thread"), "vm")), "vm1");
	cr_assert_eq(jint(json_object_get(f, "lifespan"), "ns"), 5000);
	cr_assert_eq(jint(json_object_get(f, "time_ns"), "host_runqueue"), 900);
	cr_assert_eq(jint(json_object_get(f, "time_ns"), "guest_runqueue"), 1000);
	cr_assert_eq(jint(json_object_get(f, "time_ns"), "hypervisor"), 150);
	iv = json_object_get(f, "intervals");
	cs = json_object_get(f, "culprits");
	cr_assert_eq(json_array_size(iv), sizeof(critical_want) / sizeof(critical_want[0]));
	for (size_t i = 0; i < json_array_size(iv); i++) {
		json_t *x = json_array_get(iv, i), *c = json_object_get(x, "culprit");

		cr_assert_eq(jint(x, "start_ns"), (long long)critical_want[i].start);
		cr_assert_eq(jint(x, "end_ns"), (long long)critical_want[i].end);
		cr_assert_str_eq(json_string_value(json_object_get(x, "state")), flow_kind_name(critical_want[i].kind));
		if (!strcmp(critical_want[i].who, "-")) {
			cr_assert(json_is_null(c));
		} else {
			json_t *cu = json_array_get(cs, (size_t)json_integer_value(c));
			char w[160];

			snprintf(w, sizeof(w), "%s/%s/%lld", json_string_value(json_object_get(cu, "system")),
				 json_string_value(json_object_get(cu, "role")), jint(cu, "tid"));
			if (json_is_integer(json_object_get(cu, "vcpu")))
				snprintf(w + strlen(w), sizeof(w) - strlen(w), "/%lld", jint(cu, "vcpu"));
			cr_assert_str_eq(w, critical_want[i].who, "interval %zu", i);
		}
	}
	cr_assert_eq(json_array_size(cs), 5);
	cr_assert_eq(jint(json_array_get(cs, 0), "ns"), 700);
	cr_assert_eq(json_real_value(json_object_get(json_array_get(cs, 0), "impact")), 0.14);
	/* the tree: D(T) >= 0.05 only: the hypervisor (0.03) and vm2's idle (0.01) are hidden */
	tree = json_object_get(f, "tree");
	cr_assert_eq(json_array_size(tree), 3);
	cr_assert_eq(jint(f, "hidden_culprits"), 2);
	cr_assert_eq(jint(f, "hidden_ns"), 200);
	/* by time: vm1 700, host 600 (burnP6), vm2 550 (cc) */
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tree, 0), "system")), sys[1]);
	cr_assert_eq(jint(json_array_get(tree, 0), "ns"), sys_ns[1]);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tree, 1), "system")), sys[0]);
	cr_assert_eq(jint(json_array_get(tree, 1), "ns"), sys_ns[0]);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tree, 2), "system")), sys[2]);
	cr_assert_eq(jint(json_array_get(tree, 2), "ns"), sys_ns[2]);
	{
		json_t *host = json_array_get(tree, 1), *p = json_array_get(json_object_get(host, "processes"), 0);

		cr_assert_eq(json_array_size(json_object_get(host, "processes")), 1);
		cr_assert_str_eq(json_string_value(json_object_get(p, "process")), "burnP6");
		cr_assert_eq(jint(p, "pid"), 500);
		cr_assert_eq(jint(p, "ns"), 600);
	}
	json_decref(doc);
	/* without --min-impact every culprit is in the tree: the host has burnP6 and vm1's hypervisor */
	doc = flow_json_run(sht, "vm1:345", NULL);
	f = json_object_get(doc, "flow");
	tree = json_object_get(f, "tree");
	cr_assert_eq(jint(f, "hidden_culprits"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tree, 0), "system")), "host");
	cr_assert_eq(jint(json_array_get(tree, 0), "ns"), 750);
	cr_assert_eq(json_array_size(json_object_get(json_array_get(tree, 0), "processes")), 2);
	json_decref(doc);
}

Test(flow, text_names_the_other_vms_guest_thread)
{
	struct run *r = malloc(sizeof(*r));
	const char *sht = two_vms();

	cr_assert_not_null(r);
	RUN(r, "report", sht, "--flow", "vm1:345");
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "flow of thread vm1:345 (critical_task, guest thread)"), "%s", r->out);
	cr_assert(strstr(r->out, "host run queue   vm2: cc (guest tid 77)"), "%s", r->out);
	cr_assert(strstr(r->out, "guest run queue  vm1: cc (guest tid 346)"), "%s", r->out);
	cr_assert(strstr(r->out, "hypervisor       host: hypervisor of vm1 vCPU 0 (tid 1001)"), "%s", r->out);
	cr_assert(strstr(r->out, "intervals (11):"), "%s", r->out);
	cr_assert(strstr(r->out, "    cc (guest tid 77)"), "%s", r->out);
	cr_assert(strstr(r->out, " 11.00%"), "%s", r->out); /* D(vm2 cc) = 550 / 5000 */
	RUN(r, "report", sht, "--flow", "vm1:345", "--min-impact", "0.12");
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(!strstr(r->out, "    cc (guest tid 77)"), "%s", r->out);
	cr_assert(strstr(r->out, "(3 culprits under --min-impact 0.12: 750ns, 15.00%)"), "%s", r->out);
	free(r);
}

static void expect_usage_error(const char *sht, const char *thread, const char *extra, const char *needle)
{
	struct run *r = malloc(sizeof(*r));

	cr_assert_not_null(r);
	if (extra)
		RUN(r, "report", sht, "--flow", thread, "--min-impact", extra);
	else
		RUN(r, "report", sht, "--flow", thread);
	cr_assert_eq(r->status, 2, "--flow %s: exit %d: %s", thread, r->status, r->err);
	cr_assert(strstr(r->err, needle), "--flow %s: %s", thread, r->err);
	cr_assert_eq(r->out[0], 0, "--flow %s printed: %s", thread, r->out);
	free(r);
}

Test(flow, unknown_or_malformed_thread_is_a_usage_error)
{
	const char *sht = two_vms();
	char named[512];

	snprintf(named, sizeof(named), "%s: --flow 9999: no thread 9999", sht);
	expect_usage_error(sht, "9999", NULL, named);
	expect_usage_error(sht, "vm1:9999", NULL, "VM vm1 has no guest thread 9999");
	expect_usage_error(sht, "vm9:345", NULL, "no VM 'vm9'");
	expect_usage_error(sht, "vm1:abc", NULL, "'abc' is not a guest thread id");
	expect_usage_error(sht, ":345", NULL, "the VM's name before ':' is missing");
	expect_usage_error(sht, "12x", NULL, "not a thread");
	expect_usage_error(sht, "0", NULL, "not a thread");
	{ /* a 100 kB argument: its start and length echoed, and what is wrong with it (issue 40) */
		static char big[100003] = "vm1:";
		struct run *r = malloc(sizeof(*r));

		cr_assert_not_null(r);
		memset(big + 4, 'a', sizeof(big) - 5);
		expect_usage_error(sht, big + 4, NULL, "... (99998 bytes): not a thread: give a host thread id");
		expect_usage_error(sht, big, NULL, "... (99998 bytes)' is not a guest thread id");
		RUN(r, "report", sht, "--flow", big);
		cr_assert_lt(strlen(r->err), 400, "%zu bytes of error", strlen(r->err));
		free(r);
	}
	expect_usage_error(sht, "vm1:345", "1.5", "--min-impact 1.5");
	expect_usage_error(sht, "vm1:345", "x", "--min-impact x");
	{
		struct run *r = malloc(sizeof(*r));

		cr_assert_not_null(r);
		RUN(r, "report", sht, "--flow", "vm1:345", "--top", "3");
		cr_assert_eq(r->status, 2, "%s", r->err);
		cr_assert(strstr(r->err, "--top does not go with --flow"), "%s", r->err);
		RUN(r, "report", sht, "--flow", "vm1:345", "--vm", "vm1");
		cr_assert_eq(r->status, 2, "%s", r->err);
		cr_assert(strstr(r->err, "--vm and --cgroup do not go with --flow"), "%s", r->err);
		RUN(r, "report", sht, "--flow", "vm1:345", "--pcpu");
		cr_assert_eq(r->status, 2, "%s", r->err);
		cr_assert(strstr(r->err, "--flow is a view of its own"), "%s", r->err);
		RUN(r, "report", sht, "--min-impact", "0.1");
		cr_assert_eq(r->status, 2, "%s", r->err);
		cr_assert(strstr(r->err, "--min-impact goes with --flow"), "%s", r->err);
		/* a thread that lives only outside the window */
		RUN(r, "report", sht, "--flow", "vm2:77", "--to", "400");
		cr_assert_eq(r->status, 2, "%s", r->err);
		cr_assert(strstr(r->err, "does not live in the window"), "%s", r->err);
		free(r);
	}
}

Test(flow, a_host_tid_in_a_recording_without_host_threads)
{
	struct synth_rec s = { 0 };
	struct sht_reader *r;
	struct flow f;
	const char *sht;

	/* level vcpu: no /host, a vCPU thread still has its states; who ran is unknown */
	set_i(&s, 0, 1000, "/vms/vm1/pid");
	set_i(&s, 0, 1001, "/vms/vm1/vcpus/0/tid");
	vstate(&s, 0, "vm1", 0, VCPU_GUEST, 0);
	vstate(&s, 100, "vm1", 0, VCPU_PREEMPTED, 0);
	vstate(&s, 300, "vm1", 0, VCPU_GUEST, 0);
	sht = synth_write(&s, "level-vcpu", 400);
	r = open_sht(sht);
	flow_of(r, "1001", 0, 400, &f);
	cr_assert(!f.host_cpus);
	cr_assert_eq(f.niv, 3);
	cr_assert_str_eq(who(&f, f.iv[1].culprit), "host/unresolved/0");
	cr_assert_eq(f.ns[FLOW_HOST_RUNQ], 200);
	flow_free(&f);
	sht_close(r);
	expect_usage_error(sht, "77", NULL, "no thread 77");
}

/* ---- on a real import: host and guest ftrace traces through `vcpustat import --guest` ---- */

static uint64_t to_file(const struct import_result *res, uint64_t guest_ns)
{
	struct vcpustat_sync_time t;

	cr_assert_eq(vcpustat_sync_apply(&res->guests[0].sync.transform, guest_ns, &t), 0);
	return t.host_ns - res->start_ns;
}

Test(flow, imported_guest_thread_preempted_by_another_vms_vcpu)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" }, { 2000, "vmB" } };
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .names = names, .nnames = 2, .guests = &guest, .nguests = 1 };
	struct import_result res;
	struct scenario sc;
	struct sht_reader *r;
	struct flow f;
	uint64_t t0, in, out, sleep;
	char *sht;

	make_scenario(&sc, 11);
	o.host = sc.host;
	guest.path = sc.guest;
	sht = imp_run(&o, &res);
	t0 = sc.t0 - res.start_ns;
	in = to_file(&res, sc.g_in);
	out = to_file(&res, sc.g_out);
	sleep = to_file(&res, sc.g_sleep);
	r = open_sht(sht);
	flow_of(r, "vmA:300", 0, sht_get_info(r)->end, &f);
	{
		/*
		 * fib: running; the interrupt exit (hypervisor); vmB's vCPU (no guest
		 * trace: the vCPU itself) takes pCPU 0 while vmA's vCPU is preempted,
		 * vmB's own exits counted as its hypervisor; back through vmA's
		 * hypervisor; the MSR exit; then preempted in the guest by logger, the
		 * guest CPU idle, the halt exit, and the vCPU halted on the host.
		 */
		const struct want_iv want[] = {
			{ in, t0 + 1000 * US, FLOW_RUNNING, "-" },
			{ t0 + 1000 * US, t0 + 1002 * US, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
			/* vmB's vCPU before its first kvm_entry: no state yet, the vCPU itself */
			{ t0 + 1002 * US, t0 + 3000 * US, FLOW_HOST_RUNQ, "vmB/vcpu/2001/0" },
			{ t0 + 3000 * US, t0 + 3001 * US, FLOW_HOST_RUNQ, "host/hypervisor/2001/0" },
			{ t0 + 3001 * US, t0 + 3002 * US, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
			{ t0 + 3002 * US, t0 + 5000 * US, FLOW_RUNNING, "-" },
			{ t0 + 5000 * US, t0 + 5010 * US, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
			{ t0 + 5010 * US, out, FLOW_RUNNING, "-" },
			{ out, sleep, FLOW_GUEST_RUNQ, "vmA/thread/301" },
			{ sleep, t0 + 9000 * US, FLOW_GUEST_RUNQ, "vmA/idle/0" },
			{ t0 + 9000 * US, t0 + 9001 * US, FLOW_GUEST_RUNQ, "host/hypervisor/1001/0" },
			{ t0 + 9001 * US, f.end, FLOW_GUEST_RUNQ, "vmA/idle/0" },
		};

		assert_intervals(&f, want, sizeof(want) / sizeof(want[0]));
	}
	cr_assert_eq(f.start, in);
	cr_assert_str_eq(f.name, "fib");
	cr_assert_eq(f.ns[FLOW_HYPERVISOR], 13 * US); /* as report's lost_hypervisor_ns */
	cr_assert_eq(f.ns[FLOW_HOST_RUNQ], 1999 * US); /* as report's lost_runq_ns */
	assert_culprit(&f, "vmB/vcpu/2001/0", 1998 * US, (double)(1998 * US) / (double)(f.end - f.start));
	assert_culprit(&f, "host/hypervisor/2001/0", 1 * US, (double)(1 * US) / (double)(f.end - f.start));
	assert_culprit(&f, "vmA/thread/301", sleep - out, (double)(sleep - out) / (double)(f.end - f.start));
	cr_assert_str_eq(culprit_named(&f, "vmA/thread/301")->name, "logger");
	flow_free(&f);
	sht_close(r);
	import_result_free(&res);
	unlink(sht);
	unlink(sc.host);
	unlink(sc.guest);
}

Test(flow, a_thread_that_never_waited_has_no_culprits)
{
	struct synth_rec s = { 0 };
	struct run *r = malloc(sizeof(*r));
	const char *sht;
	json_t *doc;

	cr_assert_not_null(r);
	host_thread(&s, 100, 100, "alone");
	hstate(&s, 0, 100, "running");
	on_cpu(&s, 0, 0, 100);
	hstate(&s, 700, 100, "blocked");
	on_cpu(&s, 700, 0, 0);
	sht = synth_write(&s, "alone", 1000);
	RUN(r, "report", sht, "--flow", "100");
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, "intervals (2):"), "%s", r->out);
	cr_assert(strstr(r->out, "  nobody\n"), "%s", r->out);
	doc = flow_json_run(sht, "100", NULL);
	cr_assert_eq(json_array_size(json_object_get(json_object_get(doc, "flow"), "tree")), 0);
	cr_assert_eq(json_array_size(json_object_get(json_object_get(doc, "flow"), "culprits")), 0);
	cr_assert_eq(jint(json_object_get(json_object_get(doc, "flow"), "time_ns"), "running"), 700);
	cr_assert_eq(jint(json_object_get(json_object_get(doc, "flow"), "time_ns"), "blocked"), 300);
	json_decref(doc);
	free(r);
}

/* A software KVM (no kvm_entry/kvm_exit): "host" is on a CPU in either mode, never the hypervisor. */
Test(flow, without_kvm_entry_host_state_is_on_cpu_not_hypervisor)
{
	struct synth_rec s = { 0 };
	struct sht_reader *r;
	struct flow f;
	static const struct want_iv vcpu_want[] = {
		{ 0, 1000, FLOW_RUNNING, "-" },
		{ 1000, 1500, FLOW_HOST_RUNQ, "host/thread/100" },
		{ 1500, 2000, FLOW_RUNNING, "-" },
	};
	static const struct want_iv worker_want[] = {
		{ 1000, 1500, FLOW_RUNNING, "-" },
		{ 1500, 2000, FLOW_HOST_RUNQ, "pvm/vcpu/1001/0" },
	};

	host_thread(&s, 100, 100, "worker");
	vm(&s, "pvm", 1000);
	vcpu(&s, "pvm", 1000, 0, 1001);
	vstate(&s, 0, "pvm", 0, VCPU_HOST, 0);
	on_cpu(&s, 0, 0, 1001);
	hstate(&s, 1000, 100, "running");
	vstate(&s, 1000, "pvm", 0, VCPU_PREEMPTED, 0);
	on_cpu(&s, 1000, 0, 100);
	hstate(&s, 1500, 100, "preempted");
	vstate(&s, 1500, "pvm", 0, VCPU_HOST, 0);
	on_cpu(&s, 1500, 0, 1001);
	hstate(&s, 2000, 100, NULL);
	vstate(&s, 2000, "pvm", 0, VCPU_IDLE, 0);
	on_cpu(&s, 2000, 0, 0);
	r = open_sht(synth_write(&s, "pvm", 3000));
	flow_of(r, "1001", 0, 2000, &f);
	assert_intervals(&f, vcpu_want, sizeof(vcpu_want) / sizeof(vcpu_want[0]));
	cr_assert_eq(f.ns[FLOW_HYPERVISOR], 0);
	flow_free(&f);
	flow_of(r, "100", 0, 3000, &f);
	assert_intervals(&f, worker_want, sizeof(worker_want) / sizeof(worker_want[0]));
	assert_culprit(&f, "pvm/vcpu/1001/0", 500, 0.5);
	flow_free(&f);
	sht_close(r);
}

/*
 * On a real recording (the bundled demo: 2 VMs of 2 vCPUs and a CPU hog on one
 * pCPU, recorded with --level full in the KVM lab): the flows of a VM's vCPU
 * threads, their culprits summed by host thread (a vCPU's guest code and its
 * hypervisor are one thread on the host), are exactly the report's culprit
 * table of that VM: the same time, split by the same rule.
 */
Test(flow, vcpu_flows_sum_to_the_reports_culprits_on_a_real_recording, .timeout = 120)
{
	const char *demo = VCPUSTAT_SOURCE_DIR "/tools/demo/demo.sht";
	struct vcpustat_error err = { 0 };
	struct sht_reader *r = open_sht(demo);
	const struct sht_info *info = sht_get_info(r);
	struct summary s;
	bool culprits;

	cr_assert_eq(report_build(&s, r, info->start, info->end, NULL, &culprits, &err), 0, "%s", err.msg);
	cr_assert(culprits);
	cr_assert_eq(s.nr_vms, 2);
	for (size_t v = 0; v < s.nr_vms; v++) {
		const struct vm_summary *vm = &s.vms[v];
		struct hashmap by_tid;
		uint64_t runq = 0, flows_runq = 0;

		cr_assert_eq(hashmap_init(&by_tid, sizeof(uint32_t), sizeof(uint64_t), 0), 0);
		cr_assert_gt(vm->nr_culprits, 2);
		for (size_t k = 0; k < vm->nr_vcpus; k++) {
			struct flow f;
			char tid[16];

			snprintf(tid, sizeof(tid), "%u", vm->vcpus[k].tid);
			flow_of(r, tid, info->start, info->end, &f);
			cr_assert_eq(f.vcpu, (int)vm->vcpus[k].index);
			cr_assert_eq(f.ns[FLOW_HOST_RUNQ],
				     vm->vcpus[k].ns[VCPU_PREEMPTED] + vm->vcpus[k].ns[VCPU_WAIT]);
			cr_assert_eq(f.ns[FLOW_HYPERVISOR], vm->vcpus[k].ns[VCPU_HOST]);
			cr_assert_eq(f.ns[FLOW_RUNNING], vm->vcpus[k].ns[VCPU_GUEST]);
			flows_runq += f.ns[FLOW_HOST_RUNQ];
			for (size_t i = 0; i < f.niv; i++) {
				const struct flow_culprit *c =
				    f.iv[i].culprit >= 0 ? &f.culprits[f.iv[i].culprit] : NULL;
				uint64_t *ns, zero = 0;

				if (f.iv[i].kind != FLOW_HOST_RUNQ)
					continue;
				cr_assert_not_null(c);
				cr_assert(c->role != FLOW_ROLE_UNRESOLVED, "%s", c->name);
				cr_assert(!(c->in_vm && c->role == FLOW_ROLE_IDLE), "a vCPU on a CPU but halted");
				if (!hashmap_lookup(&by_tid, &c->tid))
					cr_assert_eq(hashmap_insert(&by_tid, &c->tid, &zero), 0);
				ns = hashmap_lookup(&by_tid, &c->tid);
				*ns += f.iv[i].end - f.iv[i].start;
			}
			flow_free(&f);
		}
		cr_assert_eq(by_tid.count, vm->nr_culprits);
		for (size_t k = 0; k < vm->nr_culprits; k++) {
			const uint64_t *ns = hashmap_lookup(&by_tid, &vm->culprits[k].tid);

			cr_assert_not_null(ns, "%s: culprit %u not in the flows", vm->name, vm->culprits[k].tid);
			cr_expect_eq(*ns, vm->culprits[k].ns, "%s: culprit %u: flows %lu ns, report %lu ns", vm->name,
				     vm->culprits[k].tid, (unsigned long)*ns, (unsigned long)vm->culprits[k].ns);
			runq += vm->culprits[k].ns;
		}
		cr_assert_eq(flows_runq, runq);
		hashmap_free(&by_tid);
	}
	summary_free(&s);
	sht_close(r);
}

/*
 * resolve() on CPU 0 goes into 20 vCPUs that each say they wait for another
 * CPU: while it walks CPU 0's intervals, 20 more CPUs are read (the table of
 * CPUs grows under it). Who ran there is named, 50 ns each.
 */
Test(flow, resolve_through_many_cpus)
{
	struct synth_rec s = { 0 };
	struct sht_reader *r;
	struct flow f;

	vm(&s, "vm1", 1000);
	vcpu(&s, "vm1", 1000, 0, 1001);
	vm(&s, "vm2", 2000);
	vstate(&s, 0, "vm1", 0, VCPU_GUEST, 0);
	on_cpu(&s, 0, 0, 1001);
	vstate(&s, 1000, "vm1", 0, VCPU_PREEMPTED, 0);
	for (unsigned int k = 1; k <= 20; k++) {
		char name[16];

		vcpu(&s, "vm2", 2000, k, 2000 + k);
		vstate(&s, 0, "vm2", k, VCPU_PREEMPTED, (int)k);
		snprintf(name, sizeof(name), "hog%u", k);
		host_thread(&s, 500 + k, 500 + k, name);
		on_cpu(&s, 0, k, 500 + k);
		on_cpu(&s, 1000 + 50 * (k - 1), 0, 2000 + k);
	}
	vstate(&s, 2000, "vm1", 0, VCPU_GUEST, 0);
	on_cpu(&s, 2000, 0, 1001);
	vstate(&s, 3000, "vm1", 0, VCPU_IDLE, 0);
	r = open_sht(synth_write(&s, "many-cpus", 3500));
	flow_of(r, "1001", 0, 3500, &f);
	cr_assert_eq(f.niv, 23, "running, 20 hogs, running, blocked");
	cr_assert_eq(f.ns[FLOW_BLOCKED], 500);
	cr_assert_eq(f.nculprits, 20);
	for (unsigned int k = 1; k <= 20; k++) {
		char w[64];

		snprintf(w, sizeof(w), "host/thread/%u", 500 + k);
		cr_assert_str_eq(who(&f, f.iv[k].culprit), w);
		cr_assert_eq(f.iv[k].start, 1000 + 50 * (k - 1));
		cr_assert_eq(f.iv[k].end, 1000 + 50 * k);
		assert_culprit(&f, w, 50, 50.0 / 3500);
	}
	flow_free(&f);
	sht_close(r);
}

/*
 * The recursion across two VMs through the importer: the scenario above, and
 * a guest trace of vmB too (its own clock: 0.9999 x host + 7 s, synchronized
 * by its own agent on its vCPU 1), in which cc (77) runs on guest CPU 0 from
 * +1500 to +2500 us while vmA's vCPU waits for pCPU 0: --flow vmA:300 names
 * vmB's cc, then vmB's idle task.
 */
Test(flow, imported_two_guests_name_the_other_vms_guest_thread)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" }, { 2000, "vmB" } };
	struct sync_traces agent_b = { .vcpu_pid = 2002, .vm_tgid = 2000, .host_cpu = 2, .vcpu = 1, .agent_pid = 901,
				       .guest_cpu = 1, .key0 = 2ull << 48 };
	struct import_guest guests[2] = { { "vmA", NULL }, { "vmB", NULL } };
	struct import_opts o = { .names = names, .nnames = 2, .guests = guests, .nguests = 2 };
	struct import_result res;
	struct scenario sc;
	struct synth pb = synth_default(12);
	struct tev *h = NULL, *g = NULL;
	size_t nh = 0, ng = 0;
	struct sht_reader *r;
	struct flow f;
	uint64_t t0, cc_in, cc_out, g_in, g_out;
	char *guest_b, *sht;

	/* vmB's sync rounds (host side) join the scenario's host trace */
	pb.alpha = 0.9999L;
	pb.beta = 7e9L;
	sync_tevs(&pb, &agent_b, &h, &nh, &g, &ng);
	make_scenario_plus(&sc, 11, h, nh);
	g = realloc(g, (ng + 2) * sizeof(*g));
	g_in = (uint64_t)llroundl(synth_guest(&pb, (long double)(sc.t0 + 1500 * US)));
	g_out = (uint64_t)llroundl(synth_guest(&pb, (long double)(sc.t0 + 2500 * US)));
	g[ng++] = guest_sw(g_in, 0, "swapper/0", "R", 77, "cc");
	g[ng++] = guest_sw(g_out, 77, "cc", "S", 0, "swapper/0");
	tev_sort(g, ng);
	guest_b = imp_write_trace(g, ng, &nine);
	free(h);
	free(g);
	o.host = sc.host;
	guests[0].path = sc.guest;
	guests[1].path = guest_b;
	sht = imp_run(&o, &res);
	cr_assert_eq(res.nguests, 2);
	cr_assert_eq(res.guests[1].sync.quality, VCPUSTAT_SYNC_ACCURATE);
	t0 = sc.t0 - res.start_ns;
	{ /* vmB's guest times on the host's timeline, through its transform */
		struct vcpustat_sync_time a, b;

		cr_assert_eq(vcpustat_sync_apply(&res.guests[1].sync.transform, g_in, &a), 0);
		cr_assert_eq(vcpustat_sync_apply(&res.guests[1].sync.transform, g_out, &b), 0);
		cc_in = a.host_ns - res.start_ns;
		cc_out = b.host_ns - res.start_ns;
	}
	/* within the transform's error of when cc ran */
	cr_assert_lt(llabs((long long)cc_in - (long long)(t0 + 1500 * US)), 1000);
	cr_assert_lt(llabs((long long)cc_out - (long long)(t0 + 2500 * US)), 1000);
	r = open_sht(sht);
	flow_of(r, "vmA:300", 0, sht_get_info(r)->end, &f);
	{
		const struct want_iv want[] = {
			{ f.start, t0 + 1000 * US, FLOW_RUNNING, "-" },
			{ t0 + 1000 * US, t0 + 1002 * US, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
			/* vmB's vCPU: before its first kvm_entry, then in guest mode before its guest's first switch */
			{ t0 + 1002 * US, cc_in, FLOW_HOST_RUNQ, "vmB/vcpu/2001/0" },
			{ cc_in, cc_out, FLOW_HOST_RUNQ, "vmB/thread/77" }, /* resolve(): into vmB, its guest thread */
			{ cc_out, t0 + 3000 * US, FLOW_HOST_RUNQ, "vmB/idle/0" },
			{ t0 + 3000 * US, t0 + 3001 * US, FLOW_HOST_RUNQ, "host/hypervisor/2001/0" },
			{ t0 + 3001 * US, t0 + 3002 * US, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
			{ t0 + 3002 * US, t0 + 5000 * US, FLOW_RUNNING, "-" },
			{ t0 + 5000 * US, t0 + 5010 * US, FLOW_HYPERVISOR, "host/hypervisor/1001/0" },
		};

		assert_prefix(&f, want, sizeof(want) / sizeof(want[0]));
	}
	flow_free(&f);
	sht_close(r);
	import_result_free(&res);
	unlink(sht);
	unlink(sc.host);
	unlink(sc.guest);
	unlink(guest_b);
}
