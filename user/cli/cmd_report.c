// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* vcpustat report: the live view's tables for any window of a recording. */
#include <stdio.h>
#include "cli/cli.h"
#include "model/pcpu.h"
#include "model/placement.h"
#include "model/report.h"

static const char synopsis[] =
	"FILE.sht [--from T] [--to T] [--vm NAME|PID]... [FILTERS] [--json] [--top N]\n"
	"       vcpustat report FILE.sht --placement [--host-topology] [--from T] [--to T] [--vm NAME|PID]... [FILTERS] [--json]\n"
	"       vcpustat report FILE.sht --pcpu [--from T] [--to T] [--top N] [--pcpu LIST] [--tid TID]... [--json]\n"
	"       vcpustat report FILE.sht --flow THREAD [--min-impact FRACTION] [--from T] [--to T] [--json]\n"
	"FILTERS: [--vcpu LIST]... [--tid TID]... [--pcpu LIST]...";

static const char about[] =
	"The tables of the live view (state shares, preemptions, exit reasons with\n"
	"p50/p99 latency, run-queue waits, who took the CPU) for a window of a\n"
	"recording. Without --from/--to: the whole file. An exit is counted in the\n"
	"window of its kvm_exit, with its whole handling time (docs/record.md).\n";

static const char notes[] =
	"Culprits (who ran where the vCPUs waited) are in recordings at both levels\n"
	"(level vcpu: only where they waited). Files made by `vcpustat\n"
	"import` with guest traces also show, per guest thread, the time it lost to the\n"
	"host (running in the guest while its vCPU was not) and who took its vCPU's CPU.\n"
	"With --flow: the thread's intervals, who ran instead, the culprits as a tree\n"
	"system / process / thread with D(T) = time / lifespan (docs/vcpustat.md).\n"
	"\n"
	"Filters (docs/vcpustat.md, \"Filters\") combine with AND. --vcpu and --tid keep\n"
	"those vCPUs: a VM's totals are then over them only. --pcpu LIST counts a vCPU's\n"
	"time only while its pcpu is one of those CPUs (off CPU: the CPU it last ran on or\n"
	"waits on), and its events when they happen there. `--pcpu` alone is the\n"
	"per-CPU view; there --pcpu LIST keeps those CPUs and --tid those occupants.\n";

