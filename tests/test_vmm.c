// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The VMM's other threads, live (issue 12 item 4): emulator and I/O threads
 * and vhost workers found by user space, their time on a CPU and waiting for
 * one, and who kept them waiting. Exact values through the injection
 * program (and the same through user-space replay); then real threads
 * against the kernel's own accounting (/proc/<tid>/schedstat).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "helpers.h"
#include "live/live.h"
#include "model/summary.h"
#include "record/record.h"
#include "export/export.h"
#include "sht/sht.h"

#define VM 100
#define VCPU 101
#define EMU 110
#define VHOST 120

static struct vcpustat *vs;

static void open_injection(void)
{
	int err;

	SKIP_UNLESS(bpf_unavailable());
	err = vcpustat_open(&vs, NULL);
	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
}

static void close_vs(void)
{
	vcpustat_close(vs);
	vs = NULL;
}

TestSuite(vmm, .init = open_injection, .fini = close_vs);

static struct vcpustat_event evs[64];
static size_t nevs;

static struct vcpustat_event *add(__u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2, __u64 a0,
				  __u64 a1, const char *comm)
{
	struct vcpustat_event *ev = &evs[nevs++];

	cr_assert_leq(nevs, sizeof(evs) / sizeof(evs[0]));
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->ts = ts;
	ev->cpu = cpu;
	ev->tid = tid;
	ev->tgid = tgid;
	ev->tid2 = tid2;
	ev->tgid2 = tid2;
	ev->arg0 = a0;
	ev->arg1 = a1;
	if (type == VCPUSTAT_EV_SWITCH)
		ev->arg2 = 1; /* prev's cgroup id */
	snprintf(ev->comm, sizeof(ev->comm), "%s", comm ? comm : "");
	cr_assert_eq(vcpustat_inject(vs, ev), 0);
	return ev;
}

/* A wakeup or move of tid to cpu a0 that saw runner (tid2) on that CPU, as the kernel's program does at level vcpu. */
static void add_seen(__u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 runner, __u64 a0, __u64 a1)
{
	struct vcpustat_event *ev = &evs[nevs];

	add(type, ts, cpu, tid, tgid, runner, a0, a1, NULL);
	ev->arg2 = VCPUSTAT_RUNNER_KNOWN; /* for the replays: the kernel's tables do not read it */
}

