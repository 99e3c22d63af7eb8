// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* plot.c - SVG charts of the window model (export.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "export/export.h"
#include "export/plot_internal.h"
#include "util/util.h"
#include "model/report.h"

/* ---- timelines from a recording ---- */

static bool wanted(struct sht_reader *r, uint32_t vm, const struct summary_filter *f)
{
	struct sht_interval *iv = NULL;
	uint32_t pid_attr = sht_attr_child(r, vm, "pid");
	const struct sht_info *info = sht_get_info(r);
	char pid[16] = "";
	size_t n = 0;

	if (!f || !f->nr_vms)
		return true;
	if (pid_attr != SHT_NO_ATTR && !sht_query_range(r, pid_attr, NULL, info->start, info->end, &iv, &n, NULL)) {
		for (size_t i = 0; i < n; i++)
			if (iv[i].value.type == SHT_INT) {
				snprintf(pid, sizeof(pid), "%lld", (long long)iv[i].value.i);
				break;
			}
		free(iv);
	}
	for (size_t i = 0; i < f->nr_vms; i++)
		if (!strcmp(f->vms[i], sht_attr_name(r, vm)) || (pid[0] && !strcmp(f->vms[i], pid)))
			return true;
	return false;
}

/* Start of bucket k of [t1, t2) cut into n. */
static uint64_t edge(uint64_t t1, uint64_t t2, size_t n, size_t k)
{
	return t1 + (uint64_t)((unsigned __int128)(t2 - t1) * k / n);
}

static void spread(uint64_t (*ns)[VCPU_NR_STATES], size_t n, uint64_t t1, uint64_t t2, uint64_t a, uint64_t b,
		   unsigned int state)
{
	size_t k;

	if (a < t1)
		a = t1;
	if (b > t2)
		b = t2;
	if (b <= a)
		return;
	k = (size_t)((unsigned __int128)(a - t1) * n / (t2 - t1));
	for (; k < n && a < b; k++) {
		uint64_t end = edge(t1, t2, n, k + 1);

		if (end <= a)
			continue;
		if (end > b)
			end = b;
		ns[k][state] += end - a;
		a = end;
	}
}

int plot_timelines(struct sht_reader *r, uint64_t t1, uint64_t t2, size_t nbuckets, const struct summary_filter *filter,
		   struct plot_timeline **out, size_t *n, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	struct plot_timeline *tl = NULL, *arr;
	size_t count = 0;
	int e = 0;

	*out = NULL;
	*n = 0;
	if (!nbuckets || nbuckets > PLOT_MAX_BUCKETS || t2 <= t1)
		return verror(err, -EINVAL, "bad plot window or bucket count");
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm)) {
		uint32_t vcpus = sht_attr_child(r, vm, "vcpus");
		struct plot_timeline *t;

		if (!wanted(r, vm, filter))
			continue;
		arr = realloc(tl, (count + 1) * sizeof(*arr));
		if (!arr) {
			e = verror(err, -ENOMEM, "out of memory");
			break;
		}
		tl = arr;
		t = &tl[count++];
		memset(t, 0, sizeof(*t));
		snprintf(t->vm, sizeof(t->vm), "%s", sht_attr_name(r, vm));
		t->nr_buckets = nbuckets;
		t->ns = calloc(nbuckets, sizeof(*t->ns));
		if (!t->ns) {
			e = verror(err, -ENOMEM, "out of memory");
			break;
		}
		for (uint32_t vc = report_first_child(r, vcpus); vc != SHT_NO_ATTR && !e;
		     vc = sht_attr_next_sibling(r, vc)) {
			uint32_t st = sht_attr_child(r, vc, "state");
			uint32_t tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0);
			struct sht_interval *iv = NULL, *on = NULL;
			size_t niv = 0, non = 0;

			if (st == SHT_NO_ATTR || !summary_filter_wants_vcpu(filter, (uint32_t)atoi(sht_attr_name(r, vc)), tid))
				continue;
			e = sht_query_range(r, st, NULL, t1, t2, &iv, &niv, err);
			if (!e && filter && filter->pcpus.n) { /* --pcpu: its states while on those CPUs */
				e = vcpu_on_set(r, vc, &filter->pcpus, t1, t2, &on, &non, err);
				if (!e && intervals_clip(&iv, &niv, on, non))
					e = verror(err, -ENOMEM, "out of memory");
				free(on);
			}
			for (size_t i = 0; !e && i < niv; i++)
				if (iv[i].value.type == SHT_INT && iv[i].value.i >= 0 && iv[i].value.i < VCPU_NR_STATES)
					spread(t->ns, nbuckets, t1, t2, iv[i].start, iv[i].end,
					       (unsigned int)iv[i].value.i);
			free(iv);
		}
	}
	if (e) {
		plot_timelines_free(tl, count);
		return e;
	}
	*out = tl;
	*n = count;
	return 0;
}

