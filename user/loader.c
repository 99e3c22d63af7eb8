// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * loader.c - open, load and attach the BPF programs; inject events; read maps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "vcpustat.skel.h"

#define TRACEFS "/sys/kernel/tracing"
#ifndef ENOTSUPP
#define ENOTSUPP 524 /* kernel-internal "operation not supported" */
#endif

struct prog_def {
	const char *name;
	const char *tracepoint; /* category:event */
	bool tp_btf;		/* tp_btf/ (else classic tp/) */
	bool kvm;
	bool required;
};

static const struct prog_def prog_defs[] = {
	{ "on_sched_switch", "sched:sched_switch", true, false, true },
	{ "on_sched_wakeup", "sched:sched_wakeup", true, false, true },
	{ "on_sched_wakeup_new", "sched:sched_wakeup_new", true, false, true },
	{ "on_sched_migrate_task", "sched:sched_migrate_task", true, false, false },
	{ "on_sched_process_exit", "sched:sched_process_exit", true, false, true },
	{ "on_kvm_entry", "kvm:kvm_entry", false, true, false },
	{ "on_kvm_exit", "kvm:kvm_exit", false, true, false },
	{ "on_kvm_userspace_exit", "kvm:kvm_userspace_exit", true, true, false },
	{ "on_kvm_fpu", "kvm:kvm_fpu", true, true, false },
	{ "on_kvm_hypercall", "kvm:kvm_hypercall", true, true, false },
};
#define NR_PROGS (sizeof(prog_defs) / sizeof(prog_defs[0]))

struct vcpustat {
	struct vcpustat_bpf *skel;
	struct vcpustat_consumer consumer;
	struct vcpustat_prog progs[NR_PROGS];
	struct bpf_link *links[NR_PROGS];
	int ncpus;
};

static vcpustat_log_fn log_fn;
static int log_max = -1;

static void vlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vlog(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!log_fn || level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(level, buf);
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int l = level == LIBBPF_WARN ? VCPUSTAT_LOG_WARN :
		level == LIBBPF_INFO ? VCPUSTAT_LOG_INFO : VCPUSTAT_LOG_DEBUG;
	char *buf;
	size_t n;

	if (!log_fn || l > log_max)
		return 0;
	/* whole: a verifier's log runs to many kilobytes and its end says why */
	if (vasprintf(&buf, fmt, ap) < 0)
		return 0;
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	log_fn(l, buf);
	free(buf);
	return 0;
}

void vcpustat_set_log(vcpustat_log_fn fn, int max_level)
{
	log_fn = fn;
	log_max = fn ? max_level : -1;
	libbpf_set_print(libbpf_log);
}

__u64 vcpustat_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int vcpustat_check_privileges(char *msg, size_t len)
{
	static const struct {
		cap_value_t cap;
		const char *name;
	} need[] = {
		{ CAP_BPF, "CAP_BPF" },
		{ CAP_PERFMON, "CAP_PERFMON" },
	};
	cap_flag_value_t v;
	cap_t caps;
	size_t i;

	caps = cap_get_proc();
	if (!caps)
		goto btf; /* cannot tell: let the kernel decide */
	/* CAP_SYS_ADMIN covers both on kernels before 5.8 and still works after. */
	if (cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET) {
		cap_free(caps);
		goto btf;
	}
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (cap_get_flag(caps, need[i].cap, CAP_EFFECTIVE, &v) || v != CAP_SET) {
			snprintf(msg, len,
				 "missing capability %s (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): "
				 "run as root or grant them, e.g. setcap cap_bpf,cap_perfmon+ep",
				 need[i].name);
			cap_free(caps);
			return -EPERM;
		}
	}
	cap_free(caps);
btf:
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(msg, len,
			 "kernel BTF (/sys/kernel/btf/vmlinux) is missing: vcpustat's tp_btf programs need a kernel "
			 "built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOENT;
	}
	return 0;
}

/* Kernel BTF of vmlinux and, when KVM is a module, of kvm. */
struct kernel_btf {
	struct btf *vmlinux;
	struct btf *kvm;
};

static void kernel_btf_free(struct kernel_btf *kb)
{
	btf__free(kb->kvm);
	btf__free(kb->vmlinux);
}

static bool kernel_btf_has(const struct kernel_btf *kb, const char *name, int kind)
{
	if (kb->vmlinux && btf__find_by_name_kind(kb->vmlinux, name, kind) > 0)
		return true;
	return kb->kvm && btf__find_by_name_kind(kb->kvm, name, kind) > 0;
}

