// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat query: read an SHT file (docs/sht-format.md). Every attribute's
 * value at a time (--at), the intervals of attributes in a time range
 * (--path), or, with neither, what the file is (metadata, time range).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli/cli.h"
#include "sht/sht.h"
#include "vcpu_fsm.h"

static const char *const state_names[VCPU_NR_STATES] = {
	[VCPU_UNKNOWN] = "unknown", [VCPU_GUEST] = "guest", [VCPU_HOST] = "host",	[VCPU_PREEMPTED] = "preempted",
	[VCPU_WAIT] = "wait",	    [VCPU_IDLE] = "idle",   [VCPU_BLOCKED] = "blocked",
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s query FILE [--at T] [--path P [--from T1] [--to T2]] [--json] [--utc]\n"
		"\n"
		"Read a State History Tree file (.sht) written by `vcpustat record` or a replay.\n"
		"\n"
		"  (no --at, no --path)  what the file is: host, times, attributes, intervals\n"
		"  --at T                every attribute's value at time T (with --path: only those)\n"
		"  --path P              the intervals of attribute P between --from and --to\n"
		"                        (default: the whole file). P is an exact path such as\n"
		"                        /vms/web1/vcpus/0/state; P/* selects P's children, P/** every\n"
		"                        attribute below P (/** is everything)\n"
		"  --from T1, --to T2    the time range for --path (closed: [T1, T2])\n"
		"  --json                JSON output for scripts\n"
		"  --utc                 show wall-clock times in UTC (default: local time)\n"
		"  -h, --help            this help\n"
		"\n"
		"Times (T, T1, T2):\n"
		"  1500000000            an integer: nanoseconds since the trace start\n"
		"  1.5  1.5s  250ms  40us  seconds if there is a decimal point or an s suffix;\n"
		"                        also ms, us and ns suffixes\n"
		"  2026-11-22T14:03:07.123   wall-clock time, local (append Z for UTC)\n"
		"  14:03:07.123          wall-clock time on the day the trace started\n"
		"Wall-clock times are converted with the CLOCK_REALTIME of the trace start stored\n"
		"in the file. Imported traces have none: their times are shown on the trace's\n"
		"own clock, and given as seconds or ns since the start.\n"
		"\n"
		"Attributes whose name is `state` show vCPU state names (guest, host, preempted,\n"
		"wait, idle, blocked, unknown); JSON gives both the number and the name.\n"
		"Intervals are [start, end): a value holds from its start up to, not including,\n"
		"its end. An empty value (null) is shown as '-'.\n",
		cli_prog);
	cli_usage_exit_status(out);
}

static const char *value_name(const struct sht_reader *r, uint32_t attr, const struct sht_value *v)
{
	const char *name = sht_attr_name(r, attr);

	if (v->type == SHT_INT && name && !strcmp(name, "state") && v->i >= 0 && v->i < VCPU_NR_STATES)
		return state_names[v->i];
	return NULL;
}

static void fmt_value(const struct sht_reader *r, uint32_t attr, const struct sht_value *v, char *buf, size_t len)
{
	const char *name = value_name(r, attr, v);

	if (v->type == SHT_NULL)
		snprintf(buf, len, "-");
	else if (name)
		snprintf(buf, len, "%s", name);
	else if (v->type == SHT_INT)
		snprintf(buf, len, "%lld", (long long)v->i);
	else
		snprintf(buf, len, "%s", v->s);
}

static json_t *json_value(const struct sht_reader *r, uint32_t attr, const struct sht_value *v, json_t *o)
{
	const char *name = value_name(r, attr, v);

	if (v->type == SHT_NULL)
		json_object_set_new(o, "value", json_null());
	else if (v->type == SHT_INT)
		json_object_set_new(o, "value", json_integer(v->i));
	else
		json_object_set_new(o, "value", json_string(v->s));
	if (name)
		json_object_set_new(o, "name", json_string(name));
	return o;
}

/* {"ns", "wall"}; a file without a wall clock: "wall" null and the trace's own clock */
static json_t *json_time(const struct sht_reader *r, uint64_t t, bool utc)
{
	char buf[64];

	if (!sht_has_wall_clock(r)) {
		sht_format_trace_clock(r, t, buf, sizeof(buf));
		return json_pack("{s:I, s:n, s:s}", "ns", (json_int_t)t, "wall", "trace_clock", buf);
	}
	sht_format_time(r, t, utc, buf, sizeof(buf));
	return json_pack("{s:I, s:s}", "ns", (json_int_t)t, "wall", buf);
}

