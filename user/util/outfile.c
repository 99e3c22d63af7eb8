// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* outfile.c - where an output file is written, and how (the rule: util.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include "util/util.h"

/* What a path names, its symbolic links followed (resolve()). */
enum target {
	TARGET_NEW, /* nothing yet */
	TARGET_REGULAR,
	TARGET_DIR,
	TARGET_OTHER,  /* a device, a FIFO, a socket */
	TARGET_PROC,   /* a link of /proc, as /proc/self/fd/N: it opens what it names, not what it reads */
	TARGET_STDOUT, /* "-" */
};

/* ---- what the path names ---- */

/* Is the symlink at path one of /proc's? */
static bool proc_link(const char *path)
{
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct statfs sf;
	bool proc;

	if (fd < 0)
		return false;
	proc = !fstatfs(fd, &sf) && sf.f_type == PROC_SUPER_MAGIC;
	close(fd);
	return proc;
}

/* cur, a symlink, becomes the path it names (its text, relative to cur's directory unless absolute). */
static int follow(char *cur, size_t len)
{
	char text[PATH_MAX], here[PATH_MAX];
	ssize_t n = readlink(cur, text, sizeof(text) - 1);

	if (n < 0)
		return -errno;
	text[n] = 0;
	if (text[0] == '/')
		return snprintf(cur, len, "%s", text) >= (int)len ? -ENAMETOOLONG : 0;
	snprintf(here, sizeof(here), "%s", cur);
	return snprintf(cur, len, "%s/%s", dirname(here), text) >= (int)len ? -ENAMETOOLONG : 0;
}

/*
 * Follow path's symlinks one at a time (a link of /proc is where it stops:
 * what it names is no path) into target; *st is what is there. The kind, or
 * a negative errno with err.
 */
static int resolve(const char *path, char *target, size_t len, struct stat *st, struct vcpustat_error *err)
{
	int hops, e;

	if (!*path)
		return verror(err, -EINVAL, "empty output file name");
	if (!strcmp(path, "-")) {
		snprintf(target, len, "-");
		if (fstat(STDOUT_FILENO, st))
			return verror(err, -errno, "stdout: %s", strerror(errno));
		return TARGET_STDOUT;
	}
	if (snprintf(target, len, "%s", path) >= (int)len)
		return verror(err, -ENAMETOOLONG, "%s: path too long", path);
	for (hops = 0; hops < 40; hops++) {
		if (lstat(target, st))
			return errno == ENOENT ? TARGET_NEW : verror(err, -errno, "%s: %s", path, strerror(errno));
		if (S_ISREG(st->st_mode))
			return TARGET_REGULAR;
		if (S_ISDIR(st->st_mode))
			return TARGET_DIR;
		if (!S_ISLNK(st->st_mode))
			return TARGET_OTHER;
		if (proc_link(target)) {
			if (stat(target, st))
				return verror(err, -errno, "%s: %s", path, strerror(errno));
			return S_ISDIR(st->st_mode) ? TARGET_DIR : TARGET_PROC;
		}
		e = follow(target, len);
		if (e)
			return verror(err, e, "%s: %s", path, strerror(-e));
	}
	return verror(err, -ELOOP, "%s: %s", path, strerror(ELOOP));
}

/* What st is, for messages ("a FIFO (named pipe)"; fd >= 0: a terminal says so). */
static const char *what_is(const struct stat *st, int fd)
{
	if (fd >= 0 && isatty(fd))
		return "a terminal";
	return file_kind(st->st_mode);
}

