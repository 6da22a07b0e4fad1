/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: the file source (sources/file.c) as the daemon uses it: the
 * last good content per file of a directory, the mode check on every file
 * read (symlink targets included), files that are no regular files.
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

#include "core/diag.h"
#include "core/model.h"
#include "sources/decode.h"
#include "sources/file.h"
#include "util.h"

static char dir[64];

static void put(const char *name, const char *text, mode_t mode)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

/* A legacy-format file with one service per name, port 80. */
static void put_svc(const char *file, const char *svc, mode_t mode)
{
	char text[256];

	snprintf(text, sizeof(text), "{\"Services\":[{\"Name\":\"%s\",\"Port\":80}]}", svc);
	put(file, text, mode);
}

/* The content's service names, space-separated. */
static const char *names(const struct file_source *s)
{
	static char buf[512];
	const struct decoded *c = file_source_content(s);
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < c->n_services; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "",
				      c->services[i]->name);
	return buf;
}

static bool diags_have(const struct diag_list *l, const char *needle)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		_cleanup_free_ char *t = diag_format(&l->items[i]);

		if (t && strstr(t, needle))
			return true;
	}
	return false;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test-file-XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int reload(struct file_source *s, struct diag_list *dl)
{
	diag_list_done(dl);
	diag_list_init(dl);
	return file_source_reload(s, dl);
}

/* One truncated file does not freeze its directory: a valid file added
 * later is read, and the truncated one keeps its last good content. */
static void test_dir_last_good_per_file(void **state)
{
	struct file_source *s;
	struct diag_list dl;

	diag_list_init(&dl);
	put_svc("a.json", "a", 0644);
	put_svc("b.json", "b", 0644);
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(names(s), "a b");
	assert_true(file_source_complete(s));

	put("a.json", "{\"Services\":[{\"Name\":\"a2\"", 0644);
	assert_int_equal(reload(s, &dl), 1);
	assert_true(diags_have(&dl, "/a.json: not JSON"));
	assert_string_equal(names(s), "a b");

	put_svc("c.json", "c", 0644);
	assert_int_equal(reload(s, &dl), 1);
	assert_string_equal(names(s), "a b c");
	assert_true(file_source_complete(s));

	/* b changes while a is still broken */
	put_svc("b.json", "b2", 0644);
	assert_int_equal(reload(s, &dl), 1);
	assert_string_equal(names(s), "a b2 c");

	/* a fixed; then deleted: its items go */
	put_svc("a.json", "a3", 0644);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(names(s), "a3 b2 c");
	assert_int_equal(unlink(strcat(strcpy((char[128]){ 0 }, dir), "/a.json")), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(names(s), "b2 c");

	file_source_free(s);
	diag_list_done(&dl);
}

/* A file never read successfully has no content: the source is not complete. */
static void test_dir_never_good(void **state)
{
	struct file_source *s;
	struct diag_list dl;

	diag_list_init(&dl);
	put_svc("a.json", "a", 0644);
	put("b.json", "[", 0644);
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 1);
	assert_string_equal(names(s), "a");
	assert_false(file_source_complete(s));
	put_svc("b.json", "b", 0644);
	assert_int_equal(reload(s, &dl), 0);
	assert_true(file_source_complete(s));
	file_source_free(s);
	diag_list_done(&dl);
}

