// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trace.c - one reader over ftrace text (ftrace.c), LTTng CTF (ctf.c),
 * trace-cmd trace.dat (tracedat.c) and vcpustat's own captures
 * (record/capture.c: the events the kernel's handler ran on, as they are).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "import/ctf_internal.h"
#include "import/import.h"
#include "import/tracedat_internal.h"
#include "record/record.h"

struct trace_reader {
	enum trace_format fmt;
	char *path;
	struct trace_opts o;
	struct trace_stats st;
	/* ftrace text: the whole file, mapped (or read, for a pipe) */
	const char *buf;
	size_t len, pos;
	void *map;
	char *owned;
	struct ftrace_parser ps;
	struct ahead *ahead; /* parsing ahead in a second thread (large files) */
	/* CTF */
	struct ctf_reader *ctf;
	/* trace-cmd trace.dat */
	struct tracedat_reader *dat;
	/* a vcpustat capture (record --capture) */
	struct capture_reader *cap;
};

/*
 * Parsing ahead: for large ftrace files, a second thread parses lines into
 * chunks of events while the caller consumes the previous ones (parsing is
 * half of an import's time, the handler and the SHT writer the other half).
 * The producer owns the parse position, the parser and running statistics;
 * each chunk carries a copy of the statistics as of its last line, and the
 * error (file:line) that ended it, if any. Events come out in file order,
 * exactly as from the single-threaded path.
 */
#define AHEAD_MIN_BYTES (8u << 20)
#define AHEAD_EVENTS 8192
#define AHEAD_SLOTS 4

struct chunk {
	struct trace_event ev[AHEAD_EVENTS];
	size_t n;
	struct trace_stats st; /* totals after its last line */
	int err;	       /* the error that ended the file, 0 if none */
	char msg[512];
	bool end;	       /* no chunk after this one */
};

struct ahead {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct chunk *slot[AHEAD_SLOTS];
	size_t head, count; /* ring of filled chunks, consumer at head */
	bool stop;
	bool taken;	    /* the consumer holds slot[head] */
	size_t next;	    /* its next event */
};

/* A trace read from a pipe or a device is kept in memory: at most this much. */
#define TRACE_PIPE_LIMIT ((size_t)4 << 30)

/* Refuse what is certainly not ftrace text, saying what it is. */
static int check_text(const struct trace_reader *r, struct vcpustat_error *err)
{
	size_t n = r->len < 4096 ? r->len : 4096;
	static const char tracedat[] = "\027\010\104tracing";
	static const unsigned char ctf_packet[] = { 0xc1, 0x1f, 0xfc, 0xc1 };

	if (n >= sizeof(tracedat) - 1 && !memcmp(r->buf, tracedat, sizeof(tracedat) - 1))
		return verror(err, -EINVAL,
			      "%s: a trace-cmd binary trace (trace.dat) read as a stream: give it as a file "
			      "(libtracecmd reads it at any offset)",
			      r->path);
	if (n >= 4 && !memcmp(r->buf, ctf_packet, 4))
		return verror(err, -EINVAL, "%s: a CTF stream file: give the CTF trace's directory instead", r->path);
	if (n >= 8 && !memcmp(r->buf, "vcpuSHT\n", 8))
		return verror(err, -EINVAL, "%s: a vcpustat state history file (.sht), not a trace", r->path);
	if (memchr(r->buf, '\0', n))
		return verror(err, -EINVAL, "%s: a binary file (NUL bytes in its first %zu bytes), not ftrace text",
			      r->path, n);
	return 0;
}

static int open_text(struct trace_reader *r, struct vcpustat_error *err)
{
	struct stat st;
	int fd, e;

	fd = strcmp(r->path, "-") ? open_input(r->path, false, err) : STDIN_FILENO;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		e = -errno;
		goto out;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		r->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (r->map == MAP_FAILED) {
			r->map = NULL;
			e = -errno;
			goto out;
		}
		madvise(r->map, (size_t)st.st_size, MADV_SEQUENTIAL);
		r->buf = r->map;
		r->len = (size_t)st.st_size;
		e = 0;
	} else if (S_ISREG(st.st_mode)) {
		r->buf = "";
		r->len = 0;
		e = 0;
	} else { /* a pipe or a device: bounded, and not text if it starts with NUL bytes (/dev/zero) */
		e = read_bounded(fd, strcmp(r->path, "-") ? r->path : "<stdin>", TRACE_PIPE_LIMIT, &r->owned, &r->len, err);
		r->buf = r->owned;
		if (e) {
			if (fd != STDIN_FILENO)
				close(fd);
			return e;
		}
	}
out:
	if (fd != STDIN_FILENO)
		close(fd);
	if (e)
		return verror(err, e, "%s: %s", r->path, strerror(-e));
	return check_text(r, err);
}

