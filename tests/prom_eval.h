/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers for the tests that query a real Prometheus server (started by the
 * test on loopback): HTTP GET from 127.0.0.1, PromQL instant queries through
 * its HTTP API, and the evaluation of every query of the shipped dashboard
 * and rules (tools/prometheus/) against what it scraped.
 */
#ifndef VCPUSTAT_TEST_PROM_EVAL_H
#define VCPUSTAT_TEST_PROM_EVAL_H

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct http_reply {
	int status;
	char *headers, *body; /* one allocation: headers points into it */
};

/* GET path from 127.0.0.1:port; status 0 if nobody answers. */
static inline struct http_reply http_get(int port, const char *path, const char *accept)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 10 };
	struct http_reply r = { 0 };
	char req[4096], *buf = NULL, *sep;
	size_t len = 0, cap = 0;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return r;
	}
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s%s%sConnection: close\r\n\r\n",
		     path, accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(req)) { /* too long a path: no reply, rather than a cut request */
		close(s);
		return r;
	}
	if (write(s, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(s);
		return r;
	}
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap);
		}
		n = read(s, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(s);
	if (!buf)
		return r;
	buf[len] = '\0';
	sep = strstr(buf, "\r\n\r\n");
	if (!sep || sscanf(buf, "HTTP/1.%*d %d", &r.status) != 1) {
		free(buf);
		return r;
	}
	*sep = '\0';
	r.headers = buf;
	r.body = sep + 4;
	return r;
}

static inline void http_free(struct http_reply *r)
{
	free(r->headers);
	memset(r, 0, sizeof(*r));
}

static inline void url_encode(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; *s && n + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.~", c))
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, len - n, "%%%02X", c);
	}
	out[n] = '\0';
}

/* A PromQL instant query through Prometheus's HTTP API: the first sample's value, or -1 if no result. */
static inline double promql(int port, const char *query)
{
	char path[2048], enc[1800];
	struct http_reply r;
	json_t *doc, *res;
	double v = -1;

	url_encode(query, enc, sizeof(enc));
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
	r = http_get(port, path, NULL);
	if (r.status != 200) {
		http_free(&r);
		return -1;
	}
	doc = json_loads(r.body, 0, NULL);
	res = json_object_get(json_object_get(doc, "data"), "result");
	if (json_array_size(res))
		v = strtod(json_string_value(json_array_get(json_object_get(json_array_get(res, 0), "value"), 1)), NULL);
	json_decref(doc);
	http_free(&r);
	return v;
}

/* The shipped dashboard and rules. */
#define PROM_EVAL_DASHBOARD VCPUSTAT_SOURCE_DIR "/tools/prometheus/vcpustat-dashboard.json"
#define PROM_EVAL_RULES VCPUSTAT_SOURCE_DIR "/tools/prometheus/vcpustat.rules.yml"

/*
 * A PromQL instant query through Prometheus's HTTP API: how many series its
 * result has (*first: the first one's value), or -1 if Prometheus refused it
 * (err: its error message).
 */
static inline int promql_count(int port, const char *query, double *first, char *err, size_t errlen)
{
	char path[4096], enc[3600];
	struct http_reply r;
	json_t *doc, *res;
	int n = -1;

	url_encode(query, enc, sizeof(enc));
	cr_assert_lt(strlen(enc), sizeof(enc) - 4, "query too long to encode: %s", query);
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
	r = http_get(port, path, NULL);
	doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
	res = json_object_get(json_object_get(doc, "data"), "result");
	if (r.status == 200 && json_is_array(res)) {
		n = (int)json_array_size(res);
		if (n && first)
			*first = strtod(json_string_value(json_array_get(
						json_object_get(json_array_get(res, 0), "value"), 1)),
					NULL);
	} else {
		snprintf(err, errlen, "HTTP %d: %s", r.status,
			 json_string_value(json_object_get(doc, "error")) ?: (r.body ?: "no answer"));
	}
	json_decref(doc);
	http_free(&r);
	return n;
}

/*
 * promql_count() of a query that must have a result, asked again (up to 5
 * times, 1.2 s apart) while it is empty: an instant query of a gauge is
 * empty from a failed scrape (Prometheus marks the target's series stale:
 * one scrape timing out on a loaded machine) until the next good one. A
 * metric that is really missing stays empty. Says when it had to ask again.
 */
