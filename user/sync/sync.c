// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sync.c - the fully incremental convex hull synchronization (see sync.h and
 * docs/sync.md for the geometry).
 *
 * Vocabulary: a point is (x = host ns, y = guest ns). "Above" points come from
 * host->guest messages: the line must pass below them, so only their lower
 * convex hull matters. "Below" points come from guest->host messages: the line
 * passes above them, so only their upper convex hull matters. A feasible line
 * separates the two hulls.
 *
 * For any two points u (above) and l (below): if l.x < u.x they bound the
 * slope from above, alpha <= slope(l, u); if u.x < l.x they bound it from
 * below, alpha >= slope(u, l); at equal x they only require u.y >= l.y. So
 * alpha_max is the smallest slope(l, u) with l left of u, alpha_min the
 * largest slope(u, l) with u left of l, and the matches are consistent iff
 * alpha_min <= alpha_max (and the equal-x pairs are in order). A clock
 * does not stand still or run backwards, so alpha_max <= 0 is a failure too,
 * and alpha_min <= 0 is no bound at all. The
 * maximum-slope line goes through its pair (l left, u right), the
 * minimum-slope line through its pair (u left, l right).
 *
 * With points in host time order each new point is the rightmost one: a new
 * above point p can only lower alpha_max, to the smallest slope from the
 * below hull to p (a tangent), and a new below point q can only raise
 * alpha_min. Below-hull vertices left of the current max-line contact can
 * never give that tangent again (the contact is on the max line, they are
 * under it, a new p that matters is under it too), so the tangent search
 * starts at the contact and only moves right: O(1) amortized, like the hull
 * updates themselves. Same for the above hull and the min line.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sync/sync.h"

struct pt {
	int64_t x, y;
};

/* A monotone chain, strictly increasing x. */
struct hull {
	struct pt *v;
	size_t n, cap;
	size_t walk; /* where the next tangent search starts */
};

struct engine {
	struct hull above; /* lower hull of the host->guest points */
	struct hull below; /* upper hull of the guest->host points */
	bool has_min, has_max;
	struct pt min_a, min_b; /* min-slope line: above point (left), below point (right) */
	struct pt max_b, max_a; /* max-slope line: below point (left), above point (right) */
};

struct vcpustat_sync {
	struct engine e;
	bool any;
	int64_t x_first, x_last; /* host range of the points used */
	uint64_t nr_h2g, nr_g2h, nr_matches;
	bool failed;
	struct vcpustat_sync_match fail_match;
	uint64_t fail_index;
};

enum side { ABOVE, BELOW };

/* > 0: c is left of the directed line a->b (above it when a.x < b.x). Every
 * coordinate is in [0, 2^62], so each product fits in 125 bits. */
static __int128 cross(struct pt a, struct pt b, struct pt c)
{
	return (__int128)(b.x - a.x) * (c.y - a.y) - (__int128)(b.y - a.y) * (c.x - a.x);
}

/* slope(a, b) < slope(c, d), for a.x < b.x and c.x < d.x */
static bool slope_less(struct pt a, struct pt b, struct pt c, struct pt d)
{
	return (__int128)(b.y - a.y) * (d.x - c.x) < (__int128)(d.y - c.y) * (b.x - a.x);
}

