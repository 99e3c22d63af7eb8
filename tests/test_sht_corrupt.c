// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Damaged SHT files: a flipped byte, a truncated file, a wrong magic, a wrong
 * version. Each gives one clear error naming the file and the offset, never
 * a crash (this suite runs under ASan/UBSan); `repair` then gives a file
 * that reads cleanly and answers like the model up to its horizon.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include "sht_model.h"

#define NS 4096u

static struct scenario corrupt_scenario(uint64_t seed)
{
	return (struct scenario){ .seed = seed, .nattrs = 60, .nops = 30000, .node_size = NS, .max_children = 4,
				  .zero_pct = 5, .older_pct = 2, .null_pct = 5, .string_pct = 10, .bigint_pct = 5,
				  .hot_pct = 80, .hot_attrs = 10, .max_step = 3000 };
}

/* A closed (or, if unfinished, abandoned) file and its model. */
static void make_file(const char *path, uint64_t seed, bool unfinished, struct model *m)
{
	struct scenario sc = corrupt_scenario(seed);
	struct op *ops = make_ops(&sc);
	uint32_t ids[60];
	struct vcpustat_error err = { 0 };
	struct sht_writer *w = open_writer(path, &sc);

	model_init(m, sc.nattrs);
	create_attrs(w, sc.nattrs, ids);
	for (size_t k = 0; k < sc.nops; k++) {
		apply_op(w, ids, &ops[k]);
		model_set(m, &ops[k]);
	}
	if (unfinished) {
		sht_writer_abandon(w);
	} else {
		cr_assert_eq(sht_writer_close(w, m->last_t + 10, &err), 0, "%s", err.msg);
		model_close(m, m->last_t + 10);
	}
	free(ops);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_size;
}

static void poke(const char *path, off_t off, uint8_t xor_mask)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= xor_mask;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void put_le32(const char *path, off_t off, uint32_t v)
{
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &v, 4, off), 4);
	close(fd);
}

/* The message names the file and "offset N". */
static void assert_names(const struct vcpustat_error *err, const char *path, unsigned long long off)
{
	char want[64];

	snprintf(want, sizeof(want), "offset %llu:", off);
	cr_assert(strstr(err->msg, path), "the message must name the file: %s", err->msg);
	cr_assert(strstr(err->msg, want), "the message must name %s: %s", want, err->msg);
	cr_assert_eq(err->code, -EBADMSG, "%s", err->msg);
	cr_assert_null(strchr(err->msg, '\n'), "one line: %s", err->msg);
}

/* Every query on r either answers or fails with one error naming path. Returns the number of errors. */
static int query_everything(struct sht_reader *r, const char *path)
{
	uint32_t n = sht_nattrs(r), a;
	struct sht_interval *out = calloc(n ? n : 1, sizeof(*out)), *iv;
	const struct sht_info *in = sht_get_info(r);
	int errors = 0;
	size_t cnt;

	for (uint64_t t = 0; t <= in->end; t += in->end / 47 + 1) {
		struct vcpustat_error err = { 0 };

		if (sht_query_at(r, t, NULL, out, &err)) {
			cr_assert(strstr(err.msg, path), "%s", err.msg);
			errors++;
		}
	}
	for (a = 0; a < n + n / 5 + 1; a += n / 5 + 1) { /* a few attributes, then (a >= n) all at once */
		struct vcpustat_error err = { 0 };

		if (sht_query_range(r, a < n ? a : SHT_NO_ATTR, NULL, 0, UINT64_MAX, &iv, &cnt, &err)) {
			cr_assert(strstr(err.msg, path), "%s", err.msg);
			errors++;
		} else {
			free(iv);
		}
	}
	free(out);
	return errors;
}

