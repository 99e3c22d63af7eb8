// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporters end to end: the real `vcpustat export`, `serve` and `plot`
 * binaries on real vCPU threads (tools/microvm) fighting a CPU hog, checked
 * with promtool, a real Prometheus server scraping `serve`, xmllint (and,
 * where it is installed, a Chromium screenshot of the SVG), and the
 * privileges of the running exporter in /proc.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "export_helpers.h"
#include "prom_eval.h"
#include "vcpu_fsm.h"
#include "helpers.h"

static const char *vcpustat_bin(void)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/bin/vcpustat", build_dir());
	return path;
}

static atomic_int hog_stop;

/* .fini of every test: stop what is still running, remove the scratch directory. */
static void cleanup(void);

static int run(char *const argv[], const char *out, const char *err)
{
	return proc_wait(proc_spawn(argv, out, err));
}

/* slurp_file(), but NULL for a file that does not exist (yet) */
static char *slurp(const char *path)
{
	return access(path, F_OK) ? NULL : slurp_file(path);
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* Paths in this test's scratch folder (helpers.h) */
static const char *tmp(const char *name)
{
	return scratch_file("export", name);
}

static void cleanup(void)
{
	hog_stop = 1;
	proc_stop_all();
	scratch_remove();
}

/* ---- a contended VM: microvm pinned to CPU 0 and a busy thread there ---- */

static pthread_t hog_thread;

static void *hog(void *arg)
{
	pin_to_cpu(0);
	while (!hog_stop)
		;
	return NULL;
}

struct vm {
	pid_t pid;
	char name[48];
};

static void vm_start(struct vm *vm, const char *tag, double seconds, bool with_hog)
{
	char microvm[512], dur[32];
	const char *ready = tmp("ready.json");
	json_t *r = NULL;

	snprintf(vm->name, sizeof(vm->name), "xp-%s-%d", tag, (int)getpid());
	snprintf(microvm, sizeof(microvm), "%s/bin/microvm", build_dir());
	snprintf(dur, sizeof(dur), "%.1f", seconds);
	unlink(ready);
	{
		/*
		 * A fixed loop count between two I/O exits (~1 ms in the lab): the
		 * calibration, run beside a busy thread on one CPU under emulation,
		 * once gave chunks of seconds, and a recording without I/O exits.
		 */
		char *argv[] = { microvm, "--vms", "1", "--vcpus", "2", "--pin", "0", "--busy-us", "2000", "--idle-us",
				 "1000", "--chunk-iters", "100000", "--duration", dur, "-name", vm->name, "--ready",
				 (char *)ready, "--json", "/dev/null", NULL };

		vm->pid = proc_spawn(argv, NULL, NULL);
	}
	for (int i = 0; i < 3000 && !r; i++) {
		r = json_load_file(ready, 0, NULL);
		if (!r)
			usleep(10000);
	}
	cr_assert_not_null(r, "microvm never got ready");
	json_decref(r);
	if (with_hog) {
		hog_stop = 0;
		pthread_create(&hog_thread, NULL, hog, NULL);
	}
}

static void vm_stop(struct vm *vm, bool with_hog)
{
	if (with_hog) {
		hog_stop = 1;
		pthread_join(hog_thread, NULL);
	}
	proc_stop(vm->pid);
}

/* `vcpustat record -o FILE --duration SEC` of a contended VM. */
static void record(const char *sht, struct vm *vm, const char *tag)
{
	char *argv[] = { (char *)vcpustat_bin(), "record", "-o", (char *)sht, "--duration", "2", "-q", NULL };
	int rc;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	vm_start(vm, tag, 90, true); /* stopped after the recording, which can take 20 s to attach in the lab */
	char *err;
	const char *wrong;

	rc = run(argv, NULL, tmp("record.err"));
	vm_stop(vm, true);
	err = slurp(tmp("record.err"));
	wrong = live_status_wrong(rc, err);
	cr_assert_null(wrong, "vcpustat record failed: %s: %s", wrong, err);
	free(err);
}

static int promtool(const char *file, char *out, size_t len)
{
	char cmd[512];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", file);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	return pclose(p);
}

static bool have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s > /dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* ---- HTTP ---- */

/* Wait until /metrics answers 200 (the exporter is up). */
static void wait_http(int port, double seconds)
{
	for (int i = 0; i < (int)(seconds * 10); i++) {
		struct http_reply r = http_get(port, "/metrics", NULL);
		int st = r.status;

		http_free(&r);
		if (st == 200)
			return;
		usleep(100000);
	}
	cr_assert_fail("nothing answers on port %d", port);
}

/* ---- tests ---- */

/* promtool accepts the exposition of the live maps; each vCPU's state seconds add up to the window. */
Test(export_live, live_exposition_passes_promtool_and_state_seconds_add_up, .timeout = 90, .fini = cleanup)
{
	struct vm vm;
	char out[8192], *text;
	json_t *doc, *vmj = NULL, *v;
	size_t i, checked = 0;
	double window;
	int rc;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	if (!have("promtool"))
		cr_skip_test("promtool is not installed (Debian package prometheus; tools/deps.sh installs it)");
	vm_start(&vm, "live", 120, true); /* stopped after the two exports, which can each take 15 s to attach in the lab */
	{
		char *argv[] = { (char *)vcpustat_bin(), "export", "--vm", vm.name, "-i", "1", NULL };

		rc = run(argv, tmp("live.prom"), tmp("live.err"));
		cr_assert_eq(rc, 0, "%s", slurp(tmp("live.err")));
	}
	{
		/* 3 s: the vCPUs found at the attach are seeded one after the other, ms apart under load */
		char *argv[] = { (char *)vcpustat_bin(), "export", "--vm", vm.name, "-i", "3", "-f", "json", NULL };

		rc = run(argv, tmp("live.json"), tmp("live.err"));
		cr_assert_eq(rc, 0, "%s", slurp(tmp("live.err")));
	}
	vm_stop(&vm, true);
	rc = promtool(tmp("live.prom"), out, sizeof(out));
	cr_assert_eq(rc, 0, "promtool check metrics refused the live exposition:\n%s", out);
	text = slurp(tmp("live.prom"));
	cr_assert(strstr(text, vm.name), "the VM is in the exposition");
	free(text);

	doc = json_load_file(tmp("live.json"), 0, NULL);
	cr_assert_not_null(doc);
	window = json_real_value(json_object_get(doc, "window_seconds"));
	cr_assert_gt(window, 2.9);
	json_array_foreach(json_object_get(doc, "vms"), i, v)
		if (!strcmp(json_string_value(json_object_get(v, "vm")), vm.name))
			vmj = v;
	cr_assert_not_null(vmj, "VM %s is not in `export --vm %s -i 3 -f json`:\n%.3000s\nits stderr: %.2000s", vm.name,
			   vm.name, slurp(tmp("live.json")), slurp(tmp("live.err")));
	json_array_foreach(json_object_get(vmj, "vcpus"), i, v) {
		json_t *sec = json_object_get(v, "seconds"), *x;
		const char *k;
		double sum = 0;

		json_object_foreach(sec, k, x)
			sum += json_real_value(x);
		cr_log_info("vCPU %lld: states add up to %.4f s over a window of %.4f s",
			    json_integer_value(json_object_get(v, "vcpu")), sum, window);
		cr_assert_lt(sum > window ? sum - window : window - sum, 0.01 * window,
			     "the state seconds of a vCPU observed all along add up to the window (within 1 %%): "
			     "%.4f s vs %.4f s",
			     sum, window);
		cr_assert_gt(json_real_value(json_object_get(sec, "preempted")), 0, "the hog preempts it");
		checked++;
	}
	cr_assert_eq(checked, 2);
	json_decref(doc);
	scratch_remove();
}

/*
 * A recording, exported: promtool accepts it; JSON and CSV carry the
 * Prometheus numbers; histograms are cumulative with +Inf = _count; the
 * state seconds of each vCPU add up to the window.
 */
Test(export_live, file_exposition_passes_promtool_and_all_formats_agree, .timeout = 90, .fini = cleanup)
{
	const char *sht = tmp("rec.sht");
	struct prom_doc d;
	struct vm vm;
	char out[8192], *text, *csv, *line, *save = NULL, labels[256];
	json_t *doc, *v, *vmj = NULL;
	size_t i, rows = 0;
	double window;

	if (!have("promtool"))
		cr_skip_test("promtool is not installed (Debian package prometheus; tools/deps.sh installs it)");
	record(sht, &vm, "file");
	{
		/* from 0.25 s: every vCPU of the VM (found when the recording started) lives through the window */
		char *argv[] = { (char *)vcpustat_bin(), "export", "--file", (char *)sht, "--from", "0.25s", "-o",
				 (char *)tmp("f.prom"), NULL };
		char *argj[] = { (char *)vcpustat_bin(), "export", "--file", (char *)sht, "--from", "0.25s", "-f",
				 "json", "-o", (char *)tmp("f.json"), NULL };
		char *argc_[] = { (char *)vcpustat_bin(), "export", "--file", (char *)sht, "--from", "0.25s", "-f",
				  "csv", "-o", (char *)tmp("f.csv"), NULL };

		cr_assert_eq(run(argv, NULL, NULL), 0);
		cr_assert_eq(run(argj, NULL, NULL), 0);
		cr_assert_eq(run(argc_, NULL, NULL), 0);
	}
	cr_assert_eq(promtool(tmp("f.prom"), out, sizeof(out)), 0, "promtool refused the file exposition:\n%s", out);
	text = slurp(tmp("f.prom"));
	prom_parse(text, &d);
	cr_assert_geq(prom_check_histograms(&d), 3, "userspace exits of 2 reasons and run-queue waits at least");

	/* JSON = Prometheus */
	doc = json_load_file(tmp("f.json"), 0, NULL);
	cr_assert_not_null(doc);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "source")), "file");
	window = json_real_value(json_object_get(doc, "window_seconds"));
	cr_assert_float_eq(window, prom_value(&d, "vcpustat_window_seconds", ""), 1e-9);
	json_array_foreach(json_object_get(doc, "vms"), i, v)
		if (!strcmp(json_string_value(json_object_get(v, "vm")), vm.name))
			vmj = v;
	cr_assert_not_null(vmj, "the recorded VM is in the JSON");
	json_array_foreach(json_object_get(vmj, "vcpus"), i, v) {
		json_t *sec = json_object_get(v, "seconds");
		double sum = 0;

		for (int st = 0; st < VCPU_NR_STATES; st++) {
			const char *name = (const char *[]){ "unknown", "guest", "host", "preempted", "wait", "idle",
							     "blocked", "poll" }[st];
			double js = json_real_value(json_object_get(sec, name));

			snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%lld\",state=\"%s\"", vm.name,
				 json_integer_value(json_object_get(v, "vcpu")), name);
			cr_assert_float_eq(js, prom_value(&d, "vcpustat_vcpu_seconds_total", labels), 1e-9, "%s", labels);
			sum += js;
		}
		cr_assert_lt(sum > window ? sum - window : window - sum, 0.01 * window,
			     "a vCPU alive through the window: its states add up to it (%.4f vs %.4f s)", sum, window);
		snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%lld\"", vm.name,
			 json_integer_value(json_object_get(v, "vcpu")));
		cr_assert_eq(json_integer_value(json_object_get(v, "preemptions")),
			     (json_int_t)prom_value(&d, "vcpustat_vcpu_preemptions_total", labels));
	}
	json_array_foreach(json_object_get(vmj, "userspace_exits"), i, v) {
		json_t *buckets = json_object_get(v, "buckets");

		snprintf(labels, sizeof(labels), "vm=\"%s\",reason=\"%s\"", vm.name,
			 json_string_value(json_object_get(v, "reason")));
		cr_assert_eq(json_integer_value(json_object_get(v, "count")),
			     (json_int_t)prom_value(&d, "vcpustat_userspace_exit_duration_seconds_count", labels));
		cr_assert_eq(json_integer_value(json_object_get(json_array_get(buckets, json_array_size(buckets) - 1),
								"count")),
			     json_integer_value(json_object_get(v, "count")), "+Inf = count in the JSON too");
	}

	/* CSV = Prometheus, row by row */
	csv = slurp(tmp("f.csv"));
	line = strtok_r(csv, "\n", &save);
	cr_assert_str_eq(line, "metric,vm,vcpu,state,reason,le,process,comm,cgroup,culprit_vm,kind,tracepoint,target,access,msr,result,"
			       "node,llc,across,beside,vector,cr3,value");
	while ((line = strtok_r(NULL, "\n", &save))) {
		char metric[128], vmname[64], vcpu[16], state[16];

		if (sscanf(line, "%127[^,],%63[^,],%15[^,],%15[^,],", metric, vmname, vcpu, state) == 4 &&
		    !strcmp(metric, "vcpustat_vcpu_seconds_total")) {
			snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%s\",state=\"%s\"", vmname, vcpu, state);
			cr_assert_str_eq(strrchr(line, ',') + 1, prom_find(&d, metric, labels)->text, "%s", line);
			rows++;
		}
	}
	cr_assert_geq(rows, 2 * VCPU_NR_STATES, "one row per vm x vcpu x state");
	free(csv);
	free(text);
	prom_free(&d);
	json_decref(doc);
	scratch_remove();
}

