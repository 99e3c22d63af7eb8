// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * session.c - the exporter's session (`vcpustat serve`) over any source of
 * samples: what is checked before anything is loaded (the user to become,
 * the web configuration, the port), then the HTTP server over the source,
 * privileges dropped, and a sample at least every refresh interval between
 * scrapes. live/serve.c puts the live maps behind it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "serve/serve.h"

int serve_prepare(struct serve *s, const struct serve_opts *o, struct vcpustat_error *err)
{
	int e;

	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->fd = -1;
	s->ho.cache_ms = o->cache_ms;
	if (o->user && geteuid() != 0)
		return verror(err, -EINVAL, "--user %s: only root can switch users (start as root, or drop --user)",
			      o->user);
	if (o->user && privdrop_check_user(o->user, err))
		return -EINVAL;
	/* read while still root (the key can be root's alone), checked before anything is loaded */
	if (o->web_file) {
		if (web_config_load(&s->web, o->web_file, err))
			return -EINVAL;
		s->ho.web = &s->web;
	}
	/* the port first: a port in use is refused before anything is loaded */
	e = httpd_listen(o->listen, &s->fd, err);
	if (e)
		web_config_free(&s->web);
	return e;
}

bool serve_auth_in_clear(const struct serve *s)
{
	return s->web.nr_users && !s->web.cert_pem;
}

int serve_start(struct serve *s, const struct httpd_source *src, struct vcpustat_error *err)
{
	int e;

	/* before any thread starts: capabilities are per thread */
	if (s->o.user && privdrop_to_user(s->o.user, err))
		return -EPERM;
	s->ho.user = s->o.user;
	e = httpd_start(&s->httpd, s->fd, src, &s->ho, err);
	s->fd = -1; /* the server's now, or closed by its failure */
	if (e)
		return e;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void serve_describe(const struct serve *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s://%s/metrics%s%s%s", s->web.cert_pem ? "https" : "http", httpd_address(s->httpd),
		 s->web.nr_users ? " (basic auth)" : "", s->o.user ? " as user " : "", s->o.user ? s->o.user : "");
}

void serve_run(struct serve *s, volatile const sig_atomic_t *stop, void (*warn)(const char *fmt, ...))
{
	while (!*stop) {
		struct timespec ts = { .tv_sec = (time_t)s->o.refresh,
				       .tv_nsec = (long)((s->o.refresh - (double)(time_t)s->o.refresh) * 1e9) };
		int e;

		nanosleep(&ts, NULL); /* a signal ends it early */
		if (*stop)
			break;
		e = httpd_refresh(s->httpd);
		if (e)
			warn("cannot read %s: %s", httpd_what(s->httpd), strerror(-e));
	}
}

void serve_stop(struct serve *s)
{
	httpd_stop(s->httpd);
	if (s->fd >= 0)
		close(s->fd);
	web_config_free(&s->web);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}
