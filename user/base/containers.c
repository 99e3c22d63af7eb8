// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Containers: a thread's cgroup and PID namespace from /proc, the cgroup v2
 * mount, and what a cgroup path says about the container, pod or VM manager
 * that made it (docs/sht-attributes.md, "Containers").
 */
#include <ctype.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <jansson.h>
#include "base/base.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

bool cgroup2_root(const char *mounts, char *out, size_t len)
{
	char line[1024];
	bool found = false;
	FILE *f;

	if (!mounts) {
		struct statfs sfs;

		/* the usual places first: a pure v2 host, then systemd's hybrid layout */
		if (!statfs("/sys/fs/cgroup", &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC) {
			snprintf(out, len, "/sys/fs/cgroup");
			return true;
		}
		if (!statfs("/sys/fs/cgroup/unified", &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC) {
			snprintf(out, len, "/sys/fs/cgroup/unified");
			return true;
		}
		mounts = "/proc/self/mounts";
	}
	f = fopen(mounts, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[256], dir[512], type[64];

		if (sscanf(line, "%255s %511s %63s", dev, dir, type) == 3 && !strcmp(type, "cgroup2")) {
			snprintf(out, len, "%s", dir);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/*
 * The cgroup of a /proc/<tid>/cgroup text: the v2 line ("0::/path") unless it
 * is the root while a v1 hierarchy places the thread elsewhere (hybrid and v1
 * hosts, where containers live in the v1 controllers): then that v1 path,
 * "<controllers>:<path>", preferring name=systemd, then cpu, then any.
 */
int cgroup_from_proc(const char *text, char *out, size_t len)
{
	static const char *const prefer[] = { "name=systemd", "cpu", NULL };
	const char *v2 = NULL, *best = NULL;
	size_t v2_len = 0, best_len = 0;
	int best_rank = 99;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *eol = strchr(l, '\n');
		size_t plen;
		int rank = 2;

		if (!eol)
			eol = l + strlen(l);
		if (!c1 || !c2 || c2 > eol || c2[1] != '/')
			continue;
		plen = (size_t)(eol - (c2 + 1));
		if (c1 == l + 1 && l[0] == '0' && c2 == c1 + 1) {
			v2 = c2 + 1, v2_len = plen;
			continue;
		}
		if (plen == 1) /* a v1 root */
			continue;
		{
			char ctl[256], *save = NULL;

			snprintf(ctl, sizeof(ctl), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
			for (char *t = strtok_r(ctl, ",", &save); t; t = strtok_r(NULL, ",", &save))
				for (int p = 0; prefer[p] && p < rank; p++)
					if (!strcmp(t, prefer[p]))
						rank = p;
		}
		if (rank < best_rank) {
			best_rank = rank;
			best = l;
			best_len = (size_t)(eol - l);
		}
	}
	if (v2 && (v2_len > 1 || !best)) {
		snprintf(out, len, "%.*s", (int)v2_len, v2);
		return 0;
	}
	if (best) {
		const char *c1 = strchr(best, ':');

		/* "<controllers>:<path>": drop the hierarchy number */
		snprintf(out, len, "%.*s", (int)(best_len - (size_t)(c1 + 1 - best)), c1 + 1);
		return 0;
	}
	return -1;
}

int names_thread_cgroup(struct names *n, __u32 tid, char *buf, size_t len, uint64_t *pidns)
{
	char path[256], text[4096], link[64];
	ssize_t r;
	int fd;

	*pidns = 0;
	snprintf(path, sizeof(path), "%s/%u/cgroup", n->proc_root, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	text[r] = '\0';
	if (cgroup_from_proc(text, buf, len))
		return -1;
	/* "pid:[4026531836]": the namespace's inode */
	snprintf(path, sizeof(path), "%s/%u/ns/pid", n->proc_root, tid);
	r = readlink(path, link, sizeof(link) - 1);
	if (r > 0) {
		link[r] = '\0';
		if (!strncmp(link, "pid:[", 5))
			*pidns = strtoull(link + 5, NULL, 10);
	}
	return 0;
}

/* Is s[0..n) a container id: at least 12 hex digits? */
static bool hex_id(const char *s, size_t n)
{
	if (n < 12)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* comp[0..n) is "<prefix><hex id><suffix>": the id into c. */
static bool id_between(const char *comp, size_t n, const char *prefix, const char *suffix, struct container_ref *c,
		       const char *runtime)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);

	if (n <= pl + sl || strncmp(comp, prefix, pl) || strncmp(comp + n - sl, suffix, sl) ||
	    !hex_id(comp + pl, n - pl - sl))
		return false;
	snprintf(c->runtime, sizeof(c->runtime), "%s", runtime);
	snprintf(c->id, sizeof(c->id), "%.*s", (int)(n - pl - sl), comp + pl);
	return true;
}

/* systemd escapes '-' in unit names as "\x2d": a copy with it undone. */
static void unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
		if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x' && isxdigit((unsigned char)s[i + 2]) &&
		    isxdigit((unsigned char)s[i + 3])) {
			char hex[3] = { s[i + 2], s[i + 3], 0 };

			out[o++] = (char)strtol(hex, NULL, 16);
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

/* A libvirt machine name "qemu-<n>-<name>" (also "lxc-<n>-<name>"): the name. */
static bool libvirt_machine(const char *m, struct container_ref *c)
{
	const char *dash = strchr(m, '-'), *dash2 = dash ? strchr(dash + 1, '-') : NULL;

	if (!dash || !dash2 || dash2 == dash + 1)
		return false;
	for (const char *p = dash + 1; p < dash2; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	snprintf(c->runtime, sizeof(c->runtime), "libvirt");
	snprintf(c->id, sizeof(c->id), "%s", dash2 + 1);
	return c->id[0] != '\0';
}

/* A Kubernetes pod's cgroup: "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid>.slice" (systemd). */
static bool pod_uid(const char *comp, size_t n, struct container_ref *c)
{
	const char *p = NULL;
	size_t ul;

	if (n > 3 + 32 && !strncmp(comp, "pod", 3))
		p = comp + 3, ul = n - 3;
	else if (n > 6 + 32 && !strncmp(comp, "kubepods-", 9) && !strncmp(comp + n - 6, ".slice", 6)) {
		const char *q = comp;

		for (const char *s = comp; s + 4 <= comp + n; s++)
			if (!strncmp(s, "-pod", 4))
				q = s + 4;
		if (q == comp)
			return false;
		p = q, ul = (size_t)(comp + n - 6 - q);
	} else {
		return false;
	}
	if (ul < 32 || ul >= sizeof(c->pod))
		return false;
	for (size_t i = 0; i < ul; i++) {
		if (!isxdigit((unsigned char)p[i]) && p[i] != '-' && p[i] != '_')
			return false;
		c->pod[i] = p[i] == '_' ? '-' : p[i]; /* the systemd driver writes the uid with '_' */
	}
	c->pod[ul] = '\0';
	return true;
}

bool cgroup_container(const char *path, struct container_ref *c)
{
	const char *p = strchr(path, ':') && path[0] != '/' ? strchr(path, ':') + 1 : path;

	memset(c, 0, sizeof(*c));
	/* walk the components from the root: the pod comes before its containers */
	for (const char *s = p; *s;) {
		size_t n;

		while (*s == '/')
			s++;
		n = strcspn(s, "/");
		if (!n)
			break;
		if (!pod_uid(s, n, c) &&
		    !id_between(s, n, "cri-containerd-", ".scope", c, "containerd") &&
		    !id_between(s, n, "crio-", ".scope", c, "cri-o") &&
		    !id_between(s, n, "docker-", ".scope", c, "docker") &&
		    !id_between(s, n, "libpod-", ".scope", c, "podman")) {
			char comp[256];

			unescape(s, n, comp, sizeof(comp));
			if (c->pod[0] && !c->runtime[0] && hex_id(s, n)) {
				/* cgroupfs driver: /kubepods/<qos>/pod<uid>/<container id> */
				snprintf(c->runtime, sizeof(c->runtime), "container");
				snprintf(c->id, sizeof(c->id), "%.*s", (int)n, s);
			} else if (!c->runtime[0] && hex_id(s, n) && s - p >= 7 && !strncmp(s - 7, "docker/", 7)) {
				snprintf(c->runtime, sizeof(c->runtime), "docker"); /* /docker/<id> */
				snprintf(c->id, sizeof(c->id), "%.*s", (int)n, s);
			} else if (!c->runtime[0] && !strncmp(comp, "machine-", 8) && strlen(comp) > 14 &&
				   !strcmp(comp + strlen(comp) - 6, ".scope")) {
				/* libvirt with systemd: machine.slice/machine-qemu\x2d1\x2dweb.scope */
				comp[strlen(comp) - 6] = '\0';
				libvirt_machine(comp + 8, c);
			} else if (!c->runtime[0] && strlen(comp) > 13 &&
				   !strcmp(comp + strlen(comp) - 13, ".libvirt-qemu")) {
				/* libvirt with cgroupfs: /machine/qemu-1-web.libvirt-qemu */
				comp[strlen(comp) - 13] = '\0';
				libvirt_machine(comp, c);
			} else if (!c->runtime[0] && !strncmp(comp, "lxc.payload.", 12) && comp[12]) {
				snprintf(c->runtime, sizeof(c->runtime), "lxc");
				/* the container's name; one longer than c->id keeps its first 71 bytes */
				snprintf(c->id, sizeof(c->id), "%.*s", (int)sizeof(c->id) - 1, comp + 12);
			}
		}
		s += n;
	}
	if (c->runtime[0] && hex_id(c->id, strlen(c->id)))
		container_names(c);
	return c->runtime[0] || c->pod[0];
}

/* ---- Kubernetes names from the runtime's OCI bundle ---- */

struct names_entry {
	char id[72];
	bool found;
	char pod_name[128], pod_namespace[64], name[64];
};

#define NAMES_CACHE 128

static struct names_entry names_cache[NAMES_CACHE];
static size_t names_next;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first of the annotation keys that config.json's "annotations" has, into out. */
static void annotation(json_t *ann, const char *const keys[2], char *out, size_t len)
{
	for (int i = 0; i < 2; i++) {
		const char *v = json_string_value(json_object_get(ann, keys[i]));

		if (v && *v) {
			snprintf(out, len, "%s", v);
			return;
		}
	}
}

/* Docker's name of container id (its config.v2.json's "Name", "/web"): e->found. */
static void docker_name(const char *id, struct names_entry *e)
{
	const char *dir = getenv("VCPUSTAT_DOCKER_DIR");
	const char *name;
	char path[512];
	json_t *doc;

	snprintf(path, sizeof(path), "%s/containers/%s/config.v2.json", dir && *dir ? dir : "/var/lib/docker", id);
	if (access(path, R_OK))
		return;
	doc = json_load_file(path, 0, NULL);
	name = json_string_value(json_object_get(doc, "Name"));
	if (name && *name == '/')
		name++;
	if (name && *name) {
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->found = true;
	}
	json_decref(doc);
}

/* Look the bundle of container id up (containerd's CRI, then CRI-O, then Docker's own state): e->found. */
static void names_lookup(const char *id, struct names_entry *e)
{
	/* containerd's CRI plugin, then CRI-O (kubelet's labels, which CRI-O keeps as annotations) */
	static const char *const pod_keys[2] = { "io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name" };
	static const char *const ns_keys[2] = { "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace" };
	static const char *const ctr_keys[2] = { "io.kubernetes.cri.container-name", "io.kubernetes.container.name" };
	static const char *const bundle[2] = { "%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s/config.json",
					       "%s/containers/storage/overlay-containers/%s/userdata/config.json" };
	const char *run = getenv("VCPUSTAT_RUN_DIR");
	char path[512];

	memset(e, 0, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", id);
	for (int b = 0; b < 2 && !e->found; b++) {
		json_t *doc, *ann;

		snprintf(path, sizeof(path), bundle[b], run && *run ? run : "/run", id);
		if (access(path, R_OK))
			continue;
		/* a file that does not parse names nothing: the names are a help, not the data */
		doc = json_load_file(path, 0, NULL);
		ann = json_object_get(doc, "annotations");
		if (json_is_object(ann)) {
			annotation(ann, pod_keys, e->pod_name, sizeof(e->pod_name));
			annotation(ann, ns_keys, e->pod_namespace, sizeof(e->pod_namespace));
			annotation(ann, ctr_keys, e->name, sizeof(e->name));
			e->found = e->pod_name[0] || e->name[0];
		}
		json_decref(doc);
	}
	if (!e->found)
		docker_name(id, e);
}

bool container_names(struct container_ref *c)
{
	struct names_entry *e = NULL;
	bool found;

	pthread_mutex_lock(&names_lock);
	for (size_t i = 0; i < NAMES_CACHE && !e; i++)
		if (names_cache[i].id[0] && !strcmp(names_cache[i].id, c->id))
			e = &names_cache[i];
	if (!e) { /* a new container: its bundle read once, the oldest entry making room */
		e = &names_cache[names_next];
		names_next = (names_next + 1) % NAMES_CACHE;
		names_lookup(c->id, e);
	}
	found = e->found;
	if (found) {
		snprintf(c->pod_name, sizeof(c->pod_name), "%s", e->pod_name);
		snprintf(c->pod_namespace, sizeof(c->pod_namespace), "%s", e->pod_namespace);
		snprintf(c->name, sizeof(c->name), "%s", e->name);
	}
	pthread_mutex_unlock(&names_lock);
	return found;
}

const char *container_label(const struct container_ref *c, char *buf, size_t len)
{
	bool hex = hex_id(c->id, strlen(c->id));
	/* container ids as docker ps shows them: 12 digits */
	int idl = hex ? 12 : (int)strlen(c->id);

	if (c->pod_name[0]) /* named by the runtime: "pod default/virt-launcher-vm1 compute (containerd 0123456789ab)" */
		snprintf(buf, len, "pod %s%s%s%s%s (%s %.*s)", c->pod_namespace, c->pod_namespace[0] ? "/" : "",
			 c->pod_name, c->name[0] ? " " : "", c->name, c->runtime, idl, c->id);
	else if (c->pod[0] && c->id[0])
		snprintf(buf, len, "pod %s %s %.*s", c->pod, c->runtime, idl, c->id);
	else if (c->name[0] && c->runtime[0]) /* a container named by its runtime, no pod: "web (docker 0123456789ab)" */
		snprintf(buf, len, "%s (%s %.*s)", c->name, c->runtime, idl, c->id);
	else if (c->pod[0])
		snprintf(buf, len, "pod %s", c->pod);
	else if (c->runtime[0])
		snprintf(buf, len, "%s %.*s", c->runtime, idl, c->id);
	else
		buf[0] = '\0';
	return buf;
}

bool recorded_container(const char *cgroup, const char *pod_name, const char *pod_namespace, const char *name,
			struct container_ref *c)
{
	if (!cgroup_container(cgroup, c))
		return false;
	if (!c->pod_name[0] && !c->name[0]) { /* not on this host: as the recording host's runtime named it */
		snprintf(c->pod_name, sizeof(c->pod_name), "%s", pod_name);
		snprintf(c->pod_namespace, sizeof(c->pod_namespace), "%s", pod_namespace);
		snprintf(c->name, sizeof(c->name), "%s", name);
	}
	return true;
}

const char *recorded_container_label(const char *cgroup, const char *pod_name, const char *pod_namespace,
				     const char *name, char *buf, size_t len)
{
	struct container_ref c;

	if (cgroup && recorded_container(cgroup, pod_name, pod_namespace, name, &c))
		return container_label(&c, buf, len);
	snprintf(buf, len, "%s", cgroup ? cgroup : "");
	return buf;
}

bool recorded_cgroup_matches(const char *pattern, const char *cgroup, const char *pod_name, const char *pod_namespace,
			     const char *name)
{
	struct container_ref c;
	char label[320];
	size_t pl = strlen(pattern);

	if (!cgroup || !cgroup[0])
		return false;
	if (!fnmatch(pattern, cgroup, 0))
		return true;
	if (!recorded_container(cgroup, pod_name, pod_namespace, name, &c))
		return false;
	if ((c.id[0] && !fnmatch(pattern, c.id, 0)) || (c.pod[0] && !fnmatch(pattern, c.pod, 0)) ||
	    (c.pod_name[0] && !fnmatch(pattern, c.pod_name, 0)) || (c.name[0] && !fnmatch(pattern, c.name, 0)) ||
	    !fnmatch(pattern, container_label(&c, label, sizeof(label)), 0))
		return true;
	return pl >= 4 && hex_id(c.id, strlen(c.id)) && !strncmp(c.id, pattern, pl);
}

bool cgroup_matches(const char *pattern, const char *cgroup)
{
	return recorded_cgroup_matches(pattern, cgroup, "", "", "");
}
