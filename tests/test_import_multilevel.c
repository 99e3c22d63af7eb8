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
#include "model/summary.h"
#include "model/report.h"
#include "record/record.h"

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

/* A guest CR3 that a capture says the vCPU thread tid exited in, at t0 + us. */
struct cr3_at {
	uint32_t tid;
	uint64_t us;
	uint64_t cr3;
};

/*
 * The host trace of sc as `vcpustat record --capture` would have kept it: the
 * same events as the handler gets them (process ids filled, as the BPF
 * programs fill them), VMs named in the capture, and after each kvm_exit in
 * cr3 the guest CR3 event --address-spaces adds. extras: also what record
 * writes besides events, vmA's cgroup and a lost-record total of 7 at +2 ms.
 */
static char *host_capture(const struct scenario *sc, const struct cr3_at *cr3, size_t ncr3, bool extras)
{
	struct vcpustat_error err = { 0 };
	struct { uint32_t tid, tgid; } grp[64];
	uint32_t named[64];
	size_t ngrp = 0, named_n = 0, i;
	struct capture_writer *w;
	struct trace_reader *tr;
	struct trace_event te;
	char *path = imp_tmp(".vcap");
	bool first = true;
	int ret;

	cr_assert_eq(trace_open(&tr, sc->host, NULL, &err), 0, "%s", err.msg);
	while ((ret = trace_next(tr, &te, &err)) == 1) /* who belongs to which process: the TGID column */
		if (te.tgid >= 0 && ngrp < 64) {
			i = 0;
			while (i < ngrp && grp[i].tid != te.pid)
				i++;
			grp[i].tid = te.pid;
			grp[i].tgid = (uint32_t)te.tgid;
			ngrp += i == ngrp;
		}
	cr_assert_eq(ret, 0, "%s", err.msg);
	cr_assert_eq(trace_rewind(tr, &err), 0, "%s", err.msg);
	while ((ret = trace_next(tr, &te, &err)) == 1) {
		struct vcpustat_event ev = te.ev;

		if (first) {
			cr_assert_eq(capture_create(&w, path, ev.ts, 1795356187000000000ull, "level=full\ncpus=2\n", &err),
				     0, "%s", err.msg);
			cr_assert_eq(capture_write_name(w, 1000, "vmA", &err), 0, "%s", err.msg);
			cr_assert_eq(capture_write_name(w, 2000, "vmB", &err), 0, "%s", err.msg);
			if (extras)
				cr_assert_eq(capture_write_cgroup(w, 1000, 4026531836ull,
								  "/machine.slice/machine-qemu\\x2d1\\x2dvmA.scope", &err),
					     0, "%s", err.msg);
			first = false;
		}
		if (extras && ev.ts >= sc->t0 + 2000 * US) {
			cr_assert_eq(capture_write_lost(w, sc->t0 + 2000 * US, 7, &err), 0, "%s", err.msg);
			extras = false;
		}
		ev.tgid = ev.tgid2 = 0;
		for (size_t i = 0; i < ngrp; i++) {
			if (grp[i].tid == ev.tid)
				ev.tgid = grp[i].tgid;
			if (ev.type == VCPUSTAT_EV_SWITCH && ev.tid2 && grp[i].tid == ev.tid2)
				ev.tgid2 = grp[i].tgid;
		}
		/* each thread named at its first event, as record names them from /proc */
		for (int k = 0; k < 2; k++) {
			uint32_t tid = (uint32_t)(k ? ev.tid2 : ev.tid), tgid = (uint32_t)(k ? ev.tgid2 : ev.tgid);
			const char *name = k ? te.next_comm : ev.comm;

			if ((k && ev.type != VCPUSTAT_EV_SWITCH) || !name[0] || name[0] == '<' || named_n >= 64)
				continue;
			for (i = 0; i < named_n && named[i] != tid; i++)
				;
			if (i < named_n)
				continue;
			named[named_n++] = tid;
			cr_assert_eq(capture_write_thread(w, tid, tgid, name, &err), 0, "%s", err.msg);
		}
		cr_assert_eq(capture_write(w, &ev, &err), 0, "%s", err.msg);
		for (size_t i = 0; i < ncr3 && ev.type == VCPUSTAT_EV_KVM_EXIT; i++)
			if (cr3[i].tid == ev.tid && sc->t0 + cr3[i].us * US == ev.ts) {
				struct vcpustat_event c = ev;

				c.type = VCPUSTAT_EV_GUEST_CR3;
				c.arg0 = cr3[i].cr3;
				c.arg1 = c.arg2 = 0;
				cr_assert_eq(capture_write(w, &c, &err), 0, "%s", err.msg);
			}
	}
	cr_assert_eq(ret, 0, "%s", err.msg);
	trace_close(tr);
	cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	return path;
}

