// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sync_input.c - where synchronization matches come from: the pairs file
 * (vcpustat sync --pairs), the hypercall protocol's a/b/c/d events (the trace
 * importer feeds those), and the guest markers' text. The algorithm is sync.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "sync/sync.h"

/* ---- the pairs file ---- */

static const char *const field_names[4] = { "sender", "send_ts", "receiver", "recv_ts" };

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A token for an error message: at most 40 bytes, non-printable bytes as '?'. */
static void quote_token(char *dst, size_t size, const char *s, size_t len)
{
	size_t n = len < 40 ? len : 40, i;

	if (n > size - 4)
		n = size - 4;
	for (i = 0; i < n; i++)
		dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (n < len)
		dst[i++] = '.', dst[i++] = '.', dst[i++] = '.';
	dst[i] = '\0';
}

struct pairs_pos {
	const char *name;
	size_t line;
	const char *line_start;
};

static int pairs_error(struct vcpustat_error *err, const struct pairs_pos *pos, const char *at, const char *fmt,
		       const char *detail)
{
	char what[400];

	snprintf(what, sizeof(what), fmt, detail);
	return verror(err, -EINVAL, "%s:%zu:%zu: %s", pos->name, pos->line, (size_t)(at - pos->line_start) + 1, what);
}

/* "host" -> 0, "guest" -> 1, else -1 (any case) */
static int parse_side(const char *s, size_t len)
{
	static const char *const names[2] = { "host", "guest" };

	for (int side = 0; side < 2; side++) {
		size_t i;

		if (len != strlen(names[side]))
			continue;
		for (i = 0; i < len && (s[i] | 0x20) == names[side][i]; i++)
			;
		if (i == len)
			return side;
	}
	return -1;
}

/*
 * One line, without its newline. Returns 1 and fills m for a match, 0 for a
 * blank or comment line, -EINVAL with err filled for anything else.
 */
static int parse_pair_line(const char *s, size_t len, const struct pairs_pos *pos, struct vcpustat_sync_match *m,
			   struct vcpustat_error *err)
{
	const char *end, *p = s, *tok[4];
	size_t tlen[4];
	int side[2], f;
	uint64_t ts[2];
	char q[48], msg[160];

	end = memchr(s, '#', len);
	if (!end)
		end = s + len;
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 0;
	for (f = 0; f < 4; f++) {
		while (p < end && is_blank(*p))
			p++;
		tok[f] = p;
		while (p < end && *p != ',' && !is_blank(*p))
			p++;
		tlen[f] = (size_t)(p - tok[f]);
		while (p < end && is_blank(*p))
			p++;
		if (!tlen[f] && (p == end || *p == ','))
			return pairs_error(err, pos, tok[f], "field %s is empty (expected sender,send_ts,receiver,recv_ts)",
					   f == 0 ? "1 (sender)" : f == 1 ? "2 (send_ts)" : f == 2 ? "3 (receiver)" :
									      "4 (recv_ts)");
		if (f < 3) {
			if (p == end) {
				snprintf(msg, sizeof(msg), "%d", f + 1);
				return pairs_error(err, pos, p,
						   "only %s field(s): expected 4, sender,send_ts,receiver,recv_ts", msg);
			}
			if (*p != ',') {
				quote_token(q, sizeof(q), p, (size_t)(end - p));
				snprintf(msg, sizeof(msg), "field %d (%s) is followed by '%s' where a comma should be", f + 1,
					 field_names[f], q);
				return pairs_error(err, pos, p, "%s", msg);
			}
			p++;
		} else if (p != end) {
			quote_token(q, sizeof(q), p, (size_t)(end - p));
			return pairs_error(err, pos, p, "unexpected '%s' after the 4th field (recv_ts)", q);
		}
	}
	for (f = 0; f < 4; f += 2) {
		side[f / 2] = parse_side(tok[f], tlen[f]);
		if (side[f / 2] < 0) {
			quote_token(q, sizeof(q), tok[f], tlen[f]);
			snprintf(msg, sizeof(msg), "field %d (%s): '%s' is neither host nor guest", f + 1, field_names[f], q);
			return pairs_error(err, pos, tok[f], "%s", msg);
		}
	}
	if (side[0] == side[1])
		return pairs_error(err, pos, tok[2],
				   "sender and receiver are both %s: a match goes from host to guest or from guest to host",
				   side[0] ? "guest" : "host");
	for (f = 1; f < 4; f += 2) {
		uint64_t v = 0;
		size_t i;

		for (i = 0; i < tlen[f]; i++) {
			char c = tok[f][i];

			if (c < '0' || c > '9') {
				quote_token(q, sizeof(q), tok[f], tlen[f]);
				snprintf(msg, sizeof(msg), "field %d (%s): '%s' is not an integer number of nanoseconds", f + 1,
					 field_names[f], q);
				return pairs_error(err, pos, tok[f] + i, "%s", msg);
			}
			v = v * 10 + (uint64_t)(c - '0');
			if (v > VCPUSTAT_SYNC_MAX_NS) {
				quote_token(q, sizeof(q), tok[f], tlen[f]);
				snprintf(msg, sizeof(msg), "field %d (%s): %s ns is too large (the limit is 2^62 ns)", f + 1,
					 field_names[f], q);
				return pairs_error(err, pos, tok[f], "%s", msg);
			}
		}
		ts[f / 2] = v;
	}
	m->dir = side[0] == 0 ? VCPUSTAT_SYNC_HOST_TO_GUEST : VCPUSTAT_SYNC_GUEST_TO_HOST;
	m->send_ns = ts[0];
	m->recv_ns = ts[1];
	m->key = pos->line;
	return 1;
}

