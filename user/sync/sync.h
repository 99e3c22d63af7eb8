/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sync.h - synchronize a guest's clock to its host's, offline, from messages
 * exchanged between them (the fully incremental convex hull algorithm of
 * Poirier et al., as used by Trace Compass and by the "preemption analysis
 * across VMs" paper). docs/sync.md explains the geometry; in short:
 *
 * Points live in the plane x = host time, y = guest time, and we look for the
 * line guest = alpha * host + beta.
 *  - A host->guest message sent on the host at x_s and received in the guest
 *    at y_r was received after it was sent: y_r > alpha * x_s + beta, the line
 *    passes BELOW the point (x_s, y_r).
 *  - A guest->host message sent in the guest at y_s and received on the host
 *    at x_r: y_s < alpha * x_r + beta, the line passes ABOVE (x_r, y_s).
 * Clocks run forward: alpha > 0 is a constraint too.
 * Only the lower convex hull of the first kind of points and the upper convex
 * hull of the second kind can be active constraints. After each match the
 * minimum-slope and maximum-slope feasible lines (each touching both hulls)
 * are updated in O(1) amortized time; the estimate is their pointwise mean.
 *
 * What users need is the inverse: a transform host = a * guest + b, with
 * bounds that hold for sure (struct vcpustat_sync_transform).
 *
 * All timestamps are nanoseconds in [0, VCPUSTAT_SYNC_MAX_NS]; decisions are
 * exact (__int128 orientation tests on the integer points), lines are long
 * double. Functions return 0 or a negative errno and fill the optional
 * struct vcpustat_error; they never print and never exit.
 */
#ifndef VCPUSTAT_SYNC_H
#define VCPUSTAT_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "util/util.h"

/* Largest timestamp accepted (2^62 ns, 146 years): keeps every cross product
 * of point differences inside a signed 128-bit integer. */
#define VCPUSTAT_SYNC_MAX_NS (1ULL << 62)

enum vcpustat_sync_dir {
	VCPUSTAT_SYNC_HOST_TO_GUEST = 0, /* send_ns: host clock, recv_ns: guest clock */
	VCPUSTAT_SYNC_GUEST_TO_HOST = 1, /* send_ns: guest clock, recv_ns: host clock */
};

/* One message: the sender's clock when it left, the receiver's when it arrived. */
struct vcpustat_sync_match {
	uint64_t send_ns;
	uint64_t recv_ns;
	uint64_t key; /* protocol key, or pairs-file line number: for messages only */
	enum vcpustat_sync_dir dir;
};

enum vcpustat_sync_quality {
	VCPUSTAT_SYNC_ABSENT = 0,  /* no match: identity transform */
	VCPUSTAT_SYNC_INCOMPLETE,  /* matches in one direction only: slope 1 assumed */
	VCPUSTAT_SYNC_APPROXIMATE, /* a line fits, but its slope is bounded on one side only
				      (a lower bound <= 0 is no bound) */
	VCPUSTAT_SYNC_ACCURATE,	   /* bounded on both sides: the transform has error bounds */
	VCPUSTAT_SYNC_FAIL,	   /* no increasing line satisfies every match: the last good
				      transform is kept */
};

/* "absent", "incomplete", "approximate", "accurate", "fail". */
const char *vcpustat_sync_quality_name(enum vcpustat_sync_quality q);

/*
 * A line y = y_ref + slope * (x - x_ref). The reference point sits near the
 * data, so that evaluating the line never subtracts two numbers near 1e18.
 */
struct vcpustat_sync_line {
	long double slope;
	long double x_ref;
	long double y_ref;
};

long double vcpustat_sync_line_at(const struct vcpustat_sync_line *l, long double x);
/* y at x = 0 (the "b" of y = a x + b): for display; line_at() is the precise form. */
long double vcpustat_sync_line_offset(const struct vcpustat_sync_line *l);
/* x as a function of y (slope must be > 0). */
struct vcpustat_sync_line vcpustat_sync_line_inverse(const struct vcpustat_sync_line *l);

/* Most bound lines a transform holds: 3 per synchronization, multiplied by
 * composition, so chains of up to three levels (L3 -> L2 -> L1 -> L0). */
#define VCPUSTAT_SYNC_MAX_BOUNDS 27

/*
 * A clock transform host = f(guest) (x = guest ns, y = host ns) and what is
 * known for sure about it: for every guest time g, the true host time lies in
 * [min over early[] at g, max over late[] at g] (nr_early/nr_late 0: not
 * bounded). That holds everywhere, not only over the measured range.
 */
struct vcpustat_sync_transform {
	struct vcpustat_sync_line mean; /* the estimate */
	unsigned int nr_early, nr_late;
	struct vcpustat_sync_line early[VCPUSTAT_SYNC_MAX_BOUNDS];
	struct vcpustat_sync_line late[VCPUSTAT_SYNC_MAX_BOUNDS];
	/* The guest time range it was measured over (the matches' host time range
	 * mapped through mean), and the largest distance from mean to a bound over
	 * that range, in host ns (INFINITY when not bounded). */
	long double guest_first, guest_last;
	long double max_error_ns;
};

/* A guest timestamp converted to host time. */
struct vcpustat_sync_time {
	uint64_t host_ns;     /* mean, rounded to nearest */
	uint64_t earliest_ns; /* bounds, rounded outward (0 / UINT64_MAX if unbounded) */
	uint64_t latest_ns;
	uint64_t error_ns;    /* max(host - earliest, latest - host), UINT64_MAX if unbounded */
	bool bounded;
};

/* Convert one guest timestamp. -ERANGE if the result is not a u64. */
int vcpustat_sync_apply(const struct vcpustat_sync_transform *t, uint64_t guest_ns, struct vcpustat_sync_time *out);
/* Its host_ns alone (the mean line; no bounds evaluated): what a merge of many events needs. */
int vcpustat_sync_map(const struct vcpustat_sync_transform *t, uint64_t guest_ns, uint64_t *host_ns);
/* The same without rounding: mean, and the bounds (-/+INFINITY if unbounded). */
void vcpustat_sync_eval(const struct vcpustat_sync_transform *t, long double guest_ns, long double *host,
			long double *earliest, long double *latest);
/* The identity transform (what "absent" gives): host = guest, unbounded. */
void vcpustat_sync_identity(struct vcpustat_sync_transform *t);

/*
 * Chain two transforms for nested guests: out = outer o inner, e.g. inner
 * L2 -> L1 and outer L1 -> L0 give L2 -> L0, bounds included (the bounds of
 * a chain are the bounds of each step applied in turn). -E2BIG if the chain
 * would need more than VCPUSTAT_SYNC_MAX_BOUNDS bound lines.
 */
int vcpustat_sync_compose(const struct vcpustat_sync_transform *outer, const struct vcpustat_sync_transform *inner,
			  struct vcpustat_sync_transform *out, struct vcpustat_error *err);

/* What a set of matches says. */
struct vcpustat_sync_result {
	enum vcpustat_sync_quality quality;	    /* of the whole set of matches */
	enum vcpustat_sync_quality transform_quality; /* of .transform: = quality, except after FAIL */
	struct vcpustat_sync_transform transform;   /* host = f(guest) */

	/* The same estimate the papers' way: guest = alpha * host + beta. */
	long double alpha, beta;
	/* The extreme feasible lines, guest = f(host) (x = host ns): each exists
	 * once the slope is bounded on that side. Outside the measured range they
	 * are exact bounds; inside it they cross, and the true line can be outside
	 * them near the crossing (transform.early/late are the bounds to use). */
	bool has_min_slope, has_max_slope;
	struct vcpustat_sync_line min_slope, max_slope;

	uint64_t nr_host_to_guest, nr_guest_to_host; /* matches used (before a failure) */
	uint64_t nr_matches;			     /* all matches given, failed ones included */
	uint64_t host_first_ns, host_last_ns;	     /* host time range of the matches used */

	/* FAIL only: the first match after which no line fits any more (in the
	 * order the matches were processed; see vcpustat_sync_solve) and its
	 * position in that input. */
	struct vcpustat_sync_match fail_match;
	uint64_t fail_index;
};

/*
 * The incremental interface: add matches one by one, read the result at any
 * time. Matches in non-decreasing host time (host send time for host->guest,
 * host receive time for guest->host) cost O(1) amortized and O(hull) memory;
 * a match older than the newest one is still handled exactly, by rebuilding
 * from the two hulls (O(hull size) for that match).
 */
struct vcpustat_sync;

int vcpustat_sync_new(struct vcpustat_sync **out);
void vcpustat_sync_free(struct vcpustat_sync *s);
/* 0, or -EINVAL (bad direction) / -ERANGE (timestamp above VCPUSTAT_SYNC_MAX_NS) /
 * -ENOMEM. A match that makes the set impossible is not an error: the result
 * turns FAIL, and later matches are counted but ignored. */
int vcpustat_sync_add(struct vcpustat_sync *s, const struct vcpustat_sync_match *m, struct vcpustat_error *err);
void vcpustat_sync_get(const struct vcpustat_sync *s, struct vcpustat_sync_result *r);

/*
 * The batch interface: the matches in any order. They are processed in host
 * time order (stable sort: the input order breaks ties), so "FAIL" names the
 * earliest match, by host time, after which no line fits.
 */
int vcpustat_sync_solve(const struct vcpustat_sync_match *m, size_t n, struct vcpustat_sync_result *r,
			struct vcpustat_error *err);

/*
 * The pairs file, one match per line: sender,send_ts,receiver,recv_ts with
 * sender/receiver "host" or "guest" (not both the same) and integer ns
 * timestamps; '#' starts a comment; blank lines and blanks around fields are
 * fine. Parses buf (len bytes, need not be NUL-terminated) into a malloc'ed
 * array (*out, NULL if none; key = line number). name is used in error
 * messages: "NAME:LINE:COLUMN: field 2 (send_ts): ...". -EINVAL on a
 * malformed line, -ENOMEM.
 */
int vcpustat_sync_parse_pairs(const char *buf, size_t len, const char *name, struct vcpustat_sync_match **out,
			      size_t *nr, struct vcpustat_error *err);

/*
 * The hypercall protocol (docs/sync.md, "The protocol"). With key k:
 *  a: guest marker "vcpustat_sync: a k=<k>", written just before the hypercall
 *  b: host kvm_hypercall, nr VCPUSTAT_SYNC_HYPERCALL_NR, a0 = k
 *  c: host, the first kvm_entry of the same thread after b
 *  d: guest marker "vcpustat_sync: d k=<k>", written right after the hypercall
 * a -> b is a guest->host message, c -> d a host->guest one.
 */
struct vcpustat_sync_event {
	uint64_t key;
	uint64_t ts; /* ns, in the clock of the side that recorded it */
};

struct vcpustat_sync_protocol_stats {
	size_t guest_to_host;	  /* a -> b matches produced */
	size_t host_to_guest;	  /* c -> d matches produced */
	size_t duplicate_keys;	  /* keys dropped because they appear twice in one list */
	size_t inconsistent_keys; /* keys dropped because d < a or c < b (a reused key) */
	size_t unmatched;	  /* events left without their partner */
};

/*
 * Turn the four event lists (any order) into matches, sorted by host time.
 * A key present more than once in any list is ambiguous: every event with
 * that key is dropped. A key whose a comes after its d, or whose c comes
 * before its b, was reused: dropped too. A key missing from one list only
 * loses the message that needs it (a without b: no a -> b; c -> d still
 * counts). *out is malloc'ed (NULL if no match); stats may be NULL.
 */
int vcpustat_sync_match_protocol(const struct vcpustat_sync_event *a, size_t na,
				 const struct vcpustat_sync_event *b, size_t nb,
				 const struct vcpustat_sync_event *c, size_t nc,
				 const struct vcpustat_sync_event *d, size_t nd,
				 struct vcpustat_sync_match **out, size_t *nr,
				 struct vcpustat_sync_protocol_stats *stats, struct vcpustat_error *err);

/*
 * Parse the text of a guest marker, "vcpustat_sync: a k=<k>" or "... d k=<k>"
 * (k decimal or 0x-hex), anywhere in text (e.g. an ftrace line). Returns 'a'
 * or 'd' and sets *key, or 0 if text holds no such marker.
 */
int vcpustat_sync_parse_marker(const char *text, uint64_t *key);

/*
 * A pairs file (path, or "-": standard input, named "<stdin>") into *buf
 * (malloc'ed, free it), bounded: 256 MiB from a pipe or a device, a regular
 * file whole. 0, or a negative errno with err naming the file.
 */
int vcpustat_sync_read_pairs(const char *path, char **buf, size_t *len, struct vcpustat_error *err);

/*
 * ---- sync_report.c: what `vcpustat sync` shows ----
 * Where the matches came from: a pairs file (protocol NULL; a failed match
 * is named by its line), or host and guest traces (a failed match is named by
 * its protocol key; the events found, na..nd, and how they matched).
 */
struct vcpustat_sync_source {
	const char *name; /* the file, or "HOST + GUEST, VM vm" */
	const struct vcpustat_sync_protocol_stats *protocol;
	size_t na, nb, nc, nd;
};
/* The transform, its bounds, quality and the summary sentence, as text. */
void vcpustat_sync_print(FILE *f, const struct vcpustat_sync_source *src, const struct vcpustat_sync_result *r);
/* The same as a JSON document (NULL when out of memory). */
json_t *vcpustat_sync_json(const struct vcpustat_sync_source *src, const struct vcpustat_sync_result *r);

#endif
