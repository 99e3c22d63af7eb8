/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sht_format.h - the on-disk layout of docs/sht-format.md (constants, field
 * offsets) and the record codec shared by the writer and the readers.
 * Internal to user/sht/.
 */
#ifndef VCPUSTAT_SHT_FORMAT_H
#define VCPUSTAT_SHT_FORMAT_H

#include <stdint.h>
#include <string.h>
#include "util/util.h"

#define SHT_MAGIC "vcpuSHT\n" /* 8 bytes at offset 0 */
#define SHT_HDR_SIZE 64	      /* fixed part of the file header */
#define SHT_CLOSE_SIZE 64     /* close record, last bytes of block 0 */
#define SHT_CLOSE_MAGIC 0x63544853u /* "SHTc" */
#define SHT_NODE_MAGIC 0x6e544853u  /* "SHTn" */
#define SHT_NODE_HDR 64
#define SHT_TABLE_ENTRY 12
#define SHT_SKIP_EVERY 64
#define SHT_MAX_HEIGHT 31
#define SHT_NONE32 0xffffffffu
#define SHT_MIN_NODE (4u << 10)
#define SHT_MAX_NODE (1u << 20)
#define SHT_MAX_REC 48 /* upper bound of one encoded interval record (+ journal height) */
#define SHT_NODE_CONT 4	      /* kind of a continuation block */
#define SHT_MAX_BLOCKS 65535u /* blocks of one node */
#define SHT_MIN_FANOUT 4      /* a core splits for lack of room only with this many children */

/* file header offsets */
enum {
	FH_MAGIC = 0,
	FH_VERSION = 8,
	FH_CRC = 12,
	FH_LEN = 16,
	FH_NODE_SIZE = 20,
	FH_MAX_CHILDREN = 24,
	FH_FLAGS = 28,
	FH_TREE_START = 32,
	FH_MONO = 40,
	FH_REAL = 48,
	FH_NMETA = 56,
};

/* close record offsets (relative to node_size - 64) */
enum {
	CR_MAGIC = 0,
	CR_CRC = 4,
	CR_FILE_SIZE = 8,
	CR_FOOTER_INDEX = 16,
	CR_FOOTER_NODES = 20,
	CR_END = 24,
};

/* node header offsets */
enum {
	NH_MAGIC = 0,
	NH_CRC = 4,
	NH_KIND = 8,
	NH_HEIGHT = 9,
	NH_FLAGS = 10,
	NH_INDEX = 12,
	NH_SEQ = 16,
	NH_PARENT = 20,
	NH_START = 24,
	NH_END = 32,
	NH_NINTERVALS = 40,
	NH_NTABLE = 44,
	NH_NBLOCKS = 46,
	NH_DEFS_LEN = 48,
	NH_JOURNAL_LEN = 52,
	NH_INTERVALS_LEN = 56,
	NH_SKIP_LEN = 60,
};

#define SHT_FOOTER_LAST 0x1u
#define SHT_FOOTER_RECOVERED 0x1u


/* definition record kinds */
#define SHT_DEF_ATTR 0x01
#define SHT_DEF_STRING 0x02

/* value tags */
#define SHT_TAG_SMALL_MAX 0x3f
#define SHT_TAG_INT 0x40
#define SHT_TAG_STR 0x41

/* Little-endian fields: get16/32/64, put16/32/64 (util/util.h, one policy for all our files). */

/* ---- varints (unsigned LEB128) ---- */

static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Decode one varint from [*p, end); 0 on success, -1 if truncated or longer than 64 bits. */
static inline int varint_get(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t r = 0;
	unsigned int shift = 0;

	if (p < end && *p < 0x80) { /* the common one-byte case */
		*v = *p;
		*pp = p + 1;
		return 0;
	}
	while (p < end) {
		uint8_t b = *p++;

		if (shift == 63 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			*pp = p;
			return 0;
		}
		shift += 7;
		if (shift > 63)
			return -1;
	}
	return -1;
}

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- interval records ---- */

/* A decoded record: value kind SHT_INT (i) or SHT_STR (i = string id). */
struct sht_rec {
	uint32_t attr;
	uint8_t type;
	uint64_t start, end;
	int64_t i;
};

