// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* httpd.c - /metrics and / over libmicrohttpd (serve/serve.h). */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <microhttpd.h>
#include "serve/serve.h"

/*
 * A rendering's text, shared by the cache and by every response that sends
 * it: libmicrohttpd sends it from here rather than from a copy (20 MB at
 * 10,000 vCPUs with per-vCPU labels, copied under the lock at every scrape
 * before), and the last of them frees it (body_put()), the cache when a newer
 * sample replaces it or a response when it is done.
 */
struct body {
	atomic_uint refs;
	size_t len;
	char *text;
};

struct rendering {
	struct body *body;
	unsigned long long sample; /* last_sample it was rendered from (0: none) */
};

struct httpd {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	struct httpd_source src;
	unsigned long long last_sample; /* CLOCK_MONOTONIC ns of the last sample (0: none) */
	struct httpd_opts o;
	struct httpauth *auth; /* basic auth (NULL: none) */
	struct rendering cache[METRICS_CSV + 1];
	unsigned long scrapes, errors;
	char listen_addr[128];
};

/* ---- listening ---- */

int httpd_listen(const char *addr, int *fd, struct vcpustat_error *err)
{
	char host[128], *port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL, *ai;
	int s = -1, e, one = 1, last = 0;

	*fd = -1;
	if (snprintf(host, sizeof(host), "%s", addr) >= (int)sizeof(host))
		return verror(err, -EINVAL, "--listen %s: too long", addr);
	port = strrchr(host, ':');
	if (!port || !port[1])
		return verror(err, -EINVAL, "--listen %s: expected HOST:PORT (e.g. 127.0.0.1:9477)", addr);
	*port++ = '\0';
	if (host[0] == '[') { /* [v6]:port */
		size_t n = strlen(host);

		if (n < 2 || host[n - 1] != ']')
			return verror(err, -EINVAL, "--listen %s: expected [IPV6]:PORT", addr);
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	{
		char *end;
		long p = strtol(port, &end, 10);

		if (*end || p < 0 || p > 65535)
			return verror(err, -EINVAL, "--listen %s: the port must be a number from 1 to 65535 (0: any free one)",
				      addr);
	}
	e = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (e)
		return verror(err, -EINVAL, "--listen %s: %s", addr, gai_strerror(e));
	for (ai = res; ai; ai = ai->ai_next) {
		s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (s < 0) {
			last = -errno;
			continue;
		}
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, ai->ai_addr, ai->ai_addrlen) == 0 && listen(s, 64) == 0)
			break;
		last = -errno;
		close(s);
		s = -1;
	}
	freeaddrinfo(res);
	if (s < 0) {
		if (last == -EADDRINUSE)
			return verror(err, last,
				      "cannot listen on %s: the port is already in use (another exporter? choose "
				      "another with --listen)",
				      addr);
		if (last == -EACCES)
			return verror(err, last, "cannot listen on %s: permission denied (ports below 1024 need root)",
				      addr);
		return verror(err, last ? last : -EINVAL, "cannot listen on %s: %s", addr,
			      strerror(last ? -last : EINVAL));
	}
	*fd = s;
	return 0;
}

/* ---- content negotiation ---- */

/* q of the media range at s (up to its comma), default 1. */
static double range_q(const char *s, const char *end)
{
	const char *q = s;

	while ((q = strchr(q, ';')) && q < end) {
		q++;
		while (*q == ' ')
			q++;
		if (!strncasecmp(q, "q=", 2))
			return strtod(q + 2, NULL);
	}
	return 1.0;
}

enum metrics_format httpd_negotiate(const char *accept)
{
	double q_om = -1, q_text = -1;
	const char *s = accept;

	if (!accept)
		return METRICS_PROMETHEUS;
	while (*s) {
		const char *end = strchr(s, ',');
		size_t n;

		if (!end)
			end = s + strlen(s);
		while (*s == ' ')
			s++;
		n = strcspn(s, ";, ");
		if (n == 28 && !strncasecmp(s, "application/openmetrics-text", 28)) {
			double q = range_q(s, end);

			if (q > q_om)
				q_om = q;
		} else if ((n == 10 && !strncasecmp(s, "text/plain", 10)) || (n == 3 && !strncmp(s, "*/*", 3))) {
			double q = range_q(s, end);

			if (q > q_text)
				q_text = q;
		}
		s = *end ? end + 1 : end;
	}
	return q_om > 0 && q_om >= q_text ? METRICS_OPENMETRICS : METRICS_PROMETHEUS;
}

/* ---- requests ---- */

