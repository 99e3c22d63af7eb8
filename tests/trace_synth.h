/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_synth.h - write ftrace text for the import tests: one abstract event,
 * printed in any of the layouts the importer accepts (tgid column or not,
 * irq-flags column or not, 6 or 9 decimals, old or new kvm_entry/kvm_exit
 * text, trace-cmd's sched plugin form), exactly as tracefs or trace-cmd print it.
 */
#ifndef VCPUSTAT_TEST_TRACE_SYNTH_H
#define VCPUSTAT_TEST_TRACE_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum tev_type {
	T_SWITCH = 1, /* pid/comm = prev (current), state = prev_state, pid2/comm2 = next */
	T_WAKEUP,     /* pid2/comm2 woken, on target cpu2, by current pid */
	T_WAKEUP_NEW,
	T_MIGRATE, /* pid2/comm2 moved cpu2 -> cpu3 */
	T_PEXIT,   /* current exits, group_dead = vcpu */
	T_ENTRY,   /* kvm_entry of current, vcpu id */
	T_KEXIT,   /* kvm_exit of current: reason name, isa */
	T_UEXIT,   /* kvm_userspace_exit: reason = KVM_EXIT_* code */
	T_FPU,	   /* kvm_fpu load */
	T_HCALL,   /* kvm_hypercall nr, key */
	T_MARKER,  /* "vcpustat_sync: <mark> k=<key>" */
	T_OTHER,   /* an event vcpustat does not use (irq_handler_entry) */
};

struct tev {
	enum tev_type type;
	uint64_t ts;	/* ns */
	uint32_t cpu;
	uint32_t pid, tgid; /* the current thread */
	const char *comm;
	const char *state;  /* T_SWITCH prev_state: "R+", "S", "D|K" ... */
	uint32_t pid2;
	const char *comm2;
	uint32_t cpu2, cpu3;
	uint32_t vcpu;	     /* kvm vcpu id */
	const char *reason;  /* T_KEXIT: name as the kernel prints it ("MSR_WRITE", "npf") */
	uint32_t ureason;    /* T_UEXIT */
	uint64_t nr, key;    /* T_HCALL (nr 0: the sync nr), T_MARKER */
	char mark;	     /* T_MARKER: 'a' or 'd' */
};

struct layout {
	bool tgid;	/* the (TGID) column */
	bool irq;	/* the irq-flags column */
	int decimals;	/* 6 or 9 */
	bool old_kvm;	/* kvm_exit "reason X rip 0x.. info .. .." / kvm_entry "vcpu N" */
	bool plugin;	/* trace-cmd's sched_switch / sched_wakeup plugin text */
	bool tracecmd;	/* trace-cmd report's header and spacing */
};

static const char *const kusp_names[] = { "UNKNOWN", "EXCEPTION", "IO", "HYPERCALL", "DEBUG", "HLT", "MMIO",
					  "IRQ_WINDOW_OPEN", "SHUTDOWN", "FAIL_ENTRY", "INTR" };

static inline void tev_header(FILE *f, const struct layout *l)
{
	if (l->tracecmd) {
		fprintf(f, "cpus=2\n");
		return;
	}
	fprintf(f, "# tracer: nop\n#\n# entries-in-buffer/entries-written: 1/1   #P:2\n#\n");
	fprintf(f, "#           TASK-PID     %sCPU#  %sTIMESTAMP  FUNCTION\n", l->tgid ? "  TGID    " : "",
		l->irq ? "|||||  " : "");
	fprintf(f, "#              | |         |   |||||     |         |\n");
}

