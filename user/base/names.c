// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/base.h"
#include "vcpu_fsm.h"

#define NAME_LEN 64
#define PATH_LEN 256

struct vm_cgroup_entry {
	__u64 pidns;
	char path[PATH_LEN];
};

static const char *const state_names[VCPU_NR_STATES] = {
	[VCPU_UNKNOWN] = "unknown", [VCPU_GUEST] = "guest", [VCPU_HOST] = "host",	 [VCPU_PREEMPTED] = "preempted",
	[VCPU_WAIT] = "wait",	    [VCPU_IDLE] = "idle",   [VCPU_BLOCKED] = "blocked", [VCPU_POLL] = "poll",
};

const char *vcpu_state_name(unsigned int state)
{
	return state < VCPU_NR_STATES ? state_names[state] : "invalid";
}

int vcpu_state_from_name(const char *s)
{
	for (int i = 0; i < VCPU_NR_STATES; i++)
		if (!strcmp(s, state_names[i]))
			return i;
	return -1;
}

static const char *const wake_names[VCPU_NR_WAKE_REASONS] = {
	[VCPU_WAKE_OTHER] = "other",
	[VCPU_WAKE_TIMER] = "timer",
	[VCPU_WAKE_IPI] = "ipi",
	[VCPU_WAKE_DEVICE] = "device",
};

const char *wake_reason_name(unsigned int reason)
{
	return reason < VCPU_NR_WAKE_REASONS ? wake_names[reason] : "invalid";
}

int wake_reason_from_name(const char *s)
{
	for (int i = 0; i < VCPU_NR_WAKE_REASONS; i++)
		if (!strcmp(s, wake_names[i]))
			return i;
	return -1;
}

const char *wake_vector_name(unsigned int vector, char *buf, size_t len)
{
	if (!vector)
		return "none";
	snprintf(buf, len, "0x%02x", vector & 0xff);
	return buf;
}

int wake_vector_from_name(const char *s)
{
	unsigned int v;
	int n = 0;

	if (!strcmp(s, "none"))
		return 0;
	if (sscanf(s, "0x%2x%n", &v, &n) != 1 || n != 4 || s[n] || !v || v > 0xff || !isxdigit((unsigned char)s[2]))
		return -1;
	return (int)v;
}

const char *exit_reason_name(unsigned int isa, unsigned int reason, char *buf, size_t len)
{
#define X(code, name)                                                                                              \
	case code:                                                                                                 \
		return #name;
	if (isa == KVM_ISA_VMX) {
		switch (VMX_BASIC_REASON(reason)) {
			VCPUSTAT_VMX_EXIT_REASONS(X)
		}
		snprintf(buf, len, "VMX_%u", VMX_BASIC_REASON(reason));
		return buf;
	}
#undef X
#define X(code, name)                                                                                              \
	case code:                                                                                                 \
		return name;
	if (isa == KVM_ISA_SVM) {
		switch (reason) {
			VCPUSTAT_SVM_EXIT_REASONS(X)
		}
		snprintf(buf, len, "SVM_0x%x", reason);
		return buf;
	}
#undef X
	snprintf(buf, len, "ISA%u_%u", isa, reason);
	return buf;
}

const char *userspace_exit_name(unsigned int reason, char *buf, size_t len)
{
#define X(code, name)                                                                                              \
	case code:                                                                                                 \
		return #name;
	switch (reason) {
		VCPUSTAT_KVM_EXIT_REASONS(X)
	}
#undef X
	snprintf(buf, len, "KVM_EXIT_%u", reason);
	return buf;
}

/* "VMX_123", "SVM_0x7b", "KVM_EXIT_12": the names given to unknown codes. */
static int code_after(const char *name, const char *prefix, int base, unsigned int *code)
{
	size_t n = strlen(prefix);
	unsigned long v;
	char *end;

	if (strncmp(name, prefix, n) || !name[n])
		return -ENOENT;
	errno = 0;
	v = strtoul(name + n, &end, base);
	if (*end || errno || v > 0xffffffffu)
		return -ENOENT;
	*code = (unsigned int)v;
	return 0;
}