int vcpustat_sync_parse_pairs(const char *buf, size_t len, const char *name, struct vcpustat_sync_match **out,
			      size_t *nr, struct vcpustat_error *err)
{
	struct vcpustat_sync_match *v = NULL, m;
	struct pairs_pos pos = { name ? name : "pairs", 0, buf };
	size_t n = 0, cap = 0, off = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	while (off < len) {
		const char *s = buf + off, *nl = memchr(s, '\n', len - off);
		size_t l = nl ? (size_t)(nl - s) : len - off;

		pos.line++;
		pos.line_start = s;
		off += l + (nl != NULL);
		ret = parse_pair_line(s, l, &pos, &m, err);
		if (ret < 0)
			goto fail;
		if (!ret)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct vcpustat_sync_match *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv) {
				ret = verror(err, -ENOMEM, "%s:%zu: out of memory", pos.name, pos.line);
				goto fail;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = m;
	}
	*out = v;
	*nr = n;
	return 0;
fail:
	free(v);
	return ret;
}

/* ---- the hypercall protocol ---- */

static int event_cmp(const void *a, const void *b)
{
	const struct vcpustat_sync_event *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

static int match_cmp(const void *a, const void *b)
{
	const struct vcpustat_sync_match *x = a, *y = b;
	uint64_t hx = x->dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? x->send_ns : x->recv_ns;
	uint64_t hy = y->dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? y->send_ns : y->recv_ns;

	if (hx != hy)
		return hx < hy ? -1 : 1;
	if (x->dir != y->dir) /* a -> b before c -> d at the same instant */
		return x->dir == VCPUSTAT_SYNC_GUEST_TO_HOST ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

/* One sorted event list and a cursor over it. */
struct cursor {
	struct vcpustat_sync_event *v;
	size_t n, i;
	size_t count; /* events with the current key */
	uint64_t ts;  /* the event's time when count == 1 */
};

static void cursor_take(struct cursor *c, uint64_t key)
{
	c->count = 0;
	while (c->i < c->n && c->v[c->i].key == key) {
		if (!c->count)
			c->ts = c->v[c->i].ts;
		c->count++;
		c->i++;
	}
}

int vcpustat_sync_match_protocol(const struct vcpustat_sync_event *a, size_t na,
				 const struct vcpustat_sync_event *b, size_t nb,
				 const struct vcpustat_sync_event *c, size_t nc,
				 const struct vcpustat_sync_event *d, size_t nd,
				 struct vcpustat_sync_match **out, size_t *nr,
				 struct vcpustat_sync_protocol_stats *stats, struct vcpustat_error *err)
{
	const struct vcpustat_sync_event *in[4] = { a, b, c, d };
	size_t len[4] = { na, nb, nc, nd }, n = 0, k;
	struct vcpustat_sync_protocol_stats st = { 0 };
	struct cursor cur[4] = { { 0 } };
	struct vcpustat_sync_match *v = NULL;
	int ret = 0;

	*out = NULL;
	*nr = 0;
	for (k = 0; k < 4; k++) {
		if (!len[k])
			continue;
		cur[k].v = malloc(len[k] * sizeof(*cur[k].v));
		if (!cur[k].v) {
			ret = verror(err, -ENOMEM, "sync: out of memory for %zu protocol events", len[k]);
			goto out;
		}
		memcpy(cur[k].v, in[k], len[k] * sizeof(*cur[k].v));
		cur[k].n = len[k];
		qsort(cur[k].v, len[k], sizeof(*cur[k].v), event_cmp);
	}
	/* at most one a -> b and one c -> d per key */
	v = malloc(((na < nb ? na : nb) + (nc < nd ? nc : nd) + 1) * sizeof(*v));
	if (!v) {
		ret = verror(err, -ENOMEM, "sync: out of memory for the protocol matches");
		goto out;
	}
	for (;;) {
		bool any = false, dup = false;
		uint64_t key = 0;
		size_t have[4];

		for (k = 0; k < 4; k++)
			if (cur[k].i < cur[k].n && (!any || cur[k].v[cur[k].i].key < key)) {
				key = cur[k].v[cur[k].i].key;
				any = true;
			}
		if (!any)
			break;
		for (k = 0; k < 4; k++) {
			cursor_take(&cur[k], key);
			have[k] = cur[k].count;
			dup |= have[k] > 1;
		}
		if (dup) {
			st.duplicate_keys++;
			continue;
		}
		/* a and d come from the same guest thread around one hypercall,
		 * b and c from the same vCPU thread: out of order = a reused key */
		if ((have[0] && have[3] && cur[3].ts < cur[0].ts) || (have[1] && have[2] && cur[2].ts < cur[1].ts)) {
			st.inconsistent_keys++;
			continue;
		}
		if (have[0] && have[1]) {
			v[n++] = (struct vcpustat_sync_match){ cur[0].ts, cur[1].ts, key, VCPUSTAT_SYNC_GUEST_TO_HOST };
			st.guest_to_host++;
		} else {
			st.unmatched += have[0] + have[1];
		}
		if (have[2] && have[3]) {
			v[n++] = (struct vcpustat_sync_match){ cur[2].ts, cur[3].ts, key, VCPUSTAT_SYNC_HOST_TO_GUEST };
			st.host_to_guest++;
		} else {
			st.unmatched += have[2] + have[3];
		}
	}
	if (n) {
		qsort(v, n, sizeof(*v), match_cmp);
		*out = v;
		*nr = n;
		v = NULL;
	}
	if (stats)
		*stats = st;
out:
	free(v);
	for (k = 0; k < 4; k++)
		free(cur[k].v);
	return ret;
}

/* ---- the guest markers ---- */

int vcpustat_sync_parse_marker(const char *text, uint64_t *key)
{
	static const char tag[] = "vcpustat_sync: ";
	const char *p = strstr(text, tag);
	uint64_t v = 0;
	int which, base = 10, digits = 0;

	if (!p)
		return 0;
	p += sizeof(tag) - 1;
	if ((*p != 'a' && *p != 'd') || strncmp(p + 1, " k=", 3))
		return 0;
	which = *p;
	p += 4;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	for (;; p++, digits++) {
		int dv;

		if (*p >= '0' && *p <= '9')
			dv = *p - '0';
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			dv = *p - 'a' + 10;
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			dv = *p - 'A' + 10;
		else
			break;
		if (v > (UINT64_MAX - (uint64_t)dv) / (uint64_t)base)
			return 0; /* more than 64 bits: not ours */
		v = v * (uint64_t)base + (uint64_t)dv;
	}
	if (!digits || (*p && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t'))
		return 0;
	*key = v;
	return which;
}

/* A pairs file is small: read from a pipe or a device, at most this much. */
#define PAIRS_LIMIT ((size_t)256 << 20)

/* The whole file (or stdin) in memory, bounded; err names the file and where it stopped. */
int vcpustat_sync_read_pairs(const char *path, char **buf, size_t *len, struct vcpustat_error *err)
{
	int fd = strcmp(path, "-") ? open_input(path, false, err) : STDIN_FILENO;
	struct stat st;
	size_t limit = PAIRS_LIMIT;
	int e;

	if (fd < 0)
		return fd;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size + 1 > limit)
		limit = (size_t)st.st_size + 1; /* a regular file has an end */
	e = read_bounded(fd, strcmp(path, "-") ? path : "<stdin>", limit, buf, len, err);
	if (fd != STDIN_FILENO)
		close(fd);
	return e;
}
