// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Real VM exits, proven against KVM's own counters. These tests need a KVM
 * whose kvm_entry/kvm_exit fire (kvm_amd or kvm_intel): our hosts have none,
 * so tests/run.sh runs them inside the KVM lab (tests/kvmlab.sh,
 * docs/kvmlab.md), where the guest kernel's kvm_amd runs on QEMU's emulated
 * SVM. Elsewhere they skip, saying so.
 *
 * The ground truth is what KVM counted itself: microvm reads each vCPU's
 * statistics (KVM_GET_STATS_FD) once its vCPU threads have stopped, so they
 * cover each vCPU's whole life; vcpustat records from before microvm starts
 * to after it ends, so its file covers the same window. Zero difference, not
 * a margin.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <linux/kvm.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "exit_reasons.h"
#include "helpers.h"
#include "live/live.h"
#include "model/summary.h"
#include "model/placement.h"

/* The kvm_exit reasons the microvm mix program causes, as vcpustat names them. */
struct isa_names {
	const char *io, *hlt, *irq, *cpuid;
	const char *msr[2];	/* SVM: one "msr" exit for both; VMX: MSR_READ, MSR_WRITE */
	const char *npf[2];	/* SVM: npf; VMX: EPT_VIOLATION (touch), EPT_MISCONFIG (mmio) */
};

static const struct isa_names svm_names = { "io", "hlt", "interrupt", "cpuid", { "msr" }, { "npf" } };
static const struct isa_names vmx_names = { "IO_INSTRUCTION", "HLT", "EXTERNAL_INTERRUPT", "CPUID",
					    { "MSR_READ", "MSR_WRITE" }, { "EPT_VIOLATION", "EPT_MISCONFIG" } };

static struct lab_run {
	char dir[64];
	pid_t recorder;
	pid_t tools[4]; /* other background processes: live view, exporter */
} lab;

static void lab_cleanup(void)
{
	char cmd[128];

	if (lab.recorder > 0) {
		kill(lab.recorder, SIGKILL);
		waitpid(lab.recorder, NULL, 0);
		lab.recorder = 0;
	}
	for (int i = 0; i < 4; i++)
		if (lab.tools[i] > 0) {
			kill(lab.tools[i], SIGKILL);
			waitpid(lab.tools[i], NULL, 0);
			lab.tools[i] = 0;
		}
	if (lab.dir[0] && !getenv("VCPUSTAT_KEEP_TEST_FILES")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lab.dir);
		if (system(cmd)) {
			/* best effort */
		}
	}
	lab.dir[0] = '\0';
}

TestSuite(kvmlab, .fini = lab_cleanup, .timeout = 300);

static const char *in_dir(const char *name)
{
	static char paths[8][128];
	static int n;
	char *p = paths[n++ % 8];

	snprintf(p, 128, "%s/%s", lab.dir, name);
	return p;
}

/* Run a shell command; fail the test on a non-zero exit. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "failed (status %d): %s", st, cmd);
}

static json_t *load(const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);

	cr_assert_not_null(j, "%s: %s (line %d)", path, err.text, err.line);
	return j;
}

static json_t *jget(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	cr_assert_not_null(v, "'%s' is missing", key);
	return v;
}

static long long jint(json_t *obj, const char *key)
{
	json_t *v = jget(obj, key);

	cr_assert(json_is_integer(v), "'%s' is not an integer", key);
	return json_integer_value(v);
}

/* An integer field or 0 when absent (microvm omits exit reasons it never saw). */
static long long jint0(json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

/*
 * KVM's own counters of one vCPU (KVM_GET_STATS_FD, Linux 5.14+), or NULL
 * where this kernel has none: then only the VM's are known (microvm reads
 * them from debugfs, the sum over its vCPUs: vm_kvm_stats()), and the
 * tests compare the VM's sums, vCPU by vCPU only what microvm counted.
 */
static json_t *vcpu_kvm_stats(json_t *vcpu)
{
	json_t *kvm = json_object_get(vcpu, "kvm_stats");

	if (json_is_object(kvm))
		return kvm;
	cr_assert(json_is_string(json_object_get(vcpu, "kvm_stats_error")), "null kvm_stats says why");
	return NULL;
}

/* The VM's own counters where its vCPUs have none (see vcpu_kvm_stats()). */
static json_t *vm_kvm_stats(json_t *vm)
{
	json_t *kvm = json_object_get(vm, "kvm_stats");

	cr_assert(json_is_object(kvm), "KVM's counters of VM %s: per vCPU %s; per VM (debugfs) %s",
		  json_string_value(jget(vm, "name")),
		  json_string_value(json_object_get(json_array_get(jget(vm, "vcpus"), 0), "kvm_stats_error")),
		  json_string_value(json_object_get(vm, "kvm_stats_error")));
	return kvm;
}

/* Why a test that compares each vCPU with KVM's own counters of it cannot run here, or NULL. */
static const char *kvm_vcpu_stats_unavailable(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC), r;

	if (fd < 0)
		return "no /dev/kvm";
	r = ioctl(fd, KVM_CHECK_EXTENSION, 203 /* KVM_CAP_BINARY_STATS_FD */);
	close(fd);
	return r > 0 ? NULL :
		       "this kernel's KVM has no per-vCPU counters (KVM_GET_STATS_FD, Linux 5.14): the test compares "
		       "each vCPU's with vcpustat's";
}

/* Why a test of a program that needs the kvm module's BTF cannot run here, or NULL (docs/kernels.md). */
static const char *kvm_btf_unavailable(const char *what)
{
	static char why[160];

	if (access("/sys/kernel/btf/kvm", R_OK) == 0)
		return NULL;
	snprintf(why, sizeof(why), "%s needs the kvm module's BTF, which this kernel lacks", what);
	return why;
}

/* Why a test of KVM tracepoint event cannot run here (this kernel's KVM lacks it), or NULL. */
static const char *kvm_tracepoint_unavailable(const char *event)
{
	static char why[160], path[160];

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/kvm/%s", event);
	if (access(path, F_OK) == 0)
		return NULL;
	snprintf(why, sizeof(why), "this kernel's KVM has no tracepoint kvm:%s", event);
	return why;
}

/* Start `vcpustat record` and wait until it is attached (it creates the file then). */
/* `vcpustat record -o sht` (with flag, if not NULL), attached when this returns. */
/* vcpustat record -o sht with up to three more arguments (NULL: no more). */
static void start_recorder_args(const char *sht, const char *a1, const char *a2, const char *a3)
{
	char bin[512];
	struct stat st;

	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	fflush(NULL);
	lab.recorder = fork();
	cr_assert_geq(lab.recorder, 0, "fork: %s", strerror(errno));
	if (lab.recorder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(bin, bin, "record", "-q", "--ringbuf", "64M", "-o", sht, a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 120 * 20; i++) {
		int status;

		if (stat(sht, &st) == 0)
			return;
		cr_assert_eq(waitpid(lab.recorder, &status, WNOHANG), 0, "vcpustat record exited before it attached");
		usleep(50 * 1000);
	}
	cr_assert_fail("vcpustat record did not attach within 120 s");
}

static void start_recorder_with(const char *sht, const char *flag)
{
	start_recorder_args(sht, flag, NULL, NULL);
}

static void start_recorder(const char *sht)
{
	start_recorder_with(sht, NULL);
}

static void stop_recorder(void)
{
	cr_assert_eq(kill(lab.recorder, SIGINT), 0);
	cr_assert_eq(wait_exit(lab.recorder), 0, "vcpustat record exits 0 on SIGINT");
	lab.recorder = 0;
}

/* How many of vCPU n's exits vcpustat recorded, by reason (from its exit_reason intervals). */
static json_t *recorded_exits(const char *sht, const char *vm, long long vcpu)
{
	const char *out = in_dir("query.json");
	json_t *q, *counts = json_object(), *iv;
	size_t i;

	sh("'%s/bin/vcpustat' query '%s' --path /vms/%s/vcpus/%lld/exit_reason --json > '%s'", build_dir(), sht, vm,
	   vcpu, out);
	q = load(out);
	json_array_foreach(jget(json_array_get(jget(q, "attributes"), 0), "intervals"), i, iv) {
		const char *reason = json_string_value(json_object_get(iv, "value"));

		if (reason) /* null: in the guest */
			json_object_set_new(counts, reason, json_integer(jint0(counts, reason) + 1));
	}
	json_decref(q);
	return counts;
}

static json_t *find_by(json_t *array, const char *key, json_t *value)
{
	json_t *e;
	size_t i;

	json_array_foreach(array, i, e)
		if (json_equal(json_object_get(e, key), value))
			return e;
	return NULL;
}

/* A report table (exits, userspace_exits) as {reason: count}. */
static long long table_count(json_t *vm, const char *table, const char *reason)
{
	json_t *e;
	size_t i;

	json_array_foreach(jget(vm, table), i, e)
		if (!strcmp(json_string_value(jget(e, "reason")), reason))
			return jint(e, "count");
	return 0;
}

static long long sum_counts(json_t *counts)
{
	const char *k;
	json_t *v;
	long long sum = 0;

	json_object_foreach(counts, k, v)
		sum += json_integer_value(v);
	return sum;
}

/*
 * Per vCPU: vcpustat's exits by reason, summed, equal KVM's `exits`; io,
 * hlt (and the host interrupts) equal KVM's io_exits, halt_exits
 * (irq_exits) and microvm's own counts; cpuid and msr equal the guest's
 * ops; the MMIO writes reach user space as often as KVM counted mmio_exits.
 * Per VM: the report's tables agree with the per-vCPU sums.
 */
Test(kvmlab, exits_per_reason_equal_kvm_counters_per_vcpu)
{
	const struct isa_names *n = access("/sys/module/kvm_intel", F_OK) == 0 ? &vmx_names : &svm_names;
	const char *sht, *mjson, *rjson;
	json_t *report, *vms, *vm, *rep, *rvm, *vcpu, *rvcpu;
	char bin[512], args[1024];
	size_t i, j;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	snprintf(lab.dir, sizeof(lab.dir), "/tmp/vcpustat-kvmlab-XXXXXX");
	cr_assert_not_null(mkdtemp(lab.dir), "mkdtemp: %s", strerror(errno));
	sht = in_dir("r.sht");
	mjson = in_dir("microvm.json");
	rjson = in_dir("report.json");

	start_recorder(sht);
	snprintf(bin, sizeof(bin), "%s/bin/microvm", build_dir());
	snprintf(args, sizeof(args),
		 "--vms 2 --vcpus 2 --mix all --busy-us 2000 --idle-us 1000 --duration 2 -name guest=lab --json '%s'",
		 mjson);
	sh("'%s' %s", bin, args);
	stop_recorder();
	sh("'%s/bin/vcpustat' report '%s' -j --top 0 > '%s'", build_dir(), sht, rjson);

	report = load(mjson);
	rep = load(rjson);
	cr_assert_eq(jint(jget(rep, "lost"), "ringbuf"), 0, "records were lost: the counts cannot be exact");
	vms = jget(report, "vms");
	cr_assert_eq(json_array_size(vms), 2);
	fprintf(stderr, "kvmlab: microvm %s; per vCPU: vcpustat (recorded) = KVM (KVM_GET_STATS_FD) = microvm\n", args);
	json_array_foreach(vms, i, vm) {
		const char *name = json_string_value(jget(vm, "name"));
		long long vm_io = 0, vm_hlt = 0, vm_irq = 0, vm_mmio = 0, vm_exits = 0, vm_rexits = 0;
		json_t *vkvm = vcpu_kvm_stats(json_array_get(jget(vm, "vcpus"), 0)) ? NULL : vm_kvm_stats(vm);

		rvm = find_by(jget(rep, "vms"), "vm", jget(vm, "name"));
		cr_assert_not_null(rvm, "vcpustat saw VM %s", name);
		json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
			json_t *kvm = vcpu_kvm_stats(vcpu), *mexits = jget(vcpu, "exits"), *ops = jget(vcpu, "ops");
			long long idx = jint(vcpu, "index"), npf = 0, msr = 0, seen;
			json_t *rec;

			rec = recorded_exits(sht, name, idx);
			rvcpu = find_by(jget(rvm, "vcpus"), "vcpu", jget(vcpu, "index"));
			cr_assert_not_null(rvcpu, "vcpustat saw %s vCPU %lld", name, idx);
			for (int k = 0; k < 2; k++) {
				npf += n->npf[k] ? jint0(rec, n->npf[k]) : 0;
				msr += n->msr[k] ? jint0(rec, n->msr[k]) : 0;
			}
			seen = sum_counts(rec);
			fprintf(stderr,
				"kvmlab:   %s vCPU %lld: exits %lld = %lld; %s %lld = %lld = %lld; %s %lld = %lld = %lld; "
				"%s %lld = %lld; %s %lld = %lld; msr %lld = %lld; npf %lld >= mmio %lld + touch %lld; "
				"userspace %lld = %lld, MMIO %lld = %lld%s\n",
				name, idx, seen, kvm ? jint(kvm, "exits") : -1, n->io, jint0(rec, n->io),
				kvm ? jint(kvm, "io_exits") : -1, jint0(mexits, "IO"), n->hlt, jint0(rec, n->hlt),
				kvm ? jint(kvm, "halt_exits") : -1, jint0(mexits, "HLT"), n->irq, jint0(rec, n->irq),
				kvm ? jint(kvm, "irq_exits") : -1, n->cpuid, jint0(rec, n->cpuid), jint(ops, "cpuid"), msr,
				jint(ops, "rdmsr") + jint(ops, "wrmsr"), npf, jint(ops, "mmio"), jint(ops, "touch"),
				jint(rvcpu, "userspace_exits"), jint(vcpu, "kvm_runs"), kvm ? jint(kvm, "mmio_exits") : -1,
				jint0(mexits, "MMIO"), kvm ? "" : " (-1: no per-vCPU counters in this KVM, the VM's below)");

			cr_assert_eq(jint(rvcpu, "kvm_exits"), seen, "%s vCPU %lld: report's kvm_exits = the recorded exits",
				     name, idx);
			if (kvm) {
				cr_assert_eq(seen, jint(kvm, "exits"),
					     "%s vCPU %lld: vcpustat's exits by reason, summed = KVM's exits", name, idx);
				cr_assert_eq(jint0(rec, n->io), jint(kvm, "io_exits"), "%s vCPU %lld: %s = io_exits", name,
					     idx, n->io);
				cr_assert_eq(jint0(rec, n->hlt), jint(kvm, "halt_exits"), "%s vCPU %lld: %s = halt_exits",
					     name, idx, n->hlt);
				cr_assert_eq(jint(kvm, "mmio_exits"), jint0(mexits, "MMIO"),
					     "%s vCPU %lld: mmio_exits = microvm's MMIO", name, idx);
				cr_assert_eq(jint0(rec, n->irq), jint(kvm, "irq_exits"), "%s vCPU %lld: %s = irq_exits", name,
					     idx, n->irq);
			}
			cr_assert_eq(jint0(rec, n->io), jint0(mexits, "IO"), "%s vCPU %lld: %s = microvm's IO", name, idx,
				     n->io);
			cr_assert_eq(jint0(rec, n->hlt), jint0(mexits, "HLT"), "%s vCPU %lld: %s = microvm's HLT", name, idx,
				     n->hlt);
			cr_assert_eq(jint(ops, "mmio"), jint0(mexits, "MMIO"));
			cr_assert_eq(jint0(rec, n->cpuid), jint(ops, "cpuid"),
				     "%s vCPU %lld: %s %lld = the guest's cpuid %lld (microvm's last exit %s)", name, idx,
				     n->cpuid, jint0(rec, n->cpuid), jint(ops, "cpuid"),
				     json_is_string(jget(vcpu, "last_exit")) ? json_string_value(jget(vcpu, "last_exit")) :
									       "none");
			cr_assert_eq(msr, jint(ops, "rdmsr") + jint(ops, "wrmsr"), "%s vCPU %lld: msr = rdmsr + wrmsr", name,
				     idx);
			cr_assert_geq(npf, jint(ops, "mmio") + jint(ops, "touch"),
				      "%s vCPU %lld: a nested page fault for every MMIO write and touch", name, idx);
			cr_assert_gt(jint(ops, "cpuid"), 0, "the mix ran");
			cr_assert_eq(jint(rvcpu, "userspace_exits"), jint(vcpu, "kvm_runs"),
				     "%s vCPU %lld: a userspace exit for every return from KVM_RUN", name, idx);
			vm_io += jint0(rec, n->io);
			vm_hlt += jint0(rec, n->hlt);
			vm_irq += jint0(rec, n->irq);
			vm_mmio += jint0(mexits, "MMIO"); /* = KVM's mmio_exits, per vCPU or for the VM below */
			vm_exits += seen;
			vm_rexits += jint(rvcpu, "kvm_exits");
			json_decref(rec);
		}
		if (vkvm) { /* a KVM without per-vCPU counters: the VM's, summed over its vCPUs */
			fprintf(stderr,
				"kvmlab:   %s (the VM's counters, debugfs): exits %lld = %lld; %s %lld = %lld; %s %lld = "
				"%lld; %s %lld = %lld; MMIO %lld = %lld\n",
				name, vm_exits, jint(vkvm, "exits"), n->io, vm_io, jint(vkvm, "io_exits"), n->hlt, vm_hlt,
				jint(vkvm, "halt_exits"), n->irq, vm_irq, jint(vkvm, "irq_exits"), vm_mmio,
				jint(vkvm, "mmio_exits"));
			cr_assert_eq(vm_exits, jint(vkvm, "exits"), "%s: vcpustat's exits by reason = KVM's exits", name);
			cr_assert_eq(vm_rexits, jint(vkvm, "exits"), "%s: the report's kvm_exits = KVM's exits", name);
			cr_assert_eq(vm_io, jint(vkvm, "io_exits"), "%s: %s = io_exits", name, n->io);
			cr_assert_eq(vm_hlt, jint(vkvm, "halt_exits"), "%s: %s = halt_exits", name, n->hlt);
			cr_assert_eq(vm_irq, jint(vkvm, "irq_exits"), "%s: %s = irq_exits", name, n->irq);
			cr_assert_eq(vm_mmio, jint(vkvm, "mmio_exits"), "%s: mmio_exits = microvm's MMIO", name);
		}
		cr_assert_eq(table_count(rvm, "exits", n->io), vm_io, "%s: the report's %s", name, n->io);
		cr_assert_eq(table_count(rvm, "exits", n->hlt), vm_hlt, "%s: the report's %s", name, n->hlt);
		cr_assert_eq(table_count(rvm, "userspace_exits", "MMIO"), vm_mmio, "%s: the report's MMIO", name);
		{
			json_t *e;
			long long sum = 0;

			json_array_foreach(jget(rvm, "exits"), j, e)
				sum += jint(e, "count");
			cr_assert_eq(sum, vm_exits, "%s: the report's exit table sums to the vCPUs' exits", name);
		}
	}
	json_decref(report);
	json_decref(rep);
}

