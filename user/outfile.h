/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * outfile.h - writing an output file so that readers never see half of it:
 * the content goes to a temporary file in the same directory, which is then
 * renamed over the target (node_exporter's textfile collector, scrapers and
 * browsers read either the old or the new file). A target that exists and is
 * not a regular file (/dev/stdout, a FIFO, /dev/null) is written in place,
 * never replaced.
 */
#ifndef VCPUSTAT_OUTFILE_H
#define VCPUSTAT_OUTFILE_H

#include <stddef.h>
#include "error.h"

/*
 * Can path be written? Creates and removes a temporary file next to it (or
 * checks a non-regular target opens for writing). Fills err with a sentence
 * naming the path and the reason; returns 0 or a negative errno.
 */
int outfile_check(const char *path, struct vcpustat_error *err);

/* Write buf to path atomically (see above); "-" is stdout. Mode 0644. */
int outfile_write(const char *path, const void *buf, size_t len, struct vcpustat_error *err);

#endif
