// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tools/microvm end to end: real VM processes and vCPU threads on /dev/kvm,
 * checked from /proc while they run (through --ready) and through the JSON
 * report afterwards. Runs are short and pinned to one CPU; nothing asserts
 * on speed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "vcpu_fsm.h"

#define MAX_ARGS 40

/* One microvm run: its supervisor pid and the files it writes. */
static struct run {
	pid_t pid;
	char dir[64];
	char ready[96], report[96], out[96], err[96], held[96];
} run;

static const char *microvm_path(void)
{
	static char path[4096];
	const char *dir = getenv("VCPUSTAT_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/bin/microvm", dir && *dir ? dir : VCPUSTAT_BUILD_DIR);
	return path;
}

static void run_cleanup(void)
{
	if (run.pid > 0) { /* a failed test: do not leave a VM running */
		kill(run.pid, SIGKILL);
		waitpid(run.pid, NULL, 0);
		run.pid = 0;
	}
	if (run.dir[0]) {
		unlink(run.ready);
		unlink(run.report);
		unlink(run.out);
		unlink(run.err);
		unlink(run.held);
		rmdir(run.dir);
		run.dir[0] = '\0';
	}
}

/* Start microvm with args (NULL-terminated) plus --ready and --json files. */
static void start_microvm(const char *const *args, bool with_files)
{
	const char *argv[MAX_ARGS];
	int n = 0;

	snprintf(run.dir, sizeof(run.dir), "/tmp/vcpustat-microvm-XXXXXX");
	cr_assert_not_null(mkdtemp(run.dir), "mkdtemp: %s", strerror(errno));
	snprintf(run.ready, sizeof(run.ready), "%s/ready.json", run.dir);
	snprintf(run.report, sizeof(run.report), "%s/report.json", run.dir);
	snprintf(run.out, sizeof(run.out), "%s/stdout", run.dir);
	snprintf(run.err, sizeof(run.err), "%s/stderr", run.dir);
	snprintf(run.held, sizeof(run.held), "%s/held", run.dir);

	argv[n++] = microvm_path();
	for (; *args; args++)
		argv[n++] = *args;
	if (with_files) {
		argv[n++] = "--ready";
		argv[n++] = run.ready;
		argv[n++] = "--json";
		argv[n++] = run.report;
	}
	argv[n] = NULL;

	fflush(NULL);
	run.pid = fork();
	cr_assert_geq(run.pid, 0, "fork: %s", strerror(errno));
	if (run.pid == 0) {
		int out = open(run.out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(run.err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* if the test dies, so does the run */
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
}

/* Wait for the supervisor to exit; returns its exit status (fails on a signal or timeout). */
static int wait_microvm(double timeout_s)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int status;

	for (int i = 0; i < timeout_s * 50; i++) {
		pid_t r = waitpid(run.pid, &status, WNOHANG);

		cr_assert_geq(r, 0, "waitpid: %s", strerror(errno));
		if (r == run.pid) {
			run.pid = 0;
			cr_assert(WIFEXITED(status), "microvm was killed by signal %d", WTERMSIG(status));
			return WEXITSTATUS(status);
		}
		nanosleep(&pause, NULL);
	}
	cr_assert_fail("microvm did not exit within %.0f s", timeout_s);
	return -1;
}

static char *read_text(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static json_t *load_json(const char *path)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);

	cr_assert_not_null(j, "%s: %s (line %d)", path, jerr.text, jerr.line);
	return j;
}

/* Wait until microvm's file opt (--ready, --hold) exists at path (the supervisor must not exit first). */
static void wait_file(const char *opt, const char *path, double timeout_s)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	for (int i = 0; i < timeout_s * 50; i++) {
		if (access(path, F_OK) == 0)
			return;
		cr_assert_eq(waitpid(run.pid, NULL, WNOHANG), 0, "microvm exited before it wrote %s: %s", opt,
			     read_text(run.err));
		nanosleep(&pause, NULL);
	}
	cr_assert_fail("no %s file after %.0f s", opt, timeout_s);
}

static json_t *wait_ready(double timeout_s)
{
	wait_file("--ready", run.ready, timeout_s);
	return load_json(run.ready);
}