/* A single file rejected whole keeps the source's content; reload < 0. */
static void test_file_last_good(void **state)
{
	struct file_source *s;
	struct diag_list dl;
	char p[128];

	diag_list_init(&dl);
	put_svc("x.json", "x", 0644);
	snprintf(p, sizeof(p), "%s/x.json", dir);
	assert_int_equal(file_source_new(p, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	put("x.json", "{", 0644);
	assert_int_equal(reload(s, &dl), -EINVAL);
	assert_string_equal(names(s), "x");
	file_source_free(s);
	diag_list_done(&dl);
}

/* Every file read is checked: inside a directory, and a symlink's target. */
static void test_mode_check(void **state)
{
	char p[128], t[128], sub[128];
	struct file_source *s;
	struct diag_list dl;

	diag_list_init(&dl);
	snprintf(sub, sizeof(sub), "%s/conf", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	put_svc("conf/a.json", "a", 0644);
	put_svc("conf/ww.json", "ww", 0666);
	put_svc("conf/gw.json", "gw", 0664);
	/* group-writable with a group other than root's: refused (as root, give
	 * it group 1; otherwise it has the test's group, not 0) */
	if (geteuid() == 0) {
		snprintf(t, sizeof(t), "%s/conf/gw.json", dir);
		assert_int_equal(chown(t, 0, 1), 0);
	}
	put_svc("conf/rg.json", "rg", 0664); /* root's group (as root): accepted */
	put_svc("target.json", "viasymlink", 0646);
	snprintf(t, sizeof(t), "%s/target.json", dir);
	snprintf(p, sizeof(p), "%s/conf/l.json", dir);
	assert_int_equal(symlink(t, p), 0);

	assert_int_equal(file_source_new(sub, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), getegid() == 0 ? 3 : 4);
	assert_true(diags_have(&dl, "/conf/gw.json: writable by users other than its owner "
				    "(mode 0664): refusing it"));
	assert_true(diags_have(&dl,
			       "/conf/ww.json: writable by users other than its owner "
			       "(mode 0666): refusing it"));
	assert_true(diags_have(&dl,
			       "/conf/l.json: writable by users other than its owner "
			       "(mode 0646): refusing it"));
	assert_string_equal(names(s), getegid() == 0 ? "a rg" : "a");
	file_source_free(s);

	/* warn mode: read, with a warning */
	assert_int_equal(file_source_new(sub, FILE_MODE_WARN, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_true(diags_have(&dl,
			       "/conf/ww.json: writable by users other than its owner "
			       "(mode 0666): svcnat would refuse it when writing rules"));
	file_source_free(s);

	/* --config naming a symlink: its target is checked */
	assert_int_equal(file_source_new(p, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), -EPERM);
	assert_string_equal(names(s), "");
	file_source_free(s);

	/* the directory itself */
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(file_source_new(sub, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), -EPERM);
	file_source_free(s);
	diag_list_done(&dl);
}

/* Not a regular file or a directory: refused at once, never waited on. */
static void test_odd_types(void **state)
{
	static const struct {
		const char *name;
		int err;
		const char *msg;
	} cases[] = {
		{ "fifo.json", -EINVAL, "fifo.json: not a regular file or a directory" },
		{ "zero.json", -EINVAL, "zero.json: not a regular file or a directory" },
		{ "loop.json", -ELOOP, "loop.json: cannot open: Too many levels of symbolic links" },
		{ "dangling.json", -ENOENT, "dangling.json: cannot open: No such file or directory" },
	};
	char p[128], q[128];
	struct file_source *s;
	struct diag_list dl;
	size_t i;

	diag_list_init(&dl);
	snprintf(p, sizeof(p), "%s/fifo.json", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/zero.json", dir);
	assert_int_equal(symlink("/dev/zero", p), 0);
	snprintf(p, sizeof(p), "%s/loop.json", dir);
	snprintf(q, sizeof(q), "%s/loop2.json", dir);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(symlink(p, q), 0);
	snprintf(p, sizeof(p), "%s/dangling.json", dir);
	assert_int_equal(symlink("/nonexistent/x.json", p), 0);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, cases[i].name);
		assert_int_equal(file_source_new(p, FILE_MODE_REFUSE, &s), 0);
		assert_int_equal(reload(s, &dl), cases[i].err);
		if (!diags_have(&dl, cases[i].msg)) {
			print_error("%s: no diag '%s'\n", cases[i].name, cases[i].msg);
			fail();
		}
		file_source_free(s);
	}
	/* in a directory: the FIFO and the device are skipped, the loop and the
	 * dangling link are rejected (no content) */
	put_svc("ok.json", "ok", 0644);
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 3);
	assert_true(diags_have(&dl, "fifo.json: not a regular file; ignored"));
	assert_true(diags_have(&dl, "zero.json: not a regular file; ignored"));
	assert_string_equal(names(s), "ok");
	assert_false(file_source_complete(s));
	file_source_free(s);
	diag_list_done(&dl);
}

/* The same key in two files: the earlier file wins, the later is named. */
static void test_dir_duplicates(void **state)
{
	struct file_source *s;
	struct diag_list dl;

	diag_list_init(&dl);
	put_svc("10-a.json", "same", 0644);
	put("20-b.json", "{\"Services\":[{\"Name\":\"same\",\"Port\":81}]}", 0644);
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(names(s), "same");
	/* the earlier file's: port 80 */
	assert_int_equal(file_source_content(s)->services[0]->ports[0].node_port, 80);
	assert_int_equal(file_source_content(s)->n_slices, 1);
	assert_true(diags_have(&dl,
			       "/20-b.json: default/same: defined more than once; "
			       "the later definition is ignored"));
	assert_true(diags_have(&dl, "/20-b.json: default/same: defined more than once"));
	file_source_free(s);
	diag_list_done(&dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dir_last_good_per_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_never_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_last_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_odd_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_duplicates, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
