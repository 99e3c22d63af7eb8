// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flow.c - execution-flow recovery (model.h; the preemption-analysis paper,
 * Alg. 1-2 and eq. 3): what delayed one thread, and who ran instead.
 *
 * The thread's own states give the intervals (Alg. 1); every interval in
 * which it did not run is resolved (Alg. 2) on the CPU it waited for: a host
 * CPU's current_tid, and when that thread is a vCPU, the vCPU's state: in
 * guest mode the guest thread it ran (guest_tid, with a guest trace), in host
 * mode its hypervisor, preempted or waiting on the host: the CPU it waited
 * for, and so on. A vCPU already being resolved higher up is not entered
 * again (a cycle: the file contradicts itself); the time is then unresolved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"
#include "model/flow.h"
#include "model/recording.h"

#define FLOW_MAX_DEPTH 32 /* vCPUs being resolved at once, at most */

static const char *const kind_names[FLOW_NR_KINDS] = {
	[FLOW_RUNNING] = "running",		[FLOW_HYPERVISOR] = "hypervisor",
	[FLOW_GUEST_RUNQ] = "guest_runqueue",	[FLOW_HOST_RUNQ] = "host_runqueue",
	[FLOW_HOST_BLOCKED] = "host_blocked",	[FLOW_BLOCKED] = "blocked",
};

static const char *const role_names[FLOW_NR_ROLES] = {
	[FLOW_ROLE_THREAD] = "thread",	       [FLOW_ROLE_IDLE] = "idle", [FLOW_ROLE_HYPERVISOR] = "hypervisor",
	[FLOW_ROLE_VCPU] = "vcpu",	       [FLOW_ROLE_UNRESOLVED] = "unresolved",
};

const char *flow_kind_name(unsigned int kind)
{
	return kind < FLOW_NR_KINDS ? kind_names[kind] : "invalid";
}

const char *flow_role_name(unsigned int role)
{
	return role < FLOW_NR_ROLES ? role_names[role] : "invalid";
}

static int parse_tid(const char *s, uint32_t *tid)
{
	char *end;
	unsigned long v;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*tid = (uint32_t)v;
	return 0;
}

int flow_parse_target(const char *arg, struct flow_target *t, struct vcpustat_error *err)
{
	const char *colon = strrchr(arg, ':'), *s = arg;
	char echo[ERROR_ECHO_MAX + 32], echo2[ERROR_ECHO_MAX + 32];

	memset(t, 0, sizeof(*t));
	if (!colon) {
		if (parse_tid(s, &t->tid) || !t->tid)
			return verror(err, -EINVAL,
				      "--flow %s: not a thread: give a host thread id (1234) or VM:GUEST_TID (vm1:345)",
				      error_echo(s, echo, sizeof(echo)));
		return 0;
	}
	t->guest = true;
	if (colon == s || (size_t)(colon - s) >= sizeof(t->vm))
		return verror(err, -EINVAL, "--flow %s: the VM's name before ':' is %s", error_echo(s, echo, sizeof(echo)),
			      colon == s ? "missing (VM:GUEST_TID)" : "too long");
	memcpy(t->vm, s, (size_t)(colon - s));
	t->vm[colon - s] = 0;
	if (parse_tid(colon + 1, &t->tid) || !t->tid)
		return verror(err, -EINVAL, "--flow %s: '%s' is not a guest thread id (VM:GUEST_TID, e.g. vm1:345)",
			      error_echo(s, echo, sizeof(echo)), error_echo(colon + 1, echo2, sizeof(echo2)));
	return 0;
}

/* The intervals of one attribute over the flow's range, fetched once. */
struct lines {
	struct sht_interval *iv;
	size_t n;
	bool loaded;
};

struct fvm {
	const char *name; /* the reader's */
	uint32_t pid;
	uint32_t threads; /* /vms/<vm>/threads, or SHT_NO_ATTR */
	int8_t modes;	  /* guest and host mode told apart (kvm_entry/kvm_exit seen): 1, 0, -1 not looked at yet */
};

struct fvcpu {
	size_t vm;
	int index;
	uint32_t tid; /* its host thread */
	uint32_t a_state, a_pcpu, a_gtid;
	struct lines state, pcpu, gtid;
};

/* What identifies a culprit (zeroed, then filled: it is a hash key). */
struct ckey {
	int32_t vm; /* index in ctx.vms, -1: the host */
	uint32_t tid;
	int32_t vcpu;
	uint8_t role, cycle, pad[2];
};

struct ctx {
	struct sht_reader *r;
	struct flow *f;
	struct vcpustat_error *err;
	uint64_t lo, hi; /* the range lines are fetched over */
	uint32_t host_cpus, host_threads;
	struct fvm *vms;
	size_t nvms;
	struct fvcpu *vcpus;
	size_t nvcpus;
	struct hashmap vcpu_of_tid; /* host tid -> size_t (first vCPU with that thread) */
	struct hashmap cpus;	    /* host cpu -> struct lines * (current_tid) */
	struct hashmap keys;	    /* struct ckey -> int32_t index in f->culprits */
	size_t capc, capiv;
	struct ckey *ck;     /* per culprit: its key, */
	uint64_t *first;     /* and the start of its first interval (where its names are looked up) */
	/* the target */
	int32_t t_vm;	   /* guest thread: its VM, else -1 */
	uint32_t t_gtid;   /* guest thread: its guest tid */
	uint32_t t_htid;   /* host thread: its tid, else 0 */
	/* vCPUs being resolved */
	size_t stack[FLOW_MAX_DEPTH];
	size_t depth;
};

