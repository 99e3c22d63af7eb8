// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ctf.c - LTTng kernel traces (CTF 1.8) through libbabeltrace2: a graph of
 * source.ctf.fs (the trace) -> filter.utils.muxer (the streams of every CPU
 * in time order) -> a simple sink whose consume function turns each event
 * message into a struct trace_event, pulled one batch at a time.
 *
 * LTTng's names (docs/import.md): sched_switch (prev_comm, prev_tid,
 * prev_state, next_comm, next_tid), sched_wakeup(_new) (comm, tid,
 * target_cpu), sched_migrate_task (comm, tid, orig_cpu, dest_cpu),
 * sched_process_exit (comm, tid), kvm_x86_entry (vcpu_id), kvm_x86_exit
 * (exit_reason, isa, vcpu_id), kvm_userspace_exit (reason, errno), kvm_fpu
 * (load), kvm_x86_hypercall (nr, a0, a1), lttng_logger (msg: sync markers);
 * the current thread from the stream event context (tid, pid, procname:
 * `lttng add-context -k -t tid -t pid -t procname`), the CPU from the packet
 * context (cpu_id).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <babeltrace2/babeltrace.h>
#include "import/binary_internal.h"
#include "import/ctf_internal.h"
#include "sync/sync.h"

struct ctf_reader {
	char *path;	/* the trace directory */
	struct trace_opts o;
	struct trace_stats *st;
	bt_graph *graph;
	const bt_plugin *ctf, *utils;
	struct trace_batch q; /* events of the last batch */
	uint64_t index;		   /* events read */
	bool ended;
	struct vcpustat_error cerr; /* an error met in the consume function */
};

/* The first cause of libbabeltrace2's current error (and clear it). */
static void bt_reason(char *buf, size_t len)
{
	const bt_error *e = bt_current_thread_take_error();

	snprintf(buf, len, "libbabeltrace2 gave no reason");
	if (!e)
		return;
	if (bt_error_get_cause_count(e))
		snprintf(buf, len, "%s", bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0)));
	bt_error_release(e);
}

/* ---- fields ---- */

