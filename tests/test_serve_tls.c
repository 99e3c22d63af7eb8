// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * serve --web.config.file: the web configuration of exporter-toolkit, TLS
 * and basic auth. Password checks in-process (web_config_check); bad files
 * refused by the real binary before anything is loaded (no root needed);
 * then, with root and BPF but no VM, the real `vcpustat serve` over HTTPS
 * checked with curl, a plain HTTP client and a real Prometheus server. The
 * certificates are made here with openssl in a scratch directory, the bcrypt
 * hashes with libcrypt: nothing secret is checked in.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <crypt.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "live/live.h"
#include "helpers.h"

static const char *vcpustat_bin(void)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/bin/vcpustat", build_dir());
	return path;
}

/* ---- processes: what a test started is stopped by cleanup() if an assertion ends it early ---- */

/* Still running (not exited, not a zombie)? */
static bool alive(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

/* ---- scratch files ---- */

static const char *tmp(const char *name)
{
	return scratch_file("tls", name);
}

static void cleanup(void)
{
	proc_stop_all();
	scratch_remove();
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static bool have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s > /dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* ---- credentials ---- */

/* A bcrypt hash of password with prefix ("$2y$", "$2b$", "$2a$") and a low cost (tests, not secrets). */
static void bcrypt(const char *prefix, unsigned long cost, const char *password, char *out, size_t len)
{
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *h;

	cr_assert_not_null(crypt_gensalt_rn(prefix, cost, NULL, 0, setting, sizeof(setting)), "gensalt %s", prefix);
	h = crypt_rn(password, setting, cd, sizeof(*cd));
	cr_assert_not_null(h);
	cr_assert_eq(strncmp(h, prefix, 4), 0, "%s", h);
	snprintf(out, len, "%s", h);
	free(cd);
}

/*
 * A CA, a server certificate it signed for localhost and 127.0.0.1 (ca.crt,
 * server.crt, server.key) and an unrelated self-signed pair (other.crt,
 * other.key), made by openssl in the scratch directory.
 */
static void make_certificates(void)
{
	char cmd[2048], out[4096];
	int rc;

	tmp("ca.crt"); /* makes the scratch directory */
	snprintf(cmd, sizeof(cmd),
		 "(cd %s && set -e; "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt "
		 "-days 2 -subj /CN=vcpustat-test-ca; "
		 "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key "
		 "-out server.csr -subj /CN=localhost; "
		 "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext; "
		 "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext "
		 "-out server.crt; "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout other.key "
		 "-out other.crt -days 2 -subj /CN=other)",
		 scratch_dir("tls"));
	rc = run_shell(cmd, out, sizeof(out));
	cr_assert_eq(rc, 0, "openssl: %s", out);
}

/* ---- HTTP ---- */

struct reply {
	int status; /* 0: no HTTP answer (curl failed: TLS, connection, timeout) */
	char *headers, *body;
};

static void reply_free(struct reply *r)
{
	free(r->headers);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* curl over HTTPS, trusting only the test CA; userpass NULL: no credentials. */
static struct reply https_get(int port, const char *path, const char *userpass)
{
	char cmd[1024], out[256];
	struct reply r = {0};

	unlink(tmp("curl.headers"));
	unlink(tmp("curl.body"));
	snprintf(cmd, sizeof(cmd),
		 "curl -sS --max-time 10 --cacert %s -D %s -o %s -w 'status=%%{http_code}' %s%s%s "
		 "https://127.0.0.1:%d%s",
		 tmp("ca.crt"), tmp("curl.headers"), tmp("curl.body"), userpass ? "-u '" : "", userpass ? userpass : "",
		 userpass ? "'" : "", port, path);
	run_shell(cmd, out, sizeof(out));
	if (strstr(out, "status="))
		r.status = atoi(strstr(out, "status=") + 7);
	r.headers = slurp_file(tmp("curl.headers"));
	r.body = slurp_file(tmp("curl.body"));
	if (r.status == 0)
		cr_log_info("curl https://127.0.0.1:%d%s: %s", port, path, out);
	return r;
}

/*
 * A plain-HTTP GET to 127.0.0.1:port with a 5 s receive timeout: what came
 * back (maybe nothing), NUL-terminated, in buf. -1 if it could not connect.
 */
static ssize_t plain_get(int port, char *buf, size_t len)
{
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 5};
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	int s = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	send(s, req, sizeof(req) - 1, MSG_NOSIGNAL);
	while (got < len - 1 && (n = recv(s, buf + got, len - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(s);
	return (ssize_t)got;
}

/* A PromQL instant query (curl to Prometheus's HTTP API): the first sample's value, -1 if none. */
static double promql(int port, const char *query)
{
	char cmd[1024], out[256];
	json_t *doc, *res;
	double v = -1;
	char *body;

	snprintf(cmd, sizeof(cmd),
		 "curl -sS --max-time 5 -o %s http://127.0.0.1:%d/api/v1/query --data-urlencode 'query=%s'",
		 tmp("promql.json"), port, query);
	if (run_shell(cmd, out, sizeof(out)))
		return -1;
	body = slurp_file(tmp("promql.json"));
	doc = json_loads(body, 0, NULL);
	free(body);
	res = json_object_get(json_object_get(doc, "data"), "result");
	if (json_array_size(res))
		v = strtod(json_string_value(json_array_get(json_object_get(json_array_get(res, 0), "value"), 1)),
			   NULL);
	json_decref(doc);
	return v;
}

/* ---- serve ---- */

#define ALICE_PASSWORD "correct horse battery staple"
#define BOB_PASSWORD "s3cret:with:colons"

/* The web config: TLS with server.crt/server.key (relative: to the file), alice ($2y$) and bob ($2b$). */
static const char *write_web_config(void)
{
	char alice[128], bob[128], text[1024];
	const char *path = tmp("web.yml");

	bcrypt("$2y$", 5, ALICE_PASSWORD, alice, sizeof(alice));
	bcrypt("$2b$", 4, BOB_PASSWORD, bob, sizeof(bob));
	snprintf(text, sizeof(text),
		 "# vcpustat serve --web.config.file\n"
		 "tls_server_config:\n"
		 "  cert_file: server.crt\n"
		 "  key_file: server.key\n"
		 "basic_auth_users:\n"
		 "  alice: %s\n"
		 "  bob: '%s'\n",
		 alice, bob);
	write_file(path, text);
	return path;
}

/* Start serve with the web config on a free port; wait (bounded) until alice gets a 200 over HTTPS. */
static pid_t serve_tls(int port)
{
	const char *web = write_web_config();
	char listen[32];
	pid_t pid;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	{
		char *argv[] = {(char *)vcpustat_bin(), "serve",     "--listen", listen,
				"--web.config.file",	(char *)web, NULL};

		pid = proc_spawn(argv, NULL, tmp("serve.err"));
	}
	for (int i = 0; i < 120; i++) {
		struct reply r = https_get(port, "/metrics", "alice:" ALICE_PASSWORD);
		int st = r.status;

		reply_free(&r);
		if (st == 200)
			return pid;
		cr_assert(alive(pid), "serve exited: %s", slurp_file(tmp("serve.err")));
		usleep(250000);
	}
	cr_assert_fail("serve never answered alice over HTTPS: %s", slurp_file(tmp("serve.err")));
	return -1;
}

static void skip_unless_live_tools(void)
{
	SKIP_UNLESS(bpf_unavailable());
	if (!have("openssl"))
		cr_skip_test("openssl is not installed (Debian package openssl; tools/deps.sh installs it)");
	if (!have("curl"))
		cr_skip_test("curl is not installed (Debian package curl; tools/deps.sh installs it)");
}

/* ---- tests ---- */

/*
 * The password checks, in-process: bcrypt $2y$, $2b$ and $2a$; a password
 * that matched once matches again (remembered) while a wrong one still
 * fails afterwards; another user's password, an unknown user, and a password
 * whose first 72 bytes are right but that is longer all fail.
 */
Test(serve_tls, web_config_checks_bcrypt_passwords, .timeout = 60, .fini = cleanup)
{
	char alice[128], bob[128], carol[128], text[1024], long_pw[80], longer_pw[90];
	struct vcpustat_error err = {0};
	struct web_config c;

	memset(long_pw, 'x', 72);
	long_pw[72] = '\0';
	snprintf(longer_pw, sizeof(longer_pw), "%sy", long_pw);
	bcrypt("$2y$", 4, "alice-pw", alice, sizeof(alice));
	bcrypt("$2b$", 4, "bob-pw", bob, sizeof(bob));
	bcrypt("$2a$", 4, long_pw, carol, sizeof(carol));
	snprintf(text, sizeof(text), "basic_auth_users:\n  alice: %s\n  bob: \"%s\"\n  carol: %s\n", alice, bob, carol);
	write_file(tmp("users.yml"), text);
	cr_assert_eq(web_config_load(&c, tmp("users.yml"), &err), 0, "%s", err.msg);
	cr_assert_eq(c.nr_users, 3);
	cr_assert_null(c.cert_pem, "no tls_server_config: no TLS");

	cr_assert(!web_config_check(&c, "alice", "wrong"));
	cr_assert(web_config_check(&c, "alice", "alice-pw"));
	cr_assert(c.users[0].verified, "a match is remembered");
	cr_assert(web_config_check(&c, "alice", "alice-pw"), "and matches again");
	cr_assert(!web_config_check(&c, "alice", "wrong"), "a wrong password after a remembered one");
	cr_assert(!web_config_check(&c, "alice", "alice-pw "), "one character more");
	cr_assert(!web_config_check(&c, "alice", ""));
	cr_assert(!web_config_check(&c, "alice", "bob-pw"), "another user's password");
	cr_assert(web_config_check(&c, "bob", "bob-pw"));
	cr_assert(!web_config_check(&c, "bob", "alice-pw"));
	cr_assert(!web_config_check(&c, "mallory", "alice-pw"), "an unknown user");
	cr_assert(!web_config_check(&c, "Alice", "alice-pw"), "user names are compared exactly");
	cr_assert(web_config_check(&c, "carol", long_pw), "72 bytes, $2a$");
	cr_assert(!web_config_check(&c, "carol", longer_pw), "73 bytes whose first 72 are right: bcrypt alone "
							     "would take it");
	web_config_free(&c);
	cleanup();
}

struct bad_config {
	const char *what;
	const char *text;    /* the web config (%s: a bcrypt hash) */
	const char *where;   /* "web.yml:LINE:" expected in the message */
	const char *message; /* and this */
};

/*
 * A bad web config: exit status 2 and one line naming the file and the line,
 * before anything is loaded or served (no root needed: it never gets there).
 */
Test(serve_tls, bad_web_config_is_refused_with_file_and_line, .timeout = 120, .fini = cleanup)
{
	static const struct bad_config cases[] = {
	    {"bad YAML", "tls_server_config:\n  cert_file: server.crt\n  key_file: [server.key\n",
	     "web.yml:4:", "not valid YAML"},
	    {"tab indentation", "basic_auth_users:\n\talice: %s\n", "web.yml:2:", "not valid YAML"},
	    {"unknown top-level key",
	     "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	     "basic_auth_user:\n  alice: %s\n",
	     "web.yml:4:", "unknown key \"basic_auth_user\""},
	    {"unknown key in tls_server_config", "tls_server_config:\n  cert_file: server.crt\n  keyfile: server.key\n",
	     "web.yml:3:", "unknown key \"keyfile\" in tls_server_config"},
	    {"exporter-toolkit key vcpustat lacks",
	     "tls_server_config:\n  cert_file: server.crt\n  key_file: "
	     "server.key\n  client_ca_file: ca.crt\n",
	     "web.yml:4:", "client_ca_file: not supported"},
	    {"http_server_config", "http_server_config:\n  http2: false\nbasic_auth_users:\n  alice: %s\n",
	     "web.yml:1:", "http_server_config: not supported"},
	    {"missing cert file",
	     "basic_auth_users:\n  alice: %s\ntls_server_config:\n  cert_file: nope.crt\n"
	     "  key_file: server.key\n",
	     "web.yml:4:", "nope.crt: cannot read it: No such file or directory"},
	    {"missing key file", "tls_server_config:\n  cert_file: server.crt\n  key_file: /nonexistent/server.key\n",
	     "web.yml:3:", "/nonexistent/server.key: cannot read it"},
	    {"certificate of another key", "tls_server_config:\n  cert_file: other.crt\n  key_file: server.key\n",
	     "web.yml:2:", "does not match the private key of key_file"},
	    {"a key as certificate", "tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n",
	     "web.yml:2:", "not a PEM certificate"},
	    {"cert_file alone", "tls_server_config:\n  cert_file: server.crt\n",
	     "web.yml:1:", "cert_file without key_file"},
	    {"not a bcrypt hash", "basic_auth_users:\n  alice: $6$salt$abcdefghijklmnopqrstuvwxyz\n",
	     "web.yml:2:", "not a bcrypt hash"},
	    {"bcrypt cost 03", "basic_auth_users:\n  alice: '%s'\n  bob: '$2y$03$abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0'\n",
	     "web.yml:3:", "user \"bob\": the bcrypt cost 03 is out of range (04 to 31)"},
	    {"bcrypt cost 32", "basic_auth_users:\n  alice: '$2y$32$abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0'\n",
	     "web.yml:2:", "the bcrypt cost 32 is out of range (04 to 31)"},
	    {"a user twice", "basic_auth_users:\n  alice: %s\n  bob: %s\n  alice: %s\n",
	     "web.yml:4:", "alice is there twice (first on line 2)"},
	    {"a list", "- tls_server_config\n", "web.yml:1:", "expected a mapping"},
	    {"empty", "", "web.yml:", "empty: nothing configured"},
	};
	const char *web = tmp("web.yml");
	char hash[128], listen[32];

	if (!have("openssl"))
		cr_skip_test("openssl is not installed (Debian package openssl; tools/deps.sh installs it)");
	make_certificates();
	bcrypt("$2y$", 4, "pw", hash, sizeof(hash));
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_loopback_port());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_config *b = &cases[i];
		char text[1024], *err, want[256];
		int rc;

		snprintf(text, sizeof(text), b->text, hash, hash, hash);
		write_file(web, text);
		{
			char *argv[] = {(char *)vcpustat_bin(), "serve",     "--listen", listen,
					"--web.config.file",	(char *)web, NULL};

			rc = proc_wait(proc_spawn(argv, NULL, tmp("bad.err")));
		}
		err = slurp_file(tmp("bad.err"));
		cr_log_info("%s: %s", b->what, err);
		snprintf(want, sizeof(want), "%s/%s", scratch_dir("tls"), b->where);
		cr_assert_eq(rc, 2, "%s: exit status 2, not %d: %s", b->what, rc, err);
		cr_assert_eq(lines(err), 1, "%s: one line: %s", b->what, err);
		cr_assert(!strncmp(err, "vcpustat: error: ", 17), "%s: %s", b->what, err);
		cr_assert(strstr(err, want), "%s: '%s' in: %s", b->what, want, err);
		cr_assert(strstr(err, b->message), "%s: '%s' in: %s", b->what, b->message, err);
		free(err);
	}
	{
		char *argv[] = {(char *)vcpustat_bin(), "serve", "--web.config.file", (char *)tmp("missing.yml"), NULL};
		char *err;
		int rc = proc_wait(proc_spawn(argv, NULL, tmp("bad.err")));

		err = slurp_file(tmp("bad.err"));
		cr_assert_eq(rc, 2, "a missing web config: exit status 2, not %d: %s", rc, err);
		cr_assert(strstr(err, "missing.yml: cannot read it: No such file or directory"), "%s", err);
		free(err);
	}
	cleanup();
}

/*
 * Over HTTPS (curl trusting only the test CA, so the configured certificate
 * is the one served): no credentials, a wrong password, an unknown user,
 * another user's password get 401 with WWW-Authenticate: Basic
 * realm="vcpustat", on / too; alice and bob get the metrics.
 */
Test(serve_tls, curl_gets_metrics_over_tls_only_with_the_password, .timeout = 120, .fini = cleanup)
{
	static const struct {
		const char *path, *userpass;
	} refused[] = {
	    {"/metrics", NULL},
	    {"/metrics", "alice:wrong"},
	    {"/metrics", "alice:" ALICE_PASSWORD "x"},
	    {"/metrics", "mallory:" ALICE_PASSWORD},
	    {"/metrics", "alice:" BOB_PASSWORD},
	    {"/", NULL},
	    {"/nope", NULL},
	};
	int port;
	pid_t serve;
	struct reply r;

	skip_unless_live_tools();
	make_certificates();
	port = free_loopback_port();
	serve = serve_tls(port);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		r = https_get(port, refused[i].path, refused[i].userpass);
		cr_assert_eq(r.status, 401, "%s as %s: status %d: %s", refused[i].path,
			     refused[i].userpass ? refused[i].userpass : "nobody", r.status, r.body);
		cr_assert(strstr(r.headers, "WWW-Authenticate: Basic realm=\"vcpustat\""), "%s", r.headers);
		cr_assert_null(strstr(r.body, "vcpustat_"), "no metric without the password: %s", r.body);
		reply_free(&r);
	}
	r = https_get(port, "/metrics", "alice:" ALICE_PASSWORD);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.headers, "Content-Type: text/plain; version=0.0.4"), "%s", r.headers);
	cr_assert(strstr(r.body, "vcpustat_build_info{"), "%s", r.body);
	reply_free(&r);
	r = https_get(port, "/metrics", "bob:" BOB_PASSWORD);
	cr_assert_eq(r.status, 200, "bob ($2b$, a password with colons)");
	cr_assert(strstr(r.body, "vcpustat_build_info{"), "%s", r.body);
	reply_free(&r);
	r = https_get(port, "/", "alice:" ALICE_PASSWORD);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "vcpustat exporter") && strstr(r.body, "(HTTPS)"), "%s", r.body);
	reply_free(&r);
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp_file(tmp("serve.err")));
	cleanup();
}

