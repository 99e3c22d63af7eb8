// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat export: the metrics of docs/metrics.md as Prometheus text,
 * OpenMetrics, JSON or CSV - once from the live maps, every SEC seconds into
 * a file (node_exporter's textfile collector), or for a window of a
 * recording.
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
#include "export/export.h"
#include "util/util.h"
#include "model/model.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s export [-f FORMAT] [-o FILE] [--interval SEC] [--every SEC]\n"
		"                 [--no-vcpu-labels] [--top-culprits N] [--vm NAME|PID]... [-v]\n"
		"       %s export --file FILE.sht [--from T] [--to T] [-f FORMAT] [-o FILE] ...\n"
		"\n"
		"The capacity-planning metrics (docs/metrics.md): vCPU-seconds per state, preemptions,\n"
		"wakeups, migrations, exit counts and latency histograms, run-queue wait histograms,\n"
		"who took the CPUs, lost records. Live: attaches, samples for --interval seconds and\n"
		"prints the counters since the attach; with --every, keeps running and rewrites FILE\n"
		"every SEC seconds with counters that only grow (node_exporter's textfile collector).\n"
		"With --file: the same metrics for a window of a recording.\n"
		"\n"
		"  -f, --format FORMAT   prometheus (text 0.0.4, default), openmetrics, json, csv\n"
		"  -o, --output FILE     write FILE atomically (temporary file + rename); default stdout\n"
		"  -i, --interval SEC    live: sample for SEC seconds before the first output (default 1)\n"
		"  -e, --every SEC       live: run until stopped, rewriting FILE (-o) every SEC seconds\n"
		"      --file FILE.sht   a recording (vcpustat record) instead of the live maps\n"
		"      --from T, --to T  the window of the recording (default: all of it). T: ns since\n"
		"                        the start, seconds (1.5s), or wall clock (14:03:07.123)\n"
		"      --no-vcpu-labels  one series per VM instead of per vCPU (big hosts)\n"
		"      --top-culprits N  culprits named per VM, the rest summed as \"other\" (default %d)\n"
		"      --vm NAME|PID     only this VM (repeatable)\n"
		"  -v, --verbose         libbpf's log on stderr\n"
		"  -h, --help            this help\n"
		"\n"
		"Examples:\n"
		"  %s export                                   # Prometheus text after 1 s\n"
		"  %s export -f csv --interval 10 -o vcpu.csv\n"
		"  %s export --every 15 -o /var/lib/prometheus/node-exporter/vcpustat.prom\n"
		"  %s export --file day.sht --from 14:00 --to 15:00 -f json\n",
		cli_prog, cli_prog, METRICS_TOP_CULPRITS, cli_prog, cli_prog, cli_prog, cli_prog);
	cli_usage_exit_status(f);
}

/* Sleep until CLOCK_MONOTONIC deadline (ns) or a signal. */
static void sleep_until(unsigned long long deadline)
{
	struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull),
			      .tv_nsec = (long)(deadline % 1000000000ull)};

	while (!cli_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int output(const struct metrics *m, enum metrics_format fmt, const char *path)
{
	struct vcpustat_error err = {0};
	char *buf;
	size_t len;
	int ret = 0;

	if (metrics_render(m, fmt, &buf, &len)) {
		cli_err("out of memory");
		return CLI_FAIL;
	}
	if (path) {
		if (outfile_write(path, buf, len, &err)) {
			cli_err("%s", err.msg);
			ret = CLI_FAIL;
		}
	} else if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
		cli_err("writing to stdout: %s", strerror(errno));
		ret = CLI_FAIL;
	}
	free(buf);
	return ret;
}

static int export_file(const char *file, const char *from, const char *to, const struct metrics_opts *mo,
		       const struct summary_filter *filter, enum metrics_format fmt, const char *path)
{
	struct vcpustat_error err = {0};
	const struct sht_info *info;
	struct sht_reader *r = NULL;
	struct metrics *m = NULL;
	struct summary s;
	char a[64], b[64];
	bool culprits;
	uint64_t t1, t2;
	int ret = CLI_FAIL;

	ret = cli_open_window(file, from, to, &r, &t1, &t2);
	if (ret)
		return ret;
	ret = CLI_FAIL;
	info = sht_get_info(r);
	if (report_build(&s, r, t1, t2, filter, &culprits, &err)) {
		cli_err("%s", err.msg);
		goto out;
	}
	ret = cli_vm_none_matched(file, r, filter, s.nr_vms);
	if (ret) {
		summary_free(&s);
		goto out;
	}
	ret = CLI_FAIL;
	m = metrics_new(mo);
	if (!m || metrics_add(m, &s)) {
		summary_free(&s);
		cli_err("out of memory");
		goto out;
	}
	summary_free(&s);
	if (sht_has_wall_clock(r))
		metrics_set_clock(m, (long long)info->real_start_ns);
	else
		metrics_set_no_clock(m);
	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	metrics_set_file(m, file, t1, t2, a, b);
	ret = output(m, fmt, path);
out:
	metrics_free(m);
	sht_close(r);
	return ret;
}