static const bt_field *member(const bt_field *s, const char *name)
{
	if (!s || bt_field_get_class_type(s) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return NULL;
	return bt_field_structure_borrow_member_field_by_name_const(s, name);
}

static bool get_int(const bt_field *s, const char *name, int64_t *v)
{
	const bt_field *f = member(s, name);
	bt_field_class_type t;

	if (!f)
		return false;
	t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		*v = (int64_t)bt_field_integer_unsigned_get_value(f);
	else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		*v = bt_field_integer_signed_get_value(f);
	else
		return false;
	return true;
}

static bool get_u32(const bt_field *s, const char *name, __u64 *v)
{
	int64_t x;

	if (!get_int(s, name, &x) || x < 0 || x > UINT32_MAX)
		return false;
	*v = (__u64)x;
	return true;
}

/* A string member, or an array of 8-bit integers (LTTng's comm fields), into buf. */
static bool get_str(const bt_field *s, const char *name, char *buf, size_t len)
{
	const bt_field *f = member(s, name);
	bt_field_class_type t;

	memset(buf, 0, len);
	if (!f)
		return false;
	t = bt_field_get_class_type(f);
	if (t == BT_FIELD_CLASS_TYPE_STRING) {
		snprintf(buf, len, "%s", bt_field_string_get_value(f));
		return true;
	}
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
		uint64_t n = bt_field_array_get_length(f);

		for (uint64_t i = 0; i < n && i + 1 < len; i++) {
			const bt_field *c = bt_field_array_borrow_element_field_by_index_const(f, i);
			int64_t ch = 0;

			if (bt_field_class_type_is(bt_field_get_class_type(c), BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
				ch = (int64_t)bt_field_integer_unsigned_get_value(c);
			else if (bt_field_class_type_is(bt_field_get_class_type(c), BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
				ch = bt_field_integer_signed_get_value(c);
			if (!ch)
				break;
			buf[i] = (char)ch;
		}
		return true;
	}
	return false;
}

/* ---- events ---- */

static enum conv bad(struct ctf_reader *r, struct trace_event *t, const char *name, const char *what)
{
	snprintf(r->cerr.msg, sizeof(r->cerr.msg), "%s: event %llu (%s at %llu ns): %s", r->path,
		 (unsigned long long)t->where, name, (unsigned long long)t->ev.ts, what);
	return CONV_BAD;
}

static bool is(const char *name, const char *a, const char *b)
{
	return !strcmp(name, a) || (b && !strcmp(name, b));
}

static enum conv convert_event(struct ctf_reader *r, const bt_message *msg, struct trace_event *t, const char **namep)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	const bt_field *p = bt_event_borrow_payload_field_const(ev), *ctx = bt_event_borrow_common_context_field_const(ev);
	const bt_packet *pkt = bt_event_borrow_packet_const(ev);
	const bt_field *pctx = pkt ? bt_packet_borrow_context_field_const(pkt) : NULL;
	const bt_clock_snapshot *cs;
	struct vcpustat_event *e = &t->ev;
	int64_t ns, v;
	__u64 u;
	bool have_tid;

	memset(t, 0, sizeof(*t));
	t->where = r->index;
	t->tgid = -1;
	if (!name)
		return CONV_SKIP;
	*namep = name;
	if (!is(name, "sched_switch", NULL) && !is(name, "sched_wakeup", NULL) && !is(name, "sched_wakeup_new", NULL) &&
	    !is(name, "sched_migrate_task", NULL) && !is(name, "sched_process_exit", NULL) &&
	    !is(name, "kvm_x86_entry", "kvm_entry") && !is(name, "kvm_x86_exit", "kvm_exit") &&
	    !is(name, "kvm_userspace_exit", NULL) && !is(name, "kvm_fpu", NULL) &&
	    !is(name, "kvm_x86_hypercall", "kvm_hypercall") && !is(name, "lttng_logger", NULL))
		return CONV_SKIP;
	cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
	if (bt_clock_snapshot_get_ns_from_origin(cs, &ns) != BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK || ns < 0)
		return bad(r, t, name, "its time is out of range");
	e->ts = (uint64_t)ns;
	if (get_u32(pctx, "cpu_id", &u))
		e->cpu = u;
	have_tid = get_u32(ctx, "tid", &u);
	if (have_tid)
		t->pid = (uint32_t)u;
	if (get_int(ctx, "pid", &v) && v >= 0 && v <= UINT32_MAX)
		t->tgid = v;
	get_str(ctx, "procname", t->cur_comm, sizeof(t->cur_comm));

	if (is(name, "sched_switch", NULL)) {
		__u64 prev, next;

		if (!get_u32(p, "prev_tid", &prev) || !get_u32(p, "next_tid", &next) || !get_int(p, "prev_state", &v))
			return bad(r, t, name, "no prev_tid, next_tid or prev_state");
		e->type = VCPUSTAT_EV_SWITCH;
		e->tid = prev;
		e->tid2 = next;
		if (!binary_prev_state(v, &e->arg0, &e->arg1))
			return bad(r, t, name, "prev_state is not the task-state report of Linux 4.14 or later");
		get_str(p, "prev_comm", e->comm, sizeof(e->comm));
		get_str(p, "next_comm", t->next_comm, sizeof(t->next_comm));
		if (!have_tid || t->pid != prev) { /* the current thread is prev; its process: unknown */
			t->pid = (uint32_t)prev;
			t->tgid = -1;
			memcpy(t->cur_comm, e->comm, sizeof(t->cur_comm));
		}
		return CONV_EVENT;
	}
	if (is(name, "sched_wakeup", "sched_wakeup_new")) {
		if (!get_u32(p, "tid", &e->tid) || !get_u32(p, "target_cpu", &e->arg0))
			return bad(r, t, name, "no tid or target_cpu");
		e->type = strcmp(name, "sched_wakeup") ? VCPUSTAT_EV_WAKEUP_NEW : VCPUSTAT_EV_WAKEUP;
		get_str(p, "comm", e->comm, sizeof(e->comm));
		return CONV_EVENT;
	}
	if (is(name, "sched_migrate_task", NULL)) {
		if (!get_u32(p, "tid", &e->tid) || !get_u32(p, "dest_cpu", &e->arg0) || !get_u32(p, "orig_cpu", &e->arg1))
			return bad(r, t, name, "no tid, orig_cpu or dest_cpu");
		e->type = VCPUSTAT_EV_MIGRATE;
		get_str(p, "comm", e->comm, sizeof(e->comm));
		return CONV_EVENT;
	}
	if (is(name, "sched_process_exit", NULL)) {
		if (!get_u32(p, "tid", &e->tid))
			return bad(r, t, name, "no tid");
		e->type = VCPUSTAT_EV_PROCESS_EXIT;
		get_str(p, "comm", e->comm, sizeof(e->comm));
		return CONV_EVENT;
	}
	if (is(name, "lttng_logger", NULL)) {
		char msgbuf[256];

		get_str(p, "msg", msgbuf, sizeof(msgbuf));
		t->marker = vcpustat_sync_parse_marker(msgbuf, &t->key);
		return t->marker ? CONV_EVENT : CONV_SKIP;
	}
	/* KVM events are about the current thread */
	if (!have_tid)
		return bad(r, t, name,
			   "no tid context: record the trace with `lttng add-context -k -t tid -t pid -t procname`");
	e->tid = t->pid;
	memcpy(e->comm, t->cur_comm, sizeof(e->comm));
	if (is(name, "kvm_x86_entry", "kvm_entry")) {
		if (!get_u32(p, "vcpu_id", &e->arg0))
			return bad(r, t, name, "no vcpu_id");
		e->type = VCPUSTAT_EV_KVM_ENTRY;
		return CONV_EVENT;
	}
	if (is(name, "kvm_x86_exit", "kvm_exit")) {
		if (!get_int(p, "exit_reason", &v))
			return bad(r, t, name, "no exit_reason");
		e->type = VCPUSTAT_EV_KVM_EXIT;
		e->arg0 = (uint32_t)v;
		e->arg1 = get_u32(p, "isa", &u) ? u : (r->o.isa ? r->o.isa : KVM_ISA_VMX);
		e->arg2 = get_u32(p, "vcpu_id", &u) ? u : 0xffffffffu;
		return CONV_EVENT;
	}
	if (is(name, "kvm_userspace_exit", NULL)) {
		if (!get_int(p, "reason", &v))
			return bad(r, t, name, "no reason");
		e->type = VCPUSTAT_EV_USERSPACE_EXIT;
		e->arg0 = (uint32_t)v;
		e->arg1 = get_int(p, "errno", &v) ? (uint32_t)v : 0;
		return CONV_EVENT;
	}
	if (is(name, "kvm_fpu", NULL)) {
		if (!get_int(p, "load", &v))
			return bad(r, t, name, "no load");
		if (!v)
			return CONV_SKIP;
		e->type = VCPUSTAT_EV_KVM_RUN;
		return CONV_EVENT;
	}
	/* kvm_x86_hypercall */
	{
		int64_t a0;

		if (!get_int(p, "nr", &v) || !get_int(p, "a0", &a0))
			return bad(r, t, name, "no nr or a0");
		if ((uint64_t)v != VCPUSTAT_SYNC_HYPERCALL_NR)
			return CONV_SKIP;
		e->arg1 = (uint64_t)a0;
	}
	e->type = VCPUSTAT_EV_HYPERCALL;
	e->arg0 = (uint64_t)v;
	e->arg2 = get_int(p, "a1", &v) ? (uint64_t)v : 0;
	return CONV_EVENT;
}

/* The message as an event, its CPUs checked: one beyond --cpus (or 65535) is malformed, never another CPU. */
static enum conv convert(struct ctf_reader *r, const bt_message *msg, struct trace_event *t)
{
	const char *name = "?";
	enum conv c = convert_event(r, msg, t, &name);
	char why[160];

	if (c == CONV_EVENT && !trace_cpus_ok(&r->o, &t->ev, why, sizeof(why)))
		return bad(r, t, name, why);
	return c;
}

/* ---- the graph ---- */

static bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator *it, void *data)
{
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator *it, void *data)
{
	struct ctf_reader *r = data;
	bt_message_array_const msgs;
	uint64_t count = 0;
	bt_graph_simple_sink_component_consume_func_status ret = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < count; i++) {
		const bt_message *m = msgs[i];
		struct trace_event t;
		uint64_t lost;

		if (ret == BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK) {
			switch (bt_message_get_type(m)) {
			case BT_MESSAGE_TYPE_EVENT:
				r->index++;
				r->st->lines++;
				switch (convert(r, m, &t)) {
				case CONV_EVENT:
					if (trace_batch_push(&r->q, &t))
						ret = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
					break;
				case CONV_SKIP:
					r->st->skipped++;
					break;
				case CONV_BAD:
					if (!r->o.lenient) {
						r->cerr.code = -EINVAL;
						ret = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
					} else {
						r->st->malformed++;
						if (r->st->nmessages < TRACE_KEEP_MESSAGES)
							snprintf(r->st->messages[r->st->nmessages++], sizeof(r->st->messages[0]),
								 "%.255s", r->cerr.msg);
					}
					break;
				}
				break;
			case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
				r->st->lost_lines++;
				if (bt_message_discarded_events_get_count(m, &lost) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
					r->st->lost += lost;
				break;
			default:
				break;
			}
		}
		bt_message_put_ref(m);
	}
	return ret;
}

static void graph_free(struct ctf_reader *r)
{
	bt_graph_put_ref(r->graph);
	r->graph = NULL;
	r->q.n = r->q.pos = 0;
	r->ended = false;
	r->index = 0;
}

static int graph_build(struct ctf_reader *r, struct vcpustat_error *err)
{
	const bt_component_class_source *fs;
	const bt_component_class_filter *mux_cls;
	const bt_component_source *src = NULL;
	const bt_component_filter *mux = NULL;
	const bt_component_sink *sink = NULL;
	bt_value *params = NULL, *inputs = NULL;
	char why[400];
	uint64_t nports;

	r->graph = bt_graph_create(0);
	params = bt_value_map_create();
	inputs = bt_value_array_create();
	if (!r->graph || !params || !inputs || bt_value_array_append_string_element(inputs, r->path) ||
	    bt_value_map_insert_entry(params, "inputs", inputs)) {
		bt_value_put_ref(params);
		bt_value_put_ref(inputs);
		return verror(err, -ENOMEM, "out of memory");
	}
	fs = bt_plugin_borrow_source_component_class_by_name_const(r->ctf, "fs");
	mux_cls = bt_plugin_borrow_filter_component_class_by_name_const(r->utils, "muxer");
	if (!fs || !mux_cls) {
		bt_value_put_ref(params);
		bt_value_put_ref(inputs);
		return verror(err, -ENOTSUP, "%s: libbabeltrace2 has no source.ctf.fs or filter.utils.muxer", r->path);
	}
	if (bt_graph_add_source_component(r->graph, fs, "trace", params, BT_LOGGING_LEVEL_NONE, &src)) {
		bt_reason(why, sizeof(why));
		bt_value_put_ref(params);
		bt_value_put_ref(inputs);
		return verror(err, -EINVAL, "%s: not a CTF trace libbabeltrace2 can read: %s", r->path, why);
	}
	bt_value_put_ref(params);
	bt_value_put_ref(inputs);
	if (bt_graph_add_filter_component(r->graph, mux_cls, "muxer", NULL, BT_LOGGING_LEVEL_NONE, &mux) ||
	    bt_graph_add_simple_sink_component(r->graph, "vcpustat", sink_init, sink_consume, NULL, r, &sink)) {
		bt_reason(why, sizeof(why));
		return verror(err, -EINVAL, "%s: libbabeltrace2: %s", r->path, why);
	}
	nports = bt_component_source_get_output_port_count(src);
	for (uint64_t i = 0; i < nports; i++) {
		/* the muxer adds an input port each time one is connected */
		const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(
			mux, bt_component_filter_get_input_port_count(mux) - 1);

		if (bt_graph_connect_ports(r->graph, bt_component_source_borrow_output_port_by_index_const(src, i), in,
					   NULL)) {
			bt_reason(why, sizeof(why));
			return verror(err, -EINVAL, "%s: libbabeltrace2: %s", r->path, why);
		}
	}
	if (bt_graph_connect_ports(r->graph, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0), NULL)) {
		bt_reason(why, sizeof(why));
		return verror(err, -EINVAL, "%s: libbabeltrace2: %s", r->path, why);
	}
	return 0;
}

int ctf_open(struct ctf_reader **rp, const char *path, const struct trace_opts *opts, struct trace_stats *st,
	     struct vcpustat_error *err)
{
	struct ctf_reader *r = calloc(1, sizeof(*r));
	char *copy;
	int e;

	*rp = NULL;
	if (!r)
		return verror(err, -ENOMEM, "out of memory");
	r->o = *opts;
	r->st = st;
	/* the trace is the directory of a metadata file */
	copy = strdup(path);
	if (!copy) {
		free(r);
		return verror(err, -ENOMEM, "out of memory");
	}
	{
		const char *base = strrchr(path, '/');

		if (!strcmp(base ? base + 1 : path, "metadata") || !strncmp(base ? base + 1 : path, "metadata", 8))
			r->path = strdup(dirname(copy));
		else
			r->path = strdup(path);
	}
	free(copy);
	if (!r->path) {
		free(r);
		return verror(err, -ENOMEM, "out of memory");
	}
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &r->ctf) != BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &r->utils) != BT_PLUGIN_FIND_STATUS_OK) {
		bt_error_release(bt_current_thread_take_error());
		ctf_close(r);
		return verror(err, -ENOTSUP, "%s: the libbabeltrace2 ctf and utils plugins are not installed "
					     "(Debian: libbabeltrace2-0)",
			      path);
	}
	e = graph_build(r, err);
	if (e) {
		ctf_close(r);
		return e;
	}
	*rp = r;
	return 0;
}

