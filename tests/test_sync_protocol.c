// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hypercall protocol: a/b/c/d events -> matches, and the guest markers. */
#include <criterion/criterion.h>
#include <string.h>
#include "sync/sync.h"
#include "sync_synth.h"

#define ROUNDS 400

struct events {
	struct vcpustat_sync_event a[ROUNDS + 8], b[ROUNDS + 8], c[ROUNDS + 8], d[ROUNDS + 8];
	size_t na, nb, nc, nd;
};

/* One protocol round per key 1000 + i: a (guest) -> b (host), c (host) -> d (guest). */
static void make_events(const struct synth *p, struct events *e)
{
	struct vcpustat_sync_match *m;
	size_t n = synth_generate(p, &m);

	cr_assert_geq(n, 2 * ROUNDS);
	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < ROUNDS; i++) {
		const struct vcpustat_sync_match *ab = &m[2 * i], *cd = &m[2 * i + 1];
		uint64_t key = 1000 + i;

		e->a[e->na++] = (struct vcpustat_sync_event){ key, ab->send_ns };
		e->b[e->nb++] = (struct vcpustat_sync_event){ key, ab->recv_ns };
		e->c[e->nc++] = (struct vcpustat_sync_event){ key, cd->send_ns };
		e->d[e->nd++] = (struct vcpustat_sync_event){ key, cd->recv_ns };
	}
	free(m);
}

static void shuffle_events(struct vcpustat_sync_event *v, size_t n, uint64_t seed)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = synth_rand(&seed) % i;
		struct vcpustat_sync_event t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

static size_t run(struct events *e, struct vcpustat_sync_match **m, struct vcpustat_sync_protocol_stats *st)
{
	struct vcpustat_error err = { 0 };
	size_t n = 0;
	int ret = vcpustat_sync_match_protocol(e->a, e->na, e->b, e->nb, e->c, e->nc, e->d, e->nd, m, &n, st, &err);

	cr_assert_eq(ret, 0, "%s", err.msg);
	return n;
}

static const struct vcpustat_sync_match *find(const struct vcpustat_sync_match *m, size_t n, uint64_t key,
					      enum vcpustat_sync_dir dir)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].key == key && m[i].dir == dir)
			return &m[i];
	return NULL;
}

static uint64_t host_ns(const struct vcpustat_sync_match *m)
{
	return m->dir == VCPUSTAT_SYNC_HOST_TO_GUEST ? m->send_ns : m->recv_ns;
}

Test(sync_protocol, every_round_gives_two_matches_in_host_time_order)
{
	struct synth p = synth_default(31);
	static struct events e;
	struct vcpustat_sync_protocol_stats st;
	struct vcpustat_sync_match *m;
	struct vcpustat_sync_result r;
	size_t n;

	make_events(&p, &e);
	shuffle_events(e.a, e.na, 1);
	shuffle_events(e.b, e.nb, 2);
	shuffle_events(e.c, e.nc, 3);
	shuffle_events(e.d, e.nd, 4);
	n = run(&e, &m, &st);
	cr_assert_eq(n, 2 * ROUNDS);
	cr_assert_eq(st.guest_to_host, ROUNDS);
	cr_assert_eq(st.host_to_guest, ROUNDS);
	cr_assert_eq(st.duplicate_keys + st.inconsistent_keys + st.unmatched, 0);
	for (size_t i = 1; i < n; i++)
		cr_assert_leq(host_ns(&m[i - 1]), host_ns(&m[i]), "matches not in host time order at %zu", i);
	for (size_t i = 0; i < e.na; i++) {
		uint64_t key = e.a[i].key;
		const struct vcpustat_sync_match *ab = find(m, n, key, VCPUSTAT_SYNC_GUEST_TO_HOST);
		const struct vcpustat_sync_match *cd = find(m, n, key, VCPUSTAT_SYNC_HOST_TO_GUEST);

		cr_assert(ab && cd, "key %llu", (unsigned long long)key);
		cr_assert_eq(ab->send_ns, e.a[i].ts, "a -> b is sent at a");
		cr_assert_lt(ab->recv_ns, cd->send_ns, "b before c on the host");
		cr_assert_lt(ab->send_ns, cd->recv_ns, "a before d in the guest");
	}
	/* and they synchronize */
	cr_assert_eq(vcpustat_sync_solve(m, n, &r, NULL), 0);
	cr_assert_eq(r.quality, VCPUSTAT_SYNC_ACCURATE);
	for (int i = 0; i <= 100; i++) {
		long double g = r.transform.guest_first + (r.transform.guest_last - r.transform.guest_first) * i / 100, h;

		vcpustat_sync_eval(&r.transform, g, &h, NULL, NULL);
		cr_assert_lt(fabsl(h - synth_host(&p, g)), 1000);
	}
	free(m);
}

