// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat import: host (and guest) traces -> a state history file
 * (import/import.h does the work: vcpustat_import; struct import_args and
 * the report in import/report.c).
 */
#include <errno.h>
#include <stdio.h>
#include <jansson.h>
#include "cli/cli.h"
#include "import/import.h"

int cmd_import(int argc, char **argv)
{
	enum { OPT_HOST = 256, OPT_LENIENT, OPT_GUEST, OPT_VM_NAME, OPT_VM, OPT_ISA, OPT_CPUS, OPT_META };
	static const char *const reserved[] = { "tool", "command", "level", "source", "host_trace", "host_format",
						"trace_start_ns", "guest_trace.", "sync.", NULL };
	struct import_args args, *ia = &args;
	bool quiet = false;
	const struct cli_option options[] = {
		{ "host", OPT_HOST, "FILE", "the host's trace ('-': standard input, ftrace text)", CLI_STRING,
		  &ia->o.host },
		{ "guest", OPT_GUEST, "VM=FILE", "the trace of VM's guest (repeatable); VM is its name\n"
						 "(pid<N>, a --vm-name, a --vm) or its VMM's pid.\n"
						 "VM@L1=FILE: a nested guest that the guest L1 (given\n"
						 "as --guest L1=...) runs; VM as L1's trace shows it" },
		{ "output", 'o', "FILE", "the .sht file to write (replaced whole; a device, a FIFO or\n"
					 "/dev/stdout gets it in place)", CLI_STRING, &ia->o.out },
		{ "vm-name", OPT_VM_NAME, "PID=NAME", "name the VM whose VMM process is PID (host traces do not\n"
						      "carry QEMU's -name); default pid<PID>" },
		{ "vm", OPT_VM, "NAME=TID[,TID..]", "these threads are VM NAME's vCPUs (traces without the\n"
						    "tgid column: otherwise `CPU n/KVM` threads are grouped\n"
						    "from each `CPU 0/KVM` on, and named vm-tid<TID>)" },
		{ "lenient", OPT_LENIENT, NULL, "skip malformed lines (counted and reported) instead of\n"
						"stopping at the first one", CLI_FLAG, &ia->o.trace.lenient },
		{ "isa", OPT_ISA, "vmx|svm", "for kvm_exit reasons printed as numbers (default: from\n"
					     "the reason names, else vmx)" },
		{ "cpus", OPT_CPUS, "N", "host CPUs: the host trace's are 0 to N-1, an event on\n"
					  "another is malformed (default 1024, up to 65536)" },
		{ "meta", OPT_META, "KEY=VALUE", "store this in the file's metadata (repeatable): host,\n"
						 "workload (what ran), recorded (when), ..." },
		{ "json", 'j', NULL, "the end-of-run report as JSON on stdout" },
		{ "quiet", 'q', NULL, "no report (warnings still go to stderr)", CLI_FLAG, &quiet },
		{ NULL },
	};
	const struct cli_command cmd = {
		.name = "import",
		.synopsis = "--host HOST_TRACE [--guest VM=GUEST_TRACE]... [--guest VM@L1=L2_TRACE]... -o FILE.sht "
			    "[OPTIONS]",
		.about = "Replay a host trace through the same state machine and handler the kernel runs\n"
			 "(every vCPU's states, exits, pCPUs; every thread on every CPU) into a state\n"
			 "history file, as `vcpustat record --level full` would have written it live.\n"
			 "With guest traces, synchronize each guest's clock to the host's (the\n"
			 "vcpustat_sync markers and hypercalls) and add what each guest thread really\n"
			 "experienced: running, or virt_preempted (its vCPU was not running guest code).\n"
			 "\n"
			 "Traces: ftrace text (/sys/kernel/tracing/trace, trace_pipe, `trace-cmd report`),\n"
			 "trace-cmd's binary trace.dat, or an LTTng kernel trace (CTF: its directory).\n"
			 "docs/import.md lists the events.\n",
		.options = options,
		.notes = "Exit status: 0 written, 1 an input or output error (a malformed line names its\n"
			 "file and line), 2 bad options.\n",
	};
	struct vcpustat_error err = { 0 };
	struct import_result res;
	bool json = false;
	struct cli_args a;
	int c, ret = CLI_USAGE;

	import_args_init(ia, argc, argv);
	cli_args_init(&a, &cmd, argc, argv);
	while ((c = cli_next(&a)) > 0) {
		int e = 0;

		switch (c) {
		case 'j': json = cli_json = true; break;
		case OPT_GUEST: e = import_args_guest(ia, a.arg, &err); break;
		case OPT_VM_NAME: e = import_args_vm_name(ia, a.arg, &err); break;
		case OPT_VM: e = import_args_vm(ia, a.arg, &err); break;
		case OPT_ISA: e = import_args_isa(ia, a.arg, &err); break;
		case OPT_CPUS: e = import_args_cpus(ia, a.arg, &err); break;
		case OPT_META:
			if (ia->o.nmeta >= IMPORT_MAX_META) {
				cli_err("--meta: at most %d", IMPORT_MAX_META);
				goto out;
			}
			if (cli_parse_meta(a.arg, reserved, &ia->meta[ia->o.nmeta].key, &ia->meta[ia->o.nmeta].value))
				goto out;
			ia->o.nmeta++;
			break;
		}
		if (e) {
			cli_err("%s", err.msg);
			ret = e == -ENOMEM ? CLI_FAIL : CLI_USAGE;
			goto out;
		}
	}
	if (c < 0) {
		ret = cli_args_exit(c);
		goto out;
	}
	if (a.pos < argc) {
		cli_err("import: unexpected argument '%s' (see `%s import --help`)", argv[a.pos], cli_prog);
		goto out;
	}
	if (!ia->o.host || !ia->o.out) {
		cli_err("import: --host TRACE and -o FILE.sht are needed (see `%s import --help`)", cli_prog);
		goto out;
	}
	if (import_args_refuse_input(ia, &err)) { /* before anything is opened for writing */
		cli_err("import: -o %s", err.msg);
		goto out;
	}
	ret = vcpustat_import(&ia->o, &res, &err) ? CLI_FAIL : CLI_OK;
	if (ret != CLI_OK) {
		cli_err("%s", err.msg);
	} else {
		import_warnings(&ia->o, &res, cli_warn);
		if (json)
			cli_json_print(import_result_json(&ia->o, &res), CLI_JSON_DOC);
		else if (!quiet)
			import_report_text(stderr, cli_prog, &ia->o, &res);
	}
	import_result_free(&res);
out:
	import_args_free(ia);
	return ret;
}
