// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Option parsing, shared by the supervisor and the VM processes.
 * getopt_long_only, so QEMU's single-dash `-name` works next to `--vms`.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "microvm.h"

enum {
	OPT_VMS = 256,
	OPT_VCPUS,
	OPT_BUSY_US,
	OPT_IDLE_US,
	OPT_CHUNK_ITERS,
	OPT_CHUNK_US,
	OPT_PIN,
	OPT_IO_THREAD_US,
	OPT_MSI_US,
	OPT_MIX,
	OPT_IRQCHIP,
	OPT_IPI,
	OPT_ADDRESS_SPACES,
	OPT_NESTED,
	OPT_DURATION,
	OPT_NAME,
	OPT_JSON,
	OPT_READY,
	OPT_HOLD,
	OPT_VM_INDEX,
	OPT_REPORT_FD,
};

static const struct option long_options[] = {
	{ "vms", required_argument, NULL, OPT_VMS },
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "busy-us", required_argument, NULL, OPT_BUSY_US },
	{ "idle-us", required_argument, NULL, OPT_IDLE_US },
	{ "chunk-iters", required_argument, NULL, OPT_CHUNK_ITERS },
	{ "chunk-us", required_argument, NULL, OPT_CHUNK_US },
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "io-thread-us", required_argument, NULL, OPT_IO_THREAD_US },
	{ "msi-us", required_argument, NULL, OPT_MSI_US },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "irqchip", no_argument, NULL, OPT_IRQCHIP },
	{ "ipi", no_argument, NULL, OPT_IPI },
	{ "address-spaces", no_argument, NULL, OPT_ADDRESS_SPACES },
	{ "nested", no_argument, NULL, OPT_NESTED },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "ready", required_argument, NULL, OPT_READY },
	{ "hold", required_argument, NULL, OPT_HOLD },
	{ "help", no_argument, NULL, 'h' },
	{ "vm-index", required_argument, NULL, OPT_VM_INDEX },
	{ "report-fd", required_argument, NULL, OPT_REPORT_FD },
	{ 0 },
};