void plot_timelines_free(struct plot_timeline *tl, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(tl[i].ns);
	free(tl);
}

/* ---- SVG ---- */

#define WIDTH 960
#define LEFT 80 /* plot area */
#define RIGHT 200
#define PLOT_W (WIDTH - LEFT - RIGHT)
#define CHART_H 200
#define HIST_H 170

/* Bottom to top in stacks: useful time first, then what was lost, then sleep. */
static const unsigned int state_order[] = {VCPU_GUEST, VCPU_HOST,    VCPU_POLL, VCPU_PREEMPTED,
					   VCPU_WAIT,  VCPU_BLOCKED, VCPU_IDLE, VCPU_UNKNOWN};
#define NR_ORDER (sizeof(state_order) / sizeof(state_order[0]))

const char *plot_state_color(unsigned int s)
{
	switch (s) {
	case VCPU_GUEST:
		return "#2ca02c";
	case VCPU_HOST:
		return "#1f77b4";
	case VCPU_PREEMPTED:
		return "#d62728";
	case VCPU_WAIT:
		return "#ff7f0e";
	case VCPU_IDLE:
		return "#d9d9d9";
	case VCPU_BLOCKED:
		return "#9467bd";
	case VCPU_POLL:
		return "#17becf";
	default:
		return "#f2f2f2";
	}
}

static const char *const reason_colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
#define TOP_REASONS 5

void plot_text(FILE *f, double x, double y, const char *anchor, const char *style, const char *s)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" style=\"%s\">", x, y, anchor, style);
	xml_escape(f, s);
	fputs("</text>\n", f);
}

static const char *fmt_ns(double ns, char *buf, size_t len)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.3g \xc2\xb5s", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.3g ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3g s", ns / 1e9);
	return buf;
}

/* A "nice" tick step (1, 2 or 5 x 10^k) giving about `want` ticks over range. */
double plot_nice_step(double range, int want)
{
	double raw = range / want, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

void plot_legend_item(FILE *f, double x, double y, const char *color, const char *label)
{
	fprintf(
	    f,
	    "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" style=\"fill:%s;stroke:#666;stroke-width:0.5\"/>\n",
	    x, y - 10, color);
	plot_text(f, x + 18, y, "start", "font-size:12px;fill:#222", label);
}

/* The frame, y grid and y labels of a plot area at (LEFT, top) of height h; y in [0, ymax]. */
static void frame(FILE *f, double top, double h, double ymax, bool percent, const char *ylabel)
{
	double step = plot_nice_step(ymax, 4);
	char buf[32];

	fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" style=\"fill:#fff;stroke:#999\"/>\n", LEFT,
		top, PLOT_W, h);
	for (double v = 0; v <= ymax * 1.0001; v += step) {
		double y = top + h - h * v / ymax;

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" style=\"stroke:#eee\"/>\n", LEFT, y,
			LEFT + PLOT_W, y);
		if (percent)
			snprintf(buf, sizeof(buf), "%.0f %%", v);
		else
			snprintf(buf, sizeof(buf), "%.6g", v);
		plot_text(f, LEFT - 6, y + 4, "end", "font-size:11px;fill:#444", buf);
	}
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\" "
		"style=\"font-size:12px;fill:#222\">",
		(double)LEFT - 50, top + h / 2, (double)LEFT - 50, top + h / 2);
	xml_escape(f, ylabel);
	fputs("</text>\n", f);
}

static void state_legend(FILE *f, double top)
{
	for (size_t i = 0; i < NR_ORDER; i++) {
		unsigned int s = state_order[NR_ORDER - 1 - i]; /* top of the stack first */

		plot_legend_item(f, LEFT + PLOT_W + 16, top + 14 + 18 * (double)i, plot_state_color(s), vcpu_state_name(s));
	}
}

