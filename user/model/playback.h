/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * playback.h - time travel over a recording, window by window.
 */
#ifndef VCPUSTAT_MODEL_PLAYBACK_H
#define VCPUSTAT_MODEL_PLAYBACK_H

#include <stdbool.h>
#include <stdint.h>
#include "model/summary.h"

/*
 * ---- playback.c: time travel over a recording ----
 * Time travel over a recording (`vcpustat top --file`, and
 * `--demo` without /dev/kvm): the live view's windows one after another,
 * from any instant of an SHT file, as `atop -r` plays its logs. Every window
 * is the report's window model (report_build): a step shows exactly what
 * `vcpustat report --from T1 --to T2` shows for the same window.
 *
 * Windows are [t, t + step); the last one ends at the end of what the file
 * holds (an unfinished file ends at its last sealed node), so it may be
 * shorter, or up to a tenth of a step longer. Stepping moves t by whole
 * windows; seeking puts t anywhere.
 */

struct playback {
	struct sht_reader *r; /* owned */
	const char *path;
	uint64_t start, end; /* what can be played: [start, end), ns since the trace start */
	uint64_t step;	     /* window length, ns */
	uint64_t t;	     /* the current window starts here */
};

/* Open path (a .sht file) at its start. 0, or a negative errno with err naming the file. */
int playback_open(struct playback *pb, const char *path, uint64_t step_ns, struct vcpustat_error *err);
void playback_close(struct playback *pb);

/* The current window [*t1, *t2). */
void playback_window(const struct playback *pb, uint64_t *t1, uint64_t *t2);
/* The current window is the last one of the file. */
bool playback_at_end(const struct playback *pb);
/* Move by n windows (n < 0: back), stopping at the first and the last; returns the windows moved. */
long playback_step(struct playback *pb, long n);
/*
 * The current window starts at t (ns since the trace start); -ERANGE, with
 * err saying what the file holds, if t is at or after its end.
 */
int playback_seek(struct playback *pb, uint64_t t, struct vcpustat_error *err);
/* Parse a time as `report --from` does (sht_parse_time) and seek to it. */
int playback_seek_str(struct playback *pb, const char *s, struct vcpustat_error *err);

/* The summary of the current window: report_build(). */
int playback_build(struct playback *pb, struct summary *s, const struct summary_filter *f, bool *has_culprits,
		   struct vcpustat_error *err);

/*
 * What the recording is, from its metadata (docs/json.md "source"): file,
 * host, recorded (wall time of its start), command, workload, level, duration_s.
 */
json_t *playback_source_json(const struct playback *pb);
/* "recording of HOST at TIME (WHAT RAN)" for people. */
void playback_label(const struct playback *pb, char *buf, size_t len);
/* "12.000" : seconds since the start of the file, for positions. */
const char *playback_seconds(uint64_t t, char *buf, size_t len);

#endif /* VCPUSTAT_MODEL_PLAYBACK_H */
