/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The epoll loop: io dispatch, timers (relative, absolute, disarm,
 * re-arm), the post hook once per batch, removal of sources from inside a
 * callback, quit codes.  Timer tests assert order and counts, never
 * durations; each run is bounded by a safety timer.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/loop.h"
#include "util.h"

struct ctx {
	struct loop *l;
	int pipe_a[2];
	int pipe_b[2];
	int io_a, io_b;
	int posts;
	int timer_fires;
	char order[16];
	size_t n_order;
	struct loop_timer *t1, *t2, *safety;
};

static int on_safety(struct loop *l, struct loop_timer *t, void *u)
{
	fail_msg("safety timer: the loop did not finish within 5 s");
	return 0;
}

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	assert_int_equal(loop_new(&c->l), 0);
	assert_int_equal(pipe(c->pipe_a), 0);
	assert_int_equal(pipe(c->pipe_b), 0);
	assert_int_equal(loop_timer_new(c->l, on_safety, c, &c->safety), 0);
	assert_int_equal(loop_timer_arm(c->safety, 5000000), 0);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	loop_free(c->l); /* frees the timers still registered */
	close(c->pipe_a[0]);
	close(c->pipe_a[1]);
	close(c->pipe_b[0]);
	close(c->pipe_b[1]);
	free(c);
	return 0;
}

static void on_post(struct loop *l, void *u)
{
	struct ctx *c = u;

	c->posts++;
}

static int io_a_quit(struct loop *l, int fd, uint32_t ev, void *u)
{
	struct ctx *c = u;
	char b;

	assert_true(ev & EPOLLIN);
	assert_int_equal(read(fd, &b, 1), 1);
	c->io_a++;
	loop_quit(l, 7);
	return 0;
}

static void test_io_and_post(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(loop_add_io(c->l, c->pipe_a[0], EPOLLIN, io_a_quit, c), 0);
	assert_int_equal(loop_add_io(c->l, c->pipe_a[0], EPOLLIN, io_a_quit, c), -EEXIST);
	loop_set_post(c->l, on_post, c);
	assert_int_equal(write(c->pipe_a[1], "x", 1), 1);
	assert_int_equal(loop_run(c->l), 7);
	assert_int_equal(c->io_a, 1);
	/* Once before the first wait; not after the batch that quit. */
	assert_int_equal(c->posts, 1);
	assert_int_equal(loop_del_io(c->l, c->pipe_a[0]), 0);
	assert_int_equal(loop_del_io(c->l, c->pipe_a[0]), -ENOENT);
	assert_int_equal(loop_mod_io(c->l, c->pipe_a[0], EPOLLIN), -ENOENT);
}

static int io_error(struct loop *l, int fd, uint32_t ev, void *u)
{
	return -EPROTO;
}

static void test_callback_error_stops(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(loop_add_io(c->l, c->pipe_a[0], EPOLLIN, io_error, c), 0);
	assert_int_equal(write(c->pipe_a[1], "x", 1), 1);
	assert_int_equal(loop_run(c->l), -EPROTO);
}

static int timer_record(struct loop *l, struct loop_timer *t, void *u)
{
	struct ctx *c = u;

	c->order[c->n_order++] = t == c->t1 ? '1' : '2';
	assert_false(loop_timer_armed(t));
	if (c->n_order == 2)
		loop_quit(l, 0);
	return 0;
}

static void test_timers_order(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(loop_timer_new(c->l, timer_record, c, &c->t1), 0);
	assert_int_equal(loop_timer_new(c->l, timer_record, c, &c->t2), 0);
	assert_false(loop_timer_armed(c->t1));
	/* t2 absolute 20ms from now, t1 relative 200ms: t2 first. */
	assert_int_equal(loop_timer_arm_at(c->t2, loop_now_usec() + 20000), 0);
	assert_int_equal(loop_timer_arm(c->t1, 200000), 0);
	assert_true(loop_timer_armed(c->t1));
	assert_int_equal(loop_run(c->l), 0);
	assert_int_equal(c->n_order, 2);
	assert_memory_equal(c->order, "21", 2);
}

static int timer_count_quit(struct loop *l, struct loop_timer *t, void *u)
{
	struct ctx *c = u;

	c->timer_fires++;
	loop_quit(l, 0);
	return 0;
}

static void test_timer_disarm_and_past_deadline(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(loop_timer_new(c->l, timer_count_quit, c, &c->t1), 0);
	assert_int_equal(loop_timer_new(c->l, timer_count_quit, c, &c->t2), 0);
	/* t1 armed then disarmed never fires; t2 with a deadline in the past
	 * fires at once. */
	assert_int_equal(loop_timer_arm(c->t1, 1000), 0);
	assert_int_equal(loop_timer_arm(c->t1, 0), 0);
	assert_false(loop_timer_armed(c->t1));
	assert_int_equal(loop_timer_arm_at(c->t2, 1), 0);
	assert_int_equal(loop_run(c->l), 0);
	assert_int_equal(c->timer_fires, 1);
	assert_false(loop_timer_armed(c->t2));
	/* Re-arm the same timer: fires again. */
	assert_int_equal(loop_timer_arm(c->t2, 1000), 0);
	assert_int_equal(loop_run(c->l), 0);
	assert_int_equal(c->timer_fires, 2);
}

/* Both pipes readable in one batch; whichever runs first removes the other. */
static int io_remove_other(struct loop *l, int fd, uint32_t ev, void *u)
{
	struct ctx *c = u;
	char b;

	assert_int_equal(read(fd, &b, 1), 1);
	if (fd == c->pipe_a[0]) {
		c->io_a++;
		loop_del_io(l, c->pipe_b[0]);
	} else {
		c->io_b++;
		loop_del_io(l, c->pipe_a[0]);
	}
	return 0;
}

static void on_post_quit(struct loop *l, void *u)
{
	struct ctx *c = u;

	if (++c->posts == 2)
		loop_quit(l, 0);
}

static void test_remove_during_batch(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(loop_add_io(c->l, c->pipe_a[0], EPOLLIN, io_remove_other, c), 0);
	assert_int_equal(loop_add_io(c->l, c->pipe_b[0], EPOLLIN, io_remove_other, c), 0);
	assert_int_equal(write(c->pipe_a[1], "x", 1), 1);
	assert_int_equal(write(c->pipe_b[1], "y", 1), 1);
	loop_set_post(c->l, on_post_quit, c);
	assert_int_equal(loop_run(c->l), 0);
	/* Exactly one ran: the other was removed before its pending event. */
	assert_int_equal(c->io_a + c->io_b, 1);
}

static int timer_free_self(struct loop *l, struct loop_timer *t, void *u)
{
	struct ctx *c = u;

	c->timer_fires++;
	loop_timer_free(t);
	c->t1 = NULL;
	loop_quit(l, 0);
	return 0;
}

static void test_timer_free_in_callback(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(loop_timer_new(c->l, timer_free_self, c, &c->t1), 0);
	assert_int_equal(loop_timer_arm(c->t1, 1), 0);
	assert_int_equal(loop_run(c->l), 0);
	assert_int_equal(c->timer_fires, 1);
	assert_null(c->t1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_io_and_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_callback_error_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timers_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_disarm_and_past_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_during_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_free_in_callback, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
