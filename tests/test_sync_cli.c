// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* vcpustat sync --pairs: the command line, on generated files. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>
#include "sync/sync.h"
#include "sync_synth.h"

static char tmpdir[64];
static char out[1 << 16], err[1 << 16];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/vcpustat-sync-cli-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect(system(cmd) == 0, "cannot remove %s", tmpdir);
}

static const char *vcpustat_bin(void)
{
	static char path[512];
	const char *dir = getenv("VCPUSTAT_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/bin/vcpustat", dir ? dir : VCPUSTAT_BUILD_DIR);
	return path;
}

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* Run vcpustat with args (NULL-terminated), stdin from in (or /dev/null);
 * fills out/err; returns the exit status, or -signal if it crashed. */
static int run(const char *in, const char *const *args)
{
	char opath[128], epath[128];
	const char *argv[16] = { vcpustat_bin() };
	int status, i;
	pid_t pid;

	for (i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	snprintf(opath, sizeof(opath), "%s/stdout", tmpdir);
	snprintf(epath, sizeof(epath), "%s/stderr", tmpdir);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int fi = open(in ? in : "/dev/null", O_RDONLY);
		int fo = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fi < 0 || fo < 0 || fe < 0)
			_exit(126);
		dup2(fi, 0);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	slurp(opath, out, sizeof(out));
	slurp(epath, err, sizeof(err));
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	return WEXITSTATUS(status);
}

