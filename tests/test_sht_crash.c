// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A writer killed with SIGKILL while it streams intervals: the file must pass
 * `check`, and every query must give exactly the model's answer for the
 * intervals that ended before the horizon (the end of the last sealed leaf,
 * docs/sht-format.md section 7). Then `repair` must finalize it without
 * changing any answer.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include "sht_model.h"

static struct scenario crash_scenario(uint64_t seed)
{
	return (struct scenario){ .seed = seed, .nattrs = 120, .nops = 150000, .node_size = 4096,
				  .max_children = 4, .zero_pct = 5, .older_pct = 3, .null_pct = 5, .string_pct = 5,
				  .bigint_pct = 5, .hot_pct = 80, .hot_attrs = 24, .max_step = 3000 };
}

/* The child: stream every operation (a little paced, so that the kill lands mid-stream), then wait. */
static void child_write(const char *path, const struct scenario *sc)
{
	struct op *ops = make_ops(sc);
	uint32_t *ids = calloc(sc->nattrs, sizeof(*ids));
	struct sht_writer *w = open_writer(path, sc);
	struct timespec pause = { 0, 200000 };

	create_attrs(w, sc->nattrs, ids);
	for (size_t k = 0; k < sc->nops; k++) {
		apply_op(w, ids, &ops[k]);
		if (k % 500 == 499)
			nanosleep(&pause, NULL);
	}
	for (;;) /* never closes: only the kill ends it */
		nanosleep(&pause, NULL);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_size;
}

/* Fork a writer, kill it once the file holds min_nodes nodes; returns the file size at the kill. */
static off_t write_and_kill(const char *path, const struct scenario *sc, unsigned int min_nodes)
{
	struct timespec poll = { 0, 100000 };
	off_t size = 0;
	int status, spins = 0;
	pid_t pid;

	unlink(path);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		child_write(path, sc);
		_exit(0);
	}
	while ((size = size_of(path)) < (off_t)(min_nodes + 1) * sc->node_size && spins++ < 200000)
		nanosleep(&poll, NULL);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer must die by SIGKILL, status 0x%x",
		  status);
	cr_assert_geq(size, (off_t)(min_nodes + 1) * sc->node_size, "the writer never wrote %u nodes", min_nodes);
	return size_of(path);
}

Test(sht_crash, killed_writer_keeps_every_interval_that_ended_before_its_last_sealed_leaf, .timeout = 180)
{
	const char *path = tmp_path("killed");
	static const unsigned int thresholds[] = { 3, 17, 40, 90, 150 };

	for (size_t round = 0; round < sizeof(thresholds) / sizeof(thresholds[0]); round++) {
		struct scenario sc = crash_scenario(500 + round);
		struct vcpustat_error err = { 0 };
		struct sht_check_report rep;
		const struct sht_info *in;
		struct sht_reader *r;
		struct op *ops;
		struct model m;
		uint64_t horizon;
		off_t size;

		size = write_and_kill(path, &sc, thresholds[round]);
		cr_log_info("round %zu: killed at %lld bytes", round, (long long)size);

		/* check accepts it: good, not closed, history up to the horizon */
		cr_assert_eq(sht_check(path, &rep, &err), 0, "round %zu: %s", round, err.msg);
		cr_assert(rep.ok);
		cr_assert_not(rep.closed);
		cr_assert(rep.recovered);
		cr_assert_geq(rep.nodes, thresholds[round]);
		cr_assert_eq(rep.tail_bytes, (uint64_t)size % sc.node_size);

		/* the model of everything the child was asked to write; visible: end < horizon */
		ops = make_ops(&sc);
		model_init(&m, sc.nattrs);
		for (size_t k = 0; k < sc.nops; k++)
			model_set(&m, &ops[k]);
		free(ops);
		cr_assert_eq(sht_open(&r, path, &err), 0, "round %zu: %s", round, err.msg);
		in = sht_get_info(r);
		cr_assert(in->recovered);
		cr_assert_not(in->closed);
		horizon = in->horizon;
		cr_assert_gt(horizon, 1000, "round %zu: some leaves were sealed", round);
		cr_assert_eq(in->last_node.index, (int64_t)in->nodes - 1);
		cr_assert_eq(in->last_node.end, horizon);
		cmp_all(r, &m, round, 2000, 150);
		sht_close(r);

		/* repair finalizes it; the answers stay the same */
		cr_assert_eq(sht_repair(path, &rep, &err), 0, "round %zu: %s", round, err.msg);
		cr_assert(rep.ok && rep.closed && rep.recovered && rep.repaired);
		cr_assert_eq(rep.horizon, horizon);
		cr_assert_eq(size_of(path) % sc.node_size, 0);
		cr_assert_eq(sht_open(&r, path, &err), 0, "round %zu: %s", round, err.msg);
		cr_assert(sht_get_info(r)->closed && sht_get_info(r)->recovered);
		cr_assert_eq(sht_get_info(r)->horizon, horizon);
		cmp_all(r, &m, round + 100, 2000, 150);
		sht_close(r);
		model_free(&m);
	}
	unlink(path);
}
