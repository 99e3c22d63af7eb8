// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* multilevel.c - guest threads on the host's timeline (import.h, docs/import.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "import/import.h"

static const char *const state_names[ML_NR_STATES] = {
	[ML_RUNNING] = "running", [ML_VIRT_PREEMPTED] = "virt_preempted", [ML_PREEMPTED] = "preempted",
	[ML_WAIT] = "wait",	  [ML_BLOCKED] = "blocked",
};

const char *ml_state_name(unsigned int state)
{
	return state < ML_NR_STATES ? state_names[state] : "invalid";
}

/* What the guest's scheduler says about a thread. */
enum thread_status {
	TS_UNSEEN = 0,
	TS_CURRENT,   /* on guest CPU `cpu` */
	TS_PREEMPTED, /* switched out runnable */
	TS_WAIT,      /* woken */
	TS_BLOCKED,   /* switched out sleeping */
	TS_GONE,      /* exited */
};

#define NO_ATTR UINT32_MAX
#define NONE_TID UINT32_MAX /* vcpu.cur before the guest says */

struct thread {
	uint32_t tid;
	uint32_t cpu;
	uint8_t status;
	bool dirty, name_dirty;
	int8_t emitted; /* enum ml_guest_state last written, -1: null / nothing */
	uint32_t a_state, a_name;
	char comm[16];
};

struct vcpu {
	uint8_t host;	/* enum vcpu_fsm_state on the host (a nested guest's: from both levels, nested_state()) */
	bool dirty;
	uint32_t cur;	/* guest tid current on it, 0 = idle, NONE_TID = not known yet */
	int64_t emitted; /* guest_tid last written, -1: nothing */
	uint32_t a_tid;
	/* a nested guest's vCPU: its state in its L1's view, the L1 CPU it is on, its state as written */
	uint8_t l1;
	uint16_t l1_cpu;
	int16_t emitted_state; /* -1: nothing (or null) written */
	uint32_t a_state;
	bool runs; /* ... and whether it runs guest code (by both levels' rules) */
};

struct guest {
	uint32_t tgid;
	char vm[64];
	const struct ml_guest_event *ev;
	size_t n, pos;
	bool host_mode_known; /* a nested guest: its L1's trace shows its kvm_entry/kvm_exit */
	long parent;	      /* a nested guest: its L1's index in ml.g, else -1 */
	const struct ml_vcpu_event *vev;
	size_t nv, vpos;
	struct vcpu *vcpus;
	size_t nvcpus;
	struct thread *thr;
	size_t nthr, capthr;
	struct hashmap by_tid;	   /* guest tid -> size_t index in thr */
	struct hashmap host_index; /* host vCPU thread tid -> u32 vCPU index */
	size_t *dirty_thr, ndirty_thr, capdirty_thr;
	size_t *dirty_vcpu, ndirty_vcpu, capdirty_vcpu;
	struct ml_guest_stats st;
};

struct ml {
	struct recorder *rec;
	uint64_t start, now;
	struct guest *g;
	size_t ng;
};

int ml_new(struct ml **mp, struct recorder *rec, uint64_t start_ns)
{
	struct ml *m = calloc(1, sizeof(*m));

	*mp = m;
	if (!m)
		return -ENOMEM;
	m->rec = rec;
	m->start = m->now = start_ns;
	return 0;
}

void ml_free(struct ml *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ng; i++) {
		struct guest *g = &m->g[i];

		free(g->vcpus);
		free(g->thr);
		free(g->dirty_thr);
		free(g->dirty_vcpu);
		hashmap_free(&g->by_tid);
		hashmap_free(&g->host_index);
	}
	free(m->g);
	free(m);
}

/* A guest named vm (its attributes' /vms/<vm>/...): the new m->g[m->ng - 1]. */
static int add_guest(struct ml *m, uint32_t tgid, const char *vm, const struct ml_guest_event *ev, size_t n,
		     bool host_mode_known, struct vcpustat_error *err)
{
	struct guest *g, *arr = realloc(m->g, (m->ng + 1) * sizeof(*arr));

	if (!arr)
		return verror(err, -ENOMEM, "out of memory");
	m->g = arr;
	g = &m->g[m->ng];
	memset(g, 0, sizeof(*g));
	g->tgid = tgid;
	g->ev = ev;
	g->n = n;
	g->host_mode_known = host_mode_known;
	g->parent = -1;
	snprintf(g->vm, sizeof(g->vm), "%s", vm);
	if (hashmap_init(&g->by_tid, sizeof(uint32_t), sizeof(size_t), 0) ||
	    hashmap_init(&g->host_index, sizeof(uint32_t), sizeof(uint32_t), 0)) {
		hashmap_free(&g->by_tid);
		return verror(err, -ENOMEM, "out of memory");
	}
	m->ng++;
	return 0;
}

