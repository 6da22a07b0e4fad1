/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One svcnat daemon per network namespace.  The lock is a listening unix
 * socket bound to an abstract name: Linux keeps abstract names per network
 * namespace (whatever the mount namespace, so a daemon in a hostNetwork pod
 * with a /run of its own still meets one on the host), and the kernel
 * releases the name when the holder exits, kill -9 included, so a lock is
 * never stale.  A contender that finds the name taken connects to it and
 * reads the holder's pid with SO_PEERCRED (the kernel translates it into
 * the contender's pid namespace) and uid.  Any process of the namespace may
 * bind an abstract name (they have no permissions): the caller decides from
 * the holder's uid whether it is a svcnat it must yield to.
 */
#ifndef SVCNAT_SYS_NSLOCK_H
#define SVCNAT_SYS_NSLOCK_H

#include <stdbool.h>
#include <sys/types.h>

/* Who holds the lock, as SO_PEERCRED tells it. */
struct nslock_holder {
	pid_t pid; /* 0: not known (another pid namespace, or no answer) */
	uid_t uid; /* (uid_t)-1: not known */
};

/* The abstract name (without its leading NUL), for messages and tests. */
#define NSLOCK_NAME "svcnat/netns-lock"

/*
 * Take this network namespace's lock: *ret_fd is the listening socket
 * (close-on-exec, non-blocking), held for as long as it stays open.
 * 0; -EBUSY when another process holds it (*ret_holder says who, as far
 * as the kernel tells: a holder that bound the name but does not listen,
 * or whose backlog is full, is not known); -errno when no socket can be
 * made.  ret_holder may be NULL.
 */
int nslock_take(int *ret_fd, struct nslock_holder *ret_holder);

/*
 * Whether another process holds the lock, without taking it: 1 with
 * *ret_holder as nslock_take() gives it, 0 when nobody does, -errno.
 */
int nslock_holder(struct nslock_holder *ret_holder);

/*
 * Whether the holder is one to yield to: a process of our own uid (root,
 * for the daemon).  A holder of another uid, or one that cannot be told,
 * is a squatter on the name, not svcnat: it must not keep svcnat from
 * running (anyone can bind the name).
 */
bool nslock_holder_is_peer(const struct nslock_holder *h);

/* Accept and close the connections contenders made to learn the pid (call
 * when the lock's fd is readable; they would fill the backlog).  0 or -errno. */
int nslock_drain(int fd);

#endif
