// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sht_check: verify every checksum and the whole structure of an SHT file;
 * sht_repair: keep the nodes before the first bad one, rebuild the cores
 * that were never sealed, append them and a footer (docs/sht-format.md
 * sections 7 and 8).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "reader_priv.h"

struct verify {
	struct sht_reader *r;
	uint8_t *seen;
	uint64_t nintervals;
	uint64_t leaves, cores;
	struct vcpustat_error *err;
};

/* Every record of a section: in range, defined ids, skip entries where expected. */
static int verify_records(struct verify *vf, const struct nview *v, bool journal)
{
	struct sht_reader *r = vf->r;
	const uint8_t *p = journal ? v->jrnl : v->ivl, *end = p + (journal ? v->jrnl_len : v->ivl_len);
	const uint8_t *sk = v->skip, *sk_end = v->skip + v->skip_len, *base = p;
	uint64_t prev = v->start, rel, o;
	uint32_t n = 0;
	struct sht_rec rec;

	while (p < end) {
		const uint8_t *at = p;
		uint8_t h = 0;

		if (journal) {
			h = *p++;
			if (h == 0 || h > v->ntable)
				return rfail(r, vf->err, node_off(r, v->index) + (uint64_t)(at - v->b),
					     "node %u: journal record for height %u (the branch has %u)", v->index, h,
					     v->ntable);
		} else if (n && !(n % SHT_SKIP_EVERY)) {
			if (varint_get(&sk, sk_end, &rel) || varint_get(&sk, sk_end, &o) || rel != prev - v->start ||
			    o != (uint64_t)(at - base))
				return rfail(r, vf->err, node_off(r, v->index) + (uint64_t)(sk - v->b),
					     "node %u: skip entry for record %u does not match the records", v->index, n);
		}
		if (rec_get(&p, end, prev, &rec))
			return rfail(r, vf->err, node_off(r, v->index) + (uint64_t)(at - v->b),
				     "node %u: bad %s record %u", v->index, journal ? "journal" : "interval", n);
		if (rec.start < (journal ? r->info.tree_start : v->start) || rec.end > v->end)
			return rfail(r, vf->err, node_off(r, v->index) + (uint64_t)(at - v->b),
				     "node %u: %s record %u [%llu, %llu) outside the node's range [%llu, %llu]", v->index,
				     journal ? "journal" : "interval", n, (unsigned long long)rec.start,
				     (unsigned long long)rec.end, (unsigned long long)v->start,
				     (unsigned long long)v->end);
		if (rec.attr >= r->nattrs || (rec.type == SHT_STR && (uint64_t)rec.i >= r->nstrings))
			return rfail(r, vf->err, node_off(r, v->index) + (uint64_t)(at - v->b),
				     "node %u: %s record %u uses an undefined %s", v->index,
				     journal ? "journal" : "interval", n,
				     rec.attr >= r->nattrs ? "attribute" : "string");
		prev = rec.end;
		n++;
	}
	if (!journal && (n != v->nintervals || sk != sk_end))
		return rfail(r, vf->err, node_off(r, v->index) + NH_NINTERVALS,
			     "node %u: %u interval records, the header says %u (or extra skip entries)", v->index, n,
			     v->nintervals);
	if (!journal)
		vf->nintervals += n;
	return 0;
}