void microvm_usage(FILE *f)
{
	fputs("Usage: microvm [OPTIONS]\n"
	      "\n"
	      "A micro-VMM on /dev/kvm: starts N VMs x M vCPUs running a tiny real-mode guest\n"
	      "that alternates busy work with halts, so vcpustat has real vCPU threads to watch.\n"
	      "Each VM is its own process (its pid is the VM), started with a QEMU-like\n"
	      "`-name guest=NAME` on its command line; its vCPU threads are named `CPU <n>/KVM`.\n"
	      "\n"
	      "  --vms N           number of VMs (processes), 1..64 (default 1)\n"
	      "  --vcpus M         vCPUs (threads) per VM, 1..64 (default 1)\n"
	      "  --busy-us X       each busy period lasts X us of wall time (default 2000)\n"
	      "  --idle-us Y       then the guest halts (HLT) and its vCPU thread sleeps Y us\n"
	      "                    (default 2000); 0 = never halt: pure busy work\n"
	      "  --chunk-us U      guest work between two port-I/O exits, in us of CPU time\n"
	      "                    (default 50); each vCPU calibrates its loop count at start\n"
	      "  --chunk-iters K   fixed guest loop iterations between two I/O exits instead\n"
	      "                    of calibrating (1..1000000000)\n"
	      "  --pin CPU         pin every vCPU thread of every VM to CPU (sched_setaffinity)\n"
	      "  --io-thread-us X  each VM also has an I/O thread (`IO iothread0`, pinned with\n"
	      "                    --pin like its vCPUs) that works X us of CPU time, sleeps\n"
	      "                    X us, again and again: a VMM thread that is no vCPU\n"
	      "  --mix OPS         before each chunk the guest also runs each of OPS once (comma-\n"
	      "                    separated, or all): cpuid, rdmsr, wrmsr (of EFER: exits handled\n"
	      "                    in KVM), mmio (a write to unmapped memory: KVM_EXIT_MMIO), touch\n"
	      "                    (a write to a page the VMM discarded: a nested page fault)\n"
	      "  --irqchip         an in-kernel irqchip: HLT stays in KVM (which may poll before\n"
	      "                    it sleeps, kvm.halt_poll_ns) and the guest's own LAPIC timer,\n"
	      "                    armed for Y us, wakes it (not with --mix)\n"
	      "  --ipi             with --irqchip: only vCPU 0 arms its timer; after each of its\n"
	      "                    halts it sends every other vCPU an IPI, which is what ends\n"
	      "                    their halts\n"
	      "  --msi-us X        with --irqchip: a device. Each VM's I/O thread (`IO iothread0`)\n"
	      "                    sleeps X us, then sends each vCPU an MSI (KVM_SIGNAL_MSI,\n"
	      "                    vector 0x42), again and again; no vCPU arms its timer, so\n"
	      "                    the device's interrupts end their halts (not with --ipi or\n"
	      "                    --io-thread-us)\n"
	      "  --address-spaces  the guest runs in 32-bit protected mode with paging and two\n"
	      "                    page directories, CR3 0x4000 and 0x5000: its chunks alternate\n"
	      "                    between them, and those in 0x4000 have 3x the loop\n"
	      "                    iterations (not with --mix or --irqchip)\n"
	      "  --nested          the guest is a hypervisor (AMD SVM; the host's KVM must\n"
	      "                    offer SVM to its guests): each chunk's loop runs in a\n"
	      "                    guest of its own, which ends it with VMMCALL; at most 4\n"
	      "                    vCPUs (not with --mix, --irqchip or --address-spaces)\n"
	      "  --duration SEC    stop after SEC seconds (decimals allowed), counted in each VM\n"
	      "                    from the moment all its vCPUs run (default: until SIGINT or\n"
	      "                    SIGTERM)\n"
	      "  -name NAME        VM name, QEMU-like: `-name guest=NAME[,debug-threads=on]` or\n"
	      "                    `-name NAME`; letters, digits, '.', '_', '-' (default microvm).\n"
	      "                    With --vms 1 the VM is NAME, else NAME-0 .. NAME-<N-1>\n"
	      "  --json FILE       write the final report to FILE (default: stdout)\n"
	      "  --ready FILE      once every vCPU thread of every VM has run KVM_RUN, write\n"
	      "                    {\"supervisor_pid\", \"vms\": [{index, pid, name, vcpus:\n"
	      "                    [{index, tid}]}]} to FILE (atomically: tmp file + rename)\n"
	      "  --hold FILE       at the stop, once every vCPU thread has read its schedstat\n"
	      "                    (its last act) and blocks, write FILE; the threads stay\n"
	      "                    blocked, and microvm does not exit, until FILE is removed\n"
	      "                    (at most 600 s). With --vms 1 only\n"
	      "  -h, --help        this help\n"
	      "\n"
	      "The guest runs a chunk of loop work, then `in eax, 0x10` (KVM_EXIT_IO): the VMM\n"
	      "answers the next chunk's loop count, or 0 once the busy period is over; the guest\n"
	      "then runs HLT (KVM_EXIT_HLT, no in-kernel irqchip) and the VMM sleeps Y us before\n"
	      "it re-enters KVM_RUN.\n"
	      "\n"
	      "At the end (duration or SIGINT/SIGTERM) it prints one JSON report: per VM its pid\n"
	      "and name, per vCPU its tid, exits by KVM_EXIT_* reason, time inside KVM_RUN, time\n"
	      "halted, halts, busy periods, the --mix ops done, KVM's own counters for the vCPU\n"
	      "(KVM_GET_STATS_FD, read with the vCPUs stopped) and the kernel's schedstat.\n"
	      "Fields: docs/microvm.md.\n"
	      "\n"
	      "Examples:\n"
	      "  microvm --vms 2 --vcpus 2 --duration 5 --pin 1\n"
	      "  microvm -name guest=web --idle-us 0 --json report.json      # until Ctrl-C\n"
	      "  microvm --duration 2 --mix cpuid,rdmsr,wrmsr,mmio,touch\n"
	      "  microvm --duration 2 --irqchip --busy-us 300 --idle-us 50   # halt polling\n"
	      "\n"
	      "Exit status: 0 done, 1 run-time failure (KVM, a VM process, a file), 2 bad options.\n"
	      "Internal (the supervisor passes them to its VM processes): --vm-index I, --report-fd FD.\n",
	      f);
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A decimal integer in [min, max]; no sign, no junk. */
static int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		     size_t errlen)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!isdigit((unsigned char)s[0]))
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	return fail(err, errlen, "%s: '%s' is not a whole number from %llu to %llu", opt, s,
		    (unsigned long long)min, (unsigned long long)max);
}

static int parse_pin(const char *s, int *out, char *err, size_t errlen)
{
	cpu_set_t allowed;
	uint64_t cpu;

	if (parse_u64("--pin", s, 0, CPU_SETSIZE - 1, &cpu, err, errlen))
		return -1;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && !CPU_ISSET((int)cpu, &allowed))
		return fail(err, errlen, "--pin: CPU %llu is not available to this process (see: taskset -cp $$)",
			    (unsigned long long)cpu);
	*out = (int)cpu;
	return 0;
}