int exit_reason_from_name(const char *name, unsigned int *isa, unsigned int *reason)
{
#define X(code, n)                                                                                                 \
	if (!strcmp(name, #n)) {                                                                                   \
		*isa = KVM_ISA_VMX;                                                                                \
		*reason = code;                                                                                    \
		return 0;                                                                                          \
	}
	VCPUSTAT_VMX_EXIT_REASONS(X)
#undef X
#define X(code, n)                                                                                                 \
	if (!strcmp(name, n)) {                                                                                    \
		*isa = KVM_ISA_SVM;                                                                                \
		*reason = code;                                                                                    \
		return 0;                                                                                          \
	}
	VCPUSTAT_SVM_EXIT_REASONS(X)
#undef X
	if (!code_after(name, "VMX_", 10, reason)) {
		*isa = KVM_ISA_VMX;
		return 0;
	}
	if (!code_after(name, "SVM_0x", 16, reason)) {
		*isa = KVM_ISA_SVM;
		return 0;
	}
	return -ENOENT;
}

int userspace_exit_from_name(const char *name, unsigned int *reason)
{
#define X(code, n)                                                                                                 \
	if (!strcmp(name, #n)) {                                                                                   \
		*reason = code;                                                                                    \
		return 0;                                                                                          \
	}
	VCPUSTAT_KVM_EXIT_REASONS(X)
#undef X
	return code_after(name, "KVM_EXIT_", 10, reason);
}

/* Copy one `-name` option value's name part into out (unescaping ",,"). */
static int parse_name_value(const char *v, char *out, size_t outlen)
{
	const char *p = v;
	size_t o = 0;

	/* options are comma separated; the name is `guest=X` or the first bare token */
	while (*p) {
		const char *tok = p, *val = NULL;
		char buf[256];
		size_t b = 0;

		while (*p) {
			if (*p == ',' && p[1] == ',') {
				if (b < sizeof(buf) - 1)
					buf[b++] = ',';
				p += 2;
				continue;
			}
			if (*p == ',')
				break;
			if (b < sizeof(buf) - 1)
				buf[b++] = *p;
			p++;
		}
		buf[b] = '\0';
		if (*p == ',')
			p++;
		if (!strncmp(buf, "guest=", 6))
			val = buf + 6;
		else if (tok == v && !strchr(buf, '='))
			val = buf;
		if (val && *val) {
			for (o = 0; val[o] && o < outlen - 1; o++)
				out[o] = val[o];
			out[o] = '\0';
			return 0;
		}
	}
	return -1;
}

int vm_name_from_cmdline(const char *cmdline, size_t len, char *out, size_t outlen)
{
	size_t i = 0;

	if (!outlen)
		return -1;
	while (i < len) {
		const char *arg = cmdline + i;
		size_t alen = strnlen(arg, len - i);

		if ((!strcmp(arg, "-name") || !strcmp(arg, "--name")) && i + alen + 1 < len) {
			const char *v = arg + alen + 1;
			char val[512];
			size_t vlen = strnlen(v, len - (i + alen + 1));

			if (vlen >= sizeof(val))
				vlen = sizeof(val) - 1;
			memcpy(val, v, vlen);
			val[vlen] = '\0';
			if (parse_name_value(val, out, outlen) == 0)
				return 0;
		}
		i += alen + 1;
	}
	return -1;
}

int names_init(struct names *n, const char *proc_root, const char *cgroup_root)
{
	int err;

	memset(n, 0, sizeof(*n));
	snprintf(n->proc_root, sizeof(n->proc_root), "%s", proc_root ? proc_root : "/proc");
	/* bpf_get_current_cgroup_id() is the cgroup v2 id: the ids of the v2 tree */
	if (cgroup_root || !cgroup2_root(NULL, n->cgroup_root, sizeof(n->cgroup_root)))
		snprintf(n->cgroup_root, sizeof(n->cgroup_root), "%s", cgroup_root ? cgroup_root : "/sys/fs/cgroup");
	err = hashmap_init(&n->vms, sizeof(__u32), NAME_LEN, 0);
	if (!err)
		err = hashmap_init(&n->procs, sizeof(__u32), NAME_LEN, 0);
	if (!err)
		err = hashmap_init(&n->cgroups, sizeof(__u64), PATH_LEN, 0);
	if (!err)
		err = hashmap_init(&n->vm_cgroups, sizeof(__u32), sizeof(struct vm_cgroup_entry), 0);
	if (err)
		names_free(n);
	n->cgroup_scanned = 1;
	return err;
}

void names_free(struct names *n)
{
	hashmap_free(&n->vms);
	hashmap_free(&n->procs);
	hashmap_free(&n->cgroups);
	hashmap_free(&n->vm_cgroups);
}

void names_refresh(struct names *n)
{
	n->cgroup_scanned = 1;
}

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = read(fd, buf, len);
	close(fd);
	return r;
}

const char *names_process(struct names *n, __u32 tgid)
{
	char path[256], name[NAME_LEN] = "";
	const char *cached = hashmap_lookup(&n->procs, &tgid);
	ssize_t r;

	if (cached)
		return cached;
	snprintf(path, sizeof(path), "%s/%u/comm", n->proc_root, tgid);
	r = read_file(path, name, sizeof(name) - 1);
	if (r > 0) {
		name[r] = '\0';
		name[strcspn(name, "\n")] = '\0';
	} else if (tgid == 0) {
		snprintf(name, sizeof(name), "idle");
	} else {
		snprintf(name, sizeof(name), "pid %u", tgid); /* gone before we looked */
	}
	if (hashmap_update(&n->procs, &tgid, name))
		return "?";
	return hashmap_lookup(&n->procs, &tgid);
}

const char *names_vm(struct names *n, __u32 tgid)
{
	char path[256], cmdline[8192], name[NAME_LEN];
	const char *cached = hashmap_lookup(&n->vms, &tgid);
	ssize_t r;

	if (cached)
		return cached;
	snprintf(path, sizeof(path), "%s/%u/cmdline", n->proc_root, tgid);
	r = read_file(path, cmdline, sizeof(cmdline));
	if (r <= 0 || vm_name_from_cmdline(cmdline, (size_t)r, name, sizeof(name)))
		snprintf(name, sizeof(name), "%s", names_process(n, tgid));
	if (hashmap_update(&n->vms, &tgid, name))
		return "?";
	return hashmap_lookup(&n->vms, &tgid);
}

const char *names_thread(struct names *n, __u32 tid, __u32 *tgid, char *buf, size_t len)
{
	char path[256], status[4096];
	ssize_t r;
	char *p;

	*tgid = 0;
	if (!tid) {
		snprintf(buf, len, "idle");
		return buf;
	}
	snprintf(path, sizeof(path), "%s/%u/status", n->proc_root, tid);
	r = read_file(path, status, sizeof(status) - 1);
	if (r <= 0)
		return NULL;
	status[r] = '\0';
	p = strstr(status, "\nTgid:");
	if (p)
		*tgid = (__u32)strtoul(p + 6, NULL, 10);
	if (strncmp(status, "Name:", 5))
		return NULL;
	p = status + 5;
	while (*p == ' ' || *p == '\t')
		p++;
	snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
	return buf;
}

/* Walk the cgroup v2 tree: a cgroup's id is its directory's inode number. */
static void scan_cgroups(struct names *n, const char *dir, size_t root_len, int depth)
{
	char path[PATH_LEN + 128];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (depth > 32 || stat(dir, &st))
		return;
	{
		__u64 id = st.st_ino;
		char rel[PATH_LEN];

		snprintf(rel, sizeof(rel), "%s", dir[root_len] ? dir + root_len : "/");
		hashmap_update(&n->cgroups, &id, rel);
	}
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		scan_cgroups(n, path, root_len, depth + 1);
	}
	closedir(d);
}

