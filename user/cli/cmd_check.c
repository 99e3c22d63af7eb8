// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat check: verify every checksum and the structure of an SHT file,
 * say what is good and where the first problem is; --repair keeps the good
 * nodes and makes the file cleanly readable (docs/sht-format.md sections 7-8).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "cli/cli.h"
#include "sht/sht.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s check FILE [--repair] [--json]\n"
		"\n"
		"Verify an SHT file: the checksum of every node, the tree (time ranges, children,\n"
		"parents), every interval record, the attribute and string definitions, the footer.\n"
		"Prints what is good (nodes, intervals, time range, attributes) and the first bad\n"
		"node with its offset. Exit status: 0 if the file is good, 1 if it is not.\n"
		"\n"
		"A file whose writer was killed (no footer) is good if its nodes are: it holds\n"
		"every interval that ended before its last sealed leaf, and `check` says so.\n"
		"\n"
		"  --repair    keep the nodes before the first bad one (all of them if none is bad),\n"
		"              truncate the rest, rebuild the unsealed parts of the tree and write a\n"
		"              footer, so that the file opens cleanly. A good closed file is not touched.\n"
		"  --json      JSON output for scripts\n"
		"  -h, --help  this help\n",
		cli_prog);
}

static json_t *report_json(const char *file, const struct sht_check_report *rep)
{
	json_t *o = json_pack("{s:s, s:b, s:b, s:b, s:b, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:I, s:I}",
			      "file", file, "ok", rep->ok, "closed", rep->closed, "recovered", rep->recovered,
			      "repaired", rep->repaired, "node_size", (int)rep->node_size, "file_size",
			      (json_int_t)rep->file_size, "nodes", (json_int_t)rep->nodes, "leaves",
			      (json_int_t)rep->leaves, "cores", (json_int_t)rep->cores, "rebuilt",
			      (json_int_t)rep->rebuilt, "intervals", (json_int_t)rep->nintervals, "start",
			      (json_int_t)rep->start, "end", (json_int_t)rep->end, "horizon", (json_int_t)rep->horizon,
			      "attributes", (int)rep->nattrs, "strings", (int)rep->nstrings, "tail_bytes",
			      (json_int_t)rep->tail_bytes, "good_size", (json_int_t)rep->good_size);

	if (rep->ok)
		json_object_set_new(o, "bad", json_null());
	else
		json_object_set_new(o, "bad", json_pack("{s:I, s:I, s:s}", "node", (json_int_t)rep->bad_node, "offset",
							(json_int_t)rep->bad_offset, "error", rep->problem));
	return o;
}

static void report_text(const char *file, const struct sht_check_report *rep)
{
	char s1[32], s2[32];
	uint64_t cores;

	cli_fmt_secs(rep->start, s1, sizeof(s1));
	cli_fmt_secs(rep->end, s2, sizeof(s2));
	printf("%s: %s\n", file,
	       !rep->ok ? "BAD" : rep->closed ? (rep->recovered ? "good (repaired)" : "good, closed cleanly")
					      : "good, but not closed cleanly (the writer was killed?)");
	if (!rep->ok && rep->bad_node >= 0)
		printf("  first bad node    %lld at offset %llu: %s\n", (long long)rep->bad_node,
		       (unsigned long long)rep->bad_offset, rep->problem);
	else if (!rep->ok)
		printf("  problem at offset %llu: %s\n", (unsigned long long)rep->bad_offset, rep->problem);
	if (!rep->node_size)
		return;
	cores = rep->cores - (rep->repaired ? 0 : rep->rebuilt); /* the rebuilt ones are not in the file yet */
	printf("  %-17s %llu of %u bytes (%llu lea%s, %llu core%s%s); %llu bytes are good\n",
	       rep->ok ? "blocks" : "good blocks", (unsigned long long)rep->nodes, rep->node_size,
	       (unsigned long long)rep->leaves, rep->leaves == 1 ? "f" : "ves", (unsigned long long)cores,
	       cores == 1 ? "" : "s", rep->nodes > rep->leaves + cores ? ", some of several blocks" : "",
	       (unsigned long long)rep->good_size);
	if (rep->rebuilt && !rep->repaired)
		printf("  %-17s %llu core%s that the writer never sealed, from the journals of the leaves\n", "rebuilt",
		       (unsigned long long)rep->rebuilt, rep->rebuilt == 1 ? "" : "s");
	printf("  %-17s %llu\n", "intervals", (unsigned long long)rep->nintervals);
	printf("  %-17s %s .. %s s\n", "time range", s1, s2);
	printf("  %-17s %u (and %u strings)\n", "attributes", rep->nattrs, rep->nstrings);
	if (rep->recovered)
		printf("  %-17s the history holds the intervals that ended before %s s (the end of the\n"
		       "  %-17s last sealed leaf)\n",
		       "history", s2, "");
	if (rep->tail_bytes)
		printf("  %-17s %llu bytes of a node that was being written\n", "ignored",
		       (unsigned long long)rep->tail_bytes);
	if (!rep->ok || !rep->closed)
		printf("  `%s check --repair %s` %s\n", cli_prog, file,
		       rep->ok ? "finalizes it (footer) so that it opens quickly"
			       : "keeps the good nodes and drops the rest");
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sht_check_report rep, after;
	struct vcpustat_error err = { 0 };
	bool repair = false;
	const char *file;
	int c, e;

	while ((c = getopt_long(argc, argv, "rjh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': repair = true; break;
		case 'j': cli_json = true; break;
		case 'h': usage(stdout); return CLI_OK;
		default: usage(stderr); return CLI_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_err(optind >= argc ? "check: which file? (`%s check FILE`, see --help)"
				       : "check: one file only (see `%s check --help`)",
			cli_prog);
		return CLI_USAGE;
	}
	file = argv[optind];
	e = sht_check(file, &rep, &err);
	if (e && e != -EBADMSG) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (!repair) {
		if (cli_json) {
			cli_json_print(report_json(file, &rep), CLI_JSON_DOC);
		} else {
			report_text(file, &rep);
		}
		return rep.ok ? CLI_OK : CLI_FAIL;
	}
	if (rep.ok && rep.closed) {
		if (cli_json) {
			cli_json_print(report_json(file, &rep), CLI_JSON_DOC);
		} else {
			report_text(file, &rep);
			printf("  nothing to repair\n");
		}
		return CLI_OK;
	}
	e = sht_repair(file, &after, &err);
	if (e) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (cli_json) {
		cli_json_print(json_pack("{s:o, s:o}", "before", report_json(file, &rep), "after", report_json(file, &after)),
			       CLI_JSON_DOC);
	} else {
		printf("before the repair:\n");
		report_text(file, &rep);
		printf("after the repair (kept %llu nodes, appended %llu rebuilt cores and a footer):\n",
		       (unsigned long long)(after.nodes - after.rebuilt), (unsigned long long)after.rebuilt);
		report_text(file, &after);
	}
	return after.ok ? CLI_OK : CLI_FAIL;
}
