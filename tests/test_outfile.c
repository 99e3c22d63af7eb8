// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where -o writes (util/outfile.c, one rule for every writer): a regular file
 * or a new name is replaced whole through a temporary file and a rename (a
 * symlink stays, the file it names is replaced); anything else -- a device,
 * a FIFO, a /proc/self/fd link -- is written in place, never replaced; a
 * directory is refused; a write error (ENOSPC) reaches the exit status with a
 * message naming the path. Every command that writes a file is run onto each
 * kind of target, in a scratch folder of its own (mkdtemp): the device nodes
 * are private ones made with mknod (root only), the real /dev is never
 * touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli_run.h"
#include "helpers.h"
#include "record/record.h"
#include "sht/sht.h"
#include "util/util.h"

#define CORPUS VCPUSTAT_SOURCE_DIR "/tests/fuzz/corpus"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/vcpustat-outfile-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(outfile, .init = setup, .fini = teardown, .timeout = 150);

/* name in the scratch folder (a ring of 32 paths) */
static const char *in_dir(const char *name)
{
	static char paths[32][256];
	static int i;
	char *p = paths[i++ % 32];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

/* ---- the writers: every command with -o, its inputs in the scratch folder ---- */

struct writer {
	const char *name;
	const char *argv[8]; /* OUT: the output; REC, TRACE, CAP, UNFINISHED, DAMAGED: inputs (fixtures()) */
	bool sht;	     /* it writes an SHT file (checked with vcpustat check) */
};

static const struct writer writers[] = {
	{ "import", { "import", "--host", "TRACE", "-o", "OUT" }, true },
	{ "replay", { "replay", "CAP", "-o", "OUT" }, true },
	{ "check --repair (an unfinished file)", { "check", "UNFINISHED", "--repair", "-o", "OUT" }, true },
	{ "check --repair (a damaged file)", { "check", "DAMAGED", "--repair", "-o", "OUT" }, true },
	{ "export (prometheus)", { "export", "REC", "-o", "OUT" } },
	{ "export -f json", { "export", "REC", "-f", "json", "-o", "OUT" } },
	{ "export -f chrome-json", { "export", "REC", "-f", "chrome-json", "-o", "OUT" } },
	{ "plot", { "plot", "REC", "-o", "OUT" } },
	{ "plot --timeline", { "plot", "REC", "--timeline", "-o", "OUT" } },
};
#define NR_WRITERS (sizeof(writers) / sizeof(writers[0]))

static void copy_file(const char *from, const char *to)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* The inputs: a recording, a trace, a capture, an unfinished and a damaged recording. */
static void fixtures(void)
{
	char junk[3] = { (char)0xff, (char)0xfe, (char)0xfd };
	struct run r;
	int fd;

	copy_file(CORPUS "/ftrace/tracefs-microvm.txt", in_dir("t.txt"));
	copy_file(CORPUS "/capture/seed0.vcap", in_dir("c.vcap"));
	copy_file(CORPUS "/sht/unfinished.sht", in_dir("unfinished.sht"));
	copy_file(CORPUS "/sht/closed.sht", in_dir("damaged.sht"));
	/* a leaf's checksum fails: the repair writes the history again (sht_salvage) */
	fd = open(in_dir("damaged.sht"), O_WRONLY);
	cr_assert_eq(pwrite(fd, junk, sizeof(junk), 4200), (ssize_t)sizeof(junk));
	close(fd);
	RUN(&r, "import", "--host", in_dir("t.txt"), "-o", in_dir("a.sht"));
	cr_assert_eq(r.status, 0, "%s", r.err);
}

static const char *fixture(const char *arg)
{
	static const struct {
		const char *key, *name;
	} map[] = { { "REC", "a.sht" },
		    { "TRACE", "t.txt" },
		    { "CAP", "c.vcap" },
		    { "UNFINISHED", "unfinished.sht" },
		    { "DAMAGED", "damaged.sht" } };

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(arg, map[i].key))
			return in_dir(map[i].name);
	return arg;
}

