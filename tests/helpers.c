// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <bpf/bpf.h>
#include <jansson.h>
#include "helpers.h"
#include "live/live.h"
#include "record/record.h"
#include "model/summary.h"
#include "util/jsonw.h"

const char *bpf_unavailable(void)
{
	static char msg[256];

	if (vcpustat_check_privileges(msg, sizeof(msg)))
		return msg;
	return NULL;
}

const char *kvm_unavailable(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	struct stat st;
	bool chr;

	if (fd < 0)
		return "/dev/kvm cannot be opened (no KVM on this machine, or no permission)";
	chr = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
	close(fd);
	/* a script's `exec 3<>/dev/kvm` creates a regular file where there was nothing */
	return chr ? NULL : "/dev/kvm is not a device (a stray regular file: remove it)";
}

const char *kvm_exit_unavailable(void)
{
	if (kvm_unavailable())
		return "needs a KVM whose kvm_entry/kvm_exit fire, and this machine has no usable /dev/kvm: "
		       "tests/run.sh runs these tests in the KVM lab (docs/kvmlab.md)";
	if (access("/sys/module/kvm_amd", F_OK) && access("/sys/module/kvm_intel", F_OK))
		return "needs a KVM whose kvm_entry/kvm_exit fire (kvm_amd or kvm_intel), and this machine's KVM is "
		       "a software one: tests/run.sh runs these tests in the KVM lab (docs/kvmlab.md)";
	return NULL;
}

const char *live_status_wrong(int status, const char *err)
{
	static char why[256];

	if (status == 0)
		return NULL;
	if (status == 1 && kvm_exit_unavailable() && err && strstr(err, "is blind to part of this host") &&
	    strstr(err, "kvm_exit fired for none"))
		return NULL; /* this host's software KVM: said so, as it must */
	snprintf(why, sizeof(why), "exit status %d%s", status,
		 kvm_exit_unavailable() ? " (1 with the warning that kvm_exit fired for none of the exits is right here)" :
					  "");
	return why;
}

int read_schedstat(int tid, struct schedstat *s)
{
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu %llu", &s->run_ns, &s->wait_ns, &s->slices);
	fclose(f);
	return n == 3 ? 0 : -1;
}

const char *two_cpus_unavailable(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) || !CPU_ISSET(0, &set) || !CPU_ISSET(1, &set))
		return "needs CPUs 0 and 1 (this process may not run on both)";
	return NULL;
}

int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

pid_t start_pingpong(int cpu_a, int cpu_b)
{
	pid_t pid = fork();

	if (pid == 0) {
		int a[2], b[2];
		char c = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test */
		if (pipe(a) || pipe(b))
			_exit(1);
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with its partner */
			if (cpu_b >= 0)
				pin_to_cpu(cpu_b);
			close(a[1]);
			close(b[0]);
			for (;;)
				if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
					_exit(0);
		}
		if (cpu_a >= 0)
			pin_to_cpu(cpu_a);
		close(a[0]);
		close(b[1]);
		for (;;)
			if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
				_exit(0);
	}
	return pid;
}

__u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

const char *build_dir(void)
{
	const char *d = getenv("VCPUSTAT_BUILD_DIR");

	return d ? d : VCPUSTAT_BUILD_DIR;
}

int wait_exit(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static pid_t tracked[16];

pid_t proc_spawn(char *const argv[], const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 16; i++)
		if (!tracked[i]) {
			tracked[i] = pid;
			break;
		}
	return pid;
}

int proc_wait(pid_t pid)
{
	int st = wait_exit(pid);

	for (int i = 0; st >= 0 && i < 16; i++)
		if (tracked[i] == pid)
			tracked[i] = 0;
	return st;
}

int proc_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	return proc_wait(pid);
}

void proc_stop_all(void)
{
	for (int i = 0; i < 16; i++)
		if (tracked[i] > 0) {
			kill(tracked[i], SIGTERM);
			waitpid(tracked[i], NULL, 0);
			tracked[i] = 0;
		}
}

static char scratch[96];

const char *scratch_file(const char *prefix, const char *name)
{
	static char paths[64][256];
	static int i;
	char *p = paths[i++ % 64];

	if (!scratch[0]) {
		snprintf(scratch, sizeof(scratch), "/tmp/vcpustat-%s-XXXXXX", prefix);
		if (!mkdtemp(scratch))
			abort();
	}
	snprintf(p, sizeof(paths[0]), "%s/%s", scratch, name);
	return p;
}

const char *scratch_dir(const char *prefix)
{
	scratch_file(prefix, "");
	return scratch;
}

