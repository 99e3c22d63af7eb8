// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * record-throughput: how fast `vcpustat record`'s consumer turns ring-buffer
 * records into an SHT file, with the injection program as the producer.
 *
 * 1. Drain + write: the ring buffer is filled with N transitions (two vCPUs
 *    switching on one CPU), then one thread drains it into the recorder
 *    (reorder window + SHT writer). Measured in the same run on the same
 *    records: draining alone (a no-op callback) and draining + fwrite of the
 *    raw 32-byte records (the I/O floor). Target: >= 2 M transitions/s.
 * 2. Sustained: a producer thread injects at a paced RATE transitions/s for
 *    SEC seconds while the consumer drains concurrently with the default
 *    8 MiB ring buffer; lost records are counted. Target: zero at 1 M/s.
 *
 * usage: record-throughput [-n TRANSITIONS] [-r RATE] [-t SEC] [-o DIR]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "live/live.h"
#include "record/record.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* One SWITCH event: vCPU a out (preempted), vCPU b in: two STATE records. */
static int inject_switch(struct vcpustat *vs, __u64 ts, __u32 out, __u32 in)
{
	struct vcpustat_event ev = { .type = VCPUSTAT_EV_SWITCH, .ts = ts, .cpu = 0, .tid = out, .tgid = 500,
				     .tid2 = in, .tgid2 = 500, .arg0 = 0, .arg1 = 1, .arg2 = 1 };

	memcpy(ev.comm, "CPU 0/KVM", 10);
	return vcpustat_inject(vs, &ev);
}

static int make_vcpus(struct vcpustat *vs, __u64 ts)
{
	int err = 0;

	for (__u32 i = 0; i < 2 && !err; i++) {
		struct vcpustat_event ev = { .type = VCPUSTAT_EV_KVM_RUN, .ts = ts, .tid = 501 + i, .tgid = 500 };

		snprintf(ev.comm, sizeof(ev.comm), "CPU %u/KVM", i);
		err = vcpustat_inject(vs, &ev);
	}
	return err;
}

struct sink {
	struct rec_session *rec;
	FILE *raw;
	unsigned long long n;
	struct vcpustat_error err;
};

/* What `vcpustat record` does with each record: its record session. */
static int to_recorder(void *ctx, const struct vcpustat_record *r)
{
	struct sink *s = ctx;

	s->n++;
	return rec_session_record(s->rec, r);
}

static int to_nothing(void *ctx, const struct vcpustat_record *r)
{
	((struct sink *)ctx)->n++;
	return 0;
}

static int to_file(void *ctx, const struct vcpustat_record *r)
{
	struct sink *s = ctx;

	s->n++;
	fwrite(r, sizeof(*r), 1, s->raw);
	return 0;
}

static struct rec_session *open_recorder(const char *path)
{
	struct rec_session_opts so = { .rec = { .path = path, .mono_start_ns = 0, .no_sync = true } };
	struct vcpustat_error err;
	struct rec_session *r;

	if (rec_session_open(&r, &so, &err)) {
		fprintf(stderr, "record-throughput: %s\n", err.msg);
		exit(1);
	}
	return r;
}

/* Fill a fresh instance's ring buffer with 2 * n transitions and drain it with cb. */
static double drain_once(long n, vcpustat_record_fn cb, struct sink *s, unsigned long long *records)
{
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_VCPU, .ringbuf_bytes = 1u << 28 };
	struct vcpustat *vs;
	struct ring_buffer *rb;
	double c0, c1;
	__u64 ts = 1000000;

	if (vcpustat_open(&vs, &o) || make_vcpus(vs, ts)) {
		fprintf(stderr, "record-throughput: cannot load the BPF object (root needed)\n");
		exit(1);
	}
	{
		struct vcpustat_consumer c = { .on_record = cb, .ctx = s };

		rb = vcpustat_ring_buffer(vs, &c);
	}
	vcpustat_drain(rb, 0); /* the vCPUs' creation records */
	s->n = 0;
	for (long i = 0; i < n; i++)
		inject_switch(vs, (ts += 1000), (i & 1) ? 502 : 501, (i & 1) ? 501 : 502);
	c0 = thread_cpu_s();
	while (vcpustat_drain(rb, 0) > 0) /* merged across the CPUs' rings, as record does */
		;
	c1 = thread_cpu_s();
	*records = s->n;
	ring_buffer__free(rb);
	vcpustat_close(vs);
	return c1 - c0;
}

/* ---- sustained ---- */

static atomic_int producing;
static atomic_ullong produced;

struct producer_args {
	struct vcpustat *vs;
	double rate, seconds;
};

