// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The window model and the names: pure user space, driven through replay. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "helpers.h"
#include "model/summary.h"
#include "record/record.h"

Test(names, exit_reasons_vmx_svm_userspace)
{
	char buf[32];

	cr_assert_str_eq(exit_reason_name(KVM_ISA_VMX, 32, buf, sizeof(buf)), "MSR_WRITE");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_VMX, 12, buf, sizeof(buf)), "HLT");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_VMX, 0x80000000u | 33, buf, sizeof(buf)), "INVALID_STATE");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_VMX, 999, buf, sizeof(buf)), "VMX_999");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_SVM, 0x78, buf, sizeof(buf)), "hlt");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_SVM, 0x43, buf, sizeof(buf)), "BP excp");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_SVM, 0x400, buf, sizeof(buf)), "npf");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_SVM, 0xffffffffu, buf, sizeof(buf)), "invalid_guest_state");
	cr_assert_str_eq(exit_reason_name(KVM_ISA_SVM, 0x3ff, buf, sizeof(buf)), "SVM_0x3ff");
	cr_assert_str_eq(userspace_exit_name(2, buf, sizeof(buf)), "IO");
	cr_assert_str_eq(userspace_exit_name(5, buf, sizeof(buf)), "HLT");
	cr_assert_str_eq(userspace_exit_name(200, buf, sizeof(buf)), "KVM_EXIT_200");
}

Test(names, states)
{
	for (int i = 0; i < VCPU_NR_STATES; i++)
		cr_assert_eq(vcpu_state_from_name(vcpu_state_name((unsigned int)i)), i);
	cr_assert_str_eq(vcpu_state_name(VCPU_PREEMPTED), "preempted");
	cr_assert_eq(vcpu_state_from_name("nope"), -1);
}

static int name_of(const char *args, size_t len, char *out)
{
	return vm_name_from_cmdline(args, len, out, 64);
}

#define CMDLINE(s) s, sizeof(s)

Test(names, vm_name_from_qemu_and_libvirt_command_lines)
{
	char out[64];

	cr_assert_eq(name_of(CMDLINE("qemu-system-x86_64\0-m\0001024\0-name\0web1\0-smp\0002"), out), 0);
	cr_assert_str_eq(out, "web1");
	cr_assert_eq(name_of(CMDLINE("qemu\0-name\0guest=db-7,debug-threads=on\0-S"), out), 0);
	cr_assert_str_eq(out, "db-7");
	cr_assert_eq(name_of(CMDLINE("qemu\0-name\0debug-threads=on,guest=x"), out), 0);
	cr_assert_str_eq(out, "x");
	cr_assert_eq(name_of(CMDLINE("qemu\0--name\0a,,b,process=foo"), out), 0);
	cr_assert_str_eq(out, "a,b", "',,' is an escaped comma");
	cr_assert_eq(name_of(CMDLINE("qemu\0-name\0process=foo"), out), -1, "no guest name");
	cr_assert_eq(name_of(CMDLINE("qemu\0-m\0001024"), out), -1);
	cr_assert_eq(name_of(CMDLINE("qemu\0-name"), out), -1, "-name without a value");
	cr_assert_eq(name_of(CMDLINE("microvm\0--vms\0001\0-name\0guest=demo-1"), out), 0);
	cr_assert_str_eq(out, "demo-1");
}

