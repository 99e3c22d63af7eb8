// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat-sync-agent, the guest side of synchronization, run here as if this
 * machine were the guest. Markers go to a private tracefs instance (created
 * and removed by the test, so the global trace buffer is never touched) and
 * are read back from its trace file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "sync/sync.h"

#define TRACEFS "/sys/kernel/tracing"

static char tmpdir[64], instance[128], marker[192], logfile[128];
static char out[1 << 16], err[1 << 16];
static bool mounted_here;

static const char *agent_bin(void)
{
	static char path[512];
	const char *dir = getenv("VCPUSTAT_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/bin/vcpustat-sync-agent", dir ? dir : VCPUSTAT_BUILD_DIR);
	return path;
}

/* Why markers cannot be read back here, or NULL (tracefs mounted if needed). */
static const char *tracefs_unavailable(void)
{
	static char why[256];
	struct stat st;

	if (stat(TRACEFS "/instances", &st)) {
		if (mount("nodev", TRACEFS, "tracefs", 0, NULL)) {
			snprintf(why, sizeof(why), "cannot mount tracefs on " TRACEFS ": %s", strerror(errno));
			return why;
		}
		mounted_here = true;
	}
	snprintf(instance, sizeof(instance), TRACEFS "/instances/vcpustat-test-%d", (int)getpid());
	if (mkdir(instance, 0755) && errno != EEXIST) {
		snprintf(why, sizeof(why), "cannot create the tracefs instance %s: %s", instance, strerror(errno));
		instance[0] = '\0';
		return why;
	}
	snprintf(marker, sizeof(marker), "%s/trace_marker", instance);
	return NULL;
}

