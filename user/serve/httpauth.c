// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * httpauth.c - basic auth for the exporter's HTTP server (serve/serve.h): the
 * bcrypts in a worker thread, the requests waiting for them suspended, the
 * wrong passwords counted per client address.
 *
 * A request's check (struct auth_job) is in one of three states: queued,
 * running (the worker has it) or done. The server's thread makes it, the
 * worker runs it and resumes its connection, the server's thread reads its
 * outcome and frees it when the request is completed; a job whose request
 * completes while the worker has it is orphaned, and the worker frees it.
 * The queue and the states are under a->lock; the table of addresses is
 * the server thread's alone (the handler and the completion callback).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <crypt.h>
#include <microhttpd.h>
#include "serve/serve.h"

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct address_key {
	unsigned char bytes[16]; /* an IPv4 address, or an IPv6 address's first 64 bits */
	unsigned char family;
};

struct auth_job {
	struct auth_job *next;
	struct MHD_Connection *conn;
	struct web_check check;
	struct address_key from;
	enum job_state state;
	bool ok, aborted, resumed, orphaned, settled;
};

struct address {
	struct address_key key;
	unsigned long long seen, window_start, blocked_until; /* seconds, CLOCK_MONOTONIC */
	unsigned int failures, pending;
	bool used;
};

struct httpauth {
	struct web_config *web;
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct auth_job *head, *tail, *running;
	unsigned int queued, refs;
	bool stopping;
	struct crypt_data *cd; /* the worker's */
	struct address addresses[WEB_AUTH_ADDRESSES];
};

static unsigned long long now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec;
}

static void job_free(struct auth_job *j)
{
	web_check_end(&j->check, false);
	free(j);
}

/* a->refs dropped under a->lock; the last one frees a. */
static void put_locked(struct httpauth *a)
{
	bool last = --a->refs == 0;

	pthread_mutex_unlock(&a->lock);
	if (!last)
		return;
	pthread_cond_destroy(&a->work);
	pthread_mutex_destroy(&a->lock);
	if (a->cd)
		explicit_bzero(a->cd, sizeof(*a->cd));
	free(a->cd);
	free(a);
}

static void *worker(void *arg)
{
	struct httpauth *a = arg;
	struct auth_job *j;
	bool ok;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->stopping && !a->head)
			pthread_cond_wait(&a->work, &a->lock);
		if (a->stopping)
			break;
		j = a->head;
		a->head = j->next;
		if (!a->head)
			a->tail = NULL;
		a->queued--;
		j->state = JOB_RUNNING;
		a->running = j;
		pthread_mutex_unlock(&a->lock);
		ok = web_check_bcrypt(&j->check, a->cd); /* touches j->check and a->cd alone */
		pthread_mutex_lock(&a->lock);
		a->running = NULL;
		j->ok = ok;
		j->state = JOB_DONE;
		if (j->orphaned) {
			job_free(j);
		} else if (!j->resumed) {
			j->resumed = true;
			MHD_resume_connection(j->conn); /* the daemon lives: httpauth_stop() has not run */
		}
	}
	put_locked(a);
	return NULL;
}

int httpauth_new(struct httpauth **out, struct web_config *web)
{
	struct httpauth *a = calloc(1, sizeof(*a));
	pthread_attr_t attr;
	pthread_t t;
	int e;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->cd = calloc(1, sizeof(*a->cd));
	if (!a->cd) {
		free(a);
		return -ENOMEM;
	}
	a->web = web;
	a->refs = 2; /* the server's and the worker's */
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_attr_init(&attr);
	/* detached: a bcrypt of cost 20 takes a minute, and stopping waits for none */
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&t, &attr, worker, a);
	pthread_attr_destroy(&attr);
	if (e) {
		pthread_cond_destroy(&a->work);
		pthread_mutex_destroy(&a->lock);
		free(a->cd);
		free(a);
		return -e;
	}
	*out = a;
	return 0;
}

/* ---- addresses ---- */

static struct address_key key_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct address_key k = {0};
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (sa && sa->sa_family == AF_INET) {
		k.family = AF_INET;
		memcpy(k.bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			k.family = AF_INET;
			memcpy(k.bytes, &a6->s6_addr[12], 4);
		} else {
			k.family = AF_INET6;
			memcpy(k.bytes, a6->s6_addr, 8); /* a /64: one host's addresses are many */
		}
	}
	return k;
}

/* The entry of k; create: make one (forgetting the least recently seen address without checks waiting). */
static struct address *address(struct httpauth *a, const struct address_key *k, bool create)
{
	struct address *free_slot = NULL, *oldest = NULL;

	for (unsigned int i = 0; i < WEB_AUTH_ADDRESSES; i++) {
		struct address *e = &a->addresses[i];

		if (!e->used) {
			if (!free_slot)
				free_slot = e;
			continue;
		}
		if (!memcmp(&e->key, k, sizeof(*k)))
			return e;
		if (!e->pending && (!oldest || e->seen < oldest->seen))
			oldest = e;
	}
	if (!create)
		return NULL;
	if (!free_slot)
		free_slot = oldest;
	if (free_slot) {
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->key = *k;
		free_slot->used = true;
	}
	return free_slot; /* NULL: every address has checks waiting (the queue's bound holds anyway) */
}

