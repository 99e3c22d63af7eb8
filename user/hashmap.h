/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hashmap.h - a small open-addressing hash table with fixed-size keys and
 * values, the user-space twin of a BPF hash map (replay, reports).
 * Values are stored inline; pointers returned stay valid until the next
 * insert (which may grow the table) or delete.
 */
#ifndef VCPUSTAT_HASHMAP_H
#define VCPUSTAT_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>

struct hashmap {
	size_t key_size, value_size;
	size_t max_entries; /* inserts fail with -E2BIG beyond this (0: no limit) */
	size_t count, tombstones, cap;
	unsigned char *slots; /* cap * (1 + key_size + value_size), state byte first */
};

int hashmap_init(struct hashmap *m, size_t key_size, size_t value_size, size_t max_entries);
void hashmap_free(struct hashmap *m);
void *hashmap_lookup(const struct hashmap *m, const void *key);
/* Insert key with value (NULL: zeroed) unless present: 0, -EEXIST, -E2BIG or -ENOMEM. */
int hashmap_insert(struct hashmap *m, const void *key, const void *value);
/* Insert or overwrite. */
int hashmap_update(struct hashmap *m, const void *key, const void *value);
int hashmap_delete(struct hashmap *m, const void *key);
/* Iterate: start with *pos = 0; returns false at the end. */
bool hashmap_next(const struct hashmap *m, size_t *pos, void **key, void **value);

#endif
