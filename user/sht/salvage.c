// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Salvage: the repair of a file with damaged nodes (docs/sht-format.md
 * section 8). Every intact node is read, whatever comes before or after a
 * damaged one: the intervals of the leaves and cores, and the journal copies
 * of the leaves for the cores that are damaged or were never sealed. The
 * history is then written again, with the writer, into a new file; a damaged
 * node loses only what it held. The attribute and string tables come from
 * the footer when it is intact, else from the definitions of the intact
 * leaves; ids that only a damaged leaf defined get placeholder names
 * ("lost-attribute-<id>", "<lost string <id>>") so that the others keep
 * their meaning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "reader_priv.h"

struct srec {
	struct sht_rec rec;
	uint64_t order; /* order of reading: ties keep the order of writing */
};

struct jrec {
	struct sht_rec rec;
	uint64_t order;
	uint32_t seq; /* the core it was stored in */
};

struct salvage {
	struct sht_reader *r;	/* the file: blocks, and the tables if the footer is lost */
	struct sht_reader *tab; /* where the attribute and string tables are */
	struct srec *recs;
	size_t nrecs, cap;
	struct jrec *jrecs;
	size_t njrecs, jcap;
	uint32_t *cores; /* seq of the intact cores */
	size_t ncores, ccap;
	uint64_t order;
	struct sht_repair_info *info;
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 1024;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* How many more ids a run of damaged nodes may have defined: a definition takes at least 4 bytes. */
static uint64_t id_slack(const struct salvage *s)
{
	uint64_t n = (uint64_t)s->info->damaged_nodes * (s->r->node_size / 4);

	return (n < (1u << 20) ? n : 1u << 20) + 1; /* and no more placeholders than that, whatever the file */
}

/* Give ids below attr_to / str_to that no intact node defined a placeholder. */
static int pad_tables(struct salvage *s, uint64_t attr_to, uint64_t str_to, struct vcpustat_error *err)
{
	struct sht_reader *t = s->tab;
	struct sht_buf b = { 0 };
	char name[64];
	int e = 0;

	if (attr_to <= t->nattrs && str_to <= t->nstrings)
		return 0;
	for (uint64_t id = t->nattrs; id < attr_to && !e; id++) {
		snprintf(name, sizeof(name), "lost-attribute-%llu", (unsigned long long)id);
		e = sht_def_attr(&b, (uint32_t)id, SHT_NO_ATTR, name);
		s->info->lost_attributes++;
	}
	for (uint64_t id = t->nstrings; id < str_to && !e; id++) {
		snprintf(name, sizeof(name), "<lost string %llu>", (unsigned long long)id);
		e = sht_def_string(&b, (uint32_t)id, name, strlen(name));
		s->info->lost_strings++;
	}
	if (!e)
		e = reader_defs(t, b.p, b.len, 0, err);
	else
		e = verror(err, -ENOMEM, "%s: out of memory", s->r->name);
	free(b.p);
	return e;
}

/* The first attribute and string ids a definition section defines (UINT64_MAX: none). */
static int first_ids(const uint8_t *p, size_t len, uint64_t *attr, uint64_t *str)
{
	const uint8_t *end = p + len;
	uint64_t id, x;

	*attr = *str = UINT64_MAX;
	while (p < end) {
		uint8_t kind = *p++;

		if (varint_get(&p, end, &id) || varint_get(&p, end, &x))
			return -EBADMSG;
		if (kind == SHT_DEF_ATTR) {
			if (p >= end || *p > (size_t)(end - p - 1))
				return -EBADMSG;
			p += 1 + *p;
			if (*attr == UINT64_MAX)
				*attr = id;
		} else if (kind == SHT_DEF_STRING) {
			if (x > (uint64_t)(end - p))
				return -EBADMSG;
			p += x;
			if (*str == UINT64_MAX)
				*str = id;
		} else {
			return -EBADMSG;
		}
	}
	return 0;
}

/* The records of one section of node v; journal: with the seq of the core each went to. */
static int take_records(struct salvage *s, const struct nview *v, bool journal)
{
	const uint8_t *p = journal ? v->jrnl : v->ivl, *end = p + (journal ? v->jrnl_len : v->ivl_len);
	uint64_t prev = v->start;
	struct sht_rec rec;

	while (p < end) {
		uint32_t seq = 0;

		if (journal) {
			uint8_t h = *p++;

			if (h == 0 || h > v->ntable)
				return -EBADMSG;
			seq = get32(v->table + (size_t)(h - 1) * SHT_TABLE_ENTRY);
		}
		if (rec_get(&p, end, prev, &rec))
			return -EBADMSG;
		if (rec.start < (journal ? s->r->info.tree_start : v->start) || rec.end > v->end)
			return -EBADMSG;
		prev = rec.end;
		if (journal) {
			if (grow((void **)&s->jrecs, &s->jcap, s->njrecs + 1, sizeof(*s->jrecs)))
				return -ENOMEM;
			s->jrecs[s->njrecs++] = (struct jrec){ rec, s->order++, seq };
		} else {
			if (grow((void **)&s->recs, &s->cap, s->nrecs + 1, sizeof(*s->recs)))
				return -ENOMEM;
			s->recs[s->nrecs++] = (struct srec){ rec, s->order++ };
		}
	}
	return 0;
}

/* Node k is intact (v): take its definitions and records; -EBADMSG if they do not decode. */
static int take_node(struct salvage *s, const struct nview *v, struct vcpustat_error *err)
{
	size_t nrecs = s->nrecs, njrecs = s->njrecs;
	struct vcpustat_error e2 = { 0 };
	uint64_t fa, fs;
	int e = 0;

	if (v->kind == SHT_NODE_LEAF && s->tab == s->r && v->defs_len) {
		if (first_ids(v->defs, v->defs_len, &fa, &fs))
			return -EBADMSG;
		if ((fa != UINT64_MAX && fa > s->r->nattrs + id_slack(s)) ||
		    (fs != UINT64_MAX && fs > s->r->nstrings + id_slack(s)))
			return -EBADMSG;
		e = pad_tables(s, fa == UINT64_MAX ? 0 : fa, fs == UINT64_MAX ? 0 : fs, err);
		if (e)
			return e;
		e = reader_defs(s->r, v->defs, v->defs_len, node_off(s->r, v->index), &e2);
		if (e)
			return e == -EBADMSG ? e : verror(err, e, "%s", e2.msg);
	}
	e = take_records(s, v, false);
	if (!e && v->kind == SHT_NODE_LEAF)
		e = take_records(s, v, true);
	if (!e && v->kind == SHT_NODE_CORE) {
		if (grow((void **)&s->cores, &s->ccap, s->ncores + 1, sizeof(*s->cores)))
			e = -ENOMEM;
		else
			s->cores[s->ncores++] = v->seq;
	}
	if (e) { /* none of this node */
		s->nrecs = nrecs;
		s->njrecs = njrecs;
	}
	if (e == -ENOMEM)
		return verror(err, e, "%s: out of memory", s->r->name);
	return e;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int srec_cmp(const void *a, const void *b)
{
	const struct srec *x = a, *y = b;

	if (x->rec.attr != y->rec.attr)
		return x->rec.attr < y->rec.attr ? -1 : 1;
	if (x->rec.start != y->rec.start)
		return x->rec.start < y->rec.start ? -1 : 1;
	if (x->rec.end != y->rec.end)
		return x->rec.end < y->rec.end ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* A value change for the writer: from t on, attr holds (type, i); n orders those of one attr. */
struct change {
	uint64_t t, n;
	uint32_t attr;
	uint8_t type;
	int64_t i;
};

static int change_cmp(const void *a, const void *b)
{
	const struct change *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->attr != y->attr)
		return x->attr < y->attr ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

/* Write the intervals s->recs (sorted by attribute and start) to path with the writer, closing at end. */
static int rewrite(struct salvage *s, const char *path, uint64_t end, struct vcpustat_error *err)
{
	struct sht_reader *r = s->r, *t = s->tab;
	struct sht_writer_opts o = { .node_size = r->node_size, .max_children = r->max_children,
				     .tree_start = r->info.tree_start, .mono_start_ns = r->info.mono_start_ns,
				     .real_start_ns = r->info.real_start_ns };
	struct sht_meta *meta = calloc(r->nmeta + 1, sizeof(*meta));
	struct change *ch = malloc((2 * s->nrecs + 1) * sizeof(*ch));
	struct sht_writer *w = NULL;
	char note[160];
	size_t i, n = 0;
	uint32_t id;
	int e;

	if (!meta || !ch) {
		e = verror(err, -ENOMEM, "%s: out of memory", r->name);
		goto out;
	}
	for (i = 0; i < r->nmeta; i++)
		meta[i] = r->meta[i];
	snprintf(note, sizeof(note), "repaired: %u damaged node%s dropped (the first at offset %llu)",
		 s->info->damaged_nodes, s->info->damaged_nodes == 1 ? "" : "s",
		 (unsigned long long)s->info->first_damaged_offset);
	meta[r->nmeta] = (struct sht_meta){ "repair", note };
	o.meta = meta;
	o.nmeta = r->nmeta + 1;
	for (i = 0; i < s->nrecs; i++) {
		const struct sht_rec *a = &s->recs[i].rec, *nx = i + 1 < s->nrecs ? &s->recs[i + 1].rec : NULL;

		ch[n++] = (struct change){ a->start, 2 * i, a->attr, a->type, a->i };
		/* the value ends here unless the next interval takes over (a null in between keeps equal values apart) */
		if (!nx || nx->attr != a->attr || nx->start != a->end || (nx->type == a->type && nx->i == a->i))
			ch[n++] = (struct change){ a->end, 2 * i + 1, a->attr, SHT_NULL, 0 };
	}
	if (n)
		qsort(ch, n, sizeof(*ch), change_cmp);
	e = sht_writer_create(&w, path, &o, err);
	if (e)
		goto out;
	for (i = 0; i < t->nattrs && !e; i++) {
		e = sht_writer_attr_child(w, t->attrs[i].parent, t->attrs[i].name, &id);
		if (!e && id != i)
			e = verror(err, -EBADMSG, "%s: attribute #%u is defined twice", r->name, (unsigned)i);
	}
	for (i = 0; i < n && !e; i++) {
		struct sht_value v = { .type = ch[i].type, .i = ch[i].i };

		if (v.type == SHT_STR)
			v.s = t->strings[v.i];
		e = sht_writer_set(w, ch[i].attr, ch[i].t, &v);
	}
	if (e) {
		if (w && sht_writer_error(w)->code && err && !err->msg[0])
			*err = *sht_writer_error(w);
		sht_writer_abandon(w);
		if (err && !err->msg[0])
			verror(err, e, "%s: %s", path, strerror(-e));
		goto out;
	}
	e = sht_writer_close(w, end, err);
out:
	free(meta);
	free(ch);
	return e;
}

int sht_salvage(struct sht_reader *r, struct sht_reader *footer, const char *out, struct sht_repair_info *info,
		struct vcpustat_error *err)
{
	struct salvage s = { .r = r, .tab = footer ? footer : r, .info = info };
	uint64_t full = r->size / r->node_size - 1, k, horizon = r->info.tree_start, end, max_attr = 0, max_str = 0;
	uint64_t root_end = 0;
	bool closed = false, have_root = false, complete;
	struct rbuf buf = { 0 };
	size_t i, j;
	int e = 0;

	memset(info, 0, sizeof(*info));
	info->first_damaged = -1;
	if (full >= SHT_NONE32 - 1)
		full = SHT_NONE32 - 2;
	free(r->verified);
	r->verified = calloc(full ? full : 1, 1);
	if (!r->verified)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	r->nfile = (uint32_t)full;
	for (k = 0; k < full; k++) {
		struct vcpustat_error e2 = { 0 };
		const uint8_t *b = reader_block(r, k + 1, r->scratch, err);
		struct nview v;

		if (!b)
			return err && err->code ? err->code : -EIO;
		if (!node_verify(r, (uint32_t)k, b, &v, &e2) && v.kind == SHT_NODE_FOOTER)
			break;
		if (!e2.code && v.kind == SHT_NODE_CONT)
			continue; /* read with its head (or lost with it) */
		if (!e2.code)
			e = reader_node(r, (uint32_t)k, &buf, &v, &e2); /* with its continuation blocks */
		if (!e2.code) {
			e = take_node(&s, &v, err);
			if (e && e != -EBADMSG)
				goto out;
			if (e)
				rfail(r, &e2, node_off(r, (uint32_t)k), "node %llu: its records do not decode",
				      (unsigned long long)k);
			e = 0;
		}
		if (e2.code) {
			if (!info->damaged_nodes) {
				info->first_damaged = (int64_t)k;
				info->first_damaged_offset = node_off(r, (uint32_t)k);
				snprintf(info->first_problem, sizeof(info->first_problem), "%s", e2.msg);
			}
			info->damaged_nodes++;
			continue;
		}
		info->intervals_found += v.nintervals;
		if (v.kind == SHT_NODE_LEAF && v.end > horizon)
			horizon = v.end;
		if (v.parent == SHT_NONE32 && v.kind != SHT_NODE_CONT) {
			have_root = true;
			root_end = v.end;
		}
	}
	/* Is the tree complete (the writer closed it, or sealed its root)? Else keep what ended before the horizon. */
	{
		const uint8_t *cr = r->header + r->node_size - SHT_CLOSE_SIZE;

		closed = get32(cr + CR_MAGIC) == SHT_CLOSE_MAGIC &&
			 get32(cr + CR_CRC) == (uint32_t)crc32(0, cr + 8, SHT_CLOSE_SIZE - 8);
		complete = have_root || (closed && get32(cr + CR_FOOTER_INDEX) <= full);
		end = complete ? (closed ? get64(cr + CR_END) : root_end) : horizon;
		if (footer && complete) {
			end = footer->info.end;
			if (footer->filter)
				horizon = footer->horizon;
		}
		if (complete) /* closed with every block of the tree (a damaged root comes back from the journals) */
			horizon = footer && footer->filter ? footer->horizon : UINT64_MAX;
		if (end < r->info.tree_start)
			end = r->info.tree_start;
	}
	/* the journal copies of the cores that are not intact in the file */
	if (s.ncores)
		qsort(s.cores, s.ncores, sizeof(*s.cores), u32_cmp);
	for (i = 0; i < s.njrecs; i++) {
		if (s.ncores && bsearch(&s.jrecs[i].seq, s.cores, s.ncores, sizeof(*s.cores), u32_cmp))
			continue;
		if (grow((void **)&s.recs, &s.cap, s.nrecs + 1, sizeof(*s.recs))) {
			e = verror(err, -ENOMEM, "%s: out of memory", r->name);
			goto out;
		}
		s.recs[s.nrecs++] = (struct srec){ s.jrecs[i].rec, s.jrecs[i].order };
		info->from_journals++;
	}
	/* beyond the horizon or the end, or ids nothing can define: not part of the history */
	for (i = j = 0; i < s.nrecs; i++) {
		const struct sht_rec *a = &s.recs[i].rec;

		if (a->end >= horizon || a->end > end || a->attr > s.tab->nattrs + id_slack(&s) ||
		    (a->type == SHT_STR && (uint64_t)a->i > s.tab->nstrings + id_slack(&s))) {
			info->dropped++;
			continue;
		}
		if (a->attr + 1ull > max_attr)
			max_attr = a->attr + 1ull;
		if (a->type == SHT_STR && (uint64_t)a->i + 1 > max_str)
			max_str = (uint64_t)a->i + 1;
		s.recs[j++] = s.recs[i];
	}
	s.nrecs = j;
	e = pad_tables(&s, max_attr, max_str, err);
	if (e)
		goto out;
	if (s.nrecs)
		qsort(s.recs, s.nrecs, sizeof(*s.recs), srec_cmp);
	for (i = j = 0; i < s.nrecs; i++) { /* overlaps cannot come from a writer: keep the first */
		if (j && s.recs[j - 1].rec.attr == s.recs[i].rec.attr && s.recs[i].rec.start < s.recs[j - 1].rec.end) {
			info->dropped++;
			continue;
		}
		s.recs[j++] = s.recs[i];
	}
	s.nrecs = j;
	info->intervals_kept = s.nrecs;
	info->announced = footer ? footer->info.nintervals : 0;
	e = rewrite(&s, out, end, err);
out:
	free(buf.p);
	free(s.recs);
	free(s.jrecs);
	free(s.cores);
	return e;
}
