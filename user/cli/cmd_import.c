// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* vcpustat import: host (and guest) traces -> a state history file (user/import.h does the work). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli/cli.h"
#include "import/import.h"

#define MAX_ITEMS 64

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s import --host HOST_TRACE [--guest VM=GUEST_TRACE]... -o FILE.sht [OPTIONS]\n"
		"\n"
		"Replay a host trace through the same state machine and handler the kernel runs\n"
		"(every vCPU's states, exits, pCPUs; every thread on every CPU) into a state\n"
		"history file, as `vcpustat record --level full` would have written it live.\n"
		"With guest traces, synchronize each guest's clock to the host's (the\n"
		"vcpustat_sync markers and hypercalls) and add what each guest thread really\n"
		"experienced: running, or virt_preempted (its vCPU was not running guest code).\n"
		"\n"
		"Traces: ftrace text (/sys/kernel/tracing/trace, trace_pipe, `trace-cmd report`),\n"
		"trace-cmd's binary trace.dat, or an LTTng kernel trace (CTF: its directory).\n"
		"docs/import.md lists the events.\n"
		"\n"
		"  --host FILE            the host's trace ('-': standard input, ftrace text)\n"
		"  --guest VM=FILE        the trace of VM's guest (repeatable); VM is its name\n"
		"                         (pid<N>, a --vm-name, a --vm) or its VMM's pid\n"
		"  -o, --output FILE      the .sht file to write\n"
		"  --vm-name PID=NAME     name the VM whose VMM process is PID (host traces do not\n"
		"                         carry QEMU's -name); default pid<PID>\n"
		"  --vm NAME=TID[,TID..]  these threads are VM NAME's vCPUs (traces without the\n"
		"                         tgid column: otherwise `CPU n/KVM` threads are grouped\n"
		"                         from each `CPU 0/KVM` on, and named vm-tid<TID>)\n"
		"  --lenient              skip malformed lines (counted and reported) instead of\n"
		"                         stopping at the first one\n"
		"  --isa vmx|svm          for kvm_exit reasons printed as numbers (default: from\n"
		"                         the reason names, else vmx)\n"
		"  --cpus N               host CPUs (default 1024)\n"
		"  --meta KEY=VALUE       store this in the file's metadata (repeatable): host,\n"
		"                         workload (what ran), recorded (when), ...\n"
		"  -j, --json             the end-of-run report as JSON on stdout\n"
		"  -q, --quiet            no report (warnings still go to stderr)\n"
		"\n"
		"Exit status: 0 written, 1 an input or output error (a malformed line names its\n"
		"file and line), 2 bad options.\n",
		cli_prog);
	cli_usage_exit_status(f);
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || end == s || *end || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static const char *report_quality_hint(const struct import_guest_result *g)
{
	switch (g->sync.quality) {
	case VCPUSTAT_SYNC_APPROXIMATE:
		return "approximate: the drift is bounded on one side only; the merge has no error bound";
	case VCPUSTAT_SYNC_INCOMPLETE:
		return "incomplete: sync messages in one direction only; no drift assumed, no error bound";
	case VCPUSTAT_SYNC_FAIL:
		return "fail: the sync messages contradict each other after a point; the last good transform was used";
	default:
		return NULL;
	}
}