static int export_live(double interval, double every, bool verbose, const struct metrics_opts *mo,
		       const struct summary_filter *filter, enum metrics_format fmt, const char *path)
{
	struct vcpustat_options opts = {.record_level = VCPUSTAT_LEVEL_NONE};
	struct metrics_live live;
	struct vcpustat *vs;
	unsigned long long next;
	int ret, err;

	ret = cli_open_live(&vs, &opts, verbose, false);
	if (ret)
		return ret;
	if (metrics_live_init(&live, vs, mo, filter)) {
		cli_err("out of memory");
		vcpustat_close(vs);
		return CLI_FAIL;
	}
	cli_catch_stop(true);
	next = vcpustat_now_ns() + (unsigned long long)(interval * 1e9);
	for (;;) {
		sleep_until(next);
		if (cli_stop && every > 0)
			break; /* stopped between two writes: the file is complete */
		err = metrics_live_sample(&live);
		if (err) {
			cli_err("cannot read the BPF maps: %s", strerror(-err));
			ret = CLI_FAIL;
			break;
		}
		ret = output(live.m, fmt, path);
		if (ret || every <= 0 || cli_stop)
			break;
		next += (unsigned long long)(every * 1e9);
		if (next < vcpustat_now_ns()) /* fell behind: no burst of catch-up writes */
			next = vcpustat_now_ns() + (unsigned long long)(every * 1e9);
	}
	metrics_live_free(&live);
	vcpustat_close(vs);
	return ret;
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"interval", required_argument, NULL, 'i'},
	    {"every", required_argument, NULL, 'e'},
	    {"file", required_argument, NULL, 'F'},
	    {"from", required_argument, NULL, 'A'},
	    {"to", required_argument, NULL, 'B'},
	    {"no-vcpu-labels", no_argument, NULL, 'N'},
	    {"top-culprits", required_argument, NULL, 'C'},
	    {"vm", required_argument, NULL, 'V'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct metrics_opts mo = {.top_culprits = METRICS_TOP_CULPRITS};
	struct summary_filter filter = {0};
	enum metrics_format fmt = METRICS_PROMETHEUS;
	const char *path = NULL, *file = NULL, *from = NULL, *to = NULL, *vm_filter[64];
	struct vcpustat_error err = {0};
	double interval = 1.0, every = 0;
	bool verbose = false;
	long n;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:i:e:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (metrics_format_parse(optarg, &fmt)) {
				cli_err("--format %s: unknown format (prometheus, openmetrics, json or csv)", optarg);
				return CLI_USAGE;
			}
			break;
		case 'o':
			path = optarg;
			break;
		case 'i':
			if (cli_parse_seconds("--interval", optarg, 0.01, 86400, &interval))
				return CLI_USAGE;
			break;
		case 'e':
			if (cli_parse_seconds("--every", optarg, 0.01, 86400, &every))
				return CLI_USAGE;
			break;
		case 'F':
			file = optarg;
			break;
		case 'A':
			from = optarg;
			break;
		case 'B':
			to = optarg;
			break;
		case 'N':
			mo.no_vcpu_labels = true;
			break;
		case 'C':
			if (cli_parse_long("--top-culprits", optarg, 0, 1000, "culprits per VM", &n))
				return CLI_USAGE;
			mo.top_culprits = (unsigned int)n;
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
		cli_err("unexpected argument '%s' (a recording goes with --file; see --help)", argv[optind]);
		return CLI_USAGE;
	}
	if ((from || to) && !file) {
		cli_err("--from/--to select a window of a recording: they need --file");
		return CLI_USAGE;
	}
	if (every > 0 && file) {
		cli_err("--every is for the live maps; a recording is exported once");
		return CLI_USAGE;
	}
	if (every > 0 && !path) {
		cli_err("--every needs -o FILE: the file is rewritten each period");
		return CLI_USAGE;
	}
	if (path && !strcmp(path, "-"))
		path = NULL;
	/* refuse an input as the output, or an unwritable one, before attaching or reading anything */
	if (path && file && outfile_refuse_input(path, &file, 1, &err)) {
		cli_err("export: -o %s", err.msg);
		return CLI_USAGE;
	}
	if (path && outfile_check(path, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (file)
		return export_file(file, from, to, &mo, &filter, fmt, path);
	return export_live(interval, every, verbose, &mo, &filter, fmt, path);
}
