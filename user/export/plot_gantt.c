// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * plot_gantt.c - `vcpustat plot FILE --timeline`: a Gantt chart of a window
 * of a recording, one row per physical CPU (what ran on it: a VM's vCPU in
 * guest code or in the hypervisor, a host thread, idle) and one per vCPU (its
 * state), as the fused multi-layer paper's views show it. Each pixel column
 * of a row shows what took most of its time, so the SVG stays the same size
 * however many events the window holds (GANTT_W columns per row).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export/export.h"
#include "export/plot_internal.h"
#include "util/util.h"
#include "model/pcpu.h"
#include "model/recording.h"

#define GANTT_LEFT 170
#define GANTT_W 1000
#define GANTT_ROW 12
#define GANTT_GAP 2
#define SLOTS 4 /* categories tracked per pixel: the most time among them wins */

/* A colour per VM; its hypervisor time in a darker shade of it. */
static const char *const vm_guest[] = { "#2ca02c", "#1f77b4", "#9467bd", "#e377c2", "#17becf", "#bcbd22",
					"#8c564b", "#ff7f0e" };
static const char *const vm_hyp[] = { "#145214", "#0f3c5a", "#4a3460", "#7a3c68", "#0b5f68", "#5e5f11",
				      "#462b25", "#804007" };
#define NR_VM_COLORS (sizeof(vm_guest) / sizeof(vm_guest[0]))
#define HOST_COLOR "#7f7f7f"

/* pCPU categories: 0 idle (drawn blank), 1 host thread, 2 + 2 * vm guest, 3 + 2 * vm hypervisor */
#define CAT_NONE -1
#define CAT_IDLE 0
#define CAT_HOST 1

struct pixel {
	int cat[SLOTS];
	uint64_t ns[SLOTS];
};

struct row {
	char label[160];
	bool is_cpu;
	uint32_t cpu;
	struct pixel *px; /* [GANTT_W] */
};

struct gantt {
	uint64_t t1, t2;
	struct row *rows;
	size_t nr_rows;
	char (*vm_names)[128];
	int nvm;
	const struct summary_filter *filter; /* --pcpu: the CPU rows; --tid: the threads drawn on them */
};

static void pixel_add(struct pixel *p, int cat, uint64_t ns)
{
	int min = 0;

	for (int i = 0; i < SLOTS; i++) {
		if (p->ns[i] && p->cat[i] == cat) {
			p->ns[i] += ns;
			return;
		}
		if (p->ns[i] < p->ns[min])
			min = i;
	}
	if (ns > p->ns[min]) { /* a free slot (0 ns) or one with less time */
		p->cat[min] = cat;
		p->ns[min] = ns;
	}
}

static int pixel_best(const struct pixel *p)
{
	int best = -1;

	for (int i = 0; i < SLOTS; i++)
		if (p->ns[i] && (best < 0 || p->ns[i] > p->ns[best]))
			best = i;
	return best < 0 ? CAT_NONE : p->cat[best];
}

/* Spread [a, b) over the row's pixel columns. */
static void row_add(const struct gantt *g, struct row *rw, uint64_t a, uint64_t b, int cat)
{
	double span = (double)(g->t2 - g->t1);

	if (a < g->t1)
		a = g->t1;
	if (b > g->t2)
		b = g->t2;
	for (uint64_t t = a; t < b;) {
		size_t k = (size_t)((double)(t - g->t1) / span * GANTT_W);
		uint64_t edge;

		if (k >= GANTT_W)
			k = GANTT_W - 1;
		edge = g->t1 + (uint64_t)((double)(k + 1) * span / GANTT_W + 0.5);
		if (edge <= t)
			edge = t + 1;
		if (edge > b || k == GANTT_W - 1)
			edge = b;
		pixel_add(&rw->px[k], cat, edge - t);
		t = edge;
	}
}

static struct row *new_row(struct gantt *g)
{
	struct row *arr = realloc(g->rows, (g->nr_rows + 1) * sizeof(*arr)), *rw;

