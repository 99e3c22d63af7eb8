/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ctf_synth.h - write a CTF 1.8 trace as LTTng's kernel tracer lays it out
 * (TSDL metadata, one stream file per CPU, the tid/pid/procname event
 * context, cpu_id in the packet context, LTTng's event and field names),
 * from the same struct tev events as trace_synth.h: the CTF twin of an
 * ftrace text trace.
 */
#ifndef VCPUSTAT_TEST_CTF_SYNTH_H
#define VCPUSTAT_TEST_CTF_SYNTH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "import/import.h"
#include "trace_synth.h"

#define CTF_CHAR "integer { size = 8; align = 8; signed = true; encoding = UTF8; base = 10; }"

static const char ctf_metadata[] =
	"/* CTF 1.8 */\n"
	"\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	"\n"
	"trace {\n"
	"	major = 1;\n"
	"	minor = 8;\n"
	"	byte_order = le;\n"
	"	packet.header := struct {\n"
	"		uint32_t magic;\n"
	"		uint32_t stream_id;\n"
	"	};\n"
	"};\n"
	"\n"
	"env {\n"
	"	domain = \"kernel\";\n"
	"	tracer_name = \"lttng-modules\";\n"
	"	tracer_major = 2;\n"
	"	tracer_minor = 13;\n"
	"	hostname = \"vcpustat-test\";\n"
	"};\n"
	"\n"
	"clock {\n"
	"	name = \"monotonic\";\n"
	"	description = \"Monotonic Clock\";\n"
	"	freq = 1000000000;\n"
	"	offset = 0;\n"
	"};\n"
	"\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := "
	"uint64_clock_monotonic_t;\n"
	"\n"
	"stream {\n"
	"	id = 0;\n"
	"	packet.context := struct {\n"
	"		uint64_clock_monotonic_t timestamp_begin;\n"
	"		uint64_clock_monotonic_t timestamp_end;\n"
	"		uint64_t content_size;\n"
	"		uint64_t packet_size;\n"
	"		uint32_t cpu_id;\n"
	"	};\n"
	"	event.header := struct {\n"
	"		uint32_t id;\n"
	"		uint64_clock_monotonic_t timestamp;\n"
	"	};\n"
	"	event.context := struct {\n"
	"		int32_t _pid;\n"
	"		int32_t _tid;\n"
	"		" CTF_CHAR " _procname[17];\n"
	"	};\n"
	"};\n"
	"\n"
	"event { name = \"sched_switch\"; id = 0; stream_id = 0; fields := struct { " CTF_CHAR
	" _prev_comm[16]; int32_t _prev_tid; int32_t _prev_prio; int64_t _prev_state; " CTF_CHAR
	" _next_comm[16]; int32_t _next_tid; int32_t _next_prio; }; };\n"
	"event { name = \"sched_wakeup\"; id = 1; stream_id = 0; fields := struct { " CTF_CHAR
	" _comm[16]; int32_t _tid; int32_t _prio; int32_t _target_cpu; }; };\n"
	"event { name = \"sched_wakeup_new\"; id = 2; stream_id = 0; fields := struct { " CTF_CHAR
	" _comm[16]; int32_t _tid; int32_t _prio; int32_t _target_cpu; }; };\n"
	"event { name = \"sched_migrate_task\"; id = 3; stream_id = 0; fields := struct { " CTF_CHAR
	" _comm[16]; int32_t _tid; int32_t _prio; int32_t _orig_cpu; int32_t _dest_cpu; }; };\n"
	"event { name = \"sched_process_exit\"; id = 4; stream_id = 0; fields := struct { " CTF_CHAR
	" _comm[16]; int32_t _tid; int32_t _prio; }; };\n"
	"event { name = \"kvm_x86_entry\"; id = 5; stream_id = 0; fields := struct { uint32_t _vcpu_id; uint64_t _rip; "
	"}; };\n"
	"event { name = \"kvm_x86_exit\"; id = 6; stream_id = 0; fields := struct { uint32_t _exit_reason; uint64_t "
	"_guest_rip; uint32_t _isa; uint64_t _info1; uint64_t _info2; uint32_t _vcpu_id; }; };\n"
	"event { name = \"kvm_userspace_exit\"; id = 7; stream_id = 0; fields := struct { uint32_t _reason; int32_t "
	"_errno; }; };\n"
	"event { name = \"kvm_fpu\"; id = 8; stream_id = 0; fields := struct { uint32_t _load; }; };\n"
	"event { name = \"kvm_x86_hypercall\"; id = 9; stream_id = 0; fields := struct { uint64_t _nr; uint64_t _a0; "
	"uint64_t _a1; uint64_t _a2; uint64_t _a3; }; };\n"
	"event { name = \"irq_handler_entry\"; id = 10; stream_id = 0; fields := struct { int32_t _irq; string _name; "
	"}; };\n"
	"event { name = \"lttng_logger\"; id = 11; stream_id = 0; fields := struct { string _msg; }; };\n";

struct ctf_buf {
	unsigned char *b;
	size_t n, cap;
	uint64_t first, last;
	bool any;
};

static inline void ctf_put(struct ctf_buf *s, const void *p, size_t n)
{
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2 + 4096;
		s->b = realloc(s->b, s->cap);
	}
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static inline void ctf_u32(struct ctf_buf *s, uint32_t v)
{
	ctf_put(s, &v, 4); /* the test machines are little endian, as the metadata says */
}

static inline void ctf_u64(struct ctf_buf *s, uint64_t v)
{
	ctf_put(s, &v, 8);
}

static inline void ctf_chars(struct ctf_buf *s, const char *str, size_t n)
{
	char buf[32] = { 0 };

	strncpy(buf, str ? str : "", n - 1);
	ctf_put(s, buf, n);
}

static inline void ctf_string(struct ctf_buf *s, const char *str)
{
	ctf_put(s, str, strlen(str) + 1);
}

/* LTTng's prev_state: TASK_REPORT bits, 0x100 = preempted. */
static inline uint64_t ctf_prev_state(const char *state)
{
	if (!strcmp(state, "R+"))
		return 0x100;
	if (!strcmp(state, "R"))
		return 0;
	if (!strcmp(state, "S"))
		return 1;
	if (!strcmp(state, "D"))
		return 2;
	if (!strcmp(state, "Z"))
		return 0x20;
	if (!strcmp(state, "X"))
		return 0x10;
	return 1;
}

static inline void ctf_event(struct ctf_buf *s, const struct tev *e)
{
	static const uint32_t ids[] = { [T_SWITCH] = 0, [T_WAKEUP] = 1, [T_WAKEUP_NEW] = 2, [T_MIGRATE] = 3,
					[T_PEXIT] = 4,	[T_ENTRY] = 5,	[T_KEXIT] = 6,	    [T_UEXIT] = 7,
					[T_FPU] = 8,	[T_HCALL] = 9,	[T_OTHER] = 10,	    [T_MARKER] = 11 };
	uint32_t code = 0, isa = 0;
	char msg[64];

	if (!s->any)
		s->first = e->ts;
	s->any = true;
	s->last = e->ts;
	ctf_u32(s, ids[e->type]);
	ctf_u64(s, e->ts);
	ctf_u32(s, e->tgid);
	ctf_u32(s, e->pid);
	ctf_chars(s, e->comm, 17);
	switch (e->type) {
	case T_SWITCH:
		ctf_chars(s, e->comm, 16);
		ctf_u32(s, e->pid);
		ctf_u32(s, 120);
		ctf_u64(s, ctf_prev_state(e->state));
		ctf_chars(s, e->comm2, 16);
		ctf_u32(s, e->pid2);
		ctf_u32(s, 120);
		break;
	case T_WAKEUP:
	case T_WAKEUP_NEW:
		ctf_chars(s, e->comm2, 16);
		ctf_u32(s, e->pid2);
		ctf_u32(s, 120);
		ctf_u32(s, e->cpu2);
		break;
	case T_MIGRATE:
		ctf_chars(s, e->comm2, 16);
		ctf_u32(s, e->pid2);
		ctf_u32(s, 120);
		ctf_u32(s, e->cpu2);
		ctf_u32(s, e->cpu3);
		break;
	case T_PEXIT:
		ctf_chars(s, e->comm, 16);
		ctf_u32(s, e->pid);
		ctf_u32(s, 120);
		break;
	case T_ENTRY:
		ctf_u32(s, e->vcpu);
		ctf_u64(s, 0xffffffff8103a2b6ull);
		break;
	case T_KEXIT:
		ftrace_exit_reason(e->reason, strlen(e->reason), 0, &code, &isa);
		ctf_u32(s, code);
		ctf_u64(s, 0xffffffff8103a2b6ull);
		ctf_u32(s, isa);
		ctf_u64(s, 0);
		ctf_u64(s, 0);
		ctf_u32(s, e->vcpu);
		break;
	case T_UEXIT:
		ctf_u32(s, e->ureason);
		ctf_u32(s, 0);
		break;
	case T_FPU:
		ctf_u32(s, 1);
		break;
	case T_HCALL:
		ctf_u64(s, e->nr ? e->nr : 0x56435331ull);
		ctf_u64(s, e->key);
		ctf_u64(s, 0);
		ctf_u64(s, 0);
		ctf_u64(s, 0);
		break;
	case T_OTHER:
		ctf_u32(s, 24);
		ctf_string(s, "virtio0-input.0");
		break;
	case T_MARKER:
		snprintf(msg, sizeof(msg), "vcpustat_sync: %c k=%llu\n", e->mark, (unsigned long long)e->key);
		ctf_string(s, msg);
		break;
	}
}

/* Write the trace into a new directory (returned, static storage); ncpu stream files. */
static inline const char *ctf_write(const char *dir, const struct tev *ev, size_t n, unsigned int ncpu)
{
	struct ctf_buf *cpu = calloc(ncpu, sizeof(*cpu));
	char path[512];
	FILE *f;

	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	f = fopen(path, "w");
	fputs(ctf_metadata, f);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		ctf_event(&cpu[ev[i].cpu % ncpu], &ev[i]);
	for (unsigned int c = 0; c < ncpu; c++) {
		struct ctf_buf pkt = { 0 };
		uint64_t bits;

		if (!cpu[c].any)
			continue;
		bits = (8 + 8 + 8 + 8 + 8 + 4 + cpu[c].n) * 8;
		ctf_u32(&pkt, 0xc1fc1fc1u);
		ctf_u32(&pkt, 0);
		ctf_u64(&pkt, cpu[c].first);
		ctf_u64(&pkt, cpu[c].last);
		ctf_u64(&pkt, bits);
		ctf_u64(&pkt, bits);
		ctf_u32(&pkt, c);
		ctf_put(&pkt, cpu[c].b, cpu[c].n);
		snprintf(path, sizeof(path), "%s/chan_%u", dir, c);
		f = fopen(path, "w");
		fwrite(pkt.b, 1, pkt.n, f);
		fclose(f);
		free(pkt.b);
		free(cpu[c].b);
	}
	free(cpu);
	return dir;
}

#endif
