// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat-sync-agent - the guest side of vcpustat's clock synchronization
 * (docs/sync.md, "The protocol"). Runs in a guest, in user space, as a
 * static binary to copy in.
 *
 * Every interval, on each selected vCPU (one thread pinned per CPU), for a
 * fresh key k:
 *   write "vcpustat_sync: a k=<k>" to trace_marker     (event a, guest)
 *   hypercall nr VCPUSTAT_SYNC_HYPERCALL_NR, a0 = k,    (b: kvm_hypercall on the host,
 *     a1 = --token (vmcall on Intel, vmmcall on AMD)     c: the next kvm_entry)
 *   write "vcpustat_sync: d k=<k>" to trace_marker     (event d, guest)
 * and log the round (--log) with CLOCK_MONOTONIC/CLOCK_REALTIME around the
 * hypercall, for guests without ftrace.
 *
 * KVM fires kvm_hypercall before it checks the caller's privilege, so from
 * user space the call returns -KVM_EPERM (-1) and the host has its event.
 * Where the instruction faults (no hypervisor, or one that raises #UD), the
 * agent says so once and carries on with markers only (or exits: --on-ud exit).
 *
 * Keys: k = cpu << 48 | (seq mod 2^48), where each CPU's seq starts at the
 * agent's start time in microseconds (CLOCK_REALTIME) and counts rounds, so
 * keys stay unique across CPUs and across restarts of the agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#define HAVE_HYPERCALL 1
#else
#define HAVE_HYPERCALL 0
#endif
#include "vcpustat_abi.h"

#define PROG "vcpustat-sync-agent"
#define KEY_SEQ_BITS 48
#define KEY_SEQ_MASK ((1ULL << KEY_SEQ_BITS) - 1)

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_NO_HYPERCALL = 3 };
enum insn { INSN_AUTO, INSN_VMCALL, INSN_VMMCALL };

static struct options {
	unsigned long interval_ms;
	unsigned long long count; /* 0: no limit */
	double duration;	  /* s, 0: no limit */
	unsigned long long token;
	const char *marker_path; /* NULL: the default places */
	const char *log_path;
	bool no_hypercall;
	bool exit_on_ud;
	bool quiet;
	enum insn insn;
	cpu_set_t cpus;
	int nr_cpus;
} opt = { .interval_ms = 100, .insn = INSN_AUTO };

static struct {
	int marker_fd, log_fd;
	const char *marker_path;
	enum insn insn;
	unsigned long long seq_base;
	atomic_bool stop;
	atomic_bool hypercall_off; /* after a fault: markers only */
	atomic_bool fault_reported;
	atomic_int fault_signal;
	atomic_ullong tickets; /* rounds started, for --count */
	atomic_ullong rounds, marker_errors, log_errors, hypercalls;
	atomic_llong last_ret;
	atomic_int workers_left;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* stop */
} g = { .marker_fd = -1, .log_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [OPTIONS]\n"
		"\n"
		"Run inside a KVM guest, as root (trace_marker), to let vcpustat synchronize this\n"
		"guest's traces with the host's. Every interval, on each vCPU, it writes the trace\n"
		"marker \"vcpustat_sync: a k=<k>\", issues the hypercall nr 0x%llx (\"VCS1\") with\n"
		"a0 = k, then writes \"vcpustat_sync: d k=<k>\". Trace the guest (ftrace) and the\n"
		"host (kvm:kvm_hypercall, kvm:kvm_entry) meanwhile; docs/sync.md has the recipe.\n"
		"\n"
		"  -i, --interval-ms N    one round per vCPU every N ms (default 100; 0: back to back)\n"
		"  -c, --count N          stop after N rounds in all (default: no limit)\n"
		"  -d, --duration SEC     stop after SEC seconds (default: no limit)\n"
		"  -C, --cpus LIST        vCPUs to use, e.g. 0,2-3 (default: all this process may use)\n"
		"  -t, --token N          passed as the hypercall's a1, to tell VMs apart (default 0)\n"
		"  -m, --trace-marker PATH  where markers go (default /sys/kernel/tracing/trace_marker,\n"
		"                         else /sys/kernel/debug/tracing/trace_marker)\n"
		"  -l, --log FILE         also append each round to FILE: key,cpu, CLOCK_MONOTONIC and\n"
		"                         CLOCK_REALTIME before and after the hypercall, its result\n"
		"                         (enough to synchronize without ftrace in the guest)\n"
		"  -n, --no-hypercall     markers and log only (testing)\n"
		"      --insn auto|vmcall|vmmcall  hypercall instruction (auto: vmmcall on AMD and\n"
		"                         Hygon CPUs, vmcall elsewhere)\n"
		"      --on-ud continue|exit  when the hypercall faults (no hypervisor to catch it):\n"
		"                         carry on with markers only (default), or exit with status 3\n"
		"  -q, --quiet            no summary at exit\n"
		"  -h, --help             this help\n"
		"\n"
		"Keys: k = cpu << 48 | seq, seq starting at the start time in microseconds.\n"
		"From user space the hypercall returns -1 (KVM_EPERM): expected, the host has\n"
		"already recorded it. SIGINT/SIGTERM stop it cleanly with a summary.\n"
		"Exit status: 0 done, 1 failure, 2 bad options, 3 hypercall fault with --on-ud exit.\n",
		(unsigned long long)VCPUSTAT_SYNC_HYPERCALL_NR);
}

