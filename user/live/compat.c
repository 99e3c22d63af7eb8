// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * compat.c - what this kernel gives the BPF programs, found by probing it
 * (never by its version number), and the tracepoint field layouts that the
 * classic tp/ programs read (docs/kernels.md). As libbpf-tools keep theirs in
 * compat.c and trace_helpers.c, and bpftool in `feature probe`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "live/compat.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9: a pidfd for any thread, not only a process */
#endif

int compat_thread_pidfd(pid_t tid)
{
	return (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
}

/*
 * BPF's atomic operations beyond a plain add (Linux 5.12): a program that
 * does an atomic fetch-or on its stack. Older verifiers refuse it ("BPF_STX
 * uses reserved fields"), whatever else the program does.
 */
static bool probe_atomics(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0 },
		{ .code = BPF_STX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1, .off = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW,
		  .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1,
		  .off = -8,
		  .imm = BPF_OR | BPF_FETCH },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "vcpustat_probe", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static bool tracefs_at(const char *dir)
{
	struct statfs sf;
	char events[256];

	snprintf(events, sizeof(events), "%s/events", dir);
	return statfs(dir, &sf) == 0 && sf.f_type == TRACEFS_MAGIC && access(events, F_OK) == 0;
}

const char *compat_tracefs(void)
{
	if (tracefs_at(COMPAT_TRACEFS))
		return COMPAT_TRACEFS;
	if (tracefs_at("/sys/kernel/debug/tracing"))
		return "/sys/kernel/debug/tracing";
	return NULL;
}

int compat_ensure_tracefs(bool *mounted)
{
	if (mounted)
		*mounted = false;
	if (compat_tracefs())
		return 0;
	if (mount("nodev", COMPAT_TRACEFS, "tracefs", 0, NULL))
		return -errno;
	if (mounted)
		*mounted = true;
	return 0;
}

bool compat_tracepoint_in_tracefs(const char *category, const char *event)
{
	const char *dir = compat_tracefs();
	char path[512];

	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/%s", dir, category, event);
	return access(path, F_OK) == 0;
}

int compat_probe(struct vcpustat_kernel *k)
{
	struct utsname u;
	struct btf *vmlinux;
	int fd;

	memset(k, 0, sizeof(*k));
	if (uname(&u) == 0) {
		snprintf(k->release, sizeof(k->release), "%s", u.release);
		snprintf(k->machine, sizeof(k->machine), "%s", u.machine);
	}
	k->vmlinux_btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	k->kvm_loaded = access("/sys/module/kvm", F_OK) == 0;
	k->kvm_btf = access("/sys/kernel/btf/kvm", R_OK) == 0;
	k->dev_kvm = access("/dev/kvm", F_OK) == 0;
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	k->dev_kvm_usable = fd >= 0;
	if (fd >= 0)
		close(fd);
	k->tracefs = compat_tracefs() != NULL;
	k->ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) > 0;
	k->task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) > 0;
	k->atomics = probe_atomics();
	fd = compat_thread_pidfd((pid_t)syscall(SYS_gettid));
	k->pidfd_thread = fd >= 0;
	if (fd >= 0)
		close(fd);
	vmlinux = k->vmlinux_btf ? btf__load_vmlinux_btf() : NULL;
	if (vmlinux) {
		k->task_from_pid = btf__find_by_name_kind(vmlinux, "bpf_task_from_pid", BTF_KIND_FUNC) > 0;
		btf__free(vmlinux);
	}
	return 0;
}

/* ---- tracepoint formats ---- */

/*
 * The field name of one "field:" line of a format file ("field:unsigned
 * int exit_reason;\toffset:8;\tsize:4;\tsigned:0;"), with its offset and
 * size. 0, or -EINVAL if the line is not such a field.
 */
