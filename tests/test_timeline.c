// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The timeline export (user/export/timeline.c, timeline_ctf.c,
 * docs/export.md): a synthetic recording with known states, exits and host
 * CPUs, exported as Chrome trace-event JSON and read back with jansson (the
 * trace-event schema, the exact slices, their sums against the recording's,
 * the window and --vm filters), and as CTF read back with the babeltrace2
 * command and with libbabeltrace2 (the same events at the same times); the
 * command's errors leave no output behind.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <babeltrace2/babeltrace.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli_run.h"
#include "export/export.h"
#include "sht/sht.h"

/* ---- the recording ---- */

struct set {
	const char *path;
	uint64_t t;
	int type; /* SHT_NULL, SHT_INT, SHT_STR */
	int64_t i;
	const char *s;
};

#define I(p, t, v)                                                                                                     \
	{                                                                                                              \
		p, t, SHT_INT, v, NULL                                                                                 \
	}
#define S(p, t, v)                                                                                                     \
	{                                                                                                              \
		p, t, SHT_STR, 0, v                                                                                    \
	}
#define N(p, t)                                                                                                        \
	{                                                                                                              \
		p, t, SHT_NULL, 0, NULL                                                                                \
	}

#define V0 "/vms/vm1/vcpus/0/"
#define V1 "/vms/vm1/vcpus/1/"
#define W0 "/vms/vm2/vcpus/0/"
#define END 10000ull		    /* the file's end (ns) */
#define MONO 5000000000ull	    /* CLOCK_MONOTONIC at t = 0 */
#define REAL 1795436729000000000ull /* CLOCK_REALTIME at t = 0 */

/*
 * vm1 (pid 1000): vCPU 0 (tid 1001) guest, host (exit HLT, userspace exit
 * IO), preempted by stress-ng (500) on CPU 0, host, guest, idle; vCPU 1 (tid
 * 1002) guest, blocked, gone. vm2 (pid 2000): vCPU 0 (tid 2001) wait, guest
 * (an EPT_VIOLATION exit). Times in ns, most not whole µs.
 */
static const struct set sets[] = {
	I("/vms/vm1/pid", 0, 1000),
	I(V0 "tid", 0, 1001),
	I(V0 "state", 0, 1),
	I(V0 "pcpu", 0, 0),
	I(V1 "tid", 0, 1002),
	I(V1 "state", 0, 1),
	I("/host/cpus/0/current_tid", 0, 1001),
	I("/host/cpus/1/current_tid", 0, 1002),
	S("/host/threads/1001/name", 0, "CPU 0/KVM"),
	S("/host/threads/1002/name", 0, "CPU 1/KVM"),
	S("/host/threads/500/name", 0, "stress-ng"),
	I("/vms/vm2/pid", 50, 2000),
	I(W0 "tid", 50, 2001),
	S("/host/threads/2001/name", 50, "CPU 0/KVM"),
	I(W0 "state", 100, 4),
	I(W0 "state", 400, 1),
	I(V0 "state", 1001, 2),
	S(V0 "exit_reason", 1001, "HLT"),
	S(V0 "userspace_exit", 1234, "IO"),
	I(V0 "state", 1500, 3),
	I("/host/cpus/0/current_tid", 1500, 500),
	N(V0 "userspace_exit", 2400),
	I(V0 "state", 2500, 2),
	I("/host/cpus/0/current_tid", 2500, 1001),
	I(V0 "state", 2617, 1),
	N(V0 "exit_reason", 2617),
	I(V1 "state", 3333, 6),
	I("/host/cpus/1/current_tid", 3333, 0),
	I("/host/cpus/1/current_tid", 3400, 2001),
	S(W0 "exit_reason", 4000, "EPT_VIOLATION"),
	N(W0 "exit_reason", 4123),
	I(V0 "state", 5000, 5),
	I("/host/cpus/0/current_tid", 5000, 0),
	N(V1 "state", 7777),
	N(V1 "tid", 7777),
};

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/vcpustat-tl-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void teardown(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void make_recording(const char *path)
{
	struct sht_writer_opts o = { .no_sync = true, .mono_start_ns = MONO, .real_start_ns = REAL };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		const struct set *s = &sets[i];
		uint32_t a;

		cr_assert_eq(sht_writer_attr(w, s->path, &a), 0);
		if (s->type == SHT_INT)
			cr_assert_eq(sht_writer_set_int(w, a, s->t, s->i), 0);
		else if (s->type == SHT_STR)
			cr_assert_eq(sht_writer_set_str(w, a, s->t, s->s), 0);
		else
			cr_assert_eq(sht_writer_set_null(w, a, s->t), 0);
	}
	cr_assert_eq(sht_writer_close(w, END, &err), 0, "%s", err.msg);
}

/* ---- the JSON read back ---- */

struct slice {
	char name[64];
	uint64_t ts, dur; /* ns, from the µs of the file */
};

static uint64_t ns_of(json_t *v)
{
	cr_assert(json_is_number(v));
	cr_assert_geq(json_number_value(v), 0);
	return (uint64_t)llround(json_number_value(v) * 1000.0);
}

/*
 * Check the trace-event schema of every event of doc; return its traceEvents.
 * Every event: name (string), ph, ts (number), pid and tid (integers); X: dur
 * >= 0; M: one of the metadata names, with args; slices of one (pid, tid) do
 * not overlap.
 */
static json_t *check_schema(json_t *doc)
{
	json_t *evs = json_object_get(doc, "traceEvents"), *e;
	size_t i;

	cr_assert(json_is_array(evs));
	cr_assert_str_eq(json_string_value(json_object_get(doc, "displayTimeUnit")), "ns");
	json_array_foreach(evs, i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));

		cr_assert(json_is_string(json_object_get(e, "name")), "event %zu: no name", i);
		cr_assert_not_null(ph, "event %zu: no ph", i);
		cr_assert(json_is_number(json_object_get(e, "ts")), "event %zu: no ts", i);
		cr_assert(json_is_integer(json_object_get(e, "pid")), "event %zu: no pid", i);
		cr_assert(json_is_integer(json_object_get(e, "tid")), "event %zu: no tid", i);
		if (!strcmp(ph, "X")) {
			cr_assert(json_is_number(json_object_get(e, "dur")), "event %zu: X without dur", i);
			cr_assert_geq(json_number_value(json_object_get(e, "dur")), 0);
			cr_assert_geq(json_number_value(json_object_get(e, "ts")), 0);
		} else {
			const char *n = json_string_value(json_object_get(e, "name"));

			cr_assert_str_eq(ph, "M", "event %zu: ph %s", i, ph);
			cr_assert(!strcmp(n, "process_name") || !strcmp(n, "thread_name") ||
				      !strcmp(n, "process_sort_index") || !strcmp(n, "thread_sort_index"),
				  "metadata %s", n);
			cr_assert(json_is_object(json_object_get(e, "args")));
		}
	}
	/* no overlap on a track: for each X, no other X of its track starts inside it */
	json_array_foreach(evs, i, e)
	{
		json_t *f;
		size_t j;

		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		json_array_foreach(evs, j, f)
		{
			uint64_t a, b, c;

			if (j == i || strcmp(json_string_value(json_object_get(f, "ph")), "X") ||
			    json_integer_value(json_object_get(f, "pid")) !=
				json_integer_value(json_object_get(e, "pid")) ||
			    json_integer_value(json_object_get(f, "tid")) !=
				json_integer_value(json_object_get(e, "tid")))
				continue;
			a = ns_of(json_object_get(e, "ts"));
			b = a + ns_of(json_object_get(e, "dur"));
			c = ns_of(json_object_get(f, "ts"));
			cr_assert(c < a || c >= b || (c == a && j > i && a == b), "slices %zu and %zu overlap", i, j);
		}
	}
	return evs;
}

