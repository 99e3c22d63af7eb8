// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* replay.c - include/vcpustat_handler.h over user-space hash tables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "record/record.h"

/* Recent vCPU lookups by tid (most events look up a thread that is not a vCPU, or the same few). */
#define VCACHE 64
struct vcache {
	__u32 tid;
	__u32 valid;
	struct vcpustat_vcpu *v; /* NULL: not a vCPU */
};

struct replay {
	struct replay_options opts;
	struct vcache vcache[VCACHE]; /* emptied whenever the vcpus table changes */
	struct hashmap vcpus, dead, vms, hists, culprits, details, fault_pages, guest_cr3s, vmm, places;
	struct vcpustat_cpu *cpus;
	struct vcpustat_vcpu scratch;
	struct vcpustat_record record;
	__u64 lost[VCPUSTAT_NR_LOST];
	int cb_err;
	__u64 now; /* ts of the event being handled */
};

/* The handler's storage functions see the replay being run. */
static __thread struct replay *cur;

static inline struct vcpustat_vcpu *env_vcpu_lookup(__u32 tid)
{
	struct vcache *c = &cur->vcache[tid % VCACHE];

	if (!c->valid || c->tid != tid) {
		c->tid = tid;
		c->v = hashmap_lookup(&cur->vcpus, &tid);
		c->valid = 1;
	}
	return c->v;
}

static inline int env_vcpu_insert(__u32 tid, const struct vcpustat_vcpu *v)
{
	memset(cur->vcache, 0, sizeof(cur->vcache)); /* an insert may move every entry */
	return hashmap_insert(&cur->vcpus, &tid, v);
}

static inline void env_vcpu_delete(__u32 tid)
{
	memset(cur->vcache, 0, sizeof(cur->vcache));
	hashmap_delete(&cur->vcpus, &tid);
}

static inline int env_dead_insert(__u32 tid, const struct vcpustat_vcpu *v)
{
	return hashmap_update(&cur->dead, &tid, v);
}

static inline struct vcpustat_vm *env_vm_lookup(__u32 tgid)
{
	return hashmap_lookup(&cur->vms, &tgid);
}

static inline int env_vm_insert(__u32 tgid, const struct vcpustat_vm *vm)
{
	return hashmap_insert(&cur->vms, &tgid, vm);
}

/* No row cache here: the vCPU's hist_slot stays 0, as snapshots show it. */
static inline struct vcpustat_hist *env_hist_row(__u32 row, const struct vcpustat_hist_key *k)
{
	(void)row;
	(void)k;
	return NULL;
}

static inline struct vcpustat_hist *env_hist_get(const struct vcpustat_hist_key *k, __u32 *row)
{
	struct vcpustat_hist *h = hashmap_lookup(&cur->hists, k);

	*row = 0;

	if (h || hashmap_insert(&cur->hists, k, NULL))
		return h;
	return hashmap_lookup(&cur->hists, k);
}

static inline struct vcpustat_culprit *env_culprit_get(const struct vcpustat_culprit_key *k,
						       const struct vcpustat_culprit *init)
{
	struct vcpustat_culprit *c = hashmap_lookup(&cur->culprits, k);

	if (c || hashmap_insert(&cur->culprits, k, init))
		return c;
	return hashmap_lookup(&cur->culprits, k);
}

/* Three tables as in the kernel: page faults and address spaces cannot crowd out ports, MMIO and MSRs. */
static inline struct vcpustat_detail *env_detail_get(const struct vcpustat_detail_key *k, bool create)
{
	struct hashmap *m = k->kind == VCPUSTAT_DETAIL_PAGE_FAULT ? &cur->fault_pages :
			    k->kind == VCPUSTAT_DETAIL_CR3	  ? &cur->guest_cr3s :
								    &cur->details;
	struct vcpustat_detail *d = hashmap_lookup(m, k);

	if (d || !create || hashmap_insert(m, k, NULL))
		return d;
	return hashmap_lookup(m, k);
}

static inline struct vcpustat_cpu *env_cpu(__u32 cpu)
{
	return cpu < cur->opts.nr_cpus ? &cur->cpus[cpu] : NULL;
}

static inline struct vcpustat_vcpu *env_scratch_vcpu(void)
{
	return &cur->scratch;
}

