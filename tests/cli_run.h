/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Running the vcpustat binary from a test (tests of the commands' behaviour:
 * test_robust.c, test_sht_cli.c): its exit status, stdout and stderr.
 * Header-only (static inline): each test file gets its own copy of the few
 * lines, and none is left unused.
 */
#ifndef VCPUSTAT_TESTS_CLI_RUN_H
#define VCPUSTAT_TESTS_CLI_RUN_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>

struct run {
	int status; /* exit code, or -1 */
	char out[65536], err[8192];
};

static inline const char *vcpustat_bin(void)
{
	static char path[512];
	const char *dir = getenv("VCPUSTAT_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/bin/vcpustat", dir ? dir : VCPUSTAT_BUILD_DIR);
	return path;
}

static inline void slurp_into(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
}

/*
 * Run vcpustat with argv; stdout to out_file (NULL: captured), stdin from
 * in_file (NULL: /dev/null), and fd 3 open for writing on fd3_file (NULL:
 * none; what a shell's `3> FILE` does); killed after limit_s seconds (status -1).
 */
static inline void run_io_fd3(struct run *r, const char *const *argv, const char *out_file, const char *in_file,
			      const char *fd3_file, int limit_s)
{
	char out[128], err[128];
	pid_t pid;
	int st;

	snprintf(out, sizeof(out), "/tmp/vcpustat-run-%d.out", (int)getpid());
	snprintf(err, sizeof(err), "/tmp/vcpustat-run-%d.err", (int)getpid());
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fo = open(out_file ? out_file : out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fi = open(in_file ? in_file : "/dev/null", O_RDONLY);

		dup2(fo, 1);
		dup2(fe, 2);
		dup2(fi, 0);
		if (fd3_file) {
			int f3 = open(fd3_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (f3 < 0 || (f3 != 3 && dup2(f3, 3) != 3))
				_exit(126);
		}
		setenv("TZ", "UTC", 1);
		alarm((unsigned)limit_s); /* a hang guard, not a timing assertion */
		execv(vcpustat_bin(), (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	slurp_into(out, r->out, sizeof(r->out));
	slurp_into(err, r->err, sizeof(r->err));
	unlink(out);
	unlink(err);
	cr_assert_neq(r->status, 127, "cannot run %s", vcpustat_bin());
	cr_assert_neq(r->status, 126, "cannot open %s as fd 3", fd3_file ? fd3_file : "(no file)");
}

static inline void run_io(struct run *r, const char *const *argv, const char *out_file, const char *in_file, int limit_s)
{
	run_io_fd3(r, argv, out_file, in_file, NULL, limit_s);
}

#define RUN(r, ...)                                                                                                \
	do {                                                                                                       \
		const char *const argv_[] = { vcpustat_bin(), __VA_ARGS__, NULL };                                 \
		run_io(r, argv_, NULL, NULL, 120);                                                                 \
	} while (0)
#define RUN_TO(r, outf, ...)                                                                                       \
	do {                                                                                                       \
		const char *const argv_[] = { vcpustat_bin(), __VA_ARGS__, NULL };                                 \
		run_io(r, argv_, outf, NULL, 120);                                                                 \
	} while (0)

#endif
