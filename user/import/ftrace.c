// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ftrace.c - ftrace text lines -> struct trace_event.
 *
 * A line is
 *
 *   <comm>-<pid> [(<tgid>)] [<cpu>] [<irq flags>] <secs>.<frac>: <event>: <fields>
 *
 * (tracefs `trace` and `trace_pipe`, with or without the record-tgid and
 * irq-info options; `trace-cmd report`). The header is parsed first; an event
 * the analysis does not use is skipped on its name, before any field is read.
 * Everything works on (pointer, end) spans of the caller's buffer: no copy,
 * no allocation, no NUL terminator needed.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "import/import.h"
#include "sync/sync.h"

typedef const char *cp;

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal digits at *p (at most 19): the value; *p moves past them. false if none. */
static bool num(cp *p, cp e, uint64_t *v)
{
	cp s = *p;
	uint64_t x = 0;

	while (*p < e && is_digit(**p) && *p - s < 19)
		x = x * 10 + (uint64_t)(*(*p)++ - '0');
	*v = x;
	return *p > s && (*p >= e || !is_digit(**p));
}

/* The value of a hexadecimal digit, or -1. */
static int hexdigit(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 0x-prefixed (or bare) hexadecimal, at most 16 digits. */
static bool hexnum(cp *p, cp e, uint64_t *v)
{
	uint64_t x = 0;
	cp s;
	int d;

	if (e - *p >= 2 && (*p)[0] == '0' && ((*p)[1] == 'x' || (*p)[1] == 'X'))
		*p += 2;
	s = *p;
	for (; *p < e && *p - s < 16 && (d = hexdigit(**p)) >= 0; (*p)++)
		x = x << 4 | (uint64_t)d;
	*v = x;
	return *p > s && (*p >= e || hexdigit(**p) < 0);
}

static void skip_spaces(cp *p, cp e)
{
	while (*p < e && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* The first occurrence of the literal s (n bytes) in [p, e), or NULL. */
static cp find(cp p, cp e, const char *s, size_t n)
{
	if (p >= e || (size_t)(e - p) < n)
		return NULL;
	return memmem(p, (size_t)(e - p), s, n);
}

#define FIND(p, e, lit) find((p), (e), (lit), sizeof(lit) - 1)

/*
 * A " key=" that usually follows within a few bytes (after a task name, which
 * may hold spaces, or a number): tried at each space of the next 64 bytes
 * first (far cheaper than memmem on every line), then anywhere.
 */
static cp find_near(cp p, cp e, const char *key, size_t n)
{
	cp lim = e - p > 64 ? p + 64 : e;

	for (cp q = p; q < lim; q++) {
		q = memchr(q, key[0], (size_t)(lim - q));
		if (!q)
			break;
		if ((size_t)(e - q) >= n && !memcmp(q, key, n))
			return q;
	}
	return find(lim, e, key, n);
}

#define NEAR(p, e, lit) find_near((p), (e), (lit), sizeof(lit) - 1)

static bool starts(cp p, cp e, const char *s, size_t n)
{
	return (size_t)(e - p) >= n && !memcmp(p, s, n);
}

#define STARTS(p, e, lit) starts((p), (e), (lit), sizeof(lit) - 1)

/* The last occurrence of c in [p, e), or NULL. */
static cp rfind(cp p, cp e, char c)
{
	if (p >= e)
		return NULL;
	return memrchr(p, c, (size_t)(e - p));
}

static void copy_comm(char dst[16], cp s, cp e)
{
	size_t n = e > s ? (size_t)(e - s) : 0;

	if (n > 15)
		n = 15;
	memset(dst, 0, 16);
	memcpy(dst, s, n);
}

static enum ftrace_line bad(struct ftrace_parser *ps, const char *what)
{
	snprintf(ps->why, sizeof(ps->why), "%s", what);
	return FTRACE_BAD;
}

/* ---- prev_state ---- */

int ftrace_prev_state(const char *s, size_t len, uint64_t *state, int *preempt)
{
	cp p = s, e = s + len;
	uint64_t st = 0;
	bool any = false;

	*preempt = 0;
	if (p < e && e[-1] == '+') { /* "R+": the task was preempted (TASK_REPORT_MAX) */
		*preempt = 1;
		e--;
	}
	while (p < e) {
		switch (*p++) {
		case 'R': break;	       /* running: no bit */
		case 'S': st |= 0x1; break;    /* TASK_INTERRUPTIBLE */
		case 'D': st |= 0x2; break;    /* TASK_UNINTERRUPTIBLE */
		case 'T': st |= 0x4; break;    /* __TASK_STOPPED */
		case 't': st |= 0x8; break;    /* __TASK_TRACED */
		case 'X': st |= 0x10; break;   /* EXIT_DEAD */
		case 'Z': st |= 0x20; break;   /* EXIT_ZOMBIE */
		case 'P': st |= 0x40; break;   /* TASK_PARKED */
		case 'x': st |= 0x80; break;   /* TASK_DEAD (older kernels print it) */
		case 'I': st |= 0x402; break;  /* TASK_IDLE = UNINTERRUPTIBLE | NOLOAD */
		case 'K': st |= 0x100; break;  /* TASK_WAKEKILL (older kernels: "D|K") */
		case 'W': st |= 0x200; break;  /* TASK_WAKING */
		case 'N': st |= 0x400; break;  /* TASK_NOLOAD */
		default: return -1;
		}
		any = true;
		if (p < e) {
			if (*p != '|')
				return -1;
			p++;
			if (p == e)
				return -1;
		}
	}
	if (!any)
		return -1;
	*state = st;
	return 0;
}

/* ---- exit reasons ---- */

struct reason_name {
	const char *name;
	uint32_t code;
};

#define X_VMX(code, name) { #name, code },
#define X_SVM(code, name) { name, code },
static const struct reason_name vmx_names[] = { VCPUSTAT_VMX_EXIT_REASONS(X_VMX) };
static const struct reason_name svm_names[] = { VCPUSTAT_SVM_EXIT_REASONS(X_SVM) };
#undef X_VMX
#undef X_SVM

/* SVM_EXIT_<NAME> constants whose printed name differs (old kernels printed "EXIT_IOIO"). */
static const struct reason_name svm_aliases[] = {
	{ "INTR", 0x060 },	     { "IDTR_READ", 0x066 },	   { "GDTR_READ", 0x067 },
	{ "LDTR_READ", 0x068 },	     { "TR_READ", 0x069 },	   { "IDTR_WRITE", 0x06a },
	{ "GDTR_WRITE", 0x06b },     { "LDTR_WRITE", 0x06c },	   { "TR_WRITE", 0x06d },
	{ "IOIO", 0x07b },	     { "VMMCALL", 0x081 },	   { "EFER_WRITE_TRAP", 0x08f },
	{ "CR0_WRITE_TRAP", 0x090 }, { "CR4_WRITE_TRAP", 0x094 }, { "CR8_WRITE_TRAP", 0x098 },
	{ "BUS_LOCK", 0x0a5 },	     { "IDLE_HLT", 0x0a6 },	   { "ERR", 0xffffffffu },
};

static bool eq(const char *name, cp s, size_t n)
{
	return strlen(name) == n && !memcmp(name, s, n);
}

static bool eq_nocase(const char *name, cp s, size_t n)
{
	return strlen(name) == n && !strncasecmp(name, s, n);
}

static int lookup(const struct reason_name *t, size_t nt, cp s, size_t n, bool nocase, uint32_t *code)
{
	for (size_t i = 0; i < nt; i++)
		if (nocase ? eq_nocase(t[i].name, s, n) : eq(t[i].name, s, n)) {
			*code = t[i].code;
			return 0;
		}
	return -1;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

int ftrace_exit_reason(const char *name, size_t len, unsigned int hint, uint32_t *code, uint32_t *isa)
{
	cp s = name, e = name + len;
	uint64_t v;

	if (!len)
		return -1;
	/* exact, as the kernel prints them: VMX upper case, SVM lower case */
	if (!lookup(vmx_names, N(vmx_names), s, len, false, code)) {
		*isa = KVM_ISA_VMX;
		return 0;
	}
	if (!lookup(svm_names, N(svm_names), s, len, false, code)) {
		*isa = KVM_ISA_SVM;
		return 0;
	}
	/* a number (old kernels, unknown codes) */
	if (is_digit(*s)) {
		cp p = s;

		if ((len > 2 && s[1] == 'x' && hexnum(&p, e, &v)) || num(&p, e, &v)) {
			if (p == e && v <= UINT32_MAX) {
				*code = (uint32_t)v;
				*isa = hint ? hint : KVM_ISA_VMX;
				return 0;
			}
		}
		return -1;
	}
	/* constant names: EXIT_REASON_X / VMX_EXIT_X are VMX, SVM_EXIT_X / EXIT_X are SVM */
	if (STARTS(s, e, "EXIT_REASON_") || STARTS(s, e, "VMX_EXIT_")) {
		s += s[0] == 'E' ? 12 : 9;
		if (!lookup(vmx_names, N(vmx_names), s, (size_t)(e - s), true, code)) {
			*isa = KVM_ISA_VMX;
			return 0;
		}
		return -1;
	}
	if (STARTS(s, e, "SVM_EXIT_") || STARTS(s, e, "EXIT_")) {
		s += s[0] == 'S' ? 9 : 5;
		if (!lookup(svm_aliases, N(svm_aliases), s, (size_t)(e - s), true, code) ||
		    !lookup(svm_names, N(svm_names), s, (size_t)(e - s), true, code)) {
			*isa = KVM_ISA_SVM;
			return 0;
		}
		if (!lookup(vmx_names, N(vmx_names), s, (size_t)(e - s), true, code)) {
			*isa = KVM_ISA_VMX;
			return 0;
		}
		return -1;
	}
	/* any case: the hint (or the trace's isa so far) decides between the tables */
	if (hint != KVM_ISA_SVM && !lookup(vmx_names, N(vmx_names), s, len, true, code)) {
		*isa = KVM_ISA_VMX;
		return 0;
	}
	if (!lookup(svm_names, N(svm_names), s, len, true, code) ||
	    !lookup(svm_aliases, N(svm_aliases), s, len, true, code)) {
		*isa = KVM_ISA_SVM;
		return 0;
	}
	if (!lookup(vmx_names, N(vmx_names), s, len, true, code)) {
		*isa = KVM_ISA_VMX;
		return 0;
	}
	return -1;
}

/* The isa of a name the kernel prints exactly so (VMX upper case, SVM lower case), or 0. */
static unsigned int exact_isa(cp s, size_t n)
{
	uint32_t code;

	if (!lookup(vmx_names, N(vmx_names), s, n, false, &code))
		return KVM_ISA_VMX;
	if (!lookup(svm_names, N(svm_names), s, n, false, &code))
		return KVM_ISA_SVM;
	return 0;
}

/* The reason name through the parser's cache (kvm_exit is the most frequent KVM event). */
static int exit_reason(struct ftrace_parser *ps, cp s, size_t n, uint32_t *code, uint32_t *isa)
{
	unsigned int h = (unsigned int)n * 31u, slot, exact;
	int ret;

	for (size_t i = 0; i < n && i < 8; i++)
		h = h * 131u + (unsigned char)s[i];
	slot = h % FTRACE_REASON_CACHE;
	if (ps->cache[slot].len == n && !memcmp(ps->cache[slot].name, s, n)) {
		*code = ps->cache[slot].code;
		*isa = ps->cache[slot].isa;
		return 0;
	}
	ret = ftrace_exit_reason(s, n, ps->isa ? ps->isa : ps->seen_isa, code, isa);
	if (ret)
		return ret;
	exact = exact_isa(s, n);
	if (!exact)
		return 0; /* numbers and ambiguous names depend on the isa: not cached */
	if (!ps->isa)
		ps->seen_isa = exact; /* an unambiguous name tells the trace's isa */
	if (n < sizeof(ps->cache[0].name)) {
		memcpy(ps->cache[slot].name, s, n);
		ps->cache[slot].len = (uint8_t)n;
		ps->cache[slot].code = *code;
		ps->cache[slot].isa = (uint8_t)*isa;
	}
	return 0;
}

void ftrace_parser_init(struct ftrace_parser *p, unsigned int isa)
{
	memset(p, 0, sizeof(*p));
	p->isa = isa;
}

/* ---- events ---- */

enum ev_name {
	EVN_NONE = 0,
	EVN_SWITCH,
	EVN_WAKEUP,
	EVN_WAKEUP_NEW,
	EVN_MIGRATE,
	EVN_EXIT,
	EVN_KVM_ENTRY,
	EVN_KVM_EXIT,
	EVN_KVM_UEXIT,
	EVN_KVM_FPU,
	EVN_KVM_HYPERCALL,
	EVN_KVM_PIO,
	EVN_KVM_MMIO,
	EVN_KVM_MSR,
	EVN_KVM_PAGE_FAULT,
	EVN_MARKER,
};

static enum ev_name event_name(cp s, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(s, lit, n))
	switch (n) {
	case 5: return IS("print") ? EVN_MARKER : EVN_NONE;
	case 7:
		if (IS("kvm_pio"))
			return EVN_KVM_PIO;
		if (IS("kvm_msr"))
			return EVN_KVM_MSR;
		return IS("kvm_fpu") ? EVN_KVM_FPU : EVN_NONE;
	case 8:
		if (IS("kvm_mmio"))
			return EVN_KVM_MMIO;
		return IS("kvm_exit") ? EVN_KVM_EXIT : EVN_NONE;
	case 9: return IS("kvm_entry") ? EVN_KVM_ENTRY : EVN_NONE;
	case 12:
		if (IS("sched_switch"))
			return EVN_SWITCH;
		return IS("sched_wakeup") ? EVN_WAKEUP : EVN_NONE;
	case 13: return IS("kvm_hypercall") ? EVN_KVM_HYPERCALL : EVN_NONE;
	case 14: return IS("kvm_page_fault") ? EVN_KVM_PAGE_FAULT : EVN_NONE;
	case 16: return IS("sched_wakeup_new") ? EVN_WAKEUP_NEW : EVN_NONE;
	case 18:
		if (IS("sched_migrate_task"))
			return EVN_MIGRATE;
		if (IS("sched_process_exit"))
			return EVN_EXIT;
		if (IS("kvm_userspace_exit"))
			return EVN_KVM_UEXIT;
		return IS("tracing_mark_write") ? EVN_MARKER : EVN_NONE;
	default: return EVN_NONE;
	}
#undef IS
}

/* "key=<digits>" following a literal " key=" found in [p, e): the value. */
static bool field_num(cp p, cp e, const char *key, size_t klen, uint64_t *v, cp *after)
{
	cp q = find_near(p, e, key, klen);

	if (!q)
		return false;
	q += klen;
	if (q < e && *q == '-') /* a negative value: not one we accept */
		return false;
	if (!num(&q, e, v))
		return false;
	if (after)
		*after = q;
	return true;
}

#define FIELD_NUM(p, e, lit, v, after) field_num((p), (e), (lit), sizeof(lit) - 1, (v), (after))

/* "comm=<name> pid=<n>": the name (may hold spaces) and the pid. */
static bool comm_pid(cp f, cp e, cp *comm, cp *comm_end, uint64_t *pid, cp *after)
{
	cp q;

	if (!STARTS(f, e, "comm="))
		return false;
	*comm = f + 5;
	q = NEAR(*comm, e, " pid=");
	if (!q)
		return false;
	*comm_end = q;
	q += 5;
	if (!num(&q, e, pid))
		return false;
	*after = q;
	return true;
}

/* trace-cmd's plugin form "<comm>:<pid>" in [s, e) (the pid after the last ':'). */
static bool plugin_comm_pid(cp s, cp e, cp *comm_end, uint64_t *pid)
{
	cp colon = rfind(s, e, ':'), q;

	if (!colon)
		return false;
	q = colon + 1;
	if (!num(&q, e, pid) || q != e)
		return false;
	*comm_end = colon;
	return true;
}

/* Strip a trailing " [<prio>]" from [s, *e). */
static void strip_prio(cp s, cp *e)
{
	cp b = rfind(s, *e, '[');

	if (b && b > s && b[-1] == ' ' && (*e)[-1] == ']')
		*e = b - 1;
}

static enum ftrace_line parse_switch(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	struct vcpustat_event *ev = &t->ev;
	uint64_t prev, next, state;
	cp q, s, pc, pce, nc, nce;
	int preempt;

	if (STARTS(f, e, "prev_comm=")) {
		pc = f + 10;
		pce = NEAR(pc, e, " prev_pid=");
		if (!pce)
			return bad(ps, "sched_switch: no prev_pid=");
		q = pce + 10;
		if (!num(&q, e, &prev))
			return bad(ps, "sched_switch: prev_pid is not a number");
		s = NEAR(q, e, " prev_state=");
		if (!s)
			return bad(ps, "sched_switch: no prev_state=");
		s += 12;
		q = memchr(s, ' ', (size_t)(e - s));
		if (!q)
			return bad(ps, "sched_switch: nothing after prev_state");
		if (ftrace_prev_state(s, (size_t)(q - s), &state, &preempt))
			return bad(ps, "sched_switch: prev_state is not a task state (R, R+, S, D, D|K, ...)");
		nc = NEAR(q, e, "==> next_comm=");
		if (!nc)
			return bad(ps, "sched_switch: no '==> next_comm='");
		nc += 14;
		nce = NEAR(nc, e, " next_pid=");
		if (!nce)
			return bad(ps, "sched_switch: no next_pid=");
		q = nce + 10;
		if (!num(&q, e, &next))
			return bad(ps, "sched_switch: next_pid is not a number");
	} else {
		/* trace-cmd's sched_switch plugin: "<comm>:<pid> [<prio>] <state> ==> <comm>:<pid> [<prio>]" */
		cp arrow = FIND(f, e, " ==> "), le, sp;

		if (!arrow)
			return bad(ps, "sched_switch: neither 'prev_comm=' nor '==>'");
		le = arrow;
		sp = rfind(f, le, ' ');
		if (!sp)
			return bad(ps, "sched_switch: no prev state before '==>'");
		if (ftrace_prev_state(sp + 1, (size_t)(le - sp - 1), &state, &preempt))
			return bad(ps, "sched_switch: prev state is not a task state (R, S, D, ...)");
		le = sp;
		strip_prio(f, &le);
		pc = f;
		if (!plugin_comm_pid(f, le, &pce, &prev))
			return bad(ps, "sched_switch: no <comm>:<pid> before '==>'");
		nc = arrow + 5;
		le = e;
		while (le > nc && (le[-1] == ' ' || le[-1] == '\t'))
			le--;
		strip_prio(nc, &le);
		if (!plugin_comm_pid(nc, le, &nce, &next))
			return bad(ps, "sched_switch: no <comm>:<pid> after '==>'");
	}
	if (prev > UINT32_MAX || next > UINT32_MAX)
		return bad(ps, "sched_switch: pid out of range");
	ev->type = VCPUSTAT_EV_SWITCH;
	ev->tid = prev;
	ev->tid2 = next;
	ev->arg0 = state;
	ev->arg1 = (uint64_t)preempt;
	copy_comm(ev->comm, pc, pce);
	copy_comm(t->next_comm, nc, nce);
	return FTRACE_EVENT;
}

static enum ftrace_line parse_wakeup(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t, bool new)
{
	struct vcpustat_event *ev = &t->ev;
	uint64_t pid, cpu;
	cp c, ce, q;

	if (comm_pid(f, e, &c, &ce, &pid, &q)) {
		if (!FIELD_NUM(q, e, " target_cpu=", &cpu, NULL))
			return bad(ps, "sched_wakeup: no target_cpu=");
	} else {
		/* trace-cmd plugin: "<comm>:<pid> [<prio>] ... CPU:<cpu>" */
		cp cpu_at = FIND(f, e, " CPU:"), le;

		if (!cpu_at)
			return bad(ps, "sched_wakeup: neither 'comm=... pid=' nor '<comm>:<pid> ... CPU:'");
		q = cpu_at + 5;
		if (!num(&q, e, &cpu))
			return bad(ps, "sched_wakeup: CPU: is not a number");
		le = FIND(f, cpu_at, " [");
		if (!le)
			le = cpu_at;
		c = f;
		if (!plugin_comm_pid(f, le, &ce, &pid))
			return bad(ps, "sched_wakeup: no <comm>:<pid>");
	}
	if (pid > UINT32_MAX || cpu > UINT32_MAX)
		return bad(ps, "sched_wakeup: pid or CPU out of range");
	ev->type = new ? VCPUSTAT_EV_WAKEUP_NEW : VCPUSTAT_EV_WAKEUP;
	ev->tid = pid;
	ev->arg0 = cpu;
	copy_comm(ev->comm, c, ce);
	return FTRACE_EVENT;
}

static enum ftrace_line parse_migrate(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	struct vcpustat_event *ev = &t->ev;
	uint64_t pid, orig, dest;
	cp c, ce, q;

	if (!comm_pid(f, e, &c, &ce, &pid, &q))
		return bad(ps, "sched_migrate_task: no 'comm=... pid='");
	if (!FIELD_NUM(q, e, " orig_cpu=", &orig, &q) || !FIELD_NUM(q, e, " dest_cpu=", &dest, NULL))
		return bad(ps, "sched_migrate_task: no orig_cpu= / dest_cpu=");
	if (pid > UINT32_MAX || orig > UINT32_MAX || dest > UINT32_MAX)
		return bad(ps, "sched_migrate_task: out of range");
	ev->type = VCPUSTAT_EV_MIGRATE;
	ev->tid = pid;
	ev->arg0 = dest;
	ev->arg1 = orig;
	copy_comm(ev->comm, c, ce);
	return FTRACE_EVENT;
}

static enum ftrace_line parse_exit(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	struct vcpustat_event *ev = &t->ev;
	uint64_t pid;
	cp c, ce, q, g;

	if (!comm_pid(f, e, &c, &ce, &pid, &q) || pid > UINT32_MAX)
		return bad(ps, "sched_process_exit: no 'comm=... pid='");
	ev->type = VCPUSTAT_EV_PROCESS_EXIT;
	ev->tid = pid;
	g = FIND(q, e, " group_dead=");
	ev->arg0 = g && STARTS(g + 12, e, "true");
	copy_comm(ev->comm, c, ce);
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_entry(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	uint64_t id;
	cp q = f + 5;

	if (!STARTS(f, e, "vcpu ") || !num(&q, e, &id) || id > UINT32_MAX || (q < e && *q != ',' && *q != ' '))
		return bad(ps, "kvm_entry: no 'vcpu <n>'");
	t->ev.type = VCPUSTAT_EV_KVM_ENTRY;
	t->ev.arg0 = id;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_exit(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	uint64_t id = 0xffffffffu;
	uint32_t code, isa, flags = 0;
	cp q = f, r, re;

	if (STARTS(q, e, "vcpu ")) { /* Linux >= 5.13: "vcpu <n> reason <name> rip ..." */
		q += 5;
		if (!num(&q, e, &id) || id > UINT32_MAX)
			return bad(ps, "kvm_exit: 'vcpu' is not followed by a number");
		skip_spaces(&q, e);
	}
	if (!STARTS(q, e, "reason "))
		return bad(ps, "kvm_exit: no 'reason <name>'");
	r = q + 7;
	re = NEAR(r, e, " rip ");
	if (!re)
		re = e;
	while (re > r && re[-1] == ' ')
		re--;
	if (re - r > 15 && !memcmp(re - 15, " FAILED_VMENTRY", 15)) {
		flags = 0x80000000u;
		re -= 15;
	}
	if (exit_reason(ps, r, (size_t)(re - r), &code, &isa)) {
		ps->unknown_reasons++;
		code = 0xffff; /* shown as VMX_65535 */
		isa = KVM_ISA_VMX;
	}
	t->ev.type = VCPUSTAT_EV_KVM_EXIT;
	t->ev.arg0 = code | flags;
	t->ev.arg1 = isa;
	t->ev.arg2 = id;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_uexit(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	cp open, q;
	uint64_t n;

	if (!STARTS(f, e, "reason "))
		return bad(ps, "kvm_userspace_exit: no 'reason <name> (<n>)'");
	open = rfind(f, e, '(');
	q = open ? open + 1 : e;
	if (!open || !num(&q, e, &n) || q >= e || *q != ')' || n > UINT32_MAX)
		return bad(ps, "kvm_userspace_exit: no '(<n>)' after the reason");
	t->ev.type = VCPUSTAT_EV_USERSPACE_EXIT;
	if (STARTS(f + 7, e, "restart")) { /* -EINTR: KVM reports KVM_EXIT_INTR */
		t->ev.arg0 = KVM_UEXIT_INTR;
		t->ev.arg1 = (uint32_t)-(int64_t)n;
	} else if (STARTS(f + 7, e, "error")) {
		t->ev.arg0 = 0;
		t->ev.arg1 = (uint32_t)-(int64_t)n;
	} else {
		t->ev.arg0 = n;
	}
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_fpu(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	if (STARTS(f, e, "unload"))
		return FTRACE_SKIP; /* leaving KVM_RUN: kvm_userspace_exit says why */
	if (!STARTS(f, e, "load"))
		return bad(ps, "kvm_fpu: neither 'load' nor 'unload'");
	t->ev.type = VCPUSTAT_EV_KVM_RUN;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_hypercall(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	uint64_t nr, a0, a1 = 0;
	cp q = f + 3;

	if (!STARTS(f, e, "nr ") || !hexnum(&q, e, &nr))
		return bad(ps, "kvm_hypercall: no 'nr 0x<n>'");
	if (nr != VCPUSTAT_SYNC_HYPERCALL_NR)
		return FTRACE_SKIP; /* not ours: the BPF program ignores it too */
	q = FIND(q, e, " a0 ");
	if (!q)
		return bad(ps, "kvm_hypercall: no 'a0 0x<n>'");
	q += 4;
	if (!hexnum(&q, e, &a0))
		return bad(ps, "kvm_hypercall: a0 is not a hexadecimal number");
	if (STARTS(q, e, " a1 ")) {
		q += 4;
		if (!hexnum(&q, e, &a1))
			return bad(ps, "kvm_hypercall: a1 is not a hexadecimal number");
	}
	t->ev.type = VCPUSTAT_EV_HYPERCALL;
	t->ev.arg0 = nr;
	t->ev.arg1 = a0;
	t->ev.arg2 = a1;
	return FTRACE_EVENT;
}

/*
 * The exit details (docs/import.md): what the open exit accessed, as the
 * kernel prints it (arch/x86/kvm/trace.h, include/trace/events/kvm.h).
 *   kvm_pio:        "pio_write at 0x3f8 size 1 count 1 val 0x41"
 *   kvm_mmio:       "mmio write len 1 gpa 0x10000 val 0x0" (unsatisfied-read, read, write)
 *   kvm_msr:        "msr_read c0000080 = 0x0", "msr_write 6e0 = 0x1 (#GP)"
 *   kvm_page_fault: "vcpu 0 rip 0x1000 address 0x0000000000010000 error_code 0x6"
 *                   (before 6.x: "address 10000 error_code 6")
 */
static enum ftrace_line parse_kvm_pio(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	uint64_t port, size;
	bool write = STARTS(f, e, "pio_write at ");
	cp q = f + (write ? 13 : 12);

	if (!write && !STARTS(f, e, "pio_read at "))
		return bad(ps, "kvm_pio: neither 'pio_read at' nor 'pio_write at'");
	if (!hexnum(&q, e, &port) || port > 0xffff)
		return bad(ps, "kvm_pio: the port is not a 16-bit hexadecimal number");
	if (!STARTS(q, e, " size ") || (q += 6, !num(&q, e, &size)))
		return bad(ps, "kvm_pio: no 'size <n>' after the port");
	t->ev.type = VCPUSTAT_EV_PIO;
	t->ev.arg0 = port;
	t->ev.arg1 = write;
	t->ev.arg2 = size;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_mmio(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	static const char *const types[] = { "unsatisfied-read ", "read ", "write " };
	uint64_t len, gpa;
	cp q;
	int type = -1;

	if (!STARTS(f, e, "mmio "))
		return bad(ps, "kvm_mmio: no 'mmio <type>'");
	for (int i = 0; i < 3 && type < 0; i++)
		if (starts(f + 5, e, types[i], strlen(types[i])))
			type = i;
	if (type < 0)
		return bad(ps, "kvm_mmio: the type is none of unsatisfied-read, read, write");
	q = f + 5 + strlen(types[type]);
	if (!STARTS(q, e, "len ") || (q += 4, !num(&q, e, &len)))
		return bad(ps, "kvm_mmio: no 'len <n>'");
	if (!STARTS(q, e, " gpa ") || (q += 5, !hexnum(&q, e, &gpa)))
		return bad(ps, "kvm_mmio: no 'gpa 0x<address>'");
	t->ev.type = VCPUSTAT_EV_MMIO;
	t->ev.arg0 = gpa;
	t->ev.arg1 = (uint64_t)type;
	t->ev.arg2 = len;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_msr(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	bool write = STARTS(f, e, "msr_write ");
	uint64_t index;
	cp q = f + (write ? 10 : 9);

	if (!write && !STARTS(f, e, "msr_read "))
		return bad(ps, "kvm_msr: neither 'msr_read' nor 'msr_write'");
	if (!hexnum(&q, e, &index) || index > UINT32_MAX)
		return bad(ps, "kvm_msr: the MSR index is not a 32-bit hexadecimal number");
	t->ev.type = VCPUSTAT_EV_MSR;
	t->ev.arg0 = index;
	t->ev.arg1 = write;
	t->ev.arg2 = FIND(q, e, "(#GP)") != NULL;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_kvm_page_fault(struct ftrace_parser *ps, cp f, cp e, struct trace_event *t)
{
	uint64_t addr, code;
	cp q = NEAR(f, e, "address ");

	if (!q || (q += 8, !hexnum(&q, e, &addr)))
		return bad(ps, "kvm_page_fault: no 'address <hexadecimal>'");
	if (!STARTS(q, e, " error_code ") || (q += 12, !hexnum(&q, e, &code)))
		return bad(ps, "kvm_page_fault: no 'error_code <hexadecimal>' after the address");
	t->ev.type = VCPUSTAT_EV_PAGE_FAULT;
	t->ev.arg0 = addr;
	t->ev.arg1 = code;
	return FTRACE_EVENT;
}

static enum ftrace_line parse_marker(cp f, cp e, struct trace_event *t)
{
	char buf[128];
	cp m = FIND(f, e, "vcpustat_sync: ");
	size_t n;

	if (!m)
		return FTRACE_SKIP;
	n = (size_t)(e - m) < sizeof(buf) - 1 ? (size_t)(e - m) : sizeof(buf) - 1;
	memcpy(buf, m, n);
	buf[n] = '\0';
	t->marker = vcpustat_sync_parse_marker(buf, &t->key);
	return t->marker ? FTRACE_EVENT : FTRACE_SKIP;
}

/* ---- the header ---- */

/* "(<tgid>)" or "(-------)" at *p: the tgid or -1. */
static bool tgid_column(cp *p, cp e, int64_t *tgid)
{
	cp q = *p + 1;
	uint64_t v;

	skip_spaces(&q, e);
	if (q < e && *q == '-') {
		while (q < e && *q == '-')
			q++;
		*tgid = -1;
	} else {
		if (!num(&q, e, &v) || v > UINT32_MAX)
			return false;
		*tgid = (int64_t)v;
	}
	if (q >= e || *q != ')')
		return false;
	*p = q + 1;
	return true;
}

/* "[<cpu>]" at *p. */
static bool cpu_column(cp *p, cp e, uint64_t *cpu)
{
	cp q = *p + 1;

	if (!num(&q, e, cpu) || q >= e || *q != ']' || *cpu > UINT32_MAX)
		return false;
	*p = q + 1;
	return true;
}

/*
 * "<secs>.<frac>:" at *p (1 to 9 decimals) in ns: 0, -1 none, -2 no decimals
 * (a counter clock), -3 more than 9 decimals, -4 seconds out of range.
 */
static int timestamp(cp *p, cp e, uint64_t *ns, int *decimals)
{
	static const uint64_t scale[10] = { 0,	     100000000, 10000000, 1000000, 100000,
					    10000,   1000,	100,	  10,	   1 };
	uint64_t secs, frac;
	cp q = *p, f;

	if (!num(&q, e, &secs))
		return -1;
	if (q >= e || *q != '.')
		return q < e && *q == ':' ? -2 : -1; /* -2: a counter clock (no decimals) */
	f = ++q;
	while (q < e && is_digit(*q))
		q++;
	if (q == f || q >= e || *q != ':')
		return -1;
	*decimals = (int)(q - f);
	if (q - f > 9)
		return -3;
	q = f;
	if (!num(&q, e, &frac))
		return -1;
	if (secs > VCPUSTAT_SYNC_MAX_NS / 1000000000ull)
		return -4;
	*ns = secs * 1000000000ull + frac * scale[q - f];
	*p = q + 1;
	return 0;
}

/*
 * The TASK-PID column: "<comm>-<pid>", where comm may hold '-' and spaces:
 * the first "-<digits>" followed by the tgid or CPU column ends it.
 */
static bool task_columns(cp s, cp e, cp *comm_end, uint64_t *pid, int64_t *tgid, uint64_t *cpu, cp *after)
{
	cp lim = e - s > 80 ? s + 80 : e;

	for (cp d = s + 1; d < lim; d++) {
		cp q;

		d = memchr(d, '-', (size_t)(lim - d));
		if (!d)
			return false;
		q = d + 1;
		if (!num(&q, e, pid) || *pid > UINT32_MAX)
			continue;
		skip_spaces(&q, e);
		*tgid = -1;
		if (q < e && *q == '(') {
			if (!tgid_column(&q, e, tgid))
				continue;
			skip_spaces(&q, e);
		}
		if (q >= e || *q != '[' || !cpu_column(&q, e, cpu))
			continue;
		*comm_end = d;
		*after = q;
		return true;
	}
	return false;
}

/*
 * The same columns as `perf script` prints them: "<comm> <tid> [<cpu>]", the
 * comm right-aligned and apart from the tid by spaces (perf's own columns:
 * comm, tid, cpu, time, event, trace). The first " [<cpu>]" ends them.
 */
static bool perf_task_columns(cp s, cp e, cp *comm_end, uint64_t *pid, uint64_t *cpu, cp *after)
{
	cp lim = e - s > 80 ? s + 80 : e;

	for (cp b = s + 1; b < lim; b++) {
		cp end_cpu, digits, d, q;

		b = memchr(b, '[', (size_t)(lim - b));
		if (!b)
			return false;
		end_cpu = b;
		if (b[-1] != ' ' || !cpu_column(&end_cpu, e, cpu))
			continue;
		for (d = b - 1; d > s && d[-1] == ' '; d--) /* back over the spaces, then the tid */
			;
		for (digits = d; digits > s && is_digit(digits[-1]); digits--)
			;
		if (digits == d || digits == s || digits[-1] != ' ')
			continue;
		q = digits;
		if (!num(&q, e, pid) || *pid > UINT32_MAX)
			continue;
		for (d = digits; d > s && d[-1] == ' '; d--) /* the comm ends before the spaces */
			;
		*comm_end = d;
		*after = end_cpu;
		return true;
	}
	return false;
}

/* Header lines of tracefs and trace-cmd ("cpus=2", "version = 6", "CPU 1 is empty"). */
static bool is_header(cp p, cp e)
{
	return STARTS(p, e, "cpus=") || STARTS(p, e, "version") || STARTS(p, e, "CPU ") || STARTS(p, e, "trace-cmd");
}

/* "CPU:<n> [LOST <k> EVENTS]" (tracefs) or "CPU:<n> [<k> EVENTS DROPPED]" (trace-cmd). */
static bool lost_line(struct ftrace_parser *ps, cp p, cp e)
{
	uint64_t cpu, k;
	cp q = p + 4;

	if (!STARTS(p, e, "CPU:") || !num(&q, e, &cpu) || !STARTS(q, e, " ["))
		return false;
	q += 2;
	if (STARTS(q, e, "LOST "))
		q += 5;
	if (!num(&q, e, &k) || !STARTS(q, e, " EVENTS"))
		return false;
	ps->lost = k;
	return true;
}

enum ftrace_line ftrace_parse_line(struct ftrace_parser *ps, const char *line, size_t len, struct trace_event *t)
{
	cp p = line, e = line + len, task, comm_end, name, f;
	enum ev_name which;
	uint64_t pid, cpu, ts;
	int64_t tgid;
	int ret, decimals = 0;

	if (e > p && e[-1] == '\r')
		e--;
	skip_spaces(&p, e);
	if (p >= e || *p == '#')
		return FTRACE_HEADER;
	task = p;
	tgid = -1;
	if (!task_columns(task, e, &comm_end, &pid, &tgid, &cpu, &p) &&
	    !perf_task_columns(task, e, &comm_end, &pid, &cpu, &p)) {
		if (lost_line(ps, task, e))
			return FTRACE_LOST;
		if (is_header(task, e))
			return FTRACE_HEADER;
		return bad(ps, "not an ftrace event line: no '<comm>-<pid> [<cpu>]' (or perf script's '<comm> <tid> [<cpu>]') at its start");
	}
	skip_spaces(&p, e);
	ret = timestamp(&p, e, &ts, &decimals);
	if (ret == -1 && p < e && !is_digit(*p)) { /* an irq-flags column first ("d..2.", "....."): skip it */
		cp q = p;

		while (q < e && *q != ' ')
			q++;
		skip_spaces(&q, e);
		p = q;
		ret = timestamp(&p, e, &ts, &decimals);
	}
	if (ret == -2)
		return bad(ps, "the timestamp has no decimals: a counter trace clock (counter, x86-tsc) is not "
			       "supported; trace with the local, global, mono or boot clock");
	if (ret == -3) {
		snprintf(ps->why, sizeof(ps->why), "the timestamp has %d decimals: at most 9 (nanoseconds), as "
			 "ftrace and trace-cmd print them", decimals);
		return FTRACE_BAD;
	}
	if (ret == -4)
		return bad(ps, "the timestamp's seconds are out of range (more than 2^62 ns, 146 years)");
	if (ret)
		return bad(ps, "no '<seconds>.<decimals>:' timestamp after the CPU column");
	skip_spaces(&p, e);
	name = p;
	while (p < e && (is_digit(*p) || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
		p++;
	if (p + 1 < e && *p == ':' && p[1] != ' ' && p > name) { /* perf script: "<system>:<event>:" */
		name = ++p;
		while (p < e && (is_digit(*p) || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
			p++;
	}
	if (p == name || p >= e || *p != ':')
		return bad(ps, "no '<event>:' after the timestamp");
	f = p + 1;
	skip_spaces(&f, e);
	which = event_name(name, (size_t)(p - name));
	if (which == EVN_NONE)
		return FTRACE_SKIP; /* before anything else is done */

	memset(t, 0, sizeof(*t));
	t->ev.ts = ts;
	t->ev.cpu = cpu;
	t->pid = (uint32_t)pid;
	t->tgid = tgid;
	copy_comm(t->cur_comm, task, comm_end);
	switch (which) {
	case EVN_SWITCH: return parse_switch(ps, f, e, t);
	case EVN_WAKEUP: return parse_wakeup(ps, f, e, t, false);
	case EVN_WAKEUP_NEW: return parse_wakeup(ps, f, e, t, true);
	case EVN_MIGRATE: return parse_migrate(ps, f, e, t);
	case EVN_EXIT: return parse_exit(ps, f, e, t);
	case EVN_MARKER: return parse_marker(f, e, t);
	case EVN_NONE: return FTRACE_SKIP;
	default: break;
	}
	/* KVM events are about the current thread */
	t->ev.tid = pid;
	memcpy(t->ev.comm, t->cur_comm, sizeof(t->ev.comm));
	switch (which) {
	case EVN_KVM_ENTRY: return parse_kvm_entry(ps, f, e, t);
	case EVN_KVM_EXIT: return parse_kvm_exit(ps, f, e, t);
	case EVN_KVM_UEXIT: return parse_kvm_uexit(ps, f, e, t);
	case EVN_KVM_FPU: return parse_kvm_fpu(ps, f, e, t);
	case EVN_KVM_HYPERCALL: return parse_kvm_hypercall(ps, f, e, t);
	case EVN_KVM_PIO: return parse_kvm_pio(ps, f, e, t);
	case EVN_KVM_MMIO: return parse_kvm_mmio(ps, f, e, t);
	case EVN_KVM_MSR: return parse_kvm_msr(ps, f, e, t);
	case EVN_KVM_PAGE_FAULT: return parse_kvm_page_fault(ps, f, e, t);
	default: return FTRACE_SKIP;
	}
}