/* Does the running kernel have this tracepoint? Decided from BTF: no tracefs needed. */
static bool tracepoint_exists(const struct kernel_btf *kb, const struct prog_def *d)
{
	const char *event = strchr(d->tracepoint, ':') + 1;
	char name[128];

	if (d->tp_btf)
		snprintf(name, sizeof(name), "btf_trace_%s", event);
	else
		snprintf(name, sizeof(name), "trace_event_raw_%s", event);
	return kernel_btf_has(kb, name, d->tp_btf ? BTF_KIND_TYPEDEF : BTF_KIND_STRUCT);
}

static struct bpf_program *find_prog(const struct vcpustat *vs, const char *name)
{
	return bpf_object__find_program_by_name(vs->skel->obj, name);
}

int vcpustat_open(struct vcpustat **out, const struct vcpustat_options *opts)
{
	static const struct vcpustat_options defaults;
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	struct kernel_btf kb = {};
	struct vcpustat *vs;
	size_t i;
	int err;

	if (!opts)
		opts = &defaults;
	*out = NULL;
	/* Older kernels charge BPF memory to RLIMIT_MEMLOCK; newer ones use memcg. */
	setrlimit(RLIMIT_MEMLOCK, &rl);

	vs = calloc(1, sizeof(*vs));
	if (!vs)
		return -ENOMEM;
	vs->ncpus = libbpf_num_possible_cpus();
	if (vs->ncpus <= 0) {
		err = vs->ncpus ? vs->ncpus : -EINVAL;
		goto fail;
	}

	vs->skel = vcpustat_bpf__open();
	if (!vs->skel) {
		err = -errno;
		vlog(VCPUSTAT_LOG_WARN, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}

	kb.vmlinux = btf__load_vmlinux_btf();
	if (!kb.vmlinux) {
		err = -ENOENT;
		vlog(VCPUSTAT_LOG_WARN, "kernel BTF (/sys/kernel/btf/vmlinux) is missing: "
					"vcpustat needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		goto fail;
	}
	if (access("/sys/kernel/btf/kvm", R_OK) == 0)
		kb.kvm = btf__parse_split("/sys/kernel/btf/kvm", kb.vmlinux);

	for (i = 0; i < NR_PROGS; i++) {
		const struct prog_def *d = &prog_defs[i];
		struct vcpustat_prog *p = &vs->progs[i];
		struct bpf_program *prog = find_prog(vs, d->name);

		p->name = d->name;
		p->tracepoint = d->tracepoint;
		p->required = d->required;
		if (!prog) {
			err = -ENOENT;
			vlog(VCPUSTAT_LOG_WARN, "BPF object lacks program %s", d->name);
			goto fail;
		}
		if (d->kvm && opts->no_kvm) {
			p->status = VCPUSTAT_PROG_OFF;
			snprintf(p->message, sizeof(p->message), "not loaded (--no-kvm)");
		} else if (!tracepoint_exists(&kb, d)) {
			p->status = VCPUSTAT_PROG_MISSING;
			p->err = -ENOENT;
			snprintf(p->message, sizeof(p->message), "tracepoint %s not found in this kernel%s",
				 d->tracepoint, d->kvm ? " (is the kvm module loaded?)" : "");
		} else {
			p->status = VCPUSTAT_PROG_LOADED;
			continue;
		}
		if (d->required) {
			err = -ENOENT;
			vlog(VCPUSTAT_LOG_WARN, "%s", p->message);
			goto fail;
		}
		bpf_program__set_autoload(prog, false);
	}

	{
		/* the hot-path bitmap covers every possible thread id */
		unsigned long pid_max = 4194304;
		FILE *f = fopen("/proc/sys/kernel/pid_max", "r");

		if (f) {
			if (fscanf(f, "%lu", &pid_max) != 1 || pid_max > 4194304)
				pid_max = 4194304;
			fclose(f);
		}
		bpf_map__set_max_entries(vs->skel->maps.vcpu_tids, (__u32)((pid_max + 63) / 64));
	}
	vs->skel->rodata->record_level = opts->record_level;
	vs->skel->data_hotpath->hotpath.level_full = opts->record_level >= VCPUSTAT_LEVEL_FULL;
	vs->skel->rodata->record_raw = opts->record_raw;
	bpf_map__set_max_entries(vs->skel->maps.cpus, (__u32)vs->ncpus);
	if (opts->max_vcpus) {
		bpf_map__set_max_entries(vs->skel->maps.vcpus, opts->max_vcpus);
		bpf_map__set_max_entries(vs->skel->maps.dead_vcpus, opts->max_vcpus);
	}
	if (opts->max_vms)
		bpf_map__set_max_entries(vs->skel->maps.vms, opts->max_vms);
	if (opts->max_hists)
		bpf_map__set_max_entries(vs->skel->maps.hists, opts->max_hists);
	if (opts->ringbuf_bytes)
		bpf_map__set_max_entries(vs->skel->maps.records, opts->ringbuf_bytes);
	vs->skel->rodata->wakeup_bytes = bpf_map__max_entries(vs->skel->maps.records) / 8;

	err = vcpustat_bpf__load(vs->skel);
	if (err) {
		vlog(VCPUSTAT_LOG_WARN, "cannot load the BPF programs: %s", strerror(-err));
		goto fail;
	}
	kernel_btf_free(&kb);
	*out = vs;
	return 0;
fail:
	kernel_btf_free(&kb);
	vcpustat_close(vs);
	return err;
}

static bool tracefs_mounted(void)
{
	struct statfs sf;

	return statfs(TRACEFS, &sf) == 0 && sf.f_type == TRACEFS_MAGIC;
}

/* libbpf reads tp/ event ids from tracefs; mount it where it is missing, as perf and bpftrace do. */
static int ensure_tracefs(void)
{
	if (tracefs_mounted() || access("/sys/kernel/debug/tracing/events", F_OK) == 0)
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL)) {
		int err = -errno;

		vlog(VCPUSTAT_LOG_WARN, "cannot mount tracefs at %s: %s", TRACEFS, strerror(errno));
		return err;
	}
	vlog(VCPUSTAT_LOG_INFO, "mounted tracefs at %s (needed to attach tp/ programs)", TRACEFS);
	return 0;
}

