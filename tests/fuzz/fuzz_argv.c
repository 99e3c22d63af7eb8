// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness for the command lines of the commands that work on files
 * (check, export, import, plot, query, replay, report, sync): every option
 * parser, and what the options then make the command do, on small real
 * inputs.
 *
 * An input is a command line: arguments separated by NUL bytes, the first
 * the command's name. Each run happens in a sandbox folder holding fresh
 * copies of a recording (a.sht), a trace (t.txt), a capture (c.vcap) and a
 * pairs file (p.csv), taken from the other harnesses' seed corpora (a crash
 * leaves the sandbox, named at the start, with libFuzzer's crash file); every
 * '/' of an argument becomes '_', so whatever a command reads or writes is
 * in the sandbox. stdin is /dev/null (`-` never waits); stdout is a file
 * next to the sandbox, emptied at each run.
 *
 * The sandbox also holds an output target of every kind (util/outfile.c's
 * rule), for -o: a regular file (o.reg), a symlink to it (o.link), a
 * dangling symlink (o.dangling), a directory (o.dir), a FIFO that a thread
 * of the harness reads (o.fifo), a symlink to our stdout through /proc
 * (o.fd, as /dev/stdout is), and, as root, private null and full devices
 * (o.null, o.full: made with mknod, never the host's /dev). o.new is a name
 * that is never there. A command that replaced a device or the FIFO, or
 * followed o.fd out of the sandbox, is a finding the next reset notices.
 *
 * The live paths of export and plot (no recording given, --live) are cut at
 * their privilege check (vcpustat_check_privileges, wrapped by the linker):
 * the harness never loads BPF.
 *
 * A finding is a crash, a sanitizer report or a leak, an exit status out of
 * the policy (0, 1 or 2: docs/vcpustat.md, "Exit codes"), or a target that is
 * no longer of its kind after a run.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "cli/cli.h"

#define MAX_ARGS 24
#define MAX_ARG_LEN 512

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "check", cmd_check },	  { "export", cmd_export }, { "import", cmd_import }, { "plot", cmd_plot },
	{ "query", cmd_query },	  { "replay", cmd_replay }, { "report", cmd_report }, { "sync", cmd_sync },
};

static const struct {
	const char *name, *seed; /* in the sandbox; from tests/fuzz/corpus/ */
} fixtures[] = {
	{ "a.sht", "sht/closed.sht" },
	{ "t.txt", "ftrace/tracefs-microvm.txt" },
	{ "c.vcap", "capture/seed0.vcap" },
	{ "p.csv", "sync_pairs/accurate.csv" },
};

static struct {
	char *data;
	size_t len;
} fixture_data[sizeof(fixtures) / sizeof(fixtures[0])];
static char sandbox[] = "/tmp/vcpustat-fuzz-argv.XXXXXX", home[4096], out_path[64], fifo_path[64];
static bool devices; /* root: o.null and o.full */

__attribute__((noreturn)) static void die(const char *what)
{
	perror(what);
	abort();
}

/* export and plot without a recording: the live layer, refused here as it is without privileges */
int __wrap_vcpustat_check_privileges(char *msg, size_t len);
int __wrap_vcpustat_check_privileges(char *msg, size_t len)
{
	snprintf(msg, len, "fuzz-argv: the live layer is not fuzzed (no BPF here)");
	return -ENOSYS;
}

static void load_fixture(size_t i)
{
	char path[1024];
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/%s", VCPUSTAT_SOURCE_DIR, fixtures[i].seed);
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		die(path);
	fixture_data[i].data = malloc((size_t)n + 1);
	if (!fixture_data[i].data || fread(fixture_data[i].data, 1, (size_t)n, f) != (size_t)n)
		die(path);
	fixture_data[i].len = (size_t)n;
	fclose(f);
}

/* The FIFO's reader: whatever a command writes into o.fifo is read to its end, writer after writer. */
static void *drain_fifo(void *arg)
{
	char buf[65536];
	int fd;

	(void)arg;
	for (;;) {
		fd = open(fifo_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			usleep(1000); /* between a reset's unlink and mkfifo */
			continue;
		}
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	return NULL;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag;
	if (f->level == 0 || !strcmp(p + f->base, "o.fifo"))
		return 0; /* the sandbox itself; the FIFO, which the reader has open (checked below) */
	return remove(p);
}

/* A target a command must have left as it was: else the rule was broken (abort: a finding). */
static void expect_kind(const char *name, mode_t kind, dev_t rdev)
{
	struct stat st;

	if (lstat(name, &st) && errno == ENOENT)
		return; /* the first reset */
	if (lstat(name, &st) || (st.st_mode & S_IFMT) != kind || (kind == S_IFCHR && st.st_rdev != rdev)) {
		fprintf(stderr, "fuzz-argv: %s/%s was replaced (mode %o): a target written in place was written over\n",
			sandbox, name, (unsigned)st.st_mode);
		abort();
	}
}

/* The output targets of every kind (see the top), o.fifo made once. */
static void make_targets(void)
{
	int fd = open("o.reg", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, "old\n", 4) != 4)
		die("o.reg");
	close(fd);
	if (symlink("o.reg", "o.link") || symlink("o.gone", "o.dangling") || symlink("/proc/self/fd/1", "o.fd") ||
	    mkdir("o.dir", 0755))
		die("the sandbox's targets");
	if (access("o.fifo", F_OK) && mkfifo("o.fifo", 0644))
		die("o.fifo");
	if (devices && mknod("o.null", S_IFCHR | 0666, makedev(1, 3)))
		die("mknod o.null");
	if (devices && mknod("o.full", S_IFCHR | 0666, makedev(1, 7)))
		die("mknod o.full");
}