/*
 * `vcpustat serve --vm VM` on loopback port, then a Prometheus scraping it
 * every second (rules: a rule file it evaluates every second, or NULL) on a
 * free port (*prom_port). Returns Prometheus's pid; *serve gets serve's.
 */
static pid_t serve_and_prometheus(const struct vm *vm, int port, const char *rules, pid_t *serve, int *prom_port)
{
	char listen[32], cfg[1024], rule_files[600] = "", flag_cfg[160], flag_data[160], flag_web[64];
	FILE *f;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	{
		char *argv[] = { (char *)vcpustat_bin(), "serve", "--listen", listen, "--vm", (char *)vm->name, NULL };

		*serve = proc_spawn(argv, NULL, tmp("serve.err"));
	}
	wait_http(port, 30);
	*prom_port = free_loopback_port();
	if (rules)
		snprintf(rule_files, sizeof(rule_files), "rule_files:\n  - '%s'\n", rules);
	snprintf(cfg, sizeof(cfg),
		 "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n%s"
		 "scrape_configs:\n  - job_name: vcpustat\n    static_configs:\n      - targets: ['%s']\n",
		 rule_files, listen);
	f = fopen(tmp("prometheus.yml"), "w");
	cr_assert_not_null(f);
	fputs(cfg, f);
	fclose(f);
	snprintf(flag_cfg, sizeof(flag_cfg), "--config.file=%s", tmp("prometheus.yml"));
	snprintf(flag_data, sizeof(flag_data), "--storage.tsdb.path=%s", tmp("data"));
	snprintf(flag_web, sizeof(flag_web), "--web.listen-address=127.0.0.1:%d", *prom_port);
	{
		char *argv[] = { "prometheus", flag_cfg, flag_data, flag_web, NULL };

		return proc_spawn(argv, tmp("prometheus.log"), tmp("prometheus.log"));
	}
}

