// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat record: drain the BPF ring buffer of state transitions into a
 * State History Tree file (and, with --capture, the raw events into a
 * capture file) until Ctrl-C, SIGTERM or --duration.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "record/record.h"
#include "cli/cli.h"
#include "model/model.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s record -o FILE.sht [--level vcpu|full] [--duration D]\n"
		"                 [--max-size SIZE | --rotate-every DURATION] [--keep N]\n"
		"                 [--capture FILE.vcap] [--ringbuf SIZE] [--meta KEY=VALUE]... [-q] [-v]\n"
		"\n"
		"Record every vCPU's state changes, exit reasons and CPUs into a State History\n"
		"Tree file until Ctrl-C, SIGTERM or --duration. Query it later with `vcpustat\n"
		"query`, `vcpustat report`, `vcpustat export`. The attributes are described in\n"
		"docs/sht-attributes.md.\n"
		"\n"
		"  -o, --output FILE     the .sht file (with rotation: the name of the series)\n"
		"  -l, --level LEVEL     vcpu (default): vCPU states, exit reasons, pCPUs;\n"
		"                        full: also which thread runs on every CPU and the states\n"
		"                        of host threads (needed for culprits in reports)\n"
		"  -t, --duration D      stop after D (1.5s, 250ms, 15m, 2h; a bare number is seconds)\n"
		"      --max-size SIZE   rotate when a file reaches SIZE (K, M, G suffixes)\n"
		"      --rotate-every D  rotate every D (at least 1s; same syntax as --duration)\n"
		"      --keep N          with rotation, keep the newest N files (default: all)\n"
		"      --capture FILE    also write the raw events to FILE (docs/capture-format.md),\n"
		"                        for `vcpustat replay`\n"
		"      --ringbuf SIZE    kernel ring buffer size (default 8M, a power of two)\n"
		"      --meta KEY=VALUE  store this in the file's metadata (repeatable), e.g.\n"
		"                        workload='what ran' (shown by `top --file`)\n"
		"  -q, --quiet           no summary at the end\n"
		"  -v, --verbose         libbpf's log on stderr\n"
		"\n"
		"Lost records (ring buffer full) are counted, stored in the file (/meta/lost) and\n"
		"reported. The file is readable at any time up to its last sealed node, also if\n"
		"vcpustat is killed.\n",
		cli_prog);
	cli_usage_exit_status(f);
}

/* "64M" -> bytes; -1 if malformed. */
static long long parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	long long mult = 1;

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mult = 1ll << 10; end++; break;
	case 'm': case 'M': mult = 1ll << 20; end++; break;
	case 'g': case 'G': mult = 1ll << 30; end++; break;
	default: return -1;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	return *end ? -1 : (long long)(v * (double)mult);
}

/* The longest the final drain may take, however many records wait. */
#define RECORD_FINAL_DRAIN_S 30

struct record_ctx {
	struct recorder *rec;
	struct capture_writer *cap;
	struct names names;
	struct hashmap named; /* tgids whose name went to the capture */
	struct vcpustat_error err;
	int failed;
	unsigned long long records;
};

static const char *vm_name(void *ctx, uint32_t tgid)
{
	struct record_ctx *c = ctx;
	const char *name = names_vm(&c->names, tgid);

	if (c->cap && !hashmap_lookup(&c->named, &tgid) && hashmap_insert(&c->named, &tgid, NULL) == 0 &&
	    capture_write_name(c->cap, tgid, name, &c->err))
		c->failed = c->err.code;
	return name;
}

static const char *thread_name(void *ctx, uint32_t tid, uint32_t *tgid)
{
	struct record_ctx *c = ctx;
	static char buf[64];
	const char *name = names_thread(&c->names, tid, tgid, buf, sizeof(buf));

	if (name && c->cap && capture_write_thread(c->cap, tid, *tgid, name, &c->err))
		c->failed = c->err.code;
	return name;
}

