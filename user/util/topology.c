// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * topology.c - the host's CPU topology (NUMA nodes, last-level caches, SMT
 * siblings): read from sysfs when a recording starts, kept in its metadata
 * (docs/sht-attributes.md, "Metadata": topology.nodes, topology.llcs,
 * topology.smt), read back by `vcpustat report --placement`.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

void topology_free(struct cpu_topology *t)
{
	free(t->node);
	free(t->llc);
	free(t->core);
	memset(t, 0, sizeof(*t));
}

static int topology_alloc(struct cpu_topology *t, unsigned int nr_cpus)
{
	memset(t, 0, sizeof(*t));
	t->nr_cpus = nr_cpus;
	t->node = malloc(nr_cpus * sizeof(int));
	t->llc = malloc(nr_cpus * sizeof(int));
	t->core = malloc(nr_cpus * sizeof(int));
	if (!t->node || !t->llc || !t->core) {
		topology_free(t);
		return -ENOMEM;
	}
	for (unsigned int c = 0; c < nr_cpus; c++)
		t->node[c] = t->llc[c] = t->core[c] = -1;
	return 0;
}

/*
 * Parse a cpulist ("0-3,8,10-11") of s[0..len), calling add(cpu) for each.
 * Returns 0, or the offset (1-based) of the first bad character.
 */
static size_t cpulist_each(const char *s, size_t len, void (*add)(void *, unsigned int), void *ctx,
			   unsigned int max_cpu)
{
	size_t i = 0;

	while (i < len) {
		unsigned long a, b;
		size_t at = i;
		char *end;

		if (s[i] < '0' || s[i] > '9')
			return i + 1;
		a = strtoul(s + i, &end, 10);
		i = (size_t)(end - s);
		b = a;
		if (i < len && s[i] == '-') {
			i++;
			if (i >= len || s[i] < '0' || s[i] > '9')
				return i + 1;
			b = strtoul(s + i, &end, 10);
			i = (size_t)(end - s);
		}
		if (i > len || b < a || b > max_cpu)
			return at + 1;
		for (unsigned long c = a; c <= b; c++)
			add(ctx, (unsigned int)c);
		if (i < len) {
			if (s[i] != ',')
				return i + 1;
			if (++i == len)
				return i + 1;
		}
	}
	return 0;
}

static void count_max(void *ctx, unsigned int cpu)
{
	unsigned int *max = ctx;

	if (cpu + 1 > *max)
		*max = cpu + 1;
}

struct assign {
	int *ids, id, conflict;
};

static void assign_id(void *ctx, unsigned int cpu)
{
	struct assign *a = ctx;

	if (a->ids[cpu] != -1 && a->ids[cpu] != a->id)
		a->conflict = 1;
	a->ids[cpu] = a->id;
}

/* ---- from sysfs ---- */

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}


/* The highest-level cache of cpu c: its shared_cpu_list file's path, or "" */
static void llc_list_path(const char *root, unsigned int c, char *out, size_t len)
{
	char path[PATH_MAX], buf[64];
	long best = -1;

	out[0] = 0;
	for (int i = 0; i < 16; i++) {
		long level;

		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%u/cache/index%d/level", root, c, i);
		if (read_line(path, buf, sizeof(buf)))
			continue;
		level = strtol(buf, NULL, 10);
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%u/cache/index%d/type", root, c, i);
		if (read_line(path, buf, sizeof(buf)) || !strcmp(buf, "Instruction"))
			continue;
		if (level > best) {
			best = level;
			snprintf(out, len, "%s/devices/system/cpu/cpu%u/cache/index%d/shared_cpu_list", root, c, i);
		}
	}
}