/* The (pid, tid) of the thread called track in the process called proc; false if none. */
static bool find_track(json_t *evs, const char *proc, const char *track, json_int_t *pid, json_int_t *tid)
{
	json_t *e;
	size_t i;

	*pid = -1;
	json_array_foreach(
	    evs, i, e) if (!strcmp(json_string_value(json_object_get(e, "name")), "process_name") &&
			   !strcmp(json_string_value(json_object_get(json_object_get(e, "args"), "name")), proc)) *pid =
	    json_integer_value(json_object_get(e, "pid"));
	json_array_foreach(
	    evs, i, e) if (!strcmp(json_string_value(json_object_get(e, "name")), "thread_name") &&
			   json_integer_value(json_object_get(e, "pid")) == *pid &&
			   !strcmp(json_string_value(json_object_get(json_object_get(e, "args"), "name")), track))
	{
		*tid = json_integer_value(json_object_get(e, "tid"));
		return true;
	}
	return false;
}

/* The slices of a track, in time order (the file writes them so). */
static size_t slices(json_t *evs, const char *proc, const char *track, struct slice *out, size_t max)
{
	json_int_t pid, tid;
	size_t n = 0, i;
	json_t *e;

	cr_assert(find_track(evs, proc, track, &pid, &tid), "no track %s / %s", proc, track);
	json_array_foreach(evs, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
		    json_integer_value(json_object_get(e, "pid")) != pid ||
		    json_integer_value(json_object_get(e, "tid")) != tid)
			continue;
		cr_assert_lt(n, max);
		snprintf(out[n].name, sizeof(out[n].name), "%s", json_string_value(json_object_get(e, "name")));
		out[n].ts = ns_of(json_object_get(e, "ts"));
		out[n].dur = ns_of(json_object_get(e, "dur"));
		cr_assert(n == 0 || out[n].ts >= out[n - 1].ts + out[n - 1].dur);
		n++;
	}
	return n;
}

struct want {
	const char *name;
	uint64_t ts, dur;
};

static void expect(json_t *evs, const char *proc, const char *track, const struct want *w, size_t nw)
{
	struct slice s[32];
	size_t n = slices(evs, proc, track, s, 32);

	cr_assert_eq(n, nw, "%s %s: %zu slices, expected %zu", proc, track, n, nw);
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(s[i].name, w[i].name, "%s %s slice %zu", proc, track, i);
		cr_expect_eq(s[i].ts, w[i].ts, "%s %s slice %zu: ts %llu ns, expected %llu", proc, track, i,
			     (unsigned long long)s[i].ts, (unsigned long long)w[i].ts);
		cr_expect_eq(s[i].dur, w[i].dur, "%s %s slice %zu: dur %llu ns, expected %llu", proc, track, i,
			     (unsigned long long)s[i].dur, (unsigned long long)w[i].dur);
	}
}

static json_t *export_json(const char *sht, uint64_t t1, uint64_t t2, const struct summary_filter *f, size_t want_vms)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	char out[128];
	size_t nvms = 99;
	json_error_t je;
	json_t *doc;

	path_in(out, sizeof(out), "t.json");
	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(timeline_export(r, sht, t1, t2, f, TIMELINE_CHROME_JSON, out, &nvms, &err), 0, "%s", err.msg);
	cr_assert_eq(nvms, want_vms);
	sht_close(r);
	doc = json_load_file(out, 0, &je);
	cr_assert_not_null(doc, "%s: %s at line %d", out, je.text, je.line);
	return doc;
}

TestSuite(timeline, .init = setup, .fini = teardown);

Test(timeline, chrome_json_has_every_slice_of_the_recording)
{
	char sht[128];
	json_t *doc, *evs;

	path_in(sht, sizeof(sht), "rec.sht");
	make_recording(sht);
	doc = export_json(sht, 0, END, NULL, 2);
	evs = check_schema(doc);
	{
		const struct want w[] = { { "guest", 0, 1001 },	 { "host", 1001, 499 },	  { "preempted", 1500, 1000 },
					  { "host", 2500, 117 }, { "guest", 2617, 2383 }, { "idle", 5000, 5000 } };
		expect(evs, "vm1", "vCPU 0", w, 6);
	}
	{
		const struct want w[] = { { "HLT", 1001, 1616 } };
		expect(evs, "vm1", "vCPU 0 exits", w, 1);
	}
	{
		const struct want w[] = { { "IO", 1234, 1166 } };
		expect(evs, "vm1", "vCPU 0 userspace exits", w, 1);
	}
	{
		const struct want w[] = { { "guest", 0, 3333 }, { "blocked", 3333, 4444 } };
		expect(evs, "vm1", "vCPU 1", w, 2);
	}
	{
		const struct want w[] = { { "wait", 100, 300 }, { "guest", 400, 9600 } };
		expect(evs, "vm2", "vCPU 0", w, 2);
	}
	{
		const struct want w[] = { { "EPT_VIOLATION", 4000, 123 } };
		expect(evs, "vm2", "vCPU 0 exits", w, 1);
	}
	{ /* the thread on each CPU: a vCPU by its VM, another thread by name; idle is no slice */
		const struct want w[] = { { "vm1 vCPU 0", 0, 1500 },
					  { "stress-ng", 1500, 1000 },
					  { "vm1 vCPU 0", 2500, 2500 } };
		expect(evs, "host CPUs", "CPU 0", w, 3);
	}
	{
		const struct want w[] = { { "vm1 vCPU 1", 0, 3333 }, { "vm2 vCPU 0", 3400, 6600 } };
		expect(evs, "host CPUs", "CPU 1", w, 2);
	}
	/* processes are the VMs' pids; no two tracks share a tid */
	{
		json_int_t pid, tid, tid2;

		cr_assert(find_track(evs, "vm1", "vCPU 0", &pid, &tid));
		cr_assert_eq(pid, 1000);
		cr_assert(find_track(evs, "vm2", "vCPU 0", &pid, &tid2));
		cr_assert_eq(pid, 2000);
		cr_assert_neq(tid, tid2);
	}
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "otherData"), "file")), sht);
	json_decref(doc);
}

