/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture.h - capture files: the raw events the kernel handled, in blocks
 * with checksums (docs/capture-format.md). Written by `vcpustat record
 * --capture`, read by `vcpustat replay`.
 */
#ifndef VCPUSTAT_CAPTURE_H
#define VCPUSTAT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"
#include "vcpustat_abi.h"

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
void capture_close_reader(struct capture_reader *r);

#endif
