// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The JSON writer (user/util/jsonw.c): for the same values it writes what
 * jansson's json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(17)) writes, byte
 * for byte (jansson is the oracle: each case is built both ways); what jansson
 * would drop (bad UTF-8, a real that is not finite) is written and parses; a
 * failure is reported, not half a document.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonw.h"

static void expect_same(struct jw *w, json_t *oracle)
{
	char *want = json_dumps(oracle, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	const char *got = jw_text(w);

	cr_assert(want && got, "jw_error %d", jw_error(w));
	cr_expect_str_eq(got, want);
	cr_expect_eq(jw_len(w), strlen(want));
	free(want);
	json_decref(oracle);
}

Test(jsonw, reals_as_jansson_prints_them)
{
	static const double v[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 1.0 / 3, 2.0 / 3, 0.1, 1e-5, 1.5e-7, 123456.789,
				    1e16, 99999999999999990.0, 1e17, 1.7e17, 1e20, 1e22, 1e300, -1e-300, DBL_MIN,
				    DBL_MAX, 4.9e-324, 12345678901234567.0, 9007199254740993.0, 0.30000000000000004,
				    1234.5, -987654.25, 3e-10, 1e100 / 3 };
	struct jw w = { 0 };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		jw_reset(&w);
		jw_real(&w, NULL, v[i]);
		expect_same(&w, json_real(v[i]));
	}
	/* every magnitude, both signs, values that are whole and that are not */
	for (int e = -320; e <= 308; e++)
		for (int k = 0; k < 4; k++) {
			double x = (k & 1 ? -1 : 1) * (k & 2 ? 1.0 + 1.0 / 7 : 1.0) * pow(10, e);

			jw_reset(&w);
			jw_real(&w, NULL, x);
			expect_same(&w, json_real(x));
		}
	jw_free(&w);
}

Test(jsonw, integers_as_jansson_prints_them)
{
	static const long long v[] = { 0, 1, -1, 9, 10, 99, 100, 101, 12345, -12345, 4294967295LL, 1LL << 53,
				       999999999999999999LL, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1 };
	struct jw w = { 0 };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		jw_reset(&w);
		jw_int(&w, NULL, v[i]);
		expect_same(&w, json_integer(v[i]));
	}
	for (long long x = 1; x > 0 && x < LLONG_MAX / 3; x = x * 3 + 1) {
		jw_reset(&w);
		jw_int(&w, NULL, -x);
		expect_same(&w, json_integer(-x));
	}
	jw_free(&w);
}

Test(jsonw, strings_escaped_as_jansson_escapes_them)
{
	static const char *const v[] = { "", "plain", "CPU 0/KVM", "quote \" and backslash \\", "/slash/",
					 "\b\f\n\r\t", "\x01\x02\x1f\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
					 "tab\tin the middle", "\xef\xbf\xbd" };
	struct jw w = { 0 };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		jw_reset(&w);
		jw_string(&w, NULL, v[i]);
		expect_same(&w, json_string(v[i]));
	}
	/* every byte that may stand alone in UTF-8 */
	for (int c = 1; c < 0x80; c++) {
		char s[4] = { 'a', (char)c, 'z', 0 };

		jw_reset(&w);
		jw_string(&w, NULL, s);
		expect_same(&w, json_string(s));
	}
	jw_free(&w);
}

Test(jsonw, a_document_as_jansson_dumps_it)
{
	struct jw w = { 0 };
	json_t *o, *a;

	/* twice: the second document reuses the first's buffer */
	for (int round = 0; round < 2; round++) {
		jw_reset(&w);
		jw_object(&w, NULL);
		jw_int(&w, "ts", 42);
		jw_real(&w, "interval_s", 1.25);
		jw_string(&w, "key \"with\" quotes", "v");
		jw_array(&w, "empty");
		jw_end(&w);
		jw_object(&w, "none");
		jw_end(&w);
		jw_array(&w, "vms");
		for (int i = 0; i < 3; i++) {
			jw_object(&w, NULL);
			jw_int(&w, "i", i);
			jw_bool(&w, "odd", i & 1);
			jw_null(&w, "pcpu");
			jw_array(&w, "nested");
			jw_array(&w, NULL);
			jw_int(&w, NULL, i);
			jw_end(&w);
			jw_end(&w);
			jw_end(&w);
		}
		jw_end(&w);
		jw_json(&w, "given", json_pack("{s:[i,f], s:s}", "a", 1, 0.25, "b", "x"));
		jw_json(&w, "nothing", NULL);
		jw_end(&w);

		o = json_object();
		json_object_set_new(o, "ts", json_integer(42));
		json_object_set_new(o, "interval_s", json_real(1.25));
		json_object_set_new(o, "key \"with\" quotes", json_string("v"));
		json_object_set_new(o, "empty", json_array());
		json_object_set_new(o, "none", json_object());
		a = json_array();
		for (int i = 0; i < 3; i++)
			json_array_append_new(a, json_pack("{s:i, s:b, s:n, s:[[i]]}", "i", i, "odd", i & 1, "pcpu",
							   "nested", i));
		json_object_set_new(o, "vms", a);
		json_object_set_new(o, "given", json_pack("{s:[i,f], s:s}", "a", 1, 0.25, "b", "x"));
		json_object_set_new(o, "nothing", json_null());
		cr_assert_eq(jw_error(&w), 0);
		expect_same(&w, o);
	}
	jw_free(&w);
}

