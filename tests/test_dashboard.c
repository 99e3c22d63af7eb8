// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The example Grafana dashboard (tools/prometheus/vcpustat-dashboard.json):
 * every panel's PromQL is valid for Prometheus's own checker (promtool), and
 * every metric it names is one the exporter exports (the bundled demo
 * recording's `vcpustat export`), so that a renamed metric or a typo cannot
 * leave a panel silently empty. Offline: no root, no BPF.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <criterion/criterion.h>
#include "helpers.h"

#define DASHBOARD VCPUSTAT_SOURCE_DIR "/tools/prometheus/vcpustat-dashboard.json"
#define DEMO VCPUSTAT_SOURCE_DIR "/tools/demo/demo.sht"
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

Test(dashboard, every_metric_it_names_is_exported)
{
	static char text[1 << 20], docs[1 << 16];
	char exprs[MAX_EXPRS][1024], cmd[1024];
	json_error_t je;
	json_t *d = json_load_file(DASHBOARD, 0, &je);
	size_t n, checked = 0;

	cr_assert_not_null(d, "%s:%d: %s", DASHBOARD, je.line, je.text);
	n = dashboard_exprs(d, exprs);
	json_decref(d);
	/* what the exporter exports, from the bundled demo recording (real exits: all families) */
	text[0] = '\n';
	snprintf(cmd, sizeof(cmd), "'%s/bin/vcpustat' export --file '%s' -f prometheus", build_dir(), DEMO);
	cr_assert_eq(run_shell(cmd, text + 1, (1 << 20) - 1), 0, "%s: %s", cmd, text + 1);
	for (size_t i = 0; i < n; i++)
		for (const char *p = strstr(exprs[i], "vcpustat_"); p; p = strstr(p + 1, "vcpustat_")) {
			char name[128];
			size_t k = 0;

			if (p > exprs[i] && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == ':'))
				continue; /* inside another name */
			while ((isalnum((unsigned char)p[k]) || p[k] == '_') && k < sizeof(name) - 1) {
				name[k] = p[k];
				k++;
			}
			name[k] = '\0';
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
			cr_assert(exported(text, name), "the dashboard queries %s, which the exporter does not export", name);
			checked++;
		}
	cr_assert_geq(checked, n, "each query names a metric");
	cr_log_info("%zu metric names in %zu queries, all exported", checked, n);
}