static void __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see " PROG " --help)\n");
	exit(EXIT_USAGE);
}

static unsigned long long parse_u64(const char *name, const char *s, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!*s || *s == '-' || *s == '+')
		usage_error("%s: '%s' is not a non-negative integer", name, s);
	v = strtoull(s, &end, 0);
	if (errno || *end)
		usage_error("%s: '%s' is not a non-negative integer", name, s);
	if (v > max)
		usage_error("%s: %s is too large (at most %llu)", name, s, max);
	return v;
}

static void parse_cpus(const char *s)
{
	cpu_set_t allowed;
	const char *p = s;

	CPU_ZERO(&opt.cpus);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_ZERO(&allowed);
	while (*p) {
		char *end;
		long lo, hi;

		errno = 0;
		lo = strtol(p, &end, 10);
		if (end == p || errno || lo < 0)
			usage_error("--cpus: '%s' is not a CPU list like 0,2-3", s);
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p || errno || hi < lo)
				usage_error("--cpus: '%s' is not a CPU list like 0,2-3", s);
		}
		if (hi >= CPU_SETSIZE)
			usage_error("--cpus: CPU %ld is out of range", hi);
		for (long c = lo; c <= hi; c++) {
			if (!CPU_ISSET(c, &allowed))
				usage_error("--cpus: CPU %ld is not available to this process", c);
			CPU_SET(c, &opt.cpus);
		}
		if (*end == ',')
			end++;
		else if (*end)
			usage_error("--cpus: '%s' is not a CPU list like 0,2-3", s);
		p = end;
	}
	if (!CPU_COUNT(&opt.cpus))
		usage_error("--cpus: no CPU in '%s'", s);
}

static void parse_options(int argc, char **argv)
{
	enum { OPT_INSN = 256, OPT_ON_UD };
	static const struct option longopts[] = {
		{ "interval-ms", required_argument, NULL, 'i' },  { "count", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },	  { "cpus", required_argument, NULL, 'C' },
		{ "token", required_argument, NULL, 't' },	  { "trace-marker", required_argument, NULL, 'm' },
		{ "log", required_argument, NULL, 'l' },	  { "no-hypercall", no_argument, NULL, 'n' },
		{ "insn", required_argument, NULL, OPT_INSN },	  { "on-ud", required_argument, NULL, OPT_ON_UD },
		{ "quiet", no_argument, NULL, 'q' },		  { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool cpus_given = false;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "i:c:d:C:t:m:l:nqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': opt.interval_ms = parse_u64("--interval-ms", optarg, 3600 * 1000); break;
		case 'c':
			opt.count = parse_u64("--count", optarg, ~0ULL);
			if (!opt.count)
				usage_error("--count: give at least 1 round");
			break;
		case 'd':
			errno = 0;
			opt.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(opt.duration > 0) || opt.duration > 1e7)
				usage_error("--duration: '%s' is not a number of seconds > 0", optarg);
			break;
		case 'C': parse_cpus(optarg); cpus_given = true; break;
		case 't': opt.token = parse_u64("--token", optarg, ~0ULL); break;
		case 'm': opt.marker_path = optarg; break;
		case 'l': opt.log_path = optarg; break;
		case 'n': opt.no_hypercall = true; break;
		case 'q': opt.quiet = true; break;
		case OPT_INSN:
			if (!strcmp(optarg, "auto"))
				opt.insn = INSN_AUTO;
			else if (!strcmp(optarg, "vmcall"))
				opt.insn = INSN_VMCALL;
			else if (!strcmp(optarg, "vmmcall"))
				opt.insn = INSN_VMMCALL;
			else
				usage_error("--insn: '%s' is not auto, vmcall or vmmcall", optarg);
			break;
		case OPT_ON_UD:
			if (!strcmp(optarg, "continue") || !strcmp(optarg, "exit"))
				opt.exit_on_ud = optarg[0] == 'e';
			else
				usage_error("--on-ud: '%s' is not continue or exit", optarg);
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		default: fprintf(stderr, "see " PROG " --help\n"); exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!cpus_given && sched_getaffinity(0, sizeof(opt.cpus), &opt.cpus)) {
		fprintf(stderr, PROG ": cannot read this process's CPUs: %s\n", strerror(errno));
		exit(EXIT_FAIL);
	}
	opt.nr_cpus = CPU_COUNT(&opt.cpus);
}