static int verify_node(struct verify *vf, uint32_t k, int height, uint64_t start, uint64_t end, uint32_t parent)
{
	struct sht_reader *r = vf->r;
	uint32_t i, nblocks_all = r->nblocks;
	struct nview v;
	struct rbuf *buf = &r->bufs[height < 0 ? SHT_MAX_HEIGHT + 1 : height]; /* one per height: the walk keeps v */
	int e;

	if (k >= nblocks_all)
		return rfail(r, vf->err, r->size, "reference to node %u, the tree has %u blocks", k, nblocks_all);
	e = reader_node(r, k, buf, &v, vf->err);
	if (e)
		return e;
	for (i = 0; i < v.nblocks; i++) {
		if (k + i >= nblocks_all || vf->seen[k + i])
			return rfail(r, vf->err, node_off(r, k), "node %u is in the tree twice (or overlaps another)", k);
		vf->seen[k + i] = 1;
	}
	if (height >= 0 && (v.height != height || v.start != start || v.end != end || v.parent != parent))
		return rfail(r, vf->err, node_off(r, k),
			     "node %u: height %u, range [%llu, %llu], parent seq %u; its parent says %d, [%llu, %llu], %u",
			     k, v.height, (unsigned long long)v.start, (unsigned long long)v.end, v.parent, height,
			     (unsigned long long)start, (unsigned long long)end, parent);
	e = verify_records(vf, &v, false);
	if (e)
		return e;
	if (v.kind == SHT_NODE_LEAF) {
		vf->leaves++;
		return verify_records(vf, &v, true);
	}
	vf->cores++;
	for (i = 0; i < v.ntable; i++) {
		uint32_t child = get32(v.table + i * SHT_TABLE_ENTRY);
		uint64_t cs = get64(v.table + i * SHT_TABLE_ENTRY + 4);
		uint64_t ce = i + 1 < v.ntable ? get64(v.table + (i + 1) * SHT_TABLE_ENTRY + 4) : v.end;

		if (child >= k || cs > ce || (i == 0 && cs != v.start) || ce > v.end)
			return rfail(r, vf->err, node_off(r, k) + SHT_NODE_HDR + i * SHT_TABLE_ENTRY,
				     "node %u: bad child entry %u (node %u, [%llu, %llu])", k, i, child,
				     (unsigned long long)cs, (unsigned long long)ce);
		e = verify_node(vf, child, v.height - 1, cs, ce, v.seq);
		if (e)
			return e;
		/* the child's buffer is below ours: v stays valid */
	}
	return 0;
}

/* Walk the tree from the root: structure, records, reachability. */
static int verify_tree(struct sht_reader *r, struct sht_check_report *rep, struct vcpustat_error *err)
{
	struct verify vf = { .r = r, .err = err };
	uint32_t i, n = r->nblocks;
	struct nview v;
	int e = 0;

	vf.seen = calloc(n ? n : 1, 1);
	if (!vf.seen)
		return verror(err, -ENOMEM, "%s: out of memory", r->name);
	if (r->root != SHT_NONE32) {
		e = reader_node(r, r->root, &r->nodebuf, &v, err);
		if (!e && (v.parent != SHT_NONE32 || v.start != r->info.start || v.end != r->info.end))
			e = rfail(r, err, node_off(r, r->root), "root node %u: parent seq %u, range [%llu, %llu]; expected none, [%llu, %llu]",
				  r->root, v.parent, (unsigned long long)v.start, (unsigned long long)v.end,
				  (unsigned long long)r->info.start, (unsigned long long)r->info.end);
		if (!e)
			e = verify_node(&vf, r->root, -1, 0, 0, 0);
	}
	for (i = 0; i < n && !e; i++)
		if (!vf.seen[i])
			e = rfail(r, err, node_off(r, i), "node %u is not in the tree", i);
	if (!e && r->info.closed && vf.nintervals != r->info.nintervals)
		e = rfail(r, err, node_off(r, r->nfile) + SHT_NODE_HDR, "footer: %llu intervals announced, %llu found",
			  (unsigned long long)r->info.nintervals, (unsigned long long)vf.nintervals);
	rep->leaves = vf.leaves;
	rep->cores = vf.cores;
	rep->nintervals = vf.nintervals;
	free(vf.seen);
	return e;
}

static void note_bad(struct sht_reader *r, struct sht_check_report *rep, const struct vcpustat_error *err)
{
	if (rep->bad_node >= 0 || !rep->ok)
		return;
	rep->ok = false;
	rep->bad_offset = r->fail_off;
	rep->bad_node = r->node_size && r->fail_off >= r->node_size ? (int64_t)(r->fail_off / r->node_size) - 1 : -1;
	snprintf(rep->problem, sizeof(rep->problem), "%s", err->msg);
}