/* The number of our own descriptor that link (in /proc/self/fd, or /dev/fd) is; else -1. */
static int own_fd(const char *link)
{
	const char *slash = strrchr(link, '/');
	char here[PATH_MAX], *end;
	struct stat a, b;
	long n;

	if (!slash || slash[1] < '0' || slash[1] > '9')
		return -1;
	n = strtol(slash + 1, &end, 10);
	if (*end || n > INT_MAX)
		return -1;
	snprintf(here, sizeof(here), "%.*s", (int)(slash - link), link);
	if (stat(here[0] ? here : "/", &a) || stat("/proc/self/fd", &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino || fcntl((int)n, F_GETFD) < 0)
		return -1;
	return (int)n;
}

/* The descriptor a target in place is (stdout, ours through /proc/self/fd), or -1: it is opened. */
static int fd_of(int kind, const char *target)
{
	if (kind == TARGET_STDOUT)
		return STDOUT_FILENO;
	return kind == TARGET_PROC ? own_fd(target) : -1;
}

static int not_writable(const char *path, int n, struct vcpustat_error *err)
{
	return verror(err, -EBADF, "%s: file descriptor %d is not open for writing", path, n);
}

/* A file written at offsets as it grows (a recording) needs a target in place that seeks. */
static bool grows_at_offsets(unsigned int flags)
{
	return (flags & OUTFILE_GROW) && (flags & OUTFILE_SEEK);
}

static int cannot_seek(const char *path, const char *what, struct vcpustat_error *err)
{
	return verror(err, -ESPIPE,
		      "%s: is %s, which cannot seek: this file is written at offsets as it grows; give a file name",
		      path, what);
}

/* ---- SIGPIPE: a write to a pipe no one reads fails with EPIPE, which is reported ---- */

static int sigpipe_holds;
static bool sigpipe_was_blocked;

static void hold_sigpipe(struct outfile *of)
{
	sigset_t set, old;

	if (of->sigpipe)
		return;
	of->sigpipe = true;
	if (sigpipe_holds++)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &set, &old);
	sigpipe_was_blocked = sigismember(&old, SIGPIPE);
}

