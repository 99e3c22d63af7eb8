// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The suite's own accounting (tests/tally.sh, used by tests/run.sh): skips
 * are counted with their reason and never fail the run; a failure or a crash
 * always does. Driven on a fixture binary (tests/selftest/selftest.c) whose
 * outcomes are known.
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include "helpers.h"

static int tally(const char *env, const char *filter, char *out, size_t len)
{
	char cmd[1024];

	/* BXFI_MAP marks a Criterion worker: a nested Criterion would refuse to start. */
	snprintf(cmd, sizeof(cmd), "env -u BXFI_MAP %s %s/tests/tally.sh %s/bin/criterion-selftest --jobs 1 %s", env,
		 VCPUSTAT_SOURCE_DIR, build_dir(), filter);
	return run_shell(cmd, out, len);
}

static const char *last_line(char *out)
{
	size_t n = strlen(out);

	while (n && out[n - 1] == '\n')
		out[--n] = '\0';
	return strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
}

Test(suite, skips_are_counted_with_their_reason_and_pass_the_run)
{
	static char out[65536];
	int rc = tally("SELFTEST_NONE=1", "", out, sizeof(out));

	cr_assert(strstr(out, "skipped 2: the fixture's reason to skip\n"), "%s", out);
	cr_expect_str_eq(last_line(out), "3 passed, 0 failed, 2 skipped");
	cr_expect_eq(rc, 0, "a run with skips only must exit 0, got %d", rc);
}

Test(suite, a_forced_failure_fails_the_run)
{
	static char out[65536];
	int rc = tally("SELFTEST_FAIL=1", "", out, sizeof(out));

	cr_assert(strstr(out, "FAILED: selftest::fails_when_asked"), "%s", out);
	cr_expect_str_eq(last_line(out), "2 passed, 1 failed, 2 skipped");
	cr_expect_neq(rc, 0, "a failing test must fail the run");
}

Test(suite, a_crash_fails_the_run)
{
	static char out[65536];
	int rc = tally("SELFTEST_CRASH=1", "", out, sizeof(out));

	cr_assert(strstr(out, "FAILED: selftest::crashes_when_asked"), "%s", out);
	cr_expect_str_eq(last_line(out), "2 passed, 1 failed, 2 skipped");
	cr_expect_neq(rc, 0, "a crashing test must fail the run");
}

Test(suite, tests_left_out_by_a_filter_are_not_counted)
{
	static char out[65536];
	int rc = tally("SELFTEST_FAIL=1", "--filter 'selftest/pass*'", out, sizeof(out));

	cr_expect_str_eq(last_line(out), "1 passed, 0 failed, 0 skipped");
	cr_expect_eq(rc, 0);
}
