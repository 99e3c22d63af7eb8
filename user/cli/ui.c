// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ui.c - the ncurses live view. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/ui.h"

enum sort_col { SORT_NAME = 0, SORT_GUEST, SORT_HOST, SORT_POLL, SORT_PREEMPTED, SORT_WAIT, SORT_IDLE, SORT_BLOCKED,
		SORT_PREEMPT_RATE, SORT_WAKE_RATE, NR_SORT };

static const char *const sort_names[NR_SORT] = { "name", "guest", "host",    "poll",      "preempted",
						 "wait", "idle",  "blocked", "preempt/s", "wake/s" };

struct ui {
	double delay_s;
	int sort;
	bool reverse;
	bool paused;
	bool help;
	int selected; /* index of the selected VM in display order */
	char filter[64];
	bool playback;	     /* time travel over a recording */
	unsigned int speed;  /* 1, 10, 100 */
	char label[256];     /* what the recording is */
	char status[400];    /* where we are in it */
	char jump[64];	     /* typed after `t` */
	const struct summary *last; /* what was drawn last (owned by the caller) */
	const struct vcpustat_prog *progs;
	size_t nr_progs;
};

int ui_open(struct ui **out, double delay_s)
{
	struct ui *ui = calloc(1, sizeof(*ui));

	if (!ui)
		return -1;
	if (!initscr()) {
		free(ui);
		return -1;
	}
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_BLACK, COLOR_CYAN);	/* header */
		init_pair(2, COLOR_RED, -1);		/* preempted, lost */
		init_pair(3, COLOR_YELLOW, -1);		/* wait */
		init_pair(4, COLOR_GREEN, -1);		/* guest */
		init_pair(5, COLOR_BLACK, COLOR_WHITE); /* selection */
	}
	ui->delay_s = delay_s;
	ui->sort = SORT_PREEMPTED;
	ui->speed = 1;
	*out = ui;
	return 0;
}

void ui_close(struct ui *ui)
{
	if (!ui)
		return;
	endwin();
	free(ui);
}

bool ui_paused(const struct ui *ui)
{
	return ui->paused;
}

void ui_set_playback(struct ui *ui, const char *label)
{
	ui->playback = true;
	snprintf(ui->label, sizeof(ui->label), "%s", label);
}

void ui_set_status(struct ui *ui, const char *status)
{
	snprintf(ui->status, sizeof(ui->status), "%s", status);
}

unsigned int ui_speed(const struct ui *ui)
{
	return ui->speed;
}

void ui_set_speed(struct ui *ui, double x)
{
	ui->speed = x < 3.16 ? 1 : x < 31.6 ? 10 : 100; /* nearest on a log scale */
}

void ui_set_paused(struct ui *ui, bool paused)
{
	ui->paused = paused;
}

const char *ui_jump_to(const struct ui *ui)
{
	return ui->jump;
}

static double vm_key(const struct summary *s, const struct vm_summary *vm, int col)
{
	switch (col) {
	case SORT_GUEST: return vm_share(s, vm, VCPU_GUEST);
	case SORT_HOST: return vm_share(s, vm, VCPU_HOST);
	case SORT_POLL: return vm_share(s, vm, VCPU_POLL);
	case SORT_PREEMPTED: return vm_share(s, vm, VCPU_PREEMPTED);
	case SORT_WAIT: return vm_share(s, vm, VCPU_WAIT);
	case SORT_IDLE: return vm_share(s, vm, VCPU_IDLE);
	case SORT_BLOCKED: return vm_share(s, vm, VCPU_BLOCKED);
	case SORT_PREEMPT_RATE: return s->seconds > 0 ? vm->preemptions / s->seconds : 0;
	case SORT_WAKE_RATE: return s->seconds > 0 ? vm->wakeups / s->seconds : 0;
	}
	return 0;
}

static const struct summary *sort_summary;
static int sort_col;
static bool sort_reverse;

static int cmp_vm(const void *a, const void *b)
{
	const struct vm_summary *x = *(const struct vm_summary *const *)a, *y = *(const struct vm_summary *const *)b;
	int c;

	if (sort_col == SORT_NAME) {
		c = strcmp(x->name, y->name);
	} else {
		double kx = vm_key(sort_summary, x, sort_col), ky = vm_key(sort_summary, y, sort_col);

		c = kx > ky ? -1 : kx < ky ? 1 : strcmp(x->name, y->name);
	}
	return sort_reverse ? -c : c;
}

