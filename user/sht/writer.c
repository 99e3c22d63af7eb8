// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SHT writer: one streaming pass, intervals stored when they end, in the
 * lowest node of the current branch whose range contains their start
 * (docs/sht-format.md section 4). Every node is appended exactly once,
 * sealed with a CRC; intervals stored in a core are also copied into the
 * journal of the current leaf, so that a killed writer loses nothing that
 * ended before its last sealed leaf.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "sht.h"
#include "sht_format.h"
#include "sht_internal.h"

/* One open node of the current branch. */
struct wnode {
	uint8_t kind, height;
	uint32_t seq, parent_seq;
	uint64_t start;
	size_t reserved;     /* table bytes reserved */
	uint32_t nkids;	     /* core: children, including the open one */
	uint32_t ntable;     /* core: sealed children in table */
	uint8_t *table;
	uint32_t blocks;     /* blocks this node may fill (cores grow, see insert) */
	size_t cap;	     /* bytes of the ivl and skip buffers */
	uint8_t *ivl;	     /* interval section */
	size_t ivl_len;
	uint32_t count;
	uint64_t last_end;
	uint8_t *skip;
	size_t skip_len;
	uint8_t *defs;	     /* leaf */
	size_t defs_len;
	uint8_t *jrnl;	     /* leaf */
	size_t jrnl_len;
	uint64_t jrnl_last_end;
};

struct wattr {
	char *name;
	uint32_t parent;
	uint8_t type; /* enum sht_type */
	int64_t i;    /* int value, or string id */
	uint64_t since;
};

/* sht_writer_opts.node_size when it is 0 */
#define SHT_DEFAULT_NODE_SIZE 16384

struct sht_writer {
	int fd; /* of.fd */
	struct outfile of;
	char *path;
	uint32_t node_size, max_children;
	uint64_t tree_start;
	bool no_sync;
	int (*no_space)(void *ctx, const char *path);
	void *ctx;
	uint64_t last_t;
	uint64_t clamped, intervals, journaled, big_cores;
	uint64_t nnodes; /* blocks written after the header */
	uint32_t last_sealed; /* index of the last node sealed (the root, after close) */
	uint64_t horizon;
	uint32_t next_seq;
	struct wnode *branch[SHT_MAX_HEIGHT + 2];
	int top;
	uint8_t *block; /* one block (header, footer) */
	uint8_t *node;	/* a node being sealed: header and content */
	uint8_t *out;	/* its blocks */
	size_t node_cap;
	struct wattr *attrs;
	uint32_t nattrs, cap_attrs;
	struct sht_strtab attr_index; /* (parent, name) -> attr id */
	struct sht_strtab strings;    /* string -> id */
	uint32_t open;		      /* attributes holding a value: the intervals a close ends */
	uint64_t open_bytes;	      /* the most those intervals take encoded (rec_bound()) */
	uint64_t defs_bytes;	      /* definitions so far: the footer repeats them */
	struct vcpustat_error err;
	int failed; /* sticky I/O error */
};

static int fail(struct sht_writer *w, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct sht_writer *w, int code, const char *fmt, ...)
{
	va_list ap;
	char msg[400];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return verror(&w->err, code, "%s: %s", w->path, msg);
}

static int io_fail(struct sht_writer *w, int code, uint64_t off, const char *what)
{
	w->failed = code;
	return fail(w, code, "offset %llu: %s failed: %s", (unsigned long long)off, what, strerror(-code));
}

/* A full disk: the same bytes again as long as no_space() makes room. */
static int write_at(struct sht_writer *w, const void *buf, size_t len, uint64_t off)
{
	for (;;) {
		__u64 at = off;
		int e = pwrite_all(w->fd, buf, len, &at);

		if (!e)
			return 0;
		if (e != -ENOSPC || !w->no_space || w->no_space(w->ctx, w->path))
			return io_fail(w, e, at, "write");
	}
}

/* ---- nodes ---- */

static struct wnode *wnode_new(struct sht_writer *w)
{
	struct wnode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->cap = w->node_size;
	n->table = malloc(w->node_size);
	n->ivl = malloc(w->node_size);
	n->skip = malloc(w->node_size);
	n->defs = malloc(w->node_size);
	n->jrnl = malloc(w->node_size);
	if (!n->table || !n->ivl || !n->skip || !n->defs || !n->jrnl) {
		free(n->table), free(n->ivl), free(n->skip), free(n->defs), free(n->jrnl);
		free(n);
		return NULL;
	}
	return n;
}

