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
#include <unistd.h>
#include <jansson.h>
#include "cli/cli.h"
#include "sht/sht.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s check FILE [--json]\n"
		"       %s check FILE --repair (-o FIXED.sht | --in-place) [--json]\n"
		"\n"
		"Verify an SHT file: the checksum of every node, the tree (time ranges, children,\n"
		"parents), every interval record, the attribute and string definitions, the footer.\n"
		"Prints what is good (nodes, intervals, time range, attributes) and the first bad\n"
		"node with its offset. Exit status: 0 if the file is good, 1 if it is not.\n"
		"\n"
		"A file whose writer was killed (no footer) is good if its nodes are: it holds\n"
		"every interval that ended before its last sealed leaf, and `check` says so.\n"
		"\n"
		"  --repair    make a copy that opens cleanly: an unfinished file keeps every node and\n"
		"              gets the unsealed parts of the tree rebuilt and a footer; a file with\n"
		"              damaged nodes is written again from every intact node (a damaged node\n"
		"              loses only the intervals it held). Says how many intervals were kept.\n"
		"              A good closed file is not copied.\n"
		"  -o, --output FIXED.sht  where --repair writes (a new file, written atomically;\n"
		"              never FILE)\n"
		"  --in-place  --repair replaces FILE and keeps the original as FILE.orig\n"
		"  --json      JSON output for scripts\n"
		"  -h, --help  this help\n",
		cli_prog, cli_prog);
	cli_usage_exit_status(out);
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
		printf("  `%s check --repair %s -o FIXED.sht` %s\n", cli_prog, file,
		       rep->ok ? "finalizes it (footer) so that it opens quickly"
			       : "keeps every intact node; only the damaged ones are lost");
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "in-place", no_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sht_check_report rep, after;
	struct sht_repair_info info;
	struct vcpustat_error err = { 0 };
	bool repair = false, in_place = false;
	const char *file, *out = NULL;
	char orig[4096];
	int c, e;

	while ((c = getopt_long(argc, argv, "ro:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': repair = true; break;
		case 'o': out = optarg; break;
		case 'I': in_place = true; break;
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
	if ((out || in_place) && !repair) {
		cli_err("check: %s only goes with --repair", out ? "-o" : "--in-place");
		return CLI_USAGE;
	}
	if (repair && !!out == in_place) {
		cli_err(out ? "check --repair: -o and --in-place exclude each other"
			    : "check --repair: where to? `-o FIXED.sht` (a new file) or `--in-place` (keeps %s.orig)",
			file);
		return CLI_USAGE;
	}
	if (out && !*out) {
		cli_err("check --repair: -o: empty file name");
		return CLI_USAGE;
	}
	if (out && outfile_refuse_input(out, (const char *const[]){ file }, 1, &err)) {
		cli_err("check --repair: %s", err.msg);
		return CLI_USAGE;
	}
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
	if (in_place) {
		if (snprintf(orig, sizeof(orig), "%s.orig", file) >= (int)sizeof(orig)) {
			cli_err("%s: path too long", file);
			return CLI_FAIL;
		}
		if (link(file, orig)) {
			cli_err("%s: cannot keep the original as %s: %s%s", file, orig, strerror(errno),
				errno == EEXIST ? " (move it away first)" : "");
			return CLI_FAIL;
		}
		out = file;
	}
	e = sht_repair_to(file, out, &after, &info, &err);
	if (e) {
		if (in_place)
			unlink(orig); /* the original was not replaced: the link is the same file */
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (cli_json) {
		json_t *o = json_pack("{s:o, s:o, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:i, s:i}", "before",
				      report_json(file, &rep), "after", report_json(out, &after), "output", out,
				      "salvaged", info.salvaged, "damaged_nodes", (json_int_t)info.damaged_nodes,
				      "intervals_announced", (json_int_t)info.announced, "intervals_kept",
				      (json_int_t)(info.salvaged ? info.intervals_kept : after.nintervals),
				      "intervals_dropped", (json_int_t)info.dropped, "from_journals",
				      (json_int_t)info.from_journals, "lost_attributes", (int)info.lost_attributes,
				      "lost_strings", (int)info.lost_strings);

		if (in_place)
			json_object_set_new(o, "original", json_string(orig));
		cli_json_print(o, CLI_JSON_DOC);
	} else {
		printf("before the repair:\n");
		report_text(file, &rep);
		if (info.salvaged) {
			printf("after the repair (%s; written again from the intact nodes, %u damaged node%s dropped):\n", out,
			       info.damaged_nodes, info.damaged_nodes == 1 ? "" : "s");
			printf("  intervals: %llu before (%s), %llu after", 
			       (unsigned long long)(info.announced ? info.announced : info.intervals_found),
			       info.announced ? "the footer's count" : "in the intact nodes",
			       (unsigned long long)info.intervals_kept);
			if (info.from_journals)
				printf(" (%llu from the leaves' journals)", (unsigned long long)info.from_journals);
			printf("\n");
			if (info.lost_attributes || info.lost_strings)
				printf("  %u attribute%s and %u string%s were defined only in a damaged node: named lost-attribute-N, <lost string N>\n",
				       info.lost_attributes, info.lost_attributes == 1 ? "" : "s", info.lost_strings,
				       info.lost_strings == 1 ? "" : "s");
		} else {
			printf("after the repair (%s; kept %llu nodes, appended %llu rebuilt cores and a footer):\n", out,
			       (unsigned long long)(after.nodes - after.rebuilt), (unsigned long long)after.rebuilt);
			printf("  intervals: %llu before, %llu after\n", (unsigned long long)rep.nintervals,
			       (unsigned long long)after.nintervals);
		}
		report_text(out, &after);
		if (in_place)
			printf("  the original is kept as %s\n", orig);
	}
	if (fflush(stdout) || ferror(stdout)) {
		cli_err("stdout: write failed: %s", strerror(errno));
		return CLI_FAIL;
	}
	return after.ok ? CLI_OK : CLI_FAIL;
}