static void setup(void)
{
	strcpy(tmpdir, "/tmp/vcpustat-agent-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(logfile, sizeof(logfile), "%s/agent.log", tmpdir);
}

static void teardown(void)
{
	char cmd[128];

	/* Leaving a tracefs instance or mount behind is a failure of the test. */
	if (instance[0])
		cr_expect(rmdir(instance) == 0, "cannot remove %s: %s", instance, strerror(errno));
	instance[0] = '\0';
	if (mounted_here)
		cr_expect(umount(TRACEFS) == 0, "cannot unmount " TRACEFS ": %s", strerror(errno));
	mounted_here = false;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect(system(cmd) == 0, "cannot remove %s", tmpdir);
}

TestSuite(sync_agent, .init = setup, .fini = teardown, .timeout = 60);

static void slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	size_t n = 0;
	ssize_t r;

	while (fd >= 0 && n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	if (fd >= 0)
		close(fd);
}

static pid_t start(const char *const *args)
{
	char opath[128], epath[128];
	const char *argv[24] = { agent_bin() };
	pid_t pid;
	int i;

	for (i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	snprintf(opath, sizeof(opath), "%s/stdout", tmpdir);
	snprintf(epath, sizeof(epath), "%s/stderr", tmpdir);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int fo = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fo < 0 || fe < 0)
			_exit(126);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Wait for the agent: its exit status, or -signal; fills out and err. */
static int finish(pid_t pid)
{
	char path[128];
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	snprintf(path, sizeof(path), "%s/stdout", tmpdir);
	slurp(path, out, sizeof(out));
	snprintf(path, sizeof(path), "%s/stderr", tmpdir);
	slurp(path, err, sizeof(err));
	return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

static int run(const char *const *args)
{
	return finish(start(args));
}

struct seen {
	uint64_t key[256];
	char which[256];
	size_t n;
};

/* The markers in the instance's trace, in order. */
static void read_markers(struct seen *s)
{
	static char trace[1 << 20];
	char path[256], *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/trace", instance);
	slurp(path, trace, sizeof(trace));
	s->n = 0;
	for (line = strtok_r(trace, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t key;
		int which = vcpustat_sync_parse_marker(line, &key);

		if (which && s->n < 256) {
			s->key[s->n] = key;
			s->which[s->n++] = (char)which;
		}
	}
}

/* Every a is followed by its d, each key once. */
static void check_pairs(const struct seen *s, size_t rounds)
{
	size_t na = 0, nd = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (s->which[i] == 'a') {
			size_t j;

			na++;
			for (j = i + 1; j < s->n; j++)
				if (s->key[j] == s->key[i])
					break;
			cr_assert(j < s->n && s->which[j] == 'd', "marker a k=%llu has no d after it",
				  (unsigned long long)s->key[i]);
		} else {
			nd++;
		}
	}
	cr_assert_eq(na, rounds, "%zu a markers for %zu rounds", na, rounds);
	cr_assert_eq(nd, rounds, "%zu d markers for %zu rounds", nd, rounds);
}

Test(sync_agent, writes_2n_markers_and_logs_every_round)
{
	struct seen s;
	char log[1 << 14], *line, *save = NULL;
	size_t rows = 0;
	int status;

	SKIP_UNLESS(tracefs_unavailable());
	status = run((const char *const[]){ "--no-hypercall", "--count", "5", "--interval-ms", "1", "--trace-marker",
					    marker, "--log", logfile, NULL });
	cr_assert_eq(status, 0, "status %d: %s", status, err);
	cr_assert(strstr(err, "5 rounds"), "summary: %s", err);
	read_markers(&s);
	cr_assert_eq(s.n, 10, "2 x 5 markers expected, read %zu", s.n);
	check_pairs(&s, 5);

	slurp(logfile, log, sizeof(log));
	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long key;
		long long m0, r0, m1, r1;
		int cpu, found = 0;
		char result[32];

		if (line[0] == '#')
			continue;
		cr_assert_eq(sscanf(line, "%llu,%d,%lld,%lld,%lld,%lld,%31s", &key, &cpu, &m0, &r0, &m1, &r1, result), 7,
			     "log line: %s", line);
		cr_assert_leq(m0, m1);
		cr_assert_leq(r0 - 1000000000LL, r1, "CLOCK_REALTIME before/after");
		cr_assert_str_eq(result, "off");
		cr_assert_eq(key >> 48, (unsigned long long)cpu, "key = cpu << 48 | seq");
		for (size_t i = 0; i < s.n; i++)
			found += s.key[i] == key;
		cr_assert_eq(found, 2, "log key %llu: a and d in the trace", key);
		rows++;
	}
	cr_assert_eq(rows, 5);
}

Test(sync_agent, real_hypercall_either_works_or_is_reported_and_markers_still_flow)
{
	struct seen s;
	int status;

	SKIP_UNLESS(tracefs_unavailable());
	/* The machine's own hypervisor answers (-1: KVM_EPERM from user space)
	 * or the instruction faults; both are fine, the markers must be there. */
	status = run((const char *const[]){ "--count", "2", "--cpus", "0", "--interval-ms", "1", "--trace-marker",
					    marker, NULL });
	cr_assert_eq(status, 0, "status %d: %s", status, err);
	cr_assert(strstr(err, "hypercalls: 2 vmcall") || strstr(err, "hypercalls: 2 vmmcall") ||
			  strstr(err, "hypercall not supported here"),
		  "%s", err);
	read_markers(&s);
	check_pairs(&s, 2);
}

Test(sync_agent, sigterm_stops_it_cleanly_with_a_summary)
{
	struct timespec pause = { 0, 300 * 1000000L };
	struct seen s;
	pid_t pid;
	int status;

	SKIP_UNLESS(tracefs_unavailable());
	pid = start((const char *const[]){ "--no-hypercall", "--interval-ms", "20", "--trace-marker", marker, NULL });
	nanosleep(&pause, NULL);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	status = finish(pid);
	cr_assert_eq(status, 0, "status %d: %s", status, err);
	cr_assert(strstr(err, "stopping") && strstr(err, "rounds on"), "%s", err);
	read_markers(&s);
	cr_assert_gt(s.n, 2);
	cr_assert_eq(s.n % 2, 0, "every round finished: a and d");
}

Test(sync_agent, bad_options_exit_2_with_a_clear_message)
{
	static const struct {
		const char *args[4], *expect;
	} cases[] = {
		{ { "--interval-ms", "abc" }, "--interval-ms: 'abc' is not a non-negative integer" },
		{ { "--count", "-3" }, "--count: '-3' is not a non-negative integer" },
		{ { "--count", "0" }, "--count: give at least 1 round" },
		{ { "--duration", "soon" }, "--duration: 'soon' is not a number of seconds" },
		{ { "--cpus", "4096" }, "--cpus: CPU 4096 is out of range" },
		{ { "--cpus", "1-0" }, "--cpus: '1-0' is not a CPU list" },
		{ { "--insn", "syscall" }, "--insn: 'syscall' is not auto, vmcall or vmmcall" },
		{ { "--on-ud", "panic" }, "--on-ud: 'panic' is not continue or exit" },
		{ { "--bogus" }, "unrecognized option" },
		{ { "extra" }, "unexpected argument 'extra'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status = run(cases[i].args);

		cr_assert_eq(status, 2, "case %zu: status %d", i, status);
		cr_assert(strstr(err, cases[i].expect), "case %zu: '%s' lacks '%s'", i, err, cases[i].expect);
	}
	cr_assert_eq(run((const char *const[]){ "--help", NULL }), 0);
	cr_assert(strstr(out, "--no-hypercall") && strstr(out, "cpu << 48"), "%s", out);
}

Test(sync_agent, unwritable_marker_is_an_error)
{
	int status = run((const char *const[]){ "--no-hypercall", "--count", "1", "--trace-marker",
						"/nonexistent/trace_marker", NULL });

	cr_assert_eq(status, 1, "status %d", status);
	cr_assert(strstr(err, "/nonexistent/trace_marker"), "%s", err);
}
