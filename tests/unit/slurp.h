/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A test's input file read whole, NUL-terminated (its length in
 * *ret_len); a file that cannot be read fails the test, naming it.
 * Included by a test after cmocka.h and util.h (GROW).
 */
#ifndef SVCNAT_TESTS_SLURP_H
#define SVCNAT_TESTS_SLURP_H

#include <stdio.h>

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		fail_msg("cannot open %s", path);
	for (;;) {
		assert_int_equal(GROW(buf, cap, len + 65536), 0);
		n = fread(buf + len, 1, 65536, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f))
		fail_msg("cannot read %s", path);
	fclose(f);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

#endif