Test(sync_protocol, a_missing_event_loses_only_its_message)
{
	struct synth p = synth_default(32);
	static struct events e;
	struct vcpustat_sync_protocol_stats st;
	struct vcpustat_sync_match *m;
	size_t n;

	make_events(&p, &e);
	e.b[5] = e.b[--e.nb]; /* key 1005 loses b: no a -> b, c -> d still there */
	e.d[7] = e.d[--e.nd]; /* key 1007 loses d: a -> b only */
	e.a[9] = e.a[--e.na]; /* key 1009 loses a */
	e.c[9] = e.c[--e.nc]; /* ... and c: nothing left for it */
	n = run(&e, &m, &st);
	cr_assert_eq(n, 2 * ROUNDS - 4);
	cr_assert_null(find(m, n, 1005, VCPUSTAT_SYNC_GUEST_TO_HOST));
	cr_assert_not_null(find(m, n, 1005, VCPUSTAT_SYNC_HOST_TO_GUEST));
	cr_assert_not_null(find(m, n, 1007, VCPUSTAT_SYNC_GUEST_TO_HOST));
	cr_assert_null(find(m, n, 1007, VCPUSTAT_SYNC_HOST_TO_GUEST));
	cr_assert_null(find(m, n, 1009, VCPUSTAT_SYNC_GUEST_TO_HOST));
	cr_assert_null(find(m, n, 1009, VCPUSTAT_SYNC_HOST_TO_GUEST));
	cr_assert_eq(st.guest_to_host, ROUNDS - 2);
	cr_assert_eq(st.host_to_guest, ROUNDS - 2);
	cr_assert_eq(st.unmatched, 4, "a of 1005, c of 1007, b and d of 1009");
	free(m);
}

Test(sync_protocol, duplicate_and_reused_keys_are_dropped)
{
	struct synth p = synth_default(33);
	static struct events e;
	struct vcpustat_sync_protocol_stats st;
	struct vcpustat_sync_match *m;
	size_t n;

	make_events(&p, &e);
	e.a[e.na++] = (struct vcpustat_sync_event){ 1003, e.a[3].ts + 5 }; /* two a for key 1003 */
	e.c[e.nc++] = e.c[4];						       /* the same c twice for 1004 */
	e.d[6].ts = e.a[6].ts - 1; /* key 1006: d before a in the guest: a reused key */
	e.c[8].ts = e.b[8].ts - 1; /* key 1008: c before b on the host */
	e.a[e.na++] = (struct vcpustat_sync_event){ 5, 42 }; /* a lone a */
	n = run(&e, &m, &st);
	cr_assert_eq(st.duplicate_keys, 2);
	cr_assert_eq(st.inconsistent_keys, 2);
	cr_assert_eq(st.unmatched, 1);
	cr_assert_eq(n, 2 * (ROUNDS - 4));
	for (uint64_t key = 1003; key <= 1008; key++) {
		bool dropped = key == 1003 || key == 1004 || key == 1006 || key == 1008;

		cr_assert_eq(find(m, n, key, VCPUSTAT_SYNC_GUEST_TO_HOST) == NULL, dropped, "key %llu",
			     (unsigned long long)key);
		cr_assert_eq(find(m, n, key, VCPUSTAT_SYNC_HOST_TO_GUEST) == NULL, dropped, "key %llu",
			     (unsigned long long)key);
	}
	free(m);
}

Test(sync_protocol, empty_lists_give_no_match)
{
	struct vcpustat_sync_match *m = (void *)1;
	struct vcpustat_sync_protocol_stats st;
	size_t n = 9;
	struct vcpustat_sync_event a = { 1, 10 };

	cr_assert_eq(vcpustat_sync_match_protocol(NULL, 0, NULL, 0, NULL, 0, NULL, 0, &m, &n, &st, NULL), 0);
	cr_assert_null(m);
	cr_assert_eq(n, 0);
	cr_assert_eq(vcpustat_sync_match_protocol(&a, 1, NULL, 0, NULL, 0, NULL, 0, &m, &n, &st, NULL), 0);
	cr_assert_null(m);
	cr_assert_eq(st.unmatched, 1);
}

Test(sync_protocol, markers_parse_from_ftrace_lines)
{
	uint64_t key = 0;

	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a k=123", &key), 'a');
	cr_assert_eq(key, 123);
	cr_assert_eq(vcpustat_sync_parse_marker("  agent-16295   [000] ...1.  1713.065513: tracing_mark_write: "
						"vcpustat_sync: d k=106497200318892\n",
						&key),
		     'd');
	cr_assert_eq(key, 106497200318892ULL);
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a k=0x56435331", &key), 'a');
	cr_assert_eq(key, 0x56435331);
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a k=18446744073709551615", &key), 'a');
	cr_assert_eq(key, UINT64_MAX);
	key = 77;
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a k=18446744073709551616", &key), 0, "65 bits");
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: b k=1", &key), 0);
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a k=", &key), 0);
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a k=12x", &key), 0);
	cr_assert_eq(vcpustat_sync_parse_marker("vcpustat_sync: a key=1", &key), 0);
	cr_assert_eq(vcpustat_sync_parse_marker("sched_switch: prev_comm=a", &key), 0);
	cr_assert_eq(key, 77, "untouched when no marker");
}