static void release_sigpipe(struct outfile *of)
{
	struct timespec now = { 0 };
	sigset_t set, pending;

	if (!of->sigpipe)
		return;
	of->sigpipe = false;
	if (--sigpipe_holds || sigpipe_was_blocked)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	/* the SIGPIPE of a failed write is its EPIPE, already reported: consumed, not delivered */
	if (!sigpending(&pending) && sigismember(&pending, SIGPIPE))
		sigtimedwait(&set, NULL, &now);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* ---- opening ---- */

void outfile_init(struct outfile *of)
{
	memset(of, 0, sizeof(*of));
	of->fd = of->dest = -1;
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

/* A temporary file next to the target (a regular file, or a new name). */
static int open_temp(struct outfile *of, struct vcpustat_error *err)
{
	int e = outfile_temp_name(of->target, of->tmp, sizeof(of->tmp));

	if (e)
		return verror(err, e, "%s: path too long", of->path);
	of->fd = mkostemp(of->tmp, O_CLOEXEC);
	if (of->fd < 0) {
		e = -errno;
		of->tmp[0] = 0;
		return verror(err, e, "%s: cannot write there: %s", of->path, strerror(-e));
	}
	of->regular = true;
	return 0;
}

/* OUTFILE_GROW: the regular file itself, truncated. */
static int open_grow(struct outfile *of, struct vcpustat_error *err)
{
	of->fd = open(of->target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (of->fd < 0)
		return verror(err, -errno, "%s: cannot create: %s", of->path, strerror(errno));
	of->regular = true;
	return 0;
}

/* OUTFILE_SEEK in place: a temporary file in $TMPDIR, copied into the target at the end. */
static int open_spool(struct outfile *of, struct vcpustat_error *err)
{
	const char *tmpdir = getenv("TMPDIR");
	int e;

	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	if (snprintf(of->tmp, sizeof(of->tmp), "%s/.vcpustat-out.XXXXXX", tmpdir) >= (int)sizeof(of->tmp))
		return verror(err, -ENAMETOOLONG, "%s: $TMPDIR too long", of->path);
	of->dest = of->fd;
	of->fd = mkostemp(of->tmp, O_CLOEXEC);
	if (of->fd < 0) {
		e = -errno;
		of->tmp[0] = 0;
		return verror(err, e, "%s: no temporary file in %s to make it in: %s", of->path, tmpdir, strerror(-e));
	}
	of->regular = true;
	return 0;
}

/*
 * OUTFILE_GROW | OUTFILE_SEEK in place (st: the open target): the target
 * itself, if it seeks; a regular file (/dev/stdout redirected to one) is
 * emptied, as opening it by its name would.
 */
static int in_place_seekable(struct outfile *of, const struct stat *st, struct vcpustat_error *err)
{
	if (!of->regular)
		return lseek(of->fd, 0, SEEK_CUR) < 0 ? cannot_seek(of->path, what_is(st, of->fd), err) : 0;
	if (fcntl(of->fd, F_GETFL) & O_APPEND)
		return verror(err, -EINVAL, "%s: opened for appending (>>): this file is written at offsets",
			      of->path);
	if (ftruncate(of->fd, 0))
		return verror(err, -errno, "%s: cannot truncate: %s", of->path, strerror(errno));
	return 0;
}

static int open_in_place(struct outfile *of, int kind, const struct stat *st, struct vcpustat_error *err)
{
	int n = fd_of(kind, of->target), fl;
	struct stat open_st;

	of->in_place = true;
	/* refused before open(), which would wait for a FIFO's reader */
	if (grows_at_offsets(of->flags) && (S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode)))
		return cannot_seek(of->path, what_is(st, -1), err);
	if (n >= 0) {
		fl = fcntl(n, F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
			return not_writable(of->path, n, err);
		of->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	} else {
		of->fd = open(of->target, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	}
	if (of->fd < 0 || fstat(of->fd, &open_st))
		return verror(err, -errno, "%s: cannot write: %s", of->path, strerror(errno));
	hold_sigpipe(of);
	of->regular = S_ISREG(open_st.st_mode);
	if (!(of->flags & OUTFILE_SEEK))
		return 0;
	return of->flags & OUTFILE_GROW ? in_place_seekable(of, &open_st, err) : open_spool(of, err);
}

int outfile_open(struct outfile *of, const char *path, unsigned int flags, struct vcpustat_error *err)
{
	struct stat st;
	int kind, e;

	outfile_init(of);
	of->flags = flags;
	snprintf(of->path, sizeof(of->path), "%s", strcmp(path, "-") ? path : "stdout");
	kind = resolve(path, of->target, sizeof(of->target), &st, err);
	if (kind < 0)
		return kind;
	if (kind == TARGET_DIR)
		return verror(err, -EISDIR, "%s: is a directory (give a file name)", of->path);
	if (kind == TARGET_NEW || kind == TARGET_REGULAR)
		e = flags & OUTFILE_GROW ? open_grow(of, err) : open_temp(of, err);
	else
		e = open_in_place(of, kind, &st, err);
	if (e)
		outfile_abort(of);
	return e;
}

int outfile_check(const char *path, unsigned int flags, struct vcpustat_error *err)
{
	char target[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	int kind = resolve(path, target, sizeof(target), &st, err), fd, fl;

	if (kind < 0)
		return kind;
	if (kind == TARGET_DIR)
		return verror(err, -EISDIR, "%s: is a directory (give a file name)", path);
	if (kind == TARGET_NEW || kind == TARGET_REGULAR) {
		if (outfile_temp_name(target, tmp, sizeof(tmp)))
			return verror(err, -ENAMETOOLONG, "%s: path too long", path);
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0)
			return verror(err, -errno, "%s: cannot write there: %s", path, strerror(errno));
		close(fd);
		unlink(tmp);
		return 0;
	}
	/* in place: not opened (a FIFO's reader would see an end) */
	if (grows_at_offsets(flags) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return cannot_seek(path, what_is(&st, -1), err);
	fd = fd_of(kind, target);
	if (fd >= 0) {
		fl = fcntl(fd, F_GETFL);
		return fl < 0 || (fl & O_ACCMODE) == O_RDONLY ? not_writable(path, fd, err) : 0;
	}
	if (access(target, W_OK))
		return verror(err, -errno, "%s: cannot write: %s", path, strerror(errno));
	return 0;
}

int outfile_in_place(const char *path, const char **what, struct vcpustat_error *err)
{
	char target[PATH_MAX];
	struct stat st;
	int kind = resolve(path, target, sizeof(target), &st, err);

	if (kind < 0)
		return kind;
	if (kind == TARGET_NEW || kind == TARGET_REGULAR || kind == TARGET_DIR)
		return 0;
	*what = what_is(&st, -1);
	return 1;
}

/* ---- the end ---- */

static int write_failed(struct outfile *of, int e, struct vcpustat_error *err)
{
	return verror(err, e, "%s: write: %s", of->path, strerror(-e));
}

/*
 * The spooled file, whole, into the target. A regular file behind a /proc
 * link (/dev/stdout redirected to one) is emptied first: a file written at
 * offsets is that file's whole content, from its start.
 */
static int copy_spool(struct outfile *of, struct vcpustat_error *err)
{
	char buf[1 << 16];
	struct stat st;
	off_t off = 0;
	ssize_t n;
	int e;

	if (!fstat(of->dest, &st) && S_ISREG(st.st_mode) && (ftruncate(of->dest, 0) || lseek(of->dest, 0, SEEK_SET)))
		return verror(err, -errno, "%s: cannot truncate: %s", of->path, strerror(errno));
	for (;;) {
		n = pread(of->fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return verror(err, -errno, "%s: reading back %s: %s", of->path, of->tmp, strerror(errno));
		if (!n)
			return 0;
		e = write_all(of->dest, buf, (size_t)n);
		if (e)
			return write_failed(of, e, err);
		off += n;
	}
}

int outfile_publish(struct outfile *of, struct vcpustat_error *err)
{
	if (of->in_place || !of->tmp[0])
		return 0;
	if (fchmod(of->fd, 0644) || rename(of->tmp, of->target))
		return verror(err, -errno, "%s: cannot give the file its name: %s", of->path, strerror(errno));
	of->tmp[0] = 0;
	return 0;
}

int outfile_close(struct outfile *of, struct vcpustat_error *err)
{
	bool temp = !of->in_place && of->tmp[0];
	int e = 0;

	if (of->fd < 0)
		return verror(err, -EBADF, "%s: not open", of->path);
	if (of->dest >= 0)
		e = copy_spool(of, err);
	if (!e && temp && (fchmod(of->fd, 0644) || (!(of->flags & OUTFILE_NO_SYNC) && fsync(of->fd))))
		e = write_failed(of, -errno, err);
	if (close(of->fd) && !e)
		e = write_failed(of, -errno, err);
	of->fd = -1;
	if (of->dest >= 0 && close(of->dest) && !e)
		e = write_failed(of, -errno, err);
	of->dest = -1;
	if (!e && temp && rename(of->tmp, of->target))
		e = verror(err, -errno, "%s: cannot give the file its name: %s", of->path, strerror(errno));
	if (!e && temp)
		of->tmp[0] = 0;
	outfile_abort(of); /* the spool, or a temporary file that failed */
	return e;
}

void outfile_abort(struct outfile *of)
{
	if (of->fd >= 0)
		close(of->fd);
	if (of->dest >= 0)
		close(of->dest);
	of->fd = of->dest = -1;
	if (of->tmp[0])
		unlink(of->tmp);
	of->tmp[0] = 0;
	release_sigpipe(of);
}

int outfile_write(const char *path, const void *buf, size_t len, struct vcpustat_error *err)
{
	struct outfile of;
	int e = outfile_open(&of, path, 0, err);

	if (e)
		return e;
	e = write_all(of.fd, buf, len);
	if (e) {
		write_failed(&of, e, err);
		outfile_abort(&of);
		return e;
	}
	return outfile_close(&of, err);
}

/* ---- a directory (CTF) ---- */

static bool dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	if (!d)
		return false;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

int outfile_dir_target(const char *path, char *target, size_t len, struct vcpustat_error *err)
{
	struct stat st;
	int kind = resolve(path, target, len, &st, err);

	if (kind < 0)
		return kind;
	if (kind == TARGET_NEW)
		return 0;
	if (kind != TARGET_DIR)
		return verror(err, -ENOTDIR, "%s: is %s, not a directory (give a new or an empty directory)", path,
			      what_is(&st, -1));
	if (!dir_empty(target))
		return verror(err, -EEXIST, "%s: exists and is not empty (give a new or an empty directory)", path);
	return 0;
}

/* ---- an output that is an input ---- */

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