int topology_read_sysfs(struct cpu_topology *t, const char *root, struct vcpustat_error *err)
{
	char path[PATH_MAX], list[8192];
	unsigned int nr = 0;
	struct dirent *de;
	DIR *d;
	int e;

	if (!root)
		root = "/sys";
	snprintf(path, sizeof(path), "%s/devices/system/cpu/possible", root);
	if ((e = read_line(path, list, sizeof(list))) || cpulist_each(list, strlen(list), count_max, &nr, 65535) || !nr)
		return verror(err, e ? e : -EINVAL, "%s: %s", path, e ? strerror(-e) : "not a CPU list");
	if (topology_alloc(t, nr))
		return verror(err, -ENOMEM, "out of memory");
	/* NUMA nodes: node<N>/cpulist, N the node's own id */
	snprintf(path, sizeof(path), "%s/devices/system/node", root);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		struct assign a = { t->node, 0, 0 };
		char *end;

		if (strncmp(de->d_name, "node", 4) || de->d_name[4] < '0' || de->d_name[4] > '9')
			continue;
		a.id = (int)strtol(de->d_name + 4, &end, 10);
		if (*end)
			continue;
		snprintf(path, sizeof(path), "%s/devices/system/node/%s/cpulist", root, de->d_name);
		if (!read_line(path, list, sizeof(list)))
			cpulist_each(list, strlen(list), assign_id, &a, nr - 1);
	}
	if (d)
		closedir(d);
	/* last-level caches, numbered in order of their first CPU */
	for (unsigned int c = 0, next = 0; c < nr; c++) {
		struct assign a = { t->llc, (int)next, 0 };

		if (t->llc[c] != -1)
			continue;
		llc_list_path(root, c, path, sizeof(path));
		if (!path[0] || read_line(path, list, sizeof(list)))
			continue;
		if (!cpulist_each(list, strlen(list), assign_id, &a, nr - 1) && t->llc[c] == (int)next)
			next++;
	}
	/* cores: the CPUs sharing one (SMT siblings), numbered in order of their first CPU */
	for (unsigned int c = 0, next = 0; c < nr; c++) {
		struct assign a = { t->core, (int)next, 0 };

		if (t->core[c] != -1)
			continue;
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%u/topology/thread_siblings_list", root, c);
		if (read_line(path, list, sizeof(list)))
			continue;
		if (!cpulist_each(list, strlen(list), assign_id, &a, nr - 1) && t->core[c] == (int)next)
			next++;
	}
	return 0;
}

/* ---- to and from a recording's metadata ---- */

/* Append the cpulist of the CPUs with ids[cpu] == id to buf. */
static void cpulist_of(const struct cpu_topology *t, const int *ids, int id, char *buf, size_t len, size_t *pos)
{
	bool first = true;

	for (unsigned int c = 0; c < t->nr_cpus; c++) {
		unsigned int e = c;

		if (ids[c] != id)
			continue;
		while (e + 1 < t->nr_cpus && ids[e + 1] == id)
			e++;
		*pos += (size_t)snprintf(buf + (*pos < len ? *pos : len), *pos < len ? len - *pos : 0,
					 e > c ? "%s%u-%u" : "%s%u", first ? "" : ",", c, e);
		first = false;
		c = e;
	}
}

static int max_id(const struct cpu_topology *t, const int *ids)
{
	int m = -1;

	for (unsigned int c = 0; c < t->nr_cpus; c++)
		if (ids[c] > m)
			m = ids[c];
	return m;
}

static int cpus_with(const struct cpu_topology *t, const int *ids, int id)
{
	int n = 0;

	for (unsigned int c = 0; c < t->nr_cpus; c++)
		n += ids[c] == id;
	return n;
}

int topology_meta(const struct cpu_topology *t, enum topology_key k, char *buf, size_t len)
{
	const int *ids = k == TOPOLOGY_NODES ? t->node : k == TOPOLOGY_LLCS ? t->llc : t->core;
	int max = max_id(t, ids), groups = 0;
	size_t pos = 0;

	buf[0] = 0;
	if (max < 0)
		return -ENOENT; /* not known */
	for (int id = 0; id <= max; id++) {
		if (!cpus_with(t, ids, id) || (k == TOPOLOGY_SMT && cpus_with(t, ids, id) < 2))
			continue;
		if (groups++)
			pos += (size_t)snprintf(buf + (pos < len ? pos : len), pos < len ? len - pos : 0, ";");
		if (k == TOPOLOGY_NODES)
			pos += (size_t)snprintf(buf + (pos < len ? pos : len), pos < len ? len - pos : 0, "%d:", id);
		cpulist_of(t, ids, id, buf, len, &pos);
	}
	if (k == TOPOLOGY_SMT && !groups)
		pos = (size_t)snprintf(buf, len, "none");
	if (pos >= len) {
		buf[0] = 0;
		return -E2BIG;
	}
	return 0;
}

const char *const topology_meta_key[] = { "topology.nodes", "topology.llcs", "topology.smt" };