/* What jansson refuses is written all the same, and the document parses. */
Test(jsonw, bad_utf8_and_non_finite_reals_still_parse)
{
	static const char *const bad[] = { "\x80", "a\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
					   "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", ("ok\xff\xfe" "end") };
	struct jw w = { 0 };
	json_t *doc;

	jw_object(&w, NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char key[8];

		snprintf(key, sizeof(key), "s%zu", i);
		jw_string(&w, key, bad[i]);
	}
	jw_real(&w, "nan", NAN);
	jw_real(&w, "inf", -INFINITY);
	jw_end(&w);
	doc = jw_parse(&w);
	cr_assert(doc, "%s", jw_text(&w));
	cr_expect_str_eq(json_string_value(json_object_get(doc, "s0")), "\xef\xbf\xbd");
	cr_expect_str_eq(json_string_value(json_object_get(doc, "s1")), "a\xef\xbf\xbd");
	cr_expect_str_eq(json_string_value(json_object_get(doc, "s2")), "\xef\xbf\xbd\xef\xbf\xbd"); /* overlong */
	cr_expect_str_eq(json_string_value(json_object_get(doc, "s4")), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
	cr_expect_str_eq(json_string_value(json_object_get(doc, "s7")), "ok\xef\xbf\xbd\xef\xbf\xbd" "end");
	cr_expect(json_is_null(json_object_get(doc, "nan")));
	cr_expect(json_is_null(json_object_get(doc, "inf")));
	json_decref(doc);
	jw_free(&w);
}

Test(jsonw, an_unclosed_or_overclosed_document_is_an_error)
{
	struct jw w = { 0 };

	jw_object(&w, NULL);
	jw_array(&w, "a");
	jw_end(&w);
	cr_expect_eq(jw_error(&w), -EINVAL);
	cr_expect_null(jw_text(&w));
	cr_expect_null(jw_parse(&w));
	jw_end(&w);
	cr_expect_eq(jw_error(&w), 0);
	cr_expect_str_eq(jw_text(&w), "{\"a\":[]}");
	jw_end(&w);
	cr_expect_neq(jw_error(&w), 0);
	cr_expect_null(jw_text(&w));
	jw_reset(&w);
	for (int i = 0; i < JW_MAX_DEPTH + 1; i++)
		jw_array(&w, NULL);
	cr_expect_neq(jw_error(&w), 0, "deeper than JW_MAX_DEPTH");
	jw_free(&w);
}

/* A reserved writer does not move its buffer; a released text is the caller's, and w starts over empty. */
Test(jsonw, reserve_keeps_the_buffer_and_release_hands_it_over)
{
	struct jw w = { 0 };
	const char *before;
	char *text;
	size_t len = 1;

	cr_assert(jw_reserve(&w, 200000));
	before = w.p;
	cr_expect_geq(w.cap, 200001);
	jw_array(&w, NULL);
	for (int i = 0; i < 20000; i++)
		jw_int(&w, NULL, 1000000 + i);
	jw_end(&w);
	cr_expect_eq(w.p, before, "the reserved buffer was reallocated");
	text = jw_release(&w, &len);
	cr_assert_not_null(text);
	cr_expect_eq(text, before, "released a copy, not the writer's buffer");
	cr_expect_eq(len, strlen(text));
	cr_expect_eq(len, 2 + 20000 * 8 - 1);
	cr_expect_eq(strncmp(text, "[1000000,1000001,", 17), 0);
	cr_expect_eq(w.p, NULL);
	cr_expect_eq(w.n, 0);
	cr_expect_eq(w.cap, 0);
	free(text);

	/* an unclosed document is not released, and the writer is freed */
	jw_object(&w, NULL);
	text = jw_release(&w, &len);
	cr_expect_null(text);
	cr_expect_eq(len, 0);
	cr_expect_eq(w.p, NULL);
	cr_expect_eq(w.depth, 0);
}
