// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The supervisor: what the user runs. It starts one VM process per VM
 * (fork + exec of its own executable, so each VM's /proc/<pid>/cmdline
 * carries a QEMU-like `-name guest=<name>,debug-threads=on` for vcpustat),
 * reads their JSON lines from one pipe each, writes the --ready file once all
 * are running, forwards SIGINT/SIGTERM, and prints the final report.
 *
 * Failure handling: a VM process that exits without a report, or with a
 * non-zero status, stops the others (SIGTERM) and makes the run fail (exit 1,
 * no report). VM processes die with the supervisor (PR_SET_PDEATHSIG).
 * Deadlines, so that nothing hangs: all VMs ready within STARTUP_TIMEOUT_S;
 * with --duration, all stopped within duration + RUN_GRACE_S of being ready;
 * once asked to stop, VM processes still alive after KILL_AFTER_S get
 * SIGKILL. A second SIGINT/SIGTERM also kills them at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "microvm.h"

#define STARTUP_TIMEOUT_S 60
#define RUN_GRACE_S 30
#define KILL_AFTER_S 10
#define LINE_MAX_BYTES (16u << 20)
#define NSEC 1000000000ull

struct child {
	unsigned int index;
	char name[MICROVM_NAME_MAX + 24];
	pid_t pid;	/* 0 when not started or reaped */
	int fd;		/* read end of its report pipe, -1 at EOF */
	char *buf;	/* bytes read, not yet a complete line */
	size_t len, cap;
	json_t *ready;	/* the "vm" object of its ready line */
	json_t *report; /* the "vm" object of its report line */
	bool bad;	/* it failed (message printed) */
};

struct supervisor {
	const struct microvm_opts *o;
	struct child *children;
	unsigned int nr;
	bool stopping;		/* SIGTERM (or the user's signal) sent to all */
	uint64_t stop_at;	/* when stopping began */
	bool killed;		/* SIGKILL sent to all */
	bool failed;
	const char *stopped_by; /* NULL = duration */
	uint64_t all_ready_at;	/* 0 = not yet */
};

static void sup_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sup_err(const char *fmt, ...)
{
	va_list ap;

	fputs("microvm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void signal_all(struct supervisor *s, int sig)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (s->children[i].pid > 0)
			kill(s->children[i].pid, sig);
}

static void stop_all(struct supervisor *s, int sig)
{
	if (s->stopping)
		return;
	s->stopping = true;
	s->stop_at = now_ns();
	signal_all(s, sig);
}

static void fail_all(struct supervisor *s)
{
	s->failed = true;
	stop_all(s, SIGTERM);
}

/* ---- starting VM processes ---------------------------------------------- */

/* The --mix bits as "cpuid,mmio" (the VM processes parse it back). */
static const char *mix_list(unsigned int mix, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int op = 0; op < MIX_NR_OPS; op++)
		if (mix & (1u << op))
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", used ? "," : "",
						 microvm_mix_names[op]);
	return buf;
}