/*
 * A real Prometheus, started here on loopback with a 1 s scrape interval,
 * scrapes `vcpustat serve` while a VM pinned to CPU 0 competes with a busy
 * thread: PromQL sees its preempted time grow, and the states of its 2 vCPUs
 * add up to 2 vCPU-seconds per second.
 */
Test(export_live, prometheus_scrapes_serve_and_sees_the_contended_vm, .timeout = 150, .fini = cleanup)
{
	int port = free_loopback_port(), prom_port;
	char query[512];
	pid_t serve, prom;
	struct vm vm;
	double rate = -1, total = -1;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	if (!have("prometheus"))
		cr_skip_test("prometheus is not installed (tools/deps.sh installs it)");
	vm_start(&vm, "prom", 120, true);
	prom = serve_and_prometheus(&vm, port, NULL, &serve, &prom_port);
	snprintf(query, sizeof(query), "rate(vcpustat_vcpu_seconds_total{state=\"preempted\",vm=\"%s\"}[10s])",
		 vm.name);
	for (int i = 0; i < 40 && rate <= 0; i++) {
		sleep(1);
		rate = promql(prom_port, query);
	}
	/*
	 * Enough scrapes for a rate over 10 s: a scrape's timestamp is when
	 * Prometheus sent it, its values are from when serve answered, and
	 * under emulation (the KVM lab) the two drift apart by up to a few
	 * hundred ms; over 5 s that alone made 1.78 of 2 vCPU-s/s, over 10 s
	 * (with vcpustat's halt and wake programs beside) 1.65 once: 20 s.
	 */
	for (int i = 0; i < 40 && promql(prom_port, "count_over_time(up{job=\"vcpustat\"}[22s])") < 20; i++)
		sleep(1);
	snprintf(query, sizeof(query), "sum(rate(vcpustat_vcpu_seconds_total{vm=\"%s\"}[20s]))", vm.name);
	total = promql(prom_port, query);
	{
		char q2[256];
		double up;

		snprintf(q2, sizeof(q2), "up{job=\"vcpustat\"}");
		up = promql(prom_port, q2);
		cr_log_info("preempted rate %.3f vCPU-s/s, all states %.3f vCPU-s/s, up %g", rate, total, up);
		cr_assert_eq(up, 1, "Prometheus scrapes the exporter (OpenMetrics, which it asks for first)");
	}
	cr_assert_eq(proc_stop(prom), 0, "prometheus stops cleanly: %s", slurp(tmp("prometheus.log")));
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp(tmp("serve.err")));
	vm_stop(&vm, true);
	cr_assert_gt(rate, 0, "PromQL sees the contended VM's preempted time grow");
	cr_assert(total > 1.8 && total < 2.2, "2 vCPUs: their states add up to 2 vCPU-seconds per second, not %g",
		  total);
	scratch_remove();
}

