// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * session.c - a recording session: where a stream of records (and raw
 * events) goes, whatever produces it (the kernel through live/, a capture
 * through replay, a benchmark): the recorder, the capture of raw events,
 * the names of VMs and threads, the lost-record count and the flush cadence.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include "record/record.h"

struct rec_session {
	struct recorder *rec;
	struct capture_writer *cap;
	char *capture_path;
	struct names *names, proc;
	struct record_meta *meta;
	struct hashmap named; /* tgids whose name went to the capture */
	recorder_vm_name_fn vm_name;
	recorder_thread_name_fn thread_name;
	recorder_cgroup_fn cgroup;
	void *name_ctx;
	uint64_t mono_start_ns, last_flush;
	struct vcpustat_error err;
	int failed;
	struct rec_session_stats st;
};

static void fail(struct rec_session *s, int e)
{
	if (!s->failed)
		s->failed = e ? e : -EIO;
}

static const char *vm_name(void *ctx, uint32_t tgid)
{
	struct rec_session *s = ctx;

	return s->names ? names_vm(s->names, tgid) : s->vm_name(s->name_ctx, tgid);
}

/*
 * A thread's cgroup and PID namespace: from the capture (replay), or from
 * /proc (live; written to the capture). A VM process's come from the names'
 * cache, filled (and written to the capture) by name_vm() when its first
 * record arrived, while it surely lived.
 */
static const char *thread_cgroup(void *ctx, uint32_t tid, uint64_t *pidns)
{
	struct rec_session *s = ctx;
	static char buf[256];
	__u64 ns = 0;

	if (!s->names)
		return s->cgroup ? s->cgroup(s->name_ctx, tid, pidns) : NULL;
	if (hashmap_lookup(&s->named, &tid)) {
		const char *path = names_vm_cgroup(s->names, tid, &ns);

		*pidns = ns;
		return path[0] ? path : NULL;
	}
	if (names_thread_cgroup(s->names, tid, buf, sizeof(buf), pidns))
		return NULL;
	if (s->cap && capture_write_cgroup(s->cap, tid, *pidns, buf, &s->err))
		fail(s, s->err.code);
	return buf;
}

/*
 * A VM's name when its first record arrives, while its process is surely
 * there: the recorder asks only when it applies the VM's first record, after
 * the reorder window, and a short-lived VM may be gone by then (its name lost
 * to a pid). It goes to the capture then too, once.
 */
static void name_vm(struct rec_session *s, uint32_t tgid)
{
	const char *name;

	if (hashmap_lookup(&s->named, &tgid) || hashmap_insert(&s->named, &tgid, NULL))
		return;
	name = vm_name(s, tgid);
	if (s->cap && capture_write_name(s->cap, tgid, name, &s->err))
		fail(s, s->err.code);
	if (s->names) {
		__u64 pidns;
		const char *path = names_vm_cgroup(s->names, tgid, &pidns);

		if (path[0] && s->cap && capture_write_cgroup(s->cap, tgid, pidns, path, &s->err))
			fail(s, s->err.code);
	}
}

static const char *thread_name(void *ctx, uint32_t tid, uint32_t *tgid)
{
	struct rec_session *s = ctx;
	static char buf[64];
	const char *name = s->names ? names_thread(s->names, tid, tgid, buf, sizeof(buf)) :
				      s->thread_name(s->name_ctx, tid, tgid);

	if (name && s->cap && capture_write_thread(s->cap, tid, *tgid, name, &s->err))
		fail(s, s->err.code);
	return name;
}

/*
 * The capture's metadata (docs/capture-format.md): the recording's, one
 * "key=value" a line, with "cpus" after "level" (or last).
 */
