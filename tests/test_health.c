// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Never blind without saying so (model/health.c, docs/vcpustat.md "Health"):
 * the checks on made-up views of KVM and of vcpustat's counts, each problem
 * forced; then live, a VM vcpustat cannot see (--no-kvm, the VM started
 * after it attached) in every output: the text view, -j, the exporter's
 * Prometheus text, record's end; and where this machine's KVM never fires
 * kvm_exit (a software KVM), the exits it does not see.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "helpers.h"
#include "model/health.h"

static struct kvm_view view(struct kvm_vm_seen *vms, size_t n, const char *why)
{
	struct kvm_view v = { .ts = 1, .vms = vms, .nr_vms = n };

	snprintf(v.source, sizeof(v.source), "debugfs");
	snprintf(v.exits_why, sizeof(v.exits_why), "%s", why ? why : "");
	return v;
}

/* Two checks of one VM: KVM's exits then and now, vcpustat's. Returns the problems the second found. */
static unsigned int two_checks(const struct kvm_vm_seen *a, const struct kvm_vm_seen *b, const struct health_seen *sa,
			       size_t na, const struct health_seen *sb, size_t nb, bool programs, struct health *h)
{
	struct health_tracker t = { 0 };
	struct kvm_vm_seen va = *a, vb = *b;
	struct kvm_view ka = view(&va, 1, NULL), kb = view(&vb, 1, NULL);
	struct health first;

	cr_assert_eq(health_check(&t, &ka, sa, na, programs, &first), 0);
	cr_assert_not(first.checked, "the first check only remembers");
	cr_assert_eq(first.problems, 0);
	health_free(&first);
	cr_assert_eq(health_check(&t, &kb, sb, nb, programs, h), 0);
	cr_assert(h->checked);
	health_tracker_free(&t);
	return h->problems;
}

Test(health, a_vm_whose_vcpus_are_seen_and_exits_counted_is_healthy)
{
	struct kvm_vm_seen a = { 100, true, 1000 }, b = { 100, true, 5000 };
	struct health_seen sa = { 100, 2, 990, 300 }, sb = { 100, 2, 4990, 1200 };
	struct health h;
	char msg[512];

	cr_assert_eq(two_checks(&a, &b, &sa, 1, &sb, 1, true, &h), 0);
	cr_assert_eq(h.nr_vms, 0);
	cr_assert_eq(h.kvm_vms, 1);
	health_message(&h, NULL, NULL, msg, sizeof(msg));
	cr_assert_str_empty(msg);
	health_free(&h);
}

Test(health, a_vm_kvm_runs_whose_vcpus_vcpustat_never_saw_is_unseen)
{
	struct kvm_vm_seen a = { 100, true, 10 }, b = { 100, true, 20 };
	struct health_seen other = { 200, 1, 5, 5 };
	struct health h;
	char msg[512];

	cr_assert_eq(two_checks(&a, &b, &other, 1, &other, 1, true, &h), HEALTH_VM_UNSEEN);
	cr_assert_eq(h.nr_vms, 1);
	cr_assert_eq(h.vms[0].tgid, 100);
	health_message(&h, NULL, NULL, msg, sizeof(msg));
	cr_assert(strstr(msg, "KVM runs 1 VM that vcpustat sees no vCPU of (pid 100)"), "%s", msg);
	health_free(&h);
}

Test(health, kvm_counts_exits_the_programs_do_not_they_are_unseen)
{
	struct kvm_vm_seen a = { 100, true, 1000 }, b = { 100, true, 14781 };
	struct health_seen sa = { 100, 2, 0, 40 }, sb = { 100, 2, 0, 41 };
	struct health h;
	char msg[512];

	cr_assert_eq(two_checks(&a, &b, &sa, 1, &sb, 1, true, &h), HEALTH_EXITS_UNSEEN);
	cr_assert(h.vms[0].kvm_known);
	cr_assert_eq(h.vms[0].kvm_exits, 13781, "KVM's exits between the two checks");
	cr_assert_eq(h.vms[0].seen_exits, 0);
	health_message(&h, NULL, NULL, msg, sizeof(msg));
	cr_assert(strstr(msg, "1 VM exits (KVM counted 13781 exits) and kvm_exit fired for none of it (pid 100)"), "%s",
		  msg);
	health_free(&h);
}