/* Compare the footer's tables with the definitions found in the leaves. */
static int same_tables(struct sht_reader *r, struct sht_reader *fr, struct vcpustat_error *err)
{
	uint32_t i;

	if (fr->nattrs != r->nattrs || fr->nstrings != r->nstrings)
		return rfail(r, err, node_off(r, r->nfile),
			     "footer: %u attributes and %u strings, the leaves define %u and %u", fr->nattrs,
			     fr->nstrings, r->nattrs, r->nstrings);
	for (i = 0; i < r->nattrs; i++)
		if (fr->attrs[i].parent != r->attrs[i].parent || strcmp(fr->attrs[i].name, r->attrs[i].name))
			return rfail(r, err, node_off(r, r->nfile), "footer: attribute #%u differs from its definition", i);
	for (i = 0; i < r->nstrings; i++)
		if (strcmp(fr->strings[i], r->strings[i]))
			return rfail(r, err, node_off(r, r->nfile), "footer: string #%u differs from its definition", i);
	return 0;
}

/*
 * Check r (its source set): fills rep; returns 0 if good, -EBADMSG if
 * corrupt (err: the first problem), other errors for I/O. If keep is
 * non-NULL, it gets the number of tree nodes that a repair keeps.
 */
static int check_source(struct sht_reader *r, struct sht_check_report *rep, uint32_t *keep,
			struct vcpustat_error *err)
{
	struct vcpustat_error e2 = { 0 }, *pe = err ? err : &e2;
	struct sht_reader *fr = NULL;
	uint64_t max = UINT64_MAX;
	bool closed;
	int64_t bad;
	int e;

	memset(rep, 0, sizeof(*rep));
	rep->ok = true;
	rep->bad_node = -1;
	rep->file_size = r->size;
	e = reader_header(r, &closed, pe);
	if (e) {
		if (e == -EBADMSG)
			note_bad(r, rep, pe);
		return e;
	}
	rep->node_size = r->node_size;
	if (closed) { /* read the footer with a second reader: its own tables */
		fr = reader_alloc(r->name);
		if (!fr)
			return verror(err, -ENOMEM, "%s: out of memory", r->name);
		fr->fd = -1;
		fr->mem = r->mem;
		fr->size = r->size;
		fr->node_size = r->node_size;
		fr->max_children = r->max_children;
		fr->info = r->info;
		fr->header = malloc(r->node_size);
		fr->scratch = malloc(r->node_size);
		fr->contblock = malloc(r->node_size);
		if (!fr->header || !fr->scratch || !fr->contblock) {
			reader_free(fr);
			return verror(err, -ENOMEM, "%s: out of memory", r->name);
		}
		memcpy(fr->header, r->header, r->node_size);
		if (!r->mem)
			fr->fd = dup(r->fd);
		e = reader_open_closed(fr, pe);
		if (e) {
			r->fail_off = fr->fail_off;
			note_bad(r, rep, pe);
			closed = false;
			if (e != -EBADMSG)
				goto out;
		} else {
			max = fr->nfile;
		}
	}
	e = reader_scan(r, max, &bad, pe);
	if (e)
		goto out;
	if (bad >= 0)
		note_bad(r, rep, pe);
	if (closed && rep->ok && r->nnodes_scanned != fr->nfile) {
		rfail(r, pe, node_off(r, (uint32_t)r->nnodes_scanned), "node %llu: a footer node where the tree should go on",
		      (unsigned long long)r->nnodes_scanned);
		note_bad(r, rep, pe);
	}
	if (closed && rep->ok) {
		if (same_tables(r, fr, pe)) {
			note_bad(r, rep, pe);
			closed = false;
		} else {
			r->nfile = fr->nfile;
			r->root = fr->root;
			r->filter = fr->filter;
			r->horizon = fr->horizon;
			r->info.start = fr->info.start;
			r->info.end = fr->info.end;
			r->info.horizon = fr->info.horizon;
			r->info.recovered = fr->info.recovered;
			r->info.nintervals = fr->info.nintervals;
			r->info.nclamped = fr->info.nclamped;
			r->info.closed = true;
			r->verified = calloc(r->nfile ? r->nfile : 1, 1);
			if (!r->verified) {
				e = verror(err, -ENOMEM, "%s: out of memory", r->name);
				goto out;
			}
			memset(r->verified, 1, r->nfile);
		}
	} else {
		closed = false;
	}
	if (keep)
		*keep = (uint32_t)r->nnodes_scanned;
	if (!closed && rep->ok && r->scan_at_footer) { /* after the tree of an unfinished file: footer nodes */
		uint64_t k, full = r->size / r->node_size - 1;

		for (k = r->nnodes_scanned; k < full; k++) {
			const uint8_t *b = reader_block(r, k + 1, r->scratch, pe);
			struct nview v;

			if (!b) {
				e = pe->code;
				goto out;
			}
			if (node_verify(r, (uint32_t)k, b, &v, pe) ||
			    (v.kind != SHT_NODE_FOOTER &&
			     rfail(r, pe, node_off(r, (uint32_t)k), "node %llu: a tree node after the footer",
				   (unsigned long long)k))) {
				note_bad(r, rep, pe);
				break;
			}
		}
	}
	if (!closed) {
		e = reader_rebuild(r, (uint32_t)r->nnodes_scanned, pe);
		if (e) {
			if (e != -EBADMSG)
				goto out;
			note_bad(r, rep, pe);
			e = 0;
			goto report;
		}
	}
	e = reader_finish(r, pe);
	if (!e)
		e = verify_tree(r, rep, pe);
	if (e == -EBADMSG)
		note_bad(r, rep, pe);
	else if (e)
		goto out;
	e = 0;
report:
	rep->closed = closed && rep->ok;
	rep->recovered = r->filter;
	rep->nodes = r->nfile;
	rep->rebuilt = r->nvirt;
	rep->start = r->info.start;
	rep->end = r->info.end;
	rep->horizon = r->horizon;
	rep->nattrs = r->nattrs;
	rep->nstrings = r->nstrings;
	rep->tail_bytes = closed ? 0 : r->info.tail_bytes;
	rep->good_size = rep->bad_node >= 0 ? ((uint64_t)rep->bad_node + 1) * r->node_size : r->size - rep->tail_bytes;
	if (!rep->ok) {
		verror(err, -EBADMSG, "%s", rep->problem);
		e = -EBADMSG;
	}
out:
	reader_free(fr);
	return e;
}