/* " (2026-11-22T14:03:07.1 .. 2026-11-22T14:03:08.2)", or the trace clock's " (trace clock 1000.1 .. 1001.2 s, ...)" */
static void clock_range(const struct sht_reader *r, uint64_t t1, uint64_t t2, bool utc, char *buf, size_t len)
{
	char a[64], b[64];

	if (!sht_has_wall_clock(r)) {
		sht_format_trace_clock(r, t1, a, sizeof(a));
		sht_format_trace_clock(r, t2, b, sizeof(b));
		snprintf(buf, len, "trace clock %s%s%s s, no wall clock", a, t1 == t2 ? "" : " .. ", t1 == t2 ? "" : b);
		return;
	}
	sht_format_time(r, t1, utc, a, sizeof(a));
	sht_format_time(r, t2, utc, b, sizeof(b));
	snprintf(buf, len, "%s%s%s", a, t1 == t2 ? "" : " .. ", t1 == t2 ? "" : b);
}

static void print_json(json_t *o)
{
	cli_json_print(o, CLI_JSON_DOC);
}

/* Mark the attributes that P selects in want; 0, or -ENOENT. */
static int select_attrs(const struct sht_reader *r, const char *p, uint8_t *want, uint32_t *nsel)
{
	size_t len = strlen(p);
	uint32_t base = SHT_NO_ATTR, a, n = sht_nattrs(r);
	bool children = false, below = false;
	char *copy;
	int e = 0;

	*nsel = 0;
	if (len >= 3 && !strcmp(p + len - 3, "/**"))
		below = true, len -= 3;
	else if (len >= 2 && !strcmp(p + len - 2, "/*"))
		children = true, len -= 2;
	copy = strndup(p, len);
	if (!copy)
		return -ENOMEM;
	if (len) /* else: the root */
		e = sht_attr_lookup(r, copy, &base);
	else if (!children && !below)
		e = -ENOENT;
	free(copy);
	if (e)
		return -ENOENT;
	for (a = 0; a < n; a++) {
		uint32_t up = sht_attr_parent(r, a);
		bool sel;

		if (children) {
			sel = up == base;
		} else if (below) {
			while (up != SHT_NO_ATTR && up != base)
				up = sht_attr_parent(r, up);
			sel = up == base;
		} else {
			sel = a == base;
		}
		if (sel) {
			want[a] = 1;
			(*nsel)++;
		}
	}
	return 0;
}

static int show_info(struct sht_reader *r, const char *file, bool json, bool utc)
{
	const struct sht_info *in = sht_get_info(r);
	char s1[32], s2[32], w[160];
	size_t i;

	if (json) {
		json_t *meta = json_object(), *o;

		for (i = 0; i < sht_nmeta(r); i++)
			json_object_set_new(meta, sht_meta_at(r, i)->key, json_string(sht_meta_at(r, i)->value));
		o = json_pack("{s:s, s:i, s:b, s:b, s:o, s:o, s:I, s:I, s:I, s:i, s:i, s:I, s:I, s:o}", "file", file,
			      "version", (int)in->version, "closed", in->closed, "recovered", in->recovered, "start",
			      json_time(r, in->start, utc), "end", json_time(r, in->end, utc), "mono_start_ns",
			      (json_int_t)in->mono_start_ns, "real_start_ns", (json_int_t)in->real_start_ns, "intervals",
			      (json_int_t)in->nintervals, "attributes", (int)in->nattrs, "strings", (int)in->nstrings,
			      "nodes", (json_int_t)in->nodes, "clamped", (json_int_t)in->nclamped, "metadata", meta);
		print_json(o);
		return CLI_OK;
	}
	cli_fmt_secs(in->start, s1, sizeof(s1));
	cli_fmt_secs(in->end, s2, sizeof(s2));
	clock_range(r, in->start, in->end, utc, w, sizeof(w));
	printf("%s: SHT version %u, %s\n", file, in->version,
	       in->closed ? (in->recovered ? "repaired (history ends at its last sealed leaf)" : "closed cleanly")
			  : "not closed cleanly (history ends at its last sealed leaf)");
	printf("  time        %s .. %s s  (%s)\n", s1, s2, w);
	printf("  intervals   %llu in %llu nodes of %u bytes; %u attributes, %u strings; %llu clamped timestamps\n",
	       (unsigned long long)in->nintervals, (unsigned long long)in->nodes, in->node_size, in->nattrs,
	       in->nstrings, (unsigned long long)in->nclamped);
	for (i = 0; i < sht_nmeta(r); i++)
		printf("  %-11s %s\n", sht_meta_at(r, i)->key, sht_meta_at(r, i)->value);
	return CLI_OK;
}