Test(names, process_and_vm_names_from_a_fake_proc)
{
	char root[] = "/tmp/vcpustat-names-XXXXXX", cmd[512];
	struct names n;

	cr_assert_not_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/10 %s/20 && printf 'qemu-kvm\\n' > %s/10/comm && "
				   "printf 'qemu\\0-name\\0guest=alpha\\0' > %s/10/cmdline && printf 'fc\\n' > %s/20/comm",
		 root, root, root, root, root);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(names_init(&n, root, root), 0);
	cr_assert_str_eq(names_vm(&n, 10), "alpha");
	cr_assert_str_eq(names_process(&n, 10), "qemu-kvm");
	cr_assert_str_eq(names_vm(&n, 20), "fc", "no -name: the process name");
	cr_assert_str_eq(names_vm(&n, 30), "pid 30", "gone");
	cr_assert_str_eq(names_process(&n, 0), "idle");
	/* cached: still known after the process is gone */
	snprintf(cmd, sizeof(cmd), "rm -rf %s/10", root);
	cr_assert_eq(system(cmd), 0);
	cr_assert_str_eq(names_vm(&n, 10), "alpha");
	/* cgroup ids are directory inode numbers */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/system.slice/x.service", root);
	cr_assert_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/system.slice/x.service", root);
	{
		struct stat st;

		cr_assert_eq(stat(cmd, &st), 0);
		cr_assert_str_eq(names_cgroup(&n, st.st_ino), "/system.slice/x.service");
	}
	names_free(&n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

Test(summary, percentiles_interpolate_within_buckets)
{
	__u64 b[LAT_HIST_BUCKETS] = { 0 };

	cr_assert_eq(latency_percentile(b, 0, 0.5), 0);
	b[lat_hist_bucket(1000)] = 100;
	{
		__u64 p50 = latency_percentile(b, 100, 0.5), p99 = latency_percentile(b, 100, 0.99);
		unsigned int k = lat_hist_bucket(1000);

		cr_assert_geq(p50, lat_hist_lower(k));
		cr_assert_lt(p50, lat_hist_upper(k));
		cr_assert_geq(p99, p50);
		cr_assert_lt(p99, lat_hist_upper(k));
	}
	memset(b, 0, sizeof(b));
	b[lat_hist_bucket(100)] = 98;	  /* 98 fast */
	b[lat_hist_bucket(1000000)] = 2; /* 2 slow */
	cr_assert_lt(latency_percentile(b, 100, 0.5), 120);
	cr_assert_lt(latency_percentile(b, 100, 0.98), 120);
	cr_assert_geq(latency_percentile(b, 100, 0.99), lat_hist_lower(lat_hist_bucket(1000000)));
}

/* Drive a replay, take snapshots, and check the window arithmetic. */
static struct replay *rp;

static void ev(__u64 type, __u64 ts, __u32 cpu, __u32 tid, __u32 tgid, __u32 tid2, __u32 tgid2, __u64 a0, __u64 a1)
{
	struct vcpustat_event e = { .type = type, .ts = ts, .cpu = cpu, .tid = tid, .tgid = tgid, .tid2 = tid2,
				    .tgid2 = tgid2, .arg0 = a0, .arg1 = a1, .arg2 = 7 };

	snprintf(e.comm, sizeof(e.comm), type == VCPUSTAT_EV_SWITCH ? "hog" : "CPU %u/KVM", tid % 10);
	cr_assert_eq(replay_event(rp, &e), 0);
}

Test(summary, window_shares_rates_exits_and_culprits)
{
	struct vcpustat_snapshot a, b;
	struct summary s;
	struct names n;
	const struct vm_summary *vm;

	cr_assert_eq(replay_new(&rp, NULL), 0);
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	/* vCPU 0 (tid 11) of VM 10 and vCPU 1 (tid 12) */
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 1, 12, 10, 0, 0, 1, 0);
	/* snapshot at t = 1 s */
	ev(VCPUSTAT_EV_KVM_EXIT, 1000000000, 0, 11, 10, 0, 0, 30, KVM_ISA_VMX);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	/* in the next second: vCPU 0 is preempted by a hog (tid 99) for 0.5 s */
	ev(VCPUSTAT_EV_KVM_ENTRY, 1000001000, 0, 11, 10, 0, 0, 0, 0);	   /* exit took 1 us */
	ev(VCPUSTAT_EV_KVM_EXIT, 1200000000, 0, 11, 10, 0, 0, 30, KVM_ISA_VMX);
	ev(VCPUSTAT_EV_SWITCH, 1200000000, 0, 11, 10, 99, 99, 0, 1);
	ev(VCPUSTAT_EV_SWITCH, 1700000000, 0, 99, 99, 11, 10, 0, 1);
	ev(VCPUSTAT_EV_KVM_ENTRY, 1700002000, 0, 11, 10, 0, 0, 0, 0); /* exit took 500 ms incl. preemption */
	ev(VCPUSTAT_EV_KVM_EXIT, 2000000000, 0, 12, 10, 0, 0, 12, KVM_ISA_VMX);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	/* replay snapshots are stamped with the last event time */
	a.ts = 1000000000;
	b.ts = 2000000000;

	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	vm = &s.vms[0];
	cr_assert_eq(vm->tgid, 10);
	cr_assert_eq(vm->nr_vcpus, 2);
	cr_assert_eq(vm->vcpus[0].index, 0);
	cr_assert_eq(vm->vcpus[0].ns[VCPU_PREEMPTED], 500000000);
	cr_assert_eq(vm->vcpus[0].ns[VCPU_GUEST], (1200000000 - 1000001000) + (2000000000 - 1700002000));
	cr_assert_eq(vm->vcpus[0].ns[VCPU_HOST], 1000 + 2000);
	cr_assert_eq(vm->vcpus[0].preemptions, 1);
	cr_assert_eq(vm->vcpus[0].ns_total[VCPU_GUEST], 1000000000 + vm->vcpus[0].ns[VCPU_GUEST]);
	cr_assert_eq(vm->vcpus[1].ns[VCPU_GUEST], 1000000000);
	cr_assert_float_eq(vcpu_share(&s, &vm->vcpus[0], VCPU_PREEMPTED), 0.5, 1e-9);
	cr_assert_float_eq(vm_share(&s, vm, VCPU_PREEMPTED), 0.25, 1e-9);
	/* exits: reason 30 closed twice in the window (1 us, 500 ms); HLT still open */
	cr_assert_eq(vm->nr_exits, 1);
	cr_assert_str_eq(vm->exits[0].name, "IO_INSTRUCTION");
	cr_assert_eq(vm->exits[0].count, 2);
	cr_assert_float_eq(vm->exits[0].rate, 2.0, 1e-9);
	cr_assert_lt(vm->exits[0].p50_ns, 1200);
	cr_assert_geq(vm->exits[0].p99_ns, 400000000);
	cr_assert_eq(vm->exits[0].max_ns, 500002000);
	/* the hog took 0.5 s of vCPU 0's time: all of the VM's waiting */
	cr_assert_eq(vm->nr_culprits, 1);
	cr_assert_eq(vm->culprits[0].tid, 99);
	cr_assert_str_eq(vm->culprits[0].comm, "hog");
	cr_assert_eq(vm->culprits[0].ns, 500000000);
	cr_assert_float_eq(vm->culprits[0].share, 1.0, 1e-9);
	cr_assert_eq(vm->runq.count, 1);
	{
		json_t *doc = summary_json_checked(&s), *v0;

		v0 = json_array_get(json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "vcpus"), 0);
		cr_assert_str_eq(json_string_value(json_object_get(v0, "state")), "guest");
		cr_assert_eq(json_integer_value(json_object_get(json_object_get(v0, "ns"), "preempted")), 500000000);
		cr_assert_eq(json_integer_value(json_object_get(v0, "tid")), 11);
		cr_assert_eq(json_integer_value(json_object_get(v0, "pid")), 10);
		cr_assert_not_null(json_object_get(json_object_get(v0, "ns_total"), "blocked"));
		json_decref(doc);
	}
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	names_free(&n);
	replay_free(rp);
}

