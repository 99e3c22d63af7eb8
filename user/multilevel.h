/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * multilevel.h - the multi-level analysis: what each guest thread really
 * experienced, from the guest's scheduler events (mapped to host time by the
 * clock synchronization) and the host's view of the vCPU it runs on.
 *
 * A guest thread's state (docs/import.md has the full rules):
 *   running         current on its guest CPU n, and vCPU n is in guest mode on the host
 *   virt_preempted  current on its guest CPU n, but vCPU n is not in guest mode
 *                   (preempted, waiting, blocked or in the hypervisor on the host):
 *                   the papers' PROCESS_VIRT_PREEMPTED, time lost to the host
 *   preempted       switched out by the guest's scheduler while runnable
 *   wait            woken up, not yet running in the guest
 *   blocked         switched out sleeping
 * written as /vms/<vm>/threads/<tid>/state (string), with /vms/<vm>/threads/<tid>/name
 * and /vms/<vm>/vcpus/<n>/guest_tid (the guest thread vCPU n runs, 0 = idle).
 *
 * The analysis is fed in host time order: ml_host_record() with every record
 * of the host's handler before it goes to the recorder (guest events up to its
 * time are applied first), then ml_finish(). Attribute changes go to the
 * recorder (recorder_set) at the time they happen; several changes at one
 * instant are written once, with the last value.
 */
#ifndef VCPUSTAT_MULTILEVEL_H
#define VCPUSTAT_MULTILEVEL_H

#include <stdbool.h>
#include <stdint.h>
#include "util/util.h"
#include "record/record.h"

enum ml_guest_state {
	ML_RUNNING = 0,
	ML_VIRT_PREEMPTED,
	ML_PREEMPTED,
	ML_WAIT,
	ML_BLOCKED,
	ML_NR_STATES,
};

/* "running", "virt_preempted", "preempted", "wait", "blocked" */
const char *ml_state_name(unsigned int state);
int ml_state_from_name(const char *s);

enum ml_event_type {
	ML_EV_SWITCH = 1, /* on guest CPU cpu: tid (prev) out, tid2 (next) in */
	ML_EV_WAKEUP,	  /* tid woken */
	ML_EV_EXIT,	  /* tid exited */
};

#define ML_F_RUNNABLE 0x1 /* SWITCH: prev stays runnable (preempted) */
#define ML_F_EXITING 0x2  /* SWITCH: prev is exiting (state X, Z) */

/* One guest scheduler event, its time already on the host clock. */
struct ml_guest_event {
	uint64_t ts;  /* host ns */
	uint32_t tid, tid2;
	uint32_t cpu; /* guest CPU = vCPU index */
	uint8_t type; /* enum ml_event_type */
	uint8_t flags;
	char comm[16];	/* tid's name (prev's for a switch), "" if unknown */
	char comm2[16]; /* SWITCH: next's name */
};

struct ml_guest_stats {
	uint64_t applied;     /* guest events applied */
	uint64_t after_end;   /* guest events after the host trace's end: not used */
	uint64_t threads;     /* guest threads seen */
	uint64_t host_states; /* host vCPU state changes of this VM seen */
};

struct ml;

/*
 * start_ns: the host time of the file's t = 0 (earlier guest events set the
 * initial values at that instant).
 */
int ml_new(struct ml **m, struct recorder *rec, uint64_t start_ns);
void ml_free(struct ml *m);

/*
 * The guest of VM tgid: its events (n of them, sorted by ts; the array must
 * outlive m). host_mode_known: the host trace shows this VM's kvm_entry /
 * kvm_exit; when false, a vCPU on a CPU in HOST state counts as in guest mode
 * (hosts where those tracepoints do not fire).
 */
int ml_add_guest(struct ml *m, uint32_t tgid, const struct ml_guest_event *ev, size_t n, bool host_mode_known,
		 struct vcpustat_error *err);

/* A record of the host's handler (any VM), before it goes to the recorder. */
int ml_host_record(struct ml *m, const struct vcpustat_record *rec, struct vcpustat_error *err);

/* Apply the guest events up to end_ns (the end of the host trace) and write the last changes. */
int ml_finish(struct ml *m, uint64_t end_ns, struct vcpustat_error *err);

/* Statistics of the i-th guest (in ml_add_guest order). */
void ml_get_stats(const struct ml *m, size_t i, struct ml_guest_stats *st);

#endif