/* Sum of the durations of the intervals of the SHT attribute path with value v, cut to [t1, t2). */
static uint64_t sht_sum(const char *sht, const char *path, int64_t v, uint64_t t1, uint64_t t2)
{
	struct vcpustat_error err = { 0 };
	struct sht_interval *iv = NULL;
	struct sht_reader *r;
	uint64_t sum = 0;
	uint32_t a;
	size_t n = 0;

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_attr_lookup(r, path, &a), 0);
	cr_assert_eq(sht_query_range(r, a, NULL, t1, t2, &iv, &n, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		uint64_t s = iv[i].start < t1 ? t1 : iv[i].start, e = iv[i].end > t2 ? t2 : iv[i].end;

		if (iv[i].value.type == SHT_INT && iv[i].value.i == v && e > s)
			sum += e - s;
	}
	free(iv);
	sht_close(r);
	return sum;
}

static uint64_t json_sum(json_t *evs, const char *proc, const char *track, const char *name)
{
	struct slice s[32];
	size_t n = slices(evs, proc, track, s, 32);
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			sum += s[i].dur;
	return sum;
}

/* The same over any number of slices. */
static uint64_t json_sum_big(json_t *evs, const char *proc, const char *track, const char *name)
{
	json_int_t pid, tid;
	uint64_t sum = 0;
	json_t *e;
	size_t i;

	cr_assert(find_track(evs, proc, track, &pid, &tid), "no track %s / %s", proc, track);
	json_array_foreach(evs, i, e) if (!strcmp(json_string_value(json_object_get(e, "ph")), "X") &&
					  json_integer_value(json_object_get(e, "pid")) == pid &&
					  json_integer_value(json_object_get(e, "tid")) == tid &&
					  !strcmp(json_string_value(json_object_get(e, "name")), name)) sum +=
	    ns_of(json_object_get(e, "dur"));
	return sum;
}

Test(timeline, chrome_json_window_and_vm_filter_cut_the_slices)
{
	static const char *const states[] = { "unknown", "guest", "host", "preempted", "wait", "idle", "blocked", "poll" };
	const char *keep[] = { "2000" };
	const struct summary_filter f = { keep, 1 };
	char sht[128];
	json_t *doc, *evs;
	json_int_t pid, tid;

	path_in(sht, sizeof(sht), "rec.sht");
	make_recording(sht);
	/* the window [1600, 4050]: slices cut at both ends, their sums those of the SHT's intervals cut alike */
	doc = export_json(sht, 1600, 4050, NULL, 2);
	evs = check_schema(doc);
	for (int s = 0; s < VCPU_NR_STATES; s++) {
		cr_expect_eq(json_sum(evs, "vm1", "vCPU 0", states[s]), sht_sum(sht, V0 "state", s, 1600, 4050),
			     "vm1 vCPU 0 %s", states[s]);
		cr_expect_eq(json_sum(evs, "vm1", "vCPU 1", states[s]), sht_sum(sht, V1 "state", s, 1600, 4050),
			     "vm1 vCPU 1 %s", states[s]);
		cr_expect_eq(json_sum(evs, "vm2", "vCPU 0", states[s]), sht_sum(sht, W0 "state", s, 1600, 4050),
			     "vm2 vCPU 0 %s", states[s]);
	}
	{
		const struct want w[] = { { "preempted", 1600, 900 }, { "host", 2500, 117 }, { "guest", 2617, 1433 } };
		expect(evs, "vm1", "vCPU 0", w, 3);
	}
	{
		const struct want w[] = { { "HLT", 1600, 1017 } };
		expect(evs, "vm1", "vCPU 0 exits", w, 1);
	}
	{
		const struct want w[] = { { "EPT_VIOLATION", 4000, 50 } };
		expect(evs, "vm2", "vCPU 0 exits", w, 1);
	}
	json_decref(doc);

	/* --vm 2000 (by pid): vm2 and the host CPUs (who else ran there), not vm1 */
	doc = export_json(sht, 0, END, &f, 1);
	evs = check_schema(doc);
	cr_assert_not(find_track(evs, "vm1", "vCPU 0", &pid, &tid));
	cr_assert(find_track(evs, "vm2", "vCPU 0", &pid, &tid));
	{
		const struct want w[] = { { "vm1 vCPU 1", 0, 3333 }, { "vm2 vCPU 0", 3400, 6600 } };
		expect(evs, "host CPUs", "CPU 1", w, 2);
	}
	json_decref(doc);
}

/* How many files dir holds besides the recording (0 after a failed export: no output, no temporary). */
static int others_in_dir(void)
{
	char cmd[256], line[512];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A %s | grep -v '^rec.sht$'", dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		cr_log_info("in %s: %s", dir, line);
		n++;
	}
	pclose(p);
	return n;
}

Test(timeline, chrome_json_from_the_command_line_both_forms)
{
	char sht[128], a[128], b[128], ca[1 << 16], cb[1 << 16];
	struct run r;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(a, sizeof(a), "a.json");
	path_in(b, sizeof(b), "b.json");
	make_recording(sht);
	RUN(&r, "export", sht, "--format", "chrome-json", "-o", a);
	cr_assert_eq(r.status, 0, "%s", r.err);
	RUN(&r, "export", "--file", sht, "-f", "chrome-json", "-o", b);
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(a, ca, sizeof(ca));
	slurp_into(b, cb, sizeof(cb));
	cr_assert_gt(strlen(ca), 1000);
	cr_assert_str_eq(ca, cb);
	/* --from/--to and --vm reach it */
	RUN(&r, "export", sht, "-f", "chrome-json", "-o", a, "--from", "1600", "--to", "4050", "--vm", "vm2");
	cr_assert_eq(r.status, 0, "%s", r.err);
	slurp_into(a, ca, sizeof(ca));
	cr_assert_null(strstr(ca, "{\"name\":\"vm1\"}"), "%s", ca); /* no process vm1 */
	cr_assert_not_null(strstr(ca, "{\"name\":\"vm2\"}"), "%s", ca);
	cr_assert_not_null(strstr(ca, "\"ts\":1.6,\"dur\":0.9,"), "%s", ca); /* CPU 0: stress-ng cut at 1600 */
	/* a --vm that matches none: an error naming the VMs, no file */
	unlink(a);
	RUN(&r, "export", sht, "-f", "chrome-json", "-o", a, "--vm", "nosuch");
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "vm1"), "%s", r.err);
	unlink(b);
	cr_assert_eq(others_in_dir(), 0);
}

