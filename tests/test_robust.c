// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Never destroy what the user has (issue 16): a repair keeps every intact
 * interval, no output overwrites an input, endless inputs are bounded, every
 * write is checked, and the messages name what was wrong.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <jansson.h>
#include "sht_model.h"
#include "record/record.h"
#include "helpers.h"

#define NS 4096u

#include "cli_run.h"

/* ---- repair keeps every intact interval ---- */

/* A closed file of about 10 k intervals in 4 KiB nodes. */
static void make_10k(const char *path)
{
	struct scenario sc = { .seed = 16, .nattrs = 40, .nops = 12000, .node_size = NS, .max_children = 4,
			       .zero_pct = 5, .null_pct = 5, .string_pct = 10, .bigint_pct = 5, .hot_pct = 80,
			       .hot_attrs = 10, .max_step = 3000 };
	struct op *ops = make_ops(&sc);
	struct vcpustat_error err = { 0 };
	struct sht_writer *w = open_writer(path, &sc);
	uint32_t ids[40];
	uint64_t last = 0;

	create_attrs(w, sc.nattrs, ids);
	for (size_t k = 0; k < sc.nops; k++) {
		apply_op(w, ids, &ops[k]);
		last = ops[k].t > last ? ops[k].t : last;
	}
	cr_assert_eq(sht_writer_close(w, last + 10, &err), 0, "%s", err.msg);
	free(ops);
}

struct ivl {
	uint32_t attr;
	uint64_t start, end;
	int type;
	int64_t i;
	char s[64];
};

static int ivl_cmp(const void *a, const void *b)
{
	const struct ivl *x = a, *y = b;

	if (x->attr != y->attr)
		return x->attr < y->attr ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->type != y->type)
		return x->type - y->type;
	if (x->i != y->i)
		return x->i < y->i ? -1 : 1;
	return strcmp(x->s, y->s);
}

/* Every interval of the file at path, sorted (attribute paths are compared by id: a repair keeps them). */
static struct ivl *all_intervals(const char *path, size_t *n)
{
	struct vcpustat_error err = { 0 };
	struct sht_interval *iv;
	struct sht_reader *r;
	struct ivl *out;

	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_query_range(r, SHT_NO_ATTR, NULL, 0, UINT64_MAX, &iv, n, &err), 0, "%s", err.msg);
	out = calloc(*n + 1, sizeof(*out));
	for (size_t k = 0; k < *n; k++) {
		out[k] = (struct ivl){ iv[k].attr, iv[k].start, iv[k].end, iv[k].value.type, iv[k].value.i, "" };
		if (iv[k].value.type == SHT_STR) {
			out[k].i = 0;
			snprintf(out[k].s, sizeof(out[k].s), "%s", iv[k].value.s);
		}
	}
	free(iv);
	sht_close(r);
	qsort(out, *n, sizeof(*out), ivl_cmp);
	return out;
}

static uint32_t le32_at(const char *path, off_t off)
{
	int fd = open(path, O_RDONLY);
	uint32_t v = 0;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &v, 4, off), 4);
	close(fd);
	return v;
}

static void flip(const char *path, off_t off, uint8_t mask)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= mask;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	cr_assert_eq(system(cmd), 0);
}

/*
 * Flip a byte in node k of a copy of the 10 k file, repair it to a new file:
 * the repaired file holds only intervals of the original, and misses at most
 * those that node k held (a core's come back from the leaves' journals).
 */
