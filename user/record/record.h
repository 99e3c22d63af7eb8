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
#include <stdio.h>
#include <jansson.h>
#include "vcpustat_abi.h"
#include "util/util.h"
#include "sht/sht.h"
#include "base/base.h"

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
/* The cgroup (cgroup_from_proc()) and PID namespace inode of a thread or VM process; NULL if unknown. */
typedef const char *(*recorder_cgroup_fn)(void *ctx, uint32_t tid, uint64_t *pidns);

struct recorder_opts {
	const char *path;	 /* the file; with rotation, the first of a series (see below) */
	uint64_t mono_start_ns;	 /* CLOCK_MONOTONIC of t = 0 in the files */
	uint64_t real_start_ns;	 /* CLOCK_REALTIME at the same moment */
	const struct sht_meta *meta; /* extra metadata for every file */
	size_t nmeta;
	recorder_vm_name_fn vm_name;
	recorder_thread_name_fn thread_name;
	recorder_cgroup_fn cgroup; /* VMs (every level) and host threads (level full); may be NULL */
	void *ctx;
	uint64_t reorder_ns; /* records are sorted within this window (0: 20 ms) */
	uint64_t max_bytes;  /* rotate when a file reaches this size (0: never) */
	uint64_t rotate_ns;  /* rotate after this much time (0: never) */
	unsigned int keep;   /* with rotation: keep this many files, delete older ones (0: all) */
	bool no_sync;	     /* no fdatasync at close (tests, benchmarks) */
	/*
	 * The file appears only whole (import, replay): it is written under a
	 * temporary name next to path and renamed over path when the recorder
	 * closes successfully (a device or a FIFO is written in place, at that
	 * moment: util's outfile rule); a failure, or a recorder freed on an
	 * error path, removes it and leaves path as it was. Not with rotation.
	 */
	bool atomic;
};

/* The smallest max_bytes: a file with nothing in it (its header, one node, its footer). */
uint64_t recorder_min_size(void);
/*
 * The limits of the options, checked by recorder_open and before it by the
 * record command, before anything loads: no rotation of an atomic file, no
 * max_bytes under recorder_min_size(), no keep without rotation. 0, or
 * -EINVAL with err saying which (in the record command's option words).
 */
int recorder_opts_check(const struct recorder_opts *o, struct vcpustat_error *err);

/*
 * Open the recorder and its first file. With rotation (max_bytes or
 * rotate_ns), files are named <path minus .sht>-<YYYYmmddTHHMMSS>.sht from the
 * wall-clock time of their first instant; each starts with the current value
 * of every attribute. Rotation refuses a path written in place (a device, a
 * FIFO: util's outfile rule), whose name is no name for a series.
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
 * The end of a recording: recorder_close(), then *st (may be NULL): what was
 * written, the intervals the close ended included (the files' own count).
 * *rp is NULL afterwards, whatever the outcome.
 */
int recorder_finish(struct recorder **rp, uint64_t end_mono_ns, struct recorder_stats *st, struct vcpustat_error *err);

/*
 * ---- session.c: a recording session ----
 * Where a stream of records goes, whatever produces it (live/ drains the
 * kernel's ring buffer into it, replay a capture, benchmarks their own):
 * the recorder, a capture of the raw events, the names of VMs and threads,
 * the lost-record count and the flush cadence.
 */

struct rec_session;

/* A recording's metadata (/meta/... in its files; a capture's text). */
#define RECORD_MAX_META 48
struct record_meta {
	struct sht_meta meta[RECORD_MAX_META];
	char key[RECORD_MAX_META][64], value[RECORD_MAX_META][1024];
	size_t n;
};
/* Add a copy of key=value: 0, or -ENOSPC when full. */
int record_meta_add(struct record_meta *m, const char *key, const char *value);
/* The host's CPU topology (sysfs under sysfs, NULL: /sys) as topology.* keys, the parts known. */
void record_meta_topology(struct record_meta *m, const char *sysfs);
/*
 * What a live recording says of itself (host, kernel, tool, command from
 * argv, level), then the user's (its --meta).
 */
void record_meta_live(struct record_meta *m, enum vcpustat_record_level level, int argc, char **argv,
		      const struct record_meta *user);
/*
 * The keys a live recording writes itself (record_meta_live(), and "cpus" in
 * its capture); one ending in '.' is a prefix. A user's --meta may take none.
 * NULL-terminated.
 */
