/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backend/xt/xtlock.h"
#include "util.h"

/* Who holds an flock on (dev, ino), from /proc/locks; 0 if unknown. */
static pid_t lock_holder(dev_t dev, ino_t ino)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	pid_t pid = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		unsigned long long in;
		char type[16], mode[16];
		int p;

		/* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF" */
		if (sscanf(line, "%*[^:]: %15s %*s %15s %d %x:%x:%llu", type, mode, &p, &maj, &min,
			   &in) != 6)
			continue;
		if (streq(type, "FLOCK") && maj == major(dev) && min == minor(dev) &&
		    in == (unsigned long long)ino && p > 0) {
			pid = p;
			break;
		}
	}
	fclose(f);
	return pid;
}

int xtlock_take(const char *path, unsigned wait_ms, int *ret_fd, struct diag_list *d)
{
	_cleanup_close_ int fd = -1;
	double deadline = monotonic_seconds() + wait_ms / 1000.0;
	struct stat st;

	/* As iptables' xtables_lock(): O_CREAT, mode 0600, flock(LOCK_EX). */
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;

		diag_add(d, DIAG_ERROR, "xtables lock", path, NULL, "cannot open the lock file: %s",
			 strerror(err));
		return -err;
	}
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int err = errno;

			diag_add(d, DIAG_ERROR, "xtables lock", path, NULL, "flock failed: %s",
				 strerror(err));
			return -err;
		}
		if (monotonic_seconds() >= deadline) {
			pid_t holder = fstat(fd, &st) == 0 ? lock_holder(st.st_dev, st.st_ino) : 0;
			char comm[64] = "";

			if (holder > 0) {
				char p[64];
				FILE *f;

				snprintf(p, sizeof(p), "/proc/%d/comm", (int)holder);
				f = fopen(p, "re");
				if (f) {
					if (fgets(comm, sizeof(comm), f))
						comm[strcspn(comm, "\n")] = '\0';
					fclose(f);
				}
			}
			if (holder > 0)
				diag_add(d, DIAG_ERROR, "xtables lock", path, NULL,
					 "still held by pid %d (%s) after waiting %u ms; "
					 "not writing the tables",
					 (int)holder, comm[0] ? comm : "?", wait_ms);
			else
				diag_add(d, DIAG_ERROR, "xtables lock", path, NULL,
					 "still held by another process after waiting %u ms; "
					 "not writing the tables",
					 wait_ms);
			return -EBUSY;
		}
		/* iptables polls once a second; a daemon can afford finer. */
		usleep(20 * 1000);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}