/*
 * The shipped dashboard and rules against the real thing: a Prometheus
 * started here on loopback with tools/prometheus/vcpustat.rules.yml loaded
 * (evaluated every second) scrapes `vcpustat serve` while a VM pinned to
 * CPU 0 competes with a busy thread. Every query of every dashboard panel
 * and variable, every recording rule's expression and the series it
 * records, returns a non-empty result; every rule evaluates without error;
 * the contended VM's steal is recorded above 10 % and VcpustatHighSteal is
 * pending for it; through PromQL the delay metric is preempted + wait and
 * the wait metric equals it.
 */
/*
 * The tracepoints serve at port lists as not attached: each one a program
 * this kernel refused, which serve warned about when it started (fentry on
 * kvm_vcpu_halt where the kernel does not allow it). The dashboard's health
 * check must find those and no other.
 */
static int refused_tracepoints(int port)
{
	struct http_reply r = http_get(port, "/metrics", NULL);
	const char *want = "vcpustat_tracepoint_attached{tracepoint=\"", *p;
	char *warnings = slurp(tmp("serve.err"));
	int n = 0;

	cr_assert_eq(r.status, 200, "serve's /metrics: HTTP %d", r.status);
	for (p = strstr(r.body, want); p; p = strstr(p + 1, want)) {
		char tp[128], warned[160];
		const char *q = p + strlen(want), *end = strstr(q, "\"} ");

		cr_assert(end && end - q < (long)sizeof(tp), "a tracepoint label: %.80s", p);
		snprintf(tp, sizeof(tp), "%.*s", (int)(end - q), q);
		if (strncmp(end, "\"} 0\n", 5))
			continue;
		snprintf(warned, sizeof(warned), "warning: %s: ", tp);
		cr_assert(warnings && strstr(warnings, warned),
			  "serve lists %s as not attached without saying why at its start: %s", tp,
			  warnings ? warnings : "(no stderr)");
		cr_log_info("not attached, as serve said at its start: %s", tp);
		n++;
	}
	free(warnings);
	http_free(&r);
	return n;
}

