// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trace-gen: a large, plausible host trace in ftrace text for bench/import.sh.
 *
 *   trace-gen LINES FILE [--no-tgid]
 *   trace-gen --sync ROUNDS HOST_FILE GUEST_FILE
 *   trace-gen --guests N LINES GUEST_LINES DIR
 *
 * 8 CPUs, 4 VMs of 3 vCPUs (QEMU-style "CPU n/KVM" threads), 8 host threads.
 * vCPUs run guest code between kvm_exit/kvm_entry pairs (several reasons,
 * some userspace exits), halt and sleep, get woken, preempted by host
 * threads and each other, migrate; about 15 % of the lines are events the
 * importer skips (irq, softirq, timer). The layout is tracefs' with the tgid
 * and irq-flags columns, 6 decimals.
 *
 * --sync: the synchronization protocol only (tests/sync_synth.h: guest =
 * 1.0002 x host + 5 s, 2-50 us delays, a round every 10-100 ms): ROUNDS
 * rounds of kvm_exit/kvm_hypercall/kvm_entry on the host and the agent's
 * a/d markers in the guest, 9 decimals: 2 x ROUNDS matches.
 *
 * --guests: for the multi-level import (bench/fused.sh): DIR/host.txt, the
 * host trace above (LINES lines) with the sync protocol's rounds of its
 * first N VMs (N <= 4) on their vCPU 2, and DIR/guest<v>.txt, VM v's guest
 * trace on its own clock (guest = (1 + v / 10000) x host + v s): about
 * GUEST_LINES lines of scheduler events (8 guest threads on 3 CPUs) over
 * the host trace's time, and the agent's markers. 6 decimals, as the host's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sync_synth.h"

#define NCPU 8
#define NVM 4
#define NVCPU 3
#define NHOST 8
#define NTHR (NVM * NVCPU + NHOST)

struct thr {
	uint32_t tid, tgid;
	char comm[16];
	int vcpu;    /* index in its VM, -1: host thread */
	int cpu;     /* CPU it runs on, or last ran on */
	int running; /* current on cpu */
	int runnable;
	int in_guest;
};

static struct thr thr[NTHR];
static int cur[NCPU]; /* index in thr[], -1: idle */
static uint64_t seed = 88172645463325252ull;
static uint64_t now = 1000000000000ull; /* ns */
static int tgid_col = 1;
static FILE *out;
static unsigned long long lines;

/* --guests: the host side of the sync rounds, written in time order among the host's lines */
static size_t nrounds, next_round; /* rounds (host lines / 3), lines written */

static void us_time(FILE *f, uint64_t ns)
{
	fprintf(f, "%5llu.%06llu: ", (unsigned long long)(ns / 1000000000ull), (unsigned long long)(ns / 1000 % 1000000));
}

static void thread_head(FILE *f, const char *comm, uint32_t tid, uint32_t tgid, int cpu, uint64_t ns);
static void sync_lines_until(uint64_t t);

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static void head(const char *comm, uint32_t tid, uint32_t tgid, int cpu)
{
	now += 200 + rnd() % 3000;
	if (nrounds)
		sync_lines_until(now);
	if (tgid_col)
		fprintf(out, "%16s-%-7u (%7u) [%03d] d..2. %5llu.%06llu: ", comm, tid, tgid, cpu,
			(unsigned long long)(now / 1000000000ull), (unsigned long long)(now / 1000 % 1000000));
	else
		fprintf(out, "%16s-%-7u [%03d] d..2. %5llu.%06llu: ", comm, tid, cpu,
			(unsigned long long)(now / 1000000000ull), (unsigned long long)(now / 1000 % 1000000));
	lines++;
}

static const char *name_of(int i)
{
	return i < 0 ? "swapper" : thr[i].comm;
}

static void cur_head(int cpu)
{
	int i = cur[cpu];

	if (i < 0)
		head("<idle>", 0, 0, cpu);
	else
		head(thr[i].comm, thr[i].tid, thr[i].tgid, cpu);
}

