/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sht.h - the State History Tree file: a disk-based store of attribute
 * intervals, built in one streaming pass, readable after a crash up to its
 * last sealed node. The format is documented in docs/sht-format.md.
 *
 * Writer: sht_writer_create, sht_writer_attr (path -> id), sht_writer_set_*
 * (the attribute holds a value from t on; the previous interval is written),
 * sht_writer_close (every open interval ends; footer).
 *
 * Reader: sht_open, sht_info, attributes (lookup, path, children), stabbing
 * (sht_query_at), range (sht_query_range), and the checker (sht_check,
 * sht_repair).
 *
 * Times are u64 nanoseconds since the start of the trace. Intervals are
 * half-open [start, end). Functions return 0 or a negative errno; those that
 * take a struct vcpustat_error fill it with a sentence naming the file and
 * the offset of the problem.
 */
#ifndef VCPUSTAT_SHT_H
#define VCPUSTAT_SHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "util/util.h"

#define SHT_FORMAT_VERSION 1
#define SHT_NO_ATTR UINT32_MAX /* "none" for ids; also the parent of top-level attributes */
#define SHT_MAX_PATH 4095
#define SHT_MAX_NAME 255
#define SHT_MAX_STRING 1024

enum sht_type {
	SHT_NULL = 0,
	SHT_INT = 1,
	SHT_STR = 2,
};

struct sht_value {
	enum sht_type type;
	int64_t i;     /* SHT_INT */
	const char *s; /* SHT_STR: owned by the reader, valid until sht_close */
};

struct sht_interval {
	uint32_t attr;
	uint64_t start, end; /* [start, end) */
	struct sht_value value;
};

struct sht_meta {
	const char *key, *value;
};

/* ---- writer (one thread at a time) ---- */

struct sht_writer;

struct sht_writer_opts {
	uint32_t node_size;	       /* power of two, 4 KiB .. 1 MiB; 0 = 16 KiB */
	uint32_t max_children;	       /* 2 .. 1024; 0 = 32 */
	uint64_t tree_start;	       /* usually 0 */
	uint64_t mono_start_ns;	       /* CLOCK_MONOTONIC at t = 0 (0 if unknown) */
	uint64_t real_start_ns;	       /* CLOCK_REALTIME at t = 0, read with it (0 if unknown) */
	const struct sht_meta *meta;   /* free-form key/values (host, kernel, tool, command) */
	size_t nmeta;
	bool no_sync;		       /* skip fdatasync at close (tests, benchmarks) */
	/*
	 * The file is made under a temporary name next to path and renamed to
	 * path once its header is written: path never names a file without a
	 * whole header (a header that did not fit on the disk leaves nothing).
	 */
	bool whole_header;
	/*
	 * The file appears whole, or not at all (import, replay, repair): made
	 * under a temporary name next to path and renamed over it by a
	 * successful sht_writer_close(); sht_writer_abandon() or a failure
	 * removes it and leaves path as it was.
	 */
	bool atomic;
	/*
	 * A write failed for lack of space (ENOSPC): no_space() may make room
	 * (the recorder deletes an old file of its series) and return 0, and the
	 * same bytes are written again; non-zero, or no no_space: the write
	 * fails. Called as often as the disk stays full, with path.
	 */
	int (*no_space)(void *ctx, const char *path);
	void *ctx;
};

/*
 * Create path and write its header; where and how by util's outfile rule: a
 * regular file (or a new name) is written under its name as it grows
 * (truncated), or replaced through a temporary file (whole_header, atomic);
 * a device, a FIFO or a /proc/self/fd link is written in place: a growing
 * file directly (the target must seek: /dev/null does, a FIFO does not), a
 * whole_header or atomic one copied into it whole at the close.
 */
int sht_writer_create(struct sht_writer **wp, const char *path, const struct sht_writer_opts *opts,
		      struct vcpustat_error *err);
