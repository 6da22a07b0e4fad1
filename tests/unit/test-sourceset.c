/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sourceset: the one "every source read once" gate over files, etcd and
 * the API mixed (one failing), which sources hold /healthz back, loads in
 * three steps, SIGHUP, the sources' events and /healthz members.  Fake
 * sources: no file, no network.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sources/sourceset.h"
#include "util.h"

struct fake {
	struct source base; /* first */
	bool ready;
	int next_load;   /* what load() returns */
	int loads, loads_all, commits, starts, rereads;
	int *freed;
};

static int fake_start(struct source *s)
{
	((struct fake *)s)->starts++;
	return 0;
}

/* A network source: SIGHUP relists by itself. */
static bool fake_reread_net(struct source *s)
{
	((struct fake *)s)->rereads++;
	return false;
}

static bool fake_reread_file(struct source *s)
{
	((struct fake *)s)->rereads++;
	return true;
}

static int fake_load(struct source *s, bool all, struct diag_list *d)
{
	struct fake *f = (struct fake *)s;

	f->loads++;
	f->loads_all += all;
	if (f->next_load < 0)
		diag_add(d, DIAG_ERROR, s->name, NULL, NULL, "unreadable");
	return f->next_load;
}

static int fake_commit(struct source *s, int r, struct diag_list *d)
{
	struct fake *f = (struct fake *)s;

	f->commits++;
	if (r >= 0)
		f->ready = true;
	return r;
}

static bool fake_ready(const struct source *s)
{
	return ((const struct fake *)s)->ready;
}

static size_t fake_health(const struct source *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "\"%s\": {}", s->name);

	return (size_t)n < len ? (size_t)n : len - 1;
}

static void fake_free(struct source *s)
{
	struct fake *f = (struct fake *)s;

	if (f->freed)
		(*f->freed)++;
	free(f);
}

static const struct source_ops file_ops = {
	.kind = "file",
	.gates_health = true,
	.reread = fake_reread_file,
	.load = fake_load,
	.commit = fake_commit,
	.ready = fake_ready,
	.free = fake_free,
};

static const struct source_ops net_ops = {
	.kind = "net",
	.start = fake_start,
	.reread = fake_reread_net,
	.ready = fake_ready,
	.health = fake_health,
	.free = fake_free,
};

static struct fake *fake_new(const struct source_ops *ops, const char *name, int *freed)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	source_init(&f->base, ops, name);
	f->freed = freed;
	return f;
}

/* What the sources said, one line each: "LEVEL errors line". */
struct log {
	char text[2048];
};

static void on_event(const struct source *s, const struct source_event *ev, void *userdata)
{
	struct log *l = userdata;
	_cleanup_free_ char *line = ev->diag ? diag_format(ev->diag) : NULL;
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof(l->text) - n, "%d %g %s\n", (int)ev->severity, ev->errors,
		 line ? line : "-");
}

static void test_gate(void **state)
{
	struct log log = { "" };
	struct sourceset *ss;
	struct fake *a, *b, *etcd, *api;
	size_t n;
	int freed = 0;

	assert_int_equal(sourceset_new(on_event, &log, &ss), 0);
	/* Nothing to wait for. */
	assert_true(sourceset_ready(ss));
	assert_null(sourceset_waiting(ss, &n));
	assert_int_equal(n, 0);

	a = fake_new(&file_ops, "a.json", &freed);
	b = fake_new(&file_ops, "b.d", &freed);
	etcd = fake_new(&net_ops, "etcd", &freed);
	api = fake_new(&net_ops, "api", &freed);
	b->next_load = -ENOENT; /* not there yet */
	assert_int_equal(sourceset_add(ss, &a->base), 0);
	assert_int_equal(sourceset_add(ss, &b->base), 0);
	assert_int_equal(sourceset_add(ss, &etcd->base), 0);
	assert_int_equal(sourceset_add(ss, &api->base), 0);
	assert_int_equal(sourceset_size(ss), 4);
	assert_ptr_equal(sourceset_get(ss, 2), &etcd->base);
	assert_null(sourceset_get(ss, 4));

	/* At start: files read on the loop, then the network sources start. */
	assert_int_equal(sourceset_read(ss, &a->base), 0);
	assert_int_equal(sourceset_read(ss, &b->base), -ENOENT);
	assert_int_equal(sourceset_read(ss, &etcd->base), 0); /* no load(): nothing */
	assert_int_equal(etcd->commits, 0);
	assert_int_equal(sourceset_start(ss), 0);
	assert_int_equal(etcd->starts, 1);
	assert_int_equal(api->starts, 1);
	/* b's load diag went out as an event, at error. */
	assert_string_equal(log.text, "3 0 b.d: unreadable\n");

	/* One file unread, both network sources unlisted: no sync; /healthz
	 * waits only for the file. */
	assert_false(sourceset_ready(ss));
	assert_ptr_equal(sourceset_waiting(ss, &n), &b->base);
	assert_int_equal(n, 1);

	/* The file appears: read on the worker. */
	b->next_load = 0;
	sourceset_mark_dirty(&b->base);
	assert_true(sourceset_dirty(ss));
	assert_int_equal(sourceset_loads_begin(ss), 1);
	assert_false(sourceset_dirty(ss));
	sourceset_loads_run(ss);
	assert_int_equal(b->commits, 1); /* not before loads_finish() */
	sourceset_loads_finish(ss);
	assert_int_equal(b->commits, 2);
	assert_null(sourceset_waiting(ss, &n));
	assert_int_equal(n, 0);
	/* /healthz no longer waits, but the sync still does: etcd and the API. */
	assert_false(sourceset_ready(ss));
	etcd->ready = true;
	assert_false(sourceset_ready(ss)); /* the API fails on */
	api->ready = true;
	assert_true(sourceset_ready(ss));

	/* A file rejected later stays ready (it keeps its last good content). */
	a->next_load = -EINVAL;
	sourceset_mark_dirty(&a->base);
	assert_int_equal(sourceset_loads_begin(ss), 1);
	sourceset_loads_run(ss);
	sourceset_loads_finish(ss);
	assert_true(sourceset_ready(ss));

	sourceset_free(ss);
	assert_int_equal(freed, 4);
}