static void warnings(const struct import_opts *o, const struct import_result *res)
{
	const struct trace_stats *h = &res->host;

	for (unsigned int i = 0; i < h->nmessages; i++)
		cli_warn("skipped: %s", h->messages[i]);
	if (h->malformed > h->nmessages)
		cli_warn("%s: %llu malformed lines skipped in all (the first %u shown)", o->host,
			 (unsigned long long)h->malformed, h->nmessages);
	if (h->lost)
		cli_warn("%s: the tracer lost %llu events (%llu LOST lines): the timeline has holes there", o->host,
			 (unsigned long long)h->lost, (unsigned long long)h->lost_lines);
	if (res->late)
		cli_warn("%s: %llu records came more than 20 ms out of time order and were clamped", o->host,
			 (unsigned long long)res->late);
	if (h->unknown_reasons)
		cli_warn("%s: %llu kvm_exit lines had exit reasons vcpustat does not know (recorded as VMX_65535)",
			 o->host, (unsigned long long)h->unknown_reasons);
	if (res->orphan_vcpus)
		cli_warn("%s: %llu vCPU threads with no known process, each made its own VM: trace with "
			 "options/record-tgid, or say --vm NAME=TID,...",
			 o->host, (unsigned long long)res->orphan_vcpus);
	for (size_t i = 0; i < res->nguests; i++) {
		const struct import_guest_result *g = &res->guests[i];
		const char *hint = report_quality_hint(g);

		for (unsigned int m = 0; m < g->trace.nmessages; m++)
			cli_warn("skipped: %s", g->trace.messages[m]);
		if (hint)
			cli_warn("%s (VM %s): sync %s", o->guests[i].path, g->vm, hint);
		if (!g->host_mode_known)
			cli_warn("%s (VM %s): the host trace shows no kvm_entry/kvm_exit for this VM: a vCPU in the "
				 "hypervisor counts as running guest code (virt_preempted = preempted, waiting or "
				 "blocked on the host)",
				 o->guests[i].path, g->vm);
		if (g->ml.after_end)
			cli_warn("%s (VM %s): %llu guest events after the end of the host trace were not used",
				 o->guests[i].path, g->vm, (unsigned long long)g->ml.after_end);
	}
}

static json_t *trace_json(const char *path, const struct trace_stats *t)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "path", path, "lines",
			      (json_int_t)t->lines, "events", (json_int_t)t->events, "skipped", (json_int_t)t->skipped,
			      "malformed", (json_int_t)t->malformed, "lost", (json_int_t)t->lost, "out_of_order",
			      (json_int_t)t->out_of_order, "max_backstep_ns", (json_int_t)t->max_backstep_ns,
			      "first_ns", (json_int_t)t->first_ns, "last_ns", (json_int_t)t->last_ns);
	json_t *msgs = json_array();

	for (unsigned int i = 0; i < t->nmessages; i++)
		json_array_append_new(msgs, json_string(t->messages[i]));
	json_object_set_new(o, "messages", msgs);
	return o;
}

static json_t *num_or_null(long double v)
{
	return isfinite(v) ? json_real((double)v) : json_null();
}

static void report_json(const struct import_opts *o, const struct import_result *res)
{
	json_t *doc = json_pack("{s:s, s:o, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "output", o->out, "host",
				trace_json(o->host, &res->host), "two_passes", res->two_passes, "records",
				(json_int_t)res->records, "intervals", (json_int_t)res->intervals, "late",
				(json_int_t)res->late, "vms", (json_int_t)res->vms, "vcpus", (json_int_t)res->vcpus,
				"start_ns", (json_int_t)res->start_ns, "end_ns", (json_int_t)res->end_ns);
	json_t *guests = json_array();

	for (size_t i = 0; i < res->nguests; i++) {
		const struct import_guest_result *g = &res->guests[i];
		const struct vcpustat_sync_transform *t = &g->sync.transform;

		json_array_append_new(
			guests,
			json_pack("{s:s, s:I, s:o, s:{s:s, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}, s:I, s:I, s:I, "
				  "s:b}",
				  "vm", g->vm, "pid", (json_int_t)g->tgid, "trace", trace_json(o->guests[i].path, &g->trace),
				  "sync", "quality", vcpustat_sync_quality_name(g->sync.quality), "a",
				  num_or_null(t->mean.slope), "b", num_or_null(vcpustat_sync_line_offset(&t->mean)),
				  "max_error_ns", num_or_null(t->max_error_ns), "a_markers", (json_int_t)g->na, "d_markers",
				  (json_int_t)g->nd, "hypercalls", (json_int_t)g->nb, "entries", (json_int_t)g->nc,
				  "guest_to_host", (json_int_t)g->protocol.guest_to_host, "host_to_guest",
				  (json_int_t)g->protocol.host_to_guest, "events", (json_int_t)g->ml.applied, "after_end",
				  (json_int_t)g->ml.after_end, "threads", (json_int_t)g->ml.threads, "host_mode_known",
				  g->host_mode_known));
	}
	json_object_set_new(doc, "guests", guests);
	cli_json_print(doc, CLI_JSON_DOC);
}