static inline int promql_count_settled(int port, const char *query, double *first, char *err, size_t errlen)
{
	int n = promql_count(port, query, first, err, errlen);

	for (int again = 1; n == 0 && again <= 5; again++) {
		double up = -1;

		promql_count(port, "min(up)", &up, err, errlen);
		usleep(1200000);
		n = promql_count(port, query, first, err, errlen);
		cr_log_info("%s: empty (up was %g: a scrape failed?), asked again %d time(s): %d series", query, up,
			    again, n);
	}
	return n;
}

/* s with every from replaced by to, into out. */
static inline void replace_all(const char *s, const char *from, const char *to, char *out, size_t len)
{
	size_t n = 0, fl = strlen(from);

	while (*s && n + 1 < len) {
		if (!strncmp(s, from, fl)) {
			n += (size_t)snprintf(out + n, len - n, "%s", to);
			s += fl;
		} else {
			out[n++] = *s++;
		}
	}
	out[n < len ? n : len - 1] = '\0';
}

/*
 * Evaluate one query of the dashboard or the rules (what: whose) and require
 * a result. A health check of the form `... == 0` must be empty on a
 * healthy exporter, and its left-hand side not. Queries of the in-kernel
 * exits' histogram need kvm_exit events: where no_exits says why there are
 * none, they are only required to be valid; so are those of the live-only
 * vcpustat_tracepoint_attached where no_live says why it is not exported.
 * Returns 1 if the query was required to have a result and had one.
 */
static inline int require_result(int port, const char *what, const char *q, const char *no_exits,
				 const char *no_live, int detached)
{
	char err[512], lhs[2048];
	const char *eq = strstr(q, " == 0");
	double v = 0;
	int n = eq ? promql_count(port, q, &v, err, sizeof(err)) : promql_count_settled(port, q, &v, err, sizeof(err));

	cr_assert_geq(n, 0, "%s: Prometheus refused %s: %s", what, q, err);
	if (strstr(q, "vcpustat_tracepoint_attached") && no_live) {
		cr_log_info("%s: %s: %d series, not required (%s)", what, q, n, no_live);
		return 0;
	}
	if (eq && detached && strstr(q, "vcpustat_tracepoint_attached")) {
		/* the tracepoints this kernel refused, and only they */
		cr_assert(n == 1 && v == detached,
			  "%s: the health check %s finds %d series (%g) where the exporter lists %d tracepoint(s) "
			  "this kernel refused",
			  what, q, n, v, detached);
		cr_log_info("%s: %s: %d, the tracepoints this kernel refused", what, q, detached);
		return 1;
	}
	if (eq) {
		cr_assert_eq(n, 0, "%s: the health check %s finds a problem on a healthy exporter", what, q);
		replace_all(q, " == 0", "", lhs, sizeof(lhs));
		n = promql_count_settled(port, lhs, &v, err, sizeof(err));
		cr_assert_gt(n, 0, "%s: no series for %s (%s)", what, lhs, n < 0 ? err : "empty result");
		cr_log_info("%s: %s: empty, as it should be (%d series without == 0)", what, q, n);
		return 1;
	}
	if (strstr(q, "vcpustat_exit_duration_seconds") && no_exits) {
		cr_log_info("%s: %s: %d series, not required (%s)", what, q, n, no_exits);
		return 0;
	}
	cr_assert_gt(n, 0, "%s: an empty result for %s", what, q);
	cr_log_info("%s: %s: %d series, first %g", what, q, n, v);
	return 1;
}

/*
 * Every query of the shipped dashboard and rules on a Prometheus at port that
 * scrapes vcpustat (job "vcpustat") with tools/prometheus/vcpustat.rules.yml
 * loaded: every rule evaluated without an error; every recording rule's
 * expression and the series it recorded for VM vm non-empty; every panel's
 * and every variable's query non-empty, with $vm = vm, $instance = .* and
 * $__rate_interval = rate_interval. no_exits: why the in-kernel exits'
 * queries may be empty, or NULL; no_live: why the live-only metrics may be
 * missing (a recording), or NULL; detached: how many tracepoints the
 * exporter lists as not attached because this kernel refused their
 * programs (the health check finds those). Returns how many queries had a result;
 * *recorded, *alerts: the recording rules whose series were found, the
 * alerting rules evaluated.
 */
