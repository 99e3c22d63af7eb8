// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * SHT write/read round trips: random interval streams written to a file and
 * compared, query by query, with a simple in-memory model (tests/sht_model.h).
 */
#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include "sht_model.h"

/* Write sc to path (closed at end_t unless abandon_at < nops); fill the model the same way. */
static void write_scenario(const char *path, const struct scenario *sc, struct model *m, size_t abandon_at,
			   uint64_t end_t, struct sht_writer_stats *st)
{
	struct op *ops = make_ops(sc);
	uint32_t *ids = calloc(sc->nattrs, sizeof(*ids));
	struct vcpustat_error err = { 0 };
	struct sht_writer *w = open_writer(path, sc);
	size_t k;

	cr_assert_not_null(ids);
	model_init(m, sc->nattrs);
	create_attrs(w, sc->nattrs, ids);
	for (k = 0; k < sc->nops && k < abandon_at; k++) {
		apply_op(w, ids, &ops[k]);
		model_set(m, &ops[k]);
	}
	if (st)
		sht_writer_get_stats(w, st);
	if (abandon_at < sc->nops) {
		sht_writer_abandon(w);
	} else {
		cr_assert_eq(sht_writer_close(w, end_t, &err), 0, "%s", err.msg);
		model_close(m, end_t);
	}
	free(ops);
	free(ids);
}

static struct sht_reader *open_ok(const char *path)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;

	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	return r;
}

static void check_ok(const char *path)
{
	struct vcpustat_error err = { 0 };
	struct sht_check_report rep;

	cr_assert_eq(sht_check(path, &rep, &err), 0, "%s", err.msg);
	cr_assert(rep.ok);
}

/* Round trip of a closed file: every query equals the model's answer. */
static void roundtrip(const struct scenario *sc)
{
	const char *path = tmp_path("rt");
	struct sht_writer_stats st;
	struct sht_reader *r;
	struct model m;
	const struct sht_info *in;
	uint64_t end_t;

	write_scenario(path, sc, &m, SIZE_MAX, 0, &st);
	end_t = m.last_t; /* close() used 0: clamped to the newest time */
	r = open_ok(path);
	in = sht_get_info(r);
	cr_assert(in->closed);
	cr_assert_not(in->recovered);
	cr_assert_eq(in->end, end_t);
	cr_assert_eq(in->nintervals, m.n, "seed %llu: %llu intervals in the file, %zu in the model",
		     (unsigned long long)sc->seed, (unsigned long long)in->nintervals, m.n);
	cr_assert_eq(in->nclamped, m.clamped);
	cr_assert_str_eq(sht_meta_get(r, "host"), "testhost");
	cmp_all(r, &m, sc->seed, 3000, 200);
	sht_close(r);
	check_ok(path);
	model_free(&m);
	unlink(path);
}

static struct scenario base(uint64_t seed)
{
	return (struct scenario){ .seed = seed, .nattrs = 40, .nops = 20000, .node_size = 4096, .max_children = 4,
				  .zero_pct = 5, .older_pct = 3, .null_pct = 5, .string_pct = 5, .bigint_pct = 5,
				  .hot_pct = 70, .hot_attrs = 8, .max_step = 2000 };
}

Test(sht, roundtrip_many_random_seeds, .timeout = 120)
{
	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct scenario sc = base(seed);
		uint64_t s = seed * 7919;

		sc.nattrs = 1 + (uint32_t)rnd_below(&s, 300);
		sc.nops = 1000 + rnd_below(&s, 20000);
		sc.node_size = 4096u << rnd_below(&s, 3);
		sc.max_children = 2 + (uint32_t)rnd_below(&s, 30);
		sc.zero_pct = (int)rnd_below(&s, 20);
		sc.older_pct = (int)rnd_below(&s, 10);
		sc.null_pct = (int)rnd_below(&s, 20);
		sc.string_pct = (int)rnd_below(&s, 30);
		sc.hot_attrs = 1 + (uint32_t)rnd_below(&s, sc.nattrs);
		sc.max_step = 1 + (uint32_t)rnd_below(&s, 1000000);
		roundtrip(&sc);
	}
}

Test(sht, zero_length_intervals)
{
	struct scenario sc = base(101);

	sc.zero_pct = 60; /* many values replaced at the same instant */
	roundtrip(&sc);
}

Test(sht, one_attribute)
{
	struct scenario sc = base(102);

	sc.nattrs = 1;
	sc.hot_attrs = 1;
	roundtrip(&sc);
}