static int load(struct ctx *c, struct lines *l, uint32_t attr)
{
	if (l->loaded)
		return 0;
	l->loaded = true;
	if (attr == SHT_NO_ATTR)
		return 0;
	return sht_query_range(c->r, attr, NULL, c->lo, c->hi, &l->iv, &l->n, c->err);
}

static void lines_free(struct lines *l)
{
	free(l->iv);
	l->iv = NULL;
	l->n = 0;
	l->loaded = false;
}

/*
 * A host CPU's current_tid intervals (runner_tid at level vcpu) in *out: 0, or a
 * negative errno (then *out is NULL). The table holds pointers: resolve()
 * keeps one CPU's lines while it recurses into another's, whose insert may
 * move the table's slots.
 */
static int cpu_lines(struct ctx *c, uint32_t cpu, struct lines **out)
{
	struct lines **hit = hashmap_lookup(&c->cpus, &cpu), *l;
	char name[16];
	uint32_t a;
	int e;

	*out = NULL;
	if (hit) {
		*out = *hit;
		return 0;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%u", cpu);
	a = sht_attr_child(c->r, c->host_cpus, name);
	if (a != SHT_NO_ATTR) {
		/* level full: every switch; level vcpu: only while tracked threads waited there */
		uint32_t cur = sht_attr_child(c->r, a, "current_tid");

		a = cur != SHT_NO_ATTR ? cur : sht_attr_child(c->r, a, "runner_tid");
	}
	e = load(c, l, a);
	if (!e && hashmap_insert(&c->cpus, &cpu, &l))
		e = -ENOMEM;
	if (e) {
		free(l->iv);
		free(l);
		return e;
	}
	*out = l;
	return 0;
}

/*
 * The first value of attr (a name, a pid: set once) of a type in [t1, t2],
 * else in the whole file. A range query visits every node that meets the
 * range: the short one first.
 */
static bool value_in(struct sht_reader *r, uint32_t attr, enum sht_type type, uint64_t t1, uint64_t t2, char *buf,
		     size_t len, int64_t *v)
{
	struct sht_interval *iv = NULL;
	bool found = false;
	size_t n = 0;

	if (attr == SHT_NO_ATTR || sht_query_range(r, attr, NULL, t1, t2, &iv, &n, NULL))
		return false;
	for (size_t i = 0; i < n && !found; i++) {
		if (iv[i].value.type != type)
			continue;
		if (type == SHT_STR)
			snprintf(buf, len, "%s", iv[i].value.s);
		else
			*v = iv[i].value.i;
		found = true;
	}
	free(iv);
	return found;
}

static void str_of(struct sht_reader *r, uint32_t attr, uint64_t t1, uint64_t t2, char *buf, size_t len)
{
	const struct sht_info *info = sht_get_info(r);

	if (!value_in(r, attr, SHT_STR, t1, t2, buf, len, NULL))
		value_in(r, attr, SHT_STR, info->start, info->end, buf, len, NULL);
}

static int64_t int_of(struct sht_reader *r, uint32_t attr, uint64_t t1, uint64_t t2, int64_t def)
{
	const struct sht_info *info = sht_get_info(r);
	int64_t v = def;

	if (!value_in(r, attr, SHT_INT, t1, t2, NULL, 0, &v))
		value_in(r, attr, SHT_INT, info->start, info->end, NULL, 0, &v);
	return v;
}

static uint32_t host_thread_attr(struct ctx *c, uint32_t tid, const char *leaf)
{
	char name[16];
	uint32_t th;

	snprintf(name, sizeof(name), "%u", tid);
	th = sht_attr_child(c->r, c->host_threads, name);
	return th == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_child(c->r, th, leaf);
}

/* A host process's name: the VM's if it is a VMM, else its main thread's, else "pid N". */
static void process_name(struct ctx *c, uint32_t pid, uint64_t t, char *buf, size_t len)
{
	snprintf(buf, len, "pid %u", pid);
	for (size_t i = 0; i < c->nvms; i++)
		if (c->vms[i].pid == pid && pid) {
			snprintf(buf, len, "%s", c->vms[i].name);
			return;
		}
	if (pid)
		str_of(c->r, host_thread_attr(c, pid, "name"), t, t, buf, len);
}

/* Name the culprit k: its names as they were at t (its first interval), else anywhere in the file. */
static void culprit_fill(struct ctx *c, const struct ckey *k, uint64_t t, struct flow_culprit *cu)
{
	const struct fvm *vm = k->vm >= 0 ? &c->vms[k->vm] : NULL;

	memset(cu, 0, sizeof(*cu));
	cu->role = (enum flow_role)k->role;
	cu->tid = k->tid;
	cu->vcpu = k->vcpu;
	cu->cycle = k->cycle;
	snprintf(cu->system, sizeof(cu->system), "host");
	if (vm)
		snprintf(cu->vm, sizeof(cu->vm), "%s", vm->name);
	switch (cu->role) {
	case FLOW_ROLE_THREAD:
		if (vm) {
			uint32_t th;
			char name[16];

			cu->in_vm = true;
			snprintf(cu->system, sizeof(cu->system), "%s", vm->name);
			snprintf(cu->process, sizeof(cu->process), "guest");
			snprintf(name, sizeof(name), "%u", k->tid);
			th = sht_attr_child(c->r, vm->threads, name);
			snprintf(cu->name, sizeof(cu->name), "tid %u", k->tid);
			if (th != SHT_NO_ATTR)
				str_of(c->r, sht_attr_child(c->r, th, "name"), t, t, cu->name, sizeof(cu->name));
		} else {
			snprintf(cu->name, sizeof(cu->name), "tid %u", k->tid);
			str_of(c->r, host_thread_attr(c, k->tid, "name"), t, t, cu->name, sizeof(cu->name));
			cu->pid = (uint32_t)int_of(c->r, host_thread_attr(c, k->tid, "pid"), t, t, 0);
			if (cu->pid)
				process_name(c, cu->pid, t, cu->process, sizeof(cu->process));
			else
				snprintf(cu->process, sizeof(cu->process), "(unknown process)");
		}
		break;
	case FLOW_ROLE_IDLE:
		cu->in_vm = vm != NULL;
		if (vm)
			snprintf(cu->system, sizeof(cu->system), "%s", vm->name);
		snprintf(cu->process, sizeof(cu->process), "idle");
		snprintf(cu->name, sizeof(cu->name), "swapper");
		break;
	case FLOW_ROLE_HYPERVISOR:
		cu->pid = vm ? vm->pid : 0;
		snprintf(cu->process, sizeof(cu->process), "%s", vm ? vm->name : "?");
		snprintf(cu->name, sizeof(cu->name), "vCPU %d", k->vcpu);
		break;
	case FLOW_ROLE_VCPU:
		cu->in_vm = true;
		snprintf(cu->system, sizeof(cu->system), "%s", vm ? vm->name : "?");
		snprintf(cu->process, sizeof(cu->process), "vcpus");
		snprintf(cu->name, sizeof(cu->name), "vCPU %d", k->vcpu);
		break;
	default:
		cu->in_vm = vm != NULL;
		if (vm)
			snprintf(cu->system, sizeof(cu->system), "%s", vm->name);
		snprintf(cu->process, sizeof(cu->process), "unresolved");
		if (k->vcpu >= 0)
			snprintf(cu->name, sizeof(cu->name), "vCPU %d%s", k->vcpu, k->cycle ? " (cycle)" : "");
		else
			snprintf(cu->name, sizeof(cu->name), "unknown");
		break;
	}
}

/* The index of the culprit k in f->culprits, added if new; -ENOMEM. */
static int32_t culprit(struct ctx *c, int32_t vm, uint32_t tid, int32_t vcpu, enum flow_role role, bool cycle)
{
	struct ckey k;
	int32_t *hit, idx;

	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.tid = tid;
	k.vcpu = vcpu;
	k.role = (uint8_t)role;
	k.cycle = cycle;
	hit = hashmap_lookup(&c->keys, &k);
	if (hit)
		return *hit;
	if (c->f->nculprits == c->capc) {
		size_t cap = c->capc ? 2 * c->capc : 16;
		struct flow_culprit *a = realloc(c->f->culprits, cap * sizeof(*a));
		struct ckey *ck;
		uint64_t *first;

		if (!a)
			return -ENOMEM;
		c->f->culprits = a;
		ck = realloc(c->ck, cap * sizeof(*ck));
		if (!ck)
			return -ENOMEM;
		c->ck = ck;
		first = realloc(c->first, cap * sizeof(*first));
		if (!first)
			return -ENOMEM;
		c->first = first;
		c->capc = cap;
	}
	idx = (int32_t)c->f->nculprits;
	if (hashmap_insert(&c->keys, &k, &idx))
		return -ENOMEM;
	memset(&c->f->culprits[idx], 0, sizeof(c->f->culprits[idx]));
	c->ck[idx] = k;
	c->first[idx] = UINT64_MAX;
	c->f->nculprits++;
	return idx;
}

/* [a, b) of the flow: kind, culprit (an index, -1: none, or a negative errno). */
static int emit(struct ctx *c, uint64_t a, uint64_t b, enum flow_kind kind, int32_t who)
{
	struct flow *f = c->f;
	struct flow_interval *last = f->niv ? &f->iv[f->niv - 1] : NULL;

	if (who < -1)
		return who;
	if (b <= a)
		return 0;
	f->ns[kind] += b - a;
	if (who >= 0) {
		f->culprits[who].ns += b - a;
		if (c->first[who] == UINT64_MAX)
			c->first[who] = a;
	}
	if (last && last->end == a && last->kind == kind && last->culprit == who) {
		last->end = b;
		return 0;
	}
	if (f->niv == c->capiv) {
		size_t cap = c->capiv ? 2 * c->capiv : 64;
		struct flow_interval *n = realloc(f->iv, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		f->iv = n;
		c->capiv = cap;
	}
	f->iv[f->niv++] = (struct flow_interval){ .start = a, .end = b, .kind = kind, .culprit = who };
	return 0;
}

static int unresolved(struct ctx *c, uint64_t a, uint64_t b, enum flow_kind kind, int32_t vm, int32_t vcpu,
		      bool cycle)
{
	return emit(c, a, b, kind, culprit(c, vm, 0, vcpu, FLOW_ROLE_UNRESOLVED, cycle));
}

static int resolve_host_cpu(struct ctx *c, uint32_t cpu, uint64_t a, uint64_t b, enum flow_kind kind);

/*
 * Whether the VM's vCPUs were ever in guest mode over the flow's range: if
 * not, its host trace had no kvm_entry/kvm_exit (a software KVM) and "host"
 * means on a CPU, in either mode (docs/sht-attributes.md).
 */
static int vm_modes(struct ctx *c, size_t vm, bool *known)
{
	struct fvm *m = &c->vms[vm];

	for (size_t v = 0; m->modes < 0 && v < c->nvcpus; v++) {
		struct fvcpu *vc = &c->vcpus[v];
		int e;

		if (vc->vm != vm)
			continue;
		e = load(c, &vc->state, vc->a_state);
		if (e)
			return e;
		for (size_t i = 0; i < vc->state.n; i++)
			if (vc->state.iv[i].value.type == SHT_INT && vc->state.iv[i].value.i == VCPU_GUEST) {
				m->modes = 1;
				break;
			}
	}
	if (m->modes < 0)
		m->modes = 0;
	*known = m->modes > 0;
	return 0;
}

static bool on_stack(const struct ctx *c, size_t v)
{
	for (size_t i = 0; i < c->depth; i++)
		if (c->stack[i] == v)
			return true;
	return false;
}

/* vCPU v in guest mode over [a, b): the guest thread it ran, when the guest trace says. */
static int guest_code(struct ctx *c, size_t v, uint64_t a, uint64_t b, enum flow_kind kind)
{
	struct fvcpu *vc = &c->vcpus[v];
	int32_t vm = (int32_t)vc->vm;
	uint64_t cur = a;
	int e = load(c, &vc->gtid, vc->a_gtid);

	if (e)
		return e;
	for (size_t i = report_first_after(vc->gtid.iv, vc->gtid.n, a); i < vc->gtid.n && vc->gtid.iv[i].start < b; i++) {
		const struct sht_interval *iv = &vc->gtid.iv[i];
		uint64_t s = max_u64(iv->start, a), t = min_u64(iv->end, b);
		uint32_t g;

		if (t <= s)
			continue;
		if (s > cur && (e = emit(c, cur, s, kind, culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_VCPU, false))))
			return e;
		cur = t;
		if (iv->value.type != SHT_INT) {
			e = emit(c, s, t, kind, culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_VCPU, false));
		} else if ((g = (uint32_t)iv->value.i) == 0) {
			e = emit(c, s, t, kind, culprit(c, vm, 0, -1, FLOW_ROLE_IDLE, false));
		} else if (vm == c->t_vm && g == c->t_gtid) {
			/* the thread itself: the file contradicts itself */
			e = unresolved(c, s, t, kind, vm, vc->index, false);
		} else {
			e = emit(c, s, t, kind, culprit(c, vm, g, -1, FLOW_ROLE_THREAD, false));
		}
		if (e)
			return e;
	}
	if (cur < b)
		return emit(c, cur, b, kind, culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_VCPU, false));
	return 0;
}

