// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `vcpustat top --file REC.sht` (time travel over a recording) and `--demo`
 * without /dev/kvm. Recordings come from `vcpustat import` of simulated
 * traces (tools/demo/demo-trace), so nothing here needs KVM, BPF or root:
 * every window must equal `vcpustat report` over the same window (JSON and
 * text), the terminal UI (under tmux) must step, jump, pause and play, and
 * bad files and bad times must get one clear error.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"
#include "model/summary.h"
#include "model/playback.h"
#include "sht/sht.h"

#define SEC 1000000000ull

struct run {
	int status;
	char *out, *err; /* malloc'ed, NUL-terminated */
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (f) {
		size_t k;

		do {
			if (n + 65536 + 1 > cap) {
				cap = 2 * cap + 65536 + 1;
				buf = realloc(buf, cap);
				cr_assert_not_null(buf);
			}
			k = fread(buf + n, 1, 65536, f);
			n += k;
		} while (k);
		fclose(f);
	}
	if (!buf)
		buf = calloc(1, 1);
	buf[n] = '\0';
	return buf;
}

/* Run build/bin/<prog> argv... with extra environment (NAME=VALUE, NULL-terminated); stdout and stderr apart. */
static void run_env(struct run *r, const char *const *env, const char *prog, const char *const *argv)
{
	char out[128], err[128], path[512];
	const char *args[64];
	size_t n = 0;
	pid_t pid;
	int st;

	snprintf(path, sizeof(path), "%s/bin/%s", build_dir(), prog);
	snprintf(out, sizeof(out), "/tmp/vcpustat-topfile-%d.out", (int)getpid());
	snprintf(err, sizeof(err), "/tmp/vcpustat-topfile-%d.err", (int)getpid());
	args[n++] = path;
	for (; *argv && n < 63; argv++)
		args[n++] = *argv;
	args[n] = NULL;
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fo, 1);
		dup2(fe, 2);
		unsetenv("VCPUSTAT_DEMO_NO_KVM");
		unsetenv("VCPUSTAT_DEMO_FILE");
		setenv("TZ", "UTC", 1);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(path, (char *const *)args);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->out = slurp(out);
	r->err = slurp(err);
	unlink(out);
	unlink(err);
	cr_assert_neq(r->status, 127, "cannot run %s", path);
}

#define RUN_ENV(r, env, ...)                                                                                       \
	do {                                                                                                       \
		const char *const argv_[] = { __VA_ARGS__, NULL };                                                 \
		run_env(r, env, "vcpustat", argv_);                                                                \
	} while (0)
#define RUN(r, ...) RUN_ENV(r, NULL, __VA_ARGS__)

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static char *tmp_path(const char *suffix)
{
	static char paths[16][128];
	static int n;
	char *p = paths[n++ % 16];
	int fd;

	snprintf(p, 128, "/tmp/vcpustat-topfile-XXXXXX");
	fd = mkstemp(p);
	cr_assert_geq(fd, 0);
	close(fd);
	unlink(p);
	strcat(p, suffix);
	return p;
}

/*
 * A level-full recording of S seconds: `demo-trace --vms N` imported, VM i
 * named tf-i, with metadata host=testhost and a workload.
 */
static char *make_recording(const char *seconds, const char *vms)
{
	char *trace = tmp_path(".txt"), *sht = tmp_path(".sht");
	struct run r;

	{
		const char *const argv[] = { "--seconds", seconds, "--vms", vms, "--vcpus", "2", trace, NULL };

		run_env(&r, NULL, "demo-trace", argv);
		cr_assert_eq(r.status, 0, "demo-trace: %s", r.err);
		run_free(&r);
	}
	RUN(&r, "import", "-q", "--host", trace, "--cpus", "2", "--vm-name", "1000=tf-0", "--vm-name", "2000=tf-1",
	    "--meta", "host=testhost", "--meta", "workload=tf test scene", "-o", sht);
	cr_assert_eq(r.status, 0, "import: %s%s", r.out, r.err);
	run_free(&r);
	unlink(trace);
	return sht;
}

/* One JSON document per line. */
static size_t json_lines(const char *text, json_t **docs, size_t max)
{
	size_t n = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		json_error_t e;
		json_t *d = json_loadb(p, len, 0, &e);

		cr_assert_not_null(d, "not JSON: %.*s (%s)", (int)len, p, e.text);
		cr_assert_lt(n, max);
		docs[n++] = d;
		p = nl ? nl + 1 : p + len;
	}
	return n;
}

