// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sht-bench: speed and size of the SHT file (user/sht/), each figure next to
 * a baseline measured in the same run.
 *
 *   sht-bench all   [--intervals N] [--vms N] [--vcpus N] [--file F] [--node-size B] [--queries Q]
 *   sht-bench gen   FILE [--intervals N] ...      write a realistic file (vCPU states, exits, pCPUs)
 *   sht-bench corpus DIR                          a few small valid files (fuzz seed corpus)
 *
 * The data: a simulated KVM host. Each vCPU goes GUEST -> HOST (an exit,
 * with its reason) -> GUEST ..., sometimes PREEMPTED, IDLE or BLOCKED and
 * then WAIT; switch-ins may move it to another pCPU and change the pCPU's
 * current thread; host threads change state now and then.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "sht/sht.h"
#include "vcpu_fsm.h"

struct event {
	uint64_t t;
	uint32_t attr;
	int32_t value;
};

struct config {
	uint64_t intervals;
	uint32_t vms, vcpus, pcpus, threads;
	uint32_t node_size;
	uint32_t queries;
	const char *file;
	uint64_t seed;
};

struct dataset {
	struct event *ev;
	size_t nev;
	uint32_t nattrs;
	char **paths;
	uint64_t intervals; /* value changes (intervals the writer will store, before close) */
	uint64_t end;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t xrand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double urand(void)
{
	return (double)(xrand() >> 11) / 9007199254740992.0;
}

/* Exponential with the given mean (ns), at least 1. */
static uint64_t expo(double mean)
{
	double v = -log(1.0 - urand()) * mean;

	return v < 1 ? 1 : (uint64_t)v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "sht-bench: %s\n", what);
	exit(1);
}

struct vcpu_sim {
	uint32_t a_state, a_exit, a_pcpu;
	int state, pcpu;
	uint64_t next; /* time of its next event */
};

static int push(struct dataset *d, size_t *cap, uint64_t t, uint32_t attr, int32_t v, int32_t *cur)
{
	if (d->nev == *cap) {
		*cap = *cap ? *cap * 2 : 1 << 20;
		d->ev = realloc(d->ev, *cap * sizeof(*d->ev));
		if (!d->ev)
			die("out of memory");
	}
	d->ev[d->nev++] = (struct event){ t, attr, v };
	if (cur[attr] != v) {
		if (cur[attr] != INT32_MIN)
			d->intervals++;
		cur[attr] = v;
	}
	return 0;
}

