// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* export_run.c - the runs of `vcpustat export`: a window of a recording, or the live maps. */
#include "cli/cli.h"
#include "export/export.h"

int export_file(struct export_args *x)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	uint64_t t1, t2;
	size_t nr_vms;
	int ret = cli_open_window(x->file, x->from, x->to, &r, &t1, &t2);

	if (!ret && (ret = cli_filter_check("export", x->file, r, &x->filter)))
		sht_close(r);
	if (ret)
		return ret;
	if (export_window(r, x->file, t1, t2, &x->filter, &x->w, &nr_vms, &err)) {
		cli_err("%s", err.msg);
		ret = CLI_FAIL;
	} else if (!(ret = cli_filter_none_kept("export", x->file, &x->filter, nr_vms))) {
		ret = cli_vm_none_matched(x->file, r, &x->filter, nr_vms);
	}
	sht_close(r);
	return ret;
}

int export_live(const struct export_args *x)
{
	struct vcpustat_options opts = { .record_level = VCPUSTAT_LEVEL_NONE, .address_spaces = x->address_spaces };
	struct vcpustat_error err = { 0 };
	struct metrics_live live;
	struct vcpustat *vs;
	int ret = cli_open_live(&vs, &opts, x->verbose, false);

	if (ret)
		return ret;
	if (metrics_live_init(&live, vs, &x->w.mo, &x->filter)) {
		cli_err("out of memory");
		vcpustat_close(vs);
		return CLI_FAIL;
	}
	cli_catch_stop(true);
	if (metrics_live_export(&live, x->interval, x->every, &cli_stop, x->w.fmt, x->w.out, &err)) {
		cli_err("%s", err.msg);
		ret = CLI_FAIL;
	}
	metrics_live_free(&live);
	vcpustat_close(vs);
	return ret;
}