static json_int_t jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	cr_assert(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

/* Every -j window of top --file is `report -j` of the same window, plus "source"; together they tile the file. */
Test(topfile, json_windows_equal_report_over_the_same_windows, .timeout = 300)
{
	char *rec = make_recording("3", "1");
	json_t *docs[64];
	struct run r;
	size_t n;

	RUN(&r, "top", "--file", rec, "-j", "-d", "0.5");
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = json_lines(r.out, docs, 64);
	run_free(&r);
	cr_assert_eq(n, 6, "3 s in windows of 0.5 s: 6 documents (got %zu)", n);
	cr_assert_eq(jint(docs[0], "from_ns"), 0, "starts at the start of the file");
	for (size_t i = 0; i < n; i++) {
		json_t *src = json_object_get(docs[i], "source"), *rep, *vm, *c;
		char from[32], to[32];
		bool hog = false;
		size_t k;

		cr_assert_str_eq(json_string_value(json_object_get(src, "host")), "testhost");
		cr_assert_str_eq(json_string_value(json_object_get(src, "workload")), "tf test scene");
		cr_assert_str_eq(json_string_value(json_object_get(src, "file")), rec);
		cr_assert(json_is_null(json_object_get(src, "recorded")), "an import has no wall clock");
		if (i + 1 < n) {
			cr_assert_eq(jint(docs[i], "to_ns") - jint(docs[i], "from_ns"), (json_int_t)(SEC / 2));
			cr_assert_eq(jint(docs[i], "to_ns"), jint(docs[i + 1], "from_ns"), "windows follow each other");
		}
		snprintf(from, sizeof(from), "%lld", (long long)jint(docs[i], "from_ns"));
		snprintf(to, sizeof(to), "%lld", (long long)jint(docs[i], "to_ns"));
		RUN(&r, "report", rec, "-j", "--from", from, "--to", to);
		cr_assert_eq(r.status, 0, "%s", r.err);
		rep = json_loads(r.out, 0, NULL);
		run_free(&r);
		cr_assert_not_null(rep);
		json_object_del(docs[i], "source");
		cr_assert(json_equal(docs[i], rep), "window %zu (%s .. %s ns) differs from `report -j`", i, from, to);
		/* the tables are really there: a VM with its vCPUs, exits, and culprits (level full) */
		vm = json_array_get(json_object_get(rep, "vms"), 0);
		cr_assert_str_eq(json_string_value(json_object_get(vm, "vm")), "tf-0");
		cr_assert_eq(json_array_size(json_object_get(vm, "vcpus")), 2);
		cr_assert_gt(json_array_size(json_object_get(vm, "exits")), 0);
		cr_assert(json_is_true(json_object_get(rep, "culprits_recorded")));
		json_array_foreach(json_object_get(vm, "culprits"), k, c)
			hog |= !strcmp(json_string_value(json_object_get(c, "comm")) ?: "", "demo-cpu-hog");
		cr_assert(hog, "window %zu: the CPU hog is among the culprits", i);
		json_decref(rep);
	}
	cr_assert_eq(jint(docs[n - 1], "to_ns") > (json_int_t)(5 * SEC / 2), 1, "the last window ends at the end");
	for (size_t i = 0; i < n; i++)
		json_decref(docs[i]);
	unlink(rec);
}

/* The text of report's window, without its first line (the file and window). */
static const char *after_first_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl ? nl + 1 : "";
}

