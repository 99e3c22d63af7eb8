// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat check: verify every checksum and the structure of an SHT file,
 * say what is good and where the first problem is; --repair keeps the good
 * nodes and makes the file cleanly readable (docs/sht-format.md sections 7-8;
 * sht_check, sht_repair_to and their reports in sht/sht.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "sht/sht.h"

static const char synopsis[] = "FILE [--json]\n"
			       "       vcpustat check FILE --repair (-o FIXED.sht | --in-place) [--json]";

static const char about[] =
	"Verify an SHT file: the checksum of every node, the tree (time ranges, children,\n"
	"parents), every interval record, the attribute and string definitions, the footer.\n"
	"Prints what is good (nodes, intervals, time range, attributes) and the first bad\n"
	"node with its offset. Exit status: 0 if the file is good, 1 if it is not.\n"
	"\n"
	"A file whose writer was killed (no footer) is good if its nodes are: it holds\n"
	"every interval that ended before its last sealed leaf, and `check` says so.\n";

/* The options and the file (NULL unless -1 is returned): -1 to go on, or the exit code. */
static int parse(int argc, char **argv, bool *repair, bool *in_place, const char **out, const char **file)
{
	const struct cli_option options[] = {
		{ "repair", 'r' | 1024, NULL, "make a copy that opens cleanly: an unfinished file keeps every node and\n"
					      "gets the unsealed parts of the tree rebuilt and a footer; a file with\n"
					      "damaged nodes is written again from every intact node (a damaged node\n"
					      "loses only the intervals it held). Says how many intervals were kept.\n"
					      "A good closed file is not copied.", CLI_FLAG, repair },
		{ "output", 'o', "FIXED.sht", "where --repair writes (a file is replaced whole; a device,\n"
					      "a FIFO or /dev/stdout gets it in place; never FILE)", CLI_STRING, out },
		{ "in-place", 256, NULL, "--repair replaces FILE and keeps the original as FILE.orig", CLI_FLAG,
		  in_place },
		{ "json", 'j' | 1024, NULL, "JSON output for scripts", CLI_FLAG, &cli_json },
		{ "help", 'h', NULL, "this help" },
		{ "repair", 'r', NULL, NULL, CLI_FLAG, repair }, /* the short forms check has always taken */
		{ "json", 'j', NULL, NULL, CLI_FLAG, &cli_json },
		{ NULL },
	};
	const struct cli_command cmd = { "check", synopsis, about, options, NULL };
	struct vcpustat_error err = { 0 };
	struct cli_args a;
	int c = cli_parse(&a, &cmd, argc, argv);

	*file = NULL;
	if (c)
		return cli_args_exit(c);
	if (a.pos != argc - 1)
		return cli_usage_error(a.pos >= argc ? "check: which file? (`%s check FILE`, see --help)"
						     : "check: one file only (see `%s check --help`)",
				       cli_prog);
	*file = argv[a.pos];
	if ((*out || *in_place) && !*repair)
		return cli_usage_error("check: %s only goes with --repair", *out ? "-o" : "--in-place");
	if (*repair && !!*out == *in_place)
		return cli_usage_error(*out ? "check --repair: -o and --in-place exclude each other"
					    : "check --repair: where to? `-o FIXED.sht` (a new file) or `--in-place` "
					      "(keeps %s.orig)",
				       *file);
	if (*out && !**out)
		return cli_usage_error("check --repair: -o: empty file name");
	if (*out && outfile_refuse_input(*out, (const char *const[]){ *file }, 1, &err))
		return cli_usage_error("check --repair: %s", err.msg);
	return -1;
}

int cmd_check(int argc, char **argv)
{
	struct sht_check_report rep, after;
	struct sht_repair_info info;
	struct vcpustat_error err = { 0 };
	bool repair = false, in_place = false;
	const char *file, *out = NULL;
	char orig[4096];
	int e = parse(argc, argv, &repair, &in_place, &out, &file);

	if (e >= 0)
		return e;
	e = sht_check(file, &rep, &err);
	if (e && e != -EBADMSG) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (!repair || (rep.ok && rep.closed)) {
		if (cli_json)
			cli_json_print(sht_check_json(file, &rep), CLI_JSON_DOC);
		else
			sht_check_print(stdout, cli_prog, file, &rep);
		if (repair && !cli_json)
			printf("  nothing to repair\n");
		return rep.ok ? CLI_OK : CLI_FAIL;
	}
	e = in_place ? sht_repair_keeping(file, orig, sizeof(orig), &after, &info, &err) :
		       sht_repair_to(file, out, &after, &info, &err);
	if (e) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (in_place)
		out = file;
	if (cli_json)
		cli_json_print(sht_repair_json(file, &rep, out, &after, &info, in_place ? orig : NULL), CLI_JSON_DOC);
	else
		sht_repair_print(stdout, cli_prog, file, &rep, out, &after, &info, in_place ? orig : NULL);
	if (fflush(stdout) || ferror(stdout)) {
		cli_err("stdout: write failed: %s", strerror(errno));
		return CLI_FAIL;
	}
	return after.ok ? CLI_OK : CLI_FAIL;
}
