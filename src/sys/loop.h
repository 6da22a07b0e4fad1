/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's event loop: one thread, one epoll set.  File descriptors
 * (signalfd, inotify, netlink sockets, libcurl's sockets, the HTTP server)
 * and timers (one timerfd each) dispatch to callbacks.  After every batch of
 * events the post hook runs once: callbacks only mark state dirty, the post
 * hook reconciles (arms the sync timer), so nothing runs until something
 * happens and an idle daemon uses no CPU.
 */
#ifndef SVCNAT_SYS_LOOP_H
#define SVCNAT_SYS_LOOP_H

#include <stdint.h>

struct loop;
struct loop_timer;

/* Return < 0 to stop the loop with that error. */
typedef int (*loop_io_fn)(struct loop *l, int fd, uint32_t events, void *userdata);
typedef int (*loop_timer_fn)(struct loop *l, struct loop_timer *t, void *userdata);
typedef void (*loop_post_fn)(struct loop *l, void *userdata);

int loop_new(struct loop **ret);
void loop_free(struct loop *l);

/* Watch fd for EPOLLIN/EPOLLOUT...; one registration per fd.  0 or -errno. */
int loop_add_io(struct loop *l, int fd, uint32_t events, loop_io_fn fn, void *userdata);
int loop_mod_io(struct loop *l, int fd, uint32_t events);
int loop_del_io(struct loop *l, int fd);

/* Timers on CLOCK_MONOTONIC; a new timer is disarmed. */
int loop_timer_new(struct loop *l, loop_timer_fn fn, void *userdata, struct loop_timer **ret);
void loop_timer_free(struct loop_timer *t);
/* Fire once, usec from now (0 disarms).  0 or -errno. */
int loop_timer_arm(struct loop_timer *t, uint64_t usec);
/* Absolute CLOCK_MONOTONIC deadline in usec (0 disarms). */
int loop_timer_arm_at(struct loop_timer *t, uint64_t deadline_usec);
int loop_timer_armed(const struct loop_timer *t);

void loop_set_post(struct loop *l, loop_post_fn fn, void *userdata);

/* Run until loop_quit(); returns the code given to loop_quit or -errno. */
int loop_run(struct loop *l);
void loop_quit(struct loop *l, int code);

uint64_t loop_now_usec(void); /* CLOCK_MONOTONIC */

#endif
