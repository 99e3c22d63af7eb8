// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * inject-vms: simulated VMs for running vcpustat processes (`serve`,
 * `record`), on hosts without /dev/kvm. Each process loads its own BPF
 * object; this tool finds the object's injection program among the file
 * descriptors of the process (/proc/PID/fd, fdinfo prog_id, the program named
 * "inject") and runs it with made-up events (bpf_prog_test_run), so the
 * events land in that process's maps and ring buffer exactly as the
 * tracepoints' would. Every event goes to every -p PID, in the same order.
 *
 *   fill:  VMS VMs x VCPUS vCPUs, each with exits of 6 reasons, userspace
 *          exits of 2, a preemption by a host thread of its VM; they stay.
 *   churn: LIVE VMs at any time; every second, RATE of them are destroyed
 *          (sched_process_exit of each vCPU thread, then of the process) and
 *          as many new ones created; every VM runs a round of events 5 times
 *          a second. Until SECONDS have passed or SIGTERM/SIGINT. New VMs get
 *          new pids (see PID_BASE), so entries that are never forgotten pile
 *          up.
 *   maps:  entries of the hash maps of each process's BPF object
 *          (vcpus, vms, hists, dead_vcpus, culprits), one line per PID.
 *
 * usage: inject-vms fill  -p PID... [-v VMS] [-c VCPUS]
 *        inject-vms churn -p PID... [-n LIVE] [-c VCPUS] [-r RATE] [-t SECONDS]
 *        inject-vms maps  -p PID...                                  (as root)
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "vcpustat_abi.h"
#include "exit_reasons.h"

#define MAX_PIDS 8
/*
 * Made-up VM k: tgid PID_BASE + k * PID_STRIDE, vCPU i: tgid + 1 + i, its
 * host thread (the culprit of its preemptions): tgid + PID_STRIDE - 1. Above
 * this host's pid_max, below the 4,194,304 the BPF side's tid bitmap covers;
 * VM numbers wrap after NR_SLOTS (a day at 1 new VM a second).
 */
#define PID_BASE 1000000u
#define PID_STRIDE 32u
#define NR_SLOTS 100000u

struct target {
	int pid;
	int inject_fd; /* the injection program (-1: none) */
	int map_fd[5];
};

static const char *const map_names[] = { "vcpus", "vms", "hists", "dead_vcpus", "culprits" };
#define NR_MAPS (sizeof(map_names) / sizeof(map_names[0]))

static struct target targets[MAX_PIDS];
static int nr_targets;
static volatile sig_atomic_t stop;
static unsigned long long injected, exits; /* events, of which kvm_exit */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The file descriptor of the BPF object id (prog or map) held by fd link, or -1. */
static int bpf_id_of(int pid, const char *fd, const char *kind, __u32 *id)
{
	char path[64], line[128], link[64];
	ssize_t n;
	FILE *f;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = '\0';
	if (strncmp(link, "anon_inode:bpf-", 15) || strcmp(link + 15, kind))
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if ((!strcmp(kind, "prog") && sscanf(line, "prog_id: %u", id) == 1) ||
		    (!strcmp(kind, "map") && sscanf(line, "map_id: %u", id) == 1))
			found = 0;
	fclose(f);
	return found;
}

