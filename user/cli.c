// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
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
