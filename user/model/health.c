// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * health.c - is vcpustat blind to a VM that KVM runs? What KVM says of its
 * VMs (model.h, struct kvm_view) against what the programs counted, check
 * after check (docs/vcpustat.md, "Health").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/health.h"
#include "model/summary.h"

const char *health_problem_name(unsigned int bit)
{
	switch (bit) {
	case HEALTH_VM_UNSEEN:
		return "vm_unseen";
	case HEALTH_EXITS_UNSEEN:
		return "exits_unseen";
	case HEALTH_NO_EXIT_PROGRAM:
		return "no_exit_program";
	}
	return "unknown";
}

static const struct kvm_vm_seen *kvm_vm_find(const struct kvm_view *v, __u32 tgid)
{
	for (size_t i = 0; i < v->nr_vms; i++)
		if (v->vms[i].tgid == tgid)
			return &v->vms[i];
	return NULL;
}

static const struct health_seen *seen_find(const struct health_seen *s, size_t n, __u32 tgid)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].tgid == tgid)
			return &s[i];
	return NULL;
}

/* Did the VM run between the checks (so that it had events to see)? Taken to, if nothing tells. */
static bool vm_ran(const struct kvm_vm_seen *v, const struct kvm_vm_seen *pv)
{
	if (v->exits_known && pv->exits_known)
		return v->exits > pv->exits;
	if (v->cpu_known && pv->cpu_known)
		return v->cpu_ns >= pv->cpu_ns + HEALTH_RUNNING_CPU_NS;
	return true;
}

/* The problems of one VM that KVM had at the previous check too. */
static unsigned int vm_problems(const struct kvm_vm_seen *v, const struct kvm_vm_seen *pv,
				const struct health_seen *sv, const struct health_seen *psv, bool exit_programs,
				struct health_vm *out)
{
	memset(out, 0, sizeof(*out));
	out->tgid = v->tgid;
	if (!sv || !sv->nr_vcpus)
		return out->problems = vm_ran(v, pv) ? HEALTH_VM_UNSEEN : 0;
	out->userspace_exits = sv->userspace_exits;
	out->oncpu_ns = sv->oncpu_ns;
	out->seen_exits = sv->kvm_exits - (psv && psv->kvm_exits <= sv->kvm_exits ? psv->kvm_exits : 0);
	if (!exit_programs)
		return 0; /* said once for all VMs: HEALTH_NO_EXIT_PROGRAM */
	if (v->exits_known && pv->exits_known) {
		out->kvm_known = true;
		out->kvm_exits = v->exits > pv->exits ? v->exits - pv->exits : 0;
		if (out->kvm_exits && !out->seen_exits)
			out->problems = HEALTH_EXITS_UNSEEN;
	} else if (!sv->kvm_exits && (sv->userspace_exits >= HEALTH_UEXITS_WITHOUT_EXITS ||
				       sv->oncpu_ns >= HEALTH_ONCPU_WITHOUT_EXITS_NS)) {
		out->problems = HEALTH_EXITS_UNSEEN;
	}
	return out->problems;
}

static int view_copy(struct kvm_view *dst, const struct kvm_view *src)
{
	*dst = *src;
	dst->vms = malloc((src->nr_vms ? src->nr_vms : 1) * sizeof(*dst->vms));
	if (!dst->vms)
		return -ENOMEM;
	if (src->nr_vms)
		memcpy(dst->vms, src->vms, src->nr_vms * sizeof(*dst->vms));
	return 0;
}

/* The tracker remembers this check's view and counts for the next one. */
static int remember(struct health_tracker *t, const struct kvm_view *now, const struct health_seen *seen, size_t nr)
{
	struct health_seen *copy = malloc((nr ? nr : 1) * sizeof(*copy));
	struct kvm_view v;

	if (!copy || view_copy(&v, now)) {
		free(copy);
		return -ENOMEM;
	}
	if (nr)
		memcpy(copy, seen, nr * sizeof(*copy));
	health_tracker_free(t);
	t->prev = v;
	t->prev_seen = copy;
	t->nr_prev_seen = nr;
	t->have_prev = true;
	return 0;
}

int health_check(struct health_tracker *t, const struct kvm_view *now, const struct health_seen *seen, size_t nr,
		 bool exit_programs, struct health *h)
{
	size_t i;

	memset(h, 0, sizeof(*h));
	h->checked = t->have_prev; /* the first check only remembers */
	h->kvm_vms = (unsigned int)now->nr_vms;
	snprintf(h->source, sizeof(h->source), "%s", now->source);
	snprintf(h->exits_why, sizeof(h->exits_why), "%s", now->exits_why);
	if (!exit_programs && now->nr_vms && t->have_prev)
		h->problems |= HEALTH_NO_EXIT_PROGRAM;
	h->vms = calloc(now->nr_vms ? now->nr_vms : 1, sizeof(*h->vms));
	if (!h->vms)
		return -ENOMEM;
	for (i = 0; t->have_prev && i < now->nr_vms; i++) {
		const struct kvm_vm_seen *v = &now->vms[i], *pv = kvm_vm_find(&t->prev, v->tgid);
		const struct health_seen *sv = seen_find(seen, nr, v->tgid);
		const struct health_seen *psv = seen_find(t->prev_seen, t->nr_prev_seen, v->tgid);

		if (!pv) {
			/* new since the last check: judged at the next one, unless its VMM is old and ran */
			if ((sv && sv->nr_vcpus) || !v->cpu_known || v->age_ns < HEALTH_NEW_VM_AGE_NS ||
			    v->cpu_ns < HEALTH_RUNNING_CPU_NS)
				continue;
			h->vms[h->nr_vms] = (struct health_vm){ .tgid = v->tgid, .problems = HEALTH_VM_UNSEEN };
			h->problems |= HEALTH_VM_UNSEEN;
			h->nr_vms++;
			continue;
		}
		if (vm_problems(v, pv, sv, psv, exit_programs, &h->vms[h->nr_vms])) {
			h->problems |= h->vms[h->nr_vms].problems;
			h->nr_vms++;
		}
	}
	if (remember(t, now, seen, nr)) {
		health_free(h);
		return -ENOMEM;
	}
	return 0;
}