static long long jint(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	cr_assert(json_is_integer(v), "'%s' is missing or not an integer", key);
	return json_integer_value(v);
}

static json_t *jget(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	cr_assert_not_null(v, "'%s' is missing", key);
	return v;
}

/* exits[reason], 0 when absent */
static long long exits_of(json_t *vcpu, const char *reason)
{
	json_t *v = json_object_get(jget(vcpu, "exits"), reason);

	return v ? json_integer_value(v) : 0;
}

/* The last CPU this process may use: where live tests pin their vCPUs. */
static int pin_cpu(char *buf, size_t len)
{
	cpu_set_t set;
	int cpu = 0;

	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpu = c;
	snprintf(buf, len, "%d", cpu);
	return cpu;
}

/* "status" field of /proc/<pid>/task/<tid>/status, e.g. "Tgid" -> "1234" */
static char *status_field(int pid, int tid, const char *field)
{
	static char val[256];
	char path[96], *text, *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	text = read_text(path);
	cr_assert_not_null(text, "%s: %s", path, strerror(errno));
	snprintf(val, sizeof(val), "\n%s:", field);
	p = strstr(text, val);
	cr_assert_not_null(p, "%s has no %s", path, field);
	p += strlen(val);
	p += strspn(p, " \t");
	snprintf(val, sizeof(val), "%.*s", (int)strcspn(p, "\n"), p);
	return val;
}

