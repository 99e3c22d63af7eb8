// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One VM process: a KVM VM with no in-kernel irqchip (so HLT exits to user
 * space; with --irqchip, one, and HLT stays in KVM until the guest's LAPIC
 * timer fires), 64 KiB of guest RAM holding the guest program (guest.c), and one
 * thread per vCPU named like QEMU's ("CPU <n>/KVM").
 *
 * Threads and signals:
 * - SIGINT, SIGTERM and SIGUSR1 are blocked in every thread. The main thread
 *   takes SIGINT/SIGTERM from a signalfd (stop), and waits for the vCPU
 *   threads (eventfd: all ready, or one failed) and for --duration.
 * - SIGUSR1 kicks a vCPU thread when stopping. It is unblocked only inside
 *   KVM_RUN (KVM_SET_SIGNAL_MASK) and inside the halt sleep (ppoll's mask),
 *   so a kick can never be lost between a check of the stop flag and the
 *   blocking call: a pending kick makes either return EINTR at once.
 *
 * Per vCPU the thread measures (CLOCK_MONOTONIC) the time inside each
 * KVM_RUN call and the time from a KVM_EXIT_HLT to the next KVM_RUN call
 * (the halt sleep); the two kinds of intervals never overlap.
 *
 * With --mix the guest runs the mix program (guest.c): before each chunk it
 * runs the chosen ops and counts them in its mailbox; the VMM answers the
 * MMIO writes (KVM_EXIT_MMIO) and, for `touch`, picks the page to touch and
 * discards (MADV_DONTNEED) the vCPU's pages once it has touched them all,
 * so that every touch is a first touch: a nested page fault. Once the vCPU
 * threads have stopped, the main thread reads the counters from guest
 * memory and KVM's own counters for each vCPU (KVM_GET_STATS_FD).
 *
 * Reporting: one JSON document per line on --report-fd, {"type":"ready",...}
 * once every vCPU has returned from its first KVM_RUN, then
 * {"type":"report",...} at the end. Errors go to stderr as sentences.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "exit_reasons.h"
#include "microvm.h"

#define KICK_SIGNAL SIGUSR1
#define TSS_ADDR 0xfffbd000ul /* where QEMU puts it: below the BIOS, outside our RAM */
#define NR_EXIT_CODES 64      /* KVM_EXIT_* codes we count by number (higher: the last slot) */
#define CHUNK_ITERS_MAX 1000000000ull

#define X(code, name) [code] = #name,
static const char *const kvm_exit_names[] = { VCPUSTAT_KVM_EXIT_REASONS(X) };
#undef X

struct vm;

struct vcpu_stats {
	uint64_t exits[NR_EXIT_CODES]; /* by KVM_EXIT_* code */
	uint64_t kvm_runs;	       /* KVM_RUN calls */
	int last_exit;		       /* KVM_EXIT_* of the last return from KVM_RUN (-1: none), never resumed */
	uint64_t kvm_run_ns;	       /* time inside KVM_RUN */
	uint64_t halts;		       /* KVM_EXIT_HLT exits (--irqchip: halts the guest was told to time) */
	uint64_t halted_ns;	       /* time from KVM_EXIT_HLT to the next KVM_RUN (or the stop);
					  --irqchip: from the timer's answer to the next work request */
	uint64_t timer_irqs;	       /* --irqchip: timer interrupts the guest took (counted by it) */
	uint64_t ipis;		       /* --ipi: IPIs the guest took (counted by it) */
	uint64_t ipis_sent;	       /* --ipi: IPIs vCPU 0 was told to send */
	uint64_t msis;		       /* --msi-us: the device's MSIs the guest took (counted by it) */
	bool halt_cut_short;	       /* the stop ended the last halt before idle-us */
	uint64_t busy_periods;	       /* busy periods begun */
	uint64_t chunks;	       /* chunks of work handed to the guest */
	uint64_t chunk_iters;	       /* loop iterations per chunk (calibrated or --chunk-iters) */
	uint64_t as_chunks[2], as_iters[2]; /* --address-spaces: chunks and iterations in A and B */
	uint64_t ops[MIX_NR_OPS];      /* --mix ops done (counted by the guest; mmio: by the VMM) */
	uint64_t mmio;		       /* KVM_EXIT_MMIO writes to GUEST_MMIO_ADDR */
	bool schedstat_ok;
	uint64_t sched_run_ns, sched_wait_ns, sched_timeslices;
	bool switches_ok;
	uint64_t voluntary_switches, involuntary_switches; /* at its end: times it slept, was preempted */
	bool run_sleeps_ok;
	uint64_t run_sleeps; /* voluntary switches from just before its first KVM_RUN to the stop */
	bool guest_time_ok;
	uint64_t utime_ns, stime_ns, guest_time_ns; /* /proc stat's, in ticks: the kernel's own sampling */
};

struct vcpu {
	struct vm *vm;
	unsigned int index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	pid_t tid;
	struct vcpu_stats st;
	unsigned int touch_first, touch_pages, touch_next; /* its share of the touch area, in pages */
	json_t *kvm_stats;	/* KVM's counters at the end, or NULL ... */
	json_t *kvm_hists;	/* ... its histograms' totals ... */
	char kvm_stats_why[160]; /* ... and why */
	char error[320];
};

struct vm {
	const struct microvm_opts *o;
	int kvm_fd, vm_fd;
	void *mem;
	void *touch_mem; /* GUEST_TOUCH_SIZE at GUEST_TOUCH_ADDR, with --mix touch */
	size_t run_size;
	struct vcpu *vcpus;
	unsigned int nr_vcpus;
	int wake_fd;		/* eventfd: a vCPU got ready or failed */
	int stop;		/* atomic: vCPU threads must return */
	unsigned int nr_ready;	/* atomic: vCPUs back from their first KVM_RUN */
	int failed;		/* atomic: a vCPU thread failed (its error[] says why) */
	uint64_t busy_ns, idle_ns, chunk_ns;
	struct kvm_cpuid2 *cpuid; /* --irqchip: what KVM supports, given to each vCPU */
	sigset_t sleep_mask;	/* the threads' mask without KICK_SIGNAL */
	/* --io-thread-us: the I/O thread */
	pthread_t io_thread;
	bool io_started;
	pid_t io_tid;
	uint64_t io_periods; /* busy periods done (--msi-us: rounds of MSIs sent) */
	uint64_t msis_sent;  /* --msi-us: KVM_SIGNAL_MSI calls KVM delivered */
	struct vcpu_stats io_st; /* its schedstat and context switches only */
	/* --hold: vCPU threads that read their schedstat wait on hold_cond */
	pthread_mutex_t hold_lock;
	pthread_cond_t hold_cond;
	unsigned int nr_held; /* under hold_lock */
	bool hold_released;   /* under hold_lock */
	char io_error[160];
	/* where KVM has no per-vCPU counters (before 5.14): the VM's, from debugfs, or NULL and why */
	json_t *kvm_stats;
	char kvm_stats_why[160];
};

static void err_msg(const struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err_msg(const struct vm *vm, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "microvm: VM %s: %s\n", vm->o->name, msg);
}

static void wake_main(struct vm *vm)
{
	uint64_t one = 1;

	if (write(vm->wake_fd, &one, sizeof(one)) < 0) {
		/* cannot happen for an eventfd below its maximum; the main thread polls anyway */
	}
}

static int vcpu_fail(struct vcpu *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vcpu_fail(struct vcpu *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->error, sizeof(v->error), fmt, ap);
	va_end(ap);
	__atomic_store_n(&v->vm->failed, 1, __ATOMIC_RELEASE);
	wake_main(v->vm);
	return -1;
}

static const char *exit_name(unsigned int code, char *buf, size_t len)
{
	if (code < sizeof(kvm_exit_names) / sizeof(kvm_exit_names[0]) && kvm_exit_names[code])
		return kvm_exit_names[code];
	snprintf(buf, len, "EXIT_%u", code);
	return buf;
}

/* ---- the vCPU thread ---------------------------------------------------- */

/*
 * Chunk calibration (no --chunk-iters): hand out chunks of 1, 2, 4, 8, ...
 * loop iterations, CAL_SAMPLES of each size, and measure each chunk in
 * thread CPU time (not wall time, so that preemption does not count) from
 * the answer to the next I/O exit. The cheapest of the samples of a size is
 * its cost (noise, such as an interrupt, only ever adds). The cost of a
 * 1-iteration chunk is the fixed cost of the exit round trip; once a size
 * costs twice that (or the target), the slope gives ns per iteration and
 * chunk_iters = chunk-us / slope.
 */
#define CAL_SAMPLES 3
#define CAL_MAX_ITERS (1ull << 26)

struct calibration {
	bool active;
	uint64_t iters;	       /* the size being measured */
	unsigned int samples;  /* taken of this size */
	uint64_t min_ns;       /* the cheapest of them */
	uint64_t base_ns;      /* the cost of a 1-iteration chunk */
	uint64_t answered_cpu; /* thread CPU time when the chunk was handed out */
};

static void calibrate(struct vcpu *v, struct calibration *c, uint64_t iters, uint64_t cost)
{
	uint64_t target = v->vm->chunk_ns;
	double slope, n;

	if (iters != c->iters)
		return;
	if (!c->samples++ || cost < c->min_ns)
		c->min_ns = cost;
	if (c->samples < CAL_SAMPLES)
		return;
	c->samples = 0;
	if (c->iters == 1) {
		c->base_ns = c->min_ns;
		c->iters = 2;
		return;
	}
	if (c->min_ns < 2 * c->base_ns && c->min_ns < target && c->iters < CAL_MAX_ITERS) {
		c->iters *= 2;
		return;
	}
	slope = c->min_ns > c->base_ns ? (double)(c->min_ns - c->base_ns) / (double)(c->iters - 1) : 0;
	n = slope > 0 ? (double)target / slope : (double)c->iters;
	if (n < 1)
		n = 1;
	if (n > CHUNK_ITERS_MAX)
		n = CHUNK_ITERS_MAX;
	v->st.chunk_iters = (uint64_t)n;
	c->active = false;
}

struct busy_state {
	uint64_t start;		 /* start of the current busy period */
	uint64_t chunks;	 /* chunks handed out in it */
	uint64_t last_answer;	 /* iterations of the chunk the guest is running, 0 = none */
	uint64_t halt_start;	 /* --irqchip: when the guest was told its halt's time, 0 = not halting */
	unsigned int kick;	 /* --ipi, vCPU 0: the next vCPU to send an IPI to after this halt */
};

static unsigned char *mailbox(const struct vcpu *v)
{
	return (unsigned char *)v->vm->mem + GUEST_MAILBOX_ADDR + GUEST_MAILBOX_SIZE * v->index;
}

/*
 * --mix touch: tell the guest which page to touch in its next chunk. Once
 * it has touched all of its pages, discard them (the guest's next touch of
 * each is a first touch again: KVM's mapping is gone with the memory).
 */
static int next_touch(struct vcpu *v)
{
	char *first = (char *)v->vm->touch_mem + (size_t)v->touch_first * GUEST_PAGE_SIZE;
	uint16_t seg;

	if (v->touch_next == v->touch_pages) {
		if (madvise(first, (size_t)v->touch_pages * GUEST_PAGE_SIZE, MADV_DONTNEED))
			return vcpu_fail(v, "vCPU %u: madvise(MADV_DONTNEED) of its touch pages: %s", v->index,
					 strerror(errno));
		v->touch_next = 0;
	}
	seg = (uint16_t)((GUEST_TOUCH_ADDR + (v->touch_first + v->touch_next) * GUEST_PAGE_SIZE) >> 4);
	memcpy(mailbox(v) + MAILBOX_TOUCH_SEG, &seg, sizeof(seg));
	v->touch_next++;
	return 0;
}

/* --mix mmio: the guest's 1-byte write to GUEST_MMIO_ADDR; nothing is there. */
static int handle_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	if (!(v->vm->o->mix & (1u << MIX_MMIO)) || run->mmio.phys_addr != GUEST_MMIO_ADDR || !run->mmio.is_write ||
	    run->mmio.len != 1)
		return -1;
	v->st.mmio++;
	return 0;
}

