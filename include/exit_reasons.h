/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * KVM exit reasons: the one table of codes and names used by the BPF
 * programs (for the few codes they act on) and by user space (for names).
 *
 * The kvm_exit tracepoint's `isa` field says which table applies:
 * KVM_ISA_VMX (1) uses the VMX basic exit reason (exit_reason & 0xffff),
 * KVM_ISA_SVM (2) the SVM exit code. The lists follow the kernel's
 * VMX_EXIT_REASONS and SVM_EXIT_REASONS (arch/x86/include/uapi/asm/{vmx,svm}.h)
 * as printed by the kvm_exit tracepoint of Linux 6.18.
 *
 * kvm_userspace_exit reports KVM_EXIT_* codes (include/uapi/linux/kvm.h).
 *
 * Pure C: no libc, libbpf or kernel includes (it is included from BPF code).
 */
#ifndef VCPUSTAT_EXIT_REASONS_H
#define VCPUSTAT_EXIT_REASONS_H

#define KVM_ISA_VMX 1
#define KVM_ISA_SVM 2

/* X(code, NAME) */
#define VCPUSTAT_VMX_EXIT_REASONS(X) \
	X(0, EXCEPTION_NMI) \
	X(1, EXTERNAL_INTERRUPT) \
	X(2, TRIPLE_FAULT) \
	X(3, INIT_SIGNAL) \
	X(4, SIPI_SIGNAL) \
	X(7, INTERRUPT_WINDOW) \
	X(8, NMI_WINDOW) \
	X(9, TASK_SWITCH) \
	X(10, CPUID) \
	X(12, HLT) \
	X(13, INVD) \
	X(14, INVLPG) \
	X(15, RDPMC) \
	X(16, RDTSC) \
	X(18, VMCALL) \
	X(19, VMCLEAR) \
	X(20, VMLAUNCH) \
	X(21, VMPTRLD) \
	X(22, VMPTRST) \
	X(23, VMREAD) \
	X(24, VMRESUME) \
	X(25, VMWRITE) \
	X(26, VMOFF) \
	X(27, VMON) \
	X(28, CR_ACCESS) \
	X(29, DR_ACCESS) \
	X(30, IO_INSTRUCTION) \
	X(31, MSR_READ) \
	X(32, MSR_WRITE) \
	X(33, INVALID_STATE) \
	X(34, MSR_LOAD_FAIL) \
	X(36, MWAIT_INSTRUCTION) \
	X(37, MONITOR_TRAP_FLAG) \
	X(39, MONITOR_INSTRUCTION) \
	X(40, PAUSE_INSTRUCTION) \
	X(41, MCE_DURING_VMENTRY) \
	X(43, TPR_BELOW_THRESHOLD) \
	X(44, APIC_ACCESS) \
	X(45, EOI_INDUCED) \
	X(46, GDTR_IDTR) \
	X(47, LDTR_TR) \
	X(48, EPT_VIOLATION) \
	X(49, EPT_MISCONFIG) \
	X(50, INVEPT) \
	X(51, RDTSCP) \
	X(52, PREEMPTION_TIMER) \
	X(53, INVVPID) \
	X(54, WBINVD) \
	X(55, XSETBV) \
	X(56, APIC_WRITE) \
	X(57, RDRAND) \
	X(58, INVPCID) \
	X(59, VMFUNC) \
	X(60, ENCLS) \
	X(61, RDSEED) \
	X(62, PML_FULL) \
	X(63, XSAVES) \
	X(64, XRSTORS) \
	X(67, UMWAIT) \
	X(68, TPAUSE) \
	X(74, BUS_LOCK) \
	X(75, NOTIFY) \
	X(77, TDCALL) \
	X(84, MSR_READ_IMM) \
	X(85, MSR_WRITE_IMM)

