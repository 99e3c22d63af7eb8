// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* vcpustat sync: map a guest's clock onto its host's (user/sync.h does the work). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "cli/cli.h"
#include "import/import.h"
#include "sync/sync.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s sync --pairs FILE [--json]\n"
		"       %s sync --host HOST --guest GUEST_TRACE [--vm VM] [--lenient] [--json]\n"
		"\n"
		"Synchronize a guest's clock to its host's from messages exchanged between them\n"
		"(the fully incremental convex hull algorithm), and print the transform\n"
		"host = a * guest + b, its error bounds and its quality.\n"
		"\n"
		"  -p, --pairs FILE   one message per line: sender,send_ts,receiver,recv_ts\n"
		"                     sender and receiver are host or guest, timestamps integer ns\n"
		"                     in each side's own clock; '#' comments and blank lines are fine.\n"
		"                     FILE '-' reads standard input.\n"
		"  -j, --json         machine-readable output (and errors as {\"error\": ...})\n"
		"      --host FILE    the host side: a trace (ftrace text, trace.dat, LTTng CTF)\n"
		"                     with the kvm_hypercall (nr 0x56435331) and kvm_entry events,\n"
		"                     or a recording (.sht: its /vms/<vm>/vcpus/<n>/sync intervals)\n"
		"      --guest FILE   the guest's trace with the vcpustat_sync markers (written by\n"
		"                     vcpustat-sync-agent to trace_marker)\n"
		"      --vm VM        only this VM's hypercalls (its name or pid; default: all)\n"
		"      --lenient      skip malformed trace lines instead of stopping\n"
		"  -h, --help         this help\n"
		"\n"
		"Quality: accurate (error bounds known), approximate (a line fits but the drift is\n"
		"bounded on one side only: exchange messages both ways over a longer time),\n"
		"incomplete (messages in one direction only), absent (no message), fail (no\n"
		"line fits every message: a clock jumped or two messages were mismatched; the\n"
		"last good transform is printed).\n"
		"Exit status: 0 once the file is read (whatever the quality), 1 if it cannot be\n"
		"read or a line is malformed, 2 for bad options. docs/sync.md explains it all.\n",
		cli_prog, cli_prog);
	cli_usage_exit_status(out);
}

/* A pairs file is small: read from a pipe or a device, at most this much. */
#define PAIRS_LIMIT ((size_t)256 << 20)

/* The whole file (or stdin) in memory, bounded; err names the file and where it stopped. */
static int read_all(const char *path, char **buf, size_t *len, struct vcpustat_error *err)
{
	int fd = strcmp(path, "-") ? open_input(path, false, err) : STDIN_FILENO;
	struct stat st;
	size_t limit = PAIRS_LIMIT;
	int e;

	if (fd < 0)
		return fd;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size + 1 > limit)
		limit = (size_t)st.st_size + 1; /* a regular file has an end */
	e = read_bounded(fd, strcmp(path, "-") ? path : "<stdin>", limit, buf, len, err);
	if (fd != STDIN_FILENO)
		close(fd);
	return e;
}

static const char *dir_sender(enum vcpustat_sync_dir d)
{
	return d == VCPUSTAT_SYNC_HOST_TO_GUEST ? "host" : "guest";
}

static const char *dir_receiver(enum vcpustat_sync_dir d)
{
	return d == VCPUSTAT_SYNC_HOST_TO_GUEST ? "guest" : "host";
}

static double duration_s(const struct vcpustat_sync_result *r)
{
	return (double)(r->host_last_ns - r->host_first_ns) / 1e9;
}

/* "+ 5.000000000 s" / "- 0.000001000 s" */
static void fmt_offset(char *dst, size_t size, long double ns)
{
	snprintf(dst, size, "%c %.9Lf s", ns < 0 ? '-' : '+', fabsl(ns) / 1e9L);
}

/* Matches from traces carry protocol keys; from a pairs file, line numbers. */
static bool from_traces;
/* From traces: the protocol's events found and how they matched. */
static struct import_sync_events trace_events;
static struct vcpustat_sync_protocol_stats trace_protocol;