static void wnode_free(struct wnode *n)
{
	if (!n)
		return;
	free(n->table), free(n->ivl), free(n->skip), free(n->defs), free(n->jrnl);
	free(n);
}

/* Make n a fresh empty node of the given height, child of parent (NULL for a root). */
static void wnode_reset(struct sht_writer *w, struct wnode *n, int height, struct wnode *parent, uint64_t start)
{
	n->kind = height ? SHT_NODE_CORE : SHT_NODE_LEAF;
	n->height = (uint8_t)height;
	n->seq = w->next_seq++;
	n->parent_seq = parent ? parent->seq : SHT_NONE32;
	n->start = start;
	/* a leaf's branch table may gain one entry (a new root) before it is sealed */
	n->reserved = height ? (size_t)w->max_children * SHT_TABLE_ENTRY : (size_t)(w->top + 1) * SHT_TABLE_ENTRY;
	n->nkids = 0;
	n->ntable = 0;
	n->blocks = 1;
	n->ivl_len = n->skip_len = n->defs_len = n->jrnl_len = 0;
	n->count = 0;
	n->last_end = n->jrnl_last_end = start;
	if (parent)
		parent->nkids++;
}

static size_t wnode_used(const struct wnode *n)
{
	return SHT_NODE_HDR + n->reserved + n->defs_len + n->jrnl_len + n->ivl_len + n->skip_len;
}

/* Bytes n may use: its blocks, each with a header of its own. */
static size_t wnode_room(const struct sht_writer *w, const struct wnode *n)
{
	return SHT_NODE_HDR + (size_t)n->blocks * (w->node_size - SHT_NODE_HDR);
}

/* Let core n fill one more block (instead of splitting it). */
static int wnode_grow(struct sht_writer *w, struct wnode *n)
{
	size_t cap = (size_t)(n->blocks + 1) * w->node_size;

	if (cap > n->cap) {
		uint8_t *ivl = realloc(n->ivl, cap), *skip;

		if (!ivl)
			return fail(w, -ENOMEM, "out of memory");
		n->ivl = ivl;
		skip = realloc(n->skip, cap);
		if (!skip)
			return fail(w, -ENOMEM, "out of memory");
		n->skip = skip;
		n->cap = cap;
	}
	n->blocks++;
	return 0;
}

static bool wnode_empty(const struct wnode *n)
{
	return !n->count && !n->defs_len && !n->jrnl_len;
}

/* Bytes the next record adds to n's skip section (a new block starts every SHT_SKIP_EVERY records). */
static size_t skip_need(const struct wnode *n)
{
	if (!n->count || n->count % SHT_SKIP_EVERY)
		return 0;
	return varint_len(n->last_end - n->start) + varint_len(n->ivl_len);
}