/*
 * A live recording's capture is a host trace for the multi-level analysis:
 * with the same guest trace, it gives the same file, interval for interval,
 * as the ftrace text of the same events -- its VMs named by the capture.
 */
Test(import_multilevel, a_capture_is_a_host_trace_too)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" }, { 2000, "vmB" } };
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .names = names, .nnames = 2, .guests = &guest, .nguests = 1 };
	struct import_result res;
	struct imp_dump a, b;
	struct scenario sc;
	char *text_sht, *cap_sht, *cap;

	make_scenario(&sc, 12);
	o.host = sc.host;
	guest.path = sc.guest;
	text_sht = imp_run(&o, NULL);
	cap = host_capture(&sc, NULL, 0, false);
	o.host = cap;
	o.names = NULL;
	o.nnames = 0;
	cap_sht = imp_run(&o, &res);
	cr_assert_eq(res.guests[0].sync.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(res.guests[0].ml.threads, 2);
	a = imp_dump(text_sht, NULL);
	b = imp_dump(cap_sht, NULL);
	cr_assert_gt(a.n, 20);
	imp_assert_same(&a, &b, "ftrace text vs capture");
	{
		struct sht_reader *r;
		struct vcpustat_error err = { 0 };

		cr_assert_eq(sht_open(&r, cap_sht, &err), 0, "%s", err.msg);
		cr_assert_str_eq(sht_meta_get(r, "host_format"), "capture");
		cr_assert(sht_has_wall_clock(r), "the capture's wall clock is kept");
		sht_close(r);
	}
	/* without a guest trace, importing a capture is replaying it */
	{
		static char text[8192];
		char args[512], *replayed = imp_tmp(".sht"), *imported;
		struct imp_dump c, d;

		snprintf(args, sizeof(args), "replay %s -o %s", cap, replayed);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		o.nguests = 0;
		imported = imp_run(&o, NULL);
		o.nguests = 1;
		c = imp_dump(replayed, NULL);
		d = imp_dump(imported, NULL);
		imp_assert_same(&c, &d, "replay vs import of one capture");
		imp_dump_free(&c);
		imp_dump_free(&d);
		unlink(replayed);
		unlink(imported);
	}
	/* a capture is no guest trace */
	{
		struct vcpustat_error err = { 0 };
		struct import_result r2;

		guest.path = cap;
		o.host = sc.host;
		o.names = names;
		o.nnames = 2;
		o.out = imp_tmp(".sht");
		cr_assert_neq(vcpustat_import(&o, &r2, &err), 0);
		cr_assert(strstr(err.msg, cap) && strstr(err.msg, "a vcpustat capture is a host's events"), "%s",
			  err.msg);
		import_result_free(&r2);
		unlink(o.out);
	}
	imp_dump_free(&a);
	imp_dump_free(&b);
	import_result_free(&res);
	unlink(text_sht);
	unlink(cap_sht);
	unlink(cap);
	unlink(sc.host);
	unlink(sc.guest);
}

/*
 * Guest address spaces named from the host alone plus the guest's scheduler
 * trace: each CR3 read at an exit belongs to the guest thread current on that
 * vCPU at that instant. vCPU 0 of vmA exits at +1000 and +5000 us in CR3
 * 0xa000, with fib (300) current both times; at +9000 us in 0xb000, with the
 * guest idle (no name: the idle task runs in whatever address space it
 * found). vmB, whose guest trace is not given, exits at +3000 us in 0xc000.
 */
