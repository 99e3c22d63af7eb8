// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Live and offline agree by construction: random event sequences go through
 * the kernel (injection program) and through user-space replay; the record
 * streams and every map must be identical, byte for byte.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "helpers.h"
#include "live/live.h"
#include "record/record.h"

#define MAX_RECS 200000

struct rec_log {
	struct vcpustat_record *r;
	size_t n;
};

static int log_record(void *ctx, const struct vcpustat_record *r)
{
	struct rec_log *l = ctx;

	if (l->n < MAX_RECS)
		l->r[l->n++] = *r;
	return 0;
}

/* A random but plausible event: a few VMs, vCPU threads, other threads, two CPUs. */
static void random_event(unsigned int *seed, __u64 *ts, struct vcpustat_event *ev)
{
	static const __u32 tids[] = { 101, 102, 103, 201, 202, 900, 901, 0 };
	__u32 tid = tids[rand_r(seed) % 8], tid2 = tids[rand_r(seed) % 8];
	int r = rand_r(seed) % 115;

	memset(ev, 0, sizeof(*ev));
	*ts += (__u64)(rand_r(seed) % 5000);
	ev->ts = *ts - (rand_r(seed) % 10 == 0 ? (__u64)(rand_r(seed) % 300) : 0); /* some out of order */
	ev->cpu = (__u64)(rand_r(seed) % 2);
	ev->tid = tid;
	ev->tgid = tid / 100 * 100;
	snprintf(ev->comm, sizeof(ev->comm), tid % 3 ? "CPU %u/KVM" : "worker%u", tid % 100);
	if (r < 30) {
		ev->type = VCPUSTAT_EV_SWITCH;
		ev->tid2 = tid2;
		ev->tgid2 = tid2 / 100 * 100;
		ev->arg0 = (__u64)(rand_r(seed) % 3); /* running, S, D */
		ev->arg1 = (__u64)(rand_r(seed) % 2);
		ev->arg2 = 1000 + tid;
	} else if (r < 40) {
		ev->type = rand_r(seed) % 4 ? VCPUSTAT_EV_WAKEUP : VCPUSTAT_EV_WAKEUP_NEW;
		ev->arg0 = (__u64)(rand_r(seed) % 2);
	} else if (r < 45) {
		ev->type = VCPUSTAT_EV_MIGRATE;
		ev->arg0 = (__u64)(rand_r(seed) % 2);
	} else if (r < 60) {
		ev->type = VCPUSTAT_EV_KVM_ENTRY;
		ev->arg0 = rand_r(seed) % 4 ? tid % 100 : 0xffffffffu;
	} else if (r < 78) {
		static const __u32 reasons[] = { VMX_EXIT_HLT, VMX_EXIT_MSR_WRITE, 30, 48, 1 };

		ev->type = VCPUSTAT_EV_KVM_EXIT;
		ev->arg0 = reasons[rand_r(seed) % 5];
		ev->arg1 = rand_r(seed) % 5 ? KVM_ISA_VMX : KVM_ISA_SVM;
		ev->arg2 = rand_r(seed) % 4 ? tid % 100 : 0xffffffffu;
		if (rand_r(seed) % 2)
			ev->arg2 |= VCPUSTAT_EXIT_GSYS; /* from guest kernel mode */
	} else if (r < 88) {
		static const __u32 ureasons[] = { KVM_UEXIT_IO, KVM_UEXIT_HLT, KVM_UEXIT_MMIO, KVM_UEXIT_INTR };

		ev->type = VCPUSTAT_EV_USERSPACE_EXIT;
		ev->arg0 = ureasons[rand_r(seed) % 4];
	} else if (r < 96) {
		ev->type = VCPUSTAT_EV_KVM_RUN;
	} else if (r < 97) {
		ev->type = VCPUSTAT_EV_SEED;
		ev->arg0 = rand_r(seed) % 3 ? tid % 100 : 0xffffffffu;
	} else if (r < 98) {
		ev->type = VCPUSTAT_EV_HYPERCALL;
		ev->arg0 = rand_r(seed) % 2 ? VCPUSTAT_SYNC_HYPERCALL_NR : 3;
		ev->arg1 = (__u64)rand_r(seed) << 20;
	} else if (r < 100) {
		ev->type = VCPUSTAT_EV_PROCESS_EXIT;
		ev->arg0 = (__u64)(rand_r(seed) % 2);
	} else if (r >= 112) {
		/* a VMM thread found by user space: other threads, or a vCPU not seen yet (it becomes one) */
		ev->type = VCPUSTAT_EV_VMM_SEED;
		ev->tgid = 100 * (1 + (__u32)(rand_r(seed) % 2));
		ev->arg0 = (__u64)(rand_r(seed) % 2);
	} else {
		/* exit details: a few ports, addresses, MSRs and pages, so that the small tables overflow */
		static const __u64 types[] = { VCPUSTAT_EV_PIO, VCPUSTAT_EV_MMIO, VCPUSTAT_EV_MSR, VCPUSTAT_EV_PAGE_FAULT };

		ev->type = types[rand_r(seed) % 4];
		ev->arg0 = (__u64)(rand_r(seed) % 6) << (ev->type == VCPUSTAT_EV_PAGE_FAULT ? 12 : 4);
		ev->arg1 = (__u64)(rand_r(seed) % 0x20);
		ev->arg2 = 4;
	}
}