static int parse_duration(const char *s, double *out, char *err, size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 1e7)
		return fail(err, errlen, "--duration: '%s' is not a number of seconds > 0 (e.g. 1.5)", s);
	*out = v;
	return 0;
}

/* --mix: op names separated by commas, or "all" (or "none"). */
static int parse_mix(const char *s, unsigned int *out, char *err, size_t errlen)
{
	const char *p = s;
	unsigned int mix = 0;

	if (!*s)
		return fail(err, errlen, "--mix: empty (use e.g. --mix cpuid,mmio, or all)");
	while (*p) {
		size_t len = strcspn(p, ",");
		unsigned int op;

		if (len == 3 && !strncmp(p, "all", 3)) {
			mix |= MIX_ALL;
		} else if (!(len == 4 && !strncmp(p, "none", 4))) {
			for (op = 0; op < MIX_NR_OPS; op++)
				if (strlen(microvm_mix_names[op]) == len && !strncmp(p, microvm_mix_names[op], len))
					break;
			if (op == MIX_NR_OPS)
				return fail(err, errlen,
					    "--mix: unknown op '%.*s' in '%s' (ops: cpuid, rdmsr, wrmsr, mmio, touch, all)",
					    (int)len, p, s);
			mix |= 1u << op;
		}
		p += len;
		if (*p == ',' && *++p == '\0')
			return fail(err, errlen, "--mix: '%s' ends with a comma", s);
	}
	*out = mix;
	return 0;
}

static bool name_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/*
 * QEMU's -name: "NAME" or "guest=NAME" followed by ",key=value" items;
 * process= and debug-threads= are accepted (our vCPU threads are always
 * named) and ignored.
 */
static int parse_name(const char *s, char *name, size_t namelen, char *err, size_t errlen)
{
	char *copy = strdup(s), *item, *save = NULL;
	const char *value = NULL;
	int first = 1, ret = 0;

	if (!copy)
		return fail(err, errlen, "-name: out of memory");
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save), first = 0) {
		char *eq = strchr(item, '=');

		if (!eq && first) {
			value = item;
		} else if (eq && !strncmp(item, "guest=", 6)) {
			value = eq + 1;
		} else if (!eq || (strncmp(item, "process=", 8) && strncmp(item, "debug-threads=", 14))) {
			ret = fail(err, errlen,
				   "-name: '%s': unknown item '%s' (use -name NAME or -name guest=NAME[,debug-threads=on])",
				   s, item);
			goto out;
		}
	}
	if (!value || !*value) {
		ret = fail(err, errlen, "-name: '%s' has no name (use -name NAME or -name guest=NAME)", s);
		goto out;
	}
	if (strlen(value) >= namelen) { /* the supervisor checks MICROVM_NAME_MAX, without the -<i> suffix */
		ret = fail(err, errlen, "-name: '%s' is longer than %d characters", value, MICROVM_NAME_MAX);
		goto out;
	}
	for (const char *p = value; *p; p++) {
		if (!name_char_ok(*p)) {
			ret = fail(err, errlen, "-name: '%s': only letters, digits, '.', '_' and '-' are allowed",
				   value);
			goto out;
		}
	}
	snprintf(name, namelen, "%s", value);
out:
	free(copy);
	return ret;
}