static bool matches_filter(const struct ui *ui, const struct vm_summary *vm)
{
	char pid[16];

	if (!ui->filter[0])
		return true;
	snprintf(pid, sizeof(pid), "%u", vm->tgid);
	return strstr(vm->name, ui->filter) || !strcmp(pid, ui->filter);
}

static void pct(int y, int x, double share, int pair)
{
	if (pair && share >= 0.05 && has_colors())
		attron(COLOR_PAIR(pair));
	mvprintw(y, x, "%6.1f%%", 100 * share);
	if (pair && has_colors())
		attroff(COLOR_PAIR(pair));
}

static void draw_box(const char *const *lines, int n)
{
	int h = n + 2, w = 78, y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;

	if (y0 < 0)
		y0 = 0;
	if (x0 < 0)
		x0 = 0;
	for (int i = 0; i < h; i++)
		mvhline(y0 + i, x0, ' ', w);
	for (int i = 0; i < n; i++)
		mvprintw(y0 + 1 + i, x0 + 2, "%s", lines[i]);
}

static void draw_help_playback(void)
{
	static const char *const lines[] = {
		"vcpustat - keys (playing a recording)",
		"",
		"  left / right, ',' / '.'   one window back / forward",
		"  PgUp / PgDn               ten windows back / forward",
		"  Home / End (g / G)        the first / the last window",
		"  t                         jump to a time: 12.5s, 14:03:07, ns",
		"  p, space                  pause / play",
		"  1 / 2 / 3, + / -          play at 1x / 10x / 100x the recorded pace",
		"  s / S, r                  sort column, reverse",
		"  f                         filter VMs by name or pid (empty: all)",
		"  up / down                 select a VM: its exits, exit details, culprits",
		"  q                         quit;  h, ?: this help (any key closes it)",
	};

	draw_box(lines, (int)(sizeof(lines) / sizeof(lines[0])));
}

static void draw_help(void)
{
	static const char *lines[] = {
		"vcpustat - keys",
		"",
		"  q          quit",
		"  p, space   pause / resume (sampling goes on)",
		"  s / S      sort by the next / previous column",
		"  r          reverse the sort order",
		"  f          filter VMs by name or pid (empty: all)",
		"  up / down  select a VM: its exits, exit details, culprits and wake-ups below",
		"  h, ?       this help (any key closes it)",
		"",
		"States: guest = in guest code; host = in KVM or the VMM on a CPU;",
		"poll = on a CPU in KVM's halt polling: spinning for a wake-up;",
		"preempted = switched out while runnable; wait = woken, waiting for a CPU;",
		"idle = asleep after the guest halted; blocked = asleep for a host reason.",
	};
	draw_box(lines, (int)(sizeof(lines) / sizeof(lines[0])));
}

