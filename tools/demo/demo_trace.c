// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * demo-trace: a simulated host trace, in ftrace text, of the scene `vcpustat
 * --demo` stages live: N microvm-like VMs of M vCPUs (QEMU-style "CPU n/KVM"
 * threads) and a CPU hog, all on CPU 0, plus a kworker that wakes every 10 ms.
 *
 *   demo-trace [--seconds S] [--vms N] [--vcpus M] [--chunk-us U] [--seed X] FILE
 *
 * It is a simulation, not a recording: tools/demo/make-synthetic.sh imports
 * it into the interim tools/demo/demo.sht (labelled host=synthetic), and the
 * tests of `vcpustat top --file` import it to get recordings on hosts without
 * /dev/kvm. What it simulates, like tools/microvm with --busy-us 3000
 * --idle-us 2000: each vCPU runs guest code in busy periods of 3 ms of wall
 * time, leaving the guest for port I/O every U us of guest time (SVM exit
 * `io`, then KVM_EXIT_IO to the VMM), then halts (`hlt`, KVM_EXIT_HLT) and
 * sleeps 2 ms; first-touch `npf` exits at start; the 250 Hz tick and timer
 * wakeups exit as `interrupt`. CPU 0 is shared round-robin with 2.4 ms
 * slices checked at each tick, and a woken thread preempts one that ran 1 ms.
 * Same seed, same trace.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US 1000ull
#define MS 1000000ull
#define MAX_THR 260
#define TICK (4 * MS)
#define SLICE (2400 * US)
#define WAKE_PREEMPT (1 * MS)
#define BUSY (3 * MS)
#define IDLE (2 * MS)
#define KWORKER_PERIOD (10 * MS)
#define KWORKER_RUN (120 * US)

enum kind { HOG, KWORKER, VCPU };
enum run { QUEUED, RUNNING, SLEEPING };
enum phase { ENTER, GUEST, HALT, SLEEP_SOON };

struct thr {
	enum kind kind;
	enum run run;
	enum phase phase;
	uint32_t tid, tgid, index;
	char comm[16];
	uint64_t next_at;   /* the current thread's next step (VCPU: by phase; KWORKER: goes to sleep) */
	uint64_t rem;	    /* next_at - now when it was switched out */
	uint64_t wake_at;   /* SLEEPING: when its timer fires */
	uint64_t ran_since; /* switched in at */
	uint64_t guest_since, chunk_left, busy_start;
	int npf_left;
	int halting; /* the VMM answered 0: the guest halts next */
};

static struct thr thr[MAX_THR];
static int nthr, queue[MAX_THR], nqueue, cur = -1;
static uint64_t now, seed = 0x9e3779b97f4a7c15ull, chunk = 1000 * US;
static FILE *out;

static uint64_t rnd(uint64_t n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return n ? seed % n : 0;
}

/* Advance the clock by dt plus up to a quarter of it (jitter). */
static void advance(uint64_t dt)
{
	now += dt + rnd(dt / 4 + 1);
}

/* One line in tracefs's layout (tgid and irq-flags columns, 9 decimals), in the context of thread i (-1: idle). */
static void line(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line(int i, const char *fmt, ...)
{
	const struct thr *t = i >= 0 ? &thr[i] : NULL;
	va_list ap;

	fprintf(out, "%16s-%-7u (%7u) [000] d..2. %5llu.%09llu: ", t ? t->comm : "<idle>", t ? t->tid : 0,
		t ? t->tgid : 0, (unsigned long long)(now / 1000000000ull), (unsigned long long)(now % 1000000000ull));
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}

static void enqueue(int i, bool head)
{
	if (head) {
		memmove(queue + 1, queue, (size_t)nqueue * sizeof(queue[0]));
		queue[0] = i;
	} else {
		queue[nqueue] = i;
	}
	nqueue++;
	thr[i].run = QUEUED;
}

static int dequeue(void)
{
	int i = queue[0];

	memmove(queue, queue + 1, (size_t)--nqueue * sizeof(queue[0]));
	return i;
}

/* cur leaves the CPU with prev_state ("R+": preempted, "S": sleeps); the head of the queue (or idle) runs. */
static void switch_out(const char *state)
{
	int next = nqueue ? dequeue() : -1;
	struct thr *p = cur >= 0 ? &thr[cur] : NULL, *n = next >= 0 ? &thr[next] : NULL;

	line(cur, "sched_switch: prev_comm=%s prev_pid=%u prev_prio=120 prev_state=%s ==> next_comm=%s next_pid=%u "
		  "next_prio=120",
	     p ? p->comm : "swapper/0", p ? p->tid : 0, p ? state : "R", n ? n->comm : "swapper/0", n ? n->tid : 0);
	if (p) {
		p->rem = p->next_at > now ? p->next_at - now : 0;
		if (state[0] == 'R')
			enqueue(cur, false);
		else
			p->run = SLEEPING;
	}
	cur = next;
	if (!n)
		return;
	n->run = RUNNING;
	n->ran_since = now;
	n->next_at = now + (n->rem > 3 * US ? n->rem : 3 * US + rnd(5 * US));
	if (n->kind == KWORKER)
		n->next_at = now + KWORKER_RUN + rnd(KWORKER_RUN);
}

/* The vCPU on the CPU leaves guest mode (exit reason), having used its guest time since guest_since. */
static void vcpu_exit(struct thr *v, const char *reason)
{
	uint64_t used = now - v->guest_since;

	v->chunk_left = v->chunk_left > used ? v->chunk_left - used : 0;
	line(cur, "kvm_exit: vcpu %u reason %s rip 0x0000000000001008 info1 0x0000000000000000 info2 "
		  "0x0000000000000000 intr_info 0x00000000 error_code 0x00000000",
	     v->index, reason);
	v->phase = ENTER;
}

/* The current vCPU's next step: enter the guest, or leave it (npf, io, hlt), or go to sleep. */
static void vcpu_step(struct thr *v)
{
	switch (v->phase) {
	case ENTER:
		line(cur, "kvm_entry: vcpu %u, rip 0x0000000000001008", v->index);
		v->phase = GUEST;
		v->guest_since = now;
		if (v->halting)
			v->next_at = now + 1 * US;
		else if (v->npf_left)
			v->next_at = now + 20 * US + rnd(60 * US);
		else
			v->next_at = now + v->chunk_left;
		break;
	case GUEST:
		if (v->halting) {
			vcpu_exit(v, "hlt");
			advance(1 * US);
			line(cur, "kvm_userspace_exit: reason KVM_EXIT_HLT (5)");
			v->halting = 0;
			v->phase = SLEEP_SOON;
			v->wake_at = now + IDLE;
			v->next_at = now + 4 * US;
		} else if (v->npf_left) {
			vcpu_exit(v, "npf");
			v->npf_left--;
			v->next_at = now + 2 * US + rnd(3 * US);
		} else {
			vcpu_exit(v, "io");
			advance(1 * US);
			line(cur, "kvm_userspace_exit: reason KVM_EXIT_IO (2)");
			/* the VMM answers: the next chunk, or 0 (halt) once the busy period is over */
			if (now - v->busy_start >= BUSY)
				v->halting = 1;
			v->chunk_left = chunk;
			v->next_at = now + 6 * US + rnd(8 * US);
		}
		break;
	case SLEEP_SOON:
		switch_out("S");
		break;
	case HALT:
		break;
	}
}

/* Timer wakeup of sleeper w, in the context of whatever runs on CPU 0. */
static void wake(int w)
{
	struct thr *c = cur >= 0 ? &thr[cur] : NULL, *t = &thr[w];

	if (c && c->kind == VCPU && c->phase == GUEST) {
		vcpu_exit(c, "interrupt");
		c->next_at = now + 2 * US + rnd(2 * US);
		advance(1 * US);
	}
	line(cur, "sched_wakeup: comm=%s pid=%u prio=120 target_cpu=000", t->comm, t->tid);
	t->rem = 0;
	if (t->kind == VCPU) { /* back from the halt: KVM_RUN again, a new busy period */
		t->phase = ENTER;
		t->busy_start = t->wake_at;
	}
	enqueue(w, true);
	if (!c) {
		advance(2 * US);
		switch_out("R");
	} else if (now - c->ran_since >= WAKE_PREEMPT) {
		advance(2 * US);
		switch_out("R+");
	}
}

/* The 250 Hz tick on CPU 0: the current thread is preempted once its slice is used up. */
static void tick(void)
{
	struct thr *c = cur >= 0 ? &thr[cur] : NULL;

	if (!c)
		return;
	if (c->kind == VCPU && c->phase == GUEST) {
		vcpu_exit(c, "interrupt");
		c->next_at = now + 1 * US + rnd(2 * US);
	}
	if (nqueue && now - c->ran_since >= SLICE) {
		advance(2 * US);
		switch_out("R+");
	}
}

static int add_thr(enum kind k, uint32_t tid, uint32_t tgid, uint32_t index, const char *comm)
{
	struct thr *t = &thr[nthr];

	memset(t, 0, sizeof(*t));
	t->kind = k;
	t->tid = tid;
	t->tgid = tgid;
	t->index = index;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	t->chunk_left = chunk;
	t->npf_left = k == VCPU ? 12 : 0;
	return nthr++;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: demo-trace [--seconds S] [--vms N] [--vcpus M] [--chunk-us U] [--seed X] FILE\n"
		   "A simulated ftrace text trace of N VMs x M vCPUs and a CPU hog on CPU 0 (see the source).\n"
		   "VM i's process is pid 1000*(i+1), its vCPU n is thread 1000*(i+1)+2+n; the hog is 900.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' }, { "vms", required_argument, NULL, 'n' },
		{ "vcpus", required_argument, NULL, 'm' },   { "chunk-us", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 'r' },    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double seconds = 20;
	long vms = 2, vcpus = 2, c;
	uint64_t start = 1000 * 1000000000ull, end, next_tick;
	int opt, kworker;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's': seconds = strtod(optarg, NULL); break;
		case 'n': vms = strtol(optarg, NULL, 10); break;
		case 'm': vcpus = strtol(optarg, NULL, 10); break;
		case 'c': chunk = (uint64_t)strtoul(optarg, NULL, 10) * US; break;
		case 'r': seed ^= strtoull(optarg, NULL, 0) * 0x2545f4914f6cdd1dull; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !(seconds > 0 && seconds <= 3600) || vms < 0 || vms > 8 || vcpus < 1 ||
	    vcpus > 16 || chunk < 10 * US) {
		usage(stderr);
		return 2;
	}
	out = fopen(argv[optind], "w");
	if (!out) {
		fprintf(stderr, "demo-trace: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	fprintf(out, "# tracer: nop\n#\n# demo-trace: a simulated trace (tools/demo/demo_trace.c), not a recording\n#\n");
	fprintf(out, "#           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION\n");
	fprintf(out, "#              | |           |       |   |||||     |         |\n");
	add_thr(HOG, 900, 900, 0, "demo-cpu-hog");
	kworker = add_thr(KWORKER, 50, 50, 0, "kworker/0:1");
	for (long v = 0; v < vms; v++)
		for (long m = 0; m < vcpus; m++) {
			char comm[16];

			snprintf(comm, sizeof(comm), "CPU %ld/KVM", m);
			add_thr(VCPU, (uint32_t)(1000 * (v + 1) + 2 + m), (uint32_t)(1000 * (v + 1)), (uint32_t)m, comm);
		}
	now = start;
	end = start + (uint64_t)(seconds * 1e9);
	next_tick = start + TICK;
	thr[kworker].run = SLEEPING;
	thr[kworker].wake_at = start + KWORKER_PERIOD / 2;
	for (int i = 0; i < nthr; i++)
		if (i != kworker) {
			thr[i].busy_start = start;
			enqueue(i, false);
		}
	switch_out("R");
	while (now < end) {
		uint64_t t = next_tick;
		int sleeper = -1;

		for (int i = 0; i < nthr; i++)
			if (thr[i].run == SLEEPING && thr[i].wake_at < t) {
				t = thr[i].wake_at;
				sleeper = i;
			}
		c = cur;
		if (c >= 0 && thr[c].kind != HOG && thr[c].next_at < t) {
			t = thr[c].next_at;
			sleeper = -1;
		} else {
			c = -1;
		}
		if (t > now)
			now = t;
		if (sleeper >= 0) {
			wake(sleeper);
		} else if (c >= 0 && thr[c].kind == KWORKER) {
			thr[c].wake_at = thr[c].ran_since + KWORKER_PERIOD - KWORKER_RUN;
			switch_out("S");
		} else if (c >= 0) {
			vcpu_step(&thr[c]);
		} else {
			tick();
			next_tick += TICK;
		}
	}
	if (fclose(out)) {
		fprintf(stderr, "demo-trace: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	return 0;
}
