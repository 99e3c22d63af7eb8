// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * loader.c - open, load and attach the BPF programs; inject events; read maps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "live/live.h"
#include "live/compat.h"
#include "vcpustat.skel.h"
#include "vcpustat_compat.skel.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* kernel-internal "operation not supported" */
#endif

/*
 * The form of a program (docs/kernels.md): tp_btf needs the BTF of the
 * tracepoint's module; raw_tp needs none (scalar arguments); a classic tp/
 * program reads its fields at the offsets of the tracepoint's format in
 * tracefs; fentry needs the BTF of the function's module.
 */
enum prog_form { FORM_TP_BTF, FORM_RAW_TP, FORM_TP, FORM_FENTRY };
static const char *const form_names[] = { "tp_btf", "raw_tp", "tp", "fentry" };

struct prog_def {
	const char *name;
	const char *tracepoint; /* category:event (fentry: fentry:function) */
	enum prog_form form;
	bool kvm;
	bool required;
	bool asked;	    /* loaded only when asked for (vcpustat_options.address_spaces) */
	const char *marks;  /* the program loaded instead in marks mode (docs/architecture.md, "The hot path") */
	const char *losing; /* what is lost without it, for its message */
};

#define SCHED(n, req, ...) { "on_sched_" #n, "sched:sched_" #n, FORM_TP_BTF, false, req, __VA_ARGS__ }
#define KVM(n, form, ...) { "on_kvm_" #n, "kvm:kvm_" #n, form, true, false, __VA_ARGS__ }

static const struct prog_def prog_defs[] = {
	SCHED(switch, true, .marks = "on_sched_switch_marks"),
	SCHED(wakeup, true, .marks = "on_sched_wakeup_marks"),
	SCHED(wakeup_new, true, .marks = "on_sched_wakeup_new_marks"),
	SCHED(waking, false, .marks = "on_sched_waking_marks", .losing = "wake reasons are not told"),
	SCHED(migrate_task, false, .marks = "on_sched_migrate_task_marks", .losing = "migrations are not counted"),
	SCHED(move_numa, false, .losing = "NUMA balancing's moves are not told apart"),
	SCHED(swap_numa, false, .losing = "NUMA balancing's swaps are not told apart"),
	SCHED(process_exit, true),
	KVM(entry, FORM_TP, .losing = "guest time is not told from host time"),
	KVM(exit, FORM_TP, .losing = "no exit reasons"),
	/* after on_kvm_exit, so that it is attached, and runs, after it: */
	{ "on_kvm_exit_cr3", "kvm:kvm_exit", FORM_TP_BTF, true, false, .asked = true,
	  .losing = "guest address spaces are not told apart" },
	KVM(userspace_exit, FORM_RAW_TP, .losing = "exits to the VMM have no reasons"),
	KVM(fpu, FORM_RAW_TP, .losing = "time in the VMM's KVM_RUN is not told apart"),
	KVM(hypercall, FORM_RAW_TP, .losing = "no clock synchronization marks"),
	KVM(pio, FORM_RAW_TP, .losing = "no I/O ports"),
	KVM(mmio, FORM_RAW_TP, .losing = "no MMIO addresses"),
	KVM(msr, FORM_RAW_TP, .losing = "no MSRs"),
	KVM(page_fault, FORM_TP, .losing = "no nested-fault pages"),
	{ "on_kvm_vcpu_halt", "fentry:kvm_vcpu_halt", FORM_FENTRY, true, false, .losing = "halt polling stays host time" },
	KVM(vcpu_wakeup, FORM_RAW_TP, .losing = "halt polling is not measured"),
	KVM(halt_poll_ns, FORM_RAW_TP, .losing = "halt-poll changes are not seen"),
	KVM(apic_accept_irq, FORM_TP, .losing = "wake-ups by IPI or device are not told"),
	KVM(inj_virq, FORM_RAW_TP, .losing = "wake-up vectors are not told"),
	KVM(nested_vmenter, FORM_RAW_TP, .losing = "no nested virtualization"),
	KVM(nested_vmexit_inject, FORM_RAW_TP, .losing = "no nested virtualization"),
};
#define NR_PROGS (sizeof(prog_defs) / sizeof(prog_defs[0]))

/*
 * One ring buffer as the merged drain reads it: the consumer position's page
 * (writable), then the producer position's page and the data, mapped twice
 * over so that an entry never wraps (the layout libbpf maps too).
 */
struct ring_map {
	unsigned long *cons;
	const unsigned long *prod;
	const char *data;
	unsigned long mask;
	size_t prod_len;
	const void *head; /* the committed entry at cons (ring_head), or NULL */
	__u32 head_len;
	__u32 adv;	/* bytes from this entry to the next */
	__u64 head_ts;
	bool queued;	/* in the merge's heap */
};

struct vcpustat {
	struct vcpustat_bpf *skel;
	struct vcpustat_consumer consumer;
	struct vcpustat_prog progs[NR_PROGS];
	struct bpf_link *links[NR_PROGS];
	int ncpus;
	/* the ring buffers: one per possible CPU, or the shared one */
	int nrings;
	int *ring_fds;	/* per-CPU rings (ours to close); NULL: the shared ring */
	__u32 ring_bytes; /* each online CPU's ring (the shared ring's size) */
	char rings_how[256];
	/* the consumer (vcpustat_ring_buffer): libbpf's, and our mappings for the merged drain */
	struct ring_buffer *rb;
	struct ring_map *maps;
	int *heap;
	struct vcpustat *next_consumer;
	/*
	 * Where the batch lookups of read_hash() land: kept from one read to the
	 * next (under read_lock), so that a refresh does not map, fault in and
	 * unmap buffers for every entry the maps could hold.
	 */
	pthread_mutex_t read_lock;
	void *read_keys, *read_vals;
	size_t read_keys_size, read_vals_size;
	struct vcpustat_kernel kernel; /* what the kernel gives (compat.c), probed at open */
	bool compat;	     /* the compat object (no BPF atomics beyond add: docs/kernels.md) */
	bool marks;	     /* marks mode: the scheduler programs test only task structs */
	__u64 vhost_scan_ns; /* the last look for vhost-<pid> kernel threads (vcpustat_seed_vmm) */
	struct hashmap vmm_scans; /* VM tgid -> __u64: the last look at its threads (when vmm_scans_on) */
	bool vmm_scans_on;
	/* the hist_rows map, mapped read-only (its rows are read from here) */
	const struct vcpustat_hist_row *hist_rows;
	size_t hist_rows_len;
};

static vcpustat_log_fn log_fn;
static int log_max = -1;
/* The last warning of vcpustat_open(): why it failed, when it did (vcpustat_open_failure()). */
static char open_failure[256];

