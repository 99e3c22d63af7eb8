// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The guest program: 16-bit real-mode code at GUEST_CODE_ADDR (CS = 0,
 * IP = 0x1000, interrupts off). Every vCPU runs the same code with its own
 * registers. The guest cannot keep wall time, so it asks the VMM what to do:
 * `in eax, 0x10` exits to user space (KVM_EXIT_IO) and the VMM answers with
 * the number of loop iterations to run next (one "chunk" of busy work), or 0
 * when the busy period is over, and the guest halts (KVM_EXIT_HLT: without an
 * in-kernel irqchip KVM hands HLT to user space). After the halt the VMM
 * re-enters KVM_RUN and the guest asks again.
 *
 *   1000: 66 e5 10     top:  in    eax, 0x10   ; VMM: iterations, 0 = halt
 *   1003: 66 85 c0           test  eax, eax
 *   1006: 74 0f              jz    idle
 *   1008: 66 89 c1           mov   ecx, eax
 *   100b: 66 01 cb     work: add   ebx, ecx    ; the busy work: a running
 *   100e: 66 d1 c3           rol   ebx, 1      ; checksum, nothing to optimise
 *   1011: 66 49              dec   ecx
 *   1013: 75 f6              jnz   work
 *   1015: eb e9              jmp   top
 *   1017: f4           idle: hlt
 *   1018: eb e6              jmp   top
 *
 * (Check: objdump -D -b binary -m i8086 --adjust-vma=0x1000 on these bytes.)
 */
#include "microvm.h"

const unsigned char guest_code[] = {
	0x66, 0xe5, GUEST_PORT_WORK, /* in eax, 0x10 */
	0x66, 0x85, 0xc0,	     /* test eax, eax */
	0x74, 0x0f,		     /* jz idle */
	0x66, 0x89, 0xc1,	     /* mov ecx, eax */
	0x66, 0x01, 0xcb,	     /* work: add ebx, ecx */
	0x66, 0xd1, 0xc3,	     /* rol ebx, 1 */
	0x66, 0x49,		     /* dec ecx */
	0x75, 0xf6,		     /* jnz work */
	0xeb, 0xe9,		     /* jmp top */
	0xf4,			     /* idle: hlt */
	0xeb, 0xe6,		     /* jmp top */
};
const size_t guest_code_size = sizeof(guest_code);

/*
 * The --mix program: the same protocol (`in eax, 0x10`: iterations, 0 =
 * halt), and before each chunk's loop the ops its mailbox asks for, each
 * followed by an `inc` of its counter in the mailbox. SI = the vCPU's
 * mailbox (set by the VMM), DS = 0. The loop counter and the checksum are
 * kept in EDI and EBP across the ops (cpuid and rdmsr clobber EAX..EDX).
 *
 *   1000: 66 e5 10           top:   in    eax, 0x10
 *   1003: 66 85 c0                  test  eax, eax
 *   1006: 75 03                     jnz   busy
 *   1008: f4                 idle:  hlt               ; KVM_EXIT_HLT
 *   1009: eb f5                     jmp   top
 *   100b: 66 89 c1           busy:  mov   ecx, eax
 *   100e: 66 89 cf                  mov   edi, ecx
 *   1011: 66 89 dd                  mov   ebp, ebx
 *   1014: f6 04 01                  test  byte [si], 1  ; cpuid?
 *   1017: 74 09                     jz    1022
 *   1019: 66 31 c0                  xor   eax, eax
 *   101c: 0f a2                     cpuid
 *   101e: 66 ff 44 04               inc   dword [si+4]
 *   1022: f6 04 02                  test  byte [si], 2  ; rdmsr?
 *   1025: 74 0c                     jz    1033
 *   1027: 66 b9 80 00 00 c0         mov   ecx, 0xc0000080 ; EFER
 *   102d: 0f 32                     rdmsr
 *   102f: 66 ff 44 08               inc   dword [si+8]
 *   1033: f6 04 04                  test  byte [si], 4  ; wrmsr?
 *   1036: 74 12                     jz    104a
 *   1038: 66 b9 80 00 00 c0         mov   ecx, 0xc0000080 ; EFER = 0 (its value in real mode)
 *   103e: 66 31 c0                  xor   eax, eax
 *   1041: 66 31 d2                  xor   edx, edx
 *   1044: 0f 30                     wrmsr
 *   1046: 66 ff 44 0c               inc   dword [si+12]
 *   104a: f6 04 08                  test  byte [si], 8  ; mmio?
 *   104d: 74 0e                     jz    105d
 *   104f: b8 00 10                  mov   ax, 0x1000
 *   1052: 8e c0                     mov   es, ax
 *   1054: 26 88 1e 00 00            mov   [es:0], bl    ; 0x10000: unmapped
 *   1059: 66 ff 44 10               inc   dword [si+16]
 *   105d: f6 04 10                  test  byte [si], 16 ; touch?
 *   1060: 74 0e                     jz    1070
 *   1062: 8b 44 02                  mov   ax, [si+2]    ; the page the VMM chose
 *   1065: 8e c0                     mov   es, ax
 *   1067: 26 88 1e 00 00            mov   [es:0], bl
 *   106c: 66 ff 44 14               inc   dword [si+20]
 *   1070: 66 89 f9                  mov   ecx, edi
 *   1073: 66 89 eb                  mov   ebx, ebp
 *   1076: 66 01 cb           work:  add   ebx, ecx
 *   1079: 66 d1 c3                  rol   ebx, 1
 *   107c: 66 49                     dec   ecx
 *   107e: 75 f6                     jnz   work
 *   1080: e9 7d ff                  jmp   top
 *
 * (Check: objdump -D -b binary -m i8086 --adjust-vma=0x1000 on these bytes.)
 */