/* What vCPU v did over [a, b) while the thread waited for it (resolve() inside a VM). */
static int resolve_vcpu(struct ctx *c, size_t v, uint64_t a, uint64_t b, enum flow_kind kind)
{
	struct fvcpu *vc = &c->vcpus[v];
	int32_t vm = (int32_t)vc->vm;
	uint64_t cur = a;
	bool modes;
	int e;

	if (on_stack(c, v) || c->depth == FLOW_MAX_DEPTH)
		return unresolved(c, a, b, kind, vm, vc->index, true);
	e = load(c, &vc->state, vc->a_state);
	if (!e)
		e = load(c, &vc->pcpu, vc->a_pcpu);
	if (e)
		return e;
	c->stack[c->depth++] = v;
	for (size_t i = report_first_after(vc->state.iv, vc->state.n, a); !e && i < vc->state.n && vc->state.iv[i].start < b;
	     i++) {
		const struct sht_interval *iv = &vc->state.iv[i], *p;
		uint64_t s = max_u64(iv->start, a), t = min_u64(iv->end, b);

		if (t <= s)
			continue;
		if (s > cur && (e = emit(c, cur, s, kind, culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_VCPU, false))))
			break;
		cur = t;
		switch (iv->value.type == SHT_INT ? iv->value.i : -1) {
		case VCPU_GUEST:
		case VCPU_UNKNOWN:
			e = guest_code(c, v, s, t, kind);
			break;
		case VCPU_HOST:
		case VCPU_POLL: /* in KVM's halt polling */
			e = vm_modes(c, vc->vm, &modes);
			if (!e && !modes) /* on a CPU, mode unknown: what it ran */
				e = guest_code(c, v, s, t, kind);
			else if (!e)
				e = emit(c, s, t, kind,
					 culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_HYPERVISOR, false));
			break;
		case VCPU_PREEMPTED:
		case VCPU_WAIT:
			p = report_covering(vc->pcpu.iv, vc->pcpu.n, s);
			if (p && p->value.type == SHT_INT)
				e = resolve_host_cpu(c, (uint32_t)p->value.i, s, t, kind);
			else
				e = unresolved(c, s, t, kind, vm, vc->index, false);
			break;
		case VCPU_IDLE:
		case VCPU_BLOCKED:
			/* its guest CPU halted */
			e = emit(c, s, t, kind, culprit(c, vm, 0, -1, FLOW_ROLE_IDLE, false));
			break;
		default: /* no state (not seen as a vCPU yet, or gone): the vCPU itself */
			e = emit(c, s, t, kind, culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_VCPU, false));
			break;
		}
	}
	c->depth--;
	if (!e && cur < b)
		e = emit(c, cur, b, kind, culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_VCPU, false));
	return e;
}