/* Stacked bars of state shares per time bucket. Returns the height used. */
static double timeline_chart(FILE *f, double top, const struct plot_timeline *t, double seconds)
{
	double bw = (double)PLOT_W / (double)t->nr_buckets, step;
	char buf[32];

	plot_text(f, LEFT, top + 14, "start", "font-size:13px;font-weight:bold;fill:#222",
	     "Share of the VM's vCPU time in each state, over time");
	top += 24;
	frame(f, top, CHART_H, 100, true, "share of vCPU time");
	for (size_t k = 0; k < t->nr_buckets; k++) {
		uint64_t total = 0;
		double y = top + CHART_H;

		for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
			total += t->ns[k][s];
		if (!total)
			continue; /* no vCPU alive: a gap */
		for (size_t i = 0; i < NR_ORDER; i++) {
			unsigned int s = state_order[i];
			double h = CHART_H * (double)t->ns[k][s] / (double)total;

			if (h <= 0)
				continue;
			y -= h;
			fprintf(f,
				"<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
				"style=\"fill:%s;shape-rendering:crispEdges\"/>\n",
				LEFT + bw * (double)k, y, bw + 0.3, h, plot_state_color(s));
		}
	}
	/* x axis: seconds since the start of the window */
	step = plot_nice_step(seconds > 0 ? seconds : 1, 8);
	for (double v = 0; v <= seconds * 1.0001; v += step) {
		double x = LEFT + PLOT_W * (seconds > 0 ? v / seconds : 0);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" style=\"stroke:#444\"/>\n", x,
			top + CHART_H, x, top + CHART_H + 4);
		snprintf(buf, sizeof(buf), "%.6g", v);
		plot_text(f, x, top + CHART_H + 16, "middle", "font-size:11px;fill:#444", buf);
	}
	plot_text(f, LEFT + PLOT_W / 2.0, top + CHART_H + 32, "middle", "font-size:12px;fill:#222",
	     "seconds since the start of the window");
	state_legend(f, top);
	return 24 + CHART_H + 44;
}

/* One horizontal stacked bar per vCPU: its shares over the window (with the state legend if asked). */
static double vcpu_bars(FILE *f, double top, const struct vm_summary *vm, bool legend)
{
	const double row = 18, bar = 13;
	double rows = row * (double)vm->nr_vcpus;
	char buf[32];

	plot_text(f, LEFT, top + 14, "start", "font-size:13px;font-weight:bold;fill:#222",
	     "Each vCPU over the whole window");
	top += 24;
	for (size_t v = 0; v < vm->nr_vcpus; v++) {
		const struct vcpu_summary *c = &vm->vcpus[v];
		uint64_t total = 0;
		double x = LEFT, y = top + row * (double)v;

		for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
			total += c->ns[s];
		snprintf(buf, sizeof(buf), "vCPU %u", c->index);
		plot_text(f, LEFT - 6, y + bar - 2, "end", "font-size:11px;fill:#444", buf);
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" style=\"fill:#fff;stroke:#999\"/>\n",
			LEFT, y, PLOT_W, bar);
		for (size_t i = 0; total && i < NR_ORDER; i++) {
			unsigned int s = state_order[i];
			double w = PLOT_W * (double)c->ns[s] / (double)total;

			if (w <= 0)
				continue;
			fprintf(f,
				"<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" style=\"fill:%s\">"
				"<title>%s %.1f %%</title></rect>\n",
				x, y, w, bar, plot_state_color(s), vcpu_state_name(s),
				100.0 * (double)c->ns[s] / (double)total);
			x += w;
		}
	}
	if (legend) {
		state_legend(f, top - 4);
		if (rows < 18.0 * NR_ORDER)
			rows = 18.0 * NR_ORDER;
	}
	return 24 + rows + 12;
}

/*
 * The VMM's other threads (where known: live, --level full recordings): per
 * kind a bar of its CPU time and one of its waiting for a CPU, scaled to the
 * longest; labelled with the time and the steal share. 0 height if none ran.
 */