#define SWITCH(ts, cpu, prev, prev_tgid, state, preempt, next)                                                         \
	add(VCPUSTAT_EV_SWITCH, ts, cpu, prev, prev_tgid, next, state, preempt, "t" #prev)

/*
 * VM 100 (vCPU 101) with emulator thread 110 and vhost worker 120:
 * 110 runs 100..400 on CPU 1, is preempted by 998 until 450 (50 ns, 998's),
 * runs to 500 and sleeps; woken at 600 for CPU 1 (idle), pulled to CPU 0 by
 * its balancer at 610, where 997 runs until 700 (90 ns, 997's), runs to 800
 * and sleeps: 450 ns on a CPU, 150 ns waiting. 120 runs 1000..1200 and
 * exits at 1300. (The 10 ns of waiting on idle CPU 1 before the move: a
 * recording charges them to idle; the kernel's tables charge a wait when
 * its CPU switches, and CPU 1 did not.)
 */
static void scenario(void)
{
	nevs = 0;
	add(VCPUSTAT_EV_KVM_RUN, 10, 0, VCPU, VM, 0, 0, 0, "CPU 0/KVM");
	add(VCPUSTAT_EV_VMM_SEED, 20, 0, EMU, VM, 0, VCPUSTAT_VMM_EMULATOR, 0, "qemu-main");
	add(VCPUSTAT_EV_VMM_SEED, 20, 0, VHOST, VM, 0, VCPUSTAT_VMM_VHOST, 0, "vhost-100");
	add(VCPUSTAT_EV_WAKEUP, 50, 1, EMU, VM, 0, 1, 0, NULL); /* UNKNOWN: it may be running, no wait */
	SWITCH(100, 1, 999, 999, 1, 0, EMU);
	SWITCH(400, 1, EMU, VM, 0, 1, 998);
	SWITCH(450, 1, 998, 998, 0, 1, EMU);
	SWITCH(500, 1, EMU, VM, 1, 0, 0);
	add_seen(VCPUSTAT_EV_WAKEUP, 600, 1, EMU, VM, 0, 1, 0);
	add_seen(VCPUSTAT_EV_MIGRATE, 610, 0, EMU, VM, 997, 0, 1);
	SWITCH(700, 0, 997, 997, 1, 0, EMU);
	SWITCH(800, 0, EMU, VM, 1, 0, 0);
	SWITCH(1000, 1, 0, 0, 0, 0, VHOST);
	SWITCH(1200, 1, VHOST, VM, 1, 0, 0);
	add(VCPUSTAT_EV_PROCESS_EXIT, 1300, 1, VHOST, VM, 0, 0, 0, NULL);
}

Test(vmm, emulator_and_vhost_time_waits_and_culprits_are_exact)
{
	struct vcpustat_vmm_thread t;
	struct vcpustat_vm vm;
	__u32 tid = EMU, tgid = VM;
	__u64 ns;

	scenario();
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t), 0);
	cr_assert_eq(t.run_ns, 450);
	cr_assert_eq(t.wait_ns, 150);
	cr_assert_eq(t.state, VCPUSTAT_VMM_T_SLEEP);
	cr_assert_eq(t.kind, VCPUSTAT_VMM_EMULATOR);
	cr_assert_str_eq(t.comm, "qemu-main");
	tid = VHOST;
	cr_assert_neq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t), 0, "the exited worker left");
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &tgid, &vm), 0);
	cr_assert_eq(vm.vmm_run_ns[VCPUSTAT_VMM_EMULATOR], 450);
	cr_assert_eq(vm.vmm_wait_ns[VCPUSTAT_VMM_EMULATOR], 150);
	cr_assert_eq(vm.vmm_run_ns[VCPUSTAT_VMM_VHOST], 200, "an exited worker's time stays with its VM");
	cr_assert_eq(vm.vmm_wait_ns[VCPUSTAT_VMM_VHOST], 0);
	cr_assert(culprit_lookup(vs, VM | VCPUSTAT_CULPRIT_VMM, 998, &ns));
	cr_assert_eq(ns, 50);
	cr_assert(culprit_lookup(vs, VM | VCPUSTAT_CULPRIT_VMM, 997, &ns));
	cr_assert_eq(ns, 90, "charged on the CPU it moved to");
	cr_assert_not(culprit_lookup(vs, VM, 998, &ns), "the vCPU did not wait: no culprit of the VM's vCPUs");
	cr_assert_not(culprit_lookup(vs, VM | VCPUSTAT_CULPRIT_VMM, 999, &ns), "nobody waited before 100");
}

Test(vmm, the_summary_gives_the_window_of_the_vmm_threads)
{
	struct vcpustat_snapshot a, b;
	struct summary s;
	struct names n;
	const struct vm_summary *vm;

	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	add(VCPUSTAT_EV_KVM_RUN, 5, 0, VCPU, VM, 0, 0, 0, "CPU 0/KVM");
	cr_assert_eq(vcpustat_snapshot(vs, &a), 0);
	scenario();
	cr_assert_eq(vcpustat_snapshot(vs, &b), 0);
	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	vm = &s.vms[0];
	cr_assert(vm->vmm.known);
	cr_assert_eq(vm->vmm.run_ns[VMM_EMULATOR], 450);
	cr_assert_eq(vm->vmm.wait_ns[VMM_EMULATOR], 150);
	cr_assert_eq(vm->vmm.run_ns[VMM_VHOST], 200);
	cr_assert_eq(vm->vmm.threads[VMM_EMULATOR], 1);
	cr_assert_eq(vm->vmm.threads[VMM_VHOST], 0, "threads alive at the window's end");
	cr_assert_eq(vm->vmm.nr_culprits, 2);
	cr_assert_eq(vm->vmm.culprits[0].tid, 997);
	cr_assert_eq(vm->vmm.culprits[0].ns, 90);
	cr_assert_float_eq(vm->vmm.culprits[0].share, 0.6, 1e-9);
	cr_assert_str_eq(vm->vmm.culprits[0].comm, "t997");
	cr_assert_eq(vm->vmm.culprits[1].ns, 50);
	cr_assert_eq(vm->nr_culprits, 0, "the VMM threads' culprits are not the vCPUs'");
	{
		/* plot: a bar per kind on a CPU and waiting, with the steal share */
		struct plot_doc pd = {.s = &s, .seconds = s.seconds, .window = "test", .source = "live"};
		char *svg;
		size_t len;

		cr_assert_eq(plot_svg(&pd, &svg, &len), 0);
		cr_assert_not_null(strstr(svg, "other threads: on a CPU, and waiting for one"), "%s", svg);
		cr_assert_not_null(strstr(svg, "<title>emulator/IO on CPU: 1 threads,"), "%s", svg);
		cr_assert_not_null(strstr(svg, "steal 25.0 %"), "150 ns of 600: %s", svg);
		free(svg);
	}
	summary_free(&s);

	/* the next window: nothing happened */
	vcpustat_snapshot_free(&a);
	cr_assert_eq(vcpustat_snapshot(vs, &a), 0);
	cr_assert_eq(summary_build(&s, &b, &a, &n, NULL), 0);
	cr_assert_eq(s.vms[0].vmm.run_ns[VMM_EMULATOR] + s.vms[0].vmm.wait_ns[VMM_EMULATOR], 0);
	cr_assert_eq(s.vms[0].vmm.threads[VMM_EMULATOR], 0);
	cr_assert_eq(s.vms[0].vmm.nr_culprits, 0);
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	names_free(&n);
}