Test(import_multilevel, address_spaces_are_named_by_the_guest_thread_current_at_their_exits)
{
	static const struct cr3_at cr3[] = {
		{ 1001, 1000, 0xa000 }, { 1001, 5000, 0xa000 }, { 1001, 9000, 0xb000 }, { 2001, 3000, 0xc000 },
	};
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .guests = &guest, .nguests = 1 };
	struct vcpustat_error err = { 0 };
	const struct vm_summary *va = NULL, *vb = NULL;
	struct sht_reader *r;
	struct summary s;
	struct scenario sc;
	char *sht, *cap;
	bool culprits;

	make_scenario(&sc, 13);
	cap = host_capture(&sc, cr3, 4, true);
	o.host = cap;
	guest.path = sc.guest;
	sht = imp_run(&o, NULL);
	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(&s, r, sht_get_info(r)->start, sht_get_info(r)->end, NULL, &culprits, &err), 0, "%s",
		     err.msg);
	for (size_t i = 0; i < s.nr_vms; i++) {
		if (!strcmp(s.vms[i].name, "vmA"))
			va = &s.vms[i];
		if (!strcmp(s.vms[i].name, "vmB"))
			vb = &s.vms[i];
	}
	cr_assert(va && vb, "both VMs, named by the capture");
	cr_assert_str_eq(va->cgroup, "/machine.slice/machine-qemu\\x2d1\\x2dvmA.scope", "the capture's cgroup");
	cr_assert_eq(va->pidns, 4026531836ull);
	cr_assert_eq(s.lost[VCPUSTAT_LOST_RINGBUF], 7, "the capture's lost-record total");
	cr_assert_eq(va->nr_address_spaces, 2);
	cr_assert_eq(va->address_spaces[0].addr, 0xb000, "most guest time first");
	cr_assert_eq(va->address_spaces[0].sum_ns, 3990 * US, "5010..9000 us");
	cr_assert_eq(va->address_spaces[0].count, 1);
	cr_assert_eq(va->address_spaces[0].guest_tid, 0, "the guest was idle at its exit: no name");
	cr_assert_eq(va->address_spaces[1].addr, 0xa000);
	cr_assert_eq(va->address_spaces[1].sum_ns, 2997 * US, "1..1000 and 3002..5000 us");
	cr_assert_eq(va->address_spaces[1].count, 2);
	cr_assert_eq(va->address_spaces[1].guest_tid, 300);
	cr_assert_eq(va->address_spaces[1].guest_tid_exits, 2);
	cr_assert_str_eq(va->address_spaces[1].guest_comm, "fib");
	cr_assert_eq(vb->nr_address_spaces, 1);
	cr_assert_eq(vb->address_spaces[0].addr, 0xc000);
	cr_assert_eq(vb->address_spaces[0].sum_ns, 1997 * US);
	cr_assert_eq(vb->address_spaces[0].guest_tid, 0, "no guest trace of vmB");
	summary_free(&s);
	sht_close(r);
	{
		static char text[65536];
		char args[512];
		json_error_t je;
		json_t *doc, *as, *g;
		char svg[] = "/tmp/vcpustat-asnames-XXXXXX.svg";
		FILE *f;
		int fd;

		snprintf(args, sizeof(args), "report %s --vm vmA", sht);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		cr_assert(strstr(text, "GUEST THREAD (AT EXITS)"), "%s", text);
		cr_assert(strstr(text, "fib (300) 2/2"), "%s", text);
		snprintf(args, sizeof(args), "report %s --vm vmA --json", sht);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		doc = json_loads(text, 0, &je);
		cr_assert(doc, "%s", je.text);
		as = json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "address_spaces");
		cr_assert_eq(json_array_size(as), 2, "%s", text);
		cr_assert_null(json_object_get(json_array_get(as, 0), "guest_thread"), "%s", text);
		g = json_object_get(json_array_get(as, 1), "guest_thread");
		cr_assert_eq(json_integer_value(json_object_get(g, "tid")), 300, "%s", text);
		cr_assert_str_eq(json_string_value(json_object_get(g, "comm")), "fib");
		cr_assert_eq(json_integer_value(json_object_get(g, "exits")), 2);
		json_decref(doc);
		fd = mkstemps(svg, 4);
		cr_assert_geq(fd, 0);
		close(fd);
		snprintf(args, sizeof(args), "plot %s --vm vmA -o %s", sht, svg);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		f = fopen(svg, "r");
		cr_assert(f);
		text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
		fclose(f);
		cr_assert(strstr(text, "1 exits</text>") && strstr(text, "2 exits; fib (300) at 2</text>"),
			  "the plot's bars name 0xa000 only");
		unlink(svg);
	}
	unlink(sht);
	unlink(cap);
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