static inline struct vcpustat_record *env_record_reserve(void)
{
	return &cur->record;
}

static inline void env_record_submit(struct vcpustat_record *r)
{
	if (cur->opts.on_record && !cur->cb_err)
		cur->cb_err = cur->opts.on_record(cur->opts.ctx, r);
}

static inline void env_lost(__u32 what)
{
	if (what < VCPUSTAT_NR_LOST)
		cur->lost[what]++;
}

static inline void env_current_comm(char comm[16])
{
	memset(comm, 0, 16); /* a replayed event carries its names, or has none */
}

static inline __u64 env_current_cgroup(void)
{
	return 0;
}

static inline __u32 env_record_level(void)
{
	return cur->opts.record_level;
}

static inline void env_vcpu_new(struct vcpustat_vcpu *v)
{
}

static inline void env_vcpu_gone(struct vcpustat_vcpu *v)
{
}

static inline void env_cpu_waiting(__u32 cpu, bool waiting)
{
}

static inline struct vcpustat_vmm_thread *env_vmm_lookup(__u32 tid)
{
	return cur->vmm.count ? hashmap_lookup(&cur->vmm, &tid) : NULL;
}

static inline int env_vmm_insert(__u32 tid, const struct vcpustat_vmm_thread *t)
{
	return hashmap_insert(&cur->vmm, &tid, t);
}

static inline void env_vmm_delete(__u32 tid)
{
	hashmap_delete(&cur->vmm, &tid);
}

static inline void env_tid_tracked(__u32 tid, bool tracked)
{
}

static inline bool env_tid_maybe_tracked(__u32 tid)
{
	return true; /* the lookups in its hash maps answer */
}

static inline const struct vcpustat_cpu_topo *env_cpu_topo(__u32 cpu)
{
	return NULL; /* a replay knows no topology: no placement moves, no SMT siblings */
}

static inline __u64 *env_place_get(const struct vcpustat_place_key *k)
{
	__u64 *ns = hashmap_lookup(&cur->places, k);

	if (!ns && hashmap_insert(&cur->places, k, NULL) == 0)
		ns = hashmap_lookup(&cur->places, k);
	return ns;
}

#include "vcpustat_handler.h"

void replay_free(struct replay *r)
{
	if (!r)
		return;
	hashmap_free(&r->vcpus);
	hashmap_free(&r->dead);
	hashmap_free(&r->vms);
	hashmap_free(&r->hists);
	hashmap_free(&r->culprits);
	hashmap_free(&r->details);
	hashmap_free(&r->fault_pages);
	hashmap_free(&r->guest_cr3s);
	hashmap_free(&r->vmm);
	hashmap_free(&r->places);
	free(r->cpus);
	free(r);
}

/* The kernel's dead_vcpus map: VCPUSTAT_MAX_DEAD, or max_vcpus when that was set. */
static size_t dead_max(const struct replay *r)
{
	return r->opts.max_vcpus != VCPUSTAT_MAX_VCPUS ? r->opts.max_vcpus : VCPUSTAT_MAX_DEAD;
}

