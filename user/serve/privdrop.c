// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* privdrop.c - become an unprivileged user that can still read BPF maps (serve/serve.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "serve/serve.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int lookup(const char *user, uid_t *uid, gid_t *gid, struct vcpustat_error *err)
{
	struct passwd *pw;
	char *end;
	unsigned long n;

	errno = 0;
	pw = getpwnam(user);
	if (!pw) {
		n = strtoul(user, &end, 10);
		if (*user && !*end) {
			pw = getpwuid((uid_t)n);
			if (!pw) { /* a bare uid: its group is the same number */
				*uid = (uid_t)n;
				*gid = (gid_t)n;
				return 0;
			}
		}
	}
	if (!pw)
		return verror(err, -ENOENT, "--user %s: no such user", user);
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

int privdrop_check_user(const char *user, struct vcpustat_error *err)
{
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	int e = lookup(user, &uid, &gid, err);

	if (e)
		return e;
	if (uid == 0)
		return verror(err, -EINVAL, "--user %s: that is root; name an unprivileged user", user);
	return 0;
}

int privdrop_to_user(const char *user, struct vcpustat_error *err)
{
	cap_value_t keep[] = {CAP_BPF};
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	cap_t caps;
	int e;

	e = lookup(user, &uid, &gid, err);
	if (e)
		return e;
	if (uid == 0)
		return verror(err, -EINVAL, "--user %s: that is root; name an unprivileged user", user);
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		return verror(err, -errno, "--user %s: prctl(PR_SET_KEEPCAPS): %s", user, strerror(errno));
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return verror(err, -errno, "--user %s: cannot switch to uid %u gid %u: %s", user, (unsigned)uid,
			      (unsigned)gid, strerror(errno));
	caps = cap_init();
	if (!caps)
		return verror(err, -ENOMEM, "out of memory");
	if (cap_set_flag(caps, CAP_PERMITTED, 1, keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_EFFECTIVE, 1, keep, CAP_SET) || cap_set_proc(caps)) {
		e = -errno;
		cap_free(caps);
		return verror(err, e ? e : -EPERM, "--user %s: cannot keep CAP_BPF: %s", user,
			      strerror(e ? -e : EPERM));
	}
	cap_free(caps);
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return verror(err, -errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	return 0;
}