static double vmm_bars(FILE *f, double top, const struct vm_summary *vm)
{
	static const char *const kind[VMM_NR_KINDS] = { "emulator/IO", "vhost" };
	const double row = 18, bar = 13;
	__u64 most = 0;
	double y;
	char buf[128], a[32];

	if (!vm->vmm.known || (!vm->vmm.threads[VMM_EMULATOR] && !vm->vmm.threads[VMM_VHOST]))
		return 0;
	for (int k = 0; k < VMM_NR_KINDS; k++) {
		if (vm->vmm.run_ns[k] > most)
			most = vm->vmm.run_ns[k];
		if (vm->vmm.wait_ns[k] > most)
			most = vm->vmm.wait_ns[k];
	}
	plot_text(f, LEFT, top + 14, "start", "font-size:13px;font-weight:bold;fill:#222",
		  "The VMM's other threads: on a CPU, and waiting for one");
	y = top + 24;
	for (int k = 0; k < VMM_NR_KINDS; k++) {
		__u64 all = vm->vmm.run_ns[k] + vm->vmm.wait_ns[k];

		for (int w = 0; w < 2; w++, y += row) {
			__u64 ns = w ? vm->vmm.wait_ns[k] : vm->vmm.run_ns[k];
			double len = most ? PLOT_W * 0.8 * (double)ns / (double)most : 0;

			snprintf(buf, sizeof(buf), "%s %s", kind[k], w ? "waiting" : "on CPU");
			plot_text(f, LEFT - 6, y + bar - 2, "end", "font-size:11px;fill:#444", buf);
			fprintf(f,
				"<rect x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" style=\"fill:%s\">"
				"<title>%s: %u threads, %s</title></rect>\n",
				LEFT, y, len, bar, plot_state_color(w ? VCPU_WAIT : VCPU_HOST), buf, vm->vmm.threads[k],
				fmt_ns((double)ns, a, sizeof(a)));
			if (w)
				snprintf(buf, sizeof(buf), "%s, steal %.1f %%", fmt_ns((double)ns, a, sizeof(a)),
					 all ? 100.0 * (double)ns / (double)all : 0.0);
			else
				snprintf(buf, sizeof(buf), "%s, %u thread%s", fmt_ns((double)ns, a, sizeof(a)),
					 vm->vmm.threads[k], vm->vmm.threads[k] == 1 ? "" : "s");
			plot_text(f, LEFT + len + 6, y + bar - 2, "start", "font-size:11px;fill:#444", buf);
		}
	}
	return y - top + 12;
}

/*
 * What the exits accessed (exit details): per kind, a horizontal bar per row,
 * the top TOP_DETAILS by handling time, bars scaled to the VM's longest total;
 * each labelled with its count and total. 0 height without details.
 */
#define TOP_DETAILS 8

