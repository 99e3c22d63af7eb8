/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * serve.h - the exporter's HTTP side, in the offline library: the HTTP
 * server (httpd.c, libmicrohttpd) renders a metrics model (export/export.h)
 * that a source brings up to date, so it runs and is tested without BPF; its
 * TLS and basic auth configuration (webconfig.c, Prometheus exporter-toolkit's
 * file) and the password checks that never stall it (httpauth.c); the
 * exporter's session over any source (session.c) and the privilege drop it
 * makes (privdrop.c). The live maps' source is in live/live.h
 * (metrics_live_source(), serve_live_start()).
 *
 * Functions return 0 on success and a negative errno on failure, with one
 * sentence in a struct vcpustat_error where they take one; they never exit
 * and never print.
 */
#ifndef VCPUSTAT_SERVE_H
#define VCPUSTAT_SERVE_H

#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include "util/util.h"
#include "export/export.h"

/*
 * ---- httpd.c: the Prometheus exporter's HTTP side (libmicrohttpd) ----
 * /metrics in Prometheus text or OpenMetrics (Accept header), and a small
 * HTML page at /. Every scrape takes a fresh sample of its source (live:
 * metrics_live_source(), which reads the maps) unless another one did within
 * cache_ms; requests are served one at a time by the server's own thread,
 * which never waits for a password check (httpauth.c).
 */

#define HTTPD_DEFAULT_LISTEN "127.0.0.1:9477"

struct web_config;

struct httpd_opts {
	unsigned int cache_ms;	/* scrapes within this of the last sample reuse it (0: always sample) */
	const char *user;	/* shown on the page: the user it runs as (NULL: not shown) */
	struct web_config *web; /* TLS and basic auth (webconfig.c; NULL: plain HTTP, no auth); kept by
				   the server until httpd_stop() */
};

struct httpd;

/*
 * What the server renders: a metrics model and how to bring it up to date.
 * sample() adds a sample to m now (0, or a negative errno, which a scrape
 * answers with 500) and, only when it returns 0, sets *ts to the sample's
 * CLOCK_MONOTONIC time in ns (a failed sample leaves *ts as it was); it is
 * called under the server's lock, one call at a time. last_sample: the time
 * of the sample m holds at the start (0: none yet).
 */
struct httpd_source {
	struct metrics *m;
	int (*sample)(void *ctx, unsigned long long *ts);
	void *ctx;
	unsigned long long last_sample;
	const char *what; /* what sample() reads, for its errors ("the BPF maps"); NULL: "the samples" */
};

/*
 * Bind and listen on addr: "HOST:PORT" ("127.0.0.1:9477", "localhost:9477"),
 * "[V6ADDR]:PORT", or ":PORT" (every interface); port 0: any free port. *fd is the socket. A port
 * in use is -EADDRINUSE with one sentence in err.
 */
int httpd_listen(const char *addr, int *fd, struct vcpustat_error *err);

/* Serve src (copied) on the listening socket fd (taken over) from a thread of its own. */
int httpd_start(struct httpd **h, int fd, const struct httpd_source *src, const struct httpd_opts *o,
		struct vcpustat_error *err);

/*
 * Sample now, under the server's lock, unless a scrape did within cache_ms:
 * live, it keeps the kernel's tables of exited vCPUs and VMs drained between
 * rare scrapes. Returns 0 or the sampling error.
 */
int httpd_refresh(struct httpd *h);
/* What its source samples, for errors: the source's what, or "the samples". */
const char *httpd_what(const struct httpd *h);

/* The address it listens on, as HOST:PORT (the port chosen by the kernel for port 0). */
const char *httpd_address(const struct httpd *h);

/* Stop the server and close its socket. NULL is fine. */
void httpd_stop(struct httpd *h);

/* Which format an HTTP Accept header asks for: OpenMetrics or Prometheus text (exposed for tests). */
enum metrics_format httpd_negotiate(const char *accept);

/*
 * ---- webconfig.c: serve --web.config.file, TLS and basic authentication ----
 * The web configuration file of Prometheus's exporter-toolkit (YAML):
 *
 *	tls_server_config:
 *	  cert_file: server.crt     # relative: to the file's directory
 *	  key_file: server.key
 *	basic_auth_users:
 *	  alice: $2y$10$...         # bcrypt ($2a$, $2b$ or $2y$)
 *
 * Unknown keys are refused, as exporter-toolkit's strict unmarshalling does;
 * the keys of exporter-toolkit that vcpustat does not implement (client
 * certificates, TLS versions and ciphers, http_server_config) are refused by
 * name. Everything is read and checked at load: both files readable, a PEM
 * certificate (chain), an unencrypted PEM key that matches it, well-formed
 * bcrypt hashes.
 */

