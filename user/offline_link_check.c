// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * offline_link_check.c - links every object of libvcpustat_offline (whole
 * archive) without libbpf or the live layer: if offline code ever calls into
 * them, this program fails to link and the build stops (user/CMakeLists.txt).
 */
int main(void)
{
	return 0;
}