static int cmp_u32_at0(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static int cmp_vcpu(const void *a, const void *b)
{
	const struct vcpustat_vcpu *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_vmm(const void *a, const void *b)
{
	const struct vcpustat_vmm_thread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_place(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct vcpustat_place_key));
}

static int cmp_hist(const void *a, const void *b)
{
	return memcmp(&((const struct vcpustat_hist_entry *)a)->key, &((const struct vcpustat_hist_entry *)b)->key,
		      sizeof(struct vcpustat_hist_key));
}

static int cmp_culprit(const void *a, const void *b)
{
	return memcmp(&((const struct vcpustat_culprit_entry *)a)->key,
		      &((const struct vcpustat_culprit_entry *)b)->key, sizeof(struct vcpustat_culprit_key));
}

static int cmp_detail(const void *a, const void *b)
{
	return memcmp(&((const struct vcpustat_detail_entry *)a)->key, &((const struct vcpustat_detail_entry *)b)->key,
		      sizeof(struct vcpustat_detail_key));
}

static void assert_same_snapshots(struct vcpustat_snapshot *a, struct vcpustat_snapshot *b, int round)
{
	cr_assert_eq(a->nr_vcpus, b->nr_vcpus, "round %d: vcpus", round);
	cr_assert_eq(a->nr_dead, b->nr_dead, "round %d: dead", round);
	cr_assert_eq(a->nr_vms, b->nr_vms, "round %d: vms", round);
	cr_assert_eq(a->nr_hists, b->nr_hists, "round %d: hists", round);
	cr_assert_eq(a->nr_culprits, b->nr_culprits, "round %d: culprits", round);
	cr_assert_eq(a->nr_details, b->nr_details, "round %d: exit details", round);
	cr_assert_eq(a->nr_vmm, b->nr_vmm, "round %d: VMM threads", round);
	qsort(a->vmm, a->nr_vmm, sizeof(*a->vmm), cmp_vmm);
	qsort(b->vmm, b->nr_vmm, sizeof(*b->vmm), cmp_vmm);
	cr_assert_eq(memcmp(a->vmm, b->vmm, a->nr_vmm * sizeof(*a->vmm)), 0, "round %d: VMM threads differ", round);
	cr_assert_eq(a->nr_places, b->nr_places, "round %d: (VM, CPU) places", round);
	qsort(a->places, a->nr_places, sizeof(*a->places), cmp_place);
	qsort(b->places, b->nr_places, sizeof(*b->places), cmp_place);
	cr_assert_eq(memcmp(a->places, b->places, a->nr_places * sizeof(*a->places)), 0, "round %d: places differ",
		     round);
	qsort(a->details, a->nr_details, sizeof(*a->details), cmp_detail);
	qsort(b->details, b->nr_details, sizeof(*b->details), cmp_detail);
	cr_assert_eq(memcmp(a->details, b->details, a->nr_details * sizeof(*a->details)), 0,
		     "round %d: exit details differ", round);
	qsort(a->vcpus, a->nr_vcpus, sizeof(*a->vcpus), cmp_vcpu);
	qsort(b->vcpus, b->nr_vcpus, sizeof(*b->vcpus), cmp_vcpu);
	qsort(a->dead, a->nr_dead, sizeof(*a->dead), cmp_vcpu);
	qsort(b->dead, b->nr_dead, sizeof(*b->dead), cmp_vcpu);
	qsort(a->vms, a->nr_vms, sizeof(*a->vms), cmp_u32_at0);
	qsort(b->vms, b->nr_vms, sizeof(*b->vms), cmp_u32_at0);
	qsort(a->hists, a->nr_hists, sizeof(*a->hists), cmp_hist);
	qsort(b->hists, b->nr_hists, sizeof(*b->hists), cmp_hist);
	qsort(a->culprits, a->nr_culprits, sizeof(*a->culprits), cmp_culprit);
	qsort(b->culprits, b->nr_culprits, sizeof(*b->culprits), cmp_culprit);
	for (size_t i = 0; i < a->nr_vcpus; i++) {
		cr_assert_eq(memcmp(&a->vcpus[i], &b->vcpus[i], sizeof(a->vcpus[i])), 0, "round %d: vCPU %u differs",
			     round, a->vcpus[i].tid);
	}
	for (size_t i = 0; i < a->nr_dead; i++) {
		cr_assert_eq(memcmp(&a->dead[i], &b->dead[i], sizeof(a->dead[i])), 0, "round %d: dead vCPU", round);
	}
	cr_assert_eq(memcmp(a->vms, b->vms, a->nr_vms * sizeof(*a->vms)), 0, "round %d: vms differ", round);
	cr_assert_eq(memcmp(a->hists, b->hists, a->nr_hists * sizeof(*a->hists)), 0, "round %d: hists differ", round);
	cr_assert_eq(memcmp(a->culprits, b->culprits, a->nr_culprits * sizeof(*a->culprits)), 0,
		     "round %d: culprits differ", round);
	cr_assert_eq(memcmp(a->lost, b->lost, sizeof(a->lost)), 0, "round %d: lost", round);
}

Test(replay, kernel_and_user_space_replay_are_identical, .timeout = 120)
{
	/* small exit-detail tables: the "other" rows and their losses must match too */
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_FULL, .ringbuf_bytes = 64u << 20, .max_details = 24 };
	struct rec_log live = { calloc(MAX_RECS, sizeof(struct vcpustat_record)), 0 };
	struct rec_log offline = { calloc(MAX_RECS, sizeof(struct vcpustat_record)), 0 };
	struct replay_options ro = { .record_level = VCPUSTAT_LEVEL_FULL, .on_record = log_record, .ctx = &offline,
				     .max_details = 24 };
	struct vcpustat_snapshot a, b;
	struct ring_buffer *rb;
	struct replay *rp;
	struct vcpustat *vs;
	unsigned int seed = 20261122;
	__u64 ts = 1000000;
	size_t events = 0;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_eq(vcpustat_open(&vs, &o), 0);
	ro.nr_cpus = (unsigned int)libbpf_num_possible_cpus();
	cr_assert_eq(replay_new(&rp, &ro), 0);
	{
		struct vcpustat_consumer c = { .on_record = log_record, .ctx = &live };

		rb = vcpustat_ring_buffer(vs, &c);
	}
	cr_assert_not_null(rb);

	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 2000; i++, events++) {
			struct vcpustat_event ev;

			random_event(&seed, &ts, &ev);
			cr_assert_eq(vcpustat_inject(vs, &ev), 0);
			cr_assert_eq(replay_event(rp, &ev), 0);
		}
		cr_assert_geq(vcpustat_drain(rb, 0), 0);
		cr_assert_eq(vcpustat_snapshot(vs, &a), 0);
		cr_assert_eq(replay_snapshot(rp, &b), 0);
		assert_same_snapshots(&a, &b, round);
		if (round == 19) {
			size_t other = 0;

			for (size_t i = 0; i < a.nr_details; i++)
				other += a.details[i].key.addr == VCPUSTAT_DETAIL_OTHER;
			cr_log_info("%zu exit-detail rows, %zu of them \"other\"; %llu samples lost", a.nr_details, other,
				    (unsigned long long)a.lost[VCPUSTAT_LOST_DETAIL_FULL]);
			cr_assert_gt(a.nr_details, 10, "the sequence exercises the exit details");
			cr_assert_gt(other, 0, "and fills their tables");
			{
				__u64 vmm_ns = 0;
				size_t vmm_culprits = 0;

				for (size_t i = 0; i < a.nr_vms; i++)
					vmm_ns += a.vms[i].vmm_run_ns[0] + a.vms[i].vmm_run_ns[1] +
						  a.vms[i].vmm_wait_ns[0] + a.vms[i].vmm_wait_ns[1];
				for (size_t i = 0; i < a.nr_culprits; i++)
					vmm_culprits += !!(a.culprits[i].key.vm_tgid & VCPUSTAT_CULPRIT_VMM);
				cr_log_info("%zu VMM threads, %llu ns of their time, %zu culprits of theirs", a.nr_vmm,
					    (unsigned long long)vmm_ns, vmm_culprits);
				cr_assert_gt(vmm_ns, 0, "the sequence exercises the VMM threads");
				cr_assert_gt(vmm_culprits, 0, "and their culprits");
				cr_assert_gt(a.nr_places, 0, "and where the vCPUs ran");
			}
		}
		vcpustat_snapshot_free(&a);
		vcpustat_snapshot_free(&b);
	}
	cr_assert_eq(live.n, offline.n, "%zu records live, %zu offline", live.n, offline.n);
	cr_assert_lt(live.n, MAX_RECS);
	for (size_t i = 0; i < live.n; i++)
		cr_assert_eq(memcmp(&live.r[i], &offline.r[i], sizeof(live.r[i])), 0, "record %zu differs", i);
	cr_log_info("%zu events, %zu identical records", events, live.n);
	cr_assert_gt(live.n, events / 4, "the sequence exercises the handler");

	ring_buffer__free(rb);
	replay_free(rp);
	vcpustat_close(vs);
	free(live.r);
	free(offline.r);
}

/* Each key a live recording writes is one a user's --meta may not take (record_meta_live_keys). */
Test(replay, every_key_a_live_recording_writes_is_reserved)
{
	static struct record_meta user, m;
	char *argv[] = { "record", "-o", "x.sht", NULL };

	cr_assert_eq(record_meta_add(&user, "workload", "w"), 0);
	record_meta_live(&m, VCPUSTAT_LEVEL_VCPU, 3, argv, &user);
	cr_assert_gt(m.n, 5, "host, kernel, tool, command, level, culprits at least: %zu keys", m.n);
	for (size_t i = 0; i < m.n; i++) {
		bool reserved = record_meta_reserved(m.key[i], record_meta_live_keys);

		cr_expect(reserved == (strcmp(m.key[i], "workload") != 0), "%s: %s", m.key[i],
			  reserved ? "the user's, yet reserved" : "written by record, not reserved");
	}
	cr_expect(record_meta_reserved("cpus", record_meta_live_keys), "the capture's cpus key is reserved too");
	cr_expect(record_meta_reserved("topology.anything", record_meta_live_keys), "topology. is a prefix");
	cr_expect(!record_meta_reserved("topology", record_meta_live_keys), "the prefix alone is no key of it");
}