/* ---- live view and exporter: the same exact counts, from the maps ---- */

static void lab_mkdir(void)
{
	snprintf(lab.dir, sizeof(lab.dir), "/tmp/vcpustat-kvmlab-XXXXXX");
	cr_assert_not_null(mkdtemp(lab.dir), "mkdtemp: %s", strerror(errno));
}

/* Start a vcpustat command in the background, its stdout into `out` (or /dev/null); returns its slot. */
static int start_tool(const char *out, char *const argv[])
{
	int slot = 0;
	pid_t pid;

	while (slot < 4 && lab.tools[slot] > 0)
		slot++;
	cr_assert_lt(slot, 4);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	lab.tools[slot] = pid;
	return slot;
}

static void stop_tool(int slot, const char *what)
{
	cr_assert_eq(kill(lab.tools[slot], SIGINT), 0);
	cr_assert_eq(wait_exit(lab.tools[slot]), 0, "%s exits 0 on SIGINT", what);
	lab.tools[slot] = 0;
}

static void tool_alive(int slot, const char *what)
{
	int status;

	cr_assert_eq(waitpid(lab.tools[slot], &status, WNOHANG), 0, "%s exited early (status %d)", what, status);
}

/* The complete lines of `vcpustat -j`'s output so far, as a JSON array (empty if none yet). */
static json_t *live_docs(const char *path)
{
	json_t *docs = json_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return docs;
	while ((n = getline(&line, &cap, f)) > 0) {
		json_t *d;

		if (line[n - 1] != '\n')
			break; /* still being written */
		d = json_loads(line, 0, NULL);
		cr_assert_not_null(d, "%s: a line that is not JSON: %.200s", path, line);
		json_array_append_new(docs, d);
	}
	free(line);
	fclose(f);
	return docs;
}

/* Wait until `vcpustat -j` printed a document whose maps were read after `after_ns` (0: any). */
static void wait_live_doc(int slot, const char *path, unsigned long long after_ns)
{
	for (int i = 0; i < 120 * 10; i++) {
		json_t *docs = live_docs(path), *last;
		long long ts;

		last = json_array_get(docs, json_array_size(docs) - 1);
		ts = last ? json_integer_value(json_object_get(last, "ts")) : -1;
		json_decref(docs);
		if (ts >= 0 && (unsigned long long)ts > after_ns)
			return;
		tool_alive(slot, "vcpustat -j");
		usleep(100 * 1000);
	}
	cr_assert_fail("vcpustat -j printed no document within 120 s");
}

/* `export --every -o FILE` replaces FILE by rename: wait until it has been replaced `times` times. */
static void wait_export_writes(int slot, const char *path, int times)
{
	struct stat st;
	ino_t ino = 0;

	if (stat(path, &st) == 0)
		ino = st.st_ino;
	for (int i = 0; i < 120 * 10 && times > 0; i++) {
		if (stat(path, &st) == 0 && st.st_ino != ino) {
			ino = st.st_ino;
			times--;
			continue;
		}
		tool_alive(slot, "vcpustat export --every");
		usleep(100 * 1000);
	}
	cr_assert_eq(times, 0, "vcpustat export --every did not rewrite %s within 120 s", path);
}

/* What KVM (and the guest, and microvm) say about one VM, summed over its vCPUs. */
struct vm_truth {
	long long exits, io, hlt, irq, cpuid, msr, mmio_touch, runs, u_io, u_mmio, u_hlt;
};

static void vm_truth(json_t *vm, struct vm_truth *t)
{
	json_t *vcpu;
	size_t j;

	memset(t, 0, sizeof(*t));
	json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
		json_t *kvm = vcpu_kvm_stats(vcpu), *mexits = jget(vcpu, "exits"), *ops = jget(vcpu, "ops");

		/* KVM's counters per vCPU, or (kernels before 5.14) the VM's, below */
		if (kvm) {
			t->exits += jint(kvm, "exits");
			t->io += jint(kvm, "io_exits");
			t->hlt += jint(kvm, "halt_exits");
			t->irq += jint(kvm, "irq_exits");
			t->u_mmio += jint(kvm, "mmio_exits");
			cr_assert_eq(jint(kvm, "io_exits"), jint0(mexits, "IO"), "KVM's io_exits = microvm's IO");
			cr_assert_eq(jint(kvm, "mmio_exits"), jint0(mexits, "MMIO"), "KVM's mmio_exits = microvm's MMIO");
		}
		t->cpuid += jint(ops, "cpuid");
		t->msr += jint(ops, "rdmsr") + jint(ops, "wrmsr");
		t->mmio_touch += jint(ops, "mmio") + jint(ops, "touch");
		t->runs += jint(vcpu, "kvm_runs");
		t->u_io += jint0(mexits, "IO");
		t->u_hlt += jint0(mexits, "HLT");
	}
	if (!vcpu_kvm_stats(json_array_get(jget(vm, "vcpus"), 0))) {
		json_t *kvm = vm_kvm_stats(vm);

		t->exits = jint(kvm, "exits");
		t->io = jint(kvm, "io_exits");
		t->hlt = jint(kvm, "halt_exits");
		t->irq = jint(kvm, "irq_exits");
		t->u_mmio = jint(kvm, "mmio_exits");
		cr_assert_eq(t->io, t->u_io, "KVM's io_exits = microvm's IO");
	}
}

/*
 * One VM's exit tables as a vcpustat interface gave them ({reason: count}
 * for kvm exits and for userspace exits) against the truth: every count
 * equal, and the reasons together equal KVM's exits -- each exit in the
 * histograms once.
 */
static void check_vm_tables(const char *src, const char *vm, json_t *ex, json_t *uex, const struct vm_truth *t)
{
	const struct isa_names *n = access("/sys/module/kvm_intel", F_OK) == 0 ? &vmx_names : &svm_names;
	long long msr = 0, npf = 0;

	for (int k = 0; k < 2; k++) {
		msr += n->msr[k] ? jint0(ex, n->msr[k]) : 0;
		npf += n->npf[k] ? jint0(ex, n->npf[k]) : 0;
	}
	fprintf(stderr,
		"kvmlab:   %s %s: exits %lld = %lld; %s %lld = %lld; %s %lld = %lld; %s %lld = %lld; %s %lld = %lld; "
		"msr %lld = %lld; npf %lld >= %lld; userspace %lld = %lld (IO %lld = %lld, MMIO %lld = %lld, HLT %lld = "
		"%lld)\n",
		src, vm, sum_counts(ex), t->exits, n->io, jint0(ex, n->io), t->io, n->hlt, jint0(ex, n->hlt), t->hlt,
		n->irq, jint0(ex, n->irq), t->irq, n->cpuid, jint0(ex, n->cpuid), t->cpuid, msr, t->msr, npf,
		t->mmio_touch, sum_counts(uex), t->runs, jint0(uex, "IO"), t->u_io, jint0(uex, "MMIO"), t->u_mmio,
		jint0(uex, "HLT"), t->u_hlt);
	cr_assert_eq(sum_counts(ex), t->exits, "%s %s: the exits by reason sum to KVM's exits (each exit once)", src,
		     vm);
	cr_assert_eq(jint0(ex, n->io), t->io, "%s %s: %s = KVM's io_exits", src, vm, n->io);
	cr_assert_eq(jint0(ex, n->hlt), t->hlt, "%s %s: %s = KVM's halt_exits", src, vm, n->hlt);
	cr_assert_eq(jint0(ex, n->irq), t->irq, "%s %s: %s = KVM's irq_exits", src, vm, n->irq);
	cr_assert_eq(jint0(ex, n->cpuid), t->cpuid, "%s %s: %s = the guest's cpuid", src, vm, n->cpuid);
	cr_assert_eq(msr, t->msr, "%s %s: msr = the guest's rdmsr + wrmsr", src, vm);
	cr_assert_geq(npf, t->mmio_touch, "%s %s: a nested page fault for every MMIO write and touch", src, vm);
	cr_assert_eq(sum_counts(uex), t->runs, "%s %s: the userspace exits sum to microvm's returns from KVM_RUN",
		     src, vm);
	cr_assert_eq(jint0(uex, "IO"), t->u_io, "%s %s: IO = KVM's io_exits", src, vm);
	cr_assert_eq(jint0(uex, "MMIO"), t->u_mmio, "%s %s: MMIO = KVM's mmio_exits", src, vm);
	cr_assert_eq(jint0(uex, "HLT"), t->u_hlt, "%s %s: HLT = microvm's HLT", src, vm);
}

/* Add an EXIT array ([{reason, count}]) into {reason: count}. */
static void add_table(json_t *counts, json_t *table)
{
	json_t *e;
	size_t i;

	json_array_foreach(table, i, e) {
		const char *r = json_string_value(jget(e, "reason"));

		json_object_set_new(counts, r, json_integer(jint0(counts, r) + jint(e, "count")));
	}
}

/* The counts of an exit_details array's rows of kind (and target, access; NULL: any), added up. */
static long long rows_sum(json_t *rows, const char *kind, const char *target, const char *access)
{
	long long n = 0;
	json_t *row;
	size_t r;

	json_array_foreach(rows, r, row) {
		if (strcmp(json_string_value(jget(row, "kind")), kind) ||
		    (target && strcmp(json_string_value(jget(row, "target")), target)) ||
		    (access && strcmp(json_string_value(jget(row, "access")), access)))
			continue;
		n += jint(row, "count");
	}
	return n;
}

/* One VM's rows over the live view's documents, each the window since the one before. */
static long long detail_sum(json_t *docs, json_t *vm_name, const char *kind, const char *target, const char *access)
{
	long long n = 0;
	json_t *doc;
	size_t k;

	json_array_foreach(docs, k, doc) {
		json_t *lvm = find_by(jget(doc, "vms"), "vm", vm_name);

		if (lvm)
			n += rows_sum(jget(lvm, "exit_details"), kind, target, access);
	}
	return n;
}

/* The exporter's series of one VM (counters since the start). */
static long long export_detail(json_t *xvm, const char *kind, const char *target, const char *access)
{
	return rows_sum(jget(xvm, "exit_details"), kind, target, access);
}

/*
 * The exit details of microvm's --mix (guest.c): every port I/O exit is
 * `in eax, 0x10`, every MSR access reads or writes EFER, every MMIO exit is
 * a 1-byte write to 0x10000, against KVM's and the guest's own counts. On
 * SVM each nested page fault traces kvm_page_fault once: the faulting pages
 * add up to the npf exits, page 0x10000's writes are the MMIO writes (and
 * faults KVM retried), the other pages' at least the touches.
 */
static void check_vm_details(json_t *docs, json_t *vm, json_t *ex, const struct vm_truth *t)
{
	json_t *name = jget(vm, "name");
	const char *n = json_string_value(name);
	long long pio = detail_sum(docs, name, "pio", NULL, NULL), port = detail_sum(docs, name, "pio", "0x10", "read");
	long long msr = detail_sum(docs, name, "msr", NULL, NULL), rd = 0, wr = 0, j;
	long long efer_r = detail_sum(docs, name, "msr", "0xc0000080", "read");
	long long efer_w = detail_sum(docs, name, "msr", "0xc0000080", "write");
	long long mmio = detail_sum(docs, name, "mmio", NULL, NULL), mw = detail_sum(docs, name, "mmio", "0x10000", "write");
	long long pf = detail_sum(docs, name, "page_fault", NULL, NULL);
	long long pfm = detail_sum(docs, name, "page_fault", "0x10000", "write"), stopped_at_io = 0;
	bool svm = access("/sys/module/kvm_amd", F_OK) == 0;
	json_t *vcpu;
	size_t i;

	json_array_foreach(jget(vm, "vcpus"), i, vcpu) {
		json_t *last = jget(vcpu, "last_exit");

		rd += jint(jget(vcpu, "ops"), "rdmsr");
		wr += jint(jget(vcpu, "ops"), "wrmsr");
		stopped_at_io += json_is_string(last) && !strcmp(json_string_value(last), "IO");
	}
	j = svm ? jint0(ex, "npf") : -1;
	fprintf(stderr,
		"kvmlab:   vcpustat -j %s exit details: pio 0x10 read %lld (all ports %lld) = io_exits %lld - %lld vCPUs "
		"stopped at one; msr EFER "
		"read %lld = rdmsr %lld, write %lld = wrmsr %lld (all %lld); mmio 0x10000 write %lld (all %lld) = "
		"mmio_exits %lld; page faults %lld = npf exits %lld, page 0x10000 write %lld\n",
		n, port, pio, t->io, stopped_at_io, efer_r, rd, efer_w, wr, msr, mw, mmio, t->u_mmio, pf, j, pfm);
	/*
	 * KVM traces a port read (kvm_pio, in) when KVM_RUN completes it with the
	 * VMM's value: a vCPU whose last return from KVM_RUN was that read's
	 * (microvm's last_exit "IO") has one io exit without a traced read.
	 */
	cr_assert_eq(port, t->io - stopped_at_io, "%s: pio 0x10 reads = KVM's io_exits, less the vCPUs stopped at one",
		     n);
	cr_assert_eq(pio, port, "%s: no other port", n);
	cr_assert_eq(efer_r, rd, "%s: EFER reads = the guest's rdmsr", n);
	cr_assert_eq(efer_w, wr, "%s: EFER writes = the guest's wrmsr", n);
	cr_assert_eq(msr, efer_r + efer_w, "%s: no other MSR", n);
	cr_assert_eq(mw, t->u_mmio, "%s: mmio 0x10000 writes = KVM's mmio_exits", n);
	cr_assert_eq(mmio, mw, "%s: no other MMIO", n);
	{
		/* microvm's guest runs in real mode: no exit leaves a 64-bit kernel (guest RIP < 0x10000) */
		json_t *doc, *e;
		size_t k, r;
		long long seen = 0;

		json_array_foreach(docs, k, doc) {
			json_t *lvm = find_by(jget(doc, "vms"), "vm", name);

			json_array_foreach(lvm ? jget(lvm, "exits") : NULL, r, e) {
				cr_assert(json_is_integer(jget(e, "guest_kernel")), "%s: exits say their guest mode", n);
				cr_assert_eq(jint(e, "guest_kernel"), 0, "%s %s: no exit from guest kernel mode", n,
					     json_string_value(jget(e, "reason")));
				seen++;
			}
		}
		cr_assert_gt(seen, 0);
	}
	if (svm) {
		long long touches = t->mmio_touch - t->u_mmio;

		cr_assert_eq(pf, j, "%s: the faulting pages add up to the npf exits", n);
		/*
		 * Each MMIO write is one fault on its page, each touch one on its
		 * page; a fault KVM retries (RET_PF_RETRY: an invalidation raced it,
		 * such as microvm's MADV_DONTNEED of another vCPU's touched pages;
		 * on 5.10 any of the VM's memory, its check is not by range) traces
		 * kvm_page_fault again: 1,754 faults for 1,753 writes once on 6.12,
		 * 1,134 for 1,061 on 5.10. The faults (= the npf exits) are the
		 * writes, the touches and those retries.
		 */
		cr_assert_geq(pfm, t->u_mmio, "%s: page 0x10000's write faults %lld >= the MMIO writes %lld", n, pfm,
			      t->u_mmio);
		cr_assert_geq(pf - pfm, touches, "%s: the faults on other pages %lld >= the touches %lld", n, pf - pfm,
			      touches);
	}
}

/*
 * The live view (`vcpustat -j`, one document per second) and the exporter
 * (`vcpustat export --every 1 -f json`), both attached before microvm starts
 * and stopped after it ended -- the windows' ends taken with no vCPU running
 * -- against KVM's counters: per vCPU, the documents' kvm_exits added up =
 * KVM's exits and their userspace_exits = microvm's returns from KVM_RUN;
 * per VM (the live view's and the exporter's exit tables are per VM), the
 * exits by reason added up over the documents = the since-start count_total
 * = the exporter's histogram counts (the sums of their buckets) = KVM's
 * io/halt/irq counters summed over the VM's vCPUs = the guest's cpuid and
 * msr ops, and all reasons together = KVM's exits: every exit is in the
 * latency histograms once. Nothing lost.
 */