/* Run writer w with -o out; stdout to stdout_file (NULL: captured), fd 3 onto fd3_file (NULL: none). */
static void run_writer(struct run *r, const struct writer *w, const char *out, const char *stdout_file,
		       const char *fd3_file)
{
	const char *argv[10] = { vcpustat_bin() };
	size_t i;

	for (i = 0; w->argv[i]; i++)
		argv[i + 1] = !strcmp(w->argv[i], "OUT") ? out : fixture(w->argv[i]);
	argv[i + 1] = NULL;
	run_io_fd3(r, argv, stdout_file, NULL, fd3_file, 120);
}

/* The output of w to a new regular file: what every other target must receive. */
static const char *reference(const struct writer *w, size_t k)
{
	char name[32];
	const char *ref;
	struct run r;

	snprintf(name, sizeof(name), "ref%zu.out", k);
	ref = in_dir(name);
	run_writer(&r, w, ref, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s -o %s: %s%s", w->name, ref, r.out, r.err);
	return ref;
}

/* What a writer wrote to got is its whole output: an SHT file that checks, or the reference's bytes. */
static void expect_output(const struct writer *w, const char *got, const char *ref)
{
	struct run r;

	if (w->sht) {
		RUN(&r, "check", got);
		cr_assert_eq(r.status, 0, "%s: what arrived is not a good SHT file: %s%s", w->name, r.out, r.err);
		cr_assert(strstr(r.out, "good") && !strstr(r.out, "not closed"), "%s: %s", w->name, r.out);
	} else {
		char *a = slurp_file(got), *b = slurp_file(ref);

		cr_assert(*b, "%s: the reference %s is empty", w->name, ref);
		cr_assert_str_eq(a, b, "%s: what arrived differs from the output to a regular file", w->name);
		free(a);
		free(b);
	}
}

/* ---- the targets ---- */

static const char *need_root(void)
{
	return geteuid() ? "the device targets are private device nodes (mknod), which need root; /dev is never "
			   "touched"
			 : NULL;
}

/* A private character device (1, minor): 3 is null, 7 is full. */
static const char *make_device(const char *name, unsigned int minor)
{
	const char *p = in_dir(name);

	unlink(p);
	cr_assert_eq(mknod(p, S_IFCHR | 0666, makedev(1, minor)), 0, "mknod %s: %s", p, strerror(errno));
	return p;
}

static void expect_device(const char *p, unsigned int minor, const char *who)
{
	struct stat st;

	cr_assert_eq(lstat(p, &st), 0, "%s: %s is gone", who, p);
	cr_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, minor),
		  "%s: %s was replaced (mode %o): it must stay the device", who, p, st.st_mode);
}

/* A child reading the FIFO fifo to its end into got. */
static pid_t fifo_reader(const char *fifo, const char *got)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int in = open(fifo, O_RDONLY), out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		char buf[65536];
		ssize_t n;

		if (in < 0 || out < 0)
			_exit(1);
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n)
				_exit(1);
		_exit(n < 0);
	}
	return pid;
}

/* The reader's end: a writer that refused never opened the FIFO, its reader still waits to. */
static int fifo_reader_end(pid_t pid, const char *fifo)
{
	struct stat st;
	int fd;

	if (lstat(fifo, &st) || !S_ISFIFO(st.st_mode)) /* replaced: the reader would wait for ever */
		kill(pid, SIGKILL);
	fd = open(fifo, O_WRONLY | O_NONBLOCK);
	if (fd >= 0)
		close(fd);
	return wait_exit(pid);
}

/* Temporary files left in the scratch folder (".NAME.tmp.XXXXXX"). */
static size_t leftovers(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

/* ---- each kind of target, every writer ---- */

Test(outfile, a_null_device_stays_a_device_and_the_write_succeeds)
{
	SKIP_UNLESS(need_root());
	fixtures();
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *null = make_device("null", 3);
		struct run r;

		run_writer(&r, &writers[k], null, NULL, NULL);
		cr_assert_eq(r.status, 0, "%s -o %s: %s%s", writers[k].name, null, r.out, r.err);
		expect_device(null, 3, writers[k].name);
	}
}