/* Who ran on host CPU cpu over [a, b) (Alg. 2's resolve()). */
static int resolve_host_cpu(struct ctx *c, uint32_t cpu, uint64_t a, uint64_t b, enum flow_kind kind)
{
	struct lines *l;
	uint64_t cur = a;
	int e;

	if (!c->f->host_cpus)
		return unresolved(c, a, b, kind, -1, -1, false);
	e = cpu_lines(c, cpu, &l);
	if (e)
		return e;
	for (size_t i = report_first_after(l->iv, l->n, a); i < l->n && l->iv[i].start < b; i++) {
		const struct sht_interval *iv = &l->iv[i];
		uint64_t s = max_u64(iv->start, a), t = min_u64(iv->end, b);
		const size_t *v;
		uint32_t tid;

		if (t <= s)
			continue;
		if (s > cur && (e = unresolved(c, cur, s, kind, -1, -1, false)))
			return e;
		cur = t;
		if (iv->value.type != SHT_INT)
			e = unresolved(c, s, t, kind, -1, -1, false);
		else if ((tid = (uint32_t)iv->value.i) == 0)
			e = emit(c, s, t, kind, culprit(c, -1, 0, -1, FLOW_ROLE_IDLE, false));
		else if (tid == c->t_htid)
			e = unresolved(c, s, t, kind, -1, -1, false); /* the thread itself: a contradiction */
		else if ((v = hashmap_lookup(&c->vcpu_of_tid, &tid)))
			e = resolve_vcpu(c, *v, s, t, kind);
		else
			e = emit(c, s, t, kind, culprit(c, -1, tid, -1, FLOW_ROLE_THREAD, false));
		if (e)
			return e;
	}
	if (cur < b)
		return unresolved(c, cur, b, kind, -1, -1, false);
	return 0;
}