/*
 * A vCPU that exits while the maps are read is read alive, then found among
 * the dead: the window counts it once (its dead entry), not twice.
 */
Test(summary, a_vcpu_read_alive_and_dead_counts_once)
{
	struct vcpustat_snapshot a, b;
	struct summary s;
	struct names n;
	const struct vm_summary *vm;

	cr_assert_eq(replay_new(&rp, NULL), 0);
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 1, 12, 10, 0, 0, 1, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 1000000000, 0, 11, 10, 0, 0, 30, KVM_ISA_VMX);
	ev(VCPUSTAT_EV_KVM_ENTRY, 1000001000, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 2000000000, 0, 12, 10, 0, 0, 12, KVM_ISA_VMX);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	a.ts = 0;
	b.ts = 2000000000;
	/* vCPU 0 (tid 11) also among the dead, as the kernel moves it at its exit */
	cr_assert_eq(b.nr_vcpus, 2);
	b.dead = realloc(b.dead, (b.nr_dead + 1) * sizeof(*b.dead));
	cr_assert_not_null(b.dead);
	b.dead[b.nr_dead++] = b.vcpus[b.vcpus[0].tid == 11 ? 0 : 1];

	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	vm = &s.vms[0];
	cr_assert_eq(vm->nr_vcpus, 2, "tid 11 once: %zu vCPUs", vm->nr_vcpus);
	/* at most two vCPUs' 2 s (the dead one's clock stopped at its last event), not three */
	cr_assert_leq(vm->ns[VCPU_GUEST] + vm->ns[VCPU_HOST], 2 * 2000000000ull, "%llu ns",
		      (unsigned long long)(vm->ns[VCPU_GUEST] + vm->ns[VCPU_HOST]));
	for (size_t i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].tid == 11) {
			cr_assert(vm->vcpus[i].gone, "the dead entry is the one counted");
			cr_assert_eq(vm->vcpus[i].kvm_exits, 1);
		}
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	names_free(&n);
	replay_free(rp);
}

