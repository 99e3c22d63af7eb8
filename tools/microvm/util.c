// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Small helpers: clocks, complete writes, atomic file replacement. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "microvm.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int write_file_atomic(const char *path, const char *text)
{
	size_t len = strlen(path) + 32;
	struct stat st;
	char *tmp;
	int fd, err;

	/*
	 * Only a regular file (or a new one) is replaced by rename: a device,
	 * FIFO or socket (/dev/null, /dev/stdout) is written in place, never
	 * replaced by a regular file.
	 */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		err = write_all(fd, text, strlen(text));
		if (close(fd) && !err)
			err = -errno;
		return err;
	}
	tmp = malloc(len);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, len, "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = write_all(fd, text, strlen(text));
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	free(tmp);
	return err;
}