Test(outfile, a_full_device_fails_with_no_space_and_stays_a_device)
{
	SKIP_UNLESS(need_root());
	fixtures();
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *full = make_device("full", 7);
		struct run r;

		run_writer(&r, &writers[k], full, NULL, NULL);
		cr_assert_eq(r.status, 1, "%s -o %s: exit %d: %s%s", writers[k].name, full, r.status, r.out, r.err);
		cr_assert(strstr(r.err, full) && strstr(r.err, "No space left on device"),
			  "%s: the message names the file and says why: %s", writers[k].name, r.err);
		expect_device(full, 7, writers[k].name);
	}
}

Test(outfile, a_fifo_gets_the_whole_output)
{
	fixtures();
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *fifo = in_dir("fifo"), *got = in_dir("fifo.got"), *ref = reference(&writers[k], k);
		struct stat st;
		struct run r;
		pid_t reader;

		unlink(fifo);
		cr_assert_eq(mkfifo(fifo, 0644), 0);
		reader = fifo_reader(fifo, got);
		run_writer(&r, &writers[k], fifo, NULL, NULL);
		cr_assert_eq(fifo_reader_end(reader, fifo), 0);
		cr_assert_eq(r.status, 0, "%s -o %s: %s%s", writers[k].name, fifo, r.out, r.err);
		cr_assert(!lstat(fifo, &st) && S_ISFIFO(st.st_mode), "%s: the FIFO was replaced", writers[k].name);
		expect_output(&writers[k], got, ref);
	}
}

/*
 * A reader of fifo that leaves as soon as a writer has come, before it read
 * all: its pipe holds one page, so an output of more cannot all be written
 * before the reader is gone, however the two are scheduled.
 */
static pid_t fifo_leaver(const char *fifo)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int fd = open(fifo, O_RDONLY | O_NONBLOCK), i; /* a reader now: the writer's open() returns */
		char c;

		if (fd < 0 || fcntl(fd, F_SETPIPE_SZ, 4096) < 0)
			_exit(1);
		for (i = 0; i < 60000; i++) { /* no writer yet: an end (0); one: EAGAIN, or its bytes */
			ssize_t n = read(fd, &c, 1);

			if (n > 0 || (n < 0 && errno == EAGAIN))
				_exit(close(fd) ? 1 : 0);
			if (n < 0 && errno != EINTR)
				_exit(1);
			usleep(1000);
		}
		_exit(2); /* no writer came in a minute (it wrote elsewhere) */
	}
	return pid;
}

/* A reader that left before the end: the write fails with EPIPE, said, instead of a silent death by SIGPIPE. */
Test(outfile, a_reader_that_left_is_a_broken_pipe_with_a_message)
{
	fixtures();
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *fifo = in_dir("fifo");
		struct run r;
		pid_t pid;

		unlink(fifo);
		cr_assert_eq(mkfifo(fifo, 0644), 0);
		pid = fifo_leaver(fifo);
		run_writer(&r, &writers[k], fifo, NULL, NULL);
		cr_assert_eq(wait_exit(pid), 0);
		cr_assert_eq(r.status, 1, "%s -o %s: exit %d (%s)", writers[k].name, fifo, r.status, r.err);
		cr_assert(strstr(r.err, fifo) && strstr(r.err, "Broken pipe"), "%s: %s", writers[k].name, r.err);
	}
}

/* /proc/self/fd/3 and a symlink to it (as /dev/stdout is to /proc/self/fd/1): the file the shell opened. */
Test(outfile, a_proc_fd_link_writes_into_the_file_open_there)
{
	fixtures();
	cr_assert_eq(symlink("/proc/self/fd/3", in_dir("fd3")), 0);
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *got = in_dir("fd3.got"), *ref = reference(&writers[k], k);
		const char *links[] = { "/proc/self/fd/3", in_dir("fd3") };
		struct stat st;
		struct run r;

		for (size_t i = 0; i < 2; i++) {
			run_writer(&r, &writers[k], links[i], NULL, got);
			cr_assert_eq(r.status, 0, "%s -o %s: %s%s", writers[k].name, links[i], r.out, r.err);
			expect_output(&writers[k], got, ref);
		}
		cr_assert(!lstat(in_dir("fd3"), &st) && S_ISLNK(st.st_mode), "%s: the link was replaced",
			  writers[k].name);
	}
}