/* A guest trace's CPU of 65541 (a vCPU index no record holds) is refused, naming the line (issue 40). */
Test(import_multilevel, a_guest_cpu_beyond_what_a_record_holds_is_refused_naming_the_line)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" } };
	struct layout l = nine;
	struct tev g[2] = {
		{ .type = T_SWITCH, .ts = 5000000000ull, .pid = 0, .comm = "swapper/0", .state = "R", .pid2 = 300,
		  .comm2 = "fib" },
		{ .type = T_SWITCH, .ts = 5000100000ull, .cpu = 65541, .pid = 300, .comm = "fib", .state = "S",
		  .pid2 = 0, .comm2 = "swapper/0" },
	};
	struct scenario sc;
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .names = names, .nnames = 1, .guests = &guest, .nguests = 1, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct import_result res;
	char want[256];

	make_scenario(&sc, 12);
	guest.path = imp_write_trace(g, 2, &l);
	o.host = sc.host;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -EINVAL, "%s", err.msg);
	snprintf(want, sizeof(want), "%s:", guest.path);
	cr_assert(strstr(err.msg, want) && strstr(err.msg, "CPU 65541 is out of range"), "%s", err.msg);
	import_result_free(&res);
	unlink(guest.path);
	unlink(sc.host);
	unlink(sc.guest);
}

/* A guest trace whose markers all appear twice: "no synchronization" says they were dropped (issue 40). */
Test(import_multilevel, duplicate_sync_keys_are_said_to_be_dropped)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" } };
	struct scenario sc;
	struct import_guest guest = { "vmA", NULL };
	struct import_opts o = { .names = names, .nnames = 1, .guests = &guest, .nguests = 1, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct import_result res;
	char *text, *twice;
	size_t n;
	FILE *f;

	make_scenario(&sc, 12);
	f = fopen(sc.guest, "r");
	cr_assert(f);
	text = calloc(1, 1 << 22);
	n = fread(text, 1, (1 << 22) - 1, f);
	fclose(f);
	twice = malloc(2 * n + 1);
	memcpy(twice, text, n);
	memcpy(twice + n, text, n);
	twice[2 * n] = 0;
	guest.path = imp_write_text(twice);
	o.host = sc.host;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -ENODATA, "%s", err.msg);
	cr_assert(strstr(err.msg, "matched: 0; dropped: ") && strstr(err.msg, "keys seen twice in a trace"), "%s",
		  err.msg);
	cr_assert_gt(res.guests[0].protocol.duplicate_keys, 0);
	import_result_free(&res);
	free(text);
	free(twice);
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

/* ---- a nested guest (L2 in L1): --guest VM@L1=TRACE ---- */

/* The host time of an L1 time through L1's transform, as file time. */
static uint64_t through(const struct import_result *res, size_t gi, uint64_t ns)
{
	struct vcpustat_sync_time t;

	cr_assert_eq(vcpustat_sync_apply(&res->guests[gi].sync.transform, ns, &t), 0);
	return t.host_ns - res->start_ns;
}

static struct tev l1_ev(enum tev_type type, uint64_t ts, uint32_t cpu, uint32_t pid, const char *reason)
{
	return (struct tev){ .type = type, .ts = ts, .cpu = cpu, .pid = pid, .tgid = 800, .comm = "CPU 0/KVM",
			     .reason = reason };
}

