// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat probe: what this host gives vcpustat -- the kernel's features,
 * the object and mode the loader chooses, each program's form, and whether
 * kvm_exit fires for the VMs that KVM runs (vcpustat_probe(), live/probe.c;
 * docs/kernels.md). What to paste into a bug report.
 */
#include <stdio.h>
#include "cli/cli.h"
#include "util/jsonw.h"

int cmd_probe(int argc, char **argv)
{
	double seconds = 2;
	bool json = false;
	const struct cli_option options[] = {
		{ "duration", 'd', "D", "watch the VMs for D to see whether kvm_exit fires (default 2s)", CLI_SECONDS,
		  &seconds, 100000000, 3600000000000ll },
		{ "json", 'j', NULL, "one JSON document (docs/kernels.md)", CLI_FLAG, &json },
		{ "help", 'h', NULL, "this help" },
		{ NULL },
	};
	const struct cli_command cmd = {
		.name = "probe",
		.synopsis = "[-d D] [-j]",
		.about = "Say what this host gives vcpustat: the kernel and its BTF, /dev/kvm, the BPF\n"
			 "features the loader probes, the object and mode it chooses, each program's\n"
			 "form and whether it loaded and attached (and if not, what is lost), and,\n"
			 "watching the VMs that KVM runs for a while, whether kvm_exit fires for them.\n",
		.notes = "Exit status: 0 when the programs load and, if KVM runs VMs, vcpustat sees them\n"
			 "and their exits; 1 when it would be blind to them or cannot load; 77 without\n"
			 "BPF privileges (the kernel's part is still printed).\n",
		.options = options,
	};
	struct probe_report r;
	struct cli_args a;
	int c, ret;

	c = cli_parse(&a, &cmd, argc, argv);
	if (c < 0)
		return cli_args_exit(c);
	if (cli_no_more_args(&a))
		return CLI_USAGE;
	vcpustat_set_log(NULL, VCPUSTAT_LOG_WARN);
	vcpustat_probe(&r, seconds);
	if (json) {
		struct jw w = { 0 };

		probe_json_write(&w, &r);
		cli_json_print_text(&w);
		jw_free(&w);
	} else {
		probe_print(stdout, &r);
	}
	ret = !r.privileged ? CLI_NOPERM : !r.opened || r.attach_err || r.health.problems ? CLI_FAIL : CLI_OK;
	probe_report_free(&r);
	return ret;
}