static int parse_field(const char *line, char *name, size_t len, unsigned int *off, unsigned int *size)
{
	const char *p = strstr(line, "field:"), *semi, *start;
	size_t n;

	if (!p)
		return -EINVAL;
	p += 6;
	semi = strchr(p, ';');
	if (!semi)
		return -EINVAL;
	start = semi;
	while (start > p && start[-1] != ' ' && start[-1] != '\t' && start[-1] != '*')
		start--;
	n = (size_t)(semi - start);
	if (n && start[n - 1] == ']') { /* an array: name[N] */
		const char *b = memchr(start, '[', n);

		if (b)
			n = (size_t)(b - start);
	}
	if (!n || n >= len)
		return -EINVAL;
	memcpy(name, start, n);
	name[n] = '\0';
	p = strstr(semi, "offset:");
	if (!p || sscanf(p, "offset:%u;", off) != 1)
		return -EINVAL;
	p = strstr(p, "size:");
	if (!p || sscanf(p, "size:%u;", size) != 1)
		return -EINVAL;
	return 0;
}

int compat_format_fields(const char *path, struct compat_format_field *want, size_t n, char *err, size_t err_len)
{
	char line[512], name[64];
	unsigned int lineno = 0, off, size;
	size_t i;
	FILE *f;

	for (i = 0; i < n; i++)
		want[i].found = false;
	f = fopen(path, "re");
	if (!f) {
		int e = -errno;

		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return e;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strstr(line, "field:") || parse_field(line, name, sizeof(name), &off, &size))
			continue;
		for (i = 0; i < n; i++) {
			if (strcmp(want[i].name, name))
				continue;
			if (off > 0xffff || !size || size > 8) {
				snprintf(err, err_len, "%s:%u: field %s at offset %u of size %u: not a number vcpustat reads",
					 path, lineno, name, off, size);
				fclose(f);
				return -EINVAL;
			}
			want[i].field->off = (__u16)off;
			want[i].field->size = (__u16)size;
			want[i].found = true;
		}
	}
	fclose(f);
	for (i = 0; i < n; i++) {
		if (want[i].required && !want[i].found) {
			snprintf(err, err_len, "%s has no field %s", path, want[i].name);
			return -ENOENT;
		}
	}
	return 0;
}

int compat_tp_fields(const char *category, const char *event, struct vcpustat_tp_fields *fields, char *err,
		     size_t err_len)
{
	struct compat_format_field entry[] = {
		{ "vcpu_id", &fields->entry_vcpu_id, false },
	};
	struct compat_format_field exit[] = {
		{ "exit_reason", &fields->exit_reason, true },
		{ "isa", &fields->exit_isa, true },
		{ "vcpu_id", &fields->exit_vcpu_id, false },
		{ "guest_rip", &fields->exit_guest_rip, false },
	};
	struct compat_format_field pf[] = {
		{ "fault_address", &fields->pf_address, true },
		{ "error_code", &fields->pf_error_code, false },
	};
	struct compat_format_field apic[] = {
		{ "apicid", &fields->apic_apicid, true },
		{ "vec", &fields->apic_vec, true },
	};
	struct {
		const char *event;
		struct compat_format_field *f;
		size_t n;
	} layouts[] = {
		{ "kvm_entry", entry, 1 },
		{ "kvm_exit", exit, 4 },
		{ "kvm_page_fault", pf, 2 },
		{ "kvm_apic_accept_irq", apic, 2 },
	};
	const char *dir = compat_tracefs();
	char path[512];
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (strcmp(category, "kvm") || strcmp(event, layouts[i].event))
			continue;
		if (!dir) {
			snprintf(err, err_len, "tracefs is not mounted (its format of %s:%s gives the fields)", category,
				 event);
			return -ENOENT;
		}
		snprintf(path, sizeof(path), "%s/events/%s/%s/format", dir, category, event);
		return compat_format_fields(path, layouts[i].f, layouts[i].n, err, err_len);
	}
	snprintf(err, err_len, "no field layout for %s:%s", category, event);
	return -ENOENT;
}
