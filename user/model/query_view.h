/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * query_view.h - what `vcpustat query` shows of an SHT file.
 */
#ifndef VCPUSTAT_MODEL_QUERY_VIEW_H
#define VCPUSTAT_MODEL_QUERY_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include "sht/sht.h"
#include "model/summary.h"

/*
 * ---- query_view.c: what `vcpustat query` shows of an SHT file ----
 * With doc NULL, text to f; else the JSON document in *doc (the caller
 * prints and frees it). Attributes named `state` show vCPU state names (JSON:
 * the number and the name). 0, or a negative errno with err filled.
 *
 * query_show_info: the file (version, times, counts, metadata).
 * query_show_at: the value at t of every attribute selected in want (NULL:
 * all) that holds one or has no children.
 * query_show_range: the intervals in [t1, t2] of the attributes in want.
 */
int query_show_info(FILE *f, json_t **doc, struct sht_reader *r, const char *file, bool utc,
		    struct vcpustat_error *err);
int query_show_at(FILE *f, json_t **doc, struct sht_reader *r, const char *file, uint64_t t, const uint8_t *want,
		  bool utc, struct vcpustat_error *err);
int query_show_range(FILE *f, json_t **doc, struct sht_reader *r, const char *file, const uint8_t *want, uint64_t t1,
		     uint64_t t2, bool utc, struct vcpustat_error *err);

/*
 * The filters of query: clear in want (one byte per attribute) those f does
 * not keep. Every filter given must keep an attribute: --vm the subtree
 * /vms/<vm>; --vcpu /vms/<any>/vcpus/<n>; --tid the subtrees of the vCPUs
 * whose tid it is and /host/threads/<tid>; --pcpu /host/cpus/<cpu> and the
 * subtrees of the vCPUs whose pcpu was one of those CPUs at some time of
 * [t1, t2] (--at: t1 = t2). *kept: the attributes left. 0 or -ENOMEM.
 */
int query_filter(struct sht_reader *r, const struct summary_filter *f, uint64_t t1, uint64_t t2, uint8_t *want,
		 size_t *kept, struct vcpustat_error *err);

/*
 * The selection of query: *want (one byte per attribute, the caller frees;
 * NULL: every attribute). query_select_path: the attributes of --path P
 * (sht_select; path NULL: leaves *want NULL), 0, -ENOENT (no such attribute)
 * or -ENOMEM. query_narrow: then the filters of f over [t1, t2]
 * (query_filter; *want made first if NULL), nothing to do without --vm or
 * a filter that narrows; 0, -ENOENT with err "--vcpu 7: no attribute of
 * FILE matches these filters together" when none is kept, or -ENOMEM.
 */
int query_select_path(struct sht_reader *r, const char *path, uint8_t **want, struct vcpustat_error *err);
int query_narrow(struct sht_reader *r, const char *file, const struct summary_filter *f, uint64_t t1, uint64_t t2,
		 uint8_t **want, struct vcpustat_error *err);

/*
 * The times of query: --at T (at; then *t1 = *t2 = T), else the range of
 * --path between --from and --to (NULL: the file's start, its end). 0, or
 * -EINVAL with err naming the option (a time that does not parse, --at after
 * the end of the history of file), -ERANGE when --from is after --to.
 */
int query_times(struct sht_reader *r, const char *file, const char *at, const char *from, const char *to,
		uint64_t *t1, uint64_t *t2, struct vcpustat_error *err);

#endif /* VCPUSTAT_MODEL_QUERY_VIEW_H */
