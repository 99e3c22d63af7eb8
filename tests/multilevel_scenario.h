/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * multilevel_scenario.h - one host trace and one guest trace of the
 * multi-level analysis (tests/test_import_multilevel.c, tests/test_flow.c):
 * a guest thread whose vCPU is preempted on the host by another VM's vCPU.
 */
#ifndef VCPUSTAT_TEST_MULTILEVEL_SCENARIO_H
#define VCPUSTAT_TEST_MULTILEVEL_SCENARIO_H

#include <math.h>
#include <stdlib.h>
#include "import_helpers.h"
#include "import_synth.h"

static const struct layout nine = { .tgid = true, .irq = true, .decimals = 9 };

struct scenario {
	struct synth p;
	uint64_t t0;		 /* host time of the scenario */
	uint64_t g_in, g_out, g_sleep, g_wake; /* guest times of its guest events */
	char *host, *guest;
};

#define US 1000ull

static inline struct tev host_ev(enum tev_type t, uint64_t ts, uint32_t pid, const char *reason)
{
	return (struct tev){ .type = t, .ts = ts, .cpu = 0, .pid = pid, .tgid = pid / 1000 * 1000, .comm = "CPU 0/KVM",
			     .reason = reason };
}

static inline struct tev host_sw(uint64_t ts, uint32_t prev, const char *state, uint32_t next)
{
	return (struct tev){ .type = T_SWITCH, .ts = ts, .cpu = 0, .pid = prev, .tgid = prev / 1000 * 1000,
			     .comm = prev ? "CPU 0/KVM" : "swapper/0", .state = state, .pid2 = next,
			     .comm2 = next ? "CPU 0/KVM" : "swapper/0" };
}

static inline struct tev guest_sw(uint64_t ts, uint32_t prev, const char *pc, const char *state, uint32_t next,
			   const char *nc)
{
	return (struct tev){ .type = T_SWITCH, .ts = ts, .cpu = 0, .pid = prev, .tgid = prev, .comm = pc,
			     .state = state, .pid2 = next, .comm2 = nc };
}

/*
 * Host CPU 0: VM A's vCPU 0 (thread 1001) in guest mode from t0; at +1000 us
 * an interrupt exit, at +1002 us VM B's vCPU 0 (thread 2001) takes the CPU
 * until +3001 us; A is back in guest mode at +3002 us; an MSR exit from
 * +5000 to +5010 us; a halt at +9000 us. Host CPU 1: A's vCPU 1 (thread 1002)
 * takes the sync agent's hypercalls all along.
 * Guest CPU 0: fib (300) switched in at +500 us, preempted by logger (301) at
 * +7000 us; logger sleeps at +7900 us; fib is woken at +8500 us.
 */
static inline void make_scenario_plus(struct scenario *sc, uint64_t seed, const struct tev *extra, size_t nextra)
{
	struct sync_traces agent = { .vcpu_pid = 1002, .vm_tgid = 1000, .host_cpu = 1, .vcpu = 1, .agent_pid = 900,
				     .guest_cpu = 1, .key0 = 1ull << 48 };
	struct tev *h = NULL, *g = NULL;
	size_t nh = 0, ng = 0;
	uint64_t t0;

	sc->p = synth_default(seed);
	sc->t0 = t0 = sc->p.host0 + 20000000000ull;
	sync_tevs(&sc->p, &agent, &h, &nh, &g, &ng);
	h = realloc(h, (nh + 16 + nextra) * sizeof(*h));
	for (size_t i = 0; i < nextra; i++) /* other host events (tests/test_flow.c: another VM's sync rounds) */
		h[nh++] = extra[i];
	g = realloc(g, (ng + 8) * sizeof(*g));
	h[nh++] = host_sw(t0, 0, "R", 1001);
	h[nh++] = host_ev(T_ENTRY, t0 + 1 * US, 1001, NULL);
	h[nh++] = host_ev(T_KEXIT, t0 + 1000 * US, 1001, "EXTERNAL_INTERRUPT");
	h[nh++] = host_sw(t0 + 1002 * US, 1001, "R+", 2001);
	h[nh++] = host_ev(T_ENTRY, t0 + 1003 * US, 2001, NULL);
	h[nh++] = host_ev(T_KEXIT, t0 + 3000 * US, 2001, "EXTERNAL_INTERRUPT");
	h[nh++] = host_sw(t0 + 3001 * US, 2001, "R+", 1001);
	h[nh++] = host_ev(T_ENTRY, t0 + 3002 * US, 1001, NULL);
	h[nh++] = host_ev(T_KEXIT, t0 + 5000 * US, 1001, "MSR_WRITE");
	h[nh++] = host_ev(T_ENTRY, t0 + 5010 * US, 1001, NULL);
	h[nh++] = host_ev(T_KEXIT, t0 + 9000 * US, 1001, "HLT");
	h[nh++] = host_sw(t0 + 9001 * US, 1001, "S", 0);
	/* the guest's events, at the guest times of those host instants (the truth) */
	sc->g_in = (uint64_t)llroundl(synth_guest(&sc->p, (long double)(t0 + 500 * US)));
	sc->g_out = (uint64_t)llroundl(synth_guest(&sc->p, (long double)(t0 + 7000 * US)));
	sc->g_sleep = (uint64_t)llroundl(synth_guest(&sc->p, (long double)(t0 + 7900 * US)));
	sc->g_wake = (uint64_t)llroundl(synth_guest(&sc->p, (long double)(t0 + 8500 * US)));
	g[ng++] = guest_sw(sc->g_in, 0, "swapper/0", "R", 300, "fib");
	g[ng++] = guest_sw(sc->g_out, 300, "fib", "R+", 301, "logger");
	g[ng++] = guest_sw(sc->g_sleep, 301, "logger", "S", 0, "swapper/0");
	g[ng++] = (struct tev){ .type = T_WAKEUP, .ts = sc->g_wake, .cpu = 0, .pid = 0, .comm = "swapper/0",
				.pid2 = 300, .comm2 = "fib", .cpu2 = 0 };
	tev_sort(h, nh);
	tev_sort(g, ng);
	sc->host = imp_write_trace(h, nh, &nine);
	sc->guest = imp_write_trace(g, ng, &nine);
	free(h);
	free(g);
}

static inline void make_scenario(struct scenario *sc, uint64_t seed)
{
	make_scenario_plus(sc, seed, NULL, 0);
}

#endif