#define WEB_REALM "vcpustat"

struct web_user {
	char *name;
	char *hash;			/* bcrypt: $2a$, $2b$ or $2y$, 60 characters */
	bool verified;			/* verified_mac is set */
	unsigned char verified_mac[32]; /* HMAC-SHA256 (mac_key) of the last password that matched */
};

struct web_config {
	char *path;		    /* the file, for messages */
	char *cert_file, *key_file; /* as resolved (NULL: no TLS) */
	char *cert_pem, *key_pem;   /* their contents, NUL-terminated */
	struct web_user *users;	    /* nr_users == 0: no authentication */
	size_t nr_users;
	unsigned char mac_key[32]; /* random, per process */
	struct crypt_data *crypt;  /* libcrypt's work area (web_config_check) */
	char *warning;		   /* "FILE:LINE: ..." a cost so high a check takes over WEB_BCRYPT_SLOW_MS
				      here; NULL: none */
};

/*
 * Read and check path into c. 0, or a negative errno with one sentence in err
 * naming the file and the line ("web.yml:3: unknown key ..."); c is then
 * empty (web_config_free is still fine).
 */
int web_config_load(struct web_config *c, const char *path, struct vcpustat_error *err);
void web_config_free(struct web_config *c);

/*
 * Does password belong to user? bcrypt through libcrypt, its result compared
 * in constant time; an unknown user costs a bcrypt too (the first user's
 * hash), so that timing does not tell which names exist. A password that
 * matched once is remembered as an HMAC under a per-process key and later
 * matches without a bcrypt (the hash cannot change while c lives). Passwords
 * over 72 bytes (bcrypt would read only their first 72) or with a NUL byte
 * are refused without one. web_config_check() is the three steps below at
 * once: one caller at a time.
 */
bool web_config_check(struct web_config *c, const char *user, const char *password);

/* A check that may need a bcrypt, in three steps: the server's thread never waits for one. */
enum web_verdict {
	WEB_REFUSED,
	WEB_ALLOWED,	  /* no users, or a password remembered from a match */
	WEB_NEEDS_BCRYPT, /* k holds what web_check_bcrypt() needs */
};

struct web_check {
	struct web_user *user; /* NULL: an unknown user (the check fails whatever bcrypt says) */
	char *hash, *password; /* copies: a check outlives nothing it does not own */
	size_t len;
	unsigned char mac[32];
};

/* user and password are user_len and len bytes (not NUL-terminated: a NUL byte is theirs). */
enum web_verdict web_check_begin(struct web_config *c, const char *user, size_t user_len, const char *password,
				 size_t len, struct web_check *k);
/* The bcrypt: in any thread, with a work area of its own (it reads k alone). */
bool web_check_bcrypt(const struct web_check *k, struct crypt_data *cd);
/* ok: the match is remembered in k->user (the thread of web_check_begin); k is let go of either way. */
void web_check_end(struct web_check *k, bool ok);

/*
 * The value of an Authorization header as basic credentials: the scheme
 * "Basic" in any case (RFC 7235), spaces, the base 64 of user:password. 0
 * and the decoded bytes (*len of them, user before *colon, the password
 * after it, NULs and all), or -EINVAL. web_basic_free() wipes and frees them.
 */
int web_basic_decode(const char *value, char **decoded, size_t *len, size_t *colon);
void web_basic_free(char *decoded, size_t len);

/*
 * ---- httpauth.c: basic auth for httpd.c without stalling it ----
 * A bcrypt runs in a worker thread of its own, one at a time, never in the
 * server's thread: a request waiting for one is suspended, and the other
 * connections (a scrape whose password is remembered) are answered
 * meanwhile. Per client address (IPv4, or IPv6's /64): at most
 * WEB_AUTH_PENDING checks waiting at once (more: 429); after
 * WEB_AUTH_FAILURES wrong passwords within WEB_AUTH_WINDOW_S seconds, a
 * request that would need a bcrypt gets 429 at once, with Retry-After, for
 * WEB_AUTH_BACKOFF_S seconds (a password remembered from a match still
 * passes). At most WEB_AUTH_QUEUE checks wait in all (more: 503).
 * httpauth_stop() lets every waiting request go (503) at once; a bcrypt
 * under way is left to finish in its detached thread, so stopping never
 * waits for one.
 */
