// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the capture reader on arbitrary bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/fuzz-capture-XXXXXX";
	struct vcpustat_error err = { 0 };
	struct capture_reader *r;
	struct vcpustat_event ev;
	uint32_t tgid;
	int fd = mkstemp(path), e;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	if (capture_open(&r, path, &err) == 0) {
		capture_vm_name(r, 1);
		capture_thread_name(r, 1, &tgid);
		while ((e = capture_next(r, &ev, &err)) == 1)
			;
		if (e < 0 && !strstr(err.msg, path))
			abort(); /* every error names the file */
		capture_truncated(r, NULL);
		capture_close_reader(r);
	} else if (!strstr(err.msg, path)) {
		abort();
	}
	unlink(path);
	return 0;
}