/* Does /proc/<pid>/cmdline hold the arguments a, b next to each other? */
static bool cmdline_has(int pid, const char *a, const char *b)
{
	char path[64], buf[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (!strcmp(buf + i, a) && i + strlen(a) + 1 < n && !strcmp(buf + i + strlen(a) + 1, b))
			return true;
	return false;
}

/* What must hold for every vCPU of every report. */
static void check_vcpu_accounting(json_t *vm, json_t *vcpu, long long idle_us)
{
	long long halts = jint(vcpu, "halts"), halted = jint(vcpu, "halted_ns"), in_run = jint(vcpu, "kvm_run_ns");
	long long cut = json_is_true(jget(vcpu, "halt_cut_short")), sum = 0;
	const char *reason;
	json_t *n, *ss = jget(vcpu, "schedstat");

	json_object_foreach(jget(vcpu, "exits"), reason, n)
		sum += json_integer_value(n);
	cr_assert_eq(jint(vcpu, "kvm_runs"), sum, "every KVM_RUN call ends in one counted exit");
	cr_assert_gt(exits_of(vcpu, "IO"), 0, "the guest asks for work by port I/O");
	cr_assert_eq(halts, exits_of(vcpu, "HLT"));
	cr_assert_geq(halted, (halts - cut) * idle_us * 1000, "each completed halt sleeps >= --idle-us: %lld halts, %lld ns",
		      halts, halted);
	cr_assert_leq(in_run + halted, jint(vm, "wall_ns"), "time in KVM_RUN and halted do not overlap");
	cr_assert_gt(in_run, 0);
	cr_assert_geq(jint(vcpu, "busy_periods"), halts, "a busy period before each halt");
	cr_assert_leq(jint(vcpu, "busy_periods"), halts + 1);
	cr_assert_gt(jint(vcpu, "chunks"), 0);
	cr_assert_geq(jint(vcpu, "chunk_iters"), 1);
	cr_assert(json_is_object(ss), "schedstat of the vCPU thread");
	cr_assert_gt(jint(ss, "run_ns"), 0);
	cr_assert_gt(jint(ss, "timeslices"), 0);
	jint(ss, "wait_ns");
	/*
	 * A completed halt sleeps (ppoll) unless the thread was kept off its CPU
	 * past its end (370 halts, 369 sleeps was seen): so some sleeps while it
	 * ran. Each run on a CPU but the last began with a switch.
	 */
	if (idle_us > 0 && halts - cut > 0)
		cr_assert_gt(jint(vcpu, "run_sleeps"), 0, "%lld completed halts, no sleep while it ran", halts - cut);
	cr_assert_leq(jint(vcpu, "run_sleeps"), jint(ss, "voluntary_switches"), "sleeps while it ran, in its life");
	cr_assert_geq(jint(ss, "voluntary_switches") + jint(ss, "involuntary_switches") + 1, jint(ss, "timeslices"),
		      "switches out %lld + %lld, runs on a CPU %lld", jint(ss, "voluntary_switches"),
		      jint(ss, "involuntary_switches"), jint(ss, "timeslices"));
}

TestSuite(microvm, .fini = run_cleanup, .timeout = 120);

Test(microvm, two_vms_two_vcpus_are_two_processes_with_named_vcpu_threads)
{
	char cpu[16];
	const char *args[] = { "--vms", "2", "--vcpus", "2", "--busy-us", "2000", "--idle-us", "2000",
			       "--duration", "1", "--pin", cpu, "-name", "guest=mvt,debug-threads=on", NULL };
	json_t *ready, *report, *vms;
	int pids[2];

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	ready = wait_ready(60);

	/* While it runs: two VM processes, children of the supervisor, each with its vCPU threads. */
	cr_assert_eq(jint(ready, "supervisor_pid"), run.pid);
	vms = jget(ready, "vms");
	cr_assert_eq(json_array_size(vms), 2);
	for (int i = 0; i < 2; i++) {
		json_t *vm = json_array_get(vms, i), *vcpus = jget(vm, "vcpus");
		char name[32], guest[64], ppid[16];

		pids[i] = (int)jint(vm, "pid");
		snprintf(name, sizeof(name), "mvt-%d", i);
		snprintf(guest, sizeof(guest), "guest=%s,debug-threads=on", name);
		snprintf(ppid, sizeof(ppid), "%d", run.pid);
		cr_assert_eq(jint(vm, "index"), i);
		cr_assert_str_eq(json_string_value(jget(vm, "name")), name);
		cr_assert_neq(pids[i], run.pid, "each VM is its own process");
		cr_assert_str_eq(status_field(pids[i], pids[i], "PPid"), ppid);
		cr_assert(cmdline_has(pids[i], "-name", guest), "VM %d's cmdline carries -name %s", i, guest);
		cr_assert_eq(json_array_size(vcpus), 2);
		for (int j = 0; j < 2; j++) {
			json_t *vcpu = json_array_get(vcpus, j);
			int tid = (int)jint(vcpu, "tid");
			char path[96], comm[16] = { 0 }, want[16], *text;

			cr_assert_eq(jint(vcpu, "index"), j);
			snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pids[i], tid);
			text = read_text(path);
			cr_assert_not_null(text, "vCPU thread %d is a thread of VM pid %d", tid, pids[i]);
			snprintf(want, sizeof(want), "CPU %d/KVM\n", j);
			cr_assert_str_eq(text, want);
			memcpy(comm, text, strcspn(text, "\n"));
			cr_assert_eq(vcpu_index_from_comm(comm), j, "vcpustat parses the thread name");
			snprintf(want, sizeof(want), "%d", pids[i]);
			cr_assert_str_eq(status_field(pids[i], tid, "Tgid"), want);
		}
	}
	cr_assert_neq(pids[0], pids[1]);

	/* Afterwards: the report says what each vCPU did. */
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	report = load_json(run.report);
	cr_assert_str_eq(json_string_value(jget(report, "stopped_by")), "duration");
	cr_assert_eq(jint(jget(report, "options"), "vms"), 2);
	cr_assert_eq(jint(jget(report, "options"), "idle_us"), 2000);
	vms = jget(report, "vms");
	cr_assert_eq(json_array_size(vms), 2);
	for (int i = 0; i < 2; i++) {
		json_t *vm = json_array_get(vms, i), *rvcpus = jget(vm, "vcpus");
		json_t *ready_vcpus = jget(json_array_get(jget(ready, "vms"), i), "vcpus");

		cr_assert_eq(jint(vm, "pid"), pids[i]);
		cr_assert_str_eq(json_string_value(jget(vm, "stopped_by")), "duration");
		cr_assert_leq(jint(vm, "wall_ns"), jint(report, "wall_ns"));
		cr_assert_geq(jint(vm, "running_ns"), 1000000000LL, "--duration 1 counts from ready");
		cr_assert_eq(json_array_size(rvcpus), 2);
		for (int j = 0; j < 2; j++) {
			json_t *vcpu = json_array_get(rvcpus, j);

			cr_assert_eq(jint(vcpu, "tid"), jint(json_array_get(ready_vcpus, j), "tid"));
			cr_assert_gt(exits_of(vcpu, "HLT"), 0, "the guest halts between busy periods");
			check_vcpu_accounting(vm, vcpu, 2000);
		}
	}
	json_decref(ready);
	json_decref(report);
}

