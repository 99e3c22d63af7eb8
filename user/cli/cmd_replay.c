// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat replay: build a State History Tree from a capture file by running
 * the kernel's event handler (include/vcpustat_handler.h) in user space
 * (replay_capture(), record/record.h).
 */
#include <stdio.h>
#include "record/record.h"
#include "cli/cli.h"

int cmd_replay(int argc, char **argv)
{
	const char *out = NULL;
	bool json = false, quiet = false;
	const struct cli_option options[] = {
		{ "output", 'o', "FILE", "the .sht file to write (replaced whole; a device, a FIFO or\n"
					 "/dev/stdout gets it in place)", CLI_STRING, &out },
		{ "json", 'j', NULL, "the summary as a JSON document on stdout (docs/json.md)", CLI_FLAG, &json },
		{ "quiet", 'q', NULL, "no summary", CLI_FLAG, &quiet },
		{ NULL },
	};
	const struct cli_command cmd = {
		.name = "replay",
		.synopsis = "CAPTURE.vcap -o FILE.sht [-j] [-q]",
		.about = "Run the events of a capture (`vcpustat record --capture`) through the same\n"
			 "state machine and handler the kernel runs, in user space, and write the\n"
			 "State History Tree: the same file `vcpustat record` wrote live.\n",
		.options = options,
	};
	struct vcpustat_error err = { 0 };
	struct capture_reader *cap;
	struct rec_session_stats st;
	struct cli_args a;
	uint64_t trunc, trunc_off;
	int c;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0)
		;
	if (c < 0)
		return cli_args_exit(c);
	if (a.pos != argc - 1 || !out) {
		cli_err("replay: one capture file and -o FILE.sht are needed (see --help)");
		return CLI_USAGE;
	}
	if (outfile_refuse_input(out, (const char *const *)&argv[a.pos], 1, &err)) {
		cli_err("replay: -o %s", err.msg);
		return CLI_USAGE;
	}
	if (capture_open(&cap, argv[a.pos], &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	if (replay_capture(cap, out, &st, &err)) {
		cli_err("%s", err.msg);
		capture_close_reader(cap);
		return CLI_FAIL;
	}
	trunc = capture_truncated(cap, &trunc_off);
	if (trunc)
		cli_warn("%s: truncated: %llu bytes at offset %llu after the last complete block were ignored "
			 "(the recording was cut short)",
			 argv[a.pos], (unsigned long long)trunc, (unsigned long long)trunc_off);
	capture_close_reader(cap);
	if (json) {
		json_t *doc = rec_session_json(&st, false);

		json_object_del(doc, "behind"); /* record's */
		if (doc && trunc)
			json_object_set_new(doc, "truncated_bytes", json_integer((json_int_t)trunc));
		return cli_json_print(doc, CLI_JSON_DOC) ? CLI_FAIL : CLI_OK;
	}
	if (!quiet)
		fprintf(stderr, "%s: %llu events -> %llu records -> %llu intervals in %s\n", cli_prog,
			(unsigned long long)st.events, (unsigned long long)st.records,
			(unsigned long long)st.intervals, out);
	return CLI_OK;
}
