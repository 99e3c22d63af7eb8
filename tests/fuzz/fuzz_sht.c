// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness for SHT files: arbitrary bytes are checked (sht_check_mem),
 * opened (sht_open_mem) and queried (attributes, stabbing, ranges, times).
 * Inputs of odd length first get every checksum recomputed, so that the
 * decoders behind the CRCs are exercised too; those are also repaired (in a
 * memfd) and read again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include "sht/sht.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Recompute the header, close record and node CRCs (docs/sht-format.md). */
static void fix_crcs(uint8_t *d, size_t n)
{
	uint32_t ns;
	size_t off;

	if (n < 64)
		return;
	ns = le32(d + 20);
	if (ns < 4096 || ns > (1u << 20) || (ns & (ns - 1)) || n < ns)
		return;
	put_le32(d + 12, (uint32_t)crc32(0, d + 16, ns - 64 - 16));
	put_le32(d + ns - 64 + 4, (uint32_t)crc32(0, d + ns - 64 + 8, 56));
	for (off = ns; off + ns <= n; off += ns)
		put_le32(d + off + 4, (uint32_t)crc32(0, d + off + 8, ns - 8));
}

static void exercise(struct sht_reader *r, const uint8_t *data, size_t size)
{
	const struct sht_info *in = sht_get_info(r);
	uint32_t n = sht_nattrs(r), a, id;
	struct sht_interval *out = calloc(n ? n : 1, sizeof(*out)), *iv;
	struct vcpustat_error err;
	uint64_t t, span = in->end - in->start + 1;
	size_t cnt, i;
	char buf[64];

	for (a = 0; a < n; a++) { /* the attribute tree */
		const char *p = sht_attr_path(r, a);

		if (sht_attr_lookup(r, p, &id) || id != a)
			abort();
		(void)sht_attr_first_child(r, a);
		(void)sht_attr_next_sibling(r, a);
	}
	for (i = 0; i < 8; i++) {
		t = in->start + (size > i * 8 + 8 ? le32(data + i * 8) : i * 1000) % span;
		if (out)
			sht_query_at(r, t, NULL, out, &err);
		if (sht_query_range(r, n ? (uint32_t)(t % n) : SHT_NO_ATTR, NULL, t, t + span / 4, &iv, &cnt, &err) == 0)
			free(iv);
	}
	if (sht_query_range(r, SHT_NO_ATTR, NULL, 0, UINT64_MAX, &iv, &cnt, &err) == 0)
		free(iv);
	sht_set_cache(r, 0);
	if (out)
		sht_query_at(r, in->start + span / 2, NULL, out, &err);
	sht_parse_time(r, "14:03:07.5", &t, &err);
	sht_parse_time(r, "2026-11-22T14:03:07.123Z", &t, &err);
	sht_format_wall(r, in->end, true, buf, sizeof(buf));
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sht_check_report rep;
	struct vcpustat_error err;
	struct sht_reader *r;
	uint8_t *copy = malloc(size ? size : 1);
	bool fixed = size % 2;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (fixed)
		fix_crcs(copy, size);
	sht_check_mem("fuzz.sht", copy, size, &rep, &err);
	if (sht_open_mem(&r, "fuzz.sht", copy, size, &err) == 0) {
		exercise(r, copy, size);
		sht_close(r);
	}
	if (fixed && size <= (1u << 20)) { /* repair in memory, then read again */
		int fd = memfd_create("fuzz-sht", MFD_CLOEXEC);
		char path[64];

		if (fd >= 0 && write(fd, copy, size) == (ssize_t)size) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			if (sht_repair(path, &rep, &err) == 0) {
				if (sht_open(&r, path, &err) == 0) {
					exercise(r, copy, size);
					sht_close(r);
				} else {
					abort(); /* a repaired file must open */
				}
			}
		}
		if (fd >= 0)
			close(fd);
	}
	free(copy);
	return 0;
}
