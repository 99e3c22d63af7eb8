/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * reader_priv.h - the reader's state, shared by reader.c (open, nodes),
 * rebuild.c (crash recovery), query.c (queries) and check.c (check, repair).
 * Internal to user/sht/.
 */
#ifndef VCPUSTAT_SHT_READER_PRIV_H
#define VCPUSTAT_SHT_READER_PRIV_H

#include "sht.h"
#include "sht_format.h"
#include "sht_internal.h"

/* What a scan learned about one tree node of the file. */
struct rnode {
	uint8_t kind, height;
	uint16_t ntable;
	uint32_t seq, parent;
	uint32_t nintervals;
	uint32_t journal_len;
	uint64_t start, end;
};

/* A parsed, bounds-checked node. */
struct nview {
	const uint8_t *b;
	uint32_t index;
	uint8_t kind, height;
	uint16_t flags, nblocks;
	uint32_t seq, parent, nintervals, ntable;
	uint64_t start, end;
	const uint8_t *table, *defs, *jrnl, *ivl, *skip;
	uint32_t defs_len, jrnl_len, ivl_len, skip_len;
};

/* A growable buffer (a node may span several blocks). */
struct rbuf {
	uint8_t *p;
	size_t cap;
};

int rbuf_reserve(struct rbuf *b, size_t n);

/* A core decoded once and cached: its records (sorted by end) and children. */
struct drec {
	uint64_t start, end;
	int64_t i;
	uint32_t attr;
	uint8_t type;
};

struct dkid {
	uint32_t index;
	uint64_t start, end;
};

struct dnode {
	uint32_t index, n, nkids, pins;
	uint8_t height;
	uint64_t start, end, last_use;
	size_t bytes;
	struct drec *recs;
	struct dkid *kids;
};

struct rattr {
	const char *name; /* in names */
	char *path;
	uint32_t parent, first_child, last_child, next_sibling;
};

struct sht_reader {
	char *name;
	int fd;
	const uint8_t *mem;
	uint64_t size;
	uint32_t node_size, max_children;
	struct sht_info info;
	uint8_t *header; /* block 0 */
	struct sht_meta *meta;
	size_t nmeta;
	char *meta_buf;

	struct rattr *attrs;
	uint32_t nattrs, cap_attrs;
	struct sht_strtab attr_index; /* (parent, name) -> id; keys owned */
	char **strings;
	uint32_t nstrings, cap_strings;

	uint32_t nfile;	     /* blocks of the tree in the file: indexes 0 .. nfile - 1 */
	uint32_t root;	     /* node index (>= nfile: rebuilt), SHT_NONE32 if empty */
	uint8_t **virt;	     /* rebuilt cores: header and content, contiguous */
	uint32_t *virt_index, *virt_blocks; /* their first block index (>= nfile) and block count */
	uint32_t nvirt;
	uint32_t nblocks;    /* nfile + the blocks of the rebuilt cores */
	bool filter;	     /* drop intervals with end >= horizon */
	uint64_t horizon;
	uint8_t *verified;   /* one byte per file block: CRC checked */
	struct rbuf bufs[SHT_MAX_HEIGHT + 2]; /* check: one node buffer per height */
	struct rbuf nodebuf; /* queries: the node being read */
	uint8_t *scratch;    /* one block */
	uint8_t *contblock;  /* one block: continuation blocks are read here */

	struct dnode **dcache; /* by node index: decoded cores */
	uint32_t ndcache;
	uint32_t *cached, ncached; /* indexes of the cached cores */
	size_t dcache_bytes, dcache_budget;
	uint64_t clock;

	struct rnode *nodes; /* scan results (unfinished files, check) */
	uint64_t nnodes_scanned;
	bool scan_at_footer; /* the scan stopped at a footer block (not at the end, a cut node or a bad block) */
	uint64_t fail_off; /* offset named by the last rfail */
};

/* The file offset of tree node k (block 0 is the header). */
static inline uint64_t node_off(const struct sht_reader *r, uint32_t k)
{
	return ((uint64_t)k + 1) * r->node_size;
}

/* Errors: "NAME: offset OFF: ..." with -EBADMSG. */
int rfail(const struct sht_reader *r, struct vcpustat_error *err, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

struct sht_reader *reader_alloc(const char *name);
void reader_free(struct sht_reader *r);
/* Read the header block (magic, version, sizes, CRC, metadata); sets closed if the close record is valid. */
int reader_header(struct sht_reader *r, bool *closed, struct vcpustat_error *err);
/* Block k (0 = header, k + 1 = node k) into buf (or a pointer into the image); short reads are errors. */
const uint8_t *reader_block(struct sht_reader *r, uint64_t k, uint8_t *buf, struct vcpustat_error *err);
/* Check magic, CRC and index of node k's block, and parse it. */
int node_verify(struct sht_reader *r, uint32_t k, const uint8_t *b, struct nview *v, struct vcpustat_error *err);
int node_parse(const struct sht_reader *r, uint32_t k, const uint8_t *b, struct nview *v, struct vcpustat_error *err);
/* Node k (file or rebuilt; all its blocks), verified on first use, assembled in buf. */
int reader_node(struct sht_reader *r, uint32_t k, struct rbuf *buf, struct nview *v, struct vcpustat_error *err);
/* Add the definition records of a section to the attribute and string tables (ids must follow). */
int reader_defs(struct sht_reader *r, const uint8_t *p, size_t len, uint64_t off, struct vcpustat_error *err);
/* Parse the footer stream; fills root, nfile check, info fields, attrs, strings. */
int reader_footer(struct sht_reader *r, const uint8_t *p, size_t len, uint32_t footer_index, uint64_t off,
		  struct vcpustat_error *err);
/*
 * Scan tree nodes 0, 1, ... in order: verify, record (r->nodes), read the
 * definitions. Stops at the first footer node, at the end, or at max nodes.
 * Returns 0; *bad = index of the first bad block (-1 if none), with err filled.
 */
int reader_scan(struct sht_reader *r, uint64_t max, int64_t *bad, struct vcpustat_error *err);
/* After a scan of nfile nodes: rebuild the unsealed cores, set root, horizon and filter. */
int reader_rebuild(struct sht_reader *r, uint32_t nfile, struct vcpustat_error *err);
/* Build attribute paths and children lists; fill info. */
int reader_finish(struct sht_reader *r, struct vcpustat_error *err);
/* Encode the footer of r (for repair). */
int reader_footer_encode(const struct sht_reader *r, struct sht_buf *b);
/* Read the footer that the close record points to (sizes must match). */
int reader_open_closed(struct sht_reader *r, struct vcpustat_error *err);
/*
 * Write the history of r (header read; footer: a reader of its intact footer,
 * or NULL) into a new SHT file at out, from every intact node (salvage.c).
 */
int sht_salvage(struct sht_reader *r, struct sht_reader *footer, const char *out, struct sht_repair_info *info,
		struct vcpustat_error *err);

#endif
