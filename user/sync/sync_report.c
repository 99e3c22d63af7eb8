// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What `vcpustat sync` shows of a result: the transform, its bounds and
 * quality, and the one sentence a person reads, as text (vcpustat_sync_print)
 * or as a JSON document (vcpustat_sync_json).
 */
#include <math.h>
#include <stdio.h>
#include <jansson.h>
#include "sync/sync.h"

static const char *dir_sender(enum vcpustat_sync_dir d)
{
	return d == VCPUSTAT_SYNC_HOST_TO_GUEST ? "host" : "guest";
}

static const char *dir_receiver(enum vcpustat_sync_dir d)
{
	return d == VCPUSTAT_SYNC_HOST_TO_GUEST ? "guest" : "host";
}

static double duration_s(const struct vcpustat_sync_result *r)
{
	return (double)(r->host_last_ns - r->host_first_ns) / 1e9;
}

/* "+ 5.000000000 s" / "- 0.000001000 s" */
static void fmt_offset(char *dst, size_t size, long double ns)
{
	snprintf(dst, size, "%c %.9Lf s", ns < 0 ? '-' : '+', fabsl(ns) / 1e9L);
}

/* The one sentence a person reads. */
static void summary(char *dst, size_t size, const struct vcpustat_sync_source *src,
		    const struct vcpustat_sync_result *r)
{
	char off[64];
	int n;

	fmt_offset(off, sizeof(off), r->beta);
	if (r->quality == VCPUSTAT_SYNC_FAIL) {
		n = snprintf(dst, size,
			     "fail: no line fits every match; the match %s %llu (%s,%llu,%s,%llu) contradicts "
			     "the earlier ones (a clock jump or a mismatched message?). ",
			     src->protocol ? "with key" : "on line", (unsigned long long)r->fail_match.key,
			     dir_sender(r->fail_match.dir),
			     (unsigned long long)r->fail_match.send_ns, dir_receiver(r->fail_match.dir),
			     (unsigned long long)r->fail_match.recv_ns);
		if (n < 0 || (size_t)n >= size)
			return;
		dst += n;
		size -= (size_t)n;
		if (r->transform_quality == VCPUSTAT_SYNC_ABSENT) {
			snprintf(dst, size, "No good transform before it.");
			return;
		}
		snprintf(dst, size, "Kept the last good one (%s, from %llu matches): guest clock = host × %.9Lf %s",
			 vcpustat_sync_quality_name(r->transform_quality),
			 (unsigned long long)(r->nr_host_to_guest + r->nr_guest_to_host), r->alpha, off);
		return;
	}
	switch (r->quality) {
	case VCPUSTAT_SYNC_ACCURATE:
		snprintf(dst, size, "guest clock = host × %.9Lf %s; accurate: error ≤ %.0Lf ns over %.1f s of host time",
			 r->alpha, off, ceill(r->transform.max_error_ns), duration_s(r));
		break;
	case VCPUSTAT_SYNC_APPROXIMATE:
		snprintf(dst, size,
			 "guest clock ≈ host × %.9Lf %s; approximate: the messages bound the drift on one side only, "
			 "so there is no error bound (exchange messages both ways over a longer time)",
			 r->alpha, off);
		break;
	case VCPUSTAT_SYNC_INCOMPLETE:
		snprintf(dst, size,
			 "incomplete: %s messages only; assuming no drift, guest clock %s host %s (the fastest "
			 "message taking no time); add %s messages for an estimate",
			 r->nr_host_to_guest ? "host->guest" : "guest->host", r->nr_host_to_guest ? "≤" : "≥", off,
			 r->nr_host_to_guest ? "guest->host" : "host->guest");
		break;
	default:
		snprintf(dst, size, "absent: no match, nothing to synchronize (identity transform)");
		break;
	}
}

static void print_line(FILE *f, const char *label, const struct vcpustat_sync_line *fit)
{
	struct vcpustat_sync_line inv = vcpustat_sync_line_inverse(fit);
	char off[64], ioff[64];

	fmt_offset(off, sizeof(off), vcpustat_sync_line_offset(fit));
	fmt_offset(ioff, sizeof(ioff), vcpustat_sync_line_offset(&inv));
	fprintf(f, "  %-10s guest = host × %.12Lf %s   (host = guest × %.12Lf %s)\n", label, fit->slope, off, inv.slope,
	       ioff);
}

