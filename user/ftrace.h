/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ftrace.h - the ftrace text parser: one line of /sys/kernel/tracing/trace,
 * trace_pipe or `trace-cmd report` into a struct trace_event (trace.h).
 * The reader (trace_open) runs it over a file; the fuzz harness and the tests
 * call it directly. docs/import.md lists the layouts and events accepted.
 */
#ifndef VCPUSTAT_FTRACE_H
#define VCPUSTAT_FTRACE_H

#include <stddef.h>
#include <stdint.h>
#include "trace.h"

enum ftrace_line {
	FTRACE_EVENT = 1, /* *ev filled */
	FTRACE_SKIP,	  /* an event the analysis does not use */
	FTRACE_HEADER,	  /* blank, comment or header line (# ..., cpus=N, version = N, CPU n is empty) */
	FTRACE_LOST,	  /* "CPU:1 [LOST 123 EVENTS]": parser.lost = 123 */
	FTRACE_BAD,	  /* malformed: parser.why says what */
};

#define FTRACE_REASON_CACHE 64

struct ftrace_parser {
	unsigned int isa;      /* option: KVM_ISA_* for numeric/ambiguous exit reasons, 0 = guess */
	unsigned int seen_isa; /* the isa the trace's unambiguous exit-reason names showed */
	uint64_t lost;	       /* FTRACE_LOST: events lost */
	uint64_t unknown_reasons;
	char why[200];	       /* FTRACE_BAD: what is wrong, and where in the line */
	struct {
		char name[32];
		uint8_t len, isa;
		uint32_t code;
	} cache[FTRACE_REASON_CACHE]; /* exit-reason names already looked up */
};

void ftrace_parser_init(struct ftrace_parser *p, unsigned int isa);

/* Parse one line (without its '\n'; a trailing '\r' is ignored). */
enum ftrace_line ftrace_parse_line(struct ftrace_parser *p, const char *line, size_t len, struct trace_event *ev);

/*
 * A kvm_exit reason as printed ("MSR_WRITE", "npf", "DE excp", old style
 * "EXIT_IOIO", a number) to its code and isa. hint: the isa for numbers and
 * ambiguous names. Returns 0, or -1 if the name is unknown.
 */
int ftrace_exit_reason(const char *name, size_t len, unsigned int hint, uint32_t *code, uint32_t *isa);

/* The kernel TASK_* bits and preempt flag of a prev_state string ("R+", "S", "D|K"); -1 if malformed. */
int ftrace_prev_state(const char *s, size_t len, uint64_t *state, int *preempt);

#endif