static void do_switch(int cpu, int next, const char *state)
{
	int prev = cur[cpu];

	cur_head(cpu);
	fprintf(out,
		"sched_switch: prev_comm=%s prev_pid=%u prev_prio=120 prev_state=%s ==> next_comm=%s next_pid=%u "
		"next_prio=120\n",
		prev < 0 ? "swapper/0" : name_of(prev), prev < 0 ? 0 : thr[prev].tid, prev < 0 ? "R" : state,
		next < 0 ? "swapper/0" : name_of(next), next < 0 ? 0 : thr[next].tid);
	if (prev >= 0) {
		thr[prev].running = 0;
		thr[prev].in_guest = 0;
		thr[prev].runnable = state[0] == 'R';
	}
	if (next >= 0) {
		thr[next].running = 1;
		thr[next].runnable = 1;
		thr[next].cpu = cpu;
	}
	cur[cpu] = next;
}

static void skipped(int cpu)
{
	static const char *const ev[] = {
		"irq_handler_entry: irq=24 name=virtio0-input.0",
		"irq_handler_exit: irq=24 ret=handled",
		"softirq_entry: vec=3 [action=NET_RX]",
		"hrtimer_start: hrtimer=00000000a1b2c3d4 function=tick_sched_timer expires=1000000000 softexpires=1000000000 mode=ABS",
	};

	cur_head(cpu);
	fprintf(out, "%s\n", ev[rnd() % 4]);
}

static void vcpu_step(int cpu, int i)
{
	static const char *const reasons[] = { "EPT_VIOLATION", "MSR_WRITE", "EXTERNAL_INTERRUPT", "IO_INSTRUCTION",
					       "PAUSE_INSTRUCTION", "EPT_MISCONFIG", "APIC_WRITE", "HLT" };
	struct thr *t = &thr[i];
	unsigned int r = (unsigned int)(rnd() % 100);

	if (!t->in_guest) {
		cur_head(cpu);
		fprintf(out, "kvm_entry: vcpu %d, rip 0xffffffff8103a2b6 intr_info 0x00000000 error_code 0x00000000\n",
			t->vcpu);
		t->in_guest = 1;
		return;
	}
	if (r < 85) {
		const char *why = reasons[rnd() % 8];

		cur_head(cpu);
		fprintf(out,
			"kvm_exit: vcpu %d reason %s rip 0xffffffff8103a2b6 info1 0x0000000000000000 info2 "
			"0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000\n",
			t->vcpu, why);
		t->in_guest = 0;
		if (!strcmp(why, "HLT") && rnd() % 2) {
			do_switch(cpu, -1, "S");
		} else if (!strcmp(why, "IO_INSTRUCTION") && rnd() % 4 == 0) {
			cur_head(cpu);
			fprintf(out, "kvm_userspace_exit: reason KVM_EXIT_IO (2)\n");
			cur_head(cpu);
			fprintf(out, "kvm_fpu: load\n");
		}
		return;
	}
	t->in_guest = 0;
}

static int sync_traces(unsigned long long rounds, const char *hpath, const char *gpath)
{
	struct synth p = synth_default(1);
	struct vcpustat_sync_match *m;
	FILE *h = fopen(hpath, "w"), *g = fopen(gpath, "w");
	size_t n;

	if (!h || !g) {
		perror("trace-gen");
		return 1;
	}
	/* a round every 10-100 ms: enough host time for the rounds wanted */
	p.duration_ns = (uint64_t)(rounds * 55e6);
	n = synth_generate(&p, &m);
	if (n / 2 > rounds)
		n = 2 * rounds;
	setvbuf(h, NULL, _IOFBF, 1 << 20);
	setvbuf(g, NULL, _IOFBF, 1 << 20);
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint64_t key = (1ull << 48) + i / 2, b = m[i].recv_ns, c = m[i + 1].send_ns;

		fprintf(h, "       CPU 0/KVM-1001    (   1000) [000] d..2. %llu.%09llu: kvm_exit: vcpu 0 reason VMCALL rip "
			   "0xffffffff8103a2b6 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 "
			   "error_code 0x00000000 requests 0x0000000000000000\n",
			(unsigned long long)((b - 400) / 1000000000ull), (unsigned long long)((b - 400) % 1000000000ull));
		fprintf(h, "       CPU 0/KVM-1001    (   1000) [000] d..2. %llu.%09llu: kvm_hypercall: nr 0x56435331 a0 0x%llx "
			   "a1 0x0 a2 0x0 a3 0x0\n",
			(unsigned long long)(b / 1000000000ull), (unsigned long long)(b % 1000000000ull),
			(unsigned long long)key);
		fprintf(h, "       CPU 0/KVM-1001    (   1000) [000] d..2. %llu.%09llu: kvm_entry: vcpu 0, rip 0xffffffff8103a2b6 "
			   "intr_info 0x00000000 error_code 0x00000000\n",
			(unsigned long long)(c / 1000000000ull), (unsigned long long)(c % 1000000000ull));
		fprintf(g, " vcpustat-sync-a-900     (    900) [000] ..... %llu.%09llu: tracing_mark_write: vcpustat_sync: a k=%llu\n",
			(unsigned long long)(m[i].send_ns / 1000000000ull), (unsigned long long)(m[i].send_ns % 1000000000ull),
			(unsigned long long)key);
		fprintf(g, " vcpustat-sync-a-900     (    900) [000] ..... %llu.%09llu: tracing_mark_write: vcpustat_sync: d k=%llu\n",
			(unsigned long long)(m[i + 1].recv_ns / 1000000000ull),
			(unsigned long long)(m[i + 1].recv_ns % 1000000000ull), (unsigned long long)key);
	}
	fclose(h);
	fclose(g);
	fprintf(stderr, "trace-gen: %zu rounds (%zu matches) in %s and %s\n", n / 2, n, hpath, gpath);
	free(m);
	return 0;
}