/*
 * Plain HTTP to the TLS port gets no HTTP answer, and the server keeps
 * serving: after plain requests, a connection that sends garbage and one
 * that closes at once, HTTPS still works.
 */
Test(serve_tls, plain_http_to_the_tls_port_fails_and_serve_goes_on, .timeout = 120, .fini = cleanup)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char buf[4096];
	int port;
	pid_t serve;
	struct reply r;

	skip_unless_live_tools();
	make_certificates();
	port = free_loopback_port();
	serve = serve_tls(port);
	a.sin_port = htons((uint16_t)port);
	for (int i = 0; i < 5; i++) {
		ssize_t n = plain_get(port, buf, sizeof(buf));

		cr_assert_geq(n, 0, "the port accepts connections");
		cr_assert(strncmp(buf, "HTTP/", 5), "no plain HTTP answer on the TLS port: %s", buf);
		cr_assert_null(strstr(buf, "vcpustat_"), "no metric in clear: %s", buf);
	}
	for (int i = 0; i < 2; i++) {
		static const char bogus[] = "\x16\x03\x01\xff\xff garbage"; /* a TLS record header, then junk */
		int s = socket(AF_INET, SOCK_STREAM, 0);

		cr_assert_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
		if (i == 0)
			send(s, bogus, sizeof(bogus) - 1, MSG_NOSIGNAL);
		close(s);
	}
	cr_assert(alive(serve), "serve survives: %s", slurp_file(tmp("serve.err")));
	r = https_get(port, "/metrics", "alice:" ALICE_PASSWORD);
	cr_assert_eq(r.status, 200, "HTTPS after plain HTTP: %d", r.status);
	cr_assert(strstr(r.body, "vcpustat_build_info{"));
	reply_free(&r);
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp_file(tmp("serve.err")));
	cleanup();
}