	if (!arr)
		return NULL;
	g->rows = arr;
	rw = &arr[g->nr_rows];
	memset(rw, 0, sizeof(*rw));
	rw->px = calloc(GANTT_W, sizeof(*rw->px));
	if (!rw->px)
		return NULL;
	g->nr_rows++;
	return rw;
}

static struct row *cpu_row(struct gantt *g, uint32_t cpu)
{
	struct row *rw;

	for (size_t i = 0; i < g->nr_rows; i++)
		if (g->rows[i].is_cpu && g->rows[i].cpu == cpu)
			return &g->rows[i];
	rw = new_row(g);
	if (rw) {
		rw->is_cpu = true;
		rw->cpu = cpu;
		snprintf(rw->label, sizeof(rw->label), "CPU %u", cpu);
	}
	return rw;
}

static int cpu_visit(void *ctx, const struct pcpu_seg *s)
{
	struct gantt *g = ctx;
	struct row *rw = cpu_row(g, s->cpu);
	int cat = s->kind == PCPU_IDLE ? CAT_IDLE : s->kind == PCPU_HOST ? CAT_HOST
							     : 2 + 2 * s->vm + (s->kind == PCPU_HYPERVISOR);

	if (!rw)
		return -ENOMEM;
	if (g->filter && !id_set_has(&g->filter->tids, s->tid))
		return 0; /* --tid: the row, but only those threads on it */
	row_add(g, rw, s->start, s->end, cat);
	return 0;
}

static int by_cpu(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* The vCPU rows of the VMs filter keeps: each state interval. */
static int vcpu_rows(struct gantt *g, struct sht_reader *r, const struct summary_filter *filter,
		     struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	int e = 0;

	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR && !e; vm = sht_attr_next_sibling(r, vm)) {
		uint32_t pid = (uint32_t)report_first_int(r, sht_attr_child(r, vm, "pid"), 0);
		size_t first = g->nr_rows;

		if (!summary_filter_wants(filter, sht_attr_name(r, vm), pid))
			continue;
		for (uint32_t vc = report_first_child(r, sht_attr_child(r, vm, "vcpus")); vc != SHT_NO_ATTR && !e;
		     vc = sht_attr_next_sibling(r, vc)) {
			uint32_t st = sht_attr_child(r, vc, "state");
			uint32_t tid = (uint32_t)report_first_int(r, sht_attr_child(r, vc, "tid"), 0);
			struct sht_interval *iv = NULL, *on = NULL;
			struct row *rw;
			size_t n = 0, non = 0;

			if (st == SHT_NO_ATTR || !summary_filter_wants_vcpu(filter, (uint32_t)atoi(sht_attr_name(r, vc)), tid))
				continue;
			if ((e = sht_query_range(r, st, NULL, g->t1, g->t2, &iv, &n, err)))
				break;
			if (filter && filter->pcpus.n) { /* --pcpu: its states while on those CPUs */
				e = vcpu_on_set(r, vc, &filter->pcpus, g->t1, g->t2, &on, &non, err);
				if (!e && intervals_clip(&iv, &n, on, non))
					e = verror(err, -ENOMEM, "out of memory");
				free(on);
				if (e) {
					free(iv);
					break;
				}
				if (!n) /* never there */
					continue;
			}
			if (!(rw = new_row(g))) {
				free(iv);
				return verror(err, -ENOMEM, "out of memory");
			}
			snprintf(rw->label, sizeof(rw->label), "%.128s vCPU %s", sht_attr_name(r, vm), sht_attr_name(r, vc));
			rw->cpu = (uint32_t)atoi(sht_attr_name(r, vc)); /* the vCPU index, for the order */
			for (size_t i = 0; i < n; i++)
				if (iv[i].value.type == SHT_INT && iv[i].value.i >= 0 && iv[i].value.i < VCPU_NR_STATES &&
				    iv[i].end > g->t1 && iv[i].start < g->t2)
					row_add(g, rw, iv[i].start, iv[i].end, (int)iv[i].value.i);
			free(iv);
		}
		if (g->nr_rows - first > 1) /* a VM's vCPUs by index */
			qsort(g->rows + first, g->nr_rows - first, sizeof(*g->rows), by_cpu);
	}
	return e;
}

