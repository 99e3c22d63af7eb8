// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * import-bench: where the time of `vcpustat import` goes, on one ftrace text
 * file, each stage timed separately (best of REPEATS, CPU time of this
 * process): reading and parsing only; parsing + the kernel's handler in
 * user space (level full, records dropped); the whole import into an SHT.
 *
 *   import-bench FILE [REPEATS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "import/import.h"
#include "record/record.h"

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int count(void *ctx, const struct vcpustat_record *r)
{
	(*(unsigned long long *)ctx)++;
	return 0;
}

static unsigned long long pass(const char *path, bool handler, unsigned long long *records)
{
	struct replay_options po = { .record_level = VCPUSTAT_LEVEL_FULL, .on_record = count, .ctx = records };
	struct vcpustat_error err = { 0 };
	struct trace_reader *r;
	struct trace_event ev;
	struct replay *rp = NULL;
	unsigned long long n = 0;
	int e;

	if (trace_open(&r, path, NULL, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	if (handler && replay_new(&rp, &po))
		exit(1);
	while ((e = trace_next(r, &ev, &err)) == 1) {
		n++;
		if (rp && ev.ev.type) {
			ev.ev.tgid = ev.tgid > 0 ? (uint64_t)ev.tgid : ev.ev.tid;
			replay_event(rp, &ev.ev);
		}
	}
	if (e < 0) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	replay_free(rp);
	trace_close(r);
	return n;
}

int main(int argc, char **argv)
{
	int repeats = argc > 2 ? atoi(argv[2]) : 3;
	double best[3] = { 1e9, 1e9, 1e9 }, wall_best = 1e9;
	unsigned long long events = 0, records = 0, lines = 0;
	char out[] = "/tmp/import-bench-XXXXXX.sht";
	struct import_result res;

	if (argc < 2) {
		fprintf(stderr, "usage: import-bench FILE [REPEATS]\n");
		return 2;
	}
	close(mkstemps(out, 4));
	for (int i = 0; i < repeats; i++) {
		struct import_opts o = { .host = argv[1], .out = out, .no_sync = true };
		struct vcpustat_error err = { 0 };
		double t0 = cpu_s(), w0;

		events = pass(argv[1], false, NULL);
		if (cpu_s() - t0 < best[0])
			best[0] = cpu_s() - t0;
		t0 = cpu_s();
		records = 0;
		pass(argv[1], true, &records);
		if (cpu_s() - t0 < best[1])
			best[1] = cpu_s() - t0;
		t0 = cpu_s();
		w0 = wall_s();
		if (vcpustat_import(&o, &res, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		if (cpu_s() - t0 < best[2])
			best[2] = cpu_s() - t0;
		if (wall_s() - w0 < wall_best)
			wall_best = wall_s() - w0;
		lines = res.host.lines;
		import_result_free(&res);
	}
	unlink(out);
	printf("file: %s: %llu lines, %llu events used, %llu handler records\n", argv[1], lines, events, records);
	printf("  %-40s %8.3f s CPU  %6.2f M events/s  %6.2f M lines/s\n", "read + parse", best[0], events / best[0] / 1e6,
	       lines / best[0] / 1e6);
	printf("  %-40s %8.3f s CPU  %6.2f M events/s\n", "read + parse + handler (level full)", best[1],
	       events / best[1] / 1e6);
	printf("  %-40s %8.3f s CPU  %6.2f M events/s  (%.3f s wall)\n", "whole import into an SHT", best[2],
	       events / best[2] / 1e6, wall_best);
	return 0;
}