Test(export_live, prometheus_evaluates_every_dashboard_and_rule_query_on_serve, .timeout = 150, .fini = cleanup)
{
	int port = free_loopback_port(), prom_port, required, recorded, alerts, n;
	char q[1024], err[512] = "";
	pid_t serve, prom;
	struct vm vm;
	double v = 0, steal = -1;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	if (!have("prometheus"))
		cr_skip_test("prometheus is not installed (tools/deps.sh installs it)");
	vm_start(&vm, "eval", 300, true); /* stopped at the end: Prometheus and the dashboard take 80 s in the lab */
	prom = serve_and_prometheus(&vm, port, PROM_EVAL_RULES, &serve, &prom_port);
	/* 12 s of scrapes: a 10 s rate of every counter, the rules evaluated a few times over them */
	for (int w = 0; w < 40 && promql(prom_port, "count_over_time(up{job=\"vcpustat\"}[12s])") < 12; w++)
		sleep(1);
	cr_assert_eq(promql(prom_port, "up{job=\"vcpustat\"}"), 1, "Prometheus scrapes serve: %s",
		     slurp(tmp("prometheus.log")));
	sleep(3);
	required = prom_eval_dashboard_and_rules(prom_port, vm.name, "10s", kvm_exit_unavailable(), NULL,
						 refused_tracepoints(port), &recorded, &alerts);

	/* the contended VM's steal, recorded and alerted on */
	snprintf(q, sizeof(q), "vm:vcpustat_steal:ratio_rate5m{vm=\"%s\"}", vm.name);
	cr_assert_eq(promql_count_settled(prom_port, q, &steal, err, sizeof(err)), 1, "%s", q);
	snprintf(q, sizeof(q), "ALERTS{alertname=\"VcpustatHighSteal\",vm=\"%s\",alertstate=\"pending\"}", vm.name);
	cr_log_info("steal of the contended VM: %.3f; VcpustatHighSteal pending: %d", steal,
		    promql_count(prom_port, q, NULL, err, sizeof(err)));
	cr_assert_gt(steal, 0.1, "two vCPUs and a busy thread on one CPU: more than 10 %% steal, not %g", steal);
	cr_assert_eq(promql_count(prom_port, q, NULL, err, sizeof(err)), 1, "VcpustatHighSteal is pending: %s", q);
	/* delay = preempted + wait, wait = delay, in the same scrape */
	snprintf(q, sizeof(q),
		 "sum(vcpustat_vcpu_delay_seconds_total{vm=\"%s\"}) - sum(vcpustat_vcpu_seconds_total{vm=\"%s\","
		 "state=~\"preempted|wait\"})",
		 vm.name, vm.name);
	n = promql_count_settled(prom_port, q, &v, err, sizeof(err));
	cr_assert_eq(n, 1, "%s: %d results (%s)", q, n, n < 0 ? err : "");
	cr_assert_lt(v < 0 ? -v : v, 1e-6, "delay = preempted + wait: %s = %g", q, v);
	snprintf(q, sizeof(q),
		 "sum(vcpustat_vcpu_wait_seconds_total{vm=\"%s\"}) - sum(vcpustat_vcpu_delay_seconds_total{vm=\"%s\"})",
		 vm.name, vm.name);
	n = promql_count_settled(prom_port, q, &v, err, sizeof(err));
	cr_assert_eq(n, 1, "%s: %d results (%s)", q, n, n < 0 ? err : "");
	/* the same numbers summed: equal but for the order Prometheus adds them in */
	cr_assert_lt(v < 0 ? -v : v, 1e-6, "wait = delay: %s = %g", q, v);

	cr_log_info("%d queries of the dashboard and rules had results, %d recorded series, %d alerts evaluated",
		    required, recorded, alerts);
	cr_assert_eq(proc_stop(prom), 0, "prometheus stops cleanly: %s", slurp(tmp("prometheus.log")));
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp(tmp("serve.err")));
	vm_stop(&vm, true);
	scratch_remove();
}

/*
 * serve --user nobody: after attaching, the process runs as nobody with only
 * CAP_BPF, and still serves fresh metrics; Prometheus text, OpenMetrics,
 * JSON and CSV of one sample agree; the page at / and a 404.
 */
Test(export_live, serve_drops_to_an_unprivileged_user_and_still_serves, .timeout = 60, .fini = cleanup)
{
	int port = free_loopback_port();
	char listen[32], path[64], *status, *line, *save = NULL, labels[256];
	struct http_reply prom, om, js, csv, page, missing;
	struct prom_doc d, o;
	struct vm vm;
	pid_t serve;
	json_t *doc, *v;
	size_t i;
	double first;
	bool uid_ok = false, cap_ok = false;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	if (geteuid() != 0)
		cr_skip_test("needs root to drop to another user");
	vm_start(&vm, "serve", 120, true); /* stopped at the end */
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	{
		char *argv[] = { (char *)vcpustat_bin(), "serve", "--listen", listen, "--user", "nobody", "--vm",
				 vm.name, "--cache-ms", "1500", NULL };

		serve = proc_spawn(argv, NULL, tmp("serve.err"));
	}
	wait_http(port, 30);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)serve);
	status = slurp(path);
	cr_assert_not_null(status);
	for (line = strtok_r(status, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "Uid:", 4))
			uid_ok = !strcmp(line, "Uid:\t65534\t65534\t65534\t65534");
		if (!strncmp(line, "CapEff:", 7))
			cap_ok = !strcmp(line, "CapEff:\t0000008000000000");
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "CapEff:", 7) || !strncmp(line, "CapPrm:", 7))
			cr_log_info("serve: %s", line);
	}
	free(status);
	cr_assert(uid_ok, "serve runs as nobody (uid 65534)");
	cr_assert(cap_ok, "serve keeps CAP_BPF only");

	/* one sample (a scrape within 1.5 s of the last reuses it), four formats; not the first sample */
	usleep(1600000);
	prom = http_get(port, "/metrics", NULL);
	om = http_get(port, "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5");
	js = http_get(port, "/metrics?format=json", NULL);
	csv = http_get(port, "/metrics?format=csv", NULL);
	page = http_get(port, "/", NULL);
	missing = http_get(port, "/nope", NULL);
	cr_assert_eq(prom.status, 200);
	cr_assert(strstr(prom.headers, "Content-Type: text/plain; version=0.0.4"), "%s", prom.headers);
	cr_assert_eq(om.status, 200);
	cr_assert(strstr(om.headers, "Content-Type: application/openmetrics-text; version=1.0.0"), "%s", om.headers);
	cr_assert(strlen(om.body) > 6 && !strcmp(om.body + strlen(om.body) - 6, "# EOF\n"), "OpenMetrics ends with # EOF");
	cr_assert_eq(page.status, 200);
	cr_assert(strstr(page.headers, "text/html"));
	cr_assert(strstr(page.body, "vcpustat exporter") && strstr(page.body, vm.name) && strstr(page.body, "nobody"),
		  "%s", page.body);
	cr_assert(strstr(page.body, "href=\"/metrics\""), "the page links /metrics");
	cr_assert_eq(missing.status, 404);
	prom_parse(prom.body, &d);
	prom_parse(om.body, &o);
	cr_assert_eq(d.n, o.n, "the same sample in both text formats");
	prom_check_histograms(&d);
	snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"0\",state=\"preempted\"", vm.name);
	first = prom_value(&d, "vcpustat_vcpu_seconds_total", labels);
	cr_assert_gt(first, 0, "nobody still reads the maps: the VM was preempted");
	doc = json_loads(js.body, 0, NULL);
	cr_assert_not_null(doc);
	json_array_foreach(json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "vcpus"), i, v) {
		snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%lld\",state=\"preempted\"", vm.name,
			 json_integer_value(json_object_get(v, "vcpu")));
		cr_assert_float_eq(json_real_value(json_object_get(json_object_get(v, "seconds"), "preempted")),
				   prom_value(&d, "vcpustat_vcpu_seconds_total", labels), 1e-9);
	}
	save = NULL;
	for (line = strtok_r(csv.body, "\n", &save), i = 0; line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "vcpustat_vcpu_seconds_total,", 28) && strstr(line, ",preempted,")) {
			cr_assert_str_eq(strrchr(line, ',') + 1,
					 prom_find(&d, "vcpustat_vcpu_seconds_total",
						   (snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"%zu\",state=\"preempted\"",
							     vm.name, i),
						    labels))
						 ->text);
			i++;
		}
	cr_assert_eq(i, 2);
	json_decref(doc);
	prom_free(&d);
	prom_free(&o);
	/* a later scrape: fresh numbers, and counters only grow */
	sleep(2);
	http_free(&prom);
	prom = http_get(port, "/metrics", NULL);
	prom_parse(prom.body, &d);
	snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"0\",state=\"preempted\"", vm.name);
	cr_assert_gt(prom_value(&d, "vcpustat_vcpu_seconds_total", labels), first, "a fresh sample, grown");
	prom_free(&d);
	http_free(&prom);
	http_free(&om);
	http_free(&js);
	http_free(&csv);
	http_free(&page);
	http_free(&missing);
	cr_assert_eq(proc_stop(serve), 0, "%s", slurp(tmp("serve.err")));
	vm_stop(&vm, true);
	scratch_remove();
}