extern const char *const record_meta_live_keys[];
/* key is one of reserved (NULL-terminated; an entry ending in '.' is a prefix); reserved may be NULL. */
bool record_meta_reserved(const char *key, const char *const *reserved);
/* A capture's metadata text ("key=value" lines), then source=replay. */
void record_meta_replay(struct record_meta *m, const char *text);

/* "vcpu" / "full" <-> the level: 0, or -EINVAL for another name. */
int record_level_parse(const char *name, enum vcpustat_record_level *level);
const char *record_level_name(enum vcpustat_record_level level);

struct rec_session_opts {
	/*
	 * The files (path, rotation, metadata, start). Its vm_name/thread_name
	 * name VMs and threads when names is NULL (replay: the capture's names).
	 */
	struct recorder_opts rec;
	const struct record_meta *meta; /* the files' metadata (copied); NULL: rec.meta */
	bool proc_names;       /* name VMs and threads from /proc, now (live) */
	const char *capture;   /* also write the raw events here (NULL: no capture) */
	unsigned int nr_cpus;  /* the capture's "cpus" */
};

struct rec_session_stats {
	uint64_t records, intervals, files;
	uint64_t events;    /* raw events in the capture (replay: replayed) */
	uint64_t lost;	    /* the last lost-record total given */
	uint64_t freed;	    /* old files of the series deleted to make room (--keep on a full disk) */
	double seconds;	    /* from the start to the end of the recording */
	char path[4096];    /* the last file */
	char capture[4096]; /* the capture ("": none) */
};

int rec_session_open(struct rec_session **s, const struct rec_session_opts *opts, struct vcpustat_error *err);
/* A record and a raw event: vcpustat_record_fn and vcpustat_event_fn, ctx the session. */
int rec_session_record(void *s, const struct vcpustat_record *rec);
int rec_session_event(void *s, const struct vcpustat_event *ev);
/* The kernel's lost-record total at mono time now (every second); flush: make it all durable. */
int rec_session_tick(struct rec_session *s, uint64_t now, uint64_t lost, bool flush);
/* Whether a call failed (the first error in *err): the negative errno, or 0. */
int rec_session_failed(const struct rec_session *s, struct vcpustat_error *err);
/* Every interval ended at end, every file sealed and closed; *st; frees *s (NULL after). */
int rec_session_finish(struct rec_session **s, uint64_t end, struct rec_session_stats *st,
		       struct vcpustat_error *err);
/* The error path: what was sealed stays readable (an atomic file is removed). */
void rec_session_close(struct rec_session *s, uint64_t end);
/*
 * A finished recording's stats, as `vcpustat record` and `replay` report
 * them: lines of text for people (prog: the name to start them with; behind:
 * the newest records could not be drained), or a JSON object (docs/json.md).
 */
void rec_session_print(FILE *f, const char *prog, const struct rec_session_stats *st, bool behind);
json_t *rec_session_json(const struct rec_session_stats *st, bool behind);

/*
 * Replay a capture (`vcpustat replay`): its events through the kernel's
 * handler in user space into the file out (written whole or not at all),
 * named as the capture names them, with its lost-record totals; *st.
 */
struct capture_reader;
int replay_capture(struct capture_reader *cap, const char *out, struct rec_session_stats *st,
		   struct vcpustat_error *err);

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
/* Record a thread's (or a VM process's) cgroup path and PID namespace inode. */
int capture_write_cgroup(struct capture_writer *w, uint32_t tid, uint64_t pidns, const char *path,
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
/* The cgroup and PID namespace recorded for thread (or VM process) tid, or NULL. */
const char *capture_thread_cgroup(const struct capture_reader *r, uint32_t tid, uint64_t *pidns);
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
	unsigned int max_details; /* 0: VCPUSTAT_MAX_DETAILS and VCPUSTAT_MAX_FAULT_PAGES, else both this */
};

int replay_new(struct replay **out, const struct replay_options *opts);
void replay_free(struct replay *r);

/* Run one event through the handler. A non-zero return from on_record is returned. */
int replay_event(struct replay *r, const struct vcpustat_event *ev);

/* Everything the maps hold now, in the live layer's struct (dead vCPUs are reaped). */
int replay_snapshot(struct replay *r, struct vcpustat_snapshot *snap);

#endif /* VCPUSTAT_RECORD_H */