/* A regular file that starts with a capture's magic (docs/capture-format.md). */
static bool is_capture(const char *path)
{
	char head[8] = { 0 };
	struct stat st;
	int fd;

	if (!strcmp(path, "-") || stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, head, sizeof(head)) != (ssize_t)sizeof(head))
		head[0] = 0;
	close(fd);
	return !memcmp(head, CAPTURE_MAGIC, sizeof(CAPTURE_MAGIC));
}

/*
 * A capture's next event. Its events are the handler's own input, process
 * ids included: the current thread is the event's thread (the previous one
 * of a switch), its process the event's tgid.
 */
static int capture_event(struct trace_reader *r, struct trace_event *te, struct vcpustat_error *err)
{
	char why[160];
	int ret;

	memset(te, 0, sizeof(*te));
	ret = capture_next(r->cap, &te->ev, err);
	if (ret != 1)
		return ret;
	r->st.lines++;
	te->pid = (uint32_t)te->ev.tid;
	te->tgid = te->ev.tgid ? (int64_t)te->ev.tgid : -1;
	memcpy(te->cur_comm, te->ev.comm, sizeof(te->cur_comm));
	te->cur_comm[sizeof(te->cur_comm) - 1] = '\0';
	te->where = r->st.lines;
	if (!trace_cpus_ok(&r->o, &te->ev, why, sizeof(why)))
		return verror(err, -EINVAL, "%s: event %llu: %s", r->path, (unsigned long long)te->where, why);
	return 1;
}

/* Does path look like CTF: a directory, a file named metadata, or CTF metadata text/packets? */
static bool is_ctf(const char *path)
{
	const char *base = strrchr(path, '/');
	char head[8] = { 0 };
	struct stat st;
	int fd;

	if (!strcmp(path, "-") || stat(path, &st))
		return false;
	if (S_ISDIR(st.st_mode))
		return true;
	if (!strcmp(base ? base + 1 : path, "metadata"))
		return true;
	if (!S_ISREG(st.st_mode))
		return false; /* a pipe or a device: read once, as text */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (read(fd, head, sizeof(head)) < 0)
		head[0] = 0;
	close(fd);
	return !memcmp(head, "/* CTF 1", 8) || !memcmp(head, "\x57\x1d\xd1\x75", 4);
}

int trace_open(struct trace_reader **rp, const char *path, const struct trace_opts *opts,
	       struct vcpustat_error *err)
{
	struct trace_reader *r = calloc(1, sizeof(*r));
	int e;

	*rp = NULL;
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return verror(err, -ENOMEM, "out of memory");
	}
	if (opts)
		r->o = *opts;
	ftrace_parser_init(&r->ps, r->o.isa);
	if (is_capture(path)) {
		r->fmt = TRACE_CAPTURE;
		e = capture_open(&r->cap, path, err);
	} else if (tracedat_is(path)) {
		r->fmt = TRACE_TRACEDAT;
		e = tracedat_open(&r->dat, path, &r->o, &r->st, err);
	} else if (is_ctf(path)) {
		r->fmt = TRACE_CTF;
		e = ctf_open(&r->ctf, path, &r->o, &r->st, err);
	} else {
		r->fmt = TRACE_FTRACE;
		e = open_text(r, err);
	}
	if (e) {
		trace_close(r);
		return e;
	}
	*rp = r;
	return 0;
}

#define TRACE_RECORD_CPUS 65536u /* a record's cpu is 16 bits (include/vcpustat_abi.h) */

