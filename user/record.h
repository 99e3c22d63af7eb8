/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * record.h - turning the stream of records (struct vcpustat_record, from the
 * kernel's ring buffer or from replay) into State History Tree files, with
 * rotation. The attributes it writes are documented in docs/sht-attributes.md.
 */
#ifndef VCPUSTAT_RECORD_H
#define VCPUSTAT_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include "util/util.h"
#include "sht/sht.h"
#include "vcpustat_abi.h"

struct recorder;

/* The display name of VM tgid (as vcpustat shows it); called once per VM. */
typedef const char *(*recorder_vm_name_fn)(void *ctx, uint32_t tgid);
/* The name and process of a host thread (level full); may return NULL. */
typedef const char *(*recorder_thread_name_fn)(void *ctx, uint32_t tid, uint32_t *tgid);

struct recorder_opts {
	const char *path;	 /* the file; with rotation, the first of a series (see below) */
	uint64_t mono_start_ns;	 /* CLOCK_MONOTONIC of t = 0 in the files */
	uint64_t real_start_ns;	 /* CLOCK_REALTIME at the same moment */
	const struct sht_meta *meta; /* extra metadata for every file */
	size_t nmeta;
	recorder_vm_name_fn vm_name;
	recorder_thread_name_fn thread_name;
	void *ctx;
	uint64_t reorder_ns; /* records are sorted within this window (0: 20 ms) */
	uint64_t max_bytes;  /* rotate when a file reaches this size (0: never) */
	uint64_t rotate_ns;  /* rotate after this much time (0: never) */
	unsigned int keep;   /* with rotation: keep this many files, delete older ones (0: all) */
	bool no_sync;	     /* no fdatasync at close (tests, benchmarks) */
};

/*
 * Open the recorder and its first file. With rotation (max_bytes or
 * rotate_ns), files are named <path minus .sht>-<YYYYmmddTHHMMSS>.sht from the
 * wall-clock time of their first instant; each starts with the current value
 * of every attribute.
 */
int recorder_open(struct recorder **r, const struct recorder_opts *opts, struct vcpustat_error *err);

/* One record, in any order within the reorder window. */
int recorder_add(struct recorder *r, const struct vcpustat_record *rec, struct vcpustat_error *err);

/*
 * Attributes that do not come from records (the guest threads `vcpustat import`
 * adds): a handle for path (call once per path). recorder_set(): from mono time
 * ts on, the attribute holds v (SHT_INT, SHT_STR or SHT_NULL); it goes through
 * the reorder window with the records, so the two may be interleaved freely
 * within reorder_ns.
 */
int recorder_attr(struct recorder *r, const char *path, uint32_t *attr, struct vcpustat_error *err);
int recorder_set(struct recorder *r, uint32_t attr, uint64_t ts, const struct sht_value *v,
		 struct vcpustat_error *err);
/* The name VM tgid has in the files' paths (/vms/<name>/...), as the records use it; NULL: out of memory. */
const char *recorder_vm_path(struct recorder *r, uint32_t tgid);

/* The kernel's lost-record total (all kinds) at mono time t: stored in /meta/lost. */
int recorder_lost(struct recorder *r, uint64_t t, uint64_t lost, struct vcpustat_error *err);

/* Make what has been recorded up to now durable in the current file (seal its open node). */
int recorder_flush(struct recorder *r, struct vcpustat_error *err);

/* Drain the reorder window, end every interval at end_mono_ns, close the file. Frees r. */
int recorder_close(struct recorder *r, uint64_t end_mono_ns, struct vcpustat_error *err);

struct recorder_stats {
	uint64_t records;   /* records added */
	uint64_t late;	    /* arrived after the reorder window had passed them (clamped) */
	uint64_t intervals; /* intervals written, all files */
	uint64_t files;	    /* files written (1 + rotations) */
	uint64_t bytes;	    /* size of the current file */
	char path[4096];    /* the current file */
};
void recorder_get_stats(const struct recorder *r, struct recorder_stats *st);

#endif
