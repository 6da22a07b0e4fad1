/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "sys/loop.h"
#include "util.h"

enum src_kind {
	SRC_IO,
	SRC_TIMER,
};

struct loop_src {
	enum src_kind kind;
	int fd;
	bool dead;
	struct loop *l;
	void *userdata;
	loop_io_fn io_fn;
	struct loop_src *next; /* live list or dead list */
};

struct loop_timer {
	struct loop_src src; /* first: epoll data points here for both kinds */
	loop_timer_fn fn;
	bool armed;
};

struct loop {
	int epfd;
	bool quit;
	int code;
	loop_post_fn post;
	void *post_userdata;
	struct loop_src *live;
	/*
	 * Sources removed while a batch is being dispatched may still have
	 * events pending in that batch: they are marked dead and freed only
	 * after the batch, so no callback sees a dangling pointer.
	 */
	struct loop_src *dead;
};

uint64_t loop_now_usec(void)
{
	return monotonic_usec();
}

int loop_new(struct loop **ret)
{
	struct loop *l;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int r = -errno;

		free(l);
		return r;
	}
	*ret = l;
	return 0;
}

static void src_destroy(struct loop_src *s)
{
	if (s->kind == SRC_TIMER) {
		struct loop_timer *t = (struct loop_timer *)s;

		if (s->fd >= 0)
			close(s->fd);
		free(t);
	} else {
		free(s);
	}
}

static void free_dead(struct loop *l)
{
	while (l->dead) {
		struct loop_src *s = l->dead;

		l->dead = s->next;
		src_destroy(s);
	}
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	free_dead(l);
	while (l->live) {
		struct loop_src *s = l->live;

		l->live = s->next;
		src_destroy(s);
	}
	if (l->epfd >= 0)
		close(l->epfd);
	free(l);
}

static void unlink_src(struct loop *l, struct loop_src *s)
{
	struct loop_src **pp;

	for (pp = &l->live; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->dead = true;
	s->next = l->dead;
	l->dead = s;
}

static struct loop_src *find_io(struct loop *l, int fd)
{
	struct loop_src *s;

	for (s = l->live; s; s = s->next)
		if (s->kind == SRC_IO && s->fd == fd)
			return s;
	return NULL;
}

int loop_add_io(struct loop *l, int fd, uint32_t events, loop_io_fn fn, void *userdata)
{
	struct epoll_event ev = { .events = events };
	struct loop_src *s;

	if (fd < 0 || !fn)
		return -EINVAL;
	if (find_io(l, fd))
		return -EEXIST;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->kind = SRC_IO;
	s->fd = fd;
	s->l = l;
	s->io_fn = fn;
	s->userdata = userdata;
	ev.data.ptr = s;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int r = -errno;

		free(s);
		return r;
	}
	s->next = l->live;
	l->live = s;
	return 0;
}

int loop_mod_io(struct loop *l, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };
	struct loop_src *s = find_io(l, fd);

	if (!s)
		return -ENOENT;
	ev.data.ptr = s;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

int loop_del_io(struct loop *l, int fd)
{
	struct loop_src *s = find_io(l, fd);

	if (!s)
		return -ENOENT;
	/* The fd may already be closed by its owner: then the kernel has
	 * dropped it from the set and EBADF/ENOENT are expected. */
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	unlink_src(l, s);
	return 0;
}

int loop_timer_new(struct loop *l, loop_timer_fn fn, void *userdata, struct loop_timer **ret)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct loop_timer *t;
	int r;

	if (!fn)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->src.kind = SRC_TIMER;
	t->src.l = l;
	t->src.userdata = userdata;
	t->fn = fn;
	t->src.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->src.fd < 0) {
		r = -errno;
		free(t);
		return r;
	}
	ev.data.ptr = &t->src;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, t->src.fd, &ev) < 0) {
		r = -errno;
		close(t->src.fd);
		free(t);
		return r;
	}
	t->src.next = l->live;
	l->live = &t->src;
	*ret = t;
	return 0;
}

void loop_timer_free(struct loop_timer *t)
{
	if (!t)
		return;
	(void)epoll_ctl(t->src.l->epfd, EPOLL_CTL_DEL, t->src.fd, NULL);
	close(t->src.fd);
	t->src.fd = -1;
	unlink_src(t->src.l, &t->src);
}

static int timer_set(struct loop_timer *t, uint64_t usec, int flags)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = (time_t)(usec / 1000000ULL);
	its.it_value.tv_nsec = (long)(usec % 1000000ULL) * 1000L;
	if (timerfd_settime(t->src.fd, flags, &its, NULL) < 0)
		return -errno;
	/* The kernel zeroes the expiry count on settime: an expiry of the old
	 * setting that epoll already reported reads as EAGAIN in dispatch(). */
	t->armed = usec != 0;
	return 0;
}

int loop_timer_arm(struct loop_timer *t, uint64_t usec)
{
	return timer_set(t, usec, 0);
}

int loop_timer_arm_at(struct loop_timer *t, uint64_t deadline_usec)
{
	return timer_set(t, deadline_usec, TFD_TIMER_ABSTIME);
}

int loop_timer_armed(const struct loop_timer *t)
{
	return t->armed;
}

void loop_set_post(struct loop *l, loop_post_fn fn, void *userdata)
{
	l->post = fn;
	l->post_userdata = userdata;
}

void loop_quit(struct loop *l, int code)
{
	l->quit = true;
	l->code = code;
}

static int dispatch(struct loop *l, struct loop_src *s, uint32_t events)
{
	if (s->kind == SRC_IO)
		return s->io_fn(l, s->fd, events, s->userdata);

	struct loop_timer *t = (struct loop_timer *)s;
	uint64_t expirations;

	/* Nothing to read: re-armed by an earlier callback of this batch. */
	if (read(s->fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations))
		return 0;
	t->armed = false;
	return t->fn(l, t, s->userdata);
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[32];

	l->quit = false;
	l->code = 0;
	if (l->post)
		l->post(l, l->post_userdata);
	while (!l->quit) {
		int n, i;

		n = epoll_wait(l->epfd, evs, (int)ARRAY_SIZE(evs), -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (i = 0; i < n && !l->quit; i++) {
			struct loop_src *s = evs[i].data.ptr;
			int r;

			if (s->dead)
				continue;
			r = dispatch(l, s, evs[i].events);
			if (r < 0)
				loop_quit(l, r);
		}
		free_dead(l);
		if (!l->quit && l->post)
			l->post(l, l->post_userdata);
		free_dead(l);
	}
	return l->code;
}
