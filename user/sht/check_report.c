// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * check_report.c - what `vcpustat check` says of a file and of a repair, as
 * text for people and as JSON (docs/sht-format.md sections 7-8), and the
 * repair in place that keeps the original.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "sht/sht.h"

json_t *sht_check_json(const char *file, const struct sht_check_report *rep)
{
	json_t *o = json_pack("{s:s, s:b, s:b, s:b, s:b, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:I, s:I}",
			      "file", file, "ok", rep->ok, "closed", rep->closed, "recovered", rep->recovered,
			      "repaired", rep->repaired, "node_size", (int)rep->node_size, "file_size",
			      (json_int_t)rep->file_size, "nodes", (json_int_t)rep->nodes, "leaves",
			      (json_int_t)rep->leaves, "cores", (json_int_t)rep->cores, "rebuilt",
			      (json_int_t)rep->rebuilt, "intervals", (json_int_t)rep->nintervals, "start",
			      (json_int_t)rep->start, "end", (json_int_t)rep->end, "horizon", (json_int_t)rep->horizon,
			      "attributes", (int)rep->nattrs, "strings", (int)rep->nstrings, "tail_bytes",
			      (json_int_t)rep->tail_bytes, "good_size", (json_int_t)rep->good_size);

	if (rep->ok)
		json_object_set_new(o, "bad", json_null());
	else
		json_object_set_new(o, "bad", json_pack("{s:I, s:I, s:s}", "node", (json_int_t)rep->bad_node, "offset",
							(json_int_t)rep->bad_offset, "error", rep->problem));
	return o;
}

void sht_check_print(FILE *f, const char *prog, const char *file, const struct sht_check_report *rep)
{
	char s1[32], s2[32];
	uint64_t cores;

	fmt_secs(rep->start, s1, sizeof(s1));
	fmt_secs(rep->end, s2, sizeof(s2));
	fprintf(f, "%s: %s\n", file,
	       !rep->ok ? "BAD" : rep->closed ? (rep->recovered ? "good (repaired)" : "good, closed cleanly")
					      : "good, but not closed cleanly (the writer was killed?)");
	if (!rep->ok && rep->bad_node >= 0)
		fprintf(f, "  first bad node    %lld at offset %llu: %s\n", (long long)rep->bad_node,
		       (unsigned long long)rep->bad_offset, rep->problem);
	else if (!rep->ok)
		fprintf(f, "  problem at offset %llu: %s\n", (unsigned long long)rep->bad_offset, rep->problem);
	if (!rep->node_size)
		return;
	cores = rep->cores - (rep->repaired ? 0 : rep->rebuilt); /* the rebuilt ones are not in the file yet */
	fprintf(f, "  %-17s %llu of %u bytes (%llu lea%s, %llu core%s%s); %llu bytes are good\n",
	       rep->ok ? "blocks" : "good blocks", (unsigned long long)rep->nodes, rep->node_size,
	       (unsigned long long)rep->leaves, rep->leaves == 1 ? "f" : "ves", (unsigned long long)cores,
	       cores == 1 ? "" : "s", rep->nodes > rep->leaves + cores ? ", some of several blocks" : "",
	       (unsigned long long)rep->good_size);
	if (rep->rebuilt && !rep->repaired)
		fprintf(f, "  %-17s %llu core%s that the writer never sealed, from the journals of the leaves\n", "rebuilt",
		       (unsigned long long)rep->rebuilt, rep->rebuilt == 1 ? "" : "s");
	fprintf(f, "  %-17s %llu\n", "intervals", (unsigned long long)rep->nintervals);
	fprintf(f, "  %-17s %s .. %s s\n", "time range", s1, s2);
	fprintf(f, "  %-17s %u (and %u strings)\n", "attributes", rep->nattrs, rep->nstrings);
	if (rep->recovered)
		fprintf(f, "  %-17s the history holds the intervals that ended before %s s (the end of the\n"
		       "  %-17s last sealed leaf)\n",
		       "history", s2, "");
	if (rep->tail_bytes)
		fprintf(f, "  %-17s %llu bytes of a node that was being written\n", "ignored",
		       (unsigned long long)rep->tail_bytes);
	if (!rep->ok || !rep->closed)
		fprintf(f, "  `%s check --repair %s -o FIXED.sht` %s\n", prog, file,
		       rep->ok ? "finalizes it (footer) so that it opens quickly"
			       : "keeps every intact node; only the damaged ones are lost");
}