/* Seal n at time end: append its blocks and register it in its parent (branch[height + 1]). */
static int seal(struct sht_writer *w, struct wnode *n, uint64_t end)
{
	uint64_t index = w->nnodes;
	uint32_t ntable, i, nblocks;
	size_t content;
	uint8_t *b, *p;
	int err;

	ntable = n->kind == SHT_NODE_CORE ? n->ntable : (uint32_t)w->top;
	content = (size_t)ntable * SHT_TABLE_ENTRY + n->defs_len + n->jrnl_len + n->ivl_len + n->skip_len;
	nblocks = sht_node_nblocks(content, w->node_size);
	if (index + nblocks >= SHT_NONE32 - 1)
		return fail(w, -EFBIG, "too many nodes");
	if (SHT_NODE_HDR + content > w->node_cap || (size_t)nblocks * w->node_size > w->node_cap) {
		size_t cap = (size_t)(nblocks + 1) * w->node_size;
		uint8_t *a = realloc(w->node, cap), *o;

		if (!a)
			return fail(w, -ENOMEM, "out of memory");
		w->node = a;
		o = realloc(w->out, cap);
		if (!o)
			return fail(w, -ENOMEM, "out of memory");
		w->out = o;
		w->node_cap = cap;
	}
	b = w->node;
	memset(b, 0, SHT_NODE_HDR);
	put32(b + NH_MAGIC, SHT_NODE_MAGIC);
	b[NH_KIND] = n->kind;
	b[NH_HEIGHT] = n->height;
	put32(b + NH_INDEX, (uint32_t)index);
	put32(b + NH_SEQ, n->seq);
	put32(b + NH_PARENT, n->parent_seq);
	put64(b + NH_START, n->start);
	put64(b + NH_END, end);
	put32(b + NH_NINTERVALS, n->count);
	put16(b + NH_NTABLE, (uint16_t)ntable);
	put32(b + NH_DEFS_LEN, (uint32_t)n->defs_len);
	put32(b + NH_JOURNAL_LEN, (uint32_t)n->jrnl_len);
	put32(b + NH_INTERVALS_LEN, (uint32_t)n->ivl_len);
	put32(b + NH_SKIP_LEN, (uint32_t)n->skip_len);
	p = b + SHT_NODE_HDR;
	if (n->kind == SHT_NODE_CORE) {
		memcpy(p, n->table, (size_t)ntable * SHT_TABLE_ENTRY);
	} else {
		for (i = 0; i < ntable; i++) {
			put32(p + i * SHT_TABLE_ENTRY, w->branch[i + 1]->seq);
			put64(p + i * SHT_TABLE_ENTRY + 4, w->branch[i + 1]->start);
		}
	}
	p += (size_t)ntable * SHT_TABLE_ENTRY;
	memcpy(p, n->defs, n->defs_len);
	p += n->defs_len;
	memcpy(p, n->jrnl, n->jrnl_len);
	p += n->jrnl_len;
	memcpy(p, n->ivl, n->ivl_len);
	p += n->ivl_len;
	memcpy(p, n->skip, n->skip_len);
	sht_node_blocks(b, content, w->node_size, (uint32_t)index, w->out);
	err = write_at(w, w->out, (size_t)nblocks * w->node_size, (index + 1) * w->node_size);
	if (err)
		return err;
	w->nnodes += nblocks;
	w->last_sealed = (uint32_t)index;
	w->big_cores += nblocks > 1;
	if (n->kind == SHT_NODE_LEAF)
		w->horizon = end;
	if (n->height < w->top) {
		struct wnode *parent = w->branch[n->height + 1];

		put32(parent->table + parent->ntable * SHT_TABLE_ENTRY, (uint32_t)index);
		put64(parent->table + parent->ntable * SHT_TABLE_ENTRY + 4, n->start);
		parent->ntable++;
	}
	return 0;
}

static int new_root(struct sht_writer *w)
{
	struct wnode *root;
	uint64_t now = w->last_t;
	int i, err;

	if (w->top >= SHT_MAX_HEIGHT)
		return fail(w, -EFBIG, "the tree would be more than %d levels high", SHT_MAX_HEIGHT);
	root = wnode_new(w);
	if (!root)
		return fail(w, -ENOMEM, "out of memory");
	wnode_reset(w, root, w->top + 1, NULL, w->tree_start);
	root->nkids = 1; /* the old root */
	w->branch[w->top]->parent_seq = root->seq;
	w->branch[w->top + 1] = root;
	w->top++;
	for (i = 0; i < w->top; i++) {
		err = seal(w, w->branch[i], now);
		if (err)
			return err;
	}
	for (i = w->top - 1; i >= 0; i--)
		wnode_reset(w, w->branch[i], i, w->branch[i + 1], now);
	return 0;
}

/* Close the node at height h and everything below it; new empty nodes start now. */
static int split(struct sht_writer *w, int h)
{
	uint64_t now = w->last_t;
	int i, err;

	if (h >= w->top)
		return new_root(w);
	if (w->branch[h + 1]->nkids >= w->max_children)
		return split(w, h + 1);
	for (i = 0; i <= h; i++) {
		err = seal(w, w->branch[i], now);
		if (err)
			return err;
	}
	for (i = h; i >= 0; i--)
		wnode_reset(w, w->branch[i], i, w->branch[i + 1], now);
	return 0;
}

