/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace.h - reading kernel traces made by other tracers (ftrace text from
 * tracefs or `trace-cmd report`, LTTng CTF) as the events vcpustat's handler
 * runs on, plus the guest-side facts the multi-level analysis and the clock
 * synchronization need. docs/import.md documents what is accepted.
 *
 * One interface over the formats: trace_open() looks at the path (a CTF
 * directory or metadata file, else ftrace text), trace_next() returns events
 * in the order of the trace. Readers never print; a malformed input gives
 * one error naming the file and line (or, with `lenient`, is counted and the
 * first messages kept for the end-of-run report).
 */
#ifndef VCPUSTAT_TRACE_H
#define VCPUSTAT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"
#include "vcpustat_abi.h"

/*
 * One event of a trace. ev is what the handler runs on (include/vcpustat_handler.h),
 * filled as the BPF programs fill it, except the process ids: ev.tgid and
 * ev.tgid2 are 0 unless the event itself carries them; the importer fills them
 * from what the trace says about thread groups (pid/tgid below).
 *
 *   SWITCH        tid = prev, tid2 = next, arg0 = prev_state (kernel TASK_* bits),
 *                 arg1 = preempt, comm = prev_comm, next_comm = next_comm
 *   WAKEUP(_NEW)  tid = woken thread, comm = its name, arg0 = target CPU
 *   MIGRATE       tid, comm, arg0 = dest CPU, arg1 = orig CPU
 *   PROCESS_EXIT  tid, comm, arg0 = group_dead (0 when the trace does not say)
 *   KVM_*         tid = pid (the current thread), comm = its name
 *   NONE          a guest sync marker: marker = 'a' or 'd', key
 */
struct trace_event {
	struct vcpustat_event ev;
	char next_comm[16];
	uint32_t pid;	   /* the current thread (ftrace: the TASK-PID column) */
	int64_t tgid;	   /* its process (the TGID column, LTTng's pid context), -1 if unknown */
	char cur_comm[16]; /* its name ("<...>" when ftrace did not know it) */
	int marker;	   /* 'a' / 'd': "vcpustat_sync: a k=<key>" written to trace_marker */
	uint64_t key;
	uint64_t where;	   /* ftrace: line number (from 1); CTF: event index (from 1) */
};

enum trace_format {
	TRACE_FTRACE = 1, /* text: /sys/kernel/tracing/trace, trace_pipe, trace-cmd report */
	TRACE_CTF,	  /* LTTng kernel trace (CTF 1.8), through libbabeltrace2 */
};

struct trace_opts {
	bool lenient;	    /* count malformed lines/events and go on, instead of failing */
	unsigned int isa;   /* KVM_ISA_VMX / KVM_ISA_SVM for exit reasons given as numbers
			       or ambiguous names (0: guess, VMX if nothing tells) */
	int parse_ahead;    /* ftrace text: parse in a second thread while the caller consumes:
			       1 always, -1 never, 0 for files of 8 MiB or more */
};

/* What a reader saw: the end-of-run report. */
#define TRACE_KEEP_MESSAGES 5
struct trace_stats {
	uint64_t lines;		  /* ftrace: lines read (CTF: events read) */
	uint64_t events;	  /* events returned by trace_next() */
	uint64_t skipped;	  /* events the analysis does not use (skipped by name) */
	uint64_t headers;	  /* comment and header lines */
	uint64_t malformed;	  /* lenient: malformed lines / events skipped */
	uint64_t lost;		  /* events the tracer says it lost (ftrace LOST lines, CTF discarded) */
	uint64_t lost_lines;	  /* lines (or packets) that reported losses */
	uint64_t out_of_order;	  /* events older than an event before them */
	uint64_t max_backstep_ns; /* the largest such step back */
	uint64_t unknown_reasons; /* kvm_exit reason names not in include/exit_reasons.h */
	uint64_t first_ns, last_ns; /* first and newest timestamp returned */
	char messages[TRACE_KEEP_MESSAGES][256]; /* lenient: the first malformed lines' errors */
	unsigned int nmessages;
};

struct trace_reader;

/*
 * Open path ("-": standard input, ftrace text only). A directory or a file
 * named "metadata" (or starting like CTF metadata) is read as CTF, anything
 * else as ftrace text. A trace-cmd trace.dat or another binary file is
 * refused with a message that says what to do.
 */
int trace_open(struct trace_reader **r, const char *path, const struct trace_opts *opts, struct vcpustat_error *err);
/*
 * The next event: 1, 0 at the end, or a negative errno (err says file:line:
 * what). The statistics are exact at the end (0 or an error); with parse_ahead
 * they may run ahead of the events returned so far.
 */
int trace_next(struct trace_reader *r, struct trace_event *ev, struct vcpustat_error *err);
/* Start again from the first event (stats are reset). */
int trace_rewind(struct trace_reader *r, struct vcpustat_error *err);
const struct trace_stats *trace_get_stats(const struct trace_reader *r);
enum trace_format trace_get_format(const struct trace_reader *r);
const char *trace_path(const struct trace_reader *r);
void trace_close(struct trace_reader *r);

#endif
