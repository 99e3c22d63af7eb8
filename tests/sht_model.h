/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A simple in-memory model of an SHT (every completed interval in a list),
 * random operation streams, and helpers that compare a file's answers with
 * the model's. Header-only, shared by the tests/test_sht*.c files.
 */
#ifndef VCPUSTAT_TEST_SHT_MODEL_H
#define VCPUSTAT_TEST_SHT_MODEL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sht/sht.h"

/* ---- deterministic random numbers (splitmix64) ---- */

static inline uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rnd_below(uint64_t *s, uint64_t n)
{
	return n ? rnd_next(s) % n : 0;
}

/* ---- operations ---- */

static const char *const model_strings[] = {
	"", "a", "qemu-system-x86", "vm-alpha", "vm-beta", "EPT_VIOLATION", "HLT", "a string of some length, 40 bytes",
};
#define MODEL_NSTRINGS (sizeof(model_strings) / sizeof(model_strings[0]))

struct op {
	uint32_t attr;
	uint64_t t;
	int type; /* enum sht_type */
	int64_t i;
	const char *s;
};

struct scenario {
	uint64_t seed;
	uint32_t nattrs;
	size_t nops;
	uint32_t node_size, max_children;
	int zero_pct;	 /* % of operations at the same time as the previous one */
	int older_pct;	 /* % with a time older than the newest (clamped) */
	int null_pct;	 /* % setting null */
	int string_pct;	 /* % setting a string */
	int bigint_pct;	 /* % with an integer outside 0..63 (negative, huge) */
	int hot_pct;	 /* % of operations on attribute 0..hot_attrs-1 */
	uint32_t hot_attrs;
	uint32_t max_step; /* time step upper bound (ns) */
};

/* A unique, realistic path for model attribute a. */
static inline char *attr_path(uint32_t a, char *buf, size_t len)
{
	static const char *const leaf[] = { "state", "exit_reason", "pcpu" };
	uint32_t g = a / 7, r = a % 7;

	if (r < 3)
		snprintf(buf, len, "/vms/vm%u/vcpus/%u/%s", g / 4, g % 4, leaf[r]);
	else if (r == 3)
		snprintf(buf, len, "/vms/vm%u/threads/%u/state", g / 4, 100 + g % 4);
	else if (r == 4)
		snprintf(buf, len, "/vms/vm%u/vcpus/%u/state", g / 4, 50 + g % 4);
	else if (r == 5)
		snprintf(buf, len, "/host/threads/%u/state", 1000 + g);
	else
		snprintf(buf, len, "/host/cpus/%u/current_tid", g);
	return buf;
}

/* The operation stream of a scenario (deterministic from its seed). */
static inline struct op *make_ops(const struct scenario *sc)
{
	struct op *ops = calloc(sc->nops ? sc->nops : 1, sizeof(*ops));
	uint64_t s = sc->seed, t = 1000;
	size_t k;

	cr_assert_not_null(ops);
	for (k = 0; k < sc->nops; k++) {
		struct op *o = &ops[k];
		uint64_t r = rnd_below(&s, 100);

		if (r < (uint64_t)sc->zero_pct)
			; /* same time */
		else if (r < (uint64_t)(sc->zero_pct + sc->older_pct))
			o->t = t > 500 ? t - 1 - rnd_below(&s, 500) : 0; /* clamped by the writer */
		else
			t += 1 + rnd_below(&s, sc->max_step ? sc->max_step : 1000);
		if (!o->t)
			o->t = t;
		if (sc->hot_attrs && (int)rnd_below(&s, 100) < sc->hot_pct)
			o->attr = (uint32_t)rnd_below(&s, sc->hot_attrs);
		else
			o->attr = (uint32_t)rnd_below(&s, sc->nattrs);
		r = rnd_below(&s, 100);
		if (r < (uint64_t)sc->null_pct) {
			o->type = SHT_NULL;
		} else if (r < (uint64_t)(sc->null_pct + sc->string_pct)) {
			o->type = SHT_STR;
			o->s = model_strings[rnd_below(&s, MODEL_NSTRINGS)];
		} else {
			o->type = SHT_INT;
			if ((int)rnd_below(&s, 100) < sc->bigint_pct)
				o->i = (int64_t)rnd_next(&s) >> rnd_below(&s, 64);
			else
				o->i = (int64_t)rnd_below(&s, 7);
		}
	}
	return ops;
}