/* `in eax, 0x10`: answer the next chunk's iterations, or 0 = halt. */
static int handle_io(struct vcpu *v, uint64_t now, struct busy_state *b, struct calibration *c)
{
	struct kvm_run *run = v->run;
	struct vm *vm = v->vm;
	uint32_t answer;

	if (vm->o->irqchip && run->io.direction == KVM_EXIT_IO_IN && run->io.port == GUEST_PORT_IDLE &&
	    run->io.size == 4 && run->io.count == 1) {
		/*
		 * the guest arms its LAPIC timer with this many ns (divide 1, 1 GHz
		 * bus) and halts; with --ipi, vCPUs but 0 wait for vCPU 0's IPI;
		 * with --msi-us, all wait for the device's MSI
		 */
		answer = (vm->o->ipi && v->index) || vm->o->msi_us ? 0 : (uint32_t)vm->idle_ns;
		memcpy((char *)run + run->io.data_offset, &answer, sizeof(answer));
		v->st.halts++;
		b->halt_start = now;
		return 0;
	}
	if (b->halt_start) { /* back from a halt in KVM: a new busy period */
		v->st.halted_ns += now - b->halt_start;
		*b = (struct busy_state){ .start = now, .kick = 1 };
		v->st.busy_periods++;
	}
	if (vm->o->irqchip && run->io.direction == KVM_EXIT_IO_IN && run->io.port == GUEST_PORT_KICK &&
	    run->io.size == 4 && run->io.count == 1) {
		/*
		 * --ipi: after each of its halts vCPU 0 sends an IPI to every other
		 * vCPU (APIC id = index), halted or not: one that is still busy takes
		 * it at its next `sti` and halts until the next round.
		 */
		answer = 0;
		if (vm->o->ipi && !v->index && b->kick < vm->nr_vcpus) {
			answer = b->kick + 1;
			b->kick++;
			v->st.ipis_sent++;
		}
		memcpy((char *)run + run->io.data_offset, &answer, sizeof(answer));
		return 0;
	}
	if (run->io.direction != KVM_EXIT_IO_IN || run->io.port != GUEST_PORT_WORK || run->io.size != 4 ||
	    run->io.count != 1)
		return vcpu_fail(v, "vCPU %u: unexpected port I/O: %s port 0x%x, size %u, count %u", v->index,
				 run->io.direction == KVM_EXIT_IO_IN ? "in" : "out", run->io.port, run->io.size,
				 run->io.count);
	if (c->active && b->last_answer)
		calibrate(v, c, b->last_answer, thread_cpu_ns() - c->answered_cpu);

	if (vm->idle_ns && b->chunks && now - b->start >= vm->busy_ns) {
		answer = 0; /* busy period over: the guest halts */
	} else {
		answer = (uint32_t)(c->active ? c->iters : v->st.chunk_iters);
		if (vm->o->address_spaces) {
			/* the guest switches page directory before each chunk: A, B, A, ...; B's are shorter */
			unsigned int as = (unsigned int)(v->st.chunks & 1);

			if (as)
				answer = answer / GUEST_AS_RATIO ? answer / GUEST_AS_RATIO : 1;
			v->st.as_chunks[as]++;
			v->st.as_iters[as] += answer;
		}
		b->chunks++;
		v->st.chunks++;
		if (vm->o->mix & (1u << MIX_TOUCH) && next_touch(v))
			return -1;
	}
	b->last_answer = answer;
	memcpy((char *)run + run->io.data_offset, &answer, sizeof(answer));
	if (c->active && answer)
		c->answered_cpu = thread_cpu_ns();
	return 0;
}