static void *producer(void *arg)
{
	struct producer_args *a = arg;
	double t0 = now_s();
	__u64 ts = 2000000000;
	unsigned long long i = 0;

	pin(0);
	while (now_s() - t0 < a->seconds) {
		/* pace: transitions so far should be rate * elapsed (2 per injection) */
		while ((double)(2 * i) > a->rate * (now_s() - t0))
			;
		inject_switch(a->vs, (ts += 500), (i & 1) ? 502 : 501, (i & 1) ? 501 : 502);
		i++;
	}
	produced = 2 * i;
	producing = 0;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = 2000000;
	double rate = 1e6, seconds = 5;
	const char *dir = "/tmp";
	char path[512];
	struct sink s = { 0 };
	unsigned long long recs;
	double t_rec, t_nop, t_raw;
	struct stat st;
	int c;

	while ((c = getopt(argc, argv, "n:r:t:o:h")) != -1) {
		switch (c) {
		case 'n': n = atol(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'o': dir = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-n TRANSITIONS] [-r RATE] [-t SEC] [-o DIR]\n", argv[0]);
			return 2;
		}
	}
	n /= 2; /* 2 transitions per injected switch */
	pin(1);

	/* 1. drain + write, and the baselines on the same kind of fill */
	t_nop = drain_once(n, to_nothing, &s, &recs);
	printf("drain only:            %llu records in %.3f s CPU: %.2f M records/s\n", recs, t_nop, recs / t_nop / 1e6);
	snprintf(path, sizeof(path), "%s/record-throughput.raw", dir);
	s.raw = fopen(path, "w");
	t_raw = drain_once(n, to_file, &s, &recs);
	fclose(s.raw);
	printf("drain + fwrite raw:    %llu records in %.3f s CPU: %.2f M records/s\n", recs, t_raw, recs / t_raw / 1e6);
	unlink(path);
	snprintf(path, sizeof(path), "%s/record-throughput.sht", dir);
	s.rec = open_recorder(path);
	t_rec = drain_once(n, to_recorder, &s, &recs);
	{
		struct rec_session_stats rs;
		double c0 = thread_cpu_s(), c1;

		if (rec_session_finish(&s.rec, 0, &rs, &s.err))
			fprintf(stderr, "record-throughput: %s\n", s.err.msg);
		c1 = thread_cpu_s();
		t_rec += c1 - c0; /* the reorder window drained at close is part of the work */
		stat(path, &st);
		printf("drain + record (SHT):  %llu records in %.3f s CPU: %.2f M transitions/s; %llu intervals, "
		       "%.2f bytes/interval (target >= 2 M/s)\n",
		       recs, t_rec, recs / t_rec / 1e6, (unsigned long long)rs.intervals,
		       (double)st.st_size / (double)(rs.intervals ? rs.intervals : 1));
	}
	unlink(path);

	/* 2. sustained, concurrent, default ring buffer */
	{
		struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_VCPU };
		struct producer_args a = { .rate = rate, .seconds = seconds };
		__u64 lost[VCPUSTAT_NR_LOST];
		struct ring_buffer *rb;
		pthread_t t;

		if (vcpustat_open(&a.vs, &o) || make_vcpus(a.vs, 1000)) {
			fprintf(stderr, "record-throughput: cannot load the BPF object\n");
			return 1;
		}
		snprintf(path, sizeof(path), "%s/record-throughput2.sht", dir);
		memset(&s, 0, sizeof(s));
		s.rec = open_recorder(path);
		{
			struct vcpustat_consumer cons = { .on_record = to_recorder, .ctx = &s };

			rb = vcpustat_ring_buffer(a.vs, &cons);
		}
		vcpustat_drain(rb, 0); /* the vCPUs' creation */
		s.n = 0;
		producing = 1;
		pthread_create(&t, NULL, producer, &a);
		while (producing)
			vcpustat_drain(rb, 10);
		pthread_join(t, NULL);
		while (vcpustat_drain(rb, 0) > 0)
			;
		vcpustat_lost(a.vs, lost);
		printf("sustained %.2f M transitions/s for %.0f s (8 MiB ring buffer): produced %llu, recorded %llu, "
		       "lost %llu (target: 0 at 1 M/s)\n",
		       rate / 1e6, seconds, (unsigned long long)produced, s.n,
		       (unsigned long long)lost[VCPUSTAT_LOST_RINGBUF]);
		rec_session_close(s.rec, 0);
		unlink(path);
		ring_buffer__free(rb);
		vcpustat_close(a.vs);
	}
	return 0;
}