/* The host trace: `want` lines of the simulation (the threads set up here), then the file is closed. */
static void gen_host(unsigned long long want)
{
	for (int v = 0; v < NVM; v++)
		for (int c = 0; c < NVCPU; c++) {
			struct thr *t = &thr[v * NVCPU + c];

			t->tgid = 10000 + 100 * (uint32_t)v;
			t->tid = t->tgid + 1 + (uint32_t)c;
			snprintf(t->comm, sizeof(t->comm), "CPU %d/KVM", c);
			t->vcpu = c;
			t->cpu = (v * NVCPU + c) % NCPU;
		}
	for (int h = 0; h < NHOST; h++) {
		struct thr *t = &thr[NVM * NVCPU + h];

		t->tid = t->tgid = 500 + (uint32_t)h;
		snprintf(t->comm, sizeof(t->comm), h % 2 ? "stress-ng" : "kworker/%d:1", h);
		t->vcpu = -1;
		t->cpu = h % NCPU;
	}
	for (int c = 0; c < NCPU; c++)
		cur[c] = -1;
	fprintf(out, "# tracer: nop\n#\n");
	while (lines < want) {
		int cpu = (int)(rnd() % NCPU), i = cur[cpu];
		unsigned int r = (unsigned int)(rnd() % 100);

		if (r < 15) {
			skipped(cpu);
		} else if (r < 22) { /* wake a sleeping thread onto this CPU */
			int w = (int)(rnd() % NTHR);

			if (!thr[w].runnable && !thr[w].running) {
				cur_head(cpu);
				fprintf(out, "sched_wakeup: comm=%s pid=%u prio=120 target_cpu=%03d\n", thr[w].comm,
					thr[w].tid, cpu);
				thr[w].runnable = 1;
				thr[w].cpu = cpu;
			}
		} else if (r < 32 || i < 0) { /* a switch to a runnable thread of this CPU, or idle */
			int next = -1;

			for (int k = 0; k < 4; k++) {
				int c = (int)(rnd() % NTHR);

				if (thr[c].runnable && !thr[c].running && c != i) {
					next = c;
					break;
				}
			}
			if (next >= 0 && thr[next].cpu != cpu) {
				cur_head(cpu);
				fprintf(out, "sched_migrate_task: comm=%s pid=%u prio=120 orig_cpu=%d dest_cpu=%d\n",
					thr[next].comm, thr[next].tid, thr[next].cpu, cpu);
				thr[next].cpu = cpu;
			}
			if (next >= 0 || i >= 0)
				do_switch(cpu, next, rnd() % 3 ? "R+" : (rnd() % 2 ? "S" : "D"));
		} else if (thr[i].vcpu >= 0) {
			vcpu_step(cpu, i);
		} else {
			skipped(cpu);
		}
	}
	fclose(out);
}

