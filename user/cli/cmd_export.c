// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat export: the metrics of docs/metrics.md as Prometheus text,
 * OpenMetrics, JSON or CSV - once from the live maps, every SEC seconds into
 * a file (node_exporter's textfile collector; metrics_live_export, live.h),
 * or for a window of a recording, its metrics or its timeline for Perfetto
 * or chrome://tracing (export_window, export.h).
 */
#include <string.h>
#include "cli/cli.h"
#include "export/export.h"

static const char synopsis[] =
	"[-f FORMAT] [-o FILE] [--interval SEC] [--every SEC]\n"
	"                 [--no-vcpu-labels] [--top-culprits N] [--vm NAME|PID]... [--address-spaces] [-v]\n"
	"       vcpustat export [--file] FILE.sht [--from T] [--to T] [-f FORMAT] [-o FILE] ...\n"
	"                 [--vcpu LIST]... [--tid TID]... [--pcpu LIST]...";

static const char about[] =
	"The capacity-planning metrics (docs/metrics.md): vCPU-seconds per state, preemptions,\n"
	"wakeups, migrations, exit counts and latency histograms, run-queue wait histograms,\n"
	"who took the CPUs, lost records. Live: attaches, samples for --interval seconds and\n"
	"prints the counters since the attach; with --every, keeps running and rewrites FILE\n"
	"every SEC seconds with counters that only grow (node_exporter's textfile collector).\n"
	"With --file: the same metrics for a window of a recording. -f chrome-json, -f ctf: the\n"
	"recording's timeline (vCPU states and exits, host CPUs) for Perfetto and chrome://tracing,\n"
	"or as a CTF trace for babeltrace2 and Trace Compass.\n";

static const char notes[] = "Examples:\n"
			    "  vcpustat export                                   # Prometheus text after 1 s\n"
			    "  vcpustat export -f csv --interval 10 -o vcpu.csv\n"
			    "  vcpustat export --every 15 -o /var/lib/prometheus/node-exporter/vcpustat.prom\n"
			    "  vcpustat export --file day.sht --from 14:00 --to 15:00 -f json\n"
			    "  vcpustat export day.sht -f chrome-json -o day.json     # open in ui.perfetto.dev\n"
			    "  vcpustat export day.sht -f ctf -o day-ctf              # babeltrace2 day-ctf\n";

int cmd_export(int argc, char **argv)
{
	enum { OPT_FILE = 256, OPT_FROM, OPT_TO, OPT_NO_LABELS, OPT_TOP, OPT_VM, OPT_AS };
	struct export_args x = { .w.mo.top_culprits = METRICS_TOP_CULPRITS, .interval = 1 };
	struct vcpustat_error err = { 0 };
	const char *vm_filter[64];
	long top = METRICS_TOP_CULPRITS;
	const struct cli_option options[] = {
		{ "format", 'f', "FORMAT", "prometheus (text 0.0.4, default), openmetrics, json, csv;\n"
					   "of a recording's timeline (needs -o): chrome-json (-o FILE), ctf (-o DIR)" },
		{ "output", 'o', "FILE", "write FILE atomically (temporary file + rename); a device, a\n"
					 "FIFO or /dev/stdout in place; default stdout; -f ctf: a new\n"
					 "or empty directory", CLI_STRING, &x.w.out },
		{ "interval", 'i', "SEC", "live: sample for SEC seconds before the first output (default 1)",
		  CLI_SECONDS, &x.interval, 10000000, 86400000000000 },
		{ "every", 'e', "SEC", "live: run until stopped, rewriting FILE (-o) every SEC seconds", CLI_SECONDS,
		  &x.every, 10000000, 86400000000000 },
		{ "file", OPT_FILE, "FILE.sht", "a recording (vcpustat record) instead of the live maps", CLI_STRING,
		  &x.file },
		{ "from", OPT_FROM, "T", "the window of the recording (default: all of it). T: ns since\n"
					 "the start, seconds (1.5s), or wall clock (14:03:07.123)", CLI_STRING, &x.from },
		{ "to", OPT_TO, "T", "the end of that window (default: the end of the recording)", CLI_STRING, &x.to },
		{ "no-vcpu-labels", OPT_NO_LABELS, NULL, "one series per VM instead of per vCPU (big hosts)", CLI_FLAG,
		  &x.w.mo.no_vcpu_labels },
		{ "top-culprits", OPT_TOP, "N", "culprits named per VM, the rest summed as \"other\" (default 5)",
		  CLI_NUMBER, &top, 0, 1000, "culprits per VM" },
		{ "vm", OPT_VM, "NAME|PID", "only this VM (repeatable)" },
		{ "address-spaces", OPT_AS, NULL, "live: also the guests' address spaces (exits and guest time\n"
						  "by CR3; a recording has them if recorded with them)", CLI_FLAG,
		  &x.address_spaces },
		CLI_FILTER_OPTIONS, /* recordings only, but --cgroup */
		{ "verbose", 'v', NULL, "libbpf's log on stderr", CLI_FLAG, &x.verbose },
		{ "help", 'h', NULL, "this help" },
		{ NULL },
	};
	const struct cli_command cmd = { "export", synopsis, about, options, notes };
	struct cli_args a;
	int c;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == 'f' && export_format_parse(a.arg, &x.w))
			return cli_usage_error("--format %s: unknown format (prometheus, openmetrics, json, csv, "
					       "chrome-json or ctf)", a.arg);
		if (c == OPT_VM && cli_add_vm(&x.filter, vm_filter, sizeof(vm_filter) / sizeof(vm_filter[0]), a.arg))
			return CLI_USAGE;
		if (cli_filter_option(&a, c, NULL, &x.filter) == CLI_USAGE)
			return CLI_USAGE;
	}
	if (c < 0)
		return cli_args_exit(c);
	if (a.pos < argc && !x.file)
		x.file = argv[a.pos++];
	if (a.pos < argc)
		return cli_usage_error("unexpected argument '%s' (one recording; see --help)", argv[a.pos]);
	if (x.w.timeline && (!x.file || !x.w.out || !strcmp(x.w.out, "-")))
		return cli_usage_error("-f %s exports the timeline of a recording: it needs FILE.sht and -o %s",
				       x.w.tfmt == TIMELINE_CHROME_JSON ? "chrome-json" : "ctf",
				       x.w.tfmt == TIMELINE_CHROME_JSON ? "FILE" : "DIR");
	if (summary_filter_narrows(&x.filter) && !x.file)
		return cli_usage_error("--vcpu, --tid and --pcpu filter a recording: they need --file");
	if ((x.from || x.to) && !x.file)
		return cli_usage_error("--from/--to select a window of a recording: they need --file");
	if (x.every > 0 && x.file)
		return cli_usage_error("--every is for the live maps; a recording is exported once");
	if (x.every > 0 && !x.w.out)
		return cli_usage_error("--every needs -o FILE: the file is rewritten each period");
	x.w.mo.top_culprits = (unsigned int)top;
	if (x.w.out && !strcmp(x.w.out, "-"))
		x.w.out = NULL;
	/* refuse an input as the output, or an unwritable one, before attaching or reading anything */
	if (x.w.out && x.file && outfile_refuse_input(x.w.out, &x.file, 1, &err))
		return cli_usage_error("export: -o %s", err.msg);
	if (x.w.out &&
	    (x.w.timeline ? timeline_check_output(x.w.tfmt, x.w.out, &err) : outfile_check(x.w.out, 0, &err))) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	return x.file ? export_file(&x) : export_live(&x);
}
