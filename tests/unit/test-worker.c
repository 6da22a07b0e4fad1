/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: sys/worker.c, a job off the loop thread. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/loop.h"
#include "sys/worker.h"
#include "glibcmalloc.h"

struct ctx {
	struct loop *loop;
	struct worker *w;
	pthread_t loop_thread;
	pthread_t job_thread;
	int ticks; /* timer callbacks while the job ran */
	int ticks_at_done;
	bool done;
	bool done_on_loop_thread;
};

static void job(void *userdata)
{
	struct ctx *c = userdata;
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	c->job_thread = pthread_self();
	nanosleep(&ts, NULL); /* a write that takes its time */
}

static void job_done(void *userdata)
{
	struct ctx *c = userdata;

	c->done = true;
	c->ticks_at_done = c->ticks;
	c->done_on_loop_thread = pthread_equal(pthread_self(), c->loop_thread);
	loop_quit(c->loop, 0);
}

static int tick(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct ctx *c = userdata;

	c->ticks++;
	return loop_timer_arm(t, 10 * 1000);
}

/* The loop keeps dispatching while the job runs; done comes on the loop. */
static void test_job_off_loop(void **state)
{
	struct ctx c = { .loop_thread = pthread_self() };
	struct loop_timer *t;

	assert_int_equal(loop_new(&c.loop), 0);
	assert_int_equal(worker_new(c.loop, &c.w), 0);
	assert_int_equal(loop_timer_new(c.loop, tick, &c, &t), 0);
	assert_int_equal(loop_timer_arm(t, 10 * 1000), 0);
	assert_false(worker_busy(c.w));
	assert_int_equal(worker_start(c.w, job, job_done, &c), 0);
	assert_true(worker_busy(c.w));
	assert_int_equal(worker_start(c.w, job, job_done, &c), -EBUSY);
	assert_int_equal(loop_run(c.loop), 0);
	assert_true(c.done);
	assert_false(worker_busy(c.w));
	assert_true(c.done_on_loop_thread);
	assert_false(pthread_equal(c.job_thread, c.loop_thread));
	/* 300 ms of job, a 10 ms timer: it ran meanwhile (any count > 2 shows
	 * the loop was not blocked; no timing bound is asserted). */
	assert_true(c.ticks_at_done > 2);

	/* a second job after the first */
	c.done = false;
	assert_int_equal(worker_start(c.w, job, job_done, &c), 0);
	assert_int_equal(loop_run(c.loop), 0);
	assert_true(c.done);
	loop_timer_free(t);
	worker_free(c.w);
	loop_free(c.loop);
}

/* Freeing a worker with a job running waits for it; done is not called. */
static void test_free_while_busy(void **state)
{
	struct ctx c = { .loop_thread = pthread_self() };

	assert_int_equal(loop_new(&c.loop), 0);
	assert_int_equal(worker_new(c.loop, &c.w), 0);
	assert_int_equal(worker_start(c.w, job, job_done, &c), 0);
	worker_free(c.w);
	assert_false(c.done);
	loop_free(c.loop);
	worker_free(NULL);
}

struct arena_ctx {
	struct loop *loop;
	void *blocks[512];
};

static void alloc_job(void *userdata)
{
	struct arena_ctx *c = userdata;

	for (size_t i = 0; i < 512; i++)
		c->blocks[i] = malloc(1024);
}

static void alloc_done(void *userdata)
{
	loop_quit(((struct arena_ctx *)userdata)->loop, 0);
}

/* Blocks allocated on the job's thread come from the process's one
 * arena: malloc_info() lists a single heap. */
static void test_one_arena(void **state)
{
	struct arena_ctx c = { 0 };
	struct worker *w;
	char *xml = NULL;
	size_t n = 0;
	int heaps = 0;

	if (!glibc_malloc())
		skip();
	assert_int_equal(loop_new(&c.loop), 0);
	assert_int_equal(worker_new(c.loop, &w), 0);
	assert_int_equal(worker_start(w, alloc_job, alloc_done, &c), 0);
	assert_int_equal(loop_run(c.loop), 0);
	FILE *f = open_memstream(&xml, &n);
	assert_non_null(f);
	assert_int_equal(malloc_info(0, f), 0);
	fclose(f);
	for (const char *p = xml; (p = strstr(p, "<heap nr=")); p++)
		heaps++;
	free(xml);
	for (size_t i = 0; i < 512; i++) {
		assert_non_null(c.blocks[i]);
		free(c.blocks[i]);
	}
	worker_free(w);
	loop_free(c.loop);
	assert_int_equal(heaps, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_off_loop),
		cmocka_unit_test(test_free_while_busy),
		cmocka_unit_test(test_one_arena),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
