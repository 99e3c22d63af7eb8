/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared test helpers: skipping with a reason, child processes, files. */
#ifndef VCPUSTAT_TEST_HELPERS_H
#define VCPUSTAT_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>

/* Why BPF tests cannot run here (not root, no BTF, ...), or NULL if they can. */
const char *bpf_unavailable(void);
/* Why tests that need CPUs 0 and 1 cannot run here (one CPU, or not allowed on both), or NULL. */
const char *two_cpus_unavailable(void);
/* Why KVM tests cannot run here (no /dev/kvm), or NULL. */
const char *kvm_unavailable(void);
/*
 * Why tests that need real VM entries and exits (kvm_entry/kvm_exit firing:
 * kvm_amd or kvm_intel, not a software KVM) cannot run here, or NULL. Such
 * tests run in the KVM lab (tests/kvmlab.sh, docs/kvmlab.md).
 */
const char *kvm_exit_unavailable(void);
/*
 * Did a live `vcpustat record` (or other live command) of VMs end as it
 * must here? 0; or, where this machine's KVM never fires kvm_exit (a
 * software KVM: kvm_exit_unavailable()), 1 with the warning that it was
 * blind to their exits (docs/vcpustat.md, "Health"). NULL if so, else a
 * sentence on what is wrong. err: what it printed on stderr.
 */
const char *live_status_wrong(int status, const char *err);

/*
 * Skip the current test if the reason is non-NULL. The reason reaches the
 * TAP report (`# SKIP reason`), which tests/tally.sh counts and lists. Not
 * through cr_log_warn(): Criterion 2.4 exits 1 when any warning was logged,
 * which turned every skip into a failed run.
 */
#define SKIP_UNLESS(reason_expr)                                                                   \
	do {                                                                                       \
		const char *why_ = (reason_expr);                                                  \
		if (why_)                                                                          \
			cr_skip_test("%s", why_);                                                  \
	} while (0)



#include <linux/types.h>

/* /proc/<tid>/schedstat: ns on CPU, ns waiting on a run queue, timeslices. */
struct schedstat {
	__u64 run_ns;
	__u64 wait_ns;
	__u64 slices;
};
int read_schedstat(int tid, struct schedstat *s);

/* Pin the calling thread to one CPU. */
int pin_to_cpu(int cpu);

/*
 * Two processes that wake each other through pipes until killed (SIGKILL the
 * pid returned; both die with it, and with the caller): context switches and
 * wakeups. cpu_a, cpu_b >= 0: each side pinned to that CPU, so that each
 * handoff is a wakeup across CPUs.
 */
#include <sys/types.h>
pid_t start_pingpong(int cpu_a, int cpu_b);

/* Where the binaries are: $VCPUSTAT_BUILD_DIR (set by tests/run.sh), else the build this was compiled in. */
const char *build_dir(void);

/* Wait for child pid: its exit status, 128 + signal if killed, -1 on error. */
#include <sys/types.h>
int wait_exit(pid_t pid);

/*
 * Processes a test starts and must not leave behind: proc_spawn() forks and
 * execs argv (PATH searched) with stdout and stderr to files (NULL:
 * /dev/null) and SIGTERM on this process's death (PDEATHSIG, which a process
 * that changes its uid loses), and tracks it; proc_wait() is wait_exit() and
 * forgets it; proc_stop() sends SIGTERM first; proc_stop_all(), in a .fini,
 * stops whatever an assertion left running. At most 16 at a time.
 */
pid_t proc_spawn(char *const argv[], const char *out, const char *err);
int proc_wait(pid_t pid);
int proc_stop(pid_t pid);
void proc_stop_all(void);

/*
 * A scratch folder for the running test, /tmp/vcpustat-PREFIX-XXXXXX, made at
 * the first call, and the path of name in it (a ring of 64 paths: each stays
 * valid for 63 more calls); scratch_remove() deletes the folder (a .fini).
 */
const char *scratch_file(const char *prefix, const char *name);
const char *scratch_dir(const char *prefix); /* the folder itself */
void scratch_remove(void);

/* A TCP port of 127.0.0.1 that was free a moment ago (bound, read, closed); -1 on error. */
int free_loopback_port(void);

/* A whole file (also /proc files, whose size says 0), NUL-terminated and malloc'ed; "" if it cannot be read. */
char *slurp_file(const char *path);

/* Run a shell command with stderr merged; its output in out; its exit status (-1: killed). */
int run_shell(const char *cmd, char *out, size_t len);
/* End tmux session NAME if there is one (a test's UI from before, or its own at the end); no error if none. */
void tmux_end(const char *name);
/* Run `vcpustat ARGS` (a shell string) with stderr merged; its output in out; its exit status. */
int run_vcpustat(const char *args, char *out, size_t len);
/* `vcpustat report SHT -j WINDOW` (WINDOW: more options, "" for none), asserted to succeed: its JSON document. */
struct json_t *report_json(const char *sht, const char *window);

struct vcpustat_event;
struct vcpustat_snapshot;
struct vcpustat;
struct replay;
/*
 * The events through the kernel's handler (the injection program of a
 * vcpustat opened with record level none, and address_spaces if asked), and
 * its maps after them in *snap; asserted. Close it with vcpustat_close().
 */
struct vcpustat *inject_events(const struct vcpustat_event *evs, size_t n, bool address_spaces,
			       struct vcpustat_snapshot *snap);
/* The ns charged to thread tid as the culprit of VM key_tgid's waits (the culprits map; key_tgid may carry VCPUSTAT_CULPRIT_VMM): false if it has no entry. */
bool culprit_lookup(struct vcpustat *vs, __u32 key_tgid, __u32 tid, __u64 *ns);
/* The events fed one by one to user-space replay (record level vcpu; max_details 0: the default), asserted. */
struct replay *replay_events(const struct vcpustat_event *evs, size_t n, unsigned int max_details);
/*
 * The events of VM tgid (named name) as a recording: a capture of them
 * (level vcpu, 2 CPUs, ending at end_ns) replayed by `vcpustat replay` into
 * sht (an existing path); asserted to succeed.
 */
void replay_to_sht(const struct vcpustat_event *evs, size_t n, __u32 tgid, const char *name, __u64 end_ns,
		   const char *sht);

/*
 * A document written by util/jsonw.h (text, len bytes) held to jansson's: it is
 * what json_dumps() prints of its own parse (no key twice, numbers and strings
 * as jansson writes them); asserted.
 */
void expect_janssons_text(const char *text, size_t len);
struct summary;
/* summary_json(s, NULL, 0), its text checked by expect_janssons_text(). */
struct json_t *summary_json_checked(const struct summary *s);

/* Assert that text holds each of the NULL-terminated needles (what names the first one missing, and the text). */
void assert_holds(const char *what, const char *text, const char *const *needles);
#define ASSERT_HOLDS(what, text, ...)                                                                              \
	do {                                                                                                       \
		const char *const needles_[] = { __VA_ARGS__, NULL };                                              \
		assert_holds(what, text, needles_);                                                                \
	} while (0)

/* CLOCK_MONOTONIC ns */
__u64 mono_ns(void);
#endif
