// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Clock synchronization from traces: the protocol's events found in a host
 * trace (kvm_hypercall, kvm_entry) or a recording (.sht sync intervals) and
 * in a guest trace (vcpustat_sync markers), matched and solved. The clocks
 * are known: guest = 1.0002 x host + 5 s, one-way delays 2-50 us with 1 %
 * outliers, a round every 10-100 ms over 60 s.
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

static const struct layout nine = { .tgid = true, .irq = true, .decimals = 9 };

/* Host and guest traces of one VM (tgid 1000, vCPU thread 1001) running the agent. */
static void make_traces(const struct synth *p, const struct sync_traces *o, char **host, char **guest)
{
	struct tev *h = NULL, *g = NULL;
	size_t nh = 0, ng = 0;

	sync_tevs(p, o, &h, &nh, &g, &ng);
	tev_sort(h, nh);
	tev_sort(g, ng);
	*host = imp_write_trace(h, nh, &nine);
	*guest = imp_write_trace(g, ng, &nine);
	free(h);
	free(g);
}

static const struct sync_traces vm_a = { .vcpu_pid = 1001, .vm_tgid = 1000, .agent_pid = 900, .key0 = 1ull << 48 };

static void sync_ok(const char *host, const char *guest, const char *vm, struct vcpustat_sync_result *r,
		    struct vcpustat_sync_protocol_stats *ps)
{
	struct vcpustat_error err = { 0 };
	struct import_sync_events ev;

	cr_assert_eq(import_sync(host, guest, vm, NULL, r, ps, &ev, &err), 0, "%s", err.msg);
	import_sync_events_free(&ev);
}

/* Largest |estimate - truth| over the measured range; asserts the truth is within the bounds. */
static long double check_against_truth(const struct synth *p, const struct vcpustat_sync_result *r, long double g0,
				       long double g1)
{
	long double worst = 0;

	for (int i = 0; i <= 1000; i++) {
		long double g = g0 + (g1 - g0) * i / 1000, h, lo, hi, truth = synth_host(p, g);

		vcpustat_sync_eval(&r->transform, g, &h, &lo, &hi);
		cr_assert(truth >= lo - 0.5L && truth <= hi + 0.5L, "truth %.1Lf outside [%.1Lf, %.1Lf] at guest %.0Lf",
			  truth, lo, hi, g);
		if (fabsl(h - truth) > worst)
			worst = fabsl(h - truth);
	}
	return worst;
}

Test(import_sync, transform_from_traces_is_within_its_bounds_and_1us_of_the_truth)
{
	long double worst = 0, worst_bound = 0;

	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct synth p = synth_default(seed);
		struct vcpustat_sync_protocol_stats ps;
		struct vcpustat_sync_result r;
		char *host, *guest;
		long double err;

		make_traces(&p, &vm_a, &host, &guest);
		sync_ok(host, guest, NULL, &r, &ps);
		cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE, "seed %llu: %s", (unsigned long long)seed,
			     vcpustat_sync_quality_name(r.quality));
		cr_assert_gt(ps.guest_to_host, 500);
		cr_assert_eq(ps.guest_to_host, ps.host_to_guest);
		cr_assert_eq(ps.unmatched + ps.duplicate_keys + ps.inconsistent_keys, 0);
		cr_assert_geq(r.host_last_ns - r.host_first_ns, 59000000000ull, "60 s of rounds");
		err = check_against_truth(&p, &r, r.transform.guest_first, r.transform.guest_last);
		cr_assert_lt(err, 1000, "seed %llu: %.0Lf ns from the truth", (unsigned long long)seed, err);
		if (err > worst)
			worst = err;
		if (r.transform.max_error_ns > worst_bound)
			worst_bound = r.transform.max_error_ns;
		unlink(host);
		unlink(guest);
	}
	cr_log_info("sync from traces, 10 seeds x 60 s: worst error %.0Lf ns, worst guaranteed bound %.0Lf ns", worst,
		    worst_bound);
	fprintf(stderr, "import_sync: 10 seeds x 60 s from ftrace text: worst estimate error %.0Lf ns, worst bound %.0Lf ns\n",
		worst, worst_bound);
}

Test(import_sync, one_direction_is_incomplete)
{
	struct synth p = synth_default(3);
	struct sync_traces o = vm_a;
	struct vcpustat_sync_protocol_stats ps;
	struct vcpustat_sync_result r;
	char *host, *guest;

	o.no_d = true; /* a -> b only */
	make_traces(&p, &o, &host, &guest);
	sync_ok(host, guest, NULL, &r, &ps);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_INCOMPLETE, "%s", vcpustat_sync_quality_name(r.quality));
	cr_assert_eq(r.nr_host_to_guest, 0);
	cr_assert_gt(r.nr_guest_to_host, 500);
	cr_assert(!isfinite(r.transform.max_error_ns), "no bound");
	unlink(host);
	unlink(guest);
}