/* ---- the hypercall ---- */

#if HAVE_HYPERCALL
static enum insn cpu_insn(void)
{
	unsigned int eax, ebx, ecx, edx;
	char vendor[13];

	if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return INSN_VMCALL;
	memcpy(vendor, &ebx, 4);
	memcpy(vendor + 4, &edx, 4);
	memcpy(vendor + 8, &ecx, 4);
	vendor[12] = '\0';
	return !strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine") ? INSN_VMMCALL : INSN_VMCALL;
}

/* KVM's convention: nr in rax, arguments in rbx, rcx, rdx, rsi; result in rax.
 * KVM preserves the argument registers; another hypervisor might not, so they
 * are declared clobbered. */
static long vmcall(unsigned long nr, unsigned long a0, unsigned long a1)
{
	long ret = (long)nr;

	__asm__ volatile("vmcall" : "+a"(ret), "+b"(a0), "+c"(a1) : : "rdx", "rsi", "memory");
	return ret;
}

static long vmmcall(unsigned long nr, unsigned long a0, unsigned long a1)
{
	long ret = (long)nr;

	__asm__ volatile("vmmcall" : "+a"(ret), "+b"(a0), "+c"(a1) : : "rdx", "rsi", "memory");
	return ret;
}
#endif

static __thread sigjmp_buf fault_jmp;
static __thread volatile sig_atomic_t fault_armed;

/* #UD (SIGILL), or a #GP some hypervisor might raise, during the hypercall only. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (fault_armed) {
		fault_armed = 0;
		siglongjmp(fault_jmp, sig);
	}
	signal(sig, SIG_DFL); /* not ours: die as we would have */
	raise(sig);
}

/* 0 and *ret = rax, or the signal number if the instruction faulted. */
static int hypercall(unsigned long long key, long *ret)
{
#if HAVE_HYPERCALL
	int sig = sigsetjmp(fault_jmp, 1);

	if (sig)
		return sig;
	fault_armed = 1;
	if (g.insn == INSN_VMMCALL)
		*ret = vmmcall(VCPUSTAT_SYNC_HYPERCALL_NR, key, opt.token);
	else
		*ret = vmcall(VCPUSTAT_SYNC_HYPERCALL_NR, key, opt.token);
	fault_armed = 0;
	return 0;
#else
	(void)key;
	*ret = 0;
	return SIGILL;
#endif
}

/* ---- rounds ---- */

static long long ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void marker(char which, unsigned long long key)
{
	char buf[64];
	int n;

	if (g.marker_fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "vcpustat_sync: %c k=%llu\n", which, key);
	if (write(g.marker_fd, buf, (size_t)n) != n)
		atomic_fetch_add(&g.marker_errors, 1);
}

static void report_fault(int sig)
{
	bool expected = false;

	atomic_store(&g.hypercall_off, true);
	if (!atomic_compare_exchange_strong(&g.fault_reported, &expected, true))
		return;
	atomic_store(&g.fault_signal, sig);
	fprintf(stderr,
		PROG ": hypercall not supported here: %s raised %s (no hypervisor takes it from user space, or it "
		"is the wrong instruction for this CPU: see --insn); %s\n",
		g.insn == INSN_VMMCALL ? "vmmcall" : "vmcall",
		sig == SIGILL ? "SIGILL (#UD)" : sig == SIGSEGV ? "SIGSEGV (#GP)" : "SIGBUS",
		opt.exit_on_ud ? "stopping (--on-ud exit)" : "continuing with markers only");
	if (opt.exit_on_ud)
		atomic_store(&g.stop, true);
}

