// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <jansson.h>
#include "cli.h"

bool cli_json;
const char *cli_prog = "vcpustat";

static void vreport(const char *kind, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (cli_json && kind[0] == 'e') {
		json_t *o = json_pack("{s:s}", "error", msg);

		json_dumpf(o, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		fflush(stdout);
		json_decref(o);
		return;
	}
	fprintf(stderr, "%s: %s%s\n", cli_prog, kind, msg);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

static bool log_verbose;

static void log_stderr(int level, const char *msg)
{
	if (level == VCPUSTAT_LOG_WARN || log_verbose)
		fprintf(stderr, "%s: %s%s\n", cli_prog, level == VCPUSTAT_LOG_WARN ? "" : "libbpf: ", msg);
}

void cli_setup_log(bool verbose)
{
	log_verbose = verbose;
	vcpustat_set_log(log_stderr, verbose ? VCPUSTAT_LOG_DEBUG : VCPUSTAT_LOG_WARN);
}

int cli_open_live(struct vcpustat **out, const struct vcpustat_options *opts, bool verbose, bool quiet)
{
	const struct vcpustat_prog *progs;
	struct vcpustat *vs;
	char msg[256];
	size_t n, i;
	int err;

	*out = NULL;
	err = vcpustat_check_privileges(msg, sizeof(msg));
	if (err) {
		cli_err("%s", msg);
		return err == -EPERM ? CLI_NOPERM : CLI_FAIL;
	}
	/* libbpf's own warnings are noise unless asked for: our messages say what failed */
	vcpustat_set_log(verbose ? log_stderr : NULL, VCPUSTAT_LOG_DEBUG);
	log_verbose = verbose;
	err = vcpustat_open(&vs, opts);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			cli_err("cannot load the BPF programs: %s (needs CAP_BPF and CAP_PERFMON, or root)",
				strerror(-err));
		else
			cli_err("cannot load the BPF programs: %s (run with -v to see libbpf's log)", strerror(-err));
		return err == -EPERM || err == -EACCES ? CLI_NOPERM : CLI_FAIL;
	}
	err = vcpustat_attach(vs);
	n = vcpustat_progs(vs, &progs);
	if (err < 0) {
		for (i = 0; i < n; i++)
			if (progs[i].required && progs[i].status == VCPUSTAT_PROG_FAILED)
				cli_err("%s: %s", progs[i].name, progs[i].message);
		vcpustat_close(vs);
		return err == -EPERM || err == -EACCES ? CLI_NOPERM : CLI_FAIL;
	}
	if (!quiet)
		for (i = 0; i < n; i++)
			if (progs[i].status == VCPUSTAT_PROG_FAILED || progs[i].status == VCPUSTAT_PROG_MISSING)
				cli_warn("%s: %s; continuing without it", progs[i].tracepoint, progs[i].message);
	err = vcpustat_seed(vs, NULL);
	if (err < 0 && !quiet)
		cli_warn("cannot look for running VMs in /proc: %s", strerror(-err));
	*out = vs;
	return 0;
}