json_t *sht_repair_json(const char *file, const struct sht_check_report *before, const char *out,
			const struct sht_check_report *after, const struct sht_repair_info *info, const char *orig)
{
	json_t *o = json_pack("{s:o, s:o, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:i, s:i}", "before",
			      sht_check_json(file, before), "after", sht_check_json(out, after), "output", out,
			      "salvaged", info->salvaged, "damaged_nodes", (json_int_t)info->damaged_nodes,
			      "intervals_announced", (json_int_t)info->announced, "intervals_kept",
			      (json_int_t)(info->salvaged ? info->intervals_kept : after->nintervals),
			      "intervals_dropped", (json_int_t)info->dropped, "from_journals",
			      (json_int_t)info->from_journals, "lost_attributes", (int)info->lost_attributes,
			      "lost_strings", (int)info->lost_strings);

	if (o && orig)
		json_object_set_new(o, "original", json_string(orig));
	return o;
}

void sht_repair_print(FILE *f, const char *prog, const char *file, const struct sht_check_report *before,
		      const char *out, const struct sht_check_report *after, const struct sht_repair_info *info,
		      const char *orig)
{
	fprintf(f, "before the repair:\n");
	sht_check_print(f, prog, file, before);
	if (info->salvaged) {
		fprintf(f, "after the repair (%s; written again from the intact nodes, %u damaged node%s dropped):\n",
			out, info->damaged_nodes, info->damaged_nodes == 1 ? "" : "s");
		fprintf(f, "  intervals: %llu before (%s), %llu after",
			(unsigned long long)(info->announced ? info->announced : info->intervals_found),
			info->announced ? "the footer's count" : "in the intact nodes",
			(unsigned long long)info->intervals_kept);
		if (info->from_journals)
			fprintf(f, " (%llu from the leaves' journals)", (unsigned long long)info->from_journals);
		fprintf(f, "\n");
		if (info->lost_attributes || info->lost_strings)
			fprintf(f, "  %u attribute%s and %u string%s were defined only in a damaged node: named "
				"lost-attribute-N, <lost string N>\n",
				info->lost_attributes, info->lost_attributes == 1 ? "" : "s", info->lost_strings,
				info->lost_strings == 1 ? "" : "s");
	} else {
		fprintf(f, "after the repair (%s; kept %llu nodes, appended %llu rebuilt cores and a footer):\n", out,
			(unsigned long long)(after->nodes - after->rebuilt), (unsigned long long)after->rebuilt);
		fprintf(f, "  intervals: %llu before, %llu after\n", (unsigned long long)before->nintervals,
			(unsigned long long)after->nintervals);
	}
	sht_check_print(f, prog, out, after);
	if (orig)
		fprintf(f, "  the original is kept as %s\n", orig);
}

int sht_repair_keeping(const char *file, char *orig, size_t len, struct sht_check_report *after,
		       struct sht_repair_info *info, struct vcpustat_error *err)
{
	int e;

	if (snprintf(orig, len, "%s.orig", file) >= (int)len)
		return verror(err, -ENAMETOOLONG, "%s: path too long", file);
	/* the file itself, also when FILE is a symlink (the repair replaces the file it names) */
	if (linkat(AT_FDCWD, file, AT_FDCWD, orig, AT_SYMLINK_FOLLOW))
		return verror(err, -errno, "%s: cannot keep the original as %s: %s%s", file, orig, strerror(errno),
			      errno == EEXIST ? " (move it away first)" : "");
	e = sht_repair_to(file, file, after, info, err);
	if (e)
		unlink(orig); /* the original was not replaced: the link is the same file */
	return e;
}