static uint32_t new_attr(struct dataset *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static uint32_t new_attr(struct dataset *d, const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		die("out of memory");
	va_end(ap);
	d->paths = realloc(d->paths, (d->nattrs + 1) * sizeof(*d->paths));
	if (!d->paths)
		die("out of memory");
	d->paths[d->nattrs] = p;
	return d->nattrs++;
}

static const int exit_reasons[] = { 48, 48, 48, 1, 1, 12, 30, 30, 32, 10, 28, 7 }; /* EPT, ext int, HLT, IO, MSR... */

static void generate(const struct config *c, struct dataset *d)
{
	uint32_t nv = c->vms * c->vcpus, i, *a_cpu_tid, *a_thread;
	struct vcpu_sim *v = calloc(nv, sizeof(*v));
	int32_t *cur;
	size_t cap = 0;
	uint64_t t = 0;

	memset(d, 0, sizeof(*d));
	rng = c->seed ? c->seed : 88172645463325252ull;
	a_cpu_tid = calloc(c->pcpus, sizeof(*a_cpu_tid));
	a_thread = calloc(c->threads ? c->threads : 1, sizeof(*a_thread));
	if (!v || !a_cpu_tid || !a_thread)
		die("out of memory");
	for (i = 0; i < nv; i++) {
		v[i].a_state = new_attr(d, "/vms/vm%u/vcpus/%u/state", i / c->vcpus, i % c->vcpus);
		v[i].a_exit = new_attr(d, "/vms/vm%u/vcpus/%u/exit_reason", i / c->vcpus, i % c->vcpus);
		v[i].a_pcpu = new_attr(d, "/vms/vm%u/vcpus/%u/pcpu", i / c->vcpus, i % c->vcpus);
	}
	for (i = 0; i < c->pcpus; i++)
		a_cpu_tid[i] = new_attr(d, "/host/cpus/%u/current_tid", i);
	for (i = 0; i < c->threads; i++)
		a_thread[i] = new_attr(d, "/host/threads/%u/state", 2000 + i);
	cur = malloc(d->nattrs * sizeof(*cur));
	if (!cur)
		die("out of memory");
	for (i = 0; i < d->nattrs; i++)
		cur[i] = INT32_MIN;
	for (i = 0; i < nv; i++) {
		v[i].state = VCPU_GUEST;
		v[i].pcpu = (int)(i % c->pcpus);
		v[i].next = expo(20000);
		push(d, &cap, 0, v[i].a_state, VCPU_GUEST, cur);
		push(d, &cap, 0, v[i].a_pcpu, v[i].pcpu, cur);
	}
	for (i = 0; i < c->pcpus; i++)
		push(d, &cap, 0, a_cpu_tid[i], (int32_t)(10000 + i), cur);
	for (i = 0; i < c->threads; i++)
		push(d, &cap, 0, a_thread[i], 4, cur);
	while (d->intervals < c->intervals) {
		/* the vCPU with the earliest next event (linear: a few hundred vCPUs at most) */
		uint32_t k = 0;
		struct vcpu_sim *s;
		double u = urand();

		for (i = 1; i < nv; i++)
			if (v[i].next < v[k].next)
				k = i;
		s = &v[k];
		t = s->next;
		switch (s->state) {
		case VCPU_GUEST: /* an exit */
			s->state = VCPU_HOST;
			push(d, &cap, t, s->a_exit, exit_reasons[xrand() % (sizeof(exit_reasons) / sizeof(int))], cur);
			s->next = t + expo(3000);
			break;
		case VCPU_HOST:
			if (u < 0.85)
				s->state = VCPU_GUEST;
			else if (u < 0.92)
				s->state = VCPU_IDLE;
			else if (u < 0.96)
				s->state = VCPU_PREEMPTED;
			else
				s->state = VCPU_BLOCKED;
			s->next = t + expo(s->state == VCPU_GUEST ? 40000 : s->state == VCPU_IDLE ? 200000 : 30000);
			break;
		case VCPU_IDLE:
		case VCPU_BLOCKED:
			s->state = VCPU_WAIT;
			s->next = t + expo(8000);
			break;
		default: /* PREEMPTED, WAIT: switched in, maybe elsewhere */
			s->state = VCPU_HOST;
			if (urand() < 0.2) {
				s->pcpu = (int)(xrand() % c->pcpus);
				push(d, &cap, t, s->a_pcpu, s->pcpu, cur);
			}
			push(d, &cap, t, a_cpu_tid[s->pcpu], (int32_t)(20000 + k), cur);
			s->next = t + expo(2000);
			break;
		}
		push(d, &cap, t, s->a_state, s->state, cur);
		if (c->threads && urand() < 0.02) {
			uint32_t th = (uint32_t)(xrand() % c->threads);

			push(d, &cap, t, a_thread[th], urand() < 0.5 ? 1 : 4, cur);
		}
	}
	d->end = t + 1;
	free(v);
	free(a_cpu_tid);
	free(a_thread);
	free(cur);
}

static void dataset_free(struct dataset *d)
{
	for (uint32_t i = 0; i < d->nattrs; i++)
		free(d->paths[i]);
	free(d->paths);
	free(d->ev);
}

/* Write d to path with the SHT writer; returns seconds spent (attribute creation included). */
static double write_sht(const struct config *c, const struct dataset *d, const char *path,
			struct sht_writer_stats *st)
{
	struct sht_meta meta[] = { { "host", "sht-bench" }, { "tool", "sht-bench " VCPUSTAT_VERSION },
				   { "command", "sht-bench gen" } };
	struct sht_writer_opts o = { .node_size = c->node_size, .mono_start_ns = 1000000000ull,
				     .real_start_ns = 1795356187000000000ull, .meta = meta, .nmeta = 3,
				     .no_sync = true };
	struct vcpustat_error err = { 0 };
	uint32_t *ids = malloc(d->nattrs * sizeof(*ids)), i;
	struct sht_writer *w;
	double t0 = now_s();
	size_t k;

	if (!ids)
		die("out of memory");
	if (sht_writer_create(&w, path, &o, &err))
		die(err.msg);
	for (i = 0; i < d->nattrs; i++)
		if (sht_writer_attr(w, d->paths[i], &ids[i]))
			die(sht_writer_error(w)->msg);
	for (k = 0; k < d->nev; k++)
		if (sht_writer_set_int(w, ids[d->ev[k].attr], d->ev[k].t, d->ev[k].value))
			die(sht_writer_error(w)->msg);
	sht_writer_get_stats(w, st);
	if (sht_writer_close(w, d->end, &err))
		die(err.msg);
	free(ids);
	return now_s() - t0;
}

/* The baseline: the same intervals as fixed 24-byte records with fwrite. */
struct raw_ivl {
	uint32_t attr;
	int32_t value;
	uint64_t start, end;
};

static double write_raw(const struct dataset *d, const char *path, uint64_t *n)
{
	struct raw_ivl *cur = malloc(d->nattrs * sizeof(*cur));
	double t0 = now_s();
	FILE *f = fopen(path, "wb");
	uint32_t i;
	size_t k;

	if (!cur || !f)
		die("cannot write the baseline file");
	*n = 0;
	for (i = 0; i < d->nattrs; i++)
		cur[i] = (struct raw_ivl){ .attr = i, .value = INT32_MIN };
	for (k = 0; k < d->nev; k++) {
		struct raw_ivl *r = &cur[d->ev[k].attr];

		if (r->value == d->ev[k].value)
			continue;
		if (r->value != INT32_MIN) {
			r->end = d->ev[k].t;
			fwrite(r, sizeof(*r), 1, f);
			(*n)++;
		}
		r->value = d->ev[k].value;
		r->start = d->ev[k].t;
	}
	for (i = 0; i < d->nattrs; i++)
		if (cur[i].value != INT32_MIN) {
			cur[i].end = d->end;
			fwrite(&cur[i], sizeof(cur[i]), 1, f);
			(*n)++;
		}
	if (fclose(f))
		die("cannot write the baseline file");
	free(cur);
	return now_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void stats(double *v, size_t n, double *median, double *p99)
{
	qsort(v, n, sizeof(*v), cmp_double);
	*median = v[n / 2];
	*p99 = v[(size_t)((double)(n - 1) * 0.99)];
}

/* In-memory baseline: per attribute, its intervals sorted by start. */
struct mem_index {
	struct raw_ivl **by_attr;
	size_t *n;
	uint32_t nattrs;
};

static void mem_index_build(const struct dataset *d, struct mem_index *mi)
{
	size_t *cap = calloc(d->nattrs, sizeof(*cap));
	int32_t *val = malloc(d->nattrs * sizeof(*val));
	uint64_t *since = calloc(d->nattrs, sizeof(*since));
	uint32_t i;
	size_t k;

	mi->nattrs = d->nattrs;
	mi->by_attr = calloc(d->nattrs, sizeof(*mi->by_attr));
	mi->n = calloc(d->nattrs, sizeof(*mi->n));
	if (!cap || !val || !since || !mi->by_attr || !mi->n)
		die("out of memory");
	for (i = 0; i < d->nattrs; i++)
		val[i] = INT32_MIN;
	for (k = 0; k <= d->nev; k++) {
		uint32_t a = k < d->nev ? d->ev[k].attr : 0, lo = k < d->nev ? a : 0, hi = k < d->nev ? a + 1 : d->nattrs;
		uint64_t t = k < d->nev ? d->ev[k].t : d->end;

		if (k < d->nev && val[a] == d->ev[k].value)
			continue;
		for (i = lo; i < hi; i++) { /* close the open interval of a (or, at the end, of all) */
			if (val[i] == INT32_MIN)
				continue;
			if (mi->n[i] == cap[i]) {
				cap[i] = cap[i] ? cap[i] * 2 : 64;
				mi->by_attr[i] = realloc(mi->by_attr[i], cap[i] * sizeof(**mi->by_attr));
				if (!mi->by_attr[i])
					die("out of memory");
			}
			mi->by_attr[i][mi->n[i]++] = (struct raw_ivl){ i, val[i], since[i], t };
		}
		if (k < d->nev) {
			val[a] = d->ev[k].value;
			since[a] = t;
		}
	}
	free(cap);
	free(val);
	free(since);
}

static const struct raw_ivl *mem_at(const struct mem_index *mi, uint32_t a, uint64_t t)
{
	size_t lo = 0, hi = mi->n[a];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mi->by_attr[a][mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	return mi->by_attr[a][lo - 1].end > t ? &mi->by_attr[a][lo - 1] : NULL;
}

static void mem_index_free(struct mem_index *mi)
{
	for (uint32_t i = 0; i < mi->nattrs; i++)
		free(mi->by_attr[i]);
	free(mi->by_attr);
	free(mi->n);
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

static void bench_all(const struct config *c)
{
	char path[512], raw[512];
	struct sht_writer_stats st;
	struct dataset d;
	struct mem_index mi;
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	struct sht_interval *out, *iv;
	double tw, tr, t0, *lat, *blat, med, p99, bmed, bp99, sink = 0, cold;
	uint64_t *times;
	uint64_t nraw, nsht, fsz, returned = 0;
	uint32_t q, i, nq = c->queries;
	size_t n;

	snprintf(path, sizeof(path), "%s", c->file);
	snprintf(raw, sizeof(raw), "%s.raw", c->file);
	t0 = now_s();
	generate(c, &d);
	printf("### data\n\n%u VMs x %u vCPUs, %u pCPUs, %u host threads: %u attributes; %zu events, "
	       "%llu intervals, %.3f s of trace (generated in %.1f s)\n\n",
	       c->vms, c->vcpus, c->pcpus, c->threads, d.nattrs, d.nev, (unsigned long long)d.intervals,
	       (double)d.end * 1e-9, now_s() - t0);

	/* build: best of 3 for each, alternating */
	tw = tr = 1e9;
	for (i = 0; i < 3; i++) {
		double a = write_sht(c, &d, path, &st), b = write_raw(&d, raw, &nraw);

		tw = a < tw ? a : tw;
		tr = b < tr ? b : tr;
	}
	fsz = file_size(path);
	if (sht_open(&r, path, &err))
		die(err.msg);
	nsht = sht_get_info(r)->nintervals;
	printf("### build (offline, one core, best of 3; page cache, no fsync)\n\n");
	printf("| | intervals | seconds | intervals/s | file bytes | bytes/interval |\n|---|---:|---:|---:|---:|---:|\n");
	printf("| SHT writer (node %u B) | %llu | %.3f | %.2f M | %llu | %.2f |\n", sht_get_info(r)->node_size,
	       (unsigned long long)nsht, tw, (double)nsht / tw * 1e-6, (unsigned long long)fsz,
	       (double)fsz / (double)nsht);
	printf("| baseline: fwrite 24-byte records | %llu | %.3f | %.2f M | %llu | 24.00 |\n\n",
	       (unsigned long long)nraw, tr, (double)nraw / tr * 1e-6, (unsigned long long)file_size(raw));
	printf("tree: height %u, %llu nodes; journal copies %llu (%.1f%% of intervals)\n\n", st.height,
	       (unsigned long long)sht_get_info(r)->nodes, (unsigned long long)st.journaled,
	       100.0 * (double)st.journaled / (double)nsht);

	/* stabbing: the SHT and the baseline each in their own pass over the same times (interleaved, each
	 * would evict the other's working set from the CPU caches), then an untimed pass comparing answers */
	mem_index_build(&d, &mi);
	out = malloc(sht_nattrs(r) * sizeof(*out));
	lat = malloc(nq * sizeof(*lat));
	blat = malloc(nq * sizeof(*blat));
	times = malloc(nq * sizeof(*times));
	if (!out || !lat || !blat || !times)
		die("out of memory");
	for (q = 0; q < nq; q++)
		times[q] = xrand() % d.end;
	sht_close(r); /* a cold reader: the first query decodes the cores on its path */
	t0 = now_s();
	if (sht_open(&r, path, &err) || sht_query_at(r, times[0], NULL, out, &err))
		die(err.msg);
	cold = (now_s() - t0) * 1e6;
	for (q = 0; q < nq; q++) {
		t0 = now_s();
		if (sht_query_at(r, times[q], NULL, out, &err))
			die(err.msg);
		lat[q] = (now_s() - t0) * 1e6;
	}
	for (q = 0; q < nq; q++) {
		t0 = now_s();
		for (i = 0; i < mi.nattrs; i++) {
			const struct raw_ivl *x = mem_at(&mi, i, times[q]);

			sink += x ? x->value : 0;
		}
		blat[q] = (now_s() - t0) * 1e6;
	}
	for (q = 0; q < nq; q += 10) {
		if (sht_query_at(r, times[q], NULL, out, &err))
			die(err.msg);
		for (i = 0; i < mi.nattrs; i++) { /* the answers agree */
			const struct raw_ivl *x = mem_at(&mi, i, times[q]);
			uint32_t id;

			if (sht_attr_lookup(r, d.paths[i], &id) ||
			    (x ? out[id].value.type != SHT_INT || out[id].value.i != x->value
			       : out[id].value.type != SHT_NULL))
				die("stabbing answer differs from the in-memory baseline");
		}
	}
	stats(lat, nq, &med, &p99);
	stats(blat, nq, &bmed, &bp99);
	printf("### stabbing query: every attribute's value at a random time (%u queries, warm page cache)\n\n", nq);
	printf("| | median µs | p99 µs |\n|---|---:|---:|\n");
	printf("| SHT sht_query_at (%u attributes) | %.1f | %.1f |\n", sht_nattrs(r), med, p99);
	printf("| baseline: binary search per attribute, sorted in-memory arrays | %.1f | %.1f |\n", bmed, bp99);
	/* a linear scan of the raw file: a few */
	{
		FILE *f = fopen(raw, "rb");
		struct raw_ivl buf[4096];
		double sl[3];

		for (q = 0; q < 3 && f; q++) {
			uint64_t t = xrand() % d.end;
			size_t m;

			rewind(f);
			t0 = now_s();
			while ((m = fread(buf, sizeof(buf[0]), 4096, f)) > 0)
				for (size_t j = 0; j < m; j++)
					if (buf[j].start <= t && t < buf[j].end)
						sink += buf[j].value;
			sl[q] = (now_s() - t0) * 1e6;
		}
		if (f) {
			fclose(f);
			stats(sl, 3, &bmed, &bp99);
			printf("| baseline: linear scan of the 24-byte record file (3 queries) | %.0f | %.0f |\n", bmed,
			       bp99);
		}
	}
	printf("\nA cold reader (open, then its first stabbing query): %.0f µs.\n\n", cold);

	/* range queries: one attribute, windows of 1 ms and of 1%% of the trace (same pass structure) */
	for (int kind = 0; kind < 2; kind++) {
		uint64_t win = kind ? d.end / 100 : 1000000;

		uint32_t *which = malloc(nq * sizeof(*which));

		if (!which)
			die("out of memory");
		returned = 0;
		for (q = 0; q < nq; q++) {
			which[q] = (uint32_t)(xrand() % d.nattrs);
			times[q] = xrand() % d.end;
		}
		for (q = 0; q < nq; q++) {
			uint32_t id;

			if (sht_attr_lookup(r, d.paths[which[q]], &id))
				die("lookup");
			t0 = now_s();
			if (sht_query_range(r, id, NULL, times[q], times[q] + win, &iv, &n, &err))
				die(err.msg);
			lat[q] = (now_s() - t0) * 1e6;
			returned += n;
			free(iv);
		}
		for (q = 0; q < nq; q++) {
			const struct raw_ivl *v = mi.by_attr[which[q]];
			size_t lo = 0, hi = mi.n[which[q]], cnt = 0;

			t0 = now_s();
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (v[mid].end <= times[q])
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; lo < mi.n[which[q]] && v[lo].start <= times[q] + win; lo++)
				cnt++;
			sink += (double)cnt;
			blat[q] = (now_s() - t0) * 1e6;
		}
		free(which);
		stats(lat, nq, &med, &p99);
		stats(blat, nq, &bmed, &bp99);
		printf("### range query: one attribute over %s (%u queries, %.1f intervals returned on average)\n\n",
		       kind ? "1% of the trace" : "1 ms", nq, (double)returned / nq);
		printf("| | median µs | p99 µs |\n|---|---:|---:|\n");
		printf("| SHT sht_query_range | %.1f | %.1f |\n", med, p99);
		printf("| baseline: binary search in a sorted in-memory array | %.2f | %.2f |\n\n", bmed, bp99);
	}
	if (sink == 1234.5)
		printf(" \n");
	free(out);
	free(lat);
	free(blat);
	free(times);
	mem_index_free(&mi);
	sht_close(r);
	dataset_free(&d);
	unlink(raw);
}

static void gen(const struct config *c, const char *path)
{
	struct sht_writer_stats st;
	struct dataset d;
	double s;

	generate(c, &d);
	s = write_sht(c, &d, path, &st);
	printf("%s: %llu intervals, %u attributes, %llu bytes (%.2f bytes/interval) in %.3f s\n", path,
	       (unsigned long long)st.intervals, d.nattrs, (unsigned long long)file_size(path),
	       (double)file_size(path) / (double)(st.intervals ? st.intervals : 1), s);
	dataset_free(&d);
}

/* Copy file src to dst. */
static void copy_file(const char *src, const char *dst)
{
	FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
	char buf[4096];
	size_t m;

	if (!f || !g)
		die("copy");
	while ((m = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, m, g);
	fclose(f);
	if (fclose(g))
		die("copy");
}

/*
 * Small valid files for the fuzz seed corpus: a closed file; an unfinished
 * one (the writer abandoned mid-stream, so its root is rebuilt from the
 * journals, plus half a node, as a torn write leaves it); the same repaired.
 */
static void corpus(const char *dir)
{
	struct config c = { .intervals = 300, .vms = 1, .vcpus = 2, .pcpus = 2, .threads = 1, .node_size = 4096,
			    .seed = 7 };
	struct sht_writer_opts o = { .node_size = 4096, .max_children = 4, .real_start_ns = 1795356187000000000ull,
				     .no_sync = true };
	struct sht_check_report rep;
	struct vcpustat_error err = { 0 };
	struct sht_writer_stats st;
	struct sht_writer *w;
	struct dataset d;
	char path[512], src[512];
	uint32_t ids[64], i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/closed.sht", dir);
	generate(&c, &d);
	write_sht(&c, &d, path, &st);
	dataset_free(&d);

	c.intervals = 3000;
	c.seed = 8;
	generate(&c, &d);
	snprintf(src, sizeof(src), "%s/unfinished.sht", dir);
	if (d.nattrs > 64 || sht_writer_create(&w, src, &o, &err))
		die(err.msg);
	for (i = 0; i < d.nattrs; i++)
		if (sht_writer_attr(w, d.paths[i], &ids[i]))
			die(sht_writer_error(w)->msg);
	if (sht_writer_set_str(w, ids[0], 0, "a string"))
		die(sht_writer_error(w)->msg);
	for (size_t k = 0; k < d.nev * 3 / 4; k++)
		if (sht_writer_set_int(w, ids[d.ev[k].attr], d.ev[k].t, d.ev[k].value))
			die(sht_writer_error(w)->msg);
	sht_writer_abandon(w);
	dataset_free(&d);
	f = fopen(src, "ab"); /* half of a node: a torn write */
	for (i = 0; f && i < 2000; i++)
		fputc((int)(i * 31 % 251), f);
	if (!f || fclose(f))
		die("append");
	snprintf(path, sizeof(path), "%s/repaired.sht", dir);
	copy_file(src, path);
	if (sht_repair(path, &rep, &err))
		die(err.msg);

	/* many busy attributes in small nodes: cores of several blocks */
	snprintf(path, sizeof(path), "%s/bigcore.sht", dir);
	o.max_children = 32;
	if (sht_writer_create(&w, path, &o, &err))
		die(err.msg);
	for (i = 0; i < 1000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "/v/%u", i);
		if (sht_writer_attr(w, name, &ids[i % 64]))
			die(sht_writer_error(w)->msg);
	}
	for (i = 0; i < 2000; i++) /* round robin: each of them changes every 1000 events (ids: v, then 1..1000) */
		if (sht_writer_set_int(w, 1 + i % 1000, 1000 + 10ull * i, i / 1000 % 7))
			die(sht_writer_error(w)->msg);
	if (sht_writer_close(w, 1000 + 10ull * i, &err))
		die(err.msg);
	if (sht_check(path, &rep, &err) || rep.nodes == rep.leaves + rep.cores)
		die("bigcore.sht has no core of several blocks");
	printf("corpus written to %s\n", dir);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "intervals", required_argument, NULL, 'n' }, { "vms", required_argument, NULL, 'v' },
		{ "vcpus", required_argument, NULL, 'c' },     { "pcpus", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },   { "node-size", required_argument, NULL, 's' },
		{ "queries", required_argument, NULL, 'q' },   { "file", required_argument, NULL, 'f' },
		{ "seed", required_argument, NULL, 'S' },      { 0 },
	};
	struct config c = { .intervals = 10000000, .vms = 16, .vcpus = 8, .pcpus = 32, .threads = 200,
			    .node_size = 0, .queries = 2000, .file = "/tmp/sht-bench.sht", .seed = 1 };
	const char *cmd;
	int o;

	if (argc < 2)
		die("usage: sht-bench all|gen FILE|corpus DIR [--intervals N] [--vms N] [--vcpus N] [--pcpus N] "
		    "[--threads N] [--node-size B] [--queries Q] [--file F] [--seed S]");
	cmd = argv[1];
	optind = 2;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n': c.intervals = strtoull(optarg, NULL, 0); break;
		case 'v': c.vms = (uint32_t)atoi(optarg); break;
		case 'c': c.vcpus = (uint32_t)atoi(optarg); break;
		case 'p': c.pcpus = (uint32_t)atoi(optarg); break;
		case 't': c.threads = (uint32_t)atoi(optarg); break;
		case 's': c.node_size = (uint32_t)atoi(optarg); break;
		case 'q': c.queries = (uint32_t)atoi(optarg); break;
		case 'f': c.file = optarg; break;
		case 'S': c.seed = strtoull(optarg, NULL, 0); break;
		default: die("bad option");
		}
	}
	if (!c.vms || !c.vcpus || !c.pcpus || !c.queries)
		die("--vms, --vcpus, --pcpus and --queries must be positive");
	if (!strcmp(cmd, "all")) {
		bench_all(&c);
	} else if (!strcmp(cmd, "stab") && optind < argc) { /* stabbing queries only (for profiling) */
		struct vcpustat_error err = { 0 };
		struct sht_reader *r;
		struct sht_interval *out;
		double *lat, med, p99;

		if (sht_open(&r, argv[optind], &err))
			die(err.msg);
		out = malloc(sht_nattrs(r) * sizeof(*out));
		lat = malloc(c.queries * sizeof(*lat));
		if (!out || !lat)
			die("out of memory");
		for (uint32_t q = 0; q < c.queries; q++) {
			uint64_t t = xrand() % sht_get_info(r)->end;
			double t0 = now_s();

			if (sht_query_at(r, t, NULL, out, &err))
				die(err.msg);
			lat[q] = (now_s() - t0) * 1e6;
		}
		stats(lat, c.queries, &med, &p99);
		printf("%u stabbing queries: median %.1f us, p99 %.1f us\n", c.queries, med, p99);
		sht_close(r);
		free(out);
		free(lat);
	} else if (!strcmp(cmd, "gen") && optind < argc) {
		gen(&c, argv[optind]);
	} else if (!strcmp(cmd, "corpus") && optind < argc) {
		corpus(argv[optind]);
	} else {
		die("usage: sht-bench all|gen FILE|corpus DIR [options]");
	}
	return 0;
}
