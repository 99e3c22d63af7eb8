// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat serve: a Prometheus exporter. Attaches, then serves /metrics
 * (Prometheus text or OpenMetrics) and an HTML page at / over HTTP (or
 * HTTPS with basic auth: --web.config.file, serve/webconfig.c), each
 * scrape computed from a fresh read of the maps; optionally as an
 * unprivileged user that keeps only CAP_BPF (live/serve.c).
 */
#include <errno.h>
#include <stdio.h>
#include "cli/cli.h"
#include "live/live.h"
#include "export/export.h"

static const char synopsis[] =
	"[--listen ADDR:PORT] [--user NAME] [--web.config.file FILE]\n"
	"                [--no-vcpu-labels] [--top-culprits N] [--vm NAME|PID]... [--cache-ms MS]\n"
	"                [--refresh SEC] [--address-spaces] [-v]";

static const char about[] =
	"A Prometheus exporter: attaches to the scheduler and KVM tracepoints, then serves\n"
	"the metrics of docs/metrics.md at http://ADDR:PORT/metrics (Prometheus text 0.0.4,\n"
	"or OpenMetrics when the scraper asks for application/openmetrics-text) and a\n"
	"status page at /. Counters count from the start and only grow.\n";

static const char notes[] = "Example scrape config, a web config file, a systemd unit and PromQL for capacity\n"
			    "planning: docs/export.md.\n";

int cmd_serve(int argc, char **argv)
{
	enum { OPT_WEB = 256, OPT_NO_LABELS, OPT_TOP, OPT_VM, OPT_CACHE, OPT_REFRESH, OPT_AS };
	struct serve_opts so = { .listen = HTTPD_DEFAULT_LISTEN, .cache_ms = 250, .refresh = 10 };
	struct metrics_opts mo = { 0 };
	struct summary_filter filter = { 0 };
	struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE };
	struct vcpustat_error err = { 0 };
	long top = METRICS_TOP_CULPRITS, cache_ms = 250;
	const char *vm_filter[64];
	bool verbose = false;
	const struct cli_option options[] = {
		{ "listen", 'l', "ADDR:PORT", "where to listen (default " HTTPD_DEFAULT_LISTEN "; :PORT = every interface)",
		  CLI_STRING, &so.listen },
		{ "user", 'u', "NAME", "after attaching, run as NAME keeping only CAP_BPF", CLI_STRING, &so.user },
		{ "web.config.file", OPT_WEB, "FILE", "TLS and basic auth, in the format of Prometheus's exporter-toolkit\n"
						      "(tls_server_config: cert_file, key_file; basic_auth_users: bcrypt)",
		  CLI_STRING, &so.web_file },
		{ "no-vcpu-labels", OPT_NO_LABELS, NULL, "one series per VM instead of per vCPU (big hosts)", CLI_FLAG,
		  &mo.no_vcpu_labels },
		{ "top-culprits", OPT_TOP, "N", "culprits named per VM, the rest as \"other\" (default 5)", CLI_NUMBER,
		  &top, 0, 1000, "culprits per VM" },
		{ "vm", OPT_VM, "NAME|PID", "only this VM (repeatable)" },
		CLI_FILTER_CGROUP,
		{ "cache-ms", OPT_CACHE, "MS", "scrapes within MS of the last read share it (default 250)", CLI_NUMBER,
		  &cache_ms, 0, 60000, "milliseconds" },
		{ "refresh", OPT_REFRESH, "SEC", "read the maps at least every SEC seconds between scrapes, to\n"
						 "collect exited vCPUs and VMs (default 10)", CLI_SECONDS, &so.refresh,
		  100000000, 3600000000000 },
		{ "address-spaces", OPT_AS, NULL, "also the guests' address spaces (exits and guest time by CR3:\n"
						  "a second program on kvm_exit)", CLI_FLAG, &opts.address_spaces },
		{ "verbose", 'v', NULL, "libbpf's log on stderr", CLI_FLAG, &verbose },
		{ "help", 'h', NULL, "this help" },
		{ NULL },
	};
	const struct cli_command cmd = { "serve", synopsis, about, options, notes };
	struct vcpustat *vs = NULL;
	struct serve_live sl = { 0 }; /* serve_live_stop() takes it so, as after a failed start */
	struct cli_args a;
	char where[512];
	int c, ret;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == OPT_VM && cli_add_vm(&filter, vm_filter, sizeof(vm_filter) / sizeof(vm_filter[0]), a.arg))
			return CLI_USAGE;
		if (cli_filter_option(&a, c, NULL, &filter) == CLI_USAGE)
			return CLI_USAGE;
	}
	if (c < 0 || cli_no_more_args(&a))
		return c < 0 ? cli_args_exit(c) : CLI_USAGE;
	mo.top_culprits = (unsigned int)top;
	so.cache_ms = (unsigned int)cache_ms;
	ret = serve_prepare(&sl.s, &so, &err);
	if (ret) {
		cli_err("%s", err.msg);
		return ret == -EINVAL ? CLI_USAGE : CLI_FAIL;
	}
	if (sl.s.web.warning)
		cli_warn("%s", sl.s.web.warning);
	if (serve_auth_in_clear(&sl.s))
		cli_warn("%s: basic auth without tls_server_config: passwords cross the network in clear", so.web_file);
	ret = cli_open_live(&vs, &opts, verbose, false);
	if (!ret && serve_live_start(&sl, vs, &mo, &filter, &err)) {
		cli_err("%s", err.msg);
		ret = CLI_FAIL;
	}
	if (!ret) {
		cli_catch_stop(false);
		serve_describe(&sl.s, where, sizeof(where));
		fprintf(stderr, "%s: serving %s\n", cli_prog, where);
		serve_run(&sl.s, &cli_stop, cli_warn);
	}
	serve_live_stop(&sl);
	vcpustat_close(vs);
	return ret;
}