/* The one sentence a person reads. */
static void summary(char *dst, size_t size, const struct vcpustat_sync_result *r)
{
	char off[64];
	int n;

	fmt_offset(off, sizeof(off), r->beta);
	if (r->quality == VCPUSTAT_SYNC_FAIL) {
		n = snprintf(dst, size,
			     "fail: no line fits every match; the match %s %llu (%s,%llu,%s,%llu) contradicts "
			     "the earlier ones (a clock jump or a mismatched message?). ",
			     from_traces ? "with key" : "on line", (unsigned long long)r->fail_match.key,
			     dir_sender(r->fail_match.dir),
			     (unsigned long long)r->fail_match.send_ns, dir_receiver(r->fail_match.dir),
			     (unsigned long long)r->fail_match.recv_ns);
		if (n < 0 || (size_t)n >= size)
			return;
		dst += n;
		size -= (size_t)n;
		if (r->transform_quality == VCPUSTAT_SYNC_ABSENT) {
			snprintf(dst, size, "No good transform before it.");
			return;
		}
		snprintf(dst, size, "Kept the last good one (%s, from %llu matches): guest clock = host × %.9Lf %s",
			 vcpustat_sync_quality_name(r->transform_quality),
			 (unsigned long long)(r->nr_host_to_guest + r->nr_guest_to_host), r->alpha, off);
		return;
	}
	switch (r->quality) {
	case VCPUSTAT_SYNC_ACCURATE:
		snprintf(dst, size, "guest clock = host × %.9Lf %s; accurate: error ≤ %.0Lf ns over %.1f s of host time",
			 r->alpha, off, ceill(r->transform.max_error_ns), duration_s(r));
		break;
	case VCPUSTAT_SYNC_APPROXIMATE:
		snprintf(dst, size,
			 "guest clock ≈ host × %.9Lf %s; approximate: the messages bound the drift on one side only, "
			 "so there is no error bound (exchange messages both ways over a longer time)",
			 r->alpha, off);
		break;
	case VCPUSTAT_SYNC_INCOMPLETE:
		snprintf(dst, size,
			 "incomplete: %s messages only; assuming no drift, guest clock %s host %s (the fastest "
			 "message taking no time); add %s messages for an estimate",
			 r->nr_host_to_guest ? "host->guest" : "guest->host", r->nr_host_to_guest ? "≤" : "≥", off,
			 r->nr_host_to_guest ? "guest->host" : "host->guest");
		break;
	default:
		snprintf(dst, size, "absent: no match, nothing to synchronize (identity transform)");
		break;
	}
}

static void print_line(const char *label, const struct vcpustat_sync_line *fit)
{
	struct vcpustat_sync_line inv = vcpustat_sync_line_inverse(fit);
	char off[64], ioff[64];

	fmt_offset(off, sizeof(off), vcpustat_sync_line_offset(fit));
	fmt_offset(ioff, sizeof(ioff), vcpustat_sync_line_offset(&inv));
	printf("  %-10s guest = host × %.12Lf %s   (host = guest × %.12Lf %s)\n", label, fit->slope, off, inv.slope,
	       ioff);
}

static void print_text(const char *source, const struct vcpustat_sync_result *r)
{
	const struct vcpustat_sync_transform *t = &r->transform;
	char off[64], line[1024];
	long double ref;

	printf("source:      %s\n", source);
	if (from_traces)
		printf("events:      guest %zu a, %zu d; host %zu hypercalls, %zu entries; %zu unmatched, %zu duplicate "
		       "keys, %zu reused keys dropped\n",
		       trace_events.na, trace_events.nd, trace_events.nb, trace_events.nc, trace_protocol.unmatched,
		       trace_protocol.duplicate_keys, trace_protocol.inconsistent_keys);
	printf("matches:     %llu host->guest, %llu guest->host used", (unsigned long long)r->nr_host_to_guest,
	       (unsigned long long)r->nr_guest_to_host);
	if (r->nr_matches != r->nr_host_to_guest + r->nr_guest_to_host)
		printf(" (of %llu)", (unsigned long long)r->nr_matches);
	printf("\n");
	if (r->nr_host_to_guest + r->nr_guest_to_host)
		printf("host time:   %.9f s .. %.9f s (%.1f s)\n", r->host_first_ns / 1e9, r->host_last_ns / 1e9,
		       duration_s(r));
	printf("quality:     %s", vcpustat_sync_quality_name(r->quality));
	if (r->quality == VCPUSTAT_SYNC_FAIL)
		printf(" (transform below: the last good one, %s)", vcpustat_sync_quality_name(r->transform_quality));
	printf("\n");
	fmt_offset(off, sizeof(off), vcpustat_sync_line_offset(&t->mean));
	printf("transform:   host = guest × %.12Lf %s   (a, b)\n", t->mean.slope, off);
	ref = roundl(t->mean.x_ref);
	printf("             host = %.0Lf + %.12Lf × (guest - %.0Lf)   (precise form)\n",
	       vcpustat_sync_line_at(&t->mean, ref), t->mean.slope, ref);
	fmt_offset(off, sizeof(off), r->beta);
	printf("guest line:  guest = host × %.12Lf %s   (alpha, beta)\n", r->alpha, off);
	if (r->has_min_slope || r->has_max_slope) {
		printf("bounds:      extreme feasible lines:\n");
		if (r->has_min_slope)
			print_line("min-slope", &r->min_slope);
		if (r->has_max_slope)
			print_line("max-slope", &r->max_slope);
	}
	if (isfinite(t->max_error_ns))
		printf("error:       ≤ %.0Lf ns over the measured range (a guaranteed bound)\n", ceill(t->max_error_ns));
	else
		printf("error:       unbounded\n");
	summary(line, sizeof(line), r);
	printf("%s\n", line);
}