static char *capture_meta(const struct recorder_opts *o, unsigned int nr_cpus)
{
	size_t len = 32, n = 0;
	bool cpus = false;
	char *text;

	for (size_t i = 0; i < o->nmeta; i++)
		len += strlen(o->meta[i].key) + strlen(o->meta[i].value) + 2;
	text = malloc(len);
	if (!text)
		return NULL;
	text[0] = '\0';
	for (size_t i = 0; i < o->nmeta; i++) {
		n += (size_t)snprintf(text + n, len - n, "%s=%s\n", o->meta[i].key, o->meta[i].value);
		if (!strcmp(o->meta[i].key, "level")) {
			n += (size_t)snprintf(text + n, len - n, "cpus=%u\n", nr_cpus);
			cpus = true;
		}
	}
	if (!cpus)
		snprintf(text + n, len - n, "cpus=%u\n", nr_cpus);
	return text;
}

int rec_session_open(struct rec_session **out, const struct rec_session_opts *o, struct vcpustat_error *err)
{
	struct recorder_opts ro = o->rec;
	struct rec_session *s;
	int e = -ENOMEM;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s || hashmap_init(&s->named, sizeof(uint32_t), 1, 0))
		goto nomem;
	if (o->proc_names) {
		if (names_init(&s->proc, NULL, NULL))
			goto nomem;
		s->names = &s->proc;
	}
	if (o->meta) {
		s->meta = malloc(sizeof(*s->meta));
		if (!s->meta)
			goto nomem;
		*s->meta = *o->meta;
		for (size_t i = 0; i < s->meta->n; i++)
			s->meta->meta[i] = (struct sht_meta){ s->meta->key[i], s->meta->value[i] };
		ro.meta = s->meta->meta;
		ro.nmeta = s->meta->n;
	}
	s->vm_name = o->rec.vm_name;
	s->thread_name = o->rec.thread_name;
	s->cgroup = o->rec.cgroup;
	s->name_ctx = o->rec.ctx;
	s->mono_start_ns = s->last_flush = o->rec.mono_start_ns;
	if (o->capture) {
		char *meta = capture_meta(&ro, o->nr_cpus);

		s->capture_path = strdup(o->capture);
		snprintf(s->st.capture, sizeof(s->st.capture), "%s", o->capture);
		if (!meta || !s->capture_path) {
			free(meta);
			goto nomem;
		}
		e = capture_create(&s->cap, o->capture, o->rec.mono_start_ns, o->rec.real_start_ns, meta, err);
		free(meta);
		if (e)
			goto fail;
	}
	if (s->names || s->vm_name)
		ro.vm_name = vm_name;
	if (s->names || s->thread_name)
		ro.thread_name = thread_name;
	if (s->names || s->cgroup)
		ro.cgroup = thread_cgroup;
	ro.ctx = s;
	e = recorder_open(&s->rec, &ro, err);
	if (e)
		goto fail;
	*out = s;
	return 0;
nomem:
	e = verror(err, -ENOMEM, "out of memory");
fail:
	rec_session_close(s, 0);
	return e;
}

int rec_session_record(void *ctx, const struct vcpustat_record *rec)
{
	struct rec_session *s = ctx;

	if (s->failed)
		return s->failed;
	s->st.records++;
	if ((s->names || s->vm_name) && rec->vcpu != VCPUSTAT_VCPU_NONE && rec->tgid)
		name_vm(s, rec->tgid);
	if (recorder_add(s->rec, rec, &s->err))
		fail(s, s->err.code);
	return s->failed;
}

int rec_session_event(void *ctx, const struct vcpustat_event *ev)
{
	struct rec_session *s = ctx;

	if (s->failed)
		return s->failed;
	if (s->cap && capture_write(s->cap, ev, &s->err))
		fail(s, s->err.code);
	return s->failed;
}

int rec_session_tick(struct rec_session *s, uint64_t now, uint64_t lost, bool flush)
{
	if (s->failed)
		return s->failed;
	/* every tick, like recorder_lost: replay makes the same calls (same file) */
	if (s->cap && capture_write_lost(s->cap, now, lost, &s->err))
		fail(s, s->err.code);
	else if (recorder_lost(s->rec, now, lost, &s->err))
		fail(s, s->err.code);
	else if (flush && recorder_flush(s->rec, &s->err))
		fail(s, s->err.code);
	s->st.lost = lost;
	return s->failed;
}

