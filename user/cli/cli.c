// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include "cli/cli.h"
#include "model/recording.h"
#include "util/jsonw.h"
#include "sht/sht.h"
#include "record/record.h"

bool cli_json;
enum cli_json_form cli_json_given;
bool cli_pretty;
const char *cli_prog = "vcpustat";

static void vreport(const char *kind, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (cli_json && kind[0] == 'e') {
		cli_json_print(json_pack("{s:s}", "error", msg), CLI_JSON_LINE);
		return;
	}
	fprintf(stderr, "%s: %s%s\n", cli_prog, kind, msg);
}

/*
 * The text of a document, written into a buffer kept from one document to the
 * next (`top -j` prints one per refresh), then out in one fwrite(): json_dumpf()
 * writes each token with an fwrite(), which locks stdout every time (a third of
 * the dump's CPU at 10,000 vCPUs: bench/RESULTS.md, "Refresh at scale").
 */
int cli_json_print_text(struct jw *w)
{
	int e = jw_error(w);

	if (!e) {
		jw_raw(w, "\n", 1);
		e = jw_text(w) ? 0 : jw_error(w);
	}
	if (!e && fwrite(jw_text(w), 1, jw_len(w), stdout) != jw_len(w))
		e = -EIO;
	fflush(stdout);
	return e;
}

int cli_json_print(json_t *doc, enum cli_json_style style)
{
	static struct jw w;
	size_t flags = style == CLI_JSON_DOC || cli_pretty ? JSON_INDENT(2) | JSON_PRESERVE_ORDER : JSON_COMPACT;
	int e;

	if (!doc)
		return -ENOMEM;
	jw_reset(&w);
	e = json_dump_callback(doc, jw_dump_callback, &w, flags | JSON_REAL_PRECISION(17)) ? -ENOMEM : 0;
	json_decref(doc);
	return e ? e : cli_json_print_text(&w);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return CLI_USAGE;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

static bool log_verbose;

static void log_stderr(int level, const char *msg)
{
	if (level == VCPUSTAT_LOG_WARN || log_verbose)
		fprintf(stderr, "%s: %s%s\n", cli_prog, level == VCPUSTAT_LOG_WARN ? "" : "libbpf: ", msg);
}

int cli_open_live(struct vcpustat **out, const struct vcpustat_options *opts, bool verbose, bool quiet)
{
	const struct vcpustat_prog *progs;
	struct vcpustat *vs;
	char msg[256];
	size_t n, i;
	int err;

	*out = NULL;
	err = vcpustat_check_privileges(msg, sizeof(msg));
	if (err) {
		cli_err("%s", msg);
		return err == -EPERM ? CLI_NOPERM : CLI_FAIL;
	}
	/* libbpf's own warnings are noise unless asked for: our messages say what failed */
	vcpustat_set_log(verbose ? log_stderr : NULL, VCPUSTAT_LOG_DEBUG);
	log_verbose = verbose;
	err = vcpustat_open(&vs, opts);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			cli_err("cannot load the BPF programs: %s (needs CAP_BPF and CAP_PERFMON, or root)",
				strerror(-err));
		else
			cli_err("cannot load the BPF programs: %s (run with -v to see libbpf's log)", strerror(-err));
		return err == -EPERM || err == -EACCES ? CLI_NOPERM : CLI_FAIL;
	}
	err = vcpustat_attach(vs);
	n = vcpustat_progs(vs, &progs);
	if (err < 0) {
		for (i = 0; i < n; i++)
			if (progs[i].required && progs[i].status == VCPUSTAT_PROG_FAILED)
				cli_err("%s: %s", progs[i].name, progs[i].message);
		vcpustat_close(vs);
		return err == -EPERM || err == -EACCES ? CLI_NOPERM : CLI_FAIL;
	}
	if (!quiet)
		for (i = 0; i < n; i++)
			if (progs[i].status == VCPUSTAT_PROG_FAILED || progs[i].status == VCPUSTAT_PROG_MISSING)
				cli_warn("%s: %s; continuing without it", progs[i].tracepoint, progs[i].message);
	err = vcpustat_seed(vs, NULL);
	if (err < 0 && !quiet)
		cli_warn("cannot look for running VMs in /proc: %s", strerror(-err));
	*out = vs;
	return 0;
}

bool cli_blind(unsigned int problems, const struct health *h, const char *what)
{
	char msg[1024];

	if (!problems)
		return false;
	health_message(h, NULL, NULL, msg, sizeof(msg));
	cli_warn("%s is blind to part of this host: %s (docs/vcpustat.md, \"Health\"; `%s probe` says what this "
		 "kernel gives)",
		 what, msg[0] ? msg : "see the health checks", cli_prog);
	return true;
}

volatile sig_atomic_t cli_stop;

static void on_stop(int sig)
{
	cli_stop = 1;
}

void cli_catch_stop(bool pipe_too)
{
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	if (pipe_too)
		signal(SIGPIPE, on_stop);
}