/* Empty the sandbox (checking what the last run left of the targets), then fresh fixtures and targets. */
static void reset_sandbox(void)
{
	expect_kind("o.fifo", S_IFIFO, 0);
	expect_kind("o.fd", S_IFLNK, 0);
	expect_kind("o.link", S_IFLNK, 0);
	if (devices) {
		expect_kind("o.null", S_IFCHR, makedev(1, 3));
		expect_kind("o.full", S_IFCHR, makedev(1, 7));
	}
	if (nftw(".", rm_entry, 16, FTW_DEPTH | FTW_PHYS))
		die(sandbox);
	/* stdout (o.fd's file) emptied */
	if (ftruncate(STDOUT_FILENO, 0) || lseek(STDOUT_FILENO, 0, SEEK_SET))
		die(out_path);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		int fd = open(fixtures[i].name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || write(fd, fixture_data[i].data, fixture_data[i].len) != (ssize_t)fixture_data[i].len)
			die(fixtures[i].name);
		close(fd);
	}
	make_targets();
}

static void cleanup(void)
{
	if (chdir("/") == 0) {
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", sandbox, out_path);
		if (system(cmd))
			fprintf(stderr, "fuzz-argv: could not remove %s\n", sandbox);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), out;
	pthread_t reader;

	(void)argc;
	(void)argv;
	if (null < 0 || dup2(null, STDIN_FILENO) < 0)
		die("/dev/null");
	close(null);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		load_fixture(i);
	/* each run goes into the sandbox and back (libFuzzer reads its corpus from here) */
	if (!getcwd(home, sizeof(home)) || !mkdtemp(sandbox))
		die(sandbox);
	/* stdout: a file of ours (o.fd names it), not the host's /dev/null */
	snprintf(out_path, sizeof(out_path), "%s.stdout", sandbox);
	out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 || dup2(out, STDOUT_FILENO) < 0)
		die(out_path);
	close(out);
	snprintf(fifo_path, sizeof(fifo_path), "%s/o.fifo", sandbox);
	devices = geteuid() == 0;
	if (!devices)
		fprintf(stderr, "fuzz-argv: not root: no o.null, o.full (private device nodes need mknod)\n");
	if (pthread_create(&reader, NULL, drain_fifo, NULL) || pthread_detach(reader))
		die("the FIFO's reader");
	fprintf(stderr, "fuzz-argv: sandbox %s (kept, with libFuzzer's crash file, if a run crashes)\n", sandbox);
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *args[MAX_ARGS + 1] = { 0 };
	int argc = 0, (*fn)(int, char **) = NULL, st;
	size_t pos = 0;

	while (pos < size && argc < MAX_ARGS) {
		const uint8_t *end = memchr(data + pos, 0, size - pos);
		size_t len = end ? (size_t)(end - (data + pos)) : size - pos;
		char *a = malloc((len < MAX_ARG_LEN ? len : MAX_ARG_LEN) + 1);

		if (!a)
			abort();
		memcpy(a, data + pos, len < MAX_ARG_LEN ? len : MAX_ARG_LEN);
		a[len < MAX_ARG_LEN ? len : MAX_ARG_LEN] = 0;
		for (char *c = a; *c; c++)
			if (*c == '/')
				*c = '_'; /* stay in the sandbox */
		args[argc++] = a;
		pos += len + 1;
	}
	for (size_t i = 0; argc && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(args[0], commands[i].name))
			fn = commands[i].fn;
	if (fn) {
		if (chdir(sandbox))
			die(sandbox);
		reset_sandbox();
		/* a fresh getopt (optind 0 reinitializes glibc's), and the CLI's own globals */
		optind = 0;
		getopt(1, (char *[]){ "fuzz", NULL }, "");
		opterr = 1;
		cli_json = false;
		cli_pretty = false;
		st = fn(argc, args);
		fflush(stdout);
		if (st != CLI_OK && st != CLI_FAIL && st != CLI_USAGE)
			__builtin_trap(); /* out of the exit status policy */
		if (chdir(home))
			die(home);
	}
	for (int i = 0; i < argc; i++)
		free(args[i]);
	return 0;
}