static double detail_bars(FILE *f, double top, const struct vm_summary *vm)
{
	static const char *const kind_title[VCPUSTAT_NR_DETAIL_KINDS] = {
		[VCPUSTAT_DETAIL_PIO] = "I/O ports",
		[VCPUSTAT_DETAIL_MMIO] = "MMIO addresses",
		[VCPUSTAT_DETAIL_MSR] = "MSRs",
		[VCPUSTAT_DETAIL_PAGE_FAULT] = "Nested page faults (by page)",
	};
	const double row = 18, bar = 13;
	double y = top, longest = 0;
	char label[96], target[32], a[24], b[24];

	if (!vm->nr_details)
		return 0;
	for (size_t i = 0; i < vm->nr_details; i++)
		if ((double)vm->details[i].sum_ns > longest)
			longest = (double)vm->details[i].sum_ns;
	plot_text(f, LEFT, y + 14, "start", "font-size:13px;font-weight:bold;fill:#222",
		  "What the exits accessed: total handling time (kvm_exit to kvm_entry) and count");
	y += 24;
	for (unsigned int k = VCPUSTAT_DETAIL_PIO; k < VCPUSTAT_NR_DETAIL_KINDS; k++) {
		const struct detail_summary *rows[TOP_DETAILS];
		size_t n = 0;

		/* vm->details is by kind, then count: the top by time within the kind */
		for (size_t i = 0; i < vm->nr_details; i++) {
			const struct detail_summary *d = &vm->details[i];
			size_t at;

			if (d->kind != k)
				continue;
			for (at = n; at > 0 && rows[at - 1]->sum_ns < d->sum_ns; at--)
				if (at < TOP_DETAILS)
					rows[at] = rows[at - 1];
			if (at < TOP_DETAILS) {
				rows[at] = d;
				if (n < TOP_DETAILS)
					n++;
			}
		}
		if (!n)
			continue;
		plot_text(f, LEFT, y + 12, "start", "font-size:12px;fill:#222", kind_title[k]);
		y += 18;
		for (size_t i = 0; i < n; i++, y += row) {
			const struct detail_summary *d = rows[i];
			const char *msr = detail_msr_name(d->kind, d->addr);
			/* a label column of 150 px (an address is 18 characters), the bar, its figures */
			double x0 = LEFT + 150, w = longest > 0 ? (PLOT_W - 150 - 170) * (double)d->sum_ns / longest : 0;

			snprintf(label, sizeof(label), "%s %s", msr ? msr : detail_target_of(d->kind, d->addr, target, sizeof(target)),
				 detail_access_name(d->access));
			plot_text(f, x0 - 6, y + bar - 2, "end", "font-size:11px;fill:#444", label);
			fprintf(f,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" style=\"fill:%s\"><title>",
				x0, y, w < 1 ? 1 : w, bar, reason_colors[k % (sizeof(reason_colors) / sizeof(reason_colors[0]))]);
			snprintf(label, sizeof(label), "%s %s %s: %llu exits, %s in all", detail_kind_name(d->kind),
				 detail_target_of(d->kind, d->addr, target, sizeof(target)), detail_access_name(d->access),
				 (unsigned long long)d->count, fmt_ns((double)d->sum_ns, a, sizeof(a)));
			xml_escape(f, label);
			fputs("</title></rect>\n", f);
			snprintf(label, sizeof(label), "%llu \xc3\x97, %s (mean %s)", (unsigned long long)d->count,
				 fmt_ns((double)d->sum_ns, a, sizeof(a)), fmt_ns((double)d->sum_ns / (double)d->count, b, sizeof(b)));
			plot_text(f, x0 + (w < 1 ? 1 : w) + 6, y + bar - 2, "start", "font-size:11px;fill:#444", label);
		}
		y += 6;
	}
	return y - top + 12;
}

/*
 * Guest address spaces (--address-spaces): a bar per CR3, the TOP_DETAILS
 * with the most guest time, scaled to the first; labelled with the time, its
 * share of the table's and the exits, and the guest thread that names it
 * (reports of imports with a guest trace). 0 height without them.
 */
static double address_space_bars(FILE *f, double top, const struct vm_summary *vm)
{
	const double row = 18, bar = 13;
	double y = top, x0 = LEFT + 150;
	__u64 all = 0;
	char label[128], t[32], a[24];

	if (!vm->nr_address_spaces)
		return 0;
	for (size_t i = 0; i < vm->nr_address_spaces; i++)
		all += vm->address_spaces[i].sum_ns;
	plot_text(f, LEFT, y + 14, "start", "font-size:13px;font-weight:bold;fill:#222",
		  "Guest address spaces: guest time by the guest's CR3 at the exit");
	y += 24;
	for (size_t i = 0; i < vm->nr_address_spaces && i < TOP_DETAILS; i++, y += row) {
		const struct detail_summary *d = &vm->address_spaces[i];
		double w = vm->address_spaces[0].sum_ns ?
				   (PLOT_W - 150 - 200) * (double)d->sum_ns / (double)vm->address_spaces[0].sum_ns :
				   0;

		snprintf(label, sizeof(label), "CR3 %s", cr3_target(d->addr, t, sizeof(t)));
		plot_text(f, x0 - 6, y + bar - 2, "end", "font-size:11px;fill:#444", label);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" style=\"fill:%s\"><title>", x0, y,
			w < 1 ? 1 : w, bar, plot_state_color(VCPU_GUEST));
		snprintf(label, sizeof(label), "CR3 %s: %s of guest time, %llu exits", t, fmt_ns((double)d->sum_ns, a, sizeof(a)),
			 (unsigned long long)d->count);
		xml_escape(f, label);
		fputs("</title></rect>\n", f);
		if (d->guest_tid) /* named from an imported guest trace */
			snprintf(label, sizeof(label), "%s, %.1f %%, %llu exits; %s (%u) at %llu", fmt_ns((double)d->sum_ns, a, sizeof(a)),
				 all ? 100.0 * (double)d->sum_ns / (double)all : 0.0, (unsigned long long)d->count,
				 d->guest_comm[0] ? d->guest_comm : "?", d->guest_tid, (unsigned long long)d->guest_tid_exits);
		else
			snprintf(label, sizeof(label), "%s, %.1f %%, %llu exits", fmt_ns((double)d->sum_ns, a, sizeof(a)),
				 all ? 100.0 * (double)d->sum_ns / (double)all : 0.0, (unsigned long long)d->count);
		plot_text(f, x0 + (w < 1 ? 1 : w) + 6, y + bar - 2, "start", "font-size:11px;fill:#444", label);
	}
	return y - top + 12;
}