int replay_new(struct replay **out, const struct replay_options *opts)
{
	struct replay *r;
	int err = 0;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (opts)
		r->opts = *opts;
	if (!r->opts.nr_cpus)
		r->opts.nr_cpus = 1024;
	if (!r->opts.max_vcpus)
		r->opts.max_vcpus = VCPUSTAT_MAX_VCPUS;
	if (!r->opts.max_vms)
		r->opts.max_vms = VCPUSTAT_MAX_VMS;
	if (!r->opts.max_hists)
		r->opts.max_hists = VCPUSTAT_MAX_HISTS;
	if (!r->opts.max_culprits)
		r->opts.max_culprits = VCPUSTAT_MAX_CULPRITS;
	r->cpus = calloc(r->opts.nr_cpus, sizeof(*r->cpus));
	if (!r->cpus)
		err = -ENOMEM;
	if (!err)
		err = hashmap_init(&r->vcpus, sizeof(__u32), sizeof(struct vcpustat_vcpu), r->opts.max_vcpus);
	if (!err)
		err = hashmap_init(&r->dead, sizeof(__u32), sizeof(struct vcpustat_vcpu), dead_max(r));
	if (!err)
		err = hashmap_init(&r->vms, sizeof(__u32), sizeof(struct vcpustat_vm), r->opts.max_vms);
	if (!err)
		err = hashmap_init(&r->hists, sizeof(struct vcpustat_hist_key), sizeof(struct vcpustat_hist),
				   r->opts.max_hists);
	if (!err)
		err = hashmap_init(&r->culprits, sizeof(struct vcpustat_culprit_key), sizeof(struct vcpustat_culprit),
				   r->opts.max_culprits);
	if (!err)
		err = hashmap_init(&r->details, sizeof(struct vcpustat_detail_key), sizeof(struct vcpustat_detail),
				   r->opts.max_details ? r->opts.max_details : VCPUSTAT_MAX_DETAILS);
	if (!err)
		err = hashmap_init(&r->fault_pages, sizeof(struct vcpustat_detail_key), sizeof(struct vcpustat_detail),
				   r->opts.max_details ? r->opts.max_details : VCPUSTAT_MAX_FAULT_PAGES);
	if (!err)
		err = hashmap_init(&r->guest_cr3s, sizeof(struct vcpustat_detail_key), sizeof(struct vcpustat_detail),
				   r->opts.max_details ? r->opts.max_details : VCPUSTAT_MAX_GUEST_CR3S);
	if (!err)
		err = hashmap_init(&r->vmm, sizeof(__u32), sizeof(struct vcpustat_vmm_thread),
				   VCPUSTAT_MAX_VMM_THREADS);
	if (!err)
		err = hashmap_init(&r->places, sizeof(struct vcpustat_place_key), sizeof(__u64), VCPUSTAT_MAX_PLACES);
	if (err) {
		replay_free(r);
		return err;
	}
	*out = r;
	return 0;
}

int replay_event(struct replay *r, const struct vcpustat_event *ev)
{
	struct replay *saved = cur;

	cur = r;
	r->now = ev->ts;
	handle_event(ev);
	cur = saved;
	return r->cb_err;
}

/* Copy all values of a map into a new array (of value_size each). */
static int values_of(const struct hashmap *m, void **out, size_t *n)
{
	size_t pos = 0, i = 0;
	void *k, *v;
	char *arr;

	arr = calloc(m->count ? m->count : 1, m->value_size);
	if (!arr)
		return -ENOMEM;
	while (hashmap_next(m, &pos, &k, &v))
		memcpy(arr + i++ * m->value_size, v, m->value_size);
	*out = arr;
	*n = i;
	return 0;
}

