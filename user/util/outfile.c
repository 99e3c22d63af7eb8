// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* outfile.c - atomic output files (outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/util.h"

/* The target exists and is not a regular file: it is written in place. */
static bool in_place(const char *path)
{
	struct stat st;

	return !strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

int outfile_temp_name(const char *path, char *out, size_t len)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (snprintf(a, sizeof(a), "%s", path) >= (int)sizeof(a) ||
	    snprintf(b, sizeof(b), "%s", path) >= (int)sizeof(b))
		return -ENAMETOOLONG;
	if (snprintf(out, len, "%s/.%s.tmp.XXXXXX", dirname(a), basename(b)) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int open_in_place(const char *path, struct vcpustat_error *err)
{
	int fd;

	if (!strcmp(path, "-"))
		return dup(STDOUT_FILENO);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return verror(err, -errno, "%s: cannot write: %s", path, strerror(errno));
	return fd;
}

/* A name that can be an output: not empty, not a directory. */
static int check_target(const char *path, struct vcpustat_error *err)
{
	struct stat st;

	if (!*path)
		return verror(err, -EINVAL, "empty output file name");
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return verror(err, -EISDIR, "%s: is a directory (give a file name)", path);
	return 0;
}

int outfile_check(const char *path, struct vcpustat_error *err)
{
	/* outfile_temp() refuses an empty name and a directory (in_place() is false for both) */
	bool here = *path && in_place(path);
	char tmp[PATH_MAX];
	int fd = here ? open_in_place(path, err) : outfile_temp(path, tmp, sizeof(tmp), err);

	if (fd < 0)
		return fd;
	close(fd);
	if (!here)
		unlink(tmp);
	return 0;
}

int outfile_write(const char *path, const void *buf, size_t len, struct vcpustat_error *err)
{
	char tmp[PATH_MAX];
	int fd, e;

	if (in_place(path)) {
		fd = open_in_place(path, err);
		if (fd < 0)
			return fd;
		e = write_all(fd, buf, len);
		close(fd);
		return e ? verror(err, e, "%s: write: %s", path, strerror(-e)) : 0;
	}
	fd = outfile_temp(path, tmp, sizeof(tmp), err);
	if (fd < 0)
		return fd;
	e = write_all(fd, buf, len);
	if (e) {
		close(fd);
		unlink(tmp);
		return verror(err, e, "%s: write: %s", path, strerror(-e));
	}
	return outfile_commit(fd, tmp, path, err);
}

int outfile_temp(const char *path, char *tmp, size_t len, struct vcpustat_error *err)
{
	int fd, e = check_target(path, err);

	if (e)
		return e;
	e = outfile_temp_name(path, tmp, len);
	if (e)
		return verror(err, e, "%s: path too long", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return verror(err, -errno, "%s: cannot write there: %s", path, strerror(errno));
	return fd;
}

int outfile_commit(int fd, const char *tmp, const char *path, struct vcpustat_error *err)
{
	int e = 0;

	if (fchmod(fd, 0644) || fsync(fd))
		e = -errno;
	if (close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e) {
		unlink(tmp);
		return verror(err, e, "%s: write: %s", path, strerror(-e));
	}
	return 0;
}

int outfile_refuse_input(const char *out, const char *const *inputs, size_t n, struct vcpustat_error *err)
{
	struct stat so, si;
	size_t i;

	if (!out)
		return 0;
	if (!*out)
		return verror(err, -EINVAL, "empty output file name");
	if (!strcmp(out, "-") || stat(out, &so)) /* stdout, or a new file: no input can be it */
		return 0;
	for (i = 0; i < n; i++) {
		if (!inputs[i] || !strcmp(inputs[i], "-") || stat(inputs[i], &si))
			continue;
		if (so.st_dev == si.st_dev && so.st_ino == si.st_ino)
			return verror(err, -EEXIST,
				      "%s is the input file %s (the same file%s): refusing to write over an input; choose another output",
				      out, inputs[i], strcmp(out, inputs[i]) ? ", through a link or another path" : "");
	}
	return 0;
}
