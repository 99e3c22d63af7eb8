// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `vcpustat query` and `vcpustat check` on generated files: text for people,
 * JSON for scripts (parsed here with jansson), errors, repair.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/wait.h>
#include "sht_model.h"

#include "cli_run.h"

#define SEC 1000000000ull
#define REAL_START 1795356187000000000ull /* 2026-11-22T14:03:07Z */

/*
 * A small known history: vCPU 0 of VM web1 is GUEST from 1 s, HOST from 1.5 s
 * (exit reason 48), PREEMPTED from 2 s, GUEST from 2.5 s, until the end at 3 s;
 * it runs on pCPU 3; vCPU 1 only gets a value at 2 s; /meta/note is a string.
 */
static const char *make_known(void)
{
	static char path[256];
	struct sht_meta meta[] = { { "host", "kvm-host-7" }, { "tool", "vcpustat-tests" } };
	struct sht_writer_opts o = { .node_size = 4096, .real_start_ns = REAL_START, .mono_start_ns = 42,
				     .meta = meta, .nmeta = 2, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	uint32_t st, ex, pc, st1, note;

	snprintf(path, sizeof(path), "/tmp/vcpustat-cli-known-%d.sht", (int)getpid());
	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/web1/vcpus/0/state", &st), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/web1/vcpus/0/exit_reason", &ex), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/web1/vcpus/0/pcpu", &pc), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/web1/vcpus/1/state", &st1), 0);
	cr_assert_eq(sht_writer_attr(w, "/meta/note", &note), 0);
	cr_assert_eq(sht_writer_set_int(w, pc, 0, 3), 0);
	cr_assert_eq(sht_writer_set_int(w, st, 1 * SEC, 1), 0);
	cr_assert_eq(sht_writer_set_int(w, ex, SEC + SEC / 2, 48), 0);
	cr_assert_eq(sht_writer_set_int(w, st, SEC + SEC / 2, 2), 0);
	cr_assert_eq(sht_writer_set_str(w, note, SEC + SEC / 2, "migration"), 0);
	cr_assert_eq(sht_writer_set_int(w, st, 2 * SEC, 3), 0);
	cr_assert_eq(sht_writer_set_int(w, st1, 2 * SEC, 4), 0);
	cr_assert_eq(sht_writer_set_int(w, st, 2 * SEC + SEC / 2, 1), 0);
	cr_assert_eq(sht_writer_close(w, 3 * SEC, &err), 0, "%s", err.msg);
	return path;
}

/* The line of the text output that starts with prefix, or fail. */
static const char *line_of(const char *text, const char *prefix)
{
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, prefix, strlen(prefix)))
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	cr_assert_fail("no line starting with '%s' in:\n%s", prefix, text);
	return NULL;
}

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	cr_assert_not_null(j, "not JSON (%s): %s", je.text, text);
	return j;
}

/* The object of array "values" whose path is p. */
static json_t *value_of(json_t *arr, const char *p)
{
	size_t i;
	json_t *o;

	json_array_foreach(arr, i, o)
		if (!strcmp(json_string_value(json_object_get(o, "path")), p))
			return o;
	cr_assert_fail("no %s", p);
	return NULL;
}

Test(sht_cli, query_at_text_shows_state_names_and_aligned_columns)
{
	const char *f = make_known(), *l0, *l1;
	struct run r;

	RUN(&r, "query", f, "--at", "1.2s");
	cr_assert_eq(r.status, 0, "%s", r.err);
	l0 = line_of(r.out, "/vms/web1/vcpus/0/state ");
	cr_assert(strstr(l0, "guest") && strstr(l0, "1.000000000") && strstr(l0, "1.500000000"), "%s", r.out);
	cr_assert(strstr(line_of(r.out, "/vms/web1/vcpus/0/pcpu "), " 3 "), "%s", r.out);
	cr_assert(strstr(line_of(r.out, "/vms/web1/vcpus/1/state "), " -"), "no value yet: %s", r.out);
	l1 = line_of(r.out, "/vms/web1/vcpus/0/exit_reason ");
	cr_assert(strstr(l1, " -"), "%s", r.out);
	/* the value column starts at the same place on every line */
	cr_assert_eq(strstr(l0, "guest") - l0, strchr(l1 + strlen("/vms/web1/vcpus/0/exit_reason"), '-') - l1, "%s",
		     r.out);
	cr_assert(strstr(r.out, "2026-11-22T14:03:08.200000000"), "wall-clock of t: %s", r.out);
	unlink(f);
}

