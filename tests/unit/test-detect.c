/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host detection without a shell (src/backend/detect.c): the PATH search
 * that stands for `command -v`, and the legacy tables' names files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "backend/detect.h"
#include "util.h"

static char dir[PATH_MAX];

static void put(const char *name, const char *text, mode_t mode)
{
	char p[PATH_MAX + 64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

static int setup(void **state)
{
	char p[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s/svcnat-detect-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
	put("tool", "#!/bin/sh\n", 0755);
	put("plain", "data\n", 0644);
	snprintf(p, sizeof(p), "%s/adir", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_int_equal(symlink("tool", p), 0);
	snprintf(p, sizeof(p), "%s/dangling", dir);
	assert_int_equal(symlink("nowhere", p), 0);
	put("v4-names", "mangle\nfilter\n", 0644);
	put("v6-names", "nat\n", 0644);
	put("other-names", "mangle\nraw\nsecurity\n", 0644);
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "tool", "plain", "adir", "link", "dangling",
					     "v4-names", "v6-names", "other-names" };
	char p[PATH_MAX + 64];

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		(void)remove(p);
	}
	(void)rmdir(dir);
	return 0;
}

struct cmd_case {
	const char *cmd;
	const char *path; /* "@" stands for the test's directory */
	bool want;
};

static const struct cmd_case cmd_cases[] = {
	{ "tool", "@", true },
	{ "tool", "/nonexistent:@", true },
	{ "tool", "@:/nonexistent", true },
	{ "tool", "/nonexistent", false },
	{ "plain", "@", false },    /* not executable */
	{ "adir", "@", false },     /* a directory */
	{ "link", "@", true },      /* a symlink to an executable */
	{ "dangling", "@", false },
	{ "missing", "@", false },
	{ "", "@", false },
	{ "adir/../tool", "@", false }, /* a name, not a path */
	{ "/bin/sh", "@", false },
	{ "tool", "", true },       /* empty PATH: the current directory */
	{ "tool", "/nonexistent::/x", true },
	{ "tool", "/nonexistent:", true },
};

static void test_command_table(void **state)
{
	char cwd[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cmd_cases); i++) {
		const struct cmd_case *c = &cmd_cases[i];
		char path[3 * PATH_MAX] = "";
		size_t o = 0;

		/* Replace each '@' by the directory. */
		for (const char *s = c->path; *s; s++) {
			if (*s == '@') {
				memcpy(path + o, dir, strlen(dir));
				o += strlen(dir);
			} else {
				path[o++] = *s;
			}
		}
		path[o] = '\0';
		if (detect_command(c->cmd, path) != c->want)
			fail_msg("case %zu: '%s' in '%s': want %s", i, c->cmd, path,
				 c->want ? "found" : "not found");
	}
	assert_int_equal(chdir(cwd), 0);
}

static void test_command_env_path(void **state)
{
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;

	assert_int_equal(setenv("PATH", dir, 1), 0);
	assert_true(detect_command("tool", NULL));
	assert_false(detect_command("plain", NULL));
	/* No PATH at all: the system's default path, which has sh. */
	assert_int_equal(unsetenv("PATH"), 0);
	assert_true(detect_command("sh", NULL));
	assert_false(detect_command("tool", NULL));
	if (saved)
		assert_int_equal(setenv("PATH", saved, 1), 0);
	free(saved);
}

static void test_legacy_tables(void **state)
{
	char v4[PATH_MAX + 64], v6[PATH_MAX + 64], other[PATH_MAX + 64], none[PATH_MAX + 64];

	snprintf(v4, sizeof(v4), "%s/v4-names", dir);
	snprintf(v6, sizeof(v6), "%s/v6-names", dir);
	snprintf(other, sizeof(other), "%s/other-names", dir);
	snprintf(none, sizeof(none), "%s/missing-names", dir);
	{
		const char *const n[] = { v4 };
		assert_true(detect_legacy_tables(n, 1));
	}
	{
		const char *const n[] = { none, v6 };
		assert_true(detect_legacy_tables(n, 2));
	}
	{
		const char *const n[] = { other, none };
		assert_false(detect_legacy_tables(n, 2));
	}
	assert_false(detect_legacy_tables(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_table),
		cmocka_unit_test(test_command_env_path),
		cmocka_unit_test(test_legacy_tables),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
