// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * spread-src.so: LD_PRELOAD'ed into a load generator (wrk), binds each TCP
 * socket it connects to 127.0.0.1 to a source address of its own,
 * 127.0.0.(2 + fd % SPREAD_SRC_ADDRS) (every 127/8 address is local on
 * Linux): `vcpustat serve` allows at most 16 connections per client address
 * (HTTPD_PER_IP_LIMIT, against slow clients), so 100 connections from one
 * address would be mostly refused; spread over 10 addresses they look like
 * 10 scrapers of 10 connections each.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define SPREAD_SRC_ADDRS 10

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real_connect)(int, const struct sockaddr *, socklen_t);
	const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

	if (!real_connect)
		real_connect = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
	if (addr->sa_family == AF_INET && len >= sizeof(*in) && in->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
		struct sockaddr_in src = { .sin_family = AF_INET,
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + (unsigned)fd % SPREAD_SRC_ADDRS) };

		bind(fd, (struct sockaddr *)&src, sizeof(src)); /* on failure: the kernel's choice */
	}
	return real_connect(fd, addr, len);
}