/* A wrong password from e. */
static void failed(struct address *e, unsigned long long now)
{
	if (now - e->window_start >= WEB_AUTH_WINDOW_S) {
		e->window_start = now;
		e->failures = 0;
	}
	if (++e->failures >= WEB_AUTH_FAILURES) {
		e->blocked_until = now + WEB_AUTH_BACKOFF_S;
		e->failures = 0;
		e->window_start = now;
	}
}

/* A job's end, counted once at its address: a check no longer waiting, its outcome if it had one. */
static void settle(struct httpauth *a, struct auth_job *j)
{
	struct address *e;

	if (j->settled)
		return;
	j->settled = true;
	e = address(a, &j->from, false);
	if (!e)
		return;
	if (e->pending)
		e->pending--;
	if (j->state != JOB_DONE || j->aborted)
		return;
	if (j->ok)
		e->failures = 0;
	else
		failed(e, now_s());
}

/* ---- requests ---- */

/* The second call, after the worker (or httpauth_stop()) resumed the connection. */
static enum httpauth_outcome outcome(struct httpauth *a, struct auth_job *j)
{
	bool done, ok;

	pthread_mutex_lock(&a->lock);
	done = j->state == JOB_DONE && !j->aborted;
	ok = j->ok;
	pthread_mutex_unlock(&a->lock);
	if (!done)
		return HTTPAUTH_BUSY; /* stopping */
	settle(a, j);
	if (ok)
		web_check_end(&j->check, true); /* remembered: the next scrape needs no bcrypt */
	return ok ? HTTPAUTH_PASS : HTTPAUTH_DENIED;
}

/* The credentials' check: from memory, or queued (the request suspended). */
static enum httpauth_outcome start(struct httpauth *a, struct MHD_Connection *c, void **con_cls, unsigned int *retry_s)
{
	const char *value = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	unsigned long long now = now_s();
	struct auth_job *j;
	struct address *e;
	struct web_check k;
	enum web_verdict v;
	struct address_key from;
	size_t len, colon;
	char *cred;

	if (web_basic_decode(value, &cred, &len, &colon))
		return HTTPAUTH_DENIED; /* none, or not basic: nothing was tried */
	v = web_check_begin(a->web, cred, colon, cred + colon + 1, len - colon - 1, &k);
	web_basic_free(cred, len);
	if (v == WEB_ALLOWED)
		return HTTPAUTH_PASS;
	from = key_of(c);
	e = address(a, &from, true);
	if (e)
		e->seen = now;
	if (v == WEB_REFUSED) {
		if (e)
			failed(e, now);
		return HTTPAUTH_DENIED;
	}
	if (e && e->blocked_until > now) {
		web_check_end(&k, false);
		*retry_s = (unsigned int)(e->blocked_until - now);
		return HTTPAUTH_LIMITED;
	}
	if (e && e->pending >= WEB_AUTH_PENDING) {
		web_check_end(&k, false);
		*retry_s = 1;
		return HTTPAUTH_LIMITED;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		web_check_end(&k, false);
		return HTTPAUTH_BUSY;
	}
	j->conn = c;
	j->check = k;
	j->from = from;
	pthread_mutex_lock(&a->lock);
	if (a->stopping || a->queued >= WEB_AUTH_QUEUE) {
		pthread_mutex_unlock(&a->lock);
		job_free(j);
		return HTTPAUTH_BUSY;
	}
	if (a->tail)
		a->tail->next = j;
	else
		a->head = j;
	a->tail = j;
	a->queued++;
	/* suspended before the worker may resume it: a->lock is held until both are done */
	MHD_suspend_connection(c);
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	if (e)
		e->pending++;
	else
		j->settled = true;
	*con_cls = j;
	return HTTPAUTH_WAIT;
}

enum httpauth_outcome httpauth_request(struct httpauth *a, struct MHD_Connection *c, void **con_cls,
				       unsigned int *retry_s)
{
	*retry_s = 0;
	if (*con_cls)
		return outcome(a, *con_cls);
	return start(a, c, con_cls, retry_s);
}

void httpauth_completed(struct httpauth *a, void **con_cls)
{
	struct auth_job *j = *con_cls;

	if (!j)
		return;
	*con_cls = NULL;
	settle(a, j);
	pthread_mutex_lock(&a->lock);
	if (j->state == JOB_RUNNING) {
		j->orphaned = true; /* the worker frees it */
		j = NULL;
	}
	pthread_mutex_unlock(&a->lock);
	if (j)
		job_free(j); /* done (httpauth_stop() leaves nothing queued) */
}

void httpauth_stop(struct httpauth *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	while (a->head) {
		struct auth_job *j = a->head;

		a->head = j->next;
		j->state = JOB_DONE;
		j->aborted = true;
		j->resumed = true;
		MHD_resume_connection(j->conn);
	}
	a->tail = NULL;
	a->queued = 0;
	if (a->running && !a->running->resumed) {
		a->running->resumed = true;
		MHD_resume_connection(a->running->conn);
	}
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->lock);
}

void httpauth_free(struct httpauth *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	put_locked(a);
}