static void repair_node(uint32_t k, bool leaf_expected)
{
	const char *orig = tmp_path("rep-orig"), *bad = tmp_path("rep-bad"), *fixed = tmp_path("rep-fixed");
	struct ivl *o, *f;
	size_t no, nf, i, j;
	uint32_t held;
	uint8_t kind;
	struct run r;
	int fd;

	make_10k(orig);
	copy_file(orig, bad);
	fd = open(orig, O_RDONLY);
	cr_assert_eq(pread(fd, &kind, 1, (off_t)(k + 1) * NS + 8), 1);
	close(fd);
	cr_assert_eq(kind == SHT_NODE_LEAF, leaf_expected, "node %u is a %s", k, kind == 1 ? "leaf" : "core");
	held = le32_at(orig, (off_t)(k + 1) * NS + 40); /* nintervals */
	flip(bad, (off_t)(k + 1) * NS + 200, 0x10);
	unlink(fixed);
	RUN(&r, "check", bad, "--repair", "-o", fixed);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "intervals:") && strstr(r.out, "1 damaged node"), "%s", r.out);
	RUN(&r, "check", fixed);
	cr_assert_eq(r.status, 0, "the repaired file is good: %s", r.out);
	o = all_intervals(orig, &no);
	f = all_intervals(fixed, &nf);
	cr_assert_geq(no, 10000, "a 10 k-interval file (%zu)", no);
	for (i = j = 0; j < nf; j++) { /* f is a subset of o */
		while (i < no && ivl_cmp(&o[i], &f[j]) < 0)
			i++;
		cr_assert(i < no && !ivl_cmp(&o[i], &f[j]), "interval %zu of the repaired file [%llu, %llu) of #%u is not in the original",
			  j, (unsigned long long)f[j].start, (unsigned long long)f[j].end, f[j].attr);
		i++;
	}
	cr_assert_geq(nf + held, no, "node %u held %u intervals; %zu of %zu kept", k, held, nf, no);
	if (!leaf_expected)
		cr_assert_eq(nf, no, "a core's intervals are all in the leaves' journals");
	else
		cr_assert_lt(nf, no, "the leaf's own intervals are gone");
	free(o);
	free(f);
	/* the damaged input is untouched */
	cr_assert_neq(le32_at(bad, 0), 0);
	unlink(orig);
	unlink(bad);
	unlink(fixed);
}

/* The index of the last leaf, of the last tree node and of a leaf in the middle of the 10 k file. */
static void last_nodes(uint32_t *last_leaf, uint32_t *last_node, uint32_t *mid_leaf)
{
	const char *p = tmp_path("rep-shape");
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	uint32_t findex;
	int fd;

	make_10k(p);
	findex = le32_at(p, NS - 64 + 16);
	*last_node = findex - 1;
	cr_assert_eq(sht_open(&r, p, &err), 0, "%s", err.msg);
	sht_close(r);
	fd = open(p, O_RDONLY);
	for (uint32_t k = findex; k-- > 0;) {
		uint8_t kind;

		cr_assert_eq(pread(fd, &kind, 1, (off_t)(k + 1) * NS + 8), 1);
		if (kind == SHT_NODE_LEAF) {
			*last_leaf = k;
			break;
		}
	}
	for (uint32_t k = findex / 2; k-- > 0;) {
		uint8_t kind;

		cr_assert_eq(pread(fd, &kind, 1, (off_t)(k + 1) * NS + 8), 1);
		if (kind == SHT_NODE_LEAF) {
			*mid_leaf = k;
			break;
		}
	}
	close(fd);
	unlink(p);
}

Test(robust, repair_keeps_every_interval_but_the_first_nodes)
{
	repair_node(0, true);
}

Test(robust, repair_keeps_every_interval_but_a_middle_nodes)
{
	uint32_t leaf, last, mid;

	last_nodes(&leaf, &last, &mid);
	cr_assert(mid > 5 && mid < leaf - 5, "node %u of %u", mid, last);
	repair_node(mid, true);
}

Test(robust, repair_keeps_every_interval_but_the_last_leafs)
{
	uint32_t leaf, last, mid;

	last_nodes(&leaf, &last, &mid);
	repair_node(leaf, true);
}

Test(robust, repair_of_the_last_node_the_root_loses_nothing)
{
	uint32_t leaf, last, mid;

	last_nodes(&leaf, &last, &mid);
	repair_node(last, false);
}

