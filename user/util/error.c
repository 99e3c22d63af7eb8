// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "util/util.h"

int verror(struct vcpustat_error *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

const char *error_echo(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (n <= ERROR_ECHO_MAX)
		return s;
	snprintf(buf, len, "%.*s... (%zu bytes)", ERROR_ECHO_MAX - 16, s, n);
	return buf;
}