bool trace_cpus_ok(const struct trace_opts *o, const struct vcpustat_event *ev, char *why, size_t n)
{
	unsigned int max = o->nr_cpus && o->nr_cpus < TRACE_RECORD_CPUS ? o->nr_cpus : TRACE_RECORD_CPUS;
	uint64_t cpu[3] = { ev->cpu };
	const char *what[3] = { "CPU" };
	size_t k = 1;

	if (ev->type == VCPUSTAT_EV_WAKEUP || ev->type == VCPUSTAT_EV_WAKEUP_NEW) {
		cpu[k] = ev->arg0;
		what[k++] = "target_cpu";
	} else if (ev->type == VCPUSTAT_EV_MIGRATE) {
		cpu[k] = ev->arg0;
		what[k++] = "dest_cpu";
		cpu[k] = ev->arg1;
		what[k++] = "orig_cpu";
	}
	for (size_t i = 0; i < k; i++) {
		if (cpu[i] < max)
			continue;
		if (cpu[i] >= TRACE_RECORD_CPUS)
			snprintf(why, n, "%s %llu is out of range: a recording holds CPUs 0 to %u", what[i],
				 (unsigned long long)cpu[i], TRACE_RECORD_CPUS - 1);
		else
			snprintf(why, n, "%s %llu is beyond --cpus %u (CPUs 0 to %u; --cpus %llu or more takes it, "
				 "up to %u)", what[i], (unsigned long long)cpu[i], max, max - 1,
				 (unsigned long long)cpu[i] + 1, TRACE_RECORD_CPUS);
		return false;
	}
	return true;
}

static void keep_message(struct trace_stats *st, const char *msg)
{
	if (st->nmessages < TRACE_KEEP_MESSAGES)
		snprintf(st->messages[st->nmessages++], sizeof(st->messages[0]), "%.255s", msg);
}

static void account(struct trace_stats *st, const struct trace_event *ev)
{
	uint64_t ts = ev->ev.ts;

	if (!st->events++)
		st->first_ns = st->last_ns = ts;
	if (ts < st->last_ns) {
		st->out_of_order++;
		if (st->last_ns - ts > st->max_backstep_ns)
			st->max_backstep_ns = st->last_ns - ts;
	} else {
		st->last_ns = ts;
	}
}

/* The next event of the text at *pos: 1, 0 at the end, or -EINVAL (strict) with err. */
static int parse_next(const struct trace_reader *r, size_t *pos, struct ftrace_parser *ps, struct trace_stats *st,
		      struct trace_event *ev, struct vcpustat_error *err)
{
	while (*pos < r->len) {
		const char *s = r->buf + *pos, *nl = memchr(s, '\n', r->len - *pos);
		size_t n = nl ? (size_t)(nl - s) : r->len - *pos;
		char msg[512];

		*pos += n + (nl ? 1 : 0);
		st->lines++;
		enum ftrace_line kind = ftrace_parse_line(ps, s, n, ev);

		if (kind == FTRACE_EVENT && !trace_cpus_ok(&r->o, &ev->ev, ps->why, sizeof(ps->why)))
			kind = FTRACE_BAD;
		switch (kind) {
		case FTRACE_EVENT:
			ev->where = st->lines;
			account(st, ev);
			return 1;
		case FTRACE_SKIP:
			st->skipped++;
			break;
		case FTRACE_HEADER:
			st->headers++;
			break;
		case FTRACE_LOST:
			st->lost += ps->lost;
			st->lost_lines++;
			break;
		case FTRACE_BAD:
			snprintf(msg, sizeof(msg), "%s:%llu: %s%s", r->path, (unsigned long long)st->lines, ps->why,
				 nl ? "" : " (the last line is cut short: was the file truncated?)");
			if (!r->o.lenient) {
				st->unknown_reasons = ps->unknown_reasons;
				return verror(err, -EINVAL, "%s (--lenient skips malformed lines)", msg);
			}
			st->malformed++;
			keep_message(st, msg);
			break;
		}
	}
	st->unknown_reasons = ps->unknown_reasons;
	return 0;
}

static void *ahead_main(void *arg)
{
	struct trace_reader *r = arg;
	struct ahead *a = r->ahead;
	struct ftrace_parser ps;
	struct trace_stats st = { 0 };
	size_t pos = 0;
	bool end = false;

	ftrace_parser_init(&ps, r->o.isa);
	while (!end) {
		struct vcpustat_error err = { 0 };
		struct chunk *c;
		int ret = 1;

		pthread_mutex_lock(&a->mu);
		while (a->count == AHEAD_SLOTS && !a->stop)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->stop) {
			pthread_mutex_unlock(&a->mu);
			break;
		}
		c = a->slot[(a->head + a->count) % AHEAD_SLOTS];
		pthread_mutex_unlock(&a->mu);
		c->n = 0;
		c->err = 0;
		while (c->n < AHEAD_EVENTS && (ret = parse_next(r, &pos, &ps, &st, &c->ev[c->n], &err)) == 1)
			c->n++;
		end = ret <= 0;
		c->end = end;
		c->err = ret < 0 ? ret : 0;
		snprintf(c->msg, sizeof(c->msg), "%s", err.msg);
		c->st = st;
		pthread_mutex_lock(&a->mu);
		a->count++;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
	}
	return NULL;
}

