// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach-empty: attach the empty programs (bpf/empty.bpf.c) to sched_switch,
 * sched_wakeup and sched_waking (vcpustat's scheduler tracepoints) and hold them
 * until SIGINT/SIGTERM: the floor any BPF scheduler tracer pays, for
 * bench/overhead.sh.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "empty.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(void)
{
	struct empty_bpf *e = empty_bpf__open_and_load();

	if (!e || empty_bpf__attach(e)) {
		fprintf(stderr, "attach-empty: cannot load/attach (root needed)\n");
		empty_bpf__destroy(e);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop)
		pause();
	empty_bpf__destroy(e);
	return 0;
}