/* sht_check() of the file open as fd (closed here), named name. */
static int check_fd(const char *name, int fd, struct sht_check_report *rep, struct vcpustat_error *err)
{
	struct sht_reader *r = reader_alloc(name);
	struct stat st;
	int e;

	memset(rep, 0, sizeof(*rep));
	rep->bad_node = -1;
	if (!r) {
		close(fd);
		return verror(err, -ENOMEM, "%s: out of memory", name);
	}
	r->fd = fd;
	if (fstat(r->fd, &st)) {
		e = -errno;
		reader_free(r);
		return verror(err, e, "%s: cannot open: %s", name, strerror(-e));
	}
	r->size = (uint64_t)st.st_size;
	e = check_source(r, rep, NULL, err);
	reader_free(r);
	return e;
}

int sht_check(const char *path, struct sht_check_report *rep, struct vcpustat_error *err)
{
	int fd = open_input(path, true, err);

	if (fd < 0) {
		memset(rep, 0, sizeof(*rep));
		rep->bad_node = -1;
		return fd;
	}
	return check_fd(path, fd, rep, err);
}

int sht_check_mem(const char *name, const void *data, size_t len, struct sht_check_report *rep,
		  struct vcpustat_error *err)
{
	static const uint8_t empty[1];
	struct sht_reader *r = reader_alloc(name);
	int e;

	memset(rep, 0, sizeof(*rep));
	rep->bad_node = -1;
	if (!r)
		return verror(err, -ENOMEM, "%s: out of memory", name);
	r->mem = data ? data : empty;
	r->size = len;
	e = check_source(r, rep, NULL, err);
	reader_free(r);
	return e;
}

/* ---- repair ---- */