int cli_parse_long(const char *opt, const char *arg, long min, long max, const char *what, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < min || v > max) {
		cli_err("%s %s: a number of %s, %ld to %ld", opt, arg, what, min, max);
		return CLI_USAGE;
	}
	*out = v;
	return 0;
}

int cli_add_vm(struct summary_filter *f, const char **names, size_t max, const char *arg)
{
	if (f->nr_vms >= max) {
		cli_err("--vm: at most %zu VMs", max);
		return CLI_USAGE;
	}
	names[f->nr_vms++] = arg;
	f->vms = names;
	return 0;
}

int cli_vm_none_matched(const char *file, struct sht_reader *r, const struct summary_filter *f, size_t nr_vms)
{
	char list[512] = "";
	size_t len = 0, n = 0;
	uint32_t vms, a;

	if (!f->nr_vms || nr_vms)
		return 0;
	if (!sht_attr_lookup(r, "/vms", &vms))
		for (a = sht_attr_first_child(r, vms); a != SHT_NO_ATTR && len < sizeof(list) - 1;
		     a = sht_attr_next_sibling(r, a), n++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", n ? ", " : "", sht_attr_name(r, a));
	cli_err("--vm %s%s: no VM of %s has that name or pid (%s%s)", f->vms[0], f->nr_vms > 1 ? " ..." : "", file,
		n ? "its VMs: " : "it has no VM", list);
	return CLI_USAGE;
}

int cli_parse_meta(char *arg, const char *const *reserved, const char **key, const char **value)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg) {
		cli_err("--meta %s: KEY=VALUE expected", arg);
		return CLI_USAGE;
	}
	*eq = '\0';
	for (const char *p = arg; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-.", *p)) {
			cli_err("--meta %s=...: a key is letters, digits, '_', '-' and '.'", arg);
			return CLI_USAGE;
		}
	if (record_meta_reserved(arg, reserved)) {
		cli_err("--meta %s=...: vcpustat writes '%s' itself", arg, arg);
		return CLI_USAGE;
	}
	*key = arg;
	*value = eq + 1;
	return 0;
}

int cli_add_meta(struct record_meta *m, char *arg, const char *const *reserved, size_t max)
{
	const char *key, *value;

	if (m->n >= max) {
		cli_err("--meta: at most %zu", max);
		return CLI_USAGE;
	}
	if (cli_parse_meta(arg, reserved, &key, &value))
		return CLI_USAGE;
	return record_meta_add(m, key, value) ? CLI_USAGE : 0;
}

/* "64M" -> bytes; -1 if malformed. */
static long long parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	long long mult = 1;

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mult = 1ll << 10; end++; break;
	case 'm': case 'M': mult = 1ll << 20; end++; break;
	case 'g': case 'G': mult = 1ll << 30; end++; break;
	default: return -1;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	return *end ? -1 : (long long)(v * (double)mult);
}