void vcpustat_sync_print(FILE *f, const struct vcpustat_sync_source *src, const struct vcpustat_sync_result *r)
{
	const struct vcpustat_sync_transform *t = &r->transform;
	char off[64], line[1024];
	long double ref;

	fprintf(f, "source:      %s\n", src->name);
	if (src->protocol)
		fprintf(f, "events:      guest %zu a, %zu d; host %zu hypercalls, %zu entries; %zu unmatched, %zu duplicate "
		       "keys, %zu reused keys dropped\n",
		       src->na, src->nd, src->nb, src->nc, src->protocol->unmatched,
		       src->protocol->duplicate_keys, src->protocol->inconsistent_keys);
	fprintf(f, "matches:     %llu host->guest, %llu guest->host used", (unsigned long long)r->nr_host_to_guest,
	       (unsigned long long)r->nr_guest_to_host);
	if (r->nr_matches != r->nr_host_to_guest + r->nr_guest_to_host)
		fprintf(f, " (of %llu)", (unsigned long long)r->nr_matches);
	fprintf(f, "\n");
	if (r->nr_host_to_guest + r->nr_guest_to_host)
		fprintf(f, "host time:   %.9f s .. %.9f s (%.1f s)\n", r->host_first_ns / 1e9, r->host_last_ns / 1e9,
		       duration_s(r));
	fprintf(f, "quality:     %s", vcpustat_sync_quality_name(r->quality));
	if (r->quality == VCPUSTAT_SYNC_FAIL)
		fprintf(f, " (transform below: the last good one, %s)", vcpustat_sync_quality_name(r->transform_quality));
	fprintf(f, "\n");
	fmt_offset(off, sizeof(off), vcpustat_sync_line_offset(&t->mean));
	fprintf(f, "transform:   host = guest × %.12Lf %s   (a, b)\n", t->mean.slope, off);
	ref = roundl(t->mean.x_ref);
	fprintf(f, "             host = %.0Lf + %.12Lf × (guest - %.0Lf)   (precise form)\n",
	       vcpustat_sync_line_at(&t->mean, ref), t->mean.slope, ref);
	fmt_offset(off, sizeof(off), r->beta);
	fprintf(f, "guest line:  guest = host × %.12Lf %s   (alpha, beta)\n", r->alpha, off);
	if (r->has_min_slope || r->has_max_slope) {
		fprintf(f, "bounds:      extreme feasible lines:\n");
		if (r->has_min_slope)
			print_line(f, "min-slope", &r->min_slope);
		if (r->has_max_slope)
			print_line(f, "max-slope", &r->max_slope);
	}
	if (isfinite(t->max_error_ns))
		fprintf(f, "error:       ≤ %.0Lf ns over the measured range (a guaranteed bound)\n", ceill(t->max_error_ns));
	else
		fprintf(f, "error:       unbounded\n");
	summary(line, sizeof(line), src, r);
	fprintf(f, "%s\n", line);
}

/* JSON has no infinity or NaN: those become null (a degenerate transform). */
static json_t *json_num(long double v)
{
	return isfinite(v) ? json_real((double)v) : json_null();
}

static json_t *json_ns(long double v)
{
	return isfinite(v) && fabsl(v) < 9.2e18L ? json_integer((json_int_t)roundl(v)) : json_null();
}

static json_t *json_line(const struct vcpustat_sync_line *fit)
{
	struct vcpustat_sync_line inv = vcpustat_sync_line_inverse(fit);

	return json_pack("{s:o, s:o, s:o, s:o}", "alpha", json_num(fit->slope), "beta",
			 json_num(vcpustat_sync_line_offset(fit)), "a", json_num(inv.slope), "b",
			 json_num(vcpustat_sync_line_offset(&inv)));
}

json_t *vcpustat_sync_json(const struct vcpustat_sync_source *src, const struct vcpustat_sync_result *r)
{
	const struct vcpustat_sync_transform *t = &r->transform;
	long double ref_guest = roundl(t->mean.x_ref);
	char line[1024];
	json_t *o, *bounds;

	summary(line, sizeof(line), src, r);
	bounds = json_pack("{s:o, s:o, s:o}", "max_error_ns", json_num(t->max_error_ns), "min_slope",
			   r->has_min_slope ? json_line(&r->min_slope) : json_null(), "max_slope",
			   r->has_max_slope ? json_line(&r->max_slope) : json_null());
	o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I, s:I}, s:I, s:I, s:f, s:s}",
		      "source", src->name, "quality", vcpustat_sync_quality_name(r->quality), "transform_quality",
		      vcpustat_sync_quality_name(r->transform_quality), "a", json_num(t->mean.slope), "b",
		      json_num(vcpustat_sync_line_offset(&t->mean)), "ref_guest_ns", json_ns(ref_guest), "ref_host_ns",
		      json_ns(vcpustat_sync_line_at(&t->mean, ref_guest)), "alpha", json_num(r->alpha), "beta",
		      json_num(r->beta), "bounds", bounds, "matches", "host_to_guest", (json_int_t)r->nr_host_to_guest,
		      "guest_to_host", (json_int_t)r->nr_guest_to_host, "total", (json_int_t)r->nr_matches,
		      "host_first_ns", (json_int_t)r->host_first_ns, "host_last_ns", (json_int_t)r->host_last_ns,
		      "duration_s", duration_s(r), "summary", line);
	if (o && r->quality == VCPUSTAT_SYNC_FAIL)
		json_object_set_new(o, "fail",
				    json_pack("{s:I, s:I, s:s, s:I, s:s, s:I}", src->protocol ? "key" : "line",
					      (json_int_t)r->fail_match.key,
					      "index", (json_int_t)r->fail_index, "sender", dir_sender(r->fail_match.dir),
					      "send_ts", (json_int_t)r->fail_match.send_ns, "receiver",
					      dir_receiver(r->fail_match.dir), "recv_ts", (json_int_t)r->fail_match.recv_ns));
	if (o && src->protocol)
		json_object_set_new(o, "events",
				    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "a", (json_int_t)src->na, "d",
					      (json_int_t)src->nd, "b", (json_int_t)src->nb, "c",
					      (json_int_t)src->nc, "unmatched", (json_int_t)src->protocol->unmatched,
					      "duplicate_keys", (json_int_t)src->protocol->duplicate_keys, "reused_keys",
					      (json_int_t)src->protocol->inconsistent_keys));
	return o;
}
