// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KVM's own per-vCPU counters, through the binary statistics interface
 * (KVM_GET_STATS_FD on the vCPU fd, Linux >= 5.14; Documentation/virt/kvm/
 * api.rst, "KVM_GET_STATS_FD"): a header, then one descriptor per statistic
 * (flags, exponent, size in u64 values, offset, name), then the values.
 *
 * microvm reads them once, after the vCPU threads have stopped, so they
 * cover exactly the vCPU's life: `exits` (every VM exit), `io_exits`,
 * `halt_exits`, `mmio_exits`, `irq_exits`, `insn_emulation`, `pf_*`, ...
 * A histogram (size > 1: its buckets) is kept as its total, the samples it
 * took, in a second object: `halt_wait_hist` is the number of halts whose
 * kvm_vcpu_block() called schedule(), however often it did (a halt woken
 * just before that call is one, though its thread never slept).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <jansson.h>
#include "microvm.h"

#ifndef KVM_CAP_BINARY_STATS_FD
#define KVM_CAP_BINARY_STATS_FD 203
#endif
#ifndef KVM_GET_STATS_FD
#define KVM_GET_STATS_FD _IO(KVMIO, 0xce)
/* The ABI (include/uapi/linux/kvm.h), for headers older than Linux 5.14. */
struct kvm_stats_header {
	__u32 flags;
	__u32 name_size;
	__u32 num_desc;
	__u32 id_offset;
	__u32 desc_offset;
	__u32 data_offset;
};

struct kvm_stats_desc {
	__u32 flags;
	__s16 exponent;
	__u16 size;
	__u32 offset;
	__u32 bucket_size;
	char name[];
};
#endif

#define STATS_MAX_DESC 4096
#define STATS_MAX_NAME 1024

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

json_t *kvm_vcpu_stats(int kvm_fd, int vcpu_fd, json_t **hists, char *why, size_t whylen)
{
	struct kvm_stats_header h;
	json_t *stats = NULL;
	char *descs = NULL;
	__u64 *buckets = NULL;
	size_t stride;
	int fd, err;

	*hists = NULL;
	if (ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_BINARY_STATS_FD) <= 0) {
		snprintf(why, whylen, "this KVM has no KVM_CAP_BINARY_STATS_FD (KVM_GET_STATS_FD: Linux >= 5.14)");
		return NULL;
	}
	fd = ioctl(vcpu_fd, KVM_GET_STATS_FD, NULL);
	if (fd < 0) {
		snprintf(why, whylen, "KVM_GET_STATS_FD: %s", strerror(errno));
		return NULL;
	}
	err = pread_all(fd, &h, sizeof(h), 0);
	if (err) {
		snprintf(why, whylen, "reading the statistics header: %s", strerror(-err));
		goto out;
	}
	if (!h.num_desc || h.num_desc > STATS_MAX_DESC || !h.name_size || h.name_size > STATS_MAX_NAME) {
		snprintf(why, whylen, "a statistics header this program does not understand (%u descriptors, names of %u bytes)",
			 h.num_desc, h.name_size);
		goto out;
	}
	stride = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(stride * h.num_desc);
	if (!descs) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	err = pread_all(fd, descs, stride * h.num_desc, h.desc_offset);
	if (err) {
		snprintf(why, whylen, "reading the statistics descriptors: %s", strerror(-err));
		goto out;
	}
	stats = json_object();
	*hists = json_object();
	buckets = calloc(UINT16_MAX, sizeof(*buckets));
	if (!stats || !*hists || !buckets) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	for (__u32 i = 0; i < h.num_desc; i++) {
		struct kvm_stats_desc *d = (struct kvm_stats_desc *)(descs + i * stride);
		char name[STATS_MAX_NAME + 1];
		__u64 value = 0;

		if (!d->size)
			continue;
		memcpy(name, d->name, h.name_size);
		name[h.name_size] = '\0';
		err = pread_all(fd, buckets, d->size * sizeof(*buckets), (off_t)h.data_offset + d->offset);
		if (err) {
			snprintf(why, whylen, "reading statistic %s: %s", name, strerror(-err));
			goto fail;
		}
		for (__u16 b = 0; b < d->size; b++)
			value += buckets[b];
		json_object_set_new(d->size == 1 ? stats : *hists, name, json_integer((json_int_t)value));
	}
	goto out;
fail:
	json_decref(stats);
	json_decref(*hists);
	stats = *hists = NULL;
out:
	free(buckets);
	free(descs);
	close(fd);
	return stats;
}

/*
 * KVM's counters for a whole VM, from debugfs (/sys/kernel/debug/kvm/
 * <pid>-<vm fd>/<name>: one number per file, the sum over the VM's vCPUs):
 * the only place kernels before 5.14 give them. Only the names in `names`,
 * as reading each costs a walk of the vCPUs (~150 ms under the KVM lab's
 * emulation).
 */
json_t *kvm_vm_debugfs_stats(pid_t pid, int vm_fd, char *why, size_t whylen)
{
	static const char *const names[] = { "exits",	   "io_exits",	 "halt_exits",	   "mmio_exits",
					     "irq_exits",  "signal_exits", "insn_emulation", "halt_wakeup",
					     "nested_run", "irq_injections" };
	json_t *stats = json_object();
	char dir[128], path[192];

	snprintf(dir, sizeof(dir), "/sys/kernel/debug/kvm/%d-%d", (int)pid, vm_fd);
	if (access(dir, F_OK)) {
		snprintf(why, whylen, "%s: %s (is debugfs mounted?)", dir, strerror(errno));
		json_decref(stats);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		unsigned long long v;
		FILE *f;
		int n;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		f = fopen(path, "re");
		if (!f)
			continue; /* a counter this KVM does not have */
		n = fscanf(f, "%llu", &v);
		fclose(f);
		if (n == 1)
			json_object_set_new(stats, names[i], json_integer((json_int_t)v));
	}
	if (!json_object_get(stats, "exits")) {
		snprintf(why, whylen, "%s has no counter exits", dir);
		json_decref(stats);
		return NULL;
	}
	return stats;
}
