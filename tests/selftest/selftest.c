// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A fixture for the suite's own accounting (tests/test_suite.c): one test that
 * passes, two that skip with a reason, and, when asked through the
 * environment, one that fails and one that crashes. tests/tally.sh must count
 * each exactly and fail the run on a failure or a crash, never on a skip.
 */
#include <signal.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include "helpers.h"

Test(selftest, passes)
{
	cr_assert_eq(1 + 1, 2);
}

Test(selftest, skips_with_a_reason)
{
	SKIP_UNLESS("the fixture's reason to skip");
}

Test(selftest, skips_with_the_same_reason)
{
	SKIP_UNLESS("the fixture's reason to skip");
}

Test(selftest, fails_when_asked)
{
	cr_expect(!getenv("SELFTEST_FAIL"), "SELFTEST_FAIL is set: this test fails on purpose");
}

Test(selftest, crashes_when_asked)
{
	if (getenv("SELFTEST_CRASH"))
		raise(SIGKILL);
}
