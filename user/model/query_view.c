// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What `vcpustat query` shows of an SHT file, as text or as a JSON document:
 * the file itself (query_show_info), every selected attribute's value at a
 * time (query_show_at), and the intervals of the selected attributes in a
 * time range (query_show_range). State attributes show vCPU state names.
 * The selection: query_select_path (--path), query_filter and query_narrow
 * (the filters).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "model/query_view.h"
#include "model/recording.h"

static const char *value_name(const struct sht_reader *r, uint32_t attr, const struct sht_value *v)
{
	const char *name = sht_attr_name(r, attr);

	if (v->type == SHT_INT && name && !strcmp(name, "state") && v->i >= 0 && v->i < VCPU_NR_STATES)
		return vcpu_state_name(v->i);
	return NULL;
}

static void fmt_value(const struct sht_reader *r, uint32_t attr, const struct sht_value *v, char *buf, size_t len)
{
	const char *name = value_name(r, attr, v);

	if (v->type == SHT_NULL)
		snprintf(buf, len, "-");
	else if (name)
		snprintf(buf, len, "%s", name);
	else if (v->type == SHT_INT)
		snprintf(buf, len, "%lld", (long long)v->i);
	else
		snprintf(buf, len, "%s", v->s);
}

static json_t *json_value(const struct sht_reader *r, uint32_t attr, const struct sht_value *v, json_t *o)
{
	const char *name = value_name(r, attr, v);

	if (v->type == SHT_NULL)
		json_object_set_new(o, "value", json_null());
	else if (v->type == SHT_INT)
		json_object_set_new(o, "value", json_integer(v->i));
	else
		json_object_set_new(o, "value", json_string(v->s));
	if (name)
		json_object_set_new(o, "name", json_string(name));
	return o;
}

/* {"ns", "wall"}; a file without a wall clock: "wall" null and the trace's own clock */
static json_t *json_time(const struct sht_reader *r, uint64_t t, bool utc)
{
	char buf[64];

	if (!sht_has_wall_clock(r)) {
		sht_format_trace_clock(r, t, buf, sizeof(buf));
		return json_pack("{s:I, s:n, s:s}", "ns", (json_int_t)t, "wall", "trace_clock", buf);
	}
	sht_format_time(r, t, utc, buf, sizeof(buf));
	return json_pack("{s:I, s:s}", "ns", (json_int_t)t, "wall", buf);
}

/* " (2026-11-22T14:03:07.1 .. 2026-11-22T14:03:08.2)", or the trace clock's " (trace clock 1000.1 .. 1001.2 s, ...)" */
static void clock_range(const struct sht_reader *r, uint64_t t1, uint64_t t2, bool utc, char *buf, size_t len)
{
	char a[64], b[64];

	if (!sht_has_wall_clock(r)) {
		sht_format_trace_clock(r, t1, a, sizeof(a));
		sht_format_trace_clock(r, t2, b, sizeof(b));
		snprintf(buf, len, "trace clock %s%s%s s, no wall clock", a, t1 == t2 ? "" : " .. ", t1 == t2 ? "" : b);
		return;
	}
	sht_format_time(r, t1, utc, a, sizeof(a));
	sht_format_time(r, t2, utc, b, sizeof(b));
	snprintf(buf, len, "%s%s%s", a, t1 == t2 ? "" : " .. ", t1 == t2 ? "" : b);
}