int vcpustat_attach(struct vcpustat *vs)
{
	int attached = 0, err = 0, tracefs_err = 1;
	size_t i;

	for (i = 0; i < NR_PROGS; i++) {
		struct vcpustat_prog *p = &vs->progs[i];
		struct bpf_program *prog;

		if (p->status != VCPUSTAT_PROG_LOADED)
			continue;
		if (!prog_defs[i].tp_btf && tracefs_err > 0)
			tracefs_err = ensure_tracefs();
		prog = find_prog(vs, p->name);
		vs->links[i] = bpf_program__attach(prog);
		if (!vs->links[i]) {
			p->err = -errno;
			p->status = VCPUSTAT_PROG_FAILED;
			snprintf(p->message, sizeof(p->message), "cannot attach to %s: %s%s", p->tracepoint,
				 strerror(errno),
				 !prog_defs[i].tp_btf && tracefs_err < 0 ? " (tracefs could not be mounted)" : "");
			vlog(VCPUSTAT_LOG_WARN, "%s: %s", p->name, p->message);
			if (p->required && !err)
				err = p->err;
			continue;
		}
		p->status = VCPUSTAT_PROG_ATTACHED;
		p->message[0] = '\0';
		attached++;
	}
	return err ? err : attached;
}

void vcpustat_close(struct vcpustat *vs)
{
	size_t i;

	if (!vs)
		return;
	for (i = 0; i < NR_PROGS; i++)
		bpf_link__destroy(vs->links[i]);
	vcpustat_bpf__destroy(vs->skel);
	free(vs);
}

size_t vcpustat_progs(const struct vcpustat *vs, const struct vcpustat_prog **progs)
{
	*progs = vs->progs;
	return NR_PROGS;
}

int vcpustat_inject(struct vcpustat *vs, const struct vcpustat_event *ev)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ev, .ctx_size_in = sizeof(*ev));
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(vs->skel->progs.inject), &opts);
	if (err)
		return -errno;
	return (int)opts.retval;
}

int vcpustat_map_fd(const struct vcpustat *vs, const char *map_name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(vs->skel->obj, map_name);

	return m ? bpf_map__fd(m) : -ENOENT;
}

int vcpustat_prog_fd(const struct vcpustat *vs, const char *prog_name)
{
	struct bpf_program *p = find_prog(vs, prog_name);

	return p ? bpf_program__fd(p) : -ENOENT;
}

