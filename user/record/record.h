/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * record.h - the stream of records and raw events, from the kernel or
 * replayed, and what becomes of it: State History Tree files (recorder.c),
 * capture files of the raw events (capture.c), and the kernel's handler run
 * in user space over a capture or an imported trace (replay.c). Records
 * (struct vcpustat_record) and events (struct vcpustat_event) are defined in
 * include/vcpustat_abi.h; the callbacks that carry them in model/model.h.
 */
#ifndef VCPUSTAT_RECORD_H
#define VCPUSTAT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vcpustat_abi.h"
#include "util/util.h"
#include "sht/sht.h"
#include "model/model.h"

/*
 * ---- recorder.c: records into State History Tree files ----
 * Turning the stream of records (struct vcpustat_record, from the
 * kernel's ring buffer or from replay) into State History Tree files, with
 * rotation. The attributes it writes are documented in docs/sht-attributes.md.
 */

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
	/*
	 * The file appears only whole (import, replay): it is written under a
	 * temporary name next to path and renamed over path when the recorder
	 * closes successfully; a failure, or a recorder freed on an error path,
	 * removes it and leaves path as it was. Not with rotation.
	 */
	bool atomic;
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

/*
 * Drain the reorder window, end every interval at end_mono_ns, close the file.
 * Frees r. The error path: an atomic recording's file is removed (path stays
 * as it was); only recorder_finish() puts it in place.
 */
int recorder_close(struct recorder *r, uint64_t end_mono_ns, struct vcpustat_error *err);

struct recorder_stats {
	uint64_t records;   /* records added */
	uint64_t late;	    /* arrived after the reorder window had passed them (clamped) */
	uint64_t intervals; /* intervals written, all files */
	uint64_t files;	    /* files written (1 + rotations) */
	uint64_t freed;	    /* files of the series deleted to make room on a full disk (keep) */
	uint64_t bytes;	    /* size of the current file */
	char path[4096];    /* the current file */
};
void recorder_get_stats(const struct recorder *r, struct recorder_stats *st);

/*
 * The end of a recording: *st as it stands (the records; the intervals and
 * bytes before the last ones close writes), then recorder_close(). *rp is
 * NULL afterwards, whatever the outcome.
 */
int recorder_finish(struct recorder **rp, uint64_t end_mono_ns, struct recorder_stats *st, struct vcpustat_error *err);

/*
 * ---- capture.c: raw events into capture files ----
 * Capture files: the raw events the kernel handled, in blocks
 * with checksums (docs/capture-format.md). Written by `vcpustat record
 * --capture`, read by `vcpustat replay`.
 */

#define CAPTURE_MAGIC "VCPUCAP"
#define CAPTURE_VERSION 1
#define CAPTURE_HEADER_SIZE 64
#define CAPTURE_BLOCK_HEADER 16
#define CAPTURE_BLOCK_EVENTS 4096 /* events per block the writer makes */
#define CAPTURE_MAX_BLOCK 65536	  /* events per block a reader accepts */
#define CAPTURE_MAX_META 65536

struct capture_writer;

/* Create path; meta is "key=value\n" text (may be NULL). */
int capture_create(struct capture_writer **w, const char *path, uint64_t mono_start_ns, uint64_t real_start_ns,
		   const char *meta, struct vcpustat_error *err);
int capture_write(struct capture_writer *w, const struct vcpustat_event *ev, struct vcpustat_error *err);
/* Record the name of VM tgid (a names block, after the events so far). */
int capture_write_name(struct capture_writer *w, uint32_t tgid, const char *name, struct vcpustat_error *err);
/* Record a host thread's name and process (level full). */
int capture_write_thread(struct capture_writer *w, uint32_t tid, uint32_t tgid, const char *name,
			 struct vcpustat_error *err);
/* Record the kernel's lost-record total at mono time t. */
int capture_write_lost(struct capture_writer *w, uint64_t t, uint64_t lost, struct vcpustat_error *err);
/* Record when the capture ended (CLOCK_MONOTONIC ns). */
int capture_write_end(struct capture_writer *w, uint64_t end_mono_ns, struct vcpustat_error *err);
/* Write the block being filled (the writer also does it every 100 ms of event time). */
int capture_flush(struct capture_writer *w, struct vcpustat_error *err);
/* Flush, close, free. */
int capture_close(struct capture_writer *w, struct vcpustat_error *err);
uint64_t capture_written(const struct capture_writer *w);

struct capture_reader;

struct capture_info {
	uint32_t version;
	uint64_t mono_start_ns, real_start_ns;
	const char *meta;     /* NUL-terminated metadata text */
	uint64_t file_size;
};

int capture_open(struct capture_reader **r, const char *path, struct vcpustat_error *err);
const struct capture_info *capture_get_info(const struct capture_reader *r);
/*
 * The next event: 1 and *ev filled, 0 at the end, or a negative errno with
 * err naming the file and offset (corruption, I/O error). A partial last
 * block (a killed writer) ends the capture: 0, and capture_truncated()
 * says how many bytes were ignored and where.
 */
int capture_next(struct capture_reader *r, struct vcpustat_event *ev, struct vcpustat_error *err);
uint64_t capture_truncated(const struct capture_reader *r, uint64_t *offset);
/* The name recorded for VM tgid, or NULL. */
const char *capture_vm_name(const struct capture_reader *r, uint32_t tgid);
/* The name and process recorded for host thread tid, or NULL. */
const char *capture_thread_name(const struct capture_reader *r, uint32_t tid, uint32_t *tgid);
/* The lost-record totals recorded: *n pairs (t, lost) in time order. */
const uint64_t (*capture_lost(const struct capture_reader *r, size_t *n))[2];
/* When the capture ended (0: not recorded, e.g. a killed writer). */
uint64_t capture_end(const struct capture_reader *r);
/* Make ro name VMs and threads as the capture r recorded them (replay); r outlives the recorder. */
void capture_name_recorder(struct capture_reader *r, struct recorder_opts *ro);
void capture_close_reader(struct capture_reader *r);

/*
 * ---- replay.c: the kernel's handler in user space ----
 * The BPF event handler run in user space. The same
 * include/vcpustat_handler.h code the kernel runs, over hash tables of the
 * same sizes, so replaying the events of a capture or of an imported trace
 * gives exactly the records and maps the kernel would have produced.
 */

struct replay;

struct replay_options {
	enum vcpustat_record_level record_level;
	vcpustat_record_fn on_record; /* called for every record, in order; may be NULL */
	void *ctx;
	unsigned int nr_cpus;	/* 0: 1024 */
	unsigned int max_vcpus; /* 0: VCPUSTAT_MAX_VCPUS, like the kernel maps */
	unsigned int max_vms, max_hists, max_culprits;
};

int replay_new(struct replay **out, const struct replay_options *opts);
void replay_free(struct replay *r);

/* Run one event through the handler. A non-zero return from on_record is returned. */
int replay_event(struct replay *r, const struct vcpustat_event *ev);

/* Everything the maps hold now, in the live layer's struct (dead vCPUs are reaped). */
int replay_snapshot(struct replay *r, struct vcpustat_snapshot *snap);

#endif /* VCPUSTAT_RECORD_H */