/* 65536 -> "64K" */
static const char *fmt_size(long long v, char *buf, size_t len)
{
	static const char unit[] = "\0KMG";
	int u = 0;

	while (u < 3 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%lld%.1s", v, &unit[u]);
	return buf;
}

int cli_parse_size(const char *opt, const char *arg, long long min, long long max, long long *size)
{
	long long v = parse_size(arg);
	char a[32], b[32];

	if (v < min || (max && v > max)) {
		if (max)
			cli_err("%s %s: a size from %s to %s (K, M, G suffixes)", opt, arg, fmt_size(min, a, sizeof(a)),
				fmt_size(max, b, sizeof(b)));
		else
			cli_err("%s %s: a size of at least %s (K, M, G suffixes)", opt, arg, fmt_size(min, a, sizeof(a)));
		return CLI_USAGE;
	}
	*size = v;
	return 0;
}

int cli_open_window(const char *file, const char *from, const char *to, struct sht_reader **rp, uint64_t *t1,
		    uint64_t *t2)
{
	struct vcpustat_error err = { 0 };
	const struct sht_info *info;
	struct sht_reader *r;
	int ret = CLI_USAGE;

	*rp = NULL;
	if (sht_open(&r, file, &err)) {
		cli_err("%s", err.msg);
		return CLI_FAIL;
	}
	info = sht_get_info(r);
	*t1 = info->start;
	*t2 = info->recovered ? info->horizon : info->end;
	if (from && sht_parse_time(r, from, t1, &err)) {
		cli_err("--from: %s", err.msg);
		goto fail;
	}
	if (to && sht_parse_time(r, to, t2, &err)) {
		cli_err("--to: %s", err.msg);
		goto fail;
	}
	if (*t2 <= *t1) {
		uint64_t end = info->recovered ? info->horizon : info->end;

		if (end <= info->start) {
			cli_err("%s: the recording holds no history (its time range is empty%s)", file,
				info->recovered ? ": the writer sealed no node before it stopped" : "");
			ret = CLI_FAIL;
		} else if (from && to) {
			cli_err("%s: the window is empty (from %llu ns to %llu ns): --to must come after --from", file,
				(unsigned long long)*t1, (unsigned long long)*t2);
		} else if (from) {
			cli_err("--from %s: at or after the end of %s (it ends %.9f s after its start)", from, file,
				(double)(end - info->start) / 1e9);
		} else {
			cli_err("--to %s: at or before the start of %s", to, file);
		}
		goto fail;
	}
	*rp = r;
	return 0;
fail:
	sht_close(r);
	return ret;
}

void cli_fmt_secs(uint64_t ns, char *buf, size_t len)
{
	fmt_secs(ns, buf, len);
}

int cli_parse_duration(const char *opt, const char *arg, __u64 min_ns, __u64 max_ns, __u64 *ns)
{
	__u64 v;

	if (parse_duration_ns(arg, &v) || v < min_ns || (max_ns && v > max_ns)) {
		if (max_ns)
			cli_err("%s %s: a duration from %gs to %gs (1.5s, 250ms, 15m, 2h; a bare number is seconds)", opt,
				arg, min_ns / 1e9, max_ns / 1e9);
		else
			cli_err("%s %s: a duration of at least %gs (1.5s, 250ms, 15m, 2h; a bare number is seconds)", opt,
				arg, min_ns / 1e9);
		return CLI_USAGE;
	}
	*ns = v;
	return 0;
}

int cli_parse_seconds(const char *opt, const char *arg, double min_s, double max_s, double *secs)
{
	__u64 ns;
	int e = cli_parse_duration(opt, arg, (__u64)(min_s * 1e9 + 0.5), (__u64)(max_s * 1e9 + 0.5), &ns);

	if (!e)
		*secs = (double)ns / 1e9;
	return e;
}

void cli_usage_exit_status(FILE *out)
{
	fputs("\nExit status: 0 done; 1 doing it failed (a file, the kernel); 2 what was asked is wrong\n"
	      "(an option, a value, a time, a selection that matches nothing); 77 missing privileges.\n",
	      out);
}

int cli_filter_option(const struct cli_args *a, int key, const char *arg, struct summary_filter *f)
{
	static const char *const what[] = { "vCPU indexes such as 0,2-3", "thread ids such as 4242,4250",
					    "CPUs such as 0-3,8" };
	struct vcpustat_error err = { 0 };
	char echo[ERROR_ECHO_MAX + 32];
	struct id_set *set;
	const char *name;
	int k;

	if (key == CLI_OPT_CGROUP) {
		arg = arg ? arg : a->arg;
		if (f->nr_cgroups >= FILTER_MAX_CGROUPS)
			return cli_usage_error("%s: --cgroup %s: at most %d patterns", a->cmd->name,
					       error_echo(arg, echo, sizeof(echo)),
					       FILTER_MAX_CGROUPS);
		if (!arg[0])
			return cli_usage_error("%s: --cgroup: an empty pattern", a->cmd->name);
		f->cgroups[f->nr_cgroups++] = arg;
		return 0;
	}
	switch (key) {
	case CLI_OPT_VCPU: set = &f->vcpus, name = "vcpu", k = 0; break;
	case CLI_OPT_TID: set = &f->tids, name = "tid", k = 1; break;
	case CLI_OPT_PCPU: set = &f->pcpus, name = "pcpu", k = 2; break;
	default: return 1;
	}
	arg = arg ? arg : a->arg;
	if (id_set_add(set, arg, &err))
		return cli_usage_error("%s: --%s %s: %s (expected %s)", a->cmd->name, name,
				       error_echo(arg, echo, sizeof(echo)), err.msg, what[k]);
	return 0;
}

/* The VMs of r that --vm keeps. */
static size_t vms_kept(struct sht_reader *r, const struct summary_filter *f)
{
	uint32_t vms = sht_attr_child(r, SHT_NO_ATTR, "vms");
	size_t n = 0;

	for (uint32_t vm = report_first_child(r, vms); vm != SHT_NO_ATTR; vm = sht_attr_next_sibling(r, vm))
		n += summary_filter_wants(f, sht_attr_name(r, vm),
					  (uint32_t)report_first_int(r, sht_attr_child(r, vm, "pid"), 0));
	return n;
}

int cli_filter_check(const char *cmd, const char *file, struct sht_reader *r, struct summary_filter *f)
{
	struct vcpustat_error err = { 0 };
	int e;
	static struct filter_vms kept; /* f->vms, as long as the command runs */

	if (f->nr_vms && !vms_kept(r, f))
		return cli_vm_none_matched(file, r, f, 0);
	e = summary_filter_cgroups_to_vms(f, r, file, &kept, &err);
	if (!e)
		e = summary_filter_check(r, file, f, &err);
	if (!e)
		return 0;
	cli_err("%s: %s", cmd, err.msg);
	return e == -ENOENT ? CLI_USAGE : CLI_FAIL;
}

int cli_filter_none_kept(const char *cmd, const char *file, const struct summary_filter *f, size_t nr)
{
	char text[512];

	if (nr || !summary_filter_narrows(f))
		return 0;
	cli_err("%s: %s: nothing of %s in this window matches these filters together", cmd,
		summary_filter_text(f, text, sizeof(text)), file);
	return CLI_USAGE;
}