Test(robust, repair_needs_a_target_and_in_place_keeps_the_original)
{
	const char *p = tmp_path("rep-inplace");
	char orig[600];
	struct run r;
	struct stat st0, st1;

	make_10k(p);
	snprintf(orig, sizeof(orig), "%s.orig", p);
	unlink(orig);
	flip(p, 3 * NS + 300, 0x01);
	cr_assert_eq(stat(p, &st0), 0);
	RUN(&r, "check", p, "--repair");
	cr_assert_eq(r.status, 2, "no target: a usage error (%s)", r.err);
	cr_assert(strstr(r.err, "-o FIXED.sht") && strstr(r.err, "--in-place"), "%s", r.err);
	RUN(&r, "check", p, "--repair", "-o", p);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "input"), "%s", r.err);
	RUN(&r, "check", p, "--repair", "--in-place");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, orig), "says where the original is: %s", r.out);
	cr_assert_eq(stat(orig, &st1), 0, "%s is kept", orig);
	cr_assert_eq(st1.st_ino, st0.st_ino, "it is the original file");
	RUN(&r, "check", p);
	cr_assert_eq(r.status, 0, "%s", r.out);
	RUN(&r, "check", p, "--repair", "--in-place");
	cr_assert_eq(r.status, 0, "a good file: nothing to do (%s%s)", r.out, r.err);
	unlink(orig);
	unlink(p);
}

/* ---- no output ever overwrites an input ---- */

static char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

/*
 * Every command that takes an input file and -o, given the same file as its
 * output by path, by hard link and by symlink: refused before anything is
 * written, the input byte for byte unchanged.
 */
Test(robust, no_command_writes_over_its_input)
{
	const char *in = tmp_path("same-in");
	char hard[600], sym[600], procfd[64];
	static const char *const cmds[][8] = {
		{ "import", "--host", "IN", "-o", "OUT" },
		{ "export", "--file", "IN", "-o", "OUT" },
		{ "plot", "IN", "-o", "OUT" },
		{ "replay", "IN", "-o", "OUT" },
		{ "check", "IN", "--repair", "-o", "OUT" },
	};
	size_t n0, n1;
	char *before, *after;

	make_10k(in);
	flip(in, 2 * NS + 100, 0x01); /* so that check --repair would have work to do */
	before = read_all(in, &n0);
	snprintf(hard, sizeof(hard), "%s.hard", in);
	snprintf(sym, sizeof(sym), "%s.sym", in);
	unlink(hard);
	unlink(sym);
	cr_assert_eq(link(in, hard), 0);
	cr_assert_eq(symlink(in, sym), 0);
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		for (int way = 0; way < 4; way++) {
			const char *out = way == 0 ? in : way == 1 ? hard : way == 2 ? sym : procfd;
			const char *argv[10] = { vcpustat_bin() };
			struct run r;
			size_t k;
			int fd = -1;

			if (way == 3) { /* /proc/self/fd/N of the test: the same file through /proc */
				fd = open(in, O_RDONLY);
				snprintf(procfd, sizeof(procfd), "/proc/%d/fd/%d", (int)getpid(), fd);
			}
			for (k = 0; cmds[c][k]; k++)
				argv[k + 1] = !strcmp(cmds[c][k], "IN") ? in : !strcmp(cmds[c][k], "OUT") ? out : cmds[c][k];
			argv[k + 1] = NULL;
			run_io(&r, argv, NULL, NULL, 60);
			if (fd >= 0)
				close(fd);
			cr_assert_eq(r.status, 2, "%s with -o %s: refused as a usage error (%d): %s", cmds[c][0], out,
				     r.status, r.err);
			cr_assert(strstr(r.err, "input") && strstr(r.err, out), "%s: the message names it: %s",
				  cmds[c][0], r.err);
			after = read_all(in, &n1);
			cr_assert(n1 == n0 && !memcmp(before, after, n0), "%s -o %s: the input is unchanged", cmds[c][0],
				  out);
			free(after);
		}
	}
	free(before);
	unlink(hard);
	unlink(sym);
	unlink(in);
}

/* A trace of n lines (tools' trace-gen) and its import, for the rows of issue 16. */
static void make_trace(const char *txt, const char *sht, int lines)
{
	char cmd[1024], out[4096];

	snprintf(cmd, sizeof(cmd), "'%s/bin/trace-gen' %d '%s' 2>&1", getenv("VCPUSTAT_BUILD_DIR") ?: VCPUSTAT_BUILD_DIR,
		 lines, txt);
	cr_assert_eq(run_shell(cmd, out, sizeof(out)), 0, "%s", out);
	if (sht) {
		struct run r;

		unlink(sht);
		RUN(&r, "import", "--host", txt, "-o", sht);
		cr_assert_eq(r.status, 0, "%s", r.err);
	}
}

