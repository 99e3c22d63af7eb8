// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat plot: SVG charts of a window of a recording (state shares over
 * time, per vCPU, latency histograms), or of a few live seconds (per vCPU
 * and histograms).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "util/util.h"
#include "export/export.h"
#include "model/model.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s plot FILE.sht [--from T] [--to T] [--buckets N] [--vm NAME|PID]... -o OUT.svg\n"
		"       %s plot --live [--interval SEC] [--vm NAME|PID]... -o OUT.svg\n"
		"\n"
		"Charts as one standalone SVG (opens in any browser), per VM: the share of its vCPU\n"
		"time in each state over time (stacked bars per time bucket; recordings only), each\n"
		"vCPU's shares over the window, and the histograms of exit-handling latency,\n"
		"userspace-exit latency and run-queue wait, with p50 and p99.\n"
		"\n"
		"  -o, --output FILE    the SVG file, written atomically (- for stdout)\n"
		"      --from T, --to T the window of the recording (default: all of it). T: ns since\n"
		"                       the start, seconds (1.5s), or wall clock (14:03:07.123)\n"
		"  -b, --buckets N      time buckets of the timeline (default 60, at most %d)\n"
		"      --live           the live maps instead of a recording: attach and sample\n"
		"  -i, --interval SEC   with --live: how long to sample (default 2)\n"
		"      --vm NAME|PID    only this VM (repeatable)\n"
		"  -v, --verbose        libbpf's log on stderr\n"
		"  -h, --help           this help\n",
		cli_prog, cli_prog, PLOT_MAX_BUCKETS);
	cli_usage_exit_status(f);
}

static int write_svg(const struct plot_doc *d, const char *path)
{
	struct vcpustat_error err = {0};
	char *buf;
	size_t len;
	int ret = CLI_OK;

	if (plot_svg(d, &buf, &len)) {
		cli_err("out of memory");
		return CLI_FAIL;
	}
	if (outfile_write(path, buf, len, &err)) {
		cli_err("%s", err.msg);
		ret = CLI_FAIL;
	}
	free(buf);
	return ret;
}

static int plot_file(const char *file, const char *from, const char *to, long buckets,
		     const struct summary_filter *filter, const char *path)
{
	struct vcpustat_error err = {0};
	struct plot_timeline *tl = NULL;
	struct sht_reader *r = NULL;
	struct plot_doc d = {0};
	struct summary s;
	char a[64], b[64], window[192];
	size_t ntl = 0;
	bool culprits;
	uint64_t t1, t2;
	int ret = CLI_FAIL;

	ret = cli_open_window(file, from, to, &r, &t1, &t2);
	if (ret)
		return ret;
	ret = CLI_FAIL;
	if (report_build(&s, r, t1, t2, filter, &culprits, &err)) {
		cli_err("%s", err.msg);
		goto out;
	}
	if (plot_timelines(r, t1, t2, (size_t)buckets, filter, &tl, &ntl, &err)) {
		cli_err("%s", err.msg);
		summary_free(&s);
		goto out;
	}
	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	if (sht_has_wall_clock(r)) {
		a[19] = b[19] = '\0'; /* to the second: "2026-11-22T14:03:07" */
		snprintf(window, sizeof(window), "%s .. %s (%.1f s)", a, b + 11, (double)(t2 - t1) / 1e9);
	} else { /* an imported trace: seconds since its start */
		snprintf(window, sizeof(window), "%s .. %s since the trace start (%.1f s)", a, b, (double)(t2 - t1) / 1e9);
	}
	d.s = &s;
	d.tl = tl;
	d.nr_tl = ntl;
	d.seconds = (double)(t2 - t1) / 1e9;
	d.window = window;
	d.source = file;
	ret = write_svg(&d, path);
	plot_timelines_free(tl, ntl);
	summary_free(&s);
out:
	sht_close(r);
	return ret;
}