Test(health, without_kvms_counts_returns_to_the_vmm_and_no_exit_tell_it)
{
	struct kvm_vm_seen a = { 100, false, 0 }, b = { 100, false, 0 };
	struct health_seen few = { 100, 1, 0, HEALTH_UEXITS_WITHOUT_EXITS - 1 };
	struct health_seen many = { 100, 1, 0, HEALTH_UEXITS_WITHOUT_EXITS };
	struct health_seen seen = { 100, 1, 1, 5000 };
	struct health h;

	cr_assert_eq(two_checks(&a, &b, &few, 1, &few, 1, true, &h), 0, "too few returns to tell");
	health_free(&h);
	cr_assert_eq(two_checks(&a, &b, &many, 1, &many, 1, true, &h), HEALTH_EXITS_UNSEEN);
	cr_assert_not(h.vms[0].kvm_known);
	cr_assert_eq(h.vms[0].userspace_exits, HEALTH_UEXITS_WITHOUT_EXITS);
	health_free(&h);
	cr_assert_eq(two_checks(&a, &b, &seen, 1, &seen, 1, true, &h), 0, "one exit counted: kvm_exit fires");
	health_free(&h);
}

Test(health, a_vcpu_that_ran_half_a_second_without_one_exit_tells_it_too)
{
	struct kvm_vm_seen a = { 100, false, 0 }, b = { 100, false, 0 };
	struct health_seen short_run = { 100, 1, 0, 3, HEALTH_ONCPU_WITHOUT_EXITS_NS - 1 };
	struct health_seen long_run = { 100, 1, 0, 3, HEALTH_ONCPU_WITHOUT_EXITS_NS };
	struct health h;
	char msg[512];

	cr_assert_eq(two_checks(&a, &b, &short_run, 1, &short_run, 1, true, &h), 0);
	health_free(&h);
	cr_assert_eq(two_checks(&a, &b, &long_run, 1, &long_run, 1, true, &h), HEALTH_EXITS_UNSEEN,
		     "a vCPU that never returns to its VMM still exits at every tick");
	health_message(&h, NULL, NULL, msg, sizeof(msg));
	cr_assert(strstr(msg, "(its vCPUs ran 0.5 s) and kvm_exit fired for none of it"), "%s", msg);
	health_free(&h);
}

Test(health, kvm_exit_not_attached_while_kvm_runs_vms_is_said_once)
{
	struct kvm_vm_seen a = { 100, true, 1000 }, b = { 100, true, 2000 };
	struct health_seen s = { 100, 2, 0, 500 };
	struct health h;
	char msg[512];

	cr_assert_eq(two_checks(&a, &b, &s, 1, &s, 1, false, &h), HEALTH_NO_EXIT_PROGRAM,
		     "not exits_unseen: the programs that would count them are not there");
	cr_assert_eq(h.nr_vms, 0);
	health_message(&h, NULL, NULL, msg, sizeof(msg));
	cr_assert(strstr(msg, "kvm_entry/kvm_exit are not attached while KVM runs 1 VM"), "%s", msg);
	health_free(&h);
}

Test(health, a_vm_that_appeared_since_the_last_check_waits_for_the_next)
{
	struct health_tracker t = { 0 };
	struct kvm_vm_seen none[1], one = { 300, true, 50 };
	struct kvm_view k0 = view(none, 0, NULL), k1 = view(&one, 1, NULL), k2 = view(&one, 1, NULL);
	struct health h;

	cr_assert_eq(health_check(&t, &k0, NULL, 0, true, &h), 0);
	health_free(&h);
	cr_assert_eq(health_check(&t, &k1, NULL, 0, true, &h), 0);
	cr_assert(h.checked);
	cr_assert_eq(h.problems, 0, "new since the last check: not judged yet");
	health_free(&h);
	one.exits = 80;
	k2 = view(&one, 1, NULL);
	cr_assert_eq(health_check(&t, &k2, NULL, 0, true, &h), 0);
	cr_assert_eq(h.problems, HEALTH_VM_UNSEEN, "there for a whole interval, never seen");
	health_free(&h);
	health_tracker_free(&t);
}