const char *names_cgroup(struct names *n, __u64 id)
{
	const char *p = hashmap_lookup(&n->cgroups, &id);

	if (p || !id)
		return p ? p : "";
	if (n->cgroup_scanned > 0) {
		n->cgroup_scanned--;
		scan_cgroups(n, n->cgroup_root, strlen(n->cgroup_root), 0);
		p = hashmap_lookup(&n->cgroups, &id);
	}
	return p ? p : "";
}

const char *names_vm_cgroup(struct names *n, __u32 tgid, __u64 *pidns)
{
	struct vm_cgroup_entry *hit = hashmap_lookup(&n->vm_cgroups, &tgid), fresh = { 0 };
	uint64_t ns = 0;

	if (!hit) {
		if (names_thread_cgroup(n, tgid, fresh.path, sizeof(fresh.path), &ns))
			fresh.path[0] = '\0';
		fresh.pidns = ns;
		if (hashmap_update(&n->vm_cgroups, &tgid, &fresh))
			return *pidns = 0, "";
		hit = hashmap_lookup(&n->vm_cgroups, &tgid);
	}
	*pidns = hit->pidns;
	return hit->path;
}

static const char *const lost_kind_names[VCPUSTAT_NR_LOST] = {
	[VCPUSTAT_LOST_RINGBUF] = "ringbuf",	      [VCPUSTAT_LOST_VCPU_FULL] = "vcpu_table_full",
	[VCPUSTAT_LOST_VM_FULL] = "vm_table_full",     [VCPUSTAT_LOST_HIST_FULL] = "hist_table_full",
	[VCPUSTAT_LOST_DEAD_FULL] = "dead_table_full", [VCPUSTAT_LOST_CULPRIT_FULL] = "culprit_table_full",
	[VCPUSTAT_LOST_WAIT_SLOTS] = "wait_slots",     [VCPUSTAT_LOST_DETAIL_FULL] = "detail_table_full",
	[VCPUSTAT_LOST_VMM_FULL] = "vmm_table_full",      [VCPUSTAT_LOST_PLACE_FULL] = "place_table_full",
};

const char *lost_kind_name(unsigned int kind)
{
	return kind < VCPUSTAT_NR_LOST ? lost_kind_names[kind] : "invalid";
}

