// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporter's HTTP server (user/serve/httpd.c) and its session
 * (session.c) on their own, without BPF:
 * it serves a metrics model that a source of ours brings up to date, so what
 * it sends, when it samples and what a failed sample gives are checked on
 * every machine (the live tests do it again over the real maps, test_export.c
 * and test_serve_cache.c, where BPF is there). This file includes no live
 * header: the server is the offline library's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export/export.h"
#include "serve/serve.h"
#include "helpers.h"

/* A source of windows of one VM with one vCPU, each second's a little busier; counts its samples. */
struct counting_source {
	struct metrics *m;
	unsigned int samples;
	int fail; /* what sample() returns instead (0: a sample) */
};

static int count_sample(void *ctx, unsigned long long *ts)
{
	struct counting_source *c = ctx;
	struct summary s = { .t0 = c->samples * 1000000000ull, .t1 = (c->samples + 1) * 1000000000ull };
	int fail = __atomic_load_n(&c->fail, __ATOMIC_SEQ_CST);
	struct vm_summary *vm;
	int err;

	if (fail)
		return fail;
	vm = s.vms = calloc(1, sizeof(*s.vms));
	if (!vm)
		return -ENOMEM;
	s.nr_vms = 1;
	snprintf(vm->name, sizeof(vm->name), "web1");
	vm->tgid = 100;
	vm->runq.kind = VCPU_SAMPLE_RUNQ_WAIT;
	vm->vcpus = calloc(1, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		summary_free(&s);
		return -ENOMEM;
	}
	vm->nr_vcpus = 1;
	vm->vcpus[0].tid = 101;
	vm->vcpus[0].ns[VCPU_GUEST] = 1000000ull * (c->samples + 1);
	vm->vcpus[0].preemptions = c->samples + 1;
	err = metrics_add(c->m, &s);
	summary_free(&s);
	if (err)
		return err;
	__atomic_add_fetch(&c->samples, 1, __ATOMIC_SEQ_CST); /* the session test reads it from another thread */
	*ts = vcpustat_now_ns();
	return 0;
}

/* A fresh counting source over a new model (the caller frees c->m). */
static void counting_init(struct counting_source *c)
{
	struct metrics_opts mo = { .top_culprits = 5 };

	memset(c, 0, sizeof(*c));
	c->m = metrics_new(&mo);
	cr_assert_not_null(c->m);
}

static struct httpd *serve(struct counting_source *c, unsigned int cache_ms)
{
	struct httpd_opts ho = { .cache_ms = cache_ms };
	struct vcpustat_error err = { 0 };
	struct httpd_source src;
	struct httpd *h;
	int fd;

	counting_init(c);
	src = (struct httpd_source){ .m = c->m, .sample = count_sample, .ctx = c, .what = "the counter" };
	cr_assert_eq(httpd_listen("127.0.0.1:0", &fd, &err), 0, "%s", err.msg);
	cr_assert_eq(httpd_start(&h, fd, &src, &ho, &err), 0, "%s", err.msg);
	return h;
}

/* GET path of h with curl (extra: more of its options); the body in out, the HTTP status returned. */
static int get(struct httpd *h, const char *path, const char *extra, char *out, size_t len)
{
	static char resp[1 << 16];
	char cmd[512];
	char *nl;
	int code;

	snprintf(cmd, sizeof(cmd), "curl -s %s -w '\\n%%{http_code}' 'http://%s%s'", extra, httpd_address(h), path);
	cr_assert_eq(run_shell(cmd, resp, sizeof(resp)), 0, "%s: %s", cmd, resp);
	nl = strrchr(resp, '\n');
	cr_assert_not_null(nl, "%s: no status line: %s", cmd, resp);
	code = atoi(nl + 1);
	*nl = '\0';
	snprintf(out, len, "%s", resp);
	return code;
}

/* The model's rendering in format f, as the server would send it now. */
static char *rendered(const struct metrics *m, enum metrics_format f)
{
	char *text = NULL;
	size_t len = 0;

	cr_assert_eq(metrics_render(m, f, &text, &len), 0);
	return text;
}

