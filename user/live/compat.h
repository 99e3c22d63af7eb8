/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat.h - the live layer's probes of the kernel and its readers of
 * tracepoint formats (compat.c), for the loader and its tests. What a
 * caller outside live/ needs of them is in live.h (struct vcpustat_kernel).
 */
#ifndef VCPUSTAT_LIVE_COMPAT_H
#define VCPUSTAT_LIVE_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "live/live.h"

#define COMPAT_TRACEFS "/sys/kernel/tracing"

/* A pidfd for thread tid (PIDFD_THREAD, Linux 6.9), or -1 with errno set. */
int compat_thread_pidfd(pid_t tid);

/* Where tracefs is mounted (its usual place, or under debugfs), or NULL. */
const char *compat_tracefs(void);
/* Mount tracefs at COMPAT_TRACEFS where it is nowhere (as perf and bpftrace do); 0 or -errno. */
int compat_ensure_tracefs(bool *mounted);
/* Does tracefs list tracepoint category:event? (false without tracefs) */
bool compat_tracepoint_in_tracefs(const char *category, const char *event);

/* One field wanted from a tracepoint's format file. */
struct compat_format_field {
	const char *name;
	struct vcpustat_tp_field *field; /* filled: offset and size */
	bool required;			 /* its absence is an error */
	bool found;
};

/*
 * Read the fields of format file path into want[]'s fields: 0; -ENOENT (and
 * a sentence in err) when the file is missing or lacks a required field,
 * -EINVAL when a field's offset or size is beyond what the programs read.
 */
int compat_format_fields(const char *path, struct compat_format_field *want, size_t n, char *err, size_t err_len);

/*
 * The fields a classic tp/ program on category:event reads (kvm_entry,
 * kvm_exit, kvm_page_fault, kvm_apic_accept_irq), from tracefs, into fields.
 */
int compat_tp_fields(const char *category, const char *event, struct vcpustat_tp_fields *fields, char *err,
		     size_t err_len);

#endif /* VCPUSTAT_LIVE_COMPAT_H */
