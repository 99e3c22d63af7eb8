/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * host_scenario.h - the host trace of the import tests, as struct tev: two
 * VMs (A: tgid 1000, vCPU threads 1001 and 1002; B: tgid 2000, vCPU thread
 * 2001) and a CPU hog (500) on two CPUs, with exits of several reasons, a
 * userspace exit, preemptions, sleeps, wakeups, a migration, a sync
 * hypercall, and events the analysis skips. Every event at its own
 * microsecond, so that any layout (and CTF) orders them the same way.
 */
#ifndef VCPUSTAT_TEST_HOST_SCENARIO_H
#define VCPUSTAT_TEST_HOST_SCENARIO_H

#include <stdbool.h>
#include "trace_synth.h"

#define BASE 1000000000000ull /* 1000 s */
#define US(x) (BASE + (uint64_t)(x) * 1000ull)

/* Who is who in the scenario. */
#define VMA 1000  /* VM A: vCPUs 1001 (CPU 0/KVM) and 1002 (CPU 1/KVM) */
#define VMB 2000  /* VM B: vCPU 2001 (CPU 0/KVM) */
#define HOG 500	  /* a host thread, stress-ng */

static inline struct tev kvm(enum tev_type t, uint64_t us, uint32_t cpu, uint32_t pid, const char *reason)
{
	uint32_t tgid = pid / 1000 * 1000, vcpu = pid % 1000 - 1;
	const char *comm = vcpu ? "CPU 1/KVM" : "CPU 0/KVM";

	return (struct tev){ .type = t, .ts = US(us), .cpu = cpu, .pid = pid, .tgid = tgid, .comm = comm, .vcpu = vcpu,
			     .reason = reason };
}

static inline const char *comm_of(uint32_t pid)
{
	switch (pid) {
	case 0: return "swapper/0";
	case HOG: return "stress-ng";
	case 1002: return "CPU 1/KVM";
	default: return "CPU 0/KVM";
	}
}

static inline uint32_t tgid_of(uint32_t pid)
{
	return pid >= 1000 ? pid / 1000 * 1000 : pid;
}

static inline struct tev sw(uint64_t us, uint32_t cpu, uint32_t prev, const char *state, uint32_t next)
{
	return (struct tev){ .type = T_SWITCH, .ts = US(us), .cpu = cpu, .pid = prev, .tgid = tgid_of(prev),
			     .comm = comm_of(prev), .state = state, .pid2 = next, .comm2 = comm_of(next) };
}

static inline struct tev wake(uint64_t us, uint32_t cpu, uint32_t cur, uint32_t woken, uint32_t target)
{
	return (struct tev){ .type = T_WAKEUP, .ts = US(us), .cpu = cpu, .pid = cur, .tgid = tgid_of(cur),
			     .comm = comm_of(cur), .pid2 = woken, .comm2 = comm_of(woken), .cpu2 = target };
}

/*
 * Two VMs and a CPU hog on two CPUs: exits of several reasons, a userspace
 * exit, preemptions (R+), sleeps (S, D), wakeups, a migration, a sync
 * hypercall, and events the analysis skips. svm: SVM exit-reason names.
 */
static inline size_t scenario(struct tev *e, bool svm)
{
	const char *msr = svm ? "msr" : "MSR_WRITE", *hlt = svm ? "hlt" : "HLT";
	const char *intr = svm ? "interrupt" : "EXTERNAL_INTERRUPT", *io = svm ? "io" : "IO_INSTRUCTION";
	const char *ept = svm ? "npf" : "EPT_VIOLATION", *rd = svm ? "msr" : "MSR_READ";
	size_t n = 0;

	e[n++] = sw(0, 0, 0, "R", 1001);
	e[n++] = kvm(T_FPU, 1, 0, 1001, NULL);
	e[n++] = kvm(T_ENTRY, 5, 0, 1001, NULL);
	e[n++] = sw(8, 1, 0, "R", 1002);
	e[n++] = kvm(T_ENTRY, 10, 1, 1002, NULL);
	e[n++] = kvm(T_KEXIT, 20, 0, 1001, msr);
	e[n++] = (struct tev){ .type = T_OTHER, .ts = US(21), .cpu = 0, .pid = 1001, .tgid = VMA, .comm = "CPU 0/KVM" };
	e[n++] = kvm(T_ENTRY, 22, 0, 1001, NULL);
	e[n++] = kvm(T_KEXIT, 30, 1, 1002, hlt);
	e[n++] = sw(31, 1, 1002, "S", 0);
	e[n++] = wake(39, 1, 0, 2001, 1);
	e[n++] = sw(40, 1, 0, "R", 2001);
	e[n++] = kvm(T_ENTRY, 41, 1, 2001, NULL);
	e[n++] = wake(49, 0, 1001, HOG, 0);
	e[n++] = kvm(T_KEXIT, 50, 0, 1001, intr);
	e[n++] = sw(51, 0, 1001, "R+", HOG);
	e[n++] = kvm(T_KEXIT, 60, 1, 2001, io);
	e[n++] = (struct tev){ .type = T_UEXIT, .ts = US(61), .cpu = 1, .pid = 2001, .tgid = VMB, .comm = "CPU 0/KVM",
			       .ureason = 2 };
	e[n++] = kvm(T_FPU, 70, 1, 2001, NULL);
	e[n++] = kvm(T_ENTRY, 71, 1, 2001, NULL);
	e[n++] = sw(80, 0, HOG, "S", 1001);
	e[n++] = kvm(T_ENTRY, 81, 0, 1001, NULL);
	e[n++] = wake(85, 1, 2001, 1002, 1);
	e[n++] = sw(90, 1, 2001, "R+", 1002);
	e[n++] = kvm(T_ENTRY, 91, 1, 1002, NULL);
	e[n++] = (struct tev){ .type = T_MIGRATE, .ts = US(95), .cpu = 1, .pid = 1002, .tgid = VMA, .comm = "CPU 1/KVM",
			       .pid2 = 2001, .comm2 = "CPU 0/KVM", .cpu2 = 1, .cpu3 = 0 };
	e[n++] = (struct tev){ .type = T_HCALL, .ts = US(100), .cpu = 0, .pid = 1001, .tgid = VMA, .comm = "CPU 0/KVM",
			       .key = 77 };
	e[n++] = kvm(T_ENTRY, 102, 0, 1001, NULL);
	e[n++] = sw(110, 0, 1001, "R+", 2001);
	e[n++] = kvm(T_ENTRY, 111, 0, 2001, NULL);
	e[n++] = kvm(T_KEXIT, 120, 0, 2001, ept);
	e[n++] = sw(125, 0, 2001, "D", 1001);
	e[n++] = kvm(T_ENTRY, 126, 0, 1001, NULL);
	e[n++] = wake(130, 0, 1001, 2001, 0);
	e[n++] = (struct tev){ .type = T_OTHER, .ts = US(140), .cpu = 1, .pid = 1002, .tgid = VMA, .comm = "CPU 1/KVM" };
	e[n++] = kvm(T_KEXIT, 150, 1, 1002, rd);
	return n;
}

#endif
