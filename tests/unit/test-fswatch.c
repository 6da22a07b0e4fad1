/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inotify watching, driven through the real loop in a temp dir.  Every
 * wait is bounded by a 5 s safety timer that fails the test; no assertion
 * depends on timing: inotify queues events synchronously with the file
 * operation, and a "marker" file written last proves that every earlier
 * event has been processed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sys/fswatch.h"
#include "sys/loop.h"
#include "util.h"

struct ctx {
	char dir[64];
	char marker[128];
	struct loop *loop;
	struct fswatch *w;
	struct loop_timer *safety;
	char *reports[64];
	size_t n_reports;
	bool timed_out;
	const char *wait_for; /* quit when this path is reported */
};

static void on_change(struct fswatch *w, const char *path, void *tag, void *userdata)
{
	struct ctx *c = userdata;

	assert_true(c->n_reports < ARRAY_SIZE(c->reports));
	c->reports[c->n_reports++] = strdup(path);
	if (c->wait_for && streq(path, c->wait_for))
		loop_quit(c->loop, 0);
}

static int on_safety(struct loop *l, struct loop_timer *t, void *userdata)
{
	struct ctx *c = userdata;

	c->timed_out = true;
	loop_quit(l, 0);
	return 0;
}

static void clear_reports(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->n_reports; i++)
		free(c->reports[i]);
	c->n_reports = 0;
}

static size_t count_reports(const struct ctx *c, const char *path)
{
	size_t i, n = 0;

	for (i = 0; i < c->n_reports; i++)
		if (streq(c->reports[i], path))
			n++;
	return n;
}

/* Run the loop until `path` is reported (fails after 5 s). */
static void wait_report(struct ctx *c, const char *path)
{
	c->wait_for = path;
	assert_int_equal(loop_timer_arm(c->safety, 5 * 1000000ULL), 0);
	assert_int_equal(loop_run(c->loop), 0);
	loop_timer_arm(c->safety, 0);
	if (c->timed_out)
		fail_msg("'%s' was not reported within 5 s", path);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Write the marker and wait for it: every earlier event is then handled. */
static void sync_marker(struct ctx *c)
{
	write_file(c->marker, "m");
	wait_report(c, c->marker);
}

/*
 * Watch path and forget what was queued before: events of the shared parent
 * directory watch may predate the path's registration.
 */
static void add_flushed(struct ctx *c, const char *path)
{
	assert_int_equal(fswatch_add(c->w, path, NULL), 0);
	sync_marker(c);
	clear_reports(c);
}

static void path_in(struct ctx *c, char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", c->dir, name);
}

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	strcpy(c->dir, "/tmp/svcnat-inotify-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	path_in(c, c->marker, sizeof(c->marker), "marker");
	assert_int_equal(loop_new(&c->loop), 0);
	assert_int_equal(fswatch_new(c->loop, on_change, c, &c->w), 0);
	assert_int_equal(loop_timer_new(c->loop, on_safety, c, &c->safety), 0);
	assert_int_equal(fswatch_add(c->w, c->marker, NULL), 0);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	char cmd[128];

	clear_reports(c);
	fswatch_free(c->w);
	loop_timer_free(c->safety);
	loop_free(c->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	assert_int_equal(system(cmd), 0);
	free(c);
	return 0;
}

static void test_rewrite_in_place(void **state)
{
	struct ctx *c = *state;
	char p[128];

	path_in(c, p, sizeof(p), "a.json");
	write_file(p, "{}");
	assert_int_equal(fswatch_add(c->w, p, NULL), 0);
	write_file(p, "{\"kind\": \"List\"}");
	wait_report(c, p);
	clear_reports(c);
	/* Append through an fd kept open: reported at close. */
	int fd = open(p, O_WRONLY | O_APPEND);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, " ", 1), 1);
	sync_marker(c);
	assert_int_equal(count_reports(c, p), 0);
	close(fd);
	wait_report(c, p);
}

static void test_rename_over(void **state)
{
	struct ctx *c = *state;
	char p[128], tmp[128];

	path_in(c, p, sizeof(p), "a.json");
	path_in(c, tmp, sizeof(tmp), ".a.json.swp");
	write_file(p, "{}");
	add_flushed(c, p);
	write_file(tmp, "{\"new\": 1}");
	sync_marker(c);
	assert_int_equal(count_reports(c, p), 0); /* the temp file is not ours */
	assert_int_equal(rename(tmp, p), 0);
	wait_report(c, p);
	/* The new inode is watched: rewriting it in place is seen too. */
	clear_reports(c);
	write_file(p, "{\"newer\": 1}");
	wait_report(c, p);
	/* And a second rename over it. */
	clear_reports(c);
	write_file(tmp, "{}");
	assert_int_equal(rename(tmp, p), 0);
	wait_report(c, p);
}