/* -b --from -n: text windows equal `report`'s tables over the same windows, each labelled as a recording. */
Test(topfile, text_windows_equal_report_and_say_what_was_recorded, .timeout = 300)
{
	char *rec = make_recording("3", "2"), *blocks[4] = { 0 };
	struct run r, rep;
	size_t n = 0;
	char *p;

	RUN(&r, "top", "--file", rec, "-b", "--from", "0.5s", "-n", "2", "-d", "1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* split at the label lines */
	for (p = r.out; (p = strstr(p, "recording of testhost at an unknown time (tf test scene): window ")); p++) {
		cr_assert_lt(n, 4);
		if (p > r.out)
			p[-1] = '\0'; /* the empty line before the next window */
		blocks[n++] = p;
	}
	cr_assert_eq(n, 2, "two windows (-n 2):\n%s", r.out);
	cr_assert(!strncmp(blocks[0], "recording of testhost at an unknown time (tf test scene): window 0.500 .. 1.500 s of ",
			   strlen("recording of testhost at an unknown time (tf test scene): window 0.500 .. 1.500 s of ")),
		  "%s", blocks[0]);
	cr_assert(strstr(blocks[1], "window 1.500 .. 2.500 s of "), "%s", blocks[1]);
	for (size_t i = 0; i < n; i++) {
		char from[32], to[32];
		const char *mine = after_first_line(blocks[i]);
		size_t len = strlen(mine);

		snprintf(from, sizeof(from), "%zu.5s", i);
		snprintf(to, sizeof(to), "%zu.5s", i + 1);
		RUN(&rep, "report", rec, "--from", from, "--to", to);
		cr_assert_eq(rep.status, 0, "%s", rep.err);
		cr_assert(strstr(mine, "VM tf-0 (pid 1000)") && strstr(mine, "VM tf-1 (pid 2000)"), "%s", mine);
		cr_assert(strstr(mine, "EXIT REASON") && strstr(mine, "demo-cpu-hog"), "%s", mine);
		cr_assert_eq(strlen(after_first_line(rep.out)), len, "window %zu:\n--- top --file\n%s\n--- report\n%s", i,
			     mine, after_first_line(rep.out));
		cr_assert(!strncmp(mine, after_first_line(rep.out), len), "window %zu:\n--- top --file\n%s\n--- report\n%s",
			  i, mine, after_first_line(rep.out));
		run_free(&rep);
	}
	run_free(&r);
	unlink(rec);
}

/* ---- the terminal UI, under tmux ---- */

#define SESSION "vcpustat-topfile-ui"

static void screen(char *buf, size_t len)
{
	FILE *p = popen("tmux capture-pane -p -t " SESSION, "r");
	size_t n = p ? fread(buf, 1, len - 1, p) : 0;

	if (p)
		pclose(p);
	buf[n] = '\0';
}

/* Poll the screen until it shows every needle (NULL-terminated); false after ~30 s. */
static bool wait_screen(char *buf, size_t len, const char *const *needles)
{
	for (int i = 0; i < 300; i++) {
		bool all = true;

		screen(buf, len);
		for (const char *const *n = needles; *n; n++)
			all &= strstr(buf, *n) != NULL;
		if (all)
			return true;
		usleep(100000);
	}
	return false;
}

#define WAIT_SCREEN(buf, ...)                                                                                      \
	do {                                                                                                       \
		const char *const n_[] = { __VA_ARGS__, NULL };                                                    \
		cr_assert(wait_screen(buf, sizeof(buf), n_), "the screen never showed %s:\n%s", n_[0], buf);       \
	} while (0)

static void keys(const char *k)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "tmux send-keys -t " SESSION " %s", k);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void start_ui(const char *cmdline)
{
	char cmd[2048];

	if (system("command -v tmux > /dev/null 2>&1"))
		cr_skip_test("tmux is not installed (tools/deps.sh installs it)");
	tmux_end(SESSION);
	snprintf(cmd, sizeof(cmd), "tmux new-session -d -s " SESSION " -x 160 -y 45 'TZ=UTC %s; sleep 60'", cmdline);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Step, jump, go to either end, pause, play at 100x to the end, and quit. */
Test(topfile, ui_steps_jumps_pauses_and_plays, .timeout = 300)
{
	char *rec = make_recording("6", "1"), cmd[1024], buf[65536], last[96], end[32];
	const char *w;
	double a, b;

	setenv("TZ", "UTC", 1);
	snprintf(cmd, sizeof(cmd), "%s/bin/vcpustat top --file %s -d 0.5", build_dir(), rec);
	start_ui(cmd);
	WAIT_SCREEN(buf, "recording of testhost at an unknown time (tf test scene)", "tf-0 (1000)", "vCPU 1",
		    "EXIT REASON", "WHO TOOK tf-0's CPU", "demo-cpu-hog", "[playing 1x]");
	keys("p");
	WAIT_SCREEN(buf, "[paused 1x]");
	w = strstr(buf, "\nwindow ");
	cr_assert(w && sscanf(w + 1, "window %lf .. %lf s of %31s s", &a, &b, end) == 3, "%s", buf);
	for (a = 0; atof(end) - (a + 0.5) >= 0.05; a += 0.5) /* the last window takes in a remainder < 0.05 s */
		;
	snprintf(last, sizeof(last), "window %.3f .. %s s of %s s", a, end, end);
	/* jump, then one window forward and back */
	keys("t");
	WAIT_SCREEN(buf, "jump to");
	keys("0.5s Enter");
	WAIT_SCREEN(buf, "window 0.500 .. 1.000 s");
	keys("Right");
	WAIT_SCREEN(buf, "window 1.000 .. 1.500 s");
	keys("Right");
	WAIT_SCREEN(buf, "window 1.500 .. 2.000 s");
	keys("Left");
	WAIT_SCREEN(buf, "window 1.000 .. 1.500 s");
	keys("NPage"); /* ten forward: the last window (the file ends before) */
	WAIT_SCREEN(buf, last, "[paused 1x]");
	keys("PPage");
	WAIT_SCREEN(buf, "window 0.500 .. 1.000 s");
	keys("t");
	WAIT_SCREEN(buf, "jump to");
	keys("1.25s Enter");
	WAIT_SCREEN(buf, "window 1.250 .. 1.750 s");
	/* the ends */
	keys("Home");
	WAIT_SCREEN(buf, "window 0.000 .. 0.500 s");
	keys("Left"); /* stays at the first window */
	keys("End");
	WAIT_SCREEN(buf, last);
	keys("g");
	WAIT_SCREEN(buf, "window 0.000 .. 0.500 s");
	/* a time outside the file, and no time at all: said, and nothing moves */
	keys("t");
	WAIT_SCREEN(buf, "jump to");
	keys("99s Enter");
	WAIT_SCREEN(buf, "99.000 s is outside the recording", "window 0.000 .. 0.500 s");
	keys("t");
	WAIT_SCREEN(buf, "jump to");
	keys("soon Enter");
	WAIT_SCREEN(buf, "bad time 'soon'", "window 0.000 .. 0.500 s");
	/* play at 100x: it reaches the end and pauses there */
	keys("3");
	WAIT_SCREEN(buf, "[paused 100x]");
	keys("p");
	WAIT_SCREEN(buf, "end of the recording: paused", last);
	/* help, then quit */
	keys("h");
	WAIT_SCREEN(buf, "playing a recording", "jump to a time");
	keys("x");
	WAIT_SCREEN(buf, "WAKE/s");
	keys("q");
	for (int i = 0; i < 100; i++) {
		screen(buf, sizeof(buf));
		if (!strstr(buf, "WAKE/s"))
			break;
		usleep(100000);
	}
	cr_assert_null(strstr(buf, "WAKE/s"), "q quits:\n%s", buf);
	tmux_end(SESSION);
	unlink(rec);
}

/* --demo where /dev/kvm is not usable (forced, so it is tested on hosts with KVM too): the bundled recording plays. */
Test(topfile, demo_without_kvm_plays_the_bundled_recording_in_the_ui, .timeout = 300)
{
	char cmd[1024], buf[65536];

	snprintf(cmd, sizeof(cmd), "VCPUSTAT_DEMO_NO_KVM=1 %s/bin/vcpustat --demo", build_dir());
	start_ui(cmd);
	WAIT_SCREEN(buf, "DEMO: recording of", "demo-0", "demo-1", "vCPU 0", "vCPU 1", "EXIT REASON", "WHO TOOK",
		    "VCPUSTAT_DEMO_NO_KVM=1");
	keys("q");
	tmux_end(SESSION);
}

/* ---- damaged and empty recordings ---- */

static int by_start(const void *a, const void *b)
{
	const struct sht_interval *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->attr < y->attr ? -1 : x->attr > y->attr;
}

/*
 * src rewritten by a writer that is then abandoned (as a killed `vcpustat
 * record` leaves its file), in 4 KiB nodes; then cut to keep/100 of its
 * size, in the middle of a node. Returns the path.
 */
static char *unfinished_copy(const char *src, off_t keep)
{
	struct vcpustat_error err = { 0 };
	struct sht_writer_opts o = { .node_size = 4096, .no_sync = true };
	struct sht_interval *iv = NULL;
	struct sht_meta meta[64];
	struct sht_reader *r;
	struct sht_writer *w;
	char *dst = tmp_path(".sht");
	uint32_t *ids;
	uint8_t *want;
	struct stat st;
	size_t n;

	cr_assert_eq(sht_open(&r, src, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < sht_nmeta(r) && i < 64; i++)
		meta[i] = *sht_meta_at(r, i);
	o.meta = meta;
	o.nmeta = sht_nmeta(r) < 64 ? sht_nmeta(r) : 64;
	o.real_start_ns = sht_get_info(r)->real_start_ns;
	cr_assert_eq(sht_writer_create(&w, dst, &o, &err), 0, "%s", err.msg);
	ids = calloc(sht_nattrs(r), sizeof(*ids));
	want = calloc(sht_nattrs(r), 1);
	for (uint32_t a = 0; a < sht_nattrs(r); a++) {
		cr_assert_eq(sht_writer_attr(w, sht_attr_path(r, a), &ids[a]), 0);
		want[a] = 1;
	}
	cr_assert_eq(sht_query_range(r, SHT_NO_ATTR, want, sht_get_info(r)->start, sht_get_info(r)->end, &iv, &n, &err),
		     0, "%s", err.msg);
	qsort(iv, n, sizeof(*iv), by_start);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = ids[iv[i].attr];
		int e = iv[i].value.type == SHT_INT ? sht_writer_set_int(w, id, iv[i].start, iv[i].value.i) :
			iv[i].value.type == SHT_STR ? sht_writer_set_str(w, id, iv[i].start, iv[i].value.s) :
						      sht_writer_set_null(w, id, iv[i].start);

		cr_assert_eq(e, 0);
	}
	sht_writer_abandon(w);
	free(iv);
	free(ids);
	free(want);
	sht_close(r);
	cr_assert_eq(stat(dst, &st), 0);
	cr_assert_eq(truncate(dst, st.st_size * keep / 100 / 4096 * 4096 + 1000), 0);
	return dst;
}

/* A recording cut short plays up to its last sealed node, says so, and agrees with `report`. */
Test(topfile, damaged_tail_plays_up_to_the_last_sealed_node, .timeout = 300)
{
	char *rec = make_recording("3", "1"), *cut = unfinished_copy(rec, 60), from[32], to[32];
	json_t *docs[64], *rep, *last;
	struct run r;
	size_t n;

	RUN(&r, "check", cut);
	cr_assert_eq(r.status, 0, "an unfinished file is readable: %s%s", r.out, r.err);
	run_free(&r);
	RUN(&r, "top", "--file", cut, "-j", "-d", "0.5");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "unfinished recording: it plays up to its last sealed node"), "%s", r.err);
	n = json_lines(r.out, docs, 64);
	run_free(&r);
	cr_assert_geq(n, 1);
	last = docs[n - 1];
	cr_assert_lt(jint(last, "to_ns"), (json_int_t)(25 * SEC / 10), "the cut tail is not played");
	cr_assert_eq(n, (size_t)(jint(last, "from_ns") / (json_int_t)(SEC / 2)) + 1,
		     "every window up to the end of the last sealed node");
	for (size_t i = 0; i + 1 < n; i++)
		cr_assert_eq(jint(docs[i], "to_ns"), jint(docs[i + 1], "from_ns"));
	for (size_t i = 0; i < n; i++)
		cr_assert(json_is_true(json_object_get(docs[i], "recovered")), "window %zu says it", i);
	/* the last window is what report says (report stops at the same place) */
	snprintf(from, sizeof(from), "%lld", (long long)jint(last, "from_ns"));
	RUN(&r, "report", cut, "-j", "--from", from);
	cr_assert_eq(r.status, 0, "%s", r.err);
	rep = json_loads(r.out, 0, NULL);
	run_free(&r);
	cr_assert_not_null(rep);
	snprintf(to, sizeof(to), "%lld", (long long)jint(rep, "to_ns"));
	cr_assert_eq(jint(rep, "to_ns"), jint(last, "to_ns"), "report ends at %s", to);
	json_object_del(last, "source");
	cr_assert(json_equal(last, rep));
	/* text: the window line and the warning */
	RUN(&r, "top", "--file", cut, "-b", "-n", "1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "recording of testhost"), "%s", r.out);
	cr_assert(strstr(r.err, "unfinished recording"), "%s", r.err);
	run_free(&r);
	json_decref(rep);
	for (size_t i = 0; i < n; i++)
		json_decref(docs[i]);
	unlink(cut);
	unlink(rec);
}