/*
 * Host (L0): the scenario's VM A is an L1 hypervisor: its vCPU 0 on host
 * CPU 0 in guest mode from +1 us, an interrupt exit at +1000 us, preempted by
 * VM B from +1002 to +3001 us, an MSR exit from +5000 to +5010 us, a halt at
 * +9000 us. In L1 (its own trace, its own clock): the nested VM 800's vCPU 0
 * (L1 thread 801) on L1's CPU 0 from +100 us, in L2's guest mode from +200
 * us, an exit to L1's KVM from +4000 to +4050 us, a halt at +8800 us; L2's
 * sync agent's hypercalls on its vCPU 1 (802). In L2 (a third clock): fib2
 * (400) runs on CPU 0 from +500 us until logger2 (401) preempts it at +7000
 * us; logger2 sleeps at +7900 us. fib2 runs only while both levels run its
 * vCPU.
 */
Test(import_multilevel, nested_guest_runs_only_while_both_levels_run_it)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" }, { 2000, "vmB" } };
	struct import_guest guests[2] = { { "vmA", NULL, NULL }, { "pid800", NULL, "vmA" } };
	struct import_opts o = { .names = names, .nnames = 2, .guests = guests, .nguests = 2 };
	struct sync_traces agent2 = { .vcpu_pid = 802, .vm_tgid = 800, .host_cpu = 1, .vcpu = 1, .agent_pid = 700,
				      .guest_cpu = 1, .key0 = 2ull << 48 };
	struct synth p2;
	struct import_result res;
	struct scenario sc;
	struct tev *l1 = NULL, *l2 = NULL, *h = NULL;
	size_t n1 = 0, n2 = 0, nh = 0;
	uint64_t t0, in, out, x[6], end;
	char *sht, *l1_path, *l2_path;

	make_scenario(&sc, 21); /* host trace and L1's sync markers (sc.guest) */
	t0 = sc.t0;
	/* L1's trace: its sync markers with the host (below, as the scenario made them) and the nested VM */
	p2 = synth_default(22);
	p2.alpha = 0.9997L;
	p2.beta = -2e9L;
	p2.host0 = (uint64_t)synth_guest(&sc.p, (long double)sc.p.host0) + 1000000000ull;
	p2.duration_ns = 55000000000ull;
	sync_tevs(&p2, &agent2, &l1, &n1, &l2, &n2);
