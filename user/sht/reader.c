// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SHT reader: open (fast with a footer; by a scan and a rebuild of the
 * unsealed cores without one, rebuild.c, docs/sht-format.md section 7),
 * blocks and nodes, definitions, footers, metadata and attributes; the
 * queries are in query.c. Every node is bounds-checked as it is decoded and
 * its CRC verified the first time it is read, so a damaged file gives one
 * error naming the file and the offset, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "reader_priv.h"

int rfail(const struct sht_reader *r, struct vcpustat_error *err, uint64_t off, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	((struct sht_reader *)r)->fail_off = off;
	return verror(err, -EBADMSG, "%s: offset %llu: %s", r->name, (unsigned long long)off, msg);
}

struct sht_reader *reader_alloc(const char *name)
{
	struct sht_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fd = -1;
	r->root = SHT_NONE32;
	r->name = strdup(name);
	if (!r->name || strtab_init(&r->attr_index)) {
		free(r->name);
		free(r);
		return NULL;
	}
	r->attr_index.owned = true;
	return r;
}

void reader_free(struct sht_reader *r)
{
	uint32_t i;

	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	for (i = 0; i < r->nattrs; i++)
		free(r->attrs[i].path);
	free(r->attrs);
	strtab_free(&r->attr_index);
	for (i = 0; i < r->nstrings; i++)
		free(r->strings[i]);
	free(r->strings);
	for (i = 0; i < r->ncached; i++) {
		struct dnode *d = r->dcache[r->cached[i]];

		free(d->recs);
		free(d->kids);
		free(d);
	}
	free(r->dcache);
	free(r->cached);
	for (i = 0; i < r->nvirt; i++)
		free(r->virt[i]);
	free(r->virt);
	free(r->virt_index);
	free(r->virt_blocks);
	free(r->nodebuf.p);
	free(r->contblock);
	for (i = 0; i < SHT_MAX_HEIGHT + 2; i++)
		free(r->bufs[i].p);
	free(r->scratch);
	free(r->verified);
	free(r->nodes);
	free(r->header);
	free(r->meta);
	free(r->meta_buf);
	free(r->name);
	free(r);
}

void sht_close(struct sht_reader *r)
{
	reader_free(r);
}

/* ---- blocks ---- */