Test(vmm, user_space_replay_gives_the_same_tables)
{
	struct replay_options ro = {.record_level = VCPUSTAT_LEVEL_VCPU};
	struct vcpustat_snapshot a, b;
	struct replay *rp;

	ro.nr_cpus = (unsigned int)libbpf_num_possible_cpus();
	scenario();
	cr_assert_eq(replay_new(&rp, &ro), 0);
	for (size_t i = 0; i < nevs; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0);
	cr_assert_eq(vcpustat_snapshot(vs, &a), 0);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	cr_assert_eq(a.nr_vmm, 1);
	cr_assert_eq(b.nr_vmm, 1);
	cr_assert_eq(memcmp(a.vmm, b.vmm, sizeof(*a.vmm)), 0);
	cr_assert_eq(a.nr_vms, 1);
	cr_assert_eq(memcmp(a.vms, b.vms, sizeof(*a.vms)), 0);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	replay_free(rp);
}

static json_t *vmm_kind(json_t *report, const char *kind)
{
	json_t *vm = json_array_get(json_object_get(report, "vms"), 0);

	return json_object_get(json_object_get(vm, "vmm_threads"), kind);
}

#define ASSERT_VMM(doc, kind, nthreads, run, wait)                                                                     \
	do {                                                                                                           \
		json_t *k_ = vmm_kind(doc, kind);                                                                      \
		cr_assert_not_null(k_, "vmm_threads.%s", kind);                                                       \
		cr_assert_eq(json_integer_value(json_object_get(k_, "threads")), nthreads, "%s threads", kind);        \
		cr_assert_eq(json_integer_value(json_object_get(k_, "run_ns")), run, "%s run_ns", kind);               \
		cr_assert_eq(json_integer_value(json_object_get(k_, "wait_ns")), wait, "%s wait_ns", kind);            \
	} while (0)

/* The VMM threads' culprits of a report: tid and ns of the first three (ns 0: no such row). */
#define ASSERT_VMM_CULPRITS(doc, t0, n0, t1, n1, t2, n2)                                                               \
	do {                                                                                                           \
		json_t *c_ = json_object_get(                                                                         \
			json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "vmm_threads"), "culprits");    \
		const long long want_[3][2] = { { t0, n0 }, { t1, n1 }, { t2, n2 } };                                 \
		size_t rows_ = 0;                                                                                      \
                                                                                                                       \
		for (int i_ = 0; i_ < 3; i_++) {                                                                       \
			json_t *r_ = json_array_get(c_, (size_t)i_);                                                   \
                                                                                                                       \
			if (!want_[i_][1])                                                                             \
				continue;                                                                              \
			rows_++;                                                                                       \
			cr_assert_eq(json_integer_value(json_object_get(r_, "tid")), want_[i_][0], "culprit %d", i_); \
			cr_assert_eq(json_integer_value(json_object_get(r_, "ns")), want_[i_][1], "culprit %d", i_);  \
		}                                                                                                      \
		cr_assert_eq(json_array_size(c_), rows_, "culprit rows");                                              \
	} while (0)

/*
 * A level-vcpu recording (no host threads) keeps the VMM threads' states
 * (record VMM, /vms/<vm>/vmm/<tid>) and the CPUs where they wait (cpu), and
 * who ran there meanwhile (/host/cpus/<n>/runner_tid): report gives the
 * kernel's figures for the whole file and for a window, culprits included.
 */
