// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `vcpustat record` on a file system that fills up (issue 15, item 4): it says
 * ENOSPC with the file's name, exits non-zero, and leaves a file that `check`
 * finds good without --repair, up to its last sealed node. Level full records
 * every context switch of the host, so no VM is needed: a pipe ping-pong
 * between two processes makes sure there are plenty. With rotation and
 * --keep, it deletes the oldest files of the series to make room and goes on;
 * a file of the series is never half written. Needs root (small tmpfs
 * mounts) and BPF.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <jansson.h>
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

/* A tmpfs of size bytes ("size=" option) at mnt, or the test is skipped. */
static void mount_small(const char *size)
{
	char opt[64];

	snprintf(mnt, sizeof(mnt), "/tmp/vcpustat-full-XXXXXX");
	cr_assert_not_null(mkdtemp(mnt));
	snprintf(opt, sizeof(opt), "size=%s", size);
	if (mount("tmpfs", mnt, "tmpfs", 0, opt) != 0) {
		rmdir(mnt);
		mnt[0] = '\0';
		cr_skip_test("cannot mount a small tmpfs (%s): needs root", strerror(errno));
	}
}

/*
 * A test's start: BPF, a small tmpfs of size at mnt, out its rec.sht, and
 * with load, the pipe ping-pong running.
 */
static void start(const char *size, char *out, size_t len, bool load)
{
	SKIP_UNLESS(bpf_unavailable());
	mount_small(size);
	snprintf(out, len, "%s/rec.sht", mnt);
	if (load) {
		pingpong = start_pingpong(-1, -1);
		cr_assert_gt(pingpong, 0);
	}
}

Test(full_disk, record_says_enospc_and_leaves_a_good_file, .fini = cleanup, .timeout = 120)
{
	char out[128];
	struct run r;

	start("40k", out, sizeof(out), true);
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

/* A file of a rotated series: its name and time range (check --json). */
struct part {
	char name[256];
	uint64_t start, end;
};

static int by_start(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The files in mnt but skip: every one is a file of the series that `check`
 * finds good without --repair (so none is half written), none is a temporary
 * file; filled in by time, oldest first. Returns how many.
 */
static size_t series(const char *skip, struct part *parts, size_t max)
{
	DIR *d = opendir(mnt);
	struct dirent *de;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		char path[512];
		json_t *o;
		struct run r;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || (skip && !strcmp(de->d_name, skip)))
			continue;
		cr_assert_neq(de->d_name[0], '.', "a temporary file is left behind: %s", de->d_name);
		cr_assert(!strncmp(de->d_name, "rec-", 4) && strstr(de->d_name, ".sht"), "not a file of the series: %s",
			  de->d_name);
		cr_assert_lt(n, max);
		snprintf(path, sizeof(path), "%s/%s", mnt, de->d_name);
		RUN(&r, "check", path, "--json");
		cr_assert_eq(r.status, 0, "%s: check finds it good without --repair: %s%s", path, r.out, r.err);
		o = json_loads(r.out, 0, NULL);
		cr_assert_not_null(o, "%s", r.out);
		cr_assert(json_is_true(json_object_get(o, "ok")), "%s", r.out);
		snprintf(parts[n].name, sizeof(parts[n].name), "%s", de->d_name);
		parts[n].start = (uint64_t)json_integer_value(json_object_get(o, "start"));
		parts[n].end = (uint64_t)json_integer_value(json_object_get(o, "end"));
		json_decref(o);
		n++;
	}
	closedir(d);
	qsort(parts, n, sizeof(*parts), by_start);
	return n;
}

/* Each file of the series ends where the next begins: none between is missing. */
static void unbroken(const struct part *parts, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		cr_assert_eq(parts[i].end, parts[i + 1].start, "%s ends where %s begins: none between is missing",
			     parts[i].name, parts[i + 1].name);
}

/* The file a failed record names ("error: FILE: ..."), which must be in mnt. */
static const char *named_file(const char *err, char *out, size_t len)
{
	const char *p = strstr(err, "error: ");
	const char *q = p ? strstr(p + 7, ".sht: ") : NULL;

	cr_assert(p && q, "the error names a file: %s", err);
	snprintf(out, len, "%.*s", (int)(q + 4 - (p + 7)), p + 7);
	cr_assert(!strncmp(out, mnt, strlen(mnt)), "the named file is in the full file system: %s", err);
	cr_assert(strstr(err, "No space left on device"), "the error says ENOSPC: %s", err);
	return out;
}

/*
 * With rotation and --keep, a full disk deletes the oldest files of the series
 * and the recording goes on: on a 256 KiB tmpfs, files of 64 KiB, --keep 1000
 * (so that only the full disk deletes), record writes more than the disk holds
 * and ends when its --duration does, with the newest files left, each good.
 */