Test(microvm, idle_zero_never_halts_and_fixed_chunks_are_used)
{
	char cpu[16];
	const char *args[] = { "--idle-us", "0", "--chunk-iters", "7", "--duration", "0.5", "--pin", cpu, NULL };
	json_t *report, *vm, *vcpu;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	report = load_json(run.report);
	cr_assert_eq(jint(jget(report, "options"), "chunk_iters"), 7);
	vm = json_array_get(jget(report, "vms"), 0);
	cr_assert_str_eq(json_string_value(jget(vm, "name")), "microvm", "the default name, one VM: no suffix");
	vcpu = json_array_get(jget(vm, "vcpus"), 0);
	cr_assert_not_null(vcpu);
	cr_assert_eq(exits_of(vcpu, "HLT"), 0);
	cr_assert_eq(jint(vcpu, "halts"), 0);
	cr_assert_eq(jint(vcpu, "halted_ns"), 0);
	cr_assert_eq(jint(vcpu, "busy_periods"), 1);
	cr_assert_eq(jint(vcpu, "chunk_iters"), 7);
	cr_assert_eq(jint(vcpu, "chunks"), exits_of(vcpu, "IO"), "every I/O exit hands out a chunk");
	check_vcpu_accounting(vm, vcpu, 0);
	json_decref(report);
}

/*
 * --hold: at the stop every vCPU thread reads its schedstat, then blocks;
 * the file appears, the VM waits (no report yet) with its threads asleep and
 * running nothing, and once the file is gone it reports and exits.
 */
Test(microvm, hold_keeps_the_vcpu_threads_blocked_until_the_file_goes)
{
	char cpu[16];
	const char *args[] = { "--vcpus", "2", "--duration", "0.3", "--pin", cpu, "--hold", run.held, NULL };
	struct schedstat before[2];
	long long tids[2];
	json_t *ready, *report, *vm, *rvm;
	int pid;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	ready = wait_ready(60);
	vm = json_array_get(jget(ready, "vms"), 0);
	pid = (int)jint(vm, "pid");
	for (int i = 0; i < 2; i++)
		tids[i] = jint(json_array_get(jget(vm, "vcpus"), (size_t)i), "tid");
	wait_file("--hold", run.held, 60);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(status_field(pid, (int)tids[i], "State")[0], 'S', "held vCPU %d sleeps: %s", i,
			     status_field(pid, (int)tids[i], "State"));
		cr_assert_eq(read_schedstat((int)tids[i], &before[i]), 0, "schedstat of vCPU %d", i);
	}
	usleep(300 * 1000);
	cr_assert_eq(waitpid(run.pid, NULL, WNOHANG), 0, "microvm waits while the file is there");
	cr_assert_neq(access(run.report, F_OK), 0, "no report while held");
	for (int i = 0; i < 2; i++) {
		struct schedstat after;

		cr_assert_eq(read_schedstat((int)tids[i], &after), 0, "schedstat of vCPU %d", i);
		cr_assert_eq(after.run_ns, before[i].run_ns, "held vCPU %d ran nothing in 300 ms", i);
	}
	cr_assert_eq(unlink(run.held), 0);
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	report = load_json(run.report);
	rvm = json_array_get(jget(report, "vms"), 0);
	for (int i = 0; i < 2; i++) {
		json_t *vcpu = json_array_get(jget(rvm, "vcpus"), (size_t)i);

		cr_assert_eq(jint(vcpu, "tid"), tids[i]);
		cr_assert_leq(jint(jget(vcpu, "schedstat"), "run_ns"), (long long)before[i].run_ns,
			      "vCPU %d read its schedstat before it was held", i);
	}
	json_decref(report);
	json_decref(ready);
}

