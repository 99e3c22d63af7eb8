/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers for the exporter tests: a small reader of the Prometheus text
 * format (the samples, as vcpustat prints them) and checks of its
 * histograms.
 */
#ifndef VCPUSTAT_TEST_EXPORT_HELPERS_H
#define VCPUSTAT_TEST_EXPORT_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prom_sample {
	char name[128];
	char labels[768]; /* as printed, without the braces: vm="a",vcpu="0" */
	char text[64];	  /* the value as printed */
	double value;
};

struct prom_doc {
	struct prom_sample *s;
	size_t n;
	size_t families; /* # TYPE lines */
	int eof;	 /* saw "# EOF" */
};

static inline void prom_free(struct prom_doc *d)
{
	free(d->s);
	memset(d, 0, sizeof(*d));
}

/* Parse text; every non-comment line must be a sample. */
static inline void prom_parse(const char *text, struct prom_doc *d)
{
	const char *line = text;

	memset(d, 0, sizeof(*d));
	while (*line) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		char buf[2048];
		size_t len = (size_t)(end - line);

		cr_assert_lt(len, sizeof(buf), "line too long");
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl ? nl + 1 : end;
		if (!len)
			continue;
		if (buf[0] == '#') {
			if (!strncmp(buf, "# TYPE ", 7))
				d->families++;
			if (!strcmp(buf, "# EOF"))
				d->eof = 1;
			continue;
		}
		{
			struct prom_sample *s;
			char *brace = strchr(buf, '{'), *space, *val;

			d->s = realloc(d->s, (d->n + 1) * sizeof(*d->s));
			s = &d->s[d->n++];
			memset(s, 0, sizeof(*s));
			if (brace) {
				char *close = strrchr(buf, '}');

				cr_assert_not_null(close, "unterminated labels: %s", buf);
				*brace = '\0';
				*close = '\0';
				snprintf(s->name, sizeof(s->name), "%.127s", buf);
				snprintf(s->labels, sizeof(s->labels), "%.767s", brace + 1);
				val = close + 1;
			} else {
				space = strchr(buf, ' ');
				cr_assert_not_null(space, "no value: %s", buf);
				*space = '\0';
				snprintf(s->name, sizeof(s->name), "%.127s", buf);
				val = space + 1;
			}
			while (*val == ' ')
				val++;
			snprintf(s->text, sizeof(s->text), "%s", val);
			s->value = strtod(val, NULL);
		}
	}
}

static inline const struct prom_sample *prom_find(const struct prom_doc *d, const char *name, const char *labels)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->s[i].name, name) && !strcmp(d->s[i].labels, labels))
			return &d->s[i];
	return NULL;
}

static inline double prom_value(const struct prom_doc *d, const char *name, const char *labels)
{
	const struct prom_sample *s = prom_find(d, name, labels);

	cr_assert_not_null(s, "no sample %s{%s}", name, labels);
	return s->value;
}

/* The labels of a bucket sample without its le (le is always printed last). */
static inline void prom_series_of_bucket(const char *labels, char *out, size_t len)
{
	const char *le = strstr(labels, "le=\"");

	snprintf(out, len, "%.*s", (int)(le ? (size_t)(le - labels) - (le > labels ? 1 : 0) : strlen(labels)),
		 labels);
}

/*
 * Every histogram in d: buckets cumulative (never decreasing), the last one
 * le="+Inf", equal to _count. Returns the number of histograms checked.
 */
static inline size_t prom_check_histograms(const struct prom_doc *d)
{
	size_t checked = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct prom_sample *s = &d->s[i];
		char base[128], series[768], count_name[160];
		size_t blen = strlen(s->name);
		double prev = -1;
		size_t j;

		if (blen < 7 || strcmp(s->name + blen - 7, "_bucket"))
			continue;
		if (i && !strcmp(d->s[i - 1].name, s->name)) {
			char a[768];

			prom_series_of_bucket(d->s[i - 1].labels, a, sizeof(a));
			prom_series_of_bucket(s->labels, series, sizeof(series));
			if (!strcmp(a, series))
				continue; /* not the first bucket of its series */
		}
		snprintf(base, sizeof(base), "%.*s", (int)(blen - 7), s->name);
		prom_series_of_bucket(s->labels, series, sizeof(series));
		for (j = i; j < d->n && !strcmp(d->s[j].name, s->name); j++) {
			char sj[768];

			prom_series_of_bucket(d->s[j].labels, sj, sizeof(sj));
			if (strcmp(sj, series))
				break;
			cr_assert_geq(d->s[j].value, prev, "%s{%s}: buckets must be cumulative", s->name, d->s[j].labels);
			prev = d->s[j].value;
		}
		cr_assert(strstr(d->s[j - 1].labels, "le=\"+Inf\""), "%s{%s}: the last bucket is +Inf", s->name,
			  d->s[j - 1].labels);
		snprintf(count_name, sizeof(count_name), "%s_count", base);
		cr_assert_eq(prom_value(d, count_name, series), d->s[j - 1].value, "%s{%s}: +Inf must equal _count",
			     base, series);
		checked++;
	}
	return checked;
}

#endif