int rec_session_failed(const struct rec_session *s, struct vcpustat_error *err)
{
	if (s->failed && err) {
		*err = s->err;
		if (!err->msg[0])
			verror(err, s->failed, "%s", strerror(-s->failed));
	}
	return s->failed;
}

int rec_session_finish(struct rec_session **sp, uint64_t end, struct rec_session_stats *st,
		       struct vcpustat_error *err)
{
	struct rec_session *s = *sp;
	struct recorder_stats rs;
	int e;

	e = rec_session_failed(s, err);
	if (e)
		goto out;
	e = recorder_finish(&s->rec, end, &rs, &s->err);
	if (e)
		goto out;
	s->st.records = rs.records;
	s->st.freed = rs.freed;
	s->st.seconds = (double)(end - s->mono_start_ns) / 1e9;
	s->st.intervals = rs.intervals;
	s->st.files = rs.files;
	snprintf(s->st.path, sizeof(s->st.path), "%s", rs.path);
	if (s->cap) {
		struct capture_writer *cap = s->cap;

		s->st.events = capture_written(cap);
		s->cap = NULL;
		e = capture_write_end(cap, end, &s->err);
		if (capture_close(cap, e ? NULL : &s->err) && !e)
			e = s->err.code ? s->err.code : -EIO;
	}
out:
	/* a failure of the finish itself is in s->err, not (as a record's) in s->failed */
	if (e && !rec_session_failed(s, err) && err) {
		*err = s->err;
		if (!err->msg[0])
			verror(err, e, "%s", strerror(-e));
	}
	if (st)
		*st = s->st;
	rec_session_close(s, end);
	*sp = NULL;
	return e;
}

void rec_session_close(struct rec_session *s, uint64_t end)
{
	if (!s)
		return;
	if (s->rec) /* after a failure: leave what was sealed readable */
		recorder_close(s->rec, end, NULL);
	if (s->cap)
		capture_close(s->cap, NULL);
	hashmap_free(&s->named);
	if (s->names)
		names_free(s->names);
	free(s->meta);
	free(s->capture_path);
	free(s);
}

int record_meta_add(struct record_meta *m, const char *key, const char *value)
{
	if (m->n >= RECORD_MAX_META)
		return -ENOSPC;
	snprintf(m->key[m->n], sizeof(m->key[0]), "%s", key);
	snprintf(m->value[m->n], sizeof(m->value[0]), "%s", value);
	m->meta[m->n] = (struct sht_meta){ m->key[m->n], m->value[m->n] };
	m->n++;
	return 0;
}

void record_meta_topology(struct record_meta *m, const char *sysfs)
{
	struct cpu_topology t;

	if (topology_read_sysfs(&t, sysfs, NULL))
		return;
	for (int k = 0; k < TOPOLOGY_NR_KEYS; k++) {
		char v[sizeof(m->value[0])];

		/* a part not known, or too long to keep (thousands of CPUs): left out, and report says so */
		if (!topology_meta(&t, k, v, sizeof(v)))
			record_meta_add(m, topology_meta_key[k], v);
	}
	topology_free(&t);
}

const char *const record_meta_live_keys[] = {
	"host", "kernel", "tool", "command", "level", "culprits", "cpus", "topology.", NULL,
};

bool record_meta_reserved(const char *key, const char *const *reserved)
{
	for (size_t i = 0; reserved && reserved[i]; i++) {
		size_t n = strlen(reserved[i]);

		if (!strcmp(key, reserved[i]) || (n && reserved[i][n - 1] == '.' && !strncmp(key, reserved[i], n)))
			return true;
	}
	return false;
}

