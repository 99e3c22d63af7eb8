// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Times given by people: nanoseconds since the trace start, seconds, or
 * wall-clock times converted through the header's CLOCK_REALTIME mapping.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "reader_priv.h"

#define NS 1000000000ull

/* "123", "1.5" -> integer part and up to 9 fraction digits as ns; end of the number in *endp. */
static int parse_decimal(const char *s, uint64_t *whole, uint64_t *frac_ns, bool *has_dot, const char **endp)
{
	uint64_t w = 0, f = 0, scale = NS / 10;
	const char *p = s;

	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (w > (UINT64_MAX - 9) / 10)
			return -1;
		w = w * 10 + (uint64_t)(*p - '0');
	}
	*has_dot = *p == '.';
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			f += (uint64_t)(*p - '0') * scale; /* digits past 1 ns add 0 */
	*whole = w;
	*frac_ns = f;
	*endp = p;
	return 0;
}

static int bad_time(const struct sht_reader *r, const char *s, struct vcpustat_error *err)
{
	return verror(err, -EINVAL,
		      "%s: bad time '%s' (use ns since the trace start like 1500000000, seconds like 1.5 or 1.5s, "
		      "or a wall-clock time like 2026-11-22T14:03:07.123, 2026-11-22T13:03:07Z or 14:03:07.123)",
		      r->name, s);
}

/* Seconds since the epoch of broken-down time tm (local, or UTC). */
static int64_t tm_to_epoch(struct tm *tm, bool utc)
{
	tm->tm_isdst = -1;
	return utc ? (int64_t)timegm(tm) : (int64_t)mktime(tm);
}

static int wall_to_trace(const struct sht_reader *r, const char *s, int64_t secs, uint64_t frac, uint64_t *t,
			 struct vcpustat_error *err)
{
	uint64_t start = r->info.real_start_ns;
	int64_t wall;

	if (!sht_has_wall_clock(r))
		return verror(err, -EINVAL,
			      "%s: time '%s': this file has no wall clock (an imported trace): give seconds since its "
			      "start (1.5s, +1.5s) or nanoseconds",
			      r->name, s);
	if (secs < 0 || (uint64_t)secs > (UINT64_MAX - frac) / NS)
		return bad_time(r, s, err);
	wall = (int64_t)((uint64_t)secs * NS + frac);
	if ((uint64_t)wall < start) {
		char when[64];

		sht_format_wall(r, 0, false, when, sizeof(when));
		return verror(err, -ERANGE, "%s: time '%s' is before the start of the trace (%s)", r->name, s, when);
	}
	*t = (uint64_t)wall - start;
	return 0;
}

int sht_parse_time(const struct sht_reader *r, const char *s, uint64_t *t, struct vcpustat_error *err)
{
	uint64_t whole, frac;
	const char *p, *num = *s == '+' ? s + 1 : s;
	bool dot;
	struct tm tm;
	int n = 0, y, mo, d, h, mi, sec;

	/* 2026-11-22T14:03:07[.123][Z] (or a space instead of T) */
	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6 && n > 0) {
		bool utc = false;

		p = s + n;
		frac = 0;
		if (*p == '.' && parse_decimal(p, &whole, &frac, &dot, &p))
			return bad_time(r, s, err);
		if (*p == 'Z' || *p == 'z') {
			utc = true;
			p++;
		}
		if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
			return bad_time(r, s, err);
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		return wall_to_trace(r, s, tm_to_epoch(&tm, utc), frac, t, err);
	}
	/* 14:03:07[.123][Z]: on the day the trace started (or the next one, if the trace crosses midnight) */
	n = 0;
	if (sscanf(s, "%2d:%2d:%2d%n", &h, &mi, &sec, &n) == 3 && n > 0) {
		time_t st = (time_t)(r->info.real_start_ns / NS);
		bool utc = false;
		int day;

		p = s + n;
		frac = 0;
		if (*p == '.' && parse_decimal(p, &whole, &frac, &dot, &p))
			return bad_time(r, s, err);
		if (*p == 'Z' || *p == 'z') {
			utc = true;
			p++;
		}
		if (*p || h > 23 || mi > 59 || sec > 60)
			return bad_time(r, s, err);
		for (day = 0; day < 2; day++) {
			uint64_t secs;

			if (utc)
				gmtime_r(&st, &tm);
			else
				localtime_r(&st, &tm);
			tm.tm_mday += day;
			tm.tm_hour = h;
			tm.tm_min = mi;
			tm.tm_sec = sec;
			secs = (uint64_t)tm_to_epoch(&tm, utc);
			if (day == 0 && secs * NS + frac < r->info.real_start_ns &&
			    (secs + 86400) * NS + frac <= r->info.real_start_ns + r->info.end)
				continue; /* before the start, and the trace reaches that time tomorrow */
			return wall_to_trace(r, s, (int64_t)secs, frac, t, err);
		}
		return bad_time(r, s, err);
	}
	/* numbers (+1.5s: as sht_format_time shows them) */
	if (parse_decimal(num, &whole, &frac, &dot, &p))
		return bad_time(r, s, err);
	if (!*p && !dot) { /* nanoseconds */
		*t = whole;
		return 0;
	}
	__u64 ns;

	if (parse_duration_ns(num, &ns)) /* 1.5, 1.5s, 250ms, 15m, 2h (util.h) */
		return bad_time(r, s, err);
	*t = ns;
	return 0;
}

bool sht_has_wall_clock(const struct sht_reader *r)
{
	return r->info.real_start_ns != 0;
}

void sht_format_trace_clock(const struct sht_reader *r, uint64_t t, char *buf, size_t len)
{
	uint64_t c = r->info.mono_start_ns + t;

	snprintf(buf, len, "%llu.%09llu", (unsigned long long)(c / NS), (unsigned long long)(c % NS));
}

void sht_format_time(const struct sht_reader *r, uint64_t t, bool utc, char *buf, size_t len)
{
	uint64_t wall = r->info.real_start_ns + t;
	time_t secs = (time_t)(wall / NS);
	struct tm tm;
	size_t n;

	if (!sht_has_wall_clock(r)) {
		snprintf(buf, len, "+%llu.%09llus", (unsigned long long)(t / NS), (unsigned long long)(t % NS));
		return;
	}
	if (utc)
		gmtime_r(&secs, &tm);
	else
		localtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%09llu%s", (unsigned long long)(wall % NS), utc ? "Z" : "");
}

void sht_format_wall(const struct sht_reader *r, uint64_t t, bool utc, char *buf, size_t len)
{
	sht_format_time(r, t, utc, buf, len);
}