Test(kvmlab, live_json_and_export_equal_kvm_counters_per_vcpu)
{
	const char *live, *exp, *mjson;
	char bin[512], microvm[512], args[512];
	json_t *report, *docs, *doc, *e, *vm;
	unsigned long long done;
	int live_slot, exp_slot;
	size_t i, j, k;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	lab_mkdir();
	live = in_dir("live.json");
	exp = in_dir("export.json");
	mjson = in_dir("microvm.json");
	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	snprintf(microvm, sizeof(microvm), "%s/bin/microvm", build_dir());
	{
		char *argl[] = { bin, "-j", "-d", "1", NULL };
		char *arge[] = { bin, "export", "--every", "1", "-f", "json", "-o", (char *)exp, NULL };

		live_slot = start_tool(live, argl);
		exp_slot = start_tool(NULL, arge);
	}
	wait_live_doc(live_slot, live, 0);
	wait_export_writes(exp_slot, exp, 1);

	snprintf(args, sizeof(args),
		 "--vms 2 --vcpus 2 --mix all --busy-us 2000 --idle-us 1000 --duration 2 -name guest=lj --json '%s'",
		 mjson);
	sh("'%s' %s > /dev/null", microvm, args);
	done = mono_ns(); /* every vCPU thread of microvm has exited */
	wait_live_doc(live_slot, live, done);
	wait_export_writes(exp_slot, exp, 2); /* the second write's sample was read after the first's rename */
	stop_tool(live_slot, "vcpustat -j");
	stop_tool(exp_slot, "vcpustat export --every");

	report = load(mjson);
	docs = live_docs(live);
	cr_assert_gt(json_array_size(docs), 1);
	doc = json_array_get(docs, json_array_size(docs) - 1);
	{
		const char *key;

		json_object_foreach(jget(doc, "lost"), key, e)
			cr_assert_eq(json_integer_value(e), 0, "vcpustat -j: lost %s", key);
	}
	fprintf(stderr, "kvmlab: microvm %s; vcpustat -j (%zu documents) and export --every 1 -f json vs KVM\n", args,
		json_array_size(docs));
	json_array_foreach(jget(report, "vms"), i, vm) {
		const char *name = json_string_value(jget(vm, "name"));
		json_t *ex = json_object(), *uex = json_object(), *total = json_object(), *xdoc, *xvm = NULL, *vcpu, *kvm;
		long long vm_exits = 0, xvm_exits = 0;
		struct vm_truth t;

		vm_truth(vm, &t);
		/* the live view: each document is the interval since the previous one */
		json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
			long long exits = 0, uexits = 0, idx = jint(vcpu, "index");

			json_array_foreach(docs, k, doc) {
				json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name")), *lv;

				lv = lvm ? find_by(jget(lvm, "vcpus"), "vcpu", jget(vcpu, "index")) : NULL;
				if (!lv)
					continue;
				exits += jint(lv, "kvm_exits");
				uexits += jint(lv, "userspace_exits");
			}
			kvm = vcpu_kvm_stats(vcpu);
			fprintf(stderr, "kvmlab:   vcpustat -j %s vCPU %lld: kvm_exits %lld = KVM %lld; userspace_exits %lld = "
					"KVM_RUN returns %lld\n", name, idx, exits, kvm ? jint(kvm, "exits") : -1, uexits,
				jint(vcpu, "kvm_runs"));
			if (kvm)
				cr_assert_eq(exits, jint(kvm, "exits"), "vcpustat -j %s vCPU %lld: kvm_exits = KVM's exits",
					     name, idx);
			vm_exits += exits;
			cr_assert_eq(uexits, jint(vcpu, "kvm_runs"), "vcpustat -j %s vCPU %lld: userspace_exits = microvm's KVM_RUN returns",
				     name, idx);
		}
		json_array_foreach(docs, k, doc) {
			json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name"));
			size_t r;

			if (!lvm)
				continue;
			add_table(ex, jget(lvm, "exits"));
			add_table(uex, jget(lvm, "userspace_exits"));
			json_array_foreach(jget(lvm, "exits"), r, e) /* since start: the last document's wins */
				json_object_set_new(total, json_string_value(jget(e, "reason")),
						    json_integer(jint(e, "count_total")));
		}
		cr_assert_eq(vm_exits, t.exits, "vcpustat -j %s: its vCPUs' kvm_exits = KVM's exits", name);
		check_vm_tables("vcpustat -j", name, ex, uex, &t);
		cr_assert(json_equal(ex, total), "vcpustat -j %s: the intervals' counts add up to count_total", name);
		check_vm_details(docs, vm, ex, &t);

		/* the exporter: counters since the attach, kept after the VM exited */
		xdoc = load(exp);
		cr_assert_str_eq(json_string_value(jget(xdoc, "source")), "live");
		xvm = find_by(jget(xdoc, "vms"), "vm", jget(vm, "name"));
		cr_assert_not_null(xvm, "the exporter still publishes VM %s", name);
		json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
			json_t *xv = find_by(jget(xvm, "vcpus"), "vcpu", jget(vcpu, "index"));

			cr_assert_not_null(xv, "export: %s vCPU %zu", name, j);
			kvm = vcpu_kvm_stats(vcpu);
			if (kvm)
				cr_assert_eq(jint(xv, "exit_count"), jint(kvm, "exits"),
					     "export %s vCPU %zu: exit_count = KVM's exits", name, j);
			xvm_exits += jint(xv, "exit_count");
			cr_assert_eq(jint(xv, "userspace_exit_count"), jint(vcpu, "kvm_runs"),
				     "export %s vCPU %zu: userspace_exit_count = microvm's KVM_RUN returns", name, j);
		}
		cr_assert_eq(xvm_exits, t.exits, "export %s: its vCPUs' exit_count = KVM's exits", name);
		{
			json_t *xex = json_object(), *xuex = json_object();
			const char *tables[] = { "exits", "userspace_exits" };

			for (int tb = 0; tb < 2; tb++)
				json_array_foreach(jget(xvm, tables[tb]), k, e) {
					json_t *b = jget(e, "buckets"), *inf = json_array_get(b, json_array_size(b) - 1);

					/* the exporter's count is the sum of the kernel's buckets */
					cr_assert_eq(jint(inf, "count"), jint(e, "count"), "export %s %s: +Inf = count", name,
						     json_string_value(jget(e, "reason")));
				}
			add_table(xex, jget(xvm, "exits"));
			add_table(xuex, jget(xvm, "userspace_exits"));
			check_vm_tables("export", name, xex, xuex, &t);
			{
				/* the exporter's series = the live view's windows added up, row by row */
				static const char *const rows[][3] = {
					{ "pio", "0x10", "read" },	  { "pio", NULL, NULL },
					{ "msr", "0xc0000080", "read" }, { "msr", "0xc0000080", "write" },
					{ "msr", NULL, NULL },		  { "mmio", "0x10000", "write" },
					{ "mmio", NULL, NULL },		  { "page_fault", NULL, NULL },
				};

				for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
					long long x = export_detail(xvm, rows[r][0], rows[r][1], rows[r][2]);
					long long l = detail_sum(docs, jget(vm, "name"), rows[r][0], rows[r][1], rows[r][2]);

					cr_assert_eq(x, l, "export %s: exit details %s %s %s: %lld, vcpustat -j %lld", name,
						     rows[r][0], rows[r][1] ? rows[r][1] : "(all)", rows[r][2] ? rows[r][2] : "",
						     x, l);
				}
				fprintf(stderr, "kvmlab:   export %s: exit details = vcpustat -j's, row by row (%zu rows)\n",
					name, json_array_size(jget(xvm, "exit_details")));
			}
			cr_assert(json_equal(xex, total), "export %s = vcpustat -j's count_total, reason by reason", name);
			json_decref(xex);
			json_decref(xuex);
		}
		json_decref(xdoc);
		json_decref(ex);
		json_decref(uex);
		json_decref(total);
	}
	json_decref(docs);
	json_decref(report);
}

/* ---- halts in KVM ---- */

/*
 * `vcpustat -j -d 1` around one run of microvm with `opts` (and --json):
 * microvm's report and vcpustat's documents, the last read after microvm
 * ended; args: the microvm command line, for the test's log.
 */
/* cgroup: start microvm in that cgroup (its directory); live_cgroup: vcpustat -j --cgroup live_cgroup. */
static void live_around_microvm_with(const char *flag, const char *opts, const char *cgroup, const char *live_cgroup,
				     char *args, size_t len, json_t **report, json_t **docs)
{
	const char *live, *mjson;
	char bin[512];
	int slot;

	lab_mkdir();
	live = in_dir("live.json");
	mjson = in_dir("microvm.json");
	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	{
		char *argl[8] = { bin, "-j", "-d", "1" };
		int n = 4;

		if (flag)
			argl[n++] = (char *)flag;
		if (live_cgroup) {
			argl[n++] = "--cgroup";
			argl[n++] = (char *)live_cgroup;
		}
		argl[n] = NULL;
		slot = start_tool(live, argl);
	}
	wait_live_doc(slot, live, 0);
	snprintf(args, len, "%s --json '%s'", opts, mjson);
	if (cgroup) /* the VMM in that cgroup from its start */
		sh("echo $$ > '%s/cgroup.procs' && exec '%s/bin/microvm' %s > /dev/null", cgroup, build_dir(), args);
	else
		sh("'%s/bin/microvm' %s > /dev/null", build_dir(), args);
	wait_live_doc(slot, live, mono_ns());
	stop_tool(slot, "vcpustat -j");
	*report = load(mjson);
	*docs = live_docs(live);
}

static void live_around_microvm(const char *opts, const char *cgroup, const char *live_cgroup, char *args, size_t len,
				json_t **report, json_t **docs)
{
	live_around_microvm_with(NULL, opts, cgroup, live_cgroup, args, len, report, docs);
}

/*
 * Guest address spaces from the host alone (issue 13 item 7): microvm
 * --address-spaces runs its chunks of loop work in two page directories in
 * turn, CR3 0x4000 (A) and 0x5000 (B), A's with 3x the iterations of B's.
 * vcpustat -j --address-spaces reads the guest's CR3 at each exit from the
 * VMCB (kvm_amd, nested paging): the VM's guest time is in those two rows
 * alone, split as the iterations are (within 5 points), and each has at
 * least an exit per chunk run in it (the exit that ends the chunk). `vcpustat
 * record --address-spaces` beside it: the recording's report has the same
 * two address spaces, with the same guest time within 2 % (the live windows
 * and the file's end cut the VM's life differently).
 */
Test(kvmlab, guest_address_spaces_are_the_two_page_tables_microvm_switches)
{
	char args[1024], out[512], cap[512], imp[512];
	json_t *report, *docs, *doc, *name, *mv, *rep, *rvm, *irep, *ivm;
	long long ns[2] = { 0 }, exits[2] = { 0 }, other_ns = 0, chunks[2], iters[2], rns[2] = { 0 };
	size_t i, j;
	double share, want;
	const char *sht;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	SKIP_UNLESS(kvm_btf_unavailable("--address-spaces (tp_btf on kvm_exit, struct kvm_vcpu)"));
	lab_mkdir();
	sht = in_dir("as.sht");
	snprintf(cap, sizeof(cap), "%s", in_dir("as.vcap"));
	start_recorder_args(sht, "--address-spaces", "--capture", cap);
	live_around_microvm_with("--address-spaces",
				 "--vcpus 1 --idle-us 0 --chunk-iters 600000 --address-spaces --duration 4 -name guest=asp",
				 NULL, NULL, args, sizeof(args), &report, &docs);
	mv = json_array_get(jget(json_array_get(jget(report, "vms"), 0), "vcpus"), 0);
	for (int k = 0; k < 2; k++) {
		json_t *as = json_array_get(jget(mv, "address_spaces"), (size_t)k);

		chunks[k] = jint(as, "chunks");
		iters[k] = jint(as, "iters");
	}
	name = json_string("asp");
	json_array_foreach(docs, i, doc) {
		json_t *vm = find_by(jget(doc, "vms"), "vm", name), *row;

		json_array_foreach(vm ? json_object_get(vm, "address_spaces") : NULL, j, row) {
			const char *cr3 = json_string_value(jget(row, "cr3"));
			int k = !strcmp(cr3, "0x4000") ? 0 : !strcmp(cr3, "0x5000") ? 1 : -1;

			if (k < 0) {
				cr_log_info("CR3 %s: %lld ns, %lld exits", cr3, jint(row, "guest_ns"), jint(row, "exits"));
				other_ns += jint(row, "guest_ns");
				continue;
			}
			ns[k] += jint(row, "guest_ns");
			exits[k] += jint(row, "exits");
		}
	}
	cr_assert_gt(ns[0] + ns[1], 0, "vcpustat -j --address-spaces saw CR3 0x4000 and 0x5000 (%s)", args);
	share = (double)ns[0] / (double)(ns[0] + ns[1]);
	want = (double)iters[0] / (double)(iters[0] + iters[1]);
	fprintf(stderr,
		"kvmlab:   CR3 0x4000: %.3f s guest, %lld exits (microvm: %lld chunks, %lld iterations); "
		"CR3 0x5000: %.3f s, %lld exits (%lld chunks, %lld iterations); other %lld ns; "
		"0x4000's share %.1f %% against %.1f %% of the iterations\n",
		(double)ns[0] / 1e9, exits[0], chunks[0], iters[0], (double)ns[1] / 1e9, exits[1], chunks[1], iters[1],
		other_ns, 100 * share, 100 * want);
	cr_assert_lt(other_ns, (ns[0] + ns[1]) / 100, "the guest ran in no other address space (%lld ns)", other_ns);
	cr_assert_gt(chunks[0], 50, "microvm ran chunks in A");
	cr_assert_geq(exits[0], chunks[0] - 1, "an exit per chunk in A at least");
	cr_assert_geq(exits[1], chunks[1] - 1, "an exit per chunk in B at least");
	cr_assert_lt(fabs(share - want), 0.05, "A's share of the guest time %.1f %% = its share of the iterations %.1f %%",
		     100 * share, 100 * want);
	stop_recorder();
	snprintf(out, sizeof(out), "%s", in_dir("as-report.json"));
	sh("'%s/bin/vcpustat' report -j '%s' > '%s'", build_dir(), sht, out);
	rep = load(out);
	rvm = find_by(jget(rep, "vms"), "vm", name);
	cr_assert_not_null(rvm, "the recording has VM asp");
	json_array_foreach(json_object_get(rvm, "address_spaces"), j, doc) {
		const char *cr3 = json_string_value(jget(doc, "cr3"));

		if (!strcmp(cr3, "0x4000") || !strcmp(cr3, "0x5000"))
			rns[cr3[2] == '5'] += jint(doc, "guest_ns");
	}
	fprintf(stderr, "kvmlab:   recorded: CR3 0x4000 %.3f s, 0x5000 %.3f s of guest time\n", (double)rns[0] / 1e9,
		(double)rns[1] / 1e9);
	for (int k = 0; k < 2; k++)
		cr_assert_lt(fabs((double)(rns[k] - ns[k])), 0.02 * (double)ns[k],
			     "CR3 %s: recorded %lld ns = live %lld ns within 2 %%", k ? "0x5000" : "0x4000", rns[k], ns[k]);
	/* the recording's capture, imported as a host trace: the same table, to the nanosecond */
	snprintf(imp, sizeof(imp), "%s", in_dir("as-imported.sht"));
	snprintf(out, sizeof(out), "%s", in_dir("as-imported.json"));
	sh("'%s/bin/vcpustat' import --host '%s' -o '%s' > /dev/null && '%s/bin/vcpustat' report -j '%s' > '%s'",
	   build_dir(), cap, imp, build_dir(), imp, out);
	irep = load(out);
	ivm = find_by(jget(irep, "vms"), "vm", name);
	cr_assert_not_null(ivm, "the imported capture has VM asp, named by the capture");
	cr_assert_eq(json_array_size(json_object_get(ivm, "address_spaces")),
		     json_array_size(json_object_get(rvm, "address_spaces")));
	json_array_foreach(json_object_get(rvm, "address_spaces"), j, doc) {
		json_t *row = json_array_get(json_object_get(ivm, "address_spaces"), j);

		cr_assert_str_eq(json_string_value(jget(row, "cr3")), json_string_value(jget(doc, "cr3")));
		cr_assert_eq(jint(row, "guest_ns"), jint(doc, "guest_ns"), "CR3 %s: imported = recorded",
			     json_string_value(jget(doc, "cr3")));
		cr_assert_eq(jint(row, "exits"), jint(doc, "exits"));
	}
	fprintf(stderr, "kvmlab:   its capture imported (import --host %s): the same %zu address spaces, to the ns\n",
		cap, json_array_size(json_object_get(rvm, "address_spaces")));
	json_decref(irep);
	json_decref(rep);
	json_decref(name);
	json_decref(report);
	json_decref(docs);
}

/*
 * Nested virtualization (issue 13 item 4): microvm --nested makes its guest
 * a hypervisor (AMD SVM, nested by the lab's kvm_amd) that runs each chunk's
 * loop in a guest of its own, which ends it with VMMCALL. To the lab's KVM,
 * microvm's guest is L1 and that guest is L2. Against KVM's own counter
 * nested_run (VMRUNs it emulated, one per chunk):
 * - vcpustat -j's exits from L2 reflected to L1 are VMMCALLs ("hypercall"),
 *   one per nested run (the last may still be running when microvm stops),
 *   and no other kind is reflected (L1 intercepts nothing else its guest
 *   does);
 * - L1's own exits on VMRUN are as many, and none of them is an exit from L2;
 * - the vCPU's guest time is split between both levels (the loop runs in
 *   L2, L1 runs a few instructions a chunk): neither is all of it;
 * - a recording made at the same time gives the same counts (report -j).
 */