#define L1T(us) ((uint64_t)llroundl(synth_guest(&sc.p, (long double)(t0 + (us) * US))))
#define L2T(us) ((uint64_t)llroundl(synth_guest(&p2, synth_guest(&sc.p, (long double)(t0 + (us) * US)))))
	l1 = realloc(l1, (n1 + 8) * sizeof(*l1));
	l1[n1++] = (struct tev){ .type = T_SWITCH, .ts = L1T(100), .cpu = 0, .pid = 0, .tgid = 0, .comm = "swapper/0",
				 .state = "R", .pid2 = 801, .comm2 = "CPU 0/KVM" };
	l1[n1++] = l1_ev(T_ENTRY, L1T(200), 0, 801, NULL);
	l1[n1++] = l1_ev(T_KEXIT, L1T(4000), 0, 801, "EXTERNAL_INTERRUPT");
	l1[n1++] = l1_ev(T_ENTRY, L1T(4050), 0, 801, NULL);
	l1[n1++] = l1_ev(T_KEXIT, L1T(8800), 0, 801, "HLT");
	l1[n1++] = (struct tev){ .type = T_SWITCH, .ts = L1T(8801), .cpu = 0, .pid = 801, .tgid = 800,
				 .comm = "CPU 0/KVM", .state = "S", .pid2 = 0, .comm2 = "swapper/0" };
	for (size_t i = 0; i < n1; i++) /* 802 is CPU 1/KVM (sync_tevs names it) */
		if (l1[i].pid == 802)
			l1[i].comm = "CPU 1/KVM";
	l2 = realloc(l2, (n2 + 4) * sizeof(*l2));
	l2[n2++] = guest_sw(L2T(500), 0, "swapper/0", "R", 400, "fib2");
	l2[n2++] = guest_sw(L2T(7000), 400, "fib2", "R+", 401, "logger2");
	l2[n2++] = guest_sw(L2T(7900), 401, "logger2", "S", 0, "swapper/0");
	/* L1's own sync rounds with the host: its markers from the scenario, regenerated the same way */
	{
		struct sync_traces agent1 = { .vcpu_pid = 1002, .vm_tgid = 1000, .host_cpu = 1, .vcpu = 1,
					      .agent_pid = 900, .guest_cpu = 1, .key0 = 1ull << 48 };
		struct synth p1 = synth_default(21);

		sync_tevs(&p1, &agent1, &h, &nh, &l1, &n1);
	}
	tev_sort(l1, n1);
	tev_sort(l2, n2);
	l1_path = imp_write_trace(l1, n1, &nine);
	l2_path = imp_write_trace(l2, n2, &nine);
	guests[0].path = l1_path;
	guests[1].path = l2_path;
	o.host = sc.host;
	sht = imp_run(&o, &res);
	cr_assert_eq(res.nguests, 2);
	cr_assert_str_eq(res.guests[1].vm, "vmA.pid800");
	cr_assert_str_eq(res.guests[1].parent, "vmA");
	cr_assert_eq(res.guests[1].sync.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert(res.guests[1].host_mode_known, "L1's trace shows the nested VM's kvm_entry/kvm_exit");
	cr_assert_gt(res.guests[1].parent_states, 4);
	end = res.end_ns - res.start_ns + 1;
	in = through(&res, 1, L2T(500));
	out = through(&res, 1, L2T(7000));
	/* the composed transform places L2's events within a microsecond of when they happened */
	cr_assert_lt(llabs((long long)in - (long long)(t0 - res.start_ns + 500 * US)), 1000);
	cr_assert_lt(llabs((long long)out - (long long)(t0 - res.start_ns + 7000 * US)), 1000);
	x[0] = t0 - res.start_ns + 1000 * US; /* the host's events: exact */
	x[1] = t0 - res.start_ns + 3002 * US;
	x[2] = through(&res, 0, L1T(4000)); /* L1's events: through L1's transform */
	x[3] = through(&res, 0, L1T(4050));
	x[4] = t0 - res.start_ns + 5000 * US;
	x[5] = t0 - res.start_ns + 5010 * US;
	{
		const uint64_t want[][2] = { { in, x[0] },   { x[0], x[1] }, { x[1], x[2] }, { x[2], x[3] },
					     { x[3], x[4] }, { x[4], x[5] }, { x[5], out },  { out, 0 } };
		const char *const value[] = { "running", "virt_preempted", "running", "virt_preempted",
					      "running", "virt_preempted", "running", "preempted" };

		assert_intervals(sht, "/vms/vmA.pid800/threads/400/state", want, value, 8, end);
	}
	{
		/* its vCPU 0 on the host's timeline: L1's view, else the host's view of L1's vCPU 0 */
		const uint64_t want[][2] = {
			{ through(&res, 0, L1T(200)), x[0] }, /* guest (a vCPU from its first kvm_entry in L1) */
			{ x[0], t0 - res.start_ns + 1002 * US },		      /* L1's vCPU exited to the host */
			{ t0 - res.start_ns + 1002 * US, t0 - res.start_ns + 3001 * US }, /* L1's vCPU preempted */
			{ t0 - res.start_ns + 3001 * US, x[1] },		      /* its host thread back, not in guest */
			{ x[1], x[2] },						      /* guest */
			{ x[2], x[3] },						      /* in L1's KVM */
			{ x[3], x[4] },						      /* guest */
			{ x[4], x[5] },						      /* L1's MSR exit */
			{ x[5], through(&res, 0, L1T(8800)) },			      /* guest */
		};
		const char *const value[] = { "1", "2", "3", "2", "1", "2", "1", "2", "1" };
		struct sht_interval *iv;
		struct sht_reader *r;
		size_t got = imp_intervals(sht, "/vms/vmA.pid800/vcpus/0/state", &iv, &r);

		cr_assert_geq(got, 9, "%zu intervals", got);
		for (size_t i = 0; i < 9; i++) {
			char v[32];

			snprintf(v, sizeof(v), "%lld", (long long)iv[i].value.i);
			cr_assert_eq(iv[i].start, want[i][0], "#%zu: start %llu, expected %llu", i,
				     (unsigned long long)iv[i].start, (unsigned long long)want[i][0]);
			cr_assert_eq(iv[i].end, want[i][1], "#%zu: end %llu, expected %llu", i,
				     (unsigned long long)iv[i].end, (unsigned long long)want[i][1]);
			cr_assert_str_eq(v, value[i], "#%zu", i);
		}
		free(iv);
		sht_close(r);
	}
	/* the report: fib2's time lost, split by what its vCPU was doing */
	{
		struct vcpustat_error err = { 0 };
		struct sht_reader *r;
		struct summary s;
		const struct vm_summary *vm = NULL;
		bool culprits;

		cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
		cr_assert_eq(report_build(&s, r, sht_get_info(r)->start, sht_get_info(r)->end, NULL, &culprits, &err), 0,
			     "%s", err.msg);
		for (size_t i = 0; i < s.nr_vms; i++)
			if (!strcmp(s.vms[i].name, "vmA.pid800"))
				vm = &s.vms[i];
		cr_assert(vm, "the nested VM is in the report");
		cr_assert_geq(vm->nr_guest_threads, 1);
		cr_assert_eq(vm->guest_threads[0].tid, 400);
		cr_assert_eq(vm->guest_threads[0].ns[GUEST_VIRT_PREEMPTED],
			     (x[1] - x[0]) + (x[3] - x[2]) + (x[5] - x[4]));
		cr_assert_eq(vm->guest_threads[0].lost_runq_ns, 1999 * US, "L1's vCPU preempted by VM B");
		summary_free(&s);
		sht_close(r);
	}
	/* the command line: VM@L1=TRACE, the report's lines, and an L1 that is not a guest of the host */
	{
		static char text[65536];
		char args[2048], *sht2 = imp_tmp(".sht");

		snprintf(args, sizeof(args),
			 "import --host %s --vm-name 1000=vmA --vm-name 2000=vmB --guest vmA=%s --guest 800@vmA=%s -o %s",
			 sc.host, l1_path, l2_path, sht2);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		cr_assert(strstr(text, "-> VM vmA.pid800: ") && strstr(text, "nested in VM vmA: synchronized through its "
										"trace"),
			  "%s", text);
		snprintf(args, sizeof(args), "report %s --vm vmA.pid800", sht2);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 0, "%s", text);
		cr_assert(strstr(text, "GUEST THREADS: time lost to the host") && strstr(text, "fib2"), "%s", text);
		snprintf(args, sizeof(args), "import --host %s --guest 800@vmB=%s -o %s", sc.host, l2_path, sht2);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 1, "%s", text);
		cr_assert(strstr(text, "vmB is not a guest of the host given with --guest vmB=TRACE"), "%s", text);
		snprintf(args, sizeof(args), "import --host %s --vm-name 1000=vmA --guest vmA=%s --guest 900@vmA=%s -o %s",
			 sc.host, l1_path, l2_path, sht2);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 1, "%s", text);
		cr_assert(strstr(text, "--guest 900: no such VM in ") && strstr(text, l1_path), "%s", text);
		snprintf(args, sizeof(args), "import --host %s --guest @vmA=%s -o %s", sc.host, l2_path, sht2);
		cr_assert_eq(run_vcpustat(args, text, sizeof(text)), 2, "%s", text);
		unlink(sht2);
	}
	import_result_free(&res);
	free(l1);
	free(l2);
	free(h);
	unlink(sht);
	unlink(sc.host);
	unlink(sc.guest);
	unlink(l1_path);
	unlink(l2_path);
#undef L1T
#undef L2T
}