Test(timeline, chrome_json_errors_leave_no_output)
{
	char sht[128], bad[128], out[128], nodir[160];
	struct run r;
	FILE *f;
	char buf[65536];
	size_t n;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(out, sizeof(out), "out.json");
	make_recording(sht);
	/* no -o, -o -: a usage error */
	RUN(&r, "export", sht, "-f", "chrome-json");
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "-o FILE"), "%s", r.err);
	RUN(&r, "export", sht, "-f", "chrome-json", "-o", "-");
	cr_assert_eq(r.status, 2);
	/* no recording (live): a usage error, nothing attached */
	RUN(&r, "export", "-f", "chrome-json", "-o", out);
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "FILE.sht"), "%s", r.err);
	/* an unknown format names the new one among the known */
	RUN(&r, "export", sht, "-f", "chrome", "-o", out);
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "chrome-json"), "%s", r.err);
	/* -o where nothing can be written */
	snprintf(nodir, sizeof(nodir), "%s/no/such/dir/out.json", dir);
	RUN(&r, "export", sht, "-f", "chrome-json", "-o", nodir);
	cr_assert_eq(r.status, 1);
	cr_assert_not_null(strstr(r.err, nodir), "%s", r.err);
	/* -o the recording itself */
	RUN(&r, "export", sht, "-f", "chrome-json", "-o", sht);
	cr_assert_eq(r.status, 2);
	cr_assert_eq(others_in_dir(), 0);

	/* a corrupt recording: its first 4 KiB and garbage */
	f = fopen(sht, "rb");
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	cr_assert_gt(n, 4096);
	memset(buf + 64, 0x5a, n - 64);
	path_in(bad, sizeof(bad), "bad.sht");
	f = fopen(bad, "wb");
	fwrite(buf, 1, n, f);
	fclose(f);
	RUN(&r, "export", bad, "-f", "chrome-json", "-o", out);
	cr_assert_eq(r.status, 1);
	cr_assert_not_null(strstr(r.err, bad), "%s", r.err);
	unlink(bad);
	cr_assert_eq(others_in_dir(), 0);
}

/* A write that fails half-way (a file-size limit: EFBIG) leaves nothing: the temporary file is removed. */
Test(timeline, chrome_json_failed_write_leaves_no_output)
{
	const char *demo = VCPUSTAT_SOURCE_DIR "/tools/demo/demo.sht";
	char out[128];
	pid_t pid;
	int st;

	path_in(out, sizeof(out), "out.json");
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 64 * 1024, 64 * 1024 };
		struct vcpustat_error err = { 0 };
		struct sht_reader *r;
		int e;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		if (sht_open(&r, demo, &err))
			_exit(3);
		e = timeline_export(r, demo, 0, sht_get_info(r)->end, NULL, TIMELINE_CHROME_JSON, out, NULL, &err);
		sht_close(r);
		_exit(e == -EIO && strstr(err.msg, out) && strstr(err.msg, "File too large") ? 1 : 2);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st), 1, "the export did not fail as it should: %d", WEXITSTATUS(st));
	cr_assert_eq(others_in_dir(), 0);
}

/* ---- CTF ---- */

/* The recording's events as the CTF trace must hold them: "t(ns since start, 20 digits) name { fields }". */
static const char *const ctf_events[] = {
	"00000000000000000000 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 0, state = \"guest\", state_id = 1, "
	"duration_ns = 1001 }",
	"00000000000000000000 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 1, state = \"guest\", state_id = 1, "
	"duration_ns = 3333 }",
	"00000000000000000000 pcpu_vcpu { cpu = 0, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = 1500 }",
	"00000000000000000000 pcpu_vcpu { cpu = 1, tid = 1002, vm = \"vm1\", vcpu = 1, duration_ns = 3333 }",
	"00000000000000000100 vcpu_state { vm = \"vm2\", vm_pid = 2000, vcpu = 0, state = \"wait\", state_id = 4, "
	"duration_ns = 300 }",
	"00000000000000000400 vcpu_state { vm = \"vm2\", vm_pid = 2000, vcpu = 0, state = \"guest\", state_id = 1, "
	"duration_ns = 9600 }",
	"00000000000000001001 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 0, state = \"host\", state_id = 2, "
	"duration_ns = 499 }",
	"00000000000000001001 vcpu_exit { vm = \"vm1\", vm_pid = 1000, vcpu = 0, reason = \"HLT\", duration_ns = 1616 "
	"}",
	"00000000000000001234 vcpu_userspace_exit { vm = \"vm1\", vm_pid = 1000, vcpu = 0, reason = \"IO\", "
	"duration_ns = 1166 }",
	"00000000000000001500 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 0, state = \"preempted\", state_id = 3, "
	"duration_ns = 1000 }",
	"00000000000000001500 pcpu_thread { cpu = 0, tid = 500, comm = \"stress-ng\", duration_ns = 1000 }",
	"00000000000000002500 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 0, state = \"host\", state_id = 2, "
	"duration_ns = 117 }",
	"00000000000000002500 pcpu_vcpu { cpu = 0, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = 2500 }",
	"00000000000000002617 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 0, state = \"guest\", state_id = 1, "
	"duration_ns = 2383 }",
	"00000000000000003333 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 1, state = \"blocked\", state_id = 6, "
	"duration_ns = 4444 }",
	"00000000000000003400 pcpu_vcpu { cpu = 1, tid = 2001, vm = \"vm2\", vcpu = 0, duration_ns = 6600 }",
	"00000000000000004000 vcpu_exit { vm = \"vm2\", vm_pid = 2000, vcpu = 0, reason = \"EPT_VIOLATION\", "
	"duration_ns = 123 }",
	"00000000000000005000 vcpu_state { vm = \"vm1\", vm_pid = 1000, vcpu = 0, state = \"idle\", state_id = 5, "
	"duration_ns = 5000 }",
};
#define NR_CTF_EVENTS (sizeof(ctf_events) / sizeof(ctf_events[0]))

struct lines {
	char **v;
	size_t n;
};

