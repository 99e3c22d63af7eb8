// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat - what every vCPU of a KVM host is really doing.
 * The command table: each subcommand is user/cmd_<name>.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "top", cmd_top, "live view of every VM and vCPU (the default command)" },
	{ "record", cmd_record, "record vCPU states, exits and CPUs into a state history file (.sht)" },
	{ "report", cmd_report, "the live view's tables for any window of a recording" },
	{ "export", cmd_export, "capacity-planning metrics: Prometheus/OpenMetrics text, JSON, CSV (live or a recording)" },
	{ "serve", cmd_serve, "Prometheus exporter: /metrics over HTTP" },
	{ "plot", cmd_plot, "SVG charts: state shares over time, exit and wait latency histograms" },
	{ "query", cmd_query, "read a state history file (.sht): values at a time, intervals in a range" },
	{ "check", cmd_check, "verify (and --repair) a state history file (.sht)" },
	{ "replay", cmd_replay, "rebuild a state history file from a capture (.vcap), offline" },
	{ "import", cmd_import, "build a state history file from host (and guest) traces: ftrace text, LTTng CTF" },
	{ "sync", cmd_sync, "map a guest's clock onto the host's (convex hull synchronization)" },
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
	fprintf(out, "\n`%s COMMAND --help` explains each command. `%s --version` prints the version.\n",
		cli_prog, cli_prog);
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

static int run(int argc, char **argv)
{
	size_t i;

	if (argc > 1) {
		if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			usage(stdout);
			return CLI_OK;
		}
		if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
			printf("vcpustat %s\n", VCPUSTAT_VERSION);
			return CLI_OK;
		}
		for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[1], commands[i].name))
				return commands[i].fn(argc - 1, argv + 1);
		if (argv[1][0] != '-') {
			cli_err("unknown command '%s' (see `%s --help`)", argv[1], cli_prog);
			return CLI_USAGE;
		}
	}
	/* no command, or options only: the live view */
	argv[0] = "top";
	return cmd_top(argc, argv);
}

int main(int argc, char **argv)
{
	return finish_stdout(run(argc, argv));
}
