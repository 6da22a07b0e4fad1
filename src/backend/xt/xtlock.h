/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The xtables lock, taken as iptables takes it, so svcnat and every
 * iptables command on the host write the tables one at a time.
 */
#ifndef SVCNAT_BACKEND_XTLOCK_H
#define SVCNAT_BACKEND_XTLOCK_H

#include "core/diag.h"

#define XTLOCK_DEFAULT_PATH "/run/xtables.lock"
#define XTLOCK_DEFAULT_WAIT_MS 5000

/*
 * Open path (O_CREAT, 0600) and flock(LOCK_EX) it, waiting at most
 * wait_ms.  *ret_fd holds the lock until closed.  -EBUSY with a diag
 * naming the path and, when /proc/locks tells, the holder's pid and
 * command; -errno when the file cannot be opened or locked.
 */
int xtlock_take(const char *path, unsigned wait_ms, int *ret_fd, struct diag_list *d);

#endif
