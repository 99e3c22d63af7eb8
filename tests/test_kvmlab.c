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
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"

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
} lab;

static void lab_cleanup(void)
{
	char cmd[128];

	if (lab.recorder > 0) {
		kill(lab.recorder, SIGKILL);
		waitpid(lab.recorder, NULL, 0);
		lab.recorder = 0;
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

/* Start `vcpustat record` and wait until it is attached (it creates the file then). */
static void start_recorder(const char *sht)
{
	char bin[512];
	struct stat st;

	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	fflush(NULL);
	lab.recorder = fork();
	cr_assert_geq(lab.recorder, 0, "fork: %s", strerror(errno));
	if (lab.recorder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(bin, bin, "record", "-q", "--ringbuf", "64M", "-o", sht, (char *)NULL);
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
		long long vm_io = 0, vm_hlt = 0, vm_mmio = 0, vm_exits = 0;

		rvm = find_by(jget(rep, "vms"), "vm", jget(vm, "name"));
		cr_assert_not_null(rvm, "vcpustat saw VM %s", name);
		json_array_foreach(jget(vm, "vcpus"), j, vcpu) {
			json_t *kvm = jget(vcpu, "kvm_stats"), *mexits = jget(vcpu, "exits"), *ops = jget(vcpu, "ops");
			long long idx = jint(vcpu, "index"), npf = 0, msr = 0, seen;
			json_t *rec;

			cr_assert(json_is_object(kvm), "KVM's counters for %s vCPU %lld: %s", name, idx,
				  json_string_value(json_object_get(vcpu, "kvm_stats_error")));
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
				"userspace %lld = %lld, MMIO %lld = %lld\n",
				name, idx, seen, jint(kvm, "exits"), n->io, jint0(rec, n->io), jint(kvm, "io_exits"),
				jint0(mexits, "IO"), n->hlt, jint0(rec, n->hlt), jint(kvm, "halt_exits"),
				jint0(mexits, "HLT"), n->irq, jint0(rec, n->irq), jint(kvm, "irq_exits"), n->cpuid,
				jint0(rec, n->cpuid), jint(ops, "cpuid"), msr, jint(ops, "rdmsr") + jint(ops, "wrmsr"), npf,
				jint(ops, "mmio"), jint(ops, "touch"), jint(rvcpu, "userspace_exits"),
				jint(vcpu, "kvm_runs"), jint(kvm, "mmio_exits"), jint0(mexits, "MMIO"));

			cr_assert_eq(seen, jint(kvm, "exits"), "%s vCPU %lld: vcpustat's exits by reason, summed = KVM's exits",
				     name, idx);
			cr_assert_eq(jint(rvcpu, "kvm_exits"), jint(kvm, "exits"), "%s vCPU %lld: report's kvm_exits", name,
				     idx);
			cr_assert_eq(jint0(rec, n->io), jint(kvm, "io_exits"), "%s vCPU %lld: %s = io_exits", name, idx,
				     n->io);
			cr_assert_eq(jint0(rec, n->io), jint0(mexits, "IO"), "%s vCPU %lld: %s = microvm's IO", name, idx,
				     n->io);
			cr_assert_eq(jint0(rec, n->hlt), jint(kvm, "halt_exits"), "%s vCPU %lld: %s = halt_exits", name, idx,
				     n->hlt);
			cr_assert_eq(jint0(rec, n->hlt), jint0(mexits, "HLT"), "%s vCPU %lld: %s = microvm's HLT", name, idx,
				     n->hlt);
			cr_assert_eq(jint(kvm, "mmio_exits"), jint0(mexits, "MMIO"), "%s vCPU %lld: mmio_exits = microvm's MMIO",
				     name, idx);
			cr_assert_eq(jint(ops, "mmio"), jint0(mexits, "MMIO"));
			cr_assert_eq(jint0(rec, n->irq), jint(kvm, "irq_exits"), "%s vCPU %lld: %s = irq_exits", name, idx,
				     n->irq);
			cr_assert_eq(jint0(rec, n->cpuid), jint(ops, "cpuid"), "%s vCPU %lld: %s = the guest's cpuid", name,
				     idx, n->cpuid);
			cr_assert_eq(msr, jint(ops, "rdmsr") + jint(ops, "wrmsr"), "%s vCPU %lld: msr = rdmsr + wrmsr", name,
				     idx);
			cr_assert_geq(npf, jint(ops, "mmio") + jint(ops, "touch"),
				      "%s vCPU %lld: a nested page fault for every MMIO write and touch", name, idx);
			cr_assert_gt(jint(ops, "cpuid"), 0, "the mix ran");
			cr_assert_eq(jint(rvcpu, "userspace_exits"), jint(vcpu, "kvm_runs"),
				     "%s vCPU %lld: a userspace exit for every return from KVM_RUN", name, idx);
			vm_io += jint0(rec, n->io);
			vm_hlt += jint0(rec, n->hlt);
			vm_mmio += jint(kvm, "mmio_exits");
			vm_exits += seen;
			json_decref(rec);
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
