// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* snapshot.c - what every snapshot owner needs, live or replayed. */
#include <stdlib.h>
#include <string.h>
#include "base/base.h"

void vcpustat_snapshot_free(struct vcpustat_snapshot *snap)
{
	free(snap->vcpus);
	free(snap->dead);
	free(snap->vms);
	free(snap->hists);
	free(snap->culprits);
	free(snap->details);
	free(snap->vmm);
	free(snap->places);
	memset(snap, 0, sizeof(*snap));
}