void ui_draw(struct ui *ui, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs)
{
	const struct vm_summary **order;
	size_t n = 0, nvcpus = 0;
	__u64 lost = 0;
	int y = 0, sel_y = -1;
	char ts[16];
	time_t now = time(NULL);

	ui->last = s;
	ui->progs = progs;
	ui->nr_progs = nr_progs;
	erase();
	order = calloc(s->nr_vms ? s->nr_vms : 1, sizeof(*order));
	if (!order)
		return;
	for (size_t i = 0; i < s->nr_vms; i++) {
		nvcpus += s->vms[i].nr_vcpus;
		if (matches_filter(ui, &s->vms[i]))
			order[n++] = &s->vms[i];
	}
	sort_summary = s;
	sort_col = ui->sort;
	sort_reverse = ui->reverse;
	qsort(order, n, sizeof(*order), cmp_vm);
	if (ui->selected >= (int)n)
		ui->selected = n ? (int)n - 1 : 0;
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		lost += s->lost[i];

	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	if (ui->playback) /* the status line has the window (and its wall-clock time) */
		snprintf(ts, sizeof(ts), "t=%.1fs", s->t1 / 1e9);
	if (has_colors())
		attron(COLOR_PAIR(1));
	mvhline(0, 0, ' ', COLS);
	mvprintw(0, 0, "vcpustat %s%s  %s %.1fs  VMs %zu  vCPUs %zu  sort %s%s%s%s  [h]elp [q]uit", ui->playback ? "REPLAY " : "",
		 ts, ui->playback ? "window" : "every", ui->delay_s, s->nr_vms, nvcpus, sort_names[ui->sort],
		 ui->reverse ? " (rev)" : "", ui->paused ? "  PAUSED" : "", ui->filter[0] ? "  filter on" : "");
	if (has_colors())
		attroff(COLOR_PAIR(1));
	y = 1;
	if (ui->playback) {
		attron(A_BOLD);
		mvprintw(y++, 0, "%.*s", COLS, ui->label);
		attroff(A_BOLD);
		mvprintw(y++, 0, "%.*s", COLS, ui->status);
	}
	if (lost) {
		attron(COLOR_PAIR(2) | A_BOLD);
		mvprintw(y++, 0, "LOST: %llu events could not be recorded (see -j for the kinds)", (unsigned long long)lost);
		attroff(COLOR_PAIR(2) | A_BOLD);
	}
	if (s->health.problems) {
		char msg[1024];

		summary_health_message(s, msg, sizeof(msg));
		attron(COLOR_PAIR(2) | A_BOLD);
		mvprintw(y++, 0, "BLIND: %.*s", COLS > 8 ? COLS - 8 : 0, msg);
		attroff(COLOR_PAIR(2) | A_BOLD);
	}
	for (size_t i = 0; i < nr_progs; i++)
		if (progs[i].status == VCPUSTAT_PROG_FAILED || progs[i].status == VCPUSTAT_PROG_MISSING)
			mvprintw(y++, 0, "not attached: %s: %s", progs[i].tracepoint, progs[i].message);
	if (ui->filter[0])
		mvprintw(y++, 0, "filter: %s", ui->filter);
	attron(A_BOLD);
	mvprintw(y++, 0, "%-22s %8s %-9s %4s %7s %7s %7s %7s %7s %7s %7s %9s %8s", "VM / vCPU", "TID", "STATE", "PCPU",
		 "GUEST", "HOST", "POLL", "PREEMPT", "WAIT", "IDLE", "BLOCKED", "PREEMPT/s", "WAKE/s");
	attroff(A_BOLD);
	if (!n)
		mvprintw(y++, 0, s->nr_vms ? "no VM matches the filter" :
			 ui->playback ? "no VM in this window of the recording" :
					"no VMs seen yet: vCPU threads appear at their first KVM event");
	for (size_t i = 0; i < n && y < LINES - 8; i++) {
		const struct vm_summary *vm = order[i];
		char label[96];

		if ((int)i == ui->selected) {
			sel_y = y;
			attron(A_REVERSE);
		}
		snprintf(label, sizeof(label), "%s (%u)%s", vm->name, vm->tgid, vm->exited ? " exited" : "");
		mvprintw(y, 0, "%-22.22s %8s %-9s %4s", label, "", "", "");
		pct(y, 46, vm_share(s, vm, VCPU_GUEST), 4);
		pct(y, 54, vm_share(s, vm, VCPU_HOST), 0);
		pct(y, 62, vm_share(s, vm, VCPU_POLL), 0);
		pct(y, 70, vm_share(s, vm, VCPU_PREEMPTED), 2);
		pct(y, 78, vm_share(s, vm, VCPU_WAIT), 3);
		pct(y, 86, vm_share(s, vm, VCPU_IDLE), 0);
		pct(y, 94, vm_share(s, vm, VCPU_BLOCKED), 0);
		mvprintw(y, 102, "%9.0f %8.0f", s->seconds > 0 ? vm->preemptions / s->seconds : 0,
			 s->seconds > 0 ? vm->wakeups / s->seconds : 0);
		if ((int)i == ui->selected)
			attroff(A_REVERSE);
		y++;
		for (size_t v = 0; v < vm->nr_vcpus && y < LINES - 8; v++, y++) {
			const struct vcpu_summary *c = &vm->vcpus[v];
			char pcpu[12];

			snprintf(pcpu, sizeof(pcpu), c->pcpu == VCPU_PCPU_NONE ? "-" : "%u", c->pcpu);
			mvprintw(y, 0, "  vCPU %-15u %8u %-9s %4s", c->index, c->tid,
				 c->gone ? "exited" : vcpu_state_name(c->state), pcpu);
			pct(y, 46, vcpu_share(s, c, VCPU_GUEST), 4);
			pct(y, 54, vcpu_share(s, c, VCPU_HOST), 0);
			pct(y, 62, vcpu_share(s, c, VCPU_POLL), 0);
			pct(y, 70, vcpu_share(s, c, VCPU_PREEMPTED), 2);
			pct(y, 78, vcpu_share(s, c, VCPU_WAIT), 3);
			pct(y, 86, vcpu_share(s, c, VCPU_IDLE), 0);
			pct(y, 94, vcpu_share(s, c, VCPU_BLOCKED), 0);
			mvprintw(y, 102, "%9.0f %8.0f", s->seconds > 0 ? c->preemptions / s->seconds : 0,
				 s->seconds > 0 ? c->wakeups / s->seconds : 0);
		}
	}
	/* details of the selected VM */
	if (n && sel_y >= 0) {
		const struct vm_summary *vm = order[ui->selected];
		int dy = y + 1, col2 = COLS / 2;

		/*
		 * on the right: the culprits, why its sleeping vCPUs woke, its VMM's
		 * other threads, its placement (vm_panel_lines)
		 */
		size_t max = LINES > dy + 1 ? (size_t)(LINES - dy - 1) : 0;
		struct panel_line *side = calloc(max ? max : 1, sizeof(*side));
		size_t right = side ? vm_panel_lines(s, vm, side, max) : 0;

		attron(A_BOLD);
		mvprintw(dy, 0, "%-16.16s %9s %9s %9s", "EXIT REASON", "RATE/s", "P50", "P99");
		mvprintw(dy, col2, "WHO TOOK %.20s's CPU", vm->name);
		attroff(A_BOLD);

		for (int r = 0; dy + 1 + r < LINES; r++) {
			const struct latency_summary *l = NULL;
			size_t nl = vm->nr_exits + vm->nr_uexits, d = (size_t)r - nl - 1;
			bool left = (size_t)r < nl || (vm->nr_details && d + 1 <= vm->nr_details);
			char a[16], b[16];

			if ((size_t)r < vm->nr_exits)
				l = &vm->exits[r];
			else if ((size_t)r < nl)
				l = &vm->uexits[r - vm->nr_exits];
			if (l) {
				char name[48];

				format_ns(l->p50_ns, a, sizeof(a));
				format_ns(l->p99_ns, b, sizeof(b));
				snprintf(name, sizeof(name), "%s%s", l->kind == VCPU_SAMPLE_EXIT ? "" : "u:", l->name);
				mvprintw(dy + 1 + r, 0, "%-16.16s %9.1f %9s %9s", name, l->rate, l->count ? a : "-",
					 l->count ? b : "-");
			} else if (vm->nr_details && (size_t)r == nl) {
				/* the exit details (ports, MMIO, MSRs, faulting pages): their own header */
				attron(A_BOLD);
				mvprintw(dy + 1 + r, 0, "%-16.16s %9s %9s %9s", "EXIT DETAIL", "RATE/s", "MEAN", "MAX");
				attroff(A_BOLD);
			} else if (vm->nr_details && d < vm->nr_details) {
				const struct detail_summary *ds = &vm->details[d];
				const char *msr = detail_msr_name(ds->kind, ds->addr);
				char target[32], name[48];

				if (ds->kind == VCPUSTAT_DETAIL_NESTED) /* an exit from L2, and who handled it */
					snprintf(name, sizeof(name), "L2>%s %s", ds->access == VCPUSTAT_ACCESS_L1 ? "L1" : "L0",
						 detail_target_of(ds->kind, ds->addr, target, sizeof(target)));
				else
					snprintf(name, sizeof(name), "%s %s %c", detail_kind_name(ds->kind),
						 msr ? msr : detail_target_of(ds->kind, ds->addr, target, sizeof(target)),
						 detail_access_name(ds->access)[0]);
				mvprintw(dy + 1 + r, 0, "%-16.16s %9.1f %9s %9s", name, ds->rate,
					 format_ns(ds->sum_ns / ds->count, a, sizeof(a)), format_ns(ds->max_ns, b, sizeof(b)));
			}
			if ((size_t)r < right) {
				if (side[r].bold)
					attron(A_BOLD);
				mvprintw(dy + 1 + r, col2, "%.*s", COLS - col2, side[r].text);
				if (side[r].bold)
					attroff(A_BOLD);
			}
			if (!left && (size_t)r >= right)
				break;
		}
		free(side);
	}
	if (ui->help && ui->playback)
		draw_help_playback();
	else if (ui->help)
		draw_help();
	refresh();
	free(order);
}