Test(sht, thousands_of_attributes, .timeout = 60)
{
	struct scenario sc = base(103);

	sc.nattrs = 3000;
	sc.nops = 30000;
	sc.hot_attrs = 100;
	sc.hot_pct = 50;
	sc.node_size = 16384;
	sc.max_children = 8;
	roundtrip(&sc);
}

Test(sht, long_lived_intervals_span_many_nodes)
{
	struct scenario sc = base(104);

	sc.nattrs = 30;
	sc.hot_attrs = 2; /* 28 attributes change rarely: their intervals cover many leaves */
	sc.hot_pct = 99;
	sc.nops = 40000;
	sc.max_children = 3;
	roundtrip(&sc);
}

Test(sht, string_values)
{
	struct scenario sc = base(105);

	sc.string_pct = 80;
	roundtrip(&sc);
}

Test(sht, null_gaps)
{
	struct scenario sc = base(106);

	sc.null_pct = 45;
	roundtrip(&sc);
}

Test(sht, big_and_negative_integers)
{
	struct scenario sc = base(107);

	sc.bigint_pct = 60;
	sc.max_step = 4000000000u; /* seconds apart: big deltas */
	roundtrip(&sc);
}

Test(sht, default_node_size)
{
	struct scenario sc = base(108);

	sc.node_size = 0;
	sc.max_children = 0;
	sc.nops = 60000;
	roundtrip(&sc);
}

Test(sht, queries_with_a_tiny_core_cache, .timeout = 60)
{
	const char *path = tmp_path("cache");
	struct scenario sc = base(109);
	struct sht_reader *r;
	struct model m;

	sc.nattrs = 200;
	sc.hot_attrs = 20;
	sc.max_children = 3;
	write_scenario(path, &sc, &m, SIZE_MAX, 0, NULL);
	r = open_ok(path);
	sht_set_cache(r, 0); /* every core decoded again: the ones in use must stay */
	cmp_all(r, &m, 109, 600, 100);
	sht_set_cache(r, 20000); /* a few cores: evictions during range walks */
	cmp_all(r, &m, 110, 600, 100);
	sht_close(r);
	model_free(&m);
	unlink(path);
}

/*
 * Many busy attributes and small nodes: every node boundary cuts more open
 * intervals than a core can hold. Cores then take several blocks instead of
 * splitting again and again, so the tree stays shallow (fan-out >= 4).
 */
Test(sht, many_busy_attributes_keep_the_tree_shallow, .timeout = 120)
{
	const char *path = tmp_path("busy");
	struct scenario sc = base(110);
	struct sht_writer_stats st;
	struct sht_check_report rep;
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	struct model m;
	double leaves;

	sc.nattrs = 600;
	sc.hot_attrs = 600;
	sc.hot_pct = 100;
	sc.nops = 80000;
	sc.node_size = 4096;
	sc.max_children = 32;
	write_scenario(path, &sc, &m, SIZE_MAX, 0, &st);
	cr_assert_gt(st.big_cores, 0, "this data needs cores of several blocks");
	leaves = (double)st.nodes; /* an upper bound */
	cr_assert_leq(st.height, 1 + (uint32_t)(log(leaves) / log(4.0)), "height %u for %.0f blocks", st.height,
		      leaves);
	r = open_ok(path);
	cmp_all(r, &m, 110, 1500, 100);
	sht_close(r);
	check_ok(path);
	model_free(&m);

	/* the same, abandoned: the rebuilt cores take several blocks too; then repaired */
	write_scenario(path, &sc, &m, sc.nops * 2 / 3, 0, &st);
	r = open_ok(path);
	cr_assert(sht_get_info(r)->recovered);
	cmp_all(r, &m, 111, 1500, 100);
	sht_close(r);
	/* cut anywhere, also inside a node of several blocks: what is whole still reads */
	{
		const char *cut = tmp_path("busy-cut");
		FILE *f = fopen(path, "rb"), *g;
		long size, len;
		char *data;

		cr_assert_not_null(f);
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		rewind(f);
		data = malloc((size_t)size);
		cr_assert_eq(fread(data, 1, (size_t)size, f), (size_t)size);
		fclose(f);
		for (len = size - 1; len > 4096; len -= 4096 * 7 + 1234) {
			g = fopen(cut, "wb");
			cr_assert_eq(fwrite(data, 1, (size_t)len, g), (size_t)len);
			fclose(g);
			r = open_ok(cut);
			cmp_all(r, &m, (uint64_t)len, 200, 20);
			sht_close(r);
			check_ok(cut);
		}
		free(data);
		unlink(cut);
	}
	cr_assert_eq(sht_repair(path, &rep, &err), 0, "%s", err.msg);
	cr_assert(rep.ok && rep.closed);
	r = open_ok(path);
	cmp_all(r, &m, 112, 1500, 100);
	sht_close(r);
	model_free(&m);
	unlink(path);
}

