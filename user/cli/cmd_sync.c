// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat sync: map a guest's clock onto its host's. The matches come from a
 * pairs file (vcpustat_sync_read_pairs, vcpustat_sync_parse_pairs) or from
 * traces (import_sync); vcpustat_sync_solve fits the transform and
 * vcpustat_sync_print/json (sync/sync_report.c) show it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "import/import.h"
#include "sync/sync.h"

static const char synopsis[] =
	"--pairs FILE [--json]\n"
	"       vcpustat sync --host HOST --guest GUEST_TRACE [--vm VM] [--lenient] [--json]";

static const char about[] =
	"Synchronize a guest's clock to its host's from messages exchanged between them\n(the fully "
	"incremental convex hull algorithm), and print the transform\nhost = a * guest + b, its error bounds "
	"and its quality.\n";

static const char notes[] =
	"Quality: accurate (error bounds known), approximate (a line fits but the drift is\nbounded on one "
	"side only: exchange messages both ways over a longer time),\nincomplete (messages in one direction "
	"only), absent (no message), fail (no\nline fits every message: a clock jumped or two messages were "
	"mismatched; the\nlast good transform is printed).\nExit status: 0 once the file is read (whatever the "
	"quality), 1 if it cannot be\nread or a line is malformed, 2 for bad options. docs/sync.md explains it "
	"all.\n";

/* Warn about a fit that cannot be right (naming a pairs file), then print it. */
static int show(const struct vcpustat_sync_source *src, const struct vcpustat_sync_result *r)
{
	if (r->transform_quality != VCPUSTAT_SYNC_ABSENT && !(r->alpha > 0 && isfinite(r->alpha)))
		cli_warn("sync: %s%sthe best fit has the guest clock standing still or running backwards (slope %Lg): "
			 "the matches are probably wrong",
			 src->protocol ? "" : src->name, src->protocol ? "" : ": ", r->alpha);
	if (!cli_json)
		vcpustat_sync_print(stdout, src, r);
	else if (cli_json_print(vcpustat_sync_json(src, r), CLI_JSON_DOC) == -ENOMEM)
		cli_err("cannot build the JSON output");
	return CLI_OK;
}

/* --host H --guest G: the protocol's events from traces (or a recording), matched and solved. */
static int sync_traces(const char *host, const char *guest, const char *vm, bool lenient)
{
	struct import_opts o = { .trace.lenient = lenient };
	struct vcpustat_sync_protocol_stats protocol;
	struct vcpustat_error err = { 0 };
	struct import_sync_events ev = { 0 };
	struct vcpustat_sync_result r;
	char name[1024];

	if (import_sync(host, guest, vm, &o, &r, &protocol, &ev, &err)) {
		cli_err("%s", err.msg);
		import_sync_events_free(&ev);
		return CLI_FAIL;
	}
	snprintf(name, sizeof(name), "%s + %s%s%s", host, guest, vm ? ", VM " : "", vm ? vm : "");
	if (!ev.na && !ev.nd)
		cli_warn("sync: %s: no vcpustat_sync markers: was vcpustat-sync-agent running in the guest?", guest);
	if (!ev.nb)
		cli_warn("sync: %s: no kvm_hypercall with nr 0x56435331%s%s: trace kvm:kvm_hypercall and kvm:kvm_entry",
			 host, vm ? " for VM " : "", vm ? vm : "");
	show(&(struct vcpustat_sync_source){ name, &protocol, ev.na, ev.nb, ev.nc, ev.nd }, &r);
	import_sync_events_free(&ev);
	return CLI_OK;
}

int cmd_sync(int argc, char **argv)
{
	const char *pairs = NULL, *host = NULL, *guest = NULL, *vm = NULL, *source;
	bool lenient = false;
	const struct cli_option options[] = {
		{ "pairs", 'p', "FILE",
		  "one message per line: sender,send_ts,receiver,recv_ts\nsender and receiver are host or guest, "
		  "timestamps integer ns\nin each side's own clock; '#' comments and blank lines are fine.\n"
		  "FILE '-' reads standard input.",
		  CLI_STRING, &pairs },
		{ "json", 'j', NULL, "machine-readable output (and errors as {\"error\": ...})", CLI_FLAG, &cli_json },
		{ "host", 256, "FILE",
		  "the host side: a trace (ftrace text, trace.dat, LTTng CTF)\nwith the kvm_hypercall (nr 0x56435331) "
		  "and kvm_entry events,\nor a recording (.sht: its /vms/<vm>/vcpus/<n>/sync intervals)",
		  CLI_STRING, &host },
		{ "guest", 257, "FILE",
		  "the guest's trace with the vcpustat_sync markers (written by\nvcpustat-sync-agent to trace_marker)",
		  CLI_STRING, &guest },
		{ "vm", 258, "VM", "only this VM's hypercalls (its name or pid; default: all)", CLI_STRING, &vm },
		{ "lenient", 259, NULL, "skip malformed trace lines instead of stopping", CLI_FLAG, &lenient },
		{ "help", 'h', NULL, "this help" },
		{ NULL },
	};
	const struct cli_command cmd = { "sync", synopsis, about, options, notes };
	struct vcpustat_sync_match *m = NULL;
	struct vcpustat_sync_result r;
	struct vcpustat_error err = { 0 };
	size_t len = 0, n = 0;
	char *buf = NULL;
	struct cli_args a;
	int c, ret;

	if ((c = cli_parse(&a, &cmd, argc, argv)) < 0)
		return cli_args_exit(c);
	if (a.pos < argc)
		return cli_usage_error("sync: unexpected argument '%s' (see `%s sync --help`)", argv[a.pos], cli_prog);
	if (host || guest) {
		if (!host || !guest || pairs)
			return cli_usage_error("sync: --host and --guest go together, without --pairs (see `%s sync --help`)",
					       cli_prog);
		return sync_traces(host, guest, vm, lenient);
	}
	if (vm || lenient)
		return cli_usage_error("sync: --vm and --lenient are for --host/--guest traces");
	if (!pairs)
		return cli_usage_error("sync: which matches? give --pairs FILE or --host TRACE --guest TRACE (see `%s sync --help`)",
				       cli_prog);
	source = strcmp(pairs, "-") ? pairs : "<stdin>";
	if (vcpustat_sync_read_pairs(pairs, &buf, &len, &err)) {
		cli_err("sync: %s", err.msg);
		return CLI_FAIL;
	}
	ret = vcpustat_sync_parse_pairs(buf, len, source, &m, &n, &err);
	free(buf);
	if (!ret)
		ret = vcpustat_sync_solve(m, n, &r, &err);
	free(m);
	if (ret) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	return show(&(struct vcpustat_sync_source){ .name = source }, &r);
}
