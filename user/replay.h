/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay.h - the BPF event handler run in user space. The same
 * include/vcpustat_handler.h code the kernel runs, over hash tables of the
 * same sizes, so replaying the events of a capture or of an imported trace
 * gives exactly the records and maps the kernel would have produced.
 */
#ifndef VCPUSTAT_REPLAY_H
#define VCPUSTAT_REPLAY_H

#include "model/model.h"

struct replay;

struct replay_options {
	enum vcpustat_record_level record_level;
	vcpustat_record_fn on_record; /* called for every record, in order; may be NULL */
	void *ctx;
	unsigned int nr_cpus;	/* 0: 1024 */
	unsigned int max_vcpus; /* 0: VCPUSTAT_MAX_VCPUS, like the kernel maps */
	unsigned int max_vms, max_hists, max_culprits;
};

int replay_new(struct replay **out, const struct replay_options *opts);
void replay_free(struct replay *r);

/* Run one event through the handler. A non-zero return from on_record is returned. */
int replay_event(struct replay *r, const struct vcpustat_event *ev);

/* Everything the maps hold now, in the live layer's struct (dead vCPUs are reaped). */
int replay_snapshot(struct replay *r, struct vcpustat_snapshot *snap);

#endif