Test(vmm, a_level_vcpu_recording_keeps_their_time_for_any_window)
{
	char sht[] = "/tmp/vcpustat-vmm-XXXXXX.sht", args[512];
	static char out[1 << 16];
	json_t *doc;
	int fd = mkstemps(sht, 4);

	cr_assert_geq(fd, 0);
	close(fd);
	scenario();
	replay_to_sht(evs, nevs, VM, "vmmvm", 2000, sht);

	doc = report_json(sht, "");
	ASSERT_VMM(doc, "emulator", 1, 450, 150);
	ASSERT_VMM(doc, "vhost", 1, 200, 0);
	/* who ran where they waited, from the CPUs' runners: the kernel's 997 and 998, and idle CPU 1 before the move */
	cr_assert(json_is_true(json_object_get(doc, "culprits_recorded")));
	ASSERT_VMM_CULPRITS(doc, 997, 90, 998, 50, 0, 10);
	json_decref(doc);

	/* [420, 700): preempted 420..450, on a CPU 450..500, woken 600 and waiting (moved at 610) to 700 */
	doc = report_json(sht, "--from 420 --to 700");
	ASSERT_VMM(doc, "emulator", 1, 50, 30 + 100);
	ASSERT_VMM(doc, "vhost", 0, 0, 0);
	ASSERT_VMM_CULPRITS(doc, 997, 90, 998, 30, 0, 10);
	json_decref(doc);
	/* [650, 2000): on CPU 0 only */
	doc = report_json(sht, "--from 650 --to 2000");
	ASSERT_VMM_CULPRITS(doc, 997, 50, 0, 0, 0, 0);
	json_decref(doc);

	/* --tid keeps the threads named (with a vCPU: a VM is shown for its vCPUs) */
	doc = report_json(sht, "--tid 101 --tid 120");
	ASSERT_VMM(doc, "emulator", 0, 0, 0);
	ASSERT_VMM(doc, "vhost", 1, 200, 0);
	json_decref(doc);

	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "VMM THREADS"), "%s", out);
	cr_assert_null(strstr(out, "who ran instead: not in"), "%s", out);

	/* the attributes: states as the host threads' at level full, the kind, and null once gone */
	{
		static const struct {
			const char *at, *path, *value;
			bool has;
		} q[] = {
			{ "650", "110/state", "wait", true },	  { "550", "110/state", "blocked", true },
			{ "1100", "120/kind", "vhost", true },	  { "1400", "120/state", "blocked", false },
		};

		for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
			snprintf(args, sizeof(args), "query %s --at %s --path /vms/vmmvm/vmm/%s", sht, q[i].at, q[i].path);
			cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
			cr_assert_eq(strstr(out, q[i].value) != NULL, q[i].has, "%s: %s %s: %s", args,
				     q[i].has ? "expected" : "not expected (the worker exited at 1300)", q[i].value, out);
		}
	}
	unlink(sht);
}

/*
 * A level-vcpu file of a vcpustat from before ABI 7 (written here as it wrote
 * them: the VMM thread's states, no cpu, no runner_tid, no "culprits" in the
 * metadata): its time still counts, and report says who ran instead is not
 * in it rather than showing none.
 */
Test(vmm, an_older_level_vcpu_file_says_who_ran_instead_is_not_in_it)
{
	static const struct sht_meta meta[] = { { "level", "vcpu" } };
	struct sht_writer_opts o = { .meta = meta, .nmeta = 1, .no_sync = true };
	char sht[] = "/tmp/vcpustat-vmm-old-XXXXXX.sht", args[512];
	static char out[1 << 16];
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	uint32_t pid, state, kind, vstate, vtid;
	json_t *doc;
	int fd = mkstemps(sht, 4);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(sht_writer_create(&w, sht, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/old/pid", &pid), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/old/vmm/110/state", &state), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/old/vmm/110/kind", &kind), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/old/vcpus/0/state", &vstate), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/old/vcpus/0/tid", &vtid), 0);
	cr_assert_eq(sht_writer_set_int(w, pid, 0, 100), 0);
	cr_assert_eq(sht_writer_set_int(w, vtid, 0, 101), 0);
	cr_assert_eq(sht_writer_set_int(w, vstate, 0, VCPU_GUEST), 0);
	cr_assert_eq(sht_writer_set_str(w, kind, 0, "emulator"), 0);
	cr_assert_eq(sht_writer_set_str(w, state, 100, "running"), 0);
	cr_assert_eq(sht_writer_set_str(w, state, 400, "wait"), 0);
	cr_assert_eq(sht_writer_set_str(w, state, 450, "running"), 0);
	cr_assert_eq(sht_writer_set_str(w, state, 500, "blocked"), 0);
	cr_assert_eq(sht_writer_close(w, 1000, &err), 0, "%s", err.msg);

	doc = report_json(sht, "");
	ASSERT_VMM(doc, "emulator", 1, 350, 50);
	cr_assert(json_is_false(json_object_get(doc, "culprits_recorded")));
	ASSERT_VMM_CULPRITS(doc, 0, 0, 0, 0, 0, 0);
	json_decref(doc);
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "who ran instead: not in this recording"), "%s", out);
	cr_assert_not_null(strstr(out, "(who took the CPU: not in this recording"), "%s", out);
	unlink(sht);
}

