/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * binary_internal.h - what the two binary-trace readers (ctf.c, LTTng's CTF
 * through libbabeltrace2; tracedat.c, trace.dat through libtraceevent) share:
 * the outcome of converting one event, and sched_switch's numeric
 * prev_state. Internal to user/import/.
 */
#ifndef VCPUSTAT_BINARY_INTERNAL_H
#define VCPUSTAT_BINARY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

/* One event converted: an event for the analysis, one it does not use, or malformed. */
enum conv { CONV_EVENT = 1, CONV_SKIP, CONV_BAD };

/*
 * prev_state as Linux >= 4.14 reports it, in trace.dat and LTTng alike (the
 * kernel's task-state report: 0 running, 1 S, 2 D, 4 T, 8 t, 0x10 X, 0x20 Z,
 * 0x40 P, 0x80 I; TASK_REPORT_MAX, 0x100, when the task was preempted), to
 * the kernel's TASK_* bits and preempt flag, as ftrace_prev_state reads the
 * same letters ("R+" = preempted). false if v is outside the report's range.
 */
static inline bool binary_prev_state(int64_t v, __u64 *state, __u64 *preempt)
{
	uint64_t s = (uint64_t)v & 0xff;

	if (v < 0 || v > 0x1ff)
		return false;
	*preempt = !!(v & 0x100);
	*state = s & 0x80 ? (s & ~0x80ull) | 0x402 : s; /* I: TASK_IDLE, a sleep, not an exit */
	return true;
}

#endif