/* JSON has no infinity or NaN: those become null (a degenerate transform). */
static json_t *json_num(long double v)
{
	return isfinite(v) ? json_real((double)v) : json_null();
}

static json_t *json_ns(long double v)
{
	return isfinite(v) && fabsl(v) < 9.2e18L ? json_integer((json_int_t)roundl(v)) : json_null();
}

static json_t *json_line(const struct vcpustat_sync_line *fit)
{
	struct vcpustat_sync_line inv = vcpustat_sync_line_inverse(fit);

	return json_pack("{s:o, s:o, s:o, s:o}", "alpha", json_num(fit->slope), "beta",
			 json_num(vcpustat_sync_line_offset(fit)), "a", json_num(inv.slope), "b",
			 json_num(vcpustat_sync_line_offset(&inv)));
}

static void print_json(const char *source, const struct vcpustat_sync_result *r)
{
	const struct vcpustat_sync_transform *t = &r->transform;
	long double ref_guest = roundl(t->mean.x_ref);
	char line[1024];
	json_t *o, *bounds;

	summary(line, sizeof(line), r);
	bounds = json_pack("{s:o, s:o, s:o}", "max_error_ns", json_num(t->max_error_ns), "min_slope",
			   r->has_min_slope ? json_line(&r->min_slope) : json_null(), "max_slope",
			   r->has_max_slope ? json_line(&r->max_slope) : json_null());
	o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I, s:I}, s:I, s:I, s:f, s:s}",
		      "source", source, "quality", vcpustat_sync_quality_name(r->quality), "transform_quality",
		      vcpustat_sync_quality_name(r->transform_quality), "a", json_num(t->mean.slope), "b",
		      json_num(vcpustat_sync_line_offset(&t->mean)), "ref_guest_ns", json_ns(ref_guest), "ref_host_ns",
		      json_ns(vcpustat_sync_line_at(&t->mean, ref_guest)), "alpha", json_num(r->alpha), "beta",
		      json_num(r->beta), "bounds", bounds, "matches", "host_to_guest", (json_int_t)r->nr_host_to_guest,
		      "guest_to_host", (json_int_t)r->nr_guest_to_host, "total", (json_int_t)r->nr_matches,
		      "host_first_ns", (json_int_t)r->host_first_ns, "host_last_ns", (json_int_t)r->host_last_ns,
		      "duration_s", duration_s(r), "summary", line);
	if (o && r->quality == VCPUSTAT_SYNC_FAIL)
		json_object_set_new(o, "fail",
				    json_pack("{s:I, s:I, s:s, s:I, s:s, s:I}", from_traces ? "key" : "line",
					      (json_int_t)r->fail_match.key,
					      "index", (json_int_t)r->fail_index, "sender", dir_sender(r->fail_match.dir),
					      "send_ts", (json_int_t)r->fail_match.send_ns, "receiver",
					      dir_receiver(r->fail_match.dir), "recv_ts", (json_int_t)r->fail_match.recv_ns));
	if (o && from_traces)
		json_object_set_new(o, "events",
				    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "a", (json_int_t)trace_events.na, "d",
					      (json_int_t)trace_events.nd, "b", (json_int_t)trace_events.nb, "c",
					      (json_int_t)trace_events.nc, "unmatched", (json_int_t)trace_protocol.unmatched,
					      "duplicate_keys", (json_int_t)trace_protocol.duplicate_keys, "reused_keys",
					      (json_int_t)trace_protocol.inconsistent_keys));
	if (!o) {
		cli_err("cannot build the JSON output");
		return;
	}
	cli_json_print(o, CLI_JSON_DOC);
}

