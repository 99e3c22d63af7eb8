// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat query: read an SHT file (docs/sht-format.md). Every attribute's
 * value at a time (--at), the intervals of attributes in a time range
 * (--path), or, with neither, what the file is (metadata, time range):
 * the selection and the times from model/query_view.c (query_select_path,
 * query_times, query_narrow), the output from its query_show_*.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli.h"
#include "model/query_view.h"
#include "sht/sht.h"

static const char synopsis[] =
	"FILE [--at T] [--path P [--from T1] [--to T2]] [--json] [--utc]\n"
	"                [--vm NAME|PID]... [--vcpu LIST]... [--tid TID]... [--pcpu LIST]...";

static const char about[] =
	"Read a State History Tree file (.sht) written by `vcpustat record` or a replay.\n"
	"\n"
	"  (no --at, no --path)  what the file is: host, times, attributes, intervals\n";

static const char notes[] =
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
	"its end. An empty value (null) is shown as '-'.\n"
	"\n"
	"Filters keep the attributes every one of them accepts: --vm /vms/<vm>/...,\n"
	"--vcpu /vms/*/vcpus/<n>/..., --tid the vCPUs of that thread id and\n"
	"/host/threads/<tid>/..., --pcpu /host/cpus/<cpu>/... and the vCPUs whose pcpu\n"
	"was one of those CPUs (at --at T, or in the range). With filters and neither\n"
	"--at nor --path, the range is the whole file (--path '/**').\n";

int cmd_query(int argc, char **argv)
{
	enum { OPT_VM = 262 };
	const char *at = NULL, *path = NULL, *from = NULL, *to = NULL, *file, *vm_filter[64];
	struct summary_filter filter = { 0 };
	bool utc = false;
	const struct cli_option options[] = {
		{ "at", 256, "T", "every attribute's value at time T (with --path: only those)", CLI_STRING, &at },
		{ "path", 257, "P",
		  "the intervals of attribute P between --from and --to\n(default: the whole file). P is an exact path such as\n"
		  "/vms/web1/vcpus/0/state; P/* selects P's children, P/** every\nattribute below P (/** is everything)",
		  CLI_STRING, &path },
		{ "from", 258, "T1", "the time range for --path (closed: [T1, T2])", CLI_STRING, &from },
		{ "to", 259, "T2", "the end of that range", CLI_STRING, &to },
		{ "json", 260, NULL, "JSON output for scripts", CLI_FLAG, &cli_json },
		{ "utc", 261, NULL, "show wall-clock times in UTC (default: local time)", CLI_FLAG, &utc },
		{ "vm", OPT_VM, "NAME|PID", "only the attributes of this VM (repeatable)" },
		CLI_FILTER_OPTIONS,
		{ "help", 'h', NULL, "this help" },
		{ NULL },
	};
	const struct cli_command cmd = { "query", synopsis, about, options, notes };
	struct vcpustat_error err = { 0 };
	struct sht_reader *r = NULL;
	json_t *doc = NULL;
	uint8_t *want = NULL;
	uint64_t t1, t2;
	struct cli_args a;
	int c, ret;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == OPT_VM && cli_add_vm(&filter, vm_filter, 64, a.arg))
			return CLI_USAGE;
		if (cli_filter_option(&a, c, NULL, &filter) == CLI_USAGE)
			return CLI_USAGE;
	}
	if (c < 0)
		return cli_args_exit(c);
	if (a.pos != argc - 1)
		return cli_usage_error(a.pos >= argc ? "query: which file? (`%s query FILE ...`, see --help)"
						     : "query: one file only (see `%s query --help`)",
				       cli_prog);
	if ((from || to) && !path)
		return cli_usage_error("query: --from and --to go with --path (see `%s query --help`)", cli_prog);
	file = argv[a.pos];
	if (sht_open(&r, file, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if ((filter.nr_vms || filter.nr_cgroups || summary_filter_narrows(&filter)) && !path && !at)
		path = "/**";
	ret = query_select_path(r, path, &want, &err);
	if (ret == -ENOMEM)
		cli_err("out of memory");
	else if (ret)
		cli_err("%s: no attribute %s (`%s query %s --path '/**'` lists them all)", file, path, cli_prog, file);
	ret = ret == -ENOMEM ? CLI_FAIL : ret ? CLI_USAGE : cli_filter_check("query", file, r, &filter);
	if (ret)
		goto out;
	if ((at || path) && ((ret = query_times(r, file, at, from, to, &t1, &t2, &err)) ||
			     (ret = query_narrow(r, file, &filter, t1, t2, &want, &err)))) {
		cli_err(ret == -ENOENT || ret == -ERANGE ? "query: %s" : "%s", err.msg);
		ret = ret == -ENOMEM ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	if (at)
		ret = query_show_at(stdout, cli_json ? &doc : NULL, r, file, t1, want, utc, &err);
	else if (path)
		ret = query_show_range(stdout, cli_json ? &doc : NULL, r, file, want, t1, t2, utc, &err);
	else
		ret = query_show_info(stdout, cli_json ? &doc : NULL, r, file, utc, &err);
	if (ret)
		cli_err("%s", err.msg);
	else if (doc)
		cli_json_print(doc, CLI_JSON_DOC);
	ret = ret ? CLI_FAIL : CLI_OK;
out:
	free(want);
	sht_close(r);
	return ret;
}
