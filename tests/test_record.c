// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Recording: the SHT file a live capture writes agrees with the live maps;
 * a capture replayed offline gives the same file; a killed recorder leaves a
 * readable file; rotation; capture files reject bad input clearly.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "record/record.h"
#include "helpers.h"
#include "cli_run.h"
#include "live/live.h"
#include "model/summary.h"
#include "model/report.h"

static pid_t start_microvm(const char *name, const char *extra_pin, double duration)
{
	char bin[512], dur[32];
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/bin/microvm", build_dir());
	snprintf(dur, sizeof(dur), "%.1f", duration);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGTERM); /* a failed test leaves no VM running */
		dup2(null, STDOUT_FILENO);
		/*
		 * 500 us chunks: a few thousand events a second, which a sanitized
		 * recorder keeps up with even in the KVM lab's emulated CPUs (one
		 * that cannot keep up never returns from draining the ring buffer).
		 */
		execl(bin, bin, "--vms", "1", "--vcpus", "2", "--pin", extra_pin, "--busy-us", "2000", "--idle-us",
		      "1500", "--chunk-us", "500", "--duration", dur, "-name", name, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static char *tmpfile_path(const char *suffix)
{
	static char paths[8][128];
	static int n;
	char *p = paths[n++ % 8];
	int fd;

	snprintf(p, 128, "/tmp/vcpustat-rec-XXXXXX");
	fd = mkstemp(p);
	cr_assert_geq(fd, 0);
	close(fd);
	unlink(p);
	strcat(p, suffix);
	return p;
}

/* Are all threads of process pid stopped (state T)? */
static bool all_stopped(__u32 pid)
{
	char path[384], buf[512];
	struct dirent *de;
	bool all = true;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (all && (de = readdir(d))) {
		FILE *f;
		char *p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%s/stat", pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		all = p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
	}
	closedir(d);
	return all;
}

/*
 * Stop (or continue) the VM process pid. Stopping waits until every thread
 * is really stopped: on a busy host a thread may need a while to get a CPU
 * and take the signal, and until then it still makes events.
 */
static void stop_vm(__u32 pid, int sig)
{
	cr_assert_eq(kill((pid_t)pid, sig), 0);
	if (sig != SIGSTOP)
		return;
	for (int i = 0; i < 500 && !all_stopped(pid); i++)
		usleep(10000);
	cr_assert(all_stopped(pid), "VM %u did not stop", pid);
}

/* The pid of the VM process named name (waits for it to appear). */
static __u32 vm_pid_of(const char *name)
{
	char cmd[256];
	unsigned int pid = 0;

	snprintf(cmd, sizeof(cmd), "pgrep -f -- '[-]name guest=%s,'", name);
	for (int i = 0; i < 100 && !pid; i++) {
		FILE *p = popen(cmd, "r");

		if (p && fscanf(p, "%u", &pid) != 1)
			pid = 0;
		if (p)
			pclose(p);
		if (!pid)
			usleep(100000);
	}
	cr_assert_gt(pid, 0, "VM %s never started", name);
	return pid;
}

static const char *name_by_pid(void *ctx, uint32_t tgid)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "vm%u", tgid);
	return buf;
}

/*
 * One BPF instance feeds both the ring buffer (-> recorder -> SHT) and the
 * maps (snapshots): over the same window, the file's per-state time of
 * every vCPU equals the maps' exactly.
 */