/*
 * A file written at offsets into a regular file behind /proc/self/fd is that
 * file's whole content: repairing /proc/self/fd/N in place (fd N read to its
 * end, as fuzz-sht does with a memfd) leaves a file that opens, not the
 * repaired copy after the original.
 */
Test(outfile, a_repair_in_place_through_a_proc_fd_link_is_the_whole_file)
{
	struct sht_check_report rep;
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	char path[64], *data;
	size_t len;
	int fd;

	fd = open(CORPUS "/sht/unfinished.sht", O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read_fd(fd, &data, &len), 0);
	close(fd);
	fd = memfd_create("outfile-test", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len); /* its offset is now at the end */
	free(data);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	cr_assert_eq(sht_repair(path, &rep, &err), 0, "%s", err.msg);
	cr_assert(rep.ok && rep.closed, "the report of the repaired file");
	cr_assert_eq(sht_open(&r, path, &err), 0, "the repaired file opens: %s", err.msg);
	sht_close(r);
	close(fd);
}

/* The issue's own case: `vcpustat export x.sht -o /dev/stdout > out.prom`. */
Test(outfile, dev_stdout_redirected_to_a_file_fills_that_file)
{
	const char *out = in_dir("out.prom"), *ref;
	const char *const argv[] = { vcpustat_bin(), "export", in_dir("a.sht"), "-o", in_dir("stdout"), NULL };
	struct stat st;
	struct run r;

	fixtures();
	ref = reference(&writers[4], 4);
	cr_assert_eq(symlink("/proc/self/fd/1", in_dir("stdout")), 0);
	run_io(&r, argv, out, NULL, 120);
	cr_assert_eq(r.status, 0, "%s", r.err);
	expect_output(&writers[4], out, ref);
	cr_assert(!lstat(in_dir("stdout"), &st) && S_ISLNK(st.st_mode), "the link was replaced");
}

Test(outfile, a_directory_is_refused_with_a_message)
{
	fixtures();
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *d = in_dir("d");
		struct run r;

		mkdir(d, 0755);
		run_writer(&r, &writers[k], d, NULL, NULL);
		cr_assert_eq(r.status, 1, "%s -o %s: exit %d: %s", writers[k].name, d, r.status,
			     r.err);
		cr_assert(strstr(r.err, d) && strstr(r.err, "directory"), "%s: %s", writers[k].name, r.err);
		cr_assert_eq(rmdir(d), 0, "%s: the directory is left as it was (empty)", writers[k].name);
	}
}

Test(outfile, a_regular_file_is_replaced_whole_and_a_new_name_created)
{
	fixtures();
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *f = in_dir("f.out"), *n = in_dir("new.out"), *ref = reference(&writers[k], k);
		struct stat before, after;
		struct run r;
		FILE *o = fopen(f, "w");

		fputs("old content\n", o);
		fclose(o);
		cr_assert_eq(stat(f, &before), 0);
		run_writer(&r, &writers[k], f, NULL, NULL);
		cr_assert_eq(r.status, 0, "%s -o %s: %s%s", writers[k].name, f, r.out, r.err);
		cr_assert_eq(stat(f, &after), 0);
		cr_assert_neq(before.st_ino, after.st_ino, "%s: replaced by a rename, not rewritten", writers[k].name);
		cr_assert_eq(after.st_mode & 0777, 0644, "%s", writers[k].name);
		expect_output(&writers[k], f, ref);
		unlink(n);
		run_writer(&r, &writers[k], n, NULL, NULL);
		cr_assert_eq(r.status, 0, "%s -o %s: %s%s", writers[k].name, n, r.out, r.err);
		expect_output(&writers[k], n, ref);
		cr_assert_eq(leftovers(), 0, "%s: a temporary file was left", writers[k].name);
	}
}