static void lines_add(struct lines *l, const char *s)
{
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	cr_assert_not_null(l->v);
	l->v[l->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* The events read back equal want (as sets: events at one instant may come in any order). */
static void same_events(struct lines *got, const char *const *want, size_t nwant, const char *who)
{
	char **w = malloc(nwant * sizeof(*w));

	memcpy(w, want, nwant * sizeof(*w));
	qsort(w, nwant, sizeof(*w), cmp_str);
	qsort(got->v, got->n, sizeof(*got->v), cmp_str);
	for (size_t i = 0; i < got->n && i < nwant; i++)
		cr_expect_str_eq(got->v[i], w[i], "%s: event %zu", who, i);
	cr_assert_eq(got->n, nwant, "%s: %zu events, expected %zu", who, got->n, nwant);
	free(w);
}

/*
 * `babeltrace2 --clock-cycles DIR`: "[cycles] (+delta) name: { fields }" per
 * event, in time order; the cycles are the recording's clock (MONO + t).
 */
static void read_babeltrace2_cli(const char *trace, struct lines *out)
{
	char cmd[512], line[1024], ev[1100];
	unsigned long long last = 0;
	FILE *p;
	int st;

	if (system("command -v babeltrace2 > /dev/null 2>&1"))
		cr_assert_fail("the babeltrace2 command is not installed (Debian package babeltrace2, tools/deps.sh)");
	snprintf(cmd, sizeof(cmd), "babeltrace2 --clock-cycles '%s' 2>&1", trace);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long cyc;
		char name[64];
		int off = 0;
		char *brace = strchr(line, '{');

		line[strcspn(line, "\n")] = 0;
		cr_assert(sscanf(line, "[%llu] (+%*[^)]) %63[^:]:%n", &cyc, name, &off) == 2 && off && brace,
			  "babeltrace2 printed: %s", line);
		cr_assert_geq(cyc, MONO, "%s", line);
		cr_assert_geq(cyc, last, "not in time order: %s", line);
		last = cyc;
		snprintf(ev, sizeof(ev), "%020llu %s %s", cyc - MONO, name, brace);
		lines_add(out, ev);
	}
	st = pclose(p);
	cr_assert_eq(st, 0, "babeltrace2 %s failed", trace);
}

/* ---- read back with libbabeltrace2: source.ctf.fs -> muxer -> a sink of ours ---- */

struct bt_read {
	struct lines *out;
	uint64_t last_ns;
	bool bad_clock;
};

static void field_text(const bt_field *f, char *buf, size_t len)
{
	bt_field_class_type t = bt_field_get_class_type(f);

	if (t == BT_FIELD_CLASS_TYPE_STRING)
		snprintf(buf, len, "\"%s\"", bt_field_string_get_value(f));
	else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		snprintf(buf, len, "%llu", (unsigned long long)bt_field_integer_unsigned_get_value(f));
	else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		snprintf(buf, len, "%lld", (long long)bt_field_integer_signed_get_value(f));
	else
		snprintf(buf, len, "?");
}

static bt_graph_simple_sink_component_initialize_func_status rd_init(bt_message_iterator *it, void *data)
{
	(void)it, (void)data;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status rd_consume(bt_message_iterator *it, void *data)
{
	struct bt_read *rd = data;
	bt_message_array_const msgs;
	uint64_t count = 0;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < count; i++) {
		if (bt_message_get_type(msgs[i]) == BT_MESSAGE_TYPE_EVENT) {
			const bt_event *ev = bt_message_event_borrow_event_const(msgs[i]);
			const bt_field *p = bt_event_borrow_payload_field_const(ev);
			const bt_field_class *pc = bt_field_borrow_class_const(p);
			const bt_clock_snapshot *cs = bt_message_event_borrow_default_clock_snapshot_const(msgs[i]);
			uint64_t cyc = bt_clock_snapshot_get_value(cs);
			int64_t ns = 0;
			char ev_text[1100], v[256];
			size_t len;

			/* the clock: the recording's, its origin the Unix epoch at REAL - MONO */
			if (bt_clock_snapshot_get_ns_from_origin(cs, &ns) || (uint64_t)ns != REAL + (cyc - MONO) ||
			    !bt_clock_class_origin_is_unix_epoch(bt_clock_snapshot_borrow_clock_class_const(cs)))
				rd->bad_clock = true;
			len =
			    (size_t)snprintf(ev_text, sizeof(ev_text), "%020llu %s {", (unsigned long long)(cyc - MONO),
					     bt_event_class_get_name(bt_event_borrow_class_const(ev)));
			for (uint64_t m = 0; m < bt_field_class_structure_get_member_count(pc); m++) {
				const bt_field_class_structure_member *mc =
				    bt_field_class_structure_borrow_member_by_index_const(pc, m);

				field_text(bt_field_structure_borrow_member_field_by_index_const(p, m), v, sizeof(v));
				len += (size_t)snprintf(ev_text + len, sizeof(ev_text) - len, "%s %s = %s",
							m ? "," : "", bt_field_class_structure_member_get_name(mc), v);
			}
			snprintf(ev_text + len, sizeof(ev_text) - len, " }");
			lines_add(rd->out, ev_text);
		}
		bt_message_put_ref(msgs[i]);
	}
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

static void read_libbabeltrace2(const char *trace, struct lines *out)
{
	struct bt_read rd = { .out = out };
	const bt_plugin *ctf = NULL, *utils = NULL;
	const bt_component_source *src = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	bt_value *params = bt_value_map_create(), *inputs = bt_value_array_create();
	bt_graph *g = bt_graph_create(0);
	bt_graph_run_status st;

	cr_assert(params && inputs && g);
	cr_assert_eq(bt_value_array_append_string_element(inputs, trace), 0);
	cr_assert_eq(bt_value_map_insert_entry(params, "inputs", inputs), 0);
	cr_assert_eq(bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &ctf),
		     BT_PLUGIN_FIND_STATUS_OK);
	cr_assert_eq(bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &utils),
		     BT_PLUGIN_FIND_STATUS_OK);
	cr_assert_eq(bt_graph_add_source_component(g, bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs"),
						   "src", params, BT_LOGGING_LEVEL_NONE, &src),
		     0);
	cr_assert_eq(
	    bt_graph_add_filter_component(g, bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer"),
					  "mux", NULL, BT_LOGGING_LEVEL_NONE, &mux),
	    0);
	cr_assert_eq(bt_graph_add_simple_sink_component(g, "rd", rd_init, rd_consume, NULL, &rd, &sink), 0);
	for (uint64_t i = 0; i < bt_component_source_get_output_port_count(src); i++)
		cr_assert_eq(bt_graph_connect_ports(g, bt_component_source_borrow_output_port_by_index_const(src, i),
						    bt_component_filter_borrow_input_port_by_index_const(
							mux, bt_component_filter_get_input_port_count(mux) - 1),
						    NULL),
			     0);
	cr_assert_eq(bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
					    bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL),
		     0);
	do
		st = bt_graph_run(g);
	while (st == BT_GRAPH_RUN_STATUS_AGAIN);
	cr_assert_eq(st, BT_GRAPH_RUN_STATUS_OK);
	cr_assert_not(rd.bad_clock, "an event's time from the clock's origin is not REAL + t");
	bt_graph_put_ref(g);
	bt_value_put_ref(params);
	bt_value_put_ref(inputs);
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
}

static void export_ctf(const char *sht, const char *out, uint64_t t1, uint64_t t2, const struct summary_filter *f)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	size_t nvms = 0;

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	cr_assert_eq(timeline_export(r, sht, t1, t2, f, TIMELINE_CTF, out, &nvms, &err), 0, "%s", err.msg);
	sht_close(r);
}

