// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Containers (user/base/containers.c, issue 13 item 3): what a cgroup path
 * says (pods, runtimes, libvirt machines), which cgroup /proc/<tid>/cgroup
 * places a thread in on v2, hybrid and v1 hosts, and the whole way through a
 * recording: record's /proc reads, the capture's c lines, replay, the
 * /vms/<vm>/cgroup and /host/threads/<tid>/cgroup attributes, and report's
 * JSON and text. Live (root, BPF): `record --level full` names the cgroup of a
 * process the test put in a cgroup of its own.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "record/record.h"
#include "helpers.h"
#include "import_helpers.h"
#include "model/summary.h"

#define CID "4f2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
#define UID "6b1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"
#define UID_ "6b1e2f3a_4b5c_6d7e_8f90_a1b2c3d4e5f6"

struct want {
	const char *path, *runtime, *id, *pod, *label;
};

/* Each cgroup layout of the runtimes and managers, and what it names. */
/* What a report shows for a thread of cgroup path that a recording named nothing for: its label, its JSON. */
static const char *cgroup_label(const char *path, char *buf, size_t len)
{
	struct culprit_summary cu = { 0 };

	snprintf(cu.cgroup, sizeof(cu.cgroup), "%s", path);
	return culprit_cgroup_label(&cu, buf, len);
}

/* The "container" of a culprit of that cgroup, as the window's JSON writes it. */
static json_t *container_json(const char *path)
{
	struct culprit_summary cu = { .tid = 7, .tgid = 7, .ns = 1000, .share = 1.0 };
	struct vm_summary vm = { .tgid = 10, .name = "vm", .culprits = &cu, .nr_culprits = 1 };
	struct summary s = { .t1 = 1000000000ull, .seconds = 1.0, .vms = &vm, .nr_vms = 1 };
	json_t *doc, *c;

	snprintf(cu.cgroup, sizeof(cu.cgroup), "%s", path);
	doc = summary_json_checked(&s);

	c = json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(doc, "vms"), 0), "culprits"), 0),
			    "container");
	cr_assert_not_null(c, "the culprit has a container (or null)");
	json_incref(c);
	json_decref(doc);
	return c;
}

static const struct want layouts[] = {
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID ".scope",
	  "containerd", CID, UID, "pod " UID " containerd 4f2a0b1c2d3e" },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CID ".scope", "cri-o", CID, UID,
	  "pod " UID " cri-o 4f2a0b1c2d3e" },
	{ "/kubepods/besteffort/pod" UID "/" CID, "container", CID, UID, "pod " UID " container 4f2a0b1c2d3e" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice", "", "", UID, "pod " UID },
	{ "/system.slice/docker-" CID ".scope", "docker", CID, "", "docker 4f2a0b1c2d3e" },
	{ "memory:/docker/" CID, "docker", CID, "", "docker 4f2a0b1c2d3e" },
	{ "cpu,cpuacct:/docker/" CID "/sub", "docker", CID, "", "docker 4f2a0b1c2d3e" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID ".scope/container", "podman", CID, "",
	  "podman 4f2a0b1c2d3e" },
	{ "/machine.slice/machine-qemu\\x2d3\\x2dweb\\x2dfront.scope/libvirt/vcpu0", "libvirt", "web-front", "",
	  "libvirt web-front" },
	{ "/machine/qemu-12-db1.libvirt-qemu/emulator", "libvirt", "db1", "", "libvirt db1" },
	{ "/lxc.payload.build01/init.scope", "lxc", "build01", "", "lxc build01" },
};

/* Paths that name no container: the label is the path. */
static const char *const plain[] = {
	"/", "/system.slice/libvirtd.service", "/user.slice/user-0.slice/session-1.scope",
	"/system.slice/docker-12ab.scope", /* too short for an id */
	"/kubepods/besteffort/podnotauid/x", "/machine.slice/machine-qemu\\x2dx\\x2dweb.scope", "memory:/", "",
};

Test(containers, each_layout_names_its_runtime_container_and_pod)
{
	struct container_ref c;
	char label[200];

	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct want *w = &layouts[i];

		cr_assert(cgroup_container(w->path, &c), "%s names a container", w->path);
		cr_assert_str_eq(c.runtime, w->runtime, "%s", w->path);
		cr_assert_str_eq(c.id, w->id, "%s", w->path);
		cr_assert_str_eq(c.pod, w->pod, "%s", w->path);
		cr_assert_str_eq(container_label(&c, label, sizeof(label)), w->label, "%s", w->path);
		cr_assert_str_eq(cgroup_label(w->path, label, sizeof(label)), w->label);
	}
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		cr_assert_not(cgroup_container(plain[i], &c), "%s names no container (%s %s)", plain[i], c.runtime,
			      c.id);
		cr_assert_str_eq(cgroup_label(plain[i], label, sizeof(label)), plain[i]);
	}
}

