// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness for the command lines of the commands that work on files
 * (check, import, query, replay, report, sync): every option parser, and
 * what the options then make the command do, on small real inputs.
 *
 * An input is a command line: arguments separated by NUL bytes, the first
 * the command's name. Each run happens in a sandbox folder holding fresh
 * copies of a recording (a.sht), a trace (t.txt), a capture (c.vcap) and a
 * pairs file (p.csv), taken from the other harnesses' seed corpora (a crash
 * leaves the sandbox, named at the start, with libFuzzer's crash file); every
 * '/' of an argument becomes '_', so whatever a command reads or writes is
 * in the sandbox. stdin is /dev/null (`-` never waits), stdout too.
 *
 * A finding is a crash, a sanitizer report or a leak, or an exit status out
 * of the policy (0, 1 or 2: docs/vcpustat.md, "Exit codes").
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"

#define MAX_ARGS 24
#define MAX_ARG_LEN 512

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "check", cmd_check },	  { "import", cmd_import }, { "query", cmd_query },
	{ "replay", cmd_replay }, { "report", cmd_report }, { "sync", cmd_sync },
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
static char sandbox[] = "/tmp/vcpustat-fuzz-argv.XXXXXX", home[4096];

__attribute__((noreturn)) static void die(const char *what)
{
	perror(what);
	abort();
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

/* Empty the sandbox, then fresh copies of the fixtures. */
static void reset_sandbox(void)
{
	DIR *d = opendir(".");
	struct dirent *e;

	if (!d)
		die(sandbox);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(e->d_name); /* commands write files only (no folders) */
	closedir(d);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		int fd = open(fixtures[i].name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || write(fd, fixture_data[i].data, fixture_data[i].len) != (ssize_t)fixture_data[i].len)
			die(fixtures[i].name);
		close(fd);
	}
}

static void cleanup(void)
{
	if (chdir("/") == 0) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sandbox);
		if (system(cmd))
			fprintf(stderr, "fuzz-argv: could not remove %s\n", sandbox);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	(void)argc;
	(void)argv;
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
		die("/dev/null");
	close(null);
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		load_fixture(i);
	/* each run goes into the sandbox and back (libFuzzer reads its corpus from here) */
	if (!getcwd(home, sizeof(home)) || !mkdtemp(sandbox))
		die(sandbox);
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
