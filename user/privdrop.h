/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * privdrop.h - after the BPF programs are loaded and attached, a long-running
 * exporter needs almost nothing: reading maps through file descriptors it
 * already holds. privdrop_to_user() becomes an unprivileged user and keeps
 * only CAP_BPF (kernels before 6.5 refuse every bpf() command, map reads
 * included, without it while kernel.unprivileged_bpf_disabled is set; later
 * ones check only map creation and program loading).
 */
#ifndef VCPUSTAT_PRIVDROP_H
#define VCPUSTAT_PRIVDROP_H

#include "error.h"

/* Does user (name or numeric uid) exist, and is it not root? 0, or -ENOENT/-EINVAL with err filled. */
int privdrop_check_user(const char *user, struct vcpustat_error *err);

/*
 * Become user (name or numeric uid) with its primary group and no
 * supplementary groups, keeping CAP_BPF (permitted and effective) and no
 * other capability; sets no_new_privs. Call before starting any thread
 * (capabilities are per thread). 0, or a negative errno with err filled.
 */
int privdrop_to_user(const char *user, struct vcpustat_error *err);

#endif