/* ---- the model ---- */

struct mivl {
	uint32_t attr;
	uint64_t start, end;
	int type;
	int64_t i;
	const char *s;
	uint64_t seq; /* order of writing */
};

struct model {
	struct mivl *ivl;
	size_t n, cap;
	struct mivl *cur; /* per attribute: the open value (type SHT_NULL: none) */
	uint32_t nattrs;
	uint64_t last_t, clamped, seq;
};

static inline void model_init(struct model *m, uint32_t nattrs)
{
	memset(m, 0, sizeof(*m));
	m->nattrs = nattrs;
	m->cur = calloc(nattrs ? nattrs : 1, sizeof(*m->cur));
	cr_assert_not_null(m->cur);
}

static inline void model_free(struct model *m)
{
	free(m->ivl);
	free(m->cur);
}

static inline void model_push(struct model *m, const struct mivl *iv)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->ivl = realloc(m->ivl, m->cap * sizeof(*m->ivl));
		cr_assert_not_null(m->ivl);
	}
	m->ivl[m->n] = *iv;
	m->ivl[m->n++].seq = m->seq++;
}

static inline bool same_value(const struct mivl *c, const struct op *o)
{
	if (c->type != o->type)
		return false;
	if (o->type == SHT_INT)
		return c->i == o->i;
	if (o->type == SHT_STR)
		return !strcmp(c->s, o->s);
	return true;
}

static inline void model_set(struct model *m, const struct op *o)
{
	struct mivl *c = &m->cur[o->attr];
	uint64_t t = o->t;

	if (t < m->last_t) {
		t = m->last_t;
		m->clamped++;
	} else {
		m->last_t = t;
	}
	if (same_value(c, o))
		return;
	if (c->type != SHT_NULL) {
		struct mivl iv = *c;

		iv.end = t;
		model_push(m, &iv);
	}
	*c = (struct mivl){ .attr = o->attr, .start = t, .type = o->type, .i = o->i, .s = o->s };
}

static inline void model_close(struct model *m, uint64_t end)
{
	uint32_t a;

	if (end < m->last_t) {
		end = m->last_t;
		m->clamped++;
	}
	m->last_t = end;
	for (a = 0; a < m->nattrs; a++)
		if (m->cur[a].type != SHT_NULL) {
			struct mivl iv = m->cur[a];

			iv.end = end;
			model_push(m, &iv);
			m->cur[a].type = SHT_NULL;
		}
}

/* ---- writing a scenario ---- */

/* Attribute ids of the scenario in a writer (paths from attr_path). */
static inline void create_attrs(struct sht_writer *w, uint32_t nattrs, uint32_t *ids)
{
	char path[128];
	uint32_t a;

	for (a = 0; a < nattrs; a++)
		cr_assert_eq(sht_writer_attr(w, attr_path(a, path, sizeof(path)), &ids[a]), 0, "%s",
			     sht_writer_error(w)->msg);
}

static inline void apply_op(struct sht_writer *w, const uint32_t *ids, const struct op *o)
{
	struct sht_value v = { .type = (enum sht_type)o->type, .i = o->i, .s = o->s };

	cr_assert_eq(sht_writer_set(w, ids[o->attr], o->t, &v), 0, "%s", sht_writer_error(w)->msg);
}

