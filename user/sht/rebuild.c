// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Crash recovery: a file whose writer was killed has sealed leaves but cores
 * that were never written. Their content is in the leaves' journals
 * (docs/sht-format.md section 7): rebuild them in memory, in the writer's own
 * node layout, so the queries read them like any other node; sht_repair()
 * (check.c) appends them to the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "reader_priv.h"

struct seqmap {
	uint32_t seq, index;
};

static int seq_cmp(const void *a, const void *b)
{
	const struct seqmap *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint32_t seq_find(const struct seqmap *m, uint32_t n, uint32_t seq)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && m[lo].seq == seq ? m[lo].index : SHT_NONE32;
}

struct rebuilt {
	uint32_t seq, parent, height;
	uint64_t start;
	struct sht_rec *recs;
	size_t nrecs, cap;
};

/* Encode a rebuilt core as node index k, header and content contiguous (the writer's layout). */
static int encode_core(struct sht_reader *r, uint32_t k, const struct rebuilt *c, const uint32_t *kids,
		       const uint64_t *kid_starts, uint32_t nkids, uint64_t end, uint8_t **out, uint32_t *nblocks,
		       struct vcpustat_error *err)
{
	struct sht_buf ivl = { 0 }, skip = { 0 };
	uint64_t last = c->start;
	size_t i, content;
	uint8_t *b, *p;

	for (i = 0; i < c->nrecs; i++) {
		uint8_t rec[SHT_MAX_REC], sk[24];
		size_t len = rec_put(rec, last, &c->recs[i]), n = 0;

		if (i && !(i % SHT_SKIP_EVERY)) {
			n = varint_put(sk, last - c->start);
			n += varint_put(sk + n, ivl.len);
		}
		if (buf_put(&skip, sk, n) || buf_put(&ivl, rec, len)) {
			free(ivl.p), free(skip.p);
			return verror(err, -ENOMEM, "%s: out of memory", r->name);
		}
		last = c->recs[i].end;
	}
	content = (size_t)nkids * SHT_TABLE_ENTRY + ivl.len + skip.len;
	*nblocks = sht_node_nblocks(content, r->node_size);
	b = calloc(1, SHT_NODE_HDR + content);
	if (!b || *nblocks > SHT_MAX_BLOCKS || ivl.len > UINT32_MAX / 2) {
		free(b), free(ivl.p), free(skip.p);
		return b ? rfail(r, err, r->size, "cannot rebuild core seq %u: too big", c->seq)
			 : verror(err, -ENOMEM, "%s: out of memory", r->name);
	}
	put32(b + NH_MAGIC, SHT_NODE_MAGIC);
	b[NH_KIND] = SHT_NODE_CORE;
	b[NH_HEIGHT] = (uint8_t)c->height;
	put32(b + NH_INDEX, k);
	put32(b + NH_SEQ, c->seq);
	put32(b + NH_PARENT, c->parent);
	put64(b + NH_START, c->start);
	put64(b + NH_END, end);
	put32(b + NH_NINTERVALS, (uint32_t)c->nrecs);
	put16(b + NH_NTABLE, (uint16_t)nkids);
	put16(b + NH_NBLOCKS, (uint16_t)*nblocks);
	put32(b + NH_INTERVALS_LEN, (uint32_t)ivl.len);
	put32(b + NH_SKIP_LEN, (uint32_t)skip.len);
	p = b + SHT_NODE_HDR;
	for (i = 0; i < nkids; i++) {
		put32(p + i * SHT_TABLE_ENTRY, kids[i]);
		put64(p + i * SHT_TABLE_ENTRY + 4, kid_starts[i]);
	}
	p += (size_t)nkids * SHT_TABLE_ENTRY;
	if (ivl.len)
		memcpy(p, ivl.p, ivl.len);
	if (skip.len)
		memcpy(p + ivl.len, skip.p, skip.len);
	free(ivl.p);
	free(skip.p);
	*out = b;
	return 0;
}