Test(kvmlab, nested_guests_split_guest_time_and_their_exits_match_kvm)
{
	char args[512], out[512];
	json_t *report, *docs, *doc, *vcpu, *name, *rep, *rvm;
	long long reflected = 0, reflected_other = 0, handled = 0, vmrun_l2 = 0, vmruns = 0, l2 = 0, guest = 0,
		  rec_reflected = 0, nested_run;
	const char *sht;
	size_t i, j;
	FILE *f;
	int on = 0;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	SKIP_UNLESS(kvm_tracepoint_unavailable("kvm_nested_vmenter"));
	SKIP_UNLESS(kvm_vcpu_stats_unavailable());
	f = fopen("/sys/module/kvm_amd/parameters/nested", "r");
	if (f) {
		char c = 0;

		on = fread(&c, 1, 1, f) == 1 && (c == '1' || c == 'Y');
		fclose(f);
	}
	if (!on)
		cr_skip_test("kvm_amd's nested is off here: KVM offers its guests no SVM");
	lab_mkdir();
	sht = in_dir("nested.sht");
	start_recorder(sht);
	live_around_microvm("--nested --vcpus 1 --idle-us 0 --chunk-iters 100000 --duration 3 -name guest=nest", NULL,
			    NULL, args, sizeof(args), &report, &docs);
	stop_recorder();
	vcpu = json_array_get(jget(json_array_get(jget(report, "vms"), 0), "vcpus"), 0);
	nested_run = jint(jget(vcpu, "kvm_stats"), "nested_run");
	name = json_string("nest");
	json_array_foreach(docs, i, doc) {
		json_t *vm = find_by(jget(doc, "vms"), "vm", name), *row;

		if (!vm)
			continue;
		json_array_foreach(json_object_get(vm, "exit_details"), j, row) {
			const char *t = json_string_value(jget(row, "target"));

			if (strcmp(json_string_value(jget(row, "kind")), "nested"))
				continue;
			if (!strcmp(t, "vmrun"))
				vmrun_l2 += jint(row, "count");
			if (!strcmp(json_string_value(jget(row, "access")), "l1")) {
				if (!strcmp(t, "hypercall"))
					reflected += jint(row, "count");
				else
					reflected_other += jint(row, "count");
			} else {
				handled += jint(row, "count");
			}
		}
		json_array_foreach(json_object_get(vm, "exits"), j, row)
			if (!strcmp(json_string_value(jget(row, "reason")), "vmrun"))
				vmruns += jint(row, "count");
		l2 += jint(json_object_get(vm, "nested"), "l2_guest_ns");
		guest += jint(jget(vm, "ns"), "guest");
	}
	fprintf(stderr,
		"kvmlab:   microvm %s: KVM's nested_run %lld (microvm's chunks %lld); vcpustat -j: %lld exits from L2 "
		"reflected to L1 (VMMCALL), %lld other reflected, %lld handled here; L1's VMRUN exits %lld; L2 guest "
		"%.3f s of %.3f s (%.1f %%)\n",
		args, nested_run, jint(vcpu, "chunks"), reflected, reflected_other, handled, vmruns, (double)l2 / 1e9,
		(double)guest / 1e9, guest ? 100.0 * (double)l2 / (double)guest : 0.0);
	cr_assert_gt(nested_run, 100, "KVM ran the nested guest (nested_run %lld)", nested_run);
	cr_assert(reflected <= nested_run && reflected >= nested_run - 2,
		  "one VMMCALL reflected to L1 per nested run: %lld against KVM's %lld", reflected, nested_run);
	cr_assert_eq(reflected_other, 0, "L1 intercepts nothing else");
	cr_assert(vmruns <= nested_run + 1 && vmruns >= nested_run - 1, "L1's VMRUN exits %lld = nested_run %lld",
		  vmruns, nested_run);
	cr_assert_eq(vmrun_l2, 0, "a VMRUN is L1's exit, not L2's");
	cr_assert(l2 > guest / 5 && l2 < guest - guest / 50,
		  "the guest time is split between L1 and L2 (L2 %lld ns of %lld)", l2, guest);

	snprintf(out, sizeof(out), "%s", in_dir("nested-report.json"));
	sh("'%s/bin/vcpustat' report -j '%s' > '%s'", build_dir(), sht, out);
	rep = load(out);
	rvm = find_by(jget(rep, "vms"), "vm", name);
	cr_assert_not_null(rvm, "the recording has VM nest");
	rec_reflected = jint(json_object_get(rvm, "nested"), "exits_reflected_to_l1");
	fprintf(stderr, "kvmlab:   recorded: %lld exits reflected to L1, L2 guest %.3f s\n", rec_reflected,
		(double)jint(json_object_get(rvm, "nested"), "l2_guest_ns") / 1e9);
	cr_assert(rec_reflected <= nested_run && rec_reflected >= nested_run - 2,
		  "the recording: %lld reflected against KVM's %lld", rec_reflected, nested_run);
	json_decref(rep);
	json_decref(name);
	json_decref(report);
	json_decref(docs);
}

/*
 * microvm --irqchip: HLT stays in KVM, which polls before it sleeps
 * (kvm.halt_poll_ns, 200 us by default; each vCPU's own budget grows from
 * 10 us while its halts, 60 us of LAPIC timer, are short enough), and the
 * guest's own timer wakes it. Per vCPU, against KVM's counters:
 * - every halt KVM counted (halt_exits) is an `hlt` exit in vcpustat -j, and
 *   the guest took one timer interrupt per halt;
 * - vcpustat's POLL time is there when KVM polled, and is no more than KVM's
 *   halt_poll_success_ns + halt_poll_fail_ns: POLL ends where KVM's loop
 *   gives up (begin + halt_poll_ns) and leaves out the time the vCPU was
 *   preempted while polling, both of which KVM's wall-clock sums count
 *   (plus 15 us per poll: vcpustat's POLL runs from its fentry program's
 *   clock read at kvm_vcpu_halt's entry to its kvm_vcpu_wakeup program's,
 *   KVM's from its first ktime_get() to its loop's last, and under
 *   emulation the code between them, BPF programs included, is slow: in
 *   two CI runs 1.06 ms more than KVM's over 151 polls, 7 us a poll, where
 *   5 us had been allowed).
 */
Test(kvmlab, halt_polling_is_split_out_of_host_time)
{
	char args[512];
	json_t *report, *docs, *doc, *vm, *vcpu, *p;
	unsigned long long kvm_polls = 0;
	long long halt_poll_ns = 0;
	bool fentry = false;
	size_t i, j;
	FILE *f;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	SKIP_UNLESS(kvm_btf_unavailable("halt polling (fentry on kvm_vcpu_halt)"));
	SKIP_UNLESS(kvm_vcpu_stats_unavailable());
	f = fopen("/sys/module/kvm/parameters/halt_poll_ns", "r");
	if (!f || fscanf(f, "%lld", &halt_poll_ns) != 1 || halt_poll_ns <= 0) {
		if (f)
			fclose(f);
		cr_skip_test("kvm.halt_poll_ns is 0 (or unreadable) here: KVM does not poll");
	}
	fclose(f);
	live_around_microvm("--irqchip --vcpus 2 --busy-us 500 --idle-us 60 --duration 2 -name guest=hp", NULL, NULL, args,
			    sizeof(args), &report, &docs);
	doc = json_array_get(docs, json_array_size(docs) - 1);
	json_array_foreach(jget(doc, "programs"), i, p)
		if (!strcmp(json_string_value(jget(p, "name")), "on_kvm_vcpu_halt"))
			fentry = !strcmp(json_string_value(jget(p, "status")), "attached");
	cr_assert(fentry, "a kernel with the kvm module's BTF loads the fentry program on kvm_vcpu_halt");
	fprintf(stderr, "kvmlab: microvm %s, kvm.halt_poll_ns %lld; vcpustat -j vs KVM\n", args, halt_poll_ns);
	vm = json_array_get(jget(report, "vms"), 0);
	json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
		json_t *ks = jget(vcpu, "kvm_stats");
		long long idx = jint(vcpu, "index"), poll = 0, host = 0, hlt = 0;
		long long kvm_ns = jint(ks, "halt_poll_success_ns") + jint(ks, "halt_poll_fail_ns");
		long long attempted = jint(ks, "halt_attempted_poll");
		size_t k;

		json_array_foreach(docs, k, doc) {
			json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name")), *lv;

			lv = lvm ? find_by(jget(lvm, "vcpus"), "vcpu", jget(vcpu, "index")) : NULL;
			if (!lv)
				continue;
			poll += jint(jget(lv, "ns"), "poll");
			host += jint(jget(lv, "ns"), "host");
		}
		json_array_foreach(docs, k, doc) {
			json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name"));

			if (lvm && idx == 0) /* the VM's table, once */
				hlt += table_count(lvm, "exits", "hlt");
		}
		fprintf(stderr,
			"kvmlab:   vCPU %lld: halts %lld (KVM) = timer interrupts %lld (guest); polls %lld (%lld ok), "
			"KVM's poll time %lld ns, vcpustat's POLL %lld ns (host %lld ns)\n",
			idx, jint(ks, "halt_exits"), jint(vcpu, "timer_irqs"), attempted, jint(ks, "halt_successful_poll"),
			kvm_ns, poll, host);
		cr_assert_gt(jint(ks, "halt_exits"), 0, "vCPU %lld halted in KVM", idx);
		cr_assert_leq(llabs(jint(ks, "halt_exits") - jint(vcpu, "timer_irqs")), 1,
			      "vCPU %lld: one timer interrupt per halt (the last may be cut by the stop)", idx);
		if (idx == 0) {
			long long halts = 0;
			json_t *v2;
			size_t m;

			json_array_foreach(jget(vm, "vcpus"), m, v2)
				halts += jint(jget(v2, "kvm_stats"), "halt_exits");
			cr_assert_eq(hlt, halts, "vcpustat -j's hlt exits = KVM's halt_exits");
		}
		kvm_polls += (unsigned long long)attempted;
		if (attempted)
			cr_assert_gt(poll, 0, "vCPU %lld: KVM polled %lld times, vcpustat shows POLL time", idx, attempted);
		cr_assert_leq(poll, kvm_ns + attempted * 15000,
			      "vCPU %lld: POLL %lld ns, KVM's poll time %lld ns (+ 15 us for each of %lld polls)", idx, poll,
			      kvm_ns, attempted);
	}
	cr_assert_gt(kvm_polls, 0, "KVM polled: 60 us halts are within halt_poll_ns %lld", halt_poll_ns);
	json_decref(docs);
	json_decref(report);
}

/*
 * microvm --irqchip --ipi, 3 vCPUs: vCPU 0's halts end by its own LAPIC
 * timer, after each of them it sends vCPUs 1 and 2 an IPI, which ends
 * theirs. Per vCPU, vcpustat's wake-ups of the sleeping vCPU are at least
 * 97 % of KVM's halt_wakeup, which also counts kicks of a vCPU that was
 * about to sleep and never did, and at most 5 % + 3 more (vcpustat also
 * counts wake-ups from the thread's host-side sleeps, and the stop's); per
 * VM, the wake-ups it explains as "timer" are vCPU 0's (at least 95 % of
 * KVM's count, no more than vcpustat's), as "ipi" those of vCPUs 1 and 2 (at
 * least 90 %, no more), none as "device" (microvm has none), and at most
 * 5 % as "other". By the vector KVM injected at the woken vCPU's entry:
 * 0x40 (the timer's) as many as "timer" within 5 % + 2, 0x41 (the IPI's)
 * as many as "ipi" within 5 % + 2, no other vector, as many in all as by
 * reason. A recording made meanwhile gives, in `report`, as many wake-ups
 * as the live view, their reasons and vectors within 5 % + 2 of its.
 */

/* The wake-ups of the live docs' VM named like vm, by vector (0..255; 0: none seen). */
static long long live_wake_vectors(json_t *docs, json_t *vm, long long by_vec[256])
{
	long long total = 0;
	json_t *doc, *r;
	size_t i, j;

	memset(by_vec, 0, 256 * sizeof(*by_vec));
	json_array_foreach(docs, i, doc) {
		json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name"));

		json_array_foreach(lvm ? jget(lvm, "wake_vectors") : NULL, j, r) {
			long long v = jint(r, "vector");

			cr_assert(v >= 0 && v < 256, "a vector: %lld", v);
			by_vec[v] += jint(r, "count");
			total += jint(r, "count");
		}
	}
	return total;
}

Test(kvmlab, wake_reasons_are_the_timer_and_the_ipis_microvm_sends)
{
	char args[512], out[256];
	json_t *report, *docs, *doc, *vm, *vcpu, *r, *rep, *rvm;
	long long by[VCPU_NR_WAKE_REASONS] = { 0 }, woke[3] = { 0 }, sleeps[3] = { 0 }, lives[3] = { 0 }, total = 0;
	long long waits[3] = { 0 }, rec[VCPU_NR_WAKE_REASONS] = { 0 }, by_vec[256], rec_vec[256] = { 0 }, vtotal;
	const char *sht;
	unsigned int seen = 0;
	size_t i, j, k;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	SKIP_UNLESS(kvm_vcpu_stats_unavailable());
	lab_mkdir();
	sht = in_dir("wr.sht");
	start_recorder(sht);
	live_around_microvm("--irqchip --ipi --vcpus 3 --busy-us 500 --idle-us 300 --duration 2 -name guest=wr", NULL, NULL, args,
			    sizeof(args), &report, &docs);
	vm = json_array_get(jget(report, "vms"), 0);
	json_array_foreach(docs, i, doc) {
		json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name"));

		if (!lvm)
			continue;
		json_array_foreach(jget(lvm, "wake_reasons"), j, r) {
			int reason = wake_reason_from_name(json_string_value(jget(r, "reason")));

			cr_assert_geq(reason, 0, "a wake reason vcpustat names: %s", json_string_value(jget(r, "reason")));
			by[reason] += jint(r, "count");
			total += jint(r, "count");
		}
		json_array_foreach(jget(lvm, "vcpus"), j, vcpu) {
			long long idx = jint(vcpu, "vcpu");

			cr_assert(idx >= 0 && idx < 3);
			woke[idx] += jint(vcpu, "wakeups");
		}
	}
	fprintf(stderr, "kvmlab: microvm %s; vcpustat -j vs the kernel\n", args);
	json_array_foreach(jget(vm, "vcpus"), k, vcpu) {
		long long idx = jint(vcpu, "index"), kw = jint(jget(vcpu, "kvm_stats"), "halt_wakeup");
		long long slept = jint(vcpu, "run_sleeps"), life = jint(jget(vcpu, "schedstat"), "voluntary_switches");

		cr_assert(idx >= 0 && idx < 3);
		cr_assert_eq(seen & (1u << idx), 0, "microvm reports vCPU %lld once", idx);
		seen |= 1u << idx;
		sleeps[idx] = slept;
		lives[idx] = life;
		waits[idx] = jint(jget(vcpu, "kvm_hists"), "halt_wait_hist");
		fprintf(stderr,
			"kvmlab:   vCPU %lld: woken %lld times; its thread slept %lld times while it ran, %lld in its "
			"life, "
			"KVM's halts that slept %lld, halt_wakeup %lld; timer interrupts %lld, IPIs %lld (vCPU 0 sent "
			"%lld)\n",
			idx, woke[idx], slept, life, waits[idx], kw, jint(vcpu, "timer_irqs"), jint(vcpu, "ipis"),
			jint(vcpu, "ipis_sent"));
	}
	cr_assert_eq(seen, 7u, "microvm reports vCPUs 0, 1 and 2");
	fprintf(stderr, "kvmlab:   wake reasons: timer %lld, ipi %lld, device %lld, other %lld\n", by[VCPU_WAKE_TIMER],
		by[VCPU_WAKE_IPI], by[VCPU_WAKE_DEVICE], by[VCPU_WAKE_OTHER]);
	for (int idx = 0; idx < 3; idx++) {
		/*
		 * The kernel's count of the thread's sleeps is the ground truth, as
		 * in the device test below (which says why not KVM's halts that
		 * slept, nor its halt_wakeup). Each sleep of the run ends in a
		 * wake-up but a halt's that sleeps again, and the stop's kick ends a
		 * last halt for good: at least run_sleeps less 1 % and 1. vcpustat
		 * also counts the
		 * thread's other sleeps (its start before the first KVM_RUN, its
		 * exit after microvm read its count, which can sleep on the mm's
		 * lock): at most its sleeps over its life, read just before it
		 * exits, plus 5 % + 3. On 6.12 the lab counted none over the life;
		 * on 6.1 up to 7 (219 wake-ups, 212 sleeps), which is not explained
		 * (docs/kvmlab.md, "Known problems").
		 */
		cr_assert_geq(woke[idx], sleeps[idx] - sleeps[idx] / 100 - 1,
			      "vCPU %d: wake-ups %lld, its thread's sleeps in the run %lld less 1 %% and one", idx,
			      woke[idx], sleeps[idx]);
		cr_assert_leq(woke[idx], lives[idx] + lives[idx] / 20 + 3,
			      "vCPU %d: wake-ups %lld, its thread's sleeps in its life %lld + 5 %% + 3", idx, woke[idx], lives[idx]);
		cr_assert_geq(sleeps[idx], 5, "vCPU %d slept and was woken: %lld sleeps", idx, sleeps[idx]);
	}
	cr_assert_geq(by[VCPU_WAKE_TIMER] * 100, sleeps[0] * 95, "timer: %lld of vCPU 0's %lld sleeps",
		      by[VCPU_WAKE_TIMER], sleeps[0]);
	cr_assert_leq(by[VCPU_WAKE_TIMER], woke[0], "only vCPU 0 has a timer");
	cr_assert_geq(by[VCPU_WAKE_IPI] * 100, (sleeps[1] + sleeps[2]) * 90,
		      "ipi: %lld of vCPUs 1 and 2's %lld sleeps", by[VCPU_WAKE_IPI], sleeps[1] + sleeps[2]);
	cr_assert_leq(by[VCPU_WAKE_IPI], woke[1] + woke[2], "only vCPUs 1 and 2 get IPIs");
	cr_assert_eq(by[VCPU_WAKE_DEVICE], 0, "microvm has no devices");
	/* a reason is given at the guest entry a wake-up ends in: a sleep of the run's, or the start's last, once a vCPU */
	cr_assert_leq(total, sleeps[0] + sleeps[1] + sleeps[2] + 3, "wake-ups with a reason %lld, the sleeps in the run %lld",
		      total, sleeps[0] + sleeps[1] + sleeps[2]);
	cr_assert_leq(by[VCPU_WAKE_OTHER] * 100, total * 5, "other: %lld of %lld", by[VCPU_WAKE_OTHER], total);
	vtotal = live_wake_vectors(docs, vm, by_vec);
	fprintf(stderr, "kvmlab:   wake vectors: 0x40 %lld, 0x41 %lld, none %lld, in all %lld\n", by_vec[0x40],
		by_vec[0x41], by_vec[0], vtotal);
	cr_assert_eq(vtotal, total, "by vector %lld, by reason %lld: the same wake-ups", vtotal, total);
	cr_assert_leq(llabs(by_vec[0x40] - by[VCPU_WAKE_TIMER]), total / 20 + 2, "0x40 %lld, timer %lld", by_vec[0x40],
		      by[VCPU_WAKE_TIMER]);
	cr_assert_leq(llabs(by_vec[0x41] - by[VCPU_WAKE_IPI]), total / 20 + 2, "0x41 %lld, ipi %lld", by_vec[0x41],
		      by[VCPU_WAKE_IPI]);
	cr_assert_eq(by_vec[0x40] + by_vec[0x41] + by_vec[0], vtotal, "no vector but the timer's and the IPI's");

	stop_recorder();
	snprintf(out, sizeof(out), "%s", in_dir("wr.json"));
	sh("'%s/bin/vcpustat' report -j '%s' > '%s'", build_dir(), sht, out);
	rep = load(out);
	rvm = find_by(jget(rep, "vms"), "vm", jget(vm, "name"));
	cr_assert_not_null(rvm, "the recording has the VM");
	json_array_foreach(jget(rvm, "wake_reasons"), j, r) {
		int reason = wake_reason_from_name(json_string_value(jget(r, "reason")));

		cr_assert_geq(reason, 0);
		rec[reason] = jint(r, "count");
	}
	fprintf(stderr, "kvmlab:   recorded: timer %lld, ipi %lld, device %lld, other %lld\n", rec[VCPU_WAKE_TIMER],
		rec[VCPU_WAKE_IPI], rec[VCPU_WAKE_DEVICE], rec[VCPU_WAKE_OTHER]);
	/*
	 * The same wake-ups, each once; their reasons may differ by a few: the
	 * recorder is another vcpustat, whose programs stamp each event with
	 * their own clock read, and an IPI's sched_waking close to 1 ms after
	 * its accept (VCPUSTAT_WAKE_CAUSE_NS; under emulation it can be) falls
	 * within the window for one and not the other ("ipi" or "other").
	 */
	{
		long long rtotal = 0;

		for (int w = 0; w < VCPU_NR_WAKE_REASONS; w++) {
			rtotal += rec[w];
			cr_assert_leq(llabs(rec[w] - by[w]), total / 20 + 2,
				      "%s: the recording's report %lld, the live view %lld", wake_reason_name(w), rec[w],
				      by[w]);
		}
		cr_assert_eq(rtotal, total, "wake-ups: the recording's report %lld, the live view %lld", rtotal, total);
	}
	json_array_foreach(jget(rvm, "wake_vectors"), j, r) {
		long long v = jint(r, "vector");

		cr_assert(v >= 0 && v < 256);
		rec_vec[v] = jint(r, "count");
	}
	fprintf(stderr, "kvmlab:   recorded vectors: 0x40 %lld, 0x41 %lld, none %lld\n", rec_vec[0x40], rec_vec[0x41],
		rec_vec[0]);
	for (int v = 0; v < 256; v++)
		cr_assert_leq(llabs(rec_vec[v] - by_vec[v]), total / 20 + 2,
			      "vector 0x%02x: the recording's report %lld, the live view %lld", v, rec_vec[v], by_vec[v]);
	json_decref(rep);
	json_decref(docs);
	json_decref(report);
}

