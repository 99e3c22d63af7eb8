// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the ftrace text reader on arbitrary bytes. Each input
 * is read strictly (the first malformed line is an error that must name the
 * file and a line number) and leniently (malformed lines are counted; every
 * line is accounted for), one of the two parsing ahead in a second thread,
 * and every event it returns runs through the kernel's handler in user space
 * (replay, level full).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "import/import.h"
#include "record/record.h"

static void read_all(const char *path, bool lenient, int ahead, struct replay *rp)
{
	struct trace_opts o = { .lenient = lenient, .parse_ahead = ahead };
	struct vcpustat_error err = { 0 };
	const struct trace_stats *st;
	struct trace_reader *r;
	struct trace_event ev;
	char where[64];
	int e;

	if (trace_open(&r, path, &o, &err)) {
		if (!strstr(err.msg, path))
			abort(); /* every error names the file */
		return;
	}
	while ((e = trace_next(r, &ev, &err)) == 1) {
		if (ev.ev.type >= VCPUSTAT_NR_EVENTS || (ev.marker && ev.marker != 'a' && ev.marker != 'd'))
			abort();
		if (rp && ev.ev.type != VCPUSTAT_EV_NONE)
			replay_event(rp, &ev.ev);
	}
	st = trace_get_stats(r);
	if (e < 0) {
		snprintf(where, sizeof(where), "%s:%llu: ", path, (unsigned long long)st->lines);
		if (lenient || !strstr(err.msg, where))
			abort(); /* strict: file:line of the bad line; lenient: never an error */
	} else if (st->events + st->skipped + st->headers + st->malformed + st->lost_lines != st->lines) {
		abort(); /* every line is one of these */
	}
	if (!lenient && e == 0 && st->malformed)
		abort();
	trace_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/fuzz-ftrace-XXXXXX";
	struct replay_options po = { .record_level = VCPUSTAT_LEVEL_FULL, .nr_cpus = 64, .max_vcpus = 64,
				     .max_vms = 16, .max_hists = 64, .max_culprits = 64 };
	struct ftrace_parser p;
	struct trace_event ev;
	struct replay *rp = NULL;
	int fd;

	/* the line parser directly, on every line */
	ftrace_parser_init(&p, size ? data[0] % 3 : 0);
	for (size_t i = 0; i < size;) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : size - i;

		if (ftrace_parse_line(&p, (const char *)data + i, n, &ev) == FTRACE_BAD && !p.why[0])
			abort();
		i += n + 1;
	}
	/* and the reader, over a file */
	fd = mkstemp(path);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	replay_new(&rp, &po);
	read_all(path, false, size & 1 ? 1 : -1, NULL);
	read_all(path, true, size & 1 ? -1 : 1, rp);
	replay_free(rp);
	unlink(path);
	return 0;
}
