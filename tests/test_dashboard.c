// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The example Grafana dashboard (tools/prometheus/vcpustat-dashboard.json)
 * and rules (tools/prometheus/vcpustat.rules.yml): every panel's PromQL is
 * valid for Prometheus's own checker (promtool), the rules pass `promtool
 * check rules` and their unit tests (`promtool test rules`
 * vcpustat.rules.test.yml, which test every rule and fail when a rule
 * changes), and every metric the panels, the rules and the tests' input
 * series name is one the exporter exports (the bundled demo recording's
 * `vcpustat export`), so that a renamed metric or a typo cannot leave a
 * panel or a rule silently empty; a real Prometheus server scraping the
 * demo recording's exposition as it grows evaluates them all to non-empty
 * results. Offline: no root, no BPF.
 */
#include <ctype.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "prom_eval.h"
#include "export/export.h"
#include "sht/sht.h"

#define DASHBOARD VCPUSTAT_SOURCE_DIR "/tools/prometheus/vcpustat-dashboard.json"
#define DEMO VCPUSTAT_SOURCE_DIR "/tools/demo/demo.sht"
#define RULES VCPUSTAT_SOURCE_DIR "/tools/prometheus/vcpustat.rules.yml"
#define RULES_TEST VCPUSTAT_SOURCE_DIR "/tools/prometheus/vcpustat.rules.test.yml"
#define MAX_EXPRS 64

/* Every target's expr, with Grafana's variables as a query would get them. */
static size_t dashboard_exprs(json_t *d, char exprs[][1024])
{
	json_t *panel, *target;
	size_t i, j, n = 0;

	json_array_foreach(json_object_get(d, "panels"), i, panel) {
		cr_assert(json_is_integer(json_object_get(panel, "id")), "panel %zu has an id", i);
		cr_assert(json_is_string(json_object_get(panel, "title")), "panel %zu has a title", i);
		cr_assert(json_array_size(json_object_get(panel, "targets")) > 0, "panel %zu queries something", i);
		json_array_foreach(json_object_get(panel, "targets"), j, target) {
			const char *e = json_string_value(json_object_get(target, "expr"));
			char *o = exprs[n];
			size_t k = 0;

			cr_assert_not_null(e, "panel %zu target %zu: an expr", i, j);
			cr_assert_lt(n, MAX_EXPRS);
			while (*e && k < 1000) {
				if (!strncmp(e, "$__rate_interval", 16)) {
					k += (size_t)snprintf(o + k, 1024 - k, "1m");
					e += 16;
				} else if (!strncmp(e, "$instance", 9) || !strncmp(e, "$vm", 3)) {
					k += (size_t)snprintf(o + k, 1024 - k, ".*");
					e += e[1] == 'i' ? 9 : 3;
				} else {
					cr_assert_neq(*e, '$', "an unknown variable in: %s", json_string_value(json_object_get(target, "expr")));
					o[k++] = *e++;
				}
			}
			o[k] = '\0';
			n++;
		}
	}
	return n;
}

Test(dashboard, every_panel_is_valid_promql_for_promtool)
{
	char exprs[MAX_EXPRS][1024], path[] = "/tmp/vcpustat-dashboard-rules-XXXXXX", cmd[512], out[8192];
	json_error_t je;
	json_t *d = json_load_file(DASHBOARD, 0, &je);
	size_t n;
	FILE *f;
	int fd;

	cr_assert_not_null(d, "%s:%d: %s", DASHBOARD, je.line, je.text);
	n = dashboard_exprs(d, exprs);
	cr_assert_geq(n, 10, "the dashboard's panels query the exporter");
	json_decref(d);
	if (system("command -v promtool > /dev/null 2>&1"))
		cr_skip_test("promtool is not installed (Debian package prometheus: tools/deps.sh)");
	/* the expressions as recording rules: promtool parses and checks each */
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	fprintf(f, "groups:\n  - name: dashboard\n    rules:\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "      - record: dashboard:expr%zu\n        expr: |\n          %s\n", i, exprs[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "promtool check rules '%s'", path);
	cr_assert_eq(run_shell(cmd, out, sizeof(out)), 0, "promtool refused a panel's query:\n%s", out);
	cr_log_info("promtool: %zu panel queries are valid PromQL", n);
	unlink(path);
}

/* Is name (a metric, or a histogram's _bucket/_count/_sum) one of the families in the exposition text? */
static bool exported(const char *text, const char *name)
{
	static const char *const suffixes[] = { "", "_bucket", "_count", "_sum" };
	char want[160];

	for (size_t s = 0; s < 4; s++) {
		size_t len = strlen(name), sl = strlen(suffixes[s]);

		if (len <= sl || strcmp(name + len - sl, suffixes[s]))
			continue;
		snprintf(want, sizeof(want), "\n# TYPE %.*s ", (int)(len - sl), name);
		if (strstr(text, want))
			return true;
	}
	return false;
}

/* What the exporter exports, from the bundled demo recording (real exits: all families). */
static void demo_exposition(char *text, size_t len)
{
	char cmd[1024];

	text[0] = '\n';
	snprintf(cmd, sizeof(cmd), "'%s/bin/vcpustat' export --file '%s' -f prometheus", build_dir(), DEMO);
	cr_assert_eq(run_shell(cmd, text + 1, len - 1), 0, "%s: %s", cmd, text + 1);
}

/*
 * Every vcpustat_ metric src names (not recording rules: level:vcpustat_...:op)
 * is exported; where says whose. Lines that are YAML comments are skipped.
 * Returns how many names were checked.
 */
static size_t check_names(const char *text, const char *src, const char *where)
{
	static char docs[1 << 16];
	size_t checked = 0;

	for (const char *p = strstr(src, "vcpustat_"); p; p = strstr(p + 1, "vcpustat_")) {
		const char *bol = p;
		char name[128];
		size_t k = 0;

		while (bol > src && bol[-1] != '\n')
			bol--;
		while (*bol == ' ')
			bol++;
		if (*bol == '#')
			continue; /* a comment */
		if (p > src && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == ':'))
			continue; /* inside another name */
		while ((isalnum((unsigned char)p[k]) || p[k] == '_') && k < sizeof(name) - 1) {
			name[k] = p[k];
			k++;
		}
		name[k] = '\0';
		if (p[k] == ':')
			continue; /* a recording rule's name: vm:vcpustat_steal:ratio_rate5m */
		if (!strcmp(name, "vcpustat_tracepoint_attached")) {
			/* exported live only (a recording has no tracepoints): docs/metrics.md says so */
			char line[256];
			FILE *f = fopen(VCPUSTAT_SOURCE_DIR "/docs/metrics.md", "r");
			size_t len = f ? fread(docs, 1, sizeof(docs) - 1, f) : 0;

			if (f)
				fclose(f);
			docs[len] = '\0';
			snprintf(line, sizeof(line), "| `%s` |", name);
			cr_assert(strstr(docs, line) && strstr(strstr(docs, line), "(live only)"),
				  "%s: docs/metrics.md says it is exported live only", name);
			checked++;
			continue;
		}
		cr_assert(exported(text, name), "%s queries %s, which the exporter does not export", where, name);
		checked++;
	}
	return checked;
}

Test(dashboard, every_metric_it_names_is_exported)
{
	static char text[1 << 20];
	char exprs[MAX_EXPRS][1024];
	json_error_t je;
	json_t *d = json_load_file(DASHBOARD, 0, &je);
	size_t n, checked = 0, steal = 0;

	cr_assert_not_null(d, "%s:%d: %s", DASHBOARD, je.line, je.text);
	n = dashboard_exprs(d, exprs);
	json_decref(d);
	demo_exposition(text, sizeof(text));
	for (size_t i = 0; i < n; i++) {
		size_t c = check_names(text, exprs[i], "the dashboard");

		cr_assert_geq(c, 1, "the query names a metric: %s", exprs[i]);
		checked += c;
		steal += strstr(exprs[i], "rate(vcpustat_vcpu_delay_seconds_total{") != NULL;
	}
	cr_assert_geq(steal, 1, "a panel shows the steal the guests see, from the delay metric");
	cr_log_info("%zu metric names in %zu queries, all exported", checked, n);
}

/* The rules and their tests' input series name only exported metrics. */
Test(dashboard, every_metric_the_rules_name_is_exported)
{
	static char text[1 << 20];
	char *rules = slurp_file(RULES), *tests = slurp_file(RULES_TEST);
	size_t in_rules, in_tests;

	cr_assert_not_null(rules, "%s", RULES);
	cr_assert_not_null(tests, "%s", RULES_TEST);
	demo_exposition(text, sizeof(text));
	in_rules = check_names(text, rules, RULES);
	in_tests = check_names(text, tests, RULES_TEST);
	cr_assert_geq(in_rules, 10, "the rules query the exporter's metrics");
	cr_assert_geq(in_tests, 10, "the tests' input series are the exporter's metrics");
	cr_log_info("%zu metric names in the rules, %zu in their tests' input, all exported", in_rules, in_tests);
	free(rules);
	free(tests);
}

/* How many lines of text start (after spaces) with prefix; names[i]: what follows it on line i. */
static size_t rule_names(const char *text, const char *prefix, char names[][128], size_t max)
{
	size_t n = 0, plen = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *p = l;
		size_t k = 0;

		while (*p == ' ')
			p++;
		if (strncmp(p, prefix, plen))
			continue;
		cr_assert_lt(n, max);
		for (p += plen; *p && *p != '\n' && k < 127; p++)
			names[n][k++] = *p;
		names[n][k] = '\0';
		n++;
	}
	return n;
}

/*
 * The shipped rules pass `promtool check rules` (all of them: promtool counts
 * as many as the file has) and their unit tests, run from elsewhere than
 * their folder (the test file names the rules relative to itself, as they
 * are installed side by side); every recording rule and every alert is
 * tested; and the tests catch a change: the rules with VcpustatHighSteal's
 * threshold moved fail them.
 */
Test(dashboard, rules_pass_promtool_check_and_their_unit_tests)
{
	char records[64][128], alerts[64][128], tested[128][128], cmd[1024], out[16384], want[64];
	char *rules = slurp_file(RULES), *tests = slurp_file(RULES_TEST), *bad;
	const char *dir;
	size_t nr, na, nt;
	FILE *f;

	cr_assert_not_null(rules, "%s", RULES);
	cr_assert_not_null(tests, "%s", RULES_TEST);
	nr = rule_names(rules, "- record: ", records, 64);
	na = rule_names(rules, "- alert: ", alerts, 64);
	cr_assert_geq(nr, 8, "recording rules: steal, p99 of exits per reason, ...");
	cr_assert_geq(na, 4, "alerting examples");
	/* every rule is tested */
	nt = rule_names(tests, "- expr: ", tested, 128);
	for (size_t i = 0; i < nr; i++) {
		bool found = false;

		for (size_t j = 0; j < nt; j++)
			found |= !strcmp(tested[j], records[i]);
		cr_assert(found, "%s: no promql_expr_test of the recording rule %s", RULES_TEST, records[i]);
	}
	nt = rule_names(tests, "- alertname: ", tested, 128);
	for (size_t i = 0; i < na; i++) {
		bool found = false;

		for (size_t j = 0; j < nt; j++)
			found |= !strcmp(tested[j], alerts[i]);
		cr_assert(found, "%s: no alert_rule_test of the alert %s", RULES_TEST, alerts[i]);
	}
	for (size_t i = 0; i < nr; i++)
		cr_assert(strstr(records[i], "vcpustat_"), "%s: a recording rule of vcpustat's metrics", records[i]);
	cr_assert(strstr(rules, "rate(vcpustat_vcpu_delay_seconds_total[5m])"), "steal from the delay metric");
	cr_assert(strstr(rules, "histogram_quantile(0.99, sum by (instance, reason, le) "
				"(rate(vcpustat_exit_duration_seconds_bucket[5m])))"),
		  "p99 of the exits per reason");

	if (system("command -v promtool > /dev/null 2>&1"))
		cr_skip_test("promtool is not installed (Debian package prometheus: tools/deps.sh)");
	snprintf(cmd, sizeof(cmd), "promtool check rules '%s'", RULES);
	cr_assert_eq(run_shell(cmd, out, sizeof(out)), 0, "%s:\n%s", cmd, out);
	snprintf(want, sizeof(want), "SUCCESS: %zu rules found", nr + na);
	cr_assert(strstr(out, want), "promtool finds all %zu rules of the file: %s", nr + na, out);
	snprintf(cmd, sizeof(cmd), "cd / && promtool test rules '%s'", RULES_TEST);
	cr_assert_eq(run_shell(cmd, out, sizeof(out)), 0, "%s:\n%s", cmd, out);
	cr_assert(strstr(out, "SUCCESS"), "%s", out);
	cr_log_info("promtool: %zu recording rules and %zu alerts pass their unit tests", nr, na);

	/* the same tests against rules whose steal alert fires at 30 % instead of 10 % */
	dir = scratch_dir("rules");
	bad = strstr(rules, "expr: vm:vcpustat_steal:ratio_rate5m > 0.1\n");
	cr_assert_not_null(bad, "VcpustatHighSteal's expression");
	bad[strlen("expr: vm:vcpustat_steal:ratio_rate5m > 0.")] = '3';
	f = fopen(scratch_file("rules", "vcpustat.rules.yml"), "w");
	cr_assert_not_null(f);
	fputs(rules, f);
	fclose(f);
	f = fopen(scratch_file("rules", "vcpustat.rules.test.yml"), "w");
	cr_assert_not_null(f);
	fputs(tests, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd '%s' && promtool test rules vcpustat.rules.test.yml", dir);
	cr_assert_neq(run_shell(cmd, out, sizeof(out)), 0, "the unit tests catch a changed threshold:\n%s", out);
	cr_assert(strstr(out, "alertname: VcpustatHighSteal"), "the failure names the alert:\n%s", out);
	cr_assert(!strstr(out, "alertname: VcpustatVmStarved"), "and only it:\n%s", out);
	scratch_remove();
	free(rules);
	free(tests);
}

/* ---- a real Prometheus scraping the demo recording, one second of it more at each scrape ---- */

#define DEMO_SECONDS 12

struct demo_server {
	int fd;
	atomic_int stop, served;
	char *text[DEMO_SECONDS]; /* the exposition of the recording's first i + 1 seconds */
};

/* Answer each GET with the next exposition (the last one again once all were served); one thread. */
static void *demo_serve(void *arg)
{
	struct demo_server *ds = arg;

	while (!ds->stop) {
		struct pollfd pfd = { .fd = ds->fd, .events = POLLIN };
		char req[4096], head[256];
		const char *body;
		size_t got = 0;
		int c, i;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		c = accept(ds->fd, NULL, NULL);
		if (c < 0)
			continue;
		while (got < sizeof(req) - 1) {
			ssize_t n = read(c, req + got, sizeof(req) - 1 - got);

			if (n <= 0)
				break;
			got += (size_t)n;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		/* the next exposition once this one got through whole (a scrape may time out while we start) */
		i = ds->served;
		body = ds->text[i < DEMO_SECONDS ? i : DEMO_SECONDS - 1];
		snprintf(head, sizeof(head),
			 "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %zu\r\n\r\n",
			 strlen(body));
		if (send(c, head, strlen(head), MSG_NOSIGNAL) == (ssize_t)strlen(head) &&
		    send(c, body, strlen(body), MSG_NOSIGNAL) == (ssize_t)strlen(body))
			ds->served++;
		close(c);
	}
	return NULL;
}

/* .fini: a Prometheus left running by a failed assertion */
static void stop_prometheus(void)
{
	proc_stop_all();
	scratch_remove();
}

/*
 * The dashboard and the rules evaluated by Prometheus itself, on the
 * counters of the bundled demo recording (2 VMs with real exits) as
 * `vcpustat export --file` gives them for its first 1, 2, ... 12 seconds,
 * served one more second at each scrape (every 500 ms: the rates are twice
 * the recording's, which changes no result's presence): every rule
 * evaluates without an error, and every recording rule's expression, the
 * series it records, every panel's query and every variable's have a
 * result (tests/test_export_live.c does the same on `vcpustat serve` and a
 * live VM).
 */
Test(dashboard, prometheus_evaluates_every_query_on_the_demo_exposition, .timeout = 90, .fini = stop_prometheus)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct demo_server ds = { 0 };
	char cfg[1024], flag_cfg[160], flag_data[160], flag_web[64];
	struct vcpustat_error err = { 0 };
	int prom_port, required, recorded, alerts;
	struct sht_reader *r;
	pthread_t th;
	pid_t prom;
	FILE *f;

	if (system("command -v prometheus > /dev/null 2>&1"))
		cr_skip_test("prometheus is not installed (tools/deps.sh installs it)");
	ds.fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(bind(ds.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(ds.fd, 16), 0);
	cr_assert_eq(getsockname(ds.fd, (struct sockaddr *)&a, &alen), 0);

	prom_port = free_loopback_port();
	snprintf(cfg, sizeof(cfg),
		 "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\n  evaluation_interval: 500ms\n"
		 "rule_files:\n  - '%s'\n"
		 "scrape_configs:\n  - job_name: vcpustat\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
		 PROM_EVAL_RULES, ntohs(a.sin_port));
	f = fopen(scratch_file("dashboard-prom", "prometheus.yml"), "w");
	cr_assert_not_null(f);
	fputs(cfg, f);
	fclose(f);
	snprintf(flag_cfg, sizeof(flag_cfg), "--config.file=%s", scratch_file("dashboard-prom", "prometheus.yml"));
	snprintf(flag_data, sizeof(flag_data), "--storage.tsdb.path=%s", scratch_file("dashboard-prom", "data"));
	snprintf(flag_web, sizeof(flag_web), "--web.listen-address=127.0.0.1:%d", prom_port);
	{
		char *argv[] = { "prometheus", flag_cfg, flag_data, flag_web, NULL };

		prom = proc_spawn(argv, scratch_file("dashboard-prom", "prometheus.log"),
				  scratch_file("dashboard-prom", "prometheus.log"));
	}
	/* while Prometheus starts (its first scrapes fail: up 0), what `vcpustat export --file demo.sht --to Ns` prints, N = 1 .. 12 */
	cr_assert_eq(sht_open(&r, DEMO, &err), 0, "%s", err.msg);
	for (int i = 0; i < DEMO_SECONDS; i++) {
		struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS };
		struct summary_filter all = { 0 };
		struct metrics *m;
		size_t nr_vms, len;

		cr_assert_eq(metrics_of_recording(&m, r, DEMO, sht_get_info(r)->start,
						  sht_get_info(r)->start + (uint64_t)(i + 1) * 1000000000ull, &mo, &all,
						  &nr_vms, &err),
			     0, "%s", err.msg);
		cr_assert_eq(nr_vms, 2, "the demo's 2 VMs");
		cr_assert_eq(metrics_render(m, METRICS_PROMETHEUS, &ds.text[i], &len), 0);
		metrics_free(m);
	}
	sht_close(r);
	pthread_create(&th, NULL, demo_serve, &ds);
	/* all 12 seconds scraped, and the rules evaluated over them */
	for (int w = 0; w < 80 && promql(prom_port, "sum_over_time(up{job=\"vcpustat\"}[10s])") < DEMO_SECONDS + 1;
	     w++)
		usleep(500000);
	cr_assert_eq(promql(prom_port, "up{job=\"vcpustat\"}"), 1, "Prometheus scrapes the demo exposition: %s",
		     slurp_file(scratch_file("dashboard-prom", "prometheus.log")));
	cr_assert_geq(ds.served, DEMO_SECONDS, "every second of the recording was scraped");
	sleep(1);
	/* rates over 10 s: all the scrapes of the recording's seconds */
	required = prom_eval_dashboard_and_rules(prom_port, "demo-0", "10s", NULL,
						 "vcpustat_tracepoint_attached is exported live only", 0, &recorded,
						 &alerts);
	cr_assert_gt(promql(prom_port, "vm:vcpustat_steal:ratio_rate5m{vm=\"demo-0\"}"), 0,
		     "the demo VM's steal is recorded");
	cr_log_info("%d queries of the dashboard and rules had results, %d recorded series, %d alerts evaluated",
		    required, recorded, alerts);
	cr_assert_eq(proc_stop(prom), 0, "prometheus stops cleanly");
	ds.stop = 1;
	pthread_join(th, NULL);
	close(ds.fd);
	for (int i = 0; i < DEMO_SECONDS; i++)
		free(ds.text[i]);
	scratch_remove();
}
