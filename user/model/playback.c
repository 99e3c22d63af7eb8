// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* playback.c - time travel over a recording: windows of report_build() one after another. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "model/playback.h"
#include "model/report.h"

int playback_open(struct playback *pb, const char *path, uint64_t step_ns, struct vcpustat_error *err)
{
	const struct sht_info *info;
	int e;

	memset(pb, 0, sizeof(*pb));
	if (!step_ns)
		return verror(err, -EINVAL, "%s: a window must last more than 0 ns", path);
	e = sht_open(&pb->r, path, err);
	if (e)
		return e;
	info = sht_get_info(pb->r);
	pb->path = path;
	pb->start = info->start;
	pb->end = info->recovered ? info->horizon : info->end;
	pb->step = step_ns;
	pb->t = pb->start;
	if (pb->end <= pb->start) {
		playback_close(pb);
		return verror(err, -ENODATA, "%s: the recording holds no time to play (%s)", path,
			      info->recovered ? "unfinished, and no node was sealed" : "it is empty");
	}
	return 0;
}

void playback_close(struct playback *pb)
{
	sht_close(pb->r);
	pb->r = NULL;
}

/*
 * The current window ends a step after it starts; the last one ends at the
 * end of the file, and takes in a remainder shorter than a tenth of a step
 * rather than leaving it as a window of a few nanoseconds of nonsense rates.
 */
void playback_window(const struct playback *pb, uint64_t *t1, uint64_t *t2)
{
	*t1 = pb->t;
	*t2 = playback_at_end(pb) ? pb->end : pb->t + pb->step;
}

bool playback_at_end(const struct playback *pb)
{
	return pb->end - pb->t < pb->step + pb->step / 10;
}

long playback_step(struct playback *pb, long n)
{
	long moved = 0;

	for (; n > 0 && !playback_at_end(pb); n--, moved++)
		pb->t += pb->step;
	for (; n < 0 && pb->t > pb->start; n++, moved--)
		pb->t = pb->t - pb->start > pb->step ? pb->t - pb->step : pb->start;
	return moved;
}

int playback_seek(struct playback *pb, uint64_t t, struct vcpustat_error *err)
{
	char a[32], b[32], c[32];

	if (t >= pb->end || t < pb->start)
		return verror(err, -ERANGE, "%s: %s s is outside the recording (%s s to %s s)", pb->path,
			      playback_seconds(t, a, sizeof(a)), playback_seconds(pb->start, b, sizeof(b)),
			      playback_seconds(pb->end, c, sizeof(c)));
	pb->t = t;
	return 0;
}

int playback_seek_str(struct playback *pb, const char *s, struct vcpustat_error *err)
{
	uint64_t t;
	int e = sht_parse_time(pb->r, s, &t, err);

	return e ? e : playback_seek(pb, t, err);
}

int playback_build(struct playback *pb, struct summary *s, const struct summary_filter *f, bool *has_culprits,
		   struct vcpustat_error *err)
{
	uint64_t t1, t2;

	playback_window(pb, &t1, &t2);
	return report_build(s, pb->r, t1, t2, f, has_culprits, err);
}

const char *playback_seconds(uint64_t t, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%03llu", (unsigned long long)(t / 1000000000ull),
		 (unsigned long long)(t % 1000000000ull / 1000000ull));
	return buf;
}

/* When the recording started, for people: its wall clock, else metadata `recorded`; NULL if unknown. */
static const char *recorded_at(const struct playback *pb, char *buf, size_t len)
{
	if (sht_has_wall_clock(pb->r)) {
		sht_format_time(pb->r, 0, false, buf, len);
		if (strlen(buf) > 19)
			buf[19] = '\0'; /* to the second */
		return buf;
	}
	return sht_meta_get(pb->r, "recorded");
}

static json_t *meta_or_null(const struct playback *pb, const char *key)
{
	const char *v = sht_meta_get(pb->r, key);

	return v ? json_string(v) : json_null();
}

json_t *playback_source_json(const struct playback *pb)
{
	json_t *o = json_object();
	const char *when;
	char buf[64];

	json_object_set_new(o, "file", json_string(pb->path));
	json_object_set_new(o, "host", meta_or_null(pb, "host"));
	when = recorded_at(pb, buf, sizeof(buf));
	json_object_set_new(o, "recorded", when ? json_string(when) : json_null());
	json_object_set_new(o, "command", meta_or_null(pb, "command"));
	json_object_set_new(o, "workload", meta_or_null(pb, "workload"));
	json_object_set_new(o, "level", meta_or_null(pb, "level"));
	json_object_set_new(o, "duration_s", json_real((double)(pb->end - pb->start) / 1e9));
	return o;
}

void playback_label(const struct playback *pb, char *buf, size_t len)
{
	const char *host = sht_meta_get(pb->r, "host"), *source = sht_meta_get(pb->r, "source");
	const char *what = sht_meta_get(pb->r, "workload"), *trace = sht_meta_get(pb->r, "host_trace");
	const char *when;
	char who[256], at[64];

	if (host)
		snprintf(who, sizeof(who), "%s", host);
	else if (source && !strcmp(source, "import") && trace)
		snprintf(who, sizeof(who), "the host of trace %s", strrchr(trace, '/') ? strrchr(trace, '/') + 1 : trace);
	else
		snprintf(who, sizeof(who), "an unknown host");
	when = recorded_at(pb, at, sizeof(at));
	if (!what)
		what = sht_meta_get(pb->r, "command");
	snprintf(buf, len, "recording of %s at %s (%s)", who, when ? when : "an unknown time", what ? what : "?");
}
