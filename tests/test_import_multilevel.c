// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The multi-level analysis: a guest thread runs while its vCPU is preempted
 * on the host by another VM's vCPU. Host and guest traces (the guest's clock
 * = 1.0002 x host + 5 s, synchronized from the traces themselves) must give
 * the exact virt_preempted intervals, and the report must name the other
 * VM's vCPU as the culprit. Then the rules one by one, on the library.
 */
#include <criterion/criterion.h>
#include "helpers.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <jansson.h>
#include "import_helpers.h"
#include "import_synth.h"
#include "multilevel_scenario.h"
#include "import/import.h"
#include "model/model.h"

static uint64_t mapped(const struct import_result *res, uint64_t guest_ns)
{
	struct vcpustat_sync_time t;

	cr_assert_eq(vcpustat_sync_apply(&res->guests[0].sync.transform, guest_ns, &t), 0);
	return t.host_ns - res->start_ns; /* file time */
}

static void assert_intervals(const char *sht, const char *path, const uint64_t (*want)[2], const char *const *value,
			     size_t n, uint64_t file_end)
{
	struct sht_interval *iv;
	struct sht_reader *r;
	size_t got = imp_intervals(sht, path, &iv, &r);

	for (size_t i = 0; i < got; i++)
		cr_log_info("%s [%llu, %llu) %s", path, (unsigned long long)iv[i].start, (unsigned long long)iv[i].end,
			    iv[i].value.type == SHT_STR ? iv[i].value.s : "(int)");
	cr_assert_eq(got, n, "%s: %zu intervals, %zu expected", path, got, n);
	for (size_t i = 0; i < n; i++) {
		char v[32];

		if (iv[i].value.type == SHT_INT)
			snprintf(v, sizeof(v), "%lld", (long long)iv[i].value.i);
		else
			snprintf(v, sizeof(v), "%s", iv[i].value.s);
		cr_assert_eq(iv[i].start, want[i][0], "%s #%zu: start %llu, expected %llu", path, i,
			     (unsigned long long)iv[i].start, (unsigned long long)want[i][0]);
		cr_assert_eq(iv[i].end, want[i][1] ? want[i][1] : file_end, "%s #%zu: end %llu, expected %llu", path, i,
			     (unsigned long long)iv[i].end, (unsigned long long)(want[i][1] ? want[i][1] : file_end));
		cr_assert_str_eq(v, value[i], "%s #%zu", path, i);
	}
	free(iv);
	sht_close(r);
}