static void hull_free(struct hull *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static void engine_free(struct engine *e)
{
	hull_free(&e->above);
	hull_free(&e->below);
}

/*
 * Append p, the rightmost point, to a lower (ABOVE) or upper (BELOW) hull.
 * The caller has dropped p if a vertex at the same x makes it redundant, so a
 * vertex at p.x is replaced. Collinear vertices are dropped.
 */
static int hull_push(struct hull *h, struct pt p, enum side side)
{
	if (h->n && h->v[h->n - 1].x == p.x)
		h->n--;
	while (h->n >= 2) {
		__int128 c = cross(h->v[h->n - 2], h->v[h->n - 1], p);

		if (side == ABOVE ? c > 0 : c < 0)
			break;
		h->n--;
	}
	/* A popped contact was collinear with its predecessor on the extreme
	 * line (see engine_add), which therefore is a contact as good. */
	if (h->walk >= h->n)
		h->walk = h->n ? h->n - 1 : 0;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		struct pt *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = p;
	return 0;
}

/*
 * Add p, at or right of every point so far. Returns 0, -ENOMEM, or 1 if no
 * line fits p together with the points so far (the engine then still holds
 * the previous, consistent state, apart from the walk positions).
 */
static int engine_add(struct engine *e, enum side side, struct pt p)
{
	struct hull *own = side == ABOVE ? &e->above : &e->below;
	struct hull *other = side == ABOVE ? &e->below : &e->above;
	struct pt *ol = other->n ? &other->v[other->n - 1] : NULL;
	size_t end, t;

	if (own->n) {
		struct pt last = own->v[own->n - 1];

		/* a weaker copy of a constraint at the same host time */
		if (last.x == p.x && (side == ABOVE ? p.y >= last.y : p.y <= last.y))
			return 0;
	}
	/* Same host time on both sides: only the order of y is constrained. */
	if (ol && ol->x == p.x && (side == ABOVE ? ol->y > p.y : ol->y < p.y))
		return 1;
	end = other->n - (ol && ol->x == p.x); /* the other side's points strictly left of p */

	if (side == ABOVE) {
		/* p can only lower alpha_max: to the smallest slope(l, p), the
		 * tangent from p to the below hull, if p is under the max line. */
		if (end && (!e->has_max || cross(e->max_b, e->max_a, p) < 0)) {
			t = other->walk < end ? other->walk : end - 1;
			while (t + 1 < end && cross(other->v[t], other->v[t + 1], p) <= 0)
				t++;
			other->walk = t;
			/* a clock that stands still or runs backwards: no */
			if (p.y <= other->v[t].y)
				return 1;
			if (e->has_min && slope_less(other->v[t], p, e->min_a, e->min_b))
				return 1;
			e->max_b = other->v[t];
			e->max_a = p;
			e->has_max = true;
		}
	} else {
		/* q can only raise alpha_min: to the largest slope(u, q), the
		 * tangent from q to the above hull, if q is over the min line. */
		if (end && (!e->has_min || cross(e->min_a, e->min_b, p) > 0)) {
			t = other->walk < end ? other->walk : end - 1;
			while (t + 1 < end && cross(other->v[t], other->v[t + 1], p) >= 0)
				t++;
			other->walk = t;
			if (e->has_max && slope_less(e->max_b, e->max_a, other->v[t], p))
				return 1;
			e->min_a = other->v[t];
			e->min_b = p;
			e->has_min = true;
		}
	}
	return hull_push(own, p, side);
}

struct tagged {
	struct pt p;
	enum side side;
};

static int tagged_cmp(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;

	if (x->p.x != y->p.x)
		return x->p.x < y->p.x ? -1 : 1;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	return (x->p.y > y->p.y) - (x->p.y < y->p.y);
}

/*
 * A point older than the newest one: the two hulls hold everything that can
 * constrain a line, so replay their vertices and p, in host time order, into
 * a fresh engine. Same return values as engine_add; on 1 or error the old
 * engine is kept.
 */
static int engine_insert(struct engine *e, enum side side, struct pt p)
{
	size_t n = e->above.n + e->below.n + 1, k = 0, i;
	struct tagged *all = malloc(n * sizeof(*all));
	struct engine fresh = { 0 };
	int ret = 0;

	if (!all)
		return -ENOMEM;
	for (i = 0; i < e->above.n; i++)
		all[k++] = (struct tagged){ e->above.v[i], ABOVE };
	for (i = 0; i < e->below.n; i++)
		all[k++] = (struct tagged){ e->below.v[i], BELOW };
	all[k++] = (struct tagged){ p, side };
	qsort(all, n, sizeof(*all), tagged_cmp);
	for (i = 0; i < n && !ret; i++)
		ret = engine_add(&fresh, all[i].side, all[i].p);
	free(all);
	if (ret) {
		engine_free(&fresh);
		return ret;
	}
	engine_free(e);
	*e = fresh;
	return 0;
}

int vcpustat_sync_new(struct vcpustat_sync **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void vcpustat_sync_free(struct vcpustat_sync *s)
{
	if (!s)
		return;
	engine_free(&s->e);
	free(s);
}

static int check_match(const struct vcpustat_sync_match *m, uint64_t index, struct vcpustat_error *err)
{
	if (m->dir != VCPUSTAT_SYNC_HOST_TO_GUEST && m->dir != VCPUSTAT_SYNC_GUEST_TO_HOST)
		return verror(err, -EINVAL, "sync: match %llu: direction %d is neither host->guest nor guest->host",
			      (unsigned long long)index, (int)m->dir);
	if (m->send_ns > VCPUSTAT_SYNC_MAX_NS || m->recv_ns > VCPUSTAT_SYNC_MAX_NS)
		return verror(err, -ERANGE, "sync: match %llu: timestamp %llu ns is above the 2^62 ns limit",
			      (unsigned long long)index,
			      (unsigned long long)(m->send_ns > VCPUSTAT_SYNC_MAX_NS ? m->send_ns : m->recv_ns));
	return 0;
}

static struct pt match_point(const struct vcpustat_sync_match *m, enum side *side)
{
	if (m->dir == VCPUSTAT_SYNC_HOST_TO_GUEST) {
		*side = ABOVE;
		return (struct pt){ (int64_t)m->send_ns, (int64_t)m->recv_ns };
	}
	*side = BELOW;
	return (struct pt){ (int64_t)m->recv_ns, (int64_t)m->send_ns };
}

/* The host time at which a match is processed. */
static uint64_t match_host_ns(const struct vcpustat_sync_match *m)
{
	return m->dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? m->send_ns : m->recv_ns;
}

/* Add a checked match; index is what a failure reports. */
static int sync_add(struct vcpustat_sync *s, const struct vcpustat_sync_match *m, uint64_t index)
{
	enum side side;
	struct pt p = match_point(m, &side);
	int ret;

	s->nr_matches++;
	if (s->failed)
		return 0;
	if (!s->any || p.x >= s->x_last)
		ret = engine_add(&s->e, side, p);
	else
		ret = engine_insert(&s->e, side, p);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		s->failed = true;
		s->fail_match = *m;
		s->fail_index = index;
		return 0;
	}
	if (!s->any || p.x < s->x_first)
		s->x_first = p.x;
	if (!s->any || p.x > s->x_last)
		s->x_last = p.x;
	s->any = true;
	if (side == ABOVE)
		s->nr_h2g++;
	else
		s->nr_g2h++;
	return 0;
}

int vcpustat_sync_add(struct vcpustat_sync *s, const struct vcpustat_sync_match *m, struct vcpustat_error *err)
{
	int ret = check_match(m, s->nr_matches, err);

	if (ret)
		return ret;
	ret = sync_add(s, m, s->nr_matches);
	if (ret)
		return verror(err, ret, "sync: out of memory after %llu matches", (unsigned long long)s->nr_matches);
	return 0;
}

/* ---- lines and transforms ---- */

long double vcpustat_sync_line_at(const struct vcpustat_sync_line *l, long double x)
{
	return l->y_ref + l->slope * (x - l->x_ref);
}

long double vcpustat_sync_line_offset(const struct vcpustat_sync_line *l)
{
	return l->y_ref - l->slope * l->x_ref;
}

struct vcpustat_sync_line vcpustat_sync_line_inverse(const struct vcpustat_sync_line *l)
{
	return (struct vcpustat_sync_line){ 1.0L / l->slope, l->y_ref, l->x_ref };
}

static struct vcpustat_sync_line line_through(struct pt a, struct pt b)
{
	return (struct vcpustat_sync_line){ (long double)(b.y - a.y) / (long double)(b.x - a.x), a.x, a.y };
}

/* x -> inner -> outer */
static struct vcpustat_sync_line line_compose(const struct vcpustat_sync_line *outer,
					      const struct vcpustat_sync_line *inner)
{
	return (struct vcpustat_sync_line){ outer->slope * inner->slope, inner->x_ref,
					    vcpustat_sync_line_at(outer, inner->y_ref) };
}

void vcpustat_sync_eval(const struct vcpustat_sync_transform *t, long double guest_ns, long double *host,
			long double *earliest, long double *latest)
{
	long double lo = t->nr_early ? INFINITY : -INFINITY, hi = t->nr_late ? -INFINITY : INFINITY;
	unsigned int i;

	for (i = 0; i < t->nr_early; i++)
		lo = fminl(lo, vcpustat_sync_line_at(&t->early[i], guest_ns));
	for (i = 0; i < t->nr_late; i++)
		hi = fmaxl(hi, vcpustat_sync_line_at(&t->late[i], guest_ns));
	if (host)
		*host = vcpustat_sync_line_at(&t->mean, guest_ns);
	if (earliest)
		*earliest = lo;
	if (latest)
		*latest = hi;
}

/* The error is convex in guest time (mean - min of lines, max of lines -
 * mean), so its largest value over the range is at one end. */
static void transform_set_error(struct vcpustat_sync_transform *t)
{
	long double g[2] = { t->guest_first, t->guest_last }, worst = 0;

	if (!t->nr_early || !t->nr_late) {
		t->max_error_ns = INFINITY;
		return;
	}
	for (int i = 0; i < 2; i++) {
		long double m, lo, hi;

		vcpustat_sync_eval(t, g[i], &m, &lo, &hi);
		worst = fmaxl(worst, fmaxl(m - lo, hi - m));
	}
	t->max_error_ns = worst;
}

void vcpustat_sync_identity(struct vcpustat_sync_transform *t)
{
	memset(t, 0, sizeof(*t));
	t->mean.slope = 1;
	t->max_error_ns = INFINITY;
}

#define U64_TOP 18446744073709551615.0L

/* The mean line's value m, rounded: 0, or -ERANGE if it is not a u64. */
static int round_host(long double m, uint64_t *host_ns)
{
	if (!(m > -0.5L && m < U64_TOP))
		return -ERANGE;
	*host_ns = (uint64_t)roundl(m);
	return 0;
}

int vcpustat_sync_map(const struct vcpustat_sync_transform *t, uint64_t guest_ns, uint64_t *host_ns)
{
	return round_host(vcpustat_sync_line_at(&t->mean, (long double)guest_ns), host_ns);
}

int vcpustat_sync_apply(const struct vcpustat_sync_transform *t, uint64_t guest_ns, struct vcpustat_sync_time *out)
{
	const long double top = U64_TOP;
	long double m, lo, hi;

	vcpustat_sync_eval(t, (long double)guest_ns, &m, &lo, &hi);
	if (round_host(m, &out->host_ns))
		return -ERANGE;
	out->bounded = t->nr_early && t->nr_late;
	out->earliest_ns = lo > 0 ? (uint64_t)floorl(fminl(lo, m)) : 0;
	out->latest_ns = hi < top ? (uint64_t)ceill(fmaxl(hi, m)) : UINT64_MAX;
	if (out->host_ns < out->earliest_ns) /* rounding at the very edge */
		out->earliest_ns = out->host_ns;
	if (out->host_ns > out->latest_ns)
		out->latest_ns = out->host_ns;
	if (!out->bounded) {
		out->error_ns = UINT64_MAX;
		return 0;
	}
	out->error_ns = out->host_ns - out->earliest_ns;
	if (out->latest_ns - out->host_ns > out->error_ns)
		out->error_ns = out->latest_ns - out->host_ns;
	return 0;
}

int vcpustat_sync_compose(const struct vcpustat_sync_transform *outer, const struct vcpustat_sync_transform *inner,
			  struct vcpustat_sync_transform *out, struct vcpustat_error *err)
{
	struct vcpustat_sync_transform t;
	unsigned int i, j;

	if (outer->nr_early * inner->nr_early > VCPUSTAT_SYNC_MAX_BOUNDS ||
	    outer->nr_late * inner->nr_late > VCPUSTAT_SYNC_MAX_BOUNDS)
		return verror(err, -E2BIG, "sync: chaining these transforms needs %u bound lines, more than the %d kept",
			      outer->nr_early * inner->nr_early > outer->nr_late * inner->nr_late ?
				      outer->nr_early * inner->nr_early : outer->nr_late * inner->nr_late,
			      VCPUSTAT_SYNC_MAX_BOUNDS);
	if (!(outer->mean.slope > 0) || !(inner->mean.slope > 0))
		return verror(err, -EINVAL, "sync: cannot chain a transform whose slope is not positive");
	memset(&t, 0, sizeof(t));
	t.mean = line_compose(&outer->mean, &inner->mean);
	/* Each step's bounds are increasing functions, so the earliest host time
	 * is the outer earliest of the inner earliest: min over all pairs. */
	for (i = 0; i < outer->nr_early; i++)
		for (j = 0; j < inner->nr_early; j++)
			t.early[t.nr_early++] = line_compose(&outer->early[i], &inner->early[j]);
	for (i = 0; i < outer->nr_late; i++)
		for (j = 0; j < inner->nr_late; j++)
			t.late[t.nr_late++] = line_compose(&outer->late[i], &inner->late[j]);
	if (!t.nr_early || !t.nr_late)
		t.nr_early = t.nr_late = 0;
	t.guest_first = inner->guest_first;
	t.guest_last = inner->guest_last;
	transform_set_error(&t);
	*out = t;
	return 0;
}

/* ---- results ---- */

/* The min-slope line bounds the slope only if it is increasing: slopes <= 0
 * are excluded anyway (a clock does not run backwards). */
static bool has_min_bound(const struct engine *e)
{
	return e->has_min && e->min_b.y > e->min_a.y;
}

const char *vcpustat_sync_quality_name(enum vcpustat_sync_quality q)
{
	static const char *const names[] = { "absent", "incomplete", "approximate", "accurate", "fail" };

	return (unsigned int)q < sizeof(names) / sizeof(names[0]) ? names[q] : "unknown";
}

/* The line of slope alpha that passes under (ABOVE) or over (BELOW) every
 * vertex of h and touches it, as its value at x_ref. */
static long double touching_value(const struct hull *h, enum side side, long double alpha, int64_t x_ref)
{
	long double best = side == ABOVE ? INFINITY : -INFINITY;

	for (size_t i = 0; i < h->n; i++) {
		long double v = (long double)h->v[i].y + alpha * (long double)(x_ref - h->v[i].x);

		best = side == ABOVE ? fminl(best, v) : fmaxl(best, v);
	}
	return best;
}

/* mean, alpha and beta from a guest = f(host) line */
static void result_set_mean(struct vcpustat_sync_result *r, const struct vcpustat_sync_line *fit, int64_t x0,
			    int64_t x1)
{
	r->alpha = fit->slope;
	r->beta = vcpustat_sync_line_offset(fit);
	r->transform.mean = vcpustat_sync_line_inverse(fit);
	r->transform.guest_first = vcpustat_sync_line_at(fit, x0);
	r->transform.guest_last = vcpustat_sync_line_at(fit, x1);
}

/*
 * Both extreme lines exist. At the ends x0, x1 of the measured range every
 * feasible line lies between them (at x0, min-slope on top: every feasible
 * line value there is a decreasing function of its slope); in between, the
 * upper envelope of the feasible lines is convex, so it lies under its chord
 * from min(x0) to max(x1), and the lower envelope over the chord from max(x0)
 * to min(x1). Upper bound: max(min, max, upper chord); lower bound: min(min,
 * max, lower chord), true everywhere. The mean is the midpoint of the two
 * extreme lines; inverted, the bounds become the early/late lines.
 */
static void result_accurate(const struct vcpustat_sync *s, struct vcpustat_sync_result *r)
{
	const struct engine *e = &s->e;
	int64_t x0 = s->x_first, x1 = s->x_last, xr = x0 + (x1 - x0) / 2;
	struct vcpustat_sync_line lmin = line_through(e->min_a, e->min_b);
	struct vcpustat_sync_line lmax = line_through(e->max_b, e->max_a);
	long double min_r = vcpustat_sync_line_at(&lmin, xr), max_r = vcpustat_sync_line_at(&lmax, xr);
	long double w0 = (long double)(x0 - xr), w1 = (long double)(x1 - xr), span = (long double)(x1 - x0);
	struct vcpustat_sync_line fit = { (lmin.slope + lmax.slope) / 2, xr, (min_r + max_r) / 2 };
	struct vcpustat_sync_line upper = { 0, x0, min_r + lmin.slope * w0 };
	struct vcpustat_sync_line lower = { 0, x0, max_r + lmax.slope * w0 };
	struct vcpustat_sync_transform *t = &r->transform;

	if (span > 0) {
		upper.slope = ((max_r - min_r) + lmax.slope * w1 - lmin.slope * w0) / span;
		lower.slope = ((min_r - max_r) + lmin.slope * w1 - lmax.slope * w0) / span;
	} else { /* cannot happen with both lines: they need two host times */
		upper.slope = lower.slope = fit.slope;
	}
	r->has_min_slope = r->has_max_slope = true;
	r->min_slope = lmin;
	r->max_slope = lmax;
	result_set_mean(r, &fit, x0, x1);
	t->nr_early = t->nr_late = 3;
	t->early[0] = vcpustat_sync_line_inverse(&lmin);
	t->early[1] = vcpustat_sync_line_inverse(&lmax);
	t->early[2] = vcpustat_sync_line_inverse(&upper);
	t->late[0] = t->early[0];
	t->late[1] = t->early[1];
	t->late[2] = vcpustat_sync_line_inverse(&lower);
	transform_set_error(t);
}

/*
 * A line fits but the slope is free on one side (or both, if every pair of
 * opposite points shares its host time): take slope 1 (clocks at the same
 * rate) clamped into the feasible slope range, and the middle of the
 * feasible offsets at that slope. No bounds.
 */
static void result_approximate(const struct vcpustat_sync *s, struct vcpustat_sync_result *r)
{
	const struct engine *e = &s->e;
	int64_t x0 = s->x_first, x1 = s->x_last, xr = x0 + (x1 - x0) / 2;
	long double alpha = 1;
	struct vcpustat_sync_line fit;

	if (has_min_bound(e)) {
		r->has_min_slope = true;
		r->min_slope = line_through(e->min_a, e->min_b);
		alpha = fmaxl(alpha, r->min_slope.slope);
	}
	if (e->has_max) {
		r->has_max_slope = true;
		r->max_slope = line_through(e->max_b, e->max_a);
		alpha = fminl(alpha, r->max_slope.slope);
	}
	fit = (struct vcpustat_sync_line){ alpha, xr,
					   (touching_value(&e->above, ABOVE, alpha, xr) +
					    touching_value(&e->below, BELOW, alpha, xr)) / 2 };
	result_set_mean(r, &fit, x0, x1);
	r->transform.max_error_ns = INFINITY;
}

/* One direction only: slope 1, and the offset that makes the fastest message
 * take no time at all (a bound on the offset, not an estimate of it). */
static void result_incomplete(const struct vcpustat_sync *s, struct vcpustat_sync_result *r)
{
	int64_t x0 = s->x_first, x1 = s->x_last, xr = x0 + (x1 - x0) / 2;
	const struct hull *h = s->e.above.n ? &s->e.above : &s->e.below;
	struct vcpustat_sync_line fit = { 1, xr, touching_value(h, s->e.above.n ? ABOVE : BELOW, 1, xr) };

	result_set_mean(r, &fit, x0, x1);
	r->transform.max_error_ns = INFINITY;
}

void vcpustat_sync_get(const struct vcpustat_sync *s, struct vcpustat_sync_result *r)
{
	enum vcpustat_sync_quality q;

	memset(r, 0, sizeof(*r));
	vcpustat_sync_identity(&r->transform);
	r->alpha = 1;
	if (!s->any) {
		q = VCPUSTAT_SYNC_ABSENT;
	} else if (!s->nr_h2g || !s->nr_g2h) {
		q = VCPUSTAT_SYNC_INCOMPLETE;
		result_incomplete(s, r);
	} else if (has_min_bound(&s->e) && s->e.has_max) {
		q = VCPUSTAT_SYNC_ACCURATE;
		result_accurate(s, r);
	} else {
		q = VCPUSTAT_SYNC_APPROXIMATE;
		result_approximate(s, r);
	}
	r->transform_quality = q;
	r->quality = s->failed ? VCPUSTAT_SYNC_FAIL : q;
	r->nr_host_to_guest = s->nr_h2g;
	r->nr_guest_to_host = s->nr_g2h;
	r->nr_matches = s->nr_matches;
	if (s->any) {
		r->host_first_ns = (uint64_t)s->x_first;
		r->host_last_ns = (uint64_t)s->x_last;
	}
	if (s->failed) {
		r->fail_match = s->fail_match;
		r->fail_index = s->fail_index;
	}
}

/* ---- batch ---- */

struct keyed {
	uint64_t host_ns;
	size_t index;
};

/* Stable LSD radix sort on host time, 11 bits a pass, skipping the passes
 * where every key has the same digit (the high bits of a trace's times):
 * about 5 passes for hours of data, several times faster than qsort. */
static int radix_sort(struct keyed *v, size_t n)
{
	struct keyed *tmp = malloc(n * sizeof(*tmp)), *src = v, *dst = tmp;
	static const unsigned int bits = 11, size = 1u << 11;
	size_t *count = calloc(size, sizeof(*count));

	if (!tmp || !count) {
		free(tmp);
		free(count);
		return -ENOMEM;
	}
	for (unsigned int shift = 0; shift < 64; shift += bits) {
		size_t i, sum = 0;

		memset(count, 0, size * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(src[i].host_ns >> shift) & (size - 1)]++;
		if (count[(src[0].host_ns >> shift) & (size - 1)] == n)
			continue;
		for (i = 0; i < size; i++) {
			size_t c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i].host_ns >> shift) & (size - 1)]++] = src[i];
		dst = src;
		src = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	free(count);
	return 0;
}