/* Row 1: import onto its own input was a bus error and an emptied trace. */
Test(robust, row1_import_onto_its_input_is_refused)
{
	const char *txt = "/tmp/vcpustat-robust-row1.txt";
	size_t n0, n1;
	char *before, *after;
	struct run r;

	make_trace(txt, NULL, 20000);
	before = read_all(txt, &n0);
	RUN(&r, "import", "--host", txt, "-o", txt);
	cr_assert_eq(r.status, 2, "%d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "refusing to write over an input"), "%s", r.err);
	after = read_all(txt, &n1);
	cr_assert(n0 == n1 && !memcmp(before, after, n0), "the trace is unchanged");
	free(before);
	free(after);
	unlink(txt);
}

/* Row 4: endless input (/dev/zero) for sync --pairs and import stops at once, saying where. */
Test(robust, row4_endless_input_stops_with_a_message, .timeout = 60)
{
	const char *out = "/tmp/vcpustat-robust-row4.sht";
	struct run r;

	unlink(out);
	RUN(&r, "sync", "--pairs", "/dev/zero");
	cr_assert_eq(r.status, 1, "%d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "/dev/zero") && strstr(r.err, "offset 0") && strstr(r.err, "not text"), "%s", r.err);
	RUN(&r, "import", "--host", "/dev/zero", "-o", out);
	cr_assert_eq(r.status, 1, "%d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "/dev/zero") && strstr(r.err, "offset 0"), "%s", r.err);
	cr_assert_neq(access(out, F_OK), 0, "no output");
	{ /* a pipe that never ends, with text and no newline: bounded too (the limit, not memory, stops it) */
		char cmd[1024], buf[4096];

		snprintf(cmd, sizeof(cmd), "yes x | tr -d '\\n' | head -c 300000000 | '%s' sync --pairs - 2>&1",
			 vcpustat_bin());
		cr_assert_neq(run_shell(cmd, buf, sizeof(buf)), 0, "%s", buf);
		cr_assert(strstr(buf, "<stdin>"), "%s", buf);
	}
}

/* Row 5: a FIFO that no one writes never blocks a reader; SHT readers refuse it, saying what it is. */
Test(robust, row5_a_fifo_never_blocks, .timeout = 60)
{
	const char *fifo = "/tmp/vcpustat-robust-row5.fifo";
	static const char *const cmds[][6] = {
		{ "query", "FIFO", "--at", "1" }, { "report", "FIFO" }, { "check", "FIFO" },
		{ "export", "--file", "FIFO" },	  { "plot", "FIFO", "-o", "-" },
	};
	struct run r;

	unlink(fifo);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		const char *argv[8] = { vcpustat_bin() };
		size_t k;

		for (k = 0; cmds[c][k]; k++)
			argv[k + 1] = !strcmp(cmds[c][k], "FIFO") ? fifo : cmds[c][k];
		argv[k + 1] = NULL;
		run_io(&r, argv, NULL, NULL, 20);
		cr_assert_neq(r.status, -1, "%s: it ends by itself", cmds[c][0]);
		cr_assert_eq(r.status, 1, "%s: %d %s", cmds[c][0], r.status, r.err);
		cr_assert(strstr(r.err, fifo) && strstr(r.err, "FIFO"), "%s: %s", cmds[c][0], r.err);
	}
	{
		const char *argv[] = { vcpustat_bin(), "replay", fifo, "-o", "/tmp/vcpustat-robust-row5.sht", NULL };

		run_io(&r, argv, NULL, NULL, 20);
		cr_assert_eq(r.status, 1, "replay: %d %s", r.status, r.err);
	}
	{
		const char *argv[] = { vcpustat_bin(), "sync", "--pairs", fifo, NULL };

		run_io(&r, argv, NULL, NULL, 20);
		cr_assert_neq(r.status, -1, "sync --pairs: it ends by itself");
	}
	unlink("/tmp/vcpustat-robust-row5.sht");
	unlink(fifo);
}

/* Row 7: output to a full disk is an error naming stdout, in every command that prints. */
Test(robust, row7_a_full_stdout_is_an_error, .timeout = 120)
{
	const char *txt = "/tmp/vcpustat-robust-row7.txt", *sht = "/tmp/vcpustat-robust-row7.sht";
	static const char *const cmds[][6] = {
		{ "query", "SHT", "--path", "/**" }, { "query", "SHT", "--at", "0.001" }, { "report", "SHT" },
		{ "check", "SHT" }, { "export", "--file", "SHT" }, { "--help" },
	};
	struct run r;

	make_trace(txt, sht, 20000);
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		const char *argv[8] = { vcpustat_bin() };
		size_t k;

		for (k = 0; cmds[c][k]; k++)
			argv[k + 1] = !strcmp(cmds[c][k], "SHT") ? sht : cmds[c][k];
		argv[k + 1] = NULL;
		run_io(&r, argv, "/dev/full", NULL, 60);
		cr_assert_eq(r.status, 1, "%s %s > /dev/full: exit %d: %s", cmds[c][0], cmds[c][1] ? cmds[c][1] : "",
			     r.status, r.err);
		cr_assert(strstr(r.err, "stdout: write failed"), "%s: %s", cmds[c][0], r.err);
	}
	unlink(txt);
	unlink(sht);
}

/* Rows 8-10: the messages say what was wrong. */
Test(robust, rows8_to_10_messages_name_what_was_wrong, .timeout = 120)
{
	const char *txt = "/tmp/vcpustat-robust-row8.txt", *sht = "/tmp/vcpustat-robust-row8.sht";
	const char *dir = "/tmp/vcpustat-robust-row10.sht";
	struct run r;

	make_trace(txt, sht, 20000);
	/* 8: only --from, after the end */
	RUN(&r, "report", sht, "--from", "1000s");
	cr_assert_neq(r.status, 0);
	cr_assert_null(strstr(r.err, "--to must come after"), "no --to was given: %s", r.err);
	cr_assert(strstr(r.err, "--from 1000s") && strstr(r.err, "after the end"), "%s", r.err);
	/* 9: a VM name that matches nothing */
	RUN(&r, "report", sht, "--vm", "nosuchvm");
	cr_assert_neq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.err, "nosuchvm") && strstr(r.err, "no VM"), "%s", r.err);
	RUN(&r, "export", "--file", sht, "--vm", "nosuchvm");
	cr_assert_neq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.err, "nosuchvm") && strstr(r.err, "no VM"), "%s", r.err);
	/* 10: a device, a directory, an empty output name */
	RUN(&r, "check", "/dev/zero");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "/dev/zero") && strstr(r.err, "character device"), "%s", r.err);
	rmdir(dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	RUN(&r, "check", dir);
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, dir) && strstr(r.err, "a directory"), "%s", r.err);
	rmdir(dir);
	RUN(&r, "plot", sht, "-o", "");
	cr_assert_eq(r.status, 2, "%d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "empty"), "%s", r.err);
	unlink(txt);
	unlink(sht);
}

