// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The culprits of a level-vcpu recording: who runs on a CPU while tracked
 * threads wait there (REC_RUNNER, /host/cpus/<n>/runner_tid), without every
 * switch of the host. Random but consistent schedules of two CPUs (each
 * switch's prev is the thread that CPU ran; a wakeup and a pull see the
 * thread running where they queue) are replayed at both levels: the
 * level-vcpu file must charge every vCPU's waiting to the same threads, ns
 * for ns, as the level-full file (the thread on the CPU at every switch),
 * for the whole file and for random windows, and account for all of it.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "import_helpers.h"
#include "model/summary.h"
#include "model/report.h"
#include "record/record.h"
#include "sht/sht.h"

#define MONO0 5000000000000ull
#define REAL0 1795356187000000000ull
#define NR_CPUS 2

enum th_state { TH_SLEEP, TH_RUN, TH_QUEUED };

struct th {
	__u32 tid, tgid;
	short vcpu; /* its index, -1: no vCPU (a short: "CPU %hd/KVM" fits the event's comm) */
	enum th_state st;
	int cpu;
};

struct sched {
	struct th th[7];
	__u32 curr[NR_CPUS]; /* tid, 0: idle */
	struct vcpustat_event *ev;
	size_t n, cap;
	__u64 t;
	unsigned int seed;
};

static struct th *th_of(struct sched *s, __u32 tid)
{
	for (size_t i = 0; i < sizeof(s->th) / sizeof(s->th[0]); i++)
		if (s->th[i].tid == tid)
			return &s->th[i];
	return NULL;
}

static struct vcpustat_event *ev_new(struct sched *s, __u64 type, int cpu, const struct th *t)
{
	struct vcpustat_event *e;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->ev = realloc(s->ev, s->cap * sizeof(*s->ev));
		cr_assert_not_null(s->ev);
	}
	e = &s->ev[s->n++];
	memset(e, 0, sizeof(*e));
	s->t += 1 + (__u64)(rand_r(&s->seed) % 3000);
	e->type = type;
	e->ts = MONO0 + s->t;
	e->cpu = (__u64)cpu;
	if (t) {
		e->tid = t->tid;
		e->tgid = t->tgid;
		if (t->vcpu >= 0)
			snprintf(e->comm, sizeof(e->comm), "CPU %hd/KVM", t->vcpu);
		else
			snprintf(e->comm, sizeof(e->comm), "worker%u", t->tid);
	}
	return e;
}

/* cpu switches from what it runs to next (a thread queued there, or idle); prev preempted or asleep. */
static void do_switch(struct sched *s, int cpu, struct th *next, bool preempt)
{
	struct th *prev = th_of(s, s->curr[cpu]);
	struct vcpustat_event *e = ev_new(s, VCPUSTAT_EV_SWITCH, cpu, prev);

	e->tid2 = next ? next->tid : 0;
	e->tgid2 = next ? next->tgid : 0;
	e->arg0 = prev && !preempt ? 1 : 0; /* TASK_INTERRUPTIBLE, or running */
	e->arg1 = prev && preempt;
	e->arg2 = 1; /* prev's cgroup id */
	if (prev) {
		prev->st = preempt ? TH_QUEUED : TH_SLEEP;
		prev->cpu = cpu;
	}
	if (next) {
		next->st = TH_RUN;
		next->cpu = cpu;
	}
	s->curr[cpu] = next ? next->tid : 0;
}

static struct th *pick(struct sched *s, enum th_state st, int cpu, __u32 not)
{
	struct th *c[7];
	size_t n = 0;

	for (size_t i = 0; i < 7; i++)
		if (s->th[i].st == st && (cpu < 0 || s->th[i].cpu == cpu) && s->th[i].tid != not)
			c[n++] = &s->th[i];
	return n ? c[rand_r(&s->seed) % n] : NULL;
}

