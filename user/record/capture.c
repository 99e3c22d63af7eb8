// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* capture.c - capture files (docs/capture-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include "record/record.h"
#include "util/util.h"

#define EV_SIZE sizeof(struct vcpustat_event)

struct capture_writer {
	int fd; /* of.fd */
	struct outfile of;
	char *path;
	unsigned char *block; /* header + events */
	unsigned char *zblock; /* header + compressed events */
	size_t zcap;
	ZSTD_CCtx *zctx;
	uint32_t count;
	uint64_t block_start_ts;
	uint64_t written;
	int sticky; /* first I/O error */
};

int capture_create(struct capture_writer **wp, const char *path, uint64_t mono_start_ns, uint64_t real_start_ns,
		   const char *meta, struct vcpustat_error *err)
{
	unsigned char h[CAPTURE_HEADER_SIZE] = { 0 };
	size_t meta_len = meta ? strlen(meta) : 0;
	struct capture_writer *w;
	uLong crc;
	int e;

	*wp = NULL;
	if (meta_len > CAPTURE_MAX_META)
		return verror(err, -EINVAL, "%s: metadata too long (%zu bytes)", path, meta_len);
	w = calloc(1, sizeof(*w));
	if (!w)
		return verror(err, -ENOMEM, "%s: out of memory", path);
	w->block = malloc(CAPTURE_BLOCK_HEADER + (size_t)CAPTURE_BLOCK_EVENTS * EV_SIZE);
	w->zcap = ZSTD_compressBound((size_t)CAPTURE_BLOCK_EVENTS * EV_SIZE);
	w->zblock = malloc(CAPTURE_BLOCK_HEADER + w->zcap);
	w->zctx = ZSTD_createCCtx();
	w->path = strdup(path);
	if (!w->block || !w->zblock || !w->zctx || !w->path) {
		e = verror(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	/* written as it grows, a stream: a regular file under its name, a FIFO or a device in place */
	e = outfile_open(&w->of, path, OUTFILE_GROW, err);
	if (e)
		goto fail;
	w->fd = w->of.fd;
	memcpy(h, CAPTURE_MAGIC, 8);
	put32(h + 8, CAPTURE_VERSION);
	put32(h + 12, (uint32_t)EV_SIZE);
	put64(h + 16, mono_start_ns);
	put64(h + 24, real_start_ns);
	put32(h + 32, (uint32_t)meta_len);
	crc = crc32(0, h, 36);
	crc = crc32(crc, (const Bytef *)(meta ? meta : ""), (uInt)meta_len);
	put32(h + 36, (uint32_t)crc);
	e = write_all(w->fd, h, sizeof(h));
	if (!e && meta_len)
		e = write_all(w->fd, meta, meta_len);
	if (e) {
		verror(err, e, "%s: %s", path, strerror(-e));
		outfile_abort(&w->of);
		goto fail;
	}
	*wp = w;
	return 0;
fail:
	free(w->block);
	free(w->zblock);
	ZSTD_freeCCtx(w->zctx);
	free(w->path);
	free(w);
	return e;
}

int capture_flush(struct capture_writer *w, struct vcpustat_error *err)
{
	size_t raw = (size_t)w->count * EV_SIZE, z;
	uint32_t crc;
	int e;

	if (w->sticky)
		return verror(err, w->sticky, "%s: %s", w->path, strerror(-w->sticky));
	if (!w->count)
		return 0;
	crc = (uint32_t)crc32(0, w->block + CAPTURE_BLOCK_HEADER, (uInt)raw);
	/* events compress well (zstd level 1: fast); a block that would not shrink stays raw */
	z = ZSTD_compressCCtx(w->zctx, w->zblock + CAPTURE_BLOCK_HEADER, w->zcap, w->block + CAPTURE_BLOCK_HEADER, raw, 1);
	if (!ZSTD_isError(z) && z < raw) {
		memcpy(w->zblock, "VCBZ", 4);
		put32(w->zblock + 4, w->count);
		put32(w->zblock + 8, crc);
		put32(w->zblock + 12, (uint32_t)z);
		e = write_all(w->fd, w->zblock, CAPTURE_BLOCK_HEADER + z);
	} else {
		memcpy(w->block, "VCBK", 4);
		put32(w->block + 4, w->count);
		put32(w->block + 8, crc);
		put32(w->block + 12, 0);
		e = write_all(w->fd, w->block, CAPTURE_BLOCK_HEADER + raw);
	}
	if (e) {
		w->sticky = e;
		return verror(err, e, "%s: %s", w->path, strerror(-e));
	}
	w->written += w->count;
	w->count = 0;
	return 0;
}

int capture_write(struct capture_writer *w, const struct vcpustat_event *ev, struct vcpustat_error *err)
{
	if (!w->count)
		w->block_start_ts = ev->ts;
	memcpy(w->block + CAPTURE_BLOCK_HEADER + (size_t)w->count * EV_SIZE, ev, EV_SIZE);
	w->count++;
	if (w->count == CAPTURE_BLOCK_EVENTS || ev->ts > w->block_start_ts + 100000000ull)
		return capture_flush(w, err);
	return 0;
}

/* A names block with one line of text. */
static int write_names(struct capture_writer *w, const char *text, int n, struct vcpustat_error *err)
{
	unsigned char bh[CAPTURE_BLOCK_HEADER];
	int e;

	e = capture_flush(w, err); /* names follow the events before them */
	if (e)
		return e;
	if (n <= 0 || n >= 1024)
		return verror(err, -EINVAL, "%s: name too long", w->path);
	memcpy(bh, "VCNM", 4);
	put32(bh + 4, (uint32_t)n);
	put32(bh + 8, (uint32_t)crc32(0, (const Bytef *)text, (uInt)n));
	put32(bh + 12, 0);
	e = write_all(w->fd, bh, sizeof(bh));
	if (!e)
		e = write_all(w->fd, text, (size_t)n);
	if (e) {
		w->sticky = e;
		return verror(err, e, "%s: %s", w->path, strerror(-e));
	}
	return 0;
}

int capture_write_name(struct capture_writer *w, uint32_t tgid, const char *name, struct vcpustat_error *err)
{
	char text[256];

	return write_names(w, text, snprintf(text, sizeof(text), "%u=%s\n", tgid, name), err);
}

int capture_write_thread(struct capture_writer *w, uint32_t tid, uint32_t tgid, const char *name,
			 struct vcpustat_error *err)
{
	char text[256];

	return write_names(w, text, snprintf(text, sizeof(text), "t%u=%u:%s\n", tid, tgid, name), err);
}

int capture_write_cgroup(struct capture_writer *w, uint32_t tid, uint64_t pidns, const char *path,
			 struct vcpustat_error *err)
{
	char text[512];

	return write_names(w, text,
			   snprintf(text, sizeof(text), "c%u=%llu:%.255s\n", tid, (unsigned long long)pidns, path),
			   err);
}

int capture_write_lost(struct capture_writer *w, uint64_t t, uint64_t lost, struct vcpustat_error *err)
{
	char text[256];

	return write_names(w, text,
			   snprintf(text, sizeof(text), "lost=%llu:%llu\n", (unsigned long long)t,
				    (unsigned long long)lost),
			   err);
}

int capture_write_end(struct capture_writer *w, uint64_t end_mono_ns, struct vcpustat_error *err)
{
	char text[256];

	return write_names(w, text, snprintf(text, sizeof(text), "end=%llu\n", (unsigned long long)end_mono_ns),
			   err);
}

uint64_t capture_written(const struct capture_writer *w)
{
	return w->written + w->count;
}

int capture_close(struct capture_writer *w, struct vcpustat_error *err)
{
	int e;

	if (!w)
		return 0;
	e = capture_flush(w, err);
	if (e)
		outfile_abort(&w->of);
	else
		e = outfile_close(&w->of, err);
	free(w->block);
	free(w->zblock);
	ZSTD_freeCCtx(w->zctx);
	free(w->path);
	free(w);
	return e;
}

struct capture_name {
	uint32_t id;   /* VM tgid, or thread tid */
	uint32_t tgid; /* threads: their process */
	bool thread;
	char name[64];
};

struct capture_cgroup {
	uint32_t tid;
	uint64_t pidns;
	char path[256];
};

struct capture_reader {
	FILE *f;
	struct capture_name *names;
	size_t nnames;
	struct capture_cgroup *cgroups;
	size_t ncgroups;
	uint64_t end;
	uint64_t (*lost)[2];
	size_t nlost;
	char *path;
	struct capture_info info;
	char *meta;
	uint64_t off;	    /* of the next unread byte */
	unsigned char *block; /* events of the current block */
	unsigned char *zbuf;  /* its compressed bytes */
	size_t zcap;
	uint32_t count, next;
	uint64_t truncated, truncated_at;
	bool done;
};

/* Parse "tgid=name" lines of a names block. */
static int add_names(struct capture_reader *r, char *text)
{
	char *save = NULL, *line;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '='), *colon;
		struct capture_name *n;

		if (!eq)
			continue;
		if (!strncmp(line, "end=", 4)) {
			r->end = strtoull(line + 4, NULL, 10);
			continue;
		}
		if (!strncmp(line, "lost=", 5)) {
			uint64_t (*l)[2] = realloc(r->lost, (r->nlost + 1) * sizeof(*l));
			char *colon = strchr(line, ':');

			if (!l)
				return -ENOMEM;
			r->lost = l;
			l[r->nlost][0] = strtoull(line + 5, NULL, 10);
			l[r->nlost][1] = colon ? strtoull(colon + 1, NULL, 10) : 0;
			r->nlost++;
			continue;
		}
		if (line[0] == 'c') {
			struct capture_cgroup *c = realloc(r->cgroups, (r->ncgroups + 1) * sizeof(*c));
			char *colon = strchr(eq + 1, ':');

			if (!c)
				return -ENOMEM;
			r->cgroups = c;
			c = &r->cgroups[r->ncgroups++];
			c->tid = (uint32_t)strtoul(line + 1, NULL, 10);
			c->pidns = strtoull(eq + 1, NULL, 10);
			snprintf(c->path, sizeof(c->path), "%s", colon ? colon + 1 : "");
			continue;
		}
		n = realloc(r->names, (r->nnames + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->names = n;
		n = &r->names[r->nnames++];
		memset(n, 0, sizeof(*n));
		n->thread = line[0] == 't';
		n->id = (uint32_t)strtoul(line + n->thread, NULL, 10);
		colon = n->thread ? strchr(eq + 1, ':') : NULL;
		if (colon) {
			n->tgid = (uint32_t)strtoul(eq + 1, NULL, 10);
			eq = colon;
		}
		snprintf(n->name, sizeof(n->name), "%s", eq + 1);
	}
	return 0;
}

/*
 * Walk the blocks from r->off, reading only headers (and names blocks),
 * then come back. Problems are left for capture_next() to report in order.
 */
static int scan_names(struct capture_reader *r, struct vcpustat_error *err)
{
	uint64_t off = r->off;

	for (;;) {
		unsigned char bh[CAPTURE_BLOCK_HEADER];
		uint32_t len;
		char *text;

		if (fseeko(r->f, (off_t)off, SEEK_SET) || fread(bh, 1, sizeof(bh), r->f) != sizeof(bh))
			break;
		len = get32(bh + 4);
		if (!memcmp(bh, "VCBK", 4) && len && len <= CAPTURE_MAX_BLOCK) {
			off += CAPTURE_BLOCK_HEADER + (uint64_t)len * EV_SIZE;
			continue;
		}
		if (!memcmp(bh, "VCBZ", 4) && len && len <= CAPTURE_MAX_BLOCK) {
			off += CAPTURE_BLOCK_HEADER + (uint64_t)get32(bh + 12);
			continue;
		}
		if (memcmp(bh, "VCNM", 4) || !len || len > CAPTURE_MAX_META)
			break;
		text = calloc(1, (size_t)len + 1);
		if (!text)
			return verror(err, -ENOMEM, "%s: out of memory", r->path);
		if (fread(text, 1, len, r->f) != len ||
		    (uint32_t)crc32(0, (const Bytef *)text, len) != get32(bh + 8) || add_names(r, text)) {
			free(text);
			break;
		}
		free(text);
		off += CAPTURE_BLOCK_HEADER + len;
	}
	if (fseeko(r->f, (off_t)r->off, SEEK_SET))
		return verror(err, -errno, "%s: %s", r->path, strerror(errno));
	return 0;
}

const char *capture_vm_name(const struct capture_reader *r, uint32_t tgid)
{
	for (size_t i = r->nnames; i-- > 0;)
		if (!r->names[i].thread && r->names[i].id == tgid)
			return r->names[i].name;
	return NULL;
}

const char *capture_thread_name(const struct capture_reader *r, uint32_t tid, uint32_t *tgid)
{
	for (size_t i = r->nnames; i-- > 0;)
		if (r->names[i].thread && r->names[i].id == tid) {
			*tgid = r->names[i].tgid;
			return r->names[i].name;
		}
	return NULL;
}

const char *capture_thread_cgroup(const struct capture_reader *r, uint32_t tid, uint64_t *pidns)
{
	for (size_t i = r->ncgroups; i-- > 0;)
		if (r->cgroups[i].tid == tid) {
			*pidns = r->cgroups[i].pidns;
			return r->cgroups[i].path;
		}
	return NULL;
}

static const char *recorder_cgroup(void *ctx, uint32_t tid, uint64_t *pidns)
{
	return capture_thread_cgroup(ctx, tid, pidns);
}

static const char *recorder_vm_name(void *ctx, uint32_t tgid)
{
	return capture_vm_name(ctx, tgid);
}

static const char *recorder_thread_name(void *ctx, uint32_t tid, uint32_t *tgid)
{
	return capture_thread_name(ctx, tid, tgid);
}

void capture_name_recorder(struct capture_reader *r, struct recorder_opts *ro)
{
	ro->vm_name = recorder_vm_name;
	ro->thread_name = recorder_thread_name;
	ro->cgroup = recorder_cgroup;
	ro->ctx = r;
}

const uint64_t (*capture_lost(const struct capture_reader *r, size_t *n))[2]
{
	*n = r->nlost;
	return (const uint64_t (*)[2])r->lost;
}

uint64_t capture_end(const struct capture_reader *r)
{
	return r->end;
}

int capture_open(struct capture_reader **rp, const char *path, struct vcpustat_error *err)
{
	unsigned char h[CAPTURE_HEADER_SIZE];
	struct capture_reader *r;
	struct stat st;
	uint32_t meta_len;
	uLong crc;
	int e;

	*rp = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return verror(err, -ENOMEM, "%s: out of memory", path);
	r->path = strdup(path);
	e = open_input(path, false, err); /* read in order: a pipe is fine, a FIFO no one writes is empty */
	if (e < 0)
		goto fail;
	r->f = fdopen(e, "rb");
	if (!r->f) {
		close(e);
		e = verror(err, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fileno(r->f), &st) == 0)
		r->info.file_size = (uint64_t)st.st_size;
	if (fread(h, 1, sizeof(h), r->f) != sizeof(h)) {
		e = verror(err, -EBADMSG, "%s: offset 0: too short for a capture header (%llu bytes)", path,
			   (unsigned long long)r->info.file_size);
		goto fail;
	}
	if (memcmp(h, CAPTURE_MAGIC, 8)) {
		e = verror(err, -EBADMSG, "%s: offset 0: not a vcpustat capture (bad magic)", path);
		goto fail;
	}
	r->info.version = get32(h + 8);
	if (r->info.version != CAPTURE_VERSION) {
		e = verror(err, -EPROTONOSUPPORT, "%s: offset 8: capture version %u, this vcpustat reads version %u",
			   path, r->info.version, CAPTURE_VERSION);
		goto fail;
	}
	if (get32(h + 12) != EV_SIZE) {
		e = verror(err, -EBADMSG, "%s: offset 12: event size %u, expected %zu", path, get32(h + 12), EV_SIZE);
		goto fail;
	}
	meta_len = get32(h + 32);
	if (meta_len > CAPTURE_MAX_META) {
		e = verror(err, -EBADMSG, "%s: offset 32: metadata length %u is too large", path, meta_len);
		goto fail;
	}
	r->meta = calloc(1, meta_len + 1);
	if (!r->meta) {
		e = verror(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	if (fread(r->meta, 1, meta_len, r->f) != meta_len) {
		e = verror(err, -EBADMSG, "%s: offset %d: metadata cut short", path, CAPTURE_HEADER_SIZE);
		goto fail;
	}
	crc = crc32(0, h, 36);
	crc = crc32(crc, (const Bytef *)r->meta, meta_len);
	if ((uint32_t)crc != get32(h + 36)) {
		e = verror(err, -EBADMSG, "%s: offset 36: header checksum mismatch", path);
		goto fail;
	}
	r->info.mono_start_ns = get64(h + 16);
	r->info.real_start_ns = get64(h + 24);
	r->info.meta = r->meta;
	r->off = CAPTURE_HEADER_SIZE + meta_len;
	e = scan_names(r, err);
	if (e)
		goto fail;
	r->block = malloc((size_t)CAPTURE_MAX_BLOCK * EV_SIZE);
	if (!r->block) {
		e = verror(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	*rp = r;
	return 0;
fail:
	capture_close_reader(r);
	return e;
}

const struct capture_info *capture_get_info(const struct capture_reader *r)
{
	return &r->info;
}

/* The rest of the file from r->off is a partial block: note it and end. */
static int truncated(struct capture_reader *r)
{
	r->truncated = r->info.file_size > r->off ? r->info.file_size - r->off : 0;
	r->truncated_at = r->off;
	r->done = true;
	return 0;
}

static int read_block(struct capture_reader *r, struct vcpustat_error *err)
{
	unsigned char bh[CAPTURE_BLOCK_HEADER];
	size_t got, want, stored;
	uint32_t count;
	bool compressed;

again:
	got = fread(bh, 1, sizeof(bh), r->f);
	if (got == 0 && feof(r->f)) {
		r->done = true;
		return 0;
	}
	if (got < sizeof(bh))
		return truncated(r);
	if (!memcmp(bh, "VCNM", 4)) { /* names: read at open; check and skip */
		uint32_t len = get32(bh + 4);
		char *text;

		if (!len || len > CAPTURE_MAX_META)
			return verror(err, -EBADMSG, "%s: offset %llu: bad names block length %u", r->path,
				      (unsigned long long)r->off + 4, len);
		text = malloc(len);
		if (!text)
			return verror(err, -ENOMEM, "%s: out of memory", r->path);
		got = fread(text, 1, len, r->f);
		if (got < len) {
			free(text);
			return truncated(r);
		}
		if ((uint32_t)crc32(0, (const Bytef *)text, len) != get32(bh + 8)) {
			free(text);
			return verror(err, -EBADMSG, "%s: offset %llu: names block checksum mismatch", r->path,
				      (unsigned long long)r->off);
		}
		free(text);
		r->off += CAPTURE_BLOCK_HEADER + len;
		goto again;
	}
	compressed = !memcmp(bh, "VCBZ", 4);
	if (!compressed && memcmp(bh, "VCBK", 4))
		return verror(err, -EBADMSG, "%s: offset %llu: bad block magic", r->path, (unsigned long long)r->off);
	count = get32(bh + 4);
	if (count == 0 || count > CAPTURE_MAX_BLOCK)
		return verror(err, -EBADMSG, "%s: offset %llu: bad block event count %u", r->path,
			      (unsigned long long)r->off + 4, count);
	want = (size_t)count * EV_SIZE;
	stored = want;
	if (compressed) {
		size_t zlen = get32(bh + 12), n;

		if (!zlen || zlen > ZSTD_compressBound(want))
			return verror(err, -EBADMSG, "%s: offset %llu: bad compressed block length %zu", r->path,
				      (unsigned long long)r->off + 12, zlen);
		if (zlen > r->zcap) {
			unsigned char *z = realloc(r->zbuf, zlen);

			if (!z)
				return verror(err, -ENOMEM, "%s: out of memory", r->path);
			r->zbuf = z;
			r->zcap = zlen;
		}
		got = fread(r->zbuf, 1, zlen, r->f);
		if (got < zlen) {
			if (ferror(r->f))
				return verror(err, -EIO, "%s: offset %llu: read error", r->path,
					      (unsigned long long)r->off);
			return truncated(r);
		}
		n = ZSTD_decompress(r->block, want, r->zbuf, zlen);
		if (ZSTD_isError(n) || n != want)
			return verror(err, -EBADMSG, "%s: offset %llu: compressed block does not decompress to %u events",
				      r->path, (unsigned long long)r->off, count);
		stored = zlen;
	} else {
		got = fread(r->block, 1, want, r->f);
		if (got < want) {
			if (ferror(r->f))
				return verror(err, -EIO, "%s: offset %llu: read error", r->path,
					      (unsigned long long)r->off);
			return truncated(r);
		}
	}
	if ((uint32_t)crc32(0, r->block, (uInt)want) != get32(bh + 8))
		return verror(err, -EBADMSG, "%s: offset %llu: block checksum mismatch (block of %u events)", r->path,
			      (unsigned long long)r->off, count);
	r->off += CAPTURE_BLOCK_HEADER + stored;
	r->count = count;
	r->next = 0;
	return 1;
}

int capture_next(struct capture_reader *r, struct vcpustat_event *ev, struct vcpustat_error *err)
{
	while (r->next >= r->count) {
		int e;

		if (r->done)
			return 0;
		e = read_block(r, err);
		if (e <= 0)
			return e;
	}
	memcpy(ev, r->block + (size_t)r->next * EV_SIZE, EV_SIZE);
	r->next++;
	return 1;
}

uint64_t capture_truncated(const struct capture_reader *r, uint64_t *offset)
{
	if (offset)
		*offset = r->truncated_at;
	return r->truncated;
}

void capture_close_reader(struct capture_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	free(r->block);
	free(r->zbuf);
	free(r->meta);
	free(r->names);
	free(r->cgroups);
	free(r->lost);
	free(r->path);
	free(r);
}