/* Sleep until `until` (CLOCK_MONOTONIC ns), or until kicked to stop. */
static void halt_sleep(struct vm *vm, uint64_t until)
{
	while (!__atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE)) {
		uint64_t t = now_ns(), rem;
		struct timespec ts;

		if (t >= until)
			return;
		rem = until - t;
		ts.tv_sec = (time_t)(rem / 1000000000ull);
		ts.tv_nsec = (long)(rem % 1000000000ull);
		ppoll(NULL, 0, &ts, &vm->sleep_mask); /* 0 = slept, -1/EINTR = kicked */
	}
}

static int unexpected_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	struct kvm_regs regs;
	char rip[32] = "?", nb[24];

	if (ioctl(v->fd, KVM_GET_REGS, &regs) == 0) {
		size_t size = v->vm->o->mix ? guest_code_mix_size :
			      v->vm->o->irqchip	      ? guest_code_irq_size :
			      v->vm->o->address_spaces ? guest_code_as_size :
			      v->vm->o->nested	       ? guest_code_nested_size :
							 guest_code_size;

		snprintf(rip, sizeof(rip), "0x%llx", (unsigned long long)regs.rip);
		/*
		 * The program only jumps within itself: a CPU found elsewhere was
		 * put there by the CPU (seen under QEMU's multi-threaded TCG
		 * emulating SVM, docs/kvmlab.md "Known problems"), not by the program.
		 */
		if (regs.rip < GUEST_CODE_ADDR || regs.rip >= GUEST_CODE_ADDR + size)
			return vcpu_fail(v, "vCPU %u: the guest CPU left its program (rip %s, the program is at 0x%x-0x%zx), "
					 "then KVM_EXIT_%s", v->index, rip, GUEST_CODE_ADDR, GUEST_CODE_ADDR + size - 1,
					 exit_name(run->exit_reason, nb, sizeof(nb)));
	}
	switch (run->exit_reason) {
	case KVM_EXIT_SHUTDOWN:
		return vcpu_fail(v, "vCPU %u: the guest shut down (triple fault) at rip %s", v->index, rip);
	case KVM_EXIT_FAIL_ENTRY:
		return vcpu_fail(v, "vCPU %u: KVM could not enter the guest (hardware reason 0x%llx) at rip %s",
				 v->index, (unsigned long long)run->fail_entry.hardware_entry_failure_reason, rip);
	case KVM_EXIT_INTERNAL_ERROR:
		return vcpu_fail(v, "vCPU %u: KVM internal error, suberror %u (1 = emulation failed) at rip %s",
				 v->index, run->internal.suberror, rip);
	case KVM_EXIT_MMIO:
		return vcpu_fail(v, "vCPU %u: unexpected MMIO %s at 0x%llx at rip %s", v->index,
				 run->mmio.is_write ? "write" : "read", (unsigned long long)run->mmio.phys_addr, rip);
	default:
		return vcpu_fail(v, "vCPU %u: unexpected exit KVM_EXIT_%s (%u) at rip %s", v->index,
				 exit_name(run->exit_reason, nb, sizeof(nb)), run->exit_reason, rip);
	}
}

/*
 * Thread tid's utime, stime and guest_time (fields 14, 15 and 43 of
 * /proc/<pid>/task/<tid>/stat, in clock ticks): the kernel's own account of
 * its time, sampled at each scheduler tick (guest mode: PF_VCPU; guest time
 * is part of utime), or exact with full dynticks accounting. The comm
 * (field 2) may hold spaces and parentheses: fields are counted after its
 * last ')'.
 */
static void read_guest_time(pid_t tid, struct vcpu_stats *st)
{
	static const int want[3] = { 14, 15, 43 };
	unsigned long long ticks[3];
	char path[64], buf[1024], *p, *end;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd, field = 3, k;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return;
	p++; /* at the space before field 3 (state) */
	for (k = 0; k < 3; k++) {
		for (; field < want[k] && p; field++)
			p = strchr(p + 1, ' ');
		if (!p)
			return;
		errno = 0;
		ticks[k] = strtoull(p + 1, &end, 10);
		if (errno || end == p + 1)
			return;
	}
	st->utime_ns = (uint64_t)ticks[0] * (1000000000ull / (uint64_t)hz);
	st->stime_ns = (uint64_t)ticks[1] * (1000000000ull / (uint64_t)hz);
	st->guest_time_ns = (uint64_t)ticks[2] * (1000000000ull / (uint64_t)hz);
	st->guest_time_ok = true;
}

/* The calling thread's context switches: voluntary (it slept) and not (it was preempted). */
static bool thread_switches(uint64_t *voluntary, uint64_t *involuntary)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return false;
	*voluntary = (uint64_t)ru.ru_nvcsw;
	*involuntary = (uint64_t)ru.ru_nivcsw;
	return true;
}

/*
 * Thread tid's /proc schedstat (and guest_time) into st. Its run time is the
 * scheduler's sum_exec_runtime, which the kernel brings up to date for a
 * running task only at a tick or a switch: read by the running thread
 * itself, it misses everything since. Reading the thread's CPU-time clock
 * first updates it (task_sched_runtime() runs the scheduler's update_curr()).
 */
static void read_schedstat(pid_t tid, struct vcpu_stats *st)
{
	char path[64];
	unsigned long long run, wait, slices;
	struct timespec ts;
	FILE *f;

	if (tid == gettid())
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%llu %llu %llu", &run, &wait, &slices) == 3) {
		st->sched_run_ns = run;
		st->sched_wait_ns = wait;
		st->sched_timeslices = slices;
		st->schedstat_ok = true;
	}
	fclose(f);
	read_guest_time(tid, st);
	if (tid == gettid())
		st->switches_ok = thread_switches(&st->voluntary_switches, &st->involuntary_switches);
}

/*
 * --msi-us X: the I/O thread as a device. Every X us, an MSI to each vCPU
 * (fixed delivery to APIC id = index, vector GUEST_MSI_VECTOR), as a device
 * model's irqfd would raise it: KVM delivers it to the LAPIC from this
 * thread and kicks the vCPU awake.
 */
static void device_loop(struct vm *vm)
{
	uint64_t next = now_ns();

	while (!vm->io_error[0] && !__atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE)) {
		next += vm->o->msi_us * 1000;
		halt_sleep(vm, next);
		if (__atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE))
			break;
		for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
			struct kvm_msi msi = { .address_lo = 0xfee00000u | i << 12, .data = GUEST_MSI_VECTOR };
			int r = ioctl(vm->vm_fd, KVM_SIGNAL_MSI, &msi);

			if (r > 0)
				vm->msis_sent++;
			else if (r < 0 && errno != EINTR)
				snprintf(vm->io_error, sizeof(vm->io_error), "the device: KVM_SIGNAL_MSI to vCPU %u: %s", i,
					 strerror(errno));
		}
		vm->io_periods++;
	}
}

/*
 * The I/O thread (--io-thread-us X): X us of CPU time, then X us asleep,
 * until the stop; named like QEMU's I/O threads, pinned like the vCPUs. Its
 * schedstat is its last act, as for the vCPUs. With --msi-us, the device.
 */
static void *io_thread(void *arg)
{
	struct vm *vm = arg;
	uint64_t x = vm->o->io_thread_us * 1000;

	vm->io_tid = gettid();
	pthread_setname_np(pthread_self(), "IO iothread0");
	if (vm->o->pin >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(vm->o->pin, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			snprintf(vm->io_error, sizeof(vm->io_error), "the I/O thread: pinning to CPU %d: %s", vm->o->pin,
				 strerror(errno));
	}
	if (vm->o->msi_us)
		device_loop(vm);
	while (!vm->o->msi_us && !vm->io_error[0] && !__atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE)) {
		uint64_t until = thread_cpu_ns() + x;

		while (thread_cpu_ns() < until && !__atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE))
			;
		vm->io_periods++;
		halt_sleep(vm, now_ns() + x);
	}
	read_schedstat(vm->io_tid, &vm->io_st);
	return NULL;
}