/*
 * A window of many VMs, each with several vCPUs, exit reasons and culprits:
 * the arrays of the summary grow past several powers of two (37 VMs, 5 vCPUs,
 * 5 reasons, 3 culprits each) and every VM keeps exactly its own numbers.
 */
Test(summary, many_vms_keep_each_its_vcpus_exits_and_culprits)
{
	static const __u32 reasons[] = { 1, 10, 12, 30, 48 };
	enum { VMS = 37, VCPUS = 5, CULPRITS = 3 };
	struct vcpustat_snapshot a, b;
	struct summary s;
	struct names n;

	cr_assert_eq(replay_new(&rp, NULL), 0);
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	for (__u32 m = 0; m < VMS; m++)
		for (__u32 c = 0; c < VCPUS; c++)
			ev(VCPUSTAT_EV_KVM_ENTRY, 0, c, 1000 + m * 10 + c, 1000 + m * 10 + 9, 0, 0, c, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	for (__u32 m = 0; m < VMS; m++) {
		__u32 tgid = 1000 + m * 10 + 9;
		__u64 t = 1000000 + m * 100000000ull;

		/* vCPU c takes exit r for (m + 1) * (r + 1) us */
		for (__u32 c = 0; c < VCPUS; c++)
			for (__u32 r = 0; r < 5; r++, t += 1000000) {
				ev(VCPUSTAT_EV_KVM_EXIT, t, c, 1000 + m * 10 + c, tgid, 0, 0, reasons[r], KVM_ISA_VMX);
				ev(VCPUSTAT_EV_KVM_ENTRY, t + (m + 1) * (r + 1) * 1000, c, 1000 + m * 10 + c, tgid, 0, 0,
				   c, 0);
			}
		/* culprit k (tid 90000 + 10 m + k) preempts vCPU 0 for (k + 1) ms */
		for (__u32 k = 0; k < CULPRITS; k++, t += 10000000) {
			ev(VCPUSTAT_EV_KVM_EXIT, t, 0, 1000 + m * 10, tgid, 0, 0, 1, KVM_ISA_VMX);
			ev(VCPUSTAT_EV_SWITCH, t, 0, 1000 + m * 10, tgid, 90000 + m * 10 + k, 90000, 0, 1);
			ev(VCPUSTAT_EV_SWITCH, t + (k + 1) * 1000000, 0, 90000 + m * 10 + k, 90000, 1000 + m * 10, tgid,
			   0, 1);
			ev(VCPUSTAT_EV_KVM_ENTRY, t + (k + 1) * 1000000, 0, 1000 + m * 10, tgid, 0, 0, 0, 0);
		}
	}
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	a.ts = 0;
	b.ts = VMS * 100000000ull;

	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	cr_assert_eq(s.nr_vms, VMS);
	for (__u32 m = 0; m < VMS; m++) {
		/* sorted by name: "pid 1009", "pid 1019", ... in the order they were made */
		const struct vm_summary *vm = &s.vms[m];

		cr_assert_eq(vm->tgid, 1000 + m * 10 + 9, "VM %u is pid %u", m, vm->tgid);
		cr_assert_eq(vm->nr_vcpus, VCPUS);
		for (__u32 c = 0; c < VCPUS; c++) {
			cr_assert_eq(vm->vcpus[c].index, c);
			cr_assert_eq(vm->vcpus[c].tid, 1000 + m * 10 + c);
			cr_assert_eq(vm->vcpus[c].kvm_exits, c ? 5 : 5 + CULPRITS);
		}
		cr_assert_eq(vm->nr_exits, 5);
		for (size_t e = 0; e < vm->nr_exits; e++) {
			const struct latency_summary *l = &vm->exits[e];
			size_t r = 0;

			while (r < 5 && reasons[r] != l->reason)
				r++;
			cr_assert_lt(r, 5, "VM %u: an exit reason %u of its own", m, l->reason);
			/* reason 1 also ended each culprit's preemption: (k + 1) ms each */
			cr_assert_eq(l->count, VCPUS + (r ? 0 : CULPRITS));
			cr_assert_eq(l->sum_ns, VCPUS * (m + 1) * (r + 1) * 1000ull + (r ? 0 : (1 + 2 + 3) * 1000000ull),
				     "VM %u reason %u: %llu ns", m, l->reason, (unsigned long long)l->sum_ns);
		}
		cr_assert_eq(vm->nr_culprits, CULPRITS);
		for (__u32 k = 0; k < CULPRITS; k++) {
			/* most time first: culprit 2 (3 ms), 1, 0 */
			cr_assert_eq(vm->culprits[k].tid, 90000 + m * 10 + (CULPRITS - 1 - k));
			cr_assert_eq(vm->culprits[k].ns, (CULPRITS - k) * 1000000ull);
		}
	}
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	names_free(&n);
	replay_free(rp);
}

Test(summary, vm_filter_by_name_or_pid)
{
	struct vcpustat_snapshot a;
	struct summary s;
	struct names n;
	const char *want[] = { "20" };
	struct summary_filter f = { want, 1 };

	cr_assert_eq(replay_new(&rp, NULL), 0);
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	ev(VCPUSTAT_EV_KVM_RUN, 10, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_RUN, 10, 0, 21, 20, 0, 0, 0, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	cr_assert_eq(summary_build(&s, NULL, &a, &n, &f), 0);
	cr_assert_eq(s.nr_vms, 1);
	cr_assert_eq(s.vms[0].tgid, 20);
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	names_free(&n);
	replay_free(rp);
}

/* The right edge (column after the last character) of the n-th whitespace-separated field of line. */
static int field_end(const char *line, int n)
{
	int i = 0;

	for (int f = 0;; f++) {
		while (line[i] == ' ')
			i++;
		if (!line[i] || line[i] == '\n')
			return -1;
		while (line[i] && line[i] != ' ' && line[i] != '\n')
			i++;
		if (f == n)
			return i;
	}
}

/*
 * Halt polling in a window: vCPU 0 (tid 11) of VM 10 halts twice in guest
 * mode (VMX HLT = 12); with a 200 ms budget KVM polls 100 ms and sees the
 * wake-up, then polls 50 ms and the vCPU goes to sleep for 150 ms. vCPU 1
 * (tid 12) stays in guest mode. The window's counts, shares, JSON and text.
 */
Test(summary, halt_polls_in_the_window_json_and_text)
{
	struct vcpustat_snapshot a, b;
	const struct vcpu_summary *v0 = NULL;
	const struct vm_summary *vm;
	struct summary s;
	struct names n;
	char *text = NULL, *hdr, *row, *line;
	size_t len = 0;
	FILE *f;
	json_t *doc, *vmj, *v0j = NULL, *vj;
	size_t i;

	cr_assert_eq(replay_new(&rp, NULL), 0);
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 1, 12, 10, 0, 0, 1, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 1100000000, 0, 11, 10, 0, 0, 12, KVM_ISA_VMX);
	ev(VCPUSTAT_EV_HALT, 1100000000, 0, 11, 10, 0, 0, 200000000, 1);	    /* POLL, halt_poll_ns 200000000 */
	ev(VCPUSTAT_EV_HALT_END, 1200000000, 0, 11, 10, 0, 0, 100000000, 0); /* ok */
	ev(VCPUSTAT_EV_KVM_ENTRY, 1200000000, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 1300000000, 0, 11, 10, 0, 0, 12, KVM_ISA_VMX);
	ev(VCPUSTAT_EV_HALT, 1300000000, 0, 11, 10, 0, 0, 200000000, 1);
	ev(VCPUSTAT_EV_SWITCH, 1350000000, 0, 11, 10, 0, 0, 1, 0); /* asleep (TASK_INTERRUPTIBLE): failed */
	ev(VCPUSTAT_EV_WAKEUP, 1500000000, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_SWITCH, 1500000000, 0, 0, 0, 11, 10, 0, 0);
	ev(VCPUSTAT_EV_HALT_END, 1500000000, 0, 11, 10, 0, 0, 400000000, 1); /* no poll under way: nothing */
	ev(VCPUSTAT_EV_KVM_ENTRY, 1500000000, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 2000000000, 1, 12, 10, 0, 0, 30, KVM_ISA_VMX);
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	a.ts = 1000000000;
	b.ts = 2000000000;

	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	cr_assert_eq(s.nr_vms, 1);
	vm = &s.vms[0];
	for (i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].tid == 11)
			v0 = &vm->vcpus[i];
	cr_assert_not_null(v0);
	cr_assert_eq(v0->ns[VCPU_POLL], 150000000);
	cr_assert_eq(v0->ns[VCPU_IDLE], 150000000);
	cr_assert_eq(v0->ns[VCPU_GUEST], 700000000);
	cr_assert_eq(v0->ns[VCPU_HOST], 0, "the halt polls were HOST before: not any more");
	cr_assert_eq(v0->polls_ok, 1);
	cr_assert_eq(v0->polls_failed, 1);
	cr_assert_eq(v0->poll_fail_ns, 50000000);
	cr_assert_eq(v0->halt_poll_ns, 200000000);
	cr_assert_eq(vm->polls_ok, 1);
	cr_assert_eq(vm->polls_failed, 1);
	cr_assert_eq(vm->poll_fail_ns, 50000000);
	cr_assert_eq(vm->halt_poll_ns, 200000000, "the largest of its vCPUs' (vCPU 1 never halted: 0)");
	cr_assert_float_eq(vcpu_share(&s, v0, VCPU_POLL), 0.15, 1e-9);
	cr_assert_float_eq(vm_share(&s, vm, VCPU_POLL), 0.075, 1e-9);

	/* JSON: "halt_poll" per vCPU and per VM, "poll" among the states and shares */
	doc = summary_json_checked(&s);
	vmj = json_array_get(json_object_get(doc, "vms"), 0);
	json_array_foreach(json_object_get(vmj, "vcpus"), i, vj)
		if (json_integer_value(json_object_get(vj, "tid")) == 11)
			v0j = vj;
	cr_assert_not_null(v0j);
	for (int k = 0; k < 2; k++) {
		json_t *hp = json_object_get(k ? vmj : v0j, "halt_poll");

		cr_assert_eq(json_object_size(hp), 4);
		cr_assert_eq(json_integer_value(json_object_get(hp, "ok")), 1);
		cr_assert_eq(json_integer_value(json_object_get(hp, "failed")), 1);
		cr_assert_eq(json_integer_value(json_object_get(hp, "failed_ns")), 50000000);
		cr_assert_eq(json_integer_value(json_object_get(hp, "halt_poll_ns")), 200000000);
		cr_assert_eq(json_integer_value(json_object_get(json_object_get(k ? vmj : v0j, "ns"), "poll")), 150000000);
	}
	cr_assert_float_eq(json_real_value(json_object_get(json_object_get(v0j, "share"), "poll")), 0.15, 1e-9);
	cr_assert_float_eq(json_real_value(json_object_get(json_object_get(vmj, "share"), "poll")), 0.075, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(v0j, "ns_total"), "poll")), 150000000);
	json_decref(doc);

	/* text: poll beside host in the VM line, the halt polling line, a POLL column under its header */
	f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	cr_assert(strstr(text, ": guest 85.0% host 0.0% poll 7.5% preempted 0.0% wait 0.0% idle 7.5% blocked 0.0%  "),
		  "%s", text);
	line = strstr(text, "    halt polling: ");
	cr_assert_not_null(line, "%s", text);
	cr_assert_eq(strncmp(line,
			     "    halt polling: 1 ok, 1 failed (1.0/s), 50.000 ms CPU burnt in failed polls, "
			     "halt_poll_ns 200000000\n",
			     strlen("    halt polling: 1 ok, 1 failed (1.0/s), 50.000 ms CPU burnt in failed polls, "
				    "halt_poll_ns 200000000\n")),
		     0, "%s", text);
	cr_assert_null(strstr(line + 5, "halt polling:"), "one line per VM");
	hdr = strstr(text, "    VCPU ");
	cr_assert_not_null(hdr);
	cr_assert_eq(strncmp(hdr, "    VCPU  TID      STATE      PCPU   GUEST    HOST    POLL PREEMPT    WAIT    IDLE "
				  "BLOCKED PREEMPT/s   WAKE/s  MIGR/s\n",
			     strlen("    VCPU  TID      STATE      PCPU   GUEST    HOST    POLL PREEMPT    WAIT    IDLE "
				    "BLOCKED PREEMPT/s   WAKE/s  MIGR/s\n")),
		     0, "%s", hdr);
	row = strstr(hdr, "\n    ");
	cr_assert_not_null(row);
	row++;
	while (row && strncmp(row + 4, "1     11 ", 9) && strncmp(row + 4, "0     11 ", 9))
		row = strchr(row, '\n') ? strchr(row, '\n') + 1 : NULL;
	cr_assert_not_null(row, "vCPU of tid 11:\n%s", text);
	/* every right-aligned column (PCPU on) ends where its header ends; POLL (field 6) holds 15.0% */
	for (int c = 3; c < 14; c++)
		cr_assert_eq(field_end(row, c), field_end(hdr, c), "column %d:\n%.*s", c, 400, hdr);
	cr_assert_eq(strncmp(row + field_end(row, 6) - 5, "15.0%", 5), 0, "%.200s", row);
	free(text);

	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	names_free(&n);
	replay_free(rp);
}