const unsigned char guest_code_mix[] = {
	0x66, 0xe5, GUEST_PORT_WORK,	     /* top: in eax, 0x10 */
	0x66, 0x85, 0xc0,		     /* test eax, eax */
	0x75, 0x03,			     /* jnz busy */
	0xf4,				     /* idle: hlt */
	0xeb, 0xf5,			     /* jmp top */
	0x66, 0x89, 0xc1,		     /* busy: mov ecx, eax */
	0x66, 0x89, 0xcf,		     /* mov edi, ecx */
	0x66, 0x89, 0xdd,		     /* mov ebp, ebx */
	0xf6, 0x04, 1u << MIX_CPUID,	     /* test byte [si], cpuid */
	0x74, 0x09,			     /* jz +9 */
	0x66, 0x31, 0xc0,		     /* xor eax, eax */
	0x0f, 0xa2,			     /* cpuid */
	0x66, 0xff, 0x44, MAILBOX_COUNT(MIX_CPUID), /* inc dword [si+4] */
	0xf6, 0x04, 1u << MIX_RDMSR,	     /* test byte [si], rdmsr */
	0x74, 0x0c,			     /* jz +12 */
	0x66, 0xb9, 0x80, 0x00, 0x00, 0xc0, /* mov ecx, 0xc0000080 */
	0x0f, 0x32,			     /* rdmsr */
	0x66, 0xff, 0x44, MAILBOX_COUNT(MIX_RDMSR), /* inc dword [si+8] */
	0xf6, 0x04, 1u << MIX_WRMSR,	     /* test byte [si], wrmsr */
	0x74, 0x12,			     /* jz +18 */
	0x66, 0xb9, 0x80, 0x00, 0x00, 0xc0, /* mov ecx, 0xc0000080 */
	0x66, 0x31, 0xc0,		     /* xor eax, eax */
	0x66, 0x31, 0xd2,		     /* xor edx, edx */
	0x0f, 0x30,			     /* wrmsr */
	0x66, 0xff, 0x44, MAILBOX_COUNT(MIX_WRMSR), /* inc dword [si+12] */
	0xf6, 0x04, 1u << MIX_MMIO,	     /* test byte [si], mmio */
	0x74, 0x0e,			     /* jz +14 */
	0xb8, 0x00, GUEST_MMIO_ADDR >> 12,  /* mov ax, 0x1000 */
	0x8e, 0xc0,			     /* mov es, ax */
	0x26, 0x88, 0x1e, 0x00, 0x00,	     /* mov [es:0], bl */
	0x66, 0xff, 0x44, MAILBOX_COUNT(MIX_MMIO), /* inc dword [si+16] */
	0xf6, 0x04, 1u << MIX_TOUCH,	     /* test byte [si], touch */
	0x74, 0x0e,			     /* jz +14 */
	0x8b, 0x44, MAILBOX_TOUCH_SEG,	     /* mov ax, [si+2] */
	0x8e, 0xc0,			     /* mov es, ax */
	0x26, 0x88, 0x1e, 0x00, 0x00,	     /* mov [es:0], bl */
	0x66, 0xff, 0x44, MAILBOX_COUNT(MIX_TOUCH), /* inc dword [si+20] */
	0x66, 0x89, 0xf9,		     /* mov ecx, edi */
	0x66, 0x89, 0xeb,		     /* mov ebx, ebp */
	0x66, 0x01, 0xcb,		     /* work: add ebx, ecx */
	0x66, 0xd1, 0xc3,		     /* rol ebx, 1 */
	0x66, 0x49,			     /* dec ecx */
	0x75, 0xf6,			     /* jnz work */
	0xe9, 0x7d, 0xff,		     /* jmp top */
};
const size_t guest_code_mix_size = sizeof(guest_code_mix);