/*
 * A real Prometheus scrapes serve over HTTPS (verifying the certificate for
 * server_name localhost with the test CA) with alice's password: up == 1 and
 * vcpustat_build_info arrives; the same target with a wrong password: up == 0.
 */
Test(serve_tls, prometheus_scrapes_over_tls_with_basic_auth, .timeout = 150, .fini = cleanup)
{
	char cfg[2048], flag_cfg[160], flag_data[160], flag_web[64];
	double up = -1, up_wrong = -1, info = -1;
	int port, prom_port;
	pid_t serve, prom;

	skip_unless_live_tools();
	if (!have("prometheus"))
		cr_skip_test("prometheus is not installed (tools/deps.sh installs it)");
	make_certificates();
	port = free_loopback_port();
	serve = serve_tls(port);
	prom_port = free_loopback_port();
	snprintf(cfg, sizeof(cfg),
		 "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
		 "scrape_configs:\n"
		 "  - job_name: vcpustat\n"
		 "    scheme: https\n"
		 "    tls_config:\n      ca_file: %s\n      server_name: localhost\n"
		 "    basic_auth:\n      username: alice\n      password: '%s'\n"
		 "    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
		 "  - job_name: vcpustat_wrong_password\n"
		 "    scheme: https\n"
		 "    tls_config:\n      ca_file: %s\n      server_name: localhost\n"
		 "    basic_auth:\n      username: alice\n      password: 'not it'\n"
		 "    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
		 tmp("ca.crt"), ALICE_PASSWORD, port, tmp("ca.crt"), port);
	write_file(tmp("prometheus.yml"), cfg);
	snprintf(flag_cfg, sizeof(flag_cfg), "--config.file=%s", tmp("prometheus.yml"));
	snprintf(flag_data, sizeof(flag_data), "--storage.tsdb.path=%s", tmp("data"));
	snprintf(flag_web, sizeof(flag_web), "--web.listen-address=127.0.0.1:%d", prom_port);
	{
		char *argv[] = {"prometheus", flag_cfg, flag_data, flag_web, NULL};

		prom = proc_spawn(argv, tmp("prometheus.log"), tmp("prometheus.log"));
	}
	/* both targets scraped at least once (up has a sample), bounded */
	for (int i = 0; i < 60 && (up != 1 || up_wrong < 0 || info != 1); i++) {
		sleep(1);
		up = promql(prom_port, "up{job=\"vcpustat\"}");
		up_wrong = promql(prom_port, "up{job=\"vcpustat_wrong_password\"}");
		info = promql(prom_port, "count(vcpustat_build_info{job=\"vcpustat\"})");
	}
	cr_log_info("up %g, up with a wrong password %g, build_info series %g", up, up_wrong, info);
	cr_assert_eq(up, 1, "Prometheus scrapes serve over TLS with basic auth: %s", slurp_file(tmp("prometheus.log")));
	cr_assert_eq(info, 1, "the metrics arrive");
	cr_assert_eq(up_wrong, 0, "a wrong password is refused (up 0; -1: never scraped)");
	cr_assert_eq(proc_stop(prom), 0, "prometheus stops cleanly: %s", slurp_file(tmp("prometheus.log")));
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp_file(tmp("serve.err")));
	cleanup();
}

/* Without --web.config.file: plain HTTP, no password asked, as before. */
Test(serve_tls, without_a_web_config_serve_is_plain_http_without_auth, .timeout = 60, .fini = cleanup)
{
	char listen[32], buf[65536];
	int port, status = 0;
	pid_t serve;

	SKIP_UNLESS(bpf_unavailable());
	port = free_loopback_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	{
		char *argv[] = {(char *)vcpustat_bin(), "serve", "--listen", listen, NULL};

		serve = proc_spawn(argv, NULL, tmp("serve.err"));
	}
	for (int i = 0; i < 120 && status != 200; i++) {
		if (plain_get(port, buf, sizeof(buf)) > 12 && !strncmp(buf, "HTTP/1.", 7))
			status = atoi(buf + 9);
		else
			usleep(250000);
		cr_assert(alive(serve), "serve exited: %s", slurp_file(tmp("serve.err")));
	}
	cr_assert_eq(status, 200, "%s", buf);
	cr_assert(strstr(buf, "vcpustat_build_info{"), "%s", buf);
	cr_assert_null(strstr(buf, "WWW-Authenticate"));
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp_file(tmp("serve.err")));
	cleanup();
}