static int on_record(void *ctx, const struct vcpustat_record *rec)
{
	struct record_ctx *c = ctx;
	int e;

	c->records++;
	/*
	 * A VM's name now, while its process is surely there: the recorder asks
	 * only when it applies the VM's first record, after the reorder window,
	 * and a short-lived VM may be gone by then (its name lost to a pid).
	 */
	if (rec->vcpu != VCPUSTAT_VCPU_NONE && rec->tgid)
		vm_name(c, rec->tgid);
	e = recorder_add(c->rec, rec, &c->err);
	if (e)
		c->failed = e;
	return e;
}

static int on_event(void *ctx, const struct vcpustat_event *ev)
{
	struct record_ctx *c = ctx;
	int e = c->cap ? capture_write(c->cap, ev, &c->err) : 0;

	if (e)
		c->failed = e;
	return e;
}

static __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static __u64 lost_total(struct vcpustat *vs)
{
	__u64 lost[VCPUSTAT_NR_LOST], sum = 0;

	if (vcpustat_lost(vs, lost))
		return 0;
	for (int i = 0; i < VCPUSTAT_NR_LOST; i++)
		sum += lost[i];
	return sum;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },   { "level", required_argument, NULL, 'l' },
		{ "duration", required_argument, NULL, 't' }, { "max-size", required_argument, NULL, 'S' },
		{ "rotate-every", required_argument, NULL, 'R' }, { "keep", required_argument, NULL, 'K' },
		{ "capture", required_argument, NULL, 'C' },  { "ringbuf", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },	      { "verbose", no_argument, NULL, 'v' },
		{ "meta", required_argument, NULL, 'M' },     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const reserved[] = { "host", "kernel", "tool", "command", "level", "cpus", NULL };
	struct vcpustat_options vo = { .record_level = VCPUSTAT_LEVEL_VCPU };
	struct recorder_opts ro = { 0 };
	struct record_ctx c = { 0 };
	struct ring_buffer *rb = NULL;
	struct vcpustat *vs = NULL;
	const char *out = NULL, *capture = NULL;
	__u64 duration_ns = 0, rotate_ns;
	bool quiet = false, verbose = false;
	long long size;
	__u64 mono0, real0, deadline = 0, next_tick, lost = 0, end;
	char host[256] = "", kernel[256] = "", cmdline[1024] = "", level_s[8];
	struct sht_meta meta[5 + 16];
	size_t nmeta = 5;
	struct utsname un;
	char metatext[2048];
	int opt, ret = CLI_FAIL, e;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:l:t:qvh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'l':
			if (!strcmp(optarg, "vcpu"))
				vo.record_level = VCPUSTAT_LEVEL_VCPU;
			else if (!strcmp(optarg, "full"))
				vo.record_level = VCPUSTAT_LEVEL_FULL;
			else {
				cli_err("--level %s: the level is vcpu or full", optarg);
				return CLI_USAGE;
			}
			break;
		case 't':
			if (cli_parse_duration("--duration", optarg, 1, 0, &duration_ns))
				return CLI_USAGE;
			break;
		case 'S':
			size = parse_size(optarg);
			if (size < 65536) {
				cli_err("--max-size %s: a size of at least 64K (K, M, G suffixes)", optarg);
				return CLI_USAGE;
			}
			ro.max_bytes = (uint64_t)size;
			break;
		case 'R':
			if (cli_parse_duration("--rotate-every", optarg, 1000000000ull, 0, &rotate_ns))
				return CLI_USAGE;
			ro.rotate_ns = rotate_ns;
			break;
		case 'K': {
			long k;

			if (cli_parse_long("--keep", optarg, 1, 1000000, "files", &k))
				return CLI_USAGE;
			ro.keep = (unsigned int)k;
			break;
		}
		case 'C': capture = optarg; break;
		case 'B':
			size = parse_size(optarg);
			if (size < 4096 || size > (1ll << 30) || (size & (size - 1))) {
				cli_err("--ringbuf %s: a power of two from 4K to 1G", optarg);
				return CLI_USAGE;
			}
			vo.ringbuf_bytes = (unsigned int)size;
			break;
		case 'M':
			if (nmeta >= sizeof(meta) / sizeof(meta[0])) {
				cli_err("--meta: at most %zu", sizeof(meta) / sizeof(meta[0]) - 5);
				return CLI_USAGE;
			}
			if (cli_parse_meta(optarg, reserved, &meta[nmeta].key, &meta[nmeta].value))
				return CLI_USAGE;
			nmeta++;
			break;
		case 'q': quiet = true; break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return CLI_OK;
		default: usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc) {
		cli_err("unexpected argument '%s' (see --help)", argv[optind]);
		return CLI_USAGE;
	}
	if (!out) {
		cli_err("record: -o FILE.sht is required");
		return CLI_USAGE;
	}
	if (ro.keep && !ro.max_bytes && !ro.rotate_ns) {
		cli_err("--keep only makes sense with --max-size or --rotate-every");
		return CLI_USAGE;
	}
	vo.record_raw = capture != NULL;

	ret = cli_open_live(&vs, &vo, verbose, quiet);
	if (ret)
		return ret;
	ret = CLI_FAIL;
	if (names_init(&c.names, NULL, NULL) || hashmap_init(&c.named, sizeof(uint32_t), 1, 0)) {
		cli_err("out of memory");
		goto out;
	}

	mono0 = vcpustat_now_ns();
	real0 = realtime_ns();
	if (uname(&un) == 0) {
		snprintf(host, sizeof(host), "%s", un.nodename);
		snprintf(kernel, sizeof(kernel), "%s %s", un.release, un.machine);
	}
	for (int i = 0, n = 0; i < argc && n < (int)sizeof(cmdline) - 2; i++)
		n += snprintf(cmdline + n, sizeof(cmdline) - (size_t)n, "%s%s", i ? " " : "vcpustat ", argv[i]);
	snprintf(level_s, sizeof(level_s), "%s", vo.record_level == VCPUSTAT_LEVEL_FULL ? "full" : "vcpu");
	meta[0] = (struct sht_meta){ "host", host };
	meta[1] = (struct sht_meta){ "kernel", kernel };
	meta[2] = (struct sht_meta){ "tool", "vcpustat " VCPUSTAT_VERSION };
	meta[3] = (struct sht_meta){ "command", cmdline };
	meta[4] = (struct sht_meta){ "level", level_s };

	if (capture) {
		snprintf(metatext, sizeof(metatext), "host=%s\nkernel=%s\ntool=vcpustat %s\ncommand=%s\nlevel=%s\ncpus=%d\n",
			 host, kernel, VCPUSTAT_VERSION, cmdline, level_s, libbpf_num_possible_cpus());
		for (size_t i = 5; i < nmeta; i++) {
			size_t len = strlen(metatext);

			snprintf(metatext + len, sizeof(metatext) - len, "%s=%s\n", meta[i].key, meta[i].value);
		}
		if (capture_create(&c.cap, capture, mono0, real0, metatext, &c.err)) {
			cli_err("%s", c.err.msg);
			goto out;
		}
	}
	ro.path = out;
	ro.mono_start_ns = mono0;
	ro.real_start_ns = real0;
	ro.meta = meta;
	ro.nmeta = nmeta;
	ro.vm_name = vm_name;
	ro.thread_name = thread_name;
	ro.ctx = &c;
	if (recorder_open(&c.rec, &ro, &c.err)) {
		cli_err("%s", c.err.msg);
		goto out;
	}
	{
		struct vcpustat_consumer cons = { .on_record = on_record, .on_event = on_event, .ctx = &c };

		rb = vcpustat_ring_buffer(vs, &cons);
	}
	if (!rb) {
		cli_err("cannot open the BPF ring buffer: %s", strerror(errno));
		goto out;
	}

	cli_catch_stop(false);
	if (duration_ns)
		deadline = mono0 + duration_ns;
	next_tick = mono0 + 1000000000ull;
	if (!quiet)
		fprintf(stderr, "%s: recording to %s (level %s)%s; Ctrl-C to stop\n", cli_prog, out, level_s,
			capture ? ", raw events too" : "");
	while (!cli_stop && !c.failed) {
		__u64 now;

		e = vcpustat_drain(rb, 100);
		if (e < 0 && e != -EINTR) {
			if (!c.failed)
				cli_err("reading the ring buffer: %s", strerror(-e));
			break;
		}
		now = vcpustat_now_ns();
		if (now >= next_tick) {
			next_tick += 1000000000ull;
			{
				__u64 l = lost_total(vs);

				/* every tick, like recorder_lost: replay makes the same calls (same file) */
				if (c.cap && capture_write_lost(c.cap, now, l, &c.err)) {
					c.failed = c.err.code;
					break;
				}
				lost = l;
			}
			if (recorder_lost(c.rec, now, lost, &c.err)) {
				c.failed = c.err.code;
				break;
			}
			if ((now - mono0) / 1000000000ull % 5 == 0 && recorder_flush(c.rec, &c.err)) {
				c.failed = c.err.code;
				break;
			}
		}
		if (deadline && now >= deadline)
			break;
	}
	if (!c.failed) {
		/*
		 * What the kernel produced before we stopped: all of it, however far
		 * behind we are (the exact tests stop their VMs first), but not what
		 * VMs still running add after the stop (the ring's producer position
		 * now is where the drain ends: draining on while they flood it made
		 * `record --duration 2` beside a 20 s VM take 30 s more, and
		 * export_live's file test time out in the KVM lab), and never more
		 * than RECORD_FINAL_DRAIN_S.
		 */
		__u64 until = vcpustat_now_ns() + RECORD_FINAL_DRAIN_S * 1000000000ull;
		unsigned long cons, prod, stop_pos;
		bool bounded = vcpustat_ring_pos(vs, &cons, &stop_pos) == 0;

		while ((e = vcpustat_drain(rb, 0)) > 0 && vcpustat_now_ns() < until)
			if (bounded && !vcpustat_ring_pos(vs, &cons, &prod) && (long)(stop_pos - cons) <= 0) {
				e = 0; /* the backlog is in: what VMs add after the stop is not wanted */
				break;
			}
		if (e < 0)
			cli_err("reading the ring buffer: %s", strerror(-e));
		else if (e > 0 && !quiet)
			fprintf(stderr, "%s: still behind the kernel after %d s of draining at the end: "
				"the newest records are not in the file\n", cli_prog, RECORD_FINAL_DRAIN_S);
	}
	if (c.failed) {
		cli_err("%s", c.err.msg[0] ? c.err.msg : strerror(-c.failed));
		goto out;
	}
	end = vcpustat_now_ns();
	{
		__u64 l = lost_total(vs);

		if (c.cap && capture_write_lost(c.cap, end, l, &c.err)) {
			cli_err("%s", c.err.msg);
			goto out;
		}
		lost = l;
	}
	if (recorder_lost(c.rec, end, lost, &c.err)) {
		cli_err("%s", c.err.msg);
		goto out;
	}
	{
		struct recorder_stats st;

		if (recorder_finish(&c.rec, end, &st, &c.err)) {
			cli_err("%s", c.err.msg);
			goto out;
		}
		if (c.cap) {
			struct capture_writer *cap = c.cap;
			unsigned long long events = capture_written(cap);

			c.cap = NULL;
			if (capture_write_end(cap, end, &c.err) || capture_close(cap, &c.err)) {
				cli_err("%s", c.err.msg);
				goto out;
			}
			if (!quiet)
				fprintf(stderr, "%s: %llu raw events in %s\n", cli_prog, events, capture);
		}
		if (!quiet)
			fprintf(stderr, "%s: %llu records, %llu intervals in %llu file%s (last: %s), %.1f s; lost %llu%s\n",
				cli_prog, (unsigned long long)st.records, (unsigned long long)st.intervals,
				(unsigned long long)st.files, st.files == 1 ? "" : "s", st.path, (end - mono0) / 1e9,
				(unsigned long long)lost, lost ? " (see /meta/lost: the timeline has holes)" : "");
	}
	ret = CLI_OK;
out:
	ring_buffer__free(rb);
	if (c.rec) /* after a failure: leave what was sealed readable */
		recorder_close(c.rec, vcpustat_now_ns(), NULL);
	if (c.cap)
		capture_close(c.cap, NULL);
	hashmap_free(&c.named);
	names_free(&c.names);
	vcpustat_close(vs);
	return ret;
}