/* --every: the file is rewritten each period, always complete, counters only grow; SIGTERM ends it cleanly. */
Test(export_live, every_rewrites_the_file_atomically_with_growing_counters, .timeout = 60, .fini = cleanup)
{
	const char *file = tmp("textfile/vcpustat.prom");
	char dir[128], labels[256], cmd[256];
	double last = -1;
	struct vm vm;
	pid_t exp;
	int reads = 0;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	snprintf(dir, sizeof(dir), "%s/textfile", scratch_dir("export"));
	mkdir(dir, 0755);
	vm_start(&vm, "every", 90, true);
	{
		char *argv[] = { (char *)vcpustat_bin(), "export", "--every", "0.3", "-i", "0.3", "-o", (char *)file,
				 "--vm", vm.name, NULL };

		exp = proc_spawn(argv, NULL, tmp("every.err"));
	}
	snprintf(labels, sizeof(labels), "vm=\"%s\",vcpu=\"0\",state=\"preempted\"", vm.name);
	/* the first file: under emulation, beside the VM and its rival, attaching can take 20 s */
	for (int i = 0; i < 600 && access(file, F_OK); i++)
		usleep(100000);
	for (int i = 0; i < 60 && reads < 8; i++) {
		char *text = slurp(file);
		struct prom_doc d;
		const struct prom_sample *s;

		usleep(130000);
		if (!text)
			continue;
		cr_assert(strstr(text, "vcpustat_build_info{"), "a complete file at every read");
		prom_parse(text, &d);
		s = prom_find(&d, "vcpustat_vcpu_seconds_total", labels);
		if (s) {
			cr_assert_geq(s->value, last, "counters only grow from one file to the next");
			last = s->value;
			reads++;
		}
		prom_free(&d);
		free(text);
	}
	cr_assert_eq(proc_stop(exp), 0, "SIGTERM ends --every cleanly: %s", slurp(tmp("every.err")));
	vm_stop(&vm, true);
	cr_assert_eq(reads, 8);
	cr_assert_gt(last, 0);
	snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 1", dir);
	cr_assert_eq(system(cmd), 0, "no temporary file left next to the output");
	scratch_remove();
}

/* A port in use: one clear sentence, exit 1, nothing loaded. */
Test(export_live, serve_refuses_a_port_in_use, .timeout = 30, .fini = cleanup)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), rc;
	char listen_addr[32], *err;

	cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(s, 1), 0);
	getsockname(s, (struct sockaddr *)&a, &len);
	snprintf(listen_addr, sizeof(listen_addr), "127.0.0.1:%d", ntohs(a.sin_port));
	{
		char *argv[] = { (char *)vcpustat_bin(), "serve", "--listen", listen_addr, NULL };

		rc = run(argv, NULL, tmp("inuse.err"));
	}
	close(s);
	err = slurp(tmp("inuse.err"));
	cr_assert_eq(rc, 1, "exit code 1: %s", err);
	cr_assert_eq(lines(err), 1, "one line: %s", err);
	cr_assert(strstr(err, listen_addr) && strstr(err, "already in use"), "%s", err);
	free(err);
	scratch_remove();
}

struct bad_case {
	const char *what;
	char *argv[12];
	int rc;
	const char *message;
	const char *output; /* must not exist afterwards */
};