int ml_add_guest(struct ml *m, uint32_t tgid, const struct ml_guest_event *ev, size_t n, bool host_mode_known,
		 struct vcpustat_error *err)
{
	const char *vm = recorder_vm_path(m->rec, tgid);

	return vm ? add_guest(m, tgid, vm, ev, n, host_mode_known, err) : verror(err, -ENOMEM, "out of memory");
}

int ml_add_nested(struct ml *m, size_t parent, const char *name, const struct ml_guest_event *ev, size_t n,
		  const struct ml_vcpu_event *vev, size_t nv, bool mode_known, struct vcpustat_error *err)
{
	char vm[64];
	struct guest *g;
	int e;

	if (parent >= m->ng || m->g[parent].parent >= 0)
		return verror(err, -EINVAL, "%s: its L1 must be a guest of the host", name);
	snprintf(vm, sizeof(vm), "%.31s.%.31s", m->g[parent].vm, name);
	for (char *c = vm; *c; c++) /* one path component, as the recorder makes VM names */
		if (*c == '/')
			*c = '_';
	e = add_guest(m, 0, vm, ev, n, mode_known, err);
	if (e)
		return e;
	g = &m->g[m->ng - 1];
	g->parent = (long)parent;
	g->vev = vev;
	g->nv = nv;
	return 0;
}

void ml_get_stats(const struct ml *m, size_t i, struct ml_guest_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (i < m->ng)
		*st = m->g[i].st;
}

/* ---- bookkeeping ---- */

