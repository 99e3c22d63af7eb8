// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SHT queries: stabbing (sht_query_at: every attribute's value at t) and
 * range (sht_query_range: intervals that meet [t1, t2]), walking the tree
 * from the root. Cores are decoded once and kept in a cache with a byte
 * budget (sht_set_cache); leaves are decoded on the fly, from the skip
 * table's entry nearest to t. sht_select: the attributes that a path
 * pattern selects (`query --path`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "reader_priv.h"

static void cache_trim(struct sht_reader *r);

void sht_set_cache(struct sht_reader *r, size_t bytes)
{
	r->dcache_budget = bytes;
	cache_trim(r);
}

/*
 * Where to start decoding the interval section of v: every record before the
 * returned offset ends at or before t (inclusive: stabbing, which needs
 * end > t) or before t (range, which needs end >= t).
 */
static int skip_to(const struct sht_reader *r, const struct nview *v, uint64_t t, bool inclusive, uint32_t *off,
		   uint64_t *prev, uint32_t *pos, struct vcpustat_error *err)
{
	const uint8_t *p = v->skip, *end = v->skip + v->skip_len;
	uint64_t last_rel = 0, rel, o, last_off = 0;
	uint32_t block = 0;

	*off = 0;
	*prev = v->start;
	*pos = 0;
	while (p < end) {
		if (varint_get(&p, end, &rel) || varint_get(&p, end, &o) || rel < last_rel || o <= last_off ||
		    o >= v->ivl_len || rel > v->end - v->start)
			return rfail(r, err, node_off(r, v->index) + (uint64_t)(p - v->b), "node %u: bad skip table",
				     v->index);
		block++;
		last_rel = rel;
		last_off = o;
		if (inclusive ? v->start + rel > t : v->start + rel >= t)
			break;
		*off = (uint32_t)o;
		*prev = v->start + rel;
		*pos = block * SHT_SKIP_EVERY;
	}
	return 0;
}

/* Check one decoded record of node v; resolves string values. */
static int rec_check(const struct sht_reader *r, const struct nview *v, const uint8_t *at, const struct sht_rec *rec,
		     struct vcpustat_error *err)
{
	if (rec->start < v->start || rec->end > v->end)
		return rfail(r, err, node_off(r, v->index) + (uint64_t)(at - v->b),
			     "node %u: interval [%llu, %llu) outside the node's range [%llu, %llu]", v->index,
			     (unsigned long long)rec->start, (unsigned long long)rec->end,
			     (unsigned long long)v->start, (unsigned long long)v->end);
	if (rec->attr >= r->nattrs)
		return rfail(r, err, node_off(r, v->index) + (uint64_t)(at - v->b),
			     "node %u: interval of undefined attribute #%u", v->index, rec->attr);
	if (rec->type == SHT_STR && (uint64_t)rec->i >= r->nstrings)
		return rfail(r, err, node_off(r, v->index) + (uint64_t)(at - v->b),
			     "node %u: undefined string #%lld", v->index, (long long)rec->i);
	return 0;
}

static void to_interval(const struct sht_reader *r, const struct sht_rec *rec, struct sht_interval *out)
{
	out->attr = rec->attr;
	out->start = rec->start;
	out->end = rec->end;
	out->value.type = (enum sht_type)rec->type;
	out->value.i = rec->type == SHT_INT ? rec->i : 0;
	out->value.s = rec->type == SHT_STR ? r->strings[rec->i] : NULL;
}

static void drec_interval(const struct sht_reader *r, const struct drec *d, struct sht_interval *out)
{
	out->attr = d->attr;
	out->start = d->start;
	out->end = d->end;
	out->value.type = (enum sht_type)d->type;
	out->value.i = d->type == SHT_INT ? d->i : 0;
	out->value.s = d->type == SHT_STR ? r->strings[d->i] : NULL;
}

static void dnode_free(struct dnode *d)
{
	free(d->recs);
	free(d->kids);
	free(d);
}

/* The last child of d starting at or before t (0 if none). */
static uint32_t kid_at(const struct dnode *d, uint64_t t)
{
	uint32_t lo = 0, hi = d->nkids;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->kids[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* Drop the least recently used unpinned cores until the cache fits its budget. */
static void cache_trim(struct sht_reader *r)
{
	while (r->dcache_bytes > r->dcache_budget) {
		uint64_t oldest = UINT64_MAX;
		uint32_t i, best = SHT_NONE32;
		struct dnode *d;

		for (i = 0; i < r->ncached; i++) {
			d = r->dcache[r->cached[i]];
			if (!d->pins && d->last_use < oldest) {
				oldest = d->last_use;
				best = i;
			}
		}
		if (best == SHT_NONE32)
			return;
		d = r->dcache[r->cached[best]];
		r->dcache[r->cached[best]] = NULL;
		r->dcache_bytes -= d->bytes;
		r->cached[best] = r->cached[--r->ncached];
		dnode_free(d);
	}
}

/* Decode core v (every record checked; intervals past the horizon dropped) and cache it. */
static int core_decode(struct sht_reader *r, const struct nview *v, struct dnode **out, struct vcpustat_error *err)
{
	const uint8_t *p = v->ivl, *end = v->ivl + v->ivl_len;
	struct dnode *d = calloc(1, sizeof(*d));
	uint64_t prev = v->start;
	struct sht_rec rec;
	uint32_t i;
	int e = 0;

	if (!d)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	d->recs = malloc((v->nintervals ? v->nintervals : 1) * sizeof(*d->recs));
	d->kids = malloc(v->ntable * sizeof(*d->kids));
	if (!d->recs || !d->kids) {
		dnode_free(d);
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	}
	d->index = v->index;
	d->height = v->height;
	d->start = v->start;
	d->end = v->end;
	while (p < end) {
		const uint8_t *at = p;

		if (d->n == v->nintervals || rec_get(&p, end, prev, &rec)) {
			e = rfail(r, err, node_off(r, v->index) + (uint64_t)(at - v->b), "node %u: bad interval record",
				  v->index);
			goto fail;
		}
		prev = rec.end;
		e = rec_check(r, v, at, &rec, err);
		if (e)
			goto fail;
		if (r->filter && rec.end >= r->horizon)
			continue;
		d->recs[d->n++] = (struct drec){ rec.start, rec.end, rec.i, rec.attr, rec.type };
	}
	for (i = 0; i < v->ntable; i++) {
		struct dkid *c = &d->kids[i];

		c->index = get32(v->table + i * SHT_TABLE_ENTRY);
		c->start = get64(v->table + i * SHT_TABLE_ENTRY + 4);
		c->end = i + 1 < v->ntable ? get64(v->table + (i + 1) * SHT_TABLE_ENTRY + 4) : v->end;
		if (c->index >= v->index || c->start > c->end || c->end > v->end || (i == 0 && c->start != v->start)) {
			e = rfail(r, err, node_off(r, v->index) + SHT_NODE_HDR + i * SHT_TABLE_ENTRY,
				  "node %u: bad child entry %u", v->index, i);
			goto fail;
		}
	}
	d->nkids = v->ntable;
	d->bytes = sizeof(*d) + d->n * sizeof(*d->recs) + d->nkids * sizeof(*d->kids);
	d->last_use = ++r->clock;
	if (v->index < r->ndcache) {
		r->dcache[v->index] = d;
		r->cached[r->ncached++] = v->index;
		r->dcache_bytes += d->bytes;
		d->pins++; /* not the one to drop now */
		cache_trim(r);
		d->pins--;
	}
	*out = d;
	return 0;
fail:
	dnode_free(d);
	return e;
}

/*
 * Node k, expected at height h (any if h > SHT_MAX_HEIGHT) with range
 * [start, end]: a core comes back decoded (*core), a leaf as *leaf, a view of
 * r->nodebuf.
 */
static int node_get(struct sht_reader *r, uint32_t k, uint32_t h, uint64_t start, uint64_t end, struct dnode **core,
		    struct nview *leaf, struct vcpustat_error *err)
{
	uint32_t height;
	uint64_t s, e2;
	int e;

	*core = NULL;
	if (k < r->ndcache && r->dcache[k]) {
		*core = r->dcache[k];
		(*core)->last_use = ++r->clock;
		height = (*core)->height;
		s = (*core)->start;
		e2 = (*core)->end;
	} else {
		e = reader_node(r, k, &r->nodebuf, leaf, err);
		if (e)
			return e;
		height = leaf->height;
		s = leaf->start;
		e2 = leaf->end;
	}
	if ((h <= SHT_MAX_HEIGHT && height != h) || s != start || e2 != end)
		return rfail(r, err, node_off(r, k), "node %u: height %u, range [%llu, %llu]; expected %u, [%llu, %llu]",
			     k, height, (unsigned long long)s, (unsigned long long)e2, h, (unsigned long long)start,
			     (unsigned long long)end);
	if (*core || leaf->kind == SHT_NODE_LEAF)
		return 0;
	return core_decode(r, leaf, core, err);
}

#define ANY_HEIGHT (SHT_MAX_HEIGHT + 1u)

int sht_query_at(struct sht_reader *r, uint64_t t, const uint8_t *want, struct sht_interval *out,
		 struct vcpustat_error *err)
{
	uint64_t start = r->info.start, end = r->info.end;
	uint32_t a, k = r->root, h = ANY_HEIGHT;
	struct dnode *d;
	struct nview v;
	int e;

	for (a = 0; a < r->nattrs; a++)
		out[a] = (struct sht_interval){ .attr = a };
	if (r->root == SHT_NONE32 || t < r->info.start || t >= r->info.end)
		return 0;
	for (;;) {
		uint32_t lo, hi, off, pos;
		const uint8_t *p, *pend;
		struct sht_rec rec;
		uint64_t prev;

		e = node_get(r, k, h, start, end, &d, &v, err);
		if (e)
			return e;
		if (d) {
			for (lo = 0, hi = d->n; lo < hi;) { /* first record that ends after t */
				uint32_t mid = lo + (hi - lo) / 2;

				if (d->recs[mid].end <= t)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < d->n; lo++)
				if (d->recs[lo].start <= t && (!want || want[d->recs[lo].attr]))
					drec_interval(r, &d->recs[lo], &out[d->recs[lo].attr]);
			lo = kid_at(d, t); /* the child to go down to */
			if (t >= d->kids[lo].end) /* an empty last child: t is the end of the core */
				return 0;
			k = d->kids[lo].index;
			h = d->height - 1u;
			start = d->kids[lo].start;
			end = d->kids[lo].end;
			continue;
		}
		e = skip_to(r, &v, t, true, &off, &prev, &pos, err);
		if (e)
			return e;
		p = v.ivl + off;
		pend = v.ivl + v.ivl_len;
		while (p < pend) {
			const uint8_t *at = p;

			if (rec_get(&p, pend, prev, &rec))
				return rfail(r, err, node_off(r, v.index) + (uint64_t)(at - v.b),
					     "node %u: bad interval record", v.index);
			prev = rec.end;
			if (rec.end <= t || rec.start > t)
				continue;
			e = rec_check(r, &v, at, &rec, err);
			if (e)
				return e;
			if ((r->filter && rec.end >= r->horizon) || (want && !want[rec.attr]))
				continue;
			to_interval(r, &rec, &out[rec.attr]);
		}
		return 0;
	}
}

struct found {
	struct sht_interval iv;
	uint64_t order; /* node index << 32 | position */
};

struct range_query {
	struct sht_reader *r;
	uint32_t attr;
	const uint8_t *want;
	uint64_t t1, t2;
	struct found *res;
	size_t n, cap;
	struct vcpustat_error *err;
};

static bool range_wants(const struct range_query *q, uint32_t attr, uint64_t start, uint64_t end)
{
	if (start > q->t2 || !(end > q->t1 || (start == end && start >= q->t1)))
		return false;
	if (q->attr != SHT_NO_ATTR)
		return attr == q->attr;
	return !q->want || attr >= q->r->nattrs || q->want[attr];
}

static struct found *range_add(struct range_query *q)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 256;
		struct found *f = realloc(q->res, cap * sizeof(*f));

		if (!f)
			return NULL;
		q->res = f;
		q->cap = cap;
	}
	return &q->res[q->n++];
}

static int visit(struct range_query *q, uint32_t k, uint32_t h, uint64_t start, uint64_t end)
{
	struct sht_reader *r = q->r;
	uint32_t off, pos, i, lo, hi;
	const uint8_t *p, *pend;
	struct sht_rec rec;
	struct dnode *d;
	struct nview v;
	struct found *f;
	uint64_t prev;
	int e;

	e = node_get(r, k, h, start, end, &d, &v, q->err);
	if (e)
		return e;
	if (d) {
		for (lo = 0, hi = d->n; lo < hi;) { /* first record that ends at or after t1 */
			uint32_t mid = lo + (hi - lo) / 2;

			if (d->recs[mid].end < q->t1)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (i = lo; i < d->n; i++) {
			const struct drec *x = &d->recs[i];

			if (!range_wants(q, x->attr, x->start, x->end))
				continue;
			f = range_add(q);
			if (!f)
				return verror(q->err, -ENOMEM, "%s: out of memory", r->name);
			drec_interval(r, x, &f->iv);
			f->order = (uint64_t)k << 32 | i;
		}
		d->pins++; /* the children must not evict it while we walk its table */
		for (i = 0; i < d->nkids && !e; i++)
			if (d->kids[i].end >= q->t1 && d->kids[i].start <= q->t2)
				e = visit(q, d->kids[i].index, d->height - 1u, d->kids[i].start, d->kids[i].end);
		d->pins--;
		return e;
	}
	e = skip_to(r, &v, q->t1, false, &off, &prev, &pos, q->err);
	if (e)
		return e;
	p = v.ivl + off;
	pend = v.ivl + v.ivl_len;
	for (; p < pend; pos++) {
		const uint8_t *at = p;

		if (rec_get(&p, pend, prev, &rec))
			return rfail(r, q->err, node_off(r, v.index) + (uint64_t)(at - v.b),
				     "node %u: bad interval record", v.index);
		prev = rec.end;
		if (!range_wants(q, rec.attr, rec.start, rec.end))
			continue;
		e = rec_check(r, &v, at, &rec, q->err);
		if (e)
			return e;
		if (r->filter && rec.end >= r->horizon)
			continue;
		f = range_add(q);
		if (!f)
			return verror(q->err, -ENOMEM, "%s: out of memory", r->name);
		to_interval(r, &rec, &f->iv);
		f->order = (uint64_t)k << 32 | pos;
	}
	return 0;
}

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->iv.attr != y->iv.attr)
		return x->iv.attr < y->iv.attr ? -1 : 1;
	if (x->iv.start != y->iv.start)
		return x->iv.start < y->iv.start ? -1 : 1;
	if (x->iv.end != y->iv.end)
		return x->iv.end < y->iv.end ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int sht_query_range(struct sht_reader *r, uint32_t attr, const uint8_t *want, uint64_t t1, uint64_t t2,
		    struct sht_interval **out, size_t *n, struct vcpustat_error *err)
{
	struct range_query q = { .r = r, .attr = attr, .want = want, .t1 = t1, .t2 = t2, .err = err };
	struct sht_interval *res;
	size_t i;
	int e;

	*out = NULL;
	*n = 0;
	if (attr != SHT_NO_ATTR && attr >= r->nattrs)
		return verror(err, -EINVAL, "%s: no attribute #%u", r->name, attr);
	if (r->root != SHT_NONE32 && t1 <= t2 && t2 >= r->info.start && t1 <= r->info.end) {
		e = visit(&q, r->root, ANY_HEIGHT, r->info.start, r->info.end);
		if (e) {
			free(q.res);
			return e;
		}
	}
	if (q.n)
		qsort(q.res, q.n, sizeof(*q.res), found_cmp);
	res = malloc((q.n ? q.n : 1) * sizeof(*res));
	if (!res) {
		free(q.res);
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	}
	for (i = 0; i < q.n; i++)
		res[i] = q.res[i].iv;
	free(q.res);
	*out = res;
	*n = q.n;
	return 0;
}

int sht_select(const struct sht_reader *r, const char *p, uint8_t *want)
{
	size_t len = strlen(p);
	uint32_t base = SHT_NO_ATTR, a, n = sht_nattrs(r);
	bool children = false, below = false;
	char *copy;
	int e = 0;

	if (len >= 3 && !strcmp(p + len - 3, "/**"))
		below = true, len -= 3;
	else if (len >= 2 && !strcmp(p + len - 2, "/*"))
		children = true, len -= 2;
	copy = strndup(p, len);
	if (!copy)
		return -ENOMEM;
	if (len) /* else: the root */
		e = sht_attr_lookup(r, copy, &base);
	else if (!children && !below)
		e = -ENOENT;
	free(copy);
	if (e)
		return -ENOENT;
	for (a = 0; a < n; a++) {
		uint32_t up = sht_attr_parent(r, a);
		bool sel;

		if (children) {
			sel = up == base;
		} else if (below) {
			while (up != SHT_NO_ATTR && up != base)
				up = sht_attr_parent(r, up);
			sel = up == base;
		} else {
			sel = a == base;
		}
		if (sel)
			want[a] = 1;
	}
	return 0;
}