static void schedule(struct sched *s, unsigned int seed, size_t steps)
{
	/* cpu -1: not on a CPU yet (its first wakeup moves it to one) */
	static const struct th init[7] = { { 101, 100, 0, TH_SLEEP, -1 },  { 102, 100, 1, TH_SLEEP, -1 },
					    { 201, 200, 0, TH_SLEEP, -1 },  { 900, 900, -1, TH_SLEEP, -1 },
					    { 901, 901, -1, TH_SLEEP, -1 }, { 902, 902, -1, TH_SLEEP, -1 },
					    { 903, 903, -1, TH_SLEEP, -1 } };

	memset(s, 0, sizeof(*s));
	memcpy(s->th, init, sizeof(init));
	s->seed = seed;
	for (int i = 0; i < 3; i++) { /* user space found the VMs' vCPUs */
		struct vcpustat_event *e = ev_new(s, VCPUSTAT_EV_SEED, 0, &s->th[i]);

		e->arg0 = (__u64)s->th[i].vcpu;
	}
	/* both CPUs run a thread: at level full, who runs is known from here on */
	s->th[3].st = s->th[4].st = TH_QUEUED;
	s->th[3].cpu = 0;
	s->th[4].cpu = 1;
	do_switch(s, 0, &s->th[3], false);
	do_switch(s, 1, &s->th[4], false);
	while (s->n < steps) {
		int r = rand_r(&s->seed) % 100, cpu = rand_r(&s->seed) % NR_CPUS;
		struct th *t;

		if (r < 45) {
			/* a switch: to a thread queued there, else idle */
			bool preempt = rand_r(&s->seed) % 2;

			t = pick(s, TH_QUEUED, cpu, s->curr[cpu]);
			if (!t && !s->curr[cpu])
				continue;
			do_switch(s, cpu, t, preempt);
		} else if (r < 75) {
			/*
			 * A wakeup, on the waker's CPU, seeing the thread on its
			 * target; to another CPU than the thread's last, the
			 * kernel moves it first (set_task_cpu: sched_migrate_task).
			 */
			struct vcpustat_event *e;
			int waker = rand_r(&s->seed) % NR_CPUS;

			t = pick(s, TH_SLEEP, -1, 0);
			if (!t)
				continue;
			if (t->cpu != cpu) {
				e = ev_new(s, VCPUSTAT_EV_MIGRATE, waker, t);
				e->arg0 = (__u64)cpu;
				e->arg1 = (__u64)(t->cpu < 0 ? 1 - cpu : t->cpu);
				t->cpu = cpu;
			}
			e = ev_new(s, rand_r(&s->seed) % 5 ? VCPUSTAT_EV_WAKEUP : VCPUSTAT_EV_WAKEUP_NEW, waker, t);
			e->arg0 = (__u64)cpu;
			e->tid2 = s->curr[cpu];
			e->tgid2 = s->curr[cpu] ? th_of(s, s->curr[cpu])->tgid : 0;
			e->arg2 = VCPUSTAT_RUNNER_KNOWN;
			t->st = TH_QUEUED;
			t->cpu = cpu;
		} else if (r < 85) {
			/* cpu's load balancer pulls a thread queued on the other one */
			struct vcpustat_event *e;

			t = pick(s, TH_QUEUED, 1 - cpu, 0);
			if (!t)
				continue;
			e = ev_new(s, VCPUSTAT_EV_MIGRATE, cpu, t);
			e->arg0 = (__u64)cpu;
			e->arg1 = (__u64)(1 - cpu);
			e->tid2 = s->curr[cpu];
			e->tgid2 = s->curr[cpu] ? th_of(s, s->curr[cpu])->tgid : 0;
			e->arg2 = VCPUSTAT_RUNNER_KNOWN;
			t->cpu = cpu;
		} else {
			/* a running vCPU enters or leaves its guest */
			struct vcpustat_event *e;

			t = th_of(s, s->curr[cpu]);
			if (!t || t->vcpu < 0)
				continue;
			if (r < 93) {
				e = ev_new(s, VCPUSTAT_EV_KVM_ENTRY, cpu, t);
				e->arg0 = (__u64)t->vcpu;
			} else {
				e = ev_new(s, VCPUSTAT_EV_KVM_EXIT, cpu, t);
				e->arg0 = 30;
				e->arg1 = KVM_ISA_VMX;
				e->arg2 = (__u64)t->vcpu;
			}
		}
	}
}

/* The schedule's capture replayed at a level: the file's path. */
static char *replay_at(const struct sched *s, const char *level)
{
	struct vcpustat_error err = { 0 };
	struct capture_writer *w;
	char *cap = imp_tmp(".vcap"), *sht = imp_tmp(".sht"), meta[64], args[512], out[4096];

	snprintf(meta, sizeof(meta), "level=%s\ncpus=%d\n", level, NR_CPUS);
	cr_assert_eq(capture_create(&w, cap, MONO0, REAL0, meta, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < s->n; i++)
		cr_assert_eq(capture_write(w, &s->ev[i], &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_end(w, MONO0 + s->t + 1000, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	snprintf(args, sizeof(args), "replay -q %s -o %s", cap, sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	unlink(cap);
	return sht;
}

static void build(const char *sht, uint64_t t1, uint64_t t2, struct summary *s, bool *culprits)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(s, r, t1, t2, NULL, culprits, &err), 0, "%s", err.msg);
	sht_close(r);
}

static __u64 culprit_ns(const struct culprit_summary *c, size_t n, __u32 tid)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].tid == tid)
			return c[i].ns;
	return 0;
}

