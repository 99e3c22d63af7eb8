// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * serve's basic auth under load and abuse (user/serve/httpauth.c, the
 * credentials' parsing in webconfig.c): the bytes of the password with their
 * length, the scheme in any case, pipelined requests, a request answered
 * while another one's bcrypt runs, wrong passwords limited per address, a
 * cost too high for a scrape warned about, and SIGTERM obeyed with checks
 * queued.
 *
 * Most of it in-process and without root: the server (httpd_start) over a
 * source that has nothing to sample, asked for /nope, whose 404 needs no
 * sample but comes only after the password passed (every path needs it).
 * Slow checks use a hash of a high cost made by changing the cost digits of
 * a cost-4 hash: bcrypt then runs at that cost for any password, and no test
 * waits to make one.
 * The last test runs the real `vcpustat serve` (root and BPF).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gnutls/gnutls.h>
#include "live/live.h"
#include "helpers.h"

#define ALICE_PW "alice-pw"

static void cleanup(void)
{
	proc_stop_all();
	scratch_remove();
}

static const char *tmp(const char *name)
{
	return scratch_file("auth", name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* A bcrypt hash of password at cost 4, then marked cost (bcrypt runs at that cost; only cost 4 matches). */
static void hash(const char *password, int cost, char *out, size_t len)
{
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *h;

	cr_assert_not_null(crypt_gensalt_rn("$2y$", 4, NULL, 0, setting, sizeof(setting)));
	h = crypt_rn(password, setting, cd, sizeof(*cd));
	cr_assert_not_null(h);
	snprintf(out, len, "%s", h);
	out[4] = (char)('0' + cost / 10);
	out[5] = (char)('0' + cost % 10);
	free(cd);
}

/* web.yml with alice (cost 4, ALICE_PW) and slow (a hash of cost slow_cost that nothing matches). */
static const char *write_users(int slow_cost)
{
	char alice[128], slow[128], text[512];

	hash(ALICE_PW, 4, alice, sizeof(alice));
	hash("nothing", slow_cost, slow, sizeof(slow));
	snprintf(text, sizeof(text), "basic_auth_users:\n  alice: %s\n  slow: %s\n", alice, slow);
	write_file(tmp("web.yml"), text);
	return tmp("web.yml");
}

struct server {
	struct web_config web;
	struct httpd *h;
	int port;
};

/* Only /nope is asked for: a scrape of /metrics would get the 500 of a failed sample. */
static int no_sample(void *ctx, unsigned long long *ts)
{
	(void)ctx;
	(void)ts;
	return -ENODATA;
}

static const struct httpd_source nothing_to_sample = { .sample = no_sample };

static void serve_users(struct server *s, int slow_cost)
{
	struct httpd_opts ho = {.cache_ms = 250};
	struct vcpustat_error err = {0};
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(web_config_load(&s->web, write_users(slow_cost), &err), 0, "%s", err.msg);
	ho.web = &s->web;
	/* the tests connect from 127.0.0.2 and more as well, as different clients */
	cr_assert_eq(httpd_listen("127.0.0.1:0", &fd, &err), 0, "%s", err.msg);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	cr_assert_eq(httpd_start(&s->h, fd, &nothing_to_sample, &ho, &err), 0, "%s", err.msg);
}

static void stop_serving(struct server *s)
{
	httpd_stop(s->h);
	web_config_free(&s->web);
}

/* A connection to port from 127.0.0.<from> with a receive timeout of 30 s. */
static int connect_from(int port, int from)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000000u | (unsigned)from)};
	struct sockaddr_in dst = {
	    .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 30};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(s, 0);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cr_assert_eq(bind(s, (struct sockaddr *)&src, sizeof(src)), 0, "bind 127.0.0.%d: %s", from, strerror(errno));
	cr_assert_eq(connect(s, (struct sockaddr *)&dst, sizeof(dst)), 0, "connect: %s", strerror(errno));
	return s;
}

/* "Authorization: SCHEME base64(cred, len)\r\n" into out. */
static void authorization(const char *scheme, const char *cred, size_t len, char *out, size_t size)
{
	gnutls_datum_t in = {.data = (unsigned char *)cred, .size = (unsigned int)len}, b64 = {0};

	cr_assert_eq(gnutls_base64_encode2(&in, &b64), 0);
	snprintf(out, size, "Authorization: %s %.*s\r\n", scheme, (int)b64.size, (const char *)b64.data);
	gnutls_free(b64.data);
}