static void vlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vlog(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if ((!log_fn || level > log_max) && level != VCPUSTAT_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (level == VCPUSTAT_LOG_WARN)
		snprintf(open_failure, sizeof(open_failure), "%.255s", buf);
	if (log_fn && level <= log_max)
		log_fn(level, buf);
}

/*
 * A load with fentry programs, which a kernel may refuse (then vcpustat loads
 * again without them and says so once): libbpf's warnings are details then.
 */
static bool libbpf_quiet;

/*
 * The program libbpf last failed to load ("prog 'NAME': failed to load"):
 * an optional one the kernel refuses is left out and the rest loaded again.
 */
static char libbpf_refused[64];

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int l = level == LIBBPF_WARN && !libbpf_quiet ? VCPUSTAT_LOG_WARN :
		level == LIBBPF_DEBUG ? VCPUSTAT_LOG_DEBUG : VCPUSTAT_LOG_INFO;
	char *buf, *p, name[64];
	int at = 0;
	size_t n;

	/* whole: a verifier's log runs to many kilobytes and its end says why */
	if (vasprintf(&buf, fmt, ap) < 0)
		return 0;
	p = strncmp(buf, "libbpf: ", 8) ? buf : buf + 8; /* libbpf's own prefix */
	if (sscanf(p, "prog '%63[^']'%n", name, &at) == 1 && at && !strncmp(p + at, ": failed to load", 16))
		snprintf(libbpf_refused, sizeof(libbpf_refused), "%s", name);
	if (!log_fn) { /* as libbpf would print it, but for a load that may fail (fentry) */
		if (level != LIBBPF_DEBUG && l == VCPUSTAT_LOG_WARN)
			fputs(buf, stderr);
		free(buf);
		return 0;
	}
	if (l > log_max) {
		free(buf);
		return 0;
	}
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

/*
 * VCPUSTAT_LEAVE_OUT=NAME,NAME...: programs not to load, as on a kernel that
 * lacks them (docs/kernels.md; tests/test_health.c makes vcpustat blind so).
 * The required ones cannot be left out.
 */
static bool left_out(const char *name)
{
	const char *list = getenv("VCPUSTAT_LEAVE_OUT"), *p;
	size_t n = strlen(name);

	for (p = list; p && *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

/* Why a KVM tracepoint may be missing: no kvm module, or a KVM without it. */
static const char *kvm_hint(const struct prog_def *d)
{
	if (!d->kvm)
		return "";
	return access("/sys/module/kvm", F_OK) ? " (is the kvm module loaded?)" : " (this kernel's KVM has no such tracepoint)";
}

/* Is function name in /proc/kallsyms? (a kernel without BTF of its module can still tell) */
static bool kernel_has_symbol(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256], sym[128];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %*s %127s", sym) == 1 && !strcmp(sym, name);
	if (f)
		fclose(f);
	return found;
}

/*
 * Can program d be loaded in its form on this kernel? 0, or -ENOENT with a
 * sentence for the user in msg: what is missing, and what is lost without it.
 * tp_btf and fentry are decided from BTF (the tracepoint's or function's type
 * in vmlinux or the kvm module); raw_tp from BTF or, without it, tracefs; a
 * classic tp/ program from the tracepoint's format, whose fields it reads
 * (into fields).
 */
static int prog_possible(const struct kernel_btf *kb, const struct prog_def *d, struct vcpustat_tp_fields *fields,
			 char *msg, size_t len)
{
	const char *event = strchr(d->tracepoint, ':') + 1;
	char category[32], name[128], why[160];
	bool module_btf_missing = d->kvm && !kb->kvm && access("/sys/module/kvm", F_OK) == 0;

	snprintf(category, sizeof(category), "%.*s", (int)(event - 1 - d->tracepoint), d->tracepoint);
	switch (d->form) {
	case FORM_FENTRY:
		if (kernel_btf_has(kb, event, BTF_KIND_FUNC))
			return 0;
		if (module_btf_missing && kernel_has_symbol(event))
			snprintf(msg, len, "fentry on %s needs the kvm module's BTF, which this kernel lacks "
					   "(CONFIG_DEBUG_INFO_BTF_MODULES): %s", event, d->losing);
		else
			snprintf(msg, len, "function %s not found in this kernel (KVM before 5.17, or no kvm module): %s",
				 event, d->losing);
		return -ENOENT;
	case FORM_TP_BTF:
	case FORM_RAW_TP:
		snprintf(name, sizeof(name), "btf_trace_%s", event);
		if (kernel_btf_has(kb, name, BTF_KIND_TYPEDEF))
			return 0;
		if (d->form == FORM_RAW_TP && compat_tracepoint_in_tracefs(category, event))
			return 0;
		if (d->form == FORM_TP_BTF && module_btf_missing && compat_tracepoint_in_tracefs(category, event))
			snprintf(msg, len, "tp_btf on %s needs the kvm module's BTF, which this kernel lacks "
					   "(CONFIG_DEBUG_INFO_BTF_MODULES): %s", d->tracepoint, d->losing);
		else
			snprintf(msg, len, "tracepoint %s not found in this kernel%s%s%s", d->tracepoint,
				 kvm_hint(d), d->losing ? ": " : "", d->losing ? d->losing : "");
		return -ENOENT;
	case FORM_TP:
		if (!compat_tracepoint_in_tracefs(category, event)) {
			snprintf(msg, len, "tracepoint %s not found in this kernel%s: %s", d->tracepoint,
				 compat_tracefs() ? kvm_hint(d) : " (tracefs is not mounted and could not be)", d->losing);
			return -ENOENT;
		}
		if (compat_tp_fields(category, event, fields, why, sizeof(why))) {
			if (snprintf(msg, len, "%s: %s", why, d->losing) >= (int)len)
				snprintf(msg, len, "%s", why);
			return -ENOENT;
		}
		return 0;
	}
	return -EINVAL;
}

static struct bpf_program *find_prog(const struct vcpustat *vs, const char *name)
{
	return bpf_object__find_program_by_name(vs->skel->obj, name);
}

/* The BPF program that does prog_defs[i]'s work: its marks-mode form in marks mode. */
static const char *prog_name(const struct vcpustat *vs, size_t i)
{
	return vs->marks && prog_defs[i].marks ? prog_defs[i].marks : prog_defs[i].name;
}


/*
 * Marks mode, where it can be whole: every tracked thread needs its entry in
 * the map marks, and threads that user space finds (vCPUs of VMs already
 * running, VMM threads) can only get theirs through a pidfd of the thread.
 * Not at level full (every switch is recorded there anyway), and not when
 * VCPUSTAT_NO_MARKS is set (the hot page's programs, to compare them).
 */
static bool marks_wanted(const struct vcpustat_options *opts, const struct vcpustat_kernel *k)
{
	const char *no = getenv("VCPUSTAT_NO_MARKS");

	if (opts->record_level >= VCPUSTAT_LEVEL_FULL || (no && *no && strcmp(no, "0")))
		return false;
	/* the marks programs need task storage (5.11), bpf_task_from_pid (6.2) and the main object's atomics */
	return k->pidfd_thread && k->task_storage && k->task_from_pid && k->atomics;
}

/*
 * Marks mode: thread tid's entry in marks, before user space tracks it (a
 * thread that is gone needs none). Without it the thread's scheduler events
 * would not be seen.
 */
static void mark_thread(struct vcpustat *vs, __u32 tid)
{
	__u32 one = 1;
	int fd;

	if (!vs->marks)
		return;
	fd = compat_thread_pidfd((pid_t)tid);
	if (fd < 0) {
		if (errno != ESRCH)
			vlog(VCPUSTAT_LOG_WARN, "thread %u: no pidfd (%s): its scheduler events may be missed", tid,
			     strerror(errno));
		return;
	}
	if (bpf_map_update_elem(bpf_map__fd(vs->skel->maps.marks), &fd, &one, BPF_ANY) && errno != ESRCH)
		vlog(VCPUSTAT_LOG_WARN, "thread %u: cannot mark it (%s): its scheduler events may be missed", tid,
		     strerror(errno));
	close(fd);
}

bool vcpustat_marks(const struct vcpustat *vs)
{
	return vs->marks;
}

bool vcpustat_compat(const struct vcpustat *vs)
{
	return vs->compat;
}

const struct vcpustat_kernel *vcpustat_kernel(const struct vcpustat *vs)
{
	return &vs->kernel;
}

bool vcpustat_exits_attached(const struct vcpustat *vs)
{
	int attached = 0;

	for (size_t i = 0; i < NR_PROGS; i++)
		if ((!strcmp(prog_defs[i].name, "on_kvm_entry") || !strcmp(prog_defs[i].name, "on_kvm_exit")) &&
		    vs->progs[i].status == VCPUSTAT_PROG_ATTACHED)
			attached++;
	return attached == 2;
}

const char *vcpustat_open_failure(void)
{
	return open_failure;
}

/* The largest power of two pages not above bytes (one page at least). */
static __u32 ring_pages(unsigned long bytes)
{
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE), size = page;

	while (size * 2 <= bytes && size < (1ul << 30))
		size *= 2;
	return (__u32)size;
}

/* Which of the ncpus possible CPUs are online (all of them when /sys cannot tell); how many. */
static int online_cpus(bool *online, int ncpus)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	char buf[4096], *p = buf, *end;
	int n = 0;

	if (f && fgets(buf, sizeof(buf), f)) {
		while (*p >= '0' && *p <= '9') { /* "0-3,5,7-9" */
			long a = strtol(p, &end, 10), b = a;

			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (long c = a; c <= b && c < ncpus; c++)
				if (!online[c]) {
					online[c] = true;
					n++;
				}
			p = *end == ',' ? end + 1 : end;
		}
	}
	if (f)
		fclose(f);
	if (!n)
		for (n = 0; n < ncpus; n++)
			online[n] = true;
	return n;
}