int vcpustat_sync_solve(const struct vcpustat_sync_match *m, size_t n, struct vcpustat_sync_result *r,
			struct vcpustat_error *err)
{
	struct vcpustat_sync *s;
	struct keyed *order = NULL;
	size_t i;
	bool sorted = true;
	int ret;

	for (i = 0; i < n; i++) {
		ret = check_match(&m[i], i, err);
		if (ret)
			return ret;
		if (i && match_host_ns(&m[i]) < match_host_ns(&m[i - 1]))
			sorted = false;
	}
	ret = vcpustat_sync_new(&s);
	if (ret)
		return verror(err, ret, "sync: out of memory");
	if (!sorted) {
		order = malloc(n * sizeof(*order));
		if (!order) {
			ret = verror(err, -ENOMEM, "sync: out of memory sorting %zu matches", n);
			goto out;
		}
		for (i = 0; i < n; i++)
			order[i] = (struct keyed){ match_host_ns(&m[i]), i };
		if (radix_sort(order, n)) {
			ret = verror(err, -ENOMEM, "sync: out of memory sorting %zu matches", n);
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		size_t k = order ? order[i].index : i;

		ret = sync_add(s, &m[k], k);
		if (ret) {
			ret = verror(err, ret, "sync: out of memory after %zu matches", i);
			goto out;
		}
	}
	vcpustat_sync_get(s, r);
out:
	free(order);
	vcpustat_sync_free(s);
	return ret;
}
