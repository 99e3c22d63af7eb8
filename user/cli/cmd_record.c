// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat record: the kernel's records into a State History Tree file (and,
 * with --capture, the raw events into a capture file) until Ctrl-C, SIGTERM
 * or --duration: a live recording session (live/live.h, record/record.h).
 */
#include <stdio.h>
#include <string.h>
#include "record/record.h"
#include "cli/cli.h"

/* The longest the final drain may take, however many records wait. */
#define RECORD_FINAL_DRAIN_S 30

struct record_args {
	struct vcpustat_options vo;
	struct rec_session_opts so;
	struct live_record_opts lo;
	long long max_size, ringbuf;
	long keep;
	bool json, quiet, verbose;
	struct record_meta user; /* --meta */
};

/* Options into *r: -1 to go on, or the exit code (after --help: 0). */
static int parse(int argc, char **argv, struct record_args *r)
{
	enum { OPT_MAX_SIZE = 256, OPT_ROTATE, OPT_KEEP, OPT_CAPTURE, OPT_RINGBUF, OPT_META, OPT_AS };
	const struct cli_option options[] = {
		{ "output", 'o', "FILE", "the .sht file, written as it grows (with rotation: the name of\n"
					 "the series); a device in place; not a FIFO (it cannot seek)", CLI_STRING,
		  &r->so.rec.path },
		{ "level", 'l', "LEVEL", "vcpu (default): vCPU states, exit reasons, pCPUs, the\n"
					 "VMs' other threads, who ran where they waited (culprits);\n"
					 "full: also which thread runs on every CPU at every moment\n"
					 "and the states of host threads" },
		{ "duration", 't', "D", "stop after D (1.5s, 250ms, 15m, 2h; a bare number is seconds)", CLI_DURATION,
		  &r->lo.duration_ns, 1 },
		{ "max-size", OPT_MAX_SIZE, "SIZE", "rotate so that no file of the series is over SIZE bytes\n"
						    "(K, M, G suffixes; at least 48K), its close included", CLI_SIZE,
		  &r->max_size, 1 },
		{ "rotate-every", OPT_ROTATE, "D", "rotate every D (at least 1s; same syntax as --duration)",
		  CLI_DURATION, &r->so.rec.rotate_ns, 1000000000 },
		{ "keep", OPT_KEEP, "N", "with rotation, keep the newest N files (default: all)", CLI_NUMBER, &r->keep,
		  1, 1000000, "files" },
		{ "capture", OPT_CAPTURE, "FILE", "also write the raw events to FILE (docs/capture-format.md),\n"
						  "for `vcpustat replay`", CLI_STRING, &r->so.capture },
		{ "ringbuf", OPT_RINGBUF, "SIZE", "the kernel's ring buffers, all CPUs' together (default 8M,\n"
						  "a power of two; at least 1M per CPU by default)", CLI_SIZE,
		  &r->ringbuf, 4096, 1ll << 30 },
		{ "meta", OPT_META, "KEY=VALUE", "store this in the file's metadata (repeatable), e.g.\n"
						 "workload='what ran' (shown by `top --file`)" },
		{ "address-spaces", OPT_AS, NULL, "also the guest's CR3 at each exit (guest address spaces,\n"
						  "for `report`): a second program on kvm_exit", CLI_FLAG,
		  &r->vo.address_spaces },
		{ "json", 'j', NULL, "the summary at the end as a JSON document on stdout (docs/json.md)", CLI_FLAG,
		  &r->json },
		{ "quiet", 'q', NULL, "no summary at the end", CLI_FLAG, &r->quiet },
		{ "verbose", 'v', NULL, "libbpf's log on stderr", CLI_FLAG, &r->verbose },
		{ NULL },
	};
	const struct cli_command cmd = {
		.name = "record",
		.synopsis = "-o FILE.sht [--level vcpu|full] [--duration D]\n"
			    "                 [--max-size SIZE | --rotate-every DURATION] [--keep N]\n"
			    "                 [--capture FILE.vcap] [--ringbuf SIZE] [--meta KEY=VALUE]... [--address-spaces]\n"
			    "                 [-j] [-q] [-v]",
		.about = "Record every vCPU's state changes, exit reasons and CPUs into a State History\n"
			 "Tree file until Ctrl-C, SIGTERM or --duration. Query it later with `vcpustat\n"
			 "query`, `vcpustat report`, `vcpustat export`. The attributes are described in\n"
			 "docs/sht-attributes.md.\n",
		.options = options,
		.notes = "Lost records (ring buffer full) are counted, stored in the file (/meta/lost) and\n"
			 "reported. The file is readable at any time up to its last sealed node, also if\n"
			 "vcpustat is killed.\n",
	};
	struct vcpustat_error err = { 0 };
	struct cli_args a;
	int c;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == 'l' && record_level_parse(a.arg, &r->vo.record_level))
			return cli_usage_error("--level %s: the level is vcpu or full", a.arg);
		if (c == OPT_META && cli_add_meta(&r->user, a.arg, record_meta_live_keys, 16))
			return CLI_USAGE;
	}
	if (c < 0 || cli_no_more_args(&a))
		return c < 0 ? cli_args_exit(c) : CLI_USAGE;
	if (r->ringbuf & (r->ringbuf - 1))
		return cli_usage_error("--ringbuf %lld: a power of two from 4K to 1G", r->ringbuf);
	if (!r->so.rec.path)
		return cli_usage_error("record: -o FILE.sht is required");
	r->vo.ringbuf_bytes = (unsigned int)r->ringbuf;
	r->so.rec.max_bytes = (uint64_t)r->max_size;
	r->so.rec.keep = (unsigned int)r->keep;
	r->vo.record_raw = r->so.capture != NULL;
	if (recorder_opts_check(&r->so.rec, &err)) /* before BPF loads */
		return cli_usage_error("%s", err.msg);
	return -1;
}

