/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ui.h - the interactive (ncurses) live view: VMs with their vCPUs, sortable
 * columns, a VM filter, pause, help, and for the selected VM its exit
 * reasons and who took its CPU.
 */
#ifndef VCPUSTAT_UI_H
#define VCPUSTAT_UI_H

#include "summary.h"

struct ui;

enum ui_action {
	UI_NONE = 0, /* timeout, nothing to do */
	UI_QUIT,
	UI_REDRAW, /* a key changed the view: redraw the last summary */
};

int ui_open(struct ui **out, double delay_s);
void ui_close(struct ui *ui);
/* Draw a summary (the UI keeps its own sort/filter/selection state). */
void ui_draw(struct ui *ui, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs);
/* Wait up to timeout_ms for a key and act on it. */
enum ui_action ui_input(struct ui *ui, int timeout_ms);
/* Paused: the caller keeps sampling but does not replace the shown summary. */
bool ui_paused(const struct ui *ui);
/* The VM filter typed by the user ("" = none): a name or a pid. */
const char *ui_filter(const struct ui *ui);

#endif