/*
 * Whether an interval of attr holding val ends at t (at_start false) or
 * starts at t: in l when l holds t's neighbourhood (the flow's range), else
 * asked of the file around t (the edges of a thread's first and last state
 * may lie far outside the range: its CPU lines are not read that far).
 */
static int edge(struct ctx *c, uint32_t attr, struct lines *l, uint64_t t, bool at_start, int64_t val, bool *yes)
{
	struct sht_interval *iv = NULL;
	uint64_t probe = at_start ? t : t - 1;
	size_t n = 0;
	int e;

	*yes = false;
	if (attr == SHT_NO_ATTR || (!at_start && !t))
		return 0;
	if (probe >= c->lo && probe <= c->hi) {
		e = load(c, l, attr);
		if (e)
			return e;
		iv = l->iv;
		n = l->n;
	} else {
		e = sht_query_range(c->r, attr, NULL, probe, probe, &iv, &n, c->err);
		if (e)
			return e;
	}
	{
		const struct sht_interval *hit = report_covering(iv, n, probe);

		*yes = hit && hit->value.type == SHT_INT && hit->value.i == val &&
		       (at_start ? hit->start : hit->end) == t;
	}
	if (iv != l->iv)
		free(iv);
	return 0;
}

/*
 * The CPU the host thread tid waited for over [s, e): preempted, the one it
 * was switched out of; woken, the one it then ran on (else the other).
 */
static int host_cpu_of(struct ctx *c, uint32_t tid, uint64_t s, uint64_t e, bool woken, uint32_t *cpu)
{
	int found_before = -1, found_after = -1;

	for (uint32_t a = report_first_child(c->r, c->host_cpus); a != SHT_NO_ATTR;
	     a = sht_attr_next_sibling(c->r, a)) {
		uint32_t n = (uint32_t)strtoul(sht_attr_name(c->r, a), NULL, 10);
		uint32_t cur = sht_attr_child(c->r, a, "current_tid");
		struct lines *l;
		bool before, after;
		int err;

		err = cpu_lines(c, n, &l);
		if (!err)
			err = edge(c, cur, l, s, false, tid, &before);
		if (!err)
			err = edge(c, cur, l, e, true, tid, &after);
		if (err)
			return err;
		if (before && found_before < 0)
			found_before = (int)n;
		if (after && found_after < 0)
			found_after = (int)n;
	}
	if (woken ? found_after >= 0 : found_before >= 0)
		*cpu = (uint32_t)(woken ? found_after : found_before);
	else if (found_before >= 0 || found_after >= 0)
		*cpu = (uint32_t)(found_before >= 0 ? found_before : found_after);
	else
		return -ENOENT;
	return 0;
}

/* The vCPU of the target's VM the guest thread waited for (as host_cpu_of), or -ENOENT. */
static int guest_cpu_of(struct ctx *c, uint64_t s, uint64_t e, bool woken, size_t *out)
{
	long before = -1, after = -1;

	for (size_t v = 0; v < c->nvcpus; v++) {
		struct fvcpu *vc = &c->vcpus[v];
		bool b, a;
		int err;

		if ((int32_t)vc->vm != c->t_vm)
			continue;
		err = edge(c, vc->a_gtid, &vc->gtid, s, false, c->t_gtid, &b);
		if (!err)
			err = edge(c, vc->a_gtid, &vc->gtid, e, true, c->t_gtid, &a);
		if (err)
			return err;
		if (b && before < 0)
			before = (long)v;
		if (a && after < 0)
			after = (long)v;
	}
	if (woken ? after >= 0 : before >= 0)
		*out = (size_t)(woken ? after : before);
	else if (before >= 0 || after >= 0)
		*out = (size_t)(before >= 0 ? before : after);
	else
		return -ENOENT;
	return 0;
}

/* The vCPU of the target's VM on which the guest thread is current at t, or -ENOENT. */
static int guest_cpu_at(struct ctx *c, uint64_t t, size_t *out)
{
	for (size_t v = 0; v < c->nvcpus; v++) {
		struct fvcpu *vc = &c->vcpus[v];
		const struct sht_interval *iv;
		int err;

		if ((int32_t)vc->vm != c->t_vm)
			continue;
		err = load(c, &vc->gtid, vc->a_gtid);
		if (err)
			return err;
		iv = report_covering(vc->gtid.iv, vc->gtid.n, t);
		if (iv && iv->value.type == SHT_INT && (uint32_t)iv->value.i == c->t_gtid) {
			*out = v;
			return 0;
		}
	}
	return -ENOENT;
}

