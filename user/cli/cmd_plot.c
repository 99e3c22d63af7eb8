// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat plot: SVG charts of a window of a recording (state shares over
 * time, per vCPU, latency histograms: plot_recording), or of a few live
 * seconds (per vCPU and histograms: a live window, plot_live_window).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "export/export.h"

static const char synopsis[] = "FILE.sht [--from T] [--to T] [--buckets N] [--vm NAME|PID]... [FILTERS] -o OUT.svg\n"
			       "       vcpustat plot FILE.sht --timeline [--from T] [--to T] [--vm NAME|PID]... [FILTERS] -o OUT.svg\n"
			       "       vcpustat plot --live [--interval SEC] [--vm NAME|PID]... -o OUT.svg\n"
			       "FILTERS: [--vcpu LIST]... [--tid TID]... [--pcpu LIST]... (docs/vcpustat.md, \"Filters\")";

static const char about[] =
	"Charts as one standalone SVG (opens in any browser), per VM: the share of its vCPU\n"
	"time in each state over time (stacked bars per time bucket; recordings only), each\n"
	"vCPU's shares over the window, the histograms of exit-handling latency,\n"
	"userspace-exit latency and run-queue wait, with p50 and p99, and what the exits\n"
	"accessed (top I/O ports, MMIO addresses, MSRs, faulting pages). With --timeline: a Gantt\n"
	"chart instead, a row per physical CPU (which VM's vCPU ran guest code or hypervisor\n"
	"work, a host thread, idle) and per vCPU (its state) over the window.\n";

struct plot_args {
	const char *path, *file, *from, *to;
	struct summary_filter filter;
	bool live, verbose, timeline;
	double interval;
	long buckets;
};

static int plot_file(struct plot_args *p)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	uint64_t t1, t2;
	int ret = cli_open_window(p->file, p->from, p->to, &r, &t1, &t2);

	if (!ret)
		ret = cli_filter_check("plot", p->file, r, &p->filter);
	if (!ret && p->timeline && plot_gantt(r, p->file, t1, t2, &p->filter, p->path, &err)) {
		cli_err("%s", err.msg);
		ret = CLI_FAIL;
	} else if (!ret && !p->timeline &&
		   plot_recording(r, p->file, t1, t2, (size_t)p->buckets, &p->filter, p->path, &err)) {
		cli_err("%s", err.msg);
		ret = CLI_FAIL;
	}
	sht_close(r);
	return ret;
}

static int plot_live(const struct plot_args *p)
{
	struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE };
	struct vcpustat_error err = { 0 };
	struct vcpustat *vs;
	struct summary s;
	time_t start = time(NULL);
	int ret = cli_open_live(&vs, &opts, p->verbose, false), e;

	if (ret)
		return ret;
	cli_catch_stop(false);
	e = live_window_sample(vs, &p->filter, (__u64)(p->interval * 1e9 + 0.5), &cli_stop, &s);
	if (!e) {
		if (plot_live_window(&s, start, time(NULL), p->path, &err)) {
			cli_err("%s", err.msg);
			ret = CLI_FAIL;
		}
		summary_free(&s);
	} else {
		if (e != -EINTR)
			cli_err("cannot read the BPF maps: %s", strerror(-e));
		ret = CLI_FAIL; /* or stopped before the window ended: no chart */
	}
	vcpustat_close(vs);
	return ret;
}

int cmd_plot(int argc, char **argv)
{
	enum { OPT_FROM = 256, OPT_TO, OPT_LIVE, OPT_FILE, OPT_VM, OPT_TIMELINE };
	struct plot_args p = { .interval = 2, .buckets = 60 };
	struct vcpustat_error err = { 0 };
	const char *vm_filter[64];
	const struct cli_option options[] = {
		{ "output", 'o', "FILE", "the SVG file, written atomically (- for stdout; a device or a\n"
					 "FIFO in place)", CLI_STRING, &p.path },
		{ "from", OPT_FROM, "T", "the window of the recording (default: all of it). T: ns since\n"
					 "the start, seconds (1.5s), or wall clock (14:03:07.123)", CLI_STRING, &p.from },
		{ "to", OPT_TO, "T", "the end of that window (default: the end of the recording)", CLI_STRING, &p.to },
		{ "buckets", 'b', "N", "time buckets of the state-share chart (default 60, at most 1000)", CLI_NUMBER, &p.buckets,
		  1, PLOT_MAX_BUCKETS, "time buckets" },
		{ "timeline", OPT_TIMELINE, NULL, "a Gantt chart of physical CPUs and vCPUs over the window instead",
		  CLI_FLAG, &p.timeline },
		{ "live", OPT_LIVE, NULL, "the live maps instead of a recording: attach and sample", CLI_FLAG, &p.live },
		{ "interval", 'i', "SEC", "with --live: how long to sample (default 2)", CLI_SECONDS, &p.interval,
		  10000000, 3600000000000 },
		{ "vm", OPT_VM, "NAME|PID", "only this VM (repeatable)" },
		CLI_FILTER_OPTIONS, /* recordings only, but --cgroup */
		{ "verbose", 'v', NULL, "libbpf's log on stderr", CLI_FLAG, &p.verbose },
		{ "help", 'h', NULL, "this help" },
		{ "file", OPT_FILE, "FILE.sht", NULL, CLI_STRING, &p.file }, /* the recording, as an option */
		{ NULL },
	};
	const struct cli_command cmd = { "plot", synopsis, about, options, NULL };
	struct cli_args a;
	int c;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == OPT_VM && cli_add_vm(&p.filter, vm_filter, sizeof(vm_filter) / sizeof(vm_filter[0]), a.arg))
			return CLI_USAGE;
		if (cli_filter_option(&a, c, NULL, &p.filter) == CLI_USAGE)
			return CLI_USAGE;
	}
	if (c < 0)
		return cli_args_exit(c);
	if (a.pos < argc && (p.file || a.pos < argc - 1))
		return cli_usage_error("plot: one recording at most (see --help)");
	if (a.pos < argc)
		p.file = argv[a.pos];
	if (!p.file && !p.live)
		return cli_usage_error("plot: give a recording (FILE.sht) or --live (see --help)");
	if (p.file && p.live)
		return cli_usage_error("plot: a recording or --live, not both");
	if (p.live && p.timeline)
		return cli_usage_error("--timeline charts a recording, not --live");
	if (p.live && summary_filter_narrows(&p.filter))
		return cli_usage_error("--vcpu, --tid and --pcpu filter a recording, not --live");
	if (p.live && (p.from || p.to))
		return cli_usage_error("--from/--to select a window of a recording; with --live use --interval");
	if (!p.path)
		return cli_usage_error("plot: -o FILE.svg is needed (- for stdout)");
	if (p.file && outfile_refuse_input(p.path, &p.file, 1, &err))
		return cli_usage_error("plot: -o %s", err.msg);
	if (outfile_check(p.path, 0, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	return p.live ? plot_live(&p) : plot_file(&p);
}
