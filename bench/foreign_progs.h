/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * foreign_progs.h - for the benchmarks that measure BPF programs on the
 * scheduler tracepoints: programs of others on sched_switch/sched_wakeup
 * (another tracer, a vcpustat left running) run in the same tracepoint calls
 * and change what ours cost (the first program on a tracepoint pays for
 * pages the next ones find warm), so such a run must be told apart.
 */
#ifndef VCPUSTAT_BENCH_FOREIGN_PROGS_H
#define VCPUSTAT_BENCH_FOREIGN_PROGS_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

static inline int foreign_sched_programs(void)
{
	__u32 id = 0;
	int n = 0;

	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);
		char name[64] = "";
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		info.raw_tracepoint.tp_name = (__u64)(unsigned long)name;
		info.raw_tracepoint.tp_name_len = sizeof(name);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == BPF_LINK_TYPE_RAW_TRACEPOINT &&
		    (!strcmp(name, "sched_switch") || !strcmp(name, "sched_wakeup")))
			n++;
		close(fd);
	}
	return n;
}

static inline void warn_foreign_sched_programs(void)
{
	int n = foreign_sched_programs();

	if (n)
		printf("WARNING: %d other BPF program(s) attached to sched_switch/sched_wakeup: they share the "
		       "tracepoint calls, so these figures are not comparable with a quiet machine's\n",
		       n);
}

#endif /* VCPUSTAT_BENCH_FOREIGN_PROGS_H */