static const char *cat_color(const struct gantt *g, bool is_cpu, int cat, char *label, size_t len)
{
	if (!is_cpu) {
		snprintf(label, len, "%s", vcpu_state_name((unsigned int)cat));
		return plot_state_color((unsigned int)cat);
	}
	if (cat == CAT_HOST) {
		snprintf(label, len, "a host thread");
		return HOST_COLOR;
	}
	snprintf(label, len, "%s: %s", g->vm_names[(cat - 2) / 2], (cat - 2) % 2 ? "hypervisor" : "guest code");
	return (cat - 2) % 2 ? vm_hyp[((cat - 2) / 2) % NR_VM_COLORS] : vm_guest[((cat - 2) / 2) % NR_VM_COLORS];
}

static void axis(FILE *f, double y, double seconds, bool labels_above)
{
	double step = plot_nice_step(seconds > 0 ? seconds : 1, 10);
	char buf[32];

	for (double v = 0; v <= seconds * 1.0001; v += step) {
		double x = GANTT_LEFT + GANTT_W * (seconds > 0 ? v / seconds : 0);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" style=\"stroke:#444\"/>\n", x, y, x,
			labels_above ? y - 4 : y + 4);
		snprintf(buf, sizeof(buf), "%.6g", v);
		plot_text(f, x, labels_above ? y - 7 : y + 15, "middle", "font-size:10px;fill:#444", buf);
	}
}

static void draw(FILE *f, const struct gantt *g, const char *title, double *height)
{
	double seconds = (double)(g->t2 - g->t1) / 1e9, y = 60;
	bool any_cpu = false, any_vcpu = false;
	char label[256];

	plot_text(f, 16, 24, "start", "font-size:16px;font-weight:bold;fill:#111", title);
	plot_text(f, 16, 42, "start", "font-size:11px;fill:#444",
		  "Each row is one physical CPU (what ran on it) or one vCPU (its state); each pixel column shows "
		  "what took most of its time. Seconds since the start of the window.");
	axis(f, y + 10, seconds, true);
	y += 14;
	for (size_t i = 0; i < g->nr_rows; i++) {
		const struct row *rw = &g->rows[i];

		if ((rw->is_cpu && !any_cpu) || (!rw->is_cpu && !any_vcpu)) {
			plot_text(f, 16, y + 12, "start", "font-size:12px;font-weight:bold;fill:#222",
				  rw->is_cpu ? "Physical CPUs" : "vCPUs");
			y += 18;
			any_cpu |= rw->is_cpu;
			any_vcpu |= !rw->is_cpu;
		}
		plot_text(f, GANTT_LEFT - 6, y + GANTT_ROW - 2, "end", "font-size:10px;fill:#222", rw->label);
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" style=\"fill:#fafafa;stroke:#ddd\"/>\n",
			GANTT_LEFT, y, GANTT_W, GANTT_ROW);
		for (size_t k = 0; k < GANTT_W;) {
			int cat = pixel_best(&rw->px[k]);
			size_t run = k + 1;
			const char *color;

			while (run < GANTT_W && pixel_best(&rw->px[run]) == cat)
				run++;
			if (cat == CAT_NONE || (rw->is_cpu && cat == CAT_IDLE)) {
				k = run;
				continue;
			}
			color = cat_color(g, rw->is_cpu, cat, label, sizeof(label));
			fprintf(f,
				"<rect x=\"%zu\" y=\"%.1f\" width=\"%zu\" height=\"%d\" style=\"fill:%s;"
				"shape-rendering:crispEdges\"><title>",
				GANTT_LEFT + k, y, run - k, GANTT_ROW, color);
			xml_escape(f, rw->label);
			fprintf(f, ": ");
			xml_escape(f, label);
			fprintf(f, ", %.6f .. %.6f s</title></rect>\n", seconds * (double)k / GANTT_W,
				seconds * (double)run / GANTT_W);
			k = run;
		}
		y += GANTT_ROW + GANTT_GAP;
	}
	if (!g->nr_rows) {
		plot_text(f, GANTT_LEFT, y + 14, "start", "font-size:12px;fill:#222", "Nothing ran in this window.");
		y += 24;
	}
	axis(f, y + 2, seconds, false);
	y += 34;
	/* legends: the VMs (guest, hypervisor), host threads, then the vCPU states */
	for (int v = 0; v < g->nvm; v++) {
		snprintf(label, sizeof(label), "%s: guest code", g->vm_names[v]);
		plot_legend_item(f, GANTT_LEFT, y, vm_guest[v % NR_VM_COLORS], label);
		snprintf(label, sizeof(label), "%s: hypervisor", g->vm_names[v]);
		plot_legend_item(f, GANTT_LEFT + 300, y, vm_hyp[v % NR_VM_COLORS], label);
		y += 18;
	}
	plot_legend_item(f, GANTT_LEFT, y, HOST_COLOR, "a host thread (no colour: idle, or not recorded)");
	y += 24;
	for (unsigned int s = 0; s < VCPU_NR_STATES; s++)
		plot_legend_item(f, GANTT_LEFT + 120.0 * s, y, plot_state_color(s), vcpu_state_name(s));
	*height = y + 16;
}

