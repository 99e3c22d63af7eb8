// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * timeline_ctf.c - a recording's timeline as CTF (export.h, docs/export.md)
 * through libbabeltrace2's own writer: a graph of a source component class of
 * ours, whose message iterator turns the timeline's intervals (in time order,
 * timeline_internal.h) into event messages, connected to sink.ctf.fs of the
 * ctf plugin, which writes the metadata and the data streams. Nothing of CTF
 * is written here by hand.
 *
 * One trace, one stream class (one stream, "vcpustat") whose events carry
 * the VM and vCPU as fields; an event per interval at its start, with its
 * length: vcpu_state, vcpu_exit, vcpu_userspace_exit, pcpu_thread. The clock
 * class is the recording's: CLOCK_MONOTONIC in ns (a value is the header's
 * mono_start_ns + t), its offset mapping it to the Unix epoch when the
 * recording has a wall clock (real_start_ns).
 *
 * The graph runs in a child process: when sink.ctf.fs fails to write (a full
 * disk), libbabeltrace2 2.0 frees its stream twice as the graph is torn down.
 * The child sends the error and _exits without tearing the graph down; the
 * parent removes what was written. The trace is made in a temporary
 * directory next to the output and renamed to it when whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <babeltrace2/babeltrace.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/common_interface_defs.h>
#define SANITIZED 1
#endif
#endif
#include "export/timeline_internal.h"
#include "vcpu_fsm.h"

/* ---- the event classes ---- */

enum { F_STR, F_U64, F_S64 };

struct fdesc {
	const char *name;
	int type;
};

static const struct fdesc f_state[] = { { "vm", F_STR },    { "vm_pid", F_S64 },   { "vcpu", F_U64 },
					{ "state", F_STR }, { "state_id", F_U64 }, { "duration_ns", F_U64 },
					{ NULL, 0 } };
static const struct fdesc f_exit[] = { { "vm", F_STR },	    { "vm_pid", F_S64 },      { "vcpu", F_U64 },
				       { "reason", F_STR }, { "duration_ns", F_U64 }, { NULL, 0 } };
static const struct fdesc f_pcpu[] = {
	{ "cpu", F_U64 }, { "tid", F_S64 }, { "comm", F_STR }, { "duration_ns", F_U64 }, { NULL, 0 }
};
static const struct fdesc f_pcpu_vcpu[] = { { "cpu", F_U64 },  { "tid", F_S64 },	 { "vm", F_STR },
					    { "vcpu", F_U64 }, { "duration_ns", F_U64 }, { NULL, 0 } };

static const char *const event_name[TL_NR_KINDS] = {
	[TL_STATE] = "vcpu_state",
	[TL_EXIT] = "vcpu_exit",
	[TL_UEXIT] = "vcpu_userspace_exit",
	[TL_PCPU] = "pcpu_thread",
};

static const struct fdesc *const event_fields[TL_NR_KINDS] = {
	[TL_STATE] = f_state,
	[TL_EXIT] = f_exit,
	[TL_UEXIT] = f_exit,
	[TL_PCPU] = f_pcpu,
};

struct ctf_src {
	struct timeline *tl;
	struct vcpustat_error err; /* an error of the timeline (reading the recording) */
	bool failed;
	bt_trace_class *tc;
	bt_stream_class *sc;
	bt_clock_class *cc;
	bt_event_class *ec[TL_NR_KINDS];
	bt_event_class *ec_pcpu_vcpu; /* a vCPU on a host CPU (TL_PCPU: another thread) */
	bt_trace *trace;
	bt_stream *stream;
	enum { S_BEGIN, S_EVENTS, S_END, S_DONE } state;
	uint64_t nevents;
};

static bt_field_class *field_class(bt_trace_class *tc, int type)
{
	bt_field_class *fc;

	if (type == F_STR)
		return bt_field_class_string_create(tc);
	fc = type == F_U64 ? bt_field_class_integer_unsigned_create(tc) : bt_field_class_integer_signed_create(tc);
	if (fc)
		bt_field_class_integer_set_field_value_range(fc, 64);
	return fc;
}

static bt_event_class *event_class(bt_stream_class *sc, bt_trace_class *tc, const char *name, const struct fdesc *f)
{
	bt_event_class *ec = bt_event_class_create(sc);
	bt_field_class *payload = bt_field_class_structure_create(tc);
	bool ok = ec && payload && !bt_event_class_set_name(ec, name);

	for (; ok && f->name; f++) {
		bt_field_class *m = field_class(tc, f->type);

		ok = m && !bt_field_class_structure_append_member(payload, f->name, m);
		bt_field_class_put_ref(m);
	}
	ok = ok && !bt_event_class_set_payload_field_class(ec, payload);
	bt_field_class_put_ref(payload);
	if (!ok) {
		bt_event_class_put_ref(ec);
		return NULL;
	}
	return ec;
}