Test(vmm, a_vmm_thread_that_enters_kvm_becomes_a_vcpu)
{
	struct vcpustat_vmm_thread t;
	struct vcpustat_vcpu v;
	__u32 tid = 130, tgid = VM;
	struct vcpustat_vm vm;

	add(VCPUSTAT_EV_VMM_SEED, 10, 0, tid, VM, 0, VCPUSTAT_VMM_EMULATOR, 0, "fc_vcpu 1");
	SWITCH(20, 0, 0, 0, 0, 0, tid);
	add(VCPUSTAT_EV_KVM_RUN, 70, 0, tid, VM, 0, 0, 0, "fc_vcpu 1");
	cr_assert_neq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t), 0);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vcpus"), &tid, &v), 0);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vms"), &tgid, &vm), 0);
	cr_assert_eq(vm.vmm_run_ns[VCPUSTAT_VMM_EMULATOR], 50, "its time before, as a VMM thread, stays");
	/* a seed of a vCPU is refused */
	add(VCPUSTAT_EV_VMM_SEED, 80, 0, tid, VM, 0, VCPUSTAT_VMM_EMULATOR, 0, "fc_vcpu 1");
	cr_assert_neq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t), 0);
}

Test(vmm, discovery_finds_emulator_threads_and_vhost_workers_in_proc)
{
	char root[] = "/tmp/vcpustat-proc-XXXXXX", cmd[1024];
	struct vcpustat_snapshot snap;
	const char *comms[][2] = {{"4242/task/4242/comm", "qemu-system-x86"},
				  {"4242/task/4243/comm", "CPU 0/KVM"},
				  {"4242/task/4244/comm", "CPU 1/KVM"},
				  {"4242/task/4245/comm", "IO iothread0"},
				  {"4242/task/4246/comm", "vhost-4242"}, /* Linux 6.4+: a thread of the VMM */
				  {"5000/comm", "vhost-4242"},		 /* before: a kernel thread */
				  {"5001/comm", "vhost-777"},		 /* another process's */
				  {"5002/comm", "kworker/0:1"}};
	__u32 tids[] = {4242, 4245, 4246, 5000}, not [] = {4243, 4244, 5001, 5002};
	__u8 kinds[] = {VCPUSTAT_VMM_EMULATOR, VCPUSTAT_VMM_EMULATOR, VCPUSTAT_VMM_VHOST, VCPUSTAT_VMM_VHOST};
	struct vcpustat_vmm_thread t;

	cr_assert_not_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && mkdir -p 4242/task/4242 4242/task/4243 4242/task/4244 4242/task/4245 4242/task/4246 "
		 "5000 5001 5002",
		 root);
	cr_assert_eq(system(cmd), 0);
	for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", root, comms[i][0]);
		f = fopen(path, "w");
		cr_assert_not_null(f, "%s", path);
		fprintf(f, "%s\n", comms[i][1]);
		fclose(f);
	}
	/* VM 4242, its vCPU 4243 known; 4244 is named as a vCPU: it waits for its first KVM event */
	add(VCPUSTAT_EV_KVM_RUN, 10, 0, 4243, 4242, 0, 0, 0, "CPU 0/KVM");
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(vcpustat_seed_vmm(vs, &snap, root), 4);
	vcpustat_snapshot_free(&snap);
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tids[i], &t), 0, "tid %u",
			     tids[i]);
		cr_assert_eq(t.vm_tgid, 4242);
		cr_assert_eq(t.kind, kinds[i], "tid %u", tids[i]);
	}
	cr_assert_str_eq(t.comm, "vhost-4242");
	for (size_t i = 0; i < 4; i++)
		cr_assert_neq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &not [i], &t), 0, "tid %u",
			      not [i]);
	/* known threads are not added twice; the walk of /proc waits VCPUSTAT_VHOST_SCAN_NS */
	cr_assert_eq(vcpustat_snapshot(vs, &snap), 0);
	cr_assert_eq(vcpustat_seed_vmm(vs, &snap, root), 0);
	vcpustat_snapshot_free(&snap);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

