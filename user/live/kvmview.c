// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kvmview.c - what KVM itself says of the VMs on this host (model.h, struct
 * kvm_view), for the health checks (model/health.c) and `vcpustat probe`:
 * the VMs from KVM's debugfs folder (/sys/kernel/debug/kvm/<pid>-<fd>/),
 * else from the processes that hold a VM (/proc/<pid>/fd, anon_inode:kvm-vm),
 * and each VM's exits from debugfs where it can be read (not under kernel
 * lockdown, which refuses it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "live/live.h"

#define KVM_DEBUGFS "/sys/kernel/debug/kvm"

bool kvm_process_has_vm(const char *proc_root, const char *pid)
{
	char path[512], link[128];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/fd", proc_root, pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/fd/%s", proc_root, pid, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = strcmp(link, "anon_inode:kvm-vm") == 0;
	}
	closedir(d);
	return found;
}

static int add_vm(struct kvm_view *v, size_t *cap, __u32 tgid, struct kvm_vm_seen **out)
{
	for (size_t i = 0; i < v->nr_vms; i++) /* a process with two VMs: one entry, their exits added */
		if (v->vms[i].tgid == tgid) {
			*out = &v->vms[i];
			return 0;
		}
	if (v->nr_vms == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		struct kvm_vm_seen *p = realloc(v->vms, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		v->vms = p;
		*cap = n;
	}
	*out = &v->vms[v->nr_vms++];
	memset(*out, 0, sizeof(**out));
	(*out)->tgid = tgid;
	(*out)->exits_known = true; /* until one of its VMs' counts cannot be read */
	return 0;
}

/* One VM's exits from debugfs: 0, or -errno (its why for the user in v->exits_why). */
static int read_exits(struct kvm_view *v, const char *entry, __u64 *exits)
{
	char path[128];
	unsigned long long n;
	FILE *f;
	int got;

	snprintf(path, sizeof(path), KVM_DEBUGFS "/%.64s/exits", entry);
	f = fopen(path, "re");
	if (!f) {
		int e = -errno;

		if (!v->exits_why[0])
			snprintf(v->exits_why, sizeof(v->exits_why), "%.60s: %.24s%s", path, strerror(errno),
				 e == -EPERM ? " (kernel lockdown keeps KVM's counters in debugfs from being read)" : "");
		return e;
	}
	got = fscanf(f, "%llu", &n);
	fclose(f);
	if (got != 1) {
		if (!v->exits_why[0])
			snprintf(v->exits_why, sizeof(v->exits_why), "%.100s: not a number", path);
		return -EINVAL;
	}
	*exits = n;
	return 0;
}

static int from_debugfs(struct kvm_view *v, DIR *d, bool (*want)(void *ctx, __u32 tgid), void *ctx)
{
	struct dirent *de;
	size_t cap = 0;
	int err = 0;

	snprintf(v->source, sizeof(v->source), "debugfs");
	while (!err && (de = readdir(d))) {
		struct kvm_vm_seen *vm;
		unsigned int pid, fd;
		__u64 exits = 0;
		char tail;

		/* <pid>-<fd> (kernels from 5.x may add -<vm id> after it) */
		if (sscanf(de->d_name, "%u-%u%c", &pid, &fd, &tail) < 2)
			continue;
		err = add_vm(v, &cap, pid, &vm);
		if (err)
			break;
		/* each read walks the VM's vCPUs (150 ms under the KVM lab's emulation): only those asked for */
		if ((want && !want(ctx, pid)) || read_exits(v, de->d_name, &exits))
			vm->exits_known = false;
		vm->exits += exits;
	}
	return err;
}

static int from_proc(struct kvm_view *v, const char *proc_root)
{
	struct dirent *de;
	size_t cap = 0;
	int err = 0;
	DIR *d = opendir(proc_root);

	if (!d)
		return -errno;
	snprintf(v->source, sizeof(v->source), "/proc");
	snprintf(v->exits_why, sizeof(v->exits_why), "KVM's debugfs (%s) is not there: debugfs is not mounted",
		 KVM_DEBUGFS);
	while (!err && (de = readdir(d))) {
		struct kvm_vm_seen *vm;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || !kvm_process_has_vm(proc_root, de->d_name))
			continue;
		err = add_vm(v, &cap, (__u32)atoi(de->d_name), &vm);
		if (!err)
			vm->exits_known = false;
	}
	closedir(d);
	return err;
}

/* The VMM process's user + system time (/proc/<pid>/stat, fields 14 and 15). */
static void read_cpu(struct kvm_vm_seen *vm, const char *proc_root)
{
	static long hz;
	char path[128], buf[1024], *p;
	unsigned long long ut, st, start;
	struct timespec now;
	ssize_t n;
	int fd;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	snprintf(path, sizeof(path), "%s/%u/stat", proc_root, vm->tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	/* after the name: state, then fields 4-13, utime 14, stime 15, ..., starttime 22 */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu",
			 &ut, &st, &start) != 3)
		return;
	vm->cpu_known = true;
	vm->cpu_ns = (ut + st) * (1000000000ull / (unsigned long long)hz);
	if (clock_gettime(CLOCK_BOOTTIME, &now) == 0) {
		__u64 boot = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
		__u64 started = start * (1000000000ull / (unsigned long long)hz);

		vm->age_ns = boot > started ? boot - started : 0;
	}
}

int kvm_view_read(struct kvm_view *v, const char *proc_root, bool (*want_exits)(void *ctx, __u32 tgid), void *ctx)
{
	DIR *d;
	int err;

	memset(v, 0, sizeof(*v));
	v->ts = vcpustat_now_ns();
	d = proc_root ? NULL : opendir(KVM_DEBUGFS);
	if (d) {
		err = from_debugfs(v, d, want_exits, ctx);
		closedir(d);
	} else {
		err = from_proc(v, proc_root ? proc_root : "/proc");
	}
	if (err) {
		kvm_view_free(v);
		return err;
	}
	for (size_t i = 0; i < v->nr_vms; i++)
		read_cpu(&v->vms[i], proc_root ? proc_root : "/proc");
	return 0;
}
