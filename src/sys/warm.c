/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sys/warm.h"
#include "util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* One madvise() at a time: a huge page, so warm_forget() waits little. */
#define STEP ((size_t)2 << 20)
#define QUEUE 16
#define IDLE_NS 5000000L
/* glibc's defaults for what warm_start() changes (mallopt(3)); the mmap
 * threshold stays where the dynamic one tops out (32 MiB on 64-bit, one
 * sync's freed read buffer brought it near there before). */
#define TOP_PAD_DEFAULT (128 * 1024)
#define MMAP_THRESHOLD (32 << 20)

struct region {
	char *p;
	size_t len;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	bool running;     /* started and not yet joined */
	bool stopping;    /* warm_stop() asked */
	bool exited;      /* the thread's loop ended */
	bool step_busy;   /* populating part of cur, outside the lock */
	bool cur_gone;    /* cur was forgotten during that step */
	bool heap_broken; /* the break cannot be followed */
	struct region q[QUEUE];
	size_t nq;
	struct region cur; /* the region being populated */
	uintptr_t heap_done; /* the heap is populated below this */
	size_t bytes;
	unsigned long idle_gen;
} w = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static uintptr_t page_down(uintptr_t a)
{
	return a & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
}

static uintptr_t cur_break(void)
{
	long b = syscall(SYS_brk, 0);

	return b < 0 ? 0 : (uintptr_t)b;
}

static int populate(uintptr_t a, size_t n)
{
	uintptr_t lo = page_down(a);

	if (madvise((void *)lo, a + n - lo, MADV_POPULATE_WRITE) < 0)
		return -errno;
	return 0;
}

static bool overlaps(const struct region *r, uintptr_t a, size_t n)
{
	uintptr_t p = (uintptr_t)r->p;

	return r->len && p < a + n && a < p + r->len;
}

static void idle_wait(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += IDLE_NS;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&w.cv, &w.mu, &ts);
}

/* One step of the region at the head; called and returns locked. */
static void region_step(void)
{
	char *at;
	size_t n;
	int r;

	if (!w.cur.len) {
		w.cur = w.q[0];
		memmove(w.q, w.q + 1, --w.nq * sizeof(w.q[0]));
		w.cur_gone = false;
	}
	n = w.cur.len < STEP ? w.cur.len : STEP;
	at = w.cur.p;
	w.step_busy = true;
	pthread_mutex_unlock(&w.mu);
	r = populate((uintptr_t)at, n);
	pthread_mutex_lock(&w.mu);
	w.step_busy = false;
	pthread_cond_broadcast(&w.cv);
	if (r < 0 || w.cur_gone) {
		w.cur.len = 0;
		return;
	}
	w.bytes += n;
	w.cur.p += n;
	w.cur.len -= n;
}

/* One step of the heap below the break; false when it is all done. */
static bool heap_step(void)
{
	uintptr_t brk, a;
	size_t n;
	int r;

	if (w.heap_broken)
		return false;
	pthread_mutex_unlock(&w.mu);
	brk = cur_break();
	pthread_mutex_lock(&w.mu);
	if (!brk)
		return false;
	if (w.heap_done > brk) /* trimmed: it may grow again */
		w.heap_done = page_down(brk);
	if (w.heap_done >= brk)
		return false;
	a = w.heap_done;
	n = brk - a < STEP ? brk - a : STEP;
	pthread_mutex_unlock(&w.mu);
	/* Only the break moves the heap's end, and it never maps another
	 * program's memory: no warm_forget() for it. */
	r = populate(a, n);
	pthread_mutex_lock(&w.mu);
	if (r == -ENOMEM && cur_break() < a + n)
		return true; /* shrunk meanwhile: read the break again */
	if (r < 0) {
		w.heap_broken = true;
		return false;
	}
	w.bytes += n;
	w.heap_done = a + n;
	return true;
}

