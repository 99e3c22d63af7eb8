// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

enum { SLOT_EMPTY = 0, SLOT_FULL, SLOT_DEAD };

/* A slot: a state word, the key, the value; each part 8-byte aligned. */
#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

static size_t key_off(void)
{
	return 8;
}

static size_t value_off(const struct hashmap *m)
{
	return 8 + ALIGN8(m->key_size);
}

static size_t slot_size(const struct hashmap *m)
{
	return value_off(m) + ALIGN8(m->value_size);
}

static unsigned char *slot(const struct hashmap *m, size_t i)
{
	return m->slots + i * slot_size(m);
}

/* FNV-1a over the key bytes, then a final mix; 4-byte keys (tids) by one multiplication. */
static uint64_t hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ull;

	if (n == 4) {
		uint32_t x;

		memcpy(&x, key, 4);
		h = (uint64_t)x * 0x9e3779b97f4a7c15ull;
		return h ^ (h >> 32);
	}

	while (n--)
		h = (h ^ *p++) * 1099511628211ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

int hashmap_init(struct hashmap *m, size_t key_size, size_t value_size, size_t max_entries)
{
	memset(m, 0, sizeof(*m));
	m->key_size = key_size;
	m->value_size = value_size;
	m->max_entries = max_entries;
	m->cap = 16;
	m->slots = calloc(m->cap, slot_size(m));
	return m->slots ? 0 : -ENOMEM;
}

void hashmap_free(struct hashmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* Key equality; the common 4- and 8-byte keys (tids, ids) without a call to memcmp. */
static inline bool key_eq(const void *a, const void *b, size_t n)
{
	if (n == 4) {
		uint32_t x, y;

		memcpy(&x, a, 4);
		memcpy(&y, b, 4);
		return x == y;
	}
	if (n == 8) {
		uint64_t x, y;

		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		return x == y;
	}
	return !memcmp(a, b, n);
}

/* Index of key's slot, or of the slot where it would go (*found false). */
static size_t find(const struct hashmap *m, const void *key, bool *found)
{
	size_t i = hash(key, m->key_size) & (m->cap - 1), first_dead = SIZE_MAX;

	for (;;) {
		unsigned char *s = slot(m, i);

		if (s[0] == SLOT_EMPTY) {
			*found = false;
			return first_dead != SIZE_MAX ? first_dead : i;
		}
		if (s[0] == SLOT_DEAD) {
			if (first_dead == SIZE_MAX)
				first_dead = i;
		} else if (key_eq(s + key_off(), key, m->key_size)) {
			*found = true;
			return i;
		}
		i = (i + 1) & (m->cap - 1);
	}
}

static int grow(struct hashmap *m)
{
	struct hashmap bigger = *m;
	size_t i;

	bigger.cap = m->count * 4 > m->cap ? m->cap * 2 : m->cap; /* rehash in place when mostly tombstones */
	bigger.slots = calloc(bigger.cap, slot_size(m));
	if (!bigger.slots)
		return -ENOMEM;
	bigger.count = 0;
	bigger.tombstones = 0;
	for (i = 0; i < m->cap; i++) {
		unsigned char *s = slot(m, i);
		bool found;

		if (s[0] != SLOT_FULL)
			continue;
		memcpy(slot(&bigger, find(&bigger, s + key_off(), &found)), s, slot_size(m));
		bigger.count++;
	}
	free(m->slots);
	*m = bigger;
	return 0;
}

void *hashmap_lookup(const struct hashmap *m, const void *key)
{
	bool found;
	size_t i = find(m, key, &found);

	return found ? slot(m, i) + value_off(m) : NULL;
}

static int put(struct hashmap *m, const void *key, const void *value, bool overwrite)
{
	unsigned char *s;
	bool found;
	size_t i;
	int err;

	i = find(m, key, &found);
	if (found && !overwrite)
		return -EEXIST;
	if (!found) {
		if (m->max_entries && m->count >= m->max_entries)
			return -E2BIG;
		if ((m->count + m->tombstones + 1) * 4 > m->cap * 3) {
			err = grow(m);
			if (err)
				return err;
			i = find(m, key, &found);
		}
		s = slot(m, i);
		if (s[0] == SLOT_DEAD)
			m->tombstones--;
		s[0] = SLOT_FULL;
		memcpy(s + key_off(), key, m->key_size);
		m->count++;
	}
	s = slot(m, i);
	if (value)
		memcpy(s + value_off(m), value, m->value_size);
	else
		memset(s + value_off(m), 0, m->value_size);
	return 0;
}

int hashmap_insert(struct hashmap *m, const void *key, const void *value)
{
	return put(m, key, value, false);
}

int hashmap_update(struct hashmap *m, const void *key, const void *value)
{
	return put(m, key, value, true);
}

int hashmap_delete(struct hashmap *m, const void *key)
{
	bool found;
	size_t i = find(m, key, &found);

	if (!found)
		return -ENOENT;
	slot(m, i)[0] = SLOT_DEAD;
	m->count--;
	m->tombstones++;
	return 0;
}

bool hashmap_next(const struct hashmap *m, size_t *pos, void **key, void **value)
{
	for (; *pos < m->cap; (*pos)++) {
		unsigned char *s = slot(m, *pos);

		if (s[0] != SLOT_FULL)
			continue;
		*key = s + key_off();
		*value = s + value_off(m);
		(*pos)++;
		return true;
	}
	return false;
}