Test(import_multilevel, guest_thread_virt_preempted_by_another_vms_vcpu)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" }, { 2000, "vmB" } };
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .names = names, .nnames = 2, .guests = &guest, .nguests = 1 };
	struct import_result res;
	struct scenario sc;
	uint64_t t0, in, out, sleep, end;
	char *sht;

	make_scenario(&sc, 11);
	o.host = sc.host;
	guest.path = sc.guest;
	sht = imp_run(&o, &res);
	cr_assert_eq(res.nguests, 1);
	cr_assert_eq(res.guests[0].sync.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert(res.guests[0].host_mode_known);
	cr_assert_eq(res.guests[0].ml.threads, 2, "fib and logger (the idle task is no thread)");
	cr_assert_eq(res.guests[0].ml.after_end, 0);
	t0 = sc.t0 - res.start_ns;
	end = res.end_ns - res.start_ns + 1; /* a file ends 1 ns after its last event */
	in = mapped(&res, sc.g_in);
	out = mapped(&res, sc.g_out);
	sleep = mapped(&res, sc.g_sleep);
	/* the transform puts the guest's events within a microsecond of when they happened */
	cr_assert_lt(llabs((long long)in - (long long)(t0 + 500 * US)), 1000);
	cr_assert_lt(llabs((long long)out - (long long)(t0 + 7000 * US)), 1000);
	{
		const uint64_t want[][2] = {
			{ in, t0 + 1000 * US },		  /* running */
			{ t0 + 1000 * US, t0 + 3002 * US }, /* exit, then preempted by VM B's vCPU */
			{ t0 + 3002 * US, t0 + 5000 * US }, /* running */
			{ t0 + 5000 * US, t0 + 5010 * US }, /* the MSR exit */
			{ t0 + 5010 * US, out },	  /* running */
			{ out, 0 },			  /* preempted in the guest, to the end */
		};
		const char *const value[] = { "running", "virt_preempted", "running", "virt_preempted", "running",
					      "preempted" };

		assert_intervals(sht, "/vms/vmA/threads/300/state", want, value, 6, end);
	}
	{
		const uint64_t want[][2] = { { out, sleep }, { sleep, 0 } };
		const char *const value[] = { "running", "blocked" };

		assert_intervals(sht, "/vms/vmA/threads/301/state", want, value, 2, end);
	}
	{
		const uint64_t want[][2] = { { in, out }, { out, sleep }, { sleep, 0 } };
		const char *const value[] = { "300", "301", "0" };

		assert_intervals(sht, "/vms/vmA/vcpus/0/guest_tid", want, value, 3, end);
	}
	{
		const uint64_t want[][2] = { { in, 0 } };
		const char *const value[] = { "fib" };

		assert_intervals(sht, "/vms/vmA/threads/300/name", want, value, 1, end);
	}

	/* the report: time lost to the host, and who took the CPU */
	{
		struct vcpustat_error err = { 0 };
		struct sht_reader *r;
		struct summary s;
		const struct vm_summary *vm = NULL;
		const struct guest_thread_summary *fib = NULL;
		bool culprits;

		cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
		cr_assert_eq(report_build(&s, r, sht_get_info(r)->start, sht_get_info(r)->end, NULL, &culprits, &err), 0,
			     "%s", err.msg);
		for (size_t i = 0; i < s.nr_vms; i++)
			if (!strcmp(s.vms[i].name, "vmA"))
				vm = &s.vms[i];
		cr_assert(vm);
		cr_assert_eq(vm->nr_guest_threads, 2);
		fib = &vm->guest_threads[0];
		cr_assert_eq(fib->tid, 300, "the thread that lost the most comes first");
		cr_assert_str_eq(fib->comm, "fib");
		cr_assert_eq(fib->vcpu, 0);
		cr_assert_eq(fib->ns[GUEST_VIRT_PREEMPTED], 2012 * US);
		cr_assert_eq(fib->lost_hypervisor_ns, 13 * US, "1000-1002, 3001-3002, 5000-5010 us");
		cr_assert_eq(fib->lost_runq_ns, 1999 * US);
		cr_assert_eq(fib->lost_blocked_ns, 0);
		cr_assert_eq(fib->ns[GUEST_RUNNING], (t0 + 1000 * US - in) + 1998 * US + (out - t0 - 5010 * US));
		cr_assert_eq(fib->nr_culprits, 1);
		cr_assert_eq(fib->culprits[0].tid, 2001);
		cr_assert_str_eq(fib->culprits[0].vm, "vmB");
		cr_assert_eq(fib->culprits[0].vcpu, 0);
		cr_assert_eq(fib->culprits[0].ns, 1999 * US);
		cr_assert_eq(vm->guest_threads[1].tid, 301);
		cr_assert_eq(vm->guest_threads[1].ns[GUEST_VIRT_PREEMPTED], 0);
		summary_free(&s);
		sht_close(r);
	}
	{
		static char text[65536];
		char args[512];
		json_error_t je;
		json_t *doc, *vms, *gt = NULL;

		snprintf(args, sizeof(args), "report %s --vm vmA", sht);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		cr_assert(strstr(text, "GUEST THREADS: time lost to the host"), "%s", text);
		cr_assert(strstr(text, "VM vmB vCPU 0"), "%s", text);
		snprintf(args, sizeof(args), "report %s --vm vmA --json", sht);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		doc = json_loads(text, 0, &je);
		cr_assert(doc, "%s", je.text);
		vms = json_object_get(doc, "vms");
		gt = json_array_get(json_object_get(json_array_get(vms, 0), "guest_threads"), 0);
		cr_assert(gt, "%s", text);
		cr_assert_eq(json_integer_value(json_object_get(gt, "tid")), 300);
		cr_assert_eq(json_integer_value(json_object_get(gt, "lost_to_host_ns")), 2012 * US);
		cr_assert_str_eq(json_string_value(json_object_get(
					 json_array_get(json_object_get(gt, "culprits"), 0), "vm")),
				 "vmB");
		json_decref(doc);
	}
	import_result_free(&res);
	unlink(sht);
	unlink(sc.host);
	unlink(sc.guest);
}