/* After a repair: good, closed, and the answers of the model up to the horizon. */
static void repair_and_compare(const char *path, const struct model *m)
{
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;

	cr_assert_eq(sht_repair(path, &rep, &err), 0, "%s", err.msg);
	cr_assert(rep.ok && rep.closed, "%s", rep.problem);
	cr_assert_eq(sht_check(path, &rep, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cmp_all(r, m, 7, 600, 60);
	sht_close(r);
}

/*
 * After the repair of a file with a damaged node: good, closed, and every
 * interval it holds is one of the model's (a damaged node loses what it held,
 * nothing is invented); most are kept.
 */
static void repair_and_compare_salvaged(const char *path, const struct model *m)
{
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_interval *iv;
	struct sht_reader *r;
	struct cmp_ctx c;
	size_t n;

	cr_assert_eq(sht_repair(path, &rep, &err), 0, "%s", err.msg);
	cr_assert(rep.ok && rep.closed, "%s", rep.problem);
	cr_assert_eq(sht_check(path, &rep, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cmp_init(&c, r, m);
	cr_assert_eq(sht_query_range(r, SHT_NO_ATTR, NULL, 0, UINT64_MAX, &iv, &n, &err), 0, "%s", err.msg);
	for (size_t k = 0; k < n; k++) {
		uint32_t ma = iv[k].attr < sht_nattrs(r) ? c.back[iv[k].attr] : UINT32_MAX;
		bool found = false;

		if (ma == UINT32_MAX)
			continue; /* a parent attribute: never holds values here */
		for (size_t j = 0; j < c.count[ma] && !found; j++) {
			const struct mivl *e = &c.by_attr[ma][j];

			found = e->start == iv[k].start && e->end == iv[k].end && e->type == (int)iv[k].value.type &&
				(e->type != SHT_INT || e->i == iv[k].value.i) &&
				(e->type != SHT_STR || !strcmp(e->s, iv[k].value.s));
		}
		cr_assert(found, "interval [%llu, %llu) of %s is not in the model", (unsigned long long)iv[k].start,
			  (unsigned long long)iv[k].end, sht_attr_path(r, iv[k].attr));
	}
	cr_assert_gt(n, m->n * 8 / 10, "most intervals are kept: %zu of %zu", n, m->n);
	free(iv);
	cmp_free(&c);
	sht_close(r);
}

Test(sht_corrupt, flipped_byte_in_a_node_names_the_node_offset)
{
	const char *path = tmp_path("flip");
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;
	struct model m;
	uint32_t node = 5;

	make_file(path, 1, false, &m);
	poke(path, (off_t)(node + 1) * NS + 100, 0x20);
	/* check: the first bad node and its offset */
	cr_assert_eq(sht_check(path, &rep, &err), -EBADMSG);
	assert_names(&err, path, (node + 1ull) * NS);
	cr_assert_not(rep.ok);
	cr_assert_eq(rep.bad_node, node);
	cr_assert_eq(rep.bad_offset, (node + 1ull) * NS);
	cr_assert_eq(rep.nodes, node, "the nodes before it are good");
	cr_assert_eq(rep.good_size, (node + 1ull) * NS);
	/* a closed file opens (the footer is fine); queries that reach the node fail cleanly */
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_gt(query_everything(r, path), 0, "some query reads node %u", node);
	sht_close(r);
	repair_and_compare_salvaged(path, &m);
	model_free(&m);
	unlink(path);
}

Test(sht_corrupt, flipped_byte_in_an_unfinished_file)
{
	const char *path = tmp_path("flipu");
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;
	struct model m;
	uint32_t node = 8;

	make_file(path, 2, true, &m);
	poke(path, (off_t)(node + 1) * NS + 3000, 0x01);
	cr_assert_eq(sht_open(&r, path, &err), -EBADMSG);
	assert_names(&err, path, (node + 1ull) * NS);
	cr_assert(strstr(err.msg, "checksum mismatch"), "%s", err.msg);
	cr_assert_eq(sht_check(path, &rep, &err), -EBADMSG);
	cr_assert_eq(rep.bad_node, node);
	repair_and_compare_salvaged(path, &m);
	model_free(&m);
	unlink(path);
}

Test(sht_corrupt, truncated_closed_file)
{
	const char *path = tmp_path("trunc");
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;
	struct model m;
	off_t full, cut;

	make_file(path, 3, false, &m);
	full = size_of(path);
	for (int i = 0; i < 3; i++) {
		cut = i == 0 ? full - NS : i == 1 ? full - 3 * NS - 1000 : full / 2;
		cr_assert_eq(truncate(path, cut), 0);
		cr_assert_eq(sht_open(&r, path, &err), -EBADMSG);
		assert_names(&err, path, (unsigned long long)cut);
		cr_assert(strstr(err.msg, "truncated"), "%s", err.msg);
		cr_assert_eq(sht_check(path, &rep, &err), -EBADMSG);
		assert_names(&err, path, (unsigned long long)cut);
		full = cut;
	}
	repair_and_compare(path, &m);
	model_free(&m);
	unlink(path);
}

Test(sht_corrupt, wrong_magic)
{
	const char *path = tmp_path("magic");
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;
	struct model m;
	off_t size;

	make_file(path, 4, false, &m);
	size = size_of(path);
	poke(path, 2, 0xff);
	cr_assert_eq(sht_open(&r, path, &err), -EBADMSG);
	assert_names(&err, path, 0);
	cr_assert(strstr(err.msg, "not a vcpustat SHT file"), "%s", err.msg);
	cr_assert_eq(sht_check(path, &rep, &err), -EBADMSG);
	assert_names(&err, path, 0);
	cr_assert_eq(sht_repair(path, &rep, &err), -EBADMSG, "a file that is not ours is not repaired");
	cr_assert(strstr(err.msg, "cannot repair"), "%s", err.msg);
	cr_assert_eq(size_of(path), size, "and not touched");
	model_free(&m);
	unlink(path);
}

Test(sht_corrupt, wrong_version)
{
	const char *path = tmp_path("version");
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;
	struct model m;

	make_file(path, 5, false, &m);
	put_le32(path, 8, 7);
	cr_assert_eq(sht_open(&r, path, &err), -EBADMSG);
	assert_names(&err, path, 8);
	cr_assert(strstr(err.msg, "unsupported SHT format version 7"), "%s", err.msg);
	cr_assert_eq(sht_check(path, &rep, &err), -EBADMSG);
	cr_assert_eq(sht_repair(path, &rep, &err), -EBADMSG);
	model_free(&m);
	unlink(path);
}

Test(sht_corrupt, flipped_byte_in_the_header_and_footer)
{
	const char *path = tmp_path("hdr");
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;
	struct sht_reader *r;
	struct model m;
	off_t size;

	make_file(path, 6, false, &m);
	poke(path, 70, 0x04); /* metadata */
	cr_assert_eq(sht_open(&r, path, &err), -EBADMSG);
	assert_names(&err, path, 12);
	cr_assert(strstr(err.msg, "header checksum"), "%s", err.msg);
	poke(path, 70, 0x04);
	size = size_of(path);
	poke(path, size - NS + 200, 0x80); /* the last footer node */
	cr_assert_eq(sht_open(&r, path, &err), -EBADMSG);
	assert_names(&err, path, (unsigned long long)(size - NS));
	/* the footer is rebuilt; nothing was lost: the tree was complete */
	cr_assert_eq(sht_repair(path, &rep, &err), 0, "%s", err.msg);
	cr_assert(rep.ok && rep.closed);
	cr_assert_not(rep.recovered, "all intervals kept");
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_get_info(r)->nintervals, m.n);
	cmp_all(r, &m, 6, 600, 60);
	sht_close(r);
	model_free(&m);
	unlink(path);
}

/*
 * Flipped bits all over a closed file: check catches every one (but those in
 * the close record, which make the file read as unfinished); opening and
 * querying give answers or one clean error, never a crash.
 */
Test(sht_corrupt, every_flipped_byte_is_caught, .timeout = 600) /* a hang guard: ~15 s here, slower on a loaded machine */
{
	const char *path = tmp_path("every"), *copy = tmp_path("every2");
	struct model m;
	uint8_t *data;
	off_t size;
	FILE *f;
	uint64_t s = 99;

	make_file(path, 9, false, &m);
	size = size_of(path);
	data = malloc((size_t)size);
	f = fopen(path, "rb");
	cr_assert_eq(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	for (int i = 0; i < 400; i++) {
		off_t off = i < 64 ? i : i < 100 ? NS - 64 + (i - 64) : (off_t)rnd_below(&s, (uint64_t)size);
		struct vcpustat_error err = { 0 };
		struct sht_check_report rep;
		struct sht_reader *r;
		int e;

		f = fopen(copy, "wb");
		data[off] ^= (uint8_t)(1u << (i % 8));
		cr_assert_eq(fwrite(data, 1, (size_t)size, f), (size_t)size);
		data[off] ^= (uint8_t)(1u << (i % 8));
		fclose(f);
		e = sht_check(copy, &rep, &err);
		if (off >= NS - 64 && off < NS) { /* the close record: the file reads as unfinished (but complete) */
			cr_assert_eq(e, 0, "flip at %lld: %s", (long long)off, err.msg);
			cr_assert_not(rep.closed);
			cr_assert_not(rep.recovered, "the tree was complete: nothing dropped");
		} else {
			cr_assert_eq(e, -EBADMSG, "flip at %lld must be caught", (long long)off);
			cr_assert(strstr(err.msg, copy) && strstr(err.msg, "offset "), "%s", err.msg);
		}
		e = sht_open(&r, copy, &err);
		if (e) {
			cr_assert(strstr(err.msg, copy) && strstr(err.msg, "offset "), "%s", err.msg);
			continue;
		}
		query_everything(r, copy);
		sht_close(r);
	}
	free(data);
	model_free(&m);
	unlink(path);
	unlink(copy);
}