/* A recording with no VM (only host threads) plays, with empty VM lists. */
Test(topfile, recording_without_vms_plays_with_no_vm, .timeout = 300)
{
	char *rec = make_recording("2", "0");
	json_t *docs[16];
	struct run r;
	size_t n;

	RUN(&r, "top", "--file", rec, "-j");
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = json_lines(r.out, docs, 16);
	run_free(&r);
	cr_assert_eq(n, 2, "2 s in windows of 1 s");
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(json_array_size(json_object_get(docs[i], "vms")), 0);
		cr_assert_str_eq(json_string_value(json_object_get(json_object_get(docs[i], "source"), "host")), "testhost");
		json_decref(docs[i]);
	}
	RUN(&r, "top", "--file", rec, "-b");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "VMs 0  vCPUs 0"), "%s", r.out);
	run_free(&r);
	unlink(rec);
}

/* Bad times, files and options: one sentence naming the option or the file; 2 for usage, 1 for files. */
Test(topfile, bad_times_files_and_options_are_refused_clearly, .timeout = 300)
{
	char *rec = make_recording("1", "1"), *junk = tmp_path(".sht");
	struct run r;
	FILE *f;

	RUN(&r, "top", "--file", rec, "-b", "--from", "soon");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--from soon:") && strstr(r.err, "bad time 'soon'"), "%s", r.err);
	run_free(&r);
	RUN(&r, "top", "--file", rec, "-j", "--from", "99s");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.out, "{\"error\"") && strstr(r.out, "--from 99s:") && strstr(r.out, "outside the recording"),
		  "in JSON mode the error is JSON: %s", r.out);
	run_free(&r);
	RUN(&r, "top", "--file", rec, "-b", "-d", "0");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "-d 0:"), "%s", r.err);
	run_free(&r);
	RUN(&r, "top", "--file", rec, "-b", "--speed", "fast");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--speed fast:"), "%s", r.err);
	run_free(&r);
	RUN(&r, "top", "-b", "--from", "1s");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--from and --speed play a recording"), "%s", r.err);
	run_free(&r);
	RUN(&r, "top", "--demo", "--file", rec);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--demo and --file exclude each other"), "%s", r.err);
	run_free(&r);
	RUN(&r, "top", "--file", "/nonexistent/rec.sht", "-b");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "/nonexistent/rec.sht"), "%s", r.err);
	run_free(&r);
	f = fopen(junk, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 5000; i++)
		fputs("not a recording\n", f);
	fclose(f);
	RUN(&r, "top", "--file", junk, "-b");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, junk), "names the file: %s", r.err);
	run_free(&r);
	unlink(junk);
	unlink(rec);
}