static inline struct sht_writer *open_writer(const char *path, const struct scenario *sc)
{
	struct sht_meta meta[] = { { "host", "testhost" }, { "tool", "vcpustat-tests" } };
	struct sht_writer_opts o = { .node_size = sc->node_size, .max_children = sc->max_children,
				     .mono_start_ns = 5000000000ull, .real_start_ns = 1795356187000000000ull,
				     .meta = meta, .nmeta = 2, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	return w;
}

/* ---- comparing a reader with the model ---- */

struct cmp_ctx {
	struct sht_reader *r;
	const struct model *m;
	uint32_t *ids;	    /* model attr -> file attr id */
	uint32_t *back;	    /* file attr id -> model attr (UINT32_MAX if not a model attr) */
	bool filter;	    /* only intervals with end < horizon exist */
	uint64_t horizon;
	struct mivl **by_attr; /* per model attribute: its intervals sorted by start, then order */
	size_t *count;
};

static inline bool model_visible(const struct cmp_ctx *c, const struct mivl *iv)
{
	return !c->filter || iv->end < c->horizon;
}

static inline void cmp_value(const struct mivl *exp, const struct sht_interval *got, const char *what)
{
	cr_assert_eq((int)got->value.type, exp->type, "%s: type %d, expected %d", what, got->value.type, exp->type);
	cr_assert_eq(got->start, exp->start, "%s: start %llu, expected %llu", what, (unsigned long long)got->start,
		     (unsigned long long)exp->start);
	cr_assert_eq(got->end, exp->end, "%s: end %llu, expected %llu", what, (unsigned long long)got->end,
		     (unsigned long long)exp->end);
	if (exp->type == SHT_INT)
		cr_assert_eq(got->value.i, exp->i, "%s: value %lld, expected %lld", what, (long long)got->value.i,
			     (long long)exp->i);
	else if (exp->type == SHT_STR)
		cr_assert_str_eq(got->value.s, exp->s, "%s", what);
}

/* The model's interval of attribute ma containing t, or NULL. */
static inline const struct mivl *model_at(const struct cmp_ctx *c, uint32_t ma, uint64_t t)
{
	const struct mivl *v = c->by_attr[ma];
	size_t lo = 0, hi = c->count[ma];

	while (lo < hi) { /* first interval starting after t */
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	v = &v[lo - 1]; /* zero-length ones come before the non-empty one starting at the same time */
	return v->start <= t && t < v->end && model_visible(c, v) ? v : NULL;
}

/* Stabbing at t: every attribute against the model. */
static inline void cmp_at(struct cmp_ctx *c, uint64_t t)
{
	uint32_t nf = sht_nattrs(c->r), a;
	struct sht_interval *got = calloc(nf ? nf : 1, sizeof(*got));
	struct vcpustat_error err = { 0 };
	char what[96];

	cr_assert_not_null(got);
	cr_assert_eq(sht_query_at(c->r, t, NULL, got, &err), 0, "%s", err.msg);
	for (a = 0; a < nf; a++) {
		uint32_t ma = c->back[a];
		const struct mivl *exp = ma == UINT32_MAX ? NULL : model_at(c, ma, t);

		if (!exp) {
			if (got[a].value.type != SHT_NULL)
				cr_assert_fail("at t=%llu attr %s: expected null, got type %d [%llu, %llu)",
					       (unsigned long long)t, sht_attr_path(c->r, a), got[a].value.type,
					       (unsigned long long)got[a].start, (unsigned long long)got[a].end);
			continue;
		}
		snprintf(what, sizeof(what), "at t=%llu attr %s", (unsigned long long)t, sht_attr_path(c->r, a));
		cmp_value(exp, &got[a], what);
	}
	free(got);
}

static inline int mivl_cmp(const void *x, const void *y)
{
	const struct mivl *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->end != b->end)
		return a->end < b->end ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Range [t1, t2] of model attribute ma. */
static inline void cmp_range(struct cmp_ctx *c, uint32_t ma, uint64_t t1, uint64_t t2)
{
	struct vcpustat_error err = { 0 };
	const struct mivl *exp[4096];
	struct sht_interval *got;
	size_t n = 0, ng, k;
	char what[128];

	for (k = 0; k < c->count[ma]; k++) {
		const struct mivl *iv = &c->by_attr[ma][k];

		if (!model_visible(c, iv) || iv->start > t2)
			continue;
		if (iv->end > t1 || (iv->start == iv->end && iv->start >= t1)) {
			if (n == sizeof(exp) / sizeof(exp[0]))
				break; /* long answers: compare their first part */
			exp[n++] = iv;
		}
	}
	cr_assert_eq(sht_query_range(c->r, c->ids[ma], NULL, t1, t2, &got, &ng, &err), 0, "%s", err.msg);
	snprintf(what, sizeof(what), "range [%llu, %llu] of %s", (unsigned long long)t1, (unsigned long long)t2,
		 sht_attr_path(c->r, c->ids[ma]));
	if (n < sizeof(exp) / sizeof(exp[0]))
		cr_assert_eq(ng, n, "%s: %zu intervals, expected %zu", what, ng, n);
	else
		cr_assert_geq(ng, n, "%s", what);
	for (k = 0; k < n; k++) {
		cr_assert_eq(got[k].attr, c->ids[ma], "%s", what);
		cmp_value(exp[k], &got[k], what);
	}
	free(got);
}

/* Map model attributes to the file's ids by path. */
static inline void cmp_init(struct cmp_ctx *c, struct sht_reader *r, const struct model *m)
{
	uint32_t a, nf = sht_nattrs(r);
	char path[128];

	c->r = r;
	c->m = m;
	c->ids = calloc(m->nattrs ? m->nattrs : 1, sizeof(*c->ids));
	c->back = malloc((nf ? nf : 1) * sizeof(*c->back));
	cr_assert(c->ids && c->back);
	memset(c->back, 0xff, (nf ? nf : 1) * sizeof(*c->back));
	for (a = 0; a < m->nattrs; a++) {
		int e = sht_attr_lookup(r, attr_path(a, path, sizeof(path)), &c->ids[a]);

		if (e) { /* a recovered file may lack attributes created after its last leaf */
			c->ids[a] = UINT32_MAX;
			continue;
		}
		c->back[c->ids[a]] = a;
	}
	c->filter = sht_get_info(r)->recovered;
	c->horizon = sht_get_info(r)->horizon;
	c->by_attr = calloc(m->nattrs ? m->nattrs : 1, sizeof(*c->by_attr));
	c->count = calloc(m->nattrs ? m->nattrs : 1, sizeof(*c->count));
	cr_assert(c->by_attr && c->count);
	for (size_t k = 0; k < m->n; k++)
		c->count[m->ivl[k].attr]++;
	for (a = 0; a < m->nattrs; a++) {
		c->by_attr[a] = calloc(c->count[a] ? c->count[a] : 1, sizeof(**c->by_attr));
		cr_assert_not_null(c->by_attr[a]);
		c->count[a] = 0;
	}
	for (size_t k = 0; k < m->n; k++)
		c->by_attr[m->ivl[k].attr][c->count[m->ivl[k].attr]++] = m->ivl[k];
	for (a = 0; a < m->nattrs; a++)
		qsort(c->by_attr[a], c->count[a], sizeof(**c->by_attr), mivl_cmp);
}

static inline void cmp_free(struct cmp_ctx *c)
{
	for (uint32_t a = 0; a < c->m->nattrs; a++)
		free(c->by_attr[a]);
	free(c->by_attr);
	free(c->count);
	free(c->ids);
	free(c->back);
}

/*
 * Compare everything: stabbing at every interval boundary (and +-1) for up
 * to max_points points, and range queries of every attribute over random
 * windows.
 */
static inline void cmp_all(struct sht_reader *r, const struct model *m, uint64_t seed, size_t max_points,
			   size_t nranges)
{
	const struct sht_info *in = sht_get_info(r);
	struct cmp_ctx c;
	uint64_t s = seed ^ 0x5eed, end = in->end + 2;
	size_t k, step;
	uint32_t a;

	cmp_init(&c, r, m);
	for (a = 0; a < m->nattrs; a++)
		if (c.ids[a] == UINT32_MAX)
			for (k = 0; k < c.count[a]; k++)
				cr_assert(!model_visible(&c, &c.by_attr[a][k]),
					  "attribute %u has visible intervals but is not in the file", a);
	step = m->n > max_points / 3 ? m->n / (max_points / 3) + 1 : 1;
	for (k = 0; k < m->n; k += step) {
		cmp_at(&c, m->ivl[k].start);
		cmp_at(&c, m->ivl[k].end);
		if (m->ivl[k].end)
			cmp_at(&c, m->ivl[k].end - 1);
	}
	cmp_at(&c, 0);
	cmp_at(&c, in->end);
	for (k = 0; k < 20; k++)
		cmp_at(&c, rnd_below(&s, end));
	for (k = 0; k < nranges; k++) {
		uint64_t t1 = rnd_below(&s, end), t2 = t1 + rnd_below(&s, end / (1 + rnd_below(&s, 20)) + 1);
		uint32_t ma = (uint32_t)rnd_below(&s, m->nattrs);

		if (c.ids[ma] != UINT32_MAX)
			cmp_range(&c, ma, t1, t2);
	}
	for (a = 0; a < m->nattrs && a < 64; a++) /* whole history of some attributes */
		if (c.ids[a] != UINT32_MAX)
			cmp_range(&c, a, 0, UINT64_MAX);
	cmp_free(&c);
}

/* A file name in /tmp for this test process (the last 4 stay valid). */
static inline char *tmp_path(const char *tag)
{
	static char buf[4][256];
	static unsigned int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "/tmp/vcpustat-test-%s-%d.sht", tag, (int)getpid());
	return p;
}

#endif