/* The id of the attribute at path ("/vms/vm1/vcpus/0/state"), creating it and its parents. */
int sht_writer_attr(struct sht_writer *w, const char *path, uint32_t *id);
/* The id of child name of parent (SHT_NO_ATTR: top level), creating it. */
int sht_writer_attr_child(struct sht_writer *w, uint32_t parent, const char *name, uint32_t *id);
/* From time t on, attr holds the value. */
int sht_writer_set(struct sht_writer *w, uint32_t attr, uint64_t t, const struct sht_value *v);
int sht_writer_set_int(struct sht_writer *w, uint32_t attr, uint64_t t, int64_t v);
int sht_writer_set_str(struct sht_writer *w, uint32_t attr, uint64_t t, const char *s);
int sht_writer_set_null(struct sht_writer *w, uint32_t attr, uint64_t t);
/* Seal the current leaf now: every interval that ended before the newest time seen is durable. */
int sht_writer_flush(struct sht_writer *w);
/* End every open interval at end_t, write the footer and close the file. Frees w. */
int sht_writer_close(struct sht_writer *w, uint64_t end_t, struct vcpustat_error *err);
/* Free w without finishing the file: it is left as a killed writer would leave it (an atomic one is removed). */
void sht_writer_abandon(struct sht_writer *w);

struct sht_writer_stats {
	uint64_t intervals; /* interval records stored (journal copies not counted) */
	uint64_t journaled; /* journal copies */
	uint64_t clamped;   /* timestamps older than the newest seen, clamped */
	uint64_t nodes;	    /* blocks written (a node is one block, a big core several) */
	uint64_t big_cores; /* cores that took more than one block (many busy attributes) */
	uint64_t bytes;	    /* file size so far */
	uint64_t horizon;   /* end of the last sealed leaf: what a kill now would keep */
	uint32_t height;    /* height of the tree */
	uint32_t attrs, strings;
};
void sht_writer_get_stats(const struct sht_writer *w, struct sht_writer_stats *st);
/* sht_writer_close(), and what it wrote in all in *st (the intervals the close ended among them). */
int sht_writer_finish(struct sht_writer *w, uint64_t end_t, struct sht_writer_stats *st, struct vcpustat_error *err);
/*
 * An upper bound of the file's size if it were closed after one more
 * sht_writer_set() that adds at most defs bytes of definitions (a new
 * attribute: its path's length + 12 bytes per component; a new string: its
 * length + 8), and with flush,
 * a sht_writer_flush(): what a writer that must stay under a size checks
 * before each set.
 */
uint64_t sht_writer_close_size(const struct sht_writer *w, size_t defs, bool flush);
/* The smallest file a writer with these options (NULL: the defaults) closes: one with nothing in it. */
uint64_t sht_writer_min_size(const struct sht_writer_opts *o);
/* The error of the last failed call (I/O errors are sticky). */
const struct vcpustat_error *sht_writer_error(const struct sht_writer *w);

/* ---- reader ---- */

struct sht_reader;

enum sht_node_kind {
	SHT_NODE_LEAF = 1,
	SHT_NODE_CORE = 2,
	SHT_NODE_FOOTER = 3,
};

struct sht_info {
	uint32_t version, node_size, max_children;
	uint64_t tree_start;
	uint64_t mono_start_ns, real_start_ns;
	uint64_t start, end; /* time range of the history */
	uint64_t horizon;    /* recovered: intervals with end >= horizon are not in the history */
	bool closed;	     /* closed cleanly (close record and footer) */
	bool recovered;	     /* unfinished file, or repaired from one: history ends at horizon */
	uint64_t nintervals; /* intervals in the history (before the horizon filter, if recovered) */
	uint64_t nclamped;   /* clamped timestamps (0 if unknown) */
	uint32_t nattrs, nstrings;
	uint64_t nodes;	       /* tree nodes in the file */
	uint64_t rebuilt;      /* cores rebuilt in memory (unfinished file) */
	uint64_t file_size;
	uint64_t tail_bytes;   /* partial block at the end, ignored (unfinished file) */
	struct {
		int64_t index; /* -1 if none */
		uint64_t offset, start, end;
		enum sht_node_kind kind;
		uint32_t height;
	} last_node; /* the last sealed tree node in the file */
};

int sht_open(struct sht_reader **rp, const char *path, struct vcpustat_error *err);
/* Read a file image from memory (name is used in messages); data must outlive the reader. */
int sht_open_mem(struct sht_reader **rp, const char *name, const void *data, size_t len,
		 struct vcpustat_error *err);
void sht_close(struct sht_reader *r);