/*
 * --hold: a vCPU thread that has read its schedstat blocks here (off CPU)
 * until the main thread lets it go, so what it runs after that read (its
 * exit, the sanitizer's teardown) comes after whatever the holder of the
 * file measured.
 */
static void hold_here(struct vm *vm)
{
	if (!vm->o->hold_path)
		return;
	pthread_mutex_lock(&vm->hold_lock);
	vm->nr_held++;
	pthread_cond_broadcast(&vm->hold_cond);
	while (!vm->hold_released)
		pthread_cond_wait(&vm->hold_cond, &vm->hold_lock);
	pthread_mutex_unlock(&vm->hold_lock);
}

/* The main thread: wait until n vCPU threads are held. */
static void hold_wait(struct vm *vm, unsigned int n)
{
	pthread_mutex_lock(&vm->hold_lock);
	while (vm->nr_held < n)
		pthread_cond_wait(&vm->hold_cond, &vm->hold_lock);
	pthread_mutex_unlock(&vm->hold_lock);
}

/* The main thread, all held: write the file, wait until it is gone (600 s at most), let them go. */
static void hold_release(struct vm *vm)
{
	const char *path = vm->o->hold_path;
	uint64_t until = now_ns() + 600 * 1000000000ull;
	int err = write_file_atomic(path, "held\n");

	if (err)
		err_msg(vm, "--hold %s: %s", path, strerror(-err));
	while (!err && access(path, F_OK) == 0 && now_ns() < until)
		usleep(10 * 1000);
	if (!err && now_ns() >= until)
		err_msg(vm, "--hold %s: still there after 600 s; the vCPU threads go on", path);
	pthread_mutex_lock(&vm->hold_lock);
	vm->hold_released = true;
	pthread_cond_broadcast(&vm->hold_cond);
	pthread_mutex_unlock(&vm->hold_lock);
}

static void mark_ready(struct vcpu *v)
{
	struct vm *vm = v->vm;

	if (__atomic_add_fetch(&vm->nr_ready, 1, __ATOMIC_ACQ_REL) == vm->nr_vcpus)
		wake_main(vm);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	struct vcpu_stats *st = &v->st;
	struct calibration cal = { .active = !vm->o->chunk_iters, .iters = 1 };
	struct busy_state busy = { 0 };
	uint64_t halt_start = 0, t0, t1, sleeps0 = 0, sleeps1, unused;
	bool halted = false, first = true;
	char comm[16];
	int err;

	st->last_exit = -1;

	v->tid = gettid();
	snprintf(comm, sizeof(comm), "CPU %u/KVM", v->index);
	err = pthread_setname_np(pthread_self(), comm);
	if (err) {
		vcpu_fail(v, "vCPU %u: naming the thread '%s': %s", v->index, comm, strerror(err));
		goto out;
	}
	if (vm->o->pin >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(vm->o->pin, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			vcpu_fail(v, "vCPU %u: pinning to CPU %d: %s", v->index, vm->o->pin, strerror(errno));
			goto out;
		}
	}

	busy.start = now_ns();
	st->busy_periods = 1;
	st->run_sleeps_ok = thread_switches(&sleeps0, &unused);
	while (!__atomic_load_n(&vm->stop, __ATOMIC_ACQUIRE)) {
		t0 = now_ns();
		if (halted) { /* the halt is over: a new busy period begins */
			st->halted_ns += t0 - halt_start;
			halted = false;
			busy = (struct busy_state){ .start = t0 };
			st->busy_periods++;
		}
		err = ioctl(v->fd, KVM_RUN, 0);
		t1 = now_ns();
		st->kvm_runs++;
		st->kvm_run_ns += t1 - t0;
		if (first) {
			first = false;
			mark_ready(v);
		}
		if (err < 0) {
			if (errno == EINTR || errno == EAGAIN) { /* kicked (KVM_EXIT_INTR) */
				st->exits[KVM_EXIT_INTR]++;
				st->last_exit = KVM_EXIT_INTR;
				continue;
			}
			vcpu_fail(v, "vCPU %u: KVM_RUN: %s", v->index, strerror(errno));
			break;
		}
		st->exits[v->run->exit_reason < NR_EXIT_CODES ? v->run->exit_reason : NR_EXIT_CODES - 1]++;
		st->last_exit = (int)v->run->exit_reason;
		if (v->run->exit_reason == KVM_EXIT_IO) {
			if (handle_io(v, t1, &busy, &cal))
				break;
		} else if (v->run->exit_reason == KVM_EXIT_MMIO && handle_mmio(v) == 0) {
			/* counted; KVM completes the write at the next KVM_RUN */
		} else if (v->run->exit_reason == KVM_EXIT_HLT) {
			st->halts++;
			halted = true;
			halt_start = t1;
			busy.last_answer = 0;
			halt_sleep(vm, t1 + vm->idle_ns);
		} else {
			unexpected_exit(v);
			break;
		}
	}
	if (st->run_sleeps_ok && thread_switches(&sleeps1, &unused))
		st->run_sleeps = sleeps1 - sleeps0;
	else
		st->run_sleeps_ok = false;
	if (halted || busy.halt_start) { /* stopped while halted: close the halt at the stop */
		uint64_t t = now_ns(), from = halted ? halt_start : busy.halt_start;

		st->halted_ns += t - from;
		st->halt_cut_short = t - from < vm->idle_ns;
	}
	if (cal.active) /* stopped before calibration finished: report what it was at */
		st->chunk_iters = cal.iters;
out:
	read_schedstat(v->tid, &v->st);
	hold_here(vm);
	return NULL;
}

/* ---- setting the VM up -------------------------------------------------- */

static int kvm_ioctl(struct vm *vm, int fd, unsigned long req, void *arg, const char *what)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		err_msg(vm, "%s: %s", what, strerror(errno));
	return r;
}

/*
 * 32-bit protected mode with paging (4 MiB pages, page directory at cr3),
 * flat 4 GiB segments (their cached descriptors: the guest never loads a
 * selector, so no GDT), and efer.
 */
static void flat_paged(struct kvm_sregs *sregs, uint64_t cr3, uint64_t efer)
{
	struct kvm_segment code = { .base = 0, .limit = 0xffffffff, .selector = 0x8, .type = 0xb, .present = 1,
				    .dpl = 0, .db = 1, .s = 1, .l = 0, .g = 1 };
	struct kvm_segment data = code;

	data.selector = 0x10;
	data.type = 0x3;
	sregs->cs = code;
	sregs->ds = sregs->es = sregs->ss = sregs->fs = sregs->gs = data;
	sregs->cr0 = 0x80000011; /* PG | ET | PE */
	sregs->cr4 = 0x10;	 /* PSE: 4 MiB pages */
	sregs->cr3 = cr3;
	sregs->efer = efer;
}

/* Little-endian stores into guest memory. */
static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* A segment of a VMCB's save area: selector, attributes (SVM's packed form), limit, base. */
static void vmcb_seg(uint8_t *vmcb, unsigned int off, uint16_t sel, uint16_t attrib, uint32_t limit)
{
	put16(vmcb + off, sel);
	put16(vmcb + off + 2, attrib);
	put32(vmcb + off + 4, limit);
	put64(vmcb + off + 8, 0);
}

/*
 * --nested: vCPU i's VMCB for its guest (AMD APM vol. 2, appendix B; the
 * offsets of Linux's struct vmcb): intercept VMRUN (SVM requires it),
 * VMMCALL and HLT; ASID 1; no nested paging (its guest shares the
 * hypervisor's flat physical memory); 32-bit protected mode with flat
 * segments, EFER.SVME (required), at GUEST_NESTED_CODE (the hypervisor sets
 * RIP there again before each VMRUN).
 */