static void test_reread(void **state)
{
	struct sourceset *ss;
	struct fake *f, *net;

	assert_int_equal(sourceset_new(NULL, NULL, &ss), 0);
	f = fake_new(&file_ops, "f.json", NULL);
	net = fake_new(&net_ops, "api", NULL);
	assert_int_equal(sourceset_add(ss, &f->base), 0);
	assert_int_equal(sourceset_add(ss, &net->base), 0);
	assert_int_equal(sourceset_loads_begin(ss), 0); /* nothing dirty */

	/* SIGHUP: the network source relists itself; the file is loaded,
	 * every file of it, once. */
	sourceset_reread(ss);
	assert_int_equal(net->rereads, 1);
	assert_int_equal(f->rereads, 1);
	assert_true(sourceset_dirty(ss));
	assert_int_equal(sourceset_loads_begin(ss), 1);
	sourceset_loads_run(ss);
	sourceset_loads_finish(ss);
	assert_int_equal(f->loads, 1);
	assert_int_equal(f->loads_all, 1);
	/* The next change reads only what changed. */
	sourceset_mark_dirty(&f->base);
	assert_int_equal(sourceset_loads_begin(ss), 1);
	sourceset_loads_run(ss);
	sourceset_loads_finish(ss);
	assert_int_equal(f->loads, 2);
	assert_int_equal(f->loads_all, 1);
	/* A change while the worker loads goes at the next round. */
	sourceset_mark_dirty(&f->base);
	assert_int_equal(sourceset_loads_begin(ss), 1);
	sourceset_mark_dirty(&f->base);
	sourceset_loads_run(ss);
	sourceset_loads_finish(ss);
	assert_true(sourceset_dirty(ss));
	sourceset_free(ss);
}

static void test_events_and_health(void **state)
{
	struct log log = { "" };
	struct sourceset *ss;
	struct fake *f, *e, *k;
	char buf[64];

	assert_int_equal(sourceset_new(on_event, &log, &ss), 0);
	f = fake_new(&file_ops, "f.json", NULL);
	e = fake_new(&net_ops, "etcd", NULL);
	k = fake_new(&net_ops, "api", NULL);
	assert_int_equal(sourceset_add(ss, &f->base), 0);
	assert_int_equal(sourceset_add(ss, &e->base), 0);
	assert_int_equal(sourceset_add(ss, &k->base), 0);

	source_emit(&e->base, SOURCE_WARNING, 1, "lost %s", "member");
	source_emit(&f->base, SOURCE_DEBUG, 2, NULL);
	assert_string_equal(log.text, "2 1 etcd: lost member\n0 2 -\n");

	/* The members of those with one, joined; the file has none. */
	sourceset_health(ss, buf, sizeof(buf));
	assert_string_equal(buf, "\"etcd\": {}, \"api\": {}");
	/* Cut short, never past the buffer. */
	sourceset_health(ss, buf, 16);
	assert_true(strlen(buf) < 16);
	sourceset_free(ss);
}

static void test_times(void **state)
{
	struct sourceset *ss;
	struct fake *f;
	double load = -1, commit = -1;

	assert_int_equal(sourceset_new(NULL, NULL, &ss), 0);
	f = fake_new(&file_ops, "f.json", NULL);
	assert_int_equal(sourceset_add(ss, &f->base), 0);
	assert_int_equal(sourceset_read(ss, &f->base), 0);
	sourceset_take_times(ss, &load, &commit);
	assert_true(load >= 0 && commit >= 0);
	sourceset_take_times(ss, &load, &commit);
	assert_true(load == 0 && commit == 0);
	sourceset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_reread),
		cmocka_unit_test(test_events_and_health),
		cmocka_unit_test(test_times),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
