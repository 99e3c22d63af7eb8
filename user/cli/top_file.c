// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat top --file REC.sht: time travel. The live view (ncurses, -b, -j)
 * over a recording, one window of -d seconds after another, from --from on,
 * as `atop -r` plays its logs. Each window is the report's window model
 * (playback.c's struct playback, report_build): the same tables and JSON as the live view,
 * equal to `vcpustat report --from --to` over the same window.
 *
 * -b and -j print every window (or -n of them) as fast as they can be
 * printed, as `atop -r` does, unless --speed asks for a pace. The terminal UI
 * plays at 1x, 10x or 100x the recorded pace and steps, jumps and pauses on
 * keys; at the end it pauses, except the demo, which starts over.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "model/report.h"
#include "model/playback.h"
#include "util/util.h"
#include "cli/ui.h"

#define MIN_FRAME_NS 100000000ull /* the UI redraws at most 10 times a second while playing */

struct top_play {
	const struct top_args *a;
	struct playback pb;
	char label[512];
	char hint[300]; /* the status line's default message */
};

static __u64 mono_ns(void)
{
	return vcpustat_now_ns();
}

static void sleep_until(__u64 deadline)
{
	__u64 now = mono_ns();
	struct timespec ts;

	if (now >= deadline)
		return;
	ts.tv_sec = (time_t)((deadline - now) / 1000000000ull);
	ts.tv_nsec = (long)((deadline - now) % 1000000000ull);
	nanosleep(&ts, NULL);
}

static int build(struct top_play *p, struct summary *s, bool *culprits)
{
	struct vcpustat_error err = { 0 };

	if (playback_build(&p->pb, s, p->a->filter, culprits, &err)) {
		cli_err("%s", err.msg);
		return -1;
	}
	return 0;
}

static void print_json(struct top_play *p, const struct summary *s, bool culprits)
{
	json_t *doc = summary_json(s, NULL, 0), *src = playback_source_json(&p->pb);
	uint64_t t1, t2;

	playback_window(&p->pb, &t1, &t2);
	report_json_window(doc, p->pb.r, p->pb.path, t1, t2, culprits);
	if (p->a->demo_reason)
		json_object_set_new(src, "demo", json_string(p->a->demo_reason));
	json_object_set_new(doc, "source", src);
	cli_json_print(doc, CLI_JSON_LINE);
}

static void print_text(struct top_play *p, const struct summary *s, bool first)
{
	char a[32], b[32], e[32];
	uint64_t t1, t2;

	playback_window(&p->pb, &t1, &t2);
	printf("%s%s%s: window %s .. %s s of %s s\n", first ? "" : "\n", p->a->demo_reason ? "DEMO: " : "", p->label,
	       playback_seconds(t1, a, sizeof(a)), playback_seconds(t2, b, sizeof(b)),
	       playback_seconds(p->pb.end, e, sizeof(e)));
	summary_print(stdout, s, NULL, 0, (unsigned int)p->a->top);
}

/* -b / -j: every window from --from on (or -n of them), paced only with --speed. */
static int play_batch(struct top_play *p)
{
	const struct top_args *a = p->a;
	__u64 period = a->speed > 0 ? (__u64)((double)p->pb.step / a->speed) : 0, next = mono_ns();
	long left = a->iterations;
	bool culprits, first = true;

	if (!a->json && a->demo_reason)
		printf("DEMO: %s: playing the bundled recording %s\n", a->demo_reason, p->pb.path);
	while (!cli_stop) {
		struct summary s;

		if (build(p, &s, &culprits))
			return CLI_FAIL;
		if (a->json)
			print_json(p, &s, culprits);
		else
			print_text(p, &s, first);
		if (first && !a->json && !culprits)
			printf("\n(who took the CPU: not in this recording; `vcpustat record` now keeps it at any level)\n");
		fflush(stdout);
		summary_free(&s);
		first = false;
		if ((left > 0 && --left == 0) || playback_at_end(&p->pb))
			break;
		if (period) {
			next += period;
			sleep_until(next);
		}
		playback_step(&p->pb, 1);
	}
	return CLI_OK;
}

/* The UI's status line: where we are, how it plays, and a message (may be ""). */
static void ui_status(struct ui *ui, struct top_play *p, const char *msg)
{
	char a[32], b[32], e[32], wall[48] = "", w1[64], w2[64], line[400];
	uint64_t t1, t2;

	playback_window(&p->pb, &t1, &t2);
	if (sht_has_wall_clock(p->pb.r)) {
		sht_format_time(p->pb.r, t1, false, w1, sizeof(w1));
		sht_format_time(p->pb.r, t2, false, w2, sizeof(w2));
		snprintf(wall, sizeof(wall), " (%.12s .. %.12s)", w1 + 11, w2 + 11);
	}
	snprintf(line, sizeof(line), "window %s .. %s s of %s s%s  [%s %ux]  %s", playback_seconds(t1, a, sizeof(a)),
		 playback_seconds(t2, b, sizeof(b)), playback_seconds(p->pb.end, e, sizeof(e)), wall,
		 ui_paused(ui) ? "paused" : "playing", ui_speed(ui),
		 msg[0] ? msg : p->hint);
	ui_set_status(ui, line);
}

/* A key that moves: step or jump; msg gets an error to show. */
static void ui_move(struct ui *ui, struct top_play *p, enum ui_action act, char *msg, size_t len)
{
	struct vcpustat_error err = { 0 };

	switch (act) {
	case UI_BACK: playback_step(&p->pb, -1); break;
	case UI_FORWARD: playback_step(&p->pb, 1); break;
	case UI_BACK_10: playback_step(&p->pb, -10); break;
	case UI_FORWARD_10: playback_step(&p->pb, 10); break;
	case UI_FIRST: p->pb.t = p->pb.start; break;
	case UI_LAST: playback_step(&p->pb, (long)((p->pb.end - p->pb.t) / p->pb.step) + 1); break;
	case UI_JUMP:
		if (playback_seek_str(&p->pb, ui_jump_to(ui), &err))
			snprintf(msg, len, "t %.40s: %.200s", ui_jump_to(ui), err.msg);
		break;
	default: break;
	}
}

/* Playing: the windows the clock has reached since anchor; at the end, pause (or the demo starts over). */
static void ui_advance(struct ui *ui, struct top_play *p, __u64 period, __u64 *anchor, char *msg, size_t len)
{
	__u64 now = mono_ns(), k = (now - *anchor) / period;

	if (!k)
		return;
	*anchor += k * period;
	if (!playback_at_end(&p->pb)) {
		playback_step(&p->pb, (long)(k < 1000000 ? k : 1000000));
	} else if (p->a->demo_reason) {
		p->pb.t = p->pb.start;
		snprintf(msg, len, "the demo starts over");
	} else {
		ui_set_paused(ui, true);
		snprintf(msg, len, "end of the recording: paused (left, t or Home to go back)");
	}
}

static int play_ui(struct top_play *p)
{
	struct summary shown = { 0 };
	struct ui *ui = NULL;
	bool culprits, dirty = true, have = false;
	__u64 anchor = 0, build_ns = 0;
	char msg[300] = "", label[600];
	int ret = CLI_FAIL;

	if (ui_open(&ui, p->a->delay)) {
		cli_err("cannot start the terminal UI (TERM=%s); use -b or -j", getenv("TERM") ?: "");
		return CLI_FAIL;
	}
	snprintf(label, sizeof(label), "%s%s%s", p->a->demo_reason ? "DEMO: " : "", p->label,
		 sht_get_info(p->pb.r)->recovered ? "  [unfinished: up to its last sealed node]" : "");
	ui_set_playback(ui, label);
	if (p->a->speed > 0)
		ui_set_speed(ui, p->a->speed);
	while (!cli_stop) {
		__u64 period = p->pb.step / ui_speed(ui), gap, now;
		enum ui_action act;
		int wait_ms = 1000;

		if (dirty) {
			struct summary s;

			now = mono_ns();
			if (build(p, &s, &culprits))
				goto out;
			build_ns = mono_ns() - now;
			if (have)
				summary_free(&shown);
			shown = s;
			have = true;
			ui_status(ui, p, msg);
			ui_draw(ui, &shown, NULL, 0);
			msg[0] = '\0';
			dirty = false;
		}
		if (!ui_paused(ui)) {
			if (!anchor)
				anchor = mono_ns();
			gap = period > MIN_FRAME_NS ? period : MIN_FRAME_NS;
			gap = gap > 2 * build_ns ? gap : 2 * build_ns;
			now = mono_ns();
			wait_ms = anchor + gap > now ? (int)((anchor + gap - now + 999999) / 1000000) : 0;
		}
		act = ui_input(ui, wait_ms);
		if (act == UI_QUIT)
			break;
		if (act == UI_REDRAW) {
			anchor = 0; /* pause, play, speed: the clock starts again from this window */
			ui_status(ui, p, msg);
			ui_draw(ui, &shown, NULL, 0);
		} else if (act != UI_NONE) {
			ui_move(ui, p, act, msg, sizeof(msg));
			anchor = 0;
			dirty = true;
		} else if (!ui_paused(ui) && anchor) {
			uint64_t before = p->pb.t;

			ui_advance(ui, p, period, &anchor, msg, sizeof(msg));
			dirty = p->pb.t != before;
			if (!dirty && msg[0]) {
				ui_status(ui, p, msg);
				ui_draw(ui, &shown, NULL, 0);
				msg[0] = '\0';
			}
		}
	}
	ret = CLI_OK;
out:
	ui_close(ui);
	if (have)
		summary_free(&shown);
	return ret;
}

int top_file(const struct top_args *a)
{
	struct vcpustat_error err = { 0 };
	struct top_play p = { .a = a };
	const struct sht_info *info;
	int ret;

	if (playback_open(&p.pb, a->file, (uint64_t)(a->delay * 1e9), &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	ret = cli_filter_check("top", a->file, p.pb.r, a->filter);
	if (ret) {
		playback_close(&p.pb);
		return ret;
	}
	if (a->from && playback_seek_str(&p.pb, a->from, &err)) {
		cli_err("--from %s: %s", a->from, err.msg);
		playback_close(&p.pb);
		return CLI_USAGE;
	}
	info = sht_get_info(p.pb.r);
	if (info->recovered) {
		char e[32];

		cli_warn("%s: unfinished recording: it plays up to its last sealed node (%s s)", a->file,
			 playback_seconds(p.pb.end, e, sizeof(e)));
	}
	playback_label(&p.pb, p.label, sizeof(p.label));
	if (a->demo_reason)
		snprintf(p.hint, sizeof(p.hint), "%.200s: the bundled recording plays (h: keys)", a->demo_reason);
	else
		snprintf(p.hint, sizeof(p.hint), "<- -> step  t jump  p pause  1/2/3 speed  h help");
	cli_catch_stop(true);
	ret = a->batch || a->json ? play_batch(&p) : play_ui(&p);
	playback_close(&p.pb);
	return ret;
}
