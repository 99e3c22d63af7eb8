/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * httpd.h - the Prometheus exporter's HTTP side (libmicrohttpd): /metrics in
 * Prometheus text or OpenMetrics (Accept header), and a small HTML page at /.
 * Every scrape reads the maps afresh (metrics_live_sample) unless another
 * one did within cache_ms; requests are served one at a time by the
 * server's own thread.
 */
#ifndef VCPUSTAT_HTTPD_H
#define VCPUSTAT_HTTPD_H

#include <stdbool.h>
#include "error.h"
#include "metrics.h"

#define HTTPD_DEFAULT_LISTEN "127.0.0.1:9477"

struct httpd_opts {
	unsigned int cache_ms; /* scrapes within this of the last sample reuse it (0: always sample) */
	const char *user;      /* shown on the page: the user it runs as (NULL: not shown) */
};

struct httpd;

/*
 * Bind and listen on addr: "HOST:PORT" ("127.0.0.1:9477", "localhost:9477"),
 * "[V6ADDR]:PORT", or ":PORT" (every interface); port 0: any free port. *fd is the socket. A port
 * in use is -EADDRINUSE with one sentence in err.
 */
int httpd_listen(const char *addr, int *fd, struct vcpustat_error *err);

/* Serve l on the listening socket fd (taken over) from a thread of its own. */
int httpd_start(struct httpd **h, int fd, struct metrics_live *l, const struct httpd_opts *o,
		struct vcpustat_error *err);

/*
 * Sample the maps now, under the server's lock, unless a scrape did within
 * cache_ms: keeps the kernel's tables of exited vCPUs and VMs drained
 * between rare scrapes. Returns 0 or the sampling error.
 */
int httpd_refresh(struct httpd *h);

/* The address it listens on, as HOST:PORT (the port chosen by the kernel for port 0). */
const char *httpd_address(const struct httpd *h);

/* Number of /metrics responses served and of failed samples. */
void httpd_stats(struct httpd *h, unsigned long *scrapes, unsigned long *errors);

/* Stop the server and close its socket. NULL is fine. */
void httpd_stop(struct httpd *h);

/* Which format an HTTP Accept header asks for: OpenMetrics or Prometheus text (exposed for tests). */
enum metrics_format httpd_negotiate(const char *accept);

#endif