static long long op_of(json_t *vcpu, const char *op)
{
	return jint(jget(vcpu, "ops"), op);
}

static long long kvm_stat(json_t *vcpu, const char *name)
{
	return jint(jget(vcpu, "kvm_stats"), name);
}

/*
 * KVM's own counters: either an object of them, or null and why. Where the
 * KVM runs the guest in (emulated) hardware -- the KVM lab, $KVMLAB -- they
 * must equal what microvm saw exit to it; a software KVM may count otherwise.
 */
static void check_kvm_stats(json_t *vcpu)
{
	json_t *stats = jget(vcpu, "kvm_stats");

	if (json_is_null(stats)) {
		cr_assert(json_is_string(json_object_get(vcpu, "kvm_stats_error")), "null kvm_stats says why");
		cr_assert(json_is_null(jget(vcpu, "kvm_hists")), "no histograms without the counters");
		return;
	}
	cr_assert(json_is_object(stats));
	cr_assert(json_is_object(jget(vcpu, "kvm_hists")), "the histograms' totals with the counters");
	cr_assert_geq(kvm_stat(vcpu, "exits"), 0);
	if (!getenv("KVMLAB"))
		return;
	/* a halt that waited is a halt: KVM samples halt_wait_hist once for it */
	cr_assert_leq(jint(jget(vcpu, "kvm_hists"), "halt_wait_hist"), kvm_stat(vcpu, "halt_exits"));
	cr_assert_eq(kvm_stat(vcpu, "io_exits"), exits_of(vcpu, "IO"));
	cr_assert_eq(kvm_stat(vcpu, "halt_exits"), exits_of(vcpu, "HLT"));
	cr_assert_eq(kvm_stat(vcpu, "mmio_exits"), exits_of(vcpu, "MMIO"));
	cr_assert_geq(kvm_stat(vcpu, "exits"),
		      exits_of(vcpu, "IO") + exits_of(vcpu, "HLT") + exits_of(vcpu, "MMIO") + op_of(vcpu, "cpuid") +
			      op_of(vcpu, "rdmsr") + op_of(vcpu, "wrmsr") + op_of(vcpu, "touch"),
		      "every exit the guest caused is one of KVM's exits");
}

Test(microvm, mix_runs_each_op_once_per_chunk_and_counts_it)
{
	char cpu[16];
	const char *args[] = { "--mix", "all", "--vcpus", "2", "--chunk-iters", "3", "--busy-us", "500", "--idle-us",
			       "500", "--duration", "0.5", "--pin", cpu, NULL };
	static const char *const ops[] = { "cpuid", "rdmsr", "wrmsr", "mmio", "touch" };
	json_t *report, *vm, *vcpu, *mix;
	size_t i;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	report = load_json(run.report);
	mix = jget(jget(report, "options"), "mix");
	cr_assert_eq(json_array_size(mix), 5, "all = the five ops");
	vm = json_array_get(jget(report, "vms"), 0);
	json_array_foreach(jget(vm, "vcpus"), i, vcpu) {
		long long chunks = jint(vcpu, "chunks");

		check_vcpu_accounting(vm, vcpu, 500);
		cr_assert_eq(op_of(vcpu, "mmio"), exits_of(vcpu, "MMIO"), "each MMIO write reached the VMM once");
		cr_assert(json_is_string(jget(vcpu, "last_exit")), "vCPU %zu: its last exit is named", i);
		cr_assert_gt(exits_of(vcpu, json_string_value(jget(vcpu, "last_exit"))), 0,
			     "vCPU %zu: its last exit is one of its exits", i);
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			/* once per chunk; the stop may cut the last chunk short */
			cr_assert_leq(op_of(vcpu, ops[k]), chunks, "vCPU %zu: %s %lld, chunks %lld", i, ops[k],
				      op_of(vcpu, ops[k]), chunks);
			cr_assert_geq(op_of(vcpu, ops[k]), chunks - 1, "vCPU %zu: %s %lld, chunks %lld", i, ops[k],
				      op_of(vcpu, ops[k]), chunks);
		}
		check_kvm_stats(vcpu);
	}
	json_decref(report);
}