/* ---- --guests ---- */

enum { H_EXIT, H_HCALL, H_ENTRY };

struct host_line {
	uint64_t ts, key;
	int vm, what;
};
static struct host_line *hl;
static size_t nhl;

static void thread_head(FILE *f, const char *comm, uint32_t tid, uint32_t tgid, int cpu, uint64_t ns)
{
	fprintf(f, "%16s-%-7u (%7u) [%03d] d..2. ", comm, tid, tgid, cpu);
	us_time(f, ns);
	lines++;
}

/* The sync rounds' host lines up to t, each on its VM's vCPU 2 where that thread last was. */
static void sync_lines_until(uint64_t t)
{
	for (; next_round < nhl && hl[next_round].ts <= t; next_round++) {
		const struct host_line *l = &hl[next_round];
		struct thr *v = &thr[l->vm * NVCPU + 2];

		thread_head(out, v->comm, v->tid, v->tgid, v->cpu, l->ts);
		if (l->what == H_EXIT)
			fprintf(out, "kvm_exit: vcpu 2 reason VMCALL rip 0xffffffff8103a2b6 info1 0x0000000000000000 info2 "
				     "0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests "
				     "0x0000000000000000\n");
		else if (l->what == H_HCALL)
			fprintf(out, "kvm_hypercall: nr 0x56435331 a0 0x%llx a1 0x0 a2 0x0 a3 0x0\n",
				(unsigned long long)l->key);
		else
			fprintf(out, "kvm_entry: vcpu 2, rip 0xffffffff8103a2b6 intr_info 0x00000000 error_code "
				     "0x00000000\n");
	}
}

