// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * LTTng CTF traces through libbabeltrace2: a real CTF 1.8 trace (metadata
 * and per-CPU binary streams, written by ctf_synth.h in LTTng's layout) gives
 * the same state history as its ftrace-text twin; sync markers written to
 * lttng-logger synchronize a guest; what a CTF trace without thread context
 * gives.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctf_synth.h"
#include "host_scenario.h"
#include "import_helpers.h"
#include "import_synth.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static char *ctf_dir(void)
{
	static char dirs[8][128];
	static int n;
	char *d = dirs[n++ % 8];

	snprintf(d, 128, "/tmp/vcpustat-ctf-XXXXXX");
	cr_assert(mkdtemp(d));
	return d;
}

static struct imp_dump import_dump(const char *host)
{
	static const struct import_vm_name names[] = { { 1000, "vmA" }, { 2000, "vmB" } };
	struct import_opts o = { .host = host, .names = names, .nnames = 2 };
	struct import_result res;
	struct imp_dump d;
	char *sht = imp_run(&o, &res);

	cr_assert_eq(res.host.malformed, 0);
	d = imp_dump(sht, NULL);
	import_result_free(&res);
	unlink(sht);
	return d;
}

Test(import_ctf, ctf_trace_gives_the_same_intervals_as_its_ftrace_twin)
{
	static struct tev e[128];
	size_t n = scenario(e, false);
	struct layout l = { .tgid = true, .irq = true, .decimals = 9 };
	char *text = imp_write_trace(e, n, &l), *dir = ctf_dir();
	struct imp_dump a, b, c;
	char meta[256];

	ctf_write(dir, e, n, 2);
	a = import_dump(text);
	b = import_dump(dir);
	cr_assert_gt(a.n, 50);
	imp_assert_same(&a, &b, "CTF vs ftrace text");
	/* the metadata file names the trace too */
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	c = import_dump(meta);
	imp_assert_same(&a, &c, "CTF by its metadata file");
	imp_dump_free(&a);
	imp_dump_free(&b);
	imp_dump_free(&c);
	rm_tree(dir);
	unlink(text);
}

Test(import_ctf, counts_and_skipped_events)
{
	static struct tev e[128];
	size_t n = scenario(e, false);
	struct import_opts o = { 0 };
	struct import_result res;
	char *dir = ctf_dir(), *sht;

	ctf_write(dir, e, n, 2);
	o.host = dir;
	sht = imp_run(&o, &res);
	cr_assert_eq(res.host.lines, n, "CTF: one 'line' per event");
	cr_assert_eq(res.host.skipped, 2, "the two irq_handler_entry events");
	cr_assert_eq(res.host.events, n - 2);
	cr_assert_not(res.two_passes, "LTTng's pid context tells every thread's process");
	cr_assert_eq(res.vms, 2);
	cr_assert_eq(res.vcpus, 3);
	import_result_free(&res);
	unlink(sht);
	rm_tree(dir);
}

Test(import_ctf, guest_markers_in_lttng_logger_synchronize)
{
	struct synth p = synth_default(21);
	struct sync_traces o = { .vcpu_pid = 1001, .vm_tgid = 1000, .agent_pid = 900, .key0 = 1ull << 48 };
	struct tev *h = NULL, *g = NULL;
	size_t nh = 0, ng = 0;
	char *host_dir = ctf_dir(), *guest_dir = ctf_dir();
	struct vcpustat_sync_protocol_stats ps;
	struct vcpustat_sync_result r;
	struct import_sync_events ev;
	struct vcpustat_error err = { 0 };

	sync_tevs(&p, &o, &h, &nh, &g, &ng);
	tev_sort(h, nh);
	tev_sort(g, ng);
	ctf_write(host_dir, h, nh, 1);
	ctf_write(guest_dir, g, ng, 2);
	cr_assert_eq(import_sync(host_dir, guest_dir, NULL, NULL, &r, &ps, &ev, &err), 0, "%s", err.msg);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE);
	cr_assert_eq(ev.na, ng / 2);
	cr_assert_eq(ev.nb, nh / 3);
	for (int i = 0; i <= 100; i++) {
		long double gt = r.transform.guest_first + (r.transform.guest_last - r.transform.guest_first) * i / 100, hh;

		vcpustat_sync_eval(&r.transform, gt, &hh, NULL, NULL);
		cr_assert_lt(fabsl(hh - synth_host(&p, gt)), 1000);
	}
	import_sync_events_free(&ev);
	free(h);
	free(g);
	rm_tree(host_dir);
	rm_tree(guest_dir);
}