Test(import_sync, clock_jump_crosses_the_hulls_fails_and_keeps_the_last_good_transform)
{
	struct synth p = synth_default(4);
	struct sync_traces o = vm_a;
	struct vcpustat_sync_protocol_stats ps;
	struct vcpustat_sync_result r;
	char *host, *guest;
	long double err;

	o.jump_after = (long double)p.host0 + 30e9L; /* after 30 s the guest clock jumps 1 ms ahead */
	o.jump_ns = 1e6L;
	make_traces(&p, &o, &host, &guest);
	sync_ok(host, guest, NULL, &r, &ps);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_FAIL);
	cr_assert_eq(r.transform_quality, VCPUSTAT_SYNC_ACCURATE, "the last good one");
	cr_assert_gt(r.fail_match.send_ns + 0, 0);
	cr_assert_geq((long double)(r.fail_match.dir == VCPUSTAT_SYNC_GUEST_TO_HOST ? r.fail_match.recv_ns :
										     r.fail_match.send_ns),
		      o.jump_after, "the first match after the jump");
	cr_assert_leq(r.host_last_ns, (uint64_t)o.jump_after, "only matches before the jump were used");
	/* before the jump, the kept transform is right */
	err = check_against_truth(&p, &r, r.transform.guest_first, r.transform.guest_last);
	cr_assert_lt(err, 1000, "%.0Lf ns", err);
	unlink(host);
	unlink(guest);
}

Test(import_sync, recording_as_host_gives_the_same_transform)
{
	struct synth p = synth_default(5);
	struct vcpustat_sync_result from_trace, from_sht;
	struct vcpustat_sync_protocol_stats ps1, ps2;
	struct import_opts o = { 0 };
	char *host, *guest, *sht;

	make_traces(&p, &vm_a, &host, &guest);
	sync_ok(host, guest, NULL, &from_trace, &ps1);
	/* the import writes b..c as /vms/<vm>/vcpus/<n>/sync intervals, as a live recording does */
	o.host = host;
	sht = imp_run(&o, NULL);
	sync_ok(sht, guest, NULL, &from_sht, &ps2);
	cr_assert_eq(from_sht.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(ps2.guest_to_host, ps1.guest_to_host);
	cr_assert_eq(ps2.host_to_guest, ps1.host_to_guest);
	cr_assert_eq(from_sht.alpha, from_trace.alpha, "same matches, same result");
	cr_assert_eq(from_sht.beta, from_trace.beta);
	sync_ok(sht, guest, "pid1000", &from_sht, &ps2);
	cr_assert_eq(from_sht.alpha, from_trace.alpha);
	sync_ok(sht, guest, "1000", &from_sht, &ps2);
	cr_assert_eq(from_sht.alpha, from_trace.alpha);
	{
		struct vcpustat_error err = { 0 };
		struct import_sync_events ev;

		cr_assert_eq(import_sync(sht, guest, "pid7", NULL, &from_sht, &ps2, &ev, &err), -ENOENT);
		cr_assert(strstr(err.msg, "no VM pid7"), "%s", err.msg);
		import_sync_events_free(&ev);
	}
	unlink(sht);
	unlink(host);
	unlink(guest);
}

Test(import_sync, each_vm_gets_its_own_hypercalls)
{
	struct synth pa = synth_default(6), pb = synth_default(7);
	struct sync_traces b = vm_a;
	struct vcpustat_sync_protocol_stats ps;
	struct vcpustat_sync_result r;
	struct tev *h = NULL, *ga = NULL, *gb = NULL;
	size_t nh = 0, na = 0, nb = 0;
	char *host, *guest;

	/* VM B (tgid 2000) runs the agent too, on another CPU, with its own clock and keys */
	b.vcpu_pid = 2001;
	b.vm_tgid = 2000;
	b.host_cpu = 1;
	b.key0 = 2ull << 48;
	pb.beta = -3e9L;
	pb.alpha = 0.9999L;
	sync_tevs(&pa, &vm_a, &h, &nh, &ga, &na);
	sync_tevs(&pb, &b, &h, &nh, &gb, &nb);
	tev_sort(h, nh);
	host = imp_write_trace(h, nh, &nine);
	guest = imp_write_trace(ga, na, &nine);
	sync_ok(host, guest, "pid1000", &r, &ps);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(ps.unmatched, 0, "only VM A's hypercalls");
	cr_assert_lt(check_against_truth(&pa, &r, r.transform.guest_first, r.transform.guest_last), 1000);
	sync_ok(host, guest, "2000", &r, &ps);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ABSENT, "VM B's keys are not the guest's");
	/* every VM: B's events are unmatched but harmless */
	sync_ok(host, guest, NULL, &r, &ps);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_gt(ps.unmatched, 500);
	free(h);
	free(ga);
	free(gb);
	unlink(host);
	unlink(guest);
}

Test(import_sync, cli_sync_host_guest)
{
	struct synth p = synth_default(8);
	static char out[65536];
	char *host, *guest, args[1024];
	json_error_t je;
	json_t *doc;

	make_traces(&p, &vm_a, &host, &guest);
	snprintf(args, sizeof(args), "sync --host %s --guest %s", host, guest);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "quality:     accurate"), "%s", out);
	cr_assert(strstr(out, "events:      guest "), "%s", out);
	cr_assert(strstr(out, "guest clock = host × 1.000") && strstr(out, "accurate: error ≤"), "%s", out);
	snprintf(args, sizeof(args), "sync --host %s --guest %s --vm pid1000 --json", host, guest);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	doc = json_loads(out, 0, &je);
	cr_assert(doc, "%s: %s", je.text, out);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "quality")), "accurate");
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(doc, "events"), "a")), 500);
	cr_assert_lt(fabs(json_real_value(json_object_get(doc, "alpha")) - 1.0002), 1e-7);
	json_decref(doc);
	snprintf(args, sizeof(args), "sync --host %s --guest %s --vm nosuch", host, guest);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "--vm nosuch: no such VM"), "%s", out);
	unlink(host);
	unlink(guest);
}