static int by_ts(const void *a, const void *b)
{
	const struct host_line *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Guest v's trace: its scheduler (8 threads, 3 CPUs) over [g0, g1) guest time, and the markers of m[0, n). */
static int guest_trace(const char *path, int v, uint64_t g0, uint64_t g1, unsigned long long want,
		       const struct vcpustat_sync_match *m, size_t n)
{
	FILE *g = fopen(path, "w");
	int gcur[3] = { -1, -1, -1 }, asleep[8] = { 0 };
	size_t k = 0; /* the next marker: match k (a: even, d: odd) */
	uint64_t step = (g1 - g0) / (want ? want : 1), t = g0;

	if (!g) {
		perror(path);
		return 1;
	}
	setvbuf(g, NULL, _IOFBF, 1 << 20);
	fprintf(g, "# tracer: nop\n#\n");
	for (unsigned long long i = 0; i < want; i++) {
		int cpu = (int)(rnd() % 3), prev = gcur[cpu], next = (int)(rnd() % 8);
		const char *state = prev >= 0 && rnd() % 2 ? "S" : "R+";
		char pc[24], nc[24]; /* "swapper/<int>", "worker-<int>" */

		t += step / 2 + rnd() % (step + 1);
		for (; k < n; k++) { /* the markers before t */
			uint64_t mt = k % 2 ? m[k].recv_ns : m[k].send_ns;

			if (mt > t)
				break;
			fprintf(g, " vcpustat-sync-a-900     (    900) [001] ..... ");
			us_time(g, mt);
			fprintf(g, "tracing_mark_write: vcpustat_sync: %c k=%llu\n", k % 2 ? 'd' : 'a',
				(unsigned long long)((uint64_t)(v + 1) << 48) + k / 2);
		}
		snprintf(pc, sizeof(pc), prev < 0 ? "swapper/%d" : "worker-%d", prev < 0 ? cpu : prev);
		fprintf(g, "%16s-%-7d (%7d) [%03d] d..2. ", pc, prev < 0 ? 0 : 100 + prev, prev < 0 ? 0 : 100 + prev, cpu);
		us_time(g, t);
		if (asleep[next] && rnd() % 2) { /* the current thread wakes a sleeping one */
			fprintf(g, "sched_wakeup: comm=worker-%d pid=%d prio=120 target_cpu=%03d\n", next, 100 + next, cpu);
			asleep[next] = 0;
			continue;
		}
		if (next == prev || gcur[(cpu + 1) % 3] == next || gcur[(cpu + 2) % 3] == next || asleep[next])
			next = -1; /* idle */
		snprintf(nc, sizeof(nc), next < 0 ? "swapper/%d" : "worker-%d", next < 0 ? cpu : next);
		fprintf(g, "sched_switch: prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%s ==> next_comm=%s "
			   "next_pid=%d next_prio=120\n",
			pc, prev < 0 ? 0 : 100 + prev, prev < 0 ? "R" : state, nc, next < 0 ? 0 : 100 + next);
		if (prev >= 0 && state[0] == 'S')
			asleep[prev] = 1;
		gcur[cpu] = next;
	}
	fclose(g);
	return 0;
}

static int guests_traces(int nvm, unsigned long long want, unsigned long long gwant, const char *dir)
{
	struct vcpustat_sync_match *m[NVM] = { 0 };
	size_t nm[NVM] = { 0 };
	char path[4096];
	uint64_t start = now, end;
	int e = 0;

	if (nvm < 1 || nvm > NVM) {
		fprintf(stderr, "trace-gen: --guests 1..%d\n", NVM);
		return 2;
	}
	for (int v = 0; v < nvm; v++) {
		struct synth p = synth_default(100 + (uint64_t)v);

		p.alpha = 1.0L + (v + 1) / 10000.0L;
		p.beta = (v + 1) * 1e9L;
		p.host0 = start + 1000000;
		p.duration_ns = want * 1700; /* 200-3200 ns a line */
		nm[v] = synth_generate(&p, &m[v]);
		hl = realloc(hl, (nhl + 3 * nm[v] / 2) * sizeof(*hl));
		if (!hl)
			return 1;
		for (size_t i = 0; i + 1 < nm[v]; i += 2) {
			uint64_t key = ((uint64_t)(v + 1) << 48) + i / 2;

			hl[nhl++] = (struct host_line){ m[v][i].recv_ns - 400, key, v, H_EXIT };
			hl[nhl++] = (struct host_line){ m[v][i].recv_ns, key, v, H_HCALL };
			hl[nhl++] = (struct host_line){ m[v][i + 1].send_ns, key, v, H_ENTRY };
		}
	}
	qsort(hl, nhl, sizeof(*hl), by_ts);
	nrounds = nhl / 3;
	snprintf(path, sizeof(path), "%s/host.txt", dir);
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return 1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	gen_host(want);
	end = now;
	fprintf(stderr, "trace-gen: %llu lines in %s (%.3f s, %zu sync rounds)\n", lines + 2, path, (end - start) / 1e9,
		next_round / 3);
	for (int v = 0; v < nvm && !e; v++) {
		struct synth p = synth_default(100 + (uint64_t)v);
		size_t n = 0;

		p.alpha = 1.0L + (v + 1) / 10000.0L;
		p.beta = (v + 1) * 1e9L;
		while (n + 1 < nm[v] && m[v][n + 1].send_ns <= end) /* the rounds the host trace holds */
			n += 2;
		snprintf(path, sizeof(path), "%s/guest%d.txt", dir, v + 1);
		lines = 0;
		e = guest_trace(path, v, (uint64_t)synth_guest(&p, (long double)start),
				(uint64_t)synth_guest(&p, (long double)end), gwant, m[v], n);
		fprintf(stderr, "trace-gen: %llu lines in %s (%zu sync rounds)\n", gwant + n + 2, path, n / 2);
		free(m[v]);
	}
	free(hl);
	return e;
}

int main(int argc, char **argv)
{
	unsigned long long want;

	if (argc == 5 && !strcmp(argv[1], "--sync"))
		return sync_traces(strtoull(argv[2], NULL, 10), argv[3], argv[4]);
	if (argc == 6 && !strcmp(argv[1], "--guests"))
		return guests_traces(atoi(argv[2]), strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argv[5]);
	if (argc < 3) {
		fprintf(stderr, "usage: trace-gen LINES FILE [--no-tgid] | trace-gen --sync ROUNDS HOST GUEST | "
				"trace-gen --guests N LINES GUEST_LINES DIR\n");
		return 2;
	}
	want = strtoull(argv[1], NULL, 10);
	tgid_col = !(argc > 3 && !strcmp(argv[3], "--no-tgid"));
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	gen_host(want);
	fprintf(stderr, "trace-gen: %llu lines in %s\n", lines + 2, argv[2]);
	return 0;
}