Test(import_multilevel, guest_without_sync_is_refused)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" } };
	struct layout l = nine;
	struct tev g[2] = {
		{ .type = T_SWITCH, .ts = 5000000000ull, .pid = 0, .comm = "swapper/0", .state = "R", .pid2 = 300,
		  .comm2 = "fib" },
		{ .type = T_SWITCH, .ts = 5000100000ull, .pid = 300, .comm = "fib", .state = "S", .pid2 = 0,
		  .comm2 = "swapper/0" },
	};
	struct scenario sc;
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .names = names, .nnames = 1, .guests = &guest, .nguests = 1, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct import_result res;

	make_scenario(&sc, 12);
	guest.path = imp_write_trace(g, 2, &l);
	o.host = sc.host;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -ENODATA);
	cr_assert(strstr(err.msg, "no synchronization") && strstr(err.msg, "vcpustat-sync-agent"), "%s", err.msg);
	import_result_free(&res);
	unlink(guest.path);
	unlink(sc.host);
	unlink(sc.guest);
}

/* ---- the rules, on the library ---- */

static struct vcpustat_record rec_state(uint64_t ts, uint32_t tid, uint32_t tgid, uint16_t vcpu, uint8_t from,
					uint8_t to)
{
	return (struct vcpustat_record){ .ts = ts, .tid = tid, .tgid = tgid, .type = VCPUSTAT_REC_STATE,
					 .cause = VCPUSTAT_EV_SWITCH, .from = from, .to = to, .vcpu = vcpu };
}

struct ml_run {
	struct recorder *rec;
	struct ml *ml;
	char *path;
};

static void ml_start(struct ml_run *m, uint64_t start, uint32_t tgid, const struct ml_guest_event *ev, size_t n,
		     bool host_mode_known)
{
	struct recorder_opts ro = { .mono_start_ns = start, .no_sync = true };
	struct vcpustat_error err = { 0 };

	m->path = imp_tmp(".sht");
	ro.path = m->path;
	cr_assert_eq(recorder_open(&m->rec, &ro, &err), 0, "%s", err.msg);
	cr_assert_eq(ml_new(&m->ml, m->rec, start), 0);
	cr_assert_eq(ml_add_guest(m->ml, tgid, ev, n, host_mode_known, &err), 0, "%s", err.msg);
}

static void ml_host(struct ml_run *m, const struct vcpustat_record *r)
{
	struct vcpustat_error err = { 0 };

	cr_assert_eq(ml_host_record(m->ml, r, &err), 0, "%s", err.msg);
	cr_assert_eq(recorder_add(m->rec, r, &err), 0, "%s", err.msg);
}

static void ml_state(struct ml_run *m, struct vcpustat_record r)
{
	ml_host(m, &r);
}

static void ml_end(struct ml_run *m, uint64_t end, struct ml_guest_stats *st)
{
	struct vcpustat_error err = { 0 };

	cr_assert_eq(ml_finish(m->ml, end, &err), 0, "%s", err.msg);
	ml_get_stats(m->ml, 0, st);
	cr_assert_eq(recorder_close(m->rec, end, &err), 0, "%s", err.msg);
	ml_free(m->ml);
}