/*
 * Read (and with del, remove) every entry of a hash map into freshly
 * allocated key and value arrays. Uses batch lookups, falling back to
 * key-by-key iteration on kernels without them.
 */
static int read_hash(const struct bpf_map *map, bool del, void **keys_out, void **vals_out, size_t *n_out)
{
	size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map);
	size_t max = bpf_map__max_entries(map), n = 0;
	int fd = bpf_map__fd(map), err = 0;
	char *keys, *vals;
	__u32 batch = 0;
	bool first = true;

	*keys_out = *vals_out = NULL;
	*n_out = 0;
	keys = calloc(max ? max : 1, ksz);
	vals = calloc(max ? max : 1, vsz);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	while (n < max) {
		__u32 count = (__u32)(max - n);

		if (del)
			err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &batch, &batch, keys + n * ksz,
							      vals + n * vsz, &count, NULL);
		else
			err = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys + n * ksz,
						   vals + n * vsz, &count, NULL);
		first = false;
		n += count;
		if (err) {
			err = -errno;
			break;
		}
	}
	if (err == -ENOENT) { /* end of the map */
		err = 0;
	} else if (err == -EINVAL || err == -ENOTSUPP || err == -EOPNOTSUPP) {
		/* no batch support: walk the keys */
		char *key = NULL;

		n = 0;
		err = 0;
		while (n < max && bpf_map_get_next_key(fd, key, keys + n * ksz) == 0) {
			if (bpf_map_lookup_elem(fd, keys + n * ksz, vals + n * vsz) == 0) {
				if (del)
					bpf_map_delete_elem(fd, keys + n * ksz);
				key = del ? NULL : keys + n * ksz;
				n++;
			} else if (!del) {
				key = keys + n * ksz; /* deleted meanwhile: go on from it */
			}
		}
	}
out:
	if (err) {
		free(keys);
		free(vals);
		return err;
	}
	*keys_out = keys;
	*vals_out = vals;
	*n_out = n;
	return 0;
}

void vcpustat_snapshot_free(struct vcpustat_snapshot *snap)
{
	free(snap->vcpus);
	free(snap->dead);
	free(snap->vms);
	free(snap->hists);
	free(snap->culprits);
	memset(snap, 0, sizeof(*snap));
}

static int read_lost(struct vcpustat *vs, __u64 lost[VCPUSTAT_NR_LOST])
{
	int fd = bpf_map__fd(vs->skel->maps.lost);
	__u64 *per_cpu;
	__u32 i;
	int c;

	per_cpu = calloc((size_t)vs->ncpus, sizeof(__u64));
	if (!per_cpu)
		return -ENOMEM;
	for (i = 0; i < VCPUSTAT_NR_LOST; i++) {
		lost[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, per_cpu))
			continue;
		for (c = 0; c < vs->ncpus; c++)
			lost[i] += per_cpu[c];
	}
	free(per_cpu);
	return 0;
}

int vcpustat_prune(struct vcpustat *vs, const char *proc_root)
{
	const struct bpf_map *map = vs->skel->maps.culprits;
	struct vcpustat_culprit_key *keys;
	struct vcpustat_culprit *vals;
	int fd = bpf_map__fd(map), folded = 0, err;
	char path[256];
	size_t n;

	err = read_hash(map, false, (void **)&keys, (void **)&vals, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		struct vcpustat_culprit_key ek = { .vm_tgid = keys[i].vm_tgid, .tid = VCPUSTAT_TID_EXITED };
		struct vcpustat_culprit cur, agg;

		if (!keys[i].tid || keys[i].tid == VCPUSTAT_TID_EXITED)
			continue;
		snprintf(path, sizeof(path), "%s/%u", proc_root ? proc_root : "/proc", keys[i].tid);
		if (access(path, F_OK) == 0)
			continue;
		/* a dead thread cannot run again: nothing adds to its entry any more */
		if (bpf_map_lookup_elem(fd, &keys[i], &cur) || bpf_map_delete_elem(fd, &keys[i]))
			continue;
		if (bpf_map_lookup_elem(fd, &ek, &agg)) {
			memset(&agg, 0, sizeof(agg));
			snprintf(agg.comm, sizeof(agg.comm), "(exited)");
		}
		agg.ns += cur.ns;
		if (bpf_map_update_elem(fd, &ek, &agg, BPF_ANY) == 0)
			folded++;
	}
	free(keys);
	free(vals);
	return folded;
}