static void round_on(int cpu, unsigned long long key)
{
	long long mono0, real0, mono1, real1;
	char result[32] = "off", line[192];
	long ret = 0;
	int n, sig, where = sched_getcpu();

	marker('a', key);
	mono0 = ns(CLOCK_MONOTONIC);
	real0 = ns(CLOCK_REALTIME);
	if (!opt.no_hypercall && !atomic_load(&g.hypercall_off)) {
		sig = hypercall(key, &ret);
		if (sig) {
			report_fault(sig);
			snprintf(result, sizeof(result), "fault:%d", sig);
		} else {
			atomic_fetch_add(&g.hypercalls, 1);
			atomic_store(&g.last_ret, ret);
			snprintf(result, sizeof(result), "%ld", ret);
		}
	}
	mono1 = ns(CLOCK_MONOTONIC);
	real1 = ns(CLOCK_REALTIME);
	marker('d', key);
	atomic_fetch_add(&g.rounds, 1);
	if (g.log_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%llu,%d,%lld,%lld,%lld,%lld,%s\n", key, where >= 0 ? where : cpu, mono0,
		     real0, mono1, real1, result);
	if (write(g.log_fd, line, (size_t)n) != n)
		atomic_fetch_add(&g.log_errors, 1);
}

/* Sleep until abs (CLOCK_MONOTONIC) or until told to stop. */
static void wait_until(const struct timespec *abs)
{
	pthread_mutex_lock(&g.lock);
	while (!atomic_load(&g.stop))
		if (pthread_cond_timedwait(&g.wake, &g.lock, abs) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&g.lock);
}

static void stop_all(void)
{
	pthread_mutex_lock(&g.lock);
	atomic_store(&g.stop, true);
	pthread_cond_broadcast(&g.wake);
	pthread_mutex_unlock(&g.lock);
}

static void *worker(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	unsigned long long seq = g.seq_base;
	struct timespec next;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) {
		fprintf(stderr, PROG ": cannot pin a thread to CPU %d: %s; skipping it\n", cpu, strerror(errno));
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load(&g.stop)) {
		if (opt.count && atomic_fetch_add(&g.tickets, 1) >= opt.count) {
			stop_all(); /* wake the others: no round left for them */
			break;
		}
		round_on(cpu, (unsigned long long)cpu << KEY_SEQ_BITS | (seq++ & KEY_SEQ_MASK));
		if (!opt.interval_ms)
			continue;
		next.tv_nsec += (long)(opt.interval_ms % 1000) * 1000000L;
		next.tv_sec += (time_t)(opt.interval_ms / 1000) + next.tv_nsec / 1000000000L;
		next.tv_nsec %= 1000000000L;
		wait_until(&next);
	}
out:
	atomic_fetch_sub(&g.workers_left, 1);
	return NULL;
}

/* ---- setup ---- */

static void open_outputs(void)
{
	static const char *const defaults[] = { "/sys/kernel/tracing/trace_marker",
						"/sys/kernel/debug/tracing/trace_marker" };

	if (opt.marker_path) {
		g.marker_fd = open(opt.marker_path, O_WRONLY | O_CLOEXEC);
		if (g.marker_fd < 0) {
			fprintf(stderr, PROG ": cannot open %s: %s\n", opt.marker_path, strerror(errno));
			exit(EXIT_FAIL);
		}
		g.marker_path = opt.marker_path;
	} else {
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]) && g.marker_fd < 0; i++) {
			g.marker_fd = open(defaults[i], O_WRONLY | O_CLOEXEC);
			g.marker_path = defaults[i];
		}
		if (g.marker_fd < 0 && !opt.log_path) {
			fprintf(stderr,
				PROG ": no trace_marker (%s: %s). Mount tracefs (mount -t tracefs nodev "
				"/sys/kernel/tracing) and run as root, or give --trace-marker PATH or --log FILE\n",
				defaults[0], strerror(errno));
			exit(EXIT_FAIL);
		}
		if (g.marker_fd < 0) {
			fprintf(stderr, PROG ": warning: no trace_marker (is tracefs mounted?): logging to %s only\n",
				opt.log_path);
			g.marker_path = NULL;
		}
	}
	if (opt.log_path) {
		char head[256];
		int n;

		g.log_fd = open(opt.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (g.log_fd < 0) {
			fprintf(stderr, PROG ": cannot open the log %s: %s\n", opt.log_path, strerror(errno));
			exit(EXIT_FAIL);
		}
		n = snprintf(head, sizeof(head),
			     "# " PROG " pid %d: key,cpu,mono_before_ns,real_before_ns,mono_after_ns,real_after_ns,"
			     "result (hypercall rax, fault:SIG, or off)\n",
			     (int)getpid());
		if (write(g.log_fd, head, (size_t)n) != n)
			atomic_fetch_add(&g.log_errors, 1);
	}
}