static void wall(char *buf, size_t len, time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

static int plot_live(double interval, bool verbose, const struct summary_filter *filter, const char *path)
{
	struct vcpustat_options opts = {.record_level = VCPUSTAT_LEVEL_NONE};
	struct vcpustat_snapshot a, b;
	struct plot_doc d = {0};
	struct vcpustat *vs;
	struct names names;
	struct summary s;
	struct timespec ts = {.tv_sec = (time_t)interval,
			      .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9)};
	char host[64] = "this host", w0[32], w1[32], window[160], source[128];
	time_t start;
	int ret, err;

	ret = cli_open_live(&vs, &opts, verbose, false);
	if (ret)
		return ret;
	ret = CLI_FAIL;
	if (names_init(&names, NULL, NULL)) {
		cli_err("out of memory");
		vcpustat_close(vs);
		return CLI_FAIL;
	}
	cli_catch_stop(false);
	start = time(NULL);
	err = vcpustat_snapshot(vs, &a);
	if (err) {
		cli_err("cannot read the BPF maps: %s", strerror(-err));
		goto out;
	}
	nanosleep(&ts, NULL);
	if (cli_stop) {
		vcpustat_snapshot_free(&a);
		goto out;
	}
	err = vcpustat_snapshot(vs, &b);
	if (!err)
		err = summary_build(&s, &a, &b, &names, filter);
	if (err) {
		cli_err("cannot read the BPF maps: %s", strerror(-err));
		vcpustat_snapshot_free(&a);
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	wall(w0, sizeof(w0), start);
	wall(w1, sizeof(w1), time(NULL));
	snprintf(window, sizeof(window), "%s .. %s (%.1f s)", w0, w1 + 11, s.seconds);
	snprintf(source, sizeof(source), "live on %s", host);
	d.s = &s;
	d.seconds = s.seconds;
	d.window = window;
	d.source = source;
	ret = write_svg(&d, path);
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
out:
	names_free(&names);
	vcpustat_close(vs);
	return ret;
}

int cmd_plot(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"from", required_argument, NULL, 'A'},
	    {"to", required_argument, NULL, 'B'},
	    {"buckets", required_argument, NULL, 'b'},
	    {"live", no_argument, NULL, 'L'},
	    {"interval", required_argument, NULL, 'i'},
	    {"file", required_argument, NULL, 'F'},
	    {"vm", required_argument, NULL, 'V'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *path = NULL, *file = NULL, *from = NULL, *to = NULL, *vm_filter[64];
	struct summary_filter filter = {0};
	struct vcpustat_error err = {0};
	bool live = false, verbose = false;
	double interval = 2;
	long buckets = 60;
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:b:i:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			path = optarg;
			break;
		case 'A':
			from = optarg;
			break;
		case 'B':
			to = optarg;
			break;
		case 'b':
			buckets = strtol(optarg, &end, 10);
			if (end == optarg || *end || buckets < 1 || buckets > PLOT_MAX_BUCKETS) {
				cli_err("--buckets %s: a number of time buckets, 1 to %d", optarg, PLOT_MAX_BUCKETS);
				return CLI_USAGE;
			}
			break;
		case 'L':
			live = true;
			break;
		case 'i':
			if (cli_parse_seconds("--interval", optarg, 0.01, 3600, &interval))
				return CLI_USAGE;
			break;
		case 'F':
			file = optarg;
			break;
		case 'V':
			if (cli_add_vm(&filter, vm_filter, sizeof(vm_filter) / sizeof(vm_filter[0]), optarg))
				return CLI_USAGE;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			usage(stderr);
			return CLI_USAGE;
		}
	}
	if (optind < argc) {
		if (file || optind < argc - 1) {
			cli_err("plot: one recording at most (see --help)");
			return CLI_USAGE;
		}
		file = argv[optind];
	}
	if (!file && !live) {
		cli_err("plot: give a recording (FILE.sht) or --live (see --help)");
		return CLI_USAGE;
	}
	if (file && live) {
		cli_err("plot: a recording or --live, not both");
		return CLI_USAGE;
	}
	if (live && (from || to)) {
		cli_err("--from/--to select a window of a recording; with --live use --interval");
		return CLI_USAGE;
	}
	if (!path) {
		cli_err("plot: -o FILE.svg is needed (- for stdout)");
		return CLI_USAGE;
	}
	if (file && outfile_refuse_input(path, &file, 1, &err)) {
		cli_err("plot: -o %s", err.msg);
		return CLI_USAGE;
	}
	if (outfile_check(path, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (live)
		return plot_live(interval, verbose, &filter, path);
	return plot_file(file, from, to, buckets, &filter, path);
}