/* One metadata value: groups separated by ';', each "ID:CPULIST" (nodes) or "CPULIST". */
static int parse_groups(struct cpu_topology *t, int *ids, const char *what, const char *v, bool with_id,
			struct vcpustat_error *err)
{
	const char *p = v;
	int next = 0;

	if (!strcmp(v, "none") && ids == t->core)
		return 0;
	while (*p) {
		const char *end = strchr(p, ';');
		size_t glen = end ? (size_t)(end - p) : strlen(p), bad, gstart = (size_t)(p - v);
		struct assign a = { ids, next, 0 };

		if (with_id) {
			char *colon;
			long id = strtol(p, &colon, 10);

			if (colon == p || *colon != ':' || id < 0 || id > 65535 || (size_t)(colon - p) >= glen)
				return verror(err, -EINVAL, "metadata %s: offset %zu: expected NODE:CPULIST", what,
					      gstart);
			a.id = (int)id;
			glen -= (size_t)(colon + 1 - p);
			p = colon + 1;
		}
		bad = glen ? cpulist_each(p, glen, assign_id, &a, t->nr_cpus - 1) : 1;
		if (bad)
			return verror(err, -EINVAL, "metadata %s: offset %zu: not a CPU list (CPUs 0-%u)", what,
				      (size_t)(p - v) + bad - 1, t->nr_cpus - 1);
		if (a.conflict)
			return verror(err, -EINVAL, "metadata %s: offset %zu: a CPU in two groups", what, gstart);
		next++;
		p += glen;
		if (*p == ';' && !*++p)
			return verror(err, -EINVAL, "metadata %s: offset %zu: empty group", what, (size_t)(p - v));
	}
	return 0;
}

static void count_cpus(void *ctx, unsigned int cpu)
{
	count_max(ctx, cpu);
}

/* The number of CPUs a metadata value names (its highest + 1), 0 if it does not parse. */
static unsigned int cpus_named(const char *v)
{
	unsigned int max = 0;

	for (const char *p = v; *p;) {
		const char *end = strchr(p, ';'), *colon;
		size_t glen = end ? (size_t)(end - p) : strlen(p);

		colon = memchr(p, ':', glen);
		if (colon) {
			glen -= (size_t)(colon + 1 - p);
			p = colon + 1;
		}
		cpulist_each(p, glen, count_cpus, &max, 65535);
		p += glen;
		if (*p == ';')
			p++;
	}
	return max;
}

int topology_from_meta(struct cpu_topology *t, const char *const value[TOPOLOGY_NR_KEYS], struct vcpustat_error *err)
{
	unsigned int nr = 0;
	int e = 0;

	for (int k = 0; k < TOPOLOGY_NR_KEYS; k++) {
		unsigned int n = value[k] ? cpus_named(value[k]) : 0;

		if (n > nr)
			nr = n;
	}
	if (!nr)
		return -ENOENT;
	if (topology_alloc(t, nr))
		return verror(err, -ENOMEM, "out of memory");
	if (value[TOPOLOGY_NODES])
		e = parse_groups(t, t->node, topology_meta_key[0], value[TOPOLOGY_NODES], true, err);
	if (!e && value[TOPOLOGY_LLCS])
		e = parse_groups(t, t->llc, topology_meta_key[1], value[TOPOLOGY_LLCS], false, err);
	if (!e && value[TOPOLOGY_SMT])
		e = parse_groups(t, t->core, topology_meta_key[2], value[TOPOLOGY_SMT], false, err);
	if (e) {
		topology_free(t);
		return e;
	}
	/* a CPU alone on its core (not listed in topology.smt) is a core of its own */
	if (value[TOPOLOGY_SMT]) {
		int next = max_id(t, t->core) + 1;

		for (unsigned int c = 0; c < nr; c++)
			if (t->core[c] == -1)
				t->core[c] = next++;
	}
	return 0;
}

int topology_copy(struct cpu_topology *dst, const struct cpu_topology *src)
{
	if (topology_alloc(dst, src->nr_cpus))
		return -ENOMEM;
	memcpy(dst->node, src->node, src->nr_cpus * sizeof(int));
	memcpy(dst->llc, src->llc, src->nr_cpus * sizeof(int));
	memcpy(dst->core, src->core, src->nr_cpus * sizeof(int));
	return 0;
}