Test(sht_cli, query_at_accepts_every_time_form)
{
	const char *f = make_known();
	static const char *const forms[] = { "2200000000", "2.2", "2.2s", "2200ms", "2026-11-22T14:03:09.2Z",
					     "2026-11-22T14:03:09.200", "14:03:09.2" };
	struct run r;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		RUN(&r, "query", f, "--at", forms[i]);
		cr_assert_eq(r.status, 0, "%s: %s", forms[i], r.err);
		cr_assert(strstr(line_of(r.out, "/vms/web1/vcpus/0/state "), "preempted"), "%s: %s", forms[i], r.out);
		cr_assert(strstr(line_of(r.out, "/vms/web1/vcpus/1/state "), "wait"), "%s: %s", forms[i], r.out);
	}
	RUN(&r, "query", f, "--at", "yesterday"); /* what was asked is wrong: 2 (docs/vcpustat.md) */
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "bad time 'yesterday'"), "%s", r.err);
	RUN(&r, "query", f, "--at", "2026-11-22T14:03:06Z");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "before the start of the trace"), "%s", r.err);
	RUN(&r, "query", f, "--at", "10s");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "after the end"), "%s", r.err);
	unlink(f);
}

Test(sht_cli, query_at_json)
{
	const char *f = make_known();
	json_t *j, *vals, *o;
	struct run r;

	RUN(&r, "query", f, "--at", "1.7", "--json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = parse(r.out);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "time"), "ns")), 1700000000);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "time"), "wall")),
			 "2026-11-22T14:03:08.700000000");
	vals = json_object_get(j, "values");
	o = value_of(vals, "/vms/web1/vcpus/0/state");
	cr_assert_eq(json_integer_value(json_object_get(o, "value")), 2);
	cr_assert_str_eq(json_string_value(json_object_get(o, "name")), "host");
	cr_assert_eq(json_integer_value(json_object_get(o, "start")), 1500000000);
	cr_assert_eq(json_integer_value(json_object_get(o, "end")), 2000000000);
	o = value_of(vals, "/vms/web1/vcpus/0/exit_reason");
	cr_assert_eq(json_integer_value(json_object_get(o, "value")), 48);
	cr_assert_null(json_object_get(o, "name"), "only state attributes get names");
	cr_assert_str_eq(json_string_value(json_object_get(value_of(vals, "/meta/note"), "value")), "migration");
	cr_assert(json_is_null(json_object_get(value_of(vals, "/vms/web1/vcpus/1/state"), "value")));
	json_decref(j);
	unlink(f);
}

Test(sht_cli, query_path_text_and_json)
{
	const char *f = make_known();
	json_t *j, *attrs, *iv;
	struct run r;

	RUN(&r, "query", f, "--path", "/vms/web1/vcpus/0/state");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "/vms/web1/vcpus/0/state: 4 intervals"), "%s", r.out);
	cr_assert(strstr(line_of(r.out, "  2.000000000"), "preempted"), "%s", r.out);

	RUN(&r, "query", f, "--path", "/vms/web1/vcpus/0/state", "--from", "1.6s", "--to", "2.1s", "--json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = parse(r.out);
	attrs = json_object_get(j, "attributes");
	cr_assert_eq(json_array_size(attrs), 1);
	iv = json_object_get(json_array_get(attrs, 0), "intervals");
	cr_assert_eq(json_array_size(iv), 2, "%s", r.out);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(iv, 0), "start")), 1500000000);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(iv, 0), "name")), "host");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(iv, 1), "value")), 3);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(iv, 1), "duration")), 500000000);
	json_decref(j);

	/* several attributes: P/-star (children), /-star-star (everything) */
	RUN(&r, "query", f, "--path", "/vms/web1/vcpus/0/*", "--json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = parse(r.out);
	cr_assert_eq(json_array_size(json_object_get(j, "attributes")), 3);
	json_decref(j);
	RUN(&r, "query", f, "--path", "/**");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "/meta/note: 1 interval"), "%s", r.out);
	cr_assert(strstr(r.out, "migration"), "%s", r.out);
	unlink(f);
}

