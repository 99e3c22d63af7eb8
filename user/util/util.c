// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/util.h"

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int read_fd(int fd, char **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	struct stat st;
	char *b = NULL;

	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1; /* one read, and EOF */
	for (;;) {
		ssize_t r;

		if (!b || n == cap) {
			char *nb = realloc(b, b ? cap * 2 : cap);

			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			if (b)
				cap *= 2;
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;

			free(b);
			return e;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

int pwrite_all(int fd, const void *buf, size_t len, __u64 *off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)*off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* no progress */
		p += n;
		len -= (size_t)n;
		*off += (__u64)n;
	}
	return 0;
}

void xml_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			/* control characters are not allowed in XML 1.0 */
			fputc(c < 0x20 && c != '\t' ? '?' : c, f);
		}
	}
}

static __u64 clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

__u64 vcpustat_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

__u64 vcpustat_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

const char *file_kind(unsigned int mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO (named pipe)";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFSOCK: return "a socket";
	default: return "not a regular file";
	}
}

int open_input(const char *path, bool regular_only, struct vcpustat_error *err)
{
	struct stat st;
	int fd, e;

	/* O_NONBLOCK: opening a FIFO that no one writes does not wait (its reads then see an end) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return verror(err, -errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		e = -errno;
		close(fd);
		return verror(err, e, "%s: cannot open: %s", path, strerror(-e));
	}
	if (S_ISDIR(st.st_mode) || (regular_only && !S_ISREG(st.st_mode))) {
		close(fd);
		return verror(err, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, "%s: %s, not a file%s", path,
			      file_kind(st.st_mode), S_ISDIR(st.st_mode) ? "" : " that can be read at any offset");
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		e = -errno;
		close(fd);
		return verror(err, e, "%s: %s", path, strerror(-e));
	}
	return fd;
}

int read_bounded(int fd, const char *name, size_t limit, char **out, size_t *len, struct vcpustat_error *err)
{
	size_t cap = 1 << 16, n = 0, checked = 0;
	char *b = NULL;
	int e = 0;

	*out = NULL;
	*len = 0;
	for (;;) {
		ssize_t r;

		if (!b || n == cap) {
			char *nb;

			if (b && n >= limit) {
				e = verror(err, -EFBIG,
					   "%s: stopped at byte %zu: more than %zu MiB from a pipe or device (save it to a file first)",
					   name, n, limit >> 20);
				break;
			}
			if (b)
				cap *= 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				e = verror(err, -ENOMEM, "%s: out of memory after %zu bytes", name, n);
				break;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = verror(err, -errno, "%s: offset %zu: read failed: %s", name, n, strerror(errno));
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
		if (checked < 4096) { /* text: a NUL byte early on says it is not */
			const char *z = memchr(b + checked, 0, (n < 4096 ? n : 4096) - checked);

			if (z) {
				e = verror(err, -EINVAL, "%s: offset %zu: a NUL byte: binary data, not text (stopped there)",
					   name, (size_t)(z - b));
				break;
			}
			checked = n < 4096 ? n : 4096;
		}
	}
	if (e) {
		free(b);
		return e;
	}
	b[n] = 0;
	*out = b;
	*len = n;
	return 0;
}

int parse_duration_ns(const char *s, __u64 *ns)
{
	static const struct {
		const char *suffix;
		__u64 mult;
	} units[] = {
		{ "", 1000000000ull },	     { "s", 1000000000ull },	     { "ms", 1000000ull },
		{ "us", 1000ull },	     { "ns", 1ull },		     { "m", 60000000000ull },
		{ "h", 3600000000000ull },   { "d", 86400000000000ull },
	};
	__u64 whole = 0, frac = 0, scale = 100000000000000000ull; /* fraction in 1e-18 units */
	const char *p = s;

	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (__u64)(*p - '0');
	}
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			frac += (__u64)(*p - '0') * scale; /* digits past 1e-18 add 0 */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		__u64 m = units[i].mult;

		if (strcmp(p, units[i].suffix))
			continue;
		if (whole > UINT64_MAX / m)
			return -ERANGE;
		/* the fraction in ns: frac * m / 1e18, in 128 bits */
		__u64 part = (__u64)((unsigned __int128)frac * m / 1000000000000000000ull);

		if (part > UINT64_MAX - whole * m)
			return -ERANGE;
		*ns = whole * m + part;
		return 0;
	}
	return -EINVAL;
}

void fmt_secs(__u64 ns, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%09llu", (unsigned long long)(ns / 1000000000), (unsigned long long)(ns % 1000000000));
}

void heap_keep(void)
{
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