int microvm_parse_opts(int argc, char **argv, struct microvm_opts *o, char *err, size_t errlen)
{
	uint64_t v;
	int c;

	*o = (struct microvm_opts){
		.vms = 1,
		.vcpus = 1,
		.busy_us = 2000,
		.idle_us = 2000,
		.chunk_us = 50,
		.pin = -1,
		.vm_index = -1,
		.report_fd = -1,
	};
	snprintf(o->name, sizeof(o->name), "microvm");

	opterr = 0;
	optind = 1;
	while ((c = getopt_long_only(argc, argv, ":h", long_options, NULL)) != -1) {
		int r = 0;

		switch (c) {
		case 'h':
			microvm_usage(stdout);
			return 1;
		case OPT_VMS:
			r = parse_u64("--vms", optarg, 1, MICROVM_MAX_VMS, &v, err, errlen);
			o->vms = (unsigned int)v;
			break;
		case OPT_VCPUS:
			r = parse_u64("--vcpus", optarg, 1, MICROVM_MAX_VCPUS, &v, err, errlen);
			o->vcpus = (unsigned int)v;
			break;
		case OPT_BUSY_US:
			r = parse_u64("--busy-us", optarg, 1, 3600000000ull, &o->busy_us, err, errlen);
			break;
		case OPT_IDLE_US:
			r = parse_u64("--idle-us", optarg, 0, 3600000000ull, &o->idle_us, err, errlen);
			break;
		case OPT_CHUNK_ITERS:
			r = parse_u64("--chunk-iters", optarg, 1, 1000000000ull, &o->chunk_iters, err, errlen);
			break;
		case OPT_CHUNK_US:
			r = parse_u64("--chunk-us", optarg, 1, 1000000ull, &o->chunk_us, err, errlen);
			break;
		case OPT_PIN:
			r = parse_pin(optarg, &o->pin, err, errlen);
			break;
		case OPT_MSI_US:
			r = parse_u64("--msi-us", optarg, 1, 3600000000ull, &o->msi_us, err, errlen);
			break;
		case OPT_IO_THREAD_US:
			r = parse_u64("--io-thread-us", optarg, 1, 3600000000ull, &o->io_thread_us, err, errlen);
			break;
		case OPT_MIX:
			r = parse_mix(optarg, &o->mix, err, errlen);
			break;
		case OPT_IRQCHIP:
			o->irqchip = 1;
			break;
		case OPT_IPI:
			o->ipi = 1;
			break;
		case OPT_ADDRESS_SPACES:
			o->address_spaces = 1;
			break;
		case OPT_NESTED:
			o->nested = 1;
			break;
		case OPT_DURATION:
			r = parse_duration(optarg, &o->duration_s, err, errlen);
			o->duration_arg = optarg;
			break;
		case OPT_NAME:
			r = parse_name(optarg, o->name, sizeof(o->name), err, errlen);
			break;
		case OPT_JSON:
			if (!*optarg)
				r = fail(err, errlen, "--json: empty file name");
			o->json_path = optarg;
			break;
		case OPT_READY:
			if (!*optarg)
				r = fail(err, errlen, "--ready: empty file name");
			o->ready_path = optarg;
			break;
		case OPT_HOLD:
			if (!*optarg)
				r = fail(err, errlen, "--hold: empty file name");
			o->hold_path = optarg;
			break;
		case OPT_VM_INDEX:
			r = parse_u64("--vm-index", optarg, 0, MICROVM_MAX_VMS - 1, &v, err, errlen);
			o->vm_index = (int)v;
			break;
		case OPT_REPORT_FD:
			r = parse_u64("--report-fd", optarg, 0, 1 << 20, &v, err, errlen);
			o->report_fd = (int)v;
			break;
		case ':':
			return fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		default:
			return fail(err, errlen, "unknown or ambiguous option '%s'", argv[optind - 1]);
		}
		if (r)
			return -1;
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s' (options only)", argv[optind]);
	if (o->vm_index < 0 && strlen(o->name) > MICROVM_NAME_MAX)
		return fail(err, errlen, "-name: '%s' is longer than %d characters", o->name, MICROVM_NAME_MAX);
	if (o->ipi && (!o->irqchip || o->vcpus < 2))
		return fail(err, errlen, "--ipi: needs --irqchip and --vcpus 2 or more (vCPU 0 sends, the others receive)");
	if (o->msi_us && (!o->irqchip || o->ipi || o->io_thread_us))
		return fail(err, errlen, "--msi-us: needs --irqchip, and neither --ipi nor --io-thread-us (the I/O thread is the device)");
	if (o->address_spaces && (o->mix || o->irqchip))
		return fail(err, errlen, "--address-spaces: not with --mix or --irqchip (each is a guest program of its own)");
	if (o->nested && (o->mix || o->irqchip || o->address_spaces))
		return fail(err, errlen, "--nested: not with --mix, --irqchip or --address-spaces (each is a guest program of its own)");
	if (o->nested && o->vcpus > MICROVM_MAX_NESTED_VCPUS)
		return fail(err, errlen, "--nested: at most %u vCPUs (each has its VMCB in the guest's 64 KiB)",
			    MICROVM_MAX_NESTED_VCPUS);
	if (o->irqchip && o->mix)
		return fail(err, errlen, "--irqchip and --mix: one guest program or the other, not both");
	if (o->irqchip && o->idle_us > 4000000)
		return fail(err, errlen, "--idle-us %llu: with --irqchip at most 4000000 (the LAPIC timer's 32-bit count of ns)",
			    (unsigned long long)o->idle_us);
	if (o->hold_path && o->vms != 1)
		return fail(err, errlen, "--hold: with --vms 1 only (one VM process writes the file)");
	if ((o->vm_index < 0) != (o->report_fd < 0))
		return fail(err, errlen, "--vm-index and --report-fd are internal and go together");
	return 0;
}
