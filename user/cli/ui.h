/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ui.h - the interactive (ncurses) live view: VMs with their vCPUs, sortable
 * columns, a VM filter, pause, help, and for the selected VM its exit
 * reasons and who took its CPU.
 */
#ifndef VCPUSTAT_UI_H
#define VCPUSTAT_UI_H

#include "model/summary.h"

struct ui;

enum ui_action {
	UI_NONE = 0, /* timeout, nothing to do */
	UI_QUIT,
	UI_REDRAW, /* a key changed the view: redraw the last summary */
	/* time travel (ui_set_playback): move through the recording */
	UI_BACK,      /* one window back */
	UI_FORWARD,   /* one window forward */
	UI_BACK_10,   /* ten windows back */
	UI_FORWARD_10,
	UI_FIRST,     /* the first window */
	UI_LAST,      /* the last window */
	UI_JUMP,      /* to the time typed after `t`: ui_jump_to() */
};

int ui_open(struct ui **out, double delay_s);
void ui_close(struct ui *ui);
/* Draw a summary (the UI keeps its own sort/filter/selection state). */
void ui_draw(struct ui *ui, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs);
/* Wait up to timeout_ms for a key and act on it. */
enum ui_action ui_input(struct ui *ui, int timeout_ms);
/* Paused: the caller keeps sampling but does not replace the shown summary. */
bool ui_paused(const struct ui *ui);

/*
 * Time travel over a recording: the keys that move (arrows, PgUp/PgDn,
 * Home/End, t, speeds 1/2/3) are on; label ("recording of HOST at TIME
 * (WHAT)") and the status line (position, speed, messages) are drawn on top.
 * p/space then pause and resume the playing.
 */
void ui_set_playback(struct ui *ui, const char *label);
void ui_set_status(struct ui *ui, const char *status);
/* Play speed, in times the recording's pace: 1, 10 or 100. */
unsigned int ui_speed(const struct ui *ui);
/* Start at the speed nearest to x. */
void ui_set_speed(struct ui *ui, double x);
void ui_set_paused(struct ui *ui, bool paused);
/* The time typed after `t` (for UI_JUMP). */
const char *ui_jump_to(const struct ui *ui);

#endif