int replay_snapshot(struct replay *r, struct vcpustat_snapshot *snap)
{
	size_t pos, i;
	void *k, *v;
	int err;

	memset(snap, 0, sizeof(*snap));
	snap->ts = r->now;
	err = values_of(&r->vcpus, (void **)&snap->vcpus, &snap->nr_vcpus);
	if (!err)
		err = values_of(&r->dead, (void **)&snap->dead, &snap->nr_dead);
	if (!err)
		err = values_of(&r->vms, (void **)&snap->vms, &snap->nr_vms);
	if (!err)
		err = values_of(&r->vmm, (void **)&snap->vmm, &snap->nr_vmm);
	if (err)
		goto fail;
	snap->places = calloc(r->places.count ? r->places.count : 1, sizeof(*snap->places));
	if (!snap->places) {
		err = -ENOMEM;
		goto fail;
	}
	for (pos = 0, i = 0; hashmap_next(&r->places, &pos, &k, &v); i++) {
		memcpy(&snap->places[i].key, k, sizeof(snap->places[i].key));
		memcpy(&snap->places[i].ns, v, sizeof(snap->places[i].ns));
	}
	snap->nr_places = i;
	snap->hists = calloc(r->hists.count ? r->hists.count : 1, sizeof(*snap->hists));
	snap->culprits = calloc(r->culprits.count ? r->culprits.count : 1, sizeof(*snap->culprits));
	if (!snap->hists || !snap->culprits) {
		err = -ENOMEM;
		goto fail;
	}
	for (pos = 0, i = 0; hashmap_next(&r->hists, &pos, &k, &v); i++) {
		memcpy(&snap->hists[i].key, k, sizeof(snap->hists[i].key));
		memcpy(&snap->hists[i].hist, v, sizeof(snap->hists[i].hist));
	}
	snap->nr_hists = i;
	for (pos = 0, i = 0; hashmap_next(&r->culprits, &pos, &k, &v); i++) {
		memcpy(&snap->culprits[i].key, k, sizeof(snap->culprits[i].key));
		memcpy(&snap->culprits[i].culprit, v, sizeof(snap->culprits[i].culprit));
	}
	snap->nr_culprits = i;
	snap->details = calloc(r->details.count + r->fault_pages.count + r->guest_cr3s.count + 1, sizeof(*snap->details));
	if (!snap->details) {
		err = -ENOMEM;
		goto fail;
	}
	i = 0;
	for (pos = 0; hashmap_next(&r->details, &pos, &k, &v); i++) {
		memcpy(&snap->details[i].key, k, sizeof(snap->details[i].key));
		memcpy(&snap->details[i].detail, v, sizeof(snap->details[i].detail));
	}
	for (pos = 0; hashmap_next(&r->fault_pages, &pos, &k, &v); i++) {
		memcpy(&snap->details[i].key, k, sizeof(snap->details[i].key));
		memcpy(&snap->details[i].detail, v, sizeof(snap->details[i].detail));
	}
	for (pos = 0; hashmap_next(&r->guest_cr3s, &pos, &k, &v); i++) {
		memcpy(&snap->details[i].key, k, sizeof(snap->details[i].key));
		memcpy(&snap->details[i].detail, v, sizeof(snap->details[i].detail));
	}
	snap->nr_details = i;
	memcpy(snap->lost, r->lost, sizeof(snap->lost));
	/* dead vCPUs are reported once, as by the live layer */
	hashmap_free(&r->dead);
	return hashmap_init(&r->dead, sizeof(__u32), sizeof(struct vcpustat_vcpu), dead_max(r));
fail:
	vcpustat_snapshot_free(snap);
	return err;
}

/* The value of key in m, or NULL. */
static const char *meta_get(const struct record_meta *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->key[i], key))
			return m->value[i];
	return NULL;
}

int replay_capture(struct capture_reader *cap, const char *out, struct rec_session_stats *st,
		   struct vcpustat_error *err)
{
	static struct record_meta meta;
	const struct capture_info *info = capture_get_info(cap);
	struct rec_session_opts so = { 0 };
	struct replay_options po = { 0 };
	struct rec_session *s = NULL;
	struct replay *rp = NULL;
	const uint64_t(*lost)[2];
	struct vcpustat_event ev;
	uint64_t last = 0, events = 0;
	size_t nlost, li = 0;
	const char *v;
	int e;

	record_meta_replay(&meta, info->meta);
	v = meta_get(&meta, "level");
	po.record_level = v && !strcmp(v, "full") ? VCPUSTAT_LEVEL_FULL : VCPUSTAT_LEVEL_VCPU;
	v = meta_get(&meta, "cpus");
	po.nr_cpus = v ? (unsigned int)atoi(v) : 0;
	po.on_record = rec_session_record;
	so.rec.path = out;
	so.rec.atomic = true; /* a failed replay leaves no half file, and an existing one as it was */
	so.rec.mono_start_ns = info->mono_start_ns;
	so.rec.real_start_ns = info->real_start_ns;
	so.rec.meta = meta.meta;
	so.rec.nmeta = meta.n;
	capture_name_recorder(cap, &so.rec);
	e = rec_session_open(&s, &so, err);
	if (e)
		return e;
	po.ctx = s;
	if (replay_new(&rp, &po)) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	lost = capture_lost(cap, &nlost);
	while ((e = capture_next(cap, &ev, err)) == 1) {
		for (; li < nlost && lost[li][0] <= ev.ts; li++)
			rec_session_tick(s, lost[li][0], lost[li][1], false);
		if (replay_event(rp, &ev) || rec_session_failed(s, NULL))
			break;
		events++;
		if (ev.ts > last)
			last = ev.ts;
	}
	if (e < 0)
		goto out;
	for (; li < nlost; li++)
		rec_session_tick(s, lost[li][0], lost[li][1], false);
	e = rec_session_finish(&s, capture_end(cap) ? capture_end(cap) : last, st, err);
	st->events = events; /* replayed */
out:
	rec_session_close(s, last);
	replay_free(rp);
	return e;
}