/* Histogram bars: 4 per power of two (pairs of the kernel's 8 sub-buckets). */
#define GROUP 2

static double xlog(double ns, double lo, double hi)
{
	if (ns < lo)
		ns = lo;
	return LEFT + PLOT_W * (log10(ns) - log10(lo)) / (log10(hi) - log10(lo));
}

/*
 * A latency histogram: bars stacked by reason (the TOP_REASONS most frequent,
 * then "other"), log-scaled latency axis, p50 and p99 of all of them.
 */
static double hist_chart(FILE *f, double top, const char *title, const struct latency_summary *l, size_t n)
{
	__u64 all[LAT_HIST_BUCKETS] = {0}, count = 0, ymax = 0;
	unsigned int first = LAT_HIST_BUCKETS, last = 0;
	size_t nr = n < TOP_REASONS ? n : TOP_REASONS;
	double lo, hi;
	char buf[96], a[32];

	for (size_t r = 0; r < n; r++)
		for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++) {
			all[b] += l[r].bucket[b];
			count += l[r].bucket[b];
		}
	if (!count)
		return 0;
	for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
		if (all[b]) {
			if (b < first)
				first = b;
			last = b;
		}
	for (unsigned int g = first / GROUP * GROUP; g <= last; g += GROUP) {
		__u64 sum = 0;

		for (unsigned int b = g; b < g + GROUP && b < LAT_HIST_BUCKETS; b++)
			sum += all[b];
		if (sum > ymax)
			ymax = sum;
	}
	lo = pow(10, floor(log10(lat_hist_lower(first) > 10 ? (double)lat_hist_lower(first) : 10)));
	hi = pow(10, ceil(log10((double)lat_hist_lower(last < LAT_HIST_BUCKETS - 1 ? last + 1 : last) + 1)));
	if (hi <= lo * 10)
		hi = lo * 100;

	snprintf(buf, sizeof(buf), "%s (%llu in the window)", title, (unsigned long long)count);
	plot_text(f, LEFT, top + 14, "start", "font-size:13px;font-weight:bold;fill:#222", buf);
	top += 24;
	frame(f, top, HIST_H, (double)ymax * 1.1, false, "count");
	for (unsigned int g = first / GROUP * GROUP; g <= last; g += GROUP) {
		double x0 = xlog((double)lat_hist_lower(g), lo, hi);
		double x1 = xlog(g + GROUP < LAT_HIST_BUCKETS ? (double)lat_hist_lower(g + GROUP) : hi, lo, hi);
		double y = top + HIST_H;

		for (size_t r = 0; r <= nr; r++) {
			__u64 c = 0;

			for (unsigned int b = g; b < g + GROUP && b < LAT_HIST_BUCKETS; b++) {
				if (r < nr) {
					c += l[r].bucket[b];
				} else {
					c += all[b];
					for (size_t k = 0; k < nr; k++)
						c -= l[k].bucket[b];
				}
			}
			if (!c)
				continue;
			double h = HIST_H * (double)c / ((double)ymax * 1.1);

			y -= h;
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" style=\"fill:%s\"/>\n",
				x0, y, x1 - x0 > 1 ? x1 - x0 - 0.5 : 0.5, h, reason_colors[r < nr ? r : TOP_REASONS]);
		}
	}
	/* x axis: powers of ten */
	for (double v = lo; v <= hi * 1.0001; v *= 10) {
		double x = xlog(v, lo, hi);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" style=\"stroke:#444\"/>\n", x,
			top + HIST_H, x, top + HIST_H + 4);
		plot_text(f, x, top + HIST_H + 16, "middle", "font-size:11px;fill:#444", fmt_ns(v, a, sizeof(a)));
	}
	plot_text(f, LEFT + PLOT_W / 2.0, top + HIST_H + 32, "middle", "font-size:12px;fill:#222", "latency (log scale)");
	/* percentiles of all the reasons together */
	{
		static const double qs[] = {0.50, 0.99};
		static const char *const qn[] = {"p50", "p99"};

		for (int i = 0; i < 2; i++) {
			double p = (double)latency_percentile(all, count, qs[i]), x = xlog(p, lo, hi);

			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"style=\"stroke:#000;stroke-dasharray:4,3\"/>\n",
				x, top, x, top + HIST_H);
			snprintf(buf, sizeof(buf), "%s %s", qn[i], fmt_ns(p, a, sizeof(a)));
			if (x > LEFT + PLOT_W - 90) /* near the right edge: the label goes left of the line */
				plot_text(f, x - 3, top + 12 + 13 * i, "end", "font-size:11px;fill:#000", buf);
			else
				plot_text(f, x + 3, top + 12 + 13 * i, "start", "font-size:11px;fill:#000", buf);
		}
	}
	/* legend */
	for (size_t r = 0; r <= nr; r++) {
		__u64 c = 0;

		if (r < nr) {
			c = 0;
			for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
				c += l[r].bucket[b];
			snprintf(buf, sizeof(buf), "%s (%llu)", l[r].name, (unsigned long long)c);
		} else {
			if (n <= nr)
				break;
			for (size_t k = nr; k < n; k++)
				for (unsigned int b = 0; b < LAT_HIST_BUCKETS; b++)
					c += l[k].bucket[b];
			snprintf(buf, sizeof(buf), "other (%llu)", (unsigned long long)c);
		}
		plot_legend_item(f, LEFT + PLOT_W + 16, top + 14 + 18 * (double)r, reason_colors[r < nr ? r : TOP_REASONS],
			    buf);
	}
	return 24 + HIST_H + 44;
}