/* Encode r after a chain whose previous end is prev_end (<= r->end); returns bytes. */
static inline size_t rec_put(uint8_t *p, uint64_t prev_end, const struct sht_rec *r)
{
	size_t n = varint_put(p, r->end - prev_end);

	n += varint_put(p + n, r->end - r->start);
	n += varint_put(p + n, r->attr);
	if (r->type == 1 /* SHT_INT */) {
		if (r->i >= 0 && r->i <= SHT_TAG_SMALL_MAX) {
			p[n++] = (uint8_t)r->i;
		} else {
			p[n++] = SHT_TAG_INT;
			n += varint_put(p + n, zigzag(r->i));
		}
	} else {
		p[n++] = SHT_TAG_STR;
		n += varint_put(p + n, (uint64_t)r->i);
	}
	return n;
}

/*
 * One varint with no bound check: the caller knows that 10 bytes are
 * readable. Sets *bad if it is longer than 64 bits.
 */
static inline uint64_t varint_fast(const uint8_t **pp, int *bad)
{
	const uint8_t *p = *pp;
	uint64_t r = 0, b;
	unsigned int shift;

	for (shift = 0; shift < 63; shift += 7) { /* unrolled by the compiler: at most 9 rounds */
		b = *p++;
		r |= (b & 0x7f) << shift;
		if (b < 0x80) {
			*pp = p;
			return r;
		}
	}
	b = *p++; /* the 10th byte holds bit 63 only */
	if (b > 1)
		*bad = 1;
	*pp = p;
	return r | b << 63;
}

/* Bytes a record can take at most, even malformed: four 10-byte varints and the tag. */
#define SHT_REC_FAST_MARGIN 41

/*
 * Decode one record from [*pp, end) after prev_end; checks that the numbers
 * are well-formed (no overflow) but not ranges. 0 on success, -1 if corrupt.
 */
static inline int rec_get(const uint8_t **pp, const uint8_t *end, uint64_t prev_end, struct sht_rec *r)
{
	uint64_t de, dur, attr, v;
	const uint8_t *p = *pp;
	uint8_t tag;
	int bad = 0;

	if (end - p >= SHT_REC_FAST_MARGIN) { /* the common case: no bound checks */
		de = varint_fast(&p, &bad);
		dur = varint_fast(&p, &bad);
		attr = varint_fast(&p, &bad);
		tag = *p++;
		if (bad || de > UINT64_MAX - prev_end || attr >= SHT_NONE32)
			return -1;
		r->end = prev_end + de;
		if (dur > r->end)
			return -1;
		r->start = r->end - dur;
		r->attr = (uint32_t)attr;
		if (tag <= SHT_TAG_SMALL_MAX) {
			r->type = 1;
			r->i = tag;
		} else if (tag == SHT_TAG_INT) {
			r->type = 1;
			r->i = unzigzag(varint_fast(&p, &bad));
		} else if (tag == SHT_TAG_STR) {
			v = varint_fast(&p, &bad);
			if (v >= SHT_NONE32)
				return -1;
			r->type = 2;
			r->i = (int64_t)v;
		} else {
			return -1;
		}
		if (bad)
			return -1;
		*pp = p;
		return 0;
	}
	if (varint_get(&p, end, &de) || varint_get(&p, end, &dur) || varint_get(&p, end, &attr) || p >= end)
		return -1;
	if (de > UINT64_MAX - prev_end || attr >= SHT_NONE32)
		return -1;
	r->end = prev_end + de;
	if (dur > r->end)
		return -1;
	r->start = r->end - dur;
	r->attr = (uint32_t)attr;
	tag = *p++;
	if (tag <= SHT_TAG_SMALL_MAX) {
		r->type = 1;
		r->i = tag;
	} else if (tag == SHT_TAG_INT) {
		if (varint_get(&p, end, &v))
			return -1;
		r->type = 1;
		r->i = unzigzag(v);
	} else if (tag == SHT_TAG_STR) {
		if (varint_get(&p, end, &v) || v >= SHT_NONE32)
			return -1;
		r->type = 2;
		r->i = (int64_t)v;
	} else {
		return -1;
	}
	*pp = p;
	return 0;
}

#endif