/*
 * Bytes of decoded cores kept between queries (default 64 MiB; 0 keeps only
 * what a query is using). A reader is not thread-safe: one per thread.
 */
void sht_set_cache(struct sht_reader *r, size_t bytes);

const struct sht_info *sht_get_info(const struct sht_reader *r);
size_t sht_nmeta(const struct sht_reader *r);
const struct sht_meta *sht_meta_at(const struct sht_reader *r, size_t i);
const char *sht_meta_get(const struct sht_reader *r, const char *key);

uint32_t sht_nattrs(const struct sht_reader *r);
int sht_attr_lookup(const struct sht_reader *r, const char *path, uint32_t *id); /* -ENOENT */
const char *sht_attr_name(const struct sht_reader *r, uint32_t id);
const char *sht_attr_path(const struct sht_reader *r, uint32_t id);
uint32_t sht_attr_parent(const struct sht_reader *r, uint32_t id);
/* Children in creation order: first_child(SHT_NO_ATTR) is the first top-level attribute. */
uint32_t sht_attr_first_child(const struct sht_reader *r, uint32_t id);
uint32_t sht_attr_next_sibling(const struct sht_reader *r, uint32_t id);
/* The child of parent (SHT_NO_ATTR: top level) called name, or SHT_NO_ATTR. */
uint32_t sht_attr_child(const struct sht_reader *r, uint32_t parent, const char *name);

/*
 * Stabbing: out[a] (sht_nattrs entries) = the interval of attribute a that
 * contains t, or type SHT_NULL. want (NULL = every attribute) selects a
 * subset: want[a] != 0.
 */
int sht_query_at(struct sht_reader *r, uint64_t t, const uint8_t *want, struct sht_interval *out,
		 struct vcpustat_error *err);
/*
 * The attributes a path pattern selects: P (exact), P then "/" and one star
 * (P's children), or two stars (every attribute below P; "/" and two stars is
 * everything). want (sht_nattrs
 * entries, zeroed) gets want[a] = 1 for each. 0, -ENOENT (no attribute P)
 * or -ENOMEM.
 */
int sht_select(const struct sht_reader *r, const char *p, uint8_t *want);
/*
 * Range: the intervals of attr (or of every a with want[a] != 0, if attr is
 * SHT_NO_ATTR) that meet [t1, t2], sorted by attribute, start, end, order of
 * writing. *out is malloc'ed (free it); *n its length.
 */
int sht_query_range(struct sht_reader *r, uint32_t attr, const uint8_t *want, uint64_t t1, uint64_t t2,
		    struct sht_interval **out, size_t *n, struct vcpustat_error *err);

/* ---- checking and repair ---- */

struct sht_check_report {
	bool ok;	   /* no corruption (an unfinished file can be ok) */
	bool closed;	   /* closed cleanly */
	bool recovered;	   /* history ends at horizon */
	bool repaired;	   /* sht_repair changed the file */
	uint32_t node_size;
	uint64_t file_size;
	uint64_t nodes;	   /* good tree nodes (in the file) */
	uint64_t leaves, cores;
	uint64_t rebuilt;  /* cores rebuilt from the journal (in memory; after sht_repair: appended) */
	uint64_t nintervals;
	uint64_t start, end, horizon;
	uint32_t nattrs, nstrings;
	uint64_t tail_bytes;
	int64_t bad_node;     /* first bad node, -1 if none */
	uint64_t bad_offset;  /* its offset (or where the problem is) */
	uint64_t good_size;   /* bytes before the first bad node */
	char problem[512];    /* the first problem, "" if none */
};

/*
 * Verify every checksum and the structure. Returns 0 when the file is good
 * (closed, or unfinished but consistent), -EBADMSG when it is corrupt (rep
 * says where; err has the message), another negative errno on I/O errors.
 */
int sht_check(const char *path, struct sht_check_report *rep, struct vcpustat_error *err);
int sht_check_mem(const char *name, const void *data, size_t len, struct sht_check_report *rep,
		  struct vcpustat_error *err);