/*
 * The --irqchip program: KVM has an in-kernel irqchip, so HLT stays in KVM
 * (it may poll, then sleeps) until an interrupt: the vCPU's own LAPIC timer,
 * armed by the guest before each halt for the time the VMM says, or (with
 * --ipi) an IPI from vCPU 0. The LAPIC is driven in x2APIC mode, through
 * MSRs, which real mode reaches (the VMM gives the vCPU x2APIC in its
 * CPUID). Same protocol on port 0x10; after each halt the guest asks port
 * 0x12 whom to send an IPI to, until the answer is 0. The interrupt handlers
 * (IVT entries GUEST_TIMER_VECTOR and GUEST_IPI_VECTOR) acknowledge (EOI) and
 * count the interrupt in the vCPU's mailbox. Each vCPU has its own stack.
 *
 *   1000: 66 b9 1b 00 00 00        mov   ecx, 0x1b      ; IA32_APIC_BASE
 *   1006: 0f 32                    rdmsr
 *   1008: 0d 00 0c                 or    ax, 0x0c00     ; EN | EXTD: x2APIC
 *   100b: 0f 30                    wrmsr
 *   100d: 66 b9 0f 08 00 00        mov   ecx, 0x80f     ; SVR: on, spurious 0xff
 *   1013: 66 b8 ff 01 00 00        mov   eax, 0x1ff
 *   1019: 66 31 d2                 xor   edx, edx
 *   101c: 0f 30                    wrmsr
 *   101e: 66 b9 32 08 00 00        mov   ecx, 0x832     ; LVT timer: 0x40, one-shot
 *   1024: 66 b8 40 00 00 00        mov   eax, 0x40
 *   102a: 0f 30                    wrmsr
 *   102c: 66 b9 3e 08 00 00        mov   ecx, 0x83e     ; divide by 1
 *   1032: 66 b8 0b 00 00 00        mov   eax, 0xb
 *   1038: 0f 30                    wrmsr
 *   103a: 66 e5 10           top:  in    eax, 0x10      ; iterations, 0 = halt
 *   103d: 66 85 c0                 test  eax, eax
 *   1040: 75 2e                    jnz   busy
 *   1042: 66 e5 11                 in    eax, 0x11      ; the timer count (ns), 0 = none
 *   1045: 66 b9 38 08 00 00        mov   ecx, 0x838     ; TMICT: arms (or stops) the timer
 *   104b: 66 31 d2                 xor   edx, edx
 *   104e: 0f 30                    wrmsr
 *   1050: fb                       sti
 *   1051: f4                       hlt                  ; in KVM until an interrupt
 *   1052: fa                       cli
 *   1053: 66 e5 12           kick: in    eax, 0x12      ; APIC id + 1 to send an IPI to, 0 = none
 *   1056: 66 85 c0                 test  eax, eax
 *   1059: 74 df                    jz    top
 *   105b: 66 48                    dec   eax
 *   105d: 66 89 c2                 mov   edx, eax       ; ICR high: the destination
 *   1060: 66 b8 41 00 00 00        mov   eax, 0x41      ; ICR low: vector 0x41, fixed
 *   1066: 66 b9 30 08 00 00        mov   ecx, 0x830     ; ICR: sends the IPI
 *   106c: 0f 30                    wrmsr
 *   106e: eb e3                    jmp   kick
 *   1070: 66 89 c1           busy: mov   ecx, eax
 *   1073: 66 01 cb           work: add   ebx, ecx
 *   1076: 66 d1 c3                 rol   ebx, 1
 *   1079: 66 49                    dec   ecx
 *   107b: 75 f6                    jnz   work
 *   107d: eb bb                    jmp   top
 *   107f: 66 50              isr:  push  eax           ; the timer's (0x40)
 *   1081: 66 51                    push  ecx
 *   1083: 66 52                    push  edx
 *   1085: 66 b9 0b 08 00 00        mov   ecx, 0x80b     ; EOI
 *   108b: 66 31 c0                 xor   eax, eax
 *   108e: 66 31 d2                 xor   edx, edx
 *   1091: 0f 30                    wrmsr
 *   1093: 66 ff 44 18              inc   dword [si+24]  ; MAILBOX_TIMER_IRQS
 *   1097: 66 5a                    pop   edx
 *   1099: 66 59                    pop   ecx
 *   109b: 66 58                    pop   eax
 *   109d: cf                       iret
 *   109e: 66 50              ipi:  push  eax           ; the IPI's (0x41): the same,
 *   ...                                                 ; counting at [si+28]
 *   10b2: 66 ff 44 1c              inc   dword [si+28]  ; MAILBOX_IPIS
 *   10bc: cf                       iret
 *
 * (Assembled with `as --32` from .code16 source; check: objdump -D -b binary
 * -m i8086 --adjust-vma=0x1000 on these bytes.)
 */