/* pwrite_all with a message naming the file and the offset that failed. */
static int write_at(int fd, const char *name, const void *buf, size_t len, uint64_t off, struct vcpustat_error *err)
{
	__u64 at = off;
	int e = pwrite_all(fd, buf, len, &at);

	if (e)
		return verror(err, e, "%s: offset %llu: write failed: %s", name, (unsigned long long)at, strerror(-e));
	return 0;
}

/* Open a reader on fd for the first keep tree nodes, rebuilt; verify it. */
static int build_prefix(const char *path, int fd, uint64_t size, uint32_t keep, struct sht_reader **rp,
			uint64_t *fail_off, struct vcpustat_error *err)
{
	struct sht_check_report rep;
	struct sht_reader *r = reader_alloc(path);
	bool closed;
	int64_t bad;
	int e;

	*rp = NULL;
	if (!r)
		return verror(err, -ENOMEM, "%s: out of memory", path);
	r->fd = dup(fd);
	r->size = size;
	e = reader_header(r, &closed, err);
	if (!e)
		e = reader_scan(r, keep, &bad, err);
	if (!e && (bad >= 0 || r->nnodes_scanned != keep))
		e = rfail(r, err, node_off(r, (uint32_t)r->nnodes_scanned), "node %llu changed during the repair",
			  (unsigned long long)r->nnodes_scanned);
	if (!e)
		e = reader_rebuild(r, keep, err);
	if (!e)
		e = reader_finish(r, err);
	if (!e) {
		memset(&rep, 0, sizeof(rep));
		e = verify_tree(r, &rep, err);
	}
	if (e) {
		*fail_off = r->fail_off;
		reader_free(r);
		return e;
	}
	*rp = r;
	return 0;
}

/*
 * Repair the unfinished copy at fd (name: for messages): keep the first keep
 * nodes (fewer if the rebuilt tree does not verify), append the rebuilt
 * cores, a footer and the close record.
 */
