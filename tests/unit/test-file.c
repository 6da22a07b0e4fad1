/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: the file source (sources/file.c) as the daemon uses it: the
 * last good content per file of a directory, the mode check on every file
 * read (symlink targets included), files that are no regular files, and
 * the deltas: only changed files read again, only their objects handed on.
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
#include "sources/decode/decode.h"
#include "sources/file/file.h"
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
static const char *names(struct file_source *s)
{
	static char buf[512];
	struct decoded c = { 0 };
	size_t i, o = 0;

	assert_int_equal(file_source_content(s, &c), 0);
	buf[0] = '\0';
	for (i = 0; i < c.n_services; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "",
				      c.services[i]->name);
	decoded_done(&c);
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

static int svc_name_cmp(const void *a, const void *b)
{
	return strcmp((*(struct service *const *)a)->name, (*(struct service *const *)b)->name);
}

/* The delta since the last hand-over, as "+name" (put) and "-name"
 * (removed) service names ("+@name": a slice alone), "*" first when it is the whole content; then
 * handed over. */
static const char *delta(struct file_source *s)
{
	static char buf[4096];
	struct file_delta d = { 0 };
	size_t i, o = 0;
	bool all;

	assert_int_equal(file_source_delta(s, &d, &all), 0);
	qsort_safe(d.put_services, d.n_put_services, sizeof(*d.put_services), svc_name_cmp);
	qsort_safe(d.del_services, d.n_del_services, sizeof(*d.del_services), svc_name_cmp);
	buf[0] = '\0';
	if (all)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "*");
	for (i = 0; i < d.n_put_services; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s+%s", o ? " " : "",
				      d.put_services[i]->name);
	for (i = 0; i < d.n_del_services; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s-%s", o ? " " : "",
				      d.del_services[i]->name);
	/* A legacy service comes with its slice, named alike: "+@name" when
	 * only the slice is there. */
	for (i = 0; i < d.n_put_slices; i++) {
		bool with = false;

		for (size_t j = 0; j < d.n_put_services; j++)
			with |= streq(d.put_services[j]->name, d.put_slices[i]->name);
		if (!with)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s+@%s", o ? " " : "",
					      d.put_slices[i]->name);
	}
	assert_int_equal(d.n_del_slices, d.n_del_services);
	file_source_accept(s, all);
	file_delta_done(&d);
	return buf;
}

/* Write name by a rename over it (a new inode), as editors do. */
static void put_renamed(const char *name, const char *text)
{
	char tmp[64];

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	put(tmp, text, 0644);
	{
		char a[256], b[256];

		snprintf(a, sizeof(a), "%s/%s", dir, tmp);
		snprintf(b, sizeof(b), "%s/%s", dir, name);
		assert_int_equal(rename(a, b), 0);
	}
}

/* Files changed less than 0.1 s before they are read are read again next
 * time (their timestamps may not show a second write yet): let them age. */
static void age(void)
{
	usleep(150 * 1000);
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
	{
		struct decoded c = { 0 };

		assert_int_equal(file_source_content(s, &c), 0);
		assert_int_equal(c.services[0]->ports[0].node_port, 80);
		assert_int_equal(c.n_slices, 1);
		decoded_done(&c);
	}
	assert_true(diags_have(&dl,
			       "/20-b.json: default/same: defined more than once; "
			       "the later definition is ignored"));
	assert_true(diags_have(&dl, "/20-b.json: default/same: defined more than once"));
	file_source_free(s);
	diag_list_done(&dl);
}

/* Many files, one changed: only it is read again, and only its objects
 * are handed on; a removed file removes exactly its objects; a file
 * renamed over another counts as changed; a rejected file changes nothing. */