static const struct plot_timeline *timeline_of(const struct plot_doc *d, const char *vm)
{
	for (size_t i = 0; d->tl && i < d->nr_tl; i++)
		if (!strcmp(d->tl[i].vm, vm))
			return &d->tl[i];
	return NULL;
}

int plot_svg(const struct plot_doc *d, char **buf, size_t *len)
{
	char *body = NULL;
	size_t body_len = 0;
	FILE *f, *out;
	double y = 16;

	f = open_memstream(&body, &body_len);
	if (!f)
		return -ENOMEM;
	if (!d->s->nr_vms) {
		plot_text(f, LEFT, y + 30, "start", "font-size:14px;fill:#222", "No VM was seen in this window.");
		y += 50;
	}
	for (size_t i = 0; i < d->s->nr_vms; i++) {
		const struct vm_summary *vm = &d->s->vms[i];
		const struct plot_timeline *t = timeline_of(d, vm->name);
		char title[256];
		double h;

		snprintf(title, sizeof(title), "VM %s \xe2\x80\x94 %s", vm->name, d->window);
		fprintf(f, "<g>\n");
		plot_text(f, 16, y + 20, "start", "font-size:18px;font-weight:bold;fill:#111", title);
		snprintf(title, sizeof(title),
			 "%zu vCPU%s, %s; guest %.1f %%, host %.1f %%, poll %.1f %%, preempted %.1f %%, "
			 "wait %.1f %%, idle %.1f %%, blocked %.1f %%",
			 vm->nr_vcpus, vm->nr_vcpus == 1 ? "" : "s", d->source, 100 * vm_share(d->s, vm, VCPU_GUEST),
			 100 * vm_share(d->s, vm, VCPU_HOST), 100 * vm_share(d->s, vm, VCPU_POLL),
			 100 * vm_share(d->s, vm, VCPU_PREEMPTED),
			 100 * vm_share(d->s, vm, VCPU_WAIT), 100 * vm_share(d->s, vm, VCPU_IDLE),
			 100 * vm_share(d->s, vm, VCPU_BLOCKED));
		plot_text(f, 16, y + 38, "start", "font-size:12px;fill:#444", title);
		y += 52;
		if (t)
			y += timeline_chart(f, y, t, d->seconds);
		y += vcpu_bars(f, y, vm, !t);
		h = hist_chart(f, y, "Exit handling latency (kvm_exit to kvm_entry)", vm->exits, vm->nr_exits);
		y += h;
		h = hist_chart(f, y, "Userspace exit handling latency (to the next KVM_RUN)", vm->uexits,
			       vm->nr_uexits);
		y += h;
		h = hist_chart(f, y, "Run-queue wait (preempted or woken, until on a CPU)", &vm->runq, 1);
		y += h;
		h = hist_chart(f, y, "Wake-up to guest code, by what woke the sleeping vCPU", vm->wakes, vm->nr_wakes);
		y += h;
		if (wake_vectors_worth_showing(vm))
			y += hist_chart(f, y, "Wake-up to guest code, by the vector injected at that entry",
					vm->wake_vectors, vm->nr_wake_vectors);
		y += vmm_bars(f, y, vm);
		y += detail_bars(f, y, vm);
		y += address_space_bars(f, y, vm);
		if (!vm->nr_exits)
			plot_text(f, LEFT, y + 4, "start", "font-size:11px;fill:#666",
			     "No kvm_exit was seen (on hosts where kvm_entry/kvm_exit never fire, guest and "
			     "hypervisor time are both counted as host).");
		y += 24;
		fprintf(f, "</g>\n");
	}
	if (fclose(f)) {
		free(body);
		return -ENOMEM;
	}
	out = open_memstream(buf, len);
	if (!out) {
		free(body);
		return -ENOMEM;
	}
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" style=\"font-family:sans-serif;background:#fff\">\n<title>",
		WIDTH, y, WIDTH, y);
	xml_escape(out, "vcpustat: ");
	xml_escape(out, d->window);
	fprintf(out, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" style=\"fill:#fff\"/>\n", WIDTH, y);
	fwrite(body, 1, body_len, out);
	fputs("</svg>\n", out);
	free(body);
	return fclose(out) ? -ENOMEM : 0;
}

