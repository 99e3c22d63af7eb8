// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `vcpustat record` on a file system that fills up (issue 15, item 4): it says
 * ENOSPC with the file's name, exits non-zero, and leaves a file that `check`
 * finds good without --repair, up to its last sealed node. Level full records
 * every context switch of the host, so no VM is needed: a pipe ping-pong
 * between two processes makes sure there are plenty. Needs root (a 40 KiB
 * tmpfs mount) and BPF.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "cli_run.h"

static char mnt[64];
static pid_t pingpong;

static void cleanup(void)
{
	if (pingpong > 0) {
		kill(pingpong, SIGKILL);
		waitpid(pingpong, NULL, 0);
		pingpong = 0;
	}
	if (mnt[0]) {
		umount2(mnt, MNT_DETACH);
		rmdir(mnt);
		mnt[0] = '\0';
	}
}

Test(full_disk, record_says_enospc_and_leaves_a_good_file, .fini = cleanup, .timeout = 120)
{
	char out[128];
	struct run r;

	SKIP_UNLESS(bpf_unavailable());
	snprintf(mnt, sizeof(mnt), "/tmp/vcpustat-full-XXXXXX");
	cr_assert_not_null(mkdtemp(mnt));
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=40k") != 0) {
		rmdir(mnt);
		mnt[0] = '\0';
		cr_skip_test("cannot mount a small tmpfs (%s): needs root", strerror(errno));
	}
	snprintf(out, sizeof(out), "%s/rec.sht", mnt);
	pingpong = start_pingpong(-1, -1);
	cr_assert_gt(pingpong, 0);
	RUN(&r, "record", "--level", "full", "-o", out, "--duration", "30");
	cr_assert_eq(r.status, 1, "a full disk is an error (exit 1), not %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, out) && strstr(r.err, "No space left on device"),
		  "the message names the file and ENOSPC: %s", r.err);
	/* what was sealed before the disk filled up is there, and check needs no repair */
	RUN(&r, "check", out);
	cr_assert_eq(r.status, 0, "check finds the file good without --repair: %s", r.out);
	cr_assert(strstr(r.out, "good"), "%s", r.out);
	RUN(&r, "query", out, "--json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		const char *p = strstr(r.out, "\"intervals\"");

		cr_assert_not_null(p, "%s", r.out);
		cr_assert_gt(atol(strchr(p, ':') + 1), 100, "the intervals before the disk filled up are readable");
		cr_log_info("full disk: exit 1, ENOSPC named; %ld intervals readable, check needs no repair",
			    atol(strchr(p, ':') + 1));
	}
}