Test(record, file_totals_equal_live_maps_over_the_same_window, .timeout = 120)
{
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_VCPU };
	struct rec_session_opts so = { 0 };
	struct vcpustat_snapshot a, b;
	struct rec_session *rs;
	struct vcpustat_error err = { 0 };
	struct ring_buffer *rb;
	struct sht_reader *rd;
	struct vcpustat *vs;
	struct summary s;
	bool culprits;
	char *path = tmpfile_path(".sht");
	__u64 mono0, end;
	pid_t vmm;
	__u32 vm_pid;
	size_t compared = 0;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	cr_assert_eq(vcpustat_open(&vs, &o), 0);
	cr_assert_gt(vcpustat_attach(vs), 0);
	mono0 = vcpustat_now_ns();
	so.rec.path = path;
	so.rec.mono_start_ns = mono0;
	so.rec.real_start_ns = (__u64)time(NULL) * 1000000000ull;
	so.rec.vm_name = name_by_pid;
	so.rec.no_sync = true;
	cr_assert_eq(rec_session_open(&rs, &so, &err), 0, "%s", err.msg);
	{
		struct vcpustat_consumer c = { .on_record = rec_session_record, .ctx = rs };

		rb = vcpustat_ring_buffer(vs, &c);
	}
	/* Long enough for a slow machine (the KVM lab emulates every CPU): stopped with SIGTERM below. */
	vmm = start_microvm("rec-window", "0", 120.0);
	/* both vCPUs of the VM seen by the kernel */
	vm_pid = vm_pid_of("rec-window");
	for (int i = 0; i < 100; i++) {
		struct vcpustat_snapshot s0;
		size_t n = 0;

		vcpustat_drain(rb, 100);
		cr_assert_eq(vcpustat_snapshot(vs, &s0), 0);
		for (size_t j = 0; j < s0.nr_vcpus; j++)
			if (s0.vcpus[j].tgid == vm_pid && s0.vcpus[j].fsm.state != VCPU_UNKNOWN)
				n++;
		vcpustat_snapshot_free(&s0);
		if (n == 2)
			break;
	}
	/*
	 * Snapshots are taken while the VM is stopped (SIGSTOP): no event can
	 * fall between reading a map and stamping the snapshot, so the file and
	 * the maps can be compared exactly.
	 */
	stop_vm(vm_pid, SIGSTOP);
	vcpustat_drain(rb, 50);
	cr_assert_eq(vcpustat_snapshot(vs, &a), 0);
	stop_vm(vm_pid, SIGCONT);
	for (int i = 0; i < 20; i++)
		vcpustat_drain(rb, 100);
	stop_vm(vm_pid, SIGSTOP);
	vcpustat_drain(rb, 50);
	cr_assert_eq(vcpustat_snapshot(vs, &b), 0);
	stop_vm(vm_pid, SIGCONT);
	cr_assert_eq(kill(vmm, SIGTERM), 0);
	cr_assert_eq(wait_exit(vmm), 0);
	while (vcpustat_drain(rb, 0) > 0)
		;
	end = vcpustat_now_ns();
	cr_assert_eq(rec_session_failed(rs, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_session_finish(&rs, end, NULL, &err), 0, "%s", err.msg);
	cr_assert_eq(b.lost[VCPUSTAT_LOST_RINGBUF], 0, "no record may be lost for an exact comparison");

	cr_assert_eq(sht_open(&rd, path, &err), 0, "%s", err.msg);
	cr_assert_eq(report_build(&s, rd, a.ts - mono0, b.ts - mono0, NULL, &culprits, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < b.nr_vcpus; i++) {
		const struct vcpustat_vcpu *vb = &b.vcpus[i], *va = NULL;
		const struct vcpu_summary *fv = NULL;

		if (vb->tgid != vm_pid)
			continue; /* other VMs of this host: not stopped during the snapshots */
		for (size_t j = 0; j < a.nr_vcpus; j++)
			if (a.vcpus[j].tid == vb->tid)
				va = &a.vcpus[j];
		for (size_t m = 0; m < s.nr_vms; m++)
			for (size_t v = 0; v < s.vms[m].nr_vcpus; v++)
				if (s.vms[m].vcpus[v].tid == vb->tid)
					fv = &s.vms[m].vcpus[v];
		if (!va || va->fsm.state == VCPU_UNKNOWN)
			continue;
		cr_assert_not_null(fv, "vCPU %u is in the maps but not in the file", vb->tid);
		for (unsigned int st = VCPU_GUEST; st < VCPU_NR_STATES; st++) {
			__u64 live = vcpu_fsm_total(&vb->fsm, st, b.ts) - vcpu_fsm_total(&va->fsm, st, a.ts);

			cr_assert_eq(fv->ns[st], live, "vCPU %u state %u: file %llu ns, maps %llu ns", vb->tid, st,
				     (unsigned long long)fv->ns[st], (unsigned long long)live);
		}
		cr_assert_eq(fv->preemptions, vb->fsm.preemptions - va->fsm.preemptions);
		cr_assert_eq(fv->userspace_exits, vb->fsm.userspace_exits - va->fsm.userspace_exits);
		compared++;
	}
	cr_assert_eq(compared, 2, "both vCPUs of the VM compared");
	summary_free(&s);
	sht_close(rd);
	vcpustat_snapshot_free(&a);
	vcpustat_snapshot_free(&b);
	ring_buffer__free(rb);
	vcpustat_close(vs);
	unlink(path);
}

/* Every interval of every attribute of two files, compared. */
static void assert_same_files(const char *p1, const char *p2)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r1, *r2;
	size_t total = 0;

	cr_assert_eq(sht_open(&r1, p1, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_open(&r2, p2, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_nattrs(r1), sht_nattrs(r2), "%u vs %u attributes", sht_nattrs(r1), sht_nattrs(r2));
	for (uint32_t a = 0; a < sht_nattrs(r1); a++) {
		struct sht_interval *i1, *i2;
		size_t n1, n2;
		uint32_t b;
		const char *path = sht_attr_path(r1, a);

		cr_assert_eq(sht_attr_lookup(r2, path, &b), 0, "%s missing from the replayed file", path);
		cr_assert_eq(sht_query_range(r1, a, NULL, 0, UINT64_MAX - 1, &i1, &n1, &err), 0, "%s", err.msg);
		cr_assert_eq(sht_query_range(r2, b, NULL, 0, UINT64_MAX - 1, &i2, &n2, &err), 0, "%s", err.msg);
		cr_assert_eq(n1, n2, "%s: %zu vs %zu intervals", path, n1, n2);
		for (size_t i = 0; i < n1; i++) {
			cr_assert_eq(i1[i].start, i2[i].start, "%s interval %zu start", path, i);
			cr_assert_eq(i1[i].end, i2[i].end, "%s interval %zu end", path, i);
			cr_assert_eq(i1[i].value.type, i2[i].value.type, "%s interval %zu type", path, i);
			if (i1[i].value.type == SHT_INT)
				cr_assert_eq(i1[i].value.i, i2[i].value.i, "%s interval %zu", path, i);
			if (i1[i].value.type == SHT_STR)
				cr_assert_str_eq(i1[i].value.s, i2[i].value.s, "%s interval %zu", path, i);
		}
		total += n1;
		free(i1);
		free(i2);
	}
	cr_log_info("%u attributes, %zu intervals identical", sht_nattrs(r1), total);
	cr_assert_gt(total, 100);
	sht_close(r1);
	sht_close(r2);
}

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Nothing lost in the live recording; replaying its capture gives the same file. */
static void assert_replay_is_the_same(const char *live, const char *cap, const char *off)
{
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	struct sht_interval *iv;
	char cmd[2048];
	uint32_t lost;
	size_t n;

	cr_assert_eq(sht_open(&r, live, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_attr_lookup(r, "/meta/lost", &lost), 0);
	cr_assert_eq(sht_query_range(r, lost, NULL, 0, UINT64_MAX - 1, &iv, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(iv[i].value.i, 0, "records were lost: the files cannot be compared");
	free(iv);
	sht_close(r);
	snprintf(cmd, sizeof(cmd), "%s/bin/vcpustat replay -q %s -o %s", build_dir(), cap, off);
	cr_assert_eq(run(cmd), 0, "%s", cmd);
	assert_same_files(live, off);
	unlink(live);
	unlink(cap);
	unlink(off);
}

Test(record, replayed_capture_gives_the_same_file_as_the_live_recording, .timeout = 120)
{
	char *live = tmpfile_path(".sht"), *cap = tmpfile_path(".vcap"), *off = tmpfile_path(".sht"), cmd[2048];
	pid_t vmm;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	vmm = start_microvm("rec-replay", "0", 3.0);
	/* a big ring buffer: the comparison holds only if nothing was lost (checked below) */
	snprintf(cmd, sizeof(cmd),
		 "%s/bin/vcpustat record -q --level full --ringbuf 128M -o %s --capture %s --duration 2.5",
		 build_dir(), live, cap);
	cr_assert_eq(run(cmd), 0, "%s", cmd);
	wait_exit(vmm);
	assert_replay_is_the_same(live, cap, off);
}

/*
 * Level full with no VM, every handoff of a ping-pong a wakeup from one CPU
 * to the other: both CPUs' rings fill at once, finely interleaved in time.
 * Their records reach the recorder merged in time order (the capture's
 * events too): records the reorder window had to put back would be clamped
 * differently by the replay, which reads the capture in its order, and the
 * files would differ.
 */
Test(record, level_full_on_two_cpus_replays_to_the_same_file, .timeout = 120)
{
	char *live = tmpfile_path(".sht"), *cap = tmpfile_path(".vcap"), *off = tmpfile_path(".sht"), cmd[2048];
	pid_t pp;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(two_cpus_unavailable());
	pp = start_pingpong(0, 1);
	cr_assert_gt(pp, 0);
	snprintf(cmd, sizeof(cmd), "%s/bin/vcpustat record -q --level full --ringbuf 128M -o %s --capture %s --duration 1",
		 build_dir(), live, cap);
	cr_assert_eq(run(cmd), 0, "%s", cmd);
	kill(pp, SIGKILL);
	wait_exit(pp);
	assert_replay_is_the_same(live, cap, off);
}

Test(record, killed_recorder_leaves_a_readable_file, .timeout = 120)
{
	char *path = tmpfile_path(".sht"), bin[512], cmd[2048];
	struct vcpustat_error err = { 0 };
	struct sht_reader *r;
	struct stat st;
	pid_t vmm, rec;
	uint32_t a;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	snprintf(bin, sizeof(bin), "%s/bin/vcpustat", build_dir());
	vmm = start_microvm("rec-kill", "1", 60.0); /* stopped below; vcpustat can take 10 s to attach in the lab */
	rec = fork();
	if (rec == 0) {
		execl(bin, bin, "record", "-q", "--level", "full", "-o", path, (char *)NULL);
		_exit(127);
	}
	/* wait until some nodes are sealed, then kill it mid-stream */
	for (int i = 0; i < 400; i++) {
		usleep(100000);
		if (stat(path, &st) == 0 && st.st_size > 256 * 1024)
			break;
	}
	cr_assert_gt(st.st_size, 64 * 1024, "the recorder wrote nodes");
	kill(rec, SIGKILL);
	cr_assert_eq(wait_exit(rec), 128 + SIGKILL);
	kill(vmm, SIGTERM);
	wait_exit(vmm);

	snprintf(cmd, sizeof(cmd), "%s check %s > /dev/null", bin, path);
	cr_assert_eq(run(cmd), 0, "check accepts the unfinished file");
	cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert(sht_get_info(r)->recovered, "marked as an unfinished recording");
	cr_assert_eq(sht_attr_lookup(r, "/vms/rec-kill/vcpus/0/state", &a), 0);
	{
		struct sht_interval *iv;
		size_t n;

		cr_assert_eq(sht_query_range(r, a, NULL, 0, sht_get_info(r)->horizon, &iv, &n, &err), 0, "%s", err.msg);
		cr_assert_gt(n, 10, "the vCPU's intervals up to the last sealed node are there");
		free(iv);
	}
	sht_close(r);
	snprintf(cmd, sizeof(cmd), "%s query %s --path /vms/rec-kill/vcpus/1/state --json > /dev/null", bin, path);
	cr_assert_eq(run(cmd), 0);
	unlink(path);
}

Test(record, rotation_keeps_the_newest_files_each_complete, .timeout = 120)
{
	char dir[] = "/tmp/vcpustat-rot-XXXXXX", cmd[2048], path[512], *out;
	struct vcpustat_error err = { 0 };
	struct dirent *de;
	int files = 0, st;
	DIR *d;
	pid_t vmm;

	SKIP_UNLESS(bpf_unavailable());
	SKIP_UNLESS(kvm_unavailable());
	cr_assert_not_null(mkdtemp(dir));
	/*
	 * The VM outlives the recording, however long loading the programs
	 * takes (seconds under emulation: with a 5 s VM, the KVM lab once saw
	 * it end before the last file began, which then had no vCPU at all).
	 */
	vmm = start_microvm("rec-rot", "1", 30.0);
	snprintf(cmd, sizeof(cmd),
		 "%s/bin/vcpustat record -q -o %s/cap.sht --rotate-every 1s --keep 2 --duration 3.5 2> %s/record.err",
		 build_dir(), dir, dir);
	st = run(cmd);
	snprintf(cmd, sizeof(cmd), "%s/record.err", dir);
	out = slurp_file(cmd);
	cr_assert_null(live_status_wrong(st, out), "%s: %s", live_status_wrong(st, out), out);
	free(out);
	unlink(cmd);
	kill(vmm, SIGTERM);
	wait_exit(vmm);
	d = opendir(dir);
	while ((de = readdir(d))) {
		struct sht_reader *r;
		struct sht_interval *iv;
		uint32_t a;
		size_t n;

		if (!strstr(de->d_name, ".sht"))
			continue;
		files++;
		cr_assert(!strncmp(de->d_name, "cap-", 4), "%s: named after the series", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_eq(sht_open(&r, path, &err), 0, "%s", err.msg);
		cr_assert(sht_get_info(r)->closed);
		cr_assert_eq(sht_attr_lookup(r, "/vms/rec-rot/vcpus/0/state", &a), 0, "%s", path);
		/* the file starts with the vCPU's state: no gap at its start */
		cr_assert_eq(sht_query_range(r, a, NULL, sht_get_info(r)->start, sht_get_info(r)->start, &iv, &n, &err),
			     0);
		cr_assert_geq(n, 1, "%s: a value at the file's first instant", path);
		cr_assert_eq(iv[0].value.type, SHT_INT);
		free(iv);
		sht_close(r);
		unlink(path);
	}
	closedir(d);
	cr_assert_eq(files, 2, "--keep 2");
	rmdir(dir);
}

/* A file of a rotated series as the reader sees it. */
struct series_file {
	char name[256];
	uint64_t start, end;
	long long bytes;
};

static int by_file_start(const void *a, const void *b)
{
	const struct series_file *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Every .sht in dir, each opened by the reader and closed cleanly, oldest first; removed. */
static size_t read_series(const char *dir, struct series_file *files, size_t max)
{
	struct vcpustat_error err = { 0 };
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		struct sht_reader *r;
		struct stat sb;
		char path[512];

		if (!strstr(de->d_name, ".sht"))
			continue;
		cr_assert_lt(n, max);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_eq(stat(path, &sb), 0);
		cr_assert_eq(sht_open(&r, path, &err), 0, "%s: %s", path, err.msg);
		cr_assert(sht_get_info(r)->closed, "%s: closed cleanly", path);
		snprintf(files[n].name, sizeof(files[n].name), "%s", de->d_name);
		files[n].start = sht_get_info(r)->start;
		files[n].end = sht_get_info(r)->end;
		files[n].bytes = (long long)sb.st_size;
		sht_close(r);
		unlink(path);
		n++;
	}
	closedir(d);
	qsort(files, n, sizeof(*files), by_file_start);
	return n;
}

/* The N of "... intervals in N file(s)" in record's summary. */
static unsigned long summary_files(const char *err)
{
	const char *p = strstr(err, " intervals in ");

	cr_assert_not_null(p, "the summary: %s", err);
	return strtoul(p + strlen(" intervals in "), NULL, 10);
}

/*
 * --max-size is a bound (issue 40 item 4): every file of the series, closed,
 * is at most SIZE bytes (64K once wrote files of 112 KiB: the close adds the
 * open nodes and the footer after the size check). Level full records every
 * switch of the host, and a pipe ping-pong makes plenty: a few seconds rotate
 * many times. Every file opens with the reader, and the series covers the
 * recording: the first from 0, each ending where the next begins, the last
 * to the end of --duration.
 */
Test(record, max_size_bounds_every_file_of_the_series, .timeout = 120)
{
	static struct series_file files[4096];
	char dir[] = "/tmp/vcpustat-maxsize-XXXXXX", out[128];
	long long largest = 0;
	struct run r;
	pid_t pingpong;
	size_t n;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/rec.sht", dir);
	pingpong = start_pingpong(-1, -1);
	cr_assert_gt(pingpong, 0);
	RUN(&r, "record", "--level", "full", "-o", out, "--max-size", "64K", "--duration", "3");
	kill(pingpong, SIGKILL);
	waitpid(pingpong, NULL, 0);
	cr_assert_null(live_status_wrong(r.status, r.err), "%s: %s", live_status_wrong(r.status, r.err), r.err);
	n = read_series(dir, files, 4096);
	rmdir(dir);
	cr_assert_geq(n, 3, "the recording rotated several times: %zu files", n);
	cr_assert_eq(summary_files(r.err), n, "the summary counts the files written (%zu): %s", n, r.err);
	for (size_t i = 0; i < n; i++) {
		cr_assert_leq(files[i].bytes, 65536, "%s: %lld bytes, over --max-size 64K", files[i].name,
			      files[i].bytes);
		if (files[i].bytes > largest)
			largest = files[i].bytes;
		if (i + 1 < n)
			cr_assert_eq(files[i].end, files[i + 1].start, "%s ends where %s begins", files[i].name,
				     files[i + 1].name);
	}
	cr_assert_eq(files[0].start, 0, "the first file starts the recording");
	cr_assert_geq(files[n - 1].end, 3000000000ull, "the last file, %s, goes on to the end of --duration 3",
		      files[n - 1].name);
	cr_log_info("--max-size 64K, level full, 3 s: %zu files, the largest %lld bytes", n, largest);
}

/* A --max-size under an empty file's size (header, one node, footer) is a usage error naming the option. */
Test(record, max_size_too_small_for_a_file_is_a_usage_error)
{
	struct run r;

	RUN(&r, "record", "-o", "/tmp/vcpustat-never.sht", "--max-size", "40K", "--duration", "1");
	cr_assert_eq(r.status, 2, "a usage error (exit 2), not %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "--max-size") && strstr(r.err, "48K"), "names the option and the least: %s", r.err);
	cr_assert_eq(access("/tmp/vcpustat-never.sht", F_OK), -1, "no file");
}

/*
 * A rotated recording with no records (no VM; level vcpu records none) still
 * rotates, on /meta/lost set every second: the summary counts every file it
 * wrote, also those --keep deleted (issue 40 item 5: "in 1 file" after 4).
 */
Test(record, summary_counts_the_files_written_without_records, .timeout = 120)
{
	static struct series_file files[16];
	char dir[] = "/tmp/vcpustat-rot0-XXXXXX", out[128];
	struct run r;
	size_t n;

	SKIP_UNLESS(bpf_unavailable());
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/rec.sht", dir);
	RUN(&r, "record", "-o", out, "--rotate-every", "1s", "--duration", "3.5");
	cr_assert_null(live_status_wrong(r.status, r.err), "%s: %s", live_status_wrong(r.status, r.err), r.err);
	n = read_series(dir, files, 16);
	cr_assert_geq(n, 3, "rotated every second: %zu files", n);
	cr_assert_eq(summary_files(r.err), n, "the summary counts the %zu files written: %s", n, r.err);
	RUN(&r, "record", "-o", out, "--rotate-every", "1s", "--keep", "2", "--duration", "3.5");
	cr_assert_null(live_status_wrong(r.status, r.err), "%s: %s", live_status_wrong(r.status, r.err), r.err);
	n = read_series(dir, files, 16);
	rmdir(dir);
	cr_assert_eq(n, 2, "--keep 2");
	cr_assert_geq(summary_files(r.err), 3, "the summary counts the files written, not the 2 kept: %s", r.err);
	cr_log_info("no records, --rotate-every 1s: %s", r.err);
}

/* ---- capture files: round trip and bad input ---- */

static void write_capture(const char *path, int n, bool close_it)
{
	struct vcpustat_error err = { 0 };
	struct capture_writer *w;

	cr_assert_eq(capture_create(&w, path, 1000, 2000, "level=vcpu\ncpus=2\n", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_name(w, 77, "web", &err), 0);
	for (int i = 0; i < n; i++) {
		struct vcpustat_event ev = { .type = VCPUSTAT_EV_KVM_RUN, .ts = 1000 + (__u64)i, .tid = 78, .tgid = 77 };

		cr_assert_eq(capture_write(w, &ev, &err), 0, "%s", err.msg);
	}
	if (close_it) {
		cr_assert_eq(capture_write_end(w, 99999, &err), 0);
		cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	} else {
		cr_assert_eq(capture_flush(w, &err), 0);
		/* leave it like a killed writer: the events of a half-written block follow */
		capture_close(w, &err);
	}
}

static int read_all(const char *path, struct vcpustat_error *err, size_t *n)
{
	struct capture_reader *r;
	struct vcpustat_event ev;
	int e;

	*n = 0;
	e = capture_open(&r, path, err);
	if (e)
		return e;
	while ((e = capture_next(r, &ev, err)) == 1)
		(*n)++;
	capture_close_reader(r);
	return e;
}

/*
 * `replay -j`: the summary as one JSON document on stdout, with the same
 * figures as the summary line of a plain replay, and the file written.
 */
Test(capture, replay_json_summary_matches_the_text_one)
{
	char *cap = tmpfile_path(".vcap"), *sht = tmpfile_path(".sht");
	unsigned long long events, records, intervals;
	json_error_t jerr;
	struct run r;
	json_t *doc;

	write_capture(cap, 10000, true);
	RUN(&r, "replay", cap, "-o", sht);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(sscanf(strstr(r.err, ": ") + 2, "%llu events -> %llu records -> %llu intervals", &events, &records,
			    &intervals), 3, "%s", r.err);
	cr_assert_eq(events, 10000);
	cr_assert_gt(records, 0, "the vCPU's records: %s", r.err);
	unlink(sht);
	RUN(&r, "-j", "replay", cap, "-o", sht);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(r.err[0], 0, "nothing on stderr with -j: %s", r.err);
	doc = json_loads(r.out, 0, &jerr);
	cr_assert_not_null(doc, "%s: %s", jerr.text, r.out);
	cr_expect_str_eq(json_string_value(json_object_get(doc, "file")), sht);
	cr_expect_eq(json_integer_value(json_object_get(doc, "files")), 1);
	cr_expect_eq(json_integer_value(json_object_get(doc, "events")), (json_int_t)events);
	cr_expect_eq(json_integer_value(json_object_get(doc, "records")), (json_int_t)records);
	cr_expect_eq(json_integer_value(json_object_get(doc, "intervals")), (json_int_t)intervals);
	cr_expect_null(json_object_get(doc, "behind"), "behind is record's: %s", r.out);
	cr_expect_null(json_object_get(doc, "truncated_bytes"), "the capture is whole: %s", r.out);
	cr_expect_eq(access(sht, R_OK), 0, "the file is written");
	json_decref(doc);
	unlink(cap);
	unlink(sht);
}

Test(capture, round_trip_names_and_end)
{
	char *path = tmpfile_path(".vcap");
	struct vcpustat_error err = { 0 };
	struct capture_reader *r;
	struct vcpustat_event ev;
	size_t n = 0;

	write_capture(path, 10000, true);
	cr_assert_eq(capture_open(&r, path, &err), 0, "%s", err.msg);
	cr_assert_str_eq(capture_vm_name(r, 77), "web");
	cr_assert_eq(capture_end(r), 99999);
	cr_assert_eq(capture_get_info(r)->mono_start_ns, 1000);
	while (capture_next(r, &ev, &err) == 1) {
		cr_assert_eq(ev.ts, 1000 + n);
		n++;
	}
	cr_assert_eq(n, 10000);
	cr_assert_eq(capture_truncated(r, NULL), 0);
	capture_close_reader(r);
	unlink(path);
}

Test(capture, truncated_file_reads_up_to_the_last_complete_block)
{
	char *path = tmpfile_path(".vcap");
	struct vcpustat_error err = { 0 };
	struct stat st;
	size_t n;

	write_capture(path, 5000, true); /* blocks of 4096 + 904 events */
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(truncate(path, st.st_size - 500), 0);
	cr_assert_eq(read_all(path, &err, &n), 0, "a cut file is not an error: %s", err.msg);
	cr_assert_eq(n, 4096, "the complete first block");
	unlink(path);
}

Test(capture, bad_input_gives_one_error_naming_the_offset)
{
	char *path = tmpfile_path(".vcap");
	struct vcpustat_error err = { 0 };
	unsigned char byte;
	size_t n;
	int fd;

	/* a flipped byte in the events of the first block */
	write_capture(path, 100, true);
	fd = open(path, O_RDWR);
	cr_assert_eq(pread(fd, &byte, 1, 200), 1);
	byte ^= 0x40;
	cr_assert_eq(pwrite(fd, &byte, 1, 200), 1);
	close(fd);
	cr_assert_eq(read_all(path, &err, &n), -EBADMSG);
	cr_assert(strstr(err.msg, path) && strstr(err.msg, "checksum"), "%s", err.msg);
	cr_assert(strstr(err.msg, "offset "), "%s", err.msg);

	/* wrong magic */
	write_capture(path, 10, true);
	fd = open(path, O_RDWR);
	cr_assert_eq(pwrite(fd, "X", 1, 0), 1);
	close(fd);
	cr_assert_eq(read_all(path, &err, &n), -EBADMSG);
	cr_assert(strstr(err.msg, "offset 0: not a vcpustat capture"), "%s", err.msg);

	/* wrong version */
	write_capture(path, 10, true);
	fd = open(path, O_RDWR);
	byte = 9;
	cr_assert_eq(pwrite(fd, &byte, 1, 8), 1);
	close(fd);
	cr_assert_eq(read_all(path, &err, &n), -EPROTONOSUPPORT);
	cr_assert(strstr(err.msg, "offset 8: capture version 9"), "%s", err.msg);

	/* too short */
	fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert_eq(write(fd, "VCPUCAP", 7), 7);
	close(fd);
	cr_assert_eq(read_all(path, &err, &n), -EBADMSG);
	cr_assert(strstr(err.msg, "too short"), "%s", err.msg);
	unlink(path);
}