/* A guest thread current in its guest over [a, b) while vCPU v was not in guest mode. */
static int virt_preempted(struct ctx *c, size_t v, uint64_t a, uint64_t b)
{
	struct fvcpu *vc = &c->vcpus[v];
	int32_t vm = (int32_t)vc->vm;
	uint64_t cur = a;
	int e = load(c, &vc->state, vc->a_state);

	if (!e)
		e = load(c, &vc->pcpu, vc->a_pcpu);
	if (e)
		return e;
	c->stack[c->depth++] = v;
	for (size_t i = report_first_after(vc->state.iv, vc->state.n, a); !e && i < vc->state.n && vc->state.iv[i].start < b;
	     i++) {
		const struct sht_interval *iv = &vc->state.iv[i], *p;
		uint64_t s = max_u64(iv->start, a), t = min_u64(iv->end, b);

		if (t <= s)
			continue;
		if (s > cur && (e = unresolved(c, cur, s, FLOW_HYPERVISOR, vm, vc->index, false)))
			break;
		cur = t;
		switch (iv->value.type == SHT_INT ? iv->value.i : -1) {
		case VCPU_PREEMPTED:
		case VCPU_WAIT:
			p = report_covering(vc->pcpu.iv, vc->pcpu.n, s);
			if (p && p->value.type == SHT_INT)
				e = resolve_host_cpu(c, (uint32_t)p->value.i, s, t, FLOW_HOST_RUNQ);
			else
				e = unresolved(c, s, t, FLOW_HOST_RUNQ, vm, vc->index, false);
			break;
		case VCPU_IDLE:
		case VCPU_BLOCKED:
			e = emit(c, s, t, FLOW_HOST_BLOCKED, -1);
			break;
		default: /* host mode (guest mode would contradict the thread's state: counted with it) */
			e = emit(c, s, t, FLOW_HYPERVISOR,
				 culprit(c, vm, vc->tid, vc->index, FLOW_ROLE_HYPERVISOR, false));
			break;
		}
	}
	c->depth--;
	if (!e && cur < b)
		e = unresolved(c, cur, b, FLOW_HYPERVISOR, vm, vc->index, false);
	return e;
}

/* Alg. 1 for a guest thread: its states, from the guest trace and its vCPU's host states. */
static int flow_guest(struct ctx *c, const struct sht_interval *st, size_t n)
{
	int e = 0;

	for (size_t i = 0; !e && i < n; i++) {
		uint64_t s = max_u64(st[i].start, c->f->start), t = min_u64(st[i].end, c->f->end);
		const char *v = st[i].value.type == SHT_STR ? st[i].value.s : "";
		size_t vc;

		if (t <= s || st[i].value.type != SHT_STR)
			continue;
		if (!strcmp(v, "running")) {
			e = emit(c, s, t, FLOW_RUNNING, -1);
		} else if (!strcmp(v, "virt_preempted")) {
			e = guest_cpu_at(c, s, &vc);
			if (e == -ENOENT)
				e = unresolved(c, s, t, FLOW_HYPERVISOR, c->t_vm, -1, false);
			else if (!e)
				e = virt_preempted(c, vc, s, t);
		} else if (!strcmp(v, "preempted") || !strcmp(v, "wait")) {
			e = guest_cpu_of(c, st[i].start, st[i].end, v[0] == 'w', &vc);
			if (e == -ENOENT)
				e = unresolved(c, s, t, FLOW_GUEST_RUNQ, c->t_vm, -1, false);
			else if (!e)
				e = resolve_vcpu(c, vc, s, t, FLOW_GUEST_RUNQ);
		} else if (!strcmp(v, "blocked")) {
			e = emit(c, s, t, FLOW_BLOCKED, -1);
		}
	}
	return e;
}

/* Alg. 1 for a host thread that is a vCPU: its vCPU states. */
static int flow_vcpu(struct ctx *c, size_t v, const struct sht_interval *st, size_t n)
{
	struct fvcpu *vc = &c->vcpus[v];
	int e = load(c, &vc->pcpu, vc->a_pcpu);
	bool modes = true;

	if (!e)
		e = vm_modes(c, vc->vm, &modes);
	c->stack[c->depth++] = v;
	for (size_t i = 0; !e && i < n; i++) {
		uint64_t s = max_u64(st[i].start, c->f->start), t = min_u64(st[i].end, c->f->end);
		const struct sht_interval *p;

		if (t <= s || st[i].value.type != SHT_INT)
			continue;
		switch (st[i].value.i) {
		case VCPU_GUEST:
		case VCPU_UNKNOWN:
			e = emit(c, s, t, FLOW_RUNNING, -1);
			break;
		case VCPU_HOST:
		case VCPU_POLL: /* in KVM's halt polling */
			if (!modes) /* on its CPU, in either mode */
				e = emit(c, s, t, FLOW_RUNNING, -1);
			else
				e = emit(c, s, t, FLOW_HYPERVISOR,
					 culprit(c, (int32_t)vc->vm, vc->tid, vc->index, FLOW_ROLE_HYPERVISOR, false));
			break;
		case VCPU_PREEMPTED:
		case VCPU_WAIT:
			p = report_covering(vc->pcpu.iv, vc->pcpu.n, s);
			if (p && p->value.type == SHT_INT)
				e = resolve_host_cpu(c, (uint32_t)p->value.i, s, t, FLOW_HOST_RUNQ);
			else
				e = unresolved(c, s, t, FLOW_HOST_RUNQ, (int32_t)vc->vm, vc->index, false);
			break;
		default: /* idle, blocked */
			e = emit(c, s, t, FLOW_BLOCKED, -1);
			break;
		}
	}
	c->depth--;
	return e;
}

