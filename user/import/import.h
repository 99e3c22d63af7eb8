/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * import.h - offline analysis of traces made by other tracers: reading them
 * (trace.c: ftrace text through ftrace.c, LTTng CTF through ctf.c, trace-cmd's
 * trace.dat through tracedat.c) as the events the kernel's handler runs on;
 * the host trace replayed through that handler (record/record.h, level full)
 * into a State History Tree; guest traces synchronized to the host's clock
 * from the vcpustat_sync protocol (sync/sync.h) and merged by the multi-level
 * analysis (multilevel.c).
 * docs/import.md describes the whole of it.
 */
#ifndef VCPUSTAT_IMPORT_H
#define VCPUSTAT_IMPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include "vcpustat_abi.h"
#include "util/util.h"
#include "sht/sht.h"
#include "record/record.h"
#include "sync/sync.h"

/*
 * ---- trace.c: reading kernel traces ----
 * Reading kernel traces made by other tracers (ftrace text from
 * tracefs or `trace-cmd report`, LTTng CTF, trace-cmd's trace.dat) as the
 * events vcpustat's handler runs on, plus the guest-side facts the
 * multi-level analysis and the clock synchronization need. docs/import.md
 * documents what is accepted.
 *
 * One interface over the formats: trace_open() looks at the path (a file
 * starting with trace-cmd's magic, a CTF directory or metadata file, else
 * ftrace text), trace_next() returns events in the order of the trace.
 * Readers never print; a malformed input gives one error naming the file and
 * line (or record), or, with `lenient`, is counted and the first messages
 * kept for the end-of-run report.
 */

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
	uint64_t where;	   /* ftrace: line number (from 1); CTF, trace.dat: event/record index (from 1) */
};

/*
 * A batch of decoded events, for the readers that a library's callbacks feed
 * in batches (CTF, trace.dat): pushed at the end, handed out from pos.
 */
struct trace_batch {
	struct trace_event *ev;
	size_t n, pos, cap;
};
/* Append a copy of t, growing the batch; 0 or -ENOMEM. */
int trace_batch_push(struct trace_batch *b, const struct trace_event *t);

enum trace_format {
	TRACE_FTRACE = 1, /* text: /sys/kernel/tracing/trace, trace_pipe, trace-cmd report */
	TRACE_CTF,	  /* LTTng kernel trace (CTF 1.8), through libbabeltrace2 */
	TRACE_TRACEDAT,	  /* trace-cmd's binary trace.dat, through libtracecmd and libtraceevent */
	TRACE_CAPTURE,	  /* vcpustat record --capture: the handler's own events (host traces only) */
};

struct trace_opts {
	bool lenient;	    /* count malformed lines/events and go on, instead of failing */
	unsigned int isa;   /* KVM_ISA_VMX / KVM_ISA_SVM for exit reasons given as numbers
			       or ambiguous names (0: guess, VMX if nothing tells) */
	int parse_ahead;    /* ftrace text: parse in a second thread while the caller consumes:
			       1 always, -1 never, 0 for files of 8 MiB or more */
	unsigned int nr_cpus; /* CPUs an event may name: 0 .. nr_cpus - 1 (0: 65536, what a record
				 holds); an event on another is malformed (import: its --cpus) */
};

/*
 * Whether the CPUs ev names (the one it happened on, a wakeup's target, a
 * migration's two) are below o->nr_cpus; if not, what is wrong in why[n].
 * Every reader checks its events with it, so a CPU never wraps to another.
 */
bool trace_cpus_ok(const struct trace_opts *o, const struct vcpustat_event *ev, char *why, size_t n);