Test(import_multilevel, rules_without_kvm_entry_early_events_and_one_instant)
{
	/* guest CPU 0: thread 7 in before the host trace starts, out and back in at one instant, exits */
	const struct ml_guest_event ev[] = {
		{ .ts = 50, .tid = 0, .tid2 = 7, .cpu = 0, .type = ML_EV_SWITCH, .comm2 = "seven" },
		{ .ts = 300, .tid = 7, .tid2 = 8, .cpu = 0, .type = ML_EV_SWITCH, .flags = ML_F_RUNNABLE, .comm = "seven",
		  .comm2 = "eight" },
		{ .ts = 300, .tid = 8, .tid2 = 7, .cpu = 0, .type = ML_EV_SWITCH, .flags = ML_F_RUNNABLE,
		  .comm = "eight", .comm2 = "seven" },
		{ .ts = 400, .tid = 9, .cpu = 0, .type = ML_EV_WAKEUP, .comm = "nine" },
		{ .ts = 500, .tid = 7, .tid2 = 0, .cpu = 0, .type = ML_EV_SWITCH, .flags = ML_F_EXITING, .comm = "seven" },
		{ .ts = 2000, .tid = 9, .cpu = 0, .type = ML_EV_EXIT }, /* after the host's end: not used */
	};
	struct vcpustat_record vnew = { .ts = 100, .tid = 11, .tgid = 10, .type = VCPUSTAT_REC_VCPU_NEW, .vcpu = 0 };
	struct ml_run m;
	struct ml_guest_stats st;

	/* no kvm_entry/kvm_exit for this VM: a vCPU on a CPU (HOST) counts as running guest code */
	ml_start(&m, 100, 10, ev, sizeof(ev) / sizeof(ev[0]), false);
	ml_host(&m, &vnew);
	ml_state(&m, rec_state(100, 11, 10, 0, VCPU_UNKNOWN, VCPU_HOST));
	ml_state(&m, rec_state(200, 11, 10, 0, VCPU_HOST, VCPU_PREEMPTED));
	ml_state(&m, rec_state(250, 11, 10, 0, VCPU_PREEMPTED, VCPU_HOST));
	ml_state(&m, rec_state(450, 11, 10, 0, VCPU_HOST, VCPU_BLOCKED));
	ml_state(&m, rec_state(480, 11, 10, 0, VCPU_BLOCKED, VCPU_HOST));
	ml_state(&m, rec_state(1000, 11, 10, 0, VCPU_HOST, VCPU_IDLE));
	ml_end(&m, 1000, &st);
	cr_assert_eq(st.threads, 3);
	cr_assert_eq(st.applied, 5);
	cr_assert_eq(st.after_end, 1);
	{
		/*
		 * file time = host time - 100; the switch at 50 counts from the start (0);
		 * the file ends 1 ns after its last record (900)
		 */
		const uint64_t want[][2] = { { 0, 100 }, { 100, 150 }, { 150, 350 }, { 350, 380 }, { 380, 400 } };
		const char *const value[] = { "running", "virt_preempted", "running", "virt_preempted", "running" };

		assert_intervals(m.path, "/vms/pid10/threads/7/state", want, value, 5, 901);
	}
	{
		/* 9 was woken at 400 (its exit after the host's end is not used) */
		const uint64_t want[][2] = { { 300, 0 } };
		const char *const value[] = { "wait" };

		assert_intervals(m.path, "/vms/pid10/threads/9/state", want, value, 1, 901);
	}
	{
		/* 8 was in and out at one instant: runnable, not running, from then on; written once */
		const uint64_t want[][2] = { { 200, 0 } };
		const char *const value[] = { "preempted" };

		assert_intervals(m.path, "/vms/pid10/threads/8/state", want, value, 1, 901);
	}
	{
		const uint64_t want[][2] = { { 200, 0 } };
		const char *const value[] = { "eight" };

		assert_intervals(m.path, "/vms/pid10/threads/8/name", want, value, 1, 901);
	}
	{
		const uint64_t want[][2] = { { 0, 400 }, { 400, 0 } };
		const char *const value[] = { "7", "0" };

		assert_intervals(m.path, "/vms/pid10/vcpus/0/guest_tid", want, value, 2, 901);
	}
	unlink(m.path);
}

Test(import_multilevel, one_vm_twice_is_refused)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" } };
	struct import_guest guests[2] = { { "vmA", NULL }, { "1000", NULL } };
	struct import_opts o = { .names = names, .nnames = 1, .guests = guests, .nguests = 2, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct import_result res;
	struct scenario sc;

	make_scenario(&sc, 13);
	guests[0].path = guests[1].path = sc.guest;
	o.host = sc.host;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -EINVAL);
	cr_assert(strstr(err.msg, "the same VM (vmA) twice"), "%s", err.msg);
	import_result_free(&res);
	unlink(sc.host);
	unlink(sc.guest);
}