static void nested_vmcb(struct vm *vm, unsigned int i)
{
	uint8_t *b = (uint8_t *)vm->mem + GUEST_VMCB(i);

	memset(b, 0, 4096);
	put32(b + 0x00c, 1u << 24);		/* intercept word 3: HLT */
	put32(b + 0x010, 1u << 0 | 1u << 1);	/* word 4: VMRUN, VMMCALL */
	put32(b + 0x058, 1);			/* guest ASID */
	vmcb_seg(b, 0x400, 0x10, 0xc93, 0xffffffff); /* es */
	vmcb_seg(b, 0x410, 0x08, 0xc9b, 0xffffffff); /* cs: 32-bit code */
	vmcb_seg(b, 0x420, 0x10, 0xc93, 0xffffffff); /* ss */
	vmcb_seg(b, 0x430, 0x10, 0xc93, 0xffffffff); /* ds */
	vmcb_seg(b, 0x440, 0x10, 0xc93, 0xffffffff); /* fs */
	vmcb_seg(b, 0x450, 0x10, 0xc93, 0xffffffff); /* gs */
	vmcb_seg(b, 0x490, 0, 0x8b, 0x67);	      /* tr: a busy 32-bit TSS */
	put64(b + 0x4d0, 0x1000);		      /* efer: SVME */
	put64(b + 0x558, 0x11);			      /* cr0: ET | PE */
	put64(b + 0x560, 0x400);		      /* dr7 */
	put64(b + 0x568, 0xffff0ff0);		      /* dr6 */
	put64(b + 0x570, 0x2);			      /* rflags */
	put64(b + 0x578, GUEST_NESTED_CODE);	      /* rip */
	put64(b + 0x5d8, GUEST_VMCB(i) - 16);	      /* rsp (unused) */
	put64(b + 0x668, 0x0007040600070406ull);      /* g_pat: the reset value */
}

