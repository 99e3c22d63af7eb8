// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exporter's cached renderings (user/serve/httpd.c): a response is sent
 * from the rendering itself, not from a copy, so a rendering that a newer
 * sample replaces must live until the last response sending it is done. A
 * slow client starts receiving a 1,000-vCPU body, other clients scrape (each
 * scrape samples anew and replaces the rendering), then the slow client reads
 * the rest: its body must be whole and well-formed (and, under ASan, no freed
 * memory read). The JSON rendering is the writer's own buffer, handed over:
 * each scrape's body must be one whole document. Root and BPF (the injection
 * program makes the vCPUs).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <jansson.h>
#include "live/live.h"
#include "helpers.h"

#define VMS 50
#define VCPUS 20

/* VMS x VCPUS vCPUs, each with an exit and a preemption, through the kernel's handler. */
static struct vcpustat *vcpus_injected(void)
{
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_NONE, .max_vcpus = 4096 };
	struct vcpustat *vs;
	__u64 ts = 1000000;

	cr_assert_eq(vcpustat_open(&vs, &o), 0);
	for (__u32 m = 0; m < VMS; m++)
		for (__u32 c = 0; c < VCPUS; c++) {
			struct vcpustat_event e = { .cpu = c % 2, .tgid = 200000 + m * 100 };

			e.tid = e.tgid + 1 + c;
			snprintf(e.comm, sizeof(e.comm), "CPU %u/KVM", c);
			e.type = VCPUSTAT_EV_KVM_EXIT, e.ts = ts += 100, e.arg0 = 30, e.arg1 = KVM_ISA_VMX, e.arg2 = c;
			cr_assert_eq(vcpustat_inject(vs, &e), 0);
			e.type = VCPUSTAT_EV_KVM_ENTRY, e.ts = ts += 900, e.arg0 = c, e.arg1 = 0, e.arg2 = 0;
			cr_assert_eq(vcpustat_inject(vs, &e), 0);
			/* preempted by a thread of no VM, then back */
			e.type = VCPUSTAT_EV_SWITCH, e.ts = ts += 100, e.tid2 = 99, e.tgid2 = 99, e.arg0 = 0, e.arg1 = 1,
			e.arg2 = 1;
			cr_assert_eq(vcpustat_inject(vs, &e), 0);
			e.ts = ts += 5000, e.tid2 = e.tid, e.tgid2 = e.tgid, e.tid = 99, e.tgid = 99;
			cr_assert_eq(vcpustat_inject(vs, &e), 0);
		}
	return vs;
}