Test(timeline, ctf_read_back_holds_the_recordings_events_and_times)
{
	struct lines cli = { 0 }, lib = { 0 };
	char sht[128], out[128], meta[160], buf[8192];

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(out, sizeof(out), "ctf");
	make_recording(sht);
	export_ctf(sht, out, 0, END, NULL);
	/* the metadata is libbabeltrace2's (sink.ctf.fs), the clock the recording's */
	snprintf(meta, sizeof(meta), "%s/metadata", out);
	slurp_into(meta, buf, sizeof(buf));
	cr_assert_not_null(strstr(buf, "generated by a Babeltrace `sink.ctf.fs` component"), "%s", buf);
	cr_assert_not_null(strstr(buf, "name = monotonic;"), "%s", buf);
	cr_assert_not_null(strstr(buf, "freq = 1000000000;"), "%s", buf);
	cr_assert_not_null(strstr(buf, "offset_s = 1795436724;"), "%s", buf); /* REAL - MONO */
	read_babeltrace2_cli(out, &cli);
	same_events(&cli, ctf_events, NR_CTF_EVENTS, "babeltrace2");
	read_libbabeltrace2(out, &lib);
	same_events(&lib, ctf_events, NR_CTF_EVENTS, "libbabeltrace2");
	lines_free(&cli);
	lines_free(&lib);
	cr_assert_eq(others_in_dir(), 1); /* the trace, nothing left beside it */
}

Test(timeline, ctf_window_and_vm_from_the_command_line)
{
	static const char *const want[] = {
		"00000000000000001600 vcpu_state { vm = \"vm2\", vm_pid = 2000, vcpu = 0, state = \"guest\", state_id "
		"= 1, duration_ns = 2450 }",
		"00000000000000001600 pcpu_vcpu { cpu = 1, tid = 1002, vm = \"vm1\", vcpu = 1, duration_ns = 1733 }",
		"00000000000000001600 pcpu_thread { cpu = 0, tid = 500, comm = \"stress-ng\", duration_ns = 900 }",
		"00000000000000002500 pcpu_vcpu { cpu = 0, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = 1550 }",
		"00000000000000003400 pcpu_vcpu { cpu = 1, tid = 2001, vm = \"vm2\", vcpu = 0, duration_ns = 650 }",
		"00000000000000004000 vcpu_exit { vm = \"vm2\", vm_pid = 2000, vcpu = 0, reason = \"EPT_VIOLATION\", "
		"duration_ns = 50 }",
	};
	struct lines cli = { 0 };
	char sht[128], out[128];
	struct run r;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(out, sizeof(out), "trace");
	make_recording(sht);
	RUN(&r, "export", sht, "-f", "ctf", "-o", out, "--from", "1600", "--to", "4050", "--vm", "vm2");
	cr_assert_eq(r.status, 0, "%s", r.err);
	read_babeltrace2_cli(out, &cli);
	same_events(&cli, want, sizeof(want) / sizeof(want[0]), "babeltrace2");
	lines_free(&cli);
	/* an existing, empty directory is fine; one with files is refused (status 1, named), untouched */
	RUN(&r, "export", "--file", sht, "-f", "ctf", "-o", out);
	cr_assert_eq(r.status, 1);
	cr_assert_not_null(strstr(r.err, "not empty"), "%s", r.err);
	cr_assert_eq(others_in_dir(), 1);
}

Test(timeline, ctf_errors_leave_no_output)
{
	const char *demo = VCPUSTAT_SOURCE_DIR "/tools/demo/demo.sht";
	char sht[128], out[128], file[160], bad[128], buf[65536];
	struct run r;
	pid_t pid;
	size_t n;
	FILE *f;
	int st;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(out, sizeof(out), "trace");
	make_recording(sht);
	RUN(&r, "export", sht, "-f", "ctf");
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "-o DIR"), "%s", r.err);
	RUN(&r, "export", "-f", "ctf", "-o", out); /* no recording: no live CTF */
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "FILE.sht"), "%s", r.err);
	snprintf(file, sizeof(file), "%s/no/such/dir/trace", dir);
	RUN(&r, "export", sht, "-f", "ctf", "-o", file);
	cr_assert_eq(r.status, 1);
	cr_assert_not_null(strstr(r.err, file), "%s", r.err);
	RUN(&r, "export", sht, "-f", "ctf", "-o", sht); /* a file, not a directory (and the input) */
	cr_assert_neq(r.status, 0);
	/* a corrupt recording */
	f = fopen(demo, "rb");
	cr_assert_not_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	cr_assert_eq(n, sizeof(buf));
	memset(buf + 64, 0x5a, n - 64);
	path_in(bad, sizeof(bad), "bad.sht");
	f = fopen(bad, "wb");
	fwrite(buf, 1, n, f);
	fclose(f);
	RUN(&r, "export", bad, "-f", "ctf", "-o", out);
	cr_assert_eq(r.status, 1);
	cr_assert_not_null(strstr(r.err, bad), "%s", r.err);
	unlink(bad);
	cr_assert_eq(others_in_dir(), 0);

	/*
	 * libbabeltrace2's writer failing half-way (a file-size limit: 64 KiB, the
	 * data stream fails; 1 KiB over the first ms, the metadata): the export
	 * fails, nothing is left
	 */
	for (int lim = 0; lim < 2; lim++) {
		fflush(NULL);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct rlimit rl = { lim ? 1024 : 64 * 1024, lim ? 1024 : 64 * 1024 };
			struct vcpustat_error err = { 0 };
			struct sht_reader *rd;
			int e;

			signal(SIGXFSZ, SIG_IGN);
			setrlimit(RLIMIT_FSIZE, &rl);
			if (sht_open(&rd, demo, &err))
				_exit(3);
			e = timeline_export(rd, demo, 0, lim ? 1000000 : sht_get_info(rd)->end, NULL, TIMELINE_CTF, out,
					    NULL, &err);
			sht_close(rd);
			_exit(e && strstr(err.msg, out) ? 1 : 2);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st));
		cr_assert_eq(WEXITSTATUS(st), 1, "limit %d: the export did not fail as it should: %d", lim,
			     WEXITSTATUS(st));
		cr_assert_eq(others_in_dir(), 0);
	}
}

/*
 * The bundled demo recording (tools/demo, ~100,000 intervals: read in more
 * than one slice of time): as many slices and events as the recording has
 * intervals on the tracks (none lost or doubled at a slice's edge), and each
 * vCPU's state slices add up to its time in each state, to the nanosecond.
 */