/* The injection program and the maps of process pid's vcpustat BPF object. */
static int attach_target(struct target *t, int pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	t->pid = pid;
	t->inject_fd = -1;
	for (size_t i = 0; i < NR_MAPS; i++)
		t->map_fd[i] = -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "inject-vms: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		__u32 id;
		int fd;

		if (!bpf_id_of(pid, de->d_name, "prog", &id)) {
			struct bpf_prog_info info = { 0 };
			__u32 len = sizeof(info);

			fd = bpf_prog_get_fd_by_id(id);
			if (fd < 0)
				continue;
			if (t->inject_fd < 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) &&
			    info.type == BPF_PROG_TYPE_RAW_TRACEPOINT && !strcmp(info.name, "inject"))
				t->inject_fd = fd;
			else
				close(fd);
		} else if (!bpf_id_of(pid, de->d_name, "map", &id)) {
			struct bpf_map_info info = { 0 };
			__u32 len = sizeof(info);
			bool kept = false;

			fd = bpf_map_get_fd_by_id(id);
			if (fd < 0)
				continue;
			if (!bpf_obj_get_info_by_fd(fd, &info, &len))
				for (size_t i = 0; i < NR_MAPS; i++)
					if (t->map_fd[i] < 0 && !strcmp(info.name, map_names[i])) {
						t->map_fd[i] = fd;
						kept = true;
					}
			if (!kept)
				close(fd);
		}
	}
	closedir(d);
	if (t->inject_fd < 0) {
		fprintf(stderr, "inject-vms: process %d holds no vcpustat injection program (not vcpustat, or not "
				"loaded yet)\n", pid);
		return -1;
	}
	return 0;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* One event to every target; ts: now, after the previous event's. */
static int inject(__u64 type, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2, __u32 tgid2, __u64 a0, __u64 a1,
		  __u64 a2, const char *comm)
{
	static __u64 last;
	struct vcpustat_event ev = { .type = type, .cpu = cpu, .tid = tid, .tgid = tgid, .tid2 = tid2,
				     .tgid2 = tgid2, .arg0 = a0, .arg1 = a1, .arg2 = a2 };
	__u64 t = now_ns();

	ev.ts = last = t > last ? t : last + 1;
	snprintf(ev.comm, sizeof(ev.comm), "%s", comm);
	for (int i = 0; i < nr_targets; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ev, .ctx_size_in = sizeof(ev));

		if (bpf_prog_test_run_opts(targets[i].inject_fd, &opts)) {
			fprintf(stderr, "inject-vms: process %d: running the injection program: %s\n", targets[i].pid,
				strerror(errno));
			return -1;
		}
	}
	injected++;
	return 0;
}

/* One round of VM k's vCPUs: exits of 6 reasons, 2 userspace exits, a preemption by its hog. */
static int vm_round(__u32 k, int vcpus)
{
	static const __u32 reasons[] = { 30, 32, 48, 12, 1, 10 };
	__u32 tgid = PID_BASE + k % NR_SLOTS * PID_STRIDE, hog = tgid + PID_STRIDE - 1;
	char comm[24]; /* "CPU <any int>/KVM": the event keeps 15 characters, as the kernel's comm (inject) */

	for (int c = 0; c < vcpus; c++) {
		__u32 tid = tgid + 1 + (__u32)c, cpu = (__u32)c % 64;

		snprintf(comm, sizeof(comm), "CPU %d/KVM", c);
		exits += 6;
		for (int r = 0; r < 6; r++)
			if (inject(VCPUSTAT_EV_KVM_EXIT, cpu, tid, tgid, 0, 0, reasons[r], KVM_ISA_VMX, (__u64)c, comm) ||
			    inject(VCPUSTAT_EV_KVM_ENTRY, cpu, tid, tgid, 0, 0, (__u64)c, 0, 0, comm))
				return -1;
		for (int u = 0; u < 2; u++)
			if (inject(VCPUSTAT_EV_USERSPACE_EXIT, cpu, tid, tgid, 0, 0, u ? 5 : 2, 0, 0, comm) ||
			    inject(VCPUSTAT_EV_KVM_RUN, cpu, tid, tgid, 0, 0, 0, 0, 0, comm))
				return -1;
		if (inject(VCPUSTAT_EV_SWITCH, cpu, tid, tgid, hog, tgid, 0, 1, 0, comm) ||
		    inject(VCPUSTAT_EV_SWITCH, cpu, hog, tgid, tid, tgid, 0, 1, 0, "churn-hog"))
			return -1;
	}
	return 0;
}