/* X(code, name); SVM names as the kernel prints them (lower case). */
#define VCPUSTAT_SVM_EXIT_REASONS(X) \
	X(0x000, "read_cr0") \
	X(0x002, "read_cr2") \
	X(0x003, "read_cr3") \
	X(0x004, "read_cr4") \
	X(0x008, "read_cr8") \
	X(0x010, "write_cr0") \
	X(0x012, "write_cr2") \
	X(0x013, "write_cr3") \
	X(0x014, "write_cr4") \
	X(0x018, "write_cr8") \
	X(0x020, "read_dr0") \
	X(0x021, "read_dr1") \
	X(0x022, "read_dr2") \
	X(0x023, "read_dr3") \
	X(0x024, "read_dr4") \
	X(0x025, "read_dr5") \
	X(0x026, "read_dr6") \
	X(0x027, "read_dr7") \
	X(0x030, "write_dr0") \
	X(0x031, "write_dr1") \
	X(0x032, "write_dr2") \
	X(0x033, "write_dr3") \
	X(0x034, "write_dr4") \
	X(0x035, "write_dr5") \
	X(0x036, "write_dr6") \
	X(0x037, "write_dr7") \
	X(0x040, "DE excp") \
	X(0x041, "DB excp") \
	X(0x043, "BP excp") \
	X(0x044, "OF excp") \
	X(0x045, "BR excp") \
	X(0x046, "UD excp") \
	X(0x047, "NM excp") \
	X(0x048, "DF excp") \
	X(0x04a, "TS excp") \
	X(0x04b, "NP excp") \
	X(0x04c, "SS excp") \
	X(0x04d, "GP excp") \
	X(0x04e, "PF excp") \
	X(0x050, "MF excp") \
	X(0x051, "AC excp") \
	X(0x052, "MC excp") \
	X(0x053, "XF excp") \
	X(0x060, "interrupt") \
	X(0x061, "nmi") \
	X(0x062, "smi") \
	X(0x063, "init") \
	X(0x064, "vintr") \
	X(0x065, "cr0_sel_write") \
	X(0x066, "read_idtr") \
	X(0x067, "read_gdtr") \
	X(0x068, "read_ldtr") \
	X(0x069, "read_rt") \
	X(0x06a, "write_idtr") \
	X(0x06b, "write_gdtr") \
	X(0x06c, "write_ldtr") \
	X(0x06d, "write_rt") \
	X(0x06e, "rdtsc") \
	X(0x06f, "rdpmc") \
	X(0x070, "pushf") \
	X(0x071, "popf") \
	X(0x072, "cpuid") \
	X(0x073, "rsm") \
	X(0x074, "iret") \
	X(0x075, "swint") \
	X(0x076, "invd") \
	X(0x077, "pause") \
	X(0x078, "hlt") \
	X(0x079, "invlpg") \
	X(0x07a, "invlpga") \
	X(0x07b, "io") \
	X(0x07c, "msr") \
	X(0x07d, "task_switch") \
	X(0x07e, "ferr_freeze") \
	X(0x07f, "shutdown") \
	X(0x080, "vmrun") \
	X(0x081, "hypercall") \
	X(0x082, "vmload") \
	X(0x083, "vmsave") \
	X(0x084, "stgi") \
	X(0x085, "clgi") \
	X(0x086, "skinit") \
	X(0x087, "rdtscp") \
	X(0x088, "icebp") \
	X(0x089, "wbinvd") \
	X(0x08a, "monitor") \
	X(0x08b, "mwait") \
	X(0x08d, "xsetbv") \
	X(0x08f, "write_efer_trap") \
	X(0x090, "write_cr0_trap") \
	X(0x094, "write_cr4_trap") \
	X(0x098, "write_cr8_trap") \
	X(0x0a2, "invpcid") \
	X(0x0a5, "buslock") \
	X(0x0a6, "idle-halt") \
	X(0x400, "npf") \
	X(0x401, "avic_incomplete_ipi") \
	X(0x402, "avic_unaccelerated_access") \
	X(0x403, "vmgexit") \
	X(0x80000001u, "vmgexit_mmio_read") \
	X(0x80000002u, "vmgexit_mmio_write") \
	X(0x80000003u, "vmgexit_nmi_complete") \
	X(0x80000004u, "vmgexit_ap_hlt_loop") \
	X(0x80000005u, "vmgexit_ap_jump_table") \
	X(0x80000010u, "vmgexit_page_state_change") \
	X(0x80000011u, "vmgexit_guest_request") \
	X(0x80000012u, "vmgexit_ext_guest_request") \
	X(0x80000013u, "vmgexit_ap_creation") \
	X(0x8000fffdu, "vmgexit_hypervisor_feature") \
	X(0xffffffffu, "invalid_guest_state")

/* X(code, NAME) for kvm_userspace_exit's reason (KVM_EXIT_<NAME>) */
#define VCPUSTAT_KVM_EXIT_REASONS(X) \
	X(0, UNKNOWN) \
	X(1, EXCEPTION) \
	X(2, IO) \
	X(3, HYPERCALL) \
	X(4, DEBUG) \
	X(5, HLT) \
	X(6, MMIO) \
	X(7, IRQ_WINDOW_OPEN) \
	X(8, SHUTDOWN) \
	X(9, FAIL_ENTRY) \
	X(10, INTR) \
	X(11, SET_TPR) \
	X(12, TPR_ACCESS) \
	X(13, S390_SIEIC) \
	X(14, S390_RESET) \
	X(15, DCR) \
	X(16, NMI) \
	X(17, INTERNAL_ERROR) \
	X(18, OSI) \
	X(19, PAPR_HCALL) \
	X(20, S390_UCONTROL) \
	X(21, WATCHDOG) \
	X(22, S390_TSCH) \
	X(23, EPR) \
	X(24, SYSTEM_EVENT) \
	X(25, S390_STSI) \
	X(26, IOAPIC_EOI) \
	X(27, HYPERV) \
	X(28, ARM_NISV) \
	X(29, X86_RDMSR) \
	X(30, X86_WRMSR) \
	X(31, DIRTY_RING_FULL) \
	X(32, AP_RESET_HOLD) \
	X(33, X86_BUS_LOCK) \
	X(34, XEN) \
	X(35, RISCV_SBI) \
	X(36, RISCV_CSR) \
	X(37, NOTIFY) \
	X(38, LOONGARCH_IOCSR) \
	X(39, MEMORY_FAULT) \
	X(40, TDX)

/* The codes the state machine acts on. */
#define VMX_EXIT_HLT 12
#define VMX_EXIT_VMCALL 18
#define VMX_EXIT_MSR_WRITE 32
#define SVM_EXIT_HLT 0x078
#define SVM_EXIT_VMMCALL 0x081
#define KVM_UEXIT_IO 2
#define KVM_UEXIT_HLT 5
#define KVM_UEXIT_MMIO 6
#define KVM_UEXIT_INTR 10

/* The VMX basic exit reason: the low 16 bits (the high bits are flags such as FAILED_VMENTRY). */
#define VMX_BASIC_REASON(r) ((r) & 0xffffu)

static inline __attribute__((always_inline)) int vcpustat_exit_is_hlt(unsigned int reason, unsigned int isa)
{
	if (isa == KVM_ISA_VMX)
		return VMX_BASIC_REASON(reason) == VMX_EXIT_HLT;
	if (isa == KVM_ISA_SVM)
		return reason == SVM_EXIT_HLT;
	return 0;
}

#endif /* VCPUSTAT_EXIT_REASONS_H */
