// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * exporter-bench: what one Prometheus scrape of `vcpustat serve` costs with
 * N simulated vCPUs in the maps (VMS VMs x VCPUS vCPUs, created through the
 * injection program: exits of 6 reasons, userspace exits of 2, preemptions by
 * another VM's vCPU, so every VM has histograms and culprits).
 *
 * The real exporter code (user/serve/httpd.c, user/export/metrics.c) serves the maps on a
 * loopback port with the scrape cache off (every scrape reads the maps); a
 * client process scrapes it over HTTP. Measured in the same run:
 *   - baselines: reading the maps only (vcpustat_snapshot), and an HTTP
 *     request the server answers without reading anything (404);
 *   - the steps of a scrape: maps, window model + counters, rendering;
 *   - end to end: scrape latency at the client (median, p90, max) and the
 *     exporter's CPU per scrape (getrusage of the serving process, the client
 *     runs in another process).
 *
 * usage: exporter-bench [-v VMS] [-c VCPUS_PER_VM] [-n SCRAPES] [-N] [-K]
 *   -N: --no-vcpu-labels; -K: without heap_keep() (the heap given back to the kernel: the baseline)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "live/live.h"
#include "util/util.h"
#include "export/export.h"

static double now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU of the whole process (every thread: the HTTP server's too), ms. */
static double proc_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int inject(struct vcpustat *vs, __u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2,
		  __u32 tgid2, __u64 a0, __u64 a1)
{
	struct vcpustat_event ev = { .type = type, .ts = ts, .cpu = cpu, .tid = tid, .tgid = tgid, .tid2 = tid2,
				     .tgid2 = tgid2, .arg0 = a0, .arg1 = a1 };

	snprintf(ev.comm, sizeof(ev.comm), "CPU %u/KVM", (tid - tgid - 1) % 1000);
	return vcpustat_inject(vs, &ev);
}

/* Every vCPU: 6 exit reasons, 2 userspace exit reasons, a preemption by the next VM's vCPU 0. */
static int simulate(struct vcpustat *vs, int vms, int vcpus, __u64 *ts)
{
	static const __u32 reasons[] = { 30, 32, 48, 12, 1, 10 };
	int err = 0;

	for (int m = 0; m < vms && !err; m++)
		for (int c = 0; c < vcpus && !err; c++) {
			__u32 tgid = 3000000 + (__u32)m * 1000, tid = tgid + 1 + (__u32)c;
			__u32 otgid = 3000000 + (__u32)((m + 1) % vms) * 1000, other = otgid + 1, cpu = (__u32)c % 64;

			for (int r = 0; r < 6 && !err; r++) {
				err = inject(vs, VCPUSTAT_EV_KVM_EXIT, (*ts += 100), cpu, tid, tgid, 0, 0, reasons[r],
					     KVM_ISA_VMX);
				if (!err)
					err = inject(vs, VCPUSTAT_EV_KVM_ENTRY, (*ts += 900 + (__u64)r * 50), cpu, tid,
						     tgid, 0, 0, (__u64)c, 0);
			}
			for (int u = 0; u < 2 && !err; u++) {
				err = inject(vs, VCPUSTAT_EV_USERSPACE_EXIT, (*ts += 100), cpu, tid, tgid, 0, 0,
					     u ? 5 : 2, 0);
				if (!err)
					err = inject(vs, VCPUSTAT_EV_KVM_RUN, (*ts += 3000), cpu, tid, tgid, 0, 0, 0, 0);
			}
			if (!err)
				err = inject(vs, VCPUSTAT_EV_SWITCH, (*ts += 100), cpu, tid, tgid, other, otgid, 0, 1);
			if (!err)
				err = inject(vs, VCPUSTAT_EV_SWITCH, (*ts += 5000), cpu, other, otgid, tid, tgid, 0, 1);
		}
	return err;
}

/* One GET over a fresh connection: 0 and the body size, or -1. */
static int get(int port, const char *path, const char *accept, size_t *bytes)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static char buf[1 << 20];
	char req[512];
	int s = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	*bytes = 0;
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%sConnection: close\r\n\r\n", path,
		 accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : "");
	if (write(s, req, strlen(req)) < 0) {
		close(s);
		return -1;
	}
	while ((n = read(s, buf, sizeof(buf))) > 0)
		*bytes += (size_t)n;
	close(s);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct phase {
	const char *name, *path, *accept;
};

static const struct phase phases[] = {
	{ "HTTP floor: 404, no map read (baseline)", "/nothing", NULL },
	{ "scrape /metrics, Prometheus text", "/metrics", NULL },
	{ "scrape /metrics, OpenMetrics", "/metrics", "application/openmetrics-text;version=1.0.0" },
	{ "scrape /metrics?format=json", "/metrics?format=json", NULL },
};
#define NR_PHASES (sizeof(phases) / sizeof(phases[0]))

/* The client: each phase, n scrapes, tells the server side before and after; latencies on stdout. */
static void client(int port, int n, int to_server, int from_server)
{
	double *lat = calloc((size_t)n, sizeof(double));
	char c;

	for (size_t p = 0; p < NR_PHASES; p++) {
		size_t bytes = 0;

		if (write(to_server, "s", 1) != 1 || read(from_server, &c, 1) != 1)
			_exit(1);
		for (int i = 0; i < n; i++) {
			double t0 = now_ms(CLOCK_MONOTONIC);

			if (get(port, phases[p].path, phases[p].accept, &bytes))
				_exit(1);
			lat[i] = now_ms(CLOCK_MONOTONIC) - t0;
		}
		if (write(to_server, "e", 1) != 1 || read(from_server, &c, 1) != 1)
			_exit(1);
		qsort(lat, (size_t)n, sizeof(double), cmp_double);
		printf("%-44s latency median %6.2f ms, p90 %6.2f ms, max %6.2f ms  (%zu bytes)\n", phases[p].name,
		       lat[n / 2], lat[n * 9 / 10], lat[n - 1], bytes);
		fflush(stdout);
	}
	free(lat);
	_exit(0);
}