static void ahead_stop(struct trace_reader *r)
{
	struct ahead *a = r->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	for (size_t i = 0; i < AHEAD_SLOTS; i++)
		free(a->slot[i]);
	free(a);
	r->ahead = NULL;
}

static int ahead_start(struct trace_reader *r)
{
	struct ahead *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < AHEAD_SLOTS; i++)
		if (!(a->slot[i] = malloc(sizeof(struct chunk)))) {
			for (size_t j = 0; j < i; j++)
				free(a->slot[j]);
			free(a);
			return -ENOMEM;
		}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	r->ahead = a;
	if (pthread_create(&a->thread, NULL, ahead_main, r)) {
		pthread_mutex_destroy(&a->mu);
		pthread_cond_destroy(&a->cv);
		for (size_t i = 0; i < AHEAD_SLOTS; i++)
			free(a->slot[i]);
		free(a);
		r->ahead = NULL;
		return -EAGAIN;
	}
	return 0;
}

static int next_ahead(struct trace_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	struct ahead *a = r->ahead;

	for (;;) {
		struct chunk *c = a->slot[a->head];

		if (a->taken) {
			if (a->next < c->n) {
				*ev = c->ev[a->next++];
				return 1;
			}
			if (c->err)
				return verror(err, c->err, "%s", c->msg);
			if (c->end)
				return 0;
			pthread_mutex_lock(&a->mu); /* done with it: the producer may refill it */
			a->head = (a->head + 1) % AHEAD_SLOTS;
			a->count--;
			a->taken = false;
			pthread_cond_broadcast(&a->cv);
			pthread_mutex_unlock(&a->mu);
			continue;
		}
		pthread_mutex_lock(&a->mu);
		while (!a->count)
			pthread_cond_wait(&a->cv, &a->mu);
		pthread_mutex_unlock(&a->mu);
		a->taken = true;
		a->next = 0;
		r->st = a->slot[a->head]->st;
	}
}

static int next_text(struct trace_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	bool threaded = r->o.parse_ahead > 0 || (!r->o.parse_ahead && r->len >= AHEAD_MIN_BYTES);

	if (threaded && !r->ahead && !r->pos && ahead_start(r))
		threaded = false; /* no thread: parse here */
	if (r->ahead)
		return next_ahead(r, ev, err);
	return parse_next(r, &r->pos, &r->ps, &r->st, ev, err);
}

int trace_next(struct trace_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	int ret;

	if (r->fmt == TRACE_FTRACE)
		return next_text(r, ev, err);
	if (r->fmt == TRACE_CAPTURE)
		ret = capture_event(r, ev, err);
	else
		ret = r->fmt == TRACE_CTF ? ctf_next(r->ctf, ev, err) : tracedat_next(r->dat, ev, err);
	if (ret == 1)
		account(&r->st, ev);
	return ret;
}

int trace_rewind(struct trace_reader *r, struct vcpustat_error *err)
{
	memset(&r->st, 0, sizeof(r->st));
	if (r->fmt == TRACE_CTF)
		return ctf_rewind(r->ctf, err);
	if (r->fmt == TRACE_TRACEDAT)
		return tracedat_rewind(r->dat, err);
	if (r->fmt == TRACE_CAPTURE) { /* a capture is read forwards: open it again */
		capture_close_reader(r->cap);
		r->cap = NULL;
		return capture_open(&r->cap, r->path, err);
	}
	ahead_stop(r);
	r->pos = 0;
	ftrace_parser_init(&r->ps, r->o.isa);
	return 0;
}

const struct trace_stats *trace_get_stats(const struct trace_reader *r)
{
	return &r->st;
}

enum trace_format trace_get_format(const struct trace_reader *r)
{
	return r->fmt;
}

struct capture_reader *trace_get_capture(const struct trace_reader *r)
{
	return r->fmt == TRACE_CAPTURE ? r->cap : NULL;
}

void trace_close(struct trace_reader *r)
{
	if (!r)
		return;
	ahead_stop(r);
	if (r->map)
		munmap(r->map, r->len);
	free(r->owned);
	ctf_close(r->ctf);
	tracedat_close(r->dat);
	if (r->cap)
		capture_close_reader(r->cap);
	free(r->path);
	free(r);
}

int trace_batch_push(struct trace_batch *b, const struct trace_event *t)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct trace_event *ev = realloc(b->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		b->ev = ev;
		b->cap = cap;
	}
	b->ev[b->n++] = *t;
	return 0;
}