static int push_index(size_t **arr, size_t *n, size_t *cap, size_t v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		size_t *a = realloc(*arr, c * sizeof(*a));

		if (!a)
			return -ENOMEM;
		*arr = a;
		*cap = c;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

static int vcpu_get(struct guest *g, uint32_t idx, struct vcpu **out)
{
	if (idx >= 65536)
		return -ERANGE;
	if (idx >= g->nvcpus) {
		size_t n = idx + 1;
		struct vcpu *a = realloc(g->vcpus, n * sizeof(*a));

		if (!a)
			return -ENOMEM;
		for (size_t i = g->nvcpus; i < n; i++)
			a[i] = (struct vcpu){ .host = VCPU_UNKNOWN, .cur = NONE_TID, .emitted = -1, .a_tid = NO_ATTR,
					      .l1 = VCPU_UNKNOWN, .emitted_state = -1, .a_state = NO_ATTR, .runs = true };
		g->vcpus = a;
		g->nvcpus = n;
	}
	*out = &g->vcpus[idx];
	return 0;
}

static int vcpu_dirty(struct guest *g, uint32_t idx)
{
	struct vcpu *v = &g->vcpus[idx];

	if (v->dirty)
		return 0;
	v->dirty = true;
	return push_index(&g->dirty_vcpu, &g->ndirty_vcpu, &g->capdirty_vcpu, idx);
}

static int thread_get(struct guest *g, uint32_t tid, struct thread **out)
{
	size_t *hit = hashmap_lookup(&g->by_tid, &tid), idx;

	if (hit) {
		*out = &g->thr[*hit];
		return 0;
	}
	if (g->nthr == g->capthr) {
		size_t cap = g->capthr ? g->capthr * 2 : 64;
		struct thread *a = realloc(g->thr, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		g->thr = a;
		g->capthr = cap;
	}
	idx = g->nthr;
	if (hashmap_insert(&g->by_tid, &tid, &idx))
		return -ENOMEM;
	g->thr[idx] = (struct thread){ .tid = tid, .emitted = -1, .a_state = NO_ATTR, .a_name = NO_ATTR };
	g->nthr++;
	g->st.threads++;
	*out = &g->thr[idx];
	return 0;
}

static int thread_dirty(struct guest *g, struct thread *t)
{
	if (t->dirty)
		return 0;
	t->dirty = true;
	return push_index(&g->dirty_thr, &g->ndirty_thr, &g->capdirty_thr, (size_t)(t - g->thr));
}

static void thread_name(struct thread *t, const char comm[16])
{
	if (!comm[0] || !memcmp(t->comm, comm, sizeof(t->comm)) || !strcmp(comm, "<...>"))
		return;
	memcpy(t->comm, comm, sizeof(t->comm));
	t->comm[15] = '\0';
	t->name_dirty = true;
}

/* Is a vCPU in this host state running guest code? */
static bool in_guest(const struct guest *g, unsigned int host)
{
	if (host == VCPU_GUEST || host == VCPU_UNKNOWN) /* unknown: the guest's own view */
		return true;
	return host == VCPU_HOST && !g->host_mode_known;
}

static int thread_state(const struct guest *g, const struct thread *t)
{
	switch (t->status) {
	case TS_CURRENT:
		if (t->cpu >= g->nvcpus)
			return ML_RUNNING;
		if (g->parent >= 0)
			return g->vcpus[t->cpu].runs ? ML_RUNNING : ML_VIRT_PREEMPTED;
		return in_guest(g, g->vcpus[t->cpu].host) ? ML_RUNNING : ML_VIRT_PREEMPTED;
	case TS_PREEMPTED: return ML_PREEMPTED;
	case TS_WAIT: return ML_WAIT;
	case TS_BLOCKED: return ML_BLOCKED;
	default: return -1;
	}
}

/* ---- output ---- */

static int set_value(struct ml *m, uint32_t *attr, const char *path, uint64_t t, const struct sht_value *v,
		     struct vcpustat_error *err)
{
	int e;

	if (*attr == NO_ATTR) {
		e = recorder_attr(m->rec, path, attr, err);
		if (e)
			return e;
	}
	return recorder_set(m->rec, *attr, t, v, err);
}

/* Write what changed at time t. */
static int flush(struct ml *m, uint64_t t, struct vcpustat_error *err)
{
	char path[512];
	int e = 0;

	for (size_t gi = 0; gi < m->ng; gi++) {
		struct guest *g = &m->g[gi];

		for (size_t i = 0; i < g->ndirty_vcpu && !e; i++) {
			uint32_t idx = (uint32_t)g->dirty_vcpu[i];
			struct vcpu *v = &g->vcpus[idx];
			struct sht_value val = { .type = SHT_INT, .i = v->cur };

			v->dirty = false;
			if (g->parent >= 0 && v->host != v->emitted_state &&
			    (v->host != VCPU_UNKNOWN || v->a_state != NO_ATTR)) {
				struct sht_value sv = { .type = v->host == VCPU_UNKNOWN ? SHT_NULL : SHT_INT,
							.i = v->host };

				if (v->a_state == NO_ATTR) /* the path only to make the attribute */
					snprintf(path, sizeof(path), "/vms/%s/vcpus/%u/state", g->vm, idx);
				e = set_value(m, &v->a_state, path, t, &sv, err);
				v->emitted_state = v->host == VCPU_UNKNOWN ? -1 : v->host;
				if (e)
					break;
			}
			if (v->cur == NONE_TID || (int64_t)v->cur == v->emitted)
				continue;
			if (v->a_tid == NO_ATTR) /* the path only to make the attribute */
				snprintf(path, sizeof(path), "/vms/%s/vcpus/%u/guest_tid", g->vm, idx);
			e = set_value(m, &v->a_tid, path, t, &val, err);
			v->emitted = v->cur;
		}
		g->ndirty_vcpu = 0;
		for (size_t i = 0; i < g->ndirty_thr && !e; i++) {
			struct thread *th = &g->thr[g->dirty_thr[i]];
			int s = thread_state(g, th);
			struct sht_value val = { .type = s < 0 ? SHT_NULL : SHT_STR, .s = s < 0 ? NULL : ml_state_name(s) };

			th->dirty = false;
			if (th->name_dirty && th->status != TS_GONE) {
				struct sht_value nv = { .type = SHT_STR, .s = th->comm };

				th->name_dirty = false;
				if (th->a_name == NO_ATTR) /* the path only to make the attribute */
					snprintf(path, sizeof(path), "/vms/%s/threads/%u/name", g->vm, th->tid);
				e = set_value(m, &th->a_name, path, t, &nv, err);
				if (e)
					break;
			}
			if (s == th->emitted)
				continue;
			if (s < 0 && th->a_state == NO_ATTR)
				continue;
			if (th->a_state == NO_ATTR) /* the path only to make the attribute */
				snprintf(path, sizeof(path), "/vms/%s/threads/%u/state", g->vm, th->tid);
			e = set_value(m, &th->a_state, path, t, &val, err);
			th->emitted = (int8_t)s;
			if (!e && s < 0 && th->a_name != NO_ATTR) { /* exited: its name ends too */
				struct sht_value nv = { .type = SHT_NULL };

				e = recorder_set(m->rec, th->a_name, t, &nv, err);
			}
		}
		g->ndirty_thr = 0;
		if (e)
			break;
	}
	return e;
}

/* Move the analysis clock to ts (never back, never before the start); write the last instant's changes. */
static int advance(struct ml *m, uint64_t ts, struct vcpustat_error *err)
{
	if (ts < m->start)
		ts = m->start;
	if (ts <= m->now)
		return 0;
	{
		int e = flush(m, m->now, err);

		if (e)
			return e;
	}
	m->now = ts;
	return 0;
}

/* ---- guest events ---- */

static int apply_guest(struct guest *g, const struct ml_guest_event *ev)
{
	struct thread *t;
	struct vcpu *v;
	int e = 0;

	switch (ev->type) {
	case ML_EV_SWITCH:
		e = vcpu_get(g, ev->cpu, &v);
		if (e)
			return e == -ERANGE ? 0 : e;
		if (ev->tid) {
			e = thread_get(g, ev->tid, &t);
			if (e)
				return e;
			t->status = ev->flags & ML_F_EXITING ? TS_GONE :
				    ev->flags & ML_F_RUNNABLE ? TS_PREEMPTED : TS_BLOCKED;
			thread_name(t, ev->comm);
			e = thread_dirty(g, t);
		}
		if (!e && ev->tid2) {
			e = thread_get(g, ev->tid2, &t);
			if (e)
				return e;
			t->status = TS_CURRENT;
			t->cpu = ev->cpu;
			thread_name(t, ev->comm2);
			e = thread_dirty(g, t);
		}
		v = &g->vcpus[ev->cpu];
		v->cur = ev->tid2;
		if (!e)
			e = vcpu_dirty(g, ev->cpu);
		break;
	case ML_EV_WAKEUP:
		if (!ev->tid)
			break;
		e = thread_get(g, ev->tid, &t);
		if (e)
			return e;
		thread_name(t, ev->comm);
		if (t->status == TS_UNSEEN || t->status == TS_BLOCKED || t->status == TS_GONE) {
			t->status = TS_WAIT;
			e = thread_dirty(g, t);
		}
		break;
	case ML_EV_EXIT:
		if (!ev->tid)
			break;
		e = thread_get(g, ev->tid, &t);
		if (e)
			return e;
		t->status = TS_GONE;
		e = thread_dirty(g, t);
		break;
	}
	g->st.applied++;
	return e;
}

static int vcpu_event(struct ml *m, struct guest *g, const struct ml_vcpu_event *ev);

/* Apply every guest event (and nested guest's vCPU state in its L1) at or before ts, in time order. */
static int guests_until(struct ml *m, uint64_t ts, struct vcpustat_error *err)
{
	int e;

	for (;;) {
		struct guest *next = NULL;
		uint64_t at = 0;
		bool state = false;

		for (size_t i = 0; i < m->ng; i++) {
			struct guest *g = &m->g[i];

			if (g->vpos < g->nv && g->vev[g->vpos].ts <= ts && (!next || g->vev[g->vpos].ts < at)) {
				next = g;
				at = g->vev[g->vpos].ts;
				state = true;
			}
			if (g->pos < g->n && g->ev[g->pos].ts <= ts && (!next || g->ev[g->pos].ts < at)) {
				next = g;
				at = g->ev[g->pos].ts;
				state = false;
			}
		}
		if (!next)
			return 0;
		e = advance(m, at, err);
		if (!e)
			e = state ? vcpu_event(m, next, &next->vev[next->vpos]) : apply_guest(next, &next->ev[next->pos]);
		if (e)
			return err && err->code ? e : verror(err, e, "guest analysis: %s", strerror(-e));
		if (state)
			next->vpos++;
		else
			next->pos++;
	}
}

/* ---- host records ---- */

/* vCPU idx's host state changed: its current guest thread may change state. */
static int host_changed(struct guest *g, uint32_t idx)
{
	struct vcpu *v = &g->vcpus[idx];

	g->st.host_states++;
	if (v->cur != NONE_TID && v->cur) {
		size_t *ti = hashmap_lookup(&g->by_tid, &v->cur);

		if (ti && g->thr[*ti].status == TS_CURRENT && g->thr[*ti].cpu == idx)
			return thread_dirty(g, &g->thr[*ti]);
	}
	return 0;
}

/*
 * A nested guest's vCPU on the host's timeline: its state in its L1's view
 * where that is not guest mode (in L1's hypervisor, preempted, waiting,
 * halted in L1), else the host's state of the L1 vCPU it runs on where that
 * is not guest mode (L1's vCPU in the host's hypervisor, preempted ...),
 * else guest mode.
 */
static uint8_t nested_state(const struct ml *m, const struct guest *g, const struct vcpu *v, bool *runs)
{
	const struct guest *p = &m->g[g->parent];

	*runs = in_guest(g, v->l1); /* unknown in L1: the guest's own view */
	if (v->l1 == VCPU_UNKNOWN || !*runs)
		return v->l1;
	if (v->l1_cpu < p->nvcpus && !in_guest(p, p->vcpus[v->l1_cpu].host)) {
		*runs = false;
		return p->vcpus[v->l1_cpu].host;
	}
	return v->l1;
}

static int nested_update(struct ml *m, struct guest *g, uint32_t idx)
{
	struct vcpu *v = &g->vcpus[idx];
	bool runs;
	uint8_t s = nested_state(m, g, v, &runs);
	int e;

	if (s == v->host && runs == v->runs)
		return 0;
	v->host = s;
	v->runs = runs;
	e = vcpu_dirty(g, idx); /* its state is written */
	return e ? e : host_changed(g, idx);
}

/* A nested guest's vCPU state in its L1's trace. */
static int vcpu_event(struct ml *m, struct guest *g, const struct ml_vcpu_event *ev)
{
	struct vcpu *v;
	int e = vcpu_get(g, ev->vcpu, &v);

	if (e)
		return e == -ERANGE ? 0 : e;
	v->l1 = ev->state;
	v->l1_cpu = ev->cpu;
	return nested_update(m, g, ev->vcpu);
}

/* vCPU idx of the VM is in host state `state` now; the nested guests its CPU runs follow. */
static int host_state(struct ml *m, struct guest *g, uint32_t idx, unsigned int state)
{
	struct vcpu *v;
	int e = vcpu_get(g, idx, &v);

	if (e)
		return e == -ERANGE ? 0 : e;
	if (v->host == state)
		return 0;
	v->host = (uint8_t)state;
	e = host_changed(g, idx);
	for (size_t i = 0; i < m->ng && !e; i++) {
		struct guest *n = &m->g[i];

		if (n->parent < 0 || &m->g[n->parent] != g)
			continue;
		for (uint32_t k = 0; k < n->nvcpus && !e; k++)
			if (n->vcpus[k].l1 != VCPU_UNKNOWN && n->vcpus[k].l1_cpu == idx)
				e = nested_update(m, n, k);
	}
	return e;
}

int ml_host_record(struct ml *m, const struct vcpustat_record *rec, struct vcpustat_error *err)
{
	struct guest *g = NULL;
	uint32_t *idx;
	int e;

	e = guests_until(m, rec->ts, err);
	if (e)
		return e;
	for (size_t i = 0; i < m->ng; i++)
		if (m->g[i].tgid == rec->tgid && m->g[i].parent < 0) /* a nested guest's ids are its L1's */
			g = &m->g[i];
	if (!g || rec->vcpu == VCPUSTAT_VCPU_NONE)
		return 0;
	if (rec->type != VCPUSTAT_REC_STATE && rec->type != VCPUSTAT_REC_VCPU_NEW &&
	    rec->type != VCPUSTAT_REC_VCPU_GONE)
		return 0;
	e = advance(m, rec->ts, err);
	if (e)
		return e;
	idx = hashmap_lookup(&g->host_index, &rec->tid);
	if (rec->type == VCPUSTAT_REC_VCPU_GONE) {
		e = host_state(m, g, rec->vcpu, VCPU_UNKNOWN);
		hashmap_delete(&g->host_index, &rec->tid);
	} else {
		uint32_t vcpu = rec->vcpu;

		if (idx && *idx != vcpu) /* re-indexed: the old index is no longer this thread */
			e = host_state(m, g, *idx, VCPU_UNKNOWN);
		if (!e && (!idx || *idx != vcpu) && hashmap_update(&g->host_index, &rec->tid, &vcpu))
			e = -ENOMEM;
		if (!e)
			e = host_state(m, g, vcpu, rec->to);
	}
	if (e)
		return err && err->code ? e : verror(err, e, "guest analysis: %s", strerror(-e));
	return 0;
}

int ml_finish(struct ml *m, uint64_t end_ns, struct vcpustat_error *err)
{
	int e = guests_until(m, end_ns, err);

	if (e)
		return e;
	for (size_t i = 0; i < m->ng; i++)
		m->g[i].st.after_end = m->g[i].n - m->g[i].pos;
	return flush(m, m->now, err);
}
