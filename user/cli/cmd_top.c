// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat [top]: the live view of every VM and vCPU, refreshed every -d SEC:
 * interactive (ncurses), batch text (-b) or one JSON document per refresh (-j).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "model/model.h"
#include "cli/ui.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [top] [-d SEC] [-n N] [-b | -j] [--vm NAME|PID]... [--demo] [-v]\n"
		"       %s [top] --file REC.sht [--from T] [--speed X] [-d SEC] [-n N] [-b | -j] [--vm ...]\n"
		"\n"
		"Every VM and vCPU of this host, refreshed every SEC seconds: the share of the\n"
		"interval each vCPU spent in guest code, in the hypervisor (host), preempted,\n"
		"waiting for a CPU, idle (halted) or blocked; preemptions, wakeups and\n"
		"migrations per second; the top exit reasons with rate and p50/p99 handling\n"
		"latency; and who ran while the VM's vCPUs waited for their CPU.\n"
		"\n"
		"  -d, --delay SEC    refresh interval (default 1; decimals allowed)\n"
		"  -n, --iterations N refresh N times, then exit (-n 1: one-shot)\n"
		"  -b, --batch        plain text, for logs and pipes (no terminal UI)\n"
		"  -j, --json         one JSON document per refresh, one per line (docs/json.md)\n"
		"      --vm NAME|PID  show only this VM (repeatable); the name is the VMM's -name\n"
		"      --top N        rows per exit/culprit table in batch mode (default 5, 0: all)\n"
		"      --demo         start a demo: two small VMs (tools/microvm) and a CPU hog\n"
		"                     sharing CPU 0; stopped when vcpustat exits. Without a usable\n"
		"                     /dev/kvm (or BPF): play the bundled recording of that demo\n"
		"  -v, --verbose      libbpf's log on stderr\n"
		"  -h, --help         this help\n"
		"\n"
		"Time travel over a recording (`vcpustat record`, `import`, `replay`):\n"
		"      --file REC.sht the same views, one window of SEC seconds after another\n"
		"      --from T       start there (default: the start of the file). T: ns since\n"
		"                     the start (123456789), seconds (1.5s, 2.25), or wall-clock\n"
		"                     time (2026-11-22T14:03:07.123, 14:03:07), as `report --from`\n"
		"      --speed X      play at X times the recorded pace. Default: the terminal UI\n"
		"                     plays at 1x; -b and -j print every window (or -n of them) at\n"
		"                     once, as `atop -r` does\n"
		"\n"
		"Interactive keys: q quit, p pause, s/S sort column, r reverse, f filter, arrows\n"
		"select a VM, h help; playing a recording: left/right step, PgUp/PgDn 10 steps,\n"
		"Home/End, t jump to a time, 1/2/3 play at 1x/10x/100x. The live view needs root\n"
		"(CAP_BPF + CAP_PERFMON) and kernel BTF; --file needs neither.\n",
		cli_prog, cli_prog);
	cli_usage_exit_status(f);
}

/* ---- demo: tools/microvm next to this binary, plus a CPU hog ---- */

struct demo {
	pid_t vmm, hog;
};

static int exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/*
 * microvm: next to this binary (the build's bin/), else in ../bin (installed:
 * vcpustat in sbin, microvm in bin). Leaves the first candidate in buf when
 * neither is there, and returns -1 with errno set.
 */
static int microvm_path(char *buf, size_t len)
{
	char dir[PATH_MAX];

	if (exe_dir(dir, sizeof(dir)))
		return -1;
	snprintf(buf, len, "%s/../bin/microvm", dir);
	if (!access(buf, X_OK))
		return 0;
	snprintf(buf, len, "%s/microvm", dir);
	return access(buf, X_OK);
}

/*
 * Why the live demo cannot run here (NULL: it can): VCPUSTAT_DEMO_NO_KVM is
 * set (to try the fallback on a host with KVM), /dev/kvm cannot be opened,
 * microvm is missing, or BPF is not allowed. buf holds the sentence.
 */
static const char *demo_unusable(char *buf, size_t len)
{
	const char *force = getenv("VCPUSTAT_DEMO_NO_KVM");
	char vmm[PATH_MAX + 16] = "", why[256];
	int fd;

	if (force && *force && strcmp(force, "0")) {
		snprintf(buf, len, "VCPUSTAT_DEMO_NO_KVM=%s: /dev/kvm taken as unusable", force);
		return buf;
	}
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(buf, len, "no usable /dev/kvm here (%s)", strerror(errno));
		return buf;
	}
	close(fd);
	if (microvm_path(vmm, sizeof(vmm)) && vmm[0]) {
		snprintf(buf, len, "%.300s: %s", vmm, strerror(errno));
		return buf;
	}
	if (vcpustat_check_privileges(why, sizeof(why))) {
		snprintf(buf, len, "cannot trace here: %s", why);
		return buf;
	}
	return NULL;
}