static int spawn(struct supervisor *s, struct child *c, const char *exe, const char *argv0,
		 const sigset_t *orig_mask)
{
	const struct microvm_opts *o = s->o;
	char a_name[MICROVM_NAME_MAX + 64], a_index[16], a_fd[16], a_vcpus[16], a_busy[32], a_idle[32],
		a_chunk_us[32], a_chunk_iters[32], a_pin[16], a_mix[64], a_io[32], a_msi[32];
	const char *argv[40];
	pid_t parent = getpid();
	int pipefd[2], n = 0;

	if (pipe2(pipefd, O_CLOEXEC)) {
		sup_err("pipe: %s", strerror(errno));
		return -1;
	}
	snprintf(a_name, sizeof(a_name), "guest=%s,debug-threads=on", c->name);
	snprintf(a_index, sizeof(a_index), "%u", c->index);
	snprintf(a_fd, sizeof(a_fd), "%d", pipefd[1]);
	snprintf(a_vcpus, sizeof(a_vcpus), "%u", o->vcpus);
	snprintf(a_busy, sizeof(a_busy), "%llu", (unsigned long long)o->busy_us);
	snprintf(a_idle, sizeof(a_idle), "%llu", (unsigned long long)o->idle_us);
	snprintf(a_chunk_us, sizeof(a_chunk_us), "%llu", (unsigned long long)o->chunk_us);
	snprintf(a_chunk_iters, sizeof(a_chunk_iters), "%llu", (unsigned long long)o->chunk_iters);
	snprintf(a_pin, sizeof(a_pin), "%d", o->pin);
	argv[n++] = argv0;
	argv[n++] = "-name";
	argv[n++] = a_name;
	argv[n++] = "--vm-index";
	argv[n++] = a_index;
	argv[n++] = "--report-fd";
	argv[n++] = a_fd;
	argv[n++] = "--vcpus";
	argv[n++] = a_vcpus;
	argv[n++] = "--busy-us";
	argv[n++] = a_busy;
	argv[n++] = "--idle-us";
	argv[n++] = a_idle;
	argv[n++] = "--chunk-us";
	argv[n++] = a_chunk_us;
	if (o->chunk_iters) {
		argv[n++] = "--chunk-iters";
		argv[n++] = a_chunk_iters;
	}
	if (o->pin >= 0) {
		argv[n++] = "--pin";
		argv[n++] = a_pin;
	}
	if (o->io_thread_us) {
		snprintf(a_io, sizeof(a_io), "%llu", (unsigned long long)o->io_thread_us);
		argv[n++] = "--io-thread-us";
		argv[n++] = a_io;
	}
	if (o->msi_us) {
		snprintf(a_msi, sizeof(a_msi), "%llu", (unsigned long long)o->msi_us);
		argv[n++] = "--msi-us";
		argv[n++] = a_msi;
	}
	if (o->mix) {
		argv[n++] = "--mix";
		argv[n++] = mix_list(o->mix, a_mix, sizeof(a_mix));
	}
	if (o->irqchip)
		argv[n++] = "--irqchip";
	if (o->ipi)
		argv[n++] = "--ipi";
	if (o->address_spaces)
		argv[n++] = "--address-spaces";
	if (o->nested)
		argv[n++] = "--nested";
	if (o->duration_arg) {
		argv[n++] = "--duration";
		argv[n++] = o->duration_arg;
	}
	if (o->hold_path) {
		argv[n++] = "--hold";
		argv[n++] = o->hold_path;
	}
	argv[n] = NULL;

	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		c->pid = 0;
		sup_err("fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (c->pid == 0) {
		/* The VM process: die with the supervisor, keep only the write end. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(MICROVM_EXIT_FAIL);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, orig_mask, NULL);
		if (fcntl(pipefd[1], F_SETFD, 0) == 0)
			execv(exe, (char *const *)argv);
		dprintf(STDERR_FILENO, "microvm: VM %s: exec %s: %s\n", c->name, exe, strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	c->fd = pipefd[0];
	return 0;
}

/* ---- what the VM processes say ------------------------------------------ */

static void handle_line(struct supervisor *s, struct child *c, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *msg = json_loadb(line, len, 0, &jerr), *vm;
	const char *type;

	vm = msg ? json_object_get(msg, "vm") : NULL;
	type = msg ? json_string_value(json_object_get(msg, "type")) : NULL;
	if (!json_is_object(vm) || !type ||
	    json_integer_value(json_object_get(vm, "pid")) != (json_int_t)c->pid) {
		sup_err("VM %s (pid %d): unreadable message: %.80s", c->name, (int)c->pid, line);
		c->bad = true;
		fail_all(s);
	} else if (!strcmp(type, "ready") && !c->ready) {
		c->ready = json_incref(vm);
	} else if (!strcmp(type, "report") && !c->report) {
		c->report = json_incref(vm);
	} else {
		sup_err("VM %s (pid %d): unexpected message '%s'", c->name, (int)c->pid, type);
	}
	json_decref(msg);
}

/* Read what is there; returns false at EOF or on an error. */
static bool read_child(struct supervisor *s, struct child *c)
{
	char *nl;
	ssize_t n;

	if (c->cap - c->len < 65536) {
		size_t cap = c->cap ? c->cap * 2 : 65536 * 2;
		char *buf = cap <= LINE_MAX_BYTES ? realloc(c->buf, cap) : NULL;

		if (!buf) {
			sup_err("VM %s (pid %d): message too long", c->name, (int)c->pid);
			c->bad = true;
			fail_all(s);
			return false;
		}
		c->buf = buf;
		c->cap = cap;
	}
	n = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	c->len += (size_t)n;
	while ((nl = memchr(c->buf, '\n', c->len))) {
		size_t line = (size_t)(nl - c->buf);

		handle_line(s, c, c->buf, line);
		memmove(c->buf, nl + 1, c->len - line - 1);
		c->len -= line + 1;
	}
	return true;
}

static void reap(struct supervisor *s, struct child *c)
{
	int status;

	close(c->fd);
	c->fd = -1;
	if (c->bad) /* it said something we cannot trust: do not wait for it to notice */
		kill(c->pid, SIGKILL);
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && c->report) {
		/* a clean end */
	} else if (!c->bad) {
		if (WIFSIGNALED(status))
			sup_err("VM %s (pid %d) was killed by signal %d (%s)%s", c->name, (int)c->pid,
				WTERMSIG(status), strsignal(WTERMSIG(status)), c->report ? "" : " before its report");
		else if (WEXITSTATUS(status))
			sup_err("VM %s (pid %d) failed (exit status %d)", c->name, (int)c->pid, WEXITSTATUS(status));
		else
			sup_err("VM %s (pid %d) exited without a report", c->name, (int)c->pid);
		c->bad = true;
	}
	if (c->bad)
		fail_all(s);
	c->pid = 0;
}

/* ---- outputs ------------------------------------------------------------ */

static int write_ready(struct supervisor *s)
{
	json_t *doc = json_pack("{s:i, s:[]}", "supervisor_pid", (int)getpid(), "vms");
	char *text;
	int err = -ENOMEM;

	for (unsigned int i = 0; i < s->nr; i++)
		json_array_append(json_object_get(doc, "vms"), s->children[i].ready);
	text = json_dumps(doc, JSON_INDENT(2));
	if (text)
		err = write_file_atomic(s->o->ready_path, text);
	if (err)
		sup_err("--ready %s: %s", s->o->ready_path, strerror(-err));
	free(text);
	json_decref(doc);
	return err;
}

static json_t *options_json(const struct microvm_opts *o)
{
	json_t *mix = json_array();

	for (unsigned int op = 0; op < MIX_NR_OPS; op++)
		if (o->mix & (1u << op))
			json_array_append_new(mix, json_string(microvm_mix_names[op]));
	return json_pack("{s:i, s:i, s:I, s:I, s:I, s:o, s:o, s:o, s:s, s:o}", "vms", (int)o->vms, "vcpus",
			 (int)o->vcpus, "busy_us", (json_int_t)o->busy_us, "idle_us", (json_int_t)o->idle_us,
			 "chunk_us", (json_int_t)o->chunk_us, "chunk_iters",
			 o->chunk_iters ? json_integer((json_int_t)o->chunk_iters) : json_null(), "pin",
			 o->pin >= 0 ? json_integer(o->pin) : json_null(), "duration_s",
			 o->duration_s > 0 ? json_real(o->duration_s) : json_null(), "name", o->name, "mix", mix);
}

static int write_report(struct supervisor *s, uint64_t wall_ns)
{
	json_t *doc = json_pack("{s:s, s:i, s:o, s:I, s:s, s:[]}", "version", VCPUSTAT_VERSION, "supervisor_pid",
				(int)getpid(), "options", options_json(s->o), "wall_ns", (json_int_t)wall_ns,
				"stopped_by", s->stopped_by ? s->stopped_by : "duration", "vms");
	char *text;
	int err = -ENOMEM;

	for (unsigned int i = 0; doc && i < s->nr; i++)
		json_array_append(json_object_get(doc, "vms"), s->children[i].report);
	text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
	if (text && s->o->json_path) {
		size_t len = strlen(text);
		char *with_nl = malloc(len + 2);

		if (with_nl) {
			memcpy(with_nl, text, len);
			memcpy(with_nl + len, "\n", 2);
			err = write_file_atomic(s->o->json_path, with_nl);
		}
		free(with_nl);
		if (err)
			sup_err("--json %s: %s", s->o->json_path, strerror(-err));
	} else if (text) {
		err = 0;
		if (puts(text) == EOF || fflush(stdout)) {
			err = -errno;
			sup_err("writing the report to stdout: %s", strerror(errno));
		}
	}
	free(text);
	json_decref(doc);
	return err;
}

/* Fail early, not after a long run, when an output file cannot be written. */
static int check_output_dir(const char *opt, const char *path)
{
	char *copy = strdup(path), *dir;
	int ok;

	if (!copy)
		return -1;
	dir = dirname(copy);
	ok = access(dir, W_OK | X_OK) == 0;
	if (!ok)
		sup_err("%s %s: cannot write in directory %s: %s", opt, path, dir, strerror(errno));
	free(copy);
	return ok ? 0 : -1;
}

/* ---- the loop ----------------------------------------------------------- */

static bool any_alive(const struct supervisor *s)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (s->children[i].pid > 0)
			return true;
	return false;
}

