// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * demo.c - `vcpustat --demo`: two small VMs (tools/microvm next to this
 * binary) and a CPU hog sharing CPU 0; where that cannot run, the bundled
 * recording of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/cli.h"

static int exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/*
 * microvm: next to this binary (the build's bin/), else in ../bin (installed:
 * vcpustat in sbin, microvm in bin). Leaves the first candidate in buf when
 * neither is there, and returns -1 with errno set.
 */
static int microvm_path(char *buf, size_t len)
{
	char dir[PATH_MAX];

	if (exe_dir(dir, sizeof(dir)))
		return -1;
	snprintf(buf, len, "%s/../bin/microvm", dir);
	if (!access(buf, X_OK))
		return 0;
	snprintf(buf, len, "%s/microvm", dir);
	return access(buf, X_OK);
}

/*
 * Why the live demo cannot run here (NULL: it can): VCPUSTAT_DEMO_NO_KVM is
 * set (to try the fallback on a host with KVM), /dev/kvm cannot be opened,
 * microvm is missing, or BPF is not allowed. buf holds the sentence.
 */
const char *demo_unusable(char *buf, size_t len)
{
	const char *force = getenv("VCPUSTAT_DEMO_NO_KVM");
	char vmm[PATH_MAX + 16] = "", why[256];
	int fd;

	if (force && *force && strcmp(force, "0")) {
		snprintf(buf, len, "VCPUSTAT_DEMO_NO_KVM=%s: /dev/kvm taken as unusable", force);
		return buf;
	}
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(buf, len, "no usable /dev/kvm here (%s)", strerror(errno));
		return buf;
	}
	close(fd);
	if (microvm_path(vmm, sizeof(vmm)) && vmm[0]) {
		snprintf(buf, len, "%.300s: %s", vmm, strerror(errno));
		return buf;
	}
	if (vcpustat_check_privileges(why, sizeof(why))) {
		snprintf(buf, len, "cannot trace here: %s", why);
		return buf;
	}
	return NULL;
}

/* The bundled recording: $VCPUSTAT_DEMO_FILE, else <exe dir>/../share/vcpustat/demo.sht. */
int demo_file(char *buf, size_t len, const char *reason)
{
	const char *env = getenv("VCPUSTAT_DEMO_FILE");
	char dir[PATH_MAX], path[PATH_MAX + 32];

	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else if (!exe_dir(dir, sizeof(dir)))
		snprintf(path, sizeof(path), "%s/../share/vcpustat/demo.sht", dir);
	else
		snprintf(path, sizeof(path), "share/vcpustat/demo.sht");
	if (!realpath(path, buf) || access(buf, R_OK)) {
		cli_err("--demo: %s, and the bundled recording %s cannot be read: %s (build it: ./build.sh build; or set "
			"VCPUSTAT_DEMO_FILE to a recording)",
			reason, path, strerror(errno));
		return -1;
	}
	(void)len;
	return 0;
}

int demo_start(struct demo *d)
{
	char vmm[PATH_MAX + 16];
	cpu_set_t cpu0;

	memset(d, 0, sizeof(*d));
	vmm[0] = '\0';
	if (microvm_path(vmm, sizeof(vmm))) {
		if (!vmm[0]) {
			cli_err("--demo: cannot find my own directory");
			return -1;
		}
		cli_err("--demo: %s: %s (it is built with vcpustat: ./build.sh build)", vmm, strerror(errno));
		return -1;
	}
	if (access("/dev/kvm", R_OK | W_OK)) {
		cli_err("--demo: /dev/kvm: %s (the demo runs two small VMs)", strerror(errno));
		return -1;
	}
	d->hog = fork();
	if (d->hog == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		prctl(PR_SET_NAME, "demo-cpu-hog");
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		CPU_ZERO(&cpu0);
		CPU_SET(0, &cpu0);
		sched_setaffinity(0, sizeof(cpu0), &cpu0);
		for (;;)
			;
	}
	d->vmm = fork();
	if (d->vmm == 0) {
		int null = open("/dev/null", O_WRONLY);

		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execl(vmm, vmm, "--vms", "2", "--vcpus", "2", "--pin", "0", "--busy-us", "3000", "--idle-us", "2000",
		      "-name", "demo", (char *)NULL);
		_exit(127);
	}
	if (d->hog < 0 || d->vmm < 0) {
		cli_err("--demo: fork: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void demo_stop(struct demo *d)
{
	pid_t pids[2] = { d->vmm, d->hog };

	for (int i = 0; i < 2; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGTERM);
		waitpid(pids[i], NULL, 0);
	}
}