Test(sht_cli, query_info_and_errors)
{
	const char *f = make_known();
	json_t *j;
	struct run r;

	RUN(&r, "query", f);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "closed cleanly") && strstr(r.out, "kvm-host-7"), "%s", r.out);
	RUN(&r, "query", f, "--json");
	j = parse(r.out);
	cr_assert_eq(json_integer_value(json_object_get(j, "intervals")), 8);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "metadata"), "host")), "kvm-host-7");
	json_decref(j);

	RUN(&r, "query", f, "--path", "/vms/nope"); /* a selection that matches nothing: 2 */
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "no attribute /vms/nope"), "%s", r.err);
	RUN(&r, "query", f, "--path", "/vms/nope", "--json"); /* errors as JSON on stdout */
	cr_assert_eq(r.status, 2);
	j = parse(r.out);
	cr_assert(strstr(json_string_value(json_object_get(j, "error")), "no attribute"), "%s", r.out);
	json_decref(j);
	RUN(&r, "query", "/nonexistent/x.sht", "--at", "1");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "/nonexistent/x.sht: cannot open"), "%s", r.err);
	RUN(&r, "query");
	cr_assert_eq(r.status, 2);
	RUN(&r, "query", "--help");
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "wall-clock"), "%s", r.out);
	RUN(&r, "--help");
	cr_assert(strstr(r.out, "query") && strstr(r.out, "check"), "%s", r.out);
	unlink(f);
}

Test(sht_cli, check_good_bad_and_repair)
{
	const char *f = make_known();
	json_t *j, *bad;
	struct run r;
	int fd;
	uint8_t b;

	RUN(&r, "check", f);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "good, closed cleanly"), "%s", r.out);
	cr_assert(strstr(line_of(r.out, "  intervals"), "8"), "%s", r.out);
	RUN(&r, "check", f, "--json");
	j = parse(r.out);
	cr_assert(json_is_true(json_object_get(j, "ok")));
	cr_assert_eq(json_integer_value(json_object_get(j, "attributes")), 11);
	cr_assert_eq(json_integer_value(json_object_get(j, "end")), 3000000000);
	json_decref(j);

	/* flip a byte in node 0 (offset 4096) */
	fd = open(f, O_RDWR);
	cr_assert_eq(pread(fd, &b, 1, 4096 + 300), 1);
	b ^= 0x10;
	cr_assert_eq(pwrite(fd, &b, 1, 4096 + 300), 1);
	close(fd);
	RUN(&r, "check", f);
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.out, "BAD") && strstr(r.out, "first bad node    0 at offset 4096"), "%s", r.out);
	RUN(&r, "check", f, "--json");
	cr_assert_eq(r.status, 1);
	j = parse(r.out);
	cr_assert(json_is_false(json_object_get(j, "ok")));
	bad = json_object_get(j, "bad");
	cr_assert_eq(json_integer_value(json_object_get(bad, "offset")), 4096);
	cr_assert(strstr(json_string_value(json_object_get(bad, "error")), f));
	json_decref(j);
	RUN(&r, "query", f, "--at", "1.2");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "offset 4096") && strstr(r.err, "checksum mismatch"), "%s", r.err);

	RUN(&r, "check", "--repair", f);
	cr_assert_eq(r.status, 2, "a repair needs -o or --in-place: %s", r.err);
	RUN(&r, "check", "--repair", "--in-place", f);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "after the repair"), "%s", r.out);
	{
		char orig[600];

		snprintf(orig, sizeof(orig), "%s.orig", f);
		cr_assert_eq(access(orig, F_OK), 0, "the original is kept as %s", orig);
		unlink(orig);
	}
	RUN(&r, "check", f, "--json");
	cr_assert_eq(r.status, 0, "%s", r.out);
	j = parse(r.out);
	cr_assert(json_is_true(json_object_get(j, "ok")) && json_is_true(json_object_get(j, "closed")));
	json_decref(j);
	RUN(&r, "query", f, "--at", "1.2"); /* the only leaf was bad: its intervals are gone, the file reads */
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	unlink(f);
}

