// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jsonw.c - a JSON document written as it is walked (jsonw.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonw.h"

/* Room for n more bytes and the NUL of jw_text(); false (and w->err) if there is none. */
static bool room(struct jw *w, size_t n)
{
	size_t cap;
	char *p;

	if (w->err)
		return false;
	if (n < w->cap - w->n)
		return true;
	cap = w->cap ? w->cap : 65536;
	while (n >= cap - w->n)
		cap *= 2;
	p = realloc(w->p, cap);
	if (!p) {
		w->err = -ENOMEM;
		return false;
	}
	w->p = p;
	w->cap = cap;
	return true;
}

static void put(struct jw *w, const char *s, size_t n)
{
	if (room(w, n)) {
		memcpy(w->p + w->n, s, n);
		w->n += n;
	}
}

static void put_char(struct jw *w, char c)
{
	if (room(w, 1))
		w->p[w->n++] = c;
}

/* The length of the valid UTF-8 sequence at s (1-4), or 0 (as jansson's utf8_check_full()). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned int cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* the NUL ends the string here too */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* s quoted and escaped as jansson's dump_string() does without flags; bad UTF-8 bytes as U+FFFD. */
static void put_quoted(struct jw *w, const char *str)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char short_escape[0x20] = { ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't' };
	const unsigned char *s = (const unsigned char *)str, *run = s;

	put_char(w, '"');
	for (;;) {
		unsigned char c = *s;
		char esc[6] = { '\\', 'u', '0', '0', 0, 0 };
		size_t n;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0x80 && (n = utf8_len(s))) {
			s += n;
			continue;
		}
		put(w, (const char *)run, (size_t)(s - run));
		if (!c)
			break;
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			put(w, esc, 2);
		} else if (c < 0x20 && short_escape[c]) {
			esc[1] = short_escape[c];
			put(w, esc, 2);
		} else if (c < 0x20) {
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(w, esc, 6);
		} else {
			put(w, "\xef\xbf\xbd", 3); /* a byte that is not UTF-8: U+FFFD */
		}
		run = ++s;
	}
	put_char(w, '"');
}

/* Before a member: the comma after its elder sibling, then its key if in an object. */
static void member(struct jw *w, const char *key)
{
	uint64_t bit = 1ULL << w->depth;

	if (w->depth) {
		if (w->empty & bit)
			w->empty &= ~bit;
		else
			put_char(w, ',');
	}
	if (key && (w->is_array & bit) == 0 && w->depth) {
		put_quoted(w, key);
		put_char(w, ':');
	}
}

static void container(struct jw *w, const char *key, char c)
{
	member(w, key);
	put_char(w, c);
	if (w->depth + 1 >= JW_MAX_DEPTH) {
		w->err = -EINVAL; /* deeper than any document of ours */
		return;
	}
	w->depth++;
	w->empty |= 1ULL << w->depth;
	if (c == '[')
		w->is_array |= 1ULL << w->depth;
	else
		w->is_array &= ~(1ULL << w->depth);
}

void jw_object(struct jw *w, const char *key)
{
	container(w, key, '{');
}

void jw_array(struct jw *w, const char *key)
{
	container(w, key, '[');
}

void jw_end(struct jw *w)
{
	if (!w->depth) {
		w->err = -EINVAL; /* nothing open to close */
		return;
	}
	put_char(w, w->is_array & (1ULL << w->depth) ? ']' : '}');
	w->depth--;
}

/* v in decimal at the end of buf (24 bytes); returns where it starts. */
static char *digits(char *end, unsigned long long v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	char *p = end;

	while (v >= 100) {
		unsigned int i = (unsigned int)(v % 100) * 2;

		v /= 100;
		*--p = pairs[i + 1];
		*--p = pairs[i];
	}
	if (v >= 10) {
		*--p = pairs[v * 2 + 1];
		*--p = pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

void jw_int(struct jw *w, const char *key, long long v)
{
	char buf[24], *end = buf + sizeof(buf), *p;

	member(w, key);
	p = digits(end, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
	if (v < 0)
		*--p = '-';
	put(w, p, (size_t)(end - p));
}

/* As jansson's jsonp_dtostr() with precision 17 (see jsonw.h). */
void jw_real(struct jw *w, const char *key, double v)
{
	char buf[40], *e, *from;
	int n;

	member(w, key);
	if (!isfinite(v)) {
		put(w, "null", 4);
		return;
	}
	if (fabs(v) < 1e17 && v == (double)(long long)v) {
		/* a whole number below 10^17: "%.17g" prints it whole; then ".0" */
		char *end = buf + sizeof(buf) - 2, *p = digits(end, (unsigned long long)fabs(v));

		if (signbit(v))
			*--p = '-';
		end[0] = '.';
		end[1] = '0';
		put(w, p, (size_t)(end + 2 - p));
		return;
	}
	n = snprintf(buf, sizeof(buf), "%.17g", v);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		w->err = -EINVAL;
		return;
	}
	e = strchr(buf, 'e');
	if (!e) {
		if (!strchr(buf, '.')) {
			buf[n++] = '.';
			buf[n++] = '0';
		}
		put(w, buf, (size_t)n);
		return;
	}
	/* the exponent without '+' and leading zeros: "1e+20" -> "1e20", "1e-05" -> "1e-5" */
	put(w, buf, (size_t)(e + 1 - buf));
	from = e + 1;
	if (*from == '-')
		put_char(w, *from);
	if (*from == '-' || *from == '+')
		from++;
	while (*from == '0' && from[1])
		from++;
	put(w, from, strlen(from));
}

void jw_string(struct jw *w, const char *key, const char *s)
{
	member(w, key);
	put_quoted(w, s ? s : "");
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	member(w, key);
	if (v)
		put(w, "true", 4);
	else
		put(w, "false", 5);
}

void jw_null(struct jw *w, const char *key)
{
	member(w, key);
	put(w, "null", 4);
}

void jw_raw(struct jw *w, const char *text, size_t n)
{
	put(w, text, n);
}

int jw_dump_callback(const char *buf, size_t size, void *data)
{
	struct jw *w = data;

	put(w, buf, size);
	return w->err ? -1 : 0;
}

void jw_json(struct jw *w, const char *key, json_t *v)
{
	member(w, key);
	if (!v) {
		put(w, "null", 4);
		return;
	}
	if (json_dump_callback(v, jw_dump_callback, w, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17)) && !w->err)
		w->err = -ENOMEM;
	json_decref(v);
}

void jw_reset(struct jw *w)
{
	w->n = 0;
	w->err = 0;
	w->depth = 0;
	w->empty = 0;
	w->is_array = 0;
}

void jw_free(struct jw *w)
{
	free(w->p);
	memset(w, 0, sizeof(*w));
}

bool jw_reserve(struct jw *w, size_t n)
{
	return room(w, n);
}

int jw_error(const struct jw *w)
{
	return w->err ? w->err : w->depth ? -EINVAL : 0;
}

const char *jw_text(struct jw *w)
{
	if (jw_error(w) || !room(w, 0))
		return NULL;
	w->p[w->n] = '\0';
	return w->p;
}

char *jw_release(struct jw *w, size_t *len)
{
	char *p = NULL;

	*len = 0;
	if (jw_text(w)) {
		p = w->p;
		*len = w->n;
		w->p = NULL;
	}
	jw_free(w);
	return p;
}

json_t *jw_parse(struct jw *w)
{
	const char *t = jw_text(w);

	return t ? json_loadb(t, w->n, 0, NULL) : NULL;
}