static void setup_signals(sigset_t *stop_set)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	/* SIGINT/SIGTERM: blocked everywhere, taken by the main thread with sigtimedwait. */
	sigemptyset(stop_set);
	sigaddset(stop_set, SIGINT);
	sigaddset(stop_set, SIGTERM);
	sigaddset(stop_set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, stop_set, NULL);
}

static void summary(long long start_ns)
{
	double secs = (double)(ns(CLOCK_MONOTONIC) - start_ns) / 1e9;
	char hc[160];

	if (opt.no_hypercall)
		snprintf(hc, sizeof(hc), "off (--no-hypercall)");
	else if (atomic_load(&g.fault_reported))
		snprintf(hc, sizeof(hc), "not supported here (%s faulted), %llu made before",
			 g.insn == INSN_VMMCALL ? "vmmcall" : "vmcall", atomic_load(&g.hypercalls));
	else
		snprintf(hc, sizeof(hc), "%llu %s, last returned %lld%s", atomic_load(&g.hypercalls),
			 g.insn == INSN_VMMCALL ? "vmmcall" : "vmcall", atomic_load(&g.last_ret),
			 atomic_load(&g.last_ret) == -1 ? " (KVM_EPERM: expected from user space)" : "");
	fprintf(stderr, PROG ": %llu round%s on %d CPU%s in %.1f s; hypercalls: %s; markers: %s",
		atomic_load(&g.rounds), atomic_load(&g.rounds) == 1 ? "" : "s", opt.nr_cpus, opt.nr_cpus > 1 ? "s" : "",
		secs, hc,
		g.marker_path ? g.marker_path : "none");
	if (atomic_load(&g.marker_errors))
		fprintf(stderr, " (%llu writes failed)", atomic_load(&g.marker_errors));
	if (opt.log_path)
		fprintf(stderr, "; log: %s", opt.log_path);
	if (atomic_load(&g.log_errors))
		fprintf(stderr, " (%llu writes failed)", atomic_load(&g.log_errors));
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	pthread_t threads[CPU_SETSIZE];
	int nthreads = 0, cpu, sig = 0, status = EXIT_OK;
	pthread_condattr_t ca;
	sigset_t stop_set;
	long long start;

	parse_options(argc, argv);
#if HAVE_HYPERCALL
	g.insn = opt.insn == INSN_AUTO ? cpu_insn() : opt.insn;
#else
	if (!opt.no_hypercall)
		fprintf(stderr, PROG ": no hypercall on this architecture: markers only\n");
	opt.no_hypercall = true;
#endif
	open_outputs();
	setup_signals(&stop_set);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g.wake, &ca);
	g.seq_base = (unsigned long long)(ns(CLOCK_REALTIME) / 1000) & KEY_SEQ_MASK;
	start = ns(CLOCK_MONOTONIC);

	atomic_store(&g.workers_left, opt.nr_cpus);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &opt.cpus))
			continue;
		if (pthread_create(&threads[nthreads], NULL, worker, (void *)(intptr_t)cpu)) {
			fprintf(stderr, PROG ": cannot start a thread for CPU %d\n", cpu);
			atomic_fetch_sub(&g.workers_left, 1);
			status = EXIT_FAIL;
			continue;
		}
		nthreads++;
	}
	/* Wait for a signal, the duration, or every worker to be done. */
	while (atomic_load(&g.workers_left) > 0 && !atomic_load(&g.stop)) {
		struct timespec tick = { 0, 50 * 1000000L };

		sig = sigtimedwait(&stop_set, NULL, &tick);
		if (sig > 0) {
			if (!opt.quiet)
				fprintf(stderr, PROG ": %s: stopping\n", strsignal(sig));
			break;
		}
		if (opt.duration > 0 && (double)(ns(CLOCK_MONOTONIC) - start) / 1e9 >= opt.duration)
			break;
	}
	stop_all();
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	if (!opt.quiet)
		summary(start);
	if (!atomic_load(&g.rounds) && sig <= 0) {
		fprintf(stderr, PROG ": no round was made\n");
		status = EXIT_FAIL;
	}
	if (opt.exit_on_ud && atomic_load(&g.fault_reported))
		status = EXIT_NO_HYPERCALL;
	if (g.marker_fd >= 0)
		close(g.marker_fd);
	if (g.log_fd >= 0 && close(g.log_fd)) {
		fprintf(stderr, PROG ": writing the log %s failed: %s\n", opt.log_path, strerror(errno));
		status = EXIT_FAIL;
	}
	return status;
}
