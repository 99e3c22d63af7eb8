// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * session.c - the live sessions every live command drives: a recording
 * (the kernel's ring buffer drained into a record session, record/session.c)
 * and a window (successive snapshots of the maps as summaries, with the
 * kernel's tables kept bounded).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "live/live.h"
#include "record/record.h"

/* How often a recording makes the kernel forget the VMs that exited. */
#define LIVE_RECORD_FORGET_S 10

__u64 vcpustat_lost_total(struct vcpustat *vs)
{
	__u64 lost[VCPUSTAT_NR_LOST], sum = 0;

	if (vcpustat_lost(vs, lost))
		return 0;
	for (int i = 0; i < VCPUSTAT_NR_LOST; i++)
		sum += lost[i];
	return sum;
}

/*
 * How long after a VM's exit its tables are reaped. The process's exit is
 * seen when its last thread's counter drops (group_dead), but its other
 * threads may reach their own sched_process_exit later on other CPUs, and
 * close their last exits then: reaped before, those samples went to fresh
 * entries that no window counted (the exporter was 3 exits short of KVM's in
 * the lab).
 */
#define VM_REAP_GRACE_NS 1000000000ull

/*
 * The kernel's tables stay bounded: VMs that exited a while ago (their final
 * counts are read: in snap) are reaped, culprits that exited folded into one
 * entry per VM (vcpustat_prune).
 */
static void forget_exited(struct vcpustat *vs, const struct vcpustat_snapshot *snap)
{
	for (size_t i = 0; i < snap->nr_vms; i++)
		if (snap->vms[i].exited_ns && snap->ts > snap->vms[i].exited_ns + VM_REAP_GRACE_NS)
			vcpustat_reap_vm(vs, snap->vms[i].tgid);
	vcpustat_prune(vs, NULL);
}

/*
 * What the kernel produced before the stop: all of it, however far behind
 * we are (the exact tests stop their VMs first), but not what VMs still
 * running add after the stop (the ring's producer position now is where the
 * drain ends: draining on while they flood it made `record --duration 2`
 * beside a 20 s VM take 30 s more, and export_live's file test time out in
 * the KVM lab), and never more than o->final_drain_s. 1: still behind after
 * that; 0; or a negative errno.
 */
static int final_drain(struct vcpustat *vs, struct ring_buffer *rb, unsigned int final_drain_s)
{
	__u64 until = vcpustat_now_ns() + final_drain_s * 1000000000ull;
	unsigned long cons, prod, stop_pos;
	bool bounded = vcpustat_ring_pos(vs, &cons, &stop_pos) == 0;
	int e;

	while ((e = vcpustat_drain(rb, 0)) > 0 && vcpustat_now_ns() < until)
		if (bounded && !vcpustat_ring_pos(vs, &cons, &prod) && (long)(stop_pos - cons) <= 0)
			return 0; /* the backlog is in: what VMs add after the stop is not wanted */
	return e > 0 ? 1 : e;
}

/*
 * One read of the maps for what a recording needs of them: forget the VMs
 * that exited, and find the VMM threads of those seen so far (tracked from
 * then on; at level vcpu their records are REC_VMM).
 */
int health_seen_of(const struct vcpustat_snapshot *snap, struct health_seen **out, size_t *n)
{
	size_t cap = snap->nr_vcpus + snap->nr_dead, i, k;
	struct health_seen *seen = calloc(cap ? cap : 1, sizeof(*seen));

	*out = NULL;
	*n = 0;
	if (!seen)
		return -ENOMEM;
	for (i = 0; i < cap; i++) {
		const struct vcpustat_vcpu *v = i < snap->nr_vcpus ? &snap->vcpus[i] : &snap->dead[i - snap->nr_vcpus];

		for (k = 0; k < *n && seen[k].tgid != v->tgid; k++)
			;
		if (k == *n)
			seen[(*n)++].tgid = v->tgid;
		seen[k].nr_vcpus++;
		seen[k].kvm_exits += v->fsm.kvm_exits;
		seen[k].userspace_exits += v->fsm.userspace_exits;
		seen[k].oncpu_ns += v->fsm.ns[VCPU_GUEST] + v->fsm.ns[VCPU_HOST] + v->fsm.ns[VCPU_POLL];
	}
	*out = seen;
	return 0;
}

static bool health_no_exits(void *ctx, __u32 tgid)
{
	return false;
}

/* One health check (model/health.c) of snapshot cur; 0 with *h, or -errno. */
static int health_of(struct vcpustat *vs, struct health_tracker *t, const struct vcpustat_snapshot *cur,
		     struct health *h)
{
	struct health_seen *seen;
	struct kvm_view kv;
	size_t n;
	int e;

	e = health_seen_of(cur, &seen, &n);
	if (e)
		return e;
	/*
	 * KVM's exit counts in debugfs are not read here: the signals above
	 * need none, and under the KVM lab's emulation each read walks the
	 * VM's vCPUs for 150 ms (`vcpustat probe` reads them, once).
	 */
	e = kvm_view_read(&kv, NULL, health_no_exits, NULL);
	if (!e) {
		e = health_check(t, &kv, seen, n, vcpustat_exits_attached(vs), h);
		kvm_view_free(&kv);
	}
	free(seen);
	return e;
}

/* A recording's health checks: a tracker, and what they found. */
struct record_health {
	struct health_tracker tracker;
	__u64 last_ns;
	struct live_record_result *res;
};

static void record_health(struct vcpustat *vs, struct record_health *rh, const struct vcpustat_snapshot *snap)
{
	struct health h;

	rh->last_ns = snap->ts;
	if (health_of(vs, &rh->tracker, snap, &h))
		return;
	if (h.problems) {
		rh->res->health_problems |= h.problems;
		health_free(&rh->res->health);
		rh->res->health = h;
	} else {
		health_free(&h);
	}
}

static void tend_maps(struct vcpustat *vs, bool forget, bool seed, struct record_health *rh)
{
	bool health = rh && (!rh->last_ns || vcpustat_now_ns() >= rh->last_ns + LIVE_HEALTH_EVERY_NS);
	struct vcpustat_snapshot snap;

	if ((!forget && !seed && !health) || vcpustat_snapshot(vs, &snap)) /* also empties the table of dead vCPUs */
		return;
	if (forget)
		forget_exited(vs, &snap);
	if (seed)
		vcpustat_seed_vmm(vs, &snap, NULL);
	if (health)
		record_health(vs, rh, &snap);
	vcpustat_snapshot_free(&snap);
}

int live_record_open(struct rec_session **s, struct rec_session_opts *so, enum vcpustat_record_level level, int argc,
		     char **argv, const struct record_meta *user, struct vcpustat_error *err)
{
	struct record_meta *meta = malloc(sizeof(*meta));
	int e;

	if (!meta)
		return verror(err, -ENOMEM, "out of memory");
	record_meta_live(meta, level, argc, argv, user);
	so->meta = meta;
	so->proc_names = true;
	so->nr_cpus = (unsigned int)libbpf_num_possible_cpus();
	so->rec.mono_start_ns = vcpustat_now_ns();
	so->rec.real_start_ns = vcpustat_realtime_ns();
	e = rec_session_open(s, so, err);
	so->meta = NULL; /* the session has its copy */
	free(meta);
	return e;
}

int live_record(struct vcpustat *vs, struct rec_session *s, const struct live_record_opts *o,
		struct live_record_result *res, struct vcpustat_error *err)
{
	struct vcpustat_consumer cons = { .on_record = rec_session_record, .on_event = rec_session_event, .ctx = s };
	__u64 start = vcpustat_now_ns(), next_tick = start + 1000000000ull, now;
	struct record_health rh = { .res = res };
	struct ring_buffer *rb;
	int e = 0;

	memset(res, 0, sizeof(*res));
	tend_maps(vs, false, false, &rh); /* the health checks' first look */
	rb = vcpustat_ring_buffer(vs, &cons);
	if (!rb)
		return verror(err, -errno, "cannot open the BPF ring buffer: %s", strerror(errno));
	while (!*o->stop && !rec_session_failed(s, NULL)) {
		e = vcpustat_drain(rb, VCPUSTAT_DRAIN_MS);
		if (e < 0 && e != -EINTR) {
			/* the session's own error stops the drain too: it says what failed */
			if (!rec_session_failed(s, err))
				verror(err, e, "reading the ring buffer: %s", strerror(-e));
			goto out;
		}
		e = 0;
		now = vcpustat_now_ns();
		if (now >= next_tick) {
			next_tick += 1000000000ull;
			/* the lost count every second; what was recorded durable every 5 s */
			if (rec_session_tick(s, now, vcpustat_lost_total(vs), (now - start) / 1000000000ull % 5 == 0))
				break;
			/*
			 * The maps are not what a recording reads, but they must stay
			 * bounded for it too: else with VMs coming and going, the
			 * kernel's tables fill and count losses that are not (the
			 * records of a VM that exited are all in the ring buffer).
			 */
			tend_maps(vs, (now - start) / 1000000000ull % LIVE_RECORD_FORGET_S == 0, o->seed_vmm, &rh);
		}
		if (o->duration_ns && now >= start + o->duration_ns)
			break;
	}
	e = rec_session_failed(s, err);
	if (e)
		goto out;
	e = final_drain(vs, rb, o->final_drain_s);
	if (e > 0) {
		res->behind = true;
		e = 0;
	} else if (e < 0) {
		if (!rec_session_failed(s, err))
			verror(err, e, "reading the ring buffer: %s", strerror(-e));
		goto out;
	}
out:
	res->end_ns = vcpustat_now_ns();
	res->lost = vcpustat_lost_total(vs);
	ring_buffer__free(rb);
	health_tracker_free(&rh.tracker);
	/* the lost count at the end, as every second */
	if (!e && rec_session_tick(s, res->end_ns, res->lost, false))
		e = rec_session_failed(s, err);
	return e;
}

/* The health check of the window ending at cur, at most every LIVE_HEALTH_EVERY_NS. */
static void live_health(struct live_window *w, const struct vcpustat_snapshot *cur)
{
	struct health h;

	if (w->health_ts && cur->ts < w->health_ts + LIVE_HEALTH_EVERY_NS)
		return;
	w->health_ts = cur->ts;
	if (!health_of(w->vs, &w->tracker, cur, &h)) {
		health_free(&w->health);
		w->health = h;
	}
}

int live_window_init(struct live_window *w, struct vcpustat *vs, const struct summary_filter *filter)
{
	memset(w, 0, sizeof(*w));
	w->vs = vs;
	w->filter = filter;
	if (names_init(&w->names, NULL, NULL))
		return -ENOMEM;
	/* placement: the kernel side counts moves across nodes and caches and SMT sharing with it */
	{
		struct vcpustat_error err;

		w->have_topo = topology_read_sysfs(&w->topo, NULL, &err) == 0;
		if (w->have_topo)
			vcpustat_set_topology(vs, &w->topo);
	}
	/* the health checks' first look, so that the first window is judged against it */
	{
		struct vcpustat_snapshot snap;

		if (!vcpustat_snapshot(vs, &snap)) {
			live_health(w, &snap);
			vcpustat_snapshot_free(&snap);
		}
	}
	return 0;
}

int live_window_next(struct live_window *w, struct summary *s)
{
	struct vcpustat_snapshot cur;
	int e;

	e = vcpustat_snapshot(w->vs, &cur);
	if (e)
		return e;
	live_health(w, &cur);
	/* the VMM threads that appeared: counted from their first event on */
	vcpustat_seed_vmm(w->vs, &cur, NULL);
	if (!w->have_prev && !s) {
		w->prev = cur;
		w->have_prev = true;
		return 0;
	}
	names_refresh(&w->names);
	if (s) {
		e = summary_build(s, w->have_prev ? &w->prev : NULL, &cur, &w->names, w->filter);
		if (e) {
			vcpustat_snapshot_free(&cur);
			return e;
		}
		s->topo = w->have_topo ? &w->topo : NULL;
		if (w->health.checked && health_copy(&s->health, &w->health)) {
			summary_free(s);
			vcpustat_snapshot_free(&cur);
			return -ENOMEM;
		}
	}
	/* VMs that exited: their last window is counted, the kernel may forget them */
	forget_exited(w->vs, &cur);
	if (w->have_prev)
		vcpustat_snapshot_free(&w->prev);
	w->prev = cur;
	w->have_prev = true;
	return 0;
}

void live_window_free(struct live_window *w)
{
	if (w->have_prev)
		vcpustat_snapshot_free(&w->prev);
	names_free(&w->names);
	if (w->have_topo)
		topology_free(&w->topo);
	health_free(&w->health);
	health_tracker_free(&w->tracker);
	memset(w, 0, sizeof(*w));
}

int live_window_sample(struct vcpustat *vs, const struct summary_filter *filter, __u64 interval_ns,
		       volatile const sig_atomic_t *stop, struct summary *s)
{
	struct timespec ts = { .tv_sec = (time_t)(interval_ns / 1000000000ull),
			       .tv_nsec = (long)(interval_ns % 1000000000ull) };
	struct live_window w;
	int e = live_window_init(&w, vs, filter);

	if (!e)
		e = live_window_next(&w, NULL);
	if (!e && (nanosleep(&ts, NULL) || (stop && *stop)))
		e = -EINTR;
	if (!e)
		e = live_window_next(&w, s);
	live_window_free(&w);
	return e;
}