static int vcpu_setup(struct vm *vm, struct vcpu *v)
{
	union {
		struct kvm_signal_mask head;
		unsigned char bytes[sizeof(struct kvm_signal_mask) + 8]; /* the kernel's sigset_t: 64 signals */
	} mask;
	struct kvm_sregs sregs;
	struct kvm_regs regs = { .rip = GUEST_CODE_ADDR, .rflags = 0x2,
				 .rsp = GUEST_MEM_SIZE - GUEST_STACK_SIZE * v->index - 16,
				 .rsi = GUEST_MAILBOX_ADDR + GUEST_MAILBOX_SIZE * v->index };
	uint16_t ops = (uint16_t)vm->o->mix;
	char what[64];

	snprintf(what, sizeof(what), "KVM_CREATE_VCPU %u", v->index);
	v->fd = kvm_ioctl(vm, vm->vm_fd, KVM_CREATE_VCPU, (void *)(uintptr_t)v->index, what);
	if (v->fd < 0)
		return -1;
	v->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED) {
		v->run = NULL;
		err_msg(vm, "mmap of vCPU %u's kvm_run: %s", v->index, strerror(errno));
		return -1;
	}
	/* Real mode at 0000:1000 (the reset state has CS = f000, base ffff0000). */
	if (kvm_ioctl(vm, v->fd, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS") < 0)
		return -1;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = sregs.es.base = sregs.ss.base = sregs.fs.base = sregs.gs.base = 0;
	sregs.ds.selector = sregs.es.selector = sregs.ss.selector = sregs.fs.selector = sregs.gs.selector = 0;
	if (vm->o->nested) {
		/*
		 * A hypervisor: 32-bit protected mode with paging (KVM's VMRUN
		 * wants it: #UD without), page directory A mapping the first 4
		 * MiB onto themselves, flat segments, EFER.SVME (KVM allows it
		 * only with SVM in the CPUID, given first), ESI = its VMCB, and
		 * the host-save area SVM wants.
		 */
		union {
			struct kvm_msrs head;
			unsigned char bytes[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
		} msrs = { .head.nmsrs = 1 };
		struct kvm_msr_entry hsave = { .index = 0xc0010117 /* VM_HSAVE_PA */, .data = GUEST_HSAVE(v->index) };

		memcpy(msrs.bytes + sizeof(struct kvm_msrs), &hsave, sizeof(hsave));
		flat_paged(&sregs, GUEST_PD_A, 0x1000 /* SVME */);
		regs.rsi = GUEST_VMCB(v->index);
		if (kvm_ioctl(vm, v->fd, KVM_SET_CPUID2, vm->cpuid, "KVM_SET_CPUID2") < 0)
			return -1;
		if (ioctl(v->fd, KVM_SET_MSRS, &msrs) != 1) {
			err_msg(vm, "--nested: KVM_SET_MSRS of VM_HSAVE_PA: %s", strerror(errno));
			return -1;
		}
		nested_vmcb(vm, v->index);
	}
	if (vm->o->address_spaces) {
		/*
		 * 32-bit protected mode with paging, flat 4 GiB segments (their
		 * cached descriptors; the guest never loads a selector, so no
		 * GDT), CR3 = B: the first chunk switches to A.
		 */
		flat_paged(&sregs, GUEST_PD_B, 0);
		regs.rsi = GUEST_PD_A ^ GUEST_PD_B;
		regs.rdi = GUEST_PD_B;
	}
	if (kvm_ioctl(vm, v->fd, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS") < 0 ||
	    kvm_ioctl(vm, v->fd, KVM_SET_REGS, &regs, "KVM_SET_REGS") < 0)
		return -1;
	if (vm->o->irqchip) {
		/*
		 * The guest turns x2APIC on, which KVM allows only if the vCPU's
		 * CPUID has it: give it what KVM supports (x2APIC is always
		 * emulated). With an in-kernel irqchip, vCPUs other than 0 start
		 * waiting for INIT/SIPI: make each runnable at once.
		 */
		struct kvm_mp_state mp = { .mp_state = KVM_MP_STATE_RUNNABLE };

		if (kvm_ioctl(vm, v->fd, KVM_SET_CPUID2, vm->cpuid, "KVM_SET_CPUID2") < 0 ||
		    kvm_ioctl(vm, v->fd, KVM_SET_MP_STATE, &mp, "KVM_SET_MP_STATE") < 0)
			return -1;
	}
	/* Inside KVM_RUN, the threads' mask without the kick signal. */
	mask.head.len = 8;
	memcpy(mask.bytes + offsetof(struct kvm_signal_mask, sigset), &vm->sleep_mask, 8);
	if (kvm_ioctl(vm, v->fd, KVM_SET_SIGNAL_MASK, &mask, "KVM_SET_SIGNAL_MASK") < 0)
		return -1;
	if (vm->o->chunk_iters)
		v->st.chunk_iters = vm->o->chunk_iters;
	memcpy(mailbox(v) + MAILBOX_OPS, &ops, sizeof(ops));
	v->touch_pages = GUEST_TOUCH_SIZE / GUEST_PAGE_SIZE / vm->nr_vcpus;
	v->touch_first = v->index * v->touch_pages;
	v->touch_next = v->touch_pages; /* the first chunk "discards" them: nothing mapped yet */
	return 0;
}

/*
 * --irqchip: KVM's in-kernel PIC, IOAPIC and LAPICs (before any vCPU), the
 * CPUID for the vCPUs, and the real-mode IVT entry of the timer's vector.
 */
/* What KVM supports, as the vCPUs' CPUID (vm->cpuid): 0 or -1. */
static int vm_get_cpuid(struct vm *vm)
{
	unsigned int n = 256;

	vm->cpuid = calloc(1, sizeof(*vm->cpuid) + n * sizeof(vm->cpuid->entries[0]));
	if (!vm->cpuid) {
		err_msg(vm, "out of memory");
		return -1;
	}
	vm->cpuid->nent = n;
	return kvm_ioctl(vm, vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, vm->cpuid, "KVM_GET_SUPPORTED_CPUID") < 0 ? -1 : 0;
}

/* --nested: the CPUID, which must offer SVM, and both programs in guest memory. */
static int vm_setup_nested(struct vm *vm)
{
	bool svm = false;

	if (vm_get_cpuid(vm))
		return -1;
	for (unsigned int i = 0; i < vm->cpuid->nent; i++)
		if (vm->cpuid->entries[i].function == 0x80000001)
			svm = vm->cpuid->entries[i].ecx & (1u << 2);
	if (!svm) {
		err_msg(vm, "--nested: this KVM offers its guests no SVM (an AMD host with kvm_amd's nested=1 is needed)");
		return -1;
	}
	uint32_t pde = 0x83; /* the first 4 MiB, present, writable, a 4 MiB page */

	memcpy((char *)vm->mem + GUEST_PD_A, &pde, sizeof(pde));
	memcpy((char *)vm->mem + GUEST_CODE_ADDR, guest_code_nested, guest_code_nested_size);
	memcpy((char *)vm->mem + GUEST_NESTED_CODE, guest_code_nested_l2, guest_code_nested_l2_size);
	return 0;
}

static int vm_setup_irqchip(struct vm *vm)
{
	uint16_t ivt[2] = { (uint16_t)(GUEST_CODE_ADDR + guest_irq_isr_offset), 0 }; /* offset, segment */
	uint16_t ivt_ipi[2] = { (uint16_t)(GUEST_CODE_ADDR + guest_ipi_isr_offset), 0 }; /* also the MSI's */

	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQCHIP) <= 0) {
		err_msg(vm, "--irqchip: this KVM has no in-kernel irqchip (KVM_CAP_IRQCHIP)");
		return -1;
	}
	if (vm->o->msi_us && ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SIGNAL_MSI) <= 0) {
		err_msg(vm, "--msi-us: this KVM cannot signal MSIs (KVM_CAP_SIGNAL_MSI)");
		return -1;
	}
	if (kvm_ioctl(vm, vm->vm_fd, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP") < 0 || vm_get_cpuid(vm))
		return -1;
	memcpy((char *)vm->mem + GUEST_TIMER_VECTOR * 4, ivt, sizeof(ivt));
	memcpy((char *)vm->mem + GUEST_IPI_VECTOR * 4, ivt_ipi, sizeof(ivt_ipi));
	memcpy((char *)vm->mem + GUEST_MSI_VECTOR * 4, ivt_ipi, sizeof(ivt_ipi));
	return 0;
}

static int vm_setup(struct vm *vm)
{
	const struct microvm_opts *o = vm->o;
	struct kvm_userspace_memory_region region;
	int r, max_vcpus;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		err_msg(vm, "/dev/kvm: %s%s", strerror(errno),
			errno == ENOENT ? " (no KVM on this machine: is the kvm module loaded?)" :
			errno == EACCES ? " (run as root or join the kvm group)" : "");
		return -1;
	}
	{
		struct stat st;

		if (fstat(vm->kvm_fd, &st) == 0 && !S_ISCHR(st.st_mode)) {
			err_msg(vm, "/dev/kvm is not a device but a regular file (left by a script's `exec 3<>/dev/kvm`?)");
			return -1;
		}
	}
	r = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (r != KVM_API_VERSION) {
		err_msg(vm, "/dev/kvm: KVM API version %d, expected %d", r, KVM_API_VERSION);
		return -1;
	}
	max_vcpus = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (max_vcpus <= 0)
		max_vcpus = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_VCPUS);
	if (max_vcpus > 0 && o->vcpus > (unsigned int)max_vcpus) {
		err_msg(vm, "--vcpus %u: this KVM supports at most %d vCPUs per VM", o->vcpus, max_vcpus);
		return -1;
	}
	r = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (r < (int)sizeof(struct kvm_run)) {
		err_msg(vm, "KVM_GET_VCPU_MMAP_SIZE: %s", r < 0 ? strerror(errno) : "too small");
		return -1;
	}
	vm->run_size = (size_t)r;

	vm->vm_fd = kvm_ioctl(vm, vm->kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");
	if (vm->vm_fd < 0)
		return -1;
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_TSS_ADDR) > 0 &&
	    kvm_ioctl(vm, vm->vm_fd, KVM_SET_TSS_ADDR, (void *)TSS_ADDR, "KVM_SET_TSS_ADDR") < 0)
		return -1;

	vm->mem = mmap(NULL, GUEST_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (vm->mem == MAP_FAILED) {
		vm->mem = NULL;
		err_msg(vm, "guest memory (%u KiB): %s", GUEST_MEM_SIZE / 1024, strerror(errno));
		return -1;
	}
	if (o->irqchip && vm_setup_irqchip(vm))
		return -1;
	if (o->nested) {
		if (vm_setup_nested(vm))
			return -1;
	} else if (o->mix)
		memcpy((char *)vm->mem + GUEST_CODE_ADDR, guest_code_mix, guest_code_mix_size);
	else if (o->irqchip)
		memcpy((char *)vm->mem + GUEST_CODE_ADDR, guest_code_irq, guest_code_irq_size);
	else if (o->address_spaces) {
		/* each page directory's entry 0: the first 4 MiB, present, writable, 4 MiB page */
		uint32_t pde = 0x83;

		memcpy((char *)vm->mem + GUEST_CODE_ADDR, guest_code_as, guest_code_as_size);
		memcpy((char *)vm->mem + GUEST_PD_A, &pde, sizeof(pde));
		memcpy((char *)vm->mem + GUEST_PD_B, &pde, sizeof(pde));
	} else
		memcpy((char *)vm->mem + GUEST_CODE_ADDR, guest_code, guest_code_size);
	region = (struct kvm_userspace_memory_region){
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = GUEST_MEM_SIZE,
		.userspace_addr = (uintptr_t)vm->mem,
	};
	if (kvm_ioctl(vm, vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION") < 0)
		return -1;
	if (o->mix & (1u << MIX_TOUCH)) {
		vm->touch_mem = mmap(NULL, GUEST_TOUCH_SIZE, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (vm->touch_mem == MAP_FAILED) {
			vm->touch_mem = NULL;
			err_msg(vm, "guest memory to touch (%u KiB): %s", GUEST_TOUCH_SIZE / 1024, strerror(errno));
			return -1;
		}
		madvise(vm->touch_mem, GUEST_TOUCH_SIZE, MADV_NOHUGEPAGE); /* one fault per 4 KiB page */
		region = (struct kvm_userspace_memory_region){
			.slot = 1,
			.guest_phys_addr = GUEST_TOUCH_ADDR,
			.memory_size = GUEST_TOUCH_SIZE,
			.userspace_addr = (uintptr_t)vm->touch_mem,
		};
		if (kvm_ioctl(vm, vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region,
			      "KVM_SET_USER_MEMORY_REGION (touch area)") < 0)
			return -1;
	}

	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vcpu_setup(vm, &vm->vcpus[i]))
			return -1;
	return 0;
}

static void vm_teardown(struct vm *vm)
{
	for (unsigned int i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->run)
			munmap(v->run, vm->run_size);
		if (v->fd >= 0)
			close(v->fd);
	}
	for (unsigned int i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		json_decref(vm->vcpus[i].kvm_stats);
		json_decref(vm->vcpus[i].kvm_hists);
	}
	json_decref(vm->kvm_stats);
	free(vm->vcpus);
	free(vm->cpuid);
	if (vm->mem)
		munmap(vm->mem, GUEST_MEM_SIZE);
	if (vm->touch_mem)
		munmap(vm->touch_mem, GUEST_TOUCH_SIZE);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->wake_fd >= 0)
		close(vm->wake_fd);
}

/* ---- reporting ---------------------------------------------------------- */

static json_t *vm_json_head(const struct vm *vm)
{
	return json_pack("{s:i, s:i, s:s}", "index", vm->o->vm_index, "pid", (int)getpid(), "name", vm->o->name);
}