/* Alg. 1 for a host thread: /host/threads/<tid>/state. */
static int flow_host(struct ctx *c, const struct sht_interval *st, size_t n)
{
	int e = 0;

	for (size_t i = 0; !e && i < n; i++) {
		uint64_t s = max_u64(st[i].start, c->f->start), t = min_u64(st[i].end, c->f->end);
		const char *v = st[i].value.type == SHT_STR ? st[i].value.s : "";
		uint32_t cpu;

		if (t <= s || st[i].value.type != SHT_STR)
			continue;
		if (!strcmp(v, "running")) {
			e = emit(c, s, t, FLOW_RUNNING, -1);
		} else if (!strcmp(v, "preempted") || !strcmp(v, "wait")) {
			e = host_cpu_of(c, c->t_htid, st[i].start, st[i].end, v[0] == 'w', &cpu);
			if (e == -ENOENT)
				e = unresolved(c, s, t, FLOW_HOST_RUNQ, -1, -1, false);
			else if (!e)
				e = resolve_host_cpu(c, cpu, s, t, FLOW_HOST_RUNQ);
		} else if (!strcmp(v, "blocked")) {
			e = emit(c, s, t, FLOW_BLOCKED, -1);
		}
	}
	return e;
}

static int by_ns(const void *a, const void *b)
{
	const struct flow_culprit *x = a, *y = b;
	int d;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	d = strcmp(x->system, y->system);
	if (d)
		return d;
	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->vcpu < y->vcpu ? -1 : x->vcpu > y->vcpu;
}

/* Sort the culprits by time and renumber the intervals' references. */
static int finish(struct flow *f)
{
	uint64_t life = f->end - f->start;
	int32_t *map;
	struct {
		struct flow_culprit c;
		int32_t old;
	} *tmp;

	if (!f->nculprits)
		return 0;
	tmp = calloc(f->nculprits, sizeof(*tmp));
	map = calloc(f->nculprits, sizeof(*map));
	if (!tmp || !map) {
		free(tmp);
		free(map);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->nculprits; i++) {
		f->culprits[i].impact = life ? (double)f->culprits[i].ns / (double)life : 0;
		tmp[i].c = f->culprits[i];
		tmp[i].old = (int32_t)i;
	}
	qsort(tmp, f->nculprits, sizeof(*tmp), by_ns); /* the struct starts with the culprit */
	for (size_t i = 0; i < f->nculprits; i++) {
		f->culprits[i] = tmp[i].c;
		map[tmp[i].old] = (int32_t)i;
	}
	for (size_t i = 0; i < f->niv; i++)
		if (f->iv[i].culprit >= 0)
			f->iv[i].culprit = map[f->iv[i].culprit];
	free(tmp);
	free(map);
	return 0;
}