static int show_at(struct sht_reader *r, const char *file, uint64_t t, const uint8_t *want, bool json, bool utc)
{
	uint32_t n = sht_nattrs(r), a;
	struct sht_interval *out = calloc(n ? n : 1, sizeof(*out));
	struct vcpustat_error err = { 0 };
	size_t width = 4;
	char val[64], s1[32], s2[32], wall[160];
	json_t *arr;

	if (!out) {
		cli_err("out of memory");
		return CLI_FAIL;
	}
	if (sht_query_at(r, t, want, out, &err)) {
		cli_err("%s", err.msg);
		free(out);
		return CLI_FAIL;
	}
	/* shown: selected attributes that hold a value or have no children */
	if (json) {
		arr = json_array();
		for (a = 0; a < n; a++) {
			json_t *o;

			if ((want && !want[a]) ||
			    (out[a].value.type == SHT_NULL && sht_attr_first_child(r, a) != SHT_NO_ATTR))
				continue;
			o = json_pack("{s:s}", "path", sht_attr_path(r, a));
			json_value(r, a, &out[a].value, o);
			if (out[a].value.type != SHT_NULL) {
				json_object_set_new(o, "start", json_integer((json_int_t)out[a].start));
				json_object_set_new(o, "end", json_integer((json_int_t)out[a].end));
			}
			json_array_append_new(arr, o);
		}
		print_json(json_pack("{s:s, s:o, s:o}", "file", file, "time", json_time(r, t, utc), "values", arr));
		free(out);
		return CLI_OK;
	}
	for (a = 0; a < n; a++)
		if (strlen(sht_attr_path(r, a)) > width)
			width = strlen(sht_attr_path(r, a));
	cli_fmt_secs(t, s1, sizeof(s1));
	clock_range(r, t, t, utc, wall, sizeof(wall));
	printf("%s at %s s (%s)\n", file, s1, wall);
	printf("%-*s  %-12s %-20s %s\n", (int)width, "ATTRIBUTE", "VALUE", "SINCE (s)", "UNTIL (s)");
	for (a = 0; a < n; a++) {
		if ((want && !want[a]) || (out[a].value.type == SHT_NULL && sht_attr_first_child(r, a) != SHT_NO_ATTR))
			continue;
		fmt_value(r, a, &out[a].value, val, sizeof(val));
		if (out[a].value.type == SHT_NULL) {
			printf("%-*s  %s\n", (int)width, sht_attr_path(r, a), val);
			continue;
		}
		cli_fmt_secs(out[a].start, s1, sizeof(s1));
		cli_fmt_secs(out[a].end, s2, sizeof(s2));
		printf("%-*s  %-12s %-20s %s\n", (int)width, sht_attr_path(r, a), val, s1, s2);
	}
	free(out);
	return CLI_OK;
}