/* Store a complete interval (its end is the newest time seen). */
static int insert(struct sht_writer *w, const struct sht_rec *r)
{
	uint8_t rec[SHT_MAX_REC];
	struct wnode *leaf, *n;
	size_t len, jlen, need;
	int h, err;

	for (;;) {
		h = 0;
		while (w->branch[h]->start > r->start)
			h++;
		n = w->branch[h];
		len = rec_put(rec, n->last_end, r);
		need = len + skip_need(n);
		if (wnode_used(n) + need > wnode_room(w, n)) {
			/*
			 * A core with few children grows rather than splits: splitting it
			 * would push every open interval up again, and with many busy
			 * attributes the splits would cascade to new roots without end.
			 * This keeps the fan-out >= SHT_MIN_FANOUT (height <= log4 leaves).
			 */
			if (h > 0 && n->nkids < SHT_MIN_FANOUT && n->blocks < SHT_MAX_BLOCKS)
				err = wnode_grow(w, n);
			else
				err = split(w, h);
			if (err)
				return err;
			continue;
		}
		if (h == 0)
			break;
		leaf = w->branch[0];
		jlen = 1 + rec_put(leaf->jrnl + leaf->jrnl_len + 1, leaf->jrnl_last_end, r);
		if (wnode_used(leaf) + jlen > wnode_room(w, leaf)) {
			err = split(w, 0);
			if (err)
				return err;
			continue;
		}
		leaf->jrnl[leaf->jrnl_len] = (uint8_t)h;
		leaf->jrnl_len += jlen;
		leaf->jrnl_last_end = r->end;
		w->journaled++;
		break;
	}
	if (n->count && !(n->count % SHT_SKIP_EVERY)) {
		n->skip_len += varint_put(n->skip + n->skip_len, n->last_end - n->start);
		n->skip_len += varint_put(n->skip + n->skip_len, n->ivl_len);
	}
	memcpy(n->ivl + n->ivl_len, rec, len);
	n->ivl_len += len;
	n->last_end = r->end;
	n->count++;
	w->intervals++;
	return 0;
}

/* The most an interval of attr's value takes encoded, whatever its times. */
static size_t rec_bound(uint32_t attr, uint8_t type, int64_t i)
{
	struct sht_rec r = { .attr = attr, .type = type, .start = 0, .end = UINT64_MAX, .i = i };
	uint8_t rec[SHT_MAX_REC];

	return rec_put(rec, 0, &r);
}

/* Append a definition record to the current leaf. */
static int add_def(struct sht_writer *w, const uint8_t *def, size_t len)
{
	int err;

	if (wnode_used(w->branch[0]) + len > wnode_room(w, w->branch[0])) {
		err = split(w, 0);
		if (err)
			return err;
	}
	memcpy(w->branch[0]->defs + w->branch[0]->defs_len, def, len);
	w->branch[0]->defs_len += len;
	w->defs_bytes += len;
	return 0;
}

/* ---- create ---- */

static int write_header(struct sht_writer *w, const struct sht_writer_opts *o)
{
	uint8_t *b = w->block;
	size_t off = SHT_HDR_SIZE, i;

	memset(b, 0, w->node_size);
	memcpy(b + FH_MAGIC, SHT_MAGIC, 8);
	put32(b + FH_VERSION, SHT_FORMAT_VERSION);
	put32(b + FH_NODE_SIZE, w->node_size);
	put32(b + FH_MAX_CHILDREN, w->max_children);
	put64(b + FH_TREE_START, w->tree_start);
	put64(b + FH_MONO, o->mono_start_ns);
	put64(b + FH_REAL, o->real_start_ns);
	put32(b + FH_NMETA, (uint32_t)o->nmeta);
	for (i = 0; i < o->nmeta; i++) {
		const char *k = o->meta[i].key ? o->meta[i].key : "", *v = o->meta[i].value ? o->meta[i].value : "";
		size_t kl = strlen(k), vl = strlen(v);

		if (kl > 0xffff || vl > 0xffff || off + 4 + kl + vl > w->node_size - SHT_CLOSE_SIZE)
			return fail(w, -E2BIG, "metadata does not fit in the %u-byte header (at key '%s')", w->node_size,
				    k);
		put16(b + off, (uint16_t)kl);
		memcpy(b + off + 2, k, kl);
		off += 2 + kl;
		put16(b + off, (uint16_t)vl);
		memcpy(b + off + 2, v, vl);
		off += 2 + vl;
	}
	put32(b + FH_LEN, (uint32_t)off);
	put32(b + FH_CRC, (uint32_t)crc32(0, b + 16, w->node_size - SHT_CLOSE_SIZE - 16));
	return write_at(w, b, w->node_size, 0);
}

static void writer_free(struct sht_writer *w)
{
	uint32_t i;
	int h;

	if (!w)
		return;
	outfile_abort(&w->of); /* an atomic file is removed; one that grows stays as it is */
	for (h = 0; h <= w->top && h <= SHT_MAX_HEIGHT; h++)
		wnode_free(w->branch[h]);
	for (i = 0; i < w->nattrs; i++)
		free(w->attrs[i].name);
	free(w->attrs);
	strtab_free(&w->attr_index);
	strtab_free(&w->strings);
	free(w->block);
	free(w->node);
	free(w->out);
	free(w->path);
	free(w);
}