Test(timeline, demo_recording_every_interval_once_in_both_formats)
{
	const char *demo = VCPUSTAT_SOURCE_DIR "/tools/demo/demo.sht";
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	uint64_t end, want = 0, nx = 0;
	char trace[128], cmd[512], line[1024];
	json_t *doc, *evs, *e;
	size_t i;
	FILE *p;

	path_in(trace, sizeof(trace), "demo-ctf");
	cr_assert_eq(sht_open(&r, demo, &err), 0, "%s", err.msg);
	end = sht_get_info(r)->end;
	cr_assert_gt(sht_get_info(r)->nintervals, 100000, "the demo no longer needs two slices of time");
	/* the intervals of the tracks: states, exits, userspace exits, the thread on each CPU (not idle) */
	for (uint32_t a = 0; a < sht_nattrs(r); a++) {
		const char *path = sht_attr_path(r, a), *leaf = sht_attr_name(r, a);
		struct sht_interval *iv = NULL;
		bool cpu = !strncmp(path, "/host/cpus/", 11) && !strcmp(leaf, "current_tid");
		size_t n = 0;

		if (!cpu &&
		    !(!strncmp(path, "/vms/", 5) && strstr(path, "/vcpus/") &&
		      (!strcmp(leaf, "state") || !strcmp(leaf, "exit_reason") || !strcmp(leaf, "userspace_exit"))))
			continue;
		cr_assert_eq(sht_query_range(r, a, NULL, 0, end, &iv, &n, &err), 0, "%s", err.msg);
		for (size_t k = 0; k < n; k++)
			want += iv[k].value.type != SHT_NULL && iv[k].end > iv[k].start &&
				!(cpu && iv[k].value.type == SHT_INT && iv[k].value.i == 0);
		free(iv);
	}
	cr_assert_gt(want, 50000);
	sht_close(r);
	doc = export_json(demo, 0, end, NULL, 2);
	evs = json_object_get(doc, "traceEvents");
	json_array_foreach(evs, i, e) nx += !strcmp(json_string_value(json_object_get(e, "ph")), "X");
	cr_assert_eq(nx, want, "%llu slices, the recording has %llu intervals", (unsigned long long)nx,
		     (unsigned long long)want);
	for (int vm = 0; vm < 2; vm++)
		for (int vc = 0; vc < 2; vc++)
			for (int s = 0; s < VCPU_NR_STATES; s++) {
				static const char *const states[] = { "unknown", "guest", "host",    "preempted",
								      "wait",	 "idle",  "blocked", "poll" };
				char proc[16], track[16], path[64];

				snprintf(proc, sizeof(proc), "demo-%d", vm);
				snprintf(track, sizeof(track), "vCPU %d", vc);
				snprintf(path, sizeof(path), "/vms/demo-%d/vcpus/%d/state", vm, vc);
				cr_expect_eq(json_sum_big(evs, proc, track, states[s]), sht_sum(demo, path, s, 0, end),
					     "%s %s %s", proc, track, states[s]);
			}
	json_decref(doc);

	/* the CTF trace: as many events, in time order (read_babeltrace2_cli checks), through babeltrace2 */
	export_ctf(demo, trace, 0, end, NULL);
	snprintf(cmd, sizeof(cmd), "babeltrace2 '%s' | wc -l", trace);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(line, sizeof(line), p));
	pclose(p);
	cr_assert_eq(strtoull(line, NULL, 10), want);
}

