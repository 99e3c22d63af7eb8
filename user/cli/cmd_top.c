// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat [top]: the live view of every VM and vCPU, refreshed every -d SEC:
 * interactive (ncurses), batch text (-b) or one JSON document per refresh (-j);
 * of this host (top_live.c) or of a recording (top_file.c).
 */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include "cli/cli.h"

static const char synopsis[] =
	"[-d SEC] [-n N] [-b | -j] [--vm NAME|PID]... [--address-spaces] [--demo] [-v]\n"
	"       vcpustat [top] --file REC.sht [--from T] [--speed X] [-d SEC] [-n N] [-b | -j] [--vm ...]";

static const char about[] =
	"Every VM and vCPU of this host, refreshed every SEC seconds: the share of the\n"
	"interval each vCPU spent in guest code, in the hypervisor (host), preempted,\n"
	"waiting for a CPU, idle (halted) or blocked; preemptions, wakeups and\n"
	"migrations per second; the top exit reasons with rate and p50/p99 handling\n"
	"latency; and who ran while the VM's vCPUs waited for their CPU.\n";

static const char notes[] =
	"Interactive keys: q quit, p pause, s/S sort column, r reverse, f filter, arrows\n"
	"select a VM, h help; playing a recording: left/right step, PgUp/PgDn 10 steps,\n"
	"Home/End, t jump to a time, 1/2/3 play at 1x/10x/100x. The live view needs root\n"
	"(CAP_BPF + CAP_PERFMON) and kernel BTF; --file needs neither.\n";

int cmd_top(int argc, char **argv)
{
	enum { OPT_VM = 256, OPT_TOP, OPT_DEMO, OPT_FILE, OPT_FROM, OPT_SPEED, OPT_AS };
	struct top_args t = { .delay = 1, .iterations = -1, .top = 5 };
	struct summary_filter filter = { 0 };
	bool want_demo = false, verbose = false;
	char demo_path[PATH_MAX], demo_why[512];
	const char *vm_filter[64];
	const struct cli_option options[] = {
		{ "delay", 'd', "SEC", "refresh interval (default 1; decimals allowed)", CLI_SECONDS, &t.delay,
		  10000000, 86400000000000 },
		{ "iterations", 'n', "N", "refresh N times, then exit (-n 1: one-shot)" },
		{ "batch", 'b', NULL, "plain text, for logs and pipes (no terminal UI)", CLI_FLAG, &t.batch },
		{ "json", 'j', NULL, "one JSON document per refresh, one per line (docs/json.md)", CLI_FLAG, &t.json },
		{ "vm", OPT_VM, "NAME|PID", "show only this VM (repeatable); the name is the VMM's -name" },
		{ "top", OPT_TOP, "N", "rows per exit/culprit table in batch mode (default 5, 0: all)" },
		{ "demo", OPT_DEMO, NULL, "start a demo: two small VMs (tools/microvm) and a CPU hog\n"
					  "sharing CPU 0; stopped when vcpustat exits. Without a usable\n"
					  "/dev/kvm (or BPF): play the bundled recording of that demo", CLI_FLAG,
		  &want_demo },
		{ "address-spaces", OPT_AS, NULL, "also the guest's address spaces: each VM's guest time and exits\n"
						  "by the guest's CR3 at the exit (a second program on kvm_exit; live)",
		  CLI_FLAG, &t.address_spaces },
		{ "verbose", 'v', NULL, "libbpf's log on stderr", CLI_FLAG, &verbose },
		{ "help", 'h', NULL, "this help" },
		{ "file", OPT_FILE, "REC.sht", "time travel over a recording (`vcpustat record`, `import`,\n"
					       "`replay`): the same views, one window of SEC seconds after another",
		  CLI_STRING, &t.file },
		{ "from", OPT_FROM, "T", "start there (default: the start of the file). T: ns since\n"
					 "the start (123456789), seconds (1.5s, 2.25), or wall-clock\n"
					 "time (2026-11-22T14:03:07.123, 14:03:07), as `report --from`",
		  CLI_STRING, &t.from },
		{ "speed", OPT_SPEED, "X", "play at X times the recorded pace. Default: the terminal UI\n"
					   "plays at 1x; -b and -j print every window (or -n of them) at\n"
					   "once, as `atop -r` does: without -n that is the file's length\n"
					   "/ SEC windows (an hour at -d 0.01: 360000 windows, gigabytes)" },
		CLI_FILTER_OPTIONS, /* --file only (docs/vcpustat.md, "Filters") */
		{ NULL },
	};
	const struct cli_command cmd = { "top", synopsis, about, options, notes };
	struct cli_args a;
	char *end;
	int c;

	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		if (c == OPT_VM && cli_add_vm(&filter, vm_filter, sizeof(vm_filter) / sizeof(vm_filter[0]), a.arg))
			return CLI_USAGE;
		if (c == 'n' && (t.iterations = strtol(a.arg, &end, 10), *end || t.iterations < 1)) {
			cli_err("-n %s: the number of refreshes must be a positive integer", a.arg);
			return CLI_USAGE;
		}
		if (c == OPT_TOP && (t.top = strtol(a.arg, &end, 10), *end || t.top < 0)) {
			cli_err("--top %s: a number of rows (0: all)", a.arg);
			return CLI_USAGE;
		}
		if (cli_filter_option(&a, c, NULL, &filter) == CLI_USAGE)
			return CLI_USAGE;
		if (c == OPT_SPEED && (t.speed = strtod(a.arg, &end), *end || !(t.speed >= 0.01 && t.speed <= 10000))) {
			cli_err("--speed %s: times the recorded pace, 0.01 to 10000 (1, 10, 100 in the UI)", a.arg);
			return CLI_USAGE;
		}
	}
	if (c < 0 || cli_no_more_args(&a))
		return c < 0 ? cli_args_exit(c) : CLI_USAGE;
	if (t.json)
		cli_json = true;
	if (t.batch && t.json) {
		cli_err("-b and -j exclude each other");
		return CLI_USAGE;
	}
	if (!t.batch && !t.json && !isatty(STDOUT_FILENO))
		t.batch = true; /* not a terminal: text */
	if (want_demo && t.file) {
		cli_err("--demo and --file exclude each other");
		return CLI_USAGE;
	}
	t.filter = &filter;
	if (want_demo && demo_unusable(demo_why, sizeof(demo_why))) {
		if (demo_file(demo_path, sizeof(demo_path), demo_why))
			return CLI_FAIL;
		t.file = demo_path;
		t.demo_reason = demo_why;
	}
	if (t.file && t.address_spaces) {
		cli_err("--address-spaces: a recording has them if `vcpustat record --address-spaces` made it");
		return CLI_USAGE;
	}
	if (t.file)
		return top_file(&t);
	if (t.from || t.speed > 0) {
		cli_err("--from and --speed play a recording: give it with --file REC.sht");
		return CLI_USAGE;
	}
	if (summary_filter_narrows(&filter)) {
		cli_err("--vcpu, --tid and --pcpu filter a recording: give it with --file REC.sht");
		return CLI_USAGE;
	}
	return top_live(&t, want_demo, verbose);
}