/* How the file is written (util's outfile rule): at offsets; as it grows, unless it must appear whole. */
static unsigned int file_flags(const struct sht_writer_opts *o)
{
	return OUTFILE_SEEK | OUTFILE_NO_SYNC | (o->whole_header || o->atomic ? 0 : OUTFILE_GROW);
}

int sht_writer_create(struct sht_writer **wp, const char *path, const struct sht_writer_opts *opts,
		      struct vcpustat_error *err)
{
	struct sht_writer_opts def = { 0 };
	struct sht_writer *w;
	int e;

	*wp = NULL;
	if (!opts)
		opts = &def;
	w = calloc(1, sizeof(*w));
	if (!w)
		return verror(err, -ENOMEM, "%s: out of memory", path);
	w->fd = -1;
	outfile_init(&w->of);
	w->path = strdup(path);
	w->node_size = opts->node_size ? opts->node_size : SHT_DEFAULT_NODE_SIZE;
	w->max_children = opts->max_children ? opts->max_children : 32;
	w->tree_start = w->last_t = w->horizon = opts->tree_start;
	w->no_sync = opts->no_sync;
	w->no_space = opts->no_space;
	w->ctx = opts->ctx;
	if (!w->path) {
		writer_free(w);
		return verror(err, -ENOMEM, "%s: out of memory", path);
	}
	if (w->node_size < SHT_MIN_NODE || w->node_size > SHT_MAX_NODE || (w->node_size & (w->node_size - 1))) {
		writer_free(w);
		return verror(err, -EINVAL, "%s: node size %u is not a power of two between %u and %u", path,
			      opts->node_size, SHT_MIN_NODE, SHT_MAX_NODE);
	}
	if (w->max_children < 2 || w->max_children > 1024 ||
	    (size_t)w->max_children * SHT_TABLE_ENTRY > w->node_size / 4) {
		writer_free(w);
		return verror(err, -EINVAL, "%s: max_children %u must be 2..1024 and use at most a quarter of a node",
			      path, w->max_children);
	}
	w->block = malloc(w->node_size);
	w->branch[0] = wnode_new(w);
	if (!w->block || !w->branch[0] || strtab_init(&w->attr_index) || strtab_init(&w->strings)) {
		writer_free(w);
		return verror(err, -ENOMEM, "%s: out of memory", path);
	}
	wnode_reset(w, w->branch[0], 0, NULL, w->tree_start);
	e = outfile_open(&w->of, path, file_flags(opts), err);
	if (e) {
		writer_free(w);
		return e;
	}
	w->fd = w->of.fd;
	w->no_sync |= !w->of.regular; /* a device: nothing to sync (fdatasync fails on /dev/null) */
	e = write_header(w, opts);
	if (!e && opts->whole_header)
		e = outfile_publish(&w->of, &w->err);
	if (e) {
		if (err)
			*err = w->err;
		writer_free(w);
		return e;
	}
	*wp = w;
	return 0;
}

/* ---- attributes and strings ---- */

static int attr_child(struct sht_writer *w, uint32_t parent, const char *name, size_t len, uint32_t *id)
{
	uint8_t def[16 + SHT_MAX_NAME];
	size_t n = 0;
	uint32_t found;
	int err;

	if (len == 0 || len > SHT_MAX_NAME || memchr(name, '/', len) || memchr(name, 0, len))
		return fail(w, -EINVAL, "bad attribute name '%.*s' (1-%d bytes, no '/')", (int)len, name,
			    SHT_MAX_NAME);
	if (parent != SHT_NO_ATTR && parent >= w->nattrs)
		return fail(w, -EINVAL, "no attribute #%u", parent);
	found = strtab_find(&w->attr_index, parent, name, len);
	if (found != SHT_NONE32) {
		*id = found;
		return 0;
	}
	if (w->nattrs >= SHT_NONE32 - 1)
		return fail(w, -E2BIG, "too many attributes");
	if (w->nattrs == w->cap_attrs) {
		uint32_t cap = w->cap_attrs ? w->cap_attrs * 2 : 64;
		struct wattr *a = realloc(w->attrs, cap * sizeof(*a));

		if (!a)
			return fail(w, -ENOMEM, "out of memory");
		w->attrs = a;
		w->cap_attrs = cap;
	}
	def[n++] = SHT_DEF_ATTR;
	n += varint_put(def + n, w->nattrs);
	n += varint_put(def + n, parent == SHT_NO_ATTR ? 0 : (uint64_t)parent + 1);
	def[n++] = (uint8_t)len;
	memcpy(def + n, name, len);
	n += len;
	err = add_def(w, def, n);
	if (err)
		return err;
	w->attrs[w->nattrs] = (struct wattr){ .name = strndup(name, len), .parent = parent, .type = SHT_NULL };
	if (!w->attrs[w->nattrs].name || strtab_add(&w->attr_index, parent, w->attrs[w->nattrs].name, len, w->nattrs))
		return fail(w, -ENOMEM, "out of memory");
	*id = w->nattrs++;
	return 0;
}