int query_show_info(FILE *f, json_t **doc, struct sht_reader *r, const char *file, bool utc, struct vcpustat_error *err)
{
	const struct sht_info *in = sht_get_info(r);
	char s1[32], s2[32], w[160];
	size_t i;

	if (doc) {
		json_t *meta = json_object();

		for (i = 0; i < sht_nmeta(r); i++)
			json_object_set_new(meta, sht_meta_at(r, i)->key, json_string(sht_meta_at(r, i)->value));
		*doc = json_pack("{s:s, s:i, s:b, s:b, s:o, s:o, s:I, s:I, s:I, s:i, s:i, s:I, s:I, s:o}", "file", file,
				 "version", (int)in->version, "closed", in->closed, "recovered", in->recovered, "start",
				 json_time(r, in->start, utc), "end", json_time(r, in->end, utc), "mono_start_ns",
				 (json_int_t)in->mono_start_ns, "real_start_ns", (json_int_t)in->real_start_ns,
				 "intervals", (json_int_t)in->nintervals, "attributes", (int)in->nattrs, "strings",
				 (int)in->nstrings, "nodes", (json_int_t)in->nodes, "clamped", (json_int_t)in->nclamped,
				 "metadata", meta);
		return *doc ? 0 : verror(err, -ENOMEM, "out of memory");
	}
	fmt_secs(in->start, s1, sizeof(s1));
	fmt_secs(in->end, s2, sizeof(s2));
	clock_range(r, in->start, in->end, utc, w, sizeof(w));
	fprintf(f, "%s: SHT version %u, %s\n", file, in->version,
		in->closed ? (in->recovered ? "repaired (history ends at its last sealed leaf)" : "closed cleanly")
			   : "not closed cleanly (history ends at its last sealed leaf)");
	fprintf(f, "  time        %s .. %s s  (%s)\n", s1, s2, w);
	fprintf(f, "  intervals   %llu in %llu nodes of %u bytes; %u attributes, %u strings; %llu clamped timestamps\n",
		(unsigned long long)in->nintervals, (unsigned long long)in->nodes, in->node_size, in->nattrs,
		in->nstrings, (unsigned long long)in->nclamped);
	for (i = 0; i < sht_nmeta(r); i++)
		fprintf(f, "  %-11s %s\n", sht_meta_at(r, i)->key, sht_meta_at(r, i)->value);
	return 0;
}

int query_show_at(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t, const uint8_t *want,
		  bool utc, struct vcpustat_error *err)
{
	uint32_t n = sht_nattrs(r), a;
	struct sht_interval *out = calloc(n ? n : 1, sizeof(*out));
	size_t width = 4;
	char val[64], s1[32], s2[32], wall[160];
	json_t *arr;

	if (!out)
		return verror(err, -ENOMEM, "out of memory");
	if (sht_query_at(r, t, want, out, err)) {
		free(out);
		return -EIO;
	}
	/* shown: selected attributes that hold a value or have no children */
	if (doc) {
		arr = json_array();
		for (a = 0; a < n; a++) {
			json_t *o;

			if ((want && !want[a]) ||
			    (out[a].value.type == SHT_NULL && sht_attr_first_child(r, a) != SHT_NO_ATTR))
				continue;
			o = json_pack("{s:s}", "path", sht_attr_path(r, a));
			json_value(r, a, &out[a].value, o);
			if (out[a].value.type != SHT_NULL) {
				json_object_set_new(o, "start", json_integer((json_int_t)out[a].start));
				json_object_set_new(o, "end", json_integer((json_int_t)out[a].end));
			}
			json_array_append_new(arr, o);
		}
		*doc = json_pack("{s:s, s:o, s:o}", "file", file, "time", json_time(r, t, utc), "values", arr);
		free(out);
		return *doc ? 0 : verror(err, -ENOMEM, "out of memory");
	}
	for (a = 0; a < n; a++)
		if (strlen(sht_attr_path(r, a)) > width)
			width = strlen(sht_attr_path(r, a));
	fmt_secs(t, s1, sizeof(s1));
	clock_range(r, t, t, utc, wall, sizeof(wall));
	fprintf(f, "%s at %s s (%s)\n", file, s1, wall);
	fprintf(f, "%-*s  %-12s %-20s %s\n", (int)width, "ATTRIBUTE", "VALUE", "SINCE (s)", "UNTIL (s)");
	for (a = 0; a < n; a++) {
		if ((want && !want[a]) || (out[a].value.type == SHT_NULL && sht_attr_first_child(r, a) != SHT_NO_ATTR))
			continue;
		fmt_value(r, a, &out[a].value, val, sizeof(val));
		if (out[a].value.type == SHT_NULL) {
			fprintf(f, "%-*s  %s\n", (int)width, sht_attr_path(r, a), val);
			continue;
		}
		fmt_secs(out[a].start, s1, sizeof(s1));
		fmt_secs(out[a].end, s2, sizeof(s2));
		fprintf(f, "%-*s  %-12s %-20s %s\n", (int)width, sht_attr_path(r, a), val, s1, s2);
	}
	free(out);
	return 0;
}