/* --demo -b -n 3 / -j -n 3 where the demo cannot run live: three windows of the bundled recording, labelled. */
Test(topfile, demo_without_kvm_prints_snapshots_of_the_bundled_recording, .timeout = 300)
{
	const char *const force[] = { "VCPUSTAT_DEMO_NO_KVM=1", NULL };
	json_t *docs[8];
	struct run r;
	size_t n;
	const char *p;
	int windows = 0;

	RUN_ENV(&r, force, "--demo", "-b", "-n", "3");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	for (p = r.out; (p = strstr(p, "DEMO: recording of ")); p++)
		windows++;
	cr_assert_eq(windows, 3, "three snapshots:\n%s", r.out);
	cr_assert(strstr(r.out, "VCPUSTAT_DEMO_NO_KVM=1"), "says why it plays a recording:\n%s", r.out);
	cr_assert(strstr(r.out, "VM demo-0") && strstr(r.out, "VM demo-1") && strstr(r.out, "EXIT REASON") &&
			  strstr(r.out, "SHARE  TIME"),
		  "VMs, exits and culprits:\n%s", r.out);
	run_free(&r);
	RUN_ENV(&r, force, "--demo", "-j", "-n", "3");
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = json_lines(r.out, docs, 8);
	run_free(&r);
	cr_assert_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		json_t *src = json_object_get(docs[i], "source"), *vm = json_array_get(json_object_get(docs[i], "vms"), 0);

		cr_assert(json_is_string(json_object_get(src, "demo")), "source.demo says why");
		cr_assert(json_is_string(json_object_get(src, "host")), "source.host");
		cr_assert_not_null(vm);
		cr_assert_gt(json_array_size(json_object_get(vm, "vcpus")), 0);
		cr_assert_gt(json_array_size(json_object_get(vm, "exits")), 0);
		cr_assert_gt(json_array_size(json_object_get(vm, "culprits")), 0);
		json_decref(docs[i]);
	}
}

