// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat serve: a Prometheus exporter. Attaches, then serves /metrics
 * (Prometheus text or OpenMetrics) and an HTML page at / over HTTP (or
 * HTTPS with basic auth: --web.config.file, live/webconfig.c), each
 * scrape computed from a fresh read of the maps. Optionally drops to an
 * unprivileged user that keeps only CAP_BPF.
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
#include "live/live.h"
#include "export/export.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s serve [--listen ADDR:PORT] [--user NAME] [--web.config.file FILE]\n"
		"                [--no-vcpu-labels] [--top-culprits N] [--vm NAME|PID]... [--cache-ms MS]\n"
		"                [--refresh SEC] [-v]\n"
		"\n"
		"A Prometheus exporter: attaches to the scheduler and KVM tracepoints, then serves\n"
		"the metrics of docs/metrics.md at http://ADDR:PORT/metrics (Prometheus text 0.0.4,\n"
		"or OpenMetrics when the scraper asks for application/openmetrics-text) and a\n"
		"status page at /. Counters count from the start and only grow.\n"
		"\n"
		"  -l, --listen ADDR:PORT  where to listen (default %s; :PORT = every interface)\n"
		"  -u, --user NAME         after attaching, run as NAME keeping only CAP_BPF\n"
		"      --web.config.file FILE\n"
		"                          TLS and basic auth, in the format of Prometheus's exporter-toolkit\n"
		"                          (tls_server_config: cert_file, key_file; basic_auth_users: bcrypt)\n"
		"      --no-vcpu-labels    one series per VM instead of per vCPU (big hosts)\n"
		"      --top-culprits N    culprits named per VM, the rest as \"other\" (default %d)\n"
		"      --vm NAME|PID       only this VM (repeatable)\n"
		"      --cache-ms MS       scrapes within MS of the last read share it (default 250)\n"
		"      --refresh SEC       read the maps at least every SEC seconds between scrapes, to\n"
		"                          collect exited vCPUs and VMs (default 10)\n"
		"  -v, --verbose           libbpf's log on stderr\n"
		"  -h, --help              this help\n"
		"\n"
		"Example scrape config, a web config file, a systemd unit and PromQL for capacity\n"
		"planning: docs/export.md.\n",
		cli_prog, HTTPD_DEFAULT_LISTEN, METRICS_TOP_CULPRITS);
	cli_usage_exit_status(f);
}

int cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, 'l'},	{"user", required_argument, NULL, 'u'},
	    {"no-vcpu-labels", no_argument, NULL, 'N'}, {"top-culprits", required_argument, NULL, 'C'},
	    {"vm", required_argument, NULL, 'V'},	{"cache-ms", required_argument, NULL, 'M'},
	    {"refresh", required_argument, NULL, 'R'},	{"verbose", no_argument, NULL, 'v'},
	    {"web.config.file", required_argument, NULL, 'W'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct vcpustat_options opts = {.record_level = VCPUSTAT_LEVEL_NONE};
	struct metrics_opts mo = {.top_culprits = METRICS_TOP_CULPRITS};
	struct httpd_opts ho = {.cache_ms = 250};
	struct summary_filter filter = {0};
	struct vcpustat_error err = {0};
	const char *listen_addr = HTTPD_DEFAULT_LISTEN, *user = NULL, *vm_filter[64], *web_file = NULL;
	struct web_config web = {0};
	struct metrics_live live;
	struct httpd *httpd = NULL;
	struct vcpustat *vs = NULL;
	double refresh = 10;
	bool verbose = false;
	int c, fd = -1, ret;
	long n;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l:u:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen_addr = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'W':
			web_file = optarg;
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
		case 'M':
			n = strtol(optarg, &end, 10);
			if (end == optarg || *end || n < 0 || n > 60000) {
				cli_err("--cache-ms %s: milliseconds, 0 to 60000", optarg);
				return CLI_USAGE;
			}
			ho.cache_ms = (unsigned int)n;
			break;
		case 'R':
			if (cli_parse_seconds("--refresh", optarg, 0.1, 3600, &refresh))
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
		cli_err("unexpected argument '%s' (see --help)", argv[optind]);
		return CLI_USAGE;
	}
	if (user && geteuid() != 0) {
		cli_err("--user %s: only root can switch users (start as root, or drop --user)", user);
		return CLI_USAGE;
	}
	if (user && privdrop_check_user(user, &err)) {
		cli_err("%s", err.msg);
		return CLI_USAGE;
	}
	/* read while still root (the key can be root's alone), checked before anything is loaded */
	if (web_file) {
		if (web_config_load(&web, web_file, &err)) {
			cli_err("%s", err.msg);
			return CLI_USAGE;
		}
		ho.web = &web;
		if (web.nr_users && !web.cert_pem)
			cli_warn("%s: basic auth without tls_server_config: passwords cross the network in clear",
				 web_file);
	}
	/* the port first: a port in use is refused before anything is loaded */
	if (httpd_listen(listen_addr, &fd, &err)) {
		cli_err("%s", err.msg);
		web_config_free(&web);
		return err.code == -EINVAL ? CLI_USAGE : CLI_FAIL;
	}
	ret = cli_open_live(&vs, &opts, verbose, false);
	if (ret) {
		close(fd);
		web_config_free(&web);
		return ret;
	}
	if (metrics_live_init(&live, vs, &mo, &filter)) {
		cli_err("out of memory");
		close(fd);
		vcpustat_close(vs);
		web_config_free(&web);
		return CLI_FAIL;
	}
	ret = CLI_FAIL;
	/* before any thread starts: capabilities are per thread */
	if (user && privdrop_to_user(user, &err)) {
		cli_err("%s", err.msg);
		close(fd);
		goto out;
	}
	ho.user = user;
	if (httpd_start(&httpd, fd, &live, &ho, &err)) {
		cli_err("%s", err.msg);
		goto out;
	}
	cli_catch_stop(false);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "%s: serving %s://%s/metrics%s%s%s\n", cli_prog, web.cert_pem ? "https" : "http",
		httpd_address(httpd), web.nr_users ? " (basic auth)" : "", user ? " as user " : "", user ? user : "");
	while (!cli_stop) {
		struct timespec ts = {.tv_sec = (time_t)refresh,
				      .tv_nsec = (long)((refresh - (double)(time_t)refresh) * 1e9)};
		int e;

		nanosleep(&ts, NULL); /* a signal ends it early */
		if (cli_stop)
			break;
		e = httpd_refresh(httpd);
		if (e)
			cli_warn("cannot read the BPF maps: %s", strerror(-e));
	}
	ret = CLI_OK;
out:
	httpd_stop(httpd);
	metrics_live_free(&live);
	vcpustat_close(vs);
	web_config_free(&web);
	return ret;
}