Test(health, a_paused_vm_has_no_events_to_see_and_is_not_unseen)
{
	/* KVM's exits unknown (debugfs locked down): the VMM's CPU time tells whether it ran */
	struct kvm_vm_seen a = { 100, false, 0, true, 5000000000ull }, b = a;
	struct health h;

	b.cpu_ns += HEALTH_RUNNING_CPU_NS - 1;
	cr_assert_eq(two_checks(&a, &b, NULL, 0, &(struct health_seen){ 0 }, 0, true, &h), 0, "paused: not judged");
	health_free(&h);
	b.cpu_ns = a.cpu_ns + HEALTH_RUNNING_CPU_NS;
	cr_assert_eq(two_checks(&a, &b, NULL, 0, &(struct health_seen){ 0 }, 0, true, &h), HEALTH_VM_UNSEEN, "it ran");
	health_free(&h);
}

Test(health, a_vm_new_since_the_last_check_is_judged_once_its_vmm_is_old_and_ran)
{
	struct health_tracker t = { 0 };
	struct kvm_vm_seen none[1], young = { 300, false, 0, true, 2 * HEALTH_RUNNING_CPU_NS, 1000000000ull };
	struct kvm_vm_seen old = young, idle = young;
	struct kvm_view k0 = view(none, 0, NULL), k;
	struct health h;

	old.age_ns = HEALTH_NEW_VM_AGE_NS;
	idle.age_ns = HEALTH_NEW_VM_AGE_NS;
	idle.cpu_ns = 0;
	cr_assert_eq(health_check(&t, &k0, NULL, 0, true, &h), 0);
	health_free(&h);
	k = view(&young, 1, NULL);
	cr_assert_eq(health_check(&t, &k, NULL, 0, true, &h), 0);
	cr_assert_eq(h.problems, 0, "a VMM of 1 s may not have run its vCPUs yet");
	health_free(&h);
	health_tracker_free(&t);
	cr_assert_eq(health_check(&t, &k0, NULL, 0, true, &h), 0);
	health_free(&h);
	k = view(&idle, 1, NULL);
	cr_assert_eq(health_check(&t, &k, NULL, 0, true, &h), 0);
	cr_assert_eq(h.problems, 0, "old but never ran");
	health_free(&h);
	health_tracker_free(&t);
	cr_assert_eq(health_check(&t, &k0, NULL, 0, true, &h), 0);
	health_free(&h);
	k = view(&old, 1, NULL);
	cr_assert_eq(health_check(&t, &k, NULL, 0, true, &h), 0);
	cr_assert_eq(h.problems, HEALTH_VM_UNSEEN, "old, it ran, none of its vCPUs seen");
	health_free(&h);
	health_tracker_free(&t);
}

Test(health, three_vms_are_named_then_counted)
{
	struct health h = { .checked = true, .problems = HEALTH_VM_UNSEEN, .kvm_vms = 5 };
	struct health_vm vms[5];
	char msg[512];

	for (int i = 0; i < 5; i++)
		vms[i] = (struct health_vm){ .tgid = 10 + (unsigned int)i, .problems = HEALTH_VM_UNSEEN };
	h.vms = vms;
	h.nr_vms = 5;
	health_message(&h, NULL, NULL, msg, sizeof(msg));
	cr_assert(strstr(msg, "KVM runs 5 VMs that vcpustat sees no vCPU of (pid 10, 11, 12 and 2 more)"), "%s", msg);
}

/* ---- live ---- */

static pid_t start_vm(const char *name, const char *seconds)
{
	char microvm[512], label[64];
	char *argv[] = { microvm, "--vcpus", "1", "--busy-us", "500", "--idle-us", "500", "--duration", (char *)seconds,
			 "-name", label, NULL };

	snprintf(microvm, sizeof(microvm), "%s/bin/microvm", build_dir());
	snprintf(label, sizeof(label), "guest=%s", name);
	return proc_spawn(argv, NULL, NULL);
}