const unsigned char guest_code_irq[] = {
	0x66, 0xb9, 0x1b, 0x00, 0x00, 0x00, 0x0f, 0x32, 0x0d, 0x00, 0x0c, 0x0f, 0x30,
	0x66, 0xb9, 0x0f, 0x08, 0x00, 0x00, 0x66, 0xb8, 0xff, 0x01, 0x00, 0x00, 0x66, 0x31, 0xd2, 0x0f, 0x30,
	0x66, 0xb9, 0x32, 0x08, 0x00, 0x00, 0x66, 0xb8, GUEST_TIMER_VECTOR, 0x00, 0x00, 0x00, 0x0f, 0x30,
	0x66, 0xb9, 0x3e, 0x08, 0x00, 0x00, 0x66, 0xb8, 0x0b, 0x00, 0x00, 0x00, 0x0f, 0x30,
	0x66, 0xe5, GUEST_PORT_WORK, 0x66, 0x85, 0xc0, 0x75, 0x2e,
	0x66, 0xe5, GUEST_PORT_IDLE, 0x66, 0xb9, 0x38, 0x08, 0x00, 0x00, 0x66, 0x31, 0xd2, 0x0f, 0x30,
	0xfb, 0xf4, 0xfa,
	0x66, 0xe5, GUEST_PORT_KICK, 0x66, 0x85, 0xc0, 0x74, 0xdf, 0x66, 0x48, 0x66, 0x89, 0xc2,
	0x66, 0xb8, GUEST_IPI_VECTOR, 0x00, 0x00, 0x00, 0x66, 0xb9, 0x30, 0x08, 0x00, 0x00, 0x0f, 0x30, 0xeb, 0xe3,
	0x66, 0x89, 0xc1, 0x66, 0x01, 0xcb, 0x66, 0xd1, 0xc3, 0x66, 0x49, 0x75, 0xf6, 0xeb, 0xbb,
	0x66, 0x50, 0x66, 0x51, 0x66, 0x52, 0x66, 0xb9, 0x0b, 0x08, 0x00, 0x00, 0x66, 0x31, 0xc0, 0x66, 0x31, 0xd2,
	0x0f, 0x30, 0x66, 0xff, 0x44, MAILBOX_TIMER_IRQS, 0x66, 0x5a, 0x66, 0x59, 0x66, 0x58, 0xcf,
	0x66, 0x50, 0x66, 0x51, 0x66, 0x52, 0x66, 0xb9, 0x0b, 0x08, 0x00, 0x00, 0x66, 0x31, 0xc0, 0x66, 0x31, 0xd2,
	0x0f, 0x30, 0x66, 0xff, 0x44, MAILBOX_IPIS, 0x66, 0x5a, 0x66, 0x59, 0x66, 0x58, 0xcf,
};
const size_t guest_code_irq_size = sizeof(guest_code_irq);
const unsigned short guest_irq_isr_offset = 0x7f;
const unsigned short guest_ipi_isr_offset = 0x9e;