int cmd_report(int argc, char **argv)
{
	enum { OPT_FROM = 256, OPT_TO, OPT_VM, OPT_TOP, OPT_PLACEMENT, OPT_HOST_TOPOLOGY, OPT_PCPU_VIEW, OPT_FLOW,
	       OPT_MIN_IMPACT };
	const char *from = NULL, *to = NULL, *vm_filter[64], *flow = NULL, *min_impact = NULL, *file;
	struct summary_filter filter = { 0 };
	struct vcpustat_error err = { 0 };
	struct sht_reader *r = NULL;
	json_t *doc = NULL;
	size_t nr_vms = 0;
	bool json = false, placement = false, host_topology = false, pcpu = false, top_given = false;
	long top = 5;
	uint64_t t1, t2;
	int ret, c, e;
	const struct cli_option options[] = {
		{ "from", OPT_FROM, "T", "the window [from, to). T: nanoseconds since the start\n"
					 "(123456789), seconds (1.5s, 2.25, +1.5s), or wall-clock time\n"
					 "(2026-11-22T14:03:07.123, 14:03:07 on the trace's day; not\n"
					 "for imported traces, which have no wall clock)", CLI_STRING, &from },
		{ "to", OPT_TO, "T", "the end of that window (default: the end of the file)", CLI_STRING, &to },
		{ "vm", OPT_VM, "NAME|PID", "only this VM (repeatable)" },
		CLI_FILTER_CGROUP,
		CLI_FILTER_VCPU_TID,
		{ "pcpu", OPT_PCPU_VIEW, "[LIST]",
		  "with LIST: only time on these physical CPUs (0-3,8; repeatable).\n"
		  "Alone: per physical CPU instead: its time in guest code and in the\n"
		  "hypervisor per VM and vCPU, host threads, idle, and its top\n"
		  "occupants (--top N of them; host threads and idle: --level full)" },
		{ "json", 'j', NULL, "the JSON of `vcpustat -j` (docs/json.md), plus the window", CLI_FLAG, &json },
		{ "top", OPT_TOP, "N", "rows per exit/culprit table (default 5, 0: all)" },
		{ "placement", OPT_PLACEMENT, NULL,
		  "where each VM's vCPUs ran instead: vCPU-seconds per NUMA node and\n"
		  "last-level cache, migrations across them, time beside another\n"
		  "VM's vCPU on an SMT core, and which VM to move to balance the nodes",
		  CLI_FLAG, &placement },
		{ "host-topology", OPT_HOST_TOPOLOGY, NULL,
		  "with --placement: this machine's CPU topology (sysfs), for a\n"
		  "recording that has none (imported, or older)", CLI_FLAG, &host_topology },
		{ "flow", OPT_FLOW, "THREAD",
		  "the execution flow of one thread: what delayed it over its\n"
		  "lifespan in the window, who ran instead, D(T) per culprit.\n"
		  "THREAD: a host tid, or VM:GUEST_TID (files imported with guest\n"
		  "traces)", CLI_STRING, &flow },
		{ "min-impact", OPT_MIN_IMPACT, "FRACTION",
		  "with --flow: leave culprits with D(T) below FRACTION (0..1)\n"
		  "out of the tree (default 0)", CLI_STRING, &min_impact },
		{ "help", 'h', NULL, "this help" },
		{ NULL },
	};
	const struct cli_command cmd = { "report", synopsis, about, options, notes };
	struct cli_args a;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == OPT_VM && cli_add_vm(&filter, vm_filter, 64, a.arg))
			return CLI_USAGE;
		if (c == OPT_TOP) {
			if (cli_parse_long("--top", a.arg, 0, 100000, "rows (0: all)", &top))
				return CLI_USAGE;
			top_given = true;
		}
		if (c == OPT_PCPU_VIEW && !cli_optional_value(&a, cli_cpu_list))
			pcpu = true;
		else if (c == OPT_PCPU_VIEW && cli_filter_option(&a, CLI_OPT_PCPU, NULL, &filter))
			return CLI_USAGE;
		if (cli_filter_option(&a, c, NULL, &filter) == CLI_USAGE)
			return CLI_USAGE;
	}
	if (c < 0)
		return cli_args_exit(c);
	if (json)
		cli_json = true;
	if (a.pos != argc - 1) {
		cli_err("report: one .sht file is needed (see --help)");
		return CLI_USAGE;
	}
	file = argv[a.pos];
	if (flow || min_impact)
		return report_flow(file, flow, min_impact, from, to, json, &filter, placement || pcpu, top_given);
	if (host_topology && !placement)
		return cli_usage_error("--host-topology goes with --placement");
	if (pcpu && (placement || filter.nr_vms || filter.nr_cgroups || filter.vcpus.n))
		return cli_usage_error("--pcpu shows every CPU whole: not with --placement, --vm, --cgroup or --vcpu "
				       "(--pcpu LIST keeps CPUs, --tid occupants)");
	ret = cli_open_window(file, from, to, &r, &t1, &t2);
	if (!ret)
		ret = cli_filter_check("report", file, r, &filter);
	if (ret) {
		sht_close(r);
		return ret;
	}
	if (pcpu)
		e = report_show_pcpu(stdout, json ? &doc : NULL, r, file, t1, t2, &filter, (unsigned int)top, &err);
	else if (placement)
		e = report_show_placement(stdout, json ? &doc : NULL, r, file, t1, t2, &filter, host_topology, &nr_vms,
					  &err);
	else
		e = report_show_window(stdout, json ? &doc : NULL, r, file, t1, t2, &filter, (unsigned int)top, &nr_vms,
				       &err);
	if (e)
		cli_err("%s", err.msg);
	/* the filters kept nothing: the window's tables ask both, --placement --vm only, --pcpu neither */
	if (!e && !pcpu && !placement)
		ret = cli_filter_none_kept("report", file, &filter, nr_vms);
	if (!e && !ret && !pcpu)
		ret = cli_vm_none_matched(file, r, &filter, nr_vms);
	if (!e && !ret && json)
		cli_json_print(doc, CLI_JSON_LINE);
	sht_close(r);
	return e ? CLI_FAIL : ret;
}