/*
 * microvm --irqchip --msi-us 1000, 2 vCPUs: no vCPU arms its timer; the
 * VMM's I/O thread sends each vCPU an MSI (vector 0x42) every millisecond,
 * and that ends their halts. The kernel's count of the vCPU threads' sleeps
 * is their voluntary context switches (microvm's run_sleeps: from just
 * before each thread's first KVM_RUN to the stop). vcpustat counts a
 * wake-up for each sleep it saw end in a return to the guest: no more than
 * the sleeps, and no fewer than the sleeps less 1 % and one a vCPU. The
 * stop's kick ends a last halt for good; and a halt may sleep more than
 * once (a kick that finds the vCPU still unable to run: kvm_vcpu_block()
 * sleeps again), only its last sleep ending in an entry -- one CI run
 * counted 2,259 sleeps and 2,252 wake-ups. No counter of the kernel's
 * tells those sleeps apart: KVM's halts that slept (the samples of its
 * halt_wait_hist, microvm's kvm_hists) also count a halt that called
 * schedule() once woken already, which did not sleep (481 halts, 479 sleeps
 * seen), so it is printed, not compared. KVM's halt_wakeup is no such
 * count either: it also counts a wake-up that found the vCPU still on its
 * way to sleep (it then never slept; 7 of 65 in one CI run), which is why
 * the ratios are to the sleeps. The wake-ups vcpustat explains as "device"
 * are at least 90 % of the sleeps (and no more than the MSIs the guest took), none as "ipi", at most 5 % as "timer"
 * or "other"; by vector, 0x42 as many as "device" within 5 % + 2, and no
 * vector but 0x42 (or none). How often the vCPUs sleep depends on the
 * emulation's speed (37 to 2,259 sleeps in 2 s were seen in the lab): at
 * least 20, for the ratios to mean something.
 */
Test(kvmlab, a_device_interrupt_wakes_a_vcpu_as_a_device_with_its_vector)
{
	char args[512];
	json_t *report, *docs, *doc, *vm, *vcpu, *r, *io;
	long long by[VCPU_NR_WAKE_REASONS] = { 0 }, by_vec[256], total = 0, kwoke = 0, taken = 0, vtotal, sleeps = 0;
	long long nr_vcpus, waited = 0;
	size_t i, j;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	SKIP_UNLESS(kvm_vcpu_stats_unavailable());
	lab_mkdir();
	live_around_microvm("--irqchip --msi-us 1000 --vcpus 2 --busy-us 200 --duration 2 -name guest=dv", NULL, NULL,
			    args, sizeof(args), &report, &docs);
	vm = json_array_get(jget(report, "vms"), 0);
	io = jget(vm, "io_thread");
	cr_assert_not_null(io, "microvm's report has the device thread");
	json_array_foreach(docs, i, doc) {
		json_t *lvm = find_by(jget(doc, "vms"), "vm", jget(vm, "name"));

		json_array_foreach(lvm ? jget(lvm, "wake_reasons") : NULL, j, r) {
			int reason = wake_reason_from_name(json_string_value(jget(r, "reason")));

			cr_assert_geq(reason, 0);
			by[reason] += jint(r, "count");
			total += jint(r, "count");
		}
	}
	json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
		kwoke += jint(jget(vcpu, "kvm_stats"), "halt_wakeup");
		waited += jint(jget(vcpu, "kvm_hists"), "halt_wait_hist");
		taken += jint(vcpu, "msis");
		sleeps += jint(vcpu, "run_sleeps");
	}
	nr_vcpus = (long long)json_array_size(jget(vm, "vcpus"));
	vtotal = live_wake_vectors(docs, vm, by_vec);
	fprintf(stderr,
		"kvmlab: microvm %s: MSIs sent %lld, taken %lld; the vCPU threads' sleeps %lld, KVM's halts that slept "
		"%lld, halt_wakeup %lld; vcpustat -j: wake-ups %lld: device %lld, timer %lld, ipi %lld, other %lld; "
		"vector 0x42 %lld, none %lld\n",
		args, jint(io, "msis_sent"), taken, sleeps, waited, kwoke, total, by[VCPU_WAKE_DEVICE],
		by[VCPU_WAKE_TIMER], by[VCPU_WAKE_IPI], by[VCPU_WAKE_OTHER], by_vec[0x42], by_vec[0]);
	cr_assert_geq(sleeps, 20, "the vCPUs slept and were woken: %lld sleeps (KVM's halt_wakeup %lld)", sleeps, kwoke);
	cr_assert_leq(taken, jint(io, "msis_sent"), "the guest took no more MSIs than were sent");
	cr_assert_leq(total, sleeps, "wake-ups %lld, the vCPU threads' sleeps %lld", total, sleeps);
	cr_assert_geq(total, sleeps - sleeps / 100 - nr_vcpus,
		      "wake-ups %lld, the vCPU threads' sleeps %lld less 1 %% and one a vCPU", total, sleeps);
	cr_assert_geq(by[VCPU_WAKE_DEVICE] * 100, sleeps * 90, "device: %lld, the vCPU threads' sleeps %lld",
		      by[VCPU_WAKE_DEVICE], sleeps);
	cr_assert_leq(by[VCPU_WAKE_DEVICE], taken + 2, "device: %lld, MSIs the guest took %lld", by[VCPU_WAKE_DEVICE],
		      taken);
	cr_assert_eq(by[VCPU_WAKE_IPI], 0, "no vCPU sends an IPI");
	cr_assert_leq((by[VCPU_WAKE_TIMER] + by[VCPU_WAKE_OTHER]) * 100, total * 5, "timer %lld + other %lld of %lld",
		      by[VCPU_WAKE_TIMER], by[VCPU_WAKE_OTHER], total);
	cr_assert_eq(vtotal, total, "by vector %lld, by reason %lld", vtotal, total);
	cr_assert_leq(llabs(by_vec[0x42] - by[VCPU_WAKE_DEVICE]), total / 20 + 2, "0x42 %lld, device %lld",
		      by_vec[0x42], by[VCPU_WAKE_DEVICE]);
	cr_assert_eq(by_vec[0x42] + by_vec[0], vtotal, "no vector but the device's");
	json_decref(docs);
	json_decref(report);
}

/* ---- the guest/host split ---- */

static pid_t spawn_microvm(const char *args);

/* The lab's cgroup of a libvirt domain "lab-vm" (systemd's layout), made in the v2 tree; removed by the test. */
static char lab_cgroup[512];

static void remove_lab_cgroup(void)
{
	char *slash;

	if (!lab_cgroup[0])
		return;
	rmdir(lab_cgroup);
	slash = strrchr(lab_cgroup, '/');
	if (slash) {
		*slash = '\0';
		rmdir(lab_cgroup); /* machine.slice, if the test made it and nothing else is in it */
	}
	lab_cgroup[0] = '\0';
	lab_cleanup();
}

/*
 * A VMM started in a libvirt domain's cgroup (machine.slice/machine-qemu\x2d7\x2dlab\x2dvm.scope),
 * another VM beside it in the lab's root cgroup: the live view (JSON) and a
 * recording's report both give the first one's cgroup path, the domain it
 * names (libvirt, "lab-vm") and its PID namespace, the same; `--cgroup lab-vm`
 * keeps it alone, live and in the recording.
 */
Test(kvmlab, a_vm_in_a_libvirt_cgroup_is_named_live_and_in_its_recording, .fini = remove_lab_cgroup)
{
	static const char scope[] = "/machine.slice/machine-qemu\\x2d7\\x2dlab\\x2dvm.scope";
	char root[256], args[512], out[256];
	json_t *report, *docs, *doc, *lvm = NULL, *rep, *rvm, *name = json_string("cg"), *other = json_string("other");
	const char *sht;
	pid_t beside;
	size_t i;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	if (!cgroup2_root(NULL, root, sizeof(root)))
		cr_skip_test("no cgroup v2 mount in the lab");
	snprintf(lab_cgroup, sizeof(lab_cgroup), "%s%s", root, scope);
	sh("mkdir -p '%s'", lab_cgroup);
	lab_mkdir();
	sht = in_dir("cg.sht");
	start_recorder(sht);
	beside = spawn_microvm("--vcpus 1 --busy-us 200 --idle-us 10000 --duration 30 -name guest=other");
	live_around_microvm("--vcpus 1 --duration 4 -name guest=cg", lab_cgroup, "lab-vm", args, sizeof(args), &report,
			    &docs);
	kill(beside, SIGKILL);
	waitpid(beside, NULL, 0);
	stop_recorder();
	json_array_foreach(docs, i, doc) {
		json_t *v = find_by(jget(doc, "vms"), "vm", name);

		cr_assert_null(find_by(jget(doc, "vms"), "vm", other), "vcpustat -j --cgroup lab-vm leaves the other VM out");
		if (v)
			lvm = v;
	}
	cr_assert_not_null(lvm, "vcpustat -j saw the VM");
	cr_assert_str_eq(json_string_value(jget(lvm, "cgroup")), scope);
	cr_assert_str_eq(json_string_value(jget(jget(lvm, "container"), "runtime")), "libvirt");
	cr_assert_str_eq(json_string_value(jget(jget(lvm, "container"), "id")), "lab-vm");
	cr_assert_gt(jint(lvm, "pidns"), 0);
	snprintf(out, sizeof(out), "%s", in_dir("report.json"));
	sh("'%s/bin/vcpustat' report -j '%s' > '%s'", build_dir(), sht, out);
	rep = load(out);
	rvm = find_by(jget(rep, "vms"), "vm", name);
	if (!rvm) {
		json_t *v;
		size_t k;

		json_array_foreach(jget(rep, "vms"), k, v)
			cr_log_info("the recording has VM %s (pid %lld, cgroup %s)", json_string_value(jget(v, "vm")),
				    jint(v, "pid"), json_string_value(jget(v, "cgroup")));
	}
	cr_assert_not_null(rvm, "the recording has the VM");
	cr_assert_str_eq(json_string_value(jget(rvm, "cgroup")), scope, "the recorded cgroup is the live one");
	cr_assert_str_eq(json_string_value(jget(jget(rvm, "container"), "id")), "lab-vm");
	cr_assert_eq(jint(rvm, "pidns"), jint(lvm, "pidns"));
	cr_assert_not_null(find_by(jget(rep, "vms"), "vm", other), "the recording has the other VM");
	json_decref(rep);
	sh("'%s/bin/vcpustat' report -j --cgroup lab-vm '%s' > '%s'", build_dir(), sht, out);
	rep = load(out);
	cr_assert_eq(json_array_size(jget(rep, "vms")), 1, "report --cgroup lab-vm keeps one VM of two");
	cr_assert_not_null(find_by(jget(rep, "vms"), "vm", name));
	cr_log_info("VM cg in %s: live and recorded as libvirt domain lab-vm, pid namespace %lld", scope,
		    jint(lvm, "pidns"));
	json_decref(rep);
	json_decref(report);
	json_decref(docs);
	json_decref(name);
	json_decref(other);
}