/* A runtime's OCI bundle of container id under run: its config.json with these annotations (JSON text). */
static void bundle(const char *run, const char *dir_fmt, const char *id, const char *json)
{
	char path[512], cmd[700];
	FILE *f;

	snprintf(path, sizeof(path), dir_fmt, run, id);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	cr_assert_eq(system(cmd), 0);
	strncat(path, "/config.json", sizeof(path) - strlen(path) - 1);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(json, f);
	fclose(f);
}

/*
 * The Kubernetes names of a container from its runtime's bundle on this host
 * (containerd's CRI annotations; CRI-O's): in the label, the JSON and the
 * --cgroup patterns; a bundle that does not parse, or has no annotations,
 * names nothing and breaks nothing.
 */
Test(containers, pod_and_container_names_come_from_the_runtime_bundle)
{
#define CID2 "aa2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
#define CID3 "bb2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
#define CID4 "cc2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
#define CID5 "dd2a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
	static const char pods[] = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/";
	char run[] = "/tmp/vcpustat-run-XXXXXX", path[512], label[320], cmd[600];
	struct container_ref c;
	json_t *j;

	cr_assert_not_null(mkdtemp(run));
	setenv("VCPUSTAT_RUN_DIR", run, 1);
	bundle(run, "%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s", CID2,
	       "{\"ociVersion\": \"1.1.0\", \"annotations\": {\"io.kubernetes.cri.container-type\": \"container\", "
	       "\"io.kubernetes.cri.container-name\": \"compute\", \"io.kubernetes.cri.sandbox-name\": "
	       "\"virt-launcher-web1-x7k2p\", \"io.kubernetes.cri.sandbox-namespace\": \"prod\"}}");
	bundle(run, "%s/containers/storage/overlay-containers/%s/userdata", CID3,
	       "{\"annotations\": {\"io.kubernetes.pod.name\": \"kata-db\", \"io.kubernetes.pod.namespace\": \"data\", "
	       "\"io.kubernetes.container.name\": \"db\"}}");
	bundle(run, "%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s", CID4, "{\"annotations\": [1, 2");

	snprintf(path, sizeof(path), "%scri-containerd-%s.scope", pods, CID2);
	cr_assert(cgroup_container(path, &c));
	cr_assert_str_eq(c.pod_name, "virt-launcher-web1-x7k2p");
	cr_assert_str_eq(c.pod_namespace, "prod");
	cr_assert_str_eq(c.name, "compute");
	cr_assert_str_eq(container_label(&c, label, sizeof(label)),
			 "pod prod/virt-launcher-web1-x7k2p compute (containerd aa2a0b1c2d3e)");
	j = container_json(path);
	cr_assert_str_eq(json_string_value(json_object_get(j, "pod_name")), "virt-launcher-web1-x7k2p");
	cr_assert_str_eq(json_string_value(json_object_get(j, "namespace")), "prod");
	cr_assert_str_eq(json_string_value(json_object_get(j, "name")), "compute");
	cr_assert_str_eq(json_string_value(json_object_get(j, "pod")), UID, "the uid stays");
	json_decref(j);
	cr_assert(cgroup_matches("virt-launcher-web1-*", path), "the pod's name");
	cr_assert(cgroup_matches("compute", path), "the container's name");
	cr_assert(cgroup_matches("pod prod/*", path), "a glob of the label");
	cr_assert_not(cgroup_matches("virt-launcher-web2-*", path), "another pod");

	snprintf(path, sizeof(path), "%scrio-%s.scope", pods, CID3);
	cr_assert(cgroup_container(path, &c));
	cr_assert_str_eq(container_label(&c, label, sizeof(label)), "pod data/kata-db db (cri-o bb2a0b1c2d3e)");

	/* Docker's own state (no pod): the container's name from config.v2.json */
	setenv("VCPUSTAT_DOCKER_DIR", run, 1);
	{
		FILE *f;

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s/containers/%s'", run, CID5);
		cr_assert_eq(system(cmd), 0);
		snprintf(path, sizeof(path), "%s/containers/%s/config.v2.json", run, CID5);
		f = fopen(path, "w");
		cr_assert_not_null(f);
		fputs("{\"ID\": \"" CID5 "\", \"Name\": \"/qemu-web\", \"State\": {}}", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/system.slice/docker-%s.scope", CID5);
	cr_assert(cgroup_container(path, &c));
	cr_assert_str_eq(c.name, "qemu-web");
	cr_assert_str_eq(c.pod_name, "");
	cr_assert_str_eq(container_label(&c, label, sizeof(label)), "qemu-web (docker dd2a0b1c2d3e)");
	j = container_json(path);
	cr_assert_str_eq(json_string_value(json_object_get(j, "name")), "qemu-web");
	cr_assert_str_eq(json_string_value(json_object_get(j, "runtime")), "docker");
	json_decref(j);
	cr_assert(cgroup_matches("qemu-web", path), "the container's name");
	unsetenv("VCPUSTAT_DOCKER_DIR");

	/* a bundle that does not parse, and a container without one: the uid and id, as before */
	snprintf(path, sizeof(path), "%scri-containerd-%s.scope", pods, CID4);
	cr_assert(cgroup_container(path, &c));
	cr_assert_str_eq(container_label(&c, label, sizeof(label)), "pod " UID " containerd cc2a0b1c2d3e");
	cr_assert_str_eq(cgroup_label(layouts[0].path, label, sizeof(label)), layouts[0].label);

	unsetenv("VCPUSTAT_RUN_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run);
	cr_assert_eq(system(cmd), 0);
}

Test(containers, proc_cgroup_text_gives_the_v2_path_else_the_v1_one)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "0::/system.slice/qemu.service\n", "/system.slice/qemu.service" },
		/* hybrid: the v2 path wins where it says something */
		{ "12:memory:/docker/abc\n1:name=systemd:/system.slice/x.service\n0::/system.slice/x.service\n",
		  "/system.slice/x.service" },
		/* hybrid with everything at the v2 root: name=systemd first, then cpu, then any */
		{ "9:name=systemd:/machine.slice/m.scope\n4:memory:/docker/abc\n2:cpu,cpuacct:/cpu/x\n0::/\n",
		  "name=systemd:/machine.slice/m.scope" },
		{ "4:memory:/process_api/979670e6\n2:cpu,cpuacct:/cpu/x\n1:name=systemd:/\n0::/\n", "cpu,cpuacct:/cpu/x" },
		{ "4:memory:/process_api/979670e6\n3:cpuset:/\n0::/\n", "memory:/process_api/979670e6" },
		/* v1 only */
		{ "3:cpu,cpuacct:/lxc/c1\n2:memory:/lxc/c1", "cpu,cpuacct:/lxc/c1" },
		{ "0::/\n", "/" },
		{ "4:memory:/\n0::/", "/" },
	};
	char out[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(cgroup_from_proc(cases[i].text, out, sizeof(out)), 0, "case %zu", i);
		cr_assert_str_eq(out, cases[i].want, "case %zu: %s", i, cases[i].text);
	}
	cr_assert_eq(cgroup_from_proc("", out, sizeof(out)), -1);
	cr_assert_eq(cgroup_from_proc("garbage\nno colons here\n", out, sizeof(out)), -1);
	cr_assert_eq(cgroup_from_proc("1:memory\n", out, sizeof(out)), -1, "a line cut short is not a cgroup");
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* A /proc tree of one thread: its cgroup file and its ns/pid link. */
Test(containers, a_thread_cgroup_and_pid_namespace_come_from_proc)
{
	char root[] = "/tmp/vcpustat-proc-XXXXXX", p[512], out[256];
	struct names n;
	uint64_t pidns = 1;
	__u64 vm_ns = 1;

	cr_assert_not_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/4242", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/4242/ns", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/4242/cgroup", root);
	write_text(p, "0::/machine.slice/machine-qemu\\x2d1\\x2dweb.scope/libvirt/emulator\n");
	snprintf(p, sizeof(p), "%s/4242/ns/pid", root);
	cr_assert_eq(symlink("pid:[4026532711]", p), 0);
	cr_assert_eq(names_init(&n, root, "/nonexistent"), 0);
	cr_assert_eq(names_thread_cgroup(&n, 4242, out, sizeof(out), &pidns), 0);
	cr_assert_str_eq(out, "/machine.slice/machine-qemu\\x2d1\\x2dweb.scope/libvirt/emulator");
	cr_assert_eq(pidns, 4026532711ull);
	cr_assert_str_eq(names_vm_cgroup(&n, 4242, &vm_ns), out, "a VM's, cached");
	cr_assert_eq(vm_ns, 4026532711ull);
	cr_assert_eq(names_thread_cgroup(&n, 4243, out, sizeof(out), &pidns), -1, "a thread gone");
	cr_assert_eq(pidns, 0);
	cr_assert_str_eq(names_vm_cgroup(&n, 4243, &vm_ns), "");
	cr_assert_eq(vm_ns, 0);
	/* the cached value stays when the process is gone */
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	cr_assert_eq(system(p), 0);
	cr_assert_str_eq(names_vm_cgroup(&n, 4242, &vm_ns), "/machine.slice/machine-qemu\\x2d1\\x2dweb.scope/libvirt/emulator");
	names_free(&n);
}

Test(containers, the_cgroup2_mount_is_found_in_a_mounts_file)
{
	char path[] = "/tmp/vcpustat-mounts-XXXXXX", out[128];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_text(path, "sysfs /sys sysfs rw 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
			 "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n");
	cr_assert(cgroup2_root(path, out, sizeof(out)));
	cr_assert_str_eq(out, "/sys/fs/cgroup/unified");
	write_text(path, "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n");
	cr_assert_not(cgroup2_root(path, out, sizeof(out)), "a v1-only host has none");
	unlink(path);
}

/* ---- through a recording: capture, replay, attributes, report ---- */

#define MONO0 5000000000000ull
#define REAL0 1795356187000000000ull
#define POD_CG                                                                                                   \
	"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID \
	".scope"
#define HOG_CG "/system.slice/hog.service"
#define DB_CG "/machine.slice/machine-qemu\\x2d1\\x2ddb.scope"

static struct vcpustat_event ev_at(int64_t t, __u64 type, uint32_t tid, uint32_t next, bool preempt)
{
	struct vcpustat_event ev = { .type = type, .ts = (__u64)((int64_t)MONO0 + t), .tid = tid,
				     .tgid = tid / 1000 * 1000 };

	if (type == VCPUSTAT_EV_SWITCH) {
		ev.tid2 = next;
		ev.tgid2 = next >= 1000 ? next / 1000 * 1000 : next;
		ev.arg1 = preempt;
		if (tid < 1000)
			ev.tgid = tid;
	}
	snprintf(ev.comm, sizeof(ev.comm), "%s", tid >= 1000 ? "CPU 0/KVM" : "hog");
	return ev;
}

/*
 * VM "web" (1000, vCPU thread 1001) in a Kubernetes pod's container, preempted
 * by host thread 500 (hog, in cgroup hog_cg) for 1 us, and VM "db" (2000,
 * vCPU thread 2001) of libvirt, at level full; `vcpustat replay` of its capture.
 */
static char *pod_recording_hog(const char *hog_cg)
{
	struct vcpustat_event ev[] = {
		ev_at(100, VCPUSTAT_EV_KVM_ENTRY, 1001, 0, false),
		ev_at(2000, VCPUSTAT_EV_SWITCH, 1001, 500, true),
		ev_at(3000, VCPUSTAT_EV_SWITCH, 500, 1001, false),
		ev_at(3100, VCPUSTAT_EV_KVM_ENTRY, 1001, 0, false),
		ev_at(3200, VCPUSTAT_EV_KVM_ENTRY, 2001, 0, false),
	};
	struct vcpustat_error err = { 0 };
	struct capture_writer *w;
	char *cap = imp_tmp(".vcap"), *sht = imp_tmp(".sht"), args[512], out[4096];

	cr_assert_eq(capture_create(&w, cap, MONO0, REAL0, "level=full\ncpus=2\n", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_name(w, 1000, "web", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_cgroup(w, 1000, 4026532711ull, POD_CG, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_thread(w, 500, 500, "hog", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_cgroup(w, 500, 4026531836ull, hog_cg, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_name(w, 2000, "db", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_cgroup(w, 2000, 4026531836ull, DB_CG, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		cr_assert_eq(capture_write(w, &ev[i], &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_end(w, MONO0 + 10000, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	snprintf(args, sizeof(args), "replay -q %s -o %s", cap, sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	unlink(cap);
	return sht;
}

/* ... the hog in a service's cgroup */
static char *pod_recording(void)
{
	return pod_recording_hog(HOG_CG);
}

/* Attribute path has one value from when it was made to the end: a string s, else the int i. */
static void one_value(const char *sht, const char *path, const char *s, int64_t i)
{
	struct sht_interval *iv;
	struct sht_reader *r;
	size_t n = imp_intervals(sht, path, &iv, &r), values = 0;

	cr_assert_gt(n, 0, "%s is in %s", path, sht);
	for (size_t k = 0; k < n; k++) {
		if (iv[k].value.type == SHT_NULL)
			continue;
		values++;
		if (s) {
			cr_assert_eq(iv[k].value.type, SHT_STR, "%s", path);
			cr_assert_str_eq(iv[k].value.s, s, "%s", path);
		} else {
			cr_assert_eq(iv[k].value.type, SHT_INT, "%s", path);
			cr_assert_eq(iv[k].value.i, i, "%s", path);
		}
	}
	cr_assert_eq(values, 1, "%s: one value, not %zu", path, values);
	free(iv);
	sht_close(r);
}

Test(containers, a_replayed_capture_records_the_cgroups_and_pid_namespaces)
{
	char *sht = pod_recording();

	one_value(sht, "/vms/web/cgroup", POD_CG, 0);
	one_value(sht, "/vms/web/pidns", NULL, 4026532711ll);
	one_value(sht, "/host/threads/500/cgroup", HOG_CG, 0);
	one_value(sht, "/host/threads/500/pidns", NULL, 4026531836ll);
	unlink(sht);
}

Test(containers, report_names_the_vm_pod_and_the_culprit_cgroup)
{
	static char out[1 << 16];
	char *sht = pod_recording(), args[512];
	json_t *j, *vm, *c, *cul;
	json_error_t je;

	snprintf(args, sizeof(args), "report %s -j", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	j = json_loads(out, 0, &je);
	cr_assert_not_null(j, "%s: %s", je.text, out);
	vm = json_array_get(json_object_get(j, "vms"), 0);
	if (vm && strcmp(json_string_value(json_object_get(vm, "vm")), "web"))
		vm = json_array_get(json_object_get(j, "vms"), 1);
	cr_assert_not_null(vm, "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(vm, "vm")), "web");
	cr_assert_str_eq(json_string_value(json_object_get(vm, "cgroup")), POD_CG);
	cr_assert_eq(json_integer_value(json_object_get(vm, "pidns")), 4026532711ll);
	c = json_object_get(vm, "container");
	cr_assert_str_eq(json_string_value(json_object_get(c, "runtime")), "containerd");
	cr_assert_str_eq(json_string_value(json_object_get(c, "id")), CID);
	cr_assert_str_eq(json_string_value(json_object_get(c, "pod")), UID);
	cul = json_array_get(json_object_get(vm, "culprits"), 0);
	cr_assert_not_null(cul, "the hog preempted the vCPU: %s", out);
	cr_assert_eq(json_integer_value(json_object_get(cul, "tid")), 500);
	cr_assert_eq(json_integer_value(json_object_get(cul, "ns")), 1000);
	cr_assert_str_eq(json_string_value(json_object_get(cul, "cgroup")), HOG_CG);
	cr_assert_eq(json_integer_value(json_object_get(cul, "pidns")), 4026531836ll);
	cr_assert(json_is_null(json_object_get(cul, "container")), "a service is no container");
	json_decref(j);

	/* text: the VM's container and cgroup under its header, the culprit's cgroup on its row */
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "  pod " UID " containerd 4f2a0b1c2d3e, cgroup " POD_CG "\n"), "%s", out);
	cr_assert(strstr(out, "hog") && strstr(strstr(out, "hog"), HOG_CG), "%s", out);

	/* on a host with the container's bundle: the pod's and the container's names, and --cgroup by them */
	{
		char run[] = "/tmp/vcpustat-run-XXXXXX", cmd[600];

		cr_assert_not_null(mkdtemp(run));
		bundle(run, "%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s", CID,
		       "{\"annotations\": {\"io.kubernetes.cri.container-name\": \"compute\", "
		       "\"io.kubernetes.cri.sandbox-name\": \"virt-launcher-web-4hx9q\", "
		       "\"io.kubernetes.cri.sandbox-namespace\": \"default\"}}");
		snprintf(args, sizeof(args), "report %s --cgroup 'virt-launcher-web-*'", sht);
		setenv("VCPUSTAT_RUN_DIR", run, 1);
		cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
		unsetenv("VCPUSTAT_RUN_DIR");
		cr_assert(strstr(out, "  pod default/virt-launcher-web-4hx9q compute (containerd 4f2a0b1c2d3e), cgroup " POD_CG
				      "\n"),
			  "%s", out);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run);
		cr_assert_eq(system(cmd), 0);
	}
	unlink(sht);
}

/* VM "web" of `report SHT -j` (*doc: the document, for json_decref); out: the text. */
static json_t *report_web(const char *sht, char *out, size_t len, json_t **doc)
{
	char args[512];
	json_t *vm;

	snprintf(args, sizeof(args), "report %s -j", sht);
	cr_assert_eq(run_vcpustat(args, out, len), 0, "%s", out);
	*doc = json_loads(out, 0, NULL);
	cr_assert_not_null(*doc, "%s", out);
	vm = json_array_get(json_object_get(*doc, "vms"), 0);
	if (vm && strcmp(json_string_value(json_object_get(vm, "vm")), "web"))
		vm = json_array_get(json_object_get(*doc, "vms"), 1);
	cr_assert_not_null(vm, "%s", out);
	return vm;
}

/*
 * Recorded where the runtime's bundle was, reported where it is not: the
 * names come from the recording (/vms/<vm>/pod_name, pod_namespace,
 * container_name), in text and JSON.
 */
Test(containers, a_recording_keeps_the_names_its_host_gave)
{
	static char out[1 << 16];
	char run[] = "/tmp/vcpustat-run-XXXXXX", cmd[600], args[512], *sht;
	json_t *j, *vm, *c;

	cr_assert_not_null(mkdtemp(run));
	bundle(run, "%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s", CID,
	       "{\"annotations\": {\"io.kubernetes.cri.container-name\": \"compute\", "
	       "\"io.kubernetes.cri.sandbox-name\": \"virt-launcher-web-4hx9q\", "
	       "\"io.kubernetes.cri.sandbox-namespace\": \"default\"}}");
	setenv("VCPUSTAT_RUN_DIR", run, 1);
	sht = pod_recording(); /* replay, here with the bundle */
	unsetenv("VCPUSTAT_RUN_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run);
	cr_assert_eq(system(cmd), 0);
	one_value(sht, "/vms/web/pod_name", "virt-launcher-web-4hx9q", 0);
	one_value(sht, "/vms/web/pod_namespace", "default", 0);
	one_value(sht, "/vms/web/container_name", "compute", 0);

	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "  pod default/virt-launcher-web-4hx9q compute (containerd 4f2a0b1c2d3e), cgroup " POD_CG
			      "\n"),
		  "%s", out);
	vm = report_web(sht, out, sizeof(out), &j);
	c = json_object_get(vm, "container");
	cr_assert_str_eq(json_string_value(json_object_get(c, "pod_name")), "virt-launcher-web-4hx9q", "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(c, "name")), "compute");
	cr_assert_str_eq(json_string_value(json_object_get(c, "pod")), UID);
	json_decref(j);
	/* --cgroup by the recorded names, here where no bundle is */
	snprintf(args, sizeof(args), "report %s --cgroup 'virt-launcher-web-*'", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "  pod default/virt-launcher-web-4hx9q compute (containerd 4f2a0b1c2d3e)"), "%s", out);
	cr_assert_null(strstr(out, "db"), "only the pod's VM: %s", out);
	snprintf(args, sizeof(args), "report %s --cgroup 'virt-launcher-db-*'", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 2, "no VM in such a pod: %s", out);
	unlink(sht);
}

/*
 * The culprit in a neighbour pod's container, recorded (level full) where
 * that pod's bundle was: /host/threads/<tid>/pod_name, pod_namespace,
 * container_name, and a report made where the bundle is not names it from
 * the recording, in text and JSON. A host thread whose cgroup names no
 * container gets none of them.
 */
#define NOISY_CID "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
#define NOISY_UID_ "0a1b2c3d_4e5f_6a7b_8c9d_0e1f2a3b4c5d"
#define NOISY_CG                                                                                                  \
	"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" NOISY_UID_ ".slice/cri-containerd-" \
	NOISY_CID ".scope"

Test(containers, a_level_full_recording_keeps_a_culprits_pod_and_container_names)
{
	static char out[1 << 16];
	char run[] = "/tmp/vcpustat-run-XXXXXX", cmd[600], args[512], *sht, *svc;
	json_t *j, *vm, *cul, *c;
	struct sht_reader *r;
	struct vcpustat_error err = { 0 };
	uint32_t id;

	cr_assert_not_null(mkdtemp(run));
	bundle(run, "%s/containerd/io.containerd.runtime.v2.task/k8s.io/%s", NOISY_CID,
	       "{\"annotations\": {\"io.kubernetes.cri.container-name\": \"encoder\", "
	       "\"io.kubernetes.cri.sandbox-name\": \"batch-transcode-7f9c\", "
	       "\"io.kubernetes.cri.sandbox-namespace\": \"media\"}}");
	setenv("VCPUSTAT_RUN_DIR", run, 1);
	sht = pod_recording_hog(NOISY_CG); /* replay, here with the neighbour's bundle */
	svc = pod_recording();		   /* the hog in a service: no container */
	unsetenv("VCPUSTAT_RUN_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run);
	cr_assert_eq(system(cmd), 0);
	one_value(sht, "/host/threads/500/cgroup", NOISY_CG, 0);
	one_value(sht, "/host/threads/500/pod_name", "batch-transcode-7f9c", 0);
	one_value(sht, "/host/threads/500/pod_namespace", "media", 0);
	one_value(sht, "/host/threads/500/container_name", "encoder", 0);
	cr_assert_eq(sht_open(&r, svc, &err), 0, "%s", err.msg);
	cr_assert_eq(sht_attr_lookup(r, "/host/threads/500/pod_name", &id), -ENOENT, "a service names no pod");
	cr_assert_eq(sht_attr_lookup(r, "/host/threads/500/cgroup", &id), 0);
	sht_close(r);
	unlink(svc);

	/* reported where the bundle is not: the names from the recording */
	snprintf(args, sizeof(args), "report %s", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "hog") && strstr(strstr(out, "hog"), "pod media/batch-transcode-7f9c encoder (containerd "
								     "9e8d7c6b5a4f)"),
		  "%s", out);
	vm = report_web(sht, out, sizeof(out), &j);
	cul = json_array_get(json_object_get(vm, "culprits"), 0);
	cr_assert_not_null(cul, "%s", out);
	cr_assert_eq(json_integer_value(json_object_get(cul, "tid")), 500);
	c = json_object_get(cul, "container");
	cr_assert_str_eq(json_string_value(json_object_get(c, "runtime")), "containerd", "%s", out);
	cr_assert_str_eq(json_string_value(json_object_get(c, "id")), NOISY_CID);
	cr_assert_str_eq(json_string_value(json_object_get(c, "pod_name")), "batch-transcode-7f9c");
	cr_assert_str_eq(json_string_value(json_object_get(c, "namespace")), "media");
	cr_assert_str_eq(json_string_value(json_object_get(c, "name")), "encoder");
	json_decref(j);
	unlink(sht);
}

Test(containers, cgroup_patterns_match_the_path_or_what_it_names)
{
	static const char db[] = "/machine.slice/machine-qemu\\x2d1\\x2ddb.scope";

	cr_assert(cgroup_matches("/kubepods.slice/*", POD_CG), "a glob of the path");
	cr_assert(cgroup_matches(POD_CG, POD_CG), "the path itself");
	cr_assert(cgroup_matches("4f2a0b", POD_CG), "the start of the container id");
	cr_assert(cgroup_matches(CID, POD_CG), "the whole id");
	cr_assert(cgroup_matches(UID, POD_CG), "the pod uid, as Kubernetes writes it");
	cr_assert(cgroup_matches("pod 6b1e*", POD_CG), "a glob of the label");
	cr_assert(cgroup_matches("db", db), "the libvirt domain");
	cr_assert(cgroup_matches("libvirt *", db), "a glob of the label");
	cr_assert_not(cgroup_matches("4f2", POD_CG), "3 digits are too few to be an id's start");
	cr_assert_not(cgroup_matches("0f2a", POD_CG), "another id");
	cr_assert_not(cgroup_matches("/kubepods.slice", POD_CG), "not a prefix: a glob of the whole path");
	cr_assert_not(cgroup_matches("d", db), "the domain is matched whole");
	cr_assert_not(cgroup_matches("*", ""), "a VM without a cgroup is matched by nothing");
}

/* report --cgroup keeps the VMs in a matching cgroup; none: exit 2 with the VMs' cgroups named. */
Test(containers, report_cgroup_keeps_the_vms_in_a_matching_cgroup)
{
	static char out[1 << 16];
	char *sht = pod_recording(), args[512];
	static const char *const keep_web[] = { "'/kubepods.slice/*'", "4f2a0b1c", UID, "'pod *'" };
	json_t *j, *vms;
	json_error_t je;

	for (size_t i = 0; i < sizeof(keep_web) / sizeof(keep_web[0]); i++) {
		snprintf(args, sizeof(args), "report %s -j --cgroup %s", sht, keep_web[i]);
		cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
		j = json_loads(out, 0, &je);
		cr_assert_not_null(j, "%s: %s", je.text, out);
		vms = json_object_get(j, "vms");
		cr_assert_eq(json_array_size(vms), 1, "--cgroup %s: one VM of two: %s", keep_web[i], out);
		cr_assert_str_eq(json_string_value(json_object_get(json_array_get(vms, 0), "vm")), "web");
		json_decref(j);
	}
	/* two patterns: either; with --vm: both */
	snprintf(args, sizeof(args), "report %s -j --cgroup db --cgroup 4f2a0b1c", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	j = json_loads(out, 0, &je);
	cr_assert_eq(json_array_size(json_object_get(j, "vms")), 2, "%s", out);
	json_decref(j);
	snprintf(args, sizeof(args), "report %s --cgroup db --vm web", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 2, "--vm web and --cgroup db keep nothing: %s", out);
	cr_assert(strstr(out, "--cgroup db: no VM of") && strstr(out, "web: " POD_CG), "%s", out);
	snprintf(args, sizeof(args), "export %s -f csv --cgroup db", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "db") && !strstr(out, "web"), "export keeps db only: %s", out);
	unlink(sht);
}

/* A capture's c line that is cut or garbled is refused with the others of its block, never half read. */
Test(containers, capture_c_lines_read_back_exactly)
{
	struct vcpustat_error err = { 0 };
	struct capture_writer *w;
	struct capture_reader *r;
	char *cap = imp_tmp(".vcap");
	uint64_t pidns = 0;
	char longpath[400];

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	cr_assert_eq(capture_create(&w, cap, MONO0, REAL0, "level=full\ncpus=2\n", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_cgroup(w, 7, 11, "/a:b", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_cgroup(w, 8, 0, longpath, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_write_cgroup(w, 7, 12, "/later", &err), 0, "%s", err.msg);
	cr_assert_eq(capture_close(w, &err), 0, "%s", err.msg);
	cr_assert_eq(capture_open(&r, cap, &err), 0, "%s", err.msg);
	cr_assert_str_eq(capture_thread_cgroup(r, 7, &pidns), "/later", "the latest line of a tid");
	cr_assert_eq(pidns, 12);
	cr_assert_eq(strlen(capture_thread_cgroup(r, 8, &pidns)), 255, "cut to 255 bytes");
	cr_assert_eq(pidns, 0);
	cr_assert_null(capture_thread_cgroup(r, 9, &pidns));
	cr_assert_null(capture_vm_name(r, 0), "a c line names no VM");
	capture_close_reader(r);
	unlink(cap);
}

/* ---- live: record --level full names the cgroup of a process in a cgroup of its own ---- */

static char cg_dir[512];

static void remove_cgroup(void)
{
	if (cg_dir[0])
		rmdir(cg_dir);
}

Test(containers, record_level_full_records_a_thread_cgroup_and_pid_namespace, .fini = remove_cgroup,
     .timeout = 120)
{
	char root[256], procs[600], sht[] = "/tmp/vcpustat-cg-XXXXXX.sht", args[1024], out[8192], want[300];
	char nslink[64], path[128];
	pid_t child;
	ssize_t len;
	int fd;

	SKIP_UNLESS(bpf_unavailable());
	if (!cgroup2_root(NULL, root, sizeof(root)))
		cr_skip_test("no cgroup v2 mount to make a cgroup in");
	snprintf(cg_dir, sizeof(cg_dir), "%s/vcpustat-test-%d", root, (int)getpid());
	if (mkdir(cg_dir, 0755) && errno != EEXIST)
		cr_skip_test("cannot make a cgroup in %s: %s", root, strerror(errno));
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		/* switches often: a short sleep at a time */
		for (;;)
			usleep(1000);
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg_dir);
	fd = open(procs, O_WRONLY);
	cr_assert_geq(fd, 0, "%s: %s", procs, strerror(errno));
	len = dprintf(fd, "%d\n", (int)child);
	close(fd);
	cr_assert_gt(len, 0, "moving %d into %s", (int)child, cg_dir);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)child);
	len = readlink(path, nslink, sizeof(nslink) - 1);
	cr_assert_gt(len, 5);
	nslink[len] = '\0';

	fd = mkstemps(sht, 4);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(args, sizeof(args), "record -q --level full -o %s --duration 1.5", sht);
	cr_assert_eq(run_vcpustat(args, out, sizeof(out)), 0, "%s", out);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	snprintf(path, sizeof(path), "/host/threads/%d/cgroup", (int)child);
	snprintf(want, sizeof(want), "/vcpustat-test-%d", (int)getpid());
	one_value(sht, path, want, 0);
	snprintf(path, sizeof(path), "/host/threads/%d/pidns", (int)child);
	one_value(sht, path, NULL, strtoll(nslink + 5, NULL, 10));
	cr_log_info("record --level full: %d in cgroup %s, pid namespace %s", (int)child, want, nslink);
	unlink(sht);
}