/* VM k's end: each vCPU thread exits, then the process (group_dead). */
static int vm_destroy(__u32 k, int vcpus)
{
	__u32 tgid = PID_BASE + k % NR_SLOTS * PID_STRIDE;
	char comm[24]; /* as vm_round's */

	for (int c = 0; c < vcpus; c++) {
		snprintf(comm, sizeof(comm), "CPU %d/KVM", c);
		if (inject(VCPUSTAT_EV_PROCESS_EXIT, (__u32)c % 64, tgid + 1 + (__u32)c, tgid, 0, 0, 0, 0, 0, comm))
			return -1;
	}
	return inject(VCPUSTAT_EV_PROCESS_EXIT, 0, tgid, tgid, 0, 0, 1, 0, 0, "churn-vmm");
}

static long count_entries(int fd)
{
	__u64 key[8], next[8]; /* the largest key of these maps is 16 bytes */
	long n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, sizeof(key));
		prev = key;
		n++;
	}
	return n;
}

static void usage(void)
{
	fprintf(stderr, "usage: inject-vms fill  -p PID... [-v VMS] [-c VCPUS]\n"
			"       inject-vms churn -p PID... [-n LIVE] [-c VCPUS] [-r RATE] [-t SECONDS]\n"
			"       inject-vms maps  -p PID...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int vms = 50, vcpus = 20, live = 10, rate = 2, seconds = 60, c;
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "fill") && strcmp(mode, "churn") && strcmp(mode, "maps"))
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "p:v:c:n:r:t:")) != -1) {
		switch (c) {
		case 'p':
			if (nr_targets == MAX_PIDS)
				usage();
			if (attach_target(&targets[nr_targets], atoi(optarg)))
				return 1;
			nr_targets++;
			break;
		case 'v': vms = atoi(optarg); break;
		case 'c': vcpus = atoi(optarg); break;
		case 'n': live = atoi(optarg); break;
		case 'r': rate = atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		default: usage();
		}
	}
	if (!nr_targets || vms < 1 || vcpus < 1 || vcpus > (int)PID_STRIDE - 2 || live < 1 || rate < 0 || rate > live || seconds < 1)
		usage();

	if (!strcmp(mode, "maps")) {
		for (int i = 0; i < nr_targets; i++) {
			printf("pid %d", targets[i].pid);
			for (size_t m = 0; m < NR_MAPS; m++)
				printf(" %s %ld", map_names[m], targets[i].map_fd[m] < 0 ? -1 : count_entries(targets[i].map_fd[m]));
			printf("\n");
		}
		return 0;
	}
	if (!strcmp(mode, "fill")) {
		for (int k = 0; k < vms; k++)
			if (vm_round((__u32)k, vcpus) || vm_round((__u32)k, vcpus))
				return 1;
		printf("inject-vms: %d VMs x %d vCPUs, %llu events\n", vms, vcpus, injected);
		return 0;
	}

	/* churn: VMs first .. next-1 are alive */
	{
		__u32 first = 0, next = (__u32)live;
		unsigned long created = (unsigned long)live, destroyed = 0;
		__u64 end = now_ns() + (__u64)seconds * 1000000000ull;

		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		for (int tick = 0; !stop && now_ns() < end; tick++) {
			struct timespec pause = { .tv_nsec = 200000000 };

			for (__u32 k = first; k < next; k++)
				if (vm_round(k, vcpus))
					return 1;
			if (tick % 5 == 4)
				for (int r = 0; r < rate; r++) {
					if (vm_destroy(first++, vcpus))
						return 1;
					destroyed++;
					next++;
					created++;
				}
			nanosleep(&pause, NULL);
		}
		/* a last round: the VMs created by the last replacement have events too */
		for (__u32 k = first; k < next; k++)
			if (vm_round(k, vcpus) || vm_destroy(k, vcpus))
				return 1;
		destroyed += next - first;
		printf("inject-vms: %lu VMs created, %lu destroyed, %llu events, %llu exits\n", created, destroyed, injected,
		       exits);
	}
	return 0;
}