/*
 * Real threads, attached: this process is the "VM" (a thread of it is
 * tracked as its vCPU). Its emulator thread, pinned to CPU 0, runs 2 ms and
 * sleeps 1 ms, again and again, beside a busy process on the same CPU. The
 * discovery of the live window finds it; its time on a CPU and waiting must
 * match the kernel's sum_exec_runtime and run_delay over the same window
 * (within 5 % of the window), and the busy process is who kept it waiting.
 */
static void attach(void)
{
	int n;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_eq(vcpustat_open(&vs, NULL), 0);
	n = vcpustat_attach(vs);
	cr_assert_gt(n, 0, "vcpustat_attach: %s", n < 0 ? strerror(-n) : "nothing attached");
}

TestSuite(vmm_live, .init = attach, .fini = close_vs, .timeout = 60);

static atomic_int stop, emu_tid, vcpu_tid;

static void *emulator(void *arg)
{
	struct timespec ms = {0, 1000000};

	pin_to_cpu(0);
	prctl(PR_SET_NAME, "vmm-emulator");
	emu_tid = (int)syscall(SYS_gettid);
	while (!stop) {
		__u64 end = mono_ns() + 2000000;

		while (mono_ns() < end)
			;
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static void *idle_vcpu(void *arg)
{
	prctl(PR_SET_NAME, "CPU 0/KVM");
	vcpu_tid = (int)syscall(SYS_gettid);
	while (!stop)
		usleep(10000);
	return NULL;
}

Test(vmm_live, emulator_thread_run_and_wait_match_schedstat_and_name_the_culprit)
{
	struct vcpustat_vmm_thread t0, t1;
	struct schedstat s0, s1;
	struct live_window w;
	struct summary s;
	__u64 a0, a1, window;
	pthread_t e, v;
	pid_t hog;
	__u32 tid;
	double run_err, wait_err;

	stop = 0;
	pthread_create(&v, NULL, idle_vcpu, NULL);
	pthread_create(&e, NULL, emulator, NULL);
	while (!emu_tid || !vcpu_tid)
		usleep(1000);
	hog = fork();
	cr_assert_geq(hog, 0);
	if (hog == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "vmm-hog");
		pin_to_cpu(0);
		for (;;)
			;
	}
	cr_assert_eq(vcpustat_add_vcpu(vs, (__u32)vcpu_tid, (__u32)getpid(), 0, "CPU 0/KVM"), 0);
	cr_assert_eq(live_window_init(&w, vs, NULL), 0);
	cr_assert_eq(live_window_next(&w, NULL), 0); /* finds the emulator thread */
	tid = (__u32)emu_tid;
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t0), 0,
		     "the live window's discovery found the emulator thread");
	cr_assert_eq(t0.kind, VCPUSTAT_VMM_EMULATOR);
	cr_assert_str_eq(t0.comm, "vmm-emulator");
	usleep(200000); /* let it leave UNKNOWN */

	cr_assert_eq(live_window_next(&w, NULL), 0);
	a0 = mono_ns();
	cr_assert_eq(read_schedstat(emu_tid, &s0), 0);
	cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t0), 0);
	{
		__u64 now0 = vcpustat_now_ns();

		usleep(1500000);
		cr_assert_eq(read_schedstat(emu_tid, &s1), 0);
		cr_assert_eq(bpf_map_lookup_elem(vcpustat_map_fd(vs, "vmm_threads"), &tid, &t1), 0);
		a1 = mono_ns();
		window = a1 - a0;
		run_err = ((double)(vmm_thread_ns(&t1, vcpustat_now_ns(), false) - vmm_thread_ns(&t0, now0, false)) -
			   (double)(s1.run_ns - s0.run_ns)) /
			  (double)window;
		wait_err = ((double)(vmm_thread_ns(&t1, vcpustat_now_ns(), true) - vmm_thread_ns(&t0, now0, true)) -
			    (double)(s1.wait_ns - s0.wait_ns)) /
			   (double)window;
	}
	cr_assert_eq(live_window_next(&w, &s), 0);
	stop = 1;
	kill(hog, SIGKILL);
	waitpid(hog, NULL, 0);
	pthread_join(e, NULL);
	pthread_join(v, NULL);

	cr_log_info("window %.3f s: emulator run %.1f ms (schedstat %.1f, error %+.2f%%), wait (schedstat %.1f ms, "
		    "error %+.2f%%)",
		    window / 1e9, (vmm_thread_ns(&t1, a1, false) - vmm_thread_ns(&t0, a0, false)) / 1e6,
		    (s1.run_ns - s0.run_ns) / 1e6, run_err * 100, (s1.wait_ns - s0.wait_ns) / 1e6, wait_err * 100);
	cr_assert_gt(s1.run_ns - s0.run_ns, window / 20, "the emulator thread must have run");
	cr_assert_gt(s1.wait_ns - s0.wait_ns, window / 20, "and waited behind the hog");
	cr_assert_lt(run_err < 0 ? -run_err : run_err, 0.05, "run time off by %.2f%% of the window", run_err * 100);
	cr_assert_lt(wait_err < 0 ? -wait_err : wait_err, 0.05, "wait time off by %.2f%% of the window",
		     wait_err * 100);

	/* the summary: this VM, its emulator threads' window, the hog as the top culprit */
	{
		const struct vm_summary *vm = NULL;

		for (size_t i = 0; i < s.nr_vms; i++)
			if (s.vms[i].tgid == (__u32)getpid())
				vm = &s.vms[i];
		cr_assert_not_null(vm);
		cr_assert(vm->vmm.known);
		cr_assert_geq(vm->vmm.threads[VMM_EMULATOR], 1);
		cr_assert_gt(vm->vmm.run_ns[VMM_EMULATOR], (s1.run_ns - s0.run_ns) / 2);
		cr_assert_gt(vm->vmm.wait_ns[VMM_EMULATOR], (s1.wait_ns - s0.wait_ns) / 2);
		cr_assert_gt(vm->vmm.nr_culprits, 0);
		cr_log_info("top culprit of the VMM threads: %s (tid %u), %.1f ms, %.0f%%", vm->vmm.culprits[0].comm,
			    vm->vmm.culprits[0].tid, vm->vmm.culprits[0].ns / 1e6, vm->vmm.culprits[0].share * 100);
		cr_assert_eq(vm->vmm.culprits[0].tid, (__u32)hog);
		cr_assert_str_eq(vm->vmm.culprits[0].comm, "vmm-hog");
		cr_assert_gt(vm->vmm.culprits[0].share, 0.5);
	}
	summary_free(&s);
	live_window_free(&w);
}