/* The next deadline (0 = none) and what to do when it passes. */
static uint64_t next_deadline(const struct supervisor *s, uint64_t start)
{
	if (s->stopping)
		return s->killed ? 0 : s->stop_at + KILL_AFTER_S * NSEC;
	if (!s->all_ready_at)
		return start + STARTUP_TIMEOUT_S * NSEC;
	if (s->o->duration_s > 0)
		return s->all_ready_at + (uint64_t)(s->o->duration_s * 1e9) + RUN_GRACE_S * NSEC;
	return 0;
}

static void deadline_passed(struct supervisor *s)
{
	if (s->stopping) {
		sup_err("VM processes still running %d s after being asked to stop: killing them", KILL_AFTER_S);
		signal_all(s, SIGKILL);
		s->killed = true;
		s->failed = true;
	} else if (!s->all_ready_at) {
		sup_err("not every vCPU of every VM was running after %d s: stopping", STARTUP_TIMEOUT_S);
		fail_all(s);
	} else {
		sup_err("the VMs did not stop %d s after --duration: stopping them", RUN_GRACE_S);
		fail_all(s);
	}
}

static void on_signal(struct supervisor *s, int sig_fd)
{
	struct signalfd_siginfo si;

	if (read(sig_fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (s->stopping) { /* asked again: do not wait any more */
		signal_all(s, SIGKILL);
		s->killed = true;
		s->failed = true;
		return;
	}
	s->stopped_by = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
	stop_all(s, (int)si.ssi_signo);
}

static void check_ready(struct supervisor *s)
{
	for (unsigned int i = 0; i < s->nr; i++)
		if (!s->children[i].ready)
			return;
	s->all_ready_at = now_ns();
	if (s->o->ready_path && write_ready(s))
		fail_all(s);
}

static int run_loop(struct supervisor *s, int sig_fd, uint64_t start)
{
	struct pollfd *p = calloc(s->nr + 1, sizeof(*p));
	struct child **who = calloc(s->nr + 1, sizeof(*who));

	if (!p || !who) {
		sup_err("out of memory");
		fail_all(s);
	}
	while (p && who && any_alive(s)) {
		uint64_t deadline = next_deadline(s, start), t = now_ns();
		struct timespec ts, *tsp = NULL;
		unsigned int n = 0;

		if (deadline && t >= deadline) {
			deadline_passed(s);
			continue;
		}
		if (deadline) {
			ts.tv_sec = (time_t)((deadline - t) / NSEC);
			ts.tv_nsec = (long)((deadline - t) % NSEC);
			tsp = &ts;
		}
		p[n++] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		for (unsigned int i = 0; i < s->nr; i++) {
			struct child *c = &s->children[i];

			if (c->pid > 0) {
				who[n] = c;
				p[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
			}
		}
		if (ppoll(p, n, tsp, NULL) < 0) {
			if (errno == EINTR)
				continue;
			sup_err("ppoll: %s", strerror(errno));
			fail_all(s);
			break;
		}
		if (p[0].revents & POLLIN)
			on_signal(s, sig_fd);
		for (unsigned int i = 1; i < n; i++)
			if (p[i].revents && !read_child(s, who[i]))
				reap(s, who[i]);
		if (!s->all_ready_at && !s->stopping)
			check_ready(s);
	}
	free(p);
	free(who);
	return s->failed ? -1 : 0;
}

int microvm_supervise(const struct microvm_opts *o, const char *argv0)
{
	struct supervisor s = { .o = o, .nr = o->vms };
	char exe[PATH_MAX];
	sigset_t stop_sigs, orig_mask;
	uint64_t start;
	ssize_t n;
	int sig_fd, ret = MICROVM_EXIT_FAIL;

	if ((o->json_path && check_output_dir("--json", o->json_path)) ||
	    (o->ready_path && check_output_dir("--ready", o->ready_path)) ||
	    (o->hold_path && check_output_dir("--hold", o->hold_path)))
		return MICROVM_EXIT_USAGE;

	/* Our own executable, by its real path (so the VMs' comm is "microvm", not "exe"). */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		sup_err("/proc/self/exe: %s", strerror(errno));
		return MICROVM_EXIT_FAIL;
	}
	exe[n] = '\0';

	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_sigs, &orig_mask);
	signal(SIGPIPE, SIG_IGN);
	sig_fd = signalfd(-1, &stop_sigs, SFD_CLOEXEC);
	s.children = calloc(s.nr, sizeof(*s.children));
	if (sig_fd < 0 || !s.children) {
		sup_err("setting up: %s", strerror(errno));
		goto out;
	}
	for (unsigned int i = 0; i < s.nr; i++) {
		struct child *c = &s.children[i];

		c->index = i;
		c->fd = -1;
		if (s.nr == 1)
			snprintf(c->name, sizeof(c->name), "%s", o->name);
		else
			snprintf(c->name, sizeof(c->name), "%s-%u", o->name, i);
	}

	start = now_ns();
	for (unsigned int i = 0; i < s.nr; i++) {
		if (spawn(&s, &s.children[i], exe, argv0, &orig_mask)) {
			fail_all(&s);
			break;
		}
	}
	if (run_loop(&s, sig_fd, start) == 0 && write_report(&s, now_ns() - start) == 0)
		ret = MICROVM_EXIT_OK;
out:
	for (unsigned int i = 0; s.children && i < s.nr; i++) {
		struct child *c = &s.children[i];

		if (c->pid > 0) { /* only after an internal error: do not leave VMs behind */
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
		}
		if (c->fd >= 0)
			close(c->fd);
		free(c->buf);
		json_decref(c->ready);
		json_decref(c->report);
	}
	free(s.children);
	if (sig_fd >= 0)
		close(sig_fd);
	return ret;
}