/* A recording without VMs or CPUs: an empty timeline in both formats, not an error. */
Test(timeline, recording_without_vms_gives_empty_timelines)
{
	struct sht_writer_opts o = { .no_sync = true, .mono_start_ns = MONO };
	struct vcpustat_error err = { 0 };
	char sht[128], out[128], trace[128];
	struct lines cli = { 0 };
	struct sht_writer *w;
	json_t *doc, *evs;
	uint32_t a;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(out, sizeof(out), "t.json");
	path_in(trace, sizeof(trace), "trace");
	cr_assert_eq(sht_writer_create(&w, sht, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/meta/lost", &a), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 0, 0), 0);
	cr_assert_eq(sht_writer_close(w, END, &err), 0, "%s", err.msg);
	doc = export_json(sht, 0, END, NULL, 0);
	evs = check_schema(doc);
	cr_assert_eq(json_array_size(evs), 0);
	json_decref(doc);
	export_ctf(sht, trace, 0, END, NULL);
	read_babeltrace2_cli(trace, &cli);
	cr_assert_eq(cli.n, 0);
	lines_free(&cli);
}

/* A VM with no pid, no vCPU thread id, and a VM with no vCPU: tracks of what there is, a pid of their own. */
Test(timeline, vms_with_missing_attributes)
{
	struct sht_writer_opts o = { .no_sync = true, .mono_start_ns = MONO };
	struct vcpustat_error err = { 0 };
	const struct want w[] = { { "host", 10, 20 }, { "guest", 30, END - 30 } };
	char sht[128], trace[128];
	struct lines cli = { 0 };
	struct sht_writer *wr;
	json_int_t pid, tid;
	json_t *doc, *evs;
	uint32_t a, b;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(trace, sizeof(trace), "trace");
	cr_assert_eq(sht_writer_create(&wr, sht, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(wr, "/vms/bare/vcpus/3/state", &a), 0);
	cr_assert_eq(sht_writer_attr(wr, "/vms/empty/pid", &b), 0);
	cr_assert_eq(sht_writer_set_int(wr, b, 0, 77), 0);
	cr_assert_eq(sht_writer_set_int(wr, a, 10, 2), 0);
	cr_assert_eq(sht_writer_set_int(wr, a, 30, 1), 0);
	cr_assert_eq(sht_writer_close(wr, END, &err), 0, "%s", err.msg);
	doc = export_json(sht, 0, END, NULL, 2);
	evs = check_schema(doc);
	expect(evs, "bare", "vCPU 3", w, 2);
	cr_assert(find_track(evs, "bare", "vCPU 3", &pid, &tid));
	cr_assert_gt(pid, 4194304); /* above any Linux pid */
	cr_assert(find_track(evs, "empty", "vCPU 3", &pid, &tid) == false);
	json_decref(doc);
	export_ctf(sht, trace, 0, END, NULL);
	read_babeltrace2_cli(trace, &cli);
	{
		const char *const want[] = {
			"00000000000000000010 vcpu_state { vm = \"bare\", vm_pid = -1, vcpu = 3, state = \"host\", "
			"state_id = 2, duration_ns = 20 }",
			"00000000000000000030 vcpu_state { vm = \"bare\", vm_pid = -1, vcpu = 3, state = \"guest\", "
			"state_id = 1, duration_ns = 9970 }",
		};

		same_events(&cli, want, 2, "babeltrace2");
	}
	lines_free(&cli);
}

/* ---- a recording at level vcpu (no /host/cpus): CPU tracks from the vCPUs' state and pcpu ---- */

#define X0 "/vms/vm1/vcpus/0/"
#define X1 "/vms/vm1/vcpus/1/"

static const struct set vcpu_level[] = {
	I("/vms/vm1/pid", 0, 1000), I(X0 "tid", 0, 1001),   I(X0 "state", 0, 1),    I(X0 "pcpu", 0, 0),
	I(X1 "tid", 0, 1002),	    I(X1 "state", 0, 1),    I(X1 "pcpu", 0, 1),	    I(X0 "state", 1000, 2),
	I(X0 "state", 1500, 3),	    I(X0 "pcpu", 2000, 1), /* migrated while preempted */
	I(X1 "state", 2000, 6),	    I(X0 "state", 2500, 2), I(X0 "state", 2617, 1), I(X0 "state", 5000, 5),
};

static void write_sets(const char *path, const struct set *sets_, size_t n)
{
	struct sht_writer_opts o = { .no_sync = true, .mono_start_ns = MONO, .real_start_ns = REAL };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		uint32_t a;

		cr_assert_eq(sht_writer_attr(w, sets_[i].path, &a), 0);
		cr_assert_eq(sht_writer_set_int(w, a, sets_[i].t, sets_[i].i), 0);
	}
	cr_assert_eq(sht_writer_close(w, END, &err), 0, "%s", err.msg);
}

Test(timeline, level_vcpu_cpu_tracks_from_state_and_pcpu)
{
	char sht[128], trace[128];
	struct lines cli = { 0 }, pc = { 0 };
	json_t *doc, *evs;

	path_in(sht, sizeof(sht), "rec.sht");
	path_in(trace, sizeof(trace), "trace");
	write_sets(sht, vcpu_level, sizeof(vcpu_level) / sizeof(vcpu_level[0]));
	doc = export_json(sht, 0, END, NULL, 1);
	evs = check_schema(doc);
	{ /* on a CPU: in guest code or the hypervisor; not preempted, idle or blocked */
		const struct want w[] = { { "vm1 vCPU 0", 0, 1000 }, { "vm1 vCPU 0", 1000, 500 } };
		expect(evs, "host CPUs", "CPU 0", w, 2);
	}
	{
		const struct want w[] = { { "vm1 vCPU 1", 0, 2000 },
					  { "vm1 vCPU 0", 2500, 117 },
					  { "vm1 vCPU 0", 2617, 2383 } };
		expect(evs, "host CPUs", "CPU 1", w, 3);
	}
	json_decref(doc);
	/* a window cuts them */
	doc = export_json(sht, 1200, 2600, NULL, 1);
	evs = check_schema(doc);
	{
		const struct want w[] = { { "vm1 vCPU 0", 1200, 300 } };
		expect(evs, "host CPUs", "CPU 0", w, 1);
	}
	{
		const struct want w[] = { { "vm1 vCPU 1", 1200, 800 }, { "vm1 vCPU 0", 2500, 100 } };
		expect(evs, "host CPUs", "CPU 1", w, 2);
	}
	json_decref(doc);
	/* CTF: pcpu_vcpu events */
	export_ctf(sht, trace, 0, END, NULL);
	read_babeltrace2_cli(trace, &cli);
	for (size_t i = 0; i < cli.n; i++)
		if (strstr(cli.v[i], " pcpu_"))
			lines_add(&pc, cli.v[i]);
	{
		const char *const want[] = {
			"00000000000000000000 pcpu_vcpu { cpu = 0, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = "
			"1000 }",
			"00000000000000001000 pcpu_vcpu { cpu = 0, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = "
			"500 }",
			"00000000000000000000 pcpu_vcpu { cpu = 1, tid = 1002, vm = \"vm1\", vcpu = 1, duration_ns = "
			"2000 }",
			"00000000000000002500 pcpu_vcpu { cpu = 1, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = "
			"117 }",
			"00000000000000002617 pcpu_vcpu { cpu = 1, tid = 1001, vm = \"vm1\", vcpu = 0, duration_ns = "
			"2383 }",
		};

		same_events(&pc, want, 5, "babeltrace2");
	}
	lines_free(&cli);
	lines_free(&pc);
}

/*
 * The same over more than one slice of time (120,000 state changes of one
 * vCPU, a migration every 7th): every stretch on a CPU once, each CPU's sum
 * what the test adds up.
 */
Test(timeline, level_vcpu_cpu_tracks_across_slices_of_time)
{
	struct sht_writer_opts o = { .no_sync = true, .mono_start_ns = MONO };
	struct vcpustat_error err = { 0 };
	enum { N = 120000 };
	uint64_t want[3] = { 0 }, got[3] = { 0 }, nwant = 0, ngot = 0, end = (uint64_t)N * 10 + 10;
	struct sht_writer *w;
	uint32_t st, pc;
	char sht[128];
	json_t *doc, *evs, *e;
	json_int_t pid, tids[3];
	size_t i;
	int cpu = 0;

	path_in(sht, sizeof(sht), "rec.sht");
	cr_assert_eq(sht_writer_create(&w, sht, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, X0 "state", &st), 0);
	cr_assert_eq(sht_writer_attr(w, X0 "pcpu", &pc), 0);
	cr_assert_eq(sht_writer_set_int(w, pc, 0, 0), 0);
	for (uint64_t k = 0; k < N; k++) {
		int s = 1 + (int)(k % 3); /* guest, host, preempted */

		cr_assert_eq(sht_writer_set_int(w, st, k * 10, s), 0);
		if (k % 7 == 6) { /* (after: the writer takes times in order) */
			cpu = (cpu + 1) % 3;
			cr_assert_eq(sht_writer_set_int(w, pc, k * 10 + 3, cpu), 0);
		}
	}
	cr_assert_eq(sht_writer_close(w, end, &err), 0, "%s", err.msg);
	/* the expected stretches: state s over [10k, 10k + 10), on the CPU of each part */
	cpu = 0;
	for (uint64_t k = 0; k < N; k++) {
		int s = 1 + (int)(k % 3), before = cpu;
		uint64_t a = k * 10, b = k + 1 == N ? end : a + 10;

		if (k % 7 == 6)
			cpu = (cpu + 1) % 3;
		if (s == 3)
			continue;
		if (k % 7 == 6) { /* [a, a + 3) on the old CPU, the rest on the new one */
			want[before] += 3;
			want[cpu] += b - a - 3;
			nwant += 2;
		} else {
			want[cpu] += b - a;
			nwant++;
		}
	}
	doc = export_json(sht, 0, end, NULL, 1);
	evs = json_object_get(doc, "traceEvents");
	for (int c = 0; c < 3; c++) {
		char track[16];

		snprintf(track, sizeof(track), "CPU %d", c);
		cr_assert(find_track(evs, "host CPUs", track, &pid, &tids[c]));
	}
	json_array_foreach(evs, i, e)
	{
		const char *cat = json_string_value(json_object_get(e, "cat"));

		if (!cat || strcmp(cat, "vcpu"))
			continue;
		for (int c = 0; c < 3; c++)
			if (json_integer_value(json_object_get(e, "tid")) == tids[c])
				got[c] += ns_of(json_object_get(e, "dur"));
		ngot++;
	}
	for (int c = 0; c < 3; c++)
		cr_expect_eq(got[c], want[c], "CPU %d: %llu ns, expected %llu", c, (unsigned long long)got[c],
			     (unsigned long long)want[c]);
	cr_assert_eq(ngot, nwant, "%llu stretches, expected %llu", (unsigned long long)ngot,
		     (unsigned long long)nwant);
	json_decref(doc);
}
