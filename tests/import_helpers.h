/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Helpers of the import tests: temporary traces, running the import, reading the SHT back. */
#ifndef VCPUSTAT_TEST_IMPORT_HELPERS_H
#define VCPUSTAT_TEST_IMPORT_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "import/import.h"
#include "sht/sht.h"
#include "trace_synth.h"

/* A fresh temporary path with this suffix (the file does not exist yet). */
static inline char *imp_tmp(const char *suffix)
{
	static char paths[32][128];
	static int n;
	char *p = paths[n++ % 32];
	int fd;

	snprintf(p, 128, "/tmp/vcpustat-import-XXXXXX");
	fd = mkstemp(p);
	cr_assert_geq(fd, 0);
	close(fd);
	unlink(p);
	strcat(p, suffix);
	return p;
}

static inline char *imp_write_trace(const struct tev *ev, size_t n, const struct layout *l)
{
	char *path = imp_tmp(".txt");
	FILE *f = fopen(path, "w");

	cr_assert(f);
	tev_header(f, l);
	for (size_t i = 0; i < n; i++)
		tev_write(f, &ev[i], l);
	fclose(f);
	return path;
}

static inline char *imp_write_text(const char *text)
{
	char *path = imp_tmp(".txt");
	FILE *f = fopen(path, "w");

	cr_assert(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Import host (and guests) into a new SHT; asserts success; returns the SHT's path. */
static inline char *imp_run(struct import_opts *o, struct import_result *res)
{
	struct vcpustat_error err = { 0 };
	struct import_result local;
	char *out = imp_tmp(".sht");
	int e;

	o->out = out;
	o->no_sync = true;
	e = vcpustat_import(o, res ? res : &local, &err);
	cr_assert_eq(e, 0, "import %s: %s", o->host, err.msg);
	if (!res)
		import_result_free(&local);
	return out;
}

/* Every interval of the file as "path start end value" lines, sorted; skip: a path suffix to leave out. */
struct imp_dump {
	char **line;
	size_t n;
};

static inline int imp_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline struct imp_dump imp_dump(const char *sht, const char *skip)
{
	struct vcpustat_error err = { 0 };
	struct imp_dump d = { 0 };
	const struct sht_info *info;
	struct sht_reader *r;

	cr_assert_eq(sht_open(&r, sht, &err), 0, "%s", err.msg);
	info = sht_get_info(r);
	for (uint32_t a = 0; a < sht_nattrs(r); a++) {
		const char *path = sht_attr_path(r, a);
		struct sht_interval *iv = NULL;
		size_t n = 0;

		if (skip && strlen(path) >= strlen(skip) && !strcmp(path + strlen(path) - strlen(skip), skip))
			continue;
		cr_assert_eq(sht_query_range(r, a, NULL, info->start, info->end, &iv, &n, &err), 0, "%s", err.msg);
		for (size_t i = 0; i < n; i++) {
			char buf[1200];

			if (iv[i].value.type == SHT_NULL)
				continue;
			if (iv[i].value.type == SHT_INT)
				snprintf(buf, sizeof(buf), "%s %llu %llu %lld", path, (unsigned long long)iv[i].start,
					 (unsigned long long)iv[i].end, (long long)iv[i].value.i);
			else
				snprintf(buf, sizeof(buf), "%s %llu %llu '%s'", path, (unsigned long long)iv[i].start,
					 (unsigned long long)iv[i].end, iv[i].value.s);
			if (!(d.n & (d.n - 1))) /* grow at powers of two */
				d.line = realloc(d.line, (d.n ? 2 * d.n : 1) * sizeof(*d.line));
			d.line[d.n++] = strdup(buf);
		}
		free(iv);
	}
	sht_close(r);
	qsort(d.line, d.n, sizeof(*d.line), imp_cmp_str);
	return d;
}

static inline void imp_dump_free(struct imp_dump *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->line[i]);
	free(d->line);
	memset(d, 0, sizeof(*d));
}

static inline bool imp_dump_has(const struct imp_dump *d, const char *line)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->line[i], line))
			return true;
	return false;
}

static inline void imp_assert_same(const struct imp_dump *a, const struct imp_dump *b, const char *what)
{
	for (size_t i = 0; i < a->n && i < b->n; i++)
		cr_assert_str_eq(a->line[i], b->line[i], "%s: interval %zu differs: %s / %s", what, i, a->line[i], b->line[i]);
	cr_assert_eq(a->n, b->n, "%s: %zu vs %zu intervals", what, a->n, b->n);
}

/* The intervals of one attribute (path), in time order. */
static inline size_t imp_intervals(const char *sht, const char *path, struct sht_interval **out, struct sht_reader **rp)
{
	struct vcpustat_error err = { 0 };
	const struct sht_info *info;
	uint32_t a;
	size_t n = 0;

	cr_assert_eq(sht_open(rp, sht, &err), 0, "%s", err.msg);
	info = sht_get_info(*rp);
	*out = NULL;
	if (sht_attr_lookup(*rp, path, &a))
		return 0;
	cr_assert_eq(sht_query_range(*rp, a, NULL, info->start, info->end, out, &n, &err), 0, "%s", err.msg);
	return n;
}

#endif