/* The bundled recording: $VCPUSTAT_DEMO_FILE, else <exe dir>/../share/vcpustat/demo.sht. */
static int demo_file(char *buf, size_t len, const char *reason)
{
	const char *env = getenv("VCPUSTAT_DEMO_FILE");
	char dir[PATH_MAX], path[PATH_MAX + 32];

	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else if (!exe_dir(dir, sizeof(dir)))
		snprintf(path, sizeof(path), "%s/../share/vcpustat/demo.sht", dir);
	else
		snprintf(path, sizeof(path), "share/vcpustat/demo.sht");
	if (!realpath(path, buf) || access(buf, R_OK)) {
		cli_err("--demo: %s, and the bundled recording %s cannot be read: %s (build it: ./build.sh build; or set "
			"VCPUSTAT_DEMO_FILE to a recording)",
			reason, path, strerror(errno));
		return -1;
	}
	(void)len;
	return 0;
}

static int demo_start(struct demo *d)
{
	char vmm[PATH_MAX + 16];
	cpu_set_t cpu0;

	memset(d, 0, sizeof(*d));
	vmm[0] = '\0';
	if (microvm_path(vmm, sizeof(vmm))) {
		if (!vmm[0]) {
			cli_err("--demo: cannot find my own directory");
			return -1;
		}
		cli_err("--demo: %s: %s (it is built with vcpustat: ./build.sh build)", vmm, strerror(errno));
		return -1;
	}
	if (access("/dev/kvm", R_OK | W_OK)) {
		cli_err("--demo: /dev/kvm: %s (the demo runs two small VMs)", strerror(errno));
		return -1;
	}
	d->hog = fork();
	if (d->hog == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		prctl(PR_SET_NAME, "demo-cpu-hog");
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		CPU_ZERO(&cpu0);
		CPU_SET(0, &cpu0);
		sched_setaffinity(0, sizeof(cpu0), &cpu0);
		for (;;)
			;
	}
	d->vmm = fork();
	if (d->vmm == 0) {
		int null = open("/dev/null", O_WRONLY);

		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execl(vmm, vmm, "--vms", "2", "--vcpus", "2", "--pin", "0", "--busy-us", "3000", "--idle-us", "2000",
		      "-name", "demo", (char *)NULL);
		_exit(127);
	}
	if (d->hog < 0 || d->vmm < 0) {
		cli_err("--demo: fork: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void demo_stop(struct demo *d)
{
	pid_t pids[2] = { d->vmm, d->hog };

	for (int i = 0; i < 2; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGTERM);
		waitpid(pids[i], NULL, 0);
	}
}

/* ---- the loop ---- */

static __u64 mono_ns(void)
{
	return vcpustat_now_ns();
}

/* Reap VMs that exited and have been shown once. */
static void reap_exited(struct vcpustat *vs, const struct vcpustat_snapshot *snap)
{
	for (size_t i = 0; i < snap->nr_vms; i++)
		if (snap->vms[i].exited_ns)
			vcpustat_reap_vm(vs, snap->vms[i].tgid);
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "delay", required_argument, NULL, 'd' },   { "iterations", required_argument, NULL, 'n' },
		{ "batch", no_argument, NULL, 'b' },	     { "json", no_argument, NULL, 'j' },
		{ "vm", required_argument, NULL, 'V' },	     { "top", required_argument, NULL, 'T' },
		{ "demo", no_argument, NULL, 'D' },	     { "verbose", no_argument, NULL, 'v' },
		{ "file", required_argument, NULL, 'F' },    { "from", required_argument, NULL, 'R' },
		{ "speed", required_argument, NULL, 'X' },   { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_args targs = { .iterations = -1 };
	char demo_path[PATH_MAX], demo_why[512];
	struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE };
	struct vcpustat_snapshot prev, cur;
	const struct vcpustat_prog *progs;
	struct summary_filter filter = { 0 };
	const char *vm_filter[64];
	struct summary shown = { 0 };
	struct demo demo = { 0 };
	bool batch = false, json = false, verbose = false, want_demo = false, have_shown = false;
	struct ui *ui = NULL;
	struct vcpustat *vs = NULL;
	struct names names;
	long iterations = -1, top = 5;
	double delay = 1.0;
	size_t nr_progs;
	int c, ret = CLI_FAIL;
	__u64 next;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:n:bjvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (cli_parse_seconds("-d", optarg, 0.01, 86400, &delay))
				return CLI_USAGE;
			break;
		case 'n':
			iterations = strtol(optarg, &end, 10);
			if (*end || iterations < 1) {
				cli_err("-n %s: the number of refreshes must be a positive integer", optarg);
				return CLI_USAGE;
			}
			break;
		case 'b': batch = true; break;
		case 'j': json = true; cli_json = true; break;
		case 'V':
			if (cli_add_vm(&filter, vm_filter, sizeof(vm_filter) / sizeof(vm_filter[0]), optarg))
				return CLI_USAGE;
			break;
		case 'T':
			top = strtol(optarg, &end, 10);
			if (*end || top < 0) {
				cli_err("--top %s: a number of rows (0: all)", optarg);
				return CLI_USAGE;
			}
			break;
		case 'D': want_demo = true; break;
		case 'F': targs.file = optarg; break;
		case 'R': targs.from = optarg; break;
		case 'X':
			targs.speed = strtod(optarg, &end);
			if (*end || !(targs.speed >= 0.01 && targs.speed <= 10000)) {
				cli_err("--speed %s: times the recorded pace, 0.01 to 10000 (1, 10, 100 in the UI)", optarg);
				return CLI_USAGE;
			}
			break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return CLI_OK;
		default: usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc) {
		cli_err("unexpected argument '%s' (see --help)", argv[optind]);
		return CLI_USAGE;
	}
	if (batch && json) {
		cli_err("-b and -j exclude each other");
		return CLI_USAGE;
	}
	if (!batch && !json && !isatty(STDOUT_FILENO))
		batch = true; /* not a terminal: text */
	if (want_demo && targs.file) {
		cli_err("--demo and --file exclude each other");
		return CLI_USAGE;
	}
	targs.delay = delay;
	targs.iterations = iterations;
	targs.top = top;
	targs.batch = batch;
	targs.json = json;
	targs.filter = &filter;
	if (want_demo && demo_unusable(demo_why, sizeof(demo_why))) {
		if (demo_file(demo_path, sizeof(demo_path), demo_why))
			return CLI_FAIL;
		targs.file = demo_path;
		targs.demo_reason = demo_why;
	}
	if (targs.file)
		return top_file(&targs);
	if (targs.from || targs.speed > 0) {
		cli_err("--from and --speed play a recording: give it with --file REC.sht");
		return CLI_USAGE;
	}

	ret = cli_open_live(&vs, &opts, verbose, json || (!batch && !json));
	if (ret)
		return ret;
	ret = CLI_FAIL;
	if (names_init(&names, NULL, NULL)) {
		cli_err("out of memory");
		vcpustat_close(vs);
		return CLI_FAIL;
	}
	nr_progs = vcpustat_progs(vs, &progs);
	cli_catch_stop(true);
	if (want_demo && demo_start(&demo))
		goto out;
	if (!batch && !json && ui_open(&ui, delay)) {
		cli_err("cannot start the terminal UI (TERM=%s); use -b or -j", getenv("TERM") ?: "");
		goto out;
	}
	if (vcpustat_snapshot(vs, &prev)) {
		cli_err("cannot read the BPF maps");
		goto out;
	}
	next = prev.ts;
	while (!cli_stop && iterations != 0) {
		struct summary s;
		int err;

		next += (__u64)(delay * 1e9);
		/* wait for the next tick, reacting to keys meanwhile */
		while (!cli_stop) {
			__u64 now = mono_ns();
			int wait_ms;

			if (now >= next)
				break;
			wait_ms = (int)((next - now + 999999) / 1000000);
			if (ui) {
				enum ui_action a = ui_input(ui, wait_ms);

				if (a == UI_QUIT)
					cli_stop = 1;
				else if (a == UI_REDRAW && have_shown)
					ui_draw(ui, &shown, progs, nr_progs);
			} else {
				struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000 };

				nanosleep(&ts, NULL);
			}
		}
		if (cli_stop)
			break;
		if (vcpustat_snapshot(vs, &cur)) {
			cli_err("cannot read the BPF maps");
			break;
		}
		names_refresh(&names);
		err = summary_build(&s, &prev, &cur, &names, &filter);
		if (err) {
			cli_err("cannot summarize: %s", strerror(-err));
			vcpustat_snapshot_free(&cur);
			break;
		}
		if (json) {
			json_t *doc = summary_json(&s, progs, nr_progs);

			cli_json_print(doc, CLI_JSON_LINE);
		} else if (batch) {
			summary_print(stdout, &s, progs, nr_progs, (unsigned int)top);
		}
		if (ui && !ui_paused(ui)) {
			summary_free(&shown);
			shown = s;
			have_shown = true;
			ui_draw(ui, &shown, progs, nr_progs);
		} else {
			summary_free(&s);
		}
		reap_exited(vs, &cur);
		vcpustat_prune(vs, NULL);
		vcpustat_snapshot_free(&prev);
		prev = cur;
		if (iterations > 0)
			iterations--;
	}
	vcpustat_snapshot_free(&prev);
	ret = CLI_OK;
out:
	ui_close(ui);
	summary_free(&shown);
	if (want_demo)
		demo_stop(&demo);
	names_free(&names);
	vcpustat_close(vs);
	return ret;
}