static int repair_fd(const char *path, int fd, uint64_t size, const struct sht_check_report *bp, uint32_t keep,
		     uint64_t *rebuilt, struct vcpustat_error *err)
{
	struct sht_check_report before = *bp;
	struct sht_reader *r = NULL;
	uint8_t zero[SHT_CLOSE_SIZE] = { 0 }, cr[SHT_CLOSE_SIZE];
	struct sht_buf fb = { 0 };
	uint32_t i, nfooter = 0, first;
	int e, tries;
	struct {
		off_t st_size;
	} st = { (off_t)size };

	if (before.bad_node >= 0 && (uint64_t)before.bad_node < keep)
		keep = (uint32_t)before.bad_node;
	/* Keep fewer nodes until the rebuilt tree verifies. */
	for (tries = 0;; tries++) {
		struct vcpustat_error e3 = { 0 };
		uint64_t fail_off = 0, bad;

		e = build_prefix(path, fd, (uint64_t)st.st_size, keep, &r, &fail_off, &e3);
		if (!e)
			break;
		if (e != -EBADMSG || tries > 64 || !keep) {
			if (err)
				*err = e3;
			return e;
		}
		/* drop the node the problem is in (or, if it is in a rebuilt core, the last one) */
		bad = fail_off / before.node_size;
		keep = bad >= 1 && bad - 1 < keep ? (uint32_t)(bad - 1) : keep - 1;
	}
	/* 1. the file is no longer "closed"; 2. cut; 3. rebuilt cores, footer; 4. close record */
	e = write_at(fd, path, zero, sizeof(zero), r->node_size - SHT_CLOSE_SIZE, err);
	if (!e && fdatasync(fd))
		e = verror(err, -errno, "%s: fdatasync failed: %s", path, strerror(errno));
	if (!e && ftruncate(fd, (off_t)(((uint64_t)keep + 1) * r->node_size)))
		e = verror(err, -errno, "%s: truncate failed: %s", path, strerror(errno));
	for (i = 0; i < r->nvirt && !e; i++) { /* the rebuilt cores, as blocks */
		const uint8_t *h = r->virt[i];
		size_t content = (size_t)get16(h + NH_NTABLE) * SHT_TABLE_ENTRY + get32(h + NH_INTERVALS_LEN) +
				 get32(h + NH_SKIP_LEN);
		uint8_t *blocks = malloc((size_t)r->virt_blocks[i] * r->node_size);

		if (!blocks) {
			e = verror(err, -ENOMEM, "%s: out of memory", path);
			break;
		}
		sht_node_blocks(h, content, r->node_size, r->virt_index[i], blocks);
		e = write_at(fd, path, blocks, (size_t)r->virt_blocks[i] * r->node_size, node_off(r, r->virt_index[i]),
			      err);
		free(blocks);
	}
	first = r->nblocks;
	if (!e && reader_footer_encode(r, &fb))
		e = verror(err, -ENOMEM, "%s: out of memory", path);
	if (!e) {
		size_t cap = r->node_size - SHT_NODE_HDR, off = 0;

		do {
			size_t chunk = fb.len - off < cap ? fb.len - off : cap;

			sht_footer_block(r->scratch, r->node_size, first + nfooter, nfooter, fb.p + off, chunk,
					 off + chunk == fb.len);
			e = write_at(fd, path, r->scratch, r->node_size, node_off(r, first + nfooter), err);
			off += chunk;
			nfooter++;
		} while (!e && off < fb.len);
	}
	if (!e && fdatasync(fd))
		e = verror(err, -errno, "%s: fdatasync failed: %s", path, strerror(errno));
	if (!e) {
		memset(cr, 0, sizeof(cr));
		put32(cr + CR_MAGIC, SHT_CLOSE_MAGIC);
		put64(cr + CR_FILE_SIZE, ((uint64_t)first + nfooter + 1) * r->node_size);
		put32(cr + CR_FOOTER_INDEX, first);
		put32(cr + CR_FOOTER_NODES, nfooter);
		put64(cr + CR_END, r->info.end);
		put32(cr + CR_CRC, (uint32_t)crc32(0, cr + 8, SHT_CLOSE_SIZE - 8));
		e = write_at(fd, path, cr, sizeof(cr), r->node_size - SHT_CLOSE_SIZE, err);
	}
	if (!e && fdatasync(fd))
		e = verror(err, -errno, "%s: fdatasync failed: %s", path, strerror(errno));
	*rebuilt = r->nvirt;
	free(fb.p);
	reader_free(r);
	return e;
}