int query_show_range(FILE *f, json_t **doc, struct sht_reader *r, const char *file, const uint8_t *want, uint64_t t1,
		     uint64_t t2, bool utc, struct vcpustat_error *err)
{
	struct sht_interval *iv;
	uint32_t n = sht_nattrs(r), a;
	size_t k = 0, count;
	char val[64], s1[32], s2[32], s3[32];
	json_t *attrs = NULL;

	if (sht_query_range(r, SHT_NO_ATTR, want, t1, t2, &iv, &count, err))
		return -EIO;
	if (doc)
		attrs = json_array();
	else
		fprintf(f, "%s from %s to %s s\n", file, (fmt_secs(t1, s1, sizeof(s1)), s1),
			(fmt_secs(t2, s2, sizeof(s2)), s2));
	for (a = 0; a < n; a++) { /* results are sorted by attribute */
		size_t first = k;
		json_t *list = NULL;

		if (!want[a])
			continue;
		while (k < count && iv[k].attr == a)
			k++;
		if (doc) {
			list = json_array();
			for (size_t i = first; i < k; i++) {
				json_t *o =
				    json_pack("{s:I, s:I, s:I}", "start", (json_int_t)iv[i].start, "end",
					      (json_int_t)iv[i].end, "duration", (json_int_t)(iv[i].end - iv[i].start));

				json_array_append_new(list, json_value(r, a, &iv[i].value, o));
			}
			json_array_append_new(attrs,
					      json_pack("{s:s, s:o}", "path", sht_attr_path(r, a), "intervals", list));
			continue;
		}
		if (first == k && sht_attr_first_child(r, a) != SHT_NO_ATTR)
			continue; /* an inner attribute without values */
		fprintf(f, "\n%s: %zu interval%s\n", sht_attr_path(r, a), k - first, k - first == 1 ? "" : "s");
		if (first == k)
			continue;
		fprintf(f, "  %-20s %-20s %-20s %s\n", "START (s)", "END (s)", "DURATION (s)", "VALUE");
		for (size_t i = first; i < k; i++) {
			fmt_secs(iv[i].start, s1, sizeof(s1));
			fmt_secs(iv[i].end, s2, sizeof(s2));
			fmt_secs(iv[i].end - iv[i].start, s3, sizeof(s3));
			fmt_value(r, a, &iv[i].value, val, sizeof(val));
			fprintf(f, "  %-20s %-20s %-20s %s\n", s1, s2, s3, val);
		}
	}
	free(iv);
	if (doc) {
		*doc = json_pack("{s:s, s:o, s:o, s:o}", "file", file, "from", json_time(r, t1, utc), "to",
				 json_time(r, t2, utc), "attributes", attrs);
		if (!*doc)
			return verror(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- the filters of `vcpustat query` (--vm, --vcpu, --tid, --pcpu) ---- */

/* The vCPU or VM attribute at depth of a (its ancestor with depth components), or SHT_NO_ATTR. */
static uint32_t ancestor(struct sht_reader *r, uint32_t a, int depth_a, int depth)
{
	for (; a != SHT_NO_ATTR && depth_a > depth; depth_a--)
		a = sht_attr_parent(r, a);
	return a;
}

/* Does the vCPU vc (/vms/<vm>/vcpus/<n>) have a pcpu in cpus at some time of [t1, t2]? */
static bool vcpu_was_on(struct sht_reader *r, uint32_t vc, const struct id_set *cpus, uint64_t t1, uint64_t t2)
{
	struct sht_interval *iv = NULL;
	uint32_t pc = sht_attr_child(r, vc, "pcpu");
	bool on = false;
	size_t n = 0;

	if (pc == SHT_NO_ATTR || sht_query_range(r, pc, NULL, t1, t2, &iv, &n, NULL))
		return false;
	for (size_t i = 0; i < n && !on; i++)
		on = iv[i].value.type == SHT_INT && iv[i].value.i >= 0 && id_set_has(cpus, (uint32_t)iv[i].value.i);
	free(iv);
	return on;
}

/*
 * What query_keeps() found of a VM or vCPU attribute, per attribute id (a
 * file's attributes are read once, not once per child): 0 not asked yet,
 * 1 kept, 2 not.
 */
struct keep_cache {
	uint8_t *vm, *tid, *pcpu;
};

static bool cached(uint8_t *c, bool (*ask)(void *), void *ctx)
{
	if (!*c)
		*c = ask(ctx) ? 1 : 2;
	return *c == 1;
}

struct keep_ask {
	struct sht_reader *r;
	const struct summary_filter *f;
	uint32_t attr;
	const char *name;
	uint64_t t1, t2;
};

static bool ask_vm(void *ctx)
{
	struct keep_ask *k = ctx;

	return summary_filter_wants(k->f, k->name,
				    (uint32_t)report_first_int(k->r, sht_attr_child(k->r, k->attr, "pid"), 0));
}

static bool ask_tid(void *ctx)
{
	struct keep_ask *k = ctx;

	return id_set_has(&k->f->tids, (uint32_t)report_first_int(k->r, sht_attr_child(k->r, k->attr, "tid"), 0));
}

static bool ask_pcpu(void *ctx)
{
	struct keep_ask *k = ctx;

	return vcpu_was_on(k->r, k->attr, &k->f->pcpus, k->t1, k->t2);
}

/* Does f keep the attribute a (every filter given accepts it)? */
static bool query_keeps(struct sht_reader *r, const struct summary_filter *f, uint32_t a, uint64_t t1, uint64_t t2,
			struct keep_cache *kc)
{
	char path[512], *comp[5] = { 0 }, *save = NULL;
	int depth = 0;
	bool vcpu_path, vm_path, cpu_path, thread_path;
	uint32_t vc;

	snprintf(path, sizeof(path), "%s", sht_attr_path(r, a));
	for (char *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save), depth++)
		if (depth < 5)
			comp[depth] = c;
	vm_path = depth >= 2 && !strcmp(comp[0], "vms");
	vcpu_path = vm_path && depth >= 4 && !strcmp(comp[2], "vcpus");
	cpu_path = depth >= 3 && !strcmp(comp[0], "host") && !strcmp(comp[1], "cpus");
	thread_path = depth >= 3 && !strcmp(comp[0], "host") && !strcmp(comp[1], "threads");
	if (f->nr_vms) {
		struct keep_ask k = { r, f, ancestor(r, a, depth, 2), vm_path ? comp[1] : "" };

		if (!vm_path || k.attr == SHT_NO_ATTR || !cached(&kc->vm[k.attr], ask_vm, &k))
			return false;
	}
	if (f->vcpus.n && !(vcpu_path && id_set_has(&f->vcpus, (uint32_t)strtoul(comp[3], NULL, 10))))
		return false;
	vc = vcpu_path ? ancestor(r, a, depth, 4) : SHT_NO_ATTR;
	if (f->tids.n && !(thread_path && id_set_has(&f->tids, (uint32_t)strtoul(comp[2], NULL, 10)))) {
		struct keep_ask k = { r, f, vc };

		if (vc == SHT_NO_ATTR || !cached(&kc->tid[vc], ask_tid, &k))
			return false;
	}
	if (f->pcpus.n && !(cpu_path && id_set_has(&f->pcpus, (uint32_t)strtoul(comp[2], NULL, 10)))) {
		struct keep_ask k = { r, f, vc, NULL, t1, t2 };

		if (vc == SHT_NO_ATTR || !cached(&kc->pcpu[vc], ask_pcpu, &k))
			return false;
	}
	return true;
}

int query_filter(struct sht_reader *r, const struct summary_filter *f, uint64_t t1, uint64_t t2, uint8_t *want,
		 size_t *kept, struct vcpustat_error *err)
{
	uint32_t n = sht_nattrs(r);
	struct keep_cache kc = { calloc(n + 1, 1), calloc(n + 1, 1), calloc(n + 1, 1) };
	int e = 0;

	*kept = 0;
	if (!kc.vm || !kc.tid || !kc.pcpu)
		e = verror(err, -ENOMEM, "out of memory");
	for (uint32_t a = 0; a < n && !e; a++) {
		if (want[a] && (f->nr_vms || summary_filter_narrows(f)) && !query_keeps(r, f, a, t1, t2, &kc))
			want[a] = 0;
		*kept += want[a] != 0;
	}
	free(kc.vm);
	free(kc.tid);
	free(kc.pcpu);
	return e;
}

int query_select_path(struct sht_reader *r, const char *path, uint8_t **want, struct vcpustat_error *err)
{
	*want = NULL;
	if (!path)
		return 0;
	*want = calloc(sht_nattrs(r) ? sht_nattrs(r) : 1, 1);
	if (!*want)
		return verror(err, -ENOMEM, "out of memory");
	if (sht_select(r, path, *want))
		return verror(err, -ENOENT, "no attribute %s", path);
	return 0;
}

int query_narrow(struct sht_reader *r, const char *file, const struct summary_filter *f, uint64_t t1, uint64_t t2,
		 uint8_t **want, struct vcpustat_error *err)
{
	char text[512];
	size_t kept;
	int e;

	if (!f->nr_vms && !summary_filter_narrows(f))
		return 0;
	if (!*want) { /* every attribute, for the filters to clear */
		*want = malloc(sht_nattrs(r) + 1);
		if (!*want)
			return verror(err, -ENOMEM, "out of memory");
		memset(*want, 1, sht_nattrs(r) + 1);
	}
	e = query_filter(r, f, t1, t2, *want, &kept, err);
	if (e || kept)
		return e;
	return verror(err, -ENOENT, "%s: no attribute of %s matches these filters together%s",
		      summary_filter_text(f, text, sizeof(text))[0] ? text : "--vm", file,
		      f->pcpus.n ? " (at that time)" : "");
}

int query_times(struct sht_reader *r, const char *file, const char *at, const char *from, const char *to,
		uint64_t *t1, uint64_t *t2, struct vcpustat_error *err)
{
	const struct sht_info *info = sht_get_info(r);
	struct vcpustat_error why = { 0 };

	*t1 = info->start;
	*t2 = info->end;
	if (at && sht_parse_time(r, at, t1, &why))
		return verror(err, -EINVAL, "--at: %s", why.msg);
	if (at && *t1 > info->end)
		return verror(err, -EINVAL, "--at %s: after the end of the history of %s (%llu ns since the start)", at,
			      file, (unsigned long long)info->end);
	if (at) {
		*t2 = *t1;
		return 0;
	}
	if ((from && sht_parse_time(r, from, t1, err)) || (to && sht_parse_time(r, to, t2, err)))
		return -EINVAL; /* err says which */
	if (*t1 > *t2)
		return verror(err, -ERANGE, "--from %s is after --to %s", from ? from : "(start)", to ? to : "(end)");
	return 0;
}