/* What a reader saw: the end-of-run report. */
#define TRACE_KEEP_MESSAGES 5
struct trace_stats {
	uint64_t lines;		  /* ftrace: lines read (CTF: events read; trace.dat: records read) */
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
 * Open path ("-": standard input, ftrace text only). A regular file that
 * starts with trace-cmd's magic ("\x17\x08\x44tracing") is read as a
 * trace.dat; a directory or a file named "metadata" (or starting like CTF
 * metadata) as CTF; anything else as ftrace text. A trace.dat on a pipe or
 * another binary file is refused with a message that says what to do.
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
/* The capture a TRACE_CAPTURE reader reads (its VM and thread names, lost counts), else NULL. */
struct capture_reader *trace_get_capture(const struct trace_reader *r);
void trace_close(struct trace_reader *r);

/*
 * ---- ftrace.c: the ftrace text parser ----
 * The ftrace text parser: one line of /sys/kernel/tracing/trace,
 * trace_pipe or `trace-cmd report` into a struct trace_event (above).
 * The reader (trace_open) runs it over a file; the fuzz harness and the tests
 * call it directly. docs/import.md lists the layouts and events accepted.
 */

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

/*
 * ---- multilevel.c: the multi-level analysis ----
 * The multi-level analysis: what each guest thread really
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

/*
 * A nested guest (L2) of the guest added parent-th (its L1, which runs L2's
 * VM as a hypervisor), name: L2's VM as L1's trace names it (pid<N>):
 * written as /vms/<L1's vm>.<name>/... Its events ev (L2's scheduler),
 * and vev, the states of L2's vCPUs as L1's own trace shows them (n and nv,
 * each sorted by ts, host time; the arrays must outlive m). mode_known: L1's
 * trace shows L2's kvm_entry/kvm_exit. An L2 thread current on L2 CPU n
 * runs when L2's vCPU n is in guest mode in L1 and the L1 vCPU that runs it
 * is in guest mode on the host; vCPU n's state on the host's timeline is
 * written too (/vms/<vm>/vcpus/<n>/state: L1's view where it is not in guest
 * mode, else the host's view of that L1 vCPU).
 */
struct ml_vcpu_event {
	uint64_t ts;   /* host ns */
	uint32_t vcpu; /* L2's vCPU index */
	uint16_t cpu;  /* the L1 CPU (= L1's vCPU index) it is on */
	uint8_t state; /* enum vcpu_fsm_state in L1's view; VCPU_UNKNOWN: gone */
};
int ml_add_nested(struct ml *m, size_t parent, const char *name, const struct ml_guest_event *ev, size_t n,
		  const struct ml_vcpu_event *vev, size_t nv, bool mode_known, struct vcpustat_error *err);

/* Statistics of the i-th guest (in ml_add_guest / ml_add_nested order). */
void ml_get_stats(const struct ml *m, size_t i, struct ml_guest_stats *st);

/*
 * ---- import.c: the importer ----
 * A host trace replayed through the kernel's own event handler (replay.c,
 * level full) into a State History Tree (recorder.c); guest traces
 * synchronized and merged by the multi-level analysis (above).
 */

/* --vm-name PID=NAME: the display name of the VM whose VMM process is PID. */
struct import_vm_name {
	uint32_t pid;
	const char *name;
};

/* --vm NAME=TID,TID,...: these threads are the vCPUs of VM NAME (traces without thread groups). */
struct import_vm_threads {
	const char *name;
	const uint32_t *tids;
	size_t ntids;
};

/*
 * --guest VM=TRACE: the guest trace of VM (its name, or its pid).
 * --guest VM@L1=TRACE: VM is a nested guest (L2) that the guest L1 (another
 * --guest, without @) runs as a hypervisor: VM is named as in L1's trace
 * (pid<N> or N, its VMM's pid there), synchronized to L1's clock through
 * L1's trace, then to the host's through L1's transform (composed).
 */
struct import_guest {
	const char *vm;
	const char *path;
	const char *parent; /* L1's VM, as in its own --guest; NULL: a guest of the host */
};

struct import_opts {
	const char *host; /* the host trace */
	const struct import_guest *guests;
	size_t nguests;
	const char *out; /* the .sht file */
	struct trace_opts trace;
	const struct import_vm_name *names;
	size_t nnames;
	const struct import_vm_threads *vms;
	size_t nvms;
	unsigned int nr_cpus; /* size of the handler's CPU table (0: 1024) */
	const char *command;  /* stored in the file's metadata (may be NULL) */
	const struct sht_meta *meta; /* more metadata (--meta: host, workload, recorded, ...) */
	size_t nmeta;
	bool no_sync;	      /* no fdatasync when the file is closed (tests, benchmarks) */
};

struct import_guest_result {
	char vm[64];	/* the VM's name in the file */
	uint32_t tgid;	/* its id (VMM pid, or see docs/import.md) */
	struct trace_stats trace;
	struct vcpustat_sync_result sync;
	struct vcpustat_sync_protocol_stats protocol;
	size_t na, nb, nc, nd;	/* sync events found: guest markers a/d, host b/c */
	uint64_t unmappable;	/* guest events whose host time is out of range (dropped) */
	bool host_mode_known;	/* the host trace shows this VM's kvm_entry/kvm_exit (nested: L1's trace) */
	struct ml_guest_stats ml;
	/* a nested guest: its L1 (the name in the file), its transform to L1's clock (sync.transform is
	   the composed one, to the host's), and how many of its vCPUs' states L1's trace gave */
	char parent[64];
	struct vcpustat_sync_transform to_parent;
	uint64_t parent_states;
};

struct import_result {
	struct trace_stats host;
	bool two_passes;	 /* the host trace was read twice (sync events, thread groups) */
	uint64_t records;	 /* handler records */
	uint64_t intervals;	 /* SHT intervals written */
	uint64_t late;		 /* records clamped by the recorder (older than its reorder window) */
	uint64_t vms, vcpus;	 /* VMs and vCPU threads found */
	uint64_t orphan_vcpus;	 /* vCPU threads without a known process: each made its own VM */
	uint64_t start_ns, end_ns; /* host trace time range (t = 0 of the file is start_ns) */
	struct import_guest_result *guests;
	size_t nguests;
};

/* Import: write opts->out. res is filled (free it with import_result_free) even on failure. */
int vcpustat_import(const struct import_opts *opts, struct import_result *res, struct vcpustat_error *err);
void import_result_free(struct import_result *res);

/* The four event lists of the synchronization protocol (sync/sync.h), each side's clock. */
struct import_sync_events {
	struct vcpustat_sync_event *a, *b, *c, *d;
	size_t na, nb, nc, nd;
};
void import_sync_events_free(struct import_sync_events *s);

/*
 * Host side (b, c) from a host trace, or from an SHT recording (the intervals
 * of /vms/<vm>/vcpus/<n>/sync: start = b, end = c, on the recording's
 * CLOCK_MONOTONIC). vm: only that VM (name or pid; NULL: every VM).
 */
int import_host_sync_events(const char *path, const char *vm, const struct import_opts *opts,
			    struct import_sync_events *out, struct vcpustat_error *err);
/* Guest side (a, d): the vcpustat_sync markers of a guest trace. */
int import_guest_sync_events(const char *path, const struct trace_opts *opts, struct import_sync_events *out,
			     struct trace_stats *st, struct vcpustat_error *err);

/* Both, matched and solved: `vcpustat sync --host H --guest G`. */
int import_sync(const char *host, const char *guest, const char *vm, const struct import_opts *opts,
		struct vcpustat_sync_result *res, struct vcpustat_sync_protocol_stats *ps, struct import_sync_events *ev,
		struct vcpustat_error *err);

/*
 * ---- report.c: import's options and report ----
 * The command's options into an import_opts (arrays kept in struct
 * import_args), each setter checking its value: 0, or a negative errno with
 * err naming the option as typed ("--cpus 0: a number of CPUs (1..65536)").
 */
#define IMPORT_MAX_ITEMS 64
#define IMPORT_MAX_META 16

struct import_args {
	struct import_opts o; /* points into the arrays below */
	struct import_guest guests[IMPORT_MAX_ITEMS];
	struct import_vm_name names[IMPORT_MAX_ITEMS];
	struct import_vm_threads vms[IMPORT_MAX_ITEMS];
	uint32_t *tidbufs[IMPORT_MAX_ITEMS];
	struct sht_meta meta[IMPORT_MAX_META];
	char command[1024]; /* "vcpustat import ...", for the file's metadata */
};

void import_args_init(struct import_args *ia, int argc, char **argv);
void import_args_free(struct import_args *ia);
/* --guest VM=FILE, --vm-name PID=NAME, --vm NAME=TID,...: arg is split in place and kept. */
int import_args_guest(struct import_args *ia, char *arg, struct vcpustat_error *err);
int import_args_vm_name(struct import_args *ia, char *arg, struct vcpustat_error *err);
int import_args_vm(struct import_args *ia, char *arg, struct vcpustat_error *err);
int import_args_isa(struct import_args *ia, const char *arg, struct vcpustat_error *err);
int import_args_cpus(struct import_args *ia, const char *arg, struct vcpustat_error *err);
/* The output must not be one of the traces (outfile_refuse_input). */
int import_args_refuse_input(const struct import_args *ia, struct vcpustat_error *err);

/* The end-of-run warnings, each through warn (printf-like). */
typedef void (*import_warn_fn)(const char *fmt, ...);
void import_warnings(const struct import_opts *o, const struct import_result *res, import_warn_fn warn);
/* The end-of-run report as a JSON document (docs/import.md), or as text lines "PROG: ..." on f. */
struct json_t;
struct json_t *import_result_json(const struct import_opts *o, const struct import_result *res);
void import_report_text(FILE *f, const char *prog, const struct import_opts *o, const struct import_result *res);

#endif /* VCPUSTAT_IMPORT_H */
