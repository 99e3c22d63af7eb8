/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * prog_cost.h - what the benchmarks that compare vcpustat's handlers with
 * empty programs share (handler_cost.c, kvm_event_cost.c): a BPF program's
 * bpf_stats (BPF_STATS_RUN_TIME on), how many times it ran and for how long
 * in all; a set of programs attached alone for a phase; and where the
 * binaries they start are.
 */
#ifndef VCPUSTAT_BENCH_PROG_COST_H
#define VCPUSTAT_BENCH_PROG_COST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct prog_cost {
	__u64 run_cnt, run_time_ns;
};

/* The program at fd's counters now; 0 or -errno (c zeroed then). */
static inline int prog_cost(int fd, struct prog_cost *c)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	memset(c, 0, sizeof(*c));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return fd < 0 ? -EBADF : -errno;
	c->run_cnt = info.run_cnt;
	c->run_time_ns = info.run_time_ns;
	return 0;
}

/* ns per run between two readings a and b (0 if it did not run). */
static inline double per_run(const struct prog_cost *a, const struct prog_cost *b)
{
	__u64 n = b->run_cnt - a->run_cnt;

	return n ? (double)(b->run_time_ns - a->run_time_ns) / (double)n : 0;
}

/*
 * Attach p[0..n) (a NULL one is skipped), each alone, for a phase: links[]
 * to prog_detach after it, also when this fails. 0 or -errno.
 */
static inline int prog_attach(struct bpf_program *const p[], struct bpf_link *links[], int n)
{
	for (int i = 0; i < n; i++)
		links[i] = NULL;
	for (int i = 0; i < n; i++) {
		if (!p[i])
			continue;
		links[i] = bpf_program__attach(p[i]);
		if (!links[i])
			return errno ? -errno : -EINVAL;
	}
	return 0;
}

static inline void prog_detach(struct bpf_link *links[], int n)
{
	for (int i = 0; i < n; i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
}

/* The path of name beside this program's own binary (build/bin/microvm for build/bin/handler-cost). */
static inline void sibling_binary(char *buf, size_t len, const char *name)
{
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = '\0';
	if (strrchr(self, '/'))
		*strrchr(self, '/') = '\0';
	snprintf(buf, len, "%s/%s", self, name);
}

#endif
