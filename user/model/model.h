/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model.h - the window model: what happened to every VM and vCPU over a
 * window, and where it comes from. A window is built from two snapshots of
 * the maps (live, or replayed from a capture or a trace: base/snapshot.c,
 * summary.c) or from the intervals of a recording (report.c, playback.c),
 * and rendered as text or JSON (summary_text.c, summary_json.c) or by the
 * ncurses UI (user/cli/ui.c); the snapshots it starts from and the names
 * people recognize are the base layer's (base/base.h). The live view,
 * reports, time travel and the exporters all show this one model.
 *
 * This header is the whole model; a file that needs one capability
 * includes its header: summary.h (the model, with health.h and filter.h),
 * recording.h (reading a recording), report.h, placement.h, pcpu.h,
 * playback.h, query_view.h, flow.h.
 */
#ifndef VCPUSTAT_MODEL_H
#define VCPUSTAT_MODEL_H

#include "model/summary.h"
#include "model/health.h"
#include "model/filter.h"
#include "model/recording.h"
#include "model/report.h"
#include "model/placement.h"
#include "model/pcpu.h"
#include "model/playback.h"
#include "model/query_view.h"
#include "model/flow.h"

#endif /* VCPUSTAT_MODEL_H */