/* The last complete JSON line of `vcpustat -j` output. */
static json_t *last_doc(const char *out)
{
	const char *p = out, *line = NULL;
	json_t *doc = NULL;

	for (; *p; p++)
		if (*p == '{' && (p == out || p[-1] == '\n'))
			line = p;
	if (line)
		doc = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert_not_null(doc, "a JSON document in: %.500s", out);
	return doc;
}

/* The BPF links process pid holds (its attached programs). */
static int bpf_links(pid_t pid)
{
	char path[64], link[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char fd[600];
		ssize_t len;

		snprintf(fd, sizeof(fd), "%s/%s", path, de->d_name);
		len = readlink(fd, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = '\0';
			n += !strcmp(link, "anon_inode:bpf_link") || !strcmp(link, "anon_inode:[perf_event]");
		}
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * Run `ENV vcpustat ARGS` (stdout and stderr into out), and once it has
 * attached (its links are there, and its look for running VMs is done) a
 * VM it cannot have seeded. Its exit status.
 */
static int run_with_vm_after(const char *env, const char *args, char *out, size_t len)
{
	char cmd[2048];
	const char *log = scratch_file("health", "vcpustat.out");
	char *sh[] = { "/bin/sh", "-c", cmd, NULL }, *text;
	pid_t vcpustat, vmm;
	int st, i, links = -1;

	snprintf(cmd, sizeof(cmd), "%s exec '%s/bin/vcpustat' %s", env, build_dir(), args);
	vcpustat = proc_spawn(sh, log, log);
	cr_assert_gt(vcpustat, 0);
	/* attached: its links stop growing (the lab takes seconds to load them) */
	for (i = 0; i < 1200; i++) {
		int n = bpf_links(vcpustat);

		if (n >= 8 && n == links)
			break;
		links = n;
		usleep(100000);
	}
	usleep(500000); /* seeded */
	vmm = start_vm("unseen", "60");
	cr_assert_gt(vmm, 0);
	st = proc_wait(vcpustat);
	proc_stop(vmm);
	text = slurp_file(log);
	snprintf(out, len, "%s", text);
	free(text);
	return st;
}

static bool has_problem(json_t *health, const char *name)
{
	json_t *p;
	size_t i;

	json_array_foreach(json_object_get(health, "problems"), i, p)
		if (!strcmp(json_string_value(p), name))
			return true;
	return false;
}

/*
 * Without its KVM programs (VCPUSTAT_LEAVE_OUT, as on a kernel without
 * them), vcpustat never sees a VM started after it attached (no KVM event of
 * it reaches vcpustat; seeding was at the attach). Every output says so.
 */
#define NO_KVM "VCPUSTAT_LEAVE_OUT=on_kvm_entry,on_kvm_exit,on_kvm_userspace_exit,on_kvm_fpu,on_kvm_hypercall," \
	       "on_kvm_pio,on_kvm_mmio,on_kvm_msr,on_kvm_page_fault,on_kvm_vcpu_halt,on_kvm_vcpu_wakeup,"          \
	       "on_kvm_halt_poll_ns,on_kvm_apic_accept_irq,on_kvm_inj_virq,on_kvm_nested_vmenter,"                \
	       "on_kvm_nested_vmexit_inject "
Test(health, a_vm_started_behind_a_vcpustat_without_its_kvm_programs_is_said_unseen, .fini = proc_stop_all,
     .timeout = 300)
{
	char *out = malloc(1 << 20), cmd[1024];
	json_t *doc, *health, *vm;
	size_t i;
	bool found = false;
	int rc;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	cr_assert_not_null(out);
	/* the live view's JSON: health, its problems, the VM by pid, a sentence */
	rc = run_with_vm_after(NO_KVM, "-j -n 4 -d 2.5", out, 1 << 20);
	cr_assert_eq(rc, 0, "vcpustat -j exits 0 (it says what it cannot see): %.2000s", out);
	doc = last_doc(out);
	health = json_object_get(doc, "health");
	cr_assert(json_is_object(health), "the live view's JSON has health: %.500s", out);
	cr_assert(json_is_false(json_object_get(health, "ok")));
	cr_assert(has_problem(health, "vm_unseen"), "vm_unseen: %s", json_dumps(health, 0));
	cr_assert(has_problem(health, "no_exit_program"));
	json_array_foreach(json_object_get(health, "vms"), i, vm)
		found |= json_integer_value(json_object_get(vm, "pid")) > 0;
	cr_assert(found, "the unseen VM is named by its pid");
	cr_assert(strstr(json_string_value(json_object_get(health, "message")), "vcpustat sees no vCPU of"));
	json_decref(doc);

	/* the text view: a line that says it */
	rc = run_with_vm_after(NO_KVM, "-b -n 3 -d 2.5", out, 1 << 20);
	cr_assert_eq(rc, 0);
	cr_assert(strstr(out, "BLIND: ") && strstr(out, "vcpustat sees no vCPU of"), "%.2000s", out);

	/* the exporter: an up-style gauge a rule can alert on */
	rc = run_with_vm_after(NO_KVM, "export --interval 7", out, 1 << 20);
	cr_assert_eq(rc, 0, "%.2000s", out);
	cr_assert(strstr(out, "\nvcpustat_health_ok 0\n"), "%.3000s", out);
	cr_assert(strstr(out, "vcpustat_blind_vms{problem=\"no_exit_program\"} 1"), "%.3000s", out);
	cr_assert(strstr(out, "vcpustat_blind_vms{problem=\"vm_unseen\"} 1"), "the VM is counted unseen: %.3000s", out);

	/* record: the file is whole, and the end says what it misses, with exit status 1 */
	snprintf(cmd, sizeof(cmd), "record -q -o '%s' --duration 7", scratch_file("health", "r.sht"));
	rc = run_with_vm_after(NO_KVM, cmd, out, 1 << 20);
	cr_assert_eq(rc, 1, "record exits 1 when it was blind: %.2000s", out);
	cr_assert(strstr(out, "the recording is blind to part of this host") && strstr(out, "sees no vCPU of"), "%.2000s",
		  out);
	snprintf(cmd, sizeof(cmd), "'%s/bin/vcpustat' check '%s'", build_dir(), scratch_file("health", "r.sht"));
	cr_assert_eq(run_shell(cmd, out, 1 << 20), 0, "the recording itself is good: %.1000s", out);
	free(out);
	scratch_remove();
}

/*
 * Where this machine's KVM never fires kvm_exit (the hosts' software KVM),
 * vcpustat sees the vCPUs (their KVM_RUNs) but no exit: it says so, live
 * and at a recording's end. Where kvm_exit fires (the KVM lab), it says
 * nothing: healthy.
 */
Test(health, exits_kvm_makes_and_kvm_exit_does_not_fire_for_are_said, .fini = proc_stop_all, .timeout = 180)
{
	char *out = malloc(1 << 20), cmd[1024];
	json_t *doc, *health;
	pid_t vmm;
	int rc;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	cr_assert_not_null(out);
	vmm = start_vm("exits", "60");
	cr_assert_gt(vmm, 0);
	sleep(1);
	snprintf(cmd, sizeof(cmd), "'%s/bin/vcpustat' -j -n 3 -d 2.5", build_dir());
	rc = run_shell(cmd, out, 1 << 20);
	cr_assert_eq(rc, 0, "%.2000s", out);
	doc = last_doc(out);
	health = json_object_get(doc, "health");
	cr_assert(json_is_object(health), "%.500s", out);
	if (kvm_exit_unavailable()) {
		cr_assert(json_is_false(json_object_get(health, "ok")), "%s", json_dumps(health, 0));
		cr_assert(has_problem(health, "exits_unseen"), "%s", json_dumps(health, 0));
		cr_assert(strstr(json_string_value(json_object_get(health, "message")), "kvm_exit fired for none"));
	} else {
		cr_assert(json_is_true(json_object_get(health, "ok")), "kvm_exit fires here: %s", json_dumps(health, 0));
	}
	json_decref(doc);
	snprintf(cmd, sizeof(cmd), "'%s/bin/vcpustat' record -q -o '%s' --duration 5", build_dir(),
		 scratch_file("health", "r.sht"));
	rc = run_shell(cmd, out, 1 << 20);
	if (kvm_exit_unavailable())
		cr_assert(rc == 1 && strstr(out, "kvm_exit fired for none"), "record: %d %.2000s", rc, out);
	else
		cr_assert_eq(rc, 0, "record: %.2000s", out);
	proc_stop(vmm);
	free(out);
	scratch_remove();
}

/*
 * `vcpustat probe -j` with a VM running: the kernel as uname says it, every
 * program with its form and status, the mode its probes imply, and the
 * verdict on kvm_exit: fires where it does (the KVM lab), silent on a
 * software KVM; its exit status says the same.
 */
Test(health, probe_says_what_the_kernel_gives_and_whether_kvm_exit_fires, .fini = proc_stop_all, .timeout = 180)
{
	char *out = malloc(1 << 20), cmd[512];
	json_t *doc, *p, *k;
	const char *verdict, *mode;
	struct utsname u;
	pid_t vmm;
	size_t i;
	int rc;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	cr_assert_not_null(out);
	vmm = start_vm("probe", "120");
	cr_assert_gt(vmm, 0);
	sleep(1);
	snprintf(cmd, sizeof(cmd), "'%s/bin/vcpustat' probe -j -d 3 2>/dev/null", build_dir());
	rc = run_shell(cmd, out, 1 << 20);
	proc_stop(vmm);
	doc = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert_not_null(doc, "probe -j: %.1000s", out);
	k = json_object_get(doc, "kernel");
	cr_assert_eq(uname(&u), 0);
	cr_assert_str_eq(json_string_value(json_object_get(k, "release")), u.release);
	cr_assert(json_is_true(json_object_get(doc, "loaded")), "%.1000s", out);
	mode = json_string_value(json_object_get(doc, "mode"));
	cr_assert(!strcmp(mode, "marks") || !strcmp(mode, "hot_page"), "%s", mode);
	if (!strcmp(mode, "marks"))
		cr_assert(json_is_true(json_object_get(k, "pidfd_thread")) && json_is_true(json_object_get(k, "task_storage")),
			  "marks mode only where its parts are");
	cr_assert_gt(json_array_size(json_object_get(doc, "programs")), 20);
	json_array_foreach(json_object_get(doc, "programs"), i, p) {
		const char *form = json_string_value(json_object_get(p, "form"));
		const char *name = json_string_value(json_object_get(p, "name"));

		cr_assert(form && (!strncmp(form, "tp_btf", 6) || !strcmp(form, "raw_tp") || !strcmp(form, "tp") ||
				   !strcmp(form, "fentry")), "%s: form %s", name, form);
		if (!strcmp(name, "on_kvm_exit") || !strcmp(name, "on_kvm_entry"))
			cr_assert_str_eq(json_string_value(json_object_get(p, "status")), "attached", "%s", name);
		if (!strcmp(name, "on_sched_switch"))
			cr_assert_str_eq(form, !strcmp(mode, "marks") ? "tp_btf (marks)" : "tp_btf");
	}
	verdict = json_string_value(json_object_get(json_object_get(doc, "kvm_exit"), "verdict"));
	cr_assert_geq(json_integer_value(json_object_get(json_object_get(doc, "kvm_exit"), "kvm_vms")), 1,
		      "KVM runs the VM");
	if (kvm_exit_unavailable()) {
		cr_assert_str_eq(verdict, "silent", "this machine's software KVM: %.1000s", out);
		cr_assert_eq(rc, 1, "blind: exit status 1");
	} else {
		cr_assert_str_eq(verdict, "fires", "%.1000s", out);
		cr_assert_gt(json_integer_value(json_object_get(json_object_get(doc, "kvm_exit"), "seen_exits")), 0);
		cr_assert_eq(rc, 0);
	}
	json_decref(doc);
	free(out);
}
