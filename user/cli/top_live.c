// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * top_live.c - `vcpustat top` on this host: one live window (live/live.h)
 * every -d seconds, shown by the terminal UI (ui.c), as text (-b) or as one
 * JSON document per window (-j).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "cli/ui.h"
#include "util/jsonw.h"

struct top_live {
	const struct top_args *a;
	struct ui *ui;
	const struct vcpustat_prog *progs;
	size_t nr_progs;
	struct summary shown; /* what the UI shows (kept while paused) */
	bool have_shown;
};

/* Wait for deadline, answering keys meanwhile; false when asked to stop. */
static bool wait_until(struct top_live *t, __u64 deadline)
{
	while (!cli_stop) {
		__u64 now = vcpustat_now_ns();
		int wait_ms;

		if (now >= deadline)
			return true;
		wait_ms = (int)((deadline - now + 999999) / 1000000);
		if (t->ui) {
			enum ui_action a = ui_input(t->ui, wait_ms);

			if (a == UI_QUIT)
				cli_stop = 1;
			else if (a == UI_REDRAW && t->have_shown)
				ui_draw(t->ui, &t->shown, t->progs, t->nr_progs);
		} else {
			struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	return false;
}

/* One window: printed (-b, -j) or shown (the UI, unless paused). */
static void show(struct top_live *t, struct summary *s)
{
	if (t->a->json && cli_pretty) {
		cli_json_print(summary_json(s, t->progs, t->nr_progs), CLI_JSON_LINE);
	} else if (t->a->json) { /* written as the window is walked: no tree (bench/RESULTS.md, "Refresh at scale") */
		static struct jw w;

		jw_reset(&w);
		summary_json_write(&w, s, t->progs, t->nr_progs);
		cli_json_print_text(&w);
	} else if (t->a->batch) {
		summary_print(stdout, s, t->progs, t->nr_progs, (unsigned int)t->a->top);
	}
	if (t->ui && !ui_paused(t->ui)) {
		summary_free(&t->shown);
		t->shown = *s;
		t->have_shown = true;
		ui_draw(t->ui, &t->shown, t->progs, t->nr_progs);
	} else {
		summary_free(s);
	}
}

static int run(struct top_live *t, struct vcpustat *vs)
{
	struct live_window w;
	long iterations = t->a->iterations;
	int e = 0, ret = CLI_OK;
	__u64 next;

	if (live_window_init(&w, vs, t->a->filter)) {
		cli_err("out of memory");
		return CLI_FAIL;
	}
	if (live_window_next(&w, NULL)) {
		cli_err("cannot read the BPF maps");
		live_window_free(&w);
		return CLI_FAIL;
	}
	next = w.prev.ts;
	while (iterations != 0) {
		struct summary s;

		next += (__u64)(t->a->delay * 1e9);
		if (!wait_until(t, next))
			break;
		e = live_window_next(&w, &s);
		if (e) {
			cli_err(e == -ENOMEM ? "cannot summarize: %s" : "cannot read the BPF maps: %s", strerror(-e));
			ret = CLI_FAIL;
			break;
		}
		show(t, &s);
		if (iterations > 0)
			iterations--;
	}
	live_window_free(&w);
	return ret;
}

int top_live(const struct top_args *a, bool want_demo, bool verbose)
{
	struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE, .address_spaces = a->address_spaces };
	struct top_live t = { .a = a };
	struct demo demo = { 0 };
	struct vcpustat *vs;
	int ret;

	ret = cli_open_live(&vs, &opts, verbose, a->json || (!a->batch && !a->json));
	if (ret)
		return ret;
	ret = CLI_FAIL;
	t.nr_progs = vcpustat_progs(vs, &t.progs);
	cli_catch_stop(true);
	if (want_demo && demo_start(&demo))
		goto out;
	if (!a->batch && !a->json && ui_open(&t.ui, a->delay)) {
		cli_err("cannot start the terminal UI (TERM=%s); use -b or -j", getenv("TERM") ?: "");
		goto out;
	}
	ret = run(&t, vs);
out:
	ui_close(t.ui);
	summary_free(&t.shown);
	if (want_demo)
		demo_stop(&demo);
	vcpustat_close(vs);
	return ret;
}
