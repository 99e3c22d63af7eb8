// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `vcpustat -j` live (user/cli/top_live.c): each refresh's document is
 * written as the window is walked (summary_json_write), then printed whole on
 * its line. Each line must be one whole document that jansson prints back the
 * same (no key twice), with the programs and what the kernel lost; `-p`
 * prints the same documents indented. Root and BPF; no VM is needed.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"

#define REFRESHES 3

static char out[1 << 20];

/* The documents of `vcpustat ARGS` (stderr aside), in docs[]; how many. */
static size_t documents(const char *args, json_t **docs, size_t max, bool one_per_line)
{
	char cmd[256];
	size_t n = 0, off = 0, len;

	/* libbpf's lines on stderr (a program this kernel refuses) are not the documents */
	snprintf(cmd, sizeof(cmd), "(%s/bin/vcpustat %s 2>/dev/null)", build_dir(), args);
	cr_assert_eq(run_shell(cmd, out, sizeof(out)), 0, "vcpustat %s: %s", args, out);
	len = strlen(out);
	while (off < len && n < max) {
		json_error_t e;
		const char *nl = strchr(out + off, '\n');

		if (one_per_line) {
			cr_assert_not_null(nl, "document %zu does not end its line", n + 1);
			expect_janssons_text(out + off, (size_t)(nl - (out + off)));
			docs[n] = json_loadb(out + off, (size_t)(nl - (out + off)), JSON_REJECT_DUPLICATES, &e);
			off = (size_t)(nl - out) + 1;
		} else {
			docs[n] = json_loads(out + off, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &e);
			cr_assert_not_null(docs[n], "document %zu: %s at %d", n + 1, e.text, e.position);
			off += e.position;
			while (off < len && (out[off] == '\n' || out[off] == ' '))
				off++;
		}
		cr_assert_not_null(docs[n], "document %zu: %s", n + 1, e.text);
		n++;
	}
	cr_assert_eq(off, len, "text after %zu documents: %.80s", n, out + off);
	return n;
}

static void expect_refresh(json_t *d, json_int_t *last_ts)
{
	static const char *const status[] = { "off", "missing", "loaded", "attached", "failed" };
	json_t *progs = json_object_get(d, "programs"), *p, *lost = json_object_get(d, "lost");
	bool kvm_exit = false;
	size_t i;

	cr_assert(json_is_integer(json_object_get(d, "ts")));
	cr_assert_gt(json_integer_value(json_object_get(d, "ts")), *last_ts, "ts does not grow");
	*last_ts = json_integer_value(json_object_get(d, "ts"));
	cr_assert_gt(json_real_value(json_object_get(d, "interval_s")), 0.1);
	cr_assert(json_is_array(json_object_get(d, "vms")));
	cr_assert(json_is_object(lost) && json_is_integer(json_object_get(lost, "ringbuf")), "lost");
	cr_assert(json_is_object(json_object_get(d, "lost_window")));
	cr_assert(json_is_array(progs) && json_array_size(progs) > 0, "programs");
	json_array_foreach(progs, i, p) {
		const char *s = json_string_value(json_object_get(p, "status"));
		bool known = false;

		cr_assert_not_null(json_string_value(json_object_get(p, "name")));
		cr_assert_not_null(json_string_value(json_object_get(p, "tracepoint")));
		cr_assert_not_null(s);
		for (size_t k = 0; k < sizeof(status) / sizeof(status[0]); k++)
			known |= !strcmp(s, status[k]);
		cr_assert(known, "status %s", s);
		if (!strcmp(s, "failed")) /* the kernel's refusal, said */
			cr_assert_gt(strlen(json_string_value(json_object_get(p, "message"))), 0);
		kvm_exit |= !strcmp(json_string_value(json_object_get(p, "name")), "on_kvm_exit");
	}
	cr_assert(kvm_exit, "on_kvm_exit is not among the programs");
}

Test(top_json, live_lines_are_whole_documents_and_pretty_prints_the_same, .timeout = 60)
{
	json_t *line[REFRESHES + 1], *pretty[REFRESHES + 1];
	json_int_t ts = 0;
	char args[64];

	SKIP_UNLESS(bpf_unavailable());
	snprintf(args, sizeof(args), "-j -n %d -d 0.3", REFRESHES);
	cr_assert_eq(documents(args, line, REFRESHES + 1, true), REFRESHES);
	for (int i = 0; i < REFRESHES; i++)
		expect_refresh(line[i], &ts);
	snprintf(args, sizeof(args), "-p -j -n %d -d 0.3", REFRESHES);
	cr_assert_eq(documents(args, pretty, REFRESHES + 1, false), REFRESHES);
	cr_assert_not_null(strstr(out, "\n  \"ts\": "), "-p: not indented: %.80s", out);
	ts = 0;
	for (int i = 0; i < REFRESHES; i++) {
		void *a = json_object_iter(line[i]), *b = json_object_iter(pretty[i]);

		expect_refresh(pretty[i], &ts);
		/* the same keys, in the same order, as the compact lines */
		for (; a && b; a = json_object_iter_next(line[i], a), b = json_object_iter_next(pretty[i], b))
			cr_assert_str_eq(json_object_iter_key(a), json_object_iter_key(b));
		cr_assert(!a && !b, "-p has %s keys", a ? "fewer" : "more");
		json_decref(line[i]);
		json_decref(pretty[i]);
	}
}
