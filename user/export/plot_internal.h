/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* plot_internal.h - what plot.c's charts and plot_gantt.c's timeline share (not API). */
#ifndef VCPUSTAT_PLOT_INTERNAL_H
#define VCPUSTAT_PLOT_INTERNAL_H

#include <stdio.h>

/* The fill of a vCPU state (enum vcpu_fsm_state), the same in every chart. */
const char *plot_state_color(unsigned int state);
/* A <text> element, s escaped. */
void plot_text(FILE *f, double x, double y, const char *anchor, const char *style, const char *s);
/* A "nice" tick step (1, 2 or 5 x 10^k) giving about `want` ticks over range. */
double plot_nice_step(double range, int want);
/* A legend entry: a 12 px swatch and its label, at (x, y) as a text baseline. */
void plot_legend_item(FILE *f, double x, double y, const char *color, const char *label);

#endif