/* Copy in to fd (a new file). */
static int copy_fd(int in, int out, const char *name, struct vcpustat_error *err)
{
	char buf[1 << 16];
	__u64 off = 0;
	ssize_t n;

	for (;;) {
		n = pread(in, buf, sizeof(buf), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return verror(err, -errno, "%s: offset %llu: read failed: %s", name, (unsigned long long)off,
				      strerror(errno));
		if (n == 0)
			return 0;
		n = pwrite_all(out, buf, (size_t)n, &off);
		if (n)
			return verror(err, (int)n, "%s: write failed: %s", name, strerror((int)-n));
	}
}

/* Does a block of the tree fail its checksum (not the footer, not a cut tail)? */
static int tree_damaged(const char *name, int fd, uint64_t size, bool *damaged, struct vcpustat_error *err)
{
	struct sht_reader *r = reader_alloc(name);
	uint64_t full, k;
	bool closed;
	int e;

	*damaged = false;
	if (!r)
		return verror(err, -ENOMEM, "%s: out of memory", name);
	r->fd = dup(fd);
	r->size = size;
	e = reader_header(r, &closed, err);
	if (e)
		goto out;
	full = size / r->node_size - 1;
	if (closed && get32(r->header + r->node_size - SHT_CLOSE_SIZE + CR_FOOTER_INDEX) < full)
		full = get32(r->header + r->node_size - SHT_CLOSE_SIZE + CR_FOOTER_INDEX);
	for (k = 0; k < full && k < SHT_NONE32 - 1; k++) {
		struct vcpustat_error e2 = { 0 };
		const uint8_t *b = reader_block(r, k + 1, r->scratch, err);
		struct nview v;

		if (!b) {
			e = err && err->code ? err->code : -EIO;
			break;
		}
		if (node_verify(r, (uint32_t)k, b, &v, &e2)) {
			*damaged = true;
			break;
		}
		if (v.kind == SHT_NODE_FOOTER)
			break;
	}
out:
	reader_free(r);
	return e;
}

int sht_repair_to(const char *in, const char *out, struct sht_check_report *rep, struct sht_repair_info *info,
		  struct vcpustat_error *err)
{
	struct sht_repair_info dummy;
	struct sht_check_report before;
	struct sht_reader *probe = NULL, *fr = NULL;
	struct outfile of;
	uint64_t rebuilt = 0;
	uint32_t keep = 0;
	struct stat st;
	int fd, e;
	bool closed, damaged = false;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	info->first_damaged = -1;
	memset(rep, 0, sizeof(*rep));
	rep->bad_node = -1;
	outfile_init(&of);
	fd = open_input(in, true, err);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		e = -errno;
		close(fd);
		return verror(err, e, "%s: cannot open for repair: %s", in, strerror(-e));
	}
	probe = reader_alloc(in);
	if (!probe) {
		close(fd);
		return verror(err, -ENOMEM, "%s: out of memory", in);
	}
	probe->fd = dup(fd);
	probe->size = (uint64_t)st.st_size;
	e = check_source(probe, &before, &keep, err);
	reader_free(probe);
	if (e && e != -EBADMSG)
		goto out;
	e = 0;
	if (before.ok && before.closed) { /* nothing to do */
		*rep = before;
		goto out;
	}
	if (before.node_size == 0 || (before.bad_node < 0 && !before.ok)) { /* the header itself is bad */
		e = verror(err, -EBADMSG, "%s: cannot repair: %s", in, before.problem[0] ? before.problem : "bad file header");
		goto out;
	}
	/* a regular file: a temporary one renamed over it; else, in place, a copy at the end (outfile) */
	e = outfile_open(&of, out, OUTFILE_SEEK, err);
	if (e)
		goto out;
	if (!before.ok) {
		e = tree_damaged(in, fd, (uint64_t)st.st_size, &damaged, err);
		if (e)
			goto out;
	}
	if (!damaged) { /* unfinished, cut or a bad footer: keep every node, append what the writer never wrote */
		e = copy_fd(fd, of.fd, out, err);
		if (!e)
			e = repair_fd(in, of.fd, (uint64_t)st.st_size, &before, keep, &rebuilt, err);
	} else { /* damaged nodes: write the history again from the intact ones */
		probe = reader_alloc(in);
		if (!probe) {
			e = verror(err, -ENOMEM, "%s: out of memory", in);
			goto out;
		}
		probe->fd = dup(fd);
		probe->size = (uint64_t)st.st_size;
		e = reader_header(probe, &closed, err);
		if (!e && closed) { /* the footer's tables, if it is intact */
			struct vcpustat_error e2 = { 0 };

			fr = reader_alloc(in);
			if (!fr) {
				e = verror(err, -ENOMEM, "%s: out of memory", in);
			} else {
				fr->fd = dup(fd);
				fr->size = probe->size;
				if (reader_header(fr, &closed, &e2) || reader_open_closed(fr, &e2)) {
					reader_free(fr);
					fr = NULL;
				}
			}
		}
		if (!e)
			e = sht_salvage(probe, fr, of.tmp, info, err);
		info->salvaged = true;
		reader_free(fr);
		reader_free(probe);
	}
	/* what the repair wrote, checked before it takes its place (a device cannot be read back) */
	if (!e) {
		int cfd = dup(of.fd);

		e = cfd < 0 ? verror(err, -errno, "%s: %s", out, strerror(errno)) : check_fd(out, cfd, rep, err);
	}
	if (!e)
		e = outfile_close(&of, err);
	if (e)
		goto out;
	rep->repaired = true;
	rep->rebuilt = rebuilt;
out:
	outfile_abort(&of);
	close(fd);
	return e;
}

int sht_repair(const char *path, struct sht_check_report *rep, struct vcpustat_error *err)
{
	return sht_repair_to(path, path, rep, NULL, err);
}
