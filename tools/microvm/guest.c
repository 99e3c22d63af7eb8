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