Test(sht_cli, check_an_unfinished_file)
{
	const char *f = tmp_path("cli-unfinished");
	struct sht_writer_opts o = { .node_size = 4096, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	json_t *j;
	struct run r;
	uint32_t a;

	cr_assert_eq(sht_writer_create(&w, f, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/v/vcpus/0/state", &a), 0);
	for (uint64_t t = 1; t < 5000; t++)
		cr_assert_eq(sht_writer_set_int(w, a, t * 1000, (int64_t)(t % 3)), 0);
	sht_writer_abandon(w);
	RUN(&r, "check", f);
	cr_assert_eq(r.status, 0, "an unfinished file is good: %s", r.out);
	cr_assert(strstr(r.out, "not closed cleanly") && strstr(r.out, "--repair"), "%s", r.out);
	RUN(&r, "check", f, "--repair", "--in-place", "--json");
	cr_assert_eq(r.status, 0, "%s", r.out);
	j = parse(r.out);
	cr_assert(json_is_false(json_object_get(json_object_get(j, "before"), "closed")));
	cr_assert(json_is_true(json_object_get(json_object_get(j, "after"), "closed")));
	cr_assert(json_is_true(json_object_get(json_object_get(j, "after"), "recovered")));
	json_decref(j);
	RUN(&r, "query", f, "--at", "0.000002500");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(line_of(r.out, "/vms/v/vcpus/0/state "), "host"), "%s", r.out); /* t=2: 2 % 3 = HOST */
	{
		char orig[600];

		snprintf(orig, sizeof(orig), "%s.orig", f);
		unlink(orig);
	}
	unlink(f);
}

/*
 * The global -j reaches each command as the command table's json field says
 * (user/cli/vcpustat.c): its --json (query, check, report), its -f json
 * (export, where a later -f still wins), or, for a command with no document
 * (plot), only its errors as JSON objects; -jp indents; `--` after it.
 */
Test(sht_cli, the_global_json_option_reaches_each_command_as_its_table_says)
{
	const char *f = make_known();
	json_t *j;
	struct run r;

	RUN(&r, "-j", "query", f, "--at", "1.7");
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = parse(r.out);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "time"), "ns")), 1700000000, "--json");
	json_decref(j);
	RUN(&r, "-j", "export", "--file", f);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = parse(r.out);
	cr_assert_str_eq(json_string_value(json_object_get(j, "source")), "file", "-f json");
	json_decref(j);
	RUN(&r, "-j", "export", "--file", f, "-f", "csv");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strncmp(r.out, "metric,vm,", 10), "-f csv after -j's -f json: %s", r.out);
	RUN(&r, "-j", "plot", "--nope");
	cr_assert_eq(r.status, 2);
	j = parse(r.out);
	cr_assert_str_eq(json_string_value(json_object_get(j, "error")), "plot: unknown option --nope (see --help)");
	json_decref(j);
	RUN(&r, "-jp", "report", "--", f);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strncmp(r.out, "{\n  \"", 5), "indented: %s", r.out);
	json_decref(parse(r.out));
	RUN(&r, "report", "--json", f, "--pretty"); /* the global --pretty after the command, past an operand */
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strncmp(r.out, "{\n  \"", 5), "indented: %s", r.out);
	json_decref(parse(r.out));
	RUN(&r, "report", "--json", f);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strncmp(r.out, "{\"", 2), "compact without it: %s", r.out);
	json_decref(parse(r.out));
	RUN(&r, "-j", "check", f);
	cr_assert_eq(r.status, 0, "%s", r.err);
	json_decref(parse(r.out));
	unlink(f);
}
