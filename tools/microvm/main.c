// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* microvm: parse the options, then be the supervisor or one VM process. */
#include <stdio.h>
#include "microvm.h"

int main(int argc, char **argv)
{
	struct microvm_opts o;
	char err[512];
	int r;

	r = microvm_parse_opts(argc, argv, &o, err, sizeof(err));
	if (r > 0)
		return MICROVM_EXIT_OK;
	if (r < 0) {
		fprintf(stderr, "microvm: %s\nTry 'microvm --help'.\n", err);
		return MICROVM_EXIT_USAGE;
	}
	if (o.vm_index >= 0)
		return microvm_vm_main(&o);
	return microvm_supervise(&o, argv[0]);
}