static int connect_to(int port, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(s, 0);
	if (rcvbuf) /* before connect: the window the server may fill */
		cr_assert_eq(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	cr_assert_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
	return s;
}

static void send_get(int s, bool openmetrics)
{
	char req[256];
	int n = snprintf(req, sizeof(req), "GET /metrics%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n",
			 openmetrics ? "" : "?format=json",
			 openmetrics ? "Accept: application/openmetrics-text;version=1.0.0\r\n" : "");

	cr_assert_eq(write(s, req, (size_t)n), n);
}

/* The rest of a response into *buf (grown), after the len bytes already there. */
static size_t read_rest(int s, char **buf, size_t len, size_t *cap)
{
	ssize_t n;

	for (;;) {
		if (*cap - len < 65536) {
			*cap = *cap ? *cap * 2 : 1 << 20;
			*buf = realloc(*buf, *cap);
			cr_assert_not_null(*buf);
		}
		n = read(s, *buf + len, *cap - len - 1);
		cr_assert_geq(n, 0, "read: %s", strerror(errno));
		if (!n)
			break;
		len += (size_t)n;
	}
	(*buf)[len] = 0;
	return len;
}

/* The body of a whole 200 response whose Content-Length is what came, of more than min bytes. */
static const char *whole_body(const char *what, const char *resp, size_t len, size_t min)
{
	const char *body = strstr(resp, "\r\n\r\n"), *cl = strcasestr(resp, "\r\nContent-Length: ");

	cr_assert(!strncmp(resp, "HTTP/1.1 200", 12), "%s: %.80s", what, resp);
	cr_assert(body && cl && cl < body, "%s: no Content-Length", what);
	body += 4;
	cr_assert_eq(strtoull(cl + 18, NULL, 10), len - (size_t)(body - resp), "%s: Content-Length against the body", what);
	cr_assert(len - (size_t)(body - resp) > min, "%s: only %zu bytes", what, len - (size_t)(body - resp));
	return body;
}

/* A whole 200 response in OpenMetrics: the body ends with # EOF, every line a sample, comment or blank-free. */
static void expect_whole(const char *what, const char *resp, size_t len)
{
	const char *body = whole_body(what, resp, len, 500000);
	size_t n_lines = 0;

	cr_assert(!strcmp(resp + len - 6, "# EOF\n"), "%s: does not end with # EOF", what);
	for (const char *l = body; *l; l = strchr(l, '\n') + 1, n_lines++) {
		cr_assert(*l == '#' || !strncmp(l, "vcpustat_", 9), "%s: line %zu is %.60s", what, n_lines + 1, l);
		cr_assert_not_null(strchr(l, '\n'), "%s: line %zu unterminated", what, n_lines + 1);
	}
}

/*
 * The exporter on 127.0.0.1 (a free port, returned) over the injected vCPUs,
 * sampling and rendering anew at every scrape; sndbuf (0: the kernel's) for
 * each connection.
 */
static int serve_injected(struct vcpustat **vs, struct metrics_live *live, struct httpd **h, int sndbuf)
{
	struct metrics_opts mo = { .top_culprits = METRICS_TOP_CULPRITS };
	struct httpd_opts ho = { .cache_ms = 0 };
	struct vcpustat_error err = { 0 };
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd;

	*vs = vcpus_injected();
	cr_assert_eq(metrics_live_init(live, *vs, &mo, NULL), 0);
	cr_assert_eq(httpd_listen("127.0.0.1:0", &fd, &err), 0, "%s", err.msg);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	if (sndbuf) /* accepted sockets inherit it */
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	{
		struct httpd_source src = metrics_live_source(live);

		cr_assert_eq(httpd_start(h, fd, &src, &ho, &err), 0, "%s", err.msg);
	}
	return ntohs(a.sin_port);
}

static void stop_serving(struct vcpustat *vs, struct metrics_live *live, struct httpd *h)
{
	httpd_stop(h);
	metrics_live_free(live);
	vcpustat_close(vs);
}

Test(serve_cache, a_replaced_rendering_lives_until_its_last_response_is_sent, .timeout = 120)
{
	struct metrics_live live;
	struct httpd *h;
	struct vcpustat *vs;
	char *slow_buf = NULL, *buf = NULL;
	size_t slow_len, slow_cap = 0, cap = 0;
	int port, slow;

	SKIP_UNLESS(bpf_unavailable());
	/* small send buffers on the connections: otherwise the kernel takes a whole body at once */
	port = serve_injected(&vs, &live, &h, 16384);

	/* the slow client: a small window, and it reads the first bytes only */
	slow = connect_to(port, 4096);
	send_get(slow, true);
	slow_cap = 1 << 20;
	slow_buf = malloc(slow_cap);
	cr_assert_not_null(slow_buf);
	slow_len = (size_t)read(slow, slow_buf, 4096);
	cr_assert_gt(slow_len, 0);
	/* meanwhile: scrapes that each replace the rendering the slow one is being sent */
	for (int i = 0; i < 6; i++) {
		int s = connect_to(port, 0);
		size_t len;
		char what[32];

		send_get(s, true);
		len = read_rest(s, &buf, 0, &cap);
		close(s);
		snprintf(what, sizeof(what), "scrape %d", i + 1);
		expect_whole(what, buf, len);
	}
	slow_len = read_rest(slow, &slow_buf, slow_len, &slow_cap);
	close(slow);
	expect_whole("the slow client", slow_buf, slow_len);

	stop_serving(vs, &live, h);
	free(buf);
	free(slow_buf);
}

/*
 * JSON scrapes: each renders anew into a writer that reserves the size of the
 * last rendering and hands its buffer over as the body. Each body is one
 * whole document of every VM, the same size each time (the same sample
 * rendered: nothing dropped, nothing left over from the last one).
 */
Test(serve_cache, json_renderings_handed_over_are_whole_documents, .timeout = 120)
{
	struct metrics_live live;
	struct httpd *h;
	struct vcpustat *vs;
	char *buf = NULL;
	size_t cap = 0, first_len = 0;
	int port;

	SKIP_UNLESS(bpf_unavailable());
	port = serve_injected(&vs, &live, &h, 0);
	for (int i = 0; i < 3; i++) {
		int s = connect_to(port, 0);
		size_t len, body_len;
		const char *body;
		char what[32];
		json_error_t je;
		json_t *doc, *vms;

		send_get(s, false);
		len = read_rest(s, &buf, 0, &cap);
		close(s);
		snprintf(what, sizeof(what), "JSON scrape %d", i + 1);
		body = whole_body(what, buf, len, 400000);
		body_len = len - (size_t)(body - buf);
		cr_assert_eq(body[body_len - 1], '\n', "%s: the document ends its line", what);
		doc = json_loadb(body, body_len, JSON_REJECT_DUPLICATES, &je);
		cr_assert_not_null(doc, "%s: %s at offset %d", what, je.text, je.position);
		vms = json_object_get(doc, "vms");
		cr_assert_eq(json_array_size(vms), VMS, "%s", what);
		for (size_t v = 0; v < VMS; v++)
			cr_assert_eq(json_array_size(json_object_get(json_array_get(vms, v), "vcpus")), VCPUS, "%s: VM %zu", what, v);
		json_decref(doc);
		/* the injected vCPUs are all there is, and nothing moves between scrapes but the clock's digits */
		if (!i)
			first_len = body_len;
		else
			cr_expect_lt(body_len > first_len ? body_len - first_len : first_len - body_len, 4096,
				     "%s: %zu bytes, the first %zu", what, body_len, first_len);
	}
	stop_serving(vs, &live, h);
	free(buf);
}