Test(full_disk, rotation_with_keep_deletes_the_oldest_and_goes_on, .fini = cleanup, .timeout = 180)
{
	struct part parts[64];
	char out[128];
	unsigned long files = 0;
	const char *p;
	struct run r;
	size_t n;

	start("256k", out, sizeof(out), true);
	RUN(&r, "record", "--level", "full", "-o", out, "--max-size", "64K", "--keep", "1000", "--duration", "10");
	cr_assert_eq(r.status, 0, "the full disk made room: exit 0 at the end of --duration, not %d: %s", r.status,
		     r.err);
	p = strstr(r.err, " intervals in ");
	cr_assert_not_null(p, "%s", r.err);
	files = strtoul(p + strlen(" intervals in "), NULL, 10);
	/* every file is at least an empty one: 48 KiB (header, one node, footer), at most 64 KiB */
	cr_assert_gt(files * 49152, 256 * 1024,
		     "more was written (%lu files of at least 48 KiB) than the 256 KiB disk holds: %s", files, r.err);
	n = series(NULL, parts, 64);
	cr_assert_lt(n, files, "files were deleted to make room (%zu of %lu left)", n, files);
	cr_assert_geq(n, 1);
	/* the ones left are the newest: one unbroken run of files up to the end, the first not at 0 */
	cr_assert_gt(parts[0].start, 0, "the oldest file (from t = 0) was deleted, %s is left", parts[0].name);
	unbroken(parts, n);
	cr_assert_geq(parts[n - 1].end, 10000000000ull, "the newest file, %s, goes on to the end of --duration 10",
		      parts[n - 1].name);
	cr_log_info("rotation on a full disk: %lu files of 48 to 64 KiB written on 256 KiB, the newest %zu left (from %.2f s)",
		    files, n, parts[0].start / 1e9);
}

/*
 * Nothing to delete: one file of the series (--max-size above the disk's
 * size) fills the disk. record fails with ENOSPC naming it, and the file is
 * good up to its last sealed node.
 */
Test(full_disk, rotation_with_nothing_to_delete_fails, .fini = cleanup, .timeout = 120)
{
	struct part parts[8];
	char out[128], named[256];
	struct run r;

	start("40k", out, sizeof(out), true);
	RUN(&r, "record", "--level", "full", "-o", out, "--max-size", "1M", "--keep", "3", "--duration", "30");
	cr_assert_eq(r.status, 1, "a full disk with nothing to delete is an error (exit 1), not %d: %s", r.status,
		     r.err);
	named_file(r.err, named, sizeof(named));
	cr_assert_eq(series(NULL, parts, 8), 1, "the one file is left");
	cr_assert(strstr(named, parts[0].name), "the error names the file left (%s): %s", parts[0].name, r.err);
}

/*
 * Without --keep the files of the series are the user's: nothing is deleted,
 * and the disk fills up wherever the writing is, within a file or at the
 * start of the next one. Every file left is good (none half written, none
 * under a temporary name), and record fails naming the file it could not write.
 */
Test(full_disk, rotation_without_keep_leaves_only_good_files, .fini = cleanup, .timeout = 120)
{
	struct part parts[16];
	char out[128], named[256];
	struct run r;
	size_t n;

	start("256k", out, sizeof(out), true);
	RUN(&r, "record", "--level", "full", "-o", out, "--max-size", "64K", "--duration", "30");
	cr_assert_eq(r.status, 1, "a full disk is an error (exit 1), not %d: %s", r.status, r.err);
	named_file(r.err, named, sizeof(named));
	n = series(NULL, parts, 16);
	cr_assert_geq(n, 2, "the disk holds more than one file of 64 KiB");
	cr_assert_eq(parts[0].start, 0, "the first file is kept");
	unbroken(parts, n);
}

/*
 * The header of a new file of the series does not fit: no file appears under
 * its name (it is written under a temporary name, renamed once whole), and
 * the temporary file is gone. A file that fills the disk but for 8 KiB
 * leaves less room than a 16 KiB header.
 */
Test(full_disk, a_header_that_does_not_fit_leaves_no_file, .fini = cleanup, .timeout = 60)
{
	struct part parts[4];
	char out[128], named[256], filler[128];
	static char block[4096];
	struct run r;
	FILE *f;

	start("64k", out, sizeof(out), false);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	f = fopen(filler, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 14; i++)
		cr_assert_eq(fwrite(block, sizeof(block), 1, f), 1);
	cr_assert_eq(fclose(f), 0, "56 KiB of the 64 KiB are taken");
	RUN(&r, "record", "-o", out, "--max-size", "64K", "--keep", "3", "--duration", "5");
	cr_assert_eq(r.status, 1, "no room for a header: exit 1, not %d: %s", r.status, r.err);
	named_file(r.err, named, sizeof(named));
	cr_assert(strstr(named, "/rec-"), "the file of the series is named: %s", r.err);
	cr_assert_eq(access(named, F_OK), -1, "no half-written %s", named);
	cr_assert_eq(series("filler", parts, 4), 0, "nothing but the filler is left");
}