static pid_t spawn_microvm(const char *args)
{
	char cmd[1024];
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec '%s/bin/microvm' %s > /dev/null", build_dir(), args);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * microvm --hold FILE: once FILE is there, every vCPU thread of the VM has
 * read its schedstat and is blocked. The exporter's document two rewrites
 * later (the second's sample was read after the first's rename) is what
 * vcpustat says of the VM at that point; then FILE goes and the VM exits.
 */
static json_t *export_while_held(pid_t vm, const char *hold, int exp_slot, const char *exp)
{
	json_t *doc;
	int status;

	for (int i = 0; access(hold, F_OK) != 0; i++) {
		pid_t r = waitpid(vm, &status, WNOHANG);

		cr_assert_eq(r, 0, "microvm (pid %d) exited before it wrote --hold %s (status 0x%x)", (int)vm, hold,
			     r == vm ? status : -1);
		cr_assert_lt(i, 300 * 10, "microvm (pid %d) wrote no --hold %s within 300 s", (int)vm, hold);
		usleep(100 * 1000);
	}
	wait_export_writes(exp_slot, exp, 2);
	doc = load(exp);
	cr_assert_eq(unlink(hold), 0, "unlink %s: %s", hold, strerror(errno));
	return doc;
}

/*
 * Two VMs at once under `vcpustat export --every 1 -f json`: "busy" runs a
 * CPU-bound guest loop (no halts, 2,000,000 loop iterations between two I/O
 * exits; a fixed count, because microvm's calibration, run while the other VM
 * starts, once gave chunks 20x too short), "exity" an exit-bound one (no
 * halts, one loop iteration between two I/O exits). Per vCPU: guest + host =
 * the kernel's own on-CPU time for the thread (/proc/<tid>/schedstat, which
 * microvm reads as the thread's last act) within 0.5 % of the window (the
 * VM's life) plus 150 us for each of the thread's runs on a CPU (schedstat's
 * timeslices): we time a switch at the sched_switch tracepoint, the scheduler
 * at its clock update before it picks the next task, and what runs between
 * the two is not the same at a switch out as at a switch in. bpftrace in the
 * 6.12 lab (2026-12-03) summed that difference per vCPU thread: +18.6 ms over
 * 468 switches (40 us each) and +21.8 ms over 211 (103 us each), where the
 * tracepoint-timed on-CPU time came out 17.8 and 15.3 ms over schedstat's;
 * seven vCPUs of two test runs there were 21-56 ms over, 85-157 us per run
 * on a CPU, and CI's 6.12 run was 1.14 % of a 4.6 s window over. busy: the guest
 * share within 6 points of the kernel's own (guest_time / (utime + stime) of
 * /proc/<tid>/stat: PF_VCPU sampled at each tick, ~1,000 ticks, ~1 point
 * of sampling error; in the lab the kernel's share came out 1.1-4.2 points
 * under ours, though its guest window holds ours: its ticks fall in host
 * mode more often than their share under emulation); exity: host > 50 %
 * on 6.1
 * (its ticks are no measure: 28 % against our 38 % in one run, 38 %
 * against 37 % in the other vCPU, with 6,000 exits a second against 250
 * ticks; on 6.12, whose kvm_entry fires earlier in the entry path, 46-52 %:
 * so > 35 %, and over 3 times the busy vCPUs' host share: the busy vCPUs made
 * 1,094-1,455 exits in 3.8 s on 6.12 with 2,000,000 iterations a chunk or
 * 8,000,000 alike, so most are no exit of theirs, and their host share was
 * 9-11 % in CI, 12.8-17.6 % by hand, the exit-bound one's 50-68 %). A fixed bound on the
 * busy share (90 %) failed in CI at 86.6-89.8 %: how much host time a chunk's
 * exits take under emulation depends on the machine's load, and the kernel's
 * share moves with it. What the thread runs after that last read (its exit:
 * the sanitizer's teardown, under emulation) is host time schedstat never
 * shows (32 ms once on a loaded machine): so each VM runs with --hold, and our
 * side of the comparison is the exporter's document taken while the threads,
 * their schedstat read, are blocked (export_while_held), before they exit.
 */
Test(kvmlab, guest_host_split_matches_schedstat)
{
	const char *exp, *busy_json, *exity_json, *hold;
	char bin[512], busy_args[640], exity_args[640];
	json_t *xdocs[2], *report;
	double busy_host = 0;
	int exp_slot;
	pid_t busy, exity;
	/*
	 * The kernel matrix (tests/run.sh) does not compare with the kernel's
	 * tick-sampled share: on 6.12 under TCG it came out 49.9-98.2 % where
	 * ours was 90.5-94.6 % (and guest + host = schedstat within 0.5 %).
	 */
	bool ticks_compared = !getenv("VCPUSTAT_LAB_NO_TICKS");

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	lab_mkdir();
	exp = in_dir("export.json");
	busy_json = in_dir("busy.json");
	exity_json = in_dir("exity.json");
	hold = in_dir("held");
	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	{
		char *arge[] = { bin, "export", "--every", "1", "-f", "json", "-o", (char *)exp, NULL };

		exp_slot = start_tool(NULL, arge);
	}
	wait_export_writes(exp_slot, exp, 1);
	snprintf(busy_args, sizeof(busy_args),
		 "--vcpus 2 --idle-us 0 --chunk-iters 2000000 --duration 4 -name guest=busy --json '%s' --hold '%s'",
		 busy_json, hold);
	snprintf(exity_args, sizeof(exity_args),
		 "--vcpus 2 --idle-us 0 --chunk-iters 1 --duration 4 -name guest=exity --json '%s' --hold '%s'",
		 exity_json, hold);
	/*
	 * One VM after the other: run together, the exit-bound vCPUs preempt the
	 * busy ones, and each preemption is an exit and host time of the busy
	 * vCPU (its guest share fell to 87.9 % on a loaded machine).
	 */
	busy = spawn_microvm(busy_args);
	xdocs[0] = export_while_held(busy, hold, exp_slot, exp);
	cr_assert_eq(wait_exit(busy), 0, "microvm %s", busy_args);
	exity = spawn_microvm(exity_args);
	xdocs[1] = export_while_held(exity, hold, exp_slot, exp);
	cr_assert_eq(wait_exit(exity), 0, "microvm %s", exity_args);
	stop_tool(exp_slot, "vcpustat export --every");

	for (int m = 0; m < 2; m++) {
		const char *name = m ? "exity" : "busy";
		json_t *vm, *xvm, *vcpu;
		size_t j;
		double wall;

		report = load(m ? exity_json : busy_json);
		vm = json_array_get(jget(report, "vms"), 0);
		wall = (double)jint(vm, "wall_ns") / 1e9;
		xvm = find_by(jget(xdocs[m], "vms"), "vm", jget(vm, "name"));
		cr_assert_not_null(xvm, "the exporter publishes VM %s while it is held", name);
		json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
			json_t *xv = find_by(jget(xvm, "vcpus"), "vcpu", jget(vcpu, "index")), *sec;
			double guest, host, run, oncpu, kguest = -1, ktotal = 0;
			long long slices;
			json_t *ticks = jget(jget(vcpu, "schedstat"), "ticks");

			cr_assert_not_null(xv, "export: %s vCPU %zu", name, j);
			sec = jget(xv, "seconds");
			guest = json_real_value(jget(sec, "guest"));
			host = json_real_value(jget(sec, "host"));
			run = (double)jint(jget(vcpu, "schedstat"), "run_ns") / 1e9;
			slices = jint(jget(vcpu, "schedstat"), "timeslices");
			oncpu = guest + host;
			if (json_is_object(ticks)) {
				kguest = (double)jint(ticks, "guest_ns") / 1e9;
				ktotal = (double)(jint(ticks, "utime_ns") + jint(ticks, "stime_ns")) / 1e9;
			}
			fprintf(stderr,
				"kvmlab:   %s vCPU %zu: guest %.4f s + host %.4f s = %.4f s vs schedstat run %.4f s "
				"(diff %.4f s = %.2f %% of the %.3f s window, %lld runs on a CPU); guest share %.1f %%, the kernel's "
				"%.1f %% (guest_time %.2f s of utime + stime %.2f s); exits %lld\n",
				name, j, guest, host, oncpu, run, oncpu - run, 100 * (oncpu - run) / wall, wall, slices,
				100 * guest / oncpu, ktotal > 0 ? 100 * kguest / ktotal : -1.0, kguest, ktotal,
				jint(xv, "exit_count"));
			cr_assert_lt(fabs(oncpu - run), 0.005 * wall + 150e-6 * (double)slices,
				     "%s vCPU %zu: guest + host (%.4f s) = schedstat's run time (%.4f s) within 0.5 %% of the "
				     "%.3f s window + 150 us for each of its %lld runs on a CPU",
				     name, j, oncpu, run, wall, slices);
			if (m == 0 && ticks_compared) {
				cr_assert_gt(ktotal, 0.5 * run, "microvm read the busy vCPU %zu's ticks (/proc stat)", j);
				cr_assert_gt(kguest, 0.5 * ktotal, "busy vCPU %zu: the kernel saw it mostly in the guest", j);
				cr_assert_lt(fabs(guest / oncpu - kguest / ktotal), 0.06,
					     "busy vCPU %zu: guest share %.1f %% = the kernel's (guest_time %.3f s of "
					     "utime + stime %.3f s) %.1f %% within 6 points",
					     j, 100 * guest / oncpu, kguest, ktotal, 100 * kguest / ktotal);
			}
			if (m == 0) {
				busy_host += host / oncpu / 2; /* the mean of the two busy vCPUs' host shares */
			} else {
				cr_assert_gt(host, 0.35 * oncpu, "exit-bound vCPU %zu: host %.4f s > 35 %% of on-CPU %.4f s",
					     j, host, oncpu);
				cr_assert_gt(host / oncpu, 3 * busy_host,
					     "exit-bound vCPU %zu: its host share %.1f %% > 3 times the busy vCPUs' %.1f %%", j,
					     100 * host / oncpu, 100 * busy_host);
			}
		}
		json_decref(report);
		json_decref(xdocs[m]);
	}
}

/* ---- exit reasons named as the running kernel names them ---- */

#define KERNEL_NAMES_MAX 512

struct kernel_names {
	unsigned int n[2];			/* [0] VMX, [1] SVM */
	unsigned int code[2][KERNEL_NAMES_MAX];
	char name[2][KERNEL_NAMES_MAX][40];
};

/*
 * The kvm_exit tracepoint's own tables: its print fmt holds
 * `(REC->isa == 1) ? __print_symbolic(REC->exit_reason & 0xffff, { 0,
 * "EXCEPTION_NMI" }, ...) : __print_symbolic(REC->exit_reason, { 0x000,
 * "read_cr0" }, ...)` -- VMX_EXIT_REASONS and SVM_EXIT_REASONS as this
 * kernel was built with them. NULL and a reason when they cannot be read.
 */
static const char *kernel_exit_names(struct kernel_names *k)
{
	static const char *path = "/sys/kernel/tracing/events/kvm/kvm_exit/format";
	char *fmt = NULL, *p, *svm;
	size_t cap = 0;
	FILE *f;

	memset(k, 0, sizeof(*k));
	if (access("/sys/kernel/tracing/events", F_OK) && mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return "tracefs is not mounted and cannot be (/sys/kernel/tracing)";
	f = fopen(path, "r");
	if (!f)
		return "no kvm:kvm_exit tracepoint here (KVM not loaded)";
	while (getline(&fmt, &cap, f) > 0 && strncmp(fmt, "print fmt:", 10))
		;
	fclose(f);
	p = fmt ? strstr(fmt, "__print_symbolic(") : NULL;
	svm = p ? strstr(p + 1, "__print_symbolic(") : NULL;
	cr_assert_not_null(svm, "%s: two __print_symbolic tables (VMX, SVM) in the print fmt", path);
	for (int isa = 0; isa < 2; isa++) {
		/* the SVM table ends where the next __print_ begins (the FAILED_VMENTRY flag's) */
		char *next = isa ? strstr(svm + 1, "__print_") : NULL;
		char *end = isa ? (next ? next : svm + strlen(svm)) : svm;

		p = isa ? svm : p;
		while ((p = strstr(p, "{ ")) && p < end) {
			char *q;
			long long code = strtoll(p + 2, &q, 0);
			char *name, *close;

			while (*q == ' ' || *q == '+') /* SVM exceptions are written { 0x040 + 6, "UD excp" } */
				if (*q++ == '+')
					code += strtoll(q, &q, 0);
			name = strchr(q, '"');
			close = name ? strchr(name + 1, '"') : NULL;

			cr_assert(name && close && *q == ',', "%s: cannot read %.40s", path, p);
			cr_assert_lt(k->n[isa], KERNEL_NAMES_MAX);
			k->code[isa][k->n[isa]] = (unsigned int)code; /* SVM_EXIT_ERR is -1 */
			snprintf(k->name[isa][k->n[isa]], sizeof(k->name[0][0]), "%.*s", (int)(close - name - 1), name + 1);
			k->n[isa]++;
			p = close;
		}
	}
	free(fmt);
	return NULL;
}

static const char *kernel_name(const struct kernel_names *k, unsigned int isa, unsigned int code)
{
	int t = isa == KVM_ISA_SVM;

	for (unsigned int i = 0; i < k->n[t]; i++)
		if (k->code[t][i] == code)
			return k->name[t][i];
	return NULL;
}

/* Every code of the kernel's tables gets the kernel's name from vcpustat. */
static void check_kernel_tables(const struct kernel_names *k)
{
	char buf[32];

	cr_assert_gt(k->n[0], 40, "the kernel's VMX table");
	cr_assert_gt(k->n[1], 80, "the kernel's SVM table");
	for (int t = 0; t < 2; t++) {
		unsigned int isa = t ? KVM_ISA_SVM : KVM_ISA_VMX;

		for (unsigned int i = 0; i < k->n[t]; i++)
			cr_assert_str_eq(exit_reason_name(isa, k->code[t][i], buf, sizeof(buf)), k->name[t][i],
					 "%s code %#x: vcpustat's name = the kernel's", t ? "SVM" : "VMX", k->code[t][i]);
	}
	/* a code the kernel does not name is shown by its number */
	for (unsigned int c = 0x3f0; c < 0x400; c++)
		if (!kernel_name(k, KVM_ISA_SVM, c)) {
			char want[32];

			snprintf(want, sizeof(want), "SVM_0x%x", c);
			cr_assert_str_eq(exit_reason_name(KVM_ISA_SVM, c, buf, sizeof(buf)), want);
			break;
		}
}

/* On any host whose KVM is loaded: vcpustat's tables = the running kernel's (here 6.18). */
Test(exit_names, vcpustat_names_every_code_as_the_running_kernel_does)
{
	static struct kernel_names kn;
	struct kernel_names *k = &kn;
	const char *why;

	why = kernel_exit_names(k);
	if (why)
		cr_skip_test("cannot read the kernel's exit reason names: %s", why);
	check_kernel_tables(k);
	fprintf(stderr, "exit_names: %u VMX and %u SVM codes named as the running kernel names them\n", k->n[0],
		k->n[1]);
}

/*
 * In the lab (kernel 6.1): its tables, and every exit seen live (`vcpustat
 * -j` during `microvm --mix all`: io, hlt, cpuid, msr, npf, interrupt, ...)
 * has the kernel's name for its code; a code the kernel does not name would
 * show as SVM_0x<code>.
 */
Test(kvmlab, exit_reasons_seen_are_named_as_the_kernel_names_them)
{
	static struct kernel_names kn;
	struct kernel_names *k = &kn;
	const char *live, *why;
	char bin[512], args[256];
	json_t *docs, *doc, *vm, *e, *names = json_object();
	size_t i, j, l, seen;
	int slot;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	why = kernel_exit_names(k);
	cr_assert_null(why, "the lab's kernel's exit names: %s", why);
	check_kernel_tables(k);
	lab_mkdir();
	live = in_dir("live.json");
	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	{
		char *argl[] = { bin, "-j", "-d", "1", NULL };

		slot = start_tool(live, argl);
	}
	wait_live_doc(slot, live, 0);
	snprintf(args, sizeof(args), "--vcpus 2 --mix all --duration 1 -name guest=names --json /dev/null");
	sh("'%s/bin/microvm' %s > /dev/null", build_dir(), args);
	wait_live_doc(slot, live, mono_ns());
	stop_tool(slot, "vcpustat -j");
	docs = live_docs(live);
	json_array_foreach(docs, i, doc) {
		json_array_foreach(jget(doc, "vms"), j, vm) {
			json_array_foreach(jget(vm, "exits"), l, e) {
				const char *isa = json_string_value(jget(e, "isa"));
				const char *reason = json_string_value(jget(e, "reason"));
				unsigned int code = (unsigned int)jint(e, "code");
				bool is_svm = !strcmp(isa, "svm");
				const char *kn = kernel_name(k, is_svm ? KVM_ISA_SVM : KVM_ISA_VMX, code);
				char want[32];

				if (is_svm)
					snprintf(want, sizeof(want), "SVM_0x%x", code);
				else
					snprintf(want, sizeof(want), "VMX_%u", code);
				cr_assert_str_eq(reason, kn ? kn : want, "exit %s code %#x: %s", isa, code,
						 kn ? "the kernel's name" : "unknown to the kernel: shown by number");
				if (!json_object_get(names, reason))
					json_object_set_new(names, reason, json_integer(code));
			}
		}
	}
	seen = json_object_size(names);
	{
		const char *key;

		fprintf(stderr, "kvmlab:   %zu exit reasons seen, each as the kernel names it:", seen);
		json_object_foreach(names, key, e)
			fprintf(stderr, " %s (%#llx)", key, json_integer_value(e));
		fprintf(stderr, "\n");
	}
	cr_assert_geq(seen, 5, "the mix's exits were seen (io, hlt, cpuid, msr, npf)");
	json_decref(names);
	json_decref(docs);
}

/* ---- a peer on the same run: perf kvm stat ---- */

struct perf_exit {
	char reason[40];
	long long samples;
	double avg_us;
};

/*
 * `perf kvm stat report --event vmexit`'s table: `VM-EXIT Samples Samples%
 * Time% MinTime MaxTime Avgtime`, one line per reason, e.g.
 *   "   io   4723   31.09%   20.01%   10.50us   12000.00us   76.10us ( +-   2.00% )"
 * (SVM names may hold a space: "PF excp"). Returns the number of reasons.
 */
static int perf_exits(const char *path, struct perf_exit *pe, int max)
{
	char line[512];
	bool table = false;
	int n = 0;
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *tok[32], *save = NULL, *t;
		int nt = 0;

		if (strstr(line, "VM-EXIT")) {
			table = true;
			continue;
		}
		if (!table || strstr(line, "Total Samples")) {
			table = false;
			continue;
		}
		for (t = strtok_r(line, " \t\n", &save); t && nt < 32; t = strtok_r(NULL, " \t\n", &save))
			tok[nt++] = t;
		/* name... samples samples% time% min max avg ( +- x% ) */
		if (nt < 11 || strcmp(tok[nt - 1], ")") || strcmp(tok[nt - 4], "("))
			continue;
		cr_assert_lt(n, max);
		pe[n].reason[0] = '\0';
		for (int i = 0; i < nt - 10; i++)
			snprintf(pe[n].reason + strlen(pe[n].reason), sizeof(pe[n].reason) - strlen(pe[n].reason), "%s%s",
				 i ? " " : "", tok[i]);
		pe[n].samples = strtoll(tok[nt - 10], NULL, 10);
		pe[n].avg_us = strtod(tok[nt - 5], NULL);
		n++;
	}
	fclose(f);
	return n;
}

/* The reason of the exit still open when vCPU n's thread ended (NULL: it was in the guest). */
static const char *open_exit_at_end(const char *sht, const char *vm, long long vcpu, char *buf, size_t len)
{
	const char *out = in_dir("query-last.json");
	json_t *q, *ivs, *last;
	const char *v;

	sh("'%s/bin/vcpustat' query '%s' --path /vms/%s/vcpus/%lld/exit_reason --json > '%s'", build_dir(), sht, vm,
	   vcpu, out);
	q = load(out);
	ivs = jget(json_array_get(jget(q, "attributes"), 0), "intervals");
	last = json_array_get(ivs, json_array_size(ivs) - 1);
	v = last ? json_string_value(json_object_get(last, "value")) : NULL;
	if (v)
		snprintf(buf, len, "%s", v);
	json_decref(q);
	return v ? buf : NULL;
}

/*
 * `perf kvm stat record` (Debian's linux-perf, running in the lab's 6.1
 * guest) and `vcpustat record`, both attached during the same microvm run:
 * per exit reason, perf's count = vcpustat's. perf counts an exit when its
 * kvm_entry comes; the exits still open when a vCPU thread ended (its last
 * one, when the stop came during a halt or an exit to microvm) have no
 * kvm_entry, and vcpustat counts them (as KVM does): those are added to
 * perf's. The mean latencies of both are printed side by side.
 */
