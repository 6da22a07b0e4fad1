/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sys/worker.h"
#include "util.h"

struct worker {
	struct loop *loop;
	int efd; /* the thread writes 1 when fn has returned */
	bool busy;
	pthread_t thread;
	worker_fn fn, done;
	void *userdata;
};

static void *thread_main(void *arg)
{
	struct worker *w = arg;
	uint64_t one = 1;

	w->fn(w->userdata);
	/* An eventfd write of 1 cannot fail short of a bug: the counter
	 * would have to reach 2^64 - 1. */
	while (write(w->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	return NULL;
}

static int on_done(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct worker *w = userdata;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0; /* spurious */
	pthread_join(w->thread, NULL);
	w->busy = false;
	w->done(w->userdata);
	return 0;
}

int worker_new(struct loop *l, struct worker **ret)
{
	struct worker *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	/* The job's thread allocates much of what the loop's thread frees
	 * and the other way round (a sync's plan and working copies, the
	 * writer's kept state).  With one malloc arena for the process the
	 * pages one thread freed are the pages the other reuses; glibc's
	 * default gives the job's thread an arena of its own, whose fresh
	 * heap every sync faults in again (contrib/bench/restart.py: the
	 * daemon's warm first sync at 10,000 x 10 on nft took 1.4 s of CPU
	 * with it and 0.8 s without).  Set before any second thread runs. */
	mallopt(M_ARENA_MAX, 1);
	w->loop = l;
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		r = -errno;
		free(w);
		return r;
	}
	r = loop_add_io(l, w->efd, EPOLLIN, on_done, w);
	if (r < 0) {
		close(w->efd);
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	if (w->busy)
		pthread_join(w->thread, NULL);
	loop_del_io(w->loop, w->efd);
	close(w->efd);
	free(w);
}

int worker_start(struct worker *w, worker_fn fn, worker_fn done, void *userdata)
{
	sigset_t all, old;
	int r;

	if (w->busy)
		return -EBUSY;
	w->fn = fn;
	w->done = done;
	w->userdata = userdata;
	/* The thread inherits the mask: signals stay with the loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&w->thread, NULL, thread_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return -r;
	w->busy = true;
	return 0;
}

bool worker_busy(const struct worker *w)
{
	return w && w->busy;
}