/*
 * The recorder's limits are the record command's usage errors, said in its
 * options' words before anything loads (no root needed, no file written);
 * recorder_open() holds to the same, and refuses to rotate an atomic file.
 */
Test(robust, record_refuses_what_the_recorder_cannot_do_before_it_loads)
{
	const char *out = tmp_path("limits.sht");
	struct recorder_opts ro = { .path = out, .atomic = true, .rotate_ns = 1000000000 };
	struct vcpustat_error err = { 0 };
	struct recorder *rec = NULL;
	struct run r;

	unlink(out);
	RUN(&r, "record", "-o", out, "--max-size", "40960");
	cr_assert_eq(r.status, 2, "%d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "--max-size 40960: a file of the series takes at least 49152 bytes (48K"), "%s", r.err);
	RUN(&r, "record", "-o", out, "--keep", "3");
	cr_assert_eq(r.status, 2, "%d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "--keep only makes sense with --max-size or --rotate-every"), "%s", r.err);
	cr_assert_neq(access(out, F_OK), 0, "nothing recorded to %s", out);
	cr_assert_eq(recorder_open(&rec, &ro, &err), -EINVAL);
	cr_assert_null(rec);
	cr_assert(strstr(err.msg, "an atomic recording does not rotate"), "%s", err.msg);
	ro = (struct recorder_opts){ .path = out, .keep = 2 };
	cr_assert_eq(recorder_opts_check(&ro, &err), -EINVAL);
	cr_assert(strstr(err.msg, "--keep only"), "%s", err.msg);
	ro.max_bytes = 48 * 1024;
	cr_assert_eq(recorder_opts_check(&ro, &err), 0, "%s", err.msg);
	cr_assert_neq(access(out, F_OK), 0, "the checks wrote nothing");
}

/* ---- row 11: one exit status policy (docs/vcpustat.md, "Exit codes and messages") ---- */

/*
 * 2 for what the user asked wrongly (an unknown option, a bad value, a
 * missing or extra argument, a time that cannot be parsed or is outside the
 * file, a selection that matches nothing), 1 for what went wrong doing it (a
 * file that cannot be read), in every command. Run before anything needs
 * privileges: none of these gets as far as loading BPF.
 */
Test(robust, row11_one_exit_status_policy_in_every_command, .timeout = 300)
{
	const char *txt = tmp_path("policy-t.txt"), *sht = tmp_path("policy-t.sht"), *out = tmp_path("policy-out");
	const char *missing = "/nonexistent/vcpustat-policy.sht";
	static const char *const cmds[] = { "top", "record", "report", "export", "serve", "plot", "query",
					    "check", "import", "sync", "replay" };
	struct run r;

	make_trace(txt, sht, 2000);
	/* an unknown option: 2, in every command */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		RUN(&r, cmds[i], "--no-such-option");
		cr_expect_eq(r.status, 2, "%s --no-such-option: exit %d (%s)", cmds[i], r.status, r.err);
	}
	/* --help: the usage on stdout, 0, and nothing done (no error; record writes no file) */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		RUN(&r, cmds[i], "--help");
		cr_expect_eq(r.status, 0, "%s --help: exit %d (%s)", cmds[i], r.status, r.err);
		cr_expect(!strncmp(r.out, "usage: vcpustat ", 16), "%s --help: stdout %.80s", cmds[i], r.out);
		cr_expect_eq(r.err[0], 0, "%s --help: stderr %s", cmds[i], r.err);
	}
	RUN(&r, "record", "-o", out, "--help");
	cr_expect_eq(r.status, 0, "record -o F --help: exit %d (%s)", r.status, r.err);
	cr_expect_neq(access(out, F_OK), 0, "record -o F --help recorded to %s", out);
	/* bad values and arguments: 2 */
	struct {
		const char *argv[8];
	} usage[] = {
		{ { "query", sht, "--at", "-5" } },
		{ { "query", sht, "--at", "banana" } },
		{ { "query", sht, "--at", "1000000s" } },
		{ { "query", sht, "--path", "/no/such/attribute" } },
		{ { "query", sht, "--path", "/**", "--from", "soon" } },
		{ { "query" } },
		{ { "query", sht, sht } },
		{ { "report", sht, "--from", "-1" } },
		{ { "report", sht, "--from", "1000000s" } },
		{ { "report", sht, "--vm", "nosuchvm" } },
		{ { "report" } },
		{ { "export", "--file", sht, "--from", "banana" } },
		{ { "export", "--file", sht, "-f", "xml" } },
		{ { "export", "--file", sht, "--vm", "nosuchvm" } },
		{ { "plot", sht, "--from", "banana", "-o", out } },
		{ { "plot", sht } },
		{ { "top", "--file", sht, "--at", "banana", "-b" } },
		{ { "top", "-d", "0" } },
		{ { "top", "-n", "-3" } },
		{ { "record", "--duration", "banana", "-o", out } },
		{ { "record" } },
		{ { "record", "-o", out, "--max-size", "40K" } },
		{ { "record", "-o", out, "--keep", "3" } },
		{ { "serve", "--listen", "nowhere" } },
		{ { "serve", "--cache-ms", "-1" } },
		{ { "check" } },
		{ { "check", sht, "--in-place" } },
		{ { "import", "--host", txt } },
		{ { "import", "--host", txt, "-o", out, "--isa", "arm" } },
		{ { "sync" } },
		{ { "replay", sht } },
	};
	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		const char *argv[10] = { vcpustat_bin() };
		char shown[512] = "";

		for (size_t k = 0; usage[i].argv[k]; k++) {
			argv[k + 1] = usage[i].argv[k];
			strncat(shown, " ", sizeof(shown) - strlen(shown) - 1);
			strncat(shown, usage[i].argv[k], sizeof(shown) - strlen(shown) - 1);
		}
		run_io(&r, argv, NULL, NULL, 120);
		cr_expect_eq(r.status, 2, "vcpustat%s: exit %d, not 2 (a usage error): %s", shown, r.status, r.err);
		cr_expect_neq(r.err[0], 0, "vcpustat%s: no message", shown);
	}
	/* an input that cannot be read: 1 */
	{
		struct {
			const char *argv[8];
		} fail[] = {
			{ { "query", missing } },
			{ { "report", missing } },
			{ { "export", "--file", missing } },
			{ { "plot", missing, "-o", out } },
			{ { "check", missing } },
			{ { "top", "--file", missing, "-b" } },
			{ { "import", "--host", missing, "-o", out } },
			{ { "sync", "--pairs", missing } },
			{ { "replay", missing, "-o", out } },
		};

		for (size_t i = 0; i < sizeof(fail) / sizeof(fail[0]); i++) {
			const char *argv[10] = { vcpustat_bin() };

			for (size_t k = 0; fail[i].argv[k]; k++)
				argv[k + 1] = fail[i].argv[k];
			run_io(&r, argv, NULL, NULL, 120);
			cr_expect_eq(r.status, 1, "vcpustat %s %s: exit %d, not 1 (a runtime error): %s", fail[i].argv[0],
				     fail[i].argv[1], r.status, r.err);
			cr_expect(strstr(r.err, missing), "vcpustat %s: the message names the file: %s", fail[i].argv[0],
				  r.err);
		}
	}
	unlink(txt);
	unlink(sht);
	unlink(out);
}