/* The file's VMs and vCPUs. */
static int scan(struct ctx *c)
{
	uint32_t vms = sht_attr_child(c->r, SHT_NO_ATTR, "vms");

	for (uint32_t vm = report_first_child(c->r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(c->r, vm)) {
		struct fvm *a = realloc(c->vms, (c->nvms + 1) * sizeof(*a));

		if (!a)
			return -ENOMEM;
		c->vms = a;
		a = &c->vms[c->nvms];
		a->name = sht_attr_name(c->r, vm);
		a->pid = (uint32_t)int_of(c->r, sht_attr_child(c->r, vm, "pid"), c->lo, c->hi, 0);
		a->threads = sht_attr_child(c->r, vm, "threads");
		a->modes = -1;
		if (a->threads != SHT_NO_ATTR)
			c->f->guest_trace = true;
		for (uint32_t vc = report_first_child(c->r, sht_attr_child(c->r, vm, "vcpus")); vc != SHT_NO_ATTR;
		     vc = sht_attr_next_sibling(c->r, vc)) {
			struct fvcpu *v = realloc(c->vcpus, (c->nvcpus + 1) * sizeof(*v));
			size_t idx = c->nvcpus;

			if (!v)
				return -ENOMEM;
			c->vcpus = v;
			v = &c->vcpus[c->nvcpus++];
			memset(v, 0, sizeof(*v));
			v->vm = c->nvms;
			v->index = atoi(sht_attr_name(c->r, vc));
			v->tid = (uint32_t)int_of(c->r, sht_attr_child(c->r, vc, "tid"), c->lo, c->hi, 0);
			v->a_state = sht_attr_child(c->r, vc, "state");
			v->a_pcpu = sht_attr_child(c->r, vc, "pcpu");
			v->a_gtid = sht_attr_child(c->r, vc, "guest_tid");
			if (v->tid && !hashmap_lookup(&c->vcpu_of_tid, &v->tid) &&
			    hashmap_insert(&c->vcpu_of_tid, &v->tid, &idx))
				return -ENOMEM;
		}
		c->nvms++;
	}
	return 0;
}

static void ctx_free(struct ctx *c)
{
	size_t pos = 0;
	void *k, *v;

	while (hashmap_next(&c->cpus, &pos, &k, &v)) {
		struct lines *l = *(struct lines **)v;

		free(l->iv);
		free(l);
	}
	hashmap_free(&c->cpus);
	hashmap_free(&c->keys);
	hashmap_free(&c->vcpu_of_tid);
	for (size_t i = 0; i < c->nvcpus; i++) {
		lines_free(&c->vcpus[i].state);
		lines_free(&c->vcpus[i].pcpu);
		lines_free(&c->vcpus[i].gtid);
	}
	free(c->vcpus);
	free(c->vms);
	free(c->ck);
	free(c->first);
}

/* The VM named (or with the VMM pid) name, or -1. */
static int32_t find_vm(const struct ctx *c, const char *name)
{
	char pid[16];

	for (size_t i = 0; i < c->nvms; i++)
		if (!strcmp(c->vms[i].name, name))
			return (int32_t)i;
	for (size_t i = 0; i < c->nvms; i++) {
		snprintf(pid, sizeof(pid), "%u", c->vms[i].pid);
		if (c->vms[i].pid && !strcmp(pid, name))
			return (int32_t)i;
	}
	return -1;
}

int flow_build(struct flow *f, struct sht_reader *r, const struct flow_target *t, uint64_t from, uint64_t to,
	       struct vcpustat_error *err)
{
	struct ctx c = { .r = r, .f = f, .err = err, .t_vm = -1 };
	struct sht_interval *st = NULL;
	uint32_t a_state = SHT_NO_ATTR;
	const size_t *vcpu = NULL;
	size_t n = 0;
	bool alive = false;
	int e;

	memset(f, 0, sizeof(*f));
	f->target = *t;
	f->vcpu = -1;
	f->from = from;
	f->to = to;
	c.host_cpus = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "cpus");
	c.host_threads = sht_attr_child(r, sht_attr_child(r, SHT_NO_ATTR, "host"), "threads");
	f->host_cpus = c.host_cpus != SHT_NO_ATTR;
	if (hashmap_init(&c.cpus, sizeof(uint32_t), sizeof(struct lines *), 0) ||
	    hashmap_init(&c.keys, sizeof(struct ckey), sizeof(int32_t), 0) ||
	    hashmap_init(&c.vcpu_of_tid, sizeof(uint32_t), sizeof(size_t), 0)) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	c.lo = from; /* until the lifespan is known: the window */
	c.hi = to;
	e = scan(&c);
	if (e) {
		verror(err, e, "out of memory");
		goto out;
	}
	if (t->guest) {
		char name[16];
		uint32_t th;

		c.t_vm = find_vm(&c, t->vm);
		if (c.t_vm < 0) {
			e = verror(
			    err, -ENOENT,
			    "no VM '%s' in the file (its VMs are under /vms: `vcpustat query FILE --path '/vms/*'`)",
			    t->vm);
			goto out;
		}
		snprintf(f->vm, sizeof(f->vm), "%s", c.vms[c.t_vm].name);
		snprintf(name, sizeof(name), "%u", t->tid);
		th = sht_attr_child(r, c.vms[c.t_vm].threads, name);
		a_state = th == SHT_NO_ATTR ? SHT_NO_ATTR : sht_attr_child(r, th, "state");
		if (a_state == SHT_NO_ATTR) {
			e = verror(
			    err, -ENOENT, "VM %s has no guest thread %u in the file%s", f->vm, t->tid,
			    c.vms[c.t_vm].threads == SHT_NO_ATTR
				? " (it has no guest threads: import a guest trace with `vcpustat import --guest`)"
				: "");
			goto out;
		}
		c.t_gtid = t->tid;
		snprintf(f->name, sizeof(f->name), "tid %u", t->tid);
		str_of(r, sht_attr_child(r, th, "name"), from, to, f->name, sizeof(f->name));
	} else {
		vcpu = hashmap_lookup(&c.vcpu_of_tid, &t->tid);
		c.t_htid = t->tid;
		snprintf(f->name, sizeof(f->name), "tid %u", t->tid);
		str_of(r, host_thread_attr(&c, t->tid, "name"), from, to, f->name, sizeof(f->name));
		if (vcpu) {
			const struct fvcpu *v = &c.vcpus[*vcpu];

			a_state = v->a_state;
			f->vcpu = v->index;
			snprintf(f->vm, sizeof(f->vm), "%s", c.vms[v->vm].name);
		} else {
			a_state = host_thread_attr(&c, t->tid, "state");
		}
		if (a_state == SHT_NO_ATTR) {
			e = verror(err, -ENOENT, "no thread %u in the file (host threads are in recordings made with "
						 "--level full; a guest thread is VM:GUEST_TID)",
				   t->tid);
			goto out;
		}
	}
	e = sht_query_range(r, a_state, NULL, from, to, &st, &n, err);
	if (e)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (st[i].value.type == SHT_NULL || st[i].end <= from || st[i].start >= to || st[i].end <= st[i].start)
			continue;
		if (!alive)
			f->start = max_u64(st[i].start, from);
		f->end = min_u64(st[i].end, to);
		alive = true;
	}
	c.lo = f->start; /* the range of the lines read: the lifespan in the window (edge() looks beyond) */
	c.hi = f->end;
	if (!alive) {
		e = verror(err, -ENOENT, "thread %s%s%u does not live in the window", t->guest ? f->vm : "",
			   t->guest ? ":" : "", t->tid);
		goto out;
	}
	if (t->guest)
		e = flow_guest(&c, st, n);
	else if (vcpu)
		e = flow_vcpu(&c, *vcpu, st, n);
	else
		e = flow_host(&c, st, n);
	for (size_t i = 0; !e && i < f->nculprits; i++) { /* name them, once, where they were seen */
		uint64_t ns = f->culprits[i].ns;

		culprit_fill(&c, &c.ck[i], c.first[i] == UINT64_MAX ? f->start : c.first[i], &f->culprits[i]);
		f->culprits[i].ns = ns;
	}
	if (!e)
		e = finish(f);
	if (e && !(err && err->code))
		verror(err, e, "%s", strerror(-e));
out:
	free(st);
	ctx_free(&c);
	if (e) {
		flow_free(f);
		return err && err->code ? err->code : e;
	}
	return 0;
}

void flow_free(struct flow *f)
{
	free(f->iv);
	free(f->culprits);
	f->iv = NULL;
	f->culprits = NULL;
	f->niv = f->nculprits = 0;
}