/* A GET of /nope with these credentials (len bytes; NULL: none) and Connection: close, sent on s. */
static void send_get(int s, const char *scheme, const char *cred, size_t len)
{
	char auth[512] = "", req[1024];
	int n;

	if (cred)
		authorization(scheme, cred, len, auth, sizeof(auth));
	n = snprintf(req, sizeof(req), "GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n", auth);
	cr_assert_eq(send(s, req, (size_t)n, MSG_NOSIGNAL), n);
}

/* Everything until the server closes s (or 30 s pass), NUL-terminated, in buf; s closed. */
static size_t read_all(int s, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len - 1 && (n = recv(s, buf + got, len - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(s);
	return got;
}

/* The status of the one response to a GET from 127.0.0.<from> with credentials cred (len bytes). */
static int status(int port, int from, const char *scheme, const char *cred, size_t len, char *resp, size_t size)
{
	char own[4096];
	int s = connect_from(port, from);

	if (!resp)
		resp = own, size = sizeof(own);
	send_get(s, scheme, cred, len);
	read_all(s, resp, size);
	return strncmp(resp, "HTTP/1.1 ", 9) ? 0 : atoi(resp + 9);
}

static int status_of(int port, int from, const char *userpass)
{
	return status(port, from, "Basic", userpass, strlen(userpass), NULL, 0);
}

/* Has s anything to read (or its end) right now? */
static bool readable(int s)
{
	struct pollfd p = {.fd = s, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/*
 * The password is the decoded bytes, all of them: "alice-pw\0garbage" is
 * not alice-pw (libmicrohttpd's own parser handed over a C string, cut at
 * the NUL, and it passed).
 */
Test(serve_auth, a_nul_in_the_password_is_not_the_end_of_it, .timeout = 60, .fini = cleanup)
{
	static const char nul[] = "alice:" ALICE_PW "\0garbage";
	static const char nul_user[] = "alice\0x:" ALICE_PW;
	struct server s;

	serve_users(&s, 4);
	cr_assert_eq(status(s.port, 1, "Basic", nul, sizeof(nul) - 1, NULL, 0), 401, "alice-pw\\0garbage");
	cr_assert_eq(status(s.port, 1, "Basic", nul_user, sizeof(nul_user) - 1, NULL, 0), 401, "user alice\\0x");
	cr_assert_eq(status_of(s.port, 1, "alice:" ALICE_PW), 404, "the password itself passes (404: /nope)");
	cr_assert_eq(status(s.port, 1, "Basic", nul, sizeof(nul) - 1, NULL, 0), 401,
		     "and with the NUL still fails once it is remembered");
	stop_serving(&s);
}

/* RFC 7235: the scheme is case-insensitive; anything else is no credentials. */
Test(serve_auth, the_scheme_basic_is_case_insensitive, .timeout = 60, .fini = cleanup)
{
	static const char *const schemes[] = {"basic", "BASIC", "bAsIc", "Basic"};
	static const char cred[] = "alice:" ALICE_PW;
	char resp[4096];
	struct server s;

	serve_users(&s, 4);
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		cr_assert_eq(status(s.port, 1, schemes[i], cred, sizeof(cred) - 1, NULL, 0), 404, "scheme %s",
			     schemes[i]);
	cr_assert_eq(status(s.port, 1, "Bearer", cred, sizeof(cred) - 1, resp, sizeof(resp)), 401, "Bearer: %s", resp);
	cr_assert_eq(status(s.port, 1, "Basicx", cred, sizeof(cred) - 1, NULL, 0), 401, "Basicx");
	cr_assert(strstr(resp, "WWW-Authenticate: Basic realm=\"" WEB_REALM "\""), "%s", resp);
	stop_serving(&s);
}

/* Count of responses (status lines) in resp, and the status of the n-th. */
static int nth_status(const char *resp, int n, int *count)
{
	int st = 0;

	*count = 0;
	for (const char *p = resp; (p = strstr(p, "HTTP/1.1 ")); p += 9)
		if (++*count == n)
			st = atoi(p + 9);
	return st;
}

/*
 * Two requests in one write on one connection, each answered, in order: the
 * first one's password needing a bcrypt, then one remembered; then a wrong
 * password followed by a right one.
 */
Test(serve_auth, pipelined_requests_are_each_answered, .timeout = 60, .fini = cleanup)
{
	static const struct {
		const char *first, *second;
		int st1, st2;
	} cases[] = {
	    {"alice:" ALICE_PW, "alice:" ALICE_PW, 404, 404},
	    {"alice:wrong", "alice:" ALICE_PW, 401, 404},
	};
	struct server s;

	serve_users(&s, 4);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char a1[256], a2[256], req[1024], resp[8192];
		int sock = connect_from(s.port, 1), n, count, st1, st2;

		authorization("Basic", cases[i].first, strlen(cases[i].first), a1, sizeof(a1));
		authorization("Basic", cases[i].second, strlen(cases[i].second), a2, sizeof(a2));
		n = snprintf(req, sizeof(req),
			     "GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n"
			     "GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n",
			     a1, a2);
		cr_assert_eq(send(sock, req, (size_t)n, MSG_NOSIGNAL), n);
		read_all(sock, resp, sizeof(resp));
		st1 = nth_status(resp, 1, &count);
		st2 = nth_status(resp, 2, &count);
		cr_assert_eq(count, 2, "case %zu: two responses, not %d: %s", i, count, resp);
		cr_assert_eq(st1, cases[i].st1, "case %zu: first %d: %s", i, st1, resp);
		cr_assert_eq(st2, cases[i].st2, "case %zu: second %d: %s", i, st2, resp);
	}
	stop_serving(&s);
}

/*
 * While the bcrypts of wrong passwords at cost 16 run (seconds each), a
 * request whose password is remembered is answered: its response comes
 * while theirs have not. A third check from an address with two waiting is
 * refused at once (429). Then stopping the server does not wait for the
 * bcrypt under way: the waiting requests are let go (503 or closed).
 */
Test(serve_auth, a_remembered_password_is_answered_while_slow_checks_run, .timeout = 120, .fini = cleanup)
{
	static const char slow[] = "slow:wrong";
	char resp[4096];
	int bad[2];
	struct server s;

	serve_users(&s, 16);
	cr_assert_eq(status_of(s.port, 1, "alice:" ALICE_PW), 404, "alice's password, remembered from now on");
	for (int i = 0; i < 2; i++) {
		bad[i] = connect_from(s.port, 7);
		send_get(bad[i], "Basic", slow, sizeof(slow) - 1);
	}
	usleep(300000); /* the server has read them: on one thread, it is now in the first bcrypt */
	cr_assert_eq(status_of(s.port, 7, slow), 429, "a third check from the address with two waiting");
	cr_assert_eq(status(s.port, 1, "Basic", "alice:" ALICE_PW, strlen("alice:" ALICE_PW), resp, sizeof(resp)), 404,
		     "%s", resp);
	for (int i = 0; i < 2; i++)
		cr_assert(!readable(bad[i]), "alice was answered before the slow check %d ended", i + 1);
	stop_serving(&s);
	for (int i = 0; i < 2; i++) {
		int count;

		read_all(bad[i], resp, sizeof(resp));
		cr_assert(!*resp || nth_status(resp, 1, &count) == 503, "a waiting request after the stop: %s", resp);
	}
}

/*
 * WEB_AUTH_FAILURES wrong passwords from one address get 401, the next
 * request from it that needs a bcrypt 429 with Retry-After, even with the
 * right password; another address is not limited; once the right password
 * is remembered, the limited address passes with it (no bcrypt needed).
 */
Test(serve_auth, wrong_passwords_are_limited_per_address, .timeout = 60, .fini = cleanup)
{
	char resp[4096];
	struct server s;

	serve_users(&s, 4);
	for (unsigned int i = 0; i < WEB_AUTH_FAILURES; i++)
		cr_assert_eq(status_of(s.port, 2, "alice:wrong"), 401, "wrong password %u", i + 1);
	cr_assert_eq(status(s.port, 2, "Basic", "alice:nope", 10, resp, sizeof(resp)), 429, "%s", resp);
	cr_assert(strstr(resp, "Retry-After: "), "%s", resp);
	cr_assert_gt(atoi(strstr(resp, "Retry-After: ") + 13), 0, "%s", resp);
	cr_assert_leq(atoi(strstr(resp, "Retry-After: ") + 13), (int)WEB_AUTH_BACKOFF_S, "%s", resp);
	cr_assert_eq(status_of(s.port, 2, "alice:" ALICE_PW), 429, "the right password needs a bcrypt too");
	cr_assert_eq(status_of(s.port, 2, "mallory:x"), 429, "an unknown user as well");
	cr_assert_eq(status_of(s.port, 3, "alice:" ALICE_PW), 404, "another address");
	cr_assert_eq(status_of(s.port, 2, "alice:" ALICE_PW), 404, "remembered: no bcrypt, not limited");
	cr_assert_eq(status_of(s.port, 2, "alice:wrong"), 429, "but wrong ones still are");
	stop_serving(&s);
}

/* A cost whose check takes seconds here is warned about, naming the line; cost 4 is not. */
Test(serve_auth, a_costly_hash_is_warned_about, .timeout = 60, .fini = cleanup)
{
	struct vcpustat_error err = {0};
	struct web_config c;
	char want[300];

	cr_assert_eq(web_config_load(&c, write_users(16), &err), 0, "%s", err.msg);
	cr_assert_not_null(c.warning, "cost 16: a warning");
	cr_log_info("%s", c.warning);
	snprintf(want, sizeof(want), "%s:3: basic_auth_users: user \"slow\": a bcrypt of cost 16 takes about ",
		 tmp("web.yml"));
	cr_assert(!strncmp(c.warning, want, strlen(want)), "%s", c.warning);
	web_config_free(&c);
	cr_assert_eq(web_config_load(&c, write_users(4), &err), 0, "%s", err.msg);
	cr_assert_null(c.warning, "cost 4: %s", c.warning);
	web_config_free(&c);
}

/* ---- the real serve ---- */

static const char *vcpustat_bin(void)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/bin/vcpustat", build_dir());
	return path;
}

/* GET /metrics from 127.0.0.<from> (alice): its status. */
static int scrape(int port, int from, char *resp, size_t size)
{
	static const char cred[] = "alice:" ALICE_PW;
	char auth[256], req[512];
	int s = connect_from(port, from), n;

	authorization("Basic", cred, sizeof(cred) - 1, auth, sizeof(auth));
	n = snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n", auth);
	cr_assert_eq(send(s, req, (size_t)n, MSG_NOSIGNAL), n);
	read_all(s, resp, size);
	return strncmp(resp, "HTTP/1.1 ", 9) ? 0 : atoi(resp + 9);
}

/*
 * `vcpustat serve` with a hash of cost 20 (a minute per check here): it
 * warns at start; wrong passwords from two addresses fill the worker and
 * the queue, alice's scrape gets its 200 meanwhile, and SIGTERM ends serve
 * (status 0) at once, with a bcrypt under way and more queued.
 */
Test(serve_auth, serve_obeys_sigterm_with_checks_queued, .timeout = 120, .fini = cleanup)
{
	static char resp[1 << 20];
	char listen[32];
	int port, bad[4], st = 0, ws = 0, rc;
	bool exited = false;
	pid_t pid;
	char *err;

	SKIP_UNLESS(bpf_unavailable());
	port = free_loopback_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	{
		char *argv[] = {(char *)vcpustat_bin(),	 "serve", "--listen", listen, "--web.config.file",
				(char *)write_users(20), NULL};

		pid = proc_spawn(argv, NULL, tmp("serve.err"));
	}
	for (int i = 0; i < 120 && st != 200; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)port),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		bool up = !connect(s, (struct sockaddr *)&a, sizeof(a));

		close(s);
		if (up)
			st = scrape(port, 1, resp, sizeof(resp));
		else
			usleep(250000);
		cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "serve exited: %s", slurp_file(tmp("serve.err")));
	}
	cr_assert_eq(st, 200, "%.200s", resp);
	err = slurp_file(tmp("serve.err"));
	cr_assert(strstr(err, "warning: ") &&
		      strstr(err, "web.yml:3: basic_auth_users: user \"slow\": a bcrypt of cost 20"),
		  "%s", err);
	free(err);
	for (int i = 0; i < 4; i++) {
		bad[i] = connect_from(port, 5 + i / 2);
		send_get(bad[i], "Basic", "slow:wrong", 10);
	}
	usleep(300000);
	cr_assert_eq(scrape(port, 1, resp, sizeof(resp)), 200, "a scrape while four checks of cost 20 wait: %.200s",
		     resp);
	cr_assert(strstr(resp, "vcpustat_build_info{"));
	for (int i = 0; i < 4; i++)
		cr_assert(!readable(bad[i]), "check %d still waiting", i + 1);
	kill(pid, SIGTERM);
	for (int i = 0; i < 100 && !exited; i++) {
		exited = waitpid(pid, &ws, WNOHANG) == pid;
		if (!exited)
			usleep(100000);
	}
	cr_assert(exited, "serve still runs 10 s after SIGTERM: %s", slurp_file(tmp("serve.err")));
	rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	proc_wait(pid); /* forgotten by the helpers */
	cr_assert_eq(rc, 0, "serve's exit status after SIGTERM: %s", slurp_file(tmp("serve.err")));
	for (int i = 0; i < 4; i++)
		close(bad[i]);
}
