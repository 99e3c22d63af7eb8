// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: trace-cmd's trace.dat reader (user/import/tracedat.c,
 * through libtracecmd and libtraceevent) on arbitrary bytes, given as a file
 * (libtracecmd reads by path: a memfd's /proc/self/fd path). Each input is
 * read strictly (an error must name the file) and leniently (every record is
 * accounted for), then read again after a rewind (the import's second pass:
 * the same counts), every event run through the kernel's handler in user
 * space (replay, level full).
 *
 * libtracecmd and libtraceevent are not instrumented: libFuzzer steers by the
 * edges of our reader only. tracedat.c reads the CPU buffers in a forked
 * child (libtracecmd 3.1.6 crashes on truncated files, libtraceevent reads
 * out of bounds on damaged pages) and converts the records it sends here, so
 * ASan watches our conversion and libtraceevent's field reads in this
 * process, and libtracecmd's header and format parsing
 * (tracecmd_open_head); LeakSanitizer their leaks. A crash in the child is
 * the reader's error, not the fuzzer's.
 *
 * libFuzzer's malloc limit (-rss_limit_mb) would fire in that child on the
 * huge sizes libtracecmd reads from garbage, and its out-of-memory handler
 * hangs there (the fork copied its other threads' locks, not the threads):
 * the limit is turned off (LLVMFuzzerInitialize). ASan's own allocation
 * limit bounds those sizes instead: a garbage size of 4 GB cost 3 s in each
 * child under ASan (shadow poisoning; 47 ms in a release build) and ran past
 * the fuzzer's 5 s timeout. Above 256 MB malloc returns NULL, which
 * libtracecmd reports as a failure to read the file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "import/import.h"
#include "record/record.h"

/* Read the whole trace; the stats it ended with in *out. Returns trace_next's last value. */
static int read_once(struct trace_reader *r, const char *path, bool lenient, struct replay *rp,
		     struct trace_stats *out)
{
	struct vcpustat_error err = { 0 };
	const struct trace_stats *st;
	struct trace_event ev;
	int e;

	while ((e = trace_next(r, &ev, &err)) == 1) {
		if (ev.ev.type >= VCPUSTAT_NR_EVENTS || (ev.marker && ev.marker != 'a' && ev.marker != 'd'))
			abort();
		if (rp && ev.ev.type != VCPUSTAT_EV_NONE)
			replay_event(rp, &ev.ev);
	}
	st = trace_get_stats(r);
	if (e < 0 && !strstr(err.msg, path))
		abort(); /* every error names the file */
	if (e < 0 && lenient && !strstr(err.msg, "libtracecmd") && !strstr(err.msg, "out of memory"))
		abort(); /* lenient: only libtracecmd itself (stopping, or its reader crashing) may stop the reading */
	if (e == 0 && st->events + st->skipped + st->malformed != st->lines)
		abort(); /* every record is one of these */
	if (!lenient && e == 0 && st->malformed)
		abort();
	*out = *st;
	return e;
}

static void read_all(const char *path, bool lenient, struct replay *rp)
{
	struct trace_opts o = { .lenient = lenient };
	struct vcpustat_error err = { 0 };
	struct trace_stats a, b;
	struct trace_reader *r;
	int ea, eb;

	if (trace_open(&r, path, &o, &err)) {
		if (!strstr(err.msg, path))
			abort(); /* every error names the file */
		return;
	}
	ea = read_once(r, path, lenient, rp, &a);
	if (!trace_rewind(r, &err)) {
		eb = read_once(r, path, lenient, NULL, &b);
		/*
		 * The second pass reads what the first read. Except where the
		 * child reading the CPU buffers died (-EIO) in one of them: on a
		 * damaged file, libtraceevent's reads out of a page's bounds fault
		 * (or trip ASan) or not by the child's heap layout (the header of
		 * user/import/tracedat.c), so it may die at another record, or
		 * before sending any. Both passes must then fail.
		 */
		if (ea == -EIO || eb == -EIO) {
			if (ea >= 0 || eb >= 0)
				abort();
		} else if (ea != eb || a.lines != b.lines || a.events != b.events || a.skipped != b.skipped) {
			abort();
		}
	} else if (!strstr(err.msg, path)) {
		abort();
	}
	trace_close(r);
}

const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1:max_allocation_size_mb=256";
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char *args[256];
	int n = *argc < 254 ? *argc : 254;

	memcpy(args, *argv, (size_t)n * sizeof(*args));
	args[n++] = "-rss_limit_mb=0";
	args[n] = NULL;
	*argc = n;
	*argv = args;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_options po = { .record_level = VCPUSTAT_LEVEL_FULL, .nr_cpus = 64, .max_vcpus = 64,
				     .max_vms = 16, .max_hists = 64, .max_culprits = 64 };
	struct replay *rp = NULL;
	char path[64];
	int fd = memfd_create("fuzz-tracedat", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	replay_new(&rp, &po);
	read_all(path, false, NULL);
	read_all(path, true, rp);
	replay_free(rp);
	close(fd);
	return 0;
}