int ctf_next(struct ctf_reader *r, struct trace_event *ev, struct vcpustat_error *err)
{
	while (r->q.pos == r->q.n) {
		bt_graph_run_once_status s;

		if (r->ended)
			return 0;
		r->q.n = r->q.pos = 0;
		r->cerr.code = 0;
		s = bt_graph_run_once(r->graph);
		if (s == BT_GRAPH_RUN_ONCE_STATUS_END) {
			r->ended = true;
		} else if (s == BT_GRAPH_RUN_ONCE_STATUS_AGAIN || s == BT_GRAPH_RUN_ONCE_STATUS_OK) {
			continue;
		} else if (r->cerr.code) {
			bt_error_release(bt_current_thread_take_error());
			return verror(err, r->cerr.code, "%s (--lenient skips malformed events)", r->cerr.msg);
		} else {
			char why[400];

			bt_reason(why, sizeof(why));
			return verror(err, s == BT_GRAPH_RUN_ONCE_STATUS_MEMORY_ERROR ? -ENOMEM : -EIO,
				      "%s: cannot read the CTF trace after event %llu: %s", r->path,
				      (unsigned long long)r->index, why);
		}
	}
	*ev = r->q.ev[r->q.pos++];
	return 1;
}

int ctf_rewind(struct ctf_reader *r, struct vcpustat_error *err)
{
	graph_free(r);
	return graph_build(r, err);
}

void ctf_close(struct ctf_reader *r)
{
	if (!r)
		return;
	graph_free(r);
	bt_plugin_put_ref(r->ctf);
	bt_plugin_put_ref(r->utils);
	free(r->q.ev);
	free(r->path);
	free(r);
}