/* The recording's clock: mono_start_ns + t, mapped to the Unix epoch when the recording has a wall clock. */
static bool make_clock(struct ctf_src *s, bt_self_component *self)
{
	const struct sht_info *info = sht_get_info(s->tl->r);

	s->cc = bt_clock_class_create(self);
	if (!s->cc || bt_clock_class_set_name(s->cc, "monotonic") ||
	    bt_clock_class_set_description(s->cc, "CLOCK_MONOTONIC of the recording (vcpustat record)"))
		return false;
	bt_clock_class_set_frequency(s->cc, 1000000000ull);
	if (sht_has_wall_clock(s->tl->r) && info->real_start_ns >= info->mono_start_ns) {
		uint64_t off = info->real_start_ns - info->mono_start_ns;

		bt_clock_class_set_offset(s->cc, (int64_t)(off / 1000000000ull), off % 1000000000ull);
		bt_clock_class_set_origin_is_unix_epoch(s->cc, BT_TRUE);
	} else {
		bt_clock_class_set_origin_is_unix_epoch(s->cc, BT_FALSE);
	}
	return true;
}

static bool make_trace(struct ctf_src *s, bt_self_component *self)
{
	const char *host = sht_meta_get(s->tl->r, "host");

	s->tc = bt_trace_class_create(self);
	if (!s->tc || !make_clock(s, self))
		return false;
	s->sc = bt_stream_class_create(s->tc);
	if (!s->sc || bt_stream_class_set_name(s->sc, "vcpustat") ||
	    bt_stream_class_set_default_clock_class(s->sc, s->cc))
		return false;
	for (int k = 0; k < TL_NR_KINDS; k++) {
		s->ec[k] = event_class(s->sc, s->tc, event_name[k], event_fields[k]);
		if (!s->ec[k])
			return false;
	}
	s->ec_pcpu_vcpu = event_class(s->sc, s->tc, "pcpu_vcpu", f_pcpu_vcpu);
	if (!s->ec_pcpu_vcpu)
		return false;
	s->trace = bt_trace_create(s->tc);
	if (!s->trace || bt_trace_set_name(s->trace, "vcpustat") ||
	    bt_trace_set_environment_entry_string(s->trace, "tracer_name", "vcpustat") ||
	    bt_trace_set_environment_entry_string(s->trace, "source_file", s->tl->file) ||
	    bt_trace_set_environment_entry_integer(s->trace, "from_ns", (int64_t)s->tl->t1) ||
	    bt_trace_set_environment_entry_integer(s->trace, "to_ns", (int64_t)s->tl->t2) ||
	    (host && bt_trace_set_environment_entry_string(s->trace, "hostname", host)))
		return false;
	s->stream = bt_stream_create(s->sc, s->trace);
	return s->stream && !bt_stream_set_name(s->stream, "vcpustat");
}

static void src_free(struct ctf_src *s)
{
	bt_stream_put_ref(s->stream);
	bt_trace_put_ref(s->trace);
	for (int k = 0; k < TL_NR_KINDS; k++)
		bt_event_class_put_ref(s->ec[k]);
	bt_event_class_put_ref(s->ec_pcpu_vcpu);
	s->ec_pcpu_vcpu = NULL;
	bt_stream_class_put_ref(s->sc);
	bt_clock_class_put_ref(s->cc);
	bt_trace_class_put_ref(s->tc);
	s->stream = NULL;
	s->trace = NULL;
	s->sc = NULL;
	s->cc = NULL;
	s->tc = NULL;
	memset(s->ec, 0, sizeof(s->ec));
}

/* ---- the source component class ---- */

