/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sht_internal.h - helpers shared by the SHT writer, reader and checker:
 * a name table ((parent, name) -> id), a growable byte buffer, and the
 * encoders of definition records and footers. Internal to user/sht/.
 */
#ifndef VCPUSTAT_SHT_INTERNAL_H
#define VCPUSTAT_SHT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Names keyed by (parent, bytes); ids are 0, 1, 2, ... in insertion order. */
struct sht_strtab {
	uint32_t *slots; /* open addressing, id or UINT32_MAX */
	uint32_t nslots; /* power of two */
	uint32_t count, cap;
	const char **keys;
	uint32_t *lens, *parents;
	bool owned; /* free the keys with the table */
};

int strtab_init(struct sht_strtab *t);
void strtab_free(struct sht_strtab *t);
/* The id of (parent, key[0..len)), or UINT32_MAX. */
uint32_t strtab_find(const struct sht_strtab *t, uint32_t parent, const char *key, size_t len);
/* Add (parent, key) as id t->count (id must equal it); key must stay valid. 0 or -ENOMEM. */
int strtab_add(struct sht_strtab *t, uint32_t parent, const char *key, size_t len, uint32_t id);

struct sht_buf {
	uint8_t *p;
	size_t len, cap;
};

int buf_put(struct sht_buf *b, const void *data, size_t len);

/* Definition records (docs/sht-format.md 3.2). parent: SHT_NO_ATTR for top level. */
int sht_def_attr(struct sht_buf *b, uint32_t id, uint32_t parent, const char *name);
int sht_def_string(struct sht_buf *b, uint32_t id, const char *s, size_t len);

/* The fixed part of the footer stream (section 6). */
#define SHT_FOOTER_FIXED_LEN 64
int sht_footer_encode(struct sht_buf *b, uint32_t root, uint32_t nodes, uint64_t start, uint64_t end, uint64_t horizon,
		      uint32_t flags, uint32_t nattrs, uint32_t nstrings, uint64_t nintervals, uint64_t nclamped);
/* Fill block (node_size bytes) as footer node index / part with data[0..len). */
void sht_footer_block(uint8_t *block, uint32_t node_size, uint32_t index, uint32_t part, const uint8_t *data,
		      size_t len, bool last);

/*
 * Lay out a node as blocks: node is the head's 64-byte header followed by the
 * node's content (content_len bytes: table, sections). Writes *nblocks blocks
 * of node_size bytes at out (room for sht_node_nblocks() of them), numbered
 * from first_index, each with its CRC; sets the head's nblocks field.
 */
uint32_t sht_node_nblocks(size_t content_len, uint32_t node_size);
void sht_node_blocks(const uint8_t *node, size_t content_len, uint32_t node_size, uint32_t first_index, uint8_t *out);

#endif