static inline void tev_write(FILE *f, const struct tev *e, const struct layout *l)
{
	char tgid[24] = "", irq[8] = "", ts[40];
	uint64_t us = e->ts / 1000;

	if (l->tgid) {
		if (e->tgid)
			snprintf(tgid, sizeof(tgid), "(%7u) ", e->tgid);
		else
			snprintf(tgid, sizeof(tgid), "(-------) ");
	}
	if (l->irq)
		snprintf(irq, sizeof(irq), "d..2. ");
	if (l->decimals == 6)
		snprintf(ts, sizeof(ts), "%5llu.%06llu", (unsigned long long)(us / 1000000),
			 (unsigned long long)(us % 1000000));
	else
		snprintf(ts, sizeof(ts), "%5llu.%09llu", (unsigned long long)(e->ts / 1000000000),
			 (unsigned long long)(e->ts % 1000000000));
	/* as the kernel's trace_print_context() and trace-cmd report print them */
	if (l->tracecmd)
		fprintf(f, "%16s-%-5u %s[%03u] %s%s: ", e->comm, e->pid, tgid, e->cpu, irq, ts);
	else
		fprintf(f, "%16s-%-7u %s[%03u] %s%s: ", e->comm, e->pid, tgid, e->cpu, irq, ts);
	switch (e->type) {
	case T_SWITCH:
		if (l->plugin)
			fprintf(f, "sched_switch:         %s:%u [120] %s ==> %s:%u [120]\n", e->comm, e->pid,
				strcmp(e->state, "R+") ? e->state : "R", e->comm2, e->pid2);
		else
			fprintf(f,
				"sched_switch: prev_comm=%s prev_pid=%u prev_prio=120 prev_state=%s ==> next_comm=%s "
				"next_pid=%u next_prio=120\n",
				e->comm, e->pid, e->state, e->comm2, e->pid2);
		break;
	case T_WAKEUP:
	case T_WAKEUP_NEW:
		if (l->plugin)
			fprintf(f, "%s: %s:%u [120] CPU:%03u\n", e->type == T_WAKEUP ? "sched_wakeup" : "sched_wakeup_new",
				e->comm2, e->pid2, e->cpu2);
		else
			fprintf(f, "%s: comm=%s pid=%u prio=120 target_cpu=%03u\n",
				e->type == T_WAKEUP ? "sched_wakeup" : "sched_wakeup_new", e->comm2, e->pid2, e->cpu2);
		break;
	case T_MIGRATE:
		fprintf(f, "sched_migrate_task: comm=%s pid=%u prio=120 orig_cpu=%u dest_cpu=%u\n", e->comm2, e->pid2,
			e->cpu2, e->cpu3);
		break;
	case T_PEXIT:
		fprintf(f, "sched_process_exit: comm=%s pid=%u prio=120 group_dead=%s\n", e->comm, e->pid,
			e->vcpu ? "true" : "false");
		break;
	case T_ENTRY:
		if (l->old_kvm)
			fprintf(f, "kvm_entry: vcpu %u\n", e->vcpu);
		else
			fprintf(f, "kvm_entry: vcpu %u, rip 0xffffffff8103a2b6 intr_info 0x00000000 error_code 0x00000000\n",
				e->vcpu);
		break;
	case T_KEXIT:
		if (l->old_kvm)
			fprintf(f, "kvm_exit: reason %s rip 0xffffffff8103a2b6 info 0 0\n", e->reason);
		else
			fprintf(f,
				"kvm_exit: vcpu %u reason %s rip 0xffffffff8103a2b6 info1 0x0000000000000000 info2 "
				"0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000\n",
				e->vcpu, e->reason);
		break;
	case T_UEXIT:
		fprintf(f, "kvm_userspace_exit: reason KVM_EXIT_%s (%u)\n",
			e->ureason < sizeof(kusp_names) / sizeof(kusp_names[0]) ? kusp_names[e->ureason] : "X", e->ureason);
		break;
	case T_FPU:
		fprintf(f, "kvm_fpu: load\n");
		break;
	case T_HCALL:
		fprintf(f, "kvm_hypercall: nr 0x%llx a0 0x%llx a1 0x0 a2 0x0 a3 0x0\n",
			(unsigned long long)(e->nr ? e->nr : 0x56435331ull), (unsigned long long)e->key);
		break;
	case T_MARKER:
		fprintf(f, "tracing_mark_write: vcpustat_sync: %c k=%llu\n", e->mark, (unsigned long long)e->key);
		break;
	case T_OTHER:
		fprintf(f, "irq_handler_entry: irq=24 name=virtio0-input.0\n");
		break;
	}
}

#endif