int vcpustat_lost(struct vcpustat *vs, __u64 lost[VCPUSTAT_NR_LOST])
{
	return read_lost(vs, lost);
}

int vcpustat_snapshot(struct vcpustat *vs, struct vcpustat_snapshot *snap)
{
	void *keys = NULL, *vals = NULL;
	struct vcpustat_hist_key *hk;
	struct vcpustat_hist *hv;
	size_t i;
	int err;

	memset(snap, 0, sizeof(*snap));

	err = read_hash(vs->skel->maps.vcpus, false, &keys, &vals, &snap->nr_vcpus);
	if (err)
		goto fail;
	/* after the read: the open intervals of what was read end now */
	snap->ts = vcpustat_now_ns();
	free(keys);
	snap->vcpus = vals;

	err = read_hash(vs->skel->maps.dead_vcpus, true, &keys, &vals, &snap->nr_dead);
	if (err)
		goto fail;
	free(keys);
	snap->dead = vals;

	err = read_hash(vs->skel->maps.vms, false, &keys, &vals, &snap->nr_vms);
	if (err)
		goto fail;
	free(keys);
	snap->vms = vals;

	err = read_hash(vs->skel->maps.hists, false, &keys, &vals, &snap->nr_hists);
	if (err)
		goto fail;
	snap->hists = calloc(snap->nr_hists ? snap->nr_hists : 1, sizeof(*snap->hists));
	if (!snap->hists) {
		free(keys);
		free(vals);
		err = -ENOMEM;
		goto fail;
	}
	hk = keys;
	hv = vals;
	for (i = 0; i < snap->nr_hists; i++) {
		snap->hists[i].key = hk[i];
		snap->hists[i].hist = hv[i];
	}
	free(keys);
	free(vals);

	err = read_hash(vs->skel->maps.culprits, false, &keys, &vals, &snap->nr_culprits);
	if (err)
		goto fail;
	snap->culprits = calloc(snap->nr_culprits ? snap->nr_culprits : 1, sizeof(*snap->culprits));
	if (!snap->culprits) {
		free(keys);
		free(vals);
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < snap->nr_culprits; i++) {
		snap->culprits[i].key = ((struct vcpustat_culprit_key *)keys)[i];
		snap->culprits[i].culprit = ((struct vcpustat_culprit *)vals)[i];
	}
	free(keys);
	free(vals);

	err = read_lost(vs, snap->lost);
	if (err)
		goto fail;
	return 0;
fail:
	vcpustat_snapshot_free(snap);
	return err;
}

/* Delete the entries of a hash map whose key starts with tgid (a __u32). */
static int delete_by_tgid(const struct bpf_map *map, __u32 tgid)
{
	size_t ksz = bpf_map__key_size(map), n, i;
	int fd = bpf_map__fd(map), err;
	void *keys, *vals;

	err = read_hash(map, false, &keys, &vals, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		void *key = (char *)keys + i * ksz;

		if (*(__u32 *)key == tgid)
			bpf_map_delete_elem(fd, key);
	}
	free(keys);
	free(vals);
	return 0;
}

int vcpustat_reap_vm(struct vcpustat *vs, __u32 tgid)
{
	int err;

	bpf_map_delete_elem(bpf_map__fd(vs->skel->maps.vms), &tgid);
	err = delete_by_tgid(vs->skel->maps.hists, tgid);
	if (!err)
		err = delete_by_tgid(vs->skel->maps.culprits, tgid);
	return err;
}

/*
 * One vcpustat_drain()'s time budget. Under a steady flood libbpf's consume
 * loop never returns on its own (it rereads the producer position after each
 * pass), and a consumer that cannot keep up would never look at its clock:
 * `record --duration 2` ran for as long as the VMs did. Callbacks run in the
 * draining thread, so the budget is thread-local.
 */
static __thread struct {
	__u64 until; /* 0: no budget (a bare ring_buffer__poll/consume) */
	int n;	     /* samples handled */
	bool hit;
} drain_budget;

static int rb_callback(void *ctx, void *data, size_t size)
{
	const struct vcpustat_consumer *c = ctx;
	int err = 0;

	if (size == sizeof(struct vcpustat_record))
		err = c->on_record ? c->on_record(c->ctx, data) : 0;
	else if (size == sizeof(struct vcpustat_event))
		err = c->on_event ? c->on_event(c->ctx, data) : 0;
	if (err < 0)
		return err;
	/* the sample is consumed even when we stop after it (libbpf advanced past it) */
	if (drain_budget.until && (++drain_budget.n & 255) == 0 && vcpustat_now_ns() >= drain_budget.until) {
		drain_budget.hit = true;
		return -EAGAIN;
	}
	return 0;
}