Test(kvmlab, perf_kvm_stat_counts_equal_vcpustat_per_reason)
{
	const char *sht, *mjson, *rjson, *pdata, *prep;
	char args[512], buf[64];
	struct perf_exit pe[64];
	json_t *rep, *rvm, *report, *vm, *vcpu, *opened = json_object(), *e;
	size_t i, j;
	int n;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	if (system("perf version > /dev/null 2>&1"))
		cr_skip_test("perf is not installed (Debian package linux-perf; tools/deps.sh installs it)");
	lab_mkdir();
	sht = in_dir("r.sht");
	mjson = in_dir("microvm.json");
	rjson = in_dir("report.json");
	pdata = in_dir("perf.data"); /* tmpfs: perf cannot mmap its file on the lab's 9p scratch folder */
	prep = in_dir("perf-report.txt");

	start_recorder(sht);
	snprintf(args, sizeof(args),
		 "--vcpus 2 --mix all --busy-us 2000 --idle-us 1000 --duration 2 -name guest=peer --json '%s'", mjson);
	sh("perf kvm stat record -q -o '%s' -- '%s/bin/microvm' %s > /dev/null 2>&1", pdata, build_dir(), args);
	stop_recorder();
	sh("perf kvm -i '%s' stat report --event vmexit > '%s' 2>&1", pdata, prep);
	sh("'%s/bin/vcpustat' report '%s' -j --top 0 > '%s'", build_dir(), sht, rjson);

	rep = load(rjson);
	report = load(mjson);
	cr_assert_eq(jint(jget(rep, "lost"), "ringbuf"), 0, "records were lost: the counts cannot be exact");
	vm = json_array_get(jget(report, "vms"), 0);
	rvm = find_by(jget(rep, "vms"), "vm", jget(vm, "name"));
	cr_assert_not_null(rvm, "vcpustat saw VM peer");
	json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
		const char *r = open_exit_at_end(sht, "peer", jint(vcpu, "index"), buf, sizeof(buf));

		if (r)
			json_object_set_new(opened, r, json_integer(jint0(opened, r) + 1));
	}
	n = perf_exits(prep, pe, 64);
	cr_assert_gt(n, 0, "perf kvm stat report printed no exit: see %s", prep);
	fprintf(stderr, "kvmlab: microvm %s under perf kvm stat record and vcpustat record:\n", args);
	fprintf(stderr, "kvmlab:   %-12s %8s %8s %8s %12s %12s\n", "reason", "vcpustat", "perf", "open", "mean vcpustat",
		"mean perf");
	json_array_foreach(jget(rvm, "exits"), i, e) {
		const char *reason = json_string_value(jget(e, "reason"));
		long long count = jint(e, "count"), perf = 0;
		double perf_avg = 0;

		for (int k = 0; k < n; k++)
			if (!strcmp(pe[k].reason, reason)) {
				perf = pe[k].samples;
				perf_avg = pe[k].avg_us;
			}
		fprintf(stderr, "kvmlab:   %-12s %8lld %8lld %8lld %10.2fus %10.2fus\n", reason, count, perf,
			jint0(opened, reason), (double)jint(e, "sum_ns") / 1e3 / (double)count, perf_avg);
		cr_assert_eq(count, perf + jint0(opened, reason),
			     "%s: vcpustat's count = perf kvm stat's + the exits still open at the vCPUs' end", reason);
	}
	for (int k = 0; k < n; k++)
		cr_assert_gt(table_count(rvm, "exits", pe[k].reason), 0, "perf's reason %s is in vcpustat's table too",
			     pe[k].reason);
	json_decref(opened);
	json_decref(report);
	json_decref(rep);
}

/* ---- the VMM's other threads in a real VM (issue 12 item 4) ---- */

/* The thread of process pid named comm, or 0. */
static int thread_named(pid_t pid, const char *comm)
{
	char path[128], name[64];
	int found = 0;

	for (int tid = pid; tid < pid + 64 && !found; tid++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, comm, strlen(comm)))
			found = tid;
		fclose(f);
	}
	return found;
}

/* The VM of a --ready file: its process id, and its vCPU threads' ids in tids (n of them). */
static pid_t ready_vm(const char *ready_path, pid_t *tids, size_t n)
{
	json_t *ready, *vm;
	pid_t pid;

	for (int i = 0; i < 600 && access(ready_path, F_OK); i++)
		usleep(100000);
	ready = load(ready_path);
	vm = json_array_get(jget(ready, "vms"), 0);
	pid = (pid_t)jint(vm, "pid");
	cr_assert_eq(json_array_size(jget(vm, "vcpus")), n, "%s lists %zu vCPUs", ready_path, n);
	for (size_t i = 0; i < n; i++)
		tids[i] = (pid_t)jint(json_array_get(jget(vm, "vcpus"), i), "tid");
	json_decref(ready);
	return pid;
}

/*
 * microvm's I/O thread (--io-thread-us: `IO iothread0`, 2 ms of work, 2 ms
 * asleep) pinned to CPU 0 with the VM's busy vCPU: the live window finds it
 * in the VM's process (not its vCPU, named `CPU 0/KVM`), and the kernel's
 * accounting of it matches its /proc schedstat over the same 2 s (run and
 * wait within 5 % of the window); the vCPU is who kept it waiting, and it is
 * among the vCPU's culprits.
 */
Test(kvmlab, a_vm_io_thread_is_accounted_live_and_names_its_vcpu_as_culprit)
{
	char args[512], ready_path[256];
	struct vcpustat_vmm_thread t0, t1;
	struct schedstat s0, s1;
	struct live_window w;
	struct summary s;
	struct vcpustat *vs;
	__u64 n0, n1, m0, m1, window;
	double run_err, wait_err;
	pid_t mvm, vm_pid, vcpu_tid;
	__u32 io_tid = 0;
	int n;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	lab_mkdir();
	snprintf(ready_path, sizeof(ready_path), "%s", in_dir("iot.ready"));
	cr_assert_eq(vcpustat_open(&vs, NULL), 0);
	n = vcpustat_attach(vs);
	cr_assert_gt(n, 0);
	snprintf(args, sizeof(args),
		 "--vcpus 1 --pin 0 --idle-us 0 --chunk-iters 2000000 --io-thread-us 2000 --duration 8 "
		 "-name guest=iot --ready '%s' --json '%s'",
		 ready_path, in_dir("iot.json"));
	mvm = spawn_microvm(args);
	vm_pid = ready_vm(ready_path, &vcpu_tid, 1);
	for (int i = 0; i < 100 && !io_tid; i++, usleep(20000))
		io_tid = (__u32)thread_named(vm_pid, "IO iothread0");
	cr_assert_gt(io_tid, 0, "microvm's I/O thread");

	cr_assert_eq(live_window_init(&w, vs, NULL), 0);
	cr_assert_eq(live_window_next(&w, NULL), 0); /* its discovery */
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &io_tid, &t0), 0,
		     "the live window found the I/O thread of VM %d", (int)vm_pid);
	cr_assert_eq(t0.kind, VCPUSTAT_VMM_EMULATOR);
	cr_assert_eq(t0.vm_tgid, (__u32)vm_pid);
	usleep(300000);
	cr_assert_eq(live_window_next(&w, NULL), 0);
	m0 = mono_ns();
	cr_assert_eq(read_schedstat((int)io_tid, &s0), 0);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &io_tid, &t0), 0);
	n0 = vcpustat_now_ns();
	usleep(2000000);
	cr_assert_eq(read_schedstat((int)io_tid, &s1), 0);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &io_tid, &t1), 0);
	n1 = vcpustat_now_ns();
	m1 = mono_ns();
	cr_assert_eq(live_window_next(&w, &s), 0);
	cr_assert_eq(wait_exit(mvm), 0, "microvm %s", args);

	window = m1 - m0;
	run_err = ((double)(vmm_thread_ns(&t1, n1, false) - vmm_thread_ns(&t0, n0, false)) - (double)(s1.run_ns - s0.run_ns)) /
		  (double)window;
	wait_err = ((double)(vmm_thread_ns(&t1, n1, true) - vmm_thread_ns(&t0, n0, true)) - (double)(s1.wait_ns - s0.wait_ns)) /
		   (double)window;
	fprintf(stderr,
		"kvmlab: I/O thread %u over %.3f s: run %.1f ms (schedstat %.1f ms, %+.2f %% of the window), wait %.1f "
		"ms (schedstat %.1f ms, %+.2f %%)\n",
		io_tid, window / 1e9, (vmm_thread_ns(&t1, n1, false) - vmm_thread_ns(&t0, n0, false)) / 1e6,
		(s1.run_ns - s0.run_ns) / 1e6, run_err * 100, (vmm_thread_ns(&t1, n1, true) - vmm_thread_ns(&t0, n0, true)) / 1e6,
		(s1.wait_ns - s0.wait_ns) / 1e6, wait_err * 100);
	cr_assert_gt(s1.run_ns - s0.run_ns, window / 20, "the I/O thread ran");
	/* it preempts the vCPU at most wake-ups (a sleeper), so it waits little, but it does */
	/* how long it waits varies from run to run in the lab (44 ms, 16 ms, 4 ms in 2 s): that it does */
	cr_assert_gt(s1.wait_ns - s0.wait_ns, window / 1000, "and waited behind the vCPU");
	cr_assert_lt(fabs(run_err), 0.05, "run off by %.2f %% of the window", run_err * 100);
	cr_assert_lt(fabs(wait_err), 0.05, "wait off by %.2f %% of the window", wait_err * 100);
	{
		const struct vm_summary *vm = NULL;
		bool io_culprit = false;

		for (size_t i = 0; i < s.nr_vms; i++)
			if (s.vms[i].tgid == (__u32)vm_pid)
				vm = &s.vms[i];
		cr_assert_not_null(vm);
		cr_assert_str_eq(vm->name, "iot");
		cr_assert_geq(vm->vmm.threads[VMM_EMULATOR], 1);
		cr_assert_gt(vm->vmm.nr_culprits, 0);
		fprintf(stderr, "kvmlab: VMM threads of iot: run %.1f ms, wait %.1f ms; top culprit %s vCPU %d (%s), %.0f %%\n",
			vm->vmm.run_ns[VMM_EMULATOR] / 1e6, vm->vmm.wait_ns[VMM_EMULATOR] / 1e6, vm->vmm.culprits[0].vm,
			vm->vmm.culprits[0].vcpu, vm->vmm.culprits[0].comm, 100 * vm->vmm.culprits[0].share);
		cr_assert_str_eq(vm->vmm.culprits[0].vm, "iot", "its own vCPU kept the I/O thread waiting");
		cr_assert_eq(vm->vmm.culprits[0].vcpu, 0);
		cr_assert_gt(vm->vmm.culprits[0].share, 0.5);
		for (size_t c = 0; c < vm->nr_culprits; c++)
			io_culprit |= vm->culprits[c].tid == io_tid && !strcmp(vm->culprits[c].comm, "IO iothread0");
		cr_assert(io_culprit, "the I/O thread is among the vCPU's culprits");
	}
	summary_free(&s);
	live_window_free(&w);
	vcpustat_close(vs);
}


/* ---- placement on a kernel of two NUMA nodes (issue 12 item 5) ---- */

/*
 * tests/kvmlab.sh runs this suite in a lab of two sockets, each its own NUMA
 * node and last-level cache (tools/kvmlab/run --numa 2): the guest kernel's
 * sysfs, scheduler and tracepoints are those of a two-node host. It has no
 * SMT (QEMU's TCG emulates no topoext): the SMT counters are tested on declared
 * siblings in the suite kvmlab (smt_sharing_on_declared_siblings_is_bounded_by_schedstat).
 */
TestSuite(kvmlab_numa, .fini = lab_cleanup, .timeout = 300);

/* The NUMA node of cpu (its nodeN entry in sysfs), or -1. */
static int cpu_node(int cpu)
{
	char path[96];
	struct dirent *de;
	int node = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	d = opendir(path);
	if (!d)
		return -1;
	while (node < 0 && (de = readdir(d)))
		if (sscanf(de->d_name, "node%d", &node) != 1)
			node = -1;
	closedir(d);
	return node;
}

static const char *two_nodes_unavailable(void)
{
	const char *why = two_cpus_unavailable();

	if (why)
		return why;
	if (cpu_node(0) < 0 || cpu_node(1) < 0 || cpu_node(0) == cpu_node(1))
		return "needs CPUs 0 and 1 on two NUMA nodes (tests/kvmlab.sh runs it in a lab of two: "
		       "tools/kvmlab/run --numa 2)";
	return NULL;
}

static void pin_task(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (cpu < 0) {
		CPU_SET(0, &set);
		CPU_SET(1, &set);
	} else
		CPU_SET(cpu, &set);
	cr_assert_eq(sched_setaffinity(tid, sizeof(set), &set), 0, "pin %d to CPU %d: %s", (int)tid, cpu,
		     strerror(errno));
}

/* The kernel's count of the thread's migrations (se.nr_migrations of /proc/<tid>/sched, CONFIG_SCHED_DEBUG). */
static long long kernel_migrations(pid_t tid)
{
	char path[64], line[256];
	long long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/sched", (int)tid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while (n < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, "se.nr_migrations", 16))
			cr_assert_eq(sscanf(strchr(line, ':') + 1, "%lld", &n), 1, "%s: %s", path, line);
	fclose(f);
	cr_assert_geq(n, 0, "%s has se.nr_migrations", path);
	return n;
}

/* The vCPU thread of the one-vCPU VM that --ready file names. */
static pid_t ready_vcpu(const char *ready_path)
{
	pid_t tid;

	ready_vm(ready_path, &tid, 1);
	return tid;
}

/* ns of a report --placement "nodes" array's entry for node n (0 when absent) */
static long long node_ns(json_t *nodes, int n)
{
	json_t *e;
	size_t i;

	json_array_foreach(nodes, i, e)
		if (jint(e, "node") == n)
			return jint(e, "ns");
	return 0;
}

/* vCPU-seconds of an export JSON's placement.node_seconds for node n (0 when absent) */
static double node_seconds(json_t *placement, int n)
{
	char key[16];

	snprintf(key, sizeof(key), "%d", n);
	return json_real_value(json_object_get(jget(placement, "node_seconds"), key));
}

/*
 * Two busy one-vCPU VMs on a host of two nodes (CPU 0 on one, CPU 1 on the
 * other): "stay" runs on CPU 1 throughout; "mover" starts on CPU 0 and the
 * test moves it (sched_setaffinity, as `taskset` or libvirt's vcpupin do)
 * to CPU 1, back to 0 and to 1 again, 1.5 s apart. The truth is the
 * kernel's: the vCPU thread's /proc schedstat run time read at each move
 * (and by microvm as the thread's last act) gives its time on each node;
 * its se.nr_migrations, the moves. vcpustat's live exporter
 * (vcpustat_placement_*) and `report --placement` of a recording made at
 * the same time give: each VM's vCPU-seconds per node within 2 % of its
 * life; mover's 3 moves across nodes and caches, as the kernel counted
 * them; none for stay; none by NUMA balancing (both are pinned); the nodes'
 * time and utilization; and the balancing move's arithmetic from them.
 */
