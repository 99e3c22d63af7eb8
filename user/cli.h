/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cli.h - what the vcpustat subcommands share: error output (plain text, or a
 * JSON error object in JSON mode, like bpftool's p_err) and the command table.
 * Each subcommand lives in user/cmd_<name>.c, parses its own options
 * (getopt_long, with a -h/--help that teaches) and calls the library.
 */
#ifndef VCPUSTAT_CLI_H
#define VCPUSTAT_CLI_H

#include <stdbool.h>

extern bool cli_json; /* errors as {"error": "..."} on stdout */
extern const char *cli_prog; /* "vcpustat" */

/* Print one clear error (what failed, where, what to do) to stderr, or as JSON. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Exit codes */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_NOPERM = 77 };

/* Subcommands: int cmd_<name>(int argc, char **argv), argv[0] = the subcommand. */
int cmd_top(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_import(int argc, char **argv);



#include "loader.h"

/*
 * Check privileges, load and attach the BPF programs, seed the vCPUs of
 * running VMs, and warn about programs that could not attach. On failure,
 * prints one clear error and returns the exit code to use (CLI_NOPERM,
 * CLI_FAIL); 0 on success.
 */
int cli_open_live(struct vcpustat **vs, const struct vcpustat_options *opts, bool verbose, bool quiet);

/* Route libbpf/library messages to stderr (verbose: libbpf debug output too). */
void cli_setup_log(bool verbose);
#endif