static int rec_push(struct rebuilt *c, const struct sht_rec *rec)
{
	if (c->nrecs == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct sht_rec *p = realloc(c->recs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->recs = p;
		c->cap = cap;
	}
	c->recs[c->nrecs++] = *rec;
	return 0;
}

/* Collect the journal records of leaf k that belong to the rebuilt cores. */
static int collect_journal(struct sht_reader *r, uint32_t k, struct rebuilt *cores, uint32_t h0, uint32_t top,
			   uint64_t horizon, struct vcpustat_error *err)
{
	const uint8_t *b = reader_block(r, (uint64_t)k + 1, r->scratch, err), *p, *end;
	uint64_t prev;
	struct nview v;
	int e;

	if (!b)
		return err ? err->code : -EIO;
	e = node_parse(r, k, b, &v, err);
	if (e)
		return e;
	p = v.jrnl;
	end = v.jrnl + v.jrnl_len;
	prev = v.start;
	while (p < end) {
		uint64_t roff = node_off(r, k) + (uint64_t)(p - b);
		uint8_t h = *p++;
		struct sht_rec rec;
		struct rebuilt *c;

		if (h == 0 || h > v.ntable || rec_get(&p, end, prev, &rec))
			return rfail(r, err, roff, "node %u: bad journal record", k);
		if (rec.end > v.end)
			return rfail(r, err, roff, "node %u: journal record ends after the node", k);
		prev = rec.end;
		if (h < h0 || h > top || get32(v.table + (h - 1) * SHT_TABLE_ENTRY) != cores[h].seq)
			continue; /* it went to a core that was sealed */
		c = &cores[h];
		if (rec.start < c->start)
			return rfail(r, err, roff, "node %u: journal record starts before its core", k);
		if (rec.end >= horizon)
			continue;
		if (rec.attr >= r->nattrs || (rec.type == SHT_STR && rec.i >= r->nstrings))
			return rfail(r, err, roff, "node %u: journal record with an undefined attribute or string", k);
		if (rec_push(c, &rec))
			return verror(err, -ENOMEM, "%s: out of memory", r->name);
	}
	return 0;
}

int reader_rebuild(struct sht_reader *r, uint32_t nfile, struct vcpustat_error *err)
{
	struct rebuilt cores[SHT_MAX_HEIGHT + 2];
	struct seqmap *map = NULL;
	uint32_t i, h, h0 = 0, top, leaf = SHT_NONE32, *kids = NULL, last, nmap = 0;
	uint64_t *kid_starts = NULL, horizon, nint = 0;
	const uint8_t *b;
	struct nview v;
	int e = 0;

	memset(cores, 0, sizeof(cores));
	r->nfile = nfile;
	free(r->verified);
	r->verified = calloc(nfile ? nfile : 1, 1);
	if (!r->verified)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	memset(r->verified, 1, nfile); /* the scan verified them */
	for (i = 0; i < nfile; i++)
		nint += r->nodes[i].nintervals; /* 0 for continuation blocks */
	r->info.nintervals = nint;
	r->info.start = r->info.tree_start;
	r->nblocks = nfile;
	if (nfile == 0) { /* killed before its first leaf was sealed */
		r->root = SHT_NONE32;
		r->horizon = r->info.end = r->info.horizon = r->info.tree_start;
		r->filter = r->info.recovered = true;
		return 0;
	}
	last = nfile - 1;
	if (r->nodes[last].kind == SHT_NODE_CONT)
		last = r->nodes[last].parent; /* its head */
	if (r->nodes[last].parent == SHT_NONE32) { /* the whole tree was sealed */
		r->root = last;
		r->filter = false;
		r->horizon = r->info.end = r->info.horizon = r->nodes[last].end;
		return 0;
	}
	for (i = nfile; i-- > 0;)
		if (r->nodes[i].kind == SHT_NODE_LEAF) {
			leaf = i;
			break;
		}
	if (leaf == SHT_NONE32)
		return rfail(r, err, node_off(r, 0), "no leaf among the %u nodes", nfile);
	horizon = r->nodes[leaf].end;
	b = reader_block(r, (uint64_t)leaf + 1, r->scratch, err);
	if (!b)
		return err ? err->code : -EIO;
	e = node_parse(r, leaf, b, &v, err);
	if (e)
		return e;
	top = v.ntable;
	map = malloc(nfile * sizeof(*map));
	kids = malloc((r->max_children + 1) * sizeof(*kids));
	kid_starts = malloc((r->max_children + 1) * sizeof(*kid_starts));
	if (!map || !kids || !kid_starts) {
		e = verror(err, -ENOMEM, "%s: out of memory", r->name);
		goto out;
	}
	for (i = 0, nmap = 0; i < nfile; i++)
		if (r->nodes[i].kind != SHT_NODE_CONT)
			map[nmap++] = (struct seqmap){ r->nodes[i].seq, i };
	qsort(map, nmap, sizeof(*map), seq_cmp);
	for (h = 1; h <= top; h++) {
		cores[h].seq = get32(v.table + (h - 1) * SHT_TABLE_ENTRY);
		cores[h].start = get64(v.table + (h - 1) * SHT_TABLE_ENTRY + 4);
		cores[h].height = h;
		cores[h].parent = h < top ? get32(v.table + h * SHT_TABLE_ENTRY) : SHT_NONE32;
		if (seq_find(map, nmap, cores[h].seq) == SHT_NONE32) {
			if (!h0)
				h0 = h;
		} else if (h0) {
			e = rfail(r, err, node_off(r, leaf) + SHT_NODE_HDR,
				  "node %u: its ancestor at height %u was sealed but the one below was not", leaf, h);
			goto out;
		}
		if (cores[h].start > horizon || (h > 1 && cores[h].start > cores[h - 1].start)) {
			e = rfail(r, err, node_off(r, leaf) + SHT_NODE_HDR, "node %u: bad branch table", leaf);
			goto out;
		}
	}
	if (!h0) {
		e = rfail(r, err, node_off(r, nfile - 1), "the tree has no root (every ancestor of node %u is sealed)",
			  leaf);
		goto out;
	}
	for (i = 0; i <= leaf && !e; i++)
		if (r->nodes[i].kind == SHT_NODE_LEAF && r->nodes[i].journal_len)
			e = collect_journal(r, i, cores, h0, top, horizon, err);
	if (e)
		goto out;
	r->virt = calloc(top - h0 + 1, sizeof(*r->virt));
	r->virt_index = calloc(top - h0 + 1, sizeof(*r->virt_index));
	r->virt_blocks = calloc(top - h0 + 1, sizeof(*r->virt_blocks));
	if (!r->virt || !r->virt_index || !r->virt_blocks) {
		e = verror(err, -ENOMEM, "%s: out of memory", r->name);
		goto out;
	}
	for (h = h0; h <= top; h++) {
		uint32_t nk = 0;

		for (i = 0; i < nfile; i++) {
			if (r->nodes[i].kind == SHT_NODE_CONT || r->nodes[i].parent != cores[h].seq)
				continue;
			if (nk >= r->max_children) {
				e = rfail(r, err, node_off(r, i), "node %u: too many children for core seq %u", i,
					  cores[h].seq);
				goto out;
			}
			kids[nk] = i;
			kid_starts[nk++] = r->nodes[i].start;
		}
		if (h > h0) {
			kids[nk] = r->virt_index[r->nvirt - 1];
			kid_starts[nk++] = cores[h - 1].start;
		}
		if (!nk || nk > r->max_children) {
			e = rfail(r, err, node_off(r, leaf), "core seq %u has %u children", cores[h].seq, nk);
			goto out;
		}
		r->virt_index[r->nvirt] = r->nblocks;
		e = encode_core(r, r->nblocks, &cores[h], kids, kid_starts, nk, horizon, &r->virt[r->nvirt],
				&r->virt_blocks[r->nvirt], err);
		if (e)
			goto out;
		nint += cores[h].nrecs;
		r->nblocks += r->virt_blocks[r->nvirt];
		r->nvirt++;
	}
	r->root = r->virt_index[r->nvirt - 1];
	r->filter = r->info.recovered = true;
	r->horizon = r->info.end = r->info.horizon = horizon;
	r->info.nintervals = nint;
	r->info.rebuilt = r->nvirt;
out:
	for (h = 0; h < SHT_MAX_HEIGHT + 2; h++)
		free(cores[h].recs);
	free(map);
	free(kids);
	free(kid_starts);
	return e;
}