static int show_range(struct sht_reader *r, const char *file, const uint8_t *want, uint64_t t1, uint64_t t2, bool json,
		      bool utc)
{
	struct vcpustat_error err = { 0 };
	struct sht_interval *iv;
	uint32_t n = sht_nattrs(r), a;
	size_t k = 0, count;
	char val[64], s1[32], s2[32], s3[32];
	json_t *attrs = NULL;

	if (sht_query_range(r, SHT_NO_ATTR, want, t1, t2, &iv, &count, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (json)
		attrs = json_array();
	else
		printf("%s from %s to %s s\n", file, (cli_fmt_secs(t1, s1, sizeof(s1)), s1), (cli_fmt_secs(t2, s2, sizeof(s2)), s2));
	for (a = 0; a < n; a++) { /* results are sorted by attribute */
		size_t first = k;
		json_t *list = NULL;

		if (!want[a])
			continue;
		while (k < count && iv[k].attr == a)
			k++;
		if (json) {
			list = json_array();
			for (size_t i = first; i < k; i++) {
				json_t *o = json_pack("{s:I, s:I, s:I}", "start", (json_int_t)iv[i].start, "end",
						      (json_int_t)iv[i].end, "duration",
						      (json_int_t)(iv[i].end - iv[i].start));

				json_array_append_new(list, json_value(r, a, &iv[i].value, o));
			}
			json_array_append_new(attrs, json_pack("{s:s, s:o}", "path", sht_attr_path(r, a), "intervals", list));
			continue;
		}
		if (first == k && sht_attr_first_child(r, a) != SHT_NO_ATTR)
			continue; /* an inner attribute without values */
		printf("\n%s: %zu interval%s\n", sht_attr_path(r, a), k - first, k - first == 1 ? "" : "s");
		if (first == k)
			continue;
		printf("  %-20s %-20s %-20s %s\n", "START (s)", "END (s)", "DURATION (s)", "VALUE");
		for (size_t i = first; i < k; i++) {
			cli_fmt_secs(iv[i].start, s1, sizeof(s1));
			cli_fmt_secs(iv[i].end, s2, sizeof(s2));
			cli_fmt_secs(iv[i].end - iv[i].start, s3, sizeof(s3));
			fmt_value(r, a, &iv[i].value, val, sizeof(val));
			printf("  %-20s %-20s %-20s %s\n", s1, s2, s3, val);
		}
	}
	if (json)
		print_json(json_pack("{s:s, s:o, s:o, s:o}", "file", file, "from", json_time(r, t1, utc), "to",
				     json_time(r, t2, utc), "attributes", attrs));
	free(iv);
	return CLI_OK;
}

int cmd_query(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "at", required_argument, NULL, 'a' },	  { "path", required_argument, NULL, 'p' },
		{ "from", required_argument, NULL, 'f' }, { "to", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },	  { "utc", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },	  { 0 },
	};
	const char *at = NULL, *path = NULL, *from = NULL, *to = NULL, *file;
	struct vcpustat_error err = { 0 };
	struct sht_reader *r = NULL;
	uint8_t *want = NULL;
	uint64_t t, t1, t2;
	bool utc = false;
	uint32_t nsel;
	int c, ret = CLI_FAIL;

	while ((c = getopt_long(argc, argv, "a:p:f:t:juh", opts, NULL)) != -1) {
		switch (c) {
		case 'a': at = optarg; break;
		case 'p': path = optarg; break;
		case 'f': from = optarg; break;
		case 't': to = optarg; break;
		case 'j': cli_json = true; break;
		case 'u': utc = true; break;
		case 'h': usage(stdout); return CLI_OK;
		default: usage(stderr); return CLI_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_err(optind >= argc ? "query: which file? (`%s query FILE ...`, see --help)"
				       : "query: one file only (see `%s query --help`)",
			cli_prog);
		return CLI_USAGE;
	}
	if ((from || to) && !path) {
		cli_err("query: --from and --to go with --path (see `%s query --help`)", cli_prog);
		return CLI_USAGE;
	}
	file = argv[optind];
	if (sht_open(&r, file, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (path) {
		want = calloc(sht_nattrs(r) ? sht_nattrs(r) : 1, 1);
		if (!want) {
			cli_err("out of memory");
			goto out;
		}
		if (select_attrs(r, path, want, &nsel)) {
			cli_err("%s: no attribute %s (`%s query %s --path '/**'` lists them all)", file, path, cli_prog,
				file);
			ret = CLI_USAGE;
			goto out;
		}
	}
	if (at) {
		if (sht_parse_time(r, at, &t, &err)) {
			cli_err("--at: %s", err.msg);
			ret = CLI_USAGE;
			goto out;
		}
		if (t > sht_get_info(r)->end) {
			cli_err("--at %s: after the end of the history of %s (%llu ns since the start)", at, file,
				(unsigned long long)sht_get_info(r)->end);
			ret = CLI_USAGE;
			goto out;
		}
		ret = show_at(r, file, t, want, cli_json, utc);
	} else if (path) {
		t1 = sht_get_info(r)->start;
		t2 = sht_get_info(r)->end;
		if ((from && sht_parse_time(r, from, &t1, &err)) || (to && sht_parse_time(r, to, &t2, &err))) {
			cli_err("%s", err.msg);
			ret = CLI_USAGE;
			goto out;
		}
		if (t1 > t2) {
			cli_err("query: --from %s is after --to %s", from ? from : "(start)", to ? to : "(end)");
			ret = CLI_USAGE;
			goto out;
		}
		ret = show_range(r, file, want, t1, t2, cli_json, utc);
	} else {
		ret = show_info(r, file, cli_json, utc);
	}
out:
	free(want);
	sht_close(r);
	return ret;
}