int plot_write(const struct plot_doc *d, const char *path, struct vcpustat_error *err)
{
	char *buf;
	size_t len;
	int e;

	if (plot_svg(d, &buf, &len))
		return verror(err, -ENOMEM, "out of memory");
	e = outfile_write(path, buf, len, err);
	free(buf);
	return e;
}

int plot_recording(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2, size_t buckets,
		   const struct summary_filter *filter, const char *path, struct vcpustat_error *err)
{
	struct plot_timeline *tl = NULL;
	struct plot_doc d = { 0 };
	char a[64], b[64], window[192];
	struct summary s;
	size_t ntl = 0;
	bool culprits;
	int e;

	e = report_build(&s, r, t1, t2, filter, &culprits, err);
	if (e)
		return e;
	e = plot_timelines(r, t1, t2, buckets, filter, &tl, &ntl, err);
	if (e) {
		summary_free(&s);
		return e;
	}
	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	if (sht_has_wall_clock(r)) {
		a[19] = b[19] = '\0'; /* to the second: "2026-11-22T14:03:07" */
		snprintf(window, sizeof(window), "%s .. %s (%.1f s)", a, b + 11, (double)(t2 - t1) / 1e9);
	} else { /* an imported trace: seconds since its start */
		snprintf(window, sizeof(window), "%s .. %s since the trace start (%.1f s)", a, b, (double)(t2 - t1) / 1e9);
	}
	d.s = &s;
	d.tl = tl;
	d.nr_tl = ntl;
	d.seconds = (double)(t2 - t1) / 1e9;
	d.window = window;
	d.source = file;
	e = plot_write(&d, path, err);
	plot_timelines_free(tl, ntl);
	summary_free(&s);
	return e;
}

static void wall(char *buf, size_t len, time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

int plot_live_window(const struct summary *s, time_t start, time_t end, const char *path, struct vcpustat_error *err)
{
	char host[64] = "this host", w0[32], w1[32], window[160], source[128];
	struct plot_doc d = { 0 };

	gethostname(host, sizeof(host) - 1);
	wall(w0, sizeof(w0), start);
	wall(w1, sizeof(w1), end);
	snprintf(window, sizeof(window), "%s .. %s (%.1f s)", w0, w1 + 11, s->seconds);
	snprintf(source, sizeof(source), "live on %s", host);
	d.s = s;
	d.seconds = s->seconds;
	d.window = window;
	d.source = source;
	return plot_write(&d, path, err);
}