/* Read a line typed on the last row after the question. */
static void prompt(const char *question, char *buf, int len)
{
	buf[0] = '\0';
	echo();
	curs_set(1);
	mvhline(LINES - 1, 0, ' ', COLS);
	mvprintw(LINES - 1, 0, "%s", question);
	timeout(-1);
	getnstr(buf, len - 1);
	noecho();
	curs_set(0);
}

static void prompt_filter(struct ui *ui)
{
	char buf[64];

	prompt("filter VMs (name or pid, empty = all): ", buf, sizeof(buf));
	snprintf(ui->filter, sizeof(ui->filter), "%s", buf);
	ui->selected = 0;
}

static const unsigned int speeds[] = { 1, 10, 100 };

static void set_speed(struct ui *ui, int delta)
{
	int i = 0;

	while (i < 2 && speeds[i] != ui->speed)
		i++;
	i += delta;
	ui->speed = speeds[i < 0 ? 0 : i > 2 ? 2 : i];
}

/* The keys that move through a recording; UI_NONE if ch is not one. */
static enum ui_action playback_key(struct ui *ui, int ch)
{
	switch (ch) {
	case KEY_LEFT:
	case ',':
		return UI_BACK;
	case KEY_RIGHT:
	case '.':
		return UI_FORWARD;
	case KEY_PPAGE:
		return UI_BACK_10;
	case KEY_NPAGE:
		return UI_FORWARD_10;
	case KEY_HOME:
	case 'g':
		return UI_FIRST;
	case KEY_END:
	case 'G':
		return UI_LAST;
	case 't':
	case 'T':
		prompt("jump to (12.5s, 14:03:07, ns since the start; empty: stay): ", ui->jump, sizeof(ui->jump));
		return ui->jump[0] ? UI_JUMP : UI_REDRAW;
	case '1':
	case '2':
	case '3':
		ui->speed = speeds[ch - '1'];
		return UI_REDRAW;
	case '+':
		set_speed(ui, 1);
		return UI_REDRAW;
	case '-':
		set_speed(ui, -1);
		return UI_REDRAW;
	}
	return UI_NONE;
}