/* Bad input: one clear sentence each, a non-zero exit, no output file. */
Test(export_live, bad_input_is_refused_clearly_without_partial_output, .timeout = 60, .fini = cleanup)
{
	const char *corrupt = tmp("corrupt.sht"), *out = tmp("out.prom"), *svg = tmp("out.svg"), *errf = tmp("bad.err");
	const char *missing = tmp("missing.sht");
	char *v = (char *)vcpustat_bin();
	unsigned char junk[65536];
	FILE *f;

	srand(3);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rand();
	f = fopen(corrupt, "w");
	fwrite(junk, 1, sizeof(junk), f);
	fclose(f);
	{
		struct bad_case cases[] = {
			{ "unknown format", { v, "export", "-f", "xml", "-o", (char *)out, NULL }, 2, "--format xml: unknown format", out },
			{ "unwritable output", { v, "export", "-o", "/nonexistent-dir/x.prom", NULL }, 1, "/nonexistent-dir/x.prom: cannot write there", "/nonexistent-dir/x.prom" },
			{ "output is a directory", { v, "export", "-o", (char *)scratch_dir("export"), NULL }, 1, "is a directory", NULL },
			{ "missing recording", { v, "export", "--file", (char *)missing, "-o", (char *)out, NULL }, 1, "missing.sht: cannot open", out },
			{ "corrupt recording", { v, "export", "--file", (char *)corrupt, "-o", (char *)out, NULL }, 1, "not a vcpustat SHT file", out },
			{ "plot: missing recording", { v, "plot", (char *)missing, "-o", (char *)svg, NULL }, 1, "missing.sht: cannot open", svg },
			{ "plot: corrupt recording", { v, "plot", (char *)corrupt, "-o", (char *)svg, NULL }, 1, "not a vcpustat SHT file", svg },
			{ "plot: no output", { v, "plot", (char *)corrupt, NULL }, 2, "-o FILE.svg is needed", NULL },
			{ "--every without -o", { v, "export", "--every", "5", NULL }, 2, "--every needs -o FILE", NULL },
			{ "--from without --file", { v, "export", "--from", "1s", NULL }, 2, "need --file", NULL },
			{ "bad listen address", { v, "serve", "--listen", "nowhere", NULL }, 2, "--listen nowhere: expected HOST:PORT", NULL },
			{ "bad port", { v, "serve", "--listen", "127.0.0.1:99999", NULL }, 2, "port must be a number", NULL },
			{ "unknown user", { v, "serve", "--user", "no-such-user-xyz", NULL }, 2, "--user no-such-user-xyz: no such user", NULL },
			{ "user root", { v, "serve", "--user", "root", NULL }, 2, "that is root", NULL },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct bad_case *c = &cases[i];
			int rc = run(c->argv, NULL, errf);
			char *err = slurp(errf);

			cr_log_info("%s: %s", c->what, err);
			cr_assert_eq(rc, c->rc, "%s: exit code %d, not %d (%s)", c->what, c->rc, rc, err);
			cr_assert_eq(lines(err), 1, "%s: one line: %s", c->what, err);
			cr_assert(strstr(err, c->message), "%s: '%s' in: %s", c->what, c->message, err);
			cr_assert(!strncmp(err, "vcpustat: error: ", 17), "%s", err);
			if (c->output)
				cr_assert_neq(access(c->output, F_OK), 0, "%s: no output file", c->what);
			free(err);
		}
	}
	scratch_remove();
}

/*
 * A recorded file, plotted: well-formed XML (xmllint), with the VM's name,
 * every state, the histograms; a Chromium screenshot where it is installed
 * (build dir: artifacts/export-plot.png).
 */
Test(export_live, plot_renders_a_recording_as_svg, .timeout = 120, .fini = cleanup)
{
	const char *sht = tmp("plot.sht"), *svg = tmp("plot.svg");
	char cmd[1024], artifacts[512], *text;
	static const char *const states[] = { "guest", "host", "poll", "preempted", "wait", "idle", "blocked", "unknown" };
	struct vm vm;
	int height;

	if (!have("xmllint"))
		cr_skip_test("xmllint is not installed (Debian package libxml2-utils)");
	record(sht, &vm, "plot");
	{
		char *argv[] = { (char *)vcpustat_bin(), "plot", (char *)sht, "--buckets", "40", "-o", (char *)svg, NULL };

		cr_assert_eq(run(argv, NULL, tmp("plot.err")), 0, "%s", slurp(tmp("plot.err")));
	}
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", svg);
	cr_assert_eq(system(cmd), 0, "the SVG is well-formed XML");
	text = slurp(svg);
	cr_assert(strstr(text, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	cr_assert(strstr(text, vm.name), "the VM's name is in the title");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), ">%s</text>", states[i]);
		cr_assert(strstr(text, want), "the legend names state %s", states[i]);
	}
	cr_assert(strstr(text, "Userspace exit handling latency") && strstr(text, "Run-queue wait"),
		  "the histograms are drawn");
	cr_assert(strstr(text, "seconds since the start of the window"), "the timeline has its axis label");
	height = strstr(text, "height=\"") ? atoi(strstr(text, "height=\"") + 8) : 2400;
	free(text);

	snprintf(artifacts, sizeof(artifacts), "%s/artifacts", build_dir());
	mkdir(artifacts, 0755);
	if (access(artifacts, W_OK) != 0) { /* a read-only build tree (the KVM lab shares it so) */
		snprintf(artifacts, sizeof(artifacts), "%s", tmp("artifacts"));
		mkdir(artifacts, 0755);
	}
	snprintf(cmd, sizeof(cmd), "cp %s %s/export-plot.svg", svg, artifacts);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	if (have("chromium")) {
		char png[600];
		unsigned char magic[8] = { 0 };
		FILE *f;

		snprintf(png, sizeof(png), "%s/export-plot.png", artifacts);
		unlink(png);
		snprintf(cmd, sizeof(cmd),
			 "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
			 "--disable-component-update --disable-sync --no-first-run --user-data-dir=%s "
			 "--window-size=960,%d --screenshot=%s file://%s > %s 2>&1",
			 tmp("chromium"), height > 0 && height < 20000 ? height : 2400, png, svg, tmp("chromium.log"));
		cr_assert_eq(system(cmd), 0, "chromium: %s", slurp(tmp("chromium.log")));
		f = fopen(png, "rb");
		cr_assert_not_null(f, "the screenshot %s", png);
		cr_assert_eq(fread(magic, 1, 8, f), 8);
		fclose(f);
		cr_assert_eq(memcmp(magic, "\x89PNG\r\n\x1a\n", 8), 0, "a PNG");
		cr_log_info("screenshot: %s", png);
	} else {
		cr_log_info("chromium is not installed: no screenshot (the SVG is in %s)", artifacts);
	}
	scratch_remove();
}