/* Queue response r (NULL: it could not be made) with the headers of every reply, and let go of it. */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned int status, const char *type, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type, const void *body,
			     size_t len)
{
	return queue(c, status, type, MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY));
}

static void body_put(void *cls)
{
	struct body *b = cls;

	if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
		free(b->text);
		free(b);
	}
}

/* The 200 of a cached rendering, sent from the rendering itself (struct body). */
static enum MHD_Result reply_body(struct MHD_Connection *c, const char *type, struct body *b)
{
	struct MHD_Response *r;

	atomic_fetch_add(&b->refs, 1);
	r = MHD_create_response_from_buffer_with_free_callback_cls(b->len, b->text, body_put, b);
	if (!r)
		body_put(b);
	return queue(c, MHD_HTTP_OK, type, r);
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* Under h->lock: a sample of the source, unless the last one is younger than cache_ms. */
static int sample_if_old(struct httpd *h)
{
	unsigned long long now = vcpustat_now_ns();

	if (h->last_sample && now - h->last_sample < (unsigned long long)h->o.cache_ms * 1000000ull)
		return 0;
	return h->src.sample(h->src.ctx, &h->last_sample);
}

/* Under h->lock: a fresh enough sample, and its rendering in format f. */
static int current(struct httpd *h, enum metrics_format f, struct rendering **out)
{
	struct rendering *r = &h->cache[f];
	int err;

	err = sample_if_old(h);
	if (err) {
		h->errors++;
		return err;
	}
	if (r->sample != h->last_sample || !r->body) {
		struct body *b = calloc(1, sizeof(*b));

		if (!b)
			return -ENOMEM;
		err = metrics_render_sized(h->src.m, f, r->body ? r->body->len : 0, &b->text, &b->len);
		if (err) {
			free(b->text);
			free(b);
			return err;
		}
		atomic_init(&b->refs, 1);
		body_put(r->body); /* responses still sending it keep it */
		r->body = b;
		r->sample = h->last_sample;
	}
	*out = r;
	return 0;
}

static double num(json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* The page at /: links, what is attached, the VMs, lost records. */
static int page(struct httpd *h, char **buf, size_t *len)
{
	json_t *doc, *vms, *vm, *tps, *lost, *v;
	const char *key;
	FILE *f;
	size_t i;
	int err = 0;

	if (!h->last_sample)
		err = h->src.sample(h->src.ctx, &h->last_sample);
	if (err)
		return err;
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	doc = metrics_json(h->src.m);
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>vcpustat exporter</title>"
	      "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
	      "td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right}"
	      "td:first-child,th:first-child{text-align:left}.bad{color:#b00}</style></head><body>\n",
	      f);
	fprintf(f, "<h1>vcpustat exporter</h1>\n<p>vcpustat %s on kernel ", VCPUSTAT_VERSION);
	xml_escape(f, json_string_value(json_object_get(doc, "kernel")));
	fprintf(f, ", listening on ");
	xml_escape(f, h->listen_addr);
	if (h->o.web && h->o.web->cert_pem)
		fputs(" (HTTPS)", f);
	if (h->o.user) {
		fputs(", running as user ", f);
		xml_escape(f, h->o.user);
	}
	fprintf(f, ". Counters since %.0f s ago; %lu scrapes served.</p>\n", num(doc, "window_seconds"), h->scrapes);
	fputs("<p><a href=\"/metrics\">/metrics</a> (Prometheus text; OpenMetrics with "
	      "<code>Accept: application/openmetrics-text</code>) &middot; "
	      "<a href=\"/metrics?format=openmetrics\">OpenMetrics</a> &middot; "
	      "<a href=\"/metrics?format=json\">JSON</a> &middot; <a href=\"/metrics?format=csv\">CSV</a></p>\n",
	      f);
	vms = json_object_get(doc, "vms");
	fprintf(f,
		"<h2>VMs (%zu)</h2>\n<table><tr><th>VM</th><th>vCPUs now</th><th>guest</th><th>host</th>"
		"<th>poll</th><th>preempted</th><th>wait</th><th>idle</th><th>blocked</th></tr>\n",
		json_array_size(vms));
	json_array_foreach(vms, i, vm)
	{
		json_t *sec = json_object_get(vm, "seconds");
		static const char *const states[] = {"guest", "host", "poll", "preempted", "wait", "idle", "blocked"};
		double total = 0;

		json_object_foreach(sec, key, v) total += json_number_value(v);
		fputs("<tr><td>", f);
		xml_escape(f, json_string_value(json_object_get(vm, "vm")));
		fprintf(f, "</td><td>%lld</td>", json_integer_value(json_object_get(vm, "vcpus_now")));
		for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++)
			fprintf(f, "<td>%.1f %%</td>", total > 0 ? 100 * num(sec, states[s]) / total : 0.0);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n<p>Shares of each VM's vCPU time since the start.</p>\n<h2>Tracepoints</h2>\n<ul>\n", f);
	tps = json_object_get(doc, "tracepoints");
	json_object_foreach(tps, key, v)
	{
		fprintf(f, "<li%s>", json_integer_value(v) ? "" : " class=\"bad\"");
		xml_escape(f, key);
		fprintf(f, ": %s</li>\n", json_integer_value(v) ? "attached" : "not attached");
	}
	fputs("</ul>\n<h2>Lost records</h2>\n<ul>\n", f);
	lost = json_object_get(doc, "lost");
	json_object_foreach(lost, key, v)
	{
		fprintf(f, "<li%s>", json_integer_value(v) ? " class=\"bad\"" : "");
		xml_escape(f, key);
		fprintf(f, ": %lld</li>\n", json_integer_value(v));
	}
	fputs("</ul>\n<p>Metric names and meanings: docs/metrics.md.</p>\n</body></html>\n", f);
	json_decref(doc);
	return fclose(f) ? -ENOMEM : 0;
}

/* 401 with WWW-Authenticate: Basic realm="vcpustat" */
static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
	static const char msg[] = "401 Unauthorized: user name and password needed\n";
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_basic_auth_fail_response(c, WEB_REALM, r);
	MHD_destroy_response(r);
	return ret;
}