Test(microvm, without_mix_no_ops_and_kvm_counters_still_reported)
{
	char cpu[16];
	const char *args[] = { "--duration", "0.3", "--pin", cpu, NULL };
	json_t *report, *vcpu;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	report = load_json(run.report);
	cr_assert_eq(json_array_size(jget(jget(report, "options"), "mix")), 0);
	vcpu = json_array_get(jget(json_array_get(jget(report, "vms"), 0), "vcpus"), 0);
	cr_assert_not_null(vcpu);
	cr_assert_eq(op_of(vcpu, "cpuid") + op_of(vcpu, "rdmsr") + op_of(vcpu, "wrmsr") + op_of(vcpu, "mmio") +
			     op_of(vcpu, "touch"),
		     0);
	cr_assert_eq(exits_of(vcpu, "MMIO"), 0);
	check_kvm_stats(vcpu);
	json_decref(report);
}

Test(microvm, pin_puts_every_vcpu_thread_on_the_cpu)
{
	char cpu[16];
	const char *args[] = { "--vms", "2", "--vcpus", "3", "--duration", "0.5", "--pin", cpu, NULL };
	json_t *ready, *vms;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	ready = wait_ready(60);
	vms = jget(ready, "vms");
	cr_assert_eq(json_array_size(vms), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *vm = json_array_get(vms, i), *vcpus = jget(vm, "vcpus");

		cr_assert_eq(json_array_size(vcpus), 3);
		for (size_t j = 0; j < 3; j++) {
			int tid = (int)jint(json_array_get(vcpus, j), "tid");

			cr_assert_str_eq(status_field((int)jint(vm, "pid"), tid, "Cpus_allowed_list"), cpu,
					 "vCPU thread %d", tid);
		}
	}
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	json_decref(ready);
}

Test(microvm, sigterm_stops_cleanly_with_a_report)
{
	char cpu[16];
	const char *args[] = { "--vcpus", "2", "--busy-us", "1000", "--idle-us", "1000", "--pin", cpu, "-name",
			       "solo", NULL };
	struct timespec run_a_bit = { 0, 300 * 1000 * 1000 };
	json_t *ready, *report, *vm;
	int vm_pid;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	ready = wait_ready(60);
	vm_pid = (int)jint(json_array_get(jget(ready, "vms"), 0), "pid");
	cr_assert(cmdline_has(vm_pid, "-name", "guest=solo,debug-threads=on"), "-name NAME is passed on as guest=NAME");
	nanosleep(&run_a_bit, NULL);
	cr_assert_eq(kill(run.pid, SIGTERM), 0);
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	cr_assert_eq(kill(vm_pid, 0), -1, "the VM process is gone (reaped by the supervisor)");

	report = load_json(run.report);
	cr_assert_str_eq(json_string_value(jget(report, "stopped_by")), "SIGTERM");
	cr_assert(json_is_null(jget(jget(report, "options"), "duration_s")));
	vm = json_array_get(jget(report, "vms"), 0);
	cr_assert_str_eq(json_string_value(jget(vm, "name")), "solo");
	cr_assert_str_eq(json_string_value(jget(vm, "stopped_by")), "SIGTERM");
	cr_assert_eq(json_array_size(jget(vm, "vcpus")), 2);
	for (size_t j = 0; j < 2; j++)
		check_vcpu_accounting(vm, json_array_get(jget(vm, "vcpus"), j), 1000);
	json_decref(ready);
	json_decref(report);
}