Test(kvmlab_numa, vcpu_seconds_per_node_and_moves_across_nodes_match_the_kernel)
{
	static const char *names[2] = { "mover", "stay" };
	char bin[512], args[2][1024], ready[2][256], out[2][256];
	long long run_at[4] = { 0 }, kmig, truth_ns[2][2] = { { 0 } };
	json_t *xdoc, *rep, *pl, *rvm[2];
	pid_t vm[2], mover;
	int exp_slot, live_slot, node[2] = { cpu_node(0), cpu_node(1) };
	unsigned long long end_ns;
	double wall[2], w;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	SKIP_UNLESS(two_nodes_unavailable());
	lab_mkdir();
	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	start_recorder(in_dir("placement.sht"));
	{
		char *arge[] = { bin, "export", "--every", "1", "-f", "json", "-o", (char *)in_dir("export.json"), NULL };

		exp_slot = start_tool(NULL, arge);
	}
	{
		char *argl[] = { bin, "-j", "-d", "1", NULL };

		live_slot = start_tool(in_dir("live.json"), argl);
	}
	wait_export_writes(exp_slot, in_dir("export.json"), 1);
	wait_live_doc(live_slot, in_dir("live.json"), 0);
	for (int m = 0; m < 2; m++) {
		snprintf(ready[m], sizeof(ready[m]), "%s", in_dir(m ? "stay.ready" : "mover.ready"));
		snprintf(out[m], sizeof(out[m]), "%s", in_dir(m ? "stay.json" : "mover.json"));
		snprintf(args[m], sizeof(args[m]),
			 "--vcpus 1 --idle-us 0 --chunk-iters 2000000 --duration 7 -name guest=%s --ready '%s' --json '%s'",
			 names[m], ready[m], out[m]);
		/* its threads inherit the CPU: mover starts on CPU 0, stay on CPU 1, and never moves */
		pin_task(0, m);
		vm[m] = spawn_microvm(args[m]);
	}
	pin_task(0, -1);
	mover = ready_vcpu(ready[0]);
	cr_assert_gt(ready_vcpu(ready[1]), 0);
	for (int k = 0; k < 3; k++) {
		struct schedstat s;

		usleep(1500000);
		cr_assert_eq(read_schedstat((int)mover, &s), 0);
		run_at[k] = (long long)s.run_ns;
		pin_task(mover, k % 2 ? 0 : 1); /* to CPU 1, 0, 1 */
	}
	usleep(200000);
	kmig = kernel_migrations(mover);
	for (int m = 0; m < 2; m++)
		cr_assert_eq(wait_exit(vm[m]), 0, "microvm %s", args[m]);
	end_ns = mono_ns();
	wait_export_writes(exp_slot, in_dir("export.json"), 2);
	wait_live_doc(live_slot, in_dir("live.json"), end_ns);
	stop_tool(exp_slot, "vcpustat export --every");
	stop_tool(live_slot, "vcpustat -j");
	stop_recorder();

	/* the kernel's time of each VM's vCPU on each node */
	for (int m = 0; m < 2; m++) {
		json_t *r = load(out[m]), *v = json_array_get(jget(r, "vms"), 0);
		long long run = jint(jget(json_array_get(jget(v, "vcpus"), 0), "schedstat"), "run_ns");

		wall[m] = (double)jint(v, "wall_ns");
		if (m == 1)
			truth_ns[1][1] = run;
		else {
			run_at[3] = run;
			/* on CPU 0 until the first move, on 1 until the second, 0 until the third, then 1 */
			for (int k = 0; k < 4; k++)
				truth_ns[0][k % 2] += run_at[k] - (k ? run_at[k - 1] : 0);
		}
		json_decref(r);
	}
	fprintf(stderr, "kvmlab: CPU 0 on node %d, CPU 1 on node %d; mover moved 3 times, se.nr_migrations %lld\n",
		node[0], node[1], kmig);
	cr_assert_eq(kmig, 3, "the kernel counted mover's 3 moves and no other migration");

	/* live: the exporter's counters, over each VM's life */
	xdoc = load(in_dir("export.json"));
	for (int m = 0; m < 2; m++) {
		json_t *name = json_string(names[m]), *xvm = find_by(jget(xdoc, "vms"), "vm", name);
		json_t *p;

		cr_assert_not_null(xvm, "the exporter publishes VM %s", names[m]);
		p = jget(xvm, "placement");
		for (int c = 0; c < 2; c++) {
			double got = node_seconds(p, node[c]), want = (double)truth_ns[m][c] / 1e9;

			fprintf(stderr, "kvmlab: live: %s on node %d: %.4f s, schedstat %.4f s (%+.2f %% of its %.3f s)\n",
				names[m], node[c], got, want, 100 * (got - want) / (wall[m] / 1e9), wall[m] / 1e9);
			cr_assert_lt(fabs(got - want), 0.02 * wall[m] / 1e9,
				     "live: %s on node %d: %.4f s = the kernel's %.4f s within 2 %% of its life", names[m],
				     node[c], got, want);
		}
		cr_assert_eq(jint(p, "cross_node_migrations"), m ? 0 : kmig, "live: %s's moves across nodes",
			     names[m]);
		cr_assert_eq(jint(p, "cross_llc_migrations"), m ? 0 : kmig,
			     "live: %s's moves across caches (one per node here)", names[m]);
		cr_assert_eq(jint(p, "numa_balancing_moves"), 0, "live: %s is pinned: NUMA balancing moves none",
			     names[m]);
		json_decref(name);
	}
	json_decref(xdoc);

	/*
	 * live, vcpustat -j: each document's interval, added up; every document
	 * has the host's two nodes, each holding what the VMs' placement puts there
	 */
	{
		json_t *docs = live_docs(in_dir("live.json")), *doc;
		double lsum[2][2] = { { 0 } };
		long long lmig[2] = { 0 };
		size_t d;

		cr_assert_gt(json_array_size(docs), 4);
		json_array_foreach(docs, d, doc) {
			json_t *bal = jget(doc, "balance"), *e, *v;
			long long per_node[2] = { 0 };
			size_t i;

			json_array_foreach(jget(doc, "vms"), i, v) {
				json_t *p = jget(v, "placement");
				const char *name = json_string_value(jget(v, "vm"));
				int m = !strcmp(name, names[0]) ? 0 : !strcmp(name, names[1]) ? 1 : -1;

				for (int c = 0; c < 2; c++) {
					char key[16];
					long long ns;

					snprintf(key, sizeof(key), "%d", node[c]);
					ns = json_integer_value(json_object_get(jget(p, "node_ns"), key));
					per_node[c] += ns;
					if (m >= 0)
						lsum[m][c] += (double)ns / 1e9;
				}
				if (m >= 0)
					lmig[m] += jint(p, "cross_node_migrations");
			}
			cr_assert_eq(json_array_size(jget(bal, "nodes")), 2, "document %zu: the host's two nodes", d);
			json_array_foreach(jget(bal, "nodes"), i, e)
				cr_assert_eq(jint(e, "ns"), per_node[jint(e, "node") == node[1]],
					     "document %zu: node %lld holds the VMs' time there", d, jint(e, "node"));
		}
		for (int m = 0; m < 2; m++) {
			for (int c = 0; c < 2; c++) {
				double want = (double)truth_ns[m][c] / 1e9;

				fprintf(stderr, "kvmlab: vcpustat -j: %s on node %d: %.4f s over %zu documents, schedstat %.4f s\n",
					names[m], node[c], lsum[m][c], json_array_size(docs), want);
				cr_assert_lt(fabs(lsum[m][c] - want), 0.02 * wall[m] / 1e9,
					     "vcpustat -j: %s on node %d: %.4f s = the kernel's %.4f s within 2 %% of its life",
					     names[m], node[c], lsum[m][c], want);
			}
			cr_assert_eq(lmig[m], m ? 0 : kmig, "vcpustat -j: %s's moves across nodes, added up", names[m]);
		}
		json_decref(docs);
	}

	/* the recording: report --placement over the whole file */
	sh("'%s' report '%s' --placement -j > '%s'", bin, in_dir("placement.sht"), in_dir("placement.json"));
	rep = load(in_dir("placement.json"));
	pl = jget(rep, "placement");
	w = (double)(jint(rep, "to_ns") - jint(rep, "from_ns")) / 1e9;
	cr_assert_str_eq(json_string_value(jget(pl, "topology")), "recording", "record kept the host's topology");
	cr_assert(json_is_false(jget(pl, "smt")), "no SMT in the lab");
	cr_assert_eq(json_array_size(jget(pl, "nodes")), 2);
	cr_assert_eq(json_array_size(jget(pl, "llcs")), 2);
	for (int m = 0; m < 2; m++) {
		json_t *name = json_string(names[m]);

		rvm[m] = find_by(jget(pl, "vms"), "vm", name);
		cr_assert_not_null(rvm[m], "report --placement has VM %s", names[m]);
		for (int c = 0; c < 2; c++) {
			long long got = node_ns(jget(rvm[m], "nodes"), node[c]), want = truth_ns[m][c];

			fprintf(stderr, "kvmlab: recorded: %s on node %d: %.4f s, schedstat %.4f s (%+.2f %%)\n", names[m],
				node[c], got / 1e9, want / 1e9, 100 * (double)(got - want) / wall[m]);
			cr_assert_lt(fabs((double)(got - want)), 0.02 * wall[m],
				     "recorded: %s on node %d: %lld ns = the kernel's %lld ns within 2 %% of its life",
				     names[m], node[c], got, want);
		}
		cr_assert_eq(jint(rvm[m], "cross_node_migrations"), m ? 0 : kmig, "recorded: %s's moves across nodes",
			     names[m]);
		cr_assert_eq(jint(rvm[m], "cross_llc_migrations"), m ? 0 : kmig, "recorded: %s's moves across caches",
			     names[m]);
		cr_assert_eq(jint(rvm[m], "numa_balancing_moves"), 0);
		json_decref(name);
	}
	/* each node's time is its VMs', its utilization that over its CPU and the window */
	{
		json_t *e, *mv = jget(pl, "move");
		double util[2] = { 0 };
		size_t i;

		json_array_foreach(jget(pl, "nodes"), i, e) {
			int n = (int)jint(e, "node");
			long long sum = node_ns(jget(rvm[0], "nodes"), n) + node_ns(jget(rvm[1], "nodes"), n);

			cr_assert_eq(jint(e, "ns"), sum, "node %d: its time is the two VMs'", n);
			cr_assert_eq(json_array_size(jget(e, "cpus")), 1);
			cr_assert_lt(fabs(json_real_value(jget(e, "utilization")) - (double)sum / 1e9 / w), 1e-6);
			util[n == node[1]] = json_real_value(jget(e, "utilization"));
		}
		{
			char *move = json_dumps(mv, JSON_COMPACT | JSON_ENCODE_ANY);

			fprintf(stderr, "kvmlab: recorded over %.3f s: node %d %.1f %% busy, node %d %.1f %%; move: %s\n",
				w, node[0], 100 * util[0], node[1], 100 * util[1], move);
			free(move);
		}
		/*
		 * CPU 1 ran a busy vCPU all along, CPU 0 only while mover was
		 * there (about half of mover's time): node 1's share is well
		 * above node 0's. As a ratio, not a difference: the window is
		 * the whole recording, which under a slow emulation is mostly
		 * vcpustat's own start (36.5 s for 7.8 s of VM life on an AMD
		 * EPYC host's TCG), and shrinks both shares alike.
		 */
		cr_assert_gt(util[1], 1.5 * util[0], "node %d %.3f, node %d %.3f: the busier node's utilization", node[1],
			     util[1], node[0], util[0]);
		if (!json_is_null(mv)) {
			json_t *from = find_by(jget(pl, "vms"), "vm", jget(mv, "vm"));
			double load;

			cr_assert_eq(jint(mv, "from_node"), node[1], "the move is off the busier node");
			cr_assert_eq(jint(mv, "to_node"), node[0]);
			cr_assert_not_null(from);
			load = (double)node_ns(jget(from, "nodes"), node[1]) / 1e9 / w;
			cr_assert_lt(fabs(json_real_value(jget(mv, "busy_vcpus")) - load), 1e-6);
			cr_assert_lt(fabs(json_real_value(jget(jget(mv, "after"), "from")) - (util[1] - load)), 1e-6);
			cr_assert_lt(fabs(json_real_value(jget(jget(mv, "after"), "to")) - (util[0] + load)), 1e-6);
		}
	}
	json_decref(rep);
}

/* ---- SMT sharing on real KVM events (issue 12 item 5) ---- */

/* The run time (/proc schedstat, read by microvm as each vCPU thread's last act) of vCPU i of --json file path. */
static long long microvm_run_ns(const char *path, size_t i)
{
	json_t *r = load(path);
	long long ns =
	    jint(jget(json_array_get(jget(json_array_get(jget(r, "vms"), 0), "vcpus"), i), "schedstat"), "run_ns");

	json_decref(r);
	return ns;
}

/* VM pid's vCPU-time on CPUs 0 and 1 as vcpustat placed it (vm_cpu): printed beside schedstat's. */
static double smt_oncpu_s(struct vcpustat *vs, pid_t pid)
{
	__u64 sum = 0, ns;

	for (__u32 cpu = 0; cpu < 2; cpu++) {
		struct vcpustat_place_key k = { .tgid = (__u32)pid, .cpu = cpu };

		if (bpf_map_lookup_elem(vcpustat_map_fd(vs, "vm_cpu"), &k, &ns) == 0)
			sum += ns;
	}
	return sum / 1e9;
}

static struct vcpustat_vm smt_vm(struct vcpustat *vs, pid_t pid)
{
	struct vcpustat_vm vm;
	__u32 key = (__u32)pid;

	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &key, &vm), 0, "vcpustat knows VM %d", (int)pid);
	return vm;
}

/*
 * Two vCPU threads ran side by side at most for the shorter of their run
 * times (whole lives: total_a, total_b), and at least for what they both ran
 * between the instant the test read their run times (/proc schedstat: at_a,
 * at_b) and their end, less that interval's length: the kernel's accounting
 * bounds the overlap that vcpustat measured (in vCPU-time: times 2 for two
 * vCPUs of one VM).
 */
static void assert_overlap(const char *what, long long got, const long long total[2], const long long at[2],
			   long long interval, int vcpu_ns_per_ns)
{
	long long lo = (total[0] - at[0] + total[1] - at[1] - interval) * vcpu_ns_per_ns;
	long long hi = (total[0] < total[1] ? total[0] : total[1]) * vcpu_ns_per_ns, slack = interval / 100;

	fprintf(stderr,
		"kvmlab: SMT: %s: %.4f s; the kernel's run times (%.4f s and %.4f s, of which %.4f s and %.4f s in "
		"the last %.4f s) bound it to [%.4f, %.4f] s\n",
		what, got / 1e9, total[0] / 1e9, total[1] / 1e9, (total[0] - at[0]) / 1e9, (total[1] - at[1]) / 1e9,
		interval / 1e9, lo / 1e9, hi / 1e9);
	/*
	 * The bound must say something. Not "more than half": when the lab's
	 * emulation slows down, the busy vCPUs get 75 % of their CPUs and the
	 * bound falls below half of the interval (1.5343 s of 3.1702 s, with
	 * 2.0367 s measured, in one of twelve runs on 2026-11-29).
	 */
	cr_assert_gt(lo, interval / 4 * vcpu_ns_per_ns,
		     "%s: both vCPUs ran most of the last %.3f s (the lower bound says something)", what,
		     interval / 1e9);
	cr_assert_geq(got, lo - slack, "%s: %lld ns >= %lld ns, the least overlap their run times allow", what, got,
		      lo);
	cr_assert_leq(got, hi + slack, "%s: %lld ns <= %lld ns, the shorter run time", what, got, hi);
}

/*
 * Run times of threads tids[0] and tids[1] now (at[]), and the time
 * (CLOCK_MONOTONIC) taken before they are read: the interval from it to
 * the end then holds all the run time counted after at[], however long this
 * thread waited for a CPU between the reads (the vCPUs keep both busy). Taken
 * after the reads, a wait there would shorten the interval and raise the
 * lower bound above the truth (with that order, CI once measured 2.4131 s
 * against "at least" 2.6355 s, 2026-11-29).
 */
static __u64 runs_now(const pid_t tids[2], long long at[2])
{
	__u64 t = mono_ns();

	for (int i = 0; i < 2; i++) {
		struct schedstat st;

		cr_assert_eq(read_schedstat((int)tids[i], &st), 0, "schedstat of thread %d", (int)tids[i]);
		at[i] = (long long)st.run_ns;
	}
	return t;
}

/*
 * SMT sharing, live, with real exits and the guest kernel's scheduler: the
 * time a vCPU ran while its core's other hardware thread ran a vCPU of
 * another VM, or of its own. The lab has no SMT (QEMU's TCG emulates no
 * topoext), so the test declares its CPUs 0 and 1 hardware threads of one
 * core (vcpustat_set_topology(), which the live tools call with what sysfs
 * says; reading sysfs is tested in host_views). With that declared:
 * - "left" (one busy vCPU pinned to CPU 0) and "right" (one on CPU 1), run
 *   together: each VM's smt_other_ns is the time the two vCPUs overlapped,
 *   the same for both, within the bounds their schedstat run times give
 *   (assert_overlap); neither has smt_same;
 * - "pair" (two busy vCPUs, pinned to CPUs 0 and 1), alone: its smt_same_ns
 *   is twice their overlap (vCPU-time), within the same bounds; its
 *   smt_other_ns is 0, and left's and right's stay as they were.
 */
Test(kvmlab, smt_sharing_on_declared_siblings_is_bounded_by_schedstat)
{
	static const char *names[2] = { "left", "right" };
	char args[3][1024], ready[3][256], out[3][256]; /* args: both paths whole */
	int node[2] = { 0, 0 }, llc[2] = { 0, 0 }, core[2] = { 0, 0 };
	struct cpu_topology t = { .nr_cpus = 2, .node = node, .llc = llc, .core = core };
	struct vcpustat_vm vm[3], again[2];
	pid_t sup[3], pid[3], tids[3][2], lr[2];
	long long run[3][2], at[2][2], interval[2];
	struct vcpustat *vs;
	__u64 t0;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_exit_unavailable());
	SKIP_UNLESS(two_cpus_unavailable());
	lab_mkdir();
	cr_assert_eq(vcpustat_open(&vs, NULL), 0);
	cr_assert_gt(vcpustat_attach(vs), 0);
	cr_assert_eq(vcpustat_set_topology(vs, &t), 2, "CPUs 0 and 1 declared one core's two threads");
	for (int m = 0; m < 3; m++) {
		const char *name = m < 2 ? names[m] : "pair";
		char file[64];

		snprintf(file, sizeof(file), "%s.ready", name);
		snprintf(ready[m], sizeof(ready[m]), "%s", in_dir(file));
		snprintf(file, sizeof(file), "%s.json", name);
		snprintf(out[m], sizeof(out[m]), "%s", in_dir(file));
		if (m < 2)
			snprintf(args[m], sizeof(args[m]),
				 "--vcpus 1 --pin %d --idle-us 0 --chunk-iters 2000000 --duration 3 -name guest=%s "
				 "--ready '%s' --json '%s'",
				 m, name, ready[m], out[m]);
		else
			snprintf(args[m], sizeof(args[m]),
				 "--vcpus 2 --idle-us 0 --chunk-iters 2000000 --duration 3 -name guest=%s "
				 "--ready '%s' --json '%s'",
				 name, ready[m], out[m]);
	}

	/* left and right together */
	for (int m = 0; m < 2; m++)
		sup[m] = spawn_microvm(args[m]);
	for (int m = 0; m < 2; m++) {
		pid[m] = ready_vm(ready[m], tids[m], 1);
		lr[m] = tids[m][0];
	}
	t0 = runs_now(lr, at[0]);
	for (int m = 0; m < 2; m++)
		cr_assert_eq(wait_exit(sup[m]), 0, "microvm %s", args[m]);
	interval[0] = (long long)(mono_ns() - t0);
	for (int m = 0; m < 2; m++) {
		run[m][0] = microvm_run_ns(out[m], 0);
		vm[m] = smt_vm(vs, pid[m]);
		/* what the overlaps are made of: each vCPU's time on its CPU, vcpustat's and the kernel's */
		fprintf(stderr, "kvmlab: SMT: %s on a CPU: %.4f s (vcpustat), %.4f s (schedstat)\n", names[m],
			smt_oncpu_s(vs, pid[m]), run[m][0] / 1e9);
	}

	/* pair alone, its vCPUs on CPUs 0 and 1 */
	sup[2] = spawn_microvm(args[2]);
	pid[2] = ready_vm(ready[2], tids[2], 2);
	pin_task(tids[2][0], 0);
	pin_task(tids[2][1], 1);
	t0 = runs_now(tids[2], at[1]);
	cr_assert_eq(wait_exit(sup[2]), 0, "microvm %s", args[2]);
	interval[1] = (long long)(mono_ns() - t0);
	for (int i = 0; i < 2; i++)
		run[2][i] = microvm_run_ns(out[2], (size_t)i);
	vm[2] = smt_vm(vs, pid[2]);
	for (int m = 0; m < 2; m++)
		again[m] = smt_vm(vs, pid[m]);
	vcpustat_close(vs);

	cr_assert_eq(vm[0].smt_other_ns, vm[1].smt_other_ns,
		     "left and right: each overlap is charged to both VMs (%llu, %llu ns)",
		     (unsigned long long)vm[0].smt_other_ns, (unsigned long long)vm[1].smt_other_ns);
	{
		long long total[2] = { run[0][0], run[1][0] };

		assert_overlap("left beside right (smt_other_ns)", (long long)vm[0].smt_other_ns, total, at[0],
			       interval[0], 1);
	}
	for (int m = 0; m < 2; m++) {
		cr_assert_eq(vm[m].smt_same_ns, 0, "%s has one vCPU: never beside its own", names[m]);
		cr_assert_eq(again[m].smt_other_ns, vm[m].smt_other_ns, "%s had exited when pair ran", names[m]);
	}
	assert_overlap("pair's two vCPUs side by side (smt_same_ns, vCPU-time)", (long long)vm[2].smt_same_ns, run[2],
		       at[1], interval[1], 2);
	cr_assert_eq(vm[2].smt_other_ns, 0, "pair ran beside no other VM");
}