/*
 * A thread's scheduler account for the report: schedstat's three fields,
 * its context switches (null if getrusage failed) and, for a
 * vCPU (ticks), /proc stat's tick-sampled times (null if unreadable).
 */
static json_t *schedstat_json(const struct vcpu_stats *st, bool ticks)
{
	json_t *o;

	if (!st->schedstat_ok)
		return json_null();
	o = json_pack("{s:I, s:I, s:I}", "run_ns", (json_int_t)st->sched_run_ns, "wait_ns",
		      (json_int_t)st->sched_wait_ns, "timeslices", (json_int_t)st->sched_timeslices);
	json_object_set_new(o, "voluntary_switches",
			    st->switches_ok ? json_integer((json_int_t)st->voluntary_switches) : json_null());
	json_object_set_new(o, "involuntary_switches",
			    st->switches_ok ? json_integer((json_int_t)st->involuntary_switches) : json_null());
	if (ticks)
		json_object_set_new(o, "ticks",
				    st->guest_time_ok ? json_pack("{s:I, s:I, s:I}", "utime_ns", (json_int_t)st->utime_ns,
								  "stime_ns", (json_int_t)st->stime_ns, "guest_ns",
								  (json_int_t)st->guest_time_ns) :
							json_null());
	return o;
}

static json_t *vcpu_json(const struct vcpu *v)
{
	const struct vcpu_stats *st = &v->st;
	json_t *exits = json_object(), *o;
	char nb[24];

	for (unsigned int c = 0; c < NR_EXIT_CODES; c++)
		if (st->exits[c])
			json_object_set_new(exits, exit_name(c, nb, sizeof(nb)), json_integer((json_int_t)st->exits[c]));
	o = json_pack("{s:i, s:i, s:o, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I}", "index", (int)v->index, "tid",
		      (int)v->tid, "exits", exits, "kvm_runs", (json_int_t)st->kvm_runs, "kvm_run_ns",
		      (json_int_t)st->kvm_run_ns, "halts", (json_int_t)st->halts, "halted_ns",
		      (json_int_t)st->halted_ns, "halt_cut_short", st->halt_cut_short, "busy_periods",
		      (json_int_t)st->busy_periods, "chunks", (json_int_t)st->chunks, "chunk_iters",
		      (json_int_t)st->chunk_iters);
	if (o) {
		json_t *ops = json_object();

		for (unsigned int op = 0; op < MIX_NR_OPS; op++)
			json_object_set_new(ops, microvm_mix_names[op], json_integer((json_int_t)st->ops[op]));
		json_object_set_new(o, "ops", ops);
		if (v->vm->o->address_spaces)
			json_object_set_new(o, "address_spaces",
					    json_pack("[{s:I, s:I, s:I}, {s:I, s:I, s:I}]", "cr3", (json_int_t)GUEST_PD_A,
						      "chunks", (json_int_t)st->as_chunks[0], "iters",
						      (json_int_t)st->as_iters[0], "cr3", (json_int_t)GUEST_PD_B, "chunks",
						      (json_int_t)st->as_chunks[1], "iters", (json_int_t)st->as_iters[1]));
		json_object_set_new(o, "timer_irqs", json_integer((json_int_t)st->timer_irqs));
		json_object_set_new(o, "ipis", json_integer((json_int_t)st->ipis));
		json_object_set_new(o, "ipis_sent", json_integer((json_int_t)st->ipis_sent));
		json_object_set_new(o, "msis", json_integer((json_int_t)st->msis));
		json_object_set_new(o, "run_sleeps",
				    st->run_sleeps_ok ? json_integer((json_int_t)st->run_sleeps) : json_null());
		json_object_set_new(o, "last_exit",
				    st->last_exit < 0 ? json_null() :
							json_string(exit_name((unsigned int)st->last_exit, nb, sizeof(nb))));
		json_object_set_new(o, "kvm_stats", v->kvm_stats ? json_incref(v->kvm_stats) : json_null());
		json_object_set_new(o, "kvm_hists", v->kvm_hists ? json_incref(v->kvm_hists) : json_null());
		if (!v->kvm_stats)
			json_object_set_new(o, "kvm_stats_error", json_string(v->kvm_stats_why));
	}
	if (o)
		json_object_set_new(o, "schedstat", schedstat_json(st, true));
	return o;
}

/* Send one {"type": type, "vm": body} line to the supervisor; steals body. */
static int send_line(struct vm *vm, const char *type, json_t *body)
{
	json_t *msg = json_pack("{s:s, s:o}", "type", type, "vm", body);
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	size_t len;
	int err = -ENOMEM;

	if (text) {
		len = strlen(text);
		text[len] = '\n'; /* replaces the NUL: we write len + 1 bytes, not a C string */
		err = write_all(vm->o->report_fd, text, len + 1);
		text[len] = '\0';
	}
	free(text);
	json_decref(msg);
	if (err)
		err_msg(vm, "reporting to the supervisor (fd %d): %s", vm->o->report_fd, strerror(-err));
	return err;
}

static int send_ready(struct vm *vm)
{
	json_t *body = vm_json_head(vm), *vcpus = json_array();

	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		json_array_append_new(vcpus, json_pack("{s:i, s:i}", "index", (int)vm->vcpus[i].index, "tid",
						       (int)vm->vcpus[i].tid));
	json_object_set_new(body, "vcpus", vcpus);
	return send_line(vm, "ready", body);
}

static int send_report(struct vm *vm, uint64_t wall_ns, uint64_t running_ns, const char *stopped_by)
{
	json_t *body = vm_json_head(vm), *vcpus = json_array();

	json_object_set_new(body, "wall_ns", json_integer((json_int_t)wall_ns));
	json_object_set_new(body, "running_ns", json_integer((json_int_t)running_ns));
	json_object_set_new(body, "stopped_by", json_string(stopped_by));
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		json_array_append_new(vcpus, vcpu_json(&vm->vcpus[i]));
	json_object_set_new(body, "vcpus", vcpus);
	if (vm->nr_vcpus && !vm->vcpus[0].kvm_stats) {
		/* the VM's own counters, the sum of its vCPUs' (debugfs), where KVM gives no per-vCPU ones */
		json_object_set_new(body, "kvm_stats", vm->kvm_stats ? json_incref(vm->kvm_stats) : json_null());
		if (!vm->kvm_stats)
			json_object_set_new(body, "kvm_stats_error", json_string(vm->kvm_stats_why));
	}
	if (vm->io_started)
		json_object_set_new(
			body, "io_thread",
			json_pack("{s:i, s:I, s:I, s:o}", "tid", (int)vm->io_tid, "busy_periods",
				  (json_int_t)vm->io_periods, "msis_sent", (json_int_t)vm->msis_sent, "schedstat",
				  schedstat_json(&vm->io_st, false)));
	return send_line(vm, "report", body);
}

/* ---- the VM process ----------------------------------------------------- */

static void on_kick(int sig)
{
	(void)sig; /* only there to interrupt KVM_RUN and the halt sleep */
}

/*
 * Wait until the VM should stop; returns what stopped it ("duration",
 * "SIGINT", "SIGTERM") or NULL on a failure.
 */
