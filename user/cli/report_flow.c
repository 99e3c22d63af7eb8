// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_flow.c - `vcpustat report --flow THREAD`: its options checked, then the flow of model/flow.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli.h"
#include "model/report.h"
#include "model/flow.h"

int report_flow(const char *file, const char *thread, const char *min_arg, const char *from, const char *to, bool json,
		const struct summary_filter *filter, bool other_view, bool top)
{
	struct vcpustat_error err = { 0 };
	struct flow_target target;
	struct sht_reader *r = NULL;
	double min_impact = 0;
	json_t *doc = NULL;
	uint64_t t1, t2;
	int ret, e;

	if (other_view)
		return cli_usage_error("--flow is a view of its own: not with --placement or --pcpu");
	if (summary_filter_narrows(filter))
		return cli_usage_error("report: --vcpu, --tid and --pcpu LIST do not go with --flow (the flow follows "
				       "one thread wherever it runs)");
	if (!thread)
		return cli_usage_error("report: --min-impact goes with --flow THREAD");
	if (filter->nr_vms > 0 || filter->nr_cgroups > 0)
		return cli_usage_error("report: --vm and --cgroup do not go with --flow (the thread says which VM)");
	if (top)
		return cli_usage_error("report: --top does not go with --flow (the flow shows every interval and culprit; "
				       "--min-impact hides the small ones)");
	if (min_arg) {
		char *end;

		errno = 0;
		min_impact = strtod(min_arg, &end);
		if (errno || end == min_arg || *end || !(min_impact >= 0 && min_impact <= 1))
			return cli_usage_error(
			    "report: --min-impact %s: a fraction of the lifespan from 0 to 1 (0.05: 5%%)", min_arg);
	}
	if (flow_parse_target(thread, &target, &err))
		return cli_usage_error("report: %s", err.msg);
	ret = cli_open_window(file, from, to, &r, &t1, &t2);
	if (ret)
		return ret;
	e = report_show_flow(stdout, json ? &doc : NULL, r, file, &target, thread, t1, t2, min_impact, &err);
	if (e)
		cli_err("report: %s", err.msg);
	else if (doc)
		cli_json_print(doc, CLI_JSON_LINE);
	sht_close(r);
	return e == -ENOENT ? CLI_USAGE : e ? CLI_FAIL : CLI_OK;
}