/* plot --live: the histograms of a few live seconds. */
Test(export_live, plot_live_draws_the_histograms, .timeout = 60, .fini = cleanup)
{
	const char *svg = tmp("live.svg");
	char cmd[256], *text;
	struct vm vm;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	if (!have("xmllint"))
		cr_skip_test("xmllint is not installed (Debian package libxml2-utils)");
	vm_start(&vm, "plotlive", 120, true); /* stopped after the plot, which can take 20 s to attach in the lab */
	{
		char *argv[] = { (char *)vcpustat_bin(), "plot", "--live", "-i", "1", "--vm", vm.name, "-o", (char *)svg,
				 NULL };

		cr_assert_eq(run(argv, NULL, tmp("plot.err")), 0, "%s", slurp(tmp("plot.err")));
	}
	vm_stop(&vm, true);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", svg);
	cr_assert_eq(system(cmd), 0, "well-formed XML");
	text = slurp(svg);
	cr_assert(strstr(text, vm.name), "the VM is in the plot (not \"No VM was seen in this window\")");
	cr_assert(strstr(text, "Run-queue wait") && strstr(text, "p99"), "the wait histogram with its p99");
	cr_assert(strstr(text, ">preempted</text>"), "the state legend");
	free(text);
	scratch_remove();
}

/* GET /metrics from source address 127.0.0.2 with a 1 s socket timeout: the HTTP status, or -1. */
static int scrape_from_another_address(int port)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 1 };
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	char buf[4096];
	size_t len = 0;
	int s = socket(AF_INET, SOCK_STREAM, 0), status = -1;
	ssize_t n;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (bind(s, (struct sockaddr *)&src, sizeof(src)) || connect(s, (struct sockaddr *)&a, sizeof(a)) ||
	    send(s, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1)) {
		close(s);
		return -1;
	}
	while (len < sizeof(buf) - 1 && (n = recv(s, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	if (len > 12 && !strncmp(buf, "HTTP/1.", 7))
		status = atoi(buf + 9);
	close(s);
	return status;
}

/*
 * 100 slow clients (a request line, then one header every 10 s) do not starve
 * the scrapers: a scraper from another address gets a 200 within its own 1 s
 * socket timeout, every second for 20 s. Loopback only; it stops by itself.
 */
Test(export_live, serve_scrapes_get_through_while_100_slow_clients_hold_sockets, .timeout = 120, .fini = cleanup)
{
	int port = free_loopback_port(), slow[100], held = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static const char start[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
	char listen[32];
	pid_t serve;

	SKIP_UNLESS(bpf_unavailable());
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	{
		char *argv[] = { (char *)vcpustat_bin(), "serve", "--listen", listen, NULL };

		serve = proc_spawn(argv, NULL, tmp("slow.err"));
	}
	wait_http(port, 30);
	for (int i = 0; i < 100; i++) {
		slow[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (connect(slow[i], (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS) {
			close(slow[i]);
			slow[i] = -1;
			continue;
		}
		held++;
	}
	cr_assert_eq(held, 100, "100 slow sockets");
	usleep(200000);
	for (int i = 0; i < 100; i++)
		if (slow[i] >= 0 && send(slow[i], start, sizeof(start) - 1, MSG_NOSIGNAL) < 0) {
			close(slow[i]); /* the server already refused it: fine */
			slow[i] = -1;
		}
	for (int sec = 0; sec < 20; sec++) {
		int status = scrape_from_another_address(port);

		cr_assert_eq(status, 200, "scrape %d of 20 (second %d): status %d (-1: no answer within 1 s)", sec + 1,
			     sec, status);
		if (sec % 10 == 9) /* the slow clients' next header */
			for (int i = 0; i < 100; i++)
				if (slow[i] >= 0 && send(slow[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) < 0) {
					close(slow[i]);
					slow[i] = -1;
				}
		sleep(1);
	}
	for (int i = 0; i < 100; i++)
		if (slow[i] >= 0)
			close(slow[i]);
	cr_assert_eq(proc_stop(serve), 0, "serve stops cleanly on SIGTERM: %s", slurp(tmp("slow.err")));
	scratch_remove();
}
