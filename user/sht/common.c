// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Helpers shared by the SHT writer, reader and checker (sht_internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "sht.h"
#include "sht_format.h"
#include "sht_internal.h"

static uint64_t name_hash(uint32_t parent, const char *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ parent; /* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)key[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

int strtab_init(struct sht_strtab *t)
{
	memset(t, 0, sizeof(*t));
	t->nslots = 64;
	t->slots = malloc(t->nslots * sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	memset(t->slots, 0xff, t->nslots * sizeof(*t->slots));
	return 0;
}

void strtab_free(struct sht_strtab *t)
{
	uint32_t i;

	if (t->owned)
		for (i = 0; i < t->count; i++)
			free((char *)t->keys[i]);
	free(t->slots);
	free(t->keys);
	free(t->lens);
	free(t->parents);
	memset(t, 0, sizeof(*t));
}

uint32_t strtab_find(const struct sht_strtab *t, uint32_t parent, const char *key, size_t len)
{
	uint32_t mask = t->nslots - 1, i, id;

	if (!t->slots)
		return UINT32_MAX;
	for (i = (uint32_t)name_hash(parent, key, len) & mask;; i = (i + 1) & mask) {
		id = t->slots[i];
		if (id == UINT32_MAX)
			return UINT32_MAX;
		if (t->parents[id] == parent && t->lens[id] == len && !memcmp(t->keys[id], key, len))
			return id;
	}
}

static void slot_insert(struct sht_strtab *t, uint32_t id)
{
	uint32_t mask = t->nslots - 1, i;

	for (i = (uint32_t)name_hash(t->parents[id], t->keys[id], t->lens[id]) & mask; t->slots[i] != UINT32_MAX;
	     i = (i + 1) & mask)
		;
	t->slots[i] = id;
}

int strtab_add(struct sht_strtab *t, uint32_t parent, const char *key, size_t len, uint32_t id)
{
	uint32_t i;

	if (id != t->count || !t->slots)
		return -EINVAL;
	if (t->count == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		const char **keys = realloc(t->keys, cap * sizeof(*keys));
		uint32_t *lens, *parents;

		if (!keys)
			return -ENOMEM;
		t->keys = keys;
		lens = realloc(t->lens, cap * sizeof(*lens));
		if (!lens)
			return -ENOMEM;
		t->lens = lens;
		parents = realloc(t->parents, cap * sizeof(*parents));
		if (!parents)
			return -ENOMEM;
		t->parents = parents;
		t->cap = cap;
	}
	if ((uint64_t)(t->count + 1) * 2 > t->nslots) {
		uint32_t *slots = malloc((size_t)t->nslots * 2 * sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		free(t->slots);
		t->slots = slots;
		t->nslots *= 2;
		memset(t->slots, 0xff, t->nslots * sizeof(*t->slots));
		for (i = 0; i < t->count; i++)
			slot_insert(t, i);
	}
	t->keys[id] = key;
	t->lens[id] = (uint32_t)len;
	t->parents[id] = parent;
	t->count++;
	slot_insert(t, id);
	return 0;
}

int buf_put(struct sht_buf *b, const void *data, size_t len)
{
	if (!len)
		return 0;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap < b->len + len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

int sht_def_attr(struct sht_buf *b, uint32_t id, uint32_t parent, const char *name)
{
	uint8_t d[24];
	size_t n = 0, len = strlen(name);

	d[n++] = SHT_DEF_ATTR;
	n += varint_put(d + n, id);
	n += varint_put(d + n, parent == SHT_NO_ATTR ? 0 : (uint64_t)parent + 1);
	d[n++] = (uint8_t)len;
	if (buf_put(b, d, n) || buf_put(b, name, len))
		return -ENOMEM;
	return 0;
}

int sht_def_string(struct sht_buf *b, uint32_t id, const char *s, size_t len)
{
	uint8_t d[24];
	size_t n = 0;

	d[n++] = SHT_DEF_STRING;
	n += varint_put(d + n, id);
	n += varint_put(d + n, len);
	if (buf_put(b, d, n) || buf_put(b, s, len))
		return -ENOMEM;
	return 0;
}

int sht_footer_encode(struct sht_buf *b, uint32_t root, uint32_t nodes, uint64_t start, uint64_t end, uint64_t horizon,
		      uint32_t flags, uint32_t nattrs, uint32_t nstrings, uint64_t nintervals, uint64_t nclamped)
{
	uint8_t f[SHT_FOOTER_FIXED_LEN] = { 0 };

	put32(f + 0, root);
	put32(f + 4, nodes);
	put64(f + 8, start);
	put64(f + 16, end);
	put64(f + 24, horizon);
	put32(f + 32, flags);
	put32(f + 36, nattrs);
	put32(f + 40, nstrings);
	put64(f + 48, nintervals);
	put64(f + 56, nclamped);
	return buf_put(b, f, sizeof(f));
}

void sht_footer_block(uint8_t *block, uint32_t node_size, uint32_t index, uint32_t part, const uint8_t *data,
		      size_t len, bool last)
{
	memset(block, 0, node_size);
	put32(block + NH_MAGIC, SHT_NODE_MAGIC);
	block[NH_KIND] = SHT_NODE_FOOTER;
	put16(block + NH_FLAGS, last ? SHT_FOOTER_LAST : 0);
	put16(block + NH_NBLOCKS, 1);
	put32(block + NH_INDEX, index);
	put32(block + NH_SEQ, part);
	put32(block + NH_PARENT, SHT_NONE32);
	put32(block + NH_DEFS_LEN, (uint32_t)len);
	memcpy(block + SHT_NODE_HDR, data, len);
	put32(block + NH_CRC, (uint32_t)crc32(0, block + 8, node_size - 8));
}

uint32_t sht_node_nblocks(size_t content_len, uint32_t node_size)
{
	size_t payload = node_size - SHT_NODE_HDR;

	return content_len ? (uint32_t)((content_len + payload - 1) / payload) : 1;
}

void sht_node_blocks(const uint8_t *node, size_t content_len, uint32_t node_size, uint32_t first_index, uint8_t *out)
{
	size_t payload = node_size - SHT_NODE_HDR, off = 0, chunk;
	uint32_t n = sht_node_nblocks(content_len, node_size), i;

	for (i = 0; i < n; i++, off += chunk) {
		uint8_t *b = out + (size_t)i * node_size;

		chunk = content_len - off < payload ? content_len - off : payload;
		memset(b, 0, node_size);
		if (i == 0) {
			memcpy(b, node, SHT_NODE_HDR);
			put16(b + NH_NBLOCKS, (uint16_t)n);
		} else {
			put32(b + NH_MAGIC, SHT_NODE_MAGIC);
			b[NH_KIND] = SHT_NODE_CONT;
			b[NH_HEIGHT] = node[NH_HEIGHT];
			put32(b + NH_SEQ, get32(node + NH_SEQ));
			put32(b + NH_PARENT, first_index); /* its head */
			put64(b + NH_START, get64(node + NH_START));
			put64(b + NH_END, get64(node + NH_END));
		}
		put32(b + NH_INDEX, first_index + i);
		memcpy(b + SHT_NODE_HDR, node + SHT_NODE_HDR + off, chunk);
		put32(b + NH_CRC, (uint32_t)crc32(0, b + 8, node_size - 8));
	}
}