int sht_writer_attr_child(struct sht_writer *w, uint32_t parent, const char *name, uint32_t *id)
{
	if (w->failed)
		return w->failed;
	return attr_child(w, parent, name, strlen(name), id);
}

int sht_writer_attr(struct sht_writer *w, const char *path, uint32_t *id)
{
	uint32_t cur = SHT_NO_ATTR;
	const char *p = path, *slash;
	int err;

	if (w->failed)
		return w->failed;
	if (path[0] != '/' || strlen(path) > SHT_MAX_PATH || !path[1] || strstr(path, "//") ||
	    path[strlen(path) - 1] == '/')
		return fail(w, -EINVAL,
			    "bad attribute path '%s' (it must start with '/', have no empty component, at most %d bytes)",
			    path, SHT_MAX_PATH);
	for (p = path + 1; *p; p = slash + 1) { /* check every component before creating any */
		slash = strchr(p, '/');
		if ((slash ? (size_t)(slash - p) : strlen(p)) > SHT_MAX_NAME)
			return fail(w, -EINVAL, "bad attribute path '%s' (a component is longer than %d bytes)", path,
				    SHT_MAX_NAME);
		if (!slash)
			break;
	}
	p = path;
	while (*p == '/') {
		p++;
		slash = strchr(p, '/');
		err = attr_child(w, cur, p, slash ? (size_t)(slash - p) : strlen(p), &cur);
		if (err)
			return err;
		if (!slash)
			break;
		p = slash;
	}
	*id = cur;
	return 0;
}

static int intern(struct sht_writer *w, const char *s, uint32_t *id)
{
	uint8_t def[24 + SHT_MAX_STRING];
	size_t len = strlen(s), n = 0;
	uint32_t found;
	char *copy;
	int err;

	if (len > SHT_MAX_STRING)
		return fail(w, -EINVAL, "string value of %zu bytes (at most %d)", len, SHT_MAX_STRING);
	found = strtab_find(&w->strings, 0, s, len);
	if (found != SHT_NONE32) {
		*id = found;
		return 0;
	}
	def[n++] = SHT_DEF_STRING;
	n += varint_put(def + n, w->strings.count);
	n += varint_put(def + n, len);
	memcpy(def + n, s, len);
	n += len;
	err = add_def(w, def, n);
	if (err)
		return err;
	copy = strndup(s, len);
	*id = w->strings.count;
	if (!copy || strtab_add(&w->strings, 0, copy, len, w->strings.count)) {
		free(copy);
		return fail(w, -ENOMEM, "out of memory");
	}
	w->strings.owned = true;
	return 0;
}

/* ---- values ---- */

int sht_writer_set(struct sht_writer *w, uint32_t attr, uint64_t t, const struct sht_value *v)
{
	struct wattr *a;
	uint32_t sid = 0;
	int err;

	if (w->failed)
		return w->failed;
	if (attr >= w->nattrs)
		return fail(w, -EINVAL, "no attribute #%u", attr);
	if (t < w->last_t) {
		t = w->last_t;
		w->clamped++;
	} else {
		w->last_t = t;
	}
	a = &w->attrs[attr];
	if (v->type == SHT_STR) {
		if (!v->s)
			return fail(w, -EINVAL, "NULL string value");
		err = intern(w, v->s, &sid);
		if (err)
			return err;
	} else if (v->type != SHT_INT && v->type != SHT_NULL) {
		return fail(w, -EINVAL, "bad value type %d", (int)v->type);
	}
	if (a->type == v->type &&
	    (v->type == SHT_NULL || (v->type == SHT_INT && a->i == v->i) || (v->type == SHT_STR && a->i == sid)))
		return 0; /* the attribute already holds this value */
	if (a->type != SHT_NULL) {
		struct sht_rec r = { .attr = attr, .type = a->type, .start = a->since, .end = t, .i = a->i };

		err = insert(w, &r);
		if (err)
			return err;
		w->open--;
		w->open_bytes -= rec_bound(attr, a->type, a->i);
	}
	a->type = (uint8_t)v->type;
	a->i = v->type == SHT_STR ? (int64_t)sid : v->type == SHT_INT ? v->i : 0;
	a->since = t;
	if (a->type != SHT_NULL) {
		w->open++;
		w->open_bytes += rec_bound(attr, a->type, a->i);
	}
	return 0;
}