Test(import_ctf, kvm_events_without_thread_context)
{
	/* a trace recorded without `add-context -t tid`: KVM events cannot be attributed */
	static struct tev e[128];
	size_t n = scenario(e, false);
	char *dir = ctf_dir(), meta[256];
	struct vcpustat_error err = { 0 };
	struct import_opts o = { .no_sync = true };
	struct import_result res;
	FILE *f;
	char *text, *at;

	ctf_write(dir, e, n, 2);
	/* the same trace, but the event context lacks _tid: rewrite the metadata and drop those 4 bytes... */
	/* ...simpler: rename the context member, so "tid" is not found */
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	text = strdup(ctf_metadata);
	at = strstr(text, "int32_t _tid;");
	memcpy(at, "int32_t _xid;", 13);
	f = fopen(meta, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	o.host = dir;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -EINVAL);
	cr_assert(strstr(err.msg, "no tid context") && strstr(err.msg, "add-context") && strstr(err.msg, dir),
		  "%s", err.msg);
	import_result_free(&res);
	o.trace.lenient = true;
	cr_assert_eq(vcpustat_import(&o, &res, &err), 0, "%s", err.msg);
	cr_assert_gt(res.host.malformed, 10);
	cr_assert_eq(res.vcpus, 0);
	import_result_free(&res);
	unlink(o.out);
	rm_tree(dir);
}

Test(import_ctf, not_a_ctf_trace)
{
	char *dir = ctf_dir(), meta[256];
	struct vcpustat_error err = { 0 };
	struct import_opts o = { .no_sync = true };
	struct import_result res;
	FILE *f;

	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	f = fopen(meta, "w");
	fputs("/* CTF 1.8 */\ngarbage\n", f);
	fclose(f);
	o.host = dir;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -EINVAL);
	cr_assert(strstr(err.msg, dir) && strstr(err.msg, "not a CTF trace"), "%s", err.msg);
	import_result_free(&res);
	rm_tree(dir);
}

/*
 * A packet's cpu_id of 0xffffffff (issue 40: shown as pCPU 65535): refused,
 * naming the trace and the event; with --lenient its events are counted as
 * malformed and none of them is given to another CPU.
 */
Test(import_ctf, a_cpu_id_beyond_what_a_record_holds_is_refused_naming_the_event)
{
	static struct tev e[128];
	size_t n = scenario(e, false);
	static const unsigned char ones[4] = { 0xff, 0xff, 0xff, 0xff };
	char *dir = ctf_dir(), chan[256];
	struct vcpustat_error err = { 0 };
	struct import_opts o = { .no_sync = true };
	struct import_result res;
	FILE *f;

	ctf_write(dir, e, n, 1);
	snprintf(chan, sizeof(chan), "%s/chan_0", dir);
	f = fopen(chan, "r+");
	cr_assert(f);
	cr_assert_eq(fseek(f, 4 + 4 + 8 + 8 + 8 + 8, SEEK_SET), 0); /* the packet context's cpu_id */
	cr_assert_eq(fwrite(ones, 1, 4, f), 4);
	fclose(f);
	o.host = dir;
	o.out = imp_tmp(".sht");
	cr_assert_eq(vcpustat_import(&o, &res, &err), -EINVAL);
	cr_assert(strstr(err.msg, dir) && strstr(err.msg, ": event 1 (") && strstr(err.msg, "CPU 4294967295 is out of range"),
		  "%s", err.msg);
	import_result_free(&res);
	o.trace.lenient = true;
	cr_assert_eq(vcpustat_import(&o, &res, &err), -ENODATA, "every event is on that CPU: %s", err.msg);
	cr_assert_eq(res.host.malformed, n - 2, "all but the two skipped irq events");
	import_result_free(&res);
	unlink(o.out);
	rm_tree(dir);
}