void health_free(struct health *h)
{
	free(h->vms);
	h->vms = NULL;
	h->nr_vms = 0;
}

void kvm_view_free(struct kvm_view *v)
{
	free(v->vms);
	memset(v, 0, sizeof(*v));
}

void health_tracker_free(struct health_tracker *t)
{
	kvm_view_free(&t->prev);
	free(t->prev_seen);
	t->prev_seen = NULL;
	t->nr_prev_seen = 0;
	t->have_prev = false;
}

int health_copy(struct health *dst, const struct health *src)
{
	*dst = *src;
	dst->vms = malloc((src->nr_vms ? src->nr_vms : 1) * sizeof(*dst->vms));
	if (!dst->vms) {
		dst->nr_vms = 0;
		return -ENOMEM;
	}
	if (src->nr_vms)
		memcpy(dst->vms, src->vms, src->nr_vms * sizeof(*dst->vms));
	return 0;
}

/* "pid 812 (web), 907 and 2 more" for the VMs with problem bit. */
static size_t vm_list(const struct health *h, unsigned int bit, const char *(*name)(void *ctx, __u32 tgid), void *ctx,
		      char *out, size_t len, __u64 *kvm, __u64 *uexits, __u64 *oncpu, bool *known)
{
	size_t n = 0, at = 0, i;

	*out = '\0';
	*kvm = *uexits = *oncpu = 0;
	*known = false;
	for (i = 0; i < h->nr_vms; i++) {
		const struct health_vm *v = &h->vms[i];
		const char *nm = name ? name(ctx, v->tgid) : NULL;

		if (!(v->problems & bit))
			continue;
		*kvm += v->kvm_exits;
		*uexits += v->userspace_exits;
		*oncpu += v->oncpu_ns;
		*known |= v->kvm_known;
		if (n++ < 3 && at < len)
			at += (size_t)snprintf(out + at, len - at, "%s%u%s%s%s", n > 1 ? ", " : "pid ", v->tgid,
					       nm && *nm ? " (" : "", nm && *nm ? nm : "", nm && *nm ? ")" : "");
	}
	if (n > 3 && at < len)
		snprintf(out + at, len - at, " and %zu more", n - 3);
	return n;
}

void health_message(const struct health *h, const char *(*name)(void *ctx, __u32 tgid), void *ctx, char *out,
		    size_t len)
{
	char vms[256];
	size_t at = 0, n;
	__u64 kvm, uexits, oncpu;
	bool known;

	*out = '\0';
	if (h->problems & HEALTH_NO_EXIT_PROGRAM)
		at += (size_t)snprintf(out + at, len - at,
				       "kvm_entry/kvm_exit are not attached while KVM runs %u VM%s: exits are not counted",
				       h->kvm_vms, h->kvm_vms == 1 ? "" : "s");
	n = vm_list(h, HEALTH_VM_UNSEEN, name, ctx, vms, sizeof(vms), &kvm, &uexits, &oncpu, &known);
	if (n && at < len)
		at += (size_t)snprintf(out + at, len - at,
				       "%sKVM runs %zu VM%s that vcpustat sees no vCPU of (%s): their KVM events do not "
				       "reach its programs",
				       at ? "; " : "", n, n == 1 ? "" : "s", vms);
	n = vm_list(h, HEALTH_EXITS_UNSEEN, name, ctx, vms, sizeof(vms), &kvm, &uexits, &oncpu, &known);
	if (n && at < len) {
		char how[96];

		if (known)
			snprintf(how, sizeof(how), "KVM counted %llu exits", (unsigned long long)kvm);
		else if (uexits >= HEALTH_UEXITS_WITHOUT_EXITS)
			snprintf(how, sizeof(how), "%llu returns of the vCPUs to their VMM", (unsigned long long)uexits);
		else
			snprintf(how, sizeof(how), "its vCPUs ran %.1f s", (double)oncpu / 1e9);
		snprintf(out + at, len - at,
			 "%s%zu VM%s exit%s (%s) and kvm_exit fired for none of it (%s): guest time and exit "
			 "reasons are not measured",
			 at ? "; " : "", n, n == 1 ? "" : "s", n == 1 ? "s" : "", how, vms);
	}
}

static const char *summary_vm_name(void *ctx, __u32 tgid)
{
	const struct summary *s = ctx;

	for (size_t i = 0; i < s->nr_vms; i++)
		if (s->vms[i].tgid == tgid)
			return s->vms[i].name;
	return NULL;
}

void summary_health_message(const struct summary *s, char *out, size_t len)
{
	health_message(&s->health, summary_vm_name, (void *)s, out, len);
}