static bt_component_class_initialize_method_status src_init(bt_self_component_source *self,
							    bt_self_component_source_configuration *conf,
							    const bt_value *params, void *data)
{
	struct ctf_src *s = data;

	(void)conf, (void)params;
	bt_self_component_set_data(bt_self_component_source_as_self_component(self), s);
	if (bt_self_component_source_add_output_port(self, "out", NULL, NULL) ||
	    !make_trace(s, bt_self_component_source_as_self_component(self))) {
		src_free(s);
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void src_finalize(bt_self_component_source *self)
{
	src_free(bt_self_component_get_data(bt_self_component_source_as_self_component(self)));
}

static bt_message_iterator_class_initialize_method_status
it_init(bt_self_message_iterator *it, bt_self_message_iterator_configuration *conf, bt_self_component_port_output *port)
{
	(void)conf, (void)port;
	bt_self_message_iterator_set_data(it,
					  bt_self_component_get_data(bt_self_message_iterator_borrow_component(it)));
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static bool set_str(bt_field *p, uint64_t i, const char *v)
{
	return !bt_field_string_set_value(bt_field_structure_borrow_member_field_by_index(p, i), v ? v : "");
}

static void set_u64(bt_field *p, uint64_t i, uint64_t v)
{
	bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(p, i), v);
}

static void set_s64(bt_field *p, uint64_t i, int64_t v)
{
	bt_field_integer_signed_set_value(bt_field_structure_borrow_member_field_by_index(p, i), v);
}

/* The event message of an interval; NULL if out of memory. */
static const bt_message *event_msg(struct ctf_src *s, bt_self_message_iterator *it, const struct tl_item *item)
{
	const struct sht_info *info = sht_get_info(s->tl->r);
	const struct tl_track *t = item->track;
	int64_t tid = item->on_cpu					  ? item->on_cpu->tid
		      : t->kind == TL_PCPU && item->value.type == SHT_INT ? item->value.i
									  : -1;
	const struct tl_vcpu_tid *vc = t->kind == TL_PCPU && !item->on_cpu ? tl_vcpu_of_tid(s->tl, tid) : NULL;
	int vm = item->on_cpu ? item->on_cpu->vm : vc ? vc->vm : -1;
	uint32_t vcpu = item->on_cpu ? item->on_cpu->vcpu : vc ? vc->vcpu : 0;
	bt_message *m = bt_message_event_create_with_default_clock_snapshot(
	    it, vm >= 0 ? s->ec_pcpu_vcpu : s->ec[t->kind], s->stream, info->mono_start_ns + item->start);
	const char *comm;
	bt_field *p;
	bool ok = true;

	if (!m)
		return NULL;
	p = bt_event_borrow_payload_field(bt_message_event_borrow_event(m));
	if (t->kind == TL_PCPU) {
		set_u64(p, 0, t->num);
		set_s64(p, 1, tid);
		if (vm >= 0) {
			ok = set_str(p, 2, s->tl->vms[vm].name);
			set_u64(p, 3, vcpu);
		} else {
			/* no empty string: babeltrace2 2.0's reader shows the last one again for it */
			comm = tl_thread_name(s->tl, tid);
			ok = set_str(p, 2, comm && *comm ? comm : "<...>");
		}
		set_u64(p, vm >= 0 ? 4 : 3, item->end - item->start);
	} else {
		const struct tl_vm *vm = &s->tl->vms[t->vm];

		ok = set_str(p, 0, vm->name);
		set_s64(p, 1, vm->pid);
		set_u64(p, 2, t->num);
		if (t->kind == TL_STATE) {
			unsigned int st =
			    item->value.type == SHT_INT && item->value.i >= 0 && item->value.i < VCPU_NR_STATES
				? (unsigned int)item->value.i
				: VCPU_NR_STATES;

			ok = ok && set_str(p, 3, vcpu_state_name(st));
			set_u64(p, 4, item->value.type == SHT_INT ? (uint64_t)item->value.i : 0);
			set_u64(p, 5, item->end - item->start);
		} else {
			ok = ok && set_str(p, 3, item->value.type == SHT_STR ? item->value.s : "?");
			set_u64(p, 4, item->end - item->start);
		}
	}
	if (!ok) {
		bt_message_put_ref(m);
		return NULL;
	}
	return m;
}

static bt_message_iterator_class_next_method_status it_next(bt_self_message_iterator *it, bt_message_array_const msgs,
							    uint64_t capacity, uint64_t *count)
{
	struct ctf_src *s = bt_self_message_iterator_get_data(it);
	const struct sht_info *info = sht_get_info(s->tl->r);
	uint64_t n = 0;

	while (n < capacity && s->state != S_DONE) {
		struct tl_item item;
		int r;

		switch (s->state) {
		case S_BEGIN:
			msgs[n] = bt_message_stream_beginning_create(it, s->stream);
			s->state = S_EVENTS;
			break;
		case S_EVENTS:
			r = tl_next(s->tl, &item, &s->err);
			if (r < 0) {
				s->failed = true;
				for (uint64_t i = 0; i < n; i++)
					bt_message_put_ref(msgs[i]);
				return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
			}
			if (r == 0) {
				s->state = S_END;
				continue;
			}
			msgs[n] = event_msg(s, it, &item);
			s->nevents++;
			break;
		case S_END: {
			bt_message *m = bt_message_stream_end_create(it, s->stream);

			/* the stream ends at the window's end */
			if (m)
				bt_message_stream_end_set_default_clock_snapshot(m, info->mono_start_ns + s->tl->t2);
			msgs[n] = m;
			s->state = S_DONE;
			break;
		}
		default:
			break;
		}
		if (!msgs[n]) {
			for (uint64_t i = 0; i < n; i++)
				bt_message_put_ref(msgs[i]);
			return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_MEMORY_ERROR;
		}
		n++;
	}
	*count = n;
	if (!n)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
}

/* ---- the graph ---- */

/* The first cause of libbabeltrace2's current error, and clear it. */
static void bt_reason(char *buf, size_t len)
{
	const bt_error *e = bt_current_thread_take_error();

	snprintf(buf, len, "libbabeltrace2 gave no reason");
	if (!e)
		return;
	if (bt_error_get_cause_count(e)) {
		char *cut;

		snprintf(buf, len, "%s", bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0)));
		/* "Component's "consume" method failed: status=ERROR, comp-addr=...": the sentence, not the addresses
		 */
		cut = strstr(buf, ": status=");
		if (cut)
			*cut = 0;
	}
	bt_error_release(e);
}