static void *warm_main(void *arg)
{
	double end = monotonic_seconds() + WARM_MAX_SECONDS;

	(void)arg;
	pthread_mutex_lock(&w.mu);
	while (!w.stopping && monotonic_seconds() < end) {
		if (w.cur.len || w.nq) {
			region_step();
			continue;
		}
		if (heap_step())
			continue;
		w.idle_gen++;
		pthread_cond_broadcast(&w.cv);
		idle_wait();
	}
	/* Out of time: the heap grows by need again (warm_stop() does so too). */
	if (!w.stopping)
		mallopt(M_TOP_PAD, TOP_PAD_DEFAULT);
	w.exited = true;
	w.cur.len = 0;
	w.nq = 0;
	pthread_cond_broadcast(&w.cv);
	pthread_mutex_unlock(&w.mu);
	return NULL;
}

/* Whether this kernel populates (MADV_POPULATE_WRITE, Linux 5.14). */
static bool can_populate(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	if (p == MAP_FAILED)
		return false;
	ok = madvise(p, pg, MADV_POPULATE_WRITE) == 0;
	munmap(p, pg);
	return ok;
}

bool warm_start(void)
{
	sigset_t all, old;
	int r;

	pthread_mutex_lock(&w.mu);
	if (w.running || !can_populate()) {
		pthread_mutex_unlock(&w.mu);
		return false;
	}
	w.stopping = w.exited = w.step_busy = w.cur_gone = w.heap_broken = false;
	w.nq = 0;
	w.cur.len = 0;
	w.bytes = 0;
	w.heap_done = page_down(cur_break());
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&w.th, NULL, warm_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	w.running = r == 0;
	pthread_mutex_unlock(&w.mu);
	if (r)
		return false;
	/* Grow the heap ahead of need, with the threshold the dynamic one
	 * would have reached (setting one setting ends its adjustment). */
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	mallopt(M_TOP_PAD, (int)WARM_HEAP_STEP);
	return true;
}

void warm_region(void *p, size_t len)
{
	if (!len)
		return;
	pthread_mutex_lock(&w.mu);
	if (w.running && !w.exited && w.nq < QUEUE) {
		w.q[w.nq++] = (struct region){ .p = p, .len = len };
		pthread_cond_broadcast(&w.cv);
	}
	pthread_mutex_unlock(&w.mu);
}

void warm_forget(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	size_t i, k;

	pthread_mutex_lock(&w.mu);
	if (!w.running) {
		pthread_mutex_unlock(&w.mu);
		return;
	}
	for (i = k = 0; i < w.nq; i++)
		if (!overlaps(&w.q[i], a, len))
			w.q[k++] = w.q[i];
	w.nq = k;
	if (overlaps(&w.cur, a, len)) {
		w.cur_gone = true;
		while (w.step_busy)
			pthread_cond_wait(&w.cv, &w.mu);
		w.cur.len = 0;
	}
	pthread_mutex_unlock(&w.mu);
}

void warm_drain(void)
{
	unsigned long g;

	pthread_mutex_lock(&w.mu);
	g = w.idle_gen;
	pthread_cond_broadcast(&w.cv);
	while (w.running && !w.exited && w.idle_gen == g)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
}

size_t warm_stop(void)
{
	size_t bytes;

	pthread_mutex_lock(&w.mu);
	if (!w.running) {
		pthread_mutex_unlock(&w.mu);
		return 0;
	}
	w.stopping = true;
	pthread_cond_broadcast(&w.cv);
	pthread_mutex_unlock(&w.mu);
	pthread_join(w.th, NULL);
	mallopt(M_TOP_PAD, TOP_PAD_DEFAULT);
	pthread_mutex_lock(&w.mu);
	w.running = false;
	bytes = w.bytes;
	pthread_mutex_unlock(&w.mu);
	return bytes;
}

bool warm_running(void)
{
	bool r;

	pthread_mutex_lock(&w.mu);
	r = w.running && !w.exited;
	pthread_mutex_unlock(&w.mu);
	return r;
}
