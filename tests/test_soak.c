// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The 2-minute soak (issue 15, item 6): bench/soak.sh --duration 2m, the real
 * `serve` and `record --rotate-every 1m` attached while simulated VMs come
 * and go (injected into both processes' BPF objects by bench/inject-vms; no
 * /dev/kvm needed). The script samples the maps, RSS, fds and the files every
 * 10 s and judges them (its header states the rules: the last third of the
 * run against the first, generous enough for a loaded 2-core machine, but a
 * map that keeps the entries of every VM ever created fails it), checks every
 * file and compares what was injected with what serve counted and record
 * wrote. Here: it stops by itself (the test's timeout), it passes, and it
 * really churned (VMs by the hundred, rotated files, rows all along).
 * Needs root and BPF; takes 2 minutes and a few seconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include "helpers.h"

static char *text, *errs;

static void cleanup(void)
{
	proc_stop_all();
	scratch_remove();
	free(text);
	free(errs);
	text = errs = NULL;
}

/* The number after `key` in text (the first occurrence), or -1. */
static long number_after(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

Test(soak, two_minutes_of_vms_coming_and_going_leave_serve_and_record_flat, .timeout = 400, .fini = cleanup)
{
	char inject[512], script[] = VCPUSTAT_SOURCE_DIR "/bench/soak.sh";
	const char *dir, *out, *err, *asan = getenv("ASAN_OPTIONS");
	char asan_opts[512];
	long rows = 0, created, in_files, files;
	int st;

	SKIP_UNLESS(bpf_unavailable());
	snprintf(inject, sizeof(inject), "%s/bin/inject-vms", build_dir());
	if (access(inject, X_OK))
		cr_skip_test("%s is not built (a build without bench/: -DVCPUSTAT_BENCH=OFF)", inject);
	/*
	 * A sanitized build's serve and record hold freed memory in ASan's
	 * quarantine (up to 256 MB): their RSS would grow by design. Without it,
	 * RSS is the program's; LeakSanitizer still checks them at exit.
	 */
	snprintf(asan_opts, sizeof(asan_opts), "%s%squarantine_size_mb=0", asan ? asan : "", asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", asan_opts, 1);
	dir = scratch_dir("soak");
	out = scratch_file("soak", "soak.out");
	err = scratch_file("soak", "soak.err");
	{
		char *argv[] = { "bash", script, "--duration", "2m", "--build", (char *)build_dir(), "--dir",
				 (char *)dir, NULL };

		st = proc_wait(proc_spawn(argv, out, err));
	}
	if (asan)
		setenv("ASAN_OPTIONS", asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
	text = slurp_file(out);
	errs = slurp_file(err);
	cr_log_info("bench/soak.sh --duration 2m:\n%s%s", text, errs);
	if (st == 2)
		cr_skip_test("bench/soak.sh cannot run here: %s", errs);
	cr_assert_eq(st, 0, "the soak passes (exit 0):\n%s%s", text, errs);
	cr_assert(strstr(text, "\nsoak: PASS\n"), "it says so:\n%s", text);
	/* it really ran: a row every 10 s, VMs by the hundred, every one of them in the files */
	for (const char *p = strchr(text, '\n'); p; p = strchr(p + 1, '\n'))
		if (p[1] >= '1' && p[1] <= '9')
			rows++;
	cr_assert_geq(rows, 9, "a row every 10 s for 2 minutes (%ld):\n%s", rows, text);
	created = number_after(text, "VMs in the files of ");
	in_files = number_after(text, "# record: ");
	cr_assert_geq(created, 100, "VMs were created and destroyed all along (%ld)", created);
	cr_assert_geq(in_files, created, "record wrote every VM created (%ld of %ld)", in_files, created);
	files = number_after(text, "# check: all ");
	cr_assert_geq(files, 2, "record rotated (--rotate-every 1m): %ld files, each passes check", files);
}