int main(int argc, char **argv)
{
	struct vcpustat_options opts = { .max_hists = 16384, .max_vcpus = 16384, .max_vms = 4096 };
	struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS };
	struct httpd_opts ho = { .cache_ms = 0 };
	struct vcpustat_error err = { 0 };
	int vms = 50, vcpus = 20, n = 100, c, fd, port, up[2], down[2];
	bool keep_heap = true;
	struct metrics_live live;
	struct httpd_source src;
	struct httpd *httpd;
	struct vcpustat *vs;
	__u64 ts = 1000000;
	double t0, maps = 0, model = 0, render = 0;
	size_t bytes = 0;
	pid_t pid;

	while ((c = getopt(argc, argv, "v:c:n:NKh")) != -1) {
		switch (c) {
		case 'v': vms = atoi(optarg); break;
		case 'c': vcpus = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'N': mo.no_vcpu_labels = true; break;
		case 'K': keep_heap = false; break;
		default:
			fprintf(stderr, "usage: %s [-v VMS] [-c VCPUS_PER_VM] [-n SCRAPES] [-N] [-K]\n", argv[0]);
			return 2;
		}
	}
	if (vms < 1 || vcpus < 1 || n < 10) {
		fprintf(stderr, "exporter-bench: VMS and VCPUS >= 1, SCRAPES >= 10\n");
		return 2;
	}
	if (keep_heap)
		heap_keep(); /* as vcpustat does */
	if (vcpustat_open(&vs, &opts)) {
		fprintf(stderr, "exporter-bench: cannot load the BPF object (root needed)\n");
		return 1;
	}
	if (simulate(vs, vms, vcpus, &ts) || simulate(vs, vms, vcpus, &ts)) {
		fprintf(stderr, "exporter-bench: injection failed\n");
		return 1;
	}
	if (metrics_live_init(&live, vs, &mo, NULL)) {
		fprintf(stderr, "exporter-bench: out of memory\n");
		return 1;
	}
	metrics_live_sample(&live);

	/* the steps of one scrape, in this thread */
	for (int i = 0; i < n; i++) {
		struct vcpustat_snapshot snap;
		char *buf;
		size_t len;

		t0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
		vcpustat_snapshot(vs, &snap);
		maps += now_ms(CLOCK_PROCESS_CPUTIME_ID) - t0;
		vcpustat_snapshot_free(&snap);
		t0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
		metrics_live_sample(&live); /* maps again + window model + counters */
		model += now_ms(CLOCK_PROCESS_CPUTIME_ID) - t0;
		t0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
		metrics_render_sized(live.m, METRICS_PROMETHEUS, bytes, &buf, &len); /* as serve: the last size */
		render += now_ms(CLOCK_PROCESS_CPUTIME_ID) - t0;
		bytes = len;
		free(buf);
	}
	printf("%d vCPUs (%d VMs x %d), %zu histograms, %s vCPU labels%s: %zu bytes of Prometheus text\n", vms * vcpus,
	       vms, vcpus, live.w.prev.nr_hists, mo.no_vcpu_labels ? "without" : "with",
	       keep_heap ? "" : ", without heap_keep()", bytes);
	printf("%-44s %6.2f ms CPU\n", "maps only (vcpustat_snapshot, baseline)", maps / n);
	printf("%-44s %6.2f ms CPU\n", "maps + window model + counters", model / n);
	printf("%-44s %6.2f ms CPU\n", "rendering the Prometheus text", render / n);
	fflush(stdout);

	/* end to end over HTTP */
	if (httpd_listen("127.0.0.1:0", &fd, &err)) {
		fprintf(stderr, "exporter-bench: %s\n", err.msg);
		return 1;
	}
	{
		struct sockaddr_in a;
		socklen_t len = sizeof(a);

		getsockname(fd, (struct sockaddr *)&a, &len);
		port = ntohs(a.sin_port);
	}
	src = metrics_live_source(&live);
	if (httpd_start(&httpd, fd, &src, &ho, &err)) {
		fprintf(stderr, "exporter-bench: %s\n", err.msg);
		return 1;
	}
	if (pipe(up) || pipe(down))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		client(port, n, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	for (size_t p = 0; p < NR_PHASES; p++) {
		double cpu0, cpu1;
		char ch;

		if (read(up[0], &ch, 1) != 1)
			break;
		cpu0 = proc_cpu_ms();
		if (write(down[1], "g", 1) != 1 || read(up[0], &ch, 1) != 1)
			break;
		cpu1 = proc_cpu_ms();
		printf("%-44s exporter CPU %6.2f ms per request\n", phases[p].name, (cpu1 - cpu0) / n);
		fflush(stdout);
		if (write(down[1], "g", 1) != 1)
			break;
	}
	waitpid(pid, NULL, 0);
	httpd_stop(httpd);
	metrics_live_free(&live);
	vcpustat_close(vs);
	return 0;
}