/* ---- item 1: outputs stay atomic ---- */

/* Files in dir whose name has ".tmp." (outfile.c's temporary files). */
static int temp_files_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

/*
 * An import that fails half-way (a malformed line after 300 kB of good ones)
 * leaves an existing output byte for byte as it was and no temporary file;
 * one that succeeds replaces it whole. Before, the half-written recording
 * replaced the target.
 */
Test(robust, a_failed_import_leaves_the_existing_output_as_it_was, .timeout = 120)
{
	char dir[] = "/tmp/vcpustat-robust-atomic-XXXXXX", txt[256], bad[256], out[256], buf[64];
	struct run r;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(txt, sizeof(txt), "%s/t.txt", dir);
	snprintf(bad, sizeof(bad), "%s/bad.txt", dir);
	snprintf(out, sizeof(out), "%s/out.sht", dir);
	make_trace(txt, NULL, 20000);
	{ /* the good trace with one malformed line in its middle */
		char cmd[5 * sizeof(txt) + 128], o[256]; /* five paths whole */

		snprintf(cmd, sizeof(cmd),
			 "head -c 300000 '%s' > '%s' && echo 'sched_switch: not a trace line' >> '%s' && "
			 "tail -c +300001 '%s' >> '%s'",
			 txt, bad, bad, txt, bad);
		cr_assert_eq(run_shell(cmd, o, sizeof(o)), 0, "%s", o);
	}
	f = fopen(out, "w");
	cr_assert_not_null(f);
	fputs("the user's file\n", f);
	fclose(f);
	RUN(&r, "import", "--host", bad, "-o", out);
	cr_assert_eq(r.status, 1, "a malformed line fails the import: %s", r.err);
	cr_assert(strstr(r.err, "bad.txt:"), "the message names the trace and line: %s", r.err);
	f = fopen(out, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_null(fgets(buf + strlen(buf), (int)(sizeof(buf) - strlen(buf)), f), "nothing after the line");
	fclose(f);
	cr_assert_str_eq(buf, "the user's file\n", "the existing output is untouched");
	cr_assert_eq(temp_files_in(dir), 0, "no temporary file is left behind");
	RUN(&r, "import", "--host", txt, "-o", out);
	cr_assert_eq(r.status, 0, "%s", r.err);
	RUN(&r, "check", out);
	cr_assert_eq(r.status, 0, "the replaced output is a whole, good recording: %s", r.out);
	cr_assert_eq(temp_files_in(dir), 0, "no temporary file is left behind");
	unlink(txt);
	unlink(bad);
	unlink(out);
	rmdir(dir);
}