/* --host H --guest G: the protocol's events from traces (or a recording), matched and solved. */
static int sync_traces(const char *host, const char *guest, const char *vm, bool lenient)
{
	struct import_opts o = { .trace.lenient = lenient };
	struct vcpustat_error err = { 0 };
	struct vcpustat_sync_result r;
	char source[1024];
	int ret;

	from_traces = true;
	ret = import_sync(host, guest, vm, &o, &r, &trace_protocol, &trace_events, &err);
	if (ret) {
		cli_err("%s", err.msg);
		import_sync_events_free(&trace_events);
		return CLI_FAIL;
	}
	snprintf(source, sizeof(source), "%s + %s%s%s", host, guest, vm ? ", VM " : "", vm ? vm : "");
	if (!trace_events.na && !trace_events.nd)
		cli_warn("sync: %s: no vcpustat_sync markers: was vcpustat-sync-agent running in the guest?", guest);
	if (!trace_events.nb)
		cli_warn("sync: %s: no kvm_hypercall with nr 0x56435331%s%s: trace kvm:kvm_hypercall and kvm:kvm_entry",
			 host, vm ? " for VM " : "", vm ? vm : "");
	if (r.transform_quality != VCPUSTAT_SYNC_ABSENT && !(r.alpha > 0 && isfinite(r.alpha)))
		cli_warn("sync: the best fit has the guest clock standing still or running backwards (slope %Lg): "
			 "the matches are probably wrong",
			 r.alpha);
	if (cli_json)
		print_json(source, &r);
	else
		print_text(source, &r);
	import_sync_events_free(&trace_events);
	return CLI_OK;
}

int cmd_sync(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pairs", required_argument, NULL, 'p' }, { "json", no_argument, NULL, 'j' },
		{ "host", required_argument, NULL, 'H' },  { "guest", required_argument, NULL, 'G' },
		{ "vm", required_argument, NULL, 'V' },	   { "lenient", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },	   { 0 },
	};
	const char *pairs = NULL, *host = NULL, *guest = NULL, *vm = NULL, *source;
	struct vcpustat_sync_match *m = NULL;
	struct vcpustat_sync_result r;
	struct vcpustat_error err = { 0 };
	size_t len = 0, n = 0;
	bool lenient = false;
	char *buf = NULL;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': pairs = optarg; break;
		case 'j': cli_json = true; break;
		case 'H': host = optarg; break;
		case 'G': guest = optarg; break;
		case 'V': vm = optarg; break;
		case 'l': lenient = true; break;
		case 'h': usage(stdout); return CLI_OK;
		default:
			fprintf(stderr, "see `%s sync --help`\n", cli_prog);
			return CLI_USAGE;
		}
	}
	if (optind < argc) {
		cli_err("sync: unexpected argument '%s' (see `%s sync --help`)", argv[optind], cli_prog);
		return CLI_USAGE;
	}
	if (host || guest) {
		if (!host || !guest || pairs) {
			cli_err("sync: --host and --guest go together, without --pairs (see `%s sync --help`)", cli_prog);
			return CLI_USAGE;
		}
		return sync_traces(host, guest, vm, lenient);
	}
	if (vm || lenient) {
		cli_err("sync: --vm and --lenient are for --host/--guest traces");
		return CLI_USAGE;
	}
	if (!pairs) {
		cli_err("sync: which matches? give --pairs FILE or --host TRACE --guest TRACE (see `%s sync --help`)",
			cli_prog);
		return CLI_USAGE;
	}
	source = strcmp(pairs, "-") ? pairs : "<stdin>";
	ret = read_all(pairs, &buf, &len, &err);
	if (ret) {
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
	if (r.transform_quality != VCPUSTAT_SYNC_ABSENT && !(r.alpha > 0 && isfinite(r.alpha)))
		cli_warn("sync: %s: the best fit has the guest clock standing still or running backwards (slope %Lg): "
			 "the matches are probably wrong",
			 source, r.alpha);
	if (cli_json)
		print_json(source, &r);
	else
		print_text(source, &r);
	return CLI_OK;
}
