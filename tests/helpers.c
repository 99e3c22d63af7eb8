// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "helpers.h"
#include "loader.h"

const char *bpf_unavailable(void)
{
	static char msg[256];

	if (vcpustat_check_privileges(msg, sizeof(msg)))
		return msg;
	return NULL;
}

const char *kvm_unavailable(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return "/dev/kvm cannot be opened (no KVM on this machine, or no permission)";
	close(fd);
	return NULL;
}
