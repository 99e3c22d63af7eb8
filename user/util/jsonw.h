/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * jsonw.h - a JSON document written as it is walked, into a buffer kept from
 * one document to the next.
 *
 * For the one document that is written at every refresh: `top -j`'s window
 * (summary_json_write()). Building it as a jansson tree, dumping and freeing
 * the tree cost 15 ms of CPU at 1,000 vCPUs, three times the whole budget of a
 * refresh (bench/RESULTS.md, "Refresh at scale"). Everything else that makes
 * or reads JSON uses jansson; so can a reader of this text (jw_parse()).
 *
 * The text is what jansson's json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(17))
 * prints for the same values, byte for byte (tests/test_jsonw.c holds the
 * writer to it): keys in the order written, strings escaped as jansson does
 * (", \, control characters; UTF-8 as is), reals as "%.17g" with ".0" added to
 * a whole number and the exponent without '+' or leading zeros. Two things
 * where jansson would drop a value: a string that is not valid UTF-8 has each
 * bad byte written as U+FFFD, and a real that is not finite is written null.
 *
 * Calls do not fail one by one: the first failure (no memory, a jw_end() with
 * nothing open) is remembered, the rest of the document is skipped, and
 * jw_error() and jw_text() say so.
 */
#ifndef VCPUSTAT_JSONW_H
#define VCPUSTAT_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define JW_MAX_DEPTH 64

struct jw {
	char *p;	/* the text so far, NUL-terminated once jw_text() is asked */
	size_t n, cap;
	int err;	   /* the first failure: -ENOMEM, or -EINVAL (an end with nothing open, too deep) */
	unsigned int depth;
	uint64_t empty;	   /* bit d: the container at depth d has no member yet */
	uint64_t is_array; /* bit d: the container at depth d is an array */
};

/* Start a new document in w (the buffer is kept: zero-initialize w once). */
void jw_reset(struct jw *w);
void jw_free(struct jw *w);
/* Room for n more bytes at once (a caller that knows the size of the last document); false on no memory. */
bool jw_reserve(struct jw *w, size_t n);

/* Members. key is the member's name inside an object, NULL inside an array or at the top. */
void jw_object(struct jw *w, const char *key);
void jw_array(struct jw *w, const char *key);
void jw_end(struct jw *w); /* closes the innermost object or array */
void jw_int(struct jw *w, const char *key, long long v);
void jw_uint(struct jw *w, const char *key, unsigned long long v);
void jw_real(struct jw *w, const char *key, double v);
void jw_string(struct jw *w, const char *key, const char *s);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);
/* A jansson value, written as above and released (NULL: written null). */
void jw_json(struct jw *w, const char *key, json_t *v);
/* Text appended as it is (what a caller already made JSON, a newline). */
void jw_raw(struct jw *w, const char *text, size_t n);
/* For jansson's json_dump_callback(): appends to the struct jw that data is. */
int jw_dump_callback(const char *buf, size_t size, void *data);

/* 0, or -ENOMEM if an allocation failed, or -EINVAL if the containers are not all closed. */
int jw_error(const struct jw *w);
/* The text (NUL-terminated, jw_len() bytes), or NULL after an error. */
const char *jw_text(struct jw *w);
static inline size_t jw_len(const struct jw *w)
{
	return w->n;
}
/*
 * The text as a buffer of its own (NUL-terminated, *len bytes) for the caller
 * to free(), w left empty as jw_free() leaves it; NULL after an error (w is
 * freed then too).
 */
char *jw_release(struct jw *w, size_t *len);
/* The document as a jansson tree (for those who add to it or read it), or NULL. */
json_t *jw_parse(struct jw *w);

#endif