/* VCPUSTAT_DEMO_FILE names the recording; a missing one is an error that says what to do. */
Test(topfile, demo_file_can_be_chosen_and_a_missing_one_is_explained, .timeout = 300)
{
	char *rec = make_recording("1", "1"), env_file[600];
	const char *const env[] = { "VCPUSTAT_DEMO_NO_KVM=1", env_file, NULL };
	const char *const missing[] = { "VCPUSTAT_DEMO_NO_KVM=1", "VCPUSTAT_DEMO_FILE=/nonexistent/demo.sht", NULL };
	json_t *doc;
	struct run r;

	snprintf(env_file, sizeof(env_file), "VCPUSTAT_DEMO_FILE=%s", rec);
	RUN_ENV(&r, env, "--demo", "-j", "-n", "1");
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = json_loads(r.out, 0, NULL);
	run_free(&r);
	cr_assert_not_null(doc);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "source"), "file")), rec);
	json_decref(doc);
	RUN_ENV(&r, missing, "--demo", "-b", "-n", "1");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "/nonexistent/demo.sht") && strstr(r.err, "VCPUSTAT_DEMO_FILE"), "%s", r.err);
	run_free(&r);
	unlink(rec);
}

/* --meta: stored, shown by query; a key vcpustat writes itself is refused. */
Test(topfile, import_meta_is_stored_and_reserved_keys_are_refused, .timeout = 120)
{
	char *rec = make_recording("1", "1");
	struct run r;

	RUN(&r, "query", rec);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "testhost") && strstr(r.out, "tf test scene"), "%s", r.out);
	run_free(&r);
	RUN(&r, "import", "--host", "/dev/null", "-o", "/tmp/x.sht", "--meta", "tool=me");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--meta tool=...: vcpustat writes 'tool' itself"), "%s", r.err);
	run_free(&r);
	RUN(&r, "import", "--host", "/dev/null", "-o", "/tmp/x.sht", "--meta", "no value");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--meta no value: KEY=VALUE expected"), "%s", r.err);
	run_free(&r);
	unlink(rec);
}