static const char *write_file(const char *name, const char *text)
{
	static char path[4][128];
	static int next;
	char *p = path[next++ % 4];
	FILE *f;

	snprintf(p, 128, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

/* The default synthetic exchange as a pairs file, with comments and blanks. */
static const char *write_synthetic(const char *name, struct synth *p)
{
	static char path[128];
	struct vcpustat_sync_match *m;
	size_t n = synth_generate(p, &m);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "# synthetic: guest = 1.0002 host + 5 s\n\n");
	for (size_t i = 0; i < n; i++) {
		bool h2g = m[i].dir == VCPUSTAT_SYNC_HOST_TO_GUEST;

		fprintf(f, i % 7 ? "%s,%llu,%s,%llu\n" : " %s , %llu,\t%s ,%llu   # spaced\r\n", h2g ? "host" : "guest",
			(unsigned long long)m[i].send_ns, h2g ? "guest" : "host", (unsigned long long)m[i].recv_ns);
	}
	fclose(f);
	free(m);
	return path;
}

TestSuite(sync_cli, .init = setup, .fini = teardown);

Test(sync_cli, text_output_tells_the_transform_its_error_and_quality)
{
	struct synth p = synth_default(41);
	const char *file = write_synthetic("pairs.csv", &p);
	int status = run(NULL, (const char *const[]){ "sync", "--pairs", file, NULL });

	cr_assert_eq(status, 0, "status %d, stderr: %s", status, err);
	cr_assert(strstr(out, "quality:     accurate"), "%s", out);
	cr_assert(strstr(out, "guest clock = host × 1.0002000"), "%s", out);
	cr_assert(strstr(out, "; accurate: error ≤ "), "%s", out);
	cr_assert(strstr(out, "over 60.0 s of host time"), "%s", out);
	cr_assert(strstr(out, "host->guest") && strstr(out, "guest->host"), "%s", out);
	cr_assert(strstr(out, "min-slope") && strstr(out, "max-slope"), "%s", out);
	cr_assert_str_empty(err);
}

Test(sync_cli, json_output_has_the_transform_bounds_and_counts)
{
	struct synth p = synth_default(42);
	const char *file = write_synthetic("pairs.csv", &p);
	int status = run(NULL, (const char *const[]){ "sync", "--pairs", file, "--json", NULL });
	json_error_t jerr;
	json_t *o, *b;
	double a, bb, alpha, beta, maxerr;
	json_int_t h2g, g2h, total, ref_g, ref_h, first, last;
	const char *quality;

	cr_assert_eq(status, 0, "stderr: %s", err);
	o = json_loads(out, 0, &jerr);
	cr_assert_not_null(o, "not JSON (%s): %s", jerr.text, out);
	cr_assert_eq(json_unpack_ex(o, &jerr, 0,
				    "{s:s, s:F, s:F, s:I, s:I, s:F, s:F, s:o, s:{s:I, s:I, s:I}, s:I, s:I}", "quality",
				    &quality, "a", &a, "b", &bb, "ref_guest_ns", &ref_g, "ref_host_ns", &ref_h, "alpha",
				    &alpha, "beta", &beta, "bounds", &b, "matches", "host_to_guest", &h2g,
				    "guest_to_host", &g2h, "total", &total, "host_first_ns", &first, "host_last_ns", &last),
		     0, "%s", jerr.text);
	cr_assert_str_eq(quality, "accurate");
	cr_assert(fabs(alpha - 1.0002) < 1e-7, "alpha %.12f", alpha);
	cr_assert(fabs(a - 1 / 1.0002) < 1e-7, "a %.12f", a);
	cr_assert_eq(h2g, g2h);
	cr_assert_eq(total, h2g + g2h);
	cr_assert_gt(last - first, 59000000000LL);
	/* the precise form gives the truth within 1 us */
	cr_assert(fabs((double)(ref_h - (json_int_t)llroundl(synth_host(&p, ref_g)))) < 1000, "ref %lld %lld",
		  (long long)ref_g, (long long)ref_h);
	cr_assert(fabs(a * 1e12 + bb - (double)synth_host(&p, 1e12)) < 2000, "a and b: host(guest 1e12)");
	cr_assert_eq(json_unpack_ex(b, &jerr, 0, "{s:F, s:{s:F, s:F, s:F, s:F}, s:{s:F}}", "max_error_ns", &maxerr,
				    "min_slope", "alpha", &alpha, "beta", &beta, "a", &a, "b", &bb, "max_slope", "alpha",
				    &alpha),
		     0, "%s", jerr.text);
	cr_assert(maxerr > 0 && maxerr < 10000, "max_error_ns %f", maxerr);
	json_decref(o);
}

Test(sync_cli, malformed_lines_are_one_error_with_the_line_number)
{
	static const struct {
		const char *line, *expect;
	} cases[] = {
		{ "host,12x,guest,5\n", "bad.csv:3:8: field 2 (send_ts): '12x' is not an integer" },
		{ "host,12,guest\n", "bad.csv:3:" },
		{ "host,1,host,2\n", "both host" },
		{ "hots,1,guest,2\n", "field 1 (sender): 'hots' is neither host nor guest" },
		{ "host,1,guest,2,3\n", "after the 4th field" },
		{ "host,,guest,2\n", "field 2 (send_ts) is empty" },
		{ "host,99999999999999999999999,guest,2\n", "too large" },
		{ "guest,-5,host,2\n", "not an integer" },
		{ "host 1,guest,2\n", "comma" },
		{ "\x01\xff,1,guest,2\n", "neither host nor guest" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		const char *file;
		int status;

		snprintf(text, sizeof(text), "# header\nhost,100,guest,200\n%sguest,300,host,400\n", cases[i].line);
		file = write_file("bad.csv", text);
		status = run(NULL, (const char *const[]){ "sync", "--pairs", file, NULL });
		cr_assert_eq(status, 1, "case %zu: status %d", i, status);
		cr_assert(strstr(err, cases[i].expect), "case %zu: stderr '%s' lacks '%s'", i, err, cases[i].expect);
		cr_assert(strstr(err, "bad.csv:3:"), "case %zu: no line number in '%s'", i, err);
		cr_assert_eq(strchr(err, '\n'), err + strlen(err) - 1, "case %zu: one line: %s", i, err);
		cr_assert_str_empty(out);
	}
}

Test(sync_cli, empty_file_is_absent)
{
	const char *empty = write_file("empty.csv", "");
	const char *comments = write_file("comments.csv", "# nothing yet\n\n   \n");
	int status = run(NULL, (const char *const[]){ "sync", "--pairs", empty, NULL });

	cr_assert_eq(status, 0, "stderr: %s", err);
	cr_assert(strstr(out, "quality:     absent"), "%s", out);
	status = run(NULL, (const char *const[]){ "sync", "--json", "--pairs", comments, NULL });
	cr_assert_eq(status, 0);
	cr_assert(strstr(out, "\"quality\": \"absent\""), "%s", out);
}

Test(sync_cli, reads_stdin_and_reports_other_qualities)
{
	const char *one = write_file("one.csv", "host,1000,guest,2000\nhost,5000,guest,6100\n");
	const char *fail = write_file("fail.csv", "host,1000,guest,2000\nguest,2500,host,3000\n"
						  "host,4000,guest,5000\nguest,6000,host,7000\n"
						  "host,8000,guest,1000\n");
	int status = run(one, (const char *const[]){ "sync", "--pairs", "-", NULL });

	cr_assert_eq(status, 0, "stderr: %s", err);
	cr_assert(strstr(out, "source:      <stdin>"), "%s", out);
	cr_assert(strstr(out, "quality:     incomplete"), "%s", out);
	status = run(NULL, (const char *const[]){ "sync", "--pairs", fail, NULL });
	cr_assert_eq(status, 0);
	cr_assert(strstr(out, "quality:     fail"), "%s", out);
	cr_assert(strstr(out, "line 5 (host,8000,guest,1000)"), "%s", out);
	status = run(NULL, (const char *const[]){ "sync", "--pairs", fail, "--json", NULL });
	cr_assert(strstr(out, "\"line\": 5"), "%s", out);
	cr_assert(strstr(out, "\"transform_quality\": \"accurate\""), "%s", out);
}

Test(sync_cli, bad_usage_exits_2)
{
	cr_assert_eq(run(NULL, (const char *const[]){ "sync", NULL }), 2);
	cr_assert(strstr(err, "--pairs"), "%s", err);
	cr_assert_eq(run(NULL, (const char *const[]){ "sync", "--bogus", NULL }), 2);
	cr_assert_eq(run(NULL, (const char *const[]){ "sync", "--host", "h.txt", NULL }), 2);
	cr_assert(strstr(err, "--host and --guest go together"), "%s", err);
	cr_assert_eq(run(NULL, (const char *const[]){ "sync", "--host", "/nonexistent/h.txt", "--guest",
						      "/nonexistent/g.txt", NULL }),
		     1);
	cr_assert(strstr(err, "/nonexistent/g.txt"), "%s", err);
	cr_assert_eq(run(NULL, (const char *const[]){ "sync", "--pairs", "/nonexistent/x.csv", NULL }), 1);
	cr_assert(strstr(err, "/nonexistent/x.csv") && strstr(err, "No such file"), "%s", err);
	cr_assert_eq(run(NULL, (const char *const[]){ "sync", "--help", NULL }), 0);
	cr_assert(strstr(out, "--host") && strstr(out, "kvm_hypercall"), "help mentions trace-based sync: %s", out);
}
