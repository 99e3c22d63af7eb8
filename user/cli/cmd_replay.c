// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vcpustat replay: build a State History Tree from a capture file by running
 * the kernel's event handler (include/vcpustat_handler.h) in user space.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "record/record.h"
#include "cli/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s replay CAPTURE.vcap -o FILE.sht [-q]\n"
		"\n"
		"Run the events of a capture (`vcpustat record --capture`) through the same\n"
		"state machine and handler the kernel runs, in user space, and write the\n"
		"State History Tree: the same file `vcpustat record` wrote live.\n"
		"\n"
		"  -o, --output FILE   the .sht file to write\n"
		"  -q, --quiet         no summary\n",
		cli_prog);
	cli_usage_exit_status(f);
}

struct replay_ctx {
	struct capture_reader *cap;
	struct recorder *rec;
	struct vcpustat_error err;
};

static int on_record(void *ctx, const struct vcpustat_record *rec)
{
	struct replay_ctx *c = ctx;

	return recorder_add(c->rec, rec, &c->err);
}

/* The value of "key=value" in the capture's metadata text (copied to buf), or NULL. */
static const char *meta_value(const char *meta, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = meta; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t llen = nl ? (size_t)(nl - p) : strlen(p);

		if (llen > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			snprintf(buf, len, "%.*s", (int)(llen - klen - 1), p + klen + 1);
			return buf;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

#define MAX_META 32

/* The capture's metadata lines as the recording's metadata, plus source=replay. */
struct replay_meta {
	struct sht_meta meta[MAX_META];
	char key[MAX_META][64], value[MAX_META][512];
	size_t n;
};

static void replay_meta_fill(struct replay_meta *m, const char *text)
{
	m->n = 0;
	for (const char *p = text; p && *p && m->n < MAX_META - 1;) {
		const char *nl = strchr(p, '\n'), *eq;
		size_t llen = nl ? (size_t)(nl - p) : strlen(p);

		eq = memchr(p, '=', llen);
		if (eq && eq > p) {
			snprintf(m->key[m->n], sizeof(m->key[0]), "%.*s", (int)(eq - p), p);
			snprintf(m->value[m->n], sizeof(m->value[0]), "%.*s", (int)(llen - (size_t)(eq - p) - 1), eq + 1);
			m->n++;
		}
		p = nl ? nl + 1 : NULL;
	}
	snprintf(m->key[m->n], sizeof(m->key[0]), "source");
	snprintf(m->value[m->n], sizeof(m->value[0]), "replay");
	m->n++;
	for (size_t i = 0; i < m->n; i++)
		m->meta[i] = (struct sht_meta){ m->key[i], m->value[i] };
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct replay_options po = { 0 };
	struct recorder_opts ro = { 0 };
	struct replay_ctx c = { 0 };
	static struct replay_meta meta;
	const struct capture_info *info;
	const uint64_t (*lost)[2];
	struct replay *rp = NULL;
	struct vcpustat_event ev;
	const char *out = NULL;
	size_t nlost, li = 0;
	unsigned long long events = 0;
	uint64_t last = 0, end, trunc, trunc_off;
	bool quiet = false;
	int opt, e, ret = CLI_FAIL;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return CLI_OK;
		default: usage(stderr); return CLI_USAGE;
		}
	}
	if (optind != argc - 1 || !out) {
		cli_err("replay: one capture file and -o FILE.sht are needed (see --help)");
		return CLI_USAGE;
	}
	if (outfile_refuse_input(out, (const char *const *)&argv[optind], 1, &c.err)) {
		cli_err("replay: -o %s", c.err.msg);
		return CLI_USAGE;
	}
	if (capture_open(&c.cap, argv[optind], &c.err)) {
		cli_err("%s", c.err.msg);
		return CLI_FAIL;
	}
	info = capture_get_info(c.cap);
	{
		char v[64];

		po.record_level = meta_value(info->meta, "level", v, sizeof(v)) && !strcmp(v, "full") ?
					  VCPUSTAT_LEVEL_FULL : VCPUSTAT_LEVEL_VCPU;
		po.nr_cpus = meta_value(info->meta, "cpus", v, sizeof(v)) ? (unsigned int)atoi(v) : 0;
	}
	po.on_record = on_record;
	po.ctx = &c;
	if (replay_new(&rp, &po)) {
		cli_err("out of memory");
		goto out;
	}
	ro.path = out;
	ro.atomic = true; /* a failed replay leaves no half file, and an existing one as it was */
	ro.mono_start_ns = info->mono_start_ns;
	ro.real_start_ns = info->real_start_ns;
	replay_meta_fill(&meta, info->meta);
	ro.meta = meta.meta;
	ro.nmeta = meta.n;
	capture_name_recorder(c.cap, &ro);
	if (recorder_open(&c.rec, &ro, &c.err)) {
		cli_err("%s", c.err.msg);
		goto out;
	}
	lost = capture_lost(c.cap, &nlost);
	while ((e = capture_next(c.cap, &ev, &c.err)) == 1) {
		for (; li < nlost && lost[li][0] <= ev.ts; li++)
			if (recorder_lost(c.rec, lost[li][0], lost[li][1], &c.err)) {
				cli_err("%s", c.err.msg);
				goto out;
			}
		if (replay_event(rp, &ev)) {
			cli_err("%s", c.err.msg);
			goto out;
		}
		events++;
		if (ev.ts > last)
			last = ev.ts;
	}
	if (e < 0) {
		cli_err("%s", c.err.msg);
		goto out;
	}
	for (; li < nlost; li++)
		if (recorder_lost(c.rec, lost[li][0], lost[li][1], &c.err)) {
			cli_err("%s", c.err.msg);
			goto out;
		}
	trunc = capture_truncated(c.cap, &trunc_off);
	if (trunc)
		cli_warn("%s: truncated: %llu bytes at offset %llu after the last complete block were ignored "
			 "(the recording was cut short)",
			 argv[optind], (unsigned long long)trunc, (unsigned long long)trunc_off);
	end = capture_end(c.cap) ? capture_end(c.cap) : last;
	{
		struct recorder_stats st;

		if (recorder_finish(&c.rec, end, &st, &c.err)) {
			cli_err("%s", c.err.msg);
			goto out;
		}
		if (!quiet)
			fprintf(stderr, "%s: %llu events -> %llu records -> %llu intervals in %s\n", cli_prog, events,
				(unsigned long long)st.records, (unsigned long long)st.intervals, out);
	}
	ret = CLI_OK;
out:
	if (c.rec)
		recorder_close(c.rec, last, NULL);
	replay_free(rp);
	capture_close_reader(c.cap);
	return ret;
}