/* Write the trace into dir (which must not exist). 0, or -errno with err: the graph is then left as it is. */
static int write_ctf(struct ctf_src *s, const char *dir, const char *out, struct vcpustat_error *err)
{
	bt_message_iterator_class *itc = bt_message_iterator_class_create(it_next);
	bt_component_class_source *cls = itc ? bt_component_class_source_create("vcpustat", itc) : NULL;
	const bt_plugin *ctf = NULL;
	const bt_component_class_sink *fs;
	const bt_component_source *src = NULL;
	const bt_component_sink *sink = NULL;
	bt_value *params = bt_value_map_create();
	bt_graph *g = bt_graph_create(0);
	bt_graph_run_status st;
	char why[512];
	int e = 0;

	if (!itc || !cls || !params || !g || bt_message_iterator_class_set_initialize_method(itc, it_init) ||
	    bt_component_class_source_set_initialize_method(cls, src_init) ||
	    bt_component_class_source_set_finalize_method(cls, src_finalize) ||
	    bt_value_map_insert_string_entry(params, "path", dir) ||
	    bt_value_map_insert_bool_entry(params, "assume-single-trace", BT_TRUE) ||
	    bt_value_map_insert_bool_entry(params, "quiet", BT_TRUE)) {
		e = verror(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &ctf) != BT_PLUGIN_FIND_STATUS_OK ||
	    !(fs = bt_plugin_borrow_sink_component_class_by_name_const(ctf, "fs"))) {
		bt_error_release(bt_current_thread_take_error());
		e = verror(err, -ENOTSUP,
			   "%s: libbabeltrace2's ctf plugin (sink.ctf.fs) is not installed "
			   "(Debian: libbabeltrace2-0)",
			   out);
		goto out;
	}
	if (bt_graph_add_source_component_with_initialize_method_data(g, cls, "vcpustat", NULL, s,
								      BT_LOGGING_LEVEL_NONE, &src) ||
	    bt_graph_add_sink_component(g, fs, "ctf", params, BT_LOGGING_LEVEL_NONE, &sink) ||
	    bt_graph_connect_ports(g, bt_component_source_borrow_output_port_by_index_const(src, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL)) {
		bt_reason(why, sizeof(why));
		e = verror(err, -EIO, "%s: libbabeltrace2: %s", out, why);
		goto out;
	}
	do
		st = bt_graph_run(g);
	while (st == BT_GRAPH_RUN_STATUS_AGAIN);
	if (st != BT_GRAPH_RUN_STATUS_OK) {
		bt_reason(why, sizeof(why));
		if (s->failed)
			return verror(err, -EIO, "%s", s->err.msg);
		/* the graph is not torn down: its sink would free a stream twice (see the top) */
		return verror(err, st == BT_GRAPH_RUN_STATUS_MEMORY_ERROR ? -ENOMEM : -EIO,
			      "%s: libbabeltrace2 (sink.ctf.fs) could not write the trace (%s): is the disk full?", out,
			      why);
	}
out:
	bt_graph_put_ref(g); /* finalizes the components: the sink closes its files */
	bt_value_put_ref(params);
	bt_component_class_source_put_ref(cls);
	bt_message_iterator_class_put_ref(itc);
	bt_plugin_put_ref(ctf);
	return e;
}

/* ---- the output directory ---- */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

/*
 * Where the trace goes: dir, its symlinks followed, a new name or an empty
 * directory (util's outfile_dir_target), into target; and a temporary
 * directory can be made next to it.
 */
static int ctf_target(const char *dir, char *target, size_t len, struct vcpustat_error *err)
{
	char tmp[PATH_MAX];
	int e = outfile_dir_target(dir, target, len, err);

	if (e)
		return e;
	e = outfile_temp_name(target, tmp, sizeof(tmp));
	if (e)
		return verror(err, e, "%s: path too long", dir);
	if (!mkdtemp(tmp))
		return verror(err, -errno, "%s: cannot write there: %s", dir, strerror(errno));
	rmdir(tmp);
	return 0;
}

int timeline_ctf_check(const char *dir, struct vcpustat_error *err)
{
	char target[PATH_MAX];

	return ctf_target(dir, target, sizeof(target), err);
}

/* write_ctf() in a child (see the top): 0, or -errno with err. */
static int write_in_child(struct timeline *tl, const char *trace, const char *out, struct vcpustat_error *err)
{
	struct vcpustat_error cerr = { 0 };
	int fds[2], status;
	ssize_t n = 0, got;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return verror(err, -errno, "%s: %s", out, strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return verror(err, -errno, "%s: cannot fork: %s", out, strerror(errno));
	}
	if (!pid) {
		struct ctf_src s = { .tl = tl };

#ifdef SANITIZED
		__sanitizer_set_death_callback(NULL);
#endif
		close(fds[0]);
		if (write_ctf(&s, trace, out, &cerr)) {
			if (write_all(fds[1], cerr.msg, strlen(cerr.msg)))
				_exit(2);
			_exit(1);
		}
		_exit(0);
	}
	close(fds[1]);
	while (
	    (size_t)n < sizeof(cerr.msg) - 1 &&
	    ((got = read(fds[0], cerr.msg + n, sizeof(cerr.msg) - 1 - (size_t)n)) > 0 || (got < 0 && errno == EINTR)))
		n += got > 0 ? got : 0;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return verror(err, -errno, "%s: %s", out, strerror(errno));
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (n > 0)
		return verror(err, -EIO, "%s", cerr.msg);
	if (WIFSIGNALED(status))
		return verror(err, -EIO, "%s: the CTF writer (libbabeltrace2) crashed (signal %d)", out,
			      WTERMSIG(status));
	return verror(err, -EIO, "%s: the CTF writer (libbabeltrace2) failed", out);
}

/*
 * Before the trace takes its name: its metadata is there and whole (it ends
 * with the last event class's closing brace). sink.ctf.fs reports a failed
 * write while it consumes, but what it does as it is finalized returns no
 * status.
 */
static int check_metadata(const char *trace, const char *out, struct vcpustat_error *err)
{
	char path[PATH_MAX + 16], tail[17] = "";
	size_t n = 0;
	struct stat st;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/metadata", trace) >= (int)sizeof(path))
		return verror(err, -ENAMETOOLONG, "%s: path too long", out);
	f = fopen(path, "r");
	if (f && !fstat(fileno(f), &st) && st.st_size >= 16 && !fseek(f, -16, SEEK_END))
		n = fread(tail, 1, 16, f);
	if (f)
		fclose(f);
	while (n && (tail[n - 1] == '\n' || tail[n - 1] == ' ' || tail[n - 1] == '\t'))
		tail[--n] = 0;
	if (n < 2 || strcmp(tail + n - 2, "};"))
		return verror(err, -EIO,
			      "%s: libbabeltrace2 (sink.ctf.fs) did not write the trace's metadata whole (is the disk "
			      "full?)",
			      out);
	return 0;
}

int timeline_ctf(struct timeline *tl, const char *out, struct vcpustat_error *err)
{
	char target[PATH_MAX], tmp[PATH_MAX], trace[PATH_MAX + 8];
	int e = ctf_target(out, target, sizeof(target), err);

	if (e)
		return e;
	e = outfile_temp_name(target, tmp, sizeof(tmp));
	if (e)
		return verror(err, e, "%s: path too long", out);
	if (!mkdtemp(tmp))
		return verror(err, -errno, "%s: cannot write there: %s", out, strerror(errno));
	/* sink.ctf.fs makes the trace's directory itself: one inside ours, moved to out when whole */
	snprintf(trace, sizeof(trace), "%s/ctf", tmp);
	e = write_in_child(tl, trace, out, err);
	if (!e)
		e = check_metadata(trace, out, err);
	if (!e && (chmod(trace, 0755) || rename(trace, target)))
		e = verror(err, -errno, "%s: %s", out, strerror(errno));
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return e;
}