/*
 * One scrape of /metrics that must be a 200 after which c has taken samples
 * samples in all, its body byte for byte the model's Prometheus text (what:
 * the scrape, for the messages). The body stays in body.
 */
static void expect_scrape(struct httpd *h, const struct counting_source *c, unsigned int samples,
			  const char *what, char *body, size_t len)
{
	char *want;

	cr_assert_eq(get(h, "/metrics", "", body, len), 200, "%s: %s", what, body);
	cr_assert_eq(c->samples, samples, "%s: %u samples, not %u", what, c->samples, samples);
	want = rendered(c->m, METRICS_PROMETHEUS);
	cr_assert_str_eq(body, want, "%s: not the latest sample's Prometheus text", what);
	free(want);
}

/*
 * With a cache longer than the test, the first scrape samples and every
 * later one (and a refresh) is answered from that sample: byte for byte the
 * model's rendering, Prometheus text or OpenMetrics as the Accept header
 * asks. The page at / names the VM of the sample.
 */
Test(serve, scrapes_within_cache_ms_are_the_one_samples_rendering)
{
	static char body[1 << 16];
	struct counting_source c;
	struct httpd *h = serve(&c, 600000);
	char *want;

	for (int i = 1; i <= 4; i++) {
		char what[32];

		snprintf(what, sizeof(what), "scrape %d", i);
		expect_scrape(h, &c, 1, what, body, sizeof(body));
	}
	cr_assert(strstr(body, "vm=\"web1\""), "the sample's VM is served:\n%s", body);
	cr_assert_eq(get(h, "/metrics", "-H 'Accept: application/openmetrics-text'", body, sizeof(body)), 200);
	want = rendered(c.m, METRICS_OPENMETRICS);
	cr_assert_str_eq(body, want, "not the model's OpenMetrics text");
	free(want);
	cr_assert_eq(httpd_refresh(h), 0);
	cr_assert_eq(c.samples, 1, "a refresh within cache_ms samples nothing: %u samples", c.samples);
	cr_assert_eq(get(h, "/", "", body, sizeof(body)), 200);
	cr_assert(strstr(body, "<h1>vcpustat exporter</h1>") && strstr(body, "web1"), "the page at /:\n%s", body);
	cr_assert_eq(c.samples, 1);
	httpd_stop(h);
	metrics_free(c.m);
}

/* With the cache off, every scrape and every refresh samples anew, and serves what it sampled. */
Test(serve, without_a_cache_each_scrape_and_refresh_samples)
{
	static char body[1 << 16];
	struct counting_source c;
	struct httpd *h = serve(&c, 0);

	for (unsigned int i = 1; i <= 3; i++) {
		char what[32];

		snprintf(what, sizeof(what), "scrape %u", i);
		expect_scrape(h, &c, i, what, body, sizeof(body));
	}
	cr_assert_eq(httpd_refresh(h), 0);
	cr_assert_eq(c.samples, 4, "a refresh samples: %u samples", c.samples);
	httpd_stop(h);
	metrics_free(c.m);
}

/*
 * A sample that fails is a 500 for that scrape and the refresh's error, and
 * leaves no sample behind: the next scrape samples again and is served.
 */
Test(serve, a_failed_sample_is_a_500_and_the_next_scrape_samples_again)
{
	static char body[1 << 16];
	struct counting_source c;
	struct httpd *h = serve(&c, 600000);

	c.fail = -EIO;
	cr_assert_eq(get(h, "/metrics", "", body, sizeof(body)), 500, "a failed sample: %s", body);
	cr_assert(strstr(body, "cannot read the counter: ") && strstr(body, strerror(EIO)),
		  "the source's own name, and why: %s", body);
	cr_assert_eq(get(h, "/", "", body, sizeof(body)), 500, "the page of a failed sample: %s", body);
	cr_assert(strstr(body, "cannot read the counter: ") && strstr(body, strerror(EIO)), "the page too: %s", body);
	cr_assert_eq(httpd_refresh(h), -EIO);
	cr_assert_eq(c.samples, 0);
	c.fail = 0;
	cr_assert_eq(get(h, "/metrics", "", body, sizeof(body)), 200, "%s", body);
	cr_assert_eq(c.samples, 1);
	cr_assert(strstr(body, "vm=\"web1\""), "%s", body);
	httpd_stop(h);
	metrics_free(c.m);
}