/* The same culprits, tid for tid and ns for ns. */
static void same_culprits(const char *what, const struct culprit_summary *a, size_t na,
			  const struct culprit_summary *b, size_t nb)
{
	cr_assert_eq(na, nb, "%s: %zu culprits at level vcpu, %zu at level full", what, na, nb);
	for (size_t i = 0; i < na; i++)
		cr_assert_eq(a[i].ns, culprit_ns(b, nb, a[i].tid), "%s: culprit %u: %llu ns at level vcpu, %llu at full",
			     what, a[i].tid, (unsigned long long)a[i].ns,
			     (unsigned long long)culprit_ns(b, nb, a[i].tid));
}

static void compare_window(const char *vcpu_sht, const char *full_sht, uint64_t t1, uint64_t t2, __u64 *charged)
{
	struct summary a, b;
	bool ca, cb;
	char what[96];

	build(vcpu_sht, t1, t2, &a, &ca);
	build(full_sht, t1, t2, &b, &cb);
	cr_assert(ca && cb, "both files record culprits");
	cr_assert_eq(a.nr_vms, b.nr_vms);
	for (size_t m = 0; m < a.nr_vms; m++) {
		const struct vm_summary *va = &a.vms[m], *vb = &b.vms[m];
		__u64 sum = 0;

		cr_assert_eq(va->tgid, vb->tgid);
		snprintf(what, sizeof(what), "[%llu, %llu) VM %u", (unsigned long long)t1, (unsigned long long)t2,
			 va->tgid);
		cr_assert_eq(va->ns[VCPU_PREEMPTED] + va->ns[VCPU_WAIT], vb->ns[VCPU_PREEMPTED] + vb->ns[VCPU_WAIT],
			     "%s: waiting", what);
		same_culprits(what, va->culprits, va->nr_culprits, vb->culprits, vb->nr_culprits);
		for (size_t c = 0; c < va->nr_culprits; c++)
			sum += va->culprits[c].ns;
		/* every wait is charged: a wakeup and a pull saw who ran where they queued */
		cr_assert_eq(sum, va->ns[VCPU_PREEMPTED] + va->ns[VCPU_WAIT], "%s: %llu ns charged of %llu ns waited",
			     what, (unsigned long long)sum,
			     (unsigned long long)(va->ns[VCPU_PREEMPTED] + va->ns[VCPU_WAIT]));
		*charged += sum;
	}
	summary_free(&a);
	summary_free(&b);
}

/* report --pcpu -j of a file: its "pcpu" object. */
static json_t *pcpu_json_of(const char *sht)
{
	static char out[1 << 18];
	char args[512];
	json_t *doc, *p;

	snprintf(args, sizeof(args), "report %s --pcpu -j", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	doc = json_loads(out, 0, NULL);
	cr_assert_not_null(doc, "%s", out);
	p = json_incref(json_object_get(doc, "pcpu"));
	cr_assert_not_null(p, "%s", out);
	json_decref(doc);
	return p;
}

Test(runners, a_level_vcpu_file_charges_the_waits_as_level_full_does, .timeout = 120)
{
	for (unsigned int seed = 1; seed <= 4; seed++) {
		struct sched s;
		char *vcpu_sht, *full_sht;
		unsigned int w = seed * 7919;
		__u64 charged = 0;

		schedule(&s, seed, 3000);
		vcpu_sht = strdup(replay_at(&s, "vcpu"));
		full_sht = strdup(replay_at(&s, "full"));
		compare_window(vcpu_sht, full_sht, 0, s.t + 1000, &charged);
		cr_assert_gt(charged, 0, "seed %u: the schedule kept vCPUs waiting", seed);
		if (seed == 1) {
			/* the runners are no CPU's whole story: report --pcpu knows idle and host threads at level full only */
			json_t *p = pcpu_json_of(vcpu_sht);

			cr_assert(json_is_false(json_object_get(p, "host_recorded")));
			json_decref(p);
			p = pcpu_json_of(full_sht);
			cr_assert(json_is_true(json_object_get(p, "host_recorded")));
			json_decref(p);
		}
		for (int i = 0; i < 40; i++) {
			uint64_t a = (uint64_t)rand_r(&w) % (s.t + 1000), b = (uint64_t)rand_r(&w) % (s.t + 1000);

			if (a == b)
				continue;
			compare_window(vcpu_sht, full_sht, a < b ? a : b, a < b ? b : a, &charged);
		}
		unlink(vcpu_sht);
		unlink(full_sht);
		free(vcpu_sht);
		free(full_sht);
		free(s.ev);
	}
}
