// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* summary_text.c - the window model as plain-text tables (batch mode, reports). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/util.h"
#include "model/placement.h"
#include "model/summary.h"

/* ---- text ---- */

const char *format_ns(__u64 ns, char *buf, size_t len)
{
	if (ns < 10000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", ns / 1e9);
	return buf;
}

/* gsys: add the share of exits that left guest kernel mode (%GSYS, as perf-prof shows it). */
static void print_latency_table(FILE *f, const char *title, const struct latency_summary *l, size_t n,
				unsigned int top, double seconds, bool gsys)
{
	char a[24], b[24], c[24];

	if (!n)
		return;
	fprintf(f, "    %-24s %10s %10s %10s %10s %10s%s\n", title, "COUNT", "RATE/s", "P50", "P99", "MAX",
		gsys ? "  %GSYS" : "");
	for (size_t i = 0; i < n && (!top || i < top); i++) {
		bool timed = l[i].count > l[i].open; /* some closed: a latency is known */

		fprintf(f, "    %-24s %10llu %10.1f %10s %10s %10s", l[i].name, (unsigned long long)l[i].count,
			l[i].rate, timed ? format_ns(l[i].p50_ns, a, sizeof(a)) : "-",
			timed ? format_ns(l[i].p99_ns, b, sizeof(b)) : "-",
			timed || l[i].max_ns ? format_ns(l[i].max_ns, c, sizeof(c)) : "-");
		if (gsys && l[i].count)
			fprintf(f, " %6.1f%%", 100.0 * (double)l[i].gsys / (double)l[i].count);
		else if (gsys)
			fprintf(f, " %7s", "-");
		if (l[i].open) /* still being handled at the end: no latency yet (docs/json.md "Open exits") */
			fprintf(f, "  %llu open (%s so far)", (unsigned long long)l[i].open,
				format_ns(l[i].open_ns, c, sizeof(c)));
		fputc('\n', f);
	}
}

/* The exits still being handled at the end of the window, by vCPU (docs/json.md "Open exits"). */
static void print_open_exits(FILE *f, const struct vm_summary *vm)
{
	char a[24];

	for (size_t v = 0; v < vm->nr_vcpus; v++) {
		const struct vcpu_summary *c = &vm->vcpus[v];

		if (c->kvm_exits_open)
			fprintf(f, "    open at the end: vCPU %u in exit %s (%s so far)\n", c->index, c->open_exit,
				format_ns(c->open_exit_ns, a, sizeof(a)));
		if (c->userspace_exits_open)
			fprintf(f, "    open at the end: vCPU %u in userspace exit %s (%s so far)\n", c->index,
				c->open_uexit, format_ns(c->open_uexit_ns, a, sizeof(a)));
	}
}

/*
 * The exit-detail tables (like `perf kvm stat --event ioport|mmio|msr`, per
 * VM): one per kind, top `top` rows each; mean and max are the handling time
 * of the exits that made the access, kvm_exit to kvm_entry.
 */
static void print_details(FILE *f, const struct vm_summary *vm, unsigned int top)
{
	static const char *const title[VCPUSTAT_NR_DETAIL_KINDS] = {
		[VCPUSTAT_DETAIL_PIO] = "I/O PORT",
		[VCPUSTAT_DETAIL_MMIO] = "MMIO ADDRESS",
		[VCPUSTAT_DETAIL_MSR] = "MSR",
		[VCPUSTAT_DETAIL_PAGE_FAULT] = "FAULTING PAGE",
		[VCPUSTAT_DETAIL_NESTED] = "EXIT FROM L2 (TO: L0/L1)",
	};
	unsigned int kind = VCPUSTAT_NR_DETAIL_KINDS, shown = 0;
	char t[48], a[24], b[24], c[24];

	for (size_t i = 0; i < vm->nr_details; i++) {
		const struct detail_summary *d = &vm->details[i];
		const char *name;

		if (d->kind >= VCPUSTAT_NR_DETAIL_KINDS || !title[d->kind])
			continue;
		if (d->kind != kind) {
			kind = d->kind;
			shown = 0;
			fprintf(f, "    %-24s %-6s %10s %10s %10s %10s %10s\n", title[kind], "ACCESS", "COUNT", "RATE/s",
				"MEAN", "TOTAL", "MAX");
		}
		if (top && shown++ >= top)
			continue;
		detail_target_of(d->kind, d->addr, t, sizeof(t));
		name = detail_msr_name(d->kind, d->addr);
		if (name) {
			size_t len = strlen(t);

			snprintf(t + len, sizeof(t) - len, " %s", name);
		}
		fprintf(f, "    %-24s %-6s %10llu %10.1f %10s %10s %10s\n", t, detail_access_name(d->access),
			(unsigned long long)d->count, d->rate, format_ns(d->sum_ns / d->count, a, sizeof(a)),
			format_ns(d->sum_ns, b, sizeof(b)), format_ns(d->max_ns, c, sizeof(c)));
	}
}

/*
 * --address-spaces: the VM's guest time and exits by the guest's CR3 at the
 * exit, most time first; SHARE is of the time in the table. With the guest's
 * threads imported, GUEST THREAD is the one current at most of its exits
 * (AT: at how many of them).
 */
static void print_address_spaces(FILE *f, const struct summary *s, const struct vm_summary *vm, unsigned int top)
{
	bool named = false;
	__u64 all = 0;
	char t[32], a[24], b[24];

	if (!vm->nr_address_spaces)
		return;
	for (size_t i = 0; i < vm->nr_address_spaces; i++) {
		all += vm->address_spaces[i].sum_ns;
		named |= vm->address_spaces[i].guest_tid != 0;
	}
	fprintf(f, "    %-24s %10s %6s %10s %10s %10s%s\n", "GUEST ADDRESS SPACE", "GUEST", "SHARE", "EXITS", "EXITS/s",
		"MAX RUN", named ? "  GUEST THREAD (AT EXITS)" : "");
	for (size_t i = 0; i < vm->nr_address_spaces && (!top || i < top); i++) {
		const struct detail_summary *d = &vm->address_spaces[i];

		fprintf(f, "    CR3 %-20s %10s %5.1f%% %10llu %10.1f %10s", cr3_target(d->addr, t, sizeof(t)),
			format_ns(d->sum_ns, a, sizeof(a)), all ? 100.0 * (double)d->sum_ns / (double)all : 0.0,
			(unsigned long long)d->count, s->seconds > 0 ? (double)d->count / s->seconds : 0.0,
			format_ns(d->max_ns, b, sizeof(b)));
		if (d->guest_tid)
			fprintf(f, "  %s (%u) %llu/%llu", d->guest_comm[0] ? d->guest_comm : "?", d->guest_tid,
				(unsigned long long)d->guest_tid_exits, (unsigned long long)d->count);
		else if (named)
			fprintf(f, "  -");
		fputc('\n', f);
	}
}

static void print_culprit(FILE *f, const char *indent, const struct culprit_summary *cu)
{
	char who[96], b[24], cg[320];

	if (cu->vm[0])
		snprintf(who, sizeof(who), "VM %s vCPU %d", cu->vm, cu->vcpu);
	else
		snprintf(who, sizeof(who), "%s (%u)", cu->process, cu->tgid);
	fprintf(f, "%s%5.1f%% %-10s %-8u %-16s %-20s %s\n", indent, 100 * cu->share, format_ns(cu->ns, b, sizeof(b)),
		cu->tid, cu->comm, who, culprit_cgroup_label(cu, cg, sizeof(cg)));
}

/* The VMM's other threads (live, and reports of recordings): their CPU, their waiting, and who took it. */
static void print_vmm_threads(FILE *f, const struct summary *s, const struct vm_summary *vm, unsigned int top)
{
	static const char *const kind[VMM_NR_KINDS] = { "emulator/IO", "vhost" };
	char b1[24], b2[24];

	if (!vm->vmm.known)
		return;
	if (!vm->vmm.threads[VMM_EMULATOR] && !vm->vmm.threads[VMM_VHOST]) {
		fprintf(f, "    VMM THREADS: none but the vCPUs ran or waited in the window\n");
		return;
	}
	fprintf(f, "    VMM THREADS  THREADS  ON CPU      WAITED      STEAL\n");
	for (int k = 0; k < VMM_NR_KINDS; k++) {
		__u64 all = vm->vmm.run_ns[k] + vm->vmm.wait_ns[k];

		fprintf(f, "    %-12s %7u  %-10s  %-10s %5.1f%%\n", kind[k], vm->vmm.threads[k],
			format_ns(vm->vmm.run_ns[k], b1, sizeof(b1)), format_ns(vm->vmm.wait_ns[k], b2, sizeof(b2)),
			all ? 100.0 * (double)vm->vmm.wait_ns[k] / (double)all : 0.0);
	}
	(void)s;
	if (vm->vmm.no_culprits && (vm->vmm.wait_ns[VMM_EMULATOR] || vm->vmm.wait_ns[VMM_VHOST]))
		fprintf(f, "      who ran instead: not in this recording (an older level-vcpu file: record now keeps it at any level)\n");
	for (size_t c = 0; c < vm->vmm.nr_culprits && (!top || c < top); c++)
		print_culprit(f, "      ", &vm->vmm.culprits[c]);
}

/* A live VM's placement line: time per node and cache, moves across them, SMT sharing (hosts where it matters). */
size_t place_lines(const struct summary *s, const struct vm_summary *vm, char (*lines)[PLACE_LINE_LEN])
{
	enum { MAX_IDS = 1024 };
	__u64 ns[MAX_IDS], all = 0;
	char b1[24], b2[24];
	size_t n = 0;

	if (!vm->place.known || !place_worth_showing(s->topo))
		return 0;
	for (size_t i = 0; i < vm->place.nr_cpus; i++)
		all += vm->place.cpus[i].ns;
	for (int llc = 0; llc < 2; llc++) {
		size_t len = 0;

		if (place_by(s, vm, llc, ns, MAX_IDS) <= 0)
			continue;
		lines[n][0] = '\0';
		for (int id = 0; id < MAX_IDS && len < PLACE_LINE_LEN; id++)
			if (ns[id])
				len += (size_t)snprintf(lines[n] + len, PLACE_LINE_LEN - len, "%s%s %d %.1f %%",
							len ? ", " : "", llc ? "cache" : "node", id,
							all ? 100.0 * (double)ns[id] / (double)all : 0.0);
		n++;
	}
	snprintf(lines[n], PLACE_LINE_LEN, "%llu migration%s across nodes, %llu across caches",
		 (unsigned long long)vm->place.cross_node, vm->place.cross_node == 1 ? "" : "s",
		 (unsigned long long)vm->place.cross_llc);
	if (vm->place.numa_moves) /* a part of the first (or a move within a node, on some hosts) */
		snprintf(lines[n] + strlen(lines[n]), PLACE_LINE_LEN - strlen(lines[n]), ", %llu by NUMA balancing",
			 (unsigned long long)vm->place.numa_moves);
	n++;
	snprintf(lines[n++], PLACE_LINE_LEN, "SMT: %s beside another VM's vCPU, %s beside its own",
		 format_ns(vm->place.smt_other_ns, b1, sizeof(b1)), format_ns(vm->place.smt_same_ns, b2, sizeof(b2)));
	return n;
}

static void print_place(FILE *f, const struct summary *s, const struct vm_summary *vm)
{
	char lines[PLACE_MAX_LINES][PLACE_LINE_LEN];
	size_t n = place_lines(s, vm, lines);

	if (!n)
		return;
	fprintf(f, "    PLACEMENT ");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s%s", lines[i], i + 1 < n ? ";" : "\n");
}

/* The guest threads of a VM (reports with guest traces): time lost to the host, and to whom. */
static void print_guest_threads(FILE *f, const struct summary *s, const struct vm_summary *vm, unsigned int top)
{
	char a[24], b[24], c[24], d[24], e[24], g[24], h[24], vcpu[12];

	if (!vm->nr_guest_threads)
		return;
	fprintf(f, "    GUEST THREADS: time lost to the host (virt_preempted: running in the guest, its vCPU not)\n");
	fprintf(f, "    %-8s %-16s %4s %10s %10s %7s %10s %10s %10s %10s %10s\n", "TID", "THREAD", "VCPU", "RUNNING",
		"LOST", "LOST%", "HYPERVSR", "HOST RUNQ", "HOST BLKD", "PREEMPTED", "BLOCKED");
	for (size_t i = 0; i < vm->nr_guest_threads && (!top || i < top); i++) {
		const struct guest_thread_summary *t = &vm->guest_threads[i];
		__u64 on = t->ns[GUEST_RUNNING] + t->ns[GUEST_VIRT_PREEMPTED];

		snprintf(vcpu, sizeof(vcpu), t->vcpu < 0 ? "-" : "%d", t->vcpu);
		fprintf(f, "    %-8u %-16s %4s %10s %10s %6.1f%% %10s %10s %10s %10s %10s\n", t->tid, t->comm, vcpu,
			format_ns(t->ns[GUEST_RUNNING], a, sizeof(a)), format_ns(t->ns[GUEST_VIRT_PREEMPTED], b, sizeof(b)),
			on ? 100.0 * (double)t->ns[GUEST_VIRT_PREEMPTED] / (double)on : 0.0,
			format_ns(t->lost_hypervisor_ns, c, sizeof(c)), format_ns(t->lost_runq_ns, d, sizeof(d)),
			format_ns(t->lost_blocked_ns, e, sizeof(e)),
			format_ns(t->ns[GUEST_PREEMPTED] + t->ns[GUEST_WAIT], g, sizeof(g)),
			format_ns(t->ns[GUEST_BLOCKED], h, sizeof(h)));
		for (size_t k = 0; k < t->nr_culprits && k < 3; k++) {
			if (!k)
				fprintf(f, "      took its vCPU's CPU: %-6s %-10s %-8s %-16s %-20s %s\n", "SHARE", "TIME", "TID",
					"THREAD", "PROCESS / VM", "CGROUP");
			print_culprit(f, "                           ", &t->culprits[k]);
		}
	}
	(void)s;
}

/*
 * A VM's halt polling in the window, if it polled: polls that saw the
 * wake-up, those that ended in sleep (and their rate), the CPU time those
 * burnt, and the largest halt_poll_ns of its vCPUs now.
 */
static void print_halt_polling(FILE *f, const struct summary *s, const struct vm_summary *vm)
{
	if (!vm->polls_ok && !vm->polls_failed)
		return;
	fprintf(f,
		"    halt polling: %llu ok, %llu failed (%.1f/s), %.3f ms CPU burnt in failed polls, halt_poll_ns %u\n",
		(unsigned long long)vm->polls_ok, (unsigned long long)vm->polls_failed,
		summary_per_s(s, vm->polls_failed), (double)vm->poll_fail_ns / 1e6, vm->halt_poll_ns);
}

/*
 * Nested virtualization: of the VM's guest time, the share its L1
 * hypervisor's guests (L2) ran, and its exits from L2 in the window: handled
 * here (L0) or reflected to L1 (the rows "nested <reason> l0|l1" of the exit
 * details, print_details).
 */
static void print_nested(FILE *f, const struct summary *s, const struct vm_summary *vm)
{
	__u64 l0, l1;
	char a[24];

	vm_nested_exits(vm, &l0, &l1);
	if (!vm->nested && !l0 && !l1)
		return;
	fprintf(f, "    nested: L2 guest %s (%.1f%% of guest time); exits from L2 %llu (%.1f/s): %llu reflected to L1, "
		   "%llu handled here\n",
		format_ns(vm->l2_ns, a, sizeof(a)),
		vm->ns[VCPU_GUEST] ? 100.0 * (double)vm->l2_ns / (double)vm->ns[VCPU_GUEST] : 0.0,
		(unsigned long long)(l0 + l1), summary_per_s(s, l0 + l1), (unsigned long long)l1, (unsigned long long)l0);
}

/* --vcpu, --tid: which of the VM's vCPUs its totals are over ("vCPUs 0,2 of 4"). */
static void print_vcpu_subset(FILE *f, const struct vm_summary *vm)
{
	fprintf(f, "    filtered: totals over vCPU%s ", vm->nr_vcpus == 1 ? "" : "s");
	for (size_t v = 0; v < vm->nr_vcpus; v++)
		fprintf(f, "%s%u", v ? "," : "", vm->vcpus[v].index);
	fprintf(f, " of %u\n", vm->nr_vcpus_all);
}

void summary_print(FILE *f, const struct summary *s, const struct vcpustat_prog *progs, size_t nr_progs,
		   unsigned int top)
{
	size_t nvcpus = 0;
	__u64 lost = 0;
	bool split = false, oncpu = false;
	char ts[32];
	time_t now = time(NULL);

	for (size_t i = 0; i < s->nr_vms; i++)
		nvcpus += s->vms[i].nr_vcpus;
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		lost += s->lost[i];
	if (s->wall_t1)
		now = (time_t)(s->wall_t1 / 1000000000ull);
	if (s->no_wall_clock)
		snprintf(ts, sizeof(ts), "+%.6fs", (double)s->t1 / 1e9);
	else
		strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	fprintf(f, "vcpustat %s  interval %.2fs  VMs %zu  vCPUs %zu  lost %llu%s%s%s\n", ts, s->seconds, s->nr_vms,
		nvcpus, (unsigned long long)lost, s->pcpus[0] ? "  [time on pCPUs " : "", s->pcpus,
		s->pcpus[0] ? " only]" : "");
	for (unsigned int i = 0; i < VCPUSTAT_NR_LOST; i++)
		if (s->lost_window[i])
			fprintf(f, "  LOST %llu %s this interval (%llu since start)\n",
				(unsigned long long)s->lost_window[i], lost_kind_name(i), (unsigned long long)s->lost[i]);
	for (size_t i = 0; i < nr_progs; i++)
		if (progs[i].status == VCPUSTAT_PROG_FAILED || progs[i].status == VCPUSTAT_PROG_MISSING)
			fprintf(f, "  NOT ATTACHED %s: %s\n", progs[i].tracepoint, progs[i].message);
	if (s->health.problems) {
		char msg[1024];

		summary_health_message(s, msg, sizeof(msg));
		fprintf(f, "  BLIND: %s\n", msg);
	}
	if (!s->nr_vms)
		fprintf(f, "  no VMs seen yet (vCPU threads appear at their first KVM event; try --demo)\n");

	for (size_t i = 0; i < s->nr_vms; i++) {
		const struct vm_summary *vm = &s->vms[i];

		split |= vm->ns[VCPU_GUEST] > 0 || vm->nr_exits;
		oncpu |= vm->ns[VCPU_HOST] > 0;
		fprintf(f,
			"\nVM %s (pid %u)%s: guest %.1f%% host %.1f%% poll %.1f%% preempted %.1f%% wait %.1f%% "
			"idle %.1f%% blocked %.1f%%  preempt/s %.0f wake/s %.0f migr/s %.0f\n",
			vm->name, vm->tgid, vm->exited ? " [exited]" : "", 100 * vm_share(s, vm, VCPU_GUEST),
			100 * vm_share(s, vm, VCPU_HOST), 100 * vm_share(s, vm, VCPU_POLL),
			100 * vm_share(s, vm, VCPU_PREEMPTED), 100 * vm_share(s, vm, VCPU_WAIT),
			100 * vm_share(s, vm, VCPU_IDLE), 100 * vm_share(s, vm, VCPU_BLOCKED),
			summary_per_s(s, vm->preemptions), summary_per_s(s, vm->wakeups),
			summary_per_s(s, vm->migrations));
		if (vm->cgroup[0] && strcmp(vm->cgroup, "/")) {
			struct container_ref c;
			char label[320];

			if (vm_container(vm, &c))
				fprintf(f, "  %s, cgroup %s\n", container_label(&c, label, sizeof(label)), vm->cgroup);
			else
				fprintf(f, "  cgroup %s\n", vm->cgroup);
		}
		if (vm->nr_vcpus_all)
			print_vcpu_subset(f, vm);
		print_halt_polling(f, s, vm);
		print_nested(f, s, vm);
		fprintf(f, "    %-5s %-8s %-10s %4s %7s %7s %7s %7s %7s %7s %7s %9s %8s %7s\n", "VCPU", "TID", "STATE",
			"PCPU", "GUEST", "HOST", "POLL", "PREEMPT", "WAIT", "IDLE", "BLOCKED", "PREEMPT/s", "WAKE/s",
			"MIGR/s");
		for (size_t v = 0; v < vm->nr_vcpus; v++) {
			const struct vcpu_summary *c = &vm->vcpus[v];
			char pcpu[12];

			snprintf(pcpu, sizeof(pcpu), c->pcpu == VCPU_PCPU_NONE ? "-" : "%u", c->pcpu);
			fprintf(f,
				"    %-5u %-8u %-10s %4s %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% "
				"%9.0f %8.0f %7.0f\n",
				c->index, c->tid, c->gone ? "exited" : vcpu_state_name(c->state), pcpu,
				100 * vcpu_share(s, c, VCPU_GUEST), 100 * vcpu_share(s, c, VCPU_HOST),
				100 * vcpu_share(s, c, VCPU_POLL), 100 * vcpu_share(s, c, VCPU_PREEMPTED),
				100 * vcpu_share(s, c, VCPU_WAIT), 100 * vcpu_share(s, c, VCPU_IDLE),
				100 * vcpu_share(s, c, VCPU_BLOCKED), summary_per_s(s, c->preemptions),
				summary_per_s(s, c->wakeups), summary_per_s(s, c->migrations));
		}
		print_latency_table(f, "EXIT REASON", vm->exits, vm->nr_exits, top, s->seconds, s->has_gsys);
		print_latency_table(f, "USERSPACE EXIT", vm->uexits, vm->nr_uexits, top, s->seconds, false);
		print_open_exits(f, vm);
		print_details(f, vm, top);
		print_address_spaces(f, s, vm, top);
		if (vm->runq.count)
			print_latency_table(f, "RUN-QUEUE WAIT", &vm->runq, 1, 1, s->seconds, false);
		/* why sleeping vCPUs woke, and the delay from the wake-up to guest code */
		print_latency_table(f, "WAKE-UP BY", vm->wakes, vm->nr_wakes, top, s->seconds, false);
		/* ... and by the vector its first entry injected */
		if (wake_vectors_worth_showing(vm))
			print_latency_table(f, "WAKE-UP VECTOR", vm->wake_vectors, vm->nr_wake_vectors, top, s->seconds,
					    false);
		if (vm->nr_culprits) {
			fprintf(f, "    %-6s %-10s %-8s %-16s %-20s %s\n", "SHARE", "TIME", "TID", "THREAD",
				"PROCESS / VM", "CGROUP");
			for (size_t c = 0; c < vm->nr_culprits && (!top || c < top); c++)
				print_culprit(f, "    ", &vm->culprits[c]);
		}
		print_vmm_threads(f, s, vm, top);
		print_place(f, s, vm);
		print_guest_threads(f, s, vm, top);
	}
	if (s->topo) {
		struct placement p;

		if (!placement_from_summary(&p, s)) {
			placement_print_balance(f, &p);
			placement_free(&p);
		}
	}
	if (oncpu && !split)
		fprintf(f, "\nnote: kvm_entry/kvm_exit did not fire: guest and hypervisor time are not separated; "
			   "on-CPU time is counted as host\n");
	fflush(f);
}

/* ---- the ncurses view's panel of a VM (vm_panel_lines) ---- */

/* Who a culprit is, for one line: another VM's vCPU, or a thread with its process and cgroup. */
static const char *culprit_who(const struct culprit_summary *c, char *who, size_t len)
{
	char cg[320];

	if (c->vm[0])
		snprintf(who, len, "VM %s vCPU %d", c->vm, c->vcpu);
	else
		snprintf(who, len, "%s (%s %u) %s", c->comm, c->process, c->tgid, culprit_cgroup_label(c, cg, sizeof(cg)));
	return who;
}

static void side_add(struct panel_line *out, size_t max, size_t *n, bool bold, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void side_add(struct panel_line *out, size_t max, size_t *n, bool bold, const char *fmt, ...)
{
	va_list ap;

	if (*n >= max)
		return;
	va_start(ap, fmt);
	vsnprintf(out[*n].text, sizeof(out[*n].text), fmt, ap);
	va_end(ap);
	out[(*n)++].bold = bold;
}

/* A latency table's header and rows (wake-ups by reason, by vector). */
static void side_latency(struct panel_line *out, size_t max, size_t *n, const char *title,
			 const struct latency_summary *l, size_t nl)
{
	char a[16], b[16];

	side_add(out, max, n, true, "%-16.16s %9s %9s %9s", title, "RATE/s", "P50", "P99");
	for (size_t i = 0; i < nl; i++)
		side_add(out, max, n, false, "%-16.16s %9.1f %9s %9s", l[i].name, l[i].rate,
			 l[i].count ? format_ns(l[i].p50_ns, a, sizeof(a)) : "-",
			 l[i].count ? format_ns(l[i].p99_ns, b, sizeof(b)) : "-");
}

size_t vm_panel_lines(const struct summary *s, const struct vm_summary *vm, struct panel_line *out, size_t max)
{
	bool vmm = vm->vmm.known && (vm->vmm.threads[VMM_EMULATOR] || vm->vmm.threads[VMM_VHOST]);
	char place[PLACE_MAX_LINES][PLACE_LINE_LEN], who[384];
	size_t n = 0, np;

	for (size_t i = 0; i < vm->nr_culprits; i++)
		side_add(out, max, &n, false, "%5.1f%% %s", 100 * vm->culprits[i].share,
			 culprit_who(&vm->culprits[i], who, sizeof(who)));
	if (vm->nr_wakes)
		side_latency(out, max, &n, "WAKE-UP BY", vm->wakes, vm->nr_wakes);
	if (wake_vectors_worth_showing(vm))
		side_latency(out, max, &n, "WAKE-UP VECTOR", vm->wake_vectors, vm->nr_wake_vectors);
	if (vmm) {
		static const char *const kind[VMM_NR_KINDS] = { "emulator/IO", "vhost" };

		side_add(out, max, &n, true, "%-16.16s %7s %6s %6s", "VMM THREADS", "THREADS", "CPU", "STEAL");
		for (int k = 0; k < VMM_NR_KINDS; k++) {
			__u64 all = vm->vmm.run_ns[k] + vm->vmm.wait_ns[k];

			side_add(out, max, &n, false, "%-16.16s %7u %5.0f%% %5.1f%%", kind[k], vm->vmm.threads[k],
				 s->seconds > 0 ? 100 * (double)vm->vmm.run_ns[k] / 1e9 / s->seconds : 0,
				 all ? 100.0 * (double)vm->vmm.wait_ns[k] / (double)all : 0.0);
		}
		for (size_t i = 0; i < vm->vmm.nr_culprits && i < 3; i++)
			side_add(out, max, &n, false, "  %5.1f%% %s", 100 * vm->vmm.culprits[i].share,
				 culprit_who(&vm->vmm.culprits[i], who, sizeof(who)));
	}
	if (vm->nr_address_spaces) {
		__u64 all = 0;
		char t[32], a[24];

		for (size_t i = 0; i < vm->nr_address_spaces; i++)
			all += vm->address_spaces[i].sum_ns;
		side_add(out, max, &n, true, "%-22.22s %9s %6s", "GUEST ADDRESS SPACE", "GUEST", "SHARE");
		for (size_t i = 0; i < vm->nr_address_spaces && i < 5; i++)
			side_add(out, max, &n, false, "CR3 %-18.18s %9s %5.1f%%",
				 cr3_target(vm->address_spaces[i].addr, t, sizeof(t)),
				 format_ns(vm->address_spaces[i].sum_ns, a, sizeof(a)),
				 all ? 100.0 * (double)vm->address_spaces[i].sum_ns / (double)all : 0.0);
	}
	np = place_lines(s, vm, place);
	if (np)
		side_add(out, max, &n, true, "PLACEMENT");
	for (size_t i = 0; i < np; i++)
		side_add(out, max, &n, false, "%s", place[i]);
	return n;
}