static void test_delete_and_create_later(void **state)
{
	struct ctx *c = *state;
	char p[128];
	int fd;

	path_in(c, p, sizeof(p), "later.json");
	assert_int_equal(fswatch_add(c->w, p, NULL), 0); /* does not exist yet */
	/* Created and half written: not reported until closed. */
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{", 1), 1);
	sync_marker(c);
	assert_int_equal(count_reports(c, p), 0);
	assert_int_equal(write(fd, "}", 1), 1);
	close(fd);
	wait_report(c, p);
	clear_reports(c);
	assert_int_equal(unlink(p), 0);
	wait_report(c, p);
	clear_reports(c);
	write_file(p, "{}");
	wait_report(c, p);
}

static void test_rename_away_and_chmod(void **state)
{
	struct ctx *c = *state;
	char p[128], other[128];

	path_in(c, p, sizeof(p), "a.json");
	path_in(c, other, sizeof(other), "b.json");
	write_file(p, "{}");
	assert_int_equal(fswatch_add(c->w, p, NULL), 0);
	assert_int_equal(chmod(p, 0666), 0);
	wait_report(c, p);
	clear_reports(c);
	assert_int_equal(rename(p, other), 0);
	wait_report(c, p);
	clear_reports(c);
	/* Writing the renamed file does not concern the watched path. */
	write_file(other, "{\"x\": 1}");
	sync_marker(c);
	assert_int_equal(count_reports(c, p), 0);
}

static void test_coalesced(void **state)
{
	struct ctx *c = *state;
	char p[128];
	int i;

	path_in(c, p, sizeof(p), "a.json");
	write_file(p, "{}");
	add_flushed(c, p);
	/* Five writes queued before the loop reads: one report. */
	for (i = 0; i < 5; i++)
		write_file(p, "{}");
	wait_report(c, p);
	assert_int_equal(count_reports(c, p), 1);
}

static void test_directory(void **state)
{
	struct ctx *c = *state;
	char d[128], a[160], t[160], x[160], out[128];

	path_in(c, d, sizeof(d), "conf.d");
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(fswatch_add(c->w, d, NULL), 0);
	snprintf(a, sizeof(a), "%s/a.json", d);
	snprintf(t, sizeof(t), "%s/notes.txt", d);
	write_file(a, "{}");
	wait_report(c, d);
	clear_reports(c);
	write_file(t, "not json");
	sync_marker(c);
	assert_int_equal(count_reports(c, d), 0);
	/* Rename in from outside, rename out, delete. */
	path_in(c, out, sizeof(out), "x.json");
	snprintf(x, sizeof(x), "%s/x.json", d);
	write_file(out, "{}");
	assert_int_equal(rename(out, x), 0);
	wait_report(c, d);
	clear_reports(c);
	assert_int_equal(rename(x, out), 0);
	wait_report(c, d);
	clear_reports(c);
	assert_int_equal(unlink(a), 0);
	wait_report(c, d);
}

static void test_directory_created_later(void **state)
{
	struct ctx *c = *state;
	char d[128], a[160];

	path_in(c, d, sizeof(d), "later.d");
	assert_int_equal(fswatch_add(c->w, d, NULL), 0);
	assert_int_equal(mkdir(d, 0755), 0);
	wait_report(c, d);
	clear_reports(c);
	snprintf(a, sizeof(a), "%s/a.json", d);
	write_file(a, "{}");
	wait_report(c, d);
	clear_reports(c);
	assert_int_equal(unlink(a), 0);
	wait_report(c, d);
	clear_reports(c);
	assert_int_equal(rmdir(d), 0);
	wait_report(c, d);
}

static void test_symlink(void **state)
{
	struct ctx *c = *state;
	char real_dir[128], target[160], target2[160], link[128], tmplink[128];

	path_in(c, real_dir, sizeof(real_dir), "data");
	assert_int_equal(mkdir(real_dir, 0755), 0);
	snprintf(target, sizeof(target), "%s/v1.json", real_dir);
	snprintf(target2, sizeof(target2), "%s/v2.json", real_dir);
	path_in(c, link, sizeof(link), "svc.json");
	path_in(c, tmplink, sizeof(tmplink), ".svc.json.tmp");
	write_file(target, "{}");
	write_file(target2, "{}");
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(fswatch_add(c->w, link, NULL), 0);
	/* The target rewritten in place, in another directory. */
	write_file(target, "{\"v\": 1}");
	wait_report(c, link);
	clear_reports(c);
	/* The link swapped atomically, as a ConfigMap volume does. */
	assert_int_equal(symlink(target2, tmplink), 0);
	assert_int_equal(rename(tmplink, link), 0);
	wait_report(c, link);
	clear_reports(c);
	write_file(target2, "{\"v\": 2}");
	wait_report(c, link);
}

static void test_add_errors(void **state)
{
	struct ctx *c = *state;
	char p[128];

	path_in(c, p, sizeof(p), "no-such-dir/a.json");
	assert_int_equal(fswatch_add(c->w, p, NULL), -ENOENT);
	assert_int_equal(fswatch_add(c->w, "", NULL), -EINVAL);
	assert_int_equal(fswatch_add(c->w, "/tmp/..", NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rewrite_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_and_create_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_away_and_chmod, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coalesced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_created_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