enum ui_action ui_input(struct ui *ui, int timeout_ms)
{
	int ch;

	timeout(timeout_ms < 0 ? 0 : timeout_ms);
	ch = getch();
	if (ch == ERR)
		return UI_NONE;
	if (ui->help) {
		ui->help = false;
		return UI_REDRAW;
	}
	if (ui->playback) {
		enum ui_action a = playback_key(ui, ch);

		if (a != UI_NONE)
			return a;
	}
	switch (ch) {
	case 'q':
	case 'Q':
		return UI_QUIT;
	case 'p':
	case ' ':
		ui->paused = !ui->paused;
		break;
	case 's':
		ui->sort = (ui->sort + 1) % NR_SORT;
		break;
	case 'S':
		ui->sort = (ui->sort + NR_SORT - 1) % NR_SORT;
		break;
	case 'r':
		ui->reverse = !ui->reverse;
		break;
	case 'f':
	case '/':
		prompt_filter(ui);
		break;
	case KEY_UP:
	case 'k':
		if (ui->selected > 0)
			ui->selected--;
		break;
	case KEY_DOWN:
	case 'j':
		ui->selected++;
		break;
	case 'h':
	case '?':
		ui->help = true;
		break;
	case KEY_RESIZE:
		break;
	default:
		return UI_NONE;
	}
	return UI_REDRAW;
}