int sht_writer_set_int(struct sht_writer *w, uint32_t attr, uint64_t t, int64_t v)
{
	struct sht_value val = { .type = SHT_INT, .i = v };

	return sht_writer_set(w, attr, t, &val);
}

int sht_writer_set_str(struct sht_writer *w, uint32_t attr, uint64_t t, const char *s)
{
	struct sht_value val = { .type = SHT_STR, .s = s };

	return sht_writer_set(w, attr, t, &val);
}

int sht_writer_set_null(struct sht_writer *w, uint32_t attr, uint64_t t)
{
	struct sht_value val = { .type = SHT_NULL };

	return sht_writer_set(w, attr, t, &val);
}

int sht_writer_flush(struct sht_writer *w)
{
	if (w->failed)
		return w->failed;
	if (wnode_empty(w->branch[0]))
		return 0;
	return split(w, 0);
}

/* ---- close ---- */

/* Blocks of n's content if it grew by more bytes. */
static uint64_t blocks_with(const struct sht_writer *w, const struct wnode *n, uint64_t more)
{
	uint64_t payload = w->node_size - SHT_NODE_HDR;

	return (wnode_used(n) - SHT_NODE_HDR + more + payload - 1) / payload;
}

/*
 * An upper bound of the file's size if one more sht_writer_set() (with at
 * most defs bytes of new definitions) and, with flush, sht_writer_flush()
 * were done and the file then closed. Computed from what the close does:
 * the open intervals (each at its longest encoding) are stored in the open
 * nodes, the leaf with a journal copy of those that go higher; the open
 * nodes are sealed; the footer repeats every definition. Where the leaf
 * would overflow, each split it takes is counted as one that makes a new
 * root (every open node sealed and started again, one level more).
 */
uint64_t sht_writer_close_size(const struct sht_writer *w, size_t defs, bool flush)
{
	uint64_t payload = w->node_size - SHT_NODE_HDR;
	uint64_t k = (uint64_t)w->open + 1; /* intervals to store: the open ones, one more set's */
	uint64_t recs = w->open_bytes + SHT_MAX_REC;
	uint64_t skip = 20 * ((k + SHT_SKIP_EVERY - 1) / SHT_SKIP_EVERY + 1); /* two varints per 64 records */
	uint64_t leaf = recs + k + skip + defs; /* records, or their journal copies (one byte more) */
	uint64_t room = wnode_room(w, w->branch[0]);
	uint64_t blocks = 1 + w->nnodes, splits = 0, footer;
	int h;

	if (flush && !wnode_empty(w->branch[0]))
		splits = 1;
	if (wnode_used(w->branch[0]) + leaf > room) {
		/* a fresh leaf holds this much: its header, a branch table one entry longer, a record lost at its end */
		uint64_t fresh = room - SHT_NODE_HDR - (uint64_t)(w->top + 3) * SHT_TABLE_ENTRY - SHT_MAX_REC;

		splits += 1 + leaf / fresh;
	}
	blocks += 1; /* the leaf */
	for (h = 1; h <= w->top; h++) {
		const struct wnode *n = w->branch[h];
		uint64_t more = recs + skip + splits * SHT_TABLE_ENTRY;

		if (n->nkids >= SHT_MIN_FANOUT && wnode_used(n) + more > wnode_room(w, n))
			splits += 1 + more / (payload / 2); /* it splits rather than grows */
		blocks += blocks_with(w, n, more);
	}
	/* each split: every open node (more after each new root) sealed now and once more at the close */
	blocks += splits * ((uint64_t)w->top + 2 + splits);
	footer = SHT_FOOTER_FIXED_LEN + w->defs_bytes + defs;
	blocks += (footer + payload - 1) / payload;
	return blocks * w->node_size;
}

uint64_t sht_writer_min_size(const struct sht_writer_opts *o)
{
	uint64_t node_size = o && o->node_size ? o->node_size : SHT_DEFAULT_NODE_SIZE;

	return 3 * node_size; /* the header, one leaf, one footer block: an empty file */
}

