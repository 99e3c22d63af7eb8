// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* vcpustat top: the live view (first cut: one batch table per interval). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "loader.h"

static const char *state_names[VCPU_NR_STATES] = { "unknown", "guest", "host", "preempted", "wait", "idle", "blocked" };

int cmd_top(int argc, char **argv)
{
	struct vcpustat_snapshot snap;
	struct vcpustat *vs;
	char msg[256];
	int err, n = 1, c;
	double delay = 1.0;

	while ((c = getopt(argc, argv, "d:n:h")) != -1) {
		switch (c) {
		case 'd': delay = atof(optarg); break;
		case 'n': n = atoi(optarg); break;
		default:
			fprintf(c == 'h' ? stdout : stderr, "usage: vcpustat [-d SEC] [-n N]\n");
			return c == 'h' ? CLI_OK : CLI_USAGE;
		}
	}
	if (vcpustat_check_privileges(msg, sizeof(msg))) {
		cli_err("%s", msg);
		return CLI_NOPERM;
	}
	err = vcpustat_open(&vs, NULL);
	if (err) {
		cli_err("cannot load the BPF programs: %s", strerror(-err));
		return CLI_FAIL;
	}
	vcpustat_attach(vs);
	vcpustat_seed(vs, NULL);
	while (n-- > 0) {
		usleep((useconds_t)(delay * 1e6));
		if (vcpustat_snapshot(vs, &snap))
			break;
		for (size_t i = 0; i < snap.nr_vcpus; i++) {
			struct vcpustat_vcpu *v = &snap.vcpus[i];

			printf("%u %u %u %s\n", v->tgid, v->index, v->tid, state_names[v->fsm.state % VCPU_NR_STATES]);
		}
		vcpustat_snapshot_free(&snap);
	}
	vcpustat_close(vs);
	return CLI_OK;
}