static void report_text(const struct import_opts *o, const struct import_result *res)
{
	const struct trace_stats *h = &res->host;

	fprintf(stderr,
		"%s: %s: %llu lines, %llu events used, %llu skipped (events not used), %llu malformed, "
		"%llu lost by the tracer, %llu out of order (by up to %.3f ms)%s\n",
		cli_prog, o->host, (unsigned long long)h->lines, (unsigned long long)h->events,
		(unsigned long long)h->skipped, (unsigned long long)h->malformed, (unsigned long long)h->lost,
		(unsigned long long)h->out_of_order, h->max_backstep_ns / 1e6, res->two_passes ? " (read twice)" : "");
	for (size_t i = 0; i < res->nguests; i++) {
		const struct import_guest_result *g = &res->guests[i];
		const struct vcpustat_sync_transform *t = &g->sync.transform;

		fprintf(stderr,
			"%s: %s -> VM %s: %llu events used, %llu threads; sync %s from %zu+%zu matches "
			"(host = guest × %.12Lf %+.9Lf s, error ≤ %.0Lf ns)\n",
			cli_prog, o->guests[i].path, g->vm, (unsigned long long)g->ml.applied,
			(unsigned long long)g->ml.threads, vcpustat_sync_quality_name(g->sync.quality),
			g->protocol.guest_to_host, g->protocol.host_to_guest, t->mean.slope,
			vcpustat_sync_line_offset(&t->mean) / 1e9L, t->max_error_ns);
	}
	fprintf(stderr, "%s: %llu VMs, %llu vCPUs -> %llu records -> %llu intervals in %s\n", cli_prog,
		(unsigned long long)res->vms, (unsigned long long)res->vcpus, (unsigned long long)res->records,
		(unsigned long long)res->intervals, o->out);
}

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "host", required_argument, NULL, 'H' },    { "guest", required_argument, NULL, 'G' },
		{ "output", required_argument, NULL, 'o' },  { "vm-name", required_argument, NULL, 'N' },
		{ "vm", required_argument, NULL, 'V' },	     { "lenient", no_argument, NULL, 'l' },
		{ "isa", required_argument, NULL, 'I' },     { "cpus", required_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'j' },	     { "quiet", no_argument, NULL, 'q' },
		{ "meta", required_argument, NULL, 'M' },    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const reserved[] = { "tool",		  "command",	    "level",	 "source",
						"host_trace",	  "host_format",    "trace_start_ns", "guest_trace.",
						"sync.",	  NULL };
	struct import_guest guests[MAX_ITEMS];
	struct sht_meta meta[16];
	struct import_vm_name names[MAX_ITEMS];
	struct import_vm_threads vms[MAX_ITEMS];
	uint32_t *tidbufs[MAX_ITEMS] = { 0 };
	struct import_opts o = { 0 };
	struct import_result res;
	struct vcpustat_error err = { 0 };
	char command[1024] = "";
	bool json = false, quiet = false;
	int opt, ret = CLI_USAGE;
	size_t clen = 0;
	char *eq;

	for (int i = 0; i < argc && clen < sizeof(command) - 2; i++)
		clen += (size_t)snprintf(command + clen, sizeof(command) - clen, "%s%s", i ? " " : "vcpustat ", argv[i]);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:jqh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'H': o.host = optarg; break;
		case 'o': o.out = optarg; break;
		case 'l': o.trace.lenient = true; break;
		case 'j': json = true; cli_json = true; break;
		case 'q': quiet = true; break;
		case 'G':
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1] || o.nguests >= MAX_ITEMS) {
				cli_err("--guest %s: VM=GUEST_TRACE expected (at most %d)", optarg, MAX_ITEMS);
				goto out;
			}
			*eq = '\0';
			guests[o.nguests++] = (struct import_guest){ optarg, eq + 1 };
			break;
		case 'N':
			eq = strchr(optarg, '=');
			if (!eq || !eq[1] || o.nnames >= MAX_ITEMS) {
				cli_err("--vm-name %s: PID=NAME expected", optarg);
				goto out;
			}
			*eq = '\0';
			if (parse_u32(optarg, &names[o.nnames].pid)) {
				cli_err("--vm-name %s=%s: PID must be a number", optarg, eq + 1);
				goto out;
			}
			names[o.nnames++].name = eq + 1;
			break;
		case 'V': {
			uint32_t *tids;
			size_t n = 0;
			char *tok, *save = NULL;

			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1] || o.nvms >= MAX_ITEMS) {
				cli_err("--vm %s: NAME=TID[,TID...] expected", optarg);
				goto out;
			}
			*eq = '\0';
			tids = calloc(strlen(eq + 1), sizeof(*tids));
			if (!tids) {
				cli_err("out of memory");
				ret = CLI_FAIL;
				goto out;
			}
			tidbufs[o.nvms] = tids;
			for (tok = strtok_r(eq + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				if (parse_u32(tok, &tids[n++])) {
					cli_err("--vm %s=...: '%s' is not a thread id", optarg, tok);
					goto out;
				}
			vms[o.nvms++] = (struct import_vm_threads){ optarg, tids, n };
			break;
		}
		case 'I':
			if (!strcmp(optarg, "vmx")) {
				o.trace.isa = KVM_ISA_VMX;
			} else if (!strcmp(optarg, "svm")) {
				o.trace.isa = KVM_ISA_SVM;
			} else {
				cli_err("--isa %s: vmx or svm", optarg);
				goto out;
			}
			break;
		case 'C':
			if (parse_u32(optarg, &o.nr_cpus) || !o.nr_cpus || o.nr_cpus > 65536) {
				cli_err("--cpus %s: a number of CPUs (1..65536)", optarg);
				goto out;
			}
			break;
		case 'M':
			if (o.nmeta >= sizeof(meta) / sizeof(meta[0])) {
				cli_err("--meta: at most %zu", sizeof(meta) / sizeof(meta[0]));
				goto out;
			}
			if (cli_parse_meta(optarg, reserved, &meta[o.nmeta].key, &meta[o.nmeta].value))
				goto out;
			o.nmeta++;
			break;
		case 'h': usage(stdout); ret = CLI_OK; goto out;
		default: usage(stderr); goto out;
		}
	}
	if (optind < argc) {
		cli_err("import: unexpected argument '%s' (see `%s import --help`)", argv[optind], cli_prog);
		goto out;
	}
	if (!o.host || !o.out) {
		cli_err("import: --host TRACE and -o FILE.sht are needed (see `%s import --help`)", cli_prog);
		goto out;
	}
	{ /* before anything is opened for writing: the output must not be an input */
		const char *in[MAX_ITEMS + 1];
		size_t n = 0;

		in[n++] = o.host;
		for (size_t i = 0; i < o.nguests; i++)
			in[n++] = guests[i].path;
		if (outfile_refuse_input(o.out, in, n, &err)) {
			cli_err("import: -o %s", err.msg);
			ret = CLI_USAGE;
			goto out;
		}
	}
	o.guests = guests;
	o.names = names;
	o.vms = vms;
	o.command = command;
	o.meta = meta;
	ret = vcpustat_import(&o, &res, &err) ? CLI_FAIL : CLI_OK;
	if (ret != CLI_OK) {
		cli_err("%s", err.msg);
	} else {
		warnings(&o, &res);
		if (json)
			report_json(&o, &res);
		else if (!quiet)
			report_text(&o, &res);
	}
	import_result_free(&res);
out:
	for (size_t i = 0; i < MAX_ITEMS; i++)
		free(tidbufs[i]);
	return ret;
}