static const char *wait_for_stop(struct vm *vm, int sig_fd, uint64_t *running_since)
{
	uint64_t deadline = 0;
	bool ready_sent = false;

	for (;;) {
		struct pollfd p[2] = { { .fd = sig_fd, .events = POLLIN }, { .fd = vm->wake_fd, .events = POLLIN } };
		struct timespec ts, *tsp = NULL;
		uint64_t t = now_ns(), count;

		if (deadline) {
			if (t >= deadline)
				return "duration";
			ts.tv_sec = (time_t)((deadline - t) / 1000000000ull);
			ts.tv_nsec = (long)((deadline - t) % 1000000000ull);
			tsp = &ts;
		}
		if (ppoll(p, 2, tsp, NULL) < 0 && errno != EINTR) {
			err_msg(vm, "ppoll: %s", strerror(errno));
			return NULL;
		}
		if (p[1].revents & POLLIN && read(vm->wake_fd, &count, sizeof(count)) < 0) {
			/* nothing to do: the state below is what counts */
		}
		if (__atomic_load_n(&vm->failed, __ATOMIC_ACQUIRE))
			return NULL;
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				return si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
		}
		if (!ready_sent && __atomic_load_n(&vm->nr_ready, __ATOMIC_ACQUIRE) == vm->nr_vcpus) {
			if (send_ready(vm))
				return NULL;
			ready_sent = true;
			*running_since = now_ns();
			if (vm->o->duration_s > 0)
				deadline = *running_since + (uint64_t)(vm->o->duration_s * 1e9);
		}
	}
}

/*
 * With the vCPU threads stopped: the --mix ops each vCPU did (its mailbox
 * counters, plus an op whose exit KVM handled just before the stop kick,
 * which the guest did not get to count: its IP is at the op's `inc`), and
 * KVM's own counters. -1 if a vCPU's SI is no longer its mailbox: the --mix
 * program never writes SI, so the CPU changed it (as it moves IP out of the
 * program under emulation, docs/kvmlab.md "Known problems"), and the ops it
 * counted went to another mailbox: no counts are reported rather than wrong
 * ones.
 */
static int collect_counts(struct vm *vm)
{
	int ret = 0;

	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		struct kvm_regs regs;
		uint32_t count;

		if (v->fd < 0)
			continue;
		if (vm->o->mix) {
			bool have_regs = ioctl(v->fd, KVM_GET_REGS, &regs) == 0;
			unsigned long long box = GUEST_MAILBOX_ADDR + GUEST_MAILBOX_SIZE * v->index;

			if (have_regs && regs.rsi != box) {
				err_msg(vm,
					"vCPU %u: the guest CPU left its program: its SI is 0x%llx, which the program never "
					"changes from 0x%llx (its mailbox), so its ops were counted elsewhere",
					v->index, (unsigned long long)regs.rsi, box);
				ret = -1;
			}
			for (unsigned int op = 0; op < MIX_NR_OPS; op++) {
				memcpy(&count, mailbox(v) + MAILBOX_COUNT(op), sizeof(count));
				v->st.ops[op] = count;
				if (have_regs && regs.rip == GUEST_CODE_ADDR + guest_mix_count_offset[op])
					v->st.ops[op]++;
			}
			v->st.ops[MIX_MMIO] = v->st.mmio; /* what reached the VMM: KVM's mmio_exits */
		}
		if (vm->o->irqchip) {
			memcpy(&count, mailbox(v) + MAILBOX_TIMER_IRQS, sizeof(count));
			v->st.timer_irqs = count;
			memcpy(&count, mailbox(v) + MAILBOX_IPIS, sizeof(count));
			if (vm->o->msi_us)
				v->st.msis = count; /* the same handler took them */
			else
				v->st.ipis = count;
		}
		v->kvm_stats =
		    kvm_vcpu_stats(vm->kvm_fd, v->fd, &v->kvm_hists, v->kvm_stats_why, sizeof(v->kvm_stats_why));
	}
	if (vm->nr_vcpus && !vm->vcpus[0].kvm_stats)
		vm->kvm_stats = kvm_vm_debugfs_stats(getpid(), vm->vm_fd, vm->kvm_stats_why, sizeof(vm->kvm_stats_why));
	return ret;
}

static void stop_io_thread(struct vm *vm)
{
	if (vm->io_started) {
		pthread_kill(vm->io_thread, KICK_SIGNAL);
		pthread_join(vm->io_thread, NULL);
	}
}

static void join_vcpus(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].started)
			pthread_join(vm->vcpus[i].thread, NULL);
}

/*
 * The vCPU threads stop first, then the I/O thread; with --hold the I/O
 * thread stops while the vCPU threads are held (it must not spin through
 * the hold), and they are joined once let go.
 */
static void stop_vcpus(struct vm *vm)
{
	unsigned int started = 0;

	__atomic_store_n(&vm->stop, 1, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].started) {
			pthread_kill(vm->vcpus[i].thread, KICK_SIGNAL);
			started++;
		}
	if (vm->o->hold_path) {
		hold_wait(vm, started);
		stop_io_thread(vm);
		hold_release(vm);
		join_vcpus(vm);
	} else {
		join_vcpus(vm);
		stop_io_thread(vm);
	}
}

int microvm_vm_main(const struct microvm_opts *o)
{
	struct vm vm = { .o = o, .kvm_fd = -1, .vm_fd = -1, .wake_fd = -1, .nr_vcpus = o->vcpus,
			 .hold_lock = PTHREAD_MUTEX_INITIALIZER, .hold_cond = PTHREAD_COND_INITIALIZER };
	struct sigaction sa = { .sa_handler = on_kick }; /* no SA_RESTART: kicks interrupt */
	uint64_t start, running_since = 0;
	const char *stopped_by = NULL;
	sigset_t block, stop_sigs;
	int sig_fd = -1, ret = MICROVM_EXIT_FAIL, err;

	vm.busy_ns = o->busy_us * 1000;
	vm.idle_ns = o->idle_us * 1000;
	vm.chunk_ns = o->chunk_us * 1000;

	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	block = stop_sigs;
	sigaddset(&block, KICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	pthread_sigmask(SIG_BLOCK, NULL, &vm.sleep_mask);
	sigdelset(&vm.sleep_mask, KICK_SIGNAL);
	sigaction(KICK_SIGNAL, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a gone supervisor is an EPIPE, reported */

	sig_fd = signalfd(-1, &stop_sigs, SFD_CLOEXEC);
	vm.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vm.vcpus = calloc(vm.nr_vcpus, sizeof(*vm.vcpus));
	if (sig_fd < 0 || vm.wake_fd < 0 || !vm.vcpus) {
		err_msg(&vm, "setting up signals and vCPUs: %s", strerror(errno));
		goto out;
	}
	for (unsigned int i = 0; i < vm.nr_vcpus; i++)
		vm.vcpus[i] = (struct vcpu){ .vm = &vm, .index = i, .fd = -1 };

	start = now_ns();
	if (vm_setup(&vm))
		goto out;
	for (unsigned int i = 0; i < vm.nr_vcpus; i++) {
		err = pthread_create(&vm.vcpus[i].thread, NULL, vcpu_thread, &vm.vcpus[i]);
		if (err) {
			err_msg(&vm, "starting the thread of vCPU %u: %s", i, strerror(err));
			break;
		}
		vm.vcpus[i].started = true;
	}
	if (vm.vcpus[vm.nr_vcpus - 1].started && (o->io_thread_us || o->msi_us)) {
		err = pthread_create(&vm.io_thread, NULL, io_thread, &vm);
		if (err)
			err_msg(&vm, "starting the I/O thread: %s", strerror(err));
		vm.io_started = !err;
	}
	if (vm.vcpus[vm.nr_vcpus - 1].started && (!(o->io_thread_us || o->msi_us) || vm.io_started))
		stopped_by = wait_for_stop(&vm, sig_fd, &running_since);
	stop_vcpus(&vm);
	for (unsigned int i = 0; i < vm.nr_vcpus; i++)
		if (vm.vcpus[i].error[0])
			err_msg(&vm, "%s", vm.vcpus[i].error);
	if (vm.io_error[0]) {
		err_msg(&vm, "%s", vm.io_error);
		stopped_by = NULL;
	}
	if (!stopped_by)
		goto out;
	if (collect_counts(&vm))
		goto out;
	{
		uint64_t end = now_ns();

		if (send_report(&vm, end - start, running_since ? end - running_since : 0, stopped_by) == 0)
			ret = MICROVM_EXIT_OK;
	}
out:
	vm_teardown(&vm);
	if (sig_fd >= 0)
		close(sig_fd);
	return ret;
}
