/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* util.h - small helpers several parts of libvcpustat share. */
#ifndef VCPUSTAT_UTIL_H
#define VCPUSTAT_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

/* write() all of buf, retrying on EINTR and short writes; 0 or a negative errno. */
int write_all(int fd, const void *buf, size_t len);

/* s escaped for XML/HTML text and attribute values (control characters become '?'). */
void xml_escape(FILE *f, const char *s);

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns() and of the records. */
__u64 vcpustat_now_ns(void);

#endif