void record_meta_live(struct record_meta *m, enum vcpustat_record_level level, int argc, char **argv,
		      const struct record_meta *user)
{
	char host[256] = "", kernel[256] = "", cmdline[1024] = "";
	struct utsname un;

	m->n = 0;
	if (uname(&un) == 0) {
		snprintf(host, sizeof(host), "%s", un.nodename);
		snprintf(kernel, sizeof(kernel), "%s %s", un.release, un.machine);
	}
	for (int i = 0, n = 0; i < argc && n < (int)sizeof(cmdline) - 2; i++)
		n += snprintf(cmdline + n, sizeof(cmdline) - (size_t)n, "%s%s", i ? " " : "vcpustat ", argv[i]);
	record_meta_add(m, "host", host);
	record_meta_add(m, "kernel", kernel);
	record_meta_add(m, "tool", "vcpustat " VCPUSTAT_VERSION);
	record_meta_add(m, "command", cmdline);
	record_meta_add(m, "level", record_level_name(level));
	if (level == VCPUSTAT_LEVEL_VCPU) /* who ran where tracked threads waited: REC_RUNNER */
		record_meta_add(m, "culprits", "runners");
	record_meta_topology(m, NULL);
	for (size_t i = 0; user && i < user->n; i++)
		record_meta_add(m, user->key[i], user->value[i]);
}

void record_meta_replay(struct record_meta *m, const char *text)
{
	bool vcpu = false, runners = false;

	m->n = 0;
	for (const char *p = text; p && *p && m->n < RECORD_MAX_META - 1;) {
		const char *nl = strchr(p, '\n'), *eq;
		size_t llen = nl ? (size_t)(nl - p) : strlen(p);
		char key[64], value[1024];

		eq = memchr(p, '=', llen);
		if (eq && eq > p) {
			snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
			snprintf(value, sizeof(value), "%.*s", (int)(llen - (size_t)(eq - p) - 1), eq + 1);
			record_meta_add(m, key, value);
			vcpu |= !strcmp(key, "level") && !strcmp(value, "vcpu");
			runners |= !strcmp(key, "culprits");
		}
		p = nl ? nl + 1 : NULL;
	}
	/* a replay at level vcpu records who runs where tracked threads wait, as record does */
	if (vcpu && !runners)
		record_meta_add(m, "culprits", "runners");
	record_meta_add(m, "source", "replay");
}

int record_level_parse(const char *name, enum vcpustat_record_level *level)
{
	if (!strcmp(name, "vcpu"))
		*level = VCPUSTAT_LEVEL_VCPU;
	else if (!strcmp(name, "full"))
		*level = VCPUSTAT_LEVEL_FULL;
	else
		return -EINVAL;
	return 0;
}

const char *record_level_name(enum vcpustat_record_level level)
{
	return level == VCPUSTAT_LEVEL_FULL ? "full" : "vcpu";
}

void rec_session_print(FILE *f, const char *prog, const struct rec_session_stats *st, bool behind)
{
	if (behind)
		fprintf(f, "%s: still behind the kernel when the final drain ran out of time: "
			"the newest records are not in the file\n", prog);
	if (st->capture[0])
		fprintf(f, "%s: %llu raw events in %s\n", prog, (unsigned long long)st->events, st->capture);
	fprintf(f, "%s: %llu records, %llu intervals in %llu file%s (last: %s), %.1f s; lost %llu%s\n", prog,
		(unsigned long long)st->records, (unsigned long long)st->intervals, (unsigned long long)st->files,
		st->files == 1 ? "" : "s", st->path, st->seconds, (unsigned long long)st->lost,
		st->lost ? " (see /meta/lost: the timeline has holes)" : "");
	if (st->freed)
		fprintf(f, "%s: the disk was full: %llu older file%s of the series deleted to make room (--keep)\n", prog,
			(unsigned long long)st->freed, st->freed == 1 ? "" : "s");
}

json_t *rec_session_json(const struct rec_session_stats *st, bool behind)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:f, s:I, s:b}", "file", st->path, "files", (json_int_t)st->files,
			      "records", (json_int_t)st->records, "intervals", (json_int_t)st->intervals, "seconds",
			      st->seconds, "lost", (json_int_t)st->lost, "behind", behind);

	if (o && st->freed)
		json_object_set_new(o, "freed", json_integer((json_int_t)st->freed));
	if (o && (st->capture[0] || st->events))
		json_object_set_new(o, "events", json_integer((json_int_t)st->events));
	if (o && st->capture[0])
		json_object_set_new(o, "capture", json_string(st->capture));
	return o;
}
