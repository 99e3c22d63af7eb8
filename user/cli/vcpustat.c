// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat - what every vCPU of a KVM host is really doing.
 * The command table: each subcommand is user/cmd_<name>.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "util/util.h"

/*
 * One line per command: its name, its function, how the global -j reaches it
 * (json: CLI_JSON_NONE when it prints no document of its own, then -j only
 * makes its errors JSON objects) and its line in --help.
 */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	enum cli_json_form json;
	const char *summary;
} commands[] = {
	{ "top", cmd_top, CLI_JSON_FLAG, "live view of every VM and vCPU (the default command)" },
	{ "record", cmd_record, CLI_JSON_FLAG, "record vCPU states, exits and CPUs into a state history file (.sht)" },
	{ "report", cmd_report, CLI_JSON_FLAG, "the live view's tables for any window of a recording" },
	{ "export", cmd_export, CLI_JSON_FORMAT, "capacity-planning metrics: Prometheus/OpenMetrics text, JSON, CSV (live or a recording)" },
	{ "serve", cmd_serve, CLI_JSON_NONE, "Prometheus exporter: /metrics over HTTP" },
	{ "plot", cmd_plot, CLI_JSON_NONE, "SVG charts: state shares over time, exit and wait latency histograms" },
	{ "query", cmd_query, CLI_JSON_FLAG, "read a state history file (.sht): values at a time, intervals in a range" },
	{ "check", cmd_check, CLI_JSON_FLAG, "verify (and --repair) a state history file (.sht)" },
	{ "replay", cmd_replay, CLI_JSON_FLAG, "rebuild a state history file from a capture (.vcap), offline" },
	{ "import", cmd_import, CLI_JSON_FLAG, "build a state history file from host (and guest) traces: ftrace text, LTTng CTF" },
	{ "sync", cmd_sync, CLI_JSON_FLAG, "map a guest's clock onto the host's (convex hull synchronization)" },
	{ "probe", cmd_probe, CLI_JSON_FLAG, "what this host gives vcpustat: kernel features, program forms, whether kvm_exit fires" },
};

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"usage: %s [COMMAND] [OPTIONS]\n"
		"\n"
		"What every virtual CPU of this KVM host is really doing: in guest code, in the\n"
		"hypervisor, preempted, waiting for a CPU, idle or blocked; why it exits; who\n"
		"took its CPU. Without COMMAND, runs `top`.\n"
		"\n"
		"Commands:\n",
		cli_prog);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\nGlobal options, before COMMAND (--pretty also after it):\n"
		"  -j, --json    JSON output (the command's --json, or -f json for export);\n"
		"                errors as {\"error\": \"...\"} objects on stdout\n"
		"  -p, --pretty  indent JSON output\n"
		"\n`%s COMMAND --help` explains each command. `%s --version` prints the version.\n",
		cli_prog, cli_prog);
	cli_usage_exit_status(out);
}

/*
 * Every command's stdout is checked once it is done: a full disk, a closed
 * pipe reader or /dev/full is an error naming stdout, never a silent exit 0.
 */
static int finish_stdout(int ret)
{
	bool lost = ferror(stdout); /* a write failed earlier: its errno is gone */
	int e = 0;

	if (fflush(stdout))
		e = errno;
	if (fclose(stdout) && !e)
		e = errno;
	if (!e && !lost)
		return ret;
	if (e)
		cli_err("stdout: write failed: %s", strerror(e));
	else
		cli_err("stdout: write failed: part of the output was lost (a full disk, a closed pipe?)");
	return ret ? ret : CLI_FAIL;
}

/*
 * The global options, bpftool's: -j/--json and -p/--pretty before the
 * command (`vcpustat -j report day.sht`); --pretty after it is the option
 * layer's (options.c). -j becomes the command's own JSON option (its json
 * field in commands[]) and makes errors JSON objects for the commands that
 * print no document. Returns the index of the first argument after them;
 * argv is not changed.
 */
static int global_options(int argc, char **argv, bool *json)
{
	int i = 1;

	for (; i < argc; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json"))
			*json = true;
		else if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--pretty"))
			cli_pretty = true;
		else if (!strcmp(argv[i], "-jp") || !strcmp(argv[i], "-pj"))
			*json = cli_pretty = true;
		else
			break;
	}
	return i;
}

static const struct command *command_named(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/*
 * The command gets argv from its name on: argv[0] its name (or, with no
 * command, whatever came before the options, which getopt does not read).
 */
static int run(int argc, char **argv)
{
	const struct command *cmd = &commands[0]; /* no command, or options only: the live view */
	bool json = false;
	int i = global_options(argc, argv, &json);

	if (i < argc) {
		const char *name = argv[i];

		if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
			usage(stdout);
			return CLI_OK;
		}
		if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
			printf("vcpustat %s\n", VCPUSTAT_VERSION);
			return CLI_OK;
		}
		if (name[0] != '-') {
			cmd = command_named(name);
			if (!cmd) {
				cli_err("unknown command '%s' (see `%s --help`)", name, cli_prog);
				return CLI_USAGE;
			}
			i++;
		}
	}
	if (json) {
		cli_json = true;
		cli_json_given = cmd->json;
	}
	return cmd->fn(argc - i + 1, argv + i - 1);
}

int main(int argc, char **argv)
{
	heap_keep();
	return finish_stdout(run(argc, argv));
}