/*
 * Create a ring for every possible CPU and put it in cpu_records: online CPUs
 * get size bytes each, the others (offline now, maybe online later) a page.
 */
static int create_rings(struct vcpustat *vs, __u32 size)
{
	int outer = bpf_map__fd(vs->skel->maps.cpu_records), err = 0;
	bool *online = calloc((size_t)vs->ncpus, sizeof(bool));

	vs->ring_fds = calloc((size_t)vs->ncpus, sizeof(int));
	if (!online || !vs->ring_fds) {
		free(online);
		return -ENOMEM;
	}
	online_cpus(online, vs->ncpus);
	for (__u32 cpu = 0; cpu < (__u32)vs->ncpus; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "cpu_records", 0, 0, online[cpu] ? size : ring_pages(0),
					NULL);

		if (fd < 0) {
			err = -errno;
			break;
		}
		vs->ring_fds[vs->nrings++] = fd;
		if (bpf_map_update_elem(outer, &cpu, &fd, BPF_ANY)) {
			err = -errno;
			break;
		}
	}
	free(online);
	return err;
}

/*
 * One attempt at opening and loading: per-CPU rings unless no_per_cpu says
 * why not (rings_failed: they failed); fentry programs unless fentry_err (a
 * kernel that cannot load them: fentry_tried says this attempt had some).
 */
struct open_try {
	const char *no_per_cpu;
	bool rings_failed;
	bool fentry_tried;
	bool no_marks; /* a marks-mode program was refused: the hot page's */
	int fentry_err;
	int refused[NR_PROGS]; /* optional programs the kernel refused (their error): left out */
};

static int open_object(struct vcpustat **out, const struct vcpustat_options *opts, struct open_try *t);

/*
 * Does kvm_amd use nested paging (its npt parameter, Y unless loaded with
 * npt=0 or the CPU lacks it)? Then an SVM guest's CR3 is in its VMCB; with
 * shadow paging KVM's own copy is the guest's (on_kvm_exit_cr3).
 */
static bool svm_nested_paging(void)
{
	FILE *f = fopen("/sys/module/kvm_amd/parameters/npt", "re");
	int c = f ? fgetc(f) : 'Y';

	if (f)
		fclose(f);
	return c != 'N' && c != 'n' && c != '0';
}

int vcpustat_open(struct vcpustat **out, const struct vcpustat_options *opts)
{
	static const struct vcpustat_options defaults;
	char why[160];
	int err;

	if (!opts)
		opts = &defaults;
	struct open_try t = { .no_per_cpu = opts->single_ring ? "asked for" : NULL };

	libbpf_set_print(libbpf_log);
	open_failure[0] = '\0';
	for (;;) {
		bool marks_form = false;
		size_t i;

		libbpf_refused[0] = '\0';
		err = open_object(out, opts, &t);
		/* which program the kernel refused, in either form */
		for (i = 0; err && libbpf_refused[0] && i < NR_PROGS; i++) {
			marks_form = prog_defs[i].marks && !strcmp(prog_defs[i].marks, libbpf_refused);
			if (marks_form || !strcmp(prog_defs[i].name, libbpf_refused))
				break;
		}
		if (err && i < NR_PROGS && marks_form && !t.no_marks) {
			vlog(VCPUSTAT_LOG_WARN, "the kernel refused %s (%s); loading the hot page's programs instead",
			     libbpf_refused, strerror(-err));
			t.no_marks = true;
			continue;
		}
		if (!err || i >= NR_PROGS || marks_form || prog_defs[i].required || t.refused[i])
			break;
		/* an optional program this kernel's verifier refuses: the others without it */
		vlog(VCPUSTAT_LOG_WARN, "the kernel refused %s (%s); loading the others without it", prog_defs[i].name,
		     strerror(-err));
		t.refused[i] = err;
	}
	if (err && t.fentry_tried) {
		/* an optional fentry program (halt polling) the kernel refuses: without it */
		vlog(VCPUSTAT_LOG_WARN, "loading with fentry programs failed (%s); trying without them", strerror(-err));
		t.fentry_err = err;
		err = open_object(out, opts, &t);
	}
	if (err && t.rings_failed) {
		snprintf(why, sizeof(why), "per-CPU ring buffers unavailable: %s", strerror(-err));
		vlog(VCPUSTAT_LOG_WARN, "%s; falling back to one shared ring buffer", why);
		t.no_per_cpu = why;
		err = open_object(out, opts, &t);
	}
	return err;
}

/*
 * The histograms' rows (bpf/vcpustat.bpf.c, hist_rows): mapped read-only, so
 * that a snapshot copies the rows in use without a system call each, and
 * every row's index given to the free queue, where the programs take them.
 */
static int hist_rows_init(struct vcpustat *vs)
{
	const struct bpf_map *rows = vs->skel->maps.hist_rows;
	__u32 n = bpf_map__max_entries(rows), i;
	long page = sysconf(_SC_PAGESIZE);
	int free_fd = bpf_map__fd(vs->skel->maps.hist_free);
	void *p;

	vs->hist_rows_len = ((size_t)n * sizeof(struct vcpustat_hist_row) + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, vs->hist_rows_len, PROT_READ, MAP_SHARED, bpf_map__fd(rows), 0);
	if (p == MAP_FAILED)
		return -errno;
	vs->hist_rows = p;
	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(free_fd, NULL, &i, BPF_ANY))
			return -errno;
	return 0;
}

/*
 * The skeleton, of the main object or of the compat one: the compat object
 * has the same maps, programs and variables (the build checks it:
 * bpf/skel-same.sh), so the main object's skeleton describes it; only the
 * ELF it opens differs.
 */
static struct vcpustat_bpf *skel_open(bool compat)
{
	struct vcpustat_bpf *obj;
	int err;