static const char *const detail_kind_names[VCPUSTAT_NR_DETAIL_KINDS] = {
	[VCPUSTAT_DETAIL_NONE] = "none", [VCPUSTAT_DETAIL_PIO] = "pio",		      [VCPUSTAT_DETAIL_MMIO] = "mmio",
	[VCPUSTAT_DETAIL_MSR] = "msr",	 [VCPUSTAT_DETAIL_PAGE_FAULT] = "page_fault", [VCPUSTAT_DETAIL_CR3] = "cr3",
	[VCPUSTAT_DETAIL_NESTED] = "nested",
};

const char *detail_kind_name(unsigned int kind)
{
	return kind < VCPUSTAT_NR_DETAIL_KINDS ? detail_kind_names[kind] : "invalid";
}

const char *detail_access_name(unsigned int access)
{
	static const char *const names[VCPUSTAT_NR_ACCESSES] = { "read", "write", "fetch", "l0", "l1" };

	return access < VCPUSTAT_NR_ACCESSES ? names[access] : "invalid";
}

const char *detail_target(__u64 addr, char *buf, size_t len)
{
	if (addr == VCPUSTAT_DETAIL_OTHER)
		snprintf(buf, len, "other");
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	return buf;
}

const char *detail_target_of(unsigned int kind, __u64 addr, char *buf, size_t len)
{
	if (kind == VCPUSTAT_DETAIL_NESTED && addr != VCPUSTAT_DETAIL_OTHER) {
		char name[32];
		const char *n = exit_reason_name((unsigned int)(addr >> 32), (unsigned int)addr, name, sizeof(name));

		snprintf(buf, len, "%s", n); /* into buf: callers use it */
		return buf;
	}
	return detail_target(addr, buf, len);
}

const char *cr3_target(__u64 addr, char *buf, size_t len)
{
	if (addr == VCPUSTAT_CR3_UNKNOWN)
		snprintf(buf, len, "unknown");
	else
		detail_target(addr, buf, len);
	return buf;
}

/* The MSRs guests touch most often through exits (Intel SDM vol. 4, AMD APM vol. 2, KVM's paravirtual ones). */
static const struct {
	__u32 index;
	const char *name;
} msr_names[] = {
	{ 0x10, "TSC" },
	{ 0x1b, "APIC_BASE" },
	{ 0x3a, "FEATURE_CONTROL" },
	{ 0x48, "SPEC_CTRL" },
	{ 0x49, "PRED_CMD" },
	{ 0x8b, "BIOS_SIGN_ID" },
	{ 0xe7, "MPERF" },
	{ 0xe8, "APERF" },
	{ 0x10a, "ARCH_CAPABILITIES" },
	{ 0x174, "SYSENTER_CS" },
	{ 0x1a0, "MISC_ENABLE" },
	{ 0x277, "PAT" },
	{ 0x6e0, "TSC_DEADLINE" },
	{ 0x802, "x2APIC_ID" },
	{ 0x808, "x2APIC_TPR" },
	{ 0x80b, "x2APIC_EOI" },
	{ 0x830, "x2APIC_ICR" },
	{ 0x832, "x2APIC_LVT_TIMER" },
	{ 0x838, "x2APIC_TMICT" },
	{ 0x839, "x2APIC_TMCCT" },
	{ 0x83e, "x2APIC_TDCR" },
	{ 0x83f, "x2APIC_SELF_IPI" },
	{ 0x4b564d00, "KVM_WALL_CLOCK_NEW" },
	{ 0x4b564d01, "KVM_SYSTEM_TIME_NEW" },
	{ 0x4b564d02, "KVM_ASYNC_PF_EN" },
	{ 0x4b564d03, "KVM_STEAL_TIME" },
	{ 0x4b564d04, "KVM_PV_EOI_EN" },
	{ 0x4b564d05, "KVM_POLL_CONTROL" },
	{ 0xc0000080, "EFER" },
	{ 0xc0000081, "STAR" },
	{ 0xc0000082, "LSTAR" },
	{ 0xc0000084, "SFMASK" },
	{ 0xc0000100, "FS_BASE" },
	{ 0xc0000101, "GS_BASE" },
	{ 0xc0000102, "KERNEL_GS_BASE" },
	{ 0xc0000103, "TSC_AUX" },
	{ 0xc0010015, "HWCR" },
	{ 0xc0010117, "VM_HSAVE_PA" },
};

const char *msr_name(__u32 index)
{
	for (size_t i = 0; i < sizeof(msr_names) / sizeof(msr_names[0]); i++)
		if (msr_names[i].index == index)
			return msr_names[i].name;
	return NULL;
}

const char *detail_msr_name(unsigned int kind, __u64 addr)
{
	return kind == VCPUSTAT_DETAIL_MSR && addr != VCPUSTAT_DETAIL_OTHER ? msr_name((__u32)addr) : NULL;
}