/* ---- the library: windows, steps, seeks, labels ---- */

#define REAL_START 1795356187000000000ull /* 2026-11-22T14:03:07Z */

/* 2.5 s: vCPU 0 of VM web1 alternates guest and preempted every 250 ms; metadata host and workload. */
static char *make_small(bool wall)
{
	static const struct sht_meta meta[] = { { "host", "h1" }, { "workload", "two guests" }, { "command", "cmd" } };
	struct sht_writer_opts o = { .node_size = 4096, .no_sync = true, .meta = meta, .nmeta = 3 };
	struct vcpustat_error err = { 0 };
	struct sht_writer *w;
	char *path = tmp_path(".sht");
	uint32_t st, tid;

	o.real_start_ns = wall ? REAL_START : 0;
	cr_assert_eq(sht_writer_create(&w, path, &o, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_writer_attr(w, "/vms/web1/vcpus/0/state", &st), 0);
	cr_assert_eq(sht_writer_attr(w, "/vms/web1/vcpus/0/tid", &tid), 0);
	cr_assert_eq(sht_writer_set_int(w, tid, 0, 4242), 0);
	for (uint64_t t = 0; t < 5 * SEC / 2; t += SEC / 4)
		cr_assert_eq(sht_writer_set_int(w, st, t, (t / (SEC / 4)) % 2 ? VCPU_PREEMPTED : VCPU_GUEST), 0);
	cr_assert_eq(sht_writer_close(w, 5 * SEC / 2, &err), 0, "%s", err.msg);
	return path;
}

Test(topfile, playback_windows_steps_and_seeks)
{
	struct vcpustat_error err = { 0 };
	struct playback pb;
	struct summary s;
	uint64_t t1, t2;
	bool culprits;
	char *path = make_small(true);

	setenv("TZ", "UTC", 1);
	tzset();

	cr_assert_eq(playback_open(&pb, path, SEC, &err), 0, "%s", err.msg);
	playback_window(&pb, &t1, &t2);
	cr_assert(t1 == 0 && t2 == SEC);
	cr_assert_eq(playback_step(&pb, 5), 2, "two windows after the first");
	playback_window(&pb, &t1, &t2);
	cr_assert(t1 == 2 * SEC && t2 == 5 * SEC / 2, "the last window is cut at the end");
	cr_assert(playback_at_end(&pb));
	cr_assert_eq(playback_step(&pb, 1), 0);
	cr_assert_eq(playback_step(&pb, -10), -2);
	cr_assert_eq(pb.t, 0);
	cr_assert_eq(playback_seek_str(&pb, "1.25s", &err), 0, "%s", err.msg);
	playback_window(&pb, &t1, &t2);
	cr_assert(t1 == 5 * SEC / 4 && t2 == 9 * SEC / 4);
	cr_assert_eq(playback_step(&pb, -1), -1);
	cr_assert_eq(pb.t, SEC / 4);
	cr_assert_eq(playback_step(&pb, -1), -1, "back to the start, not before it");
	cr_assert_eq(pb.t, 0);
	cr_assert_eq(playback_seek(&pb, 5 * SEC / 2, &err), -ERANGE);
	cr_assert(strstr(err.msg, "2.500 s is outside the recording (0.000 s to 2.500 s)"), "%s", err.msg);
	memset(&err, 0, sizeof(err));
	cr_assert_eq(playback_seek_str(&pb, "14:03:08", &err), 0, "%s", err.msg); /* wall clock, TZ of the test */
	/* the summary of a window: the report's */
	cr_assert_eq(playback_build(&pb, &s, NULL, &culprits, &err), 0, "%s", err.msg);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].vcpus[0].tid, 4242);
	cr_assert_eq(s.wall_t1, REAL_START + pb.t + SEC);
	summary_free(&s);
	playback_close(&pb);
	unlink(path);
}