/* A symlink to a file: the file it names is replaced, the link stays (a dangling one: the file is made). */
Test(outfile, a_symlink_to_a_file_replaces_the_file_not_the_link)
{
	fixtures();
	cr_assert_eq(symlink("target.out", in_dir("link")), 0);
	cr_assert_eq(symlink("dangling.out", in_dir("dangling")), 0);
	for (size_t k = 0; k < NR_WRITERS; k++) {
		const char *ref = reference(&writers[k], k);
		struct stat st;
		struct run r;
		FILE *o = fopen(in_dir("target.out"), "w");

		fputs("old content\n", o);
		fclose(o);
		run_writer(&r, &writers[k], in_dir("link"), NULL, NULL);
		cr_assert_eq(r.status, 0, "%s -o link: %s%s", writers[k].name, r.out, r.err);
		cr_assert(!lstat(in_dir("link"), &st) && S_ISLNK(st.st_mode), "%s: the link was replaced",
			  writers[k].name);
		expect_output(&writers[k], in_dir("target.out"), ref);
		unlink(in_dir("dangling.out"));
		run_writer(&r, &writers[k], in_dir("dangling"), NULL, NULL);
		cr_assert_eq(r.status, 0, "%s -o dangling: %s%s", writers[k].name, r.out, r.err);
		cr_assert(!lstat(in_dir("dangling"), &st) && S_ISLNK(st.st_mode), "%s: the link was replaced",
			  writers[k].name);
		expect_output(&writers[k], in_dir("dangling.out"), ref);
	}
}

/* ---- CTF, a directory ---- */

Test(outfile, ctf_wants_a_new_or_empty_directory_and_refuses_devices_and_fifos)
{
	const char *fifo = in_dir("fifo"), *d = in_dir("empty"), *link = in_dir("link");
	struct stat st;
	struct run r;

	fixtures();
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	RUN(&r, "export", in_dir("a.sht"), "-f", "ctf", "-o", fifo);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, fifo) && strstr(r.err, "FIFO") && strstr(r.err, "directory"), "%s", r.err);
	cr_assert(!lstat(fifo, &st) && S_ISFIFO(st.st_mode));
	/* a symlink to an empty directory: the trace takes the directory's place, the link stays */
	cr_assert_eq(mkdir(d, 0755), 0);
	cr_assert_eq(symlink("empty", link), 0);
	RUN(&r, "export", in_dir("a.sht"), "-f", "ctf", "-o", link);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!lstat(link, &st) && S_ISLNK(st.st_mode), "the link was replaced");
	cr_assert(!stat(in_dir("empty/metadata"), &st) && S_ISREG(st.st_mode), "no trace in the directory");
	if (!need_root()) {
		const char *null = make_device("null", 3);

		RUN(&r, "export", in_dir("a.sht"), "-f", "ctf", "-o", null);
		cr_assert_eq(r.status, 1, "%s", r.err);
		cr_assert(strstr(r.err, null) && strstr(r.err, "character device"), "%s", r.err);
		expect_device(null, 3, "export -f ctf");
	}
}

/* ---- record: the SHT file written as it grows (recorder, no rename) ---- */

/* A recording session (what `vcpustat record` runs, without BPF) into path; its error. */
static int session_to(const char *path, const char *capture, struct vcpustat_error *err)
{
	struct rec_session_opts so = { .rec = { .path = path, .mono_start_ns = 1000 }, .capture = capture };
	struct rec_session_stats st;
	struct rec_session *s;
	int e;

	memset(err, 0, sizeof(*err));
	e = rec_session_open(&s, &so, err);
	if (!e)
		e = rec_session_finish(&s, 2000000, &st, err);
	if (e)
		cr_assert(err->msg[0], "a failure (%s) without a message", strerror(-e));
	return e;
}