static int write_footer(struct sht_writer *w, uint64_t end, uint32_t *nfooter)
{
	struct sht_buf fb = { 0 };
	uint64_t first = w->nnodes;
	size_t cap = w->node_size - SHT_NODE_HDR, off = 0;
	uint32_t i, part = 0;
	int err = 0;

	if (sht_footer_encode(&fb, w->last_sealed, (uint32_t)w->nnodes, w->tree_start, end, end, 0,
			      w->nattrs, w->strings.count, w->intervals, w->clamped)) {
		free(fb.p);
		return fail(w, -ENOMEM, "out of memory");
	}
	for (i = 0; i < w->nattrs && !err; i++)
		err = sht_def_attr(&fb, i, w->attrs[i].parent, w->attrs[i].name);
	for (i = 0; i < w->strings.count && !err; i++)
		err = sht_def_string(&fb, i, w->strings.keys[i], w->strings.lens[i]);
	if (err) {
		free(fb.p);
		return fail(w, -ENOMEM, "out of memory");
	}
	do {
		size_t chunk = fb.len - off < cap ? fb.len - off : cap;

		sht_footer_block(w->block, w->node_size, (uint32_t)(first + part), part, fb.p + off, chunk,
				 off + chunk == fb.len);
		err = write_at(w, w->block, w->node_size, (first + part + 1) * w->node_size);
		off += chunk;
		part++;
	} while (!err && off < fb.len);
	free(fb.p);
	w->nnodes += part;
	*nfooter = part;
	return err;
}

int sht_writer_close(struct sht_writer *w, uint64_t end_t, struct vcpustat_error *err)
{
	return sht_writer_finish(w, end_t, NULL, err);
}

int sht_writer_finish(struct sht_writer *w, uint64_t end_t, struct sht_writer_stats *st, struct vcpustat_error *err)
{
	uint8_t rec[SHT_CLOSE_SIZE];
	uint32_t i, nfooter = 0, footer_index;
	int e = w->failed, h;

	if (!e) {
		if (end_t < w->last_t) {
			end_t = w->last_t;
			w->clamped++;
		}
		w->last_t = end_t;
		for (i = 0; i < w->nattrs && !e; i++) {
			struct wattr *a = &w->attrs[i];
			struct sht_rec r = { .attr = i, .type = a->type, .start = a->since, .end = end_t, .i = a->i };

			if (a->type != SHT_NULL)
				e = insert(w, &r);
		}
		for (h = 0; h <= w->top && !e; h++)
			e = seal(w, w->branch[h], end_t);
	}
	footer_index = (uint32_t)w->nnodes;
	if (!e)
		e = write_footer(w, end_t, &nfooter);
	if (!e && !w->no_sync && fdatasync(w->fd))
		e = io_fail(w, -errno, 0, "fdatasync");
	if (!e) {
		memset(rec, 0, sizeof(rec));
		put32(rec + CR_MAGIC, SHT_CLOSE_MAGIC);
		put64(rec + CR_FILE_SIZE, (w->nnodes + 1) * w->node_size);
		put32(rec + CR_FOOTER_INDEX, footer_index);
		put32(rec + CR_FOOTER_NODES, nfooter);
		put64(rec + CR_END, end_t);
		put32(rec + CR_CRC, (uint32_t)crc32(0, rec + 8, SHT_CLOSE_SIZE - 8));
		e = write_at(w, rec, sizeof(rec), w->node_size - SHT_CLOSE_SIZE);
	}
	if (!e && !w->no_sync && fdatasync(w->fd))
		e = io_fail(w, -errno, 0, "fdatasync");
	if (!e) /* an atomic file takes its name, a spooled one goes into its target */
		e = outfile_close(&w->of, &w->err);
	w->fd = -1;
	if (e && err)
		*err = w->err;
	if (st)
		sht_writer_get_stats(w, st);
	writer_free(w);
	return e;
}

void sht_writer_abandon(struct sht_writer *w)
{
	writer_free(w);
}

void sht_writer_get_stats(const struct sht_writer *w, struct sht_writer_stats *st)
{
	*st = (struct sht_writer_stats){
		.intervals = w->intervals,
		.journaled = w->journaled,
		.clamped = w->clamped,
		.nodes = w->nnodes,
		.big_cores = w->big_cores,
		.bytes = (w->nnodes + 1) * w->node_size,
		.horizon = w->horizon,
		.height = (uint32_t)w->top,
		.attrs = w->nattrs,
		.strings = w->strings.count,
	};
}

const struct vcpustat_error *sht_writer_error(const struct sht_writer *w)
{
	return &w->err;
}