/*
 * Live: an exit in progress at a refresh (issue 40 item 3) is the vCPU's open
 * exit in the window it began in (VMX TRIPLE_FAULT; SVM shutdown and the
 * userspace exit SHUTDOWN after it), and in no later window's.
 */
Test(summary, exit_in_progress_at_a_refresh_is_open_in_the_window_of_its_start)
{
	struct vcpustat_snapshot a, b, c;
	const struct vcpu_summary *v11 = NULL, *v12 = NULL;
	struct summary s;
	struct names n;
	char *text = NULL;
	size_t len = 0;
	json_t *doc, *vj;
	FILE *f;

	cr_assert_eq(replay_new(&rp, NULL), 0);
	cr_assert_eq(names_init(&n, "/nonexistent", "/nonexistent"), 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 0, 1, 12, 10, 0, 0, 1, 0);
	cr_assert_eq(replay_snapshot(rp, &a), 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 1100000000, 0, 11, 10, 0, 0, 1, KVM_ISA_VMX); /* EXTERNAL_INTERRUPT, closed */
	ev(VCPUSTAT_EV_KVM_ENTRY, 1100002000, 0, 11, 10, 0, 0, 0, 0);
	ev(VCPUSTAT_EV_KVM_EXIT, 1500000000, 0, 11, 10, 0, 0, 2, KVM_ISA_VMX);	/* TRIPLE_FAULT: open */
	ev(VCPUSTAT_EV_KVM_EXIT, 1900000000, 1, 12, 10, 0, 0, 0x07f, KVM_ISA_SVM); /* shutdown: open */
	ev(VCPUSTAT_EV_USERSPACE_EXIT, 1950000000, 1, 12, 10, 0, 0, 8, 0);	/* SHUTDOWN: open */
	cr_assert_eq(replay_snapshot(rp, &b), 0);
	ev(VCPUSTAT_EV_KVM_ENTRY, 2500000000, 0, 99, 99, 0, 0, 0, 0); /* time passes, nothing of theirs */
	cr_assert_eq(replay_snapshot(rp, &c), 0);
	a.ts = 1000000000;
	b.ts = 2000000000;
	c.ts = 3000000000;

	cr_assert_eq(summary_build(&s, &a, &b, &n, NULL), 0);
	for (size_t i = 0; i < s.vms[0].nr_vcpus; i++) {
		if (s.vms[0].vcpus[i].tid == 11)
			v11 = &s.vms[0].vcpus[i];
		if (s.vms[0].vcpus[i].tid == 12)
			v12 = &s.vms[0].vcpus[i];
	}
	cr_assert(v11 && v12);
	cr_assert_eq(v11->kvm_exits, 2);
	cr_assert_eq(v11->kvm_exits_open, 1);
	cr_assert_str_eq(v11->open_exit, "TRIPLE_FAULT");
	cr_assert_eq(v11->open_exit_ns, 500000000);
	cr_assert_eq(v12->kvm_exits_open, 1);
	cr_assert_str_eq(v12->open_exit, "shutdown");
	cr_assert_eq(v12->open_exit_ns, 100000000);
	cr_assert_eq(v12->userspace_exits_open, 1);
	cr_assert_str_eq(v12->open_uexit, "SHUTDOWN");
	cr_assert_eq(s.vms[0].kvm_exits_open, 2);
	cr_assert_eq(s.vms[0].userspace_exits_open, 1);
	for (size_t i = 0; i < s.vms[0].nr_exits; i++)
		cr_assert_eq(s.vms[0].exits[i].open, 0, "live rows are the kernel's histograms: closed exits");
	doc = summary_json_checked(&s);
	json_array_foreach(json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "vcpus"), len, vj)
		if (json_integer_value(json_object_get(vj, "tid")) == 11) {
			cr_assert_eq(json_integer_value(json_object_get(vj, "kvm_exits_open")), 1);
			cr_assert_str_eq(json_string_value(json_object_get(vj, "open_exit")), "TRIPLE_FAULT");
		}
	json_decref(doc);
	len = 0;
	f = open_memstream(&text, &len);
	summary_print(f, &s, NULL, 0, 0);
	fclose(f);
	cr_assert(strstr(text, "open at the end: vCPU 7 in exit TRIPLE_FAULT"), "%s", text);
	cr_assert(strstr(text, "vCPU 7 in userspace exit SHUTDOWN (50.0ms so far)"), "%s", text);
	free(text);
	summary_free(&s);

	/* (ev() gives every vCPU id 7) the next refresh: still in the same exits, which began before: not this window's */
	cr_assert_eq(summary_build(&s, &b, &c, &n, NULL), 0);
	for (size_t i = 0; i < s.vms[0].nr_vcpus; i++) {
		cr_assert_eq(s.vms[0].vcpus[i].kvm_exits, 0);
		cr_assert_eq(s.vms[0].vcpus[i].kvm_exits_open, 0);
		cr_assert_eq(s.vms[0].vcpus[i].userspace_exits_open, 0);
	}
	summary_free(&s);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	vcpustat_snapshot_free(&c);
	names_free(&n);
	replay_free(rp);
}