/* 429 with Retry-After: too many wrong passwords from this address, or checks of its still waiting */
static enum MHD_Result too_many(struct MHD_Connection *c, unsigned int retry_s)
{
	static const char msg[] = "429 Too Many Requests: too many wrong passwords from this address; wait\n";
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
	char retry[16];

	if (!r)
		return MHD_NO;
	snprintf(retry, sizeof(retry), "%u", retry_s ? retry_s : 1);
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	return queue(c, MHD_HTTP_TOO_MANY_REQUESTS, "text/plain; charset=utf-8", r);
}

/* Basic auth (httpauth.c): true to go on, else false and what the handler returns in *ret. */
static bool auth(struct httpd *h, struct MHD_Connection *c, void **con_cls, enum MHD_Result *ret)
{
	unsigned int retry_s;

	*ret = MHD_NO;
	switch (httpauth_request(h->auth, c, con_cls, &retry_s)) {
	case HTTPAUTH_PASS:
		return true;
	case HTTPAUTH_WAIT:
		*ret = MHD_YES;
		break;
	case HTTPAUTH_DENIED:
		*ret = unauthorized(c);
		break;
	case HTTPAUTH_LIMITED:
		*ret = too_many(c, retry_s);
		break;
	case HTTPAUTH_BUSY:
		*ret = reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "503 Service Unavailable: too many password checks waiting, or stopping\n");
		break;
	}
	return false;
}

/*
 * *con_cls of a request whose headers came and that has no check under way.
 * libmicrohttpd 0.9.75 closes the connection after a response queued at the
 * first call, when only the headers are in (a pipelined request behind it
 * was then lost): every response is queued at a later call.
 */
static char request_seen;

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct httpd *h = cls;

	(void)c;
	(void)toe;
	if (*con_cls == &request_seen)
		*con_cls = NULL;
	else if (h->auth)
		httpauth_completed(h->auth, con_cls);
}

const char *httpd_what(const struct httpd *h)
{
	return h->src.what ? h->src.what : "the samples";
}