int cmd_record(int argc, char **argv)
{
	static struct record_args r;
	struct rec_session_opts *so = &r.so;
	struct vcpustat_error err = { 0 };
	struct live_record_result res;
	struct rec_session_stats st;
	struct rec_session *s = NULL;
	struct vcpustat *vs = NULL;
	int ret;

	memset(&r, 0, sizeof(r));
	r.vo.record_level = VCPUSTAT_LEVEL_VCPU;
	r.lo = (struct live_record_opts){ .stop = &cli_stop, .final_drain_s = RECORD_FINAL_DRAIN_S };
	ret = parse(argc, argv, &r);
	if (ret >= 0)
		return ret;
	/* level full records every host thread, these among them */
	r.lo.seed_vmm = r.vo.record_level == VCPUSTAT_LEVEL_VCPU;
	ret = cli_open_live(&vs, &r.vo, r.verbose, r.quiet);
	if (ret)
		return ret;
	ret = CLI_FAIL;
	if (live_record_open(&s, so, r.vo.record_level, argc, argv, &r.user, &err)) {
		cli_err("%s", err.msg);
		goto out;
	}
	cli_catch_stop(false);
	if (!r.quiet && !r.json)
		fprintf(stderr, "%s: recording to %s (level %s)%s; Ctrl-C to stop\n", cli_prog, so->rec.path,
			record_level_name(r.vo.record_level), so->capture ? ", raw events too" : "");
	if (live_record(vs, s, &r.lo, &res, &err) || rec_session_finish(&s, res.end_ns, &st, &err)) {
		cli_err("%s", err.msg);
		goto out;
	}
	ret = CLI_OK;
	if (r.json)
		ret = cli_json_print(rec_session_json(&st, res.behind), CLI_JSON_DOC) ? CLI_FAIL : CLI_OK;
	else if (!r.quiet)
		rec_session_print(stderr, cli_prog, &st, res.behind);
	if (cli_blind(res.health_problems, &res.health, "the recording"))
		ret = CLI_FAIL; /* the file is whole, but it misses what vcpustat could not see */
out:
	health_free(&res.health);
	rec_session_close(s, vcpustat_now_ns());
	vcpustat_close(vs);
	return ret;
}