Test(microvm, sigterm_ends_a_long_halt_at_once)
{
	char cpu[16];
	const char *args[] = { "--busy-us", "100", "--idle-us", "3600000000", "--pin", cpu, NULL };
	struct timespec let_it_halt = { 0, 200 * 1000 * 1000 };
	json_t *report, *vm, *vcpu;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	json_decref(wait_ready(60));
	nanosleep(&let_it_halt, NULL);
	cr_assert_eq(kill(run.pid, SIGTERM), 0);
	/* An hour-long halt: only the kick (SIGUSR1 unblocked in the sleep) ends it in time. */
	cr_assert_eq(wait_microvm(60), 0, "stderr: %s", read_text(run.err));
	report = load_json(run.report);
	vm = json_array_get(jget(report, "vms"), 0);
	vcpu = json_array_get(jget(vm, "vcpus"), 0);
	cr_assert_not_null(vcpu);
	cr_assert_eq(jint(vcpu, "halts"), 1);
	cr_assert(json_is_true(jget(vcpu, "halt_cut_short")));
	cr_assert_gt(jint(vcpu, "halted_ns"), 0);
	check_vcpu_accounting(vm, vcpu, 3600000000LL);
	json_decref(report);
}

Test(microvm, a_vm_that_dies_fails_the_run_and_stops_the_others)
{
	char cpu[16];
	const char *args[] = { "--vms", "2", "--pin", cpu, NULL };
	json_t *ready;
	int pid0, pid1;
	char *err;

	SKIP_UNLESS(kvm_unavailable());
	pin_cpu(cpu, sizeof(cpu));
	start_microvm(args, true);
	ready = wait_ready(60);
	pid0 = (int)jint(json_array_get(jget(ready, "vms"), 0), "pid");
	pid1 = (int)jint(json_array_get(jget(ready, "vms"), 1), "pid");
	cr_assert_eq(kill(pid0, SIGKILL), 0);
	cr_assert_eq(wait_microvm(60), 1, "a lost VM is a failed run");
	cr_assert_eq(kill(pid1, 0), -1, "the other VM was stopped and reaped");
	err = read_text(run.err);
	cr_assert(strstr(err, "microvm-0") && strstr(err, "signal 9"), "stderr names the VM and why: %s", err);
	cr_assert_neq(access(run.report, F_OK), 0, "no report for a failed run");
	json_decref(ready);
}

Test(microvm, bad_options_exit_2_naming_the_option)
{
	static const struct {
		const char *args[5];
		const char *says;
	} cases[] = {
		{ { "--vms", "0" }, "--vms" },
		{ { "--vms", "65" }, "--vms" },
		{ { "--vcpus", "two" }, "--vcpus" },
		{ { "--busy-us", "0" }, "--busy-us" },
		{ { "--idle-us", "-5" }, "--idle-us" },
		{ { "--chunk-iters", "0" }, "--chunk-iters" },
		{ { "--pin", "100000" }, "--pin" },
		{ { "--duration", "0" }, "--duration" },
		{ { "--duration", "soon" }, "--duration" },
		{ { "-name", "guest=" }, "-name" },
		{ { "-name", "a/b" }, "-name" },
		{ { "-name", "a123456789b123456789c123456789d123456789e123456789" }, "longer than 48" },
		{ { "-name", "guest=x,color=red" }, "-name" },
		{ { "--vms" }, "--vms" },
		{ { "--frobnicate" }, "--frobnicate" },
		{ { "stray" }, "stray" },
		{ { "--json", "/nonexistent-dir/report.json" }, "--json" },
		{ { "--mix", "cpuid,frob" }, "frob" },
		{ { "--mix", "" }, "--mix" },
		{ { "--mix", "mmio," }, "--mix" },
		{ { "--vms", "2", "--hold", "/tmp/held" }, "--hold" },
		{ { "--hold", "/nonexistent-dir/held" }, "--hold" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *err;

		start_microvm(cases[i].args, false);
		cr_assert_eq(wait_microvm(30), 2, "case %zu (%s %s)", i, cases[i].args[0],
			     cases[i].args[1] ? cases[i].args[1] : "");
		err = read_text(run.err);
		cr_assert(err && strstr(err, cases[i].says), "case %zu: stderr names '%s': %s", i, cases[i].says, err);
		run_cleanup();
	}

	{
		const char *help[] = { "--help", NULL };

		start_microvm(help, false);
		cr_assert_eq(wait_microvm(30), 0);
		cr_assert(strstr(read_text(run.out), "--vms"), "--help teaches the options");
	}
}
