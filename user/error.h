/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * error.h - how library code reports a failure the user must understand:
 * a negative errno as the return value plus, where the caller passed one,
 * a sentence naming what failed and where (file, offset or line, option).
 * Library code never prints and never exits.
 */
#ifndef VCPUSTAT_ERROR_H
#define VCPUSTAT_ERROR_H

struct vcpustat_error {
	int code;      /* negative errno, 0 if none */
	char msg[512]; /* "FILE: offset 4096: bad checksum in node 3", ... */
};

/* Fill e (if non-NULL) and return code (a negative errno). */
int verror(struct vcpustat_error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