static inline int prom_eval_dashboard_and_rules(int port, const char *vm, const char *rate_interval,
						const char *no_exits, const char *no_live, int detached, int *recorded,
						int *alerts)
{
	char q[2048], err[512];
	json_t *dash, *p, *t, *rules, *g, *r;
	json_error_t je;
	struct http_reply reply;
	size_t i, j;
	int required = 0;
	double v;

	*recorded = *alerts = 0;
	/* every rule loaded and evaluated without an error */
	reply = http_get(port, "/api/v1/rules", NULL);
	cr_assert_eq(reply.status, 200, "/api/v1/rules: HTTP %d", reply.status);
	rules = json_loads(reply.body, 0, NULL);
	http_free(&reply);
	cr_assert_not_null(rules);
	json_array_foreach(json_object_get(json_object_get(rules, "data"), "groups"), i, g)
		json_array_foreach(json_object_get(g, "rules"), j, r) {
			const char *name = json_string_value(json_object_get(r, "name"));
			const char *query = json_string_value(json_object_get(r, "query"));

			cr_assert_str_eq(json_string_value(json_object_get(r, "health")), "ok", "rule %s: %s", name,
					 json_string_value(json_object_get(r, "lastError")) ?: "not evaluated yet");
			if (!strcmp(json_string_value(json_object_get(r, "type")), "alerting")) {
				cr_log_info("alert %s: %s", name, json_string_value(json_object_get(r, "state")));
				(*alerts)++;
				continue;
			}
			/* the expression itself, and what Prometheus recorded from it */
			required += require_result(port, "recording rule", query, no_exits, no_live, detached);
			if (strstr(query, "vcpustat_exit_duration_seconds") && no_exits)
				continue;
			snprintf(q, sizeof(q), "%s{vm=~\"%s|\"}", name, vm);
			cr_assert_gt(promql_count_settled(port, q, &v, err, sizeof(err)), 0, "nothing recorded as %s", q);
			(*recorded)++;
		}
	json_decref(rules);
	cr_assert_geq(*recorded + *alerts, 10, "the rules file is loaded: %d recording rules, %d alerts", *recorded,
		      *alerts);

	/* every panel's query and every variable's, with Grafana's variables as it would set them */
	dash = json_load_file(PROM_EVAL_DASHBOARD, 0, &je);
	cr_assert_not_null(dash, "%s:%d: %s", PROM_EVAL_DASHBOARD, je.line, je.text);
	json_array_foreach(json_object_get(dash, "panels"), i, p)
		json_array_foreach(json_object_get(p, "targets"), j, t) {
			char a[2048], b[2048];

			replace_all(json_string_value(json_object_get(t, "expr")), "$__rate_interval", rate_interval, a,
				    sizeof(a));
			replace_all(a, "$instance", ".*", b, sizeof(b));
			replace_all(b, "$vm", vm, q, sizeof(q));
			cr_assert_null(strchr(q, '$'), "a variable left in %s", q);
			required += require_result(port, json_string_value(json_object_get(p, "title")), q, no_exits, no_live,
						   detached);
		}
	json_array_foreach(json_object_get(json_object_get(dash, "templating"), "list"), i, t) {
		const char *lv = json_string_value(json_object_get(json_object_get(t, "query"), "query"));
		char a[1024];

		if (!lv)
			continue; /* the data source */
		cr_assert_eq(strncmp(lv, "label_values(", 13), 0, "variable %s: %s",
			     json_string_value(json_object_get(t, "name")), lv);
		snprintf(a, sizeof(a), "%s", lv + 13);
		cr_assert_not_null(strrchr(a, ','), "%s", lv);
		*strrchr(a, ',') = '\0'; /* label_values(METRIC, LABEL): the metric's series */
		replace_all(a, "$instance", ".*", q, sizeof(q));
		required += require_result(port, "dashboard variable", q, no_exits, no_live, detached);
	}
	json_decref(dash);
	return required;
}

#endif /* VCPUSTAT_TEST_PROM_EVAL_H */