#define WEB_AUTH_FAILURES 5u
#define WEB_AUTH_WINDOW_S 60u
#define WEB_AUTH_BACKOFF_S 60u
#define WEB_AUTH_PENDING 2u
#define WEB_AUTH_QUEUE 64u
#define WEB_AUTH_ADDRESSES 1024u /* addresses remembered; the least recently seen is forgotten first */
#define WEB_BCRYPT_SLOW_MS 500.0 /* a cost whose check takes longer is warned about at load */

struct MHD_Connection;
struct httpauth;

enum httpauth_outcome {
	HTTPAUTH_PASS,
	HTTPAUTH_WAIT,	  /* suspended: return MHD_YES; the handler is called again */
	HTTPAUTH_DENIED,  /* 401 */
	HTTPAUTH_LIMITED, /* 429, Retry-After: *retry_s */
	HTTPAUTH_BUSY,	  /* 503: the queue is full, or the server stops */
};

int httpauth_new(struct httpauth **a, struct web_config *web);
/* From the access handler (its con_cls); the connection must allow suspension. */
enum httpauth_outcome httpauth_request(struct httpauth *a, struct MHD_Connection *c, void **con_cls,
				       unsigned int *retry_s);
/* From MHD_OPTION_NOTIFY_COMPLETED. */
void httpauth_completed(struct httpauth *a, void **con_cls);
/* Before MHD_stop_daemon(): resume every suspended request. */
void httpauth_stop(struct httpauth *a);
/* After MHD_stop_daemon(). NULL is fine. */
void httpauth_free(struct httpauth *a);

/*
 * ---- session.c: the exporter's session (`vcpustat serve`), over any source ----
 * serve_prepare() checks what can be refused before anything is loaded
 * (the user to become, the web configuration, the port: -EINVAL for what
 * was asked wrongly); serve_start() drops to o->user and starts the HTTP
 * server over src (live: serve_live_start(), live/live.h); serve_run()
 * refreshes at least every refresh seconds until *stop (warn: for a sample
 * that fails); serve_stop() ends it all (also after a failure, and when
 * nothing was started).
 */
struct serve_opts {
	const char *listen;   /* ADDR:PORT */
	const char *user;     /* become this user, keeping CAP_BPF (NULL: stay) */
	const char *web_file; /* --web.config.file (NULL: plain HTTP) */
	unsigned int cache_ms;
	double refresh; /* seconds */
};

struct serve {
	struct serve_opts o;
	struct web_config web;
	struct httpd_opts ho;
	struct httpd *httpd;
	int fd;
};

int serve_prepare(struct serve *s, const struct serve_opts *o, struct vcpustat_error *err);
/* Basic auth without TLS: the passwords cross the network in clear (worth a warning). */
bool serve_auth_in_clear(const struct serve *s);
int serve_start(struct serve *s, const struct httpd_source *src, struct vcpustat_error *err);
/* "https://127.0.0.1:9090/metrics (basic auth) as user x": where it serves. */
void serve_describe(const struct serve *s, char *buf, size_t len);
void serve_run(struct serve *s, volatile const sig_atomic_t *stop, void (*warn)(const char *fmt, ...));
void serve_stop(struct serve *s);

/*
 * ---- privdrop.c: after the BPF programs are loaded and attached ----
 * A long-running exporter needs almost nothing: reading maps through file
 * descriptors it already holds. privdrop_to_user() becomes an unprivileged
 * user and keeps only CAP_BPF (kernels before 6.5 refuse every bpf() command,
 * map reads included, without it while kernel.unprivileged_bpf_disabled is
 * set; later ones check only map creation and program loading).
 */

/* Does user (name or numeric uid) exist, and is it not root? 0, or -ENOENT/-EINVAL with err filled. */
int privdrop_check_user(const char *user, struct vcpustat_error *err);

/*
 * Become user (name or numeric uid) with its primary group and no
 * supplementary groups, keeping CAP_BPF (permitted and effective) and no
 * other capability; sets no_new_privs. Call before starting any thread
 * (capabilities are per thread). 0, or a negative errno with err filled.
 */
int privdrop_to_user(const char *user, struct vcpustat_error *err);

#endif /* VCPUSTAT_SERVE_H */
