/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * microvm.h - a micro-VMM on /dev/kvm for vcpustat's demos, tests and
 * benchmarks (docs/microvm.md).
 *
 * One program, two roles:
 *   supervisor (supervisor.c)  what the user runs: starts one VM process per
 *                              VM (fork + exec of itself), forwards signals,
 *                              writes the --ready file and the final report;
 *   VM process (vm.c)          one KVM VM with M vCPU threads ("CPU n/KVM")
 *                              running the guest program (guest.c); reports
 *                              to the supervisor over a pipe, one JSON
 *                              document per line.
 * Options (opts.c) are shared: the supervisor passes its own options on to
 * each VM process, plus the internal --vm-index and --report-fd.
 */
#ifndef MICROVM_H
#define MICROVM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MICROVM_MAX_VMS 64
#define MICROVM_MAX_VCPUS 64
#define MICROVM_NAME_MAX 48 /* characters of a VM name, without the "-<i>" suffix */

/* Exit codes */
#define MICROVM_EXIT_OK 0
#define MICROVM_EXIT_FAIL 1  /* a run-time failure (KVM, a VM process, a file) */
#define MICROVM_EXIT_USAGE 2 /* bad options */

/*
 * --mix: what the guest does in each chunk of work besides its loop, each
 * once per chunk (guest.c). Bits of microvm_opts.mix, in the order of
 * microvm_mix_names[].
 */
enum microvm_mix_op {
	MIX_CPUID,  /* `cpuid`: an exit handled in KVM (SVM 0x72, VMX 10) */
	MIX_RDMSR,  /* `rdmsr` of EFER: handled in KVM (SVM msr 0x7c, VMX 31) */
	MIX_WRMSR,  /* `wrmsr` of EFER (writes 0, its value): handled in KVM (SVM msr 0x7c, VMX 32) */
	MIX_MMIO,   /* a 1-byte write to unmapped guest-physical GUEST_MMIO_ADDR: KVM_EXIT_MMIO */
	MIX_TOUCH,  /* a write to a page the VMM has just discarded: a nested page fault */
	MIX_NR_OPS,
};
#define MIX_ALL ((1u << MIX_NR_OPS) - 1)
extern const char *const microvm_mix_names[MIX_NR_OPS];

struct microvm_opts {
	unsigned int vms;	  /* --vms */
	unsigned int vcpus;	  /* --vcpus */
	uint64_t busy_us;	  /* --busy-us */
	uint64_t idle_us;	  /* --idle-us, 0 = never halt */
	uint64_t chunk_iters;	  /* --chunk-iters, 0 = calibrate to chunk_us */
	uint64_t chunk_us;	  /* --chunk-us */
	int pin;		  /* --pin CPU, -1 = no pinning */
	uint64_t io_thread_us;	  /* --io-thread-us: an I/O thread busy X us, asleep X us; 0 = none */
	uint64_t msi_us;	  /* --msi-us: the I/O thread is a device: an MSI to each vCPU every X us */
	unsigned int mix;	  /* --mix: bits (1 << enum microvm_mix_op), 0 = none */
	int irqchip;		  /* --irqchip: in-kernel irqchip, the guest's LAPIC timer ends its halts */
	int ipi;		  /* --ipi: vCPUs but 0 halt until vCPU 0 sends them an IPI */
	int address_spaces;	  /* --address-spaces: 32-bit paging, two page directories in turn */
	int nested;		  /* --nested: each chunk runs in a guest of the guest's own (AMD SVM) */
	double duration_s;	  /* --duration, 0 = until SIGINT/SIGTERM */
	const char *duration_arg; /* as given, passed on to the VM processes */
	const char *json_path;	  /* --json, NULL = stdout */
	const char *ready_path;	  /* --ready, NULL = none */
	const char *hold_path;	  /* --hold, NULL = none */
	char name[MICROVM_NAME_MAX + 8]; /* from -name (guest=NAME or NAME) */
	/* internal: set in VM processes only */
	int vm_index;  /* --vm-index, -1 in the supervisor */
	int report_fd; /* --report-fd */
};

/*
 * Parse argv into o. Returns 0 to run, 1 when --help was asked (usage has
 * been printed to stdout), -1 on a bad option (err holds a sentence naming
 * the option and the value).
 */
int microvm_parse_opts(int argc, char **argv, struct microvm_opts *o, char *err, size_t errlen);
void microvm_usage(FILE *f);

/* The supervisor: run o->vms VM processes, return an exit code. */
int microvm_supervise(const struct microvm_opts *o, const char *argv0);

/* One VM process: run the VM, report on o->report_fd, return an exit code. */
int microvm_vm_main(const struct microvm_opts *o);

/*
 * guest.c: the guest programs and where they live in guest memory.
 * Guest-physical layout (real mode reaches the first MiB):
 *   0x00000-0x0ffff  RAM (slot 0): mailboxes at 0x800, the program at 0x1000
 *   0x10000          unmapped: the --mix mmio target (KVM_EXIT_MMIO)
 *   0x20000-0x9ffff  RAM (slot 1, only with --mix touch): pages to touch,
 *                    an equal share per vCPU
 */