Test(sht, older_timestamps_are_clamped_and_counted)
{
	const char *path = tmp_path("clamp");
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_interval *iv;
	struct sht_writer *w;
	struct sht_reader *r;
	uint32_t a;
	size_t n;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/vm1/vcpus/0/state", &a), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 100, 1), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 200, 2), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 150, 3), 0); /* older: clamped to 200 */
	cr_assert_eq(sht_writer_set_int(w, a, 300, 4), 0);
	cr_assert_eq(sht_writer_close(w, 250, &err), 0, "%s", err.msg); /* older: clamped to 300 */
	r = open_ok(path);
	cr_assert_eq(sht_get_info(r)->nclamped, 2);
	cr_assert_eq(sht_query_range(r, a, NULL, 0, UINT64_MAX, &iv, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 4);
	cr_assert(iv[0].start == 100 && iv[0].end == 200 && iv[0].value.i == 1);
	cr_assert(iv[1].start == 200 && iv[1].end == 200 && iv[1].value.i == 2, "zero-length, never negative");
	cr_assert(iv[2].start == 200 && iv[2].end == 300 && iv[2].value.i == 3);
	cr_assert(iv[3].start == 300 && iv[3].end == 300 && iv[3].value.i == 4);
	free(iv);
	sht_close(r);
	unlink(path);
}

Test(sht, setting_the_same_value_keeps_the_interval)
{
	const char *path = tmp_path("same");
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_interval *iv;
	struct sht_writer *w;
	struct sht_reader *r;
	uint32_t a;
	size_t n;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/a", &a), 0);
	cr_assert_eq(sht_writer_set_str(w, a, 10, "x"), 0);
	cr_assert_eq(sht_writer_set_str(w, a, 20, "x"), 0);
	cr_assert_eq(sht_writer_set_null(w, a, 30), 0);
	cr_assert_eq(sht_writer_set_null(w, a, 40), 0);
	cr_assert_eq(sht_writer_close(w, 50, &err), 0, "%s", err.msg);
	r = open_ok(path);
	cr_assert_eq(sht_query_range(r, a, NULL, 0, 100, &iv, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 1);
	cr_assert(iv[0].start == 10 && iv[0].end == 30 && !strcmp(iv[0].value.s, "x"));
	free(iv);
	sht_close(r);
	unlink(path);
}

Test(sht, header_metadata_and_clock_mapping)
{
	const char *path = tmp_path("meta");
	struct sht_meta meta[] = { { "host", "kvm-host-7" }, { "kernel", "6.18.0" }, { "command", "vcpustat record" } };
	struct sht_writer_opts o = { .mono_start_ns = 123456789, .real_start_ns = 1795356187000000000ull,
				     .meta = meta, .nmeta = 3, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	struct sht_reader *r;
	const struct sht_info *in;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_close(w, 1000, &err), 0, "%s", err.msg);
	r = open_ok(path);
	in = sht_get_info(r);
	cr_assert_eq(in->mono_start_ns, 123456789);
	cr_assert_eq(in->real_start_ns, 1795356187000000000ull);
	cr_assert_eq(in->version, SHT_FORMAT_VERSION);
	cr_assert_eq(in->node_size, 16384);
	cr_assert_eq(sht_nmeta(r), 3);
	cr_assert_str_eq(sht_meta_at(r, 1)->key, "kernel");
	cr_assert_str_eq(sht_meta_get(r, "command"), "vcpustat record");
	cr_assert_null(sht_meta_get(r, "nope"));
	cr_assert_eq(in->start, 0);
	cr_assert_eq(in->end, 1000);
	cr_assert_eq(in->nintervals, 0);
	cr_assert_eq(in->last_node.index, 0, "one empty root leaf");
	sht_close(r);
	check_ok(path);
	unlink(path);
}

Test(sht, metadata_too_big_is_an_error)
{
	static char big[5000];
	struct sht_meta meta[] = { { "blob", big } };
	struct sht_writer_opts o = { .node_size = 4096, .meta = meta, .nmeta = 1, .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;

	memset(big, 'x', sizeof(big) - 1);
	cr_assert_eq(sht_writer_create(&w, tmp_path("big"), &o, &err), -E2BIG);
	cr_assert(strstr(err.msg, "metadata"), "%s", err.msg);
	unlink(tmp_path("big"));
}

Test(sht, attribute_tree_lookup_and_children)
{
	const char *path = tmp_path("attrs");
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	struct sht_reader *r;
	uint32_t a, b, c, vcpus, x, id;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/vm1/vcpus/0/state", &a), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/vm1/vcpus/1/state", &b), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/vm1/vcpus/0/state", &c), 0);
	cr_assert_eq(a, c, "the same path is the same attribute");
	cr_assert_eq(sht_writer_attr(w, "/vms/vm1/vcpus", &vcpus), 0);
	cr_assert_eq(sht_writer_attr_child(w, vcpus, "2", &x), 0);
	cr_assert_eq(sht_writer_attr(w, "/host/cpus/0/current_tid", &id), 0);
	cr_assert_eq(sht_writer_attr(w, "relative/path", &id), -EINVAL);
	cr_assert_eq(sht_writer_attr(w, "/a//b", &id), -EINVAL);
	cr_assert_eq(sht_writer_attr(w, "/", &id), -EINVAL);
	cr_assert(strstr(sht_writer_error(w)->msg, path), "%s", sht_writer_error(w)->msg);
	cr_assert_eq(sht_writer_set_int(w, a, 5, 1), 0);
	cr_assert_eq(sht_writer_close(w, 10, &err), 0, "%s", err.msg);

	r = open_ok(path);
	cr_assert_eq(sht_nattrs(r), 12, "%u attributes", sht_nattrs(r)); /* vms vm1 vcpus 0 state 1 state 2 host cpus 0 current_tid */
	cr_assert_eq(sht_attr_lookup(r, "/vms/vm1/vcpus/0/state", &id), 0);
	cr_assert_eq(id, a);
	cr_assert_str_eq(sht_attr_path(r, b), "/vms/vm1/vcpus/1/state");
	cr_assert_str_eq(sht_attr_name(r, x), "2");
	cr_assert_eq(sht_attr_lookup(r, "/vms/vm1/vcpus/9", &id), -ENOENT);
	cr_assert_eq(sht_attr_lookup(r, "/vms/", &id), -ENOENT);
	cr_assert_eq(sht_attr_lookup(r, "/vms/vm1/vcpus", &id), 0);
	cr_assert_eq(id, vcpus);
	/* children of /vms/vm1/vcpus in creation order: 0, 1, 2 */
	id = sht_attr_first_child(r, vcpus);
	cr_assert_str_eq(sht_attr_name(r, id), "0");
	id = sht_attr_next_sibling(r, id);
	cr_assert_str_eq(sht_attr_name(r, id), "1");
	id = sht_attr_next_sibling(r, id);
	cr_assert_str_eq(sht_attr_name(r, id), "2");
	cr_assert_eq(sht_attr_next_sibling(r, id), SHT_NO_ATTR);
	/* top level: vms, host */
	id = sht_attr_first_child(r, SHT_NO_ATTR);
	cr_assert_str_eq(sht_attr_name(r, id), "vms");
	id = sht_attr_next_sibling(r, id);
	cr_assert_str_eq(sht_attr_name(r, id), "host");
	cr_assert_eq(sht_attr_next_sibling(r, id), SHT_NO_ATTR);
	cr_assert_eq(sht_attr_lookup(r, "/vms/vm1", &id), 0);
	cr_assert_eq(sht_attr_parent(r, vcpus), id);
	cr_assert_eq(sht_attr_parent(r, id), sht_attr_first_child(r, SHT_NO_ATTR));
	sht_close(r);
	unlink(path);
}

Test(sht, stabbing_subset_and_outside_the_trace)
{
	const char *path = tmp_path("subset");
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_interval out[2];
	struct sht_writer *w;
	struct sht_reader *r;
	uint8_t want[2] = { 0, 1 };
	uint32_t a, b;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/a", &a), 0);
	cr_assert_eq(sht_writer_attr(w, "/b", &b), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 10, 1), 0);
	cr_assert_eq(sht_writer_set_int(w, b, 10, 2), 0);
	cr_assert_eq(sht_writer_close(w, 100, &err), 0, "%s", err.msg);
	r = open_ok(path);
	cr_assert_eq(sht_query_at(r, 50, want, out, &err), 0, "%s", err.msg);
	cr_assert_eq(out[a].value.type, SHT_NULL, "not selected");
	cr_assert_eq(out[b].value.i, 2);
	cr_assert_eq(sht_query_at(r, 5, NULL, out, &err), 0);
	cr_assert_eq(out[a].value.type, SHT_NULL, "before the first value");
	cr_assert_eq(sht_query_at(r, 100, NULL, out, &err), 0);
	cr_assert_eq(out[a].value.type, SHT_NULL, "intervals are half-open: nothing at the end");
	cr_assert_eq(sht_query_at(r, 99, NULL, out, &err), 0);
	cr_assert_eq(out[a].value.i, 1);
	sht_close(r);
	unlink(path);
}

/* A writer abandoned at any point leaves exactly the intervals that ended before its horizon. */
Test(sht, abandoned_writer_keeps_everything_before_the_horizon, .timeout = 120)
{
	uint64_t rebuilt = 0, journaled = 0;

	for (uint64_t seed = 201; seed <= 230; seed++) {
		const char *path = tmp_path("abandon");
		struct scenario sc = base(seed);
		uint64_t s = seed;
		struct sht_writer_stats st;
		struct sht_reader *r;
		struct model m;
		const struct sht_info *in;

		sc.nattrs = 1 + (uint32_t)rnd_below(&s, 200);
		sc.hot_attrs = 1 + (uint32_t)rnd_below(&s, sc.nattrs);
		sc.max_children = 2 + (uint32_t)rnd_below(&s, 6);
		sc.string_pct = 10;
		write_scenario(path, &sc, &m, rnd_below(&s, sc.nops), 0, &st);
		r = open_ok(path);
		in = sht_get_info(r);
		cr_assert_not(in->closed);
		cr_assert(in->recovered);
		cr_assert_eq(in->horizon, st.horizon, "seed %llu: horizon %llu, the writer said %llu",
			     (unsigned long long)seed, (unsigned long long)in->horizon, (unsigned long long)st.horizon);
		cr_assert_eq(in->end, in->horizon);
		rebuilt += in->rebuilt;
		journaled += st.journaled;
		cmp_all(r, &m, seed, 1500, 100);
		sht_close(r);
		check_ok(path);
		model_free(&m);
		unlink(path);
	}
	cr_assert_gt(rebuilt, 30, "the scenarios must exercise rebuilt cores (%llu)", (unsigned long long)rebuilt);
	cr_assert_gt(journaled, 1000, "and journals (%llu)", (unsigned long long)journaled);
}

/* The same, with the file cut at any byte (a write torn by the kill). */
Test(sht, file_cut_anywhere_reads_up_to_its_last_whole_leaf, .timeout = 120)
{
	const char *path = tmp_path("cut"), *cut = tmp_path("cut2");
	struct scenario sc = base(301);
	struct model m;
	FILE *f;
	char *data;
	long size;

	write_scenario(path, &sc, &m, sc.nops - 1, 0, NULL);
	f = fopen(path, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	data = malloc((size_t)size);
	cr_assert_eq(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	for (long len = 4096; len <= size; len += 4096 * 3 + 1 + (len % 977)) {
		struct vcpustat_error err = { 0 };
		struct sht_reader *r;

		f = fopen(cut, "wb");
		cr_assert_eq(fwrite(data, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		cr_assert_eq(sht_open(&r, cut, &err), 0, "cut at %ld: %s", len, err.msg);
		cr_assert_eq(sht_get_info(r)->tail_bytes, (uint64_t)len % 4096);
		cmp_all(r, &m, (uint64_t)len, 300, 20);
		sht_close(r);
	}
	free(data);
	model_free(&m);
	unlink(path);
	unlink(cut);
}

Test(sht, flush_makes_intervals_durable)
{
	const char *path = tmp_path("flush");
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_interval out[8];
	struct sht_writer *w;
	struct sht_reader *r;
	uint32_t a;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/v/vcpus/0/state", &a), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 10, 1), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 20, 2), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 30, 3), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 40, 4), 0);
	cr_assert_eq(sht_writer_flush(w), 0);
	sht_writer_abandon(w); /* as if killed */
	r = open_ok(path);
	cr_assert_eq(sht_get_info(r)->horizon, 40);
	cr_assert_eq(sht_query_at(r, 15, NULL, out, &err), 0, "%s", err.msg);
	cr_assert_eq(out[a].value.i, 1);
	cr_assert_eq(sht_query_at(r, 25, NULL, out, &err), 0, "%s", err.msg);
	cr_assert_eq(out[a].value.i, 2);
	cr_assert_eq(out[a].end, 30);
	cr_assert_eq(sht_query_at(r, 35, NULL, out, &err), 0, "%s", err.msg);
	cr_assert_eq(out[a].value.type, SHT_NULL, "[30, 40) ends at the horizon: not kept (section 7)");
	sht_close(r);
	unlink(path);
}

Test(sht, killed_before_the_first_leaf_is_an_empty_history)
{
	const char *path = tmp_path("empty");
	struct sht_writer_opts o = { .no_sync = true };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	struct sht_reader *r;
	struct sht_interval out[2];
	uint32_t a;

	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/a", &a), 0);
	cr_assert_eq(sht_writer_set_int(w, a, 10, 1), 0);
	sht_writer_abandon(w);
	r = open_ok(path);
	cr_assert_eq(sht_get_info(r)->nodes, 0);
	cr_assert_eq(sht_nattrs(r), 0, "the definition was in the unsealed leaf");
	cr_assert_eq(sht_query_at(r, 10, NULL, out, &err), 0);
	sht_close(r);
	check_ok(path);
	unlink(path);
}

Test(sht, open_from_memory)
{
	const char *path = tmp_path("mem");
	struct scenario sc = base(401);
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	struct model m;
	FILE *f;
	char *data;
	long size;

	write_scenario(path, &sc, &m, SIZE_MAX, 0, NULL);
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	data = malloc((size_t)size);
	cr_assert_eq(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	cr_assert_eq(sht_open_mem(&r, "image", data, (size_t)size, &err), 0, "%s", err.msg);
	cmp_all(r, &m, 401, 500, 50);
	sht_close(r);
	free(data);
	model_free(&m);
	unlink(path);
}

/*
 * sht_writer_close_size() is a bound (record --max-size relies on it): the
 * bound taken before the last set, closed right after it, is never below the
 * file's size. Small nodes (4 KiB) and fan-out 4 make deep trees, splits and
 * big cores; attributes and strings come along the way (their definitions).
 */
Test(sht, close_size_bounds_the_closed_file, .timeout = 120)
{
	uint64_t worst_slack = UINT64_MAX;

	for (unsigned int seed = 1; seed <= 24; seed++) {
		const char *path = tmp_path("closesize");
		struct sht_writer_opts o = { .no_sync = true, .node_size = seed % 2 ? 4096 : 16384, .max_children = 4 };
		struct vcpustat_error err = { 0 };
		uint32_t ids[300], nattrs = 0, x = seed * 2654435761u;
		unsigned int steps = 200 + (seed * 7919) % 20000;
		uint64_t t = 0, bound = 0;
		struct sht_writer *w;
		struct stat sb;

		cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
		for (unsigned int s = 0; s < steps; s++) {
			char name[64], str[32];
			uint32_t a;
			size_t defs = 0;

			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			t += x % 1000;
			if (nattrs < 300 && (nattrs < 5 || x % 50 == 0)) {
				snprintf(name, sizeof(name), "/host/threads/%u/state", nattrs);
				defs = strlen(name) + 12 * 4;
			}
			snprintf(str, sizeof(str), "s%u", x % 97);
			bound = sht_writer_close_size(w, defs + (x % 3 == 0 ? strlen(str) + 8 : 0), false);
			if (defs) {
				cr_assert_eq(sht_writer_attr(w, name, &ids[nattrs]), 0);
				nattrs++;
			}
			a = ids[x % nattrs];
			if (x % 3 == 0)
				cr_assert_eq(sht_writer_set_str(w, a, t, str), 0);
			else if (x % 11 == 0)
				cr_assert_eq(sht_writer_set_null(w, a, t), 0);
			else
				cr_assert_eq(sht_writer_set_int(w, a, t, (int64_t)(x % 100000)), 0);
		}
		cr_assert_eq(sht_writer_close(w, t + 1, &err), 0, "%s", err.msg);
		cr_assert_eq(stat(path, &sb), 0);
		cr_assert_leq((uint64_t)sb.st_size, bound, "seed %u: %lld bytes, over the bound %llu", seed,
			      (long long)sb.st_size, (unsigned long long)bound);
		if (bound - (uint64_t)sb.st_size < worst_slack)
			worst_slack = bound - (uint64_t)sb.st_size;
		unlink(path);
	}
	cr_log_info("close_size: never below the file; the closest, %llu bytes above", (unsigned long long)worst_slack);
}