static void test_dir_deltas(void **state)
{
	const struct file_source_stats *st;
	struct file_source *s;
	struct diag_list dl;
	char name[32], svc[32], text[256];

	diag_list_init(&dl);
	for (unsigned i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%02u.json", i);
		snprintf(svc, sizeof(svc), "s%02u", i);
		put_svc(name, svc, 0644);
	}
	/* f40 holds two services */
	put("f40.json", "{\"Services\":[{\"Name\":\"t1\",\"Port\":81},"
			"{\"Name\":\"t2\",\"Port\":82}]}", 0644);
	age();
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	st = file_source_stats(s);
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(st->files, 41);
	assert_int_equal(st->files_read, 41);
	assert_int_equal(st->objects_read, 84);
	assert_non_null(strstr(delta(s), "* +"));
	assert_string_equal(delta(s), "");

	/* nothing changed: nothing read, nothing handed on */
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(st->files_read, 0);
	assert_string_equal(delta(s), "");

	/* one endpoint moved: one small file replaced */
	put_renamed("f07.json", "{\"Services\":[{\"Name\":\"s07\",\"Port\":80,"
				"\"Endpoints\":[\"198.18.64.7:80\"]}]}");
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(st->files_read, 1);
	assert_int_equal(st->objects_read, 2);
	assert_string_equal(delta(s), "+@s07"); /* the service is as it was */

	/* renamed over with the same content: read again, but nothing
	 * differs downstream */
	age();
	put_renamed("f08.json", "{\"Services\":[{\"Name\":\"s08\",\"Port\":80}]}");
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(st->files_read, 2); /* f07 was young when read: again */
	assert_string_equal(delta(s), "");
	/* renamed over, one port changed */
	age();
	put_renamed("f08.json", "{\"Services\":[{\"Name\":\"s08\",\"Port\":88}]}");
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(st->files_read, 1);
	assert_string_equal(delta(s), "+s08");

	/* a removed file: exactly its objects */
	snprintf(text, sizeof(text), "%s/f40.json", dir);
	assert_int_equal(unlink(text), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(delta(s), "-t1 -t2");
	assert_int_equal(st->files, 40);

	/* a bad file keeps its objects, says so, and is tried again */
	age();
	put("f09.json", "{\"Services\":[{\"Name\":\"s09x\"", 0644);
	assert_int_equal(reload(s, &dl), 1);
	assert_true(diags_have(&dl, "/f09.json: not JSON"));
	assert_string_equal(delta(s), "");
	assert_non_null(strstr(names(s), "s08 s09 s10"));
	assert_int_equal(reload(s, &dl), 1);
	assert_int_equal(st->files_read, 0);
	assert_true(diags_have(&dl, "/f09.json: not JSON"));
	/* an object error names the file, the object, the field: the rest of
	 * the file is taken */
	put("f09.json", "{\"Services\":[{\"Name\":\"s09\",\"Port\":80},"
			"{\"Name\":\"u9\",\"Port\":70000}]}", 0644);
	assert_int_equal(reload(s, &dl), 0);
	assert_true(diags_have(&dl, "/f09.json: default/u9: Port: 70000 is not a valid port"));
	assert_string_equal(delta(s), ""); /* s09 is as it was before the bad version */

	/* SIGHUP's re-read: every file, nothing differs */
	file_source_reread_all(s);
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(st->files_read, 40);
	assert_string_equal(delta(s), "");

	/* the merge engine forgot the source: the whole content again */
	file_source_forget_handed(s);
	assert_int_equal(reload(s, &dl), 0);
	assert_non_null(strstr(delta(s), "* +"));
	file_source_free(s);
	diag_list_done(&dl);
}

/* A second write of the same size in the same clock tick as the read
 * leaves the stat as it was: such a young file is read again anyway. */
static void test_dir_racy_write(void **state)
{
	struct file_source *s;
	struct diag_list dl;

	diag_list_init(&dl);
	put_svc("a.json", "aa", 0644);
	put_svc("b.json", "bb", 0644);
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(delta(s), "* +aa +bb");
	put_svc("a.json", "ax", 0644); /* in place, same size */
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(delta(s), "+ax -aa");
	assert_string_equal(names(s), "ax bb");
	file_source_free(s);
	diag_list_done(&dl);
}

/* One key in two files: removing the earlier hands on the later one's;
 * it coming back hands on its own again. */
static void test_dir_duplicate_deltas(void **state)
{
	struct file_source *s;
	struct diag_list dl;
	char p[256];

	diag_list_init(&dl);
	put_svc("10-a.json", "same", 0644);
	put("20-b.json", "{\"Services\":[{\"Name\":\"same\",\"Port\":81}]}", 0644);
	assert_int_equal(file_source_new(dir, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_true(diags_have(&dl, "/20-b.json: default/same: defined more than once"));
	assert_string_equal(delta(s), "* +same");
	snprintf(p, sizeof(p), "%s/10-a.json", dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_false(diags_have(&dl, "defined more than once"));
	{
		struct file_delta d = { 0 };
		bool all;

		assert_int_equal(file_source_delta(s, &d, &all), 0);
		assert_false(all);
		assert_int_equal(d.n_put_services, 1);
		assert_int_equal(d.n_del_services, 0);
		assert_int_equal(d.put_services[0]->ports[0].node_port, 81);
		file_source_accept(s, all);
		file_delta_done(&d);
	}
	put_svc("10-a.json", "same", 0644);
	assert_int_equal(reload(s, &dl), 0);
	assert_true(diags_have(&dl, "/20-b.json: default/same: defined more than once"));
	assert_string_equal(delta(s), "+same");
	/* the later file removed: nothing changes downstream */
	snprintf(p, sizeof(p), "%s/20-b.json", dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(delta(s), "");
	assert_string_equal(names(s), "same");
	file_source_free(s);
	diag_list_done(&dl);
}

/* A single file is read whole every time; its delta is what differs. */
static void test_file_deltas(void **state)
{
	struct file_source *s;
	struct diag_list dl;
	char p[128];

	diag_list_init(&dl);
	put("x.json", "{\"Services\":[{\"Name\":\"a\",\"Port\":80},{\"Name\":\"b\",\"Port\":81}]}", 0644);
	age();
	snprintf(p, sizeof(p), "%s/x.json", dir);
	assert_int_equal(file_source_new(p, FILE_MODE_REFUSE, &s), 0);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(delta(s), "* +a +b");
	assert_int_equal(reload(s, &dl), 0);
	assert_int_equal(file_source_stats(s)->files_read, 1);
	/* read again: the objects equal the old, nothing is handed on */
	assert_string_equal(delta(s), "");
	put("x.json", "{\"Services\":[{\"Name\":\"b\",\"Port\":81}]}", 0644);
	assert_int_equal(reload(s, &dl), 0);
	assert_string_equal(delta(s), "-a"); /* b is as it was */
	file_source_free(s);
	diag_list_done(&dl);
}

/* A kubectl List read twice: the second read takes its unchanged items as
 * they were, unless the source is read once (then nothing is kept). */
static void test_list_read_once(void **state)
{
	static const char list[] =
		"{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":["
		"{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\","
		"\"namespace\":\"n\"},\"spec\":{\"clusterIP\":\"198.19.0.1\",\"ports\":"
		"[{\"port\":80,\"protocol\":\"TCP\"}]}},"
		"{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"b\","
		"\"namespace\":\"n\"},\"spec\":{\"clusterIP\":\"198.19.0.2\",\"ports\":"
		"[{\"port\":81,\"protocol\":\"TCP\"}]}}]}";
	struct diag_list dl;
	char p[128];

	(void)state;
	diag_list_init(&dl);
	put("l.json", list, 0644);
	age();
	snprintf(p, sizeof(p), "%s/l.json", dir);
	for (int once = 0; once < 2; once++) {
		struct file_source *s;

		assert_int_equal(file_source_new(p, FILE_MODE_REFUSE, &s), 0);
		if (once)
			file_source_read_once(s);
		assert_int_equal(reload(s, &dl), 0);
		assert_string_equal(names(s), "a b");
		file_source_reread_all(s);
		assert_int_equal(reload(s, &dl), 0);
		assert_int_equal(file_source_stats(s)->files_read, 1);
		assert_int_equal(file_source_stats(s)->objects_reused, once ? 0 : 2);
		assert_string_equal(names(s), "a b");
		file_source_free(s);
	}
	assert_int_equal(dl.n, 0);
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
		cmocka_unit_test_setup_teardown(test_dir_deltas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_racy_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_duplicate_deltas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_deltas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_read_once, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