static int read_at(struct sht_reader *r, void *buf, size_t len, uint64_t off, struct vcpustat_error *err)
{
	uint8_t *p = buf;

	if (off + len > r->size)
		return rfail(r, err, r->size, "truncated: the file ends in the middle of a %zu-byte block at offset %llu",
			     len, (unsigned long long)off);
	if (r->mem) {
		memcpy(buf, r->mem + off, len);
		return 0;
	}
	while (len) {
		ssize_t n = pread(r->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return verror(err, n < 0 ? -errno : -EIO, "%s: offset %llu: read failed: %s", r->name,
				      (unsigned long long)off, n < 0 ? strerror(errno) : "unexpected end of file");
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

const uint8_t *reader_block(struct sht_reader *r, uint64_t k, uint8_t *buf, struct vcpustat_error *err)
{
	uint64_t off = k * r->node_size;

	if (r->mem) {
		if (off + r->node_size > r->size) {
			rfail(r, err, r->size, "truncated: the file ends inside block %llu", (unsigned long long)k);
			return NULL;
		}
		return r->mem + off;
	}
	if (read_at(r, buf, r->node_size, off, err))
		return NULL;
	return buf;
}

/* ---- header ---- */

int reader_header(struct sht_reader *r, bool *closed, struct vcpustat_error *err)
{
	uint8_t fixed[SHT_HDR_SIZE];
	const uint8_t *b, *cr;
	uint32_t len, i, nmeta, crc, node_size, maxc;
	size_t off, total = 0;
	int e;

	*closed = false;
	if (r->size < 8 || (r->mem ? memcmp(r->mem, SHT_MAGIC, 8) : 0)) {
		if (r->size < 8)
			return rfail(r, err, 0, "not a vcpustat SHT file (only %llu bytes)", (unsigned long long)r->size);
		return rfail(r, err, 0, "not a vcpustat SHT file (bad magic)");
	}
	if (r->size < SHT_HDR_SIZE) {
		e = read_at(r, fixed, (size_t)r->size, 0, err);
		if (e)
			return e;
		if (memcmp(fixed, SHT_MAGIC, 8))
			return rfail(r, err, 0, "not a vcpustat SHT file (bad magic)");
		return rfail(r, err, r->size, "truncated in the file header (the file is %llu bytes)",
			     (unsigned long long)r->size);
	}
	e = read_at(r, fixed, sizeof(fixed), 0, err);
	if (e)
		return e;
	if (memcmp(fixed, SHT_MAGIC, 8))
		return rfail(r, err, 0, "not a vcpustat SHT file (bad magic)");
	if (get32(fixed + FH_VERSION) != SHT_FORMAT_VERSION)
		return rfail(r, err, FH_VERSION, "unsupported SHT format version %u (this vcpustat reads version %d)",
			     get32(fixed + FH_VERSION), SHT_FORMAT_VERSION);
	node_size = get32(fixed + FH_NODE_SIZE);
	if (node_size < SHT_MIN_NODE || node_size > SHT_MAX_NODE || (node_size & (node_size - 1)))
		return rfail(r, err, FH_NODE_SIZE, "bad node size %u (a power of two from %u to %u)", node_size,
			     SHT_MIN_NODE, SHT_MAX_NODE);
	if (r->size < node_size)
		return rfail(r, err, r->size, "truncated in the file header (the file is %llu bytes, a block is %u)",
			     (unsigned long long)r->size, node_size);
	r->node_size = node_size;
	r->header = malloc(node_size);
	r->scratch = malloc(node_size);
	r->contblock = malloc(node_size);
	if (!r->header || !r->scratch || !r->contblock)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	e = read_at(r, r->header, node_size, 0, err);
	if (e)
		return e;
	b = r->header;
	len = get32(b + FH_LEN);
	if (len < SHT_HDR_SIZE || len > node_size - SHT_CLOSE_SIZE)
		return rfail(r, err, FH_LEN, "bad header length %u", len);
	crc = (uint32_t)crc32(0, b + 16, node_size - SHT_CLOSE_SIZE - 16); /* metadata and padding */
	if (crc != get32(b + FH_CRC))
		return rfail(r, err, FH_CRC, "header checksum mismatch (stored 0x%08x, computed 0x%08x)",
			     get32(b + FH_CRC), crc);
	maxc = get32(b + FH_MAX_CHILDREN);
	if (maxc < 2 || maxc > 1024 || (size_t)maxc * SHT_TABLE_ENTRY > node_size / 4)
		return rfail(r, err, FH_MAX_CHILDREN, "bad max_children %u", maxc);
	r->max_children = maxc;
	nmeta = get32(b + FH_NMETA);
	if (nmeta > (len - SHT_HDR_SIZE) / 4)
		return rfail(r, err, FH_NMETA, "bad metadata count %u", nmeta);
	for (i = 0, off = SHT_HDR_SIZE; i < 2 * nmeta; i++) { /* sizes first */
		if (off + 2 > len)
			return rfail(r, err, off, "metadata overruns the header");
		total += get16(b + off) + 1;
		off += 2 + get16(b + off);
		if (off > len)
			return rfail(r, err, off, "metadata overruns the header");
	}
	r->meta = calloc(nmeta ? nmeta : 1, sizeof(*r->meta));
	r->meta_buf = malloc(total ? total : 1);
	if (!r->meta || !r->meta_buf)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	r->nmeta = nmeta;
	for (i = 0, off = SHT_HDR_SIZE, total = 0; i < 2 * nmeta; i++) {
		size_t l = get16(b + off);
		char *s = r->meta_buf + total;

		memcpy(s, b + off + 2, l);
		s[l] = 0;
		if (i % 2)
			r->meta[i / 2].value = s;
		else
			r->meta[i / 2].key = s;
		total += l + 1;
		off += 2 + l;
	}
	r->info.version = SHT_FORMAT_VERSION;
	r->info.node_size = node_size;
	r->info.max_children = maxc;
	r->info.tree_start = get64(b + FH_TREE_START);
	r->info.mono_start_ns = get64(b + FH_MONO);
	r->info.real_start_ns = get64(b + FH_REAL);
	r->info.file_size = r->size;
	cr = b + node_size - SHT_CLOSE_SIZE;
	if (get32(cr + CR_MAGIC) == SHT_CLOSE_MAGIC &&
	    get32(cr + CR_CRC) == (uint32_t)crc32(0, cr + 8, SHT_CLOSE_SIZE - 8))
		*closed = true;
	return 0;
}

/* ---- nodes ---- */

int node_parse(const struct sht_reader *r, uint32_t k, const uint8_t *b, struct nview *v,
	       struct vcpustat_error *err)
{
	uint64_t off = node_off(r, k), total;

	v->b = b;
	v->index = k;
	v->kind = b[NH_KIND];
	v->height = b[NH_HEIGHT];
	v->flags = get16(b + NH_FLAGS);
	v->seq = get32(b + NH_SEQ);
	v->parent = get32(b + NH_PARENT);
	v->start = get64(b + NH_START);
	v->end = get64(b + NH_END);
	v->nintervals = get32(b + NH_NINTERVALS);
	v->ntable = get16(b + NH_NTABLE);
	v->nblocks = get16(b + NH_NBLOCKS);
	v->defs_len = get32(b + NH_DEFS_LEN);
	v->jrnl_len = get32(b + NH_JOURNAL_LEN);
	v->ivl_len = get32(b + NH_INTERVALS_LEN);
	v->skip_len = get32(b + NH_SKIP_LEN);
	if (v->kind != SHT_NODE_CORE && v->nblocks != 1)
		return rfail(r, err, off + NH_NBLOCKS, "node %u: %u blocks (a %s has one)", k, v->nblocks,
			     v->kind == SHT_NODE_LEAF ? "leaf" : "footer or bad node");
	if (v->kind == SHT_NODE_CORE && (v->nblocks == 0 || (uint64_t)k + v->nblocks > SHT_NONE32 - 1))
		return rfail(r, err, off + NH_NBLOCKS, "node %u: bad block count %u", k, v->nblocks);
	if (v->kind == SHT_NODE_FOOTER) {
		if (v->defs_len > r->node_size - SHT_NODE_HDR)
			return rfail(r, err, off + NH_DEFS_LEN, "node %u: bad footer length %u", k, v->defs_len);
		v->defs = b + SHT_NODE_HDR;
		return 0;
	}
	if (v->kind != SHT_NODE_LEAF && v->kind != SHT_NODE_CORE)
		return rfail(r, err, off + NH_KIND, "node %u: bad node kind %u", k, v->kind);
	if ((v->kind == SHT_NODE_LEAF) != (v->height == 0) || v->height > SHT_MAX_HEIGHT)
		return rfail(r, err, off + NH_HEIGHT, "node %u: bad height %u for a %s", k, v->height,
			     v->kind == SHT_NODE_LEAF ? "leaf" : "core");
	if (v->start > v->end)
		return rfail(r, err, off + NH_START, "node %u: starts after it ends (%llu > %llu)", k,
			     (unsigned long long)v->start, (unsigned long long)v->end);
	if (v->start < r->info.tree_start)
		return rfail(r, err, off + NH_START, "node %u: starts before the tree", k);
	if (v->kind == SHT_NODE_CORE && (v->ntable == 0 || v->ntable > r->max_children))
		return rfail(r, err, off + NH_NTABLE, "node %u: %u children (1 to %u)", k, v->ntable,
			     r->max_children);
	if (v->kind == SHT_NODE_LEAF && v->ntable > SHT_MAX_HEIGHT)
		return rfail(r, err, off + NH_NTABLE, "node %u: branch of %u levels", k, v->ntable);
	if (v->kind == SHT_NODE_CORE && (v->defs_len || v->jrnl_len))
		return rfail(r, err, off + NH_DEFS_LEN, "node %u: a core with definitions or a journal", k);
	total = (uint64_t)v->ntable * SHT_TABLE_ENTRY + v->defs_len + v->jrnl_len + v->ivl_len + v->skip_len;
	if (total > (uint64_t)v->nblocks * (r->node_size - SHT_NODE_HDR) ||
	    (v->nblocks > 1 && total <= (uint64_t)(v->nblocks - 1) * (r->node_size - SHT_NODE_HDR)))
		return rfail(r, err, off + NH_DEFS_LEN, "node %u: sections of %llu bytes do not match its %u blocks", k,
			     (unsigned long long)total, v->nblocks);
	if (v->nintervals > v->ivl_len / 4)
		return rfail(r, err, off + NH_NINTERVALS, "node %u: %u intervals in %u bytes", k, v->nintervals,
			     v->ivl_len);
	v->table = b + SHT_NODE_HDR;
	v->defs = v->table + (size_t)v->ntable * SHT_TABLE_ENTRY;
	v->jrnl = v->defs + v->defs_len;
	v->ivl = v->jrnl + v->jrnl_len;
	v->skip = v->ivl + v->ivl_len;
	return 0;
}

int node_verify(struct sht_reader *r, uint32_t k, const uint8_t *b, struct nview *v, struct vcpustat_error *err)
{
	uint64_t off = node_off(r, k);
	uint32_t crc;

	if (get32(b + NH_MAGIC) != SHT_NODE_MAGIC)
		return rfail(r, err, off, "node %u: bad node magic (not a node, or overwritten)", k);
	crc = (uint32_t)crc32(0, b + 8, r->node_size - 8);
	if (crc != get32(b + NH_CRC))
		return rfail(r, err, off, "node %u: checksum mismatch (stored 0x%08x, computed 0x%08x)", k,
			     get32(b + NH_CRC), crc);
	if (get32(b + NH_INDEX) != k)
		return rfail(r, err, off + NH_INDEX, "node %u: the node says it is node %u (misplaced block)", k,
			     get32(b + NH_INDEX));
	if (b[NH_KIND] == SHT_NODE_CONT) { /* a continuation block: its head is checked with it */
		memset(v, 0, sizeof(*v));
		v->b = b;
		v->index = k;
		v->kind = SHT_NODE_CONT;
		v->seq = get32(b + NH_SEQ);
		v->parent = get32(b + NH_PARENT);
		return 0;
	}
	return node_parse(r, k, b, v, err);
}

int rbuf_reserve(struct rbuf *b, size_t n)
{
	uint8_t *p;

	if (n <= b->cap)
		return 0;
	p = realloc(b->p, n);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = n;
	return 0;
}

/* Read the continuation blocks of the head in buf (k, nblocks) after it: buf gets the whole node. */
static int read_continuations(struct sht_reader *r, uint32_t k, uint32_t nblocks, struct rbuf *buf,
			      struct vcpustat_error *err)
{
	size_t payload = r->node_size - SHT_NODE_HDR;
	uint32_t i, seq = get32(buf->p + NH_SEQ);
	struct nview cv;

	if ((uint64_t)k + nblocks > r->nfile)
		return rfail(r, err, node_off(r, k) + NH_NBLOCKS, "node %u: its %u blocks go past the end of the tree",
			     k, nblocks);
	for (i = 1; i < nblocks; i++) {
		const uint8_t *c = reader_block(r, (uint64_t)k + i + 1, r->contblock, err);

		if (!c)
			return err ? err->code : -EIO;
		if (!r->verified[k + i]) {
			int e = node_verify(r, k + i, c, &cv, err);

			if (e)
				return e;
			if (cv.kind != SHT_NODE_CONT || cv.seq != seq || cv.parent != k)
				return rfail(r, err, node_off(r, k + i), "node %u: expected block %u of node %u", k + i,
					     i, k);
			r->verified[k + i] = 1;
		}
		memcpy(buf->p + SHT_NODE_HDR + (size_t)i * payload, c + SHT_NODE_HDR, payload);
	}
	return 0;
}

int reader_node(struct sht_reader *r, uint32_t k, struct rbuf *buf, struct nview *v, struct vcpustat_error *err)
{
	const uint8_t *b;
	uint32_t nblocks, i;
	int e;

	if (k >= r->nfile) {
		for (i = 0; i < r->nvirt; i++)
			if (r->virt_index[i] == k)
				return node_parse(r, k, r->virt[i], v, err);
		return rfail(r, err, r->size, "no node %u (the file has %u blocks)", k, r->nfile);
	}
	if (rbuf_reserve(buf, r->node_size))
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	b = reader_block(r, (uint64_t)k + 1, buf->p, err);
	if (!b)
		return err ? err->code : -EIO;
	if (b != buf->p) /* an image in memory: copy, the continuations may follow */
		memcpy(buf->p, b, r->node_size);
	if (!r->verified[k]) {
		e = node_verify(r, k, buf->p, v, err);
		if (e)
			return e;
		if (v->kind != SHT_NODE_LEAF && v->kind != SHT_NODE_CORE)
			return rfail(r, err, node_off(r, k), "node %u: a %s block inside the tree", k,
				     v->kind == SHT_NODE_FOOTER ? "footer" : "continuation");
		r->verified[k] = 1;
	}
	nblocks = get16(buf->p + NH_NBLOCKS);
	if (buf->p[NH_KIND] == SHT_NODE_CORE && nblocks > 1) {
		if ((uint64_t)k + nblocks > r->nfile) /* before allocating for them */
			return rfail(r, err, node_off(r, k) + NH_NBLOCKS,
				     "node %u: its %u blocks go past the end of the tree", k, nblocks);
		if (rbuf_reserve(buf, SHT_NODE_HDR + (size_t)nblocks * (r->node_size - SHT_NODE_HDR)))
			return verror(err, -ENOMEM, "%s: out of memory", r->name);
		e = read_continuations(r, k, nblocks, buf, err);
		if (e)
			return e;
	}
	return node_parse(r, k, buf->p, v, err);
}

/* ---- definitions ---- */

static int add_attr(struct sht_reader *r, uint32_t parent, const char *name, size_t len)
{
	char *copy;

	if (r->nattrs == r->cap_attrs) {
		uint32_t cap = r->cap_attrs ? r->cap_attrs * 2 : 64;
		struct rattr *a = realloc(r->attrs, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		r->attrs = a;
		r->cap_attrs = cap;
	}
	copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	if (strtab_add(&r->attr_index, parent, copy, len, r->nattrs)) {
		free(copy);
		return -ENOMEM;
	}
	r->attrs[r->nattrs] = (struct rattr){ .name = copy, .parent = parent, .first_child = SHT_NO_ATTR,
					      .last_child = SHT_NO_ATTR, .next_sibling = SHT_NO_ATTR };
	r->nattrs++;
	return 0;
}

int reader_defs(struct sht_reader *r, const uint8_t *p, size_t len, uint64_t off, struct vcpustat_error *err)
{
	const uint8_t *start = p, *end = p + len;
	uint64_t id, parent, l;

	while (p < end) {
		uint64_t roff = off + (uint64_t)(p - start);
		uint8_t kind = *p++;

		if (kind == SHT_DEF_ATTR) {
			if (varint_get(&p, end, &id) || varint_get(&p, end, &parent) || p >= end)
				return rfail(r, err, roff, "truncated attribute definition");
			l = *p++;
			if (id != r->nattrs || parent > id)
				return rfail(r, err, roff, "attribute definition #%llu out of order (expected #%u)",
					     (unsigned long long)id, r->nattrs);
			if (l == 0 || l > (uint64_t)(end - p) || memchr(p, '/', l) || memchr(p, 0, l))
				return rfail(r, err, roff, "bad name in attribute definition #%llu",
					     (unsigned long long)id);
			if (strtab_find(&r->attr_index, parent ? (uint32_t)parent - 1 : SHT_NO_ATTR, (const char *)p,
					l) != SHT_NONE32)
				return rfail(r, err, roff, "attribute #%llu defined twice", (unsigned long long)id);
			if (add_attr(r, parent ? (uint32_t)parent - 1 : SHT_NO_ATTR, (const char *)p, l))
				return verror(err, -ENOMEM, "%s: out of memory", r->name);
			p += l;
		} else if (kind == SHT_DEF_STRING) {
			char *s;

			if (varint_get(&p, end, &id) || varint_get(&p, end, &l))
				return rfail(r, err, roff, "truncated string definition");
			if (id != r->nstrings)
				return rfail(r, err, roff, "string definition #%llu out of order (expected #%u)",
					     (unsigned long long)id, r->nstrings);
			if (l > SHT_MAX_STRING || l > (uint64_t)(end - p) || memchr(p, 0, l))
				return rfail(r, err, roff, "bad string definition #%llu", (unsigned long long)id);
			if (r->nstrings == r->cap_strings) {
				uint32_t cap = r->cap_strings ? r->cap_strings * 2 : 64;
				char **a = realloc(r->strings, cap * sizeof(*a));

				if (!a)
					return verror(err, -ENOMEM, "%s: out of memory", r->name);
				r->strings = a;
				r->cap_strings = cap;
			}
			s = strndup((const char *)p, l);
			if (!s)
				return verror(err, -ENOMEM, "%s: out of memory", r->name);
			r->strings[r->nstrings++] = s;
			p += l;
		} else {
			return rfail(r, err, roff, "bad definition record kind 0x%02x", kind);
		}
	}
	return 0;
}

/* ---- footer ---- */

int reader_footer(struct sht_reader *r, const uint8_t *p, size_t len, uint32_t footer_index, uint64_t off,
		  struct vcpustat_error *err)
{
	uint32_t root, nodes, flags, nattrs, nstrings;
	uint64_t start, end, horizon;
	int e;

	if (len < SHT_FOOTER_FIXED_LEN)
		return rfail(r, err, off, "footer of %zu bytes is too short", len);
	root = get32(p);
	nodes = get32(p + 4);
	start = get64(p + 8);
	end = get64(p + 16);
	horizon = get64(p + 24);
	flags = get32(p + 32);
	nattrs = get32(p + 36);
	nstrings = get32(p + 40);
	if (nodes != footer_index || (nodes ? root >= nodes : root != SHT_NONE32))
		return rfail(r, err, off, "footer: root node %u of %u tree nodes (close record says %u)", root, nodes,
			     footer_index);
	if (start != r->info.tree_start || start > end || horizon > end || (flags & ~SHT_FOOTER_RECOVERED))
		return rfail(r, err, off, "footer: bad time range or flags");
	e = reader_defs(r, p + SHT_FOOTER_FIXED_LEN, len - SHT_FOOTER_FIXED_LEN, off + SHT_FOOTER_FIXED_LEN, err);
	if (e)
		return e;
	if (nattrs != r->nattrs || nstrings != r->nstrings)
		return rfail(r, err, off, "footer: %u attributes and %u strings announced, %u and %u defined", nattrs,
			     nstrings, r->nattrs, r->nstrings);
	r->root = root;
	r->filter = flags & SHT_FOOTER_RECOVERED;
	r->horizon = horizon;
	r->info.start = start;
	r->info.end = end;
	r->info.horizon = horizon;
	r->info.recovered = r->filter;
	r->info.nintervals = get64(p + 48);
	r->info.nclamped = get64(p + 56);
	return 0;
}

int reader_footer_encode(const struct sht_reader *r, struct sht_buf *b)
{
	uint32_t i;

	if (sht_footer_encode(b, r->root, r->nblocks, r->info.start, r->info.end, r->horizon,
			      r->filter ? SHT_FOOTER_RECOVERED : 0, r->nattrs, r->nstrings, r->info.nintervals,
			      r->info.nclamped))
		return -ENOMEM;
	for (i = 0; i < r->nattrs; i++)
		if (sht_def_attr(b, i, r->attrs[i].parent, r->attrs[i].name))
			return -ENOMEM;
	for (i = 0; i < r->nstrings; i++)
		if (sht_def_string(b, i, r->strings[i], strlen(r->strings[i])))
			return -ENOMEM;
	return 0;
}

/* ---- scanning an unfinished file ---- */

int reader_scan(struct sht_reader *r, uint64_t max, int64_t *bad, struct vcpustat_error *err)
{
	uint64_t full = r->size / r->node_size - 1, k, i;
	bool at_footer = false;
	struct nview v, cv;

	*bad = -1;
	if (full > max)
		full = max;
	if (full >= SHT_NONE32 - 1)
		full = SHT_NONE32 - 2;
	free(r->nodes);
	r->nodes = calloc(full ? full : 1, sizeof(*r->nodes));
	if (!r->nodes)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	for (k = 0; k < full; k += v.kind == SHT_NODE_CORE ? v.nblocks : 1) {
		const uint8_t *b = reader_block(r, k + 1, r->scratch, err);

		if (!b)
			return err ? err->code : -EIO;
		if (node_verify(r, (uint32_t)k, b, &v, err)) {
			*bad = (int64_t)k;
			break;
		}
		if (v.kind == SHT_NODE_FOOTER) {
			at_footer = true;
			break;
		}
		if (v.kind == SHT_NODE_CONT) {
			rfail(r, err, node_off(r, (uint32_t)k), "node %llu: a continuation block without its node",
			      (unsigned long long)k);
			*bad = (int64_t)k;
			break;
		}
		if (k + v.nblocks > full) /* its last blocks are not there: a cut write, or the limit */
			break;
		for (i = 1; i < (v.kind == SHT_NODE_CORE ? v.nblocks : 1u); i++) {
			const uint8_t *c = reader_block(r, k + i + 1, r->contblock, err);

			if (!c)
				return err ? err->code : -EIO;
			if (node_verify(r, (uint32_t)(k + i), c, &cv, err)) {
				*bad = (int64_t)(k + i);
				break;
			}
			if (cv.kind != SHT_NODE_CONT || cv.seq != v.seq || cv.parent != k) {
				rfail(r, err, node_off(r, (uint32_t)(k + i)), "node %llu: expected block %llu of node %llu",
				      (unsigned long long)(k + i), (unsigned long long)i, (unsigned long long)k);
				*bad = (int64_t)(k + i);
				break;
			}
			r->nodes[k + i] = (struct rnode){ .kind = SHT_NODE_CONT, .seq = cv.seq, .parent = (uint32_t)k };
		}
		if (*bad >= 0)
			break;
		r->nodes[k] = (struct rnode){ .kind = v.kind, .height = v.height, .ntable = (uint16_t)v.ntable,
					      .seq = v.seq, .parent = v.parent, .nintervals = v.nintervals,
					      .journal_len = v.jrnl_len, .start = v.start, .end = v.end };
		if (v.kind == SHT_NODE_LEAF &&
		    reader_defs(r, v.defs, v.defs_len, node_off(r, (uint32_t)k) + (uint64_t)(v.defs - b), err)) {
			if (err && err->code != -EBADMSG)
				return err->code;
			*bad = (int64_t)k;
			break;
		}
	}
	r->nnodes_scanned = k;
	r->scan_at_footer = at_footer;
	/* what a killed writer left of the node it was writing */
	r->info.tail_bytes = 0;
	if (*bad < 0 && !at_footer && max >= r->size / r->node_size - 1) /* a partial block, or a node cut short */
		r->info.tail_bytes = r->size - (k + 1) * r->node_size;
	else if (at_footer)
		r->info.tail_bytes = r->size % r->node_size;
	return 0;
}

/* ---- open ---- */

int reader_finish(struct sht_reader *r, struct vcpustat_error *err)
{
	uint32_t i;

	for (i = 0; i < r->nattrs; i++) {
		struct rattr *a = &r->attrs[i];
		const char *pp = a->parent == SHT_NO_ATTR ? "" : r->attrs[a->parent].path;

		if (asprintf(&a->path, "%s/%s", pp, a->name) < 0) {
			a->path = NULL;
			return verror(err, -ENOMEM, "%s: out of memory", r->name);
		}
		if (a->parent != SHT_NO_ATTR) {
			struct rattr *p = &r->attrs[a->parent];

			if (p->last_child == SHT_NO_ATTR)
				p->first_child = i;
			else
				r->attrs[p->last_child].next_sibling = i;
			p->last_child = i;
		}
	}
	if (!r->nblocks)
		r->nblocks = r->nfile;
	r->ndcache = r->nblocks;
	r->dcache = calloc(r->ndcache ? r->ndcache : 1, sizeof(*r->dcache));
	r->cached = calloc(r->ndcache ? r->ndcache : 1, sizeof(*r->cached));
	if (!r->dcache || !r->cached)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	r->dcache_budget = 64u << 20;
	r->info.nattrs = r->nattrs;
	r->info.nstrings = r->nstrings;
	r->info.nodes = r->nfile;
	r->info.last_node.index = -1;
	if (r->nfile) {
		uint32_t last = r->nfile - 1;
		struct nview v;
		int e;

		if (r->nodes && r->nodes[last].kind == SHT_NODE_CONT)
			last = r->nodes[last].parent;
		else if (!r->nodes && r->root < r->nfile)
			last = r->root; /* closed: the root is the last node */
		e = reader_node(r, last, &r->nodebuf, &v, err);
		if (e)
			return e;
		r->info.last_node.index = last;
		r->info.last_node.offset = node_off(r, last);
		r->info.last_node.start = v.start;
		r->info.last_node.end = v.end;
		r->info.last_node.kind = v.kind;
		r->info.last_node.height = v.height;
	}
	return 0;
}

int reader_open_closed(struct sht_reader *r, struct vcpustat_error *err)
{
	const uint8_t *cr = r->header + r->node_size - SHT_CLOSE_SIZE;
	uint64_t fsize = get64(cr + CR_FILE_SIZE), off;
	uint32_t findex = get32(cr + CR_FOOTER_INDEX), fnodes = get32(cr + CR_FOOTER_NODES), i;
	struct sht_buf fb = { 0 };
	int e = 0;

	if (r->size < fsize)
		return rfail(r, err, r->size, "truncated: the file was closed at %llu bytes but ends here",
			     (unsigned long long)fsize);
	if (r->size > fsize)
		return rfail(r, err, fsize, "%llu unexpected bytes after the end of the file (it was closed at %llu bytes)",
			     (unsigned long long)(r->size - fsize), (unsigned long long)fsize);
	if (!fnodes || ((uint64_t)findex + fnodes + 1) * r->node_size != fsize)
		return rfail(r, err, r->node_size - SHT_CLOSE_SIZE, "inconsistent close record");
	for (i = 0; i < fnodes && !e; i++) {
		struct nview v;
		const uint8_t *b = reader_block(r, (uint64_t)findex + i + 1, r->scratch, err);

		off = node_off(r, findex + i);
		if (!b) {
			e = err ? err->code : -EIO;
			break;
		}
		e = node_verify(r, findex + i, b, &v, err);
		if (e)
			break;
		if (v.kind != SHT_NODE_FOOTER || v.seq != i || !(v.flags & SHT_FOOTER_LAST) != (i + 1 < fnodes)) {
			e = rfail(r, err, off, "node %u: expected footer part %u of %u", findex + i, i, fnodes);
			break;
		}
		if (buf_put(&fb, v.defs, v.defs_len))
			e = verror(err, -ENOMEM, "%s: out of memory", r->name);
	}
	if (!e)
		e = reader_footer(r, fb.p, fb.len, findex, node_off(r, findex) + SHT_NODE_HDR, err);
	free(fb.p);
	if (e)
		return e;
	r->nfile = findex;
	r->verified = calloc(findex ? findex : 1, 1);
	if (!r->verified)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	r->info.closed = true;
	return 0;
}

static int open_unfinished(struct sht_reader *r, struct vcpustat_error *err)
{
	int64_t bad;
	int e = reader_scan(r, UINT64_MAX, &bad, err);

	if (e)
		return e;
	if (bad >= 0) {
		if (err) {
			size_t l = strlen(err->msg);

			snprintf(err->msg + l, sizeof(err->msg) - l, " (`vcpustat check --repair` keeps what is before it)");
		}
		return -EBADMSG;
	}
	return reader_rebuild(r, (uint32_t)r->nnodes_scanned, err);
}

static int open_common(struct sht_reader *r, struct vcpustat_error *err)
{
	bool closed;
	int e = reader_header(r, &closed, err);

	if (e)
		return e;
	e = closed ? reader_open_closed(r, err) : open_unfinished(r, err);
	if (e)
		return e;
	return reader_finish(r, err);
}

int sht_open(struct sht_reader **rp, const char *path, struct vcpustat_error *err)
{
	struct sht_reader *r;
	struct stat st;
	int e;

	*rp = NULL;
	r = reader_alloc(path);
	if (!r)
		return verror(err, -ENOMEM, "%s: out of memory", path);
	r->fd = open_input(path, true, err); /* an SHT file is read at any offset: no FIFO, no device */
	if (r->fd < 0) {
		e = r->fd;
		reader_free(r);
		return e;
	}
	if (fstat(r->fd, &st)) {
		e = -errno;
		reader_free(r);
		return verror(err, e, "%s: cannot open: %s", path, strerror(-e));
	}
	r->size = (uint64_t)st.st_size;
	e = open_common(r, err);
	if (e) {
		reader_free(r);
		return e;
	}
	*rp = r;
	return 0;
}

int sht_open_mem(struct sht_reader **rp, const char *name, const void *data, size_t len,
		 struct vcpustat_error *err)
{
	static const uint8_t empty[1];
	struct sht_reader *r;
	int e;

	*rp = NULL;
	r = reader_alloc(name);
	if (!r)
		return verror(err, -ENOMEM, "%s: out of memory", name);
	r->mem = data ? data : empty;
	r->size = len;
	e = open_common(r, err);
	if (e) {
		reader_free(r);
		return e;
	}
	*rp = r;
	return 0;
}

/* ---- info, metadata, attributes ---- */

const struct sht_info *sht_get_info(const struct sht_reader *r)
{
	return &r->info;
}

size_t sht_nmeta(const struct sht_reader *r)
{
	return r->nmeta;
}

const struct sht_meta *sht_meta_at(const struct sht_reader *r, size_t i)
{
	return i < r->nmeta ? &r->meta[i] : NULL;
}

const char *sht_meta_get(const struct sht_reader *r, const char *key)
{
	size_t i;

	for (i = 0; i < r->nmeta; i++)
		if (!strcmp(r->meta[i].key, key))
			return r->meta[i].value;
	return NULL;
}

uint32_t sht_nattrs(const struct sht_reader *r)
{
	return r->nattrs;
}

int sht_attr_lookup(const struct sht_reader *r, const char *path, uint32_t *id)
{
	uint32_t cur = SHT_NO_ATTR;
	const char *p = path;

	if (path[0] != '/' || !path[1])
		return -EINVAL;
	while (*p == '/') {
		const char *slash = strchr(++p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		cur = strtab_find(&r->attr_index, cur, p, len);
		if (cur == SHT_NONE32)
			return -ENOENT;
		if (!slash)
			break;
		p = slash;
	}
	*id = cur;
	return 0;
}

const char *sht_attr_name(const struct sht_reader *r, uint32_t id)
{
	return id < r->nattrs ? r->attrs[id].name : NULL;
}

const char *sht_attr_path(const struct sht_reader *r, uint32_t id)
{
	return id < r->nattrs ? r->attrs[id].path : NULL;
}

uint32_t sht_attr_parent(const struct sht_reader *r, uint32_t id)
{
	return id < r->nattrs ? r->attrs[id].parent : SHT_NO_ATTR;
}

uint32_t sht_attr_first_child(const struct sht_reader *r, uint32_t id)
{
	uint32_t i;

	if (id == SHT_NO_ATTR) {
		for (i = 0; i < r->nattrs; i++)
			if (r->attrs[i].parent == SHT_NO_ATTR)
				return i;
		return SHT_NO_ATTR;
	}
	return id < r->nattrs ? r->attrs[id].first_child : SHT_NO_ATTR;
}

uint32_t sht_attr_next_sibling(const struct sht_reader *r, uint32_t id)
{
	uint32_t i;

	if (id >= r->nattrs)
		return SHT_NO_ATTR;
	if (r->attrs[id].parent != SHT_NO_ATTR)
		return r->attrs[id].next_sibling;
	for (i = id + 1; i < r->nattrs; i++) /* top level: few, not linked */
		if (r->attrs[i].parent == SHT_NO_ATTR)
			return i;
	return SHT_NO_ATTR;
}

uint32_t sht_attr_child(const struct sht_reader *r, uint32_t parent, const char *name)
{
	for (uint32_t c = sht_attr_first_child(r, parent); c != SHT_NO_ATTR; c = sht_attr_next_sibling(r, c))
		if (!strcmp(sht_attr_name(r, c), name))
			return c;
	return SHT_NO_ATTR;
}