int plot_gantt(struct sht_reader *r, const char *file, uint64_t t1, uint64_t t2, const struct summary_filter *filter,
	       const char *path, struct vcpustat_error *err)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	struct gantt g = { .t1 = t1, .t2 = t2 };
	char *body = NULL, *doc = NULL, title[512], a[64], b[64];
	size_t body_len = 0, doc_len = 0, ncpu;
	double height = 0;
	FILE *f;
	int e = 0;

	if (t2 <= t1)
		return verror(err, -EINVAL, "%s: the window is empty", file);
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm))
		g.nvm++;
	g.vm_names = calloc((size_t)g.nvm + 1, sizeof(*g.vm_names));
	if (!g.vm_names)
		return verror(err, -ENOMEM, "out of memory");
	g.nvm = 0;
	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm))
		snprintf(g.vm_names[g.nvm++], sizeof(g.vm_names[0]), "%s", sht_attr_name(r, vm));
	g.filter = filter;
	e = pcpu_walk(r, t1, t2, filter ? &filter->pcpus : NULL, cpu_visit, &g, err);
	if (e == -ENOMEM)
		verror(err, e, "out of memory");
	ncpu = g.nr_rows;
	if (ncpu > 1)
		qsort(g.rows, ncpu, sizeof(*g.rows), by_cpu);
	if (!e)
		e = vcpu_rows(&g, r, filter, err);
	if (e)
		goto out;
	sht_format_time(r, t1, false, a, sizeof(a));
	sht_format_time(r, t2, false, b, sizeof(b));
	snprintf(title, sizeof(title), "%.200s: %s .. %s (%.3f s)", file, a, b, (double)(t2 - t1) / 1e9);
	f = open_memstream(&body, &body_len);
	if (!f) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	draw(f, &g, title, &height);
	if (fclose(f) || !(f = open_memstream(&doc, &doc_len))) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" style=\"font-family:sans-serif;background:#fff\">\n<title>vcpustat timeline: ",
		GANTT_LEFT + GANTT_W + 30, height, GANTT_LEFT + GANTT_W + 30, height);
	xml_escape(f, title);
	fprintf(f, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" style=\"fill:#fff\"/>\n",
		GANTT_LEFT + GANTT_W + 30, height);
	fwrite(body, 1, body_len, f);
	fputs("</svg>\n", f);
	if (fclose(f)) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	e = outfile_write(path, doc, doc_len, err);
out:
	for (size_t i = 0; i < g.nr_rows; i++)
		free(g.rows[i].px);
	free(g.rows);
	free(g.vm_names);
	free(body);
	free(doc);
	return e;
}
