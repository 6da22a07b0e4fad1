/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One svcnat daemon per network namespace.  The lock is a listening unix
 * socket bound to an abstract name: Linux keeps abstract names per network
 * namespace (whatever the mount namespace, so a daemon in a hostNetwork pod
 * with a /run of its own still meets one on the host), and the kernel
 * releases the name when the holder exits, kill -9 included, so a lock is
 * never stale.  A contender that finds the name taken connects to it and
 * reads the holder's pid with SO_PEERCRED (the kernel translates it into
 * the contender's pid namespace).  Any process of the namespace may bind an
 * abstract name; the message names the holder's pid so an operator sees
 * whether it is svcnat.
 */
#ifndef SVCNAT_SYS_NSLOCK_H
#define SVCNAT_SYS_NSLOCK_H

#include <sys/types.h>

/* The abstract name (without its leading NUL), for messages and tests. */
#define NSLOCK_NAME "svcnat/netns-lock"

/*
 * Take this network namespace's lock: *ret_fd is the listening socket
 * (close-on-exec, non-blocking), held for as long as it stays open.
 * 0; -EBUSY when another process holds it (*ret_holder: its pid, or 0
 * when the kernel cannot tell it here, as from another pid namespace);
 * -errno when no socket can be made.  ret_holder may be NULL.
 */
int nslock_take(int *ret_fd, pid_t *ret_holder);

/*
 * Whether another process holds the lock, without taking it: 1 with
 * *ret_holder as nslock_take() gives it, 0 when nobody does, -errno.
 */
int nslock_holder(pid_t *ret_holder);

/* Accept and close the connections contenders made to learn the pid (call
 * when the lock's fd is readable; they would fill the backlog).  0 or -errno. */
int nslock_drain(int fd);

#endif