Test(topfile, playback_labels_say_host_time_and_what_ran)
{
	struct vcpustat_error err = { 0 };
	char *with = make_small(true), *without = make_small(false), label[512], when[64];
	struct playback pb;
	json_t *src;

	setenv("TZ", "UTC", 1);
	tzset();
	cr_assert_eq(playback_open(&pb, with, SEC, &err), 0, "%s", err.msg);
	playback_label(&pb, label, sizeof(label));
	sht_format_wall(pb.r, 0, false, when, sizeof(when));
	when[19] = '\0';
	cr_assert_str_eq(when, "2026-11-22T14:03:07");
	cr_assert_str_eq(label, "recording of h1 at 2026-11-22T14:03:07 (two guests)");
	src = playback_source_json(&pb);
	cr_assert_str_eq(json_string_value(json_object_get(src, "recorded")), "2026-11-22T14:03:07");
	cr_assert_str_eq(json_string_value(json_object_get(src, "host")), "h1");
	cr_assert_str_eq(json_string_value(json_object_get(src, "command")), "cmd");
	cr_assert(json_is_null(json_object_get(src, "level")));
	cr_assert_float_eq(json_real_value(json_object_get(src, "duration_s")), 2.5, 1e-9);
	json_decref(src);
	playback_close(&pb);
	cr_assert_eq(playback_open(&pb, without, SEC, &err), 0, "%s", err.msg);
	playback_label(&pb, label, sizeof(label));
	cr_assert_str_eq(label, "recording of h1 at an unknown time (two guests)");
	playback_close(&pb);
	cr_assert_eq(playback_open(&pb, with, 0, &err), -EINVAL);
	unlink(with);
	unlink(without);
}

/*
 * -b and -j without -n print every window of the file at once (issue 40:
 * `top --file LONG.sht -b -d 0.01` wrote 2 GB in 60 s): --help says how many.
 */
Test(topfile, help_says_how_many_windows_batch_prints_without_n)
{
	struct run r;

	RUN(&r, "top", "--help");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "without -n that is the file's length\n"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "/ SEC windows (an hour at -d 0.01: 360000 windows, gigabytes)"), "%s", r.out);
	run_free(&r);
}