/* ---- a level-vcpu recording of a real VM's I/O thread ---- */

static void rec_cleanup(void)
{
	proc_stop_all();
	scratch_remove();
}

/* Run and wait time of the threads of process pid that are no vCPU (named "CPU n/KVM"); how many. */
static int vmm_schedstat(pid_t pid, struct schedstat *sum)
{
	char path[64], comm[32];
	struct dirent *de;
	int n = 0;
	DIR *d;

	memset(sum, 0, sizeof(*sum));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	cr_assert_not_null(d, "%s", path);
	while ((de = readdir(d))) {
		struct schedstat s;
		char cpath[sizeof(path) + sizeof(de->d_name) + sizeof("/comm")];
		FILE *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(cpath, sizeof(cpath), "%s/%s/comm", path, de->d_name);
		f = fopen(cpath, "r");
		if (!f || !fgets(comm, sizeof(comm), f)) {
			if (f)
				fclose(f);
			continue;
		}
		fclose(f);
		if (!strncmp(comm, "CPU ", 4) || read_schedstat(atoi(de->d_name), &s))
			continue;
		sum->run_ns += s.run_ns;
		sum->wait_ns += s.wait_ns;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * `vcpustat record` at its default level while microvm runs a VM with an
 * I/O thread pinned beside its busy vCPU: report's VMM THREADS over a window
 * of the file equal the kernel's own accounting of the VM process's threads
 * that are no vCPU (/proc/<tid>/schedstat), within 5 % of the window.
 */
/* in the suite record: where there is no /dev/kvm, CI runs it in the KVM lab (tests/run.sh) */
Test(record, an_io_thread_recorded_at_level_vcpu_matches_schedstat, .fini = rec_cleanup, .timeout = 180)
{
	char sht[256], ready[256], win[96], mvm_bin[256], vcpustat[256];
	struct schedstat s0, s1;
	struct sht_reader *r;
	struct vcpustat_error err = { 0 };
	__u64 a0, a1, b0, b1, start;
	double run_err, wait_err, window;
	pid_t mvm, rec, vm_pid = 0;
	json_t *doc, *k;
	int n;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	snprintf(sht, sizeof(sht), "%s", scratch_file("vmmrec", "vmm.sht"));
	snprintf(ready, sizeof(ready), "%s", scratch_file("vmmrec", "ready.json"));
	snprintf(mvm_bin, sizeof(mvm_bin), "%s/bin/microvm", build_dir());
	snprintf(vcpustat, sizeof(vcpustat), "%s/bin/vcpustat", build_dir());
	{
		char *argv[] = { mvm_bin, "--vcpus", "1", "--pin", "0", "--idle-us", "0", "--chunk-iters", "2000000",
				 "--io-thread-us", "2000", "--duration", "120", "-name", "guest=iot", "--ready", ready,
				 NULL };

		mvm = proc_spawn(argv, NULL, NULL);
	}
	for (int i = 0; i < 300 && access(ready, F_OK); i++)
		usleep(20000);
	doc = json_load_file(ready, 0, NULL);
	cr_assert_not_null(doc, "microvm is ready: %s", ready);
	vm_pid = (pid_t)json_integer_value(json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "pid"));
	json_decref(doc);
	cr_assert_gt(vm_pid, 0);
	{
		char *argv[] = { vcpustat, "record", "-q", "-o", sht, "--duration", "7", NULL };

		rec = proc_spawn(argv, NULL, scratch_file("vmmrec", "record.err"));
	}
	/*
	 * attached (record makes its file once its programs are), and its first
	 * look for the VM's threads (every second) done; loading the programs
	 * took over 8 s in a lab running on one TCG thread (CI, 2026-11-29)
	 */
	for (int i = 0; i < 3000 && access(sht, F_OK); i++)
		usleep(20000);
	cr_assert_eq(access(sht, F_OK), 0, "vcpustat record made %s within 60 s: %s", sht,
		     slurp_file(scratch_file("vmmrec", "record.err")));
	sleep(2);
	a0 = mono_ns();
	n = vmm_schedstat(vm_pid, &s0);
	a1 = mono_ns();
	sleep(3);
	b0 = mono_ns();
	cr_assert_eq(vmm_schedstat(vm_pid, &s1), n);
	b1 = mono_ns();
	{
		int st = proc_wait(rec);
		char *err = slurp_file(scratch_file("vmmrec", "record.err"));

		cr_assert_null(live_status_wrong(st, err), "vcpustat record: %s: %s", live_status_wrong(st, err), err);
		free(err);
	}
	proc_stop(mvm);

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	start = sht_get_info(r)->mono_start_ns;
	sht_close(r);
	snprintf(win, sizeof(win), "--from %llu --to %llu", (unsigned long long)((a0 + a1) / 2 - start),
		 (unsigned long long)((b0 + b1) / 2 - start));
	window = (double)((b0 + b1) / 2 - (a0 + a1) / 2);
	doc = report_json(sht, win);
	k = vmm_kind(doc, "emulator");
	cr_assert_not_null(k, "report %s has the VMM threads of a level-vcpu recording", win);
	run_err = ((double)json_integer_value(json_object_get(k, "run_ns")) - (double)(s1.run_ns - s0.run_ns)) / window;
	wait_err = ((double)json_integer_value(json_object_get(k, "wait_ns")) - (double)(s1.wait_ns - s0.wait_ns)) /
		   window;
	cr_log_info("%d threads of VM %d that are no vCPU, over %.3f s: run %.1f ms (schedstat %.1f, %+.2f %% of the "
		    "window), wait %.1f ms (schedstat %.1f, %+.2f %%)",
		    n, (int)vm_pid, window / 1e9, json_integer_value(json_object_get(k, "run_ns")) / 1e6,
		    (s1.run_ns - s0.run_ns) / 1e6, run_err * 100, json_integer_value(json_object_get(k, "wait_ns")) / 1e6,
		    (s1.wait_ns - s0.wait_ns) / 1e6, wait_err * 100);
	cr_assert_geq(json_integer_value(json_object_get(k, "threads")), 1);
	cr_assert_gt(s1.run_ns - s0.run_ns, window / 20, "the I/O thread ran");
	/* it waits ~1/3 of the window on a host's KVM, under 1 % in the lab (where it preempts the vCPU at once) */
	cr_assert_gt(s1.wait_ns - s0.wait_ns, window / 1000, "and waited behind the vCPU");
	cr_assert_lt(fabs(run_err), 0.05, "run off by %.2f %% of the window", run_err * 100);
	cr_assert_lt(fabs(wait_err), 0.05, "wait off by %.2f %% of the window", wait_err * 100);
	json_decref(doc);
}