struct ring_buffer *vcpustat_ring_buffer(struct vcpustat *vs, const struct vcpustat_consumer *c)
{
	vs->consumer = *c;
	return ring_buffer__new(bpf_map__fd(vs->skel->maps.records), rb_callback, &vs->consumer, NULL);
}

int vcpustat_drain(struct ring_buffer *rb, int timeout_ms)
{
	int err;

	drain_budget.until = vcpustat_now_ns() + ((__u64)(timeout_ms > 0 ? timeout_ms : 0) + VCPUSTAT_DRAIN_MS) * 1000000ull;
	drain_budget.n = 0;
	drain_budget.hit = false;
	err = ring_buffer__poll(rb, timeout_ms);
	if (err == -EAGAIN && drain_budget.hit)
		goto out; /* more is waiting: the caller comes back after its own checks */
	if (err < 0 && err != -EINTR)
		goto fail;
	err = ring_buffer__consume(rb);
	if (err < 0 && !(err == -EAGAIN && drain_budget.hit))
		goto fail;
out:
	drain_budget.until = 0;
	return drain_budget.n;
fail:
	drain_budget.until = 0;
	return err;
}

/*
 * The ring buffer's consumer and producer positions, from its own pages
 * (page 0: consumer, page 1: producer; mapped read-only; libbpf 1.1 has no
 * accessor for them).
 */
int vcpustat_ring_pos(struct vcpustat *vs, unsigned long *cons, unsigned long *prod)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = bpf_map__fd(vs->skel->maps.records), err = 0;
	void *c, *p;

	c = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return -errno;
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, page);
	if (p == MAP_FAILED)
		err = -errno;
	else {
		*cons = __atomic_load_n((unsigned long *)c, __ATOMIC_ACQUIRE);
		*prod = __atomic_load_n((unsigned long *)p, __ATOMIC_ACQUIRE);
		munmap(p, page);
	}
	munmap(c, page);
	return err;
}

/* Does /proc/<pid>/fd hold a KVM VM (anon_inode:kvm-vm)? */
static bool process_has_kvm_vm(const char *proc_root, const char *pid)
{
	char path[512], link[128];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/fd", proc_root, pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/fd/%s", proc_root, pid, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = strcmp(link, "anon_inode:kvm-vm") == 0;
	}
	closedir(d);
	return found;
}

static int read_comm(const char *path, char comm[16])
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	memset(comm, 0, 16);
	memcpy(comm, buf, strnlen(buf, 15));
	return 0;
}

int vcpustat_add_vcpu(struct vcpustat *vs, __u32 tid, __u32 tgid, __u32 index, const char *comm)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_SEED, .ts = vcpustat_now_ns(), .tid = tid, .tgid = tgid,
				     .arg0 = index };
	struct vcpustat_vcpu v;

	/* through the handler, like every other event: captured, replayed alike */
	snprintf(ev.comm, sizeof(ev.comm), "%s", comm && *comm ? comm : "?");
	if (bpf_map_lookup_elem(bpf_map__fd(vs->skel->maps.vcpus), &tid, &v) == 0)
		return -EEXIST;
	return vcpustat_inject(vs, &ev);
}

static int seed_process(struct vcpustat *vs, const char *proc_root, const char *pid)
{
	__u32 tgid = (__u32)atoi(pid);
	char path[512], comm[16];
	struct dirent *de;
	int added = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/task", proc_root, pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		int idx;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s/task/%s/comm", proc_root, pid, de->d_name);
		if (read_comm(path, comm))
			continue;
		idx = vcpu_index_from_comm(comm);
		if (idx >= 0 && vcpustat_add_vcpu(vs, (__u32)atoi(de->d_name), tgid, (__u32)idx, comm) == 0)
			added++;
	}
	closedir(d);
	return added;
}

int vcpustat_seed(struct vcpustat *vs, const char *proc_root)
{
	struct dirent *de;
	int added = 0;
	DIR *d;

	if (!proc_root)
		proc_root = "/proc";
	d = opendir(proc_root);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (process_has_kvm_vm(proc_root, de->d_name))
			added += seed_process(vs, proc_root, de->d_name);
	}
	closedir(d);
	return added;
}