/* A sample that failed with err: a 500 that names what was read, and why. */
static enum MHD_Result sample_failed(struct MHD_Connection *c, const struct httpd *h, int err)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "cannot read %s: %s\n", httpd_what(h), strerror(-err));
	return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct httpd *h = cls;
	enum MHD_Result ret;

	if (!*con_cls) {
		*con_cls = &request_seen; /* the headers: answered once the whole request is in */
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body: no path takes one */
		return MHD_YES;
	}
	/* every path and method, as exporter-toolkit: nothing about the host without the password */
	if (h->auth) {
		void *job = *con_cls == &request_seen ? NULL : *con_cls;
		bool pass = auth(h, c, &job, &ret);

		if (job)
			*con_cls = job;
		if (!pass)
			return ret;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (!strcmp(url, "/metrics")) {
		const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
		enum metrics_format f;
		struct rendering *r;
		int err;

		if (fmt) {
			if (metrics_format_parse(fmt, &f))
				return reply_text(c, MHD_HTTP_BAD_REQUEST,
						  "format: prometheus, openmetrics, json or csv\n");
		} else {
			f = httpd_negotiate(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
		}
		pthread_mutex_lock(&h->lock);
		err = current(h, f, &r);
		if (err) {
			pthread_mutex_unlock(&h->lock);
			return sample_failed(c, h, err);
		}
		h->scrapes++;
		ret = reply_body(c, metrics_content_type(f), r->body);
		pthread_mutex_unlock(&h->lock);
		return ret;
	}
	if (!strcmp(url, "/")) {
		char *buf = NULL;
		size_t len = 0;
		int err;

		pthread_mutex_lock(&h->lock);
		err = page(h, &buf, &len);
		pthread_mutex_unlock(&h->lock);
		if (err) {
			free(buf);
			return sample_failed(c, h, err);
		}
		ret = reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", buf, len);
		free(buf);
		return ret;
	}
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics or /\n");
}

/*
 * Slow or hostile clients cannot starve the scrapers: a connection that sends
 * nothing for HTTPD_IDLE_TIMEOUT_S seconds is closed (a request comes in at
 * once), one address holds at most HTTPD_PER_IP_LIMIT connections, and the
 * overall limit leaves room for HTTPD_CONNECTION_LIMIT / HTTPD_PER_IP_LIMIT
 * addresses (a scraper is one connection at a time).
 */
#define HTTPD_CONNECTION_LIMIT 512u
#define HTTPD_PER_IP_LIMIT 16u
#define HTTPD_IDLE_TIMEOUT_S 5u
/* TLS 1.2 and 1.3 only: exporter-toolkit's default min_version is TLS 1.2 too */
#define HTTPD_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

int httpd_start(struct httpd **out, int fd, const struct httpd_source *src, const struct httpd_opts *o,
		struct vcpustat_error *err)
{
	struct httpd *h = calloc(1, sizeof(*h));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	bool tls = o && o->web && o->web->cert_pem;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem options[] = {
	    {MHD_OPTION_LISTEN_SOCKET, fd, NULL},
	    {MHD_OPTION_CONNECTION_LIMIT, HTTPD_CONNECTION_LIMIT, NULL},
	    {MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTPD_PER_IP_LIMIT, NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, HTTPD_IDLE_TIMEOUT_S, NULL},
	    /* TLS (or nothing: the list ends here) */
	    {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls ? o->web->cert_pem : NULL},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, tls ? o->web->key_pem : NULL},
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)HTTPD_TLS_PRIORITIES},
	    {MHD_OPTION_END, 0, NULL},
	};

	*out = NULL;
	if (!h) {
		close(fd);
		return verror(err, -ENOMEM, "out of memory");
	}
	if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		close(fd);
		free(h);
		return verror(err, -ENOTSUP, "%s: this libmicrohttpd was built without TLS (GnuTLS)", o->web->path);
	}
	if (tls)
		flags |= MHD_USE_TLS;
	h->src = *src;
	h->last_sample = src->last_sample;
	if (o)
		h->o = *o;
	pthread_mutex_init(&h->lock, NULL);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		char host[64], port[16];

		if (!getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
				 NI_NUMERICHOST | NI_NUMERICSERV))
			snprintf(h->listen_addr, sizeof(h->listen_addr), ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
				 host, port);
	}
	if (o && o->web && o->web->nr_users && httpauth_new(&h->auth, o->web)) {
		close(fd);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return verror(err, -ENOMEM, "cannot start the password checks' thread");
	}
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				     MHD_OPTION_ARRAY, options, MHD_OPTION_END);
	if (!h->daemon) {
		close(fd);
		httpauth_stop(h->auth);
		httpauth_free(h->auth);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return verror(err, -EIO, "cannot start the HTTP%s server (libmicrohttpd)", tls ? "S" : "");
	}
	*out = h;
	return 0;
}

int httpd_refresh(struct httpd *h)
{
	int err;

	pthread_mutex_lock(&h->lock);
	err = sample_if_old(h);
	if (err)
		h->errors++;
	pthread_mutex_unlock(&h->lock);
	return err;
}

const char *httpd_address(const struct httpd *h)
{
	return h->listen_addr;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	httpauth_stop(h->auth);	    /* no request left suspended, none waits for a bcrypt */
	MHD_stop_daemon(h->daemon); /* closes the listening socket too */
	httpauth_free(h->auth);
	for (unsigned int i = 0; i <= METRICS_CSV; i++)
		body_put(h->cache[i].body);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