#define GUEST_MEM_SIZE 0x10000u /* 64 KiB of guest RAM at guest physical 0 */
#define GUEST_CODE_ADDR 0x1000u	 /* CS = 0, IP = 0x1000, real mode */
#define GUEST_PORT_WORK 0x10u	 /* `in eax, 0x10`: iterations of work, 0 = halt */
#define GUEST_PORT_IDLE 0x11u	 /* --irqchip: `in eax, 0x11`: the halt's timer count (ns) */
#define GUEST_PORT_KICK 0x12u	 /* --irqchip: `in eax, 0x12`: APIC id + 1 to send an IPI to, 0 = none */
#define GUEST_TIMER_VECTOR 0x40u /* --irqchip: the LAPIC timer's vector (real-mode IVT entry) */
#define GUEST_IPI_VECTOR 0x41u	 /* --ipi: the IPI's vector */
#define GUEST_MSI_VECTOR 0x42u	 /* --msi-us: the device's MSI vector (same handler as the IPI's) */
#define GUEST_STACK_SIZE 128u	 /* per vCPU, down from the top of guest RAM */
#define GUEST_MAILBOX_ADDR 0x800u /* + 32 * vCPU index: that vCPU's mailbox (SI points to it) */
#define GUEST_MAILBOX_SIZE 32u
#define GUEST_MMIO_ADDR 0x10000u
#define GUEST_TOUCH_ADDR 0x20000u
#define GUEST_TOUCH_SIZE 0x80000u
#define GUEST_PAGE_SIZE 4096u
/*
 * --address-spaces: two page directories (32-bit paging with 4 MiB pages,
 * each mapping the first 4 MiB onto themselves): the guest's CR3 is one or
 * the other. Chunks alternate between them, A first; an A chunk has
 * GUEST_AS_RATIO times the loop iterations of a B chunk.
 */
#define GUEST_PD_A 0x4000u
#define GUEST_PD_B 0x5000u
#define GUEST_AS_RATIO 3u
/*
 * --nested: the guest is a hypervisor (L1 here; L2 to the host's KVM, which
 * sees microvm's guest as L1): per vCPU a VMCB for its own guest at
 * GUEST_VMCB(i) and the host-save area SVM needs at GUEST_HSAVE(i); that
 * guest's program (shared: it only uses registers) at GUEST_NESTED_CODE.
 */
#define GUEST_NESTED_CODE 0x3000u
#define GUEST_VMCB(i) (0x6000u + 0x2000u * (i))
#define GUEST_HSAVE(i) (0x7000u + 0x2000u * (i))
#define MICROVM_MAX_NESTED_VCPUS 4u

/*
 * A vCPU's mailbox (--mix program), little-endian:
 *   +0  u16  the ops to run in each chunk (bits of microvm_opts.mix), set by the VMM
 *   +2  u16  the segment of the page to touch next (its address >> 4), set by the VMM
 *   +4  u32  ops done, one counter per op (+4 + 4 * op), counted by the guest
 */
#define MAILBOX_OPS 0
#define MAILBOX_TOUCH_SEG 2
#define MAILBOX_COUNT(op) (4 + 4 * (op))
#define MAILBOX_TIMER_IRQS 24 /* u32: --irqchip timer interrupts taken, counted by the guest */
#define MAILBOX_IPIS 28	      /* u32: --ipi IPIs (or --msi-us MSIs) taken, counted by the guest */

/* The plain program (no --mix) and the --mix program. */
extern const unsigned char guest_code[];
extern const size_t guest_code_size;
extern const unsigned char guest_code_mix[];
extern const size_t guest_code_mix_size;
/* The --address-spaces program (32-bit protected mode, paging on). */
extern const unsigned char guest_code_as[];
extern const size_t guest_code_as_size;
/* The --nested programs: the hypervisor's (32-bit protected mode) and its guest's. */
extern const unsigned char guest_code_nested[];
extern const size_t guest_code_nested_size;
extern const unsigned char guest_code_nested_l2[];
extern const size_t guest_code_nested_l2_size;
/* The --irqchip program and the offset of its timer interrupt handler. */
extern const unsigned char guest_code_irq[];
extern const size_t guest_code_irq_size;
extern const unsigned short guest_irq_isr_offset;
extern const unsigned short guest_ipi_isr_offset;
/*
 * In the --mix program, the offset of the `inc` that counts op k, right after
 * op k's instruction: a vCPU stopped with its IP there had the op's exit
 * handled but not yet counted.
 */
extern const unsigned short guest_mix_count_offset[MIX_NR_OPS];

/* kvm_stats.c: every scalar statistic of a vCPU (KVM_GET_STATS_FD) as a JSON
 * object {name: value}, and in *hists every histogram's total {name: samples};
 * or NULL (and *hists NULL) with why filled in. */
#include <jansson.h>
json_t *kvm_vcpu_stats(int kvm_fd, int vcpu_fd, json_t **hists, char *why, size_t whylen);
/* KVM's counters for the whole VM from debugfs (kernels before 5.14 have no per-vCPU ones), or NULL and why. */
json_t *kvm_vm_debugfs_stats(pid_t pid, int vm_fd, char *why, size_t whylen);

/* util.c */
uint64_t now_ns(void);		/* CLOCK_MONOTONIC */
uint64_t thread_cpu_ns(void);	/* CLOCK_THREAD_CPUTIME_ID */
int write_all(int fd, const char *buf, size_t len);	/* 0 or -errno */
/* Write text to path atomically (path.tmp.<pid>, then rename): 0 or -errno. */
int write_file_atomic(const char *path, const char *text);

#endif