/* serve_run()'s warnings, kept for the test that runs it. */
static char run_warning[256];
static unsigned int run_warnings;

static void count_warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(run_warning, sizeof(run_warning), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&run_warnings, 1, __ATOMIC_SEQ_CST);
}

struct session_run {
	struct serve *s;
	volatile sig_atomic_t stop;
};

static void *run_session(void *arg)
{
	struct session_run *r = arg;

	serve_run(r->s, &r->stop, count_warning);
	return NULL;
}

/* Wait (10 s at most: a hang, not a speed) until what *n counts reaches want. */
static void wait_for(const unsigned int *n, unsigned int want, const char *what)
{
	for (int i = 0; i < 1000 && __atomic_load_n(n, __ATOMIC_SEQ_CST) < want; i++)
		usleep(10000);
	cr_assert_geq(__atomic_load_n(n, __ATOMIC_SEQ_CST), want, "%s: %u, not %u, after 10 s", what,
		      __atomic_load_n(n, __ATOMIC_SEQ_CST), want);
}

/*
 * The exporter's session over a source of its own (what `vcpustat serve`
 * runs over the live maps): prepared on a port of its own, which a second
 * session cannot take; a --user that does not exist refused before
 * anything starts; started, it says where it serves and serves the
 * source's samples; run, it refreshes every refresh interval until told to
 * stop, warning of a sample that fails; stopped, it can be stopped again.
 */
Test(serve, the_session_serves_its_source_and_refreshes_until_stopped, .timeout = 60)
{
	static char body[1 << 16];
	struct serve_opts o = { .listen = "127.0.0.1:0", .cache_ms = 0, .refresh = 0.02 };
	struct vcpustat_error err = { 0 };
	struct counting_source c;
	struct session_run r = { 0 };
	struct httpd_source src;
	struct serve s, other;
	char where[256], want[256], port_taken[64];
	pthread_t t;

	o.user = "vcpustat-no-such-user";
	cr_assert_eq(serve_prepare(&s, &o, &err), -EINVAL, "--user of no one is refused");
	cr_assert(strstr(err.msg, "vcpustat-no-such-user"), "the message names the user: %s", err.msg);
	serve_stop(&s);
	o.user = NULL;
	cr_assert_eq(serve_prepare(&s, &o, &err), 0, "%s", err.msg);
	cr_assert_not(serve_auth_in_clear(&s));
	counting_init(&c);
	src = (struct httpd_source){ .m = c.m, .sample = count_sample, .ctx = &c };
	cr_assert_eq(serve_start(&s, &src, &err), 0, "%s", err.msg);
	serve_describe(&s, where, sizeof(where));
	snprintf(want, sizeof(want), "http://%s/metrics", httpd_address(s.httpd));
	cr_assert_str_eq(where, want, "where it serves");
	snprintf(port_taken, sizeof(port_taken), "%s", httpd_address(s.httpd));
	o.listen = port_taken;
	cr_assert_neq(serve_prepare(&other, &o, &err), 0, "a second session on %s", port_taken);
	cr_assert(strstr(err.msg, port_taken), "the message names the address: %s", err.msg);
	serve_stop(&other);

	expect_scrape(s.httpd, &c, 1, "the first scrape", body, sizeof(body));
	r.s = &s;
	cr_assert_eq(pthread_create(&t, NULL, run_session, &r), 0);
	wait_for(&c.samples, 4, "samples while it runs");
	__atomic_store_n(&c.fail, -EIO, __ATOMIC_SEQ_CST);
	wait_for(&run_warnings, 1, "warnings of failed samples");
	r.stop = 1;
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert(strstr(run_warning, strerror(EIO)), "the warning says why: %s", run_warning);
	cr_assert(strstr(run_warning, "the samples"), "a source with no name: %s", run_warning);
	c.fail = 0;
	expect_scrape(s.httpd, &c, c.samples + 1, "a scrape after the run", body, sizeof(body));
	serve_stop(&s);
	serve_stop(&s);
	metrics_free(c.m);
}