/* What a repair did (sht_repair_to). */
struct sht_repair_info {
	bool salvaged;		  /* damaged nodes: the history was written again from the intact ones */
	uint32_t damaged_nodes;	  /* blocks that failed their checksum or did not decode */
	int64_t first_damaged;	  /* -1 if none */
	uint64_t first_damaged_offset;
	char first_problem[512];
	uint64_t announced;	  /* intervals the footer announced (0: no intact footer) */
	uint64_t intervals_found; /* intervals in the intact nodes' headers */
	uint64_t from_journals;	  /* intervals of damaged or unsealed cores, from the leaves' journals */
	uint64_t dropped;	  /* ending at or after the horizon (the history's end) */
	uint64_t intervals_kept;
	uint32_t lost_attributes, lost_strings; /* defined only in a damaged node: placeholder names */
};

/*
 * Make a cleanly readable copy of in at out (which may be in itself: it is
 * replaced atomically; out gets the new file by a rename, never half of it;
 * a device, a FIFO or a /proc/self/fd link gets it whole, written in place,
 * once it is made and checked: util's outfile rule).
 * An unfinished file keeps every node and gets its rebuilt cores and a
 * footer; a file with damaged nodes is written again from every intact node
 * (a damaged node loses only the intervals it held). A good closed file is
 * not copied (rep: its report, repaired false). rep describes out after the
 * repair; info (may be NULL) what was kept and lost.
 */
int sht_repair_to(const char *in, const char *out, struct sht_check_report *rep, struct sht_repair_info *info,
		  struct vcpustat_error *err);
/* sht_repair_to(path, path, ...): repair in place (atomically, no backup). */
int sht_repair(const char *path, struct sht_check_report *rep, struct vcpustat_error *err);
/*
 * Repair file in place, keeping the original as FILE.orig (a hard link, into
 * orig; of the file a symlink names, which the repair replaces): fails if
 * that name exists. On failure the file is as it was.
 */
int sht_repair_keeping(const char *file, char *orig, size_t len, struct sht_check_report *after,
		       struct sht_repair_info *info, struct vcpustat_error *err);

/*
 * check_report.c: a check's report as `vcpustat check` prints it (prog: the
 * program's name, in the advice it gives) or as a JSON object; a repair's
 * (orig: where the original was kept, or NULL).
 */
void sht_check_print(FILE *f, const char *prog, const char *file, const struct sht_check_report *rep);
json_t *sht_check_json(const char *file, const struct sht_check_report *rep);
void sht_repair_print(FILE *f, const char *prog, const char *file, const struct sht_check_report *before,
		      const char *out, const struct sht_check_report *after, const struct sht_repair_info *info,
		      const char *orig);
json_t *sht_repair_json(const char *file, const struct sht_check_report *before, const char *out,
			const struct sht_check_report *after, const struct sht_repair_info *info, const char *orig);

/* ---- times ---- */

/*
 * Parse a time for the file of r into ns since the trace start:
 *   123456789          integer: nanoseconds
 *   1.5  1.5s  250ms   a duration (a number with a '.' or a unit: ns, us, ms, s, m, h, d;
 *                      parse_duration_ns() in util.h);
 *                      a leading '+' is allowed (+1.5s: what sht_format_time shows)
 *   2026-11-22T14:03:07.123   local wall-clock time (Z suffix: UTC)
 *   14:03:07.123       local wall-clock time on the day the trace started
 * Wall-clock times go through the header's CLOCK_REALTIME mapping; in a file
 * without one (an imported trace) they are an error that says so.
 */
int sht_parse_time(const struct sht_reader *r, const char *s, uint64_t *t, struct vcpustat_error *err);
/* Whether the file maps its times to wall-clock time (real_start_ns; imported traces have none). */
bool sht_has_wall_clock(const struct sht_reader *r);
/*
 * Time t of r for people: "2026-11-22T14:03:07.123456789" (local time, or
 * UTC with a Z) when the file has a wall clock, else seconds since its
 * start, "+1.500000000s". buf: 64 bytes.
 */
void sht_format_time(const struct sht_reader *r, uint64_t t, bool utc, char *buf, size_t len);
/* The same, under its first name (it never shows a 1970 date either). */
void sht_format_wall(const struct sht_reader *r, uint64_t t, bool utc, char *buf, size_t len);
/* Time t of r on the clock of the trace or recording, "4028.534052000" (mono_start_ns + t, in s). */
void sht_format_trace_clock(const struct sht_reader *r, uint64_t t, char *buf, size_t len);

#endif