Test(outfile, a_recording_onto_devices_links_and_fifos)
{
	const char *fifo = in_dir("fifo"), *f = in_dir("rec.sht"), *link = in_dir("link");
	struct vcpustat_error err;
	struct stat st;
	pid_t reader;
	struct run r;

	cr_assert_eq(session_to(f, NULL, &err), 0, "%s", err.msg);
	RUN(&r, "check", f);
	cr_assert_eq(r.status, 0, "%s", r.out);
	/* a symlink to a file: the file is written, the link stays */
	cr_assert_eq(symlink("rec.sht", link), 0);
	cr_assert_eq(session_to(link, NULL, &err), 0, "%s", err.msg);
	cr_assert(!lstat(link, &st) && S_ISLNK(st.st_mode), "the link was replaced");
	/* a FIFO cannot take a file written at offsets: refused before it is opened, and it stays */
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	cr_assert_neq(session_to(fifo, NULL, &err), 0);
	cr_assert(strstr(err.msg, fifo) && strstr(err.msg, "FIFO"), "%s", err.msg);
	cr_assert(!lstat(fifo, &st) && S_ISFIFO(st.st_mode));
	/* the raw events (--capture) are a stream: a FIFO gets them */
	reader = fifo_reader(fifo, in_dir("fifo.got"));
	cr_assert_eq(session_to(f, fifo, &err), 0, "%s", err.msg);
	cr_assert_eq(fifo_reader_end(reader, fifo), 0);
	RUN(&r, "replay", in_dir("fifo.got"), "-o", in_dir("replayed.sht"));
	cr_assert_eq(r.status, 0, "the capture that went through the FIFO replays: %s", r.err);
	if (need_root())
		return;
	cr_assert_eq(session_to(make_device("null", 3), make_device("cnull", 3), &err), 0, "%s", err.msg);
	expect_device(in_dir("null"), 3, "record");
	expect_device(in_dir("cnull"), 3, "record --capture");
	cr_assert_neq(session_to(make_device("full", 7), NULL, &err), 0);
	cr_assert(strstr(err.msg, in_dir("full")) && strstr(err.msg, "No space left on device"), "%s", err.msg);
	expect_device(in_dir("full"), 7, "record");
	cr_assert_neq(session_to(f, make_device("cfull", 7), &err), 0);
	cr_assert(strstr(err.msg, in_dir("cfull")) && strstr(err.msg, "No space left on device"), "%s", err.msg);
	expect_device(in_dir("cfull"), 7, "record --capture");
}

/* Rotation names a series of files after -o: not after a device's name. */
Test(outfile, rotation_onto_a_device_is_refused)
{
	struct rec_session_opts so = { .rec = { .mono_start_ns = 1000, .rotate_ns = 1000000000 } };
	struct vcpustat_error err = { 0 };
	struct rec_session *s = NULL;

	SKIP_UNLESS(need_root());
	so.rec.path = make_device("null", 3);
	if (!rec_session_open(&s, &so, &err)) {
		rec_session_close(s, 0);
		cr_assert_fail("rotation onto %s was not refused", so.rec.path);
	}
	cr_assert(strstr(err.msg, so.rec.path) && strstr(err.msg, "character device"), "%s", err.msg);
	expect_device(so.rec.path, 3, "record --rotate-every");
}

/* `vcpustat record` itself (live: BPF), onto each kind of target, for a moment. */
Test(outfile, record_onto_each_kind_of_target, .timeout = 120)
{
	struct {
		const char *target;
		int status;
		const char *says;
	} cases[] = {
		{ "null", 0, NULL },
		{ "full", 1, "No space left on device" },
		{ "fifo", 1, "FIFO" },
		{ "/proc/self/fd/3", 0, NULL },
		{ "d", 1, "directory" },
	};

	SKIP_UNLESS(need_root());
	SKIP_UNLESS(bpf_unavailable());
	make_device("null", 3);
	make_device("full", 7);
	cr_assert_eq(mkfifo(in_dir("fifo"), 0644), 0);
	cr_assert_eq(mkdir(in_dir("d"), 0755), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].target[0] == '/' ? cases[i].target : in_dir(cases[i].target);
		const char *const argv[] = { vcpustat_bin(), "record", "-q", "-o", t, "--duration", "0.3", NULL };
		struct run r;

		run_io_fd3(&r, argv, NULL, NULL, in_dir("fd3.got"), 30);
		cr_assert_eq(r.status, cases[i].status, "record -o %s: exit %d: %s", t, r.status, r.err);
		if (cases[i].says)
			cr_assert(strstr(r.err, t) && strstr(r.err, cases[i].says), "record -o %s: %s", t, r.err);
		if (t == cases[i].target) {
			RUN(&r, "check", in_dir("fd3.got"));
			cr_assert_eq(r.status, 0, "record -o %s wrote into the file open there: %s", t, r.out);
		}
	}
	expect_device(in_dir("null"), 3, "record");
	expect_device(in_dir("full"), 7, "record");
}