	if (!compat)
		return vcpustat_bpf__open();
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = vcpustat_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = (void *)vcpustat_compat_bpf__elf_bytes(&obj->skeleton->data_sz);
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (err) {
		vcpustat_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

/* What no form of vcpustat's programs does without: said by name, -ENOTSUP (docs/kernels.md). */
static int kernel_usable(const struct vcpustat_kernel *k)
{
	if (!k->vmlinux_btf) {
		vlog(VCPUSTAT_LOG_WARN, "kernel BTF (/sys/kernel/btf/vmlinux) is missing: vcpustat needs a kernel built "
					"with CONFIG_DEBUG_INFO_BTF=y (Debian's are, from 11 on)");
		return -ENOENT;
	}
	if (!k->ringbuf) {
		vlog(VCPUSTAT_LOG_WARN, "this kernel has no BPF ring buffers (BPF_MAP_TYPE_RINGBUF, Linux 5.8): "
					"vcpustat needs them (docs/kernels.md gives the minimum kernel)");
		return -ENOTSUP;
	}
	return 0;
}

/* Mount tracefs where it is nowhere, once per process (said in the log). */
static void tracefs_mount_once(void)
{
	static int tried;
	bool mounted;
	int err;

	if (tried++)
		return;
	err = compat_ensure_tracefs(&mounted);
	if (err)
		vlog(VCPUSTAT_LOG_WARN, "cannot mount tracefs at %s: %s", COMPAT_TRACEFS, strerror(-err));
	else if (mounted)
		vlog(VCPUSTAT_LOG_INFO, "mounted tracefs at %s (the tp/ programs' fields and attachment)",
		     COMPAT_TRACEFS);
}

static int open_object(struct vcpustat **out, const struct vcpustat_options *opts, struct open_try *t)
{
	const char *no_per_cpu = t->no_per_cpu;
	bool *rings_failed = &t->rings_failed;

	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	struct kernel_btf kb = {};
	struct vcpustat *vs;
	int err, proto = -1;
	unsigned long total;
	size_t i;

	*out = NULL;
	/* Older kernels charge BPF memory to RLIMIT_MEMLOCK; newer ones use memcg. */
	setrlimit(RLIMIT_MEMLOCK, &rl);

	vs = calloc(1, sizeof(*vs));
	if (!vs)
		return -ENOMEM;
	pthread_mutex_init(&vs->read_lock, NULL);
	vs->ncpus = libbpf_num_possible_cpus();
	if (vs->ncpus <= 0) {
		err = vs->ncpus ? vs->ncpus : -EINVAL;
		goto fail;
	}

	compat_probe(&vs->kernel);
	err = kernel_usable(&vs->kernel);
	if (err)
		goto fail;
	/* kernels without BPF's atomic or/and/fetch/cmpxchg (before 5.12) load the compat object */
	vs->compat = !vs->kernel.atomics;
	vlog(VCPUSTAT_LOG_INFO, "BPF object: %s", vs->compat ? "compat (this kernel has no BPF atomic or/and/fetch/cmpxchg)" : "main");
	vs->skel = skel_open(vs->compat);
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
	if (vs->kernel.kvm_btf)
		kb.kvm = btf__parse_split("/sys/kernel/btf/kvm", kb.vmlinux);
	/* the tp/ programs' fields come from tracefs: mounted before they are chosen */
	if (!opts->no_kvm)
		tracefs_mount_once();

	vs->marks = !t->no_marks && marks_wanted(opts, &vs->kernel);
	vs->skel->rodata->marks_mode = vs->marks;
	/* the task-storage map exists only in marks mode: older kernels have no such map type */
	bpf_map__set_autocreate(vs->skel->maps.marks, vs->marks);
	for (i = 0; i < NR_PROGS; i++) {
		const struct prog_def *d = &prog_defs[i];
		struct vcpustat_prog *p = &vs->progs[i];
		struct bpf_program *prog = find_prog(vs, prog_name(vs, i));

		/* the other form of the program is never loaded */
		if (d->marks)
			bpf_program__set_autoload(find_prog(vs, vs->marks ? d->name : d->marks), false);

		p->name = d->name;
		p->tracepoint = d->tracepoint;
		p->required = d->required;
		p->kvm = d->kvm;
		snprintf(p->form, sizeof(p->form), "%s%s", form_names[d->form], vs->marks && d->marks ? " (marks)" : "");
		if (!prog) {
			err = -ENOENT;
			vlog(VCPUSTAT_LOG_WARN, "BPF object lacks program %s", d->name);
			goto fail;
		}
		if (d->kvm && opts->no_kvm) {
			p->status = VCPUSTAT_PROG_OFF;
			snprintf(p->message, sizeof(p->message), "not loaded (--no-kvm)");
		} else if (!d->required && left_out(d->name)) {
			p->status = VCPUSTAT_PROG_OFF;
			snprintf(p->message, sizeof(p->message), "left out (VCPUSTAT_LEAVE_OUT): %s",
				 d->losing ? d->losing : "");
		} else if (d->asked && !opts->address_spaces) {
			p->status = VCPUSTAT_PROG_OFF;
			snprintf(p->message, sizeof(p->message), "not loaded (guest address spaces: --address-spaces)");
		} else if (d->form == FORM_FENTRY && (t->fentry_err || t->refused[i])) {
			p->status = VCPUSTAT_PROG_FAILED;
			p->err = t->refused[i] ? t->refused[i] : t->fentry_err;
			snprintf(p->message, sizeof(p->message), "this kernel does not load fentry programs on %s (%s): %s",
				 strchr(d->tracepoint, ':') + 1, strerror(-p->err), d->losing);
		} else if (t->refused[i]) {
			p->status = VCPUSTAT_PROG_FAILED;
			p->err = t->refused[i];
			snprintf(p->message, sizeof(p->message), "this kernel refused the program on %s (%s): %s",
				 d->tracepoint, strerror(-p->err), d->losing ? d->losing : "left out");
		} else if (prog_possible(&kb, d, &vs->skel->rodata->tp_fields, p->message, sizeof(p->message))) {
			p->status = VCPUSTAT_PROG_MISSING;
			p->err = -ENOENT;
		} else {
			p->status = VCPUSTAT_PROG_LOADED;
			t->fentry_tried |= d->form == FORM_FENTRY;
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
	vs->skel->rodata->svm_npt = !opts->address_spaces || svm_nested_paging(); /* read only where it is used */
	bpf_map__set_max_entries(vs->skel->maps.cpus, (__u32)vs->ncpus);
	bpf_map__set_max_entries(vs->skel->maps.cpu_topo, (__u32)vs->ncpus);
	if (opts->max_vcpus) {
		bpf_map__set_max_entries(vs->skel->maps.vcpus, opts->max_vcpus);
		bpf_map__set_max_entries(vs->skel->maps.dead_vcpus, opts->max_vcpus);
	}
	if (opts->max_vms)
		bpf_map__set_max_entries(vs->skel->maps.vms, opts->max_vms);
	if (opts->max_hists) {
		bpf_map__set_max_entries(vs->skel->maps.hists, opts->max_hists);
		bpf_map__set_max_entries(vs->skel->maps.hist_rows, opts->max_hists);
		bpf_map__set_max_entries(vs->skel->maps.hist_free, opts->max_hists);
	}
	if (opts->max_details) {
		bpf_map__set_max_entries(vs->skel->maps.details, opts->max_details);
		bpf_map__set_max_entries(vs->skel->maps.fault_pages, opts->max_details);
		bpf_map__set_max_entries(vs->skel->maps.guest_cr3s, opts->max_details);
	}
	/*
	 * The rings: ringbuf_bytes (default VCPUSTAT_RINGBUF_BYTES) split among
	 * the online CPUs, a power of two pages each, and by default no less
	 * than VCPUSTAT_RINGBUF_CPU_MIN_BYTES. The outer map needs a ring as
	 * the template of its slots; the unused one of the two kinds is a page.
	 */
	total = opts->ringbuf_bytes ? opts->ringbuf_bytes : VCPUSTAT_RINGBUF_BYTES;
	bpf_map__set_max_entries(vs->skel->maps.cpu_records, (__u32)vs->ncpus);
	proto = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ring_template", 0, 0, ring_pages(0), NULL);
	if (proto < 0 || bpf_map__set_inner_map_fd(vs->skel->maps.cpu_records, proto)) {
		err = proto < 0 ? -errno : -EINVAL;
		*rings_failed = !no_per_cpu;
		goto fail;
	}
	if (no_per_cpu) {
		vs->ring_bytes = ring_pages(total);
		vs->skel->rodata->shared_ring = true;
		bpf_map__set_max_entries(vs->skel->maps.records, vs->ring_bytes);
	} else {
		bool *online = calloc((size_t)vs->ncpus, sizeof(bool));

		if (!online) {
			err = -ENOMEM;
			goto fail;
		}
		vs->ring_bytes = ring_pages(total / (unsigned long)online_cpus(online, vs->ncpus));
		free(online);
		if (!opts->ringbuf_bytes && vs->ring_bytes < VCPUSTAT_RINGBUF_CPU_MIN_BYTES)
			vs->ring_bytes = VCPUSTAT_RINGBUF_CPU_MIN_BYTES;
		bpf_map__set_max_entries(vs->skel->maps.records, ring_pages(0));
	}
	vs->skel->rodata->wakeup_bytes = vs->ring_bytes / 8;

	libbpf_quiet = t->fentry_tried;
	err = vcpustat_bpf__load(vs->skel);
	libbpf_quiet = false;
	if (err) {
		vlog(VCPUSTAT_LOG_WARN, "cannot load the BPF programs: %s", strerror(-err));
		*rings_failed = !no_per_cpu;
		goto fail;
	}
	close(proto);
	proto = -1;
	err = hist_rows_init(vs);
	if (err) {
		vlog(VCPUSTAT_LOG_WARN, "cannot map the histograms' rows: %s", strerror(-err));
		goto fail;
	}
	if (no_per_cpu) {
		vs->nrings = 1;
		snprintf(vs->rings_how, sizeof(vs->rings_how), "one ring buffer shared by all CPUs, %u KiB (%s)",
			 vs->ring_bytes >> 10, no_per_cpu);
	} else {
		err = create_rings(vs, vs->ring_bytes);
		if (err) {
			vlog(VCPUSTAT_LOG_WARN, "cannot create the per-CPU ring buffers: %s", strerror(-err));
			*rings_failed = true;
			goto fail;
		}
		snprintf(vs->rings_how, sizeof(vs->rings_how), "one ring buffer per CPU, %d x %u KiB", vs->nrings,
			 vs->ring_bytes >> 10);
	}
	vlog(VCPUSTAT_LOG_INFO, "records: %s", vs->rings_how);
	kernel_btf_free(&kb);
	*out = vs;
	return 0;
fail:
	if (proto >= 0)
		close(proto);
	kernel_btf_free(&kb);
	vcpustat_close(vs);
	return err;
}

int vcpustat_rings(const struct vcpustat *vs, const char **how)
{
	if (how)
		*how = vs->rings_how;
	return vs->nrings;
}

int vcpustat_attach(struct vcpustat *vs)
{
	int attached = 0, err = 0;
	size_t i;

	for (i = 0; i < NR_PROGS; i++) {
		struct vcpustat_prog *p = &vs->progs[i];
		struct bpf_program *prog;

		if (p->status != VCPUSTAT_PROG_LOADED)
			continue;
		if (prog_defs[i].form == FORM_TP) /* libbpf reads tp/ event ids from tracefs */
			tracefs_mount_once();
		prog = find_prog(vs, prog_name(vs, i));
		vs->links[i] = bpf_program__attach(prog);
		if (!vs->links[i]) {
			p->err = -errno;
			p->status = VCPUSTAT_PROG_FAILED;
			snprintf(p->message, sizeof(p->message), "cannot attach to %s: %s%s", p->tracepoint,
				 strerror(errno),
				 prog_defs[i].form == FORM_TP && !compat_tracefs() ? " (tracefs could not be mounted)" : "");
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

static void consumer_forget(struct vcpustat *vs);

void vcpustat_close(struct vcpustat *vs)
{
	size_t i;

	if (!vs)
		return;
	consumer_forget(vs);
	for (i = 0; i < NR_PROGS; i++)
		bpf_link__destroy(vs->links[i]);
	for (i = 0; vs->ring_fds && i < (size_t)vs->nrings; i++)
		close(vs->ring_fds[i]);
	free(vs->ring_fds);
	if (vs->hist_rows)
		munmap((void *)vs->hist_rows, vs->hist_rows_len);
	vcpustat_bpf__destroy(vs->skel);
	pthread_mutex_destroy(&vs->read_lock);
	free(vs->read_keys);
	free(vs->read_vals);
	if (vs->vmm_scans_on)
		hashmap_free(&vs->vmm_scans);
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

int vcpustat_prog_fd(const struct vcpustat *vs, const char *name)
{
	struct bpf_program *p = NULL;

	/* a program of prog_defs by its name: whichever form does its work */
	for (size_t i = 0; i < NR_PROGS && !p; i++)
		if (!strcmp(prog_defs[i].name, name))
			p = find_prog(vs, prog_name(vs, i));
	if (!p)
		p = find_prog(vs, name);

	return p ? bpf_program__fd(p) : -ENOENT;
}

/* Grow a read buffer to at least size bytes (its old contents are not kept). */
static int read_buf(void **buf, size_t *have, size_t size)
{
	void *p;

	if (*have >= size)
		return 0;
	p = malloc(size);
	if (!p)
		return -ENOMEM;
	free(*buf);
	*buf = p;
	*have = size;
	return 0;
}

/*
 * Read (and with del, remove) every entry of a hash map into vs's read
 * buffers, under vs->read_lock (held on success: the caller copies what it
 * keeps, then unlocks). Uses batch lookups, falling back to key-by-key
 * iteration on kernels without them.
 */
static int read_hash_locked(struct vcpustat *vs, const struct bpf_map *map, bool del, size_t *n_out)
{
	size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map);
	size_t max = bpf_map__max_entries(map), n = 0;
	int fd = bpf_map__fd(map), err = 0;
	char *keys, *vals;
	__u32 batch = 0;
	bool first = true;

	*n_out = 0;
	pthread_mutex_lock(&vs->read_lock);
	if (read_buf(&vs->read_keys, &vs->read_keys_size, (max ? max : 1) * ksz) ||
	    read_buf(&vs->read_vals, &vs->read_vals_size, (max ? max : 1) * vsz)) {
		pthread_mutex_unlock(&vs->read_lock);
		return -ENOMEM;
	}
	keys = vs->read_keys;
	vals = vs->read_vals;
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
	if (err) {
		pthread_mutex_unlock(&vs->read_lock);
		return err;
	}
	*n_out = n;
	return 0;
}

/* A copy of the first n elements of size sz of src (at least one byte allocated). */
static void *copy_out(const void *src, size_t n, size_t sz)
{
	void *p = malloc(n ? n * sz : 1);

	if (p && n)
		memcpy(p, src, n * sz);
	return p;
}

/* Every entry of a hash map (removed with del), as freshly allocated key and value arrays. */
static int read_hash(struct vcpustat *vs, const struct bpf_map *map, bool del, void **keys_out, void **vals_out,
		     size_t *n_out)
{
	size_t n;
	int err;

	*keys_out = *vals_out = NULL;
	*n_out = 0;
	err = read_hash_locked(vs, map, del, &n);
	if (err)
		return err;
	*keys_out = copy_out(vs->read_keys, n, bpf_map__key_size(map));
	*vals_out = copy_out(vs->read_vals, n, bpf_map__value_size(map));
	pthread_mutex_unlock(&vs->read_lock);
	if (!*keys_out || !*vals_out) {
		free(*keys_out);
		free(*vals_out);
		*keys_out = *vals_out = NULL;
		return -ENOMEM;
	}
	*n_out = n;
	return 0;
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

	err = read_hash(vs, map, false, (void **)&keys, (void **)&vals, &n);
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

/* The rows of the details, fault_pages and guest_cr3s maps, one after the other, in snap->details. */
static int read_details(struct vcpustat *vs, struct vcpustat_snapshot *snap)
{
	const struct bpf_map *maps[] = { vs->skel->maps.details, vs->skel->maps.fault_pages,
					 vs->skel->maps.guest_cr3s };
	size_t n, i;
	int err;

	for (int m = 0; m < 3; m++) {
		struct vcpustat_detail_entry *d;

		err = read_hash_locked(vs, maps[m], false, &n);
		if (err)
			return err;
		d = realloc(snap->details, (snap->nr_details + n + 1) * sizeof(*d));
		if (d) {
			snap->details = d;
			memset(d + snap->nr_details, 0, (n + 1) * sizeof(*d));
			for (i = 0; i < n; i++) {
				d[snap->nr_details + i].key = ((struct vcpustat_detail_key *)vs->read_keys)[i];
				d[snap->nr_details + i].detail = ((struct vcpustat_detail *)vs->read_vals)[i];
			}
			snap->nr_details += n;
		}
		pthread_mutex_unlock(&vs->read_lock);
		if (!d)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Row row of the histograms, if key k still owns it (read from the mapping:
 * the programs may add to it meanwhile, as to any map value being copied).
 */
static bool hist_row_read(const struct vcpustat *vs, __u32 row, const struct vcpustat_hist_key *k,
			  struct vcpustat_hist *out)
{
	const struct vcpustat_hist_row *r;

	if (row >= bpf_map__max_entries(vs->skel->maps.hist_rows))
		return false;
	r = &vs->hist_rows[row];
	memcpy(out, &r->hist, sizeof(*out));
	return !memcmp(&r->key, k, sizeof(*k));
}

int vcpustat_snapshot(struct vcpustat *vs, struct vcpustat_snapshot *snap)
{
	void *keys = NULL, *vals = NULL;
	size_t i, n;
	int err;

	memset(snap, 0, sizeof(*snap));

	err = read_hash(vs, vs->skel->maps.vcpus, false, &keys, &vals, &snap->nr_vcpus);
	if (err)
		goto fail;
	/* after the read: the open intervals of what was read end now */
	snap->ts = vcpustat_now_ns();
	free(keys);
	snap->vcpus = vals;

	err = read_hash(vs, vs->skel->maps.dead_vcpus, true, &keys, &vals, &snap->nr_dead);
	if (err)
		goto fail;
	free(keys);
	snap->dead = vals;

	err = read_hash(vs, vs->skel->maps.vms, false, &keys, &vals, &snap->nr_vms);
	if (err)
		goto fail;
	free(keys);
	snap->vms = vals;

	/* vCPUs' caches of histogram rows are the programs' business, not state */
	for (i = 0; i < snap->nr_vcpus; i++)
		memset(snap->vcpus[i].hist_slot, 0, sizeof(snap->vcpus[i].hist_slot));
	for (i = 0; i < snap->nr_dead; i++)
		memset(snap->dead[i].hist_slot, 0, sizeof(snap->dead[i].hist_slot));

	/* histograms (the rows the hists map says are in use) and culprits */
	err = read_hash_locked(vs, vs->skel->maps.hists, false, &n);
	if (err)
		goto fail;
	/* zeroed: the padding too, snapshots are compared byte for byte (tests/test_replay.c) */
	snap->hists = calloc(n ? n : 1, sizeof(*snap->hists));
	for (i = 0; snap->hists && i < n; i++) {
		const struct vcpustat_hist_key *k = &((struct vcpustat_hist_key *)vs->read_keys)[i];
		__u32 row = ((__u32 *)vs->read_vals)[i];

		if (!hist_row_read(vs, row, k, &snap->hists[snap->nr_hists].hist))
			continue; /* freed since the lookup */
		snap->hists[snap->nr_hists++].key = *k;
	}
	pthread_mutex_unlock(&vs->read_lock);
	if (!snap->hists) {
		err = -ENOMEM;
		goto fail;
	}

	err = read_hash_locked(vs, vs->skel->maps.culprits, false, &snap->nr_culprits);
	if (err)
		goto fail;
	snap->culprits = calloc(snap->nr_culprits ? snap->nr_culprits : 1, sizeof(*snap->culprits));
	for (i = 0; snap->culprits && i < snap->nr_culprits; i++) {
		snap->culprits[i].key = ((struct vcpustat_culprit_key *)vs->read_keys)[i];
		snap->culprits[i].culprit = ((struct vcpustat_culprit *)vs->read_vals)[i];
	}
	pthread_mutex_unlock(&vs->read_lock);
	if (!snap->culprits) {
		err = -ENOMEM;
		goto fail;
	}

	err = read_details(vs, snap);
	if (err)
		goto fail;
	err = read_hash(vs, vs->skel->maps.vmm_threads, false, &keys, &vals, &snap->nr_vmm);
	if (err)
		goto fail;
	free(keys);
	snap->vmm = vals;
	err = read_hash_locked(vs, vs->skel->maps.vm_cpu, false, &snap->nr_places);
	if (err)
		goto fail;
	snap->places = calloc(snap->nr_places ? snap->nr_places : 1, sizeof(*snap->places));
	for (i = 0; snap->places && i < snap->nr_places; i++) {
		snap->places[i].key = ((struct vcpustat_place_key *)vs->read_keys)[i];
		snap->places[i].ns = ((__u64 *)vs->read_vals)[i];
	}
	pthread_mutex_unlock(&vs->read_lock);
	if (!snap->places) {
		err = -ENOMEM;
		goto fail;
	}
	err = read_lost(vs, snap->lost);
	if (err)
		goto fail;
	return 0;
fail:
	vcpustat_snapshot_free(snap);
	return err;
}

/*
 * Delete the entries of a hash map whose key starts with tgid (a __u32);
 * gone(vs, value), if given, for each entry this call deleted (so once per
 * entry), and its first error is returned.
 */
static int delete_by_tgid(struct vcpustat *vs, const struct bpf_map *map, __u32 tgid,
			  int (*gone)(struct vcpustat *vs, const void *value))
{
	size_t ksz = bpf_map__key_size(map), vsz = bpf_map__value_size(map), n, i;
	int fd = bpf_map__fd(map), err, e;
	void *keys, *vals;

	err = read_hash(vs, map, false, &keys, &vals, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		void *key = (char *)keys + i * ksz;

		/* culprits of its VMM threads: tgid | VCPUSTAT_CULPRIT_VMM */
		if ((*(__u32 *)key & ~VCPUSTAT_CULPRIT_VMM) != tgid || bpf_map_delete_elem(fd, key) || !gone)
			continue;
		e = gone(vs, (char *)vals + i * vsz);
		if (e && !err)
			err = e;
	}
	free(keys);
	free(vals);
	return err;
}

/*
 * A histogram row whose key left hists: zeroed (the key too: a vCPU's cached
 * index no longer matches), then back to the free queue. Called only by
 * whoever deleted its key, so a row is given back once.
 */
static int hist_row_free(struct vcpustat *vs, const void *value)
{
	static const struct vcpustat_hist_row zero;
	const __u32 *row = value;

	if (bpf_map_update_elem(bpf_map__fd(vs->skel->maps.hist_rows), row, &zero, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(vs->skel->maps.hist_free), NULL, row, BPF_ANY))
		return -errno; /* the row is lost to new keys, not wrong */
	return 0;
}

int vcpustat_reap_vm(struct vcpustat *vs, __u32 tgid)
{
	int err;

	bpf_map_delete_elem(bpf_map__fd(vs->skel->maps.vms), &tgid);
	err = delete_by_tgid(vs, vs->skel->maps.hists, tgid, hist_row_free);
	if (!err)
		err = delete_by_tgid(vs, vs->skel->maps.culprits, tgid, NULL);
	if (!err)
		err = delete_by_tgid(vs, vs->skel->maps.details, tgid, NULL);
	if (!err)
		err = delete_by_tgid(vs, vs->skel->maps.fault_pages, tgid, NULL);
	if (!err)
		err = delete_by_tgid(vs, vs->skel->maps.guest_cr3s, tgid, NULL);
	if (!err)
		err = delete_by_tgid(vs, vs->skel->maps.vm_cpu, tgid, NULL);
	return err;
}

int vcpustat_set_topology(struct vcpustat *vs, const struct cpu_topology *t)
{
	int fd = bpf_map__fd(vs->skel->maps.cpu_topo), set = 0;

	for (unsigned int cpu = 0; cpu < t->nr_cpus && cpu < (unsigned int)vs->ncpus; cpu++) {
		struct vcpustat_cpu_topo v = { .node = t->node[cpu], .llc = t->llc[cpu], .sibling = VCPU_PCPU_NONE,
					       .valid = 1 };

		/* the first other hardware thread of its core (placement counts one sibling) */
		for (unsigned int o = 0; t->core[cpu] >= 0 && o < t->nr_cpus && v.sibling == VCPU_PCPU_NONE; o++)
			if (o != cpu && t->core[o] == t->core[cpu])
				v.sibling = o;
		if (bpf_map_update_elem(fd, &cpu, &v, BPF_ANY))
			return -errno;
		set++;
	}
	return set;
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

/*
 * ---- the merged drain ----
 * Each CPU's ring holds its entries in the order that CPU made them. libbpf's
 * consume empties one ring after the other, so a recorder would get a CPU's
 * last 100 ms before another CPU's first: far more than its reorder window
 * (20 ms) could put back in order. vcpustat_drain() instead merges the rings
 * by timestamp: it always hands on the oldest of the entries at the heads of
 * the rings, and before it hands on one newer than the moment it last found
 * some ring empty, it looks at the empty rings again (what a CPU records now
 * is stamped now, so an empty ring can only bring older entries if it was
 * found empty before them). Entries thus come out in time order, whatever
 * the number of rings, up to what the handlers themselves leave out of order
 * (a record stamped a little before it was reserved), as with one ring.
 */

static pthread_mutex_t consumers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vcpustat *consumers; /* every struct vcpustat with a ring_buffer: vcpustat_drain() finds its own */

static void ring_unmap(struct ring_map *m)
{
	long page = sysconf(_SC_PAGESIZE);

	if (m->cons)
		munmap(m->cons, (size_t)page);
	if (m->prod)
		munmap((void *)m->prod, m->prod_len);
	memset(m, 0, sizeof(*m));
}

static int ring_mmap(struct ring_map *m, int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	void *p;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->cons = p;
	m->prod_len = (size_t)page + 2 * (size_t)info.max_entries;
	p = mmap(NULL, m->prod_len, PROT_READ, MAP_SHARED, fd, page);
	if (p == MAP_FAILED) {
		int err = -errno;

		ring_unmap(m);
		return err;
	}
	m->prod = p;
	m->data = (const char *)p + page;
	m->mask = info.max_entries - 1;
	return 0;
}

/* The ring's next committed entry (discarded ones skipped): true if there is one. */
static bool ring_head(struct ring_map *m)
{
	unsigned long cons = __atomic_load_n(m->cons, __ATOMIC_RELAXED);

	m->head = NULL;
	for (;;) {
		unsigned long prod = __atomic_load_n(m->prod, __ATOMIC_ACQUIRE);
		const __u32 *hdr = (const __u32 *)(m->data + (cons & m->mask));
		__u32 len;

		if (cons >= prod)
			return false;
		len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		if (len & BPF_RINGBUF_BUSY_BIT)
			return false; /* still being written */
		m->adv = ((len & ~BPF_RINGBUF_DISCARD_BIT) + BPF_RINGBUF_HDR_SZ + 7) & ~7u;
		if (!(len & BPF_RINGBUF_DISCARD_BIT))
			break;
		cons += m->adv;
		__atomic_store_n(m->cons, cons, __ATOMIC_RELEASE);
	}
	m->head = m->data + (cons & m->mask) + BPF_RINGBUF_HDR_SZ;
	m->head_len = __atomic_load_n((const __u32 *)(m->data + (cons & m->mask)), __ATOMIC_RELAXED);
	if (m->head_len == sizeof(struct vcpustat_record))
		m->head_ts = ((const struct vcpustat_record *)m->head)->ts;
	else if (m->head_len == sizeof(struct vcpustat_event))
		m->head_ts = ((const struct vcpustat_event *)m->head)->ts;
	else
		m->head_ts = 0; /* not ours: the callback skips it */
	return true;
}

/* The entry at the head is consumed: the kernel may write over it. */
static void ring_pop(struct ring_map *m)
{
	__atomic_store_n(m->cons, __atomic_load_n(m->cons, __ATOMIC_RELAXED) + m->adv, __ATOMIC_RELEASE);
}

/* Heap order: the older head first, the lower CPU on a tie. */
static bool heap_before(const struct vcpustat *vs, int a, int b)
{
	const struct ring_map *x = &vs->maps[a], *y = &vs->maps[b];

	return x->head_ts < y->head_ts || (x->head_ts == y->head_ts && a < b);
}

static void heap_down(struct vcpustat *vs, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, m = i, t;

		if (l < n && heap_before(vs, vs->heap[l], vs->heap[m]))
			m = l;
		if (l + 1 < n && heap_before(vs, vs->heap[l + 1], vs->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = vs->heap[i];
		vs->heap[i] = vs->heap[m];
		vs->heap[m] = t;
		i = m;
	}
}

static void heap_up(struct vcpustat *vs, int i)
{
	while (i && heap_before(vs, vs->heap[i], vs->heap[(i - 1) / 2])) {
		int t = vs->heap[i];

		vs->heap[i] = vs->heap[(i - 1) / 2];
		vs->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* Queue the rings not queued that have an entry now; returns the new heap size. */
static int heap_fill(struct vcpustat *vs, int n)
{
	for (int r = 0; r < vs->nrings; r++)
		if (!vs->maps[r].queued && ring_head(&vs->maps[r])) {
			vs->maps[r].queued = true;
			vs->heap[n] = r;
			heap_up(vs, n++);
		}
	return n;
}

/* Hand on every committed entry of every ring, oldest first; the number handed on or <0. */
static int merged_consume(struct vcpustat *vs)
{
	__u64 empty_at = vcpustat_now_ns(); /* rings not queued had nothing at this time */
	int n, done = 0, err = 0;

	for (int r = 0; r < vs->nrings; r++)
		vs->maps[r].queued = false;
	n = heap_fill(vs, 0);
	while (n) {
		struct ring_map *m;

		if (vs->maps[vs->heap[0]].head_ts > empty_at && n < vs->nrings) {
			empty_at = vcpustat_now_ns();
			n = heap_fill(vs, n);
		}
		m = &vs->maps[vs->heap[0]];
		err = rb_callback(&vs->consumer, (void *)m->head, m->head_len);
		ring_pop(m);
		done++;
		if (err < 0)
			break;
		if (!ring_head(m)) {
			m->queued = false;
			vs->heap[0] = vs->heap[--n];
		}
		heap_down(vs, n, 0);
	}
	return err < 0 ? err : done;
}

static void consumer_forget(struct vcpustat *vs)
{
	struct vcpustat **p;

	pthread_mutex_lock(&consumers_lock);
	for (p = &consumers; *p; p = &(*p)->next_consumer)
		if (*p == vs) {
			*p = vs->next_consumer;
			break;
		}
	pthread_mutex_unlock(&consumers_lock);
	for (int r = 0; vs->maps && r < vs->nrings; r++)
		ring_unmap(&vs->maps[r]);
	free(vs->maps);
	free(vs->heap);
	vs->maps = NULL;
	vs->heap = NULL;
	vs->rb = NULL;
}

static struct vcpustat *consumer_of(const struct ring_buffer *rb)
{
	struct vcpustat *vs;

	pthread_mutex_lock(&consumers_lock);
	for (vs = consumers; vs && vs->rb != rb; vs = vs->next_consumer)
		;
	pthread_mutex_unlock(&consumers_lock);
	return vs;
}

static int ring_fd(const struct vcpustat *vs, int r)
{
	return vs->ring_fds ? vs->ring_fds[r] : bpf_map__fd(vs->skel->maps.records);
}

struct ring_buffer *vcpustat_ring_buffer(struct vcpustat *vs, const struct vcpustat_consumer *c)
{
	struct ring_buffer *rb;
	int err = 0;

	consumer_forget(vs);
	vs->consumer = *c;
	vs->maps = calloc((size_t)vs->nrings, sizeof(*vs->maps));
	vs->heap = calloc((size_t)vs->nrings, sizeof(*vs->heap));
	if (!vs->maps || !vs->heap) {
		consumer_forget(vs);
		errno = ENOMEM;
		return NULL;
	}
	for (int r = 0; r < vs->nrings && !err; r++)
		err = ring_mmap(&vs->maps[r], ring_fd(vs, r));
	rb = err ? NULL : ring_buffer__new(ring_fd(vs, 0), rb_callback, &vs->consumer, NULL);
	if (!err && !rb)
		err = -errno;
	for (int r = 1; rb && r < vs->nrings && !err; r++)
		err = ring_buffer__add(rb, ring_fd(vs, r), rb_callback, &vs->consumer);
	if (err) {
		ring_buffer__free(rb);
		consumer_forget(vs);
		errno = -err;
		return NULL;
	}
	pthread_mutex_lock(&consumers_lock);
	for (struct vcpustat *o = consumers; o; o = o->next_consumer)
		if (o->rb == rb)
			o->rb = NULL; /* a freed ring_buffer's address, reused */
	vs->rb = rb;
	vs->next_consumer = consumers;
	consumers = vs;
	pthread_mutex_unlock(&consumers_lock);
	return rb;
}

int vcpustat_drain(struct ring_buffer *rb, int timeout_ms)
{
	struct vcpustat *vs = consumer_of(rb);
	struct epoll_event ev[8];
	int err;

	if (!vs)
		return -EINVAL;
	drain_budget.until = vcpustat_now_ns() + ((__u64)(timeout_ms > 0 ? timeout_ms : 0) + VCPUSTAT_DRAIN_MS) * 1000000ull;
	drain_budget.n = 0;
	drain_budget.hit = false;
	/* wait for a ring to wake us (libbpf's epoll set); the merge then takes every ring's entries */
	if (timeout_ms && epoll_wait(ring_buffer__epoll_fd(rb), ev, 8, timeout_ms) < 0 && errno != EINTR) {
		err = -errno;
		goto fail;
	}
	err = merged_consume(vs);
	if (err < 0 && !(err == -EAGAIN && drain_budget.hit))
		goto fail;
	drain_budget.until = 0;
	return drain_budget.n;
fail:
	drain_budget.until = 0;
	return err;
}

/*
 * How far the drain has come, on the one scale all rings share, their
 * entries' timestamps: prod is now, cons the oldest entry still waiting in
 * any ring (now if none waits).
 */
int vcpustat_ring_pos(struct vcpustat *vs, unsigned long *cons, unsigned long *prod)
{
	__u64 now = vcpustat_now_ns(), oldest = now;

	if (!vs->maps)
		return -EINVAL;
	for (int r = 0; r < vs->nrings; r++)
		if (ring_head(&vs->maps[r]) && vs->maps[r].head_ts < oldest)
			oldest = vs->maps[r].head_ts;
	*cons = (unsigned long)oldest;
	*prod = (unsigned long)now;
	return 0;
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
	mark_thread(vs, tid);
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
		if (kvm_process_has_vm(proc_root, de->d_name))
			added += seed_process(vs, proc_root, de->d_name);
	}
	closedir(d);
	return added;
}

int vcpustat_add_vmm_thread(struct vcpustat *vs, __u32 tid, __u32 tgid, enum vcpustat_vmm_kind kind, const char *comm)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_VMM_SEED, .ts = vcpustat_now_ns(), .tid = tid, .tgid = tgid,
				     .arg0 = kind };

	snprintf(ev.comm, sizeof(ev.comm), "%s", comm && *comm ? comm : "?");
	mark_thread(vs, tid);
	return vcpustat_inject(vs, &ev);
}

/* A vhost worker's name: "vhost-<pid of its owner>"; that pid, or 0. */
static __u32 vhost_owner(const char *comm)
{
	char *end;
	unsigned long pid;

	if (strncmp(comm, "vhost-", 6) || comm[6] < '0' || comm[6] > '9')
		return 0;
	pid = strtoul(comm + 6, &end, 10);
	return *end || pid > 0xffffffffu ? 0 : (__u32)pid;
}

static int set_add(struct hashmap *set, __u32 tid)
{
	int err = hashmap_insert(set, &tid, NULL);

	return err == -EEXIST ? 0 : err;
}

static bool tid_in(const struct hashmap *known, __u32 tid)
{
	return hashmap_lookup(known, &tid) != NULL;
}

/* The threads of VM tgid's process that are not tracked yet; the number added. */
static int seed_vmm_process(struct vcpustat *vs, const char *proc_root, __u32 tgid, const struct hashmap *known)
{
	char path[512], comm[16];
	struct dirent *de;
	int added = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%u/task", proc_root, tgid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		__u32 tid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		tid = (__u32)strtoul(de->d_name, NULL, 10);
		if (tid_in(known, tid))
			continue;
		snprintf(path, sizeof(path), "%s/%u/task/%u/comm", proc_root, tgid, tid);
		/* a vCPU not seen yet keeps out: its first KVM event makes it one */
		if (read_comm(path, comm) || vcpu_index_from_comm(comm) >= 0)
			continue;
		if (vcpustat_add_vmm_thread(vs, tid, tgid, vhost_owner(comm) ? VCPUSTAT_VMM_VHOST : VCPUSTAT_VMM_EMULATOR,
					    comm) == 0)
			added++;
	}
	closedir(d);
	return added;
}

/* vhost-<pid> kernel threads (before Linux 6.4) of the VMs in vms; the number added. */
static int seed_vhost_kthreads(struct vcpustat *vs, const char *proc_root, const struct hashmap *vms,
			       const struct hashmap *known)
{
	char path[512], comm[16];
	struct dirent *de;
	int added = 0;
	DIR *d;

	d = opendir(proc_root);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		__u32 pid, owner;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		pid = (__u32)strtoul(de->d_name, NULL, 10);
		if (tid_in(known, pid) || tid_in(vms, pid))
			continue;
		snprintf(path, sizeof(path), "%s/%u/comm", proc_root, pid);
		if (read_comm(path, comm) || !(owner = vhost_owner(comm)) || !tid_in(vms, owner))
			continue;
		if (vcpustat_add_vmm_thread(vs, pid, owner, VCPUSTAT_VMM_VHOST, comm) == 0)
			added++;
	}
	closedir(d);
	return added;
}

int vcpustat_seed_vmm(struct vcpustat *vs, const struct vcpustat_snapshot *snap, const char *proc_root)
{
	struct hashmap known = { 0 }, vms = { 0 }, scans;
	__u64 now = vcpustat_now_ns();
	__u32 *due = NULL;
	size_t i, nr_due = 0;
	bool vhost_due;
	int added = 0, err;

	if (!proc_root)
		proc_root = "/proc";
	if (!vs->vmm_scans_on) {
		err = hashmap_init(&vs->vmm_scans, sizeof(__u32), sizeof(__u64), 0);
		if (err)
			return err;
		vs->vmm_scans_on = true;
	}
	err = hashmap_init(&scans, sizeof(__u32), sizeof(__u64), 0);
	if (err)
		return err;
	err = hashmap_init(&vms, sizeof(__u32), 1, 0);
	if (!err && !(due = malloc((snap->nr_vms + 1) * sizeof(*due))))
		err = -ENOMEM;
	/* each VM when first seen, then every VCPUSTAT_VMM_SCAN_NS: a look costs a few syscalls */
	for (i = 0; i < snap->nr_vms && !err; i++) {
		const __u64 *last = hashmap_lookup(&vs->vmm_scans, &snap->vms[i].tgid);
		__u64 t = last ? *last : 0;

		if (snap->vms[i].exited_ns)
			continue;
		if (!last || now - *last >= VCPUSTAT_VMM_SCAN_NS) {
			due[nr_due++] = snap->vms[i].tgid;
			t = now;
		}
		err = hashmap_update(&scans, &snap->vms[i].tgid, &t);
		if (!err)
			err = set_add(&vms, snap->vms[i].tgid);
	}
	/* the VMs gone are forgotten */
	hashmap_free(&vs->vmm_scans);
	vs->vmm_scans = scans;
	/* a walk of every process: not at every refresh */
	vhost_due = !err && vms.count && (!vs->vhost_scan_ns || now - vs->vhost_scan_ns >= VCPUSTAT_VHOST_SCAN_NS);
	/* the threads tracked already: only when there is something to look at */
	if (!err && (nr_due || vhost_due))
		err = hashmap_init(&known, sizeof(__u32), 1, 0);
	for (i = 0; i < snap->nr_vcpus && !err && (nr_due || vhost_due); i++)
		err = set_add(&known, snap->vcpus[i].tid);
	for (i = 0; i < snap->nr_vmm && !err && (nr_due || vhost_due); i++)
		err = set_add(&known, snap->vmm[i].tid);
	for (i = 0; i < nr_due && !err; i++)
		added += seed_vmm_process(vs, proc_root, due[i], &known);
	if (!err && vhost_due) {
		vs->vhost_scan_ns = now;
		added += seed_vhost_kthreads(vs, proc_root, &vms, &known);
	}
	free(due);
	hashmap_free(&known);
	hashmap_free(&vms);
	return err ? err : added;
}