void scratch_remove(void)
{
	char cmd[160];

	if (!scratch[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", scratch);
	scratch[0] = '\0';
}

int free_loopback_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (s < 0)
		return -1;
	if (!bind(s, (struct sockaddr *)&a, sizeof(a)) && !getsockname(s, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	close(s);
	return port;
}

char *slurp_file(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, cap = 4096, n;
	char *buf = malloc(cap);

	if (!buf)
		abort();
	buf[0] = '\0';
	if (!f)
		return buf;
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 2048 && !(buf = realloc(buf, cap *= 2)))
			abort();
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

int run_shell(const char *cmd, char *out, size_t len)
{
	char full[4096];
	FILE *p;
	size_t n;
	int st;

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	p = popen(full, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void tmux_end(const char *name)
{
	char cmd[256], out[256];

	snprintf(cmd, sizeof(cmd), "tmux kill-session -t '%s'", name);
	run_shell(cmd, out, sizeof(out)); /* "can't find session": nothing to end */
}

int run_vcpustat(const char *args, char *out, size_t len)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s/bin/vcpustat %s", build_dir(), args);
	return run_shell(cmd, out, len);
}

json_t *report_json(const char *sht, const char *window)
{
	static char out[1 << 16];
	char args[512];
	json_error_t je;
	json_t *j;

	snprintf(args, sizeof(args), "report %s -j %s", sht, window);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	j = json_loads(out, 0, &je);
	cr_assert_not_null(j, "report -j: %s: %s", je.text, out);
	return j;
}

struct vcpustat *inject_events(const struct vcpustat_event *evs, size_t n, bool address_spaces,
			       struct vcpustat_snapshot *snap)
{
	struct vcpustat_options o = { .record_level = VCPUSTAT_LEVEL_NONE, .address_spaces = address_spaces };
	struct vcpustat *vs;
	int err = vcpustat_open(&vs, &o);

	cr_assert_eq(err, 0, "vcpustat_open: %s", strerror(-err));
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(vcpustat_inject(vs, &evs[i]), 0, "injection of event %zu", i);
	cr_assert_eq(vcpustat_snapshot(vs, snap), 0);
	return vs;
}

bool culprit_lookup(struct vcpustat *vs, __u32 key_tgid, __u32 tid, __u64 *ns)
{
	struct vcpustat_culprit_key k = { .vm_tgid = key_tgid, .tid = tid };
	struct vcpustat_culprit c;

	if (bpf_map_lookup_elem(vcpustat_map_fd(vs, "culprits"), &k, &c))
		return false;
	*ns = c.ns;
	return true;
}

struct replay *replay_events(const struct vcpustat_event *evs, size_t n, unsigned int max_details)
{
	struct replay_options o = { .record_level = VCPUSTAT_LEVEL_VCPU, .max_details = max_details };
	struct replay *rp;

	cr_assert_eq(replay_new(&rp, &o), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(replay_event(rp, &evs[i]), 0, "replay of event %zu", i);
	return rp;
}

void replay_to_sht(const struct vcpustat_event *evs, size_t n, __u32 tgid, const char *name, __u64 end_ns,
		   const char *sht)
{
	static char out[1 << 16];
	char cap[] = "/tmp/vcpustat-cap-XXXXXX.vcap", args[1024];
	struct vcpustat_error err = { 0 };
	struct capture_writer *w;
	int fd = mkstemps(cap, 5);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(capture_create(&w, cap, 0, 1795356187000000000ull, "level=vcpu\ncpus=2\n", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_name(w, tgid, name, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(capture_write(w, &evs[i], &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_end(w, end_ns, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	snprintf(args, sizeof(args), "replay -q %s -o %s", cap, sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	unlink(cap);
}

void assert_holds(const char *what, const char *text, const char *const *needles)
{
	for (const char *const *n = needles; *n; n++)
		cr_assert_not_null(strstr(text, *n), "%s: no \"%s\" in:\n%s", what, *n, text);
}

void expect_janssons_text(const char *text, size_t len)
{
	json_error_t e;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
	char *again;

	cr_assert(doc, "the written document does not parse: %s at offset %d", e.text, e.position);
	again = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
	cr_assert(again);
	cr_assert(strlen(again) == len && !memcmp(text, again, len), "the written document is not what jansson prints of it");
	free(again);
	json_decref(doc);
}

json_t *summary_json_checked(const struct summary *s)
{
	struct jw w = { 0 };
	json_t *doc;

	summary_json_write(&w, s, NULL, 0);
	cr_assert(jw_text(&w), "summary_json_write: error %d", jw_error(&w));
	expect_janssons_text(w.p, jw_len(&w));
	doc = jw_parse(&w);
	cr_assert(doc);
	jw_free(&w);
	return doc;
}