/*
 * The --address-spaces program: 32-bit protected mode with paging (the VMM
 * sets CR0.PE|PG, CR4.PSE, flat 4 GiB segments, CR3 = GUEST_PD_B), the same
 * protocol on port 0x10, and before each chunk's loop it switches to the
 * other page directory: EDI holds the current CR3, ESI = GUEST_PD_A ^
 * GUEST_PD_B (set by the VMM), so the chunks run in A, B, A, B, ...
 *
 *   1000: e5 10              top:  in    eax, 0x10
 *   1002: 85 c0                    test  eax, eax
 *   1004: 74 10                    jz    idle
 *   1006: 89 c1                    mov   ecx, eax
 *   1008: 31 f7                    xor   edi, esi      ; the other page directory
 *   100a: 0f 22 df                 mov   cr3, edi
 *   100d: 01 cb              work: add   ebx, ecx
 *   100f: d1 c3                    rol   ebx, 1
 *   1011: 49                       dec   ecx
 *   1012: 75 f9                    jnz   work
 *   1014: eb ea                    jmp   top
 *   1016: f4                 idle: hlt
 *   1017: eb e7                    jmp   top
 *
 * (Check: objdump -D -b binary -m i386 --adjust-vma=0x1000 on these bytes.)
 */
const unsigned char guest_code_as[] = {
	0xe5, GUEST_PORT_WORK, 0x85, 0xc0, 0x74, 0x10, 0x89, 0xc1, 0x31, 0xf7, 0x0f, 0x22, 0xdf,
	0x01, 0xcb, 0xd1, 0xc3, 0x49, 0x75, 0xf9, 0xeb, 0xea, 0xf4, 0xeb, 0xe7,
};
const size_t guest_code_as_size = sizeof(guest_code_as);

/*
 * The --nested programs (AMD SVM). The guest is a hypervisor in 32-bit
 * protected mode without paging (the VMM sets CR0.PE, EFER.SVME, the CPUID
 * with SVM, VM_HSAVE_PA, and ESI = its VMCB, which it filled: VMRUN, VMMCALL
 * and HLT intercepted, ASID 1, flat 32-bit segments). For each chunk of the
 * protocol on port 0x10 it runs its own guest from the start, with ECX = the
 * chunk's iterations (SVM leaves the general registers to the hypervisor:
 * its guest gets them as they are):
 *
 *   1000: e5 10              top:  in    eax, 0x10
 *   1002: 85 c0                    test  eax, eax
 *   1004: 74 13                    jz    idle
 *   1006: 89 c1                    mov   ecx, eax
 *   1008: c7 86 78 05 00 00        mov   dword [esi+0x578], 0x3000  ; the VMCB's RIP
 *         00 30 00 00
 *   1012: 89 f0                    mov   eax, esi
 *   1014: 0f 01 d8                 vmrun
 *   1017: eb e7                    jmp   top
 *   1019: f4                 idle: hlt
 *   101a: eb e4                    jmp   top
 *
 * Its guest, at 0x3000: the chunk's loop, then VMMCALL, which its
 * hypervisor intercepts (a VM exit reflected to it):
 *
 *   3000: 01 cb              work: add   ebx, ecx
 *   3002: d1 c3                    rol   ebx, 1
 *   3004: 49                       dec   ecx
 *   3005: 75 f9                    jnz   work
 *   3007: 0f 01 d9                 vmmcall
 *   300a: eb fe                    jmp   $
 *
 * (Assembled with `as --32`; check: objdump -D -b binary -m i386
 * --adjust-vma=0x1000 / 0x3000 on these bytes.)
 */
const unsigned char guest_code_nested[] = {
	0xe5, GUEST_PORT_WORK, 0x85, 0xc0, 0x74, 0x13, 0x89, 0xc1, 0xc7, 0x86, 0x78, 0x05, 0x00, 0x00,
	0x00, 0x30, 0x00, 0x00, 0x89, 0xf0, 0x0f, 0x01, 0xd8, 0xeb, 0xe7, 0xf4, 0xeb, 0xe4,
};
const size_t guest_code_nested_size = sizeof(guest_code_nested);
const unsigned char guest_code_nested_l2[] = {
	0x01, 0xcb, 0xd1, 0xc3, 0x49, 0x75, 0xf9, 0x0f, 0x01, 0xd9, 0xeb, 0xfe,
};
const size_t guest_code_nested_l2_size = sizeof(guest_code_nested_l2);

const unsigned short guest_mix_count_offset[MIX_NR_OPS] = {
	[MIX_CPUID] = 0x1e,
	[MIX_RDMSR] = 0x2f,
	[MIX_WRMSR] = 0x46,
	[MIX_MMIO] = 0x59,
	[MIX_TOUCH] = 0x6c,
};

const char *const microvm_mix_names[MIX_NR_OPS] = {
	[MIX_CPUID] = "cpuid", [MIX_RDMSR] = "rdmsr", [MIX_WRMSR] = "wrmsr",
	[MIX_MMIO] = "mmio",   [MIX_TOUCH] = "touch",
};
